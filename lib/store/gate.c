/*
** lib/store/gate.c - readers and checkpoints of one store (gate.h).
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>

#include "gate.h"

/* Far past any log (a frame is at most 1 GiB, the log 64 MiB unless
** autocheckpoint says more); locks past the end of a file are allowed. */
#define GATE_P ((off_t)1 << 50)
#define GATE_R (GATE_P + 1)

/* H5MEM_NO_GATE=1: go without the gate (tests of the checks readers fall
** back on). */
static int no_gate(void) {
  const char *v = getenv("H5MEM_NO_GATE");
  return v && *v && strcmp(v, "0") != 0;
}

#ifdef F_OFD_SETLK

static int lock1(int fd, short type, off_t at) {
  struct flock l;
  memset(&l, 0, sizeof l);
  l.l_type = type;
  l.l_whence = SEEK_SET;
  l.l_start = at;
  l.l_len = 1;
  return fcntl(fd, F_OFD_SETLK, &l);
}

static long long now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* Take the lock, retrying while another holds a conflicting one, until
** the deadline (now_us) passes. */
static int take(int fd, short type, off_t at, long long deadline) {
  useconds_t pause = 50;
  for (int tries = 1;; tries++) {
    if (lock1(fd, type, at) == 0) return GATE_OK;
    if (errno == EINTR) continue;
    if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) return GATE_NONE;
    if (errno != EAGAIN && errno != EACCES) return GATE_EIO;
    if (now_us() >= deadline) return GATE_EBUSY;
    usleep(pause);
    if (tries >= 40 && pause < 2000) pause *= 2; /* 50 us for 2 ms, then backing off */
  }
}

int gate_read_begin(int fd) {
  if (fd < 0 || no_gate()) return GATE_NONE;
  long long deadline = now_us() + (long long)GATE_WAIT_MS * 1000;
  int rc = take(fd, F_RDLCK, GATE_P, deadline);
  if (rc != GATE_OK) return rc;
  /* (no writer can hold R now: it takes R only while holding P) */
  rc = take(fd, F_RDLCK, GATE_R, deadline);
  int e = errno; /* (GATE_EIO's, for the caller) */
  lock1(fd, F_UNLCK, GATE_P);
  errno = e;
  return rc;
}

void gate_read_end(int fd, int began) {
  if (began == GATE_OK) lock1(fd, F_UNLCK, GATE_R);
}

int gate_write_begin(int fd) {
  if (fd < 0 || no_gate()) return GATE_NONE;
  long long deadline = now_us() + (long long)GATE_WAIT_MS * 1000;
  int rc = take(fd, F_WRLCK, GATE_P, deadline);
  if (rc != GATE_OK) return rc;
  rc = take(fd, F_WRLCK, GATE_R, deadline);
  if (rc != GATE_OK) {
    int e = errno; /* (GATE_EIO's, for the caller) */
    lock1(fd, F_UNLCK, GATE_P);
    errno = e;
  }
  return rc;
}

void gate_write_end(int fd, int began) {
  if (began != GATE_OK) return;
  lock1(fd, F_UNLCK, GATE_R);
  lock1(fd, F_UNLCK, GATE_P);
}

#else /* no open file description locks */

int gate_read_begin(int fd) { (void)fd; (void)no_gate; return GATE_NONE; }
void gate_read_end(int fd, int began) { (void)fd; (void)began; }
int gate_write_begin(int fd) { (void)fd; return GATE_NONE; }
void gate_write_end(int fd, int began) { (void)fd; (void)began; }

#endif
