/*
** test/unit/test_text.c - lib/text: the unicode61 tokenizer, the Porter stemmer
** and the hashed text embedding.
**
** The expected tokens and stems here are FTS5's (SQLite 3.40.1);
** test/sql/test_tokenize.py compares with FTS5 itself on much more input.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "testutil.h"
#include "text/hashembed.h"
#include "text/text_int.h"
#include "text/tokenize.h"
#include "text/unicode.h"

/* ------------------------------------------------------------- helpers */

/* The tokens of one run, joined as "tok[start,end) tok[start,end) ...". */
typedef struct collect {
  char out[4096];
  size_t len;
  int ntok;
  int stop_at; /* return 7 from the callback for this token (1-based) */
} collect;

static int on_collect(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  collect *c = ctx;
  int w = snprintf(c->out + c->len, sizeof c->out - c->len, "%s%.*s[%zu,%zu)",
                   c->ntok ? " " : "", (int)ntok, tok, start, end);
  if (w > 0 && (size_t)w < sizeof c->out - c->len) c->len += (size_t)w;
  c->ntok++;
  return c->ntok == c->stop_at ? 7 : 0;
}

/* Tokenizes n bytes of s, copied to a buffer of exactly n bytes (so ASan
** sees any read past the end), and returns the joined tokens. */
static const char *toks_n(int rd, int porter, const char *s, size_t n) {
  static collect c;
  text_tok_opts o = {rd, porter};
  char *copy = malloc(n ? n : 1);
  memcpy(copy, s, n);
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(text_tokenize(&o, copy, n, on_collect, &c), TEXT_OK);
  free(copy);
  return c.out;
}

static const char *toks(int rd, const char *s) { return toks_n(rd, 0, s, strlen(s)); }

/* 1 when s[0..n) is well-formed UTF-8. */
static int utf8_valid(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i], lo = 0x80, hi = 0xBF;
    size_t k;
    if (c < 0x80) {
      i++;
      continue;
    }
    if (c >= 0xC2 && c <= 0xDF) k = 2;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return 0;
    if (i + k > n || s[i + 1] < lo || s[i + 1] > hi) return 0;
    for (size_t j = 2; j < k; j++)
      if (s[i + j] < 0x80 || s[i + j] > 0xBF) return 0;
    i += k;
  }
  return 1;
}

/* --------------------------------------------------------- tokenizer */

START_TEST(test_basic) {
  ck_assert_str_eq(toks(1, "Hello, World!"), "hello[0,5) world[7,12)");
  ck_assert_str_eq(toks(1, ""), "");
  ck_assert_str_eq(toks(1, " \t\n,.;:!?()[]{}<>\"'`~@#$%^&*-+=/\\|_"), "");
  ck_assert_str_eq(toks(1, "snake_case v2.0-rc1 3.14 1,000"),
                   "snake[0,5) case[6,10) v2[11,13) 0[14,15) rc1[16,19) 3[20,21) 14[22,24) "
                   "1[25,26) 000[27,30)");
  ck_assert_str_eq(toks_n(1, 0, "a\0b", 3), "a[0,1) b[2,3)");
  /* n is the end: the byte after it is never looked at */
  ck_assert_str_eq(toks_n(1, 0, "abc", 2), "ab[0,2)");
  ck_assert_str_eq(toks_n(1, 0, "x\xc3\xa9", 2), "x[0,1)"); /* é cut: U+FFFD */
  /* NULL with length 0 */
  collect c;
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(text_tokenize(NULL, NULL, 0, on_collect, &c), TEXT_OK);
  ck_assert_int_eq(c.ntok, 0);
}
END_TEST

