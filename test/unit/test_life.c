/*
** test/unit/test_life.c - lib/life: the write gate, the decay score, a new
** memory's importance and the save strategies (lib/life/life.h,
** docs/SQL.md "Memory lifecycle").
**
** test/sql/test_life.py runs the same code through SQL (h5mem_gate,
** h5mem_decay, h5mem_score).
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "life/life.h"
#include "testutil.h"

#define EPS 1e-12

static life_gate_result gate_with(const life_gate_opts *o, const char *s) {
  life_gate_result r;
  ck_assert_int_eq(life_gate(o, s, strlen(s), &r), LIFE_OK);
  return r;
}

static life_gate_result gate(const char *s) { return gate_with(NULL, s); }

#define ASSERT_REASON(text, want)                                                          \
  do {                                                                                     \
    life_gate_result r_ = gate(text);                                                      \
    ck_assert_msg(r_.reason == (want), "%s: %s, want %s", text, life_reason_name(r_.reason), \
                  life_reason_name(want));                                                 \
    ck_assert_int_eq(r_.save, (want) == LIFE_PASSED);                                      \
  } while (0)

/* ------------------------------------------------------------------- gate */

START_TEST(test_gate_defaults) {
  life_gate_opts o;
  memset(&o, 0x5a, sizeof o);
  life_gate_opts_default(&o);
  ck_assert_int_eq(o.trivial, 1);
  ck_assert_uint_eq(o.min_chars, 5);
  ck_assert_uint_eq(o.min_words, 2);
  ck_assert_double_eq(o.min_distinct_ratio, 0.4);
  ck_assert_double_eq(o.min_alnum_ratio, 0.25);
  ck_assert_int_eq(life_gate_check(&o), LIFE_OK);
  ck_assert_str_eq(life_reason_name(LIFE_PASSED), "passed");
  ck_assert_str_eq(life_reason_name(LIFE_TRIVIAL), "trivial");
  ck_assert_str_eq(life_reason_name(LIFE_TOO_SHORT), "too_short");
  ck_assert_str_eq(life_reason_name(LIFE_LOW_INFORMATION), "low_information");
  ck_assert_str_eq(life_reason_name(99), "");
}
END_TEST

START_TEST(test_gate_trivial) {
  static const char *const trivial[] = {
      "ok", "OK", "Ok.", "  okay!!  ", "thanks", "Thanks!", "thank you", "Thank you.",
      "THANK-YOU", "yes", "Yes!", "no", "sure", "got it", "Got it 👍", "cool", "great",
      "great!!!", "\"ok\"", "(thanks)", "ok, thanks", "You're welcome", "",
      "   ", "\t\n", "!!!", "?!?!...", "👍", "🎉🎉🎉", "😀 😀", "—", "•••",
  };
  for (size_t i = 0; i < sizeof trivial / sizeof *trivial; i++) ASSERT_REASON(trivial[i], LIFE_TRIVIAL);
  /* a listed word inside a longer text is not trivial */
  ASSERT_REASON("ok, the meeting moved to Tuesday", LIFE_PASSED);
  ASSERT_REASON("thanks for the recipe with lentils", LIFE_PASSED);
  /* diacritics are removed as bm25 removes them */
  ASSERT_REASON("Okáy", LIFE_TRIVIAL);
  /* every list entry, as written, is trivial */
  static const char *const list[] = {LIFE_TRIVIAL_LIST};
  for (size_t i = 0; i < sizeof list / sizeof *list; i++) ASSERT_REASON(list[i], LIFE_TRIVIAL);
}
END_TEST

START_TEST(test_gate_too_short) {
  ASSERT_REASON("Paris", LIFE_TOO_SHORT);        /* 5 characters, 1 word */
  ASSERT_REASON("a b", LIFE_TOO_SHORT);          /* 2 words, 2 characters */
  ASSERT_REASON("ab cd", LIFE_TOO_SHORT);        /* 4 characters */
  ASSERT_REASON("ab cde", LIFE_PASSED);          /* 5 characters, 2 words: the boundary */
  ASSERT_REASON("supercalifragilistic", LIFE_TOO_SHORT); /* one word */
  life_gate_result r = gate("ab cde");
  ck_assert_uint_eq(r.chars, 5);
  ck_assert_uint_eq(r.words, 2);
  /* white space is not counted, wherever it is */
  r = gate("  ab \t\n cde \u3000");
  ck_assert_uint_eq(r.chars, 5);
  ck_assert_int_eq(r.reason, LIFE_PASSED);
}
END_TEST

