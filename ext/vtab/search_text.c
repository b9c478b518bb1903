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
** matches).  The fusion ("weighted" or "rrf"), the optional re-ranking by
** relevance, recency, source authority and activation, and the confidence
** rule are lib/text/hybrid.c's; this file parses the options, runs the two
** searches, and reads from the store what re-ranking needs (the access
** values before this search's touch, which vtab_search.c records after
** the results are known).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "text/hybrid.h"
#include "util/json.h"
#include "vtab_int.h"

/* ---- bm25 --------------------------------------------------------------- */

/* bm25's options: touch and now alone (search_touch). */
static int bm25_option(void *ctx, const char *key, const search_opt *v, char **err) {
  return search_touch_option(ctx, key, v, err);
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

/* The k best keyword matches (all when k is 0 or more) allowed by al,
** scored with corpus c's statistics (NULL: the store's own). */
static int keyword_hits(store *st, const char *t, size_t n, uint64_t k, const knn_allow *al,
                        const store_bm25_corpus *c, store_hit **out, uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (!t || al->none || !k || !store_count(st)) return SQLITE_OK;
  if (k > store_count(st)) k = store_count(st);
  store_hit *h = sqlite3_malloc64(k * sizeof *h);
  if (!h) return SQLITE_NOMEM;
  int rc = h5mem_store_err(st, store_bm25_in(st, t, n, k, &al->flt, c, h, nout), pzErr);
  if (rc == SQLITE_OK) rc = search_knn_allow_check(al, st, pzErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(h);
    *nout = 0;
    return rc;
  }
  *out = h;
  return SQLITE_OK;
}

/* The k best keyword matches of text t over the set allowed by f, merged
** into *top (score first): a fleet's scored with the statistics of all
** its stores, as one store holding them all would score them (held, hold:
** search_set_merge's).  als (NULL: none): what f allows in each store, as
** set_vector left it; used where the store stayed pinned since. */
static int set_keyword(search_set *ss, const char *t, size_t tn, uint64_t k, const knn_filter *f, srow **top,
                       uint64_t *ntop, uint32_t *held, const uint32_t *hold, knn_allow *als, char **pzErr) {
  store_bm25_corpus corpus, *c = NULL;
  memset(&corpus, 0, sizeof corpus);
  int rc = SQLITE_OK;
  if (ss->fl && t) {
    c = &corpus;
    for (int i = 0; i < ss->n && rc == SQLITE_OK; i++) {
      store *st;
      if ((rc = search_set_pin(ss, i, &st, pzErr)) != SQLITE_OK) break;
      rc = search_set_err(ss, i, h5mem_store_err(st, store_bm25_corpus_add(st, t, tn, c), pzErr), pzErr);
      if (!(hold && hold[i])) search_set_let(ss, i);
    }
  }
  for (int i = 0; i < ss->n && rc == SQLITE_OK; i++) {
    store *st;
    if (als && als[i].c && !ss->st[i]) search_knn_allow_free(&als[i]); /* (let go since: refreshed) */
    knn_allow own, *al = als && als[i].c ? &als[i] : &own;
    if ((rc = search_set_pin(ss, i, &st, pzErr)) != SQLITE_OK) break;
    store_hit *h = NULL;
    uint64_t m = 0;
    if (al != &own || (rc = search_knn_allow_init(st, f, al, pzErr)) == SQLITE_OK) {
      rc = keyword_hits(st, t, tn, k, al, c, &h, &m, pzErr);
      if (al == &own) search_knn_allow_free(al);
    }
    rc = search_set_err(ss, i, rc, pzErr);
    srow *r = rc == SQLITE_OK ? search_srow_alloc(m) : NULL;
    if (rc == SQLITE_OK && !r) rc = SQLITE_NOMEM;
    for (uint64_t j = 0; r && j < m; j++) {
      r[j].pos = SEARCH_GPOS(i, h[j].pos);
      r[j].v[0] = h[j].score;
    }
    sqlite3_free(h);
    if (rc == SQLITE_OK) rc = search_set_merge(ss, i, r, m, k, 1, top, ntop, held, hold);
    sqlite3_free(r);
  }
  free(corpus.df);
  return rc;
}

int search_bm25_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                    uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  int rc = search_opts_parse(a->options, SEARCH_TOUCH_KNOWN, bm25_option, a->touch, pzErr);
  const char *t;
  size_t n;
  if (rc == SQLITE_OK) rc = query_text(a->qtext, &t, &n, pzErr);
  if (rc != SQLITE_OK || !t || !ss->n || a->k == 0 || f->empty) return rc;
  uint32_t *held = sqlite3_malloc64((uint64_t)ss->n * sizeof *held);
  if (!held) return SQLITE_NOMEM;
  srow *top = NULL;
  uint64_t ntop = 0;
  rc = set_keyword(ss, t, n, (uint64_t)a->k, f, &top, &ntop, held, NULL, NULL, pzErr);
  sqlite3_free(held);
  if (rc != SQLITE_OK) {
    sqlite3_free(top);
    return rc;
  }
  *out = top;
  *nout = ntop;
  return SQLITE_OK;
}

