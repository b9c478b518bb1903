/*
** ext/kg_walk.h - one reader of a store's knowledge graph in the order the
** MCP memory server's JSONL has it (ext/vtab/func_graph_jsonl.c): for
** kg_export_jsonl, and for h5mem-mcp, which reads its graph through
** h5mem_kg_walk(table, walker) with the walker bound as a pointer
** (sqlite3_bind_pointer, type "h5mem_kg_walker").
*/
#ifndef H5MEM_KG_WALK_H
#define H5MEM_KG_WALK_H

#include <sqlite3.h>
#include <stdint.h>

#include "store/store.h"

/* The callbacks: begin (may be NULL) with how many live entities,
** relations and mentions there are (at most that many of each come);
** each live entity by id, each followed by its
** observations (the texts of the live memories that mention it, by memory
** id: the view has text and meta); then each relation whose two ends are
** live, by id, with its ends.  Records and strings are the store's, valid
** during the call.  A callback returns SQLITE_OK or stops the walk with
** its code; err, when not NULL, then gives the message (sqlite3_malloc'd
** or NULL). */
typedef struct kg_walker {
  void *ctx;
  int (*begin)(void *ctx, size_t entities, size_t relations, size_t mentions);
  int (*entity)(void *ctx, const store_grec *e);
  int (*observation)(void *ctx, int64_t entity, int64_t memory, const store_view *v);
  int (*relation)(void *ctx, const store_grec *r, const store_grec *from, const store_grec *to);
  char *(*err)(void *ctx);
} kg_walker;

/* Walk the graph of st; SQLITE_OK, or the store's code (the message in
** *err, sqlite3_malloc'd) or a callback's. */
int kg_walk(store *st, const kg_walker *w, char **err);

/* h5mem_store_state(table, key): store_state_key_get (lib/store/store.h)
** for a C caller, the store_state_key bound as a pointer (type
** "h5mem_store_state_key"): h5mem-mcp names its search image so. */

#endif /* H5MEM_KG_WALK_H */
