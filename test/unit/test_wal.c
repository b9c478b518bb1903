/*
** test/unit/test_wal.c - lib/store/wal: round trips, torn tails, corruption,
** sequence checks, resets, store mismatch, readonly opens, a full disk.
**
** Every test works in a directory of its own under $TMPDIR (or /tmp) and
** removes it at the end.
*/
#include "config.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "store/wal.h"
#include "testutil.h"
#include "util/le.h"

static const uint8_t ID_A[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
static const uint8_t ID_B[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 17};

/* ---- files ---------------------------------------------------------------- */

typedef struct tdir {
  char dir[512];
  char path[600]; /* dir/agent.h5-wal */
  char copy[600]; /* dir/copy.h5-wal, for altered copies of path */
} tdir;

static void tdir_make(tdir *t) {
  t_mkdtemp(t->dir, sizeof t->dir, "test_wal");
  snprintf(t->path, sizeof t->path, "%s/agent.h5-wal", t->dir);
  snprintf(t->copy, sizeof t->copy, "%s/copy.h5-wal", t->dir);
}

/* The whole file (malloc'd; *len bytes). */
static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(b);
  ck_assert_uint_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void spill(const char *path, const uint8_t *b, size_t len, const char *mode) {
  FILE *f = fopen(path, mode);
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

static uint64_t file_size(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

/* ---- frames ---------------------------------------------------------------- */

/* The payload of frame seq in a test (deterministic, so a child process
** and its parent agree). */
static void fill(uint8_t *p, size_t len, uint64_t seq) {
  t_rng r = {seq * 0x9e3779b97f4a7c15ull + 7};
  for (size_t i = 0; i < len; i++) p[i] = (uint8_t)t_next(&r);
}

static wal *open_ok(const char *path, const uint8_t *id, int readonly) {
  wal *w = NULL;
  char err[256] = "";
  int rc = wal_open(path, id, readonly, &w, err, sizeof err);
  T_CHECK(rc == WAL_OK, "wal_open(%s): %d %s", path, rc, err);
  ck_assert_ptr_nonnull(w);
  return w;
}

static uint64_t append_ok(wal *w, size_t len, uint64_t tag) {
  uint8_t *p = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(p);
  fill(p, len, tag);
  uint64_t seq = 0;
  int rc = wal_append(w, p, len, 0, &seq);
  T_CHECK(rc == WAL_OK, "append: %d %s", rc, wal_errmsg(w));
  free(p);
  return seq;
}

/* What replay gave back: seqs and payload lengths, with each payload
** checked against fill(tag) where tags[seq] is set. */
typedef struct seen {
  uint64_t n, seq[4096];
  size_t len[4096];
  const uint64_t *tags; /* tags[seq]: the tag the payload was filled with */
  int stop_after;       /* nonzero: return 7 after this many frames */
} seen;

static int collect(void *ctx, uint64_t seq, const uint8_t *p, size_t len) {
  seen *s = ctx;
  T_CHECK(s->n < 4096, "too many frames");
  if (s->tags) {
    uint8_t *want = malloc(len ? len : 1);
    fill(want, len, s->tags[seq]);
    T_CHECK(memcmp(want, p, len) == 0, "payload of frame %llu differs", (unsigned long long)seq);
    free(want);
  }
  s->seq[s->n] = seq;
  s->len[s->n] = len;
  s->n++;
  return s->stop_after && s->n == (uint64_t)s->stop_after ? 7 : 0;
}

/* Replay w and check it holds frames first..first+n-1 with the given lens. */
static void expect_frames(wal *w, uint64_t first, uint64_t n, const size_t *lens,
                          const uint64_t *tags) {
  static seen s;
  memset(&s, 0, sizeof s);
  s.tags = tags;
  int rc = wal_replay(w, collect, &s);
  T_CHECK(rc == WAL_OK, "replay: %d %s", rc, wal_errmsg(w));
  T_CHECK(s.n == n, "replay gave %llu frames, want %llu", (unsigned long long)s.n,
          (unsigned long long)n);
  ck_assert_uint_eq(wal_frames(w), n);
  ck_assert_uint_eq(wal_last_seq(w), first + n - 1);
  for (uint64_t i = 0; i < n; i++) {
    T_CHECK(s.seq[i] == first + i, "frame %llu has seq %llu", (unsigned long long)i,
            (unsigned long long)s.seq[i]);
    if (lens) T_CHECK(s.len[i] == lens[i], "frame %llu: %zu bytes", (unsigned long long)i, s.len[i]);
  }
}

/* A log of n frames of the given lengths, frame seq filled with tag seq.
** With len: its bytes (malloc'd), *len of them. */
static uint8_t *make_log(const char *path, size_t n, const size_t *lens, uint64_t *tags,
                         size_t *len) {
  wal *w = open_ok(path, ID_A, 0);
  for (size_t i = 0; i < n; i++) {
    tags[i + 1] = i + 1;
    ck_assert_uint_eq(append_ok(w, lens[i], i + 1), i + 1);
  }
  wal_close(w);
  return len ? slurp(path, len) : NULL;
}

/* File offset of frame i (0-based) of a fresh log. */
static uint64_t frame_off(const size_t *lens, size_t i) {
  uint64_t off = WAL_HEADER_SIZE;
  for (size_t k = 0; k < i; k++) off += lens[k] + WAL_FRAME_OVERHEAD;
  return off;
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_roundtrip) {
  tdir t;
  tdir_make(&t);
  t_rng r = {t_seed()};
  enum { N = 300 };
  static size_t lens[N];
  static uint64_t tags[N + 1];
  wal *w = open_ok(t.path, ID_A, 0);
  ck_assert_uint_eq(wal_frames(w), 0);
  ck_assert_uint_eq(wal_last_seq(w), 0);
  ck_assert_uint_eq(wal_bytes(w), WAL_HEADER_SIZE);
  uint64_t bytes = WAL_HEADER_SIZE;
  for (size_t i = 0; i < N; i++) {
    size_t len = i == 0 ? 0 : i == 1 ? 1 : i == 2 || i == 150 ? (1u << 20)
               : (size_t)(t_next(&r) % 5000);
    lens[i] = len;
    tags[i + 1] = t_next(&r);
    ck_assert_uint_eq(append_ok(w, len, tags[i + 1]), i + 1);
    bytes += len + WAL_FRAME_OVERHEAD;
    ck_assert_uint_eq(wal_bytes(w), bytes);
  }
  ck_assert_int_eq(wal_sync(w), WAL_OK);
  expect_frames(w, 1, N, lens, tags);
  wal_close(w);
  ck_assert_uint_eq(file_size(t.path), bytes);

  w = open_ok(t.path, ID_A, 0);
  ck_assert_uint_eq(wal_bytes(w), bytes);
  expect_frames(w, 1, N, lens, tags);
  /* a callback's nonzero return stops the replay and is returned */
  static seen s;
  memset(&s, 0, sizeof s);
  s.stop_after = 3;
  ck_assert_int_eq(wal_replay(w, collect, &s), 7);
  ck_assert_uint_eq(s.n, 3);
  wal_close(w);
  wal_close(NULL);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_torn_tail) {
  tdir t;
  tdir_make(&t);
  static const size_t lens[] = {10, 0, 37, 1, 60};
  enum { N = 5 };
  uint64_t tags[N + 2];
  size_t full_len;
  uint8_t *full = make_log(t.path, N, lens, tags, &full_len);
  ck_assert_uint_eq(full_len, frame_off(lens, N));
  const char *cut_path = t.copy;
  for (size_t cut = 0; cut <= full_len; cut++) {
    spill(cut_path, full, cut, "wb");
    /* the complete frames before the cut (none if the header is cut) */
    uint64_t k = 0;
    while (cut >= WAL_HEADER_SIZE && k < N && frame_off(lens, k + 1) <= cut) k++;
    uint64_t valid_end = frame_off(lens, k);
    wal *w = open_ok(cut_path, ID_A, 0);
    expect_frames(w, 1, k, lens, tags);
    T_CHECK(wal_bytes(w) == valid_end && file_size(cut_path) == valid_end,
            "cut %zu: %llu bytes, want %llu", cut, (unsigned long long)wal_bytes(w),
            (unsigned long long)valid_end);
    tags[k + 1] = 999;
    ck_assert_uint_eq(append_ok(w, 20, 999), k + 1);
    wal_close(w);
    w = open_ok(cut_path, ID_A, 0);
    static size_t lens2[N + 1];
    memcpy(lens2, lens, sizeof lens);
    lens2[k] = 20;
    expect_frames(w, 1, k + 1, lens2, tags);
    wal_close(w);
    tags[k + 1] = k + 1;
  }
  free(full);
  t_rmdir(t.dir);
}
END_TEST

/* A torn last frame whose bytes end in what looks like a frame header (the
** magic, length 0, a later seq) with less than a frame's room left: no
** frame fits there, so the tail is torn, not damaged (no note, nothing
** kept aside). */
START_TEST(test_torn_tail_lookalike) {
  tdir t;
  tdir_make(&t);
  static const size_t lens[] = {10};
  uint64_t tags[3];
  size_t len;
  uint8_t *full = make_log(t.path, 1, lens, tags, &len);
  uint8_t tail[36];
  memset(tail, 0, sizeof tail);
  memcpy(tail, "WALF", 4); /* the torn frame: seq 2, 100 bytes, 20 written */
  tail[4] = 100;
  tail[8] = 2;
  memcpy(tail + 20, "WALF", 4); /* its last 16 bytes: "frame 3", length 0 */
  tail[28] = 3;
  spill(t.path, full, len, "wb");
  spill(t.path, tail, sizeof tail, "ab");
  wal *w = open_ok(t.path, ID_A, 1);
  ck_assert_uint_eq(wal_frames(w), 1);
  T_CHECK(wal_note(w)[0] == 0, "note: %s", wal_note(w));
  wal_close(w);
  w = open_ok(t.path, ID_A, 0);
  T_CHECK(wal_note(w)[0] == 0, "note: %s", wal_note(w));
  ck_assert_uint_eq(file_size(t.path), len);
  wal_close(w);
  free(full);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_corrupt) {
  tdir t;
  tdir_make(&t);
  static const size_t lens[] = {30, 150, 40, 5};
  enum { N = 4 };
  uint64_t tags[N + 1];
  size_t full_len;
  uint8_t *full = make_log(t.path, N, lens, tags, &full_len);
  const char *bad_path = t.copy;
  /* every byte of the second frame, each bit pattern flip in turn */
  uint64_t off = frame_off(lens, 1), end = frame_off(lens, 2);
  for (uint64_t i = off; i < end; i++) {
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    for (size_t f = 0; f < sizeof flips; f++) {
      full[i] ^= flips[f];
      spill(bad_path, full, full_len, "wb");
      full[i] ^= flips[f];
      wal *w = open_ok(bad_path, ID_A, 0);
      expect_frames(w, 1, 1, lens, tags);
      ck_assert_uint_eq(file_size(bad_path), off);
      wal_close(w);
    }
  }
  /* a damaged header: the log counts as empty and starts again */
  for (size_t i = 0; i < WAL_HEADER_SIZE; i++) {
    full[i] ^= 0x10;
    spill(bad_path, full, full_len, "wb");
    full[i] ^= 0x10;
    wal *w = open_ok(bad_path, ID_A, 1);
    expect_frames(w, 1, 0, NULL, NULL);
    wal_close(w);
    ck_assert_uint_eq(file_size(bad_path), full_len);
    w = open_ok(bad_path, ID_A, 0);
    expect_frames(w, 1, 0, NULL, NULL);
    ck_assert_uint_eq(file_size(bad_path), WAL_HEADER_SIZE);
    ck_assert_uint_eq(append_ok(w, 3, 1), 1);
    wal_close(w);
  }
  free(full);
  t_rmdir(t.dir);
}
END_TEST

/* A frame with a good checksum but the wrong seq ends the valid prefix, and
** so does a copy of an earlier frame. */
START_TEST(test_wrong_seq) {
  tdir t;
  tdir_make(&t);
  static const size_t lens[] = {8, 8, 8};
  enum { N = 3 };
  uint64_t tags[N + 1];
  size_t full_len;
  uint8_t *full = make_log(t.path, N, lens, tags, &full_len);
  const char *p2 = t.copy;

  /* a copy of frame 2 after frame 3 */
  uint8_t *b = malloc(full_len + 32);
  memcpy(b, full, full_len);
  memcpy(b + full_len, full + frame_off(lens, 1), 32);
  spill(p2, b, full_len + 32, "wb");
  wal *w = open_ok(p2, ID_A, 0);
  expect_frames(w, 1, N, lens, tags);
  wal_close(w);

  /* a frame chained properly to frame 3 but numbered 5, or 3 */
  static const uint64_t bad[] = {5, 3, 0};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    uint8_t *fr = b + full_len;
    memcpy(fr, "WALF", 4);
    fr[4] = 8, fr[5] = fr[6] = fr[7] = 0;
    util_put_le64(fr + 8, bad[k]);
    memset(fr + 16, 0x5a, 8);
    uint64_t chain = util_get_le64(full + full_len - 8);
    uint64_t sum = XXH64(fr, 24, chain);
    util_put_le64(fr + 24, sum);
    spill(p2, b, full_len + 32, "wb");
    w = open_ok(p2, ID_A, 0);
    expect_frames(w, 1, N, lens, tags);
    ck_assert_uint_eq(file_size(p2), full_len);
    wal_close(w);
    /* the same frame numbered 4 is good: the crafting above is right */
    if (k == 0) {
      fr[8] = 4;
      sum = XXH64(fr, 24, chain);
      util_put_le64(fr + 24, sum);
      spill(p2, b, full_len + 32, "wb");
      w = open_ok(p2, ID_A, 0);
      ck_assert_uint_eq(wal_frames(w), N + 1);
      wal_close(w);
    }
  }
  free(b);
  free(full);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_reset) {
  tdir t;
  tdir_make(&t);
  uint64_t tags[64] = {0};
  wal *w = open_ok(t.path, ID_A, 0);
  for (uint64_t s = 1; s <= 5; s++) tags[s] = s, append_ok(w, 100, s);
  size_t old_len;
  uint8_t *old = slurp(t.path, &old_len);
  ck_assert_int_eq(wal_reset(w, 4), WAL_EINVAL); /* frame 5 not checkpointed */
  ck_assert_ptr_nonnull(strstr(wal_errmsg(w), "up to 5"));
  ck_assert_int_eq(wal_reset(w, 5), WAL_OK);
  ck_assert_uint_eq(wal_frames(w), 0);
  ck_assert_uint_eq(wal_last_seq(w), 5);
  ck_assert_uint_eq(wal_bytes(w), WAL_HEADER_SIZE);
  ck_assert_uint_eq(file_size(t.path), WAL_HEADER_SIZE);
  for (uint64_t s = 6; s <= 8; s++) {
    tags[s] = 100 + s;
    ck_assert_uint_eq(append_ok(w, 50, 100 + s), s);
  }
  wal_close(w);

  w = open_ok(t.path, ID_A, 0);
  static const size_t l50[] = {50, 50, 50};
  expect_frames(w, 6, 3, l50, tags);
  /* a reset past the last frame: numbering jumps to upto + 1 */
  ck_assert_int_eq(wal_reset(w, 20), WAL_OK);
  ck_assert_uint_eq(wal_last_seq(w), 20);
  wal_close(w);
  w = open_ok(t.path, ID_A, 0);
  ck_assert_uint_eq(wal_last_seq(w), 20);
  tags[21] = 21;
  ck_assert_uint_eq(append_ok(w, 50, 21), 21);
  wal_close(w);

  /* stale frames from before the reset appended after the good ones */
  spill(t.path, old + WAL_HEADER_SIZE, old_len - WAL_HEADER_SIZE, "ab");
  uint64_t good = WAL_HEADER_SIZE + 50 + WAL_FRAME_OVERHEAD;
  w = open_ok(t.path, ID_A, 0);
  expect_frames(w, 21, 1, l50, tags);
  ck_assert_uint_eq(file_size(t.path), good);
  wal_close(w);
  /* and right after the header of a reset, empty log */
  w = open_ok(t.path, ID_A, 0);
  ck_assert_int_eq(wal_reset(w, 21), WAL_OK);
  wal_close(w);
  spill(t.path, old + WAL_HEADER_SIZE, old_len - WAL_HEADER_SIZE, "ab");
  w = open_ok(t.path, ID_A, 0);
  expect_frames(w, 22, 0, NULL, NULL);
  wal_close(w);
  free(old);
  t_rmdir(t.dir);
}
END_TEST

/* A log deleted and made again starts at seq 1 too: the frames of the old
** one still do not validate in it (the salt differs). */
START_TEST(test_stale_same_base) {
  tdir t;
  tdir_make(&t);
  uint64_t tags[8] = {0, 1, 2, 3};
  wal *w = open_ok(t.path, ID_A, 0);
  for (uint64_t s = 1; s <= 3; s++) append_ok(w, 16, s);
  wal_close(w);
  size_t old_len;
  uint8_t *old = slurp(t.path, &old_len);
  ck_assert_int_eq(unlink(t.path), 0);
  w = open_ok(t.path, ID_A, 0);
  append_ok(w, 16, 1);
  wal_close(w);
  /* frames 2 and 3 of the old log follow frame 1 of the new one */
  spill(t.path, old + WAL_HEADER_SIZE + 40, old_len - WAL_HEADER_SIZE - 40, "ab");
  w = open_ok(t.path, ID_A, 0);
  expect_frames(w, 1, 1, NULL, tags);
  wal_close(w);
  free(old);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_mismatch) {
  tdir t;
  tdir_make(&t);
  static const size_t lens[] = {10, 20};
  uint64_t tags[3];
  make_log(t.path, 2, lens, tags, NULL);
  spill(t.path, (const uint8_t *)"torn", 4, "ab");
  size_t n0, n1;
  uint8_t *before = slurp(t.path, &n0);
  for (int ro = 0; ro <= 1; ro++) {
    wal *w = (wal *)1;
    char err[256] = "";
    ck_assert_int_eq(wal_open(t.path, ID_B, ro, &w, err, sizeof err), WAL_EMISMATCH);
    ck_assert_ptr_null(w);
    T_CHECK(strstr(err, "another store") != NULL, "%s", err);
    uint8_t *after = slurp(t.path, &n1);
    ck_assert_uint_eq(n0, n1);
    ck_assert_int_eq(memcmp(before, after, n0), 0);
    free(after);
  }
  free(before);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_readonly) {
  tdir t;
  tdir_make(&t);
  /* missing: no frames, nothing created, no writes */
  wal *w = open_ok(t.path, ID_A, 1);
  expect_frames(w, 1, 0, NULL, NULL);
  ck_assert_uint_eq(wal_bytes(w), 0);
  ck_assert_int_eq(wal_append(w, "x", 1, 0, NULL), WAL_EINVAL);
  ck_assert_int_eq(wal_reset(w, 0), WAL_EINVAL);
  ck_assert_int_eq(wal_sync(w), WAL_OK);
  wal_close(w);
  ck_assert_int_eq(access(t.path, F_OK), -1);

  static const size_t lens[] = {10, 20, 30};
  uint64_t tags[4];
  make_log(t.path, 3, lens, tags, NULL);
  spill(t.path, (const uint8_t *)"WALF\x10\0\0\0\4\0\0\0", 12, "ab"); /* torn frame 4 */
  struct timespec ts[2] = {{1000000000, 123456789}, {1000000000, 123456789}};
  ck_assert_int_eq(utimensat(AT_FDCWD, t.path, ts, 0), 0);
  struct stat st0, st1;
  ck_assert_int_eq(stat(t.path, &st0), 0);
  size_t n0, n1;
  uint8_t *before = slurp(t.path, &n0);
  w = open_ok(t.path, ID_A, 1);
  expect_frames(w, 1, 3, lens, tags);
  ck_assert_uint_eq(wal_bytes(w), n0);
  ck_assert_int_eq(wal_append(w, "x", 1, 0, NULL), WAL_EINVAL);
  ck_assert_ptr_nonnull(strstr(wal_errmsg(w), "readonly"));
  wal_close(w);
  ck_assert_int_eq(stat(t.path, &st1), 0);
  uint8_t *after = slurp(t.path, &n1);
  ck_assert_uint_eq(n0, n1);
  ck_assert_int_eq(memcmp(before, after, n0), 0);
  ck_assert(st0.st_mtim.tv_sec == st1.st_mtim.tv_sec && st0.st_mtim.tv_nsec == st1.st_mtim.tv_nsec);
  ck_assert(st0.st_ctim.tv_sec == st1.st_ctim.tv_sec && st0.st_ctim.tv_nsec == st1.st_ctim.tv_nsec);
  free(before);
  free(after);
  t_rmdir(t.dir);
}
END_TEST

/* A header of a later version (checksum good) is refused, not rewritten. */
START_TEST(test_later_version) {
  tdir t;
  tdir_make(&t);
  uint8_t h[128] = "H5MEMWAL";
  h[8] = 2;
  h[12] = 128;
  memcpy(h + 16, ID_A, 16);
  uint64_t sum = XXH64(h, 120, 0);
  util_put_le64(h + 120, sum);
  spill(t.path, h, sizeof h, "wb");
  wal *w = (wal *)1;
  char err[256] = "";
  ck_assert_int_eq(wal_open(t.path, ID_A, 0, &w, err, sizeof err), WAL_EINVAL);
  ck_assert_ptr_null(w);
  T_CHECK(strstr(err, "version 2") != NULL, "%s", err);
  ck_assert_uint_eq(file_size(t.path), sizeof h);
  t_rmdir(t.dir);
}
END_TEST

START_TEST(test_group_commit_and_args) {
  tdir t;
  tdir_make(&t);
  wal *w = open_ok(t.path, ID_A, 0);
  for (uint64_t s = 1; s < 100; s++) {
    uint8_t p[64];
    fill(p, s % 64, s);
    uint64_t seq = 0;
    ck_assert_int_eq(wal_append(w, p, s % 64, s % 10 == 0, &seq), WAL_OK);
    ck_assert_uint_eq(seq, s);
  }
  ck_assert_int_eq(wal_sync(w), WAL_OK);
  uint64_t bytes = wal_bytes(w);
  ck_assert_int_eq(wal_append(w, NULL, 5, 0, NULL), WAL_EINVAL);
  ck_assert_int_eq(wal_append(w, "x", 1, 2, NULL), WAL_EINVAL);
  ck_assert_int_eq(wal_append(w, "x", (size_t)WAL_MAX_FRAME + 1, 0, NULL), WAL_EINVAL);
  ck_assert_int_eq(wal_append(w, NULL, 0, 0, NULL), WAL_OK); /* an empty frame */
  ck_assert_uint_eq(wal_bytes(w), bytes + WAL_FRAME_OVERHEAD);
  wal_close(w);
  w = open_ok(t.path, ID_A, 0);
  ck_assert_uint_eq(wal_frames(w), 100);
  wal_close(w);
  char err[700];
  ck_assert_int_eq(wal_open(NULL, ID_A, 0, &w, err, sizeof err), WAL_EINVAL);
  ck_assert_ptr_null(w);
  snprintf(err, sizeof err, "%s/no/such/dir/x", t.dir);
  ck_assert_int_eq(wal_open(err, ID_A, 0, &w, NULL, 0), WAL_EIO);
  t_rmdir(t.dir);
}
END_TEST

/* Under RLIMIT_FSIZE the appends end in WAL_EFULL, the file holds exactly
** the frames that were appended, and a reopen replays them all. */
START_TEST(test_disk_full) {
  tdir t;
  tdir_make(&t);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ne(pid, -1);
  if (pid == 0) {
    struct {
      int rc;
      uint64_t frames, bytes, size;
      char msg[256];
    } rep;
    memset(&rep, 0, sizeof rep);
    struct rlimit rl = {20000, 20000};
    signal(SIGXFSZ, SIG_IGN);
    wal *w = NULL;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0 ||
        wal_open(t.path, ID_A, 0, &w, rep.msg, sizeof rep.msg) != WAL_OK)
      _exit(2);
    uint8_t p[3000];
    for (uint64_t s = 1; s < 1000; s++) {
      size_t len = 500 + (size_t)(s * 977 % 2500);
      fill(p, len, s);
      rep.rc = wal_append(w, p, len, (int)(s & 1), NULL);
      if (rep.rc != WAL_OK) break;
    }
    snprintf(rep.msg, sizeof rep.msg, "%s", wal_errmsg(w));
    rep.frames = wal_frames(w);
    rep.bytes = wal_bytes(w);
    struct stat st;
    rep.size = stat(t.path, &st) == 0 ? (uint64_t)st.st_size : 0;
    /* after the failure the log still takes a frame that fits */
    uint64_t seq = 0;
    if (wal_append(w, p, 0, 1, &seq) == WAL_OK && seq == rep.frames + 1) rep.frames++;
    else rep.rc = 99;
    wal_close(w);
    if (write(fds[1], &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  struct {
    int rc;
    uint64_t frames, bytes, size;
    char msg[256];
  } rep;
  ck_assert_int_eq(read(fds[0], &rep, sizeof rep), (ssize_t)sizeof rep);
  close(fds[0]);
  int status = 0;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  T_CHECK(rep.rc == WAL_EFULL, "rc %d: %s", rep.rc, rep.msg);
  T_CHECK(strstr(rep.msg, "limit") || strstr(rep.msg, "space"), "%s", rep.msg);
  T_CHECK(rep.frames > 3, "only %llu frames", (unsigned long long)rep.frames);
  ck_assert_uint_eq(rep.bytes, rep.size);
  ck_assert_uint_le(rep.size, 20000);

  static uint64_t tags[1000];
  for (uint64_t s = 1; s < 1000; s++) tags[s] = s;
  wal *w = open_ok(t.path, ID_A, 0);
  expect_frames(w, 1, rep.frames, NULL, tags);
  ck_assert_uint_eq(wal_bytes(w), rep.size + WAL_FRAME_OVERHEAD);
  wal_close(w);
  t_rmdir(t.dir);
}
END_TEST

int main(void) {
  printf("test_wal: seed %llu\n", (unsigned long long)t_seed());
  Suite *s = suite_create("wal");
  TCase *tc = tcase_create("wal");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_roundtrip);
  tcase_add_test(tc, test_torn_tail);
  tcase_add_test(tc, test_torn_tail_lookalike);
  tcase_add_test(tc, test_corrupt);
  tcase_add_test(tc, test_wrong_seq);
  tcase_add_test(tc, test_reset);
  tcase_add_test(tc, test_stale_same_base);
  tcase_add_test(tc, test_mismatch);
  tcase_add_test(tc, test_readonly);
  tcase_add_test(tc, test_later_version);
  tcase_add_test(tc, test_group_commit_and_args);
  tcase_add_test(tc, test_disk_full);
  suite_add_tcase(s, tc);
  return t_run(s);
}
