/*
** mcp/mcp_graph.c - the reference memory server's tools on the store's
** knowledge graph (mcp.h).
**
** The reference keeps entities {name, entityType, observations[]} and
** relations {from, to, relationType} in a JSONL file; here an entity is a
** row of <t>_entities, each observation a memory of <t> (source 'mcp')
** that mentions it (<t>_mentions), and a relation a row of <t>_relations,
** as kg_import_jsonl maps the file.  Each tool does what the reference's
** does (its semantics, in order, with its quirks: create_entities and
** create_relations compare with the graph as it was before the call, not
** within the call), in one transaction: a call that fails changes nothing.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"
#include "ext/kg_walk.h"
#include "mcp_image.h"
#include "mcp_kept.h"
#include "util/json.h"
#include "util/jsstr.h"

/* sql with {T}, {E}, {R}, {M} replaced by the quoted names of the table
** and its entities, relations and mentions tables, {N} by the table's name
** as a string literal (sqlite3_malloc'd). */
static char *sql_for(const mcp *m, const char *sql) {
  sqlite3_str *q = sqlite3_str_new(m->db);
  for (const char *p = sql; *p; p++) {
    if (p[0] == '{' && p[1] == 'N' && p[2] == '}') {
      sqlite3_str_appendf(q, "%Q", m->table);
      p += 2;
    } else if (p[0] == '{' && p[1] && p[2] == '}' && strchr("TERM", p[1])) {
      const char *suffix = p[1] == 'E' ? "_entities" : p[1] == 'R' ? "_relations" : p[1] == 'M' ? "_mentions" : "";
      sqlite3_str_appendf(q, "\"%w%w\"", m->table, suffix);
      p += 2;
    } else {
      sqlite3_str_appendchar(q, 1, *p);
    }
  }
  return sqlite3_str_finish(q);
}

int mcp_prepare(mcp *m, sqlite3_stmt **st, mcp_out *o, const char *sql) {
  char *q = sql_for(m, sql);
  int rc = q ? sqlite3_prepare_v2(m->db, q, -1, st, NULL) : SQLITE_NOMEM;
  sqlite3_free(q);
  if (rc) mcp_out_error(o, "%s", sqlite3_errmsg(m->db));
  return rc;
}

static int nomem(mcp_out *o) {
  mcp_out_error(o, "out of memory");
  return SQLITE_NOMEM;
}

static gent *ent_by_name(graph *g, const char *name) { return kept_named(g, name, 0); }

/* ---- JSON out -------------------------------------------------------------- */

static void put_str(strbuf *b, const char *s) { util_js_stringify(b, s, strlen(s)); }

void mcp_put_entity(strbuf *b, const char *name, const char *type, char *const *obs, size_t n) {
  strbuf_puts(b, "{\"name\":");
  put_str(b, name);
  strbuf_puts(b, ",\"entityType\":");
  put_str(b, type);
  strbuf_puts(b, ",\"observations\":[");
  for (size_t k = 0; k < n; k++) {
    if (k) strbuf_putc(b, ',');
    put_str(b, obs[k]);
  }
  strbuf_puts(b, "]}");
}

void mcp_put_relation(strbuf *b, const char *from, const char *to, const char *type) {
  strbuf_puts(b, "{\"from\":");
  put_str(b, from);
  strbuf_puts(b, ",\"to\":");
  put_str(b, to);
  strbuf_puts(b, ",\"relationType\":");
  put_str(b, type);
  strbuf_putc(b, '}');
}

