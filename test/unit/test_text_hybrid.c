/*
** test/unit/test_text_hybrid.c - lib/text/hybrid.c: the fusion and re-ranking
** behind hybrid() (docs/SQL.md, "Hybrid retrieval"), on hand-made
** candidates whose scores are worked out here by hand.
**
** test/sql/test_hybrid.py runs the same code through SQL over a store.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "text/hybrid.h"

#define EPS 1e-12

/* A candidate of the vector side, of the keyword side, or of both. */
static hybrid_rec V(uint64_t pos, double vs) {
  return (hybrid_rec){.pos = pos, .id = (int64_t)pos, .vs = vs, .has_v = 1};
}
static hybrid_rec K(uint64_t pos, double ks) {
  return (hybrid_rec){.pos = pos, .id = (int64_t)pos, .ks = ks, .has_k = 1};
}
static hybrid_rec VK(uint64_t pos, double vs, double ks) {
  return (hybrid_rec){.pos = pos, .id = (int64_t)pos, .vs = vs, .ks = ks, .has_v = 1, .has_k = 1};
}

/* The record of u[0..n) with id, which must be there. */
static const hybrid_rec *by_id(const hybrid_rec *u, uint64_t n, int64_t id) {
  for (uint64_t i = 0; i < n; i++)
    if (u[i].id == id) return &u[i];
  ck_abort_msg("no record with id %lld", (long long)id);
  return NULL;
}

static double score_of(const hybrid_rec *u, uint64_t n, int64_t id) { return by_id(u, n, id)->score; }

/* ------------------------------------------------------------ options */

START_TEST(test_defaults) {
  hybrid_opts o;
  memset(&o, 0x5a, sizeof o);
  hybrid_opts_default(&o);
  ck_assert_int_eq(o.rrf, 0);
  ck_assert_double_eq(o.wv, 0.4);
  ck_assert_double_eq(o.wk, 0.6);
  ck_assert_double_eq(o.rrf_k, 60);
  ck_assert_int_eq(o.cand, 0);
  ck_assert_int_eq(o.kcand, 0);
  ck_assert_int_eq(o.reject, 0);
  ck_assert_int_eq(o.rerank, 0);
  ck_assert_double_eq(o.w_rel, 1.0);
  ck_assert_double_eq(o.w_rec, 0.2);
  ck_assert_double_eq(o.w_auth, 0.1);
  ck_assert_double_eq(o.w_act, 0.1);
  ck_assert_double_eq(o.half_life, 30 * 86400.0);
  ck_assert_double_eq(o.auth_default, 0.5);
  ck_assert_int_eq(o.has_now, 0);
}
END_TEST

/* The pools: max(10k, 100) unless given, never below k; the vector side's
** never above the live records (the keyword side's store_bm25 bounds). */
START_TEST(test_pools) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  uint64_t nv, nk;
  hybrid_pools(&o, 5, 1000000, &nv, &nk);
  ck_assert_uint_eq(nv, 100);
  ck_assert_uint_eq(nk, 100);
  hybrid_pools(&o, 10, 1000000, &nv, &nk);
  ck_assert_uint_eq(nv, 100);
  hybrid_pools(&o, 11, 1000000, &nv, &nk);
  ck_assert_uint_eq(nv, 110);
  ck_assert_uint_eq(nk, 110);
  hybrid_pools(&o, 11, 50, &nv, &nk); /* few live records */
  ck_assert_uint_eq(nv, 50);
  ck_assert_uint_eq(nk, 110);
  o.cand = 3;
  o.kcand = 7;
  hybrid_pools(&o, 5, 1000, &nv, &nk); /* given, but at least k */
  ck_assert_uint_eq(nv, 5);
  ck_assert_uint_eq(nk, 7);
  hybrid_pools(&o, 1, 1000, &nv, &nk);
  ck_assert_uint_eq(nv, 3);
  ck_assert_uint_eq(nk, 7);
  hybrid_pools(&o, 1, 2, &nv, &nk);
  ck_assert_uint_eq(nv, 2);
  hybrid_pools(&o, 1, 0, &nv, &nk); /* an empty store */
  ck_assert_uint_eq(nv, 0);
}
END_TEST

