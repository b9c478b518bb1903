/*
** lib/util/jsstr.c - JavaScript strings held in C strings (jsstr.h).
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsstr.h"
#include "utf8.h"

/* The length of the JS-UTF-8 sequence at s[i] that is not the store's
** form: 3 for a lone surrogate, 2 for U+0000, else 0. */
static size_t special_at(const char *s, size_t i, size_t n) {
  unsigned char c = (unsigned char)s[i];
  if (c == 0xC0 && i + 1 < n && (unsigned char)s[i + 1] == 0x80) return 2;
  if (c == 0xED && i + 2 < n && (unsigned char)s[i + 1] >= 0xA0) return 3;
  return 0;
}

char *util_js_cstr(const char *s, size_t i, size_t len, size_t *n) {
  size_t e = util_json_end(s, i, len), m;
  char *out = malloc(e - i + 1); /* never longer than its JSON form */
  if (!out) return NULL;
  util_json_string_js(s, i, len, out, &m);
  out[m] = 0;
  if (n) *n = m;
  return out;
}

void util_js_stringify(strbuf *sb, const char *s, size_t n) {
  strbuf_putc(sb, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    size_t sp = (unsigned char)s[i] >= 0x80 ? special_at(s, i, n) : 0;
    if (!sp) continue;
    strbuf_json_escape(sb, s + run, i - run);
    unsigned cp = sp == 2 ? 0
                          : ((unsigned char)s[i] & 0x0Fu) << 12 | ((unsigned char)s[i + 1] & 0x3Fu) << 6 |
                                ((unsigned char)s[i + 2] & 0x3Fu);
    strbuf_printf(sb, "\\u%04x", cp);
    i += sp - 1;
    run = i + 1;
  }
  strbuf_json_escape(sb, s + run, n - run);
  strbuf_putc(sb, '"');
}

size_t util_js_to_utf8(strbuf *out, const char *s, size_t n) {
  size_t run = 0, k = 0;
  for (size_t i = 0; i < n; i++) {
    size_t sp = (unsigned char)s[i] >= 0x80 ? special_at(s, i, n) : 0;
    if (!sp) continue;
    strbuf_append(out, s + run, i - run);
    strbuf_append(out, "\xEF\xBF\xBD", 3);
    k++;
    i += sp - 1;
    run = i + 1;
  }
  strbuf_append(out, s + run, n - run);
  return k;
}

int util_js_special(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] >= 0x80 && special_at(s, i, n)) return 1;
  return 0;
}

int util_js_keep(strbuf *meta, const char *field, const char *s, size_t n) {
  if (!util_js_special(s, n)) return 0;
  strbuf lit = {0};
  util_js_stringify(&lit, s, n);
  strbuf_puts(meta, meta->len ? "," : "{\"jsonl\":{");
  strbuf_json_string(meta, field, strlen(field));
  strbuf_putc(meta, ':');
  if (strbuf_failed(&lit)) meta->oom = 1;
  else strbuf_json_string(meta, lit.buf, lit.len);
  strbuf_free(&lit);
  return 1;
}

void util_js_meta_close(strbuf *meta) {
  if (meta->len) strbuf_puts(meta, "}}");
}

int util_js_placeholder(const char *meta, size_t n) {
  size_t v0, v1;
  return meta && !util_json_valid(meta, n, NULL, 0) && !util_json_at_path(meta, n, "jsonl.placeholder", &v0, &v1) &&
         util_json_type(meta, v0, n) == UTIL_JSON_TRUE;
}

void util_js_kept(strbuf *out, const char *stored, size_t n, const char *meta, size_t metan, const char *field) {
  if (!meta) { /* (most records: no original kept) */
    strbuf_append(out, stored, n);
    return;
  }
  size_t v0, v1, ln, jn, i;
  char *lit = NULL, *js = NULL, path[64];
  strbuf t = {0};
  snprintf(path, sizeof path, "jsonl.%s", field);
  if (!util_json_valid(meta, metan, NULL, 0) && !util_json_at_path(meta, metan, path, &v0, &v1) &&
      util_json_type(meta, v0, metan) == UTIL_JSON_TEXT && (lit = util_json_cstr(meta, v0, metan, &ln)) &&
      !util_json_valid_js(lit, ln, NULL, 0) && lit[i = util_json_ws(lit, 0, ln)] == '"' &&
      (js = util_js_cstr(lit, i, ln, &jn))) {
    util_js_to_utf8(&t, js, jn);
    if (!strbuf_failed(&t) && t.len == n && (!n || !memcmp(t.buf, stored, n))) {
      strbuf_append(out, js, jn);
      n = 0, stored = NULL;
    }
  }
  if (stored) strbuf_append(out, stored, n);
  strbuf_free(&t);
  free(js);
  free(lit);
}

