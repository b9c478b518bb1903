/*
** test/unit/test_store_graph.c - the knowledge graph's tables in the store
** (lib/store/store_graph.c through store.h): transactions, savepoints,
** the log replayed after a crash (no checkpoint), checkpoints, deletes
** and updates across them, optimize, ids never reused, the cached
** adjacency following every change, and a model of the tables (a plain
** array) that every state is compared with.
*/
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_int.h"
#include "testutil.h"

static char dir[256];

static void mkdir_tmp(void) {
  snprintf(dir, sizeof dir, "/tmp/test_store_graph_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static store *open_store(const char *name, int create) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = create ? 4 : 0;
  o.storage = STORE_F32;
  o.sync = STORE_SYNC_OFF;
  store *s = NULL;
  int rc = store_open(path, create ? &o : NULL, 0, &s, err, sizeof err);
  ck_assert_msg(rc == STORE_OK, "open: %s", err);
  return s;
}

/* The model: what each table should hold (live records by id). */
#define MAXR 4096
typedef struct mrec {
  int live;
  int64_t a, b, ts;
  double w;
  char s[4][32];
  int has[4];
} mrec;
static mrec model[STORE_G_NTABLES][MAXR];

static void model_clear(void) { memset(model, 0, sizeof model); }

static store_grec rec_of(int t, int64_t id, const mrec *m) {
  store_grec r;
  memset(&r, 0, sizeof r);
  r.id = id;
  r.a = m->a;
  r.b = m->b;
  r.ts = m->ts;
  r.weight = m->w;
  for (int k = 0; k < 4; k++)
    if (m->has[k]) {
      r.s[k] = m->s[k];
      r.n[k] = strlen(m->s[k]);
    }
  (void)t;
  return r;
}

static void check_model(store *s) {
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    uint64_t live = 0;
    for (int64_t id = 1; id < MAXR; id++) {
      const mrec *m = &model[t][id];
      uint64_t pos;
      int rc = store_g_find(s, t, id, &pos);
      if (!m->live) {
        T_CHECK(rc == STORE_ENOTFOUND, "table %d id %lld should be gone", t, (long long)id);
        continue;
      }
      live++;
      T_CHECK(rc == STORE_OK, "table %d id %lld missing", t, (long long)id);
      store_grec r;
      T_CHECK(store_g_get(s, t, pos, &r) == STORE_OK, "get");
      T_CHECK(r.id == id, "id");
      if (t != STORE_G_ENTITY) T_CHECK(r.a == m->a && r.b == m->b, "a, b of %lld", (long long)id);
      if (t == STORE_G_RELATION) T_CHECK(r.ts == m->ts && r.weight == m->w, "ts, weight");
      for (int k = 0; k < 4; k++) {
        int used = t == STORE_G_ENTITY || (t == STORE_G_RELATION && (k == 1 || k == 3));
        if (!used || !m->has[k]) {
          T_CHECK(r.s[k] == NULL, "string %d of %lld should be NULL", k, (long long)id);
          continue;
        }
        T_CHECK(r.s[k] && r.n[k] == strlen(m->s[k]) && !memcmp(r.s[k], m->s[k], r.n[k]),
                "string %d of table %d id %lld", k, t, (long long)id);
      }
    }
    T_CHECK(store_g_count(s, t) == live, "table %d: %llu live, model %llu", t,
            (unsigned long long)store_g_count(s, t), (unsigned long long)live);
  }
}

static void random_rec(t_rng *r, int t, mrec *m) {
  memset(m, 0, sizeof *m);
  m->a = 1 + (int64_t)(t_next(r) % 50);
  m->b = 1 + (int64_t)(t_next(r) % 50);
  m->ts = (int64_t)(t_next(r) % 1000000);
  m->w = (double)(t_next(r) % 1000) / 100.0;
  for (int k = 0; k < 4; k++) {
    if (t_next(r) % 5 == 0) continue;
    m->has[k] = 1;
    int n = (int)(t_next(r) % 12);
    for (int i = 0; i < n; i++) m->s[k][i] = (char)('a' + t_next(r) % 26);
    m->s[k][n] = 0;
  }
  (void)t;
}