/* ------------------------------------------------------------- union */

START_TEST(test_union) {
  /* the vector side's, then the keyword side's; 2 and 5 on both */
  hybrid_rec u[] = {V(5, 0.9), V(2, 0.5), V(8, 0.1), K(2, 3.0), K(7, 1.0), K(5, 0.25)};
  uint64_t n = hybrid_union(u, 6);
  ck_assert_uint_eq(n, 4);
  const uint64_t pos[] = {2, 5, 7, 8};
  for (uint64_t i = 0; i < n; i++) ck_assert_uint_eq(u[i].pos, pos[i]);
  ck_assert(u[0].has_v && u[0].has_k);
  ck_assert_double_eq(u[0].vs, 0.5);
  ck_assert_double_eq(u[0].ks, 3.0);
  ck_assert(u[1].has_v && u[1].has_k);
  ck_assert_double_eq(u[1].vs, 0.9);
  ck_assert_double_eq(u[1].ks, 0.25);
  ck_assert(!u[2].has_v && u[2].has_k);
  ck_assert_double_eq(u[2].ks, 1.0);
  ck_assert(u[3].has_v && !u[3].has_k);
  ck_assert_double_eq(u[3].ks, 0);
  /* found by position */
  ck_assert_ptr_eq(hybrid_find(u, n, 7), &u[2]);
  ck_assert_ptr_eq(hybrid_find(u, n, 8), &u[3]);
  ck_assert_ptr_null(hybrid_find(u, n, 6));
  ck_assert_ptr_null(hybrid_find(u, n, 9));
  /* the keyword side's first: the same union */
  hybrid_rec w[] = {K(2, 3.0), K(7, 1.0), K(5, 0.25), V(5, 0.9), V(2, 0.5), V(8, 0.1)};
  ck_assert_uint_eq(hybrid_union(w, 6), 4);
  ck_assert_int_eq(memcmp(u, w, sizeof u[0] * 4), 0);
  /* nothing */
  ck_assert_uint_eq(hybrid_union(u, 0), 0);
  ck_assert_ptr_null(hybrid_find(u, 0, 2));
}
END_TEST

/* ---------------------------------------------------------- rejection */

START_TEST(test_reject) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  hybrid_rec v_only[] = {V(1, 0.3), V(2, 0.45)};
  hybrid_rec with_k[] = {V(1, 0.3), VK(2, 0.1, 2.0)};
  hybrid_rec k_only[] = {K(1, 2.0)};
  ck_assert_int_eq(hybrid_rejects(&o, v_only, 2), 0); /* off */
  o.reject = 1;
  o.reject_below = 0.5;
  ck_assert_int_eq(hybrid_rejects(&o, v_only, 2), 1);  /* best 0.45 < 0.5, no keyword */
  ck_assert_int_eq(hybrid_rejects(&o, with_k, 2), 0);  /* a keyword matched */
  ck_assert_int_eq(hybrid_rejects(&o, k_only, 1), 0);
  o.reject_below = 0.45;
  ck_assert_int_eq(hybrid_rejects(&o, v_only, 2), 0); /* at the threshold: kept */
  o.reject_below = -1e300;
  ck_assert_int_eq(hybrid_rejects(&o, v_only, 2), 0);
  ck_assert_int_eq(hybrid_rejects(&o, v_only, 0), 1); /* nothing at all: no vector score */
}
END_TEST

/* ------------------------------------------------------------ weighted */

