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
#include "util/jsstr.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "../kg_walk.h"
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

/* The report names the first lines left out, up to this many. */
#define IMPORT_SAY_LINES 100

/* Counts of what the import added, found, kept and adjusted. */
typedef struct import_counts {
  int64_t lines, ent, ent_old, rel, rel_old, obs, obs_old;
  int64_t dangling;     /* relations kept whose from or to names no entity */
  int64_t placeholders; /* entities made for those names (meta jsonl.placeholder) */
  int64_t kept;         /* strings with a lone surrogate or U+0000, kept in meta */
  int64_t invalid_utf8; /* ill-formed UTF-8 sequences read as U+FFFD */
  int64_t missing;      /* entityType, observations or relationType absent or null */
  int64_t ignored;      /* lines neither an entity nor a relation, left out */
} import_counts;

typedef struct import {
  sqlite3 *db;
  memvt *mt;
  store *st;
  sqlite3_stmt *ins_ent, *ins_mem, *ins_men, *ins_rel, *mv_src, *mv_dst, *del_ent;
  /* names and texts are JavaScript strings (JS-UTF-8, util/jsstr.h) */
  bmap first; /* name -> the lowest id of an entity of that name (relations' ends) */
  bmap nth;   /* name, NUL, k (8 bytes) -> the id of the k-th entity of that name in the store */
  bmap kseen; /* name -> how many entity lines gave it so far */
  bmap ph;    /* name -> its placeholder entity */
  bmap rels;  /* from, NUL, to, NUL, type -> how many such relations the store has */
  bmap rseen; /* the same -> how many relation lines gave it so far */
  bmap obs;   /* entity id, text: how many memories of that text mention it */
  bmap line;  /* text: how many times the entity line being read gives it so far */
  strbuf key, meta, form;
  strbuf ignored; /* the numbers of the first lines left out, comma-separated */
  int64_t entity; /* the entity whose observations are being added */
  char *err;
  import_counts n;
} import;

static void obs_key(strbuf *k, int64_t entity, const char *text, size_t n) {
  k->len = 0;
  strbuf_append(k, (const char *)&entity, 8);
  strbuf_append(k, text, n);
}

/* A relation's key: from, to and type (NULL differs from "") as the
** reference compares relations, by their ends' names. */
static void rel_key(strbuf *k, const char *from, size_t fn, const char *to, size_t tn, const char *type, size_t n) {
  k->len = 0;
  strbuf_append(k, from, fn);
  strbuf_putc(k, 0);
  strbuf_append(k, to, tn);
  strbuf_putc(k, 0);
  strbuf_putc(k, type ? 't' : 'n');
  if (type) strbuf_append(k, type, n);
}

static void nth_key(strbuf *k, const char *name, size_t n, int64_t nth) {
  k->len = 0;
  strbuf_append(k, name, n);
  strbuf_putc(k, 0);
  strbuf_append(k, (const char *)&nth, 8);
}

/* The JavaScript form of an entity's name (its meta may keep the original). */
static void ent_name(strbuf *out, const store_grec *e) {
  out->len = 0;
  util_js_kept(out, e->s[0] ? e->s[0] : "", e->s[0] ? e->n[0] : 0, e->s[3], e->s[3] ? e->n[3] : 0, "name");
}

static int64_t *bump(bmap *m, const char *k, size_t n) {
  int added;
  bent *e = bmap_add(m, k, n, &added);
  return e ? &e->v : NULL;
}

/* (id, position) of the live records of table t, by id. */
typedef struct pair {
  int64_t a, b;
} pair;

static int by_pair(const void *x, const void *y) {
  const pair *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  return p->b < q->b ? -1 : p->b > q->b;
}

/* Whether v (by .a then .b) is sorted already (then no sort is needed:
** records are appended in id order unless ids were given out of order). */
static int pairs_sorted(const pair *v, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (by_pair(&v[i - 1], &v[i]) > 0) return 0;
  return 1;
}

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
  if (!pairs_sorted(v, k)) qsort(v, k, sizeof *v, by_pair);
  *out = v;
  *n = k;
  return SQLITE_OK;
}