/* {"entities": [...], "relations": [...]}: the entities with keep[i] set,
** and the relations with an end named as one of them (all of them: keep
** NULL).  keep has room for the names' marks (2 bits an entity). */
static void put_graph(strbuf *b, graph *g, uint8_t *keep) {
  for (size_t i = 0; keep && i < g->ne; i++)
    if (keep[i] & 1) keep[g->e[i].canon] |= 2;
  strbuf_puts(b, "{\"entities\":[");
  int first = 1;
  for (size_t i = 0; i < g->ne; i++) {
    if ((keep && !(keep[i] & 1)) || g->e[i].placeholder) continue;
    if (!first) strbuf_putc(b, ',');
    first = 0;
    mcp_put_entity(b, g->e[i].name, g->e[i].type, g->e[i].obs, g->e[i].nobs);
  }
  strbuf_puts(b, "],\"relations\":[");
  first = 1;
  for (size_t i = 0; i < g->nr; i++) {
    const grel *r = &g->r[i];
    if (keep && !(keep[g->e[r->a].canon] & 2) && !(keep[g->e[r->b].canon] & 2)) continue;
    if (!first) strbuf_putc(b, ',');
    first = 0;
    mcp_put_relation(b, g->e[r->a].name, g->e[r->b].name, r->type);
  }
  strbuf_puts(b, "]}");
}

/* ---- arguments -------------------------------------------------------------- */

/* The array member key of args, iterated into it; a message otherwise (as
** the reference's validation says it). */
static int arg_array(const char *tool, const char *args, size_t n, const char *key, util_json_iter *it, mcp_out *o) {
  size_t v0, v1;
  if (mcp_member(args, n, key, &v0, &v1) || util_json_type(args, v0, v1) != UTIL_JSON_ARRAY) {
    mcp_bad_arg(o, tool, NULL, key, "array");
    return -1;
  }
  util_json_iter_init(it, args, v0, v1);
  return 0;
}

/* Member key of the object at s[v0..v1) as a string (malloc'd), or NULL
** with the validation message (path: where the object is). */
static char *item_str(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                      mcp_out *o) {
  size_t a, b;
  int is = 0;
  char *v = util_json_type(s, v0, v1) == UTIL_JSON_OBJECT && !mcp_member(s + v0, v1 - v0, key, &a, &b)
                ? mcp_jstr(s + v0, a, b, &is) : NULL;
  if (!v && !o->error) mcp_bad_arg(o, tool, path, key, "string");
  return v;
}

/* The relation at it (item idx of the array "relations"): its from, to
** and relationType (malloc'd), 0; -1 with the validation message. */
static int relation_item(const char *tool, const char *args, const util_json_iter *it, size_t idx, char **from,
                         char **to, char **type, mcp_out *o) {
  char path[48];
  snprintf(path, sizeof path, "relations[%zu]", idx);
  *from = item_str(tool, args, it->v0, it->v1, "from", path, o);
  *to = *from ? item_str(tool, args, it->v0, it->v1, "to", path, o) : NULL;
  *type = *to ? item_str(tool, args, it->v0, it->v1, "relationType", path, o) : NULL;
  return *type ? 0 : -1;
}

/* ---- writing (mcp.h) ------------------------------------------------------------ */

int mcp_exec(mcp *m, mcp_out *o, const char *sql) {
  char *err = NULL;
  int rc = sqlite3_exec(m->db, sql, NULL, NULL, &err);
  if (rc) mcp_out_error(o, "%s", err ? err : sqlite3_errstr(rc));
  sqlite3_free(err);
  return rc;
}

/* One statement (sql_for's names) with text and integer arguments (each
** "s" or "i" in kinds). */
int mcp_run(mcp *m, mcp_out *o, int64_t *rowid, const char *kinds, const char *sql, ...) {
  sqlite3_stmt *st;
  int rc = mcp_prepare(m, &st, o, sql);
  if (rc) return rc;
  va_list ap;
  va_start(ap, sql);
  for (int i = 0; kinds[i]; i++) {
    if (kinds[i] == 's') sqlite3_bind_text(st, i + 1, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
    else sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
  }
  va_end(ap);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc) mcp_out_error(o, "%s", sqlite3_errmsg(m->db));
  else if (rowid) *rowid = sqlite3_last_insert_rowid(m->db);
  sqlite3_finalize(st);
  return rc;
}

/* s (a JavaScript string) in the store's form (malloc'd), its original
** kept in *meta when that differs (util_js_keep). */
static char *stored(strbuf *meta, const char *field, const char *s) {
  size_t n = strlen(s);
  strbuf f = {0};
  strbuf_putc(&f, 0);
  f.len = 0;
  util_js_keep(meta, field, s, n);
  util_js_to_utf8(&f, s, n);
  if (!strbuf_failed(&f)) return f.buf;
  strbuf_free(&f);
  return NULL;
}

