/*
** lib/embed/static.c - a static word-vector model file, opened and checked,
** and sentence vectors from it (embed.h; the file: docs/FORMAT.md).
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "embed/embed_int.h"
#include "h5/h5.h"
#include "kernels/k.h"
#include "text/tokenize.h"
#include "util/le.h"

struct embed_model {
  h5_file *f;
  int dim;
  int f16;                  /* vectors stored as float16 */
  uint64_t nwords;
  const uint8_t *bytes;     /* the words, sorted, concatenated */
  uint64_t nbytes;
  const uint8_t *offsets;   /* nwords + 1 uint64 LE */
  const uint8_t *vectors;   /* nwords x dim, float16 or float32 LE */
  const uint8_t *weights;   /* nwords float32 LE */
  float pc[EMBED_MAX_DIM];  /* the component to remove */
  char digest[33];
};

int embed_model_dim(const embed_model *m) { return m->dim; }
uint64_t embed_model_words(const embed_model *m) { return m->nwords; }
const char *embed_model_digest(const embed_model *m) { return m->digest; }

void embed_model_close(embed_model *m) {
  if (!m) return;
  h5_close(m->f);
  free(m);
}

static uint64_t off_at(const embed_model *m, uint64_t i) { return util_get_le(m->offsets + 8 * i, 8); }

/* A root attribute: an integer, a float, or a string (into buf). */
static int attr_int(h5_obj *root, const char *name, int64_t *v) {
  const h5_attr *a;
  if (h5_attr_get(root, name, &a) != H5_OK || !a->type || a->type->cls != H5_CLASS_INTEGER ||
      a->type->size != 8 || a->type->big_endian || a->nelems != 1)
    return -1;
  *v = (int64_t)util_get_le(a->data, 8);
  return 0;
}

static int attr_str(h5_obj *root, const char *name, char *buf, size_t cap) {
  const h5_attr *a;
  if (h5_attr_get(root, name, &a) != H5_OK || !a->type || a->type->cls != H5_CLASS_STRING ||
      a->nelems != 1 || a->type->size == 0 || a->type->size >= cap)
    return -1;
  memcpy(buf, a->data, a->type->size);
  buf[a->type->size] = '\0';
  return 0;
}

/* The dataset at name, contiguous and in the file: its bytes (checked to
** be n elements of esz bytes of class cls, little-endian). */
static int view(embed_model *m, const char *name, h5_class cls, uint32_t esz, uint64_t n,
                const uint8_t **p, char *err, size_t errlen) {
  h5_obj *o;
  h5_dset_info in;
  const void *data;
  size_t len;
  if (h5_obj_open_path(m->f, name, &o) != H5_OK || h5_dset_info_get(o, &in) != H5_OK) {
    snprintf(err, errlen, "no dataset %s (%s)", name, h5_errmsg(m->f));
    return EMBED_ECORRUPT;
  }
  if (in.type->cls != cls || in.type->size != esz || in.type->big_endian || in.nelems != n) {
    snprintf(err, errlen, "dataset %s: %llu elements of class %d and %u bytes, expected %llu of "
             "class %d and %u bytes, little-endian",
             name, (unsigned long long)in.nelems, (int)in.type->cls, in.type->size,
             (unsigned long long)n, (int)cls, esz);
    return EMBED_ECORRUPT;
  }
  if (n == 0) {
    *p = NULL;
    return EMBED_OK;
  }
  if (h5_dset_view(o, &data, &len) != H5_OK || len != n * esz) {
    snprintf(err, errlen, "dataset %s: not contiguous and unfiltered (%s)", name, h5_errmsg(m->f));
    return EMBED_ECORRUPT;
  }
  *p = data;
  return EMBED_OK;
}

