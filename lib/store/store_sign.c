/*
** lib/store/store_sign.c - signed checkpoints (docs/FORMAT.md, "Signed
** checkpoints"; docs/SQL.md, h5mem_sign and h5mem_verify).
**
** Every row of /memories has a leaf in /sign/leaves (the same row
** number): the hash of its record, or of its id alone once it is dead.  A
** signed checkpoint appends a row to each of /sign's per-checkpoint
** datasets: its number, the log frame it covers, the rows, the time, the
** Merkle root over the leaves, the root before it, the public key and the
** Ed25519 signature of all these and the store's id.  A checkpoint hashes
** only the rows it writes or changes; the tree over the leaves is kept in
** memory by the writer, so the root costs a path per changed row.
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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_int.h"
#include "sign/sign.h"
#include "util/pool.h"
#include "util/strbuf.h"

/* A record's fields for its leaf: gathered one record after another (the
** strings are found through the file's heap index, which one thread fills
** as it goes), then hashed on several threads. */
typedef struct leafsrc {
  int live;
  int bad;       /* a string's element and heap object disagree: no leaf signed can match */
  int64_t id;
  store_view v;
  store_val *cv; /* its declared columns' values */
} leafsrc;

/* how: 0, or STORE_V_FILE for a base row as its file holds it (dead since or not). */
static int gather(store *s, uint64_t pos, leafsrc *src, store_val *cv, unsigned how) {
  int file = (how & STORE_V_FILE) && pos < s->nbase;
  src->live = file || store_pos_live(s, pos);
  src->id = store_pos_id(s, pos);
  src->cv = cv;
  src->bad = 0;
  if (!src->live) return STORE_OK;
  memset(&src->v, 0, sizeof src->v);
  int rc = store_get(s, pos, STORE_V_ALL | how, &src->v);
  for (int c = 0; rc == STORE_OK && c < s->ncols; c++)
    rc = file ? store_get_col_file(s, pos, c, &cv[c]) : store_get_col(s, pos, c, &cv[c]);
  if (rc == STORE_OK && pos < s->nbase) src->bad = !store_row_strings_agree(s, pos);
  for (int c = 0; rc == STORE_OK && pos >= s->nbase && c < s->ncols; c++) /* (as the file will hold them) */
    if (s->cdef[c].type == STORE_T_BOOLEAN && cv[c].type) {
      int8_t b = (int8_t)cv[c].i;
      if (b == -1) cv[c].type = 0; /* (the file's NULL) */
      cv[c].i = b;
    } else if (s->cdef[c].type == STORE_T_INTEGER && cv[c].type && cv[c].i == INT64_MIN) {
      cv[c].type = 0;
    }
  return rc;
}

#ifdef HAVE_LIBSODIUM
#include <sodium.h>

/* A leaf's bytes gathered into a buffer and hashed in one call (the
** streaming calls' overhead is most of a short record's cost); a record
** larger than the buffer streams through it. */
typedef struct enc {
  crypto_generichash_state h;
  int started;
  size_t n;
  uint8_t buf[4096];
} enc;

static void put(enc *e, const void *p, size_t n) {
  if (e->n + n <= sizeof e->buf) {
    memcpy(e->buf + e->n, p, n);
    e->n += n;
    return;
  }
  if (!e->started) crypto_generichash_init(&e->h, NULL, 0, 32);
  e->started = 1;
  crypto_generichash_update(&e->h, e->buf, e->n);
  e->n = 0;
  if (n > sizeof e->buf) {
    crypto_generichash_update(&e->h, p, n);
  } else {
    memcpy(e->buf, p, n);
    e->n = n;
  }
}

static void put_final(enc *e, uint8_t out[32]) {
  if (!e->started) {
    crypto_generichash(out, 32, e->buf, e->n, NULL, 0);
    return;
  }
  crypto_generichash_update(&e->h, e->buf, e->n);
  crypto_generichash_final(&e->h, out, 32);
}

static void put_i64(enc *h, int64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)v >> (8 * i));
  put(h, b, 8);
}

static void put_f64(enc *h, double v) {
  uint64_t u = 0x7ff8000000000000ull;
  if (!isnan(v)) memcpy(&u, &v, 8);
  put_i64(h, (int64_t)u);
}

static void put_str(enc *h, const void *p, size_t n) {
  uint32_t m = p ? (uint32_t)n : UINT32_MAX; /* (NULL: 0xFFFFFFFF, no bytes; an empty string: 0) */
  uint8_t b[4] = {(uint8_t)m, (uint8_t)(m >> 8), (uint8_t)(m >> 16), (uint8_t)(m >> 24)};
  put(h, b, 4);
  if (p && n) put(h, p, n);
}

/* A record's leaf from its fields, gathered (leafsrc); reads nothing
** but them and the store's layout, so leaves hash on several threads. */
static void hash_leaf(const store *s, const leafsrc *src, uint8_t out[32]) {
  enc e, *h = &e;
  e.started = 0;
  e.n = 0;
  if (!src->live || src->bad) {
    put(h, src->bad ? "h5mem-bad-v1\0" : "h5mem-dead-v1", 14);
    put_i64(h, src->id);
    put_final(h, out);
    return;
  }
  const store_view *v = &src->v;
  uint8_t head[14 + 40];
  memcpy(head, "h5mem-leaf-v1", 14);
  int64_t num[4] = {v->id, v->ts, v->access_count, v->last_access};
  uint64_t imp = 0x7ff8000000000000ull;
  if (!isnan(v->importance)) memcpy(&imp, &v->importance, 8);
  for (int k = 0; k < 5; k++)
    for (int b = 0; b < 8; b++) head[14 + 8 * k + b] = (uint8_t)((k < 4 ? (uint64_t)num[k] : imp) >> (8 * b));
  put(h, head, sizeof head);
  put_str(h, v->text, v->text_len);
  put_str(h, v->source, v->source_len);
  put_str(h, v->session, v->session_len);
  put_str(h, v->tags, v->tags_len);
  put_str(h, v->tier, v->tier_len);
  put_str(h, v->meta, v->meta_len);
  uint8_t has = v->emb != NULL;
  put(h, &has, 1);
  if (has) put(h, v->emb, (size_t)s->dim * (size_t)s->storage);
  for (int c = 0; c < s->ncols; c++) {
    const store_val *x = &src->cv[c];
    switch (s->cdef[c].type) {
    case STORE_T_INTEGER: put_i64(h, x->type ? x->i : INT64_MIN); break;
    case STORE_T_FLOAT: put_f64(h, x->type ? x->f : NAN); break;
    case STORE_T_BOOLEAN: {
      int8_t b = x->type ? (int8_t)x->i : -1; /* (as stored: a byte other than 0 or 1 is not what was signed) */
      put(h, &b, 1);
      break;
    }
    case STORE_T_TEXT:
    case STORE_T_BLOB: put_str(h, x->type ? x->p : NULL, x->n); break;
    default: { /* a vector */
      uint8_t present = x->type != 0;
      put(h, &present, 1);
      if (present) put(h, x->p, x->n);
    }
    }
  }
  put_final(h, out);
}

/* The store's schema as its signatures cover it: dim, metric, storage and
** the declared columns' declarations (the root's `columns`, "" when none). */
static int schema_hash(store *s, uint8_t out[32]) {
  enc e;
  e.started = 0;
  e.n = 0;
  put(&e, "h5mem-schema-v1", 16);
  put_i64(&e, s->dim);
  const char *m = store_metric_name(s->metric), *st = s->storage == STORE_F16 ? "float16" : "float32";
  put_str(&e, m, strlen(m));
  put_str(&e, st, strlen(st));
  char *cols = malloc(65536);
  if (!cols) return STORE_ENOMEM;
  if (s->ncols == 0 || store_attr(s, "columns", cols, 65536) != STORE_OK) cols[0] = 0;
  put_str(&e, cols, strlen(cols));
  free(cols);
  put_final(&e, out);
  return STORE_OK;
}

