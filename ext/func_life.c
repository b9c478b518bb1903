/*
** ext/func_life.c - the lifecycle policies of lib/life as SQL functions
** (docs/SQL.md, "Memory lifecycle"):
**
**   h5mem_gate(text [, options])        -> JSON: the write gate's decision
**   h5mem_decay(importance, ts, access_count, last_access [, options])
**                                       -> REAL: the decay score, in [0, 1]
**   h5mem_score(table, id [, options])  -> REAL: the same score of the
**                                          memory id of an h5mem table
**
** Options objects are read by the binding's one options reader
** (vtab/search.h: strict JSON, each key once, unknown keys an error
** listing the known ones).  h5mem_score reads the row through SQL
** (SELECT ... WHERE id = ?, a lookup the h5mem table plans by id), so it
** sees exactly what a SELECT in the same transaction sees; it is
** direct-only, as everything that reads a store (docs/SQL.md, "Trust").
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
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

#define GATE_KNOWN "trivial, min_chars, min_words, min_distinct_ratio, min_alnum_ratio"

static int gate_option(void *ctx, const char *key, const search_opt *v, char **err) {
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
  int rc = search_opts_parse(argc > 1 ? argv[1] : NULL, GATE_KNOWN, gate_option, &o, &err);
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

/* The options argument v (NULL: none) into *a; 0, or the function's error set. */
static int score_options(sqlite3_context *ctx, sqlite3_value *v, score_args *a) {
  memset(a, 0, sizeof *a);
  life_score_opts_default(&a->o);
  char *err = NULL;
  int rc = search_opts_parse(v, SCORE_KNOWN, score_option, a, &err);
  if (rc == SQLITE_OK && life_score_check(&a->o) != LIFE_OK) {
    err = sqlite3_mprintf("options: out of range");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_NOMEM) sqlite3_free(err), sqlite3_result_error_nomem(ctx);
  else if (rc != SQLITE_OK) life_err(ctx, rc, err);
  if (rc == SQLITE_OK && !a->has_now) a->now = (int64_t)time(NULL);
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

/* ---- h5mem_score --------------------------------------------------------- */

/* The identifier that starts at z[*i] (quoted "..", `..`, [..], '..', or
** bare), *i moved past it; 0 when there is none. */
static int skip_ident(const char *z, size_t *i) {
  char c = z[*i], end = c == '"' ? '"' : c == '`' ? '`' : c == '[' ? ']' : c == '\'' ? '\'' : 0;
  size_t j = *i;
  if (end) {
    for (j++; z[j]; j++)
      if (z[j] == end) {
        if (end != ']' && z[j + 1] == end) j++;
        else break;
      }
    if (!z[j]) return 0;
    *i = j + 1;
    return 1;
  }
  while (z[j] && z[j] != ' ' && z[j] != '\t' && z[j] != '\n' && z[j] != '\r' && z[j] != '(' && z[j] != '.') j++;
  if (j == *i) return 0;
  *i = j;
  return 1;
}

static size_t skip_space(const char *z, size_t i) {
  while (z[i] == ' ' || z[i] == '\t' || z[i] == '\n' || z[i] == '\r') i++;
  return i;
}

/* Whether sql, a table's CREATE statement as sqlite_schema keeps it
** ("CREATE VIRTUAL TABLE <name> USING <module>(...)"), makes an h5mem table. */
static int is_h5mem_sql(const char *sql) {
  static const char pre[] = "CREATE VIRTUAL TABLE ";
  size_t i = 0;
  if (!sql || strncasecmp(sql, pre, sizeof pre - 1)) return 0;
  i = skip_space(sql, sizeof pre - 1);
  if (!skip_ident(sql, &i)) return 0;
  if (sql[i] == '.' && (++i, !skip_ident(sql, &i))) return 0;
  i = skip_space(sql, i);
  if (strncasecmp(sql + i, "USING", 5)) return 0;
  i = skip_space(sql, i + 5);
  if (strncasecmp(sql + i, "h5mem", 5)) return 0;
  i = skip_space(sql, i + 5);
  return sql[i] == '(' || sql[i] == 0;
}

/* The statement reading table name's record by id: "schema.table" names
** the table of that schema (when it is one), else name is the table's,
** looked up as SQLite does (temp, then main).  NULL with the function's
** error set. */
static sqlite3_stmt *score_stmt(sqlite3_context *ctx, const char *name) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  const char *dot = strchr(name, '.');
  char *schema = dot ? sqlite3_mprintf("%.*s", (int)(dot - name), name) : NULL;
  const char *table = name;
  if (dot && !schema) {
    sqlite3_result_error_nomem(ctx);
    return NULL;
  }
  if (schema && sqlite3_db_filename(db, schema)) {
    table = dot + 1;
  } else {
    sqlite3_free(schema);
    schema = NULL;
  }
  /* which schema holds it, and is it an h5mem table */
  char *q = schema ? sqlite3_mprintf("SELECT sql FROM \"%w\".sqlite_master WHERE type = 'table' AND name = ?1 "
                                     "COLLATE NOCASE", schema)
                   : sqlite3_mprintf("SELECT sql, 'temp' FROM temp.sqlite_master WHERE type = 'table' AND "
                                     "name = ?1 COLLATE NOCASE UNION ALL SELECT sql, 'main' FROM main.sqlite_master "
                                     "WHERE type = 'table' AND name = ?1 COLLATE NOCASE");
  sqlite3_stmt *st = NULL, *read = NULL;
  int rc = q ? sqlite3_prepare_v2(db, q, -1, &st, NULL) : SQLITE_NOMEM;
  sqlite3_free(q);
  char *where = NULL;
  int found = 0, h5mem = 0;
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
      found = 1;
      h5mem = is_h5mem_sql((const char *)sqlite3_column_text(st, 0));
      if (!schema) where = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 1));
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_OK && !found) {
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("no table '%s'", name));
  } else if (rc == SQLITE_OK && !h5mem) {
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("'%s' is not an h5mem table", name));
  } else if (rc == SQLITE_OK) {
    q = sqlite3_mprintf("SELECT importance, ts, access_count, last_access FROM \"%w\".\"%w\" WHERE id = ?1",
                        schema ? schema : where ? where : "main", table);
    rc = q ? sqlite3_prepare_v2(db, q, -1, &read, NULL) : SQLITE_NOMEM;
    sqlite3_free(q);
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM)
      life_err(ctx, rc, sqlite3_mprintf("%s", sqlite3_errmsg(db)));
  } else if (rc != SQLITE_NOMEM) {
    life_err(ctx, rc, sqlite3_mprintf("%s", sqlite3_errmsg(db)));
  }
  if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(ctx);
  sqlite3_free(where);
  sqlite3_free(schema);
  if (rc != SQLITE_OK || !read) {
    sqlite3_finalize(read);
    return NULL;
  }
  return read;
}

