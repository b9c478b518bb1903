/*
** ext/vtab/func_graph_jsonl.c - the knowledge graph in and out as the MCP
** memory server's JSONL:
**
**   kg_import_jsonl(store, text)                  the MCP memory server's JSONL in; a report
**   kg_export_jsonl(store)                        the graph as that JSONL
**
** The import writes through the companion tables, as kg_entity does
** (func_graph.c), so that what it writes is in the SQLite transaction;
** both read or write a store: SQLITE_DIRECTONLY, never from a trigger or
** view (docs/SQL.md, "Trust").
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../ext_err.h"
#include "util/err.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "vtab_int.h"

/* ---- kg_import_jsonl ---------------------------------------------------------------- */

/* A set of byte strings with a value each: names to ids, relations and
** observations already there. */
typedef struct bent {
  uint64_t h;
  char *k; /* NULL: empty slot */
  size_t n;
  int64_t v;
} bent;

typedef struct bmap {
  bent *e;
  size_t cap, n;
} bmap;

static uint64_t fnv1a(const char *k, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)k[i]) * 1099511628211ULL;
  return h;
}

static bent *bmap_slot(const bmap *m, const char *k, size_t n, uint64_t h) {
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    bent *e = &m->e[i];
    if (!e->k || (e->h == h && e->n == n && !memcmp(e->k, k, n))) return e;
  }
}

static int bmap_get(const bmap *m, const char *k, size_t n, int64_t *v) {
  if (!m->cap) return 0;
  bent *e = bmap_slot(m, k, n, fnv1a(k, n));
  if (!e->k) return 0;
  *v = e->v;
  return 1;
}

/* The entry of k, made (value 0, *added 1) when absent; NULL out of memory. */
static bent *bmap_add(bmap *m, const char *k, size_t n, int *added) {
  *added = 0;
  if (2 * (m->n + 1) > m->cap) {
    bmap g = {NULL, m->cap ? 2 * m->cap : 64, m->n};
    g.e = sqlite3_malloc64(g.cap * sizeof *g.e);
    if (!g.e) return NULL;
    memset(g.e, 0, g.cap * sizeof *g.e);
    for (size_t i = 0; i < m->cap; i++)
      if (m->e[i].k) *bmap_slot(&g, m->e[i].k, m->e[i].n, m->e[i].h) = m->e[i];
    sqlite3_free(m->e);
    *m = g;
  }
  uint64_t h = fnv1a(k, n);
  bent *e = bmap_slot(m, k, n, h);
  if (e->k) return e;
  e->k = sqlite3_malloc64(n + 1);
  if (!e->k) return NULL;
  memcpy(e->k, k, n);
  e->h = h;
  e->n = n;
  e->v = 0;
  m->n++;
  *added = 1;
  return e;
}

/* 1: added; 0: there (its value becomes the smaller); SQLITE_NOMEM < 0. */
static int bmap_put(bmap *m, const char *k, size_t n, int64_t v) {
  int added;
  bent *e = bmap_add(m, k, n, &added);
  if (!e) return -1;
  if (added || v < e->v) e->v = v;
  return added;
}

static void bmap_free(bmap *m) {
  for (size_t i = 0; i < m->cap; i++) sqlite3_free(m->e[i].k);
  sqlite3_free(m->e);
  memset(m, 0, sizeof *m);
}

typedef struct import {
  sqlite3 *db;
  memvt *mt;
  store *st;
  sqlite3_stmt *ins_ent, *ins_mem, *ins_men, *ins_rel;
  bmap names; /* name -> the lowest id of an entity of that name */
  bmap rels;  /* src, dst, type: there */
  bmap obs;   /* entity id, text: how many memories of that text mention it */
  bmap line;  /* text: how many times the entity line being read gives it so far */
  strbuf key;
  int64_t entity; /* the entity whose observations are being added */
  char *err;
  int64_t n_ent, n_ent_old, n_rel, n_rel_old, n_obs, n_obs_old, lines;
} import;

/* A relation's key: src, dst, then the type (a NULL type differs from ""). */
static void rel_key(strbuf *k, int64_t src, int64_t dst, const char *type, size_t n) {
  k->len = 0;
  strbuf_append(k, (const char *)&src, 8);
  strbuf_append(k, (const char *)&dst, 8);
  strbuf_putc(k, type ? 't' : 'n');
  if (type) strbuf_append(k, type, n);
}

