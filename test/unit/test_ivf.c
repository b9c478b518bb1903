/*
** test/unit/test_ivf.c - lib/ann/ivf: recall against brute force (same kernels)
** for IVF-Flat and IVF-PQ, f32 and f16, the three metrics; filters,
** deletes, save/load and damaged images, threads, edges.
**
** Data: clustered (centres plus noise, testann.h); queries come from the
** same distribution.  Recall figures are printed.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/ivf.h"
#include "k.h"
#include "testann.h"
#include "testutil.h"
#include "util/le.h"
#include "util/pool.h"

#define NQ T_NQ

T_ANN_OPS(ivf);

static int overlap(const ann_hit *a, int na, const ann_hit *b, int nb) {
  int inter = 0;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (a[i].id == b[j].id) {
        inter++;
        break;
      }
  return inter;
}

static ivf *build(ds *d, ann_metric m, uint32_t n, int threads, uint32_t nlist, int pq_m) {
  ivf_params p = {nlist, pq_m, 0, 0, 0, threads, 0, 0};
  ivf *v = NULL;
  int rc = ivf_new(d->dim, m, d->elem, &p, row, d, &v);
  t_built(&ivf_t, v, rc, n);
  return v;
}

/* Mean recall@k over the queries.  exact: the results must also be the
** brute-force results, distances to the bit. */
static double recall(const ivf *v, const ds *d, ann_metric m, uint32_t n, const float *qs,
                     int k, int nprobe, int rerank, int exact) {
  ann_hit got[64], want[64];
  double sum = 0;
  for (int qi = 0; qi < NQ; qi++) {
    const float *q = qs + (size_t)qi * d->dim;
    int ng = ivf_search(v, q, k, nprobe, rerank, NULL, NULL, got);
    int nw = brute(d, m, n, q, k, NULL, NULL, NULL, want);
    T_CHECK(ng >= 0 && ng <= nw, "hits %d, expected at most %d", ng, nw);
    for (int i = 1; i < ng; i++) T_CHECK(hit_cmp(&got[i - 1], &got[i]) < 0, "results not sorted");
    for (int i = 0; i < ng; i++) /* distances are exact, whatever the kind */
      T_CHECK(got[i].dist == tdist(d, m, q, got[i].id), "row %u: distance %g, exact %g",
              got[i].id, got[i].dist, tdist(d, m, q, got[i].id));
    if (exact)
      T_CHECK(ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0,
              "query %d: not the brute-force answer", qi);
    sum += (double)overlap(got, ng, want, nw) / nw;
  }
  return sum / NQ;
}

/* ---- recall ------------------------------------------------------------- */

/* Floors at a moderate nprobe (1 of the 32 lists at 1K rows, 4 of 100 at
** 10K): IVF-Flat recall@10 >= FLAT_FLOOR; IVF-PQ (dim/4 pieces of 4
** coordinates, rerank 4k = 40) >= PQ_FLOOR at the same nprobe and >=
** PQ_ALL_FLOOR with every list probed.  Seeds 1-9 and the default gave at
** least 0.939 / 0.939 at 1K (l2), 0.976 / 0.967 at 10K (l2), and 0.985
** with every list. */
#define FLAT_FLOOR 0.90
#define PQ_FLOOR 0.90
#define PQ_ALL_FLOOR 0.95

