/*
** lib/store/store_read.c - reading records by position, in the base or
** the delta: store_get, the embeddings, string columns as codes, the ts
** column, live bits, the text of a record.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store_int.h"

const void *store_emb_block(const store *s, uint64_t pos, uint64_t *count) {
  if (pos >= s->nbase) {
    *count = 1;
    pos -= s->nbase;
    if (pos >= s->ndelta || s->delta[pos]->dead) return NULL;
    return s->delta[pos]->emb;
  }
  const bcol *c = &s->col[C_EMB];
  uint64_t k = pos / c->crows, in = pos % c->crows, n = c->crows - in;
  if (pos + n > s->nbase) n = s->nbase - pos;
  if (n > *count) n = *count;
  *count = n;
  if (k >= c->nchunks || c->caddr[k] == UINT64_MAX) return NULL;
  return h5_file_span(s->f, c->caddr[k] + in * c->rowbytes, n * c->rowbytes);
}

int store_pos_live(const store *s, uint64_t pos) {
  if (pos < s->nbase) return !s->base_dead[pos];
  pos -= s->nbase;
  return pos < s->ndelta && !s->delta[pos]->dead;
}

int store_pos_of(const store *s, int64_t id, uint64_t *pos) {
  const uint64_t *v = idmap_slot(&s->map, id);
  if (v) {
    *pos = *v;
    return 1;
  }
  if (!s->base_sorted || !s->base_id) return 0;
  uint64_t lo = 0, hi = s->nbase;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (s->base_id[mid] < id) lo = mid + 1;
    else hi = mid;
  }
  if (lo == s->nbase || s->base_id[lo] != id || s->base_dead[lo]) return 0;
  *pos = lo;
  return 1;
}

int store_find(const store *s, int64_t id, uint64_t *pos) {
  return store_pos_of(s, id, pos) ? STORE_OK : STORE_ENOTFOUND;
}

int64_t store_get_i64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

int store_row_strings_agree(store *s, uint64_t pos) {
  for (int k = 0; k < 6; k++) {
    const uint8_t *p = store_base_row(s, store_str_cols[k], pos), *data;
    size_t len;
    uint32_t cnt;
    if (!p || h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK || (data && cnt != len)) return 0;
  }
  return store_cols_strings_agree(s, pos);
}

int store_get(store *s, uint64_t pos, unsigned want, store_view *v) {
  if (!store_pos_live(s, pos) && !((want & STORE_V_FILE) && pos < s->nbase))
    return store_fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
  const char **sp[6] = {&v->text, &v->source, &v->session, &v->tags, &v->tier, &v->meta};
  size_t *lp[6] = {&v->text_len, &v->source_len, &v->session_len, &v->tags_len, &v->tier_len, &v->meta_len};
  if (pos >= s->nbase) {
    drec *d = s->delta[pos - s->nbase];
    if (s->ephemeral) store_use(s, d, 1); /* (a use: the least recently used go first) */
    v->id = d->id;
    for (int k = 0; k < 6; k++) {
      *sp[k] = d->str[k];
      *lp[k] = d->len[k];
    }
    v->emb = d->emb;
    v->ts = d->ts;
    v->importance = d->importance;
    v->access_count = d->access_count;
    v->last_access = d->last_access;
    v->have = STORE_V_ALL;
    store_patch_view(s, pos, v);
    return STORE_OK;
  }
  /* base rows: only the columns asked for, so a query touches only their
  ** pages of the mapped file */
  v->id = s->base_id[pos];
  want &= ~v->have;
  const uint8_t *p;
