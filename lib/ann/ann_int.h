/*
** lib/ann/ann_int.h - interface to code in ann.c: what the two indexes,
** hnsw.c and ivf.c, do alike.  Internal to lib/ann: ann.h is the public
** header (lib/store and ext include it); this one brings in kernels/k.h.
**
**   ann_base   the fields both handles keep first: the rows (dim, metric,
**              element type, the caller's callback), the kernels chosen
**              for the metric, and the last error's message
**   checks     of the arguments ivf_new/hnsw_new and the loads take
**   distances  from an f32 query to a row, smaller is closer (inline: the
**              graph walk and the list scans call them per row)
**   images     the header fields both image layouts share (bytes 0-27:
**              magic, version, header size, dim, metric, elem) and the
**              checks of a loaded image against them and its length
**
** Every message is the one each index wrote before it shared this code,
** with the index's name ("HNSW", "IVF") where it names it.
*/
#ifndef H5MEM_ANN_INT_H
#define H5MEM_ANN_INT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ann.h"
#include "k.h"

/* The rows an index is over and how it scores them.  Filled by
** ann_base_init; the index owns it (vec/ctx are the caller's). */
typedef struct ann_base {
  int dim;
  ann_metric metric;
  ann_elem elem;
  ann_vec_fn vec;
  void *ctx;
  const k_ops *k;
  /* the metric's kernels: cosine, squared L2 or dot product (negated by
  ** ann_dist) of an f32 query against an f32 or f16 row */
  float (*df32)(const float *, const float *, size_t);
  float (*df16)(const float *, const uint16_t *, size_t);
  char err[256]; /* the last error's message, "" if none */
} ann_base;

/* Fill b with the arguments as given (ann_check_args says whether they are
** valid) and the kernels of the metric: a metric neither ANN_L2 nor
** ANN_DOT gets cosine's.  The message is left "". */
void ann_base_init(ann_base *b, int dim, ann_metric metric, ann_elem elem, ann_vec_fn vec,
                   void *ctx);

/* Write the message into b->err; returns rc. */
int ann_fail(ann_base *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ANN_OK, or ANN_EINVAL with a message naming the first of dim, metric,
** element type and row callback that is not valid. */
int ann_check_args(ann_base *b);

/* distance from the f32 query q to row r (the callback's; NULL: none, then
** +inf), smaller is closer */
static inline float ann_dist(const ann_base *b, const float *q, const void *r) {
  if (!r) return INFINITY;
  float d = b->elem == ANN_F32 ? b->df32(q, r, (size_t)b->dim) : b->df16(q, r, (size_t)b->dim);
  return b->metric == ANN_DOT ? -d : d;
}

/* distance from the f32 query q to row id */
static inline float ann_dist_row(const ann_base *b, const float *q, uint32_t id) {
  return ann_dist(b, q, b->vec(b->ctx, id));
}

/* Row id as dim f32 values into x: 1, or 0 when the callback has no row
** (x is then zeros). */
int ann_row_f32(const ann_base *b, uint32_t id, float *x);

/* An image format: its magic (8 bytes), version and header size, and the
** name its messages give it. */
typedef struct ann_img {
  const char *magic;
  uint32_t version, hdr;
  const char *name;
} ann_img;

/* The first f->hdr bytes of an image at p: zeros, then the magic, version,
** header size, dim, metric and elem of b (little-endian uint32 at 8..27);
** the index writes its own fields after. */
void ann_hdr_put(uint8_t *p, const ann_img *f, const ann_base *b);

/* Whether the len bytes at p begin with f's header for b's dim, metric and
** elem: ANN_OK, or ANN_ECORRUPT with a message ("not an HNSW image", the
** version, or the dim/metric/elem the image is for). */
int ann_hdr_check(ann_base *b, const ann_img *f, const uint8_t *p, size_t len);

/* ANN_OK when an image of f is len bytes as its header says (want), else
** ANN_ECORRUPT saying both. */
int ann_size_check(ann_base *b, const ann_img *f, size_t len, uint64_t want);

#endif /* H5MEM_ANN_INT_H */
