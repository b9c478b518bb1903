/*
** lib/store/store_vcol.c - search by a declared vector column (store.h,
** store_knn_col): an exact scan of the column's rows where they lie in the
** mapped file (float32 and float16 under l2, cosine and dot through lib/ann's
** flat scan and the SIMD kernels, on every CPU; int8, bit, and l1 in plain
** loops here), the records in memory after them.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ann/hnsw.h"
#include "ann/prune.h"
#include "k.h"
#include "store_int.h"

/* ---- the sketches that prune exact searches ------------------------------------ */

static const ann_sketch *sketch_of(store *s, struct store_sketch_slot *t, uint64_t from, const ann_src *src) {
  uint64_t n = s->nbase > from ? s->nbase - from : 0;
  if (n < STORE_SKETCH_MIN || ann_sketch_size(n, src->dim) > STORE_SKETCH_MAX) return NULL;
  if (t->from != from) { /* (other rows: the tail's once a graph covers more) */
    ann_sketch_free(t->sk);
    t->sk = NULL;
    t->uses = 0;
    t->from = from;
  }
  if (!t->sk && ++t->uses >= 2) t->sk = ann_sketch_build(src, n, 0);
  return t->sk;
}

/* The slots (both arrays: s->nskt of each), made on first use. */
static int slots(store *s) {
  if (s->skt) return 1;
  s->skt = calloc((size_t)s->ncols + 1, sizeof *s->skt);
  s->sktail = calloc((size_t)s->ncols + 1, sizeof *s->sktail);
  if (!s->skt || !s->sktail) {
    free(s->skt);
    free(s->sktail);
    s->skt = s->sktail = NULL;
    return 0;
  }
  s->nskt = s->ncols + 1;
  return 1;
}

const ann_sketch *store_sketch(store *s, int slot, const ann_src *src) {
  if (!slots(s) || slot < 0 || slot >= s->nskt) return NULL;
  return sketch_of(s, &s->skt[slot], 0, src);
}

const ann_sketch *store_sketch_tail(store *s, int slot, uint64_t from, const ann_src *src) {
  if (!slots(s) || slot < 0 || slot >= s->nskt) return NULL;
  return sketch_of(s, &s->sktail[slot], from, src);
}

uint64_t store_sketch_rows(const store *s, int c) {
  return c + 1 >= 0 && c + 1 < s->nskt ? ann_sketch_rows(s->skt[c + 1].sk) : 0;
}

uint64_t store_tail_sketch_rows(const store *s, int c) {
  return c + 1 >= 0 && c + 1 < s->nskt ? ann_sketch_rows(s->sktail[c + 1].sk) : 0;
}

void store_sketches_free(store *s) {
  for (int i = 0; s->skt && i < s->nskt; i++) {
    ann_sketch_free(s->skt[i].sk);
    ann_sketch_free(s->sktail[i].sk);
  }
  free(s->skt);
  free(s->sktail);
  s->skt = s->sktail = NULL;
  s->nskt = 0;
}

/* ---- the columns' graphs (index=hnsw) -------------------------------------------- */

/* A declared float vector column's graph over the file's rows [0, rows),
** saved as the image kind "col_<name>" (docs/FORMAT.md, "The vector
** index"), loaded with the base and read in place. */
struct vgraph {
  store *s;
  int c;
  hnsw *g;
  uint64_t rows;
  void *copy; /* the image, when its chunks were scattered */
  char note[160];
};

static int graphed(const store *s, int c) {
  const store_coldef *d = &s->cdef[c];
  return s->icfg.kind == STORE_INDEX_HNSW && d->type == STORE_T_VECTOR &&
         (d->vtype == STORE_VT_F32 || d->vtype == STORE_VT_F16) && d->metric != STORE_L1;
}

static ann_metric vmetric(const store_coldef *d) {
  return d->metric == STORE_L2 ? ANN_L2 : d->metric == STORE_DOT ? ANN_DOT : ANN_COSINE;
}

