/*
** ext/vtab/search_opts.c - the options objects of the SQL functions and
** tables (vec_search, bm25, hybrid, the graph functions, h5mem_migrate):
** one reader of a JSON object of options, the check of a number option,
** and the vector search's options (declared in search.h and vtab_int.h).
*/
#include "config.h"

#include <string.h>

#include "vtab_int.h"

int search_opts_parse(sqlite3 *db, sqlite3_value *v, const char *known,
                      int (*each)(void *ctx, const char *key, sqlite3_stmt *row, char **err),
                      void *ctx, char **err) {
  if (!v || sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  const char *t = (const char *)sqlite3_value_text(v);
  while (t && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) t++;
  if (!t || *t != '{') {
    *err = sqlite3_mprintf("options: expected a JSON object (known keys: %s)", known);
    return SQLITE_ERROR;
  }
  sqlite3_stmt *st;
  /* first a key given twice (json_each lists both): before any is taken */
  int rc = sqlite3_prepare_v2(db, "SELECT key FROM json_each(?1) GROUP BY key HAVING count(*) > 1 LIMIT 1",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("options need SQLite's JSON functions: %s", sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_bind_value(st, 1, v);
  if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    *err = sqlite3_mprintf("options: duplicate option '%s' (each option once)",
                           (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return SQLITE_ERROR;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    *err = sqlite3_mprintf("options: %s (expected a JSON object)", sqlite3_errmsg(db));
    return SQLITE_ERROR;
  }
  rc = sqlite3_prepare_v2(db, "SELECT key, type, value, atom FROM json_each(?1)", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("options need SQLite's JSON functions: %s", sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_bind_value(st, 1, v);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(st, 0);
    if (!key) continue;
    char *e = NULL;
    int r = each(ctx, key, st, &e);
    if (r == SQLITE_NOMEM) {
      sqlite3_free(e);
      sqlite3_finalize(st);
      return r;
    }
    if (r != SQLITE_OK) {
      *err = r == SEARCH_UNKNOWN ? sqlite3_mprintf("options: unknown option '%s' (known: %s)", key, known)
                    : sqlite3_mprintf("options: bad value for '%s'%s%s (known: %s)", key,
                                      e ? ": " : "", e ? e : "", known);
      sqlite3_free(e);
      sqlite3_finalize(st);
      return SQLITE_ERROR;
    }
  }
  if (rc != SQLITE_DONE) {
    *err = sqlite3_mprintf("options: %s (expected a JSON object)", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return SQLITE_ERROR;
  }
  sqlite3_finalize(st);
  return SQLITE_OK;
}

int search_opts_num(sqlite3_stmt *row, double lo, double hi, double *out, char **err) {
  const char *type = (const char *)sqlite3_column_text(row, 1);
  if (!type || (strcmp(type, "integer") && strcmp(type, "real"))) {
    *err = sqlite3_mprintf("expected a number");
    return SQLITE_ERROR;
  }
  double d = sqlite3_column_double(row, 2);
  if (!(d >= lo && d <= hi)) {
    *err = sqlite3_mprintf("expected a number from %g to %g", lo, hi);
    return SQLITE_ERROR;
  }
  *out = d;
  return SQLITE_OK;
}

/* An option that must be an integer in lo .. hi, into *out; else
** SQLITE_ERROR with the range in *err. */
static int int_option(sqlite3_stmt *row, sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 *out, char **err) {
  const char *type = (const char *)sqlite3_column_text(row, 1);
  sqlite3_int64 n = sqlite3_column_int64(row, 2);
  if (!type || strcmp(type, "integer") || n < lo || n > hi) {
    *err = sqlite3_mprintf("expected an integer from %lld to %lld", (long long)lo, (long long)hi);
    return SQLITE_ERROR;
  }
  *out = n;
  return SQLITE_OK;
}

int search_knn_option(store_knn_opts *o, const char *key, sqlite3_stmt *row, char **err) {
  const char *type = (const char *)sqlite3_column_text(row, 1);
  const char *val = (const char *)sqlite3_column_text(row, 2);
  sqlite3_int64 n = 0;
  int rc = SQLITE_OK;
  if (!strcmp(key, "exact")) {
    if (!type || (strcmp(type, "true") && strcmp(type, "false"))) {
      *err = sqlite3_mprintf("expected true or false");
      return SQLITE_ERROR;
    }
    if (!strcmp(type, "true")) o->exact = 1;
  } else if (!strcmp(key, "ef")) {
    if ((rc = int_option(row, 1, 100000, &n, err)) == SQLITE_OK) o->ef = (int)n;
  } else if (!strcmp(key, "nprobe")) {
    if ((rc = int_option(row, 1, 1 << 24, &n, err)) == SQLITE_OK) o->nprobe = (int)n;
  } else if (!strcmp(key, "index")) {
    if (!type || strcmp(type, "text") || !val ||
        (strcmp(val, "flat") && strcmp(val, "hnsw") && strcmp(val, "ivf"))) {
      *err = sqlite3_mprintf("expected \"flat\", \"hnsw\" or \"ivf\"");
      return SQLITE_ERROR;
    }
    if (!strcmp(val, "flat")) o->exact = 1;
  } else {
    return SEARCH_UNKNOWN;
  }
  return rc;
}