/* ---- hybrid ------------------------------------------------------------- */

/* A source of rerank's sources: its key (decoded, malloc'd) and authority. */
typedef struct src_auth {
  char *name;
  double a;
} src_auth;

/* hybrid's options: the fusion's (lib/text/hybrid.h), the vector side's,
** and the source authorities (rerank's sources: source -> authority in
** [0, 1]), read once as the options are */
typedef struct hopts {
  hybrid_opts h;
  store_knn_opts knn;
  src_auth *src; /* malloc'd; nsrc of them */
  size_t nsrc;
  search_touch *touch; /* touch and now (now: rerank's too, unless it gives its own) */
  char *column;        /* "column": the vector column to search (NULL: the embedding) */
  int vcol;            /* its number, or -1: the embedding */
} hopts;

static void hopts_free(hopts *o) {
  sqlite3_free(o->column);
  for (size_t i = 0; i < o->nsrc; i++) free(o->src[i].name);
  free(o->src);
  o->src = NULL;
  o->nsrc = 0;
}

#define HYBRID_KNOWN "fusion 'weighted' or 'rrf', column, vector_weight, keyword_weight, rrf_k, " \
  "candidates, keyword_candidates, reject_below, rerank (an object), and the vector search's " \
  "exact, ef, nprobe, index, " SEARCH_TOUCH_KNOWN
#define RERANK_KNOWN "relevance, recency, authority, activation (weights >= 0), half_life_days, " \
  "now (unix seconds), sources (an object: source -> authority 0..1), default_authority"

/* A source's authority in rerank's sources: a number in 0 .. 1, kept. */
static int source_option(void *ctx, const char *key, const search_opt *v, char **err) {
  hopts *o = ctx;
  double d;
  int rc = search_opts_num(v, 0, 1, &d, err);
  if (rc != SQLITE_OK) return rc;
  src_auth *g = realloc(o->src, (o->nsrc + 1) * sizeof *g);
  if (!g) return SQLITE_NOMEM;
  o->src = g;
  size_t n = strlen(key) + 1;
  if (!(g[o->nsrc].name = malloc(n))) return SQLITE_NOMEM;
  memcpy(g[o->nsrc].name, key, n);
  g[o->nsrc++].a = d;
  return SQLITE_OK;
}

static int rerank_option(void *ctx, const char *key, const search_opt *v, char **err) {
  hopts *o = ctx;
  hybrid_opts *h = &o->h;
  double d;
  if (!strcmp(key, "relevance")) return search_opts_num(v, 0, 1e9, &h->w_rel, err);
  if (!strcmp(key, "recency")) return search_opts_num(v, 0, 1e9, &h->w_rec, err);
  if (!strcmp(key, "authority")) return search_opts_num(v, 0, 1e9, &h->w_auth, err);
  if (!strcmp(key, "activation")) return search_opts_num(v, 0, 1e9, &h->w_act, err);
  if (!strcmp(key, "default_authority")) return search_opts_num(v, 0, 1, &h->auth_default, err);
  if (!strcmp(key, "half_life_days")) {
    int rc = search_opts_num(v, 1e-9, 1e9, &d, err);
    h->half_life = d * 86400.0;
    return rc;
  }
  if (!strcmp(key, "now")) {
    int rc = search_opts_num(v, -9e18, 9e18, &d, err);
    h->now = (int64_t)d;
    h->has_now = 1;
    return rc;
  }
  if (!strcmp(key, "sources")) {
    if (v->type != UTIL_JSON_OBJECT) {
      *err = sqlite3_mprintf("expected an object, e.g. {\"user\": 1.0, \"web\": 0.3}");
      return SQLITE_ERROR;
    }
    /* each source once, its authority in 0 .. 1 (not clamped silently) */
    hopts_free(o);
    int rc = search_opts_object(v, "any source", source_option, o, err);
    return rc == SQLITE_OK || rc == SQLITE_NOMEM ? rc : SQLITE_ERROR;
  }
  return SEARCH_UNKNOWN;
}

