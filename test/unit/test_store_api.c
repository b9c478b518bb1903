/*
** test/unit/test_store_api.c - the memory store through its public API
** (lib/store/store.h), without SQLite: creating, opening and closing a
** store; every column of a record put, read back and deleted, in the
** delta and from the file after a checkpoint; transactions and
** savepoints (the graph tables' too); a crash (a child that exits without
** closing) leaving the committed transactions only; a torn or damaged
** log; checkpoints (asked for and automatic), optimize and reopen;
** store_knn against a brute-force answer computed here, store_bm25 on a
** few texts; bad arguments refused with the documented code and message
** and nothing changed; a second writer (handle or process) busy; a
** damaged file reported as corrupt, by opening and by a checkpoint; a
** store path that is a directory an I/O error; a log made with no room
** for its header full; the gate's lock failing an I/O error, not busy;
** time ranges (store_time_range, store_time_range_session) against a brute force;
** changes in place (store_update): the model through transactions, the
** log, checkpoints and a crash, the log's and the file's growth; an
** ephemeral store (no file): the model, its memory given back, expiry.
**
** Every test works in a directory of its own under $TMPDIR (or /tmp) and
** removes it at the end.  A model of the records (an array) is what every
** state of the store is compared with.
*/
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/gate.h"
#include "store/store.h"
#include "testutil.h"

#define DIM 8

/* ---- files ---------------------------------------------------------------- */

typedef struct tdir {
  char dir[512];
  char path[600]; /* dir/mem.h5 */
  char wal[600];  /* dir/mem.h5-wal */
} tdir;

static void tdir_make(tdir *t) {
  t_mkdtemp(t->dir, sizeof t->dir, "test_store_api");
  snprintf(t->path, sizeof t->path, "%s/mem.h5", t->dir);
  snprintf(t->wal, sizeof t->wal, "%s/mem.h5-wal", t->dir);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static off_t file_size(const char *path) {
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  return st.st_size;
}

/* The files in t->dir (to see that a refused call left none behind). */
static int nfiles(const tdir *t) {
  DIR *d = opendir(t->dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

/* ---- opening ---------------------------------------------------------------- */

static store_opts opts(int dim, int metric, int storage) {
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = dim;
  o.metric = metric;
  o.storage = storage;
  o.sync = STORE_SYNC_OFF;
  return o;
}

static store *open_ok(const char *path, const store_opts *o, int readonly) {
  char err[512] = "";
  store *s = NULL;
  int rc = store_open(path, o, readonly, &s, err, sizeof err);
  ck_assert_msg(rc == STORE_OK, "open %s: %d %s", path, rc, err);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* store_open is refused with code, its message holding want. */
static void open_fails(const char *path, const store_opts *o, int readonly, int code, const char *want) {
  char err[512] = "";
  store *s = (store *)&err; /* not NULL, so the test sees store_open clear it */
  int rc = store_open(path, o, readonly, &s, err, sizeof err);
  ck_assert_msg(rc == code, "open %s: %d, not %d (%s)", path, rc, code, err);
  ck_assert_ptr_null(s);
  ck_assert_msg(strstr(err, want) != NULL, "open %s: message '%s' lacks '%s'", path, err, want);
}

/* ---- the model -------------------------------------------------------------- */

/* One record as the test made it: strings (has[k] 0: NULL), an embedding
** or none, the numbers. */
typedef struct mrec {
  int live;
  int64_t id;
  char str[6][40];
  size_t len[6];
  int has[6];
  float emb[DIM];
  int has_emb;
  int64_t ts, access_count, last_access;
  double importance;
} mrec;

#define MAXR 2048
static mrec model[MAXR]; /* by id */

static const char *const colname[6] = {"text", "source", "session", "tags", "tier", "meta"};

/* A record with every column set: strings with multi-byte characters, an
** empty string now and then, NULL now and then; an embedding (or none). */
static void mrec_make(mrec *m, int64_t id, t_rng *r) {
  static const char *const words[] = {"café", "日本語", "memory", "agent", "naïve", "x", "{\"k\":1}"};
  memset(m, 0, sizeof *m);
  m->live = 1;
  m->id = id;
  for (int k = 0; k < 6; k++) {
    uint64_t u = t_next(r) % 8;
    if (u == 0) continue; /* NULL */
    m->has[k] = 1;
    if (u == 1) continue; /* "" */
    snprintf(m->str[k], sizeof m->str[k], "%s %lld %s", words[t_next(r) % 7], (long long)id,
             words[t_next(r) % 7]);
    m->len[k] = strlen(m->str[k]);
  }
  m->has_emb = t_next(r) % 10 != 0;
  for (int i = 0; i < DIM; i++) m->emb[i] = t_unit(r);
  m->ts = (int64_t)(t_next(r) % 2000000000000ull) - 1000000000000;
  m->importance = (double)(t_next(r) % 100000) / 1000.0 - 3.5;
  m->access_count = (int64_t)(t_next(r) % 1000);
  m->last_access = t_next(r) % 3 ? (int64_t)(t_next(r) % 1000000) : STORE_NULL_TIME;
}

static store_rec rec_of(const mrec *m) {
  store_rec r;
  memset(&r, 0, sizeof r);
  const char **sp[6] = {&r.text, &r.source, &r.session, &r.tags, &r.tier, &r.meta};
  size_t *lp[6] = {&r.text_len, &r.source_len, &r.session_len, &r.tags_len, &r.tier_len, &r.meta_len};
  r.id = m->id;
  for (int k = 0; k < 6; k++)
    if (m->has[k]) {
      *sp[k] = m->str[k];
      *lp[k] = m->len[k];
    }
  r.emb = m->has_emb ? m->emb : NULL;
  r.ts = m->ts;
  r.importance = m->importance;
  r.access_count = m->access_count;
  r.last_access = m->last_access;
  return r;
}

static void put_ok(store *s, const mrec *m) {
  store_rec r = rec_of(m);
  int rc = store_put(s, &r);
  T_CHECK(rc == STORE_OK, "put %lld: %d %s", (long long)m->id, rc, store_errmsg(s));
}

/* v holds exactly m's columns in `want`. */
static void check_view(const store_view *v, const mrec *m, unsigned want) {
  const char *const sp[6] = {v->text, v->source, v->session, v->tags, v->tier, v->meta};
  const size_t lp[6] = {v->text_len, v->source_len, v->session_len, v->tags_len, v->tier_len, v->meta_len};
  T_CHECK(v->id == m->id, "id %lld, not %lld", (long long)v->id, (long long)m->id);
  for (int k = 0; k < 6; k++) {
    if (!(want & (1u << k))) continue;
    if (!m->has[k]) {
      T_CHECK(sp[k] == NULL, "id %lld: %s should be NULL", (long long)m->id, colname[k]);
      continue;
    }
    T_CHECK(sp[k] != NULL, "id %lld: %s is NULL, not '%s'", (long long)m->id, colname[k], m->str[k]);
    T_CHECK(lp[k] == m->len[k] && !memcmp(sp[k], m->str[k], m->len[k]),
            "id %lld: %s is '%.*s', not '%s'", (long long)m->id, colname[k], (int)lp[k], sp[k], m->str[k]);
  }
  if (want & STORE_V_EMB) {
    if (!m->has_emb)
      T_CHECK(v->emb == NULL, "id %lld: should have no embedding", (long long)m->id);
    else
      T_CHECK(v->emb && !memcmp(v->emb, m->emb, sizeof m->emb), "id %lld: embedding differs",
              (long long)m->id);
  }
  if (want & STORE_V_NUM) {
    T_CHECK(v->ts == m->ts, "id %lld: ts %lld, not %lld", (long long)m->id, (long long)v->ts,
            (long long)m->ts);
    T_CHECK(v->importance == m->importance || (isnan(v->importance) && isnan(m->importance)),
            "id %lld: importance %g, not %g", (long long)m->id,
            v->importance, m->importance);
    T_CHECK(v->access_count == m->access_count, "id %lld: access_count", (long long)m->id);
    T_CHECK(v->last_access == m->last_access, "id %lld: last_access %lld, not %lld", (long long)m->id,
            (long long)v->last_access, (long long)m->last_access);
  }
}

/* The store holds exactly the live records of the model, every column. */
static void check_model(store *s) {
  uint64_t live = 0;
  for (int64_t id = 1; id < MAXR; id++) {
    const mrec *m = &model[id];
    uint64_t pos = UINT64_MAX;
    int rc = store_find(s, id, &pos);
    if (!m->live) {
      T_CHECK(rc == STORE_ENOTFOUND, "id %lld should be gone: %d", (long long)id, rc);
      continue;
    }
    live++;
    T_CHECK(rc == STORE_OK, "id %lld missing: %d", (long long)id, rc);
    T_CHECK(pos < store_npos(s) && store_pos_live(s, pos), "id %lld: position %llu", (long long)id,
            (unsigned long long)pos);
    T_CHECK(store_pos_id(s, pos) == id, "store_pos_id of %lld", (long long)id);
    store_view v;
    memset(&v, 0, sizeof v);
    rc = store_get(s, pos, STORE_V_ALL, &v);
    T_CHECK(rc == STORE_OK, "get %lld: %d %s", (long long)id, rc, store_errmsg(s));
    check_view(&v, m, STORE_V_ALL);
    int64_t ts = 0;
    T_CHECK(store_get_ts(s, pos, &ts) == STORE_OK && ts == m->ts, "store_get_ts of %lld", (long long)id);
  }
  T_CHECK(store_count(s) == live, "store_count %llu, model %llu", (unsigned long long)store_count(s),
          (unsigned long long)live);
  uint64_t seen = 0;
  for (uint64_t p = 0; p < store_npos(s); p++) seen += store_pos_live(s, p) != 0;
  T_CHECK(seen == live, "%llu live positions, model %llu", (unsigned long long)seen,
          (unsigned long long)live);
}

static void model_clear(void) { memset(model, 0, sizeof model); }

/* Put n new records, ids next..next+n-1, into the model and the open transaction. */
static int64_t put_new(store *s, t_rng *r, int64_t next, int n) {
  for (int i = 0; i < n; i++, next++) {
    ck_assert_int_lt(next, MAXR);
    mrec_make(&model[next], next, r);
    put_ok(s, &model[next]);
  }
  return next;
}

static void commit_ok(store *s) {
  int rc = store_commit(s, 0);
  ck_assert_msg(rc == STORE_OK, "commit: %d %s", rc, store_errmsg(s));
}

/* A store made with o in a new directory t. */
static store *new_store(tdir *t, store_opts o) {
  tdir_make(t);
  return open_ok(t->path, &o, 0);
}

/* A test's start: an empty model, r seeded with t_seed() + seed (each
** test its own offset, so its own data), a new store made with o. */
static store *start(tdir *t, t_rng *r, uint64_t seed, store_opts o) {
  model_clear();
  r->s = t_seed() + seed;
  return new_store(t, o);
}

/* n new records, ids next..next+n-1, in a transaction of their own; the
** next id. */
static int64_t put_commit(store *s, t_rng *r, int64_t next, int n) {
  ck_assert_int_eq(store_begin(s), STORE_OK);
  next = put_new(s, r, next, n);
  commit_ok(s);
  return next;
}

/* Records 1..nfile in the file (committed, checkpointed), then a
** transaction open with nfile+1..nfile+ndelta put in it; the next id. */
static int64_t put_file_delta(store *s, t_rng *r, int nfile, int ndelta) {
  int64_t next = put_commit(s, r, 1, nfile);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  return put_new(s, r, next, ndelta);
}

/* s closed and t's store opened again (readonly or not): it holds the model. */
static store *reopen(store *s, const tdir *t, int readonly) {
  ck_assert_int_eq(store_close(s), STORE_OK);
  s = open_ok(t->path, NULL, readonly);
  check_model(s);
  return s;
}

/* A test's end: s closed, t removed. */
static void finish(store *s, tdir *t) {
  ck_assert_int_eq(store_close(s), STORE_OK);
  t_rmdir(t->dir);
}

/* id deleted in the open transaction and in the model. */
static void delete_ok(store *s, int64_t id) {
  ck_assert_int_eq(store_delete(s, id), STORE_OK);
  model[id].live = 0;
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_create_open_close) {
  tdir t;
  tdir_make(&t);
  /* a missing file without dim: not created, the message says how */
  open_fails(t.path, NULL, 0, STORE_EIO, "give dim= to create a store");
  store_opts o = opts(DIM, STORE_L2, STORE_F32);
  o.no_create = 1;
  open_fails(t.path, &o, 0, STORE_EIO, "No such file");
  o.no_create = 0;
  open_fails(t.path, &o, 1, STORE_EIO, "No such file"); /* readonly never creates */
  ck_assert_int_eq(nfiles(&t), 0);

  o.agent = "agent-7";
  o.embedder = "test-embedder";
  store *s = open_ok(t.path, &o, 0);
  ck_assert(exists(t.path));
  ck_assert_int_eq(store_dim(s), DIM);
  ck_assert_int_eq(store_metric(s), STORE_L2);
  ck_assert_int_eq(store_storage(s), STORE_F32);
  ck_assert_str_eq(store_path(s), t.path);
  ck_assert_int_eq(store_index(s, NULL), STORE_INDEX_FLAT);
  ck_assert_uint_eq(store_count(s), 0);
  ck_assert_uint_eq(store_npos(s), 0);
  ck_assert_int_eq(store_max_id(s), 0);
  char buf[64];
  ck_assert_int_eq(store_attr(s, "agent", buf, sizeof buf), STORE_OK);
  ck_assert_str_eq(buf, "agent-7");
  ck_assert_int_eq(store_attr(s, "embedder", buf, sizeof buf), STORE_OK);
  ck_assert_str_eq(buf, "test-embedder");
  ck_assert_int_eq(store_attr(s, "no_such_attribute", buf, sizeof buf), STORE_ENOTFOUND);
  ck_assert_int_eq(store_close(s), STORE_OK);

  /* opening it again: without options, and with options that agree */
  s = open_ok(t.path, NULL, 0);
  ck_assert_int_eq(store_dim(s), DIM);
  ck_assert_int_eq(store_metric(s), STORE_L2);
  ck_assert_int_eq(store_storage(s), STORE_F32);
  ck_assert_int_eq(store_close(s), STORE_OK);
  s = open_ok(t.path, &o, 1);
  ck_assert_int_eq(store_dim(s), DIM);
  ck_assert_int_eq(store_close(s), STORE_OK);

  /* options that disagree name both values */
  store_opts b = opts(DIM + 1, STORE_L2, STORE_F32);
  open_fails(t.path, &b, 0, STORE_EMISMATCH, "has dim=8, not dim=9");
  b = opts(DIM, STORE_COSINE, STORE_F32);
  open_fails(t.path, &b, 0, STORE_EMISMATCH, "metric=l2, not metric=cosine");
  b = opts(DIM, STORE_L2, STORE_F16);
  open_fails(t.path, &b, 0, STORE_EMISMATCH, "storage=float32, not storage=float16");
  b = opts(DIM, STORE_L2, STORE_F32);
  b.index = STORE_INDEX_HNSW;
  open_fails(t.path, &b, 0, STORE_EMISMATCH, "has index=flat, not index=hnsw");
  store_close(NULL); /* a no-op */
  t_rmdir(t.dir);
}
END_TEST

/* Bad options at creation: refused, the message naming the option, no file made. */
START_TEST(test_create_bad_options) {
  tdir t;
  tdir_make(&t);
  store_opts o = opts(65537, STORE_COSINE, STORE_F32);
  open_fails(t.path, &o, 0, STORE_EINVAL, "dim=65537: expected 1..65536");
  o = opts(DIM, STORE_COSINE, 3);
  open_fails(t.path, &o, 0, STORE_EINVAL, "storage must be float16 or float32");
  o = opts(DIM, STORE_COSINE, STORE_F32);
  o.index = STORE_INDEX_IVF;
  o.ivf_pq_m = 3;
  open_fails(t.path, &o, 0, STORE_EINVAL, "pq_m=3 must divide dim=8");
  o = opts(DIM, STORE_COSINE, STORE_F32);
  o.tokenize = "trigram";
  open_fails(t.path, &o, 0, STORE_EINVAL, "trigram");
  o = opts(DIM, STORE_COSINE, STORE_F32);
  o.agent = "bad \xff agent";
  open_fails(t.path, &o, 0, STORE_EINVAL, "agent: invalid UTF-8 at byte 4");
  const char *bad_attrs[] = {"origin", "x", NULL};
  o = opts(DIM, STORE_COSINE, STORE_F32);
  o.attrs = bad_attrs;
  open_fails(t.path, &o, 0, STORE_EINVAL, "attribute 'origin'");
  ck_assert_int_eq(nfiles(&t), 0);
  /* a good extra attribute is kept */
  const char *attrs[] = {"migrated_from", "vec0", NULL};
  o.attrs = attrs;
  store *s = open_ok(t.path, &o, 0);
  char buf[32];
  ck_assert_int_eq(store_attr(s, "migrated_from", buf, sizeof buf), STORE_OK);
  ck_assert_str_eq(buf, "vec0");
  finish(s, &t);
}
END_TEST

/* Every column put and read back: in the transaction, committed, from the
** log of a fresh handle, and from the file after a checkpoint (where
** store_get reads only the columns asked for). */
START_TEST(test_put_get_columns) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 0, opts(DIM, STORE_COSINE, STORE_F32));
  ck_assert_int_eq(store_begin(s), STORE_OK);
  int64_t next = put_new(s, &r, 1, 40);
  /* one with every string present and non-empty, one with none at all */
  mrec_make(&model[next], next, &r);
  for (int k = 0; k < 6; k++) {
    model[next].has[k] = 1;
    snprintf(model[next].str[k], sizeof model[next].str[k], "%s é %d", colname[k], k);
    model[next].len[k] = strlen(model[next].str[k]);
  }
  model[next].has_emb = 1;
  put_ok(s, &model[next++]);
  mrec_make(&model[next], next, &r);
  memset(model[next].has, 0, sizeof model[next].has);
  model[next].has_emb = 0;
  model[next].last_access = STORE_NULL_TIME;
  put_ok(s, &model[next++]);
  check_model(s); /* visible to this handle at once */
  ck_assert_int_eq(store_max_id(s), next - 1);
  commit_ok(s);
  check_model(s);

  /* a second handle reads them from the log */
  store *rd = open_ok(t.path, NULL, 1);
  check_model(rd);
  store_log_info li;
  char note[256];
  store_log(rd, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 1);
  ck_assert_str_eq(note, "");
  store_close(rd);

  /* after a checkpoint, from the file */
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  store_log(s, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 0);
  check_model(s);
  s = reopen(s, &t, 0);
  ck_assert_int_eq(store_max_id(s), next - 1);
  /* base rows, column by column: each call adds what it asks for */
  uint64_t pos;
  ck_assert_int_eq(store_find(s, next - 2, &pos), STORE_OK);
  store_view v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(store_get(s, pos, STORE_V_NUM, &v), STORE_OK);
  ck_assert(v.have & STORE_V_NUM);
  check_view(&v, &model[next - 2], STORE_V_NUM);
  ck_assert_int_eq(store_get(s, pos, STORE_V_TAGS | STORE_V_EMB, &v), STORE_OK);
  ck_assert((v.have & (STORE_V_NUM | STORE_V_TAGS | STORE_V_EMB)) == (STORE_V_NUM | STORE_V_TAGS | STORE_V_EMB));
  check_view(&v, &model[next - 2], STORE_V_NUM | STORE_V_TAGS | STORE_V_EMB);
  /* the string column as codes: equal strings, equal codes */
  const uint32_t *codes;
  uint64_t ncodes;
  uint32_t code;
  const mrec *m = &model[next - 2];
  ck_assert_int_eq(store_str_codes(s, STORE_V_SOURCE, m->str[1], m->len[1], &codes, &ncodes, &code),
                   STORE_OK);
  ck_assert_uint_eq(ncodes, store_npos(s));
  ck_assert_uint_eq(codes[pos], code);
  ck_assert_int_eq(store_str_codes(s, STORE_V_SOURCE, "never stored", 12, &codes, &ncodes, &code),
                   STORE_OK);
  ck_assert_uint_eq(code, UINT32_MAX);
  finish(s, &t);
}
END_TEST

/* float16 storage: values float16 holds exactly come back bit for bit. */
START_TEST(test_float16) {
  tdir t;
  store *s = new_store(&t, opts(4, STORE_L2, STORE_F16));
  const float e[4] = {1.0f, -2.0f, 0.5f, 0.0f};
  const uint16_t h[4] = {0x3c00, 0xc000, 0x3800, 0x0000};
  store_rec r;
  memset(&r, 0, sizeof r);
  r.id = 3;
  r.emb = e;
  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_put(s, &r), STORE_OK);
  commit_ok(s);
  for (int round = 0; round < 2; round++) {
    uint64_t pos;
    ck_assert_int_eq(store_find(s, 3, &pos), STORE_OK);
    store_view v;
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(store_get(s, pos, STORE_V_EMB, &v), STORE_OK);
    ck_assert_ptr_nonnull(v.emb);
    ck_assert_mem_eq(v.emb, h, sizeof h);
    ck_assert_int_eq(store_checkpoint(s), STORE_OK); /* then from the file */
  }
  finish(s, &t);
}
END_TEST

/* Deletes in the delta and of file rows, updates (delete + put of the
** same id), a taken id refused, a missing id not found. */
START_TEST(test_delete_update) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 1, opts(DIM, STORE_DOT, STORE_F32));
  put_file_delta(s, &r, 30, 10); /* 1..30 in the file, 31..40 in the delta */
  for (int64_t id = 2; id <= 40; id += 3) delete_ok(s, id);
  /* an update: the same id again, new values */
  ck_assert_int_eq(store_delete(s, 4), STORE_OK);
  mrec_make(&model[4], 4, &r);
  put_ok(s, &model[4]);
  check_model(s);
  commit_ok(s);
  check_model(s);

  uint64_t npos = store_npos(s), count = store_count(s);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  int rc = store_delete(s, 2); /* deleted above */
  ck_assert_int_eq(rc, STORE_ENOTFOUND);
  ck_assert_str_eq(store_errmsg(s), "no record with id 2");
  ck_assert_int_eq(store_delete(s, 999), STORE_ENOTFOUND);
  ck_assert_str_eq(store_errmsg(s), "no record with id 999");
  mrec dup;
  mrec_make(&dup, 6, &r); /* a file row */
  store_rec dr = rec_of(&dup);
  ck_assert_int_eq(store_put(s, &dr), STORE_EEXISTS);
  ck_assert_str_eq(store_errmsg(s), "id 6 exists");
  dr.id = 31; /* in the delta */
  ck_assert_int_eq(store_put(s, &dr), STORE_EEXISTS);
  ck_assert_str_eq(store_errmsg(s), "id 31 exists");
  ck_assert_uint_eq(store_npos(s), npos);
  ck_assert_uint_eq(store_count(s), count);
  check_model(s); /* 6 and 31 unchanged */
  commit_ok(s);

  /* a dead position is not readable */
  uint64_t p;
  ck_assert_int_eq(store_find(s, 1, &p), STORE_OK);
  for (p = 0; p < store_npos(s) && store_pos_live(s, p); p++) {
  }
  ck_assert_uint_lt(p, store_npos(s));
  store_view v;
  memset(&v, 0, sizeof v);
  ck_assert_int_eq(store_get(s, p, STORE_V_ALL, &v), STORE_ENOTFOUND);
  ck_assert_int_eq(store_get(s, store_npos(s) + 5, STORE_V_ALL, &v), STORE_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(store_errmsg(s), "no record at position"));

  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  check_model(s);
  s = reopen(s, &t, 0);
  ck_assert_int_eq(store_max_id(s), 40);
  finish(s, &t);
}
END_TEST

