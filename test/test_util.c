/*
** test/test_util.c - lib/util: the JSON vector parser and float printing.
*/
#include "config.h"

#include <check.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "util/vecjson.h"

static int parse(const char *s, float **v, size_t *n, char *err) {
  return util_json_to_f32(s, strlen(s), v, n, err, 256);
}

START_TEST(test_valid) {
  static const struct {
    const char *json;
    size_t n;
    float v[4];
  } cases[] = {
      {"[1,2,3]", 3, {1, 2, 3}},
      {" \t\n[ 1 , -2.5 ,3e2 ]\r\n", 3, {1, -2.5f, 300}},
      {"[0]", 1, {0}},
      {"[-0.0]", 1, {-0.0f}},
      {"[1E-3, 1e+3, 0.125, -7]", 4, {0.001f, 1000, 0.125f, -7}},
      {"[0.1]", 1, {0.1f}},
      {"[3.4028235e38]", 1, {3.4028235e38f}},
      {"[1e-50]", 1, {0}}, /* underflows to zero: accepted */
      /* correctly rounded, once: through a double these land one float off */
      {"[1.0000000596046448]", 1, {1.00000012f}},
      {"[16777217.000000001]", 1, {16777218.0f}},
      {"[7.03853069e-26]", 1, {7.03853069e-26f}},
      {"[]", 0, {0}},
      {"[ ]", 0, {0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float *v = NULL;
    size_t n = 99;
    char err[256] = "";
    T_CHECK(parse(cases[i].json, &v, &n, err) == 0, "%s: %s",
                  cases[i].json, err);
    ck_assert_uint_eq(n, cases[i].n);
    for (size_t j = 0; j < n; j++)
      T_CHECK(memcmp(&v[j], &cases[i].v[j], 4) == 0, "%s [%zu] = %.9g",
                    cases[i].json, j, (double)v[j]);
    free(v);
  }
}
END_TEST

START_TEST(test_invalid) {
  static const struct {
    const char *json;
    const char *msg; /* expected substring of the error */
  } cases[] = {
      {"", "expected '[' at byte 0, found end of input"},
      {"1,2", "expected '[' at byte 0, found '1'"},
      {"[1,2", "expected ',' or ']' at byte 4, found end of input"},
      {"[1,]", "expected a number at byte 3, found ']'"},
      {"[,1]", "expected a number at byte 1"},
      {"[1 2]", "expected ',' or ']' at byte 3, found '2'"},
      {"[1,2]x", "unexpected 'x' at byte 5 after the array"},
      {"[1,2],[3]", "unexpected ',' at byte 5"},
      {"[NaN]", "expected a number at byte 1, found 'N'"},
      {"[nan]", "expected a number at byte 1"},
      {"[Infinity]", "expected a number at byte 1"},
      {"[-Infinity]", "expected a number at byte 1"},
      {"[inf]", "expected a number at byte 1"},
      {"[+1]", "expected a number at byte 1, found '+'"},
      {"[01]", "expected ',' or ']' at byte 2, found '1'"},
      {"[1.]", "expected a number at byte 1"},
      {"[.5]", "expected a number at byte 1"},
      {"[1e]", "expected a number at byte 1"},
      {"[0x10]", "expected ',' or ']' at byte 2, found 'x'"},
      {"[\"1\"]", "expected a number at byte 1, found '\"'"},
      {"[[1]]", "expected a number at byte 1, found '['"},
      {"[null]", "expected a number at byte 1"},
      {"[true]", "expected a number at byte 1"},
      {"[1e39]", "element 0 (1e39) is outside the float32 range"},
      {"[1, -1e400]", "element 1 (-1e400) is outside the float32 range"},
      {"{\"a\":1}", "expected '[' at byte 0, found '{'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float *v = (float *)1;
    size_t n = 99;
    char err[256] = "";
    T_CHECK(parse(cases[i].json, &v, &n, err) == -1, "%s accepted",
                  cases[i].json);
    T_CHECK(strstr(err, cases[i].msg) != NULL, "%s: got \"%s\", want \"%s\"",
                  cases[i].json, err, cases[i].msg);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
  }
}
END_TEST

/* A NUL inside the given length is malformed, not the end of the text. */
START_TEST(test_embedded_nul) {
  const char s[] = "[1,2]\0[3]";
  float *v = NULL;
  size_t n = 0;
  char err[256] = "";
  ck_assert_int_eq(util_json_to_f32(s, sizeof s - 1, &v, &n, err, sizeof err), -1);
  T_CHECK(strstr(err, "unexpected 0x00 at byte 5"), "%s", err);
}
END_TEST

/* A long vector grows the buffer several times. */
START_TEST(test_long) {
  size_t n = 5000;
  char *s = malloc(n * 12 + 3), *p = s;
  *p++ = '[';
  for (size_t i = 0; i < n; i++) p += sprintf(p, "%s%zu.5", i ? "," : "", i);
  *p++ = ']';
  *p = '\0';
  float *v = NULL;
  size_t got = 0;
  char err[256];
  ck_assert_int_eq(parse(s, &v, &got, err), 0);
  ck_assert_uint_eq(got, n);
  for (size_t i = 0; i < n; i++)
    T_CHECK(v[i] == (float)i + 0.5f, "[%zu] = %.9g", i, (double)v[i]);
  free(v);
  free(s);
}
END_TEST

/* Shortest printing reads back exactly and is valid JSON for the parser. */
START_TEST(test_shortest_roundtrip) {
  t_rng rng = {t_seed()};
  char buf[32], json[40];
  for (int i = 0; i < 1000000; i++) {
    uint32_t b = (uint32_t)t_next(&rng);
    float f;
    memcpy(&f, &b, 4);
    if (!isfinite(f)) continue;
    size_t w = util_f32_shortest(f, buf);
    T_CHECK(w == strlen(buf), "length of %s", buf);
    T_CHECK(strtof(buf, NULL) == f, "%s != 0x%08x", buf, b);
    snprintf(json, sizeof json, "[%s]", buf);
    float *v = NULL;
    size_t n = 0;
    char err[256];
    T_CHECK(parse(json, &v, &n, err) == 0, "%s: %s", json, err);
    T_CHECK(n == 1 && memcmp(&v[0], &f, 4) == 0, "%s parsed back wrong", json);
    free(v);
  }
  /* a float whose shortest decimal sits next to a halfway point */
  uint32_t hb = 0x15AE43FD;
  float hf;
  memcpy(&hf, &hb, 4);
  util_f32_shortest(hf, buf);
  float *hv = NULL;
  size_t hn = 0;
  char herr[256];
  snprintf(json, sizeof json, "[%s]", buf);
  ck_assert_int_eq(parse(json, &hv, &hn, herr), 0);
  ck_assert_msg(hn == 1 && memcmp(&hv[0], &hf, 4) == 0, "%s", json);
  free(hv);
  static const struct { float f; const char *s; } known[] = {
      {0.1f, "0.1"}, {1.0f, "1"}, {-2.5f, "-2.5"}, {1e-7f, "1e-07"},
      {0.0f, "0"}, {3.4028235e38f, "3.4028235e+38"}, {16777216.0f, "16777216"},
  };
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    util_f32_shortest(known[i].f, buf);
    ck_assert_str_eq(buf, known[i].s);
  }
}
END_TEST

/* A host that sets a comma-decimal locale must not change parsing. */
START_TEST(test_locale_independent) {
  const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
  const char *set = NULL;
  for (size_t i = 0; i < sizeof locs / sizeof locs[0] && !set; i++)
    set = setlocale(LC_NUMERIC, locs[i]);
  if (!set) {
    /* CI installs de_DE.UTF-8 and sets this, so there the test is real */
    ck_assert_msg(getenv("H5MEM_REQUIRE_COMMA_LOCALE") == NULL,
                  "no comma-decimal locale installed (de_DE.UTF-8 etc.)");
    printf("test_util: no comma-decimal locale installed; checked in C only\n");
  }
  float *v = NULL;
  size_t n = 0;
  char err[256], buf[32];
  ck_assert_int_eq(parse("[1.5, 2.25]", &v, &n, err), 0);
  ck_assert(n == 2 && v[0] == 1.5f && v[1] == 2.25f);
  free(v);
  util_f32_shortest(1.5f, buf);
  ck_assert_str_eq(buf, "1.5");
  setlocale(LC_NUMERIC, "C");
}
END_TEST

int main(void) {
  Suite *s = suite_create("util");
  TCase *tc = tcase_create("vecjson");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_valid);
  tcase_add_test(tc, test_invalid);
  tcase_add_test(tc, test_embedded_nul);
  tcase_add_test(tc, test_long);
  tcase_add_test(tc, test_shortest_roundtrip);
  tcase_add_test(tc, test_locale_independent);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
