/*
** lib/embed/embedder.c - one interface over the hashed, static and HTTP
** embedders, and a connection's cache of them (embedder.h).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "embed/embed.h"
#include "embed/embedder.h"
#include "text/hashembed.h"

struct embedder {
  int kind;
  char *spec;
  int dim;
  embed_model *m;   /* static */
  embed_http *h;    /* openai */
  char *model;      /* openai */
  int batch;
  /* the cache's key and the model file's identity when opened */
  char *key_env;
  char *key;        /* openai: the key read from key_env when opened (a changed one opens it again) */
  double timeout;
  int retries;
  dev_t dev;
  ino_t ino;
  struct timespec mtime;
};

int embedder_kind(const embedder *e) { return e->kind; }
const char *embedder_spec(const embedder *e) { return e->spec; }
int embedder_dim(const embedder *e) { return e->dim; }
const char *embedder_digest(const embedder *e) { return e->m ? embed_model_digest(e->m) : ""; }
const char *embedder_model(const embedder *e) { return e->model; }
int embedder_batch(const embedder *e) { return e->batch; }

int embedder_open(const embedder_conf *c, embedder **out, char *err, size_t errlen) {
  *out = NULL;
  const char *spec = c->spec ? c->spec : "";
  embedder *e = calloc(1, sizeof *e);
  if (!e || !(e->spec = strdup(spec))) {
    free(e);
    snprintf(err, errlen, "out of memory");
    return EMBED_ENOMEM;
  }
  e->batch = 1;
  e->timeout = c->timeout;
  e->retries = c->retries;
  int rc = EMBED_OK;
  if (!strncmp(spec, "hash:", 5)) {
    char *end;
    long d = strtol(spec + 5, &end, 10);
    e->kind = EMBEDDER_HASH;
    e->dim = (int)d;
    if (end == spec + 5 || *end || d < 1 || d > TEXT_EMBED_MAX_DIM) {
      snprintf(err, errlen, "embedder '%s': expected hash:DIM, DIM from 1 to %d", spec, TEXT_EMBED_MAX_DIM);
      rc = EMBED_EINVAL;
    }
  } else if (!strncmp(spec, "static:", 7) && spec[7]) {
    struct stat st;
    e->kind = EMBEDDER_STATIC;
    if (stat(spec + 7, &st) == 0) e->dev = st.st_dev, e->ino = st.st_ino, e->mtime = st.st_mtim;
    rc = embed_model_open(spec + 7, &e->m, err, errlen);
    if (rc == EMBED_OK) e->dim = embed_model_dim(e->m);
  } else if (!strncmp(spec, "openai:", 7)) {
    e->kind = EMBEDDER_OPENAI;
    const char *key = NULL;
    if (!c->model || !*c->model) {
      snprintf(err, errlen, "embedder '%s' needs the model: embedder_model='...' (e.g. 'nomic-embed-text')", spec);
      rc = EMBED_EINVAL;
    } else if (c->key_env && *c->key_env && !(key = getenv(c->key_env))) {
      snprintf(err, errlen, "embedder '%s': the environment variable %s (embedder_key_env) is not set", spec,
               c->key_env);
      rc = EMBED_EINVAL;
    } else if (c->batch < 0 || c->batch > EMBEDDER_MAX_BATCH || c->retries > EMBEDDER_MAX_RETRIES || c->timeout < 0 ||
               c->timeout > EMBEDDER_MAX_TIMEOUT) {
      snprintf(err, errlen, "embedder '%s': batch from 1 to %d, retries from 0 to %d, timeout up to %d s", spec,
               EMBEDDER_MAX_BATCH, EMBEDDER_MAX_RETRIES, EMBEDDER_MAX_TIMEOUT);
      rc = EMBED_EINVAL;
    } else {
      char why[600];
      e->batch = c->batch ? c->batch : EMBEDDER_BATCH;
      if (!(e->model = strdup(c->model)) || (c->key_env && !(e->key_env = strdup(c->key_env))) ||
          (key && !(e->key = strdup(key)))) {
        rc = EMBED_ENOMEM;
        snprintf(err, errlen, "out of memory");
      } else if ((rc = embed_http_open(spec + 7, c->model, key && *key ? key : NULL,
                                       c->timeout > 0 ? c->timeout : EMBEDDER_TIMEOUT,
                                       c->retries >= 0 ? c->retries : EMBEDDER_RETRIES, &e->h, why, sizeof why))) {
        snprintf(err, errlen, "embedder '%s': %s", spec, why);
      }
    }
  } else {
    snprintf(err, errlen, "unknown embedder '%s' (expected 'hash:DIM', 'static:/path/model.h5' or "
             "'openai:http://host:port/v1')", spec);
    rc = EMBED_EINVAL;
  }
  if (rc) {
    embedder_close(e);
    return rc;
  }
  *out = e;
  return EMBED_OK;
}

void embedder_close(embedder *e) {
  if (!e) return;
  embed_model_close(e->m);
  embed_http_close(e->h);
  free(e->spec);
  free(e->model);
  free(e->key_env);
  if (e->key) memset(e->key, 0, strlen(e->key));
  free(e->key);
  free(e);
}

int embedder_expect_dim(embedder *e, int dim, char *err, size_t errlen) {
  if (e->dim == 0 && e->kind == EMBEDDER_OPENAI && dim >= 1 && dim <= 65536) e->dim = dim;
  if (e->dim == dim) return EMBED_OK;
  snprintf(err, errlen, "the embedder '%s' gives %d dimensions, the store has dim=%d", e->spec, e->dim, dim);
  return EMBED_EINVAL;
}

