/*
** test/unit/test_kernels.c - every SIMD level against the scalar reference.
**
** Levels tested: each one this CPU runs, plus the AVX-512 and NEON sources
** compiled on SIMDe (HAVE_SIMDE), so no level ships untested.  Inputs are
** random, dimensions 1..1100, pointers offset from 64-byte alignment by
** 0..7 elements.  Tolerances (also in kernels/k.h):
**   dot, l2sq   |level - scalar| <= 1e-5 * sum|term| + 1e-6
**   cos         |level - scalar| <= 1e-5
**   int8        identical (exact integer sums)
**   f16 <-> f32 identical bits, NaN payloads included on real hardware;
**               SIMDe does not model NaN payloads, so on emulated levels
**               a NaN need only map to some NaN
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "k.h"
#include "k_internal.h"
#include "testutil.h"

#ifdef HAVE_SIMDE
extern const k_ops k_avx512_emu_ops;
extern const k_ops k_avx512vnni_emu_ops;
extern const k_ops k_neon_emu_ops;
#endif

#define MAXDIM 1100
#define REL_TOL 1e-5
#define ABS_TOL 1e-6
#define COS_TOL 1e-5

static const k_ops *levels[K_NLEVEL + 3];
static const char *level_label[K_NLEVEL + 3];
static int level_emulated[K_NLEVEL + 3];
static int nlevels;

/* levels[0] is the scalar reference, then every other level that can run
** here, real or emulated.  Comparisons against scalar start at index 1. */
static void collect_levels(void) {
  for (int l = K_SCALAR; l < K_NLEVEL; l++) {
    const k_ops *k = k_ops_for((k_level)l);
    if (!k) continue;
    level_label[nlevels] = k->name;
    levels[nlevels++] = k;
  }
#ifdef HAVE_SIMDE
  level_label[nlevels] = "avx512 (SIMDe)";
  level_emulated[nlevels] = 1;
  levels[nlevels++] = &k_avx512_emu_ops;
  level_label[nlevels] = "avx512vnni (SIMDe)";
  level_emulated[nlevels] = 1;
  levels[nlevels++] = &k_avx512vnni_emu_ops;
  level_label[nlevels] = "neon (SIMDe)";
  level_emulated[nlevels] = 1;
  levels[nlevels++] = &k_neon_emu_ops;
#endif
}

static const k_ops *ref = &k_scalar_ops;

static uint32_t fbits(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return b;
}

/* 64-byte aligned buffer with room for MAXDIM*rows elements + 8 of slack */
static void *abuf(size_t bytes) {
  void *p = NULL;
  ck_assert_int_eq(posix_memalign(&p, 64, bytes + 64), 0);
  memset(p, 0, bytes + 64);
  return p;
}

static void fill_f32(t_rng *r, float *v, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) v[i] = t_unit(r) * scale;
}

static void fill_f16(t_rng *r, uint16_t *v, size_t n, float scale) {
  for (size_t i = 0; i < n; i++) v[i] = k_f2h(t_unit(r) * scale);
}

static void fill_i8(t_rng *r, int8_t *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = (int8_t)(t_next(r) & 0xff);
}

static void check_near(const char *lvl, const char *what, size_t n, double got,
                       double want, double tol) {
  T_CHECK(fabs(got - want) <= tol,
                "%s %s n=%zu: got %.9g, scalar %.9g, |diff| %.3g > tol %.3g",
                lvl, what, n, got, want, fabs(got - want), tol);
}

static const float scales[] = {1.0f, 1e-3f, 1e3f};

START_TEST(test_f32_pairs) {
  const k_ops *k = levels[_i];
  const char *lvl = level_label[_i];
  t_rng rng = {t_seed()};
  float *A = abuf(MAXDIM * 4), *B = abuf(MAXDIM * 4);
  for (size_t n = 1; n <= MAXDIM; n++) {
    size_t off = n % 8;
    float *a = A + off, *b = B + (7 - off);
    float sc = scales[n % 3];
    fill_f32(&rng, a, n, sc);
    fill_f32(&rng, b, n, sc);
    double sab = 0, sdd = 0;
    for (size_t i = 0; i < n; i++) {
      sab += fabs((double)a[i] * b[i]);
      sdd += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    }
    check_near(lvl, "dot_f32", n, k->dot_f32(a, b, n), ref->dot_f32(a, b, n),
               REL_TOL * sab + ABS_TOL);
    check_near(lvl, "l2sq_f32", n, k->l2sq_f32(a, b, n),
               ref->l2sq_f32(a, b, n), REL_TOL * sdd + ABS_TOL);
    check_near(lvl, "cos_f32", n, k->cos_f32(a, b, n), ref->cos_f32(a, b, n),
               COS_TOL);
  }
  free(A);
  free(B);
}
END_TEST

