/*
** ext/func_text.c - text functions: h5mem_tokenize (FTS5's unicode61 and
** porter tokenizers, lib/text/tokenize.c) and h5mem_embed_text (the hashed
** lexical embedding of lib/text/hashembed.c).
**
**   h5mem_tokenize(text [, options])  -> JSON array of tokens
**   h5mem_embed_text(text, dim)       -> float32 vector BLOB (dim elements)
**
** options is a JSON object with any of
**   "remove_diacritics": 0 | 1 | 2   (default 1, as FTS5)
**   "porter": true | false           (default false)
**   "offsets": true | false          (default false: each token becomes
**                                     [token, start, end], the byte range
**                                     of the input it came from)
** Tokens that are not valid UTF-8 (only from invalid input, or stemming
** that cuts a character, as FTS5's does) have each maximal invalid
** subpart replaced by U+FFFD in the JSON text.
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "text/hashembed.h"
#include "text/tokenize.h"
#include "util/json.h"
#include "util/strbuf.h"
#include "util/utf8.h"

/* Report "<function>: <msg>" as the function's error. */
static void text_error(sqlite3_context *ctx, const char *msg) {
  char *z = sqlite3_mprintf("%s: %s", (const char *)sqlite3_user_data(ctx), msg);
  if (z)
    sqlite3_result_error(ctx, z, -1);
  else
    sqlite3_result_error_nomem(ctx);
  sqlite3_free(z);
}

/* ---------------------------------------------------------------- options */

static size_t skip_ws(const char *z, size_t i, size_t n) {
  while (i < n && (z[i] == ' ' || z[i] == '\t' || z[i] == '\n' || z[i] == '\r')) i++;
  return i;
}

/* The end of the JSON value at z[i] (z is valid JSON, so only its extent is
** needed): past the closing quote of a string, the closing bracket of an
** object or array, or the last character of a literal or number. */
static size_t value_end(const char *z, size_t i, size_t n) {
  if (z[i] == '"') {
    for (i++; i < n && z[i] != '"'; i++)
      if (z[i] == '\\') i++;
    return i + 1;
  }
  if (z[i] == '{' || z[i] == '[') {
    int depth = 0;
    for (; i < n; i++) {
      if (z[i] == '"') {
        i = value_end(z, i, n) - 1;
      } else if (z[i] == '{' || z[i] == '[') {
        depth++;
      } else if ((z[i] == '}' || z[i] == ']') && --depth == 0) {
        return i + 1;
      }
    }
    return n;
  }
  while (i < n && z[i] != ',' && z[i] != '}' && z[i] != ']' && z[i] != ' ' &&
         z[i] != '\t' && z[i] != '\n' && z[i] != '\r')
    i++;
  return i;
}

static int is_literal(const char *v, size_t nv, const char *lit) {
  return nv == strlen(lit) && memcmp(v, lit, nv) == 0;
}

/* Reads the options object z[0..n) into o and *offsets.  On error returns
** -1 with a message in err. */
static int parse_options(const char *z, size_t n, text_tok_opts *o, int *offsets,
                         char *err, size_t errlen) {
  char jerr[200];
  int seen[3] = {0, 0, 0};
  size_t i;

  if (util_json_valid(z, n, jerr, sizeof jerr)) {
    snprintf(err, errlen, "options are not valid JSON: %s", jerr);
    return -1;
  }
  i = skip_ws(z, 0, n);
  if (z[i] != '{') {
    snprintf(err, errlen, "options must be a JSON object, e.g. '{\"porter\":true}'");
    return -1;
  }
  i = skip_ws(z, i + 1, n);
  while (z[i] != '}') {
    size_t k0 = i + 1, k1 = value_end(z, i, n) - 1; /* the key z[k0..k1) */
    size_t v0 = skip_ws(z, skip_ws(z, k1 + 1, n) + 1, n);
    size_t v1 = value_end(z, v0, n);
    const char *v = z + v0, *key = z + k0;
    size_t nv = v1 - v0, nk = k1 - k0;
    int which = is_literal(key, nk, "remove_diacritics") ? 0
                : is_literal(key, nk, "porter")          ? 1
                : is_literal(key, nk, "offsets")         ? 2
                                                         : -1;
    if (which < 0) {
      snprintf(err, errlen,
               "unknown option \"%.*s\" (known: remove_diacritics, porter, offsets)",
               (int)(nk > 40 ? 40 : nk), key);
      return -1;
    }
    if (seen[which]++) {
      snprintf(err, errlen, "option \"%.*s\" given twice", (int)nk, key);
      return -1;
    }
    if (which == 0) {
      if (nv != 1 || v[0] < '0' || v[0] > '2') {
        snprintf(err, errlen, "remove_diacritics must be 0, 1 or 2, not %.*s",
                 (int)(nv > 40 ? 40 : nv), v);
        return -1;
      }
      o->remove_diacritics = v[0] - '0';
    } else {
      int b = is_literal(v, nv, "true") ? 1 : is_literal(v, nv, "false") ? 0 : -1;
      if (b < 0) {
        snprintf(err, errlen, "%.*s must be true or false, not %.*s", (int)nk, key,
                 (int)(nv > 40 ? 40 : nv), v);
        return -1;
      }
      if (which == 1)
        o->porter = b;
      else
        *offsets = b;
    }
    i = skip_ws(z, v1, n);
    if (z[i] == ',') i = skip_ws(z, i + 1, n);
  }
  return 0;
}

