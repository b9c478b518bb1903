/*
** ext/migrate/mig_detect.c - which memory store a SQLite database is, and
** the SELECT that reads it as the h5mem store's columns.
**
** Each known schema is recognised by exact table and column names (PRAGMA
** table_info), never by guessing: a table that has the right name but not
** every column is not taken, and the error says what it lacks.  Two schemas
** matching at once is an error too ({"schema": ...} chooses).  The mappings
** and the versions they follow are in docs/MIGRATION.md; keep the two in
** step.
**
** The SELECTs build each record's meta JSON with json_object(); every
** value given to it passes through J() first, so a BLOB where text was
** expected becomes hex instead of an error that would stop the migration.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mig.h"
#include "store/store.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/utf8.h"

const char *const mig_field_name[MIG_NFIELD] = {
    "id", "text", "embedding", "source", "session", "tags", "tier", "ts", "importance", "meta",
    "_skip", "_text_path", "_source_id", "_stale"};

char *mig_ident(const char *s) { return sqlite3_mprintf("\"%w\"", s); }

char *mig_ro_uri(const char *path, int immutable) {
  sqlite3_str *u = sqlite3_str_new(NULL);
  sqlite3_str_appendall(u, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
        strchr("/-._~", *p))
      sqlite3_str_appendchar(u, 1, (char)*p);
    else
      sqlite3_str_appendf(u, "%%%02X", *p);
  }
  sqlite3_str_appendf(u, "?mode=ro%s", immutable ? "&immutable=1" : "");
  return sqlite3_str_finish(u);
}

void mig_json_str(sqlite3_str *out, const char *s, size_t n) {
  strbuf b = {0};
  strbuf_json_string(&b, s, n);
  if (strbuf_failed(&b)) sqlite3_str_appendall(out, "null");
  else sqlite3_str_append(out, b.buf, (int)b.len);
  strbuf_free(&b);
}

int mig_utf8(const char *s, size_t n, int nul_ok, strbuf *fix, const char **out, size_t *outn) {
  *out = s;
  *outn = n;
  if (!nul_ok && n && memchr(s, 0, n)) return -1;
  if (util_utf8_check(s, n, 1) == n) return 0;
  fix->len = 0;
  util_utf8_repair(fix, s, n);
  if (strbuf_failed(fix)) return -2;
  *out = fix->buf;
  *outn = fix->len;
  return 1;
}

void mig_plan_free(mig_plan *p) {
  sqlite3_free(p->based_on);
  sqlite3_free(p->table);
  sqlite3_free(p->sql);
  sqlite3_free(p->vec0);
  sqlite3_free(p->embedder);
  for (int i = 0; p->attrs[i]; i++) sqlite3_free(p->attrs[i]);
  sqlite3_free(sqlite3_str_finish(p->info));
  sqlite3_free(sqlite3_str_finish(p->notes));
  memset(p, 0, sizeof *p);
}

void mig_note(mig_plan *p, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *m = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (m) {
    sqlite3_str_appendchar(p->notes, 1, ',');
    mig_json_str(p->notes, m, strlen(m));
  }
  sqlite3_free(m);
}

int mig_attr(mig_plan *p, const char *name, const char *value) {
  int i = 0;
  while (p->attrs[i]) i += 2;
  if (i >= 2 * MIG_MAX_ATTRS) return SQLITE_OK;
  p->attrs[i] = sqlite3_mprintf("%s", name);
  p->attrs[i + 1] = sqlite3_mprintf("%s", value ? value : "");
  return p->attrs[i] && p->attrs[i + 1] ? SQLITE_OK : SQLITE_NOMEM;
}

/* ---- looking at the source ------------------------------------------ */

/* The declared type of column col of table (upper case in buf), 1 when the
** column exists, 0 when not. */
static int col_type(sqlite3 *db, const char *table, const char *col, char *buf, size_t n) {
  sqlite3_stmt *st;
  int found = 0;
  if (buf && n) buf[0] = 0;
  if (sqlite3_prepare_v2(db, "SELECT type FROM pragma_table_info(?1) WHERE name = ?2", -1, &st,
                         NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    found = 1;
    const char *t = (const char *)sqlite3_column_text(st, 0);
    if (buf && n && t) {
      size_t i = 0;
      for (; t[i] && i + 1 < n; i++) buf[i] = (char)(t[i] >= 'a' && t[i] <= 'z' ? t[i] - 32 : t[i]);
      buf[i] = 0;
    }
  }
  sqlite3_finalize(st);
  return found;
}

/* 1 when the source has a table called name and (test not NULL) its
** CREATE statement passes test; else 0. */
static int table_is(sqlite3 *db, const char *name, int (*test)(const char *sql)) {
  sqlite3_stmt *st;
  int yes = 0;
  if (sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                         -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const char *sql = (const char *)sqlite3_column_text(st, 0);
    yes = !test || (sql && test(sql));
  }
  sqlite3_finalize(st);
  return yes;
}

static int has_table(sqlite3 *db, const char *name) { return table_is(db, name, NULL); }

/* The source's tables that match says are a kind (name order): *n of them,
** the first one's name in *first (NULL when none; sqlite3_free it).
** SQLITE_OK, or SQLITE_NOMEM. */
static int matching_tables(sqlite3 *db, int (*match)(sqlite3 *, const char *name, const char *sql),
                           char **first, int *n) {
  sqlite3_stmt *st;
  *first = NULL;
  *n = 0;
  if (sqlite3_prepare_v2(db, "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name",
                         -1, &st, NULL) != SQLITE_OK)
    return SQLITE_OK;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    const char *sql = (const char *)sqlite3_column_text(st, 1);
    if (!name || !match(db, name, sql)) continue;
    if (!(*n)++) *first = sqlite3_mprintf("%s", name);
  }
  sqlite3_finalize(st);
  return *n && !*first ? SQLITE_NOMEM : SQLITE_OK;
}

