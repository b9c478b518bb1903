/*
** ext/vtab/vtab_h5mem_shared.c - what the h5mem table (vtab_h5mem.c) shares
** with its companion tables (vtab_graph.c) and the functions naming it
** (vtab_search.c, func_graph.c): the registry of one connection's h5mem
** tables, the store handle one h5mem table and its companions share, the
** store transaction they write in (and the transaction methods their
** modules forward to it), and finding a table by name (vtab_int.h).
*/
#include "config.h"

#define H5MEM_VT_PRIVATE /* the h5mem table's structs (vtab_int.h) */

#include <string.h>

#include "../ext_err.h"
#include "embed/embedder.h"
#include "store/store.h"
#include "vtab_int.h"

/* ---- the registry ------------------------------------------------------------ */

registry *h5mem_registry_new(sqlite3 *db) {
  registry *reg = sqlite3_malloc(sizeof *reg);
  if (!reg) return NULL;
  memset(reg, 0, sizeof *reg);
  reg->refs = 1;
  reg->db = db;
  return reg;
}

struct embedder_cache *h5mem_registry_embedders(registry *reg) {
  if (!reg->emb) reg->emb = embedder_cache_new();
  return reg->emb;
}

void h5mem_registry_unref(void *p) {
  registry *reg = p;
  if (--reg->refs) return;
  embedder_cache_free(reg->emb);
  sqlite3_free(reg);
}

int h5mem_registry_module(sqlite3 *db, registry *reg, const char *name, const sqlite3_module *mod) {
  reg->refs++; /* SQLite lets it go, on failure too */
  return sqlite3_create_module_v2(db, name, mod, reg, h5mem_registry_unref);
}

int h5mem_registry_function(sqlite3 *db, registry *reg, const char *name, int nargs, int flags,
                            void (*fn)(sqlite3_context *, int, sqlite3_value **)) {
  reg->refs++;
  return sqlite3_create_function_v2(db, name, nargs, SQLITE_UTF8 | flags, reg, fn, NULL, NULL,
                                    h5mem_registry_unref);
}

void h5mem_registry_add(registry *reg, memvt *vt) {
  vt->reg = reg;
  vt->next = reg->first;
  reg->first = vt;
}

void h5mem_registry_remove(memvt *vt) {
  if (!vt->reg) return;
  for (memvt **p = &vt->reg->first; *p; p = &(*p)->next)
    if (*p == vt) {
      *p = vt->next;
      break;
    }
}

/* ---- the shared store ---------------------------------------------------- */

/* Whether "schema.table" (key) names a table of this connection's schema
** now (1), not (0), or it cannot be told (-1). */
static int key_table_exists(sqlite3 *db, const char *key) {
  const char *dot = strchr(key, '.');
  if (!db || !dot) return -1;
  char *schema = sqlite3_mprintf("%.*s", (int)(dot - key), key);
  char *sql = schema ? sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE type = 'table' AND name = ?1 "
                                 "COLLATE NOCASE", schema) : NULL;
  sqlite3_free(schema);
  sqlite3_stmt *st = NULL;
  int yes = -1;
  if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, dot + 1, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    yes = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
  }
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return yes;
}

/* Whether key and other ("schema.table") name the same schema. */
static int same_schema(const char *key, const char *other) {
  const char *a = strchr(key, '.'), *b = strchr(other, '.');
  return a && b && a - key == b - other && !sqlite3_strnicmp(key, other, (int)(a - key));
}

memstore *h5mem_store_find(registry *reg, const char *key, const char *path) {
  for (memstore *ms = reg->stores; ms; ms = ms->next) {
    if (!ms->key || sqlite3_stricmp(ms->key, key)) continue;
    if (!strcmp(store_path(ms->st), path)) {
      ms->refs++;
      return ms;
    }
    sqlite3_free(ms->key);
    ms->key = NULL;
  }
  /* The table renamed by another connection (ALTER TABLE there runs no
  ** xRename here): the handle this connection opened under the old name,
  ** still held by its companions or by statements of the old name, is
  ** this table's when it is the same file and the old name is no table
  ** any more.  One handle per table keeps one writer and one transaction
  ** (a second handle would be a second writer of the file). */
  for (memstore *ms = reg->stores; ms; ms = ms->next) {
    if (!ms->key || !same_schema(ms->key, key) || strcmp(store_path(ms->st), path)) continue;
    if (key_table_exists(reg->db, ms->key) != 0) continue;
    char *k = sqlite3_mprintf("%s", key);
    if (!k) return NULL; /* (a handle of its own then: the second writer is BUSY, nothing lost) */
    sqlite3_free(ms->key);
    ms->key = k;
    ms->refs++;
    return ms;
  }
  return NULL;
}

