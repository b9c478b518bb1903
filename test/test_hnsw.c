/*
** test/test_hnsw.c - lib/ann/hnsw: recall against brute force (same
** kernels), deletes, filters, save/load and damaged images, threads, edges.
**
** Data: clustered (centres plus noise) from the seeded PRNG in testutil.h;
** queries come from the same distribution.  Recall figures are printed.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/hnsw.h"
#include "k.h"
#include "testann.h"
#include "testutil.h"
#include "util/pool.h"

#define NQ T_NQ

static hnsw *build(ds *d, ann_metric m, uint32_t n, int threads, int M) {
  hnsw_params p = {M, 0, 0, threads};
  hnsw *h = NULL;
  int rc = hnsw_new(d->dim, m, d->elem, &p, row, d, &h);
  T_CHECK(rc == ANN_OK, "hnsw_new: %s", hnsw_errmsg(h));
  rc = hnsw_build(h, n);
  T_CHECK(rc == ANN_OK, "hnsw_build: %s", hnsw_errmsg(h));
  ck_assert_uint_eq(hnsw_count(h), n);
  return h;
}

/* mean recall@k over the queries */
static double recall(const hnsw *h, const ds *d, ann_metric m, uint32_t n,
                     const float *qs, int k, int ef) {
  ann_hit got[64], want[64];
  double sum = 0;
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * d->dim;
    int ng = hnsw_search(h, q, k, ef, NULL, NULL, got);
    int nw = brute(d, m, n, q, k, NULL, NULL, NULL, want);
    T_CHECK(ng == nw, "hits %d, expected %d", ng, nw);
    int inter = 0;
    for (int i = 0; i < ng; i++)
      for (int j = 0; j < nw; j++)
        if (got[i].id == want[j].id) {
          inter++;
          break;
        }
    for (int i = 1; i < ng; i++)
      T_CHECK(hit_cmp(&got[i - 1], &got[i]) < 0, "results not sorted");
    sum += (double)inter / nw;
  }
  return sum / NQ;
}

/* ---- recall ------------------------------------------------------------- */

static void recall_case(uint32_t n, int dim, ann_elem e, ann_metric m) {
  ds d;
  uint64_t seed = t_seed();
  make_data(&d, n, dim, e, seed);
  float *qs = make_queries(dim, seed);
  double t0 = now();
  hnsw *h = build(&d, m, n, 1, 0);
  double t1 = now();
  double r64 = recall(h, &d, m, n, qs, 10, 64);
  double t2 = now();
  double r200 = recall(h, &d, m, n, qs, 10, 200);
  printf("hnsw recall@10 n=%u dim=%d %s %s: ef=64 %.4f  ef=200 %.4f  (build %.2fs, "
         "%.0f us/query at ef=64 incl. brute force)\n",
         n, dim, e == ANN_F32 ? "f32" : "f16", mname(m), r64, r200, t1 - t0,
         (t2 - t1) * 1e6 / NQ);
  T_CHECK(r64 >= 0.95, "recall@10 ef=64 %.4f (n=%u %s %s, seed %llu)", r64, n,
          e == ANN_F32 ? "f32" : "f16", mname(m), (unsigned long long)seed);
  T_CHECK(r200 >= 0.99, "recall@10 ef=200 %.4f (n=%u %s %s, seed %llu)", r200, n,
          e == ANN_F32 ? "f32" : "f16", mname(m), (unsigned long long)seed);
  hnsw_free(h);
  free(qs);
  free_data(&d);
}

START_TEST(test_recall_1k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(1000, 48, e ? ANN_F16 : ANN_F32, ms[mi]);
}
END_TEST

START_TEST(test_recall_10k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(10000, 32, e ? ANN_F16 : ANN_F32, ms[mi]);
}
END_TEST

/* ---- deletes and filters ------------------------------------------------ */

