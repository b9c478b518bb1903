/*
** lib/ann/q8.c - int8 encoding of f32 and f16 vectors (see q8.h).
**
** Two passes over the row, a block of Q8_BLOCK elements at a time: the
** largest magnitude (and whether every element is finite), then the codes.
** f16 blocks are widened to f32 on the stack with the kernels' conversion,
** which is exact (every f16 value is a float).  The int8 distances are the
** kernels' i8 ones, signed and chosen per metric.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "q8.h"

#include "k.h"

#define Q8_BLOCK 256

/* elements [off, off + len) of the row as floats: in place for f32, else
** widened into buf (Q8_BLOCK floats) */
static const float *block(const k_ops *k, const void *row, ann_elem elem,
                          size_t off, size_t len, float *buf) {
  if (elem == ANN_F32) return (const float *)row + off;
  k->f16_to_f32((const uint16_t *)row + off, buf, len);
  return buf;
}

static int encode(const k_ops *k, const void *row, ann_elem elem, size_t dim,
                  int8_t *out, float *scale) {
  float buf[Q8_BLOCK];
  double m = 0;
  for (size_t off = 0; off < dim; off += Q8_BLOCK) {
    size_t len = dim - off < Q8_BLOCK ? dim - off : Q8_BLOCK;
    const float *x = block(k, row, elem, off, len, buf);
    float bm = k->absmax_f32(x, len); /* (NaN: a NaN or an infinity) */
    if (isnan(bm)) {
      memset(out, 0, dim);
      *scale = 0;
      return -1;
    }
    if ((double)bm > m) m = bm;
  }
  if (m == 0) {
    memset(out, 0, dim);
    *scale = 0;
    return 0;
  }
  /* the codes from max|x| itself, in double: right even where the float
  ** scale is subnormal */
  double inv = 127.0 / m;
  for (size_t off = 0; off < dim; off += Q8_BLOCK) {
    size_t len = dim - off < Q8_BLOCK ? dim - off : Q8_BLOCK;
    const float *x = block(k, row, elem, off, len, buf);
    /* x * 127 / max|x|, halves away from zero (the truncation of v +
    ** copysign(0.5, v)), within [-127, 127]: k.h q8_f32 */
    k->q8_f32(x, len, inv, out + off);
  }
  *scale = (float)(m / 127.0);
  return 0;
}

static int bad_args(ann_elem elem, int dim) {
  return dim <= 0 || (elem != ANN_F32 && elem != ANN_F16);
}

int ann_q8_encode(const void *row, ann_elem elem, int dim, int8_t *out,
                  float *scale) {
  if (bad_args(elem, dim)) return -1;
  return encode(k_get(), row, elem, (size_t)dim, out, scale);
}

int ann_q8_encode_n(const void *rows, ann_elem elem, int dim, size_t n,
                    int8_t *out, float *scales) {
  if (bad_args(elem, dim)) return -1;
  const k_ops *k = k_get();
  size_t rowb = (size_t)dim * (size_t)elem;
  int rc = 0;
  for (size_t r = 0; r < n; r++)
    if (encode(k, (const uint8_t *)rows + r * rowb, elem, (size_t)dim,
               out + r * (size_t)dim, scales + r))
      rc = -1;
  return rc;
}

int ann_q8_query(const float *q, int dim, int8_t *out, float *scale) {
  return ann_q8_encode(q, ANN_F32, dim, out, scale);
}

void ann_q8_decode(const int8_t *q, float scale, int dim, float *out) {
  for (int i = 0; i < dim; i++) out[i] = scale * (float)q[i];
}

float ann_q8_dist(const k_ops *k, ann_metric m, const int8_t *a, float sa,
                  const int8_t *b, float sb, size_t dim) {
  switch (m) {
  case ANN_L2:
    return k->l2sq_i8(a, sa, b, sb, dim);
  case ANN_DOT:
    return -k->dot_i8(a, sa, b, sb, dim);
  default:
    return k->cos_i8(a, b, dim);
  }
}

void ann_q8_dist_batch(const k_ops *k, ann_metric m, const int8_t *q, float sq,
                       const int8_t *const *rows, const float *scales, size_t n,
                       size_t dim, float *out) {
  switch (m) {
  case ANN_L2:
    k->l2sq_i8_batch(q, sq, rows, scales, n, dim, out);
    break;
  case ANN_DOT: /* (-sq: the products negated exactly, as -out would be) */
    k->dot_i8_batch(q, -sq, rows, scales, n, dim, out);
    break;
  default:
    k->cos_i8_batch(q, rows, n, dim, out);
    break;
  }
}
