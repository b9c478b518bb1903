/*
** ext/vtab/func_h5mem.c - the h5mem table's SQL functions, each naming a
** table open on the connection (found through the registry,
** h5mem_fn_table):
**
**   h5mem_checkpoint(table)          checkpoint now; the records' count
**   h5mem_index(table)               the store's indexes and log as JSON
**   h5mem_score(table, id [, opts])  a memory's decay score (lib/life)
**   h5mem_touch(table, id [, now])   a use of a memory; its new access_count
**   h5mem_check(table, id, text, embedding [, string ...])
**                                    NULL, or why h5mem_migrate would skip the row
**
** and h5mem_embed(text [, embedder [, options]]), which embeds with a table's
** embedder or one named as embedder= names it ('hash:DIM', 'static:PATH',
** 'openai:URL' with {"model": ...}), from the connection's embedders (the
** registry's cache, shared with the tables; lib/embed/embedder.h).
**
** All are direct-only (docs/SQL.md, "Trust").
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ext_err.h"
#include "embed/embed.h"
#include "embed/embedder.h"
#include "life/life.h"
#include "store/store.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "vtab_int.h"

/* ---- h5mem_checkpoint(name) ------------------------------------------------- */

/* The store's error rc as the function's: "who: message" (h5mem_store_err). */
static void fn_store_err(sqlite3_context *ctx, const char *who, store *st, int rc) {
  char *err = NULL;
  rc = h5mem_store_err(st, rc, &err);
  ext_result_msg(ctx, rc, who, err);
}

static void fn_checkpoint(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_checkpoint");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  if (h5mem_store_holds(h5mem_table_ms(vt))) {
    sqlite3_result_error(ctx, "h5mem_checkpoint: the table is being read by a query", -1);
    return;
  }
  int rc = store_checkpoint(st);
  if (rc) {
    fn_store_err(ctx, "h5mem_checkpoint", st, rc);
    return;
  }
  sqlite3_result_int64(ctx, (sqlite3_int64)store_count(st));
}

/* ---- h5mem_clock(name [, now]) ------------------------------------------------ */

/* An ephemeral store's clock (store_clock): now (unix seconds) sets it, a
** fixed time for tests of expiry; NULL gives the time back to it; the
** clock's reading is the result. */
static void fn_clock(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_clock");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  if (!store_is_ephemeral(st))
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_clock",
                          sqlite3_mprintf("%s is not an ephemeral store: its records do not expire", store_path(st)));
  if (argc > 1) {
    int t = sqlite3_value_type(argv[1]);
    if (t != SQLITE_NULL && (t != SQLITE_INTEGER || sqlite3_value_int64(argv[1]) <= 0))
      return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_clock",
                            sqlite3_mprintf("now: expected unix seconds (a positive integer) or NULL"));
    store_set_clock(st, t == SQLITE_NULL ? 0 : sqlite3_value_int64(argv[1]));
  }
  sqlite3_result_int64(ctx, store_clock(st));
}

/* ---- h5mem_promote(from, to [, id | condition]) -------------------------------- */

