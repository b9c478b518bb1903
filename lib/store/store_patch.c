/*
** lib/store/store_patch.c - changes in place: access_count, last_access,
** importance and tier of a record set without writing the record again
** (store_update; docs/FORMAT.md, "Changes in place").
**
** The new values of a record live in the overlay, one entry per position
** patched since the checkpoint (base row or record in memory), found
** through an index by position (8 bytes a position, grown as positions
** are patched; its pages are touched only where patched).  An entry holds the fields set
** so far (the union of its patches' bits) and their latest values;
** store_get reads them over the record's.  In a transaction each patch
** pushes an undo entry (kind UNDO_PATCH) and the entry's previous state
** onto a stack of its own, in the same order, so undoing is a pop.  The
** log op is the entry as it is when the frame is built ('U', the id, the
** bits, the values): replaying it sets the same values, so two patches of
** one record in a transaction write the same op twice, and nothing
** depends on the order of ops of the same position.
**
** A checkpoint writes the records in memory with their entries applied
** (store_patch_value) and the base rows' entries over the columns' chunks
** (h5w_rewrite_rows: only the chunks holding a patched row, copied past
** the end of the file), then empties the overlay.
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "store_int.h"
#include "util/check.h"

static ovent *ov_get(const store *s, uint64_t pos) {
  return pos < s->capix && s->ovix[pos] ? &s->ov[s->ovix[pos] - 1] : NULL;
}

/* Room in the index for position pos (zeroed: no entry). */
static int ix_room(store *s, uint64_t pos) {
  if (pos < s->capix) return STORE_OK;
  uint64_t cap = s->capix ? 2 * s->capix : 1024;
  if (cap < store_npos(s)) cap = store_npos(s);
  if (cap <= pos) cap = pos + 1;
  /* (calloc's pages of zeros are mapped lazily: a few touches of a large
  ** store touch a few pages) */
  uint64_t *n = s->ovix ? realloc(s->ovix, cap * sizeof *n) : calloc(cap, sizeof *n);
  if (!n) return STORE_ENOMEM;
  if (s->ovix) memset(n + s->capix, 0, (cap - s->capix) * sizeof *n);
  s->ovix = n;
  s->capix = cap;
  return STORE_OK;
}

const ovent *store_patch_at(const store *s, uint64_t pos) { return s->nov ? ov_get(s, pos) : NULL; }

void store_patch_view(const store *s, uint64_t pos, store_view *v) {
  const ovent *e = store_patch_at(s, pos);
  if (!e) return;
  if ((v->have & STORE_V_NUM) && (e->set & STORE_P_ACCESS_COUNT)) v->access_count = e->ac;
  if ((v->have & STORE_V_NUM) && (e->set & STORE_P_LAST_ACCESS)) v->last_access = e->la;
  if ((v->have & STORE_V_NUM) && (e->set & STORE_P_IMPORTANCE)) v->importance = e->imp;
  if ((v->have & STORE_V_TIER) && (e->set & STORE_P_TIER)) {
    v->tier = e->tier;
    v->tier_len = e->tier_len;
  }
}

/* The overlay's copy of the tier (p, n): one per distinct string since
** the checkpoint (a consolidation moves a million records to the same
** tier: one string, not a million), kept until the overlay empties, so
** that entries and undo states point to it without owning it.  NULL when
** out of memory. */
static const char *intern(store *s, const char *p, size_t n) {
  ovstrs *t = &s->ovs;
  uint64_t h = XXH3_64bits(p, n);
  if (2 * (t->n + 1) > t->cap) {
    ovstrs g = {NULL, NULL, NULL, t->cap ? 2 * t->cap : 16, t->n};
    g.v = calloc(g.cap, sizeof *g.v);
    g.len = malloc(g.cap * sizeof *g.len);
    g.h = malloc(g.cap * sizeof *g.h);
    if (!g.v || !g.len || !g.h) {
      free(g.v);
      free(g.len);
      free(g.h);
      return NULL;
    }
    for (uint64_t i = 0; i < t->cap; i++) {
      if (!t->v[i]) continue;
      uint64_t j = t->h[i] & (g.cap - 1);
      while (g.v[j]) j = (j + 1) & (g.cap - 1);
      g.v[j] = t->v[i];
      g.len[j] = t->len[i];
      g.h[j] = t->h[i];
    }
    free(t->v);
    free(t->len);
    free(t->h);
    *t = g;
  }
  uint64_t j = h & (t->cap - 1);
  for (; t->v[j]; j = (j + 1) & (t->cap - 1))
    if (t->h[j] == h && t->len[j] == n && !memcmp(t->v[j], p, n)) return t->v[j];
  char *c = malloc(n + 1);
  if (!c) return NULL;
  memcpy(c, p, n);
  c[n] = 0;
  t->v[j] = c;
  t->len[j] = n;
  t->h[j] = h;
  t->n++;
  return c;
}

