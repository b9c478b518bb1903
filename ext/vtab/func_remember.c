/*
** ext/vtab/func_remember.c - the agent-facing write path and the
** consolidation cycle's SQL function (docs/SQL.md, "Memory lifecycle"):
**
**   h5mem_remember(table, text [, embedding [, options]])
**       -> {"id": N|null, "action": "inserted"|"skipped"|"merged", "reason": ...}
**   h5mem_consolidate(table [, options])
**       -> the cycle's report (mem_consolidate.c)
**
** h5mem_remember decides in this order: the write gate (unless the
** strategy is always or gate is off), a near-duplicate (the nearest live
** non-archive memory in the dedup scope within merge_threshold: touched,
** "merged"), the semantic shift (strategy semantic_shift: the session's
** recent memories), then it inserts the memory into the working tier with
** its importance (given, or lib/life's life_importance: novelty against
** the nearest working-tier embedding).  It reads the store directly and
** writes through SQL on the table (INSERT, the touch, the consolidate
** command) in a savepoint: part of the caller's transaction, all or
** nothing.  Both functions are direct-only (docs/SQL.md, "Trust").
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ext_err.h"
#include "life/life.h"
#include "store/store.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/timefmt.h"
#include "vtab_int.h"

#define REMEMBER "h5mem_remember"
#define CONSOLIDATE "h5mem_consolidate"
#define RECENT_DEFAULT 8

/* ---- options --------------------------------------------------------------- */

#define REM_KNOWN                                                                            \
  "session, source, tags, meta, ts, importance, now, strategy, gate, dedup, merge_threshold, " \
  "shift_threshold, recent"

typedef struct rem_opts {
  life_gate_opts gate;
  int gate_off, strategy, dedup;
  double merge_threshold, shift_threshold;
  int64_t recent;
  char *session, *source, *tags, *meta; /* sqlite3_malloc'd, NULL: none */
  size_t session_len, source_len, tags_len, meta_len;
  int has_ts, has_imp;
  int64_t ts, now;
  double imp;
} rem_opts;

static void rem_opts_free(rem_opts *o) {
  sqlite3_free(o->session);
  sqlite3_free(o->source);
  sqlite3_free(o->tags);
  sqlite3_free(o->meta);
}

/* A copy of n bytes (NUL-terminated) into *out; SQLITE_OK or SQLITE_NOMEM. */
static int dup_into(char **out, size_t *olen, const char *s, size_t n) {
  sqlite3_free(*out);
  *out = sqlite3_malloc64(n + 1);
  if (!*out) return SQLITE_NOMEM;
  memcpy(*out, s, n);
  (*out)[n] = 0;
  *olen = n;
  return SQLITE_OK;
}

