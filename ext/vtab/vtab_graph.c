/*
** ext/vtab/vtab_graph.c - the knowledge graph's tables, the companions of
** an h5mem table `mem`, made with it by CREATE VIRTUAL TABLE mem USING
** h5mem(...) (vtab_h5mem.c) or by hand:
**
**   mem_entities(id, name, type, aliases, meta)          USING h5mem_entities(mem)
**   mem_relations(id, src, dst, type, weight, ts, meta)  USING h5mem_relations(mem)
**   mem_mentions(id, memory_id, entity_id)               USING h5mem_mentions(mem)
**
** Each shows one of the store's graph tables (lib/store, "the knowledge
** graph") through mem's store handle, and writes in mem's store
** transaction (vtab_int.h): BEGIN; INSERT INTO mem ...; INSERT INTO
** mem_entities ...; COMMIT is one store transaction, one frame of the log.
** INSERT, UPDATE (a delete and a put of the same id, as the h5mem table
** does), DELETE, lookups by id and full scans.  SQLITE_VTAB_DIRECTONLY
** (they read and write the store's files: docs/SQL.md, "Trust").
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ext_err.h"
#include "util/err.h"
#include "util/json.h"
#include "vtab_int.h"

/* ---- the tables ----------------------------------------------------------- */

/* What a column holds in a store_grec (store.h). */
enum { F_ID, F_NAME, F_TYPE, F_ALIASES, F_META, F_SRC, F_DST, F_WEIGHT, F_TS, F_MEMORY, F_ENTITY };

typedef struct gtable {
  const char *schema;
  int ncol;
  int field[8];
  const char *col[8];
} gtable;

/* by store table: STORE_G_ENTITY, STORE_G_RELATION, STORE_G_MENTION */
static const gtable gtables[STORE_G_NTABLES] = {
    {"CREATE TABLE x(id INTEGER, name TEXT, type TEXT, aliases TEXT, meta TEXT)", 5,
     {F_ID, F_NAME, F_TYPE, F_ALIASES, F_META}, {"id", "name", "type", "aliases", "meta"}},
    {"CREATE TABLE x(id INTEGER, src INTEGER, dst INTEGER, type TEXT, weight REAL, ts INTEGER, "
     "meta TEXT)",
     7, {F_ID, F_SRC, F_DST, F_TYPE, F_WEIGHT, F_TS, F_META},
     {"id", "src", "dst", "type", "weight", "ts", "meta"}},
    {"CREATE TABLE x(id INTEGER, memory_id INTEGER, entity_id INTEGER)", 3,
     {F_ID, F_MEMORY, F_ENTITY}, {"id", "memory_id", "entity_id"}},
};

/* The string slot of a store_grec a field uses (-1: none). */
static int str_slot(int f) {
  return f == F_NAME ? 0 : f == F_TYPE ? 1 : f == F_ALIASES ? 2 : f == F_META ? 3 : -1;
}

/* One companion table.  tx.ms is a reference to the h5mem table's store,
** taken at connect, let go at disconnect. */
typedef struct gvt {
  h5mem_txvt tx; /* its sqlite3_vtab and the shared store */
  sqlite3 *db;
  int t;        /* STORE_G_* */
  char *name;   /* this table */
  char *target; /* the h5mem table */
} gvt;

typedef struct gcur {
  sqlite3_vtab_cursor base;
  uint64_t pos, end;
  int one; /* a lookup by id: pos is the record, or end */
} gcur;