/* One statement sql run (a condition that ends it and starts another is
** refused: nothing of it runs). */
static int run_one(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  const char *tail = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
  if (rc == SQLITE_OK && tail && *tail) {
    sqlite3_finalize(st);
    return SQLITE_MISUSE;
  }
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

/* Records of table `from` moved into table `to` in one savepoint: inserted
** there (new ids: the target's own) with every column both have (the
** fixed ones but id, and the declared columns of the same name), then
** deleted here; all of them, the one of that id, or those an SQL condition
** on `from`'s columns selects.  Either both happen or neither: the
** savepoint is rolled back on any failure, and the two tables commit with
** the connection's transaction (a process killed before leaves the target
** as it was; an ephemeral source dies with the process).  The number of
** records moved. */
static void fn_promote(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *from = h5mem_fn_table(ctx, argv[0], "h5mem_promote");
  if (!from) return;
  memvt *to = h5mem_fn_table(ctx, argv[1], "h5mem_promote");
  if (!to) return;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  store *fs = h5mem_table_store(from), *ts = h5mem_table_store(to);
  if (fs == ts)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_promote", sqlite3_mprintf("from and to are one store"));
  if (store_dim(fs) != store_dim(ts))
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_promote",
                          sqlite3_mprintf("%s has dim=%d, %s dim=%d: the embeddings do not fit", h5mem_table_name(from),
                                          store_dim(fs), h5mem_table_name(to), store_dim(ts)));
  int t = argc > 2 ? sqlite3_value_type(argv[2]) : SQLITE_NULL;
  if (t != SQLITE_NULL && t != SQLITE_INTEGER && t != SQLITE_TEXT)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_promote",
                          sqlite3_mprintf("the third argument: an id, or an SQL condition on %s's columns as text",
                                          h5mem_table_name(from)));
  /* the columns both have */
  sqlite3_str *cols = sqlite3_str_new(db);
  sqlite3_str_appendall(cols, "text, embedding, source, session, tags, ts, tier, importance, access_count, "
                              "last_access, meta");
  for (int i = 0; i < store_ncols(fs); i++) {
    const store_coldef *c = store_col(fs, i);
    if (store_has_provenance(ts) && !strcmp(c->name, "provenance")) continue; /* (the target writes its own) */
    int j = store_col_find(ts, c->name, strlen(c->name));
    if (j >= 0 && store_col(ts, j)->type == c->type) sqlite3_str_appendf(cols, ", \"%w\"", c->name);
  }
  char *cl = sqlite3_str_finish(cols);
  const char *fsc = h5mem_table_schema(from), *fnm = h5mem_table_name(from);
  const char *tsc = h5mem_table_schema(to), *tnm = h5mem_table_name(to);
  char *where = t == SQLITE_INTEGER ? sqlite3_mprintf("id = %lld", (long long)sqlite3_value_int64(argv[2]))
              : t == SQLITE_TEXT    ? sqlite3_mprintf("(%s)", (const char *)sqlite3_value_text(argv[2]))
                                    : sqlite3_mprintf("1");
  char *ins = cl && where ? sqlite3_mprintf("INSERT INTO \"%w\".\"%w\"(%s) SELECT %s FROM \"%w\".\"%w\" WHERE %s "
                                            "ORDER BY id", tsc, tnm, cl, cl, fsc, fnm, where) : NULL;
  char *del = where ? sqlite3_mprintf("DELETE FROM \"%w\".\"%w\" WHERE %s", fsc, fnm, where) : NULL;
  int rc = ins && del ? sqlite3_exec(db, "SAVEPOINT h5mem_promote", NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_int64 moved = 0;
  char *err = NULL;
  if (rc == SQLITE_OK) {
    rc = run_one(db, ins);
    moved = sqlite3_changes64(db);
    int same = 1;
    if (rc == SQLITE_OK) rc = run_one(db, del);
    if (rc == SQLITE_OK && sqlite3_changes64(db) != moved) same = 0, rc = SQLITE_ERROR; /* (the condition changed its mind) */
    if (rc != SQLITE_OK)
      err = rc == SQLITE_MISUSE ? sqlite3_mprintf("the condition is one SQL expression (no ';' and more)")
            : !same ? sqlite3_mprintf("the records the condition selects changed meanwhile")
                    : sqlite3_mprintf("%s", sqlite3_errmsg(db));
    if (rc == SQLITE_MISUSE) rc = SQLITE_ERROR;
    if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK TO h5mem_promote", NULL, NULL, NULL);
    int rrc = sqlite3_exec(db, "RELEASE h5mem_promote", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = rrc;
  } else if (rc != SQLITE_NOMEM) {
    err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  }
  sqlite3_free(cl);
  sqlite3_free(where);
  sqlite3_free(ins);
  sqlite3_free(del);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_promote", err);
  sqlite3_result_int64(ctx, moved);
}

/* ---- h5mem_score(name, id [, options]) ---------------------------------------- */

/* The decay score of memory id (lib/life, docs/SQL.md "Memory lifecycle"),
** from the store as this connection sees it (its open transaction too). */
static void fn_score(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_score");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  life_score_opts o;
  sqlite3_int64 now;
  char *err = NULL;
  int rc = ext_life_score_opts(argc > 2 ? argv[2] : NULL, &o, &now, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_score", err);
  int type = sqlite3_value_type(argv[1]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type != SQLITE_INTEGER)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_score", sqlite3_mprintf("id: expected an integer"));
  if ((rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, &err)) != SQLITE_OK)
    return ext_result_msg(ctx, rc, "h5mem_score", err);
  sqlite3_int64 id = sqlite3_value_int64(argv[1]);
  uint64_t pos;
  store_view v;
  memset(&v, 0, sizeof v);
  int sr = store_find(st, id, &pos);
  if (sr == STORE_ENOTFOUND)
    return ext_result_msg(ctx, SQLITE_ERROR, "h5mem_score",
                          sqlite3_mprintf("no memory with id %lld in %s", (long long)id, h5mem_table_name(vt)));
  if (sr == STORE_OK) sr = store_get(st, pos, STORE_V_NUM, &v);
  if (sr != STORE_OK) return fn_store_err(ctx, "h5mem_score", st, sr);
  life_record r = {.has_importance = !isnan(v.importance), .importance = v.importance, .has_ts = 1,
                   .ts = v.ts, .access_count = v.access_count,
                   .has_last_access = v.last_access != STORE_NULL_TIME, .last_access = v.last_access};
  sqlite3_result_double(ctx, life_score(&o, &r, now, NULL));
}

/* ---- h5mem_index(name) --------------------------------------------------------- */

/* The store's vector index as JSON: settings, the rows the saved graph
** covers, the rows searched exactly, whether the graph is read in place. */
static void fn_index(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_index");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  char *err = NULL;
  int rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_index", err);
  store_index_info in;
  store_index(st, &in);
  uint64_t npos = store_npos(st);
  strbuf sb = {0};
  strbuf_printf(&sb, "{\"index\":\"%s\",\"M\":%d,\"ef_construction\":%d,\"ef_search\":%d,"
                "\"quantize\":\"%s\",\"nlist\":%u,\"nprobe\":%d,\"pq_m\":%d,"
                "\"graph_rows\":%llu,\"saved_rows\":%llu,\"exact_rows\":%llu,\"q8_rows\":%llu,"
                "\"sketch_rows\":%llu,\"tail_sketch_rows\":%llu,\"in_place\":%s,\"note\":",
                store_index_name(in.kind), in.m, in.ef_construction, in.ef_search,
                in.q8 ? "int8" : "none", in.nlist, in.nprobe, in.pq_m, (unsigned long long)in.graph_rows,
                (unsigned long long)in.saved_rows, (unsigned long long)(npos - in.graph_rows), (unsigned long long)in.q8_rows,
                (unsigned long long)store_sketch_rows(st, -1),
                (unsigned long long)store_tail_sketch_rows(st, -1), in.in_place ? "true" : "false");
  strbuf_json_string(&sb, in.note, strlen(in.note));
  store_text_info ti;
  if (store_text_index(st, &ti) == STORE_ENOMEM) {
    strbuf_free(&sb);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  strbuf_printf(&sb, ",\"text\":{\"tokenize\":\"%s\",\"image_rows\":%llu,\"terms\":%llu,"
                "\"memory_rows\":%llu,\"in_place\":%s,\"note\":", ti.tokenize,
                (unsigned long long)ti.image_rows, (unsigned long long)ti.image_terms,
                (unsigned long long)ti.memory_rows, ti.in_place ? "true" : "false");
  strbuf_json_string(&sb, ti.note, strlen(ti.note));
  store_log_info li;
  char lnote[1024];
  store_log(st, &li, lnote, sizeof lnote);
  store_time_stats tm;
  store_time_info(st, &tm);
  strbuf_printf(&sb, "},\"time_index\":{\"rows\":%llu,\"built\":%s,\"builds\":%llu,\"build_ms\":%.3f,"
                "\"ranges\":%llu", (unsigned long long)tm.rows, tm.built ? "true" : "false",
                (unsigned long long)tm.builds, (double)tm.build_us / 1000, (unsigned long long)tm.ranges);
  strbuf_printf(&sb, ",\"session\":{\"rows\":%llu,\"sessions\":%llu,\"built\":%s,\"builds\":%llu,"
                "\"build_ms\":%.3f}}", (unsigned long long)tm.sess_rows, (unsigned long long)tm.sessions,
                tm.sess_built ? "true" : "false", (unsigned long long)tm.sess_builds,
                (double)tm.sess_build_us / 1000);
  strbuf_puts(&sb, ",\"columns\":["); /* the declared columns: declaration, and a vector column's graph */
  for (int c = 0; c < store_ncols(st); c++) {
    char decl[200];
    store_coldef_format(store_col(st, c), decl, sizeof decl);
    strbuf_puts(&sb, c ? ",{\"declaration\":" : "{\"declaration\":");
    strbuf_json_string(&sb, decl, strlen(decl));
    if (store_col(st, c)->type == STORE_T_VECTOR)
      strbuf_printf(&sb, ",\"graph_rows\":%llu,\"sketch_rows\":%llu,\"tail_sketch_rows\":%llu",
                    (unsigned long long)store_col_graph_rows(st, c), (unsigned long long)store_sketch_rows(st, c),
                    (unsigned long long)store_tail_sketch_rows(st, c));
    strbuf_puts(&sb, "}");
  }
  strbuf_printf(&sb, "],\"log\":{\"frames\":%llu,\"bytes\":%llu,", (unsigned long long)li.frames,
                (unsigned long long)li.bytes);
  if (store_is_ephemeral(st)) /* (its log is in memory, shared by the process's connections) */
    strbuf_printf(&sb, "\"connections\":%llu,\"snapshots\":%llu,\"reloads\":%llu,", (unsigned long long)li.handles,
                  (unsigned long long)li.snapshots, (unsigned long long)li.reloads);
  strbuf_puts(&sb, "\"note\":");
  strbuf_json_string(&sb, lnote, strlen(lnote));
  strbuf_puts(&sb, "}}");
  if (strbuf_failed(&sb)) {
    strbuf_free(&sb);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, sb.buf, (int)sb.len, SQLITE_TRANSIENT);
  strbuf_free(&sb);
}

/* ---- h5mem_touch(name, id [, now]) and h5mem_touch_ids ---------------------------- */

/* The touch command's statement on vt (?1 the id, ?2 the time). */
static int touch_stmt(memvt *vt, sqlite3_stmt **st) {
  const char *sc = h5mem_table_schema(vt), *nm = h5mem_table_name(vt), *cmd = h5mem_table_command(vt);
  char *sql = sqlite3_mprintf("INSERT INTO \"%w\".\"%w\"(\"%w\", id, last_access) VALUES('touch', ?1, ?2)",
                              sc, nm, cmd);
  if (!sql) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(h5mem_table_db(vt), sql, -1, st, NULL);
  sqlite3_free(sql);
  return rc;
}

/* One statement for all the ids: a statement is all or none by itself
** (SQLite undoes a failing statement's changes, the table's savepoint
** methods with them), and, unlike a SAVEPOINT, it may run while another
** statement writes: a touching search inside INSERT ... SELECT, CREATE
** TABLE ... AS or UPDATE ... WHERE id IN (SELECT ... FROM vec_search(...)),
** where SQLite refuses to open a savepoint ("SQL statements in progress").
** The ids are written into the statement as numbers (a VALUES list, which
** SQLite's compound-select limit does not apply to); one beyond the
** connection's SQLITE_LIMIT_SQL_LENGTH is SQLITE_TOOBIG. */
int h5mem_touch_ids(memvt *vt, const int64_t *ids, size_t n, int64_t now, char **pzErr) {
  if (!n) return SQLITE_OK;
  sqlite3 *db = h5mem_table_db(vt);
  const char *sc = h5mem_table_schema(vt), *nm = h5mem_table_name(vt), *cmd = h5mem_table_command(vt);
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendf(s, "INSERT INTO \"%w\".\"%w\"(\"%w\", id, last_access) SELECT 'touch', column1, ?1 "
                      "FROM (VALUES ", sc, nm, cmd);
  for (size_t i = 0; i < n; i++) sqlite3_str_appendf(s, "%s(%lld)", i ? "," : "", (long long)ids[i]);
  sqlite3_str_appendf(s, ") WHERE EXISTS (SELECT 1 FROM \"%w\".\"%w\" WHERE id = column1)", sc, nm);
  int rc = sqlite3_str_errcode(s);
  if (rc == SQLITE_OK && sqlite3_str_length(s) > sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, -1)) rc = SQLITE_TOOBIG;
  char *sql = sqlite3_str_finish(s);
  if (rc == SQLITE_TOOBIG) {
    sqlite3_free(sql);
    *pzErr = sqlite3_mprintf("touch: %llu memories at once are beyond the connection's SQL length "
                             "limit (SQLITE_LIMIT_SQL_LENGTH)", (unsigned long long)n);
    return rc;
  }
  if (rc != SQLITE_OK || !sql) {
    sqlite3_free(sql);
    return SQLITE_NOMEM;
  }
  sqlite3_stmt *st = NULL;
  rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  sqlite3_free(sql);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, now);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK && rc != SQLITE_NOMEM) *pzErr = sqlite3_mprintf("touch: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* A use of memory id: access_count + 1, last_access = now (default: the
** clock); the new access_count. */
static void fn_touch(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_touch");
  if (!vt) return;
  if (sqlite3_value_type(argv[1]) == SQLITE_NULL) return; /* NULL id: NULL */
  if (sqlite3_value_numeric_type(argv[1]) != SQLITE_INTEGER) {
    sqlite3_result_error(ctx, "h5mem_touch: id: expected an integer", -1);
    return;
  }
  sqlite3_stmt *st = NULL;
  int rc = touch_stmt(vt, &st);
  if (rc == SQLITE_OK) {
    sqlite3_bind_value(st, 1, argv[1]);
    if (argc > 2) sqlite3_bind_value(st, 2, argv[2]);
    else sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK) {
    char *m = sqlite3_mprintf("h5mem_touch: %s", sqlite3_errmsg(h5mem_table_db(vt)));
    sqlite3_finalize(st);
    ext_result_rc(ctx, rc, m);
    sqlite3_free(m);
    return;
  }
  sqlite3_finalize(st);
  store *s = h5mem_table_store(vt);
  uint64_t pos;
  store_view v;
  memset(&v, 0, sizeof v);
  rc = store_find(s, sqlite3_value_int64(argv[1]), &pos);
  if (rc == STORE_OK) rc = store_get(s, pos, STORE_V_NUM, &v);
  if (rc) {
    fn_store_err(ctx, "h5mem_touch", s, rc);
    return;
  }
  sqlite3_result_int64(ctx, v.access_count);
}