/* Transactions: refused outside one and inside one; rollback takes back
** puts and deletes (of file and delta rows); savepoints undo to a mark. */
START_TEST(test_transactions) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 2, opts(DIM, STORE_L2, STORE_F32));
  mrec m;
  mrec_make(&m, 1, &r);
  store_rec rr = rec_of(&m);
  ck_assert_int_eq(store_put(s, &rr), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "no transaction is open");
  ck_assert_int_eq(store_delete(s, 1), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "no transaction is open");
  ck_assert_uint_eq(store_count(s), 0);

  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_begin(s), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "a transaction is open");
  ck_assert_int_eq(store_checkpoint(s), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "cannot checkpoint inside a transaction");
  int64_t next = put_new(s, &r, 1, 20);
  commit_ok(s);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  next = put_commit(s, &r, next, 10); /* 1..20 in the file, 21..30 in the delta */
  check_model(s);

  /* a rolled-back transaction leaves nothing */
  static mrec saved[MAXR];
  memcpy(saved, model, sizeof model);
  uint64_t npos = store_npos(s);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  put_new(s, &r, next, 5);
  delete_ok(s, 3);    /* a file row */
  delete_ok(s, 25);   /* a delta row */
  delete_ok(s, next); /* one put in this transaction */
  check_model(s);
  store_rollback(s);
  memcpy(model, saved, sizeof model);
  check_model(s);
  ck_assert_uint_eq(store_npos(s), npos);
  store_rollback(s); /* none open: a no-op */
  check_model(s);

  /* savepoints */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  next = put_new(s, &r, next, 3);
  delete_ok(s, 7);
  static mrec at1[MAXR], at2[MAXR];
  memcpy(at1, model, sizeof model);
  uint64_t m1 = store_mark(s);
  int64_t next1 = next;
  next = put_new(s, &r, next, 4);
  delete_ok(s, 8);
  delete_ok(s, 22);
  memcpy(at2, model, sizeof model);
  uint64_t m2 = store_mark(s);
  next = put_new(s, &r, next, 2);
  delete_ok(s, 9);
  check_model(s);
  ck_assert_int_eq(store_undo_to(s, m2), STORE_OK);
  memcpy(model, at2, sizeof model);
  check_model(s);
  ck_assert_int_eq(store_undo_to(s, m1), STORE_OK);
  memcpy(model, at1, sizeof model);
  check_model(s);
  next = next1;
  /* the ids the undone puts used are free again */
  next = put_new(s, &r, next, 2);
  commit_ok(s);
  check_model(s);
  /* an empty transaction commits */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  commit_ok(s);
  /* a transaction open at close is rolled back */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  mrec lost;
  mrec_make(&lost, next, &r);
  put_ok(s, &lost);
  s = reopen(s, &t, 0);
  ck_assert_int_eq(store_find(s, next, &npos), STORE_ENOTFOUND);
  finish(s, &t);
}
END_TEST