memstore *h5mem_store_new(registry *reg, const char *key, store *st) {
  memstore *ms = sqlite3_malloc(sizeof *ms);
  if (!ms) {
    store_close(st);
    return NULL;
  }
  memset(ms, 0, sizeof *ms);
  ms->key = sqlite3_mprintf("%s", key);
  if (!ms->key) {
    sqlite3_free(ms);
    store_close(st);
    return NULL;
  }
  ms->reg = reg;
  ms->st = st;
  ms->refs = 1;
  ms->next = reg->stores;
  reg->stores = ms;
  return ms;
}

memstore *h5mem_table_share(memvt *vt) {
  if (vt->tx.ms) vt->tx.ms->refs++;
  return vt->tx.ms;
}

int h5mem_table_missing(memvt *vt, char **pzErr) {
  if (!vt->missing) return SQLITE_OK;
  *pzErr = sqlite3_mprintf("the store of %s, '%s', does not exist (opening a database never creates a "
                           "store, only CREATE VIRTUAL TABLE does: DROP TABLE %s and create it again)",
                           vt->name, vt->missing, vt->name);
  return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
}

static void tx_end(memstore *ms);

void h5mem_store_release(memstore *ms) {
  if (!ms || --ms->refs > 0) return;
  for (memstore **p = &ms->reg->stores; *p; p = &(*p)->next)
    if (*p == ms) {
      *p = ms->next;
      break;
    }
  tx_end(ms);
  store_close(ms->st); /* checkpoints the writer's changes */
  if (ms->cache_free) ms->cache_free(ms->cache);
  sqlite3_free(ms->sp);
  sqlite3_free(ms->key);
  sqlite3_free(ms);
}

store *h5mem_store_handle(const memstore *ms) { return ms->st; }
void h5mem_store_hold(memstore *ms, int delta) { ms->holds += delta; }
int h5mem_store_holds(const memstore *ms) { return ms->holds; }
int h5mem_store_orphaned(const memstore *ms) { return ms->key == NULL; }

void h5mem_store_orphan(memstore *ms) {
  sqlite3_free(ms->key);
  ms->key = NULL;
}

void h5mem_store_rekey(memstore *ms, char *key) {
  if (ms->key) {
    sqlite3_free(ms->key);
    ms->key = key;
  } else {
    sqlite3_free(key);
  }
}

void *h5mem_store_cache(const memstore *ms) { return ms->cache; }
void h5mem_store_cache_set(memstore *ms, void *p, void (*free_fn)(void *)) {
  if (ms->cache_free && ms->cache != p) ms->cache_free(ms->cache);
  ms->cache = p;
  ms->cache_free = free_fn;
}

int h5mem_store_err(const store *st, int rc, char **pzErr) {
  if (rc == STORE_OK) return SQLITE_OK;
  if (rc == STORE_ENOMEM) return SQLITE_NOMEM;
  *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
  return ext_err_rc(rc);
}

/* A reader in a write statement (MS_WANTED) takes the writer lock first,
** so that what it reads is what the statement then changes, as when xBegin
** took it. */
int h5mem_store_refresh(memstore *ms, int own, char **pzErr) {
  int rc = h5mem_tx_flush(ms, pzErr);
  ms->own = own; /* (the caller's own positions, about to be reset: h5mem_tx_begin) */
  if (rc == SQLITE_OK && ms->state == MS_WANTED) rc = h5mem_tx_begin(ms, pzErr);
  ms->own = 0;
  if (rc != SQLITE_OK) return rc;
  if (ms->holds > own) return SQLITE_OK;
  /* (an ephemeral store's expired records go too: store_refresh) */
  return h5mem_store_err(ms->st, store_refresh(ms->st), pzErr);
}

/* ---- the shared transaction ------------------------------------------------ */

