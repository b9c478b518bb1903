/*
** lib/embed/http.c - the OpenAI-compatible embeddings client (issue 22).
**
** POST {url}/embeddings with {"model": M, "input": [texts...]} and, when a
** key is given, "Authorization: Bearer KEY"; the answer is
** {"data": [{"embedding": [numbers], "index": i, ...}, ...], ...}, one
** item per input, placed by its index.  This is the API of OpenAI's
** reference, which Ollama, llama.cpp's server, vLLM and LM Studio serve.
**
** Failures:
**   - 429 and 5xx answers, timeouts and dropped connections are retried
**     (retries times) after a pause: the server's Retry-After (seconds, at
**     most 30) or 0.5 s doubling up to 8 s;
**   - any other status is an error naming it and the provider's message
**     (error.message in OpenAI's shape, error when it is a string as
**     Ollama gives it, else the start of the body);
**   - an answer that is not the shape above (items missing or repeated,
**     vectors of other lengths, numbers that are not finite) is an error,
**     never a vector.
** A key is sent over https, or over http only to this machine (loopback):
** never in clear text across a network.
*/
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed/embed_int.h"
#include "embed/embedder.h"
#include "util/json.h"
#include "util/vecjson.h"

/* The answer's vectors into out (n rows of *dim; out may be NULL); a
** message on failure (embed_int.h).  Every build has it: the fuzz target
** reads answers with it. */
int embed_http_parse(const char *b, size_t bn, size_t n, int *dim, float *out, char *err, size_t errlen) {
  char jerr[200];
  size_t v0, v1;
  if (util_json_valid(b, bn, jerr, sizeof jerr)) {
    snprintf(err, errlen, "the answer is not JSON: %s", jerr);
    return EMBED_ECORRUPT;
  }
  if (util_json_at_path(b, bn, "data", &v0, &v1) || util_json_type(b, v0, v1) != UTIL_JSON_ARRAY) {
    snprintf(err, errlen, "the answer has no \"data\" array");
    return EMBED_ECORRUPT;
  }
  uint8_t *seen = calloc(n ? n : 1, 1);
  if (!seen) {
    snprintf(err, errlen, "out of memory");
    return EMBED_ENOMEM;
  }
  util_json_iter it;
  util_json_iter_init(&it, b, v0, v1);
  size_t items = 0;
  int rc = EMBED_OK;
  while (rc == EMBED_OK && util_json_next(&it)) {
    size_t i0 = it.v0, i1 = it.v1, e0, e1, x0, x1;
    int64_t idx = (int64_t)items;
    double d;
    items++;
    if (util_json_type(b, i0, i1) != UTIL_JSON_OBJECT) {
      snprintf(err, errlen, "the answer's data item %zu is not an object", items - 1);
      rc = EMBED_ECORRUPT;
      break;
    }
    /* the item's members, found within its span */
    if (!util_json_at_path(b + i0, i1 - i0, "index", &x0, &x1) &&
        util_json_number(b + i0, x0, i1 - i0, &idx, &d) != UTIL_JSON_INTEGER) {
      snprintf(err, errlen, "the answer's data item %zu has an index that is not an integer", items - 1);
      rc = EMBED_ECORRUPT;
      break;
    }
    if (idx < 0 || (uint64_t)idx >= n || seen[idx]) {
      snprintf(err, errlen, "the answer's data item %zu has index %lld: %s", items - 1, (long long)idx,
               idx >= 0 && (uint64_t)idx < n ? "given twice" : "no such input");
      rc = EMBED_ECORRUPT;
      break;
    }
    seen[idx] = 1;
    if (util_json_at_path(b + i0, i1 - i0, "embedding", &e0, &e1) ||
        util_json_type(b + i0, e0, i1 - i0) != UTIL_JSON_ARRAY) {
      snprintf(err, errlen, "the answer's data item %zu has no \"embedding\" array (a base64 answer is not "
               "read: the request asks for floats)", items - 1);
      rc = EMBED_ECORRUPT;
      break;
    }
    float *f = NULL;
    size_t fn = 0;
    if (util_json_to_f32(b + i0 + e0, e1 - e0, &f, &fn, jerr, sizeof jerr)) {
      snprintf(err, errlen, "the answer's embedding %lld: %s", (long long)idx, jerr);
      rc = EMBED_ECORRUPT;
      break;
    }
    if (!*dim && fn >= 1 && fn <= 65536) *dim = (int)fn;
    if (!fn || fn != (size_t)*dim) { /* (none at all: [] while the dim is not known yet) */
      snprintf(err, errlen, "the answer's embedding %lld has %zu numbers, %s %d", (long long)idx, fn,
               fn > 65536 || !fn ? "expected 1 to 65536; the first had" : "expected", *dim);
      rc = EMBED_ECORRUPT;
    } else if (out) {
      memcpy(out + (size_t)idx * (size_t)*dim, f, fn * sizeof *f);
    }
    free(f);
  }
  if (rc == EMBED_OK && items != n) {
    snprintf(err, errlen, "the answer has %zu embeddings for %zu inputs", items, n);
    rc = EMBED_ECORRUPT;
  }
  free(seen);
  return rc;
}

