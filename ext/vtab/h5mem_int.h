/*
** ext/vtab/h5mem_int.h - what the h5mem table (vtab_h5mem.c) shares with
** the search functions (vtab_search.c) and the knowledge graph's tables and
** functions (vtab_graph.c, func_graph.c): finding a table by name, and the
** store handle and transaction its companion tables share with it.
*/
#ifndef H5MEM_EXT_H5MEM_INT_H
#define H5MEM_EXT_H5MEM_INT_H

#include "ext.h"
#include "store/store.h"

typedef struct registry registry; /* the h5mem tables of one connection */
typedef struct memvt memvt;       /* one h5mem table */
typedef struct memstore memstore; /* its store handle and transaction */

/* The h5mem table called name ("table" or "schema.table") on this
** connection, connecting it first if this connection has not used it yet;
** NULL with *pzErr (sqlite3_mprintf'd) if there is none. */
memvt *h5mem_table(registry *reg, sqlite3 *db, const char *name, char **pzErr);
/* The same, also a table whose store is missing (h5mem_table_missing): for
** the companion tables, which must connect for DROP TABLE. */
memvt *h5mem_table_any(registry *reg, sqlite3 *db, const char *name, char **pzErr);
store *h5mem_table_store(memvt *vt);
/* SQLITE_OK, or (SQLITE_ERROR, the message in *pzErr) when the table's
** store does not exist: connected from a database file's schema, which
** never creates a store; h5mem_table reports this itself. */
int h5mem_table_missing(memvt *vt, char **pzErr);
const char *h5mem_table_name(const memvt *vt);
/* A reader holding positions of the table's store (+1 when it starts, -1
** when done): no checkpoint moves rows meanwhile. */
void h5mem_table_hold(memvt *vt, int delta);

/* ---- the shared store and its transaction ----------------------------------
**
** The h5mem table `mem` and its companion tables (mem_entities,
** mem_relations, mem_mentions) write one store through one handle, so that
** what a SQLite transaction writes to any of them is one store transaction:
** whichever table SQLite begins first begins it, the first xSync writes it
** to the log, the first xCommit (or xRollback) ends it, and the others'
** calls find it done.  Savepoints are marks in it, shared: a table joining
** inside a savepoint keeps the mark taken when the savepoint was opened.
** Each table forwards its xBegin, xSync, xCommit, xRollback, xSavepoint,
** xRelease and xRollbackTo here.  The functions return SQLite codes and, on
** an error, a message in *pzErr (sqlite3_mprintf'd, without a prefix). */

/* The table's shared store; +1 reference (h5mem_store_release lets go);
** NULL when the store is missing (h5mem_table_missing). */
memstore *h5mem_table_share(memvt *vt);
/* -1 reference: the last closes the store (checkpointing the writer's
** changes).  NULL is a no-op. */
void h5mem_store_release(memstore *ms);
store *h5mem_store_handle(const memstore *ms);
/* Readers holding the store's positions or strings (+1 / -1): no automatic
** checkpoint moves them meanwhile. */
void h5mem_store_hold(memstore *ms, int delta);
int h5mem_store_holds(const memstore *ms);
/* Whether the h5mem table this store belongs to was dropped (a companion
** left behind then refuses to work). */
int h5mem_store_orphaned(const memstore *ms);

int h5mem_tx_begin(memstore *ms, char **pzErr);
/* xUpdate: begin the store transaction if no xBegin did (SQLite does not
** call xBegin for a table it created in the same transaction). */
int h5mem_tx_need(memstore *ms, char **pzErr);
int h5mem_tx_sync(memstore *ms, char **pzErr);
int h5mem_tx_commit(memstore *ms, char **pzErr);
void h5mem_tx_rollback(memstore *ms);
int h5mem_tx_savepoint(memstore *ms, int i);
void h5mem_tx_release(memstore *ms, int i);
void h5mem_tx_rollback_to(memstore *ms, int i);
/* One cache kept with the store for the graph functions (func_graph.c),
** freed by free_fn with the store or when replaced. */
void *h5mem_store_cache(const memstore *ms);
void h5mem_store_cache_set(memstore *ms, void *p, void (*free_fn)(void *));

/* Whether the open store transaction holds changes not yet committed. */
int h5mem_tx_dirty(const memstore *ms);

/* One more reference to reg, for a module or function about to be
** registered with reg_unref as its destructor (which SQLite calls on
** failure too). */
void h5mem_registry_ref(registry *reg);

/* The companion tables' modules and the graph functions (vtab_graph.c,
** func_graph.c); reg_unref as for ext_vtab_search_register. */
int ext_vtab_graph_register(sqlite3 *db, registry *reg, void (*reg_unref)(void *));
int ext_func_graph_register(sqlite3 *db, registry *reg, void (*reg_unref)(void *));
/* The suffixes of the companion tables of an h5mem table `mem`:
** mem_entities, mem_relations, mem_mentions, and their modules. */
extern const char *const h5mem_companion[3];
extern const char *const h5mem_companion_module[3];

/* A store's string (NULL: SQL NULL) as a result. */
static inline void h5mem_result_text(sqlite3_context *ctx, const char *s, size_t n) {
  if (!s) sqlite3_result_null(ctx);
  else sqlite3_result_text64(ctx, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}

/* The table's shared store (no reference taken) and its schema. */
memstore *h5mem_table_ms(memvt *vt);
const char *h5mem_table_schema(const memvt *vt);

/* A column's value as text (NULL stays NULL; a BLOB's bytes as they
** are: the store checks that strings are UTF-8 without NUL bytes and names
** the column); SQLITE_OK or SQLITE_NOMEM. */
int h5mem_value_text(sqlite3_value *v, const char **s, size_t *n);
/* Checking a column's value as the h5mem table does (the message, when
** not SQLITE_OK, in *msg, sqlite3_mprintf'd, naming col): a time (unix
** seconds or ISO-8601 text), an id (an integer; NULL: *given 0). */
int h5mem_value_time(sqlite3_value *v, const char *col, int64_t *out, char **msg);
int h5mem_value_id(sqlite3_value *v, const char *col, int64_t *id, int *given, char **msg);

/* Register vec_search, bm25 and hybrid (vtab_search.c), each taking a
** reference to reg (h5mem_registry_ref) that SQLite lets go with
** reg_unref (also on failure). */
int ext_vtab_search_register(sqlite3 *db, registry *reg, void (*reg_unref)(void *));

#endif
