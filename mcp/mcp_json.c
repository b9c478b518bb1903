/*
** mcp/mcp_json.c - reading tool arguments, and JSON.stringify(value, null,
** 2)'s layout for the text content of results (mcp.h).
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "util/json.h"

void mcp_out_error(mcp_out *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  free(o->error);
  o->error = strdup(buf);
}

int mcp_member(const char *s, size_t n, const char *key, size_t *v0, size_t *v1) {
  util_json_iter it;
  size_t i = util_json_ws(s, 0, n);
  if (util_json_type(s, i, n) != UTIL_JSON_OBJECT || util_json_iter_init(&it, s, i, n)) return -1;
  size_t kl = strlen(key);
  while (util_json_next(&it)) {
    size_t klen;
    char *k = util_json_cstr(s, it.key, n, &klen);
    int same = k && klen == kl && !memcmp(k, key, kl);
    free(k);
    if (same) {
      *v0 = it.v0;
      *v1 = it.v1;
      return 0;
    }
  }
  return -1;
}

char *mcp_str(const char *s, size_t v0, size_t v1, int *is) {
  *is = util_json_type(s, v0, v1) == UTIL_JSON_TEXT;
  return *is ? util_json_cstr(s, v0, v1, NULL) : NULL;
}

static void indent(strbuf *out, int depth) {
  strbuf_putc(out, '\n');
  for (int i = 0; i < depth; i++) strbuf_append(out, "  ", 2);
}

void mcp_pretty(const char *c, size_t n, strbuf *out) {
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = c[i];
    if (ch == '"') { /* a string, copied with its escapes */
      size_t j = i + 1;
      while (j < n && c[j] != '"') j += c[j] == '\\' ? 2 : 1;
      strbuf_append(out, c + i, j + 1 - i);
      i = j;
    } else if (ch == '{' || ch == '[') {
      if (i + 1 < n && (c[i + 1] == '}' || c[i + 1] == ']')) { /* {} and [] stay as they are */
        strbuf_putc(out, ch);
        strbuf_putc(out, c[++i]);
      } else {
        strbuf_putc(out, ch);
        indent(out, ++depth);
      }
    } else if (ch == '}' || ch == ']') {
      indent(out, --depth);
      strbuf_putc(out, ch);
    } else if (ch == ',') {
      strbuf_putc(out, ',');
      indent(out, depth);
    } else if (ch == ':') {
      strbuf_append(out, ": ", 2);
    } else {
      strbuf_putc(out, ch);
    }
  }
}
