/*
** ext/vtab/mem_consolidate.c - one consolidation cycle over an h5mem
** table's store (docs/SQL.md, "Memory lifecycle"), run by the table's
** command INSERT INTO mem(mem, meta) VALUES('consolidate', '{options}')
** in the open store transaction, so that the cycle is part of SQLite's
** transaction and one store transaction: all of it or none (a failure
** undoes what it did; a crash before the commit leaves the state before).
**
** The cycle, over the live memories whose tier is working, episodic,
** semantic or archive (other tiers, NULL included, are left alone):
**   1. promote: a working memory with access_count >= promote_after moves
**      to episodic; an episodic one with access_count >= semantic_after
**      (default 2 x promote_after) to semantic.  One step a cycle.
**   2. evict: when more than working_capacity memories are left working,
**      the lowest decay scores (life_score at now, half_life_days; ties:
**      the lower id first) go to archive (evict=archive, a tier change in
**      place, store_update) or are deleted (evict=delete), until
**      working_capacity are left.
**   3. merge: each memory left working, in id order, is compared with its
**      nearest (store_knn) among the working memories (merge_scope=working,
**      O(W^2) for W of them) or among every non-archive memory
**      (merge_scope=all: through the vector index); within merge_threshold
**      (cosine distance) the two merge: the survivor is the one in the
**      higher tier (semantic > episodic > working), then the more used,
**      then the lower id; it keeps the summed access counts, the later
**      last_access, the larger importance, and its meta gains
**      {"merged": [{"id": .., "session": ..}, ...]} (the other's own merged
**      list carried over); the other is deleted.
** Everything else is C over the store API: one pass over the tier codes,
** the numbers of the working and episodic memories, a linear selection of
** the evicted: linear in the records.
*/
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "k.h"
#include "life/life.h"
#include "store/store.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "vtab_int.h"

enum { CL_WORK = 0, CL_EPI, CL_SEM, CL_ARCH, CL_OTHER, CL_DEAD, CL_N };
static const char *const cl_name[4] = {"working", "episodic", "semantic", "archive"};

int h5mem_pos_emb(store *st, uint64_t pos, float *out, int *has) {
  store_view v;
  memset(&v, 0, sizeof v);
  *has = 0;
  int rc = store_get(st, pos, STORE_V_EMB, &v);
  if (rc != STORE_OK || !v.emb) return rc;
  size_t dim = (size_t)store_dim(st);
  if (store_storage(st) == STORE_F32) {
    memcpy(out, v.emb, dim * 4);
  } else {
    uint16_t *h = malloc(dim * 2);
    if (!h) return STORE_ENOMEM;
    memcpy(h, v.emb, dim * 2); /* (mapped rows need not be aligned) */
    k_get()->f16_to_f32(h, out, dim);
    free(h);
  }
  *has = 1;
  return STORE_OK;
}

/* ---- options ----------------------------------------------------------------- */

#define CONS_KNOWN                                                                                   \
  "now, working_capacity, promote_after, semantic_after, half_life_days, merge_threshold, evict, " \
  "merge_scope"

typedef struct copts {
  int64_t now, capacity, promote_after, semantic_after;
  double half_life_days, merge_threshold;
  int evict_delete, merge_all;
} copts;

static int int_opt(const search_opt *v, int64_t lo, int64_t hi, int64_t *out, char **err) {
  if (v->type != UTIL_JSON_INTEGER || v->inum < lo || v->inum > hi) {
    *err = sqlite3_mprintf("expected an integer from %lld to %lld", (long long)lo, (long long)hi);
    return SQLITE_ERROR;
  }
  *out = v->inum;
  return SQLITE_OK;
}

