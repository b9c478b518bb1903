/*
** lib/ann/hnsw.c - HNSW graph index over caller-held rows (see hnsw.h).
**
** The graph lives in three flat arrays, laid out exactly as in the saved
** image so that a loaded image is searched in place:
**
**   l0    n blocks of (1 + M0) uint32: the level-0 link count, then up to
**         M0 = 2M neighbour ids.  Block i belongs to row i.
**   node  n pairs of uint32: flags (bits 0-7 the node's top level, bit 8
**         present, bit 9 deleted) and the index in `up` of the node's
**         level-1 block; a node of level L owns blocks off .. off+L-1.
**   up    n_up blocks of (1 + M) uint32: count, then up to M ids.
**
** Image (all little-endian uint32 unless said otherwise):
**
**   0   "H5MHNSW1"           8 bytes
**   8   version (1)          12  header size (80)
**   16  dim                  20  metric (ann_metric)
**   24  elem (ann_elem)      28  M
**   32  M0 (= 2M)            36  ef_construction
**   40  n (table rows)       44  count (present rows)
**   48  0 (reserved)         52  entry point (0xffffffff when empty)
**   56  max level            60  n_up (upper blocks)
**   64  uint64 level-generator state
**   72  uint64 0 (reserved)
**   80  l0, then node, then up; the image ends exactly there.
**
** hnsw_save writes `up` compacted in id order, so node i's offset is the
** sum of the levels of the rows before it; hnsw_load insists on that (no
** two nodes can share a block) and checks every link: id < n, the target
** present, not the node itself, and on level l a target whose level is at
** least l.  After that no walk of the graph can leave the arrays.
**
** Search: greedy descent through the upper levels, then a best-first
** search of level 0 keeping W, the ef best allowed rows, and C, the
** candidates still to expand.  When rows are refused (a filter, or deleted
** rows to hide) W is a max-heap of fixed size ef and C a min-heap that holds
** the rows W refused too and grows as the exploration needs
** (search_layer).  Otherwise, in every insertion and in most searches,
** every candidate to expand is in W: W is one sorted array of integer keys
** (distance, id, an "expanded" bit) and C is the entries not flagged
** (search_pool), which walks the same rows in the same order.  Ties are
** broken by id everywhere, so results are a function of the graph and the
** query.  An expanded node's unvisited links are scored together (dists):
** one by one with the exact kernels, or, in the int8 pass, prefetched
** all at once and scored by one batch kernel call where they lie.  The link
** block of the candidate likely to be expanded next is prefetched while
** the current one's links are scored, and so is that of every new hit
** that enters W (the best of them is often the next).  While no row is
** deleted the walk never reads the node flags.
**
** int8 pass (hnsw_set_q8, or hnsw_set_q8_rows for rows in one array): the
** same walk with the query's int8 codes (quantised once into the scratch,
** so concurrent searches share nothing) against the rows' int8 copies; W,
** the pool, holds max(ef, 2k), and its best 2k are scored again exactly
** (re-sorted by insertion: the order barely changes) before the k best are
** taken.  Why 2k, and why construction stays exact: hnsw.h.  With the rows
** in one array a list's rows and their scales are prefetched together and
** the scales read only after the last prefetch, so no scale's cache miss
** waits alone.
**
** Visited rows are marked in a per-scratch uint16 array with a generation
** number: a new search bumps the number instead of clearing the array
** (cleared once every 65535 searches).  Scratches (visited array, heaps,
** f32 buffers, int8 buffers once the pass is on) are kept in a pool and
** reused; each search or insertion takes one.
**
** Parallel build: levels and upper blocks are assigned to the new rows in
** id order before the threads start; each node then has a spinlock that
** guards its link lists (readers copy a list under it), and a mutex guards
** the entry point, held through an insertion that raises the top level.
*/
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ann_int.h"
#include "hnsw.h"
#include "k.h"
#include "q8.h"
#include "util/le.h"
#include "util/pool.h"

#define HNSW_MAGIC "H5MHNSW1"
#define HNSW_VERSION 1
#define HNSW_HDR 80
#define HNSW_NONE UINT32_MAX
#define HNSW_MAX_LEVEL 31
#define HNSW_MAX_M 512
#define HNSW_MAX_EFC (1 << 20)
#define HNSW_DEFAULT_SEED 0x68e5a3c1d2b4f607ull

static const ann_img hnsw_img = {HNSW_MAGIC, HNSW_VERSION, HNSW_HDR, "HNSW"};

#define NODE_LEVEL 0xffu
#define NODE_PRESENT 0x100u
#define NODE_DELETED 0x200u
#define NODE_FLAGS 0x3ffu

/* a candidate: distance to the query, then id (the tie-break) */
typedef struct hit {
  float d;
  uint32_t id;
} hit;

/* Working memory of one search or insertion.  Owned by the pool. */
typedef struct scratch {
  struct scratch *next;
  uint16_t *vis; /* visited generation per row, vcap rows */
  uint32_t vcap;
  uint16_t gen;
  hit *w;        /* result: max-heap (search_layer) or sorted (search_pool), wcap */
  uint64_t *pk;  /* search_pool: W's keys, then the new hits', wcap + 2 M0 */
  hit *c;        /* candidate min-heap, ccap (grows) */
  hit *sel;      /* selection input, wcap + 1 */
  hit *disc;     /* heuristic: the pruned ones, wcap + 1 */
  uint32_t wcap, ccap;
  uint32_t *ids;  /* one copied link list, M0 */
  const void **vp; /* its rows (the vec callback's), M0 */
  uint32_t *keep; /* heuristic output, M0 */
  float *q, *e, *t; /* dim floats each: inserted row, relinked row, temp */
  float *d;         /* distances of one link list, M0 */
  int8_t *qc;       /* the query's codes, dim (int8 pass) */
  const int8_t **rp; /* one link list's int8 rows (the callback's), M0 */
  float *rs;        /* their scales, M0 */
  uint32_t *slot;   /* where each gathered row's distance goes, M0 */
} scratch;

/* The free scratches.  Malloc'd with the index, freed by hnsw_free. */
typedef struct spool {
  pthread_mutex_t mu;
  scratch *free;
} spool;

/* The index.  Owns everything except vec/ctx and, while !owned, the image
** the three arrays point into. */
struct hnsw {
  ann_base base; /* the rows, their kernels, the last error's message */
  int broken; /* hnsw_new/hnsw_load failed: only errmsg and free work */
  uint32_t M, M0, efc;
  int threads;
  int keep_pruned; /* hnsw_params.keep_pruned */
  double mult; /* level multiplier 1/ln(M) */
  uint64_t rng;
  ann_q8_fn q8; /* NULL: no int8 pass (hnsw_set_q8) ... */
  void *qctx;
  const int8_t *q8c; /* ... unless the rows are in one array (hnsw_set_q8_rows) */
  const float *q8s;
  size_t q8stride;
  uint32_t q8n;

  uint32_t n;     /* table rows: ids < n have l0 and node entries */
  uint32_t count; /* present rows (deleted included) */
  uint32_t ndel;  /* deleted rows: while 0 a search skips their flags */
  uint32_t entry; /* HNSW_NONE when empty */
  int max_level;

