/*
** bench/bench_ivf.c - lib/ann/ivf: train and build time, search latency
** (p50, p99) and recall@10 against brute force over nprobe, for IVF-Flat
** and IVF-PQ.
**
**   bench_ivf [options] [n [dim [threads [f32|f16]]]]
**       defaults: 100000 128 ncpu f32
**   --nlist N      lists (default 0: the library's rule, about sqrt(n))
**   --m M          PQ sub-quantisers (default dim/8; dim must be a multiple)
**   --rerank R     IVF-PQ candidates re-scored exactly (default 0: 4 x k)
**   --metric l2|cosine|dot                 (default l2)
**   --dump DIR     also write DIR/base.f32 (n x dim), DIR/queries.f32
**                  (nq x dim), DIR/gt.i32 (nq x 10 exact ids) and
**                  DIR/meta.json for bench/bench_ivf_faiss.py
**
** Data: clustered (256 centres in [-1,1]^dim, gaussian-ish noise) as in
** bench_hnsw; the queries are further points of the same distribution.
** f16 rows are dumped as the f32 values they stand for.  Searches run one
** query at a time on one thread; train and build use `threads`.
*/
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ann/ivf.h"
#include "benchann.h"
#include "k.h"
#include "util/pool.h"

#define NQ 1000
#define K 10