START_TEST(test_delete) {
  ds d;
  uint32_t n = 2000;
  make_data(&d, n, 32, ANN_F32, t_seed() + 10);
  float *qs = make_queries(32, t_seed() + 10);
  hnsw *h = build(&d, ANN_L2, n, 1, 0);
  uint8_t *del = calloc(n, 1);
  t_rng r = {t_seed() + 12};
  for (uint32_t i = 0; i < n; i++)
    if (t_next(&r) % 3 == 0) {
      del[i] = 1;
      ck_assert_int_eq(hnsw_delete(h, i), ANN_OK);
    }
  ck_assert_int_eq(hnsw_delete(h, 0), del[0] ? ANN_OK : ANN_OK);
  del[0] = 1;
  ck_assert_int_eq(hnsw_delete(h, 0), ANN_OK); /* twice is fine */
  ck_assert_int_eq(hnsw_delete(h, n), ANN_ERROR);
  ck_assert_uint_eq(hnsw_count(h), n);
  ann_hit got[50], want[50];
  double sum = 0;
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * 32;
    int ng = hnsw_search(h, q, 50, 100, NULL, NULL, got);
    ck_assert_int_eq(ng, 50);
    for (int i = 0; i < ng; i++) T_CHECK(!del[got[i].id], "deleted row %u returned", got[i].id);
    brute(&d, ANN_L2, n, q, 10, NULL, NULL, del, want);
    ng = hnsw_search(h, q, 10, 64, NULL, NULL, got);
    int inter = 0;
    for (int i = 0; i < ng; i++)
      for (int j = 0; j < 10; j++) inter += got[i].id == want[j].id;
    sum += inter / 10.0;
  }
  printf("hnsw recall@10 with a third deleted, ef=64: %.4f\n", sum / NQ);
  T_CHECK(sum / NQ >= 0.95, "recall with deletes %.4f", sum / NQ);
  /* everything deleted: nothing comes back */
  for (uint32_t i = 0; i < n; i++) hnsw_delete(h, i);
  ck_assert_int_eq(hnsw_search(h, qs, 10, 64, NULL, NULL, got), 0);
  hnsw_free(h);
  free(del);
  free(qs);
  free_data(&d);
}
END_TEST

typedef struct fctx {
  uint32_t mod, keep; /* allowed: hash(i) % mod < keep */
  long calls;
} fctx;

static int allow(void *ctx, uint32_t i) {
  fctx *f = ctx;
  f->calls++;
  return mix(i) % f->mod < f->keep;
}

START_TEST(test_filter) {
  ds d;
  uint32_t n = 3000;
  make_data(&d, n, 32, ANN_F16, t_seed() + 20);
  float *qs = make_queries(32, t_seed() + 20);
  hnsw *h = build(&d, ANN_COSINE, n, 1, 0);
  static const uint32_t keeps[] = {5, 1, 0}; /* 50%, 10%, none */
  ann_hit got[10], want[10];
  for (int c = 0; c < 3; c++) {
    fctx f = {10, keeps[c], 0};
    int exact = 0;
    for (int qi = 0; qi < NQ; qi++) {
      const float *q = qs + (size_t)qi * 32;
      int ng = hnsw_search(h, q, 10, 400, allow, &f, got);
      int nw = brute(&d, ANN_COSINE, n, q, 10, allow, &f, NULL, want);
      ck_assert_int_eq(ng, nw);
      for (int i = 0; i < ng; i++) T_CHECK(allow(&f, got[i].id), "row %u not allowed", got[i].id);
      exact += ng == nw && memcmp(got, want, (size_t)ng * sizeof *got) == 0;
      /* small ef: still only allowed rows, and k of them */
      ng = hnsw_search(h, q, 10, 10, allow, &f, got);
      ck_assert_int_eq(ng, nw);
      for (int i = 0; i < ng; i++) T_CHECK(allow(&f, got[i].id), "row %u not allowed", got[i].id);
    }
    printf("hnsw filter %u%%, ef=400: %d/%d queries equal brute force\n", keeps[c] * 10,
           exact, NQ);
    T_CHECK(exact == NQ, "filter %u/10: %d of %d exact", keeps[c], exact, NQ);
  }
  /* one allowed row: found */
  fctx one = {n * 4, 1, 0};
  uint32_t target = UINT32_MAX;
  for (uint32_t i = 0; i < n; i++)
    if (allow(&one, i)) {
      target = i;
      break;
    }
  if (target != UINT32_MAX) {
    int ng = hnsw_search(h, qs, 5, 10, allow, &one, got);
    ck_assert_int_ge(ng, 1);
    ck_assert_uint_eq(got[0].id, target);
  }
  hnsw_free(h);
  free(qs);
  free_data(&d);
}
END_TEST