static int cons_option(void *ctx, const char *key, const search_opt *v, char **err) {
  copts *o = ctx;
  double d;
  int rc;
  if (!strcmp(key, "now")) {
    if ((rc = search_opts_num(v, -1e15, 1e15, &d, err)) == SQLITE_OK) o->now = (int64_t)floor(d);
    return rc;
  }
  if (!strcmp(key, "working_capacity")) return int_opt(v, 0, (int64_t)1e12, &o->capacity, err);
  if (!strcmp(key, "promote_after")) return int_opt(v, 1, (int64_t)1e12, &o->promote_after, err);
  if (!strcmp(key, "semantic_after")) return int_opt(v, 1, (int64_t)1e12, &o->semantic_after, err);
  if (!strcmp(key, "half_life_days")) return search_opts_num(v, 1e-9, 1e9, &o->half_life_days, err);
  if (!strcmp(key, "merge_threshold")) {
    if (v->type == UTIL_JSON_TEXT && !strcmp(v->text, "off")) {
      o->merge_threshold = -1;
      return SQLITE_OK;
    }
    return search_opts_num(v, 0, 2, &o->merge_threshold, err);
  }
  if (!strcmp(key, "evict") || !strcmp(key, "merge_scope")) {
    int ev = key[0] == 'e';
    const char *a = ev ? "archive" : "working", *b = ev ? "delete" : "all";
    if (v->type != UTIL_JSON_TEXT || (strcmp(v->text, a) && strcmp(v->text, b))) {
      *err = sqlite3_mprintf("expected \"%s\" or \"%s\"", a, b);
      return SQLITE_ERROR;
    }
    *(ev ? &o->evict_delete : &o->merge_all) = !strcmp(v->text, b);
    return SQLITE_OK;
  }
  return SEARCH_UNKNOWN;
}

/* ---- the evicted: the lowest (score, id), life_select_lowest --------------------- */

static int by_id(const void *a, const void *b) {
  int64_t x = ((const life_cand *)a)->id, y = ((const life_cand *)b)->id;
  return (x > y) - (x < y);
}

/* ---- merging ----------------------------------------------------------------- */

/* meta (NULL: none) with the entries (the text of JSON values, comma
** separated) added to its "merged" array, into out. */
static void meta_merged(strbuf *out, const char *m, size_t n, const char *ent, size_t en) {
  size_t i = m ? util_json_ws(m, 0, n) : 0;
  if (!m || i >= n) {
    strbuf_puts(out, "{\"merged\":[");
    strbuf_append(out, ent, en);
    strbuf_puts(out, "]}");
    return;
  }
  if (util_json_type(m, i, n) != UTIL_JSON_OBJECT) { /* kept under "meta" */
    strbuf_puts(out, "{\"meta\":");
    strbuf_append(out, m + i, util_json_end(m, i, n) - i);
    strbuf_puts(out, ",\"merged\":[");
    strbuf_append(out, ent, en);
    strbuf_puts(out, "]}");
    return;
  }
  size_t v0, v1;
  if (util_json_at_path(m, n, "merged", &v0, &v1) == 0) {
    if (util_json_type(m, v0, n) == UTIL_JSON_ARRAY) { /* appended before its ']' */
      int empty = util_json_ws(m, v0 + 1, n) >= v1 - 1;
      strbuf_append(out, m, v1 - 1);
      if (!empty) strbuf_putc(out, ',');
      strbuf_append(out, ent, en);
      strbuf_append(out, m + v1 - 1, n - (v1 - 1));
    } else { /* another value: [it, entries] */
      strbuf_append(out, m, v0);
      strbuf_putc(out, '[');
      strbuf_append(out, m + v0, v1 - v0);
      strbuf_putc(out, ',');
      strbuf_append(out, ent, en);
      strbuf_putc(out, ']');
      strbuf_append(out, m + v1, n - v1);
    }
    return;
  }
  int empty = util_json_ws(m, i + 1, n) < n && m[util_json_ws(m, i + 1, n)] == '}';
  strbuf_append(out, m, i + 1);
  strbuf_puts(out, "\"merged\":[");
  strbuf_append(out, ent, en);
  strbuf_puts(out, empty ? "]" : "],");
  strbuf_append(out, m + i + 1, n - i - 1);
}

static int cl_of(const char *t, size_t n) {
  for (int c = 0; c < 4; c++)
    if (t && n == strlen(cl_name[c]) && !memcmp(t, cl_name[c], n)) return c;
  return CL_OTHER;
}