/* A row of {E} (a placeholder with ph); its id in *id. */
static int insert_entity(mcp *m, mcp_out *o, const char *name, const char *type, int ph, int64_t *id) {
  strbuf meta = {0};
  if (ph) strbuf_puts(&meta, UTIL_JS_META_PLACEHOLDER);
  char *n = stored(&meta, "name", name), *t = type ? stored(&meta, "entityType", type) : NULL;
  util_js_meta_close(&meta);
  int rc = !n || (type && !t) || strbuf_failed(&meta)
               ? nomem(o)
               : mcp_run(m, o, id, "sss", "INSERT INTO {E}(name, type, meta) VALUES (?1, ?2, ?3)", n, t, meta.buf);
  free(n);
  free(t);
  strbuf_free(&meta);
  return rc;
}

static int add_obs(mcp *m, mcp_out *o, int64_t eid, const char *text) {
  strbuf meta = {0};
  char *t = stored(&meta, "text", text);
  util_js_meta_close(&meta);
  int64_t mid;
  int rc = !t || strbuf_failed(&meta)
               ? nomem(o)
               : mcp_run(m, o, &mid, "ss", "INSERT INTO {T}(text, source, meta) VALUES (?1, 'mcp', ?2)", t, meta.buf);
  if (!rc) rc = mcp_run(m, o, NULL, "ii", "INSERT INTO {M}(memory_id, entity_id) VALUES (?1, ?2)", mid, eid);
  free(t);
  strbuf_free(&meta);
  return rc;
}

/* Observation k of entity e let go: its mention of the memory, and the
** memory itself when the graph tools made it (source 'mcp') and no other
** entity mentions it; memories remember made stay. */
static int drop_obs(mcp *m, mcp_out *o, const gent *e, size_t k) {
  int rc = mcp_run(m, o, NULL, "ii", "DELETE FROM {M} WHERE entity_id = ?1 AND memory_id = ?2", e->id, e->mid[k]);
  if (!rc)
    rc = mcp_run(m, o, NULL, "i",
             "DELETE FROM {T} WHERE id = ?1 AND source = 'mcp' AND NOT EXISTS "
             "(SELECT 1 FROM {M} WHERE memory_id = ?1)", e->mid[k]);
  return rc;
}

/* The placeholders no relation uses any more (after relations went) go. */
static int drop_orphans(mcp *m, graph *g, mcp_out *o) {
  uint8_t *used = calloc(g->ne + 1, 1);
  if (!used) return nomem(o);
  for (size_t i = 0; i < g->nr; i++)
    if (!g->r[i].gone) used[g->r[i].a] = used[g->r[i].b] = 1;
  int rc = 0;
  for (size_t i = 0; i < g->ne && !rc; i++)
    if (g->e[i].placeholder == 1 && !used[i]) {
      rc = mcp_run(m, o, NULL, "i", "DELETE FROM {E} WHERE id = ?1", g->e[i].id);
      g->e[i].placeholder = 2; /* (gone) */
    }
  free(used);
  return rc;
}

/* ---- the tools ------------------------------------------------------------------ */

