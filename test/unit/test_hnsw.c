/*
** test/unit/test_hnsw.c - lib/ann/hnsw: recall against brute force (same
** kernels), deletes, filters, save/load and damaged images, threads, edges;
** each with and without the int8 first pass (hnsw_set_q8), which must keep
** recall within 0.002 of the exact walk's and return exact distances.
**
** Data: clustered (centres plus noise) from the seeded PRNG in testutil.h;
** queries come from the same distribution.  Recall figures are printed.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/hnsw.h"
#include "ann/q8.h"
#include "k.h"
#include "testann.h"
#include "testutil.h"
#include "util/le.h"
#include "util/pool.h"

T_ANN_OPS(hnsw);

#define NQ 100
#define NQR 1000 /* queries of the recall cases: one query is 0.001 */
/* hnsw.h: the int8 pass re-scores the best 2k of its pool */
#define Q8_RESCORED(k) (2 * (k))

/* q8 on (the int8 copies of d) or off */
static void use_q8(hnsw *h, ds *d, int on) {
  ck_assert_int_eq(hnsw_set_q8(h, on ? row_q8 : NULL, d), ANN_OK);
}

static hnsw *build(ds *d, ann_metric m, uint32_t n, int threads, int M) {
  hnsw_params p = {M, 0, 0, threads, 0};
  hnsw *h = NULL;
  int rc = hnsw_new(d->dim, m, d->elem, &p, row, d, &h);
  t_built(&hnsw_t, h, rc, n);
  return h;
}

/* the exact top k of each of nq queries, nq x k hits (malloc'd) */
static ann_hit *truth_of(const ds *d, ann_metric m, uint32_t n, const float *qs, int nq,
                         int k) {
  ann_hit *t = malloc((size_t)nq * k * sizeof *t);
  for (int qi = 0; qi < nq; qi++)
    T_CHECK(brute(d, m, n, qs + (size_t)qi * d->dim, k, NULL, NULL, NULL, t + (size_t)qi * k) == k,
            "fewer than %d rows", k);
  return t;
}

/* Mean recall@k over nq queries against truth (k per query).  Every hit
** must carry the exact distance, in order.  *vmax: the most row (f32/f16)
** fetches one search made. */
static double recall(const hnsw *h, ds *d, ann_metric m, const float *qs, int nq, int k,
                     int ef, const ann_hit *truth, long *vmax) {
  ann_hit got[64];
  double sum = 0;
  *vmax = 0;
  for (int qi = 0; qi < nq; qi++) {
    const float *q = qs + (size_t)qi * d->dim;
    const ann_hit *want = truth + (size_t)qi * k;
    long v0 = atomic_load(&d->vcalls);
    int ng = hnsw_search(h, q, k, ef, NULL, NULL, got);
    long v = atomic_load(&d->vcalls) - v0;
    if (v > *vmax) *vmax = v;
    T_CHECK(ng == k, "hits %d, expected %d", ng, k);
    int inter = 0;
    for (int i = 0; i < ng; i++) {
      T_CHECK(got[i].dist == tdist(d, m, q, got[i].id), "row %u: distance %.9g, exact %.9g",
              got[i].id, (double)got[i].dist, (double)tdist(d, m, q, got[i].id));
      for (int j = 0; j < k; j++)
        if (got[i].id == want[j].id) {
          inter++;
          break;
        }
    }
    for (int i = 1; i < ng; i++)
      T_CHECK(hit_cmp(&got[i - 1], &got[i]) < 0, "results not sorted");
    sum += (double)inter / k;
  }
  return sum / nq;
}

/* ---- recall ------------------------------------------------------------- */