START_TEST(test_gate_unicode) {
  /* CJK: characters, not bytes; each ideograph a word */
  life_gate_result r = gate("我喜欢喝绿茶");
  ck_assert_uint_eq(r.chars, 6);
  ck_assert_uint_eq(r.words, 6);
  ck_assert_uint_eq(r.distinct, 6);
  ck_assert_int_eq(r.reason, LIFE_PASSED);
  r = gate("好的"); /* 2 characters (6 bytes): too short by characters */
  ck_assert_uint_eq(r.chars, 2);
  ck_assert_int_eq(r.reason, LIFE_TOO_SHORT);
  r = gate("哈哈哈哈哈哈"); /* one distinct word of six */
  ck_assert_uint_eq(r.words, 6);
  ck_assert_uint_eq(r.distinct, 1);
  ck_assert_int_eq(r.reason, LIFE_LOW_INFORMATION);
  r = gate("東京で寿司を食べた");
  ck_assert_uint_eq(r.chars, 9);
  ck_assert_uint_eq(r.words, 9);
  ck_assert_int_eq(r.reason, LIFE_PASSED);
  /* mixed: a Latin run inside a CJK token is one word */
  r = gate("我的iPhone坏了");
  ck_assert_uint_eq(r.words, 5);
  /* accented Latin, Cyrillic, Greek: words by the tokenizer, characters by code point */
  r = gate("Café crème brûlée");
  ck_assert_uint_eq(r.chars, 15);
  ck_assert_uint_eq(r.words, 3);
  ck_assert_int_eq(r.reason, LIFE_PASSED);
  r = gate("Привет мир");
  ck_assert_uint_eq(r.chars, 9);
  ck_assert_uint_eq(r.words, 2);
  ck_assert_int_eq(r.reason, LIFE_PASSED);
  /* case folding makes words the same */
  r = gate("Echo ECHO echo eCHO");
  ck_assert_uint_eq(r.distinct, 1);
  ck_assert_int_eq(r.reason, LIFE_LOW_INFORMATION);
  /* invalid UTF-8 is counted, never read past */
  const char bad[] = "abc \xff\xfe def \xe4\xb8";
  life_gate_result rb;
  ck_assert_int_eq(life_gate(NULL, bad, sizeof bad - 1, &rb), LIFE_OK);
  ck_assert_uint_ge(rb.words, 2);
  ck_assert_int_eq(life_gate(NULL, NULL, 0, &rb), LIFE_OK);
  ck_assert_int_eq(rb.reason, LIFE_TRIVIAL);
}
END_TEST

START_TEST(test_gate_low_information) {
  life_gate_result r = gate("ha ha ha ha");
  ck_assert_uint_eq(r.words, 4);
  ck_assert_uint_eq(r.distinct, 1);
  ck_assert_double_eq_tol(r.distinct_ratio, 0.25, EPS);
  ck_assert_int_eq(r.reason, LIFE_LOW_INFORMATION);
  /* the boundary: 0.4 passes, below does not */
  ASSERT_REASON("aa bb aa bb aa", LIFE_PASSED);    /* 2 / 5 = 0.4 */
  ASSERT_REASON("aa bb aa bb aa aa", LIFE_LOW_INFORMATION); /* 2 / 6 */
  /* few word characters among many symbols */
  r = gate("!!!! ?? okay then ?? !!!! #### $$$$ %%%% &&&&");
  ck_assert_double_lt(r.alnum_ratio, 0.25);
  ck_assert_int_eq(r.reason, LIFE_LOW_INFORMATION);
  /* the window: a long varied text keeps a high ratio however long */
  char buf[20000];
  size_t n = 0;
  for (int i = 0; i < 1000; i++) n += (size_t)snprintf(buf + n, sizeof buf - n, "w%d ", i % 300);
  life_gate_result rl;
  ck_assert_int_eq(life_gate(NULL, buf, n, &rl), LIFE_OK);
  ck_assert_uint_eq(rl.words, 1000);
  ck_assert_uint_eq(rl.distinct, 64);
  ck_assert_double_eq(rl.distinct_ratio, 1.0);
  ck_assert_double_eq(rl.information, 1.0);
  ck_assert_int_eq(rl.reason, LIFE_PASSED);
}
END_TEST

