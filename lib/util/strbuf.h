/*
** lib/util/strbuf.h - a growable byte string.
**
** Errors are sticky: after a failed allocation (oom) or an append past the
** limit (over) every append is a no-op; check strbuf_failed() once at the
** end.  The text is always
** NUL-terminated (when sb.buf is not NULL).
*/
#ifndef H5MEM_UTIL_STRBUF_H
#define H5MEM_UTIL_STRBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct strbuf {
  char *buf; /* malloc'd; the caller frees it (or strbuf_free) */
  size_t len, cap;
  size_t limit; /* when not 0, the text may not grow beyond limit bytes */
  int oom;      /* an allocation failed */
  int over;     /* an append would have passed the limit */
} strbuf;

static inline int strbuf_failed(const strbuf *sb) { return sb->oom || sb->over; }

void strbuf_append(strbuf *sb, const char *s, size_t n);
void strbuf_puts(strbuf *sb, const char *s);
void strbuf_putc(strbuf *sb, char c);
/* the low n bytes (n <= 8) of v, little-endian (util/le.h) */
void strbuf_put_le(strbuf *sb, uint64_t v, int n);
void strbuf_printf(strbuf *sb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* s (n bytes) as a JSON string literal, quotes included; s must be UTF-8.
** As JSON.stringify writes it: " and \ escaped, \b \f \n \r \t, the other
** bytes below 0x20 as \u00xx (lowercase), the rest as it is. */
void strbuf_json_string(strbuf *sb, const char *s, size_t n);
/* The same without the quotes. */
void strbuf_json_escape(strbuf *sb, const char *s, size_t n);
void strbuf_free(strbuf *sb);

#endif
