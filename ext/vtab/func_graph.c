/*
** ext/vtab/func_graph.c - the knowledge graph's functions, over the
** entities and relations of an h5mem table's store (lib/graph on the
** store's cached adjacency, store_g_adj):
**
**   kg_bfs(store, start, max_depth [, options])  id, name, depth, path, relation, relation_id
**   kg_activate(store, seeds [, options])         id, name, activation
**   kg_resolve(store, name [, max_edits])         id, name, match, edits
**   kg_entity(store, name [, type])               the entity's id; made when no name matches
**
** (kg_import_jsonl and kg_export_jsonl, the MCP memory server's JSONL in
** and out: func_graph_jsonl.c, on what vtab_int.h shares of this file.)
** The table-valued ones compute their rows whole in xFilter (copies: no
** position of the store is held afterwards).  The writers go through the
** companion tables (INSERT INTO mem_entities ...), so that what they write
** is in the SQLite transaction like any other statement's changes.  All
** read or write a store: SQLITE_DIRECTONLY / SQLITE_VTAB_DIRECTONLY, never
** from a trigger or view (docs/SQL.md, "Trust").
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "../ext_err.h"
#include "util/err.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "vtab_int.h"

/* ---- the store and its entities' names ---------------------------------------- */

/* The store of the h5mem table named by v, as of its last commit (a
** reader's view refreshed unless a query holds it). */
int graph_store(registry *reg, sqlite3 *db, sqlite3_value *v, memvt **out, char **err) {
  const char *name = v ? (const char *)sqlite3_value_text(v) : NULL;
  if (!name) {
    *err = sqlite3_mprintf("the first argument names an h5mem table");
    return SQLITE_ERROR;
  }
  int trc;
  memvt *mt = h5mem_table(reg, db, name, err, &trc);
  if (!mt) return trc;
  memstore *ms = h5mem_table_ms(mt);
  if (h5mem_store_orphaned(ms)) {
    *err = sqlite3_mprintf("the h5mem table %s was dropped", name);
    return SQLITE_ERROR;
  }
  int rc = h5mem_store_refresh(ms, 0, err);
  if (rc != SQLITE_OK) return rc;
  *out = mt;
  return SQLITE_OK;
}

/* An entity's record by id (0: found). */
int graph_entity_get(store *st, int64_t id, store_grec *r) {
  uint64_t pos;
  if (store_g_find(st, STORE_G_ENTITY, id, &pos) != STORE_OK) return -1;
  return store_g_get(st, STORE_G_ENTITY, pos, r) == STORE_OK ? 0 : -1;
}

/* Every name and alias of the live entities, for kg_resolve; kept with the
** store until the graph changes (store_g_version).  Strings are copies:
** the store's move at checkpoints. */
typedef struct gnames {
  uint64_t version;
  kg_name *v;
  size_t n;
  char *text;
} gnames;

static void gnames_free(void *p) {
  gnames *g = p;
  if (!g) return;
  sqlite3_free(g->v);
  free(g->text);
  sqlite3_free(g);
}

typedef struct nbuild {
  strbuf sb;
  kg_name *v; /* s holds the offset in sb until the end */
  size_t n, cap;
  int64_t id;
} nbuild;

static int nb_add(nbuild *b, const char *s, size_t n, int alias) {
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    kg_name *v = sqlite3_realloc64(b->v, cap * sizeof *v);
    if (!v) return -2;
    b->v = v;
    b->cap = cap;
  }
  b->v[b->n].id = b->id;
  b->v[b->n].s = (const char *)(uintptr_t)b->sb.len;
  b->v[b->n].n = n;
  b->v[b->n].alias = alias;
  b->n++;
  strbuf_append(&b->sb, s, n);
  strbuf_putc(&b->sb, 0);
  return strbuf_failed(&b->sb) ? -2 : 0;
}

static int nb_alias(void *ctx, const char *s, size_t n) { return nb_add(ctx, s, n, 1); }

static int gnames_get(memstore *ms, const gnames **out) {
  store *st = h5mem_store_handle(ms);
  gnames *g = h5mem_store_cache(ms);
  if (g && g->version == store_g_version(st)) {
    *out = g;
    return SQLITE_OK;
  }
  nbuild b;
  memset(&b, 0, sizeof b);
  uint64_t npos = store_g_npos(st, STORE_G_ENTITY);
  int rc = 0;
  for (uint64_t p = 0; p < npos && rc == 0; p++) {
    store_grec r;
    if (store_g_get(st, STORE_G_ENTITY, p, &r) != STORE_OK || !r.s[0]) continue;
    b.id = r.id;
    rc = nb_add(&b, r.s[0], r.n[0], 0);
    char err[200];
    if (rc == 0 && r.s[2]) { /* aliases were checked when written; a bad one is skipped */
      rc = util_json_strings(r.s[2], r.n[2], nb_alias, &b, err, sizeof err);
      if (rc == UTIL_EINVAL) rc = 0;
    }
  }
  g = rc == 0 ? sqlite3_malloc(sizeof *g) : NULL;
  if (!g) {
    sqlite3_free(b.v);
    strbuf_free(&b.sb);
    return SQLITE_NOMEM;
  }
  for (size_t i = 0; i < b.n; i++) b.v[i].s = b.sb.buf + (uintptr_t)b.v[i].s;
  g->version = store_g_version(st);
  g->v = b.v;
  g->n = b.n;
  g->text = b.sb.buf;
  h5mem_store_cache_set(ms, g, gnames_free);
  *out = g;
  return SQLITE_OK;
}