/* The number of columns of table (0 when it does not exist). */
static int ncols(sqlite3 *db, const char *table) {
  sqlite3_stmt *st;
  int n = 0;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM pragma_table_info(?1)", -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* 1 when table exists with every column in cols (NULL-ended); else 0, and
** when the table exists, the missing columns appended to why. */
static int has_cols(sqlite3 *db, const char *table, const char *const *cols, sqlite3_str *why) {
  if (!has_table(db, table)) return 0;
  int ok = 1;
  for (int i = 0; cols[i]; i++)
    if (!col_type(db, table, cols[i], NULL, 0)) {
      if (why) sqlite3_str_appendf(why, "%s%s.%s", ok ? "" : ", ", table, cols[i]);
      ok = 0;
    }
  if (!ok && why) sqlite3_str_appendall(why, " missing; ");
  return ok;
}

/* Rows of table, or -1 when it cannot be counted (a vec0 table, whose
** module is not loaded here, is counted by its _rowids shadow table). */
static sqlite3_int64 count_rows(sqlite3 *db, const char *table) {
  char *q = sqlite3_mprintf(has_table(db, table) && !ncols(db, table) ? "SELECT count(*) FROM \"%w_rowids\""
                                                                      : "SELECT count(*) FROM \"%w\"", table);
  sqlite3_stmt *st;
  sqlite3_int64 n = -1;
  if (q && sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_free(q);
  return n;
}

/* "table": rows into the report's "tables" object, for the tables that exist. */
static void report_tables(sqlite3 *db, mig_plan *p, const char *const *names) {
  int first = 1;
  sqlite3_str_appendall(p->info, ",\"tables\":{");
  for (int i = 0; names[i]; i++) {
    if (!has_table(db, names[i])) continue;
    if (!first) sqlite3_str_appendchar(p->info, 1, ',');
    mig_json_str(p->info, names[i], strlen(names[i]));
    sqlite3_str_appendf(p->info, ":%lld", (long long)count_rows(db, names[i]));
    first = 0;
  }
  sqlite3_str_appendall(p->info, "}");
}

/* J(col): a column as a value json_object() accepts. */
#define J(c) "CASE typeof(" c ") WHEN 'blob' THEN hex(" c ") ELSE " c " END"

/* Milliseconds (as OpenClaw's Date.now() writes) to seconds; values below
** 1e11 (before 1973 in ms, after 5138 in s) are taken as seconds. */
#define MS_TO_S(c)                                                                         \
  "CASE WHEN typeof(" c ") IN ('integer','real') AND abs(" c ") >= 100000000000 THEN " c \
  " / 1000 ELSE " c " END"

/* The meta of an OpenClaw chunk (both schemas; t: the table's alias and
** a dot, or ""): its own columns, the object left open for more. */
#define OPENCLAW_META(t)                                                                     \
  "json_object('openclaw_id', " J(t "id") ", 'path', " J(t "path") ", 'start_line', "         \
  J(t "start_line") ", 'end_line', " J(t "end_line") ", 'hash', " J(t "hash") ", 'model', " \
  J(t "model") ", 'updated_at', " J(t "updated_at")

/* Member key of the JSON object s[0..len) as json_extract(s, '$.key')
** gives it as text: a string decoded, a number or container as written,
** NULL for null or absent (and out of memory: *nomem set).  malloc'd. */
static char *meta_member(const char *s, size_t len, const char *key, int *nomem) {
  size_t v0, v1;
  if (util_json_at_path(s, len, key, &v0, &v1)) return NULL;
  int t = util_json_type(s, v0, len);
  if (t == UTIL_JSON_NULL) return NULL;
  char *out = t == UTIL_JSON_TEXT ? util_json_cstr(s, v0, len, NULL) : malloc(v1 - v0 + 1);
  if (!out) *nomem = 1;
  else if (t != UTIL_JSON_TEXT) {
    memcpy(out, s + v0, v1 - v0);
    out[v1 - v0] = 0;
  }
  return out;
}

/* The vector size at member vectorDims, as sqlite3_column_int64 reads
** json_extract's value: an integer, a real truncated, true 1, a string's
** leading integer; 0 for anything else. */
static long long meta_dims(const char *s, size_t len, int *nomem) {
  size_t v0, v1;
  if (util_json_at_path(s, len, "vectorDims", &v0, &v1)) return 0;
  int64_t n;
  double d;
  switch (util_json_type(s, v0, len)) {
  case UTIL_JSON_TRUE: return 1;
  case UTIL_JSON_INTEGER:
  case UTIL_JSON_REAL:
    switch (util_json_number(s, v0, len, &n, &d)) {
    case UTIL_JSON_INTEGER: return n;
    case UTIL_JSON_REAL: return d > -1e18 && d < 1e18 ? (long long)d : 0; /* out of range: no size */
    default: *nomem = 1; return 0;
    }
  case UTIL_JSON_TEXT: {
    char *t = util_json_cstr(s, v0, len, NULL);
    if (!t) *nomem = 1;
    long long v = t ? strtoll(t, NULL, 10) : 0;
    free(t);
    return v;
  }
  default: return 0;
  }
}

/* OpenClaw's meta row (key memory_index_meta_v1, a JSON object with
** provider, model, vectorDims, ...) into the plan: embedder, attributes.
** The first row whose value is valid JSON counts. */
static int openclaw_meta(sqlite3 *db, const char *table, mig_plan *p) {
  char *q = sqlite3_mprintf("SELECT value FROM \"%w\" WHERE key = 'memory_index_meta_v1'", table);
  sqlite3_stmt *st;
  if (!q) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
  sqlite3_free(q);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK; /* not readable: nothing to learn */
  const char *raw = NULL;
  size_t len = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    raw = (const char *)sqlite3_column_text(st, 0);
    len = (size_t)sqlite3_column_bytes(st, 0);
    if (raw && util_json_valid(raw, len, NULL, 0) == 0) break;
    raw = NULL;
  }
  if (raw) {
    int nomem = 0;
    char *prov = meta_member(raw, len, "provider", &nomem);
    char *model = meta_member(raw, len, "model", &nomem);
    long long dims = meta_dims(raw, len, &nomem);
    rc = nomem ? SQLITE_NOMEM : mig_attr(p, "migrated_meta", raw);
    if (rc == SQLITE_OK && prov) rc = mig_attr(p, "migrated_provider", prov);
    if (rc == SQLITE_OK && model) rc = mig_attr(p, "migrated_model", model);
    if (dims > 0 && dims <= 65536) {
      char b[32];
      snprintf(b, sizeof b, "%lld", dims);
      if (rc == SQLITE_OK) rc = mig_attr(p, "migrated_dims", b);
      p->dim = (int)dims;
    }
    if (prov || model)
      p->embedder = sqlite3_mprintf("%s%s%s", prov ? prov : "", prov && model ? "/" : "",
                                    model ? model : "");
    sqlite3_str_appendf(p->info, ",\"source_meta\":%s", *raw ? raw : "null");
    free(prov);
    free(model);
  } else {
    mig_note(p, "%s has no memory_index_meta_v1 row: provider, model and dims unknown", table);
  }
  sqlite3_finalize(st);
  return rc;
}

/* The vec0 table vt beside a layout's main table (LangChain's {table}_vec,
** OpenClaw's chunks_vec): its vector column's dim where the plan has none,
** and, when the layout's own searches rank with vec0's MATCH
** (take_metric), its metric (vec0's distance_metric, else l2; L1, which
** an h5mem store has not, becomes l2 with a note).  The report's info
** gets "vec_table".  A missing or unreadable declaration changes nothing. */
static int vec_decl(sqlite3 *db, const char *vt, mig_plan *p, int take_metric) {
  int dim = 0, metric = STORE_L2;
  char col[128];
  int rc = mig_vec0_vector(db, vt, &dim, &metric, col, sizeof col);
  if (rc == SQLITE_NOTFOUND) return SQLITE_OK;
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_OK;
  const char *mname = metric == STORE_COSINE ? "cosine" : metric == STORE_L2 ? "l2" : "l1";
  sqlite3_str_appendall(p->info, ",\"vec_table\":{\"table\":");
  mig_json_str(p->info, vt, strlen(vt));
  sqlite3_str_appendall(p->info, ",\"column\":");
  mig_json_str(p->info, col, strlen(col));
  sqlite3_str_appendf(p->info, ",\"dim\":%d,\"distance_metric\":\"%s\"}", dim, mname);
  if (!p->dim) p->dim = dim;
  else if (p->dim != dim)
    mig_note(p, "%s declares %s float[%d]; the store takes dim=%d", vt, col, dim, p->dim);
  if (take_metric) {
    p->metric = metric < 0 ? STORE_L2 : metric;
    if (metric < 0) mig_note(p, "%s ranks by L1, which h5mem has not: the new store uses l2", vt);
  }
  return SQLITE_OK;
}

/* ---- the schemas ------------------------------------------------------- */

/* What a detected schema's plan says of its source: the schema, what its
** reading is based on, the table (copied), the embeddings' encoding, the
** metric (-1: not known) and where the ids come from.  Every known schema
** has a text column and integer ids. */
static void plan_schema(mig_plan *p, const char *schema, const char *based_on, const char *table,
                        int enc, int metric, const char *ids_from) {
  p->schema = schema;
  p->based_on = sqlite3_mprintf("%s", based_on);
  p->table = sqlite3_mprintf("%s", table);
  p->enc = enc;
  p->metric = metric;
  p->has_text = 1;
  p->ids = 1;
  p->ids_from = ids_from;
}

/* Each detector: 1 when the source is this schema (the plan filled), 0 when
** not (why it almost was, in why), or an SQLite error. */

/* OpenClaw, legacy per-agent file (~/.openclaw/memory/<agent>.sqlite). */
static int det_openclaw_legacy(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  (void)w;
  static const char *const chunks[] = {"id", "path", "start_line", "end_line", "hash", "model",
                                       "text", "embedding", "updated_at", NULL};
  static const char *const kv[] = {"key", "value", NULL};
  static const char *const files[] = {"path", "hash", "mtime", "size", NULL};
  if (!has_table(db, "chunks") || !has_table(db, "meta")) return 0;
  int ok = has_cols(db, "meta", kv, why);
  ok = has_cols(db, "files", files, why) && ok;
  ok = has_cols(db, "chunks", chunks, why) && ok;
  if (!ok) {
    sqlite3_str_appendall(why, "(not OpenClaw's legacy memory index) ");
    return 0;
  }
  int has_source = col_type(db, "chunks", "source", NULL, 0);
  int has_dims = col_type(db, "chunks", "dims", NULL, 0);
  plan_schema(p, "openclaw-legacy",
              "openclaw/openclaw src/memory/memory-schema.ts (meta, files, "
              "chunks with JSON embeddings, chunks_fts, chunks_vec)",
              "chunks", MIG_ENC_F32 /* TEXT values: JSON arrays */, STORE_COSINE,
              "the rowid of chunks (its id is text: kept in meta.openclaw_id)");
  p->sql = sqlite3_mprintf(
      "SELECT rowid AS id, text, embedding, %s AS source,"
      " CASE WHEN %s = 'sessions' THEN path END AS session, " MS_TO_S("updated_at") " AS ts,"
      " " OPENCLAW_META("") "%s) AS meta FROM chunks ORDER BY rowid",
      has_source ? "source" : "'memory'", has_source ? "source" : "'memory'",
      has_dims ? ", 'dims', " J("dims") : "");
  int rc = openclaw_meta(db, "meta", p);
  /* (OpenClaw ranks with vec_distance_cosine over chunks_vec: cosine stays) */
  if (rc == SQLITE_OK) rc = vec_decl(db, "chunks_vec", p, 0);
  static const char *const t[] = {"meta", "files", "chunks", "chunks_fts", "chunks_vec",
                                  "embedding_cache", NULL};
  report_tables(db, p, t);
  if (has_table(db, "chunks_vec"))
    mig_note(p, "chunks_vec (sqlite-vec) holds the same vectors as chunks.embedding; read from chunks");
  return rc == SQLITE_OK ? 1 : rc;
}

/* OpenClaw, current memory_index_* tables (per-agent database). */
static int det_openclaw(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  (void)w;
  static const char *const chunks[] = {"id", "path", "source", "start_line", "end_line", "hash",
                                       "model", "text", "embedding", "updated_at", NULL};
  static const char *const kv[] = {"key", "value", NULL};
  if (!has_table(db, "memory_index_chunks")) return 0;
  int ok = has_cols(db, "memory_index_meta", kv, why);
  if (!has_table(db, "memory_index_meta")) {
    sqlite3_str_appendall(why, "memory_index_meta missing; ");
    ok = 0;
  }
  ok = has_cols(db, "memory_index_chunks", chunks, why) && ok;
  char et[64];
  col_type(db, "memory_index_chunks", "embedding", et, sizeof et);
  if (ok && strcmp(et, "BLOB") && strcmp(et, "TEXT")) {
    sqlite3_str_appendf(why, "memory_index_chunks.embedding is declared '%s', not BLOB or TEXT; ", et);
    ok = 0;
  }
  if (!ok) {
    sqlite3_str_appendall(why, "(not OpenClaw's memory_index_* schema) ");
    return 0;
  }
  int rowid_col = col_type(db, "memory_index_chunks", "chunk_rowid", NULL, 0);
  int imp = col_type(db, "memory_index_chunks", "importance", NULL, 0);
  int trig = col_type(db, "memory_index_chunks", "triggers", NULL, 0);
  int proj = col_type(db, "memory_index_chunks", "project_key", NULL, 0);
  /* the side tables of 2026.8 and later, one row per chunk keyed by its
     text id: recall metadata (importance 1-10, triggers, project keys)
     and provenance (origin_class, session_kind, observed_at in ms,
     supersedes_key) */
  static const char *const rc_cols[] = {"chunk_id", "importance", "triggers", "project_key", NULL};
  static const char *const pv_cols[] = {"chunk_id", "origin_class", "session_kind", "observed_at",
                                        "supersedes_key", NULL};
  int recall = has_table(db, "memory_index_chunk_recall_metadata") &&
               has_cols(db, "memory_index_chunk_recall_metadata", rc_cols, NULL);
  int prov = has_table(db, "memory_index_chunk_provenance") &&
             has_cols(db, "memory_index_chunk_provenance", pv_cols, NULL);
  plan_schema(p, "openclaw",
              "openclaw/openclaw packages/memory-host-sdk/src/host/memory-schema-base.ts and "
              "memory-schema-storage-migration.ts (memory_index_chunks with float64 LE BLOB "
              "embeddings and chunk_rowid, or the earlier JSON TEXT embeddings); the recall "
              "metadata and provenance tables of the npm package openclaw 2026.8.2 and 2026.9.6 "
              "(dist/memory-schema-*.js)",
              "memory_index_chunks", MIG_ENC_F64 /* BLOB: float64 LE; TEXT: JSON */, STORE_COSINE,
              rowid_col ? "memory_index_chunks.chunk_rowid (its text id in meta.openclaw_id)"
                        : "the rowid of memory_index_chunks (its text id in meta.openclaw_id)");
  const char *imp_sql = recall && imp ? "coalesce(r.importance, c.importance)"
                        : recall         ? "r.importance"
                        : imp            ? "c.importance"
                                         : "NULL";
  p->sql = sqlite3_mprintf(
      "SELECT %s AS id, c.text, c.embedding, c.source, CASE WHEN c.source = 'sessions' THEN c.path END"
      " AS session, " MS_TO_S("c.updated_at") " AS ts, %s AS importance,"
      " " OPENCLAW_META("c.") "%s%s%s%s) AS meta"
      " FROM memory_index_chunks AS c%s%s ORDER BY c.%s",
      rowid_col ? "c.chunk_rowid" : "c.rowid", imp_sql,
      trig && !recall ? ", 'triggers', " J("c.triggers") : "",
      proj && !recall ? ", 'project_key', " J("c.project_key") : "",
      recall ? ", 'triggers', " J("r.triggers") ", 'project_key', " J("r.project_key") : "",
      prov ? ", 'provenance', CASE WHEN pv.chunk_id IS NOT NULL THEN json_object('origin_class', "
             J("pv.origin_class") ", 'session_kind', " J("pv.session_kind") ", 'observed_at', "
             J("pv.observed_at") ", 'supersedes_key', " J("pv.supersedes_key") ") END" : "",
      recall ? " LEFT JOIN memory_index_chunk_recall_metadata AS r ON r.chunk_id = c.id" : "",
      prov ? " LEFT JOIN memory_index_chunk_provenance AS pv ON pv.chunk_id = c.id" : "",
      rowid_col ? "chunk_rowid" : "rowid");
  int rc = openclaw_meta(db, "memory_index_meta", p);
  if (rc == SQLITE_OK) rc = vec_decl(db, "memory_index_chunks_vec", p, 0);
  static const char *const t[] = {
      "memory_index_meta", "memory_index_sources", "memory_index_chunks",
      "memory_index_chunks_fts", "memory_index_chunks_vec", "memory_index_chunk_recall_metadata",
      "memory_index_chunk_provenance", "memory_embedding_cache", "memory_index_state", NULL};
  report_tables(db, p, t);
  if (has_table(db, "memory_index_chunk_recall_metadata") && !recall)
    mig_note(p, "memory_index_chunk_recall_metadata lacks OpenClaw's columns (chunk_id, importance, "
                "triggers, project_key): not read");
  if (has_table(db, "memory_index_chunk_provenance") && !prov)
    mig_note(p, "memory_index_chunk_provenance lacks OpenClaw's columns (chunk_id, origin_class, "
                "session_kind, observed_at, supersedes_key): not read");
  return rc == SQLITE_OK ? 1 : rc;
}

/* ClawhDF5's migration schema (clawhdf5-migrate's input). */
static int det_clawhdf5(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  static const char *const mc[] = {"id", "chunk", "embedding", "source_channel", "timestamp",
                                   "session_id", "tags", "deleted", NULL};
  if (!has_table(db, "memory_chunks")) return 0;
  if (!has_cols(db, "memory_chunks", mc, why)) {
    sqlite3_str_appendall(why, "(not ClawhDF5's migration schema) ");
    return 0;
  }
  plan_schema(p, "clawhdf5",
              "redclawsystems/clawhdf5@befeeaa8 crates/clawhdf5-migrate "
              "(sqlite_reader.rs and the test schema in main.rs)",
              "memory_chunks", MIG_ENC_F32, STORE_COSINE, "memory_chunks.id");
  p->sql = sqlite3_mprintf(
      "SELECT id, chunk AS text, embedding, source_channel AS source, session_id AS session,"
      " tags, timestamp AS ts, %s AS _skip,"
      " CASE WHEN typeof(timestamp) = 'real' AND timestamp <> CAST(timestamp AS INTEGER) THEN"
      " json_object('timestamp', timestamp) END AS meta FROM memory_chunks ORDER BY id",
      w->include_deleted ? "NULL" : "CASE WHEN deleted THEN 'deleted' END");
  static const char *const t[] = {"memory_chunks", "sessions", "entities", "relations", NULL};
  report_tables(db, p, t);
  if (has_table(db, "sessions"))
    mig_note(p, "sessions rows are not records: each memory keeps its session_id in the session "
                "column (the summaries are not migrated)");
  p->graph = mig_graph_write;
  char *e = NULL;
  int rc = mig_graph_clawhdf5(db, p, &e);
  sqlite3_free(e);
  return rc == SQLITE_OK ? 1 : rc;
}

/* LangChain's SQLiteVec: a table of exactly (rowid, text, metadata,
** text_embedding), beside its {table}_vec vec0 table. */
static int langchain_shaped(sqlite3 *db, const char *t) {
  static const char *const c[] = {"rowid", "text", "metadata", "text_embedding", NULL};
  return ncols(db, t) == 4 && has_cols(db, t, c, NULL);
}

static int langchain_plan(sqlite3 *db, const char *t, mig_plan *p) {
  plan_schema(p, "langchain",
              "langchain-ai/langchain-community@bc877730 "
              "libs/community/langchain_community/vectorstores/sqlitevec.py",
              t, MIG_ENC_F32, -1, "the table's rowid");
  p->sql = sqlite3_mprintf("SELECT rowid AS id, text, text_embedding AS embedding,"
                           " metadata AS meta FROM \"%w\" ORDER BY rowid", t);
  char *vec = sqlite3_mprintf("%s_vec", t);
  if (!vec || !p->sql) {
    sqlite3_free(vec);
    return SQLITE_NOMEM;
  }
  const char *tabs[] = {t, vec, NULL};
  report_tables(db, p, tabs);
  /* the class ranks with {table}_vec's MATCH: its metric is the store's */
  int rc = vec_decl(db, vec, p, 1);
  if (rc == SQLITE_OK && p->metric < 0) {
    p->metric = STORE_L2;
    mig_note(p, "no vec0 table %s: the metric is vec0's default, l2, as SQLiteVec's would be", vec);
  }
  sqlite3_free(vec);
  return rc == SQLITE_OK ? 1 : rc;
}

static int langchain_match(sqlite3 *db, const char *name, const char *sql) {
  (void)sql;
  return langchain_shaped(db, name);
}

/* A layout of one table of some shape (match): the plan of the one such
** table; 0 (why) when there are none or several (what: their name). */
static int det_one_table(sqlite3 *db, int (*match)(sqlite3 *, const char *, const char *),
                         int (*plan)(sqlite3 *, const char *, mig_plan *), const char *what, mig_plan *p,
                         sqlite3_str *why) {
  char *found;
  int n;
  int rc = matching_tables(db, match, &found, &n);
  if (rc) return rc;
  if (n > 1) sqlite3_str_appendf(why, "%d %s tables (give {\"table\": ...}); ", n, what);
  if (n == 1) rc = plan(db, found, p);
  sqlite3_free(found);
  return rc;
}

static int det_langchain(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  (void)w;
  return det_one_table(db, langchain_match, langchain_plan, "LangChain SQLiteVec", p, why);
}

/* LangChain.js' LibSQLVectorStore: a table of content, metadata and one
** libSQL vector column (F32_BLOB(N), or its alias FLOAT32(N)), with an
** INTEGER PRIMARY KEY id or none (the rowid): N, or 0 when not. */
static int libsql_dim(sqlite3 *db, const char *t, char *col, size_t n) {
  sqlite3_stmt *st;
  int dim = 0, others = 0, content = 0, metadata = 0;
  if (sqlite3_prepare_v2(db, "SELECT name, upper(type), pk FROM pragma_table_info(?1)", -1, &st, NULL) !=
      SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0), *type = (const char *)sqlite3_column_text(st, 1);
    if (!name || !type) continue;
    int d = 0, k = 0;
    if ((sscanf(type, "F32_BLOB(%d)%n", &d, &k) == 1 || sscanf(type, "FLOAT32(%d)%n", &d, &k) == 1) &&
        !type[k] && d > 0 && d <= 65536 && !dim) {
      dim = d;
      snprintf(col, n, "%s", name);
    } else if (!sqlite3_stricmp(name, "content")) {
      content = 1;
    } else if (!sqlite3_stricmp(name, "metadata")) {
      metadata = 1;
    } else if (!(!sqlite3_stricmp(name, "id") && !strcmp(type, "INTEGER") && sqlite3_column_int(st, 2) == 1)) {
      others++;
    }
  }
  sqlite3_finalize(st);
  return content && metadata && !others ? dim : 0;
}

