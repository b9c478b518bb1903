/*
** ext/vtab/vtab_int.h - the internal header of ext/vtab: what the files of
** the folder share and nothing outside it uses.  One section per file, the
** interface to the code in it: the h5mem table's registry, shared store
** and transaction and finding a table by name (vtab_h5mem_shared.c), the
** h5mem table (vtab_h5mem.c), module arguments (vtab_args.c), the KNN
** search (vtab_search.c), the bm25 and hybrid runs (search_text.c), the
** vector search's options (search_opts.c), the knowledge graph's functions
** (func_graph.c, func_graph_jsonl.c; its tables, vtab_graph.c, use them),
** and the h5 table (vtab_h5.c, vtab_h5_schema.c, vtab_h5_value.c).  What the
** rest of ext/ uses of the search is search.h's.
**
** The h5mem table's structs (registry, memstore, memvt) are defined only
** where H5MEM_VT_PRIVATE is (vtab_h5mem.c, vtab_h5mem_shared.c): the other
** files go through the h5mem_* functions.
*/
#ifndef H5MEM_EXT_VTAB_INT_H
#define H5MEM_EXT_VTAB_INT_H

#include <stddef.h>
#include <stdint.h>

#include "../h5sql.h"
#include "ann/ann.h"
#include "ext.h"
#include "search.h"
#include "embed/embedder.h"
#include "life/life.h"
#include "store/store.h"

typedef struct registry registry; /* the h5mem tables of one connection */
typedef struct memvt memvt;       /* one h5mem table */
typedef struct memstore memstore; /* its store handle and transaction */

/* ==== interface to code in vtab_h5mem_shared.c ============================ */

/* ---- the registry ----------------------------------------------------------- */

/* The h5mem tables open on one connection, for h5mem_checkpoint(name) and
** vec_search(name, ...), and their stores. */
#ifdef H5MEM_VT_PRIVATE
struct registry {
  memvt *first;
  memstore *stores;
  int refs;
  sqlite3 *db; /* the connection (h5mem_store_find asks its schema) */
  struct embedder_cache *emb; /* the connection's embedders (tables and h5mem_embed share them) */
  struct fleet *fleets; /* the fleets (h5mem tables of paths=) open on the connection */
};
#endif


/* A new registry of db's tables with one reference (NULL: no memory). */
registry *h5mem_registry_new(sqlite3 *db);
/* The connection's embedders (lib/embed/embedder.h), made at the first
** use; NULL out of memory. */
struct embedder_cache *h5mem_registry_embedders(registry *reg);
/* -1 reference (reg a registry *): the last frees it. */
void h5mem_registry_unref(void *reg);
/* Register module mod, or function fn (SQLITE_UTF8 | flags), under name
** with reg as its data: each takes a reference of its own, let go by
** SQLite (on failure too).  An SQLite code. */
int h5mem_registry_module(sqlite3 *db, registry *reg, const char *name, const sqlite3_module *mod);
int h5mem_registry_function(sqlite3 *db, registry *reg, const char *name, int nargs, int flags,
                            void (*fn)(sqlite3_context *, int, sqlite3_value **));
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
#ifdef H5MEM_VT_PRIVATE
/* MS_WANTED: xBegin was called, the writer lock is not taken yet: the
** first read or write of the store takes it (h5mem_store_refresh,
** h5mem_tx_need), after an INSERT's text is embedded (vtab_h5mem.c). */
enum { MS_IDLE, MS_WANTED, MS_OPEN, MS_PREPARED };
struct memstore {
  registry *reg;
  memstore *next;
  char *key;
  store *st;
  int refs;
  int holds;        /* readers holding positions: no checkpoint moves rows under them */
  int own;          /* of them, the refreshing reader's own (h5mem_store_refresh, for h5mem_tx_begin) */
  int state;        /* MS_*: the store transaction */
  int nsp;          /* savepoints 0 .. nsp-1 have marks, sp[i] */
  int spcap;
  uint64_t *sp;
  void *cache;      /* the graph functions' (h5mem_store_cache_set) */
  void (*cache_free)(void *);
  /* INSERTs a table holds back to embed in one batch (vtab_h5mem.c): its
  ** flush writes them, discard drops them; written before anything else
  ** reads or writes the store (h5mem_tx_flush) */
  memvt *pend;
  int (*flush)(memvt *vt, char **pzErr);
  void (*discard)(memvt *vt);
  char *failed;     /* a batch that failed: the transaction cannot commit (why) */
};
#endif


