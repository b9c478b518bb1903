/*
** lib/life/life.h - a memory's lifecycle policies: the write gate (is a
** text worth saving?), the save strategies, the importance of a new
** memory, and the decay score that ranks memories for recall and eviction
** (docs/SQL.md, "Memory lifecycle").
**
** Pure functions over what the caller hands in: no I/O, no allocation, no
** global state, no clock (the caller passes `now`), so every answer is
** deterministic and the same in C and through SQL (ext/func_life.c).
**
** The write gate (life_gate.c).  Rules, in this order; the first that
** holds is the reason to skip, each can be turned off (life_gate_opts):
**   trivial          the text has no word at all (empty, white space,
**                    punctuation, emoji or other symbols only), or its
**                    words, case-folded and joined by single spaces, are
**                    one of the acknowledgements in LIFE_TRIVIAL_LIST (so
**                    "OK!", " Thank you. " and "got it 👍" are trivial);
**   too_short        fewer than min_chars characters (code points that are
**                    not white space: "我喜欢喝绿茶" is 6 characters, not
**                    18 bytes) or fewer than min_words words;
**   low_information  the distinct words among the first LIFE_GATE_WINDOW
**                    words, over the words in that window, below
**                    min_distinct_ratio ("ha ha ha ha": 0.25); or the word
**                    characters over all characters below min_alnum_ratio
**                    ("!!!! ?? ok ?? !!!!").
** Words are lib/text's tokens (FTS5's unicode61, tokenize.h, as bm25
** indexes them: letters, digits and private-use characters, case-folded,
** diacritics removed), except that in scripts written without spaces (Han,
** Hiragana, Katakana) each character is a word of its own, so a Chinese or
** Japanese sentence has as many words as characters.  Word characters are
** the code points the tokens cover in the text.  The window keeps the
** ratio comparable between a line and a page (the ratio of distinct words
** falls as any text grows).
**
** The decay score (life_score.c), in [0, 1]:
**   score = (w_i * I + w_r * R + w_a * A) / (w_i + w_r + w_a)
**   I = importance clamped to [0, 1]; NULL (or not finite): default_importance
**   R = 0.5 ^ (age / half_life), age = now - max(ts, last_access) (the
**       known ones), 0 when that is in the future; R = 0 when neither is known
**   A = min(1, ln(1 + access_count) / ln(1 + access_full)); 0 for a count <= 0
** Defaults: w_i 0.4, w_r 0.4, w_a 0.2, half_life 7 days, access_full 100,
** default_importance 0.5.  An older memory scores lower, a more used or
** more important one higher, and age = half_life halves R exactly.
**
** The importance of a new memory when none is given:
**   importance = w_novelty * N + (1 - w_novelty) * information
**   N = min(1, the least cosine distance from the memory's embedding to
**       the working tier's), 1 when there is none to compare with, 0.5 when
**       the memory has no embedding
**   information = distinct_ratio * min(1, ln(1 + words) / ln(1 + 32))
**       (the gate's measures: a varied text of 32 words or more is 1)
** Default w_novelty 0.7.
**
** The save strategies (seed 002's SaveEveryExchange, SaveOnSemanticShift):
**   every_exchange  save what the gate passes;
**   always          save everything, the gate ignored;
**   semantic_shift  save what the gate passes and whose embedding's cosine
**                   distance to the nearest of the session's recent
**                   embeddings exceeds shift_threshold (default 0.3); none
**                   recent: a shift.  The nearest, not the mean: a mean of
**                   two topics can lie near neither, and no buffer is
**                   needed.  A text without an embedding: the gate alone.
*/
#ifndef H5MEM_LIFE_H
#define H5MEM_LIFE_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum { LIFE_OK = UTIL_OK, LIFE_EINVAL = UTIL_EINVAL }; /* the one error space (util/err.h) */

/* ---- the write gate ----------------------------------------------------- */

/* The acknowledgements the trivial rule skips, as their words joined by
** one space (the text's words are compared case-folded, without
** diacritics, so "OK", "Okay!" and "Thank you." match). */
#define LIFE_TRIVIAL_LIST                                                                  \
  "ok", "okay", "k", "kk", "thanks", "thank you", "thanks a lot", "thx", "ty", "yes",     \
      "yeah", "yep", "no", "nope", "sure", "got it", "cool", "great", "nice", "fine",     \
      "alright", "right", "hi", "hello", "hey", "bye", "lol", "hmm", "done", "ok thanks", \
      "okay thanks", "ok thank you", "sounds good", "no problem", "np", "you re welcome"

/* The words the distinct ratio is measured over: the first this many. */
#define LIFE_GATE_WINDOW 64

/* Why the gate decided as it did (life_reason_name: stable names). */
enum { LIFE_PASSED = 0, LIFE_TRIVIAL, LIFE_TOO_SHORT, LIFE_LOW_INFORMATION };

typedef struct life_gate_opts {
  int trivial;               /* the trivial rule on (1, default) or off (0) */
  uint64_t min_chars;        /* too_short: characters (default 5; 0: off) */
  uint64_t min_words;        /* too_short: words (default 2; 0: off) */
  double min_distinct_ratio; /* low_information (default 0.4; 0: off) */
  double min_alnum_ratio;    /* low_information (default 0.25; 0: off) */
} life_gate_opts;