static int t_create_entities(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  util_json_iter it;
  if (arg_array("create_entities", args, n, "entities", &it, o)) return -1;
  strbuf_puts(&o->result, "{\"entities\":[");
  o->inner = 1;
  int first = 1;
  size_t idx = 0;
  while (util_json_next(&it) && !o->error) {
    char path[48];
    snprintf(path, sizeof path, "entities[%zu]", idx++);
    char *name = item_str("create_entities", args, it.v0, it.v1, "name", path, o);
    char *type = name ? item_str("create_entities", args, it.v0, it.v1, "entityType", path, o) : NULL;
    size_t nobs = 0;
    char **obs = type ? mcp_jstrs("create_entities", args, it.v0, it.v1, "observations", path, 0, &nobs, o) : NULL;
    if (obs && !ent_by_name(g, name)) { /* (new: not in the graph before the call) */
      int64_t eid;
      gent *ph = kept_named(g, name, 1);
      if (!insert_entity(m, o, name, type, 0, &eid)) {
        for (size_t k = 0; k < nobs && !o->error; k++) add_obs(m, o, eid, obs[k]);
        if (ph && !o->error) { /* the relations that named it move to the entity, which comes last, as there */
          mcp_run(m, o, NULL, "ii", "UPDATE {R} SET src = ?2 WHERE src = ?1", ph->id, eid);
          if (!o->error) mcp_run(m, o, NULL, "ii", "UPDATE {R} SET dst = ?2 WHERE dst = ?1", ph->id, eid);
          if (!o->error) mcp_run(m, o, NULL, "i", "DELETE FROM {E} WHERE id = ?1", ph->id);
          ph->placeholder = 2; /* (taken: a repeat in this call moves nothing) */
        }
      }
      if (!first) strbuf_putc(&o->result, ',');
      first = 0;
      mcp_put_entity(&o->result, name, type, obs, nobs);
    }
    free(name);
    free(type);
    mcp_strs_free(obs, nobs);
  }
  strbuf_puts(&o->result, "]}");
  return o->error ? -1 : 0;
}

/* The entity a relation end names (the first of the name), else a
** placeholder of the name, made when there is none (made: the ones this
** call made, names and ids). */
static int rel_end(mcp *m, graph *g, const char *name, char ***made, int64_t **ids, size_t *nmade, int64_t *id,
                   mcp_out *o) {
  gent *e = ent_by_name(g, name);
  if (!e) e = kept_named(g, name, 1);
  if (e) {
    *id = e->id;
    return 0;
  }
  for (size_t k = 0; k < *nmade; k++)
    if (!strcmp((*made)[k], name)) {
      *id = (*ids)[k];
      return 0;
    }
  char **nm = realloc(*made, (*nmade + 1) * sizeof *nm);
  if (nm) *made = nm;
  int64_t *ni = nm ? realloc(*ids, (*nmade + 1) * sizeof *ni) : NULL;
  if (ni) *ids = ni;
  char *copy = ni ? strdup(name) : NULL;
  if (!copy) return nomem(o);
  if (insert_entity(m, o, name, NULL, 1, id)) {
    free(copy);
    return -1;
  }
  (*made)[*nmade] = copy;
  (*ids)[(*nmade)++] = *id;
  return 0;
}

static int t_create_relations(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  util_json_iter it;
  if (arg_array("create_relations", args, n, "relations", &it, o)) return -1;
  strbuf_puts(&o->result, "{\"relations\":[");
  o->inner = 1;
  int first = 1;
  size_t idx = 0, nmade = 0;
  char **made = NULL;
  int64_t *ids = NULL;
  while (util_json_next(&it) && !o->error) {
    char *from, *to, *type;
    relation_item("create_relations", args, &it, idx++, &from, &to, &type, o);
    int known = 0;
    for (size_t i = 0; type && i < g->nr && !known; i++)
      known = !strcmp(g->e[g->r[i].a].name, from) && !strcmp(g->e[g->r[i].b].name, to) &&
              !strcmp(g->r[i].type, type);
    if (type && !known) { /* (an end that names no entity is kept, as there: a placeholder) */
      int64_t a, b;
      if (!rel_end(m, g, from, &made, &ids, &nmade, &a, o) && !rel_end(m, g, to, &made, &ids, &nmade, &b, o)) {
        strbuf meta = {0};
        char *t = stored(&meta, "relationType", type);
        util_js_meta_close(&meta);
        if (!t || strbuf_failed(&meta)) nomem(o);
        else mcp_run(m, o, NULL, "iiss", "INSERT INTO {R}(src, dst, type, meta) VALUES (?1, ?2, ?3, ?4)", a, b, t, meta.buf);
        free(t);
        strbuf_free(&meta);
      }
      if (!first) strbuf_putc(&o->result, ',');
      first = 0;
      mcp_put_relation(&o->result, from, to, type);
    }
    free(from);
    free(to);
    free(type);
  }
  mcp_strs_free(made, nmade);
  free(ids);
  strbuf_puts(&o->result, "]}");
  return o->error ? -1 : 0;
}