enum { REF_FOUND = 0, REF_NONE = 1 };

/* The entity a value names: an integer is an id (of a live entity); text
** is an entity's name, else an alias, else a case-insensitive match of
** either: unique at the first of these that matches.  Several there: an
** error listing them, or with pick_first the lowest id.  REF_FOUND,
** REF_NONE (*err says so) or an SQLite error. */
static int entity_num_ref(store *st, int t, sqlite3_int64 n, double d, const char *what, int64_t *id,
                          char **err);
static int entity_name_ref(memstore *ms, const char *q, size_t qn, const char *what, int pick_first,
                           int64_t *id, char **err);

static int entity_ref(memstore *ms, sqlite3_value *v, const char *what, int pick_first, int64_t *id,
                      char **err) {
  int t = sqlite3_value_type(v);
  if (t == SQLITE_INTEGER || t == SQLITE_FLOAT)
    return entity_num_ref(h5mem_store_handle(ms), t, sqlite3_value_int64(v), sqlite3_value_double(v), what,
                          id, err);
  if (t != SQLITE_TEXT) {
    *err = sqlite3_mprintf("%s: expected an entity id or name, not %s", what, t == SQLITE_NULL ? "NULL" : "a BLOB");
    return SQLITE_ERROR;
  }
  return entity_name_ref(ms, (const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), what,
                         pick_first, id, err);
}

/* entity_ref's number: SQLITE_INTEGER n, or SQLITE_FLOAT d (n its int64). */
static int entity_num_ref(store *st, int t, sqlite3_int64 n, double d, const char *what, int64_t *id,
                          char **err) {
  store_grec r;
  *id = n;
  if (t == SQLITE_FLOAT && (floor(d) != d || !(fabs(d) < 9.2e18))) {
    *err = sqlite3_mprintf("%s: %g is not an entity id", what, d);
    return SQLITE_ERROR;
  }
  if (graph_entity_get(st, *id, &r)) {
    *err = sqlite3_mprintf("%s: no entity with id %lld", what, (long long)*id);
    return REF_NONE;
  }
  return REF_FOUND;
}