/* A child commits some transactions, leaves one open and exits without
** closing: the store reopened holds the committed ones, replayed from the
** log, and not the open one.  Then the log's last frame torn. */
START_TEST(test_crash_keeps_committed) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 3, opts(DIM, STORE_COSINE, STORE_F32));
  int64_t next = put_commit(s, &r, 1, 10);
  ck_assert_int_eq(store_close(s), STORE_OK); /* 1..10 in the file */
  /* what the child writes, made before it runs: 11..15 committed, 3
  ** deleted and committed, 16..18 put in a transaction left open */
  for (int64_t id = next; id < next + 8; id++) mrec_make(&model[id], id, &r);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char err[512];
    store *c = NULL;
    int ok = store_open(t.path, NULL, 0, &c, err, sizeof err) == STORE_OK && store_begin(c) == STORE_OK;
    for (int64_t id = next; ok && id < next + 5; id++) {
      store_rec cr = rec_of(&model[id]);
      ok = store_put(c, &cr) == STORE_OK;
    }
    ok = ok && store_commit(c, 0) == STORE_OK && store_begin(c) == STORE_OK &&
         store_delete(c, 3) == STORE_OK && store_commit(c, 0) == STORE_OK && store_begin(c) == STORE_OK;
    for (int64_t id = next + 5; ok && id < next + 8; id++) {
      store_rec cr = rec_of(&model[id]);
      ok = store_put(c, &cr) == STORE_OK;
    }
    _exit(ok ? 0 : 1); /* no close, no checkpoint, no rollback */
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
  for (int64_t id = next + 5; id < next + 8; id++) model[id].live = 0;
  model[3].live = 0;
  s = open_ok(t.path, NULL, 1); /* a reader: it changes nothing */
  check_model(s);
  store_log_info li;
  char note[256];
  store_log(s, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 2);
  store_close(s);

  /* the log's last frame torn: the transactions before it remain */
  ck_assert_int_eq(truncate(t.wal, file_size(t.wal) - 1), 0);
  model[3].live = 1;
  s = open_ok(t.path, NULL, 1);
  check_model(s);
  store_log(s, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 1);
  store_close(s);
  /* the writer replays the same, and its checkpoint keeps it */
  s = open_ok(t.path, NULL, 0);
  check_model(s);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  s = reopen(s, &t, 1);
  store_close(s);
  t_rmdir(t.dir);
}
END_TEST

/* Strings that are not UTF-8 or hold a NUL byte, in each column: refused
** with the column and the byte named, nothing changed, and the
** transaction goes on.  Other refused calls likewise, among them an
** embedding that is not finite (a NaN first element is how the store marks
** "no embedding": it was taken, and read back as none after a checkpoint).
** (An embedding is dim floats by contract, so its length is not checked.) */
START_TEST(test_bad_arguments) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 4, opts(DIM, STORE_COSINE, STORE_F32));
  int64_t next = put_file_delta(s, &r, 10, 5);
  uint64_t npos = store_npos(s), count = store_count(s);
  int64_t max_id = store_max_id(s);
  static const struct {
    const char *p;
    size_t n;
    const char *why;
  } bad[] = {
      {"abc\xff", 4, "invalid UTF-8 at byte 3"},
      {"ab\xc3", 3, "invalid UTF-8 at byte 2"},   /* cut in the middle of a character */
      {"\xed\xa0\x80", 3, "invalid UTF-8 at byte 0"}, /* a surrogate */
      {"a\0b", 3, "a NUL byte at byte 1"},
  };
  for (int k = 0; k < 6; k++)
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
      mrec m;
      mrec_make(&m, 500, &r);
      store_rec rr = rec_of(&m);
      const char **sp[6] = {&rr.text, &rr.source, &rr.session, &rr.tags, &rr.tier, &rr.meta};
      size_t *lp[6] = {&rr.text_len, &rr.source_len, &rr.session_len, &rr.tags_len, &rr.tier_len,
                       &rr.meta_len};
      *sp[k] = bad[b].p;
      *lp[k] = bad[b].n;
      int rc = store_put(s, &rr);
      ck_assert_msg(rc == STORE_EINVAL, "%s %zu: %d", colname[k], b, rc);
      char want[64];
      snprintf(want, sizeof want, "%s: %s", colname[k], bad[b].why);
      ck_assert_str_eq(store_errmsg(s), want);
      uint64_t pos;
      ck_assert_int_eq(store_find(s, 500, &pos), STORE_ENOTFOUND);
      ck_assert_uint_eq(store_npos(s), npos);
      ck_assert_uint_eq(store_count(s), count);
      ck_assert_int_eq(store_max_id(s), max_id);
    }
  /* embeddings that are not finite */
  for (int e = 0; e < 3; e++) {
    mrec m;
    mrec_make(&m, 501, &r);
    store_rec rr = rec_of(&m);
    float v[DIM];
    for (int i = 0; i < DIM; i++) v[i] = 0.5f;
    v[e] = e == 1 ? INFINITY : e == 2 ? -INFINITY : NAN;
    rr.emb = v;
    ck_assert_int_eq(store_put(s, &rr), STORE_EINVAL);
    char want[96];
    snprintf(want, sizeof want, "embedding: element %d is not finite (NaN or infinity)", e);
    ck_assert_str_eq(store_errmsg(s), want);
    uint64_t pos;
    ck_assert_int_eq(store_find(s, 501, &pos), STORE_ENOTFOUND);
    ck_assert_uint_eq(store_count(s), count);
  }
  /* a float16 store refuses what float16 cannot hold (as SQL does: above
  ** 65504, its largest), and takes its largest value */
  {
    tdir t16;
    store_opts o16 = opts(4, STORE_L2, STORE_F16);
    store *h = new_store(&t16, o16);
    ck_assert_int_eq(store_begin(h), STORE_OK);
    store_rec rr;
    memset(&rr, 0, sizeof rr);
    float big[4] = {1, -70000, 0, 0};
    rr.id = 1;
    rr.emb = big;
    ck_assert_int_eq(store_put(h, &rr), STORE_EINVAL);
    ck_assert_str_eq(store_errmsg(h), "embedding: element 1 (-70000) is outside float16's range");
    big[1] = 65505; /* (would round to 65504) */
    ck_assert_int_eq(store_put(h, &rr), STORE_EINVAL);
    ck_assert_uint_eq(store_count(h), 0);
    big[1] = 65504;
    ck_assert_int_eq(store_put(h, &rr), STORE_OK);
    ck_assert_uint_eq(store_count(h), 1);
    ck_assert_int_eq(store_commit(h, 0), STORE_OK);
    finish(h, &t16);
  }
  /* a graph table that does not exist */
  store_grec g;
  memset(&g, 0, sizeof g);
  g.id = 1;
  ck_assert_int_eq(store_g_put(s, 7, &g), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "no graph table 7");
  ck_assert_int_eq(store_g_delete(s, -1, 1), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "no graph table -1");
  /* the transaction goes on and commits what it had */
  next = put_new(s, &r, next, 1);
  commit_ok(s);
  check_model(s);
  /* codes of one string column at a time */
  const uint32_t *codes;
  uint64_t ncodes;
  uint32_t code;
  ck_assert_int_eq(store_str_codes(s, STORE_V_TEXT | STORE_V_TAGS, "a", 1, &codes, &ncodes, &code),
                   STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "store_str_codes: one string column at a time");
  ck_assert_int_eq(store_close(s), STORE_OK);

  /* a read-only handle does not write */
  s = open_ok(t.path, NULL, 1);
  int rc = store_begin(s);
  ck_assert_int_eq(rc, STORE_EINVAL);
  char want[700];
  snprintf(want, sizeof want, "%s is open read-only", t.path);
  ck_assert_str_eq(store_errmsg(s), want);
  ck_assert_int_eq(store_checkpoint(s), STORE_EINVAL);
  store_close(s);
  s = open_ok(t.path, NULL, 0);
  check_model(s);
  finish(s, &t);
}
END_TEST

/* One writer: a second handle that wants to write is busy until the first
** closes; reading goes on meanwhile, and a reader sees commits when it
** refreshes. */
START_TEST(test_second_writer_busy) {
  tdir t;
  t_rng r;
  store *a = start(&t, &r, 5, opts(DIM, STORE_L2, STORE_F32));
  int64_t next = put_commit(a, &r, 1, 5);
  store *b = open_ok(t.path, NULL, 0);  /* opening takes no lock */
  store *rd = open_ok(t.path, NULL, 1);
  check_model(b);
  ck_assert_int_eq(store_begin(b), STORE_EBUSY);
  char want[700];
  snprintf(want, sizeof want, "the store %s is being written by another connection or process", t.path);
  ck_assert_str_eq(store_errmsg(b), want);
  ck_assert_int_eq(store_checkpoint(b), STORE_EBUSY);
  /* and a writer in another process */
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char err[512];
    store *c = NULL;
    if (store_open(t.path, NULL, 0, &c, err, sizeof err) != STORE_OK) _exit(100);
    int rc = store_begin(c);
    _exit(rc == STORE_EBUSY && strstr(store_errmsg(c), "is being written by another") ? 0 : 101);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the other process: status %d", status);
  /* b is not in a transaction */
  mrec m;
  mrec_make(&m, 100, &r);
  store_rec rr = rec_of(&m);
  ck_assert_int_eq(store_put(b, &rr), STORE_EINVAL);
  check_model(b);

  /* the writer's open transaction is not seen by a reader; its commit is,
  ** after a refresh */
  ck_assert_int_eq(store_begin(a), STORE_OK);
  static mrec before[MAXR];
  memcpy(before, model, sizeof model);
  next = put_new(a, &r, next, 3);
  static mrec after[MAXR];
  memcpy(after, model, sizeof model);
  memcpy(model, before, sizeof model);
  ck_assert_int_eq(store_refresh(rd), STORE_OK);
  check_model(rd);
  commit_ok(a);
  check_model(rd); /* its view is as of its last refresh */
  memcpy(model, after, sizeof model);
  ck_assert_int_eq(store_refresh(rd), STORE_OK);
  check_model(rd);
  ck_assert_int_eq(store_refresh(b), STORE_OK);
  check_model(b);

  /* the first writer closes: the second may write */
  ck_assert_int_eq(store_close(a), STORE_OK);
  ck_assert_int_eq(store_begin(b), STORE_OK);
  check_model(b);
  next = put_new(b, &r, next, 2);
  commit_ok(b);
  ck_assert_int_eq(store_close(b), STORE_OK);
  ck_assert_int_eq(store_refresh(rd), STORE_OK);
  check_model(rd);
  store_close(rd);
  t_rmdir(t.dir);
}
END_TEST

static void copy_file(const char *from, const char *to) {
  FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(g);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) ck_assert_uint_eq(fwrite(buf, 1, n, g), n);
  fclose(f);
  ck_assert_int_eq(fclose(g), 0);
}

/* Bytes of path at off overwritten with n copies of c. */
static void scribble(const char *path, off_t off, size_t n, int c) {
  int fd = open(path, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  char buf[256];
  ck_assert_uint_le(n, sizeof buf);
  memset(buf, c, n);
  ck_assert_int_eq(pwrite(fd, buf, n, off), (ssize_t)n);
  close(fd);
}

/* A damaged file: the corrupt code, a message saying what is wrong, and
** the file as it was (a reader or a writer that fails to open changes
** nothing). */
START_TEST(test_damaged_file) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 6, opts(DIM, STORE_COSINE, STORE_F32));
  put_commit(s, &r, 1, 200);
  ck_assert_int_eq(store_close(s), STORE_OK);
  char good[700];
  snprintf(good, sizeof good, "%s/good.h5", t.dir);
  copy_file(t.path, good);
  off_t size = file_size(t.path);

  /* the superblock's signature */
  scribble(t.path, 0, 8, 'x');
  open_fails(t.path, NULL, 1, STORE_ECORRUPT, "not an HDF5 file");
  open_fails(t.path, NULL, 0, STORE_ECORRUPT, "not an HDF5 file");
  ck_assert_int_eq(file_size(t.path), size);
  /* the file cut short: its data lies outside it */
  copy_file(good, t.path);
  ck_assert_int_eq(truncate(t.path, size / 2), 0);
  open_fails(t.path, NULL, 1, STORE_ECORRUPT, "truncated file");
  open_fails(t.path, NULL, 0, STORE_ECORRUPT, "truncated file");
  ck_assert_int_eq(file_size(t.path), size / 2);
  /* an empty file */
  ck_assert_int_eq(truncate(t.path, 0), 0);
  open_fails(t.path, NULL, 0, STORE_ECORRUPT, "is not an HDF5 file (0 bytes)");
  /* the good copy opens */
  copy_file(good, t.path);
  s = open_ok(t.path, NULL, 1);
  check_model(s);
  store_close(s);
  t_rmdir(t.dir);
}
END_TEST

/* A checkpoint that finds the file damaged (another file renamed over it,
** signature overwritten or cut short): the corrupt code, the file left as
** it is, and every commit still in the log for the next checkpoint. */
START_TEST(test_checkpoint_damaged_file) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 17, opts(DIM, STORE_COSINE, STORE_F32));
  int64_t next = put_commit(s, &r, 1, 50);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  put_commit(s, &r, next, 10); /* in the log only */
  char good[700], bad[700];
  snprintf(good, sizeof good, "%s/good.h5", t.dir);
  snprintf(bad, sizeof bad, "%s/bad.h5", t.dir);
  copy_file(t.path, good);
  off_t size = file_size(t.path);
  for (int cut = 0; cut < 2; cut++) {
    copy_file(good, bad);
    if (cut) ck_assert_int_eq(truncate(bad, size / 2), 0);
    else scribble(bad, 0, 8, 'x');
    ck_assert_int_eq(rename(bad, t.path), 0);
    int rc = store_checkpoint(s);
    ck_assert_msg(rc == STORE_ECORRUPT, "checkpoint of a %s file: %d %s", cut ? "cut" : "scribbled", rc,
                  store_errmsg(s));
    ck_assert_msg(strstr(store_errmsg(s), "checkpoint of") && strstr(store_errmsg(s), t.path),
                  "message: %s", store_errmsg(s));
    ck_assert_int_eq(file_size(t.path), cut ? size / 2 : size);
  }
  copy_file(good, bad);
  ck_assert_int_eq(rename(bad, t.path), 0);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  s = reopen(s, &t, 1);
  finish(s, &t);
}
END_TEST

