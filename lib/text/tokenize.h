/*
** lib/text/tokenize.h - words out of text, exactly as SQLite's FTS5 finds
** them: its unicode61 tokenizer (default categories "L* N* Co"), and its
** porter tokenizer wrapped around it.
**
** "Exactly" means token for token, byte for byte and offset for offset,
** for any input bytes (test/sql/test_tokenize.py compares with FTS5 itself):
**
**   - A token is a run of token characters (letters, numbers, private use,
**     and code points that Unicode 6.1 did not assign) and of the combining
**     marks U+0300..U+0331 that unicode61 calls diacritics, starting with a
**     token character.  Everything else separates tokens.
**   - Tokens are case folded (simple folding, Unicode 6.1) and, with
**     remove_diacritics 1, Latin letters with one diacritic lose it
**     ("é" -> "e"); with 2, letters with several too ("ệ" -> "e").  The
**     marks themselves are dropped with 1 and 2, kept with 0.
**   - Invalid UTF-8 is read as unicode61 reads it: a lead byte takes every
**     continuation byte that follows; a truncated, overlong (below U+0080),
**     surrogate or U+FFFE/U+FFFF sequence is U+FFFD (a separator); a stray
**     continuation byte 0x80..0xBF is the code point of that value (so
**     0xAA is "ª", a letter).  Values above U+10FFFF are token characters
**     and are written back in four bytes (not valid UTF-8).  Tokens are
**     therefore valid UTF-8 whenever the input is.
**   - porter stems tokens of 3 to 64 bytes with FTS5's Porter rules, byte
**     by byte: non-ASCII bytes count as consonants, so non-ASCII tokens
**     are stemmed too ("cafés" -> "café" with remove_diacritics 0), which
**     can (rarely) cut a UTF-8 sequence, exactly as FTS5 does.
**
** Tokens are not truncated (FTS5's index keeps at most 32768 bytes of one).
*/
#ifndef H5MEM_TEXT_TOKENIZE_H
#define H5MEM_TEXT_TOKENIZE_H

#include <stddef.h>

#include "util/err.h"

typedef struct text_tok_opts {
  int remove_diacritics; /* 0, 1 (FTS5's default) or 2, as FTS5's unicode61 option */
  int porter;            /* 1: stem each token as FTS5's `porter` tokenizer does */
} text_tok_opts;

/* fn gets each token: folded UTF-8 bytes tok[0..ntok) (not NUL-terminated,
** valid only during the call) and the byte range [start, end) of the source
** text it came from.  Non-zero from fn stops the run and is returned. */
typedef int (*text_tok_fn)(void *ctx, const char *tok, size_t ntok, size_t start, size_t end);

enum { TEXT_OK = UTIL_OK, TEXT_ENOMEM = UTIL_ENOMEM }; /* the one error space (util/err.h) */

/* Tokenize s[0..n) as FTS5's unicode61 tokenizer with default categories
** ("L* N* Co") and the given options.  Thread-safe, no global state.
** o NULL: the defaults (remove_diacritics 1, porter 0).
**
** Reads s[0..n) only (s may be NULL when n is 0; NUL bytes are separators).
** Tokens up to 256 bytes are built on the stack; a longer one takes a
** malloc'd buffer, freed before return, and TEXT_ENOMEM if that fails.
** A remove_diacritics outside 0..2 behaves as 1.  Returns TEXT_OK, the
** callback's non-zero value, or TEXT_ENOMEM. */
int text_tokenize(const text_tok_opts *o, const char *s, size_t n, text_tok_fn fn, void *ctx);

#endif /* H5MEM_TEXT_TOKENIZE_H */