/* The store the table key ("schema.table") opened on this connection and a
** companion still holds, if it is the file at path, +1 reference; a handle
** of that key on another file (the table was dropped and made again
** elsewhere) is let go of the key.  Else the handle of the same file and
** schema whose table name is no table any more (renamed by another
** connection: statements or companions of the old name hold it), taking
** key. */
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
/* The writer lock (as h5mem_tx_need) without writing the held-back rows. */
int h5mem_tx_lock(memstore *ms, char **pzErr);
/* The held-back INSERTs written (a failed batch's message again: the
** transaction must roll back). */
int h5mem_tx_flush(memstore *ms, char **pzErr);
int h5mem_tx_sync(memstore *ms, char **pzErr);
int h5mem_tx_commit(memstore *ms, char **pzErr);
void h5mem_tx_rollback(memstore *ms);
int h5mem_tx_savepoint(memstore *ms, int i, char **pzErr);
int h5mem_tx_release(memstore *ms, int i, char **pzErr);
int h5mem_tx_rollback_to(memstore *ms, int i, char **pzErr);
/* Whether the open store transaction holds changes not yet committed. */
int h5mem_tx_dirty(const memstore *ms);

/* The start of each table writing in a shared store's transaction (the
** h5mem table, its companions), what the shared transaction methods read. */
typedef struct h5mem_txvt {
  sqlite3_vtab base;
  int fleet; /* a fleet (vtab_fleet.c), whose methods the h5mem module's pass it to */
  memstore *ms; /* NULL: the store does not exist (h5mem_table_missing) */
  /* A message of the shared functions (*msg, taken and NULLed) as the
  ** table's error (ext_vtab_msg: without a message SQLITE_ERROR becomes
  ** SQLITE_NOMEM, other codes stay). */
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

/* ==== interface to code in func_h5mem.c =================================== */

/* h5mem_checkpoint, h5mem_index and h5mem_score, with reg as their data. */
int h5mem_func_register(sqlite3 *db, registry *reg); /* (h5mem_embed too) */
int h5mem_sign_register(sqlite3 *db, registry *reg);  /* h5mem_keygen (func_sign.c) */

/* Record a use of each memory of ids[0..n) (access_count + 1, last_access
** = now, unix seconds) in the connection's transaction, all or none (a
** savepoint of its own), through the table's 'touch' command (docs/SQL.md,
** "Memory lifecycle"): an op of a few dozen bytes per memory, not a new
** record.  An id that names no live memory is skipped.  An SQLite code;
** the message in *pzErr (sqlite3_mprintf'd). */
int h5mem_touch_ids(memvt *vt, const int64_t *ids, size_t n, int64_t now, char **pzErr);

/* The lifecycle policy of an h5mem table (its creation options, docs/SQL.md
** "Memory lifecycle"), parsed when the table is created or connected
** (life_policy.c).  Nothing of it is kept in the store: the options come
** back with the CREATE statement at each connect. */
enum { H5MEM_DEDUP_AUTO = 0, H5MEM_DEDUP_ANY, H5MEM_DEDUP_SESSION, H5MEM_DEDUP_SOURCE, H5MEM_DEDUP_OFF };
typedef struct h5mem_policy {
  int reinforce; /* reinforce=on: vec_search, bm25, hybrid and kg_* touch what they return */
  int64_t working_capacity; /* working_capacity=N: the working tier's size after a cycle (1000) */
  int64_t promote_after;    /* promote_after=N: working -> episodic at access_count >= N (3) */
  int64_t semantic_after;   /* semantic_after=N: episodic -> semantic at access_count >= N (0:
                               2 x promote_after) */
  double half_life_days;    /* half_life_days=X: the decay score's half-life (7) */
  double merge_threshold;   /* merge_threshold=X: near-duplicates' cosine distance (0.05; < 0: off) */
  int evict_delete;         /* evict=delete (1) or archive (0, the default) */
  int evict_order;          /* an ephemeral store's capacity: evict=lru (1) or score (2); 0: not given */
  int merge_all;            /* merge_scope=all (1): a cycle compares the working tier with every
                               non-archive memory; working (0, the default): with itself */
  int64_t consolidate_every; /* consolidate=auto[:N]: a cycle every N memories h5mem_remember
                               inserts (auto: 100); 0: off (the default) */
  int gate_off;             /* gate=off: h5mem_remember does not apply the write gate */
  life_gate_opts gate;      /* gate='{...}': the gate's options (h5mem_gate's) */
  int strategy;             /* strategy=every_exchange|semantic_shift|always (life_strategy) */
  double shift_threshold;   /* shift_threshold=X: semantic_shift's cosine distance (0.3) */
  int dedup;                /* dedup=auto|any|session|source|off: which memories a new one is
                               a near-duplicate of (H5MEM_DEDUP_*) */
} h5mem_policy;
const h5mem_policy *h5mem_table_policy(const memvt *vt);
/* The connection the table is open on. */
sqlite3 *h5mem_table_db(const memvt *vt);

/* What the lifecycle functions keep with a connected table: memories
** h5mem_remember inserted since the last cycle (consolidate=auto), and the
** last cycle's report (h5mem_consolidate returns it). */
typedef struct h5mem_life_state {
  uint64_t remembered;
  char report[1024];
} h5mem_life_state;
h5mem_life_state *h5mem_table_life(memvt *vt);

/* ==== interface to code in life_policy.c ================================== */

/* The defaults (docs/SQL.md, "Memory lifecycle"). */
void h5mem_policy_default(h5mem_policy *p);
/* One CREATE VIRTUAL TABLE argument key=value (key[0..klen), value
** unquoted): SQLITE_OK when it is a policy option and good, SQLITE_ERROR
** with the message in *pzErr naming the option ("h5mem: evict=x: expected
** archive, delete, lru or score"), SEARCH_UNKNOWN when the key is no policy option.
** *seen marks the options given (each once). */
int h5mem_policy_arg(h5mem_policy *p, const char *key, size_t klen, const char *value, unsigned *seen,
                     char **pzErr);
/* The policy options' names, for the table's list of known options. */
#define H5MEM_POLICY_KNOWN                                                                       \
  "working_capacity, promote_after, semantic_after, half_life_days, merge_threshold, evict, "     \
  "merge_scope, consolidate, reinforce, gate, strategy, shift_threshold, dedup"
/* The gate's options in the JSON object s[0..n) over *o (each key once;
** unknown keys an error listing the known ones): SQLITE_OK, SQLITE_NOMEM
** or SQLITE_ERROR with the reason in *err. */
int h5mem_gate_json(life_gate_opts *o, const char *s, size_t n, char **err);

/* ==== interface to code in mem_consolidate.c ============================== */

/* INSERT INTO mem(mem, meta) VALUES('consolidate', options): one cycle
** over the table's store in the open store transaction, all or nothing
** (undone on failure); the report into h5mem_table_life(vt)->report.  An
** SQLite code, the message in *pzErr (sqlite3_mprintf'd). */
int h5mem_consolidate_cmd(memvt *vt, store *st, sqlite3_value *options, char **pzErr);

/* The embedding of the live record at pos as float32 into out (dim
** values; converted from float16 storage): *has 0 when it has none.  A
** store code. */
int h5mem_pos_emb(store *st, uint64_t pos, float *out, int *has);

/* h5mem_remember and h5mem_consolidate (func_remember.c). */
int h5mem_life_register(sqlite3 *db, registry *reg);

/* ==== interface to code in vtab_h5mem.c =================================== */

/* One h5mem table. */
#ifdef H5MEM_VT_PRIVATE
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
  h5mem_policy policy; /* its lifecycle options */
  h5mem_life_state life; /* the lifecycle functions' state */
  /* the declared columns (the store's; a missing store's: as declared),
  ** SQL columns NCOLS + i; scratch for one record's values */
  int ncols;
  store_coldef *cdef;
  store_val *cv;
  uint8_t *cbuf;       /* the vector columns' values, one after another */
  /* the store's embedder, when h5mem runs it (vt_embedder_setup): an
  ** INSERT of text without an embedding, and a text query, embed with it,
  ** through the connection's cache (reg->emb) */
  char *espec, *emodel, *ekey;
  struct embedder_conf econf; /* espec, emodel, ekey and an HTTP embedder's limits */
  char *eblocked;   /* why the store's embedder cannot be used here, or NULL */
  /* INSERTs held back to be embedded in one batch (an HTTP embedder):
  ** their ids, and copies of their values (NCOLS + ncols each) */
  struct pend_row *pend;
  int npend, pcap;
  int no_embed;     /* record_from leaves text unembedded (a row held back) */
};
#endif