static int libsql_match(sqlite3 *db, const char *name, const char *sql) {
  (void)sql;
  char col[128];
  return libsql_dim(db, name, col, sizeof col) > 0;
}

static int libsql_plan(sqlite3 *db, const char *t, mig_plan *p) {
  char col[128];
  int dim = libsql_dim(db, t, col, sizeof col);
  plan_schema(p, "langchainjs-libsql",
              "@langchain/community 1.1.29 dist/vectorstores/libsql.js (LibSQLVectorStore) and "
              "tursodatabase/libsql@f8fb14f3 libsql-sqlite3/src/vectorInt.h (F32_BLOB: float32 LE, "
              "an optional type byte 1 after it)",
              t, MIG_ENC_F32, STORE_COSINE /* it ranks with vector_distance_cos */, "the table's rowid");
  p->dim = dim;
  /* NOT INDEXED: libSQL's vector index is an index SQLite sees as empty
     (its graph is in shadow tables), and would read no rows */
  p->sql = sqlite3_mprintf(
      "SELECT rowid AS id, content AS text,"
      " CASE WHEN typeof(\"%w\") = 'blob' AND length(\"%w\") = %d AND substr(\"%w\", -1) = x'01'"
      " THEN substr(\"%w\", 1, %d) ELSE \"%w\" END AS embedding, metadata AS meta"
      " FROM \"%w\" NOT INDEXED ORDER BY rowid",
      col, col, 4 * dim + 1, col, col, 4 * dim, col, t);
  sqlite3_str_appendall(p->info, ",\"libsql\":{\"vector_column\":");
  mig_json_str(p->info, col, strlen(col));
  sqlite3_str_appendf(p->info, ",\"dim\":%d}", dim);
  const char *tabs[] = {t, NULL};
  report_tables(db, p, tabs);
  return p->sql ? 1 : SQLITE_NOMEM;
}

