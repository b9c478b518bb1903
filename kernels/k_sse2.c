/*
** kernels/k_sse2.c - SSE2 level, the x86-64 baseline.
**
** Same shape as k_avx2.c with 4-lane vectors and separate multiply and add.
** SSE2 has no half-precision instructions, so f16 <-> f32 is done with
** integer bit manipulation (after Fabian Giesen's branch-free conversions),
** producing exactly the bits of the scalar k_h2f / k_f2h.  The f16 -> f32
** direction never computes on a denormal, so it stays exact when the host
** runs with denormals-are-zero.
*/
#include "config.h"

#include <emmintrin.h>

#include "k_internal.h"

/* Each int32 lane takes 2 * K_I8_BLOCK/16 vpmaddwd results of at most
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
** of its 32-bit lane, sign-extended so that _mm_packs_epi32 keeps the bits. */
static inline __m128i f2h4(__m128 f) {
  __m128i x = _mm_castps_si128(f);
  __m128i sign = _mm_and_si128(_mm_srli_epi32(x, 16), _mm_set1_epi32(0x8000));
  __m128i ax = _mm_and_si128(x, _mm_set1_epi32(0x7fffffff));
  /* normal: rebias, round half to even through the carry of 0xfff + odd */
  __m128i odd = _mm_and_si128(_mm_srli_epi32(ax, 13), _mm_set1_epi32(1));
  __m128i nrm = _mm_srli_epi32(
      _mm_add_epi32(_mm_add_epi32(ax, _mm_set1_epi32((int)0xc8000fffu)), odd), 13);
  /* subnormal: adding 0.5 leaves the result's ulp at 2^-24, so the FPU
     rounds to the binary16 subnormal grid */
  __m128i sub = _mm_sub_epi32(
      _mm_castps_si128(_mm_add_ps(_mm_castsi128_ps(ax), _mm_set1_ps(0.5f))),
      _mm_set1_epi32(0x3f000000));
  __m128i r = sel(_mm_cmplt_epi32(ax, _mm_set1_epi32(0x38800000)), sub, nrm);
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

/* 16 int8 -> two vectors of 8 sign-extended int16 */
static inline void load_i8(const int8_t *p, __m128i *lo, __m128i *hi) {
  __m128i x = _mm_loadu_si128((const __m128i *)p);
  *lo = _mm_srai_epi16(_mm_unpacklo_epi8(x, x), 8);
  *hi = _mm_srai_epi16(_mm_unpackhi_epi8(x, x), 8);
}

static inline void tail_i8(const int8_t *p, size_t n, __m128i *lo, __m128i *hi) {
  int8_t t[16] = {0};
  memcpy(t, p, n);
  load_i8(t, lo, hi);
}

#define MADD(acc, x, y) acc = _mm_add_ps(acc, _mm_mul_ps(x, y))

K_PRIM float kp_dot_f32(const float *a, const float *b, size_t n) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    MADD(s0, _mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    MADD(s1, _mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
    MADD(s2, _mm_loadu_ps(a + i + 8), _mm_loadu_ps(b + i + 8));
    MADD(s3, _mm_loadu_ps(a + i + 12), _mm_loadu_ps(b + i + 12));
  }
  for (; i + 4 <= n; i += 4) MADD(s0, _mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
  if (i < n) MADD(s1, tail_ps(a + i, n - i), tail_ps(b + i, n - i));
  return hsum_ps(_mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
}

K_PRIM float kp_l2sq_f32(const float *a, const float *b, size_t n) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    d = _mm_sub_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    MADD(s0, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4));
    MADD(s1, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(a + i + 8), _mm_loadu_ps(b + i + 8));
    MADD(s2, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(a + i + 12), _mm_loadu_ps(b + i + 12));
    MADD(s3, d, d);
  }
  for (; i + 4 <= n; i += 4) {
    d = _mm_sub_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i));
    MADD(s0, d, d);
  }
  if (i < n) {
    d = _mm_sub_ps(tail_ps(a + i, n - i), tail_ps(b + i, n - i));
    MADD(s1, d, d);
  }
  return hsum_ps(_mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
}

K_PRIM float kp_dotnorm_f32(const float *q, const float *r, size_t n,
                            float *rr) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = _mm_loadu_ps(r + i);
    y = _mm_loadu_ps(r + i + 4);
    MADD(s0, _mm_loadu_ps(q + i), x);
    MADD(t0, x, x);
    MADD(s1, _mm_loadu_ps(q + i + 4), y);
    MADD(t1, y, y);
  }
  for (; i + 4 <= n; i += 4) {
    x = _mm_loadu_ps(r + i);
    MADD(s0, _mm_loadu_ps(q + i), x);
    MADD(t0, x, x);
  }
  if (i < n) {
    x = tail_ps(r + i, n - i);
    MADD(s1, tail_ps(q + i, n - i), x);
    MADD(t1, x, x);
  }
  *rr = hsum_ps(_mm_add_ps(t0, t1));
  return hsum_ps(_mm_add_ps(s0, s1));
}