START_TEST(test_f16_pairs) {
  const k_ops *k = levels[_i];
  const char *lvl = level_label[_i];
  t_rng rng = {t_seed() + 1};
  float *Q = abuf(MAXDIM * 4);
  uint16_t *R = abuf(MAXDIM * 2);
  for (size_t n = 1; n <= MAXDIM; n++) {
    size_t off = n % 8;
    float *q = Q + off;
    uint16_t *r = R + (7 - off);
    float sc = scales[n % 3];
    fill_f32(&rng, q, n, sc);
    fill_f16(&rng, r, n, sc);
    double sab = 0, sdd = 0;
    for (size_t i = 0; i < n; i++) {
      double x = k_h2f(r[i]);
      sab += fabs(q[i] * x);
      sdd += (q[i] - x) * (q[i] - x);
    }
    check_near(lvl, "dot_f16", n, k->dot_f16(q, r, n), ref->dot_f16(q, r, n),
               REL_TOL * sab + ABS_TOL);
    check_near(lvl, "l2sq_f16", n, k->l2sq_f16(q, r, n),
               ref->l2sq_f16(q, r, n), REL_TOL * sdd + ABS_TOL);
    check_near(lvl, "cos_f16", n, k->cos_f16(q, r, n), ref->cos_f16(q, r, n),
               COS_TOL);
  }
  free(Q);
  free(R);
}
END_TEST

START_TEST(test_i8_pairs) {
  const k_ops *k = levels[_i];
  const char *lvl = level_label[_i];
  t_rng rng = {t_seed() + 2};
  int8_t *A = abuf(MAXDIM), *B = abuf(MAXDIM);
  for (size_t n = 1; n <= MAXDIM; n++) {
    int8_t *a = A + n % 13, *b = B + n % 7; /* any byte offset */
    fill_i8(&rng, a, n);
    float sa = (t_unit(&rng) + 1.5f) * 0.01f, sb;
    if (n % 2) {
      fill_i8(&rng, b, n);
      sb = (t_unit(&rng) + 1.5f) * 0.01f;
    } else { /* near-equal: l2 cancels, where rounding differences show */
      memcpy(b, a, n);
      b[t_next(&rng) % n] ^= 1;
      sb = sa * (1.0f + 1e-6f);
    }
    T_CHECK(k->dot_i8(a, sa, b, sb, n) == ref->dot_i8(a, sa, b, sb, n),
                  "%s dot_i8 n=%zu", lvl, n);
    T_CHECK(k->l2sq_i8(a, sa, b, sb, n) == ref->l2sq_i8(a, sa, b, sb, n),
                  "%s l2sq_i8 n=%zu", lvl, n);
    T_CHECK(k->cos_i8(a, b, n) == ref->cos_i8(a, b, n),
                  "%s cos_i8 n=%zu", lvl, n);
  }
  free(A);
  free(B);
}
END_TEST

/* The batched dot at the extremes of one K_I8_BLOCK (65536 codes: every
** level's flush length) with enough rows for the 4-row forms: each row's
** 16 int32 lanes hold nearly 2^31 and must add up without wrapping. */
START_TEST(test_i8_batch_block_extremes) {
  const k_ops *k = levels[_i];
  size_t n = 65536;
  int8_t *q = abuf(n), *hi = abuf(n), *lo = abuf(n), *mix = abuf(n);
  memset(q, 0x80, n);   /* -128 */
  memset(hi, 0x7f, n);  /* 127 */
  memset(lo, 0x80, n);  /* -128 */
  for (size_t i = 0; i < n; i++) mix[i] = (int8_t)(i & 1 ? 127 : -128);
  const int8_t *rp[6] = {hi, lo, mix, hi, lo, hi};
  double want[6] = {-16256.0, 16384.0, 64.0, -16256.0, 16384.0, -16256.0};
  float sc[6] = {1, 1, 1, 1, 1, 1}, out[6];
  k->dot_i8_batch(q, 1.0f, rp, sc, 6, n, out);
  for (int r = 0; r < 6; r++)
    T_CHECK(out[r] == (float)(want[r] * (double)n), "%s row %d: %.9g, want %.9g",
            level_label[_i], r, out[r], want[r] * (double)n);
  free(q);
  free(hi);
  free(lo);
  free(mix);
}
END_TEST

