/*
** test/unit/test_bm25_index.c - lib/text/bm25: segments, images made from them
** and from older images, and images that lie (every offset and length read
** from one is checked: under ASan a read outside fails the test).
*/
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "testutil.h"
#include "text/bm25.h"

static const char *const docs[] = {
    "the cat sat on the mat", NULL, "", "a dog and a cat", "The CAT, the cat!", "zebra",
    "dog dog dog dog", "mat", "the end",
};
#define NDOCS (sizeof docs / sizeof docs[0])

static bm25_seg *seg_of(uint64_t base, size_t from, size_t to) {
  bm25_seg *g;
  ck_assert_int_eq(bm25_seg_new(base, &g), BM25_OK);
  for (size_t i = from; i < to; i++)
    ck_assert_int_eq(bm25_seg_add(g, NULL, docs[i], docs[i] ? strlen(docs[i]) : 0), BM25_OK);
  return g;
}

/* The (doc, tf) pairs of a cursor, into out (pairs), their number. */
static int walk(bm25_cur *c, uint64_t *out, int cap) {
  int n = 0, r;
  while ((r = bm25_next(c)) == 1) {
    ck_assert_int_lt(n, cap);
    out[2 * n] = c->doc;
    out[2 * n + 1] = c->tf;
    n++;
  }
  ck_assert_int_eq(r, 0);
  return n;
}

START_TEST(test_segment) {
  bm25_seg *g = seg_of(0, 0, NDOCS);
  ck_assert_uint_eq(bm25_seg_end(g), NDOCS);
  ck_assert_uint_eq(bm25_seg_len(g, 0), 6);
  ck_assert_uint_eq(bm25_seg_len(g, 1), BM25_NOTEXT);
  ck_assert_uint_eq(bm25_seg_len(g, 2), 0);
  ck_assert_uint_eq(bm25_seg_len(g, NDOCS), BM25_NOTEXT);
  bm25_cur c;
  ck_assert_uint_eq(bm25_seg_term(g, "cat", 3, &c), 3);
  uint64_t p[32];
  ck_assert_int_eq(walk(&c, p, 16), 3);
  uint64_t want[] = {0, 1, 3, 1, 4, 2};
  ck_assert_mem_eq(p, want, sizeof want);
  ck_assert_uint_eq(bm25_seg_term(g, "dog", 3, &c), 2);
  ck_assert_int_eq(walk(&c, p, 16), 2);
  ck_assert_uint_eq(p[2], 6);
  ck_assert_uint_eq(p[3], 4);
  ck_assert_uint_eq(bm25_seg_term(g, "cow", 3, &c), 0);
  ck_assert_int_eq(bm25_next(&c), 0);
  bm25_seg_free(g);
}
END_TEST

/* An image of docs [0, split) then one of [0, NDOCS) made from it and a
** segment of the rest: the same postings as one segment of everything. */
START_TEST(test_images) {
  for (size_t split = 0; split <= NDOCS; split++) {
    bm25_seg *a = seg_of(0, 0, split), *b = seg_of(split, split, NDOCS), *all = seg_of(0, 0, NDOCS);
    uint8_t *i1, *i2;
    size_t l1, l2;
    ck_assert_int_eq(bm25_img_build(NULL, a, split, 0x101, &i1, &l1), BM25_OK);
    bm25_img *m1, *m2;
    char why[128];
    ck_assert_int_eq(bm25_img_open(i1, l1, &m1, why, sizeof why), BM25_OK);
    ck_assert_uint_eq(bm25_img_rows(m1), split);
    ck_assert_uint_eq(bm25_img_flags(m1), 0x101);
    /* a segment that does not start where the image ends is refused */
    if (split > 0) ck_assert_int_ne(bm25_img_build(m1, all, NDOCS, 0, &i2, &l2), BM25_OK);
    ck_assert_int_eq(bm25_img_build(m1, b, NDOCS, 0x101, &i2, &l2), BM25_OK);
    ck_assert_int_eq(bm25_img_open(i2, l2, &m2, why, sizeof why), BM25_OK);
    ck_assert_uint_eq(bm25_img_rows(m2), NDOCS);
    for (uint64_t d = 0; d < NDOCS; d++) ck_assert_uint_eq(bm25_img_len(m2, d), bm25_seg_len(all, d));
    static const char *const terms[] = {"the", "cat", "dog", "a", "mat", "zebra", "end", "on", "x"};
    for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
      bm25_cur c1, c2;
      uint64_t p1[64], p2[64];
      uint64_t n1 = bm25_img_term(m2, terms[t], strlen(terms[t]), &c1);
      uint64_t n2 = bm25_seg_term(all, terms[t], strlen(terms[t]), &c2);
      ck_assert_uint_eq(n1, n2);
      int w1 = walk(&c1, p1, 32), w2 = walk(&c2, p2, 32);
      ck_assert_int_eq(w1, w2);
      ck_assert_mem_eq(p1, p2, (size_t)w1 * 2 * sizeof *p1);
    }
    ck_assert_uint_eq(bm25_img_terms(m2), 10); /* the cat sat on mat a dog and zebra end */
    bm25_img_free(m1);
    bm25_img_free(m2);
    free(i1);
    free(i2);
    bm25_seg_free(a);
    bm25_seg_free(b);
    bm25_seg_free(all);
  }
}
END_TEST

