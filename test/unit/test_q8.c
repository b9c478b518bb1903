/*
** test/unit/test_q8.c - lib/ann/q8: the int8 encoding against a reference in
** double, its edge cases (zero rows, NaN/Inf, huge and subnormal values,
** f16 input, the batch form) and the error bounds q8.h states for each
** metric's int8 distance.
*/
#include "config.h"

#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ann/q8.h"
#include "k.h"
#include "testutil.h"

#define E_ELEM 0.50001 /* q8.h's e */

/* the codes q8.h promises, computed independently: lround is "halves away
** from zero" */
static void ref_codes(const float *x, int dim, int8_t *out, double *scale) {
  double m = 0;
  for (int i = 0; i < dim; i++) m = fmax(m, fabs((double)x[i]));
  *scale = m / 127.0;
  for (int i = 0; i < dim; i++) out[i] = m > 0 ? (int8_t)lround((double)x[i] * 127.0 / m) : 0;
}

/* encode x and check it against the reference and the element bound */
static void check_row(const float *x, int dim, const char *what) {
  int8_t *c = malloc((size_t)dim), *r = malloc((size_t)dim);
  float s;
  double rs;
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, dim, c, &s), 0);
  ref_codes(x, dim, r, &rs);
  T_CHECK(memcmp(c, r, (size_t)dim) == 0, "%s: codes differ from the reference", what);
  T_CHECK(s == (float)rs, "%s: scale %g, expected %g", what, (double)s, rs);
  int top = 0;
  for (int i = 0; i < dim; i++) {
    T_CHECK(c[i] >= -127 && c[i] <= 127, "%s: code %d", what, c[i]);
    top |= c[i] == 127 || c[i] == -127;
    if (s >= FLT_MIN) {
      double err = fabs((double)x[i] - (double)s * c[i]);
      T_CHECK(err <= E_ELEM * s, "%s: element %d off by %g, scale %g", what, i, err, (double)s);
    }
  }
  T_CHECK(rs == 0 || top, "%s: the largest element is not +-127", what);
  free(c);
  free(r);
}

START_TEST(test_encode) {
  t_rng r = {t_seed()};
  static const int dims[] = {1, 2, 7, 31, 32, 100, 257, 768};
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    int dim = dims[di];
    float *x = malloc((size_t)dim * sizeof *x);
    for (int t = 0; t < 200; t++) {
      double mag = ldexp(1.0, (int)(t_next(&r) % 60) - 30);
      for (int i = 0; i < dim; i++) x[i] = (float)(t_unit(&r) * mag);
      if (t % 4 == 1) /* one spike */
        x[t_next(&r) % (uint64_t)dim] = (float)(50 * mag);
      if (t % 4 == 2) /* all positive */
        for (int i = 0; i < dim; i++) x[i] = fabsf(x[i]);
      if (t % 4 == 3) /* values right on the rounding halves: k + 0.5 steps */
        for (int i = 0; i < dim; i++) x[i] = (float)((int)(t_next(&r) % 255) - 127) + 0.5f;
      check_row(x, dim, "random");
    }
    free(x);
  }
}
END_TEST