void embed_digest(int dim, const uint8_t *bytes, uint64_t nbytes, const uint8_t *offsets,
                  uint64_t nwords, const uint8_t *vectors, uint64_t vbytes, const uint8_t *weights,
                  const float *pc, char out[33]) {
  XXH3_state_t *st = XXH3_createState();
  uint8_t d8[8];
  util_put_le(d8, (uint64_t)dim, 8);
  XXH3_128bits_reset(st);
  XXH3_128bits_update(st, d8, 8);
  XXH3_128bits_update(st, bytes, (size_t)nbytes);
  XXH3_128bits_update(st, offsets, (size_t)(8 * (nwords + 1)));
  XXH3_128bits_update(st, vectors, (size_t)vbytes);
  XXH3_128bits_update(st, weights, (size_t)(4 * nwords));
  for (int k = 0; k < dim; k++) {
    uint8_t b[4];
    util_put_le_f32(b, pc[k]);
    XXH3_128bits_update(st, b, 4);
  }
  XXH128_hash_t h = XXH3_128bits_digest(st);
  XXH3_freeState(st);
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static int model_open(const char *path, int verify, embed_model **out, char *err, size_t errlen);

int embed_model_open(const char *path, embed_model **out, char *err, size_t errlen) {
  return model_open(path, 1, out, err, errlen);
}

int embed_model_open_nodigest(const char *path, embed_model **out, char *err, size_t errlen) {
  return model_open(path, 0, out, err, errlen);
}

static int model_open(const char *path, int verify, embed_model **out, char *err, size_t errlen) {
  *out = NULL;
  embed_model *m = calloc(1, sizeof *m);
  if (!m) {
    snprintf(err, errlen, "out of memory");
    return EMBED_ENOMEM;
  }
  char herr[512], kind[64], digest[40], why[512] = "";
  int rc = h5_open(path, &m->f, herr, sizeof herr);
  if (rc) {
    snprintf(err, errlen, "cannot open the model %s: %s", path, herr);
    free(m);
    return rc == H5_EIO ? EMBED_EIO : EMBED_ECORRUPT;
  }
  h5_obj *root;
  int64_t version, dim, words;
  rc = EMBED_ECORRUPT;
  if (h5_root(m->f, &root) != H5_OK || attr_str(root, "h5mem_model", kind, sizeof kind) ||
      strcmp(kind, EMBED_MODEL_KIND)) {
    snprintf(why, sizeof why, "not an h5mem static model (no h5mem_model = \"%s\" attribute)",
             EMBED_MODEL_KIND);
  } else if (attr_int(root, "version", &version) || version != 1) {
    snprintf(why, sizeof why, "model version %lld (this build reads 1)",
             (long long)(attr_int(root, "version", &version) ? -1 : version));
    rc = EMBED_EUNSUPPORTED;
  } else if (attr_int(root, "dim", &dim) || dim < 1 || dim > EMBED_MAX_DIM ||
             attr_int(root, "words", &words) || words < 1 || words > ((int64_t)1 << 40) ||
             attr_str(root, "digest", digest, sizeof digest) || strlen(digest) != 32) {
    snprintf(why, sizeof why, "bad dim, words or digest attributes");
  } else {
    m->dim = (int)dim;
    m->nwords = (uint64_t)words;
    h5_obj *vo;
    h5_dset_info vin;
    const uint8_t *pc;
    if (h5_obj_open_path(m->f, "vectors", &vo) == H5_OK && h5_dset_info_get(vo, &vin) == H5_OK &&
        vin.type->cls == H5_CLASS_FLOAT && vin.rank == 2 && vin.dims[1] == (uint64_t)dim)
      m->f16 = vin.type->size == 2;
    rc = view(m, "vocab_offsets", H5_CLASS_INTEGER, 8, m->nwords + 1, &m->offsets, why, sizeof why);
    if (!rc) {
      m->nbytes = off_at(m, m->nwords);
      rc = view(m, "vocab_bytes", H5_CLASS_INTEGER, 1, m->nbytes, &m->bytes, why, sizeof why);
    }
    if (!rc)
      rc = view(m, "vectors", H5_CLASS_FLOAT, m->f16 ? 2 : 4, m->nwords * (uint64_t)dim,
                &m->vectors, why, sizeof why);
    if (!rc) rc = view(m, "weights", H5_CLASS_FLOAT, 4, m->nwords, &m->weights, why, sizeof why);
    if (!rc) rc = view(m, "pc", H5_CLASS_FLOAT, 4, (uint64_t)dim, &pc, why, sizeof why);
    /* every word inside the bytes, non-empty, in strictly increasing order
    ** (the binary search relies on it) */
    for (uint64_t i = 0; !rc && i < m->nwords; i++) {
      uint64_t a = off_at(m, i), b = off_at(m, i + 1);
      if (i == 0 && a != 0) rc = EMBED_ECORRUPT;
      else if (b <= a || b > m->nbytes) rc = EMBED_ECORRUPT;
      else if (i > 0) {
        uint64_t p0 = off_at(m, i - 1), pl = a - p0, l = b - a;
        int c = memcmp(m->bytes + p0, m->bytes + a, (size_t)(pl < l ? pl : l));
        if (c > 0 || (c == 0 && pl >= l)) rc = EMBED_ECORRUPT;
      }
      if (rc) snprintf(why, sizeof why, "the vocabulary is damaged at word %llu", (unsigned long long)i);
    }
    if (!rc) {
      util_get_le32s(m->pc, pc, (size_t)m->dim);
      embed_digest(m->dim, m->bytes, m->nbytes, m->offsets, m->nwords, m->vectors,
                   m->nwords * (uint64_t)dim * (m->f16 ? 2 : 4), m->weights, m->pc, m->digest);
      if (verify && strcmp(m->digest, digest)) {
        snprintf(why, sizeof why, "its digest is %s, the file says %s: the model was changed or damaged",
                 m->digest, digest);
        rc = EMBED_ECORRUPT;
      }
    }
  }
  if (rc) {
    snprintf(err, errlen, "the model %s: %s", path, why);
    embed_model_close(m);
    return rc;
  }
  *out = m;
  return EMBED_OK;
}

/* The index of word w[0..n) in the vocabulary, or -1. */
static int64_t lookup(const embed_model *m, const char *w, size_t n) {
  uint64_t lo = 0, hi = m->nwords;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2, a = off_at(m, mid), l = off_at(m, mid + 1) - a;
    int c = memcmp(m->bytes + a, w, (size_t)(l < n ? l : n));
    if (c == 0) c = l < n ? -1 : l > n ? 1 : 0;
    if (c == 0) return (int64_t)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

typedef struct acc {
  const embed_model *m;
  double *sum; /* dim */
  float *row;  /* dim */
  double wsum;
  uint64_t known;
} acc;

static int on_token(void *ctx, const char *tok, size_t n, size_t start, size_t end) {
  acc *a = ctx;
  const embed_model *m = a->m;
  (void)start, (void)end;
  int64_t i = lookup(m, tok, n);
  if (i < 0) return 0;
  const uint8_t *v = m->vectors + (uint64_t)i * (uint64_t)m->dim * (m->f16 ? 2 : 4);
  if (m->f16) {
    uint16_t h[EMBED_MAX_DIM];
    for (int k = 0; k < m->dim; k++) h[k] = (uint16_t)util_get_le(v + 2 * k, 2);
    k_get()->f16_to_f32(h, a->row, (size_t)m->dim);
  } else {
    util_get_le32s(a->row, v, (size_t)m->dim);
  }
  double w = util_get_le_f32(m->weights + 4 * (uint64_t)i);
  for (int k = 0; k < m->dim; k++) a->sum[k] += w * a->row[k];
  a->wsum += 1;
  a->known++;
  return 0;
}

int embed_model_embed(const embed_model *m, const char *s, size_t n, float *out, uint64_t *known) {
  int dim = m->dim;
  acc a = {.m = m};
  double stack_sum[256];
  float stack_row[256];
  void *heap = NULL;
  if (dim <= 256) {
    a.sum = stack_sum;
    a.row = stack_row;
  } else {
    if (!(heap = malloc((size_t)dim * (sizeof *a.sum + sizeof *a.row)))) return EMBED_ENOMEM;
    a.sum = heap;
    a.row = (float *)(a.sum + dim);
  }
  memset(a.sum, 0, sizeof *a.sum * (size_t)dim);
  int rc = text_tokenize(NULL, s, n, on_token, &a);
  if (known) *known = a.known;
  double proj = 0, norm = 0;
  if (!rc && a.known) {
    for (int k = 0; k < dim; k++) {
      a.sum[k] /= a.wsum;
      proj += a.sum[k] * m->pc[k];
    }
    for (int k = 0; k < dim; k++) {
      a.sum[k] -= proj * m->pc[k];
      norm += a.sum[k] * a.sum[k];
    }
    norm = sqrt(norm);
    if (!isfinite(norm)) rc = EMBED_ECORRUPT; /* (a damaged model's inf or NaN) */
  }
  for (int k = 0; k < dim; k++) out[k] = !rc && norm > 0 ? (float)(a.sum[k] / norm) : 0.0f;
  free(heap);
  return rc == TEXT_ENOMEM ? EMBED_ENOMEM : rc;
}