int embedder_probe(embedder *e, char *err, size_t errlen) {
  if (e->dim) return EMBED_OK;
  static const char probe[] = "dimension probe";
  const char *s = probe;
  size_t n = sizeof probe - 1;
  char why[900];
  int rc = embed_http_embed(e->h, 1, &s, &n, &e->dim, NULL, why, sizeof why);
  if (rc) snprintf(err, errlen, "embedder '%s': %s", e->spec, why);
  return rc;
}

int embedder_embed(embedder *e, size_t n, const char *const *s, const size_t *len, float *out, uint8_t *has,
                   char *err, size_t errlen) {
  size_t d = (size_t)e->dim;
  if (!d) {
    snprintf(err, errlen, "embedder '%s': its dimension is not known yet", e->spec);
    return EMBED_EINVAL;
  }
  if (e->kind == EMBEDDER_HASH || e->kind == EMBEDDER_STATIC) {
    for (size_t i = 0; i < n; i++) {
      float *v = out + i * d;
      int known = 0;
      if (e->kind == EMBEDDER_HASH) {
        if (text_hash_embed(s[i], len[i], e->dim, v) != TEXT_OK) {
          snprintf(err, errlen, "out of memory");
          return EMBED_ENOMEM;
        }
        for (size_t k = 0; k < d; k++) known |= v[k] != 0.0f;
      } else {
        uint64_t words = 0;
        int rc = embed_model_embed(e->m, s[i], len[i], v, &words);
        if (rc) {
          snprintf(err, errlen, rc == EMBED_ENOMEM ? "out of memory" : "embedder '%s': its model is damaged",
                   e->spec);
          return rc;
        }
        known = words > 0;
      }
      if (has) has[i] = (uint8_t)known;
    }
    return EMBED_OK;
  }
  /* HTTP: the non-empty texts, batch at a time */
  memset(out, 0, n * d * sizeof *out);
  size_t b = (size_t)e->batch;
  const char **bs = malloc(b * sizeof *bs);
  size_t *bl = malloc(b * sizeof *bl), *bi = malloc(b * sizeof *bi);
  float *bv = malloc(b * d * sizeof *bv);
  int rc = bs && bl && bi && bv ? EMBED_OK : EMBED_ENOMEM;
  if (rc) snprintf(err, errlen, "out of memory");
  for (size_t i = 0; i < n && rc == EMBED_OK;) {
    size_t k = 0;
    for (; i < n && k < b; i++) {
      if (has) has[i] = len[i] > 0;
      if (!len[i]) continue;
      bs[k] = s[i], bl[k] = len[i], bi[k++] = i;
    }
    if (!k) break;
    char why[900];
    int dim = e->dim;
    rc = embed_http_embed(e->h, k, bs, bl, &dim, bv, why, sizeof why);
    if (rc) {
      snprintf(err, errlen, "embedder '%s': %s", e->spec, why);
      break;
    }
    for (size_t j = 0; j < k; j++) memcpy(out + bi[j] * d, bv + j * d, d * sizeof *out);
  }
  free(bs);
  free(bl);
  free(bi);
  free(bv);
  return rc;
}

/* ---- the cache ---------------------------------------------------------- */

struct embedder_cache {
  embedder **e;
  int n;
};

embedder_cache *embedder_cache_new(void) { return calloc(1, sizeof(embedder_cache)); }

void embedder_cache_free(embedder_cache *c) {
  if (!c) return;
  for (int i = 0; i < c->n; i++) embedder_close(c->e[i]);
  free(c->e);
  free(c);
}

static int same_str(const char *a, const char *b) { return (!a || !*a) ? (!b || !*b) : b && !strcmp(a, b); }

/* Whether e is what conf names (an HTTP embedder: with the same model, key
** variable and key, and limits). */
static int same_conf(const embedder *e, const embedder_conf *c) {
  if (strcmp(e->spec, c->spec ? c->spec : "")) return 0;
  if (e->kind != EMBEDDER_OPENAI) return 1;
  const char *key = c->key_env && *c->key_env ? getenv(c->key_env) : NULL;
  return same_str(e->model, c->model) && same_str(e->key_env, c->key_env) && same_str(e->key, key) &&
         e->timeout == c->timeout &&
         e->retries == c->retries && e->batch == (c->batch ? c->batch : EMBEDDER_BATCH);
}

embedder *embedder_cache_get(embedder_cache *c, const embedder_conf *conf, int *rc, char *err, size_t errlen) {
  for (int i = 0; i < c->n; i++) {
    embedder *e = c->e[i];
    if (!same_conf(e, conf)) continue;
    if (e->kind == EMBEDDER_STATIC) { /* its file replaced since: opened again */
      struct stat st;
      if (stat(e->spec + 7, &st) != 0 || st.st_dev != e->dev || st.st_ino != e->ino ||
          st.st_mtim.tv_sec != e->mtime.tv_sec || st.st_mtim.tv_nsec != e->mtime.tv_nsec) {
        embedder_close(e);
        c->e[i] = c->e[--c->n];
        break;
      }
    }
    *rc = EMBED_OK;
    return e;
  }
  embedder *e;
  if ((*rc = embedder_open(conf, &e, err, errlen)) != EMBED_OK) return NULL;
  embedder **ne = realloc(c->e, (size_t)(c->n + 1) * sizeof *ne);
  if (!ne) {
    embedder_close(e);
    snprintf(err, errlen, "out of memory");
    *rc = EMBED_ENOMEM;
    return NULL;
  }
  c->e = ne;
  c->e[c->n++] = e;
  return e;
}