/* ---- save / load -------------------------------------------------------- */

static void same_results(const hnsw *a, const hnsw *b, const float *qs, int dim) {
  ann_hit ra[20], rb[20];
  for (int qi = 0; qi < NQ; qi++) {
    int na = hnsw_search(a, qs + (size_t)qi * dim, 20, 50, NULL, NULL, ra);
    int nb = hnsw_search(b, qs + (size_t)qi * dim, 20, 50, NULL, NULL, rb);
    ck_assert_int_eq(na, nb);
    T_CHECK(memcmp(ra, rb, (size_t)na * sizeof *ra) == 0, "query %d differs", qi);
  }
}

START_TEST(test_save_load) {
  ds d;
  uint32_t n = 3000, n0 = 2000;
  int dim = 32;
  make_data(&d, n, dim, ANN_F16, t_seed() + 30);
  float *qs = make_queries(dim, t_seed() + 30);
  hnsw *h = build(&d, ANN_L2, n0, 1, 12);
  hnsw_delete(h, 7);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);

  /* in place (malloc'd: aligned) */
  hnsw *g = NULL;
  int rc = hnsw_load(img, len, dim, ANN_L2, ANN_F16, row, &d, &g);
  T_CHECK(rc == ANN_OK, "load: %s", hnsw_errmsg(g));
  ck_assert_uint_eq(hnsw_count(g), n0);
  same_results(h, g, qs, dim);
  /* save of the loaded one: the same bytes */
  uint8_t *img2;
  size_t len2;
  ck_assert_int_eq(hnsw_save(g, &img2, &len2), ANN_OK);
  ck_assert_uint_eq(len, len2);
  T_CHECK(memcmp(img, img2, len) == 0, "image changed by a round trip");
  free(img2);

  /* unaligned: copied */
  uint8_t *buf = malloc(len + 1);
  memcpy(buf + 1, img, len);
  hnsw *u = NULL;
  rc = hnsw_load(buf + 1, len, dim, ANN_L2, ANN_F16, row, &d, &u);
  T_CHECK(rc == ANN_OK, "load unaligned: %s", hnsw_errmsg(u));
  same_results(h, u, qs, dim);
  hnsw_free(u);
  free(buf);

  /* wrong parameters */
  rc = hnsw_load(img, len, dim + 1, ANN_L2, ANN_F16, row, &d, &u);
  ck_assert_int_eq(rc, ANN_CORRUPT);
  T_CHECK(strstr(hnsw_errmsg(u), "dim") != NULL, "message: %s", hnsw_errmsg(u));
  hnsw_free(u);
  rc = hnsw_load(img, len, dim, ANN_COSINE, ANN_F16, row, &d, &u);
  ck_assert_int_eq(rc, ANN_CORRUPT);
  hnsw_free(u);

  /* the loaded index grows: the same graph as the original grown alike,
  ** and the image is untouched (copy-on-write) */
  uint8_t *keep = malloc(len);
  memcpy(keep, img, len);
  ck_assert_int_eq(hnsw_add(g, n0 + 500), ANN_OK);
  ck_assert_int_eq(hnsw_add(g, n0 + 500), ANN_ERROR);
  ck_assert_int_eq(hnsw_build(g, n), ANN_OK);
  ck_assert_int_eq(hnsw_add(h, n0 + 500), ANN_OK);
  ck_assert_int_eq(hnsw_build(h, n), ANN_OK);
  T_CHECK(memcmp(keep, img, len) == 0, "the image was written to");
  ck_assert_uint_eq(hnsw_count(g), n);
  same_results(h, g, qs, dim);
  uint8_t *del = calloc(n, 1);
  del[7] = 1;
  ann_hit got[10], want[10];
  double sum = 0;
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * dim;
    int ng = hnsw_search(g, q, 10, 64, NULL, NULL, got);
    brute(&d, ANN_L2, n, q, 10, NULL, NULL, del, want);
    for (int i = 0; i < ng; i++)
      for (int j = 0; j < 10; j++) sum += got[i].id == want[j].id;
  }
  printf("hnsw recall@10 after load + 1000 adds, ef=64: %.4f\n", sum / (10.0 * NQ));
  T_CHECK(sum / (10.0 * NQ) >= 0.95, "recall after load and adds %.4f", sum / (10.0 * NQ));
  free(del);
  free(keep);
  hnsw_free(g);
  hnsw_free(h);
  free(img);
  free(qs);
  free_data(&d);
}
END_TEST

