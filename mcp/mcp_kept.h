/*
** mcp/mcp_kept.h - the graph h5mem-mcp keeps in memory between calls, as
** the reference memory server sees it (mcp_kept.c), for the graph tools
** (mcp_graph.c).
**
** The server is the store's one writer while it runs, so nobody else
** changes the graph: it is read once, in a thread of its own started when
** the store opens (and again after each call that writes), while the
** client is still starting; a call waits only for what is not read yet.
** The search index (trigrams) is built after the graph, in the same
** thread; until it is there, search_nodes scans.
*/
#ifndef H5MEM_MCP_KEPT_H
#define H5MEM_MCP_KEPT_H

#include <stddef.h>
#include <stdint.h>

#include "mcp.h"
#include "store/store.h"

/* Names, types and observations are JavaScript strings, as the reference
** has them (JS-UTF-8, util/jsstr.h: a lone surrogate or U+0000 too), kept
** in the store's form with the original in meta (kg_import_jsonl's way). */
typedef struct gent {
  int64_t id;
  char *name, *type;
  char **obs;
  int64_t *mid; /* the memory each observation is (0: deleted by the running call) */
  size_t nobs;
  size_t cap; /* 0: obs and mid are slices of the graph's (as read); else its own */
  size_t canon;    /* the first entity of this name (the reference knows entities by name) */
  int placeholder; /* 1: a name relations use that no entity has (no entity to the
                      reference); 2: gone in the running call */
} gent;

typedef struct grel {
  int64_t id;
  size_t a, b; /* the ends (entities' indexes) */
  char *type;
  int gone; /* deleted by the running call */
} grel;

struct graph {
  gent *e; /* by id */
  size_t ne, ecap;
  grel *r; /* by id */
  size_t nr, rcap;
  char **obs;   /* the observations as read, entity by entity (gent.obs slices) */
  int64_t *mid; /* and their memories */
  size_t nobs, obscap;
  size_t bytes; /* of the strings (the haystacks' size, about) */
  size_t *names; /* open addressing over the names: entity index + 1, 0 empty */
  size_t ncap;
  struct arena *strings; /* the strings above */
  /* search_nodes, once made (mcp_kept.c): each entity's name, type and
     observations lowercased, 0x01 between fields and after each entity:
     entity i's at hay[hay_at[i] .. hay_at[i + 1] - 1) */
  char *hay;
  size_t *hay_at;
  /* and once `indexed` (mcp_kept.c): each trigram of the haystacks, the
     entities holding it, ascending */
  struct trigrams *tri;
};

/* A string copied into the graph's strings (NULL: out of memory). */
char *kept_strdup(graph *g, const char *s, size_t n);
/* The first entity of that name (as the reference finds it) that is a
** placeholder (ph 1) or not (ph 0), or NULL. */
gent *kept_named(graph *g, const char *name, int ph);
gent *kept_by_id(graph *g, int64_t id);
/* Observation text (memory 0) added to e's; 0, or -1 out of memory. */
int kept_add_obs(graph *g, gent *e, const char *text);

/* The kept graph, read if need be (waiting for the reading thread, or
** starting it); NULL with the message in o. */
graph *mcp_kept(mcp *m, mcp_out *o);
/* The reading thread stopped (its haystacks or index, if not made yet,
** are not made), the graph kept: before a tool changes it. */
void mcp_graph_settle(mcp *m);

/* search_nodes' matches: keep[i] = 1 for each entity (not a placeholder)
** whose name, type or an observation holds q (lowercased, as the
** reference lowercases, bytes ql[0..qn)) as a substring.  keep has ne
** bytes, zeroed.  0, or -1 out of memory. */
int kept_search(mcp *m, graph *g, const char *ql, size_t qn, uint8_t *keep);
/* s lowercased as search_nodes compares (JavaScript's toLowerCase:
** util_js_lower) appended to b. */
void kept_lower(strbuf *b, const char *s);

/* An entity's and a relation's JSON as the reference writes them (mcp_graph.c). */
void mcp_put_entity(strbuf *b, const char *name, const char *type, char *const *obs, size_t n);
void mcp_put_relation(strbuf *b, const char *from, const char *to, const char *type);

/* The search image of g (mcp_image.h), made from the store in state k,
** once g's haystacks and index are made: 0 with *img (malloc'd) and *len;
** 1 when they are not made; -1 out of memory. */
int kept_image(const graph *g, const store_state_key *k, uint8_t **img, size_t *len);
/* The kept graph, read and indexed (waiting for the reading thread), or
** NULL (it cannot be read, or is not indexed: H5MEM_MCP_SEARCH). */
graph *mcp_kept_indexed(mcp *m);
/* Whether search_nodes has the kept graph's index now (no waiting). */
int mcp_kept_ready(const mcp *m);

#endif /* H5MEM_MCP_KEPT_H */