#define ROW(col)                                                                            \
  if (!(p = store_base_row(s, col, pos)))                                                         \
    return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s lies outside the file", \
                s->path, (unsigned long long)pos, store_col_name[col]);
  for (int k = 0; k < 6; k++) {
    if (!(want & (1u << k))) continue;
    ROW(store_str_cols[k]);
    const uint8_t *data;
    size_t len;
    uint32_t cnt;
    if (h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK)
      return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s: %s", s->path,
                  (unsigned long long)pos, store_col_name[store_str_cols[k]], h5_errmsg(s->f));
    *sp[k] = (const char *)data; /* NULL for a NULL string */
    *lp[k] = len;
  }
  if (want & STORE_V_EMB) {
    ROW(C_EMB);
    v->emb = p;
    /* a record without an embedding stores NaN in its first element */
    if (ann_row_missing(s->storage == STORE_F32 ? ANN_F32 : ANN_F16, p)) v->emb = NULL;
  }
  if (want & STORE_V_NUM) {
    ROW(C_TS);
    v->ts = store_get_i64(p);
    ROW(C_IMPORTANCE);
    memcpy(&v->importance, p, 8);
    ROW(C_ACCESS_COUNT);
    v->access_count = store_get_i64(p);
    ROW(C_LAST_ACCESS);
    v->last_access = store_get_i64(p);
  }
#undef ROW
  v->have |= want;
  if (!(want & STORE_V_FILE)) store_patch_view(s, pos, v);
  return STORE_OK;
}

int store_get_tier(store *s, uint64_t pos, const char **tier, size_t *len) {
  const ovent *e;
  if (pos >= s->nbase && store_pos_live(s, pos)) {
    if ((e = store_patch_at(s, pos)) != NULL && (e->set & STORE_P_TIER)) {
      *tier = e->tier;
      *len = e->tier_len;
    } else {
      *tier = s->delta[pos - s->nbase]->str[4];
      *len = s->delta[pos - s->nbase]->len[4];
    }
    return STORE_OK;
  }
  store_view v;
  memset(&v, 0, sizeof v);
  int rc = store_get(s, pos, STORE_V_TIER, &v);
  *tier = v.tier;
  *len = v.tier_len;
  return rc;
}

/* ---- string columns as codes ---------------------------------------------- */

#define CODE_NULL (UINT32_MAX - 1) /* a NULL string */

/* The slot of (p, n) in c's dictionary: where it is, or the empty one where it goes. */
static uint64_t dict_find(const strcodes *c, const uint8_t *p, size_t n) {
  uint64_t h = XXH64(p, n, 0) & (c->dcap - 1);
  while (c->dp[h] && (c->dlen[h] != n || memcmp(c->dp[h], p, n))) h = (h + 1) & (c->dcap - 1);
  return h;
}

static int dict_grow(strcodes *c) {
  strcodes o = *c;
  c->dcap = o.dcap ? o.dcap * 2 : 256;
  c->dp = calloc(c->dcap, sizeof *c->dp);
  c->dlen = malloc(c->dcap * sizeof *c->dlen);
  c->dcode = malloc(c->dcap * sizeof *c->dcode);
  if (!c->dp || !c->dlen || !c->dcode) {
    free(c->dp);
    free(c->dlen);
    free(c->dcode);
    c->dp = o.dp;
    c->dlen = o.dlen;
    c->dcode = o.dcode;
    c->dcap = o.dcap;
    return STORE_ENOMEM;
  }
  for (uint64_t i = 0; i < o.dcap; i++) {
    if (!o.dp[i]) continue;
    uint64_t h = dict_find(c, o.dp[i], o.dlen[i]);
    c->dp[h] = o.dp[i];
    c->dlen[h] = o.dlen[i];
    c->dcode[h] = o.dcode[i];
  }
  free(o.dp);
  free(o.dlen);
  free(o.dcode);
  return STORE_OK;
}

