/*
** test/unit/test_graph.c - lib/graph: the adjacency index, breadth-first search
** against two references on random graphs (an edge-list BFS for the exact
** rows, repeated relaxation for the least depths), spreading activation by
** hand and against a dense reference, name resolution (kinds, folding,
** edits, ranking, malformed UTF-8) against a reference built otherwise,
** the bounded Levenshtein distance against the full table, bad arguments,
** and concurrent traversals of one index.
**
** Random cases are replayable: H5MEM_TEST_SEED sets the seed.
*/
#include "config.h"

#include <check.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "testutil.h"

/* ---- random graphs ----------------------------------------------------- */

typedef struct rgraph {
  int64_t ent[64];
  size_t nent;
  kg_edge e[256];
  size_t ne;
} rgraph;

static int64_t pick(t_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(t_next(r) % (uint64_t)(hi - lo + 1));
}

static int has_ent(const rgraph *G, int64_t id) {
  for (size_t i = 0; i < G->nent; i++)
    if (G->ent[i] == id) return 1;
  return 0;
}

static size_t ent_ix(const rgraph *G, int64_t id) {
  for (size_t i = 0; i < G->nent; i++)
    if (G->ent[i] == id) return i;
  return SIZE_MAX;
}

static void shuffle_ent(t_rng *r, int64_t *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = t_next(r) % i;
    int64_t t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

static void shuffle_edges(t_rng *r, kg_edge *v, size_t n) {
  for (size_t i = n; i > 1; i--) {
    size_t j = t_next(r) % i;
    kg_edge t = v[i - 1];
    v[i - 1] = v[j];
    v[j] = t;
  }
}

/* Entities consecutive or sparse (negative ids too), in random order;
** edges with dangling ends, self-loops, parallel edges, unique relation ids
** in random order, types small or huge, weights with zeros, negatives,
** NaN and infinities. */
static void rg_make(t_rng *r, rgraph *G) {
  G->nent = 1 + t_next(r) % 40;
  int consecutive = t_next(r) % 3 == 0;
  int64_t base = pick(r, -50, 50);
  for (size_t i = 0; i < G->nent; i++) {
    if (consecutive) {
      G->ent[i] = base + (int64_t)i;
      continue;
    }
    int64_t id;
    do id = pick(r, -200, 200);
    while (has_ent(G, id));
    G->ent[i] = id;
  }
  shuffle_ent(r, G->ent, G->nent);
  G->ne = t_next(r) % (4 * G->nent + 1);
  int bigtypes = t_next(r) % 4 == 0;
  for (size_t k = 0; k < G->ne; k++) {
    kg_edge *e = &G->e[k];
    e->id = (int64_t)k * 3 - 40;
    e->src = G->ent[t_next(r) % G->nent];
    e->dst = G->ent[t_next(r) % G->nent];
    unsigned roll = (unsigned)(t_next(r) % 20);
    if (roll == 0) e->src = 1000 + (int64_t)(t_next(r) % 5); /* dangling */
    else if (roll == 1) e->dst = -1000;
    else if (roll == 2) e->dst = e->src; /* self-loop */
    else if (roll <= 4 && k > 0) {       /* parallel (same or reversed) */
      e->src = G->e[k - 1].src;
      e->dst = G->e[k - 1].dst;
      if (roll == 4) {
        int64_t t = e->src;
        e->src = e->dst;
        e->dst = t;
      }
    }
    e->type = bigtypes ? (t_next(r) % 2 ? UINT32_MAX - 1 - (uint32_t)(t_next(r) % 3)
                                        : (uint32_t)(t_next(r) % 4))
                       : (uint32_t)(t_next(r) % 4);
    unsigned wr = (unsigned)(t_next(r) % 40);
    e->weight = wr == 0 ? -1.0 : wr == 1 ? NAN : wr == 2 ? 0.0 : wr == 3 ? INFINITY
              : 0.05 + (double)(t_next(r) >> 11) / 9007199254740992.0 * 2.0;
  }
  shuffle_edges(r, G->e, G->ne);
}

static int kept(const rgraph *G, const kg_edge *e) {
  return has_ent(G, e->src) && has_ent(G, e->dst);
}

static int type_ok(const uint32_t *types, size_t nt, uint32_t t) {
  if (!types) return 1;
  for (size_t i = 0; i < nt; i++)
    if (types[i] == t) return 1;
  return 0;
}

static kg_adj *rg_adj(const rgraph *G) {
  kg_adj *g = NULL;
  ck_assert_int_eq(kg_adj_build(G->ent, G->nent, G->e, G->ne, &g), KG_OK);
  ck_assert_ptr_nonnull(g);
  return g;
}

/* ---- BFS references ---------------------------------------------------- */

typedef struct cand {
  int64_t nbr, rel;
  uint32_t type;
} cand;

static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  if (a->nbr != b->nbr) return a->nbr < b->nbr ? -1 : 1;
  return (a->rel > b->rel) - (a->rel < b->rel);
}

static int row_has(const kg_bfs_row *rows, size_t n, int64_t id) {
  for (size_t i = 0; i < n; i++)
    if (rows[i].id == id) return 1;
  return 0;
}

/* The header's rule over the raw edge list: expand in BFS order, each
** node's neighbours gathered from every edge and sorted by (id, relation
** id); an edge in both directions of KG_BOTH (a self-loop) once. */
static size_t ref_bfs(const rgraph *G, int64_t start, int dir, int maxd, const uint32_t *types,
                      size_t nt, size_t limit, kg_bfs_row *rows) {
  cand c[2 * 256];
  size_t n = 1;
  rows[0] = (kg_bfs_row){start, 0, start, -1, UINT32_MAX};
  for (size_t head = 0; head < n && (!limit || n < limit); head++) {
    if (rows[head].depth >= maxd) break;
    int64_t u = rows[head].id;
    size_t nc = 0;
    for (size_t k = 0; k < G->ne; k++) {
      const kg_edge *e = &G->e[k];
      if (!kept(G, e) || !type_ok(types, nt, e->type)) continue;
      int out = (dir & KG_OUT) && e->src == u, in = (dir & KG_IN) && e->dst == u;
      if (out) c[nc++] = (cand){e->dst, e->id, e->type};
      if (in && !(out && e->src == e->dst)) c[nc++] = (cand){e->src, e->id, e->type};
    }
    qsort(c, nc, sizeof *c, cand_cmp);
    for (size_t i = 0; i < nc && (!limit || n < limit); i++) {
      if (row_has(rows, n, c[i].nbr)) continue;
      rows[n++] = (kg_bfs_row){c[i].nbr, rows[head].depth + 1, u, c[i].rel, c[i].type};
    }
  }
  return n;
}