START_TEST(test_gate_options) {
  life_gate_opts o;
  life_gate_opts_default(&o);
  o.trivial = 0;
  ck_assert_int_eq(gate_with(&o, "ok").reason, LIFE_TOO_SHORT);
  o.min_chars = 0;
  o.min_words = 0;
  ck_assert_int_eq(gate_with(&o, "ok").reason, LIFE_PASSED);
  ck_assert_int_eq(gate_with(&o, "ha ha ha ha").reason, LIFE_LOW_INFORMATION);
  o.min_distinct_ratio = 0;
  ck_assert_int_eq(gate_with(&o, "ha ha ha ha").reason, LIFE_PASSED);
  ck_assert_int_eq(gate_with(&o, "!!!! ?? ok ?? !!!!").reason, LIFE_LOW_INFORMATION);
  o.min_alnum_ratio = 0;
  ck_assert_int_eq(gate_with(&o, "!!!! ?? ok ?? !!!!").reason, LIFE_PASSED);
  /* everything off: everything passes, the empty text too */
  ck_assert_int_eq(gate_with(&o, "").reason, LIFE_PASSED);
  life_gate_opts_default(&o);
  o.min_chars = 100;
  ck_assert_int_eq(gate_with(&o, "the meeting moved to Tuesday").reason, LIFE_TOO_SHORT);
  life_gate_opts_default(&o);
  o.min_words = 6;
  ck_assert_int_eq(gate_with(&o, "the meeting moved to Tuesday").reason, LIFE_TOO_SHORT);
  o.min_words = 5;
  ck_assert_int_eq(gate_with(&o, "the meeting moved to Tuesday").reason, LIFE_PASSED);
  /* bad ratios */
  life_gate_result r;
  life_gate_opts_default(&o);
  o.min_distinct_ratio = 1.5;
  ck_assert_int_eq(life_gate(&o, "x", 1, &r), LIFE_EINVAL);
  o.min_distinct_ratio = NAN;
  ck_assert_int_eq(life_gate_check(&o), LIFE_EINVAL);
  life_gate_opts_default(&o);
  o.min_alnum_ratio = -0.1;
  ck_assert_int_eq(life_gate_check(&o), LIFE_EINVAL);
}
END_TEST

START_TEST(test_gate_deterministic) {
  const char *t = "Alice moved to Lisbon in March and started at the observatory";
  life_gate_result a = gate(t), b = gate(t);
  ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
  ck_assert_int_eq(a.reason, LIFE_PASSED);
  ck_assert_uint_eq(a.words, 11);
  ck_assert_uint_eq(a.distinct, 11);
  ck_assert_double_eq_tol(a.information, log1p(11.0) / log1p(32.0), EPS);
  ck_assert_double_eq(a.alnum_ratio, 1.0);
}
END_TEST

/* ------------------------------------------------------------------ score */

static life_record rec(double imp, int64_t ts, int64_t n, int64_t last) {
  life_record r = {.has_importance = 1, .importance = imp, .has_ts = 1, .ts = ts,
                   .access_count = n, .has_last_access = last != 0, .last_access = last};
  return r;
}

START_TEST(test_score_defaults) {
  life_score_opts o;
  memset(&o, 0x5a, sizeof o);
  life_score_opts_default(&o);
  ck_assert_double_eq(o.half_life, 7 * 86400.0);
  ck_assert_double_eq(o.w_importance, 0.4);
  ck_assert_double_eq(o.w_recency, 0.4);
  ck_assert_double_eq(o.w_access, 0.2);
  ck_assert_double_eq(o.access_full, 100);
  ck_assert_double_eq(o.default_importance, 0.5);
  ck_assert_int_eq(life_score_check(&o), LIFE_OK);
}
END_TEST

