/*
** mcp/mcp_memory.c - h5mem-mcp's memory tools, beyond the reference's
** graph (mcp.h):
**
**   remember       a text through h5mem_remember (the write gate,
**                  near-duplicates, importance), mentioning entities
**   recall         hybrid search (BM25 + the store's embedder), filtered by
**                  session, source, tier, time, and the entities mentioned
**   forget         memories by id, with their mentions
**   memory_stats   what the store holds
**
** Their definitions (tools/list) are mcp_memory_tools; each input schema's
** description says what every argument does.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "util/json.h"

#define RO "\"annotations\":{\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":false}"
#define RW "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":false,\"openWorldHint\":false}"
#define DEL "\"annotations\":{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}"
#define SCHEMA "\"$schema\":\"http://json-schema.org/draft-07/schema#\",\"type\":\"object\""

const char *const mcp_memory_tools[MCP_MEM_NTOOLS] = {
    "{\"name\":\"remember\",\"title\":\"Remember\",\"description\":\"Save a memory (a text) in the agent's "
    "memory store. Trivial texts (thanks, ok) are skipped and a near-duplicate of an existing memory reinforces "
    "it instead of adding a copy; the result says which (action: inserted, merged or skipped). The memory can "
    "name entities of the knowledge graph it is about.\",\"inputSchema\":{" SCHEMA ",\"properties\":{"
    "\"text\":{\"type\":\"string\",\"description\":\"The memory\"},"
    "\"session\":{\"type\":\"string\",\"description\":\"The conversation or task it comes from\"},"
    "\"source\":{\"type\":\"string\",\"description\":\"Who or what said it (e.g. user, assistant, tool)\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Labels\"},"
    "\"importance\":{\"type\":\"number\",\"description\":\"0 to 1; computed when left out\"},"
    "\"meta\":{\"type\":\"object\",\"description\":\"Any JSON object kept with the memory\"},"
    "\"entities\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Names of entities of "
    "the knowledge graph the memory mentions (entities that do not exist are listed in the result, not "
    "made)\"}},\"required\":[\"text\"]}," RW "}",

    "{\"name\":\"recall\",\"title\":\"Recall\",\"description\":\"Find the memories most relevant to a query: "
    "keyword (BM25) and vector search fused, best first, optionally only those of a session, source or tier, "
    "of a time range, or mentioning given entities, and re-ranked by recency.\",\"inputSchema\":{" SCHEMA
    ",\"properties\":{"
    "\"query\":{\"type\":\"string\",\"description\":\"What to look for\"},"
    "\"k\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"How many memories (default "
    "10)\"},"
    "\"session\":{\"type\":\"string\",\"description\":\"Only this session's memories\"},"
    "\"source\":{\"type\":\"string\",\"description\":\"Only memories from this source\"},"
    "\"tier\":{\"type\":\"string\",\"description\":\"Only this tier (working, episodic, semantic, archive); "
    "archived memories are left out unless named\"},"
    "\"since\":{\"type\":\"integer\",\"description\":\"Only memories at or after this time (unix seconds)\"},"
    "\"until\":{\"type\":\"integer\",\"description\":\"Only memories before this time (unix seconds)\"},"
    "\"entities\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"description\":\"Only memories that "
    "mention one of these entities (by name)\"},"
    "\"recency\":{\"type\":\"number\",\"minimum\":0,\"description\":\"Weight of recency in a re-ranking (0: "
    "none, the default; 0.3 favours recent memories)\"},"
    "\"reject_below\":{\"type\":\"number\",\"description\":\"Return nothing when no memory matches a keyword "
    "and the best vector similarity is below this (confidence rejection)\"}},\"required\":[\"query\"]}," RO "}",

    "{\"name\":\"forget\",\"title\":\"Forget\",\"description\":\"Delete memories by id (as recall gives them), "
    "and their mentions of entities.\",\"inputSchema\":{" SCHEMA ",\"properties\":{"
    "\"ids\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"description\":\"The memories' ids\"}},"
    "\"required\":[\"ids\"]}," DEL "}",

    "{\"name\":\"memory_stats\",\"title\":\"Memory Stats\",\"description\":\"What the memory store holds: "
    "memories (by tier), entities, relations, mentions, its file and embedder.\",\"inputSchema\":{" SCHEMA
    ",\"properties\":{}}," RO "}",
};

/* ---- helpers ------------------------------------------------------------------ */

