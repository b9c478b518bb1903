/*
** lib/store/store_load.c - loading a view of the store: the base (the
** checkpointed file, mapped and read in place) and the state as a reader
** or the writer loads it, with the gate that keeps readers and
** checkpoints apart (gate.h; docs/FORMAT.md).
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"
#include "store_int.h"
#include "util/pool.h"

/* ---- the base (the checkpointed file) ------------------------------------ */

typedef struct chunk_ctx {
  bcol *c;
  store *s;
  char why[160]; /* what take_chunk refused */
} chunk_ctx;

static int take_chunk(void *ctx, const uint64_t *off, uint64_t addr, uint64_t size, uint32_t mask) {
  chunk_ctx *cc = ctx;
  bcol *c = cc->c;
  uint64_t k = off[0] / c->crows;
  if (off[0] % c->crows || k >= c->nchunks) {
    snprintf(cc->why, sizeof cc->why, "a chunk at row %llu, not a chunk boundary below %llu rows",
             (unsigned long long)off[0], (unsigned long long)(c->nchunks * c->crows));
    return H5_ECORRUPT;
  }
  if (mask != 0 || size != c->crows * c->rowbytes) {
    snprintf(cc->why, sizeof cc->why, "chunk %llu is %llu bytes with filter mask %u, not %llu unfiltered",
             (unsigned long long)k, (unsigned long long)size, (unsigned)mask,
             (unsigned long long)(c->crows * c->rowbytes));
    return H5_ECORRUPT;
  }
  c->caddr[k] = addr;
  return H5_OK;
}

static const uint8_t *col_row(const store *s, const bcol *c, uint64_t r) {
  uint64_t k = c->crows ? r / c->crows : 0;
  if (k >= c->nchunks || c->caddr[k] == UINT64_MAX) return NULL;
  return h5_file_span(s->f, c->caddr[k] + (r % c->crows) * c->rowbytes, c->rowbytes);
}

const uint8_t *store_base_row(const store *s, int col, uint64_t r) {
  return col_row(s, &s->col[col], r);
}

const int8_t *store_q8_row(const store *s, uint32_t i, float *scale) {
  const uint8_t *p = i < s->nbase ? col_row(s, &s->q8[1], i) : NULL;
  if (!p) return NULL;
  memcpy(scale, p, 4);
  return (const int8_t *)col_row(s, &s->q8[0], i);
}

void store_codes_free(strcodes *c) {
  free(c->code);
  free(c->pcode);
  for (uint64_t i = 0; i < c->nown; i++) free(c->own[i]);
  free(c->own);
  free(c->dp);
  free(c->dlen);
  free(c->dcode);
  memset(c, 0, sizeof *c);
}

void store_base_free(store *s) {
  store_sketches_free(s);
  sindex_free(s->ix); /* (they may read the mapped file: first) */
  s->ix = NULL;
  tindex_free(s->tx);
  s->tx = NULL;
  for (int k = 0; k < 6; k++) store_codes_free(&s->sc[k]);
  free(s->tsc);
  s->tsc = NULL;
  store_time_free(s);
  for (int k = 0; k < NCOL; k++) free(s->col[k].caddr);
  memset(s->col, 0, sizeof s->col);
  for (int k = 0; k < 2; k++) free(s->q8[k].caddr);
  memset(s->q8, 0, sizeof s->q8);
  store_cols_base_free(s);
  free(s->base_id);
  free(s->base_dead);
  s->base_id = NULL;
  s->base_dead = NULL;
  s->base_cap = 0;
  h5_close(s->f);
  s->f = NULL;
  s->nbase = 0;
}

static int read_attr_int(h5_obj *o, const char *name, int64_t *v) {
  return store_attr_int(o, name, v) > 0 ? 0 : -1;
}

/* A string attribute into buf (NUL-terminated), or -1. */
int store_read_attr_str(store *s, h5_obj *o, const char *name, char *buf, size_t n) {
  return store_attr_str(s->f, o, name, buf, n) > 0 ? 0 : -1;
}