static int g_err(gvt *vt, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int g_err(gvt *vt, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc = ext_vtab_verr(&vt->tx.base, rc, vt->name, fmt, ap);
  va_end(ap);
  return rc;
}

/* A message from the shared store's functions (taken) as the table's error
** (ext_vtab_msg). */
static int g_msg(gvt *vt, int rc, char **msg) { return ext_vtab_msg(&vt->tx.base, rc, vt->name, msg); }

/* The store's error rc as the table's (h5mem_store_err). */
static int g_store_err(gvt *vt, int rc) {
  char *msg = NULL;
  return g_msg(vt, h5mem_store_err(h5mem_store_handle(vt->tx.ms), rc, &msg), &msg);
}

/* The h5mem table this one belongs to must still be there, and its store
** (vt->tx.ms is NULL when it does not exist: g_connect). */
static int g_check(gvt *vt) {
  if (!vt->tx.ms)
    return g_err(vt, SQLITE_ERROR, "the store of the h5mem table %s does not exist (opening a database "
                 "never creates a store)", vt->target);
  if (!h5mem_store_orphaned(vt->tx.ms)) return SQLITE_OK;
  return g_err(vt, SQLITE_ERROR, "the h5mem table %s was dropped; drop this table too", vt->target);
}

static int g_disconnect(sqlite3_vtab *base) {
  gvt *vt = (gvt *)base;
  h5mem_store_release(vt->tx.ms);
  sqlite3_free(vt->name);
  sqlite3_free(vt->target);
  sqlite3_free(vt->tx.base.zErrMsg);
  sqlite3_free(vt);
  return SQLITE_OK;
}

static int g_tx_msg(sqlite3_vtab *base, int rc, char **msg);
static int g_tx_missing(sqlite3_vtab *base);

/* The h5mem table a companion called <t>_<its kind> (mem_entities) in
** schema belongs to when that is not target, the table its CREATE
** statement names: t, when t is an h5mem table.  ALTER TABLE mem RENAME TO
** m2 renames mem_entities to m2_entities (vtab_h5mem.c), whose statement
** still says h5mem_entities(mem).  NULL: none. */
static memvt *renamed_owner(registry *reg, sqlite3 *db, const char *schema, const char *name, int t,
                            const char *target) {
  const char *kind = h5mem_companion[t];
  size_t n = strlen(name), kl = strlen(kind);
  if (n <= kl + 1 || name[n - kl - 1] != '_' || sqlite3_stricmp(name + n - kl, kind)) return NULL;
  int tl = (int)(n - kl - 1);
  if ((int)strlen(target) == tl && !sqlite3_strnicmp(target, name, tl)) return NULL; /* (its own target) */
  char *qualified = sqlite3_mprintf("%s.%.*s", schema, tl, name);
  char *err = NULL;
  int rc = SQLITE_ERROR;
  memvt *mt = qualified ? h5mem_table_any(reg, db, qualified, &err, &rc) : NULL;
  sqlite3_free(qualified);
  sqlite3_free(err);
  return mt;
}

/* USING h5mem_entities(mem): the h5mem table, by name (quoted or not, or
** as store=mem), in the same schema; a companion renamed with its table
** (renamed_owner), that table. */
static int g_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                     char **pzErr, int t) {
  registry *reg = aux;
  const char *module = h5mem_companion_module[t];
  if (argc != 4) {
    *pzErr = sqlite3_mprintf("%s: expected one argument, the h5mem table: USING %s(mem)", module, module);
    return SQLITE_ERROR;
  }
  const char *k;
  size_t kl;
  char *target;
  if (ext_vtab_arg(argv[3], &k, &kl, &target) != SQLITE_OK) return SQLITE_NOMEM;
  if ((kl && !ext_key_is(k, kl, "store")) || !*target) {
    *pzErr = sqlite3_mprintf("%s: expected the h5mem table's name, e.g. USING %s(mem), not %s", module,
                             module, argv[3]);
    sqlite3_free(target);
    return SQLITE_ERROR;
  }
  gvt *vt = sqlite3_malloc(sizeof *vt);
  char *qualified = sqlite3_mprintf("%s.%s", argv[1], target);
  if (!vt || !qualified) {
    sqlite3_free(vt);
    sqlite3_free(qualified);
    sqlite3_free(target);
    return SQLITE_NOMEM;
  }
  memset(vt, 0, sizeof *vt);
  vt->tx.msg = g_tx_msg;
  vt->tx.missing = g_tx_missing;
  vt->db = db;
  vt->t = t;
  vt->target = target;
  vt->name = sqlite3_mprintf("%s", argv[2]);
  char *err = NULL;
  /* (also when its store is missing, so that DROP TABLE works: g_check) */
  int trc = SQLITE_ERROR;
  memvt *mt = vt->name ? renamed_owner(reg, db, argv[1], argv[2], t, target) : NULL;
  if (mt) {
    char *owner = sqlite3_mprintf("%s", h5mem_table_name(mt)); /* (named in messages: g_check) */
    if (owner) {
      sqlite3_free(vt->target);
      vt->target = owner;
    }
  } else if (vt->name) {
    mt = h5mem_table_any(reg, db, qualified, &err, &trc);
  }
  sqlite3_free(qualified);
  int rc = SQLITE_OK;
  if (!vt->name) {
    rc = SQLITE_NOMEM;
  } else if (!mt) {
    *pzErr = sqlite3_mprintf("%s: %s", argv[2], err ? err : "no memory");
    rc = err ? trc : SQLITE_NOMEM;
  } else {
    vt->tx.ms = h5mem_table_share(mt);
    rc = sqlite3_declare_vtab(db, gtables[t].schema);
    if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("%s: cannot declare columns: %s", argv[2], sqlite3_errmsg(db));
  }
  sqlite3_free(err);
  if (rc != SQLITE_OK) {
    g_disconnect(&vt->tx.base);
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
  /* it reads and writes a store's files: never from a trigger or view (docs/SQL.md, "Trust") */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *out = &vt->tx.base;
  return SQLITE_OK;
}

#define CONNECT(fn, t)                                                                            \
  static int fn(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,    \
                char **pzErr) {                                                                   \
    return g_connect(db, aux, argc, argv, out, pzErr, t);                                         \
  }
CONNECT(ent_connect, STORE_G_ENTITY)
CONNECT(rel_connect, STORE_G_RELATION)
CONNECT(men_connect, STORE_G_MENTION)
#undef CONNECT

/* DROP TABLE: never in a transaction that changed the store and has not
** committed (as DROP TABLE mem). */
static int g_destroy(sqlite3_vtab *base) {
  gvt *vt = (gvt *)base;
  if (vt->tx.ms && h5mem_tx_dirty(vt->tx.ms))
    return g_err(vt, SQLITE_LOCKED, "cannot drop %s while this transaction has uncommitted changes "
                 "to its store; COMMIT or ROLLBACK first", vt->name);
  return g_disconnect(base);
}

/* ---- reading ----------------------------------------------------------------- */

/* Plan 1: id = ? (or rowid); plan 0: every record. */
static int g_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  gvt *vt = (gvt *)base;
  if (!vt->tx.ms) return g_check(vt); /* (every query plans first) */
  h5mem_plan_id(info, store_g_count(h5mem_store_handle(vt->tx.ms), vt->t));
  return SQLITE_OK;
}

