/*
** test/fuzz/fuzz_ann.h - the rows the HNSW and IVF targets index: FUZZ_ROWS
** rows of up to FUZZ_MAXDIM elements, f32 and f16, a few of them without a
** vector (NaN first, as the store keeps them) and none past FUZZ_ROWS
** (the callback answers NULL), with int8 copies for the HNSW first pass.
** An image names its own dim, metric and element type; the targets load
** it with those (when they are in range) so that most inputs get past the
** header check.
*/
#ifndef H5MEM_FUZZ_ANN_H
#define H5MEM_FUZZ_ANN_H

#include <math.h>

#include "ann/ann.h"
#include "ann/q8.h"
#include "fuzz.h"
#include "k.h"

#define FUZZ_ROWS 512
#define FUZZ_MAXDIM 16

typedef struct fuzz_rows {
  int dim;
  ann_elem elem;
  float f32[FUZZ_ROWS][FUZZ_MAXDIM];
  uint16_t f16[FUZZ_ROWS][FUZZ_MAXDIM];
  int8_t q8[FUZZ_ROWS][FUZZ_MAXDIM];
  float scale[FUZZ_ROWS];
} fuzz_rows;

static inline int fuzz_row_missing(uint32_t i) { return i % 11 == 5; }

/* The rows of dim elements (a row's first dim values of the full rows). */
static inline void fuzz_rows_make(fuzz_rows *r, int dim, ann_elem elem) {
  r->dim = dim;
  r->elem = elem;
  for (uint32_t i = 0; i < FUZZ_ROWS; i++) {
    for (int j = 0; j < dim; j++) r->f32[i][j] = fuzz_val(i, (uint32_t)j);
    if (fuzz_row_missing(i)) r->f32[i][0] = NAN;
    k_get()->f32_to_f16(r->f32[i], r->f16[i], (size_t)dim);
    (void)ann_q8_encode(elem == ANN_F32 ? (const void *)r->f32[i] : (const void *)r->f16[i], elem,
                        dim, r->q8[i], &r->scale[i]);
  }
}

/* The rows made for dim and elem, unless they are already. */
static inline void fuzz_rows_for(fuzz_rows *r, int dim, ann_elem elem) {
  if (r->dim != dim || r->elem != elem) fuzz_rows_make(r, dim, elem);
}

/* Row i for the index (ann_vec_fn). */
static inline const void *fuzz_row(void *ctx, uint32_t i) {
  const fuzz_rows *r = ctx;
  if (i >= FUZZ_ROWS) return NULL;
  const void *p = r->elem == ANN_F32 ? (const void *)r->f32[i] : (const void *)r->f16[i];
  return ann_row_missing(r->elem, p) ? NULL : p;
}

/* A filter: every third row refused. */
static inline int fuzz_allow(void *ctx, uint32_t i) {
  (void)ctx;
  return i % 3 != 1;
}

/* Hits come sorted by distance (rows without a vector, infinitely far,
** last), each row once. */
static inline void fuzz_hits_check(const ann_hit *out, int n) {
  for (int i = 1; i < n; i++) {
    FUZZ_ASSERT(!(out[i].dist < out[i - 1].dist));
    for (int j = 0; j < i; j++) FUZZ_ASSERT(out[j].id != out[i].id);
  }
}

/* One search of a target's index: the k nearest rows to q with its qi-th
** setting (ef, nprobe, rerank), filter NULL or fuzz_allow. */
typedef int (*fuzz_search_fn)(const void *index, const float *q, int k, int qi,
                              int (*filter)(void *, uint32_t), ann_hit *out);

