/*
** test/unit/testutil.h - small helpers shared by the Check test programs.
*/
#ifndef H5MEM_TESTUTIL_H
#define H5MEM_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Deterministic PRNG (splitmix64).  The seed comes from H5MEM_TEST_SEED
** when set, so a failure can be replayed; tests print the seed they use. */
typedef struct { uint64_t s; } t_rng;

static inline uint64_t t_next(t_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* uniform in [-1, 1) */
static inline float t_unit(t_rng *r) {
  return (float)((double)(t_next(r) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static inline uint64_t t_seed(void) {
  const char *e = getenv("H5MEM_TEST_SEED");
  uint64_t seed = e && *e ? strtoull(e, NULL, 0) : 20261129u;
  return seed;
}

/* ck_assert_msg() reports to the Check runner through a pipe write on every
** call, passing or not; in loops of millions that is most of a test's time.
** T_CHECK writes only when the condition fails. */
#define T_CHECK(cond, ...)                 \
  do {                                     \
    if (!(cond)) ck_abort_msg(__VA_ARGS__); \
  } while (0)

/* A new directory "<name>.XXXXXX" under $TMPDIR (or /tmp), its path in
** dir (size bytes); a test works in one of its own. */
static inline void t_mkdtemp(char *dir, size_t size, const char *name) {
  const char *base = getenv("TMPDIR");
  snprintf(dir, size, "%s/%s.XXXXXX", base && *base ? base : "/tmp", name);
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

/* Remove dir and what is in it: plain files only. */
static inline void t_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  char p[1200];
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    ck_assert_int_eq(unlink(p), 0);
  }
  closedir(d);
  ck_assert_int_eq(rmdir(dir), 0);
}

/* Run every test of s; the exit status of a test program. */
static inline int t_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
