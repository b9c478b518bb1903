/*
** lib/store/store_index.h - the store's vector index, inside lib/store only
** (store_index.c; the layout is docs/FORMAT.md, "The vector index").
**
** The graph covers the base rows [0, n) as of its last save; rows appended
** since are searched exactly (store_knn).  A writer's checkpoint saves a new
** graph once those rows are enough of the store (sindex_wants_save).  Base
** rows never move until store_optimize, which writes a new file and saves a
** graph of it at once, so a saved graph stays true of the rows it covers;
** rows deleted later are skipped at search time.
*/
#ifndef H5MEM_STORE_INDEX_H
#define H5MEM_STORE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "h5/h5.h"
#include "store.h"

/* The index's settings: root attributes fixed at creation. */
typedef struct sindex_cfg {
  int kind; /* STORE_INDEX_* */
  int m, efc, ef;
  int q8;   /* an int8 copy of the embeddings guides the graph search */
  uint32_t nlist; /* IVF: lists (0: sqrt of the rows at training) */
  int nprobe;     /* IVF: lists a search scans by default */
  int pq_m;       /* IVF: 0 (IVF-Flat) or the sub-quantisers of IVF-PQ */
} sindex_cfg;

/* Owned by the store: made by sindex_load, freed by sindex_free (before the
** file it maps is closed). */
typedef struct sindex sindex;

/* The settings from the root group's attributes (absent: a flat index, the
** format of stores made before indexes existed) into *c: STORE_OK, or
** STORE_ECORRUPT when they are present but invalid (a message in err). */
int sindex_cfg_read(h5_file *f, h5_obj *root, sindex_cfg *c, char *err, size_t errlen);
/* Write c as root attributes of a new store. */
int sindex_cfg_write(h5w *w, h5w_obj *root, const sindex_cfg *c);

/* The index of the mapped file f (whose base has nbase rows), rows read
** through s.  A missing or damaged saved graph is not an error (the index is
** derived data; the searches are then exact and the next checkpoint saves a
** new one): sindex_note says why.  Fails only when out of memory
** (STORE_ENOMEM). */
int sindex_load(store *s, h5_file *f, const sindex_cfg *c, uint64_t nbase, sindex **out);
void sindex_free(sindex *x);

/* The base rows the loaded graph covers (0: none). */
uint64_t sindex_rows(const sindex *x);
const char *sindex_note(const sindex *x);
int sindex_in_place(const sindex *x); /* the graph reads the mapped file */
uint32_t sindex_nlist(const sindex *x); /* IVF lists (0: none, or not IVF) */

/* Whether a checkpoint leaving nbase base rows should save a new graph. */
int sindex_wants_save(const sindex *x, uint64_t nbase);
/* Bring the graph up to nbase rows (adding the rows past it, on threads
** threads) and append its image to w's /index datasets; the caller flushes
** w and then loads the file again.  STORE_OK or STORE_E* with a message. */
int sindex_save(sindex *x, h5w *w, uint64_t nbase, int threads, char *err, size_t errlen);

/* store.c: the store's index (NULL while no file is loaded). */
sindex *store_sindex(store *s);
/* store_load.c: base row i's int8 copy and its scale (ann_q8_fn), or NULL. */
const int8_t *store_q8_row(const store *s, uint32_t i, float *scale);

#endif
