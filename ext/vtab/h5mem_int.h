/*
** ext/vtab/h5mem_int.h - what the h5mem table (vtab_h5mem.c) shares with
** the search functions (vtab_search.c) and the knowledge graph's tables and
** functions (vtab_graph.c, func_graph.c): finding a table by name, and the
** store handle and transaction its companion tables share with it
** (vtab_h5mem_shared.c).
*/
#ifndef H5MEM_EXT_H5MEM_INT_H
#define H5MEM_EXT_H5MEM_INT_H

#include "ext.h"
#include "store/store.h"

typedef struct registry registry; /* the h5mem tables of one connection */
typedef struct memvt memvt;       /* one h5mem table */
typedef struct memstore memstore; /* its store handle and transaction */

/* ==== interface to code in vtab_h5mem_shared.c ============================== */

/* ---- the registry ----------------------------------------------------------- */

/* The h5mem tables open on one connection, for h5mem_checkpoint(name) and
** vec_search(name, ...), and their stores. */
struct registry {
  memvt *first;
  memstore *stores;
  int refs;
};

/* A new registry with one reference (NULL: no memory). */
registry *h5mem_registry_new(void);
/* One more reference to reg, for a module or function about to be
** registered with h5mem_registry_unref as its destructor (which SQLite
** calls on failure too). */
void h5mem_registry_ref(registry *reg);
/* -1 reference (reg a registry *): the last frees it. */
void h5mem_registry_unref(void *reg);
/* vt (connected) into reg's list of tables; out of it (a table never
** added: a no-op). */
void h5mem_registry_add(registry *reg, memvt *vt);
void h5mem_registry_remove(memvt *vt);

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
** xRelease and xRollbackTo here (h5mem_vt_*).  The functions return SQLite
** codes and, on an error, a message in *pzErr (sqlite3_mprintf'd, without
** a prefix). */

/* One store handle and its transaction, shared by an h5mem table and its
** companion tables.  In the registry's list while referenced; refs counts
** the tables holding it; the last release closes the store.  key is
** "schema.table" of the h5mem table, so that the table connecting again
** (after a schema reload) finds the handle its companions still hold;
** NULL once the table is dropped. */
enum { MS_IDLE, MS_OPEN, MS_PREPARED };
struct memstore {
  registry *reg;
  memstore *next;
  char *key;
  store *st;
  int refs;
  int holds;        /* readers holding positions: no checkpoint moves rows under them */
  int state;        /* MS_*: the store transaction */
  int nsp;          /* savepoints 0 .. nsp-1 have marks, sp[i] */
  int spcap;
  uint64_t *sp;
  void *cache;      /* the graph functions' (h5mem_store_cache_set) */
  void (*cache_free)(void *);
};

/* The store the table key ("schema.table") opened on this connection and a
** companion still holds, if it is the file at path, +1 reference; a handle
** of that key on another file (the table was dropped and made again
** elsewhere) is let go of the key. */
memstore *h5mem_store_find(registry *reg, const char *key, const char *path);
/* A new shared store holding st (taken, closed on failure), one reference,
** in reg's list under key. */
memstore *h5mem_store_new(registry *reg, const char *key, store *st);
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
/* The h5mem table was dropped: its key goes (h5mem_store_orphaned). */
void h5mem_store_orphan(memstore *ms);
/* The h5mem table was renamed: key (taken) is its new "schema.table"
** (freed when the store is orphaned). */
void h5mem_store_rekey(memstore *ms, char *key);
/* The store's error rc (STORE_E*; STORE_OK gives SQLITE_OK) as an SQLite
** code (ext_err_rc), with the store's message in *pzErr
** (sqlite3_mprintf'd; none when out of memory). */
int h5mem_store_err(const store *st, int rc, char **pzErr);
/* A reader sees what others committed: the store refreshed
** (store_refresh; a no-op for the writer), unless readers other than the
** caller's own `own` (0 or 1) hold positions in it (no row moves under a
** scan).  An SQLite code, the message in *pzErr (h5mem_store_err). */
int h5mem_store_refresh(memstore *ms, int own, char **pzErr);
/* One cache kept with the store for the graph functions (func_graph.c),
** freed by free_fn with the store or when replaced. */
void *h5mem_store_cache(const memstore *ms);
void h5mem_store_cache_set(memstore *ms, void *p, void (*free_fn)(void *));

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
/* Whether the open store transaction holds changes not yet committed. */
int h5mem_tx_dirty(const memstore *ms);