static int graph_row(void *ctx, const gstore_val *v, int n) {
  enc *e = ctx;
  for (int c = 0; c < n; c++) {
    if (v[c].kind == 0) put_i64(e, v[c].i);
    else if (v[c].kind == 2) put_f64(e, v[c].f);
    else put_str(e, v[c].s, v[c].n);
  }
  return STORE_OK;
}

/* The knowledge graph's three hashes (entities, relations, mentions): of
** the rows its file holds (file), or of those it will after a checkpoint. */
static int graph_hash(store *s, int file, uint8_t out[96]) {
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    enc e;
    e.started = 0;
    e.n = 0;
    uint8_t tag[16];
    memcpy(tag, "h5mem-graph-v1", 15);
    tag[15] = (uint8_t)t;
    put(&e, tag, 16);
    int rc = s->g ? gstore_each(s->g, t, file, graph_row, &e) : STORE_OK;
    if (rc) return rc;
    put_final(&e, out + 32 * t);
  }
  return STORE_OK;
}

static int have_hash(void) { return sodium_init() >= 0; }

static void hash_node(const uint8_t *l, const uint8_t *r, uint8_t out[32]) {
  uint8_t b[14 + 64];
  memcpy(b, "h5mem-node-v1", 14);
  memcpy(b + 14, l, 32);
  memcpy(b + 46, r, 32);
  crypto_generichash(out, 32, b, sizeof b, NULL, 0);
}

static void hash_empty(uint8_t out[32]) {
  crypto_generichash(out, 32, (const uint8_t *)"h5mem-empty-v1", 15, NULL, 0);
}

#else

static int have_hash(void) { return 0; }
static int schema_hash(store *s, uint8_t out[32]) {
  (void)s;
  memset(out, 0, 32);
  return STORE_OK;
}
static int graph_hash(store *s, int file, uint8_t out[96]) {
  (void)s, (void)file;
  memset(out, 0, 96);
  return STORE_OK;
}
/* (never called: have_hash() is checked first) */
static void hash_node(const uint8_t *l, const uint8_t *r, uint8_t out[32]) {
  (void)l, (void)r;
  memset(out, 0, 32);
}
static void hash_empty(uint8_t out[32]) { memset(out, 0, 32); }

static void hash_leaf(const store *s, const leafsrc *src, uint8_t out[32]) {
  (void)s, (void)src;
  memset(out, 0, 32);
}

#endif

#define NO_SODIUM "signed checkpoints need libsodium, which this build of h5mem has not (install libsodium-dev and build again)"

/* fn(ctx, i) for every i in [0, n), per of them to a task, on up to threads threads. */
typedef struct blocks {
  void (*fn)(const void *ctx, uint64_t i);
  const void *ctx;
  uint64_t n, per;
} blocks;

static int run_block(void *ctx, size_t b) {
  const blocks *k = ctx;
  uint64_t end = (b + 1) * k->per < k->n ? (b + 1) * k->per : k->n;
  for (uint64_t i = b * k->per; i < end; i++) k->fn(k->ctx, i);
  return 0;
}

static void in_blocks(int threads, uint64_t n, uint64_t per, void (*fn)(const void *, uint64_t), const void *ctx) {
  blocks k = {fn, ctx, n, per};
  util_parallel_for(threads, (size_t)((n + per - 1) / per), run_block, &k);
}

/* Leaves hashed on threads (hash_leaf reads nothing but its leafsrc). */
typedef struct hjob {
  const store *s;
  const leafsrc *src;
  uint8_t *out;
} hjob;

static void hash_one(const void *ctx, uint64_t i) {
  const hjob *j = ctx;
  hash_leaf(j->s, &j->src[i], j->out + 32 * i);
}

/* The leaves of the records at pos[0..n-1] (pos NULL: first..first+n-1)
** into out, hashed on up to threads threads. */
static int store_leaves(store *s, const uint64_t *pos, uint64_t first, uint64_t n, uint8_t *out, int threads) {
  if (!have_hash()) return store_fail(s, STORE_EUNSUPPORTED, "%s", NO_SODIUM);
  enum { LB = 4096 };
  uint64_t nb = n < LB ? n : LB;
  leafsrc *src = malloc((nb ? nb : 1) * sizeof *src);
  store_val *cv = malloc((nb ? nb : 1) * (size_t)(s->ncols ? s->ncols : 1) * sizeof *cv);
  int rc = src && cv ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  for (uint64_t b0 = 0; rc == STORE_OK && b0 < n; b0 += LB) {
    uint64_t m = n - b0 < LB ? n - b0 : LB;
    for (uint64_t i = 0; rc == STORE_OK && i < m; i++)
      rc = gather(s, pos ? pos[b0 + i] : first + b0 + i, &src[i], cv + i * (size_t)s->ncols, 0);
    hjob j = {s, src, out + 32 * b0};
    if (rc == STORE_OK) in_blocks(m >= 256 ? threads : 1, m, 64, hash_one, &j);
  }
  free(src);
  free(cv);
  return rc;
}

/* ---- the tree ------------------------------------------------------------------ */

/* Level 0 holds the leaves, level l + 1 a node per pair of level l (an odd
** last node copied up), the last level one node: the root. */
struct store_mtree {
  int nlev;
  uint64_t n[64], cap[64];
  uint8_t *lv[64];
};

void store_mtree_free(store_mtree *t) {
  if (!t) return;
  for (int l = 0; l < 64; l++) free(t->lv[l]);
  free(t);
}

static int mt_room(store_mtree *t, int l, uint64_t n) {
  if (n <= t->cap[l]) return STORE_OK;
  uint64_t cap = t->cap[l] ? t->cap[l] : 64;
  while (cap < n) cap *= 2;
  uint8_t *p = realloc(t->lv[l], (size_t)cap * 32);
  if (!p) return STORE_ENOMEM;
  t->lv[l] = p;
  t->cap[l] = cap;
  return STORE_OK;
}

static void node_at(const uint8_t *c, uint64_t n, uint64_t j, uint8_t *out) {
  if (2 * j + 1 < n) hash_node(c + 2 * j * 32, c + (2 * j + 1) * 32, out);
  else memcpy(out, c + 2 * j * 32, 32);
}

/* A level's nodes made from the one below (c: n nodes). */
typedef struct lvjob {
  const uint8_t *c;
  uint64_t n;
  uint8_t *up;
} lvjob;

static void node_one(const void *ctx, uint64_t i) {
  const lvjob *j = ctx;
  node_at(j->c, j->n, i, j->up + i * 32);
}

/* Level 0 now has n0 leaves, of which those at dirty (sorted, unique; NULL:
** all) are new: their ancestors computed again.  dirty is overwritten. */
static int mt_update(store_mtree *t, uint64_t n0, uint64_t *dirty, uint64_t nd) {
  t->n[0] = n0;
  int l = 0;
  for (; t->n[l] > 1 && l < 63; l++) {
    uint64_t n = t->n[l], up = (n + 1) / 2;
    if (mt_room(t, l + 1, up)) return STORE_ENOMEM;
    t->n[l + 1] = up;
    if (!dirty) {
      lvjob jb = {t->lv[l], n, t->lv[l + 1]};
      in_blocks(up >= 8192 ? util_ncpu() : 1, up, 4096, node_one, &jb);
      continue;
    }
    uint64_t m = 0;
    for (uint64_t i = 0; i < nd; i++) {
      uint64_t j = dirty[i] / 2;
      if (m && dirty[m - 1] == j) continue;
      dirty[m++] = j;
    }
    nd = m;
    for (uint64_t i = 0; i < nd; i++) node_at(t->lv[l], n, dirty[i], t->lv[l + 1] + dirty[i] * 32);
  }
  t->nlev = l + 1;
  return STORE_OK;
}

