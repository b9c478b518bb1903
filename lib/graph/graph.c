/*
** lib/graph/graph.c - the adjacency index of graph.h (kg_adj), breadth-first
** search and spreading activation over it.  Name resolution is resolve.c.
**
** The index.  The entity ids, sorted, give each entity its dense index (its
** position): a subtraction when the ids are consecutive, else a lookup in
** an open-addressing hash table of the positions (linear probing, at most
** half full; a binary search would cost a cache miss per step, and a build
** looks up two ends per edge).  Each direction is one CSR: off[n + 1] into
** an array of kg_nb, the out list of an entity holding the edges it is the
** src of (neighbour: dst), its in list the edges it is the dst of
** (neighbour: src).  Every list is sorted by (neighbour, relation id, type,
** weight): dense order is id order, so that is the header's (neighbour id,
** relation id) order, and entries equal on all four are identical, so the
** order is total.  KG_BOTH merges a node's two lists on the fly (the out
** entry first on a tie) and skips the in entries of self-loops: an edge is
** followed once per direction it can be followed in, a self-loop once.
** Relation types are interned into dense codes (the sorted distinct types
** of the kept edges), so a type filter is a bitmap over the codes whatever
** the codes' range.
**
** Traversals never change the index: what a call needs for itself (visited
** stamps, a queue, activation values) is a scratch taken from a pool of
** free ones (a mutex-guarded list, as in lib/ann/hnsw.c) and given back.
** A scratch is sized for the graph once; "visited" is a generation stamp
** per entity, so a call neither allocates per node nor clears anything
** proportional to the graph (except once every 2^32 calls on a scratch).
*/
#include "config.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

/* One entry of a neighbour list. */
typedef struct kg_nb {
  uint32_t node; /* the neighbour's dense index */
  uint32_t tc;   /* the relation type's dense code: kg_adj.types[tc] */
  int64_t rel;   /* the relation's id */
  double w;      /* the weight as activation uses it: 0 unless finite and > 0 */
} kg_nb;

/* Per-call working memory, sized for the graph's n entities.  Malloc'd by
** scratch_get, owned by the pool between calls, freed by kg_adj_free. */
typedef struct kg_scratch {
  struct kg_scratch *next; /* in the pool's free list */
  uint32_t *stamp;         /* visited: stamp[v] == gen */
  uint32_t *queue;         /* BFS queue / the nodes an activation touched */
  double *act, *add;       /* activation: value and this step's income (lazy) */
  uint32_t gen;
} kg_scratch;

typedef struct kg_pool {
  pthread_mutex_t mu;
  kg_scratch *free;
} kg_pool;

/* The index.  Malloc'd by kg_adj_build with everything it points to;
** freed by kg_adj_free (no call may be running on it then). */
struct kg_adj {
  size_t n;              /* entities */
  int64_t *ids;          /* n, increasing */
  int consecutive;       /* ids[i] == ids[0] + i */
  uint32_t *hslot;       /* hmask + 1 slots: a dense index, UINT32_MAX if empty */
  size_t hmask;          /* (no table when consecutive) */
  size_t ne;             /* edges kept */
  size_t *out_off, *in_off; /* n + 1 each */
  kg_nb *out, *in;       /* ne each (at least 1, never NULL) */
  uint32_t *types;       /* the distinct relation types, increasing */
  size_t ntypes;
  kg_pool *pool;
};

/* More entities than this do not fit a dense index (UINT32_MAX marks a
** dangling endpoint while building). */
#define KG_MAX_ENT ((size_t)UINT32_MAX - 1)

/* ---- building ---------------------------------------------------------- */

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static uint64_t dbits(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
}

/* The total order of a neighbour list: <0, 0, >0. */
static int nb_cmp(const kg_nb *x, const kg_nb *y) {
  if (x->node != y->node) return x->node < y->node ? -1 : 1;
  if (x->rel != y->rel) return x->rel < y->rel ? -1 : 1;
  if (x->tc != y->tc) return x->tc < y->tc ? -1 : 1;
  uint64_t a = dbits(x->w), b = dbits(y->w);
  return (a > b) - (a < b);
}

static int nb_qcmp(const void *a, const void *b) { return nb_cmp(a, b); }

