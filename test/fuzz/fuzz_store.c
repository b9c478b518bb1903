/*
** test/fuzz/fuzz_store.c - libFuzzer target for the replay of log frames
** into a store (lib/store/store_log.c store_replay_frame: records put,
** deleted and changed in place, with their declared columns' values;
** lib/store/store_graph.c gstore_replay: the graph's ops), and for a
** store's .h5 file damaged (store_open on it: the 'columns' attribute, the
** /memories/columns datasets and everything else the store reads).
**
** The input:
**   byte 0     settings: bit 0 which store (0: dim 4 f32 cosine, HNSW;
**              1: dim 3 f16 L2, IVF), bit 2 the store with declared
**              columns instead (bit 0 then ignored); bit 1 open for
**              writing (then a change is committed, a checkpoint made,
**              and the store must open again holding what it held), else
**              readonly; bit 3 damage the store's .h5 file (below) instead
**              of adding log frames
**   then       frames: payloads, each a uint16 length (little-endian) and
**              as many bytes (fewer at the end of the input), wrapped into
**              frames that validate (the right magic, seqs and checksum
**              chain behind the store's own log header), so that what the
**              store does with their contents is what is tested;
**   or (bit 3) patches to the .h5 file: each a byte choosing a region of
**              the file (below), a uint24 offset in it (modulo its
**              length), a byte n and n bytes written there (fewer at the
**              end of the input or of the file); the log is the header
**              alone.  The regions, found in the template once: the
**              'columns' attribute's text and every place its name is
**              written, each /memories/columns dataset's object header
**              and chunks, then every HDF5 structure (by its signature:
**              object headers, B-trees, heaps, ...), then the whole file.
** Old inputs (bits 2 and 3 clear) keep their meaning.
** The stores are made once (Initialize): 300 records with text, some of
** each deleted, checkpointed; the first two with a saved vector index and
** text index, entities, relations and mentions; the third with declared
** columns of every kind (integer and text partition keys, text, float,
** boolean, an auxiliary blob, a text primary key, int8, bit, float16 and
** float32 vectors) holding values and NULLs.  Their files are copied into
** place before each input.  A store that opens is read whole: every
** record, an exact and an index search, a BM25 search, the graph's
** adjacency; every declared column of every record (store_get_col,
** store_get_cols), each filterable column under conditions of every
** operator (store_col_filter against store_col_test row by row, and the
** operators against one another), the primary key's lookup, and a search
** of each vector column (store_knn_col against distances computed here).
** A damaged file may fail to open (STORE_ECORRUPT and the like, never
** STORE_ENOMEM or a crash) or fail a read with STORE_ECORRUPT.
** The third store is signed (issue 25: its /sign group, leaves and
** signatures are damaged like the rest): after every input store_verify
** reads it, and must find an undamaged file valid, whatever frames were
** replayed and checkpointed into it; a damaged one gets a verdict or
** STORE_ECORRUPT, never a crash.
** Seeds (H5MEM_FUZZ_SEEDS): the payloads of the frames the store itself
** writes for puts (with declared columns), deletes, changes in place and
** graph changes; and single-byte patches of each store's regions.
*/
#include "config.h"

#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fuzz.h"
#include "h5/h5.h"
#include "sign/sign.h"
#include "store/store.h"
#include "store/wal.h"
#include "util/strbuf.h"
#include "util/utf8.h"

#define NREC 300
#define NSTORES 3

typedef struct region {
  size_t off, len;
} region;

typedef struct tmpl {
  uint8_t *h5, *wal; /* the files as made */
  size_t h5len, wallen;
  region *reg; /* the .h5 file's regions (bit 3 of the settings) */
  size_t nreg, ncolreg;
} tmpl;

static char dir[512], path[600], walpath[640], keypath[600];
static tmpl stores[NSTORES];
static int h5_dirty = -1; /* the store whose file is in place (-1: none, or changed) */

static uint8_t *slurp(const char *p, size_t *n) {
  int fd = open(p, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) abort();
  uint8_t *b = malloc((size_t)st.st_size + 1);
  if (!b || read(fd, b, (size_t)st.st_size) != st.st_size) abort();
  close(fd);
  *n = (size_t)st.st_size;
  return b;
}

static void spit(const char *p, const void *b, size_t n) {
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || (n && write(fd, b, n) != (ssize_t)n)) abort();
  close(fd);
}

static void fail_msg(const char *what, int rc, const char *msg) {
  fprintf(stderr, "%s: %d %s\n", what, rc, msg);
}

/* ---- the declared columns (store 2) ------------------------------------------ */

static const char *const col_decls[] = {
    "user_id integer partition key", "category text", "price float", "flag boolean",
    "+payload blob", "key text primary key", "img int8[4]", "sig bit[16]",
    "f16v float16[4] distance_metric=cosine", "tenant text partition key", "fv float[3]",
    "fl1 float[2] distance_metric=l1"};
enum { D_USER, D_CAT, D_PRICE, D_FLAG, D_PAYLOAD, D_KEY, D_IMG, D_SIG, D_F16V, D_TENANT, D_FV, D_FL1, NDECL };
static store_coldef cdefs[NDECL];

typedef struct colbuf { /* the bytes of one record's values */
  char cat[32], key[32], tenant[8];
  uint8_t payload[8], img[4], sig[2];
  uint16_t f16v[4];
  float fv[3], fl1[2];
} colbuf;

static const char *const words[] = {"alpha", "beta",  "gamma", "delta", "été",
                                    "naïve", "graph", "memory", "fox",  "dog"};

/* float16's bits of a small integer (-4 .. 4: exact) */
static uint16_t f16_int(int k) {
  static const uint16_t pos[] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400};
  return k < 0 ? (uint16_t)(0x8000 | pos[-k]) : pos[k];
}

/* Record id's values (NULL for some of each column). */
static void col_vals(int64_t id, store_val *v, colbuf *b) {
  memset(v, 0, NDECL * sizeof *v);
  if (id % 11) {
    v[D_USER].type = STORE_T_INTEGER;
    v[D_USER].i = id == 50 ? INT64_MAX : id == 51 ? INT64_MIN + 1 : id % 7 - 3;
  }
  if (id % 9) {
    snprintf(b->cat, sizeof b->cat, "%s", id % 23 == 0 ? "" : words[id % 10]);
    v[D_CAT] = (store_val){STORE_T_TEXT, 0, 0, b->cat, strlen(b->cat)};
  }
  if (id % 8) v[D_PRICE] = (store_val){STORE_T_FLOAT, 0, (double)id * 0.25 - 20.0, NULL, 0};
  if (id % 3) v[D_FLAG] = (store_val){STORE_T_BOOLEAN, id % 2, 0, NULL, 0};
  if (id % 6) {
    for (int j = 0; j < 8; j++) b->payload[j] = j == 1 ? 0 : (uint8_t)(id + j);
    v[D_PAYLOAD] = (store_val){STORE_T_BLOB, 0, 0, b->payload, (size_t)(id % 5)};
  }
  if (id % 10) {
    snprintf(b->key, sizeof b->key, "k%lld", (long long)id);
    v[D_KEY] = (store_val){STORE_T_TEXT, 0, 0, b->key, strlen(b->key)};
  }
  if (id % 4) {
    for (int j = 0; j < 4; j++) b->img[j] = (uint8_t)((id * (j + 1) * 37) % 256);
    v[D_IMG] = (store_val){STORE_T_VECTOR, 0, 0, b->img, 4};
  }
  if (id % 5) {
    b->sig[0] = (uint8_t)(id * 13);
    b->sig[1] = (uint8_t)(id * 7);
    v[D_SIG] = (store_val){STORE_T_VECTOR, 0, 0, b->sig, 2};
  }
  if (id % 6 != 1) {
    for (int j = 0; j < 4; j++) b->f16v[j] = id == 60 ? 0 : f16_int((int)((id * (j + 3)) % 9) - 4);
    v[D_F16V] = (store_val){STORE_T_VECTOR, 0, 0, b->f16v, 8};
  }
  if (id % 13) {
    snprintf(b->tenant, sizeof b->tenant, "t%d", (int)(id % 3));
    v[D_TENANT] = (store_val){STORE_T_TEXT, 0, 0, b->tenant, strlen(b->tenant)};
  }
  if (id % 7 != 2) {
    b->fv[0] = (float)(id % 5 - 2) * 0.5f;
    b->fv[1] = (float)(id % 3) * 1.5f;
    b->fv[2] = -(float)(id % 4);
    v[D_FV] = (store_val){STORE_T_VECTOR, 0, 0, b->fv, 12};
  }
  if (id % 5 != 3) {
    b->fl1[0] = (float)(id % 6) - 2.5f;
    b->fl1[1] = (float)(id % 4) * 0.75f;
    v[D_FL1] = (store_val){STORE_T_VECTOR, 0, 0, b->fl1, 8};
  }
}