/* What the store holds already, read by kg_walk (the export's walk):
** entities by id (the k-th of a name is the k-th a file gives),
** placeholders, relations, observations. */
static int scan_entity(void *ctx, const store_grec *r) {
  import *im = ctx;
  int64_t *k;
  ent_name(&im->form, r);
  if (strbuf_failed(&im->form)) return SQLITE_NOMEM;
  if (util_js_placeholder(r->s[3], r->n[3]))
    return bmap_put(&im->ph, im->form.buf, im->form.len, r->id) < 0 ? SQLITE_NOMEM : SQLITE_OK;
  if (bmap_put(&im->first, im->form.buf, im->form.len, r->id) < 0 || !(k = bump(&im->kseen, im->form.buf, im->form.len)))
    return SQLITE_NOMEM;
  nth_key(&im->key, im->form.buf, im->form.len, (*k)++);
  return strbuf_failed(&im->key) || bmap_put(&im->nth, im->key.buf, im->key.len, r->id) < 0 ? SQLITE_NOMEM
                                                                                              : SQLITE_OK;
}

static int scan_observation(void *ctx, int64_t entity, int64_t memory, const store_view *v) {
  import *im = ctx;
  (void)memory;
  im->form.len = 0;
  util_js_kept(&im->form, v->text, v->text_len, v->meta, v->meta_len, "text");
  obs_key(&im->key, entity, im->form.buf, im->form.len);
  int64_t *k = strbuf_failed(&im->form) || strbuf_failed(&im->key) ? NULL : bump(&im->obs, im->key.buf, im->key.len);
  if (!k) return SQLITE_NOMEM;
  ++*k;
  return SQLITE_OK;
}

static int scan_relation(void *ctx, const store_grec *r, const store_grec *from, const store_grec *to) {
  import *im = ctx;
  strbuf t = {0}, type = {0};
  ent_name(&im->form, from);
  ent_name(&t, to);
  if (r->s[1]) util_js_kept(&type, r->s[1], r->n[1], r->s[3], r->n[3], "relationType");
  rel_key(&im->key, im->form.buf, im->form.len, t.buf, t.len, r->s[1] ? type.buf : NULL, type.len);
  int64_t *k = strbuf_failed(&im->key) || strbuf_failed(&t) || strbuf_failed(&type)
                   ? NULL : bump(&im->rels, im->key.buf, im->key.len);
  strbuf_free(&t);
  strbuf_free(&type);
  if (!k) return SQLITE_NOMEM;
  ++*k;
  return SQLITE_OK;
}

static int import_scan(import *im) {
  kg_walker w = {im, NULL, scan_entity, scan_observation, scan_relation, NULL};
  int rc = kg_walk(im->st, &w, &im->err);
  bmap_free(&im->kseen); /* (it counts the file's lines from here) */
  return rc;
}

/* s (JS-UTF-8) bound as text in its store form; its original, when that
** differs, kept in im->meta as member name. */
static int bind_js(import *im, sqlite3_stmt *st, int col, const char *s, size_t n, const char *name) {
  if (!s) return sqlite3_bind_null(st, col);
  if (!util_js_keep(&im->meta, name, s, n)) return sqlite3_bind_text64(st, col, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
  strbuf f = {0};
  util_js_to_utf8(&f, s, n);
  int rc = strbuf_failed(&f) ? SQLITE_NOMEM : sqlite3_bind_text64(st, col, f.buf, f.len, SQLITE_TRANSIENT, SQLITE_UTF8);
  strbuf_free(&f);
  im->n.kept++;
  return rc;
}

/* im->meta (closed) bound to col, or NULL when empty; emptied. */
static int bind_meta(import *im, sqlite3_stmt *st, int col) {
  if (!im->meta.len) return sqlite3_bind_null(st, col);
  util_js_meta_close(&im->meta);
  int rc = strbuf_failed(&im->meta) ? SQLITE_NOMEM
                                    : sqlite3_bind_text64(st, col, im->meta.buf, im->meta.len, SQLITE_TRANSIENT, SQLITE_UTF8);
  im->meta.len = 0;
  return rc;
}

/* One observation of im->entity: a memory (text, source 'mcp') that
** mentions it, unless the entity has that observation already as many
** times as the line gives it so far (a line repeating an observation
** keeps the repeats, as the MCP memory server does). */
static int import_obs(void *ctx, const char *s, size_t n) {
  import *im = ctx;
  int64_t *seen = bump(&im->line, s, n), *have;
  obs_key(&im->key, im->entity, s, n);
  if (!seen || strbuf_failed(&im->key) || !(have = bump(&im->obs, im->key.buf, im->key.len))) return SQLITE_NOMEM;
  if (*have >= ++*seen) {
    im->n.obs_old++;
    return SQLITE_OK;
  }
  ++*have;
  int64_t mid;
  int rc = graph_next_id(im->mt, -1, store_max_id(im->st), &mid, &im->err);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_int64(im->ins_mem, 1, mid);
  sqlite3_bind_text(im->ins_mem, 3, "mcp", 3, SQLITE_STATIC);
  if ((rc = bind_js(im, im->ins_mem, 2, s, n, "text")) || (rc = bind_meta(im, im->ins_mem, 4))) return rc;
  rc = graph_run_insert(im->db, im->ins_mem, &im->err);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(im->ins_men, 1, mid);
    sqlite3_bind_int64(im->ins_men, 2, im->entity);
    rc = graph_run_insert(im->db, im->ins_men, &im->err);
  }
  if (rc == SQLITE_OK) im->n.obs++;
  return rc;
}