  uint32_t *l0, *node, *up;
  uint32_t n_up;   /* upper blocks in use */
  size_t ncap;     /* rows l0/node have room for (owned) */
  size_t upcap;    /* blocks up has room for (owned) */
  int owned;       /* 0: the arrays point into a caller's image */

  atomic_flag *locks;   /* per node, only during a parallel build */
  pthread_mutex_t glock; /* entry/max_level during a parallel build */
  spool *pool;
};

/* ---- small helpers ------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* floor(-ln(u) / ln(M)), u uniform in (0, 1] */
static int draw_level(hnsw *h) {
  double u = (double)((splitmix(&h->rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
  double l = -log(u) * h->mult;
  return l >= HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : (int)l;
}

static inline int hit_lt(hit a, hit b) {
  return a.d < b.d || (a.d == b.d && a.id < b.id);
}

static int hit_cmp(const void *pa, const void *pb) {
  hit a = *(const hit *)pa, b = *(const hit *)pb;
  return hit_lt(a, b) ? -1 : hit_lt(b, a) ? 1 : 0;
}

/* Binary heaps of hits.  max != 0: the worst on top (W); else the best (C).
** before(a, b): a belongs nearer the top than b. */
static inline int before(hit a, hit b, int max) {
  return max ? hit_lt(b, a) : hit_lt(a, b);
}

static void heap_down(hit *a, uint32_t n, uint32_t i, hit x, int max) {
  for (;;) {
    uint32_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(a[c + 1], a[c], max)) c++;
    if (!before(a[c], x, max)) break;
    a[i] = a[c];
    i = c;
  }
  a[i] = x;
}

static void heap_push(hit *a, uint32_t *n, hit x, int max) {
  uint32_t i = (*n)++;
  while (i) {
    uint32_t p = (i - 1) / 2;
    if (!before(x, a[p], max)) break;
    a[i] = a[p];
    i = p;
  }
  a[i] = x;
}

static void heap_pop(hit *a, uint32_t *n, int max) {
  if (--*n) heap_down(a, *n, 0, a[*n], max);
}

/* ---- graph access ------------------------------------------------------- */

static inline uint32_t node_level(const hnsw *h, uint32_t i) {
  return h->node[2 * (size_t)i] & NODE_LEVEL;
}

/* the link block (count, ids) of node i on level lev (lev <= its level) */
static inline uint32_t *links(const hnsw *h, uint32_t i, int lev) {
  if (lev == 0) return h->l0 + (size_t)i * (1 + h->M0);
  return h->up + ((size_t)h->node[2 * (size_t)i + 1] + (size_t)lev - 1) * (1 + h->M);
}

static inline void node_lock(const hnsw *h, uint32_t i) {
  if (!h->locks) return;
  int spins = 0;
  while (atomic_flag_test_and_set_explicit(&h->locks[i], memory_order_acquire))
    if (++spins > 64) {
      sched_yield();
      spins = 0;
    }
}

static inline void node_unlock(const hnsw *h, uint32_t i) {
  if (h->locks) atomic_flag_clear_explicit(&h->locks[i], memory_order_release);
}

/* copy node i's links on level lev into dst; returns their number */
static uint32_t copy_links(const hnsw *h, uint32_t i, int lev, uint32_t *dst) {
  node_lock(h, i);
  const uint32_t *b = links(h, i, lev);
  uint32_t n = b[0];
  memcpy(dst, b + 1, (size_t)n * 4);
  node_unlock(h, i);
  return n;
}

/* Ask for the cache lines of [p, p + len) without waiting for them. */
static inline void prefetch(const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p & ~(uintptr_t)63, end = (uintptr_t)p + len;
  for (; a < end; a += 64) __builtin_prefetch((const void *)a);
}

/* the int8 pass is on (hnsw_set_q8 or hnsw_set_q8_rows) */
static inline int q8_on(const hnsw *h) { return h->q8 || h->q8c; }

/* A query: f32 values and, for an int8 pass, their codes. */
typedef struct qry {
  const float *f;
  const int8_t *c; /* NULL: exact distances */
  float cs;        /* c's scale */
} qry;

/* Distances from q to rows ids[0..n) (n <= M0) into s->d.  Without codes
** they are exact; with codes, a row that has an int8 copy is scored on it
** (ann_q8_dist), one that has none exactly.  The rows are asked for all at
** once and prefetched before the first is scored, so their cache misses
** overlap (a build is 1.2x as fast, an exact walk 1.25x); int8 rows are
** then scored in one batch where they lie: the values of ann_q8_dist,
** without the query's norm computed again for every row. */
static void dists(const hnsw *h, scratch *s, const qry *q, const uint32_t *ids,
                  uint32_t n) {
  size_t dim = (size_t)h->base.dim;
  if (!q->c) {
    size_t rb = dim * (size_t)h->base.elem;
    for (uint32_t j = 0; j < n; j++) {
      s->vp[j] = h->base.vec(h->base.ctx, ids[j]);
      if (s->vp[j]) prefetch(s->vp[j], rb);
    }
    for (uint32_t j = 0; j < n; j++) s->d[j] = ann_dist(&h->base, q->f, s->vp[j]);
    return;
  }
  uint32_t nb = 0;
  if (h->q8c && h->q8n >= h->n) { /* every row has its copy: no checks, no slots */
    for (uint32_t j = 0; j < n; j++) {
      const int8_t *r = h->q8c + ids[j] * h->q8stride;
      prefetch(r, dim);
      __builtin_prefetch(h->q8s + ids[j]);
      s->rp[j] = r;
    }
    for (uint32_t j = 0; j < n; j++) s->rs[j] = h->q8s[ids[j]];
    ann_q8_dist_batch(h->base.k, h->base.metric, q->c, q->cs, s->rp, s->rs, n, dim, s->d);
    return;
  }
  if (h->q8c) {
    /* rows and scales prefetched first, the scales read after: their
    ** misses overlap the rows' */
    for (uint32_t j = 0; j < n; j++) {
      if (ids[j] >= h->q8n) {
        s->d[j] = ann_dist_row(&h->base, q->f, ids[j]);
        continue;
      }
      const int8_t *r = h->q8c + ids[j] * h->q8stride;
      prefetch(r, dim);
      __builtin_prefetch(h->q8s + ids[j]);
      s->rp[nb] = r;
      s->slot[nb++] = j;
    }
    for (uint32_t b = 0; b < nb; b++) s->rs[b] = h->q8s[ids[s->slot[b]]];
  } else {
    for (uint32_t j = 0; j < n; j++) {
      const int8_t *r = h->q8(h->qctx, ids[j], &s->rs[nb]);
      if (!r) {
        s->d[j] = ann_dist_row(&h->base, q->f, ids[j]);
        continue;
      }
      prefetch(r, dim);
      s->rp[nb] = r;
      s->slot[nb++] = j;
    }
  }
  float *bd = s->d + n; /* room for M0 more */
  ann_q8_dist_batch(h->base.k, h->base.metric, q->c, q->cs, s->rp, s->rs, nb, dim, bd);
  for (uint32_t b = 0; b < nb; b++) s->d[s->slot[b]] = bd[b];
}

/* row id as f32: where it lies if it is f32, else ann_row_f32's copy in buf */
static const float *row_f32(const hnsw *h, uint32_t id, float *buf) {
  const void *r = h->base.elem == ANN_F32 ? h->base.vec(h->base.ctx, id) : NULL;
  if (r) return r;
  ann_row_f32(&h->base, id, buf);
  return buf;
}

/* ---- scratch pool ------------------------------------------------------- */

static void scratch_free(scratch *s) {
  if (!s) return;
  free(s->vis);
  free(s->w);
  free(s->pk);
  free(s->c);
  free(s->sel);
  free(s->disc);
  free(s->ids);
  free(s->vp);
  free(s->keep);
  free(s->q);
  free(s->e);
  free(s->t);
  free(s->d);
  free(s->qc);
  free(s->rp);
  free(s->rs);
  free(s->slot);
  free(s);
}

static int grow(void **p, size_t n, size_t size) {
  void *np = realloc(*p, n * size);
  if (!np) return -1;
  *p = np;
  return 0;
}

/* make s fit searches of ef on the index as it is now */
static int scratch_fit(const hnsw *h, scratch *s, uint32_t ef) {
  if (ef < h->efc) ef = h->efc;
  if (ef < h->M0 + h->M) ef = h->M0 + h->M; /* (insert's merge of a list) */
  if (s->vcap < h->n) {
    if (grow((void **)&s->vis, h->n, sizeof *s->vis)) return -1;
    memset(s->vis, 0, (size_t)h->n * sizeof *s->vis);
    s->vcap = h->n;
    s->gen = 0;
  }
  if (s->wcap < ef) {
    /* (search_pool merges up to M0 new hits into a full pool) */
    if (grow((void **)&s->w, ef, sizeof(hit)) ||
        grow((void **)&s->pk, (size_t)ef + 2 * (size_t)h->M0, sizeof(uint64_t)) ||
        grow((void **)&s->sel, (size_t)ef + 1, sizeof(hit)) ||
        grow((void **)&s->disc, (size_t)ef + 1, sizeof(hit)))
      return -1;
    s->wcap = ef;
  }
  if (s->ccap < ef + 1) {
    if (grow((void **)&s->c, (size_t)ef + 1, sizeof(hit))) return -1;
    s->ccap = ef + 1;
  }
  if (q8_on(h) && !s->qc) {
    s->qc = malloc((size_t)h->base.dim);
    s->rp = malloc((size_t)h->M0 * sizeof *s->rp);
    s->rs = malloc((size_t)h->M0 * sizeof *s->rs);
    s->slot = malloc((size_t)h->M0 * sizeof *s->slot);
    if (!s->qc || !s->rp || !s->rs || !s->slot) return -1;
  }
  return 0;
}

static scratch *scratch_new(const hnsw *h) {
  scratch *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->ids = malloc((size_t)h->M0 * sizeof *s->ids);
  s->vp = malloc((size_t)h->M0 * sizeof *s->vp);
  s->keep = malloc((size_t)h->M0 * sizeof *s->keep);
  s->q = malloc((size_t)h->base.dim * sizeof *s->q);
  s->e = malloc((size_t)h->base.dim * sizeof *s->e);
  s->t = malloc((size_t)h->base.dim * sizeof *s->t);
  s->d = malloc((size_t)h->M0 * 2 * sizeof *s->d);
  if (!s->ids || !s->vp || !s->keep || !s->q || !s->e || !s->t || !s->d) {
    scratch_free(s);
    return NULL;
  }
  return s;
}

/* a scratch fit for ef, from the pool or new; NULL when out of memory */
static scratch *scratch_get(const hnsw *h, uint32_t ef) {
  pthread_mutex_lock(&h->pool->mu);
  scratch *s = h->pool->free;
  if (s) h->pool->free = s->next;
  pthread_mutex_unlock(&h->pool->mu);
  if (!s && !(s = scratch_new(h))) return NULL;
  if (scratch_fit(h, s, ef)) {
    scratch_free(s);
    return NULL;
  }
  return s;
}

static void scratch_put(const hnsw *h, scratch *s) {
  pthread_mutex_lock(&h->pool->mu);
  s->next = h->pool->free;
  h->pool->free = s;
  pthread_mutex_unlock(&h->pool->mu);
}

/* a fresh visited set: bump the generation, clear on wrap-around */
static void visit_reset(scratch *s) {
  if (++s->gen == 0) {
    memset(s->vis, 0, (size_t)s->vcap * sizeof *s->vis);
    s->gen = 1;
  }
}

/* ---- search ------------------------------------------------------------- */

/* Greedy descent from *cur through levels top .. bottom+1: on each level
** move to a closer neighbour while there is one. */
static void greedy(const hnsw *h, scratch *s, const qry *q, uint32_t *cur,
                   float *curd, int top, int bottom) {
  for (int lev = top; lev > bottom; lev--) {
    int changed = 1;
    while (changed) {
      changed = 0;
      uint32_t n = copy_links(h, *cur, lev, s->ids);
      dists(h, s, q, s->ids, n);
      for (uint32_t j = 0; j < n; j++) {
        float d = s->d[j];
        if (d < *curd) {
          *curd = d;
          *cur = s->ids[j];
          changed = 1;
        }
      }
    }
  }
}

typedef int (*ann_filter_fn)(void *fctx, uint32_t i);

/* Node id's links on level lev that no walk of this search has reached
** yet, marked reached now, into s->ids; returns their number. */
static uint32_t unvisited(const hnsw *h, scratch *s, uint32_t id, int lev) {
  node_lock(h, id);
  const uint32_t *b = links(h, id, lev);
  uint32_t nl = b[0], nn = 0;
  uint16_t *vis = s->vis, gen = s->gen;
  for (uint32_t j = 1; j <= nl; j++) {
    uint32_t t = b[j];
    s->ids[nn] = t;
    nn += vis[t] != gen; /* (kept only if new: no branch to mispredict) */
    vis[t] = gen;
  }
  node_unlock(h, id);
  return nn;
}

/* the link block of node id on level lev, asked for ahead of its use */
static inline void prefetch_links(const hnsw *h, uint32_t id, int lev) {
  const char *b = (const char *)links(h, id, lev);
  size_t len = (size_t)(1 + (lev ? h->M : h->M0)) * 4;
  if (len > 192) {
    prefetch(b, len);
    return;
  }
  __builtin_prefetch(b); /* (no loop for the usual M <= 23) */
  __builtin_prefetch(b + len / 2);
  __builtin_prefetch(b + len - 1);
}

/* Best-first search of level lev from ep: leaves the ef best allowed rows
** in the max-heap s->w and returns their number, or ANN_ENOMEM.  Rows are
** allowed unless (hide_deleted and deleted) or the filter refuses them.
** For searches that refuse rows; search_pool does the others. */
static int search_layer(const hnsw *h, scratch *s, const qry *q, uint32_t ep,
                        float epd, uint32_t ef, int lev, ann_filter_fn filter,
                        void *fctx, int hide_deleted) {
  uint32_t nw = 0, nc = 0;
  int picky = filter || hide_deleted;
  visit_reset(s);
  s->vis[ep] = s->gen;
  hit e = {epd, ep};
  if (!picky || ((!hide_deleted || !(h->node[2 * (size_t)ep] & NODE_DELETED)) &&
                 (!filter || filter(fctx, ep))))
    heap_push(s->w, &nw, e, 1);
  heap_push(s->c, &nc, e, 0);
  while (nc) {
    hit c = s->c[0];
    if (nw == ef && hit_lt(s->w[0], c)) break; /* nothing better is left */
    heap_pop(s->c, &nc, 0);
    if (nc) prefetch_links(h, s->c[0].id, lev); /* (likely the next one) */
    /* the links not seen yet, then their distances, then each in turn */
    uint32_t nn = unvisited(h, s, c.id, lev);
    dists(h, s, q, s->ids, nn);
    for (uint32_t j = 0; j < nn; j++) {
      uint32_t id = s->ids[j];
      hit x = {s->d[j], id};
      if (nw == ef && !hit_lt(x, s->w[0])) continue;
      if (!picky || ((!hide_deleted || !(h->node[2 * (size_t)id] & NODE_DELETED)) &&
                     (!filter || filter(fctx, id)))) {
        if (nw < ef)
          heap_push(s->w, &nw, x, 1);
        else
          heap_down(s->w, nw, 0, x, 1);
      }
      if (nc == s->ccap) {
        /* entries worse than W's worst will never be expanded */
        if (nw == ef) {
          uint32_t m = 0;
          for (uint32_t t = 0; t < nc; t++)
            if (!hit_lt(s->w[0], s->c[t])) s->c[m++] = s->c[t];
          nc = m;
          for (uint32_t t = nc / 2; t-- > 0;) heap_down(s->c, nc, t, s->c[t], 0);
        }
        if (nc == s->ccap) {
          if (grow((void **)&s->c, (size_t)s->ccap * 2, sizeof(hit))) return ANN_ENOMEM;
          s->ccap *= 2;
        }
      }
      heap_push(s->c, &nc, x, 0);
    }
  }
  return (int)nw;
}

/* A hit as one integer that sorts as hit_lt does: the distance's bits made
** to sort as integers (sign set: all flipped; else the sign set), then the
** id, then bit 0, search_pool's "expanded" flag (never needed to order two
** entries: no id is in the pool twice).  -0 is made +0 first, as the float
** compare has them equal.  (A NaN, which only a row that is not finite
** could give and the store refuses those, sorts before or after all.)
** Ids must be below 2^31: search_pool checks. */
#define POOL_MAX_N 0x80000000u
static inline uint64_t hit_key(float d, uint32_t id) {
  uint32_t u;
  d += 0.0f;
  memcpy(&u, &d, 4);
  u ^= (uint32_t)((int32_t)u >> 31) | 0x80000000u;
  return (uint64_t)u << 32 | (uint64_t)id << 1;
}

static inline uint32_t key_id(uint64_t k) { return (uint32_t)k >> 1; }

static inline hit key_hit(uint64_t k) {
  uint32_t u = (uint32_t)(k >> 32);
  u ^= (uint32_t)((int32_t)~u >> 31) | 0x80000000u;
  hit x;
  memcpy(&x.d, &u, 4);
  x.id = key_id(k);
  return x;
}

/* search_layer when no row is refused (no filter, no deleted row hidden):
** the same walk, which then needs no candidate heap.  Every candidate
** still to expand is among the ef best seen so far (W), and the next one
** is the best of those not expanded yet; so W is kept as one sorted array
** of hit_keys (each with its "expanded" bit), and a cursor at the first
** entry not expanded.  The hits of one expanded node that beat W's worst
** are sorted among themselves (a few, by insertion) and merged into W from
** its end in one pass, which then keeps its ef best: each entry moves once
** per expansion, not once per new hit.  The ef best of W and the new hits
** are the same whichever way they go in, so the rows expanded, their order
** and the result are those of search_layer.  W leaves in s->w[0..nw)
** sorted by distance, then id; returns nw (or ANN_ENOMEM: the heaps, for a
** table of 2^31 rows or more, whose ids do not fit the keys). */
static int search_pool(const hnsw *h, scratch *s, const qry *q, uint32_t ep,
                       float epd, uint32_t ef, int lev) {
  if (h->n > POOL_MAX_N) {
    int nw = search_layer(h, s, q, ep, epd, ef, lev, NULL, NULL, 0);
    if (nw > 0) qsort(s->w, (size_t)nw, sizeof(hit), hit_cmp);
    return nw;
  }
  uint64_t *w = s->pk, *add = s->pk + ef + h->M0;
  uint32_t nw = 1, cur = 0;
  visit_reset(s);
  s->vis[ep] = s->gen;
  w[0] = hit_key(epd, ep);
  while (cur < nw) {
    uint32_t c = key_id(w[cur]);
    w[cur] |= 1;
    uint32_t nx = cur + 1; /* the next one to expand, unless a hit lands before it */
    while (nx < nw && (w[nx] & 1)) nx++;
    if (nx < nw) prefetch_links(h, key_id(w[nx]), lev);
    uint32_t nn = unvisited(h, s, c, lev);
    dists(h, s, q, s->ids, nn);
    /* the new hits that beat the worst, sorted; their links asked for (the
    ** best of them is often the next to expand) */
    uint32_t m = 0;
    uint64_t worst = nw == ef ? w[nw - 1] : UINT64_MAX;
    for (uint32_t j = 0; j < nn; j++) { /* (no branch on the distance) */
      uint64_t x = hit_key(s->d[j], s->ids[j]);
      add[m] = x;
      m += x < worst;
    }
    for (uint32_t j = 0; j < m; j++) {
      uint64_t x = add[j];
      prefetch_links(h, key_id(x), lev);
      uint32_t t = j;
      for (; t > 0 && x < add[t - 1]; t--) add[t] = add[t - 1];
      add[t] = x;
    }
    if (!m) {
      cur = nx;
      continue;
    }
    /* merged from the end: w[i] or add[j] to slot t (mostly w[i]) */
    uint32_t t = nw + m, i = nw;
    for (uint32_t j = m; j > 0;) {
      t--;
      if (i > 0 && add[j - 1] < w[i - 1])
        w[t] = w[--i];
      else
        w[t] = add[--j];
    }
    /* now w[0..t) were not moved and w[t] is the best new hit */
    if (t < nx) nx = t;
    nw += m;
    if (nw > ef) nw = ef;
    cur = nx;
    while (cur < nw && (w[cur] & 1)) cur++;
  }
  for (uint32_t i = 0; i < nw; i++) s->w[i] = key_hit(w[i]);
  return (int)nw;
}

/* s->w[0..nw) scored again with q's distances, then sorted: by insertion,
** since the new order is mostly the old one */
static void rescore(const hnsw *h, scratch *s, const qry *q, int nw) {
  hit *w = s->w;
  for (int i = 0; i < nw; i += (int)h->M0) { /* dists takes up to M0 */
    uint32_t m = (uint32_t)(nw - i) < h->M0 ? (uint32_t)(nw - i) : h->M0;
    for (uint32_t j = 0; j < m; j++) s->ids[j] = w[i + (int)j].id;
    dists(h, s, q, s->ids, m);
    for (uint32_t j = 0; j < m; j++) w[i + (int)j].d = s->d[j];
  }
  for (int i = 1; i < nw; i++) {
    hit x = w[i];
    int j = i;
    for (; j > 0 && hit_lt(x, w[j - 1]); j--) w[j] = w[j - 1];
    w[j] = x;
  }
}

int hnsw_search(const hnsw *h, const float *q, int k, int ef, ann_filter_fn filter,
                void *fctx, ann_hit *out) {
  if (!h || h->broken) return ANN_EINVAL;
  if (k <= 0 || h->count == 0) return 0;
  if (!q || !out) return ANN_EINVAL;
  /* the int8 pass's pool is at least 2k (hnsw.h) */
  uint32_t e = (uint32_t)(ef > k ? ef : k);
  if (q8_on(h) && e < 2 * (uint32_t)k) e = 2 * (uint32_t)k;
  if (e > h->count) e = h->count;
  scratch *s = scratch_get(h, e);
  if (!s) return ANN_ENOMEM;
  qry qq = {q, NULL, 0};
  /* (a query that is not finite is searched exactly) */
  if (q8_on(h) && ann_q8_query(q, h->base.dim, s->qc, &qq.cs) == 0) qq.c = s->qc;
  uint32_t cur = h->entry;
  dists(h, s, &qq, &cur, 1);
  float curd = s->d[0];
  greedy(h, s, &qq, &cur, &curd, h->max_level, 0);
  /* a search that refuses no row walks with the sorted pool; the flags of
  ** the rows reached are not even read while none is deleted */
  int all = !filter && h->ndel == 0;
  int nw = all ? search_pool(h, s, &qq, cur, curd, e, 0)
               : search_layer(h, s, &qq, cur, curd, e, 0, filter, fctx, h->ndel != 0);
  if (nw > 0 && !all) qsort(s->w, (size_t)nw, sizeof(hit), hit_cmp);
  if (nw > 0 && qq.c) {
    /* the best 2k of the pool by int8 distance, scored exactly (hnsw.h) */
    if (nw > 2 * k) nw = 2 * k;
    qry fq = {q, NULL, 0};
    rescore(h, s, &fq, nw);
  }
  if (nw > k) nw = k;
  for (int i = 0; i < nw; i++) {
    out[i].id = s->w[i].id;
    out[i].dist = s->w[i].d;
  }
  scratch_put(h, s);
  return nw;
}

/* ---- insertion ---------------------------------------------------------- */

/* The paper's heuristic (Algorithm 4, no extended candidates).  cand: nc
** hits sorted by distance to the base row.  A candidate is kept when it is
** closer to the base than to every one kept before it; with keep_pruned
** (keepPrunedConnections) the pruned ones fill up the rest, nearest first.
** Writes up to maxk ids into s->keep and returns their number. */
static uint32_t select_links(const hnsw *h, scratch *s, const hit *cand,
                             uint32_t nc, uint32_t maxk) {
  uint32_t nk = 0, nd = 0;
  for (uint32_t i = 0; i < nc && nk < maxk; i++) {
    int good = 1;
    if (nk) {
      const float *t = row_f32(h, cand[i].id, s->t);
      for (uint32_t j = 0; j < nk && good; j++)
        if (!(cand[i].d < ann_dist_row(&h->base, t, s->keep[j]))) good = 0;
    }
    if (good)
      s->keep[nk++] = cand[i].id;
    else
      s->disc[nd++] = cand[i];
  }
  for (uint32_t i = 0; h->keep_pruned && i < nd && nk < maxk; i++) s->keep[nk++] = s->disc[i].id;
  return nk;
}

/* Add a link e -> q on level lev; a full list is re-selected by the
** heuristic from its links plus q. */
static void link_to(const hnsw *h, scratch *s, uint32_t e, uint32_t q, int lev) {
  uint32_t cap = lev ? h->M : h->M0;
  node_lock(h, e);
  uint32_t *b = links(h, e, lev);
  uint32_t n = b[0];
  for (uint32_t j = 0; j < n; j++)
    if (b[1 + j] == q) { /* already there (a concurrent insertion) */
      node_unlock(h, e);
      return;
    }
  if (n < cap) {
    b[1 + n] = q;
    b[0] = n + 1;
  } else {
    const float *er = row_f32(h, e, s->e);
    qry eq = {er, NULL, 0};
    dists(h, s, &eq, b + 1, n);
    for (uint32_t j = 0; j < n; j++) s->sel[j] = (hit){s->d[j], b[1 + j]};
    s->sel[n] = (hit){ann_dist_row(&h->base, er, q), q};
    qsort(s->sel, (size_t)n + 1, sizeof(hit), hit_cmp);
    uint32_t nk = select_links(h, s, s->sel, n + 1, cap);
    memcpy(b + 1, s->keep, (size_t)nk * 4);
    b[0] = nk;
  }
  node_unlock(h, e);
}

/* Give row id, being inserted, the links sel[0..n) on level lev.  In a
** parallel build its list may not be empty: another insertion can reach id
** on an upper level before id's own insertion got down to this one, start
** its search here, and add a link to id (link_to).  Such links are kept:
** the union is re-selected by the heuristic when it does not fit.
** Overwriting them would leave the other row reachable from nowhere. */
static void set_links(const hnsw *h, scratch *s, uint32_t id, int lev, const uint32_t *sel,
                      uint32_t n) {
  uint32_t cap = lev ? h->M : h->M0;
  node_lock(h, id);
  uint32_t *b = links(h, id, lev);
  uint32_t have = b[0];
  if (have == 0) {
    memcpy(b + 1, sel, (size_t)n * 4);
    b[0] = n;
    node_unlock(h, id);
    return;
  }
  uint32_t m = 0;
  const qry iq = {s->q, NULL, 0};
  dists(h, s, &iq, b + 1, have);
  for (uint32_t j = 0; j < have; j++) s->sel[m++] = (hit){s->d[j], b[1 + j]};
  for (uint32_t j = 0; j < n; j++) {
    int dup = 0;
    for (uint32_t t = 0; t < have && !dup; t++) dup = b[1 + t] == sel[j];
    if (!dup) s->sel[m++] = (hit){ann_dist_row(&h->base, s->q, sel[j]), sel[j]};
  }
  if (m <= cap) {
    for (uint32_t j = have; j < m; j++) b[1 + j] = s->sel[j].id;
    b[0] = m;
  } else {
    qsort(s->sel, m, sizeof(hit), hit_cmp);
    uint32_t nk = select_links(h, s, s->sel, m, cap);
    memcpy(b + 1, s->keep, (size_t)nk * 4);
    b[0] = nk;
  }
  node_unlock(h, id);
}

/* Link row id (level and upper blocks already assigned, lists empty) into
** the graph. */
static int insert(hnsw *h, scratch *s, uint32_t id) {
  int lvl = (int)node_level(h, id);
  ann_row_f32(&h->base, id, s->q);
  const qry iq = {s->q, NULL, 0}; /* construction is exact (see above) */
  if (h->locks) pthread_mutex_lock(&h->glock);
  uint32_t ep = h->entry;
  int top = h->max_level;
  if (ep == HNSW_NONE) {
    h->entry = id;
    h->max_level = lvl;
    if (h->locks) pthread_mutex_unlock(&h->glock);
    return ANN_OK;
  }
  int raise = lvl > top;
  if (!raise && h->locks) pthread_mutex_unlock(&h->glock);

  float epd = ann_dist_row(&h->base, s->q, ep);
  greedy(h, s, &iq, &ep, &epd, top, lvl);
  for (int lev = lvl < top ? lvl : top; lev >= 0; lev--) {
    int nw = search_pool(h, s, &iq, ep, epd, h->efc, lev);
    if (nw < 0) return nw;
    uint32_t nc = 0; /* (sorted: the pool's order) */
    for (int j = 0; j < nw; j++)
      if (s->w[j].id != id) s->sel[nc++] = s->w[j];
    if (nc == 0) continue;
    ep = s->sel[0].id;
    epd = s->sel[0].d;
    uint32_t nk = select_links(h, s, s->sel, nc, h->M);
    /* link_to reuses s->keep and s->sel: work from a copy */
    memcpy(s->ids, s->keep, (size_t)nk * 4);
    set_links(h, s, id, lev, s->ids, nk);
    for (uint32_t j = 0; j < nk; j++) link_to(h, s, s->ids[j], id, lev);
  }
  if (raise) {
    h->entry = id;
    h->max_level = lvl;
    if (h->locks) pthread_mutex_unlock(&h->glock);
  }
  return ANN_OK;
}

/* ---- memory ------------------------------------------------------------- */

/* Take the arrays into owned memory (copy-on-write of a loaded image). */
static int own(hnsw *h) {
  if (h->owned) return ANN_OK;
  size_t ncap = h->n ? h->n : 1, upcap = h->n_up ? h->n_up : 1;
  uint32_t *l0 = malloc(ncap * (1 + h->M0) * 4);
  uint32_t *node = malloc(ncap * 2 * 4);
  uint32_t *up = malloc(upcap * (1 + h->M) * 4);
  if (!l0 || !node || !up) {
    free(l0);
    free(node);
    free(up);
    return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
  }
  if (h->n) {
    memcpy(l0, h->l0, (size_t)h->n * (1 + h->M0) * 4);
    memcpy(node, h->node, (size_t)h->n * 2 * 4);
  }
  if (h->n_up) memcpy(up, h->up, (size_t)h->n_up * (1 + h->M) * 4);
  h->l0 = l0;
  h->node = node;
  h->up = up;
  h->ncap = ncap;
  h->upcap = upcap;
  h->owned = 1;
  return ANN_OK;
}

/* room for rows < n (zeroed: absent, no links) */
static int reserve_rows(hnsw *h, uint32_t n) {
  if (n <= h->n) return ANN_OK;
  if (n > h->ncap) {
    size_t cap = h->ncap * 2 > 64 ? h->ncap * 2 : 64;
    if (cap < n) cap = n;
    if (cap > (size_t)UINT32_MAX) cap = UINT32_MAX;
    uint32_t *l0 = realloc(h->l0, cap * (1 + h->M0) * 4);
    if (!l0) return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
    h->l0 = l0;
    uint32_t *node = realloc(h->node, cap * 2 * 4);
    if (!node) return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
    h->node = node;
    h->ncap = cap;
  }
  memset(h->l0 + (size_t)h->n * (1 + h->M0), 0, (size_t)(n - h->n) * (1 + h->M0) * 4);
  memset(h->node + (size_t)h->n * 2, 0, (size_t)(n - h->n) * 2 * 4);
  h->n = n;
  return ANN_OK;
}

/* room for `more` upper blocks past n_up */
static int reserve_up(hnsw *h, size_t more) {
  size_t need = (size_t)h->n_up + more;
  if (need > UINT32_MAX) return ann_fail(&h->base, ANN_EINVAL, "too many upper-level nodes");
  if (need <= h->upcap) return ANN_OK;
  size_t cap = h->upcap * 2 > 64 ? h->upcap * 2 : 64;
  if (cap < need) cap = need;
  uint32_t *up = realloc(h->up, cap * (1 + h->M) * 4);
  if (!up) return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
  h->up = up;
  h->upcap = cap;
  return ANN_OK;
}

/* give row id level lvl and fresh, empty upper blocks */
static void assign_level(hnsw *h, uint32_t id, int lvl) {
  h->node[2 * (size_t)id] = (uint32_t)lvl;
  h->node[2 * (size_t)id + 1] = h->n_up;
  memset(h->up + (size_t)h->n_up * (1 + h->M), 0, (size_t)lvl * (1 + h->M) * 4);
  h->n_up += (uint32_t)lvl;
}

/* ---- public: life cycle ------------------------------------------------- */

/* a handle with the common fields set; NULL when out of memory */
static hnsw *alloc_handle(int dim, ann_metric metric, ann_elem elem,
                          ann_vec_fn vec, void *ctx) {
  hnsw *h = calloc(1, sizeof *h);
  if (!h) return NULL;
  h->pool = calloc(1, sizeof *h->pool);
  if (!h->pool) {
    free(h);
    return NULL;
  }
  pthread_mutex_init(&h->pool->mu, NULL);
  pthread_mutex_init(&h->glock, NULL);
  ann_base_init(&h->base, dim, metric, elem, vec, ctx);
  h->entry = HNSW_NONE;
  h->threads = 1;
  h->rng = HNSW_DEFAULT_SEED;
  return h;
}

static void set_m(hnsw *h, uint32_t M) {
  h->M = M;
  h->M0 = 2 * M;
  h->mult = 1.0 / log((double)M);
}

int hnsw_new(int dim, ann_metric metric, ann_elem elem, const hnsw_params *p,
             ann_vec_fn vec, void *ctx, hnsw **out) {
  *out = NULL;
  hnsw *h = alloc_handle(dim, metric, elem, vec, ctx);
  if (!h) return ANN_ENOMEM;
  *out = h;
  hnsw_params d = {0, 0, 0, 0, 0};
  if (!p) p = &d;
  int rc = ann_check_args(&h->base);
  if (rc == ANN_OK && (p->M < 0 || p->M == 1 || p->M > HNSW_MAX_M))
    rc = ann_fail(&h->base, ANN_EINVAL, "M must be 2..%d, not %d", HNSW_MAX_M, p->M);
  if (rc == ANN_OK && (p->ef_construction < 0 || p->ef_construction > HNSW_MAX_EFC))
    rc = ann_fail(&h->base, ANN_EINVAL, "ef_construction must be 1..%d, not %d",
                 HNSW_MAX_EFC, p->ef_construction);
  if (rc == ANN_OK && p->threads < 0)
    rc = ann_fail(&h->base, ANN_EINVAL, "threads must not be negative");
  if (rc != ANN_OK) {
    h->broken = 1;
    return rc;
  }
  set_m(h, p->M ? (uint32_t)p->M : 16);
  h->efc = p->ef_construction ? (uint32_t)p->ef_construction : 64;
  if (p->seed) h->rng = p->seed;
  h->threads = p->threads ? p->threads : 1;
  h->keep_pruned = p->keep_pruned != 0;
  h->owned = 1;
  return ANN_OK;
}

void hnsw_free(hnsw *h) {
  if (!h) return;
  if (h->owned) {
    free(h->l0);
    free(h->node);
    free(h->up);
  }
  free(h->locks);
  scratch *s = h->pool->free;
  while (s) {
    scratch *nx = s->next;
    scratch_free(s);
    s = nx;
  }
  pthread_mutex_destroy(&h->pool->mu);
  free(h->pool);
  pthread_mutex_destroy(&h->glock);
  free(h);
}

const char *hnsw_errmsg(const hnsw *h) { return h ? h->base.err : "out of memory"; }

int hnsw_in_memory(const hnsw *h) { return h && h->owned; }

uint32_t hnsw_count(const hnsw *h) { return h && !h->broken ? h->count : 0; }

void hnsw_set_threads(hnsw *h, int threads) {
  if (h) h->threads = threads > 0 ? threads : 1;
}

/* ---- public: writing ---------------------------------------------------- */

int hnsw_set_q8(hnsw *h, ann_q8_fn q8, void *qctx) {
  if (!h || h->broken) return ANN_EINVAL;
  h->base.err[0] = 0;
  h->q8 = q8;
  h->qctx = q8 ? qctx : NULL;
  h->q8c = NULL;
  h->q8s = NULL;
  h->q8stride = 0;
  h->q8n = 0;
  return ANN_OK;
}

int hnsw_set_q8_rows(hnsw *h, const int8_t *codes, size_t stride, const float *scales,
                     uint32_t n) {
  if (!h || h->broken) return ANN_EINVAL;
  h->base.err[0] = 0;
  if (codes && (!scales || stride < (size_t)h->base.dim))
    return ann_fail(&h->base, ANN_EINVAL, "int8 rows: no scales, or a stride below dim");
  h->q8 = NULL;
  h->qctx = NULL;
  h->q8c = codes;
  h->q8s = codes ? scales : NULL;
  h->q8stride = codes ? stride : 0;
  h->q8n = codes ? n : 0;
  return ANN_OK;
}

int hnsw_add(hnsw *h, uint32_t i) {
  if (!h || h->broken) return ANN_EINVAL;
  h->base.err[0] = 0;
  if (i == HNSW_NONE) return ann_fail(&h->base, ANN_EINVAL, "row id %u is reserved", i);
  if (i < h->n && (h->node[2 * (size_t)i] & NODE_PRESENT))
    return ann_fail(&h->base, ANN_EINVAL, "row %u is already in the index", i);
  int rc = own(h);
  if (rc == ANN_OK) rc = reserve_rows(h, i + 1);
  if (rc == ANN_OK) rc = reserve_up(h, HNSW_MAX_LEVEL);
  if (rc != ANN_OK) return rc;
  scratch *s = scratch_get(h, h->efc);
  if (!s) return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
  assign_level(h, i, draw_level(h));
  rc = insert(h, s, i);
  scratch_put(h, s);
  if (rc != ANN_OK) return ann_fail(&h->base, rc, "out of memory");
  h->node[2 * (size_t)i] |= NODE_PRESENT;
  h->count++;
  return ANN_OK;
}

typedef struct build_ctx {
  hnsw *h;
  const uint32_t *ids;
  uint8_t *done;
} build_ctx;

static int build_one(void *arg, size_t j) {
  build_ctx *b = arg;
  scratch *s = scratch_get(b->h, b->h->efc);
  if (!s) return ANN_ENOMEM;
  int rc = insert(b->h, s, b->ids[j]);
  scratch_put(b->h, s);
  if (rc == ANN_OK) b->done[j] = 1;
  return rc;
}

int hnsw_build(hnsw *h, uint32_t n) {
  if (!h || h->broken) return ANN_EINVAL;
  h->base.err[0] = 0;
  int rc = own(h);
  if (rc == ANN_OK) rc = reserve_rows(h, n);
  if (rc != ANN_OK) return rc;
  size_t m = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!(h->node[2 * (size_t)i] & NODE_PRESENT)) m++;
  if (m == 0) return ANN_OK;
  uint32_t *ids = malloc(m * sizeof *ids);
  uint8_t *done = calloc(m, 1);
  uint8_t *lv = malloc(m);
  if (!ids || !done || !lv) {
    rc = ann_fail(&h->base, ANN_ENOMEM, "out of memory");
    goto out;
  }
  /* levels in id order, from the one generator: the same as hnsw_add of
  ** each row in turn */
  size_t nb = 0, j = 0;
  for (uint32_t i = 0; i < n; i++)
    if (!(h->node[2 * (size_t)i] & NODE_PRESENT)) {
      ids[j] = i;
      lv[j] = (uint8_t)draw_level(h);
      nb += lv[j++];
    }
  if ((rc = reserve_up(h, nb)) != ANN_OK) goto out;
  for (j = 0; j < m; j++) assign_level(h, ids[j], lv[j]);

  int threads = h->threads;
  if ((size_t)threads > m) threads = (int)m;
  build_ctx b = {h, ids, done};
  if (threads <= 1) {
    for (j = 0; j < m && rc == ANN_OK; j++) rc = build_one(&b, j);
  } else {
    /* one scratch per thread in the pool before they start */
    scratch **pre = calloc((size_t)threads, sizeof *pre);
    h->locks = malloc((size_t)n * sizeof *h->locks);
    if (!pre || !h->locks) {
      free(pre);
      rc = ann_fail(&h->base, ANN_ENOMEM, "out of memory");
      goto out;
    }
    for (uint32_t i = 0; i < n; i++) atomic_flag_clear(&h->locks[i]);
    for (int t = 0; t < threads; t++) pre[t] = scratch_get(h, h->efc);
    for (int t = 0; t < threads; t++)
      if (pre[t]) scratch_put(h, pre[t]);
    free(pre);
    rc = util_parallel_for(threads, m, build_one, &b);
    free(h->locks);
    h->locks = NULL;
  }
  /* rows not linked (out of memory) stay out, their blocks unused */
  for (j = 0; j < m; j++) {
    if (done[j]) {
      h->node[2 * (size_t)ids[j]] |= NODE_PRESENT;
      h->count++;
    } else {
      h->node[2 * (size_t)ids[j]] = 0;
    }
  }
  if (rc != ANN_OK) ann_fail(&h->base, rc, "out of memory");
out:
  free(ids);
  free(done);
  free(lv);
  return rc;
}

int hnsw_delete(hnsw *h, uint32_t i) {
  if (!h || h->broken) return ANN_EINVAL;
  h->base.err[0] = 0;
  if (i >= h->n || !(h->node[2 * (size_t)i] & NODE_PRESENT))
    return ann_fail(&h->base, ANN_EINVAL, "row %u is not in the index", i);
  if (h->node[2 * (size_t)i] & NODE_DELETED) return ANN_OK;
  int rc = own(h);
  if (rc != ANN_OK) return rc;
  h->node[2 * (size_t)i] |= NODE_DELETED;
  h->ndel++;
  return ANN_OK;
}

/* ---- image -------------------------------------------------------------- */

int hnsw_save(const hnsw *h, uint8_t **img, size_t *len) {
  *img = NULL;
  *len = 0;
  if (!h || h->broken) return ANN_EINVAL;
  size_t l0b = (size_t)h->n * (1 + h->M0) * 4, nodeb = (size_t)h->n * 8;
  /* used upper blocks only (a failed build may leave some behind) */
  size_t nup = 0;
  for (uint32_t i = 0; i < h->n; i++)
    if (h->node[2 * (size_t)i] & NODE_PRESENT) nup += node_level(h, i);
  size_t upb = nup * (1 + h->M) * 4;
  size_t total = HNSW_HDR + l0b + nodeb + upb;
  uint8_t *p = malloc(total);
  if (!p) return ANN_ENOMEM;
  ann_hdr_put(p, &hnsw_img, &h->base);
  util_put_le32(p + 28, h->M);
  util_put_le32(p + 32, h->M0);
  util_put_le32(p + 36, h->efc);
  util_put_le32(p + 40, h->n);
  util_put_le32(p + 44, h->count);
  util_put_le32(p + 52, h->entry);
  util_put_le32(p + 56, (uint32_t)h->max_level);
  util_put_le32(p + 60, (uint32_t)nup);
  util_put_le64(p + 64, h->rng);
  util_put_le32s(p + HNSW_HDR, h->l0, (size_t)h->n * (1 + h->M0));
  uint8_t *np = p + HNSW_HDR + l0b, *up = np + nodeb;
  uint32_t off = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    uint32_t f = h->node[2 * (size_t)i];
    uint32_t lv = f & NODE_PRESENT ? f & NODE_LEVEL : 0;
    if (!(f & NODE_PRESENT)) f = 0;
    util_put_le32(np + 8 * (size_t)i, f);
    util_put_le32(np + 8 * (size_t)i + 4, off);
    for (uint32_t l = 1; l <= lv; l++) {
      util_put_le32s(up, links(h, i, (int)l), 1 + h->M);
      up += (size_t)(1 + h->M) * 4;
    }
    off += lv;
  }
  *img = p;
  *len = total;
  return ANN_OK;
}

