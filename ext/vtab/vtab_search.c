/*
** ext/vtab/vtab_search.c - vector search over an h5mem store:
**
**   SELECT * FROM vec_search('mem', :query, 10 [, '{"exact": true}'])
**     WHERE source = 'user' AND ts BETWEEN :a AND :b;
**
** A table-valued function with columns id, distance, score, text, source,
** session, ts, tier (and the hidden arguments store, query, k, options).
** Conditions on source, session, tier (=), ts (=, <, <=, >, >=, BETWEEN) and
** id (=, IN) are applied before ranking: the result is the exact top k among
** the records that meet them.  The same search serves the h5mem table's
** sqlite-vec style KNN form (WHERE embedding MATCH :q AND k = 10), through
** knn_plan / knn_run below.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ann/ann.h"
#include "h5mem_int.h"
#include "k.h"
#include "search_int.h"
#include "util/vecjson.h"

#define WHO "vec_search"

/* ---- filters ------------------------------------------------------------ */

void knn_filter_free(knn_filter *f) {
  sqlite3_free(f->ids);
  memset(f, 0, sizeof *f);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* One constraint's value into the filter: op is one of the KNN_OP_* codes. */
int knn_filter_add(knn_filter *f, int field, int op, sqlite3_value *v) {
  if (field == KNN_F_ID) {
    if (op == KNN_OP_IN) {
      sqlite3_value *x;
      int rc;
      for (rc = sqlite3_vtab_in_first(v, &x); rc == SQLITE_OK && x; rc = sqlite3_vtab_in_next(v, &x)) {
        if (sqlite3_value_numeric_type(x) != SQLITE_INTEGER) continue; /* matches no integer id */
        if (f->nids % 64 == 0) {
          int64_t *n = sqlite3_realloc64(f->ids, (f->nids + 64) * sizeof *n);
          if (!n) return SQLITE_NOMEM;
          f->ids = n;
        }
        f->ids[f->nids++] = sqlite3_value_int64(x);
      }
      if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
    } else {
      if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) {
        int64_t *n = sqlite3_realloc64(f->ids, 64 * sizeof *n);
        if (!n) return SQLITE_NOMEM;
        f->ids = n;
        f->ids[0] = sqlite3_value_int64(v);
        f->nids = 1;
      } else {
        f->nids = 0;
      }
    }
    if (f->has_ids) f->empty = 1; /* two id conditions: keep it simple and exact */
    f->has_ids = 1;
    if (!f->nids) f->empty = 1;
    qsort(f->ids, f->nids, sizeof *f->ids, cmp_i64);
    return SQLITE_OK;
  }
  if (field == KNN_F_TS) {
    int t = sqlite3_value_numeric_type(v);
    if (t == SQLITE_NULL) {
      f->empty = 1;
      return SQLITE_OK;
    }
    if (t == SQLITE_TEXT || t == SQLITE_BLOB) { /* integers sort before text */
      if (op == KNN_OP_EQ || op == KNN_OP_GT || op == KNN_OP_GE) f->empty = 1;
      return SQLITE_OK;
    }
    double d = sqlite3_value_double(v);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    int exact = t == SQLITE_INTEGER;
    int64_t x = sqlite3_value_int64(v);
    if (!exact && !(fabs(d) < 9.2e18)) { /* beyond every int64 (or NaN) */
      if (isnan(d) || op == KNN_OP_EQ || (d > 0) == (op == KNN_OP_GT || op == KNN_OP_GE)) f->empty = 1;
      return SQLITE_OK;
    }
    switch (op) {
    case KNN_OP_EQ:
      if (!exact && floor(d) != d) f->empty = 1;
      lo = hi = exact ? x : (int64_t)d;
      break;
    case KNN_OP_GT: lo = exact ? (x == INT64_MAX ? (f->empty = 1, x) : x + 1) : (int64_t)floor(d) + 1; break;
    case KNN_OP_GE: lo = exact ? x : (int64_t)ceil(d); break;
    case KNN_OP_LT: hi = exact ? (x == INT64_MIN ? (f->empty = 1, x) : x - 1) : (int64_t)ceil(d) - 1; break;
    case KNN_OP_LE: hi = exact ? x : (int64_t)floor(d); break;
    }
    if (!f->has_ts) {
      f->ts_lo = INT64_MIN;
      f->ts_hi = INT64_MAX;
      f->has_ts = 1;
    }
    if (lo > f->ts_lo) f->ts_lo = lo;
    if (hi < f->ts_hi) f->ts_hi = hi;
    return SQLITE_OK;
  }
  /* source, session, tier: equality with a text value */
  int k = field - KNN_F_SOURCE;
  if (sqlite3_value_type(v) == SQLITE_NULL) {
    f->empty = 1;
    return SQLITE_OK;
  }
  const char *s = (const char *)sqlite3_value_text(v);
  if (!s) return SQLITE_NOMEM;
  size_t n = (size_t)sqlite3_value_bytes(v);
  if (f->has[k] && (f->len[k] != n || memcmp(f->str[k], s, n))) f->empty = 1;
  f->str[k] = s;
  f->len[k] = n;
  f->has[k] = 1;
  return SQLITE_OK;
}

