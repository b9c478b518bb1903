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

/* What an index target does with its loader (the index as void *). */
typedef struct fuzz_ann_ops {
  /* the target's loader over the rows r; *out the index (or NULL) */
  int (*load)(const uint8_t *p, size_t n, int dim, ann_metric m, ann_elem e, fuzz_rows *r, void **out);
  void (*use)(void *index, ann_metric m); /* an index that loaded, used as the store uses it */
  void (*drop)(void *index);              /* frees it (NULL too) */
} fuzz_ann_ops;

/* One input image: loaded in place (aligned) and copied (one byte off),
** which must agree; what loads is used.  The rows are made for the dim
** and element type the image names. */
static inline int fuzz_ann_input(const uint8_t *data, size_t size, fuzz_rows *r, const fuzz_ann_ops *ops) {
  int dim;
  ann_metric m;
  ann_elem e;
  fuzz_image_kind(data, size, &dim, &m, &e);
  if (r->dim != dim || r->elem != e) fuzz_rows_make(r, dim, e);
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
    for (int k = 0; k < 2; k++) ops->use(x[k], m);
  for (int k = 0; k < 2; k++) {
    ops->drop(x[k]);
    free(base[k]);
  }
  return 0;
}

#endif