START_TEST(test_weighted) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  /* vs over the records with one: 0.25 .. 0.75; ks over all: 0 .. 4 */
  hybrid_rec u[] = {V(1, 0.75), VK(2, 0.25, 4.0), VK(3, 0.5, 1.0), K(4, 2.0), V(5, 0.25)};
  hybrid_fuse(&o, u, 5);
  ck_assert_double_eq_tol(score_of(u, 5, 1), 0.4 * 1.0 + 0.6 * 0.0, EPS);
  ck_assert_double_eq_tol(score_of(u, 5, 2), 0.4 * 0.0 + 0.6 * 1.0, EPS);
  ck_assert_double_eq_tol(score_of(u, 5, 3), 0.4 * 0.5 + 0.6 * 0.25, EPS);
  ck_assert_double_eq_tol(score_of(u, 5, 4), 0.4 * 0.0 + 0.6 * 0.5, EPS); /* no vector score: 0 */
  ck_assert_double_eq_tol(score_of(u, 5, 5), 0.0, EPS);
  /* other weights */
  o.wv = 2;
  o.wk = 0;
  hybrid_fuse(&o, u, 5);
  ck_assert_double_eq_tol(score_of(u, 5, 1), 2.0, EPS);
  ck_assert_double_eq_tol(score_of(u, 5, 3), 1.0, EPS);
  ck_assert_double_eq_tol(score_of(u, 5, 4), 0.0, EPS);
}
END_TEST

/* All scores of a side equal: the vector side normalises to 1; the keyword
** side to 1 when positive, else 0. */
START_TEST(test_weighted_flat) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  hybrid_rec u[] = {VK(1, 0.5, 2.0), VK(2, 0.5, 2.0)};
  hybrid_fuse(&o, u, 2);
  ck_assert_double_eq_tol(u[0].score, 1.0, EPS);
  ck_assert_double_eq_tol(u[1].score, 1.0, EPS);
  hybrid_rec w[] = {V(1, 0.5), V(2, 0.5)}; /* no keyword query: ks all 0 */
  hybrid_fuse(&o, w, 2);
  ck_assert_double_eq_tol(w[0].score, 0.4, EPS);
  ck_assert_double_eq_tol(w[1].score, 0.4, EPS);
  hybrid_rec k[] = {K(1, 3.0)}; /* no vector query */
  hybrid_fuse(&o, k, 1);
  ck_assert_double_eq_tol(k[0].score, 0.6, EPS);
  hybrid_rec z[] = {K(1, 0.0), K(2, 0.0)}; /* keyword scores all 0 */
  hybrid_fuse(&o, z, 2);
  ck_assert_double_eq_tol(z[0].score, 0.0, EPS);
  hybrid_fuse(&o, z, 0); /* nothing: nothing to do */
}
END_TEST

/* ----------------------------------------------------------------- rrf */

START_TEST(test_rrf) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  o.rrf = 1;
  /* vector ranks: 3 (0.9), 1 (0.8), 2 (0.2); keyword ranks: 2 (5), 4 (3), 1 (1) */
  hybrid_rec u[] = {VK(1, 0.8, 1.0), VK(2, 0.2, 5.0), V(3, 0.9), K(4, 3.0)};
  u[0].score = u[1].score = 7; /* not carried over */
  hybrid_fuse(&o, u, 4);
  ck_assert_double_eq_tol(score_of(u, 4, 1), 1.0 / 62 + 1.0 / 63, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 2), 1.0 / 63 + 1.0 / 61, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 3), 1.0 / 61, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 4), 1.0 / 62, EPS);
  /* rrf_k 0: 1 / rank */
  o.rrf_k = 0;
  hybrid_fuse(&o, u, 4);
  ck_assert_double_eq_tol(score_of(u, 4, 1), 1.0 / 2 + 1.0 / 3, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 3), 1.0, EPS);
  hybrid_fuse(&o, u, 0);
}
END_TEST

