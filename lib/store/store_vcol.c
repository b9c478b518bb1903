/*
** lib/store/store_vcol.c - search by a declared vector column (store.h,
** store_knn_col): an exact scan of the column's rows where they lie in the
** mapped file (float32 and float16 under l2, cosine and dot through lib/ann's
** flat scan and the SIMD kernels, on every CPU; int8, bit, and l1 in plain
** loops here), the records in memory after them.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "k.h"
#include "store_int.h"

typedef struct vscan {
  store *s;
  int c;
  const store_filter *flt;
  size_t width;
} vscan;

static int allowed(const vscan *v, uint64_t pos) {
  const store_filter *f = v->flt;
  if (f && f->bits) return f->bits[pos / 8] >> (pos % 8) & 1; /* (only live records are set) */
  if (!store_pos_live(v->s, pos)) return 0;
  return !f || !f->fn || f->fn(f->ctx, pos);
}

/* The rows from pos on that lie together (ann_src's block): a chunk of the
** file's rows up to the first one without a vector, or one record in memory. */
static const void *vblock(void *ctx, uint64_t pos, uint64_t *count) {
  vscan *v = ctx;
  store *s = v->s;
  if (pos >= s->nbase) {
    *count = 1;
    uint64_t d = pos - s->nbase;
    if (d >= s->ndelta || s->delta[d]->dead || !s->delta[d]->cv || !s->delta[d]->cv[v->c].type) return NULL;
    return s->delta[d]->cv[v->c].p;
  }
  const bcol *c = &s->ucol[v->c], *m = &s->umiss[v->c];
  uint64_t k = pos / c->crows, in = pos % c->crows, n = c->crows - in;
  if (pos + n > s->nbase) n = s->nbase - pos;
  if (n > *count) n = *count;
  if (k >= c->nchunks || c->caddr[k] == UINT64_MAX || k >= m->nchunks || m->caddr[k] == UINT64_MAX) {
    *count = n;
    return NULL;
  }
  const uint8_t *miss = h5_file_span(s->f, m->caddr[k] + in, n);
  const uint8_t *rows = h5_file_span(s->f, c->caddr[k] + in * c->rowbytes, n * c->rowbytes);
  if (!miss || !rows) {
    *count = n;
    return NULL;
  }
  const store_coldef *d = &s->cdef[v->c];
  if (d->vtype == STORE_VT_F32 || d->vtype == STORE_VT_F16) { /* (a NULL's row starts with NaN: the scan skips it) */
    *count = n;
    return rows;
  }
  if (miss[0]) { /* rows without a vector: skipped together */
    uint64_t j = 1;
    while (j < n && miss[j]) j++;
    *count = j;
    return NULL;
  }
  uint64_t j = 1;
  while (j < n && !miss[j]) j++;
  *count = j;
  return rows;
}

static int allow_fn(void *ctx, uint64_t pos) { return allowed(ctx, pos); }