/* The least depth of every entity by repeated relaxation over the edges
** (INT_MAX: beyond max_depth or unreachable). */
static void ref_depths(const rgraph *G, int64_t start, int dir, int maxd, const uint32_t *types,
                       size_t nt, int *dist) {
  for (size_t i = 0; i < G->nent; i++) dist[i] = INT_MAX;
  dist[ent_ix(G, start)] = 0;
  for (int r = 1; r <= maxd; r++)
    for (size_t k = 0; k < G->ne; k++) {
      const kg_edge *e = &G->e[k];
      if (!kept(G, e) || !type_ok(types, nt, e->type)) continue;
      size_t s = ent_ix(G, e->src), d = ent_ix(G, e->dst);
      if ((dir & KG_OUT) && dist[s] == r - 1 && dist[d] > r) dist[d] = r;
      if ((dir & KG_IN) && dist[d] == r - 1 && dist[s] > r) dist[s] = r;
    }
}

/* Every row after the first came over an edge of the right direction and
** type from a row one level up, earlier in the output. */
static void check_parents(const rgraph *G, const kg_bfs_row *rows, size_t n, int dir,
                          const uint32_t *types, size_t nt) {
  for (size_t i = 1; i < n; i++) {
    const kg_bfs_row *w = &rows[i];
    T_CHECK(w->depth >= rows[i - 1].depth, "row %zu: depth %d after %d", i, w->depth,
            rows[i - 1].depth);
    const kg_edge *e = NULL;
    for (size_t k = 0; k < G->ne; k++)
      if (G->e[k].id == w->relation) e = &G->e[k];
    T_CHECK(e != NULL, "row %zu: no relation %lld", i, (long long)w->relation);
    T_CHECK(kept(G, e) && e->type == w->type && type_ok(types, nt, e->type), "row %zu: type", i);
    int fwd = e->src == w->parent && e->dst == w->id, back = e->dst == w->parent && e->src == w->id;
    T_CHECK((dir & KG_OUT && fwd) || (dir & KG_IN && back), "row %zu: edge direction", i);
    size_t p = 0;
    while (p < i && rows[p].id != w->parent) p++;
    T_CHECK(p < i && rows[p].depth == w->depth - 1, "row %zu: parent not one level up", i);
  }
}

static void rows_eq(const kg_bfs_row *a, const kg_bfs_row *b, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    T_CHECK(a[i].id == b[i].id && a[i].depth == b[i].depth && a[i].parent == b[i].parent &&
                a[i].relation == b[i].relation && a[i].type == b[i].type,
            "%s: row %zu: (%lld %d %lld %lld %u) vs (%lld %d %lld %lld %u)", what, i,
            (long long)a[i].id, a[i].depth, (long long)a[i].parent, (long long)a[i].relation,
            a[i].type, (long long)b[i].id, b[i].depth, (long long)b[i].parent,
            (long long)b[i].relation, b[i].type);
}

START_TEST(test_bfs_random) {
  uint64_t seed = t_seed() + 1;
  t_rng r = {seed};
  kg_bfs_row ref[64];
  int dist[64];
  for (int iter = 0; iter < 3000; iter++) {
    rgraph G;
    rg_make(&r, &G);
    kg_adj *g = rg_adj(&G);
    size_t nk = 0;
    for (size_t k = 0; k < G.ne; k++) nk += kept(&G, &G.e[k]);
    ck_assert_uint_eq(kg_adj_entities(g), G.nent);
    ck_assert_uint_eq(kg_adj_edges(g), nk);
    /* the same graph given in another order */
    rgraph H = G;
    shuffle_ent(&r, H.ent, H.nent);
    shuffle_edges(&r, H.e, H.ne);
    kg_adj *h = rg_adj(&H);
    for (int q = 0; q < 6; q++) {
      uint32_t types[5];
      size_t nt = 0;
      const uint32_t *tp = NULL;
      unsigned tr = (unsigned)(t_next(&r) % 4);
      if (tr == 1) { /* a random subset, with a type no edge has */
        tp = types;
        for (uint32_t t = 0; t < 4; t++)
          if (t_next(&r) % 2) types[nt++] = t;
        types[nt++] = 99;
      } else if (tr == 2) {
        tp = types; /* non-NULL and empty: nothing is followed */
        if (t_next(&r) % 2) types[nt++] = G.ne ? G.e[t_next(&r) % G.ne].type : 0;
      }
      kg_bfs_opts o = {(int)(t_next(&r) % 4), (int)(t_next(&r) % 6), tp, nt, 0};
      int dir = o.dir ? o.dir : KG_OUT;
      int64_t start = G.ent[t_next(&r) % G.nent];
      kg_bfs_row *rows = NULL;
      size_t n = 0;
      ck_assert_int_eq(kg_bfs(g, start, &o, &rows, &n), KG_OK);
      size_t nref = ref_bfs(&G, start, dir, o.max_depth, tp, nt, 0, ref);
      T_CHECK(n == nref, "seed %llu iter %d: %zu rows, reference %zu",
              (unsigned long long)seed, iter, n, nref);
      rows_eq(rows, ref, n, "reference BFS");
      ref_depths(&G, start, dir, o.max_depth, tp, nt, dist);
      size_t reach = 0;
      for (size_t i = 0; i < G.nent; i++) reach += dist[i] != INT_MAX;
      T_CHECK(reach == n, "iter %d: %zu reachable, %zu rows", iter, reach, n);
      for (size_t i = 0; i < n; i++)
        T_CHECK(dist[ent_ix(&G, rows[i].id)] == rows[i].depth, "iter %d: depth of %lld", iter,
                (long long)rows[i].id);
      check_parents(&G, rows, n, dir, tp, nt);
      /* the same graph built from another order gives the same rows */
      kg_bfs_row *rows2 = NULL;
      size_t n2 = 0;
      ck_assert_int_eq(kg_bfs(h, start, &o, &rows2, &n2), KG_OK);
      ck_assert_uint_eq(n2, n);
      rows_eq(rows2, rows, n, "rebuilt");
      free(rows2);
      /* a limit keeps a prefix of the BFS order */
      o.limit = 1 + t_next(&r) % (n + 2);
      ck_assert_int_eq(kg_bfs(g, start, &o, &rows2, &n2), KG_OK);
      ck_assert_uint_eq(n2, o.limit < n ? o.limit : n);
      rows_eq(rows2, rows, n2, "limited");
      free(rows2);
      free(rows);
    }
    kg_adj_free(h);
    kg_adj_free(g);
  }
}
END_TEST

static void bfs_check(const kg_adj *g, int64_t start, kg_bfs_opts o, const kg_bfs_row *want,
                      size_t nwant, const char *what) {
  kg_bfs_row *rows = NULL;
  size_t n = 0;
  ck_assert_int_eq(kg_bfs(g, start, &o, &rows, &n), KG_OK);
  T_CHECK(n == nwant, "%s: %zu rows, want %zu", what, n, nwant);
  rows_eq(rows, want, n, what);
  free(rows);
}

