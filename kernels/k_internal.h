/*
** kernels/k_internal.h - shared by the kernel variants, not installed.
**
** Holds the scalar half-precision conversions (the reference every SIMD
** variant must match bit for bit, also used for loop tails) and the
** declarations of the per-level tables that k_dispatch.c chooses from.
*/
#ifndef H5MEM_K_INTERNAL_H
#define H5MEM_K_INTERNAL_H

#include <float.h>
#include <math.h>
#include <string.h>

#include "k.h"

/* The primitives of each level (kp_*, see k_impl.h) are inlined into the
** batched loops: a call per row costs a measurable share of a scan that
** runs at memory bandwidth. */
#define K_PRIM static inline __attribute__((always_inline))

/* binary16 -> binary32, exact.  NaNs keep their payload and are quieted,
** as F16C's vcvtph2ps does. */
static inline float k_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else { /* subnormal: value = man * 2^-24; renormalise */
      uint32_t shift = 0;
      while (!(man & 0x400u)) {
        man <<= 1;
        shift++;
      }
      bits = sign | ((113u - shift) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
    if (man) bits |= 0x00400000u; /* quiet the NaN */
  } else {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* binary32 -> binary16, round to nearest, ties to even.  Values at or
** beyond 65520 in magnitude become infinity; NaN becomes a quiet NaN with
** the top payload bits, as F16C's vcvtps2ph does. */
static inline uint16_t k_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN */
    return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) /* >= 65520 rounds to infinity; also inf */
    return (uint16_t)(sign | 0x7c00u);
  if (ax < 0x38800000u) { /* below 2^-14: a binary16 subnormal or zero */
    if (ax <= 0x33000000u) /* <= 2^-25: rounds to zero (2^-25 is a tie) */
      return (uint16_t)sign;
    uint32_t e = ax >> 23; /* 102..112 */
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* value / 2^-24 = m >> shift */
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q); /* q may carry into the smallest normal */
  }
  uint32_t q = (ax - 0x38000000u) >> 13; /* rebias 127 -> 15, drop 13 bits */
  uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

/* The tables, one per compiled variant (k_dispatch.c picks among them). */
extern const k_ops k_scalar_ops;
#ifdef HAVE_K_SSE2
extern const k_ops k_sse2_ops;
#endif
#ifdef HAVE_K_AVX2
extern const k_ops k_avx2_ops;
#endif
#ifdef HAVE_K_AVX512
extern const k_ops k_avx512_ops;
#endif
#ifdef HAVE_K_NEON
extern const k_ops k_neon_ops;
#endif
#ifdef HAVE_K_AVX512VNNI
extern const k_ops k_avx512vnni_ops;
#endif

/* One value's int8 code (k.h q8_f32): v = x * inv, halves away from zero
** (the truncation of v + copysign(0.5, v)), within [-127, 127]. */
static inline int8_t k_q8_one(float x, double inv) {
  double v = (double)x * inv;
  v += copysign(0.5, v);
  v = v > 127.0 ? 127.0 : v;
  v = v < -127.0 ? -127.0 : v;
  return (int8_t)v;
}

#endif /* H5MEM_K_INTERNAL_H */
