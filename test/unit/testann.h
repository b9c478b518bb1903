/*
** test/unit/testann.h - what the vector index tests (test_hnsw.c, test_ivf.c)
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

/* The usual fixture: n rows of make_data and nq queries of make_queries,
** both from seed; t_teardown frees them. */
static inline float *t_setup(ds *d, uint32_t n, int dim, ann_elem e, uint64_t seed, int nq) {
  make_data(d, n, dim, e, seed);
  return make_queries(dim, seed, nq);
}

static inline void t_teardown(ds *d, float *qs) {
  free(qs);
  free_data(d);
}

/* The test program's suite and its one case, named name (300 s timeout),
** after a line with the seed and the kernels. */
static inline Suite *t_suite(const char *name, TCase **tc) {
  printf("test_%s: seed %llu, kernels %s\n", name, (unsigned long long)t_seed(), k_get()->name);
  Suite *s = suite_create(name);
  *tc = tcase_create(name);
  tcase_set_timeout(*tc, 300);
  return s;
}

/* An index kind (hnsw, ivf) through the calls the two have alike, for the
** helpers below; T_ANN_OPS(P) makes P_t from P_load, P_save, ... */
typedef struct t_ann {
  const char *name;
  /* P_new with the default parameters (NULL) */
  int (*make)(int dim, ann_metric m, ann_elem e, ann_vec_fn vec, void *ctx, void **out);
  int (*load)(const void *img, size_t len, int dim, ann_metric m, ann_elem e, ann_vec_fn vec,
              void *ctx, void **out);
  int (*save)(const void *x, uint8_t **img, size_t *len);
  const char *(*errmsg)(const void *x);
  void (*free)(void *x);
  int (*add)(void *x, uint32_t i);
  int (*build)(void *x, uint32_t n);
  int (*del)(void *x, uint32_t i);
  uint32_t (*count)(const void *x);
} t_ann;

#define T_ANN_OPS(P)                                                                         \
  static int P##_t_make(int dim, ann_metric m, ann_elem e, ann_vec_fn vec, void *ctx,        \
                        void **out) {                                                        \
    P *x = NULL;                                                                             \
    int rc = P##_new(dim, m, e, NULL, vec, ctx, &x);                                         \
    *out = x;                                                                                \
    return rc;                                                                               \
  }                                                                                          \
  static int P##_t_load(const void *img, size_t len, int dim, ann_metric m, ann_elem e,      \
                        ann_vec_fn vec, void *ctx, void **out) {                             \
    P *x = NULL;                                                                             \
    int rc = P##_load(img, len, dim, m, e, vec, ctx, &x);                                    \
    *out = x;                                                                                \
    return rc;                                                                               \
  }                                                                                          \
  static int P##_t_save(const void *x, uint8_t **img, size_t *len) {                         \
    return P##_save(x, img, len);                                                            \
  }                                                                                          \
  static const char *P##_t_errmsg(const void *x) { return P##_errmsg(x); }                   \
  static void P##_t_free(void *x) { P##_free(x); }                                           \
  static int P##_t_add(void *x, uint32_t i) { return P##_add(x, i); }                        \
  static int P##_t_build(void *x, uint32_t n) { return P##_build(x, n); }                    \
  static int P##_t_del(void *x, uint32_t i) { return P##_delete(x, i); }                     \
  static uint32_t P##_t_count(const void *x) { return P##_count(x); }                        \
  static const t_ann P##_t = {#P,          P##_t_make,   P##_t_load, P##_t_save, \
                              P##_t_errmsg, P##_t_free, P##_t_add,  P##_t_build, \
                              P##_t_del,    P##_t_count}

/* After P_new gave x and rc: it succeeded, P_build(x, n) does, and the
** index then holds n rows. */
static inline void t_built(const t_ann *o, void *x, int rc, uint32_t n) {
  T_CHECK(rc == ANN_OK, "%s_new: %s", o->name, o->errmsg(x));
  rc = o->build(x, n);
  T_CHECK(rc == ANN_OK, "%s_build: %s", o->name, o->errmsg(x));
  ck_assert_uint_eq(o->count(x), n);
}

/* x saved; the image malloc'd */
static inline uint8_t *t_save(const t_ann *o, const void *x, size_t *len) {
  uint8_t *img;
  ck_assert_int_eq(o->save(x, &img, len), ANN_OK);
  return img;
}

/* img (len bytes) loaded in place, over d's rows with dim, m, e */
static inline void *t_load(const t_ann *o, const uint8_t *img, size_t len, ds *d, int dim,
                           ann_metric m, ann_elem e) {
  void *g = NULL;
  int rc = o->load(img, len, dim, m, e, row, d, &g);
  T_CHECK(rc == ANN_OK, "load: %s", o->errmsg(g));
  return g;
}

/* g (loaded from img) saved: the same bytes */
static inline void t_same_image(const t_ann *o, const void *g, const uint8_t *img, size_t len) {
  size_t len2;
  uint8_t *img2 = t_save(o, g, &len2);
  ck_assert_uint_eq(len, len2);
  T_CHECK(memcmp(img, img2, len) == 0, "image changed by a round trip");
  free(img2);
}

