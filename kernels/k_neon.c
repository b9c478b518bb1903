/*
** kernels/k_neon.c - AArch64 NEON level (AdvSIMD is always present there).
**
** Four 4-lane FMA accumulators for f32; f16 rows widened with fcvtl; int8
** widened to int16 and multiplied into int32 lanes with smlal, flushed
** every K_I8_BLOCK elements.  With K_EMULATE defined the same source is
** compiled against SIMDe's portable NEON so x86 test runs can check it.
*/
#include "config.h"

#ifdef K_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/arm/neon.h>
#define K_TABLE k_neon_emu_ops
#else
#include <arm_neon.h>
#define K_TABLE k_neon_ops
#endif

#include "k_internal.h"

/* Each int32 lane takes 4 * K_I8_BLOCK/16 products of at most 2^14:
** 2^28 per lane, 2^30 over the 4 lanes. */
#define K_I8_BLOCK 65536u

static inline float32x4_t tail_ps(const float *p, size_t n) {
  float t[4] = {0};
  memcpy(t, p, n * sizeof *p);
  return vld1q_f32(t);
}

static inline float32x4_t load_ph(const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

static inline float32x4_t tail_ph(const uint16_t *p, size_t n) {
  uint16_t t[4] = {0};
  memcpy(t, p, n * sizeof *p);
  return load_ph(t);
}

/* acc += a . b over 16 int8 lanes */
static inline int32x4_t dot16_i8(int32x4_t acc, int8x16_t a, int8x16_t b) {
  int16x8_t alo = vmovl_s8(vget_low_s8(a)), ahi = vmovl_s8(vget_high_s8(a));
  int16x8_t blo = vmovl_s8(vget_low_s8(b)), bhi = vmovl_s8(vget_high_s8(b));
  acc = vmlal_s16(acc, vget_low_s16(alo), vget_low_s16(blo));
  acc = vmlal_s16(acc, vget_high_s16(alo), vget_high_s16(blo));
  acc = vmlal_s16(acc, vget_low_s16(ahi), vget_low_s16(bhi));
  return vmlal_s16(acc, vget_high_s16(ahi), vget_high_s16(bhi));
}

static inline int8x16_t tail_i8(const int8_t *p, size_t n) {
  int8_t t[16] = {0};
  memcpy(t, p, n);
  return vld1q_s8(t);
}

K_PRIM float kp_dot_f32(const float *a, const float *b, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
  if (i < n) s1 = vfmaq_f32(s1, tail_ps(a + i, n - i), tail_ps(b + i, n - i));
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

K_PRIM float kp_l2sq_f32(const float *a, const float *b, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    d = vsubq_f32(vld1q_f32(a + i), vld1q_f32(b + i));
    s0 = vfmaq_f32(s0, d, d);
    d = vsubq_f32(vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    s1 = vfmaq_f32(s1, d, d);
    d = vsubq_f32(vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
    s2 = vfmaq_f32(s2, d, d);
    d = vsubq_f32(vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    s3 = vfmaq_f32(s3, d, d);
  }
  for (; i + 4 <= n; i += 4) {
    d = vsubq_f32(vld1q_f32(a + i), vld1q_f32(b + i));
    s0 = vfmaq_f32(s0, d, d);
  }
  if (i < n) {
    d = vsubq_f32(tail_ps(a + i, n - i), tail_ps(b + i, n - i));
    s1 = vfmaq_f32(s1, d, d);
  }
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

K_PRIM float kp_dotnorm_f32(const float *q, const float *r, size_t n,
                            float *rr) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = vld1q_f32(r + i);
    y = vld1q_f32(r + i + 4);
    s0 = vfmaq_f32(s0, vld1q_f32(q + i), x);
    t0 = vfmaq_f32(t0, x, x);
    s1 = vfmaq_f32(s1, vld1q_f32(q + i + 4), y);
    t1 = vfmaq_f32(t1, y, y);
  }
  for (; i + 4 <= n; i += 4) {
    x = vld1q_f32(r + i);
    s0 = vfmaq_f32(s0, vld1q_f32(q + i), x);
    t0 = vfmaq_f32(t0, x, x);
  }
  if (i < n) {
    x = tail_ps(r + i, n - i);
    s1 = vfmaq_f32(s1, tail_ps(q + i, n - i), x);
    t1 = vfmaq_f32(t1, x, x);
  }
  *rr = vaddvq_f32(vaddq_f32(t0, t1));
  return vaddvq_f32(vaddq_f32(s0, s1));
}

K_PRIM float kp_dot_f16(const float *q, const uint16_t *r, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = vfmaq_f32(s0, vld1q_f32(q + i), load_ph(r + i));
    s1 = vfmaq_f32(s1, vld1q_f32(q + i + 4), load_ph(r + i + 4));
    s2 = vfmaq_f32(s2, vld1q_f32(q + i + 8), load_ph(r + i + 8));
    s3 = vfmaq_f32(s3, vld1q_f32(q + i + 12), load_ph(r + i + 12));
  }
  for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(q + i), load_ph(r + i));
  if (i < n) s1 = vfmaq_f32(s1, tail_ps(q + i, n - i), tail_ph(r + i, n - i));
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

K_PRIM float kp_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    d = vsubq_f32(vld1q_f32(q + i), load_ph(r + i));
    s0 = vfmaq_f32(s0, d, d);
    d = vsubq_f32(vld1q_f32(q + i + 4), load_ph(r + i + 4));
    s1 = vfmaq_f32(s1, d, d);
    d = vsubq_f32(vld1q_f32(q + i + 8), load_ph(r + i + 8));
    s2 = vfmaq_f32(s2, d, d);
    d = vsubq_f32(vld1q_f32(q + i + 12), load_ph(r + i + 12));
    s3 = vfmaq_f32(s3, d, d);
  }
  for (; i + 4 <= n; i += 4) {
    d = vsubq_f32(vld1q_f32(q + i), load_ph(r + i));
    s0 = vfmaq_f32(s0, d, d);
  }
  if (i < n) {
    d = vsubq_f32(tail_ps(q + i, n - i), tail_ph(r + i, n - i));
    s1 = vfmaq_f32(s1, d, d);
  }
  return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
}

