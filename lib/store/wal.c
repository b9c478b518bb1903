/*
** lib/store/wal.c - the write-ahead log beside a store file (see wal.h for
** the format and the contract).
**
** The state of a log is its valid prefix (wal_pos): where it ends, the seq
** and checksum of its last frame, how many frames it holds.  Two copies are
** kept: `cur`, what has been written, and `synced`, what the last
** successful sync covered, so that a failed group commit can cut away
** exactly the frames it may have lost.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "util/le.h"
#include "wal.h"

#define WAL_MAGIC "H5MEMWAL"
#define WAL_VERSION 1
#define WAL_FRAME_MAGIC 0x464c4157u /* "WALF" */
#define WAL_MAX_HEADER 4096         /* a later version's header, at most */
#define WAL_KEEP_BUF (1u << 20)     /* read buffers above this are freed after use */

typedef struct wal_pos {
  uint64_t end;      /* file offset just past the last valid frame */
  uint64_t last_seq; /* its seq (base - 1 if none) */
  uint64_t frames;   /* how many valid frames */
  uint64_t chain;    /* seed of the next frame's checksum */
} wal_pos;

struct wal {
  int fd;       /* -1: opened readonly and the file does not exist */
  int readonly;
  int broken;   /* a failed write could not be undone: no more writes */
  char *path;   /* malloc'd copy */
  uint8_t store_id[16];
  uint64_t base, salt, hdr_sum; /* from the header */
  uint8_t hdr[WAL_HEADER_SIZE]; /* the first bytes of the file as read (or written) */
  size_t hdr_len;               /* how many (fewer when the file is shorter) */
  uint64_t size;                /* file size */
  wal_pos cur, synced;
  uint8_t *buf; /* read buffer (malloc'd, cap bytes), one frame */
  size_t cap;
  XXH64_state_t *xs; /* for appends: header, payload and trailer apart */
  char err[256];
  char note[512];    /* a damaged frame with valid-looking ones after it, or "" */
  int bad_header;    /* read-only, its header damaged: no frame is read, none will be */
  dev_t dev;         /* the file fd is (fstat when opened) */
  ino_t ino;
};

/* ---- little helpers ------------------------------------------------------ */

