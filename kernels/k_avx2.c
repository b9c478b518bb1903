/*
** kernels/k_avx2.c - AVX2 + FMA + F16C level (compiled with AVX2_CFLAGS).
**
** The loops are k_float.h's and k_int8.h's; this file gives them 8-lane
** vectors: f16 rows are widened with vcvtph2ps, int8 is sign-extended to
** int16 and multiplied with vpmaddwd into int32 lanes.
*/
#include "config.h"

#include <immintrin.h>

#include "k_internal.h"

/* int32 lane bound: each lane takes K_I8_BLOCK/16 vpmaddwd results of at
** most 2*128*128 = 2^15, i.e. 2^27 per lane and 2^30 over the 8 lanes. */
#define K_I8_BLOCK 65536u

static inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

static inline int64_t hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v),
                            _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return (int64_t)_mm_cvtsi128_si32(s);
}

/* The last n (< 8) floats of p, zero-padded to a vector. */
static inline __m256 tail_ps(const float *p, size_t n) {
  float t[8] = {0};
  memcpy(t, p, n * sizeof *p);
  return _mm256_loadu_ps(t);
}

static inline __m256 load_ph(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

static inline __m256 tail_ph(const uint16_t *p, size_t n) {
  uint16_t t[8] = {0};
  memcpy(t, p, n * sizeof *p);
  return load_ph(t);
}

static inline __m256i load_i8(const int8_t *p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}

#define KV __m256
#define KW 8
#define KZERO() _mm256_setzero_ps()
#define KADD(a, b) _mm256_add_ps(a, b)
#define KSUB(a, b) _mm256_sub_ps(a, b)
#define KFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define KHSUM(v) hsum_ps(v)
#define KLOADQ(p) _mm256_loadu_ps(p)
#define KTAILQ(p, n) tail_ps(p, n)
#define KLOADH(p) load_ph(p)
#define KTAILH(p, n) tail_ph(p, n)
#include "k_float.h"

/* 16 int8 sign-extended to int16, multiplied pairwise into 8 int32 lanes */
static inline __m256i dot16_i8(__m256i acc, const int8_t *a, const int8_t *b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(load_i8(a), load_i8(b)));
}

#define KI_ACC __m256i
#define KI_STEP 16
#define KI_ZERO() _mm256_setzero_si256()
#define KI_DOT(acc, a, b) dot16_i8(acc, a, b)
#define KI_HSUM(acc) hsum_epi32(acc)
#include "k_int8.h"

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load_ph(src + i));
  for (; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                     _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_TABLE k_avx2_ops
#define K_LEVEL K_AVX2
#define K_LEVEL_NAME "avx2"
#include "k_impl.h"
