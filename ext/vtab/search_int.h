/*
** ext/vtab/search_int.h - the search code shared within ext/vtab: the KNN
** search of vec_search and the h5mem table's MATCH form (vtab_search.c),
** the bm25 and hybrid runs (search_text.c) and the vector search's
** options (search_opts.c).  The rest of ext/ uses search.h.
*/
#ifndef H5MEM_EXT_SEARCH_INT_H
#define H5MEM_EXT_SEARCH_INT_H

#include "ann/ann.h"
#include "ext.h"
#include "search.h"
#include "store/store.h"

enum { KNN_F_ID = 0, KNN_F_TS = 1, KNN_F_SOURCE = 2, KNN_F_SESSION = 3, KNN_F_TIER = 4 };
enum { KNN_OP_EQ = 0, KNN_OP_GT, KNN_OP_GE, KNN_OP_LT, KNN_OP_LE, KNN_OP_IN };

/* Conditions a search applies before ranking. */
typedef struct knn_filter {
  int empty; /* no record can meet them */
  const char *str[3]; /* source, session, tier (=); valid during xFilter */
  size_t len[3];
  int has[3];
  int has_ts;
  int64_t ts_lo, ts_hi; /* inclusive */
  int has_ids;
  int64_t *ids; /* sorted */
  size_t nids;
} knn_filter;

int search_knn_filter_add(knn_filter *f, int field, int op, sqlite3_value *v);
void search_knn_filter_free(knn_filter *f);

/* Which records a search may return, from f: a filter for the store's
** searches (bits for id IN, else a function testing the rest record by
** record; neither when f has no conditions), or none at all. */
typedef struct knn_allow {
  store_filter flt;
  int none; /* no record meets f */
  uint8_t *bits;
  struct knn_allow_ctx *c;
} knn_allow;
int search_knn_allow_init(store *st, const knn_filter *f, knn_allow *a, char **pzErr);
/* After a search: whether testing a record failed (reading the store). */
int search_knn_allow_check(const knn_allow *a, store *st, char **pzErr);
void search_knn_allow_free(knn_allow *a);

/* Take the usable constraints on the columns colfield maps to KNN_F_*
** (column -1, the rowid, is the id) as plan tokens (field, op digits) after
** what plan holds, numbering their arguments from *argi + 1. */
void search_knn_plan(sqlite3_index_info *info, const int *colfield, int ncols, char *plan, size_t cap,
                     int *argi, int *used);

/* The query vector from a value (BLOB or JSON, the store's dim), prepared
** for the kernels whatever its scale (cosine: the unit vector; dot: scaled
** by a power of two, *unit the factor to multiply raw distances by, 1
** otherwise; l2: refused beyond float32's range). */
int search_knn_query(store *st, sqlite3_value *v, float **out, double *unit, char **pzErr);

/* An error unless every distance of r[0..n-1] is finite. */
int search_knn_check(store *st, const ann_res *r, uint64_t n, char **pzErr);

/* The top k among the live records that meet f (store_knn: through the
** store's index unless o says exact; o may be NULL): positions and raw
** distances (sqlite3_malloc'd), sorted. */
int search_knn_run(store *st, const float *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
                   ann_res **out, uint64_t *nout, char **pzErr);

/* A table-valued function's arguments (NULL when not given). */
typedef struct search_args {
  sqlite3_value *query;   /* the query vector */
  sqlite3_value *qtext;   /* the query text */
  sqlite3_value *options; /* JSON */
  int64_t k;
} search_args;

/* One result: a position and up to three numbers (vec_search: distance,
** score; bm25: score; hybrid: score, vector_score, keyword_score). */
typedef struct srow {
  uint64_t pos;
  double v[3];
  uint8_t null; /* bit i: v[i] is SQL NULL */
} srow;

/* n zeroed rows (sqlite3_malloc'd), or NULL. */
srow *search_srow_alloc(uint64_t n);

/* bm25 and hybrid (search_text.c): the results for the arguments and the
** filter, sqlite3_malloc'd. */
int search_bm25_run(store *st, const search_args *a, const knn_filter *f, srow **out,
                    uint64_t *nout, char **pzErr);
int search_hybrid_run(store *st, const search_args *a, const knn_filter *f, srow **out,
                      uint64_t *nout, char **pzErr);

/* The vector search options (exact, ef, nprobe, index) into o, as
** search_opts_parse's each (search_opts.c). */
int search_knn_option(store_knn_opts *o, const char *key, const search_opt *v, char **err);

/* A raw distance as the distance column shows it, and as a score. */
double search_knn_distance(const store *st, float d, double unit);
double search_knn_score(const store *st, float d, double unit);

#endif