int h5mem_tx_begin(memstore *ms, char **pzErr) {
  if (ms->state != MS_IDLE && ms->state != MS_WANTED) return SQLITE_OK; /* another table of the store began it */
  ms->nsp = 0;
  store_set_held(ms->st, ms->holds - ms->own); /* (an ephemeral store reloads only with none held) */
  int rc = store_begin(ms->st);
  if (rc) return h5mem_store_err(ms->st, rc, pzErr);
  ms->state = MS_OPEN;
  return SQLITE_OK;
}

int h5mem_tx_lock(memstore *ms, char **pzErr) {
  return ms->state == MS_IDLE || ms->state == MS_WANTED ? h5mem_tx_begin(ms, pzErr) : SQLITE_OK;
}

int h5mem_tx_need(memstore *ms, char **pzErr) {
  int rc = h5mem_tx_lock(ms, pzErr);
  return rc == SQLITE_OK ? h5mem_tx_flush(ms, pzErr) : rc;
}

int h5mem_tx_flush(memstore *ms, char **pzErr) {
  if (ms->failed) {
    *pzErr = sqlite3_mprintf("%s", ms->failed);
    return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (!ms->pend) return SQLITE_OK;
  memvt *vt = ms->pend;
  int rc = ms->flush(vt, pzErr); /* (it lets go of ms->pend) */
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM && !ms->failed)
    ms->failed = sqlite3_mprintf("the transaction cannot commit (roll it back): an earlier batch failed: %s",
                                 *pzErr ? *pzErr : "");
  return rc;
}

/* The held-back rows dropped, and a failed batch forgotten: the
** transaction (or the savepoint they came after) is over. */
static void tx_end(memstore *ms) {
  if (ms->pend) ms->discard(ms->pend);
  sqlite3_free(ms->failed);
  ms->failed = NULL;
}

int h5mem_tx_sync(memstore *ms, char **pzErr) {
  int rc = h5mem_tx_flush(ms, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (ms->state != MS_OPEN) return SQLITE_OK; /* none, or written by another table's xSync */
  rc = store_prepare(ms->st);
  if (rc) return h5mem_store_err(ms->st, rc, pzErr);
  ms->state = MS_PREPARED;
  return SQLITE_OK;
}

/* The first table's xCommit commits (and may checkpoint when the log is
** over its limit: that failing leaves the commit made). */
int h5mem_tx_commit(memstore *ms, char **pzErr) {
  tx_end(ms); /* (xSync wrote them, or failed and SQLite rolls back) */
  if (ms->state == MS_IDLE || ms->state == MS_WANTED) {
    ms->state = MS_IDLE;
    return SQLITE_OK;
  }
  int rc = store_commit(ms->st, ms->holds == 0);
  ms->state = MS_IDLE;
  ms->nsp = 0;
  return h5mem_store_err(ms->st, rc, pzErr);
}

void h5mem_tx_rollback(memstore *ms) {
  tx_end(ms);
  if (ms->state == MS_IDLE || ms->state == MS_WANTED) {
    ms->state = MS_IDLE;
    return;
  }
  store_rollback(ms->st);
  ms->state = MS_IDLE;
  ms->nsp = 0;
}

/* Savepoint i opens (SQLite numbers them from 0, innermost highest).  Called
** for every table in the transaction when a savepoint opens, and for a table
** joining the transaction for the innermost open savepoint: that one was
** marked already when it opened (keep that mark, earlier), or it and the
** ones below it opened before the store's transaction began (mark 0, its
** beginning).  Held-back rows are written first: they belong before it. */
int h5mem_tx_savepoint(memstore *ms, int i, char **pzErr) {
  int rc = h5mem_tx_flush(ms, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (ms->state == MS_IDLE || ms->state == MS_WANTED || i < 0 || i < ms->nsp) return SQLITE_OK;
  if (i >= ms->spcap) {
    int cap = i + 16;
    uint64_t *sp = sqlite3_realloc64(ms->sp, (sqlite3_uint64)cap * sizeof *sp);
    if (!sp) return SQLITE_NOMEM;
    ms->sp = sp;
    ms->spcap = cap;
  }
  for (int k = ms->nsp; k < i; k++) ms->sp[k] = 0;
  ms->sp[i] = store_mark(ms->st);
  ms->nsp = i + 1;
  return SQLITE_OK;
}

/* Savepoint i and those inside it close (-1: the savepoint that began the
** transaction, which SQLite does not number).  The end of a statement
** that wrote several rows in a transaction comes here (SQLite's statement
** savepoint): its held-back rows are written. */
int h5mem_tx_release(memstore *ms, int i, char **pzErr) {
  int rc = h5mem_tx_flush(ms, pzErr);
  if (i < ms->nsp) ms->nsp = i < 0 ? 0 : i;
  return rc;
}

/* Back to where savepoint i opened (-1: the beginning); it stays open.
** Rows held back came after it (opening a savepoint writes them): they
** are dropped, and with them a batch that failed since. */
int h5mem_tx_rollback_to(memstore *ms, int i, char **pzErr) {
  (void)pzErr;
  tx_end(ms);
  if (ms->state == MS_IDLE || ms->state == MS_WANTED) return SQLITE_OK;
  store_undo_to(ms->st, i >= 0 && i < ms->nsp ? ms->sp[i] : 0);
  if (i + 1 < ms->nsp) ms->nsp = i < 0 ? 0 : i + 1;
  return SQLITE_OK;
}

int h5mem_tx_dirty(const memstore *ms) { return ms->state >= MS_OPEN && store_mark(ms->st) != 0; }

/* The transaction methods of the tables sharing a store (h5mem_txvt): each
** forwards to the shared transaction, a message as the table's error.
** xBegin takes no lock: the statement's first read or write does
** (MS_WANTED), so that an INSERT embeds its text before it. */
int h5mem_vt_begin(sqlite3_vtab *base) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return t->missing(base);
  if (t->ms->state == MS_IDLE) t->ms->state = MS_WANTED;
  return SQLITE_OK;
}

int h5mem_vt_sync(sqlite3_vtab *base) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return SQLITE_OK; /* (a fleet, made in this transaction: no store of its own) */
  char *msg = NULL;
  return t->msg(base, h5mem_tx_sync(t->ms, &msg), &msg);
}

