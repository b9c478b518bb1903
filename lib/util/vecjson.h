/*
** lib/util/vecjson.h - JSON arrays of numbers <-> float32 (and int8) vectors.
**
** Strict JSON (RFC 8259) numbers only: no NaN, Infinity, hex, leading '+'
** or trailing commas.  Decimal conversion is correctly rounded and does not
** depend on the process locale.
*/
#ifndef H5MEM_UTIL_VECJSON_H
#define H5MEM_UTIL_VECJSON_H

#include <stddef.h>
#include <stdint.h>

/* Parse the JSON array in s[0..len) into a new float32 array.  On
** success returns 0, *out is malloc'd (the caller frees it; NULL when
** *n == 0).  On failure returns -1 and writes a message naming the problem
** and its byte offset into err. */
int util_json_to_f32(const char *s, size_t len, float **out, size_t *n,
                     char *err, size_t errlen);

/* The same for int8 vectors: each element must be a JSON integer (no
** fraction or exponent, "-0" allowed) from -128 to 127; a message names
** the first that is not. */
int util_json_to_i8(const char *s, size_t len, int8_t **out, size_t *n,
                    char *err, size_t errlen);

/* Write the shortest decimal that reads back as exactly v (via strtof), in
** JSON syntax ("0.1", "-3", "1e-07").  buf needs at least 32 bytes.
** v must be finite.  Returns the length written. */
size_t util_f32_shortest(float v, char *buf);

/* The same for a double: at most 17 significant digits; buf needs at least
** 40 bytes. */
size_t util_f64_shortest(double v, char *buf);

#endif /* H5MEM_UTIL_VECJSON_H */