static void obs_key(strbuf *k, int64_t entity, const char *text, size_t n) {
  k->len = 0;
  strbuf_append(k, (const char *)&entity, 8);
  strbuf_append(k, text, n);
}

/* What the store holds already: names, relations, observations. */
static int import_scan(import *im) {
  store *st = im->st;
  uint64_t n = store_g_npos(st, STORE_G_ENTITY);
  for (uint64_t p = 0; p < n; p++) {
    store_grec r;
    int gr = store_g_get(st, STORE_G_ENTITY, p, &r);
    if (gr == STORE_ENOTFOUND) continue; /* dead */
    if (gr != STORE_OK) return h5mem_store_err(st, gr, &im->err);
    if (r.s[0] && bmap_put(&im->names, r.s[0], r.n[0], r.id) < 0) return SQLITE_NOMEM;
  }
  n = store_g_npos(st, STORE_G_RELATION);
  for (uint64_t p = 0; p < n; p++) {
    store_grec r;
    int gr = store_g_get(st, STORE_G_RELATION, p, &r);
    if (gr == STORE_ENOTFOUND) continue;
    if (gr != STORE_OK) return h5mem_store_err(st, gr, &im->err);
    rel_key(&im->key, r.a, r.b, r.s[1], r.n[1]);
    if (strbuf_failed(&im->key) || bmap_put(&im->rels, im->key.buf, im->key.len, r.id) < 0)
      return SQLITE_NOMEM;
  }
  n = store_g_npos(st, STORE_G_MENTION);
  for (uint64_t p = 0; p < n; p++) {
    store_grec r;
    uint64_t mpos;
    store_view v;
    memset(&v, 0, sizeof v);
    int rc = store_g_get(st, STORE_G_MENTION, p, &r);
    if (rc == STORE_OK) rc = store_find(st, r.a, &mpos);
    if (rc == STORE_OK) rc = store_get(st, mpos, STORE_V_TEXT, &v);
    if (rc == STORE_ENOTFOUND) continue; /* a dead mention, or its memory is gone */
    if (rc != STORE_OK) return h5mem_store_err(st, rc, &im->err);
    if (!v.text) continue;
    obs_key(&im->key, r.b, v.text, v.text_len);
    int added;
    bent *e = strbuf_failed(&im->key) ? NULL : bmap_add(&im->obs, im->key.buf, im->key.len, &added);
    if (!e) return SQLITE_NOMEM;
    e->v++;
  }
  return SQLITE_OK;
}

/* One observation of im->entity: a memory (text, source 'mcp') that
** mentions it, unless the entity has that observation already as many
** times as the line gives it so far (a line repeating an observation
** keeps the repeats, as the MCP memory server does). */
static int import_obs(void *ctx, const char *s, size_t n) {
  import *im = ctx;
  int added;
  bent *seen = bmap_add(&im->line, s, n, &added);
  obs_key(&im->key, im->entity, s, n);
  bent *have = seen && !strbuf_failed(&im->key) ? bmap_add(&im->obs, im->key.buf, im->key.len, &added) : NULL;
  if (!have) return SQLITE_NOMEM;
  if (have->v >= ++seen->v) {
    im->n_obs_old++;
    return SQLITE_OK;
  }
  have->v++;
  int64_t mid;
  int rc = graph_next_id(im->mt, -1, store_max_id(im->st), &mid, &im->err);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(im->ins_mem, 1, mid);
  sqlite3_bind_text64(im->ins_mem, 2, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
  sqlite3_bind_text(im->ins_mem, 3, "mcp", 3, SQLITE_STATIC);
  rc = graph_run_insert(im->db, im->ins_mem, &im->err);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(im->ins_men, 1, mid);
    sqlite3_bind_int64(im->ins_men, 2, im->entity);
    rc = graph_run_insert(im->db, im->ins_men, &im->err);
  }
  if (rc == SQLITE_OK) im->n_obs++;
  return rc;
}

/* A line (valid JSON, an object) and its strings decoded: into buf, which
** has room for them all (len + 1 bytes: a decoded string, with its NUL,
** is shorter than its JSON form, and each member is decoded once). */
typedef struct jline {
  const char *s;
  size_t len;
  char *buf;
  size_t used;
} jline;

/* The type (UTIL_JSON_*) of member key of the line, as json_type(line,
** '$.key') (the first when it is there twice): -1 when it is not there;
** its span in *v0, *v1. */
static int line_member(const jline *l, const char *key, size_t *v0, size_t *v1) {
  if (util_json_at_path(l->s, l->len, key, v0, v1)) return -1;
  return util_json_type(l->s, *v0, l->len);
}

