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
#include "util/jsstr.h"

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
  int found = -1;
  while (util_json_next(&it)) { /* (the last of a key given twice, as JSON.parse takes it) */
    size_t klen;
    char *k = util_js_cstr(s, it.key, n, &klen);
    int same = k && klen == kl && !memcmp(k, key, kl);
    free(k);
    if (same) {
      *v0 = it.v0;
      *v1 = it.v1;
      found = 0;
    }
  }
  return found;
}

void mcp_bad_arg(mcp_out *o, const char *tool, const char *path, const char *key, const char *want) {
  mcp_out_error(o, "MCP error -32602: Input validation error: Invalid arguments for tool %s: Invalid input: "
                "expected %s at %s%s%s", tool, want, path ? path : "", path ? "." : "", key);
}

static char **strs(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                   int optional, size_t *count, mcp_out *o, char *(*str)(const char *, size_t, size_t, int *)) {
  size_t a, b;
  *count = 0;
  int absent = util_json_type(s, v0, v1) != UTIL_JSON_OBJECT || mcp_member(s + v0, v1 - v0, key, &a, &b);
  if (absent && optional) return NULL;
  if (absent || util_json_type(s + v0, a, v1 - v0) != UTIL_JSON_ARRAY) {
    mcp_bad_arg(o, tool, path, key, "array");
    return NULL;
  }
  util_json_iter it;
  util_json_iter_init(&it, s + v0, a, b);
  char **v = NULL;
  size_t cap = 0;
  while (util_json_next(&it)) {
    int is;
    char *x = str(s + v0, it.v0, it.v1, &is);
    if (!x) {
      char at[64];
      snprintf(at, sizeof at, "%s[%zu]", key, *count);
      mcp_bad_arg(o, tool, path, at, "string");
      break;
    }
    if (*count == cap) {
      cap = cap ? 2 * cap : 8;
      char **nv = realloc(v, cap * sizeof *nv);
      if (!nv) {
        free(x);
        mcp_out_error(o, "out of memory");
        break;
      }
      v = nv;
    }
    v[(*count)++] = x;
  }
  if (o->error) {
    mcp_strs_free(v, *count);
    *count = 0;
    return NULL;
  }
  return v ? v : calloc(1, sizeof *v);
}

char **mcp_strs(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                int optional, size_t *count, mcp_out *o) {
  return strs(tool, s, v0, v1, key, path, optional, count, o, mcp_str);
}

char **mcp_jstrs(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                 int optional, size_t *count, mcp_out *o) {
  return strs(tool, s, v0, v1, key, path, optional, count, o, mcp_jstr);
}

void mcp_strs_free(char **v, size_t n) {
  for (size_t k = 0; k < n; k++) free(v[k]);
  free(v);
}

char *mcp_jstr(const char *s, size_t v0, size_t v1, int *is) {
  *is = util_json_type(s, v0, v1) == UTIL_JSON_TEXT;
  return *is ? util_js_cstr(s, v0, v1, NULL) : NULL;
}

char *mcp_str(const char *s, size_t v0, size_t v1, int *is) {
  size_t n;
  *is = util_json_type(s, v0, v1) == UTIL_JSON_TEXT;
  char *js = *is ? util_js_cstr(s, v0, v1, &n) : NULL;
  if (!js || !util_js_special(js, n)) return js;
  strbuf f = {0};
  util_js_to_utf8(&f, js, n);
  free(js);
  if (!strbuf_failed(&f)) return f.buf;
  strbuf_free(&f);
  return NULL; /* (out of memory: *is stays 1) */
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