/* Sums must not wrap, neither in total (2^21 * 2^14 = 2^35) nor in any
** one int32 lane, which without the K_I8_BLOCK flushes would take more than
** 2^31 here at every level. */
START_TEST(test_i8_no_overflow) {
  const k_ops *k = levels[_i];
  size_t n = ((size_t)1 << 21) + 1;
  int8_t *a = abuf(n), *b = abuf(n);
  memset(a, 0x80, n); /* -128 */
  memset(b, 0x80, n);
  double want = 16384.0 * (double)n;
  T_CHECK(k->dot_i8(a, 1.0f, b, 1.0f, n) == (float)want,
                "%s dot_i8 = %.9g, want %.9g", level_label[_i],
                k->dot_i8(a, 1.0f, b, 1.0f, n), want);
  /* the batched forms (one query, many rows) flush alike */
  const int8_t *rp[2] = {b, a};
  float sc[2] = {1.0f, 1.0f}, out[2];
  k->dot_i8_batch(a, 1.0f, rp, sc, 2, n, out);
  T_CHECK(out[1] == (float)want, "%s dot_i8_batch = %.9g, want %.9g", level_label[_i], out[1],
          want);
  memset(b, 0x7f, n); /* 127: l2 = n * 255^2 */
  ck_assert(k->l2sq_i8(a, 1.0f, b, 1.0f, n) == (float)(65025.0 * (double)n));
  ck_assert(k->cos_i8(a, b, n) == 2.0f);
  k->dot_i8_batch(a, 1.0f, rp, sc, 2, n, out);
  ck_assert(out[0] == (float)(-16256.0 * (double)n));
  k->l2sq_i8_batch(a, 1.0f, rp, sc, 2, n, out);
  ck_assert(out[0] == (float)(65025.0 * (double)n) && out[1] == 0.0f);
  k->cos_i8_batch(a, rp, 2, n, out);
  ck_assert(out[0] == 2.0f && out[1] == 0.0f);
  free(a);
  free(b);
}
END_TEST

static const size_t batch_dims[] = {1,  2,  3,  7,  8,   9,   15,  16,  17,
                                    31, 32, 33, 63, 64,  65,  100, 127, 128,
                                    129, 255, 256, 257, 384, 768, 1100};
#define NROWS 9

/* int8 quantisation: absmax_f32 and q8_f32 equal the scalar level's, bit
** for bit, at every length (the SIMD bodies and their tails): random
** magnitudes, zeros of both signs, exact halves, values at the clamp; a NaN
** or an infinity anywhere makes absmax NaN. */
START_TEST(test_q8_quantise) {
  const k_ops *k = levels[_i], *sc = k_ops_for(K_SCALAR);
  const char *lvl = level_label[_i];
  t_rng rng = {t_seed() + 11};
  float x[100];
  int8_t a[100], b[100];
  for (size_t n = 0; n <= 100; n++) {
    for (int round = 0; round < 4; round++) {
      for (size_t i = 0; i < n; i++) x[i] = t_unit(&rng) * (float)(1 << (t_next(&rng) % 8));
      if (n > 3 && round == 1) {
        x[0] = -0.0f;
        x[1] = 0.0f;
        x[2] = 2.5f; /* with inv 1: a half */
        x[3] = -126.5f;
      }
      float ma = k->absmax_f32(x, n), mr = sc->absmax_f32(x, n);
      T_CHECK(ma == mr, "%s absmax n=%zu: %.9g != %.9g", lvl, n, ma, mr);
      double inv = round == 1 ? 1.0 : (mr > 0 ? 127.0 / mr : 1.0);
      if (round == 2) inv *= 1.0000001; /* the largest just past 127: clamped */
      memset(a, 0x55, sizeof a);
      memset(b, 0x55, sizeof b);
      k->q8_f32(x, n, inv, a);
      sc->q8_f32(x, n, inv, b);
      T_CHECK(memcmp(a, b, sizeof a) == 0, "%s q8_f32 n=%zu round %d", lvl, n, round);
      if (n && round == 3) {
        size_t at = t_next(&rng) % n;
        x[at] = (t_next(&rng) & 1) ? NAN : -INFINITY;
        T_CHECK(isnan(k->absmax_f32(x, n)), "%s absmax n=%zu: not NaN with a bad value", lvl, n);
      }
    }
  }
  for (int i = 0; i < 4; i++) x[i] = 2.5f;
  k->q8_f32(x, 4, 1.0, a);
  ck_assert(a[0] == 3 && a[3] == 3); /* halves away from zero */
  x[0] = -2.5f;
  k->q8_f32(x, 1, 1.0, a);
  ck_assert(a[0] == -3);
}
END_TEST

