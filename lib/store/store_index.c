/*
** lib/store/store_index.c - the store's vector index, an HNSW graph
** (lib/ann/hnsw) or an IVF index (lib/ann/ivf): loading it from the file,
** saving it at checkpoints, and store_knn, the search that uses it
** (store_int.h; docs/FORMAT.md, "The vector index").
**
** On disk (store_int.h, simage_load/simage_append): images under kind "hnsw" or "ivf", each save's
** row holding the base rows the index covers and (IVF) the rows its lists
** were trained on.  An image read in place is validated first (hnsw_load,
** ivf_load).
**
** An IVF index is trained (k-means) when first saved and again once the
** store has grown to 4 times the rows it was trained on; in between, saves
** add the new rows to the lists.
**
** Search: the graph (or the IVF lists) answers for the rows it covers, an exact scan for the
** rest (rows checkpointed since the save, and the delta; pruned by an int8
** sketch from the second search: scan_tail), and the two sorted lists
** merge.  Filtered searches follow the rule BENCHMARKS.md
** measures ("Filtered searches through SQL"):
** ef (nprobe) raised in proportion to what the filter removes; when the
** allowed rows the index covers are fewer than the distances that search
** would compute (about ef x 2M; index_cost), scan just them; else search
** the index, and scan exactly if it still finds fewer than it should.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ann/hnsw.h"
#include "ann/ivf.h"
#include "ann/prune.h"
#include "ann/q8.h"
#include "store_int.h"

#define SAVE_MIN_ROWS 256   /* rows past the graph before a checkpoint saves one */
#define SAVE_TAIL_SHARE 8   /* ... and at least 1/8 of the rows it covers */
#define MAX_EF 100000
#define RETRAIN_GROWTH 4    /* IVF: train again when the rows reach 4x the trained ones */

struct sindex {
  sindex_cfg cfg;
  store *s;
  ann_elem elem;
  ann_metric metric;
  hnsw *g;          /* index=hnsw: NULL until there is a graph */
  ivf *v;           /* index=ivf: NULL until there are lists */
  uint64_t rows;    /* base rows g or v covers */
  uint64_t saved;   /* ... and the last image in the file (rows >= saved: sindex_extend) */
  uint64_t trained; /* IVF: the rows its centroids were trained on */
  void *copy;       /* the image, when it could not be read in place */
  int8_t *q8c;      /* the int8 rows the graph covers, copied (sindex_warm) */
  float *q8s;       /* their scales */
  uint64_t q8n;     /* rows in q8c (0: the callback reads the file) */
  uint64_t q8cap;   /* ... and the rows it has room for */
  uint8_t *novec;   /* a bit per row below nnovec: set when it has no vector */
  uint64_t nnovec;  /* (made before a build: see vec_bits) */
  uint8_t *rowc;    /* a writer's builds: rows 0 .. nrowc-1 copied (build_rows) */
  uint64_t nrowc, caprowc;
  size_t rowbytes;
  int warmed;       /* sindex_warm ran */
  int misaligned;   /* the mapped image is not on 4 bytes (the index copies it) */
  /* the saved image not loaded yet (sindex_ready): loading checks the whole
  ** graph (every node's links), which opening the store does not wait for */
  h5_file *pending;
  uint64_t pending_rows;
  char note[256];
};

static ann_metric metric_of(const store *s) {
  return store_metric(s) == STORE_L2 ? ANN_L2 : store_metric(s) == STORE_DOT ? ANN_DOT : ANN_COSINE;
}
static ann_elem elem_of(const store *s) { return store_storage(s) == STORE_F16 ? ANN_F16 : ANN_F32; }

/* ---- settings ---------------------------------------------------------- */