/* The start of each table writing in a shared store's transaction (the
** h5mem table, its companions), what the shared transaction methods read. */
typedef struct h5mem_txvt {
  sqlite3_vtab base;
  memstore *ms; /* NULL: the store does not exist (h5mem_table_missing) */
  /* A message of the shared functions (*msg, taken and NULLed) as the
  ** table's error; rc as it is when there is none. */
  int (*msg)(sqlite3_vtab *base, int rc, char **msg);
  /* The table's error when ms is NULL (xBegin). */
  int (*missing)(sqlite3_vtab *base);
} h5mem_txvt;

/* The transaction methods of a module whose table starts with an
** h5mem_txvt: its xBegin ... xRollbackTo. */
int h5mem_vt_begin(sqlite3_vtab *base);
int h5mem_vt_sync(sqlite3_vtab *base);
int h5mem_vt_commit(sqlite3_vtab *base);
int h5mem_vt_rollback(sqlite3_vtab *base);
int h5mem_vt_savepoint(sqlite3_vtab *base, int i);
int h5mem_vt_release(sqlite3_vtab *base, int i);
int h5mem_vt_rollback_to(sqlite3_vtab *base, int i);

/* ---- the tables' plans -------------------------------------------------------- */

/* xBestIndex of a table whose column 0 is its id and rowid (the h5mem
** table, its companions) of count records: plan 1, a lookup of one id
** (`id = ?` or `rowid = ?`, the only argument), else plan 0, every record. */
void h5mem_plan_id(sqlite3_index_info *info, uint64_t count);

/* ---- finding a table by name --------------------------------------------- */

/* The h5mem table called name ("table" or "schema.table") on this
** connection, connecting it first if this connection has not used it yet;
** NULL with *pzErr (sqlite3_mprintf'd) if there is none, and in *prc the
** SQLite code to fail with: connecting's own (SQLITE_CORRUPT for a damaged
** store, SQLITE_BUSY, ...), else SQLITE_ERROR. */
memvt *h5mem_table(registry *reg, sqlite3 *db, const char *name, char **pzErr, int *prc);
/* The same, also a table whose store is missing (h5mem_table_missing): for
** the companion tables, which must connect for DROP TABLE. */
memvt *h5mem_table_any(registry *reg, sqlite3 *db, const char *name, char **pzErr, int *prc);
/* The table a function's first argument names, open on this connection
** with its store there (the function's user data is the registry); else
** NULL, the function's error set (who: its name). */
memvt *h5mem_fn_table(sqlite3_context *ctx, sqlite3_value *arg, const char *who);
store *h5mem_table_store(memvt *vt);
/* SQLITE_OK, or (SQLITE_ERROR, the message in *pzErr) when the table's
** store does not exist: connected from a database file's schema, which
** never creates a store; h5mem_table reports this itself. */
int h5mem_table_missing(memvt *vt, char **pzErr);
const char *h5mem_table_name(const memvt *vt);
/* A reader holding positions of the table's store (+1 when it starts, -1
** when done): no checkpoint moves rows meanwhile. */
void h5mem_table_hold(memvt *vt, int delta);
/* The table's shared store (no reference taken) and its schema. */
memstore *h5mem_table_ms(memvt *vt);
const char *h5mem_table_schema(const memvt *vt);

/* ==== interface to code in vtab_h5mem.c ===================================== */

/* One h5mem table. */
struct memvt {
  h5mem_txvt tx;    /* its sqlite3_vtab and shared store (tx.ms) */
  sqlite3 *db;
  registry *reg;
  memvt *next;
  char *schema, *name;
  store *st;        /* tx.ms->st */
  float *vec;       /* scratch: one embedding */
  char *missing;    /* connected to a store that does not exist (its path): tx.ms and st
                       are NULL, every use is an error, DROP TABLE works (mem_connect) */
};


/* The suffixes of the companion tables of an h5mem table `mem`:
** mem_entities, mem_relations, mem_mentions, and their modules. */
extern const char *const h5mem_companion[3];
extern const char *const h5mem_companion_module[3];

/* A store's string (NULL: SQL NULL) as a result. */
static inline void h5mem_result_text(sqlite3_context *ctx, const char *s, size_t n) {
  if (!s) sqlite3_result_null(ctx);
  else sqlite3_result_text64(ctx, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}

/* A column's value as text (NULL stays NULL; a BLOB's bytes as they
** are: the store checks that strings are UTF-8 without NUL bytes and names
** the column); SQLITE_OK or SQLITE_NOMEM. */
int h5mem_value_text(sqlite3_value *v, const char **s, size_t *n);
/* Checking a column's value as the h5mem table does (the message, when
** not SQLITE_OK, in *msg, sqlite3_mprintf'd, naming col): a time (unix
** seconds or ISO-8601 text), an id (an integer; NULL: *given 0). */
int h5mem_value_time(sqlite3_value *v, const char *col, int64_t *out, char **msg);
int h5mem_value_id(sqlite3_value *v, const char *col, int64_t *id, int *given, char **msg);

#endif
