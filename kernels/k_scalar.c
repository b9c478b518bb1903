/*
** kernels/k_scalar.c - the reference level: plain C, double accumulators.
**
** Every SIMD level is tested against these.  They are also what runs when
** H5MEM_SIMD=scalar, on CPUs without SSE2, and on other architectures.
*/
#include "config.h"

#include "k_internal.h"

K_PRIM float kp_dot_f32(const float *a, const float *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
  return (float)s;
}

K_PRIM float kp_l2sq_f32(const float *a, const float *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)a[i] - (double)b[i];
    s += d * d;
  }
  return (float)s;
}

K_PRIM float kp_dotnorm_f32(const float *q, const float *r, size_t n,
                            float *rr) {
  double s = 0.0, t = 0.0;
  for (size_t i = 0; i < n; i++) {
    s += (double)q[i] * (double)r[i];
    t += (double)r[i] * (double)r[i];
  }
  *rr = (float)t;
  return (float)s;
}

K_PRIM float kp_dot_f16(const float *q, const uint16_t *r, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)q[i] * (double)k_h2f(r[i]);
  return (float)s;
}

K_PRIM float kp_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = (double)q[i] - (double)k_h2f(r[i]);
    s += d * d;
  }
  return (float)s;
}

K_PRIM float kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
                            float *rr) {
  double s = 0.0, t = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = (double)k_h2f(r[i]);
    s += (double)q[i] * x;
    t += x * x;
  }
  *rr = (float)t;
  return (float)s;
}

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < n; i++) s += (int32_t)a[i] * (int32_t)b[i];
  return s;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t s = 0, t = 0;
  for (size_t i = 0; i < n; i++) {
    s += (int32_t)q[i] * (int32_t)r[i];
    t += (int32_t)r[i] * (int32_t)r[i];
  }
  *rr = t;
  return s;
}

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_TABLE k_scalar_ops
#define K_LEVEL K_SCALAR
#define K_LEVEL_NAME "scalar"
#include "k_impl.h"
