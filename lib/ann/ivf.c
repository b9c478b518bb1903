/*
** lib/ann/ivf.c - inverted-file index, flat or product-quantised, over
** caller-held rows (see ivf.h).
**
** Layout.  A trained index has nlist centroids (`cent`, nlist x dim f32)
** and one list per centroid.  A list holds the ids of its rows in the order
** they were added and, for IVF-PQ, a code of pq_m bytes per row (`codes`,
** row after row).  The PQ codebooks (`cb`) hold, for each of the pq_m
** sub-spaces of dsub = dim / pq_m coordinates, 256 centroids of dsub f32,
** stored coordinate-major: dsub rows of 256 values (see "Tables" below).
** Two bitmaps over the row ids, `present` and `deleted`, answer "is row i
** in the index" and "is it deleted"; they are always the index's own
** memory.  Deleted rows stay in their lists and are skipped by searches.
**
** Image (little-endian uint32 unless said otherwise):
**
**   0   "H5MIVF01"           8 bytes
**   8   version (1)          12  header size (80)
**   16  dim                  20  metric (ann_metric)
**   24  elem (ann_elem)      28  nlist (0: not trained)
**   32  pq_m (0: flat)       36  pq_bits (8; 0 when flat)
**   40  n (ids below n may   44  count (rows in the lists)
**       be present)
**   48  train_iters          52  train_sample (0: default)
**   56  rerank (0: 4 x k)    60  nlist asked for (0: the sqrt rule)
**   64  uint64 seed
**   72  uint64 0 (reserved)
**   80  centroids   nlist x dim f32
**       codebooks   pq_m x dsub x 256 f32 (PQ only): sub-space m,
**                   coordinate j, then the 256 entries' values
**       offsets     nlist + 1 uint32: list j is entries off[j] .. off[j+1]-1
**       ids         count uint32, list after list
**       deleted     (n + 31) / 32 uint32: bit i % 32 of word i / 32 is row i
**       codes       count x pq_m bytes, in the order of the ids (PQ only)
**   and the image ends exactly there.  Everything before the codes is
**   4-byte words, so in an aligned image every section is aligned.
**
** ivf_load checks the header against the caller's dim/metric/elem and the
** length against the header, then every centroid and codebook value
** (finite), the offsets (from 0, never decreasing, ending at count), every
** id (below n, in one list only) and the deleted bits (present rows only).
** After that a search can only index arrays within their bounds.  An
** aligned image on a little-endian host is searched in place; any other is
** copied once into an aligned buffer (words swapped on a big-endian host)
** and searched there.  The first write that needs to change the lists or
** quantisers copies them into memory the index owns (`own`).
**
** Training.  The coarse quantiser is Lloyd's k-means on a sample of the
** rows: all of them when n <= train_sample, else one row drawn with the
** seed from each of train_sample equal strata of [0, n) (rows are often
** ordered by time; strata keep every period represented).  Cosine rows are
** normalised first, so cosine is L2 k-means on the unit sphere.  The
** initial centroids are distinct sample rows chosen by a seeded shuffle;
** each iteration assigns every row to its nearest centroid (the threads
** share the rows; each row's answer depends on it alone), then moves each
** centroid to the mean of its rows, summed in double in row order.  A
** centroid left without rows is moved onto the row farthest from its own
** centroid.  The loop stops after train_iters updates or when no row
** changes centroid.  ANN_DOT assigns (in training and when adding rows)
** to the centroid of largest dot product instead, the rule its queries
** probe by: with L2 cells probed by dot product, recall@10 at nprobe 1 was
** 0.66 against 0.98 on bench_ivf's clustered data (5K x 64).  Centroids
** are still means; lists may be less even than L2 cells when row norms
** vary widely.
**
** PQ: each sample row's residual (row - its centroid) is cut into pq_m
** pieces; for each piece a k-means of 256 centroids over up to 65536
** residuals gives that sub-space's codebook.  A row's code is, per piece,
** the index of the codebook entry nearest its residual piece (L2).
**
** Tables.  Coarse distances (nlist rows of dim floats) and every distance
** returned come from the kernels/k.h batch kernels.  PQ works instead on
** 256-entry tables over pieces of a few coordinates: one piece against the
** 256 entries of its codebook (encoding, codebook k-means, the search
** tables).  The batch kernels reduce one row at a time, and a row shorter
** than their vector (under 8 floats for AVX2, 16 for AVX-512) costs them
** ~20 ns, against ~0.4 ns a row in pq_table's loop, which runs along the
** 256 entries of one coordinate at a time (hence the coordinate-major
** codebooks) and which the compiler vectorises.  Its results do not depend
** on the SIMD level.
**
** Search.  The query's distance to every centroid (L2 to the normalised
** query for cosine, squared L2 for L2, negative dot product for dot) picks
** the nprobe nearest lists.  IVF-Flat scores every live, allowed row of
** those lists exactly, through the callback.  IVF-PQ ranks them by
** asymmetric distance (the query against the decoded code, never
** decoding):
**   L2       |q - c - r|^2 = sum over pieces of |(q - c)_m - cb_m[code_m]|^2,
**            which is |q - c|^2 (the probe distance) plus, per piece,
**            |cb|^2 + 2 c_m.cb - 2 q_m.cb.  The first two terms do not
**            depend on the query: `pre` keeps them for every list, piece
**            and entry (nlist x pq_m x 1 KiB, built by ivf_train and
**            ivf_load), so a probed list costs pq_m x 256 additions to
**            the query's own -2 q.cb table.  When `pre` would exceed
**            IVF_PRE_MAX (64 MiB) each probed list gets its table of
**            |(q - c)_m - cb|^2 instead, 256 x dim operations.
**   cosine   the same with q normalised: for unit vectors |q - x|^2 =
**            2 (1 - cos), so the order is the cosine order (the rows were
**            normalised when encoded)
**   dot      -q.x = -q.c - sum over pieces of q_m . cb_m[code_m]: one table
**            per query, plus -q.c per list
** then re-scores the best max(rerank, k) exactly.  Every distance returned
** is therefore exact, and ties are broken by id everywhere (probes by list
** number), so results depend only on the index and the query.
**
** The best-k selections keep candidates in a buffer of 2k; when it is full
** a quickselect keeps the k best and remembers the worst of them, below
** which later candidates must fall to be kept.  Distances that are NaN
** count as +inf, so the order is total.
**
** Threads.  ivf_search allocates its working memory per call and writes
** nothing shared, so searches run concurrently.  ivf_train's assignment
** passes and ivf_build's encoding run on util_parallel_for; every result
** is written to the slot of its row and merged in row order, so the index
** is the same for any number of threads.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ann_int.h"
#include "ivf.h"
#include "k.h"
#include "util/le.h"
#include "util/pool.h"

#define IVF_MAGIC "H5MIVF01"
#define IVF_VERSION 1
#define IVF_HDR 80
#define IVF_NONE UINT32_MAX
#define IVF_MAX_NLIST (1u << 24)
#define IVF_MAX_ITERS 1000
#define IVF_KSUB 256        /* codebook entries per sub-space (8-bit codes) */
#define IVF_PQ_SAMPLE 65536 /* residuals the codebooks train on, at most */
#define IVF_CHUNK 256       /* rows per task of a parallel loop */
#define IVF_PRE_MAX (64u << 20) /* bytes of precomputed list terms, at most */
#define IVF_DEFAULT_ITERS 20
#define IVF_DEFAULT_SEED 0x5eed1f0a6c93b2d7ull