/* Batched forms equal the same level's pair kernels bit for bit. */
START_TEST(test_batches) {
  const k_ops *k = levels[_i];
  const char *lvl = level_label[_i];
  t_rng rng = {t_seed() + 3};
  float out[NROWS], sc[NROWS];
  for (size_t di = 0; di < sizeof batch_dims / sizeof batch_dims[0]; di++) {
    size_t d = batch_dims[di], off = di % 8;
    float *q = (float *)abuf(d * 4) + off;
    float *rows = (float *)abuf(NROWS * d * 4) + (7 - off);
    uint16_t *hrows = (uint16_t *)abuf(NROWS * d * 2) + off;
    int8_t *qi = (int8_t *)abuf(d) + off, *irows = (int8_t *)abuf(NROWS * d) + 3;
    fill_f32(&rng, q, d, 1.0f);
    fill_f32(&rng, rows, NROWS * d, 1.0f);
    fill_f16(&rng, hrows, NROWS * d, 1.0f);
    fill_i8(&rng, qi, d);
    fill_i8(&rng, irows, NROWS * d);
    /* the int8 rows gathered backwards: out of order, as a graph walk */
    const int8_t *ip[NROWS];
    for (int r = 0; r < NROWS; r++) {
      sc[r] = 0.01f * (float)(r + 1);
      ip[r] = irows + (NROWS - 1 - r) * d;
    }
#define BATCH_EQ(name, call, pair)                                           \
  do {                                                                       \
    call;                                                                    \
    for (int r = 0; r < NROWS; r++)                                          \
      T_CHECK(out[r] == (pair), "%s %s d=%zu row %d: %.9g != %.9g",   \
                    lvl, name, d, r, out[r], (pair));                        \
  } while (0)
    BATCH_EQ("dot_f32_batch", k->dot_f32_batch(q, rows, NROWS, d, out),
             k->dot_f32(q, rows + r * d, d));
    BATCH_EQ("l2sq_f32_batch", k->l2sq_f32_batch(q, rows, NROWS, d, out),
             k->l2sq_f32(q, rows + r * d, d));
    BATCH_EQ("cos_f32_batch", k->cos_f32_batch(q, rows, NROWS, d, out),
             k->cos_f32(q, rows + r * d, d));
    BATCH_EQ("dot_f16_batch", k->dot_f16_batch(q, hrows, NROWS, d, out),
             k->dot_f16(q, hrows + r * d, d));
    BATCH_EQ("l2sq_f16_batch", k->l2sq_f16_batch(q, hrows, NROWS, d, out),
             k->l2sq_f16(q, hrows + r * d, d));
    BATCH_EQ("cos_f16_batch", k->cos_f16_batch(q, hrows, NROWS, d, out),
             k->cos_f16(q, hrows + r * d, d));
    BATCH_EQ("dot_i8_batch", k->dot_i8_batch(qi, 0.5f, ip, sc, NROWS, d, out),
             k->dot_i8(qi, 0.5f, ip[r], sc[r], d));
    BATCH_EQ("l2sq_i8_batch", k->l2sq_i8_batch(qi, 0.5f, ip, sc, NROWS, d, out),
             k->l2sq_i8(qi, 0.5f, ip[r], sc[r], d));
    BATCH_EQ("cos_i8_batch", k->cos_i8_batch(qi, ip, NROWS, d, out),
             k->cos_i8(qi, ip[r], d));
#undef BATCH_EQ
    free(q - off);
    free(rows - (7 - off));
    free(hrows - off);
    free(qi - off);
    free(irows - 3);
  }
}
END_TEST