static void recall_case(uint32_t n, int dim, ann_elem e, ann_metric m, int np) {
  ds d;
  uint64_t seed = t_seed();
  float *qs = t_setup(&d, n, dim, e, seed, T_NQ);
  double t0 = now();
  ivf *f = build(&d, m, n, 1, 0, 0);
  double t1 = now();
  ivf *p = build(&d, m, n, 1, 0, dim / 4);
  double t2 = now();
  uint32_t nl = ivf_nlist(f);
  ck_assert_uint_eq(nl, (uint32_t)llround(sqrt((double)n)));
  ck_assert_uint_eq(ivf_nlist(p), nl);
  double rf_all = recall(f, &d, m, n, qs, 10, (int)nl, 0, 1);
  double rf = recall(f, &d, m, n, qs, 10, np, 0, 0);
  double rp = recall(p, &d, m, n, qs, 10, np, 0, 0);
  double rp_all = recall(p, &d, m, n, qs, 10, (int)nl, 0, 0);
  double rp_big = recall(p, &d, m, n, qs, 10, (int)nl, 100, 0);
  printf("ivf recall@10 n=%u dim=%d %s %s nlist=%u: flat nprobe=%d %.4f, all %.4f | "
         "pq m=%d rerank 40: nprobe=%d %.4f, all %.4f; rerank 100 all %.4f "
         "(train+build flat %.2fs, pq %.2fs)\n",
         n, dim, e == ANN_F32 ? "f32" : "f16", mname(m), nl, np, rf, rf_all, dim / 4, np, rp,
         rp_all, rp_big, t1 - t0, t2 - t1);
  T_CHECK(rf_all == 1.0, "flat, nprobe = nlist: recall %.4f", rf_all);
  T_CHECK(rf >= FLAT_FLOOR, "flat recall@10 nprobe=%d %.4f (n=%u %s %s, seed %llu)", np, rf, n,
          e == ANN_F32 ? "f32" : "f16", mname(m), (unsigned long long)seed);
  T_CHECK(rp >= PQ_FLOOR, "pq recall@10 nprobe=%d %.4f (n=%u %s %s, seed %llu)", np, rp, n,
          e == ANN_F32 ? "f32" : "f16", mname(m), (unsigned long long)seed);
  T_CHECK(rp_all >= PQ_ALL_FLOOR, "pq recall@10 all lists %.4f (n=%u %s %s, seed %llu)", rp_all,
          n, e == ANN_F32 ? "f32" : "f16", mname(m), (unsigned long long)seed);
  /* the flat answer holds every true neighbour of the probed lists */
  T_CHECK(rp <= rf + 1e-9, "pq %.4f above flat %.4f at the same nprobe", rp, rf);
  T_CHECK(rp_big >= rp_all, "more rerank, less recall: %.4f < %.4f", rp_big, rp_all);
  ivf_free(f);
  ivf_free(p);
  t_teardown(&d, qs);
}

START_TEST(test_recall_1k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(1000, 48, e ? ANN_F16 : ANN_F32, ms[mi], 1);
}
END_TEST

START_TEST(test_recall_10k) {
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int e = 0; e < 2; e++)
    for (int mi = 0; mi < 3; mi++) recall_case(10000, 32, e ? ANN_F16 : ANN_F32, ms[mi], 4);
}
END_TEST

/* IVF-PQ ranks by tables precomputed per list when they fit in 64 MiB
** (nlist x pq_m x 1 KiB), else by tables computed per probed list.  With
** one coordinate per piece the codes are nearly exact, so even with no
** spare candidates (rerank = k) the ranking must find most neighbours:
** a wrong table in either path would not. */
START_TEST(test_pq_tables) {
  ds d;
  uint32_t n = 2000;
  int dim = 64;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 80, T_NQ);
  static const uint32_t nls[] = {40, 1100}; /* 2.5 MiB of terms; 68.75 MiB: none */
  static const ann_metric ms[] = {ANN_L2, ANN_COSINE};
  for (int i = 0; i < 2; i++)
    for (int mi = 0; mi < 2; mi++) {
      ivf *v = build(&d, ms[mi], n, 1, nls[i], dim);
      double r = recall(v, &d, ms[mi], n, qs, 10, (int)nls[i], 10, 0);
      printf("ivf pq m=dim, rerank = k, %s, nlist %u (%s): recall@10 %.4f\n", mname(ms[mi]),
             nls[i], i ? "tables per list" : "precomputed terms", r);
      T_CHECK(r >= 0.9, "%s nlist %u: recall %.4f", mname(ms[mi]), nls[i], r);
      ivf_free(v);
    }
  t_teardown(&d, qs);
}
END_TEST

/* Dot product: rows join the lists their queries probe (largest q.c).  On
** 256 tight clusters (bench_ivf's data) one list then holds nearly all of
** the 10 best; with L2 cells probed by dot product it was 0.66. */
START_TEST(test_dot_lists) {
  ds d;
  uint32_t n = 5000;
  int dim = 64;
  make_data_nc(&d, n + NQ, dim, ANN_F32, t_seed() + 90, 256, 0.25f);
  const float *qs = d.f + (size_t)n * dim; /* the last NQ rows, not indexed */
  ivf *v = build(&d, ANN_DOT, n, 1, 0, 0);
  double r = recall(v, &d, ANN_DOT, n, qs, 10, 1, 0, 0);
  printf("ivf dot, 256 clusters, nlist %u: recall@10 at nprobe 1 %.4f\n", ivf_nlist(v), r);
  T_CHECK(r >= 0.9, "dot recall@10 at nprobe 1: %.4f", r);
  ivf_free(v);
  free_data(&d);
}
END_TEST

