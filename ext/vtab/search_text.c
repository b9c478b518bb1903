/*
** ext/vtab/search_text.c - keyword and hybrid retrieval over an h5mem
** store, the run functions of the bm25 and hybrid table-valued functions
** (vtab_search.c holds the module they share with vec_search):
**
**   SELECT * FROM bm25('mem', 'tokenizer speed', 10) WHERE source = 'user';
**   SELECT * FROM hybrid('mem', 'tokenizer speed', :qvec, 10 [, options]);
**
** bm25: store_bm25 (FTS5's bm25() with the sign turned: higher is better).
**
** hybrid: the vector side's `candidates` nearest allowed records and the
** keyword side's `keyword_candidates` best allowed matches; every record of
** the union gets both scores exactly (its vector score computed when the
** vector side did not return it; its keyword score 0 when no term
** matches).  Fusion: "weighted" (default) min-max normalises each score
** over the union and adds them with the weights (vector 0.4, keyword 0.6;
** BENCHMARKS.md, "Keyword search", measures them); "rrf" adds 1 / (rrf_k + rank) of the record's rank in
** each list (the union by vector score; the keyword matches by BM25).
** Then, optionally, re-ranking by relevance, recency, source authority and
** activation, and the confidence rule (no row at all when no keyword
** matched and the best vector score is below `reject_below`).  Nothing is
** written: recording an access is an UPDATE of access_count and
** last_access by the caller.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../ext_err.h"
#include "h5mem_int.h"
#include "search_int.h"

/* ---- bm25 --------------------------------------------------------------- */

static int no_option(void *ctx, const char *key, sqlite3_stmt *row, char **err) {
  (void)ctx;
  (void)key;
  (void)row;
  (void)err;
  return SEARCH_UNKNOWN;
}

/* The query text of a (NULL: none). */
static int query_text(sqlite3_value *v, const char **t, size_t *n, char **pzErr) {
  *t = NULL;
  *n = 0;
  if (!v || sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    *pzErr = sqlite3_mprintf("the query text must be TEXT");
    return SQLITE_ERROR;
  }
  *t = (const char *)sqlite3_value_text(v);
  if (!*t) return SQLITE_NOMEM;
  *n = (size_t)sqlite3_value_bytes(v);
  return SQLITE_OK;
}

static int store_rc(store *st, int src, char **pzErr) {
  if (src == STORE_OK) return SQLITE_OK;
  if (src == STORE_ENOMEM) return SQLITE_NOMEM;
  *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
  return ext_err_rc(src);
}

/* The k best keyword matches (all when k is 0 or more) allowed by al. */
static int keyword_hits(store *st, const char *t, size_t n, uint64_t k, const knn_allow *al,
                        store_hit **out, uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (!t || al->none || !k || !store_count(st)) return SQLITE_OK;
  if (k > store_count(st)) k = store_count(st);
  store_hit *h = sqlite3_malloc64(k * sizeof *h);
  if (!h) return SQLITE_NOMEM;
  int rc = store_rc(st, store_bm25(st, t, n, k, &al->flt, h, nout), pzErr);
  if (rc == SQLITE_OK) rc = knn_allow_check(al, st, pzErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(h);
    *nout = 0;
    return rc;
  }
  *out = h;
  return SQLITE_OK;
}

int bm25_run(sqlite3 *db, store *st, const search_args *a, const knn_filter *f, srow **out,
             uint64_t *nout, char **pzErr) {
  int rc = search_options(db, a->options, "none yet", no_option, NULL, pzErr);
  const char *t;
  size_t n;
  if (rc == SQLITE_OK) rc = query_text(a->qtext, &t, &n, pzErr);
  if (rc != SQLITE_OK) return rc;
  knn_allow al;
  if ((rc = knn_allow_init(st, f, &al, pzErr)) != SQLITE_OK) return rc;
  store_hit *h = NULL;
  uint64_t m = 0;
  rc = keyword_hits(st, t, n, (uint64_t)a->k, &al, &h, &m, pzErr);
  knn_allow_free(&al);
  if (rc != SQLITE_OK) return rc;
  srow *r = srow_alloc(m);
  if (!r) {
    sqlite3_free(h);
    return SQLITE_NOMEM;
  }
  for (uint64_t i = 0; i < m; i++) {
    r[i].pos = h[i].pos;
    r[i].v[0] = h[i].score;
  }
  sqlite3_free(h);
  *out = r;
  *nout = m;
  return SQLITE_OK;
}

