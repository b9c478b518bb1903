/*
** test/testann.h - what the vector index tests (test_hnsw.c, test_ivf.c)
** share: clustered rows and queries from the seeded PRNG of testutil.h,
** the row callback, the indexes' distance computed with the same kernels,
** and the exact top k to compare with.
*/
#ifndef H5MEM_TESTANN_H
#define H5MEM_TESTANN_H

#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/ann.h"
#include "ann/q8.h"
#include "k.h"
#include "testutil.h"
#include "util/pool.h"

#define T_NQ 100 /* queries make_queries returns */

/* rows for the callbacks: f32, their f16 copies, and the int8 copies of
** the rows of type elem (rows >= nq8 have none); the callbacks count their
** calls */
typedef struct ds {
  int dim;
  uint32_t n;
  ann_elem elem;
  float *f;
  uint16_t *h;
  int8_t *q;
  float *qs;
  uint32_t nq8;
  atomic_long vcalls, qcalls;
} ds;

static inline const void *row(void *ctx, uint32_t i) {
  ds *d = ctx;
  atomic_fetch_add_explicit(&d->vcalls, 1, memory_order_relaxed);
  if (i >= d->n) return NULL;
  if (d->elem == ANN_F32) return d->f + (size_t)i * d->dim;
  return d->h + (size_t)i * d->dim;
}

static inline const int8_t *row_q8(void *ctx, uint32_t i, float *scale) {
  ds *d = ctx;
  atomic_fetch_add_explicit(&d->qcalls, 1, memory_order_relaxed);
  if (i >= d->nq8) return NULL;
  *scale = d->qs[i];
  return d->q + (size_t)i * d->dim;
}

/* n clustered rows: nc centres uniform in [-1,1]^dim, each coordinate plus
** noise x (sum of 3 uniforms), a bell-shaped noise of sd `noise` */
static inline void make_data_nc(ds *d, uint32_t n, int dim, ann_elem elem, uint64_t seed,
                                int nc, float noise) {
  t_rng r = {seed};
  float *cent = malloc((size_t)nc * dim * sizeof *cent);
  for (int i = 0; i < nc * dim; i++) cent[i] = t_unit(&r);
  d->dim = dim;
  d->n = n;
  d->elem = elem;
  d->f = malloc((size_t)n * dim * sizeof *d->f);
  d->h = malloc((size_t)n * dim * sizeof *d->h);
  for (uint32_t i = 0; i < n; i++) {
    int c = (int)(t_next(&r) % (uint64_t)nc);
    for (int j = 0; j < dim; j++)
      d->f[(size_t)i * dim + j] = cent[c * dim + j] + noise * (t_unit(&r) + t_unit(&r) + t_unit(&r));
  }
  k_get()->f32_to_f16(d->f, d->h, (size_t)n * dim);
  free(cent);
  d->q = malloc((size_t)n * dim);
  d->qs = malloc((size_t)n * sizeof *d->qs);
  d->nq8 = n;
  if (ann_q8_encode_n(elem == ANN_F32 ? (const void *)d->f : (const void *)d->h, elem, dim, n, d->q,
                      d->qs) != 0)
    abort(); /* (the rows are finite) */
  atomic_init(&d->vcalls, 0);
  atomic_init(&d->qcalls, 0);
}

/* The usual rows: 32 centres, noise 0.35 (clusters that touch, as topics
** do; with uniform +-0.35 noise the clusters are islands and, for some
** seeds, one query in a few hundred ends in the neighbouring island: 0.989
** at ef=200 in 1 of 16 seeds) */
static inline void make_data(ds *d, uint32_t n, int dim, ann_elem elem, uint64_t seed) {
  make_data_nc(d, n, dim, elem, seed, 32, 0.35f);
}

static inline void free_data(ds *d) {
  free(d->f);
  free(d->h);
  free(d->q);
  free(d->qs);
}

/* the index's distance, computed here with the same kernels */
static inline float tdist(const ds *d, ann_metric m, const float *q, uint32_t i) {
  const k_ops *k = k_get();
  size_t dim = (size_t)d->dim;
  if (d->elem == ANN_F32) {
    const float *r = d->f + i * dim;
    return m == ANN_L2 ? k->l2sq_f32(q, r, dim)
           : m == ANN_DOT ? -k->dot_f32(q, r, dim)
                          : k->cos_f32(q, r, dim);
  }
  const uint16_t *r = d->h + i * dim;
  return m == ANN_L2 ? k->l2sq_f16(q, r, dim)
         : m == ANN_DOT ? -k->dot_f16(q, r, dim)
                        : k->cos_f16(q, r, dim);
}

static inline int hit_cmp(const void *pa, const void *pb) {
  const ann_hit *a = pa, *b = pb;
  if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

typedef int (*filt_fn)(void *, uint32_t);

/* exact top k among rows < n that are allowed and not in del[] */
static inline int brute(const ds *d, ann_metric m, uint32_t n, const float *q, int k,
                        filt_fn filter, void *fctx, const uint8_t *del, ann_hit *out) {
  ann_hit *all = malloc((size_t)n * sizeof *all);
  uint32_t na = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (del && del[i]) continue;
    if (filter && !filter(fctx, i)) continue;
    all[na].id = i;
    all[na++].dist = tdist(d, m, q, i);
  }
  qsort(all, na, sizeof *all, hit_cmp);
  int r = (int)na < k ? (int)na : k;
  memcpy(out, all, (size_t)r * sizeof *out);
  free(all);
  return r;
}

/* nq queries from the same distribution as the rows of seed (the same
** centres), but not rows themselves */
static inline float *make_queries(int dim, uint64_t seed, int nq) {
  ds qd;
  make_data(&qd, 1 << 16, dim, ANN_F32, seed);
  float *q = malloc((size_t)nq * dim * sizeof *q);
  memcpy(q, qd.f + ((size_t)(1 << 16) - nq) * dim, (size_t)nq * dim * sizeof *q);
  free_data(&qd);
  return q;
}

static inline const char *mname(ann_metric m) {
  return m == ANN_L2 ? "l2" : m == ANN_DOT ? "dot" : "cosine";
}

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* a 32-bit hash, for filters that keep a pseudo-random share of the rows */
static inline uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

/* Searches running at once give what they give one after another: search
** (the top 10 of query q into out; returns the hit count) over nq queries,
** in order, then on 4 threads. */
typedef int (*t_search10_fn)(const void *index, const float *q, ann_hit *out);

typedef struct t_conc {
  const void *index;
  t_search10_fn search;
  const float *qs;
  int dim;
  ann_hit *res; /* nq x 10 */
} t_conc;

static inline int t_conc_one(void *ctx, size_t i) {
  t_conc *c = ctx;
  return c->search(c->index, c->qs + i * (size_t)c->dim, c->res + i * 10) == 10 ? 0 : 1;
}

static inline void t_concurrent_same(const void *index, t_search10_fn search, const float *qs,
                                     int dim, int nq) {
  ann_hit *seq = calloc((size_t)nq * 10, sizeof *seq), *par = calloc((size_t)nq * 10, sizeof *par);
  t_conc c = {index, search, qs, dim, seq};
  for (int i = 0; i < nq; i++) ck_assert_int_eq(t_conc_one(&c, (size_t)i), 0);
  c.res = par;
  ck_assert_int_eq(util_parallel_for(4, (size_t)nq, t_conc_one, &c), 0);
  T_CHECK(memcmp(seq, par, (size_t)nq * 10 * sizeof *seq) == 0, "concurrent results differ");
  free(seq);
  free(par);
}

#endif