/* Three searches (k 8, 1, 40; queries rows 1, 8, 15 of r), each without
** and with the filter: at most k hits, sorted, each row once, and only
** allowed rows when filtered.  The hits of the first unfiltered one into
** first; returns their number. */
static inline int fuzz_searches(const fuzz_rows *r, const void *index, fuzz_search_fn search,
                                ann_hit *first) {
  static const int ks[3] = {8, 1, 40};
  ann_hit out[64];
  int nfirst = 0;
  for (int qi = 0; qi < 3; qi++) {
    const float *q = r->f32[qi * 7 + 1];
    int n = search(index, q, ks[qi], qi, NULL, out);
    FUZZ_ASSERT(n >= 0 && n <= ks[qi]);
    fuzz_hits_check(out, n);
    if (qi == 0) {
      memcpy(first, out, (size_t)n * sizeof *out);
      nfirst = n;
    }
    n = search(index, q, ks[qi], qi, fuzz_allow, out);
    FUZZ_ASSERT(n >= 0 && n <= ks[qi]);
    fuzz_hits_check(out, n);
    for (int i = 0; i < n; i++) FUZZ_ASSERT(fuzz_allow(NULL, out[i].id));
  }
  return nfirst;
}

/* The dim, metric and element type an image of the usual header layout
** (dim, metric, elem as uint32 at 16, 20, 24) names, or 4, cosine, f32
** when out of range. */
static inline void fuzz_image_kind(const uint8_t *p, size_t n, int *dim, ann_metric *m, ann_elem *e) {
  uint32_t d = 4, mt = 0, el = 4;
  if (n >= 28) {
    memcpy(&d, p + 16, 4);
    memcpy(&mt, p + 20, 4);
    memcpy(&el, p + 24, 4);
  }
  *dim = d >= 1 && d <= FUZZ_MAXDIM ? (int)d : 4;
  *m = mt <= 2 ? (ann_metric)mt : ANN_COSINE;
  *e = el == 2 ? ANN_F16 : ANN_F32;
}

/* The input copied to an 8-byte boundary (misalign 0) or one byte past
** it (1): the loaders read aligned images in place and copy others. */
static inline uint8_t *fuzz_place(const uint8_t *data, size_t size, int misalign, uint8_t **base) {
  *base = malloc(size + 8);
  if (!*base) return NULL;
  uint8_t *p = *base + (misalign ? 1 : 0);
  if (size) memcpy(p, data, size);
  return p;
}

/* An index type (hnsw, ivf) through the calls the targets make alike;
** FUZZ_ANN_OPS(P, search) makes P_ops from P_load, P_free, ... (the
** index as void *). */
typedef struct fuzz_ann_ops {
  /* P_load over the rows r; *out the index (or NULL) */
  int (*load)(const uint8_t *p, size_t n, int dim, ann_metric m, ann_elem e, fuzz_rows *r, void **out);
  void (*drop)(void *index); /* P_free (NULL too) */
  uint32_t (*count)(const void *index);
  int (*del)(void *index, uint32_t i);
  int (*build)(void *index, uint32_t n);
  int (*save)(const void *index, uint8_t **img, size_t *len);
  const char *(*errmsg)(const void *index);
  fuzz_search_fn search; /* the target's settings of fuzz_searches */
} fuzz_ann_ops;

#define FUZZ_ANN_OPS(P, search_fn)                                                           \
  static int fuzz_load_##P(const uint8_t *p, size_t n, int dim, ann_metric m, ann_elem e,     \
                           fuzz_rows *r, void **out) {                                       \
    P *x = NULL;                                                                             \
    int rc = P##_load(p, n, dim, m, e, fuzz_row, r, &x);                                     \
    *out = x;                                                                                \
    return rc;                                                                               \
  }                                                                                          \
  static void fuzz_drop_##P(void *x) { P##_free(x); }                                        \
  static uint32_t fuzz_count_##P(const void *x) { return P##_count(x); }                     \
  static int fuzz_del_##P(void *x, uint32_t i) { return P##_delete(x, i); }                  \
  static int fuzz_build_##P(void *x, uint32_t n) { return P##_build(x, n); }                 \
  static int fuzz_save_##P(const void *x, uint8_t **img, size_t *len) {                      \
    return P##_save(x, img, len);                                                            \
  }                                                                                          \
  static const char *fuzz_errmsg_##P(const void *x) { return P##_errmsg(x); }                \
  static const fuzz_ann_ops P##_ops = {fuzz_load_##P,  fuzz_drop_##P,  fuzz_count_##P,       \
                                       fuzz_del_##P,   fuzz_build_##P, fuzz_save_##P,        \
                                       fuzz_errmsg_##P, search_fn}

