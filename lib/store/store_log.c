/*
** lib/store/store_log.c - the log's frames: a transaction encoded as a
** frame, and a frame replayed into the delta (wal.h; docs/FORMAT.md).
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "k.h"
#include "util/utf8.h"
#include "store_int.h"

/* ---- the log's frames --------------------------------------------------------- */

/* A transaction as a frame: 'P' + a record, 'D' + an id, 'U' + a patch
** (store_patch.c), the graph's ops, in order. */
static int frame_put(store *s, const void *p, size_t n) {
  if (s->frame_len + n > s->frame_cap) {
    size_t cap = s->frame_cap ? s->frame_cap : 4096;
    while (cap < s->frame_len + n) cap *= 2;
    uint8_t *b = realloc(s->frame, cap);
    if (!b) return -1;
    s->frame = b;
    s->frame_cap = cap;
  }
  memcpy(s->frame + s->frame_len, p, n);
  s->frame_len += n;
  return 0;
}

static int frame_u32(store *s, uint32_t v) { return frame_put(s, &v, 4); }
static int frame_cb(void *ctx, const void *p, size_t n) { return frame_put(ctx, p, n); }
static int frame_i64(store *s, int64_t v) { return frame_put(s, &v, 8); }

/* The delta record d as a put ('P'). */
static int frame_rec(store *s, const drec *d) {
  uint8_t has_emb = d->emb != NULL;
  int bad = frame_put(s, "P", 1) | frame_i64(s, d->id) | frame_i64(s, d->ts) |
            frame_i64(s, d->access_count) | frame_i64(s, d->last_access) |
            frame_put(s, &d->importance, 8) | frame_put(s, &has_emb, 1);
  for (int k = 0; k < 6; k++) {
    if (!d->str[k]) {
      bad |= frame_u32(s, UINT32_MAX);
    } else {
      bad |= frame_u32(s, (uint32_t)d->len[k]) | frame_put(s, d->str[k], d->len[k]);
    }
  }
  if (has_emb) bad |= frame_put(s, d->emb, (size_t)s->dim * (size_t)s->storage);
  if (s->ncols) bad |= store_cols_encode(s, d, frame_cb, s); /* (the declared columns) */
  return bad;
}

int store_frame_build(store *s) {
  s->frame_len = 0;
  int bad = 0;
  for (uint64_t i = 0; i < s->nul && !bad; i++) {
    const undo *u = &s->ul[i];
    if (u->table) {
      bad |= gstore_encode(s->g, u->table - 1, u->insert, u->pos, frame_cb, s);
      continue;
    }
    if (u->insert == UNDO_PATCH) {
      bad |= store_patch_encode(s, u->pos, frame_cb, s);
      continue;
    }
    if (!u->insert) {
      bad |= frame_put(s, "D", 1) | frame_i64(s, store_pos_id(s, u->pos));
      continue;
    }
    bad |= frame_rec(s, s->delta[u->pos - s->nbase]);
  }
  return bad ? store_fail(s, STORE_ENOMEM, "out of memory") : STORE_OK;
}

int store_frame_delete(store *s, int64_t id) {
  return frame_put(s, "D", 1) | frame_i64(s, id) ? store_fail(s, STORE_ENOMEM, "out of memory") : STORE_OK;
}

int store_snapshot_build(store *s, size_t hint) {
  s->frame_len = 0;
  int bad = 0;
  if (hint > s->frame_cap) { /* (room at once: a copy at each doubling would cost more than the build) */
    uint8_t *b = realloc(s->frame, hint);
    if (b) {
      s->frame = b;
      s->frame_cap = hint;
    }
  }
  for (uint64_t i = 0; i < s->ndelta && !bad; i++) { /* (an ephemeral store has no base) */
    if (s->delta[i]->dead) continue;
    bad |= frame_rec(s, s->delta[i]);
    bad |= store_patch_encode(s, s->nbase + i, frame_cb, s); /* (its changes, if any) */
  }
  /* the entities before the relations and mentions that name them */
  for (int t = 0; t < STORE_G_NTABLES && !bad; t++) {
    uint64_t n = store_g_npos(s, t);
    for (uint64_t pos = 0; pos < n && !bad; pos++) {
      store_grec r;
      if (store_g_get(s, t, pos, &r) == STORE_OK) bad |= gstore_encode(s->g, t, 1, pos, frame_cb, s);
    }
  }
  return bad ? store_fail(s, STORE_ENOMEM, "out of memory") : STORE_OK;
}

