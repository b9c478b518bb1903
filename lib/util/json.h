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

#endif /* H5MEM_UTIL_JSON_H */