START_TEST(test_bfs_small) {
  /* 1 -> 2 -> 4, 1 -> 3 -> 4, 4 -> 1, 5 isolated; relation ids out of order */
  int64_t ent[] = {5, 4, 3, 2, 1};
  kg_edge e[] = {{30, 1, 3, 7, 1}, {20, 1, 2, 8, 1}, {11, 2, 4, 7, 1},
                 {10, 3, 4, 8, 1}, {40, 4, 1, 9, 1}, {50, 1, 99, 7, 1}};
  kg_adj *g = NULL;
  ck_assert_int_eq(kg_adj_build(ent, 5, e, 6, &g), KG_OK);
  ck_assert_uint_eq(kg_adj_edges(g), 5);
  const kg_bfs_row s1 = {1, 0, 1, -1, UINT32_MAX}, s4 = {4, 0, 4, -1, UINT32_MAX};
  bfs_check(g, 1, (kg_bfs_opts){0, 5, NULL, 0, 0},
            (kg_bfs_row[]){s1, {2, 1, 1, 20, 8}, {3, 1, 1, 30, 7}, {4, 2, 2, 11, 7}}, 4, "out");
  bfs_check(g, 1, (kg_bfs_opts){KG_IN, 5, NULL, 0, 0},
            (kg_bfs_row[]){s1, {4, 1, 1, 40, 9}, {2, 2, 4, 11, 7}, {3, 2, 4, 10, 8}}, 4, "in");
  bfs_check(g, 4, (kg_bfs_opts){KG_BOTH, 1, NULL, 0, 0},
            (kg_bfs_row[]){s4, {1, 1, 4, 40, 9}, {2, 1, 4, 11, 7}, {3, 1, 4, 10, 8}}, 4, "both");
  bfs_check(g, 5, (kg_bfs_opts){KG_BOTH, 0, NULL, 0, 0},
            (kg_bfs_row[]){{5, 0, 5, -1, UINT32_MAX}}, 1, "isolated");
  uint32_t only8[] = {8};
  bfs_check(g, 1, (kg_bfs_opts){KG_OUT, 5, only8, 1, 0}, (kg_bfs_row[]){s1, {2, 1, 1, 20, 8}},
            2, "type 8");
  bfs_check(g, 1, (kg_bfs_opts){KG_OUT, 5, NULL, 0, 2}, (kg_bfs_row[]){s1, {2, 1, 1, 20, 8}}, 2,
            "limit 2");
  kg_bfs_row *rows = (kg_bfs_row *)&rows;
  size_t n;
  ck_assert_int_eq(kg_bfs(g, 99, &(kg_bfs_opts){0}, &rows, &n), KG_ENOTFOUND);
  ck_assert_ptr_null(rows);
  kg_adj_free(g);
}
END_TEST

/* ---- spreading activation ---------------------------------------------- */

typedef struct want_act {
  int64_t id;
  double a;
} want_act;

static void act_check(const kg_adj *g, const int64_t *seeds, const double *sa, size_t ns,
                      kg_act_opts o, const want_act *w, size_t nw, const char *what) {
  kg_act_row *rows = NULL;
  size_t n = 99;
  ck_assert_int_eq(kg_activate(g, seeds, sa, ns, &o, &rows, &n), KG_OK);
  T_CHECK(n == nw, "%s: %zu rows, want %zu", what, n, nw);
  for (size_t i = 0; i < n; i++)
    T_CHECK(rows[i].id == w[i].id && fabs(rows[i].activation - w[i].a) <= 1e-12,
            "%s: row %zu: %lld %.17g, want %lld %.17g", what, i, (long long)rows[i].id,
            rows[i].activation, (long long)w[i].id, w[i].a);
  free(rows);
}

START_TEST(test_act_hand) {
  /* chain 1 -> 2 -> 3 -> 4 */
  int64_t ent[] = {1, 2, 3, 4, 5, 6, 7, 8};
  kg_edge chain[] = {{1, 1, 2, 0, 1}, {2, 2, 3, 0, 1}, {3, 3, 4, 0, 1}};
  kg_adj *g = NULL;
  ck_assert_int_eq(kg_adj_build(ent, 4, chain, 3, &g), KG_OK);
  int64_t s1[] = {1}, s4[] = {4};
  /* out, 3 steps: t1 b .5; t2 b 1, c .25; t3 b 1.5, c .75, d .125 */
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 0, KG_OUT},
            (want_act[]){{2, 1.5}, {1, 1}, {3, .75}, {4, .125}}, 4, "chain out");
  /* threshold .3: c (.25 after t2) does not spread at t3 */
  act_check(g, s1, NULL, 1, (kg_act_opts){0, .3, 0, KG_OUT},
            (want_act[]){{2, 1.5}, {1, 1}, {3, .75}}, 3, "chain threshold");
  /* in, from the end, decay .8, 2 steps: c .8; then c 1.6, b .64 */
  act_check(g, s4, NULL, 1, (kg_act_opts){.8, 0, 2, KG_IN},
            (want_act[]){{3, 1.6}, {4, 1}, {2, .64}}, 3, "chain in");
  /* both, 2 steps: t1 b .5; t2: a gives b .5; b (.5, two edges) gives a
  ** and c .125 each */
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 2, KG_BOTH},
            (want_act[]){{1, 1.125}, {2, 1}, {3, .125}}, 3, "chain both");
  /* steps 1, decay 1, seed activations 2 and 4 and an unknown seed */
  int64_t s2[] = {1, 3, 77};
  double a2[] = {2, 4, 5};
  act_check(g, s2, a2, 3, (kg_act_opts){1, 0, 1, KG_OUT},
            (want_act[]){{3, 4}, {4, 4}, {1, 2}, {2, 2}}, 4, "seeds, ties by id");
  /* a duplicate seed adds up */
  int64_t s3[] = {2, 2};
  double a3[] = {.5, .25};
  act_check(g, s3, a3, 2, (kg_act_opts){.5, 0, 1, KG_OUT},
            (want_act[]){{2, .75}, {3, .375}}, 2, "duplicate seeds");
  /* a negative seed neither spreads nor is returned */
  double an[] = {-1};
  act_check(g, s1, an, 1, (kg_act_opts){0, 0, 0, 0}, NULL, 0, "negative seed");
  kg_adj_free(g);

  /* star: 1 -> 2 (w 1), 1 -> 3 (w 2), 1 -> 4 (w 1), 1 -> 5 (w -1), 1 -> 6 (NaN),
  ** 1 -> 7 (w 0) */
  kg_edge star[] = {{1, 1, 2, 0, 1},  {2, 1, 3, 0, 2},   {3, 1, 4, 0, 1},
                    {4, 1, 5, 0, -1}, {5, 1, 6, 0, NAN}, {6, 1, 7, 0, 0}};
  ck_assert_int_eq(kg_adj_build(ent, 8, star, 6, &g), KG_OK);
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 1, KG_OUT},
            (want_act[]){{1, 1}, {3, .25}, {2, .125}, {4, .125}}, 4, "star");
  /* both, 2 steps: leaves give back all they got (one edge each) */
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 2, 0},
            (want_act[]){{1, 1.25}, {3, .5}, {2, .25}, {4, .25}}, 4, "star both");
  kg_adj_free(g);

  /* cycle 1 -> 2 -> 3 -> 1, 3 steps: a 1.125, b 1.5, c .75 */
  kg_edge cyc[] = {{1, 1, 2, 0, 3}, {2, 2, 3, 0, 3}, {3, 3, 1, 0, 3}};
  ck_assert_int_eq(kg_adj_build(ent, 3, cyc, 3, &g), KG_OK);
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 3, KG_OUT},
            (want_act[]){{2, 1.5}, {1, 1.125}, {3, .75}}, 3, "cycle");
  kg_adj_free(g);

  /* a self-loop is one edge in KG_BOTH: 1 -> 1 (w 1), 1 -> 2 (w 1), 1 step */
  kg_edge loop[] = {{1, 1, 1, 0, 1}, {2, 1, 2, 0, 1}};
  ck_assert_int_eq(kg_adj_build(ent, 2, loop, 2, &g), KG_OK);
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 1, KG_BOTH},
            (want_act[]){{1, 1.25}, {2, .25}}, 2, "self-loop both");
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 1, KG_IN}, (want_act[]){{1, 1.5}}, 1,
            "self-loop in");
  kg_adj_free(g);

  /* weights whose sum overflows: still shared by weight */
  kg_edge huge[] = {{1, 1, 2, 0, 1e308}, {2, 1, 3, 0, 1.5e308}};
  ck_assert_int_eq(kg_adj_build(ent, 3, huge, 2, &g), KG_OK);
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 1, KG_OUT},
            (want_act[]){{1, 1}, {3, .3}, {2, .2}}, 3, "huge weights");
  /* W = 0: nothing spreads, and so the loop ends early */
  kg_edge zero[] = {{1, 1, 2, 0, 0}, {2, 1, 3, 0, -5}};
  kg_adj_free(g);
  ck_assert_int_eq(kg_adj_build(ent, 3, zero, 2, &g), KG_OK);
  act_check(g, s1, NULL, 1, (kg_act_opts){0, 0, 1000000, 0}, (want_act[]){{1, 1}}, 1, "W 0");
  /* no seeds */
  act_check(g, NULL, NULL, 0, (kg_act_opts){0, 0, 0, 0}, NULL, 0, "no seeds");
  kg_adj_free(g);
}
END_TEST