#ifdef HAVE_LIBCURL

#include <curl/curl.h>
#include <pthread.h>

#include "util/strbuf.h"
#include "util/utf8.h"

#define MAX_ANSWER ((size_t)1 << 30) /* an answer larger than 1 GiB is refused */

struct embed_http {
  CURL *c;
  char *url;   /* {base}/embeddings */
  char *model;
  struct curl_slist *headers;
  long timeout_ms;
  int retries;
  uint64_t requests, retried;
  char cerr[CURL_ERROR_SIZE];
  double retry_after; /* the last answer's Retry-After, or -1 */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

int embed_http_available(void) { return 1; }

/* Whether url's host is this machine (localhost, 127.x, ::1). */
static int loopback(const char *url) {
  const char *h = strstr(url, "://");
  if (!h) return 0;
  h += 3;
  const char *at = strpbrk(h, "@/");
  if (at && *at == '@') h = at + 1;
  size_t n = strcspn(h, ":/?#");
  if (!strncmp(h, "[::1]", 5)) return h[5] == 0 || h[5] == ':' || h[5] == '/';
  if (n == 9 && !strncasecmp(h, "localhost", 9)) return 1;
  if (n < 7 || strncmp(h, "127.", 4)) return 0;
  for (size_t i = 0; i < n; i++) /* an IPv4 literal, not a name like 127.0.0.1.example.com */
    if (!(h[i] == '.' || (h[i] >= '0' && h[i] <= '9'))) return 0;
  int dots = 0;
  for (size_t i = 0; i < n; i++) dots += h[i] == '.';
  return dots == 3;
}

int embed_http_open(const char *url, const char *model, const char *key, double timeout, int retries,
                    embed_http **out, char *err, size_t errlen) {
  *out = NULL;
  int https = !strncasecmp(url, "https://", 8);
  if (!https && strncasecmp(url, "http://", 7)) {
    snprintf(err, errlen, "'%s' is not an http:// or https:// URL", url);
    return EMBED_EINVAL;
  }
  if (key && !https && !loopback(url)) {
    snprintf(err, errlen, "an API key is sent over https, or over http only to this machine; '%s' is neither",
             url);
    return EMBED_EINVAL;
  }
  pthread_once(&curl_once, curl_init);
  if (curl_init_rc != CURLE_OK) {
    snprintf(err, errlen, "libcurl did not start: %s", curl_easy_strerror(curl_init_rc));
    return EMBED_EIO;
  }
  embed_http *h = calloc(1, sizeof *h);
  size_t ul = strlen(url);
  while (ul && url[ul - 1] == '/') ul--;
  if (h) h->url = malloc(ul + sizeof "/embeddings");
  if (h && h->url) {
    memcpy(h->url, url, ul);
    memcpy(h->url + ul, "/embeddings", sizeof "/embeddings");
  }
  if (h) h->model = strdup(model);
  if (h) h->c = curl_easy_init();
  if (!h || !h->url || !h->model || !h->c) goto nomem;
  struct curl_slist *l = curl_slist_append(NULL, "Content-Type: application/json");
  if (l) h->headers = l;
  if (l) l = curl_slist_append(h->headers, "Accept: application/json");
  if (l && key) {
    size_t kn = strlen(key) + 32;
    char *a = malloc(kn);
    if (a) {
      snprintf(a, kn, "Authorization: Bearer %s", key);
      l = curl_slist_append(h->headers, a);
      memset(a, 0, kn);
      free(a);
    } else {
      l = NULL;
    }
  }
  if (!l) goto nomem;
  h->timeout_ms = (long)(timeout * 1000.0);
  if (h->timeout_ms < 1) h->timeout_ms = 1;
  h->retries = retries;
  *out = h;
  return EMBED_OK;
nomem:
  embed_http_close(h);
  snprintf(err, errlen, "out of memory");
  return EMBED_ENOMEM;
}

void embed_http_close(embed_http *h) {
  if (!h) return;
  if (h->c) curl_easy_cleanup(h->c);
  curl_slist_free_all(h->headers); /* (the key's header is in it) */
  free(h->url);
  free(h->model);
  free(h);
}

void embed_http_stats(const embed_http *h, uint64_t *requests, uint64_t *retries) {
  *requests = h->requests;
  *retries = h->retried;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
  strbuf *b = ud;
  size_t n = size * nmemb;
  strbuf_append(b, p, n);
  return strbuf_failed(b) ? 0 : n; /* (0 stops the transfer: an error) */
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
  embed_http *h = ud;
  size_t n = size * nmemb;
  if (n > 12 && !strncasecmp(p, "Retry-After:", 12)) {
    char v[32];
    size_t k = n - 12 < sizeof v - 1 ? n - 12 : sizeof v - 1;
    memcpy(v, p + 12, k);
    v[k] = 0;
    char *end;
    double s = strtod(v, &end);
    while (*end && isspace((unsigned char)*end)) end++;
    if (end != v && !*end && s >= 0 && isfinite(s)) h->retry_after = s; /* (an HTTP date is not used) */
  }
  return n;
}

/* The request body: {"model": M, "input": [s...]}, texts made well-formed
** UTF-8 (an ill-formed sequence becomes U+FFFD) as JSON must be. */
static int request_body(const embed_http *h, size_t n, const char *const *s, const size_t *len, strbuf *b) {
  strbuf_puts(b, "{\"model\":");
  strbuf_json_string(b, h->model, strlen(h->model));
  strbuf_puts(b, ",\"input\":[");
  strbuf fix = {0};
  for (size_t i = 0; i < n; i++) {
    if (i) strbuf_putc(b, ',');
    if (util_utf8_check(s[i], len[i], 0) == len[i]) {
      strbuf_json_string(b, s[i], len[i]);
    } else {
      fix.len = 0;
      util_utf8_repair(&fix, s[i], len[i]);
      if (strbuf_failed(&fix)) break;
      /* (a NUL byte is well-formed but stops util_utf8_check: escaped) */
      strbuf_json_string(b, fix.buf ? fix.buf : "", fix.len);
    }
  }
  strbuf_puts(b, "]}");
  int bad = strbuf_failed(&fix) || strbuf_failed(b);
  strbuf_free(&fix);
  return bad ? EMBED_ENOMEM : EMBED_OK;
}

/* The provider's message in an error answer, into msg: error.message
** (OpenAI), error as a string (Ollama) or message, else the body's start. */
static void provider_message(const char *body, size_t n, char *msg, size_t ml) {
  static const char *const paths[] = {"error.message", "error", "message"};
  size_t v0, v1;
  *msg = 0;
  if (!body || !n) return;
  if (util_json_valid(body, n, NULL, 0) == 0)
    for (int k = 0; k < 3; k++)
      if (!util_json_at_path(body, n, paths[k], &v0, &v1) && util_json_type(body, v0, v1) == UTIL_JSON_TEXT) {
        char *t = util_json_cstr(body, v0, v1, NULL);
        if (t) snprintf(msg, ml, "%s", t);
        free(t);
        return;
      }
  size_t k = n < 200 ? n : 200; /* the start of the body, one line */
  snprintf(msg, ml, "%.*s%s", (int)k, body, n > k ? "..." : "");
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t') *p = ' ';
}

static void pause_for(double s) {
  struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&t, &t) != 0) {
  }
}