/* Apply one frame of the log. */
typedef struct rd_frame {
  const uint8_t *p, *end;
  int bad;
} rd_frame;

static const uint8_t *take(rd_frame *r, size_t n) {
  if (r->bad || (size_t)(r->end - r->p) < n) {
    r->bad = 1;
    return NULL;
  }
  const uint8_t *q = r->p;
  r->p += n;
  return q;
}

static int64_t take_i64(rd_frame *r) {
  const uint8_t *q = take(r, 8);
  return q ? store_get_i64(q) : 0;
}

int store_replay_frame(void *ctx, uint64_t seq, const uint8_t *p, size_t len) {
  store *s = ctx;
  if (seq <= s->ckpt_seq) return 0; /* already in the file */
  rd_frame r = {p, p + len, 0};
  float *emb = NULL;
  store_val *cv = s->ncols ? calloc((size_t)s->ncols, sizeof *cv) : NULL;
  int rc = s->ncols && !cv ? store_fail(s, STORE_ENOMEM, "out of memory") : 0;
  while (!rc && r.p < r.end) {
    const uint8_t *op = take(&r, 1);
    if (!op) break;
    if (*op == 'D') {
      int64_t id = take_i64(&r);
      if (!r.bad) rc = store_apply_delete(s, id);
      /* (an ephemeral store's handle expires records on its own clock: one
         may be gone here that the writer deleted or changed) */
      if (rc == STORE_ENOTFOUND && s->ephemeral) rc = STORE_OK;
      continue;
    }
    if (gstore_is_op(*op)) {
      int gr = gstore_replay(s->g, *op, &r.p, r.end);
      if (gr == STORE_ECORRUPT) r.bad = 1;
      else if (gr) rc = store_fail(s, gr == STORE_EINVAL ? STORE_ECORRUPT : gr,
                             "%s: log frame %llu: a graph change does not apply (%s)",
                             s->walpath, (unsigned long long)seq,
                             gr == STORE_EEXISTS ? "id taken" : gr == STORE_ENOTFOUND ? "no such id"
                             : gr == STORE_EINVAL ? "a string is not UTF-8 or holds a NUL byte"
                                                  : "out of memory");
      continue;
    }
    if (*op == 'U') { /* id, bits, then the values the bits name */
      store_patch pa;
      memset(&pa, 0, sizeof pa);
      int64_t id = take_i64(&r);
      const uint8_t *b = take(&r, 1);
      if (!b) break;
      pa.set = *b;
      if (pa.set & ~(unsigned)(STORE_P_ACCESS_COUNT | STORE_P_LAST_ACCESS | STORE_P_IMPORTANCE | STORE_P_TIER)) {
        r.bad = 1;
        break;
      }
      if (pa.set & STORE_P_ACCESS_COUNT) pa.access_count = take_i64(&r);
      if (pa.set & STORE_P_LAST_ACCESS) pa.last_access = take_i64(&r);
      if (pa.set & STORE_P_IMPORTANCE) {
        const uint8_t *q = take(&r, 8);
        if (q) memcpy(&pa.importance, q, 8);
      }
      if (pa.set & STORE_P_TIER) {
        const uint8_t *lq = take(&r, 4);
        uint32_t n = 0;
        if (lq) memcpy(&n, lq, 4);
        if (lq && n != UINT32_MAX) {
          pa.tier = (const char *)take(&r, n);
          pa.tier_len = n;
        }
      }
      if (r.bad) break;
      size_t bad = pa.tier ? util_utf8_check(pa.tier, pa.tier_len, 0) : 0;
      if (pa.tier && bad != pa.tier_len)
        rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu: record %lld: tier: %s at byte %zu", s->walpath,
                        (unsigned long long)seq, (long long)id, pa.tier[bad] ? "invalid UTF-8" : "a NUL byte", bad);
      else if ((pa.set & STORE_P_IMPORTANCE) && !isnan(pa.importance) && !isfinite(pa.importance))
        rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu: record %lld: importance is not finite",
                        s->walpath, (unsigned long long)seq, (long long)id);
      else if ((rc = store_patch_apply(s, id, &pa)) == STORE_ENOTFOUND && s->ephemeral)
        rc = STORE_OK;
      else if (rc == STORE_ENOTFOUND)
        rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu: a change of record %lld, which is not there",
                        s->walpath, (unsigned long long)seq, (long long)id);
      continue;
    }
    if (*op != 'P') {
      r.bad = 1;
      break;
    }
    store_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.id = take_i64(&r);
    rec.ts = take_i64(&r);
    rec.access_count = take_i64(&r);
    rec.last_access = take_i64(&r);
    const uint8_t *q = take(&r, 8);
    if (q) memcpy(&rec.importance, q, 8);
    const uint8_t *he = take(&r, 1);
    const char **sp[6] = {&rec.text, &rec.source, &rec.session, &rec.tags, &rec.tier, &rec.meta};
    size_t *lp[6] = {&rec.text_len, &rec.source_len, &rec.session_len, &rec.tags_len, &rec.tier_len, &rec.meta_len};
    for (int k = 0; k < 6 && !r.bad; k++) {
      const uint8_t *lq = take(&r, 4);
      if (!lq) break;
      uint32_t n;
      memcpy(&n, lq, 4);
      if (n == UINT32_MAX) continue;
      *sp[k] = (const char *)take(&r, n);
      *lp[k] = n;
    }
    if (r.bad) break;
    /* a frame holds what store_put accepted: anything else was not
    ** written by h5mem, and must not reach the file */
    for (int k = 0; k < 6 && !rc; k++) {
      size_t bad = *sp[k] ? util_utf8_check(*sp[k], *lp[k], 0) : 0;
      if (*sp[k] && bad != *lp[k])
        rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu: record %lld: %s: %s at byte %zu",
                  s->walpath, (unsigned long long)seq, (long long)rec.id, store_col_name[store_str_cols[k]],
                  (*sp[k])[bad] ? "invalid UTF-8" : "a NUL byte", bad);
    }
    if (rc) break;
    if (*he) {
      const uint8_t *e = take(&r, (size_t)s->dim * (size_t)s->storage);
      if (!e) break;
      /* room for the floats and, after them, an aligned copy of f16 values:
      ** in the frame they follow strings of any length, on no boundary */
      if (!emb && !(emb = malloc((size_t)s->dim * 6))) {
        rc = store_fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      if (s->storage == STORE_F32) {
        memcpy(emb, e, (size_t)s->dim * 4);
      } else {
        uint16_t *h = (uint16_t *)(void *)(emb + s->dim);
        memcpy(h, e, (size_t)s->dim * 2);
        k_get()->f16_to_f32(h, emb, (size_t)s->dim);
      }
      rec.emb = emb;
    }
    if (s->ncols) {
      char cerr[400];
      int cr = store_cols_decode(s, &r.p, r.end, cv, cerr, sizeof cerr);
      if (cr == STORE_ECORRUPT && !cerr[0]) {
        r.bad = 1;
        break;
      }
      if (cr) {
        rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu: record %lld: %s", s->walpath,
                        (unsigned long long)seq, (long long)rec.id, cerr);
        break;
      }
      rec.cols = cv;
      /* an ephemeral store's key still held here by a record the writer
         had expired already: the writer's view wins */
      uint64_t kpos;
      int kc = s->ephemeral ? store_pk_col(s) : -1;
      if (kc >= 0 && cv[kc].type && store_pkey_find(s, cv[kc].p, cv[kc].n, &kpos) == STORE_OK)
        store_gone_id(s, store_pos_id(s, kpos));
    }
    rc = store_apply_put(s, &rec);
  }
  free(emb);
  free(cv);
  if (!rc && r.bad)
    rc = store_fail(s, STORE_ECORRUPT, "%s: log frame %llu does not decode", s->walpath,
              (unsigned long long)seq);
  s->replay_rc = rc;
  return rc ? 1 : 0;
}
