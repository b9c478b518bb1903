/*
** bench/bench_hnsw.c - lib/ann/hnsw: build time (1 and N threads), search
** latency and recall@10 against brute force at several ef, exact and with
** the int8 first pass (q8: int8 walk, pool re-scored exactly).
**
**   bench_hnsw [n [dim [threads [f16|f32 [l2|cosine|dot]]]]]
**                                  defaults: 100000 128 ncpu f32 l2
**
** Data: clustered (256 centres in [-1,1]^dim, gaussian-ish noise);
** queries are further points of the same distribution.
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/hnsw.h"
#include "ann/q8.h"
#include "k.h"
#include "util/pool.h"

#define NQ 200
#define K 10

typedef struct rows {
  int dim;
  ann_elem elem;
  float *f;
  uint16_t *h;
  int8_t *q; /* int8 copies of the rows (f or h, as elem) */
  float *qs;
} rows;

static const void *row(void *ctx, uint32_t i) {
  rows *r = ctx;
  return r->elem == ANN_F32 ? (const void *)(r->f + (size_t)i * r->dim)
                            : (const void *)(r->h + (size_t)i * r->dim);
}

static const int8_t *row_q8(void *ctx, uint32_t i, float *scale) {
  rows *r = ctx;
  *scale = r->qs[i];
  return r->q + (size_t)i * r->dim;
}