static const ann_img ivf_img = {IVF_MAGIC, IVF_VERSION, IVF_HDR, "IVF"};

/* a candidate: distance, then id (the tie-break) */
typedef struct hit {
  float d;
  uint32_t id;
} hit;

/* One inverted list.  While the index is not `owned` its arrays point into
** the loaded image; otherwise they are malloc'd, cap entries of room. */
typedef struct ivf_list {
  uint32_t *ids;
  uint8_t *codes; /* n x pq_m (PQ only) */
  uint32_t n, cap;
} ivf_list;

/* The index.  Owns everything except vec/ctx and, while !owned, the image
** that cent, cb and the lists point into.  `copy` is an aligned copy of an
** image that could not be used in place (owned by the index). */
struct ivf {
  ann_base base; /* the rows, their kernels, the last error's message */
  int broken; /* ivf_new/ivf_load failed: only errmsg and free work */
  uint32_t nlist_req, sample_req;
  int iters, rerank, threads;
  uint64_t seed;
  uint32_t pq_m, dsub; /* pq_m 0: IVF-Flat */

  uint32_t nlist;  /* 0: not trained */
  float *cent;     /* nlist x dim */
  float *cb;       /* pq_m x dsub x 256 */
  float *pre;      /* NULL, or nlist x pq_m x 256: see "Search" */
  ivf_list *lists; /* nlist, always malloc'd */
  int owned;       /* cent, cb and the lists' arrays are ours */
  uint8_t *copy;

  uint32_t n;        /* ids below n have bits in the bitmaps */
  uint32_t count;    /* rows in the lists, deleted included */
  uint32_t *present; /* bitmaps of (n + 31) / 32 words, always ours */
  uint32_t *deleted;
  size_t wcap; /* words the bitmaps have room for */
};

/* ---- small helpers ------------------------------------------------------ */

/* n 4-byte words (uint32 or f32) from host order to the image, advancing
** *p past them */
static void wr_words(uint8_t **p, const void *src, size_t n) {
  util_put_le32s(*p, src, n);
  *p += n * 4;
}

/* xorshift64*: the sampling and initialisation stream */
static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd_init(uint64_t seed, uint64_t stream) {
  uint64_t s = (seed ^ (stream * 0x9e3779b97f4a7c15ull)) | 1;
  for (int i = 0; i < 4; i++) rnd(&s); /* spread nearby seeds apart */
  return s;
}

static inline int bit(const uint32_t *b, uint32_t i) { return (int)(b[i >> 5] >> (i & 31) & 1); }
static inline void bit_set(uint32_t *b, uint32_t i) { b[i >> 5] |= 1u << (i & 31); }
static inline size_t words(uint32_t n) { return ((size_t)n + 31) / 32; }

static inline int hit_lt(hit a, hit b) { return a.d < b.d || (a.d == b.d && a.id < b.id); }

static int hit_cmp(const void *pa, const void *pb) {
  hit a = *(const hit *)pa, b = *(const hit *)pb;
  return hit_lt(a, b) ? -1 : hit_lt(b, a) ? 1 : 0;
}

static inline void hit_swap(hit *a, uint32_t i, uint32_t j) {
  hit t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* Quickselect: reorder a[0..n) (distinct keys) so that a[k-1] is the k-th
** best and a[0..k-1) the better ones, in no order.  1 <= k <= n. */
static void select_k(hit *a, uint32_t n, uint32_t k) {
  uint32_t lo = 0, hi = n - 1, want = k - 1;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (hit_lt(a[mid], a[lo])) hit_swap(a, mid, lo);
    if (hit_lt(a[hi], a[lo])) hit_swap(a, hi, lo);
    if (hit_lt(a[mid], a[hi])) hit_swap(a, mid, hi); /* a[hi]: median of 3 */
    hit p = a[hi];
    uint32_t s = lo;
    for (uint32_t i = lo; i < hi; i++)
      if (hit_lt(a[i], p)) hit_swap(a, i, s++);
    hit_swap(a, s, hi);
    if (s == want) return;
    if (s < want)
      lo = s + 1;
    else
      hi = s - 1;
  }
}

/* The k best of a stream of candidates: a buffer of 2k, cut back to the k
** best whenever it fills.  Memory (2k hits) is the caller's. */
typedef struct best {
  hit *a;
  uint32_t n, k;
  int bounded; /* bound: the worst of the k best so far */
  hit bound;
} best;

static void best_cut(best *b) {
  if (b->n <= b->k) return;
  select_k(b->a, b->n, b->k);
  b->n = b->k;
  b->bound = b->a[b->k - 1];
  b->bounded = 1;
}

static inline void best_add(best *b, float d, uint32_t id) {
  hit x = {isnan(d) ? INFINITY : d, id};
  if (b->bounded && !hit_lt(x, b->bound)) return;
  b->a[b->n++] = x;
  if ((size_t)b->n == 2 * (size_t)b->k) best_cut(b);
}

/* the k best (or all, if fewer), sorted; returns their number */
static uint32_t best_done(best *b) {
  best_cut(b);
  qsort(b->a, b->n, sizeof *b->a, hit_cmp);
  return b->n;
}

/* the first index of the smallest of d[0..n) (NaN never wins) */
static uint32_t argmin(const float *d, uint32_t n) {
  uint32_t b = 0;
  float bd = INFINITY;
  for (uint32_t i = 0; i < n; i++)
    if (d[i] < bd) {
      bd = d[i];
      b = i;
    }
  return b;
}