static int hybrid_option(void *ctx, const char *key, const search_opt *v, char **err) {
  hopts *o = ctx;
  hybrid_opts *h = &o->h;
  const char *val = v->text;
  int rc = search_touch_option(o->touch, key, v, err);
  if (rc != SEARCH_UNKNOWN) return rc;
  if (!strcmp(key, "column")) {
    if (v->type != UTIL_JSON_TEXT || !v->text) {
      *err = sqlite3_mprintf("expected a vector column's name");
      return SQLITE_ERROR;
    }
    sqlite3_free(o->column);
    return (o->column = sqlite3_mprintf("%s", v->text)) ? SQLITE_OK : SQLITE_NOMEM;
  }
  if (!strcmp(key, "fusion")) {
    if (!val || (strcmp(val, "weighted") && strcmp(val, "rrf"))) {
      *err = sqlite3_mprintf("expected 'weighted' or 'rrf'");
      return SQLITE_ERROR;
    }
    h->rrf = !strcmp(val, "rrf");
    return SQLITE_OK;
  }
  if (!strcmp(key, "vector_weight")) return search_opts_num(v, 0, 1e9, &h->wv, err);
  if (!strcmp(key, "keyword_weight")) return search_opts_num(v, 0, 1e9, &h->wk, err);
  if (!strcmp(key, "rrf_k")) return search_opts_num(v, 0, 1e9, &h->rrf_k, err);
  if (!strcmp(key, "reject_below")) {
    h->reject = 1;
    return search_opts_num(v, -1e300, 1e300, &h->reject_below, err);
  }
  if (!strcmp(key, "candidates") || !strcmp(key, "keyword_candidates")) {
    if (v->type != UTIL_JSON_INTEGER || v->inum < 1) {
      *err = sqlite3_mprintf("expected an integer >= 1");
      return SQLITE_ERROR;
    }
    *(key[0] == 'c' ? &h->cand : &h->kcand) = v->inum;
    return SQLITE_OK;
  }
  if (!strcmp(key, "rerank")) {
    if (v->type != UTIL_JSON_OBJECT) {
      *err = sqlite3_mprintf("expected an object (known: " RERANK_KNOWN ")");
      return SQLITE_ERROR;
    }
    h->rerank = 1;
    rc = search_opts_object(v, RERANK_KNOWN, rerank_option, o, err);
    if (rc != SQLITE_OK) return rc == SQLITE_NOMEM ? rc : SQLITE_ERROR;
    return SQLITE_OK;
  }
  return search_knn_option(&o->knn, key, v, err);
}

/* Whether source src[0..n) is name.  A '"' in the source is left out, as
** the json_extract path that looked sources up before this reader left it
** out. */
static int source_is(const char *name, const char *src, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (src[i] == '"') continue;
    if (src[i] != name[k]) return 0;
    k++;
  }
  return name[k] == 0;
}

/* The authority of a source: its entry in rerank's sources (checked to be
** in 0 .. 1 as they were read), else the default. */
static double authority(const hopts *o, const char *src, size_t n) {
  if (!src) return o->h.auth_default;
  for (size_t i = 0; i < o->nsrc; i++)
    if (source_is(o->src[i].name, src, n)) return o->src[i].a;
  return o->h.auth_default;
}

/* What re-ranking needs of each record of u[0..n), from the store: its
** times and uses, and its source's authority (only when it counts). */
static int rerank_feats(search_set *ss, const hopts *o, const hybrid_rec *u, uint64_t n, hybrid_feat *f,
                        char **pzErr) {
  for (uint64_t i = 0; i < n; i++) {
    store_view v;
    memset(&v, 0, sizeof v);
    store *st = ss->st[SEARCH_SIDX(u[i].pos)];
    int src = store_get(st, SEARCH_LPOS(u[i].pos), STORE_V_NUM, &v);
    if (src != STORE_OK) return h5mem_store_err(st, src, pzErr);
    f[i] = (hybrid_feat){v.ts, v.access_count, v.last_access, v.last_access != STORE_NULL_TIME,
                         o->h.auth_default};
  }
  if (!(o->h.w_auth > 0 && o->nsrc)) return SQLITE_OK;
  for (uint64_t i = 0; i < n; i++) {
    store_view sv;
    memset(&sv, 0, sizeof sv);
    store *st = ss->st[SEARCH_SIDX(u[i].pos)];
    int src = store_get(st, SEARCH_LPOS(u[i].pos), STORE_V_SOURCE, &sv);
    if (src != STORE_OK) return h5mem_store_err(st, src, pzErr);
    f[i].authority = authority(o, sv.source, sv.source_len);
  }
  return SQLITE_OK;
}

