/*
** test/fuzz/fuzz_wal.c - libFuzzer target for lib/store/wal: a log file as
** wal_open finds it beside a store (its header, the frames' valid prefix,
** a damaged frame with frames after it, a later version's header).
**
** Input: one byte of settings, then the file.  Settings:
**   bit 0  set the header's store id to the one opened with and its
**          checksum (so that the frames behind it are read)
**   bit 1  set every frame's checksum along the chain, as far as the
**          frames' magic and lengths lead (so that their seqs, lengths
**          and payloads are what is tested)
**   bit 2  open for writing (cut back, kept aside, appended to, reset)
**          instead of readonly
** The file is written to a directory of the target's own (in /dev/shm
** when there is one: writers fsync), opened, replayed (every frame must
** come in seq order, within the file), and when opened for writing a
** frame is appended, replayed, and the log reset; it must then open empty.
** Seeds (H5MEM_FUZZ_SEEDS): logs written by wal_append.
*/
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fuzz.h"
#include "store/wal.h"

static const uint8_t ID[16] = {0x68, 0x35, 0x6d, 0x65, 0x6d, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
static char dir[512], path[600];

/* Remove every file of the directory (the log and the copies kept aside). */
static void clean(void) {
  DIR *d = opendir(dir);
  if (!d) abort();
  struct dirent *e;
  char p[1200];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    unlink(p);
  }
  closedir(d);
}

static void done(void) {
  clean();
  rmdir(dir);
}

/* Settings bits 0 and 1 applied to the file f (n bytes). */
static void fix(uint8_t *f, size_t n, unsigned mode) {
  if (n < WAL_HEADER_SIZE) return;
  if (mode & 1) {
    memcpy(f + 16, ID, 16);
    util_put_le(f + 56, XXH64(f, 56, 0), 8);
  }
  if (!(mode & 2)) return;
  uint64_t chain = util_get_le(f + 56, 8);
  for (size_t at = WAL_HEADER_SIZE; n - at >= WAL_FRAME_OVERHEAD;) {
    uint64_t len = util_get_le(f + at + 4, 4);
    if (util_get_le(f + at, 4) != 0x464c4157u || len > n - at - WAL_FRAME_OVERHEAD) break;
    chain = XXH64(f + at, 16 + len, chain);
    util_put_le(f + at + 16 + len, chain, 8);
    at += 16 + len + 8;
  }
}

static int write_file(const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return -1;
  int ok = n == 0 || write(fd, p, n) == (ssize_t)n;
  close(fd);
  return ok ? 0 : -1;
}

typedef struct seen {
  uint64_t frames, last, sum;
  size_t size;
} seen;

static int on_frame(void *ctx, uint64_t seq, const uint8_t *p, size_t len) {
  seen *s = ctx;
  FUZZ_ASSERT(s->frames == 0 || seq == s->last + 1);
  FUZZ_ASSERT(len + WAL_FRAME_OVERHEAD <= s->size);
  for (size_t i = 0; i < len; i++) s->sum += p[i]; /* (every byte read) */
  s->frames++;
  s->last = seq;
  return 0;
}