START_TEST(test_fold_and_diacritics) {
  /* case folding, remove_diacritics 0 / 1 / 2 */
  ck_assert_str_eq(toks(0, "ÀÉÎ Ωmega"), "àéî[0,6) ωmega[7,13)");
  ck_assert_str_eq(toks(1, "ÀÉÎ Ωmega"), "aei[0,6) ωmega[7,13)");
  ck_assert_str_eq(toks(1, "Ệ ǖ ơ"), "ệ[0,3) ǖ[4,6) o[7,9)"); /* two marks: kept by 1 */
  ck_assert_str_eq(toks(2, "Ệ ǖ ơ"), "e[0,3) u[4,6) o[7,9)");
  ck_assert_str_eq(toks(1, "Straße ẞ ſ µ"), "straße[0,7) ß[8,11) s[12,14) μ[15,17)");
  ck_assert_str_eq(toks(1, "ΣΊΣΥΦΟΣ ς"), "σίσυφοσ[0,14) σ[15,17)"); /* Greek keeps tonos */
  ck_assert_str_eq(toks(0, "İstanbul ı"), "İstanbul[0,9) ı[10,12)"); /* U+0130 does not fold */
  ck_assert_str_eq(toks(1, "İstanbul ı"), "istanbul[0,9) ı[10,12)"); /* but is I + U+0307 */
  ck_assert_str_eq(toks(1, "𐐀𐐨"), "𐐨𐐨[0,8)");                     /* Deseret folds */
  /* combining marks: continue a token, never start one; dropped by 1 and 2 */
  ck_assert_str_eq(toks(0, "e\xcc\x81t\xcc\x81"), "e\xcc\x81t\xcc\x81[0,6)");
  ck_assert_str_eq(toks(1, "e\xcc\x81t\xcc\x81"), "et[0,6)");
  ck_assert_str_eq(toks(1, "\xcc\x81" "abc"), "abc[2,5)");
  ck_assert_str_eq(toks(1, "a\xcc\x85" "b"), "a[0,1) b[3,4)"); /* U+0305 is not one */
  ck_assert_str_eq(toks(7, "É"), "e[0,2)"); /* out of range: as 1 */
  ck_assert_str_eq(toks(-1, "É"), "e[0,2)");
}
END_TEST

START_TEST(test_scripts) {
  ck_assert_str_eq(toks(1, "中文 テスト 한국어"), "中文[0,6) テスト[7,16) 한국어[17,26)");
  ck_assert_str_eq(toks(1, "我能吞下玻璃。而不伤"), "我能吞下玻璃[0,18) 而不伤[21,30)");
  /* emoji are symbols; skin tones came after Unicode 6.1, so they are not */
  ck_assert_str_eq(toks(1, "a😀b 👍🏽x"), "a[0,1) b[5,6) 🏽x[11,16)");
  ck_assert_str_eq(toks(1, "x²³ ½ Ⅻ ٤٢"), "x²³[0,5) ½[6,8) ⅻ[9,12) ٤٢[13,17)");
  ck_assert_str_eq(toks(1, "\xee\x80\x80 \xf3\xb0\x80\x80"), "\xee\x80\x80[0,3) \xf3\xb0\x80\x80[4,8)");
  /* unassigned in Unicode 6.1: token characters (U+0378, U+1F900) */
  ck_assert_str_eq(toks(1, "\xcd\xb8 \xf0\x9f\xa4\x80"), "\xcd\xb8[0,2) \xf0\x9f\xa4\x80[3,7)");
  /* Devanagari vowel signs (Mc/Mn) split words, as in FTS5 */
  ck_assert_str_eq(toks(1, "हिन्दी"), "ह[0,3) न[6,9) द[12,15)");
}
END_TEST

START_TEST(test_invalid_utf8) {
  ck_assert_str_eq(toks(1, "a\xaa" "b"), "a\xc2\xaa" "b[0,3)");   /* stray byte: U+00AA */
  ck_assert_str_eq(toks(1, "\xb5"), "\xce\xbc[0,1)");             /* U+00B5 folds to μ */
  ck_assert_str_eq(toks(1, "\x80\x9f"), "");                     /* C1 controls */
  ck_assert_str_eq(toks(1, "q\xc3"), "q[0,1)");                   /* truncated */
  ck_assert_str_eq(toks(1, "a\xc3z"), "a[0,1) z[2,3)");
  ck_assert_str_eq(toks(1, "\xc0\x80 \xe0\x80\x80 \xed\xa0\x80 \xef\xbf\xbe"), ""); /* U+FFFD */
  ck_assert_str_eq(toks(1, "\xe0\x82\x80"), "");                  /* overlong U+0080: Cc */
  ck_assert_str_eq(toks(1, "\xe0\x82\xaa"), "\xc2\xaa[0,3)");     /* overlong U+00AA: kept */
  ck_assert_str_eq(toks(1, "x\xf7\xbf\xbf\xbfy"), "x\xf7\xbf\xbf\xbfy[0,6)");
  ck_assert_str_eq(toks(1, "\xf4\x90\x80\x80"), "\xf4\x90\x80\x80[0,4)");
  /* a lead byte takes every continuation byte; 32-bit wrap, low 21 bits out */
  ck_assert_str_eq(toks(1, "\xfb\xbf\xbf\xbf\xbf\xbf\xbf"), "\xf7\xbf\xbf\xbf[0,7)");
  ck_assert_str_eq(toks(1, "\xc2\x80\x80\x80"), "\xf2\x80\x80\x80[0,4)");
  ck_assert_str_eq(toks(1, "\xfe\xff"), "");
}
END_TEST

