/*
** lib/store/store.c - the memory store (store.h; the file layout is
** docs/FORMAT.md).
**
** Positions: base rows 0 .. nbase-1 (the checkpointed file, read in place),
** then delta records nbase .. nbase+ndelta-1 (committed or in the open
** transaction, in memory and in the log).  An id maps to the position of
** its live record; an update is a delete plus an insert, so a base row
** never changes: dead base rows are listed in /memories/deleted.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "h5/h5.h"
#include "k.h"
#include "store.h"
#include "store_index.h"
#include "store_int.h"
#include "store_graph.h"
#include "store_text.h"
#include "ann/q8.h"
#include "util/pool.h"
#include "util/utf8.h"
#include "gate.h"
#include "wal.h"

#define FORMAT_NAME "h5mem-store"
#define MIGRATED_PREFIX "migrated_" /* extra attributes of / (store_opts.attrs) */
#define FORMAT_VERSION 1
#define DEFAULT_CHUNK 1024
#define DEFAULT_AUTOCKPT ((uint64_t)64 << 20)
#define NORMAL_SYNC_NS 100000000LL /* sync=normal: fsync at most every 100 ms */

/* The columns of /memories, in file order. */
enum {
  C_ID, C_TEXT, C_EMB, C_SOURCE, C_SESSION, C_TAGS, C_TS, C_TIER, C_IMPORTANCE,
  C_ACCESS_COUNT, C_LAST_ACCESS, C_META, NCOL
};
static const char *const col_name[NCOL] = {"id", "text", "embedding", "source", "session",
                                           "tags", "ts", "tier", "importance", "access_count",
                                           "last_access", "meta"};
enum { K_I64, K_STR, K_EMB, K_F64 };
static const int col_kind[NCOL] = {K_I64, K_STR, K_EMB, K_STR, K_STR, K_STR,
                                   K_I64, K_STR, K_F64, K_I64, K_I64, K_STR};
/* the string columns, in the order of store_rec's fields */
static const int str_cols[6] = {C_TEXT, C_SOURCE, C_SESSION, C_TAGS, C_TIER, C_META};

/* A column of the base: rows at chunk_addr[r / crows] + (r % crows) * rowbytes. */
typedef struct bcol {
  h5_obj *d;
  uint64_t crows, nchunks;
  size_t rowbytes;
  uint64_t *caddr; /* UINT64_MAX: chunk never written */
} bcol;

/* A string column of the base as codes (store_str_codes): equal strings,
** equal codes; a dictionary (open addressing) of the distinct strings,
** which point into the mapped file. */
typedef struct strcodes {
  uint32_t *code; /* per base row; NULL: not built */
  const uint8_t **dp;
  uint32_t *dlen, *dcode;
  uint64_t dcap, dn;
} strcodes;

/* A record of the delta: one allocation, strings NUL-terminated inside. */
typedef struct drec {
  int64_t id, ts, access_count, last_access;
  double importance;
  int dead;
  char *str[6];
  size_t len[6];
  void *emb; /* stored type, or NULL */
} drec;


typedef struct undo {
  int insert;   /* 1: a delta record was added at pos; 0: pos was deleted */
  int table;    /* 0: the memories; 1 + STORE_G_*: a graph table */
  uint64_t pos;
} undo;

struct store {
  char *path, *walpath;
  int readonly, writer, lockfd;
  int gatefd;        /* readers: the log, open to take the gate's read side (-1: none) */
  int gated;         /* the writer holds the gate's write side (gate_write_begin's result + 1) */
  int loaded;        /* the state below is a whole view (a failed load leaves 0) */
  int dim, metric, storage, sync, chunk_rows;
  uint64_t autockpt;
  uint8_t store_id[16];
  char err[512];
  /* base */
  h5_file *f;
  struct stat fst;
  uint64_t nbase;
  int64_t *base_id;
  uint8_t *base_dead;
  bcol col[NCOL];
  uint64_t ckpt_seq; /* log frames up to this one are in the file */
  sindex_cfg icfg;
  sindex *ix;        /* the vector index of the file (store_index.c) */
  text_tok_opts tcfg;
  char tokenize[64]; /* tcfg in normal form */
  tindex *tx;        /* the text index of the file (store_text.c) */
  gstore *g;         /* the knowledge graph's tables (store_graph.c) */
  uint64_t changes;  /* records added, deleted or taken back */
  uint64_t reuses;   /* inserts undone (their positions may be taken again) */
  strcodes sc[6];    /* of the string columns (str_cols order), built on demand */
  bcol q8[2];        /* /index/q8 and q8_scale (nchunks 0: none) */
  int64_t *tsc;      /* the base rows' ts, read on the first store_get_ts */
  /* base rows deleted since the checkpoint, in order */
  uint64_t *newdead;
  uint64_t nnewdead, capnewdead;
  /* delta */
  drec **delta;
  uint64_t ndelta, capdelta;
  idmap map;
  uint64_t live;
  int64_t max_id;
  /* the log */
  wal *log;
  int replay_rc;           /* why replay_frame stopped */
  int64_t last_sync_ns;
  /* the open transaction */
  int in_txn, prepared;
  undo *ul;
  uint64_t nul, capul;
  uint8_t *frame;
  size_t frame_len, frame_cap;
};

