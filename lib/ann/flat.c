/*
** lib/ann/flat.c - exact vector search: the rows scored a block at a time
** with the batched SIMD kernels, the best k kept in a bounded max-heap,
** the rows split across threads for large scans (ann.h).
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ann.h"
#include "k.h"
#include "util/pool.h"

#define PART_ROWS 4096   /* rows per part of a parallel scan */
#define BATCH 256        /* rows scored per kernel call */

/* Order: distance, then position (so results do not depend on threads). */
static int worse(const ann_res *a, const ann_res *b) {
  return a->dist > b->dist || (a->dist == b->dist && a->pos > b->pos);
}

/* A max-heap of the k best so far: h[0] is the worst of them. */
typedef struct heap {
  ann_res *h;
  uint64_t n, k;
} heap;

static void heap_push(heap *hp, ann_res r) {
  ann_res *h = hp->h;
  if (hp->n < hp->k) {
    uint64_t i = hp->n++;
    while (i > 0) {
      uint64_t p = (i - 1) / 2;
      if (!worse(&r, &h[p])) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = r;
    return;
  }
  if (!worse(&h[0], &r)) return; /* not better than the worst kept */
  uint64_t i = 0, n = hp->n;
  for (;;) {
    uint64_t l = 2 * i + 1, m = i;
    const ann_res *big = &r;
    if (l < n && worse(&h[l], big)) {
      m = l;
      big = &h[l];
    }
    if (l + 1 < n && worse(&h[l + 1], big)) m = l + 1;
    if (m == i) break;
    h[i] = h[m];
    i = m;
  }
  h[i] = r;
}

static int by_dist(const void *a, const void *b) {
  const ann_res *x = a, *y = b;
  return worse(x, y) ? 1 : worse(y, x) ? -1 : 0;
}

typedef struct scan {
  const ann_src *src;
  const float *q;
  uint64_t k;
  int (*allow)(void *, uint64_t);
  void *actx;
  uint64_t nparts;
  heap *heaps; /* one per part */
} scan;

static void score(const ann_src *s, const float *q, const void *rows, size_t n, float *out) {
  const k_ops *k = k_get();
  size_t dim = (size_t)s->dim;
  if (s->elem == ANN_F32) {
    const float *r = rows;
    if (s->metric == ANN_COSINE) k->cos_f32_batch(q, r, n, dim, out);
    else if (s->metric == ANN_L2) k->l2sq_f32_batch(q, r, n, dim, out);
    else k->dot_f32_batch(q, r, n, dim, out);
  } else {
    const uint16_t *r = rows;
    if (s->metric == ANN_COSINE) k->cos_f16_batch(q, r, n, dim, out);
    else if (s->metric == ANN_L2) k->l2sq_f16_batch(q, r, n, dim, out);
    else k->dot_f16_batch(q, r, n, dim, out);
  }
  if (s->metric == ANN_DOT)
    for (size_t i = 0; i < n; i++) out[i] = -out[i];
}


static int scan_part(void *ctx, size_t part) {
  scan *sc = ctx;
  const ann_src *s = sc->src;
  heap *hp = &sc->heaps[part];
  uint64_t pos = (uint64_t)part * PART_ROWS, end = pos + PART_ROWS;
  if (end > s->n) end = s->n;
  size_t rowbytes = (size_t)s->dim * (size_t)s->elem;
  float d[BATCH];
  while (pos < end) {
    uint64_t cnt = end - pos;
    if (cnt > BATCH) cnt = BATCH;
    const uint8_t *rows = s->block(s->ctx, pos, &cnt);
    if (!cnt) cnt = 1;
    if (!rows) {
      pos += cnt;
      continue;
    }
    score(s, sc->q, rows, (size_t)cnt, d);
    for (uint64_t i = 0; i < cnt; i++) {
      if (isnan(d[i]) || (sc->allow && !sc->allow(sc->actx, pos + i))) continue;
      /* (cosine answers 1, not NaN, for a row without a vector) */
      if (s->metric == ANN_COSINE && ann_row_missing(s->elem, rows + i * rowbytes)) continue;
      heap_push(hp, (ann_res){pos + i, d[i]});
    }
    pos += cnt;
  }
  return 0;
}

/* Run fn(ctx, part) for each of nparts parts on threads, part i keeping
** its best (at most k) in (*heaps)[i], which this allocates; then merge
** them into out, sorted.  Returns ANN_OK, or ANN_ENOMEM. */
static int parts_topk(uint64_t nparts, uint64_t k, int threads, util_loop_fn fn, void *ctx,
                      heap **heaps, ann_res *out, uint64_t *nout) {
  uint64_t per = k < PART_ROWS ? k : PART_ROWS; /* a part never holds more */
  *heaps = calloc(nparts, sizeof **heaps);
  ann_res *mem = *heaps ? malloc(nparts * per * sizeof *mem) : NULL;
  if (!mem) {
    free(*heaps);
    return ANN_ENOMEM;
  }
  for (uint64_t i = 0; i < nparts; i++) {
    (*heaps)[i].h = mem + i * per;
    (*heaps)[i].k = per;
  }
  if (threads <= 0) threads = util_ncpu();
  util_parallel_for(nparts > 1 ? threads : 1, (size_t)nparts, fn, ctx);
  heap all = {out, 0, k};
  for (uint64_t i = 0; i < nparts; i++)
    for (uint64_t j = 0; j < (*heaps)[i].n; j++) heap_push(&all, (*heaps)[i].h[j]);
  qsort(out, all.n, sizeof *out, by_dist);
  *nout = all.n;
  free(mem);
  free(*heaps);
  return ANN_OK;
}

int ann_flat_search(const ann_src *src, const float *q, uint64_t k,
                    int (*allow)(void *actx, uint64_t pos), void *actx, int threads,
                    ann_res *out, uint64_t *nout) {
  *nout = 0;
  if (k == 0 || src->n == 0) return ANN_OK;
  scan sc = {src, q, k, allow, actx, (src->n + PART_ROWS - 1) / PART_ROWS, NULL};
  return parts_topk(sc.nparts, k, threads, scan_part, &sc, &sc.heaps, out, nout);
}

typedef struct gather {
  const ann_src *src;
  const float *q;
  const uint64_t *pos;
  uint64_t n;
  heap *heaps; /* one per part of PART_ROWS positions */
} gather;

static int gather_part(void *ctx, size_t part) {
  gather *g = ctx;
  heap *hp = &g->heaps[part];
  uint64_t end = ((uint64_t)part + 1) * PART_ROWS;
  if (end > g->n) end = g->n;
  for (uint64_t i = (uint64_t)part * PART_ROWS; i < end; i++) {
    uint64_t cnt = 1;
    const void *row = g->src->block(g->src->ctx, g->pos[i], &cnt);
    if (!row || ann_row_missing(g->src->elem, row)) continue;
    float d;
    score(g->src, g->q, row, 1, &d);
    if (!isnan(d)) heap_push(hp, (ann_res){g->pos[i], d});
  }
  return 0;
}

int ann_flat_gather(const ann_src *src, const float *q, uint64_t k, const uint64_t *pos,
                    uint64_t n, ann_res *out, uint64_t *nout) {
  *nout = 0;
  if (k == 0 || n == 0) return ANN_OK;
  gather g = {src, q, pos, n, NULL};
  return parts_topk((n + PART_ROWS - 1) / PART_ROWS, k, 0, gather_part, &g, &g.heaps, out, nout);
}
