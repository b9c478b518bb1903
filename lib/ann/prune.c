/*
** lib/ann/prune.c - exact search pruned by an int8 sketch (prune.h).
**
** The sketch is arrays over its rows: the codes (dim each), a multiplier,
** the radius and one more value per metric, and a state byte (a row to bound, a row
** without a vector, a row to score whatever its bound).  A search scores
** the listed rows' codes against the query's in batches with the kernels'
** int8 distances, parts of PART rows on threads, each part keeping its k
** smallest upper bounds; the k-th smallest of all of them is the cut.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prune.h"
#include "q8.h"

#include "k.h"
#include "util/pool.h"

#define PART 4096       /* rows per part, on threads */
#define BATCH 256       /* rows scored per kernel call */
#define MIN_ROWS 256    /* fewer listed rows: a plain gather */
#define EST_REL 9.5367431640625e-07 /* 2^-20: the float rounding of an int8 distance, widened */

enum { ROW_BOUND = 0, ROW_NONE = 1, ROW_ANY = 2 };

struct ann_sketch {
  int dim;
  ann_elem elem;
  ann_metric metric;
  uint64_t n;
  int8_t *codes;
  float *mul;   /* the multiplier of the codes' dot product: cosine 1 / |c|, else the scale */
  float *rad;   /* the radius */
  float *aux;   /* L2: |scale c|^2; dot: |x| */
  uint8_t *state;
};

/* d as a float no smaller (up) or no larger (down): the bounds only ever
** widen (2^-22 relative is more than float rounding's 2^-24, and 1e-37
** more than a subnormal's half step). */
static float up(double d) { return (float)(d + fabs(d) * 2.384185791015625e-07 + 1e-37); }
static float down(double d) { return (float)(d - fabs(d) * 2.384185791015625e-07 - 1e-37); }

/* The radius of x (dim floats) against its codes c and scale s, and its
** mul and aux (struct ann_sketch); ROW_BOUND, or ROW_ANY when they cannot
** bound it (a zero or tiny vector, codes all zero, magnitudes whose squares
** the float kernels would overflow). */
static int row_radius(ann_metric m, const float *x, const int8_t *c, float s, size_t dim, float *rad,
                      float *mul, float *aux) {
  /* (sums of four lanes: the order differs from a plain loop's by far less
  ** than the 1e-12 the radius is widened by, and is not one long chain) */
  double xa[4] = {0, 0, 0, 0}, ca[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= dim; i += 4)
    for (int j = 0; j < 4; j++) {
      xa[j] += (double)x[i + j] * x[i + j];
      ca[j] += (double)c[i + j] * c[i + j];
    }
  for (; i < dim; i++) {
    xa[0] += (double)x[i] * x[i];
    ca[0] += (double)c[i] * c[i];
  }
  double xx = (xa[0] + xa[1]) + (xa[2] + xa[3]), cc = (ca[0] + ca[1]) + (ca[2] + ca[3]);
  if (!(xx >= 1e-30 && xx <= 1e30) || cc == 0) return ROW_ANY;
  double nx = sqrt(xx), r = 0, da[4] = {0, 0, 0, 0};
  if (m == ANN_COSINE) { /* the angle from the chord of the two unit vectors (stable near 0) */
    double nc = sqrt(cc), ix = 1 / nx, ic = 1 / nc; /* (a product by the inverse: within 2 ulp of the quotient) */
    for (i = 0; i + 4 <= dim; i += 4)
      for (int j = 0; j < 4; j++) {
        double d = x[i + j] * ix - c[i + j] * ic;
        da[j] += d * d;
      }
    for (; i < dim; i++) {
      double d = x[i] * ix - c[i] * ic;
      da[0] += d * d;
    }
    double h = sqrt((da[0] + da[1]) + (da[2] + da[3])) / 2;
    r = 2 * asin(h < 1 ? h : 1);
    r = r * (1 + 1e-12) + 1e-15;
    *mul = (float)(1 / nc);
    *aux = 0;
  } else {
    double sd = s;
    for (i = 0; i + 4 <= dim; i += 4)
      for (int j = 0; j < 4; j++) {
        double d = x[i + j] - sd * c[i + j];
        da[j] += d * d;
      }
    for (; i < dim; i++) {
      double d = x[i] - sd * c[i];
      da[0] += d * d;
    }
    r = sqrt((da[0] + da[1]) + (da[2] + da[3])) * (1 + 1e-12);
    *mul = s;
    *aux = m == ANN_L2 ? (float)(sd * sd * cc) : up(nx * (1 + 1e-12));
  }
  *rad = up(r);
  return ROW_BOUND;
}