/* ---- filters and deletes ------------------------------------------------ */

typedef struct fctx {
  uint32_t mod, keep; /* allowed: hash(i) % mod < keep */
} fctx;

static int allow(void *ctx, uint32_t i) {
  fctx *f = ctx;
  return mix(i) % f->mod < f->keep;
}

START_TEST(test_filter) {
  ds d;
  uint32_t n = 3000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F16, t_seed() + 20, T_NQ);
  static const ann_metric ms[] = {ANN_COSINE, ANN_L2, ANN_DOT};
  for (int mi = 0; mi < 3; mi++) {
    ivf *f = build(&d, ms[mi], n, 1, 0, 0), *p = build(&d, ms[mi], n, 1, 0, 8);
    int nl = (int)ivf_nlist(f);
    static const uint32_t keeps[] = {5, 1, 0}; /* 50%, 10%, none */
    ann_hit got[10], want[10];
    for (int c = 0; c < 3; c++) {
      fctx fc = {10, keeps[c]};
      for (int qi = 0; qi < NQ; qi++) {
        const float *q = qs + (size_t)qi * dim;
        int nw = brute(&d, ms[mi], n, q, 10, allow, &fc, NULL, want);
        /* flat, every list: the brute-force answer */
        int ng = ivf_search(f, q, 10, nl, 0, allow, &fc, got);
        T_CHECK(ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0,
                "%s flat filter %u/10 query %d: not brute force", mname(ms[mi]), keeps[c], qi);
        /* pq, every list, every row re-scored: the same */
        ng = ivf_search(p, q, 10, nl, (int)n, allow, &fc, got);
        T_CHECK(ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0,
                "%s pq filter %u/10 query %d: not brute force", mname(ms[mi]), keeps[c], qi);
        /* one list: allowed rows only */
        for (int v = 0; v < 2; v++) {
          ng = ivf_search(v ? p : f, q, 10, 1, 0, allow, &fc, got);
          ck_assert_int_le(ng, nw);
          for (int i = 0; i < ng; i++)
            T_CHECK(allow(&fc, got[i].id), "row %u not allowed", got[i].id);
        }
      }
    }
    ivf_free(f);
    ivf_free(p);
  }
  printf("ivf filters 50%%/10%%/0%%, nprobe = nlist: flat and pq (rerank all) equal brute force\n");
  t_teardown(&d, qs);
}
END_TEST

START_TEST(test_delete) {
  ds d;
  uint32_t n = 2000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 10, T_NQ);
  for (int pq = 0; pq < 2; pq++) {
    ivf *v = build(&d, ANN_L2, n, 1, 0, pq ? 8 : 0);
    int nl = (int)ivf_nlist(v);
    uint8_t *del = t_delete_third(&ivf_t, v, n, t_seed() + 12);
    del[0] = 1;
    ck_assert_int_eq(ivf_delete(v, 0), ANN_OK);
    ck_assert_int_eq(ivf_delete(v, 0), ANN_OK); /* twice is fine */
    ck_assert_int_eq(ivf_delete(v, n), ANN_EINVAL);
    ck_assert_uint_eq(ivf_count(v), n);
    ann_hit got[64], want[64];
    for (int qi = 0; qi < NQ; qi++) {
      const float *q = qs + (size_t)qi * dim;
      for (int np = 1; np <= nl; np *= 4) {
        int ng = ivf_search(v, q, 64, np, 0, NULL, NULL, got);
        for (int i = 0; i < ng; i++) T_CHECK(!del[got[i].id], "deleted row %u returned", got[i].id);
      }
      int nw = brute(&d, ANN_L2, n, q, 10, NULL, NULL, del, want);
      int ng = ivf_search(v, q, 10, nl, pq ? (int)n : 0, NULL, NULL, got);
      T_CHECK(ng == nw && memcmp(got, want, (size_t)nw * sizeof *got) == 0,
              "query %d with deletes: not brute force", qi);
    }
    /* everything deleted: nothing comes back */
    for (uint32_t i = 0; i < n; i++) ivf_delete(v, i);
    ck_assert_int_eq(ivf_search(v, qs, 10, nl, 0, NULL, NULL, got), 0);
    ivf_free(v);
    free(del);
  }
  t_teardown(&d, qs);
}
END_TEST