/* Writes, as a checkpoint makes them: a delete, then the rows not in the
** index yet (up to a few past its count) built in.  What is then saved
** loads again (with the metric m and the rows r), holds as many rows and
** answers the first of fuzz_searches as the index did.  The loaded copy
** goes to check(copy, index) first when check is not NULL. */
static inline void fuzz_ann_rewrite(const fuzz_ann_ops *o, fuzz_rows *r, void *x, ann_metric m,
                                    int (*check)(const void *copy, const void *x)) {
  ann_hit a[64], b[64];
  uint32_t n = o->count(x);
  if (n) (void)o->del(x, n / 2);
  if (n < FUZZ_ROWS - 4 && o->build(x, n + 4) != ANN_OK) return;
  int na = fuzz_searches(r, x, o->search, a);
  uint8_t *img;
  size_t len;
  FUZZ_ASSERT(o->save(x, &img, &len) == ANN_OK);
  void *x2;
  int rc = o->load(img, len, r->dim, m, r->elem, r, &x2);
  if (rc != ANN_OK) fprintf(stderr, "the saved image does not load: %s\n", o->errmsg(x2));
  FUZZ_ASSERT(rc == ANN_OK && o->count(x2) == o->count(x) && (!check || check(x2, x)));
  FUZZ_ASSERT(fuzz_searches(r, x2, o->search, b) == na && !memcmp(a, b, (size_t)na * sizeof *a));
  o->drop(x2);
  free(img);
}

/* Seed number i: index x (over r) with rows 0, 7, 14, ... (ndel of them)
** deleted, saved into dir, freed. */
static inline void fuzz_ann_seed(const fuzz_ann_ops *o, const char *dir, size_t i, void *x,
                                 int ndel) {
  for (int d = 0; d < ndel; d++) FUZZ_ASSERT(o->del(x, (uint32_t)(d * 7)) == ANN_OK);
  uint8_t *img;
  size_t len;
  FUZZ_ASSERT(o->save(x, &img, &len) == ANN_OK);
  fuzz_seed_image(dir, i, img, len);
  o->drop(x);
}

/* One input image: loaded in place (aligned) and copied (one byte off),
** which must agree; what loads goes to use(index, metric).  The rows are
** made for the dim and element type the image names. */
static inline int fuzz_ann_input(const uint8_t *data, size_t size, fuzz_rows *r,
                                 const fuzz_ann_ops *ops, void (*use)(void *index, ann_metric m)) {
  int dim;
  ann_metric m;
  ann_elem e;
  fuzz_image_kind(data, size, &dim, &m, &e);
  fuzz_rows_for(r, dim, e);
  uint8_t *base[2];
  void *x[2] = {NULL, NULL};
  int rc[2];
  for (int k = 0; k < 2; k++) {
    const uint8_t *p = fuzz_place(data, size, k, &base[k]);
    if (!p) abort();
    rc[k] = ops->load(p, size, dim, m, e, r, &x[k]);
  }
  FUZZ_ASSERT(rc[0] == rc[1]);
  if (rc[0] == ANN_OK)
    for (int k = 0; k < 2; k++) use(x[k], m);
  for (int k = 0; k < 2; k++) {
    ops->drop(x[k]);
    free(base[k]);
  }
  return 0;
}

/* The entry points of the target for index type P (after FUZZ_ANN_OPS):
** LLVMFuzzerInitialize writes seeds(dir) when H5MEM_FUZZ_SEEDS names a
** directory; each input goes through fuzz_ann_input over rows, an index
** that loads to use(index, metric). */
#define FUZZ_ANN_TARGET(P, rows, use, seeds)                                                   \
  int LLVMFuzzerInitialize(int *argc, char ***argv) {                                        \
    (void)argc;                                                                              \
    (void)argv;                                                                              \
    if (fuzz_seed_dir()) seeds(fuzz_seed_dir());                                             \
    return 0;                                                                                \
  }                                                                                          \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {                             \
    return fuzz_ann_input(data, size, &rows, &P##_ops, use);                                 \
  }

#endif