/* A line (valid JSON, an object) and its strings decoded (JS-UTF-8) into
** buf, which has room for them all (len + 1 bytes: a decoded string, with
** its NUL, is shorter than its JSON form, and each member is decoded once). */
typedef struct jline {
  const char *s;
  size_t len;
  char *buf;
  size_t used;
} jline;

/* The type (UTIL_JSON_*) of member key of the line, -1 when it is not
** there; its span in *v0, *v1.  The last of a key given twice, as
** JSON.parse takes it; keys compare decoded. */
static int line_member(const jline *l, const char *key, size_t *v0, size_t *v1) {
  util_json_iter it;
  size_t kl = strlen(key), i = util_json_ws(l->s, 0, l->len);
  int found = -1;
  char kb[32];
  util_json_iter_init(&it, l->s, i, l->len);
  while (util_json_next(&it)) {
    size_t e = util_json_end(l->s, it.key, l->len), n;
    if (e - it.key > sizeof kb) continue; /* (longer than any key sought) */
    util_json_string_js(l->s, it.key, l->len, kb, &n);
    if (n != kl || memcmp(kb, key, kl)) continue;
    *v0 = it.v0;
    *v1 = it.v1;
    found = util_json_type(l->s, it.v0, l->len);
  }
  return found;
}

/* The string at l->s[v0] decoded into l->buf (NUL-terminated). */
static const char *line_text(jline *l, size_t v0, size_t v1, size_t *n) {
  if (l->used + (v1 - v0) > l->len + 1) return NULL; /* (not with each member decoded once) */
  char *out = l->buf + l->used;
  util_json_string_js(l->s, v0, l->len, out, n);
  out[*n] = 0;
  l->used += *n + 1;
  return out;
}

/* A string member that must be there (or, optional, may be absent or
** null: counted as missing): its text into *s (NULL when absent). */
static int member(import *im, jline *l, const char *name, int optional, const char **s, size_t *n) {
  size_t v0, v1;
  int t = line_member(l, name, &v0, &v1);
  *s = NULL;
  *n = 0;
  if ((t < 0 || t == UTIL_JSON_NULL) && optional) {
    im->n.missing++;
    return SQLITE_OK;
  }
  if (t != UTIL_JSON_TEXT) {
    im->err = sqlite3_mprintf("\"%s\" must be a string%s", name, optional ? " or null" : "");
    return SQLITE_ERROR;
  }
  *s = line_text(l, v0, v1, n);
  return *s ? SQLITE_OK : SQLITE_NOMEM;
}

/* The entity a relation end names: the first entity of that name, else
** its placeholder (made when there is none). */
static int rel_end(import *im, const char *name, size_t n, int64_t *id, int *dangling) {
  if (bmap_get(&im->first, name, n, id)) return SQLITE_OK;
  *dangling = 1;
  if (bmap_get(&im->ph, name, n, id) && *id >= 0) return SQLITE_OK;
  int rc = graph_next_id(im->mt, 0, store_g_max_id(im->st, STORE_G_ENTITY), id, &im->err);
  if (rc) return rc;
  sqlite3_bind_int64(im->ins_ent, 1, *id);
  strbuf_puts(&im->meta, UTIL_JS_META_PLACEHOLDER);
  if ((rc = bind_js(im, im->ins_ent, 2, name, n, "name")) || (rc = bind_meta(im, im->ins_ent, 4)) ||
      (rc = graph_run_insert(im->db, im->ins_ent, &im->err)))
    return rc;
  im->n.placeholders++;
  return bmap_put(&im->ph, name, n, *id) < 0 ? SQLITE_NOMEM : SQLITE_OK;
}

