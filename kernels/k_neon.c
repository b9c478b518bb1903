/*
** kernels/k_neon.c - AArch64 NEON level (AdvSIMD is always present there).
**
** The loops are k_float.h's and k_int8.h's, on 4-lane vectors: f16 rows
** widened with fcvtl, int8 widened to int16 and multiplied into int32 lanes
** with smlal.  With K_EMULATE defined the same source is
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

/* 16 int8 widened to int16, multiplied and added into 4 int32 lanes */
static inline int32x4_t dot16_i8(int32x4_t acc, const int8_t *pa,
                                 const int8_t *pb) {
  int8x16_t a = vld1q_s8(pa), b = vld1q_s8(pb);
  int16x8_t alo = vmovl_s8(vget_low_s8(a)), ahi = vmovl_s8(vget_high_s8(a));
  int16x8_t blo = vmovl_s8(vget_low_s8(b)), bhi = vmovl_s8(vget_high_s8(b));
  acc = vmlal_s16(acc, vget_low_s16(alo), vget_low_s16(blo));
  acc = vmlal_s16(acc, vget_high_s16(alo), vget_high_s16(blo));
  acc = vmlal_s16(acc, vget_low_s16(ahi), vget_low_s16(bhi));
  return vmlal_s16(acc, vget_high_s16(ahi), vget_high_s16(bhi));
}

#define KV float32x4_t
#define KW 4
#define KZERO() vdupq_n_f32(0.0f)
#define KADD(a, b) vaddq_f32(a, b)
#define KSUB(a, b) vsubq_f32(a, b)
#define KFMA(a, b, c) vfmaq_f32(c, a, b)
#define KHSUM(v) vaddvq_f32(v)
#define KLOADQ(p) vld1q_f32(p)
#define KTAILQ(p, n) tail_ps(p, n)
#define KLOADH(p) load_ph(p)
#define KTAILH(p, n) tail_ph(p, n)
#include "k_float.h"

#define KI_ACC int32x4_t
#define KI_STEP 16
#define KI_ZERO() vdupq_n_s32(0)
#define KI_DOT(acc, a, b) dot16_i8(acc, a, b)
#define KI_HSUM(acc) vaddvq_s32(acc)
#include "k_int8.h"

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
