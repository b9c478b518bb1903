/*
** kernels/k_avx2.c - AVX2 + FMA + F16C level (compiled with AVX2_CFLAGS).
**
** f32: four 8-lane FMA accumulators, 32 elements per step.  f16 rows are
** widened with vcvtph2ps.  int8 is sign-extended to int16 and multiplied
** with vpmaddwd into int32 lanes, flushed every K_I8_BLOCK elements so no
** lane can overflow.  Tails are copied into a zeroed vector-sized buffer
** and finished with one more vector step.
*/
#include "config.h"

#include <immintrin.h>

#include "k_internal.h"

/* int32 lane bound: each lane takes K_I8_BLOCK/16 vpmaddwd results of at
** most 2*128*128, i.e. 2^27 per lane and 2^30 over the 8 lanes. */
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

static inline __m256i tail_i8(const int8_t *p, size_t n) {
  int8_t t[16] = {0};
  memcpy(t, p, n);
  return load_i8(t);
}

K_PRIM float kp_dot_f32(const float *a, const float *b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8)
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  if (i < n) s1 = _mm256_fmadd_ps(tail_ps(a + i, n - i), tail_ps(b + i, n - i), s1);
  return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

K_PRIM float kp_l2sq_f32(const float *a, const float *b, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
    d = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    s1 = _mm256_fmadd_ps(d, d, s1);
    d = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
    s2 = _mm256_fmadd_ps(d, d, s2);
    d = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
    s3 = _mm256_fmadd_ps(d, d, s3);
  }
  for (; i + 8 <= n; i += 8) {
    d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    d = _mm256_sub_ps(tail_ps(a + i, n - i), tail_ps(b + i, n - i));
    s1 = _mm256_fmadd_ps(d, d, s1);
  }
  return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

K_PRIM float kp_dotnorm_f32(const float *q, const float *r, size_t n,
                            float *rr) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  __m256 t0 = s0, t1 = s0, t2 = s0, t3 = s0, x;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    x = _mm256_loadu_ps(r + i);
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x, s0);
    t0 = _mm256_fmadd_ps(x, x, t0);
    x = _mm256_loadu_ps(r + i + 8);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), x, s1);
    t1 = _mm256_fmadd_ps(x, x, t1);
    x = _mm256_loadu_ps(r + i + 16);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), x, s2);
    t2 = _mm256_fmadd_ps(x, x, t2);
    x = _mm256_loadu_ps(r + i + 24);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), x, s3);
    t3 = _mm256_fmadd_ps(x, x, t3);
  }
  for (; i + 8 <= n; i += 8) {
    x = _mm256_loadu_ps(r + i);
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x, s0);
    t0 = _mm256_fmadd_ps(x, x, t0);
  }
  if (i < n) {
    x = tail_ps(r + i, n - i);
    s1 = _mm256_fmadd_ps(tail_ps(q + i, n - i), x, s1);
    t1 = _mm256_fmadd_ps(x, x, t1);
  }
  *rr = hsum_ps(_mm256_add_ps(_mm256_add_ps(t0, t1), _mm256_add_ps(t2, t3)));
  return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

K_PRIM float kp_dot_f16(const float *q, const uint16_t *r, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_ph(r + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load_ph(r + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 16), load_ph(r + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 24), load_ph(r + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8)
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load_ph(r + i), s0);
  if (i < n) s1 = _mm256_fmadd_ps(tail_ps(q + i, n - i), tail_ph(r + i, n - i), s1);
  return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

K_PRIM float kp_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    d = _mm256_sub_ps(_mm256_loadu_ps(q + i), load_ph(r + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
    d = _mm256_sub_ps(_mm256_loadu_ps(q + i + 8), load_ph(r + i + 8));
    s1 = _mm256_fmadd_ps(d, d, s1);
    d = _mm256_sub_ps(_mm256_loadu_ps(q + i + 16), load_ph(r + i + 16));
    s2 = _mm256_fmadd_ps(d, d, s2);
    d = _mm256_sub_ps(_mm256_loadu_ps(q + i + 24), load_ph(r + i + 24));
    s3 = _mm256_fmadd_ps(d, d, s3);
  }
  for (; i + 8 <= n; i += 8) {
    d = _mm256_sub_ps(_mm256_loadu_ps(q + i), load_ph(r + i));
    s0 = _mm256_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    d = _mm256_sub_ps(tail_ps(q + i, n - i), tail_ph(r + i, n - i));
    s1 = _mm256_fmadd_ps(d, d, s1);
  }
  return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

K_PRIM float kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
                            float *rr) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    x = load_ph(r + i);
    y = load_ph(r + i + 8);
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x, s0);
    t0 = _mm256_fmadd_ps(x, x, t0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), y, s1);
    t1 = _mm256_fmadd_ps(y, y, t1);
  }
  for (; i + 8 <= n; i += 8) {
    x = load_ph(r + i);
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), x, s0);
    t0 = _mm256_fmadd_ps(x, x, t0);
  }
  if (i < n) {
    x = tail_ph(r + i, n - i);
    s1 = _mm256_fmadd_ps(tail_ps(q + i, n - i), x, s1);
    t1 = _mm256_fmadd_ps(x, x, t1);
  }
  *rr = hsum_ps(_mm256_add_ps(t0, t1));
  return hsum_ps(_mm256_add_ps(s0, s1));
}

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;
    for (; i + 32 <= end; i += 32) {
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(load_i8(a + i), load_i8(b + i)));
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(load_i8(a + i + 16), load_i8(b + i + 16)));
    }
    for (; i + 16 <= end; i += 16)
      s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(load_i8(a + i), load_i8(b + i)));
    if (i < end) {
      s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(tail_i8(a + i, end - i), tail_i8(b + i, end - i)));
      i = end;
    }
    total += hsum_epi32(_mm256_add_epi32(s0, s1));
  }
  return total;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t total = 0, norm = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m256i s = _mm256_setzero_si256(), t = s, x, y;
    for (; i + 16 <= end; i += 16) {
      x = load_i8(q + i);
      y = load_i8(r + i);
      s = _mm256_add_epi32(s, _mm256_madd_epi16(x, y));
      t = _mm256_add_epi32(t, _mm256_madd_epi16(y, y));
    }
    if (i < end) {
      x = tail_i8(q + i, end - i);
      y = tail_i8(r + i, end - i);
      s = _mm256_add_epi32(s, _mm256_madd_epi16(x, y));
      t = _mm256_add_epi32(t, _mm256_madd_epi16(y, y));
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