/* ---- h5mem_check(table, id, text, embedding [, string ...]) -------------- */

/* h5mem_check(table, id, text, embedding [, string ...]): NULL when the
** table would take the row (id, text, embedding and the strings: source,
** session, tags, meta ...) as h5mem_migrate takes a source's row, else the
** reason it skips one: duplicate (the id is in the store), empty_text
** (NULL, empty or white space), bad_text (a NUL byte, or not UTF-8, which
** a plain INSERT cannot repair, in the text or a string),
** wrong_dimension, bad_embedding, nan_or_inf, float16_range or
** vector_range (h5mem_emb_check).  What the sql/migrate_*.scripts filter
** and count with. */
/* 1 when one of the n values is text (or a BLOB) that is not UTF-8 or
** holds a NUL byte. */
static int bad_strings(sqlite3_value **v, int n) {
  for (int i = 0; i < n; i++) {
    int t = sqlite3_value_type(v[i]);
    if (t != SQLITE_TEXT && t != SQLITE_BLOB) continue;
    const char *z = t == SQLITE_TEXT ? (const char *)sqlite3_value_text(v[i]) : sqlite3_value_blob(v[i]);
    size_t len = (size_t)sqlite3_value_bytes(v[i]);
    if (len && (!z || util_utf8_check(z, len, 0) != len)) return 1;
  }
  return 0;
}