/* Equal scores rank by id, whatever the input order; a keyword score of 0
** from a match still counts as a rank, a record without a match does not. */
START_TEST(test_rrf_ties) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  o.rrf = 1;
  o.rrf_k = 0;
  hybrid_rec u[] = {VK(9, 0.5, 0.0), V(3, 0.5), V(6, 0.5), K(7, 0.0)};
  u[0].id = 1; /* ids decide, not positions */
  u[1].id = 3;
  u[2].id = 2;
  u[3].id = 4;
  hybrid_fuse(&o, u, 4);
  ck_assert_double_eq_tol(score_of(u, 4, 1), 1.0 / 1 + 1.0 / 1, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 2), 1.0 / 2, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 3), 1.0 / 3, EPS);
  ck_assert_double_eq_tol(score_of(u, 4, 4), 1.0 / 2, EPS);
  /* every order of the input: the same scores */
  const int perm[][4] = {{3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}};
  for (int p = 0; p < 3; p++) {
    hybrid_rec w[4];
    for (int i = 0; i < 4; i++) w[i] = u[perm[p][i]];
    hybrid_fuse(&o, w, 4);
    for (int64_t id = 1; id <= 4; id++)
      ck_assert_double_eq_tol(score_of(w, 4, id), score_of(u, 4, id), EPS);
  }
}
END_TEST

/* --------------------------------------------------------------- rerank */

START_TEST(test_rerank) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  o.rerank = 1;
  o.now = 1000;
  o.half_life = 100;
  hybrid_rec u[] = {V(1, 0), V(2, 0), V(3, 0), V(4, 0)};
  u[0].score = 0.8;
  u[1].score = 0.4;
  u[2].score = 0.2;
  u[3].score = 0.0;
  hybrid_feat f[4] = {
      {.ts = 1000, .access_count = 0, .authority = 0.5},                                    /* new, unused */
      {.ts = 900, .access_count = 3, .last_access = 1000, .has_last_access = 1, .authority = 1.0},
      {.ts = 800, .access_count = 3, .last_access = 900, .has_last_access = 1, .authority = 0.0},
      {.ts = 2000, .access_count = 1, .authority = 0.3}, /* from the future; never a last access */
  };
  hybrid_rerank(&o, u, f, 4);
  double a1 = log1p(3.0), a2 = log1p(3.0) * 0.5, a3 = log1p(1.0), amax = a1;
  ck_assert_double_eq_tol(u[0].score, 1.0 * 1.0 + 0.2 * 1.0 + 0.1 * 0.5 + 0.1 * 0.0, EPS);
  ck_assert_double_eq_tol(u[1].score, 1.0 * 0.5 + 0.2 * 0.5 + 0.1 * 1.0 + 0.1 * a1 / amax, EPS);
  ck_assert_double_eq_tol(u[2].score, 1.0 * 0.25 + 0.2 * 0.25 + 0.1 * 0.0 + 0.1 * a2 / amax, EPS);
  ck_assert_double_eq_tol(u[3].score, 1.0 * 0.0 + 0.2 * 1.0 + 0.1 * 0.3 + 0.1 * a3 / amax, EPS);
  /* other weights */
  o.w_rel = 0;
  o.w_rec = 0;
  o.w_auth = 0;
  o.w_act = 2;
  hybrid_rec w[] = {V(1, 0), V(2, 0)};
  hybrid_rerank(&o, w, f + 1, 2);
  ck_assert_double_eq_tol(w[0].score, 2.0, EPS);
  ck_assert_double_eq_tol(w[1].score, 2.0 * 0.5, EPS);
  hybrid_rerank(&o, w, f, 0);
}
END_TEST

/* No positive score: relevance 0; no use at all: activation 0. */
START_TEST(test_rerank_zero) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  o.now = 0;
  hybrid_rec u[] = {V(1, 0), V(2, 0)};
  u[0].score = 0;
  u[1].score = -1;
  hybrid_feat f[2] = {{.ts = 0, .authority = 0.5}, {.ts = -30 * 86400, .authority = 0.5}};
  hybrid_rerank(&o, u, f, 2);
  ck_assert_double_eq_tol(u[0].score, 0.2 * 1.0 + 0.1 * 0.5, EPS);
  ck_assert_double_eq_tol(u[1].score, 0.2 * 0.5 + 0.1 * 0.5, EPS);
}
END_TEST