/* An embedding argument (a float32 BLOB, float16 with vec_f16's subtype, or
** a JSON array; NULL: none, *has 0) as dim float32 values into out, checked
** as the table checks what it stores (dim, finite, float16's range in a
** float16 store, the metric's range).  SQLITE_OK, SQLITE_MISMATCH with
** the message ("embedding: ...") in *pzErr, or SQLITE_NOMEM. */
int h5mem_emb_value(store *st, sqlite3_value *v, float *out, int *has, char **pzErr);
/* The same, and on SQLITE_MISMATCH the reason h5mem_migrate would skip
** the row for in *reason: "wrong_dimension", "bad_embedding",
** "nan_or_inf", "float16_range" or "vector_range" (NULL otherwise). */
int h5mem_emb_check(store *st, sqlite3_value *v, float *out, int *has, char **pzErr, const char **reason);

/* The open h5mem table with an embedder, when the connection's tables
** name one embedder (h5mem_embed(text)); NULL and a message otherwise. */
memvt *h5mem_table_with_embedder(registry *reg, char **pzErr);

/* The table's embedder (the connection's, checked against its store), or
** NULL with an SQLite code in *rc and a message in *pzErr. */
struct embedder *h5mem_table_embedder(memvt *mt, int *rc, char **pzErr);

