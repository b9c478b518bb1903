/*
** ext/vtab/graph_int.h - what the knowledge graph's tables (vtab_graph.c)
** and functions (func_graph.c, func_graph_jsonl.c) share.
*/
#ifndef H5MEM_EXT_GRAPH_INT_H
#define H5MEM_EXT_GRAPH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "h5mem_int.h"

/* ---- interface to code in func_graph.c -------------------------------------- */

/* The store of the h5mem table named by v, as of its last commit (a
** reader's view refreshed unless a query holds it). */
int graph_store(registry *reg, sqlite3 *db, sqlite3_value *v, memvt **out, char **err);

/* An entity's record by id (0: found). */
int graph_entity_get(store *st, int64_t id, store_grec *r);

/* INSERT INTO the companion table k of the h5mem table mt, with the
** columns cols (?1, ?2, ...). */
int graph_companion_insert(sqlite3 *db, memvt *mt, int k, const char *cols, int ncols,
                           sqlite3_stmt **out, char **err);

/* Run an INSERT made by graph_companion_insert (bound); reset it. */
int graph_run_insert(sqlite3 *db, sqlite3_stmt *st, char **err);

/* The id of a new record of mt's companion table k (-1: of mt itself)
** whose largest id is max: "no ids left" at INT64_MAX, as the table's own
** INSERT says it (SQLITE_FULL, the message in *err). */
int graph_next_id(memvt *mt, int k, int64_t max, int64_t *id, char **err);

/* Make "fn: err" (takes err) and rc the function's error. */
void graph_result_err(sqlite3_context *ctx, const char *fn, int rc, char *err);
/* A graph function's store, named by its first argument: the direct-call
** check (ext_direct_call) and graph_store, or NULL with the function's
** error set (fn: its name). */
memvt *graph_fn_store(sqlite3_context *ctx, sqlite3_value *name, const char *fn);

/* ---- interface to code in func_graph_jsonl.c -------------------------------- */

/* Register kg_import_jsonl and kg_export_jsonl (called by
** ext_func_graph_register, which registers the graph's other functions). */
int graph_jsonl_register(sqlite3 *db, registry *reg);

#endif