int h5mem_vt_commit(sqlite3_vtab *base) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return SQLITE_OK; /* (a fleet, made in this transaction: no store of its own) */
  char *msg = NULL;
  return t->msg(base, h5mem_tx_commit(t->ms, &msg), &msg);
}

int h5mem_vt_rollback(sqlite3_vtab *base) {
  if (((h5mem_txvt *)base)->ms) h5mem_tx_rollback(((h5mem_txvt *)base)->ms);
  return SQLITE_OK;
}

int h5mem_vt_savepoint(sqlite3_vtab *base, int i) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return SQLITE_OK; /* (a fleet, made in this transaction: no store of its own) */
  char *msg = NULL;
  return t->msg(base, h5mem_tx_savepoint(t->ms, i, &msg), &msg);
}

int h5mem_vt_release(sqlite3_vtab *base, int i) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return SQLITE_OK; /* (a fleet, made in this transaction: no store of its own) */
  char *msg = NULL;
  return t->msg(base, h5mem_tx_release(t->ms, i, &msg), &msg);
}

int h5mem_vt_rollback_to(sqlite3_vtab *base, int i) {
  h5mem_txvt *t = (h5mem_txvt *)base;
  if (!t->ms) return SQLITE_OK; /* (a fleet, made in this transaction: no store of its own) */
  char *msg = NULL;
  return t->msg(base, h5mem_tx_rollback_to(t->ms, i, &msg), &msg);
}

/* ---- the tables' plans ------------------------------------------------------ */

void h5mem_plan_id(sqlite3_index_info *info, uint64_t count) {
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    if (c->usable && c->op == SQLITE_INDEX_CONSTRAINT_EQ && (c->iColumn == 0 || c->iColumn == -1)) {
      info->aConstraintUsage[k].argvIndex = 1;
      info->aConstraintUsage[k].omit = 1;
      info->idxNum = 1;
      info->estimatedCost = 1;
      info->estimatedRows = 1;
      info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
      return;
    }
  }
  double n = (double)count + 1;
  info->idxNum = 0;
  info->estimatedCost = n * 10;
  info->estimatedRows = (sqlite3_int64)n;
}

/* ---- finding a table by name -------------------------------------------------- */