static void fn_check(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (argc < 4) {
    sqlite3_result_error(ctx, "h5mem_check: give the table, id, text, embedding and any other strings", -1);
    return;
  }
  memvt *vt = h5mem_fn_table(ctx, argv[0], "h5mem_check");
  if (!vt) return;
  store *st = h5mem_table_store(vt);
  char *err = NULL;
  int rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, "h5mem_check", err);
  const char *why = NULL;
  uint64_t pos;
  if (sqlite3_value_type(argv[1]) == SQLITE_INTEGER &&
      store_find(st, sqlite3_value_int64(argv[1]), &pos) == STORE_OK) {
    why = "duplicate";
  } else if (sqlite3_value_type(argv[2]) == SQLITE_NULL) {
    why = "empty_text";
  } else if (bad_strings(argv + 2, 1) || bad_strings(argv + 4, argc - 4)) {
    why = "bad_text";
  } else {
    const char *t = (const char *)sqlite3_value_text(argv[2]);
    size_t n = (size_t)sqlite3_value_bytes(argv[2]), i = 0;
    if (!t) return sqlite3_result_error_nomem(ctx);
    while (i < n && strchr(" \t\n\r", t[i])) i++;
    if (i == n) why = "empty_text";
  }
  if (!why) {
    float *f = sqlite3_malloc64((sqlite3_uint64)store_dim(st) * 4);
    int has;
    if (!f) return sqlite3_result_error_nomem(ctx);
    rc = h5mem_emb_check(st, argv[3], f, &has, &err, &why);
    sqlite3_free(f);
    sqlite3_free(err);
    if (rc == SQLITE_NOMEM) return sqlite3_result_error_nomem(ctx);
  }
  if (why) sqlite3_result_text(ctx, why, -1, SQLITE_STATIC);
}

