/*
** lib/util/json.c - strict JSON (RFC 8259) validation.
**
** One loop over the input with an explicit stack: a bit per open container
** (object or array), so the nesting limit costs 125 bytes of the caller's
** stack and no recursion.  Every byte is looked at a bounded number of
** times, so the time is linear in the length.
*/
#include "config.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocale.h"
#include "err.h"
#include "json.h"
#include "utf8.h"

/* Where the scanner stands: the text, its length and the error buffer. */
typedef struct json_scan {
  const char *s;
  size_t len;
  char *err; /* the caller's; may be NULL */
  size_t errlen;
  int lone_ok; /* lone surrogate escapes allowed (util_json_valid_js) */
} json_scan;

static int json_fail(json_scan *js, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Write the message (if there is somewhere to write it); returns -1. */
static int json_fail(json_scan *js, const char *fmt, ...) {
  if (js->err && js->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(js->err, js->errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* What the byte at i looks like in a message: 'x', 0x0a or "end of input".
** tmp needs 8 bytes. */
static const char *json_byte(const json_scan *js, size_t i, char *tmp) {
  if (i >= js->len) return "end of input";
  unsigned char c = (unsigned char)js->s[i];
  if (c >= 0x21 && c < 0x7f)
    snprintf(tmp, 8, "'%c'", c);
  else
    snprintf(tmp, 8, "0x%02x", c);
  return tmp;
}

/* "expected WHAT at byte i, found X"; returns -1. */
static int json_expected(json_scan *js, const char *what, size_t i) {
  char tmp[8];
  return json_fail(js, "expected %s at byte %zu, found %s", what, i,
                   json_byte(js, i, tmp));
}

static int json_is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int json_is_digit(char c) { return c >= '0' && c <= '9'; }

static size_t json_skip_ws(const json_scan *js, size_t i) {
  while (i < js->len && json_is_ws(js->s[i])) i++;
  return i;
}

/* The value of a hex digit, or -1. */
static int json_hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The code unit of the 4 hex digits after "\u" at s[i] (i is the
** backslash), or -1 with the message written. */
static long json_u_escape(json_scan *js, size_t i) {
  long u = 0;
  for (size_t k = i + 2; k < i + 6; k++) {
    int h = k < js->len ? json_hex(js->s[k]) : -1;
    if (h < 0) return json_expected(js, "a hex digit", k);
    u = u * 16 + h;
  }
  return u;
}

/* The length of the well-formed UTF-8 sequence at s[i] (whose lead byte
** is >= 0x80), or 0 (util_utf8_span). */
static size_t json_utf8_len(const json_scan *js, size_t i) {
  int ok;
  size_t n = util_utf8_span((const unsigned char *)js->s + i, js->len - i, &ok);
  return ok ? n : 0;
}

/* Scan the string whose opening quote is at s[i]; on success *end is the
** offset just past the closing quote. */
static int json_string(json_scan *js, size_t i, size_t *end) {
  size_t start = i++;
  while (i < js->len) {
    unsigned char c = (unsigned char)js->s[i];
    if (c == '"') {
      *end = i + 1;
      return 0;
    }
    if (c < 0x20)
      return json_fail(js, "control character 0x%02x in a string at byte %zu",
                       c, i);
    if (c >= 0x80) {
      size_t n = json_utf8_len(js, i);
      if (n == 0) return json_fail(js, "invalid UTF-8 at byte %zu", i);
      i += n;
      continue;
    }
    if (c != '\\') {
      i++;
      continue;
    }
    if (i + 1 >= js->len) break;
    switch (js->s[i + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
    case 't':
      i += 2;
      continue;
    case 'u':
      break;
    default: {
      unsigned char e = (unsigned char)js->s[i + 1];
      if (e >= 0x21 && e < 0x7f)
        return json_fail(js, "invalid escape '\\%c' at byte %zu", e, i);
      return json_fail(js, "invalid escape '\\' 0x%02x at byte %zu", e, i);
    }
    }
    long u = json_u_escape(js, i);
    if (u < 0) return -1;
    if (u >= 0xdc00 && u <= 0xdfff && !js->lone_ok)
      return json_fail(js, "lone surrogate \\u%04lX at byte %zu", u, i);
    if (u >= 0xd800 && u <= 0xdbff && !js->lone_ok) {
      /* a high surrogate: a low one must follow as the next escape */
      size_t j = i + 6;
      long lo = -2;
      if (j + 1 < js->len && js->s[j] == '\\' && js->s[j + 1] == 'u') {
        lo = json_u_escape(js, j);
        if (lo < 0) return -1;
      }
      if (lo < 0xdc00 || lo > 0xdfff)
        return json_fail(js, "lone surrogate \\u%04lX at byte %zu", u, i);
      i = j + 6;
      continue;
    }
    i += 6;
  }
  return json_fail(js, "unterminated string starting at byte %zu", start);
}

/* Scan the number at s[i] (a '-' or a digit); *end is the offset past it. */
static int json_number(json_scan *js, size_t i, size_t *end) {
  const char *s = js->s;
  size_t len = js->len;
  if (s[i] == '-') i++;
  if (i >= len || !json_is_digit(s[i])) return json_expected(js, "a digit", i);
  if (s[i] == '0') {
    i++;
    if (i < len && json_is_digit(s[i]))
      return json_fail(js, "leading zero in a number at byte %zu", i - 1);
  } else {
    while (i < len && json_is_digit(s[i])) i++;
  }
  if (i < len && s[i] == '.') {
    i++;
    if (i >= len || !json_is_digit(s[i]))
      return json_expected(js, "a digit after '.'", i);
    while (i < len && json_is_digit(s[i])) i++;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= len || !json_is_digit(s[i]))
      return json_expected(js, "a digit in the exponent", i);
    while (i < len && json_is_digit(s[i])) i++;
  }
  *end = i;
  return 0;
}

/* Scan true, false or null at s[i]. */
static int json_literal(json_scan *js, size_t i, size_t *end) {
  static const char *const words[] = {"true", "false", "null"};
  for (size_t w = 0; w < 3; w++) {
    const char *p = words[w];
    if (js->s[i] != p[0]) continue;
    size_t k = 0;
    while (p[k] && i + k < js->len && js->s[i + k] == p[k]) k++;
    if (p[k]) return json_fail(js, "invalid literal at byte %zu (expected %s)", i, p);
    *end = i + k;
    return 0;
  }
  return json_expected(js, "a value", i);
}

/* The whole document.  *top is the first byte of the top value. */
static int json_document(json_scan *js, char *top) {
  /* bit d set: the container at depth d+1 is an object */
  unsigned char is_obj[(UTIL_JSON_MAX_DEPTH + 7) / 8] = {0};
  size_t depth = 0, i = json_skip_ws(js, 0);
  *top = i < js->len ? js->s[i] : 0;

  for (;;) {
    /* a value starts at i (whitespace skipped) */
    if (i >= js->len) return json_expected(js, "a value", i);
    char c = js->s[i];
    int rc;
    if (c == '{' || c == '[') {
      if (depth == UTIL_JSON_MAX_DEPTH)
        return json_fail(js, "nesting deeper than %d at byte %zu",
                         UTIL_JSON_MAX_DEPTH, i);
      unsigned char bit = (unsigned char)(1u << (depth % 8));
      if (c == '{')
        is_obj[depth / 8] |= bit;
      else
        is_obj[depth / 8] &= (unsigned char)~bit;
      depth++;
      i = json_skip_ws(js, i + 1);
      if (i < js->len && js->s[i] == (c == '{' ? '}' : ']')) {
        depth--; /* empty: the value ends here */
        i++;
      } else if (c == '[') {
        continue; /* the first element */
      } else {
        goto key;
      }
    } else {
      if (c == '"')
        rc = json_string(js, i, &i);
      else if (c == '-' || json_is_digit(c))
        rc = json_number(js, i, &i);
      else
        rc = json_literal(js, i, &i);
      if (rc) return rc;
    }

    /* a value ended just before i: what may follow it */
    for (;;) {
      i = json_skip_ws(js, i);
      if (depth == 0) {
        if (i < js->len) {
          char tmp[8];
          return json_fail(js, "unexpected %s at byte %zu after the value",
                           json_byte(js, i, tmp), i);
        }
        return 0;
      }
      int obj = (is_obj[(depth - 1) / 8] >> ((depth - 1) % 8)) & 1;
      char close = obj ? '}' : ']';
      if (i < js->len && js->s[i] == close) {
        depth--;
        i++;
        continue;
      }
      if (i < js->len && js->s[i] == ',') {
        i = json_skip_ws(js, i + 1);
        if (obj) goto key;
        break; /* the next element */
      }
      return json_expected(js, obj ? "',' or '}'" : "',' or ']'", i);
    }
    continue;

  key:
    /* an object member starts at i (whitespace skipped) */
    if (i >= js->len || js->s[i] != '"')
      return json_expected(js, "a string key", i);
    if (json_string(js, i, &i)) return -1;
    i = json_skip_ws(js, i);
    if (i >= js->len || js->s[i] != ':') return json_expected(js, "':'", i);
    i = json_skip_ws(js, i + 1);
  }
}

int util_json_valid(const char *s, size_t len, char *err, size_t errlen) {
  json_scan js = {s ? s : "", s ? len : 0, err, errlen, 0};
  char top;
  if (err && errlen) err[0] = '\0';
  return json_document(&js, &top);
}

int util_json_valid_js(const char *s, size_t len, char *err, size_t errlen) {
  json_scan js = {s ? s : "", s ? len : 0, err, errlen, 1};
  char top;
  if (err && errlen) err[0] = '\0';
  return json_document(&js, &top);
}

int util_json_is_object(const char *s, size_t len) {
  json_scan js = {s ? s : "", s ? len : 0, NULL, 0, 0};
  char top;
  return json_document(&js, &top) == 0 && top == '{';
}

/* ---- reading valid JSON ---------------------------------------------------- */

size_t util_json_ws(const char *s, size_t i, size_t len) {
  json_scan js = {s, len, NULL, 0, 0};
  return json_skip_ws(&js, i);
}

size_t util_json_end(const char *s, size_t i, size_t len) {
  if (i >= len) return len;
  if (s[i] == '"') {
    for (i++; i < len && s[i] != '"'; i++)
      if (s[i] == '\\') i++;
    return i < len ? i + 1 : len;
  }
  if (s[i] == '{' || s[i] == '[') {
    int depth = 0;
    for (; i < len; i++) {
      if (s[i] == '"') {
        i = util_json_end(s, i, len) - 1;
      } else if (s[i] == '{' || s[i] == '[') {
        depth++;
      } else if (s[i] == '}' || s[i] == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return len;
  }
  while (i < len && !strchr(",}] \t\n\r", s[i])) i++;
  return i;
}

/* The 4 hex digits at s[i] (valid JSON: they are there; past len reads 0). */
static unsigned long hex4(const char *s, size_t i, size_t len) {
  unsigned long v = 0;
  for (size_t k = i; k < i + 4; k++) v = v << 4 | (unsigned long)(k < len ? json_hex(s[k]) : 0);
  return v;
}

/* The string at s[i] decoded; js: lone surrogates as their 3-byte
** generalized UTF-8 and U+0000 as C0 80 (util_json_string_js), else
** lone surrogates as U+FFFD and U+0000 as a NUL byte. */
static size_t json_decode(const char *s, size_t i, size_t len, char *out, size_t *outlen, int js) {
  size_t n = 0;
  for (i++; i < len && s[i] != '"';) {
    if (s[i] != '\\') {
      out[n++] = s[i++];
      continue;
    }
    char e = i + 1 < len ? s[i + 1] : '"';
    i += 2;
    switch (e) {
    case 'b': out[n++] = '\b'; break;
    case 'f': out[n++] = '\f'; break;
    case 'n': out[n++] = '\n'; break;
    case 'r': out[n++] = '\r'; break;
    case 't': out[n++] = '\t'; break;
    case 'u': {
      unsigned long cp = hex4(s, i, len);
      i += 4;
      if (cp >= 0xD800 && cp < 0xDC00 && i + 5 < len && s[i] == '\\' && s[i + 1] == 'u') {
        unsigned long lo = hex4(s, i + 2, len);
        if (lo >= 0xDC00 && lo < 0xE000) { /* a pair */
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i += 6;
        }
      }
      if (cp >= 0xD800 && cp < 0xE000) { /* lone (util_json_valid_js lets it through) */
        if (js) {
          out[n++] = (char)0xED;
          out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
          out[n++] = (char)(0x80 | (cp & 0x3F));
        } else {
          n += util_utf8_put(out + n, 0xFFFD);
        }
      } else if (cp == 0 && js) {
        out[n++] = (char)0xC0;
        out[n++] = (char)0x80;
      } else {
        n += util_utf8_put(out + n, cp);
      }
      break;
    }
    default: out[n++] = e; /* " \\ / */
    }
  }
  *outlen = n;
  return i < len ? i + 1 : len;
}

size_t util_json_string(const char *s, size_t i, size_t len, char *out, size_t *outlen) {
  return json_decode(s, i, len, out, outlen, 0);
}

size_t util_json_string_js(const char *s, size_t i, size_t len, char *out, size_t *outlen) {
  return json_decode(s, i, len, out, outlen, 1);
}

int util_json_at_path(const char *s, size_t len, const char *path, size_t *v0, size_t *v1) {
  size_t i = util_json_ws(s, 0, len);
  if (!strcmp(path, "$")) {
    *v0 = i;
    *v1 = util_json_end(s, i, len);
    return 0;
  }
  while (*path) {
    const char *dot = strchr(path, '.');
    size_t plen = dot ? (size_t)(dot - path) : strlen(path);
    int found = 0;
    if (i < len && s[i] == '{') {
      i = util_json_ws(s, i + 1, len);
      while (i < len && s[i] == '"') {
        size_t k0 = i + 1, k1 = util_json_end(s, i, len) - 1; /* the key, raw */
        i = util_json_ws(s, util_json_ws(s, k1 + 1, len) + 1, len); /* past ':' */
        size_t e = util_json_end(s, i, len);
        if (k1 - k0 == plen && !memcmp(s + k0, path, plen)) {
          found = 1;
          break;
        }
        i = util_json_ws(s, e, len);
        if (i < len && s[i] == ',') i = util_json_ws(s, i + 1, len);
      }
    } else if (i < len && s[i] == '[') {
      char *endp;
      long idx = strtol(path, &endp, 10);
      if (endp == path + plen && plen && idx >= 0) {
        i = util_json_ws(s, i + 1, len);
        for (long k = 0; i < len && s[i] != ']'; k++) {
          if (k == idx) {
            found = 1;
            break;
          }
          i = util_json_ws(s, util_json_end(s, i, len), len);
          if (i < len && s[i] == ',') i = util_json_ws(s, i + 1, len);
        }
      }
    }
    if (!found) return -1;
    path += plen + (dot ? 1 : 0);
  }
  *v0 = i;
  *v1 = util_json_end(s, i, len);
  return 0;
}

static int json_strings(const char *s, size_t len, int (*each)(void *ctx, const char *str, size_t n), void *ctx,
                        char *err, size_t errlen, int js) {
  char verr[200];
  if ((js ? util_json_valid_js : util_json_valid)(s, len, verr, sizeof verr)) {
    snprintf(err, errlen, "malformed JSON: %s", verr);
    return UTIL_EINVAL;
  }
  size_t i = util_json_ws(s, 0, len);
  if (s[i] != '[') {
    snprintf(err, errlen, "not a JSON array");
    return UTIL_EINVAL;
  }
  i = util_json_ws(s, i + 1, len);
  if (s[i] == ']') return 0;
  char *buf = malloc(len + 1); /* a decoded string is never longer than its JSON form */
  if (!buf) return UTIL_ENOMEM;
  int rc = 0;
  for (int k = 0; rc == 0; k++) {
    i = util_json_ws(s, i, len);
    if (s[i] != '"') {
      snprintf(err, errlen, "element %d is not a string", k);
      rc = UTIL_EINVAL;
      break;
    }
    size_t n;
    i = json_decode(s, i, len, buf, &n, js);
    buf[n] = 0;
    rc = each(ctx, buf, n);
    i = util_json_ws(s, i, len);
    if (i >= len || s[i] != ',') break;
    i++;
  }
  free(buf);
  return rc;
}

int util_json_strings(const char *s, size_t len, int (*each)(void *ctx, const char *str, size_t n), void *ctx,
                      char *err, size_t errlen) {
  return json_strings(s, len, each, ctx, err, errlen, 0);
}

int util_json_strings_js(const char *s, size_t len, int (*each)(void *ctx, const char *str, size_t n), void *ctx,
                         char *err, size_t errlen) {
  return json_strings(s, len, each, ctx, err, errlen, 1);
}

int util_json_type(const char *s, size_t i, size_t len) {
  if (i >= len) return -1;
  switch (s[i]) {
  case 'n': return UTIL_JSON_NULL;
  case 't': return UTIL_JSON_TRUE;
  case 'f': return UTIL_JSON_FALSE;
  case '"': return UTIL_JSON_TEXT;
  case '[': return UTIL_JSON_ARRAY;
  case '{': return UTIL_JSON_OBJECT;
  default: break;
  }
  size_t e = util_json_end(s, i, len);
  for (size_t k = i; k < e; k++)
    if (s[k] == '.' || s[k] == 'e' || s[k] == 'E') return UTIL_JSON_REAL;
  return UTIL_JSON_INTEGER;
}

const char *util_json_type_name(int type) {
  static const char *const names[] = {"null", "true", "false", "integer", "real", "text", "array", "object"};
  return type >= 0 && type < (int)(sizeof names / sizeof names[0]) ? names[type] : "";
}

int util_json_number(const char *s, size_t i, size_t len, int64_t *n, double *d) {
  if (i >= len || (s[i] != '-' && !json_is_digit(s[i]))) return UTIL_EINVAL;
  size_t e = util_json_end(s, i, len);
  int type = util_json_type(s, i, len);
  if (type == UTIL_JSON_INTEGER) {
    /* exact: digits into the magnitude, as uint64, with overflow seen */
    int neg = s[i] == '-';
    uint64_t m = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    int over = 0;
    for (size_t k = i + (size_t)neg; k < e; k++) {
      unsigned dg = (unsigned)(s[k] - '0');
      if (m > (lim - dg) / 10) over = 1;
      else m = m * 10 + dg;
    }
    if (!over) {
      *n = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
      *d = (double)*n;
      return type;
    }
    *n = neg ? INT64_MIN : INT64_MAX;
  }
  /* strtod needs a NUL after the number, which s may not have */
  char small[64], *buf = e - i < sizeof small ? small : malloc(e - i + 1);
  if (!buf) return UTIL_ENOMEM;
  memcpy(buf, s + i, e - i);
  buf[e - i] = 0;
  locale_t old = util_c_locale_push(); /* '.' whatever LC_NUMERIC says */
  *d = strtod(buf, NULL);
  util_c_locale_pop(old);
  if (buf != small) free(buf);
  if (type == UTIL_JSON_REAL) *n = 0;
  return UTIL_JSON_REAL;
}

char *util_json_cstr(const char *s, size_t i, size_t len, size_t *n) {
  size_t e = util_json_end(s, i, len), m;
  char *out = malloc(e - i + 1); /* a decoded string is never longer than its JSON form */
  if (!out) return NULL;
  util_json_string(s, i, len, out, &m);
  out[m] = 0;
  if (n) *n = strlen(out); /* up to a \u0000, as json_each and json_extract end there */
  return out;
}

int util_json_iter_init(util_json_iter *it, const char *s, size_t i, size_t len) {
  memset(it, 0, sizeof *it);
  if (i >= len || (s[i] != '{' && s[i] != '[')) return UTIL_EINVAL;
  it->s = s;
  it->len = len;
  it->object = s[i] == '{';
  it->i = util_json_ws(s, i + 1, len);
  if (it->i < len && s[it->i] == (it->object ? '}' : ']')) it->i = len; /* empty */
  return 0;
}

int util_json_next(util_json_iter *it) {
  const char *s = it->s;
  size_t len = it->len, i = it->i;
  if (i >= len) return 0;
  if (it->object) {
    if (s[i] != '"') {
      it->i = len;
      return 0;
    }
    it->key = i;
    i = util_json_ws(s, util_json_end(s, i, len), len); /* at ':' */
    i = util_json_ws(s, i + 1, len);
  }
  it->v0 = i;
  it->v1 = util_json_end(s, i, len);
  i = util_json_ws(s, it->v1, len);
  /* past ',' to the next member; at the container's end, no more */
  it->i = i < len && s[i] == ',' ? util_json_ws(s, i + 1, len) : len;
  return 1;
}
