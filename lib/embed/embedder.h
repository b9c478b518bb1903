/*
** lib/embed/embedder.h - the embedders a store or h5mem_embed names, behind
** one interface (issue 22):
**
**   hash:DIM          the lexical hashed embedding (lib/text/hashembed.h)
**   static:PATH       a static word-vector model file (embed.h)
**   openai:URL        an OpenAI-compatible /v1/embeddings endpoint (Ollama,
**                     llama.cpp's server, vLLM, LM Studio, OpenAI), through
**                     libcurl (http.c; a build without libcurl refuses it
**                     with EMBED_EUNSUPPORTED and a message saying so)
**
** An embedder turns texts into vectors of embedder_dim numbers.  A text it
** cannot embed (no word a static model knows; an empty text for an HTTP
** one; a hashed text with no token) has no vector: has[i] = 0 and its out
** row zeros, never an error.  Everything else that goes wrong is an error
** with a message naming the embedder and the cause (for HTTP: the status
** and the provider's message).
**
** The cache (embedder_cache) keeps a connection's embedders open: a static
** model mapped once for all its tables and h5mem_embed, opened again when
** its file is replaced; an HTTP client keeps its connection alive.
*/
#ifndef H5MEM_EMBED_EMBEDDER_H
#define H5MEM_EMBED_EMBEDDER_H

#include <stddef.h>
#include <stdint.h>

enum { EMBEDDER_HASH = 1, EMBEDDER_STATIC, EMBEDDER_OPENAI };

#define EMBEDDER_TIMEOUT 30.0 /* seconds a request may take (openai) */
#define EMBEDDER_RETRIES 3    /* retries of 429, 5xx, timeouts and dropped connections */
#define EMBEDDER_BATCH 64     /* texts per request */
/* the limits of those settings, wherever they are given */
#define EMBEDDER_MAX_TIMEOUT 3600
#define EMBEDDER_MAX_RETRIES 20
#define EMBEDDER_MAX_BATCH 2048

typedef struct embedder_conf {
  const char *spec;    /* "hash:DIM", "static:PATH" or "openai:URL" */
  const char *model;   /* openai: the model name (required) */
  const char *key_env; /* openai: the environment variable holding the API key (NULL: none sent) */
  double timeout;      /* openai: seconds per request (0: EMBEDDER_TIMEOUT) */
  int retries;         /* openai: retries (-1: EMBEDDER_RETRIES) */
  int batch;           /* openai: texts per request (0: EMBEDDER_BATCH) */
} embedder_conf;

typedef struct embedder embedder;

/* Open the embedder c names; a message in err on failure (EMBED_EINVAL for
** a malformed spec or option, EMBED_EUNSUPPORTED without libcurl, a static
** model's open errors). */
int embedder_open(const embedder_conf *c, embedder **out, char *err, size_t errlen);
void embedder_close(embedder *e);

int embedder_kind(const embedder *e);
const char *embedder_spec(const embedder *e);
/* The dimension: 0 for an HTTP embedder that has not answered yet. */
int embedder_dim(const embedder *e);
/* A static model's digest (32 hex digits), else "". */
const char *embedder_digest(const embedder *e);
/* An HTTP embedder's model, else NULL. */
const char *embedder_model(const embedder *e);
/* Texts it embeds per request: 1 for the local ones (no gain in more). */
int embedder_batch(const embedder *e);

/* Fix the dimension of an HTTP embedder that has not answered (the store's
** dim); 0, or EMBED_EINVAL with a message when it gives another. */
int embedder_expect_dim(embedder *e, int dim, char *err, size_t errlen);
/* An HTTP embedder's dimension learned from one request embedding a short
** text (CREATE without dim=); the others know theirs. */
int embedder_probe(embedder *e, char *err, size_t errlen);

/* The vectors of the n texts s[i] (len[i] bytes) into out (n rows of
** embedder_dim numbers, which must be known) and has[i] (NULL: not
** wanted).  Local embedders are thread-safe; an HTTP one is used by one
** thread at a time (its connection's).  EMBED_OK, or an error with a
** message (nothing in out is then to be used). */
int embedder_embed(embedder *e, size_t n, const char *const *s, const size_t *len, float *out, uint8_t *has,
                   char *err, size_t errlen);

/* ---- a connection's embedders -------------------------------------------- */

typedef struct embedder_cache embedder_cache;

embedder_cache *embedder_cache_new(void);
void embedder_cache_free(embedder_cache *c);
/* The embedder c names, from the cache (a static model whose file changed
** since is opened again) or opened and kept; NULL with a message in err
** (and *rc the error).  It stays valid until the cache is freed or the
** same conf is asked for again after its file changed: callers ask each
** time they use it, never keep it across statements. */
embedder *embedder_cache_get(embedder_cache *c, const embedder_conf *conf, int *rc, char *err, size_t errlen);

/* ---- the HTTP client (http.c) --------------------------------------------- */

typedef struct embed_http embed_http;
/* 1 when this build has libcurl. */
int embed_http_available(void);
int embed_http_open(const char *url, const char *model, const char *key, double timeout, int retries,
                    embed_http **out, char *err, size_t errlen);
void embed_http_close(embed_http *h);
/* n texts (none empty) in one request; out n rows of *dim numbers: *dim 0
** learns it from the answer, otherwise the answer must give it. */
int embed_http_embed(embed_http *h, size_t n, const char *const *s, const size_t *len, int *dim, float *out,
                     char *err, size_t errlen);
/* What the requests did (the tests ask): requests sent, retries made. */
void embed_http_stats(const embed_http *h, uint64_t *requests, uint64_t *retries);

#endif /* H5MEM_EMBED_EMBEDDER_H */