static int t_add_observations(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  util_json_iter it;
  if (arg_array("add_observations", args, n, "observations", &it, o)) return -1;
  strbuf_puts(&o->result, "{\"results\":[");
  o->inner = 1;
  size_t idx = 0;
  while (util_json_next(&it) && !o->error) {
    char path[48];
    snprintf(path, sizeof path, "observations[%zu]", idx);
    char *name = item_str("add_observations", args, it.v0, it.v1, "entityName", path, o);
    size_t nc = 0;
    char **c = name ? mcp_jstrs("add_observations", args, it.v0, it.v1, "contents", path, 0, &nc, o) : NULL;
    gent *e = c ? ent_by_name(g, name) : NULL;
    if (c && !e) mcp_out_error(o, "Entity with name %s not found", name);
    if (e) {
      if (idx) strbuf_putc(&o->result, ',');
      strbuf_puts(&o->result, "{\"entityName\":");
      put_str(&o->result, name);
      strbuf_puts(&o->result, ",\"addedObservations\":[");
      size_t before = e->nobs, added = 0;
      for (size_t k = 0; k < nc && !o->error; k++) {
        int has = 0;
        for (size_t j = 0; j < before && !has; j++) has = !strcmp(e->obs[j], c[k]);
        if (has) continue;
        if (added++) strbuf_putc(&o->result, ',');
        put_str(&o->result, c[k]);
        add_obs(m, o, e->id, c[k]);
      }
      /* the entity's observations now include these (for a later item naming it) */
      for (size_t k = 0; k < nc && !o->error; k++) {
        int has = 0;
        for (size_t j = 0; j < before && !has; j++) has = !strcmp(e->obs[j], c[k]);
        if (has) continue;
        if (kept_add_obs(g, e, c[k])) { /* (memory 0: not deleted in this call; no tool does both) */
          nomem(o);
          break;
        }
      }
      strbuf_puts(&o->result, "]}");
    }
    idx++;
    free(name);
    mcp_strs_free(c, nc);
  }
  strbuf_puts(&o->result, "]}");
  return o->error ? -1 : 0;
}

static void done_message(mcp_out *o, const char *msg) {
  strbuf_puts(&o->text, msg);
  strbuf_puts(&o->result, "{\"success\":true,\"message\":");
  put_str(&o->result, msg);
  strbuf_putc(&o->result, '}');
}

static int t_delete_entities(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  size_t nn = 0;
  char **names = mcp_jstrs("delete_entities", args, 0, n, "entityNames", "$", 0, &nn, o); /* (args is an object) */
  if (!names) return -1;
  /* every entity of each name, and the relations with an end of the name
     (a placeholder's too, as there relations are removed by name) */
  for (size_t k = 0; k < nn && !o->error; k++)
    for (size_t i = 0; i < g->ne && !o->error; i++) {
      gent *e = &g->e[i];
      if (e->placeholder == 2 || strcmp(e->name, names[k])) continue;
      mcp_run(m, o, NULL, "i", "DELETE FROM {R} WHERE src = ?1 OR dst = ?1", e->id);
      for (size_t r = 0; r < g->nr; r++)
        if (g->r[r].a == i || g->r[r].b == i) g->r[r].gone = 1;
      for (size_t j = 0; j < e->nobs && !o->error; j++) drop_obs(m, o, e, j);
      if (!o->error) mcp_run(m, o, NULL, "i", "DELETE FROM {E} WHERE id = ?1", e->id);
      e->placeholder = 2; /* (gone) */
    }
  mcp_strs_free(names, nn);
  if (!o->error) drop_orphans(m, g, o);
  if (!o->error) done_message(o, "Entities deleted successfully");
  return o->error ? -1 : 0;
}