/* Recall@10 at several ef, exact walk and int8 walk (q8) on the same
** graph: the exact one >= 0.95 at ef=64 and >= 0.99 at ef=200, the q8 one
** within 0.002 of it at every ef, with exact distances and no more row
** fetches than its pool. */
static void recall_case(uint32_t n, int dim, ann_elem e, ann_metric m) {
  static const int efs[] = {10, 16, 32, 64, 200};
  ds d;
  uint64_t seed = t_seed();
  float *qs = t_setup(&d, n, dim, e, seed, NQR);
  double t0 = now();
  hnsw *h = build(&d, m, n, 1, 0);
  double t1 = now();
  ann_hit *truth = truth_of(&d, m, n, qs, NQR, 10);
  const char *en = e == ANN_F32 ? "f32" : "f16";
  printf("hnsw recall@10 n=%u dim=%d %s %s (build %.2fs), exact / q8:", n, dim, en, mname(m),
         t1 - t0);
  for (size_t i = 0; i < sizeof efs / sizeof efs[0]; i++) {
    int ef = efs[i];
    long vf, vq;
    use_q8(h, &d, 0);
    double rf = recall(h, &d, m, qs, NQR, 10, ef, truth, &vf);
    use_q8(h, &d, 1);
    long q0 = atomic_load(&d.qcalls);
    double rq = recall(h, &d, m, qs, NQR, 10, ef, truth, &vq);
    printf("  ef=%d %.4f/%.4f", ef, rf, rq);
    T_CHECK(rq >= rf - 0.002, "q8 recall@10 %.4f, exact %.4f (n=%u %s %s ef=%d, seed %llu)", rq,
            rf, n, en, mname(m), ef, (unsigned long long)seed);
    /* the walk was int8: row fetches only for the pool's re-scoring */
    T_CHECK(atomic_load(&d.qcalls) > q0, "q8 callback never called");
    T_CHECK(vq <= Q8_RESCORED(10), "q8 search fetched %ld rows (ef=%d)", vq, ef);
    if (ef == 64)
      T_CHECK(rf >= 0.95, "recall@10 ef=64 %.4f (n=%u %s %s, seed %llu)", rf, n, en, mname(m),
              (unsigned long long)seed);
    if (ef == 200)
      T_CHECK(rf >= 0.99, "recall@10 ef=200 %.4f (n=%u %s %s, seed %llu)", rf, n, en, mname(m),
              (unsigned long long)seed);
  }
  printf("\n");
  free(truth);
  hnsw_free(h);
  t_teardown(&d, qs);
}

START_TEST(test_recall_1k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(1000, 48, e ? ANN_F16 : ANN_F32, ms[mi]);
}
END_TEST

/* keep_pruned (the paper's keepPrunedConnections) builds another graph of
** the same rows; both find the exact neighbours at the tested recall. */
START_TEST(test_keep_pruned) {
  ds d;
  uint32_t n = 3000;
  float *qs = t_setup(&d, n, 32, ANN_F32, t_seed() + 90, NQ);
  ann_hit *truth = truth_of(&d, ANN_L2, n, qs, NQ, 10);
  hnsw *h[2];
  uint8_t *img[2];
  size_t len[2];
  for (int kp = 0; kp < 2; kp++) {
    hnsw_params p = {16, 64, 0, 1, kp};
    ck_assert_int_eq(hnsw_new(32, ANN_L2, ANN_F32, &p, row, &d, &h[kp]), ANN_OK);
    ck_assert_int_eq(hnsw_build(h[kp], n), ANN_OK);
    ck_assert_int_eq(hnsw_save(h[kp], &img[kp], &len[kp]), ANN_OK);
    long vmax;
    double r = recall(h[kp], &d, ANN_L2, qs, NQ, 10, 64, truth, &vmax);
    printf("hnsw keep_pruned=%d: recall@10 %.4f at ef=64\n", kp, r);
    T_CHECK(r >= 0.97, "keep_pruned=%d: recall %.4f", kp, r);
  }
  T_CHECK(len[0] == len[1] && memcmp(img[0], img[1], len[0]) != 0, "keep_pruned made the same graph");
  for (int kp = 0; kp < 2; kp++) {
    free(img[kp]);
    hnsw_free(h[kp]);
  }
  free(truth);
  t_teardown(&d, qs);
}
END_TEST

