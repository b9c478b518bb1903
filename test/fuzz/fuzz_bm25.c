/*
** test/fuzz/fuzz_bm25.c - libFuzzer target for bm25_img_open, the loader
** of the text index image a store keeps in its file (/index/text_image),
** and for what reads an image after it: document lengths, term lookups,
** posting walks, and bm25_img_build, which makes the next image from it.
**
** Each input is an image whose length field and checksum (bytes 96..111)
** the target sets first: a checksum is no defence against a writer who
** means harm, so everything behind it must hold on its own.  An image that
** opens is read whole; its every posting must name a document below its
** rows; the image built from it and two more documents must open.
** Seeds (H5MEM_FUZZ_SEEDS): images made by bm25_img_build.
*/
#include "config.h"

#include <xxhash.h>

#include "fuzz.h"
#include "text/bm25.h"

#define MAX_TERMS 4096
#define MAX_POSTINGS 65536

/* Walk the postings of c (df documents said): each below rows. */
static void walk(bm25_cur *c, uint64_t rows) {
  int r;
  uint64_t n = 0;
  while (n++ < MAX_POSTINGS && (r = bm25_next(c)) == 1) FUZZ_ASSERT(c->doc < rows && c->tf > 0);
}

/* Read all of m (the image at p, len bytes). */
static void read_all(const bm25_img *m, const uint8_t *p, size_t len) {
  uint64_t rows = bm25_img_rows(m), nterms = bm25_img_terms(m);
  for (uint64_t d = 0; d < rows && d < MAX_POSTINGS; d++) (void)bm25_img_len(m, d);
  (void)bm25_img_len(m, rows);
  /* each term of the dict, looked up by its bytes (the header's offsets
  ** were checked by bm25_img_open; the entries are not) */
  uint64_t dofs = util_get_le(p + 56, 8), to = util_get_le(p + 64, 8), tn = util_get_le(p + 72, 8);
  for (uint64_t i = 0; i < nterms && i < MAX_TERMS; i++) {
    const uint8_t *e = p + dofs + 32 * i;
    uint64_t off = (uint32_t)util_get_le(e + 20, 4), n = (uint32_t)util_get_le(e + 24, 4);
    if (off > tn || n > tn - off) continue;
    bm25_cur c;
    if (bm25_img_term(m, (const char *)p + to + off, (size_t)n, &c)) walk(&c, rows);
  }
  static const char *const words[] = {"", "a", "alpha", "zzzz", "\xc3\xa9t\xc3\xa9"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    bm25_cur c;
    if (bm25_img_term(m, words[i], strlen(words[i]), &c)) walk(&c, rows);
  }
  (void)len;
}

/* An 8-byte aligned copy of the input with its length and checksum set. */
static uint8_t *image_of(const uint8_t *data, size_t size) {
  uint8_t *p = malloc(size ? size : 1);
  if (!p) abort();
  if (size) memcpy(p, data, size);
  if (size >= 128) {
    uint64_t len = size, sum = XXH64(p + 128, size - 128, 0);
    memcpy(p + 96, &len, 8);
    memcpy(p + 104, &sum, 8);
  }
  return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *p = image_of(data, size);
  bm25_img *m;
  char why[128];
  if (bm25_img_open(p, size, &m, why, sizeof why) != BM25_OK) {
    free(p);
    return 0;
  }
  read_all(m, p, size);
  /* the next image: this one and two more documents */
  uint64_t rows = bm25_img_rows(m);
  bm25_seg *g;
  if (bm25_seg_new(rows, &g) != BM25_OK) abort();
  text_tok_opts o = {1, 0};
  const char *t = "alpha beta gamma alpha";
  if (bm25_seg_add(g, &o, t, strlen(t)) != BM25_OK || bm25_seg_add(g, &o, NULL, 0) != BM25_OK)
    abort();
  uint8_t *img;
  size_t len;
  int rc = bm25_img_build(m, g, rows + 2, bm25_img_flags(m), &img, &len);
  FUZZ_ASSERT(rc == BM25_OK || rc == BM25_ECORRUPT || rc == BM25_ETOOBIG);
  if (rc == BM25_OK) {
    bm25_img *m2;
    rc = bm25_img_open(img, len, &m2, why, sizeof why);
    if (rc != BM25_OK) fprintf(stderr, "the image built does not open: %s\n", why);
    FUZZ_ASSERT(rc == BM25_OK && bm25_img_rows(m2) == rows + 2);
    read_all(m2, img, len);
    bm25_img_free(m2);
    free(img);
  }
  bm25_seg_free(g);
  bm25_img_free(m);
  free(p);
  return 0;
}

/* Images: empty, documents without text, an image and then more on top of
** it (the old postings copied), porter stems, non-ASCII terms. */
static void seeds(const char *dir) {
  static const char *const docs[] = {
      "the quick brown fox", NULL, "jumps over the lazy dog", "", "été déjà vu, naïve café",
      "running runner runs", "a a a a b", "fox", NULL, "1234 5678 the end"};
  const size_t nd = sizeof docs / sizeof docs[0];
  for (int porter = 0; porter < 2; porter++) {
    text_tok_opts o = {1, porter};
    uint32_t flags = (uint32_t)porter | 1u << 8;
    bm25_img *old = NULL;
    uint8_t *prev = NULL;
    uint64_t rows = 0;
    /* images of docs [0, 0), [0, 3), [0, nd) (the last on top of the second) */
    static const size_t cut[3] = {0, 3, 10};
    for (int s = 0; s < 3; s++) {
      bm25_seg *g;
      FUZZ_ASSERT(bm25_seg_new(rows, &g) == BM25_OK);
      for (size_t d = rows; d < cut[s] && d < nd; d++)
        FUZZ_ASSERT(bm25_seg_add(g, &o, docs[d], docs[d] ? strlen(docs[d]) : 0) == BM25_OK);
      uint8_t *img;
      size_t len;
      FUZZ_ASSERT(bm25_img_build(old, g, cut[s], flags, &img, &len) == BM25_OK);
      bm25_seg_free(g);
      char name[32];
      snprintf(name, sizeof name, "seed-%d-%d", porter, s);
      fuzz_seed(dir, name, img, len);
      bm25_img_free(old);
      free(prev);
      FUZZ_ASSERT(bm25_img_open(img, len, &old, NULL, 0) == BM25_OK);
      prev = img;
      rows = cut[s];
    }
    bm25_img_free(old);
    free(prev);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  if (fuzz_seed_dir()) seeds(fuzz_seed_dir());
  return 0;
}
