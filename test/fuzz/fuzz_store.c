/*
** test/fuzz/fuzz_store.c - libFuzzer target for the replay of log frames
** into a store (lib/store/store_log.c store_replay_frame: records put,
** deleted and changed in place; lib/store/store_graph.c gstore_replay: the
** graph's ops).
**
** The input is frame payloads, wrapped into frames that validate (the
** right magic, seqs and checksum chain behind a store's own log header),
** so that what the store does with their contents is what is tested:
**   byte 0     settings: bit 0 which store (0: dim 4 f32 cosine, HNSW;
**              1: dim 3 f16 L2, IVF), bit 1 open for writing (then a
**              change is committed, a checkpoint made, and the store must
**              open again holding what it held), else readonly
**   then       payloads, each a uint16 length (little-endian) and as many
**              bytes (fewer at the end of the input)
** Both stores are made once (Initialize): 300 records with text, a saved
** vector index and text index, entities, relations and mentions, some of
** each deleted, checkpointed; their files are copied into place before
** each input.  A store that opens is read whole: every record, an exact
** and an index search, a BM25 search, the graph's adjacency.
** Seeds (H5MEM_FUZZ_SEEDS): the payloads of the frames the store itself
** writes for puts, deletes, changes in place and graph changes.
*/
#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fuzz.h"
#include "store/store.h"
#include "store/wal.h"
#include "util/utf8.h"

#define NREC 300

typedef struct tmpl {
  uint8_t *h5, *wal; /* the files as made */
  size_t h5len, wallen;
} tmpl;

static char dir[512], path[600], walpath[640];
static tmpl stores[2];
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

/* ---- the stores ------------------------------------------------------------- */

static const char *const words[] = {"alpha", "beta",  "gamma", "delta", "été",
                                    "naïve", "graph", "memory", "fox",  "dog"};

static void emb_of(int dim, int64_t id, float *e) {
  for (int j = 0; j < dim; j++) e[j] = (float)(((uint64_t)id * 7 + (uint64_t)j * 3) % 11) / 10.0f - 0.5f;
}

static void make_store(int which) {
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = which ? 3 : 4;
  o.metric = which ? STORE_L2 : STORE_COSINE;
  o.storage = which ? STORE_F16 : STORE_F32;
  o.sync = STORE_SYNC_OFF;
  o.index = which ? STORE_INDEX_IVF : STORE_INDEX_HNSW;
  o.hnsw_m = 4;
  o.hnsw_efc = 16;
  o.ivf_nlist = 4;
  o.tokenize = which ? "porter unicode61" : NULL;
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
    FUZZ_ASSERT(store_put(s, &r) == STORE_OK);
  }
  for (int64_t id = 1; id <= 20; id++) {
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
  FUZZ_ASSERT(store_delete(s, 5) == STORE_OK && store_g_delete(s, STORE_G_ENTITY, 3) == STORE_OK &&
              store_g_delete(s, STORE_G_RELATION, 4) == STORE_OK);
  FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
  FUZZ_ASSERT(store_checkpoint(s) == STORE_OK);
  FUZZ_ASSERT(store_close(s) == STORE_OK);
  tmpl *t = &stores[which];
  t->h5 = slurp(path, &t->h5len);
  t->wal = slurp(walpath, &t->wallen);
  FUZZ_ASSERT(t->wallen == WAL_HEADER_SIZE); /* (checkpointed: a header only) */
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

/* ---- reading a store whole ---------------------------------------------------- */

/* What the store holds is what its writers accept: strings well-formed
** UTF-8 without NUL bytes (store_put, store_g_put). */
static void str_ok(const char *p, size_t n) {
  if (p) FUZZ_ASSERT(util_utf8_check(p, n, 0) == n);
}

static void read_all(store *s) {
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
    str_ok(v.text, v.text_len);
    str_ok(v.source, v.source_len);
    str_ok(v.session, v.session_len);
    str_ok(v.tags, v.tags_len);
    str_ok(v.tier, v.tier_len);
    str_ok(v.meta, v.meta_len);
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
      for (int k = 0; k < 4; k++) str_ok(r.s[k], r.n[k]);
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

/* A writer's next steps: one more record and entity, a checkpoint. */
static void write_more(store *s) {
  int64_t id = store_max_id(s), gid = store_g_max_id(s, STORE_G_ENTITY);
  if (id == INT64_MAX || gid == INT64_MAX || store_begin(s) != STORE_OK) return;
  float e[4];
  emb_of(store_dim(s), id, e);
  store_rec r;
  memset(&r, 0, sizeof r);
  r.id = id + 1;
  r.text = "one more";
  r.text_len = 8;
  r.emb = e;
  r.last_access = STORE_NULL_TIME;
  store_grec g;
  memset(&g, 0, sizeof g);
  g.id = gid + 1;
  g.s[0] = "more";
  g.n[0] = 4;
  if (store_put(s, &r) != STORE_OK || store_g_put(s, STORE_G_ENTITY, &g) != STORE_OK ||
      store_commit(s, 0) != STORE_OK) {
    store_rollback(s);
    return;
  }
  int rc = store_checkpoint(s);
  if (rc != STORE_OK) fail_msg("checkpoint", rc, store_errmsg(s));
  FUZZ_ASSERT(rc == STORE_OK);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  unsigned mode = fuzz_u8(&in);
  int which = mode & 1, writer = (mode & 2) != 0;
  place(which, &in);
  store *s;
  char err[512];
  int rc = store_open(path, NULL, !writer, &s, err, sizeof err);
  if (rc != STORE_OK) {
    FUZZ_ASSERT(rc == STORE_ECORRUPT || rc == STORE_EINVAL || rc == STORE_ENOTFOUND ||
                rc == STORE_EEXISTS);
    return 0;
  }
  read_all(s);
  if (!writer) {
    store_close(s);
    return 0;
  }
  h5_dirty = -1;
  write_more(s);
  uint64_t count = store_count(s), g[STORE_G_NTABLES];
  for (int t = 0; t < STORE_G_NTABLES; t++) g[t] = store_g_count(s, t);
  rc = store_close(s);
  FUZZ_ASSERT(rc == STORE_OK);
  /* what was checkpointed opens again, the same */
  rc = store_open(path, NULL, 1, &s, err, sizeof err);
  if (rc != STORE_OK) fail_msg("reopening", rc, err);
  FUZZ_ASSERT(rc == STORE_OK && store_count(s) == count);
  for (int t = 0; t < STORE_G_NTABLES; t++) FUZZ_ASSERT(store_g_count(s, t) == g[t]);
  read_all(s);
  store_close(s);
  return 0;
}

/* ---- seeds ------------------------------------------------------------------------ */

/* The frames a writer makes for a few transactions, as an input. */
static void seeds(const char *sdir) {
  for (int which = 0; which < 2; which++) {
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
      FUZZ_ASSERT(store_put(s, &r) == STORE_OK);
      r.id = 1001;
      r.emb = NULL;
      r.text = NULL;
      FUZZ_ASSERT(store_put(s, &r) == STORE_OK && store_delete(s, 10) == STORE_OK);
      FUZZ_ASSERT(store_commit(s, 0) == STORE_OK);
      FUZZ_ASSERT(store_begin(s) == STORE_OK);
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
      seed[m++] = (uint8_t)(which | writer << 1);
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
}

static void done(void) {
  unlink(path);
  unlink(walpath);
  char p[700];
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
  make_store(0);
  make_store(1);
  if (fuzz_seed_dir()) seeds(fuzz_seed_dir());
  atexit(done);
  return 0;
}
