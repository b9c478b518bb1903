/*
** ext/func_life.c - the lifecycle policies of lib/life as SQL functions
** (docs/SQL.md, "Memory lifecycle"):
**
**   h5mem_gate(text [, options])        -> JSON: the write gate's decision
**   h5mem_decay(importance, ts, access_count, last_access [, options])
**                                       -> REAL: the decay score, in [0, 1]
**
** and the options of the score for h5mem_score (ext_life_score_opts; the
** function is the h5mem table's, ext/vtab/vtab_h5mem.c).
** Options objects are read by the binding's one options reader
** (vtab/search.h: strict JSON, each key once, unknown keys an error
** listing the known ones).
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ext.h"
#include "ext_err.h"
#include "life/life.h"
#include "util/json.h"
#include "util/timefmt.h"
#include "vtab/search.h"

/* "<function>: <message>" as the function's error; takes msg
** (sqlite3_mprintf'd; NULL: no memory). */
static void life_err(sqlite3_context *ctx, int rc, char *msg) {
  const char *fn = sqlite3_user_data(ctx);
  char *m = msg ? sqlite3_mprintf("%s: %s", fn, msg) : NULL;
  if (m) ext_result_rc(ctx, rc, m);
  else sqlite3_result_error_nomem(ctx);
  sqlite3_free(m);
  sqlite3_free(msg);
}

/* ---- h5mem_gate ---------------------------------------------------------- */

#define GATE_KNOWN EXT_LIFE_GATE_KNOWN

int ext_life_gate_option(void *ctx, const char *key, const search_opt *v, char **err) {
  life_gate_opts *o = ctx;
  double d;
  if (!strcmp(key, "trivial")) {
    if (v->type != UTIL_JSON_TRUE && v->type != UTIL_JSON_FALSE) {
      *err = sqlite3_mprintf("expected true or false");
      return SQLITE_ERROR;
    }
    o->trivial = v->type == UTIL_JSON_TRUE;
    return SQLITE_OK;
  }
  if (!strcmp(key, "min_chars") || !strcmp(key, "min_words")) {
    if (v->type != UTIL_JSON_INTEGER || v->inum < 0 || v->inum > 1000000000) {
      *err = sqlite3_mprintf("expected an integer from 0 (off) to 1000000000");
      return SQLITE_ERROR;
    }
    *(key[4] == 'c' ? &o->min_chars : &o->min_words) = (uint64_t)v->inum;
    return SQLITE_OK;
  }
  if (!strcmp(key, "min_distinct_ratio") || !strcmp(key, "min_alnum_ratio")) {
    int rc = search_opts_num(v, 0, 1, &d, err);
    if (rc == SQLITE_OK) *(key[4] == 'd' ? &o->min_distinct_ratio : &o->min_alnum_ratio) = d;
    return rc;
  }
  return SEARCH_UNKNOWN;
}

/* A double as JSON: every finite double round-trips in 17 digits. */
static void put_num(sqlite3_str *s, const char *key, double x) {
  sqlite3_str_appendf(s, ",\"%s\":%!.17g", key, x);
}

static void fn_gate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  life_gate_opts o;
  life_gate_opts_default(&o);
  char *err = NULL;
  int rc = search_opts_parse(argc > 1 ? argv[1] : NULL, GATE_KNOWN, ext_life_gate_option, &o, &err);
  if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? sqlite3_result_error_nomem(ctx) : life_err(ctx, rc, err);
  int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type != SQLITE_TEXT)
    return life_err(ctx, SQLITE_ERROR,
                    sqlite3_mprintf("text: expected TEXT, got %s",
                                    type == SQLITE_BLOB ? "a BLOB" : "a number"));
  const char *t = (const char *)sqlite3_value_text(argv[0]);
  size_t n = (size_t)sqlite3_value_bytes(argv[0]);
  if (!t && n) return sqlite3_result_error_nomem(ctx);
  life_gate_result r;
  if (life_gate(&o, t, n, &r) != LIFE_OK) /* (the reader checked the ranges) */
    return life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("bad options"));
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendf(s, "{\"save\":%s,\"reason\":\"%s\",\"chars\":%llu,\"words\":%llu,\"distinct\":%llu",
                      r.save ? "true" : "false", life_reason_name(r.reason),
                      (unsigned long long)r.chars, (unsigned long long)r.words,
                      (unsigned long long)r.distinct);
  put_num(s, "distinct_ratio", r.distinct_ratio);
  put_num(s, "alnum_ratio", r.alnum_ratio);
  put_num(s, "information", r.information);
  sqlite3_str_appendchar(s, 1, '}');
  ext_result_json(ctx, s);
}

