/*
** lib/text/hashembed.c - feature-hashed text embeddings (see hashembed.h).
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <xxhash.h>

#include "text/hashembed.h"

/* The weight of all of one token's 3-grams together, in L2 norm. */
#define GRAM_NORM 0.5

/* One text_hash_embed call: out is the caller's (dim floats). */
typedef struct embed_ctx {
  float *out;
  uint32_t dim;
} embed_ctx;

/* Adds +-w to the bucket hash h selects: bucket from the high 32 bits,
** sign from the lowest. */
static void add(embed_ctx *e, uint64_t h, float w) {
  uint32_t b = (uint32_t)(h >> 32) % e->dim;
  e->out[b] += (h & 1) ? -w : w;
}

/* Bytes of the character that starts at t[i]: its lead byte and the
** continuation bytes after it. */
static size_t char_len(const char *t, size_t i, size_t n) {
  size_t j = i + 1;
  while (j < n && ((unsigned char)t[j] & 0xC0) == 0x80) j++;
  return j - i;
}

/* One piece of "<token>": a character of the token or a boundary mark. */
typedef struct piece {
  const char *p;
  size_t n;
} piece;

/* The next piece of "<token>" after position *pos (*pos == n: the closing
** mark, then *pos == n + 1). */
static piece next_piece(const char *t, size_t n, size_t *pos) {
  piece r;
  if (*pos < n) {
    r.p = t + *pos;
    r.n = char_len(t, *pos, n);
    *pos += r.n;
  } else {
    r.p = ">";
    r.n = 1;
    *pos = n + 1;
  }
  return r;
}

static int on_token(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  embed_ctx *e = ctx;
  size_t k = 0, pos = 0;
  (void)start;
  (void)end;
  add(e, XXH64(tok, ntok, TEXT_EMBED_SEED_WORD), 1.0f);

  /* "<token>" has as many 3-grams as the token has characters */
  for (size_t i = 0; i < ntok; i += char_len(tok, i, ntok)) k++;
  float w = (float)(GRAM_NORM / sqrt((double)k));
  piece g[3];
  g[0].p = "<";
  g[0].n = 1;
  g[1] = next_piece(tok, ntok, &pos);
  g[2] = next_piece(tok, ntok, &pos);
  for (size_t j = 0; j < k; j++) {
    /* characters are at most 4 bytes: tokens are written that way, and
       stemming only shortens them */
    char buf[12];
    size_t nb = 0;
    for (int q = 0; q < 3; q++) {
      size_t m = g[q].n < 4 ? g[q].n : 4;
      memcpy(buf + nb, g[q].p, m);
      nb += m;
    }
    add(e, XXH64(buf, nb, TEXT_EMBED_SEED_GRAM), w);
    g[0] = g[1];
    g[1] = g[2];
    if (j + 1 < k) g[2] = next_piece(tok, ntok, &pos);
  }
  return 0;
}

int text_hash_embed(const char *s, size_t n, int dim, float *out) {
  embed_ctx e;
  int rc;
  if (dim < 1 || dim > TEXT_EMBED_MAX_DIM) return TEXT_EINVAL;
  e.out = out;
  e.dim = (uint32_t)dim;
  memset(out, 0, (size_t)dim * sizeof *out);
  rc = text_tokenize(NULL, s, n, on_token, &e);
  if (rc != TEXT_OK) return rc;

  double ss = 0.0;
  for (int i = 0; i < dim; i++) ss += (double)out[i] * (double)out[i];
  if (ss > 0.0) {
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < dim; i++) out[i] = (float)((double)out[i] * inv);
  }
  return TEXT_OK;
}
