/*
** kernels/k_impl.h - builds one level's k_ops table from its primitives.
**
** A variant file (k_scalar.c, k_sse2.c, ...) defines these static
** primitives, then defines K_TABLE, K_LEVEL and K_LEVEL_NAME and includes
** this file:
**
**   float   kp_dot_f32(const float *a, const float *b, size_t n);
**   float   kp_l2sq_f32(const float *a, const float *b, size_t n);
**   float   kp_dotnorm_f32(const float *q, const float *r, size_t n,
**                          float *rr);              returns q.r, *rr = r.r
**   float   kp_dot_f16(const float *q, const uint16_t *r, size_t n);
**   float   kp_l2sq_f16(const float *q, const uint16_t *r, size_t n);
**   float   kp_dotnorm_f16(const float *q, const uint16_t *r, size_t n,
**                          float *rr);
**   int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n);
**   int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
**                         int64_t *rr);
**   void    kp_f16_to_f32(const uint16_t *src, float *dst, size_t n);
**   void    kp_f32_to_f16(const float *src, uint16_t *dst, size_t n);
**
** and, optionally (defining KP_Q8; else scalar loops here):
**   float   kp_absmax_f32(const float *x, size_t n)
**   void    kp_q8_f32(const float *x, size_t n, double inv, int8_t *out)
** and, optionally (defining KP_DOT_I8_ROWS; else kp_dot_i8 row by row):
**   void    kp_dot_i8_rows(const int8_t *q, const int8_t *const *rows,
**                          size_t nrows, size_t dim, int64_t *sums,
**                          int64_t *norms)   sums[r] = q.row r, and unless
**                                            norms is NULL norms[r] = r.r
** and, optionally (defining KP_DOT_I8_HEAD; else none):
**   size_t  kp_dot_i8_head(q, sq, rows, scales, nrows, dim, out)
**                                            k.h's dot_i8_batch for the first
**                                            rows it takes (their number
**                                            returned), the same floats as
**                                            k_dot_i8_batch, which does the rest
**
** Everything derived from them (cosine, the int8 scale arithmetic, the
** batched loops) is written once, here, so every level computes it the
** same way.
*/
#if !defined(K_TABLE) || !defined(K_LEVEL) || !defined(K_LEVEL_NAME)
#error "define K_TABLE, K_LEVEL and K_LEVEL_NAME before including k_impl.h"
#endif

/* ---- f32 ---------------------------------------------------------------- */

static float k_dot_f32(const float *a, const float *b, size_t n) {
  return kp_dot_f32(a, b, n);
}

static float k_l2sq_f32(const float *a, const float *b, size_t n) {
  return kp_l2sq_f32(a, b, n);
}

static float k_cos_f32(const float *a, const float *b, size_t n) {
  float bb;
  float ab = kp_dotnorm_f32(a, b, n, &bb);
  return k_cos_finish(ab, kp_dot_f32(a, a, n), bb);
}

static void k_dot_f32_batch(const float *q, const float *rows, size_t nrows,
                            size_t dim, float *out) {
  for (size_t r = 0; r < nrows; r++) out[r] = kp_dot_f32(q, rows + r * dim, dim);
}

static void k_l2sq_f32_batch(const float *q, const float *rows, size_t nrows,
                             size_t dim, float *out) {
  for (size_t r = 0; r < nrows; r++)
    out[r] = kp_l2sq_f32(q, rows + r * dim, dim);
}

static void k_cos_f32_batch(const float *q, const float *rows, size_t nrows,
                            size_t dim, float *out) {
  double qq = kp_dot_f32(q, q, dim);
  for (size_t r = 0; r < nrows; r++) {
    float rr;
    float qr = kp_dotnorm_f32(q, rows + r * dim, dim, &rr);
    out[r] = k_cos_finish(qr, qq, rr);
  }
}

/* ---- f32 query x f16 rows ---------------------------------------------- */

static float k_dot_f16(const float *q, const uint16_t *r, size_t n) {
  return kp_dot_f16(q, r, n);
}

static float k_l2sq_f16(const float *q, const uint16_t *r, size_t n) {
  return kp_l2sq_f16(q, r, n);
}

static float k_cos_f16(const float *q, const uint16_t *r, size_t n) {
  float rr;
  float qr = kp_dotnorm_f16(q, r, n, &rr);
  return k_cos_finish(qr, kp_dot_f32(q, q, n), rr);
}

static void k_dot_f16_batch(const float *q, const uint16_t *rows,
                            size_t nrows, size_t dim, float *out) {
  for (size_t r = 0; r < nrows; r++) out[r] = kp_dot_f16(q, rows + r * dim, dim);
}

static void k_l2sq_f16_batch(const float *q, const uint16_t *rows,
                             size_t nrows, size_t dim, float *out) {
  for (size_t r = 0; r < nrows; r++)
    out[r] = kp_l2sq_f16(q, rows + r * dim, dim);
}

static void k_cos_f16_batch(const float *q, const uint16_t *rows,
                            size_t nrows, size_t dim, float *out) {
  double qq = kp_dot_f32(q, q, dim);
  for (size_t r = 0; r < nrows; r++) {
    float rr;
    float qr = kp_dotnorm_f16(q, rows + r * dim, dim, &rr);
    out[r] = k_cos_finish(qr, qq, rr);
  }
}

/* ---- int8 with per-vector scales --------------------------------------- */
/* The integer sums are exact; the scale arithmetic runs in double. */

static float k_i8_l2sq_finish(int64_t ab, int64_t aa, int64_t bb, double sa,
                              double sb) {
  double d = sa * sa * (double)aa + sb * sb * (double)bb -
             2.0 * sa * sb * (double)ab;
  return d > 0.0 ? (float)d : 0.0f;
}