static void mt_root(const store_mtree *t, uint8_t out[32]) {
  if (!t->n[0]) hash_empty(out);
  else memcpy(out, t->lv[t->nlev - 1], 32);
}

/* A tree over n leaves (copied). */
static store_mtree *mt_build(const uint8_t *leaves, uint64_t n) {
  store_mtree *t = calloc(1, sizeof *t);
  if (!t || mt_room(t, 0, n ? n : 1) || (memcpy(t->lv[0], leaves, (size_t)n * 32), mt_update(t, n, NULL, 0))) {
    store_mtree_free(t);
    return NULL;
  }
  return t;
}

/* The root over n leaves (32 bytes each, in row order). */
static int merkle_root(const uint8_t *leaves, uint64_t n, uint8_t out[32]) {
  if (!have_hash()) return STORE_EUNSUPPORTED;
  store_mtree *t = mt_build(leaves, n);
  if (!t) return STORE_ENOMEM;
  mt_root(t, out);
  store_mtree_free(t);
  return STORE_OK;
}

/* ---- /sign in the file ------------------------------------------------------- */

/* The per-checkpoint datasets: four int64, then four of bytes (their
** widths), then the key file's path (strings). */
#define NI64 4
#define NBYTES 5
static const char *const i64_name[NI64] = {"seq", "wal_seq", "rows", "time"};
static const char *const b_name[NBYTES] = {"root", "prev", "key", "sig", "graph"};
static const uint64_t b_width[NBYTES] = {32, 32, 32, 64, 96};
enum { H_SEQ, H_WAL, H_ROWS, H_TIME };
enum { H_ROOT, H_PREV, H_KEY, H_SIG, H_GRAPH };
enum { SK_I64, SK_U8, SK_STR };

/* /sign's rows from..n-1 (n: how many the file has). */
typedef struct sign_hist {
  uint64_t n, from, m; /* m = n - from rows read */
  int64_t *i[NI64];
  uint8_t *b[NBYTES];
  char **key_file;
  uint64_t nleaves;    /* rows of /sign/leaves */
  int present;         /* the file has /sign (with n 0: emptied) */
} sign_hist;

static void hist_free(sign_hist *h) {
  for (int k = 0; k < NI64; k++) free(h->i[k]);
  for (int k = 0; k < NBYTES; k++) free(h->b[k]);
  for (uint64_t r = 0; h->key_file && r < h->m; r++) free(h->key_file[r]);
  free(h->key_file);
  memset(h, 0, sizeof *h);
}

/* /sign/name of the store's file, checked to be as written here: kind, a
** row's width; its rows into *rows.  STORE_ENOTFOUND when it is missing. */
static int sdset(store *s, const char *name, int kind, uint64_t width, h5_obj **d, uint64_t *rows) {
  char path[64];
  snprintf(path, sizeof path, "/sign/%s", name);
  int hr = h5_obj_open_path(s->f, path, d);
  if (hr == H5_ENOTFOUND) return STORE_ENOTFOUND;
  h5_dset_info in;
  if (hr != H5_OK || h5_dset_info_get(*d, &in) != H5_OK)
    return store_fail(s, STORE_ECORRUPT, "%s: %s: %s", s->path, path, h5_errmsg(s->f));
  int ok = kind == SK_I64   ? in.rank == 1 && in.type->cls == H5_CLASS_INTEGER && in.type->size == 8 && !in.type->big_endian
           : kind == SK_U8  ? in.rank == 2 && in.dims[1] == width && in.type->cls == H5_CLASS_INTEGER && in.type->size == 1
                            : in.rank == 1 && in.type->cls == H5_CLASS_VLEN && in.type->vlen_kind == 1;
  if (!ok) return store_fail(s, STORE_ECORRUPT, "%s: %s is not as h5mem writes it", s->path, path);
  uint64_t rowb = kind == SK_I64 ? 8 : kind == SK_U8 ? width : 16;
  if (kind == SK_STR && in.type->size != 16)
    return store_fail(s, STORE_ECORRUPT, "%s: %s is not as h5mem writes it", s->path, path);
  if (in.dims[0] > (uint64_t)s->fst.st_size / rowb)
    return store_fail(s, STORE_ECORRUPT, "%s: %s claims more rows than the file has bytes", s->path, path);
  *rows = in.dims[0];
  return STORE_OK;
}

/* Rows from..rows-1 of a dataset sdset checked, into a new buffer of esz
** bytes a row. */
static int sread(store *s, h5_obj *d, int rank, uint64_t from, uint64_t rows, size_t esz, void **out) {
  *out = NULL;
  uint64_t m = rows - from;
  void *buf = malloc(m ? (size_t)m * esz : 1);
  if (!buf) return store_fail(s, STORE_ENOMEM, "out of memory");
  uint64_t start[2] = {from, 0}, count[2] = {m, esz};
  if (m && h5_dset_read_slab(d, start, rank == 2 ? count : count, NULL, buf, (size_t)m * esz) != H5_OK) {
    free(buf);
    return store_fail(s, STORE_ECORRUPT, "%s: /sign: %s", s->path, h5_errmsg(s->f));
  }
  *out = buf;
  return STORE_OK;
}

/* /sign of the store's file: its rows from last ? n - 1 : 0 (none when it
** has none; h->n 0 when the store is not signed). */
static int read_hist(store *s, int last, sign_hist *h) {
  memset(h, 0, sizeof *h);
  h5_obj *g;
  int hr = h5_obj_open_path(s->f, "/sign", &g);
  if (hr == H5_ENOTFOUND) return STORE_OK; /* not signed */
  if (hr != H5_OK) return store_fail(s, STORE_ECORRUPT, "%s: /sign: %s", s->path, h5_errmsg(s->f));
  h->present = 1;
  h5_obj *d;
  uint64_t rows;
  int rc = STORE_OK;
  for (int k = 0; k < NI64 + NBYTES + 1 && rc == STORE_OK; k++) {
    const char *name = k < NI64 ? i64_name[k] : k < NI64 + NBYTES ? b_name[k - NI64] : "key_file";
    int kind = k < NI64 ? SK_I64 : k < NI64 + NBYTES ? SK_U8 : SK_STR;
    uint64_t width = kind == SK_U8 ? b_width[k - NI64] : 0;
    rc = sdset(s, name, kind, width, &d, &rows);
    if (rc == STORE_ENOTFOUND) rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/%s is missing", s->path, name);
    if (rc) break;
    if (!k) {
      h->n = rows;
      h->from = last && rows ? rows - 1 : 0;
      h->m = rows - h->from;
    } else if (rows != h->n) {
      rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/%s has %llu rows, /sign/seq %llu", s->path, name,
                      (unsigned long long)rows, (unsigned long long)h->n);
      break;
    }
    if (kind == SK_I64) {
      rc = sread(s, d, 1, h->from, rows, 8, (void **)&h->i[k]);
    } else if (kind == SK_U8) {
      rc = sread(s, d, 2, h->from, rows, (size_t)width, (void **)&h->b[k - NI64]);
    } else {
      uint8_t *el;
      rc = sread(s, d, 1, h->from, rows, 16, (void **)&el);
      if (rc) break;
      h->key_file = calloc(h->m ? h->m : 1, sizeof *h->key_file);
      if (!h->key_file) rc = store_fail(s, STORE_ENOMEM, "out of memory");
      for (uint64_t r = 0; rc == STORE_OK && r < h->m; r++) {
        const uint8_t *data;
        size_t len;
        uint32_t cnt;
        if (h5_vlen_get(s->f, el + r * 16, &data, &len, &cnt) != H5_OK) {
          rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/key_file: %s", s->path, h5_errmsg(s->f));
        } else if (!(h->key_file[r] = malloc(len + 1))) {
          rc = store_fail(s, STORE_ENOMEM, "out of memory");
        } else {
          if (len) memcpy(h->key_file[r], data, len);
          h->key_file[r][len] = 0;
        }
      }
      free(el);
    }
  }
  if (rc == STORE_OK) {
    rc = sdset(s, "leaves", SK_U8, 32, &d, &h->nleaves);
    if (rc == STORE_ENOTFOUND) rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves is missing", s->path);
  }
  if (rc) hist_free(h);
  return rc;
}