/* entity_ref's text q[0..qn). */
static int entity_name_ref(memstore *ms, const char *q, size_t qn, const char *what, int pick_first,
                           int64_t *id, char **err) {
  const gnames *g;
  int rc = gnames_get(ms, &g);
  if (rc != SQLITE_OK) return rc;
  kg_match *m = NULL;
  size_t nm = 0;
  if (kg_resolve(g->v, g->n, q, qn, 0, &m, &nm) == KG_ENOMEM) return SQLITE_NOMEM;
  size_t same = 0;
  while (same < nm && m[same].kind == m[0].kind && m[same].kind != KG_MATCH_EDIT) same++;
  if (same == 1 || (same > 1 && pick_first)) {
    *id = m[0].id;
    free(m);
    return REF_FOUND;
  }
  if (same == 0) {
    free(m);
    *err = sqlite3_mprintf("%s: no entity is named '%s'", what, q);
    return REF_NONE;
  }
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendf(s, "%s: '%s' %s %d entities (ids", what, q,
                      m[0].kind == KG_MATCH_EXACT ? "names" : m[0].kind == KG_MATCH_ALIAS ? "is an alias of"
                                                                                        : "matches",
                      (int)same);
  for (size_t i = 0; i < same && i < 10; i++) sqlite3_str_appendf(s, "%s %lld", i ? "," : "", (long long)m[i].id);
  sqlite3_str_appendf(s, "%s); give an id", same > 10 ? ", ..." : "");
  free(m);
  *err = sqlite3_str_finish(s);
  return *err ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* ---- the table-valued functions ------------------------------------------------ */

/* A result cell: SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT (s
** sqlite3_malloc'd) or SQLITE_NULL (zeroed). */
typedef struct cell {
  int type;
  sqlite3_int64 i;
  double d;
  char *s;
  size_t n;
} cell;

/* The rows of one call: nvis cells each. */
typedef struct fres {
  cell *c;
  size_t nrows, cap;
  int nvis;
} fres;

static void fres_free(fres *r) {
  for (size_t i = 0; i < r->nrows * (size_t)r->nvis; i++) sqlite3_free(r->c[i].s);
  sqlite3_free(r->c);
  r->c = NULL;
  r->nrows = r->cap = 0;
}

/* A new row of NULLs; NULL when out of memory. */
static cell *fres_row(fres *r) {
  if (r->nrows == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 16;
    cell *c = sqlite3_realloc64(r->c, cap * (size_t)r->nvis * sizeof *c);
    if (!c) return NULL;
    r->c = c;
    r->cap = cap;
  }
  cell *row = r->c + r->nrows++ * (size_t)r->nvis;
  memset(row, 0, (size_t)r->nvis * sizeof *row);
  return row;
}

static void cell_int(cell *c, sqlite3_int64 v) {
  c->type = SQLITE_INTEGER;
  c->i = v;
}

static void cell_real(cell *c, double v) {
  c->type = SQLITE_FLOAT;
  c->d = v;
}

/* A copy of s (NULL: SQL NULL); SQLITE_NOMEM or SQLITE_OK. */
static int cell_text(cell *c, const char *s, size_t n) {
  if (!s) return SQLITE_OK;
  c->s = sqlite3_malloc64(n + 1);
  if (!c->s) return SQLITE_NOMEM;
  memcpy(c->s, s, n);
  c->s[n] = 0;
  c->n = n;
  c->type = SQLITE_TEXT;
  return SQLITE_OK;
}

/* The entity's name into c. */
static int cell_name(cell *c, store *st, int64_t id) {
  store_grec r;
  return graph_entity_get(st, id, &r) ? SQLITE_OK : cell_text(c, r.s[0], r.n[0]);
}

typedef struct fkind fkind;
typedef struct fcall {
  sqlite3 *db;
  registry *reg;
  const fkind *kind;
  fres *res;
} fcall;

struct fkind {
  const char *name;
  const char *schema;
  const char *usage;
  int nvis, nargs, nreq; /* visible columns, then the arguments (the first nreq required) */
  int (*run)(fcall *f, sqlite3_value **args, char **err);
};

static int bfs_run(fcall *f, sqlite3_value **a, char **err);
static int act_run(fcall *f, sqlite3_value **a, char **err);
static int res_run(fcall *f, sqlite3_value **a, char **err);

static const fkind fkinds[3] = {
    {"kg_bfs",
     "CREATE TABLE x(id INTEGER, name TEXT, depth INTEGER, path TEXT, relation TEXT, "
     "relation_id INTEGER, store HIDDEN, start HIDDEN, max_depth HIDDEN, options HIDDEN)",
     "kg_bfs(store, start, max_depth [, options])", 6, 4, 3, bfs_run},
    {"kg_activate",
     "CREATE TABLE x(id INTEGER, name TEXT, activation REAL, store HIDDEN, seeds HIDDEN, "
     "options HIDDEN)",
     "kg_activate(store, seeds [, options])", 3, 3, 2, act_run},
    {"kg_resolve",
     "CREATE TABLE x(id INTEGER, name TEXT, match TEXT, edits INTEGER, store HIDDEN, query HIDDEN, "
     "max_edits HIDDEN)",
     "kg_resolve(store, name [, max_edits])", 4, 3, 2, res_run},
};

/* The table object: an ext_tvf (vtab_int.h) whose kind is one of fkinds. */
static const fkind *kind_of(sqlite3_vtab *vt) { return ((const ext_tvf *)vt)->kind; }

typedef struct fcur {
  sqlite3_vtab_cursor base;
  fres res;
  size_t i;
} fcur;

EXT_TVF_CONNECT(bfs_connect, &fkinds[0])
EXT_TVF_CONNECT(act_connect, &fkinds[1])
EXT_TVF_CONNECT(res_connect, &fkinds[2])

/* idxNum: bit j set when argument j is given; they come in argument order. */
static int f_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  const fkind *kd = kind_of(base);
  int use[8];
  for (int j = 0; j < kd->nargs; j++) use[j] = -1;
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    int j = k->iColumn - kd->nvis;
    if (j < 0 || j >= kd->nargs || k->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!k->usable) return SQLITE_CONSTRAINT;
    use[j] = c;
  }
  int argi = 0, mask = 0;
  for (int j = 0; j < kd->nargs; j++) {
    if (use[j] < 0) continue;
    info->aConstraintUsage[use[j]].argvIndex = ++argi;
    info->aConstraintUsage[use[j]].omit = 1;
    mask |= 1 << j;
  }
  info->idxNum = mask;
  info->estimatedCost = 100;
  info->estimatedRows = 100;
  return SQLITE_OK;
}

static int f_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  fcur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  c->res.nvis = kind_of(base)->nvis;
  *out = &c->base;
  return SQLITE_OK;
}