START_TEST(test_recall_10k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(10000, 32, e ? ANN_F16 : ANN_F32, ms[mi]);
}
END_TEST

/* ---- deletes and filters ------------------------------------------------ */

/* _i: 0 exact, 1 with the int8 pass */
START_TEST(test_delete) {
  ds d;
  uint32_t n = 2000;
  float *qs = t_setup(&d, n, 32, ANN_F32, t_seed() + 10, NQ);
  hnsw *h = build(&d, ANN_L2, n, 1, 0);
  use_q8(h, &d, _i);
  uint8_t *del = t_delete_third(&hnsw_t, h, n, t_seed() + 12);
  ck_assert_int_eq(hnsw_delete(h, 0), del[0] ? ANN_OK : ANN_OK);
  del[0] = 1;
  ck_assert_int_eq(hnsw_delete(h, 0), ANN_OK); /* twice is fine */
  ck_assert_int_eq(hnsw_delete(h, n), ANN_EINVAL);
  ck_assert_uint_eq(hnsw_count(h), n);
  ann_hit got[50], want[50];
  double sum = 0;
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * 32;
    int ng = hnsw_search(h, q, 50, 100, NULL, NULL, got);
    ck_assert_int_eq(ng, 50);
    for (int i = 0; i < ng; i++) {
      T_CHECK(!del[got[i].id], "deleted row %u returned", got[i].id);
      T_CHECK(got[i].dist == tdist(&d, ANN_L2, q, got[i].id), "row %u: inexact distance",
              got[i].id);
    }
    brute(&d, ANN_L2, n, q, 10, NULL, NULL, del, want);
    ng = hnsw_search(h, q, 10, 64, NULL, NULL, got);
    int inter = 0;
    for (int i = 0; i < ng; i++)
      for (int j = 0; j < 10; j++) inter += got[i].id == want[j].id;
    sum += inter / 10.0;
  }
  printf("hnsw recall@10 with a third deleted, ef=64%s: %.4f\n", _i ? ", q8" : "", sum / NQ);
  T_CHECK(sum / NQ >= 0.95, "recall with deletes %.4f", sum / NQ);
  /* everything deleted: nothing comes back */
  for (uint32_t i = 0; i < n; i++) hnsw_delete(h, i);
  ck_assert_int_eq(hnsw_search(h, qs, 10, 64, NULL, NULL, got), 0);
  hnsw_free(h);
  free(del);
  t_teardown(&d, qs);
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
  float *qs = t_setup(&d, n, 32, ANN_F16, t_seed() + 20, NQ);
  hnsw *h = build(&d, ANN_COSINE, n, 1, 0);
  use_q8(h, &d, _i); /* _i: 0 exact, 1 with the int8 pass */
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
    printf("hnsw filter %u%%, ef=400%s: %d/%d queries equal brute force\n", keeps[c] * 10,
           _i ? ", q8" : "", exact, NQ);
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
  t_teardown(&d, qs);
}
END_TEST

static int allow_all(void *ctx, uint32_t i) {
  (void)ctx;
  (void)i;
  return 1;
}