static void reseal(uint8_t *img, size_t len) {
  uint64_t h = XXH64(img + 128, len - 128, 0);
  memcpy(img + 104, &h, 8);
}

/* Walk everything an image offers (terms by name, every posting, every
** length); a lying image may give errors, never a read outside it. */
static void walk_all(const bm25_img *m) {
  static const char *const terms[] = {"the", "cat", "dog", "a", "mat", "zebra", "end", "on",
                                      "and", "sat", "", "zzzz"};
  for (size_t t = 0; t < sizeof terms / sizeof terms[0]; t++) {
    bm25_cur c;
    bm25_img_term(m, terms[t], strlen(terms[t]), &c);
    for (int i = 0; i < 1000 && bm25_next(&c) == 1; i++) ck_assert_uint_lt(c.doc, bm25_img_rows(m));
  }
  for (uint64_t d = 0; d < bm25_img_rows(m) + 2; d++) (void)bm25_img_len(m, d);
}

START_TEST(test_lying_images) {
  bm25_seg *g = seg_of(0, 0, NDOCS);
  uint8_t *img;
  size_t len;
  ck_assert_int_eq(bm25_img_build(NULL, g, NDOCS, 0, &img, &len), BM25_OK);
  uint8_t *bad = malloc(len);
  bm25_img *m;
  char why[128];
  /* a flipped byte anywhere: the checksum (or the header) says so */
  for (size_t i = 0; i < len; i++) {
    memcpy(bad, img, len);
    bad[i] ^= 0x40;
    int rc = bm25_img_open(bad, len, &m, why, sizeof why);
    if (rc == BM25_OK) { /* (only bytes the checksum does not cover, e.g. its zeros) */
      ck_assert_uint_lt(i, 128);
      walk_all(m);
      bm25_img_free(m);
    } else {
      ck_assert_int_eq(rc, BM25_ECORRUPT);
    }
  }
  /* cut short, or too long */
  for (size_t n = 0; n < len; n += 7) ck_assert_int_eq(bm25_img_open(img, n, &m, why, sizeof why), BM25_ECORRUPT);
  /* random damage behind a valid checksum: answers may be wrong, reads stay inside */
  t_rng r = {t_seed()};
  printf("seed %llu\n", (unsigned long long)r.s);
  for (int round = 0; round < 20000; round++) {
    memcpy(bad, img, len);
    int nflip = 1 + (int)(t_next(&r) % 4);
    for (int f = 0; f < nflip; f++) {
      size_t at = 16 + (size_t)(t_next(&r) % (len - 16));
      if (at >= 96 && at < 112) continue; /* keep the length and checksum fields */
      bad[at] = (uint8_t)t_next(&r);
    }
    reseal(bad, len);
    if (bm25_img_open(bad, len, &m, why, sizeof why) != BM25_OK) continue;
    walk_all(m);
    /* and a new image made from it: built or refused, never a bad read */
    bm25_seg *more = seg_of(bm25_img_rows(m), 0, 2);
    uint8_t *i2;
    size_t l2;
    if (bm25_img_build(m, more, bm25_img_rows(m) + 2, 0, &i2, &l2) == BM25_OK) free(i2);
    bm25_seg_free(more);
    bm25_img_free(m);
  }
  free(bad);
  free(img);
  bm25_seg_free(g);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bm25_index");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_segment);
  tcase_add_test(tc, test_images);
  tcase_add_test(tc, test_lying_images);
  suite_add_tcase(s, tc);
  return t_run(s);
}