static int one_row(mcp *m, mcp_out *o, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) mcp_out_error(o, "%s", sqlite3_errmsg(m->db));
  return rc;
}

static int64_t count_of(mcp *m, mcp_out *o, const char *sql) {
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (mcp_prepare(m, &st, o, sql) == SQLITE_OK && one_row(m, o, st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* ---- the tools ------------------------------------------------------------------ */

static int t_remember(mcp *m, const char *args, size_t an, mcp_out *o) {
  size_t v0, v1;
  int is = 0;
  char *text = !mcp_member(args, an, "text", &v0, &v1) ? mcp_str(args, v0, v1, &is) : NULL;
  if (!text) return mcp_bad_arg(o, "remember", NULL, "text", "string"), -1;
  /* h5mem_remember's options: the arguments it knows, as given */
  static const char *const pass[] = {"session", "source", "tags", "importance", "meta"};
  static const int want[] = {UTIL_JSON_TEXT, UTIL_JSON_TEXT, UTIL_JSON_ARRAY, -1, UTIL_JSON_OBJECT};
  strbuf opt = {0};
  strbuf_putc(&opt, '{');
  for (size_t i = 0; i < sizeof pass / sizeof *pass && !o->error; i++) {
    if (mcp_member(args, an, pass[i], &v0, &v1)) continue;
    int t = util_json_type(args, v0, v1);
    if (want[i] >= 0 ? t != want[i] : t != UTIL_JSON_INTEGER && t != UTIL_JSON_REAL) {
      static const char *const wname[] = {"string", "string", "array", "number", "object"};
      mcp_bad_arg(o, "remember", NULL, pass[i], wname[i]);
      break;
    }
    if (opt.len > 1) strbuf_putc(&opt, ',');
    strbuf_printf(&opt, "\"%s\":", pass[i]);
    strbuf_append(&opt, args + v0, v1 - v0);
  }
  strbuf_putc(&opt, '}');
  size_t ne = 0;
  char **ents = o->error ? NULL : mcp_strs("remember", args, 0, an, "entities", NULL, 1, &ne, o);
  sqlite3_stmt *st = NULL;
  int64_t id = 0;
  if (!o->error && mcp_prepare(m, &st, o, "SELECT h5mem_remember({N}, ?1, NULL, ?2)") == SQLITE_OK) {
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, opt.buf, (int)opt.len, SQLITE_STATIC);
    if (one_row(m, o, st) == SQLITE_ROW) {
      const char *r = (const char *)sqlite3_column_text(st, 0);
      size_t rn = (size_t)sqlite3_column_bytes(st, 0), i0, i1;
      int64_t iv;
      double dv;
      if (r && !mcp_member(r, rn, "id", &i0, &i1) && util_json_number(r, i0, i1, &iv, &dv) == UTIL_JSON_INTEGER)
        id = iv;
      /* the result: h5mem_remember's object, with the mentions */
      if (r && rn >= 2 && r[rn - 1] == '}') strbuf_append(&o->result, r, rn - 1);
      else mcp_out_error(o, "h5mem_remember gave no result");
    }
  }
  sqlite3_finalize(st);
  strbuf_puts(&o->result, o->result.len ? ",\"mentions\":[" : "");
  size_t nm = 0;
  strbuf unknown = {0};
  for (size_t i = 0; i < ne && !o->error && o->result.len; i++) {
    int64_t eid = 0;
    st = NULL;
    if (mcp_prepare(m, &st, o, "SELECT id FROM {E} WHERE name = ?1 ORDER BY id LIMIT 1") == SQLITE_OK) {
      sqlite3_bind_text(st, 1, ents[i], -1, SQLITE_STATIC);
      if (one_row(m, o, st) == SQLITE_ROW) eid = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (!eid) { /* (not made: listed) */
      if (unknown.len) strbuf_putc(&unknown, ',');
      strbuf_json_string(&unknown, ents[i], strlen(ents[i]));
    } else if (id) { /* (a skipped text mentions nothing) */
      if (nm++) strbuf_putc(&o->result, ',');
      strbuf_json_string(&o->result, ents[i], strlen(ents[i]));
      if (mcp_run(m, o, NULL, "ii", "INSERT OR IGNORE INTO {M}(memory_id, entity_id) VALUES (?1, ?2)", id, eid))
        break;
    }
  }
  if (o->result.len) {
    strbuf_puts(&o->result, "],\"unknown_entities\":[");
    if (unknown.len) strbuf_append(&o->result, unknown.buf, unknown.len);
    strbuf_puts(&o->result, "]}");
  }
  strbuf_free(&unknown);
  strbuf_free(&opt);
  mcp_strs_free(ents, ne);
  free(text);
  return o->error ? -1 : 0;
}

/* An optional member: its type must be one of the two given (-1: any). */
static int opt_member(const char *tool, const char *args, size_t an, const char *key, int t1, int t2, size_t *v0,
                      size_t *v1, mcp_out *o) {
  if (mcp_member(args, an, key, v0, v1)) return 0;
  int t = util_json_type(args, *v0, *v1);
  if (t != t1 && t != t2) {
    const char *want = t1 == UTIL_JSON_TEXT ? "string" : t1 == UTIL_JSON_INTEGER && t2 < 0 ? "integer" : "number";
    mcp_bad_arg(o, tool, NULL, key, want);
    return -1;
  }
  return 1;
}

static int t_recall(mcp *m, const char *args, size_t an, mcp_out *o) {
  size_t v0, v1;
  int is = 0;
  char *q = !mcp_member(args, an, "query", &v0, &v1) ? mcp_str(args, v0, v1, &is) : NULL;
  if (!q) return mcp_bad_arg(o, "recall", NULL, "query", "string"), -1;
  int64_t k = 10;
  double dv;
  int have = opt_member("recall", args, an, "k", UTIL_JSON_INTEGER, -1, &v0, &v1, o);
  if (have > 0 && (util_json_number(args, v0, v1, &k, &dv) != UTIL_JSON_INTEGER || k < 1 || k > 1000))
    mcp_bad_arg(o, "recall", NULL, "k", "an integer from 1 to 1000");
  /* the filters, as SQL on hybrid's columns (applied before its ranking) */
  static const char *const fkey[] = {"session", "source", "tier", "since", "until"};
  static const char *const fsql[] = {" AND session = ?4", " AND source = ?5", " AND tier = ?6",
                                     " AND ts >= ?7", " AND ts < ?8"};
  size_t fv0[5], fv1[5];
  int fhave[5];
  strbuf sql = {0}, opts = {0};
  strbuf_puts(&sql, "SELECT h.id, h.score, h.vector_score, h.keyword_score, h.text, h.source, h.session, h.ts, "
                    "h.tier FROM hybrid({N}, ?1, NULL, ?2, ?3) h WHERE 1");
  for (int i = 0; i < 5 && !o->error; i++) {
    fhave[i] = opt_member("recall", args, an, fkey[i], i < 3 ? UTIL_JSON_TEXT : UTIL_JSON_INTEGER,
                          i < 3 ? -2 : -1, &fv0[i], &fv1[i], o) > 0;
    if (fhave[i]) strbuf_puts(&sql, fsql[i]);
  }
  size_t ne = 0;
  char **ents = o->error ? NULL : mcp_strs("recall", args, 0, an, "entities", NULL, 1, &ne, o);
  if (ne) { /* (an empty list filters nothing) */
    strbuf_puts(&sql, " AND h.id IN (SELECT memory_id FROM {M} WHERE entity_id IN (SELECT id FROM {E} WHERE name "
                      "IN (SELECT value FROM json_each(?9))))");
  }
  strbuf_putc(&opts, '{');
  if (!o->error && opt_member("recall", args, an, "recency", UTIL_JSON_INTEGER, UTIL_JSON_REAL, &v0, &v1, o) > 0) {
    strbuf_puts(&opts, "\"rerank\":{\"recency\":");
    strbuf_append(&opts, args + v0, v1 - v0);
    strbuf_putc(&opts, '}');
  }
  if (!o->error && opt_member("recall", args, an, "reject_below", UTIL_JSON_INTEGER, UTIL_JSON_REAL, &v0, &v1, o) > 0) {
    if (opts.len > 1) strbuf_putc(&opts, ',');
    strbuf_puts(&opts, "\"reject_below\":");
    strbuf_append(&opts, args + v0, v1 - v0);
  }
  strbuf_putc(&opts, '}');
  strbuf_puts(&sql, " ORDER BY h.score DESC, h.id");
  sqlite3_stmt *st = NULL;
  if (!o->error && mcp_prepare(m, &st, o, sql.buf) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, q, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, k);
    sqlite3_bind_text(st, 3, opts.buf, (int)opts.len, SQLITE_STATIC);
    for (int i = 0; i < 5; i++) {
      if (!fhave[i]) continue;
      if (i < 3) {
        char *s = mcp_str(args, fv0[i], fv1[i], &is);
        sqlite3_bind_text(st, 4 + i, s ? s : "", -1, SQLITE_TRANSIENT);
        free(s);
      } else {
        int64_t t = 0;
        util_json_number(args, fv0[i], fv1[i], &t, &dv);
        sqlite3_bind_int64(st, 4 + i, t);
      }
    }
    if (ne) {
      strbuf names = {0};
      strbuf_putc(&names, '[');
      for (size_t i = 0; i < ne; i++) {
        if (i) strbuf_putc(&names, ',');
        strbuf_json_string(&names, ents[i], strlen(ents[i]));
      }
      strbuf_putc(&names, ']');
      sqlite3_bind_text(st, 9, names.buf, (int)names.len, SQLITE_TRANSIENT);
      strbuf_free(&names);
    }
    strbuf_puts(&o->result, "{\"memories\":[");
    int rc, n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      if (n++) strbuf_putc(&o->result, ',');
      strbuf_printf(&o->result, "{\"id\":%lld,\"text\":", (long long)sqlite3_column_int64(st, 0));
      const char *t = (const char *)sqlite3_column_text(st, 4);
      strbuf_json_string(&o->result, t ? t : "", t ? (size_t)sqlite3_column_bytes(st, 4) : 0);
      strbuf_printf(&o->result, ",\"score\":%.6g", sqlite3_column_double(st, 1));
      static const char *const cn[] = {"vector_score", "keyword_score"};
      for (int c = 0; c < 2; c++)
        if (sqlite3_column_type(st, 2 + c) != SQLITE_NULL)
          strbuf_printf(&o->result, ",\"%s\":%.6g", cn[c], sqlite3_column_double(st, 2 + c));
      static const char *const sn[] = {"source", "session"};
      for (int c = 0; c < 2; c++) {
        const char *v = (const char *)sqlite3_column_text(st, 5 + c);
        if (!v) continue;
        strbuf_printf(&o->result, ",\"%s\":", sn[c]);
        strbuf_json_string(&o->result, v, (size_t)sqlite3_column_bytes(st, 5 + c));
      }
      strbuf_printf(&o->result, ",\"ts\":%lld", (long long)sqlite3_column_int64(st, 7));
      const char *tier = (const char *)sqlite3_column_text(st, 8);
      if (tier) {
        strbuf_puts(&o->result, ",\"tier\":");
        strbuf_json_string(&o->result, tier, strlen(tier));
      }
      strbuf_putc(&o->result, '}');
    }
    strbuf_puts(&o->result, "]}");
    if (rc != SQLITE_DONE) mcp_out_error(o, "%s", sqlite3_errmsg(m->db));
  }
  sqlite3_finalize(st);
  strbuf_free(&sql);
  strbuf_free(&opts);
  mcp_strs_free(ents, ne);
  free(q);
  return o->error ? -1 : 0;
}

static int t_forget(mcp *m, const char *args, size_t an, mcp_out *o) {
  size_t v0, v1;
  util_json_iter it;
  if (mcp_member(args, an, "ids", &v0, &v1) || util_json_type(args, v0, v1) != UTIL_JSON_ARRAY ||
      util_json_iter_init(&it, args, v0, v1))
    return mcp_bad_arg(o, "forget", NULL, "ids", "array"), -1;
  int64_t n = 0;
  while (util_json_next(&it) && !o->error) {
    int64_t id;
    double dv;
    if (util_json_number(args, it.v0, it.v1, &id, &dv) != UTIL_JSON_INTEGER) {
      mcp_bad_arg(o, "forget", NULL, "ids[]", "integer");
      break;
    }
    if (mcp_run(m, o, NULL, "i", "DELETE FROM {M} WHERE memory_id = ?1", id)) break;
    if (mcp_run(m, o, NULL, "i", "DELETE FROM {T} WHERE id = ?1", id)) break;
    n += sqlite3_changes(m->db);
  }
  if (!o->error) strbuf_printf(&o->result, "{\"forgotten\":%lld}", (long long)n);
  return o->error ? -1 : 0;
}

static int t_memory_stats(mcp *m, const char *args, size_t an, mcp_out *o) {
  (void)args, (void)an;
  int64_t mem = count_of(m, o, "SELECT count(*) FROM {T}"), ent = count_of(m, o, "SELECT count(*) FROM {E}"),
          rel = count_of(m, o, "SELECT count(*) FROM {R}"), men = count_of(m, o, "SELECT count(*) FROM {M}");
  if (o->error) return -1;
  strbuf_printf(&o->result, "{\"memories\":%lld,\"entities\":%lld,\"relations\":%lld,\"mentions\":%lld,\"tiers\":{",
                (long long)mem, (long long)ent, (long long)rel, (long long)men);
  sqlite3_stmt *st = NULL;
  if (mcp_prepare(m, &st, o, "SELECT coalesce(tier, ''), count(*) FROM {T} GROUP BY 1 ORDER BY 1") == SQLITE_OK) {
    int n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (n++) strbuf_putc(&o->result, ',');
      const char *t = (const char *)sqlite3_column_text(st, 0);
      strbuf_json_string(&o->result, t ? t : "", t ? strlen(t) : 0);
      strbuf_printf(&o->result, ":%lld", (long long)sqlite3_column_int64(st, 1));
    }
  }
  sqlite3_finalize(st);
  strbuf_puts(&o->result, "},\"store\":");
  strbuf_json_string(&o->result, m->store, strlen(m->store));
  strbuf_puts(&o->result, ",\"embedder\":"); /* (null: the one the store keeps, not named at start) */
  if (m->embedder) strbuf_json_string(&o->result, m->embedder, strlen(m->embedder));
  else strbuf_puts(&o->result, "null");
  strbuf_putc(&o->result, '}');
  return o->error ? -1 : 0;
}

static const struct {
  const char *name;
  int writes;
  int (*fn)(mcp *, const char *, size_t, mcp_out *);
} tools[] = {
    {"remember", 1, t_remember},
    {"recall", 0, t_recall},
    {"forget", 1, t_forget},
    {"memory_stats", 0, t_memory_stats},
};

int mcp_memory_call(mcp *m, const char *name, const char *args, size_t n, mcp_out *o) {
  for (size_t t = 0; t < sizeof tools / sizeof *tools; t++) {
    if (strcmp(tools[t].name, name)) continue;
    mcp_graph_quiet(m); /* (the graph's reading thread off the connection) */
    int rc = tools[t].writes ? mcp_exec(m, o, "BEGIN") : 0;
    if (!rc) rc = tools[t].fn(m, args, n, o);
    if (tools[t].writes) {
      if (rc || o->error) sqlite3_exec(m->db, "ROLLBACK", NULL, NULL, NULL);
      else o->changed = mcp_exec(m, o, "COMMIT") == SQLITE_OK;
      mcp_graph_forget(m); /* (a memory mentioning an entity is one of its observations) */
      mcp_graph_start(m);
    }
    return 0;
  }
  return -1;
}