/* A search without a filter walks the sorted pool (search_pool), one with
** a filter the two heaps (search_layer): with a filter that allows every
** row they must expand the same rows and return the same hits, bit for
** bit, exact or int8, at any k and ef.  And an index whose image holds a
** deleted row hides it after hnsw_load (the count of deleted rows that
** lets a search skip the flags is rebuilt from the image). */
START_TEST(test_pool_walk) {
  ds d;
  uint32_t n = 3000;
  int dim = 24;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 25, NQ);
  hnsw *h = build(&d, ANN_COSINE, n, 1, 8);
  use_q8(h, &d, _i);
  static const int ks[] = {1, 10, 25}, efs[] = {1, 16, 100};
  ann_hit a[25], b[25];
  for (int qi = 0; qi < NQ; qi++)
    for (int ki = 0; ki < 3; ki++)
      for (int ei = 0; ei < 3; ei++) {
        const float *q = qs + (size_t)qi * dim;
        int na = hnsw_search(h, q, ks[ki], efs[ei], NULL, NULL, a);
        int nb = hnsw_search(h, q, ks[ki], efs[ei], allow_all, NULL, b);
        ck_assert_int_eq(na, ks[ki]);
        ck_assert_int_eq(na, nb);
        T_CHECK(memcmp(a, b, (size_t)na * sizeof *a) == 0, "query %d k=%d ef=%d differs", qi,
                ks[ki], efs[ei]);
      }
  uint32_t gone = a[0].id; /* the last query's nearest */
  ck_assert_int_eq(hnsw_delete(h, gone), ANN_OK);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);
  hnsw *g = NULL;
  T_CHECK(hnsw_load(img, len, dim, ANN_COSINE, ANN_F32, row, &d, &g) == ANN_OK, "load: %s",
          hnsw_errmsg(g));
  use_q8(g, &d, _i);
  int ng = hnsw_search(g, qs + (size_t)(NQ - 1) * dim, 25, 100, NULL, NULL, b);
  ck_assert_int_eq(ng, 25);
  for (int i = 0; i < ng; i++) T_CHECK(b[i].id != gone, "deleted row %u returned", gone);
  hnsw_free(g);
  free(img);
  hnsw_free(h);
  t_teardown(&d, qs);
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
  float *qs = t_setup(&d, n, dim, ANN_F16, t_seed() + 30, NQ);
  hnsw *h = build(&d, ANN_L2, n0, 1, 12);
  use_q8(h, &d, _i); /* _i: 0 exact, 1 with the int8 pass (not in the image) */
  hnsw_delete(h, 7);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);

  /* in place (malloc'd: aligned) */
  hnsw *g = t_load(&hnsw_t, img, len, &d, dim, ANN_L2, ANN_F16);
  use_q8(g, &d, _i);
  ck_assert_uint_eq(hnsw_count(g), n0);
  same_results(h, g, qs, dim);
  /* save of the loaded one: the same bytes */
  t_same_image(&hnsw_t, g, img, len);

  /* unaligned: copied */
  uint8_t *buf;
  hnsw *u = t_load_unaligned(&hnsw_t, img, len, &d, dim, ANN_L2, ANN_F16, &buf);
  use_q8(u, &d, _i);
  same_results(h, u, qs, dim);
  hnsw_free(u);
  free(buf);

  /* wrong parameters */
  t_load_refused(&hnsw_t, img, len, &d, dim + 1, ANN_L2, ANN_F16, 1);
  t_load_refused(&hnsw_t, img, len, &d, dim, ANN_COSINE, ANN_F16, 0);

  /* the loaded index grows: the same graph as the original grown alike,
  ** and the image is untouched (copy-on-write) */
  uint8_t *keep = malloc(len);
  memcpy(keep, img, len);
  t_grow_alike(&hnsw_t, g, h, n0 + 500, n, keep, img, len);
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
  printf("hnsw recall@10 after load + 1000 adds, ef=64%s: %.4f\n", _i ? ", q8" : "",
         sum / (10.0 * NQ));
  T_CHECK(sum / (10.0 * NQ) >= 0.95, "recall after load and adds %.4f", sum / (10.0 * NQ));
  free(del);
  free(keep);
  hnsw_free(g);
  hnsw_free(h);
  free(img);
  t_teardown(&d, qs);
}
END_TEST