/* The position of schema[0..n) in SQLite's search order for unqualified
** names (temp 0, main 1, then the attached databases), or -1: none. */
static int schema_rank(sqlite3 *db, const char *schema, size_t n) {
  if (n == 4 && !sqlite3_strnicmp(schema, "temp", 4)) return 0;
  if (n == 4 && !sqlite3_strnicmp(schema, "main", 4)) return 1;
  sqlite3_stmt *st = NULL;
  int rank = -1;
  if (sqlite3_prepare_v2(db, "SELECT seq FROM pragma_database_list WHERE name = ?1 COLLATE NOCASE", -1, &st,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_text64(st, 1, schema, n, SQLITE_STATIC, SQLITE_UTF8);
    if (sqlite3_step(st) == SQLITE_ROW) rank = sqlite3_column_int(st, 0) > 1 ? sqlite3_column_int(st, 0) : 1;
  }
  sqlite3_finalize(st);
  return rank;
}

/* Whether a schema before rank in SQLite's search order has a table
** called table. */
static int shadowed(sqlite3 *db, const char *table, int rank) {
  sqlite3_stmt *st = NULL;
  int yes = 0;
  if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_database_list", -1, &st, NULL) != SQLITE_OK) return 0;
  while (!yes && sqlite3_step(st) == SQLITE_ROW) {
    const char *schema = (const char *)sqlite3_column_text(st, 0);
    if (!schema || schema_rank(db, schema, strlen(schema)) >= rank) continue;
    char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE type = 'table' AND name = ?1 "
                                "COLLATE NOCASE", schema);
    sqlite3_stmt *t = NULL;
    if (sql && sqlite3_prepare_v2(db, sql, -1, &t, NULL) == SQLITE_OK) {
      sqlite3_bind_text(t, 1, table, -1, SQLITE_STATIC);
      yes = sqlite3_step(t) == SQLITE_ROW;
    }
    sqlite3_finalize(t);
    sqlite3_free(sql);
  }
  sqlite3_finalize(st);
  return yes;
}

/* Whether p is its store's table now: a connection of the table under an
** old name (renamed by another connection, or dropped) that statements of
** that name keep alive is not found by the old name. */
static int reg_current(const memvt *p) {
  const memstore *ms = p->tx.ms;
  if (!ms) return 1; /* (a missing store: every use says so) */
  size_t sl = strlen(p->schema);
  return ms->key && !sqlite3_strnicmp(ms->key, p->schema, (int)sl) && ms->key[sl] == '.' &&
         !sqlite3_stricmp(ms->key + sl + 1, p->name);
}

/* name: "table" or "schema.table".  The table of that name in that schema
** (never one of another schema); unqualified, the one SQLite would take
** (temp's, main's, then the attached databases' in order). */
static memvt *reg_find(registry *reg, sqlite3 *db, const char *name) {
  const char *dot = strchr(name, '.');
  const char *table = dot ? dot + 1 : name;
  size_t sl = dot ? (size_t)(dot - name) : 0;
  memvt *best = NULL;
  int best_rank = 0;
  for (memvt *p = reg->first; p; p = p->next) {
    if (sqlite3_stricmp(p->name, table) || !reg_current(p)) continue;
    if (dot) {
      if (strlen(p->schema) == sl && !sqlite3_strnicmp(p->schema, name, (int)sl)) return p;
      continue;
    }
    int rank = schema_rank(db, p->schema, strlen(p->schema));
    if (!best || (rank >= 0 && rank < best_rank)) {
      best = p;
      best_rank = rank < 0 ? 1 << 30 : rank;
    }
  }
  /* a table of that name in a schema SQLite looks in first (not connected
  ** here yet, or not an h5mem table) is the one the name means */
  if (best && best_rank > 0 && shadowed(db, table, best_rank)) return NULL;
  return best;
}

/* Why name ("schema.table") cannot name a table: its schema is not a
** database of this connection (sqlite3_malloc'd), else NULL. */
static char *schema_missing(sqlite3 *db, const char *name) {
  const char *dot = strchr(name, '.');
  if (!dot || schema_rank(db, name, (size_t)(dot - name)) >= 0) return NULL;
  return sqlite3_mprintf("'%s': there is no database '%.*s' on this connection (main, temp or an "
                         "attached one)", name, (int)(dot - name), name);
}