/* Sorts one neighbour list: insertion sort for the short ones (most). */
static void nb_sort(kg_nb *v, size_t n) {
  if (n > 16) {
    qsort(v, n, sizeof *v, nb_qcmp);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    kg_nb t = v[i];
    size_t j = i;
    for (; j > 0 && nb_cmp(&v[j - 1], &t) > 0; j--) v[j] = v[j - 1];
    v[j] = t;
  }
}

static size_t id_hash(int64_t id) {
  uint64_t x = (uint64_t)id;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

/* The dense index of entity id into *ix; 0 when there is none. */
static int adj_find(const kg_adj *g, int64_t id, uint32_t *ix) {
  if (g->n == 0 || id < g->ids[0] || id > g->ids[g->n - 1]) return 0;
  if (g->consecutive) {
    *ix = (uint32_t)((uint64_t)id - (uint64_t)g->ids[0]);
    return 1;
  }
  for (size_t h = id_hash(id) & g->hmask;; h = (h + 1) & g->hmask) {
    uint32_t v = g->hslot[h];
    if (v == UINT32_MAX) return 0;
    if (g->ids[v] == id) {
      *ix = v;
      return 1;
    }
  }
}

/* The hash table of the (sorted, distinct) ids. */
static int hash_build(kg_adj *g) {
  size_t cap = 16;
  while (cap < 2 * g->n) cap *= 2;
  if (cap > SIZE_MAX / sizeof *g->hslot) return KG_ENOMEM;
  g->hslot = malloc(cap * sizeof *g->hslot);
  if (!g->hslot) return KG_ENOMEM;
  memset(g->hslot, 0xff, cap * sizeof *g->hslot);
  g->hmask = cap - 1;
  for (size_t i = 0; i < g->n; i++) {
    size_t h = id_hash(g->ids[i]) & g->hmask;
    while (g->hslot[h] != UINT32_MAX) h = (h + 1) & g->hmask;
    g->hslot[h] = (uint32_t)i;
  }
  return KG_OK;
}

/* The dense code of relation type t (one of g->types). */
static uint32_t type_code(const kg_adj *g, uint32_t t) {
  size_t lo = 0, hi = g->ntypes;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (g->types[mid] < t) lo = mid + 1;
    else hi = mid;
  }
  return (uint32_t)lo;
}

/* g->types: the distinct types of the kept edges (end[i] != UINT32_MAX),
** increasing.  A presence table when the types are small, else a sort. */
static int intern_types(kg_adj *g, const kg_edge *edges, size_t nedges, const uint32_t *end) {
  uint32_t tmax = 0;
  for (size_t i = 0; i < nedges; i++)
    if (end[2 * i] != UINT32_MAX && edges[i].type > tmax) tmax = edges[i].type;
  size_t kept = g->ne;
  if (kept == 0) return KG_OK;
  if ((size_t)tmax < 65536 || (size_t)tmax < 4 * kept) {
    unsigned char *seen = calloc((size_t)tmax + 1, 1);
    if (!seen) return KG_ENOMEM;
    size_t nt = 0;
    for (size_t i = 0; i < nedges; i++)
      if (end[2 * i] != UINT32_MAX && !seen[edges[i].type]) {
        seen[edges[i].type] = 1;
        nt++;
      }
    g->types = malloc(nt * sizeof *g->types);
    if (!g->types) {
      free(seen);
      return KG_ENOMEM;
    }
    for (size_t t = 0, k = 0; t <= (size_t)tmax; t++)
      if (seen[t]) g->types[k++] = (uint32_t)t;
    g->ntypes = nt;
    free(seen);
    return KG_OK;
  }
  g->types = malloc(kept * sizeof *g->types);
  if (!g->types) return KG_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < nedges; i++)
    if (end[2 * i] != UINT32_MAX) g->types[k++] = edges[i].type;
  qsort(g->types, k, sizeof *g->types, cmp_u32);
  size_t nt = 0;
  for (size_t i = 0; i < k; i++)
    if (nt == 0 || g->types[nt - 1] != g->types[i]) g->types[nt++] = g->types[i];
  g->ntypes = nt;
  return KG_OK;
}