/* an image that loaded, used hard */
static void use_image(void *x, ds *d, const float *q) {
  hnsw *g = x;
  ann_hit hits[40];
  for (int i = 0; i < 3; i++) hnsw_search(g, q + i * d->dim, 40, 40, NULL, NULL, hits);
  uint8_t *again;
  size_t alen;
  if (hnsw_save(g, &again, &alen) == ANN_OK) free(again);
  hnsw_add(g, d->n - 1);
}

/* load a (possibly damaged) image; if it is accepted, use it hard */
static int try_image(const uint8_t *img, size_t len, ds *d, const float *q) {
  return t_try_image(&hnsw_t, img, len, d, q, use_image);
}

START_TEST(test_corrupt) {
  ds d;
  uint32_t n = 400;
  int dim = 16, M = 6;
  float *qs = t_setup(&d, n + 1, dim, ANN_F32, t_seed() + 40, NQ);
  hnsw *h = build(&d, ANN_L2, n, 1, M);
  size_t len;
  uint8_t *img = t_save(&hnsw_t, h, &len);
  hnsw_free(h);
  /* truncations: every length in the header, then a spread */
  t_truncations(&hnsw_t, img, len, &d, qs, use_image, 500);
  uint8_t *b = malloc(len);
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
    uint32_t cnt = util_get_le32(blk);
    ck_assert_uint_gt(cnt, 0);
    static const uint32_t bad[] = {0, 1, 2, 3};
    for (int v = 0; v < 4; v++) {
      memcpy(b, img, len);
      if (bad[v] == 0) util_put_le32(blk + 4, n); /* out of range */
      if (bad[v] == 1) util_put_le32(blk + 4, UINT32_MAX);
      if (bad[v] == 2) util_put_le32(blk + 4, node); /* self */
      if (bad[v] == 3) util_put_le32(blk, M0 + 1);   /* too many */
      T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "node %u case %d accepted", node, v);
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
  util_put_le32(eblk + 4, low);
  T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "upper link to a level-0 node accepted");
  /* an empty index's image */
  hnsw *e = NULL;
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, NULL, row, &d, &e), ANN_OK);
  uint8_t *eimg;
  size_t elen;
  ck_assert_int_eq(hnsw_save(e, &eimg, &elen), ANN_OK);
  hnsw_free(e);
  ck_assert_int_eq(try_image(eimg, elen, &d, qs), ANN_OK);
  for (size_t l = 0; l < elen; l++) T_CHECK(try_image(eimg, l, &d, qs) == ANN_ECORRUPT, "%zu", l);
  free(eimg);
  free(b);
  free(img);
  t_teardown(&d, qs);
}
END_TEST

/* ---- the int8 pass over rows without int8 copies -------------------------- */

/* Rows the callback has no int8 copy of (rows appended since the copies
** were made) are scored exactly: recall stays within 0.002 of the exact
** walk's and distances are exact, and with no copies at all (at ef >= 2k)
** the results are the exact walk's. */
START_TEST(test_q8_partial) {
  ds d;
  uint32_t n = 5000;
  int dim = 32, ef = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 80, NQR);
  hnsw *h = build(&d, ANN_L2, n, 1, 0);
  ann_hit *truth = truth_of(&d, ANN_L2, n, qs, NQR, 10);
  long vf, vq;
  double rf = recall(h, &d, ANN_L2, qs, NQR, 10, ef, truth, &vf);
  use_q8(h, &d, 1);
  d.nq8 = n * 7 / 10;
  double rq = recall(h, &d, ANN_L2, qs, NQR, 10, ef, truth, &vq);
  printf("hnsw recall@10 ef=%d, int8 copies of 70%% of the rows: exact %.4f, q8 %.4f\n", ef,
         rf, rq);
  T_CHECK(rq >= rf - 0.002, "q8 with 70%% copies: recall %.4f, exact %.4f", rq, rf);
  T_CHECK(vq > Q8_RESCORED(10), "rows without copies were not scored exactly");
  d.nq8 = 0;
  ann_hit a[10], b[10];
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * dim;
    use_q8(h, &d, 1);
    int na = hnsw_search(h, q, 10, 64, NULL, NULL, a);
    use_q8(h, &d, 0);
    int nb = hnsw_search(h, q, 10, 64, NULL, NULL, b);
    T_CHECK(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0, "query %d differs", qi);
  }
  free(truth);
  hnsw_free(h);
  t_teardown(&d, qs);
}
END_TEST

