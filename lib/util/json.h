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
** values, finding one at a path, decoding strings and numbers, the members
** of an object or array one by one, the strings of an array.  These trust
** the grammar (util_json_valid said 0) but never read past len.  Types,
** numbers and decoded strings are what SQLite's json_each and json_type
** give, so that option parsing needs no SQL (see util_json_cstr for NUL).
*/
#ifndef H5MEM_UTIL_JSON_H
#define H5MEM_UTIL_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Objects and arrays may nest this deep ("[[1]]" is depth 2); one more
** level is an error. */
#define UTIL_JSON_MAX_DEPTH 1000

/* 0 when s[0..len) is exactly one JSON value; otherwise -1, and (when err
** is not NULL and errlen > 0) a NUL-terminated message naming the problem
** and its byte offset, e.g. "expected ':' at byte 12, found '}'",
** "invalid UTF-8 at byte 3", "nesting deeper than 1000 at byte 1000".
** s may be NULL when len is 0.  Linear in len. */
int util_json_valid(const char *s, size_t len, char *err, size_t errlen);

/* The same, as JavaScript's JSON.parse reads JSON: a \u escape of a lone
** surrogate (\ud800 without its pair, as JSON.stringify writes a string
** holding one) is allowed.  Read such text with util_json_string_js, or
** util_json_string, which makes each a U+FFFD. */
int util_json_valid_js(const char *s, size_t len, char *err, size_t errlen);

/* 1 when s[0..len) is valid JSON (as util_json_valid) and its top value is
** an object, 0 otherwise. */
int util_json_is_object(const char *s, size_t len);

/* ---- reading valid JSON ---------------------------------------------------- */

/* i moved past JSON whitespace (at most to len). */
size_t util_json_ws(const char *s, size_t i, size_t len);

/* The offset just past the value that starts at s[i] (len when i >= len). */
size_t util_json_end(const char *s, size_t i, size_t len);

/* The string that starts at s[i] (a '"') decoded into out: escapes and
** surrogate pairs become UTF-8, \u0000 a NUL byte, a lone surrogate
** U+FFFD.  out needs room for the string's raw length (a decoded string is
** never longer); the decoded length goes to *outlen.  Returns the offset
** past the closing quote. */
size_t util_json_string(const char *s, size_t i, size_t len, char *out, size_t *outlen);
/* The same into the JS-UTF-8 form of lib/util/jsstr.h, which keeps every
** JavaScript string exactly: a lone surrogate as its 3 bytes (ED A0 80 ..
** ED BF BF), \u0000 as C0 80. */
size_t util_json_string_js(const char *s, size_t i, size_t len, char *out, size_t *outlen);

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
/* The same for JavaScript's JSON (util_json_valid_js), each string in
** JS-UTF-8 (util_json_string_js). */
int util_json_strings_js(const char *s, size_t len, int (*each)(void *ctx, const char *str, size_t n), void *ctx,
                         char *err, size_t errlen);

/* The type of a value, by the names SQLite's json_type() and json_each
** use (util_json_type_name). */
enum {
  UTIL_JSON_NULL,
  UTIL_JSON_TRUE,
  UTIL_JSON_FALSE,
  UTIL_JSON_INTEGER, /* a number without '.' or exponent, however large */
  UTIL_JSON_REAL,
  UTIL_JSON_TEXT,
  UTIL_JSON_ARRAY,
  UTIL_JSON_OBJECT
};

/* The type of the value that starts at s[i]; -1 when i >= len. */
int util_json_type(const char *s, size_t i, size_t len);

/* "null", "true", "false", "integer", "real", "text", "array", "object";
** "" for anything else. */
const char *util_json_type_name(int type);

/* The number that starts at s[i]: its value, the nearest double, in *d
** (whatever the process locale; 1e400 is inf).  An integer (by
** util_json_type) also goes to *n: exact when it fits in int64, and *d is
** then (double)*n, so "-0" is 0.0; else clamped to INT64_MIN or INT64_MAX.
** Returns what SQLite's JSON functions give the value as: UTIL_JSON_INTEGER
** for an integer that fits in int64, UTIL_JSON_REAL for any other number
** (an integer too large for int64 included, though its type is
** "integer"); UTIL_EINVAL when s[i] starts no number, UTIL_ENOMEM out of
** memory (a number of more than 63 bytes is copied). */
int util_json_number(const char *s, size_t i, size_t len, int64_t *n, double *d);

/* The string that starts at s[i] (a '"') decoded into a malloc'd,
** NUL-terminated copy, as SQLite's JSON functions give it: a \u0000
** ends it there.  Its length in *n (when n is not NULL); NULL out of
** memory. */
char *util_json_cstr(const char *s, size_t i, size_t len, size_t *n);

/* The members of the object, or the elements of the array, that starts at
** s[i], in order (duplicate keys each in turn):
**   util_json_iter it;
**   if (util_json_iter_init(&it, s, i, len) == 0)
**     while (util_json_next(&it)) ... it.key, it.v0, it.v1 ...
** key is the offset of a member's key (its '"', for util_json_cstr or
** util_json_string), 0 for an element; [v0, v1) the value's span. */
typedef struct util_json_iter {
  const char *s;
  size_t len;
  size_t i;      /* where the next member starts, or len when there is none */
  int object;    /* iterating an object's members */
  size_t key;    /* the current member's key */
  size_t v0, v1; /* the current value */
} util_json_iter;

/* 0, or UTIL_EINVAL when s[i] starts no object or array. */
int util_json_iter_init(util_json_iter *it, const char *s, size_t i, size_t len);

/* 1 with the next member in it, 0 when there are no more. */
int util_json_next(util_json_iter *it);

#endif /* H5MEM_UTIL_JSON_H */
