/*
** lib/ann/hnsw.h - a hierarchical navigable small world graph (Malkov &
** Yashunin, "Efficient and robust approximate nearest neighbor search using
** Hierarchical Navigable Small World graphs", 2016) over rows the caller
** keeps.
**
** The index keeps to ann.h's contract of the indexes (rows, ids,
** distances, the calls, threads, errors); what is its own is said here and
** at each call.  It stores only the graph: vectors stay where the caller
** has them (typically f32 or f16 rows of a memory-mapped HDF5 dataset).
** Queries are always f32; f16 rows are scored with the mixed f32 x f16
** kernels, so results are the same as a brute-force scan with the same
** kernels.
**
** int8 first pass (hnsw_set_q8): when the caller also keeps an int8 copy
** of the rows (q8.h: per-row scale), a search quantises the query once,
** walks the graph (upper levels and level 0) on int8 distances with a
** candidate pool of max(ef, 2k), scores the best 2k of the pool (by int8
** distance) again with the exact kernels and returns the k best of those by
** exact distance.  Returned distances are exact, as without it; filters and
** deleted rows behave as without it.  2k because with k the ranks around k
** swap under int8 noise: measured recall@10 fell 0.01-0.03 below the exact
** walk's at ef = k; with 2k it stayed within 0.0011 of it at every ef (10
** seeds, 1K and 10K clustered rows, 3 metrics, f32 and f16).  Scoring the
** rest of a larger pool exactly changed nothing measurable (100K x 384
** clustered rows, 3 graphs, 1000 queries, ef 10..512: the same recall@10
** to four places) and cost a float row read per candidate, 1.15-1.6x the
** search time at ef 128..512.
** Construction (hnsw_add, hnsw_build) is exact whether or not q8 is set:
** int8 distances built the graph no faster (pair kernels on rows in cache
** cost what AVX-512 f32 ones do, and the link heuristic is row-to-row) and
** no better, while exact construction keeps the graph, and its image, the
** same whether or not the int8 copies exist yet.
**
** Threads (ann.h): hnsw_set_q8 and hnsw_set_q8_rows are writer calls too,
** and the q8 callback, like vec, must be safe to call from concurrent
** searches.
*/
#ifndef H5MEM_ANN_HNSW_H
#define H5MEM_ANN_HNSW_H

#include <stddef.h>
#include <stdint.h>

#include "ann.h"
#include "q8.h"

/* ann_metric, ann_elem, the ANN_* codes, ann_vec_fn, ann_hit: ann.h */

/* The index.  Allocated by hnsw_new / hnsw_load, freed by hnsw_free. */
typedef struct hnsw hnsw;

/* Construction parameters; a zero field takes the default.
**   M                links per node on the upper levels (default 16, 2..512);
**                    level 0 keeps up to 2M
**   ef_construction  candidate list size while inserting (default 64)
**   seed             level generator seed (default: a fixed constant)
**   threads          hnsw_build's threads (default 1)
**   keep_pruned      1: the heuristic fills a list with the candidates it
**                    pruned (the paper's keepPrunedConnections); 0 (the
**                    default, as hnswlib): lists keep only the diverse
**                    ones.  Measured on 100K x 384 clustered unit vectors
**                    (BENCHMARKS.md): keeping them made the build 1.4x
**                    slower and searches slower at equal or lower recall.
**                    An index from hnsw_load builds with 0. */
typedef struct hnsw_params {
  int M;
  int ef_construction;
  uint64_t seed;
  int threads;
  int keep_pruned;
} hnsw_params;

/* ann.h's X_new. */
int hnsw_new(int dim, ann_metric metric, ann_elem elem, const hnsw_params *p,
             ann_vec_fn vec, void *ctx, hnsw **out);

/* ann.h's X_add. */
int hnsw_add(hnsw *h, uint32_t i);

/* ann.h's X_build, on p.threads threads.  Levels are drawn from the seed
** in id order before the threads start, so with threads = 1 the graph
** depends only on the seed and the rows.  With more threads rows are
** linked in whatever order the threads reach them: the graph may differ
** from run to run (recall does not, measurably). */
int hnsw_build(hnsw *h, uint32_t n);

/* The threads hnsw_build uses from now on (an index from hnsw_load starts
** with 1); below 1 means 1. */
void hnsw_set_threads(hnsw *h, int threads);

/* ann.h's X_delete: the row is still used to navigate (its links stay). */
int hnsw_delete(hnsw *h, uint32_t i);

/* ann.h's X_search, looking at max(ef, k) candidates (with hnsw_set_q8:
** max(ef, 2k) on int8 distances, the best 2k of them re-scored).  Rows the
** filter refuses (and deleted rows) are navigated through but never
** returned.  Fewer than k hits only when fewer rows are live, allowed and
** reachable. */
int hnsw_search(const hnsw *h, const float *q, int k, int ef,
                int (*filter)(void *fctx, uint32_t i), void *fctx,
                ann_hit *out);

/* Turn the int8 first pass on: q8/qctx give row i's int8 copy (q8.h:
** encoded with ann_q8_encode; NULL for a row without one, which is then
** scored exactly), borrowed like vec/ctx and, like vec, called from
** concurrent searches.  q8 NULL turns it off.  A writer call: not while
** searches run.  Not part of the saved image: set it again after
** hnsw_load.  Returns ANN_OK, or ANN_EINVAL for a broken handle. */
int hnsw_set_q8(hnsw *h, ann_q8_fn q8, void *qctx);

/* The int8 pass over copies the caller keeps in one array: row i < n at
** codes + i * stride (stride >= dim bytes), its scale at scales[i]; rows
** at or past n are scored exactly.  The same pass as hnsw_set_q8's, without
** a call per row (the store's layout: one malloc'd copy, rows on 64-byte
** boundaries when dim is a multiple of 64).  Replaces a callback set
** before, as hnsw_set_q8 replaces these; codes NULL turns the pass off.
** The arrays are borrowed and must stay unchanged while searches run.  A
** writer call.  ANN_EINVAL for a stride below dim or no scales. */
int hnsw_set_q8_rows(hnsw *h, const int8_t *codes, size_t stride, const float *scales,
                     uint32_t n);

/* ann.h's X_count. */
uint32_t hnsw_count(const hnsw *h);
/* Whether the graph is wholly in memory (built or added to), not read in
** place from a loaded image. */
int hnsw_in_memory(const hnsw *h);

/* ann.h's X_save: the graph. */
int hnsw_save(const hnsw *h, uint8_t **img, size_t *len);

/* ann.h's X_load: links are checked against the node count too, and the
** neighbour lists are what is read in place (until the first add, build or
** delete). */
int hnsw_load(const void *img, size_t len, int dim, ann_metric m, ann_elem e,
              ann_vec_fn vec, void *ctx, hnsw **out);

/* ann.h's X_free. */
void hnsw_free(hnsw *h);

/* ann.h's X_errmsg. */
const char *hnsw_errmsg(const hnsw *h);

#endif /* H5MEM_ANN_HNSW_H */