/* The name of the table's command column (INSERT INTO mem(mem) VALUES('checkpoint')):
** the table's name, or "h5mem" when that is one of its columns' names. */
const char *h5mem_table_command(const memvt *vt);

/* The suffixes of the companion tables of an h5mem table `mem`:
** mem_entities, mem_relations, mem_mentions, and their modules. */
extern const char *const h5mem_companion[3];
extern const char *const h5mem_companion_module[3];

/* The h5mem table's first twelve columns (id, text, embedding, source,
** session, tags, ts, tier, importance, access_count, last_access, meta),
** which a fleet has too: column col of the record v of st as the result,
** and the parts (STORE_V_*) of a view it needs. */
int h5mem_view_result(sqlite3_context *ctx, store *st, const store_view *v, int col);
unsigned h5mem_view_part(int col);
#define H5MEM_VIEW_COLS 12

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

/* ==== interface to code in vtab_args.c ==================================== */

/* s without surrounding blanks and quotes ('..', "..", `..` or [..]; a
** doubled quote inside stands for one), sqlite3_malloc'd (NULL: no memory). */
char *ext_unquote(const char *s);

/* One argument: key=value gives the key (trimmed, not NUL-terminated:
** *key, *klen) and the unquoted value; a bare value (no '=' before any
** quote) gives *klen 0.  *value is sqlite3_malloc'd. */
int ext_vtab_arg(const char *arg, const char **key, size_t *klen, char **value);

/* Whether key[0..klen) is name, ignoring case. */
int ext_key_is(const char *key, size_t klen, const char *name);

/* Each option once: whether key (one of names, NULL-ended, aliases of one
** option joined by '|', as "path|file") is marked in *seen already (bit i
** for names[i]); marks it.  A key not in names: 0. */
int ext_key_repeated(const char *key, size_t klen, const char *const *names, unsigned *seen);

/* For a table-valued function's xConnect: declare schema and allocate
** the table object, size bytes (a struct starting with its sqlite3_vtab),
** zeroed, into *out; on failure, why in *pzErr (who: the module). */
int ext_vtab_declare_new(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out,
                         const char *who, char **pzErr);