int sindex_cfg_read(h5_file *f, h5_obj *root, sindex_cfg *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  c->m = 16;
  c->efc = 64;
  c->ef = 64;
  c->nprobe = 16;
  char kind[16] = "", qz[16] = "";
  int has = store_attr_str(f, root, "index", kind, sizeof kind);
  if (has == 0) return STORE_OK; /* older stores: flat */
  /* (stores made before the int8 copy have no quantize attribute) */
  int hq = store_attr_str(f, root, "quantize", qz, sizeof qz);
  c->q8 = hq > 0 && !strcmp(qz, "int8");
  if (hq < 0 || (hq > 0 && !c->q8 && strcmp(qz, "none"))) {
    snprintf(err, errlen, "the quantize attribute is not 'int8' or 'none'");
    return STORE_ECORRUPT;
  }
  if (!strcmp(kind, "flat")) c->kind = STORE_INDEX_FLAT;
  else if (!strcmp(kind, "hnsw")) c->kind = STORE_INDEX_HNSW;
  else if (!strcmp(kind, "ivf")) c->kind = STORE_INDEX_IVF;
  else {
    snprintf(err, errlen, "the index attribute is not 'flat', 'hnsw' or 'ivf'");
    return STORE_ECORRUPT;
  }
  int64_t m = c->m, efc = c->efc, ef = c->ef, nl = 0, np = c->nprobe, pq = 0;
  if (store_attr_int(root, "hnsw_M", &m) < 0 || store_attr_int(root, "hnsw_ef_construction", &efc) < 0 ||
      store_attr_int(root, "ef_search", &ef) < 0 || store_attr_int(root, "ivf_nlist", &nl) < 0 ||
      store_attr_int(root, "ivf_nprobe", &np) < 0 || store_attr_int(root, "ivf_pq_m", &pq) < 0 || m < 2 ||
      m > 512 || efc < 1 || efc > (1 << 20) || ef < 1 || ef > MAX_EF || nl < 0 || nl > (1 << 24) ||
      np < 1 || np > (1 << 24) || pq < 0 || pq > 65536) {
    snprintf(err, errlen, "bad hnsw_M, hnsw_ef_construction, ef_search, ivf_nlist, ivf_nprobe or "
             "ivf_pq_m attribute");
    return STORE_ECORRUPT;
  }
  c->m = (int)m;
  c->efc = (int)efc;
  c->ef = (int)ef;
  c->nlist = (uint32_t)nl;
  c->nprobe = (int)np;
  c->pq_m = (int)pq;
  return STORE_OK;
}

int sindex_cfg_write(h5w *w, h5w_obj *root, const sindex_cfg *c) {
  const char *kind = store_index_name(c->kind);
  int64_t v[6] = {c->m, c->efc, c->ef, c->nlist, c->nprobe, c->pq_m};
  static const char *const name[6] = {"hnsw_M", "hnsw_ef_construction", "ef_search",
                                      "ivf_nlist", "ivf_nprobe", "ivf_pq_m"};
  const char *qz = c->q8 ? "int8" : "none";
  uint8_t slot[16] = {0}, qslot[16] = {0}; /* variable-length strings, as the other attributes */
  memcpy(slot, &kind, sizeof kind);
  memcpy(qslot, &qz, sizeof qz);
  int hr = h5w_attr(w, root, "index", h5_type_new_string(0, 1), 0, NULL, slot);
  if (hr == H5_OK) hr = h5w_attr(w, root, "quantize", h5_type_new_string(0, 1), 0, NULL, qslot);
  for (int i = 0; i < 6 && hr == H5_OK; i++)
    hr = h5w_attr(w, root, name[i], h5_type_new_int(8, 1), 0, NULL, &v[i]);
  return hr;
}

/* ---- loading ----------------------------------------------------------- */

/* Row i's int8 copy for the graph's first pass (NULL: scored exactly). */
static const int8_t *q8_fn(void *ctx, uint32_t i, float *scale) {
  const sindex *x = ctx;
  return store_q8_row(x->s, i, scale);
}

/* Row i where it lies: the writer's copy, or the mapped file (NULL: none). */
static const void *row_at(const sindex *x, uint32_t i) {
  if (i < x->nrowc) return x->rowc + (size_t)i * x->rowbytes;
  uint64_t one = 1;
  return store_emb_block(x->s, i, &one);
}

/* Row i for the graph: NULL when it has no vector (never a neighbour). */
static const void *row_fn(void *ctx, uint32_t i) {
  const sindex *x = ctx;
  const void *p = row_at(x, i);
  /* whether it has a vector, known without reading it: here the miss would
  ** not overlap the others' (hnsw.c asks for a list's rows, then prefetches
  ** them) */
  if (p && i < x->nnovec) return (x->novec[i / 8] >> (i % 8)) & 1 ? NULL : p;
  /* a row whose int8 copy has a scale has a vector (a missing one encodes
  ** as scale 0) */
  if (p && i < x->q8n && x->q8s[i] != 0) return p;
  return p && !ann_row_missing(x->elem, p) ? p : NULL;
}

static int no_graph(sindex *x, const char *why) {
  snprintf(x->note, sizeof x->note, "%s", why);
  return STORE_OK;
}

/* No graph, no lists (what a load made of them freed). */
static void drop_index(sindex *x) {
  hnsw_free(x->g);
  ivf_free(x->v);
  x->g = NULL;
  x->v = NULL;
  free(x->copy);
  x->copy = NULL;
}

