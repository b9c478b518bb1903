/*
** lib/ann/prune.h - exact search over fewer rows: an int8 sketch of the
** rows, with each row's own quantization error, tells which rows cannot be
** among the k nearest; only the others are scored exactly.
**
** The sketch of a row x (f32, or f16 widened exactly) holds its int8 codes
** and scale (q8.h's encoding) and a radius:
**   ANN_COSINE  the angle between x and its codes, acos(x.c / |x||c|)
**   ANN_L2      |x - scale c|_2, the Euclidean distance to its decoding
**   ANN_DOT     the same, and |x|_2
** all computed in double and rounded up to float.  A query is encoded the
** same way.  Then, for the int8 distance e of query q and row x (the
** kernels' i8 distance, ann_q8_dist):
**   cosine  the angle of (q, x) differs from that of their codes by at
**           most tq + tx (the triangle inequality of angles), and 1 - cos
**           moves by at most the angle, so
**             |cosdist(q, x) - e| <= tq + tx
**   L2      | |q - x| - |q^ - x^| | <= rq + rx (the triangle inequality),
**           so |q - x| lies in [sqrt e - rq - rx, sqrt e + rq + rx]
**   dot     |q.x - q^.x^| <= |q| rx + rq (|x| + rx)
** widened by the float rounding of the exact kernels (kernels/k.h: float
** lanes; relative 6 (dim + 64) 2^-24 of |q||x| or of the squared distance,
** over three times their worst case) and of the int8 ones.  These bounds
** are rigorous, unlike the pool margin a graph search relies on (q8.h).
**
** A search: every listed row's lower and upper bound; T, the k-th smallest
** upper bound; the rows whose lower bound is at most T are scored exactly
** (ann_flat_gather), the others cannot be among the k nearest.  The
** answer is identical to ann_flat_gather's over all the listed rows (the
** same distances, the same order, ties by position): a row of the true k
** has its exact distance at most the k-th exact one, which is at most T.
** Rows the sketch does not cover (positions at or past its rows) and rows
** it could not encode (a non-finite element, or codes that lost the whole
** vector) are always scored exactly.  A row without a vector (block NULL,
** or a float row whose first element is NaN) is dropped, as the gather
** drops it.
*/
#ifndef H5MEM_ANN_PRUNE_H
#define H5MEM_ANN_PRUNE_H

#include <stddef.h>
#include <stdint.h>

#include "ann.h"

typedef struct ann_sketch ann_sketch;

/* The sketch of rows [0, n) of src, read through src->block on up to
** `threads` threads (0: one per CPU).  NULL when out of memory or n is 0. */
ann_sketch *ann_sketch_build(const ann_src *src, uint64_t n, int threads);
void ann_sketch_free(ann_sketch *sk);

/* Rows covered, and the bytes the sketch holds. */
uint64_t ann_sketch_rows(const ann_sketch *sk);
size_t ann_sketch_bytes(const ann_sketch *sk);

/* The bytes a sketch of n rows of dim elements would hold. */
size_t ann_sketch_size(uint64_t n, int dim);

/* Exact search over the n positions pos[] as ann_flat_gather (the same
** results), scoring exactly only the rows the sketch cannot rule out.  sk
** must have been built from the same rows (src's dim, element type and
** metric); NULL sk, a query the int8 encoding cannot hold, or k too large
** a share of n: a plain gather.  *nscored (may be NULL): how many rows
** were scored exactly.  Returns ANN_OK, or ANN_ENOMEM. */
int ann_flat_gather_pruned(const ann_src *src, const ann_sketch *sk, const float *q, uint64_t k,
                           const uint64_t *pos, uint64_t n, ann_res *out, uint64_t *nout,
                           uint64_t *nscored);

#endif /* H5MEM_ANN_PRUNE_H */
