/*
** bench/benchann.h - what the vector index benchmarks (bench_hnsw.c,
** bench_ivf.c) share: clustered rows (256 centres in [-1,1]^dim, each
** coordinate plus 0.25 x the sum of 3 uniforms) as f32 and f16, the row
** callback, a fixed PRNG and a clock.
*/
#ifndef H5MEM_BENCHANN_H
#define H5MEM_BENCHANN_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "ann/ann.h"
#include "k.h"

typedef struct rows {
  int dim;
  ann_elem elem;
  float *f;    /* every row as f32 */
  uint16_t *h; /* and as f16 */
} rows;

static inline const void *row(void *ctx, uint32_t i) {
  rows *r = ctx;
  return r->elem == ANN_F32 ? (const void *)(r->f + (size_t)i * r->dim)
                            : (const void *)(r->h + (size_t)i * r->dim);
}

static uint64_t rng = 0x1234567;
static inline double unit(void) { /* uniform [-1, 1) */
  uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 4503599627370496.0 - 1.0;
}

static inline double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* tot clustered rows of dim into r (r->f and r->h malloc'd: free_rows);
** -1 when out of memory */
static inline int make_rows(rows *r, size_t tot, int dim, ann_elem elem) {
  int nc = 256;
  r->dim = dim;
  r->elem = elem;
  r->f = malloc(tot * dim * sizeof(float));
  r->h = malloc(tot * dim * 2);
  float *cent = malloc((size_t)nc * dim * sizeof *cent);
  if (!r->f || !r->h || !cent) {
    free(cent);
    return -1;
  }
  for (int i = 0; i < nc * dim; i++) cent[i] = (float)unit();
  for (size_t i = 0; i < tot; i++) {
    int c = (int)((unit() + 1) * 0.5 * nc) % nc;
    for (int j = 0; j < dim; j++)
      r->f[i * dim + j] = cent[c * dim + j] + 0.25f * (float)(unit() + unit() + unit());
  }
  k_get()->f32_to_f16(r->f, r->h, tot * dim);
  free(cent);
  return 0;
}

static inline void free_rows(rows *r) {
  free(r->f);
  free(r->h);
}

#endif