/* ---- the stores ------------------------------------------------------------- */

static void emb_of(int dim, int64_t id, float *e) {
  for (int j = 0; j < dim; j++) e[j] = (float)(((uint64_t)id * 7 + (uint64_t)j * 3) % 11) / 10.0f - 0.5f;
}

static void add_region(tmpl *t, size_t off, size_t len) {
  if (off >= t->h5len || !len) return;
  if (len > t->h5len - off) len = t->h5len - off;
  region *r = realloc(t->reg, (t->nreg + 1) * sizeof *r);
  if (!r) abort();
  t->reg = r;
  t->reg[t->nreg++] = (region){off, len};
}

static int chunk_region(void *ctx, const uint64_t *offset, uint64_t addr, uint64_t size, uint32_t mask) {
  (void)offset;
  (void)mask;
  add_region(ctx, (size_t)addr, (size_t)size);
  return H5_OK;
}

static void *find_bytes(const uint8_t *p, size_t n, const void *w, size_t wn, size_t from) {
  return from < n ? memmem(p + from, n - from, w, wn) : NULL;
}

/* The regions of store which's .h5 file: what belongs to the declared
** columns first (ncolreg of them), then every structure, then the file. */
static void find_regions(int which) {
  tmpl *t = &stores[which];
  const uint8_t *f = t->h5;
  size_t n = t->h5len;
  if (which == 2) {
    /* the attribute's text (in a global heap) and its name */
    char all[2048];
    size_t len = 0;
    for (int i = 0; i < NDECL; i++) {
      char b[160];
      store_coldef_format(&cdefs[i], b, sizeof b);
      len += (size_t)snprintf(all + len, sizeof all - len, "%s%s", i ? ", " : "", b);
    }
    const uint8_t *at = find_bytes(f, n, all, len, 0);
    FUZZ_ASSERT(at);
    add_region(t, (size_t)(at - f) >= 16 ? (size_t)(at - f) - 16 : 0, len + 16);
    for (const uint8_t *q = f; (q = find_bytes(f, n, "columns", 7, (size_t)(q - f))); q++)
      add_region(t, (size_t)(q - f) >= 16 ? (size_t)(q - f) - 16 : 0, 48);
    /* each dataset's header and chunks */
    h5_file *hf;
    h5_obj *o;
    char err[256];
    FUZZ_ASSERT(h5_open(path, &hf, err, sizeof err) == H5_OK);
    FUZZ_ASSERT(h5_obj_open_path(hf, "/memories/columns", &o) == H5_OK);
    add_region(t, (size_t)h5_obj_addr(o), 512);
    for (int i = 0; i < NDECL; i++)
      for (int m = 0; m < 1 + (cdefs[i].type == STORE_T_VECTOR); m++) {
        char p[160];
        snprintf(p, sizeof p, "/memories/columns/%.63s%s", cdefs[i].name, m ? ".missing" : "");
        FUZZ_ASSERT(h5_obj_open_path(hf, p, &o) == H5_OK);
        add_region(t, (size_t)h5_obj_addr(o), 512);
        FUZZ_ASSERT(h5_dset_chunk_iter(o, chunk_region, t) == H5_OK);
      }
    /* the vector columns' graphs */
    for (int i = 0; i < NDECL; i++)
      for (int m = 0; m < 2; m++) {
        char p[160];
        snprintf(p, sizeof p, "/index/col_%.63s_%s", cdefs[i].name, m ? "saves" : "image");
        if (h5_obj_open_path(hf, p, &o) != H5_OK) continue;
        add_region(t, (size_t)h5_obj_addr(o), 512);
        const void *data;
        size_t dlen;
        if (h5_dset_chunk_iter(o, chunk_region, t) != H5_OK && h5_dset_view(o, &data, &dlen) == H5_OK)
          add_region(t, (size_t)((const uint8_t *)data - (const uint8_t *)h5_file_span(hf, 0, 1)), dlen);
      }
    h5_close(hf);
  }
  t->ncolreg = t->nreg;
  /* every structure, up to the next one (at most 4 KiB) */
  static const char *const sigs[] = {"OHDR", "OCHK", "GCOL", "TREE", "BTHD", "BTIN", "BTLF",
                                     "FRHP", "FHDB", "FHIB", "HEAP", "SNOD", "FSHD", "FSSE"};
  size_t *at = NULL, nat = 0;
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++)
    for (const uint8_t *q = f; (q = find_bytes(f, n, sigs[k], 4, (size_t)(q - f))); q++) {
      size_t *na = realloc(at, (nat + 1) * sizeof *na);
      if (!na) abort();
      at = na;
      at[nat++] = (size_t)(q - f);
    }
  for (size_t i = 0; i < nat; i++) { /* (sorted: a few hundred) */
    for (size_t j = i + 1; j < nat; j++)
      if (at[j] < at[i]) {
        size_t x = at[i];
        at[i] = at[j];
        at[j] = x;
      }
  }
  add_region(t, 0, 256); /* the superblock */
  for (size_t i = 0; i < nat; i++) {
    size_t end = i + 1 < nat ? at[i + 1] : n;
    add_region(t, at[i], end - at[i] < 4096 ? end - at[i] : 4096);
  }
  free(at);
  add_region(t, 0, n);
}