/* Re-rank u[0..n) in place (hybrid_rerank). */
static int rerank(search_set *ss, const hopts *o, hybrid_rec *u, uint64_t n, char **pzErr) {
  hybrid_feat *f = sqlite3_malloc64(n * sizeof *f + 1);
  if (!f) return SQLITE_NOMEM;
  int rc = rerank_feats(ss, o, u, n, f, pzErr);
  if (rc == SQLITE_OK) hybrid_rerank(&o->h, u, f, n);
  sqlite3_free(f);
  return rc;
}

/* The vector scores of the union's records of store i the vector side did
** not return (keyword matches), computed exactly. */
static int missing_scores(store *st, int i, int vcol, const float *q, double unit, hybrid_rec *u, uint64_t nu,
                          char **pzErr) {
  uint64_t nmiss = 0;
  for (uint64_t j = 0; j < nu; j++) nmiss += !u[j].has_v && SEARCH_SIDX(u[j].pos) == i;
  if (!nmiss) return SQLITE_OK;
  uint64_t npos = store_npos(st);
  uint8_t *bits = sqlite3_malloc64(npos / 8 + 1);
  ann_res *mr = bits ? sqlite3_malloc64(nmiss * sizeof *mr) : NULL;
  int rc = mr ? SQLITE_OK : SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    memset(bits, 0, npos / 8 + 1);
    for (uint64_t j = 0; j < nu; j++)
      if (!u[j].has_v && SEARCH_SIDX(u[j].pos) == i) {
        uint64_t p = SEARCH_LPOS(u[j].pos);
        bits[p / 8] |= (uint8_t)(1u << (p % 8));
      }
    store_filter mf = {bits, nmiss, NULL, NULL, NULL};
    store_knn_opts ex;
    memset(&ex, 0, sizeof ex);
    ex.exact = 1;
    uint64_t got = 0;
    rc = h5mem_store_err(st, vcol >= 0 ? store_knn_col(st, vcol, q, nmiss, &mf, &ex, mr, &got)
                                       : store_knn(st, q, nmiss, &mf, &ex, mr, &got), pzErr);
    if (rc == SQLITE_OK && vcol < 0) rc = search_knn_check(st, mr, got, pzErr);
    /* (mr is by distance: find each in the union, which is by position) */
    for (uint64_t j = 0; rc == SQLITE_OK && j < got; j++) {
      hybrid_rec *e = hybrid_find(u, nu, SEARCH_GPOS(i, mr[j].pos));
      if (e) {
        e->vs = vcol >= 0 ? search_col_score(store_col(st, vcol), mr[j].dist) : search_knn_score(st, mr[j].dist, unit);
        e->has_v = 1;
      }
    }
  }
  sqlite3_free(mr);
  sqlite3_free(bits);
  return rc;
}

/* The vector side over the set: the nv nearest allowed by f, merged into
** *top by vector score (held: search_set_merge's); what f allows in each
** store kept in als[i] for the keyword side. */
static int set_vector(search_set *ss, const hopts *o, const float *q, double unit, uint64_t nv,
                      const knn_filter *f, srow **top, uint64_t *ntop, uint32_t *held, knn_allow *als,
                      char **pzErr) {
  int rc = SQLITE_OK;
  for (int i = 0; i < ss->n && rc == SQLITE_OK; i++) {
    store *st;
    if ((rc = search_set_pin(ss, i, &st, pzErr)) != SQLITE_OK) break;
    uint64_t kv = nv < store_count(st) ? nv : store_count(st), n = 0;
    knn_allow *al = &als[i];
    ann_res *vr = NULL;
    if ((rc = search_knn_allow_init(st, f, al, pzErr)) != SQLITE_OK) break;
    if (!al->none && kv) {
      vr = sqlite3_malloc64(kv * sizeof *vr + 1);
      rc = vr ? h5mem_store_err(st, o->vcol >= 0 ? store_knn_col(st, o->vcol, q, kv, &al->flt, &o->knn, vr, &n)
                                                 : store_knn(st, q, kv, &al->flt, &o->knn, vr, &n), pzErr)
              : SQLITE_NOMEM;
      if (rc == SQLITE_OK) rc = search_knn_allow_check(al, st, pzErr);
      if (rc == SQLITE_OK && o->vcol < 0) rc = search_knn_check(st, vr, n, pzErr);
    }
    rc = search_set_err(ss, i, rc, pzErr);
    srow *r = rc == SQLITE_OK ? search_srow_alloc(n) : NULL;
    if (rc == SQLITE_OK && !r) rc = SQLITE_NOMEM;
    for (uint64_t j = 0; r && j < n; j++) {
      r[j].pos = SEARCH_GPOS(i, vr[j].pos);
      r[j].v[0] = o->vcol >= 0 ? search_col_score(store_col(st, o->vcol), vr[j].dist)
                               : search_knn_score(st, vr[j].dist, unit);
    }
    sqlite3_free(vr);
    if (rc == SQLITE_OK) rc = search_set_merge(ss, i, r, n, nv, 1, top, ntop, held, NULL);
    sqlite3_free(r);
  }
  return rc;
}