/* the nearest of nc centroids c (dim each) to x: by squared L2, or (ip)
** by largest dot product; d: nc floats of scratch */
static uint32_t nearest(const k_ops *k, int ip, const float *x, const float *c, uint32_t nc,
                        size_t dim, float *d) {
  if (!ip) {
    k->l2sq_f32_batch(x, c, nc, dim, d);
    return argmin(d, nc);
  }
  k->dot_f32_batch(x, c, nc, dim, d);
  for (uint32_t j = 0; j < nc; j++) d[j] = -d[j];
  return argmin(d, nc);
}

/* One piece x (ds floats) against the 256 entries of a coordinate-major
** codebook ct (ds rows of 256): squared L2, or minus the dot product. */
static void pq_table(const float *restrict x, const float *restrict ct, size_t ds, int dot,
                     float *restrict out) {
  memset(out, 0, IVF_KSUB * sizeof *out);
  for (size_t j = 0; j < ds; j++) {
    const float xj = x[j], *r = ct + j * IVF_KSUB;
    if (dot) {
      for (int c = 0; c < IVF_KSUB; c++) out[c] -= xj * r[c];
    } else {
      for (int c = 0; c < IVF_KSUB; c++) {
        float t = xj - r[c];
        out[c] += t * t;
      }
    }
  }
}

/* ct (ds x nc) = the transpose of c (nc x ds) */
static void transpose(const float *c, size_t nc, size_t ds, float *ct) {
  for (size_t e = 0; e < nc; e++)
    for (size_t j = 0; j < ds; j++) ct[j * nc + e] = c[e * ds + j];
}

static void normalise(const k_ops *k, float *x, size_t dim) {
  double nn = k->dot_f32(x, x, dim);
  if (!(nn > 0) || !isfinite(nn)) return;
  float s = (float)(1.0 / sqrt(nn));
  for (size_t j = 0; j < dim; j++) x[j] *= s;
}

/* row id as f32 into x, normalised for cosine; 0 if the callback has
** nothing (x is then zeros) */
static int load_row(const ivf *v, uint32_t id, float *x) {
  if (!ann_row_f32(&v->base, id, x)) return 0;
  if (v->base.metric == ANN_COSINE) normalise(v->base.k, x, (size_t)v->base.dim);
  return 1;
}

/* ---- k-means ------------------------------------------------------------ */

/* One k-means problem: n points of dim floats, k centroids.  Owned by the
** caller of kmeans(); assign/dist are per point. */
typedef struct km {
  const k_ops *k;
  const float *x;
  size_t n, dim;
  float *c;
  uint32_t nc;
  uint32_t *assign;
  float *dist; /* squared distance to the assigned centroid */
  float *ct;   /* NULL, or nc = 256: c transposed, for pq_table */
  int ip;      /* assign by largest dot product (dist stays squared L2) */
} km;

static int km_assign_chunk(void *arg, size_t chunk) {
  km *m = arg;
  float *d = malloc((size_t)m->nc * sizeof *d);
  if (!d) return ANN_ENOMEM;
  size_t lo = chunk * IVF_CHUNK, hi = lo + IVF_CHUNK < m->n ? lo + IVF_CHUNK : m->n;
  for (size_t i = lo; i < hi; i++) {
    uint32_t b;
    if (m->ct) {
      pq_table(m->x + i * m->dim, m->ct, m->dim, 0, d);
      b = argmin(d, IVF_KSUB);
    } else {
      b = nearest(m->k, m->ip, m->x + i * m->dim, m->c, m->nc, m->dim, d);
      if (m->ip) d[b] = m->k->l2sq_f32(m->x + i * m->dim, m->c + (size_t)b * m->dim, m->dim);
    }
    m->assign[i] = b;
    m->dist[i] = isnan(d[b]) ? INFINITY : d[b];
  }
  free(d);
  return 0;
}

static int km_assign(km *m, int threads) {
  if (m->ct) transpose(m->c, m->nc, m->dim, m->ct);
  size_t chunks = (m->n + IVF_CHUNK - 1) / IVF_CHUNK;
  return util_parallel_for(chunks > 1 ? threads : 1, chunks, km_assign_chunk, m);
}

/* Lloyd's k-means (see the top of the file); on return m->assign and
** m->dist belong to the final centroids.  n >= 1; nc may exceed n (the
** extra centroids repeat rows). */
static int kmeans(km *m, int iters, uint64_t seed, int threads) {
  size_t n = m->n, dim = m->dim;
  uint32_t nc = m->nc;
  uint32_t *perm = malloc(n * sizeof *perm);
  uint32_t *prev = malloc(n * sizeof *prev);
  uint32_t *cnt = malloc((size_t)nc * sizeof *cnt);
  double *sum = malloc((size_t)nc * dim * sizeof *sum);
  int rc = ANN_ENOMEM;
  if (!perm || !prev || !cnt || !sum) goto out;

  /* distinct rows, by a partial Fisher-Yates shuffle */
  uint64_t rs = rnd_init(seed, 1);
  for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
  for (uint32_t j = 0; j < nc; j++) {
    size_t r = j;
    if (j < n) {
      r = j + (size_t)(rnd(&rs) % (n - j));
      uint32_t t = perm[j];
      perm[j] = perm[r];
      perm[r] = t;
    }
    memcpy(m->c + (size_t)j * dim, m->x + (size_t)perm[j % n] * dim, dim * sizeof(float));
  }

  for (int it = 0;; it++) {
    if ((rc = km_assign(m, threads)) != 0) goto out;
    if (it == iters) break;
    if (it > 0 && memcmp(prev, m->assign, n * sizeof *prev) == 0) break;
    memcpy(prev, m->assign, n * sizeof *prev);
    memset(cnt, 0, (size_t)nc * sizeof *cnt);
    memset(sum, 0, (size_t)nc * dim * sizeof *sum);
    for (size_t i = 0; i < n; i++) {
      double *s = sum + (size_t)m->assign[i] * dim;
      const float *x = m->x + i * dim;
      cnt[m->assign[i]]++;
      for (size_t j = 0; j < dim; j++) s[j] += x[j];
    }
    for (uint32_t c = 0; c < nc; c++) {
      float *cc = m->c + (size_t)c * dim;
      if (cnt[c]) {
        for (size_t j = 0; j < dim; j++) cc[j] = (float)(sum[(size_t)c * dim + j] / cnt[c]);
        continue;
      }
      /* empty: take over the row farthest from its centroid */
      size_t far = 0;
      for (size_t i = 1; i < n; i++)
        if (m->dist[i] > m->dist[far]) far = i;
      if (!(m->dist[far] > 0)) continue; /* every row sits on a centroid */
      memcpy(cc, m->x + far * dim, dim * sizeof *cc);
      m->dist[far] = 0;
    }
  }
  rc = ANN_OK;
out:
  free(perm);
  free(prev);
  free(cnt);
  free(sum);
  return rc;
}