static void make_store(int which) {
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = which == 1 ? 3 : which == 2 ? 2 : 4;
  o.metric = which == 0 ? STORE_COSINE : STORE_L2;
  o.storage = which == 1 ? STORE_F16 : STORE_F32;
  o.sync = STORE_SYNC_OFF;
  o.index = which == 1 ? STORE_INDEX_IVF : STORE_INDEX_HNSW; /* (store 2: the vector columns' graphs too) */
  o.hnsw_m = 4;
  o.hnsw_efc = 16;
  o.ivf_nlist = 4;
  o.tokenize = which == 1 ? "porter unicode61" : NULL;
  if (which == 2) {
    o.cols = cdefs;
    o.ncols = NDECL;
    o.chunk_rows = 64; /* (rows over several chunks) */
    o.signing_key = keypath;
  }
  unlink(path);
  unlink(walpath);
  store *s;
  char err[512];
  int rc = store_open(path, &o, 0, &s, err, sizeof err);
  if (rc != STORE_OK) {
    fail_msg("creating the store", rc, err);
    abort();
  }
  FUZZ_ASSERT(store_begin(s) == STORE_OK);
  for (int64_t id = 1; id <= NREC; id++) {
    char text[128];
    snprintf(text, sizeof text, "%s %s %s", words[id % 10], words[(id * 3) % 10],
             words[(id * 7) % 10]);
    float e[4];
    emb_of(o.dim, id, e);
    store_val cv[NDECL];
    colbuf cb;
    store_rec r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.text = id % 13 == 0 ? NULL : text;
    r.text_len = strlen(text);
    r.session = "s1";
    r.session_len = 2;
    r.emb = id % 17 == 0 ? NULL : e;
    r.ts = id * 1000;
    r.importance = 0.5;
    r.last_access = STORE_NULL_TIME;
    if (which == 2) {
      col_vals(id, cv, &cb);
      r.cols = id == 77 ? NULL : cv; /* (one record without any) */
    }
    rc = store_put(s, &r);
    if (rc != STORE_OK) fail_msg("put", rc, store_errmsg(s));
    FUZZ_ASSERT(rc == STORE_OK);
  }
  for (int64_t id = 1; id <= 20 && which < 2; id++) {
    store_grec g;
    memset(&g, 0, sizeof g);
    g.id = id;
    g.s[0] = words[id % 10];
    g.n[0] = strlen(g.s[0]);
    g.s[1] = "thing";
    g.n[1] = 5;
    FUZZ_ASSERT(store_g_put(s, STORE_G_ENTITY, &g) == STORE_OK);
    memset(&g, 0, sizeof g);
    g.id = id;
    g.a = id;
    g.b = id % 20 + 1;
    g.s[1] = id % 2 ? "knows" : "likes";
    g.n[1] = 5;
    g.weight = 1.0;
    FUZZ_ASSERT(store_g_put(s, STORE_G_RELATION, &g) == STORE_OK);
    memset(&g, 0, sizeof g);
    g.id = id;
    g.a = id;
    g.b = id;
    FUZZ_ASSERT(store_g_put(s, STORE_G_MENTION, &g) == STORE_OK);
  }
  FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
  FUZZ_ASSERT(store_checkpoint(s) == STORE_OK);
  FUZZ_ASSERT(store_begin(s) == STORE_OK);
  if (which < 2) {
    FUZZ_ASSERT(store_delete(s, 5) == STORE_OK && store_g_delete(s, STORE_G_ENTITY, 3) == STORE_OK &&
                store_g_delete(s, STORE_G_RELATION, 4) == STORE_OK);
  } else {
    /* deletes (one of them freeing key k17, taken again by a new record) */
    static const int64_t del[] = {5, 17, 64, 65, 128, 200};
    for (size_t i = 0; i < sizeof del / sizeof del[0]; i++) FUZZ_ASSERT(store_delete(s, del[i]) == STORE_OK);
    store_val cv[NDECL];
    colbuf cb;
    col_vals(17, cv, &cb);
    store_rec r;
    memset(&r, 0, sizeof r);
    r.id = NREC + 1;
    r.cols = cv;
    r.last_access = STORE_NULL_TIME;
    FUZZ_ASSERT(store_put(s, &r) == STORE_OK);
  }
  FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
  FUZZ_ASSERT(store_checkpoint(s) == STORE_OK);
  FUZZ_ASSERT(store_close(s) == STORE_OK);
  tmpl *t = &stores[which];
  t->h5 = slurp(path, &t->h5len);
  t->wal = slurp(walpath, &t->wallen);
  FUZZ_ASSERT(t->wallen == WAL_HEADER_SIZE); /* (checkpointed: a header only) */
  find_regions(which);
}

/* The files of store `which` into place, the log with the frames of in. */
static void place(int which, fuzz_in *in) {
  tmpl *t = &stores[which];
  if (h5_dirty != which) {
    spit(path, t->h5, t->h5len);
    h5_dirty = which;
  }
  size_t cap = WAL_HEADER_SIZE + in->n + 64 * WAL_FRAME_OVERHEAD, n = WAL_HEADER_SIZE;
  uint8_t *w = malloc(cap);
  if (!w) abort();
  memcpy(w, t->wal, WAL_HEADER_SIZE);
  uint64_t seq = util_get_le(w + 32, 8), chain = util_get_le(w + 56, 8);
  while (in->n) {
    size_t len = fuzz_u16(in);
    if (len > in->n) len = in->n;
    if (n + len + WAL_FRAME_OVERHEAD > cap) {
      cap = (n + len + WAL_FRAME_OVERHEAD) * 2;
      uint8_t *nw = realloc(w, cap);
      if (!nw) abort();
      w = nw;
    }
    uint8_t *f = w + n;
    util_put_le(f, 0x464c4157u, 4);
    util_put_le(f + 4, len, 4);
    util_put_le(f + 8, seq++, 8);
    if (len) memcpy(f + 16, in->p, len);
    in->p += len;
    in->n -= len;
    chain = XXH64(f, 16 + len, chain);
    util_put_le(f + 16 + len, chain, 8);
    n += len + WAL_FRAME_OVERHEAD;
  }
  spit(walpath, w, n);
  free(w);
}

/* The .h5 file of store `which` with the patches of in, its log the header. */
static void place_damaged(int which, fuzz_in *in) {
  tmpl *t = &stores[which];
  uint8_t *f = malloc(t->h5len);
  if (!f) abort();
  memcpy(f, t->h5, t->h5len);
  while (in->n) {
    const region *r = &t->reg[fuzz_u8(in) % t->nreg];
    size_t off = fuzz_u16(in);
    off |= (size_t)fuzz_u8(in) << 16;
    off = r->off + off % r->len;
    size_t n = fuzz_u8(in);
    if (n > in->n) n = in->n;
    if (n > t->h5len - off) n = t->h5len - off;
    memcpy(f + off, in->p, n);
    in->p += n;
    in->n -= n;
  }
  spit(path, f, t->h5len);
  free(f);
  h5_dirty = -1;
  spit(walpath, t->wal, WAL_HEADER_SIZE);
}

/* ---- reading a store whole ---------------------------------------------------- */

/* What the store holds is what its writers accept: strings well-formed
** UTF-8 without NUL bytes (store_put, store_g_put); a damaged file may
** hold anything (valid 0). */
static void str_ok(const char *p, size_t n, int valid) {
  if (p && valid) FUZZ_ASSERT(util_utf8_check(p, n, 0) == n);
}

static void read_all(store *s, int valid) {
  uint64_t npos = store_npos(s), live = 0;
  int dim = store_dim(s);
  for (uint64_t pos = 0; pos < npos; pos++) {
    if (!store_pos_live(s, pos)) continue;
    live++;
    store_view v;
    memset(&v, 0, sizeof v);
    int rc = store_get(s, pos, STORE_V_ALL, &v);
    if (rc != STORE_OK) continue;
    uint64_t p2;
    FUZZ_ASSERT(store_find(s, v.id, &p2) == STORE_OK && p2 == pos);
    str_ok(v.text, v.text_len, valid);
    str_ok(v.source, v.source_len, valid);
    str_ok(v.session, v.session_len, valid);
    str_ok(v.tags, v.tags_len, valid);
    str_ok(v.tier, v.tier_len, valid);
    str_ok(v.meta, v.meta_len, valid);
    uint64_t one = 1;
    (void)store_emb_block(s, pos, &one);
    int64_t ts;
    (void)store_get_ts(s, pos, &ts);
  }
  FUZZ_ASSERT(live == store_count(s));
  float q[4];
  emb_of(dim, 42, q);
  ann_res res[20];
  uint64_t nres;
  store_knn_opts ko = {1, 0, 0};
  (void)store_knn(s, q, 10, NULL, &ko, res, &nres);
  (void)store_knn(s, q, 10, NULL, NULL, res, &nres);
  store_hit hits[20];
  uint64_t nh;
  const char *qs = "alpha gamma naïve fox";
  (void)store_bm25(s, qs, strlen(qs), 10, NULL, hits, &nh);
  const kg_adj *adj;
  (void)store_g_adj(s, &adj);
  (void)store_g_type_code(s, "knows", 5);
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    uint64_t n = store_g_npos(s, t), glive = 0;
    for (uint64_t pos = 0; pos < n; pos++) {
      store_grec r;
      if (store_g_get(s, t, pos, &r) != STORE_OK) continue;
      glive++;
      for (int k = 0; k < 4; k++) str_ok(r.s[k], r.n[k], valid);
    }
    FUZZ_ASSERT(glive == store_g_count(s, t));
  }
  store_index_info ii;
  (void)store_index(s, &ii);
  store_text_info ti;
  (void)store_text_index(s, &ti);
  store_log_info li;
  char note[512];
  store_log(s, &li, note, sizeof note);
}