/* hnsw_set_q8_rows (the int8 rows in one array, as the store keeps them)
** walks exactly as the callback does: the same hits, bit for bit, with
** copies of every row or of a prefix (the rest scored exactly), at a stride
** wider than dim too; on a graph read in place and on one that owns its
** links (after an insertion). */
START_TEST(test_q8_rows) {
  ds d;
  uint32_t n = 4000;
  int dim = 40;
  make_data(&d, n, dim, _i ? ANN_F16 : ANN_F32, t_seed() + 85);
  float *qs = make_queries(dim, t_seed() + 85, NQ);
  hnsw *h = build(&d, ANN_COSINE, n, 1, 0);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);
  hnsw *g = NULL;
  ck_assert_int_eq(hnsw_load(img, len, dim, ANN_COSINE, d.elem, row, &d, &g), ANN_OK);
  size_t stride = 64; /* a stride wider than dim (40) */
  int8_t *wide = calloc((size_t)n, stride);
  for (uint32_t i = 0; i < n; i++) memcpy(wide + i * stride, d.q + (size_t)i * dim, (size_t)dim);
  static const uint32_t cover[] = {4000, 2500};
  ann_hit a[20], b[20];
  for (int own = 0; own < 2; own++) {
    if (own) { /* an insertion copies the image into the index's memory */
      ck_assert_int_eq(hnsw_delete(g, n - 1), ANN_OK);
      ck_assert_int_eq(hnsw_delete(h, n - 1), ANN_OK);
    }
    for (int ci = 0; ci < 2; ci++) {
      d.nq8 = cover[ci];
      for (int qi = 0; qi < NQ; qi++) {
        const float *q = qs + (size_t)qi * dim;
        ck_assert_int_eq(hnsw_set_q8(g, row_q8, &d), ANN_OK);
        int na = hnsw_search(g, q, 20, 40, NULL, NULL, a);
        ck_assert_int_eq(hnsw_set_q8_rows(g, wide, stride, d.qs, cover[ci]), ANN_OK);
        int nb = hnsw_search(g, q, 20, 40, NULL, NULL, b);
        ck_assert_int_eq(na, 20);
        T_CHECK(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0,
                "own %d cover %u query %d differs", own, cover[ci], qi);
        nb = hnsw_search(g, q, 20, 40, allow_all, NULL, b); /* the heaps' walk */
        T_CHECK(na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0,
                "own %d cover %u query %d: filtered walk differs", own, cover[ci], qi);
      }
    }
  }
  free(img); /* (after the delete the graph no longer reads it) */
  ck_assert_int_eq(hnsw_set_q8_rows(g, wide, (size_t)dim - 1, d.qs, n), ANN_EINVAL);
  ck_assert_int_eq(hnsw_set_q8_rows(g, wide, stride, NULL, n), ANN_EINVAL);
  ck_assert_int_eq(hnsw_set_q8_rows(g, NULL, 0, NULL, 0), ANN_OK); /* off */
  same_results(g, h, qs, dim);
  ck_assert_int_eq(hnsw_set_q8_rows(NULL, wide, stride, d.qs, n), ANN_EINVAL);
  free(wide);
  hnsw_free(g);
  hnsw_free(h);
  t_teardown(&d, qs);
}
END_TEST

/* ---- threads, determinism ----------------------------------------------- */