static int rem_option(void *ctx, const char *key, const search_opt *v, char **err) {
  rem_opts *o = ctx;
  double d;
  int rc;
  if (!strcmp(key, "session") || !strcmp(key, "source")) {
    int s = key[1] == 'e';
    if (v->type == UTIL_JSON_NULL) return SQLITE_OK;
    if (v->type != UTIL_JSON_TEXT) {
      *err = sqlite3_mprintf("expected a string or null");
      return SQLITE_ERROR;
    }
    return s ? dup_into(&o->session, &o->session_len, v->text, strlen(v->text))
             : dup_into(&o->source, &o->source_len, v->text, strlen(v->text));
  }
  if (!strcmp(key, "tags") || !strcmp(key, "meta")) {
    int tags = key[0] == 't';
    if (v->type == UTIL_JSON_NULL) return SQLITE_OK;
    /* a string as it is (meta's must be JSON text: the table checks it);
    ** an object or array (meta: an object) as its JSON text */
    const char *s = v->type == UTIL_JSON_TEXT ? v->text : v->json;
    size_t n = v->type == UTIL_JSON_TEXT ? strlen(v->text) : v->len;
    if (v->type != UTIL_JSON_TEXT && !(v->type == UTIL_JSON_OBJECT || (tags && v->type == UTIL_JSON_ARRAY))) {
      *err = sqlite3_mprintf(tags ? "expected a string or an array" : "expected an object or a string of JSON");
      return SQLITE_ERROR;
    }
    return tags ? dup_into(&o->tags, &o->tags_len, s, n) : dup_into(&o->meta, &o->meta_len, s, n);
  }
  if (!strcmp(key, "ts")) {
    if (v->type == UTIL_JSON_TEXT) {
      char e[160];
      if (util_iso8601_parse(v->text, strlen(v->text), &o->ts, e, sizeof e)) {
        *err = sqlite3_mprintf("expected unix seconds or ISO-8601 text: %s", e);
        return SQLITE_ERROR;
      }
    } else {
      if ((rc = search_opts_num(v, -9.2e18, 9.2e18, &d, err)) != SQLITE_OK) return rc;
      o->ts = (int64_t)floor(d);
    }
    o->has_ts = 1;
    return SQLITE_OK;
  }
  if (!strcmp(key, "now")) {
    if ((rc = search_opts_num(v, -1e15, 1e15, &d, err)) != SQLITE_OK) return rc;
    o->now = (int64_t)floor(d);
    return SQLITE_OK;
  }
  if (!strcmp(key, "importance")) {
    if (v->type == UTIL_JSON_NULL) return SQLITE_OK;
    if ((rc = search_opts_num(v, -1e300, 1e300, &o->imp, err)) != SQLITE_OK) return rc;
    o->has_imp = 1;
    return SQLITE_OK;
  }
  if (!strcmp(key, "strategy")) {
    int s = v->type == UTIL_JSON_TEXT ? life_strategy_from_name(v->text) : -1;
    if (s < 0) {
      *err = sqlite3_mprintf("expected \"every_exchange\", \"semantic_shift\" or \"always\"");
      return SQLITE_ERROR;
    }
    o->strategy = s;
    return SQLITE_OK;
  }
  if (!strcmp(key, "gate")) {
    if (v->type == UTIL_JSON_TRUE || v->type == UTIL_JSON_FALSE) {
      o->gate_off = v->type == UTIL_JSON_FALSE;
      return SQLITE_OK;
    }
    if (v->type != UTIL_JSON_OBJECT) {
      *err = sqlite3_mprintf("expected true, false or an object of h5mem_gate's options (%s)", EXT_LIFE_GATE_KNOWN);
      return SQLITE_ERROR;
    }
    o->gate_off = 0;
    return search_opts_object(v, EXT_LIFE_GATE_KNOWN, ext_life_gate_option, &o->gate, err);
  }
  if (!strcmp(key, "dedup")) {
    static const char *const names[] = {"auto", "any", "session", "source", "off"};
    int i = 0;
    while (v->type == UTIL_JSON_TEXT && i < 5 && strcmp(v->text, names[i])) i++;
    if (v->type != UTIL_JSON_TEXT || i == 5) {
      *err = sqlite3_mprintf("expected \"auto\", \"any\", \"session\", \"source\" or \"off\"");
      return SQLITE_ERROR;
    }
    o->dedup = i;
    return SQLITE_OK;
  }
  if (!strcmp(key, "merge_threshold")) {
    if (v->type == UTIL_JSON_TEXT && !strcmp(v->text, "off")) {
      o->merge_threshold = -1;
      return SQLITE_OK;
    }
    return search_opts_num(v, 0, 2, &o->merge_threshold, err);
  }
  if (!strcmp(key, "shift_threshold")) return search_opts_num(v, 0, 2, &o->shift_threshold, err);
  if (!strcmp(key, "recent")) {
    if (v->type != UTIL_JSON_INTEGER || v->inum < 1 || v->inum > 1000) {
      *err = sqlite3_mprintf("expected an integer from 1 to 1000");
      return SQLITE_ERROR;
    }
    o->recent = v->inum;
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

/* ---- the embedding argument ------------------------------------------------ */

/* ---- which memories a search looks at ---------------------------------------- */

typedef struct rfilt {
  store *st;
  int working_only;                     /* else: every tier but archive */
  const uint32_t *tier;                 /* the file's rows' tier codes */
  uint64_t ntier;
  uint32_t c_work, c_arch;
  int by_sess, by_src;                  /* same session, or same source (either matches) */
  const char *sess, *src;
  size_t sess_len, src_len;
  const uint32_t *scodes, *ocodes;      /* session's and source's codes */
  uint64_t nscodes, nocodes;
  uint32_t c_sess, c_src;
  int err;
} rfilt;

static int eq(const char *a, size_t an, const char *b, size_t bn) { return a && b && an == bn && !memcmp(a, b, an); }

static int rfilt_fn(void *ctx, uint64_t pos) {
  rfilt *f = ctx;
  if (f->err) return 0;
  unsigned want = 0;
  if (pos < f->ntier) {
    uint32_t c = f->tier[pos];
    if (f->working_only ? c != f->c_work : c == f->c_arch) return 0;
  } else {
    want |= STORE_V_TIER;
  }
  int scope = f->by_sess || f->by_src, ok = !scope;
  if (scope) {
    if (f->by_sess) {
      if (pos < f->nscodes) ok |= f->scodes[pos] == f->c_sess && f->c_sess != UINT32_MAX;
      else want |= STORE_V_SESSION;
    }
    if (f->by_src && !ok) {
      if (pos < f->nocodes) ok |= f->ocodes[pos] == f->c_src && f->c_src != UINT32_MAX;
      else want |= STORE_V_SOURCE;
    }
  }
  if (!want) return ok;
  store_view v;
  memset(&v, 0, sizeof v);
  int rc = store_get(f->st, pos, want, &v);
  if (rc != STORE_OK) {
    f->err = rc;
    return 0;
  }
  if (want & STORE_V_TIER) {
    int work = eq(v.tier, v.tier_len, "working", 7), arch = eq(v.tier, v.tier_len, "archive", 7);
    if (f->working_only ? !work : arch) return 0;
  }
  if ((want & STORE_V_SESSION) && eq(v.session, v.session_len, f->sess, f->sess_len)) ok = 1;
  if ((want & STORE_V_SOURCE) && eq(v.source, v.source_len, f->src, f->src_len)) ok = 1;
  return ok;
}

/* The codes the filter compares with; a store code. */
static int rfilt_init(rfilt *f, store *st, int working_only, const rem_opts *o) {
  memset(f, 0, sizeof *f);
  f->st = st;
  f->working_only = working_only;
  int rc = store_str_codes(st, STORE_V_TIER, "working", 7, &f->tier, &f->ntier, &f->c_work);
  if (rc == STORE_OK) rc = store_str_codes(st, STORE_V_TIER, "archive", 7, &f->tier, &f->ntier, &f->c_arch);
  if (rc != STORE_OK || working_only || !o) return rc;
  int d = o->dedup;
  if (d == H5MEM_DEDUP_AUTO) { /* same session or source, of those given; neither given: any */
    f->by_sess = o->session != NULL;
    f->by_src = o->source != NULL;
  } else {
    f->by_sess = d == H5MEM_DEDUP_SESSION;
    f->by_src = d == H5MEM_DEDUP_SOURCE;
  }
  /* (session: NULL under dedup=session matches nothing, as SQL's = NULL) */
  f->sess = o->session;
  f->sess_len = o->session_len;
  f->src = o->source;
  f->src_len = o->source_len;
  f->c_sess = f->c_src = UINT32_MAX;
  if (f->by_sess && f->sess)
    rc = store_str_codes(st, STORE_V_SESSION, f->sess, f->sess_len, &f->scodes, &f->nscodes, &f->c_sess);
  if (rc == STORE_OK && f->by_src && f->src)
    rc = store_str_codes(st, STORE_V_SOURCE, f->src, f->src_len, &f->ocodes, &f->nocodes, &f->c_src);
  return rc;
}

/* The nearest memory the filter allows (by the store's metric; exact on a
** flat store, through the graph or lists of an indexed one, as vec_search):
** its id and embedding (into row) and the cosine distance to q; *found 0
** when there is none with an embedding.  A store code. */
static int nearest(store *st, rfilt *f, const float *q, float *row, int64_t *id, double *dist, int *found) {
  *found = 0;
  store_filter flt = {.fn = rfilt_fn, .ctx = f};
  store_knn_opts ko = {.exact = 0}; /* (through the vector index when the table has one) */
  ann_res r[1];
  uint64_t n = 0;
  int rc = store_knn(st, q, 1, &flt, &ko, r, &n);
  if (rc == STORE_OK && f->err) rc = f->err;
  if (rc != STORE_OK || n == 0) return rc;
  int has;
  if ((rc = h5mem_pos_emb(st, r[0].pos, row, &has)) != STORE_OK || !has) return rc;
  *id = store_pos_id(st, r[0].pos);
  *dist = life_nearest(q, row, 1, (size_t)store_dim(st));
  *found = 1;
  return STORE_OK;
}

/* Up to n of the session's latest memories' embeddings (the table's when
** the session is NULL), newest first, into rows; how many in *got. */
static int recent_rows(store *st, const rem_opts *o, float *rows, size_t n, size_t *got) {
  store_time_iter it;
  *got = 0;
  int rc = o->session ? store_time_range_session(st, o->session, o->session_len, INT64_MIN, INT64_MAX, 1, &it)
                      : store_time_range(st, INT64_MIN, INT64_MAX, 1, &it);
  uint64_t pos;
  size_t dim = (size_t)store_dim(st);
  while (rc == STORE_OK && *got < n && (rc = store_time_next(st, &it, &pos, NULL)) == STORE_OK) {
    int has;
    if ((rc = h5mem_pos_emb(st, pos, rows + *got * dim, &has)) != STORE_OK) break;
    *got += has != 0;
  }
  return rc == STORE_ENOTFOUND ? STORE_OK : rc;
}

/* ---- writing through SQL ------------------------------------------------------- */

/* Run sql with the bindings given (NULL-ended pairs in the caller); the
** message in *err. */
static int exec_msg(sqlite3 *db, const char *sql, char **err) {
  int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  if (rc != SQLITE_OK) *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  return rc;
}

/* Prepare "INSERT INTO the table(cols) VALUES(?1..?n)". */
static int prepare_insert(sqlite3 *db, memvt *vt, const char *cols, int n, sqlite3_stmt **out, char **err) {
  sqlite3_str *s = sqlite3_str_new(db);
  sqlite3_str_appendf(s, "INSERT INTO \"%w\".\"%w\"(%s) VALUES (", h5mem_table_schema(vt), h5mem_table_name(vt),
                      cols);
  for (int i = 1; i <= n; i++) sqlite3_str_appendf(s, "%s?%d", i > 1 ? ", " : "", i);
  sqlite3_str_appendchar(s, 1, ')');
  char *sql = sqlite3_str_finish(s);
  if (!sql) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK) *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  return rc;
}

static int step_done(sqlite3 *db, sqlite3_stmt *st, char **err) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) return SQLITE_OK;
  /* (the table's message, "h5mem: ..."; or SQLite's) */
  *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
  return rc == SQLITE_ROW ? SQLITE_ERROR : sqlite3_errcode(db);
}