START_TEST(test_edges) {
  float x[16], s = 7;
  int8_t c[16], d[16];
  /* zero row */
  memset(x, 0, sizeof x);
  memset(c, 5, sizeof c);
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), 0);
  ck_assert_float_eq(s, 0.0f);
  for (int i = 0; i < 16; i++) ck_assert_int_eq(c[i], 0);
  x[3] = -0.0f;
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), 0);
  ck_assert_float_eq(s, 0.0f);
  /* NaN, infinities: zeros and -1 */
  static const float bad[] = {NAN, INFINITY, -INFINITY};
  for (int b = 0; b < 3; b++) {
    for (int i = 0; i < 16; i++) x[i] = (float)i - 5;
    x[b * 5 + 2] = bad[b];
    memset(c, 5, sizeof c);
    s = 7;
    ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), -1);
    ck_assert_float_eq(s, 0.0f);
    for (int i = 0; i < 16; i++) ck_assert_int_eq(c[i], 0);
  }
  /* bad arguments: nothing written */
  memset(c, 5, sizeof c);
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 0, c, &s), -1);
  ck_assert_int_eq(ann_q8_encode(x, (ann_elem)3, 16, c, &s), -1);
  ck_assert_int_eq(ann_q8_encode_n(x, ANN_F32, -1, 1, c, &s), -1);
  ck_assert_int_eq(c[0], 5);

  /* huge: up to FLT_MAX */
  for (int i = 0; i < 16; i++) x[i] = FLT_MAX * ((float)i / 8 - 1);
  check_row(x, 16, "huge");
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), 0);
  ck_assert(isfinite(s));
  ck_assert_int_eq(c[0], -127);
  /* scaling by a power of two changes the scale only */
  t_rng r = {t_seed() + 1};
  for (int i = 0; i < 16; i++) x[i] = t_unit(&r);
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), 0);
  float y[16], sy;
  for (int i = 0; i < 16; i++) y[i] = ldexpf(x[i], 100);
  ck_assert_int_eq(ann_q8_encode(y, ANN_F32, 16, d, &sy), 0);
  T_CHECK(memcmp(c, d, 16) == 0, "codes change with a power-of-two scaling");
  ck_assert_float_eq(sy, ldexpf(s, 100));
  /* subnormal rows: integers times the smallest subnormal encode as the
  ** integers do, whatever becomes of the (subnormal or zero) scale */
  for (int i = 0; i < 16; i++) y[i] = (float)((int)(t_next(&r) % 2001) - 1000);
  ck_assert_int_eq(ann_q8_encode(y, ANN_F32, 16, c, &s), 0);
  for (int i = 0; i < 16; i++) x[i] = ldexpf(y[i], -149);
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, d, &sy), 0);
  T_CHECK(memcmp(c, d, 16) == 0, "subnormal row encodes differently");
  check_row(x, 16, "subnormal");
  T_CHECK(sy < FLT_MIN, "scale %g", (double)sy);
  /* a row whose max is the smallest subnormal: codes +-127 or 0, scale 0 */
  memset(x, 0, sizeof x);
  x[4] = ldexpf(1, -149);
  x[9] = -x[4];
  ck_assert_int_eq(ann_q8_encode(x, ANN_F32, 16, c, &s), 0);
  ck_assert_int_eq(c[4], 127);
  ck_assert_int_eq(c[9], -127);
  ck_assert_int_eq(c[0], 0);
  ck_assert_float_eq(s, 0.0f);
}
END_TEST

START_TEST(test_f16) {
  const k_ops *k = k_get();
  t_rng r = {t_seed() + 2};
  int dim = 600; /* more than one widening block */
  float *x = malloc((size_t)dim * sizeof *x), *w = malloc((size_t)dim * sizeof *w);
  uint16_t *h = malloc((size_t)dim * sizeof *h);
  int8_t *c = malloc((size_t)dim), *d = malloc((size_t)dim);
  for (int t = 0; t < 50; t++) {
    double mag = t == 0 ? 65504 : t == 1 ? ldexp(1, -20) : ldexp(1, (int)(t_next(&r) % 20) - 10);
    for (int i = 0; i < dim; i++) x[i] = (float)(t_unit(&r) * mag);
    k->f32_to_f16(x, h, (size_t)dim);
    k->f16_to_f32(h, w, (size_t)dim);
    float sh, sw;
    ck_assert_int_eq(ann_q8_encode(h, ANN_F16, dim, c, &sh), 0);
    ck_assert_int_eq(ann_q8_encode(w, ANN_F32, dim, d, &sw), 0);
    T_CHECK(memcmp(c, d, (size_t)dim) == 0 && sh == sw, "f16 and its f32 widening differ");
    check_row(w, dim, "f16");
  }
  /* f16 infinity and NaN (in the second block) */
  static const uint16_t bad[] = {0x7c00, 0xfc00, 0x7e00};
  for (int b = 0; b < 3; b++) {
    k->f32_to_f16(x, h, (size_t)dim);
    h[300 + b] = bad[b];
    float s;
    ck_assert_int_eq(ann_q8_encode(h, ANN_F16, dim, c, &s), -1);
    ck_assert_float_eq(s, 0.0f);
  }
  free(x);
  free(w);
  free(h);
  free(c);
  free(d);
}
END_TEST