static int det_libsql(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  (void)w;
  return det_one_table(db, libsql_match, libsql_plan, "LangChain.js LibSQL", p, why);
}

/* mem0's OSS store (npm mem0ai 3.3.1, dist/oss/index.js): MemoryVectorStore's
** vectors(id TEXT PRIMARY KEY (a UUID), vector BLOB (float32), payload TEXT
** (JSON: data, hash, textLemmatized, createdAt, updatedAt, user_id,
** agent_id, run_id and the caller's metadata flat beside them)) and
** memory_migrations (l. 896-1247); the entity store beside it, the same
** tables in <name>_entities.db, payload {data, entityType, linkedMemoryIds,
** scopes} (l. 17166-17366); the history, memory_history (l. 4944-5068) in
** another file (historyDbPath: memory.db in the process's folder unless
** given). */

/* 1 when sql (one value) gives a row, 0 when not (or it fails). */
static int any_row(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return 0;
  int r = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return r;
}

/* Attach file (read-only) as schema name when it can be read and its table
** t has the columns of probe (a SELECT ... FROM name.t LIMIT 0): 1, else
** 0 (detached again; why noted in the plan when the file is there). */
static int attach_if(sqlite3 *db, const char *file, const char *name, const char *probe, int immutable,
                     mig_plan *p) {
  if (access(file, R_OK) != 0) return 0;
  char *uri = mig_ro_uri(file, immutable);
  char *q = uri ? sqlite3_mprintf("ATTACH %Q AS %s", uri, name) : NULL;
  int rc = q ? sqlite3_exec(db, q, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(q);
  sqlite3_free(uri);
  if (rc == SQLITE_OK) {
    sqlite3_stmt *st;
    rc = sqlite3_prepare_v2(db, probe, -1, &st, NULL);
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
      mig_note(p, "%s is not mem0's (%s): not read", file, sqlite3_errmsg(db));
      q = sqlite3_mprintf("DETACH %s", name);
      if (q) sqlite3_exec(db, q, NULL, NULL, NULL);
      sqlite3_free(q);
    }
  } else if (rc != SQLITE_NOMEM) {
    mig_note(p, "%s cannot be read: %s", file, sqlite3_errmsg(db));
  }
  return rc == SQLITE_OK;
}