/* The table object of a table-valued function over the stores (vec_search,
** bm25, hybrid, kg_bfs, kg_activate, kg_resolve): the connection, the
** module's aux (the stores' registry) and which of the module's functions
** it is (kind: the module's own description of it). */
typedef struct ext_tvf {
  sqlite3_vtab base;
  sqlite3 *db;
  void *aux;
  const void *kind;
} ext_tvf;

/* xConnect of such a function: schema declared (who: the function's name,
** for errors), the object allocated into *out, db, aux and kind recorded,
** and SQLITE_VTAB_DIRECTONLY: it reads a store's files, so never from a
** trigger or view (docs/SQL.md, "Trust"). */
int ext_tvf_connect(sqlite3 *db, void *aux, const void *kind, const char *schema, const char *who,
                    sqlite3_vtab **out, char **pzErr);
/* xDisconnect of such a function. */
int ext_tvf_disconnect(sqlite3_vtab *vt);

/* Define fn, the xConnect of the function k describes (a pointer to a
** struct with its schema and name). */
#define EXT_TVF_CONNECT(fn, k)                                                                    \
  static int fn(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,    \
                char **pzErr) {                                                                   \
    (void)argc;                                                                                   \
    (void)argv;                                                                                   \
    return ext_tvf_connect(db, aux, (k), (k)->schema, (k)->name, out, pzErr);                     \
  }

/* ==== interface to code in vtab_search.c ================================== */

enum { KNN_F_ID = 0, KNN_F_TS = 1, KNN_F_SOURCE = 2, KNN_F_SESSION = 3, KNN_F_TIER = 4 };
enum { KNN_OP_EQ = 0, KNN_OP_GT, KNN_OP_GE, KNN_OP_LT, KNN_OP_LE, KNN_OP_IN };

/* Conditions a search applies before ranking. */
typedef struct knn_filter {
  int empty; /* no record can meet them */
  const char *str[3]; /* source, session, tier (=); valid during xFilter */
  size_t len[3];
  int has[3];
  int has_ts;
  int64_t ts_lo, ts_hi; /* inclusive */
  int has_ids;
  int64_t *ids; /* sorted */
  size_t nids;
  /* conditions on declared columns (store_cond; the values' bytes copied,
  ** sqlite3_malloc'd, in vals and their blocks in mem) */
  store_cond *conds; /* (v unset: the values are vals[coff[i]] ...) */
  int *coff;
  int nconds;
  store_val *vals;
  int nvals;
  void **mem;
  int nmem;
} knn_filter;

int search_knn_filter_add(knn_filter *f, int field, int op, sqlite3_value *v);
/* A condition on declared column col (op STORE_OP_*; v the value, or the
** IN list for STORE_OP_IN (sqlite3_vtab_in), none for IS [NOT] NULL) of
** type type (STORE_T_*: numbers compare as numbers, text as bytes): the
** value with the column's affinity applied (a text that reads as a number
** is that number in a numeric column).  A text column compared with a
** number compares by the other side's affinity, unknown here: no
** condition is added then (*skipped = 1), SQLite tests the rows. */
int search_knn_filter_cond(knn_filter *f, int col, int type, int op, sqlite3_value *v);
/* The same from values (nv of them; text and blob bytes copied). */
int search_knn_filter_vals(knn_filter *f, int col, int op, const store_val *vals, int nv);
/* The "where" member of a search's options (Chroma's form: {"col": v,
** "col": {"$gt": v, ...}, "$and": [...]}) as conditions on the declared
** columns of st into f; other members are ignored (the run reads them).
** SQLITE_OK, or SQLITE_ERROR with the reason in *err. */
int search_where(store *st, sqlite3_value *options, knn_filter *f, char **err);
/* Plan the usable constraints on the declared columns (SQL columns first
** .. first + n - 1, of cdef's types) after what plan holds: tokens 'C',
** two digits of the column, an op letter (search_knn_filter_cond's). */
void search_knn_plan_decl(sqlite3_index_info *info, int first, const store_coldef *cdef, int n, char *plan,
                          size_t cap, int *argi, int *used);