/* The last saved image into x->g or x->v, or a note saying why there is none. */
static int load_saved(sindex *x, h5_file *f, uint64_t nbase) {
  simage im;
  const char *why0;
  int lr = simage_load(f, store_index_name(x->cfg.kind), &im, &why0);
  if (lr == STORE_ENOMEM) return lr;
  if (lr != STORE_OK) return no_graph(x, why0);
  const int64_t *last = im.row;
  uint64_t len = im.len, rows = (uint64_t)last[2];
  if (rows > nbase || rows > UINT32_MAX) {
    free(im.copy);
    return no_graph(x, "the last save covers more rows than the store has");
  }
  const void *img = im.p;
  x->copy = im.copy;
  x->misaligned = ((uintptr_t)img & 3) != 0;
  int hr, ok;
  const char *why;
  if (x->cfg.kind == STORE_INDEX_HNSW) {
    hr = hnsw_load(img, len, store_dim(x->s), x->metric, x->elem, row_fn, x, &x->g);
    ok = hr == ANN_OK && hnsw_count(x->g) == rows;
    why = hr != ANN_OK ? hnsw_errmsg(x->g) : "wrong row count";
  } else {
    hr = ivf_load(img, len, store_dim(x->s), x->metric, x->elem, row_fn, x, &x->v);
    ok = hr == ANN_OK && ivf_count(x->v) == rows && ivf_nlist(x->v) > 0;
    why = hr != ANN_OK ? ivf_errmsg(x->v) : "wrong row count";
  }
  if (hr == ANN_ENOMEM) return hr;
  if (!ok) {
    snprintf(x->note, sizeof x->note, "the saved index is damaged (%s); searches are exact until "
             "the next checkpoint saves a new one", why);
    drop_index(x);
    return STORE_OK;
  }
  if (x->g && x->cfg.q8) hnsw_set_q8(x->g, q8_fn, x);
  x->rows = rows;
  x->saved = rows;
  x->trained = (uint64_t)last[3];
  return STORE_OK;
}

int sindex_load(store *s, h5_file *f, const sindex_cfg *c, uint64_t nbase, sindex **out) {
  *out = NULL;
  sindex *x = calloc(1, sizeof *x);
  if (!x) return STORE_ENOMEM;
  x->cfg = *c;
  x->s = s;
  x->elem = elem_of(s);
  x->metric = metric_of(s);
  int rc = STORE_OK;
  if (c->kind != STORE_INDEX_FLAT && f) { /* loaded at first use */
    x->pending = f;
    x->pending_rows = nbase;
  } else if (c->kind != STORE_INDEX_FLAT) {
    rc = load_saved(x, f, nbase);
  }
  if (rc) {
    sindex_free(x);
    return rc;
  }
  *out = x;
  return STORE_OK;
}

/* The saved index loaded, the first time it is needed (out of memory: not
** yet; the searches are exact meanwhile, and the next use tries again). */
static void sindex_ready(sindex *x) {
  if (!x || !x->pending) return;
  if (load_saved(x, x->pending, x->pending_rows) == STORE_ENOMEM) {
    drop_index(x);
    return;
  }
  x->pending = NULL;
}

void sindex_free(sindex *x) {
  if (!x) return;
  drop_index(x);
  free(x->q8c);
  free(x->q8s);
  free(x->novec);
  free(x->rowc);
  free(x);
}

uint64_t sindex_rows(sindex *x) {
  sindex_ready(x);
  return x && (x->g || x->v) ? x->rows : 0;
}
/* The rows the loaded index's last image covers (0: none loaded). */
static uint64_t loaded_saved(const sindex *x) { return x && (x->g || x->v) ? x->saved : 0; }
uint64_t sindex_saved_rows(sindex *x) {
  sindex_ready(x);
  return loaded_saved(x);
}
const char *sindex_note(sindex *x) {
  sindex_ready(x);
  return x ? x->note : "";
}
int sindex_in_place(sindex *x) {
  sindex_ready(x);
  return x && ((x->g && !hnsw_in_memory(x->g)) || x->v) && !x->copy && !x->misaligned;
}
uint32_t sindex_nlist(sindex *x) {
  sindex_ready(x);
  return x && x->v ? ivf_nlist(x->v) : 0;
}

/* Before the first search of a loaded graph: the int8 rows it covers copied
** into one array (on 64-byte boundaries: a 384-byte row spans 6 cache
** lines, not 7), so the walk reads each row with no call and no chunk
** lookup (hnsw_set_q8_rows).  Up to WARM_MAX bytes of rows; a larger store,
** or one short of memory, keeps reading them from the file.  A graph that
** grew since its copy was made (a writer's, at each checkpoint) will grow
** again: its new copy gets a quarter more room, and the rows of the next
** growths are appended to it, not copied again with all the others. */
#define WARM_MAX ((uint64_t)1 << 30)
static void sindex_warm(sindex *x) {
  if (x->warmed || !x->g) return;
  x->warmed = 1;
  uint64_t n = x->rows, had = x->q8n;
  size_t dim = (size_t)store_dim(x->s);
  if (!x->cfg.q8 || !n || n <= had || n * (dim + 4) > WARM_MAX) return;
  int8_t *c = x->q8c;
  float *sc = x->q8s;
  uint64_t cap = x->q8cap;
  if (n > cap) {
    uint64_t most = WARM_MAX / (dim + 4);
    cap = had ? n + n / 4 : n;
    if (cap > most) cap = most;
    void *nc = NULL;
    if (posix_memalign(&nc, 64, cap * dim)) nc = NULL;
    float *ns = malloc(cap * sizeof *ns);
    if (!nc || !ns) {
      free(nc);
      free(ns);
      return;
    }
    if (had) { /* (the rows of the copy made before the graph grew) */
      memcpy(nc, c, had * dim);
      memcpy(ns, sc, had * sizeof *ns);
    }
    c = nc;
    sc = ns;
  }
  uint64_t i = had;
  for (; i < n; i++) {
    const int8_t *r = store_q8_row(x->s, (uint32_t)i, &sc[i]);
    if (!r) break; /* (a row without: keep the callback) */
    memcpy(c + i * dim, r, dim);
  }
  /* (rows past q8n in the array the graph reads are not read) */
  if (i == n && hnsw_set_q8_rows(x->g, c, dim, sc, (uint32_t)n) == ANN_OK) {
    if (c != x->q8c) {
      free(x->q8c);
      free(x->q8s);
      x->q8c = c;
      x->q8s = sc;
      x->q8cap = cap;
    }
    x->q8n = n;
    return;
  }
  if (c != x->q8c) {
    free(c);
    free(sc);
  }
}