/* One random transaction: puts, deletes, updates; committed or rolled back
** (and sometimes a savepoint undone inside it). */
static void random_txn(store *s, t_rng *r, int64_t *next_id) {
  static mrec saved[STORE_G_NTABLES][MAXR];
  memcpy(saved, model, sizeof model);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  int nops = 1 + (int)(t_next(r) % 20);
  uint64_t mark = 0;
  int marked = 0;
  static mrec at_mark[STORE_G_NTABLES][MAXR];
  for (int i = 0; i < nops; i++) {
    if (!marked && t_next(r) % 8 == 0) {
      mark = store_mark(s);
      memcpy(at_mark, model, sizeof model);
      marked = 1;
    }
    int t = (int)(t_next(r) % STORE_G_NTABLES);
    int what = (int)(t_next(r) % 4);
    int64_t id = 1 + (int64_t)(t_next(r) % (uint64_t)(*next_id));
    if (what <= 1 && *next_id < MAXR - 1) { /* insert */
      mrec m;
      random_rec(r, t, &m);
      int64_t nid = (*next_id)++;
      store_grec g = rec_of(t, nid, &m);
      int rc = store_g_put(s, t, &g);
      int dup = 0;
      if (t == STORE_G_MENTION)
        for (int64_t j = 1; j < MAXR; j++)
          if (model[t][j].live && model[t][j].a == m.a && model[t][j].b == m.b) dup = 1;
      T_CHECK(rc == (dup ? STORE_EEXISTS : STORE_OK), "put %d: %d (%s)", t, rc, store_errmsg(s));
      if (!dup) {
        m.live = 1;
        model[t][nid] = m;
      }
    } else if (what == 2) { /* delete */
      int rc = store_g_delete(s, t, id);
      T_CHECK(rc == (model[t][id].live ? STORE_OK : STORE_ENOTFOUND), "delete");
      model[t][id].live = 0;
    } else if (model[t][id].live) { /* update: delete + put with the same id */
      mrec m;
      random_rec(r, t, &m);
      ck_assert_int_eq(store_g_delete(s, t, id), STORE_OK);
      model[t][id].live = 0;
      store_grec g = rec_of(t, id, &m);
      int dup = 0;
      if (t == STORE_G_MENTION)
        for (int64_t j = 1; j < MAXR; j++)
          if (model[t][j].live && model[t][j].a == m.a && model[t][j].b == m.b) dup = 1;
      int rc = store_g_put(s, t, &g);
      T_CHECK(rc == (dup ? STORE_EEXISTS : STORE_OK), "update put");
      if (!dup) {
        m.live = 1;
        model[t][id] = m;
      }
    }
  }
  if (marked && t_next(r) % 2) {
    store_undo_to(s, mark);
    memcpy(model, at_mark, sizeof model);
  }
  check_model(s);
  if (t_next(r) % 5 == 0) {
    store_rollback(s);
    memcpy(model, saved, sizeof model);
  } else {
    ck_assert_int_eq(store_prepare(s), STORE_OK);
    ck_assert_int_eq(store_commit(s, 0), STORE_OK);
  }
  check_model(s);
}

/* idmap_clear keeps the room: putting back as many keys never allocates
** (gstore_rebase relies on it: it freed the maps and allocated anew, and
** out of memory there left live rows out of them). */
START_TEST(test_idmap_clear) {
  idmap m;
  memset(&m, 0, sizeof m);
  for (int64_t i = 0; i < 5000; i++) ck_assert_int_eq(idmap_put(&m, i * 7919, (uint64_t)i), STORE_OK);
  int64_t *key = m.key;
  uint64_t *val = m.val, cap = m.cap;
  idmap_clear(&m);
  ck_assert_uint_eq(m.n, 0);
  ck_assert_uint_eq(m.cap, cap);
  for (int64_t i = 0; i < 5000; i++) ck_assert_ptr_null(idmap_slot(&m, i * 7919));
  for (int64_t i = 4999; i >= 0; i--) ck_assert_int_eq(idmap_put(&m, -i, (uint64_t)i), STORE_OK);
  ck_assert(m.key == key && m.val == val && m.cap == cap); /* no allocation */
  for (int64_t i = 0; i < 5000; i++) {
    uint64_t *v = idmap_slot(&m, -i);
    ck_assert_ptr_nonnull(v);
    ck_assert_uint_eq(*v, (uint64_t)i);
  }
  idmap_free(&m);
  idmap_clear(&m); /* an empty map: nothing to do */
  ck_assert_uint_eq(m.cap, 0);
}
END_TEST

START_TEST(test_random_life) {
  mkdir_tmp();
  model_clear();
  t_rng r = {t_seed()};
  printf("seed %llu\n", (unsigned long long)r.s);
  store *s = open_store("g.h5", 1);
  int64_t next_id = 1;
  for (int round = 0; round < 60; round++) {
    random_txn(s, &r, &next_id);
    switch (t_next(&r) % 6) {
    case 0: ck_assert_int_eq(store_checkpoint(s), STORE_OK); break;
    case 1: /* close without a checkpoint: the log replays (a crash) */ {
      char path[512], walpath[520], copy[2200];
      snprintf(path, sizeof path, "%s/g.h5", dir);
      snprintf(walpath, sizeof walpath, "%s-wal", path);
      snprintf(copy, sizeof copy, "cp %s %s.crash && cp %s %s.crash-wal", path, path, walpath, path);
      ck_assert_int_eq(system(copy), 0);
      store_close(s);
      snprintf(copy, sizeof copy, "mv %s.crash %s && mv %s.crash-wal %s", path, path, path, walpath);
      ck_assert_int_eq(system(copy), 0);
      s = open_store("g.h5", 0);
      break;
    }
    case 2: store_close(s); s = open_store("g.h5", 0); break;
    case 3:
      if (round % 10 == 3) ck_assert_int_eq(store_optimize(s), STORE_OK);
      break;
    default: break;
    }
    check_model(s);
  }
  /* ids are never reused, even after optimize */
  int64_t mx[STORE_G_NTABLES];
  for (int t = 0; t < STORE_G_NTABLES; t++) mx[t] = store_g_max_id(s, t);
  ck_assert_int_eq(store_optimize(s), STORE_OK);
  store_close(s);
  s = open_store("g.h5", 0);
  for (int t = 0; t < STORE_G_NTABLES; t++) ck_assert_int_ge(store_g_max_id(s, t), mx[t]);
  check_model(s);
  store_close(s);
}
END_TEST