static double wclean(double w) { return isfinite(w) && w > 0 ? w : 0; }

/* The rule over the raw edge list, on dense arrays: an edge incident to u
** in a followed direction is spread over once (so a self-loop once). */
static void ref_act(const rgraph *G, const int64_t *seeds, const double *sa, size_t ns,
                    double decay, double th, int steps, int dir, double *act) {
  double next[64];
  for (size_t i = 0; i < G->nent; i++) act[i] = 0;
  for (size_t i = 0; i < ns; i++) {
    size_t v = ent_ix(G, seeds[i]);
    if (v != SIZE_MAX) act[v] += sa ? sa[i] : 1.0;
  }
  for (int s = 0; s < steps; s++) {
    memcpy(next, act, G->nent * sizeof *act);
    for (size_t u = 0; u < G->nent; u++) {
      if (!(act[u] >= th)) continue;
      int64_t id = G->ent[u];
      double W = 0;
      for (size_t k = 0; k < G->ne; k++) {
        const kg_edge *e = &G->e[k];
        if (kept(G, e) && (((dir & KG_OUT) && e->src == id) || ((dir & KG_IN) && e->dst == id)))
          W += wclean(e->weight);
      }
      if (!(W > 0)) continue;
      for (size_t k = 0; k < G->ne; k++) {
        const kg_edge *e = &G->e[k];
        if (!kept(G, e)) continue;
        int64_t v;
        if ((dir & KG_OUT) && e->src == id) v = e->dst;
        else if ((dir & KG_IN) && e->dst == id) v = e->src;
        else continue;
        next[ent_ix(G, v)] += act[u] * decay * (wclean(e->weight) / W);
      }
    }
    memcpy(act, next, G->nent * sizeof *act);
  }
}

START_TEST(test_act_random) {
  uint64_t seed = t_seed() + 2;
  t_rng r = {seed};
  double act[64];
  for (int iter = 0; iter < 1500; iter++) {
    rgraph G;
    rg_make(&r, &G);
    kg_adj *g = rg_adj(&G);
    for (int q = 0; q < 4; q++) {
      int64_t seeds[4];
      double sa[4];
      size_t ns = t_next(&r) % 5;
      for (size_t i = 0; i < ns; i++) {
        seeds[i] = t_next(&r) % 8 ? G.ent[t_next(&r) % G.nent] : 5000;
        sa[i] = 0.1 + (double)(t_next(&r) % 100) / 37.0;
      }
      static const double decays[] = {0, 0.3, 0.9, 1};
      static const double ths[] = {0, 0.001, 0.05, 0.2};
      kg_act_opts o = {decays[t_next(&r) % 4], ths[t_next(&r) % 4], (int)(t_next(&r) % 6),
                       (int)(t_next(&r) % 4)};
      const double *sap = t_next(&r) % 2 ? sa : NULL;
      ref_act(&G, seeds, sap, ns, o.decay ? o.decay : .5, o.threshold ? o.threshold : .01,
              o.steps ? o.steps : 3, o.dir ? o.dir : KG_BOTH, act);
      double th = o.threshold ? o.threshold : .01;
      kg_act_row *rows = NULL;
      size_t n = 0;
      ck_assert_int_eq(kg_activate(g, seeds, sap, ns, &o, &rows, &n), KG_OK);
      size_t want = 0;
      for (size_t i = 0; i < G.nent; i++) want += act[i] >= th;
      T_CHECK(n == want, "seed %llu iter %d: %zu rows, reference %zu",
              (unsigned long long)seed, iter, n, want);
      for (size_t i = 0; i < n; i++) {
        size_t v = ent_ix(&G, rows[i].id);
        T_CHECK(v != SIZE_MAX, "iter %d: unknown id", iter);
        T_CHECK(fabs(rows[i].activation - act[v]) <= 1e-12 * fmax(1, act[v]),
                "iter %d: %lld %.17g, reference %.17g", iter, (long long)rows[i].id,
                rows[i].activation, act[v]);
        if (i)
          T_CHECK(rows[i - 1].activation > rows[i].activation ||
                      (rows[i - 1].activation == rows[i].activation &&
                       rows[i - 1].id < rows[i].id),
                  "iter %d: order at %zu", iter, i);
      }
      /* deterministic: a second call gives the same bits */
      kg_act_row *again = NULL;
      size_t n2 = 0;
      ck_assert_int_eq(kg_activate(g, seeds, sap, ns, &o, &again, &n2), KG_OK);
      ck_assert_uint_eq(n2, n);
      if (n) ck_assert(memcmp(again, rows, n * sizeof *rows) == 0);
      free(again);
      free(rows);
    }
    kg_adj_free(g);
  }
}
END_TEST

/* ---- name resolution --------------------------------------------------- */

typedef struct want_m {
  int64_t id;
  int kind, edits;
} want_m;