typedef struct life_gate_result {
  int save;              /* 1: save; 0: skip */
  int reason;            /* LIFE_PASSED when save, else the rule that held */
  uint64_t chars;        /* characters: code points that are not white space */
  uint64_t words;        /* words (each character of a no-space script one) */
  uint64_t distinct;     /* distinct words among the first LIFE_GATE_WINDOW */
  double distinct_ratio; /* distinct / min(words, LIFE_GATE_WINDOW); 0 with no word */
  double alnum_ratio;    /* word characters / chars; 0 with no character */
  double information;    /* in [0, 1]: distinct_ratio * min(1, ln(1 + words) / ln(33)) */
} life_gate_result;

void life_gate_opts_default(life_gate_opts *o);

/* LIFE_OK, or LIFE_EINVAL when a ratio is outside 0 .. 1 or not a number. */
int life_gate_check(const life_gate_opts *o);

/* The gate's decision on s[0..n) (UTF-8; invalid bytes are read as the
** tokenizer reads them, each a character) with options o (NULL: the
** defaults) into *r.  s may be NULL when n is 0.  Returns LIFE_OK, or
** LIFE_EINVAL for options life_gate_check refuses. */
int life_gate(const life_gate_opts *o, const char *s, size_t n, life_gate_result *r);

/* "passed", "trivial", "too_short", "low_information"; "" for others. */
const char *life_reason_name(int reason);

/* ---- the decay score ---------------------------------------------------- */

#define LIFE_DAY 86400.0

typedef struct life_score_opts {
  double half_life;          /* seconds, > 0 (default 7 days) */
  double w_importance;       /* the weights, each >= 0 and summing to more */
  double w_recency;          /*   than 0; the score divides by their sum */
  double w_access;           /*   (defaults 0.4, 0.4, 0.2) */
  double access_full;        /* the use count at which A is 1 (> 0; default 100) */
  double default_importance; /* I for a memory without one (0 .. 1; default 0.5) */
} life_score_opts;

/* What the score reads of a memory; a has_* of 0 means that column is NULL. */
typedef struct life_record {
  int has_importance;
  double importance;
  int has_ts;
  int64_t ts; /* unix seconds */
  int64_t access_count;
  int has_last_access;
  int64_t last_access; /* unix seconds */
} life_record;

/* The three parts of a score, each in [0, 1]. */
typedef struct life_score_parts {
  double importance, recency, access;
} life_score_parts;

void life_score_opts_default(life_score_opts *o);

/* LIFE_OK, or LIFE_EINVAL (a half-life or access_full not > 0 or not
** finite, a weight < 0 or not finite, all weights 0, a default importance
** outside 0 .. 1). */
int life_score_check(const life_score_opts *o);

/* The score of r at time now (unix seconds) under o (checked by
** life_score_check; NULL: the defaults); its parts into *parts when not
** NULL. */
double life_score(const life_score_opts *o, const life_record *r, int64_t now,
                  life_score_parts *parts);

/* A candidate for eviction: the lower key goes first, ties by the lower id
** (pos: the caller's, carried along). */
typedef struct life_cand {
  double key;
  int64_t id;
  uint64_t pos;
} life_cand;

/* Reorder c[0..n) so that its k lowest (key, id) come first, in any order
** (consolidation's eviction, an ephemeral store's capacity): quickselect,
** median of three, O(n) expected. */
void life_select_lowest(life_cand *c, size_t n, size_t k);

/* ---- importance and the save strategies --------------------------------- */

/* The least cosine distance (0 .. 2) from emb to the n rows of dim floats
** one after another in rows (kernels/k.h: a zero vector is at distance 1
** from everything); 2 when n is 0. */
double life_nearest(const float *emb, const float *rows, size_t n, size_t dim);

/* The default weight of novelty in life_importance. */
#define LIFE_W_NOVELTY 0.7

/* A new memory's importance in [0, 1] (formula above): emb (NULL: no
** embedding) against the working tier's n embeddings of dim floats in
** working, and the gate's measures g.  w_novelty is clamped to [0, 1]. */
double life_importance(const float *emb, const float *working, size_t n, size_t dim,
                       const life_gate_result *g, double w_novelty);

typedef enum life_strategy { LIFE_EVERY_EXCHANGE = 0, LIFE_ALWAYS, LIFE_SEMANTIC_SHIFT } life_strategy;

#define LIFE_SHIFT_THRESHOLD 0.3

/* "every_exchange", "always", "semantic_shift" and back; -1 for a name
** that is none of them. */
const char *life_strategy_name(life_strategy s);
int life_strategy_from_name(const char *name);

/* Whether to save under strategy s: g the gate's result on the text; for
** semantic_shift, emb (NULL: none) and the session's n recent embeddings
** of dim floats in recent, compared with threshold.  The distance used
** (life_nearest: 2 when nothing was compared) into *distance when not
** NULL.  1: save; 0: skip. */
int life_should_save(life_strategy s, const life_gate_result *g, const float *emb,
                     const float *recent, size_t n, size_t dim, double threshold,
                     double *distance);

#endif /* H5MEM_LIFE_H */
