/*
** kernels/k_float.h - the float distance loops, written once for every SIMD
** level and both row types.
**
** A level's file (k_sse2.c, k_avx2.c, ...) defines its vector operations and
** includes this file once per row element type; it makes
**   kp_dot_<KSUFFIX>(q, r, n)          sum q[i]*r[i]
**   kp_l2sq_<KSUFFIX>(q, r, n)         sum (q[i]-r[i])^2
**   kp_dotnorm_<KSUFFIX>(q, r, n, &rr) sum q[i]*r[i], and *rr = sum r[i]^2
** for an f32 query q against a row r of KROW elements.
**
** Four independent accumulators over 4*KW elements a step keep the FMA
** latency hidden; the last n % KW elements go through one more vector step
** on zero-padded copies, so nothing reads past the end of q or r.
**
** Expected definitions (undefined again at the end of this file):
**   KV               the vector type; KW its number of float lanes
**   KZERO()          a vector of zeros
**   KADD(a, b), KSUB(a, b)
**   KFMA(a, b, c)    c + a*b
**   KHSUM(v)         the sum of v's lanes, as a float
**   KLOADQ(p)        KW floats from p; KTAILQ(p, n) the n < KW floats at p,
**                    zero-padded
**   KROW             row element type (float or uint16_t, binary16)
**   KLOADR(p), KTAILR(p, n)   the same for KROW elements, widened to float
**   KSUFFIX          f32 or f16: the suffix of the names made
*/
#define K_CAT2(a, b) a##b
#define K_CAT(a, b) K_CAT2(a, b)

K_PRIM float K_CAT(kp_dot_, KSUFFIX)(const float *q, const KROW *r, size_t n) {
  KV s0 = KZERO(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 4 * KW <= n; i += 4 * KW) {
    s0 = KFMA(KLOADQ(q + i), KLOADR(r + i), s0);
    s1 = KFMA(KLOADQ(q + i + KW), KLOADR(r + i + KW), s1);
    s2 = KFMA(KLOADQ(q + i + 2 * KW), KLOADR(r + i + 2 * KW), s2);
    s3 = KFMA(KLOADQ(q + i + 3 * KW), KLOADR(r + i + 3 * KW), s3);
  }
  for (; i + KW <= n; i += KW) s0 = KFMA(KLOADQ(q + i), KLOADR(r + i), s0);
  if (i < n) s1 = KFMA(KTAILQ(q + i, n - i), KTAILR(r + i, n - i), s1);
  return KHSUM(KADD(KADD(s0, s1), KADD(s2, s3)));
}

K_PRIM float K_CAT(kp_l2sq_, KSUFFIX)(const float *q, const KROW *r, size_t n) {
  KV s0 = KZERO(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 4 * KW <= n; i += 4 * KW) {
    d = KSUB(KLOADQ(q + i), KLOADR(r + i));
    s0 = KFMA(d, d, s0);
    d = KSUB(KLOADQ(q + i + KW), KLOADR(r + i + KW));
    s1 = KFMA(d, d, s1);
    d = KSUB(KLOADQ(q + i + 2 * KW), KLOADR(r + i + 2 * KW));
    s2 = KFMA(d, d, s2);
    d = KSUB(KLOADQ(q + i + 3 * KW), KLOADR(r + i + 3 * KW));
    s3 = KFMA(d, d, s3);
  }
  for (; i + KW <= n; i += KW) {
    d = KSUB(KLOADQ(q + i), KLOADR(r + i));
    s0 = KFMA(d, d, s0);
  }
  if (i < n) {
    d = KSUB(KTAILQ(q + i, n - i), KTAILR(r + i, n - i));
    s1 = KFMA(d, d, s1);
  }
  return KHSUM(KADD(KADD(s0, s1), KADD(s2, s3)));
}

K_PRIM float K_CAT(kp_dotnorm_, KSUFFIX)(const float *q, const KROW *r,
                                         size_t n, float *rr) {
  KV s0 = KZERO(), s1 = s0, s2 = s0, s3 = s0;
  KV t0 = s0, t1 = s0, t2 = s0, t3 = s0, x;
  size_t i = 0;
  for (; i + 4 * KW <= n; i += 4 * KW) {
    x = KLOADR(r + i);
    s0 = KFMA(KLOADQ(q + i), x, s0);
    t0 = KFMA(x, x, t0);
    x = KLOADR(r + i + KW);
    s1 = KFMA(KLOADQ(q + i + KW), x, s1);
    t1 = KFMA(x, x, t1);
    x = KLOADR(r + i + 2 * KW);
    s2 = KFMA(KLOADQ(q + i + 2 * KW), x, s2);
    t2 = KFMA(x, x, t2);
    x = KLOADR(r + i + 3 * KW);
    s3 = KFMA(KLOADQ(q + i + 3 * KW), x, s3);
    t3 = KFMA(x, x, t3);
  }
  for (; i + KW <= n; i += KW) {
    x = KLOADR(r + i);
    s0 = KFMA(KLOADQ(q + i), x, s0);
    t0 = KFMA(x, x, t0);
  }
  if (i < n) {
    x = KTAILR(r + i, n - i);
    s1 = KFMA(KTAILQ(q + i, n - i), x, s1);
    t1 = KFMA(x, x, t1);
  }
  *rr = KHSUM(KADD(KADD(t0, t1), KADD(t2, t3)));
  return KHSUM(KADD(KADD(s0, s1), KADD(s2, s3)));
}

#undef KROW
#undef KLOADR
#undef KTAILR
#undef KSUFFIX
#undef K_CAT
#undef K_CAT2