static int hexval(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

const char *store_metric_name(int m) {
  return m == STORE_L2 ? "l2" : m == STORE_DOT ? "dot" : "cosine";
}

/* Map dataset d (path, for messages) as a column of *n rows (UINT64_MAX:
** as many as it has, stored into *n): chunked along the rows, unfiltered,
** little-endian elements of esz bytes, and 1-D (width 0) or [rows, width]
** with whole rows per chunk; every chunk present. */
int store_map_col(store *s, h5_obj *d, const char *path, bcol *c, size_t esz, int width,
                  uint64_t *n) {
  h5_dset_info in;
  c->d = d;
  if (h5_dset_info_get(d, &in) != H5_OK || in.rank != (width ? 2 : 1) ||
      in.layout != H5_LAYOUT_CHUNKED || in.nfilters || in.type->size != esz || in.type->big_endian ||
      in.chunk[0] == 0 || (width && (in.dims[1] != (uint64_t)width || in.chunk[1] != (uint64_t)width)))
    return store_fail(s, STORE_ECORRUPT, "%s: %s does not have the store's layout", s->path, path);
  if (*n == UINT64_MAX) *n = in.dims[0];
  if (in.dims[0] != *n)
    return store_fail(s, STORE_ECORRUPT, "%s: %s has %llu rows, /memories/id %llu", s->path, path,
                (unsigned long long)in.dims[0], (unsigned long long)*n);
  c->crows = in.chunk[0];
  c->rowbytes = esz * (width ? (size_t)width : 1);
  c->nchunks = *n / c->crows + (*n % c->crows != 0);
  c->caddr = malloc((c->nchunks ? c->nchunks : 1) * sizeof *c->caddr);
  if (!c->caddr) return store_fail(s, STORE_ENOMEM, "out of memory");
  memset(c->caddr, 0xff, (c->nchunks ? c->nchunks : 1) * sizeof *c->caddr);
  chunk_ctx cc = {c, s, ""};
  if (h5_dset_chunk_iter(d, take_chunk, &cc) != H5_OK)
    return store_fail(s, STORE_ECORRUPT, "%s: the chunks of %s: %s", s->path, path,
                      cc.why[0] ? cc.why : h5_errmsg(s->f)[0] ? h5_errmsg(s->f) : "the chunk index cannot be read");
  for (uint64_t i = 0; i < c->nchunks; i++)
    if (c->caddr[i] == UINT64_MAX)
      return store_fail(s, STORE_ECORRUPT, "%s: %s lacks chunk %llu", s->path, path, (unsigned long long)i);
  return STORE_OK;
}

/* Read a 1-D int64 dataset of group g whole (NULL and 0 when empty). */
static int read_i64s(store *s, h5_obj *g, const char *name, int64_t **out, uint64_t *n) {
  *out = NULL;
  *n = 0;
  h5_obj *d;
  h5_dset_info in;
  if (store_open_child(s->f, g, name, &d) != H5_OK || h5_dset_info_get(d, &in) != H5_OK ||
      in.rank != 1 || in.type->cls != H5_CLASS_INTEGER || in.type->size != 8)
    return store_fail(s, STORE_ECORRUPT, "%s: dataset '%s' is missing or not int64", s->path, name);
  if (!in.dims[0]) return STORE_OK;
  if (in.dims[0] > (uint64_t)s->fst.st_size / 8 + 1)
    return store_fail(s, STORE_ECORRUPT, "%s: '%s' is larger than the file", s->path, name);
  int64_t *v = malloc(in.dims[0] * 8);
  if (!v) return store_fail(s, STORE_ENOMEM, "out of memory");
  if (h5_dset_read(d, v, in.dims[0] * 8) != H5_OK) {
    free(v);
    return store_fail(s, STORE_ECORRUPT, "%s: %s", s->path, h5_errmsg(s->f));
  }
  for (uint64_t i = 0; i < in.dims[0] && in.type->big_endian; i++)
    v[i] = (int64_t)__builtin_bswap64((uint64_t)v[i]);
  *out = v;
  *n = in.dims[0];
  return STORE_OK;
}

/* Base rows r0 .. r1-1 of column c into dst (row r0 at dst), read from the
** file a run of adjacent chunks at a time (so that millions of rows cost a
** few reads, not a page fault per 4 KiB of file: on a virtual machine each
** fault is microseconds).  STORE_OK, or STORE_ECORRUPT (a chunk missing or
** past the end of the file) with the message in s. */
static int col_read(store *s, const bcol *c, const char *name, uint64_t r0, uint64_t r1, uint8_t *dst) {
  uint64_t bytes = c->crows * c->rowbytes;
  if (r0 < r1 && !c->crows) return store_fail(s, STORE_ECORRUPT, "%s: %s: no chunks", s->path, name);
  for (uint64_t k = r0 < r1 ? r0 / c->crows : 0; r0 < r1;) {
    if (k >= c->nchunks || c->caddr[k] == UINT64_MAX)
      return store_fail(s, STORE_ECORRUPT, "%s: %s: chunk %llu is missing", s->path, name, (unsigned long long)k);
    uint64_t k2 = k + 1;
    while (k2 < c->nchunks && k2 * c->crows < r1 && c->caddr[k2] == c->caddr[k] + (k2 - k) * bytes) k2++;
    uint64_t e = k2 * c->crows < r1 ? k2 * c->crows : r1, in = r0 - k * c->crows;
    if (h5_file_copy(s->f, c->caddr[k] + in * c->rowbytes, dst, (e - r0) * c->rowbytes) != H5_OK)
      return store_fail(s, STORE_ECORRUPT, "%s: %s: %s", s->path, name, h5_errmsg(s->f));
    dst += (e - r0) * c->rowbytes;
    r0 = e;
    k = k2;
  }
  return STORE_OK;
}

/* The n ids of the base rows into s->base_id (room for cap), in memory
** the kernel may back with huge pages. */
static int read_ids(store *s, uint64_t n, uint64_t cap) {
  uint8_t *v = malloc(cap * 8);
  if (!v) return store_fail(s, STORE_ENOMEM, "out of memory");
  util_advise_huge(v, cap * 8);
  int rc = col_read(s, &s->col[C_ID], "/memories/id", 0, n, v);
  if (rc == STORE_OK) s->base_id = (int64_t *)v;
  else free(v);
  return rc;
}

int store_emb_read(store *s, uint8_t **buf, uint64_t *cap, uint64_t most, uint64_t r0, uint64_t r1) {
  const bcol *c = &s->col[C_EMB];
  if (r1 > s->nbase || r0 > r1 || r1 > most) return STORE_EINVAL;
  if (r1 > *cap) {
    uint64_t want = *cap + *cap / 4 > r1 ? *cap + *cap / 4 : r1;
    if (want > most) want = most;
    uint8_t *v = realloc(*buf, want * c->rowbytes);
    if (!v) return STORE_ENOMEM;
    util_advise_huge(v, want * c->rowbytes);
    *buf = v;
    *cap = want;
  }
  return col_read(s, c, "/memories/embedding", r0, r1, *buf + r0 * c->rowbytes);
}

/* Open the file as the base: check it is a store, map its columns, and
** unless columns_only read its ids and tombstones (and, when the ids are
** out of order, build the id map). */
int store_base_load(store *s, const store_opts *want, int columns_only) {
  char err[512];
  if (stat(s->path, &s->fst) != 0)
    return store_fail(s, STORE_EIO, "%s: %s", s->path, strerror(errno));
  int hr = h5_open(s->path, &s->f, err, sizeof err);
  if (hr != H5_OK) return store_fail(s, store_h5_code(hr), "%s", err);
  h5_obj *root, *mem, *meta;
  const h5_link *l;
  char buf[256];
  int64_t ver = 0, dim = 0;
  if (h5_root(s->f, &root) != H5_OK || store_read_attr_str(s, root, "h5mem_format", buf, sizeof buf) ||
      strcmp(buf, FORMAT_NAME) != 0)
    return store_fail(s, STORE_EMISMATCH, "%s is an HDF5 file but not an h5mem store (no "
                "h5mem_format = '" FORMAT_NAME "' attribute on /)", s->path);
  if (read_attr_int(root, "h5mem_format_version", &ver) || ver < 1 || ver > FORMAT_VERSION)
    return store_fail(s, STORE_EMISMATCH, "%s: store format version %lld; this h5mem reads versions 1 to %d",
                s->path, (long long)ver, FORMAT_VERSION);
  if (read_attr_int(root, "dim", &dim) || dim < 1 || dim > 65536)
    return store_fail(s, STORE_ECORRUPT, "%s: bad dim attribute", s->path);
  char metric[32], storage[32], sid[64];
  if (store_read_attr_str(s, root, "metric", metric, sizeof metric) ||
      store_read_attr_str(s, root, "storage", storage, sizeof storage) ||
      store_read_attr_str(s, root, "store_id", sid, sizeof sid) || strlen(sid) != 32)
    return store_fail(s, STORE_ECORRUPT, "%s: missing metric, storage or store_id attribute", s->path);
  s->dim = (int)dim;
  s->metric = strcmp(metric, "l2") == 0 ? STORE_L2 : strcmp(metric, "dot") == 0 ? STORE_DOT
            : strcmp(metric, "cosine") == 0 ? STORE_COSINE : -1;
  s->storage = strcmp(storage, "float16") == 0 ? STORE_F16 : strcmp(storage, "float32") == 0 ? STORE_F32 : -1;
  if (s->metric < 0 || s->storage < 0)
    return store_fail(s, STORE_ECORRUPT, "%s: metric '%s' or storage '%s' unknown", s->path, metric, storage);
  for (int i = 0; i < 16; i++) {
    int a = hexval(sid[2 * i]), b = hexval(sid[2 * i + 1]);
    if (a < 0 || b < 0) return store_fail(s, STORE_ECORRUPT, "%s: bad store_id", s->path);
    s->store_id[i] = (uint8_t)(a * 16 + b);
  }
  int crc = sindex_cfg_read(s->f, root, &s->icfg, err, sizeof err);
  if (crc == STORE_OK) crc = tindex_cfg_read(s->f, root, &s->tcfg, err, sizeof err);
  if (crc != STORE_OK) return store_fail(s, crc, "%s: %s", s->path, err);
  snprintf(s->tokenize, sizeof s->tokenize, "%sunicode61 remove_diacritics %d",
           s->tcfg.porter ? "porter " : "", s->tcfg.remove_diacritics);
  if (want && want->dim > 0) {
    if (want->index != s->icfg.kind)
      return store_fail(s, STORE_EMISMATCH, "%s has index=%s, not index=%s", s->path,
                  store_index_name(s->icfg.kind), store_index_name(want->index));
    if (want->dim != s->dim)
      return store_fail(s, STORE_EMISMATCH, "%s has dim=%d, not dim=%d", s->path, s->dim, want->dim);
    if (want->metric != s->metric)
      return store_fail(s, STORE_EMISMATCH, "%s has metric=%s, not metric=%s", s->path,
                  store_metric_name(s->metric), store_metric_name(want->metric));
    if (want->storage != s->storage)
      return store_fail(s, STORE_EMISMATCH, "%s has storage=%s, not storage=%s", s->path, storage,
                  want->storage == STORE_F16 ? "float16" : "float32");
    int porter, rd;
    char norm[64];
    if (want->tokenize &&
        (store_tokenize_parse(want->tokenize, &porter, &rd, norm, err, sizeof err) ||
         strcmp(norm, s->tokenize)))
      return store_fail(s, STORE_EMISMATCH, "%s has tokenize='%s', not '%s'", s->path, s->tokenize,
                  want->tokenize);
  }
  int ccr = store_cols_read(s, root, want);
  if (ccr) return ccr;
  if ((ver >= 2) != (s->ncols > 0))
    return store_fail(s, STORE_ECORRUPT, "%s: format version %lld %s declared columns", s->path, (long long)ver,
                      ver >= 2 ? "without" : "with");
  if (h5_group_find(root, "memories", &l) != H5_OK || h5_obj_open(s->f, l->addr, &mem) != H5_OK ||
      h5_group_find(root, "h5mem", &l) != H5_OK || h5_obj_open(s->f, l->addr, &meta) != H5_OK)
    return store_fail(s, STORE_ECORRUPT, "%s: /memories or /h5mem is missing", s->path);
  /* the columns: all the same length, chunked, unfiltered */
  uint64_t n = UINT64_MAX;
  for (int k = 0; k < NCOL; k++) {
    char path[64];
    snprintf(path, sizeof path, "/memories/%s", store_col_name[k]);
    if (store_open_child(s->f, mem, store_col_name[k], &s->col[k].d) != H5_OK)
      return store_fail(s, STORE_ECORRUPT, "%s: %s is missing", s->path, path);
    size_t esz = store_col_kind[k] == K_STR ? 16 : k == C_EMB ? (size_t)s->storage : 8;
    int rc = store_map_col(s, s->col[k].d, path, &s->col[k], esz, k == C_EMB ? s->dim : 0, &n);
    if (rc) return rc;
  }
  /* the int8 copy of the embeddings (index=hnsw): the same rows, or none */
  h5_obj *qd, *qs;
  if (s->icfg.kind == STORE_INDEX_HNSW && s->icfg.q8 &&
      h5_obj_open_path(s->f, "/index/q8", &qd) == H5_OK &&
      h5_obj_open_path(s->f, "/index/q8_scale", &qs) == H5_OK) {
    /* (derived data: when it does not fit, searches do without it) */
    int rc = store_map_col(s, qd, "/index/q8", &s->q8[0], 1, s->dim, &n);
    if (!rc) rc = store_map_col(s, qs, "/index/q8_scale", &s->q8[1], 4, 0, &n);
    if (rc == STORE_ENOMEM) return rc;
    if (rc) {
      for (int k = 0; k < 2; k++) free(s->q8[k].caddr);
      memset(s->q8, 0, sizeof s->q8);
    }
  }
  int ucr = store_cols_map(s, mem, n);
  if (ucr) return ucr;
  char pv[8] = "";
  store_read_attr_str(s, root, "provenance", pv, sizeof pv);
  if ((ucr = store_prov_find(s, !strcmp(pv, "on")))) return ucr;
  s->nbase = n;
  int rc = sindex_load(s, s->f, &s->icfg, n, &s->ix);
  if (!rc) rc = tindex_load(s, s->f, &s->tcfg, n, &s->tx);
  if (!rc) rc = store_vgraphs_load(s);
  if (rc) return store_fail(s, rc, "out of memory");
  if (columns_only) return STORE_OK;
  uint64_t ndel, nck;
  int64_t *del, *ck;
  /* room for a quarter more rows than the file has, which the writer's
  ** checkpoints append to (rebase): only the pages written are backed */
  uint64_t cap = n + n / 4 + 1024;
  if ((rc = read_ids(s, n, cap))) return rc;
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
  s->base_dead = calloc(cap, 1); /* (its pages are touched only where rows are dead) */
  if (!s->base_dead) {
    free(del);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  s->base_cap = cap;
  uint64_t ndead = 0;
  for (uint64_t i = 0; i < ndel; i++) {
    if (del[i] < 0 || (uint64_t)del[i] >= n) {
      free(del);
      return store_fail(s, STORE_ECORRUPT, "%s: /memories/deleted lists row %lld of %llu", s->path,
                  (long long)del[i], (unsigned long long)n);
    }
    ndead += !s->base_dead[del[i]];
    s->base_dead[del[i]] = 1;
  }
  free(del);
  s->live = n - ndead;
  /* ids in increasing order (rows appended by id, as most stores are): the
  ** rows are found by binary search in base_id, no map is built */
  s->base_sorted = !s->file_only; /* (store_verify: rows by position; two rows of an id are its to find) */
  for (uint64_t r = 0; r < n; r++) {
    int64_t id = s->base_id[r];
    if (id > s->max_id) s->max_id = id;
    if (r && id <= s->base_id[r - 1]) s->base_sorted = 0;
  }
  if (s->base_sorted || s->file_only) return STORE_OK;
  if (idmap_reserve(&s->map, s->live)) return store_fail(s, STORE_ENOMEM, "out of memory");
  for (uint64_t r = 0; r < n; r++) {
    int64_t id = s->base_id[r];
    if (s->base_dead[r]) continue;
    if (idmap_slot(&s->map, id))
      return store_fail(s, STORE_ECORRUPT, "%s: id %lld is live in two rows", s->path, (long long)id);
    if ((rc = idmap_put(&s->map, id, r))) return store_fail(s, rc, "out of memory");
  }
  return STORE_OK;
}

void store_state_free(store *s) {
  gstore_free(s->g);
  s->g = NULL;
  store_delta_free(s);
  store_patch_free(s);
  store_base_free(s);
  store_mtree_free(s->mt); /* (built again from the file's leaves when needed) */
  s->mt = NULL;
  idmap_free(&s->map);
  wal_close(s->log);
  s->log = NULL;
  s->live = 0;
  s->max_id = 0;
  s->ckpt_seq = 0;
}

/* Load the file and replay the log (for writing: repair the log's tail). */
static int state_load1(store *s, const store_opts *want, int for_write);
static int log_gap(const store *s);
static int gap_fail(store *s);

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
** the superblock is written; kept until store_gate_release (a checkpoint also
** empties the log under it). */
int store_gate_take(void *ctx, int before) {
  store *s = ctx;
  if (!before || s->gated > 0) return 0;
  int g = gate_write_begin(s->lockfd);
  if (g != GATE_OK && g != GATE_NONE) {
    s->gated = g; /* (store_wfail says it: busy, or the lock call's error) */
    s->gate_errno = errno;
    return -1;
  }
  s->gated = g + 1;
  return 0;
}

void store_gate_release(store *s) {
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
int store_state_load(store *s, const store_opts *want, int for_write) {
  if (for_write) {
    int rc = state_load1(s, want, 1);
    s->loaded = rc == STORE_OK;
    return rc;
  }
  int64_t t0 = store_now_ns();
  for (int tries = 0;; tries++) {
    fileid before, after, wbefore, wafter;
    file_id(s->path, &before);
    file_id(s->walpath, &wbefore);
    int g = gate_read_begin(reader_gatefd(s));
    int rc = state_load1(s, want, 0);
    int gap = rc == STORE_OK && s->log && log_gap(s);
    int moved = 0;
    if (g != GATE_OK) { /* (a failure before the log was read: did it change at all?) */
      file_id(s->path, &after);
      file_id(s->walpath, &wafter);
      moved = !same_file(&before, &after) ||
              (s->log ? wal_changed(s->log, 1) : rc != STORE_OK && !same_file(&wbefore, &wafter));
    }
    gate_read_end(s->gatefd, g);
    if (gap && g == GATE_OK) { /* (no checkpoint can have come between: the file is older) */
      s->loaded = 0;
      return gap_fail(s);
    }
    s->loaded = rc == STORE_OK && !gap && !moved;
    if (s->loaded || (rc != STORE_OK && !moved)) return rc;
    /* (bounded like a wait for the gate: a writer that checkpoints faster
    ** than this reader loads starves it, which only the gate prevents) */
    if (tries > 0 && store_now_ns() - t0 >= GATE_WAIT_MS * 1000000LL)
      return rc != STORE_OK ? rc : gap && !moved ? gap_fail(s)
                                 : store_fail(s, STORE_EIO, "%s: the store keeps changing under this reader", s->path);
    usleep(1000u << (tries < 6 ? tries : 6));
  }
}

/* Whether the log's first frame (or, without frames, the next one) comes
** after the frame following the file's last checkpoint. */
static int log_gap(const store *s) {
  return wal_last_seq(s->log) - wal_frames(s->log) + 1 > s->ckpt_seq + 1;
}

static int gap_fail(store *s) {
  uint64_t first = wal_last_seq(s->log) - wal_frames(s->log) + 1;
  return store_fail(s, STORE_ECORRUPT,
                    "%s: the file is older than its log %s (restored from a copy?): the log continues "
                    "from frame %llu, the file's last checkpoint covers frames up to %llu, and frames "
                    "%llu..%llu are in neither; move the log aside to open the file as it is",
                    s->path, s->walpath, (unsigned long long)first, (unsigned long long)s->ckpt_seq,
                    (unsigned long long)s->ckpt_seq + 1, (unsigned long long)first - 1);
}

static int state_load1(store *s, const store_opts *want, int for_write) {
  uint64_t gversion = gstore_version(s->g) + 1; /* the graph's versions never repeat */
  store_state_free(s);
  int rc = store_base_load(s, want, 0);
  if (rc) return rc;
  char err[512];
  if (gstore_new(&s->g, gversion)) return store_fail(s, STORE_ENOMEM, "out of memory");
  if ((rc = gstore_load(s->g, s->f, err, sizeof err)))
    return store_fail(s, rc, "%s: %s", s->path, rc == STORE_ENOMEM ? "out of memory" : err);
  if (s->file_only) return STORE_OK; /* (store_verify: the file alone) */
  /* (the log's codes are the store's: WAL_EFULL, a log made where there is
  ** no room for its header, is STORE_EFULL) */
  int wr = wal_open(s->walpath, s->store_id, !for_write, &s->log, err, sizeof err);
  if (wr != WAL_OK) return store_fail(s, wr, "%s", err);
  /* a log that starts past the frame after the file's last checkpoint: the
  ** frames between are in no file (a reader without the gate may see this
  ** for a moment, a checkpoint in between: store_state_load reads again) */
  if (for_write && log_gap(s)) return gap_fail(s);
  s->in_txn = 0;
  s->replay_rc = STORE_OK;
  rc = wal_replay(s->log, store_replay_frame, s);
  if (rc == 1) return s->replay_rc; /* (store_replay_frame stops with 1 only after setting it) */
  if (rc) return store_fail(s, rc, "%s", wal_errmsg(s->log));
  /* a log numbered below the file's last checkpoint (deleted, or made
  ** anew): number its frames after it, or replay would skip them */
  if (for_write && wal_last_seq(s->log) < s->ckpt_seq && (wr = wal_reset(s->log, s->ckpt_seq)) != WAL_OK)
    return store_fail(s, wr, "%s", wal_errmsg(s->log));
  return STORE_OK;
}

/* ---- an ephemeral store ------------------------------------------------------------ */

int store_ephemeral_load(store *s, const store_opts *o) {
  int rc = store_new_check(s, o);
  if (rc != STORE_OK) return rc;
  if (o->index != STORE_INDEX_FLAT)
    return store_fail(s, STORE_EINVAL, "an ephemeral store searches exactly: index=%s is for stores with a file",
                      store_index_name(o->index));
  int porter = 0, rd = 1;
  char norm[64], terr[256];
  if (o->tokenize && store_tokenize_parse(o->tokenize, &porter, &rd, norm, terr, sizeof terr))
    return store_fail(s, STORE_EINVAL, "%s", terr);
  s->ephemeral = 1;
  s->dim = o->dim;
  s->metric = o->metric;
  s->storage = o->storage;
  s->icfg = (sindex_cfg){STORE_INDEX_FLAT, 16, 128, o->ef_search ? o->ef_search : 64, 0, 0, 16, 0};
  s->tcfg.porter = porter;
  s->tcfg.remove_diacritics = rd;
  snprintf(s->tokenize, sizeof s->tokenize, "%sunicode61 remove_diacritics %d", porter ? "porter " : "", rd);
  if (getrandom(s->store_id, sizeof s->store_id, 0) != (ssize_t)sizeof s->store_id) { /* (its id names it only) */
    uintptr_t a = (uintptr_t)s;
    memcpy(s->store_id, &a, sizeof a);
  }
  const char *attr[4] = {o->agent, o->embedder, o->embedder_digest, o->embedder_model};
  for (int i = 0; i < 4; i++)
    if (attr[i] && !(s->eattr[i] = strdup(attr[i]))) return store_fail(s, STORE_ENOMEM, "out of memory");
  if (o->ncols > 0) { /* the declared columns, as a file would hold them (no rows) */
    s->cdef = malloc((size_t)o->ncols * sizeof *s->cdef);
    s->ucol = calloc((size_t)o->ncols, sizeof *s->ucol);
    s->umiss = calloc((size_t)o->ncols, sizeof *s->umiss);
    if (!s->cdef || !s->ucol || !s->umiss) return store_fail(s, STORE_ENOMEM, "out of memory");
    memcpy(s->cdef, o->cols, (size_t)o->ncols * sizeof *s->cdef);
    s->ncols = o->ncols;
  }
  if (o->provenance && (rc = store_prov_find(s, 1))) return rc;
  s->expcol = -1;
  for (int i = 0; i < s->ncols; i++)
    if (!strcasecmp(s->cdef[i].name, "expires_at") && s->cdef[i].type == STORE_T_INTEGER &&
        s->cdef[i].role == STORE_R_METADATA)
      s->expcol = i;
  if (o->ttl < 0) return store_fail(s, STORE_EINVAL, "ttl=%lld: expected seconds >= 0", (long long)o->ttl);
  if (o->ttl > 0 && s->expcol < 0)
    return store_fail(s, STORE_EINVAL, "ttl= needs the declared column expires_at integer");
  s->ttl = o->ttl;
  if (o->evict_by != STORE_EVICT_LRU && o->evict_by != STORE_EVICT_SCORE)
    return store_fail(s, STORE_EINVAL, "evict: expected lru or score");
  s->capacity = o->capacity;
  s->evict_by = o->evict_by;
  s->evict_half_life = o->evict_half_life;
  s->nbase = 0;
  if ((rc = sindex_load(s, NULL, &s->icfg, 0, &s->ix)) || (rc = tindex_load(s, NULL, &s->tcfg, 0, &s->tx)) ||
      (rc = gstore_new(&s->g, 1)))
    return store_fail(s, rc, "out of memory");
  s->loaded = 1;
  s->writer = 1;
  return STORE_OK;
}