/* The string at l->s[v0] decoded into l->buf (NUL-terminated). */
static const char *line_text(jline *l, size_t v0, size_t v1, size_t *n) {
  if (l->used + (v1 - v0) > l->len + 1) return NULL; /* (not with each member decoded once) */
  char *out = l->buf + l->used;
  util_json_string(l->s, v0, l->len, out, n);
  out[*n] = 0;
  l->used += *n + 1;
  return out;
}

/* A string member that must be there (or, optional, may be absent or
** null): its text into *s (NULL when absent). */
static int member(import *im, jline *l, const char *name, int optional, const char **s, size_t *n) {
  size_t v0, v1;
  int t = line_member(l, name, &v0, &v1);
  *s = NULL;
  *n = 0;
  if ((t < 0 || t == UTIL_JSON_NULL) && optional) return SQLITE_OK;
  if (t != UTIL_JSON_TEXT) {
    im->err = sqlite3_mprintf("\"%s\" must be a string%s", name, optional ? " or null" : "");
    return SQLITE_ERROR;
  }
  *s = line_text(l, v0, v1, n);
  return *s ? SQLITE_OK : SQLITE_NOMEM;
}

/* Whether a valid JSON text has a string escape \u0000.  Stored strings
** never hold NUL (docs/SQL.md), and cutting the string there, as SQLite's
** json_extract did when it read these lines, would import "a\u0000b" as
** "a" without a word: the line is refused instead. */
static int json_has_nul(const char *s, size_t n) {
  for (size_t i = 0; i + 1 < n; i++) {
    if (s[i] != '\\') continue;
    if (s[i + 1] == 'u' && i + 5 < n && !memcmp(s + i + 2, "0000", 4)) return 1;
    i++; /* the escaped character: \\ is no escape of what follows */
  }
  return 0;
}

/* One line, in pass 1 (entities) or 2 (relations). */
static int import_line(import *im, const char *line, size_t len, int pass) {
  char verr[200];
  if (util_json_valid(line, len, verr, sizeof verr)) {
    im->err = sqlite3_mprintf("malformed JSON: %s", verr);
    return SQLITE_ERROR;
  }
  if (json_has_nul(line, len)) {
    im->err = sqlite3_mprintf("a string holds \\u0000: strings must be UTF-8 without NUL");
    return SQLITE_ERROR;
  }
  if (!util_json_is_object(line, len)) {
    im->err = sqlite3_mprintf("not a JSON object");
    return SQLITE_ERROR;
  }
  jline l = {line, len, sqlite3_malloc64(len + 1), 0};
  if (!l.buf) return SQLITE_NOMEM;
  int rc = SQLITE_OK;
  size_t v0, v1, tn0;
  const char *type = line_member(&l, "type", &v0, &v1) == UTIL_JSON_TEXT ? line_text(&l, v0, v1, &tn0) : NULL;
  int entity = type && !strcmp(type, "entity");
  int relation = type && !strcmp(type, "relation");
  if (!entity && !relation) {
    im->err = sqlite3_mprintf("\"type\" must be \"entity\" or \"relation\"");
    rc = SQLITE_ERROR;
  } else if (entity && pass == 1) {
    const char *name, *etype;
    size_t nn, tn;
    int64_t id;
    if ((rc = member(im, &l, "name", 0, &name, &nn)) == SQLITE_OK &&
        (rc = member(im, &l, "entityType", 1, &etype, &tn)) == SQLITE_OK && !nn) {
      im->err = sqlite3_mprintf("\"name\" is empty");
      rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK && bmap_get(&im->names, name, nn, &id)) {
      im->n_ent_old++;
    } else if (rc == SQLITE_OK &&
               (rc = graph_next_id(im->mt, 0, store_g_max_id(im->st, STORE_G_ENTITY), &id, &im->err)) == SQLITE_OK) {
      sqlite3_bind_int64(im->ins_ent, 1, id);
      sqlite3_bind_text64(im->ins_ent, 2, name, nn, SQLITE_TRANSIENT, SQLITE_UTF8);
      if (etype) sqlite3_bind_text64(im->ins_ent, 3, etype, tn, SQLITE_TRANSIENT, SQLITE_UTF8);
      if ((rc = graph_run_insert(im->db, im->ins_ent, &im->err)) == SQLITE_OK) {
        im->n_ent++;
        if (bmap_put(&im->names, name, nn, id) < 0) rc = SQLITE_NOMEM;
      }
    }
    int ot = line_member(&l, "observations", &v0, &v1);
    if (rc == SQLITE_OK && ot >= 0 && ot != UTIL_JSON_NULL) {
      char e[200];
      im->entity = id;
      bmap_free(&im->line); /* (counts per line) */
      int r = ot != UTIL_JSON_ARRAY ? UTIL_EINVAL : util_json_strings(line + v0, v1 - v0, import_obs, im, e, sizeof e);
      if (r == UTIL_EINVAL) {
        im->err = sqlite3_mprintf("\"observations\" must be an array of strings");
        rc = SQLITE_ERROR;
      } else {
        rc = r == UTIL_ENOMEM ? SQLITE_NOMEM : r;
      }
    }
  } else if (relation && pass == 2) {
    const char *from, *to, *rtype;
    size_t fn, tn, rn;
    int64_t src = 0, dst = 0;
    if ((rc = member(im, &l, "from", 0, &from, &fn)) == SQLITE_OK &&
        (rc = member(im, &l, "to", 0, &to, &tn)) == SQLITE_OK &&
        (rc = member(im, &l, "relationType", 1, &rtype, &rn)) == SQLITE_OK &&
        (!bmap_get(&im->names, from, fn, &src) || !bmap_get(&im->names, to, tn, &dst))) {
      const char *who = src ? to : from;
      im->err = sqlite3_mprintf("relation %s \"%s\": no entity has that name (in the file or the store)",
                                src ? "to" : "from", who);
      rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK) {
      rel_key(&im->key, src, dst, rtype, rn);
      int added = strbuf_failed(&im->key) ? -1 : bmap_put(&im->rels, im->key.buf, im->key.len, 0);
      if (added < 0) {
        rc = SQLITE_NOMEM;
      } else if (!added) {
        im->n_rel_old++;
      } else {
        sqlite3_bind_int64(im->ins_rel, 1, src);
        sqlite3_bind_int64(im->ins_rel, 2, dst);
        if (rtype) sqlite3_bind_text64(im->ins_rel, 3, rtype, rn, SQLITE_TRANSIENT, SQLITE_UTF8);
        if ((rc = graph_run_insert(im->db, im->ins_rel, &im->err)) == SQLITE_OK) im->n_rel++;
      }
    }
  }
  sqlite3_free(l.buf);
  return rc;
}