/* load a (possibly damaged) image; if it is accepted, use it hard */
static int try_image(const uint8_t *img, size_t len, ds *d, const float *q) {
  hnsw *g = NULL;
  int rc = hnsw_load(img, len, d->dim, ANN_L2, ANN_F32, row, d, &g);
  if (rc == ANN_OK) {
    ann_hit hits[40];
    for (int i = 0; i < 3; i++) hnsw_search(g, q + i * d->dim, 40, 40, NULL, NULL, hits);
    uint8_t *again;
    size_t alen;
    if (hnsw_save(g, &again, &alen) == ANN_OK) free(again);
    hnsw_add(g, d->n - 1);
  } else {
    T_CHECK(rc == ANN_CORRUPT, "rc %d", rc);
    T_CHECK(hnsw_errmsg(g)[0] != 0, "no message");
  }
  hnsw_free(g);
  return rc;
}

static void le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

START_TEST(test_corrupt) {
  ds d;
  uint32_t n = 400;
  int dim = 16, M = 6;
  make_data(&d, n + 1, dim, ANN_F32, t_seed() + 40);
  float *qs = make_queries(dim, t_seed() + 40);
  hnsw *h = build(&d, ANN_L2, n, 1, M);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);
  hnsw_free(h);
  ck_assert_int_eq(try_image(img, len, &d, qs), ANN_OK);
  uint8_t *b = malloc(len);

  /* truncations: every length in the header, then a spread */
  for (size_t l = 0; l < len; l += l < 200 ? 1 : 1 + len / 500) {
    memcpy(b, img, l);
    T_CHECK(try_image(b, l, &d, qs) == ANN_CORRUPT, "truncated to %zu accepted", l);
  }
  /* random byte flips: the header, the link lists, anywhere */
  t_rng r = {t_seed() + 42};
  size_t l0end = 80 + (size_t)n * (1 + 2 * M) * 4;
  int rejected = 0, trials = 3000;
  for (int t = 0; t < trials; t++) {
    memcpy(b, img, len);
    size_t at = t % 3 == 0 ? t_next(&r) % 80
                : t % 3 == 1 ? 80 + t_next(&r) % (l0end - 80)
                             : t_next(&r) % len;
    b[at] ^= (uint8_t)(1 + t_next(&r) % 255);
    rejected += try_image(b, len, &d, qs) != ANN_OK;
  }
  printf("hnsw corrupt images: %d of %d byte flips rejected (the rest are still valid)\n",
         rejected, trials);
  /* links that must be refused */
  uint32_t M0 = 2 * (uint32_t)M;
  for (uint32_t node = 0; node < n; node += 37) {
    uint8_t *blk = b + 80 + (size_t)node * (1 + M0) * 4;
    uint32_t cnt = (uint32_t)blk[0] | (uint32_t)blk[1] << 8;
    ck_assert_uint_gt(cnt, 0);
    static const uint32_t bad[] = {0, 1, 2, 3};
    for (int v = 0; v < 4; v++) {
      memcpy(b, img, len);
      if (bad[v] == 0) le32(blk + 4, n); /* out of range */
      if (bad[v] == 1) le32(blk + 4, UINT32_MAX);
      if (bad[v] == 2) le32(blk + 4, node); /* self */
      if (bad[v] == 3) le32(blk, M0 + 1);   /* too many */
      T_CHECK(try_image(b, len, &d, qs) == ANN_CORRUPT, "node %u case %d accepted", node, v);
    }
  }
  /* upper-level links to a node without that level */
  memcpy(b, img, len);
  uint32_t top = img[56], entry = (uint32_t)img[52] | (uint32_t)img[53] << 8;
  ck_assert_uint_gt(top, 0);
  uint32_t low = 0;
  while (b[80 + (size_t)n * (1 + M0) * 4 + 8 * (size_t)low] != 0) low++;
  size_t noff = 80 + (size_t)n * (1 + M0) * 4 + 8 * (size_t)entry + 4;
  uint32_t eoff = (uint32_t)b[noff] | (uint32_t)b[noff + 1] << 8;
  size_t upstart = 80 + (size_t)n * (1 + M0) * 4 + 8 * (size_t)n;
  uint8_t *eblk = b + upstart + (size_t)eoff * (1 + M) * 4;
  le32(eblk + 4, low);
  T_CHECK(try_image(b, len, &d, qs) == ANN_CORRUPT, "upper link to a level-0 node accepted");
  /* an empty index's image */
  hnsw *e = NULL;
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, NULL, row, &d, &e), ANN_OK);
  uint8_t *eimg;
  size_t elen;
  ck_assert_int_eq(hnsw_save(e, &eimg, &elen), ANN_OK);
  hnsw_free(e);
  ck_assert_int_eq(try_image(eimg, elen, &d, qs), ANN_OK);
  for (size_t l = 0; l < elen; l++) T_CHECK(try_image(eimg, l, &d, qs) == ANN_CORRUPT, "%zu", l);
  free(eimg);
  free(b);
  free(img);
  free(qs);
  free_data(&d);
}
END_TEST

