/*
** lib/util/utf8.c - well-formed UTF-8 (utf8.h): the one place that knows
** which byte sequences are; the JSON validator, the store's writers, the
** h5 table, h5mem_migrate and h5mem_tokenize ask here.
*/
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "utf8.h"

size_t util_utf8_span(const unsigned char *p, size_t left, int *ok) {
  unsigned c = p[0], lo = 0x80, hi = 0xBF; /* the range of the second byte */
  size_t need, k = 1;
  *ok = 0;
  if (c < 0x80) {
    *ok = 1;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0; /* overlong */
    if (c == 0xED) hi = 0x9F; /* surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90; /* overlong */
    if (c == 0xF4) hi = 0x8F; /* past U+10FFFF */
  } else {
    return 1; /* a continuation byte, C0, C1, F5..FF */
  }
  while (k < need && k < left) {
    unsigned b = p[k];
    if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) break;
    k++;
  }
  *ok = k == need;
  return k;
}

/* Whether the 8 bytes at p are ASCII without NUL (nul_ok: ASCII). */
static int ascii8(const unsigned char *p, int nul_ok) {
  uint64_t w;
  memcpy(&w, p, 8);
  if (w & 0x8080808080808080ULL) return 0;
  /* a zero byte: (w - 0x01..) & ~w & 0x80.. is nonzero exactly then */
  return nul_ok || !((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL);
}

size_t util_utf8_check(const char *s, size_t n, int nul_ok) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8 && ascii8(p + i, nul_ok)) {
      i += 8;
      continue;
    }
    if (p[i] == 0 && !nul_ok) return i;
    int ok;
    size_t k = util_utf8_span(p + i, n - i, &ok);
    if (!ok) return i;
    i += k;
  }
  return n;
}

size_t util_utf8_repair(strbuf *out, const char *s, size_t n) {
  size_t fixed = 0, i, run = 0;
  if (n == 0) return 0;
  while ((i = run + util_utf8_check(s + run, n - run, 1)) < n) {
    int ok;
    size_t k = util_utf8_span((const unsigned char *)s + i, n - i, &ok);
    strbuf_append(out, s + run, i - run);
    strbuf_append(out, "\xEF\xBF\xBD", 3);
    fixed++;
    run = i + k;
  }
  strbuf_append(out, s + run, n - run);
  return fixed;
}

size_t util_utf8_put(char *o, unsigned long cp) {
  if (cp < 0x80) {
    o[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (char)(0xC0 | (cp >> 6));
    o[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12));
    o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18));
  o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}
