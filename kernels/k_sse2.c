/*
** kernels/k_sse2.c - SSE2 level, the x86-64 baseline.
**
** The loops are k_float.h's and k_int8.h's, on 4-lane vectors with a
** separate multiply and add.  SSE2 has no half-precision instructions, so
** f16 <-> f32 is done with integer bit manipulation (after Fabian Giesen's branch-free conversions),
** producing exactly the bits of the scalar k_h2f / k_f2h.  The f16 -> f32
** direction never computes on a denormal, so it stays exact when the host
** runs with denormals-are-zero; f32 -> f16 is integer-only.
*/
#include "config.h"

#include <emmintrin.h>

#include "k_internal.h"

/* Each int32 lane takes 2 * K_I8_BLOCK/16 pmaddwd results of at most
** 2^15: 2^28 per lane, 2^30 over the 4 lanes. */
#define K_I8_BLOCK 65536u

static inline float hsum_ps(__m128 s) {
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

static inline int64_t hsum_epi32(__m128i s) {
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return (int64_t)_mm_cvtsi128_si32(s);
}

/* mask ? a : b, lane by lane */
static inline __m128i sel(__m128i mask, __m128i a, __m128i b) {
  return _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b));
}

/* Four binary16 values, one in the low half of each 32-bit lane, to f32. */
static inline __m128 h2f4(__m128i h) {
  const __m128i exp_mask = _mm_set1_epi32(0x7c00 << 13);
  __m128i o = _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x7fff)), 13);
  __m128i exp = _mm_and_si128(o, exp_mask);
  o = _mm_add_epi32(o, _mm_set1_epi32((127 - 15) << 23));
  __m128i infnan = _mm_cmpeq_epi32(exp, exp_mask);
  o = _mm_add_epi32(o, _mm_and_si128(infnan, _mm_set1_epi32((128 - 16) << 23)));
  /* zero and subnormal: renormalise through a float subtraction of 2^-14;
     both operands and the result are normal floats */
  __m128i sub = _mm_castps_si128(_mm_sub_ps(
      _mm_castsi128_ps(_mm_add_epi32(o, _mm_set1_epi32(1 << 23))),
      _mm_castsi128_ps(_mm_set1_epi32(113 << 23))));
  o = sel(_mm_cmpeq_epi32(exp, _mm_setzero_si128()), sub, o);
  __m128i nan = _mm_cmpgt_epi32(o, _mm_set1_epi32(0x7f800000));
  o = _mm_or_si128(o, _mm_and_si128(nan, _mm_set1_epi32(0x00400000)));
  o = _mm_or_si128(o, _mm_slli_epi32(_mm_and_si128(h, _mm_set1_epi32(0x8000)), 16));
  return _mm_castsi128_ps(o);
}

/* Four f32 to binary16, round to nearest-even; each result in the low half
** of its 32-bit lane, sign-extended so that _mm_packs_epi32 keeps the bits.
** Lanes whose result is a binary16 subnormal (nonzero, below 2^-14) are
** left to the scalar k_f2h: *subnormal gets their bit mask.  Everything
** here is integer arithmetic, so the result does not depend on the MXCSR
** rounding mode the host may have set. */
static inline __m128i f2h4(__m128 f, int *subnormal) {
  __m128i x = _mm_castps_si128(f);
  __m128i sign = _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(0x8000));
  __m128i ax = _mm_and_si128(x, _mm_set1_epi32(0x7fffffff));
  /* normal: rebias, round half to even through the carry of 0xfff + odd */
  __m128i odd = _mm_and_si128(_mm_srli_epi32(ax, 13), _mm_set1_epi32(1));
  __m128i r = _mm_srli_epi32(
      _mm_add_epi32(_mm_add_epi32(ax, _mm_set1_epi32((int)0xc8000fffu)), odd), 13);
  __m128i tiny = _mm_cmplt_epi32(ax, _mm_set1_epi32(0x38800000));
  __m128i zero = _mm_cmpeq_epi32(ax, _mm_setzero_si128());
  r = _mm_andnot_si128(tiny, r); /* zero (and the subnormal lanes) -> 0 */
  *subnormal = _mm_movemask_ps(_mm_castsi128_ps(_mm_andnot_si128(zero, tiny)));
  __m128i nanv = _mm_or_si128(_mm_set1_epi32(0x7e00),
                              _mm_and_si128(_mm_srli_epi32(ax, 13), _mm_set1_epi32(0x3ff)));
  __m128i big = sel(_mm_cmpgt_epi32(ax, _mm_set1_epi32(0x7f800000)), nanv,
                    _mm_set1_epi32(0x7c00));
  r = sel(_mm_cmpgt_epi32(ax, _mm_set1_epi32(0x477fefff)), big, r);
  r = _mm_or_si128(r, sign);
  return _mm_srai_epi32(_mm_slli_epi32(r, 16), 16);
}

