/*
** lib/util/vecjson.c - JSON arrays of numbers <-> float32 vectors.
*/
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocale.h"
#include "vecjson.h"

static int is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Length of the JSON number at s[0..len), or 0 if there is none. */
static size_t json_number_len(const char *s, size_t len) {
  size_t i = 0;
  if (i < len && s[i] == '-') i++;
  if (i >= len || !is_digit(s[i])) return 0;
  if (s[i] == '0') {
    i++;
  } else {
    while (i < len && is_digit(s[i])) i++;
  }
  if (i < len && s[i] == '.') {
    i++;
    if (i >= len || !is_digit(s[i])) return 0;
    while (i < len && is_digit(s[i])) i++;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= len || !is_digit(s[i])) return 0;
    while (i < len && is_digit(s[i])) i++;
  }
  return i;
}

/* What a byte looks like in an error message. */
static const char *describe(const char *s, size_t len, size_t i, char *tmp) {
  if (i >= len) return "end of input";
  unsigned char c = (unsigned char)s[i];
  if (c >= 0x21 && c < 0x7f) {
    snprintf(tmp, 8, "'%c'", c);
  } else {
    snprintf(tmp, 8, "0x%02x", c);
  }
  return tmp;
}

/* One element of a JSON array: the number's text num[0..nl) (valid JSON
** syntax), its index; 0, or -1 with a message in err. */
typedef int (*json_elem_fn)(void *u, const char *num, size_t nl, size_t index,
                            char *err, size_t errlen);

/* Walk the JSON array of numbers in s[0..len), calling elem on each in
** order.  0, or -1 with a message naming the problem and its byte offset
** (or elem's message) in err. */
static int json_walk(const char *s, size_t len, json_elem_fn elem, void *u,
                     char *err, size_t errlen) {
  size_t count = 0, i = 0;
  char tmp[8];

  while (i < len && is_ws(s[i])) i++;
  if (i >= len || s[i] != '[') {
    snprintf(err, errlen,
             "malformed JSON vector: expected '[' at byte %zu, found %s", i,
             describe(s, len, i, tmp));
    return -1;
  }
  i++;
  while (i < len && is_ws(s[i])) i++;
  if (i < len && s[i] == ']') {
    i++;
    goto trailing;
  }
  for (;;) {
    size_t nl = json_number_len(s + i, len - i);
    if (nl == 0) {
      snprintf(err, errlen,
               "malformed JSON vector: expected a number at byte %zu, found %s",
               i, describe(s, len, i, tmp));
      return -1;
    }
    if (elem(u, s + i, nl, count, err, errlen)) return -1;
    count++;
    i += nl;
    while (i < len && is_ws(s[i])) i++;
    if (i < len && s[i] == ',') {
      i++;
      while (i < len && is_ws(s[i])) i++;
      continue;
    }
    if (i < len && s[i] == ']') {
      i++;
      break;
    }
    snprintf(err, errlen,
             "malformed JSON vector: expected ',' or ']' at byte %zu, found %s",
             i, describe(s, len, i, tmp));
    return -1;
  }

trailing:
  while (i < len && is_ws(s[i])) i++;
  if (i < len) {
    snprintf(err, errlen,
             "malformed JSON vector: unexpected %s at byte %zu after the array",
             describe(s, len, i, tmp), i);
    return -1;
  }
  return 0;
}

/* A growing array of elements of esz bytes (malloc'd v, freed by its
** owner). */
typedef struct elems {
  void *v;
  size_t count, cap, esz;
} elems;

/* Room for one more element, or -1 with a message in err. */
static int elems_grow(elems *e, char *err, size_t errlen) {
  if (e->count < e->cap) return 0;
  size_t ncap = e->cap ? e->cap * 2 : 16;
  void *nv = realloc(e->v, ncap * e->esz);
  if (!nv) {
    snprintf(err, errlen, "out of memory parsing a JSON vector");
    return -1;
  }
  e->v = nv;
  e->cap = ncap;
  return 0;
}