/* ---- registration ------------------------------------------------------ */

/* ---- h5mem_embed(text, embedder [, options]) --------------------------------- */

/* The options of an HTTP embedder named in h5mem_embed's third argument:
** {"model": "...", "key_env": "...", "timeout": S, "retries": N, "batch": N}
** into c (its strings malloc'd into keep[0..1]).  0, or -1 with a message. */
static int conf_json(sqlite3_value *v, embedder_conf *c, char *keep[2], char *err, size_t errlen) {
  const char *j = (const char *)sqlite3_value_text(v);
  size_t jl = (size_t)sqlite3_value_bytes(v);
  char jerr[256];
  if (!j || !util_json_is_object(j, jl) || util_json_valid(j, jl, jerr, sizeof jerr)) {
    snprintf(err, errlen, "options must be a JSON object, e.g. '{\"model\": \"nomic-embed-text\"}'");
    return -1;
  }
  util_json_iter it;
  util_json_iter_init(&it, j, 0, jl);
  while (util_json_next(&it)) {
    char *k = util_json_cstr(j, it.key, jl, NULL);
    int t = util_json_type(j, it.v0, it.v1), bad = !k;
    int64_t iv = 0;
    double dv = 0;
    int nt = t == UTIL_JSON_INTEGER || t == UTIL_JSON_REAL ? util_json_number(j, it.v0, it.v1, &iv, &dv) : -1;
    if (k && (!strcmp(k, "model") || !strcmp(k, "key_env")) && t == UTIL_JSON_TEXT) {
      int w = !strcmp(k, "key_env");
      free(keep[w]);
      keep[w] = util_json_cstr(j, it.v0, it.v1, NULL);
      if (!keep[w]) bad = 1;
      if (w) c->key_env = keep[w];
      else c->model = keep[w];
    } else if (k && !strcmp(k, "timeout") && nt >= 0 && dv > 0 && dv <= EMBEDDER_MAX_TIMEOUT) {
      c->timeout = dv;
    } else if (k && !strcmp(k, "retries") && nt == UTIL_JSON_INTEGER && iv >= 0 && iv <= EMBEDDER_MAX_RETRIES) {
      c->retries = (int)iv;
    } else if (k && !strcmp(k, "batch") && nt == UTIL_JSON_INTEGER && iv >= 1 && iv <= EMBEDDER_MAX_BATCH) {
      c->batch = (int)iv;
    } else {
      bad = 1;
    }
    if (bad) {
      snprintf(err, errlen, "option '%s': expected model and key_env strings, timeout seconds (0 to %d), "
               "retries 0 to %d, batch 1 to %d", k ? k : "?", EMBEDDER_MAX_TIMEOUT, EMBEDDER_MAX_RETRIES,
               EMBEDDER_MAX_BATCH);
      free(k);
      return -1;
    }
    free(k);
  }
  return 0;
}