/* path's folder joined with name (sqlite3_malloc'd). */
static char *beside(const char *path, const char *name) {
  const char *slash = strrchr(path, '/');
  return slash ? sqlite3_mprintf("%.*s/%s", (int)(slash - path), path, name) : sqlite3_mprintf("%s", name);
}

/* A payload member as text, whatever the payload is (NULL when it is not
** JSON); camel: the name mem0's earlier files used, read when the other is
** missing. */
#define M0(k) "CASE WHEN json_valid(v.payload) THEN json_extract(v.payload, '$." k "') END"
#define M0C(k, camel) "coalesce(" M0(k) ", " M0(camel) ")"
#define M0_ENTITY "(CASE WHEN json_valid(payload) THEN json_type(payload, '$.linkedMemoryIds') END IS 'array')"

static int det_mem0(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  static const char *const v[] = {"id", "vector", "payload", NULL};
  static const char *const mm[] = {"id", "user_id", NULL};
  if (!has_table(db, "vectors") || !has_table(db, "memory_migrations")) return 0;
  int ok = has_cols(db, "vectors", v, why) && ncols(db, "vectors") == 3;
  ok = has_cols(db, "memory_migrations", mm, why) && ok;
  if (!ok) {
    sqlite3_str_appendall(why, "(not mem0's vector store) ");
    return 0;
  }
  /* (entity rows in the memories' own table: a dbPath not ending in .db) */
  int own_ents = any_row(db, "SELECT 1 FROM vectors WHERE " M0_ENTITY);
  if (own_ents && !any_row(db, "SELECT 1 FROM vectors WHERE NOT " M0_ENTITY)) {
    sqlite3_str_appendall(why, "vectors holds mem0's entities (linkedMemoryIds) and no memories: migrate "
                               "the memories' file (vector_store.db), which brings its entities; ");
    return 0;
  }
  plan_schema(p, "mem0",
              "npm mem0ai 3.3.1 dist/oss/index.js: MemoryVectorStore (vectors, memory_migrations; "
              "l. 896-1247), the entity store beside it (l. 17166-17366), SQLiteManager's "
              "memory_history (l. 4944-5068)",
              "vectors", MIG_ENC_F32, STORE_COSINE /* its search: cosineSimilarity, l. 938 */,
              "the rowid of vectors (mem0's UUID in the column mem0_id)");
  /* the files beside it: the entity store (dbPath with .db made
     _entities.db) and the history (historyDbPath) */
  int rc = SQLITE_OK, ents = 0, hist = 0;
  char *ef = w->entities ? sqlite3_mprintf("%s", w->entities) : NULL;
  if (!ef && w->srcpath) {
    size_t n = strlen(w->srcpath);
    if (n > 3 && !strcmp(w->srcpath + n - 3, ".db"))
      ef = sqlite3_mprintf("%.*s_entities.db", (int)(n - 3), w->srcpath);
  }
  if (ef) ents = attach_if(db, ef, "mem0_entities", "SELECT id, vector, payload FROM mem0_entities.vectors LIMIT 0",
                           w->immutable, p);
  if (w->entities && !ents) {
    sqlite3_str_appendf(why, "the entity store %s cannot be read as mem0's; ", w->entities);
    sqlite3_free(ef);
    return 0;
  }
  char *hf = NULL;
  static const char *const hnames[] = {"history.db", "memory.db"};
  for (int i = 0; !hist && i < (w->history ? 1 : 2); i++) {
    sqlite3_free(hf);
    hf = w->history ? sqlite3_mprintf("%s", w->history) : w->srcpath ? beside(w->srcpath, hnames[i]) : NULL;
    if (hf && w->srcpath && !strcmp(hf, w->srcpath)) continue;
    if (hf)
      hist = attach_if(db, hf, "mem0_history", "SELECT memory_id, previous_value, new_value, action, created_at, "
                       "updated_at, is_deleted FROM mem0_history.memory_history LIMIT 0", w->immutable, p);
  }
  if (w->history && !hist) {
    sqlite3_str_appendf(why, "the history %s cannot be read as mem0's; ", w->history);
    sqlite3_free(ef);
    sqlite3_free(hf);
    return 0;
  }
  /* each memory a record: payload.data the text, the UUID and the scopes
     declared columns, the rest of the payload (textLemmatized, derived,
     dropped) and its history in meta */
  p->sql = sqlite3_mprintf(
      "SELECT v.rowid AS id, " M0("data") " AS text, v.vector AS embedding, " M0("createdAt") " AS ts,"
      " CASE WHEN NOT json_valid(v.payload) THEN 'bad_payload: the payload is not JSON'"
      " WHEN json_type(v.payload) <> 'object' THEN 'bad_payload: the payload is not a JSON object' END AS _skip,"
      " CASE WHEN json_valid(v.payload) AND json_type(v.payload) = 'object' THEN %s"
      "json_remove(v.payload, '$.data', '$.textLemmatized', '$.user_id', '$.agent_id', '$.run_id',"
      " '$.userId', '$.agentId', '$.runId')%s END AS meta,"
      " v.id AS mem0_id, " M0C("user_id", "userId") " AS user_id, " M0C("agent_id", "agentId") " AS agent_id, "
      M0C("run_id", "runId") " AS run_id"
      " FROM vectors AS v WHERE NOT " M0_ENTITY " ORDER BY v.rowid",
      hist ? "json_set(" : "",
      hist ? ", '$.history', (SELECT json_group_array(json_object('action', action, 'previous_value',"
             " previous_value, 'new_value', new_value, 'created_at', created_at, 'updated_at', updated_at,"
             " 'is_deleted', is_deleted)) FROM (SELECT * FROM mem0_history.memory_history AS h"
             " WHERE h.memory_id = v.id ORDER BY h.id)))" : "");
  static const char *const decls[] = {"mem0_id text primary key", "user_id text", "agent_id text",
                                      "run_id text"};
  for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
    char e[200];
    mig_decl *d = &p->decl[p->ndecl];
    memset(d, 0, sizeof *d);
    if (store_coldef_parse(decls[i], strlen(decls[i]), &d->def, e, sizeof e) != STORE_OK) rc = SQLITE_INTERNAL;
    snprintf(d->src, sizeof d->src, "%s", decls[i]);
    d->src[strcspn(d->src, " ")] = 0; /* (its name, in meta when the destination lacks it) */
    p->ndecl++;
  }
  /* what there is, and what is not migrated */
  sqlite3_str_appendall(p->info, ",\"mem0\":{\"entities\":");
  if (ents) mig_json_str(p->info, ef, strlen(ef));
  else sqlite3_str_appendall(p->info, "null");
  sqlite3_str_appendall(p->info, ",\"history\":");
  if (hist) mig_json_str(p->info, hf, strlen(hf));
  else sqlite3_str_appendall(p->info, "null");
  sqlite3_str_appendchar(p->info, 1, '}');
  if (!ents && !own_ents)
    mig_note(p, "no mem0 entity store beside the source%s%s: no entities migrated (give {\"entities\": path})",
             ef ? " at " : "", ef ? ef : "");
  if (!hist)
    mig_note(p, "no mem0 history (memory_history) beside the source (history.db or memory.db): the "
                "memories' histories are not migrated (give {\"history\": path})");
  if (hist) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT count(DISTINCT memory_id), count(*) FROM mem0_history.memory_history "
                           "WHERE memory_id NOT IN (SELECT id FROM main.vectors)", -1, &st, NULL) == SQLITE_OK) {
      if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
        mig_note(p, "the history of %lld memories no longer in vectors (deleted: %lld events) is not migrated",
                 (long long)sqlite3_column_int64(st, 0), (long long)sqlite3_column_int64(st, 1));
      sqlite3_finalize(st);
    }
  }
  if (ents || own_ents) p->graph = mig_graph_mem0;
  static const char *const t[] = {"vectors", "memory_migrations", NULL};
  report_tables(db, p, t);
  mig_note(p, "payload.textLemmatized is derived from the text (and from the optional packages mem0 found): "
              "not migrated");
  sqlite3_free(ef);
  sqlite3_free(hf);
  if (rc == SQLITE_OK && !p->sql) rc = SQLITE_NOMEM;
  return rc == SQLITE_OK ? 1 : rc;
}

