/*
** bench/bench_ann.c - lib/ann/hnsw on data from files, for bench/bench_ann.py
** (which runs hnswlib on the same files in the same run):
**
**   bench_ann base.f32 queries.f32 gt.i32 dim metric M efc threads ef1,ef2,...
**             [q8] [seed=N]
**
** base and queries: float32 rows of dim values; gt: int32 rows of 10 ids,
** the exact top 10 of each query.  metric: l2, dot or cosine.  Builds the
** index on `threads` threads, then for each ef searches every query one at
** a time on one thread.  Prints one line per measurement:
**   build <threads> <seconds>
**   search <ef> <recall@10> <qps> <p50 us> <p99 us>
** and with q8, the same searches walking the graph with an int8 copy of the
** rows (lib/ann/q8, as the store does by default):
**   search_q8 <ef> <recall@10> <qps> <p50 us> <p99 us>
** seed=N: the level generator's seed (hnsw_params.seed; default: the
** library's), for comparing builds.
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/hnsw.h"
#include "ann/q8.h"
#include "passes.h"

#define K 10

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  void *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = buf ? (size_t)n : 0;
  return buf;
}

typedef struct rows {
  const float *f;
  int dim;
} rows;

static const void *row(void *ctx, uint32_t i) {
  const rows *r = ctx;
  return r->f + (size_t)i * (size_t)r->dim;
}

int main(int argc, char **argv) {
  int passes = 1, first = 0, npass = 1;
  uint64_t seed = 0;
  const char *gpath = NULL; /* graph=PATH: load the graph saved there, else save it there */
  for (int a = 10; a < argc; a++) {
    if (!strcmp(argv[a], "q8"))
      passes = 2;
    else if (!strcmp(argv[a], "q8only")) /* no float32 walk */
      passes = 2, first = 1;
    else if (!strncmp(argv[a], "passes=", 7))
      npass = atoi(argv[a] + 7) > 0 ? atoi(argv[a] + 7) : 1;
    else if (!strncmp(argv[a], "graph=", 6))
      gpath = argv[a] + 6;
    else if (!strncmp(argv[a], "seed=", 5))
      seed = strtoull(argv[a] + 5, NULL, 10);
    else
      argc = 0; /* unknown: the usage */
  }
  if (argc < 10) {
    fprintf(stderr, "usage: bench_ann base.f32 queries.f32 gt.i32 dim metric M "
                    "efc threads ef,ef,... [q8|q8only] [seed=N] [passes=N] [graph=PATH]\n");
    return 2;
  }
  int dim = atoi(argv[4]), M = atoi(argv[6]), efc = atoi(argv[7]),
      threads = atoi(argv[8]);
  ann_metric metric = !strcmp(argv[5], "l2")    ? ANN_L2
                      : !strcmp(argv[5], "dot") ? ANN_DOT
                                                : ANN_COSINE;
  size_t lb, lq, lg;
  float *base = slurp(argv[1], &lb), *qs = slurp(argv[2], &lq);
  int32_t *gt = slurp(argv[3], &lg);
  if (!base || !qs || !gt || dim <= 0) {
    fprintf(stderr, "bench_ann: cannot read the data files\n");
    return 1;
  }
  uint32_t n = (uint32_t)(lb / 4 / (size_t)dim),
           nq = (uint32_t)(lq / 4 / (size_t)dim);
  if (lg / 4 / K < nq)
    nq = (uint32_t)(lg / 4 / K);
  rows r = {base, dim};
  hnsw_params p = {M, efc, seed, threads, 0};
  hnsw *h;
  size_t gl = 0;
  uint8_t *gimg = gpath ? slurp(gpath, &gl) : NULL;
  double t0 = now();
  if (gimg) { /* read in place, as the store reads its mapped image */
    if (hnsw_load(gimg, gl, dim, metric, ANN_F32, row, &r, &h) != ANN_OK) {
      fprintf(stderr, "bench_ann: %s: %s\n", gpath, hnsw_errmsg(h));
      return 1;
    }
    printf("load %.3f\n", now() - t0);
  } else {
    if (hnsw_new(dim, metric, ANN_F32, &p, row, &r, &h) != ANN_OK) {
      fprintf(stderr, "bench_ann: %s\n", hnsw_errmsg(h));
      return 1;
    }
    if (hnsw_build(h, n) != ANN_OK) {
      fprintf(stderr, "bench_ann: %s\n", hnsw_errmsg(h));
      return 1;
    }
    printf("build %d %.3f\n", threads, now() - t0);
    uint8_t *img;
    size_t il;
    FILE *gf = gpath ? fopen(gpath, "wb") : NULL;
    if (gf && hnsw_save(h, &img, &il) == ANN_OK) {
      fwrite(img, 1, il, gf);
      free(img);
    }
    if (gf) fclose(gf);
  }
  fflush(stdout);
  double *lat = malloc(nq * sizeof *lat);
  ann_hit out[K];
  int8_t *c8 = NULL;
  float *sc = NULL;
  if (passes == 2) {
    void *cm = NULL; /* 64-byte aligned, as the store's copy */
    if (posix_memalign(&cm, 64, (size_t)n * (size_t)dim))
      return 1;
    c8 = cm;
    sc = malloc((size_t)n * sizeof *sc);
    if (!sc)
      return 1;
    t0 = now();
    ann_q8_encode_n(base, ANN_F32, dim, n, c8, sc);
    printf("encode_q8 %.3f\n", now() - t0);
  }
  char *efs = argv[9];
  for (int pass = first; pass < passes; pass++) {
    if (pass)
      hnsw_set_q8_rows(h, c8, (size_t)dim, sc, n); /* as the store does */
    char eflist[256];
    snprintf(eflist, sizeof eflist, "%s", efs);
    for (char *tok = strtok(eflist, ","); tok; tok = strtok(NULL, ",")) {
      int ef = atoi(tok);
      for (uint32_t i = 0; i < nq && i < 20; i++) /* warm the caches */
        hnsw_search(h, qs + (size_t)i * (size_t)dim, K, ef, NULL, NULL, out);
      /* npass passes over the queries: the best (by QPS) is printed, with
      ** the first pass's QPS after it */
      bench_passes bp = {0, 0, 0, 0};
      long hits = 0;
      for (int ps = 0; ps < npass; ps++) {
        double total = 0;
        hits = 0;
        for (uint32_t i = 0; i < nq; i++) {
          double a = now();
          int got = hnsw_search(h, qs + (size_t)i * (size_t)dim, K, ef, NULL, NULL, out);
          lat[i] = now() - a;
          total += lat[i];
          for (int j = 0; j < got; j++)
            for (int t = 0; t < K; t++)
              hits += (int32_t)out[j].id == gt[(size_t)i * K + (size_t)t];
        }
        bench_pass_add(&bp, ps, lat, nq, total);
      }
      printf("%s %d %.4f %.0f %.1f %.1f %.0f\n", pass ? "search_q8" : "search", ef,
             (double)hits / ((double)nq * K), bp.best, bp.p50 * 1e6, bp.p99 * 1e6, bp.first);
      fflush(stdout);
    }
  }
  free(c8);
  free(sc);
  free(lat);
  hnsw_free(h);
  free(base);
  free(qs);
  free(gt);
  free(gimg);
  return 0;
}