/* All of /sign/leaves. */
static int read_leaves(store *s, uint64_t n, uint8_t **out) {
  h5_obj *d;
  uint64_t rows;
  int rc = sdset(s, "leaves", SK_U8, 32, &d, &rows);
  if (rc == STORE_ENOTFOUND) rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves is missing", s->path);
  if (rc) return rc;
  if (rows < n) return store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves has %llu rows, expected %llu", s->path,
                                  (unsigned long long)rows, (unsigned long long)n);
  /* chunk by chunk from the mapped file, as h5mem lays it out (else read) */
  bcol c;
  memset(&c, 0, sizeof c);
  uint64_t all = UINT64_MAX;
  char why[sizeof s->err];
  memcpy(why, s->err, sizeof why);
  if (store_map_col(s, d, "/sign/leaves", &c, 1, 32, &all) != STORE_OK) {
    free(c.caddr);
    memcpy(s->err, why, sizeof why);
    return sread(s, d, 2, 0, n, 32, (void **)out);
  }
  uint8_t *buf = malloc(n ? (size_t)n * 32 : 1);
  rc = buf ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  for (uint64_t r = 0; rc == STORE_OK && r < n; r += c.crows) {
    uint64_t m = n - r < c.crows ? n - r : c.crows;
    const void *p = h5_file_span(s->f, c.caddr[r / c.crows], (size_t)m * 32);
    if (!p) rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves: a chunk lies outside the file", s->path);
    else memcpy(buf + r * 32, p, (size_t)m * 32);
  }
  free(c.caddr);
  if (rc) {
    free(buf);
    buf = NULL;
  }
  *out = buf;
  return rc;
}

/* What is signed: a tag, the store's id, seq, wal_seq, rows and time
** (int64, little-endian), the root, the root before, the public key, the
** schema's hash and the graph's three hashes. */
#define MSG_LEN (20 + 16 + 8 * NI64 + 4 * 32 + 96)
static void ckpt_msg(uint8_t m[MSG_LEN], const uint8_t id[16], const int64_t v[NI64], const uint8_t *root,
                     const uint8_t *prev, const uint8_t *key, const uint8_t *schema, const uint8_t *graph) {
  memcpy(m, "h5mem-checkpoint-v1", 20);
  memcpy(m + 20, id, 16);
  for (int k = 0; k < NI64; k++)
    for (int i = 0; i < 8; i++) m[36 + 8 * k + i] = (uint8_t)((uint64_t)v[k] >> (8 * i));
  memcpy(m + 36 + 8 * NI64, root, 32);
  memcpy(m + 68 + 8 * NI64, prev, 32);
  memcpy(m + 100 + 8 * NI64, key, 32);
  memcpy(m + 132 + 8 * NI64, schema, 32);
  memcpy(m + 164 + 8 * NI64, graph, 96);
}

/* Append one checkpoint's row to /sign's datasets in w (made when missing). */
static int append_ckpt(store *s, h5w *w, const int64_t v[NI64], const uint8_t *const b[NBYTES], const char *key_file) {
  h5w_obj *g, *d;
  if (h5w_lookup(w, "/sign", &g) != H5_OK && h5w_group(w, h5w_root(w), "sign", &g) != H5_OK)
    return store_wfail(s, w, "signing");
  char path[64];
  int rc = STORE_OK;
  for (int k = 0; k < NI64 + NBYTES + 1 && rc == STORE_OK; k++) {
    const char *name = k < NI64 ? i64_name[k] : k < NI64 + NBYTES ? b_name[k - NI64] : "key_file";
    snprintf(path, sizeof path, "/sign/%s", name);
    h5_type *t = k < NI64 ? h5_type_new_int(8, 1) : k < NI64 + NBYTES ? h5_type_new_int(1, 0) : h5_type_new_string(0, 1);
    if (!t) return store_fail(s, STORE_ENOMEM, "out of memory");
    rc = store_wdset(w, g, path, t, 64, k >= NI64 && k < NI64 + NBYTES ? b_width[k - NI64] : 0, &d);
    if (rc) return store_wfail(s, w, "signing");
    uint8_t slot[16] = {0}; /* (a string's row: its pointer first) */
    memcpy(slot, &key_file, sizeof key_file);
    const void *row = k < NI64 ? (const void *)&v[k] : k < NI64 + NBYTES ? (const void *)b[k - NI64] : (const void *)slot;
    if (h5w_append(w, d, row, 1) != H5_OK) rc = store_wfail(s, w, "signing");
  }
  return rc;
}

/* The /sign/leaves dataset of w (made when missing). */
static int leaves_dset(store *s, h5w *w, h5w_obj **d) {
  h5w_obj *g;
  if (h5w_lookup(w, "/sign", &g) != H5_OK && h5w_group(w, h5w_root(w), "sign", &g) != H5_OK)
    return store_wfail(s, w, "signing");
  h5_type *t = h5_type_new_int(1, 0);
  if (!t) return store_fail(s, STORE_ENOMEM, "out of memory");
  return store_wdset(w, g, "/sign/leaves", t, 1024, 32, d) ? store_wfail(s, w, "signing") : STORE_OK;
}

/* Sign the checkpoint's row v (v[H_SEQ] .. v[H_TIME] set) over root, and append it. */
static int sign_append(store *s, h5w *w, store_signer *sg, int64_t v[NI64], const uint8_t root[32],
                       const uint8_t graph[96]) {
  uint8_t msg[MSG_LEN], sig[SIGN_SIG_BYTES];
  ckpt_msg(msg, s->store_id, v, root, sg->last, sg->pk, sg->schema, graph);
  if (sign_detached(sg->seed, msg, sizeof msg, sig) != SIGN_OK)
    return store_fail(s, STORE_EUNSUPPORTED, "%s", NO_SODIUM);
  const uint8_t *b[NBYTES] = {root, sg->last, sg->pk, sig, graph};
  return append_ckpt(s, w, v, b, sg->key_file);
}

/* ---- signing a checkpoint -------------------------------------------------------- */

int store_sign_key(store *s, const char *path) {
  if (s->ephemeral) return store_fail(s, STORE_EINVAL, "%s is an ephemeral store: it has no file to sign", s->path);
  if (!path) {
    free(s->sign_path);
    s->sign_path = NULL;
    return STORE_OK;
  }
  uint8_t seed[SIGN_SEED_BYTES], pk[SIGN_PK_BYTES];
  char err[512];
  int rc = sign_key_read(path, seed, pk, err, sizeof err);
  sign_wipe(seed, sizeof seed);
  if (rc) return store_fail(s, rc, "%s", err);
  if (s->f) { /* a store signed with another key refuses this one now, not at its checkpoint */
    sign_hist h;
    if ((rc = read_hist(s, 1, &h))) return rc;
    if (h.m && memcmp(h.b[H_KEY], pk, 32)) {
      char a[73], b[73];
      sign_pub_format(h.b[H_KEY], a);
      sign_pub_format(pk, b);
      hist_free(&h);
      return store_fail(s, STORE_EMISMATCH, "%s is signed with %s; the key file %s is %s's (a store keeps one key)",
                        s->path, a, path, b);
    }
    hist_free(&h);
  }
  char *p = strdup(path);
  if (!p) return store_fail(s, STORE_ENOMEM, "out of memory");
  free(s->sign_path);
  s->sign_path = p;
  return STORE_OK;
}

