/*
** test/fuzz/fuzz_ivf.c - libFuzzer target for ivf_load, the loader of the
** IVF image a store keeps in its file (/index/ivf_image).
**
** Each input is an image.  It is loaded twice, read in place (aligned) and
** copied (one byte off), which must agree.  An image that loads is then
** used as the store uses one: searched (nprobe 1 and all lists, with and
** without a filter, PQ re-ranking), a row deleted, the missing rows added,
** saved; the saved image must load again and answer a search as the index
** did.  Seeds (H5MEM_FUZZ_SEEDS): images saved by ivf_save.
*/
#include "config.h"

#include "ann/ivf.h"
#include "fuzz_ann.h"

static fuzz_rows rows;

/* the qi-th search of fuzz_searches: nprobe 1, all, 3; rerank 0, 5, 100 */
static int search(const void *v, const float *q, int k, int qi, int (*filter)(void *, uint32_t),
                  ann_hit *out) {
  static const int probes[3] = {1, 1 << 30, 3}, reranks[3] = {0, 5, 100};
  return ivf_search(v, q, k, probes[qi], reranks[qi], filter, NULL, out);
}

FUZZ_ANN_OPS(ivf, search);

/* a reloaded copy has as many lists */
static int same_nlist(const void *copy, const void *v) { return ivf_nlist(copy) == ivf_nlist(v); }

static void use(void *index, ann_metric m) {
  ivf *v = index;
  ann_hit a[64];
  (void)fuzz_searches(&rows, v, search, a);
  /* writes, as a checkpoint makes them: a delete, then rows not in the
  ** index yet (up to a few past its count) added; what is saved loads
  ** again, and answers as the index did */
  fuzz_ann_rewrite(&ivf_ops, &rows, v, m, same_nlist);
}

/* Images of a few small indexes: flat and PQ, the three metrics, f32 and
** f16, deleted rows, one list, an untrained one. */
static void seeds(const char *dir) {
  static const struct {
    int dim, metric, elem, nlist, pq_m, n, del;
  } c[] = {{4, ANN_COSINE, ANN_F32, 4, 0, 80, 0}, {8, ANN_L2, ANN_F16, 3, 4, 300, 3},
           {3, ANN_DOT, ANN_F32, 5, 0, 60, 2},    {6, ANN_COSINE, ANN_F16, 2, 3, 40, 1},
           {2, ANN_L2, ANN_F32, 1, 0, 5, 0},      {4, ANN_DOT, ANN_F32, 2, 2, 30, 0},
           {5, ANN_L2, ANN_F32, 0, 0, 0, 0}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    fuzz_rows_for(&rows, c[i].dim, (ann_elem)c[i].elem);
    ivf_params p;
    memset(&p, 0, sizeof p);
    p.nlist = (uint32_t)c[i].nlist;
    p.pq_m = c[i].pq_m;
    p.train_iters = 5;
    p.seed = 7;
    ivf *v;
    FUZZ_ASSERT(ivf_new(c[i].dim, (ann_metric)c[i].metric, (ann_elem)c[i].elem, &p, fuzz_row,
                        &rows, &v) == ANN_OK);
    if (c[i].n) FUZZ_ASSERT(ivf_build(v, (uint32_t)c[i].n) == ANN_OK);
    fuzz_ann_seed(&ivf_ops, dir, i, v, c[i].del);
  }
}

FUZZ_ANN_TARGET(ivf, rows, use, seeds)