/* ------------------------------------------------------------------ top */

START_TEST(test_top) {
  hybrid_rec u[] = {V(1, 0), V(2, 0), V(3, 0), V(4, 0), V(5, 0)};
  const double s[] = {0.5, 0.9, 0.5, 0.1, 0.7};
  for (int i = 0; i < 5; i++) u[i].score = s[i];
  u[0].id = 30; /* ties by id: 3 (id 3) before 1 (id 30) */
  ck_assert_uint_eq(hybrid_top(u, 5, 3), 3);
  ck_assert_uint_eq(u[0].pos, 2);
  ck_assert_uint_eq(u[1].pos, 5);
  ck_assert_uint_eq(u[2].pos, 3);
  ck_assert_uint_eq(u[3].pos, 1);
  ck_assert_uint_eq(u[4].pos, 4);
  ck_assert_uint_eq(hybrid_top(u, 5, 5), 5);
  ck_assert_uint_eq(hybrid_top(u, 5, 100), 5);
  ck_assert_uint_eq(hybrid_top(u, 5, 0), 0);
  ck_assert_uint_eq(hybrid_top(u, 0, 10), 0);
}
END_TEST

/* The whole pipeline as search_text.c runs it, on a small example: the
** weighted default and rrf choose different winners. */
START_TEST(test_pipeline) {
  hybrid_opts o;
  hybrid_opts_default(&o);
  /* A: best vector match, no keyword; B: good on both; C: keyword only */
  hybrid_rec base[] = {V(10, 0.9), V(20, 0.8), K(20, 2.0), K(30, 3.0)};
  hybrid_rec u[4];
  memcpy(u, base, sizeof u);
  uint64_t n = hybrid_union(u, 4);
  ck_assert_uint_eq(n, 3);
  hybrid_rec *c = hybrid_find(u, n, 30); /* its exact vector score */
  c->vs = 0.1;
  c->has_v = 1;
  ck_assert_int_eq(hybrid_rejects(&o, u, n), 0);
  hybrid_fuse(&o, u, n);
  n = hybrid_top(u, n, 2);
  ck_assert_uint_eq(n, 2);
  /* A: 0.4; B: 0.4 x 7/8 + 0.6 x 2/3 = 0.75; C: 0.6 */
  ck_assert_int_eq(u[0].id, 20);
  ck_assert_double_eq_tol(u[0].score, 0.4 * 0.875 + 0.6 * 2.0 / 3.0, EPS);
  ck_assert_int_eq(u[1].id, 30);
  ck_assert_double_eq_tol(u[1].score, 0.6, EPS);
  /* rrf: A 1/61 + 0, B 1/62 + 1/62, C 1/63 + 1/61 */
  memcpy(u, base, sizeof u);
  n = hybrid_union(u, 4);
  c = hybrid_find(u, n, 30);
  c->vs = 0.1;
  c->has_v = 1;
  o.rrf = 1;
  hybrid_fuse(&o, u, n);
  n = hybrid_top(u, n, 3);
  ck_assert_int_eq(u[0].id, 30);
  ck_assert_int_eq(u[1].id, 20);
  ck_assert_int_eq(u[2].id, 10);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hybrid");
  TCase *tc = tcase_create("hybrid");
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_pools);
  tcase_add_test(tc, test_union);
  tcase_add_test(tc, test_reject);
  tcase_add_test(tc, test_weighted);
  tcase_add_test(tc, test_weighted_flat);
  tcase_add_test(tc, test_rrf);
  tcase_add_test(tc, test_rrf_ties);
  tcase_add_test(tc, test_rerank);
  tcase_add_test(tc, test_rerank_zero);
  tcase_add_test(tc, test_top);
  tcase_add_test(tc, test_pipeline);
  suite_add_tcase(s, tc);
  return t_run(s);
}
