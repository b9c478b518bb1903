/*
** ext/vtab/search_opts.c - the options objects of the SQL functions and
** tables (vec_search, bm25, hybrid, the graph functions, h5mem_migrate):
** one reader of a JSON object of options, the check of a number option,
** and the vector search's options (declared in search.h and vtab_int.h).
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "vtab_int.h"

/* The members of the valid JSON object at s[at]: first a key given twice
** (before any is taken; the least such key, as SQL's GROUP BY found it),
** then each in order. */
static int opts_members(const char *s, size_t len, size_t at, const char *known,
                        int (*each)(void *ctx, const char *key, const search_opt *v, char **err),
                        void *ctx, char **err) {
  util_json_iter it;
  char **keys = NULL, *dup = NULL;
  size_t nkeys = 0, cap = 0;
  int rc = SQLITE_OK;
  if (util_json_iter_init(&it, s, at, len)) {
    *err = sqlite3_mprintf("options: expected a JSON object (known keys: %s)", known);
    return SQLITE_ERROR;
  }
  while (rc == SQLITE_OK && util_json_next(&it)) {
    if (nkeys == cap) {
      cap = cap ? 2 * cap : 16;
      char **k = sqlite3_realloc64(keys, cap * sizeof *k);
      if (!k) {
        rc = SQLITE_NOMEM;
        break;
      }
      keys = k;
    }
    if (!(keys[nkeys] = util_json_cstr(s, it.key, len, NULL))) rc = SQLITE_NOMEM;
    else nkeys++;
  }
  for (size_t a = 0; rc == SQLITE_OK && a < nkeys; a++)
    for (size_t b = a + 1; b < nkeys; b++)
      if (!strcmp(keys[a], keys[b]) && (!dup || strcmp(keys[a], dup) < 0)) dup = keys[a];
  if (rc == SQLITE_OK && dup) {
    *err = sqlite3_mprintf("options: duplicate option '%s' (each option once)", dup);
    rc = SQLITE_ERROR;
  }
  util_json_iter_init(&it, s, at, len);
  for (size_t k = 0; rc == SQLITE_OK && k < nkeys && util_json_next(&it); k++) {
    search_opt v;
    memset(&v, 0, sizeof v);
    v.type = util_json_type(s, it.v0, len);
    v.json = s + it.v0;
    v.len = it.v1 - it.v0;
    char *text = NULL;
    if (v.type == UTIL_JSON_TEXT && !(v.text = text = util_json_cstr(s, it.v0, len, NULL))) {
      rc = SQLITE_NOMEM;
      break;
    }
    int64_t n = 0;
    if ((v.type == UTIL_JSON_INTEGER || v.type == UTIL_JSON_REAL) &&
        util_json_number(s, it.v0, len, &n, &v.num) == UTIL_ENOMEM) {
      rc = SQLITE_NOMEM;
      break;
    }
    v.inum = n;
    char *e = NULL;
    int r = each(ctx, keys[k], &v, &e);
    free(text);
    if (r == SQLITE_NOMEM) {
      sqlite3_free(e);
      rc = r;
      break;
    }
    if (r != SQLITE_OK) {
      *err = r == SEARCH_UNKNOWN ? sqlite3_mprintf("options: unknown option '%s' (known: %s)", keys[k], known)
                    : sqlite3_mprintf("options: bad value for '%s'%s%s (known: %s)", keys[k],
                                      e ? ": " : "", e ? e : "", known);
      sqlite3_free(e);
      rc = SQLITE_ERROR;
    }
  }
  for (size_t k = 0; k < nkeys; k++) free(keys[k]);
  sqlite3_free(keys);
  return rc;
}

