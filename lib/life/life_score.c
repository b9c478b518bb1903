/*
** lib/life/life_score.c - the decay score, a new memory's importance and
** the save strategies (formulas in life.h and docs/SQL.md, "Memory
** lifecycle").  Distances are the kernels' cosine (kernels/k.h), so they
** are the ones vec_search reports.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "k.h"
#include "life/life.h"

void life_score_opts_default(life_score_opts *o) {
  o->half_life = 7 * LIFE_DAY;
  o->w_importance = 0.4;
  o->w_recency = 0.4;
  o->w_access = 0.2;
  o->access_full = 100;
  o->default_importance = 0.5;
}

static int weight_ok(double w) { return isfinite(w) && w >= 0; }

int life_score_check(const life_score_opts *o) {
  if (!(isfinite(o->half_life) && o->half_life > 0)) return LIFE_EINVAL;
  if (!(isfinite(o->access_full) && o->access_full > 0)) return LIFE_EINVAL;
  if (!weight_ok(o->w_importance) || !weight_ok(o->w_recency) || !weight_ok(o->w_access))
    return LIFE_EINVAL;
  double sum = o->w_importance + o->w_recency + o->w_access;
  if (!(sum > 0) || !isfinite(sum)) return LIFE_EINVAL;
  if (!(o->default_importance >= 0 && o->default_importance <= 1)) return LIFE_EINVAL;
  return LIFE_OK;
}

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

double life_score(const life_score_opts *o, const life_record *r, int64_t now,
                  life_score_parts *parts) {
  life_score_opts def;
  if (!o) {
    life_score_opts_default(&def);
    o = &def;
  }
  life_score_parts p;
  p.importance = r->has_importance && isfinite(r->importance) ? clamp01(r->importance)
                                                               : o->default_importance;
  int known = r->has_ts || r->has_last_access;
  int64_t t = r->has_ts ? r->ts : r->last_access;
  if (r->has_ts && r->has_last_access && r->last_access > t) t = r->last_access;
  if (!known) {
    p.recency = 0;
  } else {
    /* in double: int64 differences of extreme times must not overflow */
    double age = (double)now - (double)t;
    p.recency = age > 0 ? pow(0.5, age / o->half_life) : 1.0;
  }
  p.access = r->access_count > 0
                 ? clamp01(log1p((double)r->access_count) / log1p(o->access_full))
                 : 0.0;
  double sum = o->w_importance + o->w_recency + o->w_access;
  double s = (o->w_importance * p.importance + o->w_recency * p.recency + o->w_access * p.access) / sum;
  if (parts) *parts = p;
  return clamp01(s);
}

double life_nearest(const float *emb, const float *rows, size_t n, size_t dim) {
  const k_ops *k = k_get();
  double best = 2.0;
  for (size_t i = 0; i < n; i++) {
    double d = k->cos_f32(emb, rows + i * dim, dim);
    if (d < best) best = d;
  }
  return best;
}

double life_importance(const float *emb, const float *working, size_t n, size_t dim,
                       const life_gate_result *g, double w_novelty) {
  double w = isnan(w_novelty) ? LIFE_W_NOVELTY : clamp01(w_novelty);
  double novelty = !emb ? 0.5 : n ? clamp01(life_nearest(emb, working, n, dim)) : 1.0;
  return clamp01(w * novelty + (1 - w) * clamp01(g->information));
}

const char *life_strategy_name(life_strategy s) {
  switch (s) {
  case LIFE_EVERY_EXCHANGE: return "every_exchange";
  case LIFE_ALWAYS: return "always";
  case LIFE_SEMANTIC_SHIFT: return "semantic_shift";
  default: return "";
  }
}

int life_strategy_from_name(const char *name) {
  for (int s = LIFE_EVERY_EXCHANGE; s <= LIFE_SEMANTIC_SHIFT; s++)
    if (!strcmp(name, life_strategy_name((life_strategy)s))) return s;
  return -1;
}

int life_should_save(life_strategy s, const life_gate_result *g, const float *emb,
                     const float *recent, size_t n, size_t dim, double threshold,
                     double *distance) {
  double d = 2.0;
  int save;
  switch (s) {
  case LIFE_ALWAYS: save = 1; break;
  case LIFE_SEMANTIC_SHIFT:
    save = g->save;
    if (emb) {
      d = life_nearest(emb, recent, n, dim);
      save = save && d > threshold;
    }
    break;
  default: save = g->save; break;
  }
  if (distance) *distance = d;
  return save;
}

/* ---- the lowest candidates ------------------------------------------------ */

static int cand_less(const life_cand *a, const life_cand *b) {
  return a->key < b->key || (a->key == b->key && a->id < b->id);
}

static void cswap(life_cand *a, life_cand *b) {
  life_cand t = *a;
  *a = *b;
  *b = t;
}

void life_select_lowest(life_cand *c, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* the k-th lies in [lo, hi) */
  while (hi - lo > 1 && k > lo && k < hi) {
    size_t mid = lo + (hi - lo) / 2, last = hi - 1;
    if (cand_less(&c[mid], &c[lo])) cswap(&c[mid], &c[lo]);
    if (cand_less(&c[last], &c[lo])) cswap(&c[last], &c[lo]);
    if (cand_less(&c[last], &c[mid])) cswap(&c[last], &c[mid]);
    cswap(&c[mid], &c[last]); /* the pivot at the end */
    life_cand p = c[last];
    size_t s = lo;
    for (size_t i = lo; i < last; i++)
      if (cand_less(&c[i], &p)) cswap(&c[i], &c[s++]);
    cswap(&c[s], &c[last]);
    if (s == k || s + 1 == k) return;
    if (s > k) hi = s;
    else lo = s + 1;
  }
}