/* A new entity of a name that a placeholder stood for: the placeholder's
** relations move to it and the placeholder goes. */
static int take_placeholder(import *im, const char *name, size_t n, int64_t id) {
  int64_t ph;
  if (!bmap_get(&im->ph, name, n, &ph) || ph < 0) return SQLITE_OK;
  sqlite3_stmt *sts[] = {im->mv_src, im->mv_dst, im->del_ent};
  int rc = SQLITE_OK;
  for (int k = 0; k < 3 && rc == SQLITE_OK; k++) {
    sqlite3_bind_int64(sts[k], 1, ph);
    if (k < 2) sqlite3_bind_int64(sts[k], 2, id);
    rc = graph_run_insert(im->db, sts[k], &im->err);
  }
  return rc == SQLITE_OK && bmap_put(&im->ph, name, n, -1) < 0 ? SQLITE_NOMEM : rc; /* (-1: gone) */
}

static int import_entity(import *im, jline *l) {
  const char *name, *etype;
  size_t nn, tn, v0, v1;
  int64_t id, *k;
  int rc;
  if ((rc = member(im, l, "name", 0, &name, &nn)) || (rc = member(im, l, "entityType", 1, &etype, &tn))) return rc;
  int ot = line_member(l, "observations", &v0, &v1);
  if (ot >= 0 && ot != UTIL_JSON_NULL && ot != UTIL_JSON_ARRAY) {
    im->err = sqlite3_mprintf("\"observations\" must be an array of strings");
    return SQLITE_ERROR;
  }
  if (!(k = bump(&im->kseen, name, nn))) return SQLITE_NOMEM;
  nth_key(&im->key, name, nn, (*k)++);
  if (strbuf_failed(&im->key)) return SQLITE_NOMEM;
  if (bmap_get(&im->nth, im->key.buf, im->key.len, &id)) { /* the store's k-th entity of the name */
    im->n.ent_old++;
  } else {
    if ((rc = graph_next_id(im->mt, 0, store_g_max_id(im->st, STORE_G_ENTITY), &id, &im->err))) return rc;
    sqlite3_bind_int64(im->ins_ent, 1, id);
    if ((rc = bind_js(im, im->ins_ent, 2, name, nn, "name")) ||
        (rc = bind_js(im, im->ins_ent, 3, etype, tn, "entityType")) || (rc = bind_meta(im, im->ins_ent, 4)) ||
        (rc = graph_run_insert(im->db, im->ins_ent, &im->err)))
      return rc;
    im->n.ent++;
    int first = bmap_put(&im->first, name, nn, id);
    if (first < 0) return SQLITE_NOMEM;
    if (first && (rc = take_placeholder(im, name, nn, id))) return rc;
  }
  if (ot != UTIL_JSON_ARRAY) {
    im->n.missing++;
    return SQLITE_OK;
  }
  char e[200];
  im->entity = id;
  bmap_free(&im->line); /* (counts per line) */
  int r = util_json_strings_js(l->s + v0, v1 - v0, import_obs, im, e, sizeof e);
  if (r == UTIL_EINVAL) {
    im->err = sqlite3_mprintf("\"observations\" must be an array of strings");
    return SQLITE_ERROR;
  }
  return r == UTIL_ENOMEM ? SQLITE_NOMEM : r;
}

static int import_relation(import *im, jline *l) {
  const char *from, *to, *rtype;
  size_t fn, tn, rn;
  int64_t src, dst, *have, *seen;
  int rc, dangling = 0;
  if ((rc = member(im, l, "from", 0, &from, &fn)) || (rc = member(im, l, "to", 0, &to, &tn)) ||
      (rc = member(im, l, "relationType", 1, &rtype, &rn)))
    return rc;
  rel_key(&im->key, from, fn, to, tn, rtype, rn);
  if (strbuf_failed(&im->key) || !(have = bump(&im->rels, im->key.buf, im->key.len)) ||
      !(seen = bump(&im->rseen, im->key.buf, im->key.len)))
    return SQLITE_NOMEM;
  if (*have >= ++*seen) { /* the store has it as many times as the file so far */
    im->n.rel_old++;
    return SQLITE_OK;
  }
  ++*have;
  if ((rc = rel_end(im, from, fn, &src, &dangling)) || (rc = rel_end(im, to, tn, &dst, &dangling))) return rc;
  sqlite3_bind_int64(im->ins_rel, 1, src);
  sqlite3_bind_int64(im->ins_rel, 2, dst);
  if ((rc = bind_js(im, im->ins_rel, 3, rtype, rn, "relationType")) || (rc = bind_meta(im, im->ins_rel, 4)) ||
      (rc = graph_run_insert(im->db, im->ins_rel, &im->err)))
    return rc;
  im->n.rel++;
  im->n.dangling += dangling;
  return SQLITE_OK;
}