/* ---- save / load -------------------------------------------------------- */

static void same_results(const ivf *a, const ivf *b, const float *qs, int dim, int nprobe) {
  ann_hit ra[20], rb[20];
  for (int qi = 0; qi < NQ; qi++) {
    int na = ivf_search(a, qs + (size_t)qi * dim, 20, nprobe, 0, NULL, NULL, ra);
    int nb = ivf_search(b, qs + (size_t)qi * dim, 20, nprobe, 0, NULL, NULL, rb);
    ck_assert_int_eq(na, nb);
    T_CHECK(memcmp(ra, rb, (size_t)na * sizeof *ra) == 0, "query %d differs", qi);
  }
}

static void save_load_case(int pq_m) {
  ds d;
  uint32_t n = 3000, n0 = 2000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F16, t_seed() + 30, T_NQ);
  ivf *h = build(&d, ANN_COSINE, n0, 1, 0, pq_m);
  ivf_delete(h, 7);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(ivf_save(h, &img, &len), ANN_OK);

  /* in place (malloc'd: aligned) */
  ivf *g = t_load(&ivf_t, img, len, &d, dim, ANN_COSINE, ANN_F16);
  ck_assert_uint_eq(ivf_count(g), n0);
  ck_assert_uint_eq(ivf_nlist(g), ivf_nlist(h));
  same_results(h, g, qs, dim, 5);
  t_same_image(&ivf_t, g, img, len);

  /* unaligned: copied */
  uint8_t *buf;
  ivf *u = t_load_unaligned(&ivf_t, img, len, &d, dim, ANN_COSINE, ANN_F16, &buf);
  same_results(h, u, qs, dim, 5);
  ivf_free(u);
  free(buf);

  /* wrong parameters */
  t_load_refused(&ivf_t, img, len, &d, dim + 1, ANN_COSINE, ANN_F16, 1);
  t_load_refused(&ivf_t, img, len, &d, dim, ANN_L2, ANN_F16, 0);
  t_load_refused(&ivf_t, img, len, &d, dim, ANN_COSINE, ANN_F32, 0);

  /* the loaded index grows and deletes like the original; the image is
  ** never written */
  uint8_t *keep = malloc(len);
  memcpy(keep, img, len);
  ck_assert_int_eq(ivf_delete(g, 8), ANN_OK);
  ck_assert_int_eq(ivf_delete(h, 8), ANN_OK);
  t_grow_alike(&ivf_t, g, h, n0 + 500, n, keep, img, len);
  same_results(h, g, qs, dim, 5);
  same_results(h, g, qs, dim, (int)ivf_nlist(h));
  uint8_t *ia, *ib;
  size_t la, lb;
  ck_assert_int_eq(ivf_save(h, &ia, &la), ANN_OK);
  ck_assert_int_eq(ivf_save(g, &ib, &lb), ANN_OK);
  T_CHECK(la == lb && memcmp(ia, ib, la) == 0, "grown copies differ");
  free(ia);
  free(ib);
  free(keep);
  ivf_free(g);
  ivf_free(h);
  free(img);
  t_teardown(&d, qs);
}

START_TEST(test_save_load) {
  save_load_case(0);
  save_load_case(8);
}
END_TEST

/* ---- damaged images ----------------------------------------------------- */

/* an image that loaded, used hard */
static void use_image(void *x, ds *d, const float *q) {
  ivf *g = x;
  ann_hit hits[40];
  int nl = (int)ivf_nlist(g);
  for (int i = 0; i < 3; i++) {
    int nh = ivf_search(g, q + i * d->dim, 40, nl, 0, NULL, NULL, hits);
    T_CHECK(nh >= 0 && nh <= 40, "search of an accepted image: %d", nh);
  }
  uint8_t *again;
  size_t alen;
  if (ivf_save(g, &again, &alen) == ANN_OK) free(again);
  ivf_delete(g, 3);
  ivf_add(g, d->n - 1);
  ivf_search(g, q, 40, nl, 0, NULL, NULL, hits);
}

