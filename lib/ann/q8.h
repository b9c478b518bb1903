/*
** lib/ann/q8.h - int8 copies of vectors (per-row scale), the cheap first
** pass of a search whose candidates are then scored exactly.
**
** Encoding (symmetric, one scale per vector):
**   scale = max|x[i]| / 127 (rounded once to float)
**   q[i]  = x[i] * 127 / max|x[i]|, rounded to nearest (halves away from
**           zero), in [-127, 127]; the largest element becomes +-127
** so element i stands for scale * q[i], as in kernels/k.h.  A zero vector
** encodes as all zeros with scale 0.  The codes are computed in double from
** max|x| itself, not from the rounded scale, so they are right for any
** finite input (huge, or subnormal); only the scale can lose precision:
** below about 1.5e-36 (127 x FLT_MIN) it is subnormal, and for vectors
** whose max|x| is below about 8.9e-44 (127 x 2^-150) it rounds to 0.  NaN or infinity
** anywhere: the vector encodes as zeros, scale 0, and the encoder says so.
** -128 is never produced (the kernels accept it, but symmetric codes keep
** q and -q at one distance).
**
** Scoring, per metric (ann_q8_dist; "smaller is closer" like the exact
** distances of ann.h, in the same units, so an int8 distance can stand in
** for an exact one in the same heap):
**   ANN_COSINE  1 - cos of the codes (k cos_i8).  Scales cancel, so they
**               are ignored: a row's scale need not even be right.
**   ANN_L2      |sa qa - sb qb|^2 (k l2sq_i8): both scales matter.
**   ANN_DOT     -(sa sb qa.qb) (k dot_i8): the row scales order the rows;
**               the query's only scales every distance alike.
** Queries are encoded like rows (ann_q8_query), so query x row is scored
** with the same kernel as row x row.
**
** Error bounds (normal scales; the integer sums are exact, the scale
** arithmetic is double).  With e = 0.50001 (a half, plus the slack of the
** scale's own rounding to float, 127 x 2^-24):
**   element   |x[i] - scale q[i]| <= e scale       (about max|x| / 254)
**   dot       |a.b - dot_i8| <= e (sb |a|_1 + sa |b|_1) + dim e^2 sa sb
**   l2sq      ||a-b|^2 - l2sq_i8| <= 2e (sa + sb) |a-b|_1
**                                     + dim e^2 (sa + sb)^2
**   cosine    |cosdist - cos_i8| <= ta + tb, with tx = asin(e sqrt(dim)
**             sx / |x|_2), the largest angle between x and its codes
**             (about sqrt(dim) max|x| / (254 |x|_2) radians; the asin's
**             argument is below 1 whenever dim < 64000, as |x|_2 >= 127 sx)
** plus the float rounding of the kernels' results (relative 2^-24).  These
** are worst cases; the errors of real data are several times smaller and
** mostly cancel.
**
** What a search relies on (hnsw.h): an int8 distance is off by less than
** the gap between a query's k-th nearest row and the 2k-th of the
** candidate pool, so the true k nearest are among the pool's best 2k by
** int8 distance; those are then scored with the exact kernels, and
** everything returned is exact.
** The bounds above are not used at run time; rank swaps near the k-th row
** are what the pool's margin absorbs (measured, see hnsw.h).  Rows whose
** nearest neighbours lie closer together than about scale x sqrt(dim)
** break the assumption: rows (x, 1, ..., 7) keep their small elements as
** codes 0 or 1, the code of 7 flips at x = 1778, and every int8 distance
** across that line is off by 196 while the neighbours are 1 to 4 apart
** (docs/SQL.md: such stores want quantize=none).  Scoring, beyond the 2k,
** every pool row whose int8 distance these bounds let reach the k-th
** exact one fixed it, and cost 27-44% of the int8 walk's QPS at ef 64-256
** on bench_ann's 100K x 384 rows (the bounds are sqrt(dim) wider than
** real errors there): not kept (CHANGELOG).
*/
#ifndef H5MEM_ANN_Q8_H
#define H5MEM_ANN_Q8_H

#include <stddef.h>
#include <stdint.h>

#include "ann.h"

/* Row i's int8 copy: dim codes, and its scale in *scale.  The pointer must
** stay valid until the index call that asked for it returns, as ann_vec_fn's
** (ann.h), and is never kept.  NULL: row i has no int8 copy (it is then
** scored exactly).  Must be safe to call from several threads at once. */
typedef const int8_t *(*ann_q8_fn)(void *ctx, uint32_t i, float *scale);

/* Encode one row of dim elements of type elem (f32, or f16 bit patterns)
** into out (dim codes) and *scale.  Returns 0, or -1 when the row holds a
** NaN or an infinity (out and *scale are then zeros) or the arguments are
** bad (dim <= 0, unknown elem: nothing written). */
int ann_q8_encode(const void *row, ann_elem elem, int dim, int8_t *out,
                  float *scale);

/* Encode n rows that lie one after another (dim elements each) into out
** (n x dim codes) and scales (n).  Returns 0, or -1 when some row was not
** finite (those rows are zeros, the others encoded) or the arguments are
** bad (nothing written). */
int ann_q8_encode_n(const void *rows, ann_elem elem, int dim, size_t n,
                    int8_t *out, float *scales);

/* Encode a query (dim f32 values), the same way as a row.  Returns as
** ann_q8_encode. */
int ann_q8_query(const float *q, int dim, int8_t *out, float *scale);

/* Codes back to dim floats: scale * q[i].  For tests and debugging. */
void ann_q8_decode(const int8_t *q, float scale, int dim, float *out);

struct k_ops; /* kernels/k.h */

/* The int8 distance between a (scale sa) and b (scale sb) under metric m,
** with the kernels k (k_get()); smaller is closer, as the exact distance. */
float ann_q8_dist(const struct k_ops *k, ann_metric m, const int8_t *a, float sa,
                  const int8_t *b, float sb, size_t dim);

/* ann_q8_dist of q (scale sq) and each of n rows (rows[r]: dim codes,
** scales[r]: its scale) into out[0..n): the same values, with the query's
** own sums computed once. */
void ann_q8_dist_batch(const struct k_ops *k, ann_metric m, const int8_t *q, float sq,
                       const int8_t *const *rows, const float *scales, size_t n,
                       size_t dim, float *out);

#endif /* H5MEM_ANN_Q8_H */