int64_t store_sign_seq(store *s) {
  if (s->ephemeral || !s->f) return 0;
  sign_hist h;
  int rc = read_hist(s, 1, &h);
  if (rc) return -(int64_t)rc;
  int64_t n = (int64_t)h.n;
  hist_free(&h);
  return n;
}

int store_sign_note(store *s, const char *path) {
  if (s->ephemeral || (s->sign_path && !strcmp(s->sign_path, path))) return STORE_OK;
  char *p = strdup(path);
  if (!p) return store_fail(s, STORE_ENOMEM, "out of memory");
  free(s->sign_path);
  s->sign_path = p;
  return STORE_OK;
}

int store_sign_now(store *s, const char *path) {
  int rc = path ? store_sign_key(s, path) : STORE_OK;
  if (rc) return rc;
  s->sign_force = 1;
  rc = store_checkpoint(s);
  s->sign_force = 0;
  return rc;
}

int store_sign_begin(store *s, store_signer *sg) {
  memset(sg, 0, sizeof *sg);
  if (s->ephemeral || s->file_only) return STORE_OK;
  sign_hist h;
  int rc = read_hist(s, 1, &h);
  if (rc) return rc;
  sg->n = (int64_t)h.n;
  sg->nleaves = h.nleaves;
  const char *path = s->sign_path ? s->sign_path : h.m ? h.key_file[0] : NULL;
  if (!s->sign_force && h.present && !h.n) { /* (only h5mem_sign starts signing anew) */
    hist_free(&h);
    return store_fail(s, STORE_ECORRUPT, "%s: /sign holds no signed checkpoint: it was emptied; h5mem_verify shows "
                      "the store, and h5mem_sign signs it as it is", s->path);
  }
  if (!s->sign_force && !h.present && path) {
    hist_free(&h);
    return store_fail(s, STORE_EMISMATCH, "%s has no signatures, but its table gives signing_key= (were they removed?): "
                      "h5mem_verify shows the store, and h5mem_sign signs it as it is", s->path);
  }
  if (!path || !*path) {
    hist_free(&h);
    return s->sign_force ? store_fail(s, STORE_EINVAL, "%s: no key to sign with: give a secret key file (h5mem_keygen makes one)", s->path)
                         : STORE_OK;
  }
  char err[512];
  if ((rc = sign_key_read(path, sg->seed, sg->pk, err, sizeof err))) {
    rc = h.m ? store_fail(s, rc, "%s is signed, and a checkpoint must be signed too, but its key file cannot be used: %s "
                          "(give the key with signing_key= or h5mem_sign; until then the changes stay in the log %s)",
                          s->path, err, s->walpath)
             : store_fail(s, rc, "signing %s: %s", s->path, err);
    hist_free(&h);
    return rc;
  }
  if (h.m && memcmp(h.b[H_KEY], sg->pk, 32)) {
    char a[73], b[73];
    sign_pub_format(h.b[H_KEY], a);
    sign_pub_format(sg->pk, b);
    rc = store_fail(s, STORE_EMISMATCH, "%s is signed with %s; the key file %s is %s's (a store keeps one key)", s->path,
                    a, path, b);
  } else if (h.m && !s->sign_force &&
             ((uint64_t)h.i[H_WAL][0] != s->ckpt_seq || (uint64_t)h.i[H_ROWS][0] != s->nbase || h.nleaves != s->nbase)) {
    rc = store_fail(s, STORE_EMISMATCH, "%s changed without a signature after its signed checkpoint %lld (%lld rows "
                    "signed, %llu now; log frames up to %lld signed, %llu now): h5mem_verify shows what changed, and "
                    "h5mem_sign signs the store as it is",
                    s->path, (long long)h.i[H_SEQ][0], (long long)h.i[H_ROWS][0], (unsigned long long)s->nbase,
                    (long long)h.i[H_WAL][0], (unsigned long long)s->ckpt_seq);
  } else if (h.m && !s->sign_force && h.i[H_SEQ][0] != (int64_t)h.n) {
    rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/seq ends with %lld, expected %llu", s->path,
                    (long long)h.i[H_SEQ][0], (unsigned long long)h.n);
  } else if (schema_hash(s, sg->schema)) { /* (what this checkpoint signs, and the last one must have) */
    rc = store_fail(s, STORE_ENOMEM, "out of memory");
  } else if (h.m && !s->sign_force) { /* the last signature, which this one chains to, must hold */
    uint8_t msg[MSG_LEN];
    int64_t v[NI64];
    for (int k = 0; k < NI64; k++) v[k] = h.i[k][0];
    ckpt_msg(msg, s->store_id, v, h.b[H_ROOT], h.b[H_PREV], h.b[H_KEY], sg->schema, h.b[H_GRAPH]);
    if (sign_check(h.b[H_KEY], msg, sizeof msg, h.b[H_SIG]) != SIGN_OK)
      rc = store_fail(s, STORE_ECORRUPT, "%s: the signature of its last signed checkpoint (%lld) does not verify: "
                      "/sign or the store's schema was changed; h5mem_verify shows what, and h5mem_sign signs the "
                      "store as it is", s->path, (long long)h.i[H_SEQ][0]);
  }
  if (rc == STORE_OK) {
    if (h.m) memcpy(sg->last, h.b[H_ROOT], 32);
    if (h.m) memcpy(sg->last_graph, h.b[H_GRAPH], 96);
    sg->full = !h.m || s->sign_force;
    char *rp = realpath(path, NULL); /* (recorded as a full path: the next writer may run elsewhere) */
    sg->key_file = rp ? rp : strdup(path);
    if (!sg->key_file) rc = store_fail(s, STORE_ENOMEM, "out of memory");
    else sg->on = 1;
  }
  hist_free(&h);
  if (rc) sign_wipe(sg->seed, sizeof sg->seed);
  return rc;
}