static void resolve_check(const kg_name *names, size_t nn, const char *q, int max_edits,
                          const want_m *w, size_t nw) {
  kg_match *m = NULL;
  size_t n = 99;
  ck_assert_int_eq(kg_resolve(names, nn, q, strlen(q), max_edits, &m, &n), KG_OK);
  T_CHECK(n == nw, "'%s' max %d: %zu matches, want %zu", q, max_edits, n, nw);
  for (size_t i = 0; i < n; i++)
    T_CHECK(m[i].id == w[i].id && m[i].kind == w[i].kind && m[i].edits == w[i].edits,
            "'%s' max %d: match %zu: (%lld %d %d), want (%lld %d %d)", q, max_edits, i,
            (long long)m[i].id, m[i].kind, m[i].edits, (long long)w[i].id, w[i].kind,
            w[i].edits);
  free(m);
}

#define NM(id, s, alias) {id, s, sizeof(s) - 1, alias}

START_TEST(test_resolve_hand) {
  const kg_name names[] = {
      NM(1, "Alice", 0),         NM(1, "Ally", 1),           NM(2, "alice", 0),
      NM(3, "Bob", 0),           NM(3, "ALICE", 1),          NM(4, "Alicia", 0),
      NM(5, "École", 0),         NM(6, "ecole", 0),          NM(7, "ΟΔΥΣΣΕΥΣ", 0),
      NM(8, "Москва", 0),        NM(9, "kitten", 0),         NM(10, "Alice", 1),
      NM(11, "E\xCC\x81" "cole", 0), NM(12, "Straße", 0),    NM(13, "Alicē", 0),
  };
  size_t nn = sizeof names / sizeof names[0];
  enum { X = KG_MATCH_EXACT, A = KG_MATCH_ALIAS, C = KG_MATCH_CASE, E = KG_MATCH_EDIT };
  resolve_check(names, nn, "Alice", 0, (want_m[]){{1, X, 0}, {10, A, 0}, {2, C, 0}, {3, C, 0}}, 4);
  resolve_check(names, nn, "Alice", 1,
                (want_m[]){{1, X, 0}, {10, A, 0}, {2, C, 0}, {3, C, 0}, {13, E, 1}}, 5);
  resolve_check(names, nn, "Alice", 2,
                (want_m[]){{1, X, 0}, {10, A, 0}, {2, C, 0}, {3, C, 0}, {13, E, 1}, {4, E, 2}}, 6);
  resolve_check(names, nn, "alice", 0, (want_m[]){{2, X, 0}, {1, C, 0}, {3, C, 0}, {10, C, 0}}, 4);
  resolve_check(names, nn, "ally", 0, (want_m[]){{1, C, 0}}, 1);
  resolve_check(names, nn, "Ally", 0, (want_m[]){{1, A, 0}}, 1);
  resolve_check(names, nn, "ÉCOLE", 0, (want_m[]){{5, C, 0}}, 1);
  /* diacritics are not folded: é vs e is one substitution; the decomposed
  ** name has one more code point */
  resolve_check(names, nn, "ÉCOLE", 1, (want_m[]){{5, C, 0}, {6, E, 1}}, 2);
  resolve_check(names, nn, "ÉCOLE", 2, (want_m[]){{5, C, 0}, {6, E, 1}, {11, E, 2}}, 3);
  resolve_check(names, nn, "ecole", 1, (want_m[]){{6, X, 0}, {5, E, 1}, {11, E, 1}}, 3);
  resolve_check(names, nn, "école", 0, (want_m[]){{5, C, 0}}, 1);
  /* Greek: final sigma folds to sigma; Cyrillic */
  resolve_check(names, nn, "οδυσσευς", 0, (want_m[]){{7, C, 0}}, 1);
  resolve_check(names, nn, "Οδυσσεύς", 1, (want_m[]){{7, E, 1}}, 1);
  resolve_check(names, nn, "МОСКВА", 0, (want_m[]){{8, C, 0}}, 1);
  resolve_check(names, nn, "москваа", 0, NULL, 0);
  resolve_check(names, nn, "москваа", 1, (want_m[]){{8, E, 1}}, 1);
  resolve_check(names, nn, "мсква", 1, (want_m[]){{8, E, 1}}, 1);
  resolve_check(names, nn, "STRASSE", 1, NULL, 0); /* ß is not "ss" */
  resolve_check(names, nn, "STRASSE", 2, (want_m[]){{12, E, 2}}, 1);
  resolve_check(names, nn, "STRAẞE", 0, (want_m[]){{12, C, 0}}, 1); /* U+1E9E folds to ß */
  /* kitten -> sitting: 2 substitutions and an insertion */
  resolve_check(names, nn, "sitting", 2, NULL, 0);
  resolve_check(names, nn, "sitting", 3, (want_m[]){{9, E, 3}}, 1);
  resolve_check(names, nn, "kiten", 1, (want_m[]){{9, E, 1}}, 1);
  resolve_check(names, nn, "kittens", 1, (want_m[]){{9, E, 1}}, 1);
  resolve_check(names, nn, "KITTEM", 1, (want_m[]){{9, E, 1}}, 1);
  resolve_check(names, nn, "nobody", 3, NULL, 0);
  /* the empty query: names within max_edits code points */
  resolve_check(names, nn, "", 3, (want_m[]){{3, E, 3}}, 1);
  resolve_check(names, 0, "x", 3, NULL, 0);
}
END_TEST