/* ---- saving ------------------------------------------------------------ */

int sindex_wants_save(sindex *x, uint64_t nbase, int force) {
  if (!x || x->cfg.kind == STORE_INDEX_FLAT) return 0;
  /* the saved image's rows, read from its row in the file when it is not
  ** loaded yet: loading checks the whole graph (seconds at 10M), which a
  ** checkpoint saving nothing need not wait for (a damaged image reads
  ** as none once loaded: a new one is then due) */
  uint64_t have = loaded_saved(x);
  int64_t row[4];
  const char *why;
  if (x->pending)
    have = simage_last(x->pending, store_index_name(x->cfg.kind), row, &why) == STORE_OK && row[2] >= 0 &&
           (uint64_t)row[2] <= x->pending_rows ? (uint64_t)row[2] : 0;
  if (nbase <= have) return 0;
  return force || (nbase - have >= SAVE_MIN_ROWS && nbase - have >= have / SAVE_TAIL_SHARE);
}

/* An index's failure as the store's: the message into err, the code as it
** is (ANN_EINVAL, ANN_ENOMEM: one error space). */
static int ann_fail(char *err, size_t errlen, const char *what, const char *msg, int hr) {
  snprintf(err, errlen, "%s: %s", what, msg);
  return hr;
}

/* Before a build: the rows below n in memory, when they take at most a
** third of the machine's: the build reads rows all over the column, and
** from the mapped file each read was a TLB miss (a page walk, dear on a
** virtual machine) besides a cache miss; the copy is read from the file in
** a few calls, may be backed by huge pages, and is kept for the writer's
** next builds, which read only the rows added since.  (Out of memory, or
** too large: the file's rows, as before.) */
static void build_rows(sindex *x, uint64_t n) {
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  uint64_t mem = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
  x->rowbytes = (size_t)store_dim(x->s) * (x->elem == ANN_F16 ? 2 : 4);
  uint64_t most = mem / 3 / x->rowbytes;
  if (n <= x->nrowc) return;
  if (n > most || store_emb_read(x->s, &x->rowc, &x->caprowc, most, x->nrowc, n) != STORE_OK) {
    free(x->rowc);
    x->rowc = NULL;
    x->nrowc = x->caprowc = 0;
    return;
  }
  x->nrowc = n;
}

/* Before a build: which of the rows below n have no vector, a bit each
** (the base rows do not change while x lives), so that row_fn need not
** read a candidate's row to know: a build reads the rows of every list it
** scores, and without the bits each read is a cache miss of its own that
** the walk's prefetch cannot overlap.  A row whose int8 copy has a scale
** has a vector; the others' rows are read, in order.  Out of memory:
** row_fn reads the rows. */
static void vec_bits(sindex *x, uint64_t n) {
  if (n <= x->nnovec) return;
  uint8_t *b = realloc(x->novec, (n + 7) / 8);
  if (!b) return;
  x->novec = b;
  for (uint64_t i = x->nnovec; i < n; i++) {
    float sc = 0;
    int has = x->cfg.q8 && i >= x->nrowc && store_q8_row(x->s, (uint32_t)i, &sc) && sc != 0;
    if (!has) {
      const void *p = row_at(x, (uint32_t)i);
      has = p && !ann_row_missing(x->elem, p);
    }
    if (has) b[i / 8] &= (uint8_t)~(1u << (i % 8));
    else b[i / 8] |= (uint8_t)(1u << (i % 8));
  }
  x->nnovec = n;
}

/* The rows of the graph below nbase added to it, on threads threads (an
** ANN_* code). */
static int graph_grow(sindex *x, uint64_t nbase, int threads) {
  hnsw_set_threads(x->g, threads);
  build_rows(x, nbase);
  vec_bits(x, nbase);
  return hnsw_build(x->g, (uint32_t)nbase);
}