/* ---- memory ------------------------------------------------------------- */

/* Forget the quantisers and lists (the index becomes untrained). */
static void drop_lists(ivf *v) {
  if (v->owned) {
    for (uint32_t j = 0; v->lists && j < v->nlist; j++) {
      free(v->lists[j].ids);
      free(v->lists[j].codes);
    }
    free(v->cent);
    free(v->cb);
  }
  free(v->lists);
  free(v->copy);
  free(v->pre);
  v->lists = NULL;
  v->cent = v->cb = v->pre = NULL;
  v->copy = NULL;
  v->nlist = 0;
  v->owned = 1;
}

static void *dup_mem(const void *p, size_t size) {
  void *q = malloc(size ? size : 1);
  if (q && size) memcpy(q, p, size);
  return q;
}

/* Take the quantisers and lists into owned memory (copy-on-write of a
** loaded image). */
static int own(ivf *v) {
  if (v->owned) return ANN_OK;
  size_t cbn = v->pq_m ? (size_t)IVF_KSUB * v->base.dim : 0;
  float *cent = dup_mem(v->cent, (size_t)v->nlist * v->base.dim * sizeof *cent);
  float *cb = cbn ? dup_mem(v->cb, cbn * sizeof *cb) : NULL;
  ivf_list *nl = calloc(v->nlist, sizeof *nl);
  int ok = cent && (cb || !cbn) && nl;
  for (uint32_t j = 0; ok && j < v->nlist; j++) {
    const ivf_list *l = &v->lists[j];
    nl[j].n = nl[j].cap = l->n;
    if (!l->n) continue;
    nl[j].ids = dup_mem(l->ids, (size_t)l->n * 4);
    if (v->pq_m) nl[j].codes = dup_mem(l->codes, (size_t)l->n * v->pq_m);
    ok = nl[j].ids && (nl[j].codes || !v->pq_m);
  }
  if (!ok) {
    for (uint32_t j = 0; nl && j < v->nlist; j++) {
      free(nl[j].ids);
      free(nl[j].codes);
    }
    free(nl);
    free(cent);
    free(cb);
    return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
  }
  free(v->lists);
  free(v->copy);
  v->copy = NULL;
  v->lists = nl;
  v->cent = cent;
  v->cb = cb;
  v->owned = 1;
  return ANN_OK;
}

/* room in the bitmaps for ids below n (new bits clear) */
static int reserve_rows(ivf *v, uint32_t n) {
  if (n <= v->n) return ANN_OK;
  size_t need = words(n), have = words(v->n);
  if (need > v->wcap) {
    size_t cap = v->wcap * 2 > need ? v->wcap * 2 : need;
    uint32_t *p = realloc(v->present, cap * 4);
    if (!p) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    v->present = p;
    uint32_t *d = realloc(v->deleted, cap * 4);
    if (!d) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    v->deleted = d;
    v->wcap = cap;
  }
  memset(v->present + have, 0, (need - have) * 4);
  memset(v->deleted + have, 0, (need - have) * 4);
  v->n = n;
  return ANN_OK;
}

/* append row id (its code: pq_m bytes) to list j */
static int list_push(ivf *v, uint32_t j, uint32_t id, const uint8_t *code) {
  ivf_list *l = &v->lists[j];
  if (l->n == l->cap) {
    uint32_t cap = l->cap ? (l->cap > UINT32_MAX / 2 ? UINT32_MAX : l->cap * 2) : 8;
    uint32_t *ids = realloc(l->ids, (size_t)cap * 4);
    if (!ids) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    l->ids = ids;
    if (v->pq_m) {
      uint8_t *c = realloc(l->codes, (size_t)cap * v->pq_m);
      if (!c) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
      l->codes = c;
    }
    l->cap = cap;
  }
  l->ids[l->n] = id;
  if (v->pq_m) memcpy(l->codes + (size_t)l->n * v->pq_m, code, v->pq_m);
  l->n++;
  bit_set(v->present, id);
  v->count++;
  return ANN_OK;
}

/* ---- encoding ----------------------------------------------------------- */

/* floats of scratch encode() needs */
static size_t enc_floats(const ivf *v) {
  return (size_t)v->base.dim + (v->nlist > IVF_KSUB ? v->nlist : IVF_KSUB);
}

/* Row id's list and (PQ) code.  s: enc_floats() of scratch. */
static void encode(const ivf *v, uint32_t id, float *s, uint32_t *list, uint8_t *code) {
  float *x = s, *d = s + v->base.dim;
  size_t dim = (size_t)v->base.dim;
  load_row(v, id, x);
  uint32_t c = nearest(v->base.k, v->base.metric == ANN_DOT, x, v->cent, v->nlist, dim, d);
  *list = c;
  if (!v->pq_m) return;
  const float *cc = v->cent + (size_t)c * dim;
  for (size_t j = 0; j < dim; j++) x[j] -= cc[j];
  for (uint32_t m = 0; m < v->pq_m; m++) {
    pq_table(x + (size_t)m * v->dsub, v->cb + (size_t)m * IVF_KSUB * v->dsub, v->dsub, 0, d);
    code[m] = (uint8_t)argmin(d, IVF_KSUB);
  }
}

typedef struct enc_job {
  const ivf *v;
  const uint32_t *ids;
  size_t m;
  uint32_t *list;
  uint8_t *codes;
} enc_job;

static int encode_chunk(void *arg, size_t chunk) {
  enc_job *e = arg;
  float *s = malloc(enc_floats(e->v) * sizeof *s);
  if (!s) return ANN_ENOMEM;
  size_t lo = chunk * IVF_CHUNK, hi = lo + IVF_CHUNK < e->m ? lo + IVF_CHUNK : e->m;
  for (size_t j = lo; j < hi; j++)
    encode(e->v, e->ids[j], s, &e->list[j], e->codes + j * e->v->pq_m);
  free(s);
  return 0;
}