START_TEST(test_batch) {
  t_rng r = {t_seed() + 3};
  int dim = 24;
  size_t n = 40;
  float *x = malloc(n * dim * sizeof *x), *s = malloc(n * sizeof *s);
  int8_t *c = malloc(n * dim), one[24];
  for (size_t i = 0; i < n * dim; i++) x[i] = t_unit(&r) * (float)(1 + i / dim);
  memset(x + 5 * dim, 0, dim * sizeof *x); /* a zero row */
  ck_assert_int_eq(ann_q8_encode_n(x, ANN_F32, dim, n, c, s), 0);
  for (size_t i = 0; i < n; i++) {
    float s1;
    ck_assert_int_eq(ann_q8_encode(x + i * dim, ANN_F32, dim, one, &s1), 0);
    T_CHECK(memcmp(one, c + i * dim, dim) == 0 && s1 == s[i], "row %zu", i);
  }
  ck_assert_float_eq(s[5], 0.0f);
  /* the query encoder is the row encoder */
  float sq;
  ck_assert_int_eq(ann_q8_query(x + 7 * dim, dim, one, &sq), 0);
  T_CHECK(memcmp(one, c + 7 * dim, dim) == 0 && sq == s[7], "query encoding differs");
  /* a bad row: -1, that row zero, the others encoded */
  x[9 * dim + 3] = NAN;
  memset(c, 9, n * dim);
  ck_assert_int_eq(ann_q8_encode_n(x, ANN_F32, dim, n, c, s), -1);
  for (int j = 0; j < dim; j++) ck_assert_int_eq(c[9 * dim + j], 0);
  ck_assert_float_eq(s[9], 0.0f);
  ck_assert_int_eq(ann_q8_encode(x + 10 * dim, ANN_F32, dim, one, &sq), 0);
  T_CHECK(memcmp(one, c + 10 * dim, dim) == 0 && sq == s[10], "row after the bad one");
  /* f16 batch */
  uint16_t *h = malloc(n * dim * sizeof *h);
  x[9 * dim + 3] = 1;
  k_get()->f32_to_f16(x, h, n * dim);
  ck_assert_int_eq(ann_q8_encode_n(h, ANN_F16, dim, n, c, s), 0);
  ck_assert_int_eq(ann_q8_encode(h + 17 * dim, ANN_F16, dim, one, &sq), 0);
  T_CHECK(memcmp(one, c + 17 * dim, dim) == 0 && sq == s[17], "f16 batch row");
  /* decode */
  float back[24];
  ann_q8_decode(c + 17 * dim, s[17], dim, back);
  for (int j = 0; j < dim; j++) ck_assert_float_eq(back[j], s[17] * c[17 * dim + j]);
  free(h);
  free(x);
  free(s);
  free(c);
}
END_TEST

/* ---- the distance bounds of q8.h ---------------------------------------- */

static double l1(const float *a, int dim) {
  double s = 0;
  for (int i = 0; i < dim; i++) s += fabs((double)a[i]);
  return s;
}

static double l2n(const float *a, int dim) {
  double s = 0;
  for (int i = 0; i < dim; i++) s += (double)a[i] * a[i];
  return sqrt(s);
}

/* the largest angle between x and its codes (q8.h) */
static double angle_bound(const float *x, float s, int dim) {
  return asin(E_ELEM * sqrt((double)dim) * s / l2n(x, dim));
}