/* ann_flat_search's view of the same rows: all of them in one block */
static const void *block(void *ctx, uint64_t pos, uint64_t *count) {
  (void)count;
  return row(ctx, (uint32_t)pos);
}

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int dump(const char *dir, const char *name, const void *p, size_t bytes) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(p, 1, bytes, f) != bytes || fclose(f) != 0) {
    fprintf(stderr, "bench_ivf: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

static const char *mname(ann_metric m) {
  return m == ANN_L2 ? "l2" : m == ANN_DOT ? "dot" : "cosine";
}

/* one index kind: build it, then the nprobe table */
static int run(rows *r, uint32_t n, ann_metric metric, int threads, uint32_t *nlist, int pq_m,
               int rerank, const float *qs, const ann_hit *truth) {
  ivf_params p = {*nlist, pq_m, 0, 0, 0, threads, 0, rerank};
  ivf *v = NULL;
  if (ivf_new(r->dim, metric, r->elem, &p, row, r, &v) != ANN_OK) {
    fprintf(stderr, "bench_ivf: %s\n", ivf_errmsg(v));
    ivf_free(v);
    return 1;
  }
  double t0 = now();
  int rc = ivf_train(v, n);
  double t1 = now();
  if (rc == ANN_OK) rc = ivf_build(v, n);
  double t2 = now();
  if (rc != ANN_OK) {
    fprintf(stderr, "bench_ivf: %s\n", ivf_errmsg(v));
    ivf_free(v);
    return 1;
  }
  uint8_t *img;
  size_t len = 0;
  if (ivf_save(v, &img, &len) == ANN_OK) free(img);
  uint32_t nl = *nlist = ivf_nlist(v);
  if (pq_m)
    printf("\nIVF-PQ nlist=%u m=%d rerank=%d: train %.2f s, add %.2f s (%d thread%s), "
           "image %.1f MB\n",
           nl, pq_m, rerank ? rerank : 4 * K, t1 - t0, t2 - t1, threads, threads > 1 ? "s" : "",
           len / 1e6);
  else
    printf("\nIVF-Flat nlist=%u: train %.2f s, add %.2f s (%d thread%s), image %.1f MB\n", nl,
           t1 - t0, t2 - t1, threads, threads > 1 ? "s" : "", len / 1e6);
  printf("  nprobe  recall@10    p50 us    p99 us\n");
  double *lat = malloc(NQ * sizeof *lat);
  if (!lat) return 1;
  for (uint32_t np = 1;; np = np * 2 > nl ? nl : np * 2) {
    ann_hit got[K];
    int hits = 0;
    for (int q = 0; q < NQ; q++) {
      double s = now();
      int ng = ivf_search(v, qs + (size_t)q * r->dim, K, (int)np, 0, NULL, NULL, got);
      lat[q] = (now() - s) * 1e6;
      for (int i = 0; i < ng; i++)
        for (int j = 0; j < K; j++) hits += got[i].id == truth[(size_t)q * K + j].id;
    }
    qsort(lat, NQ, sizeof *lat, dbl_cmp);
    printf("  %6u     %.4f  %8.1f  %8.1f\n", np, (double)hits / (NQ * K), lat[NQ / 2],
           lat[NQ * 99 / 100]);
    if (np == nl) break;
  }
  free(lat);
  ivf_free(v);
  return 0;
}

int main(int argc, char **argv) {
  uint32_t nlist = 0;
  int pq_m = -1, rerank = 0, pos = 0;
  ann_metric metric = ANN_L2;
  const char *dir = NULL, *args[4] = {NULL, NULL, NULL, NULL};
  for (int a = 1; a < argc; a++) {
    if (strcmp(argv[a], "--nlist") == 0 && a + 1 < argc)
      nlist = (uint32_t)strtoul(argv[++a], NULL, 10);
    else if (strcmp(argv[a], "--m") == 0 && a + 1 < argc)
      pq_m = atoi(argv[++a]);
    else if (strcmp(argv[a], "--rerank") == 0 && a + 1 < argc)
      rerank = atoi(argv[++a]);
    else if (strcmp(argv[a], "--metric") == 0 && a + 1 < argc) {
      a++;
      metric = strcmp(argv[a], "cosine") == 0 ? ANN_COSINE
               : strcmp(argv[a], "dot") == 0  ? ANN_DOT
                                              : ANN_L2;
    } else if (strcmp(argv[a], "--dump") == 0 && a + 1 < argc)
      dir = argv[++a];
    else if (argv[a][0] != '-' && pos < 4)
      args[pos++] = argv[a];
    else {
      fprintf(stderr, "usage: bench_ivf [--nlist N] [--m M] [--rerank R] "
                      "[--metric l2|cosine|dot] [--dump DIR] [n [dim [threads [f32|f16]]]]\n");
      return 2;
    }
  }
  uint32_t n = args[0] ? (uint32_t)strtoul(args[0], NULL, 10) : 100000;
  int dim = args[1] ? atoi(args[1]) : 128;
  int threads = args[2] ? atoi(args[2]) : util_ncpu();
  ann_elem elem = args[3] && strcmp(args[3], "f16") == 0 ? ANN_F16 : ANN_F32;
  if (pq_m < 0) pq_m = dim % 8 == 0 ? dim / 8 : 1;
  if (n == 0 || dim <= 0 || threads <= 0 || pq_m == 0) {
    fprintf(stderr, "bench_ivf: bad arguments\n");
    return 2;
  }
  const k_ops *k = k_get();
  size_t tot = (size_t)n + NQ;
  rows r;
  ann_hit *truth = malloc((size_t)NQ * K * sizeof *truth);
  ann_res *res = malloc(K * sizeof *res);
  if (!truth || !res || make_rows(&r, tot, dim, elem)) return 1;
  if (elem == ANN_F16) k->f16_to_f32(r.h, r.f, (size_t)n * dim); /* the values indexed */
  const float *qs = r.f + (size_t)n * dim;

  /* exact answers, with the same kernels */
  ann_src src = {dim, elem, metric, n, block, &r};
  double tb = now();
  for (int q = 0; q < NQ; q++) {
    uint64_t nr;
    if (ann_flat_search(&src, qs + (size_t)q * dim, K, NULL, NULL, 1, res, &nr) != 0) return 1;
    for (uint64_t i = 0; i < K; i++)
      truth[(size_t)q * K + i] = (ann_hit){i < nr ? (uint32_t)res[i].pos : UINT32_MAX,
                                           i < nr ? res[i].dist : 0};
  }
  double brute_us = (now() - tb) * 1e6 / NQ;
  printf("ivf bench: n=%u dim=%d %s %s, %d queries, kernels %s\n", n, dim,
         elem == ANN_F32 ? "f32" : "f16", mname(metric), NQ, k->name);
  printf("brute force: %.0f us/query (1 thread)\n", brute_us);

  if (dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "bench_ivf: cannot create %s\n", dir);
      return 1;
    }
    int32_t *gt = malloc((size_t)NQ * K * sizeof *gt);
    if (!gt) return 1;
    for (size_t i = 0; i < (size_t)NQ * K; i++) gt[i] = (int32_t)truth[i].id;
    if (dump(dir, "base.f32", r.f, (size_t)n * dim * sizeof(float)) ||
        dump(dir, "queries.f32", qs, (size_t)NQ * dim * sizeof(float)) ||
        dump(dir, "gt.i32", gt, (size_t)NQ * K * sizeof *gt))
      return 1;
    free(gt);
  }

  int rc = run(&r, n, metric, threads, &nlist, 0, 0, qs, truth);
  if (rc == 0 && dir) { /* nlist is now the one the index chose */
    char meta[512];
    int ml = snprintf(meta, sizeof meta,
                      "{\"n\": %u, \"dim\": %d, \"nq\": %d, \"k\": %d, \"metric\": \"%s\", "
                      "\"nlist\": %u, \"m\": %d, \"rerank\": %d, \"threads\": %d}\n",
                      n, dim, NQ, K, mname(metric), nlist, pq_m, rerank ? rerank : 4 * K,
                      threads);
    if (dump(dir, "meta.json", meta, (size_t)ml)) return 1;
    printf("(data, queries and exact answers written to %s)\n", dir);
  }
  if (rc == 0) rc = run(&r, n, metric, threads, &nlist, pq_m, rerank, qs, truth);
  free(truth);
  free(res);
  free_rows(&r);
  return rc;
}