/* load a (possibly damaged) image; if it is accepted, use it hard */
static int try_image(const uint8_t *img, size_t len, ds *d, const float *q) {
  return t_try_image(&ivf_t, img, len, d, q, use_image);
}

static void corrupt_case(int pq_m) {
  ds d;
  uint32_t n = 400;
  int dim = 16;
  float *qs = t_setup(&d, n + 1, dim, ANN_F32, t_seed() + 40, T_NQ);
  ivf *h = build(&d, ANN_L2, n, 1, 12, pq_m);
  for (uint32_t i = 0; i < n; i += 9) ivf_delete(h, i);
  size_t len;
  uint8_t *img = t_save(&ivf_t, h, &len);
  ivf_free(h);
  /* truncations (and one byte too many) */
  t_truncations(&ivf_t, img, len, &d, qs, use_image, 400);
  uint8_t *b = malloc(len);
  uint8_t *longer = calloc(len + 4, 1);
  memcpy(longer, img, len);
  T_CHECK(try_image(longer, len + 4, &d, qs) == ANN_ECORRUPT, "a longer image accepted");
  free(longer);

  /* every header word, changed in several ways.  Only n (40; a larger n
  ** within the same bitmap words is a valid index), train_iters,
  ** train_sample, rerank, the nlist asked for (48-60) and the seed (64, 68)
  ** may change and leave a valid index. */
  int accepted = 0;
  static const uint32_t xors[] = {0, 1, 2, 0x80, 0x8000, 0x800000, 0x80000000u, 0xffffffffu};
  for (size_t at = 0; at < 80; at += 4) {
    int loose = at == 40 || (at >= 48 && at < 72);
    for (int x = 0; x < 9; x++) {
      memcpy(b, img, len);
      util_put_le32(b + at, x < 8 ? util_get_le32(b + at) ^ xors[x] : 0);
      if (memcmp(b, img, len) == 0) continue;
      int rc = try_image(b, len, &d, qs);
      accepted += rc == ANN_OK;
      T_CHECK(loose || rc == ANN_ECORRUPT, "header word at %zu: change %d accepted", at, x);
    }
  }
  printf("ivf corrupt header (pq_m=%d): %d changes of the free fields still valid\n", pq_m,
         accepted);

  /* random byte flips, anywhere */
  t_rng r = {t_seed() + 42};
  int rejected = 0, trials = 2000;
  for (int t = 0; t < trials; t++) {
    memcpy(b, img, len);
    size_t at = t_next(&r) % len;
    b[at] ^= (uint8_t)(1 + t_next(&r) % 255);
    rejected += try_image(b, len, &d, qs) != ANN_OK;
  }
  printf("ivf corrupt images (pq_m=%d): %d of %d byte flips rejected (the rest still valid)\n",
         pq_m, rejected, trials);

  /* targeted: the sections after the centroids and codebooks */
  uint32_t nl = util_get_le32(img + 28);
  size_t offs = 80 + 4 * ((size_t)nl * dim + (pq_m ? 256 * (size_t)dim : 0));
  size_t ids = offs + 4 * ((size_t)nl + 1), del = ids + 4 * (size_t)n;
  memcpy(b, img, len);
  util_put_le32(b + offs, 1); /* offsets must start at 0 */
  T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "offset 0 changed");
  memcpy(b, img, len);
  util_put_le32(b + offs + 4 * nl, n - 1); /* and end at count */
  T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "last offset changed");
  for (uint32_t j = 1; j < nl; j++) { /* and never decrease */
    memcpy(b, img, len);
    uint32_t o = util_get_le32(b + offs + 4 * j);
    util_put_le32(b + offs + 4 * j, util_get_le32(b + offs + 4 * (j + 1)) + 1);
    if (util_get_le32(b + offs + 4 * j) != o)
      T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "offset %u above the next", j);
  }
  for (uint32_t e = 0; e < n; e += 13) {
    memcpy(b, img, len);
    util_put_le32(b + ids + 4 * e, n); /* out of range */
    T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "id %u out of range accepted", e);
    memcpy(b, img, len);
    util_put_le32(b + ids + 4 * e, util_get_le32(b + ids + 4 * ((e + 1) % n))); /* twice */
    T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "id %u repeated accepted", e);
  }
  memcpy(b, img, len);
  util_put_le32(b + 16 * 4 + 80, 0x7fc00000u); /* a NaN centroid value */
  T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "NaN centroid accepted");
  if (pq_m) {
    memcpy(b, img, len);
    util_put_le32(b + 80 + 4 * (size_t)nl * dim + 40, 0x7f800000u); /* +inf in a codebook */
    T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "inf codebook accepted");
  }
  /* a deleted bit past n, and the last row's bit when it is absent */
  memcpy(b, img, len);
  b[del + 4 * ((n - 1) / 32) + 3] |= 0x80;
  T_CHECK(try_image(b, len, &d, qs) == ANN_ECORRUPT, "deleted bit past n accepted");
  free(b);
  free(img);

  /* an untrained index's image, and a trained empty one */
  for (int tr = 0; tr < 2; tr++) {
    ivf *e = NULL;
    ivf_params p = {4, pq_m, 0, 0, 0, 0, 0, 0};
    ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &p, row, &d, &e), ANN_OK);
    if (tr) ck_assert_int_eq(ivf_train(e, 100), ANN_OK);
    uint8_t *eimg;
    size_t elen;
    ck_assert_int_eq(ivf_save(e, &eimg, &elen), ANN_OK);
    ivf_free(e);
    ck_assert_int_eq(try_image(eimg, elen, &d, qs), ANN_OK);
    for (size_t l = 0; l < elen; l += 1 + l / 64)
      T_CHECK(try_image(eimg, l, &d, qs) == ANN_ECORRUPT, "%zu", l);
    free(eimg);
  }
  t_teardown(&d, qs);
}

