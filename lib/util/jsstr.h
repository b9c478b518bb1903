/*
** lib/util/jsstr.h - JavaScript strings held in C strings, for the MCP
** memory server's JSONL and tools (issue 23).
**
** A JavaScript string is UTF-16 code units: it may hold a lone surrogate
** (JSON.stringify writes "\ud800") and U+0000, which well-formed UTF-8
** without NUL, the form the store keeps, cannot.  JS-UTF-8 holds them all:
** UTF-8, with a lone surrogate as its 3-byte generalized UTF-8 form (ED A0
** 80 .. ED BF BF, as WTF-8 does) and U+0000 as C0 80 (as Java's modified
** UTF-8 does).  It has no NUL byte, and two JavaScript strings are equal
** when their JS-UTF-8 forms are byte for byte equal.  util_json_string_js
** (util/json.h) decodes a JSON string into it.
*/
#ifndef H5MEM_UTIL_JSSTR_H
#define H5MEM_UTIL_JSSTR_H

#include <stddef.h>

#include "util/strbuf.h"

/* The JSON string at s[i] (text that util_json_valid_js accepts) as a
** malloc'd, NUL-terminated JS-UTF-8 string; its length in *n (n may be
** NULL).  NULL when out of memory. */
char *util_js_cstr(const char *s, size_t i, size_t len, size_t *n);

/* JSON.stringify of the JS-UTF-8 string s[0..n) appended to sb: " and \
** escaped, \b \f \n \r \t, the other code points below U+0020 and each
** lone surrogate as \u00xx and \udxxx (lowercase hex), the rest as it is. */
void util_js_stringify(strbuf *sb, const char *s, size_t n);

/* s[0..n) in the store's form (well-formed UTF-8 without NUL) appended to
** out: each lone surrogate and U+0000 becomes U+FFFD.  Returns how many
** were replaced (0: s is its own store form and is copied as it is). */
size_t util_js_to_utf8(strbuf *out, const char *s, size_t n);

/* 1 when s[0..n) holds a lone surrogate or U+0000 (its store form
** differs), else 0. */
int util_js_special(const char *s, size_t n);

/* s[0..n) lowercased as JavaScript's toLowerCase() does, appended to out:
** Unicode's default lowercase mapping (tables lib/util/jslower_data.c,
** from Node: scripts/gen_jslower.js), U+0130 as i U+0307, and U+03A3 as
** final sigma U+03C2 after a cased letter not followed by one (case-
** ignorable characters skipped both ways), else U+03C3.  Lone surrogates
** and U+0000 stay as they are. */
void util_js_lower(strbuf *out, const char *s, size_t n);

/* ---- how the store keeps them ---------------------------------------------
** A string that is not its own store form is stored in that form, and its
** record's meta keeps the original: {"jsonl": {FIELD: "<its JSON.stringify
** literal>", ...}}, the literal as a JSON string (meta is strict JSON,
** which has no lone surrogates).  A name that relations use and no entity
** has is a placeholder entity: {"jsonl": {"placeholder": true, ...}}. */

/* The meta of a placeholder, opened (util_js_keep adds to it). */
#define UTIL_JS_META_PLACEHOLDER "{\"jsonl\":{\"placeholder\":true"

/* When s[0..n) is not its own store form, member field (its JSON literal)
** added to the meta being built in meta ("{\"jsonl\":{" opened when meta
** is empty): 1; else 0.  util_js_meta_close closes it. */
int util_js_keep(strbuf *meta, const char *field, const char *s, size_t n);
void util_js_meta_close(strbuf *meta);

/* The JS-UTF-8 form of a string the store keeps as stored[0..n), appended
** to out: the original its record's meta (JSON meta[0..metan), may be
** NULL) keeps for field, when that original's store form is stored[0..n);
** else stored[0..n) itself (an original that no longer matches is stale). */
void util_js_kept(strbuf *out, const char *stored, size_t n, const char *meta, size_t metan, const char *field);

/* 1 when meta[0..n) marks a placeholder entity. */
int util_js_placeholder(const char *meta, size_t n);

#endif /* H5MEM_UTIL_JSSTR_H */