/* The query-independent part of the L2 tables (see "Search" at the top):
** pre[l][m][j] = |cb_mj|^2 + 2 c_lm . cb_mj, when PQ, not dot, and at
** most IVF_PRE_MAX bytes; else v->pre stays NULL.  Needs cent and cb. */
static int build_pre(ivf *v) {
  free(v->pre);
  v->pre = NULL;
  if (!v->nlist || !v->pq_m || v->base.metric == ANN_DOT) return ANN_OK;
  size_t per = (size_t)v->pq_m * IVF_KSUB, ds = v->dsub;
  if ((uint64_t)v->nlist * per * sizeof(float) > IVF_PRE_MAX) return ANN_OK;
  float *pre = malloc((size_t)v->nlist * per * sizeof *pre);
  float *norms = malloc(per * sizeof *norms), *zero = calloc(ds, sizeof *zero);
  if (!pre || !norms || !zero) {
    free(pre);
    free(norms);
    free(zero);
    return ANN_ENOMEM;
  }
  for (size_t m = 0; m < v->pq_m; m++) /* |cb|^2: the distance from 0 */
    pq_table(zero, v->cb + m * IVF_KSUB * ds, ds, 0, norms + m * IVF_KSUB);
  for (size_t l = 0; l < v->nlist; l++)
    for (size_t m = 0; m < v->pq_m; m++) {
      float *o = pre + l * per + m * IVF_KSUB;
      const float *nm = norms + m * IVF_KSUB;
      pq_table(v->cent + l * (size_t)v->base.dim + m * ds, v->cb + m * IVF_KSUB * ds, ds, 1, o);
      for (int j = 0; j < IVF_KSUB; j++) o[j] = nm[j] - 2 * o[j]; /* o was -c.cb */
    }
  free(norms);
  free(zero);
  v->pre = pre;
  return ANN_OK;
}

/* ---- public: life cycle ------------------------------------------------- */

/* a handle with the common fields set; NULL when out of memory */
static ivf *alloc_handle(int dim, ann_metric metric, ann_elem elem, ann_vec_fn vec,
                         void *ctx) {
  ivf *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  ann_base_init(&v->base, dim, metric, elem, vec, ctx);
  v->iters = IVF_DEFAULT_ITERS;
  v->threads = 1;
  v->seed = IVF_DEFAULT_SEED;
  v->owned = 1;
  return v;
}

/* pq_m against dim; 0 (IVF-Flat) is fine */
static int check_pq(ivf *v, int dim, long pq_m) {
  if (pq_m < 0 || pq_m > dim)
    return ann_fail(&v->base, ANN_EINVAL, "pq_m must be 0..dim (%d), not %ld", dim, pq_m);
  if (pq_m && dim % pq_m)
    return ann_fail(&v->base, ANN_EINVAL, "dim %d is not a multiple of pq_m %ld", dim, pq_m);
  return ANN_OK;
}

static void set_pq(ivf *v, uint32_t pq_m) {
  v->pq_m = pq_m;
  v->dsub = pq_m ? (uint32_t)v->base.dim / pq_m : 0;
}

int ivf_new(int dim, ann_metric metric, ann_elem elem, const ivf_params *p, ann_vec_fn vec,
            void *ctx, ivf **out) {
  *out = NULL;
  ivf *v = alloc_handle(dim, metric, elem, vec, ctx);
  if (!v) return ANN_ENOMEM;
  *out = v;
  ivf_params d = {0, 0, 0, 0, 0, 0, 0, 0};
  if (!p) p = &d;
  int rc = ann_check_args(&v->base);
  if (rc == ANN_OK && p->nlist > IVF_MAX_NLIST)
    rc = ann_fail(&v->base, ANN_EINVAL, "nlist must be at most %u, not %u", IVF_MAX_NLIST, p->nlist);
  if (rc == ANN_OK) rc = check_pq(v, dim, p->pq_m);
  if (rc == ANN_OK && p->pq_bits != 0 && p->pq_bits != 8)
    rc = ann_fail(&v->base, ANN_EINVAL, "pq_bits must be 8, not %d", p->pq_bits);
  if (rc == ANN_OK && (p->train_iters < 0 || p->train_iters > IVF_MAX_ITERS))
    rc = ann_fail(&v->base, ANN_EINVAL, "train_iters must be 1..%d, not %d", IVF_MAX_ITERS,
              p->train_iters);
  if (rc == ANN_OK && p->threads < 0) rc = ann_fail(&v->base, ANN_EINVAL, "threads must not be negative");
  if (rc == ANN_OK && p->rerank < 0) rc = ann_fail(&v->base, ANN_EINVAL, "rerank must not be negative");
  if (rc != ANN_OK) {
    v->broken = 1;
    return rc;
  }
  v->nlist_req = p->nlist;
  set_pq(v, (uint32_t)p->pq_m);
  if (p->train_iters) v->iters = p->train_iters;
  if (p->seed) v->seed = p->seed;
  if (p->threads) v->threads = p->threads;
  v->sample_req = p->train_sample;
  v->rerank = p->rerank;
  return ANN_OK;
}

void ivf_free(ivf *v) {
  if (!v) return;
  drop_lists(v);
  free(v->present);
  free(v->deleted);
  free(v);
}

const char *ivf_errmsg(const ivf *v) { return v ? v->base.err : "out of memory"; }

uint32_t ivf_count(const ivf *v) { return v && !v->broken ? v->count : 0; }

uint32_t ivf_nlist(const ivf *v) { return v && !v->broken ? v->nlist : 0; }

/* ---- public: training --------------------------------------------------- */

/* Train the PQ codebooks on the residuals of x's rows (n of them, assigned
** to v->cent as in `assign`). */
static int train_pq(ivf *v, const float *x, size_t n, const uint32_t *assign) {
  size_t dim = (size_t)v->base.dim, ds = v->dsub;
  size_t np = n < IVF_PQ_SAMPLE ? n : IVF_PQ_SAMPLE;
  float *res = malloc(np * dim * sizeof *res), *sub = malloc(np * ds * sizeof *sub);
  uint32_t *a = malloc(np * sizeof *a);
  float *dist = malloc(np * sizeof *dist);
  float *cb = malloc((size_t)IVF_KSUB * dim * sizeof *cb);
  float *c = malloc((size_t)IVF_KSUB * ds * sizeof *c);
  int rc = ANN_ENOMEM;
  if (!res || !sub || !a || !dist || !cb || !c) goto out;
  for (size_t i = 0; i < np; i++) { /* evenly spread over the sample */
    size_t r = (size_t)((uint64_t)i * n / np);
    const float *row = x + r * dim, *cc = v->cent + (size_t)assign[r] * dim;
    for (size_t j = 0; j < dim; j++) res[i * dim + j] = row[j] - cc[j];
  }
  for (uint32_t m = 0; m < v->pq_m; m++) {
    for (size_t i = 0; i < np; i++)
      memcpy(sub + i * ds, res + i * dim + m * ds, ds * sizeof *sub);
    km pm = {v->base.k, sub, np, ds, c, IVF_KSUB, a, dist, cb + (size_t)m * IVF_KSUB * ds, 0};
    if ((rc = kmeans(&pm, v->iters, v->seed + 1 + m, v->threads)) != ANN_OK) goto out;
    transpose(c, IVF_KSUB, ds, pm.ct); /* the final centroids */
  }
  v->cb = cb;
  cb = NULL;
  rc = ANN_OK;
out:
  free(res);
  free(sub);
  free(a);
  free(dist);
  free(cb);
  free(c);
  return rc;
}

