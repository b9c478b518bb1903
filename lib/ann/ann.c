/*
** lib/ann/ann.c - what the HNSW and IVF indexes share (ann_int.h): their
** handles' rows and kernels, argument checks, row reads and image headers.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ann_int.h"
#include "util/le.h"

void ann_base_init(ann_base *b, int dim, ann_metric metric, ann_elem elem, ann_vec_fn vec,
                   void *ctx) {
  b->dim = dim;
  b->metric = metric;
  b->elem = elem;
  b->vec = vec;
  b->ctx = ctx;
  b->k = k_get();
  switch (metric) {
  case ANN_L2:
    b->df32 = b->k->l2sq_f32;
    b->df16 = b->k->l2sq_f16;
    break;
  case ANN_DOT:
    b->df32 = b->k->dot_f32;
    b->df16 = b->k->dot_f16;
    break;
  default:
    b->df32 = b->k->cos_f32;
    b->df16 = b->k->cos_f16;
    break;
  }
  b->err[0] = 0;
}

int ann_fail(ann_base *b, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->err, sizeof b->err, fmt, ap);
  va_end(ap);
  return rc;
}

int ann_check_args(ann_base *b) {
  if (b->dim <= 0) return ann_fail(b, ANN_EINVAL, "dim must be positive, not %d", b->dim);
  if (b->metric != ANN_COSINE && b->metric != ANN_L2 && b->metric != ANN_DOT)
    return ann_fail(b, ANN_EINVAL, "unknown metric %d", (int)b->metric);
  if (b->elem != ANN_F32 && b->elem != ANN_F16)
    return ann_fail(b, ANN_EINVAL, "unknown element type %d", (int)b->elem);
  if (!b->vec) return ann_fail(b, ANN_EINVAL, "no row callback");
  return ANN_OK;
}

int ann_row_f32(const ann_base *b, uint32_t id, float *x) {
  const void *r = b->vec(b->ctx, id);
  if (!r) {
    memset(x, 0, (size_t)b->dim * sizeof *x);
    return 0;
  }
  if (b->elem == ANN_F32)
    memcpy(x, r, (size_t)b->dim * sizeof *x);
  else
    b->k->f16_to_f32(r, x, (size_t)b->dim);
  return 1;
}

void ann_hdr_put(uint8_t *p, const ann_img *f, const ann_base *b) {
  memset(p, 0, f->hdr);
  memcpy(p, f->magic, 8);
  util_put_le32(p + 8, f->version);
  util_put_le32(p + 12, f->hdr);
  util_put_le32(p + 16, (uint32_t)b->dim);
  util_put_le32(p + 20, (uint32_t)b->metric);
  util_put_le32(p + 24, (uint32_t)b->elem);
}

int ann_hdr_check(ann_base *b, const ann_img *f, const uint8_t *p, size_t len) {
  if (!p || len < f->hdr || memcmp(p, f->magic, 8) != 0)
    return ann_fail(b, ANN_ECORRUPT, "not an %s image", f->name);
  if (util_get_le32(p + 8) != f->version || util_get_le32(p + 12) != f->hdr)
    return ann_fail(b, ANN_ECORRUPT, "%s image version %u not supported", f->name,
                    util_get_le32(p + 8));
  if (util_get_le32(p + 16) != (uint32_t)b->dim || util_get_le32(p + 20) != (uint32_t)b->metric ||
      util_get_le32(p + 24) != (uint32_t)b->elem)
    return ann_fail(b, ANN_ECORRUPT, "image is for dim %u metric %u elem %u, not %d %d %d",
                    util_get_le32(p + 16), util_get_le32(p + 20), util_get_le32(p + 24), b->dim,
                    (int)b->metric, (int)b->elem);
  return ANN_OK;
}

int ann_size_check(ann_base *b, const ann_img *f, size_t len, uint64_t want) {
  if ((uint64_t)len == want) return ANN_OK;
  return ann_fail(b, ANN_ECORRUPT, "%s image size %zu, expected %llu", f->name, len,
                  (unsigned long long)want);
}