START_TEST(test_score_formula) {
  const int64_t now = 1800000000;
  life_score_parts p;
  life_record r = rec(0.8, now - 3 * 86400, 5, now - 86400);
  double s = life_score(NULL, &r, now, &p);
  double R = pow(0.5, 1.0 / 7.0), A = log1p(5.0) / log1p(100.0);
  ck_assert_double_eq_tol(p.importance, 0.8, EPS);
  ck_assert_double_eq_tol(p.recency, R, EPS);
  ck_assert_double_eq_tol(p.access, A, EPS);
  ck_assert_double_eq_tol(s, 0.4 * 0.8 + 0.4 * R + 0.2 * A, EPS);
  /* NULL importance: the default */
  r.has_importance = 0;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.importance, 0.5);
  r.has_importance = 1;
  r.importance = NAN;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.importance, 0.5);
  /* clamped */
  r.importance = 7;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.importance, 1);
  r.importance = -3;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.importance, 0);
  /* no time at all: recency 0; the future: 1 */
  r = rec(0.5, 0, 0, 0);
  r.has_ts = 0;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.recency, 0);
  r = rec(0.5, now + 1000, 0, 0);
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.recency, 1);
  /* last_access alone */
  r.has_ts = 0;
  r.has_last_access = 1;
  r.last_access = now - 14 * 86400;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq_tol(p.recency, 0.25, EPS);
  /* the access part saturates at access_full; negative counts are 0 */
  r = rec(0.5, now, 100, 0);
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.access, 1);
  r.access_count = 1000000;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.access, 1);
  r.access_count = -4;
  life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.access, 0);
  /* extreme times do not overflow */
  r = rec(0.5, INT64_MIN, 0, INT64_MAX);
  s = life_score(NULL, &r, now, &p);
  ck_assert_double_eq(p.recency, 1);
  r = rec(0.5, INT64_MIN, 0, 0);
  s = life_score(NULL, &r, INT64_MAX, &p);
  ck_assert_double_eq(p.recency, 0);
  ck_assert(s >= 0 && s <= 1);
}
END_TEST

START_TEST(test_score_half_life) {
  const int64_t now = 1800000000;
  life_score_opts o;
  life_score_opts_default(&o);
  life_score_parts p;
  for (int days = 1; days <= 365; days *= 3) {
    o.half_life = days * 86400.0;
    life_record r = rec(0.5, now - (int64_t)days * 86400, 0, 0);
    life_score(&o, &r, now, &p);
    ck_assert_double_eq(p.recency, 0.5); /* exactly */
    r = rec(0.5, now - 2 * (int64_t)days * 86400, 0, 0);
    life_score(&o, &r, now, &p);
    ck_assert_double_eq(p.recency, 0.25);
    r = rec(0.5, now, 0, 0);
    life_score(&o, &r, now, &p);
    ck_assert_double_eq(p.recency, 1);
  }
  /* the more recent of ts and last_access counts */
  o.half_life = 86400;
  life_record r = rec(0.5, now - 10 * 86400, 0, now - 86400);
  life_score(&o, &r, now, &p);
  ck_assert_double_eq(p.recency, 0.5);
}
END_TEST

