/*
** lib/util/json.h - strict JSON (RFC 8259) validation.
**
** Checks that a byte string is exactly one JSON value, without building
** anything: no allocation, no recursion (an explicit stack of at most
** UTIL_JSON_MAX_DEPTH open containers lives in the caller's frame), one
** pass over the input.  Independent of the process locale.
**
** What "strict" means here:
**   - one value (object, array, string, number, true, false, null) with
**     optional whitespace (space, tab, LF, CR) around it; nothing else;
**   - numbers in the RFC grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
**     (no leading '+', no leading zeros, no ".5", no "1.", no NaN/Infinity);
**   - strings are valid UTF-8 (no overlong forms, no UTF-8-encoded
**     surrogates, nothing above U+10FFFF), hold no raw byte below 0x20,
**     and use only the escapes \" \\ \/ \b \f \n \r \t \uXXXX; a \u escape
**     of a high surrogate must be followed at once by a \u escape of a low
**     surrogate, and a low surrogate may not stand alone;
**   - no more than UTIL_JSON_MAX_DEPTH nested objects and arrays;
**   - a NUL byte inside len is an ordinary (and so invalid) byte.
** Duplicate object keys are allowed (RFC 8259 says SHOULD be unique).
**
** And reading a value it has passed, without building a tree: skipping
** values, finding one at a path, decoding strings, the strings of an
** array.  These trust the grammar (util_json_valid said 0) but never read
** past len.
*/
#ifndef H5MEM_UTIL_JSON_H
#define H5MEM_UTIL_JSON_H

#include <stddef.h>

/* Objects and arrays may nest this deep ("[[1]]" is depth 2); one more
** level is an error. */
#define UTIL_JSON_MAX_DEPTH 1000

/* 0 when s[0..len) is exactly one JSON value; otherwise -1, and (when err
** is not NULL and errlen > 0) a NUL-terminated message naming the problem
** and its byte offset, e.g. "expected ':' at byte 12, found '}'",
** "invalid UTF-8 at byte 3", "nesting deeper than 1000 at byte 1000".
** s may be NULL when len is 0.  Linear in len. */
int util_json_valid(const char *s, size_t len, char *err, size_t errlen);

/* 1 when s[0..len) is valid JSON (as util_json_valid) and its top value is
** an object, 0 otherwise. */
int util_json_is_object(const char *s, size_t len);

/* ---- reading valid JSON ---------------------------------------------------- */

/* i moved past JSON whitespace (at most to len). */
size_t util_json_ws(const char *s, size_t i, size_t len);

/* The offset just past the value that starts at s[i] (len when i >= len). */
size_t util_json_end(const char *s, size_t i, size_t len);

/* The string that starts at s[i] (a '"') decoded into out: escapes and
** surrogate pairs become UTF-8, \u0000 a NUL byte.  out needs room for the
** string's raw length (a decoded string is never longer); the decoded
** length goes to *outlen.  Returns the offset past the closing quote. */
size_t util_json_string(const char *s, size_t i, size_t len, char *out, size_t *outlen);

/* The value at a dotted path in s[0..len): "$" is the top value, "a.b"
** member b of member a, "content.0" element 0 of member content (members
** match by their raw key, escapes as written).  Its span in *v0, *v1;
** returns 0, or -1 when there is none. */
int util_json_at_path(const char *s, size_t len, const char *path, size_t *v0, size_t *v1);

/* Calls each(ctx, str, n) for each element of the JSON array s[0..len), in
** order, each a string decoded as util_json_string does (NUL-terminated,
** n bytes), and stops at the first nonzero return, which it returns.
** Checks s first: UTIL_EINVAL with a message in err for malformed JSON
** ("malformed JSON: ..."), a top value that is not an array ("not a JSON
** array") or an element that is not a string ("element 2 is not a
** string"); UTIL_ENOMEM out of memory (util/err.h; each must return
** neither). */
int util_json_strings(const char *s, size_t len, int (*each)(void *ctx, const char *str, size_t n),
                      void *ctx, char *err, size_t errlen);

#endif /* H5MEM_UTIL_JSON_H */