START_TEST(test_corrupt) {
  corrupt_case(0);
  corrupt_case(4);
}
END_TEST

/* ---- threads, determinism ----------------------------------------------- */

START_TEST(test_threads) {
  ds d;
  uint32_t n = 5000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 50, T_NQ);
  for (int pq = 0; pq < 2; pq++) {
    double t0 = now();
    ivf *h1 = build(&d, ANN_L2, n, 1, 0, pq ? 8 : 0);
    double t1 = now();
    ivf *h2 = build(&d, ANN_L2, n, 2, 0, pq ? 8 : 0);
    double t2 = now();
    printf("ivf %s train+build: 1 thread %.2fs, 2 threads %.2fs\n", pq ? "pq" : "flat", t1 - t0,
           t2 - t1);
    /* train once, then add one by one in id order */
    ivf_params p = {0, pq ? 8 : 0, 0, 0, 0, 0, 0, 0};
    ivf *h3 = NULL;
    ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &p, row, &d, &h3), ANN_OK);
    ck_assert_int_eq(ivf_train(h3, n), ANN_OK);
    for (uint32_t i = 0; i < n; i++) ck_assert_int_eq(ivf_add(h3, i), ANN_OK);
    uint8_t *a, *b, *c;
    size_t la, lb, lc;
    ck_assert_int_eq(ivf_save(h1, &a, &la), ANN_OK);
    ck_assert_int_eq(ivf_save(h2, &b, &lb), ANN_OK);
    ck_assert_int_eq(ivf_save(h3, &c, &lc), ANN_OK);
    T_CHECK(la == lb && memcmp(a, b, la) == 0, "1 and 2 threads give different indexes");
    T_CHECK(la == lc && memcmp(a, c, la) == 0, "build differs from train + add");
    same_results(h1, h2, qs, dim, 4);
    free(a);
    free(b);
    free(c);
    ivf_free(h1);
    ivf_free(h2);
    ivf_free(h3);
  }
  t_teardown(&d, qs);
}
END_TEST

static int ivf_search10(const void *v, const float *q, ann_hit *out) {
  return ivf_search(v, q, 10, 6, 0, NULL, NULL, out);
}