START_TEST(test_stop) {
  /* the callback's non-zero value stops the run and is returned */
  collect c;
  memset(&c, 0, sizeof c);
  c.stop_at = 2;
  ck_assert_int_eq(text_tokenize(NULL, "one two three", 13, on_collect, &c), 7);
  ck_assert_int_eq(c.ntok, 2);
  ck_assert_str_eq(c.out, "one[0,3) two[4,7)");
}
END_TEST

/* Checks tokens of 'a' runs: all 'a', as long as their range. */
static int on_long(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  int *bad = ctx;
  if (ntok != end - start) (*bad)++;
  for (size_t i = 0; i < ntok; i++)
    if (tok[i] != 'a') (*bad)++;
  return 0;
}

START_TEST(test_long) {
  /* past the 256-byte stack buffer the heap takes over */
  for (size_t n = 250; n < 200000; n = n * 3 + 1) {
    char *s = malloc(n);
    int bad = 0;
    memset(s, 'A', n);
    for (int porter = 0; porter <= 1; porter++) {
      text_tok_opts o = {1, porter};
      ck_assert_int_eq(text_tokenize(&o, s, n, on_long, &bad), TEXT_OK);
      T_CHECK(bad == 0, "a token of %zu bytes", n);
    }
    free(s);
  }
  /* long tokens of multibyte characters, folded on the way */
  size_t n = 3 * 5000;
  char *s = malloc(n);
  for (size_t i = 0; i < n; i += 3) memcpy(s + i, "\xe1\xba\xa0", 3); /* U+1EA0 */
  ck_assert_str_eq(toks_n(0, 0, s, 6), "\xe1\xba\xa1\xe1\xba\xa1[0,6)");
  ck_assert_str_eq(toks_n(1, 0, s, 6), "aa[0,6)");
  collect c;
  memset(&c, 0, sizeof c);
  ck_assert_int_eq(text_tokenize(NULL, s, n, on_collect, &c), TEXT_OK);
  ck_assert_int_eq(c.ntok, 1);
  free(s);
}
END_TEST

/* ------------------------------------------------------------- stemmer */