/* ---- threads, determinism ----------------------------------------------- */

START_TEST(test_threads) {
  ds d;
  uint32_t n = 5000;
  int dim = 32;
  make_data(&d, n, dim, ANN_F32, t_seed() + 50);
  float *qs = make_queries(dim, t_seed() + 50);
  double t0 = now();
  hnsw *h1 = build(&d, ANN_L2, n, 1, 0);
  double t1 = now();
  hnsw *h2 = build(&d, ANN_L2, n, 2, 0);
  double t2 = now();
  double r1 = recall(h1, &d, ANN_L2, n, qs, 10, 64);
  double r2 = recall(h2, &d, ANN_L2, n, qs, 10, 64);
  printf("hnsw threads: 1 thread %.4f (%.2fs), 2 threads %.4f (%.2fs)\n", r1, t1 - t0,
         r2, t2 - t1);
  T_CHECK(fabs(r1 - r2) <= 0.01, "recall %.4f vs %.4f", r1, r2);

  /* threads = 1: the same image every time, and the same as adding one by one */
  hnsw *h3 = NULL;
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, NULL, row, &d, &h3), ANN_OK);
  for (uint32_t i = 0; i < n; i++) ck_assert_int_eq(hnsw_add(h3, i), ANN_OK);
  uint8_t *a, *b;
  size_t la, lb;
  ck_assert_int_eq(hnsw_save(h1, &a, &la), ANN_OK);
  ck_assert_int_eq(hnsw_save(h3, &b, &lb), ANN_OK);
  T_CHECK(la == lb && memcmp(a, b, la) == 0, "threads=1 build is not deterministic");
  free(a);
  free(b);
  hnsw_free(h1);
  hnsw_free(h2);
  hnsw_free(h3);
  free(qs);
  free_data(&d);
}
END_TEST

typedef struct conc {
  const hnsw *h;
  const float *qs;
  int dim;
  ann_hit *res; /* NQ x 10 */
} conc;

static int conc_one(void *ctx, size_t i) {
  conc *c = ctx;
  int n = hnsw_search(c->h, c->qs + i * (size_t)c->dim, 10, 64, NULL, NULL, c->res + i * 10);
  return n == 10 ? 0 : 1;
}

START_TEST(test_concurrent_search) {
  ds d;
  uint32_t n = 2000;
  int dim = 32;
  make_data(&d, n, dim, ANN_F32, t_seed() + 60);
  float *qs = make_queries(dim, t_seed() + 60);
  hnsw *h = build(&d, ANN_DOT, n, 2, 0);
  ann_hit *seq = calloc(NQ * 10, sizeof *seq), *par = calloc(NQ * 10, sizeof *par);
  conc c = {h, qs, dim, seq};
  for (size_t i = 0; i < NQ; i++) ck_assert_int_eq(conc_one(&c, i), 0);
  c.res = par;
  ck_assert_int_eq(util_parallel_for(4, NQ, conc_one, &c), 0);
  T_CHECK(memcmp(seq, par, NQ * 10 * sizeof *seq) == 0, "concurrent results differ");
  free(seq);
  free(par);
  hnsw_free(h);
  free(qs);
  free_data(&d);
}
END_TEST

/* ---- edges and errors --------------------------------------------------- */