START_TEST(test_threads) {
  ds d;
  uint32_t n = 5000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 50, NQ);
  double t0 = now();
  hnsw *h1 = build(&d, ANN_L2, n, 1, 0);
  double t1 = now();
  hnsw *h2 = build(&d, ANN_L2, n, 2, 0);
  double t2 = now();
  ann_hit *truth = truth_of(&d, ANN_L2, n, qs, NQ, 10);
  long v;
  double r1 = recall(h1, &d, ANN_L2, qs, NQ, 10, 64, truth, &v);
  double r2 = recall(h2, &d, ANN_L2, qs, NQ, 10, 64, truth, &v);
  free(truth);
  printf("hnsw threads: 1 thread %.4f (%.2fs), 2 threads %.4f (%.2fs)\n", r1, t1 - t0,
         r2, t2 - t1);
  T_CHECK(fabs(r1 - r2) <= 0.01, "recall %.4f vs %.4f", r1, r2);

  /* threads = 1: the same image every time, and the same as adding one by
  ** one; _i = 1: with the int8 pass on while adding (construction is exact
  ** whatever it is) */
  hnsw *h3 = NULL;
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, NULL, row, &d, &h3), ANN_OK);
  use_q8(h3, &d, _i);
  for (uint32_t i = 0; i < n; i++) ck_assert_int_eq(hnsw_add(h3, i), ANN_OK);
  uint8_t *a, *b;
  size_t la, lb;
  ck_assert_int_eq(hnsw_save(h1, &a, &la), ANN_OK);
  ck_assert_int_eq(hnsw_save(h3, &b, &lb), ANN_OK);
  T_CHECK(la == lb && memcmp(a, b, la) == 0, "threads=1 build is not deterministic%s",
          _i ? " (q8 set)" : "");
  free(a);
  free(b);
  hnsw_free(h1);
  hnsw_free(h2);
  hnsw_free(h3);
  t_teardown(&d, qs);
}
END_TEST

/* Rows on a line (x = i): the heuristic keeps about one neighbour per side,
** so one lost link disconnects a stretch of rows.  A parallel build that
** overwrote links added by a concurrent insertion left stretches no search
** could reach.  Built in stages (save, load, grow on 2 threads, as the
** store does), every row must find itself. */
static const void *line_row(void *ctx, uint32_t i) {
  const float *r = ctx;
  return r + (size_t)i * 8;
}

START_TEST(test_threads_line) {
  uint32_t n = 3000;
  float *r = malloc((size_t)n * 8 * sizeof *r);
  ck_assert_ptr_nonnull(r);
  for (uint32_t i = 0; i < n; i++)
    for (int j = 0; j < 8; j++) r[(size_t)i * 8 + j] = j ? (float)j : (float)i;
  for (int round = 0; round < 3; round++) {
    hnsw *h = NULL;
    ck_assert_int_eq(hnsw_new(8, ANN_L2, ANN_F32, &(hnsw_params){0, 0, 0, 2, 0}, line_row, r, &h), ANN_OK);
    uint8_t *img = NULL;
    for (uint32_t upto = 400; upto < n; upto += 650) {
      ck_assert_int_eq(hnsw_build(h, upto), ANN_OK);
      size_t len;
      ck_assert_int_eq(hnsw_save(h, &img, &len), ANN_OK);
      hnsw_free(h);
      ck_assert_int_eq(hnsw_load(img, len, 8, ANN_L2, ANN_F32, line_row, r, &h), ANN_OK);
      hnsw_set_threads(h, 2);
      ck_assert_int_eq(hnsw_build(h, upto + 1), ANN_OK); /* copies the image */
      free(img);
      img = NULL;
    }
    ck_assert_int_eq(hnsw_build(h, n), ANN_OK);
    uint32_t cnt = hnsw_count(h), miss = 0;
    for (uint32_t i = 0; i < cnt; i++) {
      ann_hit o[3];
      int k = hnsw_search(h, r + (size_t)i * 8, 3, 200, NULL, NULL, o);
      int found = 0;
      for (int j = 0; j < k; j++) found |= o[j].id == i;
      miss += !found;
    }
    T_CHECK(miss == 0, "round %d: %u of %u rows on a line unreachable", round, miss, cnt);
    hnsw_free(h);
  }
  free(r);
}
END_TEST

