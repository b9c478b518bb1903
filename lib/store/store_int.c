/*
** lib/store/store_int.c - root attributes, and byte images of derived
** indexes inside the store's file (store_int.h).
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

typedef struct chunks {
  uint64_t first, n; /* chunk numbers wanted */
  uint64_t *addr;
  int bad;
} chunks;

static int take_chunk(void *ctx, const uint64_t *off, uint64_t addr, uint64_t size, uint32_t mask) {
  chunks *c = ctx;
  uint64_t k = off[0] / STORE_IMG_CHUNK;
  if (k < c->first || k - c->first >= c->n) return H5_OK;
  if (off[0] % STORE_IMG_CHUNK || size != STORE_IMG_CHUNK || mask) c->bad = 1;
  c->addr[k - c->first] = addr;
  return H5_OK;
}

static int none(const char **why, const char *msg) {
  *why = msg;
  return STORE_ENOTFOUND;
}

int simage_last(h5_file *f, const char *kind, int64_t row[4], const char **why) {
  char sp[64];
  snprintf(sp, sizeof sp, "/index/%s_saves", kind);
  h5_obj *sv;
  h5_dset_info si;
  if (h5_obj_open_path(f, sp, &sv) != H5_OK) return none(why, "no index saved yet");
  if (h5_dset_info_get(sv, &si) != H5_OK || si.rank != 2 || si.dims[1] != 4 ||
      si.type->cls != H5_CLASS_INTEGER || si.type->size != 8 || si.type->big_endian)
    return none(why, "the saves dataset is not an int64 [n, 4] dataset");
  if (si.dims[0] == 0) return none(why, "no index saved yet");
  uint64_t start[2] = {si.dims[0] - 1, 0}, count[2] = {1, 4};
  if (h5_dset_read_slab(sv, start, count, NULL, row, 4 * sizeof *row) != H5_OK)
    return none(why, "the saves dataset cannot be read");
  return STORE_OK;
}

int simage_load(h5_file *f, const char *kind, simage *img, const char **why) {
  memset(img, 0, sizeof *img);
  char ip[64];
  snprintf(ip, sizeof ip, "/index/%s_image", kind);
  h5_obj *im;
  h5_dset_info ii;
  int64_t *last = img->row;
  int lr = simage_last(f, kind, last, why);
  if (lr != STORE_OK) return lr;
  if (h5_obj_open_path(f, ip, &im) != H5_OK || h5_dset_info_get(im, &ii) != H5_OK ||
      ii.rank != 1 || ii.type->size != 1 || ii.layout != H5_LAYOUT_CHUNKED ||
      ii.chunk[0] != STORE_IMG_CHUNK || ii.nfilters)
    return none(why, "the image dataset is missing or not uint8 in 64 KiB chunks");
  uint64_t off = (uint64_t)last[0], len = (uint64_t)last[1];
  if (last[0] < 0 || last[1] <= 0 || last[2] < 0 || last[3] < 0 || off % STORE_IMG_CHUNK ||
      off > ii.dims[0] || len > ii.dims[0] - off || len > SIZE_MAX)
    return none(why, "the last save does not fit the image dataset");
  chunks c = {off / STORE_IMG_CHUNK, (len + STORE_IMG_CHUNK - 1) / STORE_IMG_CHUNK, NULL, 0};
  c.addr = malloc(c.n * sizeof *c.addr);
  if (!c.addr) return STORE_ENOMEM;
  memset(c.addr, 0xff, c.n * sizeof *c.addr);
  if (h5_dset_chunk_iter(im, take_chunk, &c) != H5_OK || c.bad) {
    free(c.addr);
    return none(why, "the chunks of the image cannot be read");
  }
  int inplace = 1;
  for (uint64_t i = 0; i < c.n; i++) {
    if (c.addr[i] == UINT64_MAX || !h5_file_span(f, c.addr[i], STORE_IMG_CHUNK)) {
      free(c.addr);
      return none(why, "a chunk of the saved index is missing");
    }
    if (c.addr[i] != c.addr[0] + i * STORE_IMG_CHUNK) inplace = 0;
  }
  const void *p = inplace ? h5_file_span(f, c.addr[0], len) : NULL;
  if (!p) { /* scattered chunks: gather a copy */
    uint8_t *buf = malloc(len);
    if (!buf) {
      free(c.addr);
      return STORE_ENOMEM;
    }
    for (uint64_t i = 0; i < c.n; i++) {
      uint64_t n = len - i * STORE_IMG_CHUNK < STORE_IMG_CHUNK ? len - i * STORE_IMG_CHUNK : STORE_IMG_CHUNK;
      memcpy(buf + i * STORE_IMG_CHUNK, h5_file_span(f, c.addr[i], STORE_IMG_CHUNK), n);
    }
    img->copy = buf;
    p = buf;
  }
  free(c.addr);
  img->p = p;
  img->len = (size_t)len;
  return STORE_OK;
}

