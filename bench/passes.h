/*
** bench/passes.h - the pass bookkeeping bench_ann.c and peer_hnswlib.cpp
** share (C and C++): of several passes over the same queries, the best by
** QPS is kept with its p50 and p99, and the first pass's QPS beside it.
*/
#ifndef H5MEM_BENCH_PASSES_H
#define H5MEM_BENCH_PASSES_H

#include <stddef.h>
#include <stdlib.h>

typedef struct bench_passes {
  double best, first, p50, p99; /* QPS, QPS, seconds, seconds */
} bench_passes;

static int bench_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Pass number ps (0 first) took lat[0..nq) seconds per query, total in all
** (lat is sorted in place). */
static inline void bench_pass_add(bench_passes *b, int ps, double *lat, size_t nq,
                                  double total) {
  qsort(lat, nq, sizeof *lat, bench_cmp_d);
  double qps = (double)nq / total;
  if (ps == 0) b->first = qps;
  if (qps > b->best) {
    b->best = qps;
    b->p50 = lat[nq / 2];
    b->p99 = lat[(size_t)((double)nq * 0.99)];
  }
}

#endif
