/*
** ext/vtab/search_where.c - the "where" option of vec_search, bm25 and
** hybrid: conditions on a store's declared columns, applied before
** ranking, in the form Chroma's `where` made familiar:
**
**   {"where": {"user_id": 7, "price": {"$lt": 10}, "category": {"$in": ["a", "b"]},
**              "note": null, "$and": [{"flag": true}, {"price": {"$gte": 2}}]}}
**
** A value alone is `=` (null: IS NULL); an object holds operators, each a
** condition: $eq $ne $gt $gte $lt $lte (a value), $in $nin (an array),
** $between (an array of two: both ends included), $null (true: IS NULL,
** false: IS NOT NULL).  Every condition must hold (AND; "$and" nests
** them).  Strings are text, numbers numbers, true and false 1 and 0.
** Auxiliary (+) and vector columns are not filtered.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "vtab_int.h"

typedef struct wctx {
  store *st;
  knn_filter *f;
  char *msg; /* the reason of an error, reported as "options: where: ..." */
} wctx;

/* The JSON scalar at s[i] (null, a number, a string, true, false) into *v
** (text: a malloc'd copy, freed by the caller through *own). */
static int scalar(const char *s, size_t i, size_t len, store_val *v, char **own, char **err) {
  memset(v, 0, sizeof *v);
  *own = NULL;
  int t = util_json_type(s, i, len);
  switch (t) {
  case UTIL_JSON_NULL: return SQLITE_OK;
  case UTIL_JSON_TRUE:
  case UTIL_JSON_FALSE:
    v->type = STORE_T_INTEGER;
    v->i = t == UTIL_JSON_TRUE;
    return SQLITE_OK;
  case UTIL_JSON_INTEGER:
  case UTIL_JSON_REAL: {
    int64_t n;
    double d;
    int r = util_json_number(s, i, len, &n, &d);
    if (r == UTIL_ENOMEM) return SQLITE_NOMEM;
    if (r == UTIL_JSON_INTEGER) {
      v->type = STORE_T_INTEGER;
      v->i = n;
    } else {
      v->type = STORE_T_FLOAT;
      v->f = d;
    }
    return SQLITE_OK;
  }
  case UTIL_JSON_TEXT: {
    size_t n;
    char *c = util_json_cstr(s, i, len, &n);
    if (!c) return SQLITE_NOMEM;
    *own = c;
    v->type = STORE_T_TEXT;
    v->p = c;
    v->n = n;
    return SQLITE_OK;
  }
  default:
    *err = sqlite3_mprintf("expected a string, a number, true, false or null, got %s",
                           util_json_type_name(t));
    return SQLITE_ERROR;
  }
}

/* The array at s[v0] as values (each scalar; null kept as a NULL). */
static int array_vals(const char *s, size_t v0, size_t len, store_val **out, int *nv, char ***owns,
                      char **err) {
  util_json_iter it;
  *out = NULL;
  *nv = 0;
  *owns = NULL;
  if (util_json_type(s, v0, len) != UTIL_JSON_ARRAY || util_json_iter_init(&it, s, v0, len)) {
    *err = sqlite3_mprintf("expected an array");
    return SQLITE_ERROR;
  }
  int cap = 0;
  while (util_json_next(&it)) {
    if (*nv == cap) {
      cap = cap ? cap * 2 : 16;
      store_val *n = sqlite3_realloc64(*out, (sqlite3_uint64)cap * sizeof *n);
      char **o = sqlite3_realloc64(*owns, (sqlite3_uint64)cap * sizeof *o);
      if (n) *out = n;
      if (o) *owns = o;
      if (!n || !o) return SQLITE_NOMEM;
    }
    int rc = scalar(s, it.v0, len, &(*out)[*nv], &(*owns)[*nv], err);
    if (rc) return rc;
    (*nv)++;
  }
  return SQLITE_OK;
}