/* All 65536 binary16 patterns, at an odd offset and odd length. */
START_TEST(test_h2f_all) {
  const k_ops *k = levels[_i];
  size_t n = 65536;
  uint16_t *src = (uint16_t *)abuf(n * 2 + 2) + 1;
  float *got = (float *)abuf(n * 4 + 4) + 1, *want = abuf(n * 4);
  for (size_t i = 0; i < n; i++) src[i] = (uint16_t)i;
  for (size_t len = n - 3; len <= n; len += 3) {
    memset(got, 0, n * 4);
    k->f16_to_f32(src, got, len);
    ref->f16_to_f32(src, want, len);
    for (size_t i = 0; i < len; i++) {
      if (level_emulated[_i] && isnan(want[i]) && isnan(got[i])) continue;
      T_CHECK(memcmp(&got[i], &want[i], 4) == 0,
                    "%s f16_to_f32(0x%04zx): 0x%08x != 0x%08x", level_label[_i],
                    i, fbits(got[i]), fbits(want[i]));
    }
  }
  free(src - 1);
  free(got - 1);
  free(want);
}
END_TEST

/* f32 -> f16 on the rounding boundaries of every binary16 value and on
** random bit patterns, compared bit for bit. */
START_TEST(test_f2h_boundaries) {
  const k_ops *k = levels[_i];
  t_rng rng = {t_seed() + 4};
  size_t cap = 65536 * 6 + 2000000;
  uint32_t *bits = abuf(cap * 4);
  size_t n = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    float lo = k_h2f((uint16_t)h), hi = k_h2f((uint16_t)(h + 1));
    if (!isfinite(lo) || !isfinite(hi) || (h & 0x7fff) == 0x7bff) {
      uint32_t x;
      memcpy(&x, &lo, 4);
      bits[n++] = x;
      continue;
    }
    float mid = (float)(((double)lo + (double)hi) / 2.0);
    uint32_t m;
    memcpy(&m, &mid, 4);
    bits[n++] = m;
    bits[n++] = m - 1;
    bits[n++] = m + 1;
    memcpy(&bits[n++], &lo, 4);
  }
  /* around the overflow threshold 65520 and the subnormal limits */
  const uint32_t special[] = {0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001,
                              0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001,
                              0xffffffff, 0x33000000, 0x33000001, 0x32ffffff,
                              0x387fffff, 0x38800000, 0x00000001, 0x80000000};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
    bits[n++] = special[i];
  while (n < cap) bits[n++] = (uint32_t)t_next(&rng);
  uint16_t *got = abuf(n * 2), *want = abuf(n * 2);
  const float *src = (const float *)bits;
  k->f32_to_f16(src + 1, got, n - 1); /* odd offset and length */
  ref->f32_to_f16(src + 1, want, n - 1);
  for (size_t i = 0; i < n - 1; i++) {
    int nan = (got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff) &&
              (want[i] & 0x7c00) == 0x7c00 && (want[i] & 0x3ff);
    if (level_emulated[_i] && nan) continue;
    T_CHECK(got[i] == want[i], "%s f32_to_f16(0x%08x): 0x%04x != 0x%04x",
                  level_label[_i], bits[i + 1], got[i], want[i]);
  }
  free(bits);
  free(got);
  free(want);
}
END_TEST

START_TEST(test_zero_length) {
  const k_ops *k = levels[_i];
  float a[1] = {1}, out[2] = {-1, -1}, sc[2] = {1, 1};
  uint16_t h[1] = {0x3c00};
  int8_t c[1] = {1};
  ck_assert(k->dot_f32(a, a, 0) == 0.0f);
  ck_assert(k->l2sq_f32(a, a, 0) == 0.0f);
  ck_assert(k->cos_f32(a, a, 0) == 1.0f);
  ck_assert(k->dot_f16(a, h, 0) == 0.0f);
  ck_assert(k->l2sq_f16(a, h, 0) == 0.0f);
  ck_assert(k->cos_f16(a, h, 0) == 1.0f);
  ck_assert(k->dot_i8(c, 1, c, 1, 0) == 0.0f);
  ck_assert(k->l2sq_i8(c, 1, c, 1, 0) == 0.0f);
  ck_assert(k->cos_i8(c, c, 0) == 1.0f);
  k->f16_to_f32(h, a, 0);
  k->f32_to_f16(a, h, 0);
  ck_assert(a[0] == 1.0f && h[0] == 0x3c00); /* nothing written */
  k->dot_f32_batch(a, a, 0, 1, out);
  ck_assert(out[0] == -1.0f); /* nothing written for zero rows */
  /* rows of dimension 0: every score is that of empty vectors */
  k->dot_f32_batch(a, a, 2, 0, out);
  ck_assert(out[0] == 0.0f && out[1] == 0.0f);
  k->cos_f16_batch(a, h, 2, 0, out);
  ck_assert(out[0] == 1.0f && out[1] == 1.0f);
  const int8_t *cp[2] = {c, c};
  k->l2sq_i8_batch(c, 1, cp, sc, 2, 0, out);
  ck_assert(out[0] == 0.0f && out[1] == 0.0f);
}
END_TEST