int ivf_train(ivf *v, uint32_t n) {
  if (!v || v->broken) return ANN_EINVAL;
  v->base.err[0] = 0;
  if (v->count) return ann_fail(&v->base, ANN_EINVAL, "the index holds rows: train a new one");
  if (n == 0) return ann_fail(&v->base, ANN_EINVAL, "no rows to train on");
  uint64_t nl = v->nlist_req ? v->nlist_req : (uint64_t)llround(sqrt((double)n));
  if (nl < 1) nl = 1;
  uint64_t cap = v->sample_req ? v->sample_req : 256 * nl;
  size_t s = (size_t)(cap < n ? cap : n), dim = (size_t)v->base.dim;
  float *x = malloc(s * dim * sizeof *x);
  uint32_t *assign = malloc(s * sizeof *assign);
  float *dist = malloc(s * sizeof *dist);
  float *cent = NULL;
  int rc = ANN_ENOMEM;
  if (!x || !assign || !dist) goto out;
  /* the sample: every row, or one from each of s strata */
  uint64_t rs = rnd_init(v->seed, 0);
  size_t got = 0;
  for (size_t j = 0; j < s; j++) {
    uint32_t row = (uint32_t)j;
    if (s < n) {
      uint64_t lo = (uint64_t)j * n / s, hi = (uint64_t)(j + 1) * n / s;
      row = (uint32_t)(lo + rnd(&rs) % (hi - lo));
    }
    got += (size_t)load_row(v, row, x + got * dim);
  }
  if (got == 0) {
    rc = ann_fail(&v->base, ANN_EINVAL, "none of the %u rows could be read", n);
    goto out;
  }
  if (nl > got) nl = got;
  drop_lists(v);
  if (!(cent = malloc((size_t)nl * dim * sizeof *cent))) goto out;
  km cm = {v->base.k, x, got, dim, cent, (uint32_t)nl, assign, dist, NULL, v->base.metric == ANN_DOT};
  if ((rc = kmeans(&cm, v->iters, v->seed, v->threads)) != ANN_OK) goto out;
  v->cent = cent;
  if (v->pq_m && (rc = train_pq(v, x, got, assign)) != ANN_OK) goto out;
  rc = ANN_ENOMEM;
  if (!(v->lists = calloc((size_t)nl, sizeof *v->lists))) goto out;
  v->nlist = (uint32_t)nl;
  cent = NULL;
  if ((rc = build_pre(v)) != ANN_OK) drop_lists(v);
out:
  if (rc != ANN_OK && cent) { /* not trained after all */
    free(v->cb);
    v->cent = v->cb = NULL;
    free(cent);
  }
  free(x);
  free(assign);
  free(dist);
  if (rc == ANN_ENOMEM) ann_fail(&v->base, rc, "out of memory");
  return rc;
}

/* ---- public: writing ---------------------------------------------------- */

int ivf_add(ivf *v, uint32_t i) {
  if (!v || v->broken) return ANN_EINVAL;
  v->base.err[0] = 0;
  if (!v->nlist) return ann_fail(&v->base, ANN_EINVAL, "the index is not trained");
  if (i == IVF_NONE) return ann_fail(&v->base, ANN_EINVAL, "row id %u is reserved", i);
  if (i < v->n && bit(v->present, i))
    return ann_fail(&v->base, ANN_EINVAL, "row %u is already in the index", i);
  int rc = own(v);
  if (rc == ANN_OK) rc = reserve_rows(v, i + 1);
  if (rc != ANN_OK) return rc;
  float *s = malloc(enc_floats(v) * sizeof *s);
  uint8_t *code = malloc(v->pq_m + 1);
  uint32_t list;
  if (!s || !code)
    rc = ann_fail(&v->base, ANN_ENOMEM, "out of memory");
  else {
    encode(v, i, s, &list, code);
    rc = list_push(v, list, i, code);
  }
  free(s);
  free(code);
  return rc;
}

int ivf_build(ivf *v, uint32_t n) {
  if (!v || v->broken) return ANN_EINVAL;
  v->base.err[0] = 0;
  int rc = ANN_OK;
  if (!v->nlist) {
    if (n == 0) return ANN_OK;
    if ((rc = ivf_train(v, n)) != ANN_OK) return rc;
  }
  if ((rc = reserve_rows(v, n)) != ANN_OK) return rc;
  size_t m = 0;
  for (uint32_t i = 0; i < n; i++) m += !bit(v->present, i);
  if (m == 0) return ANN_OK;
  if ((rc = own(v)) != ANN_OK) return rc;
  uint32_t *ids = malloc(m * sizeof *ids);
  enc_job e = {v, ids, m, malloc(m * sizeof *e.list), malloc(m * v->pq_m + 1)};
  if (!ids || !e.list || !e.codes) {
    rc = ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    goto out;
  }
  for (uint32_t i = 0, j = 0; i < n; i++)
    if (!bit(v->present, i)) ids[j++] = i;
  size_t chunks = (m + IVF_CHUNK - 1) / IVF_CHUNK;
  if (util_parallel_for(chunks > 1 ? v->threads : 1, chunks, encode_chunk, &e) != 0) {
    rc = ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    goto out;
  }
  /* in id order, whatever thread encoded what */
  for (size_t j = 0; j < m && rc == ANN_OK; j++)
    rc = list_push(v, e.list[j], ids[j], e.codes + j * v->pq_m);
out:
  free(ids);
  free(e.list);
  free(e.codes);
  return rc;
}

int ivf_delete(ivf *v, uint32_t i) {
  if (!v || v->broken) return ANN_EINVAL;
  v->base.err[0] = 0;
  if (i >= v->n || !bit(v->present, i))
    return ann_fail(&v->base, ANN_EINVAL, "row %u is not in the index", i);
  bit_set(v->deleted, i);
  return ANN_OK;
}

/* ---- search ------------------------------------------------------------- */

typedef int (*ivf_filter_fn)(void *fctx, uint32_t i);

/* IVF-Flat: every live, allowed row of list l, scored exactly */
static void scan_flat(const ivf *v, const ivf_list *l, const float *q, ivf_filter_fn filter,
                      void *fctx, best *res) {
  for (uint32_t e = 0; e < l->n; e++) {
    uint32_t id = l->ids[e];
    if (bit(v->deleted, id) || (filter && !filter(fctx, id))) continue;
    best_add(res, ann_dist_row(&v->base, q, id), id);
  }
}

