/*
** lib/embed/embed_int.h - shared by the files of lib/embed, not installed.
*/
#ifndef H5MEM_EMBED_INT_H
#define H5MEM_EMBED_INT_H

#include "embed/embed.h"

/* The root attribute h5mem_model of a static model file. */
#define EMBED_MODEL_KIND "static-sif"

/* The model's digest (32 hex digits and a NUL into out): XXH3-128 of dim
** (8 bytes LE), the vocabulary's bytes and offsets, the vectors, the
** weights (as stored) and the component (float32 LE). */
void embed_digest(int dim, const uint8_t *bytes, uint64_t nbytes, const uint8_t *offsets,
                  uint64_t nwords, const uint8_t *vectors, uint64_t vbytes, const uint8_t *weights,
                  const float *pc, char out[33]);

/* embed_model_open without comparing the digest (every other check
** stays): for the fuzz target, so that damaged files get past the digest
** to the checks behind it. */
int embed_model_open_nodigest(const char *path, embed_model **out, char *err, size_t errlen);

/* An OpenAI embeddings answer (b, bn bytes) for n inputs: the vectors
** into out (n rows of *dim numbers, placed by their index; out may be
** NULL), *dim 0 learning it from the first.  EMBED_OK, or EMBED_ECORRUPT /
** EMBED_ENOMEM with a message (http.c; the fuzz target reads answers). */
int embed_http_parse(const char *b, size_t bn, size_t n, int *dim, float *out, char *err, size_t errlen);

#endif /* H5MEM_EMBED_INT_H */
