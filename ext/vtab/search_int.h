/*
** ext/vtab/search_int.h - the KNN search shared by vec_search and the
** h5mem table's MATCH form (vtab_search.c).
*/
#ifndef H5MEM_EXT_SEARCH_INT_H
#define H5MEM_EXT_SEARCH_INT_H

#include "ann/ann.h"
#include "ext.h"
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

int knn_filter_add(knn_filter *f, int field, int op, sqlite3_value *v);
void knn_filter_free(knn_filter *f);

/* Take the usable constraints on the columns colfield maps to KNN_F_*
** (column -1, the rowid, is the id) as plan tokens (field, op digits) after
** what plan holds, numbering their arguments from *argi + 1. */
void knn_plan(sqlite3_index_info *info, const int *colfield, int ncols, char *plan, size_t cap,
              int *argi, int *used);

/* The query vector from a value (BLOB or JSON, the store's dim). */
int knn_query(store *st, sqlite3_value *v, float **out, char **pzErr);

/* The top k among the live records that meet f (store_knn: through the
** store's index unless o says exact; o may be NULL): positions and raw
** distances (sqlite3_malloc'd), sorted. */
int knn_run(store *st, const float *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
            ann_res **out, uint64_t *nout, char **pzErr);

/* A raw distance as the distance column shows it, and as a score. */
double knn_distance(const store *st, float d);
double knn_score(const store *st, float d);

#endif