static int f32_elem(void *u, const char *s, size_t nl, size_t index,
                    char *err, size_t errlen) {
  elems *e = u;
  /* strtof on a copy of exactly the validated span, so that it cannot
     read on past what JSON allows ("01", "0x1").  strtof rounds the
     decimal once, to the nearest float; going through a double would
     round twice and can land on the wrong float. */
  char small[64], *num = nl < sizeof small ? small : malloc(nl + 1);
  if (!num) {
    snprintf(err, errlen, "out of memory parsing a JSON vector");
    return -1;
  }
  memcpy(num, s, nl);
  num[nl] = '\0';
  char *end;
  float f = strtof(num, &end);
  int whole = *end == '\0';
  if (num != small) free(num);
  if (!whole) { /* cannot happen in the "C" locale; never guess */
    snprintf(err, errlen, "malformed JSON vector: bad number at element %zu",
             index);
    return -1;
  }
  if (!isfinite(f)) {
    snprintf(err, errlen,
             "element %zu (%.*s) is outside the float32 range (largest "
             "finite magnitude 3.4028235e+38)",
             index, (int)(nl > 40 ? 40 : nl), s);
    return -1;
  }
  if (elems_grow(e, err, errlen)) return -1;
  ((float *)e->v)[e->count++] = f;
  return 0;
}

int util_json_to_f32(const char *s, size_t len, float **out, size_t *n,
                     char *err, size_t errlen) {
  elems e = {NULL, 0, 0, sizeof(float)};
  *out = NULL;
  *n = 0;
  locale_t old = util_c_locale_push();
  int rc = json_walk(s, len, f32_elem, &e, err, errlen);
  util_c_locale_pop(old);
  if (rc) {
    free(e.v);
    return -1;
  }
  *out = e.v;
  *n = e.count;
  return 0;
}

static int i8_elem(void *u, const char *s, size_t nl, size_t index, char *err,
                   size_t errlen) {
  elems *e = u;
  size_t i = s[0] == '-';
  long x = 0;
  int shown = (int)(nl > 40 ? 40 : nl);
  /* JSON syntax is already checked: digits, then maybe '.', 'e' or 'E' */
  for (; i < nl && is_digit(s[i]); i++)
    if (x <= 1000) x = x * 10 + (s[i] - '0'); /* (only the range matters) */
  if (i < nl) {
    snprintf(err, errlen,
             "element %zu (%.*s) is not an integer (int8 vectors hold "
             "integers from -128 to 127)",
             index, shown, s);
    return -1;
  }
  if (s[0] == '-') x = -x;
  if (x < -128 || x > 127) {
    snprintf(err, errlen,
             "element %zu (%.*s) is outside the int8 range (-128 to 127)",
             index, shown, s);
    return -1;
  }
  if (elems_grow(e, err, errlen)) return -1;
  ((int8_t *)e->v)[e->count++] = (int8_t)x;
  return 0;
}

int util_json_to_i8(const char *s, size_t len, int8_t **out, size_t *n,
                    char *err, size_t errlen) {
  elems e = {NULL, 0, 0, sizeof(int8_t)};
  *out = NULL;
  *n = 0;
  if (json_walk(s, len, i8_elem, &e, err, errlen)) {
    free(e.v);
    return -1;
  }
  *out = e.v;
  *n = e.count;
  return 0;
}

/* The fewest significant digits (at most maxp) with which printf's %g
** reads back as v: more digits never stop a decimal from reading back, so
** binary-search the precision.  back() converts the text to v's type. */
static size_t shortest(double v, char *buf, size_t size, int maxp, int is_float) {
  locale_t old = util_c_locale_push();
  int lo = 1, hi = maxp;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    snprintf(buf, size, "%.*g", mid & 31, v);
    int same = is_float ? strtof(buf, NULL) == (float)v : strtod(buf, NULL) == v;
    if (same)
      hi = mid;
    else
      lo = mid + 1;
  }
  /* %g turns to an exponent once the exponent reaches the precision (10
  ** with 1 digit is "1e+01"); like Python's repr, write whole numbers below
  ** 1e16 out: one more digit per power of ten still reads back as v */
  snprintf(buf, size, "%.*e", (lo - 1) & 31, v);
  const char *e = strchr(buf, 'e');
  int x = e ? atoi(e + 1) : 0;
  if (x >= lo && x < 16) lo = x + 1;
  int w = snprintf(buf, size, "%.*g", lo & 31, v);
  util_c_locale_pop(old);
  return (size_t)w;
}

size_t util_f32_shortest(float v, char *buf) {
  return shortest((double)v, buf, 32, 9, 1); /* 9 digits always suffice */
}

size_t util_f64_shortest(double v, char *buf) {
  return shortest(v, buf, 40, 17, 0); /* 17 digits always suffice */
}
