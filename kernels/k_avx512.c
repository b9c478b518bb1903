/*
** kernels/k_avx512.c - AVX-512 F+BW level (compiled with AVX512_CFLAGS),
** and with K_VNNI defined (k_avx512vnni.c, AVX512VNNI_CFLAGS) the
** AVX-512 VNNI level: the same source, but int8 sums by vpdpbusd.
**
** The loops are k_float.h's and k_int8.h's, on 16-lane vectors.  When
** K_EMULATE is defined the same source is compiled against SIMDe's portable
** AVX-512 (test builds only), so the test suite can check both levels on a
** CPU that lacks AVX-512.
*/
#include "config.h"

#ifdef K_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#ifdef K_VNNI
#define K_TABLE k_avx512vnni_emu_ops
#else
#define K_TABLE k_avx512_emu_ops
#endif
#else
#include <immintrin.h>
#ifdef K_VNNI
#define K_TABLE k_avx512vnni_ops
#else
#define K_TABLE k_avx512_ops
#endif
#endif

#include "k_internal.h"

#ifdef K_VNNI
/* Each of the 16 lanes of a.b (s - c) takes K_I8_BLOCK/64 groups of 4
** products of at most 2^14: 2^26 per lane, 2^30 over the 16 lanes. */
#define K_I8_BLOCK 65536u
#else
/* Each int32 lane takes K_I8_BLOCK/32 vpmaddwd results of at most 2^15:
** 2^26 per lane, 2^30 over the 16 lanes. */
#define K_I8_BLOCK 65536u
#endif

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

#define KV __m512
#define KW 16
#define KZERO() _mm512_setzero_ps()
#define KADD(a, b) _mm512_add_ps(a, b)
#define KSUB(a, b) _mm512_sub_ps(a, b)
#define KFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define KHSUM(v) _mm512_reduce_add_ps(v)
#define KLOADQ(p) _mm512_loadu_ps(p)
#define KTAILQ(p, n) tail_ps(p, n)
#define KLOADH(p) load_ph(p)
#define KTAILH(p, n) tail_ph(p, n)
#include "k_float.h"

/* 32 int8 sign-extended to int16, multiplied pairwise into 16 int32 lanes */
static inline __m512i dot32_i8(__m512i acc, const int8_t *a, const int8_t *b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(load_i8(a), load_i8(b)));
}

#ifdef K_VNNI
/* vpdpbusd multiplies unsigned bytes by signed ones.  b is made unsigned by
** flipping its sign bit (b + 128), so s gathers sum a*(b + 128); c gathers
** sum a*128 alongside, and a.b = s - c, exactly (the int32 lanes wrap alike
** and the difference fits, by the block bound).  Two of each, so that no
** vpdpbusd waits for the one before it. */
typedef struct vnni_acc {
  __m512i s0, s1, c0, c1;
} vnni_acc;

static inline vnni_acc vnni_zero(void) {
  __m512i z = _mm512_setzero_si512();
  vnni_acc v = {z, z, z, z};
  return v;
}

/* 128 int8 of a and b, their products summed 4 by 4 into the lanes */
static inline vnni_acc dot128_i8(vnni_acc acc, const int8_t *a, const int8_t *b) {
  const __m512i k80 = _mm512_set1_epi8((char)0x80);
  __m512i a0 = _mm512_loadu_si512((const void *)a);
  __m512i a1 = _mm512_loadu_si512((const void *)(a + 64));
  __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)b), k80);
  __m512i b1 = _mm512_xor_si512(_mm512_loadu_si512((const void *)(b + 64)), k80);
  acc.s0 = _mm512_dpbusd_epi32(acc.s0, b0, a0);
  acc.s1 = _mm512_dpbusd_epi32(acc.s1, b1, a1);
  acc.c0 = _mm512_dpbusd_epi32(acc.c0, k80, a0);
  acc.c1 = _mm512_dpbusd_epi32(acc.c1, k80, a1);
  return acc;
}