/* IVF-PQ: every live, allowed row of list l, by its code: bias plus one
** table entry per piece (lut: pq_m x 256) */
static void scan_pq(const ivf *v, const ivf_list *l, const float *lut, float bias,
                    ivf_filter_fn filter, void *fctx, best *cand) {
  uint32_t pm = v->pq_m;
  for (uint32_t e = 0; e < l->n; e++) {
    uint32_t id = l->ids[e];
    if (bit(v->deleted, id) || (filter && !filter(fctx, id))) continue;
    const uint8_t *c = l->codes + (size_t)e * pm;
    float d = bias;
    for (uint32_t m = 0; m < pm; m++) d += lut[(size_t)m * IVF_KSUB + c[m]];
    best_add(cand, d, id);
  }
}

/* the search tables, piece by piece: squared L2 from t = q - c to each
** codebook entry, or minus its dot product with t (dot, and L2 with pre) */
static void pq_tables(const ivf *v, const float *t, int dot, float *lut) {
  for (uint32_t m = 0; m < v->pq_m; m++)
    pq_table(t + (size_t)m * v->dsub, v->cb + (size_t)m * IVF_KSUB * v->dsub, v->dsub, dot,
             lut + (size_t)m * IVF_KSUB);
}

int ivf_search(const ivf *v, const float *q, int k, int nprobe, int rerank,
               ivf_filter_fn filter, void *fctx, ann_hit *out) {
  if (!v || v->broken) return ANN_EINVAL;
  if (k <= 0 || v->count == 0) return 0;
  if (!q || !out) return ANN_EINVAL;
  uint32_t kk = (uint32_t)k < v->count ? (uint32_t)k : v->count;
  uint32_t np = nprobe < 1 ? 1 : (uint32_t)nprobe > v->nlist ? v->nlist : (uint32_t)nprobe;
  uint64_t r = kk;
  if (v->pq_m) {
    r = rerank > 0 ? (uint64_t)rerank : v->rerank > 0 ? (uint64_t)v->rerank : 4 * (uint64_t)kk;
    if (r < kk) r = kk;
    if (r > v->count) r = v->count;
  }
  size_t dim = (size_t)v->base.dim, nl = v->nlist;
  size_t nf = 2 * dim + nl + 2 * (size_t)v->pq_m * IVF_KSUB;
  size_t nh = nl + 2 * (size_t)r + 2 * (size_t)kk;
  float *f = malloc(nf * sizeof *f + nh * sizeof(hit));
  if (!f) return ANN_ENOMEM;
  float *qn = f, *t = qn + dim, *cd = t + dim, *lut = cd + nl;
  float *qt = lut + (size_t)v->pq_m * IVF_KSUB;
  hit *probe = (hit *)(f + nf), *cmem = probe + nl, *rmem = cmem + 2 * r;

  /* the lists to probe */
  memcpy(qn, q, dim * sizeof *qn);
  if (v->base.metric == ANN_COSINE) normalise(v->base.k, qn, dim);
  if (v->base.metric == ANN_DOT)
    v->base.k->dot_f32_batch(qn, v->cent, nl, dim, cd);
  else
    v->base.k->l2sq_f32_batch(qn, v->cent, nl, dim, cd);
  for (uint32_t j = 0; j < nl; j++) {
    float d = v->base.metric == ANN_DOT ? -cd[j] : cd[j];
    probe[j] = (hit){isnan(d) ? INFINITY : d, j};
  }
  select_k(probe, (uint32_t)nl, np);
  qsort(probe, np, sizeof *probe, hit_cmp);

  best res = {rmem, 0, kk, 0, {0, 0}};
  if (!v->pq_m) {
    for (uint32_t p = 0; p < np; p++)
      scan_flat(v, &v->lists[probe[p].id], q, filter, fctx, &res);
  } else {
    best cand = {cmem, 0, (uint32_t)r, 0, {0, 0}};
    size_t per = (size_t)v->pq_m * IVF_KSUB;
    if (v->base.metric == ANN_DOT || v->pre) pq_tables(v, qn, 1, qt); /* -q.cb */
    for (uint32_t p = 0; p < np; p++) {
      uint32_t j = probe[p].id;
      const float *c = v->cent + (size_t)j * dim, *tab = qt;
      if (v->base.metric != ANN_DOT && v->pre) {
        const float *pre = v->pre + j * per;
        for (size_t i = 0; i < per; i++) lut[i] = pre[i] + 2 * qt[i];
        tab = lut;
      } else if (v->base.metric != ANN_DOT) {
        for (size_t i = 0; i < dim; i++) t[i] = qn[i] - c[i];
        pq_tables(v, t, 0, lut);
        tab = lut;
      }
      /* dot: -q.c; L2: |q - c|^2 with the pre terms, else 0 */
      float bias = v->base.metric == ANN_DOT || v->pre ? probe[p].d : 0;
      scan_pq(v, &v->lists[j], tab, bias, filter, fctx, &cand);
    }
    uint32_t nc = best_done(&cand);
    for (uint32_t i = 0; i < nc; i++) best_add(&res, ann_dist_row(&v->base, q, cmem[i].id), cmem[i].id);
  }
  uint32_t nr = best_done(&res);
  for (uint32_t i = 0; i < nr; i++) {
    out[i].id = rmem[i].id;
    out[i].dist = rmem[i].d;
  }
  free(f);
  return (int)nr;
}

/* ---- image -------------------------------------------------------------- */

int ivf_save(const ivf *v, uint8_t **img, size_t *len) {
  *img = NULL;
  *len = 0;
  if (!v || v->broken) return ANN_EINVAL;
  size_t dim = (size_t)v->base.dim, nl = v->nlist;
  size_t cbn = nl && v->pq_m ? (size_t)IVF_KSUB * dim : 0;
  uint32_t n = nl ? v->n : 0; /* untrained: no rows (a failed retraining may leave n) */
  size_t total = IVF_HDR + 4 * (nl * dim + cbn + nl + 1 + v->count + words(n)) +
                 (size_t)v->count * v->pq_m;
  uint8_t *p = malloc(total);
  if (!p) return ANN_ENOMEM;
  ann_hdr_put(p, &ivf_img, &v->base);
  util_put_le32(p + 28, v->nlist);
  util_put_le32(p + 32, v->pq_m);
  util_put_le32(p + 36, v->pq_m ? 8 : 0);
  util_put_le32(p + 40, n);
  util_put_le32(p + 44, v->count);
  util_put_le32(p + 48, (uint32_t)v->iters);
  util_put_le32(p + 52, v->sample_req);
  util_put_le32(p + 56, (uint32_t)v->rerank);
  util_put_le32(p + 60, v->nlist_req);
  util_put_le64(p + 64, v->seed);
  uint8_t *w = p + IVF_HDR;
  wr_words(&w, v->cent, nl * dim);
  wr_words(&w, v->cb, cbn);
  uint32_t off = 0;
  for (uint32_t j = 0; j <= nl; j++) {
    util_put_le32(w, off);
    w += 4;
    if (j < nl) off += v->lists[j].n;
  }
  for (uint32_t j = 0; j < nl; j++) wr_words(&w, v->lists[j].ids, v->lists[j].n);
  wr_words(&w, v->deleted, words(n));
  for (uint32_t j = 0; j < nl && v->pq_m; j++) {
    size_t b = (size_t)v->lists[j].n * v->pq_m;
    if (b) memcpy(w, v->lists[j].codes, b);
    w += b;
  }
  *img = p;
  *len = total;
  return ANN_OK;
}