/* Both passes over the lines: entities (and their observations) first, so
** that relations may name entities of later lines. */
static int import_run(import *im, memvt *mt, const char *text, size_t len, int64_t *bad_line) {
  int rc;
  if ((rc = graph_companion_insert(im->db, mt, 0, "id, name, type", 3, &im->ins_ent, &im->err)) ||
      (rc = graph_companion_insert(im->db, mt, 1, "src, dst, type", 3, &im->ins_rel, &im->err)) ||
      (rc = graph_companion_insert(im->db, mt, 2, "memory_id, entity_id", 2, &im->ins_men, &im->err)))
    return rc;
  char *sql = sqlite3_mprintf("INSERT INTO \"%w\".\"%w\"(id, text, source) VALUES (?1, ?2, ?3)",
                              h5mem_table_schema(mt), h5mem_table_name(mt));
  rc = sql ? sqlite3_prepare_v2(im->db, sql, -1, &im->ins_mem, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc != SQLITE_OK) {
    if (rc != SQLITE_NOMEM) im->err = sqlite3_mprintf("%s", sqlite3_errmsg(im->db));
    return rc;
  }
  if ((rc = import_scan(im)) != SQLITE_OK) return rc;
  for (int pass = 1; pass <= 2 && rc == SQLITE_OK; pass++) {
    int64_t ln = 0;
    for (size_t i = 0; i < len && rc == SQLITE_OK;) {
      size_t e = i;
      while (e < len && text[e] != '\n') e++;
      size_t n = e - i;
      if (n && text[i + n - 1] == '\r') n--;
      ln++;
      size_t b = 0;
      while (b < n && (text[i + b] == ' ' || text[i + b] == '\t')) b++;
      if (b < n) {
        if (pass == 1) im->lines++;
        rc = import_line(im, text + i, n, pass);
        if (rc != SQLITE_OK) *bad_line = ln;
      }
      i = e + 1;
    }
  }
  return rc;
}