/* Exact-size heap buffers, no slack: under AddressSanitizer any read past
** the end of a vector (a tail handled wrongly) stops the test. */
START_TEST(test_exact_bounds) {
  const k_ops *k = levels[_i];
  t_rng rng = {t_seed() + 6};
  for (size_t n = 1; n <= 300; n++) {
    float *a = malloc(n * 4), *b = malloc(n * 4), *rows = malloc(2 * n * 4);
    uint16_t *h = malloc(n * 2), *hrows = malloc(2 * n * 2);
    int8_t *i8 = malloc(n), *irows = malloc(2 * n);
    float out[2], sc[2] = {0.5f, 0.25f};
    fill_f32(&rng, a, n, 1.0f);
    fill_f32(&rng, b, n, 1.0f);
    fill_f32(&rng, rows, 2 * n, 1.0f);
    fill_f16(&rng, hrows, 2 * n, 1.0f);
    fill_i8(&rng, i8, n);
    fill_i8(&rng, irows, 2 * n);
    double sum = k->dot_f32(a, b, n) + k->l2sq_f32(a, b, n) + k->cos_f32(a, b, n);
    k->f32_to_f16(b, h, n);
    k->f16_to_f32(h, b, n);
    sum += k->dot_f16(a, h, n) + k->l2sq_f16(a, h, n) + k->cos_f16(a, h, n);
    sum += k->dot_i8(i8, 1, irows, 1, n) + k->l2sq_i8(i8, 1, irows, 1, n) +
           k->cos_i8(i8, irows, n);
    k->dot_f32_batch(a, rows, 2, n, out);
    k->l2sq_f32_batch(a, rows, 2, n, out);
    k->cos_f32_batch(a, rows, 2, n, out);
    k->dot_f16_batch(a, hrows, 2, n, out);
    k->l2sq_f16_batch(a, hrows, 2, n, out);
    k->cos_f16_batch(a, hrows, 2, n, out);
    const int8_t *ip[2] = {irows, irows + n};
    k->dot_i8_batch(i8, 1, ip, sc, 2, n, out);
    k->l2sq_i8_batch(i8, 1, ip, sc, 2, n, out);
    k->cos_i8_batch(i8, ip, 2, n, out);
    T_CHECK(isfinite(sum) && isfinite(out[0]) && isfinite(out[1]),
            "%s n=%zu: non-finite result", level_label[_i], n);
    free(a);
    free(b);
    free(rows);
    free(h);
    free(hrows);
    free(i8);
    free(irows);
  }
}
END_TEST

/* Magnitudes beyond what float sums hold give the documented cosine of 1,
** never NaN; the SQL layer routes such vectors to double precision. */
START_TEST(test_cos_out_of_range) {
  const k_ops *k = levels[_i];
  float big[3] = {1e20f, 1.0f, -3e20f}, tiny[3] = {1e-25f, 2e-25f, 0.0f};
  float out[1];
  ck_assert(k->cos_f32(big, big, 3) == 1.0f);
  ck_assert(k->cos_f32(tiny, tiny, 3) == 1.0f);
  k->cos_f32_batch(big, big, 1, 3, out);
  ck_assert(out[0] == 1.0f);
}
END_TEST