/* Check the sections of a loaded image (host-order words at base) and
** point the index into them. */
static int adopt(ivf *v, const uint8_t *base) {
  size_t dim = (size_t)v->base.dim, nl = v->nlist;
  size_t cbn = nl && v->pq_m ? (size_t)IVF_KSUB * dim : 0;
  const float *cent = (const float *)(const void *)base;
  const float *cb = cent + nl * dim;
  const uint32_t *off = (const uint32_t *)(const void *)(cb + cbn);
  const uint32_t *ids = off + nl + 1, *del = ids + v->count;
  const uint8_t *codes = (const uint8_t *)(del + words(v->n));
  for (size_t i = 0; i < nl * dim; i++)
    if (!isfinite(cent[i])) return ann_fail(&v->base, ANN_ECORRUPT, "centroid value not finite");
  for (size_t i = 0; i < cbn; i++)
    if (!isfinite(cb[i])) return ann_fail(&v->base, ANN_ECORRUPT, "codebook value not finite");
  if (off[0] != 0 || off[nl] != v->count) return ann_fail(&v->base, ANN_ECORRUPT, "bad list offsets");
  for (size_t j = 0; j < nl; j++)
    if (off[j + 1] < off[j]) return ann_fail(&v->base, ANN_ECORRUPT, "list %zu: bad offsets", j);
  size_t nw = words(v->n);
  v->present = calloc(nw ? nw : 1, 4);
  v->deleted = malloc(nw ? nw * 4 : 4);
  if (!v->present || !v->deleted) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
  v->wcap = nw;
  if (nw) memcpy(v->deleted, del, nw * 4);
  for (uint32_t e = 0; e < v->count; e++) {
    uint32_t id = ids[e];
    if (id >= v->n || bit(v->present, id))
      return ann_fail(&v->base, ANN_ECORRUPT, "entry %u: bad or repeated row id %u", e, id);
    bit_set(v->present, id);
  }
  for (size_t w = 0; w < nw; w++)
    if (v->deleted[w] & ~v->present[w])
      return ann_fail(&v->base, ANN_ECORRUPT, "deleted bits on rows not in the index");
  if (nl) {
    if (!(v->lists = calloc(nl, sizeof *v->lists))) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    v->owned = 0; /* from here on the arrays are the image's */
    for (size_t j = 0; j < nl; j++) {
      ivf_list *l = &v->lists[j];
      l->ids = (uint32_t *)(uintptr_t)(ids + off[j]);
      l->codes = v->pq_m ? (uint8_t *)(uintptr_t)(codes + (size_t)off[j] * v->pq_m) : NULL;
      l->n = off[j + 1] - off[j];
    }
    v->cent = (float *)(uintptr_t)cent;
    v->cb = cbn ? (float *)(uintptr_t)cb : NULL;
  }
  return ANN_OK;
}

int ivf_load(const void *img, size_t len, int dim, ann_metric m, ann_elem e, ann_vec_fn vec,
             void *ctx, ivf **out) {
  *out = NULL;
  ivf *v = alloc_handle(dim, m, e, vec, ctx);
  if (!v) return ANN_ENOMEM;
  *out = v;
  v->broken = 1; /* until the image is accepted */
  int rc = ann_check_args(&v->base);
  if (rc != ANN_OK) return rc;
  const uint8_t *p = img;
  if ((rc = ann_hdr_check(&v->base, &ivf_img, p, len)) != ANN_OK) return rc;
  uint32_t nl = util_get_le32(p + 28), pq_m = util_get_le32(p + 32), bits = util_get_le32(p + 36);
  uint32_t iters = util_get_le32(p + 48), rerank = util_get_le32(p + 56), nlreq = util_get_le32(p + 60);
  v->n = util_get_le32(p + 40);
  v->count = util_get_le32(p + 44);
  if (pq_m > (uint32_t)dim || (pq_m && dim % (int)pq_m) || bits != (pq_m ? 8u : 0u) ||
      nl > IVF_MAX_NLIST || nlreq > IVF_MAX_NLIST || iters < 1 || iters > IVF_MAX_ITERS ||
      rerank > INT32_MAX || v->count > v->n || (nl == 0 && v->n != 0) || util_get_le64(p + 72) != 0)
    return ann_fail(&v->base, ANN_ECORRUPT, "bad IVF header");
  set_pq(v, pq_m);
  v->nlist = nl;
  v->iters = (int)iters;
  v->sample_req = util_get_le32(p + 52);
  v->rerank = (int)rerank;
  v->nlist_req = nlreq;
  v->seed = util_get_le64(p + 64);
  uint64_t cbn = nl && pq_m ? (uint64_t)IVF_KSUB * (uint64_t)dim : 0;
  uint64_t wordsz = (uint64_t)nl * (uint64_t)dim + cbn + nl + 1 + v->count + words(v->n);
  uint64_t want = IVF_HDR + 4 * wordsz + (uint64_t)v->count * pq_m;
  if ((rc = ann_size_check(&v->base, &ivf_img, len, want)) != ANN_OK) return rc;
  const uint8_t *base = p + IVF_HDR;
  if (!util_host_le() || ((uintptr_t)p & 3) != 0) { /* an aligned host-order copy */
    if (!(v->copy = malloc(len - IVF_HDR + 1))) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
    memcpy(v->copy, base, len - IVF_HDR);
    util_get_le32s(v->copy, v->copy, (size_t)wordsz); /* the words (not the codes) */
    base = v->copy;
  }
  if ((rc = adopt(v, base)) != ANN_OK) return rc;
  if (build_pre(v) != ANN_OK) return ann_fail(&v->base, ANN_ENOMEM, "out of memory");
  v->broken = 0;
  return ANN_OK;
}