/* File row i of the column for the graph (NULL: none). */
static const void *vrow_fn(void *ctx, uint32_t i) {
  const struct vgraph *x = ctx;
  const store *s = x->s;
  const bcol *c = &s->ucol[x->c], *m = &s->umiss[x->c];
  uint64_t k = i / c->crows;
  if (i >= s->nbase || k >= c->nchunks || k >= m->nchunks || c->caddr[k] == UINT64_MAX || m->caddr[k] == UINT64_MAX)
    return NULL;
  const uint8_t *mb = h5_file_span(s->f, m->caddr[k] + i % m->crows, 1);
  if (!mb || *mb) return NULL;
  return h5_file_span(s->f, c->caddr[k] + (i % c->crows) * c->rowbytes, c->rowbytes);
}

static void kind_of(const store_coldef *d, char *buf, size_t n) { snprintf(buf, n, "col_%s", d->name); }

int store_vgraphs_load(store *s) {
  if (!s->ncols) return STORE_OK;
  s->vg = calloc((size_t)s->ncols, sizeof *s->vg);
  if (!s->vg) return STORE_ENOMEM;
  for (int c = 0; c < s->ncols; c++) {
    struct vgraph *x = &s->vg[c];
    x->s = s;
    x->c = c;
    if (!graphed(s, c)) continue;
    const store_coldef *d = &s->cdef[c];
    char kind[96];
    kind_of(d, kind, sizeof kind);
    simage im;
    const char *why;
    int lr = simage_load(s->f, kind, &im, &why);
    if (lr == STORE_ENOMEM) return lr;
    if (lr != STORE_OK) {
      snprintf(x->note, sizeof x->note, "%s", why);
      continue;
    }
    uint64_t rows = (uint64_t)im.row[2];
    x->copy = im.copy;
    int hr = rows <= s->nbase && rows <= UINT32_MAX && ((uintptr_t)im.p & 3) == 0
                 ? hnsw_load(im.p, im.len, d->dim, vmetric(d), d->vtype == STORE_VT_F32 ? ANN_F32 : ANN_F16, vrow_fn,
                             x, &x->g)
                 : ANN_ECORRUPT;
    if (hr == ANN_ENOMEM) return STORE_ENOMEM;
    if (hr != ANN_OK || hnsw_count(x->g) != rows) {
      snprintf(x->note, sizeof x->note, "the saved graph of %s is damaged; its searches are exact until the next "
               "checkpoint saves one", d->name);
      hnsw_free(x->g);
      x->g = NULL;
      free(x->copy);
      x->copy = NULL;
      continue;
    }
    x->rows = rows;
  }
  return STORE_OK;
}

void store_vgraphs_free(store *s) {
  for (int c = 0; s->vg && c < s->ncols; c++) {
    hnsw_free(s->vg[c].g);
    free(s->vg[c].copy);
  }
  free(s->vg);
  s->vg = NULL;
}

/* (store_index.c's rule: enough rows past the graph) */
static int vg_wants(const store *s, int c, int force) {
  if (!graphed(s, c) || !s->vg) return 0;
  uint64_t have = s->vg[c].g ? s->vg[c].rows : 0;
  if (s->nbase <= have) return 0;
  return force || (s->nbase - have >= 256 && s->nbase - have >= have / 8);
}

int store_vgraphs_wanted(const store *s, int force) {
  for (int c = 0; c < s->ncols; c++)
    if (vg_wants(s, c, force)) return 1;
  return 0;
}

int store_vgraphs_save(store *s, h5w *w, int force, int threads, char *err, size_t errlen) {
  for (int c = 0; c < s->ncols; c++) {
    if (!vg_wants(s, c, force)) continue;
    struct vgraph *x = &s->vg[c];
    const store_coldef *d = &s->cdef[c];
    int hr = ANN_OK;
    if (!x->g) {
      hnsw_params p = {s->icfg.m, s->icfg.efc, 0, threads, 0};
      hr = hnsw_new(d->dim, vmetric(d), d->vtype == STORE_VT_F32 ? ANN_F32 : ANN_F16, &p, vrow_fn, x, &x->g);
    }
    if (hr == ANN_OK) {
      hnsw_set_threads(x->g, threads);
      hr = hnsw_build(x->g, (uint32_t)s->nbase);
    }
    uint8_t *img = NULL;
    size_t len = 0;
    if (hr == ANN_OK) hr = hnsw_save(x->g, &img, &len);
    if (hr != ANN_OK) {
      snprintf(err, errlen, "the graph of column %s: %s", d->name, x->g ? hnsw_errmsg(x->g) : "out of memory");
      free(img);
      return hr;
    }
    char kind[96];
    kind_of(d, kind, sizeof kind);
    int rc = simage_append(w, kind, img, len, (int64_t)s->nbase, 0, err, errlen);
    free(img);
    if (rc) return rc;
  }
  return STORE_OK;
}