/* A fleet's ids repeat from store to store, and the fusion breaks ties
** by id: each id of u[0..n) becomes its rank in the fleet's order, by
** store and then id (what a store holding every record would break them
** by, its ids in that order). */
typedef struct fleet_key {
  int64_t id;
  uint64_t pos, i;
} fleet_key;

static int by_store_id(const void *a, const void *b) {
  const fleet_key *x = a, *y = b;
  if (SEARCH_SIDX(x->pos) != SEARCH_SIDX(y->pos)) return SEARCH_SIDX(x->pos) < SEARCH_SIDX(y->pos) ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int fleet_ids(hybrid_rec *u, uint64_t n) {
  fleet_key *k = sqlite3_malloc64(n * sizeof *k + 1);
  if (!k) return SQLITE_NOMEM;
  for (uint64_t i = 0; i < n; i++) k[i] = (fleet_key){u[i].id, u[i].pos, i};
  qsort(k, n, sizeof *k, by_store_id);
  for (uint64_t r = 0; r < n; r++) u[k[r].i].id = (int64_t)r;
  sqlite3_free(k);
  return SQLITE_OK;
}

/* Both sides' candidates for the k best allowed by f: the union of the
** vector side's (q NULL: none) and the keyword side's (t NULL: none), by
** position, with ids, and every record's vector score when there is q.
** Over a fleet each side is the set's best, so the union is the one a
** single store holding every record would give; its stores stay pinned. */
static int candidates(search_set *ss, const hopts *o, const float *q, double unit, const char *t, size_t tn,
                      uint64_t k, const knn_filter *f, hybrid_rec **out, uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  uint64_t nv, nk;
  hybrid_pools(&o->h, k, ss->fl ? UINT64_MAX : store_count(ss->one), &nv, &nk);
  uint32_t *held = sqlite3_malloc64((uint64_t)ss->n * 2 * sizeof *held);
  knn_allow *als = sqlite3_malloc64((uint64_t)ss->n * sizeof *als); /* (one per store for both sides) */
  if (!held || !als) {
    sqlite3_free(held);
    sqlite3_free(als);
    return SQLITE_NOMEM;
  }
  srow *vt = NULL, *kt = NULL;
  uint64_t nvt = 0, nkt = 0, nu = 0;
  int rc = SQLITE_OK;
  memset(held, 0, (size_t)ss->n * 2 * sizeof *held);
  memset(als, 0, (size_t)ss->n * sizeof *als);
  if (q && !f->empty) rc = set_vector(ss, o, q, unit, nv, f, &vt, &nvt, held, als, pzErr);
  if (rc == SQLITE_OK && t && !f->empty)
    rc = set_keyword(ss, t, tn, nk, f, &kt, &nkt, held + ss->n, held, als, pzErr);
  for (int i = 0; i < ss->n; i++) search_knn_allow_free(&als[i]);
  sqlite3_free(als);
  sqlite3_free(held);
  hybrid_rec *u = NULL;
  if (rc == SQLITE_OK) {
    u = sqlite3_malloc64((nvt + nkt) * sizeof *u + 1);
    if (!u) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) {
    for (uint64_t i = 0; i < nvt; i++) u[nu++] = (hybrid_rec){.pos = vt[i].pos, .vs = vt[i].v[0], .has_v = 1};
    for (uint64_t i = 0; i < nkt; i++) u[nu++] = (hybrid_rec){.pos = kt[i].pos, .ks = kt[i].v[0], .has_k = 1};
    nu = hybrid_union(u, nu);
    for (uint64_t i = 0; i < nu; i++) {
      store *st = ss->st[SEARCH_SIDX(u[i].pos)];
      u[i].id = store_pos_id(st, SEARCH_LPOS(u[i].pos));
    }
    if (ss->fl) rc = fleet_ids(u, nu);
    for (int i = 0; q && rc == SQLITE_OK && i < ss->n; i++) {
      store *st = ss->st[i];
      if (st) rc = search_set_err(ss, i, missing_scores(st, i, o->vcol, q, unit, u, nu, pzErr), pzErr);
    }
  }
  sqlite3_free(vt);
  sqlite3_free(kt);
  if (rc != SQLITE_OK) {
    sqlite3_free(u);
    return rc;
  }
  *out = u;
  *nout = nu;
  return SQLITE_OK;
}

int search_hybrid_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                      uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (!ss->n) return SQLITE_OK;
  hopts o;
  memset(&o, 0, sizeof o);
  hybrid_opts_default(&o.h);
  o.touch = a->touch;
  int rc = search_opts_parse(a->options, HYBRID_KNOWN, hybrid_option, &o, pzErr);
  if (rc == SQLITE_OK && !o.h.rrf && !(o.h.wv + o.h.wk > 0)) {
    *pzErr = sqlite3_mprintf("options: vector_weight + keyword_weight must be > 0");
    rc = SQLITE_ERROR;
  }
  const char *t = NULL;
  size_t tn = 0;
  if (rc == SQLITE_OK) rc = query_text(a->qtext, &t, &tn, pzErr);
  float *q = NULL;
  double unit = 1.0;
  o.vcol = -1;
  store *st0 = NULL; /* the query's store: the table's, or a fleet's first */
  if (rc == SQLITE_OK) rc = search_set_pin(ss, 0, &st0, pzErr);
  if (rc == SQLITE_OK && o.column && sqlite3_stricmp(o.column, "embedding")) {
    int c = ss->fl ? -1 : store_col_find(st0, o.column, strlen(o.column));
    const store_coldef *d = c >= 0 ? store_col(st0, c) : NULL;
    if (!d || d->type != STORE_T_VECTOR) {
      *pzErr = sqlite3_mprintf("options: column: '%s' is not a vector column of the table%s", o.column,
                               ss->fl ? " (a fleet searches the embedding alone)" : "");
      rc = SQLITE_ERROR;
    }
    o.vcol = c;
  }
  if (rc == SQLITE_OK && a->query && sqlite3_value_type(a->query) != SQLITE_NULL)
    rc = o.vcol >= 0 ? search_col_query(st0, o.vcol, a->query, (void **)&q, pzErr)
                     : search_knn_query(st0, a->mt, a->query, &q, &unit, pzErr);
  else if (rc == SQLITE_OK && t && o.vcol < 0 && a->qtext && a->mt && h5mem_table_embeds(a->mt))
    rc = search_knn_query(st0, a->mt, a->qtext, &q, &unit, pzErr); /* no vector: the text serves both sides */
  if (rc == SQLITE_OK && !t && !q) {
    *pzErr = sqlite3_mprintf("give a query text, a query vector, or both");
    rc = SQLITE_ERROR;
  }
  if (rc != SQLITE_OK || a->k == 0 || f->empty || (!ss->fl && !store_count(st0))) {
    sqlite3_free(q);
    hopts_free(&o);
    return rc;
  }
  if (!o.h.has_now) o.h.now = a->touch->has_now ? a->touch->now : (int64_t)time(NULL);
  uint64_t k = (uint64_t)a->k, nu = 0;
  hybrid_rec *u = NULL;
  rc = candidates(ss, &o, q, unit, t, tn, k, f, &u, &nu, pzErr);
  if (rc == SQLITE_OK && hybrid_rejects(&o.h, u, nu)) nu = 0;
  if (rc == SQLITE_OK && nu) {
    hybrid_fuse(&o.h, u, nu);
    if (o.h.rerank) rc = rerank(ss, &o, u, nu, pzErr);
  }
  srow *r = NULL;
  if (rc == SQLITE_OK) {
    nu = hybrid_top(u, nu, k);
    r = search_srow_alloc(nu);
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
  sqlite3_free(u);
  hopts_free(&o);
  if (rc != SQLITE_OK) {
    sqlite3_free(r);
    return rc;
  }
  *out = r;
  *nout = nu;
  return SQLITE_OK;
}