static void finalize_aux(void *p) { sqlite3_finalize(p); }

/* The score of the record st (score_stmt's) reads for id, as the result. */
static void score_run(sqlite3_context *ctx, sqlite3_stmt *st, sqlite3_int64 id, const score_args *a,
                      const char *name) {
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    sqlite3_value *v[4];
    life_record r;
    for (int i = 0; i < 4; i++) v[i] = sqlite3_column_value(st, i);
    if (!read_record(ctx, v, &r)) sqlite3_result_double(ctx, life_score(&a->o, &r, a->now, NULL));
  } else if (rc == SQLITE_DONE) {
    life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("no memory with id %lld in %s", (long long)id, name));
  } else {
    life_err(ctx, rc, sqlite3_mprintf("%s", sqlite3_errmsg(sqlite3_context_db_handle(ctx))));
  }
  sqlite3_reset(st);
}

static void fn_score(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (!ext_direct_call(ctx, "h5mem_score")) return;
  score_args a;
  if (score_options(ctx, argc > 2 ? argv[2] : NULL, &a)) return;
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT)
    return life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("table: expected a table's name"));
  int type = sqlite3_value_type(argv[1]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type != SQLITE_INTEGER)
    return life_err(ctx, SQLITE_ERROR, sqlite3_mprintf("id: expected an integer"));
  const char *name = (const char *)sqlite3_value_text(argv[0]);
  if (!name) return sqlite3_result_error_nomem(ctx);
  sqlite3_int64 id = sqlite3_value_int64(argv[1]);
  /* the statement is kept while the table's name is a constant of the
  ** calling statement (SQLite keeps auxiliary data only then; else it
  ** finalizes it at once and this call prepares its own) */
  sqlite3_stmt *st = sqlite3_get_auxdata(ctx, 0);
  if (!st) {
    if (!(st = score_stmt(ctx, name))) return;
    sqlite3_set_auxdata(ctx, 0, st, finalize_aux);
    if (!(st = sqlite3_get_auxdata(ctx, 0))) {
      if (!(st = score_stmt(ctx, name))) return;
      score_run(ctx, st, id, &a, name);
      sqlite3_finalize(st);
      return;
    }
  }
  score_run(ctx, st, id, &a, name);
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
      {"h5mem_score", 2, SQLITE_DIRECTONLY, fn_score},
      {"h5mem_score", 3, SQLITE_DIRECTONLY, fn_score},
  };
  int rc = SQLITE_OK;
  for (size_t i = 0; i < sizeof fns / sizeof *fns && rc == SQLITE_OK; i++)
    rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].nargs, SQLITE_UTF8 | fns[i].flags,
                                    (void *)fns[i].name, fns[i].fn, NULL, NULL, NULL);
  return rc;
}