static void owns_free(char **owns, int n) {
  for (int i = 0; i < n; i++) free(owns[i]);
  sqlite3_free(owns);
}

static int where_object(wctx *w, const char *s, size_t i, size_t len, int depth, char **err);

/* The conditions on column c from the value at s[v0] (a scalar, or an object of operators). */
static int column_conds(wctx *w, int c, const char *name, const char *s, size_t v0, size_t len, char **err) {
  store_val one;
  char *own = NULL;
  int rc;
  if (util_json_type(s, v0, len) != UTIL_JSON_OBJECT) { /* a value alone: = (null: IS NULL) */
    char *m = NULL;
    if ((rc = scalar(s, v0, len, &one, &own, &m))) {
      if (rc == SQLITE_ERROR) *err = sqlite3_mprintf("where: %s: %s (or an object of operators)", name, m);
      sqlite3_free(m);
      return rc;
    }
    rc = search_knn_filter_vals(w->f, c, one.type ? STORE_OP_EQ : STORE_OP_ISNULL, &one, one.type ? 1 : 0);
    free(own);
    return rc;
  }
  static const struct {
    const char *name;
    int op;
  } ops[] = {{"$eq", STORE_OP_EQ}, {"$ne", STORE_OP_NE}, {"$gt", STORE_OP_GT},     {"$gte", STORE_OP_GE},
             {"$lt", STORE_OP_LT}, {"$lte", STORE_OP_LE}, {"$in", STORE_OP_IN},    {"$nin", STORE_OP_NOTIN},
             {"$between", -1},     {"$null", -2}};
  util_json_iter it;
  if (util_json_iter_init(&it, s, v0, len)) return SQLITE_ERROR;
  while (util_json_next(&it)) {
    size_t kn;
    char *key = util_json_cstr(s, it.key, len, &kn);
    if (!key) return SQLITE_NOMEM;
    int op = 0;
    for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++)
      if (!strcmp(key, ops[j].name)) op = ops[j].op;
    if (!op) {
      *err = sqlite3_mprintf("where: %s: unknown operator '%s' (known: $eq $ne $gt $gte $lt $lte $in $nin "
                             "$between $null)", name, key);
      free(key);
      return SQLITE_ERROR;
    }
    char *m = NULL;
    if (op == -2) { /* $null: true / false */
      int t = util_json_type(s, it.v0, len);
      if (t != UTIL_JSON_TRUE && t != UTIL_JSON_FALSE) {
        m = sqlite3_mprintf("expected true or false");
        rc = SQLITE_ERROR;
      } else {
        rc = search_knn_filter_vals(w->f, c, t == UTIL_JSON_TRUE ? STORE_OP_ISNULL : STORE_OP_NOTNULL, NULL, 0);
      }
    } else if (op == STORE_OP_IN || op == STORE_OP_NOTIN || op == -1) {
      store_val *vals;
      char **owns;
      int nv;
      rc = array_vals(s, it.v0, len, &vals, &nv, &owns, &m);
      if (!rc && op == -1 && nv != 2) {
        m = sqlite3_mprintf("expected an array of two values, the ends of the range");
        rc = SQLITE_ERROR;
      }
      if (!rc && op == -1) {
        rc = search_knn_filter_vals(w->f, c, STORE_OP_GE, &vals[0], 1);
        if (!rc) rc = search_knn_filter_vals(w->f, c, STORE_OP_LE, &vals[1], 1);
      } else if (!rc) {
        rc = search_knn_filter_vals(w->f, c, op, vals, nv);
      }
      sqlite3_free(vals);
      owns_free(owns, nv);
    } else {
      rc = scalar(s, it.v0, len, &one, &own, &m);
      if (!rc) rc = search_knn_filter_vals(w->f, c, op, &one, 1); /* (null: nothing meets it, as in SQL) */
      free(own);
      own = NULL;
    }
    if (rc == SQLITE_ERROR) {
      *err = sqlite3_mprintf("where: %s: %s: %s", name, key, m ? m : "bad value");
    }
    sqlite3_free(m);
    free(key);
    if (rc) return rc;
  }
  return SQLITE_OK;
}