static float k_dot_i8(const int8_t *a, float sa, const int8_t *b, float sb,
                      size_t n) {
  return (float)((double)sa * (double)sb * (double)kp_dot_i8(a, b, n));
}

static float k_l2sq_i8(const int8_t *a, float sa, const int8_t *b, float sb,
                       size_t n) {
  int64_t bb;
  int64_t ab = kp_dotnorm_i8(a, b, n, &bb);
  return k_i8_l2sq_finish(ab, kp_dot_i8(a, a, n), bb, sa, sb);
}

static float k_cos_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t bb;
  int64_t ab = kp_dotnorm_i8(a, b, n, &bb);
  return k_cos_finish((double)ab, (double)kp_dot_i8(a, a, n), (double)bb);
}

#ifndef KP_DOT_I8_ROWS /* a level without its own: one row at a time */
K_PRIM void kp_dot_i8_rows(const int8_t *q, const int8_t *const *rows, size_t nrows,
                           size_t dim, int64_t *sums, int64_t *norms) {
  for (size_t r = 0; r < nrows; r++)
    sums[r] = norms ? kp_dotnorm_i8(q, rows[r], dim, &norms[r]) : kp_dot_i8(q, rows[r], dim);
}
#endif

#ifndef KP_DOT_I8_HEAD /* a level without its own: no row done ahead */
K_PRIM size_t kp_dot_i8_head(const int8_t *q, float sq, const int8_t *const *rows,
                             const float *scales, size_t nrows, size_t dim, float *out) {
  (void)q, (void)sq, (void)rows, (void)scales, (void)nrows, (void)dim, (void)out;
  return 0;
}
#endif

static void k_dot_i8_batch(const int8_t *q, float sq, const int8_t *const *rows,
                           const float *scales, size_t nrows, size_t dim,
                           float *out) {
  int64_t sums[64];
  for (size_t r0 = kp_dot_i8_head(q, sq, rows, scales, nrows, dim, out); r0 < nrows; r0 += 64) {
    size_t m = nrows - r0 < 64 ? nrows - r0 : 64;
    kp_dot_i8_rows(q, rows + r0, m, dim, sums, NULL);
    for (size_t r = 0; r < m; r++)
      out[r0 + r] = (float)((double)sq * (double)scales[r0 + r] * (double)sums[r]);
  }
}

static void k_l2sq_i8_batch(const int8_t *q, float sq, const int8_t *const *rows,
                            const float *scales, size_t nrows, size_t dim,
                            float *out) {
  int64_t qq = kp_dot_i8(q, q, dim), sums[64], norms[64];
  for (size_t r0 = 0; r0 < nrows; r0 += 64) {
    size_t m = nrows - r0 < 64 ? nrows - r0 : 64;
    kp_dot_i8_rows(q, rows + r0, m, dim, sums, norms);
    for (size_t r = 0; r < m; r++)
      out[r0 + r] = k_i8_l2sq_finish(sums[r], qq, norms[r], sq, scales[r0 + r]);
  }
}

static void k_cos_i8_batch(const int8_t *q, const int8_t *const *rows,
                           size_t nrows, size_t dim, float *out) {
  double qq = (double)kp_dot_i8(q, q, dim);
  int64_t sums[64], norms[64];
  for (size_t r0 = 0; r0 < nrows; r0 += 64) {
    size_t m = nrows - r0 < 64 ? nrows - r0 : 64;
    kp_dot_i8_rows(q, rows + r0, m, dim, sums, norms);
    for (size_t r = 0; r < m; r++)
      out[r0 + r] = k_cos_finish((double)sums[r], qq, (double)norms[r]);
  }
}

/* ---- int8 quantisation --------------------------------------------------- */

#ifndef KP_Q8 /* a level without its own: the scalar loops */
K_PRIM float kp_absmax_f32(const float *x, size_t n) {
  float m = 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    float a = fabsf(x[i]);
    bad |= !(a <= FLT_MAX);
    m = a > m ? a : m;
  }
  return bad ? NAN : m;
}

K_PRIM void kp_q8_f32(const float *x, size_t n, double inv, int8_t *out) {
  for (size_t i = 0; i < n; i++) out[i] = k_q8_one(x[i], inv);
}
#endif

const k_ops K_TABLE = {
    .level = K_LEVEL,
    .name = K_LEVEL_NAME,
    .dot_f32 = k_dot_f32,
    .l2sq_f32 = k_l2sq_f32,
    .cos_f32 = k_cos_f32,
    .dot_f16 = k_dot_f16,
    .l2sq_f16 = k_l2sq_f16,
    .cos_f16 = k_cos_f16,
    .dot_i8 = k_dot_i8,
    .l2sq_i8 = k_l2sq_i8,
    .cos_i8 = k_cos_i8,
    .dot_f32_batch = k_dot_f32_batch,
    .l2sq_f32_batch = k_l2sq_f32_batch,
    .cos_f32_batch = k_cos_f32_batch,
    .dot_f16_batch = k_dot_f16_batch,
    .l2sq_f16_batch = k_l2sq_f16_batch,
    .cos_f16_batch = k_cos_f16_batch,
    .dot_i8_batch = k_dot_i8_batch,
    .l2sq_i8_batch = k_l2sq_i8_batch,
    .cos_i8_batch = k_cos_i8_batch,
    .absmax_f32 = kp_absmax_f32,
    .q8_f32 = kp_q8_f32,
    .f16_to_f32 = kp_f16_to_f32,
    .f32_to_f16 = kp_f32_to_f16,
};
