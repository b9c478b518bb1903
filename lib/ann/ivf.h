/*
** lib/ann/ivf.h - an inverted-file index (IVF) over rows the caller keeps:
** k-means cells with a list of rows each, searched by scanning the nprobe
** cells nearest the query (Sivic & Zisserman's inverted file, as used for
** vectors by Jegou, Douze & Schmid, "Product quantization for nearest
** neighbor search", 2011).  Optionally the lists keep a product-quantised
** code of each row (IVF-PQ) and the scan ranks by the codes, then re-scores
** the best candidates exactly.
**
** The index keeps to ann.h's contract of the indexes (rows, ids,
** distances, the calls, threads, errors); what is its own is said here and
** at each call.  IVF-Flat asks for every row of the probed lists; IVF-PQ
** only for the `rerank` best by code.  Every distance returned is exact
** (IVF-PQ re-scores before returning), so with nprobe = nlist IVF-Flat
** returns what a brute-force scan returns.
**
** Inside the index (the lists and codes; ivf.c has the details):
**   cosine  rows and query are normalised, and the lists and codes are
**           those of L2 on the unit sphere, whose order is the cosine order
**   dot     rows join, and queries probe, the lists of largest dot product
**           with the centroid (k-means with that assignment, centroids
**           still means); IVF-PQ ranks by q.c + q.(decoded residual),
**           which is q.x up to the residual's quantisation
** IVF-PQ with L2 or cosine also keeps, for its search tables, a per-list
** term of nlist x pq_m KiB (computed by ivf_train and ivf_load, never
** saved) unless that would exceed 64 MiB.
**
** Use: ivf_new, then ivf_train on a prefix of the rows (or let ivf_build
** train on the rows it is given), then ivf_add / ivf_build, ivf_search.
**
** Threads (ann.h): ivf_train is a writer call too; ivf_train and ivf_build
** may themselves use p.threads threads, with the same result for any
** number of them.
*/
#ifndef H5MEM_ANN_IVF_H
#define H5MEM_ANN_IVF_H

#include <stddef.h>
#include <stdint.h>

#include "ann.h"

/* The index.  Allocated by ivf_new / ivf_load, freed by ivf_free. */
typedef struct ivf ivf;

/* Construction parameters; a zero field takes the default.
**   nlist         number of lists (k-means cells).  Default: chosen by
**                 ivf_train from the n rows it trains on, round(sqrt(n)),
**                 which makes a list about as long as there are lists and
**                 so balances the two costs of a probe (nlist centroid
**                 distances, then n/nlist rows per list).  Whatever the
**                 value, ivf_train lowers it to the number of rows it has
**                 to train on.  At most 1 << 24.
**   pq_m          0: IVF-Flat (the lists hold ids only).  Otherwise
**                 IVF-PQ with pq_m sub-quantisers: dim must be a multiple
**                 of pq_m; each row is stored as pq_m bytes.
**   pq_bits       bits per sub-quantiser code: 8 (256 centroids per
**                 sub-space) is the only value; 0 means 8
**   train_iters   Lloyd iterations of each k-means (default 20, 1..1000)
**   seed          sampling and initialisation seed (default: a constant)
**   threads       threads of ivf_train and ivf_build (default 1)
**   train_sample  at most this many rows train the coarse quantiser
**                 (default 256 x nlist); the PQ codebooks train on at most
**                 65536 of them
**   rerank        IVF-PQ: how many of the best candidates by code are
**                 re-scored exactly when ivf_search is given rerank 0
**                 (default 0: 4 x k) */
typedef struct ivf_params {
  uint32_t nlist;
  int pq_m;
  int pq_bits;
  int train_iters;
  uint64_t seed;
  int threads;
  uint32_t train_sample;
  int rerank;
} ivf_params;

/* ann.h's X_new: the index is not trained yet. */
int ivf_new(int dim, ann_metric metric, ann_elem elem, const ivf_params *p,
            ann_vec_fn vec, void *ctx, ivf **out);

/* Train the coarse quantiser (and the PQ codebooks) on rows [0, n): k-means
** on a deterministic sample of them (a stratified sample drawn with the
** seed when n exceeds train_sample), cosine rows normalised first.  Rows
** the callback answers NULL for are left out.  The result depends only on
** the parameters and the rows, not on threads.  ANN_EINVAL if the index
** already holds rows (train a new one) or no row could be read; training
** an empty trained index again replaces its quantisers. */
int ivf_train(ivf *v, uint32_t n);

/* ann.h's X_add; ANN_EINVAL too when the index is not trained.  The row goes
** at the end of the list of its nearest centroid. */
int ivf_add(ivf *v, uint32_t i);

/* ann.h's X_build, training first on [0, n) if the index is not trained.
** Rows are assigned on p.threads threads and appended in id order, so the
** index (and its image) is the same whatever the number of threads, and
** the same as ivf_add of each row in id order. */
int ivf_build(ivf *v, uint32_t n);

/* ann.h's X_delete: the row stays in its list. */
int ivf_delete(ivf *v, uint32_t i);

/* ann.h's X_search among the rows of the nprobe lists whose centroids are
** nearest q (nprobe < 1 counts as 1, above nlist as nlist).  IVF-PQ ranks
** those rows by their codes, then re-scores the best max(rerank, k) of them
** exactly (rerank 0: the index's p.rerank, else 4 x k; it has no effect on
** IVF-Flat).  filter is asked about each live row of the probed lists
** before the row is scored.  Fewer than k hits only when the probed lists
** hold fewer live, allowed rows; an index that is empty or not trained
** returns 0. */
int ivf_search(const ivf *v, const float *q, int k, int nprobe, int rerank,
               int (*filter)(void *fctx, uint32_t i), void *fctx, ann_hit *out);

/* ann.h's X_count. */
uint32_t ivf_count(const ivf *v);

/* The number of lists: 0 until the index is trained. */
uint32_t ivf_nlist(const ivf *v);

/* ann.h's X_save. */
int ivf_save(const ivf *v, uint8_t **img, size_t *len);

/* ann.h's X_load: ids are checked against nlist and the row count too, and
** the centroids, codebooks and lists are what is read in place (until the
** first ivf_add, ivf_build or ivf_train; ivf_delete never reads or writes
** the image).  threads is 1 (the image does not keep it). */
int ivf_load(const void *img, size_t len, int dim, ann_metric m, ann_elem e,
             ann_vec_fn vec, void *ctx, ivf **out);

/* ann.h's X_free. */
void ivf_free(ivf *v);

/* ann.h's X_errmsg. */
const char *ivf_errmsg(const ivf *v);

#endif /* H5MEM_ANN_IVF_H */