/* ---- the declared columns, read and searched ------------------------------------ */

#define BIT(b, p) ((b)[(p) >> 3] >> ((p) & 7) & 1)

static int val_same(const store_val *a, const store_val *b) {
  if (a->type != b->type) return 0;
  if (!a->type) return 1;
  if (a->type == STORE_T_INTEGER || a->type == STORE_T_BOOLEAN) return a->i == b->i;
  if (a->type == STORE_T_FLOAT) return memcmp(&a->f, &b->f, sizeof a->f) == 0;
  return a->n == b->n && (!a->n || memcmp(a->p, b->p, a->n) == 0);
}

/* A value as store_put takes it (what the log's frames are held to). */
static void val_valid(const store_coldef *c, const store_val *v) {
  if (!v->type) return;
  switch (c->type) {
  case STORE_T_INTEGER: FUZZ_ASSERT(v->i != INT64_MIN); break;
  case STORE_T_BOOLEAN: FUZZ_ASSERT(v->i == 0 || v->i == 1); break;
  case STORE_T_FLOAT: FUZZ_ASSERT(isfinite(v->f)); break;
  case STORE_T_TEXT: FUZZ_ASSERT(util_utf8_check(v->p, v->n, 0) == v->n); break;
  default: break;
  }
}

/* float16 to float32, here (independent of the kernels) */
static float f16_val(uint16_t h) {
  int e = h >> 10 & 31, m = h & 1023;
  float x = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 1024), e - 25);
  return h & 0x8000 ? -x : x;
}

/* The distance store_knn_col gives (sqlite-vec's), computed in double
** from the column's bytes; NaN when not comparable (a zero vector under
** cosine, a result beyond float's range). */
static double ref_dist(const store_coldef *c, const void *q, const void *r) {
  const uint8_t *a = q, *b = r;
  if (c->vtype == STORE_VT_BIT) {
    int h = 0;
    for (int i = 0; i < c->dim / 8; i++) h += __builtin_popcount((unsigned)(a[i] ^ b[i]));
    return h;
  }
  double acc = 0, na = 0, nb = 0;
  for (int i = 0; i < c->dim; i++) {
    double x, y;
    if (c->vtype == STORE_VT_I8) {
      x = (int8_t)a[i];
      y = (int8_t)b[i];
    } else {
      float fx, fy;
      memcpy(&fx, a + 4 * i, 4);
      if (c->vtype == STORE_VT_F32) {
        memcpy(&fy, b + 4 * i, 4);
      } else {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        fy = f16_val(h);
      }
      x = fx;
      y = fy;
    }
    if (c->metric == STORE_L1) acc += fabs(x - y);
    else if (c->metric == STORE_L2) acc += (x - y) * (x - y);
    else {
      acc += x * y;
      na += x * x;
      nb += y * y;
    }
  }
  double d = c->metric == STORE_L2 ? sqrt(acc) : c->metric == STORE_DOT ? -acc
           : c->metric == STORE_COSINE ? (na == 0 || nb == 0 ? NAN : 1.0 - acc / sqrt(na * nb)) : acc;
  return fabs(d) > 1e30 ? NAN : d;
}

static int allow_third(void *ctx, uint64_t pos) {
  store *s = ctx;
  return store_pos_live(s, pos) && pos % 3 != 1;
}

/* Store_knn_col on column c with query q (in the column's query terms),
** k results, under each kind of filter; checked against ref_dist over
** vals (each live position's values; NULL: unreadable). */
static void knn_check(store *s, int c, const void *q, uint64_t k, store_val **vals, const uint8_t *live,
                      const uint8_t *sparse, uint64_t nsparse, uint64_t nlive, int valid) {
  const store_coldef *d = store_col(s, c);
  uint64_t npos = store_npos(s);
  ann_res *out = malloc((k ? k : 1) * sizeof *out);
  uint8_t *in = calloc(npos / 8 + 1, 1);
  if (!out || !in) abort();
  for (int f = 0; f < 8; f++) {
    int exact = f < 4; /* (then through the column's graph, when it has one) */
    store_knn_opts ko = {1, 0, 0};
    store_filter flt;
    memset(&flt, 0, sizeof flt);
    if (f % 4 == 1) flt = (store_filter){live, nlive, NULL, NULL, NULL};
    if (f % 4 == 2) flt = (store_filter){sparse, nsparse, NULL, NULL, NULL};
    if (f % 4 == 3) flt = (store_filter){NULL, 0, allow_third, s, NULL};
    uint64_t nout = 0;
    int rc = store_knn_col(s, c, q, k, f % 4 ? &flt : NULL, exact ? &ko : NULL, out, &nout);
    if (rc != STORE_OK) {
      if (valid) fail_msg("store_knn_col", rc, store_errmsg(s));
      FUZZ_ASSERT(!valid && rc == STORE_ECORRUPT);
      continue;
    }
    FUZZ_ASSERT(nout <= k);
    memset(in, 0, npos / 8 + 1);
    uint64_t want = 0;
    for (uint64_t p = 0; p < npos; p++) {
      int ok = BIT(live, p) && (f % 4 == 2 ? BIT(sparse, p) : f % 4 == 3 ? p % 3 != 1 : 1);
      if (ok && vals[p] && vals[p][c].type) want++;
    }
    for (uint64_t i = 0; i < nout; i++) {
      uint64_t p = out[i].pos;
      FUZZ_ASSERT(p < npos && BIT(live, p) && !BIT(in, p));
      in[p >> 3] |= (uint8_t)(1u << (p & 7));
      if (f % 4 == 2) FUZZ_ASSERT(BIT(sparse, p));
      if (f % 4 == 3) FUZZ_ASSERT(p % 3 != 1);
      if (!valid) continue;
      if (!vals[p] || vals[p][c].type != STORE_T_VECTOR) {
        fprintf(stderr, "column %s (%s, filter %d, k %llu): result %llu at position %llu (id %lld), which has no "
                "vector (distance %g)\n", d->name, exact ? "exact" : "graph", f % 4, (unsigned long long)k,
                (unsigned long long)i, (unsigned long long)p, (long long)store_pos_id(s, p), (double)out[i].dist);
        abort();
      }
      double r = ref_dist(d, q, vals[p][c].p);
      if (!isnan(r) && !(fabs(out[i].dist - r) <= 1e-3 * (1 + fabs(r)))) {
        fprintf(stderr, "column %s, position %llu: distance %g, expected %g\n", d->name,
                (unsigned long long)p, (double)out[i].dist, r);
        abort();
      }
      if (i && !isnan(out[i].dist) && !isnan(out[i - 1].dist))
        FUZZ_ASSERT(out[i - 1].dist < out[i].dist ||
                    (out[i - 1].dist == out[i].dist && out[i - 1].pos < out[i].pos));
    }
    if (!valid) continue;
    /* as many as there are (a graph that reaches fewer is followed by a
    ** scan); exact: none left out nearer than the last */
    if (nout != (want < k ? want : k)) {
      fprintf(stderr, "column %s (%s, filter %d): %llu results, expected %llu\n", d->name,
              exact ? "exact" : "graph", f % 4, (unsigned long long)nout,
              (unsigned long long)(want < k ? want : k));
      abort();
    }
    if (!exact || !nout || nout < k) continue;
    double last = out[nout - 1].dist;
    for (uint64_t p = 0; p < npos && !isnan(last); p++) {
      if (BIT(in, p) || !BIT(live, p) || !vals[p] || !vals[p][c].type) continue;
      if ((f % 4 == 2 && !BIT(sparse, p)) || (f % 4 == 3 && p % 3 == 1)) continue;
      double r = ref_dist(d, q, vals[p][c].p);
      if (!isnan(r) && r < last - 1e-3 * (1 + fabs(last))) {
        fprintf(stderr, "column %s: position %llu (distance %g) left out of the %llu nearest (last %g)\n",
                d->name, (unsigned long long)p, r, (unsigned long long)k, last);
        abort();
      }
    }
  }
  free(out);
  free(in);
}