static int fail(store *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(store *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return code;
}

/* A failure of the HDF5 writer w while doing what (e.g. "checkpoint of"):
** STORE_EFULL when it found no space, STORE_BUSY when the gate was not
** obtained (readers kept the store busy). */
static int wfail(store *s, h5w *w, const char *what) {
  int c = h5w_errcode(w);
  int code = c == H5_EFULL ? STORE_EFULL : c == H5_ENOMEM ? STORE_ENOMEM : STORE_EIO;
  if (s->gated < 0) code = STORE_BUSY;
  return fail(s, code, "%s %s: %s", what, s->path, h5w_errmsg(w));
}

const char *store_errmsg(const store *s) { return s ? s->err : "out of memory"; }
int store_dim(const store *s) { return s->dim; }
int store_metric(const store *s) { return s->metric; }
sindex *store_sindex(store *s) { return s->ix; }
tindex *store_tindex(store *s) { return s->tx; }
gstore *store_gstore(store *s) { return s->g; }
uint64_t store_changes(const store *s) { return s->changes; }
uint64_t store_reuses(const store *s) { return s->reuses; }
const char *store_tokenize(const store *s) { return s->tokenize; }

const char *store_index_name(int kind) {
  return kind == STORE_INDEX_HNSW ? "hnsw" : kind == STORE_INDEX_IVF ? "ivf" : "flat";
}

int store_attr(const store *s, const char *name, char *buf, size_t n) {
  h5_obj *root;
  if (!s->f || h5_root(s->f, &root) != H5_OK) return STORE_ENOTFOUND;
  return store_attr_str(s->f, root, name, buf, n) > 0 ? STORE_OK : STORE_ENOTFOUND;
}

int store_index(const store *s, store_index_info *info) {
  if (info) {
    info->kind = s->icfg.kind;
    info->m = s->icfg.m;
    info->ef_construction = s->icfg.efc;
    info->ef_search = s->icfg.ef;
    info->graph_rows = sindex_rows(s->ix);
    info->in_place = sindex_in_place(s->ix);
    info->nlist = sindex_nlist(s->ix);
    info->nprobe = s->icfg.nprobe;
    info->pq_m = s->icfg.pq_m;
    info->q8 = s->icfg.q8;
    info->q8_rows = s->q8[0].caddr && s->q8[1].caddr ? s->nbase : 0;
    info->note = sindex_note(s->ix);
  }
  return s->icfg.kind;
}
int store_storage(const store *s) { return s->storage; }
const char *store_path(const store *s) { return s->path; }
uint64_t store_npos(const store *s) { return s->nbase + s->ndelta; }
uint64_t store_count(const store *s) { return s->live; }
int64_t store_max_id(const store *s) { return s->max_id; }

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* ---- the base (the checkpointed file) ------------------------------------ */

typedef struct chunk_ctx {
  bcol *c;
  store *s;
} chunk_ctx;

static int take_chunk(void *ctx, const uint64_t *off, uint64_t addr, uint64_t size, uint32_t mask) {
  chunk_ctx *cc = ctx;
  bcol *c = cc->c;
  uint64_t k = off[0] / c->crows;
  if (off[0] % c->crows || k >= c->nchunks || mask != 0 || size != c->crows * c->rowbytes)
    return H5_ECORRUPT;
  c->caddr[k] = addr;
  return H5_OK;
}

static const uint8_t *col_row(const store *s, const bcol *c, uint64_t r) {
  uint64_t k = c->crows ? r / c->crows : 0;
  if (k >= c->nchunks || c->caddr[k] == UINT64_MAX) return NULL;
  return h5_file_span(s->f, c->caddr[k] + (r % c->crows) * c->rowbytes, c->rowbytes);
}

static const uint8_t *base_row(const store *s, int col, uint64_t r) {
  return col_row(s, &s->col[col], r);
}

const int8_t *store_q8_row(const store *s, uint32_t i, float *scale) {
  const uint8_t *p = i < s->nbase ? col_row(s, &s->q8[1], i) : NULL;
  if (!p) return NULL;
  memcpy(scale, p, 4);
  return (const int8_t *)col_row(s, &s->q8[0], i);
}

static void codes_free(strcodes *c) {
  free(c->code);
  free(c->dp);
  free(c->dlen);
  free(c->dcode);
  memset(c, 0, sizeof *c);
}

static void base_free(store *s) {
  sindex_free(s->ix); /* (they may read the mapped file: first) */
  s->ix = NULL;
  tindex_free(s->tx);
  s->tx = NULL;
  for (int k = 0; k < 6; k++) codes_free(&s->sc[k]);
  free(s->tsc);
  s->tsc = NULL;
  for (int k = 0; k < NCOL; k++) free(s->col[k].caddr);
  memset(s->col, 0, sizeof s->col);
  for (int k = 0; k < 2; k++) free(s->q8[k].caddr);
  memset(s->q8, 0, sizeof s->q8);
  free(s->base_id);
  free(s->base_dead);
  s->base_id = NULL;
  s->base_dead = NULL;
  h5_close(s->f);
  s->f = NULL;
  s->nbase = 0;
}

static int read_attr_int(h5_obj *o, const char *name, int64_t *v) {
  return store_attr_int(o, name, v) > 0 ? 0 : -1;
}

/* A string attribute into buf (NUL-terminated), or -1. */
static int read_attr_str(store *s, h5_obj *o, const char *name, char *buf, size_t n) {
  return store_attr_str(s->f, o, name, buf, n) > 0 ? 0 : -1;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static const char *metric_name(int m) {
  return m == STORE_L2 ? "l2" : m == STORE_DOT ? "dot" : "cosine";
}

/* Map dataset d (path, for messages) as a column of *n rows (UINT64_MAX:
** as many as it has, stored into *n): chunked along the rows, unfiltered,
** little-endian elements of esz bytes, and 1-D (width 0) or [rows, width]
** with whole rows per chunk; every chunk present. */
static int map_col(store *s, h5_obj *d, const char *path, bcol *c, size_t esz, int width,
                   uint64_t *n) {
  h5_dset_info in;
  c->d = d;
  if (h5_dset_info_get(d, &in) != H5_OK || in.rank != (width ? 2 : 1) ||
      in.layout != H5_LAYOUT_CHUNKED || in.nfilters || in.type->size != esz || in.type->big_endian ||
      in.chunk[0] == 0 || (width && (in.dims[1] != (uint64_t)width || in.chunk[1] != (uint64_t)width)))
    return fail(s, STORE_ECORRUPT, "%s: %s does not have the store's layout", s->path, path);
  if (*n == UINT64_MAX) *n = in.dims[0];
  if (in.dims[0] != *n)
    return fail(s, STORE_ECORRUPT, "%s: %s has %llu rows, /memories/id %llu", s->path, path,
                (unsigned long long)in.dims[0], (unsigned long long)*n);
  c->crows = in.chunk[0];
  c->rowbytes = esz * (width ? (size_t)width : 1);
  c->nchunks = *n / c->crows + (*n % c->crows != 0);
  c->caddr = malloc((c->nchunks ? c->nchunks : 1) * sizeof *c->caddr);
  if (!c->caddr) return fail(s, STORE_ENOMEM, "out of memory");
  memset(c->caddr, 0xff, (c->nchunks ? c->nchunks : 1) * sizeof *c->caddr);
  chunk_ctx cc = {c, s};
  if (h5_dset_chunk_iter(d, take_chunk, &cc) != H5_OK)
    return fail(s, STORE_ECORRUPT, "%s: the chunks of %s: %s", s->path, path, h5_errmsg(s->f));
  for (uint64_t i = 0; i < c->nchunks; i++)
    if (c->caddr[i] == UINT64_MAX)
      return fail(s, STORE_ECORRUPT, "%s: %s lacks chunk %llu", s->path, path, (unsigned long long)i);
  return STORE_OK;
}

/* Read a 1-D int64 dataset of group g whole (NULL and 0 when empty). */
static int read_i64s(store *s, h5_obj *g, const char *name, int64_t **out, uint64_t *n) {
  *out = NULL;
  *n = 0;
  const h5_link *l;
  h5_obj *d;
  h5_dset_info in;
  if (h5_group_find(g, name, &l) != H5_OK || l->type != H5_LINK_HARD ||
      h5_obj_open(s->f, l->addr, &d) != H5_OK || h5_dset_info_get(d, &in) != H5_OK ||
      in.rank != 1 || in.type->cls != H5_CLASS_INTEGER || in.type->size != 8)
    return fail(s, STORE_ECORRUPT, "%s: dataset '%s' is missing or not int64", s->path, name);
  if (!in.dims[0]) return STORE_OK;
  if (in.dims[0] > (uint64_t)s->fst.st_size / 8 + 1)
    return fail(s, STORE_ECORRUPT, "%s: '%s' is larger than the file", s->path, name);
  int64_t *v = malloc(in.dims[0] * 8);
  if (!v) return fail(s, STORE_ENOMEM, "out of memory");
  if (h5_dset_read(d, v, in.dims[0] * 8) != H5_OK) {
    free(v);
    return fail(s, STORE_ECORRUPT, "%s: %s", s->path, h5_errmsg(s->f));
  }
  for (uint64_t i = 0; i < in.dims[0] && in.type->big_endian; i++)
    v[i] = (int64_t)__builtin_bswap64((uint64_t)v[i]);
  *out = v;
  *n = in.dims[0];
  return STORE_OK;
}

/* Open the file as the base: check it is a store, map its columns, and
** unless columns_only read its ids and tombstones (and build the id map). */
static int base_load(store *s, const store_opts *want, int columns_only) {
  char err[512];
  if (stat(s->path, &s->fst) != 0)
    return fail(s, STORE_EIO, "%s: %s", s->path, strerror(errno));
  int hr = h5_open(s->path, &s->f, err, sizeof err);
  if (hr != H5_OK)
    return fail(s, hr == H5_ENOMEM ? STORE_ENOMEM : STORE_ECORRUPT, "%s", err);
  h5_obj *root, *mem, *meta;
  const h5_link *l;
  char buf[256];
  int64_t ver = 0, dim = 0;
  if (h5_root(s->f, &root) != H5_OK || read_attr_str(s, root, "h5mem_format", buf, sizeof buf) ||
      strcmp(buf, FORMAT_NAME) != 0)
    return fail(s, STORE_EMISMATCH, "%s is an HDF5 file but not an h5mem store (no "
                "h5mem_format = '" FORMAT_NAME "' attribute on /)", s->path);
  if (read_attr_int(root, "h5mem_format_version", &ver) || ver != FORMAT_VERSION)
    return fail(s, STORE_EMISMATCH, "%s: store format version %lld; this h5mem reads version %d",
                s->path, (long long)ver, FORMAT_VERSION);
  if (read_attr_int(root, "dim", &dim) || dim < 1 || dim > 65536)
    return fail(s, STORE_ECORRUPT, "%s: bad dim attribute", s->path);
  char metric[32], storage[32], sid[64];
  if (read_attr_str(s, root, "metric", metric, sizeof metric) ||
      read_attr_str(s, root, "storage", storage, sizeof storage) ||
      read_attr_str(s, root, "store_id", sid, sizeof sid) || strlen(sid) != 32)
    return fail(s, STORE_ECORRUPT, "%s: missing metric, storage or store_id attribute", s->path);
  s->dim = (int)dim;
  s->metric = strcmp(metric, "l2") == 0 ? STORE_L2 : strcmp(metric, "dot") == 0 ? STORE_DOT
            : strcmp(metric, "cosine") == 0 ? STORE_COSINE : -1;
  s->storage = strcmp(storage, "float16") == 0 ? STORE_F16 : strcmp(storage, "float32") == 0 ? STORE_F32 : -1;
  if (s->metric < 0 || s->storage < 0)
    return fail(s, STORE_ECORRUPT, "%s: metric '%s' or storage '%s' unknown", s->path, metric, storage);
  for (int i = 0; i < 16; i++) {
    int a = hexval(sid[2 * i]), b = hexval(sid[2 * i + 1]);
    if (a < 0 || b < 0) return fail(s, STORE_ECORRUPT, "%s: bad store_id", s->path);
    s->store_id[i] = (uint8_t)(a * 16 + b);
  }
  if (sindex_cfg_read(s->f, root, &s->icfg, err, sizeof err) ||
      tindex_cfg_read(s->f, root, &s->tcfg, err, sizeof err))
    return fail(s, STORE_ECORRUPT, "%s: %s", s->path, err);
  snprintf(s->tokenize, sizeof s->tokenize, "%sunicode61 remove_diacritics %d",
           s->tcfg.porter ? "porter " : "", s->tcfg.remove_diacritics);
  if (want && want->dim > 0) {
    if (want->index != s->icfg.kind)
      return fail(s, STORE_EMISMATCH, "%s has index=%s, not index=%s", s->path,
                  store_index_name(s->icfg.kind), store_index_name(want->index));
    if (want->dim != s->dim)
      return fail(s, STORE_EMISMATCH, "%s has dim=%d, not dim=%d", s->path, s->dim, want->dim);
    if (want->metric != s->metric)
      return fail(s, STORE_EMISMATCH, "%s has metric=%s, not metric=%s", s->path,
                  metric_name(s->metric), metric_name(want->metric));
    if (want->storage != s->storage)
      return fail(s, STORE_EMISMATCH, "%s has storage=%s, not storage=%s", s->path, storage,
                  want->storage == STORE_F16 ? "float16" : "float32");
    int porter, rd;
    char norm[64];
    if (want->tokenize &&
        (store_tokenize_parse(want->tokenize, &porter, &rd, norm, err, sizeof err) ||
         strcmp(norm, s->tokenize)))
      return fail(s, STORE_EMISMATCH, "%s has tokenize='%s', not '%s'", s->path, s->tokenize,
                  want->tokenize);
  }
  if (h5_group_find(root, "memories", &l) != H5_OK || h5_obj_open(s->f, l->addr, &mem) != H5_OK ||
      h5_group_find(root, "h5mem", &l) != H5_OK || h5_obj_open(s->f, l->addr, &meta) != H5_OK)
    return fail(s, STORE_ECORRUPT, "%s: /memories or /h5mem is missing", s->path);
  /* the columns: all the same length, chunked, unfiltered */
  uint64_t n = UINT64_MAX;
  for (int k = 0; k < NCOL; k++) {
    char path[64];
    snprintf(path, sizeof path, "/memories/%s", col_name[k]);
    if (h5_group_find(mem, col_name[k], &l) != H5_OK || l->type != H5_LINK_HARD ||
        h5_obj_open(s->f, l->addr, &s->col[k].d) != H5_OK)
      return fail(s, STORE_ECORRUPT, "%s: %s is missing", s->path, path);
    size_t esz = col_kind[k] == K_STR ? 16 : k == C_EMB ? (size_t)s->storage : 8;
    int rc = map_col(s, s->col[k].d, path, &s->col[k], esz, k == C_EMB ? s->dim : 0, &n);
    if (rc) return rc;
  }
  /* the int8 copy of the embeddings (index=hnsw): the same rows, or none */
  h5_obj *qd, *qs;
  if (s->icfg.kind == STORE_INDEX_HNSW && s->icfg.q8 &&
      h5_obj_open_path(s->f, "/index/q8", &qd) == H5_OK &&
      h5_obj_open_path(s->f, "/index/q8_scale", &qs) == H5_OK) {
    /* (derived data: when it does not fit, searches do without it) */
    int rc = map_col(s, qd, "/index/q8", &s->q8[0], 1, s->dim, &n);
    if (!rc) rc = map_col(s, qs, "/index/q8_scale", &s->q8[1], 4, 0, &n);
    if (rc == STORE_ENOMEM) return rc;
    if (rc) {
      for (int k = 0; k < 2; k++) free(s->q8[k].caddr);
      memset(s->q8, 0, sizeof s->q8);
    }
  }
  s->nbase = n;
  int rc = sindex_load(s, s->f, &s->icfg, n, &s->ix);
  if (!rc) rc = tindex_load(s, s->f, &s->tcfg, n, &s->tx);
  if (rc) return fail(s, rc, "out of memory");
  if (columns_only) return STORE_OK;
  uint64_t nid, ndel, nck;
  int64_t *del, *ck;
  rc = read_i64s(s, mem, "id", &s->base_id, &nid);
  if (rc) return rc;
  if ((rc = read_i64s(s, mem, "deleted", &del, &ndel))) return rc;
  if ((rc = read_i64s(s, meta, "checkpoints", &ck, &nck))) {
    free(del);
    return rc;
  }
  s->ckpt_seq = nck ? (uint64_t)ck[nck - 1] : 0;
  free(ck);
  int64_t *mx;
  uint64_t nmx;
  if ((rc = read_i64s(s, meta, "max_id", &mx, &nmx))) {
    free(del);
    return rc;
  }
  if (nmx && mx[nmx - 1] > s->max_id) s->max_id = mx[nmx - 1];
  free(mx);
  s->base_dead = calloc(n ? n : 1, 1);
  if (!s->base_dead) {
    free(del);
    return fail(s, STORE_ENOMEM, "out of memory");
  }
  for (uint64_t i = 0; i < ndel; i++) {
    if (del[i] < 0 || (uint64_t)del[i] >= n) {
      free(del);
      return fail(s, STORE_ECORRUPT, "%s: /memories/deleted lists row %lld of %llu", s->path,
                  (long long)del[i], (unsigned long long)n);
    }
    s->base_dead[del[i]] = 1;
  }
  free(del);
  for (uint64_t r = 0; r < n; r++) {
    int64_t id = s->base_id[r];
    if (id > s->max_id) s->max_id = id;
    if (s->base_dead[r]) continue;
    if (idmap_slot(&s->map, id))
      return fail(s, STORE_ECORRUPT, "%s: id %lld is live in two rows", s->path, (long long)id);
    if ((rc = idmap_put(&s->map, id, r))) return fail(s, rc, "out of memory");
    s->live++;
  }
  return STORE_OK;
}

/* ---- records in memory ------------------------------------------------------ */

static void drec_free(drec *d) { free(d); }

/* A copy of r (embedding converted to the stored type). */
static drec *drec_new(const store *s, const store_rec *r) {
  const char *str[6] = {r->text, r->source, r->session, r->tags, r->tier, r->meta};
  size_t len[6] = {r->text_len, r->source_len, r->session_len, r->tags_len, r->tier_len, r->meta_len};
  size_t total = sizeof(drec) + 16, eb = r->emb ? (size_t)s->dim * (size_t)s->storage : 0;
  for (int k = 0; k < 6; k++)
    if (str[k]) total += len[k] + 1;
  total += eb;
  drec *d = malloc(total);
  if (!d) return NULL;
  memset(d, 0, sizeof *d);
  uint8_t *p = (uint8_t *)(d + 1);
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
  d->id = r->id;
  d->ts = r->ts;
  d->importance = r->importance;
  d->access_count = r->access_count;
  d->last_access = r->last_access;
  return d;
}

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

int store_find(const store *s, int64_t id, uint64_t *pos) {
  const uint64_t *v = idmap_slot(&s->map, id);
  if (!v) return STORE_ENOTFOUND;
  *pos = *v;
  return STORE_OK;
}

static int64_t get_i64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

int store_get(store *s, uint64_t pos, unsigned want, store_view *v) {
  if (!store_pos_live(s, pos)) return fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
  const char **sp[6] = {&v->text, &v->source, &v->session, &v->tags, &v->tier, &v->meta};
  size_t *lp[6] = {&v->text_len, &v->source_len, &v->session_len, &v->tags_len, &v->tier_len, &v->meta_len};
  if (pos >= s->nbase) {
    const drec *d = s->delta[pos - s->nbase];
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
    return STORE_OK;
  }
  /* base rows: only the columns asked for, so a query touches only their
  ** pages of the mapped file */
  v->id = s->base_id[pos];
  want &= ~v->have;
  const uint8_t *p;
#define ROW(col)                                                                            \
  if (!(p = base_row(s, col, pos)))                                                         \
    return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s lies outside the file", \
                s->path, (unsigned long long)pos, col_name[col]);
  for (int k = 0; k < 6; k++) {
    if (!(want & (1u << k))) continue;
    ROW(str_cols[k]);
    const uint8_t *data;
    size_t len;
    uint32_t cnt;
    if (h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK)
      return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s: %s", s->path,
                  (unsigned long long)pos, col_name[str_cols[k]], h5_errmsg(s->f));
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
    v->ts = get_i64(p);
    ROW(C_IMPORTANCE);
    memcpy(&v->importance, p, 8);
    ROW(C_ACCESS_COUNT);
    v->access_count = get_i64(p);
    ROW(C_LAST_ACCESS);
    v->last_access = get_i64(p);
  }
#undef ROW
  v->have |= want;
  return STORE_OK;
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

int store_str_codes(store *s, unsigned want, const char *v, size_t n, const uint32_t **codes,
                    uint64_t *ncodes, uint32_t *code) {
  int k = 0;
  while (k < 6 && want != (1u << k)) k++;
  if (k == 6) return fail(s, STORE_EINVAL, "store_str_codes: one string column at a time");
  strcodes *c = &s->sc[k];
  if (!c->code && s->nbase) {
    c->code = malloc(s->nbase * sizeof *c->code);
    if (!c->code || dict_grow(c)) {
      codes_free(c);
      return fail(s, STORE_ENOMEM, "out of memory");
    }
    for (uint64_t r = 0; r < s->nbase; r++) {
      const uint8_t *p = base_row(s, str_cols[k], r), *data;
      size_t len;
      uint32_t cnt;
      if (!p || h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK) {
        codes_free(c);
        return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/%s cannot be read", s->path,
                    (unsigned long long)r, col_name[str_cols[k]]);
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
            codes_free(c);
            return fail(s, STORE_ENOMEM, "out of memory");
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
  *codes = c->code;
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
    if (!t) return fail(s, STORE_ENOMEM, "out of memory");
    for (uint64_t r = 0; r < s->nbase; r++) {
      const uint8_t *p = base_row(s, C_TS, r);
      if (!p) {
        free(t);
        return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/ts lies outside the file", s->path,
                    (unsigned long long)r);
      }
      t[r] = get_i64(p);
    }
    s->tsc = t;
  }
  *ts = s->tsc;
  *n = s->nbase;
  return STORE_OK;
}

int store_get_ts(store *s, uint64_t pos, int64_t *ts) {
  if (pos >= s->nbase) {
    if (!store_pos_live(s, pos)) return fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
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

/* ---- changes ------------------------------------------------------------------ */

static int ul_push(store *s, int insert, uint64_t pos) {
  if (!s->in_txn) return STORE_OK; /* (replaying the log) */
  if (s->nul == s->capul) {
    uint64_t cap = s->capul ? s->capul * 2 : 64;
    undo *n = realloc(s->ul, cap * sizeof *n);
    if (!n) return fail(s, STORE_ENOMEM, "out of memory");
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
static int apply_put(store *s, const store_rec *r) {
  if (idmap_slot(&s->map, r->id)) return fail(s, STORE_EEXISTS, "id %lld exists", (long long)r->id);
  if (s->ndelta == s->capdelta) {
    uint64_t cap = s->capdelta ? s->capdelta * 2 : 256;
    drec **n = realloc(s->delta, cap * sizeof *n);
    if (!n) return fail(s, STORE_ENOMEM, "out of memory");
    s->delta = n;
    s->capdelta = cap;
  }
  if (s->in_txn && s->nul == s->capul) { /* room for the undo entry first */
    int rc = ul_push(s, 1, 0);
    if (rc) return rc;
    s->nul--;
  }
  drec *d = drec_new(s, r);
  if (!d) return fail(s, STORE_ENOMEM, "out of memory");
  uint64_t pos = s->nbase + s->ndelta;
  if (idmap_put(&s->map, r->id, pos) != STORE_OK) {
    drec_free(d);
    return fail(s, STORE_ENOMEM, "out of memory");
  }
  s->delta[s->ndelta++] = d;
  s->live++;
  s->changes++;
  if (r->id > s->max_id) s->max_id = r->id;
  return ul_push(s, 1, pos);
}

static int apply_delete(store *s, int64_t id) {
  uint64_t *v = idmap_slot(&s->map, id);
  if (!v) return fail(s, STORE_ENOTFOUND, "no record with id %lld", (long long)id);
  uint64_t pos = *v;
  if (s->in_txn && s->nul == s->capul) {
    int rc = ul_push(s, 0, 0);
    if (rc) return rc;
    s->nul--;
  }
  if (pos < s->nbase) {
    if (s->nnewdead == s->capnewdead) {
      uint64_t cap = s->capnewdead ? s->capnewdead * 2 : 64;
      uint64_t *n = realloc(s->newdead, cap * sizeof *n);
      if (!n) return fail(s, STORE_ENOMEM, "out of memory");
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
  return ul_push(s, 0, pos);
}

static int64_t pos_id(const store *s, uint64_t pos) {
  return pos < s->nbase ? s->base_id[pos] : s->delta[pos - s->nbase]->id;
}

int64_t store_pos_id(const store *s, uint64_t pos) { return pos_id(s, pos); }

int store_set_error(store *s, int code, const char *msg) { return fail(s, code, "%s", msg); }

int store_text_at(store *s, uint64_t pos, const char **text, size_t *len) {
  *text = NULL;
  *len = 0;
  if (pos >= s->nbase) {
    if (pos - s->nbase >= s->ndelta) return fail(s, STORE_ENOTFOUND, "no record at position %llu",
                                                 (unsigned long long)pos);
    const drec *d = s->delta[pos - s->nbase];
    *text = d->str[0];
    *len = d->len[0];
    return STORE_OK;
  }
  const uint8_t *p = base_row(s, C_TEXT, pos), *data;
  uint32_t cnt;
  if (!p)
    return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/text lies outside the file", s->path,
                (unsigned long long)pos);
  if (h5_vlen_get(s->f, p, &data, len, &cnt) != H5_OK)
    return fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/text: %s", s->path,
                (unsigned long long)pos, h5_errmsg(s->f));
  *text = (const char *)data;
  return STORE_OK;
}

int store_text_index(store *s, store_text_info *info) {
  int rc = tindex_info(s->tx, info);
  info->tokenize = s->tokenize;
  return rc;
}

static void undo_one(store *s, const undo *u) {
  if (u->table) {
    gstore_undo(s->g, u->table - 1, u->insert, u->pos);
    return;
  }
  s->changes++;
  if (u->insert) { /* the last delta record */
    s->reuses++;
    drec *d = s->delta[--s->ndelta];
    idmap_del(&s->map, d->id);
    drec_free(d);
    s->live--;
  } else {
    if (u->pos < s->nbase) {
      s->base_dead[u->pos] = 0;
      s->nnewdead--; /* its entry was the last */
    } else {
      s->delta[u->pos - s->nbase]->dead = 0;
    }
    idmap_put(&s->map, pos_id(s, u->pos), u->pos); /* (the slot was just freed: no growth) */
    s->live++;
  }
}

/* ---- the log's frames --------------------------------------------------------- */

/* A transaction as a frame: 'P' + a record, 'D' + an id, in order. */
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

static int frame_build(store *s) {
  s->frame_len = 0;
  int bad = 0;
  for (uint64_t i = 0; i < s->nul && !bad; i++) {
    const undo *u = &s->ul[i];
    if (u->table) {
      bad |= gstore_encode(s->g, u->table - 1, u->insert, u->pos, frame_cb, s);
      continue;
    }
    if (!u->insert) {
      bad |= frame_put(s, "D", 1) | frame_i64(s, pos_id(s, u->pos));
      continue;
    }
    const drec *d = s->delta[u->pos - s->nbase];
    uint8_t has_emb = d->emb != NULL;
    bad |= frame_put(s, "P", 1) | frame_i64(s, d->id) | frame_i64(s, d->ts) |
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
  }
  return bad ? fail(s, STORE_ENOMEM, "out of memory") : STORE_OK;
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
  return q ? get_i64(q) : 0;
}

static int replay_frame(void *ctx, uint64_t seq, const uint8_t *p, size_t len) {
  store *s = ctx;
  if (seq <= s->ckpt_seq) return 0; /* already in the file */
  rd_frame r = {p, p + len, 0};
  float *emb = NULL;
  int rc = 0;
  while (!rc && r.p < r.end) {
    const uint8_t *op = take(&r, 1);
    if (!op) break;
    if (*op == 'D') {
      int64_t id = take_i64(&r);
      if (!r.bad) rc = apply_delete(s, id);
      continue;
    }
    if (gstore_is_op(*op)) {
      int gr = gstore_replay(s->g, *op, &r.p, r.end);
      if (gr == STORE_ECORRUPT) r.bad = 1;
      else if (gr) rc = fail(s, gr == STORE_EINVAL ? STORE_ECORRUPT : gr,
                             "%s: log frame %llu: a graph change does not apply (%s)",
                             s->walpath, (unsigned long long)seq,
                             gr == STORE_EEXISTS ? "id taken" : gr == STORE_ENOTFOUND ? "no such id"
                             : gr == STORE_EINVAL ? "a string is not UTF-8 or holds a NUL byte"
                                                  : "out of memory");
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
    static const char *const sname[6] = {"text", "source", "session", "tags", "tier", "meta"};
    for (int k = 0; k < 6 && !rc; k++) {
      size_t bad = *sp[k] ? util_utf8_check(*sp[k], *lp[k], 0) : 0;
      if (*sp[k] && bad != *lp[k])
        rc = fail(s, STORE_ECORRUPT, "%s: log frame %llu: record %lld: %s: %s at byte %zu",
                  s->walpath, (unsigned long long)seq, (long long)rec.id, sname[k],
                  (*sp[k])[bad] ? "invalid UTF-8" : "a NUL byte", bad);
    }
    if (rc) break;
    if (*he) {
      const uint8_t *e = take(&r, (size_t)s->dim * (size_t)s->storage);
      if (!e) break;
      /* room for the floats and, after them, an aligned copy of f16 values:
      ** in the frame they follow strings of any length, on no boundary */
      if (!emb && !(emb = malloc((size_t)s->dim * 6))) {
        rc = fail(s, STORE_ENOMEM, "out of memory");
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
    rc = apply_put(s, &rec);
  }
  free(emb);
  if (!rc && r.bad)
    rc = fail(s, STORE_ECORRUPT, "%s: log frame %llu does not decode", s->walpath,
              (unsigned long long)seq);
  s->replay_rc = rc;
  return rc ? 1 : 0;
}

/* ---- opening ----------------------------------------------------------------- */

static void delta_free(store *s) {
  for (uint64_t i = 0; i < s->ndelta; i++) drec_free(s->delta[i]);
  free(s->delta);
  s->delta = NULL;
  s->ndelta = s->capdelta = 0;
  free(s->newdead);
  s->newdead = NULL;
  s->nnewdead = s->capnewdead = 0;
}

static void state_free(store *s) {
  gstore_free(s->g);
  s->g = NULL;
  delta_free(s);
  base_free(s);
  idmap_free(&s->map);
  wal_close(s->log);
  s->log = NULL;
  s->live = 0;
  s->max_id = 0;
  s->ckpt_seq = 0;
}

/* Load the file and replay the log (for writing: repair the log's tail). */
static int state_load1(store *s, const store_opts *want, int for_write);

/* ---- readers and checkpoints (gate.h; docs/FORMAT.md) --------------------- */

/* Readers: the log open for the gate's read side, opened again when the
** file at its path is another one; -1 when there is no log. */
static int reader_gatefd(store *s) {
  struct stat a, b;
  if (s->gatefd >= 0 && (fstat(s->gatefd, &a) != 0 || stat(s->walpath, &b) != 0 ||
                         a.st_ino != b.st_ino || a.st_dev != b.st_dev)) {
    close(s->gatefd);
    s->gatefd = -1;
  }
  if (s->gatefd < 0) {
    int fd = open(s->walpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode))) {
      close(fd);
      fd = -1;
    }
    s->gatefd = fd;
  }
  return s->gatefd;
}

/* h5w_on_commit for the writer's own file: the gate's write side before
** the superblock is written; kept until gate_release (a checkpoint also
** empties the log under it). */
static int gate_take(void *ctx, int before) {
  store *s = ctx;
  if (!before || s->gated > 0) return 0;
  int g = gate_write_begin(s->lockfd);
  if (g != GATE_OK && g != GATE_NONE) {
    s->gated = -1; /* (wfail: busy) */
    return -1;
  }
  s->gated = g + 1;
  return 0;
}

static void gate_release(store *s) {
  if (s->gated > 0) gate_write_end(s->lockfd, s->gated - 1);
  s->gated = 0;
}

/* The identity of the file at path as stat tells it (0 if none). */
typedef struct fileid {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtim;
} fileid;

static void file_id(const char *path, fileid *id) {
  struct stat st;
  memset(id, 0, sizeof *id);
  if (stat(path, &st) != 0) return;
  id->dev = st.st_dev;
  id->ino = st.st_ino;
  id->size = st.st_size;
  id->mtim = st.st_mtim;
}

static uint64_t mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

static int same_file(const fileid *a, const fileid *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec;
}

/* Load a view.  A writer's view is its own.  A reader loads inside the
** gate's read side, where no checkpoint moves the file or the log; where
** there is no gate (no log yet, a system without open file description
** locks, or a wait that timed out) it checks afterwards that neither the
** .h5 file nor the log's header changed while it read them, and that the
** log starts where the file's last checkpoint ends, and reads again if
** not.  A failed load leaves the handle with no view (s->loaded 0): the
** next refresh loads again, and nothing reads an empty view as the store. */
static int state_load(store *s, const store_opts *want, int for_write) {
  if (for_write) {
    int rc = state_load1(s, want, 1);
    s->loaded = rc == STORE_OK;
    return rc;
  }
  uint64_t t0 = mono_ms();
  for (int tries = 0;; tries++) {
    fileid before, after, wbefore, wafter;
    file_id(s->path, &before);
    file_id(s->walpath, &wbefore);
    int g = gate_read_begin(reader_gatefd(s));
    int rc = state_load1(s, want, 0);
    int gap = rc == STORE_OK && wal_last_seq(s->log) - wal_frames(s->log) + 1 > s->ckpt_seq + 1;
    int moved = 0;
    if (g != GATE_OK) { /* (a failure before the log was read: did it change at all?) */
      file_id(s->path, &after);
      file_id(s->walpath, &wafter);
      moved = !same_file(&before, &after) ||
              (s->log ? wal_changed(s->log, 1) : rc != STORE_OK && !same_file(&wbefore, &wafter));
    }
    gate_read_end(s->gatefd, g);
    s->loaded = rc == STORE_OK && !gap && !moved;
    if (s->loaded || (rc != STORE_OK && !moved)) return rc;
    /* (bounded like a wait for the gate: a writer that checkpoints faster
    ** than this reader loads starves it, which only the gate prevents) */
    if (tries > 0 && mono_ms() - t0 >= GATE_WAIT_MS)
      return rc != STORE_OK ? rc : fail(s, STORE_EIO, "%s: the store keeps changing under this reader", s->path);
    usleep(1000u << (tries < 6 ? tries : 6));
  }
}

static int state_load1(store *s, const store_opts *want, int for_write) {
  uint64_t gversion = gstore_version(s->g) + 1; /* the graph's versions never repeat */
  state_free(s);
  int rc = base_load(s, want, 0);
  if (rc) return rc;
  char err[512];
  if (gstore_new(&s->g, gversion)) return fail(s, STORE_ENOMEM, "out of memory");
  if ((rc = gstore_load(s->g, s->f, err, sizeof err)))
    return fail(s, rc, "%s: %s", s->path, rc == STORE_ENOMEM ? "out of memory" : err);
  int wr = wal_open(s->walpath, s->store_id, !for_write, &s->log, err, sizeof err);
  if (wr != WAL_OK)
    return fail(s, wr == WAL_ENOMEM ? STORE_ENOMEM : wr == WAL_EMISMATCH ? STORE_EMISMATCH : STORE_EIO,
                "%s", err);
  s->in_txn = 0;
  s->replay_rc = STORE_OK;
  rc = wal_replay(s->log, replay_frame, s);
  if (rc == 1 && s->replay_rc) return s->replay_rc;
  if (rc) return fail(s, rc == WAL_ENOMEM ? STORE_ENOMEM : STORE_EIO, "%s", wal_errmsg(s->log));
  /* a log numbered below the file's last checkpoint (deleted, or made
  ** anew): number its frames after it, or replay would skip them */
  if (for_write && wal_last_seq(s->log) < s->ckpt_seq && wal_reset(s->log, s->ckpt_seq) != WAL_OK)
    return fail(s, STORE_EIO, "%s", wal_errmsg(s->log));
  return STORE_OK;
}

static int write_new_store(store *s, const store_opts *o);

int store_open(const char *path, const store_opts *create, int readonly, store **out,
               char *err, size_t errlen) {
  *out = NULL;
  store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  s->lockfd = -1;
  s->gatefd = -1;
  s->readonly = readonly;
  s->sync = create ? create->sync : STORE_SYNC_FULL;
  s->chunk_rows = create && create->chunk_rows > 0 ? create->chunk_rows : DEFAULT_CHUNK;
  s->autockpt = create && create->autocheckpoint ? create->autocheckpoint : DEFAULT_AUTOCKPT;
  size_t n = strlen(path);
  s->path = malloc(n + 1);
  s->walpath = malloc(n + 5);
  if (!s->path || !s->walpath) {
    store_close(s);
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  memcpy(s->path, path, n + 1);
  memcpy(s->walpath, path, n);
  memcpy(s->walpath + n, "-wal", 5);
  struct stat st;
  int rc = STORE_OK, porter, rd;
  char norm[64], terr[256];
  for (const char *const *a = create ? create->attrs : NULL; a && a[0]; a += 2)
    if (strncmp(a[0], MIGRATED_PREFIX, strlen(MIGRATED_PREFIX)) != 0 || !a[1]) {
      snprintf(err, errlen, "%s: attribute '%s': extra attributes are named " MIGRATED_PREFIX
               "... and have a value", path, a[0]);
      store_close(s);
      return STORE_EINVAL;
    }
  if (create && create->tokenize &&
      store_tokenize_parse(create->tokenize, &porter, &rd, norm, terr, sizeof terr)) {
    snprintf(err, errlen, "%s", terr);
    store_close(s);
    return STORE_EINVAL;
  }
  if (stat(path, &st) != 0) {
    if (errno != ENOENT || !create || create->dim <= 0 || create->no_create || readonly)
      rc = fail(s, STORE_EIO, "%s: %s%s", path, strerror(errno),
                errno == ENOENT && (!create || create->dim <= 0) ? " (give dim= to create a store)" : "");
    else
      rc = write_new_store(s, create);
  }
  if (rc == STORE_OK) rc = state_load(s, create, 0);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "%s", s->err);
    store_close(s);
    return rc;
  }
  *out = s;
  return STORE_OK;
}

/* ---- writing the file --------------------------------------------------------- */

static h5_type *str_type(void) { return h5_type_new_string(0, 1); }

static int attr_str(h5w *w, h5w_obj *o, const char *name, const char *v) {
  uint8_t slot[16] = {0};
  memcpy(slot, &v, sizeof v);
  return h5w_attr(w, o, name, str_type(), 0, NULL, slot);
}

static int attr_i64(h5w *w, h5w_obj *o, const char *name, int64_t v) {
  return h5w_attr(w, o, name, h5_type_new_int(8, 1), 0, NULL, &v);
}

/* The groups, columns and attributes of an empty store in w. */
static int write_layout(store *s, h5w *w, const store_opts *o, const uint8_t id[16]) {
  h5w_obj *root = h5w_root(w), *mem, *meta, *d;
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
  const char *storage = o->storage == STORE_F16 ? "float16" : "float32";
  int hr = attr_str(w, root, "h5mem_format", FORMAT_NAME);
  if (!hr) hr = attr_i64(w, root, "h5mem_format_version", FORMAT_VERSION);
  if (!hr) hr = attr_i64(w, root, "dim", o->dim);
  if (!hr) hr = attr_str(w, root, "metric", metric_name(o->metric));
  if (!hr) hr = attr_str(w, root, "storage", storage);
  if (!hr) hr = attr_str(w, root, "store_id", hex);
  if (!hr) hr = attr_str(w, root, "agent", o->agent ? o->agent : "");
  if (!hr) hr = attr_str(w, root, "embedder", o->embedder ? o->embedder : "");
  if (!hr) hr = attr_str(w, root, "created_by", "h5mem " PACKAGE_VERSION);
  for (const char *const *a = o->attrs; !hr && a && a[0] && a[1]; a += 2)
    hr = attr_str(w, root, a[0], a[1]);
  sindex_cfg ic = {o->index, o->hnsw_m ? o->hnsw_m : 16, o->hnsw_efc ? o->hnsw_efc : 128,
                   o->ef_search ? o->ef_search : 64, o->index == STORE_INDEX_HNSW && !o->no_q8,
                   o->ivf_nlist, o->ivf_nprobe ? o->ivf_nprobe : 16, o->ivf_pq_m};
  h5w_obj *idx;
  if (!hr) hr = sindex_cfg_write(w, root, &ic);
  if (!hr) {
    text_tok_opts to = {0, 0};
    char norm[64], terr[256];
    if (store_tokenize_parse(o->tokenize, &to.porter, &to.remove_diacritics, norm, terr,
                             sizeof terr) == STORE_OK)
      hr = tindex_cfg_write(w, root, &to);
    else
      hr = -1; /* (store_open checks it first) */
  }
  if (!hr) hr = h5w_group(w, root, "index", &idx);
  if (!hr && ic.q8) { /* the int8 copy: rows as /memories/embedding's */
    h5w_dcpl dq;
    memset(&dq, 0, sizeof dq);
    dq.layout = H5_LAYOUT_CHUNKED;
    dq.deflate = -1;
    dq.chunk[0] = (uint64_t)s->chunk_rows;
    dq.chunk[1] = (uint64_t)o->dim;
    uint64_t dims[2] = {0, (uint64_t)o->dim}, maxd[2] = {UINT64_MAX, (uint64_t)o->dim};
    hr = h5w_dataset(w, idx, "q8", h5_type_new_int(1, 1), 2, dims, maxd, &dq, &d);
    if (!hr) hr = h5w_dataset(w, idx, "q8_scale", h5_type_new_float(4), 1, dims, maxd, &dq, &d);
  }
  if (!hr) hr = h5w_group(w, root, "memories", &mem);
  if (!hr) hr = h5w_group(w, root, "h5mem", &meta);
  uint64_t crows = (uint64_t)s->chunk_rows;
  for (int k = 0; !hr && k < NCOL + 3; k++) {
    h5w_dcpl dcpl;
    memset(&dcpl, 0, sizeof dcpl);
    dcpl.layout = H5_LAYOUT_CHUNKED;
    dcpl.deflate = -1;
    dcpl.chunk[0] = crows;
    uint64_t dims[2] = {0, (uint64_t)o->dim}, maxd[2] = {UINT64_MAX, (uint64_t)o->dim};
    h5_type *t;
    const char *name;
    h5w_obj *parent = mem;
    int rank = 1;
    if (k == NCOL) { /* tombstones */
      name = "deleted";
      t = h5_type_new_int(8, 1);
      dcpl.chunk[0] = 512;
    } else if (k >= NCOL + 1) {
      name = k == NCOL + 1 ? "checkpoints" : "max_id";
      parent = meta;
      t = h5_type_new_int(8, 1);
      dcpl.chunk[0] = 64;
    } else {
      name = col_name[k];
      switch (col_kind[k]) {
      case K_STR: t = str_type(); break;
      case K_EMB:
        t = h5_type_new_float(o->storage);
        rank = 2;
        dcpl.chunk[1] = (uint64_t)o->dim;
        break;
      case K_F64: t = h5_type_new_float(8); break;
      default: t = h5_type_new_int(8, 1);
      }
    }
    if (!t) return fail(s, STORE_ENOMEM, "out of memory");
    hr = h5w_dataset(w, parent, name, t, rank, dims, maxd, &dcpl, &d);
    if (!hr && k < NCOL) {
      static const char *const what[NCOL] = {
          "the record's id (rowid); an id may appear in a dead row and again later",
          "the memory's text (UTF-8)",
          "the embedding, one row per record (a record without one stores NaN first)",
          "where the memory came from", "the session it belongs to", "tags", "unix seconds",
          "tier", "importance", "times read", "unix seconds of the last access; INT64_MIN: never",
          "JSON metadata"};
      hr = attr_str(w, d, "description", what[k]);
    }
  }
  return hr ? fail(s, STORE_EIO, "cannot lay out %s: %s", s->path, h5w_errmsg(w)) : STORE_OK;
}

static int str_check(store *s, const char *col, const char *p, size_t n);

/* Create the file: written under a temporary name, then linked into place
** (link fails if someone else created it first), so a store file is never
** seen half-written. */
static int write_new_store(store *s, const store_opts *o) {
  if (o->dim < 1 || o->dim > 65536) return fail(s, STORE_EINVAL, "dim=%d: expected 1..65536", o->dim);
  if (o->storage != STORE_F16 && o->storage != STORE_F32)
    return fail(s, STORE_EINVAL, "storage must be float16 or float32");
  if (o->index == STORE_INDEX_IVF && o->ivf_pq_m && o->dim % o->ivf_pq_m)
    return fail(s, STORE_EINVAL, "pq_m=%d must divide dim=%d", o->ivf_pq_m, o->dim);
  /* the attributes of / are strings like the records' (str_check) */
  if (o->agent && str_check(s, "agent", o->agent, strlen(o->agent))) return STORE_EINVAL;
  if (o->embedder && str_check(s, "embedder", o->embedder, strlen(o->embedder))) return STORE_EINVAL;
  for (const char *const *a = o->attrs; a && a[0]; a += 2)
    if (str_check(s, a[0], a[1], strlen(a[1]))) return STORE_EINVAL;
  uint8_t id[16];
  if (getrandom(id, sizeof id, 0) != (ssize_t)sizeof id) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t a = (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32), b = (uint64_t)t.tv_sec;
    memcpy(id, &a, 8);
    memcpy(id + 8, &b, 8);
  }
  size_t n = strlen(s->path) + 40;
  char *base = malloc(n), *tmp = NULL;
  if (!base) return fail(s, STORE_ENOMEM, "out of memory");
  snprintf(base, n, "%s.new-%d", s->path, (int)getpid());
  char err[512];
  h5w *w;
  int rc = STORE_OK;
  /* made exclusively, never through a link planted at the name (h5.h) */
  int hr = h5w_create_temp(base, 1, &w, &tmp, err, sizeof err);
  free(base);
  if (hr != H5_OK)
    return fail(s, hr == H5_EFULL ? STORE_EFULL : hr == H5_ENOMEM ? STORE_ENOMEM : STORE_EIO,
                "cannot create %s: %s", s->path, err);
  rc = write_layout(s, w, o, id);
  if (rc != STORE_OK && h5w_errcode(w) == H5_EFULL) rc = wfail(s, w, "cannot write");
  if (rc == STORE_OK && h5w_close(w, o->sync != STORE_SYNC_OFF) != H5_OK) rc = wfail(s, w, "cannot write");
  h5w_free(w);
  if (rc == STORE_OK && link(tmp, s->path) != 0 && errno != EEXIST)
    rc = fail(s, errno == ENOSPC ? STORE_EFULL : STORE_EIO, "cannot create %s: %s", s->path,
              strerror(errno));
  unlink(tmp);
  free(tmp);
  return rc;
}

/* ---- the writer ------------------------------------------------------------- */

/* Become the writer: lock the store (its log file, which, unlike the .h5
** file, is never replaced), then load the current state for writing. */
static int become_writer(store *s) {
  if (s->writer) return STORE_OK;
  if (s->readonly) return fail(s, STORE_EINVAL, "%s is open read-only", s->path);
  /* the log, never through a link (a planted one must not be followed to
  ** another file), created exclusively when missing */
  int fd = open(s->walpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    fd = open(s->walpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) fd = open(s->walpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  struct stat lst;
  if (fd >= 0 && (fstat(fd, &lst) != 0 || !S_ISREG(lst.st_mode))) {
    close(fd);
    return fail(s, STORE_EIO, "%s is not a regular file; a log must be one", s->walpath);
  }
  if (fd < 0)
    return fail(s, STORE_EIO, "%s: %s", s->walpath,
                errno == ELOOP ? "it is a symbolic link (a log is never opened through one)"
                               : strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    return e == EWOULDBLOCK
               ? fail(s, STORE_BUSY, "the store %s is being written by another connection or "
                      "process", s->path)
               : fail(s, STORE_EIO, "cannot lock %s: %s", s->walpath, strerror(e));
  }
  s->lockfd = fd;
  int rc = state_load(s, NULL, 1);
  if (rc != STORE_OK) {
    close(fd);
    s->lockfd = -1;
    /* back to a consistent read view if we can */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    state_load(s, NULL, 0);
    memcpy(s->err, keep, sizeof keep);
    return rc;
  }
  s->writer = 1;
  s->last_sync_ns = now_ns();
  return STORE_OK;
}

void store_log(const store *s, store_log_info *info, char *note, size_t n) {
  info->frames = wal_frames(s->log);
  info->bytes = wal_bytes(s->log);
  const char *w = wal_note(s->log);
  if (*w) {
    snprintf(note, n, "%s", w);
    return;
  }
  note[0] = 0;
  /* copies of damaged logs kept by an earlier writer */
  size_t len = strlen(s->walpath) + 32;
  char *name = malloc(len);
  struct stat st;
  int k = 1;
  while (name && k < 1000) {
    snprintf(name, len, "%s.corrupt-%d", s->walpath, k);
    if (lstat(name, &st) != 0) break;
    k++;
  }
  if (name && k > 1)
    snprintf(note, n, "%d damaged log%s kept beside the store (%s.corrupt-1%s): the frames "
             "after the damage in them were not replayed", k - 1, k > 2 ? "s" : "", s->walpath,
             k > 2 ? " ..." : "");
  free(name);
}

int store_refresh(store *s) {
  if (s->writer || s->in_txn) return STORE_OK;
  if (s->loaded) {
    struct stat st;
    if (stat(s->path, &st) != 0) return fail(s, STORE_EIO, "%s: %s", s->path, strerror(errno));
    if (st.st_dev == s->fst.st_dev && st.st_ino == s->fst.st_ino && st.st_size == s->fst.st_size &&
        st.st_mtim.tv_sec == s->fst.st_mtim.tv_sec && st.st_mtim.tv_nsec == s->fst.st_mtim.tv_nsec &&
        !wal_changed(s->log, 0))
      return STORE_OK;
  }
  return state_load(s, NULL, 0);
}

int store_begin(store *s) {
  if (s->in_txn) return fail(s, STORE_EINVAL, "a transaction is open");
  int rc = become_writer(s);
  if (rc) return rc;
  s->in_txn = 1;
  s->prepared = 0;
  s->nul = 0;
  return STORE_OK;
}

/* A string of a record to be written: well-formed UTF-8 without a NUL
** byte (libhdf5 ends strings at NUL; h5py and Python decode UTF-8
** strictly), else STORE_EINVAL naming the column and the byte. */
static int str_check(store *s, const char *col, const char *p, size_t n) {
  size_t bad = p ? util_utf8_check(p, n, 0) : n;
  if (bad == n) return STORE_OK;
  return fail(s, STORE_EINVAL, "%s: %s at byte %zu", col, p[bad] ? "invalid UTF-8" : "a NUL byte", bad);
}

int store_put(store *s, const store_rec *r) {
  if (!s->in_txn) return fail(s, STORE_EINVAL, "no transaction is open");
  int rc;
  if ((rc = str_check(s, "text", r->text, r->text_len)) ||
      (rc = str_check(s, "source", r->source, r->source_len)) ||
      (rc = str_check(s, "session", r->session, r->session_len)) ||
      (rc = str_check(s, "tags", r->tags, r->tags_len)) ||
      (rc = str_check(s, "tier", r->tier, r->tier_len)) ||
      (rc = str_check(s, "meta", r->meta, r->meta_len)))
    return rc;
  return apply_put(s, r);
}

int store_delete(store *s, int64_t id) {
  if (!s->in_txn) return fail(s, STORE_EINVAL, "no transaction is open");
  return apply_delete(s, id);
}

static const char *const gname[STORE_G_NTABLES] = {"entity", "relation", "mention"};

/* Room for one more undo entry, so that a change made is always undoable. */
static int ul_room(store *s) {
  if (s->nul < s->capul) return STORE_OK;
  int rc = ul_push(s, 1, 0);
  if (!rc) s->nul--;
  return rc;
}

int store_g_put(store *s, int t, const store_grec *r) {
  if (!s->in_txn) return fail(s, STORE_EINVAL, "no transaction is open");
  if (t < 0 || t >= STORE_G_NTABLES) return fail(s, STORE_EINVAL, "no graph table %d", t);
  static const char *const scol[4] = {"name", "type", "aliases", "meta"};
  for (int k = 0; k < 4 && t != STORE_G_MENTION; k++) /* (a relation has only type and meta) */
    if ((t == STORE_G_ENTITY || k % 2) && str_check(s, scol[k], r->s[k], r->n[k]))
      return STORE_EINVAL;
  int rc = ul_room(s);
  if (rc) return rc;
  rc = gstore_put(s->g, t, r);
  if (rc == STORE_EEXISTS) {
    uint64_t p;
    if (t == STORE_G_MENTION && store_g_find(s, t, r->id, &p) != STORE_OK)
      return fail(s, rc, "memory %lld already mentions entity %lld", (long long)r->a, (long long)r->b);
    return fail(s, rc, "%s id %lld exists", gname[t], (long long)r->id);
  }
  if (rc) return fail(s, rc, rc == STORE_ENOMEM ? "out of memory" : "bad %s", gname[t]);
  rc = ul_push(s, 1, store_g_npos(s, t) - 1);
  s->ul[s->nul - 1].table = 1 + t;
  return rc;
}

int store_g_delete(store *s, int t, int64_t id) {
  if (!s->in_txn) return fail(s, STORE_EINVAL, "no transaction is open");
  if (t < 0 || t >= STORE_G_NTABLES) return fail(s, STORE_EINVAL, "no graph table %d", t);
  int rc = ul_room(s);
  if (rc) return rc;
  uint64_t pos;
  rc = gstore_delete(s->g, t, id, &pos);
  if (rc) return fail(s, rc, "no %s with id %lld", gname[t], (long long)id);
  rc = ul_push(s, 0, pos);
  s->ul[s->nul - 1].table = 1 + t;
  return rc;
}

uint64_t store_mark(const store *s) { return s->nul; }

int store_undo_to(store *s, uint64_t mark) {
  while (s->nul > mark) undo_one(s, &s->ul[--s->nul]);
  return STORE_OK;
}

int store_prepare(store *s) {
  if (!s->in_txn) return STORE_OK; /* (SQLite commits a table it just created) */
  if (s->nul == 0) {
    s->prepared = 1;
    return STORE_OK;
  }
  int rc = frame_build(s);
  if (rc) return rc;
  int sync = s->sync == STORE_SYNC_FULL;
  if (s->sync == STORE_SYNC_NORMAL && now_ns() - s->last_sync_ns >= NORMAL_SYNC_NS) sync = 1;
  uint64_t seq;
  int wr = wal_append(s->log, s->frame, s->frame_len, sync, &seq);
  if (wr != WAL_OK)
    return fail(s, wr == WAL_EFULL ? STORE_EFULL : wr == WAL_ENOMEM ? STORE_ENOMEM : STORE_EIO,
                "%s", wal_errmsg(s->log));
  if (sync) s->last_sync_ns = now_ns();
  s->prepared = 1;
  return STORE_OK;
}

int store_commit(store *s, int may_checkpoint) {
  if (!s->in_txn) return STORE_OK;
  if (!s->prepared) {
    int rc = store_prepare(s);
    if (rc) return rc;
  }
  s->in_txn = 0;
  s->prepared = 0;
  s->nul = 0;
  if (may_checkpoint && wal_bytes(s->log) >= s->autockpt) return store_checkpoint(s);
  return STORE_OK;
}

void store_rollback(store *s) {
  if (!s->in_txn) return;
  store_undo_to(s, 0);
  s->in_txn = 0;
  s->prepared = 0;
}

/* ---- checkpoints ------------------------------------------------------------- */

/* The values of column k for the delta's live records, as h5w_append takes them. */
static void *column_rows(store *s, int k, uint64_t n) {
  size_t esz = s->col[k].rowbytes;
  uint8_t *buf = calloc(n ? n : 1, esz);
  if (!buf) return NULL;
  uint64_t j = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    const drec *d = s->delta[i];
    if (d->dead) continue;
    uint8_t *p = buf + j++ * esz;
    switch (k) {
    case C_ID: memcpy(p, &d->id, 8); break;
    case C_TS: memcpy(p, &d->ts, 8); break;
    case C_ACCESS_COUNT: memcpy(p, &d->access_count, 8); break;
    case C_LAST_ACCESS: memcpy(p, &d->last_access, 8); break;
    case C_IMPORTANCE: memcpy(p, &d->importance, 8); break;
    case C_EMB:
      if (d->emb) {
        memcpy(p, d->emb, esz);
      } else if (s->storage == STORE_F32) {
        float nan = NAN;
        memcpy(p, &nan, 4);
      } else {
        uint16_t h = 0x7e00;
        memcpy(p, &h, 2);
      }
      break;
    default:
      for (int m = 0; m < 6; m++)
        if (str_cols[m] == k) {
          const char *str = d->str[m];
          memcpy(p, &str, sizeof str);
        }
    }
  }
  return buf;
}

/* After a checkpoint appended the delta's live records (in order) to the
** file: map the grown file and turn those records into its new rows,
** without reading the old rows' ids again: the cost is the chunk index and
** the records that changed, not the store's size. */
static int rebase(store *s, uint64_t upto) {
  uint64_t oldn = s->nbase, nlive = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) nlive += !s->delta[i]->dead;
  int64_t *ids = s->base_id;
  uint8_t *dead = s->base_dead;
  s->base_id = NULL;
  s->base_dead = NULL;
  base_free(s);
  int rc = base_load(s, NULL, 1);
  if (rc == STORE_OK && s->nbase != oldn + nlive)
    rc = fail(s, STORE_ECORRUPT, "%s: %llu rows after the checkpoint, expected %llu", s->path,
              (unsigned long long)s->nbase, (unsigned long long)(oldn + nlive));
  if (rc == STORE_OK) {
    uint64_t n = s->nbase ? s->nbase : 1;
    int64_t *ni = realloc(ids, n * sizeof *ni);
    if (ni) ids = ni;
    uint8_t *nd = ni ? realloc(dead, n) : NULL;
    if (nd) dead = nd;
    if (!ni || !nd) rc = fail(s, STORE_ENOMEM, "out of memory");
  }
  if (rc != STORE_OK) {
    free(ids);
    free(dead);
    return rc;
  }
  uint64_t j = oldn;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    drec *d = s->delta[i];
    if (!d->dead) {
      ids[j] = d->id;
      dead[j] = 0;
      idmap_put(&s->map, d->id, j); /* (the id is in the map: no growth) */
      j++;
    }
    drec_free(d);
  }
  s->ndelta = 0;
  s->nnewdead = 0;
  gstore_rebase(s->g);
  s->base_id = ids;
  s->base_dead = dead;
  s->ckpt_seq = upto;
  return STORE_OK;
}

/* Append the int8 copies of n embeddings (rows[i]: the stored type, or NULL
** for none: zeros, scale 0) to /index/q8 and q8_scale, when the store keeps
** them. */
static int append_q8(store *s, h5w *w, const void *const *rows, uint64_t n) {
  h5w_obj *dq, *ds;
  if (!s->icfg.q8 || !n || h5w_lookup(w, "/index/q8", &dq) != H5_OK ||
      h5w_lookup(w, "/index/q8_scale", &ds) != H5_OK)
    return STORE_OK;
  int8_t *codes = calloc(n, (size_t)s->dim);
  float *scale = calloc(n, sizeof *scale);
  int rc = STORE_OK;
  if (!codes || !scale) {
    rc = fail(s, STORE_ENOMEM, "out of memory");
  } else {
    ann_elem e = s->storage == STORE_F16 ? ANN_F16 : ANN_F32;
    for (uint64_t i = 0; i < n; i++)
      if (rows[i] && !ann_row_missing(e, rows[i]))
        ann_q8_encode(rows[i], e, s->dim, codes + i * (size_t)s->dim, &scale[i]);
    if (h5w_append(w, dq, codes, n) != H5_OK || h5w_append(w, ds, scale, n) != H5_OK)
      rc = wfail(s, w, "the int8 copy of");
  }
  free(codes);
  free(scale);
  return rc;
}

/* Save a graph of the base (and an image of the text index) when the rows
** past the saved one call for it (force: whenever some are), appended
** copy-on-write like a checkpoint; a crash leaves the file as the
** checkpoint left it. */
static int index_save(store *s, int force) {
  int vec = s->icfg.kind != STORE_INDEX_FLAT && s->nbase > sindex_rows(s->ix) &&
            (force || sindex_wants_save(s->ix, s->nbase));
  int txt = force ? s->nbase > 0 : tindex_wants_save(s->tx, s->nbase);
  if (!vec && !txt) return STORE_OK;
  char err[512];
  h5w *w;
  if (h5w_open(s->path, 1, &w, err, sizeof err) != H5_OK)
    return fail(s, STORE_EIO, "saving the indexes of %s: %s", s->path, err);
  h5w_on_commit(w, gate_take, s, "readers kept the store busy");
  int rc = vec ? sindex_save(s->ix, w, s->nbase, util_ncpu(), err, sizeof err) : STORE_OK;
  if (rc == STORE_OK && txt) rc = tindex_save(s->tx, w, s->nbase, err, sizeof err);
  if (rc != STORE_OK && h5w_errcode(w) == H5_EFULL) rc = STORE_EFULL;
  if (rc == STORE_OK && h5w_flush(w, s->sync != STORE_SYNC_OFF) != H5_OK) {
    rc = wfail(s, w, "saving the indexes of");
    snprintf(err, sizeof err, "%s", h5w_errmsg(w));
  }
  gate_release(s);
  if (rc != STORE_OK) h5w_discard(w); /* no tail left behind */
  h5w_free(w);
  /* map the file again (what was built in memory goes; the saved images are read in place) */
  int lrc = rebase(s, s->ckpt_seq);
  if (lrc != STORE_OK) lrc = state_load(s, NULL, 1);
  if (rc != STORE_OK) return fail(s, rc, "saving the indexes of %s: %s", s->path, err);
  return lrc;
}

int store_checkpoint(store *s) {
  if (s->in_txn) return fail(s, STORE_EINVAL, "cannot checkpoint inside a transaction");
  if (!s->writer) {
    int rc = become_writer(s);
    if (rc) return rc;
  }
  if (s->ndelta == 0 && s->nnewdead == 0 && wal_frames(s->log) == 0) return STORE_OK;
  uint64_t nlive = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) nlive += !s->delta[i]->dead;
  uint64_t upto = wal_last_seq(s->log);
  char err[512];
  h5w *w;
  int orc = h5w_open(s->path, 1, &w, err, sizeof err);
  if (orc != H5_OK)
    return fail(s, orc == H5_EFULL ? STORE_EFULL : STORE_EIO, "checkpoint of %s: %s", s->path, err);
  h5w_on_commit(w, gate_take, s, "readers kept the store busy");
  int rc = STORE_OK;
  for (int k = 0; rc == STORE_OK && k < NCOL + 3; k++) {
    char path[64];
    snprintf(path, sizeof path, k == NCOL + 1 ? "/h5mem/checkpoints" : k == NCOL + 2 ? "/h5mem/max_id"
             : "/memories/%s", k == NCOL ? "deleted" : k < NCOL ? col_name[k] : "");
    h5w_obj *d;
    if (h5w_lookup(w, path, &d) != H5_OK) {
      rc = fail(s, STORE_EIO, "checkpoint of %s: %s", s->path, h5w_errmsg(w));
      break;
    }
    int hr = H5_OK;
    if (k < NCOL) {
      if (!nlive) continue;
      void *rows = column_rows(s, k, nlive);
      if (!rows) {
        rc = fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      hr = h5w_append(w, d, rows, nlive);
      free(rows);
    } else if (k == NCOL) {
      if (!s->nnewdead) continue;
      hr = h5w_append(w, d, s->newdead, s->nnewdead); /* uint64 rows < 2^63: same bytes */
    } else {
      int64_t v = k == NCOL + 1 ? (int64_t)upto : s->max_id;
      hr = h5w_append(w, d, &v, 1);
    }
    if (hr != H5_OK) rc = wfail(s, w, "checkpoint of");
  }
  if (rc == STORE_OK && nlive) {
    const void **rows = malloc(nlive * sizeof *rows);
    if (!rows) {
      rc = fail(s, STORE_ENOMEM, "out of memory");
    } else {
      uint64_t j = 0;
      for (uint64_t i = 0; i < s->ndelta; i++)
        if (!s->delta[i]->dead) rows[j++] = s->delta[i]->emb;
      rc = append_q8(s, w, rows, nlive);
      free(rows);
    }
  }
  if (rc == STORE_OK) {
    int gr = gstore_checkpoint(s->g, w, err, sizeof err);
    if (gr) rc = fail(s, gr == STORE_ENOMEM ? gr : h5w_errcode(w) == H5_EFULL ? STORE_EFULL : gr,
                      "checkpoint of %s: %s", s->path, err);
  }
  if (rc == STORE_OK && h5w_flush(w, s->sync != STORE_SYNC_OFF) != H5_OK) rc = wfail(s, w, "checkpoint of");
  if (rc != STORE_OK) {
    /* the file is as it was (its failed tail cut off); the log still holds everything */
    gate_release(s);
    h5w_discard(w);
    h5w_free(w);
    return rc;
  }
  h5w_free(w);
  /* The file now holds everything up to frame upto: empty the log, still
  ** inside the gate (if that fails, the frames are in both: opening skips
  ** them by sequence number), and make the delta's live records base rows. */
  if (wal_reset(s->log, upto) != WAL_OK) rc = fail(s, STORE_EIO, "%s", wal_errmsg(s->log));
  gate_release(s);
  if (rebase(s, upto) != STORE_OK) { /* read it all again */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    int lrc = state_load(s, NULL, 1);
    if (lrc) return lrc;
    if (rc == STORE_OK) memcpy(s->err, keep, sizeof keep);
  }
  if (rc == STORE_OK) rc = index_save(s, 0);
  return rc;
}

/* The migrated_* string attributes of / as name, value, ..., NULL (each
** strdup'd; extra_attrs_free frees them), for optimize to write again. */
typedef struct extra_attrs {
  store *s;
  h5_obj *root;
  char **v; /* n names and values, then NULL */
  size_t n;
  int oom;
} extra_attrs;

static int collect_migrated(void *ctx, const h5_attr *a) {
  extra_attrs *ex = ctx;
  char buf[65536];
  if (strncmp(a->name, MIGRATED_PREFIX, strlen(MIGRATED_PREFIX)) != 0 ||
      store_attr_str(ex->s->f, ex->root, a->name, buf, sizeof buf) <= 0)
    return 0;
  char **v = realloc(ex->v, (ex->n + 3) * sizeof *v);
  if (!v) {
    ex->oom = 1;
    return 1;
  }
  ex->v = v;
  v[ex->n] = strdup(a->name);
  v[ex->n + 1] = strdup(buf);
  v[ex->n + 2] = NULL;
  if (!v[ex->n] || !v[ex->n + 1]) ex->oom = 1;
  ex->n += 2;
  return ex->oom;
}

static void extra_attrs_free(extra_attrs *ex) {
  for (size_t i = 0; i < ex->n; i++) free(ex->v[i]);
  free(ex->v);
}

int store_optimize(store *s) {
  int rc = store_checkpoint(s);
  if (rc) return rc;
  if (!s->writer) return STORE_OK;
  /* a new file with the live rows only, under a temporary name */
  size_t n = strlen(s->path) + 40;
  char *tmp = malloc(n); /* the base of the temporary name, then the name made */
  if (!tmp) return fail(s, STORE_ENOMEM, "out of memory");
  snprintf(tmp, n, "%s.optimize-%d", s->path, (int)getpid());
  char err[512], agent[1024] = "", embedder[1024] = "";
  h5_obj *root;
  if (h5_root(s->f, &root) == H5_OK) {
    read_attr_str(s, root, "agent", agent, sizeof agent);
    read_attr_str(s, root, "embedder", embedder, sizeof embedder);
  }
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = s->dim;
  o.metric = s->metric;
  o.storage = s->storage;
  o.agent = agent;
  o.embedder = embedder;
  o.index = s->icfg.kind;
  o.hnsw_m = s->icfg.m;
  o.hnsw_efc = s->icfg.efc;
  o.ef_search = s->icfg.ef;
  o.no_q8 = !s->icfg.q8;
  o.ivf_nlist = s->icfg.nlist;
  o.ivf_nprobe = s->icfg.nprobe;
  o.ivf_pq_m = s->icfg.pq_m;
  o.tokenize = s->tokenize;
  extra_attrs ex = {s, NULL, NULL, 0, 0};
  if (h5_root(s->f, &ex.root) == H5_OK) h5_attr_iter(ex.root, collect_migrated, &ex);
  if (ex.oom) {
    extra_attrs_free(&ex);
    free(tmp);
    return fail(s, STORE_ENOMEM, "out of memory");
  }
  o.attrs = (const char *const *)ex.v;
  h5w *w;
  char *base = tmp;
  /* made exclusively, never through a link planted at the name (h5.h) */
  int hr = h5w_create_temp(base, 1, &w, &tmp, err, sizeof err);
  free(base);
  if (hr != H5_OK) {
    extra_attrs_free(&ex);
    return fail(s, hr == H5_EFULL ? STORE_EFULL : hr == H5_ENOMEM ? STORE_ENOMEM : STORE_EIO,
                "optimize %s: %s", s->path, err);
  }
  rc = write_layout(s, w, &o, s->store_id);
  extra_attrs_free(&ex);
  /* the live base rows, a block of rows at a time */
  uint64_t block = 4096;
  for (uint64_t r0 = 0; rc == STORE_OK && r0 < s->nbase; r0 += block) {
    uint64_t r1 = r0 + block < s->nbase ? r0 + block : s->nbase, m = 0;
    for (uint64_t r = r0; r < r1; r++) m += !s->base_dead[r];
    if (!m) continue;
    for (int k = 0; rc == STORE_OK && k < NCOL; k++) {
      size_t esz = s->col[k].rowbytes;
      uint8_t *buf = calloc(m, esz);
      char **strs = col_kind[k] == K_STR ? calloc(m, sizeof *strs) : NULL;
      if (!buf || (col_kind[k] == K_STR && !strs)) {
        free(buf);
        free(strs);
        rc = fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      uint64_t j = 0;
      for (uint64_t r = r0; r < r1 && rc == STORE_OK; r++) {
        if (s->base_dead[r]) continue;
        const uint8_t *p = base_row(s, k, r);
        if (!p) {
          rc = fail(s, STORE_ECORRUPT, "%s: row %llu outside the file", s->path, (unsigned long long)r);
          break;
        }
        if (col_kind[k] != K_STR) {
          memcpy(buf + j * esz, p, esz);
        } else {
          const uint8_t *data;
          size_t len;
          uint32_t cnt;
          if (h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK) {
            rc = fail(s, STORE_ECORRUPT, "%s: %s", s->path, h5_errmsg(s->f));
            break;
          }
          if (data) {
            strs[j] = malloc(len + 1);
            if (!strs[j]) {
              rc = fail(s, STORE_ENOMEM, "out of memory");
              break;
            }
            memcpy(strs[j], data, len);
            strs[j][len] = 0;
          }
          memcpy(buf + j * esz, &strs[j], sizeof strs[j]);
        }
        j++;
      }
      char path[64];
      snprintf(path, sizeof path, "/memories/%s", col_name[k]);
      h5w_obj *d;
      if (rc == STORE_OK && (h5w_lookup(w, path, &d) != H5_OK || h5w_append(w, d, buf, m) != H5_OK))
        rc = wfail(s, w, "optimize");
      if (rc == STORE_OK && k == C_EMB) { /* and their int8 copies */
        const void **rows = malloc(m * sizeof *rows);
        if (!rows) rc = fail(s, STORE_ENOMEM, "out of memory");
        for (uint64_t i = 0; rows && i < m; i++) rows[i] = buf + i * esz;
        if (rows) rc = append_q8(s, w, rows, m);
        free(rows);
      }
      for (uint64_t i = 0; strs && i < m; i++) free(strs[i]);
      free(strs);
      free(buf);
    }
  }
  if (rc == STORE_OK) {
    int gr = gstore_write_live(s->g, w, err, sizeof err);
    if (gr) rc = fail(s, h5w_errcode(w) == H5_EFULL ? STORE_EFULL : gr, "optimize %s: %s", s->path, err);
  }
  h5w_obj *ck, *mx;
  int64_t v = (int64_t)s->ckpt_seq;
  if (rc == STORE_OK && (h5w_lookup(w, "/h5mem/checkpoints", &ck) != H5_OK ||
                         h5w_append(w, ck, &v, 1) != H5_OK ||
                         h5w_lookup(w, "/h5mem/max_id", &mx) != H5_OK ||
                         h5w_append(w, mx, &s->max_id, 1) != H5_OK))
    rc = wfail(s, w, "optimize");
  if (rc == STORE_OK && h5w_close(w, s->sync != STORE_SYNC_OFF) != H5_OK) rc = wfail(s, w, "optimize");
  h5w_free(w);
  /* the new file replaces the old inside the gate: no reader is between
  ** opening the .h5 file and reading the log */
  int g = rc == STORE_OK ? gate_write_begin(s->lockfd) : GATE_NONE;
  if (g != GATE_OK && g != GATE_NONE)
    rc = fail(s, STORE_BUSY, "optimize %s: readers kept the store busy", s->path);
  if (rc == STORE_OK && rename(tmp, s->path) != 0)
    rc = fail(s, STORE_EIO, "optimize %s: %s", s->path, strerror(errno));
  gate_write_end(s->lockfd, g);
  if (rc != STORE_OK) unlink(tmp);
  free(tmp);
  if (rc != STORE_OK) return rc;
  rc = state_load(s, NULL, 1);
  return rc ? rc : index_save(s, 1);
}

int store_close(store *s) {
  if (!s) return STORE_OK;
  int rc = STORE_OK;
  if (s->in_txn) store_rollback(s);
  if (s->writer && s->log && (s->ndelta || s->nnewdead || wal_frames(s->log))) rc = store_checkpoint(s);
  if (s->writer && s->log && s->sync == STORE_SYNC_NORMAL) wal_sync(s->log);
  state_free(s);
  gate_release(s);
  if (s->lockfd >= 0) close(s->lockfd);
  if (s->gatefd >= 0) close(s->gatefd);
  free(s->ul);
  free(s->frame);
  free(s->path);
  free(s->walpath);
  free(s);
  return rc;
}