START_TEST(test_score_monotone) {
  const int64_t now = 1800000000;
  t_rng g = {t_seed()};
  for (int i = 0; i < 2000; i++) {
    double imp = (t_unit(&g) + 1) / 2;
    int64_t age = (int64_t)(t_next(&g) % (400 * 86400));
    int64_t n = (int64_t)(t_next(&g) % 500);
    life_record r = rec(imp, now - age, n, 0);
    double s = life_score(NULL, &r, now, NULL);
    T_CHECK(s >= 0 && s <= 1, "score %g out of [0, 1]", s);
    life_record older = rec(imp, now - age - 3600, n, 0);
    /* (strictly while the recency part is not lost in the sum's rounding) */
    double so = life_score(NULL, &older, now, NULL);
    T_CHECK(so <= s && (age > 60 * 86400 || so < s), "older scores lower (age %lld)", (long long)age);
    life_record used = rec(imp, now - age, n + 1, 0);
    if (n < 100)
      T_CHECK(life_score(NULL, &used, now, NULL) > s, "more used scores higher (n %lld)", (long long)n);
    else
      T_CHECK(life_score(NULL, &used, now, NULL) == s, "saturated (n %lld)", (long long)n);
    life_record imp2 = rec(imp + 0.01, now - age, n, 0);
    if (imp + 0.01 <= 1)
      T_CHECK(life_score(NULL, &imp2, now, NULL) > s, "more important scores higher (%g)", imp);
    /* deterministic */
    T_CHECK(life_score(NULL, &r, now, NULL) == s, "same score twice");
  }
  /* the extremes */
  life_record best = rec(1, now, 100, 0), worst = rec(0, 0, 0, 0);
  ck_assert_double_eq(life_score(NULL, &best, now, NULL), 1);
  ck_assert_double_eq_tol(life_score(NULL, &worst, now, NULL), 0, 1e-300);
}
END_TEST

START_TEST(test_score_options) {
  life_score_opts o;
  const int64_t now = 1800000000;
  life_record r = rec(0.3, now - 86400, 9, 0);
  life_score_parts p;
  /* weights are normalised by their sum */
  life_score_opts_default(&o);
  o.w_importance = 2;
  o.w_recency = 0;
  o.w_access = 0;
  ck_assert_double_eq_tol(life_score(&o, &r, now, &p), 0.3, EPS);
  o.w_importance = 1;
  o.w_recency = 1;
  o.w_access = 2;
  double s = life_score(&o, &r, now, &p);
  ck_assert_double_eq_tol(s, (p.importance + p.recency + 2 * p.access) / 4, EPS);
  o.access_full = 9;
  life_score(&o, &r, now, &p);
  ck_assert_double_eq(p.access, 1);
  /* refusals */
  life_score_opts_default(&o);
  o.half_life = 0;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  o.half_life = -1;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  o.half_life = NAN;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  o.half_life = INFINITY;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  life_score_opts_default(&o);
  o.w_access = -0.1;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  o.w_access = 0;
  o.w_recency = 0;
  o.w_importance = 0;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  life_score_opts_default(&o);
  o.access_full = 0;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
  life_score_opts_default(&o);
  o.default_importance = 1.5;
  ck_assert_int_eq(life_score_check(&o), LIFE_EINVAL);
}
END_TEST

/* ------------------------------------------------ importance and strategies */

START_TEST(test_importance) {
  float a[4] = {1, 0, 0, 0}, b[4] = {0, 1, 0, 0}, c[4] = {1, 1, 0, 0};
  float working[8] = {1, 0, 0, 0, 0, 0, 1, 0};
  life_gate_result g = gate("Alice moved to Lisbon in March and started at the observatory");
  double info = g.information;
  /* a copy of a working memory: novelty 0 */
  ck_assert_double_eq_tol(life_importance(a, working, 2, 4, &g, LIFE_W_NOVELTY), 0.3 * info, 1e-6);
  /* orthogonal to all: novelty 1 */
  ck_assert_double_eq_tol(life_importance(b, working, 2, 4, &g, LIFE_W_NOVELTY), 0.7 + 0.3 * info, 1e-6);
  /* 45 degrees: novelty 1 - cos 45 */
  ck_assert_double_eq_tol(life_importance(c, working, 2, 4, &g, LIFE_W_NOVELTY),
                          0.7 * (1 - sqrt(0.5)) + 0.3 * info, 1e-6);
  /* nothing to compare with: novel; no embedding: 0.5 */
  ck_assert_double_eq_tol(life_importance(a, NULL, 0, 4, &g, LIFE_W_NOVELTY), 0.7 + 0.3 * info, EPS);
  ck_assert_double_eq_tol(life_importance(NULL, working, 2, 4, &g, LIFE_W_NOVELTY), 0.35 + 0.3 * info, EPS);
  /* the weight */
  ck_assert_double_eq_tol(life_importance(b, working, 2, 4, &g, 1.0), 1.0, 1e-6);
  ck_assert_double_eq_tol(life_importance(b, working, 2, 4, &g, 0.0), info, EPS);
  ck_assert_double_eq_tol(life_importance(b, working, 2, 4, &g, 7.0), 1.0, 1e-6);
  /* opposite vectors: distance 2, novelty clamped to 1 */
  float na[4] = {-1, 0, 0, 0};
  double v = life_importance(na, working, 1, 4, &g, 1.0);
  ck_assert(v <= 1.0 && v >= 0.999999);
  ck_assert_double_eq(life_nearest(a, working, 0, 4), 2.0);
  ck_assert_double_eq_tol(life_nearest(c, working, 2, 4), 1 - sqrt(0.5), 1e-6);
}
END_TEST