/* ---- toLowerCase ------------------------------------------------------------ */

/* jslower_data.c */
extern const size_t util_js_lower_n, util_js_cased_n, util_js_ignorable_n;
extern const uint32_t util_js_lower_map[][2], util_js_cased[][2], util_js_ignorable[][2];

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r[mid][1] < cp) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && r[lo][0] <= cp;
}

static uint32_t lower_of(uint32_t cp) {
  size_t lo = 0, hi = util_js_lower_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (util_js_lower_map[mid][0] < cp) lo = mid + 1;
    else hi = mid;
  }
  return lo < util_js_lower_n && util_js_lower_map[lo][0] == cp ? util_js_lower_map[lo][1] : cp;
}

/* The code point at s[i] (JS-UTF-8, i < n) and its length; a lone
** surrogate or U+0000 (or a byte that starts no sequence) as UINT32_MAX:
** neither cased nor case-ignorable, never mapped. */
static size_t cp_at(const char *s, size_t i, size_t n, uint32_t *cp) {
  const unsigned char *p = (const unsigned char *)s + i;
  int ok;
  size_t k = util_utf8_span(p, n - i, &ok);
  if (!ok) {
    size_t sp = special_at(s, i, n);
    *cp = UINT32_MAX;
    return sp ? sp : k;
  }
  uint32_t v = k == 1 ? p[0] : k == 2 ? p[0] & 0x1Fu : k == 3 ? p[0] & 0x0Fu : p[0] & 0x07u;
  for (size_t j = 1; j < k; j++) v = v << 6 | (p[j] & 0x3Fu);
  *cp = v;
  return k;
}

/* Final_Sigma's context of the U+03A3 at s[i .. i + 2). */
static int final_sigma(const char *s, size_t i, size_t n) {
  int before = 0;
  for (size_t j = i; j > 0;) {
    size_t b = j - 1;
    while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) b--; /* (the start of the one before) */
    uint32_t cp;
    cp_at(s, b, n, &cp);
    j = b;
    if (cp != UINT32_MAX && in_ranges(util_js_ignorable, util_js_ignorable_n, cp)) continue;
    before = cp != UINT32_MAX && in_ranges(util_js_cased, util_js_cased_n, cp);
    break;
  }
  if (!before) return 0;
  for (size_t j = i + 2; j < n;) {
    uint32_t cp;
    j += cp_at(s, j, n, &cp);
    if (cp != UINT32_MAX && in_ranges(util_js_ignorable, util_js_ignorable_n, cp)) continue;
    return !(cp != UINT32_MAX && in_ranges(util_js_cased, util_js_cased_n, cp));
  }
  return 1;
}

void util_js_lower(strbuf *out, const char *s, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n;) {
    unsigned char c = (unsigned char)s[i];
    char rep[8];
    size_t rn = 0, k = 1;
    if (c < 0x80) {
      if (c >= 'A' && c <= 'Z') rep[0] = (char)(c + 32), rn = 1;
    } else {
      uint32_t cp;
      k = cp_at(s, i, n, &cp);
      if (cp == 0x130) {
        memcpy(rep, "i\xCC\x87", 3);
        rn = 3;
      } else if (cp == 0x3A3) {
        memcpy(rep, final_sigma(s, i, n) ? "\xCF\x82" : "\xCF\x83", 2);
        rn = 2;
      } else if (cp != UINT32_MAX) {
        uint32_t l = lower_of(cp);
        if (l != cp) rn = util_utf8_put(rep, l);
      }
    }
    if (rn) {
      strbuf_append(out, s + run, i - run);
      strbuf_append(out, rep, rn);
      run = i + k;
    }
    i += k;
  }
  strbuf_append(out, s + run, n - run);
}