/* The scalar reference itself, against known values and, where the
** compiler has _Float16, against the compiler's own conversions. */
START_TEST(test_scalar_reference) {
  static const struct { float f; uint16_t h; } known[] = {
      {0.0f, 0x0000},        {-0.0f, 0x8000},       {1.0f, 0x3c00},
      {-2.0f, 0xc000},       {65504.0f, 0x7bff},    {65519.99f, 0x7bff},
      {65520.0f, 0x7c00},    {1e10f, 0x7c00},       {5.9604645e-08f, 0x0001},
      {2.9802322e-08f, 0x0000}, {2.9802326e-08f, 0x0001},
      {6.1035156e-05f, 0x0400}, {0.33333334f, 0x3555}, {1.0009766f, 0x3c01},
      {1.0004883f, 0x3c00} /* tie -> even */,  {1.0014648f, 0x3c02} /* tie -> even */,
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    T_CHECK(k_f2h(known[i].f) == known[i].h, "k_f2h(%.9g) = 0x%04x, want 0x%04x",
                  (double)known[i].f, k_f2h(known[i].f), known[i].h);
  for (uint32_t h = 0; h < 65536; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue; /* NaN */
    T_CHECK(k_f2h(k_h2f((uint16_t)h)) == h, "round trip 0x%04x", h);
  }
#ifdef __FLT16_MAX__
  for (uint32_t h = 0; h < 65536; h++) {
    _Float16 x;
    uint16_t hb = (uint16_t)h;
    memcpy(&x, &hb, 2);
    float want = (float)x, got = k_h2f(hb);
    if (isnan(want)) {
      T_CHECK(isnan(got), "k_h2f(0x%04x) is not NaN", h);
      continue;
    }
    T_CHECK(memcmp(&want, &got, 4) == 0, "k_h2f(0x%04x)", h);
  }
  t_rng rng = {t_seed() + 5};
  for (int i = 0; i < 4000000; i++) {
    uint32_t b = (uint32_t)t_next(&rng);
    float f;
    memcpy(&f, &b, 4);
    if (isnan(f)) continue;
    _Float16 want = (_Float16)f;
    uint16_t wb;
    memcpy(&wb, &want, 2);
    T_CHECK(k_f2h(f) == wb, "k_f2h(0x%08x) = 0x%04x, compiler 0x%04x", b,
                  k_f2h(f), wb);
  }
#endif
}
END_TEST

START_TEST(test_dispatch) {
  ck_assert_ptr_nonnull(k_get());
  ck_assert_ptr_nonnull(k_ops_for(K_SCALAR));
  ck_assert_ptr_null(k_ops_for(K_NLEVEL));
  ck_assert_ptr_eq(k_ops_for(k_get()->level), k_get());
  for (int l = 0; l < K_NLEVEL; l++) {
    ck_assert_int_eq(k_level_from_name(k_level_name((k_level)l)), l);
    if (k_ops_for((k_level)l)) ck_assert(k_compiled_in((k_level)l));
  }
  ck_assert_int_eq(k_level_from_name("avx3"), K_NLEVEL);
  ck_assert_int_eq(k_level_from_name(NULL), K_NLEVEL);
  char buf[64];
  k_levels_usable(buf, sizeof buf);
  T_CHECK(strncmp(buf, "scalar", 6) == 0, "usable levels: %s", buf);
}
END_TEST

int main(void) {
  collect_levels();
  printf("test_kernels: seed %llu; levels:", (unsigned long long)t_seed());
  for (int i = 0; i < nlevels; i++) printf(" [%s]", level_label[i]);
  printf("\n");

  Suite *s = suite_create("kernels");
  TCase *tc = tcase_create("levels");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_scalar_reference);
  tcase_add_test(tc, test_dispatch);
  tcase_add_loop_test(tc, test_i8_no_overflow, 0, nlevels);
  tcase_add_loop_test(tc, test_i8_batch_block_extremes, 0, nlevels);
  tcase_add_loop_test(tc, test_batches, 0, nlevels);
  tcase_add_loop_test(tc, test_q8_quantise, 0, nlevels);
  tcase_add_loop_test(tc, test_zero_length, 0, nlevels);
  tcase_add_loop_test(tc, test_exact_bounds, 0, nlevels);
  tcase_add_loop_test(tc, test_cos_out_of_range, 0, nlevels);
  if (nlevels > 1) {
    tcase_add_loop_test(tc, test_f32_pairs, 1, nlevels);
    tcase_add_loop_test(tc, test_f16_pairs, 1, nlevels);
    tcase_add_loop_test(tc, test_i8_pairs, 1, nlevels);
    tcase_add_loop_test(tc, test_h2f_all, 1, nlevels);
    tcase_add_loop_test(tc, test_f2h_boundaries, 1, nlevels);
  }
  suite_add_tcase(s, tc);
  return t_run(s);
}