/* img loaded from one byte past an aligned buffer (so copied, not read in
** place); *buf the buffer, to free after the index */
static inline void *t_load_unaligned(const t_ann *o, const uint8_t *img, size_t len, ds *d,
                                     int dim, ann_metric m, ann_elem e, uint8_t **buf) {
  *buf = malloc(len + 1);
  memcpy(*buf + 1, img, len);
  void *u = NULL;
  int rc = o->load(*buf + 1, len, dim, m, e, row, d, &u);
  T_CHECK(rc == ANN_OK, "load unaligned: %s", o->errmsg(u));
  return u;
}

/* img refused when loaded with dim, m, e (not its own): ANN_ECORRUPT, and
** with name_dim a message that names the dim */
static inline void t_load_refused(const t_ann *o, const uint8_t *img, size_t len, ds *d, int dim,
                                  ann_metric m, ann_elem e, int name_dim) {
  void *u = NULL;
  int rc = o->load(img, len, dim, m, e, row, d, &u);
  ck_assert_int_eq(rc, ANN_ECORRUPT);
  if (name_dim) T_CHECK(strstr(o->errmsg(u), "dim") != NULL, "message: %s", o->errmsg(u));
  o->free(u);
}

/* g (loaded from img, whose copy is keep) and h (the index saved in img)
** grow alike: row at added to both (twice to g: refused), then rows up
** to n; the image is never written and g holds n rows */
static inline void t_grow_alike(const t_ann *o, void *g, void *h, uint32_t at, uint32_t n,
                                const uint8_t *keep, const uint8_t *img, size_t len) {
  ck_assert_int_eq(o->add(g, at), ANN_OK);
  ck_assert_int_eq(o->add(g, at), ANN_EINVAL);
  ck_assert_int_eq(o->build(g, n), ANN_OK);
  ck_assert_int_eq(o->add(h, at), ANN_OK);
  ck_assert_int_eq(o->build(h, n), ANN_OK);
  T_CHECK(memcmp(keep, img, len) == 0, "the image was written to");
  ck_assert_uint_eq(o->count(g), n);
}

/* Rows [0, n) deleted one in three (drawn with seed) from the index x;
** returns the n flags, 1 for a deleted row (malloc'd). */
static inline uint8_t *t_delete_third(const t_ann *o, void *x, uint32_t n, uint64_t seed) {
  uint8_t *del = calloc(n, 1);
  t_rng r = {seed};
  for (uint32_t i = 0; i < n; i++)
    if (t_next(&r) % 3 == 0) {
      del[i] = 1;
      ck_assert_int_eq(o->del(x, i), ANN_OK);
    }
  return del;
}

/* P_new refuses dim 0, an unknown metric and an unknown element type
** (rows d, dim elements where dim is not the one refused) */
static inline void t_bad_args(const t_ann *o, int dim, ds *d) {
  void *x;
  ck_assert_int_eq(o->make(0, ANN_L2, ANN_F32, row, d, &x), ANN_EINVAL);
  o->free(x);
  ck_assert_int_eq(o->make(dim, (ann_metric)7, ANN_F32, row, d, &x), ANN_EINVAL);
  o->free(x);
  ck_assert_int_eq(o->make(dim, ANN_L2, (ann_elem)3, row, d, &x), ANN_EINVAL);
  o->free(x);
}

typedef void (*t_use_fn)(void *x, ds *d, const float *q);

/* Load a (possibly damaged) image of kind o, over d's rows as dim, L2,
** f32; if it is accepted, use(index, d, q) uses it hard, else the code is
** ANN_ECORRUPT with a message.  Returns the load's code. */
static inline int t_try_image(const t_ann *o, const uint8_t *img, size_t len, ds *d,
                              const float *q, t_use_fn use) {
  void *g = NULL;
  int rc = o->load(img, len, d->dim, ANN_L2, ANN_F32, row, d, &g);
  if (rc == ANN_OK) {
    use(g, d, q);
  } else {
    T_CHECK(rc == ANN_ECORRUPT, "rc %d", rc);
    T_CHECK(o->errmsg(g)[0] != 0, "no message");
  }
  o->free(g);
  return rc;
}

/* The image img of kind o accepted by t_try_image, and every truncation
** of it refused: each length below 200 (the header), then one length in
** every len / spread. */
static inline void t_truncations(const t_ann *o, const uint8_t *img, size_t len, ds *d,
                                 const float *q, t_use_fn use, size_t spread) {
  ck_assert_int_eq(t_try_image(o, img, len, d, q, use), ANN_OK);
  uint8_t *b = malloc(len);
  for (size_t l = 0; l < len; l += l < 200 ? 1 : 1 + len / spread) {
    memcpy(b, img, l);
    T_CHECK(t_try_image(o, b, l, d, q, use) == ANN_ECORRUPT, "truncated to %zu accepted", l);
  }
  free(b);
}

#endif