static int g_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  gvt *vt = (gvt *)base;
  gcur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  h5mem_store_hold(vt->tx.ms, +1);
  *out = &c->base;
  return SQLITE_OK;
}

static int g_close(sqlite3_vtab_cursor *cur) {
  h5mem_store_hold(((gvt *)cur->pVtab)->tx.ms, -1);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int g_live(gvt *vt, uint64_t pos) {
  store_grec r;
  return store_g_get(h5mem_store_handle(vt->tx.ms), vt->t, pos, &r) == STORE_OK;
}

static void g_skip_dead(gcur *c, gvt *vt) {
  while (c->pos < c->end && !g_live(vt, c->pos)) c->pos++;
}

static int g_filter(sqlite3_vtab_cursor *cur, int plan, const char *idxStr, int argc,
                    sqlite3_value **argv) {
  (void)idxStr;
  gcur *c = (gcur *)cur;
  gvt *vt = (gvt *)cur->pVtab;
  int rc = g_check(vt);
  if (rc != SQLITE_OK) return rc;
  store *st = h5mem_store_handle(vt->tx.ms);
  char *msg = NULL; /* (the cursor holds the store: refreshed unless another scan does too) */
  if ((rc = h5mem_store_refresh(vt->tx.ms, 1, &msg)) != SQLITE_OK) return g_msg(vt, rc, &msg);
  c->end = store_g_npos(st, vt->t); /* records added during the scan are not visited */
  c->one = plan == 1 && argc == 1;
  if (c->one) {
    int64_t id;
    int given;
    c->pos = c->end;
    if (h5mem_value_id(argv[0], "id", &id, &given, &msg) != SQLITE_OK || !given) {
      sqlite3_free(msg); /* matches no integer id */
      return SQLITE_OK;
    }
    uint64_t pos;
    if (store_g_find(st, vt->t, id, &pos) == STORE_OK) c->pos = pos;
    return SQLITE_OK;
  }
  c->pos = 0;
  g_skip_dead(c, vt);
  return SQLITE_OK;
}

static int g_next(sqlite3_vtab_cursor *cur) {
  gcur *c = (gcur *)cur;
  if (c->one) {
    c->pos = c->end;
    return SQLITE_OK;
  }
  c->pos++;
  g_skip_dead(c, (gvt *)cur->pVtab);
  return SQLITE_OK;
}

static int g_eof(sqlite3_vtab_cursor *cur) {
  gcur *c = (gcur *)cur;
  /* a record deleted by this very statement ends a lookup too */
  return c->pos >= c->end || !g_live((gvt *)cur->pVtab, c->pos);
}

static int g_get(gcur *c, store_grec *r) {
  gvt *vt = (gvt *)c->base.pVtab;
  int rc = store_g_get(h5mem_store_handle(vt->tx.ms), vt->t, c->pos, r);
  return rc ? g_store_err(vt, rc) : SQLITE_OK;
}

static int g_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  store_grec r;
  int rc = g_get((gcur *)cur, &r);
  if (rc == SQLITE_OK) *rowid = r.id;
  return rc;
}