static int where_object(wctx *w, const char *s, size_t i, size_t len, int depth, char **err) {
  util_json_iter it;
  if (depth > 32) {
    *err = sqlite3_mprintf("where: nested too deeply");
    return SQLITE_ERROR;
  }
  if (util_json_type(s, i, len) != UTIL_JSON_OBJECT || util_json_iter_init(&it, s, i, len)) {
    *err = sqlite3_mprintf("where: expected an object of conditions, e.g. {\"user_id\": 7, \"price\": {\"$lt\": 10}}");
    return SQLITE_ERROR;
  }
  while (util_json_next(&it)) {
    size_t kn;
    char *key = util_json_cstr(s, it.key, len, &kn);
    if (!key) return SQLITE_NOMEM;
    int rc = SQLITE_OK;
    if (!strcmp(key, "$and")) {
      util_json_iter a;
      if (util_json_type(s, it.v0, len) != UTIL_JSON_ARRAY || util_json_iter_init(&a, s, it.v0, len)) {
        *err = sqlite3_mprintf("where: $and: expected an array of objects");
        rc = SQLITE_ERROR;
      }
      while (!rc && util_json_next(&a)) rc = where_object(w, s, a.v0, len, depth + 1, err);
    } else if (key[0] == '$') {
      *err = sqlite3_mprintf("where: %s is not supported (conditions are joined by AND: $and, or "
                             "several columns in one object)", key);
      rc = SQLITE_ERROR;
    } else {
      int c = store_col_find(w->st, key, kn);
      const store_coldef *d = c >= 0 ? store_col(w->st, c) : NULL;
      if (!d) {
        sqlite3_str *names = sqlite3_str_new(NULL);
        for (int j = 0; j < store_ncols(w->st); j++) {
          const store_coldef *e = store_col(w->st, j);
          if (e->role != STORE_R_AUX && e->type != STORE_T_VECTOR)
            sqlite3_str_appendf(names, "%s%s", sqlite3_str_length(names) ? ", " : "", e->name);
        }
        char *list = sqlite3_str_finish(names);
        *err = sqlite3_mprintf("where: no declared column '%s' to filter on (%s%s)", key,
                               list && *list ? "the table's: " : "the table declares none",
                               list ? list : "");
        sqlite3_free(list);
        rc = SQLITE_ERROR;
      } else if (d->role == STORE_R_AUX || d->type == STORE_T_VECTOR) {
        *err = sqlite3_mprintf("where: column %s is %s: not filtered", key,
                               d->role == STORE_R_AUX ? "an auxiliary column (+)" : "a vector column");
        rc = SQLITE_ERROR;
      } else {
        rc = column_conds(w, c, d->name, s, it.v0, len, err);
      }
    }
    free(key);
    if (rc) return rc;
  }
  return SQLITE_OK;
}

static int where_each(void *ctx, const char *key, const search_opt *v, char **err) {
  (void)err;
  if (strcmp(key, "where") != 0) return SQLITE_OK; /* (the run's own options) */
  wctx *w = ctx;
  return where_object(w, v->json, 0, v->len, 0, &w->msg);
}

int search_where(store *st, sqlite3_value *options, knn_filter *f, char **err) {
  if (!options || sqlite3_value_type(options) == SQLITE_NULL) return SQLITE_OK;
  wctx w = {st, f, NULL};
  int rc = search_opts_parse(options, "where", where_each, &w, err);
  if (w.msg) { /* (the reason, without search_opts_parse's frame) */
    sqlite3_free(*err);
    *err = sqlite3_mprintf("options: %s", w.msg);
    sqlite3_free(w.msg);
    if (!*err) rc = SQLITE_NOMEM;
  }
  return rc;
}
