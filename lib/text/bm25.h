/*
** lib/text/bm25.h - the inverted index behind bm25(): term -> the documents
** holding it and how often, and each document's length in tokens.
**
** Two forms.  A segment (bm25_seg) is built in memory, one document after
** another in increasing document number.  An image (bm25_img) is the
** index of documents [0, rows) as one block of bytes, made from an older
** image and a segment (bm25_img_build) and read in place, e.g. from a
** memory-mapped file (docs/FORMAT.md, "The text index").  Document numbers
** are the store's positions; an image never changes, so a document deleted
** after it was made stays in it and the caller skips it.
**
** Scoring is the caller's (lib/store/store_text.c): this file only finds
** terms and walks their postings, checking every offset and length of an
** image against its size.
*/
#ifndef H5MEM_TEXT_BM25_H
#define H5MEM_TEXT_BM25_H

#include <stddef.h>
#include <stdint.h>

#include "text/tokenize.h"
#include "util/err.h"

/* The codes of the one error space (util/err.h). */
enum {
  BM25_OK = UTIL_OK,
  BM25_ENOMEM = UTIL_ENOMEM,
  BM25_ECORRUPT = UTIL_ECORRUPT,
  BM25_ETOOBIG = UTIL_ETOOBIG /* rows, terms or bytes beyond the image's 32-bit fields */
};

#define BM25_NOTEXT UINT32_MAX /* the length of a document without text */

/* ---- segments ---------------------------------------------------------- */

typedef struct bm25_seg bm25_seg;

/* An empty segment whose first document is number base. */
int bm25_seg_new(uint64_t base, bm25_seg **out);
void bm25_seg_free(bm25_seg *g);
/* Documents [base, end) are in the segment (end = base when none). */
uint64_t bm25_seg_end(const bm25_seg *g);
/* Add document bm25_seg_end(g): the tokens of text[0..n) (tokenizer
** options o), or no text at all (text NULL). */
int bm25_seg_add(bm25_seg *g, const text_tok_opts *o, const char *text, size_t n);
/* A document's length in tokens (BM25_NOTEXT: none, or not in g). */
uint32_t bm25_seg_len(const bm25_seg *g, uint64_t doc);

/* ---- images ------------------------------------------------------------ */

typedef struct bm25_img bm25_img;

/* A view of the image at p (len bytes, 8-byte aligned, kept alive by the
** caller), after checking its header, its sections and its checksum.
** BM25_ECORRUPT with the reason in why; BM25_ENOMEM. */
int bm25_img_open(const void *p, size_t len, bm25_img **out, char *why, size_t whylen);
void bm25_img_free(bm25_img *m);
uint64_t bm25_img_rows(const bm25_img *m);
uint64_t bm25_img_terms(const bm25_img *m);
uint32_t bm25_img_flags(const bm25_img *m); /* as given to bm25_img_build */
uint32_t bm25_img_len(const bm25_img *m, uint64_t doc);
/* A new image (malloc'd, *len bytes) of documents [0, rows): those of old
** (NULL: none) and then g's, which must start where old ends and end at
** rows.  flags: the tokenizer settings, kept in the image. */
int bm25_img_build(const bm25_img *old, const bm25_seg *g, uint64_t rows, uint32_t flags,
                   uint8_t **out, size_t *len);

/* ---- postings ---------------------------------------------------------- */

/* The documents holding one term, in increasing order: bm25_next sets doc
** and tf, and returns 1, or 0 at the end, or BM25_ECORRUPT. */
typedef struct bm25_cur {
  const uint8_t *p, *end; /* an image's varints */
  const uint32_t *pairs;  /* a segment's (doc - base, tf) pairs */
  uint64_t i, n, base;
  uint64_t doc;
  uint32_t tf;
  uint64_t limit; /* an image's documents are < limit */
  int started;
} bm25_cur;

/* The term tok[0..n) in m or g: its document count (0: absent, c at its
** end). */
uint64_t bm25_img_term(const bm25_img *m, const char *tok, size_t n, bm25_cur *c);
uint64_t bm25_seg_term(const bm25_seg *g, const char *tok, size_t n, bm25_cur *c);
int bm25_next(bm25_cur *c);

#endif