typedef struct build {
  const ann_src *src;
  ann_sketch *sk;
  float **buf; /* one widening buffer per part (f16) */
} build;

static int build_part(void *ctx, size_t part) {
  build *b = ctx;
  ann_sketch *sk = b->sk;
  const ann_src *src = b->src;
  size_t dim = (size_t)sk->dim, rowb = dim * (size_t)src->elem;
  uint64_t p = (uint64_t)part * PART, end = p + PART;
  if (end > sk->n) end = sk->n;
  while (p < end) {
    uint64_t cnt = end - p;
    const uint8_t *rows = src->block(src->ctx, p, &cnt);
    if (!cnt) cnt = 1;
    if (cnt > end - p) cnt = end - p;
    for (uint64_t j = 0; j < cnt; j++) {
      uint64_t r = p + j;
      int8_t *c = sk->codes + r * dim;
      const uint8_t *row = rows ? rows + j * rowb : NULL;
      if (!row || ann_row_missing(src->elem, row)) {
        memset(c, 0, dim);
        sk->state[r] = ROW_NONE;
        continue;
      }
      float scale;
      if (ann_q8_encode(row, src->elem, (int)dim, c, &scale)) {
        sk->state[r] = ROW_ANY;
        continue;
      }
      const float *x = (const float *)row;
      if (src->elem == ANN_F16) {
        k_get()->f16_to_f32((const uint16_t *)row, b->buf[part], dim);
        x = b->buf[part];
      }
      sk->state[r] = (uint8_t)row_radius(sk->metric, x, c, scale, dim, &sk->rad[r], &sk->mul[r], &sk->aux[r]);
    }
    p += cnt;
  }
  return 0;
}

size_t ann_sketch_size(uint64_t n, int dim) {
  return (size_t)n * ((size_t)(dim > 0 ? dim : 0) + 3 * sizeof(float) + 1);
}

ann_sketch *ann_sketch_build(const ann_src *src, uint64_t n, int threads) {
  if (!n || src->dim <= 0 || n > src->n) return NULL;
  ann_sketch *sk = calloc(1, sizeof *sk);
  if (!sk) return NULL;
  sk->dim = src->dim;
  sk->elem = src->elem;
  sk->metric = src->metric;
  sk->n = n;
  sk->codes = malloc((size_t)n * (size_t)src->dim);
  sk->mul = calloc((size_t)n, sizeof(float));
  sk->rad = calloc((size_t)n, sizeof(float));
  sk->aux = calloc((size_t)n, sizeof(float));
  sk->state = malloc((size_t)n);
  util_advise_huge(sk->codes, (size_t)n * (size_t)src->dim); /* (filled at once, then read whole by every search) */
  size_t nparts = (size_t)((n + PART - 1) / PART);
  float **buf = calloc(nparts, sizeof *buf);
  int ok = sk->codes && sk->mul && sk->rad && sk->aux && sk->state && buf;
  for (size_t i = 0; ok && src->elem == ANN_F16 && i < nparts; i++)
    ok = (buf[i] = malloc((size_t)src->dim * sizeof(float))) != NULL;
  if (ok) {
    build b = {src, sk, buf};
    if (threads <= 0) threads = util_ncpu();
    util_parallel_for(nparts > 1 ? threads : 1, nparts, build_part, &b);
  }
  for (size_t i = 0; buf && i < nparts; i++) free(buf[i]);
  free(buf);
  if (!ok) {
    ann_sketch_free(sk);
    return NULL;
  }
  return sk;
}

void ann_sketch_free(ann_sketch *sk) {
  if (!sk) return;
  free(sk->codes);
  free(sk->mul);
  free(sk->rad);
  free(sk->aux);
  free(sk->state);
  free(sk);
}

uint64_t ann_sketch_rows(const ann_sketch *sk) { return sk ? sk->n : 0; }

size_t ann_sketch_bytes(const ann_sketch *sk) { return sk ? ann_sketch_size(sk->n, sk->dim) : 0; }