/* The conditions of f other than id, ready to test record by record: the
** string columns of the file's rows compared as codes (store_str_codes). */
typedef struct meets_ctx {
  store *st;
  const knn_filter *f;
  int err;
  const uint32_t *codes[3];
  uint64_t ncodes[3];
  uint32_t code[3];
} meets_ctx;

static const unsigned str_want[3] = {STORE_V_SOURCE, STORE_V_SESSION, STORE_V_TIER};

/* STORE_OK or the store's error code. */
static int meets_init(meets_ctx *m, store *st, const knn_filter *f) {
  memset(m, 0, sizeof *m);
  m->st = st;
  m->f = f;
  for (int k = 0; k < 3; k++) {
    int rc = f->has[k] ? store_str_codes(st, str_want[k], f->str[k], f->len[k], &m->codes[k],
                                         &m->ncodes[k], &m->code[k])
                       : STORE_OK;
    if (rc != STORE_OK) return rc;
  }
  return STORE_OK;
}

/* Whether the live record at pos meets the conditions (not the id part). */
static int meets(meets_ctx *m, uint64_t pos) {
  const knn_filter *f = m->f;
  unsigned want = 0;
  for (int k = 0; k < 3; k++) {
    if (!f->has[k]) continue;
    if (pos < m->ncodes[k]) {
      if (m->codes[k][pos] != m->code[k]) return 0;
    } else {
      want |= str_want[k];
    }
  }
  if (want) { /* records in memory */
    store_view v;
    memset(&v, 0, sizeof v);
    if (store_get(m->st, pos, want, &v) != STORE_OK) {
      m->err = 1;
      return 0;
    }
    const char *sv[3] = {v.source, v.session, v.tier};
    size_t sl[3] = {v.source_len, v.session_len, v.tier_len};
    for (int k = 0; k < 3; k++)
      if ((want & str_want[k]) && (!sv[k] || sl[k] != f->len[k] || memcmp(sv[k], f->str[k], sl[k])))
        return 0;
  }
  if (f->has_ts) {
    int64_t ts;
    if (store_get_ts(m->st, pos, &ts) != STORE_OK) {
      m->err = 1;
      return 0;
    }
    if (ts < f->ts_lo || ts > f->ts_hi) return 0;
  }
  return 1;
}

static int meets_fn(void *ctx, uint64_t pos) {
  meets_ctx *m = ctx;
  return !m->err && meets(m, pos);
}

int knn_run(store *st, const float *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
            ann_res **out, uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (f->empty || k == 0 || store_count(st) == 0) return SQLITE_OK;
  store_filter flt = {NULL, 0, NULL, NULL};
  meets_ctx mc;
  uint8_t *bits = NULL;
  int src = meets_init(&mc, st, f);
  if (src != STORE_OK) {
    if (src == STORE_ENOMEM) return SQLITE_NOMEM;
    *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
    return SQLITE_CORRUPT;
  }
  if (f->has_ids) { /* the listed records that meet the rest */
    uint64_t npos = store_npos(st);
    bits = sqlite3_malloc64(npos / 8 + 1);
    if (!bits) return SQLITE_NOMEM;
    memset(bits, 0, npos / 8 + 1);
    for (size_t i = 0; i < f->nids && !mc.err; i++) {
      uint64_t pos;
      if (store_find(st, f->ids[i], &pos) == STORE_OK && !(bits[pos / 8] >> (pos % 8) & 1) &&
          meets(&mc, pos)) {
        bits[pos / 8] |= (uint8_t)(1u << (pos % 8));
        flt.nbits++;
      }
    }
    flt.bits = bits;
    if (!flt.nbits && !mc.err) {
      sqlite3_free(bits);
      return SQLITE_OK;
    }
  } else if (f->has[0] || f->has[1] || f->has[2] || f->has_ts) {
    flt.fn = meets_fn; /* decided row by row, as the search needs */
    flt.ctx = &mc;
  }
  if (k > store_count(st)) k = store_count(st);
  ann_res *res = mc.err ? NULL : sqlite3_malloc64(k * sizeof *res + 1);
  int rc = res ? store_knn(st, q, k, &flt, o, res, nout) : STORE_ENOMEM;
  sqlite3_free(bits);
  if (mc.err) {
    sqlite3_free(res);
    *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
    return SQLITE_CORRUPT;
  }
  if (rc) {
    sqlite3_free(res);
    if (rc == STORE_ENOMEM) return SQLITE_NOMEM;
    *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
    return SQLITE_ERROR;
  }
  *out = res;
  return SQLITE_OK;
}