/* A store path that is a directory: an I/O error (the operating system's
** refusal), not a damaged file, whether opening, writing or creating. */
START_TEST(test_path_is_directory) {
  tdir t;
  tdir_make(&t);
  ck_assert_int_eq(mkdir(t.path, 0755), 0);
  open_fails(t.path, NULL, 1, STORE_EIO, "is not a regular file");
  open_fails(t.path, NULL, 0, STORE_EIO, "is not a regular file");
  store_opts o = opts(DIM, STORE_L2, STORE_F32);
  open_fails(t.path, &o, 0, STORE_EIO, "is not a regular file");
  ck_assert_int_eq(rmdir(t.path), 0);
  t_rmdir(t.dir);
}
END_TEST

/* The first writer makes the log; with no room for its header (a file
** size limit below 64 bytes) store_begin is full, not an I/O error, and
** nothing is lost: without the limit the store writes again. */
START_TEST(test_log_no_room) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 18, opts(DIM, STORE_L2, STORE_F32));
  int64_t next = put_commit(s, &r, 1, 5);
  ck_assert_int_eq(store_close(s), STORE_OK);
  ck_assert_int_eq(unlink(t.wal), 0); /* (checkpointed at close: the next writer makes it anew) */
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) { /* RLIMIT_FSIZE binds the whole process */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(100);
    rl.rlim_cur = 32;
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(101);
    char err[512];
    store *c = NULL;
    if (store_open(t.path, NULL, 0, &c, err, sizeof err) != STORE_OK) _exit(102);
    int rc = store_begin(c);
    if (rc != STORE_EFULL) _exit(103);
    if (!strstr(store_errmsg(c), "no space left") || !strstr(store_errmsg(c), t.wal)) _exit(104);
    store_close(c);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the limited writer: status %d", status);
  s = open_ok(t.path, NULL, 0);
  check_model(s);
  put_commit(s, &r, next, 3);
  s = reopen(s, &t, 0);
  finish(s, &t);
}
END_TEST

/* Replace every descriptor of this process open for reading and writing
** on path (the writer's lock and its log) with one open for reading only,
** so that the gate's write lock on it fails (EBADF); returns how many. */
static int make_wal_readonly(const char *path) {
  char want[PATH_MAX], link[PATH_MAX], name[64];
  ck_assert_ptr_nonnull(realpath(path, want));
  int ro = open(path, O_RDONLY);
  ck_assert_int_ge(ro, 0);
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd == ro || fd == dirfd(d)) continue;
    snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(name, link, sizeof link - 1);
    if (k <= 0) continue;
    link[k] = 0;
    int fl = fcntl(fd, F_GETFL);
    if (strcmp(link, want) != 0 || fl < 0 || (fl & O_ACCMODE) != O_RDWR) continue;
    ck_assert_int_eq(dup2(ro, fd), fd);
    n++;
  }
  closedir(d);
  close(ro);
  return n;
}

/* The gate's lock call failing (not another holding it): GATE_EIO, and a
** checkpoint that cannot take it is an I/O error, not busy; the file is
** as it was and the log keeps every commit. */
START_TEST(test_gate_io_error) {
  const char *ng = getenv("H5MEM_NO_GATE");
  if (ng && *ng && strcmp(ng, "0") != 0) return; /* (no gate to fail) */
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 19, opts(DIM, STORE_L2, STORE_F32));
  /* the gate alone: a lock the descriptor's mode does not allow */
  char file[700];
  snprintf(file, sizeof file, "%s/gate", t.dir);
  int fd = open(file, O_RDWR | O_CREAT, 0644);
  ck_assert_int_ge(fd, 0);
  close(fd);
  fd = open(file, O_RDONLY);
  int g = gate_write_begin(fd);
  close(fd);
  if (g == GATE_NONE) { /* (no open file description locks on this system) */
    finish(s, &t);
    return;
  }
  ck_assert_int_eq(g, GATE_EIO);
  fd = open(file, O_WRONLY);
  errno = 0;
  ck_assert_int_eq(gate_read_begin(fd), GATE_EIO);
  ck_assert_int_eq(errno, EBADF);
  close(fd);
  /* a checkpoint whose gate lock fails */
  int64_t next = put_commit(s, &r, 1, 20);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  put_commit(s, &r, next, 5);
  off_t size = file_size(t.path);
  ck_assert_int_ge(make_wal_readonly(t.wal), 1);
  int rc = store_checkpoint(s);
  ck_assert_msg(rc == STORE_EIO, "checkpoint: %d %s", rc, store_errmsg(s));
  ck_assert_msg(strstr(store_errmsg(s), "cannot lock") && strstr(store_errmsg(s), t.wal),
                "message: %s", store_errmsg(s));
  ck_assert_int_eq(file_size(t.path), size);
  ck_assert_int_eq(store_close(s), STORE_EIO); /* (its checkpoint at close fails alike) */
  s = open_ok(t.path, NULL, 0);
  check_model(s);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  s = reopen(s, &t, 1);
  finish(s, &t);
}
END_TEST

/* Optimize after deleting most records: the file shrinks, positions are
** only the live records, every record is as it was, before and after
** reopening. */
/* An ephemeral store (no file, no log): the model through puts, deletes,
** a rollback, the memory of deleted records given back (at a commit once
** they outnumber the live, and by optimize) and expiry by a set clock;
** nothing made on disk; a checkpoint refused. */
START_TEST(test_ephemeral) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_L2, STORE_F32);
  store_coldef ex;
  memset(&ex, 0, sizeof ex);
  snprintf(ex.name, sizeof ex.name, "expires_at");
  ex.type = STORE_T_INTEGER;
  ex.role = STORE_R_METADATA;
  o.ephemeral = 1;
  o.cols = &ex;
  o.ncols = 1;
  o.ttl = 100;
  o.agent = "scratch-agent";
  store *s = start(&t, &r, 41, o);
  ck_assert_int_eq(nfiles(&t), 0);
  char buf[64];
  ck_assert_int_eq(store_attr(s, "agent", buf, sizeof buf), STORE_OK);
  ck_assert_str_eq(buf, "scratch-agent");
  store_set_clock(s, 1000);
  ck_assert_int_eq(store_clock(s), 1000);
  int64_t next = put_commit(s, &r, 1, 1500); /* (each expires at 1000 + ttl) */
  check_model(s);
  /* deleted records outnumbering the live: freed at the commit */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int64_t id = 1; id <= 1200; id++) delete_ok(s, id);
  ck_assert_int_eq(store_commit(s, 1), STORE_OK);
  ck_assert_uint_eq(store_npos(s), store_count(s));
  check_model(s);
  /* a rollback */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  int64_t undone = put_new(s, &r, next, 5);
  delete_ok(s, 1300);
  store_rollback(s);
  for (int64_t id = next; id < undone; id++) model[id].live = 0;
  model[1300].live = 1;
  check_model(s);
  /* fewer deleted: kept until optimize */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int64_t id = 1201; id <= 1250; id++) delete_ok(s, id);
  ck_assert_int_eq(store_commit(s, 1), STORE_OK);
  ck_assert_uint_gt(store_npos(s), store_count(s));
  ck_assert_int_eq(store_optimize(s), STORE_OK);
  ck_assert_uint_eq(store_npos(s), store_count(s));
  check_model(s);
  /* expiry by the clock */
  store_set_clock(s, 1099);
  ck_assert_int_eq(store_refresh(s), STORE_OK);
  check_model(s);
  store_set_clock(s, 1100);
  ck_assert_int_eq(store_refresh(s), STORE_OK);
  for (int64_t id = 1; id < next; id++) model[id].live = 0;
  check_model(s);
  ck_assert_uint_eq(store_count(s), 0);
  ck_assert_int_eq(store_checkpoint(s), STORE_EINVAL);
  ck_assert_ptr_nonnull(strstr(store_errmsg(s), "ephemeral store"));
  ck_assert_int_eq(nfiles(&t), 0);
  finish(s, &t);
}
END_TEST

START_TEST(test_optimize) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_L2, STORE_F32);
  o.agent = "optimizer";
  store *s = start(&t, &r, 7, o);
  int64_t next = put_commit(s, &r, 1, 1500);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int64_t id = 1; id < next; id++)
    if (id % 5) delete_ok(s, id);
  next = put_new(s, &r, next, 20); /* and some in the delta */
  commit_ok(s);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  off_t before = file_size(t.path);
  ck_assert_int_eq(store_optimize(s), STORE_OK);
  off_t after = file_size(t.path);
  ck_assert_msg(after < before / 2, "optimize: %lld bytes, was %lld", (long long)after, (long long)before);
  ck_assert_uint_eq(store_npos(s), store_count(s));
  check_model(s);
  char buf[32];
  ck_assert_int_eq(store_attr(s, "agent", buf, sizeof buf), STORE_OK);
  ck_assert_str_eq(buf, "optimizer");
  /* it goes on writing */
  next = put_commit(s, &r, next, 3);
  s = reopen(s, &t, 0);
  ck_assert_int_eq(store_max_id(s), next - 1);
  finish(s, &t);
}
END_TEST

/* ---- knn against brute force ------------------------------------------------ */

typedef struct bf {
  uint64_t pos;
  double dist;
} bf;

static int bf_cmp(const void *a, const void *b) {
  const bf *x = a, *y = b;
  if (x->dist != y->dist) return x->dist < y->dist ? -1 : 1;
  return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The distance store.h's metrics define, in double: cosine 1 - cos
** (clamped to [0, 2]; 1 when a norm is 0), squared L2, negated dot. */
static double distance(int metric, const float *q, const float *e) {
  double dot = 0, nq = 0, ne = 0, l2 = 0;
  for (int i = 0; i < DIM; i++) {
    dot += (double)q[i] * e[i];
    nq += (double)q[i] * q[i];
    ne += (double)e[i] * e[i];
    l2 += ((double)q[i] - e[i]) * ((double)q[i] - e[i]);
  }
  if (metric == STORE_L2) return l2;
  if (metric == STORE_DOT) return -dot;
  if (nq == 0 || ne == 0) return 1;
  double d = 1 - dot / sqrt(nq * ne);
  return d < 0 ? 0 : d > 2 ? 2 : d;
}

/* The allowed live records with a vector, nearest first (*n of them). */
static bf *brute_force(store *s, int metric, const float *q, const uint8_t *allow, uint64_t *n) {
  bf *a = malloc((store_npos(s) + 1) * sizeof *a);
  ck_assert_ptr_nonnull(a);
  *n = 0;
  for (int64_t id = 1; id < MAXR; id++) {
    const mrec *m = &model[id];
    uint64_t pos;
    if (!m->live || !m->has_emb) continue;
    ck_assert_int_eq(store_find(s, id, &pos), STORE_OK);
    if (allow && !(allow[pos / 8] >> (pos % 8) & 1)) continue;
    a[(*n)++] = (bf){pos, distance(metric, q, m->emb)};
  }
  qsort(a, *n, sizeof *a, bf_cmp);
  return a;
}

static int near(double a, double b) { return fabs(a - b) <= 1e-5 * (1 + fabs(b)); }

/* store_knn's answer is the brute-force one: as many results, the same
** distances in order, each result's distance its own, no position twice
** (positions may differ only between records at the same distance). */
static void knn_check(store *s, int metric, const float *q, uint64_t k, const store_filter *flt,
                      const uint8_t *allow, const store_knn_opts *opt) {
  uint64_t nb;
  bf *want = brute_force(s, metric, q, allow, &nb);
  ann_res *out = malloc((size_t)k * sizeof *out);
  ck_assert_ptr_nonnull(out);
  uint64_t nout = UINT64_MAX;
  int rc = store_knn(s, q, k, flt, opt, out, &nout);
  T_CHECK(rc == STORE_OK, "knn: %d %s", rc, store_errmsg(s));
  uint64_t expect = k < nb ? k : nb;
  T_CHECK(nout == expect, "knn k=%llu: %llu results, brute force %llu", (unsigned long long)k,
          (unsigned long long)nout, (unsigned long long)expect);
  for (uint64_t i = 0; i < nout; i++) {
    uint64_t p = out[i].pos;
    T_CHECK(p < store_npos(s) && store_pos_live(s, p), "result %llu: position %llu not live",
            (unsigned long long)i, (unsigned long long)p);
    T_CHECK(!allow || (allow[p / 8] >> (p % 8) & 1), "result %llu: position %llu not allowed",
            (unsigned long long)i, (unsigned long long)p);
    T_CHECK(near(out[i].dist, want[i].dist), "result %llu: distance %.9g, brute force %.9g (metric %d)",
            (unsigned long long)i, out[i].dist, want[i].dist, metric);
    int64_t id = store_pos_id(s, p);
    T_CHECK(model[id].has_emb && near(out[i].dist, distance(metric, q, model[id].emb)),
            "result %llu: id %lld is not at distance %.9g", (unsigned long long)i, (long long)id,
            out[i].dist);
    T_CHECK(i == 0 || out[i - 1].dist < out[i].dist ||
                (out[i - 1].dist == out[i].dist && out[i - 1].pos < out[i].pos),
            "results %llu and %llu out of order", (unsigned long long)i - 1, (unsigned long long)i);
  }
  free(out);
  free(want);
}

static int allow_fn(void *ctx, uint64_t pos) {
  const uint8_t *bits = ctx;
  return bits[pos / 8] >> (pos % 8) & 1;
}

/* A store of n records, some without a vector, some deleted, some in the
** file and some in the delta, searched with every metric, k below and
** above the records, with a bitmap and a function as filter. */
static void knn_store(int metric, int index) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, metric, STORE_F32);
  o.index = index;
  store *s = start(&t, &r, 8 + (uint64_t)metric, o);
  int64_t next = put_file_delta(s, &r, 700, 150);
  for (int64_t id = 3; id < next; id += 11) delete_ok(s, id);
  commit_ok(s);
  if (index == STORE_INDEX_HNSW) {
    store_index_info info;
    ck_assert_int_eq(store_index(s, &info), STORE_INDEX_HNSW);
    ck_assert_uint_gt(info.graph_rows, 0); /* the graph covers the file's rows */
  }
  if (index == STORE_INDEX_IVF) {
    store_index_info info;
    ck_assert_int_eq(store_index(s, &info), STORE_INDEX_IVF);
    ck_assert_uint_gt(info.nlist, 0); /* lists trained at the checkpoint */
  }
  size_t allow_len = store_npos(s) / 8 + 1;
  uint8_t *allow = calloc(allow_len, 1);
  ck_assert_ptr_nonnull(allow);
  uint64_t nallow = 0;
  for (uint64_t p = 0; p < store_npos(s); p++)
    if (store_pos_live(s, p) && (t_next(&r) % 4 == 0)) {
      allow[p / 8] |= (uint8_t)(1u << (p % 8));
      nallow++;
    }
  store_knn_opts exact = {1, 0, 0};
  for (int qi = 0; qi < 4; qi++) {
    float q[DIM];
    for (int i = 0; i < DIM; i++) q[i] = t_unit(&r);
    static const uint64_t ks[] = {1, 10, 100000};
    for (size_t j = 0; j < 3; j++) {
      knn_check(s, metric, q, ks[j], NULL, NULL, &exact);
      store_filter fb = {allow, nallow, NULL, NULL, NULL};
      knn_check(s, metric, q, ks[j], &fb, allow, &exact);
      store_filter ff = {NULL, 0, allow_fn, allow, NULL};
      knn_check(s, metric, q, ks[j], &ff, allow, &exact);
      if (index == STORE_INDEX_FLAT) { /* no graph: every search is exact */
        knn_check(s, metric, q, ks[j], NULL, NULL, NULL);
        knn_check(s, metric, q, ks[j], &fb, allow, NULL);
      }
    }
  }
  /* a record with a vector close to q is found first, in the delta and in the file */
  for (int round = 0; round < 2; round++) {
    float q[DIM];
    for (int i = 0; i < DIM; i++) q[i] = t_unit(&r);
    ck_assert_int_eq(store_begin(s), STORE_OK);
    mrec_make(&model[next], next, &r);
    model[next].has_emb = 1;
    memcpy(model[next].emb, q, sizeof q);
    put_ok(s, &model[next]);
    commit_ok(s);
    if (round) ck_assert_int_eq(store_checkpoint(s), STORE_OK);
    ann_res out[1];
    uint64_t nout = 0;
    ck_assert_int_eq(store_knn(s, q, 1, NULL, metric == STORE_DOT ? &exact : NULL, out, &nout),
                     STORE_OK);
    ck_assert_uint_eq(nout, 1);
    if (metric != STORE_DOT) /* (the nearest by dot need not be q itself) */
      ck_assert_int_eq(store_pos_id(s, out[0].pos), next);
    knn_check(s, metric, q, 5, NULL, NULL, &exact);
    next++;
  }
  /* k = 0 and an empty allowed set: no results */
  float q[DIM] = {1, 0, 0, 0, 0, 0, 0, 0};
  ann_res out[4];
  uint64_t nout = 7;
  ck_assert_int_eq(store_knn(s, q, 0, NULL, NULL, out, &nout), STORE_OK);
  ck_assert_uint_eq(nout, 0);
  ck_assert_uint_le(store_npos(s) / 8 + 1, allow_len);
  memset(allow, 0, allow_len);
  store_filter none = {allow, 0, NULL, NULL, NULL};
  nout = 7;
  ck_assert_int_eq(store_knn(s, q, 4, &none, NULL, out, &nout), STORE_OK);
  ck_assert_uint_eq(nout, 0);
  free(allow);
  finish(s, &t);
}