/* The graph brought up to nbase rows, as an image (malloc'd). */
static int save_hnsw(sindex *x, uint64_t nbase, int threads, uint8_t **img, size_t *len, char *err,
                     size_t errlen) {
  int hr;
  if (!x->g) {
    hnsw_params p = {x->cfg.m, x->cfg.efc, 0, threads, 0};
    hr = hnsw_new(store_dim(x->s), x->metric, x->elem, &p, row_fn, x, &x->g);
    if (hr != ANN_OK) {
      int rc = ann_fail(err, errlen, "graph", hnsw_errmsg(x->g), hr);
      hnsw_free(x->g);
      x->g = NULL;
      return rc;
    }
  }
  hr = graph_grow(x, nbase, threads);
  if (hr == ANN_OK) hr = hnsw_save(x->g, img, len);
  if (hr != ANN_OK) return ann_fail(err, errlen, "graph", hnsw_errmsg(x->g), hr);
  return STORE_OK;
}

/* The IVF lists brought up to nbase rows (trained anew on all of them when
** there are none yet or the store has grown RETRAIN_GROWTH-fold since), as
** an image (malloc'd). */
static int save_ivf(sindex *x, uint64_t nbase, int threads, uint8_t **img, size_t *len, char *err,
                    size_t errlen) {
  int hr;
  if (!x->v || nbase >= RETRAIN_GROWTH * x->trained) {
    ivf_free(x->v);
    x->v = NULL;
    ivf_params p;
    memset(&p, 0, sizeof p);
    p.nlist = x->cfg.nlist;
    p.pq_m = x->cfg.pq_m;
    p.threads = threads;
    hr = ivf_new(store_dim(x->s), x->metric, x->elem, &p, row_fn, x, &x->v);
    if (hr == ANN_OK) hr = ivf_train(x->v, (uint32_t)nbase);
    if (hr != ANN_OK) {
      int rc = ann_fail(err, errlen, "ivf", ivf_errmsg(x->v), hr);
      ivf_free(x->v);
      x->v = NULL;
      return rc;
    }
    x->trained = nbase;
  }
  hr = ivf_build(x->v, (uint32_t)nbase);
  if (hr == ANN_OK) hr = ivf_save(x->v, img, len);
  if (hr != ANN_OK) return ann_fail(err, errlen, "ivf", ivf_errmsg(x->v), hr);
  return STORE_OK;
}

