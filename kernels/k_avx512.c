/*
** kernels/k_avx512.c - AVX-512 F+BW level (compiled with AVX512_CFLAGS).
**
** The AVX2 design at 16 lanes.  When K_EMULATE is defined the same source
** is compiled against SIMDe's portable AVX-512 (test builds only), so the
** test suite can check this level on a CPU that lacks AVX-512.
*/
#include "config.h"

#ifdef K_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define K_TABLE k_avx512_emu_ops
#else
#include <immintrin.h>
#define K_TABLE k_avx512_ops
#endif

#include "k_internal.h"

/* Each int32 lane takes K_I8_BLOCK/32 vpmaddwd results of at most 2^15:
** 2^26 per lane, 2^30 over the 16 lanes. */
#define K_I8_BLOCK 65536u

static inline __m512 tail_ps(const float *p, size_t n) {
  float t[16] = {0};
  memcpy(t, p, n * sizeof *p);
  return _mm512_loadu_ps(t);
}

static inline __m512 load_ph(const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m512 tail_ph(const uint16_t *p, size_t n) {
  uint16_t t[16] = {0};
  memcpy(t, p, n * sizeof *p);
  return load_ph(t);
}

static inline __m512i load_i8(const int8_t *p) {
  return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
}

static inline __m512i tail_i8(const int8_t *p, size_t n) {
  int8_t t[32] = {0};
  memcpy(t, p, n);
  return load_i8(t);
}

static inline float hsum_ps(__m512 a, __m512 b) {
  return _mm512_reduce_add_ps(_mm512_add_ps(a, b));
}

K_PRIM float kp_dot_f32(const float *a, const float *b, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
  }
  for (; i + 16 <= n; i += 16)
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
  if (i < n) s1 = _mm512_fmadd_ps(tail_ps(a + i, n - i), tail_ps(b + i, n - i), s1);
  return hsum_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
}

K_PRIM float kp_l2sq_f32(const float *a, const float *b, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    d = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
    d = _mm512_sub_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16));
    s1 = _mm512_fmadd_ps(d, d, s1);
    d = _mm512_sub_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32));
    s2 = _mm512_fmadd_ps(d, d, s2);
    d = _mm512_sub_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48));
    s3 = _mm512_fmadd_ps(d, d, s3);
  }
  for (; i + 16 <= n; i += 16) {
    d = _mm512_sub_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    d = _mm512_sub_ps(tail_ps(a + i, n - i), tail_ps(b + i, n - i));
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return hsum_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
}

K_PRIM float kp_dotnorm_f32(const float *q, const float *r, size_t n,
                            float *rr) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    x = _mm512_loadu_ps(r + i);
    y = _mm512_loadu_ps(r + i + 16);
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), x, s0);
    t0 = _mm512_fmadd_ps(x, x, t0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), y, s1);
    t1 = _mm512_fmadd_ps(y, y, t1);
  }
  for (; i + 16 <= n; i += 16) {
    x = _mm512_loadu_ps(r + i);
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), x, s0);
    t0 = _mm512_fmadd_ps(x, x, t0);
  }
  if (i < n) {
    x = tail_ps(r + i, n - i);
    s1 = _mm512_fmadd_ps(tail_ps(q + i, n - i), x, s1);
    t1 = _mm512_fmadd_ps(x, x, t1);
  }
  *rr = hsum_ps(t0, t1);
  return hsum_ps(s0, s1);
}

K_PRIM float kp_dot_f16(const float *q, const uint16_t *r, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load_ph(r + i), s0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), load_ph(r + i + 16), s1);
    s2 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 32), load_ph(r + i + 32), s2);
    s3 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 48), load_ph(r + i + 48), s3);
  }
  for (; i + 16 <= n; i += 16)
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), load_ph(r + i), s0);
  if (i < n) s1 = _mm512_fmadd_ps(tail_ps(q + i, n - i), tail_ph(r + i, n - i), s1);
  return hsum_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
}