/* INSERT INTO mem(mem, meta) VALUES('consolidate', options): one cycle;
** the report is then h5mem_table_life(vt)->report. */
static int run_consolidate(sqlite3 *db, memvt *vt, sqlite3_value *opts, const char *opts_text, char **err) {
  sqlite3_stmt *st = NULL;
  char cols[200];
  sqlite3_snprintf((int)sizeof cols, cols, "\"%w\", meta", h5mem_table_command(vt));
  int rc = prepare_insert(db, vt, cols, 2, &st, err);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, "consolidate", -1, SQLITE_STATIC);
    if (opts) sqlite3_bind_value(st, 2, opts);
    else if (opts_text) sqlite3_bind_text(st, 2, opts_text, -1, SQLITE_TRANSIENT);
    rc = step_done(db, st, err);
  }
  sqlite3_finalize(st);
  return rc;
}

/* ---- h5mem_remember ------------------------------------------------------------ */

typedef struct rem_out {
  int64_t id; /* 0: null */
  const char *action, *reason;
  double importance, distance;
  int has_importance, has_distance;
  char *consolidated; /* the report of a cycle it ran (consolidate=auto) */
} rem_out;

/* What h5mem_remember does, into *out; SQLITE_OK or the reason in *err. */
static int remember(sqlite3_context *ctx, memvt *vt, sqlite3_value **argv, int argc, rem_opts *o,
                    rem_out *out, char **err) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  store *st = h5mem_table_store(vt);
  const h5mem_policy *pol = h5mem_table_policy(vt);
  size_t dim = (size_t)store_dim(st);
  int rc;
  const char *text = (const char *)sqlite3_value_text(argv[1]);
  size_t tlen = (size_t)sqlite3_value_bytes(argv[1]);
  if (!text) return SQLITE_NOMEM;
  float *buf = sqlite3_malloc64((sqlite3_uint64)dim * 4 * (2 + (size_t)o->recent));
  if (!buf) return SQLITE_NOMEM;
  float *q = buf, *row = buf + dim, *recent = buf + 2 * dim;
  int has_emb;
  if ((rc = h5mem_emb_value(st, argc > 2 ? argv[2] : NULL, q, &has_emb, err)) != SQLITE_OK) goto done;
  if (!has_emb) { /* no embedding given: the table's embedder's, if it has one */
    int erc;
    char *emsg = NULL;
    int made = h5mem_text_query(vt, text, tlen, q, &erc, &emsg);
    if (made < 0) {
      *err = emsg;
      rc = erc;
      goto done;
    }
    sqlite3_free(emsg); /* (a text with no known word: no embedding, as an INSERT's) */
    has_emb = made == 1;
  }
  if ((rc = h5mem_store_refresh(h5mem_table_ms(vt), 0, err)) != SQLITE_OK) goto done;

  /* 1. the write gate (its measures are the importance's too) */
  life_gate_result g;
  life_gate(&o->gate, text, tlen, &g); /* (options checked when read) */
  if (o->strategy != LIFE_ALWAYS && !o->gate_off && !g.save) {
    out->action = "skipped";
    out->reason = life_reason_name(g.reason);
    goto done;
  }
  /* 2. a near-duplicate reinforces the memory it repeats */
  rfilt f;
  int sr = STORE_OK, found = 0;
  int64_t nid = 0;
  double d = 2;
  if (has_emb && o->merge_threshold >= 0 && o->dedup != H5MEM_DEDUP_OFF) {
    if ((sr = rfilt_init(&f, st, 0, o)) == STORE_OK) sr = nearest(st, &f, q, row, &nid, &d, &found);
    if (sr != STORE_OK) goto store_err;
    if (found && d <= o->merge_threshold) {
      if ((rc = h5mem_touch_ids(vt, &nid, 1, o->now, err)) != SQLITE_OK) goto done;
      out->id = nid;
      out->action = "merged";
      out->reason = "near_duplicate";
      out->distance = d;
      out->has_distance = 1;
      goto done;
    }
  }
  /* 3. the save strategy's semantic shift */
  if (o->strategy == LIFE_SEMANTIC_SHIFT && has_emb) {
    size_t got;
    if ((sr = recent_rows(st, o, recent, (size_t)o->recent, &got)) != STORE_OK) goto store_err;
    double sd;
    if (!life_should_save(LIFE_SEMANTIC_SHIFT, &g, q, recent, got, dim, o->shift_threshold, &sd)) {
      out->action = "skipped";
      out->reason = "no_shift";
      out->distance = sd;
      out->has_distance = 1;
      goto done;
    }
  }
  /* 4. the importance: given, or novelty against the working tier */
  double imp = o->imp;
  if (!o->has_imp) {
    found = 0;
    if (has_emb) {
      if ((sr = rfilt_init(&f, st, 1, NULL)) == STORE_OK) sr = nearest(st, &f, q, row, &nid, &d, &found);
      if (sr != STORE_OK) goto store_err;
    }
    imp = life_importance(has_emb ? q : NULL, row, found ? 1 : 0, dim, &g, LIFE_W_NOVELTY);
  }
  /* 5. the insert (its id the table's next, taken by the writer: "no ids
  ** left" at the end), and a cycle every consolidate_every of them */
  sqlite3_stmt *ins = NULL;
  rc = prepare_insert(db, vt, "text, embedding, source, session, tags, ts, tier, importance, meta", 9, &ins, err);
  if (rc == SQLITE_OK) {
    sqlite3_bind_value(ins, 1, argv[1]);
    if (has_emb) sqlite3_bind_blob64(ins, 2, q, dim * 4, SQLITE_STATIC);
    if (o->source) sqlite3_bind_text64(ins, 3, o->source, o->source_len, SQLITE_STATIC, SQLITE_UTF8);
    if (o->session) sqlite3_bind_text64(ins, 4, o->session, o->session_len, SQLITE_STATIC, SQLITE_UTF8);
    if (o->tags) sqlite3_bind_text64(ins, 5, o->tags, o->tags_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_int64(ins, 6, o->has_ts ? o->ts : o->now);
    sqlite3_bind_text(ins, 7, "working", -1, SQLITE_STATIC);
    sqlite3_bind_double(ins, 8, imp);
    if (o->meta) sqlite3_bind_text64(ins, 9, o->meta, o->meta_len, SQLITE_STATIC, SQLITE_UTF8);
    rc = step_done(db, ins, err);
  }
  sqlite3_finalize(ins);
  if (rc != SQLITE_OK) goto done;
  int64_t id = sqlite3_last_insert_rowid(db);
  out->id = id;
  out->action = "inserted";
  out->reason = o->strategy == LIFE_ALWAYS ? "always" : o->gate_off ? "gate_off" : "passed";
  out->importance = imp;
  out->has_importance = 1;
  h5mem_life_state *ls = h5mem_table_life(vt);
  if (pol->consolidate_every > 0 && ++ls->remembered >= (uint64_t)pol->consolidate_every) {
    char opts[64];
    sqlite3_snprintf((int)sizeof opts, opts, "{\"now\":%lld}", (long long)o->now);
    if ((rc = run_consolidate(db, vt, NULL, opts, err)) != SQLITE_OK) goto done;
    ls->remembered = 0;
    out->consolidated = sqlite3_mprintf("%s", ls->report);
    if (!out->consolidated) rc = SQLITE_NOMEM;
  }
  goto done;
store_err:
  rc = h5mem_store_err(st, sr, err);
done:
  sqlite3_free(buf);
  return rc;
}