int sindex_save(sindex *x, h5w *w, uint64_t nbase, int threads, char *err, size_t errlen) {
  sindex_ready(x);
  if (x->pending) {
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  if (nbase > UINT32_MAX) {
    snprintf(err, errlen, "the index holds at most 2^32 - 1 rows");
    return STORE_EINVAL;
  }
  uint8_t *img = NULL;
  size_t len = 0;
  int rc = x->cfg.kind == STORE_INDEX_HNSW ? save_hnsw(x, nbase, threads, &img, &len, err, errlen)
                                           : save_ivf(x, nbase, threads, &img, &len, err, errlen);
  if (rc) {
    drop_index(x); /* (a graph built part of the way is not kept: the file's is read again) */
    return rc;
  }
  x->rows = nbase;
  x->note[0] = 0; /* (a graph now: "no index saved yet" no longer holds) */
  rc = simage_append(w, store_index_name(x->cfg.kind), img, len, (int64_t)nbase,
                     (int64_t)(x->cfg.kind == STORE_INDEX_IVF ? x->trained : 0), err, errlen);
  free(img);
  return rc;
}

void sindex_saved_at(sindex *x, uint64_t nbase) {
  if (x && (x->g || x->v)) x->saved = nbase;
}

void sindex_extend(sindex *x, uint64_t nbase, int threads) {
  /* (a graph read in place is left to the next save: growing it would
  ** check and copy it whole, then insert every row past it) */
  if (!sindex_carries(x) || nbase <= x->rows || nbase > UINT32_MAX) return;
  int hr = graph_grow(x, nbase, threads);
  if (hr == ANN_OK) {
    x->rows = nbase;
    x->warmed = 0; /* (the next search copies the new rows' int8 copies too) */
    return;
  }
  /* (out of memory: some rows may be linked, and the graph would answer
  ** rows the exact scan of those past x->rows answers too) */
  snprintf(x->note, sizeof x->note, "the graph could not be extended (%s); searches are exact until "
           "the store is read again", hnsw_errmsg(x->g));
  drop_index(x);
}

int sindex_carries(sindex *x) {
  return x && x->cfg.kind == STORE_INDEX_HNSW && !x->pending && x->g && hnsw_in_memory(x->g);
}

/* ---- search ------------------------------------------------------------ */

typedef struct src_ctx {
  store *s;
  uint64_t base; /* position of row 0 */
} src_ctx;

static const void *block_fn(void *ctx, uint64_t pos, uint64_t *count) {
  const src_ctx *c = ctx;
  return store_emb_block(c->s, c->base + pos, count);
}

typedef struct allow_ctx {
  const store *s;
  const uint8_t *bits;                 /* or NULL: */
  int (*fn)(void *ctx, uint64_t pos);  /* or NULL: every live row */
  void *fctx;
  uint64_t base;
} allow_ctx;

static int allow_fn(void *ctx, uint64_t pos) {
  const allow_ctx *a = ctx;
  pos += a->base;
  if (a->bits) return (a->bits[pos / 8] >> (pos % 8)) & 1;
  return store_pos_live(a->s, pos) && (!a->fn || a->fn(a->fctx, pos));
}

static int graph_allow(void *ctx, uint32_t i) { return allow_fn(ctx, i); }

/* Exact: the rows [from, to) that a accepts, positions made absolute.
** STORE_OK or STORE_ENOMEM (ann_flat_search's code: one error space). */
static int scan(store *s, const float *q, uint64_t k, const allow_ctx *a, uint64_t from,
                uint64_t to, ann_res *out, uint64_t *nout) {
  *nout = 0;
  if (from >= to) return STORE_OK;
  src_ctx sc = {s, from};
  allow_ctx ac = *a;
  ac.base = from;
  ann_src src = {store_dim(s), elem_of(s), metric_of(s), to - from, block_fn, &sc};
  /* (below 8192 rows starting threads costs more; a filter function runs on one) */
  int threads = to - from >= 8192 && !a->fn ? 0 : 1;
  int rc = ann_flat_search(&src, q, k, allow_fn, &ac, threads, out, nout);
  for (uint64_t i = 0; i < *nout; i++) out[i].pos += from;
  return rc;
}

/* Exact over the rows [from, to) past the graph (x->rows): the allowed
** ones listed and pruned by the sketch of the file's rows among them
** (store_sketch_tail: built on the second search that asks, as an exact
** search's is), else a plain scan.  The same answer either way
** (lib/ann/prune.h); a reader's rows past the saved graph reach an eighth
** of the rows it covers before a checkpoint saves a new one. */
static int scan_tail(store *s, const float *q, uint64_t k, const allow_ctx *a, uint64_t from,
                     uint64_t to, ann_res *out, uint64_t *nout) {
  *nout = 0;
  if (from >= to) return STORE_OK;
  src_ctx sc = {s, from};
  ann_src src = {store_dim(s), elem_of(s), metric_of(s), to - from, block_fn, &sc};
  const ann_sketch *sk = k <= (to - from) / 8 ? store_sketch_tail(s, 0, from, &src) : NULL;
  if (!sk) return scan(s, q, k, a, from, to, out, nout);
  uint64_t *pos = malloc((size_t)(to - from) * sizeof *pos), n = 0;
  if (!pos) return STORE_ENOMEM;
  allow_ctx ac = *a;
  ac.base = from;
  uint64_t p = 0;
  if (!a->bits && !a->fn) /* (every live row: the file's read as store_pos_live does, inline) */
    for (; from + p < s->nbase && from + p < to; p++)
      if (!s->base_dead[from + p]) pos[n++] = p;
  for (; p < to - from; p++)
    if (allow_fn(&ac, p)) pos[n++] = p;
  int rc = ann_flat_gather_pruned(&src, sk, q, k, pos, n, out, nout, NULL);
  free(pos);
  for (uint64_t i = 0; i < *nout; i++) out[i].pos += from;
  return rc;
}

/* Exact over a list of the rows below `to`: the allowed ones (a bitmap
** with at most nmax set), or (bits NULL) the live ones (at most nmax);
** pruned by the embedding's sketch sk when given (NULL: every one scored).
** STORE_OK or STORE_ENOMEM. */
static int gather(store *s, const float *q, uint64_t k, const uint8_t *bits, uint64_t to,
                  uint64_t nmax, const ann_sketch *sk, ann_res *out, uint64_t *nout) {
  uint64_t *pos = malloc((nmax ? nmax : 1) * sizeof *pos), n = 0;
  if (!pos) return STORE_ENOMEM;
  if (bits) {
    for (uint64_t b = 0; b < (to + 7) / 8 && n < nmax; b++)
      for (unsigned m = bits[b]; m && n < nmax; m &= m - 1) {
        uint64_t p = b * 8 + (uint64_t)__builtin_ctz(m);
        if (p < to) pos[n++] = p;
      }
  } else {
    for (uint64_t p = 0; p < to && n < nmax; p++)
      if (store_pos_live(s, p)) pos[n++] = p;
  }
  src_ctx sc = {s, 0};
  ann_src src = {store_dim(s), elem_of(s), metric_of(s), to, block_fn, &sc};
  int rc = ann_flat_gather_pruned(&src, sk, q, k, pos, n, out, nout, NULL);
  free(pos);
  return rc;
}

/* Exact over the rows below `to`: the allowed ones (a bitmap with nallow
** set), or every live one. */
static int exact_below(store *s, const float *q, uint64_t k, const uint8_t *bits, uint64_t to,
                       uint64_t nallow, ann_res *out, uint64_t *nout) {
  /* the rows the embedding's sketch cannot rule out, scored exactly */
  uint64_t nrows = bits ? nallow : store_count(s);
  src_ctx sc = {s, 0};
  ann_src src = {store_dim(s), elem_of(s), metric_of(s), to, block_fn, &sc};
  const ann_sketch *sk = nrows >= 256 && k <= nrows / 8 ? store_sketch(s, 0, &src) : NULL;
  /* (the gather reads only the listed rows, on one thread; the scan reads
  ** them all, in order, on every CPU) */
  if (sk || (bits && nallow < to / 4)) return gather(s, q, k, bits, to, nrows, sk, out, nout);
  allow_ctx a = {s, bits, NULL, NULL, 0};
  return scan(s, q, k, &a, 0, to, out, nout);
}

/* The bitmap of the live rows below npos that the filter's fn accepts
** (malloc'd; by its fn_all when it has one), their number in *n; NULL when
** out of memory.  A failing fn_all allows nothing (the filter reports its
** error through its ctx, as fn does). */
static uint8_t *materialize(const store *s, const store_filter *flt, uint64_t npos, uint64_t *n) {
  uint8_t *b = calloc(npos / 8 + 1, 1);
  *n = 0;
  if (!b) return NULL;
  if (flt->fn_all) {
    if (flt->fn_all(flt->ctx, npos, b, n) != 0) {
      memset(b, 0, npos / 8 + 1);
      *n = 0;
    }
    return b;
  }
  for (uint64_t p = 0; p < npos; p++)
    if (store_pos_live(s, p) && flt->fn(flt->ctx, p)) {
      b[p / 8] |= (uint8_t)(1u << (p % 8));
      (*n)++;
    }
  return b;
}

static uint64_t popcount_below(const uint8_t *bits, uint64_t to) {
  uint64_t n = 0, b = 0;
  for (; b + 8 <= to / 8; b += 8) {
    uint64_t w;
    memcpy(&w, bits + b, 8);
    n += (uint64_t)__builtin_popcountll(w);
  }
  for (; b < to / 8; b++) n += (uint64_t)__builtin_popcount(bits[b]);
  if (to % 8) n += (uint64_t)__builtin_popcount(bits[to / 8] & ((1u << (to % 8)) - 1));
  return n;
}

static int res_worse(const ann_res *a, const ann_res *b) {
  return a->dist > b->dist || (a->dist == b->dist && a->pos > b->pos);
}

#define SAMPLE 512 /* rows looked at to estimate what a filter function lets through */

/* About how many distances an index search computes for the k best of want
** allowed rows among live, over-fetching in proportion to what the filter
** removes: ef x 2M for the graph (an HNSW search's cost), the centroids plus the
** probed lists' rows for IVF.  Scanning the allowed rows costs want. */
static uint64_t index_cost(const sindex *x, uint64_t pool, uint64_t nprobe, uint64_t gn,
                           uint64_t want, uint64_t live) {
  double more = want < live ? (double)live / (double)(want ? want : 1) : 1.0;
  if (x->v) {
    uint64_t nlist = ivf_nlist(x->v);
    double np = (double)nprobe * more;
    if (np > (double)nlist) np = (double)nlist;
    return nlist + (uint64_t)(np * (double)(gn / nlist + 1));
  }
  double ef = (double)pool * more;
  if (ef > MAX_EF) ef = MAX_EF;
  return (uint64_t)(ef * 2.0 * x->cfg.m);
}

int store_knn(store *s, const float *q, uint64_t k, const store_filter *flt,
              const store_knn_opts *opt, ann_res *out, uint64_t *nout) {
  *nout = 0;
  uint64_t npos = store_npos(s);
  if (k == 0 || npos == 0) return STORE_OK;
  sindex *x = store_sindex(s);
  uint64_t gn = sindex_rows(x);
  if (gn > npos) gn = npos;
  const uint8_t *bits = flt ? flt->bits : NULL;
  uint64_t nallow = bits ? flt->nbits : 0;
  int (*fn)(void *, uint64_t) = flt && !bits ? flt->fn : NULL;
  void *fctx = flt ? flt->ctx : NULL;
  uint8_t *made = NULL;
  int rc = STORE_OK;
#define MATERIALIZE()                                                      \
  do {                                                                     \
    if (!(made = materialize(s, flt, npos, &nallow))) return STORE_ENOMEM; \
    bits = made;                                                           \
    fn = NULL;                                                             \
  } while (0)
  if (!gn || (opt && opt->exact)) {
    if (fn) MATERIALIZE();
    rc = exact_below(s, q, k, bits, npos, nallow, out, nout);
    free(made);
    return rc;
  }
  sindex_warm(x);
  uint64_t ef = opt && opt->ef > 0 ? (uint64_t)opt->ef : (uint64_t)x->cfg.ef;
  uint64_t pool = ef > k ? ef : k;
  uint64_t nlist = sindex_nlist(x), nprobe = 0;
  if (x->v) {
    nprobe = opt && opt->nprobe > 0 ? (uint64_t)opt->nprobe : (uint64_t)x->cfg.nprobe;
    if (nprobe > nlist) nprobe = nlist;
  }
  /* the live rows in the graph's part, and the allowed ones (counted, or
  ** estimated from a sample when a function decides) */
  uint64_t live_tail = 0, nb = s->nbase < npos ? s->nbase : npos;
  for (uint64_t p = gn; p < nb; p++) live_tail += !s->base_dead[p]; /* (store_pos_live's, inline) */
  for (uint64_t p = gn > nb ? gn : nb; p < npos; p++) live_tail += store_pos_live(s, p);
  uint64_t live_g = store_count(s) - live_tail, want_g = live_g;
  if (bits) {
    want_g = popcount_below(bits, gn);
  } else if (fn) {
    uint64_t step = gn / SAMPLE ? gn / SAMPLE : 1, seen = 0, ok = 0;
    for (uint64_t p = step / 2; p < gn; p += step)
      if (store_pos_live(s, p)) {
        seen++;
        ok += fn(fctx, p) != 0;
      }
    want_g = seen ? (uint64_t)((double)ok / (double)seen * (double)live_g) : 0;
    if (want_g <= 2 * index_cost(x, pool, nprobe, gn, want_g, live_g)) { /* perhaps few: find out */
      MATERIALIZE();
      want_g = popcount_below(bits, gn);
    }
  }
  if (bits && want_g <= index_cost(x, pool, nprobe, gn, want_g, live_g)) { /* few: scan just them */
    rc = gather(s, q, k, bits, npos, nallow, NULL, out, nout);
    free(made);
    return rc;
  }
  uint64_t kg = k < want_g ? k : want_g;
  if (want_g < live_g) { /* over-fetch in proportion to what the filter removes */
    double more = (double)live_g / (double)(want_g ? want_g : 1);
    ef = (uint64_t)((double)pool * more) + 1;
    nprobe = (uint64_t)((double)nprobe * more) + 1;
  }
  if (ef < kg) ef = kg;
  if (ef > MAX_EF) ef = MAX_EF;
  if (nprobe > nlist) nprobe = nlist;
  ann_res *g = malloc((size_t)(2 * k) * sizeof *g); /* the graph's, then the tail's */
  ann_hit *hits = kg > (uint64_t)INT32_MAX ? NULL : malloc((size_t)(kg ? kg : 1) * sizeof *hits);
  if (!g || !hits) {
    free(g);
    free(hits);
    free(made);
    return STORE_ENOMEM;
  }
  allow_ctx ac = {s, bits, fn, fctx, 0};
  /* no filter and every row the index covers alive: nothing to refuse (the
  ** graph then walks without asking, hnsw.c's search_pool) */
  int (*gallow)(void *, uint32_t) = bits || fn || live_g < gn ? graph_allow : NULL;
  int nh = !kg ? 0
           : x->g ? hnsw_search(x->g, q, (int)kg, (int)ef, gallow, &ac, hits)
                  : ivf_search(x->v, q, (int)kg, (int)nprobe, 0, gallow, &ac, hits);
  uint64_t ng = 0, nt = 0;
  if (nh < 0) {
    rc = nh; /* (ANN_EINVAL or ANN_ENOMEM, the store's codes too) */
  } else if ((uint64_t)nh < kg) { /* the graph could not reach them all: be exact */
    if (fn && !made) {
      made = materialize(s, flt, npos, &nallow);
      bits = made;
      want_g = made ? popcount_below(bits, gn) : 0;
      ac.bits = bits;
    }
    if (fn && !made) rc = STORE_ENOMEM;
    else rc = exact_below(s, q, k, bits, gn, want_g, g, &ng);
  } else {
    for (int i = 0; i < nh; i++) g[i] = (ann_res){hits[i].id, hits[i].dist};
    ng = (uint64_t)nh;
  }
  free(hits);
  if (rc == STORE_OK) rc = scan_tail(s, q, k, &ac, gn, npos, g + k, &nt);
  free(made);
  if (rc != STORE_OK) {
    free(g);
    return rc;
  }
  /* merge the two sorted lists */
  uint64_t i = 0, j = 0, n = 0;
  const ann_res *t = g + k;
  while (n < k && (i < ng || j < nt)) {
    if (j >= nt || (i < ng && !res_worse(&g[i], &t[j]))) out[n++] = g[i++];
    else out[n++] = t[j++];
  }
  *nout = n;
  free(g);
  return STORE_OK;
#undef MATERIALIZE
}