static inline int64_t vnni_hsum(vnni_acc acc) {
  __m512i s = _mm512_add_epi32(acc.s0, acc.s1), c = _mm512_add_epi32(acc.c0, acc.c1);
  return _mm512_reduce_add_epi32(_mm512_sub_epi32(s, c));
}

#define KI_ACC vnni_acc
#define KI_STEP 128
#define KI_ZERO() vnni_zero()
#define KI_DOT(acc, a, b) dot128_i8(acc, a, b)
#define KI_HSUM(acc) vnni_hsum(acc)
#else
#define KI_ACC __m512i
#define KI_STEP 32
#define KI_ZERO() _mm512_setzero_si512()
#define KI_DOT(acc, a, b) dot32_i8(acc, a, b)
#define KI_HSUM(acc) _mm512_reduce_add_epi32(acc)
#endif
#include "k_int8.h"

#ifdef K_VNNI
/* One query against many rows.  With b' = b + 128 (b's sign bit flipped:
** an unsigned byte), vpdpbusd gives sum b' a, sum b' b and sum b' (ones),
** and
**   a.b = sum b' a - 128 sum a          (sum a: the query's, taken once)
**   b.b = sum b' b - 128 sum b,  sum b = sum b' - 128 n
** One vpdpbusd per 64 bytes of a row for the dot product (dot128_i8 spends
** two more on the query's sum with every row), three with the norm.  Lane
** bounds: 4 products of at most 255 x 128 per vpdpbusd, K_I8_BLOCK / 64 of
** them per flush: below 2^27. */
#define KP_DOT_I8_ROWS 1
K_PRIM void kp_dot_i8_rows(const int8_t *q, const int8_t *const *rows, size_t nrows,
                           size_t dim, int64_t *sums, int64_t *norms) {
  const __m512i k80 = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(1);
  size_t full = dim / 64 * 64, rest = dim - full;
  int8_t qt[64] = {0}, ot[64] = {0};
  memcpy(qt, q + full, rest);
  memset(ot, 1, rest);
  const __m512i qlast = _mm512_loadu_si512((const void *)qt);
  const __m512i olast = _mm512_loadu_si512((const void *)ot);
  int64_t qsum = 0;
  for (size_t i = 0; i < full;) {
    size_t end = full - i > K_I8_BLOCK ? i + K_I8_BLOCK : full;
    __m512i t = _mm512_setzero_si512();
    for (; i < end; i += 64) t = _mm512_dpbusd_epi32(t, ones, _mm512_loadu_si512((const void *)(q + i)));
    qsum += _mm512_reduce_add_epi32(t);
  }
  for (size_t i = full; i < dim; i++) qsum += q[i];
  for (size_t r = 0; r < nrows; r++) {
    const int8_t *b = rows[r];
    int64_t sab = 0, sbb = 0, sb = 0;
    for (size_t i = 0; i < full;) {
      size_t end = full - i > K_I8_BLOCK ? i + K_I8_BLOCK : full;
      __m512i s0 = _mm512_setzero_si512(), s1 = s0, t = s0, u = s0;
      if (norms) {
        for (; i < end; i += 64) {
          __m512i bv = _mm512_loadu_si512((const void *)(b + i));
          __m512i bx = _mm512_xor_si512(bv, k80);
          s0 = _mm512_dpbusd_epi32(s0, bx, _mm512_loadu_si512((const void *)(q + i)));
          t = _mm512_dpbusd_epi32(t, bx, bv);
          u = _mm512_dpbusd_epi32(u, bx, ones);
        }
        sbb += _mm512_reduce_add_epi32(t);
        sb += _mm512_reduce_add_epi32(u);
      } else {
        for (; i + 128 <= end; i += 128) {
          __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)(b + i)), k80);
          __m512i b1 = _mm512_xor_si512(_mm512_loadu_si512((const void *)(b + i + 64)), k80);
          s0 = _mm512_dpbusd_epi32(s0, b0, _mm512_loadu_si512((const void *)(q + i)));
          s1 = _mm512_dpbusd_epi32(s1, b1, _mm512_loadu_si512((const void *)(q + i + 64)));
        }
        if (i < end) { /* one block of 64 left */
          __m512i b0 = _mm512_xor_si512(_mm512_loadu_si512((const void *)(b + i)), k80);
          s0 = _mm512_dpbusd_epi32(s0, b0, _mm512_loadu_si512((const void *)(q + i)));
          i += 64;
        }
      }
      sab += _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));
    }
    if (rest) { /* zero-padded: the padding's (0 + 128) x 0 adds nothing */
      int8_t bt[64] = {0};
      memcpy(bt, b + full, rest);
      __m512i bv = _mm512_loadu_si512((const void *)bt), bx = _mm512_xor_si512(bv, k80);
      sab += _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), bx, qlast));
      if (norms) {
        sbb += _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), bx, bv));
        sb += _mm512_reduce_add_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), bx, olast));
      }
    }
    sums[r] = sab - 128 * qsum;
    if (norms) norms[r] = sbb - 128 * (sb - 128 * (int64_t)dim);
  }
}