START_TEST(test_knn_flat) {
  knn_store(STORE_COSINE, STORE_INDEX_FLAT);
  knn_store(STORE_L2, STORE_INDEX_FLAT);
  knn_store(STORE_DOT, STORE_INDEX_FLAT);
}
END_TEST

/* index=hnsw and ivf: exact searches are brute force's answer (above); the
** index's searches (not exact) find at least 90% of the true 10
** nearest of 1000 records, over 20 queries. */
static void recall_check(int index) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_COSINE, STORE_F32);
  o.index = index;
  store *s = start(&t, &r, 20, o);
  put_commit(s, &r, 1, 1000);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  store_index_info info;
  ck_assert_int_eq(store_index(s, &info), index);
  ck_assert_msg(info.graph_rows > 0 || info.nlist > 0, "%s: no index saved (%s)",
                store_index_name(index), info.note);
  uint64_t found = 0, total = 0;
  for (int qi = 0; qi < 20; qi++) {
    float q[DIM];
    for (int i = 0; i < DIM; i++) q[i] = t_unit(&r);
    uint64_t nb;
    bf *want = brute_force(s, STORE_COSINE, q, NULL, &nb);
    ann_res out[10];
    uint64_t nout = 0;
    ck_assert_int_eq(store_knn(s, q, 10, NULL, NULL, out, &nout), STORE_OK);
    ck_assert_uint_eq(nout, 10);
    for (uint64_t i = 0; i < nout; i++)
      for (uint64_t j = 0; j < 10; j++) found += out[i].pos == want[j].pos;
    total += 10;
    free(want);
  }
  ck_assert_msg(found * 10 >= total * 9, "%s: recall %llu / %llu", store_index_name(index),
                (unsigned long long)found, (unsigned long long)total);
  finish(s, &t);
}

START_TEST(test_knn_index) {
  knn_store(STORE_L2, STORE_INDEX_HNSW);
  knn_store(STORE_COSINE, STORE_INDEX_IVF);
  recall_check(STORE_INDEX_HNSW);
  recall_check(STORE_INDEX_IVF);
}
END_TEST

/* A log damaged in its middle (not cut short by a crash): the frames
** before the damage are replayed, the ones after are not, the note says
** so; a writer keeps the damaged log in "<log>.corrupt-1". */
START_TEST(test_log_damaged) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 9, opts(DIM, STORE_COSINE, STORE_F32));
  ck_assert_int_eq(store_close(s), STORE_OK);
  for (int64_t id = 1; id <= 15; id++) mrec_make(&model[id], id, &r);
  fflush(NULL);
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) { /* three transactions of five, then a crash; the log's sizes to the pipe */
    char err[512];
    store *c = NULL;
    uint64_t size[3];
    int ok = store_open(t.path, NULL, 0, &c, err, sizeof err) == STORE_OK;
    for (int k = 0; ok && k < 3; k++) {
      ok = store_begin(c) == STORE_OK;
      for (int64_t id = 1 + 5 * k; ok && id <= 5 + 5 * k; id++) {
        store_rec cr = rec_of(&model[id]);
        ok = store_put(c, &cr) == STORE_OK;
      }
      ok = ok && store_commit(c, 0) == STORE_OK;
      store_log_info li;
      char note[8];
      store_log(c, &li, note, sizeof note);
      size[k] = li.bytes;
    }
    ok = ok && write(fds[1], size, sizeof size) == (ssize_t)sizeof size;
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  uint64_t size[3];
  ck_assert_int_eq(read(fds[0], size, sizeof size), (ssize_t)sizeof size);
  close(fds[0]);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
  ck_assert_uint_eq((uint64_t)file_size(t.wal), size[2]);
  scribble(t.wal, (off_t)(size[0] + size[1]) / 2, 1, 0x5a); /* in the second frame */
  for (int64_t id = 6; id <= 15; id++) model[id].live = 0;
  store *rd = open_ok(t.path, NULL, 1);
  check_model(rd);
  store_log_info li;
  char note[512];
  store_log(rd, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 1);
  ck_assert_msg(strstr(note, "damaged") && strstr(note, "cannot be replayed"), "note: '%s'", note);
  store_close(rd);
  ck_assert_uint_eq((uint64_t)file_size(t.wal), size[2]); /* a reader changes nothing */
  char copy[700];
  snprintf(copy, sizeof copy, "%s.corrupt-1", t.wal);
  ck_assert(!exists(copy));
  s = open_ok(t.path, NULL, 0);
  ck_assert_int_eq(store_begin(s), STORE_OK); /* it becomes the writer */
  store_rollback(s);
  check_model(s);
  ck_assert(exists(copy));
  ck_assert_uint_eq((uint64_t)file_size(copy), size[2]);
  s = reopen(s, &t, 1);
  store_log(s, &li, note, sizeof note);
  ck_assert_msg(strstr(note, ".corrupt-1"), "note: '%s'", note); /* the copy is mentioned */
  store_close(s);
  t_rmdir(t.dir);
}
END_TEST

/* A commit that may checkpoint does so when the log is over the limit;
** one that may not leaves the log. */
START_TEST(test_autocheckpoint) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_COSINE, STORE_F32);
  o.autocheckpoint = 1; /* any frame is over it */
  store *s = start(&t, &r, 10, o);
  store_log_info li;
  char note[256];
  int64_t next = put_commit(s, &r, 1, 5); /* may not checkpoint */
  store_log(s, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 1);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  next = put_new(s, &r, next, 5);
  ck_assert_int_eq(store_commit(s, 1), STORE_OK);
  store_log(s, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 0);
  store *rd = open_ok(t.path, NULL, 1); /* the file alone holds them */
  check_model(rd);
  store_log(rd, &li, note, sizeof note);
  ck_assert_uint_eq(li.frames, 0);
  store_close(rd);
  finish(s, &t);
}
END_TEST

/* ---- changes in place (store_update) ----------------------------------------- */

/* A random patch of a live id, made in the store and in the model (the
** model's previous record into *was, to take it back). */
static void patch_random(store *s, t_rng *r, int64_t id, mrec *was) {
  static const char *const tiers[] = {"working", "episodic", "semantic", "archive", "", "日本語"};
  mrec *m = &model[id];
  *was = *m;
  store_patch p;
  memset(&p, 0, sizeof p);
  p.set = (unsigned)(t_next(r) % 15) + 1;
  p.access_count = (int64_t)(t_next(r) % 100000) - 5;
  p.last_access = t_next(r) % 4 ? (int64_t)(t_next(r) % 2000000000) : STORE_NULL_TIME;
  p.importance = t_next(r) % 5 ? (double)(t_next(r) % 1000) / 100.0 : NAN;
  int tn = (int)(t_next(r) % 7);
  if (tn < 6) {
    p.tier = tiers[tn];
    p.tier_len = strlen(tiers[tn]);
  }
  int rc = store_update(s, id, &p);
  T_CHECK(rc == STORE_OK, "update %lld: %d %s", (long long)id, rc, store_errmsg(s));
  if (p.set & STORE_P_ACCESS_COUNT) m->access_count = p.access_count;
  if (p.set & STORE_P_LAST_ACCESS) m->last_access = p.last_access;
  if (p.set & STORE_P_IMPORTANCE) m->importance = p.importance;
  if (p.set & STORE_P_TIER) {
    m->has[4] = p.tier != NULL;
    memset(m->str[4], 0, sizeof m->str[4]);
    if (p.tier) memcpy(m->str[4], p.tier, p.tier_len);
    m->len[4] = p.tier_len;
  }
}

/* Which live ids have tier t (NULL: NULL), by the string codes the filters
** use (file rows) and store_get (records in memory), against the model. */
static void check_tier_codes(store *s, const char *t) {
  const uint32_t *codes;
  uint64_t ncodes;
  uint32_t code;
  ck_assert_int_eq(store_str_codes(s, STORE_V_TIER, t, t ? strlen(t) : 0, &codes, &ncodes, &code), STORE_OK);
  for (uint64_t pos = 0; pos < store_npos(s); pos++) {
    if (!store_pos_live(s, pos)) continue;
    const mrec *m = &model[store_pos_id(s, pos)];
    int want = t ? m->has[4] && m->len[4] == strlen(t) && !memcmp(m->str[4], t, m->len[4]) : !m->has[4];
    int got;
    if (pos < ncodes) {
      got = codes[pos] == code;
    } else {
      store_view v;
      memset(&v, 0, sizeof v);
      ck_assert_int_eq(store_get(s, pos, STORE_V_TIER, &v), STORE_OK);
      got = t ? v.tier && v.tier_len == strlen(t) && !memcmp(v.tier, t, v.tier_len) : !v.tier;
    }
    T_CHECK(got == want, "id %lld, tier '%s': %d, model %d", (long long)m->id, t ? t : "NULL", got, want);
  }
}