/* Both CSRs from the endpoints (end: 2 per edge, UINT32_MAX when
** dangling) and the degrees already counted into out_off[v + 1] and
** in_off[v + 1]: offsets by prefix sums, one pass over the edges to place
** each kept edge in its src's out list and its dst's in list, then every
** list sorted. */
static int csr_fill(kg_adj *g, const kg_edge *edges, size_t nedges, const uint32_t *end) {
  size_t n = g->n, ne = g->ne ? g->ne : 1;
  size_t *po = malloc((n ? n : 1) * sizeof *po), *pi = malloc((n ? n : 1) * sizeof *pi);
  g->out = malloc(ne * sizeof *g->out);
  g->in = malloc(ne * sizeof *g->in);
  if (!po || !pi || !g->out || !g->in) {
    free(po);
    free(pi);
    return KG_ENOMEM;
  }
  for (size_t v = 0; v < n; v++) {
    g->out_off[v + 1] += g->out_off[v];
    g->in_off[v + 1] += g->in_off[v];
  }
  memcpy(po, g->out_off, n * sizeof *po);
  memcpy(pi, g->in_off, n * sizeof *pi);
  for (size_t i = 0; i < nedges; i++) {
    uint32_t s = end[2 * i], d = end[2 * i + 1];
    if (s == UINT32_MAX) continue;
    const kg_edge *e = &edges[i];
    double w = isfinite(e->weight) && e->weight > 0 ? e->weight : 0.0;
    kg_nb b = {d, type_code(g, e->type), e->id, w};
    g->out[po[s]++] = b;
    b.node = s;
    g->in[pi[d]++] = b;
  }
  free(po);
  free(pi);
  for (size_t v = 0; v < n; v++) {
    nb_sort(g->out + g->out_off[v], g->out_off[v + 1] - g->out_off[v]);
    nb_sort(g->in + g->in_off[v], g->in_off[v + 1] - g->in_off[v]);
  }
  return KG_OK;
}

/* Builds the index: ids copied and sorted (duplicates: KG_EINVAL) and
** hashed, each edge's endpoints looked up once (and the degrees counted),
** the types interned, then the two CSRs.  On success *out owns everything;
** the caller's arrays are not kept. */
int kg_adj_build(const int64_t *entities, size_t nent, const kg_edge *edges, size_t nedges,
                 kg_adj **out) {
  if (!out) return KG_EINVAL;
  *out = NULL;
  if ((!entities && nent) || (!edges && nedges) || nent > KG_MAX_ENT) return KG_EINVAL;
  if (nedges > SIZE_MAX / (2 * sizeof(uint32_t)) || nedges > SIZE_MAX / sizeof(kg_nb))
    return KG_ENOMEM;
  kg_adj *g = calloc(1, sizeof *g);
  if (!g) return KG_ENOMEM;
  int rc = KG_OK;
  uint32_t *end = NULL;
  g->n = nent;
  g->ids = malloc((nent ? nent : 1) * sizeof *g->ids);
  g->pool = calloc(1, sizeof *g->pool);
  if (!g->ids || !g->pool) {
    free(g->ids);
    free(g->pool);
    free(g);
    return KG_ENOMEM;
  }
  pthread_mutex_init(&g->pool->mu, NULL);
  if (nent) memcpy(g->ids, entities, nent * sizeof *g->ids);
  int sorted = 1;
  for (size_t i = 1; i < nent && sorted; i++) sorted = g->ids[i - 1] < g->ids[i];
  if (!sorted) qsort(g->ids, nent, sizeof *g->ids, cmp_i64);
  for (size_t i = 1; i < nent; i++)
    if (g->ids[i - 1] == g->ids[i]) rc = KG_EINVAL;
  g->consecutive = nent > 0 && (uint64_t)g->ids[nent - 1] - (uint64_t)g->ids[0] == nent - 1;
  if (rc == KG_OK && !g->consecutive) rc = hash_build(g);

  if (rc == KG_OK) {
    end = malloc((nedges ? nedges : 1) * 2 * sizeof *end);
    g->out_off = calloc(nent + 1, sizeof *g->out_off);
    g->in_off = calloc(nent + 1, sizeof *g->in_off);
    if (!end || !g->out_off || !g->in_off) rc = KG_ENOMEM;
  }
  if (rc == KG_OK) {
    for (size_t i = 0; i < nedges; i++) {
      uint32_t s, d;
      if (adj_find(g, edges[i].src, &s) && adj_find(g, edges[i].dst, &d)) {
        end[2 * i] = s;
        end[2 * i + 1] = d;
        g->out_off[s + 1]++;
        g->in_off[d + 1]++;
        g->ne++;
      } else {
        end[2 * i] = end[2 * i + 1] = UINT32_MAX;
      }
    }
    rc = intern_types(g, edges, nedges, end);
  }
  if (rc == KG_OK) rc = csr_fill(g, edges, nedges, end);
  free(end);
  if (rc != KG_OK) {
    kg_adj_free(g);
    return rc;
  }
  *out = g;
  return KG_OK;
}

