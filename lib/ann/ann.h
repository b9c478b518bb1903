/*
** lib/ann/ann.h - what the vector search engines share: metrics, element
** types, results, error codes.  Distances are "smaller is closer": cosine
** distance (1 - cos), squared L2, and the negated dot product.
*/
#ifndef H5MEM_ANN_H
#define H5MEM_ANN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/err.h"

typedef enum { ANN_COSINE = 0, ANN_L2 = 1, ANN_DOT = 2 } ann_metric;
typedef enum { ANN_F32 = 4, ANN_F16 = 2 } ann_elem; /* bytes per element */

/* What the graph and list indexes (hnsw.h, ivf.h) return: ANN_OK (0) or
** a negative ANN_E* code, of the one error space (util/err.h). */
#define ANN_OK UTIL_OK
#define ANN_EINVAL UTIL_EINVAL     /* bad argument or state: the message says which */
#define ANN_ENOMEM UTIL_ENOMEM     /* out of memory */
#define ANN_ECORRUPT UTIL_ECORRUPT /* a load: the image is not a valid index */

/* Their rows.  Row i: dim elements of the index's element type (f32, or
** f16 bit patterns), naturally aligned.  The pointer must stay valid until
** the index call that asked for it returns, and is never kept past that: a
** search or an insertion asks for a node's neighbours together and
** prefetches them before it scores the first (rows in a mapped file or in
** memory qualify; a buffer reused by the next call does not).  It must
** answer for every row in the index; a NULL answer scores as infinitely
** far. */
typedef const void *(*ann_vec_fn)(void *ctx, uint32_t i);

/* Their results: a row and its distance to the query. */
typedef struct ann_hit {
  uint32_t id;
  float dist;
} ann_hit;

/* Whether a stored row stands for "no vector": the store keeps NaN in the
** first element of a record without an embedding. */
static inline int ann_row_missing(ann_elem e, const void *row) {
  if (e == ANN_F32) {
    uint32_t b;
    memcpy(&b, row, 4);
    return (b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu);
  }
  uint16_t h;
  memcpy(&h, row, 2);
  return (h & 0x7c00) == 0x7c00 && (h & 0x03ff);
}

/* A result: a row (position) and its distance to the query. */
typedef struct ann_res {
  uint64_t pos;
  float dist;
} ann_res;

/* Rows to search: n positions; block(ctx, pos, &count) returns the rows
** from pos on that lie one after another in memory (dim elements of elem
** each; at least 1, at most count on entry) and sets count to how many, or
** NULL when row pos has no vector (count is then the number of rows to
** skip).  It must be safe to call from several threads at once. */
typedef struct ann_src {
  int dim;
  ann_elem elem;
  ann_metric metric;
  uint64_t n;
  const void *(*block)(void *ctx, uint64_t pos, uint64_t *count);
  void *ctx;
} ann_src;

/* Exact search: the k rows closest to q (dim float32 values) among those
** allow(actx, pos) accepts (NULL: all), sorted by distance then position,
** into out (room for k); their number in *nout (< k when fewer rows are
** allowed).  Rows whose distance is NaN (no vector) are skipped.  threads:
** how many threads may scan (0: one per CPU); results do not depend on it.
** allow must be thread-safe.  Returns ANN_OK, or ANN_ENOMEM. */
int ann_flat_search(const ann_src *src, const float *q, uint64_t k,
                    int (*allow)(void *actx, uint64_t pos), void *actx, int threads,
                    ann_res *out, uint64_t *nout);

/* Exact search over a list: the k rows closest to q among the n positions
** pos[] (rows without a vector skipped), sorted by distance then position,
** into out (room for k); their number in *nout.  For a few allowed rows
** among many: only those rows are read, split across threads when they
** are many (block must then be thread-safe; results do not depend on the
** threads).  Returns ANN_OK, or ANN_ENOMEM. */
int ann_flat_gather(const ann_src *src, const float *q, uint64_t k, const uint64_t *pos,
                    uint64_t n, ann_res *out, uint64_t *nout);

#endif