K_PRIM float kp_dot_f16(const float *q, const uint16_t *r, size_t n) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    MADD(s0, _mm_loadu_ps(q + i), load_ph(r + i));
    MADD(s1, _mm_loadu_ps(q + i + 4), load_ph(r + i + 4));
    MADD(s2, _mm_loadu_ps(q + i + 8), load_ph(r + i + 8));
    MADD(s3, _mm_loadu_ps(q + i + 12), load_ph(r + i + 12));
  }
  for (; i + 4 <= n; i += 4) MADD(s0, _mm_loadu_ps(q + i), load_ph(r + i));
  if (i < n) MADD(s1, tail_ps(q + i, n - i), tail_ph(r + i, n - i));
  return hsum_ps(_mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
}

K_PRIM float kp_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    d = _mm_sub_ps(_mm_loadu_ps(q + i), load_ph(r + i));
    MADD(s0, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(q + i + 4), load_ph(r + i + 4));
    MADD(s1, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(q + i + 8), load_ph(r + i + 8));
    MADD(s2, d, d);
    d = _mm_sub_ps(_mm_loadu_ps(q + i + 12), load_ph(r + i + 12));
    MADD(s3, d, d);
  }
  for (; i + 4 <= n; i += 4) {
    d = _mm_sub_ps(_mm_loadu_ps(q + i), load_ph(r + i));
    MADD(s0, d, d);
  }
  if (i < n) {
    d = _mm_sub_ps(tail_ps(q + i, n - i), tail_ph(r + i, n - i));
    MADD(s1, d, d);
  }
  return hsum_ps(_mm_add_ps(_mm_add_ps(s0, s1), _mm_add_ps(s2, s3)));
}

K_PRIM float kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
                            float *rr) {
  __m128 s0 = _mm_setzero_ps(), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x = load_ph(r + i);
    y = load_ph(r + i + 4);
    MADD(s0, _mm_loadu_ps(q + i), x);
    MADD(t0, x, x);
    MADD(s1, _mm_loadu_ps(q + i + 4), y);
    MADD(t1, y, y);
  }
  for (; i + 4 <= n; i += 4) {
    x = load_ph(r + i);
    MADD(s0, _mm_loadu_ps(q + i), x);
    MADD(t0, x, x);
  }
  if (i < n) {
    x = tail_ph(r + i, n - i);
    MADD(s1, tail_ps(q + i, n - i), x);
    MADD(t1, x, x);
  }
  *rr = hsum_ps(_mm_add_ps(t0, t1));
  return hsum_ps(_mm_add_ps(s0, s1));
}

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m128i s = _mm_setzero_si128(), alo, ahi, blo, bhi;
    for (; i + 16 <= end; i += 16) {
      load_i8(a + i, &alo, &ahi);
      load_i8(b + i, &blo, &bhi);
      s = _mm_add_epi32(s, _mm_madd_epi16(alo, blo));
      s = _mm_add_epi32(s, _mm_madd_epi16(ahi, bhi));
    }
    if (i < end) {
      tail_i8(a + i, end - i, &alo, &ahi);
      tail_i8(b + i, end - i, &blo, &bhi);
      s = _mm_add_epi32(s, _mm_madd_epi16(alo, blo));
      s = _mm_add_epi32(s, _mm_madd_epi16(ahi, bhi));
      i = end;
    }
    total += hsum_epi32(s);
  }
  return total;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t total = 0, norm = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m128i s = _mm_setzero_si128(), t = s, qlo, qhi, rlo, rhi;
    for (; i + 16 <= end; i += 16) {
      load_i8(q + i, &qlo, &qhi);
      load_i8(r + i, &rlo, &rhi);
      s = _mm_add_epi32(s, _mm_add_epi32(_mm_madd_epi16(qlo, rlo), _mm_madd_epi16(qhi, rhi)));
      t = _mm_add_epi32(t, _mm_add_epi32(_mm_madd_epi16(rlo, rlo), _mm_madd_epi16(rhi, rhi)));
    }
    if (i < end) {
      tail_i8(q + i, end - i, &qlo, &qhi);
      tail_i8(r + i, end - i, &rlo, &rhi);
      s = _mm_add_epi32(s, _mm_add_epi32(_mm_madd_epi16(qlo, rlo), _mm_madd_epi16(qhi, rhi)));
      t = _mm_add_epi32(t, _mm_add_epi32(_mm_madd_epi16(rlo, rlo), _mm_madd_epi16(rhi, rhi)));
      i = end;
    }
    total += hsum_epi32(s);
    norm += hsum_epi32(t);
  }
  *rr = norm;
  return total;
}

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) _mm_storeu_ps(dst + i, load_ph(src + i));
  for (; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i),
                     _mm_packs_epi32(f2h4(_mm_loadu_ps(src + i)),
                                     f2h4(_mm_loadu_ps(src + i + 4))));
  for (; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_TABLE k_sse2_ops
#define K_LEVEL K_SSE2
#define K_LEVEL_NAME "sse2"
#include "k_impl.h"