/* The conditions' values beside the records' own: of each class, the
** edges (the partition index's key of NULL as an integer among them). */
static const store_val fixed_num[] = {
    {STORE_T_INTEGER, 0, 0, NULL, 0},
    {STORE_T_INTEGER, INT64_MAX, 0, NULL, 0},
    {STORE_T_INTEGER, (int64_t)0x9e3779b97f4a7c15ull, 0, NULL, 0},
    {STORE_T_FLOAT, 0, -19.0, NULL, 0},
    {STORE_T_FLOAT, 0, 0.5, NULL, 0},
    {STORE_T_FLOAT, 0, INFINITY, NULL, 0},
    {STORE_T_FLOAT, 0, -9223372036854775808.0, NULL, 0},
};
static const store_val fixed_text[] = {
    {STORE_T_TEXT, 0, 0, "", 0},
    {STORE_T_TEXT, 0, 0, "beta", 4},
    {STORE_T_TEXT, 0, 0, "t1", 2},
};
static const store_val fixed_other[] = {
    {0, 0, 0, NULL, 0}, /* NULL */
    {STORE_T_INTEGER, 1, 0, NULL, 0},
    {STORE_T_TEXT, 0, 0, "k1", 2},
    {STORE_T_BLOB, 0, 0, "\x02\x00\x04", 3},
};
#define N_OF(a) (sizeof a / sizeof a[0])
#define NSAMPLE 6

/* SQLite's order of two values neither NULL (numbers, then text, then
** blobs; an integer against a float exactly), computed here apart from
** the store's; -2 where this platform cannot tell exactly. */
static int ref_cmp(const store_val *a, const store_val *b) {
  int ca = a->type == STORE_T_TEXT ? 1 : a->type == STORE_T_BLOB ? 2 : 0;
  int cb = b->type == STORE_T_TEXT ? 1 : b->type == STORE_T_BLOB ? 2 : 0;
  if (ca != cb) return ca < cb ? -1 : 1;
  if (!ca) {
    if ((a->type == STORE_T_FLOAT) != (b->type == STORE_T_FLOAT) && LDBL_MANT_DIG < 64) return -2;
    long double x = a->type == STORE_T_FLOAT ? (long double)a->f : (long double)a->i;
    long double y = b->type == STORE_T_FLOAT ? (long double)b->f : (long double)b->i;
    return (x > y) - (x < y);
  }
  size_t n = a->n < b->n ? a->n : b->n;
  int r = n ? memcmp(a->p, b->p, n) : 0;
  if (r) return r < 0 ? -1 : 1;
  return (a->n > b->n) - (a->n < b->n);
}

/* Whether v passes cond as store.h says (1, 0), or -2: cannot tell. */
static int ref_test(const store_cond *cond, const store_val *v) {
  if (cond->op == STORE_OP_ISNULL) return !v->type;
  if (cond->op == STORE_OP_NOTNULL) return v->type != 0;
  if (!v->type) return 0;
  if (cond->op == STORE_OP_IN || cond->op == STORE_OP_NOTIN) {
    int found = 0;
    for (int k = 0; k < cond->nv; k++) {
      if (!cond->v[k].type) continue;
      int r = ref_cmp(v, &cond->v[k]);
      if (r == -2) return -2;
      found |= r == 0;
    }
    return cond->op == STORE_OP_IN ? found : !found;
  }
  if (cond->nv < 1 || !cond->v[0].type) return 0;
  int r = ref_cmp(v, &cond->v[0]);
  if (r == -2) return -2;
  switch (cond->op) {
  case STORE_OP_EQ: return r == 0;
  case STORE_OP_NE: return r != 0;
  case STORE_OP_LT: return r < 0;
  case STORE_OP_LE: return r <= 0;
  case STORE_OP_GT: return r > 0;
  default: return r >= 0;
  }
}

/* Filter from start (live bits, or a subset) under cond: the result must
** be, position by position, what ref_test says of the record's value
** (vals: each live position's values as store_get_cols read them, NULL
** where it failed) and what store_col_test says (at every 16th position,
** and wherever ref_test cannot tell).  Returns the positions kept, or -1
** when the filter failed (a damaged file). */
static int64_t filter_check(store *s, const store_cond *cond, const uint8_t *start, uint8_t *bits,
                            store_val *const *vals, int valid) {
  static unsigned salt;
  uint64_t npos = store_npos(s), n = 0, cnt = 0;
  memcpy(bits, start, npos / 8 + 1);
  int rc = store_col_filter(s, cond, npos, bits, &n);
  if (rc != STORE_OK) {
    if (valid) fail_msg("store_col_filter", rc, store_errmsg(s));
    FUZZ_ASSERT(!valid && rc == STORE_ECORRUPT);
    return -1;
  }
  salt++;
  for (uint64_t p = 0; p < npos; p++) {
    int b = BIT(bits, p);
    cnt += (uint64_t)b;
    if (!BIT(start, p)) {
      FUZZ_ASSERT(!b);
      continue;
    }
    int e = vals[p] ? ref_test(cond, &vals[p][cond->col]) : -2, t = e;
    if (e == -2 || (p + salt) % 16 == 0) {
      t = store_col_test(s, cond, p);
      if (t < 0) {
        FUZZ_ASSERT(!valid);
        continue;
      }
    }
    if (t != b || (e != -2 && e != b)) {
      const store_coldef *d = store_col(s, cond->col);
      fprintf(stderr, "column %s, op %d (%d values, the first of type %d), position %llu: filter %d, "
              "store_col_test %d, expected %d\n", d->name, cond->op, cond->nv,
              cond->nv ? cond->v[0].type : -1, (unsigned long long)p, b, t, e);
      abort();
    }
  }
  FUZZ_ASSERT(cnt == n);
  return (int64_t)n;
}