static void intern_free(store *s) {
  for (uint64_t i = 0; i < s->ovs.cap; i++) free(s->ovs.v[i]);
  free(s->ovs.v);
  free(s->ovs.len);
  free(s->ovs.h);
  memset(&s->ovs, 0, sizeof s->ovs);
}

/* Set the fields of p on the entry of pos (made when missing), keeping the
** entry's previous state on the undo stack when in a transaction.  All
** that can fail comes first: then nothing has changed. */
static int apply(store *s, uint64_t pos, const store_patch *p) {
  const char *tier = NULL;
  ovent *e = ov_get(s, pos);
  int rc = STORE_OK;
  if ((p->set & STORE_P_TIER) && p->tier && !(tier = intern(s, p->tier, p->tier_len))) rc = STORE_ENOMEM;
  if (!rc && s->nov == s->capov) {
    uint64_t cap = s->capov ? 2 * s->capov : 64;
    ovent *n = realloc(s->ov, cap * sizeof *n);
    if (!n) rc = STORE_ENOMEM;
    else s->ov = n, s->capov = cap;
    e = ov_get(s, pos); /* (the array moved) */
  }
  if (!rc && s->in_txn && s->novundo == s->capovundo) {
    uint64_t cap = s->capovundo ? 2 * s->capovundo : 64;
    ovundo *n = realloc(s->ovundo, cap * sizeof *n);
    if (!n) rc = STORE_ENOMEM;
    else s->ovundo = n, s->capovundo = cap;
  }
  if (!rc && !e) rc = ix_room(s, pos);
  if (!rc && s->in_txn) rc = store_ul_push(s, UNDO_PATCH, pos);
  if (rc) return rc == STORE_ENOMEM ? store_fail(s, STORE_ENOMEM, "out of memory") : rc;
  if (s->in_txn) {
    ovundo *u = &s->ovundo[s->novundo++];
    memset(u, 0, sizeof *u);
    u->had = e != NULL;
    if (e) u->old = *e;
  }
  if (!e) {
    e = &s->ov[s->nov++];
    memset(e, 0, sizeof *e);
    e->pos = pos;
    s->ovix[pos] = s->nov;
  }
  if (p->set & STORE_P_ACCESS_COUNT) e->ac = p->access_count;
  if (p->set & STORE_P_LAST_ACCESS) e->la = p->last_access;
  if (p->set & STORE_P_IMPORTANCE) e->imp = p->importance;
  if (p->set & STORE_P_TIER) {
    e->tier = tier;
    e->tier_len = tier ? p->tier_len : 0;
    s->ov_tier_ver++;
  }
  e->set |= p->set;
  return STORE_OK;
}

int store_patch_apply(store *s, int64_t id, const store_patch *p) {
  uint64_t pos;
  if (!store_pos_of(s, id, &pos)) return store_fail(s, STORE_ENOTFOUND, "no record with id %lld", (long long)id);
  return apply(s, pos, p);
}

/* store_update's checks of p. */
static int check(store *s, const store_patch *p) {
  if (!s->in_txn) return store_fail(s, STORE_EINVAL, "no transaction is open");
  if (p->set & ~(unsigned)(STORE_P_ACCESS_COUNT | STORE_P_LAST_ACCESS | STORE_P_IMPORTANCE | STORE_P_TIER))
    return store_fail(s, STORE_EINVAL, "store_update: unknown fields 0x%x", p->set);
  if ((p->set & STORE_P_IMPORTANCE) && !isnan(p->importance) && !isfinite(p->importance))
    return store_fail(s, STORE_EINVAL, "importance: not a finite number");
  if ((p->set & STORE_P_TIER) && store_str_check(s, "tier", p->tier, p->tier_len)) return STORE_EINVAL;
  return STORE_OK;
}

int store_update(store *s, int64_t id, const store_patch *p) {
  int rc = check(s, p);
  return rc ? rc : store_patch_apply(s, id, p);
}

int store_update_at(store *s, uint64_t pos, const store_patch *p) {
  int rc = check(s, p);
  if (rc) return rc;
  if (pos >= store_npos(s) || !store_pos_live(s, pos))
    return store_fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
  return apply(s, pos, p);
}

void store_patch_undo(store *s, uint64_t pos) {
  UTIL_ASSERT(s->novundo > 0);
  ovundo *u = &s->ovundo[--s->novundo];
  ovent *e = ov_get(s, pos);
  UTIL_ASSERT(e != NULL);
  if (!e) return;
  if ((e->set & STORE_P_TIER) || (u->had && (u->old.set & STORE_P_TIER))) s->ov_tier_ver++;
  if (u->had) {
    *e = u->old;
    return;
  }
  /* made by this patch: the last entry (undo goes in reverse) */
  UTIL_ASSERT(e == &s->ov[s->nov - 1]);
  s->ovix[pos] = 0;
  s->nov--;
}