START_TEST(test_porter) {
  static const char *cases[][2] = {
      /* step 1a, 1b, 1c */
      {"caresses", "caress"}, {"ponies", "poni"}, {"ties", "ti"}, {"caress", "caress"},
      {"cats", "cat"}, {"feed", "feed"}, {"agreed", "agre"}, {"plastered", "plaster"},
      {"bled", "bled"}, {"motoring", "motor"}, {"sing", "sing"}, {"conflated", "conflat"},
      {"troubled", "troubl"}, {"sized", "size"}, {"hopping", "hop"}, {"tanned", "tan"},
      {"falling", "fall"}, {"hissing", "hiss"}, {"fizzed", "fizz"}, {"failing", "fail"},
      {"filing", "file"}, {"happy", "happi"}, {"sky", "sky"},
      /* steps 2 to 5 */
      {"relational", "relat"}, {"conditional", "condit"}, {"rational", "ration"},
      {"valenci", "valenc"}, {"digitizer", "digit"}, {"conformabli", "conform"},
      {"radicalli", "radic"}, {"differentli", "differ"}, {"vileli", "vile"},
      {"analogousli", "analog"}, {"vietnamization", "vietnam"}, {"predication", "predic"},
      {"operator", "oper"}, {"feudalism", "feudal"}, {"decisiveness", "decis"},
      {"hopefulness", "hope"}, {"callousness", "callous"}, {"formaliti", "formal"},
      {"sensitiviti", "sensit"}, {"sensibiliti", "sensibl"}, {"triplicate", "triplic"},
      {"formative", "form"}, {"formalize", "formal"}, {"electriciti", "electr"},
      {"electrical", "electr"}, {"hopeful", "hope"}, {"goodness", "good"},
      {"revival", "reviv"}, {"allowance", "allow"}, {"inference", "infer"},
      {"airliner", "airlin"}, {"gyroscopic", "gyroscop"}, {"adjustable", "adjust"},
      {"defensible", "defens"}, {"irritant", "irrit"}, {"replacement", "replac"},
      {"adjustment", "adjust"}, {"dependent", "depend"}, {"adoption", "adopt"},
      {"homologou", "homolog"}, {"communism", "commun"}, {"activate", "activ"},
      {"angulariti", "angular"}, {"homologous", "homolog"}, {"effective", "effect"},
      {"bowdlerize", "bowdler"}, {"probate", "probat"}, {"rate", "rate"}, {"cease", "ceas"},
      {"controll", "control"}, {"roll", "roll"},
      /* FTS5's own rules */
      {"aed", "a"}, {"yyed", "y"}, {"ated", "at"}, {"abs", "ab"},
      /* too short; bytes, not letters */
      {"is", "is"}, {"as", "as"}, {"caf\xc3\xa9s", "caf\xc3\xa9"},
      {"a\xe4\x8e\x8e" "ed", "a\xe4\x8e"}, /* cuts the character, as FTS5 does */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char w[80];
    size_t n = strlen(cases[i][0]);
    memcpy(w, cases[i][0], n);
    n = text_porter_stem(w, n);
    T_CHECK(n == strlen(cases[i][1]) && memcmp(w, cases[i][1], n) == 0, "%s -> %.*s, not %s",
            cases[i][0], (int)n, w, cases[i][1]);
  }
  /* 64 bytes are stemmed, 65 are not */
  char w[70];
  memset(w, 'x', 62);
  memcpy(w + 62, "es", 2);
  ck_assert_uint_eq(text_porter_stem(w, 64), 63);
  memset(w, 'x', 63);
  memcpy(w + 63, "es", 2);
  ck_assert_uint_eq(text_porter_stem(w, 65), 65);
  /* through the tokenizer */
  ck_assert_str_eq(toks_n(1, 1, "Running DOGS é", 15), "run[0,7) dog[8,12) e[13,15)");
}
END_TEST

/* ------------------------------------------------------------ robustness */

typedef struct rob {
  size_t n, prev_end;
  int ntok, bad;
  int want_utf8;
  char why[160];
} rob;

static int on_rob(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  rob *r = ctx;
  if (!(start < end && end <= r->n && start >= r->prev_end))
    snprintf(r->why, sizeof r->why, "range [%zu,%zu) after %zu, n %zu", start, end, r->prev_end,
             r->n), r->bad++;
  else if (ntok == 0 || ntok > 2 * (end - start))
    snprintf(r->why, sizeof r->why, "%zu bytes from [%zu,%zu)", ntok, start, end), r->bad++;
  else if (r->want_utf8 && !utf8_valid((const unsigned char *)tok, ntok))
    snprintf(r->why, sizeof r->why, "invalid UTF-8 token at [%zu,%zu)", start, end), r->bad++;
  r->prev_end = end;
  r->ntok++;
  return 0;
}

