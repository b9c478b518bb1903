/*
** lib/text/hashembed.h - a deterministic text embedding by feature hashing.
**
** LEXICAL, NOT SEMANTIC: two texts come out close when they share words
** (and, more weakly, spellings), never because they mean the same thing.
** "car" and "automobile" are as far apart as "car" and "banana".  Use it
** where no embedding model is available, for near-duplicate detection, or
** as a cheap keyword signal beside a real model's vectors.
**
** How a vector is made (the same bytes in, the same float32 values out, on
** every machine and at every SIMD level):
**   1. text_tokenize with its defaults (FTS5 unicode61: case folded,
**      diacritics removed, no stemming);
**   2. each token adds +-1 to one of dim buckets: bucket and sign from
**      XXH64 of the token's bytes (seed TEXT_EMBED_SEED_WORD) - the
**      "hashing trick" with signed hashing, so collisions cancel on average;
**   3. each token's character 3-grams, taken over code points of "<token>"
**      ("<ca", "cat", "at>" for "cat"), add +-0.5/sqrt(k) likewise (seed
**      TEXT_EMBED_SEED_GRAM; k = the token's number of 3-grams), so a word's
**      3-grams weigh a quarter of the word itself in squared norm, and
**      misspellings and inflections ("embedding", "embeddings") stay close;
**   4. the sum is scaled to unit L2 norm (sums in order, in double).
** Repeated words count as often as they occur.  A text without tokens (empty,
** only punctuation or spaces) gives the zero vector, not an error.
*/
#ifndef H5MEM_TEXT_HASHEMBED_H
#define H5MEM_TEXT_HASHEMBED_H

#include <stddef.h>

#include "text/tokenize.h"

#define TEXT_EMBED_MAX_DIM 65536
#define TEXT_EMBED_SEED_WORD 0x68356d656d3a7777ull /* "h5mem:ww" */
#define TEXT_EMBED_SEED_GRAM 0x68356d656d3a6733ull /* "h5mem:g3" */

/* A dim outside 1..TEXT_EMBED_MAX_DIM. */
enum { TEXT_EINVAL = UTIL_EINVAL }; /* (util/err.h) */

/* Writes the embedding of s[0..n) into out[0..dim).  Returns TEXT_OK,
** TEXT_EINVAL (dim out of range; out untouched) or TEXT_ENOMEM (a token
** longer than 256 bytes needed memory; out is then unspecified).  s may be
** NULL when n is 0.  Thread-safe. */
int text_hash_embed(const char *s, size_t n, int dim, float *out);

#endif /* H5MEM_TEXT_HASHEMBED_H */