/* One token of a plan that search_knn_plan_decl made, at *p (advanced
** past it): its value v into f.  SQLITE_OK, or an error code. */
int search_knn_plan_decl_add(knn_filter *f, const store_coldef *cdef, int n, const char **p, sqlite3_value *v);
void search_knn_filter_free(knn_filter *f);

/* Which records a search may return, from f: a filter for the store's
** searches (bits for id IN, else a function testing the rest record by
** record; neither when f has no conditions), or none at all. */
typedef struct knn_allow {
  store_filter flt;
  int none; /* no record meets f */
  uint8_t *bits;
  struct knn_allow_ctx *c;
} knn_allow;
int search_knn_allow_init(store *st, const knn_filter *f, knn_allow *a, char **pzErr);
/* After a search: whether testing a record failed (reading the store). */
int search_knn_allow_check(const knn_allow *a, store *st, char **pzErr);
void search_knn_allow_free(knn_allow *a);

/* Take the usable constraints on the columns colfield maps to KNN_F_*
** (column -1, the rowid, is the id) as plan tokens (field, op digits) after
** what plan holds, numbering their arguments from *argi + 1. */
void search_knn_plan(sqlite3_index_info *info, const int *colfield, int ncols, char *plan, size_t cap,
                     int *argi, int *used);

/* The query vector from a value (BLOB or JSON, the store's dim), prepared
** for the kernels whatever its scale (cosine: the unit vector; dot: scaled
** by a power of two, *unit the factor to multiply raw distances by, 1
** otherwise; l2: refused beyond float32's range). */
int search_knn_query(store *st, memvt *mt, sqlite3_value *v, float **out, double *unit, char **pzErr);

/* The table's embedder's vector of a query text into out (the store's dim
** floats): 1 done; 0 when the table has no embedder h5mem runs (or the
** text has no word its model knows: *pzErr then says so and the result
** is SQLITE_ERROR through *rc); -1 with *rc and *pzErr set on failure. */
int h5mem_text_query(memvt *mt, const char *text, size_t n, float *out, int *rc, char **pzErr);
/* Whether the table has an embedder h5mem runs (hash:DIM, static:PATH). */
int h5mem_table_embeds(const memvt *mt);

/* An error unless every distance of r[0..n-1] is finite. */
int search_knn_check(store *st, const ann_res *r, uint64_t n, char **pzErr);

/* The top k among the live records that meet f (store_knn: through the
** store's index unless o says exact; o may be NULL): positions and raw
** distances (sqlite3_malloc'd), sorted. */
int search_knn_run(store *st, const float *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
                   ann_res **out, uint64_t *nout, char **pzErr);

/* The query for declared vector column c (store_knn_col's terms:
** float32 values for a float32 or float16 column, from a float32 BLOB,
** a float16 one (vec_f16) or JSON; int8 values from a BLOB or JSON
** integers; a bit column's BLOB), sqlite3_malloc'd into *out. */
int search_col_query(store *st, int c, sqlite3_value *v, void **out, char **pzErr);
/* search_knn_run by declared vector column c (store_knn_col): final distances. */
int search_knn_run_col(store *st, int c, const void *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
                       ann_res **out,
                       uint64_t *nout, char **pzErr);
/* A column's distance as a score (higher is better). */
double search_col_score(const store_coldef *d, double dist);

/* The options every search takes besides its own (search_opts.c):
** "touch" (true: record a use of each memory the search returns, false:
** not; not given: the table's policy, h5mem_policy.reinforce, decides) and
** "now" (unix seconds: the time the touch records, and hybrid's rerank's
** unless it gives its own; default the current time). */
typedef struct search_touch {
  int touch, has_touch;
  int64_t now;
  int has_now;
} search_touch;

/* The known keys of search_touch_option, for the options' messages. */
#define SEARCH_TOUCH_KNOWN "touch true/false, now (unix seconds), where {conditions on declared columns}"

/* key "touch" or "now" into t, as search_opts_parse's each does ("where":
** accepted, search_where reads it); any other key: SEARCH_UNKNOWN. */
int search_touch_option(search_touch *t, const char *key, const search_opt *v, char **err);

