/*
** lib/util/utf8.h - well-formed UTF-8: checking it, and repairing it.
**
** "Well-formed" is Table 3-7 of the Unicode Standard: no overlong forms
** (C0, C1, E0 80..9F, F0 80..8F), no surrogates (ED A0..BF), nothing past
** U+10FFFF (F4 90.., F5..FF), no stray continuation bytes, no sequence cut
** short.  It is what h5py's .asstr(), Python's bytes.decode() and every
** strict reader accept.  No allocation except util_utf8_repair's output;
** independent of the locale.
*/
#ifndef H5MEM_UTIL_UTF8_H
#define H5MEM_UTIL_UTF8_H

#include <stddef.h>

#include "util/strbuf.h"

/* How many bytes of p[0..left) (left >= 1) the character at p takes: the
** whole sequence when it is well-formed (*ok = 1), else its maximal
** subpart (the longest beginning of a well-formed sequence, at least one
** byte: the span one U+FFFD replaces under the Standard's "maximal
** subpart" practice, as Python and WHATWG do) with *ok = 0. */
size_t util_utf8_span(const unsigned char *p, size_t left, int *ok);

/* The offset of the first byte of s[0..n) that begins an ill-formed
** sequence, or of the first NUL byte unless nul_ok, or n when there is
** neither (s may be NULL when n is 0).  Linear; ASCII runs go 8 bytes at a
** time. */
size_t util_utf8_check(const char *s, size_t n, int nul_ok);

/* s[0..n) appended to out with each maximal ill-formed subpart replaced by
** U+FFFD (EF BF BD); the number of replacements is returned (0: s was
** well-formed and is copied as it is).  Errors are out's (strbuf_failed). */
size_t util_utf8_repair(strbuf *out, const char *s, size_t n);

/* Code point cp (at most U+10FFFF, not a surrogate) as UTF-8 into o,
** which has room for 4 bytes; returns the bytes written (1 to 4). */
size_t util_utf8_put(char *o, unsigned long cp);

#endif /* H5MEM_UTIL_UTF8_H */
