/*
** test/fuzz/fuzz_hnsw.c - libFuzzer target for hnsw_load, the loader of
** the HNSW image a store keeps in its file (/index/hnsw_image).
**
** Each input is an image.  It is loaded twice, read in place (aligned) and
** copied (one byte off), which must agree.  An image that loads is then
** used as the store uses one: searched (with and without a filter, with
** the int8 first pass), rows deleted, the missing rows built in, saved;
** the saved image must load again and answer a search as the index did.
** Seeds (H5MEM_FUZZ_SEEDS): images saved by hnsw_save.
*/
#include "config.h"

#include "ann/hnsw.h"
#include "fuzz_ann.h"

static fuzz_rows rows;

/* the qi-th search of fuzz_searches: ef 16, 0, 100 */
static int search(const void *h, const float *q, int k, int qi, int (*filter)(void *, uint32_t),
                  ann_hit *out) {
  static const int efs[3] = {16, 0, 100};
  return hnsw_search(h, q, k, efs[qi], filter, NULL, out);
}

FUZZ_ANN_OPS(hnsw, search);

/* A few searches; the hits of the first (k 8, ef 16) into first. */
static int searches(const hnsw *h, ann_hit *first) {
  return fuzz_searches(&rows, h, search, first);
}

static void use(void *index, ann_metric m) {
  hnsw *h = index;
  ann_hit a[64];
  (void)searches(h, a);
  /* the int8 first pass over the rows in one array */
  if (hnsw_set_q8_rows(h, &rows.q8[0][0], FUZZ_MAXDIM, rows.scale, FUZZ_ROWS) == ANN_OK)
    (void)searches(h, a);
  FUZZ_ASSERT(hnsw_set_q8_rows(h, NULL, 0, NULL, 0) == ANN_OK);
  /* writes, as a checkpoint makes them: a delete, then the rows not in
  ** the index yet (up to a few past its count) built in; what is saved
  ** loads again, and is the same graph */
  fuzz_ann_rewrite(&hnsw_ops, &rows, h, m, NULL);
}

/* Images of a few small indexes: dims, metrics, element types, M, deleted
** rows, a single row, an empty index. */
static void seeds(const char *dir) {
  static const struct {
    int dim, metric, elem, M, n, del;
  } c[] = {{4, ANN_COSINE, ANN_F32, 4, 60, 0}, {8, ANN_L2, ANN_F16, 2, 40, 3},
           {3, ANN_DOT, ANN_F32, 3, 30, 2},   {16, ANN_COSINE, ANN_F16, 8, 100, 0},
           {2, ANN_L2, ANN_F32, 2, 1, 0},     {5, ANN_DOT, ANN_F16, 2, 0, 0}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    fuzz_rows_for(&rows, c[i].dim, (ann_elem)c[i].elem);
    hnsw_params p = {c[i].M, 16, 7, 1, 0};
    hnsw *h;
    FUZZ_ASSERT(hnsw_new(c[i].dim, (ann_metric)c[i].metric, (ann_elem)c[i].elem, &p, fuzz_row,
                         &rows, &h) == ANN_OK);
    FUZZ_ASSERT(hnsw_build(h, (uint32_t)c[i].n) == ANN_OK);
    fuzz_ann_seed(&hnsw_ops, dir, i, h, c[i].del);
  }
}

FUZZ_ANN_TARGET(hnsw, rows, use, seeds)