/* Patches of file rows and records in memory, mixed with puts, deletes,
** savepoints and rollbacks, against the model: in the transaction, after
** commits, replayed from the log by a reader and by a writer, through
** checkpoints (the file's rows rewritten in place), and reopened. */
START_TEST(test_update_in_place) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_COSINE, STORE_F32);
  o.chunk_rows = 16; /* many chunks */
  store *s = start(&t, &r, 41, o);
  int64_t next = put_commit(s, &r, 1, 150);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  mrec was[64];
  int64_t wid[64];
  static mrec saved[MAXR];
  for (int round = 0; round < 12; round++) {
    memcpy(saved, model, sizeof model);
    ck_assert_int_eq(store_begin(s), STORE_OK);
    next = put_new(s, &r, next, 5);
    for (int i = 0; i < 40; i++) {
      int64_t id = 1 + (int64_t)(t_next(&r) % (uint64_t)(next - 1));
      if (!model[id].live) continue;
      patch_random(s, &r, id, &was[0]);
    }
    /* a savepoint whose patches, a delete and a re-put are taken back */
    uint64_t mark = store_mark(s);
    int nw = 0;
    for (int i = 0; i < 30 && nw < 64; i++) {
      int64_t id = 1 + (int64_t)(t_next(&r) % (uint64_t)(next - 1));
      if (!model[id].live) continue;
      wid[nw] = id;
      patch_random(s, &r, id, &was[nw++]);
    }
    int64_t gone = 0;
    for (int64_t id = 1; id < next && !gone; id++)
      if (model[id].live && t_next(&r) % 4 == 0) gone = id;
    if (gone) {
      ck_assert_int_eq(store_delete(s, gone), STORE_OK);
      model[gone].live = 0;
    }
    check_model(s);
    check_tier_codes(s, "archive");
    ck_assert_int_eq(store_undo_to(s, mark), STORE_OK);
    while (nw > 0) { /* the model back, in reverse */
      nw--;
      model[wid[nw]] = was[nw];
    }
    if (gone) model[gone].live = 1;
    check_model(s);
    check_tier_codes(s, "archive");
    check_tier_codes(s, NULL);
    /* an update of a patched record (delete + put) keeps the patched values */
    for (int64_t id = 1; id < next; id++)
      if (model[id].live && t_next(&r) % 20 == 0) {
        patch_random(s, &r, id, &was[0]);
        ck_assert_int_eq(store_delete(s, id), STORE_OK);
        model[id].str[0][0] = 'U';
        put_ok(s, &model[id]);
        break;
      }
    if (round % 3 == 2) { /* the whole transaction taken back */
      store_rollback(s);
      memcpy(model, saved, sizeof model);
      next = store_max_id(s) + 1;
      check_model(s);
      continue;
    }
    commit_ok(s);
    check_model(s);
    if (round % 4 == 1) { /* a reader replays the log */
      store *rd = open_ok(t.path, NULL, 1);
      check_model(rd);
      check_tier_codes(rd, "archive");
      store_close(rd);
    }
    if (round % 4 == 3) {
      ck_assert_int_eq(store_checkpoint(s), STORE_OK);
      check_model(s);
      check_tier_codes(s, "archive");
    }
    if (round % 5 == 4) s = reopen(s, &t, 0);
  }
  s = reopen(s, &t, 0);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  s = reopen(s, &t, 1);
  check_tier_codes(s, "archive");
  finish(s, &t);
}
END_TEST

/* The log holds a few dozen bytes per touch, not the record; a checkpoint
** writes about one chunk of each changed column per chunk holding a
** changed row, whatever the number of rows changed in it; bad patches are
** refused, nothing changed; a child's committed patches survive its crash,
** its open transaction's do not. */
START_TEST(test_update_costs) {
  tdir t;
  t_rng r;
  store_opts o = opts(DIM, STORE_COSINE, STORE_F32);
  o.chunk_rows = 256;
  store *s = start(&t, &r, 43, o);
  int64_t next = put_commit(s, &r, 1, 1024); /* 4 chunks */
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  store_patch touch = {STORE_P_ACCESS_COUNT | STORE_P_LAST_ACCESS, 7, 1700000000, 0, NULL, 0};
  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_update(s, 5, &touch), STORE_OK);
  commit_ok(s);
  model[5].access_count = 7;
  model[5].last_access = 1700000000;
  off_t w1 = file_size(t.wal);
  /* header 64, frame 24 + op 1 + id 8 + bits 1 + 16 */
  ck_assert_int_eq((int)w1, 64 + 24 + 26);
  off_t f0 = file_size(t.path);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  off_t g1 = file_size(t.path) - f0;
  /* 200 rows of the same chunk */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int64_t id = 257; id < 457; id++) {
    touch.access_count = id;
    ck_assert_int_eq(store_update(s, id, &touch), STORE_OK);
    model[id].access_count = id;
    model[id].last_access = touch.last_access;
  }
  commit_ok(s);
  off_t f1 = file_size(t.path);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  off_t g200 = file_size(t.path) - f1;
  /* rows in two chunks: one chunk more of each column (256 x 8 bytes, two columns) */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_update(s, 3, &touch), STORE_OK);
  ck_assert_int_eq(store_update(s, 1000, &touch), STORE_OK);
  model[3].access_count = model[1000].access_count = touch.access_count;
  model[3].last_access = model[1000].last_access = touch.last_access;
  commit_ok(s);
  off_t f2 = file_size(t.path);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  off_t g2 = file_size(t.path) - f2;
  ck_assert_msg(g1 > 2 * 2048 && g1 < 2 * 2048 + 16384, "one touch: the file grew by %lld", (long long)g1);
  ck_assert_msg(g200 >= g1 - 64 && g200 <= g1 + 64, "200 touches in one chunk: %lld, one: %lld",
                (long long)g200, (long long)g1);
  ck_assert_msg(g2 >= g1 + 2 * 2048 - 64 && g2 <= g1 + 2 * 2048 + 64, "two chunks: %lld, one: %lld",
                (long long)g2, (long long)g1);
  check_model(s);

  /* refused, nothing changed */
  ck_assert_int_eq(store_update(s, 5, &touch), STORE_EINVAL); /* no transaction */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  store_patch bad = {64, 0, 0, 0, NULL, 0};
  ck_assert_int_eq(store_update(s, 5, &bad), STORE_EINVAL);
  bad.set = STORE_P_IMPORTANCE;
  bad.importance = INFINITY;
  ck_assert_int_eq(store_update(s, 5, &bad), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "importance: not a finite number");
  bad.set = STORE_P_TIER;
  bad.tier = "ab\xff";
  bad.tier_len = 3;
  ck_assert_int_eq(store_update(s, 5, &bad), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "tier: invalid UTF-8 at byte 2");
  bad.tier = "a\0b";
  ck_assert_int_eq(store_update(s, 5, &bad), STORE_EINVAL);
  ck_assert_str_eq(store_errmsg(s), "tier: a NUL byte at byte 1");
  ck_assert_int_eq(store_update(s, next + 5, &touch), STORE_ENOTFOUND);
  ck_assert_int_eq(store_update_at(s, store_npos(s), &touch), STORE_ENOTFOUND);
  ck_assert_uint_eq(store_mark(s), 0);
  /* by position: the same change */
  uint64_t p7;
  ck_assert_int_eq(store_find(s, 7, &p7), STORE_OK);
  touch.access_count = 4242;
  ck_assert_int_eq(store_update_at(s, p7, &touch), STORE_OK);
  model[7].access_count = 4242;
  model[7].last_access = touch.last_access;
  ck_assert_int_eq(store_delete(s, 8), STORE_OK);
  uint64_t p8 = p7 + 1; /* (ids 1..1024 went in in order: 8 is the next row) */
  ck_assert_int_eq(store_pos_id(s, p8), 8);
  ck_assert_int_eq(store_update_at(s, p8, &touch), STORE_ENOTFOUND); /* dead */
  ck_assert_int_eq(store_undo_to(s, store_mark(s) - 1), STORE_OK);   /* (the delete back) */
  commit_ok(s);
  check_model(s);
  ck_assert_int_eq(store_close(s), STORE_OK);

  /* a child commits patches, leaves some in an open transaction, dies */
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    char err[512];
    store *c = NULL;
    store_patch a = {STORE_P_TIER | STORE_P_ACCESS_COUNT, 99, 0, 0, "semantic", 8};
    int ok = store_open(t.path, NULL, 0, &c, err, sizeof err) == STORE_OK && store_begin(c) == STORE_OK &&
             store_update(c, 10, &a) == STORE_OK && store_update(c, 600, &a) == STORE_OK &&
             store_commit(c, 0) == STORE_OK && store_begin(c) == STORE_OK;
    a.access_count = 5;
    ok = ok && store_update(c, 11, &a) == STORE_OK && store_update(c, 10, &a) == STORE_OK;
    _exit(ok ? 0 : 1); /* no close, no checkpoint */
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed");
  for (int k = 0; k < 2; k++) {
    int64_t id = k ? 600 : 10;
    model[id].access_count = 99;
    model[id].has[4] = 1;
    memset(model[id].str[4], 0, sizeof model[id].str[4]);
    memcpy(model[id].str[4], "semantic", 8);
    model[id].len[4] = 8;
  }
  s = open_ok(t.path, NULL, 1);
  check_model(s);
  check_tier_codes(s, "semantic");
  store_close(s);
  s = open_ok(t.path, NULL, 0);
  check_model(s);
  finish(s, &t);
}
END_TEST

/* The .h5 file replaced by an older copy of itself while its log went on:
** frames between the copy's checkpoint and the log's first are in neither
** file.  A reader and a writer refuse it at once (corrupt, saying what
** happened and what to do), changing nothing; without the log the older
** file opens as it is. */
START_TEST(test_file_older_than_log) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 47, opts(DIM, STORE_COSINE, STORE_F32));
  int64_t next = put_commit(s, &r, 1, 5);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  char old[700], wal[700];
  snprintf(old, sizeof old, "%s/old.h5", t.dir);
  snprintf(wal, sizeof wal, "%s/saved-wal", t.dir);
  copy_file(t.path, old);
  next = put_commit(s, &r, next, 5);
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  next = put_commit(s, &r, next, 5);
  copy_file(t.wal, wal); /* a log with a frame after the second checkpoint */
  ck_assert_int_eq(store_close(s), STORE_OK);
  copy_file(old, t.path);
  copy_file(wal, t.wal);
  off_t wsize = file_size(t.wal), hsize = file_size(t.path);
  for (int readonly = 1; readonly >= 0; readonly--) {
    store *x = NULL;
    char err[1024];
    int rc = store_open(t.path, NULL, readonly, &x, err, sizeof err);
    ck_assert_msg(rc == STORE_ECORRUPT, "readonly %d: %d %s", readonly, rc, err);
    ck_assert_msg(strstr(err, "the file is older than its log") && strstr(err, "frames 2..2 are in neither") &&
                  strstr(err, "move the log aside"), "message: %s", err);
    ck_assert_ptr_null(x);
  }
  ck_assert_int_eq(file_size(t.wal), wsize);
  ck_assert_int_eq(file_size(t.path), hsize);
  ck_assert_int_eq(unlink(t.wal), 0); /* moved aside: the copy as it was */
  s = open_ok(t.path, NULL, 0);
  ck_assert_uint_eq(store_count(s), 5);
  finish(s, &t);
}
END_TEST

/* The graph's tables share the memories' transactions: a rollback or an
** undo to a mark takes back both. */
START_TEST(test_graph_in_transactions) {
  tdir t;
  t_rng r;
  store *s = start(&t, &r, 11, opts(DIM, STORE_COSINE, STORE_F32));
  store_grec e;
  memset(&e, 0, sizeof e);
  e.s[0] = "Ada";
  e.n[0] = 3;
  ck_assert_int_eq(store_begin(s), STORE_OK);
  int64_t next = put_new(s, &r, 1, 2);
  e.id = 1;
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_OK);
  uint64_t mark = store_mark(s);
  next = put_new(s, &r, next, 1);
  e.id = 2;
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_OK);
  ck_assert_uint_eq(store_g_count(s, STORE_G_ENTITY), 2);
  ck_assert_int_eq(store_undo_to(s, mark), STORE_OK);
  model[3].live = 0;
  ck_assert_uint_eq(store_g_count(s, STORE_G_ENTITY), 1);
  check_model(s);
  commit_ok(s);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  put_new(s, &r, 10, 1);
  e.id = 3;
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_OK);
  store_rollback(s);
  model[10].live = 0;
  ck_assert_uint_eq(store_g_count(s, STORE_G_ENTITY), 1);
  check_model(s);
  s = reopen(s, &t, 1);
  uint64_t pos;
  ck_assert_int_eq(store_g_find(s, STORE_G_ENTITY, 1, &pos), STORE_OK);
  ck_assert_int_eq(store_g_find(s, STORE_G_ENTITY, 2, &pos), STORE_ENOTFOUND);
  ck_assert_int_eq(store_g_find(s, STORE_G_ENTITY, 3, &pos), STORE_ENOTFOUND);
  store_close(s);
  (void)next;
  t_rmdir(t.dir);
}
END_TEST

/* Keyword search through the API: the records holding a word, best
** first, a filter respected, the same after a checkpoint. */
START_TEST(test_bm25) {
  tdir t;
  store *s = new_store(&t, opts(DIM, STORE_COSINE, STORE_F32));
  static const char *const text[] = {"the cat sat on the mat", "dogs run far", "a cat and a cat and a dog",
                                     NULL, "birds"};
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int i = 0; i < 5; i++) {
    store_rec rr;
    memset(&rr, 0, sizeof rr);
    rr.id = i + 1;
    rr.text = text[i];
    rr.text_len = text[i] ? strlen(text[i]) : 0;
    ck_assert_int_eq(store_put(s, &rr), STORE_OK);
  }
  commit_ok(s);
  for (int round = 0; round < 2; round++) {
    store_hit hit[5];
    uint64_t n = 9;
    ck_assert_int_eq(store_bm25(s, "Cat", 3, 5, NULL, hit, &n), STORE_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(store_pos_id(s, hit[0].pos), 3); /* "cat" twice in a record of similar length */
    ck_assert_int_eq(store_pos_id(s, hit[1].pos), 1);
    ck_assert(hit[0].score >= hit[1].score && hit[1].score > 0);
    uint64_t p3;
    ck_assert_int_eq(store_find(s, 3, &p3), STORE_OK);
    uint8_t bits[1] = {0};
    for (uint64_t p = 0; p < store_npos(s); p++)
      if (p != p3) bits[p / 8] |= (uint8_t)(1u << (p % 8));
    store_filter f = {bits, store_count(s) - 1, NULL, NULL, NULL};
    ck_assert_int_eq(store_bm25(s, "cat", 3, 5, &f, hit, &n), STORE_OK);
    ck_assert_uint_eq(n, 1);
    ck_assert_int_eq(store_pos_id(s, hit[0].pos), 1);
    ck_assert_int_eq(store_bm25(s, "zebra", 5, 5, NULL, hit, &n), STORE_OK);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  }
  finish(s, &t);
}
END_TEST