/* LangGraph's SqliteStore (store, store_vectors). */
static int det_langgraph(sqlite3 *db, const mig_want *w, mig_plan *p, sqlite3_str *why) {
  (void)w;
  static const char *const s[] = {"prefix", "key", "value", "created_at", "updated_at", NULL};
  static const char *const v[] = {"prefix", "key", "field_name", "embedding", "created_at",
                                  "updated_at", NULL};
  if (!has_table(db, "store_vectors") && !has_table(db, "store")) return 0;
  int ok = has_cols(db, "store", s, why);
  ok = has_cols(db, "store_vectors", v, why) && ok;
  if (!ok) {
    if (!has_table(db, "store_vectors")) sqlite3_str_appendall(why, "store_vectors missing; ");
    sqlite3_str_appendall(why, "(not LangGraph's SqliteStore with an index) ");
    return 0;
  }
  plan_schema(p, "langgraph",
              "langchain-ai/langgraph@b2926a0f (tag checkpointsqlite==3.1.1) "
              "libs/checkpoint-sqlite/langgraph/store/sqlite/base.py and "
              "libs/checkpoint/langgraph/store/base/embed.py",
              "store_vectors", MIG_ENC_F32, -1,
              "the rowid of store_vectors (namespace, key and field in meta)");
  /* LangGraph ranks with 1 - vec_distance_cosine: cosine */
  p->metric = STORE_COSINE;
  /* a vector older than its item's last write (put again with
     index=False, or with a value no longer giving that field) is stale:
     its text is not the one embedded; the store's times, and the TTL
     columns where the store has them (migrations 3 and 4), go into meta */
  int ttl = col_type(db, "store", "expires_at", NULL, 0), mins = col_type(db, "store", "ttl_minutes", NULL, 0);
  p->sql = sqlite3_mprintf(
      "SELECT id, text, _text_path, embedding, source, ts, _skip, _stale,"
      " CASE WHEN _stale IS NULL THEN meta ELSE json_set(meta, '$.stale_vector', json('true')) END AS meta"
      " FROM (SELECT v.rowid AS id, s.value AS text, v.field_name AS _text_path,"
      " CASE WHEN v.updated_at < s.updated_at THEN NULL ELSE v.embedding END AS embedding,"
      " v.prefix AS source, coalesce(s.updated_at, v.updated_at) AS ts,"
      " CASE WHEN s.key IS NULL THEN 'orphan: no item of this namespace and key in store (deleted)' END"
      " AS _skip,"
      " CASE WHEN v.updated_at < s.updated_at THEN 'the item was put again at ' || s.updated_at ||"
      " ' without this field being embedded again (the vector is of ' || v.updated_at || ')' END"
      " AS _stale,"
      " json_object('namespace', " J("v.prefix") ", 'key', " J("v.key") ", 'field', " J("v.field_name")
      ", 'value', CASE WHEN json_valid(s.value) THEN json(s.value) ELSE " J("s.value") " END"
      ", 'created_at', " J("s.created_at") ", 'updated_at', " J("s.updated_at")
      ", 'expires_at', %s, 'ttl_minutes', %s, 'embedded_at', " J("v.updated_at") ") AS meta"
      " FROM store_vectors AS v LEFT JOIN store AS s ON s.prefix = v.prefix AND s.key = v.key"
      " ORDER BY v.rowid)",
      ttl ? J("s.expires_at") : "NULL", mins ? "s.ttl_minutes" : "NULL");
  static const char *const t[] = {"store", "store_vectors", NULL};
  report_tables(db, p, t);
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT count(*) FROM store AS s WHERE NOT EXISTS (SELECT 1 FROM "
                         "store_vectors AS v WHERE v.prefix = s.prefix AND v.key = s.key)", -1,
                         &st, NULL) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > 0)
      mig_note(p, "%lld store items have no embedding (not indexed) and are not migrated",
               (long long)sqlite3_column_int64(st, 0));
    sqlite3_finalize(st);
  }
  return p->sql ? 1 : SQLITE_NOMEM;
}