static uint64_t rng = 0x1234567;
static double unit(void) { /* uniform [-1, 1) */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int hit_cmp(const void *pa, const void *pb) {
  const ann_hit *a = pa, *b = pb;
  if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

/* recall@K of searches at ef against truth, and their mean latency (us) */
static double run(const hnsw *h, const float *qs, int dim, int ef, const ann_hit *truth,
                  double *recall) {
  ann_hit got[K];
  int hits = 0;
  double t0 = now();
  for (int rep = 0; rep < 5; rep++)
    for (int q = 0; q < NQ; q++) {
      int ng = hnsw_search(h, qs + (size_t)q * dim, K, ef, NULL, NULL, got);
      if (rep) continue;
      for (int i = 0; i < ng; i++)
        for (int j = 0; j < K; j++) hits += got[i].id == truth[(size_t)q * K + j].id;
    }
  *recall = (double)hits / (NQ * K);
  return (now() - t0) * 1e6 / (5 * NQ);
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
  int dim = argc > 2 ? atoi(argv[2]) : 128;
  int threads = argc > 3 ? atoi(argv[3]) : util_ncpu();
  ann_elem elem = argc > 4 && strcmp(argv[4], "f16") == 0 ? ANN_F16 : ANN_F32;
  const char *mn = argc > 5 ? argv[5] : "l2";
  ann_metric metric = strcmp(mn, "cosine") == 0 ? ANN_COSINE
                      : strcmp(mn, "dot") == 0  ? ANN_DOT
                                                : ANN_L2;
  const k_ops *k = k_get();
  int nc = 256;
  size_t tot = (size_t)n + NQ;
  rows r = {dim, elem, malloc(tot * dim * sizeof(float)), malloc(tot * dim * 2),
            malloc((size_t)n * dim), malloc((size_t)n * sizeof(float))};
  float *cent = malloc((size_t)nc * dim * sizeof *cent);
  if (!r.f || !r.h || !r.q || !r.qs || !cent) return 1;
  for (int i = 0; i < nc * dim; i++) cent[i] = (float)unit();
  for (size_t i = 0; i < tot; i++) {
    int c = (int)((unit() + 1) * 0.5 * nc) % nc;
    for (int j = 0; j < dim; j++)
      r.f[i * dim + j] = cent[c * dim + j] + 0.25f * (float)(unit() + unit() + unit());
  }
  k->f32_to_f16(r.f, r.h, tot * dim);
  const float *qs = r.f + (size_t)n * dim;
  double tq = now();
  ann_q8_encode_n(elem == ANN_F32 ? (const void *)r.f : (const void *)r.h, elem, dim, n,
                  r.q, r.qs);
  tq = now() - tq;

  /* exact answers */
  void (*bf32)(const float *, const float *, size_t, size_t, float *) =
      metric == ANN_L2 ? k->l2sq_f32_batch : metric == ANN_DOT ? k->dot_f32_batch
                                                               : k->cos_f32_batch;
  void (*bf16)(const float *, const uint16_t *, size_t, size_t, float *) =
      metric == ANN_L2 ? k->l2sq_f16_batch : metric == ANN_DOT ? k->dot_f16_batch
                                                               : k->cos_f16_batch;
  ann_hit *truth = malloc((size_t)NQ * K * sizeof *truth), *all = malloc((size_t)n * sizeof *all);
  float *d = malloc((size_t)n * sizeof *d);
  double tb = now();
  for (int q = 0; q < NQ; q++) {
    if (elem == ANN_F32)
      bf32(qs + (size_t)q * dim, r.f, n, (size_t)dim, d);
    else
      bf16(qs + (size_t)q * dim, r.h, n, (size_t)dim, d);
    for (uint32_t i = 0; i < n; i++) all[i] = (ann_hit){i, metric == ANN_DOT ? -d[i] : d[i]};
    qsort(all, n, sizeof *all, hit_cmp);
    memcpy(truth + (size_t)q * K, all, K * sizeof *truth);
  }
  double brute_us = (now() - tb) * 1e6 / NQ;
  printf("hnsw bench: n=%u dim=%d %s %s, M=16 efc=64, kernels %s\n", n, dim,
         elem == ANN_F32 ? "f32" : "f16", mn, k->name);
  printf("brute force: %.0f us/query (batch kernel + sort)\n", brute_us);
  printf("int8 copies: %.3f s to encode (%.0f rows/s), %d bytes/row + 4 (scale)\n", tq,
         n / tq, dim);

  hnsw *h = NULL;
  int tlist[2] = {1, threads};
  for (int t = 0; t < (threads > 1 ? 2 : 1); t++) {
    hnsw_free(h);
    hnsw_params p = {16, 64, 0, tlist[t], 0};
    if (hnsw_new(dim, metric, elem, &p, row, &r, &h) != ANN_OK) return 1;
    double t0 = now();
    if (hnsw_build(h, n) != ANN_OK) {
      fprintf(stderr, "%s\n", hnsw_errmsg(h));
      return 1;
    }
    double s = now() - t0;
    printf("build, %d thread%s: %.2f s (%.0f rows/s)\n", tlist[t], tlist[t] > 1 ? "s" : "",
           s, n / s);
  }
  uint8_t *img;
  size_t len;
  if (hnsw_save(h, &img, &len) == ANN_OK) {
    printf("image: %.1f MB (%.1f bytes/row)\n", len / 1e6, (double)len / n);
    free(img);
  }
  printf("         exact: recall@10  us/query  | q8 + re-scoring: recall@10  us/query\n");
  static const int efs[] = {10, 16, 32, 64, 128, 200, 400};
  for (size_t e = 0; e < sizeof efs / sizeof efs[0]; e++) {
    double rf, rq;
    hnsw_set_q8(h, NULL, NULL);
    double uf = run(h, qs, dim, efs[e], truth, &rf);
    hnsw_set_q8(h, row_q8, &r);
    double uq = run(h, qs, dim, efs[e], truth, &rq);
    printf("ef=%-4d        %.4f  %8.1f  |                   %.4f  %8.1f  (%.2fx)\n",
           efs[e], rf, uf, rq, uq, uf / uq);
  }
  printf("(brute force %.0f us/query)\n", brute_us);
  hnsw_free(h);
  free(truth);
  free(all);
  free(d);
  free(cent);
  free(r.f);
  free(r.h);
  free(r.q);
  free(r.qs);
  return 0;
}