START_TEST(test_resolve_utf8) {
  enum { X = KG_MATCH_EXACT, C = KG_MATCH_CASE, E = KG_MATCH_EDIT };
  const kg_name names[] = {
      NM(1, "caf\xC3\xA9", 0),            /* café */
      NM(2, "caf\xC3", 0),                /* truncated: caf + U+FFFD */
      NM(3, "\xFF\xFE", 0),               /* two U+FFFD */
      NM(4, "\xC0\xAF", 0),               /* overlong: two U+FFFD */
      NM(5, "a\xED\xA0\x80z", 0),         /* surrogate: three U+FFFD */
      NM(6, "\xF0\x9F\x98\x80!", 0),      /* U+1F600 ! */
      NM(7, "\xF4\x90\x80\x80", 0),       /* above U+10FFFF: four U+FFFD */
      NM(8, "\xEF\xBF\xBD\xEF\xBF\xBD", 0), /* two real U+FFFD */
  };
  size_t nn = sizeof names / sizeof names[0];
  resolve_check(names, nn, "caf\xC3\xA9", 0, (want_m[]){{1, X, 0}}, 1);
  resolve_check(names, nn, "CAF\xC3\x89", 1, (want_m[]){{1, C, 0}, {2, E, 1}}, 2);
  resolve_check(names, nn, "caf\xC3", 0, (want_m[]){{2, X, 0}}, 1);
  resolve_check(names, nn, "caf\xC3", 1, (want_m[]){{2, X, 0}, {1, E, 1}}, 2);
  /* malformed bytes are each one U+FFFD: they match each other and U+FFFD */
  resolve_check(names, nn, "\xFE\xFF", 0, (want_m[]){{3, C, 0}, {4, C, 0}, {8, C, 0}}, 3);
  resolve_check(names, nn, "\xFF\xFE", 0, (want_m[]){{3, X, 0}, {4, C, 0}, {8, C, 0}}, 3);
  resolve_check(names, nn, "\xFF\xFE", 2,
                (want_m[]){{3, X, 0}, {4, C, 0}, {8, C, 0}, {6, E, 2}, {7, E, 2}}, 5);
  resolve_check(names, nn, "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz", 0, (want_m[]){{5, C, 0}},
                1);
  resolve_check(names, nn, "\xF0\x9F\x98\x81!", 1, (want_m[]){{6, E, 1}}, 1);
  resolve_check(names, nn, "\xF0\x9F\x98", 0, NULL, 0); /* truncated */
  /* a query that is not NUL-terminated: only qn bytes are read */
  char *q = malloc(4);
  memcpy(q, "caf\xC3", 4);
  kg_match *m = NULL;
  size_t n = 0;
  ck_assert_int_eq(kg_resolve(names, nn, q, 4, 0, &m, &n), KG_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(m[0].id, 2);
  free(m);
  free(q);
}
END_TEST

/* An independent decoder: a sequence is well-formed when its code point,
** encoded again, gives the same bytes (so no overlong form) and is a
** scalar value; else the byte is U+FFFD on its own. */
static size_t ref_encode(uint32_t c, unsigned char *o) {
  static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  size_t len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  for (size_t k = len - 1; k > 0; k--) {
    o[k] = (unsigned char)(0x80 | (c & 63));
    c >>= 6;
  }
  o[0] = (unsigned char)(lead[len] | c);
  return len;
}

/* ASCII, Latin-1, Greek and Cyrillic case pairs, for the reference fold */
static uint32_t ref_fold(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c == 0x3C2) return 0x3C3;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

static size_t ref_decode(const unsigned char *z, size_t n, uint32_t *out) {
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    size_t len = z[i] < 0x80 ? 1 : z[i] >= 0xF0 ? 4 : z[i] >= 0xE0 ? 3 : 2;
    uint32_t c = 0xFFFD;
    size_t used = 1;
    if (len == 1) c = z[i];
    else if (i + len <= n) {
      uint32_t v = z[i] & (0x7F >> len);
      int ok = 1;
      for (size_t j = 1; j < len; j++) {
        ok &= (z[i + j] & 0xC0) == 0x80;
        v = v << 6 | (z[i + j] & 63);
      }
      unsigned char re[4];
      if (ok && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF) && ref_encode(v, re) == len &&
          !memcmp(re, z + i, len)) {
        c = v;
        used = len;
      }
    }
    out[k++] = ref_fold(c);
    i += used;
  }
  return k;
}

static int ref_lev(const uint32_t *a, size_t na, const uint32_t *b, size_t nb) {
  int d[64][64];
  for (size_t i = 0; i <= na; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= nb; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= na; i++)
    for (size_t j = 1; j <= nb; j++) {
      int v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
      if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
      d[i][j] = v;
    }
  return d[na][nb];
}

static const char *const PIECES[] = {
    "a", "A", "b", "\xC3\xA9", "\xC3\x89", "\xCF\x83", "\xCE\xA3", "\xCF\x82", "\xD0\xB4",
    "\xD0\x94", "\xD0\x81", "\xFF", "\xC3", "\x80", "\xED\xA0\x80", "\xF0\x9F\x98\x80",
    "\xF4\x90\x80\x80", "\xE0\x80\xAF", "\xEF\xBF\xBD", "\xE2\x82", "\xF0\x9F"};

static size_t rand_str(t_rng *r, char *s) {
  size_t n = 0, np = t_next(r) % 7;
  for (size_t i = 0; i < np; i++) {
    const char *p = PIECES[t_next(r) % (sizeof PIECES / sizeof PIECES[0])];
    memcpy(s + n, p, strlen(p));
    n += strlen(p);
  }
  return n;
}

typedef struct rmatch {
  int64_t id;
  int kind, edits;
} rmatch;

START_TEST(test_resolve_random) {
  uint64_t seed = t_seed() + 3;
  t_rng r = {seed};
  for (int iter = 0; iter < 4000; iter++) {
    char buf[24][32], qb[32];
    kg_name names[24];
    size_t nn = t_next(&r) % 24;
    for (size_t i = 0; i < nn; i++) {
      names[i].id = (int64_t)(t_next(&r) % 8);
      names[i].n = rand_str(&r, buf[i]);
      names[i].s = buf[i];
      names[i].alias = (int)(t_next(&r) % 3);
    }
    size_t qn = rand_str(&r, qb);
    if (nn && t_next(&r) % 4 == 0) { /* the query is one of the names */
      size_t k = t_next(&r) % nn;
      memcpy(qb, buf[k], names[k].n);
      qn = names[k].n;
    }
    int max = (int)(t_next(&r) % 4);
    /* reference: each entity's best (kind, edits) */
    rmatch best[8];
    for (int i = 0; i < 8; i++) best[i] = (rmatch){i, 99, 0};
    uint32_t fq[32], fn[32];
    size_t nq = ref_decode((const unsigned char *)qb, qn, fq);
    for (size_t i = 0; i < nn; i++) {
      int kind, ed = 0;
      size_t nf = ref_decode((const unsigned char *)names[i].s, names[i].n, fn);
      int d = ref_lev(fq, nq, fn, nf);
      if (names[i].n == qn && !memcmp(names[i].s, qb, qn))
        kind = names[i].alias ? KG_MATCH_ALIAS : KG_MATCH_EXACT;
      else if (d == 0) kind = KG_MATCH_CASE;
      else if (d <= max) kind = KG_MATCH_EDIT, ed = d;
      else continue;
      rmatch *b = &best[names[i].id];
      if (kind < b->kind || (kind == b->kind && ed < b->edits)) b->kind = kind, b->edits = ed;
    }
    kg_match *m = NULL;
    size_t n = 0;
    ck_assert_int_eq(kg_resolve(names, nn, qb, qn, max, &m, &n), KG_OK);
    size_t want = 0;
    for (int i = 0; i < 8; i++) want += best[i].kind != 99;
    T_CHECK(n == want, "seed %llu iter %d: %zu matches, reference %zu",
            (unsigned long long)seed, iter, n, want);
    for (size_t i = 0; i < n; i++) {
      T_CHECK(m[i].id >= 0 && m[i].id < 8, "iter %d: id", iter);
      const rmatch *b = &best[m[i].id];
      T_CHECK(m[i].kind == b->kind && m[i].edits == b->edits,
              "seed %llu iter %d: id %lld (%d %d), reference (%d %d)", (unsigned long long)seed,
              iter, (long long)m[i].id, m[i].kind, m[i].edits, b->kind, b->edits);
      if (i)
        T_CHECK(m[i - 1].kind < m[i].kind ||
                    (m[i - 1].kind == m[i].kind && (m[i - 1].edits < m[i].edits ||
                                                    (m[i - 1].edits == m[i].edits &&
                                                     m[i - 1].id < m[i].id))),
                "iter %d: order at %zu", iter, i);
    }
    free(m);
  }
}
END_TEST