/* kg_import_jsonl(store, text): the MCP memory server's JSONL (lines
** {"type":"entity","name","entityType","observations"} and
** {"type":"relation","from","to","relationType"}) into the store, all or
** nothing; a JSON report of what was added and what was there already. */
static void fn_import(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  memvt *mt = graph_fn_store(ctx, argv[0], "kg_import_jsonl");
  if (!mt) return;
  if (sqlite3_value_type(argv[1]) != SQLITE_TEXT)
    return ext_result_msg(ctx, SQLITE_ERROR, "kg_import_jsonl", sqlite3_mprintf("text: expected the JSONL as text"));
  const char *text = (const char *)sqlite3_value_text(argv[1]);
  size_t len = (size_t)sqlite3_value_bytes(argv[1]);
  import im;
  memset(&im, 0, sizeof im);
  im.db = db;
  im.mt = mt;
  im.st = h5mem_store_handle(h5mem_table_ms(mt));
  /* all or nothing: a savepoint, unless a statement that writes is running
  ** (then that statement's own transaction holds the import) */
  int sp = sqlite3_exec(db, "SAVEPOINT kg_import_jsonl", NULL, NULL, NULL) == SQLITE_OK;
  int64_t bad_line = 0;
  int rc = import_run(&im, mt, text, len, &bad_line);
  sqlite3_finalize(im.ins_ent);
  sqlite3_finalize(im.ins_mem);
  sqlite3_finalize(im.ins_men);
  sqlite3_finalize(im.ins_rel);
  bmap_free(&im.names);
  bmap_free(&im.rels);
  bmap_free(&im.obs);
  bmap_free(&im.line);
  strbuf_free(&im.key);
  if (sp && rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK TO kg_import_jsonl", NULL, NULL, NULL);
  if (sp) {
    int r = sqlite3_exec(db, "RELEASE kg_import_jsonl", NULL, NULL, NULL);
    if (rc == SQLITE_OK && r != SQLITE_OK) {
      rc = r;
      im.err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    }
  }
  if (rc != SQLITE_OK) {
    if (bad_line && im.err) {
      char *m = sqlite3_mprintf("line %lld: %s", (long long)bad_line, im.err);
      sqlite3_free(im.err);
      im.err = m;
    }
    return ext_result_msg(ctx, rc, "kg_import_jsonl", im.err);
  }
  char *rep = sqlite3_mprintf("{\"lines\":%lld,\"entities\":%lld,\"entities_existing\":%lld,"
                              "\"relations\":%lld,\"relations_existing\":%lld,"
                              "\"observations\":%lld,\"observations_existing\":%lld}",
                              (long long)im.lines, (long long)im.n_ent, (long long)im.n_ent_old,
                              (long long)im.n_rel, (long long)im.n_rel_old, (long long)im.n_obs,
                              (long long)im.n_obs_old);
  if (!rep) return sqlite3_result_error_nomem(ctx);
  sqlite3_result_text(ctx, rep, -1, sqlite3_free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
}

/* ---- kg_export_jsonl ------------------------------------------------------------------ */

typedef struct pair {
  int64_t a, b;
} pair;

static int by_pair(const void *x, const void *y) {
  const pair *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  return p->b < q->b ? -1 : p->b > q->b;
}

/* (id, position) of the live records of table t, by id. */
static int live_by_id(store *st, int t, pair **out, size_t *n, char **err) {
  uint64_t np = store_g_npos(st, t);
  pair *v = sqlite3_malloc64(np * sizeof *v + 1);
  if (!v) return SQLITE_NOMEM;
  size_t k = 0;
  for (uint64_t p = 0; p < np; p++) {
    store_grec r;
    int gr = store_g_get(st, t, p, &r);
    if (gr == STORE_OK) v[k++] = (pair){r.id, (int64_t)p};
    else if (gr != STORE_ENOTFOUND) {
      sqlite3_free(v);
      return h5mem_store_err(st, gr, err);
    }
  }
  qsort(v, k, sizeof *v, by_pair);
  *out = v;
  *n = k;
  return SQLITE_OK;
}

/* The text of JSON string s, or "" for NULL. */
static void json_str(strbuf *sb, const char *s, size_t n) { strbuf_json_string(sb, s ? s : "", s ? n : 0); }

/* A record or text that cannot be read fails the export (with the
** store's code, the message in *err): only dead records are left out. */
static int export_graph(store *st, strbuf *sb, char **err) {
  pair *ent = NULL, *rel = NULL, *men = NULL;
  size_t nent = 0, nrel = 0, nmen = 0;
  int rc = live_by_id(st, STORE_G_ENTITY, &ent, &nent, err);
  if (rc == SQLITE_OK) rc = live_by_id(st, STORE_G_RELATION, &rel, &nrel, err);
  if (rc == SQLITE_OK) { /* (entity, memory) of each mention, sorted */
    rc = live_by_id(st, STORE_G_MENTION, &men, &nmen, err);
    for (size_t i = 0; i < nmen && rc == SQLITE_OK; i++) {
      store_grec r;
      store_g_get(st, STORE_G_MENTION, (uint64_t)men[i].b, &r);
      men[i] = (pair){r.b, r.a};
    }
    if (men) qsort(men, nmen, sizeof *men, by_pair);
  }
  size_t m = 0;
  for (size_t i = 0; i < nent && rc == SQLITE_OK; i++) {
    store_grec e;
    store_g_get(st, STORE_G_ENTITY, (uint64_t)ent[i].b, &e);
    strbuf_puts(sb, "{\"type\":\"entity\",\"name\":");
    json_str(sb, e.s[0], e.n[0]);
    strbuf_puts(sb, ",\"entityType\":");
    json_str(sb, e.s[1], e.n[1]);
    strbuf_puts(sb, ",\"observations\":[");
    while (m < nmen && men[m].a < e.id) m++;
    int first = 1;
    for (; m < nmen && men[m].a == e.id; m++) {
      uint64_t pos;
      store_view v;
      memset(&v, 0, sizeof v);
      int sr = store_find(st, men[m].b, &pos);
      if (sr == STORE_OK) sr = store_get(st, pos, STORE_V_TEXT, &v);
      if (sr == STORE_ENOTFOUND) continue; /* the memory is gone */
      if (sr != STORE_OK) {
        rc = h5mem_store_err(st, sr, err);
        break;
      }
      if (!v.text) continue;
      if (!first) strbuf_putc(sb, ',');
      first = 0;
      strbuf_json_string(sb, v.text, v.text_len);
    }
    strbuf_puts(sb, "]}\n");
  }
  for (size_t i = 0; i < nrel && rc == SQLITE_OK; i++) {
    store_grec r, a, b;
    store_g_get(st, STORE_G_RELATION, (uint64_t)rel[i].b, &r);
    if (graph_entity_get(st, r.a, &a) || graph_entity_get(st, r.b, &b)) continue; /* an end is gone */
    strbuf_puts(sb, "{\"type\":\"relation\",\"from\":");
    json_str(sb, a.s[0], a.n[0]);
    strbuf_puts(sb, ",\"to\":");
    json_str(sb, b.s[0], b.n[0]);
    strbuf_puts(sb, ",\"relationType\":");
    json_str(sb, r.s[1], r.n[1]);
    strbuf_puts(sb, "}\n");
  }
  sqlite3_free(ent);
  sqlite3_free(rel);
  sqlite3_free(men);
  return rc == SQLITE_OK && strbuf_failed(sb) ? SQLITE_NOMEM : rc;
}

/* kg_export_jsonl(store): entities by id (observations: the text of the
** memories that mention each, by memory id), then relations by id (those
** whose two ends are live), one JSON object a line. */
static void fn_export(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *mt = graph_fn_store(ctx, argv[0], "kg_export_jsonl");
  if (!mt) return;
  strbuf sb = {0};
  char *err = NULL;
  int rc = export_graph(h5mem_store_handle(h5mem_table_ms(mt)), &sb, &err);
  if (rc != SQLITE_OK) {
    strbuf_free(&sb);
    return ext_result_msg(ctx, rc, "kg_export_jsonl", err);
  }
  sqlite3_result_text64(ctx, sb.buf ? sb.buf : "", sb.len, SQLITE_TRANSIENT, SQLITE_UTF8);
  strbuf_free(&sb);
}

/* ---- registration ------------------------------------------------------------------ */

int graph_jsonl_register(sqlite3 *db, registry *reg) {
  int rc = SQLITE_OK;
  static const struct {
    const char *name;
    int nargs, flags;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
  } fns[] = {
      {"kg_import_jsonl", 2, SQLITE_DIRECTONLY, fn_import},
      {"kg_export_jsonl", 1, SQLITE_DIRECTONLY, fn_export}, /* all read or write a store */
  };
  for (size_t k = 0; k < sizeof fns / sizeof *fns && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_function(db, reg, fns[k].name, fns[k].nargs, fns[k].flags, fns[k].fn);
  }
  return rc;
}