static int f_close(sqlite3_vtab_cursor *cur) {
  fres_free(&((fcur *)cur)->res);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int f_filter(sqlite3_vtab_cursor *cur, int mask, const char *idxStr, int argc,
                    sqlite3_value **argv) {
  (void)idxStr;
  fcur *c = (fcur *)cur;
  ext_tvf *vt = (ext_tvf *)cur->pVtab;
  const fkind *kd = kind_of(cur->pVtab);
  fres_free(&c->res);
  c->i = 0;
  sqlite3_value *args[8];
  int a = 0;
  for (int j = 0; j < kd->nargs; j++) args[j] = (mask >> j & 1) && a < argc ? argv[a++] : NULL;
  char *err = NULL;
  int rc = SQLITE_OK;
  for (int j = 0; j < kd->nreq && rc == SQLITE_OK; j++)
    if (!args[j]) {
      err = sqlite3_mprintf("too few arguments: %s", kd->usage);
      rc = SQLITE_ERROR;
    }
  if (rc == SQLITE_OK) {
    fcall f = {vt->db, vt->aux, kd, &c->res};
    rc = kd->run(&f, args, &err);
  }
  if (rc != SQLITE_OK) {
    fres_free(&c->res);
    sqlite3_free(vt->base.zErrMsg);
    vt->base.zErrMsg = err ? sqlite3_mprintf("%s: %s", kd->name, err) : NULL;
    sqlite3_free(err);
    return vt->base.zErrMsg || rc == SQLITE_NOMEM ? rc : SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

static int f_next(sqlite3_vtab_cursor *cur) {
  ((fcur *)cur)->i++;
  return SQLITE_OK;
}

static int f_eof(sqlite3_vtab_cursor *cur) {
  fcur *c = (fcur *)cur;
  return c->i >= c->res.nrows;
}

static int f_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((fcur *)cur)->i;
  return SQLITE_OK;
}

static int f_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  fcur *c = (fcur *)cur;
  if (col < 0 || col >= c->res.nvis) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const cell *x = &c->res.c[c->i * (size_t)c->res.nvis + (size_t)col];
  switch (x->type) {
  case SQLITE_INTEGER: sqlite3_result_int64(ctx, x->i); break;
  case SQLITE_FLOAT: sqlite3_result_double(ctx, x->d); break;
  case SQLITE_TEXT: sqlite3_result_text64(ctx, x->s, x->n, SQLITE_TRANSIENT, SQLITE_UTF8); break;
  default: sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

/* ---- options ------------------------------------------------------------------- */

typedef struct gopts {
  store *st;
  int dir;
  uint32_t *types; /* kg_bfs: the relation types' codes (ntypes; types_given) */
  size_t ntypes;
  int types_given;
  int64_t limit;
  double decay, threshold;
  int steps;
} gopts;

static int dir_option(const search_opt *o, int *dir, char **err) {
  const char *v = o->text;
  if (v) {
    if (!strcmp(v, "out")) *dir = KG_OUT;
    else if (!strcmp(v, "in")) *dir = KG_IN;
    else if (!strcmp(v, "both")) *dir = KG_BOTH;
    else v = NULL;
    if (v) return SQLITE_OK;
  }
  *err = sqlite3_mprintf("expected \"out\", \"in\" or \"both\"");
  return SQLITE_ERROR;
}

static int type_code(void *ctx, const char *s, size_t n) {
  gopts *o = ctx;
  uint32_t code = store_g_type_code(o->st, s, n);
  if (code == UINT32_MAX) return 0; /* no relation has it */
  uint32_t *t = sqlite3_realloc64(o->types, (o->ntypes + 1) * sizeof *t);
  if (!t) return -2;
  o->types = t;
  o->types[o->ntypes++] = code;
  return 0;
}

#define BFS_KNOWN "direction \"out\"/\"in\"/\"both\", types an array of relation types, limit an integer >= 1"

static int bfs_option(void *ctx, const char *key, const search_opt *v, char **err) {
  gopts *o = ctx;
  if (!strcmp(key, "direction")) return dir_option(v, &o->dir, err);
  if (!strcmp(key, "limit")) {
    if (v->type != UTIL_JSON_INTEGER || v->inum < 1) {
      *err = sqlite3_mprintf("expected an integer >= 1");
      return SQLITE_ERROR;
    }
    o->limit = v->inum;
    return SQLITE_OK;
  }
  if (!strcmp(key, "types")) {
    char e[200];
    o->types_given = 1;
    int rc = v->type == UTIL_JSON_ARRAY ? util_json_strings(v->json, v->len, type_code, o, e, sizeof e)
                                        : UTIL_EINVAL;
    if (rc == UTIL_ENOMEM) return SQLITE_NOMEM;
    if (rc) {
      *err = sqlite3_mprintf("expected an array of relation types, e.g. [\"works_with\"]");
      return SQLITE_ERROR;
    }
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

#define ACT_KNOWN "decay a number in (0, 1], threshold a number > 0, steps an integer 1..1000, " \
                  "direction \"out\"/\"in\"/\"both\""

static int act_option(void *ctx, const char *key, const search_opt *v, char **err) {
  gopts *o = ctx;
  if (!strcmp(key, "direction")) return dir_option(v, &o->dir, err);
  if (!strcmp(key, "decay")) {
    int rc = search_opts_num(v, 0, 1, &o->decay, err);
    if (rc == SQLITE_OK && o->decay == 0) {
      *err = sqlite3_mprintf("expected a number in (0, 1]");
      rc = SQLITE_ERROR;
    }
    return rc;
  }
  if (!strcmp(key, "threshold")) {
    int rc = search_opts_num(v, 0, 1e300, &o->threshold, err);
    if (rc == SQLITE_OK && o->threshold == 0) {
      *err = sqlite3_mprintf("expected a number > 0");
      rc = SQLITE_ERROR;
    }
    return rc;
  }
  if (!strcmp(key, "steps")) {
    sqlite3_int64 n = v->inum;
    if (v->type != UTIL_JSON_INTEGER || n < 1 || n > 1000) {
      *err = sqlite3_mprintf("expected an integer from 1 to 1000");
      return SQLITE_ERROR;
    }
    o->steps = (int)n;
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

/* ---- kg_bfs ----------------------------------------------------------------------- */

typedef struct idpos {
  int64_t id;
  size_t i;
} idpos;

static int by_id(const void *a, const void *b) {
  int64_t x = ((const idpos *)a)->id, y = ((const idpos *)b)->id;
  return x < y ? -1 : x > y;
}

static size_t row_of(const idpos *ix, size_t n, int64_t id) {
  idpos key = {id, 0};
  const idpos *p = bsearch(&key, ix, n, sizeof *ix, by_id);
  return p ? p->i : 0;
}

/* One row per entity reached: its path is the chain of parents back to
** the start (every parent is an earlier row). */
static int bfs_rows(fcall *f, store *st, const kg_bfs_row *rows, size_t n) {
  idpos *ix = sqlite3_malloc64(n * sizeof *ix + 1);
  int64_t *chain = NULL;
  int rc = ix ? SQLITE_OK : SQLITE_NOMEM;
  int maxd = 0;
  for (size_t i = 0; i < n; i++) {
    if (ix) ix[i] = (idpos){rows[i].id, i};
    if (rows[i].depth > maxd) maxd = rows[i].depth;
  }
  if (rc == SQLITE_OK) {
    qsort(ix, n, sizeof *ix, by_id);
    chain = sqlite3_malloc64(((size_t)maxd + 1) * sizeof *chain);
    if (!chain) rc = SQLITE_NOMEM;
  }
  for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
    const kg_bfs_row *r = &rows[i];
    cell *c = fres_row(f->res);
    if (!c) {
      rc = SQLITE_NOMEM;
      break;
    }
    cell_int(&c[0], r->id);
    rc = cell_name(&c[1], st, r->id);
    cell_int(&c[2], r->depth);
    size_t at = i;
    for (int d = r->depth; d >= 0; d--) {
      chain[d] = rows[at].id;
      if (d) at = row_of(ix, n, rows[at].parent);
    }
    sqlite3_str *p = sqlite3_str_new(NULL);
    sqlite3_str_appendchar(p, 1, '[');
    for (int d = 0; d <= r->depth; d++) sqlite3_str_appendf(p, "%s%lld", d ? "," : "", (long long)chain[d]);
    sqlite3_str_appendchar(p, 1, ']');
    int plen = sqlite3_str_length(p);
    char *path = sqlite3_str_finish(p);
    if (!path) rc = SQLITE_NOMEM;
    else {
      c[3].type = SQLITE_TEXT;
      c[3].s = path;
      c[3].n = (size_t)plen;
    }
    if (r->depth > 0) { /* the relation's own type: NULL stays NULL */
      uint64_t pos;
      store_grec rel;
      if (rc == SQLITE_OK && store_g_find(st, STORE_G_RELATION, r->relation, &pos) == STORE_OK &&
          store_g_get(st, STORE_G_RELATION, pos, &rel) == STORE_OK)
        rc = cell_text(&c[4], rel.s[1], rel.n[1]);
      cell_int(&c[5], r->relation);
    }
  }
  sqlite3_free(chain);
  sqlite3_free(ix);
  return rc;
}

static int bfs_run(fcall *f, sqlite3_value **a, char **err) {
  memvt *mt;
  int rc = graph_store(f->reg, f->db, a[0], &mt, err);
  if (rc != SQLITE_OK) return rc;
  memstore *ms = h5mem_table_ms(mt);
  store *st = h5mem_store_handle(ms);
  int64_t start;
  rc = entity_ref(ms, a[1], "start", 0, &start, err);
  if (rc != REF_FOUND) return rc == REF_NONE ? SQLITE_ERROR : rc;
  if (sqlite3_value_numeric_type(a[2]) != SQLITE_INTEGER || sqlite3_value_int64(a[2]) < 0) {
    *err = sqlite3_mprintf("max_depth must be an integer >= 0");
    return SQLITE_ERROR;
  }
  sqlite3_int64 maxd = sqlite3_value_int64(a[2]);
  gopts o;
  memset(&o, 0, sizeof o);
  o.st = st;
  o.dir = KG_OUT;
  rc = search_opts_parse(a[3], BFS_KNOWN, bfs_option, &o, err);
  const kg_adj *adj = NULL;
  if (rc == SQLITE_OK && (rc = store_g_adj(st, &adj)) != STORE_OK) rc = h5mem_store_err(st, rc, err);
  kg_bfs_row *rows = NULL;
  size_t n = 0;
  if (rc == SQLITE_OK) {
    kg_bfs_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.dir = o.dir;
    /* no relation has any of the types asked for: the start alone */
    bo.max_depth = o.types_given && !o.ntypes ? 0 : maxd > 1000000000 ? 1000000000 : (int)maxd;
    bo.types = o.types_given ? o.types : NULL;
    bo.ntypes = o.ntypes;
    bo.limit = (size_t)o.limit;
    int kr = kg_bfs(adj, start, &bo, &rows, &n);
    if (kr == KG_ENOMEM) rc = SQLITE_NOMEM;
    else if (kr != KG_OK) {
      *err = sqlite3_mprintf("start: entity %lld is not in the graph", (long long)start);
      rc = SQLITE_ERROR;
    }
  }
  if (rc == SQLITE_OK) rc = bfs_rows(f, st, rows, n);
  free(rows);
  sqlite3_free(o.types);
  return rc;
}

/* ---- kg_activate ---------------------------------------------------------------- */

typedef struct seeds {
  int64_t *id;
  double *act;
  size_t n, cap;
  int weighted; /* given as an object: act holds the values */
} seeds;

static int seed_add(seeds *s, int64_t id, double act) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    int64_t *i = sqlite3_realloc64(s->id, cap * sizeof *i);
    if (!i) return SQLITE_NOMEM;
    s->id = i;
    double *a = sqlite3_realloc64(s->act, cap * sizeof *a);
    if (!a) return SQLITE_NOMEM;
    s->act = a;
    s->cap = cap;
  }
  s->id[s->n] = id;
  s->act[s->n++] = act;
  return SQLITE_OK;
}

/* Seeds: an id, a name, a JSON array of ids and names, or a JSON object
** {name or id: initial activation}. */
static int seeds_parse(memstore *ms, sqlite3_value *v, seeds *s, char **err) {
  int t = sqlite3_value_type(v);
  const char *txt = t == SQLITE_TEXT ? (const char *)sqlite3_value_text(v) : NULL;
  while (txt && (*txt == ' ' || *txt == '\t' || *txt == '\n' || *txt == '\r')) txt++;
  if (!txt || (*txt != '[' && *txt != '{')) { /* one seed */
    int64_t id;
    int rc = entity_ref(ms, v, "seeds", 0, &id, err);
    if (rc != REF_FOUND) return rc == REF_NONE ? SQLITE_ERROR : rc;
    return seed_add(s, id, 1.0);
  }
  size_t len = strlen(txt);
  char verr[200];
  if (util_json_valid(txt, len, verr, sizeof verr)) {
    *err = sqlite3_mprintf("seeds: malformed JSON: %s", verr);
    return SQLITE_ERROR;
  }
  s->weighted = *txt == '{';
  util_json_iter it;
  util_json_iter_init(&it, txt, 0, len);
  int k = 0, rc = SQLITE_OK;
  while (rc == SQLITE_OK && util_json_next(&it)) {
    int type = util_json_type(txt, it.v0, len), as = 0, found;
    int64_t id = 0, n = 0;
    double act = 1.0, d = 0;
    /* a name, decoded as json_each gives it (a \u0000 ends it): the
    ** element, or the key of a member */
    char *q = NULL;
    size_t qn = 0;
    if ((s->weighted || type == UTIL_JSON_TEXT) &&
        !(q = util_json_cstr(txt, s->weighted ? it.key : it.v0, len, &qn)))
      return SQLITE_NOMEM;
    if ((type == UTIL_JSON_INTEGER || type == UTIL_JSON_REAL) &&
        (as = util_json_number(txt, it.v0, len, &n, &d)) == UTIL_ENOMEM) {
      free(q);
      return SQLITE_NOMEM;
    }
    if (!s->weighted) {
      if (type != UTIL_JSON_INTEGER && type != UTIL_JSON_TEXT) {
        *err = sqlite3_mprintf("seeds: element %d must be an entity id or a name", k);
        free(q);
        return SQLITE_ERROR;
      }
      /* an integer beyond int64 comes as a REAL, as from SQL: no id */
      found = q ? entity_name_ref(ms, q, qn, "seeds", 0, &id, err)
                : entity_num_ref(h5mem_store_handle(ms), as == UTIL_JSON_INTEGER ? SQLITE_INTEGER : SQLITE_FLOAT,
                                 n, d, "seeds", &id, err);
    } else {
      if ((type != UTIL_JSON_INTEGER && type != UTIL_JSON_REAL) || !isfinite(act = d) || act < 0) {
        *err = sqlite3_mprintf("seeds: the value of '%s' must be a number >= 0 (its initial activation)", q);
        free(q);
        return SQLITE_ERROR;
      }
      /* a key is a name; failing that, digits are an id */
      found = entity_name_ref(ms, q, qn, "seeds", 0, &id, err);
      if (found == REF_NONE && *q && strspn(q, "0123456789") == qn && qn < 19) {
        int64_t kid = (int64_t)strtoll(q, NULL, 10);
        store_grec r;
        if (graph_entity_get(h5mem_store_handle(ms), kid, &r) == 0) {
          sqlite3_free(*err);
          *err = NULL;
          id = kid;
          found = REF_FOUND;
        }
      }
    }
    free(q);
    if (found != REF_FOUND) return found == REF_NONE ? SQLITE_ERROR : found;
    rc = seed_add(s, id, act);
    k++;
  }
  return rc;
}

static int act_run(fcall *f, sqlite3_value **a, char **err) {
  memvt *mt;
  int rc = graph_store(f->reg, f->db, a[0], &mt, err);
  if (rc != SQLITE_OK) return rc;
  memstore *ms = h5mem_table_ms(mt);
  store *st = h5mem_store_handle(ms);
  seeds s;
  memset(&s, 0, sizeof s);
  gopts o;
  memset(&o, 0, sizeof o);
  o.st = st;
  o.dir = KG_BOTH;
  o.decay = 0.5;
  o.threshold = 0.01;
  o.steps = 3;
  rc = seeds_parse(ms, a[1], &s, err);
  if (rc == SQLITE_OK) rc = search_opts_parse(a[2], ACT_KNOWN, act_option, &o, err);
  const kg_adj *adj = NULL;
  if (rc == SQLITE_OK && (rc = store_g_adj(st, &adj)) != STORE_OK) rc = h5mem_store_err(st, rc, err);
  kg_act_row *rows = NULL;
  size_t n = 0;
  if (rc == SQLITE_OK) {
    kg_act_opts ao = {o.decay, o.threshold, o.steps, o.dir};
    int kr = kg_activate(adj, s.id, s.weighted ? s.act : NULL, s.n, &ao, &rows, &n);
    if (kr == KG_ENOMEM) rc = SQLITE_NOMEM;
    else if (kr != KG_OK) {
      *err = sqlite3_mprintf("bad arguments");
      rc = SQLITE_ERROR;
    }
  }
  for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
    cell *c = fres_row(f->res);
    if (!c) {
      rc = SQLITE_NOMEM;
      break;
    }
    cell_int(&c[0], rows[i].id);
    rc = cell_name(&c[1], st, rows[i].id);
    cell_real(&c[2], rows[i].activation);
  }
  free(rows);
  sqlite3_free(s.id);
  sqlite3_free(s.act);
  return rc;
}

/* ---- kg_resolve ------------------------------------------------------------------ */

static int res_run(fcall *f, sqlite3_value **a, char **err) {
  memvt *mt;
  int rc = graph_store(f->reg, f->db, a[0], &mt, err);
  if (rc != SQLITE_OK) return rc;
  memstore *ms = h5mem_table_ms(mt);
  store *st = h5mem_store_handle(ms);
  if (sqlite3_value_type(a[1]) == SQLITE_NULL) return SQLITE_OK;
  int max_edits = 2;
  if (a[2] && sqlite3_value_type(a[2]) != SQLITE_NULL) {
    if (sqlite3_value_numeric_type(a[2]) != SQLITE_INTEGER || sqlite3_value_int64(a[2]) < 0 ||
        sqlite3_value_int64(a[2]) > 16) {
      *err = sqlite3_mprintf("max_edits must be an integer from 0 to 16");
      return SQLITE_ERROR;
    }
    max_edits = sqlite3_value_int(a[2]);
  }
  const char *q = (const char *)sqlite3_value_text(a[1]);
  if (!q) return SQLITE_NOMEM;
  const gnames *g;
  if ((rc = gnames_get(ms, &g)) != SQLITE_OK) return rc;
  kg_match *m = NULL;
  size_t n = 0;
  if (kg_resolve(g->v, g->n, q, (size_t)sqlite3_value_bytes(a[1]), max_edits, &m, &n) == KG_ENOMEM)
    return SQLITE_NOMEM;
  static const char *const kinds[4] = {"exact", "alias", "case", "edit"};
  for (size_t i = 0; i < n && rc == SQLITE_OK; i++) {
    cell *c = fres_row(f->res);
    if (!c) {
      rc = SQLITE_NOMEM;
      break;
    }
    cell_int(&c[0], m[i].id);
    rc = cell_name(&c[1], st, m[i].id);
    if (rc == SQLITE_OK) {
      const char *k = m[i].kind >= 0 && m[i].kind < 4 ? kinds[m[i].kind] : "edit";
      rc = cell_text(&c[2], k, strlen(k));
    }
    cell_int(&c[3], m[i].edits);
  }
  free(m);
  return rc;
}

/* ---- writing through the companion tables -------------------------------------- */

/* INSERT INTO the companion table k of the h5mem table mt, with the
** columns cols (?1, ?2, ...). */
int graph_companion_insert(sqlite3 *db, memvt *mt, int k, const char *cols, int ncols,
                           sqlite3_stmt **out, char **err) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendf(s, "INSERT INTO \"%w\".\"%w_%s\"(%s) VALUES (", h5mem_table_schema(mt),
                      h5mem_table_name(mt), h5mem_companion[k], cols);
  for (int i = 1; i <= ncols; i++) sqlite3_str_appendf(s, "%s?%d", i > 1 ? ", " : "", i);
  sqlite3_str_appendchar(s, 1, ')');
  char *sql = sqlite3_str_finish(s);
  if (!sql) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK)
    *err = sqlite3_mprintf("%s (the companion table %s_%s is made with CREATE VIRTUAL TABLE %s_%s "
                           "USING %s(%s))", sqlite3_errmsg(db), h5mem_table_name(mt), h5mem_companion[k],
                           h5mem_table_name(mt), h5mem_companion[k], h5mem_companion_module[k],
                           h5mem_table_name(mt));
  return rc;
}

/* Run an INSERT made by graph_companion_insert (bound); reset it. */
int graph_run_insert(sqlite3 *db, sqlite3_stmt *st, char **err) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc == SQLITE_DONE) return SQLITE_OK;
  *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  return rc == SQLITE_ROW ? SQLITE_ERROR : sqlite3_errcode(db);
}