static void scratch_free(kg_scratch *s) {
  if (!s) return;
  free(s->stamp);
  free(s->queue);
  free(s->act);
  free(s->add);
  free(s);
}

void kg_adj_free(kg_adj *g) {
  if (!g) return;
  if (g->pool) {
    kg_scratch *s = g->pool->free;
    while (s) {
      kg_scratch *next = s->next;
      scratch_free(s);
      s = next;
    }
    pthread_mutex_destroy(&g->pool->mu);
    free(g->pool);
  }
  free(g->ids);
  free(g->hslot);
  free(g->out_off);
  free(g->in_off);
  free(g->out);
  free(g->in);
  free(g->types);
  free(g);
}

size_t kg_adj_entities(const kg_adj *g) { return g ? g->n : 0; }

/* The edges kept: those whose src and dst are both entities. */
size_t kg_adj_edges(const kg_adj *g) { return g ? g->ne : 0; }

/* ---- scratch ----------------------------------------------------------- */

/* A scratch from the pool or a new one, with a fresh generation (and the
** activation arrays when act); NULL when out of memory. */
static kg_scratch *scratch_get(const kg_adj *g, int act) {
  size_t n = g->n ? g->n : 1;
  pthread_mutex_lock(&g->pool->mu);
  kg_scratch *s = g->pool->free;
  if (s) g->pool->free = s->next;
  pthread_mutex_unlock(&g->pool->mu);
  if (!s) {
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->stamp = calloc(n, sizeof *s->stamp);
    s->queue = malloc(n * sizeof *s->queue);
    if (!s->stamp || !s->queue) {
      scratch_free(s);
      return NULL;
    }
  }
  if (act && !s->act) {
    s->act = malloc(n * sizeof *s->act);
    s->add = malloc(n * sizeof *s->add);
    if (!s->act || !s->add) {
      scratch_free(s);
      return NULL;
    }
  }
  if (++s->gen == 0) {
    memset(s->stamp, 0, n * sizeof *s->stamp);
    s->gen = 1;
  }
  return s;
}

static void scratch_put(const kg_adj *g, kg_scratch *s) {
  pthread_mutex_lock(&g->pool->mu);
  s->next = g->pool->free;
  g->pool->free = s;
  pthread_mutex_unlock(&g->pool->mu);
}

/* ---- neighbours -------------------------------------------------------- */

/* The neighbours of one node in the direction(s) followed, in list order. */
typedef struct nb_iter {
  const kg_nb *o, *oe, *i, *ie;
  uint32_t self;
  int both;
} nb_iter;

static void nb_begin(const kg_adj *g, uint32_t u, int dir, nb_iter *it) {
  it->o = it->oe = g->out;
  it->i = it->ie = g->in;
  if (dir & KG_OUT) {
    it->o = g->out + g->out_off[u];
    it->oe = g->out + g->out_off[u + 1];
  }
  if (dir & KG_IN) {
    it->i = g->in + g->in_off[u];
    it->ie = g->in + g->in_off[u + 1];
  }
  it->self = u;
  it->both = dir == KG_BOTH;
}

/* The next neighbour entry, NULL after the last. */
static inline const kg_nb *nb_next(nb_iter *it) {
  for (;;) {
    if (it->o < it->oe && (it->i == it->ie || nb_cmp(it->o, it->i) <= 0)) return it->o++;
    if (it->i == it->ie) return NULL;
    const kg_nb *e = it->i++;
    if (!(it->both && e->node == it->self)) return e;
  }
}

/* ---- breadth-first search ---------------------------------------------- */

/* Bits over the type codes that a filter allows. */
#define KG_FILTER_STACK 64 /* words: 4096 types without a malloc */