int search_opts_parse(sqlite3_value *v, const char *known,
                      int (*each)(void *ctx, const char *key, const search_opt *v, char **err),
                      void *ctx, char **err) {
  if (!v || sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  const char *t = (const char *)sqlite3_value_text(v);
  size_t n = t ? (size_t)sqlite3_value_bytes(v) : 0;
  size_t i = t ? util_json_ws(t, 0, n) : 0;
  if (!t || i >= n || t[i] != '{') {
    *err = sqlite3_mprintf("options: expected a JSON object (known keys: %s)", known);
    return SQLITE_ERROR;
  }
  char verr[200];
  if (util_json_valid(t, n, verr, sizeof verr)) {
    *err = sqlite3_mprintf("options: malformed JSON: %s (expected a JSON object)", verr);
    return SQLITE_ERROR;
  }
  return opts_members(t, n, i, known, each, ctx, err);
}

int search_opts_object(const search_opt *v, const char *known,
                       int (*each)(void *ctx, const char *key, const search_opt *v, char **err),
                       void *ctx, char **err) {
  return opts_members(v->json, v->len, 0, known, each, ctx, err);
}

int search_opts_num(const search_opt *v, double lo, double hi, double *out, char **err) {
  if (v->type != UTIL_JSON_INTEGER && v->type != UTIL_JSON_REAL) {
    *err = sqlite3_mprintf("expected a number");
    return SQLITE_ERROR;
  }
  double d = v->num;
  if (!(d >= lo && d <= hi)) {
    *err = sqlite3_mprintf("expected a number from %g to %g", lo, hi);
    return SQLITE_ERROR;
  }
  *out = d;
  return SQLITE_OK;
}

/* An option that must be an integer in lo .. hi, into *out; else
** SQLITE_ERROR with the range in *err. */
static int int_option(const search_opt *v, sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 *out, char **err) {
  sqlite3_int64 n = v->inum;
  if (v->type != UTIL_JSON_INTEGER || n < lo || n > hi) {
    *err = sqlite3_mprintf("expected an integer from %lld to %lld", (long long)lo, (long long)hi);
    return SQLITE_ERROR;
  }
  *out = n;
  return SQLITE_OK;
}

int search_knn_option(store_knn_opts *o, const char *key, const search_opt *v, char **err) {
  const char *val = v->text;
  sqlite3_int64 n = 0;
  int rc = SQLITE_OK;
  if (!strcmp(key, "exact")) {
    if (v->type != UTIL_JSON_TRUE && v->type != UTIL_JSON_FALSE) {
      *err = sqlite3_mprintf("expected true or false");
      return SQLITE_ERROR;
    }
    if (v->type == UTIL_JSON_TRUE) o->exact = 1;
  } else if (!strcmp(key, "ef")) {
    if ((rc = int_option(v, 1, 100000, &n, err)) == SQLITE_OK) o->ef = (int)n;
  } else if (!strcmp(key, "nprobe")) {
    if ((rc = int_option(v, 1, 1 << 24, &n, err)) == SQLITE_OK) o->nprobe = (int)n;
  } else if (!strcmp(key, "index")) {
    if (!val ||
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

int search_touch_option(search_touch *t, const char *key, const search_opt *v, char **err) {
  if (!strcmp(key, "where")) return SQLITE_OK; /* (read before the run: search_where) */
  if (!strcmp(key, "touch")) {
    if (v->type != UTIL_JSON_TRUE && v->type != UTIL_JSON_FALSE) {
      *err = sqlite3_mprintf("expected true or false");
      return SQLITE_ERROR;
    }
    t->touch = v->type == UTIL_JSON_TRUE;
    t->has_touch = 1;
    return SQLITE_OK;
  }
  if (!strcmp(key, "now")) { /* (as h5mem_decay's now: a number, floored) */
    double d;
    int rc = search_opts_num(v, -1e15, 1e15, &d, err);
    if (rc != SQLITE_OK) return rc;
    t->now = (int64_t)floor(d);
    t->has_now = 1;
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

typedef struct has_key {
  const char *key;
  int found;
} has_key;

static int has_each(void *ctx, const char *key, const search_opt *v, char **err) {
  (void)v;
  (void)err;
  has_key *h = ctx;
  h->found |= !strcmp(key, h->key);
  return SQLITE_OK;
}

int search_opts_has(sqlite3_value *v, const char *key) {
  has_key h = {key, 0};
  char *err = NULL;
  search_opts_parse(v, "", has_each, &h, &err);
  sqlite3_free(err);
  return h.found;
}