/* 1 when column c of from (a table or a parenthesised SELECT) holds a
** value that is not an integer (nor NULL, nor an integral REAL an id can
** be): text ids; 0 when it holds none; else an error of the source. */
static int text_ids(sqlite3 *db, const char *from, const char *c) {
  char *q = sqlite3_mprintf("SELECT 1 FROM (SELECT \"%w\" AS v FROM %s) WHERE typeof(v) NOT IN "
                            "('integer', 'null') AND NOT (typeof(v) = 'real' AND v = CAST(v AS INTEGER) "
                            "AND abs(v) < 9.2e18) LIMIT 1", c, from);
  sqlite3_stmt *st;
  int rc = q ? sqlite3_prepare_v2(db, q, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(q);
  if (rc != SQLITE_OK) return rc;
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : rc;
}

/* Any table or SELECT, columns as named in the options (or named as the
** store's columns). */
static int det_generic(sqlite3 *db, const mig_want *w, mig_plan *p, char **err) {
  char *from = w->query ? sqlite3_mprintf("(%s)", w->query) : mig_ident(w->table);
  if (!from) return SQLITE_NOMEM;
  char *probe = sqlite3_mprintf("SELECT * FROM %s", from);
  sqlite3_stmt *st = NULL;
  int rc = probe ? sqlite3_prepare_v2(db, probe, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(probe);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("%s: %s", w->query ? "query" : w->table, sqlite3_errmsg(db));
    sqlite3_free(from);
    return SQLITE_ERROR;
  }
  int n = sqlite3_column_count(st);
  const char *col[MIG_NFIELD] = {0};
  /* {"id": "rowid"}: the table's rowid, unless a column has that name */
  int want_rowid = w->col[MIG_F_ID] && !sqlite3_stricmp(w->col[MIG_F_ID], "rowid");
  for (int f = 0; f < MIG_F_SOURCE_ID && rc == SQLITE_OK; f++) {
    const char *want = w->col[f] ? w->col[f] : mig_field_name[f];
    for (int i = 0; i < n; i++)
      if (!sqlite3_stricmp(sqlite3_column_name(st, i), want)) col[f] = sqlite3_column_name(st, i);
    if (w->col[f] && !col[f] && !(f == MIG_F_ID && want_rowid)) {
      *err = sqlite3_mprintf("columns: %s has no column '%s' (for %s)",
                             w->query ? "the query" : w->table, w->col[f], mig_field_name[f]);
      rc = SQLITE_ERROR;
    }
  }
  if (rc == SQLITE_OK && !col[MIG_F_EMB] && !col[MIG_F_TEXT]) {
    *err = sqlite3_mprintf("%s has neither a text nor an embedding column (name them: "
                           "{\"columns\": {\"text\": ..., \"embedding\": ...}})",
                           w->query ? "the query" : w->table);
    rc = SQLITE_ERROR;
  }
  /* ids: the id column when it holds integers; else (UUIDs, as mem0's
     vectors table has) it goes to meta.source_id and the table's rowid is
     the id, or new ids for a query or a table without rowid */
  int texts = rc == SQLITE_OK && col[MIG_F_ID] ? text_ids(db, from, col[MIG_F_ID]) : 0;
  if (texts == 1) {
    col[MIG_F_SOURCE_ID] = col[MIG_F_ID];
    col[MIG_F_ID] = NULL;
  } else if (texts) {
    *err = sqlite3_mprintf("%s: %s", w->query ? "query" : w->table, sqlite3_errmsg(db));
    rc = texts;
  }
  int rowid = 0;
  if (rc == SQLITE_OK && !col[MIG_F_ID] && !w->query) {
    char *q = sqlite3_mprintf("SELECT rowid FROM %s", from);
    sqlite3_stmt *t;
    if (q && sqlite3_prepare_v2(db, q, -1, &t, NULL) == SQLITE_OK) {
      rowid = 1;
      sqlite3_finalize(t);
    }
    sqlite3_free(q);
  }
  if (rc == SQLITE_OK && want_rowid && !col[MIG_F_ID] && !rowid) {
    *err = sqlite3_mprintf("columns: id: %s has no rowid%s", w->query ? "the query" : w->table,
                           w->query ? " (select one: SELECT rowid AS id, ...)" : " (WITHOUT ROWID)");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && col[MIG_F_SOURCE_ID])
    mig_note(p, "the id column \"%s\" holds text (or other non-integers), not integer ids: %s, and "
             "each row's %s is kept in meta.source_id", col[MIG_F_SOURCE_ID],
             rowid ? "the table's rowid is the id" : "new ids are assigned", col[MIG_F_SOURCE_ID]);
  sqlite3_str *s = sqlite3_str_new(NULL);
  if (rc == SQLITE_OK) {
    sqlite3_str_appendall(s, "SELECT ");
    for (int f = 0; f < MIG_NFIELD; f++) {
      if (f) sqlite3_str_appendall(s, ", ");
      if (col[f]) sqlite3_str_appendf(s, "\"%w\"", col[f]);
      else if (f == MIG_F_ID && rowid) sqlite3_str_appendall(s, "rowid");
      else sqlite3_str_appendall(s, "NULL");
      sqlite3_str_appendf(s, " AS \"%w\"", mig_field_name[f]);
    }
    sqlite3_str_appendf(s, " FROM %s%s", from, rowid ? " ORDER BY rowid" : "");
  }
  sqlite3_finalize(st);
  sqlite3_free(from);
  char *sql = sqlite3_str_finish(s);
  if (rc != SQLITE_OK) {
    sqlite3_free(sql);
    return rc;
  }
  if (!sql) return SQLITE_NOMEM;
  p->schema = "generic";
  p->based_on = sqlite3_mprintf("the options");
  p->table = sqlite3_mprintf("%s", w->query ? "(query)" : w->table);
  p->sql = sql;
  p->enc = MIG_ENC_AUTO;
  p->metric = -1;
  p->has_text = col[MIG_F_TEXT] != NULL;
  p->ids = col[MIG_F_ID] || rowid;
  p->ids_from = col[MIG_F_ID] ? "the id column"
                : col[MIG_F_SOURCE_ID] ? (rowid ? "the table's rowid (the id column's text in meta.source_id)"
                                                : "assigned (new ids; the id column's text in meta.source_id)")
                : rowid ? "the table's rowid" : "assigned (new ids)";
  if (!p->ids)
    mig_note(p, "the source has no integer ids: new ids are assigned, so running it again "
                "adds the rows again");
  return SQLITE_OK;
}

/* The vec0 tables of the source that no detected schema owns. */
static int vec0_match(sqlite3 *db, const char *name, const char *sql) {
  (void)db;
  (void)name;
  return sql && mig_is_vec0(sql);
}

static int vec0_tables(sqlite3 *db, char **first, int *n) {
  return matching_tables(db, vec0_match, first, n);
}

static int is_vec0_table(sqlite3 *db, const char *t) { return table_is(db, t, mig_is_vec0); }

typedef int (*detector)(sqlite3 *, const mig_want *, mig_plan *, sqlite3_str *);
static const struct {
  const char *name;
  detector fn;
} detectors[] = {{"openclaw", det_openclaw},
                 {"openclaw-legacy", det_openclaw_legacy},
                 {"clawhdf5", det_clawhdf5},
                 {"langchain", det_langchain},
                 {"langgraph", det_langgraph},
                 {"langchainjs-libsql", det_libsql},
                 {"mem0", det_mem0}};
#define NDET ((int)(sizeof detectors / sizeof detectors[0]))

static void plan_init(mig_plan *p) {
  memset(p, 0, sizeof *p);
  p->metric = -1;
  p->info = sqlite3_str_new(NULL);
  p->notes = sqlite3_str_new(NULL);
}

int mig_detect(sqlite3 *db, const mig_want *w, mig_plan *p, char **err) {
  plan_init(p);
  if (w->query || (w->schema && !strcmp(w->schema, "generic"))) {
    if (!w->query && !w->table) {
      *err = sqlite3_mprintf("schema generic needs {\"table\": ...} or {\"query\": ...}");
      return SQLITE_ERROR;
    }
    return det_generic(db, w, p, err);
  }
  if (w->table) {
    if (!has_table(db, w->table)) {
      *err = sqlite3_mprintf("the source has no table '%s'", w->table);
      return SQLITE_ERROR;
    }
    if (is_vec0_table(db, w->table)) { /* read by mig_vec0_open */
      p->vec0 = sqlite3_mprintf("%s", w->table);
      return p->vec0 ? SQLITE_OK : SQLITE_NOMEM;
    }
    if (langchain_shaped(db, w->table) && (!w->schema || !strcmp(w->schema, "langchain"))) {
      int rc = langchain_plan(db, w->table, p);
      return rc == 1 ? SQLITE_OK : rc;
    }
    if (libsql_match(db, w->table, NULL) && (!w->schema || !strcmp(w->schema, "langchainjs-libsql"))) {
      int rc = libsql_plan(db, w->table, p);
      return rc == 1 ? SQLITE_OK : rc;
    }
    if (!w->schema) return det_generic(db, w, p, err);
  }
  if (w->schema && !strcmp(w->schema, "sqlite-vec")) {
    char *first;
    int n;
    int rc = vec0_tables(db, &first, &n);
    if (rc) return rc;
    if (n != 1) {
      *err = sqlite3_mprintf(n ? "%d vec0 tables: name one with {\"table\": ...}"
                               : "no vec0 table in the source", n);
      sqlite3_free(first);
      return SQLITE_ERROR;
    }
    p->vec0 = first;
    return SQLITE_OK;
  }
  sqlite3_str *why = sqlite3_str_new(NULL);
  int matches = 0, rc = SQLITE_OK;
  char names[256] = "";
  for (int i = 0; i < NDET && rc == SQLITE_OK; i++) {
    if (w->schema && strcmp(w->schema, detectors[i].name)) continue;
    mig_plan trial;
    plan_init(&trial);
    int r = detectors[i].fn(db, w, &trial, why);
    if (r < 0 || r > 1) {
      rc = r;
      mig_plan_free(&trial);
    } else if (r == 1) {
      if (!matches++) {
        mig_plan_free(p);
        *p = trial;
      } else {
        mig_plan_free(&trial);
      }
      size_t l = strlen(names);
      snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", detectors[i].name);
    } else {
      mig_plan_free(&trial);
    }
  }
  char *whys = sqlite3_str_finish(why);
  for (size_t l = whys ? strlen(whys) : 0; l && (whys[l - 1] == ' ' || whys[l - 1] == ';'); l--) whys[l - 1] = 0;
  if (rc == SQLITE_OK && matches > 1) {
    *err = sqlite3_mprintf("the source matches several schemas (%s): choose one with "
                           "{\"schema\": ...}", names);
    rc = SQLITE_ERROR;
  } else if (rc == SQLITE_OK && !matches) {
    char *first = NULL;
    int n = 0;
    if (!w->schema) rc = vec0_tables(db, &first, &n);
    if (rc == SQLITE_OK && n == 1) {
      mig_plan_free(p);
      plan_init(p);
      p->vec0 = first;
      first = NULL;
    } else if (rc == SQLITE_OK && w->schema) {
      int known = 0;
      for (int i = 0; i < NDET; i++) known |= !strcmp(w->schema, detectors[i].name);
      *err = known ? sqlite3_mprintf("the source is not %s: %s", w->schema,
                                     whys && *whys ? whys : "its tables are missing")
                   : sqlite3_mprintf("unknown schema '%s' (known: openclaw, openclaw-legacy, "
                                     "clawhdf5, langchain, langgraph, langchainjs-libsql, mem0, "
                                     "sqlite-vec, generic)",
                                     w->schema);
      rc = SQLITE_ERROR;
    } else if (rc == SQLITE_OK) {
      *err = sqlite3_mprintf(
          "no known memory schema in the source%s%s%s; name a table or a query and its columns "
          "(docs/MIGRATION.md)",
          n > 1 ? " (several vec0 tables: name one with {\"table\": ...})" : "",
          whys && *whys ? ": " : "", whys ? whys : "");
      rc = SQLITE_ERROR;
    }
    sqlite3_free(first);
  }
  sqlite3_free(whys);
  return rc;
}

/* ---- reading with SQL ---------------------------------------------------- */

typedef struct sql_reader {
  mig_reader base;
  sqlite3_stmt *st;
  const char *names[MIG_NFIELD + 8 + MIG_MAX_DECL];
  mig_decl decl[MIG_MAX_DECL]; /* the plan's, for the driver to mark in_meta */
} sql_reader;

static int sql_next(mig_reader *r, char **err) {
  sql_reader *s = (sql_reader *)r;
  int rc = sqlite3_step(s->st);
  if (rc == SQLITE_DONE) return rc;
  if (rc != SQLITE_ROW) {
    *err = sqlite3_mprintf("reading the source: %s", sqlite3_errmsg(sqlite3_db_handle(s->st)));
    return rc;
  }
  for (int i = 0; i < r->ncol + r->ndecl; i++) { /* (the declared columns' cells follow the fields') */
    mig_cell *c = &r->cells[i];
    c->type = sqlite3_column_type(s->st, i);
    c->p = NULL;
    c->n = 0;
    switch (c->type) {
    case SQLITE_INTEGER: c->i = sqlite3_column_int64(s->st, i); c->d = (double)c->i; break;
    case SQLITE_FLOAT: c->d = sqlite3_column_double(s->st, i); break;
    case SQLITE_TEXT:
      c->p = sqlite3_column_text(s->st, i);
      c->n = sqlite3_column_bytes(s->st, i);
      if (!c->p) return SQLITE_NOMEM;
      break;
    case SQLITE_BLOB:
      c->p = sqlite3_column_blob(s->st, i);
      c->n = sqlite3_column_bytes(s->st, i);
      break;
    default: break;
    }
  }
  return SQLITE_ROW;
}

static int sql_rewind(mig_reader *r, char **err) {
  (void)err;
  sqlite3_reset(((sql_reader *)r)->st);
  return SQLITE_OK;
}

static void sql_close(mig_reader *r) {
  sql_reader *s = (sql_reader *)r;
  if (!s) return;
  sqlite3_finalize(s->st);
  sqlite3_free(r->cells);
  sqlite3_free(s);
}

int mig_reader_open(sqlite3 *db, const mig_plan *p, const mig_want *w, mig_reader **out,
                    char **err) {
  (void)w;
  *out = NULL;
  sql_reader *s = sqlite3_malloc(sizeof *s);
  if (!s) return SQLITE_NOMEM;
  memset(s, 0, sizeof *s);
  int rc = sqlite3_prepare_v2(db, p->sql, -1, &s->st, NULL);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("reading %s: %s", p->table ? p->table : "the source", sqlite3_errmsg(db));
    sqlite3_free(s);
    return rc;
  }
  int n = sqlite3_column_count(s->st);
  if (n > (int)(sizeof s->names / sizeof s->names[0])) n = (int)(sizeof s->names / sizeof s->names[0]);
  int nd = p->ndecl <= n ? p->ndecl : 0;
  s->base.ncol = n - nd;
  s->base.names = s->names;
  for (int i = 0; i < n; i++) s->names[i] = sqlite3_column_name(s->st, i);
  memcpy(s->decl, p->decl, sizeof s->decl);
  s->base.ndecl = nd;
  s->base.decl = s->decl;
  s->base.cells = sqlite3_malloc64(sizeof(mig_cell) * (sqlite3_uint64)(n ? n : 1));
  s->base.dcells = s->base.cells ? s->base.cells + (n - nd) : NULL;
  s->base.next = sql_next;
  s->base.rewind = sql_rewind;
  s->base.close = sql_close;
  if (!s->base.cells) {
    sql_close(&s->base);
    return SQLITE_NOMEM;
  }
  *out = &s->base;
  return SQLITE_OK;
}