START_TEST(test_adjacency_cache) {
  mkdir_tmp();
  store *s = open_store("a.h5", 1);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  for (int64_t i = 1; i <= 5; i++) {
    char name[8];
    snprintf(name, sizeof name, "e%lld", (long long)i);
    store_grec e = {.id = i, .s = {name}, .n = {strlen(name)}};
    ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_OK);
  }
  const char *knows = "knows";
  for (int64_t i = 1; i <= 4; i++) { /* a chain 1 -> 2 -> 3 -> 4 -> 5 */
    store_grec rl = {.id = i, .a = i, .b = i + 1, .s = {NULL, knows}, .n = {0, 5}, .weight = 1};
    ck_assert_int_eq(store_g_put(s, STORE_G_RELATION, &rl), STORE_OK);
  }
  ck_assert_int_eq(store_commit(s, 0), STORE_OK);
  const kg_adj *a;
  ck_assert_int_eq(store_g_adj(s, &a), STORE_OK);
  const kg_adj *a2;
  ck_assert_int_eq(store_g_adj(s, &a2), STORE_OK);
  ck_assert_ptr_eq(a, a2); /* cached */
  ck_assert_uint_eq(kg_adj_edges(a), 4);
  uint32_t code = store_g_type_code(s, "knows", 5);
  ck_assert_uint_ne(code, UINT32_MAX);
  ck_assert_uint_eq(store_g_type_code(s, "likes", 5), UINT32_MAX);
  kg_bfs_opts o = {KG_OUT, 10, NULL, 0, 0};
  kg_bfs_row *rows;
  size_t n;
  ck_assert_int_eq(kg_bfs(a, 1, &o, &rows, &n), KG_OK);
  ck_assert_uint_eq(n, 5);
  free(rows);
  /* a change: the next traversal sees it */
  uint64_t v = store_g_version(s);
  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_g_delete(s, STORE_G_RELATION, 2), STORE_OK);
  ck_assert_uint_ne(store_g_version(s), v);
  ck_assert_int_eq(store_g_adj(s, &a), STORE_OK);
  ck_assert_int_eq(kg_bfs(a, 1, &o, &rows, &n), KG_OK);
  ck_assert_uint_eq(n, 2);
  free(rows);
  store_rollback(s); /* and its undoing */
  ck_assert_int_eq(store_g_adj(s, &a), STORE_OK);
  ck_assert_int_eq(kg_bfs(a, 1, &o, &rows, &n), KG_OK);
  ck_assert_uint_eq(n, 5);
  free(rows);
  store_close(s);
}
END_TEST

START_TEST(test_errors) {
  mkdir_tmp();
  store *s = open_store("e.h5", 1);
  store_grec e = {.id = 1, .s = {"x"}, .n = {1}};
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_EINVAL); /* no transaction */
  ck_assert_int_eq(store_begin(s), STORE_OK);
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_OK);
  ck_assert_int_eq(store_g_put(s, STORE_G_ENTITY, &e), STORE_EEXISTS);
  ck_assert_int_eq(store_g_put(s, 7, &e), STORE_EINVAL);
  ck_assert_int_eq(store_g_delete(s, STORE_G_RELATION, 5), STORE_ENOTFOUND);
  store_grec m1 = {.id = 1, .a = 10, .b = 1}, m2 = {.id = 2, .a = 10, .b = 1};
  ck_assert_int_eq(store_g_put(s, STORE_G_MENTION, &m1), STORE_OK);
  ck_assert_int_eq(store_g_put(s, STORE_G_MENTION, &m2), STORE_EEXISTS);
  ck_assert_ptr_nonnull(strstr(store_errmsg(s), "already mentions"));
  ck_assert_int_eq(store_commit(s, 0), STORE_OK);
  store_close(s);
}
END_TEST

int main(void) {
  Suite *su = suite_create("store_graph");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_idmap_clear);
  tcase_add_test(tc, test_random_life);
  tcase_add_test(tc, test_adjacency_cache);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(su, tc);
  return t_run(su);
}