static int bfs_filter(const kg_adj *g, const kg_bfs_opts *o, uint64_t *stack, uint64_t **bits) {
  size_t words = (g->ntypes + 63) / 64;
  uint64_t *b = words <= KG_FILTER_STACK ? stack : malloc(words * sizeof *b);
  if (!b) return KG_ENOMEM;
  memset(b, 0, words * sizeof *b);
  for (size_t i = 0; i < o->ntypes; i++) {
    uint32_t c = type_code(g, o->types[i]);
    if (c < g->ntypes && g->types[c] == o->types[i]) b[c / 64] |= (uint64_t)1 << (c % 64);
  }
  *bits = b;
  return KG_OK;
}

/* BFS with a queue in the scratch: row k is the k-th node discovered, so
** rows come out in BFS order and the queue holds only dense indexes.  A
** node at max_depth is not expanded; the search stops at limit rows.
** Options: dir 0 is KG_OUT; types non-NULL with ntypes 0 follows nothing. */
int kg_bfs(const kg_adj *g, int64_t start, const kg_bfs_opts *o, kg_bfs_row **out, size_t *nout) {
  if (!out || !nout) return KG_EINVAL;
  *out = NULL;
  *nout = 0;
  if (!g || !o) return KG_EINVAL;
  int dir = o->dir ? o->dir : KG_OUT;
  if (dir < KG_OUT || dir > KG_BOTH || o->max_depth < 0 || (!o->types && o->ntypes))
    return KG_EINVAL;
  uint32_t s0;
  if (!adj_find(g, start, &s0)) return KG_ENOTFOUND;

  uint64_t stack[KG_FILTER_STACK], *allow = NULL;
  if (o->types && bfs_filter(g, o, stack, &allow)) return KG_ENOMEM;
  size_t limit = o->limit && o->limit < g->n ? o->limit : g->n;
  size_t cap = limit < 32 ? limit : 32;
  kg_bfs_row *rows = malloc(cap * sizeof *rows);
  kg_scratch *s = rows ? scratch_get(g, 0) : NULL;
  if (!s) {
    free(rows);
    if (allow != stack) free(allow);
    return KG_ENOMEM;
  }
  int rc = KG_OK;
  uint32_t gen = s->gen, *stamp = s->stamp, *queue = s->queue;
  stamp[s0] = gen;
  queue[0] = s0;
  rows[0] = (kg_bfs_row){start, 0, start, -1, UINT32_MAX};
  size_t nrows = 1;
  for (size_t head = 0; head < nrows && nrows < limit; head++) {
    int depth = rows[head].depth;
    if (depth >= o->max_depth) break; /* the rest are at max_depth too */
    uint32_t u = queue[head];
    nb_iter it;
    nb_begin(g, u, dir, &it);
    for (const kg_nb *e; (e = nb_next(&it)) != NULL;) {
      if (stamp[e->node] == gen) continue;
      if (allow && !((allow[e->tc / 64] >> (e->tc % 64)) & 1)) continue;
      stamp[e->node] = gen;
      if (nrows == cap) {
        size_t ncap = cap * 2 < limit ? cap * 2 : limit;
        kg_bfs_row *r = realloc(rows, ncap * sizeof *rows);
        if (!r) {
          rc = KG_ENOMEM;
          break;
        }
        rows = r;
        cap = ncap;
      }
      queue[nrows] = e->node;
      rows[nrows++] = (kg_bfs_row){g->ids[e->node], depth + 1, g->ids[u], e->rel, g->types[e->tc]};
      if (nrows == limit) break;
    }
    if (rc != KG_OK) break;
  }
  scratch_put(g, s);
  if (allow != stack) free(allow);
  if (rc != KG_OK) {
    free(rows);
    return rc;
  }
  *out = rows;
  *nout = nrows;
  return KG_OK;
}

/* ---- spreading activation ---------------------------------------------- */

static int act_cmp(const void *pa, const void *pb) {
  const kg_act_row *a = pa, *b = pb;
  if (a->activation != b->activation) return a->activation > b->activation ? -1 : 1;
  return (a->id > b->id) - (a->id < b->id);
}

/* Puts node v among the touched ones (value and income 0) if it is not. */
static inline void act_touch(kg_scratch *s, uint32_t v, size_t *nt) {
  if (s->stamp[v] == s->gen) return;
  s->stamp[v] = s->gen;
  s->act[v] = s->add[v] = 0.0;
  s->queue[(*nt)++] = v;
}