/* Whether s[0..n) is all white space as JavaScript's trim() sees it (the
** reference skips such lines): ASCII \t..\r and space, U+00A0, U+1680,
** U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF. */
static int js_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    if (c == ' ' || (c >= '\t' && c <= '\r')) {
      i++;
      continue;
    }
    int ok;
    size_t k = util_utf8_span((const unsigned char *)s + i, n - i, &ok);
    unsigned long cp = 0;
    if (ok && k == 2) cp = (c & 0x1Ful) << 6 | ((unsigned char)s[i + 1] & 0x3Ful);
    else if (ok && k == 3)
      cp = (c & 0x0Ful) << 12 | ((unsigned char)s[i + 1] & 0x3Ful) << 6 | ((unsigned char)s[i + 2] & 0x3Ful);
    if (!(cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
          cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0xFEFF))
      return 0;
    i += k;
  }
  return 1;
}

/* One line, in pass 1 (entities) or 2 (relations); *ignored when it is
** neither an entity nor a relation (left out, as the reference does). */
static int import_line(import *im, const char *line, size_t len, int pass, int *ignored) {
  char verr[200];
  if (util_json_valid_js(line, len, verr, sizeof verr)) {
    im->err = sqlite3_mprintf("malformed JSON: %s", verr);
    return SQLITE_ERROR;
  }
  jline l = {line, len, NULL, 0};
  size_t v0, v1, tn;
  const char *type = NULL;
  if (util_json_type(line, util_json_ws(line, 0, len), len) == UTIL_JSON_OBJECT) {
    if (!(l.buf = sqlite3_malloc64(len + 1))) return SQLITE_NOMEM;
    if (line_member(&l, "type", &v0, &v1) == UTIL_JSON_TEXT) type = line_text(&l, v0, v1, &tn);
  }
  int rc = SQLITE_OK, entity = type && !strcmp(type, "entity"), relation = type && !strcmp(type, "relation");
  *ignored = !entity && !relation;
  if (entity && pass == 1) rc = import_entity(im, &l);
  else if (relation && pass == 2) rc = import_relation(im, &l);
  sqlite3_free(l.buf);
  return rc;
}

/* Both passes over the lines: entities (and their observations) first, so
** that relations may name entities of later lines. */
static int import_run(import *im, memvt *mt, const char *text, size_t len, int64_t *bad_line) {
  int rc;
  if ((rc = graph_companion_insert(im->db, mt, 0, "id, name, type, meta", 4, &im->ins_ent, &im->err)) ||
      (rc = graph_companion_insert(im->db, mt, 1, "src, dst, type, meta", 4, &im->ins_rel, &im->err)) ||
      (rc = graph_companion_insert(im->db, mt, 2, "memory_id, entity_id", 2, &im->ins_men, &im->err)))
    return rc;
  const char *sch = h5mem_table_schema(mt), *tab = h5mem_table_name(mt);
  char *sql[4] = {
      sqlite3_mprintf("INSERT INTO \"%w\".\"%w\"(id, text, source, meta) VALUES (?1, ?2, ?3, ?4)", sch, tab),
      sqlite3_mprintf("UPDATE \"%w\".\"%w_relations\" SET src = ?2 WHERE src = ?1", sch, tab),
      sqlite3_mprintf("UPDATE \"%w\".\"%w_relations\" SET dst = ?2 WHERE dst = ?1", sch, tab),
      sqlite3_mprintf("DELETE FROM \"%w\".\"%w_entities\" WHERE id = ?1", sch, tab)};
  sqlite3_stmt **sts[4] = {&im->ins_mem, &im->mv_src, &im->mv_dst, &im->del_ent};
  for (int k = 0; k < 4; k++) {
    if (rc == SQLITE_OK) rc = sql[k] ? sqlite3_prepare_v2(im->db, sql[k], -1, sts[k], NULL) : SQLITE_NOMEM;
    sqlite3_free(sql[k]);
  }
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
      ln++;
      if (!js_blank(text + i, e - i)) {
        int ignored;
        if (pass == 1) im->n.lines++;
        rc = import_line(im, text + i, e - i, pass, &ignored);
        if (rc != SQLITE_OK) *bad_line = ln;
        else if (ignored && pass == 1 && im->n.ignored++ < IMPORT_SAY_LINES)
          strbuf_printf(&im->ignored, "%s%lld", im->ignored.len ? "," : "", (long long)ln);
      }
      i = e + 1;
    }
  }
  return rc;
}