void store_sign_end(store *s, store_signer *sg, int ok) {
  sign_wipe(sg->seed, sizeof sg->seed);
  free(sg->key_file);
  sg->key_file = NULL;
  if (!ok && sg->on) { /* (the tree may have gone past the file) */
    store_mtree_free(s->mt);
    s->mt = NULL;
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The graph's hashes this checkpoint signs: the last signed ones when it
** did not change; else those of the rows it will hold, after checking,
** once per graph this handle loads, that the rows its file holds are the
** ones signed (or a graph edited in the file would be signed over). */
static int sign_graph(store *s, store_signer *sg, uint8_t graph[96]) {
  if (!sg->full && !gstore_dirty(s->g)) {
    memcpy(graph, sg->last_graph, 96);
    return STORE_OK;
  }
  int rc;
  if (!sg->full && !gstore_checked(s->g)) {
    uint8_t was[96];
    if ((rc = graph_hash(s, 1, was))) return store_fail(s, rc, "out of memory");
    for (int t = 0; t < STORE_G_NTABLES; t++)
      if (memcmp(was + 32 * t, sg->last_graph + 32 * t, 32))
        return store_fail(s, STORE_EMISMATCH, "%s: the knowledge graph's %s are not as they were signed: they were "
                          "changed in the file, not through h5mem, and a checkpoint does not sign them again "
                          "(h5mem_verify; h5mem_sign signs the store as it is)",
                          s->path, t == 0 ? "entities" : t == 1 ? "relations" : "mentions");
  }
  if ((rc = graph_hash(s, 0, graph))) return store_fail(s, rc, "out of memory");
  gstore_mark_checked(s->g); /* (what it holds after the checkpoint is what is signed) */
  return STORE_OK;
}

int store_sign_write(store *s, h5w *w, store_signer *sg, uint64_t upto, uint64_t nlive) {
  if (!have_hash()) return store_fail(s, STORE_EUNSUPPORTED, "%s", NO_SODIUM);
  uint64_t nb = s->nbase, nchg = 0;
  if (sg->full && sg->nleaves > nb)
    return store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves has %llu rows, the store %llu", s->path,
                      (unsigned long long)sg->nleaves, (unsigned long long)nb);
  uint64_t cap = (sg->full ? nb : s->nov + s->nnewdead) + nlive;
  uint64_t *pos = malloc((cap ? cap : 1) * sizeof *pos); /* the store's positions, then the file's rows */
  uint8_t *lf = malloc((cap ? cap : 1) * 32);
  int rc = pos && lf ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  if (rc == STORE_OK) {
    if (sg->full) {
      for (uint64_t r = 0; r < nb; r++) pos[nchg++] = r;
    } else { /* the base rows changed in place or deleted */
      for (uint64_t i = 0; i < s->nov; i++)
        if (s->ov[i].pos < nb) pos[nchg++] = s->ov[i].pos;
      for (uint64_t i = 0; i < s->nnewdead; i++)
        if (s->newdead[i] < nb) pos[nchg++] = s->newdead[i];
      qsort(pos, nchg, sizeof *pos, cmp_u64);
      uint64_t m = 0;
      for (uint64_t i = 0; i < nchg; i++)
        if (!m || pos[m - 1] != pos[i]) pos[m++] = pos[i];
      nchg = m;
    }
    uint64_t j = nchg;
    for (uint64_t i = 0; i < s->ndelta; i++)
      if (!s->delta[i]->dead) pos[j++] = nb + i;
  }
  /* the tree over the file's leaves (kept by this handle from its last checkpoint) */
  if (rc == STORE_OK && !sg->full && (!s->mt || s->mt->n[0] != nb)) {
    store_mtree_free(s->mt);
    s->mt = NULL;
    uint8_t *all = NULL;
    if ((rc = read_leaves(s, nb, &all)) == STORE_OK && !(s->mt = mt_build(all, nb)))
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    free(all);
    uint8_t got[32];
    if (rc == STORE_OK && (mt_root(s->mt, got), memcmp(got, sg->last, 32)))
      rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves does not give the last signed root: it was changed; "
                      "h5mem_verify shows the store, and h5mem_sign signs it as it is", s->path);
  }
  /* a row changed in place or deleted (an UPDATE of other columns is a
  ** delete and a put of the row's values) is signed again: first it must be
  ** as signed, or an edit made in the file would be signed over */
  for (uint64_t i = 0; rc == STORE_OK && !sg->full && i < nchg; i++) {
    store_val cv[STORE_COLS_MAX];
    leafsrc src;
    uint8_t was[32];
    if ((rc = gather(s, pos[i], &src, cv, STORE_V_FILE))) break;
    hash_leaf(s, &src, was);
    if (memcmp(was, s->mt->lv[0] + 32 * pos[i], 32))
      rc = store_fail(s, STORE_EMISMATCH, "%s: the record of id %lld (row %llu) is not as it was signed: it was "
                      "changed in the file, not through h5mem, and a checkpoint does not sign it, or what was made "
                      "from it, again (h5mem_verify shows every such row; h5mem_sign signs the store as it is)",
                      s->path, (long long)src.id, (unsigned long long)pos[i]);
  }
  if (rc == STORE_OK) rc = store_leaves(s, pos, 0, nchg + nlive, lf, util_ncpu());
  for (uint64_t i = 0; rc == STORE_OK && i < nlive; i++) pos[nchg + i] = nb + i; /* (the rows they become) */
  h5w_obj *dl;
  if (rc == STORE_OK) rc = leaves_dset(s, w, &dl);
  if (rc == STORE_OK) {
    /* rows already in /sign/leaves are rewritten (their chunks copied), the rest appended */
    uint64_t nre = sg->full ? sg->nleaves : nchg, from = sg->full ? sg->nleaves : nchg;
    if (nre && h5w_rewrite_rows(w, dl, pos, lf, nre) != H5_OK) rc = store_wfail(s, w, "signing");
    if (rc == STORE_OK && nchg + nlive > from && h5w_append(w, dl, lf + from * 32, nchg + nlive - from) != H5_OK)
      rc = store_wfail(s, w, "signing");
  }
  /* the tree */
  if (rc == STORE_OK && sg->full) {
    store_mtree_free(s->mt);
    if (!(s->mt = mt_build(lf, nb + nlive))) rc = store_fail(s, STORE_ENOMEM, "out of memory");
  }
  if (rc == STORE_OK && !sg->full) {
    store_mtree *t = s->mt;
    if (mt_room(t, 0, nb + nlive)) {
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    } else {
      for (uint64_t i = 0; i < nchg + nlive; i++) memcpy(t->lv[0] + pos[i] * 32, lf + i * 32, 32);
      if (mt_update(t, nb + nlive, pos, nchg + nlive)) rc = store_fail(s, STORE_ENOMEM, "out of memory");
    }
  }
  if (rc == STORE_OK) {
    uint8_t root[32];
    mt_root(s->mt, root);
    int64_t v[NI64] = {sg->n + 1, (int64_t)upto, (int64_t)(nb + nlive), (int64_t)time(NULL)};
    uint8_t graph[96];
    rc = sign_graph(s, sg, graph);
    if (rc == STORE_OK) rc = sign_append(s, w, sg, v, root, graph);
  }
  free(pos);
  free(lf);
  return rc;
}

int store_sign_optimize(store *s, h5w *w, store_signer *sg, uint64_t nlive) {
  if (!have_hash()) return store_fail(s, STORE_EUNSUPPORTED, "%s", NO_SODIUM);
  sign_hist h;
  int rc = read_hist(s, 0, &h);
  if (rc) return rc;
  uint8_t *old = NULL, *lf = malloc((nlive ? nlive : 1) * 32);
  if (!lf) rc = store_fail(s, STORE_ENOMEM, "out of memory");
  /* the history as it was */
  for (uint64_t r = 0; rc == STORE_OK && r < h.m; r++) {
    int64_t v[NI64];
    const uint8_t *b[NBYTES];
    for (int k = 0; k < NI64; k++) v[k] = h.i[k][r];
    for (int k = 0; k < NBYTES; k++) b[k] = h.b[k] + r * b_width[k];
    rc = append_ckpt(s, w, v, b, h.key_file[r]);
  }
  /* the live rows' leaves, as signed (a row changed in the file since
  ** keeps its signed leaf, and h5mem_verify still finds it) */
  if (rc == STORE_OK) rc = read_leaves(s, s->nbase, &old);
  uint8_t got[32];
  if (rc == STORE_OK && (rc = merkle_root(old, s->nbase, got)) == STORE_OK && memcmp(got, sg->last, 32))
    rc = store_fail(s, STORE_ECORRUPT, "%s: /sign/leaves does not give the last signed root: it was changed; "
                    "h5mem_verify shows the store, and h5mem_sign signs it as it is", s->path);
  uint64_t j = 0;
  for (uint64_t r = 0; rc == STORE_OK && r < s->nbase; r++)
    if (!s->base_dead[r] && j < nlive) memcpy(lf + 32 * j++, old + 32 * r, 32);
  if (rc == STORE_OK && j != nlive)
    rc = store_fail(s, STORE_ECORRUPT, "%s: %llu live rows, expected %llu", s->path, (unsigned long long)j,
                    (unsigned long long)nlive);
  h5w_obj *dl;
  if (rc == STORE_OK) rc = leaves_dset(s, w, &dl);
  if (rc == STORE_OK && nlive && h5w_append(w, dl, lf, nlive) != H5_OK) rc = store_wfail(s, w, "signing");
  if (rc == STORE_OK) {
    uint8_t root[32];
    rc = merkle_root(lf, nlive, root);
    if (rc) rc = store_fail(s, rc, "out of memory");
    int64_t v[NI64] = {(int64_t)h.n + 1, (int64_t)s->ckpt_seq, (int64_t)nlive, (int64_t)time(NULL)};
    sg->n = (int64_t)h.n;
    if (rc == STORE_OK) rc = sign_append(s, w, sg, v, root, sg->last_graph); /* (the graph written as it was) */
  }
  free(old);
  free(lf);
  hist_free(&h);
  return rc;
}