/* Check the graph arrays (just loaded) for anything that could send a
** search outside them. */
static int check_graph(hnsw *h) {
  uint64_t run = 0;
  uint32_t present = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    uint32_t f = h->node[2 * (size_t)i], off = h->node[2 * (size_t)i + 1];
    if (f & ~NODE_FLAGS) return ann_fail(&h->base, ANN_ECORRUPT, "node %u: bad flags %#x", i, f);
    if (!(f & NODE_PRESENT)) {
      if (f != 0 || h->l0[(size_t)i * (1 + h->M0)] != 0)
        return ann_fail(&h->base, ANN_ECORRUPT, "node %u: absent but not empty", i);
    } else {
      if ((int)(f & NODE_LEVEL) > h->max_level)
        return ann_fail(&h->base, ANN_ECORRUPT, "node %u: level above the top", i);
      present++;
      if (f & NODE_DELETED) h->ndel++;
    }
    if (off != run) return ann_fail(&h->base, ANN_ECORRUPT, "node %u: bad upper offset", i);
    run += f & NODE_PRESENT ? f & NODE_LEVEL : 0;
  }
  if (run != h->n_up) return ann_fail(&h->base, ANN_ECORRUPT, "upper block count mismatch");
  if (present != h->count) return ann_fail(&h->base, ANN_ECORRUPT, "node count mismatch");
  if (h->count == 0) {
    if (h->entry != HNSW_NONE || h->max_level != 0)
      return ann_fail(&h->base, ANN_ECORRUPT, "entry point in an empty index");
  } else if (h->entry >= h->n || !(h->node[2 * (size_t)h->entry] & NODE_PRESENT) ||
             (int)node_level(h, h->entry) != h->max_level) {
    return ann_fail(&h->base, ANN_ECORRUPT, "bad entry point");
  }
  for (uint32_t i = 0; i < h->n; i++) {
    if (!(h->node[2 * (size_t)i] & NODE_PRESENT)) continue;
    int lv = (int)node_level(h, i);
    for (int l = 0; l <= lv; l++) {
      const uint32_t *b = links(h, i, l);
      if (b[0] > (l ? h->M : h->M0))
        return ann_fail(&h->base, ANN_ECORRUPT, "node %u level %d: %u links", i, l, b[0]);
      for (uint32_t j = 1; j <= b[0]; j++) {
        uint32_t t = b[j];
        if (t >= h->n || t == i || !(h->node[2 * (size_t)t] & NODE_PRESENT) ||
            (int)node_level(h, t) < l)
          return ann_fail(&h->base, ANN_ECORRUPT, "node %u level %d: bad link %u", i, l, t);
      }
    }
  }
  return ANN_OK;
}