/* kg_import_jsonl(store, text): the MCP memory server's JSONL (lines
** {"type":"entity","name","entityType","observations"} and
** {"type":"relation","from","to","relationType"}) into the store, all or
** nothing, as that server reads it (docs/SQL.md); a JSON report of what
** was added, what was there already, and what was adjusted. */
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
  /* ill-formed UTF-8 is read as the reference reads its file (Node's
     UTF-8 decoder): each maximal ill-formed subpart one U+FFFD */
  strbuf fixed = {0};
  if (util_utf8_check(text, len, 1) != len) {
    im.n.invalid_utf8 = (int64_t)util_utf8_repair(&fixed, text, len);
    if (strbuf_failed(&fixed)) {
      strbuf_free(&fixed);
      return sqlite3_result_error_nomem(ctx);
    }
    text = fixed.buf;
    len = fixed.len;
  }
  /* all or nothing: a savepoint, unless a statement that writes is running
  ** (then that statement's own transaction holds the import) */
  int sp = sqlite3_exec(db, "SAVEPOINT kg_import_jsonl", NULL, NULL, NULL) == SQLITE_OK;
  int64_t bad_line = 0;
  int rc = import_run(&im, mt, text, len, &bad_line);
  sqlite3_stmt *sts[] = {im.ins_ent, im.ins_mem, im.ins_men, im.ins_rel, im.mv_src, im.mv_dst, im.del_ent};
  for (size_t k = 0; k < sizeof sts / sizeof *sts; k++) sqlite3_finalize(sts[k]);
  bmap *maps[] = {&im.first, &im.nth, &im.kseen, &im.ph, &im.rels, &im.rseen, &im.obs, &im.line};
  for (size_t k = 0; k < sizeof maps / sizeof *maps; k++) bmap_free(maps[k]);
  strbuf_free(&im.key);
  strbuf_free(&im.meta);
  strbuf_free(&im.form);
  strbuf_free(&fixed);
  if (sp && rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK TO kg_import_jsonl", NULL, NULL, NULL);
  if (sp) {
    int r = sqlite3_exec(db, "RELEASE kg_import_jsonl", NULL, NULL, NULL);
    if (rc == SQLITE_OK && r != SQLITE_OK) {
      rc = r;
      im.err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    }
  }
  if (rc == SQLITE_OK && strbuf_failed(&im.ignored)) rc = SQLITE_NOMEM;
  if (rc != SQLITE_OK) {
    strbuf_free(&im.ignored);
    if (bad_line && im.err) {
      char *m = sqlite3_mprintf("line %lld: %s", (long long)bad_line, im.err);
      sqlite3_free(im.err);
      im.err = m;
    }
    return ext_result_msg(ctx, rc, "kg_import_jsonl", im.err);
  }
  const import_counts *c = &im.n;
  char *rep = sqlite3_mprintf("{\"lines\":%lld,\"entities\":%lld,\"entities_existing\":%lld,"
                              "\"relations\":%lld,\"relations_existing\":%lld,"
                              "\"observations\":%lld,\"observations_existing\":%lld,"
                              "\"dangling_relations\":%lld,\"placeholders\":%lld,"
                              "\"adjusted\":{\"lines_ignored\":%lld,\"ignored_lines\":[%s],\"strings_kept_in_meta\":%lld,"
                              "\"invalid_utf8\":%lld,\"members_missing\":%lld}}",
                              (long long)c->lines, (long long)c->ent, (long long)c->ent_old, (long long)c->rel,
                              (long long)c->rel_old, (long long)c->obs, (long long)c->obs_old,
                              (long long)c->dangling, (long long)c->placeholders, (long long)c->ignored,
                              im.ignored.buf ? im.ignored.buf : "", (long long)c->kept,
                              (long long)c->invalid_utf8, (long long)c->missing);
  strbuf_free(&im.ignored);
  if (!rep) return sqlite3_result_error_nomem(ctx);
  sqlite3_result_text(ctx, rep, -1, sqlite3_free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
}

/* ---- walking the graph: the export, and h5mem-mcp through h5mem_kg_walk ---------- */

int kg_walk(store *st, const kg_walker *w, char **err) {
  pair *ent = NULL, *rel = NULL, *men = NULL;
  size_t nent = 0, nrel = 0, nmen = 0;
  int rc = live_by_id(st, STORE_G_ENTITY, &ent, &nent, err);
  if (rc == SQLITE_OK) rc = live_by_id(st, STORE_G_RELATION, &rel, &nrel, err);
  if (rc == SQLITE_OK) { /* (entity, memory) of each mention, sorted */
    uint64_t np = store_g_npos(st, STORE_G_MENTION);
    men = sqlite3_malloc64(np * sizeof *men + 1);
    if (!men) rc = SQLITE_NOMEM;
    for (uint64_t p = 0; p < np && rc == SQLITE_OK; p++) {
      store_grec r;
      int gr = store_g_get(st, STORE_G_MENTION, p, &r);
      if (gr == STORE_OK) men[nmen++] = (pair){r.b, r.a};
      else if (gr != STORE_ENOTFOUND) rc = h5mem_store_err(st, gr, err);
    }
    if (rc == SQLITE_OK && !pairs_sorted(men, nmen)) qsort(men, nmen, sizeof *men, by_pair);
  }
  if (rc == SQLITE_OK && w->begin) rc = w->begin(w->ctx, nent, nrel, nmen);
  size_t m = 0;
  for (size_t i = 0; i < nent && rc == SQLITE_OK; i++) {
    store_grec e;
    store_g_get(st, STORE_G_ENTITY, (uint64_t)ent[i].b, &e);
    if ((rc = w->entity(w->ctx, &e)) != SQLITE_OK) break;
    while (m < nmen && men[m].a < e.id) m++;
    for (; m < nmen && men[m].a == e.id && rc == SQLITE_OK; m++) {
      uint64_t pos;
      store_view v;
      memset(&v, 0, sizeof v);
      int sr = store_find(st, men[m].b, &pos);
      if (sr == STORE_OK) sr = store_get(st, pos, STORE_V_TEXT | STORE_V_META, &v);
      if (sr == STORE_ENOTFOUND) continue; /* the memory is gone */
      if (sr != STORE_OK) rc = h5mem_store_err(st, sr, err);
      else if (v.text) rc = w->observation(w->ctx, e.id, men[m].b, &v);
    }
  }
  for (size_t i = 0; i < nrel && rc == SQLITE_OK; i++) {
    store_grec r, a, b;
    store_g_get(st, STORE_G_RELATION, (uint64_t)rel[i].b, &r);
    if (graph_entity_get(st, r.a, &a) || graph_entity_get(st, r.b, &b)) continue; /* an end is gone */
    rc = w->relation(w->ctx, &r, &a, &b);
  }
  sqlite3_free(ent);
  sqlite3_free(rel);
  sqlite3_free(men);
  if (rc != SQLITE_OK && !*err && w->err) *err = w->err(w->ctx);
  return rc;
}

/* h5mem_kg_walk(store, walker): kg_walk for a C caller, the walker passed
** as a pointer (sqlite3_bind_pointer, type "h5mem_kg_walker"): h5mem-mcp
** reads the graph so.  From SQL the pointer is NULL: an error. */
static void fn_walk(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *mt = graph_fn_store(ctx, argv[0], "h5mem_kg_walk");
  if (!mt) return;
  const kg_walker *w = sqlite3_value_pointer(argv[1], "h5mem_kg_walker");
  if (!w)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_kg_walk",
                          sqlite3_mprintf("walker: a kg_walker pointer (sqlite3_bind_pointer) from C"));
  char *err = NULL;
  int rc = kg_walk(h5mem_store_handle(h5mem_table_ms(mt)), w, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_kg_walk", err);
  sqlite3_result_null(ctx);
}

/* h5mem_store_state(store, key): store_state_key_get for a C caller, the
** key passed as a pointer (kg_walk.h); from SQL the pointer is NULL: an
** error. */
static void fn_state(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *mt = graph_fn_store(ctx, argv[0], "h5mem_store_state");
  if (!mt) return;
  store_state_key *k = sqlite3_value_pointer(argv[1], "h5mem_store_state_key");
  if (!k)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_store_state",
                          sqlite3_mprintf("key: a store_state_key pointer (sqlite3_bind_pointer) from C"));
  store_state_key_get(h5mem_store_handle(h5mem_table_ms(mt)), k);
  sqlite3_result_null(ctx);
}