int store_wcode(const h5w *w) { return store_h5_code(h5w_errcode(w)); }

int store_wdset(h5w *w, h5w_obj *g, const char *path, h5_type *ty, uint64_t crows, uint64_t width,
                h5w_obj **out) {
  int lr = h5w_lookup(w, path, out);
  if (lr == H5_OK || lr != H5_ENOTFOUND) { /* there, or there and unreadable (a damaged file): its error */
    h5_type_free(ty);
    return lr == H5_OK ? STORE_OK : store_wcode(w);
  }
  const char *name = strrchr(path, '/');
  h5w_dcpl d;
  memset(&d, 0, sizeof d);
  d.layout = H5_LAYOUT_CHUNKED;
  d.deflate = -1;
  d.chunk[0] = crows;
  d.chunk[1] = width;
  uint64_t dims[2] = {0, width}, maxd[2] = {UINT64_MAX, width};
  if (h5w_dataset(w, g, name ? name + 1 : path, ty, width ? 2 : 1, dims, maxd, &d, out) != H5_OK)
    return store_wcode(w);
  return STORE_OK;
}

/* The /index datasets of kind in w (made when missing: stores from before). */
static int image_dsets(h5w *w, const char *kind, h5w_obj **img, h5w_obj **saves) {
  h5w_obj *g;
  char ip[64], sp[64];
  snprintf(ip, sizeof ip, "/index/%s_image", kind);
  snprintf(sp, sizeof sp, "/index/%s_saves", kind);
  if (h5w_lookup(w, "/index", &g) != H5_OK && h5w_group(w, h5w_root(w), "index", &g) != H5_OK)
    return store_wcode(w);
  int rc = store_wdset(w, g, ip, h5_type_new_int(1, 0), STORE_IMG_CHUNK, 0, img);
  return rc != STORE_OK ? rc : store_wdset(w, g, sp, h5_type_new_int(8, 1), 64, 4, saves);
}

int simage_append(h5w *w, const char *kind, const uint8_t *img, size_t len, int64_t a, int64_t b,
                  char *err, size_t errlen) {
  /* pad to whole chunks: every image starts on a chunk, its chunks all full */
  size_t padded = (len + STORE_IMG_CHUNK - 1) / STORE_IMG_CHUNK * STORE_IMG_CHUNK;
  uint8_t *p = malloc(padded ? padded : 1);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  memcpy(p, img, len);
  memset(p + len, 0, padded - len);
  h5w_obj *di, *ds;
  h5w_info in;
  int rc = image_dsets(w, kind, &di, &ds);
  if (rc == STORE_OK && h5w_obj_info(di, &in) != H5_OK) rc = store_wcode(w);
  if (rc == STORE_OK) {
    int64_t row[4] = {(int64_t)in.dims[0], (int64_t)len, a, b};
    if (h5w_append(w, di, p, padded) != H5_OK || h5w_append(w, ds, row, 1) != H5_OK)
      rc = store_wcode(w);
  }
  if (rc != STORE_OK) snprintf(err, errlen, "%s", h5w_errmsg(w));
  free(p);
  return rc;
}

int store_open_child(h5_file *f, h5_obj *g, const char *name, h5_obj **o) {
  const h5_link *l;
  int rc = h5_group_find(g, name, &l);
  if (rc == H5_OK && l->type != H5_LINK_HARD) rc = H5_ENOTFOUND;
  return rc == H5_OK ? h5_obj_open(f, l->addr, o) : rc;
}

int store_attr_int(h5_obj *o, const char *name, int64_t *v) {
  const h5_attr *a;
  if (h5_attr_get(o, name, &a) != H5_OK) return 0;
  uint64_t bits;
  int sgn;
  if (a->rank > 0 || a->type->cls != H5_CLASS_INTEGER || h5_elem_int(a->type, a->data, &bits, &sgn) != H5_OK)
    return -1;
  *v = (int64_t)bits;
  return 1;
}

int store_attr_str(h5_file *f, h5_obj *o, const char *name, char *buf, size_t n) {
  const h5_attr *a;
  if (h5_attr_get(o, name, &a) != H5_OK) return 0;
  if (a->rank > 0) return -1;
  const uint8_t *p;
  size_t len;
  if (a->type->cls == H5_CLASS_VLEN && a->type->vlen_kind == 1) {
    uint32_t cnt;
    if (h5_vlen_get(f, a->data, &p, &len, &cnt) != H5_OK) return -1;
  } else if (a->type->cls == H5_CLASS_STRING) {
    p = a->data;
    len = h5_fixed_string_len(a->type, a->data);
  } else {
    return -1;
  }
  if (len >= n || (len && !p)) return -1;
  if (len) memcpy(buf, p, len);
  buf[len] = 0;
  return 1;
}