static inline __m128 tail_ps(const float *p, size_t n) {
  float t[4] = {0};
  memcpy(t, p, n * sizeof *p);
  return _mm_loadu_ps(t);
}

static inline __m128 load_ph(const uint16_t *p) {
  return h2f4(_mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)p),
                                 _mm_setzero_si128()));
}

static inline __m128 tail_ph(const uint16_t *p, size_t n) {
  uint16_t t[4] = {0};
  memcpy(t, p, n * sizeof *p);
  return load_ph(t);
}

#define KV __m128
#define KW 4
#define KZERO() _mm_setzero_ps()
#define KADD(a, b) _mm_add_ps(a, b)
#define KSUB(a, b) _mm_sub_ps(a, b)
#define KFMA(a, b, c) _mm_add_ps(c, _mm_mul_ps(a, b)) /* no FMA in SSE2 */
#define KHSUM(v) hsum_ps(v)
#define KLOADQ(p) _mm_loadu_ps(p)
#define KTAILQ(p, n) tail_ps(p, n)
#define KLOADH(p) load_ph(p)
#define KTAILH(p, n) tail_ph(p, n)
#include "k_float.h"

/* 16 int8, sign-extended to int16, multiplied pairwise into 4 int32 lanes */
static inline __m128i dot16_i8(__m128i acc, const int8_t *a, const int8_t *b) {
  __m128i x = _mm_loadu_si128((const __m128i *)a);
  __m128i y = _mm_loadu_si128((const __m128i *)b);
  /* unpacking a byte with itself then shifting right 8 sign-extends it */
  __m128i xlo = _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8);
  __m128i xhi = _mm_srai_epi16(_mm_unpackhi_epi8(x, x), 8);
  __m128i ylo = _mm_srai_epi16(_mm_unpacklo_epi8(y, y), 8);
  __m128i yhi = _mm_srai_epi16(_mm_unpackhi_epi8(y, y), 8);
  return _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(xlo, ylo),
                                          _mm_madd_epi16(xhi, yhi)));
}

#define KI_ACC __m128i
#define KI_STEP 16
#define KI_ZERO() _mm_setzero_si128()
#define KI_DOT(acc, a, b) dot16_i8(acc, a, b)
#define KI_HSUM(acc) hsum_epi32(acc)
#include "k_int8.h"

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, load_ph(src + i));
  for (; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int lo, hi;
    __m128i h = _mm_packs_epi32(f2h4(_mm_loadu_ps(src + i), &lo),
                                f2h4(_mm_loadu_ps(src + i + 4), &hi));
    _mm_storeu_si128((__m128i *)(dst + i), h);
    for (int sub = lo | hi << 4, j = 0; sub; sub >>= 1, j++)
      if (sub & 1) dst[i + j] = k_f2h(src[i + j]);
  }
  for (; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_TABLE k_sse2_ops
#define K_LEVEL K_SSE2
#define K_LEVEL_NAME "sse2"
#include "k_impl.h"