START_TEST(test_resolve_garbage) {
  /* random bytes of random lengths: no crash, no read past n (ASan), sane
  ** results */
  t_rng r = {t_seed() + 4};
  for (int iter = 0; iter < 3000; iter++) {
    unsigned char *bytes[8];
    kg_name names[8];
    for (int i = 0; i < 8; i++) {
      size_t n = t_next(&r) % 12;
      bytes[i] = malloc(n ? n : 1);
      for (size_t k = 0; k < n; k++) /* mostly bytes >= 0x80 */
        bytes[i][k] = (unsigned char)(t_next(&r) % 3 ? 0x80 | t_next(&r) : t_next(&r));
      names[i] = (kg_name){i, (const char *)bytes[i], n, (int)(t_next(&r) % 2)};
    }
    size_t k = t_next(&r) % 8;
    kg_match *m = NULL;
    size_t n = 0;
    int max = (int)(t_next(&r) % 5);
    ck_assert_int_eq(kg_resolve(names, 8, names[k].s, names[k].n, max, &m, &n), KG_OK);
    T_CHECK(n >= 1 && m[0].kind <= KG_MATCH_ALIAS, "iter %d: the name itself", iter);
    for (size_t i = 0; i < n; i++) T_CHECK(m[i].edits <= max, "iter %d", iter);
    free(m);
    for (int i = 0; i < 8; i++) free(bytes[i]);
  }
}
END_TEST

/* ---- Levenshtein ------------------------------------------------------- */

START_TEST(test_levenshtein) {
  t_rng r = {t_seed() + 5};
  uint32_t a[64], b[64];
  for (int iter = 0; iter < 100000; iter++) {
    size_t na = t_next(&r) % 14, nb = t_next(&r) % 14;
    uint32_t alpha = 1 + (uint32_t)(t_next(&r) % 4);
    for (size_t i = 0; i < na; i++) a[i] = 0x10000 + (uint32_t)(t_next(&r) % alpha);
    for (size_t i = 0; i < nb; i++) b[i] = 0x10000 + (uint32_t)(t_next(&r) % alpha);
    if (t_next(&r) % 3 == 0 && na) { /* b an edit or two of a */
      memcpy(b, a, na * sizeof *a);
      nb = na;
      b[t_next(&r) % nb] ^= 1;
      if (t_next(&r) % 2 && nb < 63) b[nb++] = 7;
    }
    int d = ref_lev(a, na, b, nb), max = (int)(t_next(&r) % 8);
    int got = kg_levenshtein(a, na, b, nb, max);
    T_CHECK(got == (d <= max ? d : max + 1), "iter %d: %d, distance %d, max %d", iter, got, d,
            max);
    T_CHECK(kg_levenshtein(b, nb, a, na, INT_MAX) == d, "iter %d: INT_MAX", iter);
  }
  /* long sequences and wide bands (the band leaves the stack) */
  uint32_t *x = malloc(3000 * sizeof *x), *y = malloc(3000 * sizeof *y);
  for (size_t i = 0; i < 3000; i++) x[i] = y[i] = (uint32_t)(t_next(&r) % 50);
  ck_assert_int_eq(kg_levenshtein(x, 3000, y, 3000, 0), 0);
  y[1500] = 99;
  ck_assert_int_eq(kg_levenshtein(x, 3000, y, 3000, 0), 1);
  ck_assert_int_eq(kg_levenshtein(x, 3000, y, 3000, 1000), 1);
  ck_assert_int_eq(kg_levenshtein(x, 3000, y + 10, 2990, 5), 6);
  ck_assert_int_eq(kg_levenshtein(x, 3000, y + 10, 2990, 300), 11);
  ck_assert_int_eq(kg_levenshtein(x, 3000, NULL, 0, 5000), 3000);
  ck_assert_int_eq(kg_levenshtein(x, 3000, NULL, 0, 2999), 3000);
  for (size_t i = 0; i < 3000; i++) y[i] = 1000 + (uint32_t)i;
  ck_assert_int_eq(kg_levenshtein(x, 3000, y, 3000, 3000), 3000);
  ck_assert_int_eq(kg_levenshtein(x, 3000, y, 3000, 200), 201);
  /* odd arguments */
  ck_assert_int_eq(kg_levenshtein(NULL, 0, NULL, 0, 0), 0);
  ck_assert_int_eq(kg_levenshtein(NULL, 3, y, 3, 2), 3);
  ck_assert_int_eq(kg_levenshtein(x, 3, x, 3, -5), 0);
  ck_assert_int_eq(kg_levenshtein(x, 3, y, 3, -5), 1);
  ck_assert_int_eq(kg_levenshtein(x, 3, y, 3, INT_MAX), 3);
  free(x);
  free(y);
}
END_TEST

/* ---- bad arguments ----------------------------------------------------- */