static int rank_of(int cl) { return cl == CL_SEM ? 2 : cl == CL_EPI ? 1 : 0; }

/* The cycle's state. */
typedef struct cyc {
  store *st;
  copts o;
  size_t dim;
  uint8_t *bits; /* the memories a merge compares with */
  uint64_t nbits_cap, nallow;
  int64_t cnt[CL_N];
  int64_t promoted_e, promoted_s, evicted, merged;
  life_cand *left; /* the working memories after eviction, by id */
  size_t nleft;
  uint8_t *gone; /* left[i] merged away */
} cyc;

static void bit_set(cyc *c, uint64_t pos, int on) {
  if (pos >= c->nbits_cap) return;
  uint8_t m = (uint8_t)(1u << (pos % 8));
  int was = (c->bits[pos / 8] & m) != 0;
  if (on && !was) c->bits[pos / 8] |= m, c->nallow++;
  if (!on && was) c->bits[pos / 8] &= (uint8_t)~m, c->nallow--;
}

/* Merge the memories a (position pa) and b (pb): one survives. */
static int merge_pair(cyc *c, uint64_t pa, uint64_t pb) {
  store *st = c->st;
  store_view va, vb;
  memset(&va, 0, sizeof va);
  memset(&vb, 0, sizeof vb);
  int rc = store_get(st, pa, STORE_V_TIER | STORE_V_NUM | STORE_V_SESSION | STORE_V_META, &va);
  if (rc == STORE_OK) rc = store_get(st, pb, STORE_V_TIER | STORE_V_NUM | STORE_V_SESSION | STORE_V_META, &vb);
  if (rc != STORE_OK) return rc;
  int ca = cl_of(va.tier, va.tier_len), cb = cl_of(vb.tier, vb.tier_len);
  int a_wins = rank_of(ca) != rank_of(cb) ? rank_of(ca) > rank_of(cb)
               : va.access_count != vb.access_count ? va.access_count > vb.access_count
                                                    : va.id < vb.id;
  store_view *w = a_wins ? &va : &vb, *l = a_wins ? &vb : &va;
  uint64_t wpos = a_wins ? pa : pb, lpos = a_wins ? pb : pa;
  int lcl = a_wins ? cb : ca;
  /* the loser's entry, and its own merged list */
  strbuf ent = {0}, meta = {0};
  strbuf_printf(&ent, "{\"id\":%lld,\"session\":", (long long)l->id);
  if (l->session) strbuf_json_string(&ent, l->session, l->session_len);
  else strbuf_puts(&ent, "null");
  strbuf_putc(&ent, '}');
  size_t v0, v1;
  if (l->meta && util_json_type(l->meta, util_json_ws(l->meta, 0, l->meta_len), l->meta_len) == UTIL_JSON_OBJECT &&
      util_json_at_path(l->meta, l->meta_len, "merged", &v0, &v1) == 0 &&
      util_json_type(l->meta, v0, l->meta_len) == UTIL_JSON_ARRAY) {
    size_t b = util_json_ws(l->meta, v0 + 1, l->meta_len);
    if (b < v1 - 1) {
      strbuf_putc(&ent, ',');
      strbuf_append(&ent, l->meta + b, v1 - 1 - b);
    }
  }
  if (strbuf_failed(&ent)) {
    strbuf_free(&ent);
    return STORE_ENOMEM;
  }
  meta_merged(&meta, w->meta, w->meta_len, ent.buf, ent.len);
  strbuf_free(&ent);
  int64_t ac = w->access_count + l->access_count;
  int64_t la = w->last_access > l->last_access ? w->last_access : l->last_access;
  double imp = isnan(w->importance) ? l->importance
               : isnan(l->importance) || w->importance >= l->importance ? w->importance : l->importance;
  int64_t lid = l->id;
  /* the survivor rewritten (its meta changes) */
  store_view f;
  memset(&f, 0, sizeof f);
  float *emb = NULL;
  int has = 0;
  if (strbuf_failed(&meta)) rc = STORE_ENOMEM;
  if (rc == STORE_OK) rc = store_get(st, wpos, STORE_V_ALL & ~STORE_V_EMB, &f);
  if (rc == STORE_OK && !(emb = malloc(c->dim * 4))) rc = STORE_ENOMEM;
  if (rc == STORE_OK) rc = h5mem_pos_emb(st, wpos, emb, &has);
  /* copies: the views point into the store, which the delete changes */
  char *copy = NULL;
  store_rec r;
  memset(&r, 0, sizeof r);
  store_val *cols = NULL; /* (the declared columns' values, kept) */
  if (rc == STORE_OK) rc = store_get_cols(st, wpos, &cols);
  r.cols = cols;
  if (rc == STORE_OK) {
    size_t tot = f.text_len + f.source_len + f.session_len + f.tags_len + f.tier_len + 5;
    copy = malloc(tot);
    if (!copy) rc = STORE_ENOMEM;
  }
  if (rc == STORE_OK) {
    char *p = copy;
#define CP(field)                                     \
  if (f.field) {                                      \
    memcpy(p, f.field, f.field##_len);                \
    r.field = p;                                      \
    r.field##_len = f.field##_len;                    \
    p += f.field##_len;                               \
  }
    CP(text) CP(source) CP(session) CP(tags) CP(tier)
#undef CP
    r.id = f.id;
    r.meta = meta.buf;
    r.meta_len = meta.len;
    r.emb = has ? emb : NULL;
    r.ts = f.ts;
    r.importance = imp;
    r.access_count = ac;
    r.last_access = la;
    if ((rc = store_delete(st, lid)) == STORE_OK) rc = store_delete(st, r.id);
    /* (with provenance: an update of what the merge changes) */
    if (rc == STORE_OK && store_has_provenance(st))
      rc = store_prov_fields(st, "[\"meta\",\"importance\",\"access_count\",\"last_access\"]");
    if (rc == STORE_OK) rc = store_put(st, &r);
  }
  uint64_t npos;
  if (rc == STORE_OK && (rc = store_find(st, r.id, &npos)) == STORE_OK) {
    bit_set(c, lpos, 0);
    int wasin = wpos < c->nbits_cap && (c->bits[wpos / 8] >> (wpos % 8) & 1);
    bit_set(c, wpos, 0);
    if (wasin) bit_set(c, npos, 1);
    c->cnt[lcl]--;
    c->merged++;
    /* the working memories still to compare: where they are now */
    life_cand key = {.id = lid};
    life_cand *g = bsearch(&key, c->left, c->nleft, sizeof *c->left, by_id);
    if (g) c->gone[g - c->left] = 1;
    key.id = r.id;
    if ((g = bsearch(&key, c->left, c->nleft, sizeof *c->left, by_id)) != NULL) g->pos = npos;
  }
  free(copy);
  free(cols);
  free(emb);
  strbuf_free(&meta);
  return rc;
}

/* merge_scope=working: the nearest other working memory of each, exact,
** by cosine over the unit vectors (a zero or missing vector has none),
** without the index: W^2/2 dot products, on this thread. */
static int merge_working(cyc *c) {
  size_t w = c->nleft, dim = c->dim;
  float (*dotf)(const float *, const float *, size_t) = k_get()->dot_f32;
  float *m = malloc(w * dim * 4 + 1);
  uint8_t *has = calloc(w + 1, 1);
  size_t *best = malloc((w + 1) * sizeof *best);
  float *bd = malloc((w + 1) * sizeof *bd);
  int rc = m && has && best && bd ? STORE_OK : STORE_ENOMEM;
  for (size_t i = 0; i < w && rc == STORE_OK; i++) {
    int h;
    float *v = m + i * dim;
    if ((rc = h5mem_pos_emb(c->st, c->left[i].pos, v, &h)) != STORE_OK || !h) continue;
    double nn = 0;
    for (size_t k = 0; k < dim; k++) nn += (double)v[k] * v[k];
    if (!(nn > 0)) continue;
    float inv = (float)(1.0 / sqrt(nn));
    for (size_t k = 0; k < dim; k++) v[k] *= inv;
    has[i] = 1;
  }
  for (size_t i = 0; i < w; i++) best[i] = SIZE_MAX, bd[i] = -2;
  for (size_t i = 0; i < w && rc == STORE_OK; i++) {
    if (!has[i]) continue;
    const float *a = m + i * dim;
    for (size_t j = i + 1; j < w; j++) {
      if (!has[j]) continue;
      float dot = dotf(a, m + j * dim, dim);
      if (dot > bd[i]) bd[i] = dot, best[i] = j;
      if (dot > bd[j]) bd[j] = dot, best[j] = i;
    }
  }
  for (size_t i = 0; i < w && rc == STORE_OK; i++) {
    if (!has[i] || c->gone[i]) continue;
    if (best[i] != SIZE_MAX && c->gone[best[i]]) { /* its nearest merged away: again */
      best[i] = SIZE_MAX;
      bd[i] = -2;
      for (size_t j = 0; j < w; j++) {
        if (j == i || !has[j] || c->gone[j]) continue;
        float dot = dotf(m + i * dim, m + j * dim, dim);
        if (dot > bd[i]) bd[i] = dot, best[i] = j;
      }
    }
    if (best[i] == SIZE_MAX || 1.0 - (double)bd[i] > c->o.merge_threshold + 1e-5) continue;
    /* near: decided by life_nearest on the stored vectors, as h5mem_remember decides */
    float *a = malloc(dim * 8);
    int ha = 0, hb = 0;
    if (!a) rc = STORE_ENOMEM;
    if (rc == STORE_OK) rc = h5mem_pos_emb(c->st, c->left[i].pos, a, &ha);
    if (rc == STORE_OK) rc = h5mem_pos_emb(c->st, c->left[best[i]].pos, a + dim, &hb);
    int near = rc == STORE_OK && ha && hb && life_nearest(a, a + dim, 1, dim) <= c->o.merge_threshold;
    free(a);
    if (near) rc = merge_pair(c, c->left[i].pos, c->left[best[i]].pos);
  }
  free(m);
  free(has);
  free(best);
  free(bd);
  return rc;
}

static int merge_phase(cyc *c, const uint8_t *cls, uint64_t npos0) {
  store *st = c->st;
  c->nbits_cap = npos0 + c->nleft + 64;
  c->bits = calloc(c->nbits_cap / 8 + 1, 1);
  c->gone = calloc(c->nleft + 1, 1);
  if (c->bits && c->gone && !c->o.merge_all) return merge_working(c);
  float *q = malloc(c->dim * 4 * 2);
  if (!c->bits || !c->gone || !q) {
    free(q);
    return STORE_ENOMEM;
  }
  float *row = q + c->dim;
  if (c->o.merge_all) {
    for (uint64_t p = 0; p < npos0; p++)
      if (cls[p] == CL_WORK || cls[p] == CL_EPI || cls[p] == CL_SEM) bit_set(c, p, 1);
    /* (the evicted and promoted changed tiers: a promoted one is a
    ** candidate still, an archived one not) */
  }
  for (size_t i = 0; i < c->nleft; i++) bit_set(c, c->left[i].pos, 1);
  int rc = STORE_OK;
  for (size_t i = 0; i < c->nleft && rc == STORE_OK; i++) {
    if (c->gone[i]) continue;
    uint64_t pos = c->left[i].pos;
    int has;
    if ((rc = h5mem_pos_emb(st, pos, q, &has)) != STORE_OK) break;
    if (!has) continue;
    store_filter flt = {.bits = c->bits, .nbits = c->nallow};
    ann_res r[3];
    uint64_t n = 0;
    if ((rc = store_knn(st, q, 3, &flt, NULL, r, &n)) != STORE_OK) break;
    for (uint64_t j = 0; j < n; j++) {
      if (r[j].pos == pos) continue;
      int h2;
      if ((rc = h5mem_pos_emb(st, r[j].pos, row, &h2)) != STORE_OK || !h2) break;
      if (life_nearest(q, row, 1, c->dim) <= c->o.merge_threshold) rc = merge_pair(c, pos, r[j].pos);
      break; /* the nearest other only */
    }
  }
  free(q);
  return rc;
}

/* ---- the cycle ---------------------------------------------------------------- */

static int64_t now_us(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000000 + tv.tv_usec;
}

static int cycle(cyc *c) {
  store *st = c->st;
  uint64_t npos0 = store_npos(st);
  const uint32_t *codes = NULL;
  uint64_t ncodes = 0;
  uint32_t code[4];
  int rc = STORE_OK;
  for (int k = 0; k < 4 && rc == STORE_OK; k++)
    rc = store_str_codes(st, STORE_V_TIER, cl_name[k], strlen(cl_name[k]), &codes, &ncodes, &code[k]);
  if (rc != STORE_OK) return rc;
  uint8_t *cls = malloc(npos0 + 1);
  if (!cls) return STORE_ENOMEM;
  /* 1. the tiers, from the codes of the file's rows and the records in memory */
  size_t nw = 0;
  for (uint64_t p = 0; p < npos0; p++) {
    int cl = CL_DEAD;
    if (store_pos_live(st, p)) {
      if (p < ncodes) {
        uint32_t x = codes[p];
        cl = x == code[0] ? CL_WORK : x == code[1] ? CL_EPI : x == code[2] ? CL_SEM : x == code[3] ? CL_ARCH : CL_OTHER;
      } else {
        store_view v;
        memset(&v, 0, sizeof v);
        if ((rc = store_get(st, p, STORE_V_TIER, &v)) != STORE_OK) break;
        cl = cl_of(v.tier, v.tier_len);
      }
    }
    cls[p] = (uint8_t)cl;
    c->cnt[cl]++;
    nw += cl == CL_WORK;
  }
  life_cand *w = rc == STORE_OK ? malloc((nw + 1) * sizeof *w) : NULL;
  if (rc == STORE_OK && !w) rc = STORE_ENOMEM;
  /* 2. promotions and the working tier's scores */
  life_score_opts so;
  life_score_opts_default(&so);
  so.half_life = c->o.half_life_days * LIFE_DAY;
  size_t n = 0;
  store_patch pe = {.set = STORE_P_TIER, .tier = "episodic", .tier_len = 8};
  store_patch ps = {.set = STORE_P_TIER, .tier = "semantic", .tier_len = 8};
  for (uint64_t p = 0; p < npos0 && rc == STORE_OK; p++) {
    if (cls[p] != CL_WORK && cls[p] != CL_EPI) continue;
    store_view v;
    memset(&v, 0, sizeof v);
    if ((rc = store_get(st, p, STORE_V_NUM, &v)) != STORE_OK) break;
    if (cls[p] == CL_EPI) {
      if (v.access_count >= c->o.semantic_after) {
        if ((rc = store_update_at(st, p, &ps)) != STORE_OK) break;
        c->promoted_s++;
        c->cnt[CL_EPI]--;
        c->cnt[CL_SEM]++;
        cls[p] = CL_SEM;
      }
      continue;
    }
    if (v.access_count >= c->o.promote_after) {
      if ((rc = store_update_at(st, p, &pe)) != STORE_OK) break;
      c->promoted_e++;
      c->cnt[CL_WORK]--;
      c->cnt[CL_EPI]++;
      cls[p] = CL_EPI;
      continue;
    }
    life_record lr = {.has_importance = !isnan(v.importance), .importance = v.importance, .has_ts = 1,
                      .ts = v.ts, .access_count = v.access_count,
                      .has_last_access = v.last_access != STORE_NULL_TIME, .last_access = v.last_access};
    w[n].key = life_score(&so, &lr, c->o.now, NULL);
    w[n].id = v.id;
    w[n].pos = p;
    n++;
  }
  /* 3. eviction: the lowest (score, id) beyond the capacity */
  if (rc == STORE_OK && (int64_t)n > c->o.capacity) {
    size_t ne = n - (size_t)c->o.capacity;
    life_select_lowest(w, n, ne);
    store_patch pa = {.set = STORE_P_TIER, .tier = "archive", .tier_len = 7};
    for (size_t i = 0; i < ne && rc == STORE_OK; i++) {
      rc = c->o.evict_delete ? store_delete(st, w[i].id) : store_update_at(st, w[i].pos, &pa);
      cls[w[i].pos] = c->o.evict_delete ? CL_DEAD : CL_ARCH;
    }
    c->evicted = (int64_t)ne;
    c->cnt[CL_WORK] -= (int64_t)ne;
    if (!c->o.evict_delete) c->cnt[CL_ARCH] += (int64_t)ne;
    memmove(w, w + ne, (n - ne) * sizeof *w);
    n -= ne;
  }
  /* 4. near-duplicates among what is left working */
  if (rc == STORE_OK && c->o.merge_threshold >= 0 && n > 0 && (c->o.merge_all || n > 1)) {
    qsort(w, n, sizeof *w, by_id);
    c->left = w;
    c->nleft = n;
    rc = merge_phase(c, cls, npos0);
  }
  free(w);
  free(cls);
  return rc;
}

int h5mem_consolidate_cmd(memvt *vt, store *st, sqlite3_value *options, char **pzErr) {
  const h5mem_policy *pol = h5mem_table_policy(vt);
  cyc c;
  memset(&c, 0, sizeof c);
  c.st = st;
  c.dim = (size_t)store_dim(st);
  c.o.now = (int64_t)time(NULL);
  c.o.capacity = pol->working_capacity;
  c.o.promote_after = pol->promote_after;
  c.o.semantic_after = pol->semantic_after;
  c.o.half_life_days = pol->half_life_days;
  c.o.merge_threshold = pol->merge_threshold;
  c.o.evict_delete = pol->evict_delete;
  c.o.merge_all = pol->merge_all;
  char *err = NULL;
  int rc = search_opts_parse(sqlite3_value_type(options) == SQLITE_NULL ? NULL : options, CONS_KNOWN,
                             cons_option, &c.o, &err);
  if (rc != SQLITE_OK) {
    *pzErr = err ? sqlite3_mprintf("consolidate: %s", err) : NULL;
    sqlite3_free(err);
    return rc;
  }
  if (!c.o.semantic_after)
    c.o.semantic_after = c.o.promote_after > (int64_t)5e11 ? (int64_t)1e12 : 2 * c.o.promote_after;
  int64_t t0 = now_us();
  uint64_t mark = store_mark(st);
  int sr = cycle(&c);
  free(c.bits);
  free(c.gone);
  if (sr != STORE_OK) {
    store_undo_to(st, mark);
    rc = h5mem_store_err(st, sr, &err);
    *pzErr = err ? sqlite3_mprintf("consolidate: %s", err) : NULL;
    sqlite3_free(err);
    return rc;
  }
  double ms = (double)(now_us() - t0) / 1000.0;
  h5mem_life_state *ls = h5mem_table_life(vt);
  sqlite3_snprintf((int)sizeof ls->report, ls->report,
                   "{\"evicted\":%lld,\"archived\":%lld,\"deleted\":%lld,\"promoted\":%lld,"
                   "\"promoted_episodic\":%lld,\"promoted_semantic\":%lld,\"merged\":%lld,"
                   "\"working\":%lld,\"episodic\":%lld,\"semantic\":%lld,\"archive\":%lld,\"unmanaged\":%lld,"
                   "\"now\":%lld,\"ms\":%.3f}",
                   (long long)c.evicted, (long long)(c.o.evict_delete ? 0 : c.evicted),
                   (long long)(c.o.evict_delete ? c.evicted : 0), (long long)(c.promoted_e + c.promoted_s),
                   (long long)c.promoted_e, (long long)c.promoted_s, (long long)c.merged,
                   (long long)c.cnt[CL_WORK], (long long)c.cnt[CL_EPI], (long long)c.cnt[CL_SEM],
                   (long long)c.cnt[CL_ARCH], (long long)c.cnt[CL_OTHER], (long long)c.o.now, ms);
  return SQLITE_OK;
}