START_TEST(test_strategies) {
  ck_assert_str_eq(life_strategy_name(LIFE_EVERY_EXCHANGE), "every_exchange");
  ck_assert_str_eq(life_strategy_name(LIFE_ALWAYS), "always");
  ck_assert_str_eq(life_strategy_name(LIFE_SEMANTIC_SHIFT), "semantic_shift");
  ck_assert_int_eq(life_strategy_from_name("semantic_shift"), LIFE_SEMANTIC_SHIFT);
  ck_assert_int_eq(life_strategy_from_name("always"), LIFE_ALWAYS);
  ck_assert_int_eq(life_strategy_from_name("every_exchange"), LIFE_EVERY_EXCHANGE);
  ck_assert_int_eq(life_strategy_from_name("sometimes"), -1);

  life_gate_result pass = gate("Alice moved to Lisbon in March"), skip = gate("ok thanks");
  ck_assert_int_eq(pass.save, 1);
  ck_assert_int_eq(skip.save, 0);
  float e[3] = {1, 0, 0}, recent[6] = {1, 0.1f, 0, 0, 1, 0};
  float far[3] = {0, 0, 1};
  double d;
  ck_assert_int_eq(life_should_save(LIFE_EVERY_EXCHANGE, &pass, NULL, NULL, 0, 0, 0.3, NULL), 1);
  ck_assert_int_eq(life_should_save(LIFE_EVERY_EXCHANGE, &skip, NULL, NULL, 0, 0, 0.3, NULL), 0);
  ck_assert_int_eq(life_should_save(LIFE_ALWAYS, &skip, NULL, NULL, 0, 0, 0.3, NULL), 1);
  /* near a recent one: no shift */
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &pass, e, recent, 2, 3, 0.3, &d), 0);
  ck_assert_double_lt(d, 0.01);
  /* far from all: a shift; but not what the gate skips */
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &pass, far, recent, 2, 3, 0.3, &d), 1);
  ck_assert_double_eq_tol(d, 1.0, 1e-6);
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &skip, far, recent, 2, 3, 0.3, &d), 0);
  /* the threshold is exclusive */
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &pass, far, recent, 2, 3, 1.0, &d), 0);
  /* nothing recent: a shift (distance 2); no embedding: the gate alone */
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &pass, e, NULL, 0, 3, 0.3, &d), 1);
  ck_assert_double_eq(d, 2.0);
  ck_assert_int_eq(life_should_save(LIFE_SEMANTIC_SHIFT, &pass, NULL, recent, 2, 3, 0.3, &d), 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("life");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_gate_defaults);
  tcase_add_test(tc, test_gate_trivial);
  tcase_add_test(tc, test_gate_too_short);
  tcase_add_test(tc, test_gate_unicode);
  tcase_add_test(tc, test_gate_low_information);
  tcase_add_test(tc, test_gate_options);
  tcase_add_test(tc, test_gate_deterministic);
  tcase_add_test(tc, test_score_defaults);
  tcase_add_test(tc, test_score_formula);
  tcase_add_test(tc, test_score_half_life);
  tcase_add_test(tc, test_score_monotone);
  tcase_add_test(tc, test_score_options);
  tcase_add_test(tc, test_importance);
  tcase_add_test(tc, test_strategies);
  suite_add_tcase(s, tc);
  return t_run(s);
}