/* ---- the search ------------------------------------------------------------ */

/* A max-heap of the smallest upper bounds: h[0] the largest kept. */
static void fheap_push(float *h, uint64_t *n, uint64_t k, float v) {
  if (*n < k) {
    uint64_t i = (*n)++;
    while (i && h[(i - 1) / 2] < v) {
      h[i] = h[(i - 1) / 2];
      i = (i - 1) / 2;
    }
    h[i] = v;
    return;
  }
  if (!(v < h[0])) return;
  uint64_t i = 0;
  for (;;) {
    uint64_t l = 2 * i + 1, g = i;
    float big = v;
    if (l < *n && h[l] > big) {
      g = l;
      big = h[l];
    }
    if (l + 1 < *n && h[l + 1] > big) g = l + 1;
    if (g == i) break;
    h[i] = h[g];
    i = g;
  }
  h[i] = v;
}

typedef struct prune {
  const ann_sketch *sk;
  const uint64_t *pos;
  uint64_t n, k, per;
  const int8_t *qc;
  float qmul;                /* the query's multiplier (as a row's mul) */
  double qrad, qaux, slack;  /* its radius and aux; the exact kernels' relative rounding */
  float *hi;                 /* nparts x per: each part's smallest upper bounds */
  uint64_t *nhi;             /* nparts */
  struct plist *cand;        /* nparts: each part's rows not yet ruled out */
} prune;

/* A part's rows that its running cut (the k-th smallest upper bound so
** far, which only falls) has not ruled out, with their lower bounds. */
typedef struct plist {
  uint64_t *pos;
  float *lo;
  uint64_t n, cap;
  int oom;
} plist;

static void plist_add(plist *l, uint64_t pos, float lo) {
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? 2 * l->cap : 256;
    uint64_t *p = realloc(l->pos, (size_t)cap * sizeof *p);
    if (p) l->pos = p;
    float *f = p ? realloc(l->lo, (size_t)cap * sizeof *f) : NULL;
    if (!f) {
      l->oom = 1;
      return;
    }
    l->lo = f;
    l->cap = cap;
  }
  l->pos[l->n] = pos;
  l->lo[l->n++] = lo;
}


static int prune_part(void *ctx, size_t part) {
  prune *pr = ctx;
  const ann_sketch *sk = pr->sk;
  const k_ops *k = k_get();
  size_t dim = (size_t)sk->dim;
  float *heap = pr->hi + part * pr->per;
  plist *cl = &pr->cand[part];
  uint64_t nh = 0, i = (uint64_t)part * PART, end = i + PART;
  if (end > pr->n) end = pr->n;
  const int8_t *rows[BATCH];
  float mul[BATCH], est[BATCH];
  uint64_t at[BATCH];
  double cut = INFINITY; /* the largest upper bound kept, once k are */
  while (i < end) {
    size_t m = 0;
    for (; i < end && m < BATCH; i++) {
      uint64_t p = pr->pos[i];
      if (p >= sk->n || sk->state[p] == ROW_ANY) {
        plist_add(cl, p, -INFINITY);
        continue;
      }
      if (sk->state[p] == ROW_NONE) continue; /* (no vector: the gather would drop it) */
      rows[m] = sk->codes + p * dim;
      mul[m] = sk->mul[p];
      at[m++] = i;
    }
    if (!m) continue;
    /* the codes' dot products, times both multipliers: cosine's cos, the
    ** others' dot of the decoded vectors */
    k->dot_i8_batch(pr->qc, pr->qmul, rows, mul, m, dim, est);
    for (size_t j = 0; j < m; j++) {
      uint64_t p = pr->pos[at[j]];
      double e = est[j], rx = sk->rad[p], lo, hi;
      if (sk->metric == ANN_COSINE) {
        double b = pr->qrad + rx + pr->slack + EST_REL;
        lo = 1 - e - b;
        hi = 1 - e + b;
      } else if (sk->metric == ANN_L2) { /* |q^ - x^|^2 from the dot product, then the radii */
        double xx = sk->aux[p], e2 = pr->qaux + xx - 2 * e, err = EST_REL * (pr->qaux + xx + 2 * fabs(e));
        double r = pr->qrad + rx;
        double dl = sqrt(e2 - err > 0 ? e2 - err : 0) - r, dh = sqrt(e2 + err > 0 ? e2 + err : 0) + r;
        lo = dl > 0 ? dl * dl * (1 - pr->slack) : 0;
        hi = dh * dh * (1 + pr->slack);
      } else {
        double nx = sk->aux[p];
        double b = pr->qaux * rx + pr->qrad * (nx + rx) + (pr->slack + EST_REL) * (pr->qaux + pr->qrad) * (nx + rx);
        lo = -e - b;
        hi = -e + b;
      }
      if (!(lo <= hi)) { /* (a NaN: no bound) */
        plist_add(cl, p, -INFINITY);
        continue;
      }
      if (lo > cut) continue; /* ruled out (and its upper bound would not be kept) */
      plist_add(cl, p, down(lo));
      fheap_push(heap, &nh, pr->k, up(hi));
      if (nh == pr->k) cut = heap[0];
    }
  }
  pr->nhi[part] = nh;
  return 0;
}