static void fn_remember(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], REMEMBER);
  if (!vt) return;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  const h5mem_policy *pol = h5mem_table_policy(vt);
  if (sqlite3_value_type(argv[1]) != SQLITE_TEXT)
    return ext_result_msg(ctx, SQLITE_MISMATCH, REMEMBER, sqlite3_mprintf("text: expected TEXT, got %s",
                          sqlite3_value_type(argv[1]) == SQLITE_NULL ? "NULL"
                          : sqlite3_value_type(argv[1]) == SQLITE_BLOB ? "a BLOB" : "a number"));
  rem_opts o;
  memset(&o, 0, sizeof o);
  o.gate = pol->gate;
  o.gate_off = pol->gate_off;
  o.strategy = pol->strategy;
  o.dedup = pol->dedup;
  o.merge_threshold = pol->merge_threshold;
  o.shift_threshold = pol->shift_threshold;
  o.recent = RECENT_DEFAULT;
  o.now = (int64_t)time(NULL);
  char *err = NULL;
  int rc = search_opts_parse(argc > 3 ? argv[3] : NULL, REM_KNOWN, rem_option, &o, &err);
  if (rc != SQLITE_OK) {
    rem_opts_free(&o);
    return ext_result_msg(ctx, rc, REMEMBER, err);
  }
  rem_out out;
  memset(&out, 0, sizeof out);
  /* all or nothing, inside the caller's transaction */
  rc = exec_msg(db, "SAVEPOINT h5mem_remember", &err);
  if (rc != SQLITE_OK && strstr(err ? err : "", "statements in progress")) {
    /* (SQLite's "cannot open savepoint", SQLITE_BUSY, would ask for a retry
    ** that can never succeed) */
    sqlite3_free(err);
    err = sqlite3_mprintf("cannot run inside a statement that writes (INSERT ... SELECT, CREATE TABLE ... "
                          "AS, UPDATE): it writes in a savepoint of its own, which SQLite refuses there; "
                          "call it in a SELECT of its own");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) {
    rc = remember(ctx, vt, argv, argc, &o, &out, &err);
    if (rc != SQLITE_OK) sqlite3_exec(db, "ROLLBACK TO h5mem_remember", NULL, NULL, NULL);
    int r = sqlite3_exec(db, "RELEASE h5mem_remember", NULL, NULL, NULL);
    if (rc == SQLITE_OK && r != SQLITE_OK) {
      rc = r;
      err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    }
  }
  rem_opts_free(&o);
  if (rc != SQLITE_OK) {
    sqlite3_free(out.consolidated);
    return ext_result_msg(ctx, rc, REMEMBER, err);
  }
  sqlite3_str *s = sqlite3_str_new(db);
  if (out.id) sqlite3_str_appendf(s, "{\"id\":%lld", (long long)out.id);
  else sqlite3_str_appendall(s, "{\"id\":null");
  sqlite3_str_appendf(s, ",\"action\":\"%s\",\"reason\":\"%s\"", out.action, out.reason);
  if (out.has_importance) sqlite3_str_appendf(s, ",\"importance\":%!.17g", out.importance);
  if (out.has_distance) sqlite3_str_appendf(s, ",\"distance\":%!.17g", out.distance);
  if (out.consolidated) sqlite3_str_appendf(s, ",\"consolidated\":%s", out.consolidated);
  sqlite3_str_appendchar(s, 1, '}');
  sqlite3_free(out.consolidated);
  ext_result_json(ctx, s);
}