static int g_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  gvt *vt = (gvt *)cur->pVtab;
  store_grec r;
  int rc = g_get((gcur *)cur, &r);
  if (rc != SQLITE_OK) { /* the read's code, not SQLITE_ERROR: SQLITE_CORRUPT for a damaged store */
    ext_result_rc(ctx, rc, vt->tx.base.zErrMsg ? vt->tx.base.zErrMsg : "read failed");
    return rc;
  }
  int f = col >= 0 && col < gtables[vt->t].ncol ? gtables[vt->t].field[col] : -1;
  int k = str_slot(f);
  if (k >= 0) {
    h5mem_result_text(ctx, r.s[k], r.n[k]);
    return SQLITE_OK;
  }
  switch (f) {
  case F_ID: sqlite3_result_int64(ctx, r.id); break;
  case F_SRC:
  case F_MEMORY: sqlite3_result_int64(ctx, r.a); break;
  case F_DST:
  case F_ENTITY: sqlite3_result_int64(ctx, r.b); break;
  case F_WEIGHT: sqlite3_result_double(ctx, r.weight); break;
  case F_TS: sqlite3_result_int64(ctx, r.ts); break;
  default: sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

/* ---- writing ----------------------------------------------------------------- */

static int alias_ok(void *ctx, const char *s, size_t n) {
  (void)ctx;
  (void)s;
  return n == 0; /* an empty alias: refused */
}

/* A JSON-text column, checked; aliases must be an array of non-empty
** strings. */
static int json_col(gvt *vt, int f, const char *col, const char *s, size_t n) {
  if (!s) return SQLITE_OK;
  char err[300];
  if (f == F_ALIASES) {
    int rc = util_json_strings(s, n, alias_ok, NULL, err, sizeof err);
    if (rc == UTIL_ENOMEM) return SQLITE_NOMEM;
    if (rc == 1) return g_err(vt, SQLITE_MISMATCH, "aliases: an empty alias");
    if (rc) return g_err(vt, SQLITE_MISMATCH, "aliases: expected a JSON array of names: %s", err);
  } else if (util_json_valid(s, n, err, sizeof err)) {
    return g_err(vt, SQLITE_MISMATCH, "%s: malformed JSON: %s", col, err);
  }
  return SQLITE_OK;
}

/* An id column that must name a live record of the store (STORE_G_ENTITY,
** or -1 for a memory). */
static int ref_col(gvt *vt, sqlite3_value *v, const char *col, int table, int64_t *out) {
  int given;
  char *msg = NULL;
  int rc = h5mem_value_id(v, col, out, &given, &msg);
  if (rc != SQLITE_OK) return g_msg(vt, rc, &msg);
  if (!given)
    return g_err(vt, SQLITE_CONSTRAINT, "NOT NULL constraint failed: %s.%s", vt->name, col);
  store *st = h5mem_store_handle(vt->tx.ms);
  uint64_t pos;
  store_grec r;
  int found = table < 0 ? store_find(st, *out, &pos) == STORE_OK
                        : store_g_find(st, table, *out, &pos) == STORE_OK &&
                              store_g_get(st, table, pos, &r) == STORE_OK;
  if (!found)
    return g_err(vt, SQLITE_CONSTRAINT, "%s: no %s with id %lld in %s", col,
                 table < 0 ? "memory" : "entity", (long long)*out, vt->target);
  return SQLITE_OK;
}

/* A record from the INSERT/UPDATE arguments (col[i] is column i). */
static int record_from(gvt *vt, sqlite3_value **col, int64_t id, store_grec *r) {
  const gtable *g = &gtables[vt->t];
  memset(r, 0, sizeof *r);
  r->id = id;
  r->weight = 1.0;
  int rc = SQLITE_OK;
  for (int i = 1; i < g->ncol && rc == SQLITE_OK; i++) {
    int f = g->field[i];
    sqlite3_value *v = col[i];
    char *msg = NULL;
    int k = str_slot(f);
    if (k >= 0) {
      rc = h5mem_value_text(v, &r->s[k], &r->n[k]);
      if (rc == SQLITE_OK && f == F_NAME && !r->s[k]) /* ('' is a name: the MCP memory server has it) */
        rc = g_err(vt, SQLITE_CONSTRAINT, "NOT NULL constraint failed: %s.name (an entity needs a name)",
                   vt->name);
      if (rc == SQLITE_OK && (f == F_ALIASES || f == F_META)) rc = json_col(vt, f, g->col[i], r->s[k], r->n[k]);
      continue;
    }
    switch (f) {
    case F_SRC: rc = ref_col(vt, v, "src", STORE_G_ENTITY, &r->a); break;
    case F_DST: rc = ref_col(vt, v, "dst", STORE_G_ENTITY, &r->b); break;
    case F_MEMORY: rc = ref_col(vt, v, "memory_id", -1, &r->a); break;
    case F_ENTITY: rc = ref_col(vt, v, "entity_id", STORE_G_ENTITY, &r->b); break;
    case F_WEIGHT:
      if (sqlite3_value_type(v) != SQLITE_NULL) {
        int t = sqlite3_value_numeric_type(v);
        if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
          rc = g_err(vt, SQLITE_MISMATCH, "weight: expected a number");
        else if (!isfinite(r->weight = sqlite3_value_double(v)))
          rc = g_err(vt, SQLITE_MISMATCH, "weight: not a finite number");
      }
      break;
    case F_TS:
      if (sqlite3_value_type(v) == SQLITE_NULL) r->ts = (int64_t)time(NULL);
      else rc = g_msg(vt, h5mem_value_time(v, "ts", &r->ts, &msg), &msg);
      break;
    }
  }
  return rc;
}

/* The mention (other than skip) of the same memory and entity, if any. */
static int mention_of(store *st, int64_t memory, int64_t entity, int64_t skip, int64_t *id) {
  uint64_t n = store_g_npos(st, STORE_G_MENTION);
  for (uint64_t p = 0; p < n; p++) {
    store_grec r;
    if (store_g_get(st, STORE_G_MENTION, p, &r) == STORE_OK && r.a == memory && r.b == entity &&
        r.id != skip) {
      *id = r.id;
      return 1;
    }
  }
  return 0;
}

/* Put r; a mention whose (memory, entity) pair is taken is a UNIQUE
** error, or replaces the other one under OR REPLACE. */
static int g_put(gvt *vt, const store_grec *r) {
  store *st = h5mem_store_handle(vt->tx.ms);
  int rc = store_g_put(st, vt->t, r);
  if (rc == STORE_EEXISTS && vt->t == STORE_G_MENTION) {
    int64_t other = 0;
    mention_of(st, r->a, r->b, r->id, &other);
    if (sqlite3_vtab_on_conflict(vt->db) == SQLITE_REPLACE && other) {
      if ((rc = store_g_delete(st, vt->t, other)) == STORE_OK) rc = store_g_put(st, vt->t, r);
    } else {
      return g_err(vt, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.memory_id, %s.entity_id "
                   "(memory %lld already mentions entity %lld: id %lld)", vt->name, vt->name,
                   (long long)r->a, (long long)r->b, (long long)other);
    }
  }
  return rc ? g_store_err(vt, rc) : SQLITE_OK;
}

static int g_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  gvt *vt = (gvt *)base;
  int rc = g_check(vt);
  if (rc != SQLITE_OK) return rc;
  char *msg = NULL;
  if ((rc = h5mem_tx_need(vt->tx.ms, &msg)) != SQLITE_OK) return g_msg(vt, rc, &msg);
  store *st = h5mem_store_handle(vt->tx.ms);
  if (argc == 1) { /* DELETE */
    int src = store_g_delete(st, vt->t, sqlite3_value_int64(argv[0]));
    return src == STORE_ENOTFOUND ? SQLITE_OK : src ? g_store_err(vt, src) : SQLITE_OK;
  }
  sqlite3_value **col = argv + 2;
  /* the new id: the rowid, else the id column, else the next one */
  int64_t id = 0;
  int given = 0;
  if ((rc = h5mem_value_id(argv[1], "id", &id, &given, &msg)) != SQLITE_OK) return g_msg(vt, rc, &msg);
  if (!given && (rc = h5mem_value_id(col[0], "id", &id, &given, &msg)) != SQLITE_OK)
    return g_msg(vt, rc, &msg);
  int update = sqlite3_value_type(argv[0]) != SQLITE_NULL;
  int64_t old = update ? sqlite3_value_int64(argv[0]) : 0;
  if (update) {
    int64_t cid;
    int cg;
    if ((rc = h5mem_value_id(col[0], "id", &cid, &cg, &msg)) != SQLITE_OK) return g_msg(vt, rc, &msg);
    if (cg) id = cid; /* SET id = ... */
    else if (!given) id = old;
  } else if (!given) {
    if (store_g_max_id(st, vt->t) == INT64_MAX) return g_err(vt, SQLITE_FULL, "no ids left");
    id = store_g_max_id(st, vt->t) + 1;
  }
  if (id <= 0) return g_err(vt, SQLITE_MISMATCH, "id: ids are positive, not %lld", (long long)id);
  store_grec r;
  if ((rc = record_from(vt, col, id, &r)) != SQLITE_OK) return rc;
  uint64_t pos;
  int taken = (!update || id != old) && store_g_find(st, vt->t, id, &pos) == STORE_OK;
  if (taken && sqlite3_vtab_on_conflict(vt->db) != SQLITE_REPLACE)
    return g_err(vt, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.id (id %lld exists)", vt->name,
                 (long long)id);
  /* the deletes and the put succeed or fail together (an UPDATE whose new
     record is refused keeps its old one) */
  uint64_t mark = store_mark(st);
  int src = taken ? store_g_delete(st, vt->t, id) : STORE_OK;
  if (!src && update && store_g_find(st, vt->t, old, &pos) == STORE_OK) src = store_g_delete(st, vt->t, old);
  rc = src ? g_store_err(vt, src) : g_put(vt, &r);
  if (rc != SQLITE_OK) {
    store_undo_to(st, mark);
    return rc;
  }
  *rowid = id;
  return SQLITE_OK;
}