/* The code of (p, n) in c, added to the dictionary (with a copy of its own)
** when missing; UINT32_MAX when out of memory. */
static uint32_t dict_code(strcodes *c, const char *p, size_t n) {
  if (!p) return CODE_NULL;
  if (n >= UINT32_MAX) return UINT32_MAX - 2; /* (equal to no value, as in the file's rows) */
  uint64_t h = dict_find(c, (const uint8_t *)p, n);
  if (c->dp[h]) return c->dcode[h];
  if ((c->dn + 1) * 2 > c->dcap) {
    if (dict_grow(c)) return UINT32_MAX;
    h = dict_find(c, (const uint8_t *)p, n);
  }
  char **own = realloc(c->own, (c->nown + 1) * sizeof *own);
  if (!own) return UINT32_MAX;
  c->own = own;
  char *copy = malloc(n + 1);
  if (!copy) return UINT32_MAX;
  memcpy(copy, p, n);
  copy[n] = 0;
  c->own[c->nown++] = copy;
  c->dp[h] = (const uint8_t *)copy;
  c->dlen[h] = (uint32_t)n;
  c->dcode[h] = (uint32_t)c->dn++;
  return c->dcode[h];
}

/* The tier codes with the overlay's tiers applied (c->pcode), for the
** overlay's present version. */
static int patch_codes(store *s, strcodes *c) {
  c->phas = 0;
  uint64_t n = 0;
  for (uint64_t i = 0; i < s->nov; i++) n += (s->ov[i].set & STORE_P_TIER) && s->ov[i].pos < s->nbase;
  if (n) {
    if (!c->pcode && !(c->pcode = malloc(s->nbase * sizeof *c->pcode)))
      return store_fail(s, STORE_ENOMEM, "out of memory");
    memcpy(c->pcode, c->code, s->nbase * sizeof *c->pcode);
    for (uint64_t i = 0; i < s->nov; i++) {
      const ovent *e = &s->ov[i];
      if (!(e->set & STORE_P_TIER) || e->pos >= s->nbase) continue;
      uint32_t code = dict_code(c, e->tier, e->tier_len);
      if (code == UINT32_MAX) {
        free(c->pcode);
        c->pcode = NULL;
        return store_fail(s, STORE_ENOMEM, "out of memory");
      }
      c->pcode[e->pos] = code;
    }
    c->phas = 1;
  }
  c->pver = s->ov_tier_ver;
  c->pbuilt = 1;
  return STORE_OK;
}

int store_str_codes(store *s, unsigned want, const char *v, size_t n, const uint32_t **codes,
                    uint64_t *ncodes, uint32_t *code) {
  int k = 0;
  while (k < 6 && want != (1u << k)) k++;
  if (k == 6) return store_fail(s, STORE_EINVAL, "store_str_codes: one string column at a time");
  strcodes *c = &s->sc[k];
  if (!c->code && s->nbase) {
    c->code = malloc(s->nbase * sizeof *c->code);
    if (!c->code || dict_grow(c)) {
      store_codes_free(c);
      return store_fail(s, STORE_ENOMEM, "out of memory");
    }
    for (uint64_t r = 0; r < s->nbase; r++) {
      const uint8_t *p = store_base_row(s, store_str_cols[k], r), *data;
      size_t len;
      uint32_t cnt;
      if (!p || h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK) {
        store_codes_free(c);
        return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s cannot be read", s->path,
                    (unsigned long long)r, store_col_name[store_str_cols[k]]);
      }
      if (!data) {
        c->code[r] = CODE_NULL;
        continue;
      }
      if (len > UINT32_MAX) len = UINT32_MAX; /* (then never equal to a value) */
      uint64_t h = dict_find(c, data, len);
      if (!c->dp[h]) {
        if ((c->dn + 1) * 2 > c->dcap) {
          if (dict_grow(c)) {
            store_codes_free(c);
            return store_fail(s, STORE_ENOMEM, "out of memory");
          }
          h = dict_find(c, data, len);
        }
        c->dp[h] = data;
        c->dlen[h] = (uint32_t)len;
        c->dcode[h] = (uint32_t)c->dn++;
      }
      c->code[r] = c->dcode[h];
    }
  }
  if (k == 4 && c->code && (!c->pbuilt || c->pver != s->ov_tier_ver)) {
    int rc = patch_codes(s, c);
    if (rc) return rc;
  }
  *codes = k == 4 && c->phas ? c->pcode : c->code;
  *ncodes = c->code ? s->nbase : 0;
  *code = UINT32_MAX;
  if (!v) {
    *code = CODE_NULL;
  } else if (c->code && n < UINT32_MAX) {
    uint64_t h = dict_find(c, (const uint8_t *)v, n);
    if (c->dp[h]) *code = c->dcode[h];
  }
  return STORE_OK;
}