static int t_delete_observations(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  util_json_iter it;
  if (arg_array("delete_observations", args, n, "deletions", &it, o)) return -1;
  size_t idx = 0;
  while (util_json_next(&it) && !o->error) {
    char path[48];
    snprintf(path, sizeof path, "deletions[%zu]", idx++);
    char *name = item_str("delete_observations", args, it.v0, it.v1, "entityName", path, o);
    size_t nd = 0;
    char **d = name ? mcp_jstrs("delete_observations", args, it.v0, it.v1, "observations", path, 0, &nd, o) : NULL;
    gent *e = d ? ent_by_name(g, name) : NULL;
    for (size_t j = 0; e && j < e->nobs && !o->error; j++) {
      int del = 0;
      for (size_t k = 0; k < nd && !del; k++) del = !strcmp(e->obs[j], d[k]);
      if (del && e->mid[j]) {
        drop_obs(m, o, e, j);
        e->mid[j] = 0; /* (gone: a later item naming it again deletes nothing) */
      }
    }
    free(name);
    mcp_strs_free(d, nd);
  }
  if (!o->error) done_message(o, "Observations deleted successfully");
  return o->error ? -1 : 0;
}

static int t_delete_relations(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  util_json_iter it;
  if (arg_array("delete_relations", args, n, "relations", &it, o)) return -1;
  size_t idx = 0;
  while (util_json_next(&it) && !o->error) {
    char *from, *to, *type;
    if (!relation_item("delete_relations", args, &it, idx++, &from, &to, &type, o))
      for (size_t i = 0; i < g->nr && !o->error; i++) {
        grel *r = &g->r[i];
        if (r->gone || strcmp(g->e[r->a].name, from) || strcmp(g->e[r->b].name, to) || strcmp(r->type, type)) continue;
        mcp_run(m, o, NULL, "i", "DELETE FROM {R} WHERE id = ?1", r->id);
        r->gone = 1;
      }
    free(from);
    free(to);
    free(type);
  }
  if (!o->error) drop_orphans(m, g, o);
  if (!o->error) done_message(o, "Relations deleted successfully");
  return o->error ? -1 : 0;
}

static int t_read_graph(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  (void)m, (void)args, (void)n;
  put_graph(&o->result, g, NULL);
  return 0;
}

/* search_nodes' query lowercased (kept_lower) into ql: 0; -1 when args
** has no string query (*is: it has one, and memory ran out). */
static int search_query(const char *args, size_t n, strbuf *ql, int *is) {
  size_t v0, v1;
  *is = 0;
  char *q = !mcp_member(args, n, "query", &v0, &v1) ? mcp_jstr(args, v0, v1, is) : NULL;
  if (!q) return -1;
  kept_lower(ql, q);
  free(q);
  return 0;
}

static int t_search_nodes(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  int is;
  strbuf ql = {0};
  if (search_query(args, n, &ql, &is)) {
    if (is) nomem(o);
    else mcp_bad_arg(o, "search_nodes", NULL, "query", "string");
    return -1;
  }
  uint8_t *keep = calloc(g->ne + 1, 1);
  if (!keep || strbuf_failed(&ql) || kept_search(m, g, ql.buf ? ql.buf : "", ql.len, keep)) nomem(o);
  else put_graph(&o->result, g, keep);
  free(keep);
  strbuf_free(&ql);
  return o->error ? -1 : 0;
}

static int t_open_nodes(mcp *m, graph *g, const char *args, size_t n, mcp_out *o) {
  (void)m;
  size_t nn = 0;
  char **names = mcp_jstrs("open_nodes", args, 0, n, "names", "$", 0, &nn, o);
  if (!names) return -1;
  uint8_t *keep = calloc(g->ne + 1, 1), *named = calloc(g->ne + 1, 1);
  for (size_t k = 0; keep && named && k < nn; k++) {
    gent *e = ent_by_name(g, names[k]);
    if (e) named[e - g->e] = 1; /* (its first entity: every entity of the name has it as canon) */
  }
  for (size_t i = 0; keep && named && i < g->ne; i++) keep[i] = named[g->e[i].canon];
  if (keep && named) put_graph(&o->result, g, keep);
  else mcp_out_error(o, "out of memory");
  free(keep);
  free(named);
  mcp_strs_free(names, nn);
  return o->error ? -1 : 0;
}