void store_patch_commit(store *s) { s->novundo = 0; }

void store_patch_free(store *s) {
  free(s->ov);
  free(s->ovundo);
  s->ov = NULL;
  s->ovundo = NULL;
  s->nov = s->capov = s->novundo = s->capovundo = 0;
  free(s->ovix);
  s->ovix = NULL;
  s->capix = 0;
  intern_free(s);
  s->ov_tier_ver++;
}

void store_patch_clear(store *s) {
  UTIL_ASSERT(s->novundo == 0);
  s->nov = 0;
  free(s->ovix);
  s->ovix = NULL;
  s->capix = 0;
  intern_free(s);
  s->ov_tier_ver++;
}

/* ---- the log ------------------------------------------------------------------ */

int store_patch_encode(const store *s, uint64_t pos, int (*put)(void *ctx, const void *p, size_t n),
                       void *ctx) {
  const ovent *e = ov_get(s, pos);
  if (!e) return 0; /* (an entry undone: nothing to say) */
  int64_t id = store_pos_id(s, pos);
  uint8_t set = (uint8_t)e->set;
  int bad = put(ctx, "U", 1) | put(ctx, &id, 8) | put(ctx, &set, 1);
  if (set & STORE_P_ACCESS_COUNT) bad |= put(ctx, &e->ac, 8);
  if (set & STORE_P_LAST_ACCESS) bad |= put(ctx, &e->la, 8);
  if (set & STORE_P_IMPORTANCE) bad |= put(ctx, &e->imp, 8);
  if (set & STORE_P_TIER) {
    uint32_t n = e->tier ? (uint32_t)e->tier_len : UINT32_MAX;
    bad |= put(ctx, &n, 4);
    if (e->tier) bad |= put(ctx, e->tier, e->tier_len);
  }
  return bad;
}

/* ---- the checkpoint ---------------------------------------------------------- */

static int by_pos(const void *a, const void *b) {
  uint64_t x = (*(const ovent *const *)a)->pos, y = (*(const ovent *const *)b)->pos;
  return x < y ? -1 : x > y;
}

int store_patch_write(store *s, h5w *w) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < s->nov; i++) n += s->ov[i].pos < s->nbase && !s->base_dead[s->ov[i].pos];
  if (!n) return STORE_OK;
  const ovent **es = malloc(n * sizeof *es);
  uint64_t *rows = malloc(n * sizeof *rows);
  uint8_t *vals = calloc(n, 16);
  int rc = es && rows && vals ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  uint64_t j = 0;
  for (uint64_t i = 0; rc == STORE_OK && i < s->nov; i++)
    if (s->ov[i].pos < s->nbase && !s->base_dead[s->ov[i].pos]) es[j++] = &s->ov[i];
  if (rc == STORE_OK) qsort(es, n, sizeof *es, by_pos);
  static const struct {
    unsigned bit;
    int col;
  } cols[4] = {{STORE_P_ACCESS_COUNT, C_ACCESS_COUNT},
               {STORE_P_LAST_ACCESS, C_LAST_ACCESS},
               {STORE_P_IMPORTANCE, C_IMPORTANCE},
               {STORE_P_TIER, C_TIER}};
  for (int c = 0; rc == STORE_OK && c < 4; c++) {
    size_t esz = s->col[cols[c].col].rowbytes;
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
      const ovent *e = es[i];
      if (!(e->set & cols[c].bit)) continue;
      rows[m] = e->pos;
      uint8_t *p = vals + m * esz;
      memset(p, 0, esz);
      switch (cols[c].bit) {
      case STORE_P_ACCESS_COUNT: memcpy(p, &e->ac, 8); break;
      case STORE_P_LAST_ACCESS: memcpy(p, &e->la, 8); break;
      case STORE_P_IMPORTANCE: memcpy(p, &e->imp, 8); break;
      default: memcpy(p, &e->tier, sizeof e->tier); /* (a string's slot: the pointer first) */
      }
      m++;
    }
    if (!m) continue;
    char path[64];
    snprintf(path, sizeof path, "/memories/%s", store_col_name[cols[c].col]);
    h5w_obj *d;
    if (h5w_lookup(w, path, &d) != H5_OK || h5w_rewrite_rows(w, d, rows, vals, m) != H5_OK)
      rc = store_wfail(s, w, "checkpoint of");
  }
  free(es);
  free(rows);
  free(vals);
  return rc;
}