/* The id of a new record of mt's companion table k (-1: of mt itself)
** whose largest id is max: "no ids left" at INT64_MAX, as the table's own
** INSERT says it (SQLITE_FULL, the message in *err). */
int graph_next_id(memvt *mt, int k, int64_t max, int64_t *id, char **err) {
  if (max < INT64_MAX) {
    *id = max + 1;
    return SQLITE_OK;
  }
  *err = k < 0 ? sqlite3_mprintf("h5mem: no ids left")
               : sqlite3_mprintf("%s_%s: no ids left", h5mem_table_name(mt), h5mem_companion[k]);
  return *err ? SQLITE_FULL : SQLITE_NOMEM;
}

memvt *graph_fn_store(sqlite3_context *ctx, sqlite3_value *name, const char *fn) {
  if (!ext_direct_call(ctx, fn)) return NULL;
  memvt *mt;
  char *err = NULL;
  int rc = graph_store(sqlite3_user_data(ctx), sqlite3_context_db_handle(ctx), name, &mt, &err);
  if (rc == SQLITE_OK) return mt;
  ext_result_msg(ctx, rc, fn, err);
  return NULL;
}

/* kg_entity(store, name [, type]): the entity the name resolves to (name,
** alias or case-insensitive match; several: the lowest id of the best
** kind), else a new entity with this name and type (type is used only
** then). */
static void fn_entity(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  memvt *mt = graph_fn_store(ctx, argv[0], "kg_entity");
  if (!mt) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (sqlite3_value_type(argv[1]) != SQLITE_TEXT || !sqlite3_value_bytes(argv[1]))
    return ext_result_msg(ctx, SQLITE_ERROR, "kg_entity", sqlite3_mprintf("name: expected a non-empty name"));
  memstore *ms = h5mem_table_ms(mt);
  store *st = h5mem_store_handle(ms);
  int64_t id;
  char *err = NULL;
  int rc = entity_ref(ms, argv[1], "name", 1, &id, &err);
  if (rc == REF_FOUND) return sqlite3_result_int64(ctx, id);
  if (rc != REF_NONE) return ext_result_msg(ctx, rc, "kg_entity", err);
  sqlite3_free(err);
  err = NULL;
  sqlite3_stmt *ins = NULL;
  rc = graph_companion_insert(db, mt, 0, "id, name, type", 3, &ins, &err);
  if (rc == SQLITE_OK) rc = graph_next_id(mt, 0, store_g_max_id(st, STORE_G_ENTITY), &id, &err);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(ins, 1, id);
    sqlite3_bind_value(ins, 2, argv[1]);
    if (argc > 2) sqlite3_bind_value(ins, 3, argv[2]);
    rc = graph_run_insert(db, ins, &err);
  }
  sqlite3_finalize(ins);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "kg_entity", err);
  sqlite3_result_int64(ctx, id);
}