static const struct {
  const char *name;
  int writes;
  int (*fn)(mcp *, graph *, const char *, size_t, mcp_out *);
} tools[] = {
    {"create_entities", 1, t_create_entities},         {"create_relations", 1, t_create_relations},
    {"add_observations", 1, t_add_observations},       {"delete_entities", 1, t_delete_entities},
    {"delete_observations", 1, t_delete_observations}, {"delete_relations", 1, t_delete_relations},
    {"read_graph", 0, t_read_graph},                   {"search_nodes", 0, t_search_nodes},
    {"open_nodes", 0, t_open_nodes},
};

/* ---- the search image --------------------------------------------------------- */

/* H5MEM_MCP_SEARCH=image (for the tests) answers every search_nodes from
** the image while there is one; the other modes never do; unset, the image
** answers until the kept graph is indexed. */
static int image_mode(void) {
  const char *s = getenv("H5MEM_MCP_SEARCH");
  return !s || !*s ? 0 : !strcmp(s, "image") ? 1 : -1;
}

/* The store's state (store_state_key) through h5mem_store_state: 0, or -1. */
static int state_key(mcp *m, store_state_key *k) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(m->db, "SELECT h5mem_store_state(?1, ?2)", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, m->table, -1, SQLITE_STATIC);
    sqlite3_bind_pointer(st, 2, k, "h5mem_store_state_key", NULL);
    rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(m->db);
  }
  if (rc != SQLITE_OK && m->verbose) fprintf(stderr, "h5mem-mcp: search image: %s\n", sqlite3_errmsg(m->db));
  sqlite3_finalize(st);
  return rc == SQLITE_OK ? 0 : -1;
}

/* The image's file: <store>-mcp (malloc'd), with suffix. */
static char *image_path(const mcp *m, const char *suffix) {
  size_t n = strlen(m->store) + strlen(suffix) + 8;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s-mcp%s", m->store, suffix);
  return p;
}

void mcp_image_find(mcp *m) {
  if (m->image || image_mode() < 0) return;
  store_state_key k;
  char *path = image_path(m, "");
  const char *why = NULL;
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  struct stat sb;
  void *map = MAP_FAILED;
  mcp_image *im = NULL;
  if (fd < 0) why = path ? "none written yet" : "out of memory";
  else if (state_key(m, &k)) why = "the store's state cannot be read";
  else if (!k.checkpointed) why = "the store changed since its last checkpoint";
  else if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size <= 0 || (uint64_t)sb.st_size > SIZE_MAX)
    why = "not a regular file";
  else if ((map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
    why = strerror(errno);
  else if (!(im = malloc(sizeof *im)))
    why = "out of memory";
  else if (!mcp_image_open(im, map, (size_t)sb.st_size, &k, &why)) {
    m->image = im;
    m->image_map = map;
    m->image_len = (size_t)sb.st_size;
    if (m->verbose)
      fprintf(stderr, "h5mem-mcp: search image: %llu entities, %llu relations, %zu bytes\n",
              (unsigned long long)im->ne, (unsigned long long)im->nr, m->image_len);
  }
  if (!m->image) {
    if (m->verbose) fprintf(stderr, "h5mem-mcp: no search image (%s): %s\n", path ? path : "", why);
    free(im);
    if (map != MAP_FAILED) munmap(map, (size_t)sb.st_size);
  }
  if (fd >= 0) close(fd);
  free(path);
}

void mcp_image_drop(mcp *m) {
  if (m->image) mcp_image_close(m->image);
  free(m->image);
  if (m->image_map) munmap(m->image_map, m->image_len);
  m->image = NULL;
  m->image_map = NULL;
  m->image_len = 0;
}

/* img written to path through a new file renamed into place (not synced:
** a crash may leave the new file with blocks unwritten, which their
** checksums tell; the image is only ever a faster way to the answers the
** store gives): 0 or -1. */
static int write_file(mcp *m, const char *path, const uint8_t *img, size_t len) {
  char *tmp = image_path(m, ".new");
  int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644) : -1;
  int ok = fd >= 0;
  for (size_t at = 0; ok && at < len;) {
    ssize_t w = write(fd, img + at, len - at);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) ok = 0;
    else at += (size_t)w;
  }
  if (fd >= 0 && close(fd)) ok = 0;
  if (ok && rename(tmp, path)) ok = 0;
  if (!ok && m->verbose) fprintf(stderr, "h5mem-mcp: search image not written (%s): %s\n", path, strerror(errno));
  if (!ok && tmp) unlink(tmp);
  free(tmp);
  return ok ? 0 : -1;
}