/* ---- verifying ---------------------------------------------------------------------- */

static void json_hex(strbuf *sb, const uint8_t *b, size_t n) {
  strbuf_putc(sb, '"');
  for (size_t i = 0; i < n; i++) strbuf_printf(sb, "%02x", b[i]);
  strbuf_putc(sb, '"');
}

static void json_ids(strbuf *sb, const char *name, const int64_t *ids, uint64_t n) {
  strbuf_printf(sb, ",\"%s\":[", name);
  for (uint64_t i = 0; i < n; i++) strbuf_printf(sb, i ? ",%lld" : "%lld", (long long)ids[i]);
  strbuf_putc(sb, ']');
}

typedef struct idlist {
  int64_t *v;
  uint64_t n, cap;
} idlist;

static int ids_add(idlist *l, int64_t id) {
  if (l->n == l->cap) {
    uint64_t cap = l->cap ? 2 * l->cap : 16;
    int64_t *v = realloc(l->v, cap * sizeof *v);
    if (!v) return STORE_ENOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = id;
  return STORE_OK;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The ids a handle holds past its file (its log's records): sorted, unique. */
static int tail_ids(store *t, idlist *l) {
  int rc = STORE_OK;
  for (uint64_t i = 0; i < t->ndelta && !rc; i++)
    if (!t->delta[i]->dead) rc = ids_add(l, t->delta[i]->id);
  for (uint64_t i = 0; i < t->nnewdead && !rc; i++)
    if (t->newdead[i] < t->nbase) rc = ids_add(l, t->base_id[t->newdead[i]]);
  for (uint64_t i = 0; i < t->nov && !rc; i++)
    if (t->ov[i].pos < t->nbase) rc = ids_add(l, t->base_id[t->ov[i].pos]);
  if (rc) return rc;
  if (l->n > 1) qsort(l->v, l->n, sizeof *l->v, cmp_i64);
  uint64_t m = 0;
  for (uint64_t i = 0; i < l->n; i++)
    if (!m || l->v[m - 1] != l->v[i]) l->v[m++] = l->v[i];
  l->n = m;
  return STORE_OK;
}

/* A problem found, as a JSON string in errs (comma-separated). */
static void problem(strbuf *errs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(strbuf *errs, const char *fmt, ...) {
  char buf[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (errs->len) strbuf_putc(errs, ',');
  strbuf_json_string(errs, buf, strlen(buf));
}

/* Verifying hashes every row: each thread reads its share of the rows
** through a handle of its own (a file's heap index is one thread's). */
typedef struct vjob {
  store *s0;
  const char *path;
  uint64_t n;
  uint8_t *out;
  int nt;
  int rc[8];
  char err[8][256];
} vjob;

static int verify_part(void *ctx, size_t t) {
  vjob *j = ctx;
  uint64_t a = j->n * t / (uint64_t)j->nt, b = j->n * (t + 1) / (uint64_t)j->nt;
  store *s = j->s0;
  int rc = STORE_OK;
  if (t) {
    store_opts o;
    memset(&o, 0, sizeof o);
    o.no_create = 1;
    o.file_only = 1;
    if ((rc = store_open(j->path, &o, 1, &s, j->err[t], sizeof j->err[t]))) return j->rc[t] = rc;
    if (s->nbase != j->s0->nbase || s->ckpt_seq != j->s0->ckpt_seq || memcmp(s->store_id, j->s0->store_id, 16)) {
      snprintf(j->err[t], sizeof j->err[t], "%s changed while it was verified: verify it again", j->path);
      rc = STORE_EBUSY;
    }
  }
  if (rc == STORE_OK) h5_file_prefault(s->f); /* (every row is read: no page fault each) */
  if (rc == STORE_OK) rc = store_leaves(s, NULL, a, b - a, j->out + 32 * a, 1);
  if (rc && !j->err[t][0]) snprintf(j->err[t], sizeof j->err[t], "%s", store_errmsg(s));
  if (t) store_close(s);
  return j->rc[t] = rc;
}

static int verify_leaves(store *s, const char *path, uint64_t n, uint8_t *out, char *err, size_t errlen) {
  vjob j = {.s0 = s, .path = path, .n = n, .out = out, .nt = n >= 16384 ? util_ncpu() : 1};
  if (j.nt > 8) j.nt = 8;
  util_parallel_for(j.nt, (size_t)j.nt, verify_part, &j);
  for (int t = 0; t < j.nt; t++)
    if (j.rc[t]) {
      if (t) store_fail(s, j.rc[t], "%s", j.err[t]);
      snprintf(err, errlen, "%s", j.err[t]);
      return j.rc[t];
    }
  return STORE_OK;
}

int store_verify(const char *path, const uint8_t *pin, int64_t min_seq, store *tail, strbuf *out, char *err,
                 size_t errlen) {
  store_opts o;
  memset(&o, 0, sizeof o);
  o.no_create = 1;
  o.file_only = 1;
  store *s;
  int rc = store_open(path, &o, 1, &s, err, errlen);
  if (rc) return rc;
  if (!have_hash()) {
    store_close(s);
    snprintf(err, errlen, "%s", NO_SODIUM);
    return STORE_EUNSUPPORTED;
  }
  sign_hist h;
  if ((rc = read_hist(s, 0, &h))) {
    /* (a damaged /sign is a verdict, not an error) */
    if (rc == STORE_ENOMEM) {
      snprintf(err, errlen, "out of memory");
      store_close(s);
      return rc;
    }
  }
  strbuf errs = {0};
  idlist edited = {0}, added = {0}, removed = {0}, unsig = {0};
  uint64_t verified = 0, R = s->nbase, missing = 0;
  int intact = 0, data_ok = 0, gok[STORE_G_NTABLES] = {0, 0, 0};
  uint8_t *stored = NULL, *now = NULL;
  if (rc) {
    problem(&errs, "%s", store_errmsg(s));
  } else if (!h.n) {
    problem(&errs, "%s is not signed", path);
  } else {
    /* the chain: each checkpoint's signature, and its link to the one before */
    uint8_t schema[32];
    if (schema_hash(s, schema)) goto oom;
    for (uint64_t r = 0; r < h.n; r++) {
      int64_t v[NI64];
      for (int k = 0; k < NI64; k++) v[k] = h.i[k][r];
      const uint8_t *root = h.b[H_ROOT] + 32 * r, *prev = h.b[H_PREV] + 32 * r, *key = h.b[H_KEY] + 32 * r;
      static const uint8_t zero[32];
      uint8_t msg[MSG_LEN];
      ckpt_msg(msg, s->store_id, v, root, prev, key, schema, h.b[H_GRAPH] + 96 * r);
      char kt[73];
      sign_pub_format(key, kt);
      if (v[H_SEQ] != (int64_t)r + 1) {
        problem(&errs, "checkpoint %llu is numbered %lld", (unsigned long long)r + 1, (long long)v[H_SEQ]);
        break;
      }
      if (memcmp(prev, r ? h.b[H_ROOT] + 32 * (r - 1) : zero, 32)) {
        problem(&errs, "checkpoint %llu does not follow checkpoint %llu (its previous root differs)",
                (unsigned long long)r + 1, (unsigned long long)r);
        break;
      }
      if (sign_check(key, msg, sizeof msg, h.b[H_SIG] + 64 * r) != SIGN_OK) {
        problem(&errs, "checkpoint %llu: the signature does not verify with its key %s (its fields, or the "
                "store's id, dim, metric, storage or declared columns, were changed)", (unsigned long long)r + 1, kt);
        break;
      }
      if (pin && memcmp(pin, key, 32)) {
        char pt[73];
        sign_pub_format(pin, pt);
        problem(&errs, "checkpoint %llu is signed with %s, not with %s", (unsigned long long)r + 1, kt, pt);
        break;
      }
      verified++;
    }
    uint64_t L = h.n - 1, rows = (uint64_t)h.i[H_ROWS][L];
    const uint8_t *root = h.b[H_ROOT] + 32 * L;
    if (min_seq > h.i[H_SEQ][L])
      problem(&errs, "rolled back: the last signed checkpoint is %lld, and %lld was seen", (long long)h.i[H_SEQ][L],
              (long long)min_seq);
    if (h.i[H_ROWS][L] < 0 || rows > (uint64_t)s->fst.st_size) {
      problem(&errs, "checkpoint %llu claims %lld rows", (unsigned long long)L + 1, (long long)h.i[H_ROWS][L]);
      rows = 0;
    }
    /* the leaves as stored, and as the rows give them now */
    uint64_t ns = h.nleaves < rows ? h.nleaves : rows;
    uint8_t got[32];
    int sroot = 0; /* the stored leaves give the signed root */
    if ((rc = read_leaves(s, ns, &stored)) == STORE_OK && (rc = merkle_root(stored, ns, got)) == STORE_OK)
      sroot = ns == rows && !memcmp(got, root, 32);
    intact = sroot && h.nleaves == rows;
    now = malloc((R ? R : 1) * 32);
    if (!now) rc = STORE_ENOMEM;
    if (rc == STORE_OK) rc = verify_leaves(s, path, R, now, err, errlen);
    /* (the rows' leaves all as stored: the same root, computed once) */
    if (rc == STORE_OK && R == rows && ns == rows && !memcmp(now, stored, (size_t)R * 32))
      data_ok = sroot;
    else if (rc == STORE_OK && (rc = merkle_root(now, R, got)) == STORE_OK)
      data_ok = R == rows && !memcmp(got, root, 32);
    if (rc == STORE_ENOMEM) goto oom;
    if (rc) problem(&errs, "%s", store_errmsg(s));
    /* where the rows differ from what was signed */
    for (uint64_t r = 0; rc == STORE_OK && !data_ok && r < R; r++) {
      int live = store_pos_live(s, r);
      int64_t id = store_pos_id(s, r);
      int e = STORE_OK;
      if (r >= rows) e = live ? ids_add(&added, id) : STORE_OK;
      else if (r < ns && memcmp(now + 32 * r, stored + 32 * r, 32)) e = ids_add(live ? &edited : &removed, id);
      if (e) goto oom;
    }
    missing = R < rows ? rows - R : 0;
    if (rc == STORE_OK && !data_ok) {
      if (edited.n || added.n || removed.n || missing)
        problem(&errs, "the rows differ from checkpoint %llu's: %llu edited, %llu added, %llu removed, %llu missing",
                (unsigned long long)L + 1, (unsigned long long)edited.n, (unsigned long long)added.n,
                (unsigned long long)removed.n, (unsigned long long)missing);
      else
        problem(&errs, "the rows differ from checkpoint %llu's, and so do the leaves stored beside them: which rows "
                "changed cannot be told", (unsigned long long)L + 1);
    }
    if (rc == STORE_OK && data_ok && !intact)
      problem(&errs, "the rows are as signed, but /sign/leaves was changed");
    /* the knowledge graph, table by table */
    uint8_t gh[96];
    int grc = graph_hash(s, 1, gh);
    if (grc == STORE_ENOMEM) goto oom;
    for (int t = 0; t < STORE_G_NTABLES; t++) {
      gok[t] = !grc && !memcmp(gh + 32 * t, h.b[H_GRAPH] + 96 * L + 32 * t, 32);
      if (!gok[t])
        problem(&errs, "the knowledge graph's %s differ from checkpoint %llu's",
                t == 0 ? "entities" : t == 1 ? "relations" : "mentions", (unsigned long long)L + 1);
    }
  }
  if (tail && tail->log && tail_ids(tail, &unsig)) goto oom;
  {
    uint64_t L = h.n ? h.n - 1 : 0;
    strbuf_printf(out, "{\"valid\":%s,\"signed\":%s,\"checkpoints\":%llu,\"verified\":%llu",
                  h.n && !errs.len ? "true" : "false", h.n ? "true" : "false", (unsigned long long)h.n,
                  (unsigned long long)verified);
    if (h.n) {
      char kt[73];
      sign_pub_format(h.b[H_KEY] + 32 * L, kt);
      strbuf_printf(out, ",\"seq\":%lld,\"time\":%lld,\"key\":\"%s\",\"root\":", (long long)h.i[H_SEQ][L],
                    (long long)h.i[H_TIME][L], kt);
      json_hex(out, h.b[H_ROOT] + 32 * L, 32);
      strbuf_printf(out, ",\"signed_rows\":%lld", (long long)h.i[H_ROWS][L]);
      strbuf_printf(out, ",\"graph\":{\"entities\":%s,\"relations\":%s,\"mentions\":%s}", gok[0] ? "true" : "false",
                    gok[1] ? "true" : "false", gok[2] ? "true" : "false");
    }
    strbuf_printf(out, ",\"rows\":%llu,\"pinned\":%s", (unsigned long long)R, pin ? "true" : "false");
    json_ids(out, "edited", edited.v, edited.n);
    json_ids(out, "added", added.v, added.n);
    json_ids(out, "removed", removed.v, removed.n);
    strbuf_printf(out, ",\"missing_rows\":%llu,\"leaves_intact\":%s", (unsigned long long)missing,
                  intact ? "true" : "false");
    strbuf_printf(out, ",\"unsigned\":{\"frames\":%llu", tail && tail->log ? (unsigned long long)wal_frames(tail->log) : 0ULL);
    json_ids(out, "ids", unsig.v, unsig.n);
    strbuf_printf(out, "},\"problems\":[%s]}", errs.buf ? errs.buf : "");
  }
  rc = strbuf_failed(out) || strbuf_failed(&errs) ? STORE_ENOMEM : STORE_OK;
  if (rc) snprintf(err, errlen, "out of memory");
  if (0) {
  oom:
    snprintf(err, errlen, "out of memory");
    rc = STORE_ENOMEM;
  }
  free(stored);
  free(now);
  free(edited.v);
  free(added.v);
  free(removed.v);
  free(unsig.v);
  strbuf_free(&errs);
  hist_free(&h);
  store_close(s);
  return rc;
}