/* One node's spreading: a * decay * (w / W) to each neighbour over an edge
** of weight w > 0 (W: the sum of the weights in list order; should it
** overflow, every weight is first divided by the largest).  Returns 1 when
** something was given. */
static int act_spread(const kg_adj *g, kg_scratch *s, uint32_t u, int dir, double decay,
                      size_t *nt) {
  nb_iter it;
  double W = 0.0, wmax = 0.0, scale = 1.0, a = s->act[u];
  nb_begin(g, u, dir, &it);
  for (const kg_nb *e; (e = nb_next(&it)) != NULL;) {
    W += e->w;
    if (e->w > wmax) wmax = e->w;
  }
  if (!(W > 0.0)) return 0;
  if (isinf(W)) {
    scale = 1.0 / wmax;
    W = 0.0;
    nb_begin(g, u, dir, &it);
    for (const kg_nb *e; (e = nb_next(&it)) != NULL;) W += e->w * scale;
  }
  nb_begin(g, u, dir, &it);
  for (const kg_nb *e; (e = nb_next(&it)) != NULL;) {
    if (e->w == 0.0) continue;
    act_touch(s, e->node, nt);
    s->add[e->node] += a * decay * (e->w * scale / W);
  }
  return 1;
}

/* Activation over the touched nodes only (the scratch's queue lists them
** in the order first touched: seeds in the order given, then as reached).
** A step: the nodes touched before it with a >= threshold spread into add[]
** from their act[] (unchanged during the step), then every touched node
** takes its add[].  The loop ends early when no node spreads or a step
** changes no value (later steps would repeat it).  Duplicate seeds add up;
** seed activations must be finite (KG_EINVAL); a negative one is allowed
** (below the threshold: it does not spread).  The result: act >= threshold,
** highest first, equal values (compared exactly) by increasing id; no rows:
** *out NULL, *nout 0. */
int kg_activate(const kg_adj *g, const int64_t *seeds, const double *seed_act, size_t nseeds,
                const kg_act_opts *o, kg_act_row **out, size_t *nout) {
  if (!out || !nout) return KG_EINVAL;
  *out = NULL;
  *nout = 0;
  if (!g || !o || (!seeds && nseeds)) return KG_EINVAL;
  double decay = o->decay == 0.0 ? 0.5 : o->decay;
  double th = o->threshold == 0.0 ? 0.01 : o->threshold;
  int steps = o->steps ? o->steps : 3;
  int dir = o->dir ? o->dir : KG_BOTH;
  if (!(decay > 0.0 && decay <= 1.0) || !(th > 0.0) || isinf(th) || steps < 0 || dir < KG_OUT ||
      dir > KG_BOTH)
    return KG_EINVAL;
  for (size_t i = 0; seed_act && i < nseeds; i++)
    if (!isfinite(seed_act[i])) return KG_EINVAL;

  kg_scratch *s = scratch_get(g, 1);
  if (!s) return KG_ENOMEM;
  size_t nt = 0;
  for (size_t i = 0; i < nseeds; i++) {
    uint32_t v;
    if (!adj_find(g, seeds[i], &v)) continue;
    act_touch(s, v, &nt);
    s->act[v] += seed_act ? seed_act[i] : 1.0;
  }
  for (int step = 0; step < steps; step++) {
    size_t before = nt;
    int spread = 0, changed = 0;
    for (size_t k = 0; k < before; k++) {
      uint32_t u = s->queue[k];
      if (s->act[u] >= th) spread |= act_spread(g, s, u, dir, decay, &nt);
    }
    if (!spread) break;
    for (size_t k = 0; k < nt; k++) {
      uint32_t v = s->queue[k];
      double a = s->act[v] + s->add[v];
      changed |= a != s->act[v];
      s->act[v] = a;
      s->add[v] = 0.0;
    }
    if (!changed) break;
  }
  size_t nr = 0;
  for (size_t k = 0; k < nt; k++) nr += s->act[s->queue[k]] >= th;
  kg_act_row *rows = NULL;
  if (nr) {
    rows = malloc(nr * sizeof *rows);
    if (!rows) {
      scratch_put(g, s);
      return KG_ENOMEM;
    }
    nr = 0;
    for (size_t k = 0; k < nt; k++) {
      uint32_t v = s->queue[k];
      if (s->act[v] >= th) rows[nr++] = (kg_act_row){g->ids[v], s->act[v]};
    }
    qsort(rows, nr, sizeof *rows, act_cmp);
  }
  scratch_put(g, s);
  *out = rows;
  *nout = nr;
  return KG_OK;
}
