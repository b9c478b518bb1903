/*
** lib/text/hybrid.h - the fusion behind hybrid(): a vector search's and a
** keyword search's candidates made one list, scored, optionally re-ranked
** and cut to the k best (docs/SQL.md, "Hybrid retrieval").
**
** Pure arithmetic over arrays the caller fills: the searches themselves,
** the records' ids and the numbers re-ranking needs are the caller's
** (ext/vtab/search_text.c, over a store).  Nothing here allocates or
** fails.  Ties are broken by id everywhere, so a result never depends on
** the order of the input.
*/
#ifndef H5MEM_TEXT_HYBRID_H
#define H5MEM_TEXT_HYBRID_H

#include <stdint.h>

/* A record of the union of the two sides. */
typedef struct hybrid_rec {
  uint64_t pos;      /* the record (a store position) */
  int64_t id;        /* its id: ties are broken by it */
  double vs, ks;     /* vector score (similarity, higher is better), BM25 (0: no match) */
  int has_v, has_k;  /* whether vs is known; whether the keyword side returned it */
  double score;      /* the fused (then re-ranked) score */
} hybrid_rec;

/* The options of the fusion and of re-ranking; hybrid_opts_default gives
** the documented defaults. */
typedef struct hybrid_opts {
  int rrf;               /* 0: weighted fusion; 1: reciprocal rank fusion */
  double wv, wk;         /* weighted: vector and keyword weights (0.4, 0.6) */
  double rrf_k;          /* rrf: 1 / (rrf_k + rank) (60) */
  int64_t cand, kcand;   /* the two sides' pools (0: max(10k, 100)) */
  int reject;            /* the confidence rule on ... */
  double reject_below;   /* ... with this threshold */
  int rerank;            /* re-rank after fusion, with: */
  double w_rel, w_rec, w_auth, w_act; /* weights (1.0, 0.2, 0.1, 0.1) */
  double half_life;      /* seconds (30 days) */
  int64_t now;           /* unix seconds, for ages */
  int has_now;           /* now given (else the caller's clock) */
  double auth_default;   /* a source's authority when not listed (0.5) */
} hybrid_opts;

void hybrid_opts_default(hybrid_opts *o);

/* The two sides' pool sizes for the k best: the options' candidates and
** keyword_candidates (default max(10k, 100)), each at least k; the vector
** side's at most live (the live records). */
void hybrid_pools(const hybrid_opts *o, uint64_t k, uint64_t live, uint64_t *nv, uint64_t *nk);

/* u[0..n) (each side's records, a record possibly twice) into the union:
** sorted by position, a record once with what either side knew of it.
** Returns the union's size. */
uint64_t hybrid_union(hybrid_rec *u, uint64_t n);

/* The record at pos in a union (sorted by position), or NULL. */
hybrid_rec *hybrid_find(hybrid_rec *u, uint64_t n, uint64_t pos);

/* The confidence rule: 1 (no rows at all) when no record matched a
** keyword and the best vector score is below reject_below (or none is
** known); 0 otherwise or when the rule is off. */
int hybrid_rejects(const hybrid_opts *o, const hybrid_rec *u, uint64_t n);

/* Each record's score from vs and ks.  Weighted: each side min-max
** normalised over the union (all equal: 1 for the vector side; for the
** keyword side 1 if positive, else 0; no vector score: 0), times wv and wk.
** RRF: the sum of 1 / (rrf_k + rank) over the lists the record is in, rank
** counted from 1 (the records with a vector score by vs; the keyword
** matches by ks).  The order of u is not kept. */
void hybrid_fuse(const hybrid_opts *o, hybrid_rec *u, uint64_t n);

/* What re-ranking knows of a record besides its score. */
typedef struct hybrid_feat {
  int64_t ts;              /* when it was written (unix seconds) */
  int64_t access_count;
  int64_t last_access;     /* unix seconds ... */
  int has_last_access;     /* ... if ever (else no fading) */
  double authority;        /* its source's, 0 .. 1 */
} hybrid_feat;

/* Re-rank u[0..n) in place, f[i] describing u[i]: score = w_rel x (score /
** the best score) + w_rec x 0.5^(age / half life) + w_auth x authority +
** w_act x activation / the union's largest, activation being
** ln(1 + access_count) x 0.5^(time since last_access / half life); ages
** from o->now, a negative one counting as 0. */
void hybrid_rerank(const hybrid_opts *o, hybrid_rec *u, const hybrid_feat *f, uint64_t n);

/* Sort u[0..n) best first (ties by id); returns how many to return: at
** most k. */
uint64_t hybrid_top(hybrid_rec *u, uint64_t n, uint64_t k);

#endif