K_PRIM float kp_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0, d;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    d = _mm512_sub_ps(_mm512_loadu_ps(q + i), load_ph(r + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
    d = _mm512_sub_ps(_mm512_loadu_ps(q + i + 16), load_ph(r + i + 16));
    s1 = _mm512_fmadd_ps(d, d, s1);
    d = _mm512_sub_ps(_mm512_loadu_ps(q + i + 32), load_ph(r + i + 32));
    s2 = _mm512_fmadd_ps(d, d, s2);
    d = _mm512_sub_ps(_mm512_loadu_ps(q + i + 48), load_ph(r + i + 48));
    s3 = _mm512_fmadd_ps(d, d, s3);
  }
  for (; i + 16 <= n; i += 16) {
    d = _mm512_sub_ps(_mm512_loadu_ps(q + i), load_ph(r + i));
    s0 = _mm512_fmadd_ps(d, d, s0);
  }
  if (i < n) {
    d = _mm512_sub_ps(tail_ps(q + i, n - i), tail_ph(r + i, n - i));
    s1 = _mm512_fmadd_ps(d, d, s1);
  }
  return hsum_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3));
}

K_PRIM float kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
                            float *rr) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, t0 = s0, t1 = s0, x, y;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    x = load_ph(r + i);
    y = load_ph(r + i + 16);
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), x, s0);
    t0 = _mm512_fmadd_ps(x, x, t0);
    s1 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i + 16), y, s1);
    t1 = _mm512_fmadd_ps(y, y, t1);
  }
  for (; i + 16 <= n; i += 16) {
    x = load_ph(r + i);
    s0 = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), x, s0);
    t0 = _mm512_fmadd_ps(x, x, t0);
  }
  if (i < n) {
    x = tail_ph(r + i, n - i);
    s1 = _mm512_fmadd_ps(tail_ps(q + i, n - i), x, s1);
    t1 = _mm512_fmadd_ps(x, x, t1);
  }
  *rr = hsum_ps(t0, t1);
  return hsum_ps(s0, s1);
}

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m512i s = _mm512_setzero_si512();
    for (; i + 32 <= end; i += 32)
      s = _mm512_add_epi32(s, _mm512_madd_epi16(load_i8(a + i), load_i8(b + i)));
    if (i < end) {
      s = _mm512_add_epi32(s, _mm512_madd_epi16(tail_i8(a + i, end - i), tail_i8(b + i, end - i)));
      i = end;
    }
    total += _mm512_reduce_add_epi32(s);
  }
  return total;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t total = 0, norm = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    __m512i s = _mm512_setzero_si512(), t = s, x, y;
    for (; i + 32 <= end; i += 32) {
      x = load_i8(q + i);
      y = load_i8(r + i);
      s = _mm512_add_epi32(s, _mm512_madd_epi16(x, y));
      t = _mm512_add_epi32(t, _mm512_madd_epi16(y, y));
    }
    if (i < end) {
      x = tail_i8(q + i, end - i);
      y = tail_i8(r + i, end - i);
      s = _mm512_add_epi32(s, _mm512_madd_epi16(x, y));
      t = _mm512_add_epi32(t, _mm512_madd_epi16(y, y));
      i = end;
    }
    total += _mm512_reduce_add_epi32(s);
    norm += _mm512_reduce_add_epi32(t);
  }
  *rr = norm;
  return total;
}

K_PRIM void kp_f16_to_f32(const uint16_t *src, float *dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load_ph(src + i));
  for (; i < n; i++) dst[i] = k_h2f(src[i]);
}

K_PRIM void kp_f32_to_f16(const float *src, uint16_t *dst, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256((__m256i *)(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; i++) dst[i] = k_f2h(src[i]);
}

#define K_LEVEL K_AVX512
#define K_LEVEL_NAME "avx512"
#include "k_impl.h"