/* n < 64 int8 from p, zero-padded to 64 */
static inline __m512i tail_i8(const int8_t *p, size_t n) {
  int8_t t[64] = {0};
  memcpy(t, p, n);
  return _mm512_loadu_si512((const void *)t);
}

/* 4 vectors of int32 lanes to their 4 sums, in one vector: pairs of rows
** interleaved and added, then pairs of pairs, then the four 128-bit lanes
** (13 instructions for the 4 rows; a reduction of one row takes 9, each
** waiting for the one before) */
static inline __m128i hsum4_epi32(__m512i a, __m512i b, __m512i c, __m512i d) {
  __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
  __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
  __m512i x = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
  __m256i y = _mm256_add_epi32(_mm512_castsi512_si256(x), _mm512_extracti64x4_epi64(x, 1));
  return _mm_add_epi32(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/* k.h dot_i8_batch for rows of at most K_I8_BLOCK codes (one flush): 4 rows
** at a time, each 64 bytes of the query loaded once for the 4, the 4 sums
** reduced together and finished as the scalar form does, in double:
** sq * scale * (sum b' a - 128 sum a), 4 lanes at a time (the same
** operations in the same order, so the same floats).  A last part of a row
** shorter than 64 is read zero-padded (its padding, made 128 by the flip,
** times the query's zero padding).  Returns the rows done; longer rows,
** and the last rows that do not make 4, are k_dot_i8_batch's. */
#define KP_DOT_I8_HEAD 1
K_PRIM size_t kp_dot_i8_head(const int8_t *q, float sq, const int8_t *const *rows,
                             const float *scales, size_t nrows, size_t dim, float *out) {
  size_t r = 0;
  if (dim <= K_I8_BLOCK && nrows >= 4) {
    const __m512i k80 = _mm512_set1_epi8((char)0x80), ones = _mm512_set1_epi8(1);
    size_t full = dim / 64 * 64;
    size_t rest = dim - full;
    const __m512i qlast = tail_i8(q + full, rest);
    __m512i t = _mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, qlast);
    for (size_t i = 0; i < full; i += 64)
      t = _mm512_dpbusd_epi32(t, ones, _mm512_loadu_si512((const void *)(q + i)));
    const __m256d bias = _mm256_set1_pd(128.0 * (double)_mm512_reduce_add_epi32(t));
    const __m256d vsq = _mm256_set1_pd((double)sq);
    for (; r + 4 <= nrows; r += 4) {
      const int8_t *b0 = rows[r], *b1 = rows[r + 1], *b2 = rows[r + 2], *b3 = rows[r + 3];
      __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
      for (size_t i = 0; i < full; i += 64) {
        __m512i qv = _mm512_loadu_si512((const void *)(q + i));
        s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(_mm512_loadu_si512((const void *)(b0 + i)), k80), qv);
        s1 = _mm512_dpbusd_epi32(s1, _mm512_xor_si512(_mm512_loadu_si512((const void *)(b1 + i)), k80), qv);
        s2 = _mm512_dpbusd_epi32(s2, _mm512_xor_si512(_mm512_loadu_si512((const void *)(b2 + i)), k80), qv);
        s3 = _mm512_dpbusd_epi32(s3, _mm512_xor_si512(_mm512_loadu_si512((const void *)(b3 + i)), k80), qv);
      }
      if (rest) {
        s0 = _mm512_dpbusd_epi32(s0, _mm512_xor_si512(tail_i8(b0 + full, rest), k80), qlast);
        s1 = _mm512_dpbusd_epi32(s1, _mm512_xor_si512(tail_i8(b1 + full, rest), k80), qlast);
        s2 = _mm512_dpbusd_epi32(s2, _mm512_xor_si512(tail_i8(b2 + full, rest), k80), qlast);
        s3 = _mm512_dpbusd_epi32(s3, _mm512_xor_si512(tail_i8(b3 + full, rest), k80), qlast);
      }
      __m256d dot = _mm256_sub_pd(_mm256_cvtepi32_pd(hsum4_epi32(s0, s1, s2, s3)), bias);
      __m256d f = _mm256_mul_pd(vsq, _mm256_cvtps_pd(_mm_loadu_ps(scales + r)));
      _mm_storeu_ps(out + r, _mm256_cvtpd_ps(_mm256_mul_pd(f, dot)));
    }
  }
  return r;
}
#endif

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

