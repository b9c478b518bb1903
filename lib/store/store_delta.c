/*
** lib/store/store_delta.c - the delta: records added since the checkpoint,
** in memory; applying a put or a delete, and the undo list that takes
** the open transaction's changes back.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "k.h"
#include "store_int.h"
#include "life/life.h"
#include "util/check.h"

/* ---- records in memory ------------------------------------------------------ */

void store_drec_free(drec *d) { free(d); }

/* A copy of r (embedding converted to the stored type). */
static drec *drec_new(const store *s, const store_rec *r) {
  const char *str[6] = {r->text, r->source, r->session, r->tags, r->tier, r->meta};
  size_t len[6] = {r->text_len, r->source_len, r->session_len, r->tags_len, r->tier_len, r->meta_len};
  size_t total = sizeof(drec) + 16, eb = r->emb ? (size_t)s->dim * (size_t)s->storage : 0;
  for (int k = 0; k < 6; k++)
    if (str[k]) total += len[k] + 1;
  total += eb;
  if (s->ncols) total += store_cols_size(s, r->cols);
  drec *d = malloc(total);
  if (!d) return NULL;
  memset(d, 0, sizeof *d);
  uint8_t *p = (uint8_t *)(d + 1);
  if (s->ncols) { /* (first: store_val is aligned right after the drec, the embedding after them) */
    d->cv = (store_val *)(void *)p;
    p += (size_t)s->ncols * sizeof(store_val);
  }
  if (eb) {
    d->emb = p;
    if (s->storage == STORE_F32) memcpy(p, r->emb, eb);
    else k_get()->f32_to_f16(r->emb, (uint16_t *)(void *)p, (size_t)s->dim);
    p += eb;
  }
  for (int k = 0; k < 6; k++) {
    if (!str[k]) continue;
    d->str[k] = (char *)p;
    d->len[k] = len[k];
    if (len[k]) memcpy(p, str[k], len[k]);
    p[len[k]] = 0;
    p += len[k] + 1;
  }
  if (s->ncols) store_cols_copy(s, r->cols, d->cv, &p); /* (their bytes last: vectors aligned there) */
  d->id = r->id;
  d->ts = r->ts;
  d->importance = r->importance;
  d->access_count = r->access_count;
  d->last_access = r->last_access;
  return d;
}

/* ---- changes ------------------------------------------------------------------ */

int store_ul_push(store *s, int insert, uint64_t pos) {
  if (!s->in_txn) return STORE_OK; /* (replaying the log) */
  if (s->nul == s->capul) {
    uint64_t cap = s->capul ? s->capul * 2 : 64;
    undo *n = realloc(s->ul, cap * sizeof *n);
    if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
    s->ul = n;
    s->capul = cap;
  }
  s->ul[s->nul].insert = insert;
  s->ul[s->nul].table = 0;
  s->ul[s->nul].pos = pos;
  s->nul++;
  return STORE_OK;
}

/* ---- expiry (an ephemeral store) ---------------------------------------------- */