static void filter_column(store *s, int c, const store_val *samp, int nsamp, const uint8_t *live,
                          const uint8_t *sparse, store_val *const *vals, int valid) {
  uint64_t npos = store_npos(s);
  size_t nb = npos / 8 + 1;
  uint8_t *bits = malloc(nb), *eq = malloc(nb), *uni = calloc(nb, 1);
  if (!bits || !eq || !uni) abort();
  /* the values: the records', those of the column's class, the others' */
  const store_coldef *d = store_col(s, c);
  store_val list[NSAMPLE + N_OF(fixed_num) + N_OF(fixed_other)];
  int nv = 0, broken = 0;
  for (int i = 0; i < nsamp; i++) list[nv++] = samp[i];
  if (d->type == STORE_T_TEXT)
    for (size_t i = 0; i < N_OF(fixed_text); i++) list[nv++] = fixed_text[i];
  else if (d->type != STORE_T_BLOB)
    for (size_t i = 0; i < N_OF(fixed_num); i++) list[nv++] = fixed_num[i];
  for (size_t i = 0; i < N_OF(fixed_other); i++) list[nv++] = fixed_other[i];
  store_cond cond = {c, STORE_OP_NOTNULL, NULL, 0};
  int64_t nnot = filter_check(s, &cond, live, bits, vals, valid);
  cond.op = STORE_OP_ISNULL;
  int64_t nnull = filter_check(s, &cond, live, bits, vals, valid);
  if (nnot >= 0 && nnull >= 0) FUZZ_ASSERT((uint64_t)(nnot + nnull) == store_count(s));
  else broken = 1;
  int64_t nuni = 0;
  for (int i = 0; i < nv; i++) {
    int64_t r[STORE_OP_GE + 1];
    for (int op = STORE_OP_EQ; op <= STORE_OP_GE; op++) {
      cond = (store_cond){c, op, &list[i], 1};
      r[op] = filter_check(s, &cond, live, op == STORE_OP_EQ ? eq : bits, vals, valid);
      if (r[op] < 0) broken = 1;
    }
    if (i < 2) {
      cond = (store_cond){c, STORE_OP_EQ, &list[i], 1};
      (void)filter_check(s, &cond, sparse, bits, vals, valid);
    }
    if (broken) continue;
    for (size_t b = 0; b < nb; b++) uni[b] |= eq[b];
    if (!list[i].type) { /* NULL matches nothing */
      for (int op = STORE_OP_EQ; op <= STORE_OP_GE; op++) FUZZ_ASSERT(r[op] == 0);
      continue;
    }
    /* one order: <, = or >; the rest follows */
    FUZZ_ASSERT(r[STORE_OP_LT] + r[STORE_OP_EQ] + r[STORE_OP_GT] == nnot);
    FUZZ_ASSERT(r[STORE_OP_LE] == r[STORE_OP_LT] + r[STORE_OP_EQ]);
    FUZZ_ASSERT(r[STORE_OP_GE] == r[STORE_OP_GT] + r[STORE_OP_EQ]);
    FUZZ_ASSERT(r[STORE_OP_NE] == nnot - r[STORE_OP_EQ]);
    if (i < nsamp) FUZZ_ASSERT(r[STORE_OP_EQ] > 0); /* a record's own value equals itself */
  }
  for (size_t b = 0; b < nb; b++) nuni += __builtin_popcount(uni[b]);
  /* IN: the union of the = (NULLs in the list match nothing); NOT IN the rest */
  cond = (store_cond){c, STORE_OP_IN, list, nv};
  int64_t nin = filter_check(s, &cond, live, bits, vals, valid);
  if (!broken && nin >= 0) FUZZ_ASSERT(nin == nuni && memcmp(bits, uni, nb) == 0);
  cond.op = STORE_OP_NOTIN;
  int64_t nnotin = filter_check(s, &cond, live, bits, vals, valid);
  if (!broken && nnotin >= 0) FUZZ_ASSERT(nnotin == nnot - nuni);
  cond = (store_cond){c, STORE_OP_IN, list, nsamp};
  (void)filter_check(s, &cond, sparse, bits, vals, valid);
  cond = (store_cond){c, STORE_OP_IN, NULL, 0}; /* (an empty list: nothing) */
  FUZZ_ASSERT(filter_check(s, &cond, live, bits, vals, valid) <= 0);
  free(bits);
  free(eq);
  free(uni);
}

static void read_cols(store *s, int valid) {
  int nc = store_ncols(s);
  uint64_t npos = store_npos(s), nlive = 0, nsparse = 0;
  size_t nb = npos / 8 + 1;
  uint8_t *live = calloc(nb, 1), *sparse = calloc(nb, 1);
  store_val **vals = calloc(npos ? npos : 1, sizeof *vals);
  if (!live || !sparse || !vals) abort();
  store_live_bits(s, npos, live, &nlive);
  FUZZ_ASSERT(nlive == store_count(s));
  /* every value, twice (alone and all together), as the writer takes them */
  uint64_t k = 0;
  for (uint64_t p = 0; p < npos; p++) {
    store_val v;
    if (!BIT(live, p)) {
      FUZZ_ASSERT(store_pos_live(s, p) == 0);
      FUZZ_ASSERT(!nc || store_get_col(s, p, 0, &v) == STORE_ENOTFOUND);
      continue;
    }
    if (k++ % 7 == 3) {
      sparse[p >> 3] |= (uint8_t)(1u << (p & 7));
      nsparse++;
    }
    int rc = store_get_cols(s, p, &vals[p]);
    if (rc != STORE_OK) {
      FUZZ_ASSERT(!valid && rc == STORE_ECORRUPT && !vals[p]);
      continue;
    }
    FUZZ_ASSERT(nc ? vals[p] != NULL : vals[p] == NULL);
    for (int c = 0; c < nc; c++) {
      const store_coldef *d = store_col(s, c);
      FUZZ_ASSERT(store_get_col(s, p, c, &v) == STORE_OK && val_same(&v, &vals[p][c]));
      FUZZ_ASSERT(!v.type || v.type == d->type);
      if (v.type == STORE_T_VECTOR) FUZZ_ASSERT(v.n == store_coldef_width(d));
      if (valid) val_valid(d, &v);
    }
  }
  store_val v;
  FUZZ_ASSERT(store_get_col(s, 0, nc, &v) == STORE_EINVAL && store_get_col(s, 0, -1, &v) == STORE_EINVAL);
  /* a few records' values (the first and last live: the log's) for the conditions */
  uint64_t samp[NSAMPLE];
  int ns = 0;
  uint64_t from = 0;
  for (uint64_t p = 0; p < npos && ns < NSAMPLE / 2; p++)
    if (vals[p]) {
      samp[ns++] = p;
      from = p + 1;
    }
  for (uint64_t p = npos; p-- > from && ns < NSAMPLE;)
    if (vals[p]) samp[ns++] = p;
  for (int c = 0; c < nc; c++) {
    const store_coldef *d = store_col(s, c);
    if (d->type == STORE_T_VECTOR) {
      /* queries: the first sampled record's vector (in the query's
      ** terms), and one of its own; k = 3, and more than there are */
      if (d->dim > 64) continue;
      const uint8_t *rec = NULL;
      for (int i = 0; i < ns && !rec; i++)
        if (vals[samp[i]][c].type) rec = vals[samp[i]][c].p;
      for (int i = 0; i < 2; i++) {
        const uint8_t *r = i ? NULL : rec;
        if (!i && !rec) continue;
        uint8_t q[64 * 4];
        for (int j = 0; j < (d->vtype == STORE_VT_BIT ? d->dim / 8 : d->dim); j++) {
          if (d->vtype == STORE_VT_F16) {
            uint16_t h = 0;
            if (r) memcpy(&h, r + 2 * j, 2);
            float f = r ? f16_val(h) : (float)j - 1.5f;
            memcpy(q + 4 * j, &f, 4);
          } else if (d->vtype == STORE_VT_F32) {
            float f = (float)j * 0.25f - 1.0f;
            memcpy(q + 4 * j, r ? r + 4 * j : (const uint8_t *)&f, 4);
          } else {
            q[j] = r ? r[j] : (uint8_t)(j * 41 + 7);
          }
        }
        knn_check(s, c, q, 3, vals, live, sparse, nsparse, nlive, valid);
        knn_check(s, c, q, npos + 2, vals, live, sparse, nsparse, nlive, valid);
      }
      continue;
    }
    store_val sv[NSAMPLE];
    int nsv = 0;
    for (int i = 0; i < ns; i++)
      if (vals[samp[i]][c].type) sv[nsv++] = vals[samp[i]][c];
    filter_column(s, c, sv, nsv, live, sparse, vals, valid);
    if (d->role != STORE_R_PKEY) continue;
    /* the primary key: each record found by its own, and only by it */
    for (uint64_t p = 0; p < npos; p++) {
      if (!vals[p] || !vals[p][c].type) continue;
      uint64_t at;
      int rc = store_pkey_find(s, vals[p][c].p, vals[p][c].n, &at);
      if (rc != STORE_OK) {
        FUZZ_ASSERT(!valid && rc == STORE_ECORRUPT);
        continue;
      }
      FUZZ_ASSERT(at < npos && store_pos_live(s, at));
      store_val kv;
      if (store_get_col(s, at, c, &kv) == STORE_OK) FUZZ_ASSERT(val_same(&kv, &vals[p][c]));
      if (valid && at != p) {
        fprintf(stderr, "key '%.*s' at positions %llu and %llu\n", (int)vals[p][c].n,
                (const char *)vals[p][c].p, (unsigned long long)p, (unsigned long long)at);
        abort();
      }
    }
    uint64_t at;
    int rc = store_pkey_find(s, "no such key", 11, &at);
    FUZZ_ASSERT(rc == STORE_ENOTFOUND || rc == STORE_ECORRUPT || (rc == STORE_OK && at < npos));
  }
  for (uint64_t p = 0; p < npos; p++) free(vals[p]);
  free(vals);
  free(live);
  free(sparse);
}