uint64_t store_col_graph_rows(const store *s, int c) {
  return s->vg && c >= 0 && c < s->ncols && s->vg[c].g ? s->vg[c].rows : 0;
}

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

/* The rows from `from` on, row 0 being row `from` (the rows past a graph,
** for their sketch). */
typedef struct vtail {
  vscan *v;
  uint64_t from;
} vtail;

static const void *vtail_block(void *ctx, uint64_t pos, uint64_t *count) {
  const vtail *t = ctx;
  return vblock(t->v, t->from + pos, count);
}

static int allow_fn(void *ctx, uint64_t pos) { return allowed(ctx, pos); }
static int graph_allow(void *ctx, uint32_t i) { return allowed(ctx, i); }

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

int store_knn_col(store *s, int c, const void *q, uint64_t k, const store_filter *flt, const store_knn_opts *opt,
                  ann_res *out,
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
    const struct vgraph *x = s->vg ? &s->vg[c] : NULL;
    uint64_t ef = opt && opt->ef > 0 ? (uint64_t)opt->ef : (uint64_t)(s->icfg.ef > 0 ? s->icfg.ef : 64);
    uint64_t M = (uint64_t)(s->icfg.m > 0 ? s->icfg.m : 16);
    int fnflt = flt && !flt->bits && flt->fn;
    /* with a graph and no narrow filter, only the rows past the graph are
    ** listed (its estimate of the rows: the allowed ones, at most) */
    uint64_t from = 0;
    if (x && x->g && !(opt && opt->exact) && !fnflt &&
        (flt && flt->bits ? flt->nbits : store_count(s)) > 4 * (ef > k ? ef : k) * M)
      from = x->rows;
    const ann_sketch *sk = NULL; /* the column's, once store_sketch has built it */
    uint64_t *pos = malloc((npos - from + 1) * sizeof *pos), m = 0;
    if (!pos) return store_fail(s, STORE_ENOMEM, "out of memory");
    const bcol *mc = &s->umiss[c];
    const uint8_t *mspan = NULL; /* the missing flags of the chunk holding p, from mfirst on */
    uint64_t mfirst = 0, mend = 0;
    for (uint64_t p = from; p < npos; p++) {
      if (flt && flt->bits && !flt->bits[p / 8]) {
        p |= 7;
        continue;
      }
      if (p < s->nbase) {
        if (p >= mend || p < mfirst) { /* (a chunk's flags looked up once) */
          uint64_t ck = p / mc->crows;
          mfirst = p;
          mend = (ck + 1) * mc->crows < s->nbase ? (ck + 1) * mc->crows : s->nbase;
          mspan = ck < mc->nchunks && mc->caddr[ck] != UINT64_MAX
                      ? h5_file_span(s->f, mc->caddr[ck] + p % mc->crows, mend - p) : NULL;
        }
        if (!mspan || mspan[p - mfirst]) continue;
      } else {
        const drec *dr = s->delta[p - s->nbase];
        if (dr->dead || !dr->cv || !dr->cv[c].type) continue;
      }
      if (flt && flt->bits ? (flt->bits[p / 8] >> (p % 8) & 1) : fnflt ? 1 : store_pos_live(s, p))
        pos[m++] = p;
    }
    if (from) {
      /* the graph for the rows it covers (ef raised as the filter thins
      ** them), the rows past it scanned, the two merged */
      uint64_t all = flt && flt->bits ? flt->nbits : store_count(s);
      uint64_t pool = ef > k ? ef : k;
      uint64_t efx = pool * (npos / (all ? all : 1));
      if (efx > 100000) efx = 100000;
      if (efx < pool) efx = pool;
      uint64_t kk = k < x->rows ? k : x->rows;
      ann_hit *h = malloc((kk ? kk : 1) * sizeof *h);
      ann_res *t = malloc((k ? k : 1) * sizeof *t);
      int got = 0;
      rc = h && t ? ANN_OK : ANN_ENOMEM;
      if (rc == ANN_OK && kk) {
        got = hnsw_search(x->g, q, (int)kk, (int)efx, graph_allow, &v, h);
        if (got < 0) rc = got;
      }
      uint64_t nt = 0;
      if (rc == ANN_OK && m) { /* the rows past the graph: pruned by their sketch once built */
        vtail vt = {&v, from};
        ann_src ts = {src.dim, src.elem, src.metric, npos - from, vtail_block, &vt};
        const ann_sketch *tsk = m >= 256 && k <= m / 8 ? store_sketch_tail(s, 1 + c, from, &ts) : NULL;
        if (tsk) {
          for (uint64_t i = 0; i < m; i++) pos[i] -= from;
          rc = ann_flat_gather_pruned(&ts, tsk, q, k, pos, m, t, &nt, NULL);
          for (uint64_t i = 0; i < nt; i++) t[i].pos += from;
        } else {
          rc = ann_flat_gather(&src, q, k, pos, m, t, &nt);
        }
      }
      if (rc == ANN_OK) { /* merge: both sorted by distance, then position */
        uint64_t a = 0, b = 0, o = 0;
        while (o < k && (a < (uint64_t)got || b < nt)) {
          ann_res ra = a < (uint64_t)got ? (ann_res){h[a].id, h[a].dist} : (ann_res){0, 0};
          if (a < (uint64_t)got && (b >= nt || !worse(&ra, &t[b]))) {
            out[o++] = ra;
            a++;
          } else {
            out[o++] = t[b++];
          }
        }
        *nout = o;
      }
      free(h);
      free(t);
      if (rc == ANN_OK && got < (int)kk) { /* the graph reached fewer than k allowed rows: scan them all */
        free(pos);
        store_knn_opts ex = {1, 0, 0};
        return store_knn_col(s, c, q, k, flt, &ex, out, nout);
      }
    } else if (m >= 256 && k <= m / 8 && (sk = store_sketch(s, 1 + c, &src)) != NULL) {
      /* the rows the column's sketch cannot rule out, scored exactly (a
      ** filter function first narrows the list, on this thread) */
      if (fnflt) {
        uint64_t j = 0;
        for (uint64_t i = 0; i < m; i++)
          if (allowed(&v, pos[i])) pos[j++] = pos[i];
        m = j;
      }
      rc = ann_flat_gather_pruned(&src, sk, q, k, pos, m, out, nout, NULL);
    } else if (m < npos / 2 && !fnflt) {
      rc = ann_flat_gather(&src, q, k, pos, m, out, nout);
    } else { /* (a filter function runs on the searching thread only: then one thread) */
      rc = ann_flat_search(&src, q, k, allow_fn, &v, fnflt ? 1 : 0, out, nout);
    }
    free(pos);
    if (rc != ANN_OK) return store_fail(s, STORE_ENOMEM, "out of memory");
    if (d->metric == STORE_L2)
      for (uint64_t i = 0; i < *nout; i++) out[i].dist = sqrtf(out[i].dist);
    return STORE_OK;
  }
  /* int8, bit, l1: row by row (a float row without a vector starts with
  ** NaN: vblock gives a float column's chunk whole) */
  uint64_t n = 0;
  for (uint64_t p = 0; p < npos;) {
    uint64_t cnt = npos - p;
    const uint8_t *rows = vblock(&v, p, &cnt);
    for (uint64_t j = 0; rows && j < cnt; j++) {
      const uint8_t *r = rows + j * v.width;
      if (d->vtype == STORE_VT_F32) {
        float f;
        memcpy(&f, r, 4);
        if (isnan(f)) continue;
      } else if (d->vtype == STORE_VT_F16) {
        uint16_t h;
        memcpy(&h, r, 2);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
      }
      if (allowed(&v, p + j)) heap_push(out, &n, k, (ann_res){p + j, dist_one(d, q, r)});
    }
    p += cnt;
  }
  qsort(out, n, sizeof *out, res_cmp);
  *nout = n;
  return STORE_OK;
}