START_TEST(test_invalid) {
  int64_t ent[] = {3, 1, 2}, dup[] = {1, 2, 1};
  kg_edge e[] = {{1, 1, 2, 0, 1}};
  kg_adj *g = (kg_adj *)&g;
  ck_assert_int_eq(kg_adj_build(ent, 3, e, 1, NULL), KG_EINVAL);
  ck_assert_int_eq(kg_adj_build(NULL, 3, e, 1, &g), KG_EINVAL);
  ck_assert_ptr_null(g);
  ck_assert_int_eq(kg_adj_build(ent, 3, NULL, 1, &g), KG_EINVAL);
  ck_assert_int_eq(kg_adj_build(dup, 3, e, 1, &g), KG_EINVAL);
  ck_assert_ptr_null(g);
  /* an empty graph */
  kg_bfs_opts bo = {0, 2, NULL, 0, 0};
  kg_bfs_row *rows = NULL;
  size_t n = 0;
  ck_assert_int_eq(kg_adj_build(NULL, 0, NULL, 0, &g), KG_OK);
  ck_assert_uint_eq(kg_adj_entities(g), 0);
  ck_assert_int_eq(kg_bfs(g, 1, &bo, &rows, &n), KG_ENOTFOUND);
  kg_adj_free(g);
  kg_adj_free(NULL);
  ck_assert_uint_eq(kg_adj_entities(NULL), 0);

  ck_assert_int_eq(kg_adj_build(ent, 3, e, 1, &g), KG_OK);
  ck_assert_int_eq(kg_bfs(g, 1, NULL, &rows, &n), KG_EINVAL);
  ck_assert_int_eq(kg_bfs(NULL, 1, &bo, &rows, &n), KG_EINVAL);
  ck_assert_int_eq(kg_bfs(g, 1, &bo, NULL, &n), KG_EINVAL);
  ck_assert_int_eq(kg_bfs(g, 1, &bo, &rows, NULL), KG_EINVAL);
  static const kg_bfs_opts bad_bfs[] = {
      {4, 2, NULL, 0, 0}, {-1, 2, NULL, 0, 0}, {1, -1, NULL, 0, 0}, {1, 2, NULL, 3, 0}};
  for (size_t i = 0; i < sizeof bad_bfs / sizeof bad_bfs[0]; i++) {
    ck_assert_int_eq(kg_bfs(g, 1, &bad_bfs[i], &rows, &n), KG_EINVAL);
    ck_assert_ptr_null(rows);
    ck_assert_uint_eq(n, 0);
  }
  ck_assert_int_eq(kg_bfs(g, 4, &bo, &rows, &n), KG_ENOTFOUND);
  bo.max_depth = INT_MAX;
  bo.limit = SIZE_MAX;
  ck_assert_int_eq(kg_bfs(g, 1, &bo, &rows, &n), KG_OK);
  ck_assert_uint_eq(n, 2);
  free(rows);

  int64_t seeds[] = {1};
  double nan_act[] = {NAN}, inf_act[] = {INFINITY};
  kg_act_opts ao = {0, 0, 0, 0};
  kg_act_row *ar = NULL;
  ck_assert_int_eq(kg_activate(g, seeds, NULL, 1, NULL, &ar, &n), KG_EINVAL);
  ck_assert_int_eq(kg_activate(NULL, seeds, NULL, 1, &ao, &ar, &n), KG_EINVAL);
  ck_assert_int_eq(kg_activate(g, NULL, NULL, 1, &ao, &ar, &n), KG_EINVAL);
  ck_assert_int_eq(kg_activate(g, seeds, NULL, 1, &ao, NULL, &n), KG_EINVAL);
  ck_assert_int_eq(kg_activate(g, seeds, nan_act, 1, &ao, &ar, &n), KG_EINVAL);
  ck_assert_int_eq(kg_activate(g, seeds, inf_act, 1, &ao, &ar, &n), KG_EINVAL);
  static const kg_act_opts bad_act[] = {
      {1.5, 0, 0, 0}, {-0.5, 0, 0, 0}, {NAN, 0, 0, 0}, {INFINITY, 0, 0, 0}, {0, -1, 0, 0},
      {0, NAN, 0, 0}, {0, INFINITY, 0, 0}, {0, 0, -1, 0}, {0, 0, 0, 4}, {0, 0, 0, -2}};
  for (size_t i = 0; i < sizeof bad_act / sizeof bad_act[0]; i++) {
    ck_assert_int_eq(kg_activate(g, seeds, NULL, 1, &bad_act[i], &ar, &n), KG_EINVAL);
    ck_assert_ptr_null(ar);
  }
  ao.decay = 1;
  ck_assert_int_eq(kg_activate(g, seeds, NULL, 1, &ao, &ar, &n), KG_OK);
  free(ar);
  kg_adj_free(g);

  kg_name names[] = {{1, "a", 1, 0}, {2, NULL, 3, 0}};
  kg_match *m = NULL;
  ck_assert_int_eq(kg_resolve(names, 2, "a", 1, 0, &m, &n), KG_EINVAL);
  ck_assert_int_eq(kg_resolve(NULL, 1, "a", 1, 0, &m, &n), KG_EINVAL);
  ck_assert_int_eq(kg_resolve(names, 1, NULL, 1, 0, &m, &n), KG_EINVAL);
  ck_assert_int_eq(kg_resolve(names, 1, "a", 1, -1, &m, &n), KG_EINVAL);
  ck_assert_int_eq(kg_resolve(names, 1, "a", 1, 0, NULL, &n), KG_EINVAL);
  ck_assert_int_eq(kg_resolve(names, 1, NULL, 0, INT_MAX, &m, &n), KG_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(m[0].kind, KG_MATCH_EDIT);
  free(m);
  names[1].n = 0; /* NULL with 0 bytes: the empty name */
  ck_assert_int_eq(kg_resolve(names, 2, "", 0, 0, &m, &n), KG_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(m[0].id, 2);
  free(m);
}
END_TEST

/* ---- concurrency ------------------------------------------------------- */

typedef struct tctx {
  const kg_adj *g;
  const int64_t *ids;
  size_t n;
  const kg_bfs_row *const *want;
  const size_t *nwant;
  int bad;
} tctx;

static void *thread_run(void *arg) {
  tctx *c = arg;
  kg_bfs_opts o = {KG_BOTH, 3, NULL, 0, 0};
  for (int rep = 0; rep < 20; rep++)
    for (size_t i = 0; i < c->n; i++) {
      kg_bfs_row *rows = NULL;
      size_t n = 0;
      if (kg_bfs(c->g, c->ids[i], &o, &rows, &n) != KG_OK || n != c->nwant[i]) c->bad = 1;
      for (size_t k = 0; k < n && !c->bad; k++) {
        const kg_bfs_row *a = &rows[k], *b = &c->want[i][k];
        c->bad = a->id != b->id || a->depth != b->depth || a->parent != b->parent ||
                 a->relation != b->relation || a->type != b->type;
      }
      free(rows);
      kg_act_row *ar = NULL;
      kg_act_opts ao = {0, 0, 0, 0};
      if (kg_activate(c->g, &c->ids[i], NULL, 1, &ao, &ar, &n) != KG_OK) c->bad = 1;
      free(ar);
    }
  return NULL;
}

START_TEST(test_concurrent) {
  enum { N = 300, E = 1200, T = 4 };
  t_rng r = {t_seed() + 6};
  int64_t *ids = malloc(N * sizeof *ids);
  kg_edge *e = malloc(E * sizeof *e);
  for (size_t i = 0; i < N; i++) ids[i] = (int64_t)i * 10;
  for (size_t k = 0; k < E; k++)
    e[k] = (kg_edge){(int64_t)k, ids[t_next(&r) % N], ids[t_next(&r) % N], (uint32_t)(k % 3), 1};
  kg_adj *g = NULL;
  ck_assert_int_eq(kg_adj_build(ids, N, e, E, &g), KG_OK);
  kg_bfs_row *want[N];
  size_t nwant[N];
  kg_bfs_opts o = {KG_BOTH, 3, NULL, 0, 0};
  for (size_t i = 0; i < N; i++)
    ck_assert_int_eq(kg_bfs(g, ids[i], &o, &want[i], &nwant[i]), KG_OK);
  pthread_t th[T];
  tctx c[T];
  for (int t = 0; t < T; t++) {
    c[t] = (tctx){g, ids, N, (const kg_bfs_row *const *)want, nwant, 0};
    ck_assert_int_eq(pthread_create(&th[t], NULL, thread_run, &c[t]), 0);
  }
  for (int t = 0; t < T; t++) {
    pthread_join(th[t], NULL);
    ck_assert_int_eq(c[t].bad, 0);
  }
  for (size_t i = 0; i < N; i++) free(want[i]);
  kg_adj_free(g);
  free(ids);
  free(e);
}
END_TEST

int main(void) {
  Suite *s = suite_create("graph");
  TCase *tc = tcase_create("bfs");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_bfs_small);
  tcase_add_test(tc, test_bfs_random);
  tcase_add_test(tc, test_concurrent);
  suite_add_tcase(s, tc);
  tc = tcase_create("activation");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_act_hand);
  tcase_add_test(tc, test_act_random);
  suite_add_tcase(s, tc);
  tc = tcase_create("resolve");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_resolve_hand);
  tcase_add_test(tc, test_resolve_utf8);
  tcase_add_test(tc, test_resolve_random);
  tcase_add_test(tc, test_resolve_garbage);
  tcase_add_test(tc, test_levenshtein);
  tcase_add_test(tc, test_invalid);
  suite_add_tcase(s, tc);
  return t_run(s);
}
