/*
** lib/store/store_delta.c - the delta: records added since the checkpoint,
** in memory; applying a put or a delete, and the undo list that takes
** the open transaction's changes back.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "k.h"
#include "store_int.h"
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

/* Insert without the checks the public entry does. */
int store_apply_put(store *s, const store_rec *r) {
  if (idmap_slot(&s->map, r->id)) return store_fail(s, STORE_EEXISTS, "id %lld exists", (long long)r->id);
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
  if (r->id > s->max_id) s->max_id = r->id;
  store_cols_note(s, pos, 1);
  return store_ul_push(s, 1, pos);
}

int store_apply_delete(store *s, int64_t id) {
  uint64_t *v = idmap_slot(&s->map, id);
  if (!v) return store_fail(s, STORE_ENOTFOUND, "no record with id %lld", (long long)id);
  uint64_t pos = *v;
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
  idmap_del(&s->map, id);
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
    int prc = idmap_put(&s->map, pos_id(s, u->pos), u->pos); /* (the slot was just freed: no growth) */
    UTIL_ASSERT(prc == STORE_OK);
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