/* ---- registration ------------------------------------------------------------------ */

#define MODULE(var, connect)                                                                      \
  static sqlite3_module var = {                                                                   \
      .iVersion = 1, .xConnect = connect, .xBestIndex = f_best_index,                             \
      .xDisconnect = ext_tvf_disconnect, .xOpen = f_open, .xClose = f_close,                      \
      .xFilter = f_filter,                                                                        \
      .xNext = f_next, .xEof = f_eof, .xColumn = f_column, .xRowid = f_rowid,                     \
  };
MODULE(bfs_module, bfs_connect)
MODULE(act_module, act_connect)
MODULE(res_module, res_connect)
#undef MODULE

int ext_func_graph_register(sqlite3 *db, registry *reg) {
  sqlite3_module *mods[3] = {&bfs_module, &act_module, &res_module};
  int rc = SQLITE_OK;
  for (int k = 0; k < 3 && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_module(db, reg, fkinds[k].name, mods[k]);
  }
  static const struct {
    const char *name;
    int nargs, flags;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
  } fns[] = {
      {"kg_entity", 2, SQLITE_DIRECTONLY, fn_entity},
      {"kg_entity", 3, SQLITE_DIRECTONLY, fn_entity}, /* reads and writes a store */
  };
  for (size_t k = 0; k < sizeof fns / sizeof *fns && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_function(db, reg, fns[k].name, fns[k].nargs, fns[k].flags, fns[k].fn);
  }
  if (rc == SQLITE_OK) rc = graph_jsonl_register(db, reg);
  return rc;
}
