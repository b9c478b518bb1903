/*
** test/unit/test_util.c - lib/util: the JSON vector parser and float printing,
** the JSON validator, ISO 8601 timestamps, the UTF-8 checker.
*/
#include "config.h"

#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "ann/ann.h"
#include "graph/graph.h"
#include "h5/h5.h"
#include "store/gate.h"
#include "store/store.h"
#include "store/wal.h"
#include "text/bm25.h"
#include "text/hashembed.h"
#include "util/err.h"
#include "util/json.h"
#include "util/jsstr.h"
#include "util/le.h"
#include "util/strbuf.h"
#include "util/timefmt.h"
#include "util/utf8.h"
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

/* int8 vectors: JSON integers from -128 to 127, nothing else; the same
** JSON syntax checks as float32 (one walker). */
START_TEST(test_i8) {
  static const struct {
    const char *json;
    int ok;
    size_t n;
    int8_t v[4];
    const char *msg;
  } cases[] = {
      {"[1, -2, 127, -128]", 1, 4, {1, -2, 127, -128}, NULL},
      {" [ -0 ,0]\n", 1, 2, {0, 0}, NULL},
      {"[]", 1, 0, {0}, NULL},
      {"[128]", 0, 0, {0}, "element 0 (128) is outside the int8 range (-128 to 127)"},
      {"[5, -129]", 0, 0, {0}, "element 1 (-129) is outside the int8 range"},
      {"[99999999999999999999999]", 0, 0, {0}, "outside the int8 range"},
      {"[1.0]", 0, 0, {0}, "element 0 (1.0) is not an integer"},
      {"[1e2]", 0, 0, {0}, "element 0 (1e2) is not an integer"},
      {"[-5E0]", 0, 0, {0}, "not an integer"},
      {"[1 2]", 0, 0, {0}, "expected ',' or ']' at byte 3"},
      {"[+1]", 0, 0, {0}, "expected a number at byte 1"},
      {"[01]", 0, 0, {0}, "expected ',' or ']' at byte 2"},
      {"[1,]", 0, 0, {0}, "expected a number at byte 3"},
      {"[1]x", 0, 0, {0}, "unexpected 'x' at byte 3 after the array"},
      {"1", 0, 0, {0}, "expected '[' at byte 0"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int8_t *v = (int8_t *)1;
    size_t n = 99;
    char err[256] = "";
    const char *s = cases[i].json;
    int rc = util_json_to_i8(s, strlen(s), &v, &n, err, sizeof err);
    if (cases[i].ok) {
      T_CHECK(rc == 0, "%s: %s", s, err);
      ck_assert_uint_eq(n, cases[i].n);
      if (n) ck_assert_mem_eq(v, cases[i].v, n);
      if (!n) ck_assert_ptr_null(v);
    } else {
      T_CHECK(rc == -1, "%s accepted", s);
      T_CHECK(strstr(err, cases[i].msg) != NULL, "%s: got \"%s\", want \"%s\"", s, err, cases[i].msg);
      ck_assert_ptr_null(v);
      ck_assert_uint_eq(n, 0);
    }
    free(v == (int8_t *)1 ? NULL : v);
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

/* LC_NUMERIC set to a comma-decimal locale; when none is installed, says
** that what (a test's subject) is checked in the "C" locale only, and
** fails where H5MEM_REQUIRE_COMMA_LOCALE is set (CI installs de_DE.UTF-8
** and sets it, so there the tests are real).  1 when one was set. */
static int set_comma_locale(const char *what) {
  const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
  const char *set = NULL;
  for (size_t i = 0; i < sizeof locs / sizeof locs[0] && !set; i++)
    set = setlocale(LC_NUMERIC, locs[i]);
  if (set) return 1;
  ck_assert_msg(getenv("H5MEM_REQUIRE_COMMA_LOCALE") == NULL,
                "no comma-decimal locale installed (de_DE.UTF-8 etc.)");
  printf("test_util: no comma-decimal locale installed; %s checked in C only\n", what);
  return 0;
}

/* A host that sets a comma-decimal locale must not change parsing. */
START_TEST(test_locale_independent) {
  set_comma_locale("parsing");
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

/* ------------------------------------------------------------------ json */

/* The text in a malloc'd buffer of exactly len bytes, no NUL after it, so
** that ASan sees any read past the end. */
static char *exact_copy(const char *s, size_t len) {
  char *p = malloc(len ? len : 1);
  ck_assert_ptr_nonnull(p);
  memcpy(p, s, len);
  return p;
}

/* A second, deliberately different validator to compare against in the
** fuzz loop: recursive descent (depth bounded by the same limit), UTF-8
** decoded to a code point and checked by value. */
typedef struct {
  const unsigned char *p, *e;
} ref_json;

static void ref_ws(ref_json *r) {
  while (r->p < r->e && *r->p && strchr(" \t\n\r", *r->p)) r->p++;
}

static int ref_hex4(ref_json *r, unsigned *u) {
  char tmp[5] = {0};
  if (r->e - r->p < 4) return -1;
  memcpy(tmp, r->p, 4);
  if (strspn(tmp, "0123456789abcdefABCDEF") != 4) return -1;
  *u = (unsigned)strtoul(tmp, NULL, 16);
  r->p += 4;
  return 0;
}

static int ref_string(ref_json *r) {
  static const uint32_t least[4] = {0, 0x80, 0x800, 0x10000};
  r->p++;
  for (;;) {
    if (r->p >= r->e) return -1;
    unsigned c = *r->p++;
    if (c == '"') return 0;
    if (c < 0x20) return -1;
    if (c == '\\') {
      if (r->p >= r->e) return -1;
      c = *r->p++;
      if (c == 'u') {
        unsigned hi, lo;
        if (ref_hex4(r, &hi) || (hi >= 0xdc00 && hi <= 0xdfff)) return -1;
        if (hi < 0xd800 || hi > 0xdbff) continue;
        if (r->e - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') return -1;
        r->p += 2;
        if (ref_hex4(r, &lo) || lo < 0xdc00 || lo > 0xdfff) return -1;
      } else if (!c || !strchr("\"\\/bfnrt", (int)c)) {
        return -1;
      }
    } else if (c >= 0x80) {
      int n = c >= 0xf8 ? -1 : c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : -1;
      if (n < 0 || r->e - r->p < n) return -1;
      uint32_t cp = c & (0x3fu >> n);
      for (int k = 0; k < n; k++) {
        if ((r->p[k] & 0xc0) != 0x80) return -1;
        cp = cp << 6 | (r->p[k] & 0x3fu);
      }
      r->p += n;
      if (cp < least[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    }
  }
}

static size_t ref_digits(ref_json *r) {
  const unsigned char *q = r->p;
  while (r->p < r->e && *r->p >= '0' && *r->p <= '9') r->p++;
  return (size_t)(r->p - q);
}

static int ref_number(ref_json *r) {
  if (*r->p == '-') r->p++;
  const unsigned char *first = r->p;
  size_t n = ref_digits(r);
  if (n == 0 || (n > 1 && *first == '0')) return -1;
  if (r->p < r->e && *r->p == '.') {
    r->p++;
    if (!ref_digits(r)) return -1;
  }
  if (r->p < r->e && (*r->p | 0x20) == 'e') {
    r->p++;
    if (r->p < r->e && (*r->p == '+' || *r->p == '-')) r->p++;
    if (!ref_digits(r)) return -1;
  }
  return 0;
}

static int ref_word(ref_json *r, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(r->e - r->p) < n || memcmp(r->p, w, n)) return -1;
  r->p += n;
  return 0;
}

static int ref_value(ref_json *r, int depth) {
  ref_ws(r);
  if (r->p >= r->e) return -1;
  unsigned char c = *r->p;
  if (c == '{' || c == '[') {
    unsigned char close = c == '{' ? '}' : ']';
    if (depth == UTIL_JSON_MAX_DEPTH) return -1;
    r->p++;
    ref_ws(r);
    if (r->p < r->e && *r->p == close) {
      r->p++;
      return 0;
    }
    for (;;) {
      if (close == '}') {
        ref_ws(r);
        if (r->p >= r->e || *r->p != '"' || ref_string(r)) return -1;
        ref_ws(r);
        if (r->p >= r->e || *r->p++ != ':') return -1;
      }
      if (ref_value(r, depth + 1)) return -1;
      ref_ws(r);
      if (r->p >= r->e) return -1;
      c = *r->p++;
      if (c == close) return 0;
      if (c != ',') return -1;
    }
  }
  if (c == '"') return ref_string(r);
  if (c == 't') return ref_word(r, "true");
  if (c == 'f') return ref_word(r, "false");
  if (c == 'n') return ref_word(r, "null");
  if (c == '-' || (c >= '0' && c <= '9')) return ref_number(r);
  return -1;
}

static int ref_json_valid(const char *s, size_t len) {
  ref_json r = {(const unsigned char *)s, (const unsigned char *)s + len};
  if (ref_value(&r, 0)) return -1;
  ref_ws(&r);
  return r.p == r.e ? 0 : -1;
}

/* A string literal with its length (NULs inside count). */
#define J(lit) lit, sizeof(lit) - 1

static const struct {
  const char *s;
  size_t len;
  const char *msg; /* NULL: valid; else a substring of the error */
} json_cases[] = {
    /* valid */
    {J("{}"), NULL},
    {J("[]"), NULL},
    {J("0"), NULL},
    {J("-0"), NULL},
    {J("-0.0e-0"), NULL},
    {J("1e5"), NULL},
    {J("1E+5"), NULL},
    {J("1e-5"), NULL},
    {J("0.5"), NULL},
    {J("-1.25e-10"), NULL},
    {J("123456789012345678901234567890"), NULL},
    {J("1.5E-300"), NULL},
    {J("1e99999"), NULL}, /* the grammar has no range */
    {J("true"), NULL},
    {J("false"), NULL},
    {J("null"), NULL},
    {J("\"\""), NULL},
    {J("\"abc\""), NULL},
    {J("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), NULL}, /* every short escape */
    {J("\"\\u0000\""), NULL},
    {J("\"\\u00e9\\u20AC\\uFFFF\""), NULL},
    {J("\"\\uD83D\\uDE00\""), NULL}, /* a surrogate pair */
    {J("\"\\udbff\\udfff\""), NULL},
    {J("\"\\uD800\\uDC00x\""), NULL},
    {J("\"\xc3\xa9\""), NULL},             /* U+00E9 */
    {J("\"\xe2\x82\xac\""), NULL},         /* U+20AC */
    {J("\"\xf0\x9f\x98\x80\""), NULL},     /* U+1F600 */
    {J("\"\xf4\x8f\xbf\xbf\""), NULL},     /* U+10FFFF */
    {J("\"\xef\xbf\xbf\""), NULL},         /* U+FFFF */
    {J("\"\xee\x80\x80\""), NULL},         /* U+E000 */
    {J("\"\xed\x9f\xbf\""), NULL},         /* U+D7FF */
    {J("\"\xc2\x80\""), NULL},             /* U+0080 */
    {J("\"\xe0\xa0\x80\""), NULL},         /* U+0800 */
    {J("\"\xf0\x90\x80\x80\""), NULL},     /* U+10000 */
    {J("\"\x7f\""), NULL},                 /* DEL is not a control here */
    {J(" \t\r\n{\"a\" : [1, 2.5, {\"b\": null}], \"c\": true } \n"), NULL},
    {J("{\"a\":1,\"a\":2}"), NULL},
    {J("{\"\":\"\"}"), NULL},
    {J("[[[[]]]]"), NULL},
    {J("[1,\"x\",{},[],null,false,true]"), NULL},
    {J(" 1 "), NULL},
    {J("\"/\""), NULL},
    /* invalid: empty and whitespace */
    {J(""), "expected a value at byte 0, found end of input"},
    {J("   "), "expected a value at byte 3, found end of input"},
    {J("\v1"), "expected a value at byte 0, found 0x0b"},
    {J("\xef\xbb\xbf{}"), "expected a value at byte 0, found 0xef"}, /* BOM */
    /* numbers */
    {J("01"), "leading zero in a number at byte 0"},
    {J("-01"), "leading zero in a number at byte 1"},
    {J(".5"), "expected a value at byte 0, found '.'"},
    {J("1."), "expected a digit after '.' at byte 2, found end of input"},
    {J("1.e5"), "expected a digit after '.' at byte 2, found 'e'"},
    {J("+1"), "expected a value at byte 0, found '+'"},
    {J("-"), "expected a digit at byte 1, found end of input"},
    {J("1e"), "expected a digit in the exponent at byte 2"},
    {J("1e+"), "expected a digit in the exponent at byte 3"},
    {J("NaN"), "expected a value at byte 0, found 'N'"},
    {J("Infinity"), "expected a value at byte 0, found 'I'"},
    {J("-Infinity"), "expected a digit at byte 1, found 'I'"},
    {J("0x10"), "unexpected 'x' at byte 1 after the value"},
    {J("1e5.5"), "unexpected '.' at byte 3 after the value"},
    /* literals */
    {J("tru"), "invalid literal at byte 0 (expected true)"},
    {J("nul"), "invalid literal at byte 0 (expected null)"},
    {J("fals e"), "invalid literal at byte 0 (expected false)"},
    {J("True"), "expected a value at byte 0, found 'T'"},
    /* structure */
    {J("[1,]"), "expected a value at byte 3, found ']'"},
    {J("{\"a\":1,}"), "expected a string key at byte 7, found '}'"},
    {J("[1,,2]"), "expected a value at byte 3, found ','"},
    {J("[,]"), "expected a value at byte 1, found ','"},
    {J("[1 2]"), "expected ',' or ']' at byte 3, found '2'"},
    {J("{\"a\":1 \"b\":2}"), "expected ',' or '}' at byte 7, found '\"'"},
    {J("{'a':1}"), "expected a string key at byte 1, found '''"},
    {J("'a'"), "expected a value at byte 0, found '''"},
    {J("[1"), "expected ',' or ']' at byte 2, found end of input"},
    {J("{\"a\""), "expected ':' at byte 4, found end of input"},
    {J("{\"a\" 1}"), "expected ':' at byte 5, found '1'"},
    {J("{\"a\":}"), "expected a value at byte 5, found '}'"},
    {J("{1:2}"), "expected a string key at byte 1, found '1'"},
    {J("]"), "expected a value at byte 0, found ']'"},
    {J("[}"), "expected a value at byte 1, found '}'"},
    {J("{]"), "expected a string key at byte 1, found ']'"},
    {J("[1}"), "expected ',' or ']' at byte 2, found '}'"},
    {J("[1]x"), "unexpected 'x' at byte 3 after the value"},
    {J("1 2"), "unexpected '2' at byte 2 after the value"},
    {J("{} {}"), "unexpected '{' at byte 3 after the value"},
    {J("[1]\f"), "unexpected 0x0c at byte 3 after the value"},
    {J("\"abc\"\0"), "unexpected 0x00 at byte 5 after the value"},
    /* strings */
    {J("\"abc"), "unterminated string starting at byte 0"},
    {J("[\"abc"), "unterminated string starting at byte 1"},
    {J("\"abc\\"), "unterminated string starting at byte 0"},
    {J("\"\\x\""), "invalid escape '\\x' at byte 1"},
    {J("\"\\'\""), "invalid escape '\\'' at byte 1"},
    {J("\"\\U0041\""), "invalid escape '\\U' at byte 1"},
    {J("\"\\u12\""), "expected a hex digit at byte 5, found '\"'"},
    {J("\"\\u12G4\""), "expected a hex digit at byte 5, found 'G'"},
    {J("\"\\u12"), "expected a hex digit at byte 5, found end of input"},
    {J("\"\\uD800\""), "lone surrogate \\uD800 at byte 1"},
    {J("\"\\uDC00\""), "lone surrogate \\uDC00 at byte 1"},
    {J("\"\\uD800\\u0041\""), "lone surrogate \\uD800 at byte 1"},
    {J("\"\\uD800x\""), "lone surrogate \\uD800 at byte 1"},
    {J("\"\\uD800\\n\""), "lone surrogate \\uD800 at byte 1"},
    {J("\"\\uD800\\uD800\""), "lone surrogate \\uD800 at byte 1"},
    {J("\"\\uDE00\\uD83D\""), "lone surrogate \\uDE00 at byte 1"},
    {J("\"ab\\uD83D\\uDE00\\uDE00\""), "lone surrogate \\uDE00 at byte 15"},
    {J("\"\\uD800\\u12\""), "expected a hex digit at byte 11, found '\"'"},
    {J("\"a\nb\""), "control character 0x0a in a string at byte 2"},
    {J("\"\t\""), "control character 0x09 in a string at byte 1"},
    {J("\"a\0b\""), "control character 0x00 in a string at byte 2"},
    {J("\"\x1f\""), "control character 0x1f in a string at byte 1"},
    /* UTF-8 */
    {J("\"\xc0\xaf\""), "invalid UTF-8 at byte 1"},         /* overlong '/' */
    {J("\"\xc1\xbf\""), "invalid UTF-8 at byte 1"},         /* overlong */
    {J("\"\xe0\x80\xaf\""), "invalid UTF-8 at byte 1"},     /* overlong */
    {J("\"\xe0\x9f\xbf\""), "invalid UTF-8 at byte 1"},     /* overlong */
    {J("\"\xf0\x80\x80\xaf\""), "invalid UTF-8 at byte 1"}, /* overlong */
    {J("\"\xf0\x8f\xbf\xbf\""), "invalid UTF-8 at byte 1"}, /* overlong */
    {J("\"\xed\xa0\x80\""), "invalid UTF-8 at byte 1"},     /* U+D800 */
    {J("\"\xed\xbf\xbf\""), "invalid UTF-8 at byte 1"},     /* U+DFFF */
    {J("\"\xf4\x90\x80\x80\""), "invalid UTF-8 at byte 1"}, /* U+110000 */
    {J("\"\xf5\x80\x80\x80\""), "invalid UTF-8 at byte 1"},
    {J("\"\xff\""), "invalid UTF-8 at byte 1"},
    {J("\"\x80\""), "invalid UTF-8 at byte 1"}, /* lone continuation */
    {J("\"a\xc3\""), "invalid UTF-8 at byte 2"},  /* cut short */
    {J("\"\xe2\x82\""), "invalid UTF-8 at byte 1"},
    {J("\"\xe2\x82x\""), "invalid UTF-8 at byte 1"},
    {J("\"\xc3"), "invalid UTF-8 at byte 1"}, /* cut by the end */
    {J("\"\xf0\x9f\x98"), "invalid UTF-8 at byte 1"},
    {J("[\"ok\", \"\xc3\xa9\", \"\xc3\xc3\"]"), "invalid UTF-8 at byte 14"},
};

START_TEST(test_json_table) {
  size_t nvalid = 0;
  for (size_t i = 0; i < sizeof json_cases / sizeof json_cases[0]; i++) {
    char *s = exact_copy(json_cases[i].s, json_cases[i].len);
    char err[256] = "x";
    int rc = util_json_valid(s, json_cases[i].len, err, sizeof err);
    int ref = ref_json_valid(s, json_cases[i].len);
    if (!json_cases[i].msg) {
      T_CHECK(rc == 0, "case %zu %s: %s", i, json_cases[i].s, err);
      T_CHECK(err[0] == '\0', "case %zu: message on success: %s", i, err);
      nvalid++;
    } else {
      T_CHECK(rc == -1, "case %zu %s accepted", i, json_cases[i].s);
      T_CHECK(strstr(err, json_cases[i].msg) != NULL,
              "case %zu %s: got \"%s\", want \"%s\"", i, json_cases[i].s, err,
              json_cases[i].msg);
    }
    T_CHECK(ref == rc, "case %zu %s: the reference says %d", i,
            json_cases[i].s, ref);
    /* a short buffer gets a truncated, NUL-terminated message */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    util_json_valid(s, json_cases[i].len, tiny, sizeof tiny);
    T_CHECK(memchr(tiny, 0, sizeof tiny) != NULL, "case %zu: no NUL", i);
    /* no message buffer at all */
    T_CHECK(util_json_valid(s, json_cases[i].len, NULL, 0) == rc, "case %zu", i);
    free(s);
  }
  ck_assert_uint_ge(nvalid, 40);
  ck_assert_uint_ge(sizeof json_cases / sizeof json_cases[0], 120);
  ck_assert_int_eq(util_json_valid(NULL, 0, NULL, 0), -1);
}
END_TEST

/* depth levels of open, then value, then the closes; kinds picked by rng
** (NULL: all arrays).  Returns the length. */
static size_t nest(char *buf, int depth, t_rng *rng, const char *value) {
  char *p = buf, kinds[UTIL_JSON_MAX_DEPTH + 8];
  for (int d = 0; d < depth; d++) {
    kinds[d] = rng && (t_next(rng) & 1) ? '{' : '[';
    p += sprintf(p, "%s", kinds[d] == '{' ? "{\"k\":" : "[");
  }
  p += sprintf(p, "%s", value);
  for (int d = depth - 1; d >= 0; d--) *p++ = kinds[d] == '{' ? '}' : ']';
  *p = '\0';
  return (size_t)(p - buf);
}

START_TEST(test_json_depth) {
  char *buf = malloc(8 * (UTIL_JSON_MAX_DEPTH + 8));
  char err[256];
  t_rng rng = {t_seed()};
  size_t n;

  n = nest(buf, UTIL_JSON_MAX_DEPTH, NULL, "1");
  ck_assert_int_eq(util_json_valid(buf, n, err, sizeof err), 0);
  n = nest(buf, UTIL_JSON_MAX_DEPTH, NULL, "[]"); /* 1001 */
  ck_assert_int_eq(util_json_valid(buf, n, err, sizeof err), -1);
  ck_assert_str_eq(err, "nesting deeper than 1000 at byte 1000");
  n = nest(buf, UTIL_JSON_MAX_DEPTH + 1, NULL, "");
  ck_assert_int_eq(util_json_valid(buf, n, err, sizeof err), -1);
  ck_assert_str_eq(err, "nesting deeper than 1000 at byte 1000");
  /* objects count the same */
  memset(buf, 0, 16);
  n = nest(buf, UTIL_JSON_MAX_DEPTH, NULL, "{}");
  buf[0] = '{';
  ck_assert_int_eq(util_json_valid(buf, n, err, sizeof err), -1); /* '{' ']' */
  /* mixed objects and arrays, closed in the right order; then one close
  ** swapped for the other kind at a random depth */
  for (int round = 0; round < 50; round++) {
    int depth = round == 0 ? UTIL_JSON_MAX_DEPTH : 1 + (int)(t_next(&rng) % UTIL_JSON_MAX_DEPTH);
    n = nest(buf, depth, &rng, round & 1 ? "\"v\"" : "0");
    T_CHECK(util_json_valid(buf, n, err, sizeof err) == 0, "depth %d: %s", depth, err);
    T_CHECK(ref_json_valid(buf, n) == 0, "depth %d: reference", depth);
    size_t at = n - 1 - (size_t)(t_next(&rng) % (size_t)depth);
    buf[at] = buf[at] == '}' ? ']' : '}';
    T_CHECK(util_json_valid(buf, n, err, sizeof err) == -1, "depth %d: swapped close at %zu accepted", depth, at);
    T_CHECK(strstr(err, "expected ','") != NULL, "%s", err);
  }
  /* far deeper than the limit: refused at the limit, without recursion */
  size_t big = 1000000;
  char *deep = malloc(big);
  memset(deep, '[', big);
  ck_assert_int_eq(util_json_valid(deep, big, err, sizeof err), -1);
  ck_assert_str_eq(err, "nesting deeper than 1000 at byte 1000");
  free(deep);
  free(buf);
}
END_TEST

START_TEST(test_json_is_object) {
  static const struct { const char *s; int want; } cases[] = {
      {"{}", 1}, {" {\"a\":[1]} \n", 1}, {"[]", 0}, {"{", 0},
      {"\"{}\"", 0}, {"{}x", 0}, {"1", 0}, {"", 0}, {"{\"a\":1,}", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    T_CHECK(util_json_is_object(cases[i].s, strlen(cases[i].s)) == cases[i].want,
            "%s", cases[i].s);
}
END_TEST

/* Reading valid JSON: value ends, paths, string decoding, arrays of strings. */
static int span_is(const char *s, const char *path, const char *want) {
  size_t v0, v1;
  if (util_json_at_path(s, strlen(s), path, &v0, &v1)) return want == NULL;
  return want && v1 - v0 == strlen(want) && !memcmp(s + v0, want, v1 - v0);
}

typedef struct collect {
  char all[256];
  size_t n;
  int calls, stop_at;
} collect;

static int collect_each(void *ctx, const char *str, size_t n) {
  collect *c = ctx;
  ck_assert_int_eq(str[n], 0);
  memcpy(c->all + c->n, str, n);
  c->n += n;
  c->all[c->n++] = '|';
  return ++c->calls == c->stop_at ? 7 : 0;
}

START_TEST(test_json_read) {
  const char *doc = " {\"a\": {\"b\": [1, \"x\\\"]\", {\"c\": null}]}, \"content\": [\"t0\", 2.5e3],"
                    " \"k\\u0041\": 1, \"e\": \"\"} ";
  size_t n = strlen(doc);
  ck_assert_int_eq(util_json_valid(doc, n, NULL, 0), 0);
  ck_assert_uint_eq(util_json_ws(doc, 0, n), 1);
  ck_assert_uint_eq(util_json_end(doc, 1, n), n - 1); /* the object, up to its '}' */
  ck_assert(span_is(doc, "$", "{\"a\": {\"b\": [1, \"x\\\"]\", {\"c\": null}]}, \"content\": "
                              "[\"t0\", 2.5e3], \"k\\u0041\": 1, \"e\": \"\"}"));
  ck_assert(span_is(doc, "a.b", "[1, \"x\\\"]\", {\"c\": null}]"));
  ck_assert(span_is(doc, "a.b.1", "\"x\\\"]\""));
  ck_assert(span_is(doc, "a.b.2.c", "null"));
  ck_assert(span_is(doc, "content.0", "\"t0\""));
  ck_assert(span_is(doc, "content.1", "2.5e3"));
  ck_assert(span_is(doc, "e", "\"\""));
  ck_assert(span_is(doc, "k\\u0041", "1")); /* keys match as written */
  ck_assert(span_is(doc, "kA", NULL));
  ck_assert(span_is(doc, "content.2", NULL));
  ck_assert(span_is(doc, "content.x", NULL));
  ck_assert(span_is(doc, "content.-1", NULL));
  ck_assert(span_is(doc, "a.c", NULL));
  ck_assert(span_is(doc, "e.0", NULL));
  /* strings: escapes, a surrogate pair, \u0000 */
  const char *str = "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\uD83D\\uDE00\\u0000z\" tail";
  char out[64];
  size_t m;
  size_t end = util_json_string(str, 0, strlen(str), out, &m);
  ck_assert_uint_eq(end, strlen(str) - 5);
  const char want[] = "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\0z";
  ck_assert_uint_eq(m, sizeof want - 1);
  ck_assert(!memcmp(out, want, m));
  /* arrays of strings */
  char err[128];
  collect c = {{0}, 0, 0, 0};
  const char *arr = " [\"x\", \"\\u00e9\" ,\"\"] ";
  ck_assert_int_eq(util_json_strings(arr, strlen(arr), collect_each, &c, err, sizeof err), 0);
  ck_assert_int_eq(c.calls, 3);
  ck_assert(c.n == 6 && !memcmp(c.all, "x|\xc3\xa9||", 6));
  collect c2 = {{0}, 0, 0, 2};
  ck_assert_int_eq(util_json_strings(arr, strlen(arr), collect_each, &c2, err, sizeof err), 7);
  ck_assert_int_eq(c2.calls, 2);
  collect c3 = {{0}, 0, 0, 0};
  ck_assert_int_eq(util_json_strings("[]", 2, collect_each, &c3, err, sizeof err), 0);
  ck_assert_int_eq(c3.calls, 0);
  ck_assert_int_eq(util_json_strings("[\"a\",", 5, collect_each, &c3, err, sizeof err), UTIL_EINVAL);
  ck_assert(!strncmp(err, "malformed JSON: ", 16));
  ck_assert_int_eq(util_json_strings("{\"a\":1}", 7, collect_each, &c3, err, sizeof err), UTIL_EINVAL);
  ck_assert_str_eq(err, "not a JSON array");
  ck_assert_int_eq(util_json_strings("[\"a\", 2]", 8, collect_each, &c3, err, sizeof err), UTIL_EINVAL);
  ck_assert_str_eq(err, "element 1 is not a string");
  ck_assert_int_eq(c3.calls, 1);
}
END_TEST

/* Types by json_each's names, for every kind of value. */
START_TEST(test_json_types) {
  static const struct { const char *s; int type; const char *name; } cases[] = {
      {"null", UTIL_JSON_NULL, "null"},        {"true", UTIL_JSON_TRUE, "true"},
      {"false", UTIL_JSON_FALSE, "false"},     {"0", UTIL_JSON_INTEGER, "integer"},
      {"-0", UTIL_JSON_INTEGER, "integer"},    {"123456789012345678901234", UTIL_JSON_INTEGER, "integer"},
      {"1.0", UTIL_JSON_REAL, "real"},         {"1e2", UTIL_JSON_REAL, "real"},
      {"-1E-2", UTIL_JSON_REAL, "real"},       {"\"\"", UTIL_JSON_TEXT, "text"},
      {"\"1.5\"", UTIL_JSON_TEXT, "text"},     {"[]", UTIL_JSON_ARRAY, "array"},
      {"[1.5]", UTIL_JSON_ARRAY, "array"},     {"{}", UTIL_JSON_OBJECT, "object"},
      {"{\"e\": 1e5}", UTIL_JSON_OBJECT, "object"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = strlen(cases[i].s);
    char *s = exact_copy(cases[i].s, n);
    ck_assert_int_eq(util_json_valid(s, n, NULL, 0), 0);
    T_CHECK(util_json_type(s, 0, n) == cases[i].type, "%s", cases[i].s);
    ck_assert_str_eq(util_json_type_name(util_json_type(s, 0, n)), cases[i].name);
    free(s);
  }
  ck_assert_int_eq(util_json_type("1", 1, 1), -1);
  ck_assert_str_eq(util_json_type_name(-1), "");
  ck_assert_str_eq(util_json_type_name(UTIL_JSON_OBJECT + 1), "");
  /* a number at the very end of the text, and one before a ',' */
  ck_assert_int_eq(util_json_type("[2,3.5]", 1, 7), UTIL_JSON_INTEGER);
  ck_assert_int_eq(util_json_type("[2,3.5]", 3, 7), UTIL_JSON_REAL);
}
END_TEST

/* Numbers: integers exact over all of int64 (beyond it clamped, and given
** as a REAL, as SQLite gives them), reals correctly rounded, -0,
** exponents. */
static void number_is(const char *text, int type, int64_t n, double d) {
  size_t len = strlen(text);
  char *s = exact_copy(text, len); /* no NUL after the number: ASan sees a read past it */
  int64_t gn = 12345;
  double gd = 12345;
  int got = util_json_number(s, 0, len, &gn, &gd);
  T_CHECK(got == type, "%s: type %d, want %d", text, got, type);
  if (util_json_type(s, 0, len) == UTIL_JSON_INTEGER) T_CHECK(gn == n, "%s: %lld, want %lld", text, (long long)gn, (long long)n);
  T_CHECK(memcmp(&gd, &d, sizeof d) == 0, "%s: %.17g, want %.17g", text, gd, d);
  free(s);
}

START_TEST(test_json_number) {
  number_is("0", UTIL_JSON_INTEGER, 0, 0.0);
  number_is("-0", UTIL_JSON_INTEGER, 0, 0.0); /* an integer 0, as json_each gives */
  number_is("-0.0", UTIL_JSON_REAL, 0, -0.0);
  number_is("42", UTIL_JSON_INTEGER, 42, 42.0);
  number_is("-17", UTIL_JSON_INTEGER, -17, -17.0);
  number_is("9223372036854775807", UTIL_JSON_INTEGER, INT64_MAX, (double)INT64_MAX);
  number_is("-9223372036854775808", UTIL_JSON_INTEGER, INT64_MIN, (double)INT64_MIN);
  number_is("9007199254740993", UTIL_JSON_INTEGER, 9007199254740993LL, 9007199254740992.0);
  number_is("9223372036854775808", UTIL_JSON_REAL, INT64_MAX, 9223372036854775808.0);
  number_is("-9223372036854775809", UTIL_JSON_REAL, INT64_MIN, -9223372036854775808.0);
  number_is("12345678901234567890", UTIL_JSON_REAL, INT64_MAX, 12345678901234567890.0);
  number_is("1.5", UTIL_JSON_REAL, 0, 1.5);
  number_is("0.1", UTIL_JSON_REAL, 0, 0.1);
  number_is("1e2", UTIL_JSON_REAL, 0, 100.0);
  number_is("1E+2", UTIL_JSON_REAL, 0, 100.0);
  number_is("-2.5e-3", UTIL_JSON_REAL, 0, -0.0025);
  number_is("1e400", UTIL_JSON_REAL, 0, HUGE_VAL);
  number_is("-1e400", UTIL_JSON_REAL, 0, -HUGE_VAL);
  number_is("1e-400", UTIL_JSON_REAL, 0, 0.0);
  number_is("2.2250738585072014e-308", UTIL_JSON_REAL, 0, 2.2250738585072014e-308);
  number_is("1.7976931348623157e308", UTIL_JSON_REAL, 0, 1.7976931348623157e308);
  /* longer than the stack buffer: copied to the heap, still exact */
  char longnum[200];
  memset(longnum, '0', sizeof longnum);
  memcpy(longnum, "0.", 2);
  memcpy(longnum + 150, "15", 2); /* 0.000...15 with 148 zeros */
  longnum[152] = '\0';
  number_is(longnum, UTIL_JSON_REAL, 0, strtod(longnum, NULL));
  char longint[120];
  memset(longint, '9', 100);
  longint[100] = '\0';
  number_is(longint, UTIL_JSON_REAL, INT64_MAX, 1e100);
  /* inside a document: up to the ',' or ']' */
  const char *doc = "[3, -4.25e1]";
  int64_t n;
  double d;
  ck_assert_int_eq(util_json_number(doc, 1, strlen(doc), &n, &d), UTIL_JSON_INTEGER);
  ck_assert(n == 3 && d == 3.0);
  ck_assert_int_eq(util_json_number(doc, 4, strlen(doc), &n, &d), UTIL_JSON_REAL);
  ck_assert(d == -42.5);
  ck_assert_int_eq(util_json_number(doc, 0, strlen(doc), &n, &d), UTIL_EINVAL);
  ck_assert_int_eq(util_json_number("\"1\"", 0, 3, &n, &d), UTIL_EINVAL);
  ck_assert_int_eq(util_json_number("1", 1, 1, &n, &d), UTIL_EINVAL);
}
END_TEST

/* A comma-decimal locale changes nothing (as test_locale_independent). */
START_TEST(test_json_number_locale) {
  if (set_comma_locale("json numbers"))
    ck_assert_double_eq(strtod("1,5", NULL), 1.5); /* the locale is in force */
  number_is("1.5", UTIL_JSON_REAL, 0, 1.5);
  number_is("-2.25e1", UTIL_JSON_REAL, 0, -22.5);
  number_is("7", UTIL_JSON_INTEGER, 7, 7.0);
  setlocale(LC_NUMERIC, "C");
}
END_TEST

/* Decoded strings: escapes, pairs, non-ASCII as it is, and a \u0000 ending
** the string as SQLite's JSON functions end it. */
static void cstr_is(const char *text, const char *want) {
  size_t len = strlen(text), n = 99;
  char *s = exact_copy(text, len);
  ck_assert_int_eq(util_json_valid(s, len, NULL, 0), 0);
  char *got = util_json_cstr(s, 0, len, &n);
  ck_assert_ptr_nonnull(got);
  T_CHECK(!strcmp(got, want) && n == strlen(want), "%s: got \"%s\" (%zu)", text, got, n);
  free(got);
  free(s);
}

START_TEST(test_json_cstr) {
  cstr_is("\"\"", "");
  cstr_is("\"plain\"", "plain");
  cstr_is("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "a\"b\\c/d\b\f\n\r\t");
  cstr_is("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac");
  cstr_is("\"\\uD83D\\uDE00x\"", "\xf0\x9f\x98\x80x");        /* a surrogate pair */
  cstr_is("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf");           /* the last code point */
  cstr_is("\"\xf0\x9f\x98\x80\xc3\xa9\"", "\xf0\x9f\x98\x80\xc3\xa9"); /* raw UTF-8 */
  cstr_is("\"ab\\u0000cd\"", "ab");                              /* ends at NUL */
  cstr_is("\"\\u0000\"", "");
  /* what the readers never see: the validator refuses it */
  static const char *const bad[] = {"\"\\uD800\"", "\"\\uDC00\"", "\"\\uD800\\u0041\"",
                                    "\"\\uDE00\\uD83D\"", "\"\xff\"", "\"\xc0\xaf\"",
                                    "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"a\0b\""};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t n = i == 8 ? 5 : strlen(bad[i]);
    T_CHECK(util_json_valid(bad[i], n, NULL, 0) == -1, "bad %zu accepted", i);
  }
  /* the key of a member, by its offset */
  size_t n;
  char *k = util_json_cstr("{\"k\\u0041\":1}", 1, 13, &n);
  ck_assert_str_eq(k, "kA");
  ck_assert_uint_eq(n, 2);
  free(k);
}
END_TEST

/* JSON text as JSON.parse reads it, JS-UTF-8, and back as JSON.stringify
** writes it. */
static void js_is(const char *json, const char *want, size_t wn, const char *again) {
  size_t n = strlen(json), m;
  T_CHECK(util_json_valid_js(json, n, NULL, 0) == 0, "%s refused", json);
  char *js = util_js_cstr(json, 0, n, &m);
  ck_assert_ptr_nonnull(js);
  T_CHECK(m == wn && !memcmp(js, want, wn), "%s decoded to %zu bytes", json, m);
  T_CHECK(strlen(js) == m, "%s: a NUL byte in JS-UTF-8", json);
  strbuf b = {0};
  util_js_stringify(&b, js, m);
  T_CHECK(!strcmp(b.buf, again), "%s stringified as %s, not %s", json, b.buf, again);
  strbuf_free(&b);
  free(js);
}

static void lower_is(const char *s, const char *want) {
  strbuf b = {0};
  util_js_lower(&b, s, strlen(s));
  T_CHECK(!strcmp(b.buf ? b.buf : "", want), "lower(%s) = %s, not %s", s, b.buf, want);
  strbuf_free(&b);
}

/* toLowerCase as Node's (these answers are Node 20's, ICU 78) */
START_TEST(test_js_lower) {
  lower_is("\xc3\x89" "COLE Zo\xc3\xab", "\xc3\xa9" "cole zo\xc3\xab");
  lower_is("\xce\x9f\xce\x94\xce\x9f\xce\xa3", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82");
  lower_is("\xce\x9f\xce\x94\xce\x9f\xce\xa3.", "\xce\xbf\xce\xb4\xce\xbf\xcf\x82.");
  lower_is("\xce\xa3", "\xcf\x83");
  lower_is("A\xce\xa3'", "a\xcf\x82'");
  lower_is("\xce\x91\xce\xa3'\xce\x91", "\xce\xb1\xcf\x83'\xce\xb1");
  lower_is("\xce\x91\xce\xa3\xcc\x81", "\xce\xb1\xcf\x82\xcc\x81");
  lower_is("\xc4\xb0stanbul", "i\xcc\x87stanbul");
  lower_is("\xc7\x85 \xc7\x84" "A", "\xc7\x86 \xc7\x86" "a");
  lower_is("\xf0\x90\x90\x80x", "\xf0\x90\x90\xa8x");
  lower_is("\xe1\x8e\xa0", "\xea\xad\xb0");
  lower_is("\xe1\xba\x9e", "\xc3\x9f");
  lower_is("\xce\x91\xce\xa3\xce\xa3", "\xce\xb1\xcf\x83\xcf\x82");
  lower_is("a\xc2\xad\xce\xa3", "a\xc2\xad\xcf\x82");
  lower_is("\xce\xa3\xce\x91", "\xcf\x83\xce\xb1");
  lower_is("A\xed\xa0\x80" "B\xc0\x80" "C", "a\xed\xa0\x80" "b\xc0\x80" "c"); /* lone surrogates, U+0000 stay */
  lower_is("\xed\xa0\x80\xce\xa3", "\xed\xa0\x80\xcf\x83");                 /* (no cased letter before) */
  lower_is("", "");
}
END_TEST

START_TEST(test_js_strings) {
  /* what JSON.stringify writes, unchanged */
  js_is("\"plain\"", "plain", 5, "\"plain\"");
  js_is("\"a\\ud800b\"", "a\xed\xa0\x80" "b", 5, "\"a\\ud800b\"");          /* a lone high surrogate */
  js_is("\"\\udfff\"", "\xed\xbf\xbf", 3, "\"\\udfff\"");                    /* a lone low one */
  js_is("\"\\ude00\\ud83d\"", "\xed\xb8\x80\xed\xa0\xbd", 6, "\"\\ude00\\ud83d\""); /* the wrong order: two */
  js_is("\"c\\u0000d\"", "c\xc0\x80" "d", 4, "\"c\\u0000d\"");               /* U+0000 */
  js_is("\"\\u0001\\u001f\\b\\t\\n\\f\\r\\\"\\\\\"", "\x01\x1f\b\t\n\f\r\"\\", 9,
        "\"\\u0001\\u001f\\b\\t\\n\\f\\r\\\"\\\\\"");
  js_is("\"\x7f\xe2\x80\xa8\"", "\x7f\xe2\x80\xa8", 4, "\"\x7f\xe2\x80\xa8\""); /* DEL, U+2028 raw */
  /* what it writes otherwise: a pair and other escapes raw */
  js_is("\"\\ud83d\\ude00\\u0041\\/\"", "\xf0\x9f\x98\x80" "A/", 6, "\"\xf0\x9f\x98\x80" "A/\"");
  js_is("\"\\uD83D\\uDE00\"", "\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"");
  /* the store's form: each lone surrogate and U+0000 a U+FFFD */
  strbuf f = {0};
  ck_assert_uint_eq(util_js_to_utf8(&f, "a\xed\xa0\x80" "b\xc0\x80", 7), 2);
  ck_assert_str_eq(f.buf, "a\xef\xbf\xbd" "b\xef\xbf\xbd");
  f.len = 0;
  ck_assert_uint_eq(util_js_to_utf8(&f, "\xf0\x9f\x98\x80\xed\x9f\xbf", 7), 0); /* U+D7FF is no surrogate */
  ck_assert_uint_eq(f.len, 7);
  strbuf_free(&f);
  ck_assert_int_eq(util_js_special("a\xed\xa0\x80", 4), 1);
  ck_assert_int_eq(util_js_special("a\xc0\x80", 3), 1);
  ck_assert_int_eq(util_js_special("\xed\x9f\xbf\xc3\xa9", 5), 0);
  ck_assert_int_eq(util_js_special("\xed\xa0", 2), 0); /* (cut short: no surrogate) */
  /* the strict readers: lone surrogates refused, or read as U+FFFD */
  ck_assert_int_eq(util_json_valid("\"\\ud800\"", 8, NULL, 0), -1);
  char out[16];
  size_t n;
  util_json_string("\"\\ud800x\\u0000\"", 0, 15, out, &n);
  T_CHECK(n == 5 && !memcmp(out, "\xef\xbf\xbdx\0", 5), "strict decoding: %zu bytes", n);
  /* keeping an original in meta, and reading it back */
  strbuf meta = {0}, got = {0};
  ck_assert_int_eq(util_js_keep(&meta, "name", "plain", 5), 0);
  ck_assert_uint_eq(meta.len, 0);
  ck_assert_int_eq(util_js_keep(&meta, "name", "a\xed\xa0\x80", 4), 1);
  util_js_meta_close(&meta);
  ck_assert_str_eq(meta.buf, "{\"jsonl\":{\"name\":\"\\\"a\\\\ud800\\\"\"}}");
  ck_assert_int_eq(util_json_valid(meta.buf, meta.len, NULL, 0), 0);
  util_js_kept(&got, "a\xef\xbf\xbd", 4, meta.buf, meta.len, "name");
  T_CHECK(got.len == 4 && !memcmp(got.buf, "a\xed\xa0\x80", 4), "kept: %zu bytes", got.len);
  got.len = 0;
  util_js_kept(&got, "b\xef\xbf\xbd", 4, meta.buf, meta.len, "name"); /* stale: the text changed */
  ck_assert_str_eq(got.buf, "b\xef\xbf\xbd");
  got.len = 0;
  util_js_kept(&got, "a\xef\xbf\xbd", 4, meta.buf, meta.len, "entityType"); /* not kept for that field */
  ck_assert_str_eq(got.buf, "a\xef\xbf\xbd");
  got.len = 0;
  util_js_kept(&got, "x", 1, "{\"jsonl\":{\"name\":\"not a literal\"}}", 34, "name");
  ck_assert_str_eq(got.buf, "x");
  got.len = 0;
  util_js_kept(&got, "x", 1, "{broken", 7, "name");
  ck_assert_str_eq(got.buf, "x");
  ck_assert_int_eq(util_js_placeholder("{\"jsonl\":{\"placeholder\":true}}", 30), 1);
  ck_assert_int_eq(util_js_placeholder("{\"jsonl\":{\"placeholder\":1}}", 27), 0);
  ck_assert_int_eq(util_js_placeholder(NULL, 0), 0);
  strbuf_free(&meta);
  strbuf_free(&got);
}
END_TEST

/* The next member of it: the key decoded (or "-" for an element) and the
** value's text, "key=value". */
static void member_text(const util_json_iter *it, char *out, size_t size) {
  char *k = it->object ? util_json_cstr(it->s, it->key, it->len, NULL) : NULL;
  snprintf(out, size, "%s=%.*s", k ? k : "-", (int)(it->v1 - it->v0), it->s + it->v0);
  free(k);
}

static void members_are(const char *text, size_t at, const char *want) {
  size_t len = strlen(text);
  char *s = exact_copy(text, len);
  char all[512] = "", one[128];
  util_json_iter it;
  ck_assert_int_eq(util_json_iter_init(&it, s, at, len), 0);
  while (util_json_next(&it)) {
    member_text(&it, one, sizeof one);
    strcat(all, all[0] ? " " : "");
    strcat(all, one);
  }
  ck_assert_int_eq(util_json_next(&it), 0); /* and it stays at the end */
  T_CHECK(!strcmp(all, want), "%s: got \"%s\", want \"%s\"", text, all, want);
  free(s);
}

START_TEST(test_json_iter) {
  members_are("{}", 0, "");
  members_are("[]", 0, "");
  members_are(" { } ", 1, "");
  members_are("[ ]", 0, "");
  members_are("[1]", 0, "-=1");
  members_are("[1, \"a,b\" , [2, 3], {\"x\": [4]}, null, true, false, -1.5e3]", 0,
              "-=1 -=\"a,b\" -=[2, 3] -={\"x\": [4]} -=null -=true -=false -=-1.5e3");
  /* in order, duplicates each in turn, keys decoded */
  members_are("{\"b\": 1, \"a\": 2, \"b\": 3, \"\\u0062\": 4, \"\": {}}", 0,
              "b=1 a=2 b=3 b=4 ={}");
  members_are("{ \"k\" : \"v\\\"}\" , \"n\":{\"m\":[1,{}]} }", 0, "k=\"v\\\"}\" n={\"m\":[1,{}]}");
  members_are("{\"a\":{\"b\":[7,8]}}", 5, "b=[7,8]"); /* a container inside */
  members_are("{\"a\":{\"b\":[7,8]}}", 10, "-=7 -=8");
  util_json_iter it;
  ck_assert_int_eq(util_json_iter_init(&it, "1", 0, 1), UTIL_EINVAL);
  ck_assert_int_eq(util_json_next(&it), 0);
  ck_assert_int_eq(util_json_iter_init(&it, "\"[\"", 0, 3), UTIL_EINVAL);
  ck_assert_int_eq(util_json_iter_init(&it, "[]", 2, 2), UTIL_EINVAL);
  /* down 1000 levels (the limit), one member at each */
  char *buf = malloc(8 * (UTIL_JSON_MAX_DEPTH + 8));
  size_t n = nest(buf, UTIL_JSON_MAX_DEPTH, NULL, "5");
  ck_assert_int_eq(util_json_valid(buf, n, NULL, 0), 0);
  size_t at = 0;
  for (int d = 0; d < UTIL_JSON_MAX_DEPTH; d++) {
    ck_assert_int_eq(util_json_iter_init(&it, buf, at, n), 0);
    ck_assert_int_eq(util_json_next(&it), 1);
    at = it.v0;
    ck_assert_int_eq(util_json_next(&it), 0);
  }
  ck_assert_int_eq(util_json_type(buf, at, n), UTIL_JSON_INTEGER);
  free(buf);
}
END_TEST

/* Random mutations of valid documents: never a crash or a read past the
** end (ASan), the same answer twice, the same verdict as the reference,
** and every error names a byte offset within the text. */
START_TEST(test_json_fuzz) {
  static const char *seeds[] = {
      "{\"a\": [1, -2.5e+3, 0.0, true, false, null], \"b\": {\"c\": \"d\\u00e9\\n\"}}",
      "[\"\\uD83D\\uDE00\", \"\xf0\x9f\x98\x80\", \"\xe2\x82\xac\\\\\\/\", [[[]]], {}]",
      "[0, -0, 1E5, 123.456e-7, 1e+0, \"\", \"\\\"\"]",
      "  {\"k\" : {\"k\" : [ {\"x\":1} , [2] ] } }  ",
      "\"\xc3\xa9\xed\x9f\xbf\xf4\x8f\xbf\xbf\\t\"",
      "-12.5e-3",
  };
  static const char interesting[] = "{}[],:\"\\u0123456789-+.eE tfnrlsaDdCcFf\x80\xbf\xc3\xed\xa0\xf0\xf4\x90\x1f";
  t_rng rng = {t_seed()};
  char doc[512], err1[256], err2[256];
  long agree_valid = 0;
  printf("test_json_fuzz: seed %llu\n", (unsigned long long)t_seed());
  for (int it = 0; it < 300000; it++) {
    const char *seed = seeds[t_next(&rng) % (sizeof seeds / sizeof seeds[0])];
    size_t n = strlen(seed);
    memcpy(doc, seed, n);
    int muts = 1 + (int)(t_next(&rng) % 3);
    for (int m = 0; m < muts; m++) {
      size_t at = n ? (size_t)(t_next(&rng) % n) : 0;
      char c = (t_next(&rng) & 3) ? interesting[t_next(&rng) % (sizeof interesting - 1)]
                                  : (char)t_next(&rng);
      switch (t_next(&rng) % 5) {
      case 0: /* replace */
        if (n) doc[at] = c;
        break;
      case 1: /* insert */
        if (n < 400) {
          memmove(doc + at + 1, doc + at, n - at);
          doc[at] = c;
          n++;
        }
        break;
      case 2: /* delete */
        if (n) {
          memmove(doc + at, doc + at + 1, n - at - 1);
          n--;
        }
        break;
      case 3: { /* repeat a span */
        size_t w = 1 + (size_t)(t_next(&rng) % 8);
        if (at + w <= n && n + w < 400) {
          memmove(doc + at + w, doc + at, n - at);
          n += w;
        }
        break;
      }
      default: /* cut */
        n = at;
      }
    }
    char *s = exact_copy(doc, n);
    int rc1 = util_json_valid(s, n, err1, sizeof err1);
    int rc2 = util_json_valid(s, n, err2, sizeof err2);
    int ref = ref_json_valid(s, n);
    T_CHECK(rc1 == rc2 && strcmp(err1, err2) == 0, "not deterministic: %.*s",
            (int)n, s);
    T_CHECK(rc1 == ref, "iteration %d: util_json_valid %d (%s), reference %d: %.*s",
            it, rc1, err1, ref, (int)n, s);
    if (rc1 == 0) {
      agree_valid++;
      T_CHECK(err1[0] == '\0', "message on success");
    } else {
      const char *b = strstr(err1, " at byte ");
      T_CHECK(b != NULL, "no offset: %s", err1);
      T_CHECK(strtoull(b + 9, NULL, 10) <= n, "offset past the end: %s", err1);
    }
    free(s);
  }
  /* the mutations must not all be trivially invalid */
  T_CHECK(agree_valid > 1000, "only %ld valid mutants", agree_valid);
}
END_TEST

/* --------------------------------------------------------------- iso8601 */

static const struct {
  const char *s;
  size_t len;
  int64_t t;
  const char *msg; /* NULL: valid, t is the answer; else part of the error */
} iso_cases[] = {
    {J("1970-01-01T00:00:00Z"), 0, NULL},
    {J("1970-01-01"), 0, NULL},
    {J("1970-01-01 00:00:01"), 1, NULL},
    {J("2000-02-29"), 951782400, NULL},
    {J("2026-11-29T12:34:56+01:00"), 1795952096, NULL},
    {J("2026-11-29T12:34:56+0100"), 1795952096, NULL},
    {J("2026-11-29T12:34:56+01"), 1795952096, NULL},
    {J("2026-11-29T11:34:56Z"), 1795952096, NULL},
    {J("2026-11-29 12:34:56"), 1795955696, NULL}, /* datetime() */
    {J("2026-11-29T12:34:56"), 1795955696, NULL}, /* no zone: UTC */
    {J("2026-11-29t12:34:56z"), 1795955696, NULL},
    {J("2026-11-29T12:34"), 1795955640, NULL},
    {J("2026-11-29 12:34Z"), 1795955640, NULL},
    {J("2026-11-29T12:34:56.789Z"), 1795955696, NULL},
    {J("2026-11-29 12:34:56.999"), 1795955696, NULL}, /* strftime %f */
    {J("2026-11-29T12:34:56.000000000000000000001+01:00"), 1795952096, NULL},
    {J("1969-12-31T23:59:59Z"), -1, NULL},
    {J("1969-12-31T23:59:59.999Z"), -1, NULL}, /* floor, not toward 0 */
    {J("1969-12-31T23:59:59.5-00:00"), -1, NULL},
    {J("1960-01-01"), -315619200, NULL},
    {J("1900-03-01"), -2203891200, NULL},
    {J("1600-02-29"), -11670998400, NULL},
    {J("2004-02-29"), 1078012800, NULL},
    {J("1066-10-14T09:00"), -28502722800, NULL},
    {J("0000-01-01T00:00:00Z"), -62167219200, NULL},
    {J("0000-02-29"), -62167219200 + 59 * 86400, NULL}, /* year 0 leaps */
    {J("9999-12-31T23:59:59Z"), 253402300799, NULL},
    {J("0000-01-01T00:00+01:00"), -62167222800, NULL},
    {J("9999-12-31T23:59:59-01:00"), 253402304399, NULL},
    {J("2016-12-31T23:59:60Z"), 1483228800, NULL}, /* leap second */
    {J("2016-12-31T23:59:60.5Z"), 1483228800, NULL},
    {J("2024-02-29T00:00:00-05:00"), 1709182800, NULL},
    {J("2024-06-01T12:00:00+05:30"), 1717223400, NULL},
    {J("2024-06-01T12:00:00+0530"), 1717223400, NULL},
    {J("2024-06-01T12:00:00+05"), 1717225200, NULL},
    {J("2024-06-01T12:00:00-00:00"), 1717243200, NULL},
    {J("2024-06-01T12:00:00+00"), 1717243200, NULL},
    {J("2024-06-01T23:59:59-23:59"), 1717372739, NULL},
    /* invalid */
    {J("2023-02-29"), 0, "bad day 29 at byte 8 (2023-02 has 28 days)"},
    {J("1900-02-29"), 0, "bad day 29 at byte 8"},
    {J("2024-02-30"), 0, "bad day 30 at byte 8 (2024-02 has 29 days)"},
    {J("2024-04-31"), 0, "bad day 31 at byte 8"},
    {J("2024-01-00"), 0, "bad day 00 at byte 8"},
    {J("2024-01-32"), 0, "bad day 32 at byte 8"},
    {J("2024-13-01"), 0, "bad month 13 at byte 5"},
    {J("2024-00-10"), 0, "bad month 00 at byte 5"},
    {J("2024-01-01T24:00"), 0, "bad hour 24 at byte 11"},
    {J("2024-01-01T24:00:00Z"), 0, "bad hour 24 at byte 11"},
    {J("2024-01-01T23:60"), 0, "bad minute 60 at byte 14"},
    {J("2024-01-01T23:59:61"), 0, "bad second 61 at byte 17"},
    {J("2024-01-01T12:00:00+24:00"), 0, "bad zone hour 24 at byte 20"},
    {J("2024-01-01T12:00:00+05:60"), 0, "bad zone minute 60 at byte 23"},
    {J("2024-01-01T12:00:00-0575"), 0, "bad zone minute 75 at byte 22"},
    {J(""), 0, "expected a digit at byte 0, found end of input"},
    {J("garbage"), 0, "expected a digit at byte 0, found 'g'"},
    {J("now"), 0, "expected a digit at byte 0, found 'n'"},
    {J("24-01-01"), 0, "expected a digit at byte 2, found '-'"},
    {J("-2024-01-01"), 0, "expected a digit at byte 0, found '-'"},
    {J("+2024-01-01"), 0, "expected a digit at byte 0, found '+'"},
    {J("12024-01-01"), 0, "expected '-' at byte 4, found '4'"},
    {J("2024/01/01"), 0, "expected '-' at byte 4, found '/'"},
    {J("2024-1-01"), 0, "expected a digit at byte 6, found '-'"},
    {J("2024-01-1"), 0, "expected a digit at byte 9, found end of input"},
    {J("20240101"), 0, "expected '-' at byte 4, found '0'"},
    {J("2024-01-01T"), 0, "expected a digit at byte 11, found end of input"},
    {J("2024-01-01T12"), 0, "expected ':' at byte 13, found end of input"},
    {J("2024-01-01T1200"), 0, "expected ':' at byte 13, found '0'"},
    {J("2024-01-01T12:00:00."), 0, "expected a digit at byte 20, found end of input"},
    {J("2024-01-01T12:00:00.Z"), 0, "expected a digit at byte 20, found 'Z'"},
    {J("2024-01-01T12:00:00,5"), 0, "expected 'Z', '+', '-' or the end at byte 19, found ','"},
    {J("2024-01-01T12:00.5"), 0, "expected 'Z', '+', '-' or the end at byte 16, found '.'"},
    {J("2024-01-01Z"), 0, "expected 'T', ' ' or the end at byte 10, found 'Z'"},
    {J("2024-01-01X12:00"), 0, "expected 'T', ' ' or the end at byte 10, found 'X'"},
    {J("2024-01-01  12:00"), 0, "expected a digit at byte 11, found 0x20"},
    {J("2024-01-01T12:00:00Zx"), 0, "unexpected 'x' at byte 20 after the time"},
    {J("2024-01-01T12:00:00 "), 0, "expected 'Z', '+', '-' or the end at byte 19, found 0x20"},
    {J("2024-01-01T12:00:00Z "), 0, "unexpected 0x20 at byte 20 after the time"},
    {J(" 2024-01-01"), 0, "expected a digit at byte 0, found 0x20"},
    {J("2024-01-01T12:00:00+5"), 0, "expected a digit at byte 21, found end of input"},
    {J("2024-01-01T12:00:00+05:"), 0, "expected a digit at byte 23, found end of input"},
    {J("2024-01-01T12:00:00+053"), 0, "expected a digit at byte 23, found end of input"},
    {J("2024-01-01T12:00:00+05:30:00"), 0, "unexpected ':' at byte 25 after the time"},
    {J("2024-01-01\0"), 0, "expected 'T', ' ' or the end at byte 10, found 0x00"},
    {J("2024-01-01T12:00:00\xc2\xa0"), 0, "found 0xc2"},
};

/* The table, checked in whatever TZ and locale the process has now. */
static void iso_table(void) {
  for (size_t i = 0; i < sizeof iso_cases / sizeof iso_cases[0]; i++) {
    char *s = exact_copy(iso_cases[i].s, iso_cases[i].len);
    int64_t t = 12345;
    char err[256] = "x";
    int rc = util_iso8601_parse(s, iso_cases[i].len, &t, err, sizeof err);
    if (!iso_cases[i].msg) {
      T_CHECK(rc == 0, "%s: %s", iso_cases[i].s, err);
      T_CHECK(t == iso_cases[i].t, "%s: %lld, want %lld", iso_cases[i].s,
              (long long)t, (long long)iso_cases[i].t);
      T_CHECK(err[0] == '\0', "%s: message on success", iso_cases[i].s);
    } else {
      T_CHECK(rc == -1, "%s accepted as %lld", iso_cases[i].s, (long long)t);
      T_CHECK(t == 12345, "%s: result written on failure", iso_cases[i].s);
      T_CHECK(strstr(err, iso_cases[i].msg) != NULL,
              "%s: got \"%s\", want \"%s\"", iso_cases[i].s, err,
              iso_cases[i].msg);
    }
    T_CHECK(util_iso8601_parse(s, iso_cases[i].len, &t, NULL, 0) == rc, "%s",
            iso_cases[i].s);
    free(s);
  }
}

START_TEST(test_iso8601_table) {
  iso_table();
}
END_TEST

START_TEST(test_iso8601_format) {
  static const struct { int64_t t; const char *s; } cases[] = {
      {0, "1970-01-01T00:00:00Z"},
      {-1, "1969-12-31T23:59:59Z"},
      {951782400, "2000-02-29T00:00:00Z"},
      {1795952096, "2026-11-29T11:34:56Z"},
      {-62167219200, "0000-01-01T00:00:00Z"},
      {253402300799, "9999-12-31T23:59:59Z"},
      {-11670998400, "1600-02-29T00:00:00Z"},
      {-28502722800, "1066-10-14T09:00:00Z"},
  };
  char buf[UTIL_ISO8601_BUFSIZE];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_uint_eq(util_iso8601_format(cases[i].t, buf), 20);
    ck_assert_str_eq(buf, cases[i].s);
  }
  static const int64_t out[] = {-62167219201, 253402300800, INT64_MIN,
                                INT64_MAX, -62167222800};
  for (size_t i = 0; i < sizeof out / sizeof out[0]; i++) {
    memset(buf, 'x', sizeof buf);
    ck_assert_uint_eq(util_iso8601_format(out[i], buf), 0);
    ck_assert_str_eq(buf, "");
  }
}
END_TEST

/* 10,000 random instants in years 0-9999: format agrees with gmtime_r
** (where time_t reaches), parse(format(t)) == t, and the same instant
** written with a random offset, fraction and separator parses to t. */
START_TEST(test_iso8601_roundtrip) {
  const int64_t lo = -62167219200, hi = 253402300799;
  t_rng rng = {t_seed()};
  char buf[UTIL_ISO8601_BUFSIZE], alt[80], err[256];
  for (int i = 0; i < 10000; i++) {
    int64_t t = lo + (int64_t)(t_next(&rng) % (uint64_t)(hi - lo + 1));
    if (i < 4) t = i == 0 ? lo : i == 1 ? hi : i == 2 ? 0 : -1;
    size_t w = util_iso8601_format(t, buf);
    T_CHECK(w == 20 && strlen(buf) == 20, "%lld: %s", (long long)t, buf);
    if (sizeof(time_t) == 8) {
      time_t tt = (time_t)t;
      struct tm tm;
      char ref[64];
      ck_assert_ptr_nonnull(gmtime_r(&tt, &tm));
      snprintf(ref, sizeof ref, "%04d-%02d-%02dT%02d:%02d:%02dZ",
               tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
               tm.tm_min, tm.tm_sec);
      T_CHECK(strcmp(buf, ref) == 0, "%lld: %s, gmtime %s", (long long)t, buf, ref);
    }
    int64_t back = 0;
    T_CHECK(util_iso8601_parse(buf, w, &back, err, sizeof err) == 0, "%s: %s", buf, err);
    T_CHECK(back == t, "%s: %lld != %lld", buf, (long long)back, (long long)t);

    /* the same instant in a zone east (+) or west (-) of UTC */
    int off = (int)(t_next(&rng) % (24 * 60)) * 60 * ((t_next(&rng) & 1) ? 1 : -1);
    if (util_iso8601_format(t + off, buf) == 0) continue;
    int a = off < 0 ? -off : off;
    char zone[16];
    snprintf(zone, sizeof zone, "%c%02d%s%02d", off < 0 ? '-' : '+', a / 3600,
             (t_next(&rng) & 1) ? ":" : "", a / 60 % 60);
    char frac[24] = "";
    if (t_next(&rng) & 1) snprintf(frac, sizeof frac, ".%u", (unsigned)(t_next(&rng) % 1000000));
    buf[19] = '\0'; /* drop the Z */
    if (t_next(&rng) & 1) buf[10] = ' ';
    int l = snprintf(alt, sizeof alt, "%s%s%s", buf, frac, zone);
    T_CHECK(util_iso8601_parse(alt, (size_t)l, &back, err, sizeof err) == 0, "%s: %s", alt, err);
    T_CHECK(back == t, "%s: %lld != %lld", alt, (long long)back, (long long)t);
  }
}
END_TEST

/* A host in New York with a comma-decimal locale gets the same answers:
** nothing reads TZ or the locale. */
START_TEST(test_iso8601_tz_locale) {
  const char *locs[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "ru_RU.UTF-8"};
  const char *set = NULL;
  setenv("TZ", "America/New_York", 1);
  tzset();
  for (size_t i = 0; i < sizeof locs / sizeof locs[0] && !set; i++)
    set = setlocale(LC_ALL, locs[i]);
  if (!set) {
    ck_assert_msg(getenv("H5MEM_REQUIRE_COMMA_LOCALE") == NULL,
                  "no comma-decimal locale installed (de_DE.UTF-8 etc.)");
    printf("test_util: no comma-decimal locale installed; TZ only\n");
  }
  /* the zone really is in force (when the tz database is installed) */
  time_t epoch = 0;
  struct tm tm;
  localtime_r(&epoch, &tm);
  if (tm.tm_hour != 19)
    printf("test_util: America/New_York not installed; TZ had no effect\n");
  iso_table();
  char buf[UTIL_ISO8601_BUFSIZE];
  util_iso8601_format(1795952096, buf);
  ck_assert_str_eq(buf, "2026-11-29T11:34:56Z");
  for (size_t i = 0; i < sizeof json_cases / sizeof json_cases[0]; i++)
    T_CHECK((util_json_valid(json_cases[i].s, json_cases[i].len, NULL, 0) == 0) ==
                (json_cases[i].msg == NULL),
            "json case %zu", i);
  setlocale(LC_ALL, "C");
  unsetenv("TZ");
  tzset();
}
END_TEST

/* ---- UTF-8 ---- */

/* The reference: decode each sequence by its lead byte's bit pattern and
** judge the code point (not the byte ranges of Table 3-7 utf8.c uses). */
static size_t ref_utf8_check(const unsigned char *s, size_t n, int nul_ok) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || (c == 0 && !nul_ok) || i + len > n) return i;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = cp << 6 | (s[i + k] & 0x3F);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

static const struct {
  const char *s;
  size_t len, bad, bad_nul; /* first bad byte (NUL allowed; NUL refused) */
  const char *fixed;        /* after util_utf8_repair */
  size_t flen;
} utf8_cases[] = {
#define U(lit, bad, bad_nul, fixed) {lit, sizeof lit - 1, bad, bad_nul, fixed, sizeof fixed - 1}
    U("", 0, 0, ""),
    U("plain ASCII, longer than eight bytes", 36, 36, "plain ASCII, longer than eight bytes"),
    U("a\0b", 3, 1, "a\0b"),
    U("\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", 24, 24,
      "\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf"),
    U("ab\xc0\xaf", 2, 2, "ab\xef\xbf\xbd\xef\xbf\xbd"),               /* overlong: C0 and AF each */
    U("\xe0\x80\xaf", 0, 0, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),     /* overlong 3-byte */
    U("\xf0\x80\x80\x41", 0, 0, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "A"),
    U("abc\xed\xa0\x80z", 3, 3, "abc\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"), /* a surrogate */
    U("\xf4\x90\x80\x80", 0, 0, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"), /* U+110000 */
    U("\xff\xfe", 0, 0, "\xef\xbf\xbd\xef\xbf\xbd"),
    U("ab\xe2\x82", 2, 2, "ab\xef\xbf\xbd"),                              /* cut by the end: one */
    U("\xe2\x82x", 0, 0, "\xef\xbf\xbdx"),                               /* cut in the middle */
    U("\xf0\x9f\x98\xf0\x9f\x98\x80", 0, 0, "\xef\xbf\xbd\xf0\x9f\x98\x80"),
    U("12345678\x80", 8, 8, "12345678\xef\xbf\xbd"),                      /* after a whole word */
    U("1234567\0\x80", 8, 7, "1234567\0\xef\xbf\xbd"),
#undef U
};

START_TEST(test_utf8_table) {
  for (size_t i = 0; i < sizeof utf8_cases / sizeof utf8_cases[0]; i++) {
    const char *s = utf8_cases[i].s;
    size_t n = utf8_cases[i].len;
    char *c = exact_copy(s, n);
    T_CHECK(util_utf8_check(c, n, 1) == utf8_cases[i].bad, "case %zu: %zu", i, util_utf8_check(c, n, 1));
    T_CHECK(util_utf8_check(c, n, 0) == utf8_cases[i].bad_nul, "case %zu: %zu (NUL refused)", i,
            util_utf8_check(c, n, 0));
    strbuf out = {0};
    size_t fixes = util_utf8_repair(&out, c, n);
    size_t want = utf8_cases[i].flen;
    T_CHECK(!strbuf_failed(&out) && out.len == want && (!want || !memcmp(out.buf, utf8_cases[i].fixed, want)),
            "case %zu: repaired to %zu bytes", i, out.len);
    T_CHECK((fixes == 0) == (utf8_cases[i].bad == n), "case %zu: %zu repairs", i, fixes);
    T_CHECK(util_utf8_check(out.buf, out.len, 1) == out.len, "case %zu: the repair is not UTF-8", i);
    strbuf_free(&out);
    free(c);
  }
  ck_assert_uint_eq(util_utf8_check(NULL, 0, 0), 0);
}
END_TEST

/* Random strings (mostly ASCII runs, to cross the 8-byte steps, with lead
** bytes, continuation bytes and NULs strewn in) against the reference. */
START_TEST(test_utf8_random) {
  t_rng rng = {t_seed()};
  unsigned char buf[64];
  static const unsigned char pick[] = {0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
                                       0xE0, 0xE1, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF};
  for (int it = 0; it < 200000; it++) {
    size_t n = t_next(&rng) % sizeof buf;
    for (size_t k = 0; k < n; k++) {
      uint64_t r = t_next(&rng);
      buf[k] = r % 4 ? (unsigned char)('a' + r % 26) : pick[(r >> 8) % sizeof pick];
    }
    char *c = exact_copy((const char *)buf, n);
    for (int nul_ok = 0; nul_ok < 2; nul_ok++) {
      size_t got = util_utf8_check(c, n, nul_ok), want = ref_utf8_check(buf, n, nul_ok);
      if (got != want) {
        ck_abort_msg("iteration %d (nul_ok %d): %zu, the reference says %zu", it, nul_ok, got, want);
      }
    }
    strbuf out = {0};
    util_utf8_repair(&out, c, n);
    ck_assert(!strbuf_failed(&out));
    ck_assert_uint_eq(ref_utf8_check((const unsigned char *)out.buf, out.len, 1), out.len);
    strbuf_free(&out);
    free(c);
  }
}
END_TEST

/* ---- util/le.h ----------------------------------------------------------- */

/* The encodings, byte by byte: least significant first whatever the host. */
START_TEST(test_le_bytes) {
  uint8_t b[9];
  memset(b, 0xee, sizeof b);
  util_put_le16(b, 0x0102);
  ck_assert(b[0] == 0x02 && b[1] == 0x01 && b[2] == 0xee);
  util_put_le32(b, 0x01020304u);
  static const uint8_t w32[] = {0x04, 0x03, 0x02, 0x01};
  ck_assert(memcmp(b, w32, 4) == 0 && b[4] == 0xee);
  util_put_le64(b, 0x0102030405060708ull);
  static const uint8_t w64[] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  ck_assert(memcmp(b, w64, 8) == 0 && b[8] == 0xee);

  static const uint8_t r[] = {0xf1, 0xe2, 0xd3, 0xc4, 0xb5, 0xa6, 0x97, 0x88};
  ck_assert_uint_eq(util_get_le16(r), 0xe2f1u);
  ck_assert_uint_eq(util_get_le32(r), 0xc4d3e2f1u);
  ck_assert(util_get_le64(r) == 0x8897a6b5c4d3e2f1ull);
  for (int n = 0; n <= 8; n++) {
    uint64_t want = n == 8 ? 0x8897a6b5c4d3e2f1ull : 0x8897a6b5c4d3e2f1ull & ((1ull << 8 * n) - 1);
    ck_assert(util_get_le(r, n) == want);
    memset(b, 0xee, sizeof b);
    util_put_le(b, 0x8897a6b5c4d3e2f1ull, n); /* the low n bytes only */
    ck_assert(memcmp(b, r, (size_t)n) == 0 && b[n] == 0xee);
  }

  static const uint8_t one32[] = {0x00, 0x00, 0x80, 0x3f}; /* 1.0f */
  static const uint8_t one64[] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}; /* 1.0 */
  util_put_le_f32(b, 1.0f);
  ck_assert(memcmp(b, one32, 4) == 0);
  util_put_le_f64(b, 1.0);
  ck_assert(memcmp(b, one64, 8) == 0);
  ck_assert(util_get_le_f32(one32) == 1.0f);
  ck_assert(util_get_le_f64(one64) == 1.0);

  const uint16_t probe = 1;
  ck_assert_int_eq(util_host_le(), *(const uint8_t *)&probe == 1);
}
END_TEST

/* Every width round-trips at every alignment, and the bytes written are the
** explicit little-endian ones. */
START_TEST(test_le_roundtrip) {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  uint8_t buf[24];
  for (int k = 0; k < 2000; k++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint64_t v = k < 8 ? (uint64_t[]){0, 1, UINT64_MAX, 0x80, 0x8000, 0x80000000u,
                                      1ull << 63, 0xffull << 56}[k]
                       : s;
    for (int off = 0; off < 8; off++) {
      uint8_t *p = buf + off; /* unaligned for most offsets */
      util_put_le16(p, (uint16_t)v);
      ck_assert_uint_eq(util_get_le16(p), (uint16_t)v);
      util_put_le32(p, (uint32_t)v);
      ck_assert_uint_eq(util_get_le32(p), (uint32_t)v);
      util_put_le64(p, v);
      ck_assert(util_get_le64(p) == v);
      for (int i = 0; i < 8; i++) ck_assert_uint_eq(p[i], (uint8_t)(v >> 8 * i));
      for (int n = 0; n <= 8; n++) {
        uint64_t low = n == 8 ? v : v & ((1ull << 8 * n) - 1);
        util_put_le(p, v, n);
        ck_assert(util_get_le(p, n) == low);
      }
      /* floats: the bit pattern survives (NaNs, -0, infinities included) */
      float f;
      double d;
      uint32_t fb = (uint32_t)v, fb2;
      memcpy(&f, &fb, 4);
      util_put_le_f32(p, f);
      ck_assert_uint_eq(util_get_le32(p), fb);
      f = util_get_le_f32(p);
      memcpy(&fb2, &f, 4);
      ck_assert_uint_eq(fb2, fb);
      uint64_t db2;
      memcpy(&d, &v, 8);
      util_put_le_f64(p, d);
      ck_assert(util_get_le64(p) == v);
      d = util_get_le_f64(p);
      memcpy(&db2, &d, 8);
      ck_assert(db2 == v);
    }
  }
}
END_TEST

/* Word arrays, to and from images at any alignment, and in place. */
START_TEST(test_le_words) {
  const uint32_t w[3] = {0x01020304u, 0xa0b0c0d0u, 0x7fc00000u};
  static const uint8_t img[12] = {0x04, 0x03, 0x02, 0x01, 0xd0, 0xc0, 0xb0, 0xa0,
                                  0x00, 0x00, 0xc0, 0x7f};
  uint8_t buf[20];
  for (int off = 0; off < 4; off++) {
    memset(buf, 0xee, sizeof buf);
    util_put_le32s(buf + off, w, 3);
    ck_assert(memcmp(buf + off, img, 12) == 0 && buf[off + 12] == 0xee);
    uint32_t back[4] = {0, 0, 0, 0xeeeeeeeeu};
    util_get_le32s(back, buf + off, 3);
    ck_assert(memcmp(back, w, 12) == 0 && back[3] == 0xeeeeeeeeu);
    util_get_le32s(buf + off, buf + off, 3); /* in place: now host order */
    ck_assert(memcmp(buf + off, w, 12) == 0);
    util_put_le32s(buf + off, buf + off, 3); /* and back */
    ck_assert(memcmp(buf + off, img, 12) == 0);
  }
  memset(buf, 0xee, sizeof buf);
  util_put_le32s(buf, w, 0); /* n == 0 writes nothing */
  util_get_le32s(buf + 4, img, 0);
  for (size_t i = 0; i < sizeof buf; i++) ck_assert_uint_eq(buf[i], 0xee);

  strbuf sb = {0};
  strbuf_put_le(&sb, 0x0102030405060708ull, 3);
  strbuf_put_le(&sb, 0x0a0b, 2);
  static const uint8_t want[] = {0x08, 0x07, 0x06, 0x0b, 0x0a};
  ck_assert(!strbuf_failed(&sb) && sb.len == 5 && memcmp(sb.buf, want, 5) == 0);
  strbuf_free(&sb);
}
END_TEST

/* One error space (util/err.h): a distinct value and name per meaning, and
** every library's name for a meaning is that value. */
START_TEST(test_err_space) {
  static const int codes[] = {UTIL_EIO,    UTIL_ENOMEM,    UTIL_ECORRUPT, UTIL_EUNSUPPORTED,
                              UTIL_ENOTFOUND, UTIL_EINVAL, UTIL_ESTOP,    UTIL_EFULL,
                              UTIL_EBUSY,  UTIL_EMISMATCH, UTIL_EEXISTS,  UTIL_ETOOBIG};
  size_t n = sizeof codes / sizeof codes[0];
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_lt(codes[i], 0);
    ck_assert_str_ne(util_err_name(codes[i]), "unknown error code");
    for (size_t j = 0; j < i; j++) {
      ck_assert_int_ne(codes[i], codes[j]);
      ck_assert_str_ne(util_err_name(codes[i]), util_err_name(codes[j]));
    }
  }
  ck_assert_str_eq(util_err_name(UTIL_OK), "UTIL_OK");
  ck_assert_str_eq(util_err_name(UTIL_EFULL), "UTIL_EFULL");
  ck_assert_str_eq(util_err_name(1), "unknown error code");
  ck_assert_str_eq(util_err_name(-1000), "unknown error code");
  /* the libraries: one meaning, one value (TEXT_EINVAL was H5_ECORRUPT's -3;
  ** -4 was H5_EUNSUPPORTED, STORE_EINVAL, BM25_ETOOBIG, KG_EINVAL and WAL_EFULL) */
  const int inval[] = {H5_EINVAL, STORE_EINVAL, WAL_EINVAL, ANN_EINVAL, TEXT_EINVAL, KG_EINVAL};
  for (size_t i = 0; i < sizeof inval / sizeof inval[0]; i++) ck_assert_int_eq(inval[i], UTIL_EINVAL);
  const int nomem[] = {H5_ENOMEM, STORE_ENOMEM, WAL_ENOMEM, ANN_ENOMEM, BM25_ENOMEM, TEXT_ENOMEM, KG_ENOMEM};
  for (size_t i = 0; i < sizeof nomem / sizeof nomem[0]; i++) ck_assert_int_eq(nomem[i], UTIL_ENOMEM);
  const int corrupt[] = {H5_ECORRUPT, STORE_ECORRUPT, ANN_ECORRUPT, BM25_ECORRUPT};
  for (size_t i = 0; i < sizeof corrupt / sizeof corrupt[0]; i++) ck_assert_int_eq(corrupt[i], UTIL_ECORRUPT);
  const int full[] = {H5_EFULL, STORE_EFULL, WAL_EFULL};
  for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) ck_assert_int_eq(full[i], UTIL_EFULL);
  const int io[] = {H5_EIO, STORE_EIO, WAL_EIO, GATE_EIO};
  for (size_t i = 0; i < sizeof io / sizeof io[0]; i++) ck_assert_int_eq(io[i], UTIL_EIO);
  ck_assert_int_eq(STORE_EBUSY, UTIL_EBUSY);
  ck_assert_int_eq(GATE_EBUSY, UTIL_EBUSY);
  ck_assert_int_eq(STORE_EMISMATCH, UTIL_EMISMATCH);
  ck_assert_int_eq(WAL_EMISMATCH, UTIL_EMISMATCH);
  ck_assert_int_eq(H5_ENOTFOUND, UTIL_ENOTFOUND);
  ck_assert_int_eq(STORE_ENOTFOUND, UTIL_ENOTFOUND);
  ck_assert_int_eq(KG_ENOTFOUND, UTIL_ENOTFOUND);
  ck_assert_int_eq(STORE_EEXISTS, UTIL_EEXISTS);
  ck_assert_int_eq(BM25_ETOOBIG, UTIL_ETOOBIG);
  ck_assert_int_eq(STORE_ETOOBIG, UTIL_ETOOBIG);
  ck_assert_int_eq(H5_EUNSUPPORTED, UTIL_EUNSUPPORTED);
  ck_assert_int_eq(H5_ESTOP, UTIL_ESTOP);
  /* a failed write: no space, or anything else */
  ck_assert_int_eq(util_err_write(ENOSPC), UTIL_EFULL);
  ck_assert_int_eq(util_err_write(EFBIG), UTIL_EFULL);
#ifdef EDQUOT
  ck_assert_int_eq(util_err_write(EDQUOT), UTIL_EFULL);
#endif
  ck_assert_int_eq(util_err_write(EIO), UTIL_EIO);
  ck_assert_int_eq(util_err_write(EACCES), UTIL_EIO);
}
END_TEST

int main(void) {
  Suite *s = suite_create("util");
  TCase *tc = tcase_create("vecjson");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_valid);
  tcase_add_test(tc, test_invalid);
  tcase_add_test(tc, test_embedded_nul);
  tcase_add_test(tc, test_i8);
  tcase_add_test(tc, test_long);
  tcase_add_test(tc, test_shortest_roundtrip);
  tcase_add_test(tc, test_locale_independent);
  suite_add_tcase(s, tc);
  tc = tcase_create("json");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_json_table);
  tcase_add_test(tc, test_json_depth);
  tcase_add_test(tc, test_json_is_object);
  tcase_add_test(tc, test_json_read);
  tcase_add_test(tc, test_json_types);
  tcase_add_test(tc, test_json_number);
  tcase_add_test(tc, test_json_number_locale);
  tcase_add_test(tc, test_json_cstr);
  tcase_add_test(tc, test_js_strings);
  tcase_add_test(tc, test_js_lower);
  tcase_add_test(tc, test_json_iter);
  tcase_add_test(tc, test_json_fuzz);
  suite_add_tcase(s, tc);
  tc = tcase_create("iso8601");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_iso8601_table);
  tcase_add_test(tc, test_iso8601_format);
  tcase_add_test(tc, test_iso8601_roundtrip);
  tcase_add_test(tc, test_iso8601_tz_locale);
  suite_add_tcase(s, tc);
  tc = tcase_create("utf8");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_utf8_table);
  tcase_add_test(tc, test_utf8_random);
  suite_add_tcase(s, tc);
  tc = tcase_create("le");
  tcase_set_timeout(tc, 120); /* (as the others: Check's 4 s default failed under a loaded -j2 run) */
  tcase_add_test(tc, test_le_bytes);
  tcase_add_test(tc, test_le_roundtrip);
  tcase_add_test(tc, test_le_words);
  suite_add_tcase(s, tc);
  tc = tcase_create("err");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_err_space);
  suite_add_tcase(s, tc);
  return t_run(s);
}
