/*
** lib/text/hybrid.c - hybrid retrieval's fusion and re-ranking (hybrid.h).
**
** Weighted fusion min-max normalises each side over the union and adds
** them with the weights (vector 0.4, keyword 0.6 by default; BENCHMARKS.md,
** "Keyword search", measures them); RRF adds 1 / (rrf_k + rank) of the
** record's rank in each list (Cormack et al., "Reciprocal rank fusion
** outperforms Condorcet and individual rank learning methods", SIGIR 2009).
*/
#include "text/hybrid.h"

#include <math.h>
#include <stdlib.h>

void hybrid_opts_default(hybrid_opts *o) {
  *o = (hybrid_opts){0};
  o->wv = 0.4;
  o->wk = 0.6;
  o->rrf_k = 60;
  o->w_rel = 1.0;
  o->w_rec = 0.2;
  o->w_auth = 0.1;
  o->w_act = 0.1;
  o->half_life = 30 * 86400.0;
  o->auth_default = 0.5;
}

void hybrid_pools(const hybrid_opts *o, uint64_t k, uint64_t live, uint64_t *nv, uint64_t *nk) {
  uint64_t pool = k * 10 > 100 ? k * 10 : 100;
  *nv = o->cand ? (uint64_t)o->cand : pool;
  *nk = o->kcand ? (uint64_t)o->kcand : pool;
  if (*nv < k) *nv = k;
  if (*nk < k) *nk = k;
  if (*nv > live) *nv = live;
}

static int by_pos(const void *a, const void *b) {
  const hybrid_rec *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int by_id(const hybrid_rec *x, const hybrid_rec *y) {
  return x->id < y->id ? -1 : x->id > y->id;
}

/* the records with a vector score first, best first, ties by id */
static int by_vs(const void *a, const void *b) {
  const hybrid_rec *x = a, *y = b;
  if (x->has_v != y->has_v) return x->has_v ? -1 : 1;
  if (x->vs != y->vs) return x->vs > y->vs ? -1 : 1;
  return by_id(x, y);
}

/* the keyword matches first, best first, ties by id */
static int by_ks(const void *a, const void *b) {
  const hybrid_rec *x = a, *y = b;
  if (x->has_k != y->has_k) return x->has_k ? -1 : 1;
  if (x->ks != y->ks) return x->ks > y->ks ? -1 : 1;
  return by_id(x, y);
}

static int by_score(const void *a, const void *b) {
  const hybrid_rec *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return by_id(x, y);
}

uint64_t hybrid_union(hybrid_rec *u, uint64_t n) {
  qsort(u, n, sizeof *u, by_pos);
  uint64_t m = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (m && u[m - 1].pos == u[i].pos) {
      if (u[i].has_v) u[m - 1].vs = u[i].vs, u[m - 1].has_v = 1;
      if (u[i].has_k) u[m - 1].ks = u[i].ks, u[m - 1].has_k = 1;
    } else {
      u[m++] = u[i];
    }
  }
  return m;
}

hybrid_rec *hybrid_find(hybrid_rec *u, uint64_t n, uint64_t pos) {
  hybrid_rec key = {.pos = pos};
  return bsearch(&key, u, n, sizeof *u, by_pos);
}

int hybrid_rejects(const hybrid_opts *o, const hybrid_rec *u, uint64_t n) {
  if (!o->reject) return 0;
  int any_k = 0;
  double best_v = -INFINITY;
  for (uint64_t i = 0; i < n; i++) {
    any_k |= u[i].has_k;
    if (u[i].has_v && u[i].vs > best_v) best_v = u[i].vs;
  }
  return !any_k && !(best_v >= o->reject_below);
}

static void fuse_weighted(const hybrid_opts *o, hybrid_rec *u, uint64_t n) {
  double vmin = INFINITY, vmax = -INFINITY, kmin = INFINITY, kmax = -INFINITY;
  for (uint64_t i = 0; i < n; i++) {
    if (u[i].has_v) {
      if (u[i].vs < vmin) vmin = u[i].vs;
      if (u[i].vs > vmax) vmax = u[i].vs;
    }
    if (u[i].ks < kmin) kmin = u[i].ks;
    if (u[i].ks > kmax) kmax = u[i].ks;
  }
  for (uint64_t i = 0; i < n; i++) {
    double vn = !u[i].has_v ? 0 : vmax > vmin ? (u[i].vs - vmin) / (vmax - vmin) : 1.0;
    double kn = kmax > kmin ? (u[i].ks - kmin) / (kmax - kmin) : kmax > 0 ? 1.0 : 0.0;
    u[i].score = o->wv * vn + o->wk * kn;
  }
}

/* Each list in turn ranked by sorting u itself (the list's members first):
** no allocation, and the ranks are those of the list alone. */
static void fuse_rrf(const hybrid_opts *o, hybrid_rec *u, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) u[i].score = 0;
  qsort(u, n, sizeof *u, by_vs);
  for (uint64_t r = 0; r < n && u[r].has_v; r++) u[r].score += 1.0 / (o->rrf_k + (double)(r + 1));
  qsort(u, n, sizeof *u, by_ks);
  for (uint64_t r = 0; r < n && u[r].has_k; r++) u[r].score += 1.0 / (o->rrf_k + (double)(r + 1));
}

void hybrid_fuse(const hybrid_opts *o, hybrid_rec *u, uint64_t n) {
  if (o->rrf)
    fuse_rrf(o, u, n);
  else
    fuse_weighted(o, u, n);
}

/* A record's activation before scaling: its uses, fading with the time
** since the last one. */
static double activation(const hybrid_opts *o, const hybrid_feat *f) {
  double uses = f->access_count > 0 ? log1p((double)f->access_count) : 0;
  double idle = !f->has_last_access ? 0 : (double)(o->now - f->last_access);
  return uses * (idle <= 0 ? 1.0 : pow(0.5, idle / o->half_life));
}

void hybrid_rerank(const hybrid_opts *o, hybrid_rec *u, const hybrid_feat *f, uint64_t n) {
  double best = 0, maxact = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (u[i].score > best) best = u[i].score;
    double a = activation(o, &f[i]);
    if (a > maxact) maxact = a;
  }
  for (uint64_t i = 0; i < n; i++) {
    double rel = best > 0 ? u[i].score / best : 0;
    double age = (double)(o->now - f[i].ts);
    double rec = age <= 0 ? 1.0 : pow(0.5, age / o->half_life);
    double act = maxact > 0 ? activation(o, &f[i]) / maxact : 0;
    u[i].score = o->w_rel * rel + o->w_rec * rec + o->w_auth * f[i].authority + o->w_act * act;
  }
}

uint64_t hybrid_top(hybrid_rec *u, uint64_t n, uint64_t k) {
  qsort(u, n, sizeof *u, by_score);
  return n > k ? k : n;
}