/* ---- kg_export_jsonl ------------------------------------------------------------------ */

typedef struct exporter {
  strbuf *sb, tmp;
  int open; /* an entity's line is open (its observations being written) */
  int nobs; /* its observations so far */
} exporter;

/* JSON.stringify of a string the store keeps (NULL: ""), its original
** taken from meta when meta keeps one for field. */
static void put_kept(exporter *x, const char *s, size_t n, const char *meta, size_t mn, const char *field) {
  x->tmp.len = 0;
  if (s) util_js_kept(&x->tmp, s, n, meta, mn, field);
  util_js_stringify(x->sb, x->tmp.buf ? x->tmp.buf : "", x->tmp.len);
}

static void close_entity(exporter *x) {
  if (x->open) strbuf_puts(x->sb, "]}");
  x->open = 0;
}

/* A new line: the open entity's closed, and "\n" before each line but the
** first, as the reference joins its lines. */
static void next_line(exporter *x) {
  close_entity(x);
  if (x->sb->len) strbuf_putc(x->sb, '\n');
}

static int ex_entity(void *ctx, const store_grec *e) {
  exporter *x = ctx;
  if (util_js_placeholder(e->s[3], e->n[3])) { /* (a name only relations use: no line) */
    close_entity(x);
    return SQLITE_OK;
  }
  next_line(x);
  strbuf_puts(x->sb, "{\"type\":\"entity\",\"name\":");
  put_kept(x, e->s[0], e->n[0], e->s[3], e->n[3], "name");
  strbuf_puts(x->sb, ",\"entityType\":");
  put_kept(x, e->s[1], e->n[1], e->s[3], e->n[3], "entityType");
  strbuf_puts(x->sb, ",\"observations\":[");
  x->open = 1;
  x->nobs = 0;
  return SQLITE_OK;
}

