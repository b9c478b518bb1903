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

/* ---- The contract of the two indexes -----------------------------------
**
** hnsw.h and ivf.h (X below: hnsw or ivf) keep to this; each header adds
** what is its own.
**
** Rows: the index never copies them; it asks for row i through an
** ann_vec_fn when it needs it.  Ids are row numbers: dense, added in any
** order, each at most once.  Distances are "smaller is closer", from the
** kernels of kernels/k.h (as flat search's):
**   ANN_COSINE  1 - cos(a, b) (the caller's rows are not normalised)
**   ANN_L2      squared Euclidean distance
**   ANN_DOT     negative dot product
** and every distance a search returns is exact, from those kernels.
**
**   X_new     a new empty index over rows of dim elements of type elem;
**             its parameters may be NULL (all defaults).  vec/ctx are
**             borrowed and must outlive the index.  On an error other than
**             ANN_ENOMEM, *out is still set to a handle holding the message
**             (X_errmsg), to be freed with X_free; on ANN_ENOMEM *out is NULL.
**   X_add     inserts row i: ANN_EINVAL when i is already in the index
**             (deleted rows included) or i == UINT32_MAX.
**   X_build   inserts every row below n that is not in the index yet (for
**             an index built from a dense prefix: rows [X_count, n)).
**   X_delete  marks row i deleted: X_search never returns it.  ANN_EINVAL
**             when i is not in the index; deleting twice is fine.
**   X_search  the k nearest live rows to q (dim f32 values).  filter is
**             NULL or returns nonzero for the rows that may be returned.
**             out has room for k hits; they come sorted by distance, then
**             id.  Returns the number of hits; k <= 0 returns 0.
**   X_count   the number of rows in the index, deleted ones included.
**   X_save    the index as a flat little-endian image (layout in X.c),
**             malloc'd into *img (the caller frees it), its size in *len.
**   X_load    an index over an image made by X_save.  dim, metric and elem
**             must be the ones it was built with.  Every count, offset, id
**             and link is checked against len: a damaged image gives
**             ANN_ECORRUPT, never a crash.  When img is 4-byte aligned (and
**             the host little-endian) parts of it are read in place (the
**             header says which): img must then stay valid and unchanged
**             until X_free, or until the first write that copies them into
**             memory the index owns.  *out on error: as X_new.
**   X_free    frees the index (NULL is fine).  The image given to X_load
**             and the rows are the caller's.
**   X_errmsg  the last error's message ("" if none); "out of memory" for
**             NULL.
**
** Threads: one writer at a time (X_add, X_build, X_delete, X_free and the
** header's other writer calls); X_build may itself use several threads.
** Any number of X_search calls may run at once on an index nobody is
** writing; the vec callback (and a search's filter) must then be safe to
** call from several threads.
**
** Errors: functions return ANN_OK (0) or a negative ANN_E* code; X_search
** returns the number of hits or a negative code.  The writer calls, X_new
** and X_load leave a message for X_errmsg; X_search (const, concurrent)
** does not. */

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