int embed_http_embed(embed_http *h, size_t n, const char *const *s, const size_t *len, int *dim, float *out,
                     char *err, size_t errlen) {
  strbuf body = {0}, ans = {0};
  ans.limit = MAX_ANSWER;
  int rc = request_body(h, n, s, len, &body);
  if (rc) {
    snprintf(err, errlen, "out of memory");
    return rc;
  }
  CURL *c = h->c;
  curl_easy_reset(c);
  curl_easy_setopt(c, CURLOPT_URL, h->url);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.buf);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->timeout_ms < 10000 ? h->timeout_ms : 10000L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "h5mem/" PACKAGE_VERSION);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &ans);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->cerr);
  double wait = 0.5;
  for (int attempt = 0;; attempt++) {
    ans.len = 0;
    ans.oom = ans.over = 0;
    if (ans.buf) ans.buf[0] = 0;
    h->cerr[0] = 0;
    h->retry_after = -1;
    h->requests++;
    CURLcode cr = curl_easy_perform(c);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    int again;
    char why[512];
    if (cr != CURLE_OK) {
      if (ans.over) {
        snprintf(err, errlen, "%s: the answer is larger than %zu bytes", h->url, MAX_ANSWER);
        rc = EMBED_EIO;
        break;
      }
      snprintf(why, sizeof why, "%s", h->cerr[0] ? h->cerr : curl_easy_strerror(cr));
      again = cr == CURLE_OPERATION_TIMEDOUT || cr == CURLE_GOT_NOTHING || cr == CURLE_RECV_ERROR ||
              cr == CURLE_SEND_ERROR || cr == CURLE_PARTIAL_FILE;
    } else if (status == 200) {
      rc = embed_http_parse(ans.buf ? ans.buf : "", ans.len, n, dim, out, why, sizeof why);
      if (rc) snprintf(err, errlen, "%s (model '%s'): %s", h->url, h->model, why);
      break;
    } else {
      char pm[400];
      provider_message(ans.buf, ans.len, pm, sizeof pm);
      snprintf(why, sizeof why, "HTTP %ld%s%s", status, *pm ? ": " : "", pm);
      again = status == 429 || (status >= 500 && status <= 599);
    }
    if (!again || attempt >= h->retries) {
      snprintf(err, errlen, "%s (model '%s'): %s%s", h->url, h->model, why,
               again && attempt ? " (after retries)" : "");
      rc = EMBED_EIO;
      break;
    }
    double p = h->retry_after >= 0 ? (h->retry_after < 30 ? h->retry_after : 30) : wait;
    wait = wait * 2 < 8 ? wait * 2 : 8;
    h->retried++;
    pause_for(p);
  }
  strbuf_free(&body);
  strbuf_free(&ans);
  return rc;
}

#else /* no libcurl */

struct embed_http {
  int unused;
};

int embed_http_available(void) { return 0; }

int embed_http_open(const char *url, const char *model, const char *key, double timeout, int retries,
                    embed_http **out, char *err, size_t errlen) {
  (void)url, (void)model, (void)key, (void)timeout, (void)retries;
  *out = NULL;
  snprintf(err, errlen, "this h5mem was built without libcurl, which HTTP embedders need "
           "(sudo apt-get install libcurl4-openssl-dev, then ./configure and make again)");
  return EMBED_EUNSUPPORTED;
}

void embed_http_close(embed_http *h) { (void)h; }

int embed_http_embed(embed_http *h, size_t n, const char *const *s, const size_t *len, int *dim, float *out,
                     char *err, size_t errlen) {
  (void)h, (void)n, (void)s, (void)len, (void)dim, (void)out;
  snprintf(err, errlen, "this h5mem was built without libcurl");
  return EMBED_EUNSUPPORTED;
}

void embed_http_stats(const embed_http *h, uint64_t *requests, uint64_t *retries) {
  (void)h;
  *requests = *retries = 0;
}

#endif