K_PRIM float kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
                            float *rr) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = load_ph(r + i);
    y = load_ph(r + i + 4);
    s0 = vfmaq_f32(s0, vld1q_f32(q + i), x);
    t0 = vfmaq_f32(t0, x, x);
    s1 = vfmaq_f32(s1, vld1q_f32(q + i + 4), y);
    t1 = vfmaq_f32(t1, y, y);
  }
  for (; i + 4 <= n; i += 4) {
    x = load_ph(r + i);
    s0 = vfmaq_f32(s0, vld1q_f32(q + i), x);
    t0 = vfmaq_f32(t0, x, x);
  }
  if (i < n) {
    x = tail_ph(r + i, n - i);
    s1 = vfmaq_f32(s1, tail_ps(q + i, n - i), x);
    t1 = vfmaq_f32(t1, x, x);
  }
  *rr = vaddvq_f32(vaddq_f32(t0, t1));
  return vaddvq_f32(vaddq_f32(s0, s1));
}

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    int32x4_t s = vdupq_n_s32(0);
    for (; i + 16 <= end; i += 16) s = dot16_i8(s, vld1q_s8(a + i), vld1q_s8(b + i));
    if (i < end) {
      s = dot16_i8(s, tail_i8(a + i, end - i), tail_i8(b + i, end - i));
      i = end;
    }
    total += vaddvq_s32(s);
  }
  return total;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t total = 0, norm = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    int32x4_t s = vdupq_n_s32(0), t = s;
    int8x16_t x, y;
    for (; i + 16 <= end; i += 16) {
      x = vld1q_s8(q + i);
      y = vld1q_s8(r + i);
      s = dot16_i8(s, x, y);
      t = dot16_i8(t, y, y);
    }
    if (i < end) {
      x = tail_i8(q + i, end - i);
      y = tail_i8(r + i, end - i);
      s = dot16_i8(s, x, y);
      t = dot16_i8(t, y, y);
      i = end;
    }
    total += vaddvq_s32(s);
    norm += vaddvq_s32(t);
  }
  *rr = norm;
  return total;
}

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, load_ph(src + i));
  for (; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
  for (; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_LEVEL K_NEON
#define K_LEVEL_NAME "neon"
#include "k_impl.h"