static int ex_observation(void *ctx, int64_t entity, int64_t memory, const store_view *v) {
  exporter *x = ctx;
  (void)entity, (void)memory;
  if (!x->open) return SQLITE_OK; /* (a placeholder's) */
  if (x->nobs++) strbuf_putc(x->sb, ',');
  put_kept(x, v->text, v->text_len, v->meta, v->meta_len, "text");
  return SQLITE_OK;
}

static int ex_relation(void *ctx, const store_grec *r, const store_grec *a, const store_grec *b) {
  exporter *x = ctx;
  next_line(x);
  strbuf_puts(x->sb, "{\"type\":\"relation\",\"from\":");
  put_kept(x, a->s[0], a->n[0], a->s[3], a->n[3], "name");
  strbuf_puts(x->sb, ",\"to\":");
  put_kept(x, b->s[0], b->n[0], b->s[3], b->n[3], "name");
  strbuf_puts(x->sb, ",\"relationType\":");
  put_kept(x, r->s[1], r->n[1], r->s[3], r->n[3], "relationType");
  strbuf_putc(x->sb, '}');
  return SQLITE_OK;
}

/* A record or text that cannot be read fails the export (with the
** store's code, the message in *err): only dead records are left out. */
static int export_graph(store *st, strbuf *sb, char **err) {
  exporter x = {sb, {0}, 0, 0};
  kg_walker w = {&x, NULL, ex_entity, ex_observation, ex_relation, NULL};
  int rc = kg_walk(st, &w, err);
  close_entity(&x);
  if (rc == SQLITE_OK && (strbuf_failed(&x.tmp) || strbuf_failed(sb))) rc = SQLITE_NOMEM;
  strbuf_free(&x.tmp);
  return rc;
}

/* kg_export_jsonl(store): the graph as the MCP memory server writes its
** file: entities by id (observations: the text of the memories that
** mention each, by memory id), then relations by id (those whose two ends
** are live), one JSON object a line, lines joined by "\n" (none after the
** last), strings as JSON.stringify writes them (docs/SQL.md). */
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
      {"h5mem_kg_walk", 2, SQLITE_DIRECTONLY, fn_walk},
      {"h5mem_store_state", 2, SQLITE_DIRECTONLY, fn_state},
  };
  for (size_t k = 0; k < sizeof fns / sizeof *fns && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_function(db, reg, fns[k].name, fns[k].nargs, fns[k].flags, fns[k].fn);
  }
  return rc;
}