void mcp_image_save(mcp *m) {
  /* (an image found at the start still stands: nothing changed the store;
     one found damaged is written again) */
  if ((m->image && !m->image->bad) || image_mode() < 0) return;
  mcp_image_drop(m);
  graph *g = mcp_kept_indexed(m);
  if (!g || !g->ne) return;
  /* the store checkpointed (as it closes anyway): its state named by the checkpoint */
  char *ck = sqlite3_mprintf("INSERT INTO temp.\"%w\"(\"%w\") VALUES('checkpoint')", m->table, m->table);
  int rc = ck ? sqlite3_exec(m->db, ck, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(ck);
  store_state_key k;
  if (rc != SQLITE_OK || state_key(m, &k) || !k.checkpointed) {
    if (m->verbose) fprintf(stderr, "h5mem-mcp: search image not written: the store cannot checkpoint\n");
    return;
  }
  uint8_t *img = NULL;
  size_t len = 0;
  char *path = image_path(m, "");
  if (path && !kept_image(g, &k, &img, &len) && !write_file(m, path, img, len) && m->verbose)
    fprintf(stderr, "h5mem-mcp: search image written (%s, %zu bytes)\n", path, len);
  free(img);
  free(path);
}

/* search_nodes from the image: 1 when it answered. */
static int image_search(mcp *m, const char *args, size_t n, mcp_out *o) {
  int mode = image_mode();
  if (!m->image || m->image->bad || mode < 0 || (!mode && mcp_kept_ready(m))) return 0;
  int is;
  strbuf ql = {0};
  if (search_query(args, n, &ql, &is)) return 0; /* (the graph's way says what is wrong) */
  int rc = strbuf_failed(&ql) ? -1 : mcp_image_search(m->image, ql.buf ? ql.buf : "", ql.len, &o->result);
  strbuf_free(&ql);
  if (rc < 0) mcp_out_error(o, "out of memory");
  if (rc > 0 && m->verbose) fprintf(stderr, "h5mem-mcp: search_nodes: the image cannot answer; the graph does\n");
  return rc <= 0;
}

int mcp_graph_call(mcp *m, const char *name, const char *args, size_t n, mcp_out *o) {
  for (size_t t = 0; t < sizeof tools / sizeof *tools; t++) {
    if (strcmp(tools[t].name, name)) continue;
    if (!strcmp(name, "search_nodes") && image_search(m, args, n, o)) return 0;
    /* the graph is kept between calls (the server is the store's one
       writer while it runs: nobody else changes it); a writing tool
       starts from it and drops it after (it changed, or was rolled back),
       and it is read again, in its thread, while the answer goes out */
    graph *g = mcp_kept(m, o); /* (the reading thread is off the connection now) */
    if (!g) return 0;
    if (tools[t].writes) mcp_graph_settle(m); /* (the thread stopped: the tool changes the graph) */
    int rc = tools[t].writes ? mcp_exec(m, o, "BEGIN") : 0;
    if (!rc) rc = tools[t].fn(m, g, args, n, o);
    if (tools[t].writes) {
      if (rc || o->error) sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
      else o->changed = mcp_exec(m, o, "COMMIT") == SQLITE_OK;
      mcp_graph_forget(m);
      mcp_graph_start(m);
    }
    return 0;
  }
  return -1;
}

int mcp_graph_json(mcp *m, mcp_out *o) {
  graph *g = mcp_kept(m, o);
  if (!g) return -1;
  put_graph(&o->result, g, NULL);
  return 0;
}