/* A writer's next steps: one more record and entity, a checkpoint. */
static int write_more(store *s) {
  int64_t id = store_max_id(s), gid = store_g_max_id(s, STORE_G_ENTITY);
  if (id == INT64_MAX || gid == INT64_MAX || store_begin(s) != STORE_OK) return STORE_OK;
  float e[4];
  emb_of(store_dim(s), id, e);
  store_rec r;
  memset(&r, 0, sizeof r);
  r.id = id + 1;
  r.text = "one more";
  r.text_len = 8;
  r.emb = e;
  r.last_access = STORE_NULL_TIME;
  store_val cv[NDECL];
  colbuf cb;
  if (store_ncols(s) == NDECL && store_col(s, D_KEY)->role == STORE_R_PKEY) {
    col_vals(id % 1000, cv, &cb);
    cv[D_KEY] = (store_val){STORE_T_TEXT, 0, 0, "one more", 8};
    r.cols = cv;
  }
  store_grec g;
  memset(&g, 0, sizeof g);
  g.id = gid + 1;
  g.s[0] = "more";
  g.n[0] = 4;
  if (store_put(s, &r) != STORE_OK || store_g_put(s, STORE_G_ENTITY, &g) != STORE_OK ||
      store_commit(s, 0) != STORE_OK) {
    store_rollback(s);
    return STORE_OK;
  }
  return store_checkpoint(s);
}

