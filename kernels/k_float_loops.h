/*
** kernels/k_float_loops.h - the float distance loops for one row type
** (KROW, KLOADR, KTAILR, KSUFFIX) on the vector operations k_float.h
** lists; k_float.h includes it once per row type.
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
