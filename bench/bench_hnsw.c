/*
** bench/bench_hnsw.c - lib/ann/hnsw: build time (1 and N threads), search
** latency and recall@10 against brute force at several ef.
**
**   bench_hnsw [n [dim [threads [f16]]]]     defaults: 100000 128 ncpu f32
**
** Data: clustered (256 centres in [-1,1]^dim, gaussian-ish noise), L2;
** queries are further points of the same distribution.
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/hnsw.h"
#include "benchann.h"
#include "k.h"
#include "util/pool.h"

#define NQ 200
#define K 10

static int hit_cmp(const void *pa, const void *pb) {
  const ann_hit *a = pa, *b = pb;
  if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

int main(int argc, char **argv) {
  uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 100000;
  int dim = argc > 2 ? atoi(argv[2]) : 128;
  int threads = argc > 3 ? atoi(argv[3]) : util_ncpu();
  ann_elem elem = argc > 4 && strcmp(argv[4], "f16") == 0 ? ANN_F16 : ANN_F32;
  const k_ops *k = k_get();
  size_t tot = (size_t)n + NQ;
  rows r;
  if (make_rows(&r, tot, dim, elem)) return 1;
  const float *qs = r.f + (size_t)n * dim;

  /* exact answers */
  ann_hit *truth = malloc((size_t)NQ * K * sizeof *truth), *all = malloc((size_t)n * sizeof *all);
  float *d = malloc((size_t)n * sizeof *d);
  double tb = now();
  for (int q = 0; q < NQ; q++) {
    if (elem == ANN_F32)
      k->l2sq_f32_batch(qs + (size_t)q * dim, r.f, n, (size_t)dim, d);
    else
      k->l2sq_f16_batch(qs + (size_t)q * dim, r.h, n, (size_t)dim, d);
    for (uint32_t i = 0; i < n; i++) all[i] = (ann_hit){i, d[i]};
    qsort(all, n, sizeof *all, hit_cmp);
    memcpy(truth + (size_t)q * K, all, K * sizeof *truth);
  }
  double brute_us = (now() - tb) * 1e6 / NQ;
  printf("hnsw bench: n=%u dim=%d %s l2, M=16 efc=64, kernels %s\n", n, dim,
         elem == ANN_F32 ? "f32" : "f16", k->name);
  printf("brute force: %.0f us/query (batch kernel + sort)\n", brute_us);

  hnsw *h = NULL;
  int tlist[2] = {1, threads};
  for (int t = 0; t < (threads > 1 ? 2 : 1); t++) {
    hnsw_free(h);
    hnsw_params p = {16, 64, 0, tlist[t]};
    if (hnsw_new(dim, ANN_L2, elem, &p, row, &r, &h) != ANN_OK) return 1;
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
  static const int efs[] = {10, 16, 32, 64, 128, 200, 400};
  for (size_t e = 0; e < sizeof efs / sizeof efs[0]; e++) {
    ann_hit got[K];
    int hits = 0;
    double t0 = now();
    for (int rep = 0; rep < 5; rep++)
      for (int q = 0; q < NQ; q++) {
        int ng = hnsw_search(h, qs + (size_t)q * dim, K, efs[e], NULL, NULL, got);
        if (rep) continue;
        for (int i = 0; i < ng; i++)
          for (int j = 0; j < K; j++) hits += got[i].id == truth[(size_t)q * K + j].id;
      }
    double us = (now() - t0) * 1e6 / (5 * NQ);
    printf("ef=%-4d recall@10 %.4f  %7.1f us/query  (%.0fx brute force)\n", efs[e],
           (double)hits / (NQ * K), us, brute_us / us);
  }
  hnsw_free(h);
  free(truth);
  free(all);
  free(d);
  free_rows(&r);
  return 0;
}
