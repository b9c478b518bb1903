/*
** lib/text/tokenize.c - the unicode61 tokenizer (see tokenize.h for what
** it does; unicode.h and unicode_data.c for the character classes).
**
** One pass over the input, no state outside the call: skip separators,
** then fold token characters into a buffer until the next separator, hand
** the token to the callback, repeat.  The asymmetry of unicode61 is kept:
** a combining mark (text_uc_is_mark) continues a token but never starts one.
*/
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/text_int.h"
#include "text/tokenize.h"
#include "text/unicode.h"

/* Folded bytes of one token kept on the stack; longer tokens move to the
** heap. */
#define TOK_STACK 256

/* Reads the character at z[i] (i < n) as unicode61 does and returns the
** index after it.  A lead byte 0xC0..0xFF takes all the continuation bytes
** that follow, whatever its length says (the value wraps at 32 bits);
** a result below 0x80, a surrogate or U+FFFE/U+FFFF becomes U+FFFD.  A
** continuation byte alone is its own value. */
static size_t utf8_read(const unsigned char *z, size_t i, size_t n, uint32_t *out) {
  uint32_t c = z[i++];
  if (c >= 0xC0) {
    if (c < 0xE0) c &= 0x1F;
    else if (c < 0xF0) c &= 0x0F;
    else if (c < 0xF8) c &= 0x07;
    else if (c < 0xFC) c &= 0x03;
    else if (c < 0xFE) c &= 0x01;
    else c = 0;
    while (i < n && (z[i] & 0xC0) == 0x80) c = (c << 6) + (z[i++] & 0x3Fu);
    if (c < 0x80 || (c & 0xFFFFF800u) == 0xD800 || (c & 0xFFFFFFFEu) == 0xFFFE) c = 0xFFFD;
  }
  *out = c;
  return i;
}

/* Writes c at o as unicode61 writes it: 1 to 3 bytes below U+10000, else
** 4 bytes holding the low 21 bits.  Returns the bytes written. */
static size_t utf8_write(char *o, uint32_t c) {
  unsigned char *u = (unsigned char *)o;
  if (c < 0x80) {
    u[0] = (unsigned char)c;
    return 1;
  }
  if (c < 0x800) {
    u[0] = (unsigned char)(0xC0 | (c >> 6));
    u[1] = (unsigned char)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    u[0] = (unsigned char)(0xE0 | (c >> 12));
    u[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (c & 0x3F));
    return 3;
  }
  u[0] = (unsigned char)(0xF0 | ((c >> 18) & 0x07));
  u[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
  u[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
  u[3] = (unsigned char)(0x80 | (c & 0x3F));
  return 4;
}

/* The token buffer: starts on the caller's stack, moves to the heap when a
** token outgrows it.  text_tokenize frees the heap copy. */
typedef struct tok_buf {
  char *p;
  size_t cap;
  char stack[TOK_STACK];
} tok_buf;

/* Room for 4 more bytes after len; -1 when memory runs out. */
static int tok_reserve(tok_buf *b, size_t len) {
  if (len + 4 <= b->cap) return 0;
  size_t cap = b->cap * 2;
  char *p = b->p == b->stack ? malloc(cap) : realloc(b->p, cap);
  if (!p) return -1;
  if (b->p == b->stack) memcpy(p, b->stack, len);
  b->p = p;
  b->cap = cap;
  return 0;
}

int text_tokenize(const text_tok_opts *o, const char *s, size_t n, text_tok_fn fn, void *ctx) {
  const unsigned char *z = (const unsigned char *)s;
  int rd = o ? o->remove_diacritics : 1;
  int porter = o ? o->porter : 0;
  tok_buf b;
  size_t i = 0;
  int rc = TEXT_OK;

  if (rd < 0 || rd > 2) rd = 1;
  b.p = b.stack;
  b.cap = sizeof b.stack;
  while (rc == TEXT_OK) {
    size_t start, end, len = 0;
    uint32_t c;

    /* separators */
    for (;;) {
      if (i >= n) goto done;
      if (z[i] < 0x80) {
        if (text_uc_is_token(z[i])) break;
        i++;
      } else {
        size_t next = utf8_read(z, i, n, &c);
        if (text_uc_is_token(c)) break;
        i = next;
      }
    }

    /* the token: z[i] starts it */
    start = end = i;
    while (i < n) {
      if (tok_reserve(&b, len)) {
        rc = TEXT_ENOMEM;
        goto done;
      }
      if (z[i] < 0x80) {
        if (!text_uc_is_token(z[i])) break;
        b.p[len++] = (char)(z[i] >= 'A' && z[i] <= 'Z' ? z[i] + 32 : z[i]);
        i++;
      } else {
        size_t next = utf8_read(z, i, n, &c);
        if (!text_uc_is_token(c) && !text_uc_is_mark(c)) break;
        c = text_uc_fold(c, rd);
        if (c) len += utf8_write(b.p + len, c);
        i = next;
      }
      end = i;
    }
    if (porter) len = text_porter_stem(b.p, len);
    rc = fn(ctx, b.p, len, start, end);
  }
done:
  if (b.p != b.stack) free(b.p);
  return rc;
}
