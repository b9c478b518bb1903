/*
** lib/store/store_sign.c - a record's leaf for signed checkpoints (issue 25,
** work in progress on branch wip/sign-leaves; not yet on main).
**
** Leaf of a live row: BLAKE2b-256 (libsodium's crypto_generichash, 32
** bytes, no key) of "h5mem-leaf-v1" and a NUL, then, little-endian:
**   id, ts, access_count, last_access   int64 (last_access NULL: INT64_MIN)
**   importance                          float64 (NULL: the NaN 0x7ff8000000000000)
**   text, source, session, tags, tier, meta
**                                       u32 length, the bytes (NULL: length 0)
**   the embedding                       u8 1 and its dim x (2 or 4) bytes as
**                                       stored, or u8 0 when it has none
**   each declared column, in order:     integer int64 (NULL INT64_MIN); float
**                                       float64 (NULL the NaN above); boolean
**                                       int8 (NULL -1); text, blob: u32 length
**                                       and bytes (NULL: 0); a vector: u8 1
**                                       and its bytes, or u8 0 when NULL
** Leaf of a dead row: BLAKE2b-256 of "h5mem-dead-v1", a NUL, the id (int64).
**
** The root over leaves in row order: each level pairs its nodes, a pair
** becoming BLAKE2b-256 of "h5mem-node-v1", a NUL, the left and the right
** node; a level's odd last node goes up as it is; the root is the one
** node left.  No rows: BLAKE2b-256 of "h5mem-empty-v1" and a NUL.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#ifdef HAVE_LIBSODIUM
#include <sodium.h>

typedef crypto_generichash_state hstate;

static void put(hstate *h, const void *p, size_t n) { crypto_generichash_update(h, p, n); }

static void put_i64(hstate *h, int64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (8 * i));
  put(h, b, 8);
}

static void put_f64(hstate *h, double v) {
  uint64_t u = 0x7ff8000000000000ull;
  if (!isnan(v)) memcpy(&u, &v, 8);
  put_i64(h, (int64_t)u);
}

static void put_str(hstate *h, const void *p, size_t n) {
  if (!p) n = 0;
  uint8_t b[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24)};
  put(h, b, 4);
  if (n) put(h, p, n);
}

int store_leaf(store *s, uint64_t pos, uint8_t out[32]) {
  if (sodium_init() < 0) return STORE_EUNSUPPORTED;
  hstate h;
  crypto_generichash_init(&h, NULL, 0, 32);
  if (!store_pos_live(s, pos)) {
    put(&h, "h5mem-dead-v1", 14);
    put_i64(&h, store_pos_id(s, pos));
    crypto_generichash_final(&h, out, 32);
    return STORE_OK;
  }
  store_view v;
  memset(&v, 0, sizeof v);
  int rc = store_get(s, pos, STORE_V_ALL, &v);
  if (rc) return rc;
  put(&h, "h5mem-leaf-v1", 14);
  put_i64(&h, v.id);
  put_i64(&h, v.ts);
  put_i64(&h, v.access_count);
  put_i64(&h, v.last_access);
  put_f64(&h, v.importance);
  put_str(&h, v.text, v.text_len);
  put_str(&h, v.source, v.source_len);
  put_str(&h, v.session, v.session_len);
  put_str(&h, v.tags, v.tags_len);
  put_str(&h, v.tier, v.tier_len);
  put_str(&h, v.meta, v.meta_len);
  uint8_t has = v.emb != NULL;
  put(&h, &has, 1);
  if (has) put(&h, v.emb, (size_t)s->dim * (size_t)s->storage);
  for (int c = 0; c < s->ncols; c++) {
    store_val x;
    if ((rc = store_get_col(s, pos, c, &x))) return rc;
    switch (s->cdef[c].type) {
    case STORE_T_INTEGER: put_i64(&h, x.type ? x.i : INT64_MIN); break;
    case STORE_T_FLOAT: put_f64(&h, x.type ? x.f : NAN); break;
    case STORE_T_BOOLEAN: {
      int8_t b = x.type ? (int8_t)(x.i != 0) : -1;
      put(&h, &b, 1);
      break;
    }
    case STORE_T_TEXT:
    case STORE_T_BLOB: put_str(&h, x.type ? x.p : NULL, x.n); break;
    default: { /* a vector */
      uint8_t present = x.type != 0;
      put(&h, &present, 1);
      if (present) put(&h, x.p, x.n);
    }
    }
  }
  crypto_generichash_final(&h, out, 32);
  return STORE_OK;
}

int store_merkle_root(const uint8_t *leaves, uint64_t n, uint8_t out[32]) {
  if (sodium_init() < 0) return STORE_EUNSUPPORTED;
  if (!n) {
    crypto_generichash(out, 32, (const uint8_t *)"h5mem-empty-v1", 15, NULL, 0);
    return STORE_OK;
  }
  uint8_t *lv = malloc((size_t)n * 32);
  if (!lv) return STORE_ENOMEM;
  memcpy(lv, leaves, (size_t)n * 32);
  while (n > 1) {
    uint64_t m = 0;
    for (uint64_t i = 0; i + 1 < n; i += 2, m++) {
      hstate h;
      crypto_generichash_init(&h, NULL, 0, 32);
      put(&h, "h5mem-node-v1", 14);
      put(&h, lv + i * 32, 64);
      crypto_generichash_final(&h, lv + m * 32, 32);
    }
    if (n % 2) memmove(lv + m++ * 32, lv + (n - 1) * 32, 32);
    n = m;
  }
  memcpy(out, lv, 32);
  free(lv);
  return STORE_OK;
}

#else

int store_merkle_root(const uint8_t *leaves, uint64_t n, uint8_t out[32]) {
  (void)leaves, (void)n, (void)out;
  return STORE_EUNSUPPORTED;
}

int store_leaf(store *s, uint64_t pos, uint8_t out[32]) {
  (void)s, (void)pos, (void)out;
  return STORE_EUNSUPPORTED;
}

#endif