/* h5mem_embed(text [, embedder [, options]]): embedder an embedder's name
** ('hash:DIM', 'static:PATH', 'openai:URL' with {"model": ...}) or an
** h5mem table's (its embedder); left out, the embedder of the open h5mem
** tables when they have one. */
static void fn_embed(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  registry *reg = sqlite3_user_data(ctx);
  const char *fn = "h5mem_embed";
  if (!ext_direct_call(ctx, fn)) return;
  char *msg = NULL;
  memvt *only = NULL;
  if (argc == 1 && !(only = h5mem_table_with_embedder(reg, &msg))) { /* h5mem_embed(text) */
    ext_result_msg(ctx, SQLITE_ERROR, fn, msg);
    return;
  }
  const char *spec = only ? h5mem_table_name(only) : (const char *)sqlite3_value_text(argv[1]);
  if (!spec) {
    ext_result_msg(ctx, SQLITE_ERROR, fn, sqlite3_mprintf("no embedder (expected 'hash:DIM', "
                   "'static:/path/model.h5', 'openai:URL' or an h5mem table's name)"));
    return;
  }
  const char *s;
  size_t n;
  if (ext_arg_text(ctx, argv[0], &s, &n) <= 0) return;
  char err[1200], *keep[2] = {NULL, NULL};
  embedder *e = NULL;
  int rc = SQLITE_OK;
  if (only || !strchr(spec, ':')) { /* a table's name */
    memvt *mt = only ? only : h5mem_table(reg, sqlite3_context_db_handle(ctx), spec, &msg, &rc);
    if (mt) e = h5mem_table_embedder(mt, &rc, &msg);
    if (!e) {
      ext_result_msg(ctx, rc, fn, msg);
      return;
    }
  } else {
    embedder_conf c = {spec, NULL, NULL, 0, -1, 0};
    embedder_cache *cache = h5mem_registry_embedders(reg);
    int erc = EMBED_OK;
    if (!cache) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    if (argc > 2 && sqlite3_value_type(argv[2]) != SQLITE_NULL && conf_json(argv[2], &c, keep, err, sizeof err)) {
      erc = EMBED_EINVAL;
    } else if (!(e = embedder_cache_get(cache, &c, &erc, err, sizeof err))) {
    } else if (embedder_kind(e) == EMBEDDER_OPENAI && (erc = embedder_probe(e, err, sizeof err)) != EMBED_OK) {
      e = NULL;
    }
    free(keep[0]);
    free(keep[1]);
    if (!e) {
      if (erc == EMBED_ENOMEM) sqlite3_result_error_nomem(ctx);
      else ext_result_msg(ctx, ext_err_rc(erc), fn, sqlite3_mprintf("%s", err));
      return;
    }
  }
  int dim = embedder_dim(e);
  float *v = malloc((size_t)dim * sizeof *v);
  int erc = v ? embedder_embed(e, 1, &s, &n, v, NULL, err, sizeof err) : EMBED_ENOMEM;
  if (erc != EMBED_OK) {
    free(v);
    if (erc == EMBED_ENOMEM) sqlite3_result_error_nomem(ctx);
    else ext_result_msg(ctx, ext_err_rc(erc), fn, sqlite3_mprintf("%s", err));
    return;
  }
  sqlite3_result_blob64(ctx, v, (sqlite3_uint64)dim * sizeof *v, free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_F32);
}

int h5mem_func_register(sqlite3 *db, registry *reg) {
  int rc = h5mem_registry_function(db, reg, "h5mem_checkpoint", 1, SQLITE_DIRECTONLY, fn_checkpoint);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_index", 1, SQLITE_DIRECTONLY, fn_index);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_clock", 1, SQLITE_DIRECTONLY, fn_clock);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_clock", 2, SQLITE_DIRECTONLY, fn_clock);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_promote", 2, SQLITE_DIRECTONLY, fn_promote);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_promote", 3, SQLITE_DIRECTONLY, fn_promote);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_score", 2, SQLITE_DIRECTONLY, fn_score);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_score", 3, SQLITE_DIRECTONLY, fn_score);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_touch", 2, SQLITE_DIRECTONLY, fn_touch);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_touch", 3, SQLITE_DIRECTONLY, fn_touch);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_check", -1, SQLITE_DIRECTONLY, fn_check);
  const int fl = SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE;
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_embed", 1, fl, fn_embed);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_embed", 2, fl, fn_embed);
  if (rc == SQLITE_OK) rc = h5mem_registry_function(db, reg, "h5mem_embed", 3, fl, fn_embed);
  return rc;
}