memvt *h5mem_table_any(registry *reg, sqlite3 *db, const char *name, char **pzErr, int *prc) {
  *prc = SQLITE_ERROR;
  memvt *vt = reg_find(reg, db, name);
  if (vt) return vt;
  if ((*pzErr = schema_missing(db, name)) != NULL) return NULL;
  /* not connected yet on this connection: a statement naming it connects it */
  const char *dot = strchr(name, '.'); /* names quoted: a name is never SQL */
  char *schema = dot ? sqlite3_mprintf("%.*s", (int)(dot - name), name) : NULL;
  char *sql = dot ? (schema ? sqlite3_mprintf("SELECT 1 FROM \"%w\".\"%w\" LIMIT 0", schema, dot + 1) : NULL)
                  : sqlite3_mprintf("SELECT 1 FROM \"%w\" LIMIT 0", name);
  sqlite3_free(schema);
  sqlite3_stmt *st = NULL;
  int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  sqlite3_finalize(st);
  vt = reg_find(reg, db, name); /* (connected, though the statement failed, when its store is missing) */
  if (vt && vt->missing) return vt;
  if (rc != SQLITE_DONE) vt = NULL;
  if (!vt && rc != SQLITE_DONE && rc != SQLITE_ROW) *prc = rc;
  if (!vt)
    *pzErr = sqlite3_mprintf("'%s' is not an h5mem table on this connection%s%s", name,
                             rc != SQLITE_DONE ? ": " : "", rc != SQLITE_DONE ? sqlite3_errmsg(db) : "");
  return vt;
}

memvt *h5mem_table_with_embedder(registry *reg, char **pzErr) {
  memvt *one = NULL;
  int n = 0;
  for (memvt *p = reg->first; p; p = p->next)
    if (p->espec && !p->missing && reg_current(p) && (!one || strcmp(one->espec, p->espec))) {
      one = p;
      n++;
    }
  if (n == 1) return one;
  *pzErr = sqlite3_mprintf("%s", n ? "h5mem tables with different embedders are open: name the embedder or the table"
                                   : "no h5mem table with an embedder is open on this connection: name the "
                                     "embedder (e.g. 'static:/path/model.h5')");
  return NULL;
}

/* (a function reading the store sees the rows a table held back) */
memvt *h5mem_table(registry *reg, sqlite3 *db, const char *name, char **pzErr, int *prc) {
  memvt *vt = h5mem_table_any(reg, db, name, pzErr, prc);
  if (!vt || h5mem_table_missing(vt, pzErr) != SQLITE_OK) return NULL;
  int rc = h5mem_tx_flush(vt->tx.ms, pzErr);
  if (rc != SQLITE_OK) *prc = rc;
  return rc == SQLITE_OK ? vt : NULL;
}

store *h5mem_table_store(memvt *vt) { return vt->st; }
memstore *h5mem_table_ms(memvt *vt) { return vt->tx.ms; }
const char *h5mem_table_schema(const memvt *vt) { return vt->schema; }
void h5mem_table_hold(memvt *vt, int delta) { vt->tx.ms->holds += delta; }
const char *h5mem_table_name(const memvt *vt) { return vt->name; }

memvt *h5mem_fn_table(sqlite3_context *ctx, sqlite3_value *arg, const char *who) {
  if (!ext_direct_call(ctx, who)) return NULL;
  registry *reg = sqlite3_user_data(ctx);
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  const char *name = (const char *)sqlite3_value_text(arg);
  memvt *vt = name ? reg_find(reg, db, name) : NULL;
  char *m = NULL;
  if (vt && vt->missing) {
    h5mem_table_missing(vt, &m);
  } else if (!vt) {
    char *why = schema_missing(db, name ? name : "");
    m = why ? sqlite3_mprintf("%s: %s", who, why)
            : sqlite3_mprintf("%s: no h5mem table '%s' is open on this connection "
                              "(query it once, or check the name)", who, name ? name : "");
    sqlite3_free(why);
  } else {
    int rc = h5mem_tx_flush(vt->tx.ms, &m); /* (what the table held back, written) */
    if (rc == SQLITE_OK) return vt;
    ext_result_rc(ctx, rc, m);
    sqlite3_free(m);
    return NULL;
  }
  ext_result_rc(ctx, SQLITE_ERROR, m);
  sqlite3_free(m);
  return NULL;
}

const h5mem_policy *h5mem_table_policy(const memvt *vt) { return &vt->policy; }
sqlite3 *h5mem_table_db(const memvt *vt) { return vt->db; }

h5mem_life_state *h5mem_table_life(memvt *vt) { return &vt->life; }
