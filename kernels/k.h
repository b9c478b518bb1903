/*
** kernels/k.h - distance and conversion kernels, one table per SIMD level.
**
** Every kernel is a pure function: no allocation, no state, no error path.
** Element types:
**   f32  IEEE binary32
**   f16  IEEE binary16, stored as uint16_t bit patterns (little-endian in
**        memory on every platform we build for)
**   i8   int8 with a per-vector float scale: element i stands for
**        scale * q[i].  Cosine ignores the scales (they cancel).
**
** Pointers need the natural alignment of their element type only (4 bytes
** for f32, 2 for f16, none for i8); no SIMD alignment is assumed.  n may be
** 0.  Inputs are expected to be finite; the SQL layer rejects NaN and Inf
** before they reach a kernel.
**
** Distances:
**   dot    sum a[i]*b[i]
**   l2sq   sum (a[i]-b[i])^2            (squared Euclidean distance)
**   cos    1 - dot/(|a||b|), clamped to [0, 2]; 1 when either norm is 0
**          or the float sums overflow (magnitudes beyond about 1e19)
**
** Mixed f16 kernels take an f32 query and f16 rows ("_f16" below means
** "f32 query x f16 row").  Batched forms score one query against nrows rows
** of dim elements each, writing out[0..nrows-1]: f32 and f16 rows stored one
** after another, int8 rows through an array of row pointers.
**
** Accuracy: the scalar level accumulates in double and is the reference.
** SIMD levels accumulate in float lanes; test/unit/test_kernels.c holds them to
** |simd - scalar| <= 1e-5 * sum|a[i]*b[i]| + 1e-6 (dot, l2sq: the terms
** being the products or squared differences) and 1e-5 absolute for cos.
** int8 sums are exact integers at every level, so i8 results are identical
** across levels.  f16 <-> f32 conversion rounds to nearest-even and is
** bit-identical across levels, NaN included (NaNs are quieted); the x86
** levels do not depend on the MXCSR mode, NEON follows FPCR (Linux's
** default: nearest-even, no flush-to-zero).
*/
#ifndef H5MEM_K_H
#define H5MEM_K_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef enum k_level {
  K_SCALAR = 0,
  K_SSE2,
  K_AVX2,
  K_AVX512,
  K_NEON,
  K_AVX512VNNI, /* (after K_NEON: the numbers of the others stay) */
  K_NLEVEL
} k_level;

/* One SIMD level's kernels.  Tables are static constants: never freed. */
typedef struct k_ops {
  k_level level;
  const char *name; /* "scalar", "sse2", "avx2", "avx512", "neon",
                       "avx512vnni" */

  /* one pair */
  float (*dot_f32)(const float *a, const float *b, size_t n);
  float (*l2sq_f32)(const float *a, const float *b, size_t n);
  float (*cos_f32)(const float *a, const float *b, size_t n);
  float (*dot_f16)(const float *q, const uint16_t *r, size_t n);
  float (*l2sq_f16)(const float *q, const uint16_t *r, size_t n);
  float (*cos_f16)(const float *q, const uint16_t *r, size_t n);
  float (*dot_i8)(const int8_t *a, float sa, const int8_t *b, float sb,
                  size_t n);
  float (*l2sq_i8)(const int8_t *a, float sa, const int8_t *b, float sb,
                   size_t n);
  float (*cos_i8)(const int8_t *a, const int8_t *b, size_t n);

  /* one query against nrows consecutive rows of dim elements */
  void (*dot_f32_batch)(const float *q, const float *rows, size_t nrows,
                        size_t dim, float *out);
  void (*l2sq_f32_batch)(const float *q, const float *rows, size_t nrows,
                         size_t dim, float *out);
  void (*cos_f32_batch)(const float *q, const float *rows, size_t nrows,
                        size_t dim, float *out);
  void (*dot_f16_batch)(const float *q, const uint16_t *rows, size_t nrows,
                        size_t dim, float *out);
  void (*l2sq_f16_batch)(const float *q, const uint16_t *rows, size_t nrows,
                         size_t dim, float *out);
  void (*cos_f16_batch)(const float *q, const uint16_t *rows, size_t nrows,
                        size_t dim, float *out);
  /* int8 rows are gathered, not consecutive: rows[r] points at row r's
  ** dim codes and scales[r] is its scale (a graph search scores the rows
  ** where they lie, without copying them together first) */
  void (*dot_i8_batch)(const int8_t *q, float sq, const int8_t *const *rows,
                       const float *scales, size_t nrows, size_t dim,
                       float *out);
  void (*l2sq_i8_batch)(const int8_t *q, float sq, const int8_t *const *rows,
                        const float *scales, size_t nrows, size_t dim,
                        float *out);
  void (*cos_i8_batch)(const int8_t *q, const int8_t *const *rows,
                       size_t nrows, size_t dim, float *out);

  /* int8 quantisation (lib/ann/q8.h): absmax_f32 is max |x[i]|, exact, or
  ** NaN when some x[i] is NaN or infinite; q8_f32 writes out[i] =
  ** trunc(v + copysign(0.5, v)) with v = (double)x[i] * inv clamped to
  ** [-127, 127] (double arithmetic: the same codes at every level) */
  float (*absmax_f32)(const float *x, size_t n);
  void (*q8_f32)(const float *x, size_t n, double inv, int8_t *out);

  /* bulk conversion, round to nearest-even; src and dst must not overlap */
  void (*f16_to_f32)(const uint16_t *src, float *dst, size_t n);
  void (*f32_to_f16)(const float *src, uint16_t *dst, size_t n);
} k_ops;

/* Cosine distance from a dot product and the two squared norms:
** 1 - dot/sqrt(na*nb) clamped to [0, 2]; 1 when a norm is zero or the
** inputs are not finite, so that no NaN ever leaves a kernel. */
static inline float k_cos_finish(double dot, double na, double nb) {
  if (!(na > 0.0) || !(nb > 0.0)) return 1.0f;
  double c = 1.0 - dot / sqrt(na * nb);
  if (isnan(c)) return 1.0f;
  if (c < 0.0) c = 0.0;
  if (c > 2.0) c = 2.0;
  return (float)c;
}

/* The kernels in use: the level forced by H5MEM_SIMD if it is set and
** usable, else the best level this CPU runs.  Chosen once, thread-safe,
** never NULL. */
const k_ops *k_get(void);

/* The table of one level, or NULL when it was not compiled in or this CPU
** cannot run it.  For tests and benchmarks. */
const k_ops *k_ops_for(k_level level);

/* Whether this build holds the level's code (whatever the CPU). */
int k_compiled_in(k_level level);

/* Level name <-> enum; k_level_from_name returns K_NLEVEL if unknown. */
const char *k_level_name(k_level level);
k_level k_level_from_name(const char *name);

/* Check H5MEM_SIMD once.  Returns 0 when it is unset or names a level this
** CPU can run; otherwise writes a message naming the problem and the usable
** levels into err and returns -1 (k_get() then uses the best level). */
int k_check_env(char *err, size_t errlen);

/* Space-separated names of the levels usable here, best last. */
void k_levels_usable(char *buf, size_t buflen);

#endif /* H5MEM_K_H */