/* The query vector: a float32 BLOB (float16 with vec_f16's subtype) or
** JSON; its length must be the store's dim. */
int knn_query(store *st, sqlite3_value *v, float **out, char **pzErr) {
  *out = NULL;
  int dim = store_dim(st);
  float *f = sqlite3_malloc64((sqlite3_uint64)dim * 4);
  if (!f) return SQLITE_NOMEM;
  int t = sqlite3_value_type(v);
  if (t == SQLITE_BLOB) {
    int f16 = sqlite3_value_subtype(v) == EXT_SUBTYPE_F16;
    size_t len = (size_t)sqlite3_value_bytes(v), want = (size_t)dim * (f16 ? 2 : 4);
    if (len != want) {
      *pzErr = sqlite3_mprintf("the query is a %s BLOB of %llu values; the store has dim=%d",
                               f16 ? "float16" : "float32", (unsigned long long)(len / (f16 ? 2 : 4)), dim);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    if (f16) {
      uint16_t *h = sqlite3_malloc64(want);
      if (!h) {
        sqlite3_free(f);
        return SQLITE_NOMEM;
      }
      memcpy(h, sqlite3_value_blob(v), want);
      k_get()->f16_to_f32(h, f, (size_t)dim);
      sqlite3_free(h);
    } else {
      memcpy(f, sqlite3_value_blob(v), want);
    }
  } else if (t == SQLITE_TEXT) {
    float *p = NULL;
    size_t n = 0;
    char err[256];
    if (util_json_to_f32((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &p, &n, err,
                         sizeof err)) {
      *pzErr = sqlite3_mprintf("the query: malformed JSON vector: %s", err);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    if (n != (size_t)dim) {
      *pzErr = sqlite3_mprintf("the query has %llu values; the store has dim=%d", (unsigned long long)n, dim);
      free(p);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    memcpy(f, p, (size_t)dim * 4);
    free(p);
  } else {
    *pzErr = sqlite3_mprintf("the query must be a float32 BLOB or a JSON array of %d numbers, not %s", dim,
                             t == SQLITE_NULL ? "NULL" : "a number");
    sqlite3_free(f);
    return SQLITE_ERROR;
  }
  for (int i = 0; i < dim; i++)
    if (!isfinite(f[i])) {
      *pzErr = sqlite3_mprintf("the query's element %d is %s", i, isnan(f[i]) ? "NaN" : "infinite");
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
  *out = f;
  return SQLITE_OK;
}

/* Distances as reported: L2 as the Euclidean distance (sqlite-vec's), not
** its square; the score: cosine similarity, dot product, or 1/(1+L2). */
double knn_distance(const store *st, float d) {
  return store_metric(st) == STORE_L2 ? sqrt((double)d) : (double)d;
}

double knn_score(const store *st, float d) {
  switch (store_metric(st)) {
  case STORE_L2: return 1.0 / (1.0 + sqrt((double)d));
  case STORE_DOT: return -(double)d;
  default: return 1.0 - (double)d;
  }
}

/* Plan the constraints a KNN can apply before ranking: columns map a
** column number to KNN_F_* (or -1); tokens go to plan (2 chars each:
** field, op) in argv order starting at *argi. */
void knn_plan(sqlite3_index_info *info, const int *colfield, int ncols, char *plan, size_t cap,
              int *argi, int *used) {
  size_t n = strlen(plan);
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    if (!k->usable || info->aConstraintUsage[c].argvIndex) continue;
    int field = k->iColumn >= 0 && k->iColumn < ncols ? colfield[k->iColumn] : -1;
    if (k->iColumn == -1) field = KNN_F_ID;
    if (field < 0) continue;
    int op = -1;
    switch (k->op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: op = KNN_OP_EQ; break;
    case SQLITE_INDEX_CONSTRAINT_GT: op = KNN_OP_GT; break;
    case SQLITE_INDEX_CONSTRAINT_GE: op = KNN_OP_GE; break;
    case SQLITE_INDEX_CONSTRAINT_LT: op = KNN_OP_LT; break;
    case SQLITE_INDEX_CONSTRAINT_LE: op = KNN_OP_LE; break;
    }
    if (op < 0 || (field != KNN_F_TS && op != KNN_OP_EQ)) continue;
    if (field == KNN_F_ID && op == KNN_OP_EQ && sqlite3_libversion_number() >= 3038000 &&
        sqlite3_vtab_in(info, c, -1)) {
      sqlite3_vtab_in(info, c, 1); /* the whole IN list at once */
      op = KNN_OP_IN;
    } else if (field == KNN_F_ID && op == KNN_OP_EQ && sqlite3_libversion_number() < 3038000) {
      continue; /* an IN would run the search once per value */
    }
    if (n + 2 >= cap) break;
    plan[n++] = (char)('0' + field);
    plan[n++] = (char)('0' + op);
    plan[n] = 0;
    info->aConstraintUsage[c].argvIndex = ++*argi;
    info->aConstraintUsage[c].omit = 1;
    (*used)++;
  }
}

/* ---- vec_search ------------------------------------------------------------ */

enum {
  VS_ID, VS_DISTANCE, VS_SCORE, VS_TEXT, VS_SOURCE, VS_SESSION, VS_TS, VS_TIER,
  VS_STORE, VS_QUERY, VS_K, VS_OPTIONS, VS_NCOL
};
static const int vs_field[VS_NCOL] = {KNN_F_ID, -1, -1, -1, KNN_F_SOURCE, KNN_F_SESSION, KNN_F_TS,
                                      KNN_F_TIER, -1, -1, -1, -1};

typedef struct vsvt {
  sqlite3_vtab base;
  sqlite3 *db;
  registry *reg;
} vsvt;

typedef struct vscur {
  sqlite3_vtab_cursor base;
  memvt *mt;
  store *st;
  ann_res *res;
  uint64_t n, i;
  store_view v;
  int have_v;
} vscur;

static int vs_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                      char **pzErr) {
  (void)argc;
  (void)argv;
  (void)pzErr;
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(id INTEGER, distance REAL, score REAL, text TEXT, "
                                    "source TEXT, session TEXT, ts INTEGER, tier TEXT, store HIDDEN, "
                                    "query HIDDEN, k HIDDEN, options HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  vsvt *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  vt->db = db;
  vt->reg = aux;
  *out = &vt->base;
  return SQLITE_OK;
}

static int vs_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* idxStr: one token per argument: 'S','Q','K','O' for the hidden ones, then
** the filter tokens of knn_plan. */
static int vs_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  (void)base;
  int need[4] = {-1, -1, -1, -1};
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    if (k->iColumn >= VS_STORE && k->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (!k->usable) return SQLITE_CONSTRAINT;
      need[k->iColumn - VS_STORE] = c;
    }
  }
  if (need[0] < 0 || need[1] < 0) return SQLITE_CONSTRAINT; /* store and query are required */
  char *plan = sqlite3_malloc(256);
  if (!plan) return SQLITE_NOMEM;
  int argi = 0, used = 0;
  size_t n = 0;
  static const char tok[4] = {'S', 'Q', 'K', 'O'};
  for (int j = 0; j < 4; j++) {
    if (need[j] < 0) continue;
    plan[n++] = tok[j];
    info->aConstraintUsage[need[j]].argvIndex = ++argi;
    info->aConstraintUsage[need[j]].omit = 1;
  }
  plan[n] = 0;
  knn_plan(info, vs_field, VS_NCOL, plan, 256, &argi, &used);
  info->idxStr = plan;
  info->needToFreeIdxStr = 1;
  info->estimatedCost = 1000.0 / (1 + used);
  info->estimatedRows = 10;
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == VS_DISTANCE && !info->aOrderBy[0].desc)
    info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int vs_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  (void)base;
  vscur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void vs_reset(vscur *c) {
  sqlite3_free(c->res);
  c->res = NULL;
  c->n = c->i = 0;
  if (c->mt) h5mem_table_hold(c->mt, -1);
  c->mt = NULL;
  c->st = NULL;
}

static int vs_close(sqlite3_vtab_cursor *cur) {
  vs_reset((vscur *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

static int vs_error(sqlite3_vtab *vt, int rc, char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = msg ? sqlite3_mprintf("%s: %s", WHO, msg) : NULL;
  sqlite3_free(msg);
  return msg || rc == SQLITE_NOMEM ? rc : SQLITE_NOMEM;
}

/* Options as JSON: {"exact": bool, "ef": n, "nprobe": n, "index": "flat"|"hnsw"|"ivf"}
** ("index": "flat" is "exact": true; the others, the store's index). */
static int vs_options(sqlite3 *db, sqlite3_value *v, store_knn_opts *o, char **err) {
  memset(o, 0, sizeof *o);
  if (!v || sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  const char *t = (const char *)sqlite3_value_text(v);
  while (t && (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')) t++;
  if (!t || *t != '{') {
    *err = sqlite3_mprintf("options: expected a JSON object, e.g. '{\"exact\": true}'");
    return SQLITE_ERROR;
  }
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "SELECT key, type, value FROM json_each(?1)", -1, &st, NULL);
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("options need SQLite's JSON functions: %s", sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_bind_value(st, 1, v);
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(st, 0);
    const char *type = (const char *)sqlite3_column_text(st, 1);
    if (!key || !type) continue;
    const char *val = (const char *)sqlite3_column_text(st, 2);
    int ok = 0;
    if (!strcmp(key, "exact")) {
      ok = !strcmp(type, "true") || !strcmp(type, "false");
      if (!strcmp(type, "true")) o->exact = 1;
    } else if (!strcmp(key, "ef")) {
      sqlite3_int64 n = sqlite3_column_int64(st, 2);
      ok = !strcmp(type, "integer") && n > 0 && n <= 100000;
      o->ef = (int)n;
    } else if (!strcmp(key, "nprobe")) {
      sqlite3_int64 n = sqlite3_column_int64(st, 2);
      ok = !strcmp(type, "integer") && n > 0 && n <= (1 << 24);
      o->nprobe = (int)n;
    } else if (!strcmp(key, "index")) {
      ok = !strcmp(type, "text") && val &&
           (!strcmp(val, "flat") || !strcmp(val, "hnsw") || !strcmp(val, "ivf"));
      if (ok && !strcmp(val, "flat")) o->exact = 1;
    }
    if (!ok) {
      *err = sqlite3_mprintf("options: %s%s%s (known: exact true/false, ef an integer 1..100000, "
                             "nprobe an integer 1..16777216, index 'flat', 'hnsw' or 'ivf')",
                             strcmp(key, "exact") && strcmp(key, "ef") && strcmp(key, "nprobe") &&
                             strcmp(key, "index") ? "unknown option '" : "bad value for '",
                             key, "'");
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

static int vs_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxNum;
  vscur *c = (vscur *)cur;
  vsvt *vt = (vsvt *)cur->pVtab;
  vs_reset(c);
  sqlite3_value *store_v = NULL, *query_v = NULL, *k_v = NULL, *opt_v = NULL;
  knn_filter f;
  memset(&f, 0, sizeof f);
  int a = 0, rc = SQLITE_OK;
  const char *p = idxStr ? idxStr : "";
  for (; *p && a < argc && rc == SQLITE_OK; a++) {
    switch (*p) {
    case 'S': store_v = argv[a]; p++; break;
    case 'Q': query_v = argv[a]; p++; break;
    case 'K': k_v = argv[a]; p++; break;
    case 'O': opt_v = argv[a]; p++; break;
    default:
      if (!p[1]) break;
      rc = knn_filter_add(&f, p[0] - '0', p[1] - '0', argv[a]);
      p += 2;
    }
  }
  if (rc != SQLITE_OK) {
    knn_filter_free(&f);
    return rc;
  }
  const char *name = store_v ? (const char *)sqlite3_value_text(store_v) : NULL;
  char *err = NULL;
  if (!name) {
    knn_filter_free(&f);
    return vs_error(&vt->base, SQLITE_ERROR, sqlite3_mprintf("the first argument names an h5mem table"));
  }
  int64_t k = 10;
  if (k_v && sqlite3_value_type(k_v) != SQLITE_NULL) {
    if (sqlite3_value_numeric_type(k_v) != SQLITE_INTEGER || sqlite3_value_int64(k_v) < 0) {
      knn_filter_free(&f);
      return vs_error(&vt->base, SQLITE_ERROR, sqlite3_mprintf("k must be an integer >= 0"));
    }
    k = sqlite3_value_int64(k_v);
  }
  store_knn_opts ko;
  if ((rc = vs_options(vt->db, opt_v, &ko, &err)) != SQLITE_OK) {
    knn_filter_free(&f);
    return vs_error(&vt->base, rc, err);
  }
  memvt *mt = h5mem_table(vt->reg, vt->db, name, &err);
  if (!mt) {
    knn_filter_free(&f);
    return vs_error(&vt->base, SQLITE_ERROR, err);
  }
  store *st = h5mem_table_store(mt);
  float *q = NULL;
  if ((rc = knn_query(st, query_v, &q, &err)) != SQLITE_OK) {
    knn_filter_free(&f);
    return vs_error(&vt->base, rc, err);
  }
  rc = knn_run(st, q, (uint64_t)k, &f, &ko, &c->res, &c->n, &err);
  sqlite3_free(q);
  knn_filter_free(&f);
  if (rc != SQLITE_OK) return vs_error(&vt->base, rc, err);
  c->mt = mt;
  c->st = st;
  h5mem_table_hold(mt, +1);
  c->have_v = 0;
  return SQLITE_OK;
}

static int vs_next(sqlite3_vtab_cursor *cur) {
  vscur *c = (vscur *)cur;
  c->i++;
  c->have_v = 0;
  return SQLITE_OK;
}

static int vs_eof(sqlite3_vtab_cursor *cur) {
  vscur *c = (vscur *)cur;
  return c->i >= c->n;
}

static int vs_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((vscur *)cur)->i;
  return SQLITE_OK;
}

static int vs_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  vscur *c = (vscur *)cur;
  const ann_res *r = &c->res[c->i];
  if (col == VS_DISTANCE) {
    sqlite3_result_double(ctx, knn_distance(c->st, r->dist));
    return SQLITE_OK;
  }
  if (col == VS_SCORE) {
    sqlite3_result_double(ctx, knn_score(c->st, r->dist));
    return SQLITE_OK;
  }
  if (col >= VS_STORE) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (!c->have_v) {
    memset(&c->v, 0, sizeof c->v);
    c->have_v = 1;
  }
  unsigned want = col == VS_TEXT ? STORE_V_TEXT : col == VS_SOURCE ? STORE_V_SOURCE
                  : col == VS_SESSION ? STORE_V_SESSION : col == VS_TIER ? STORE_V_TIER
                  : col == VS_TS ? STORE_V_NUM : 0;
  if (store_get(c->st, r->pos, want, &c->v) != STORE_OK) {
    sqlite3_result_error(ctx, store_errmsg(c->st), -1);
    return SQLITE_ERROR;
  }
  switch (col) {
  case VS_ID: sqlite3_result_int64(ctx, c->v.id); break;
  case VS_TEXT: h5mem_result_text(ctx, c->v.text, c->v.text_len); break;
  case VS_SOURCE: h5mem_result_text(ctx, c->v.source, c->v.source_len); break;
  case VS_SESSION: h5mem_result_text(ctx, c->v.session, c->v.session_len); break;
  case VS_TIER: h5mem_result_text(ctx, c->v.tier, c->v.tier_len); break;
  case VS_TS: sqlite3_result_int64(ctx, c->v.ts); break;
  }
  return SQLITE_OK;
}

static sqlite3_module vs_module = {
    .iVersion = 1,
    .xConnect = vs_connect,
    .xBestIndex = vs_best_index,
    .xDisconnect = vs_disconnect,
    .xOpen = vs_open,
    .xClose = vs_close,
    .xFilter = vs_filter,
    .xNext = vs_next,
    .xEof = vs_eof,
    .xColumn = vs_column,
    .xRowid = vs_rowid,
};

int ext_vtab_search_register(sqlite3 *db, registry *reg, void (*reg_unref)(void *)) {
  return sqlite3_create_module_v2(db, "vec_search", &vs_module, reg, reg_unref);
}