/* ---- the score's options ------------------------------------------------- */

#define SCORE_KNOWN "now, half_life_days, weights, access_full, default_importance"
#define WEIGHTS_KNOWN "importance, recency, access"

typedef struct score_args {
  life_score_opts o;
  int64_t now;
  int has_now;
} score_args;

static int weight_option(void *ctx, const char *key, const search_opt *v, char **err) {
  life_score_opts *o = ctx;
  double *w = !strcmp(key, "importance") ? &o->w_importance
              : !strcmp(key, "recency")  ? &o->w_recency
              : !strcmp(key, "access")   ? &o->w_access
                                         : NULL;
  if (!w) return SEARCH_UNKNOWN;
  return search_opts_num(v, 0, 1e9, w, err);
}

static int score_option(void *ctx, const char *key, const search_opt *v, char **err) {
  score_args *a = ctx;
  double d;
  int rc;
  if (!strcmp(key, "now")) {
    if ((rc = search_opts_num(v, -1e15, 1e15, &d, err)) != SQLITE_OK) return rc;
    a->now = (int64_t)floor(d);
    a->has_now = 1;
    return SQLITE_OK;
  }
  if (!strcmp(key, "half_life_days")) {
    if ((rc = search_opts_num(v, 1e-9, 1e9, &d, err)) == SQLITE_OK) a->o.half_life = d * LIFE_DAY;
    return rc;
  }
  if (!strcmp(key, "access_full")) return search_opts_num(v, 1e-9, 1e15, &a->o.access_full, err);
  if (!strcmp(key, "default_importance")) return search_opts_num(v, 0, 1, &a->o.default_importance, err);
  if (!strcmp(key, "weights")) {
    rc = search_opts_object(v, WEIGHTS_KNOWN, weight_option, &a->o, err);
    if (rc == SQLITE_OK && !(a->o.w_importance + a->o.w_recency + a->o.w_access > 0)) {
      *err = sqlite3_mprintf("the weights must not all be 0");
      rc = SQLITE_ERROR;
    }
    return rc;
  }
  return SEARCH_UNKNOWN;
}

int ext_life_score_opts(sqlite3_value *v, life_score_opts *o, sqlite3_int64 *now, char **err) {
  score_args a;
  memset(&a, 0, sizeof a);
  life_score_opts_default(&a.o);
  int rc = search_opts_parse(v, SCORE_KNOWN, score_option, &a, err);
  if (rc == SQLITE_OK && life_score_check(&a.o) != LIFE_OK) {
    *err = sqlite3_mprintf("options: out of range");
    rc = SQLITE_ERROR;
  }
  *o = a.o;
  *now = a.has_now ? a.now : (int64_t)time(NULL);
  return rc;
}

/* The options argument v (NULL: none) into *a; 0, or the function's error set. */
static int score_options(sqlite3_context *ctx, sqlite3_value *v, score_args *a) {
  char *err = NULL;
  sqlite3_int64 now;
  int rc = ext_life_score_opts(v, &a->o, &now, &err);
  a->now = now;
  if (rc == SQLITE_NOMEM) sqlite3_free(err), sqlite3_result_error_nomem(ctx);
  else if (rc != SQLITE_OK) life_err(ctx, rc, err);
  return rc;
}

/* ---- reading a record's columns ----------------------------------------- */