/* ---- transactions: the h5mem table's (vtab_int.h) ------------------------------- */

/* The shared store's transaction methods (h5mem_vt_*) report through these. */
static int g_tx_msg(sqlite3_vtab *base, int rc, char **msg) { return g_msg((gvt *)base, rc, msg); }
static int g_tx_missing(sqlite3_vtab *base) { return g_check((gvt *)base); }

static int g_rename(sqlite3_vtab *base, const char *name) {
  gvt *vt = (gvt *)base;
  char *n = sqlite3_mprintf("%s", name);
  if (!n) return SQLITE_NOMEM;
  sqlite3_free(vt->name);
  vt->name = n;
  return SQLITE_OK;
}

#define MODULE(var, connect)                                                                       \
  static sqlite3_module var = {                                                                    \
      .iVersion = 2, .xCreate = connect, .xConnect = connect, .xBestIndex = g_best_index,          \
      .xDisconnect = g_disconnect, .xDestroy = g_destroy, .xOpen = g_open, .xClose = g_close,      \
      .xFilter = g_filter, .xNext = g_next, .xEof = g_eof, .xColumn = g_column,                    \
      .xRowid = g_rowid, .xUpdate = g_update, .xRename = g_rename,                                 \
      /* the transaction: the h5mem table's (vtab_int.h) */                                       \
      .xBegin = h5mem_vt_begin, .xSync = h5mem_vt_sync, .xCommit = h5mem_vt_commit,                \
      .xRollback = h5mem_vt_rollback, .xSavepoint = h5mem_vt_savepoint,                            \
      .xRelease = h5mem_vt_release, .xRollbackTo = h5mem_vt_rollback_to,                           \
  };
MODULE(ent_module, ent_connect)
MODULE(rel_module, rel_connect)
MODULE(men_module, men_connect)
#undef MODULE

int ext_vtab_graph_register(sqlite3 *db, registry *reg) {
  sqlite3_module *mods[3] = {&ent_module, &rel_module, &men_module};
  int rc = SQLITE_OK;
  for (int k = 0; k < 3 && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_module(db, reg, h5mem_companion_module[k], mods[k]);
  }
  return rc;
}