/* ---- h5mem_consolidate --------------------------------------------------------- */

static void fn_consolidate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  memvt *vt = h5mem_fn_table(ctx, argv[0], CONSOLIDATE);
  if (!vt) return;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_value *opts = argc > 1 ? argv[1] : NULL;
  if (opts && sqlite3_value_type(opts) != SQLITE_NULL && sqlite3_value_type(opts) != SQLITE_TEXT)
    return ext_result_msg(ctx, SQLITE_MISMATCH, CONSOLIDATE, sqlite3_mprintf("options: expected a JSON object"));
  /* one statement, all or none by itself (the command undoes a failed
  ** cycle): no savepoint, so it runs inside a statement that writes too */
  char *err = NULL;
  int rc = run_consolidate(db, vt, opts, NULL, &err);
  if (rc != SQLITE_OK) return ext_result_msg(ctx, rc, CONSOLIDATE, err);
  sqlite3_result_text(ctx, h5mem_table_life(vt)->report, -1, SQLITE_TRANSIENT);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
}

int h5mem_life_register(sqlite3 *db, registry *reg) {
  int rc = SQLITE_OK;
  for (int n = 2; n <= 4 && rc == SQLITE_OK; n++)
    rc = h5mem_registry_function(db, reg, REMEMBER, n, SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE, fn_remember);
  for (int n = 1; n <= 2 && rc == SQLITE_OK; n++)
    rc = h5mem_registry_function(db, reg, CONSOLIDATE, n, SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE,
                                 fn_consolidate);
  return rc;
}