/* A table-valued function's arguments (NULL when not given). */
typedef struct search_args {
  memvt *mt;              /* the table (its embedder turns a text query into a vector) */
  sqlite3_value *query;   /* the query vector */
  sqlite3_value *qtext;   /* the query text */
  sqlite3_value *options; /* JSON */
  int64_t k;
  search_touch *touch;    /* the run fills it from options (never NULL) */
} search_args;

/* One result: a position and up to three numbers (vec_search: distance,
** score; bm25: score; hybrid: score, vector_score, keyword_score). */
typedef struct srow {
  uint64_t pos;
  double v[3];
  uint8_t null; /* bit i: v[i] is SQL NULL */
} srow;

/* n zeroed rows (sqlite3_malloc'd), or NULL. */
srow *search_srow_alloc(uint64_t n);

/* A raw distance as the distance column shows it, and as a score. */
double search_knn_distance(const store *st, float d, double unit);
double search_knn_score(const store *st, float d, double unit);

/* ==== interface to code in vtab_fleet.c ================================== */

/* A fleet: CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/agent-*.h5'),
** a read-only union of many stores (docs/SQL.md, "Fleets").  The h5mem
** module passes a fleet's calls to these (mem_connect_common and the
** module's methods, when tx.fleet is set). */
typedef struct fleet fleet;
typedef struct fleet_ent fleet_ent;
/* Whether argv[3..argc) has paths=: the table is a fleet. */
int h5mem_fleet_args(int argc, const char *const *argv);
int h5mem_fleet_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                        char **pzErr);
extern const sqlite3_module h5mem_fleet_module; /* (its xCreate and xConnect unused) */
/* The fleet called name ("table" or "schema.table") connected on this
** connection, or NULL (one not used yet connects as h5mem_table looks). */
fleet *h5mem_fleet_find(registry *reg, const char *name);

/* The stores a search runs over: a table's one store, or a fleet's stores
** as listed when the statement began.  A fleet's store is opened (or
** taken from the fleet's open ones) and pinned by search_set_store, and
** let go by search_set_let; results name a record by SEARCH_GPOS(i, pos). */
typedef struct search_set {
  int n;
  int vec;         /* a search: a fleet's stores must share dim and metric (dim, metric: the first's) */
  int dim, metric;
  store *one;      /* a table's store (not pinned: the table holds it) */
  fleet *fl;       /* a fleet's: */
  fleet_ent **ent; /* its stores (a reference each) */
  store **st;      /* st[i]: store i while pinned, else NULL (a table's: &one) */
} search_set;
#define SEARCH_POS_BITS 40
#define SEARCH_GPOS(i, pos) ((uint64_t)(i) << SEARCH_POS_BITS | (pos))
#define SEARCH_SIDX(g) ((int)((g) >> SEARCH_POS_BITS))
#define SEARCH_LPOS(g) ((g) & (((uint64_t)1 << SEARCH_POS_BITS) - 1))
/* A table's set (its store alone). */
void search_set_table(search_set *ss, store *st);
/* The fleet's stores now (listed again if its folder changed), or only the
** one whose path is only (none: an empty set).  An SQLite code. */
int search_set_fleet(search_set *ss, fleet *fl, const char *only, char **pzErr);
/* Store i, open and pinned (until search_set_let or search_set_free). */
int search_set_store(search_set *ss, int i, store **out, char **pzErr);
void search_set_let(search_set *ss, int i);
/* Store i's path (a table's: its store's). */
const char *search_set_path(const search_set *ss, int i);
void search_set_free(search_set *ss);

/* ==== interface to code in search_text.c ================================== */