/* ---- the temporal index ------------------------------------------------------- */

typedef struct tpair {
  int64_t ts;
  uint64_t pos;
} tpair;

static int tpair_cmp(const void *x, const void *y) {
  const tpair *a = x, *b = y;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* store_time_range(lo, hi, desc) gives exactly the live records with lo <=
** ts <= hi, by (ts, position), as a brute force over every position does. */
static void check_time_range(store *s, int64_t lo, int64_t hi, int desc) {
  uint64_t npos = store_npos(s), nb = 0;
  tpair *want = malloc((npos + 1) * sizeof *want);
  ck_assert_ptr_nonnull(want);
  for (uint64_t p = 0; p < npos; p++) {
    if (!store_pos_live(s, p)) continue;
    store_view v;
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(store_get(s, p, STORE_V_NUM, &v), STORE_OK);
    if (v.ts >= lo && v.ts <= hi) want[nb++] = (tpair){v.ts, p};
  }
  qsort(want, nb, sizeof *want, tpair_cmp);
  store_time_iter it;
  ck_assert_int_eq(store_time_range(s, lo, hi, desc, &it), STORE_OK);
  uint64_t got = 0, pos;
  int64_t ts;
  int rc;
  while ((rc = store_time_next(s, &it, &pos, &ts)) == STORE_OK) {
    ck_assert_uint_lt(got, nb);
    const tpair *w = &want[desc ? nb - 1 - got : got];
    ck_assert_msg(w->pos == pos && w->ts == ts, "range [%lld, %lld]%s: row %llu is (%lld, %llu), expected (%lld, %llu)",
                  (long long)lo, (long long)hi, desc ? " desc" : "", (unsigned long long)got, (long long)ts,
                  (unsigned long long)pos, (long long)w->ts, (unsigned long long)w->pos);
    got++;
  }
  ck_assert_int_eq(rc, STORE_ENOTFOUND);
  ck_assert_uint_eq(got, nb);
  uint64_t cnt;
  ck_assert_int_eq(store_time_count(s, lo, hi, &cnt), STORE_OK);
  ck_assert_uint_ge(cnt, nb);
  free(want);
}

static void check_time_all(store *s, t_rng *r) {
  static const int64_t edge[] = {INT64_MIN, -5, 0, 3, 10, 17, 40, INT64_MAX};
  for (int a = 0; a < 8; a++)
    for (int b = a; b < 8; b++)
      for (int d = 0; d < 2; d++) check_time_range(s, edge[a], edge[b], d);
  for (int i = 0; i < 20; i++) {
    int64_t lo = (int64_t)(t_next(r) % 50) - 5, hi = lo + (int64_t)(t_next(r) % 12);
    check_time_range(s, lo, hi, (int)(t_next(r) & 1));
  }
  check_time_range(s, 5, 4, 0); /* empty */
}

/* a record with only an id and a ts */
static void put_ts(store *s, int64_t id, int64_t ts) {
  store_rec rr;
  memset(&rr, 0, sizeof rr);
  rr.id = id;
  rr.ts = ts;
  rr.last_access = STORE_NULL_TIME;
  ck_assert_int_eq(store_put(s, &rr), STORE_OK);
}

START_TEST(test_time_range) {
  tdir t;
  t_rng r;
  r.s = t_seed() + 19;
  store *s = new_store(&t, opts(DIM, STORE_COSINE, STORE_F32));
  check_time_all(s, &r); /* an empty store */
  int64_t next = 1;
  /* the file's rows: ts among 0 .. 39 (many ties), one negative */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int i = 0; i < 600; i++, next++) put_ts(s, next, i == 7 ? -3 : (int64_t)(t_next(&r) % 40));
  commit_ok(s);
  check_time_all(s, &r); /* all in memory */
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  check_time_all(s, &r); /* all in the file */
  /* deletes, updates that change ts (a delete and a put), new records,
  ** some committed, then an open transaction with a savepoint undone */
  for (int round = 0; round < 3; round++) {
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 60; i++) {
      int64_t id = 1 + (int64_t)(t_next(&r) % (uint64_t)(next - 1));
      uint64_t pos;
      if (store_find(s, id, &pos) != STORE_OK) continue;
      ck_assert_int_eq(store_delete(s, id), STORE_OK);
      if (i % 2) put_ts(s, id, (int64_t)(t_next(&r) % 40));
    }
    for (int i = 0; i < 30; i++, next++) put_ts(s, next, (int64_t)(t_next(&r) % 40));
    commit_ok(s);
    check_time_all(s, &r);
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 10; i++, next++) put_ts(s, next, (int64_t)(t_next(&r) % 40));
    check_time_all(s, &r); /* uncommitted rows */
    uint64_t m = store_mark(s);
    for (int i = 0; i < 10; i++) put_ts(s, next + i, (int64_t)(t_next(&r) % 40));
    ck_assert_int_eq(store_delete(s, next - 1), STORE_OK);
    check_time_all(s, &r);
    ck_assert_int_eq(store_undo_to(s, m), STORE_OK); /* positions taken back */
    check_time_all(s, &r);
    put_ts(s, next++, 39);
    check_time_all(s, &r);
    commit_ok(s);
    ck_assert_int_eq(store_checkpoint(s), STORE_OK); /* the index carried over */
    check_time_all(s, &r);
  }
  /* rows added and deleted while a walk goes on: the added ones are not
  ** visited, the deleted ones are skipped, the rest come in order */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  store_time_iter it;
  ck_assert_int_eq(store_time_range(s, 10, 20, 0, &it), STORE_OK);
  uint64_t pos, n = 0;
  int64_t ts, last = INT64_MIN, del = -1;
  while (store_time_next(s, &it, &pos, &ts) == STORE_OK) {
    ck_assert(ts >= last && ts >= 10 && ts <= 20);
    ck_assert_int_ne(store_pos_id(s, pos), del);
    last = ts;
    if (n++ % 3 == 0) put_ts(s, next++, 15);
    if (n == 5) { /* delete a row ahead of the walk */
      store_time_iter ahead = it;
      uint64_t ap;
      if (store_time_next(s, &ahead, &ap, NULL) == STORE_OK) {
        del = store_pos_id(s, ap);
        ck_assert_int_eq(store_delete(s, del), STORE_OK);
      }
    }
  }
  commit_ok(s);
  check_time_all(s, &r);
  ck_assert_int_eq(store_optimize(s), STORE_OK);
  check_time_all(s, &r);
  ck_assert_int_eq(store_close(s), STORE_OK);
  s = open_ok(t.path, NULL, 1); /* reopened (read-only): built again */
  check_time_all(s, &r);
  store_time_stats st;
  store_time_info(s, &st);
  ck_assert(st.built && st.builds == 1 && st.rows == store_npos(s) && st.ranges > 0);
  finish(s, &t);
}
END_TEST

/* ---- the per-session index ---------------------------------------------------- */

static const char *const t_sessions[] = {"a", "b", "", "ab", NULL, "s\xc3\xa9"};
#define T_NSESS 6

/* store_time_range_session(session, lo, hi, desc) gives exactly the live
** records of that session with lo <= ts <= hi, by (ts, position), as a
** brute force over every position does (NULL: none). */
static void check_sess_range(store *s, const char *sess, int64_t lo, int64_t hi, int desc) {
  uint64_t npos = store_npos(s), nb = 0;
  size_t slen = sess ? strlen(sess) : 0;
  tpair *want = malloc((npos + 1) * sizeof *want);
  ck_assert_ptr_nonnull(want);
  for (uint64_t p = 0; p < npos && sess; p++) {
    if (!store_pos_live(s, p)) continue;
    store_view v;
    memset(&v, 0, sizeof v);
    ck_assert_int_eq(store_get(s, p, STORE_V_NUM | STORE_V_SESSION, &v), STORE_OK);
    if (v.ts >= lo && v.ts <= hi && v.session && v.session_len == slen && !memcmp(v.session, sess, slen))
      want[nb++] = (tpair){v.ts, p};
  }
  qsort(want, nb, sizeof *want, tpair_cmp);
  store_time_iter it;
  ck_assert_int_eq(store_time_range_session(s, sess, slen, lo, hi, desc, &it), STORE_OK);
  uint64_t got = 0, pos;
  int64_t ts;
  int rc;
  while ((rc = store_time_next(s, &it, &pos, &ts)) == STORE_OK) {
    ck_assert_uint_lt(got, nb);
    const tpair *w = &want[desc ? nb - 1 - got : got];
    ck_assert_msg(w->pos == pos && w->ts == ts, "session %s [%lld, %lld]%s: row %llu is (%lld, %llu), expected (%lld, %llu)",
                  sess ? sess : "NULL", (long long)lo, (long long)hi, desc ? " desc" : "", (unsigned long long)got,
                  (long long)ts, (unsigned long long)pos, (long long)w->ts, (unsigned long long)w->pos);
    got++;
  }
  ck_assert_int_eq(rc, STORE_ENOTFOUND);
  ck_assert_uint_eq(got, nb);
  free(want);
}

static void check_sess_all(store *s, t_rng *r) {
  static const int64_t edge[] = {INT64_MIN, 0, 10, 39, INT64_MAX};
  for (int k = 0; k < T_NSESS + 1; k++) {
    const char *sess = k < T_NSESS ? t_sessions[k] : "none";
    for (int a = 0; a < 5; a++)
      for (int b = a; b < 5; b++)
        for (int d = 0; d < 2; d++) check_sess_range(s, sess, edge[a], edge[b], d);
    for (int i = 0; i < 6; i++) {
      int64_t lo = (int64_t)(t_next(r) % 45) - 3, hi = lo + (int64_t)(t_next(r) % 10);
      check_sess_range(s, sess, lo, hi, (int)(t_next(r) & 1));
    }
  }
  check_sess_range(s, "a", 5, 4, 0); /* empty */
  check_time_range(s, INT64_MIN, INT64_MAX, 0); /* (the ts index beside it) */
}

static void put_sess(store *s, int64_t id, int64_t ts, const char *sess) {
  store_rec rr;
  memset(&rr, 0, sizeof rr);
  rr.id = id;
  rr.ts = ts;
  rr.session = sess;
  rr.session_len = sess ? strlen(sess) : 0;
  rr.last_access = STORE_NULL_TIME;
  ck_assert_int_eq(store_put(s, &rr), STORE_OK);
}

START_TEST(test_time_range_session) {
  tdir t;
  t_rng r;
  r.s = t_seed() + 23;
  store *s = new_store(&t, opts(DIM, STORE_COSINE, STORE_F32));
  check_sess_all(s, &r); /* an empty store */
  int64_t next = 1;
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int i = 0; i < 400; i++, next++)
    put_sess(s, next, (int64_t)(t_next(&r) % 40), t_sessions[t_next(&r) % (T_NSESS - 1)]); /* (not the last) */
  commit_ok(s);
  check_sess_all(s, &r); /* all in memory */
  ck_assert_int_eq(store_checkpoint(s), STORE_OK);
  check_sess_all(s, &r); /* all in the file: built */
  store_time_stats st;
  store_time_info(s, &st);
  ck_assert(st.sess_built && st.sess_builds >= 1);
  /* deletes, updates of session and ts, new records (a session new to the
  ** file among them), an open transaction with a savepoint undone, then a
  ** checkpoint that carries the index over */
  for (int round = 0; round < 3; round++) {
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 50; i++) {
      int64_t id = 1 + (int64_t)(t_next(&r) % (uint64_t)(next - 1));
      uint64_t pos;
      if (store_find(s, id, &pos) != STORE_OK) continue;
      ck_assert_int_eq(store_delete(s, id), STORE_OK);
      if (i % 2) put_sess(s, id, (int64_t)(t_next(&r) % 40), t_sessions[t_next(&r) % T_NSESS]);
    }
    for (int i = 0; i < 30; i++, next++) put_sess(s, next, (int64_t)(t_next(&r) % 40), t_sessions[t_next(&r) % T_NSESS]);
    commit_ok(s);
    check_sess_all(s, &r);
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 10; i++, next++) put_sess(s, next, (int64_t)(t_next(&r) % 40), t_sessions[t_next(&r) % T_NSESS]);
    uint64_t m = store_mark(s);
    for (int i = 0; i < 10; i++) put_sess(s, next + i, (int64_t)(t_next(&r) % 40), "a");
    check_sess_all(s, &r);
    ck_assert_int_eq(store_undo_to(s, m), STORE_OK);
    check_sess_all(s, &r);
    commit_ok(s);
    store_time_stats before;
    store_time_info(s, &before);
    ck_assert_int_eq(store_checkpoint(s), STORE_OK);
    store_time_info(s, &st);
    ck_assert_msg(st.sess_built && st.sess_builds == before.sess_builds, "the checkpoint carries the index over");
    check_sess_all(s, &r);
    store_time_info(s, &st);
    ck_assert_uint_eq(st.sess_builds, before.sess_builds);
  }
  ck_assert_int_eq(store_optimize(s), STORE_OK);
  check_sess_all(s, &r);
  ck_assert_int_eq(store_close(s), STORE_OK);
  s = open_ok(t.path, NULL, 1); /* reopened (read-only): built again */
  check_sess_all(s, &r);
  store_time_info(s, &st);
  ck_assert(st.sess_built && st.sess_builds == 1 && st.sessions == T_NSESS - 1);
  finish(s, &t);
}
END_TEST