/* Appends code point cp to s as UTF-8. */
static size_t put_cp(unsigned char *s, uint32_t cp) {
  if (cp < 0x80) return s[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return s[0] = (unsigned char)(0xC0 | cp >> 6), s[1] = (unsigned char)(0x80 | (cp & 63)), 2;
  if (cp < 0x10000)
    return s[0] = (unsigned char)(0xE0 | cp >> 12), s[1] = (unsigned char)(0x80 | (cp >> 6 & 63)),
           s[2] = (unsigned char)(0x80 | (cp & 63)), 3;
  return s[0] = (unsigned char)(0xF0 | cp >> 18), s[1] = (unsigned char)(0x80 | (cp >> 12 & 63)),
         s[2] = (unsigned char)(0x80 | (cp >> 6 & 63)), s[3] = (unsigned char)(0x80 | (cp & 63)), 4;
}

START_TEST(test_random_bytes) {
  t_rng rng = {t_seed()};
  printf("test_random_bytes: seed %llu\n", (unsigned long long)rng.s);
  for (int iter = 0; iter < 30000; iter++) {
    size_t n = t_next(&rng) % 200;
    unsigned char *s = malloc(n + 4);
    int valid = iter % 2;
    size_t len = 0;
    while (len < n) {
      uint64_t r = t_next(&rng);
      if (valid) {
        /* well-formed UTF-8 of code points from everywhere */
        uint32_t cp = (r & 3) == 0 ? (uint32_t)(r >> 8) % 0x80
                      : (r & 3) == 1 ? (uint32_t)(r >> 8) % 0x800
                      : (r & 3) == 2 ? (uint32_t)(r >> 8) % 0x10000
                                     : (uint32_t)(r >> 8) % 0x110000;
        if (cp >= 0xD800 && cp < 0xE000) cp = 'x';
        if (len + 4 > n) cp = 'a' + (uint32_t)(r >> 40) % 26;
        len += put_cp(s + len, cp);
      } else {
        /* any bytes, mostly high ones */
        s[len++] = (unsigned char)((r & 1) ? (r >> 8) | 0x80 : (r >> 8));
      }
    }
    /* exactly len bytes, so ASan catches any read past the end */
    unsigned char *exact = malloc(len ? len : 1);
    memcpy(exact, s, len);
    free(s);
    for (int rd = 0; rd <= 2; rd++) {
      for (int porter = 0; porter <= 1; porter++) {
        text_tok_opts o = {rd, porter};
        rob r;
        memset(&r, 0, sizeof r);
        r.n = len;
        r.want_utf8 = valid && !porter; /* stemming may cut a character, as FTS5's does */
        ck_assert_int_eq(text_tokenize(&o, (const char *)exact, len, on_rob, &r), TEXT_OK);
        T_CHECK(r.bad == 0, "iteration %d rd %d porter %d: %s", iter, rd, porter, r.why);
      }
    }
    free(exact);
  }
}
END_TEST

START_TEST(test_tables) {
  /* the generator's counts, so a truncated table file cannot pass */
  int nfold = 0, ndia = 0, nmark = 0;
  for (uint32_t c = 0; c < 0x110000; c++) {
    uint32_t f = text_uc_fold(c, 0);
    if (f != c) nfold++;
    unsigned d = text_uc_dia_code(c);
    if (d == 1) nmark++;
    else if (d) ndia++;
    /* folding is idempotent and keeps token characters token characters */
    T_CHECK(text_uc_fold(f, 0) == f, "fold(fold(U+%04X))", (unsigned)c);
    T_CHECK(!text_uc_is_token(c) || text_uc_is_token(f), "U+%04X folds to a separator",
            (unsigned)c);
  }
  ck_assert_int_eq(nfold, text_uc_nfold);
  ck_assert_int_eq(ndia, text_uc_ndia);
  ck_assert_int_eq(nmark, text_uc_nmark);
  ck_assert_int_eq(nmark, 25);
  /* ASCII: letters and digits */
  for (uint32_t c = 0; c < 128; c++)
    T_CHECK(text_uc_is_token(c) == ((c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z')),
            "ASCII %u", (unsigned)c);
  ck_assert(text_uc_is_token(0x100000) && text_uc_is_token(0xFFFFFFFFu));
  ck_assert(!text_uc_is_token(0xFFFD));
  ck_assert_uint_eq(text_uc_fold(0x80000000u, 2), 0x80000000u);
}
END_TEST

/* ------------------------------------------------------------ embedding */

static float norm(const float *v, int dim) {
  double ss = 0;
  for (int i = 0; i < dim; i++) ss += (double)v[i] * v[i];
  return (float)sqrt(ss);
}

START_TEST(test_embed) {
  enum { D = 256 };
  float a[D], b[D];
  const char *t = "The quick brown fox jumps over the lazy dog";
  ck_assert_int_eq(text_hash_embed(t, strlen(t), D, a), TEXT_OK);
  ck_assert_float_eq_tol(norm(a, D), 1.0f, 1e-6f);
  ck_assert_int_eq(text_hash_embed(t, strlen(t), D, b), TEXT_OK);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  /* case, punctuation, diacritics and word order do not matter */
  const char *t2 = "DOG lazy the over jumps, fox brown quick -- THE!";
  ck_assert_int_eq(text_hash_embed(t2, strlen(t2), D, b), TEXT_OK);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  ck_assert_int_eq(text_hash_embed("café", 5, D, a), TEXT_OK);
  ck_assert_int_eq(text_hash_embed("CAFE", 4, D, b), TEXT_OK);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  /* a repeated text is the same direction */
  ck_assert_int_eq(text_hash_embed("word", 4, D, a), TEXT_OK);
  ck_assert_int_eq(text_hash_embed("word word word word", 19, D, b), TEXT_OK);
  ck_assert(memcmp(a, b, sizeof a) == 0);
  /* no tokens: the zero vector */
  ck_assert_int_eq(text_hash_embed("", 0, D, a), TEXT_OK);
  ck_assert_int_eq(text_hash_embed(NULL, 0, D, b), TEXT_OK);
  ck_assert_int_eq(text_hash_embed(" ,;! 😀", 9, D, b), TEXT_OK);
  for (int i = 0; i < D; i++) T_CHECK(a[i] == 0.0f && b[i] == 0.0f, "zero vector [%d]", i);
  /* dimensions */
  float one;
  ck_assert_int_eq(text_hash_embed("x", 1, 1, &one), TEXT_OK);
  ck_assert(one == 1.0f || one == -1.0f);
  ck_assert_int_eq(text_hash_embed("x", 1, 0, a), TEXT_EINVAL);
  ck_assert_int_eq(text_hash_embed("x", 1, -5, a), TEXT_EINVAL);
  ck_assert_int_eq(text_hash_embed("x", 1, TEXT_EMBED_MAX_DIM + 1, a), TEXT_EINVAL);
  float *big = malloc(TEXT_EMBED_MAX_DIM * sizeof *big);
  ck_assert_int_eq(text_hash_embed(t, strlen(t), TEXT_EMBED_MAX_DIM, big), TEXT_OK);
  ck_assert_float_eq_tol(norm(big, TEXT_EMBED_MAX_DIM), 1.0f, 1e-6f);
  free(big);
  /* shared words and spellings bring texts closer */
  float c[D];
  const char *x = "vector databases store embeddings";
  const char *y = "a vector database for embedding";
  const char *z = "the cat sat on the mat";
  text_hash_embed(x, strlen(x), D, a);
  text_hash_embed(y, strlen(y), D, b);
  text_hash_embed(z, strlen(z), D, c);
  double ab = 0, ac = 0;
  for (int i = 0; i < D; i++) ab += (double)a[i] * b[i], ac += (double)a[i] * c[i];
  T_CHECK(ab > 0.2 && ab > fabs(ac) + 0.15, "near %.3f, far %.3f", ab, ac);
}
END_TEST

#define GOLDEN_1024 0xb6de5195e0c638d3ull

/* The values are part of the format: vectors stored with one build must
** compare with vectors made by another, on any machine. */
START_TEST(test_embed_golden) {
  static const float want[8] = {-0.130250439f, 0.260500878f, 0.0f, -0.71274811f,
                                -0.260500878f, 0.0f, 0.582497656f, 0.0f};
  float v[8];
  ck_assert_int_eq(text_hash_embed("Hello world", 11, 8, v), TEXT_OK);
  for (int i = 0; i < 8; i++)
    T_CHECK(v[i] == want[i], "[%d] = %.9g, not %.9g", i, (double)v[i], (double)want[i]);

  /* all 1024 values of a longer text, through a hash of their bits */
  const char *t = "Vector search über HDF5: 向量检索, поиск векторов, Ελληνικά, naïve café!";
  float *w = malloc(1024 * sizeof *w);
  unsigned char le[4 * 1024];
  ck_assert_int_eq(text_hash_embed(t, strlen(t), 1024, w), TEXT_OK);
  for (int i = 0; i < 1024; i++) {
    uint32_t u;
    memcpy(&u, &w[i], 4);
    for (int k = 0; k < 4; k++) le[4 * i + k] = (unsigned char)(u >> (8 * k));
  }
  free(w);
  ck_assert_uint_eq(XXH64(le, sizeof le, 0), GOLDEN_1024);
}
END_TEST

int main(void) {
  Suite *s = suite_create("text");
  TCase *tc = tcase_create("text");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_basic);
  tcase_add_test(tc, test_fold_and_diacritics);
  tcase_add_test(tc, test_scripts);
  tcase_add_test(tc, test_invalid_utf8);
  tcase_add_test(tc, test_stop);
  tcase_add_test(tc, test_long);
  tcase_add_test(tc, test_porter);
  tcase_add_test(tc, test_random_bytes);
  tcase_add_test(tc, test_tables);
  tcase_add_test(tc, test_embed);
  tcase_add_test(tc, test_embed_golden);
  suite_add_tcase(s, tc);
  return t_run(s);
}