/* bm25 and hybrid (search_text.c): the results for the arguments and the
** filter, sqlite3_malloc'd. */
int search_bm25_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                    uint64_t *nout, char **pzErr);
int search_hybrid_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                      uint64_t *nout, char **pzErr);
/* vec_search's run (vtab_search.c), for the KNN form of a fleet too. */
int search_vec_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                   uint64_t *nout, char **pzErr);
/* Store i of ss (search_set_store), an error prefixed with its path (a fleet's). */
int search_set_pin(search_set *ss, int i, store **st, char **pzErr);
/* rc, and a fleet's message in *pzErr prefixed with store i's path. */
int search_set_err(const search_set *ss, int i, int rc, char **pzErr);
/* Let go the stores of ss that none of res[0..n) is from (the cursor keeps
** the others pinned while it reads the rows).  SQLITE_OK or SQLITE_NOMEM. */
int search_set_keep(search_set *ss, const srow *res, uint64_t n);
/* rows r[0..n) of store i (sorted, best first: by v[0], ascending unless
** desc) merged into the best k of the set so far, *top[0..*ntop) (the
** earlier store first among equals); stores whose rows all fell out let go
** (held[j]: store j's rows in *top; hold: the rows of other lists that keep
** a store pinned, or NULL). */
int search_set_merge(search_set *ss, int i, srow *r, uint64_t n, uint64_t k, int desc, srow **top,
                     uint64_t *ntop, uint32_t *held, const uint32_t *hold);


/* ==== interface to code in search_opts.c ================================== */

/* The vector search options (exact, ef, nprobe, index) into o, as
** search_opts_parse's each (search_opts.c). */
int search_knn_option(store_knn_opts *o, const char *key, const search_opt *v, char **err);

/* ==== interface to code in func_graph.c =================================== */

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

/* A graph function's store, named by its first argument: the direct-call
** check (ext_direct_call) and graph_store, or NULL with the function's
** error set (fn: its name). */
memvt *graph_fn_store(sqlite3_context *ctx, sqlite3_value *name, const char *fn);

/* ==== interface to code in func_graph_jsonl.c ============================= */

/* Register kg_import_jsonl and kg_export_jsonl (called by
** ext_func_graph_register, which registers the graph's other functions). */
int graph_jsonl_register(sqlite3 *db, registry *reg);

/* ==== interface to code in vtab_h5.c ====================================== */

/* Whether t is an integer or floating-point type. */
int h5vt_is_numeric(const h5_type *t);

/* Take the writer's lock on path: an fd holding flock(LOCK_EX), or -1 and
** SQLITE_BUSY when another connection or process holds it. */
int h5vt_lock_file(const char *path, int *fd, char **msg);

/* ==== interface to code in vtab_h5_schema.c =============================== */

/* The options of CREATE VIRTUAL TABLE ... USING h5(...). */
typedef struct h5opts {
  char *file, *dset, *schema, *row, *mode, *compression, *sync;
  int64_t chunk;
  int shuffle;
} h5opts;

void h5vt_opts_free(h5opts *o);

/* Parse the module arguments argv[3..argc) into o (free it with
** h5vt_opts_free, on failure too); an error names the option. */
int h5vt_parse_opts(int argc, const char *const *argv, h5opts *o, char **pzErr);

/* Parse 'name type, ...' into a compound type (or, for one field called
** value, that field's type) for a dataset with shape (0[, N]). */
int h5vt_parse_schema(const char *s, h5_type **out, int *rank, uint64_t *ncols, char **pzErr);

/* A compact description of a type for messages ('<f4', compound JSON). */
char *h5vt_type_text(const h5_type *t);

/* Whether a (from a schema) and b (in the file) hold the same values. */
int h5vt_same_type(const h5_type *a, const h5_type *b);

/* Create the dataset of a schema in a new file or an existing one. */
int h5vt_create_dataset(const h5opts *o, char **pzErr);

/* ==== interface to code in vtab_h5_value.c ================================ */

typedef struct h5vt h5vt; /* the table (vtab_h5.c) */

/* Whether this module can write elements of type t. */
int h5vt_writable(const h5_type *t);

/* n numbers (a float32 BLOB or a JSON array) into elements of type t at p.
** 0; -1 with the message in *msg; or SQLITE_NOMEM. */
int h5vt_put_array(const h5_type *t, uint8_t *p, uint64_t n, sqlite3_value *v, char **msg);

/* One SQL value into one element of type t at p (zeroed before).  0; -1
** with the message in *msg; or SQLITE_NOMEM. */
int h5vt_put_value(h5vt *vt, const h5_type *t, uint8_t *p, sqlite3_value *v, char **msg);

/* Free the strings (variable-length, malloc'd) of the element of type t at
** p, and zero their pointers. */
void h5vt_free_strings(const h5_type *t, uint8_t *p);

#endif
