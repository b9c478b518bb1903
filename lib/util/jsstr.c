/*
** lib/util/jsstr.c - JavaScript strings held in C strings (jsstr.h).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsstr.h"

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
  static const char hex[] = "0123456789abcdef";
  strbuf_putc(sb, '"');
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    size_t sp = c >= 0x80 ? special_at(s, i, n) : 0;
    if (c >= 0x20 && c != '"' && c != '\\' && !sp) continue;
    strbuf_append(sb, s + run, i - run);
    char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
    unsigned cp = sp == 3 ? (c & 0x0Fu) << 12 | ((unsigned char)s[i + 1] & 0x3Fu) << 6 | ((unsigned char)s[i + 2] & 0x3Fu)
                          : sp == 2 ? 0 : c;
    switch (sp ? -1 : c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    default:
      esc[1] = 'u';
      for (int k = 0; k < 4; k++) esc[2 + k] = hex[(cp >> (12 - 4 * k)) & 15];
    }
    strbuf_puts(sb, esc);
    if (sp) i += sp - 1;
    run = i + 1;
  }
  strbuf_append(sb, s + run, n - run);
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
  size_t v0, v1, ln, jn, i;
  char *lit = NULL, *js = NULL, path[64];
  strbuf t = {0};
  snprintf(path, sizeof path, "jsonl.%s", field);
  if (meta && !util_json_valid(meta, metan, NULL, 0) && !util_json_at_path(meta, metan, path, &v0, &v1) &&
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