START_TEST(test_concurrent_search) {
  ds d;
  uint32_t n = 2000;
  int dim = 32;
  float *qs = t_setup(&d, n, dim, ANN_F32, t_seed() + 60, T_NQ);
  for (int pq = 0; pq < 2; pq++) {
    ivf *v = build(&d, ANN_DOT, n, 2, 0, pq ? 8 : 0);
    t_concurrent_same(v, ivf_search10, qs, dim, NQ);
    ivf_free(v);
  }
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
  ivf *v = NULL;
  ivf_params p = {16, 0, 0, 0, 0, 0, 0, 0};
  ck_assert_int_eq(ivf_new(dim, ANN_COSINE, ANN_F32, &p, row, &d, &v), ANN_OK);
  /* empty, untrained */
  ck_assert_uint_eq(ivf_count(v), 0);
  ck_assert_uint_eq(ivf_nlist(v), 0);
  ck_assert_int_eq(ivf_search(v, q, 10, 4, 0, NULL, NULL, hits), 0);
  ck_assert_int_eq(ivf_build(v, 0), ANN_OK);
  ck_assert_int_eq(ivf_add(v, 0), ANN_EINVAL);
  T_CHECK(strstr(ivf_errmsg(v), "not trained") != NULL, "%s", ivf_errmsg(v));
  ck_assert_int_eq(ivf_train(v, 0), ANN_EINVAL);
  ck_assert_int_eq(ivf_delete(v, 0), ANN_EINVAL);
  /* fewer training rows than lists: one list per row */
  ck_assert_int_eq(ivf_train(v, 10), ANN_OK);
  ck_assert_uint_eq(ivf_nlist(v), 10);
  ck_assert_int_eq(ivf_search(v, q, 10, 4, 0, NULL, NULL, hits), 0); /* trained, empty */
  /* trained again while empty: fine */
  ck_assert_int_eq(ivf_train(v, 40), ANN_OK);
  ck_assert_uint_eq(ivf_nlist(v), 16);
  /* ids in any order, then fill the gaps */
  ck_assert_int_eq(ivf_add(v, 5), ANN_OK);
  ck_assert_int_eq(ivf_search(v, d.f, 10, 16, 0, NULL, NULL, hits), 1);
  ck_assert_uint_eq(hits[0].id, 5);
  ck_assert_int_eq(ivf_add(v, 40), ANN_OK);
  ck_assert_int_eq(ivf_add(v, 2), ANN_OK);
  ck_assert_int_eq(ivf_add(v, 2), ANN_EINVAL);
  T_CHECK(strstr(ivf_errmsg(v), "already") != NULL, "%s", ivf_errmsg(v));
  ck_assert_int_eq(ivf_add(v, UINT32_MAX), ANN_EINVAL);
  ck_assert_int_eq(ivf_build(v, 50), ANN_OK);
  ck_assert_uint_eq(ivf_count(v), 50);
  ck_assert_int_eq(ivf_train(v, 50), ANN_EINVAL); /* holds rows */
  /* k = 0, k > n, nprobe out of range */
  ck_assert_int_eq(ivf_search(v, d.f, 0, 4, 0, NULL, NULL, hits), 0);
  ck_assert_int_eq(ivf_search(v, d.f, -3, 4, 0, NULL, NULL, hits), 0);
  ck_assert_int_eq(ivf_search(v, d.f, 200, 1000, 0, NULL, NULL, hits), 50);
  for (int i = 1; i < 50; i++) T_CHECK(hit_cmp(&hits[i - 1], &hits[i]) < 0, "order");
  int n1 = ivf_search(v, d.f, 200, 0, 0, NULL, NULL, hits); /* nprobe 0: one list */
  ck_assert_int_ge(n1, 1);
  ck_assert_int_lt(n1, 50);
  ck_assert_uint_eq(hits[0].id, 0); /* the query is row 0 */
  ivf_delete(v, 3);
  ck_assert_int_eq(ivf_search(v, d.f, 200, 16, 0, NULL, NULL, hits), 49);
  /* a zero query under cosine: every distance 1, ties broken by id */
  int nh = ivf_search(v, q, 5, 16, 0, NULL, NULL, hits);
  ck_assert_int_eq(nh, 5);
  for (int i = 0; i < 5; i++) ck_assert_float_eq(hits[i].dist, 1.0f);
  ck_assert_uint_eq(hits[0].id, 0);
  ck_assert_uint_eq(hits[3].id, 4);
  ck_assert_int_eq(ivf_search(v, NULL, 5, 16, 0, NULL, NULL, hits), ANN_EINVAL);
  ivf_free(v);

  /* rows the callback has nothing for: left out of training, scored +inf */
  ds short_d = d;
  short_d.n = 30;
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &p, row, &short_d, &v), ANN_OK);
  ck_assert_int_eq(ivf_build(v, 40), ANN_OK);
  ck_assert_uint_eq(ivf_nlist(v), 16);
  ck_assert_int_eq(ivf_search(v, d.f, 40, 16, 0, NULL, NULL, hits), 40);
  ck_assert_float_eq(hits[39].dist, INFINITY);
  ck_assert_uint_eq(hits[30].id, 30);
  ivf_free(v);
  short_d.n = 0;
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &p, row, &short_d, &v), ANN_OK);
  ck_assert_int_eq(ivf_build(v, 40), ANN_EINVAL);
  T_CHECK(strstr(ivf_errmsg(v), "could be read") != NULL, "%s", ivf_errmsg(v));
  ivf_free(v);

  /* IVF-PQ with fewer rows than codebook entries, and rerank below k */
  ivf_params pp = {4, 2, 8, 0, 0, 0, 0, 0};
  ck_assert_int_eq(ivf_new(dim, ANN_DOT, ANN_F32, &pp, row, &d, &v), ANN_OK);
  ck_assert_int_eq(ivf_build(v, 60), ANN_OK);
  ck_assert_int_eq(ivf_search(v, d.f, 10, 4, 1, NULL, NULL, hits), 10);
  ck_assert_int_eq(ivf_search(v, d.f, 100, 4, 0, NULL, NULL, hits), 60);
  for (int i = 1; i < 60; i++) T_CHECK(hit_cmp(&hits[i - 1], &hits[i]) < 0, "order");
  ivf_free(v);

  /* bad arguments */
  ivf_params bad = {0, 3, 0, 0, 0, 0, 0, 0}; /* 8 is not a multiple of 3 */
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &bad, row, &d, &v), ANN_EINVAL);
  T_CHECK(strstr(ivf_errmsg(v), "not a multiple of pq_m") != NULL, "%s", ivf_errmsg(v));
  ck_assert_int_eq(ivf_build(v, 10), ANN_EINVAL);
  ck_assert_int_eq(ivf_search(v, q, 1, 1, 0, NULL, NULL, hits), ANN_EINVAL);
  ivf_free(v);
  bad.pq_m = 16; /* more pieces than coordinates */
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &bad, row, &d, &v), ANN_EINVAL);
  ivf_free(v);
  bad.pq_m = 2;
  bad.pq_bits = 4;
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &bad, row, &d, &v), ANN_EINVAL);
  T_CHECK(strstr(ivf_errmsg(v), "pq_bits") != NULL, "%s", ivf_errmsg(v));
  ivf_free(v);
  bad.pq_bits = 0;
  bad.nlist = (1u << 24) + 1;
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &bad, row, &d, &v), ANN_EINVAL);
  ivf_free(v);
  bad.nlist = 0;
  bad.train_iters = -1;
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, &bad, row, &d, &v), ANN_EINVAL);
  ivf_free(v);
  t_bad_args(&ivf_t, dim, &d);
  ck_assert_int_eq(ivf_new(dim, ANN_L2, ANN_F32, NULL, NULL, &d, &v), ANN_EINVAL);
  ivf_free(v);
  ck_assert_str_eq(ivf_errmsg(NULL), "out of memory");
  ivf_free(NULL);
  free_data(&d);
}
END_TEST

int main(void) {
  TCase *tc;
  Suite *s = t_suite("ivf", &tc);
  tcase_add_test(tc, test_edges);
  tcase_add_test(tc, test_recall_1k);
  tcase_add_test(tc, test_recall_10k);
  tcase_add_test(tc, test_pq_tables);
  tcase_add_test(tc, test_dot_lists);
  tcase_add_test(tc, test_filter);
  tcase_add_test(tc, test_delete);
  tcase_add_test(tc, test_save_load);
  tcase_add_test(tc, test_corrupt);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_concurrent_search);
  suite_add_tcase(s, tc);
  return t_run(s);
}