/* The signed store's verdict: an undamaged file valid, a damaged one a
** verdict or ECORRUPT (or, when its layout no longer says it is a store,
** what opening it says). */
static void verify_check(int which, int damaged) {
  if (which != 2) return;
  strbuf sb = {0};
  char err[512];
  int rc = store_verify(path, NULL, 0, NULL, &sb, err, sizeof err);
  if (rc == STORE_OK) {
    FUZZ_ASSERT(!strbuf_failed(&sb) && sb.buf);
    if (!damaged && strncmp(sb.buf, "{\"valid\":true,", 14) != 0) {
      fprintf(stderr, "an undamaged signed store does not verify: %s\n", sb.buf);
      abort();
    }
  } else {
    if (!damaged) fail_msg("verifying", rc, err);
    FUZZ_ASSERT(damaged && (rc == STORE_ECORRUPT || rc == STORE_EINVAL || rc == STORE_ENOTFOUND ||
                            rc == STORE_EMISMATCH || rc == STORE_EEXISTS));
  }
  strbuf_free(&sb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  unsigned mode = fuzz_u8(&in);
  int which = mode & 4 ? 2 : (int)(mode & 1), writer = (mode & 2) != 0, damaged = (mode & 8) != 0;
  if (damaged) place_damaged(which, &in);
  else place(which, &in);
  store *s;
  char err[512];
  int rc = store_open(path, NULL, !writer, &s, err, sizeof err);
  if (rc != STORE_OK) {
    if (!(rc == STORE_ECORRUPT || rc == STORE_EINVAL || rc == STORE_ENOTFOUND || rc == STORE_EEXISTS ||
          (damaged && rc == STORE_EMISMATCH)))
      fail_msg("opening", rc, err);
    FUZZ_ASSERT(rc == STORE_ECORRUPT || rc == STORE_EINVAL || rc == STORE_ENOTFOUND ||
                rc == STORE_EEXISTS || (damaged && rc == STORE_EMISMATCH));
    verify_check(which, damaged); /* (frames that do not open leave the file as signed) */
    return 0;
  }
  read_all(s, !damaged);
  read_cols(s, !damaged);
  if (!writer) {
    store_close(s);
    verify_check(which, damaged);
    return 0;
  }
  h5_dirty = -1;
  rc = write_more(s);
  if (rc != STORE_OK) fail_msg("checkpoint", rc, store_errmsg(s));
  FUZZ_ASSERT(rc == STORE_OK || (damaged && rc == STORE_ECORRUPT));
  uint64_t count = store_count(s), g[STORE_G_NTABLES];
  for (int t = 0; t < STORE_G_NTABLES; t++) g[t] = store_g_count(s, t);
  int ckpt = rc;
  rc = store_close(s);
  FUZZ_ASSERT(rc == STORE_OK || damaged);
  /* what was checkpointed opens again, the same */
  rc = store_open(path, NULL, 1, &s, err, sizeof err);
  if (damaged && (rc != STORE_OK || ckpt != STORE_OK)) {
    if (rc == STORE_OK) store_close(s);
    verify_check(which, 1);
    return 0;
  }
  if (rc != STORE_OK) fail_msg("reopening", rc, err);
  FUZZ_ASSERT(rc == STORE_OK && store_count(s) == count);
  for (int t = 0; t < STORE_G_NTABLES; t++) FUZZ_ASSERT(store_g_count(s, t) == g[t]);
  read_all(s, !damaged);
  read_cols(s, !damaged);
  store_close(s);
  verify_check(which, damaged);
  return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* A seed's graph changes (the stores with a graph). */
static void seed_graph(store *s) {
  store_grec g;
  memset(&g, 0, sizeof g);
  g.id = 100;
  g.s[0] = "Fox";
  g.n[0] = 3;
  g.s[2] = "[\"fox\"]";
  g.n[2] = 7;
  FUZZ_ASSERT(store_g_put(s, STORE_G_ENTITY, &g) == STORE_OK);
  memset(&g, 0, sizeof g);
  g.id = 100;
  g.a = 100;
  g.b = 1;
  g.s[1] = "chases";
  g.n[1] = 6;
  g.weight = 0.5;
  g.ts = 99;
  FUZZ_ASSERT(store_g_put(s, STORE_G_RELATION, &g) == STORE_OK);
  memset(&g, 0, sizeof g);
  g.id = 100;
  g.a = 1000;
  g.b = 100;
  FUZZ_ASSERT(store_g_put(s, STORE_G_MENTION, &g) == STORE_OK);
  FUZZ_ASSERT(store_g_delete(s, STORE_G_ENTITY, 7) == STORE_OK &&
              store_g_delete(s, STORE_G_RELATION, 8) == STORE_OK &&
              store_g_delete(s, STORE_G_MENTION, 9) == STORE_OK);
}

/* The frames a writer makes for a few transactions, as an input. */
static void seeds(const char *sdir) {
  for (int which = 0; which < NSTORES; which++) {
    for (int writer = 0; writer < 2; writer++) {
      fuzz_in none = {NULL, 0};
      h5_dirty = -1;
      place(which, &none);
      store *s;
      char err[512];
      FUZZ_ASSERT(store_open(path, NULL, 0, &s, err, sizeof err) == STORE_OK);
      FUZZ_ASSERT(store_begin(s) == STORE_OK);
      float e[4];
      emb_of(store_dim(s), 7, e);
      store_val cv[NDECL];
      colbuf cb;
      store_rec r;
      memset(&r, 0, sizeof r);
      r.id = 1000;
      r.text = "a new memory about the fox";
      r.text_len = strlen(r.text);
      r.tags = "[\"x\"]";
      r.tags_len = 5;
      r.meta = "{}";
      r.meta_len = 2;
      r.emb = e;
      r.last_access = 12345;
      if (which == 2) { /* every column set, the key the deleted record 18's */
        col_vals(18, cv, &cb);
        cv[D_USER].i = -5;
        cv[D_CAT] = (store_val){STORE_T_TEXT, 0, 0, "naïve fox", strlen("naïve fox")};
        r.cols = cv;
        FUZZ_ASSERT(store_delete(s, 18) == STORE_OK);
      }
      FUZZ_ASSERT(store_put(s, &r) == STORE_OK);
      r.id = 1001;
      r.emb = NULL;
      r.text = NULL;
      r.cols = NULL;
      FUZZ_ASSERT(store_put(s, &r) == STORE_OK && store_delete(s, 10) == STORE_OK);
      if (which == 2) { /* some NULLs, some edges */
        col_vals(44, cv, &cb);
        cv[D_KEY] = (store_val){STORE_T_TEXT, 0, 0, "k1002", 5};
        cv[D_USER].i = INT64_MIN + 1;
        cv[D_PRICE] = (store_val){STORE_T_FLOAT, 0, 1e300, NULL, 0};
        cv[D_TENANT].type = 0;
        r.id = 1002;
        r.cols = cv;
        FUZZ_ASSERT(store_put(s, &r) == STORE_OK);
      }
      FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
      FUZZ_ASSERT(store_begin(s) == STORE_OK);
      if (which < 2) seed_graph(s);
      FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
      /* changes in place: of file rows and of a record in memory */
      FUZZ_ASSERT(store_begin(s) == STORE_OK);
      store_patch pa = {STORE_P_ACCESS_COUNT | STORE_P_LAST_ACCESS, 3, 777, 0, NULL, 0};
      FUZZ_ASSERT(store_update(s, 11, &pa) == STORE_OK && store_update(s, 1000, &pa) == STORE_OK);
      store_patch pb = {STORE_P_TIER | STORE_P_IMPORTANCE, 0, 0, 0.75, "archive", 7};
      FUZZ_ASSERT(store_update(s, 12, &pb) == STORE_OK);
      pb.tier = NULL;
      pb.set = STORE_P_TIER;
      FUZZ_ASSERT(store_update(s, 13, &pb) == STORE_OK);
      FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
      /* the log as it is now, before close checkpoints it */
      size_t n;
      uint8_t *w = slurp(walpath, &n);
      uint8_t *seed = malloc(n + 1);
      if (!seed) abort();
      size_t m = 0;
      seed[m++] = (uint8_t)((which == 2 ? 4 : which) | writer << 1);
      for (size_t at = WAL_HEADER_SIZE; n - at >= WAL_FRAME_OVERHEAD;) {
        size_t len = (size_t)util_get_le(w + at + 4, 4);
        FUZZ_ASSERT(len < 65536);
        util_put_le(seed + m, len, 2);
        memcpy(seed + m + 2, w + at + 16, len);
        m += 2 + len;
        at += len + WAL_FRAME_OVERHEAD;
      }
      char name[32];
      snprintf(name, sizeof name, "seed-%d-%d", which, writer);
      fuzz_seed(sdir, name, seed, m);
      free(seed);
      free(w);
      store_close(s);
      h5_dirty = -1;
    }
  }
  /* damaged files: a byte of each region of the declared columns, of some
  ** of the other structures, and the attribute's text changed */
  for (int which = 0; which < NSTORES; which++) {
    tmpl *t = &stores[which];
    size_t nseed = t->ncolreg + 12 < t->nreg ? t->ncolreg + 12 : t->nreg;
    for (size_t r = 0; r < nseed && r < 256; r++) {
      size_t k = r < t->ncolreg ? r : t->ncolreg + (r - t->ncolreg) * (t->nreg - t->ncolreg) / 12;
      uint8_t seed[7] = {(uint8_t)((which == 2 ? 4 : which) | 8), (uint8_t)k, 0, 0, 0, 1, 0xff};
      size_t off = (r * 37) % t->reg[k].len;
      util_put_le(seed + 2, off, 3);
      char name[32];
      snprintf(name, sizeof name, "seed-h5-%d-%zu", which, r);
      fuzz_seed(sdir, name, seed, sizeof seed);
    }
  }
  static const char *const edits[] = {"x", ",", "[9", "0", "key", " partition key"};
  for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
    uint8_t seed[64] = {4 | 8, 0};
    size_t n = strlen(edits[i]);
    util_put_le(seed + 2, 16 + 11 * i + 3, 3);
    seed[5] = (uint8_t)n;
    memcpy(seed + 6, edits[i], n);
    char name[32];
    snprintf(name, sizeof name, "seed-h5-columns-%zu", i);
    fuzz_seed(sdir, name, seed, 6 + n);
  }
}

static void done(void) {
  unlink(path);
  unlink(walpath);
  unlink(keypath);
  char p[700];
  snprintf(p, sizeof p, "%s.pub", keypath);
  unlink(p);
  for (int k = 1; k < 10; k++) {
    snprintf(p, sizeof p, "%s.corrupt-%d", walpath, k);
    unlink(p);
  }
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(dir, sizeof dir, "%s/h5mem_fuzz_store.XXXXXX", fuzz_tmp_base());
  if (!mkdtemp(dir)) {
    fprintf(stderr, "cannot make %s: %s\n", dir, strerror(errno));
    exit(1);
  }
  snprintf(path, sizeof path, "%s/agent.h5", dir);
  snprintf(walpath, sizeof walpath, "%s-wal", path);
  snprintf(keypath, sizeof keypath, "%s/agent.key", dir);
  uint8_t pk[SIGN_PK_BYTES];
  char kerr[512];
  if (sign_keygen(keypath, pk, kerr, sizeof kerr) != SIGN_OK) {
    fprintf(stderr, "%s\n", kerr);
    abort();
  }
  for (int i = 0; i < NDECL; i++) {
    char err[256];
    if (store_coldef_parse(col_decls[i], strlen(col_decls[i]), &cdefs[i], err, sizeof err) != STORE_OK) {
      fprintf(stderr, "%s\n", err);
      abort();
    }
  }
  for (int which = 0; which < NSTORES; which++) make_store(which);
  if (fuzz_seed_dir()) seeds(fuzz_seed_dir());
  atexit(done);
  return 0;
}