/* little-endian words from the image into a malloc'd host array */
static uint32_t *copy_words(const uint8_t *src, size_t n) {
  uint32_t *w = malloc(n ? n * 4 : 4);
  if (!w) return NULL;
  util_get_le32s(w, src, n);
  return w;
}

int hnsw_load(const void *img, size_t len, int dim, ann_metric m, ann_elem e,
              ann_vec_fn vec, void *ctx, hnsw **out) {
  *out = NULL;
  hnsw *h = alloc_handle(dim, m, e, vec, ctx);
  if (!h) return ANN_ENOMEM;
  *out = h;
  h->broken = 1; /* until the image is accepted */
  int rc = ann_check_args(&h->base);
  if (rc != ANN_OK) return rc;
  const uint8_t *p = img;
  if ((rc = ann_hdr_check(&h->base, &hnsw_img, p, len)) != ANN_OK) return rc;
  uint32_t M = util_get_le32(p + 28), M0 = util_get_le32(p + 32), efc = util_get_le32(p + 36);
  if (M < 2 || M > HNSW_MAX_M || M0 != 2 * M || efc < 1 || efc > HNSW_MAX_EFC ||
      util_get_le32(p + 48) != 0 || util_get_le64(p + 72) != 0)
    return ann_fail(&h->base, ANN_ECORRUPT, "bad HNSW header");
  set_m(h, M);
  h->efc = efc;
  h->n = util_get_le32(p + 40);
  h->count = util_get_le32(p + 44);
  h->entry = util_get_le32(p + 52);
  uint32_t top = util_get_le32(p + 56);
  h->n_up = util_get_le32(p + 60);
  h->rng = util_get_le64(p + 64);
  if (h->n == HNSW_NONE || h->count > h->n || top > HNSW_MAX_LEVEL)
    return ann_fail(&h->base, ANN_ECORRUPT, "bad HNSW header");
  h->max_level = (int)top;
  uint64_t l0w = (uint64_t)h->n * (1 + M0), nodew = (uint64_t)h->n * 2,
           upw = (uint64_t)h->n_up * (1 + M);
  uint64_t want = HNSW_HDR + (l0w + nodew + upw) * 4;
  if ((rc = ann_size_check(&h->base, &hnsw_img, len, want)) != ANN_OK) return rc;
  const uint8_t *body = p + HNSW_HDR;
  if (util_host_le() && ((uintptr_t)p & 3) == 0) { /* in place */
    h->l0 = (uint32_t *)(uintptr_t)body;
    h->node = h->l0 + l0w;
    h->up = h->node + nodew;
    h->owned = 0;
  } else {
    h->l0 = copy_words(body, (size_t)l0w);
    h->node = copy_words(body + l0w * 4, (size_t)nodew);
    h->up = copy_words(body + (l0w + nodew) * 4, (size_t)upw);
    h->owned = 1;
    h->ncap = h->n;
    h->upcap = h->n_up;
    if (!h->l0 || !h->node || !h->up) return ann_fail(&h->base, ANN_ENOMEM, "out of memory");
  }
  if ((rc = check_graph(h)) != ANN_OK) return rc;
  h->broken = 0;
  return ANN_OK;
}