int store_ts_column(store *s, const int64_t **ts, uint64_t *n) {
  if (!s->tsc && s->nbase) { /* one pass over the column, for the filters that test every row */
    int64_t *t = malloc(s->nbase * sizeof *t);
    if (!t) return store_fail(s, STORE_ENOMEM, "out of memory");
    for (uint64_t r = 0; r < s->nbase; r++) {
      const uint8_t *p = store_base_row(s, C_TS, r);
      if (!p) {
        free(t);
        return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/ts lies outside the file", s->path,
                    (unsigned long long)r);
      }
      t[r] = store_get_i64(p);
    }
    s->tsc = t;
  }
  *ts = s->tsc;
  *n = s->nbase;
  return STORE_OK;
}

int store_get_ts(store *s, uint64_t pos, int64_t *ts) {
  if (pos >= s->nbase) {
    if (!store_pos_live(s, pos)) return store_fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
    *ts = s->delta[pos - s->nbase]->ts;
    return STORE_OK;
  }
  const int64_t *col;
  uint64_t n;
  int rc = store_ts_column(s, &col, &n);
  if (rc != STORE_OK) return rc;
  *ts = col[pos];
  return STORE_OK;
}

void store_live_bits(const store *s, uint64_t npos, uint8_t *bits, uint64_t *n) {
  uint64_t c = 0, nb = npos < s->nbase ? npos : s->nbase, p = 0;
  for (; p + 8 <= nb; p += 8) { /* 8 dead flags (0 or 1 bytes) into one byte of bits */
    uint64_t v;
    memcpy(&v, s->base_dead + p, 8);
    v = ~v & 0x0101010101010101ull;
    unsigned byte = (unsigned)((v * 0x0102040810204080ull) >> 56);
    bits[p / 8] = (uint8_t)byte; /* (p is a multiple of 8: a whole byte) */
    c += (uint64_t)((v * 0x0101010101010101ull) >> 56); /* (bytes of 0/1: their sum) */
  }
  for (; p < nb; p++) {
    unsigned live = !s->base_dead[p];
    bits[p / 8] |= (uint8_t)(live << (p % 8));
    c += live;
  }
  for (p = nb; p < npos; p++)
    if (store_pos_live(s, p)) {
      bits[p / 8] |= (uint8_t)(1u << (p % 8));
      c++;
    }
  *n = c;
}

int store_text_at(store *s, uint64_t pos, const char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  if (pos >= s->nbase) {
    if (pos - s->nbase >= s->ndelta) return store_fail(s, STORE_ENOTFOUND, "no record at position %llu",
                                                 (unsigned long long)pos);
    const drec *d = s->delta[pos - s->nbase];
    *text = d->str[0];
    *len = d->len[0];
    return STORE_OK;
  }
  const uint8_t *p = store_base_row(s, C_TEXT, pos), *data;
  uint32_t cnt;
  if (!p)
    return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/text lies outside the file", s->path,
                (unsigned long long)pos);
  if (h5_vlen_get(s->f, p, &data, len, &cnt) != H5_OK)
    return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/text: %s", s->path,
                (unsigned long long)pos, h5_errmsg(s->f));
  *text = (const char *)data;
  return STORE_OK;
}

int store_text_index(store *s, store_text_info *info) {
  int rc = tindex_info(s->tx, info);
  info->tokenize = s->tokenize;
  return rc;
}