static void set_err(wal *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_err(wal *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
}

/* Append to a message (buf, size bytes) already set. */
static void append(char *buf, size_t size, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void append(char *buf, size_t size, const char *fmt, va_list ap) {
  size_t n = strlen(buf);
  vsnprintf(buf + n, size - n, fmt, ap);
}

static void add_err(wal *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_err(wal *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  append(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
}

/* Append to the note. */
static void add_note(wal *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_note(wal *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  append(w->note, sizeof w->note, fmt, ap);
  va_end(ap);
}

/* The status for a failed write or sync with errno e (util_err_write: the
** rule the HDF5 writer follows too), and how to say it (strerror(e) beside
** it tells which kind of no space: disk, file size limit, quota). */
static int write_status(int e, const char **what) {
  int rc = util_err_write(e);
  *what = rc == WAL_EFULL ? "no space left" : "I/O error";
  return rc;
}

/* Read n bytes at off: 0, 1 if the file ends first, -1 with errno. */
static int read_at(int fd, void *buf, size_t n, uint64_t off) {
  uint8_t *p = buf;
  while (n > 0) {
    ssize_t r = pread(fd, p, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 1;
    p += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* Write all of iov[0..n) at off (one pwritev unless the kernel writes
** less): 0, or -1 with errno. */
static int write_at(int fd, struct iovec *iov, int n, uint64_t off) {
  while (n > 0) {
    ssize_t r = pwritev(fd, iov, n, (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) {
      errno = EIO;
      return -1;
    }
    off += (uint64_t)r;
    size_t done = (size_t)r;
    while (n > 0 && done >= iov->iov_len) {
      done -= iov->iov_len;
      iov++;
      n--;
    }
    if (n > 0) {
      iov->iov_base = (uint8_t *)iov->iov_base + done;
      iov->iov_len -= done;
    }
  }
  return 0;
}

static int grow_buf(wal *w, size_t need) {
  if (need <= w->cap) return 0;
  uint8_t *nb = realloc(w->buf, need);
  if (!nb) return -1;
  w->buf = nb;
  w->cap = need;
  return 0;
}

static void trim_buf(wal *w) {
  if (w->cap <= WAL_KEEP_BUF) return;
  free(w->buf);
  w->buf = NULL;
  w->cap = 0;
}

static void hex_id(const uint8_t id[16], char out[33]) {
  for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* fsync the directory holding path, so that a new file's name is durable. */
static int sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  if (!dir) return -1;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  if (rc != 0 && errno == EINVAL) rc = 0; /* a file system without dir sync */
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

/* ---- header -------------------------------------------------------------- */

enum { HDR_OK, HDR_BAD, HDR_LATER };

static void header_encode(uint8_t h[WAL_HEADER_SIZE], const uint8_t id[16], uint64_t base,
                          uint64_t salt) {
  memset(h, 0, WAL_HEADER_SIZE);
  memcpy(h, WAL_MAGIC, 8);
  util_put_le(h + 8, WAL_VERSION, 4);
  util_put_le(h + 12, WAL_HEADER_SIZE, 4);
  memcpy(h + 16, id, 16);
  util_put_le(h + 32, base, 8);
  util_put_le(h + 40, salt, 8);
  util_put_le(h + 56, XXH64(h, WAL_HEADER_SIZE - 8, 0), 8);
}

/* Check the n header bytes h read from a file of size bytes; on HDR_OK
** take base, salt and the checksum into w (store_id is checked apart). */
static int header_check(wal *w, const uint8_t *h, size_t n, uint64_t size) {
  if (n < 16 || memcmp(h, WAL_MAGIC, 8) != 0) return HDR_BAD;
  uint32_t version = (uint32_t)util_get_le(h + 8, 4), hsize = (uint32_t)util_get_le(h + 12, 4);
  if (hsize < WAL_HEADER_SIZE || hsize > WAL_MAX_HEADER || hsize > size || hsize > n)
    return HDR_BAD;
  uint64_t sum = util_get_le(h + hsize - 8, 8);
  if (XXH64(h, hsize - 8, 0) != sum) return HDR_BAD;
  if (version != WAL_VERSION) return HDR_LATER;
  if (hsize != WAL_HEADER_SIZE) return HDR_BAD;
  uint64_t base = util_get_le(h + 32, 8);
  if (base == 0 || base > WAL_MAX_SEQ) return HDR_BAD; /* seq 0 does not exist */
  w->base = base;
  w->salt = util_get_le(h + 40, 8);
  w->hdr_sum = sum;
  return HDR_OK;
}

/* A salt unlike the one before (which it folds in, with the time and the
** pid): the frames of the old epoch then never validate in the new one. */
static uint64_t new_salt(const wal *w, uint64_t base) {
  struct {
    uint64_t old, base;
    struct timespec rt, mono;
    pid_t pid;
  } s;
  memset(&s, 0, sizeof s);
  s.old = w->salt;
  s.base = base;
  clock_gettime(CLOCK_REALTIME, &s.rt);
  clock_gettime(CLOCK_MONOTONIC, &s.mono);
  s.pid = getpid();
  return XXH64(&s, sizeof s, w->hdr_sum);
}

/* Write a header for base (with a new salt) at offset 0.  w's header
** fields change only when the write succeeded. */
static int header_write(wal *w, uint64_t base) {
  uint8_t h[WAL_HEADER_SIZE];
  uint64_t salt = new_salt(w, base);
  header_encode(h, w->store_id, base, salt);
  struct iovec iov = {h, sizeof h};
  if (write_at(w->fd, &iov, 1, 0) != 0) return -1;
  w->base = base;
  w->salt = salt;
  w->hdr_sum = util_get_le(h + 56, 8);
  memcpy(w->hdr, h, sizeof h);
  w->hdr_len = sizeof h;
  return 0;
}

static wal_pos empty_pos(const wal *w) {
  wal_pos p = {WAL_HEADER_SIZE, w->base - 1, 0, w->hdr_sum};
  return p;
}

/* ---- frames -------------------------------------------------------------- */

/* Read and check the frame that would follow at, in a file that ends at
** limit.  1: valid (the frame is in w->buf, its payload length in *len and
** checksum in *sum); 0: not a valid frame; WAL_EIO or WAL_ENOMEM. */
static int frame_read(wal *w, const wal_pos *at, uint64_t limit, size_t *len, uint64_t *sum) {
  if (limit < at->end || limit - at->end < WAL_FRAME_OVERHEAD) return 0;
  if (grow_buf(w, WAL_FRAME_OVERHEAD) != 0) goto nomem;
  int r = read_at(w->fd, w->buf, 16, at->end);
  if (r < 0) goto eio;
  if (r > 0) return 0;
  uint32_t n = (uint32_t)util_get_le(w->buf + 4, 4);
  /* the length is checked against the file before anything is read */
  if (util_get_le(w->buf, 4) != WAL_FRAME_MAGIC || n > WAL_MAX_FRAME ||
      n > limit - at->end - WAL_FRAME_OVERHEAD || util_get_le(w->buf + 8, 8) != at->last_seq + 1)
    return 0;
  if (grow_buf(w, (size_t)n + WAL_FRAME_OVERHEAD) != 0) goto nomem;
  r = read_at(w->fd, w->buf + 16, (size_t)n + 8, at->end + 16);
  if (r < 0) goto eio;
  if (r > 0) return 0;
  *sum = XXH64(w->buf, (size_t)n + 16, at->chain);
  if (util_get_le(w->buf + 16 + n, 8) != *sum) return 0;
  *len = n;
  return 1;
eio:
  set_err(w, "cannot read %s at offset %llu: %s", w->path, (unsigned long long)at->end,
          strerror(errno));
  return WAL_EIO;
nomem:
  set_err(w, "out of memory reading %s", w->path);
  return WAL_ENOMEM;
}

static void pos_advance(wal_pos *p, size_t len, uint64_t sum) {
  p->end += (uint64_t)len + WAL_FRAME_OVERHEAD;
  p->last_seq++;
  p->frames++;
  p->chain = sum;
}

/* How many frames chain from offset off by their lengths, the first with
** seq sq (its magic checked already, len its length): each header has the
** magic, a length that fits the file and the next seq. */
static uint64_t chained(wal *w, uint64_t off, uint64_t len, uint64_t sq, uint64_t size) {
  uint64_t n = 0;
  for (;;) {
    n++;
    off += len + WAL_FRAME_OVERHEAD;
    uint8_t h[16];
    if (size - off < WAL_FRAME_OVERHEAD || read_at(w->fd, h, 16, off) != 0 ||
        util_get_le(h, 4) != WAL_FRAME_MAGIC || util_get_le(h + 8, 8) != sq + n)
      return n;
    len = util_get_le(h + 4, 4);
    if (len > WAL_MAX_FRAME || len > size - off - WAL_FRAME_OVERHEAD) return n;
  }
}

/* Frames that look valid after the end of the valid prefix p of a file of
** size bytes: a frame header (magic, a length that fits, a seq past the
** next one expected) at some later offset, then the frames chained after
** it.  A torn tail (a crash in the middle of an append) is the end of the
** file; frames after a bad one mean the log was damaged.  Their number in
** *n (0: none); the seq of the first in *seq. */
static int later_frames(wal *w, const wal_pos *p, uint64_t size, uint64_t *n, uint64_t *seq) {
  *n = 0;
  uint8_t buf[65536 + 16];
  uint64_t next = p->last_seq + 2; /* the frame after the bad one */
  for (uint64_t at = p->end + 1; at + WAL_FRAME_OVERHEAD <= size;) {
    size_t want = size - at < sizeof buf ? (size_t)(size - at) : sizeof buf;
    int r = read_at(w->fd, buf, want, at);
    if (r < 0) return -1;
    if (r > 0) return 0; /* (it got shorter meanwhile) */
    size_t lim = want >= 16 ? want - 15 : 0;
    for (size_t i = 0; i < lim; i++) {
      if (buf[i] != 'W' || util_get_le(buf + i, 4) != WAL_FRAME_MAGIC) continue;
      uint64_t len = util_get_le(buf + i + 4, 4), sq = util_get_le(buf + i + 8, 8), off = at + i;
      /* (a header in the last 24 bytes has no room for a frame) */
      if (size - off < WAL_FRAME_OVERHEAD || len > WAL_MAX_FRAME ||
          len > size - off - WAL_FRAME_OVERHEAD || sq < next ||
          sq - next > (size - p->end) / WAL_FRAME_OVERHEAD)
        continue;
      *seq = sq;
      *n = chained(w, off, len, sq, size);
      return 0;
    }
    at += lim ? lim : 1;
  }
  return 0;
}

/* A damaged header followed by what looks like frames (one right after it):
** their number in *n. */
static void frames_after_bad_header(wal *w, uint64_t size, uint64_t *n) {
  uint8_t h[16];
  *n = 0;
  if (size < WAL_HEADER_SIZE + WAL_FRAME_OVERHEAD ||
      read_at(w->fd, h, 16, WAL_HEADER_SIZE) != 0 || util_get_le(h, 4) != WAL_FRAME_MAGIC)
    return;
  uint64_t len = util_get_le(h + 4, 4);
  if (len <= WAL_MAX_FRAME && len <= size - WAL_HEADER_SIZE - WAL_FRAME_OVERHEAD)
    *n = chained(w, WAL_HEADER_SIZE, len, util_get_le(h + 8, 8), size);
}

/* Find the valid prefix of a file of size bytes whose header is in w (and
** whether frames follow a damaged one: w->note). */
static int scan(wal *w, uint64_t size) {
  wal_pos p = empty_pos(w);
  for (;;) {
    size_t len = 0;
    uint64_t sum = 0;
    int r = frame_read(w, &p, size, &len, &sum);
    if (r < 0) return r;
    if (r == 0) break;
    pos_advance(&p, len, sum);
  }
  trim_buf(w);
  w->cur = w->synced = p;
  w->note[0] = 0;
  uint64_t nlater = 0, seq = 0;
  if (p.end < size && later_frames(w, &p, size, &nlater, &seq) != 0) {
    set_err(w, "cannot read %s: %s", w->path, strerror(errno));
    return WAL_EIO;
  }
  if (nlater)
    snprintf(w->note, sizeof w->note,
             "frame %llu at offset %llu of %s is damaged; %llu later frame%s (from %llu) "
             "cannot be replayed", (unsigned long long)(p.last_seq + 1),
             (unsigned long long)p.end, w->path, (unsigned long long)nlater,
             nlater == 1 ? "" : "s", (unsigned long long)seq);
  return WAL_OK;
}

/* Copy the whole log to "<path>.corrupt-N" (the first N free; created
** exclusively, never through a link) and sync it, before a writer cuts a
** damaged log back to its valid prefix: the bytes past it stay readable. */
static int keep_aside(wal *w, uint64_t size) {
  size_t n = strlen(w->path) + 32;
  char *name = malloc(n);
  if (!name) {
    set_err(w, "out of memory keeping %s aside", w->path);
    return WAL_ENOMEM;
  }
  int fd = -1;
  for (int k = 1; fd < 0 && k < 1000; k++) {
    snprintf(name, n, "%s.corrupt-%d", w->path, k);
    fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  int rc = WAL_OK;
  uint8_t buf[65536];
  for (uint64_t at = 0; fd >= 0 && rc == WAL_OK && at < size;) {
    size_t want = size - at < sizeof buf ? (size_t)(size - at) : sizeof buf;
    struct iovec iov = {buf, want};
    if (read_at(w->fd, buf, want, at) != 0 || write_at(fd, &iov, 1, at) != 0) rc = WAL_EIO;
    at += want;
  }
  if (fd < 0 || rc != WAL_OK || fsync(fd) != 0 || sync_dir(name) != 0) {
    const char *what;
    rc = write_status(errno, &what);
    set_err(w, "%s; keeping the damaged log aside as %s failed (%s: %s), so it is left as it is",
            w->note, name, what, strerror(errno));
    if (fd >= 0) unlink(name);
  } else {
    add_note(w, "; the log as it was is kept in %s", name);
  }
  if (fd >= 0) close(fd);
  free(name);
  return rc;
}

/* ---- open and close -------------------------------------------------------- */

/* Open the log file, never through a symbolic link (O_NOFOLLOW), and only
** a regular file: a planted link or device must not be read, truncated or
** written in place of the log. */
static int open_fd(wal *w, int *created) {
  *created = 0;
  if (w->readonly) {
    w->fd = open(w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (w->fd < 0 && errno == ENOENT) return WAL_OK;
  } else {
    for (int tries = 0; w->fd < 0 && tries < 2; tries++) {
      w->fd = open(w->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
      if (w->fd >= 0 || errno != ENOENT) break;
      w->fd = open(w->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (w->fd >= 0) *created = 1;
      else if (errno != EEXIST) break;
    }
  }
  if (w->fd < 0) {
    set_err(w, "cannot open %s: %s", w->path,
            errno == ELOOP ? "it is a symbolic link (a log is never opened through one)"
                           : strerror(errno));
    return WAL_EIO;
  }
  struct stat st;
  if (fstat(w->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    set_err(w, "%s is not a regular file; a log must be one", w->path);
    close(w->fd);
    w->fd = -1;
    return WAL_EIO;
  }
  w->dev = st.st_dev; /* (the file this descriptor is: wal_changed compares the path's) */
  w->ino = st.st_ino;
  return WAL_OK;
}

/* Start a new, empty log: header for base 1, nothing after it. */
static int start_fresh(wal *w, int created) {
  w->salt = w->hdr_sum = 0;
  if (header_write(w, 1) != 0 || ftruncate(w->fd, WAL_HEADER_SIZE) != 0 || fsync(w->fd) != 0 ||
      (created && sync_dir(w->path) != 0)) {
    const char *what;
    int rc = write_status(errno, &what);
    set_err(w, "%s (%s) writing the header of %s", what, strerror(errno), w->path);
    return rc;
  }
  w->size = WAL_HEADER_SIZE;
  w->cur = w->synced = empty_pos(w);
  return WAL_OK;
}

static int load(wal *w, int created) {
  struct stat st;
  if (fstat(w->fd, &st) != 0) {
    set_err(w, "cannot stat %s: %s", w->path, strerror(errno));
    return WAL_EIO;
  }
  w->size = (uint64_t)st.st_size;
  uint8_t h[WAL_MAX_HEADER];
  size_t n = w->size < sizeof h ? (size_t)w->size : sizeof h;
  int r = read_at(w->fd, h, n, 0);
  if (r < 0) {
    set_err(w, "cannot read %s: %s", w->path, strerror(errno));
    return WAL_EIO;
  }
  /* (what wal_changed compares with, a damaged header included) */
  w->hdr_len = r == 0 ? (n < WAL_HEADER_SIZE ? n : WAL_HEADER_SIZE) : 0;
  memcpy(w->hdr, h, w->hdr_len);
  int hdr = r == 0 ? header_check(w, h, n, w->size) : HDR_BAD;
  if (hdr == HDR_LATER) {
    set_err(w, "%s is a log of format version %u; this h5mem reads version %d", w->path,
            (unsigned)util_get_le(h + 8, 4), WAL_VERSION);
    return WAL_EINVAL;
  }
  if (hdr == HDR_OK && memcmp(h + 16, w->store_id, 16) != 0) {
    char have[33], want[33];
    hex_id(h + 16, have);
    hex_id(w->store_id, want);
    set_err(w, "%s belongs to another store (store id %s, expected %s)", w->path, have, want);
    return WAL_EMISMATCH;
  }
  if (hdr == HDR_BAD) {
    uint64_t nlater = 0;
    frames_after_bad_header(w, w->size, &nlater);
    w->note[0] = 0;
    if (nlater)
      snprintf(w->note, sizeof w->note, "the header of %s is damaged; %llu frame%s after it "
               "cannot be replayed", w->path, (unsigned long long)nlater, nlater == 1 ? "" : "s");
    if (!w->readonly && nlater && (r = keep_aside(w, w->size)) != WAL_OK) return r;
    if (!w->readonly) return start_fresh(w, created);
    w->base = 1; /* nothing to read; the file stays as it is */
    w->cur = w->synced = empty_pos(w);
    w->bad_header = 1; /* (no frame after it counts: wal_changed) */
    return WAL_OK;
  }
  int rc = scan(w, w->size);
  if (rc != WAL_OK || w->readonly) return rc;
  if (w->note[0] && (rc = keep_aside(w, w->size)) != WAL_OK) return rc;
  if ((w->size != w->cur.end && ftruncate(w->fd, (off_t)w->cur.end) != 0) || fsync(w->fd) != 0) {
    set_err(w, "cannot cut %s back to its %llu valid bytes: %s", w->path,
            (unsigned long long)w->cur.end, strerror(errno));
    return WAL_EIO;
  }
  w->size = w->cur.end;
  return WAL_OK;
}

int wal_open(const char *path, const uint8_t store_id[16], int readonly, wal **out,
             char *err, size_t errlen) {
  if (out) *out = NULL;
  if (!path || !store_id || !out) {
    if (err && errlen) snprintf(err, errlen, "wal_open: no path, store id or result");
    return WAL_EINVAL;
  }
  wal *w = calloc(1, sizeof *w);
  if (w) {
    w->fd = -1;
    w->path = strdup(path);
    w->xs = XXH64_createState();
  }
  if (!w || !w->path || !w->xs) {
    if (err && errlen) snprintf(err, errlen, "out of memory opening %s", path);
    wal_close(w);
    return WAL_ENOMEM;
  }
  w->readonly = readonly != 0;
  memcpy(w->store_id, store_id, 16);
  w->base = 1;
  w->cur = w->synced = empty_pos(w);
  int created = 0;
  int rc = open_fd(w, &created);
  if (rc == WAL_OK && w->fd >= 0) rc = load(w, created);
  if (rc != WAL_OK) {
    if (err && errlen) snprintf(err, errlen, "%s", w->err);
    wal_close(w);
    return rc;
  }
  *out = w;
  return WAL_OK;
}

void wal_close(wal *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd);
  XXH64_freeState(w->xs);
  free(w->buf);
  free(w->path);
  free(w);
}

/* ---- reading ---------------------------------------------------------------- */

int wal_replay(wal *w, int (*cb)(void *ctx, uint64_t seq, const uint8_t *p, size_t len),
               void *ctx) {
  if (!w || !cb) return WAL_EINVAL;
  if (w->fd < 0) return WAL_OK;
  wal_pos p = empty_pos(w);
  int rc = WAL_OK;
  while (rc == WAL_OK && p.end < w->cur.end) {
    size_t len = 0;
    uint64_t sum = 0;
    int r = frame_read(w, &p, w->cur.end, &len, &sum);
    if (r < 0) {
      rc = r;
    } else if (r == 0) {
      set_err(w, "the frame at offset %llu of %s no longer validates (the file changed)",
              (unsigned long long)p.end, w->path);
      rc = WAL_EIO;
    } else {
      rc = cb(ctx, p.last_seq + 1, w->buf + 16, len);
      pos_advance(&p, len, sum);
    }
  }
  trim_buf(w);
  return rc;
}

uint64_t wal_bytes(const wal *w) { return w ? w->size : 0; }

uint64_t wal_last_seq(const wal *w) { return w ? w->cur.last_seq : 0; }

uint64_t wal_frames(const wal *w) { return w ? w->cur.frames : 0; }

const char *wal_errmsg(const wal *w) { return w ? w->err : "no log"; }

const char *wal_note(const wal *w) { return w ? w->note : ""; }

int wal_changed(wal *w, int header_only) {
  if (!w) return 0;
  struct stat st;
  if (stat(w->path, &st) != 0) return w->fd >= 0;            /* gone (or was never there) */
  if (w->fd < 0) return 1;                                    /* made since */
  if (w->ino != st.st_ino || w->dev != st.st_dev) return 1;
  /* the header as w read it, byte for byte: a new epoch's differs (its
  ** salt), and a damaged or short one that is still the same has not
  ** changed (a reader must not load it again and again) */
  uint8_t h[WAL_HEADER_SIZE];
  size_t hn = (uint64_t)st.st_size < sizeof h ? (size_t)st.st_size : sizeof h;
  if (hn != w->hdr_len || read_at(w->fd, h, hn, 0) != 0 || memcmp(h, w->hdr, hn) != 0) return 1;
  if (header_only) return 0;
  if ((uint64_t)st.st_size != w->size) return 1;
  /* the same bytes as when it was read, but a frame that was being written
  ** then (bytes past the valid prefix) may be whole now */
  size_t len;
  uint64_t sum;
  return !w->bad_header && w->cur.end < w->size && frame_read(w, &w->cur, w->size, &len, &sum) == 1;
}

/* ---- writing ---------------------------------------------------------------- */

/* Refuse a write to a log that cannot take one. */
static int check_writable(wal *w) {
  if (w->readonly || w->fd < 0) {
    set_err(w, "%s is open readonly", w->path);
    return WAL_EINVAL;
  }
  if (w->broken) {
    set_err(w, "%s takes no more writes: an earlier failure could not be undone; reopen it",
            w->path);
    return WAL_EIO;
  }
  return WAL_OK;
}

/* After a failed write or sync (status rc, said in w->err) cut the file
** back to `to`. */
static int undo(wal *w, int rc, const wal_pos *to) {
  if (ftruncate(w->fd, (off_t)to->end) != 0) {
    w->broken = 1;
    add_err(w, "; cutting it back to %llu bytes failed too (%s)", (unsigned long long)to->end,
            strerror(errno));
  }
  w->cur = *to;
  if (w->synced.end > to->end) w->synced = *to;
  w->size = to->end;
  return rc;
}

int wal_append(wal *w, const void *payload, size_t len, int sync, uint64_t *seq) {
  if (!w) return WAL_EINVAL;
  int rc = check_writable(w);
  if (rc != WAL_OK) return rc;
  if (w->cur.last_seq >= WAL_MAX_SEQ - 1) {
    set_err(w, "%s: its sequence numbers have run out (at %llu)", w->path,
            (unsigned long long)w->cur.last_seq);
    return WAL_EINVAL;
  }
  if ((sync != 0 && sync != 1) || (!payload && len) || len > WAL_MAX_FRAME) {
    set_err(w, "wal_append: bad argument (sync %d, %zu bytes; at most %u a frame)", sync, len,
            WAL_MAX_FRAME);
    return WAL_EINVAL;
  }
  uint64_t s = w->cur.last_seq + 1;
  uint8_t head[16], tail[8];
  util_put_le(head, WAL_FRAME_MAGIC, 4);
  util_put_le(head + 4, len, 4);
  util_put_le(head + 8, s, 8);
  XXH64_reset(w->xs, w->cur.chain);
  XXH64_update(w->xs, head, sizeof head);
  if (len) XXH64_update(w->xs, payload, len);
  uint64_t sum = XXH64_digest(w->xs);
  util_put_le(tail, sum, 8);
  struct iovec iov[3] = {{head, sizeof head}, {(void *)payload, len}, {tail, sizeof tail}};
  wal_pos before = w->cur;
  int failed = write_at(w->fd, iov, 3, before.end) != 0 ? 1 : sync && fdatasync(w->fd) != 0 ? 2 : 0;
  if (failed) {
    int e = errno;
    const char *what;
    rc = write_status(e, &what);
    set_err(w, "%s (%s) %s frame %llu (%zu bytes) at offset %llu of %s", what, strerror(e),
            failed == 1 ? "writing" : "syncing", (unsigned long long)s, len,
            (unsigned long long)before.end, w->path);
    return undo(w, rc, &before);
  }
  pos_advance(&w->cur, len, sum);
  w->size = w->cur.end;
  if (sync) w->synced = w->cur;
  if (seq) *seq = s;
  return WAL_OK;
}

int wal_sync(wal *w) {
  if (!w) return WAL_EINVAL;
  if (w->readonly || w->fd < 0) return WAL_OK;
  if (w->broken) return check_writable(w);
  if (fdatasync(w->fd) == 0) {
    w->synced = w->cur;
    return WAL_OK;
  }
  int e = errno;
  const char *what;
  int rc = write_status(e, &what);
  set_err(w, "%s (%s) syncing %s; frames %llu..%llu may not be on disk and are dropped", what,
          strerror(e), w->path,
          (unsigned long long)(w->synced.last_seq + 1), (unsigned long long)w->cur.last_seq);
  wal_pos to = w->synced;
  return undo(w, rc, &to);
}

int wal_reset(wal *w, uint64_t upto) {
  if (!w) return WAL_EINVAL;
  int rc = check_writable(w);
  if (rc != WAL_OK) return rc;
  if (upto < w->cur.last_seq || upto >= WAL_MAX_SEQ) {
    set_err(w, "wal_reset(%llu): the log holds frames up to %llu", (unsigned long long)upto,
            (unsigned long long)w->cur.last_seq);
    return WAL_EINVAL;
  }
  /* the new header is on disk before the old frames go: a crash in between
  ** leaves frames that no longer validate, never a header that is too old */
  if (header_write(w, upto + 1) != 0 || fdatasync(w->fd) != 0 ||
      ftruncate(w->fd, WAL_HEADER_SIZE) != 0 || fsync(w->fd) != 0) {
    const char *what;
    rc = write_status(errno, &what);
    set_err(w, "%s (%s) resetting %s; reopen it", what, strerror(errno), w->path);
    w->broken = 1;
    return rc;
  }
  w->size = WAL_HEADER_SIZE;
  w->cur = w->synced = empty_pos(w);
  return WAL_OK;
}