static int hnsw_search10(const void *h, const float *q, ann_hit *out) {
  return hnsw_search(h, q, 10, 64, NULL, NULL, out);
}

START_TEST(test_concurrent_search) {
  ds d;
  uint32_t n = 2000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 60, NQ);
  hnsw *h = build(&d, ANN_DOT, n, 2, 0);
  use_q8(h, &d, _i); /* _i: 0 exact, 1 with the int8 pass */
  t_concurrent_same(h, hnsw_search10, qs, dim, NQ);
  hnsw_free(h);
  t_teardown(&d, qs);
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
  use_q8(h, &d, _i); /* _i: 0 exact, 1 with the int8 pass */
  /* empty */
  ck_assert_uint_eq(hnsw_count(h), 0);
  ck_assert_int_eq(hnsw_search(h, q, 10, 10, NULL, NULL, hits), 0);
  ck_assert_int_eq(hnsw_build(h, 0), ANN_OK);
  ck_assert_int_eq(hnsw_delete(h, 0), ANN_EINVAL);
  /* one row */
  ck_assert_int_eq(hnsw_add(h, 5), ANN_OK);
  ck_assert_int_eq(hnsw_search(h, d.f, 10, 10, NULL, NULL, hits), 1);
  ck_assert_uint_eq(hits[0].id, 5);
  /* ids in any order, then fill the gaps */
  ck_assert_int_eq(hnsw_add(h, 40), ANN_OK);
  ck_assert_int_eq(hnsw_add(h, 2), ANN_OK);
  ck_assert_int_eq(hnsw_add(h, 2), ANN_EINVAL);
  ck_assert_int_eq(hnsw_add(h, UINT32_MAX), ANN_EINVAL);
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
  hnsw_params p = {1, 0, 0, 0, 0};
  ck_assert_int_eq(hnsw_new(dim, ANN_L2, ANN_F32, &p, row, &d, &h), ANN_EINVAL);
  T_CHECK(strstr(hnsw_errmsg(h), "M must") != NULL, "%s", hnsw_errmsg(h));
  ck_assert_int_eq(hnsw_add(h, 0), ANN_EINVAL);
  ck_assert_int_eq(hnsw_set_q8(h, row_q8, &d), ANN_EINVAL);
  hnsw_free(h);
  ck_assert_int_eq(hnsw_set_q8(NULL, row_q8, &d), ANN_EINVAL);
  t_bad_args(&hnsw_t, dim, &d);
  ck_assert_str_eq(hnsw_errmsg(NULL), "out of memory");
  hnsw_free(NULL);
  free_data(&d);
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = t_suite("hnsw", &tc);
  tcase_add_loop_test(tc, test_edges, 0, 2);
  tcase_add_test(tc, test_recall_1k);
  tcase_add_test(tc, test_recall_10k);
  tcase_add_test(tc, test_keep_pruned);
  /* loop tests: _i = 0 exact, 1 with the int8 pass */
  tcase_add_loop_test(tc, test_delete, 0, 2);
  tcase_add_loop_test(tc, test_filter, 0, 2);
  tcase_add_loop_test(tc, test_pool_walk, 0, 2);
  tcase_add_loop_test(tc, test_save_load, 0, 2);
  tcase_add_test(tc, test_corrupt);
  tcase_add_loop_test(tc, test_threads, 0, 2);
  tcase_add_test(tc, test_threads_line);
  tcase_add_loop_test(tc, test_concurrent_search, 0, 2);
  tcase_add_test(tc, test_q8_partial);
  tcase_add_loop_test(tc, test_q8_rows, 0, 2);
  suite_add_tcase(s, tc);
  return t_run(s);
}