/* A time column (unix seconds, or ISO-8601 text as the h5mem table takes
** it) into *t, *has 0 for NULL; 0, or the function's error set. */
static int read_time(sqlite3_context *ctx, sqlite3_value *v, const char *what, int64_t *t, int *has) {
  *has = 0;
  switch (sqlite3_value_type(v)) {
  case SQLITE_NULL: return 0;
  case SQLITE_INTEGER:
    *t = sqlite3_value_int64(v);
    *has = 1;
    return 0;
  case SQLITE_FLOAT: {
    double d = sqlite3_value_double(v);
    if (!(d >= -9.2e18 && d <= 9.2e18)) {
      life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("%s: expected unix seconds, got %g", what, d));
      return -1;
    }
    *t = (int64_t)floor(d);
    *has = 1;
    return 0;
  }
  case SQLITE_TEXT: {
    const char *s = (const char *)sqlite3_value_text(v);
    char e[120];
    if (!s) {
      sqlite3_result_error_nomem(ctx);
      return -1;
    }
    if (util_iso8601_parse(s, (size_t)sqlite3_value_bytes(v), t, e, sizeof e)) {
      life_err(ctx, SQLITE_ERROR,
               sqlite3_mprintf("%s: expected unix seconds or ISO-8601 text: %s", what, e));
      return -1;
    }
    *has = 1;
    return 0;
  }
  default:
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("%s: expected unix seconds or ISO-8601 text, got a BLOB", what));
    return -1;
  }
}

/* importance, ts, access_count, last_access in v[0..4) into *r; 0, or the
** function's error set. */
static int read_record(sqlite3_context *ctx, sqlite3_value **v, life_record *r) {
  memset(r, 0, sizeof *r);
  int type = sqlite3_value_type(v[0]);
  if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
    r->importance = sqlite3_value_double(v[0]);
    if (!isfinite(r->importance)) {
      life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("importance: expected a finite number"));
      return -1;
    }
    r->has_importance = 1;
  } else if (type != SQLITE_NULL) {
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("importance: expected a number or NULL, got %s",
                                                type == SQLITE_TEXT ? "TEXT" : "a BLOB"));
    return -1;
  }
  if (read_time(ctx, v[1], "ts", &r->ts, &r->has_ts)) return -1;
  type = sqlite3_value_type(v[2]);
  if (type == SQLITE_INTEGER) {
    r->access_count = sqlite3_value_int64(v[2]);
  } else if (type == SQLITE_FLOAT) {
    double d = sqlite3_value_double(v[2]);
    if (!(d >= -9.2e18 && d <= 9.2e18)) {
      life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("access_count: expected an integer, got %g", d));
      return -1;
    }
    r->access_count = (int64_t)d;
  } else if (type != SQLITE_NULL) {
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("access_count: expected an integer or NULL, got %s",
                                                type == SQLITE_TEXT ? "TEXT" : "a BLOB"));
    return -1;
  }
  return read_time(ctx, v[3], "last_access", &r->last_access, &r->has_last_access);
}

/* ---- h5mem_decay --------------------------------------------------------- */

static void fn_decay(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  score_args a;
  life_record r;
  if (score_options(ctx, argc > 4 ? argv[4] : NULL, &a)) return;
  if (read_record(ctx, argv, &r)) return;
  sqlite3_result_double(ctx, life_score(&a.o, &r, a.now, NULL));
}

/* ---- registration -------------------------------------------------------- */

int ext_life_register(sqlite3 *db) {
  static const struct {
    const char *name;
    int nargs;
    int flags;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
  } fns[] = {
      {"h5mem_gate", 1, SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS | SQLITE_RESULT_SUBTYPE, fn_gate},
      {"h5mem_gate", 2, SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS | SQLITE_RESULT_SUBTYPE, fn_gate},
      /* not deterministic: the current time unless options give now */
      {"h5mem_decay", 4, SQLITE_INNOCUOUS, fn_decay},
      {"h5mem_decay", 5, SQLITE_INNOCUOUS, fn_decay},
  };
  int rc = SQLITE_OK;
  for (size_t i = 0; i < sizeof fns / sizeof *fns && rc == SQLITE_OK; i++)
    rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].nargs, SQLITE_UTF8 | fns[i].flags,
                                    (void *)fns[i].name, fns[i].fn, NULL, NULL, NULL);
  return rc;
}