/* Replay w: its frames, in order, as many as wal_frames says. */
static void replay(wal *w) {
  seen s = {0, 0, 0, (size_t)wal_bytes(w)};
  if (s.size == 0) s.size = (size_t)-1;
  int rc = wal_replay(w, on_frame, &s);
  FUZZ_ASSERT(rc == WAL_OK);
  FUZZ_ASSERT(s.frames == wal_frames(w));
  FUZZ_ASSERT(s.frames == 0 || s.last == wal_last_seq(w));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  unsigned mode = data[0];
  size_t n = size - 1;
  uint8_t *f = malloc(n ? n : 1);
  if (!f) abort();
  if (n) memcpy(f, data + 1, n);
  fix(f, n, mode);
  clean();
  if (write_file(f, n) != 0) abort();
  free(f);
  int readonly = !(mode & 4);
  wal *w;
  char err[256];
  int rc = wal_open(path, ID, readonly, &w, err, sizeof err);
  FUZZ_ASSERT(rc == WAL_OK || rc == WAL_EMISMATCH || rc == WAL_EINVAL);
  if (rc != WAL_OK) return 0;
  (void)wal_note(w);
  replay(w);
  FUZZ_ASSERT(wal_changed(w, 0) == 0 && wal_changed(w, 1) == 0);
  if (!readonly) {
    /* what a writer does next: a frame, then a checkpoint's reset */
    uint64_t frames = wal_frames(w), last = wal_last_seq(w), seq;
    rc = wal_append(w, "P fuzz", 6, 0, &seq);
    if (last >= WAL_MAX_SEQ - 1) { /* (numbers run out: said so) */
      FUZZ_ASSERT(rc == WAL_EINVAL && strstr(wal_errmsg(w), "run out"));
      wal_close(w);
      return 0;
    }
    FUZZ_ASSERT(rc == WAL_OK);
    FUZZ_ASSERT(wal_frames(w) == frames + 1 && wal_last_seq(w) == seq);
    replay(w);
    rc = wal_sync(w);
    if (rc == WAL_OK) rc = wal_reset(w, seq);
    if (rc != WAL_OK) fprintf(stderr, "%s\n", wal_errmsg(w));
    FUZZ_ASSERT(rc == WAL_OK);
    wal_close(w);
    FUZZ_ASSERT(wal_open(path, ID, 1, &w, err, sizeof err) == WAL_OK);
    FUZZ_ASSERT(wal_frames(w) == 0 && wal_last_seq(w) == seq);
  }
  wal_close(w);
  return 0;
}

/* ---- seeds ------------------------------------------------------------------ */

static void seed_file(const char *sdir, const char *name, unsigned mode) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) abort();
  struct stat st;
  if (fstat(fd, &st) != 0) abort();
  uint8_t *b = malloc((size_t)st.st_size + 1);
  if (!b || read(fd, b + 1, (size_t)st.st_size) != st.st_size) abort();
  close(fd);
  b[0] = (uint8_t)mode;
  fuzz_seed(sdir, name, b, (size_t)st.st_size + 1);
  free(b);
}

/* Logs: empty; four frames; after a reset (numbered on); a torn tail; a
** damaged frame with frames after it; one frame, taken as it is. */
static void seeds(const char *sdir) {
  static const char *const pay[] = {"", "P one frame", "D\x01\x00\x00\x00\x00\x00\x00\x00",
                                    "a longer payload, a longer payload, a longer payload"};
  char err[256];
  for (int k = 0; k < 6; k++) {
    clean();
    wal *w;
    FUZZ_ASSERT(wal_open(path, ID, 0, &w, err, sizeof err) == WAL_OK);
    int nf = k == 0 ? 0 : k == 5 ? 1 : 4;
    uint64_t seq = 0;
    for (int i = 0; i < nf; i++)
      FUZZ_ASSERT(wal_append(w, pay[i % 4], strlen(pay[i % 4]), 0, &seq) == WAL_OK);
    if (k == 2) { /* numbered on after a checkpoint */
      FUZZ_ASSERT(wal_reset(w, seq + 10) == WAL_OK);
      FUZZ_ASSERT(wal_append(w, pay[1], strlen(pay[1]), 0, NULL) == WAL_OK);
    }
    uint64_t bytes = wal_bytes(w);
    wal_close(w);
    if (k == 3 && truncate(path, (off_t)bytes - 5) != 0) abort(); /* torn */
    if (k == 4) { /* the second frame damaged, two valid-looking after it */
      int fd = open(path, O_RDWR);
      uint8_t x = 0xff;
      if (fd < 0 || pwrite(fd, &x, 1, WAL_HEADER_SIZE + WAL_FRAME_OVERHEAD + 18) != 1) abort();
      close(fd);
    }
    char name[32];
    snprintf(name, sizeof name, "seed-%d", k);
    seed_file(sdir, name, k == 5 ? 0 : k == 1 ? 7 : 3);
    snprintf(name, sizeof name, "seed-%d-w", k);
    seed_file(sdir, name, 4);
  }
  clean();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof dir, "%s/h5mem_fuzz_wal.XXXXXX", fuzz_tmp_base());
  if (!mkdtemp(dir)) {
    fprintf(stderr, "cannot make %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  snprintf(path, sizeof path, "%s/agent.h5-wal", dir);
  if (fuzz_seed_dir()) seeds(fuzz_seed_dir());
  atexit(done);
  return 0;
}