/* A distance of the plain loops (int8, bit, l1). */
static float dist_one(const store_coldef *d, const void *q, const void *r) {
  size_t n = (size_t)d->dim;
  if (d->vtype == STORE_VT_BIT) {
    const uint8_t *a = q, *b = r;
    uint64_t h = 0;
    for (size_t i = 0; i < n / 8; i++) h += (uint64_t)__builtin_popcount((unsigned)(a[i] ^ b[i]));
    return (float)h;
  }
  double acc = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; i++) {
    double x, y;
    if (d->vtype == STORE_VT_I8) {
      x = ((const int8_t *)q)[i];
      y = ((const int8_t *)r)[i];
    } else if (d->vtype == STORE_VT_F32) {
      float fx, fy;
      memcpy(&fx, (const uint8_t *)q + 4 * i, 4);
      memcpy(&fy, (const uint8_t *)r + 4 * i, 4);
      x = fx;
      y = fy;
    } else { /* float16 rows, a float32 query */
      float fx;
      uint16_t h;
      memcpy(&fx, (const uint8_t *)q + 4 * i, 4);
      memcpy(&h, (const uint8_t *)r + 2 * i, 2);
      float fy;
      k_get()->f16_to_f32(&h, &fy, 1);
      x = fx;
      y = fy;
    }
    switch (d->metric) {
    case STORE_L1: acc += fabs(x - y); break;
    case STORE_L2: acc += (x - y) * (x - y); break;
    default:
      acc += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  if (d->metric == STORE_L2) return (float)sqrt(acc);
  if (d->metric == STORE_DOT) return (float)-acc;
  if (d->metric == STORE_COSINE) return na == 0 || nb == 0 ? 1.0f : (float)(1.0 - acc / sqrt(na * nb));
  return (float)acc;
}

/* A bounded max-heap of the k best (distance, then position). */
static int worse(const ann_res *a, const ann_res *b) {
  return a->dist > b->dist || (a->dist == b->dist && a->pos > b->pos);
}
static void heap_push(ann_res *h, uint64_t *n, uint64_t k, ann_res r) {
  if (*n < k) {
    uint64_t i = (*n)++;
    h[i] = r;
    while (i && worse(&h[i], &h[(i - 1) / 2])) {
      ann_res t = h[i];
      h[i] = h[(i - 1) / 2];
      h[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
    return;
  }
  if (!worse(&h[0], &r)) return;
  h[0] = r;
  uint64_t i = 0;
  for (;;) {
    uint64_t l = 2 * i + 1, g = i;
    if (l < *n && worse(&h[l], &h[g])) g = l;
    if (l + 1 < *n && worse(&h[l + 1], &h[g])) g = l + 1;
    if (g == i) break;
    ann_res t = h[i];
    h[i] = h[g];
    h[g] = t;
    i = g;
  }
}
static int res_cmp(const void *a, const void *b) {
  const ann_res *x = a, *y = b;
  return worse(x, y) ? 1 : worse(y, x) ? -1 : 0;
}

int store_knn_col(store *s, int c, const void *q, uint64_t k, const store_filter *flt, ann_res *out,
                  uint64_t *nout) {
  *nout = 0;
  if (c < 0 || c >= s->ncols || s->cdef[c].type != STORE_T_VECTOR)
    return store_fail(s, STORE_EINVAL, "no vector column %d", c);
  const store_coldef *d = &s->cdef[c];
  uint64_t npos = store_npos(s);
  if (!k || !npos) return STORE_OK;
  vscan v = {s, c, flt, store_coldef_width(d)};
  if ((d->vtype == STORE_VT_F32 || d->vtype == STORE_VT_F16) && d->metric != STORE_L1) {
    ann_src src = {d->dim, d->vtype == STORE_VT_F32 ? ANN_F32 : ANN_F16,
                   d->metric == STORE_L2 ? ANN_L2 : d->metric == STORE_DOT ? ANN_DOT : ANN_COSINE, npos, vblock, &v};
    /* the rows to score: when the allowed rows that have a vector are
    ** fewer than half (a filter, or a column most records lack, as one
    ** modality of several), only theirs, gathered; else whole chunks (a
    ** NULL's row starts with NaN: the scan skips it) */
    int rc;
    uint64_t *pos = malloc(npos * sizeof *pos), m = 0;
    if (!pos) return store_fail(s, STORE_ENOMEM, "out of memory");
    const bcol *mc = &s->umiss[c];
    for (uint64_t p = 0; p < npos; p++) {
      if (flt && flt->bits && !flt->bits[p / 8]) {
        p |= 7;
        continue;
      }
      if (p < s->nbase) {
        uint64_t ck = p / mc->crows;
        const uint8_t *mb = ck < mc->nchunks && mc->caddr[ck] != UINT64_MAX
                                ? h5_file_span(s->f, mc->caddr[ck] + p % mc->crows, 1) : NULL;
        if (!mb || *mb) continue;
      } else {
        const drec *dr = s->delta[p - s->nbase];
        if (dr->dead || !dr->cv || !dr->cv[c].type) continue;
      }
      if (flt && flt->bits ? (flt->bits[p / 8] >> (p % 8) & 1) : (flt && flt->fn) ? 1 : store_pos_live(s, p))
        pos[m++] = p;
    }
    if (m < npos / 2 && !(flt && !flt->bits && flt->fn)) {
      rc = ann_flat_gather(&src, q, k, pos, m, out, nout);
    } else { /* (a filter function runs on the searching thread only: then one thread) */
      rc = ann_flat_search(&src, q, k, allow_fn, &v, flt && !flt->bits && flt->fn ? 1 : 0, out, nout);
    }
    free(pos);
    if (rc != ANN_OK) return store_fail(s, STORE_ENOMEM, "out of memory");
    if (d->metric == STORE_L2)
      for (uint64_t i = 0; i < *nout; i++) out[i].dist = sqrtf(out[i].dist);
    return STORE_OK;
  }
  /* int8, bit, l1: row by row */
  uint64_t n = 0;
  for (uint64_t p = 0; p < npos;) {
    uint64_t cnt = npos - p;
    const uint8_t *rows = vblock(&v, p, &cnt);
    for (uint64_t j = 0; rows && j < cnt; j++)
      if (allowed(&v, p + j)) heap_push(out, &n, k, (ann_res){p + j, dist_one(d, q, rows + j * v.width)});
    p += cnt;
  }
  qsort(out, n, sizeof *out, res_cmp);
  *nout = n;
  return STORE_OK;
}