static void xh_push(store *s, int64_t at, int64_t id) { /* (room made by the caller) */
  uint64_t i = s->nxh++;
  while (i > 0 && s->xh[(i - 1) / 2].at > at) {
    s->xh[i] = s->xh[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  s->xh[i].at = at;
  s->xh[i].id = id;
}

static struct xent xh_pop(store *s) {
  struct xent top = s->xh[0], last = s->xh[--s->nxh];
  uint64_t i = 0;
  for (;;) {
    uint64_t c = 2 * i + 1;
    if (c >= s->nxh) break;
    if (c + 1 < s->nxh && s->xh[c + 1].at < s->xh[c].at) c++;
    if (s->xh[c].at >= last.at) break;
    s->xh[i] = s->xh[c];
    i = c;
  }
  if (s->nxh) s->xh[i] = last;
  return top;
}

/* The record at pos deleted for good, outside a transaction (expiry,
** eviction: nothing to undo). */
static void gone(store *s, uint64_t pos) {
  drec *d = s->delta[pos];
  store_cols_note(s, pos, 0);
  d->dead = 1;
  idmap_del(&s->map, d->id);
  s->live--;
  s->changes++;
}

int store_compact_due(store *s) {
  uint64_t dead = s->ndelta - s->live;
  return dead >= 1024 && dead > s->live ? store_compact(s) : STORE_OK;
}

int64_t store_clock(const store *s) {
  int64_t set = s->eph ? store_eph_clock(s) : s->clock_set;
  return set ? set : (int64_t)time(NULL);
}
void store_set_clock(store *s, int64_t now) {
  if (s->eph) store_eph_set_clock(s, now);
  else s->clock_set = now;
}
int store_is_ephemeral(const store *s) { return s->ephemeral; }
void store_set_held(store *s, int held) { s->held = held; }

void store_gone_id(store *s, int64_t id) {
  const uint64_t *v = idmap_slot(&s->map, id);
  if (v) gone(s, *v);
}

void store_expire_now(store *s) {
  if (!s->ephemeral || s->in_txn || s->expcol < 0) return;
  int64_t now = store_clock(s);
  while (s->nxh && s->xh[0].at <= now) {
    struct xent e = xh_pop(s);
    const uint64_t *v = idmap_slot(&s->map, e.id);
    if (!v) continue; /* (deleted, or its insert taken back) */
    uint64_t pos = *v;
    drec *d = s->delta[pos];
    /* (an entry its record no longer has: it was put again with another expiry) */
    if (!d->cv || d->cv[s->expcol].type != STORE_T_INTEGER || d->cv[s->expcol].i != e.at) continue;
    gone(s, pos);
  }
}

int store_clear(store *s) {
  gstore *g = NULL;
  if (gstore_new(&g, gstore_version(s->g) + 1)) return store_fail(s, STORE_ENOMEM, "out of memory");
  gstore_free(s->g);
  s->g = g;
  for (uint64_t pos = 0; pos < s->ndelta; pos++)
    if (!s->delta[pos]->dead) gone(s, pos);
  s->nxh = 0;
  s->max_id = 0;
  return store_compact(s);
}

/* ---- capacity (an ephemeral store) --------------------------------------------- */

/* Whether the queue's entry u is its record's last use (live, not used since). */
static int lq_current(const store *s, const struct luse *u) {
  const uint64_t *v = idmap_slot(&s->map, u->id);
  return v && s->delta[*v]->used == u->tick;
}

/* The stale entries dropped (the current kept in order). */
static void lq_squeeze(store *s) {
  uint64_t j = 0;
  for (uint64_t i = s->lq_head; i < s->lq_end; i++)
    if (lq_current(s, &s->lq[i])) s->lq[j++] = s->lq[i];
  s->lq_head = 0;
  s->lq_end = j;
}

void store_use(store *s, drec *d, int read) {
  d->used = ++s->tick;
  if (!s->capacity || s->evict_by != STORE_EVICT_LRU) return;
  if (s->lq_end == s->lq_cap) { /* full: the stale dropped first, else more room */
    if (s->lq_end - s->lq_head > 2 * s->live + 1024 || s->lq_head > s->lq_cap / 2) lq_squeeze(s);
    if (s->lq_end == s->lq_cap) {
      uint64_t cap = s->lq_cap ? 2 * s->lq_cap : 1024;
      struct luse *n = realloc(s->lq, cap * sizeof *n);
      if (!n) { /* (out of memory: evictions scan the records until the queue is made again) */
        s->lq_lost = 1;
        return;
      }
      s->lq = n;
      s->lq_cap = cap;
    }
  }
  s->lq[s->lq_end++] = (struct luse){d->id, d->used};
  if (read && s->eph) store_eph_use(s, d->id);
}

/* The least recently used live records first, from the queue: k of them
** into out (fewer when the queue holds fewer), nothing changed. */
static uint64_t lru_pick(store *s, int64_t *out, uint64_t k) {
  uint64_t n = 0;
  for (uint64_t i = s->lq_head; i < s->lq_end && n < k; i++)
    if (lq_current(s, &s->lq[i])) out[n++] = s->lq[i].id;
  return n;
}

static int by_tick(const void *a, const void *b) {
  uint64_t x = ((const struct luse *)a)->tick, y = ((const struct luse *)b)->tick;
  return x < y ? -1 : x > y;
}

/* After a commit: the stale entries at the queue's front (the evicted
** among them) dropped, or the queue made again when a use was lost. */
void store_lru_commit(store *s) {
  if (!s->capacity || s->evict_by != STORE_EVICT_LRU) return;
  if (s->lq_lost) { /* the queue made again from the records, if there is room now */
    struct luse *n = malloc((s->live + 1024) * sizeof *n);
    if (!n) return;
    uint64_t j = 0;
    for (uint64_t pos = 0; pos < s->ndelta; pos++)
      if (!s->delta[pos]->dead) n[j++] = (struct luse){s->delta[pos]->id, s->delta[pos]->used};
    qsort(n, j, sizeof *n, by_tick);
    free(s->lq);
    s->lq = n;
    s->lq_cap = s->live + 1024;
    s->lq_head = 0;
    s->lq_end = j;
    s->lq_lost = 0;
    return;
  }
  while (s->lq_head < s->lq_end && !lq_current(s, &s->lq[s->lq_head])) s->lq_head++;
  if (s->lq_head == s->lq_end) s->lq_head = s->lq_end = 0;
}

int store_evict_pick(store *s, int64_t **ids, uint64_t *nids) {
  *ids = NULL;
  *nids = 0;
  if (!s->ephemeral || !s->capacity || s->live <= s->capacity) return STORE_OK;
  uint64_t n = 0, k = s->live - s->capacity;
  if (s->evict_by == STORE_EVICT_LRU && !s->lq_lost) { /* (from the queue of uses: as many steps as stale entries and victims) */
    int64_t *out = malloc(k * sizeof *out);
    if (!out) return store_fail(s, STORE_ENOMEM, "out of memory");
    *nids = lru_pick(s, out, k);
    *ids = out;
    return STORE_OK;
  }
  life_cand *v = malloc(s->live * sizeof *v);
  int64_t *out = malloc(k * sizeof *out);
  if (!v || !out) {
    free(v);
    free(out);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  life_score_opts lo;
  life_score_opts_default(&lo);
  if (s->evict_half_life > 0) lo.half_life = s->evict_half_life;
  int64_t now = store_clock(s);
  for (uint64_t pos = 0; pos < s->ndelta; pos++) {
    const drec *d = s->delta[pos];
    if (d->dead) continue;
    double key = (double)d->used;
    if (s->evict_by == STORE_EVICT_SCORE) { /* (the values changed in place too) */
      store_view w;
      memset(&w, 0, sizeof w);
      w.importance = d->importance, w.access_count = d->access_count, w.last_access = d->last_access;
      store_patch_view(s, pos, &w);
      life_record r = {!isnan(w.importance), w.importance, 1, d->ts, w.access_count,
                       w.last_access != STORE_NULL_TIME, w.last_access};
      key = life_score(&lo, &r, now, NULL);
    }
    v[n++] = (life_cand){key, d->id, pos};
  }
  if (k > n) k = n;
  life_select_lowest(v, n, k);
  for (uint64_t i = 0; i < k; i++) out[i] = v[i].id;
  free(v);
  *ids = out;
  *nids = k;
  return STORE_OK;
}

/* Insert without the checks the public entry does. */
int store_apply_put(store *s, const store_rec *r) {
  uint64_t at;
  if (store_pos_of(s, r->id, &at)) return store_fail(s, STORE_EEXISTS, "id %lld exists", (long long)r->id);
  if (s->ndelta == s->capdelta) {
    uint64_t cap = s->capdelta ? s->capdelta * 2 : 256;
    drec **n = realloc(s->delta, cap * sizeof *n);
    if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
    s->delta = n;
    s->capdelta = cap;
  }
  if (s->in_txn && s->nul == s->capul) { /* room for the undo entry first */
    int rc = store_ul_push(s, 1, 0);
    if (rc) return rc;
    s->nul--;
  }
  if (s->expcol >= 0 && s->nxh == s->capxh) { /* room for its expiry first */
    uint64_t cap = s->capxh ? 2 * s->capxh : 256;
    struct xent *n = realloc(s->xh, cap * sizeof *n);
    if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
    s->xh = n;
    s->capxh = cap;
  }
  drec *d = drec_new(s, r);
  if (!d) return store_fail(s, STORE_ENOMEM, "out of memory");
  uint64_t pos = s->nbase + s->ndelta;
  if (idmap_put(&s->map, r->id, pos) != STORE_OK) {
    store_drec_free(d);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  s->delta[s->ndelta++] = d;
  s->live++;
  s->changes++;
  store_use(s, d, 0);
  if (r->id > s->max_id) s->max_id = r->id;
  if (s->expcol >= 0) { /* its expiry: given, or the default ttl's */
    store_val *x = &d->cv[s->expcol];
    if (!x->type && s->ttl > 0) {
      x->type = STORE_T_INTEGER;
      x->i = store_clock(s) + s->ttl;
    }
    if (x->type) xh_push(s, x->i, d->id);
  }
  store_cols_note(s, pos, 1);
  return store_ul_push(s, 1, pos);
}

int store_apply_delete(store *s, int64_t id) {
  uint64_t pos;
  if (!store_pos_of(s, id, &pos)) return store_fail(s, STORE_ENOTFOUND, "no record with id %lld", (long long)id);
  if (s->in_txn && s->nul == s->capul) {
    int rc = store_ul_push(s, 0, 0);
    if (rc) return rc;
    s->nul--;
  }
  store_cols_note(s, pos, 0);
  if (pos < s->nbase) {
    if (s->nnewdead == s->capnewdead) {
      uint64_t cap = s->capnewdead ? s->capnewdead * 2 : 64;
      uint64_t *n = realloc(s->newdead, cap * sizeof *n);
      if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
      s->newdead = n;
      s->capnewdead = cap;
    }
    s->newdead[s->nnewdead++] = pos;
    s->base_dead[pos] = 1;
  } else {
    s->delta[pos - s->nbase]->dead = 1;
  }
  idmap_del(&s->map, id); /* (a sorted base row is in no map) */
  s->live--;
  s->changes++;
  return store_ul_push(s, 0, pos);
}

static int64_t pos_id(const store *s, uint64_t pos) {
  return pos < s->nbase ? s->base_id[pos] : s->delta[pos - s->nbase]->id;
}

int64_t store_pos_id(const store *s, uint64_t pos) { return pos_id(s, pos); }

void store_undo_one(store *s, const undo *u) {
  if (u->table) {
    gstore_undo(s->g, u->table - 1, u->insert, u->pos);
    return;
  }
  if (u->insert == UNDO_PATCH) {
    store_patch_undo(s, u->pos);
    return;
  }
  s->changes++;
  if (u->insert) { /* the last delta record */
    s->reuses++;
    store_cols_note(s, s->nbase + s->ndelta - 1, 0);
    drec *d = s->delta[--s->ndelta];
    idmap_del(&s->map, d->id);
    store_drec_free(d);
    s->live--;
  } else {
    if (u->pos < s->nbase) {
      s->base_dead[u->pos] = 0;
      s->nnewdead--; /* its entry was the last */
    } else {
      s->delta[u->pos - s->nbase]->dead = 0;
    }
    if (!(s->base_sorted && u->pos < s->nbase)) { /* (a sorted base row is found in base_id) */
      int prc = idmap_put(&s->map, pos_id(s, u->pos), u->pos); /* (the slot was just freed: no growth) */
      UTIL_ASSERT(prc == STORE_OK);
    }
    s->live++;
    store_cols_note(s, u->pos, 1);
  }
}

void store_delta_free(store *s) {
  for (uint64_t i = 0; i < s->ndelta; i++) store_drec_free(s->delta[i]);
  free(s->delta);
  s->delta = NULL;
  s->ndelta = s->capdelta = 0;
  free(s->newdead);
  s->newdead = NULL;
  s->nnewdead = s->capnewdead = 0;
}

/* ---- an ephemeral store's memory given back ------------------------------------ */

/* d with the overlay's entry e folded in (a new record when its tier
** changes, the old one freed), or NULL out of memory (d kept). */
static drec *fold(store *s, drec *d, const ovent *e) {
  if (e->set & STORE_P_ACCESS_COUNT) d->access_count = e->ac;
  if (e->set & STORE_P_LAST_ACCESS) d->last_access = e->la;
  if (e->set & STORE_P_IMPORTANCE) d->importance = e->imp;
  if (!(e->set & STORE_P_TIER)) return d;
  float *emb = NULL;
  if (d->emb) { /* (drec_new takes float32) */
    if (!(emb = malloc((size_t)s->dim * sizeof *emb))) return NULL;
    if (s->storage == STORE_F32) memcpy(emb, d->emb, (size_t)s->dim * sizeof *emb);
    else k_get()->f16_to_f32((const uint16_t *)d->emb, emb, (size_t)s->dim);
  }
  store_rec r;
  memset(&r, 0, sizeof r);
  r.id = d->id, r.ts = d->ts, r.importance = d->importance;
  r.access_count = d->access_count, r.last_access = d->last_access;
  r.text = d->str[0], r.text_len = d->len[0];
  r.source = d->str[1], r.source_len = d->len[1];
  r.session = d->str[2], r.session_len = d->len[2];
  r.tags = d->str[3], r.tags_len = d->len[3];
  r.tier = e->tier, r.tier_len = e->tier_len;
  r.meta = d->str[5], r.meta_len = d->len[5];
  r.emb = emb;
  r.cols = d->cv;
  drec *n = drec_new(s, &r);
  free(emb);
  if (!n) return NULL;
  n->used = d->used;
  store_drec_free(d);
  return n;
}

int store_compact(store *s) {
  if (!s->ephemeral || s->in_txn) return STORE_OK;
  /* the overlay's values into the records first (it is keyed by position) */
  for (uint64_t i = 0; s->nov && i < s->ndelta; i++) {
    const ovent *e = store_patch_at(s, i);
    if (!e || s->delta[i]->dead) continue;
    drec *n = fold(s, s->delta[i], e);
    if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
    s->delta[i] = n;
  }
  store_patch_clear(s);
  uint64_t j = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    if (s->delta[i]->dead) store_drec_free(s->delta[i]);
    else s->delta[j++] = s->delta[i];
  }
  s->ndelta = j;
  idmap_clear(&s->map); /* (it held every live id: putting them again never allocates) */
  for (uint64_t i = 0; i < j; i++) {
    int rc = idmap_put(&s->map, s->delta[i]->id, i);
    UTIL_ASSERT(rc == STORE_OK);
  }
  if (s->capdelta > 2 * j + 256) { /* the array shrunk with the records */
    drec **n = realloc(s->delta, (j + 256) * sizeof *n);
    if (n) {
      s->delta = n;
      s->capdelta = j + 256;
    }
  }
  /* what is kept by position is made again when next needed */
  store_cols_positions_moved(s);
  for (int k = 0; k < 6; k++) store_codes_free(&s->sc[k]);
  free(s->tsc);
  s->tsc = NULL;
  store_time_free(s);
  s->reuses++;
  s->changes++;
  gstore_rebase(s->g);
  return STORE_OK;
}