START_TEST(test_edges) {
  ds d;
  int dim = 8;
  make_data(&d, 60, dim, ANN_F32, t_seed() + 70);
  float q[8] = {0};
  ann_hit hits[200];
  hnsw *h = NULL;
  ck_assert_int_eq(hnsw_new(dim, ANN_COSINE, ANN_F32, NULL, row, &d, &h), ANN_OK);
  /* empty */
  ck_assert_uint_eq(hnsw_count(h), 0);
  ck_assert_int_eq(hnsw_search(h, q, 10, 10, NULL, NULL, hits), 0);
  ck_assert_int_eq(hnsw_build(h, 0), ANN_OK);
  ck_assert_int_eq(hnsw_delete(h, 0), ANN_ERROR);
  /* one row */
  ck_assert_int_eq(hnsw_add(h, 5), ANN_OK);
  ck_assert_int_eq(hnsw_search(h, d.f, 10, 10, NULL, NULL, hits), 1);
  ck_assert_uint_eq(hits[0].id, 5);
  /* ids in any order, then fill the gaps */
  ck_assert_int_eq(hnsw_add(h, 40), ANN_OK);
  ck_assert_int_eq(hnsw_add(h, 2), ANN_OK);
  ck_assert_int_eq(hnsw_add(h, 2), ANN_ERROR);
  ck_assert_int_eq(hnsw_add(h, UINT32_MAX), ANN_ERROR);
  ck_assert_int_eq(hnsw_build(h, 50), ANN_OK);
  ck_assert_uint_eq(hnsw_count(h), 50);
  /* k = 0, k > n, k = n with ef small */
  ck_assert_int_eq(hnsw_search(h, d.f, 0, 10, NULL, NULL, hits), 0);
  ck_assert_int_eq(hnsw_search(h, d.f, -3, 10, NULL, NULL, hits), 0);
  ck_assert_int_eq(hnsw_search(h, d.f, 200, 1, NULL, NULL, hits), 50);
  for (int i = 1; i < 50; i++) T_CHECK(hit_cmp(&hits[i - 1], &hits[i]) < 0, "order");
  ck_assert_int_eq(hnsw_search(h, d.f, 50, 0, NULL, NULL, hits), 50);
  hnsw_delete(h, 3);
  ck_assert_int_eq(hnsw_search(h, d.f, 200, 10, NULL, NULL, hits), 49);
  /* a zero query under cosine: every distance 1, ties broken by id */
  int nh = hnsw_search(h, q, 5, 50, NULL, NULL, hits);
  ck_assert_int_eq(nh, 5);
  for (int i = 0; i < 5; i++) ck_assert_float_eq(hits[i].dist, 1.0f);
  ck_assert_uint_eq(hits[0].id, 0);
  ck_assert_uint_eq(hits[3].id, 4);
  hnsw_free(h);

  /* bad arguments */
  hnsw_params p = {1, 0, 0, 0};
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, &p, row, &d, &h), ANN_ERROR);
  T_CHECK(strstr(hnsw_errmsg(h), "M must") != NULL, "%s", hnsw_errmsg(h));
  ck_assert_int_eq(hnsw_add(h, 0), ANN_ERROR);
  hnsw_free(h);
  ck_assert_int_eq(hnsw_new(0, ANN_L2, ANN_F32, NULL, row, &d, &h), ANN_ERROR);
  hnsw_free(h);
  ck_assert_int_eq(hnsw_new(dim, (ann_metric)7, ANN_F32, NULL, row, &d, &h), ANN_ERROR);
  hnsw_free(h);
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, (ann_elem)3, NULL, row, &d, &h), ANN_ERROR);
  hnsw_free(h);
  ck_assert_str_eq(hnsw_errmsg(NULL), "out of memory");
  hnsw_free(NULL);
  free_data(&d);
}
END_TEST

int main(void) {
  printf("test_hnsw: seed %llu, kernels %s\n", (unsigned long long)t_seed(), k_get()->name);
  Suite *s = suite_create("hnsw");
  TCase *tc = tcase_create("hnsw");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_edges);
  tcase_add_test(tc, test_recall_1k);
  tcase_add_test(tc, test_recall_10k);
  tcase_add_test(tc, test_delete);
  tcase_add_test(tc, test_filter);
  tcase_add_test(tc, test_save_load);
  tcase_add_test(tc, test_corrupt);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_concurrent_search);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