/* ----------------------------------------------------------------- output */

/* State of one h5mem_tokenize call: the JSON array being written and a
** scratch buffer for repairing invalid UTF-8.  Both malloc'd, freed by the
** caller (strbuf_free). */
typedef struct tok_out {
  strbuf out;
  strbuf fix;
  int offsets;
  int ntok;
} tok_out;

static int on_token(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  tok_out *t = ctx;
  const char *s = tok;
  size_t ns = ntok;

  if (util_utf8_check(tok, ntok, 1) < ntok) {
    t->fix.len = 0;
    util_utf8_repair(&t->fix, tok, ntok);
    if (strbuf_failed(&t->fix)) return TEXT_ENOMEM;
    s = t->fix.buf;
    ns = t->fix.len;
  }
  if (t->ntok++) strbuf_putc(&t->out, ',');
  if (t->offsets) strbuf_putc(&t->out, '[');
  strbuf_json_string(&t->out, s, ns);
  if (t->offsets) strbuf_printf(&t->out, ",%zu,%zu]", start, end);
  return t->out.oom ? TEXT_ENOMEM : 0;
}

/* h5mem_tokenize(text [, options]): the tokens as a JSON array. */
static void fn_tokenize(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  text_tok_opts o = {1, 0};
  tok_out t;
  char err[256];
  int rc;

  memset(&t, 0, sizeof t);
  if (argc > 1 && sqlite3_value_type(argv[1]) != SQLITE_NULL) {
    if (sqlite3_value_type(argv[1]) != SQLITE_TEXT) {
      text_error(ctx, "options must be JSON text, e.g. '{\"porter\":true}'");
      return;
    }
    const char *z = (const char *)sqlite3_value_text(argv[1]);
    if (!z) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    if (parse_options(z, (size_t)sqlite3_value_bytes(argv[1]), &o, &t.offsets, err,
                      sizeof err)) {
      text_error(ctx, err);
      return;
    }
  }
  const char *s;
  size_t n;
  if (ext_arg_text(ctx, argv[0], &s, &n) <= 0) return;
  t.out.limit = (size_t)sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
  strbuf_putc(&t.out, '[');
  rc = text_tokenize(&o, s, n, on_token, &t);
  strbuf_putc(&t.out, ']');
  if (t.out.over) {
    sqlite3_result_error_toobig(ctx);
  } else if (rc != TEXT_OK || strbuf_failed(&t.out)) {
    sqlite3_result_error_nomem(ctx);
  } else {
    sqlite3_result_text(ctx, t.out.buf, (int)t.out.len, free);
    sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
    t.out.buf = NULL;
  }
  strbuf_free(&t.out);
  strbuf_free(&t.fix);
}

/* h5mem_embed_text(text, dim): the hashed embedding, a float32 BLOB. */
static void fn_embed_text(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  sqlite3_int64 dim;
  float *v;
  (void)argc;
  if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER) {
    text_error(ctx, "dim must be an integer from 1 to 65536");
    return;
  }
  dim = sqlite3_value_int64(argv[1]);
  if (dim < 1 || dim > TEXT_EMBED_MAX_DIM) {
    char err[64];
    snprintf(err, sizeof err, "dim must be from 1 to 65536, not %lld", (long long)dim);
    text_error(ctx, err);
    return;
  }
  const char *s;
  size_t n;
  if (ext_arg_text(ctx, argv[0], &s, &n) <= 0) return;
  if (!(v = malloc((size_t)dim * sizeof *v))) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  if (text_hash_embed(s, n, (int)dim, v) != TEXT_OK) {
    free(v);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_blob64(ctx, v, (sqlite3_uint64)dim * sizeof *v, free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_F32);
}

int ext_text_register(sqlite3 *db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS |
                    SQLITE_RESULT_SUBTYPE;
  int rc = sqlite3_create_function_v2(db, "h5mem_tokenize", 1, flags, "h5mem_tokenize",
                                      fn_tokenize, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "h5mem_tokenize", 2, flags, "h5mem_tokenize",
                                    fn_tokenize, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "h5mem_embed_text", 2, flags, "h5mem_embed_text",
                                    fn_embed_text, NULL, NULL, NULL);
  return rc;
}