START_TEST(test_bounds) {
  const k_ops *k = k_get();
  t_rng r = {t_seed() + 4};
  static const int dims[] = {1, 3, 16, 48, 128, 769};
  double worst[3] = {0, 0, 0}; /* error / bound, per metric */
  for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
    int dim = dims[di];
    float *a = malloc((size_t)dim * sizeof *a), *b = malloc((size_t)dim * sizeof *b);
    int8_t *qa = malloc((size_t)dim), *qb = malloc((size_t)dim);
    for (int t = 0; t < 400; t++) {
      double ma = ldexp(1, (int)(t_next(&r) % 16) - 8), mb = t % 3 ? ma : ma * 3;
      for (int i = 0; i < dim; i++) {
        a[i] = (float)(t_unit(&r) * ma);
        /* b: near a, or unrelated */
        b[i] = t % 2 ? a[i] + (float)(0.05 * t_unit(&r) * mb) : (float)(t_unit(&r) * mb);
      }
      if (t % 5 == 0) a[t_next(&r) % (uint64_t)dim] = (float)(20 * ma);
      float sa, sb;
      ck_assert_int_eq(ann_q8_encode(a, ANN_F32, dim, qa, &sa), 0);
      ck_assert_int_eq(ann_q8_encode(b, ANN_F32, dim, qb, &sb), 0);
      double dot = 0, l2 = 0, ab1 = 0, na = l2n(a, dim), nb = l2n(b, dim);
      for (int i = 0; i < dim; i++) {
        dot += (double)a[i] * b[i];
        l2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ab1 += fabs((double)a[i] - b[i]);
      }
      double cosd = na > 0 && nb > 0 ? 1 - dot / (na * nb) : 1;
      double e = E_ELEM, rel = 1e-6;
      double bdot = e * (sb * l1(a, dim) + sa * l1(b, dim)) + dim * e * e * sa * sb;
      double bl2 = 2 * e * (sa + sb) * ab1 + dim * e * e * (sa + sb) * (sa + sb);
      double bcos = angle_bound(a, sa, dim) + angle_bound(b, sb, dim);
      double gdot = -ann_q8_dist(k, ANN_DOT, qa, sa, qb, sb, (size_t)dim);
      double gl2 = ann_q8_dist(k, ANN_L2, qa, sa, qb, sb, (size_t)dim);
      double gcos = ann_q8_dist(k, ANN_COSINE, qa, 123.0f, qb, -9.0f, (size_t)dim);
      double err[3] = {fabs(gdot - dot), fabs(gl2 - l2), fabs(gcos - cosd)};
      double bnd[3] = {bdot + rel * fabs(dot), bl2 + rel * l2, bcos + 1e-6};
      for (int m = 0; m < 3; m++) {
        T_CHECK(err[m] <= bnd[m], "dim %d trial %d metric %d: error %g > bound %g", dim, t, m,
                err[m], bnd[m]);
        if (bnd[m] > 0 && err[m] / bnd[m] > worst[m]) worst[m] = err[m] / bnd[m];
      }
      /* the cosine kernel ignores the scales */
      ck_assert_float_eq(gcos, k->cos_i8(qa, qb, (size_t)dim));
    }
    free(a);
    free(b);
    free(qa);
    free(qb);
  }
  printf("q8 bounds: worst error / bound: dot %.3f, l2sq %.3f, cosine %.3f\n", worst[0],
         worst[1], worst[2]);
}
END_TEST

/* the batch form gives ann_q8_dist's values, identical at every level */
START_TEST(test_dist_batch) {
  t_rng r = {t_seed() + 5};
  size_t dim = 77, n = 9;
  float x[77], scales[9], sq;
  int8_t q[77], rows[9 * 77];
  const int8_t *rp[9];
  for (size_t i = 0; i < dim; i++) x[i] = t_unit(&r);
  ck_assert_int_eq(ann_q8_query(x, (int)dim, q, &sq), 0);
  for (size_t j = 0; j < n; j++) {
    for (size_t i = 0; i < dim; i++) x[i] = t_unit(&r) * (float)(j + 1);
    ck_assert_int_eq(ann_q8_encode(x, ANN_F32, (int)dim, rows + j * dim, scales + j), 0);
    rp[j] = rows + j * dim;
  }
  for (int m = 0; m < 3; m++) {
    float ref[9];
    ann_q8_dist_batch(k_ops_for(K_SCALAR), (ann_metric)m, q, sq, rp, scales, n, dim, ref);
    for (int lv = 0; lv < K_NLEVEL; lv++) {
      const k_ops *k = k_ops_for((k_level)lv);
      if (!k) continue;
      float out[9];
      ann_q8_dist_batch(k, (ann_metric)m, q, sq, rp, scales, n, dim, out);
      for (size_t j = 0; j < n; j++) {
        float one = ann_q8_dist(k, (ann_metric)m, q, sq, rows + j * dim, scales[j], dim);
        T_CHECK(out[j] == one && out[j] == ref[j], "%s metric %d row %zu: %g %g %g", k->name, m,
                j, (double)out[j], (double)one, (double)ref[j]);
      }
    }
  }
}
END_TEST

int main(void) {
  printf("test_q8: seed %llu, kernels %s\n", (unsigned long long)t_seed(), k_get()->name);
  Suite *s = suite_create("q8");
  TCase *tc = tcase_create("q8");
  tcase_add_test(tc, test_encode);
  tcase_add_test(tc, test_edges);
  tcase_add_test(tc, test_f16);
  tcase_add_test(tc, test_batch);
  tcase_add_test(tc, test_bounds);
  tcase_add_test(tc, test_dist_batch);
  suite_add_tcase(s, tc);
  return t_run(s);
}