static int fcmp(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

int ann_flat_gather_pruned(const ann_src *src, const ann_sketch *sk, const float *q, uint64_t k,
                           const uint64_t *pos, uint64_t n, ann_res *out, uint64_t *nout,
                           uint64_t *nscored) {
  *nout = 0;
  if (nscored) *nscored = n;
  if (!sk || k == 0 || n < MIN_ROWS || k > n / 8 || sk->dim != src->dim || sk->elem != src->elem ||
      sk->metric != src->metric)
    return ann_flat_gather(src, q, k, pos, n, out, nout);
  size_t dim = (size_t)sk->dim;
  int8_t *qc = malloc(dim);
  float qs, qrad = 0, qmul = 0, qaux = 0;
  if (!qc) return ANN_ENOMEM;
  if (ann_q8_query(q, sk->dim, qc, &qs) ||
      row_radius(sk->metric, q, qc, qs, dim, &qrad, &qmul, &qaux) != ROW_BOUND) { /* (no bound for this query) */
    free(qc);
    return ann_flat_gather(src, q, k, pos, n, out, nout);
  }
  uint64_t nparts = (n + PART - 1) / PART, per = k < PART ? k : PART;
  prune pr = {sk, pos, n, k, per, qc, qmul, qrad, qaux, 6.0 * ((double)dim + 64) * 5.9604644775390625e-08,
              malloc((size_t)(nparts * per) * sizeof(float)), calloc((size_t)nparts, sizeof(uint64_t)),
              calloc((size_t)nparts, sizeof(plist))};
  int rc = ANN_ENOMEM;
  if (pr.hi && pr.nhi && pr.cand) {
    util_parallel_for(n >= 4 * PART ? util_ncpu() : 1, (size_t)nparts, prune_part, &pr);
    /* the cut: the k-th smallest upper bound of all (none: keep every row) */
    uint64_t m = 0, nc = 0;
    int oom = 0;
    for (uint64_t i = 0; i < nparts; i++) {
      memmove(pr.hi + m, pr.hi + i * per, (size_t)pr.nhi[i] * sizeof(float));
      m += pr.nhi[i];
      nc += pr.cand[i].n;
      oom |= pr.cand[i].oom;
    }
    float cut = INFINITY;
    if (m >= k) {
      qsort(pr.hi, (size_t)m, sizeof(float), fcmp);
      cut = pr.hi[k - 1];
    }
    uint64_t *cand = oom ? NULL : malloc((size_t)(nc ? nc : 1) * sizeof *cand);
    if (cand) {
      nc = 0;
      for (uint64_t i = 0; i < nparts; i++) /* (in the listed order, part by part) */
        for (uint64_t j = 0; j < pr.cand[i].n; j++)
          if (pr.cand[i].lo[j] <= cut) cand[nc++] = pr.cand[i].pos[j];
      if (nscored) *nscored = nc;
      rc = ann_flat_gather(src, q, k, cand, nc, out, nout);
      free(cand);
    }
  }
  for (uint64_t i = 0; pr.cand && i < nparts; i++) {
    free(pr.cand[i].pos);
    free(pr.cand[i].lo);
  }
  free(pr.cand);
  free(pr.hi);
  free(pr.nhi);
  free(qc);
  return rc;
}
