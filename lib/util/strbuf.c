/*
** lib/util/strbuf.c - a growable byte string.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "le.h"

static int grow(strbuf *sb, size_t extra) {
  if (sb->oom || sb->over) return -1;
  if (sb->limit && (extra > sb->limit || sb->len > sb->limit - extra)) {
    sb->over = 1;
    return -1;
  }
  if (sb->len + extra + 1 <= sb->cap) return 0;
  size_t ncap = sb->cap ? sb->cap : 64;
  while (ncap < sb->len + extra + 1) {
    if (ncap > ((size_t)-1) / 2) {
      sb->oom = 1;
      return -1;
    }
    ncap *= 2;
  }
  char *nb = realloc(sb->buf, ncap);
  if (!nb) {
    sb->oom = 1;
    return -1;
  }
  sb->buf = nb;
  sb->cap = ncap;
  return 0;
}

void strbuf_append(strbuf *sb, const char *s, size_t n) {
  if (grow(sb, n)) return;
  memcpy(sb->buf + sb->len, s, n);
  sb->len += n;
  sb->buf[sb->len] = '\0';
}

void strbuf_puts(strbuf *sb, const char *s) { strbuf_append(sb, s, strlen(s)); }

void strbuf_putc(strbuf *sb, char c) { strbuf_append(sb, &c, 1); }

void strbuf_put_le(strbuf *sb, uint64_t v, int n) {
  uint8_t b[8];
  util_put_le(b, v, n);
  strbuf_append(sb, (const char *)b, (size_t)n);
}

void strbuf_printf(strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    strbuf_append(sb, small, (size_t)n);
    return;
  }
  if (grow(sb, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  sb->len += (size_t)n;
}

void strbuf_json_escape(strbuf *sb, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    strbuf_append(sb, s + run, i - run);
    run = i + 1;
    char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
    switch (c) {
    case '"': esc[1] = '"'; break;
    case '\\': esc[1] = '\\'; break;
    case '\n': esc[1] = 'n'; break;
    case '\r': esc[1] = 'r'; break;
    case '\t': esc[1] = 't'; break;
    case '\b': esc[1] = 'b'; break;
    case '\f': esc[1] = 'f'; break;
    default:
      memcpy(esc + 1, "u00", 3);
      esc[4] = hex[c >> 4];
      esc[5] = hex[c & 15];
    }
    strbuf_puts(sb, esc);
  }
  strbuf_append(sb, s + run, n - run);
}

void strbuf_json_string(strbuf *sb, const char *s, size_t n) {
  strbuf_putc(sb, '"');
  strbuf_json_escape(sb, s, n);
  strbuf_putc(sb, '"');
}

void strbuf_free(strbuf *sb) {
  free(sb->buf);
  memset(sb, 0, sizeof *sb);
}
