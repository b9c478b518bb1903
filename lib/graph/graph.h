/*
** lib/graph/graph.h - the knowledge graph's algorithms over an adjacency
** index (CSR) built from the store's entities and relations: breadth-first
** search, spreading activation and name resolution.  It knows nothing of
** SQLite or of the store; lib/store/store_graph.c keeps the entities and
** relations and builds a kg_adj when a traversal needs one (cached until
** the graph changes).
**
** Entities are addressed by their int64 ids; relation types by small
** integer codes the caller interns (0 .. ntypes-1).  Everything is
** deterministic: neighbours are visited in increasing order of (neighbour
** id, relation id).
*/
#ifndef H5MEM_GRAPH_GRAPH_H
#define H5MEM_GRAPH_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

/* The codes of the one error space (util/err.h). */
enum { KG_OK = UTIL_OK, KG_ENOMEM = UTIL_ENOMEM, KG_EINVAL = UTIL_EINVAL, KG_ENOTFOUND = UTIL_ENOTFOUND };
enum { KG_OUT = 1, KG_IN = 2, KG_BOTH = 3 };

typedef struct kg_edge {
  int64_t id;       /* the relation's id */
  int64_t src, dst; /* entity ids */
  uint32_t type;    /* the relation type's code */
  double weight;
} kg_edge;

/* The adjacency of a graph: both directions, CSR, immutable once built
** (safe to share between threads).  Edges whose src or dst is not among
** the entities are ignored (dangling). */
typedef struct kg_adj kg_adj;
int kg_adj_build(const int64_t *entities, size_t nent, const kg_edge *edges, size_t nedges,
                 kg_adj **out);
void kg_adj_free(kg_adj *g);
size_t kg_adj_entities(const kg_adj *g);
size_t kg_adj_edges(const kg_adj *g);

/* ---- breadth-first search -------------------------------------------- */

typedef struct kg_bfs_opts {
  int dir;               /* KG_OUT (follow src -> dst), KG_IN, KG_BOTH; 0: KG_OUT */
  int max_depth;         /* >= 0 */
  const uint32_t *types; /* follow only these relation types (NULL: all) */
  size_t ntypes;
  size_t limit;          /* at most this many rows (0: no limit), in BFS order */
} kg_bfs_opts;

typedef struct kg_bfs_row {
  int64_t id;       /* the entity */
  int depth;        /* 0 for the start */
  int64_t parent;   /* the entity it was reached from (the start: its own id) */
  int64_t relation; /* the relation's id it was reached by (the start: -1) */
  uint32_t type;    /* that relation's type (the start: UINT32_MAX) */
} kg_bfs_row;

/* Every entity reachable from start within max_depth hops, each once at its
** least depth, in BFS order (depth, then discovery order); the first
** discovery fixes parent and relation (neighbours in increasing (id,
** relation id) order of the node expanded, nodes expanded in BFS order).
** *out is malloc'd (rows), *nout rows.  KG_ENOTFOUND: no such entity. */
int kg_bfs(const kg_adj *g, int64_t start, const kg_bfs_opts *o, kg_bfs_row **out, size_t *nout);

/* ---- spreading activation --------------------------------------------- */

typedef struct kg_act_opts {
  double decay;     /* 0 < decay <= 1: the share of a node's activation passed on per step; 0: 0.5 */
  double threshold; /* nodes below it neither spread nor are returned; 0: 0.01 */
  int steps;        /* rounds of spreading; 0: 3 */
  int dir;          /* as kg_bfs_opts.dir; 0: KG_BOTH */
} kg_act_opts;

typedef struct kg_act_row {
  int64_t id;
  double activation;
} kg_act_row;

/* Spreading activation from seeds (activation seed_act[i], NULL: 1.0 each):
** each step, every node whose activation a is >= threshold gives each of
** its neighbours (in the direction(s) followed) a * decay * w / W, with w
** the edge's weight and W the sum of the weights of the edges it spreads
** over (negative or NaN weights count as 0; W = 0: nothing spreads); all
** nodes spread at once from the previous step's values, and activation
** adds up.  Result: the nodes with activation >= threshold, highest first
** (ties by id).  Unknown seeds are ignored. */
int kg_activate(const kg_adj *g, const int64_t *seeds, const double *seed_act, size_t nseeds,
                const kg_act_opts *o, kg_act_row **out, size_t *nout);

/* ---- name resolution ---------------------------------------------------- */

/* A candidate name of an entity: its name (alias 0) or one of its aliases. */
typedef struct kg_name {
  int64_t id;
  const char *s;
  size_t n;
  int alias;
} kg_name;

enum { KG_MATCH_EXACT = 0, KG_MATCH_ALIAS = 1, KG_MATCH_CASE = 2, KG_MATCH_EDIT = 3 };

typedef struct kg_match {
  int64_t id;
  int kind;     /* KG_MATCH_* : exact name, exact alias, case-insensitive, edits */
  int edits;    /* Levenshtein distance (code points, case-folded) for KG_MATCH_EDIT, else 0 */
} kg_match;

/* The entities whose name or aliases match q: exact, then alias,
** case-insensitive (Unicode simple case folding, as unicode61 folds), then
** within max_edits Levenshtein edits of the folded strings; best first
** (kind, edits, id), each entity once at its best.  *out malloc'd. */
int kg_resolve(const kg_name *names, size_t nnames, const char *q, size_t qn, int max_edits,
               kg_match **out, size_t *nout);

/* Levenshtein distance between two sequences of code points, or
** max + 1 when it exceeds max (max >= 0; bounded work). */
int kg_levenshtein(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, int max);

#endif