/* int8 quantisation (k.h absmax_f32, q8_f32): the scalar loops' arithmetic,
** 16 (max) or 8 (codes, in double) lanes at a time.  Not under SIMDe, which
** lacks some of these: the emulated tables keep the scalar loops. */
#ifndef K_EMULATE
#define KP_Q8 1
K_PRIM float kp_absmax_f32(const float *x, size_t n) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  const __m512 fmax = _mm512_set1_ps(FLT_MAX);
  __m512 m = _mm512_setzero_ps();
  __mmask16 bad = 0;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_loadu_si512((const void *)(x + i)), absmask));
    bad |= _mm512_cmp_ps_mask(a, fmax, _CMP_NLE_UQ); /* not a <= FLT_MAX: NaN or inf */
    m = _mm512_max_ps(m, a);
  }
  float r = _mm512_reduce_max_ps(m);
  int b = bad != 0;
  for (; i < n; i++) {
    float a = fabsf(x[i]);
    b |= !(a <= FLT_MAX);
    r = a > r ? a : r;
  }
  return b ? NAN : r;
}

K_PRIM void kp_q8_f32(const float *x, size_t n, double inv, int8_t *out) {
  const __m512d vinv = _mm512_set1_pd(inv), half = _mm512_set1_pd(0.5);
  const __m512d hi = _mm512_set1_pd(127.0), lo = _mm512_set1_pd(-127.0);
  const __m512i sign = _mm512_set1_epi64((long long)0x8000000000000000ull);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i c[2];
    for (int g = 0; g < 2; g++) {
      __m512d v = _mm512_mul_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i + 8 * g)), vinv);
      __m512d h = _mm512_castsi512_pd(_mm512_or_si512(
          _mm512_and_si512(_mm512_castpd_si512(v), sign), _mm512_castpd_si512(half)));
      v = _mm512_max_pd(_mm512_min_pd(_mm512_add_pd(v, h), hi), lo);
      c[g] = _mm512_cvttpd_epi32(v);
    }
    __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(c[0]), c[1], 1);
    _mm_storeu_si128((__m128i *)(out + i), _mm512_cvtepi32_epi8(both));
  }
  for (; i < n; i++) out[i] = k_q8_one(x[i], inv);
}
#endif

#ifdef K_VNNI
#define K_LEVEL K_AVX512VNNI
#define K_LEVEL_NAME "avx512vnni"
#else
#define K_LEVEL K_AVX512
#define K_LEVEL_NAME "avx512"
#endif
#include "k_impl.h"