/* ---- declared columns ------------------------------------------------------------ */

/* An integer partition key's = from its index: the index keys NULL values
** by a constant an integer can equal; a NULL value never matches `=`
** (found by test/fuzz/fuzz_store.c). */
START_TEST(test_partition_null_key) {
  tdir t;
  store_opts o = opts(2, STORE_L2, STORE_F32);
  store_coldef c;
  char err[256];
  const char *decl = "user_id integer partition key";
  ck_assert_int_eq(store_coldef_parse(decl, strlen(decl), &c, err, sizeof err), STORE_OK);
  o.cols = &c;
  o.ncols = 1;
  store *s = new_store(&t, o);
  const int64_t magic = (int64_t)0x9e3779b97f4a7c15ull; /* the index's key of NULL */
  const int64_t uid[] = {0, magic, 5, magic, 0}; /* 0: NULL */
  for (int pass = 0; pass < 2; pass++) { /* in the file (the index), then in memory too */
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 5; i++) {
      float e[2] = {(float)i, 1};
      store_val v = {uid[i] ? STORE_T_INTEGER : 0, uid[i], 0, NULL, 0};
      store_rec r;
      memset(&r, 0, sizeof r);
      r.id = pass * 10 + i + 1;
      r.emb = e;
      r.cols = &v;
      r.last_access = STORE_NULL_TIME;
      ck_assert_int_eq(store_put(s, &r), STORE_OK);
    }
    commit_ok(s);
    if (!pass) ck_assert_int_eq(store_checkpoint(s), STORE_OK);
    uint64_t npos = store_npos(s), n;
    uint8_t bits[4] = {0};
    store_live_bits(s, npos, bits, &n);
    store_val m = {STORE_T_INTEGER, magic, 0, NULL, 0};
    store_cond cond = {0, STORE_OP_EQ, &m, 1};
    ck_assert_int_eq(store_col_filter(s, &cond, npos, bits, &n), STORE_OK);
    ck_assert_uint_eq(n, 2 * (uint64_t)(pass + 1));
    for (uint64_t p = 0; p < npos; p++) {
      int want = uid[p % 5] == magic;
      ck_assert_msg((bits[p / 8] >> (p % 8) & 1) == want, "position %llu: %d, not %d", (unsigned long long)p,
                    bits[p / 8] >> (p % 8) & 1, want);
      ck_assert_int_eq(store_col_test(s, &cond, p), want);
    }
  }
  finish(s, &t);
}
END_TEST

/* A float vector column under l1 (searched row by row): records without a
** vector are skipped, in the file (their rows zeros with NaN first) and
** in memory (found by test/fuzz/fuzz_store.c). */
START_TEST(test_vector_column_l1_nulls) {
  tdir t;
  store_opts o = opts(2, STORE_L2, STORE_F32);
  store_coldef c[2];
  char err[256];
  const char *decl[2] = {"v float[2] distance_metric=l1", "h float16[2] distance_metric=l1"};
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq(store_coldef_parse(decl[i], strlen(decl[i]), &c[i], err, sizeof err), STORE_OK);
  o.cols = c;
  o.ncols = 2;
  store *s = new_store(&t, o);
  for (int pass = 0; pass < 2; pass++) { /* in the file, then in memory too */
    ck_assert_int_eq(store_begin(s), STORE_OK);
    for (int i = 0; i < 10; i++) {
      float e[2] = {(float)i, 1}, fv[2] = {(float)i, -1};
      uint16_t hv[2] = {0x3c00, 0x4000}; /* 1, 2 */
      store_val v[2] = {{i % 3 ? STORE_T_VECTOR : 0, 0, 0, fv, 8}, {i % 3 ? STORE_T_VECTOR : 0, 0, 0, hv, 4}};
      store_rec r;
      memset(&r, 0, sizeof r);
      r.id = pass * 10 + i + 1;
      r.emb = e;
      r.cols = v;
      r.last_access = STORE_NULL_TIME;
      ck_assert_int_eq(store_put(s, &r), STORE_OK);
    }
    commit_ok(s);
    if (!pass) ck_assert_int_eq(store_checkpoint(s), STORE_OK);
    for (int col = 0; col < 2; col++) {
      float q[2] = {0, 0};
      ann_res out[32];
      uint64_t nout;
      ck_assert_int_eq(store_knn_col(s, col, q, 32, NULL, NULL, out, &nout), STORE_OK);
      ck_assert_uint_eq(nout, 6 * (uint64_t)(pass + 1)); /* the records with a vector */
      for (uint64_t i = 0; i < nout; i++) {
        store_val v;
        ck_assert_int_eq(store_get_col(s, out[i].pos, col, &v), STORE_OK);
        ck_assert_msg(v.type == STORE_T_VECTOR && !isnan(out[i].dist), "column %d, result %llu: position %llu, "
                      "distance %g", col, (unsigned long long)i, (unsigned long long)out[i].pos, (double)out[i].dist);
        float want = col ? 3.0f : (float)((store_pos_id(s, out[i].pos) - 1) % 10 + 1);
        ck_assert_msg(out[i].dist == want, "distance %g, not %g", (double)out[i].dist, (double)want);
      }
    }
  }
  finish(s, &t);
}
END_TEST


/* Ephemeral handles of one name in several threads (the connections of a
** process).  First a lone handle busy in its own thread is joined from
** another (without an owner lock: the joiner asks, the lone one adds the
** snapshot at its next call).  Then four handles, opened by the main
** thread (a handle alone and idle in another thread could never be
** joined without its owner's lock), each used by a thread of its own:
** puts and deletes of ids of its own range in short transactions (the
** writer's role taken in turn; now and then one rolled back), reading
** after each; at the end every handle holds the same records, the union
** of the threads' models. */
#define ETH_THREADS 4
#define ETH_IDS 64
#define ETH_OPS 300
typedef struct eth_arg {
  int i;
  store *s;
  int fails;
  unsigned char live[ETH_IDS];
  uint64_t count_end;
  int64_t sum_end;
} eth_arg;
static pthread_barrier_t eth_bar;

static store_opts eth_opts(void) {
  store_opts o = opts(DIM, STORE_L2, STORE_F32);
  o.ephemeral = 1;
  return o;
}

/* Record id with text "t" and emb, put in the open transaction. */
static int eth_rec_put(store *s, int64_t id, const float *emb) {
  store_rec r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.text = "t";
  r.text_len = 1;
  r.emb = emb;
  return store_put(s, &r);
}

/* One transaction of a put; STORE_OK or its code. */
static int eth_put(store *s, int64_t id, const float *emb) {
  int rc = store_begin(s);
  if (rc) return rc;
  rc = eth_rec_put(s, id, emb);
  if (rc == STORE_OK) rc = store_commit(s, 1);
  if (rc) store_rollback(s);
  return rc;
}

static int eth_begun, eth_joined;

/* The lone handle: puts until the other thread has joined (at most 20 s). */
static void *eth_lone(void *p) {
  store *s = p;
  float emb[DIM] = {1};
  int64_t id = 1;
  for (int64_t t0 = time(NULL); !__atomic_load_n(&eth_joined, __ATOMIC_ACQUIRE) && time(NULL) - t0 < 20; id++) {
    if (eth_put(s, id, emb) != STORE_OK || store_refresh(s) != STORE_OK) break;
    if (id == 1) __atomic_store_n(&eth_begun, 1, __ATOMIC_RELEASE); /* (it has begun: join now) */
  }
  return NULL;
}

static void *eth_run(void *p) {
  eth_arg *a = p;
  store *s = a->s;
  uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(a->i + 1);
  float emb[DIM];
  for (int op = 0; op < ETH_OPS; op++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int k = (int)(x % ETH_IDS);
    int64_t id = 1 + (int64_t)a->i * ETH_IDS + k;
    if (store_begin(s) != STORE_OK) {
      a->fails++;
      continue;
    }
    int rc;
    if (a->live[k]) {
      rc = store_delete(s, id);
    } else {
      for (int d = 0; d < DIM; d++) emb[d] = (float)((x >> d) & 7);
      rc = eth_rec_put(s, id, emb);
    }
    if (rc == STORE_OK && op % 7 == 0) { /* (now and then a rollback) */
      store_rollback(s);
      continue;
    }
    if (rc == STORE_OK) rc = store_commit(s, 1);
    if (rc != STORE_OK) {
      a->fails++;
      store_rollback(s);
      continue;
    }
    a->live[k] ^= 1;
    /* read: this thread's ids as it left them */
    if (store_refresh(s) != STORE_OK) a->fails++;
    for (int j = 0; j < ETH_IDS; j++) {
      uint64_t pos;
      int there = store_find(s, 1 + (int64_t)a->i * ETH_IDS + j, &pos) == STORE_OK;
      if (there != a->live[j]) a->fails++;
    }
  }
  pthread_barrier_wait(&eth_bar); /* (every write made) */
  if (store_refresh(s) != STORE_OK) a->fails++;
  a->count_end = store_count(s);
  for (int64_t id = 1; id <= ETH_THREADS * ETH_IDS; id++) {
    uint64_t pos;
    if (store_find(s, id, &pos) == STORE_OK) a->sum_end += id;
  }
  pthread_barrier_wait(&eth_bar);
  return NULL;
}

START_TEST(test_ephemeral_threads) {
  /* a lone handle busy in another thread, joined from this one */
  store_opts o = eth_opts();
  store *lone = open_ok("eth-lone", &o, 0);
  pthread_t lt;
  eth_begun = eth_joined = 0;
  ck_assert_int_eq(pthread_create(&lt, NULL, eth_lone, lone), 0);
  while (!__atomic_load_n(&eth_begun, __ATOMIC_ACQUIRE)) usleep(1000);
  store *j = open_ok("eth-lone", &o, 0);
  __atomic_store_n(&eth_joined, 1, __ATOMIC_RELEASE);
  pthread_join(lt, NULL);
  ck_assert_uint_gt(store_count(j), 0);
  ck_assert_int_eq(store_refresh(j), STORE_OK);
  ck_assert_uint_eq(store_count(j), store_count(lone));
  ck_assert_int_eq(store_close(lone), STORE_OK);
  ck_assert_int_eq(store_close(j), STORE_OK);
  /* four handles, a thread each */
  pthread_t th[ETH_THREADS];
  eth_arg a[ETH_THREADS];
  memset(a, 0, sizeof a);
  ck_assert_int_eq(pthread_barrier_init(&eth_bar, NULL, ETH_THREADS), 0);
  for (int i = 0; i < ETH_THREADS; i++) {
    a[i].i = i;
    a[i].s = open_ok("eth", &o, 0);
  }
  for (int i = 0; i < ETH_THREADS; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, eth_run, &a[i]), 0);
  for (int i = 0; i < ETH_THREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < ETH_THREADS; i++) ck_assert_int_eq(store_close(a[i].s), STORE_OK);
  pthread_barrier_destroy(&eth_bar);
  uint64_t want = 0;
  int64_t sum = 0;
  for (int i = 0; i < ETH_THREADS; i++)
    for (int k = 0; k < ETH_IDS; k++)
      if (a[i].live[k]) want++, sum += 1 + (int64_t)i * ETH_IDS + k;
  ck_assert_uint_gt(want, 0);
  for (int i = 0; i < ETH_THREADS; i++) {
    ck_assert_msg(a[i].fails == 0, "thread %d: %d failures", i, a[i].fails);
    ck_assert_uint_eq(a[i].count_end, want);
    ck_assert_int_eq(a[i].sum_end, sum);
  }
  /* the last handle gone, so is the store: a new one is empty */
  store *s = open_ok("eth", &o, 0);
  ck_assert_uint_eq(store_count(s), 0);
  ck_assert_int_eq(store_close(s), STORE_OK);
}
END_TEST

Suite *store_api_suite(void);
Suite *store_api_suite(void) {
  Suite *su = suite_create("store_api");
  TCase *tc = tcase_create("store");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_create_open_close);
  tcase_add_test(tc, test_create_bad_options);
  tcase_add_test(tc, test_put_get_columns);
  tcase_add_test(tc, test_float16);
  tcase_add_test(tc, test_delete_update);
  tcase_add_test(tc, test_transactions);
  tcase_add_test(tc, test_crash_keeps_committed);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_second_writer_busy);
  tcase_add_test(tc, test_damaged_file);
  tcase_add_test(tc, test_checkpoint_damaged_file);
  tcase_add_test(tc, test_path_is_directory);
  tcase_add_test(tc, test_log_no_room);
  tcase_add_test(tc, test_gate_io_error);
  tcase_add_test(tc, test_optimize);
  tcase_add_test(tc, test_knn_flat);
  tcase_add_test(tc, test_knn_index);
  tcase_add_test(tc, test_log_damaged);
  tcase_add_test(tc, test_autocheckpoint);
  tcase_add_test(tc, test_graph_in_transactions);
  tcase_add_test(tc, test_update_in_place);
  tcase_add_test(tc, test_update_costs);
  tcase_add_test(tc, test_file_older_than_log);
  tcase_add_test(tc, test_bm25);
  tcase_add_test(tc, test_time_range);
  tcase_add_test(tc, test_time_range_session);
  tcase_add_test(tc, test_partition_null_key);
  tcase_add_test(tc, test_vector_column_l1_nulls);
  tcase_add_test(tc, test_ephemeral);
  tcase_add_test(tc, test_ephemeral_threads);
  suite_add_tcase(su, tc);
  return su;
}

int main(void) {
  printf("seed %llu (H5MEM_TEST_SEED replays it)\n", (unsigned long long)t_seed());
  return t_run(store_api_suite());
}