/* ---- hybrid ------------------------------------------------------------- */

typedef struct hopts {
  store_knn_opts knn;
  int rrf;
  double wv, wk;
  double rrf_k;
  int64_t cand, kcand; /* 0: the default */
  double reject_below;
  int reject;
  /* re-ranking */
  int rerank;
  double w_rel, w_rec, w_auth, w_act;
  double half_life; /* seconds */
  int64_t now;
  int has_now;
  double auth_default;
  sqlite3_value *sources; /* a JSON object: source -> authority in [0, 1] */
  sqlite3 *db;
} hopts;

#define HYBRID_KNOWN "fusion 'weighted' or 'rrf', vector_weight, keyword_weight, rrf_k, " \
  "candidates, keyword_candidates, reject_below, rerank (an object), and the vector search's " \
  "exact, ef, nprobe, index"
#define RERANK_KNOWN "relevance, recency, authority, activation (weights >= 0), half_life_days, " \
  "now (unix seconds), sources (an object: source -> authority 0..1), default_authority"

int search_option_num(sqlite3_stmt *row, double lo, double hi, double *out, char **err) {
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

/* A source's authority in rerank's sources: a number in 0 .. 1. */
static int source_option(void *ctx, const char *key, sqlite3_stmt *row, char **err) {
  (void)ctx;
  (void)key;
  double d;
  return search_option_num(row, 0, 1, &d, err);
}

static int rerank_option(void *ctx, const char *key, sqlite3_stmt *row, char **err) {
  hopts *o = ctx;
  double d;
  if (!strcmp(key, "relevance")) return search_option_num(row, 0, 1e9, &o->w_rel, err);
  if (!strcmp(key, "recency")) return search_option_num(row, 0, 1e9, &o->w_rec, err);
  if (!strcmp(key, "authority")) return search_option_num(row, 0, 1e9, &o->w_auth, err);
  if (!strcmp(key, "activation")) return search_option_num(row, 0, 1e9, &o->w_act, err);
  if (!strcmp(key, "default_authority")) return search_option_num(row, 0, 1, &o->auth_default, err);
  if (!strcmp(key, "half_life_days")) {
    int rc = search_option_num(row, 1e-9, 1e9, &d, err);
    o->half_life = d * 86400.0;
    return rc;
  }
  if (!strcmp(key, "now")) {
    int rc = search_option_num(row, -9e18, 9e18, &d, err);
    o->now = (int64_t)d;
    o->has_now = 1;
    return rc;
  }
  if (!strcmp(key, "sources")) {
    const char *type = (const char *)sqlite3_column_text(row, 1);
    if (!type || strcmp(type, "object")) {
      *err = sqlite3_mprintf("expected an object, e.g. {\"user\": 1.0, \"web\": 0.3}");
      return SQLITE_ERROR;
    }
    /* each source once, its authority in 0 .. 1 (not clamped silently) */
    int rc = search_options(o->db, sqlite3_column_value(row, 2), "any source", source_option, NULL, err);
    if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_ERROR;
    o->sources = sqlite3_value_dup(sqlite3_column_value(row, 2));
    if (!o->sources) return SQLITE_NOMEM;
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

static int hybrid_option(void *ctx, const char *key, sqlite3_stmt *row, char **err) {
  hopts *o = ctx;
  const char *type = (const char *)sqlite3_column_text(row, 1);
  const char *val = (const char *)sqlite3_column_text(row, 2);
  double d;
  int rc;
  if (!strcmp(key, "fusion")) {
    if (!type || strcmp(type, "text") || !val || (strcmp(val, "weighted") && strcmp(val, "rrf"))) {
      *err = sqlite3_mprintf("expected 'weighted' or 'rrf'");
      return SQLITE_ERROR;
    }
    o->rrf = !strcmp(val, "rrf");
    return SQLITE_OK;
  }
  if (!strcmp(key, "vector_weight")) return search_option_num(row, 0, 1e9, &o->wv, err);
  if (!strcmp(key, "keyword_weight")) return search_option_num(row, 0, 1e9, &o->wk, err);
  if (!strcmp(key, "rrf_k")) return search_option_num(row, 0, 1e9, &o->rrf_k, err);
  if (!strcmp(key, "reject_below")) {
    o->reject = 1;
    return search_option_num(row, -1e300, 1e300, &o->reject_below, err);
  }
  if (!strcmp(key, "candidates") || !strcmp(key, "keyword_candidates")) {
    if (!type || strcmp(type, "integer") || sqlite3_column_int64(row, 2) < 1) {
      *err = sqlite3_mprintf("expected an integer >= 1");
      return SQLITE_ERROR;
    }
    *(key[0] == 'c' ? &o->cand : &o->kcand) = sqlite3_column_int64(row, 2);
    return SQLITE_OK;
  }
  if (!strcmp(key, "rerank")) {
    if (!type || strcmp(type, "object")) {
      *err = sqlite3_mprintf("expected an object (known: " RERANK_KNOWN ")");
      return SQLITE_ERROR;
    }
    o->rerank = 1;
    rc = search_options(o->db, sqlite3_column_value(row, 2), RERANK_KNOWN, rerank_option, o, err);
    if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_ERROR;
    return SQLITE_OK;
  }
  (void)d;
  return knn_option(&o->knn, key, row, err);
}

/* A record of the union. */
typedef struct hrec {
  uint64_t pos;
  int64_t id;
  double vs, ks;  /* vector score (similarity), BM25 (0: no match) */
  int has_v, has_k;
  double score;
} hrec;

static int by_pos(const void *a, const void *b) {
  const hrec *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_vs(const void *a, const void *b) { /* best first, ties by id */
  const hrec *x = *(const hrec *const *)a, *y = *(const hrec *const *)b;
  if (x->vs != y->vs) return x->vs > y->vs ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int by_ks(const void *a, const void *b) {
  const hrec *x = *(const hrec *const *)a, *y = *(const hrec *const *)b;
  if (x->ks != y->ks) return x->ks > y->ks ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int by_score(const void *a, const void *b) {
  const hrec *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

/* The authority of a source: o->sources[source], else the default. */
static double authority(hopts *o, const char *src, size_t n, sqlite3_stmt *lookup) {
  if (!o->sources || !src) return o->auth_default;
  sqlite3_reset(lookup);
  sqlite3_bind_text64(lookup, 2, src, n, SQLITE_STATIC, SQLITE_UTF8);
  double a = o->auth_default;
  if (sqlite3_step(lookup) == SQLITE_ROW && sqlite3_column_type(lookup, 0) != SQLITE_NULL) {
    a = sqlite3_column_double(lookup, 0);
    if (!(a >= 0)) a = 0;
    if (a > 1) a = 1;
  }
  return a;
}

/* Re-rank u[0..n) in place: score = relevance (score / the best score) x
** w_rel + recency x w_rec + authority x w_auth + activation x w_act, where
** recency = 0.5^(age / half life), and activation = ln(1 + access_count) x
** 0.5^(time since last_access / half life) over the union's largest. */
static int rerank(sqlite3 *db, store *st, hopts *o, hrec *u, uint64_t n, char **pzErr) {
  double best = 0;
  for (uint64_t i = 0; i < n; i++)
    if (u[i].score > best) best = u[i].score;
  sqlite3_stmt *lookup = NULL;
  if (o->sources) {
    int rc = sqlite3_prepare_v2(db, "SELECT json_extract(?1, '$.\"' || replace(?2, '\"', '') || '\"')",
                                -1, &lookup, NULL);
    if (rc != SQLITE_OK) {
      *pzErr = sqlite3_mprintf("rerank: %s", sqlite3_errmsg(db));
      return rc;
    }
    sqlite3_bind_value(lookup, 1, o->sources);
  }
  store_view *v = sqlite3_malloc64(n * sizeof *v + 1);
  if (!v) {
    sqlite3_finalize(lookup);
    return SQLITE_NOMEM;
  }
  double *raw = sqlite3_malloc64(n * sizeof *raw + 1);
  double maxact = 0;
  for (uint64_t i = 0; raw && i < n; i++) {
    memset(&v[i], 0, sizeof v[i]);
    if (store_get(st, u[i].pos, STORE_V_NUM, &v[i]) != STORE_OK) {
      sqlite3_free(v);
      sqlite3_free(raw);
      sqlite3_finalize(lookup);
      *pzErr = sqlite3_mprintf("%s", store_errmsg(st));
      return SQLITE_CORRUPT;
    }
    /* activation: uses, fading with the time since the last one */
    double uses = v[i].access_count > 0 ? log1p((double)v[i].access_count) : 0;
    double idle = v[i].last_access == STORE_NULL_TIME ? 0 : (double)(o->now - v[i].last_access);
    raw[i] = uses * (idle <= 0 ? 1.0 : pow(0.5, idle / o->half_life));
    if (raw[i] > maxact) maxact = raw[i];
  }
  if (!raw) {
    sqlite3_free(v);
    sqlite3_finalize(lookup);
    return SQLITE_NOMEM;
  }
  for (uint64_t i = 0; i < n; i++) {
    double rel = best > 0 ? u[i].score / best : 0;
    double age = (double)(o->now - v[i].ts);
    double rec = age <= 0 ? 1.0 : pow(0.5, age / o->half_life);
    double act = maxact > 0 ? raw[i] / maxact : 0;
    double auth = o->auth_default;
    if (o->w_auth > 0 && o->sources) {
      store_view sv;
      memset(&sv, 0, sizeof sv);
      if (store_get(st, u[i].pos, STORE_V_SOURCE, &sv) == STORE_OK)
        auth = authority(o, sv.source, sv.source_len, lookup);
    }
    u[i].score = o->w_rel * rel + o->w_rec * rec + o->w_auth * auth + o->w_act * act;
  }
  sqlite3_free(raw);
  sqlite3_free(v);
  sqlite3_finalize(lookup);
  return SQLITE_OK;
}

int hybrid_run(sqlite3 *db, store *st, const search_args *a, const knn_filter *f, srow **out,
               uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  hopts o;
  memset(&o, 0, sizeof o);
  o.db = db;
  o.wv = 0.4;
  o.wk = 0.6;
  o.rrf_k = 60;
  o.w_rel = 1.0;
  o.w_rec = 0.2;
  o.w_auth = 0.1;
  o.w_act = 0.1;
  o.half_life = 30 * 86400.0;
  o.auth_default = 0.5;
  int rc = search_options(db, a->options, HYBRID_KNOWN, hybrid_option, &o, pzErr);
  if (rc == SQLITE_OK && !o.rrf && !(o.wv + o.wk > 0)) {
    *pzErr = sqlite3_mprintf("options: vector_weight + keyword_weight must be > 0");
    rc = SQLITE_ERROR;
  }
  const char *t = NULL;
  size_t tn = 0;
  if (rc == SQLITE_OK) rc = query_text(a->qtext, &t, &tn, pzErr);
  float *q = NULL;
  double unit = 1.0;
  if (rc == SQLITE_OK && a->query && sqlite3_value_type(a->query) != SQLITE_NULL)
    rc = knn_query(st, a->query, &q, &unit, pzErr);
  if (rc == SQLITE_OK && !t && !q) {
    *pzErr = sqlite3_mprintf("give a query text, a query vector, or both");
    rc = SQLITE_ERROR;
  }
  if (rc != SQLITE_OK || a->k == 0 || f->empty || !store_count(st)) {
    sqlite3_free(q);
    sqlite3_value_free(o.sources);
    return rc;
  }
  if (!o.has_now) o.now = (int64_t)time(NULL);
  uint64_t k = (uint64_t)a->k, pool = k * 10 > 100 ? k * 10 : 100;
  uint64_t nv = o.cand ? (uint64_t)o.cand : pool, nk = o.kcand ? (uint64_t)o.kcand : pool;
  if (nv < k) nv = k;
  if (nk < k) nk = k;
  uint64_t live = store_count(st);
  if (nv > live) nv = live;
  knn_allow al;
  if ((rc = knn_allow_init(st, f, &al, pzErr)) != SQLITE_OK) {
    sqlite3_free(q);
    sqlite3_value_free(o.sources);
    return rc;
  }
  ann_res *vr = NULL;
  store_hit *kh = NULL;
  hrec *u = NULL;
  uint64_t nvr = 0, nkh = 0, nu = 0;
  uint8_t *bits = NULL;
  if (!al.none && q) { /* the vector side */
    vr = sqlite3_malloc64(nv * sizeof *vr + 1);
    rc = vr ? store_rc(st, store_knn(st, q, nv, &al.flt, &o.knn, vr, &nvr), pzErr) : SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = knn_allow_check(&al, st, pzErr);
    if (rc == SQLITE_OK) rc = knn_check(st, vr, nvr, pzErr);
  }
  if (rc == SQLITE_OK && !al.none && t) /* the keyword side */
    rc = keyword_hits(st, t, tn, nk, &al, &kh, &nkh, pzErr);
  knn_allow_free(&al);
  if (rc == SQLITE_OK) {
    u = sqlite3_malloc64((nvr + nkh) * sizeof *u + 1);
    if (!u) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) { /* the union, by position */
    for (uint64_t i = 0; i < nvr; i++)
      u[nu++] = (hrec){vr[i].pos, 0, knn_score(st, vr[i].dist, unit), 0, 1, 0, 0};
    for (uint64_t i = 0; i < nkh; i++) u[nu++] = (hrec){kh[i].pos, 0, 0, kh[i].score, 0, 1, 0};
    qsort(u, nu, sizeof *u, by_pos);
    uint64_t m = 0;
    for (uint64_t i = 0; i < nu; i++) {
      if (m && u[m - 1].pos == u[i].pos) {
        if (u[i].has_v) u[m - 1].vs = u[i].vs, u[m - 1].has_v = 1;
        if (u[i].has_k) u[m - 1].ks = u[i].ks, u[m - 1].has_k = 1;
      } else {
        u[m++] = u[i];
      }
    }
    nu = m;
    for (uint64_t i = 0; i < nu; i++) u[i].id = store_pos_id(st, u[i].pos);
  }
  /* keyword matches the vector side did not return: their vector scores */
  uint64_t nmiss = 0;
  for (uint64_t i = 0; rc == SQLITE_OK && q && i < nu; i++) nmiss += !u[i].has_v;
  if (rc == SQLITE_OK && nmiss) {
    uint64_t npos = store_npos(st);
    bits = sqlite3_malloc64(npos / 8 + 1);
    ann_res *mr = bits ? sqlite3_malloc64(nmiss * sizeof *mr) : NULL;
    if (!mr) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) {
      memset(bits, 0, npos / 8 + 1);
      for (uint64_t i = 0; i < nu; i++)
        if (!u[i].has_v) bits[u[i].pos / 8] |= (uint8_t)(1u << (u[i].pos % 8));
      store_filter mf = {bits, nmiss, NULL, NULL, NULL};
      store_knn_opts ex;
      memset(&ex, 0, sizeof ex);
      ex.exact = 1;
      uint64_t got = 0;
      rc = store_rc(st, store_knn(st, q, nmiss, &mf, &ex, mr, &got), pzErr);
      if (rc == SQLITE_OK) rc = knn_check(st, mr, got, pzErr);
      /* (mr is by distance: find each in the union, which is by position) */
      for (uint64_t j = 0; rc == SQLITE_OK && j < got; j++) {
        hrec key = {mr[j].pos, 0, 0, 0, 0, 0, 0};
        hrec *e = bsearch(&key, u, nu, sizeof *u, by_pos);
        if (e) {
          e->vs = knn_score(st, mr[j].dist, unit);
          e->has_v = 1;
        }
      }
    }
    sqlite3_free(mr);
  }
  /* the confidence rule */
  if (rc == SQLITE_OK && o.reject) {
    int any_k = 0;
    double best_v = -INFINITY;
    for (uint64_t i = 0; i < nu; i++) {
      any_k |= u[i].has_k;
      if (u[i].has_v && u[i].vs > best_v) best_v = u[i].vs;
    }
    if (!any_k && !(best_v >= o.reject_below)) nu = 0;
  }
  /* fusion */
  if (rc == SQLITE_OK && nu) {
    if (!o.rrf) {
      double vmin = INFINITY, vmax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
      for (uint64_t i = 0; i < nu; i++) {
        if (u[i].has_v) {
          if (u[i].vs < vmin) vmin = u[i].vs;
          if (u[i].vs > vmax) vmax = u[i].vs;
        }
        if (u[i].ks < kmin) kmin = u[i].ks;
        if (u[i].ks > kmax) kmax = u[i].ks;
      }
      for (uint64_t i = 0; i < nu; i++) {
        double vn = !u[i].has_v ? 0 : vmax > vmin ? (u[i].vs - vmin) / (vmax - vmin) : 1.0;
        double kn = kmax > kmin ? (u[i].ks - kmin) / (kmax - kmin) : kmax > 0 ? 1.0 : 0.0;
        u[i].score = o.wv * vn + o.wk * kn;
      }
    } else {
      hrec **ord = sqlite3_malloc64(nu * sizeof *ord);
      if (!ord) {
        rc = SQLITE_NOMEM;
      } else {
        uint64_t m = 0;
        for (uint64_t i = 0; i < nu; i++)
          if (u[i].has_v) ord[m++] = &u[i];
        qsort(ord, m, sizeof *ord, by_vs);
        for (uint64_t r = 0; r < m; r++) ord[r]->score += 1.0 / (o.rrf_k + (double)(r + 1));
        m = 0;
        for (uint64_t i = 0; i < nu; i++)
          if (u[i].has_k) ord[m++] = &u[i];
        qsort(ord, m, sizeof *ord, by_ks);
        for (uint64_t r = 0; r < m; r++) ord[r]->score += 1.0 / (o.rrf_k + (double)(r + 1));
        sqlite3_free(ord);
      }
    }
    if (rc == SQLITE_OK && o.rerank) rc = rerank(db, st, &o, u, nu, pzErr);
  }
  srow *r = NULL;
  if (rc == SQLITE_OK) {
    qsort(u, nu, sizeof *u, by_score);
    if (nu > k) nu = k;
    r = srow_alloc(nu);
    if (!r) rc = SQLITE_NOMEM;
    for (uint64_t i = 0; r && i < nu; i++) {
      r[i].pos = u[i].pos;
      r[i].v[0] = u[i].score;
      r[i].v[1] = u[i].vs;
      r[i].v[2] = u[i].ks;
      r[i].null = (uint8_t)(!u[i].has_v ? 2 : 0) | (uint8_t)(!t ? 4 : 0);
    }
  }
  sqlite3_free(q);
  sqlite3_free(vr);
  sqlite3_free(kh);
  sqlite3_free(u);
  sqlite3_free(bits);
  sqlite3_value_free(o.sources);
  if (rc != SQLITE_OK) {
    sqlite3_free(r);
    return rc;
  }
  *out = r;
  *nout = nu;
  return SQLITE_OK;
}
