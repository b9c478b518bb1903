/*
** lib/h5/h5_write.c - writing new HDF5 files.
**
** The format written is the one libhdf5 1.8 and later (and HDF5 2.0) read
** by default: superblock version 2, object headers version 2, new-style
** compact groups (link info, group info and link messages), layout message
** version 3 with a v1 B-tree chunk index, fill value message version 3,
** filter pipeline version 2, attribute messages version 3, datatype
** messages version 1 (version 3 for compound, enum and array types).
** Attributes are attribute messages in the object header up to 8 of them,
** dense storage beyond that or when one does not fit a header message (64
** KiB): libhdf5's defaults for both (max compact 8, min dense 6).
** Chunk dimension fields hold the element size last, as HDF5 2.0 checks.
**
** Raw data goes to the file as soon as it is given (chunks filtered in
** parallel); metadata is written at each h5w_flush (and h5w_close, which
** flushes): rows short of a row of chunks as provisional chunks, then new
** headers for the objects changed since the last flush, children before
** parents, then the superblock, the commit point.  Until it is written the
** file on disk is the last flushed one: everything after it lies past the
** end of allocation its superblock names.  h5_wopen.c opens existing files
** for the same kind of additions (old objects carry `old`).
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "h5_int.h"
#include "util/pool.h"
#include "util/strbuf.h"

#define W_TWO_K 64     /* entries per chunk B-tree node (2 x default K 32) */
#define W_GCOL_MIN 4096
#define W_MAX_MSG 65535 /* a header message's size field is 16 bits */
#define W_MAX_COMPACT 8 /* links or attributes kept in the header (libhdf5's
                           default); more go to dense storage */

#define werr h5w_err /* (h5_int.h) the error message of w; returns code */

int h5w_err(h5w *w, int code, const char *fmt, ...) {
  w->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  return code;
}

const char *h5w_errmsg(const h5w *w) { return w ? w->err : "no writer"; }

int h5w_errcode(const h5w *w) { return w ? w->code : H5_EINVAL; }

/* A failed write or sync (errno as it failed): H5_EFULL for no space, else
** H5_EIO (util_err_write, the rule the log follows too). */
int h5w_errno(h5w *w, const char *what) {
  int e = errno;
  int full = util_err_write(e) == H5_EFULL;
  return werr(w, full ? H5_EFULL : H5_EIO, "%s: %s%s", what, strerror(e),
              full ? " (no space left for the file)" : "");
}

/* ---- low-level output ----------------------------------------------------- */

static int pwrite_all(h5w *w, const void *buf, size_t len, uint64_t at) {
  const uint8_t *p = buf;
  while (len) {
    ssize_t n = pwrite(w->fd, p, len, (off_t)at);
    if (n < 0) {
      if (errno == EINTR) continue;
      w->failed = 1;
      return h5w_errno(w, "write failed");
    }
    p += n;
    len -= (size_t)n;
    at += (uint64_t)n;
  }
  return H5_OK;
}

/* Every allocation starts on 8 bytes, so that data read in place from a
** mapped file (rows of float32 or int64, index images) is naturally
** aligned; the few bytes skipped are a hole (zeros) nothing points to. */
#define ALLOC_ALIGN 8
static void align_eoa(h5w *w) { w->eoa = (w->eoa + ALLOC_ALIGN - 1) & ~(uint64_t)(ALLOC_ALIGN - 1); }

/* Write len bytes at the end of the file; *at gets their address. */
static int append(h5w *w, const void *buf, size_t len, uint64_t *at) {
  align_eoa(w);
  *at = w->eoa;
  int rc = pwrite_all(w, buf, len, w->eoa);
  if (rc == H5_OK) w->eoa += len;
  return rc;
}

int h5w_file_append(h5w *w, const void *buf, size_t len, uint64_t *at) {
  return append(w, buf, len, at);
}

int h5w_file_reserve(h5w *w, uint64_t len, uint64_t *at) {
  align_eoa(w);
  *at = w->eoa;
  w->eoa += len;
  return H5_OK;
}

int h5w_file_write(h5w *w, const void *buf, size_t len, uint64_t at) {
  return pwrite_all(w, buf, len, at);
}

static void put_u8(strbuf *o, unsigned v) {
  char c = (char)(v & 0xff);
  strbuf_append(o, &c, 1);
}

/* ---- the global heap -------------------------------------------------- */

static int gcol_flush(h5w *w) {
  if (!w->gcol) return H5_OK;
  /* object 0, the free space, fills the rest when its header fits */
  uint64_t left = w->gcol_cap - w->gcol_used;
  if (left >= 16) util_put_le(w->gcol + w->gcol_used + 8, left, 8);
  int rc = pwrite_all(w, w->gcol, (size_t)w->gcol_cap, w->gcol_addr);
  free(w->gcol);
  w->gcol = NULL;
  return rc;
}

/* Store len bytes as a global heap object; the heap ID goes to id
** (8-byte collection address, 4-byte index). */
static int gheap_put(h5w *w, const void *data, size_t len, uint8_t id[12]) {
  uint64_t need = 16 + ((len + 7) & ~(uint64_t)7);
  if (w->gcol && (w->gcol_used + need > w->gcol_cap || w->gcol_next == 0xffff)) {
    int rc = gcol_flush(w);
    if (rc) return rc;
  }
  if (!w->gcol) {
    uint64_t cap = W_GCOL_MIN;
    while (cap < 16 + need + 16) cap *= 2;
    w->gcol = calloc(1, (size_t)cap);
    if (!w->gcol) return werr(w, H5_ENOMEM, "out of memory");
    memcpy(w->gcol, "GCOL", 4);
    w->gcol[4] = 1;
    util_put_le(w->gcol + 8, cap, 8);
    w->gcol_cap = cap;
    w->gcol_used = 16;
    w->gcol_next = 1;
    align_eoa(w);
    w->gcol_addr = w->eoa;
    w->eoa += cap; /* reserved now, written when full or at close */
  }
  uint8_t *p = w->gcol + w->gcol_used;
  util_put_le(p, w->gcol_next, 2);
  util_put_le(p + 2, 1, 2); /* reference count */
  util_put_le(p + 8, len, 8);
  if (len) memcpy(p + 16, data, len);
  util_put_le(id, w->gcol_addr, 8);
  util_put_le(id + 8, w->gcol_next, 4);
  w->gcol_used += need;
  w->gcol_next++;
  return H5_OK;
}

/* Replace the variable-length strings and sequences in n elements of type
** t at p (each a pointer in the first 8 bytes of its 16-byte slot, NULL for
** none: a const char * for a string; for a sequence its element count in
** the next 8 bytes) by their stored form: length, heap ID.  Works inside compounds and
** arrays. */
static int has_vlen(const h5_type *t);
static int convert_vlen(h5w *w, const h5_type *t, uint8_t *p, uint64_t n,
                        int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return werr(w, H5_EINVAL, "type nested too deeply");
  for (uint64_t e = 0; e < n; e++, p += t->size) {
    if (t->cls == H5_CLASS_VLEN) {
      /* a string: a const char *; a sequence: a pointer and, in the
      ** next 8 bytes, its number of elements */
      const char *s;
      memcpy(&s, p, sizeof s);
      uint64_t cnt = 0, len;
      if (t->vlen_kind == 1) {
        len = cnt = s ? strlen(s) : 0;
      } else {
        if (t->base->cls == H5_CLASS_VLEN || has_vlen(t->base))
          return werr(w, H5_EUNSUPPORTED, "writing sequences of variable-length data");
        memcpy(&cnt, p + 8, 8);
        if (cnt > UINT32_MAX / (t->base->size ? t->base->size : 1))
          return werr(w, H5_EINVAL, "sequence longer than 4 GiB");
        len = cnt * t->base->size;
      }
      if (len > UINT32_MAX) return werr(w, H5_EINVAL, "string longer than 4 GiB");
      uint8_t id[12] = {0};
      if (s) {
        int rc = gheap_put(w, s, (size_t)len, id);
        if (rc) return rc;
      } else {
        cnt = 0;
      }
      util_put_le(p, cnt, 4);
      memcpy(p + 4, id, 12);
    } else if (t->cls == H5_CLASS_COMPOUND) {
      for (uint32_t i = 0; i < t->nmembers; i++) {
        int rc = convert_vlen(w, t->members[i].type, p + t->members[i].offset, 1,
                              depth + 1);
        if (rc) return rc;
      }
    } else if (t->cls == H5_CLASS_ARRAY) {
      uint64_t k = 1;
      for (int d = 0; d < t->rank; d++) k *= t->dims[d];
      int rc = convert_vlen(w, t->base, p, k, depth + 1);
      if (rc) return rc;
    }
  }
  return H5_OK;
}

static int has_vlen(const h5_type *t) {
  if (t->cls == H5_CLASS_VLEN) return 1;
  if (t->cls == H5_CLASS_ARRAY) return has_vlen(t->base);
  if (t->cls == H5_CLASS_COMPOUND)
    for (uint32_t i = 0; i < t->nmembers; i++)
      if (has_vlen(t->members[i].type)) return 1;
  return 0;
}

/* A copy of n elements with variable-length data stored, or NULL with the
** error set.  The caller frees it. */
static uint8_t *stored_copy(h5w *w, const h5_type *t, const void *data,
                            uint64_t n) {
  uint64_t bytes = n * t->size;
  uint8_t *c = malloc(bytes ? (size_t)bytes : 1);
  if (!c) {
    werr(w, H5_ENOMEM, "out of memory");
    return NULL;
  }
  if (bytes) memcpy(c, data, (size_t)bytes);
  if (has_vlen(t) && convert_vlen(w, t, c, n, 0)) {
    free(c);
    return NULL;
  }
  return c;
}

/* ---- objects ------------------------------------------------------------- */

void h5w_obj_free(h5w_obj *o) {
  if (!o) return;
  for (size_t i = 0; i < o->nkids; i++) h5w_obj_free(o->kids[i]);
  free(o->kids);
  free(o->kid_names.slot);
  for (size_t i = 0; i < o->nattrs; i++) free(o->attrv[i].name);
  free(o->attrv);
  free(o->attr_names.slot);
  strbuf_free(&o->attrs);
  if (!o->type_borrowed) h5_type_free(o->type);
  free(o->name);
  free(o->fill);
  free(o->compact);
  free(o->chunks);
  free(o->prov);
  free(o->pending);
  free(o);
}

/* h5w_create with open(2) flags: 0, or O_EXCL | O_NOFOLLOW; *made: whether
** the file was made (and is left behind on a failure). */
static int create_flags(const char *path, int flags, int threads, h5w **out, char *err,
                        size_t errlen, int *made) {
  *out = NULL;
  *made = 0;
  h5w *w = calloc(1, sizeof *w);
  h5w_obj *root = calloc(1, sizeof *root);
  if (!w || !root) {
    free(w);
    free(root);
    snprintf(err, errlen, "out of memory");
    return H5_ENOMEM;
  }
  w->fd = open(path, O_RDWR | O_CREAT | (flags ? flags : O_TRUNC) | O_CLOEXEC, 0644);
  if (w->fd < 0) {
    int e = errno;
    snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
    free(w);
    free(root);
    errno = e; /* (h5w_create_temp tells a taken name from other failures) */
    return H5_EIO;
  }
  *made = 1;
  root->is_group = 1;
  root->dirty = 1;
  w->root = root;
  w->threads = threads > 0 ? threads : util_ncpu();
  w->eoa = 48; /* the superblock (version 2, 8-byte offsets) */
  w->sb_version = 2;
  w->ext_addr = H5_UNDEF_ADDR;
  /* an empty file at once: a crash before the first flush leaves a valid
     file holding an empty root group */
  int rc = h5w_flush(w, 0);
  if (rc) {
    snprintf(err, errlen, "%s", w->err);
    h5w_free(w);
    return rc;
  }
  *out = w;
  return H5_OK;
}

int h5w_create(const char *path, int threads, h5w **out, char *err, size_t errlen) {
  int made;
  return create_flags(path, 0, threads, out, err, errlen, &made);
}

int h5w_create_temp(const char *base, int threads, h5w **out, char **path_out, char *err,
                    size_t errlen) {
  *out = NULL;
  *path_out = NULL;
  size_t n = strlen(base) + 8;
  char *p = malloc(n);
  if (!p) {
    snprintf(err, errlen, "out of memory");
    return H5_ENOMEM;
  }
  for (int k = 0; k < 100; k++) {
    if (k) snprintf(p, n, "%s.%d", base, k);
    else memcpy(p, base, n - 7);
    int made, rc = create_flags(p, O_EXCL | O_NOFOLLOW, threads, out, err, errlen, &made);
    /* EEXIST: the name is taken; ELOOP: a link (O_NOFOLLOW) */
    if (rc == H5_EIO && !made && (errno == EEXIST || errno == ELOOP)) continue;
    if (rc == H5_OK) {
      *path_out = p;
      return rc;
    }
    if (made) unlink(p); /* (ours: made just now, exclusively) */
    free(p);
    return rc;
  }
  free(p);
  snprintf(err, errlen, "cannot create a temporary file: %s and %s.1 .. %s.99 are all taken (by "
           "files left behind or links; none was touched)", base, base, base);
  return H5_EIO;
}

h5w_obj *h5w_root(h5w *w) { return w->root; }

static int valid_name(const char *name) {
  return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 &&
         strlen(name) < 65536;
}

static size_t names_slot(const w_names *s, const char *name) {
  size_t mask = s->cap - 1;
  size_t i = h5_lookup3(name, strlen(name), 0) & mask;
  while (s->slot[i] && strcmp(s->slot[i], name) != 0) i = (i + 1) & mask;
  return i;
}

int h5w_names_has(const w_names *s, const char *name) {
  return s->cap && s->slot[names_slot(s, name)] != NULL;
}

/* Add name (not in s yet; the string must outlive s): H5_OK or H5_ENOMEM. */
int h5w_names_add(w_names *s, const char *name) {
  if (2 * (s->n + 1) > s->cap) { /* at most half full */
    w_names g = {NULL, s->cap ? 2 * s->cap : 16, 0};
    g.slot = calloc(g.cap, sizeof *g.slot);
    if (!g.slot) return H5_ENOMEM;
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i]) g.slot[names_slot(&g, s->slot[i])] = s->slot[i];
    g.n = s->n;
    free(s->slot);
    *s = g;
  }
  s->slot[names_slot(s, name)] = name;
  s->n++;
  return H5_OK;
}

int h5w_kid_attach(h5w *w, h5w_obj *parent, const char *name, h5w_obj *o) {
  if (parent->nkids == parent->capkids) {
    size_t ncap = parent->capkids ? parent->capkids * 2 : 8;
    h5w_obj **nk = realloc(parent->kids, ncap * sizeof *nk);
    if (!nk) return werr(w, H5_ENOMEM, "out of memory");
    parent->kids = nk;
    parent->capkids = ncap;
  }
  o->name = strdup(name);
  if (!o->name || h5w_names_add(&parent->kid_names, o->name))
    return werr(w, H5_ENOMEM, "out of memory");
  o->parent = parent;
  parent->kids[parent->nkids++] = o;
  return H5_OK;
}

/* Before o changes: o and every group above it that comes from the opened
** file must be one we can give a new header (h5w_old_check). */
static int may_change(h5w *w, h5w_obj *o) {
  if (w->fd < 0) return werr(w, H5_EINVAL, "the file is closed");
  for (h5w_obj *p = o; p; p = p->parent) {
    int rc = p->old ? h5w_old_check(w, p) : H5_OK;
    if (rc) return rc;
  }
  return H5_OK;
}

/* o changed: it and its ancestors (whose links to it will change address)
** get new headers at the next flush. */
static void mark_dirty(h5w_obj *o) {
  for (; o; o = o->parent) o->dirty = 1;
}

static int add_kid(h5w *w, h5w_obj *parent, const char *name, h5w_obj *o) {
  if (!parent->is_group) return werr(w, H5_EINVAL, "'%s' is not a group", parent->name);
  if (!valid_name(name)) return werr(w, H5_EINVAL, "bad link name '%s'", name ? name : "(null)");
  const h5_link *l;
  if (h5w_names_has(&parent->kid_names, name) ||
      (parent->old && h5_group_find(parent->old, name, &l) == H5_OK))
    return werr(w, H5_EINVAL, "'%s' exists already", name);
  int rc = may_change(w, parent);
  if (rc == H5_OK) rc = h5w_kid_attach(w, parent, name, o);
  if (rc == H5_OK) mark_dirty(o);
  return rc;
}

int h5w_group(h5w *w, h5w_obj *parent, const char *name, h5w_obj **out) {
  *out = NULL;
  h5w_obj *g = calloc(1, sizeof *g);
  if (!g) return werr(w, H5_ENOMEM, "out of memory");
  g->is_group = 1;
  int rc = add_kid(w, parent, name, g);
  if (rc) {
    h5w_obj_free(g);
    return rc;
  }
  *out = g;
  return H5_OK;
}

/* The codec a dataset asks for: available, its settings in range, not
** beside deflate. */
static int codec_check(h5w *w, const char *name, const h5w_dcpl *p) {
  const char *lib;
  if (!p->codec) return H5_OK;
  if (!h5w_codec_available(p->codec, &lib))
    return werr(w, H5_EUNSUPPORTED, "dataset '%s': this build has no %s", name, lib);
  if (p->deflate >= 0)
    return werr(w, H5_EINVAL, "dataset '%s': deflate and another codec", name);
  if (p->codec == H5W_CODEC_ZSTD && (p->codec_level < 1 || p->codec_level > 22))
    return werr(w, H5_EINVAL, "dataset '%s': zstd level %d (1 to 22)", name, p->codec_level);
  if (p->codec == H5W_CODEC_BLOSC &&
      (p->codec_level < 0 || p->codec_level > 9 || p->blosc_shuffle < 0 || p->blosc_shuffle > 2 ||
       p->blosc_cname < 0 || p->blosc_cname > 5 || p->blosc_cname == 3))
    return werr(w, H5_EINVAL, "dataset '%s': blosc level %d, shuffle %d, compressor %d", name,
                p->codec_level, p->blosc_shuffle, p->blosc_cname);
  return H5_OK;
}

int h5w_dataset(h5w *w, h5w_obj *parent, const char *name, h5_type *type,
                int rank, const uint64_t *dims, const uint64_t *maxdims,
                const h5w_dcpl *dcpl, h5w_obj **out) {
  *out = NULL;
  if (!type) return werr(w, H5_EINVAL, "dataset '%s': no datatype", name);
  h5w_obj *d = calloc(1, sizeof *d);
  if (!d) {
    h5_type_free(type);
    return werr(w, H5_ENOMEM, "out of memory");
  }
  d->type = type;
  int rc = H5_OK;
  if (rank < 0 || rank > H5_MAX_RANK) rc = werr(w, H5_EINVAL, "rank %d", rank);
  d->rank = rank;
  h5w_dcpl def = {0};
  def.layout = H5_LAYOUT_CONTIGUOUS;
  def.deflate = -1;
  d->dcpl = dcpl ? *dcpl : def;
  int chunked = d->dcpl.layout == H5_LAYOUT_CHUNKED;
  for (int i = 0; rc == H5_OK && i < rank; i++) {
    d->dims[i] = dims[i];
    d->maxdims[i] = maxdims ? maxdims[i] : dims[i];
    if (d->maxdims[i] != UINT64_MAX && d->maxdims[i] < dims[i])
      rc = werr(w, H5_EINVAL, "dataset '%s': maxshape below shape", name);
    if (d->maxdims[i] != dims[i] && !chunked)
      rc = werr(w, H5_EINVAL, "dataset '%s': resizable datasets must be chunked", name);
    if (chunked && (d->dcpl.chunk[i] == 0 || d->dcpl.chunk[i] > UINT32_MAX))
      rc = werr(w, H5_EINVAL, "dataset '%s': bad chunk dimension", name);
  }
  if (rc == H5_OK && chunked) {
    uint64_t cb = type->size;
    for (int i = 0; i < rank; i++) cb *= d->dcpl.chunk[i];
    if (rank == 0 || cb > ((uint64_t)1 << 32) - 1)
      rc = werr(w, H5_EINVAL, "dataset '%s': chunks must have rank >= 1 and < 4 GiB", name);
  }
  if (rc == H5_OK && !chunked && (d->dcpl.deflate >= 0 || d->dcpl.shuffle || d->dcpl.fletcher32 ||
                                   d->dcpl.codec))
    rc = werr(w, H5_EINVAL, "dataset '%s': filters need chunked layout", name);
  if (rc == H5_OK) rc = codec_check(w, name, &d->dcpl);
  if (rc == H5_OK && d->dcpl.fill) {
    d->fill = stored_copy(w, type, d->dcpl.fill, 1);
    if (!d->fill) rc = H5_ENOMEM;
  }
  d->dcpl.fill = NULL;
  d->data_addr = H5_UNDEF_ADDR;
  if (rc == H5_OK) rc = add_kid(w, parent, name, d);
  if (rc) {
    h5w_obj_free(d);
    return rc;
  }
  *out = d;
  return H5_OK;
}

static uint64_t nelems_of(const h5w_obj *d) {
  uint64_t n = 1;
  for (int i = 0; i < d->rank; i++) n *= d->dims[i];
  return n;
}

/* ---- chunks ----------------------------------------------------------------- */

typedef struct chunk_job {
  h5w *w;
  h5w_obj *d;
  const uint8_t *data;   /* the rows the chunks come from */
  uint64_t rows;         /* rows of data (dimension 0) */
  uint64_t row0;         /* dataset row of data[0] */
  uint64_t nchunks;
  uint64_t per[H5_MAX_RANK]; /* chunks along each dimension */
  uint8_t **out;
  size_t *outlen;
} chunk_job;

/* Shuffle, deflate or the codec, fletcher32 on one chunk buffer; *buf is
** replaced. */
static int filter_chunk(const h5w_obj *d, uint8_t **buf, size_t *len) {
  size_t esz = d->type->size;
  if (d->dcpl.shuffle && esz > 1) {
    uint8_t *s = malloc(*len);
    if (!s) return H5_ENOMEM;
    size_t n = *len / esz;
    for (size_t b = 0; b < esz; b++)
      for (size_t i = 0; i < n; i++) s[b * n + i] = (*buf)[i * esz + b];
    memcpy(s + n * esz, *buf + n * esz, *len - n * esz);
    free(*buf);
    *buf = s;
  }
  if (d->dcpl.deflate >= 0) {
#ifdef HAVE_LIBDEFLATE
    /* the same zlib stream format, several times faster */
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(d->dcpl.deflate);
    if (!c) return H5_ENOMEM;
    size_t cap = libdeflate_zlib_compress_bound(c, *len);
    uint8_t *z = malloc(cap);
    size_t zlen = z ? libdeflate_zlib_compress(c, *buf, *len, z, cap) : 0;
    libdeflate_free_compressor(c);
    if (!zlen) {
      free(z);
      return z ? H5_EIO : H5_ENOMEM;
    }
#else
    uLongf cap = compressBound((uLong)*len);
    uint8_t *z = malloc(cap);
    if (!z) return H5_ENOMEM;
    uLongf zlen = cap;
    if (compress2(z, &zlen, *buf, (uLong)*len, d->dcpl.deflate) != Z_OK) {
      free(z);
      return H5_EIO;
    }
#endif
    free(*buf);
    *buf = z;
    *len = zlen;
  }
  if (d->dcpl.codec) {
    uint8_t *z;
    size_t zlen;
    int rc = h5_codec_encode(&d->dcpl, esz, *buf, *len, &z, &zlen);
    if (rc) return rc;
    free(*buf);
    *buf = z;
    *len = zlen;
  }
  if (d->dcpl.fletcher32) {
    uint8_t *f = realloc(*buf, *len + 4);
    if (!f) return H5_ENOMEM;
    util_put_le(f + *len, h5_fletcher32(f, *len), 4);
    *buf = f;
    *len += 4;
  }
  return H5_OK;
}

/* Build chunk ci of the job (edges padded with the fill value), filtered. */
static int make_chunk(void *ctx, size_t ci) {
  chunk_job *j = ctx;
  h5w_obj *d = j->d;
  size_t esz = d->type->size;
  uint64_t cidx[H5_MAX_RANK], rem = ci;
  for (int k = d->rank - 1; k >= 0; k--) {
    cidx[k] = rem % j->per[k];
    rem /= j->per[k];
  }
  uint64_t celems = 1;
  for (int k = 0; k < d->rank; k++) celems *= d->dcpl.chunk[k];
  size_t len = (size_t)(celems * esz);
  uint8_t *buf = malloc(len ? len : 1);
  if (!buf) return H5_ENOMEM;
  if (d->fill)
    for (uint64_t e = 0; e < celems; e++) memcpy(buf + e * esz, d->fill, esz);
  else
    memset(buf, 0, len);
  /* copy the rows of the chunk that exist: iterate over all but the last
     dimension, copying runs along the last one */
  uint64_t start[H5_MAX_RANK], cnt[H5_MAX_RANK];
  for (int k = 0; k < d->rank; k++) {
    uint64_t lo = cidx[k] * d->dcpl.chunk[k];
    uint64_t hi = lo + d->dcpl.chunk[k];
    uint64_t ext = k == 0 ? j->rows : d->dims[k];
    if (hi > ext) hi = ext;
    start[k] = lo;
    cnt[k] = hi > lo ? hi - lo : 0;
  }
  uint64_t runs = 1;
  for (int k = 0; k < d->rank - 1; k++) runs *= cnt[k];
  int last = d->rank - 1;
  for (uint64_t r = 0; cnt[last] && r < runs; r++) {
    uint64_t idx[H5_MAX_RANK], t = r;
    for (int k = last - 1; k >= 0; k--) {
      idx[k] = t % cnt[k];
      t /= cnt[k];
    }
    uint64_t src = 0, dst = 0;
    for (int k = 0; k < last; k++) {
      src = src * (k == 0 ? j->rows : d->dims[k]) + start[k] + idx[k];
      dst = dst * d->dcpl.chunk[k] + idx[k];
    }
    src = src * d->dims[last] + start[last];
    dst = dst * d->dcpl.chunk[last];
    memcpy(buf + dst * esz, j->data + src * esz, (size_t)(cnt[last] * esz));
  }
  int rc = filter_chunk(d, &buf, &len);
  if (rc) {
    free(buf);
    return rc;
  }
  j->out[ci] = buf;
  j->outlen[ci] = len;
  return H5_OK;
}

int h5w_chunks_reserve(h5w *w, h5w_obj *d, size_t n) {
  if (d->nchunks + n <= d->capchunks) return H5_OK;
  size_t ncap = d->capchunks ? d->capchunks : 16;
  while (ncap < d->nchunks + n) ncap *= 2;
  w_chunk *nc = realloc(d->chunks, ncap * sizeof *nc);
  if (!nc) return werr(w, H5_ENOMEM, "out of memory");
  d->chunks = nc;
  d->capchunks = ncap;
  return H5_OK;
}

static int is_filtered(const h5w_obj *d) {
  return d->dcpl.shuffle || d->dcpl.deflate >= 0 || d->dcpl.fletcher32 || d->dcpl.codec;
}

/* The slot of the provisional chunk at c's offset that the last flush
** wrote, if c may be written over it: unfiltered chunks only, whose slot
** has the full chunk size.  Why that is safe against a crash at any
** moment: the file as last committed (its superblock) indexes that slot
** for the rows it had then, and the chunk written now holds the same bytes
** for those rows (rows already given never change, and a chunk's rows lie
** in C order, the same offsets in both); only bytes past the committed
** dims[0] (fill then, new rows now) differ, and no reader of the committed
** file looks at them.  A torn write therefore changes nothing a reader of
** the committed state sees.  Filtered chunks change as a whole when a row
** is added, so they always go to a new place. */
static const w_chunk *reusable_slot(const h5w_obj *d, const w_chunk *c) {
  if (is_filtered(d)) return NULL;
  for (size_t i = 0; i < d->nprov; i++)
    if (memcmp(d->prov[i].off, c->off, sizeof c->off) == 0 && d->prov[i].size == c->size)
      return &d->prov[i];
  return NULL;
}

/* The provisional chunks the last flush indexed are the last entries of
** d->chunks: take them out of the index before the real ones are written
** (their slots stay in d->prov). */
static void unlist_prov(h5w_obj *d) {
  d->nchunks -= d->nprov_listed;
  d->nprov_listed = 0;
}

/* Chunk `rows` rows starting at dataset row row0 (row0 a multiple of the
** chunk's first dimension), write the chunks, index them. */
static int write_chunks(h5w *w, h5w_obj *d, const uint8_t *data, uint64_t row0,
                        uint64_t rows) {
  chunk_job j;
  memset(&j, 0, sizeof j);
  j.w = w;
  j.d = d;
  j.data = data;
  j.rows = rows;
  j.row0 = row0;
  j.nchunks = 1;
  for (int k = 0; k < d->rank; k++) {
    uint64_t ext = k == 0 ? rows : d->dims[k];
    j.per[k] = (ext + d->dcpl.chunk[k] - 1) / d->dcpl.chunk[k];
    j.nchunks *= j.per[k];
  }
  if (j.nchunks == 0) return H5_OK;
  j.out = calloc((size_t)j.nchunks, sizeof *j.out);
  j.outlen = calloc((size_t)j.nchunks, sizeof *j.outlen);
  int rc = j.out && j.outlen ? H5_OK : werr(w, H5_ENOMEM, "out of memory");
  if (rc == H5_OK) {
    rc = util_parallel_for(w->threads, (size_t)j.nchunks, make_chunk, &j);
    if (rc) rc = werr(w, rc, "compressing chunks failed (%d)", rc);
  }
  if (rc == H5_OK) rc = h5w_chunks_reserve(w, d, (size_t)j.nchunks);
  for (uint64_t ci = 0; rc == H5_OK && ci < j.nchunks; ci++) {
    w_chunk *c = &d->chunks[d->nchunks];
    memset(c, 0, sizeof *c);
    uint64_t rem = ci;
    for (int k = d->rank - 1; k >= 0; k--) {
      c->off[k] = (rem % j.per[k]) * d->dcpl.chunk[k];
      rem /= j.per[k];
    }
    c->off[0] += row0;
    c->size = j.outlen[ci];
    const w_chunk *slot = reusable_slot(d, c);
    if (slot) {
      c->addr = slot->addr;
      rc = pwrite_all(w, j.out[ci], j.outlen[ci], c->addr);
    } else {
      rc = append(w, j.out[ci], j.outlen[ci], &c->addr);
    }
    if (rc == H5_OK) d->nchunks++;
  }
  for (uint64_t ci = 0; j.out && ci < j.nchunks; ci++) free(j.out[ci]);
  free(j.out);
  free(j.outlen);
  return rc;
}

/* ---- writing data -------------------------------------------------------- */

int h5w_write(h5w *w, h5w_obj *d, const void *data) {
  if (d->is_group) return werr(w, H5_EINVAL, "'%s' is a group", d->name);
  if (d->written || d->old)
    return werr(w, H5_EINVAL, "dataset '%s' was written already", d->name);
  if (w->fd < 0) return werr(w, H5_EINVAL, "the file is closed");
  mark_dirty(d);
  uint64_t n = nelems_of(d), esz = d->type->size;
  if (esz && n > UINT64_MAX / esz) return werr(w, H5_EINVAL, "dataset too large");
  uint8_t *stored = stored_copy(w, d->type, data, n);
  if (!stored) return H5_ENOMEM;
  int rc = H5_OK;
  uint64_t bytes = n * esz;
  switch (d->dcpl.layout) {
  case H5_LAYOUT_COMPACT:
    if (bytes > 64000) {
      rc = werr(w, H5_EINVAL, "compact dataset '%s' over 64000 bytes", d->name);
      break;
    }
    d->compact = stored;
    d->compact_len = (size_t)bytes;
    stored = NULL;
    break;
  case H5_LAYOUT_CONTIGUOUS:
    d->data_size = bytes;
    rc = append(w, stored, (size_t)bytes, &d->data_addr);
    break;
  case H5_LAYOUT_CHUNKED:
    rc = d->rank ? write_chunks(w, d, stored, 0, d->dims[0]) : H5_EINVAL;
    break;
  default:
    rc = werr(w, H5_EUNSUPPORTED, "layout %d", d->dcpl.layout);
  }
  free(stored);
  if (rc == H5_OK) d->written = 1;
  return rc;
}

int h5w_append(h5w *w, h5w_obj *d, const void *rows, uint64_t nrows) {
  if (d->is_group || d->dcpl.layout != H5_LAYOUT_CHUNKED || d->rank < 1 ||
      (!d->old && d->maxdims[0] != UINT64_MAX))
    return werr(w, H5_EINVAL,
                "'%s': appending needs a chunked dataset unlimited in dimension 0",
                d->name);
  if (!d->old && (d->written || (!d->appended && d->dims[0] != 0)))
    return werr(w, H5_EINVAL,
                "'%s': appending starts from an empty dataset (shape[0] 0) "
                "that h5w_write has not written", d->name);
  if (d->maxdims[0] != UINT64_MAX && nrows > d->maxdims[0] - d->dims[0])
    return werr(w, H5_EINVAL, "'%s': %llu rows more would pass its maximum shape %llu",
                d->name, (unsigned long long)nrows, (unsigned long long)d->maxdims[0]);
  int rc = may_change(w, d);
  if (rc == H5_OK && d->old && !d->chunks_loaded) rc = h5w_old_prepare_append(w, d);
  if (rc) return rc;
  uint64_t rowbytes = d->type->size;
  for (int k = 1; k < d->rank; k++) rowbytes *= d->dims[k];
  d->appended = 1;
  uint8_t *stored = stored_copy(w, d->type, rows, nrows * (rowbytes / d->type->size));
  if (!stored) return H5_ENOMEM;
  uint64_t pbytes = (d->npending + nrows) * rowbytes;
  uint8_t *np = realloc(d->pending, pbytes ? (size_t)pbytes : 1);
  if (!np) {
    free(stored);
    return werr(w, H5_ENOMEM, "out of memory");
  }
  d->pending = np;
  memcpy(d->pending + d->npending * rowbytes, stored, (size_t)(nrows * rowbytes));
  free(stored);
  d->npending += nrows;
  d->dims[0] += nrows;
  d->data_changed = 1;
  mark_dirty(d);
  /* whole rows of chunks go to the file now */
  uint64_t c0 = d->dcpl.chunk[0], full = d->npending / c0 * c0;
  if (full) {
    uint64_t row0 = d->dims[0] - d->npending;
    unlist_prov(d);
    rc = write_chunks(w, d, d->pending, row0, full);
    if (rc) return rc;
    d->nprov = 0; /* the provisional row of chunks is complete */
    memmove(d->pending, d->pending + full * rowbytes,
            (size_t)((d->npending - full) * rowbytes));
    d->npending -= full;
  }
  return H5_OK;
}

/* The chunk of d whose first row is row0 among its complete chunks (those
** before the provisional ones), or NULL: d->chunks is sorted by offset and
** its chunks span whole rows, so offset 0 of the other dimensions. */
static w_chunk *chunk_at(h5w_obj *d, uint64_t row0) {
  size_t lo = 0, hi = d->nchunks - d->nprov_listed;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (d->chunks[mid].off[0] < row0) lo = mid + 1;
    else hi = mid;
  }
  return lo < d->nchunks - d->nprov_listed && d->chunks[lo].off[0] == row0 ? &d->chunks[lo] : NULL;
}

static int pread_all(h5w *w, void *buf, size_t len, uint64_t at) {
  uint8_t *p = buf;
  while (len) {
    ssize_t n = pread(w->fd, p, len, (off_t)at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      w->failed = 1;
      return werr(w, H5_EIO, "read failed: %s", n == 0 ? "the file ends inside a chunk" : strerror(errno));
    }
    p += n;
    len -= (size_t)n;
    at += (uint64_t)n;
  }
  return H5_OK;
}

int h5w_rewrite_rows(h5w *w, h5w_obj *d, const uint64_t *rows, const void *values, uint64_t n) {
  if (d->is_group || d->dcpl.layout != H5_LAYOUT_CHUNKED || d->rank < 1)
    return werr(w, H5_EINVAL, "'%s': rewriting rows needs a chunked dataset", d->name);
  int rc = may_change(w, d);
  if (rc == H5_OK && d->old && !d->chunks_loaded) rc = h5w_old_prepare_append(w, d);
  if (rc) return rc;
  if (is_filtered(d)) return werr(w, H5_EUNSUPPORTED, "'%s': rewriting rows of a filtered dataset", d->name);
  for (int k = 1; k < d->rank; k++) /* a row of the dataset is then one run of bytes in its chunk */
    if (d->dcpl.chunk[k] < d->dims[k] || (k > 1 && d->dcpl.chunk[k] != d->dims[k]))
      return werr(w, H5_EUNSUPPORTED, "'%s': rewriting rows whose chunks do not hold whole rows",
                  d->name);
  for (uint64_t i = 0; i < n; i++)
    if (rows[i] >= d->dims[0] || (i && rows[i] <= rows[i - 1]))
      return werr(w, H5_EINVAL, "'%s': rows to rewrite must ascend, below %llu", d->name,
                  (unsigned long long)d->dims[0]);
  uint64_t rowbytes = d->type->size; /* a row of the dataset: a row of a chunk too */
  for (int k = 1; k < d->rank; k++) rowbytes *= d->dims[k];
  uint64_t crow = d->type->size; /* a row of a chunk */
  for (int k = 1; k < d->rank; k++) crow *= d->dcpl.chunk[k];
  uint64_t c0 = d->dcpl.chunk[0], csize = c0 * crow, p0 = d->dims[0] - d->npending;
  if (!n) return H5_OK;
  uint8_t *stored = stored_copy(w, d->type, values, n * (rowbytes / d->type->size));
  if (!stored) return H5_ENOMEM;
  uint8_t *buf = NULL;
  for (uint64_t i = 0; rc == H5_OK && i < n;) {
    if (rows[i] >= p0) { /* rows in memory: the provisional slots, which hold the old
                            values of rows a reader of the committed file reads, may
                            no longer be written over (reusable_slot) */
      memcpy(d->pending + (rows[i] - p0) * rowbytes, stored + i * rowbytes, (size_t)rowbytes);
      d->nprov = 0;
      i++;
      continue;
    }
    uint64_t row0 = rows[i] / c0 * c0;
    w_chunk *c = chunk_at(d, row0);
    if (!buf && !(buf = malloc((size_t)csize))) {
      rc = werr(w, H5_ENOMEM, "out of memory");
      break;
    }
    if (c && c->size != csize) {
      rc = werr(w, H5_ECORRUPT, "'%s': the chunk at row %llu has %llu bytes, expected %llu", d->name,
                (unsigned long long)row0, (unsigned long long)c->size, (unsigned long long)csize);
      break;
    }
    if (c) {
      rc = pread_all(w, buf, (size_t)csize, c->addr);
    } else { /* a chunk never written: the fill value */
      if (d->fill)
        for (uint64_t e = 0; e < csize / d->type->size; e++) memcpy(buf + e * d->type->size, d->fill, d->type->size);
      else
        memset(buf, 0, (size_t)csize);
      rc = h5w_chunks_reserve(w, d, 1);
      if (rc == H5_OK) { /* its place in the sorted index */
        size_t at = 0;
        while (at < d->nchunks && d->chunks[at].off[0] < row0) at++;
        memmove(d->chunks + at + 1, d->chunks + at, (d->nchunks - at) * sizeof *d->chunks);
        d->nchunks++;
        c = &d->chunks[at];
        memset(c, 0, sizeof *c);
        c->off[0] = row0;
        c->size = csize;
      }
    }
    for (; rc == H5_OK && i < n && rows[i] < row0 + c0 && rows[i] < p0; i++)
      memcpy(buf + (rows[i] - row0) * crow, stored + i * rowbytes, (size_t)rowbytes);
    if (rc == H5_OK) rc = append(w, buf, (size_t)csize, &c->addr);
  }
  free(buf);
  free(stored);
  if (rc) return rc;
  d->data_changed = 1;
  mark_dirty(d);
  return H5_OK;
}

int h5w_attr_raw(h5w *w, h5w_obj *o, const char *name, const uint8_t *msg, size_t len) {
  if (h5w_names_has(&o->attr_names, name))
    return werr(w, H5_EINVAL, "attribute '%s' exists already", name);
  if (o->nattrs == o->capattrs) {
    size_t ncap = o->capattrs ? 2 * o->capattrs : 8;
    w_attr *na = realloc(o->attrv, ncap * sizeof *na);
    if (!na) return werr(w, H5_ENOMEM, "out of memory");
    o->attrv = na;
    o->capattrs = ncap;
  }
  char *aname = strdup(name);
  size_t off = o->attrs.len;
  strbuf_append(&o->attrs, (const char *)msg, len);
  if (!aname || strbuf_failed(&o->attrs) || h5w_names_add(&o->attr_names, aname)) {
    free(aname);
    if (!strbuf_failed(&o->attrs)) o->attrs.len = off;
    return werr(w, H5_ENOMEM, "out of memory");
  }
  w_attr *a = &o->attrv[o->nattrs++];
  a->name = aname;
  a->off = off;
  a->len = len;
  return H5_OK;
}

int h5w_attr(h5w *w, h5w_obj *o, const char *name, h5_type *type, int rank,
             const uint64_t *dims, const void *data) {
  int rc = H5_OK;
  uint64_t n = 1;
  if (!type) return werr(w, H5_EINVAL, "attribute '%s': no datatype", name ? name : "(null)");
  if (!name || !*name || strlen(name) >= 65535 || rank < 0 || rank > H5_MAX_RANK)
    rc = werr(w, H5_EINVAL, "bad attribute name or rank");
  if (rc == H5_OK) rc = may_change(w, o);
  if (rc == H5_OK && o->old) rc = h5w_old_attrs(w, o);
  if (rc == H5_OK && h5w_names_has(&o->attr_names, name))
    rc = werr(w, H5_EINVAL, "attribute '%s' exists already", name);
  for (int i = 0; rc == H5_OK && i < rank; i++) n *= dims[i];
  uint8_t *stored = rc == H5_OK ? stored_copy(w, type, data, n) : NULL;
  if (rc == H5_OK && !stored) rc = H5_ENOMEM;
  if (rc == H5_OK) {
    strbuf t = {0}, s = {0}, m = {0};
    rc = h5_type_encode(type, &t);
    put_u8(&s, 2);                   /* dataspace version */
    put_u8(&s, (unsigned)rank);
    put_u8(&s, 0);                   /* no max dims */
    put_u8(&s, rank ? 1 : 0);        /* simple / scalar */
    for (int i = 0; i < rank; i++) strbuf_put_le(&s, dims[i], 8);
    size_t nlen = strlen(name) + 1;
    if (rc == H5_OK && t.len > 65535)
      rc = werr(w, H5_EUNSUPPORTED, "attribute '%s': datatype description over 64 KiB", name);
    if (rc == H5_OK) {
      put_u8(&m, 3);                 /* attribute message version */
      put_u8(&m, 0);
      strbuf_put_le(&m, nlen, 2);
      strbuf_put_le(&m, t.len, 2);
      strbuf_put_le(&m, s.len, 2);
      put_u8(&m, 1);                 /* name is UTF-8 */
      strbuf_append(&m, name, nlen);
      strbuf_append(&m, t.buf ? t.buf : "", t.len);
      strbuf_append(&m, s.buf ? s.buf : "", s.len);
      strbuf_append(&m, (const char *)stored, (size_t)(n * type->size));
    }
    if (rc == H5_OK && (strbuf_failed(&m) || strbuf_failed(&t) || strbuf_failed(&s)))
      rc = werr(w, H5_ENOMEM, "out of memory");
    if (rc == H5_OK) rc = h5w_attr_raw(w, o, name, (const uint8_t *)m.buf, m.len);
    if (rc == H5_OK) mark_dirty(o);
    strbuf_free(&t);
    strbuf_free(&s);
    strbuf_free(&m);
  }
  free(stored);
  h5_type_free(type);
  return rc;
}

/* ---- metadata ----------------------------------------------------------- */

/* Append a header message (v2 prefix: type, size, flags). */
static void put_msg(strbuf *o, int type, const strbuf *body, int flags) {
  put_u8(o, (unsigned)type);
  strbuf_put_le(o, body->len, 2);
  put_u8(o, (unsigned)flags);
  strbuf_append(o, body->buf ? body->buf : "", body->len);
}

/* The attribute info message (libhdf5 counts a version 2 header's
** attributes through it) and the attributes: attribute messages in the
** header, or dense storage whose heap and name index the message names. */
static int put_attrs(h5w *w, strbuf *msgs, const h5w_obj *o) {
  if (strbuf_failed(&o->attrs)) return werr(w, H5_ENOMEM, "out of memory");
  int dense = o->nattrs > W_MAX_COMPACT;
  for (size_t i = 0; i < o->nattrs; i++)
    if (o->attrv[i].len > W_MAX_MSG) dense = 1;
  uint64_t heap = H5_UNDEF_ADDR, bt2 = H5_UNDEF_ADDR;
  if (dense) {
    h5w_dense_item *items = malloc(o->nattrs * sizeof *items);
    if (!items) return werr(w, H5_ENOMEM, "out of memory");
    for (size_t i = 0; i < o->nattrs; i++) {
      items[i].name = o->attrv[i].name;
      items[i].msg = (const uint8_t *)o->attrs.buf + o->attrv[i].off;
      items[i].len = o->attrv[i].len;
    }
    int rc = h5w_dense_write(w, H5W_DENSE_ATTRS, items, o->nattrs, &heap, &bt2);
    free(items);
    if (rc) return rc;
  }
  strbuf b = {0};
  put_u8(&b, 0); /* version */
  put_u8(&b, 0); /* no creation order */
  strbuf_put_le(&b, heap, 8);
  strbuf_put_le(&b, bt2, 8);
  put_msg(msgs, H5_MSG_ATTR_INFO, &b, 0);
  strbuf_free(&b);
  for (size_t i = 0; !dense && i < o->nattrs; i++) {
    put_u8(msgs, H5_MSG_ATTRIBUTE);
    strbuf_put_le(msgs, o->attrv[i].len, 2);
    put_u8(msgs, 0);
    strbuf_append(msgs, o->attrs.buf + o->attrv[i].off, o->attrv[i].len);
  }
  return H5_OK;
}

/* Write an object header holding msgs (already v2-prefixed messages). */
static int write_ohdr(h5w *w, const strbuf *msgs, uint64_t *addr) {
  strbuf o = {0};
  int wbits = msgs->len < 256 ? 0 : msgs->len < 65536 ? 1 : msgs->len < (1ull << 32) ? 2 : 3;
  strbuf_append(&o, "OHDR", 4);
  put_u8(&o, 2);
  put_u8(&o, (unsigned)wbits); /* no times, no attribute phase change */
  strbuf_put_le(&o, msgs->len, 1 << wbits);
  strbuf_append(&o, msgs->buf ? msgs->buf : "", msgs->len);
  if (strbuf_failed(&o)) {
    strbuf_free(&o);
    return werr(w, H5_ENOMEM, "out of memory");
  }
  strbuf_put_le(&o, h5_lookup3(o.buf, o.len, 0), 4);
  int rc = strbuf_failed(&o) ? werr(w, H5_ENOMEM, "out of memory")
                             : append(w, o.buf, o.len, addr);
  strbuf_free(&o);
  return rc;
}

/* Write a v1 B-tree over chunks[lo..hi) at the given level; its address
** goes to *addr.  keylen = 8 + 8 * (rank + 1). */
static int write_btree(h5w *w, h5w_obj *d, size_t lo, size_t hi, int level,
                       uint64_t *addr, uint64_t *first_key_off, int depth);

static void put_chunk_key(strbuf *o, const h5w_obj *d, const w_chunk *c,
                          int end) {
  strbuf_put_le(o, end ? 0 : c->size, 4);
  strbuf_put_le(o, end ? 0 : c->mask, 4);
  for (int k = 0; k < d->rank; k++)
    strbuf_put_le(o, c->off[k] + (end && k == 0 ? d->dcpl.chunk[0] : 0), 8);
  strbuf_put_le(o, 0, 8); /* the element-size dimension */
}

static int write_btree(h5w *w, h5w_obj *d, size_t lo, size_t hi, int level,
                       uint64_t *addr, uint64_t *unused, int depth) {
  (void)unused;
  (void)depth;
  size_t keylen = 8 + 8 * ((size_t)d->rank + 1);
  size_t nodesize = 24 + W_TWO_K * 8 + (W_TWO_K + 1) * keylen;
  /* how many chunks one child of this node covers */
  size_t span = 1;
  for (int l = 0; l < level; l++) span *= W_TWO_K;
  size_t nchild = (hi - lo + span - 1) / span;
  uint64_t child_addr[W_TWO_K];
  for (size_t i = 0; i < nchild; i++) {
    size_t a = lo + i * span, b = a + span < hi ? a + span : hi;
    if (level > 0) {
      int rc = write_btree(w, d, a, b, level - 1, &child_addr[i], NULL, depth + 1);
      if (rc) return rc;
    } else {
      child_addr[i] = d->chunks[a].addr;
    }
  }
  strbuf o = {0};
  strbuf_append(&o, "TREE", 4);
  put_u8(&o, 1);                 /* chunk node */
  put_u8(&o, (unsigned)level);
  strbuf_put_le(&o, nchild, 2);
  strbuf_put_le(&o, H5_UNDEF_ADDR, 8);  /* siblings: not needed to read */
  strbuf_put_le(&o, H5_UNDEF_ADDR, 8);
  for (size_t i = 0; i < nchild; i++) {
    put_chunk_key(&o, d, &d->chunks[lo + i * span], 0);
    strbuf_put_le(&o, child_addr[i], 8);
  }
  put_chunk_key(&o, d, &d->chunks[hi - 1], 1);
  while (o.len < nodesize) put_u8(&o, 0); /* readers read the full node */
  int rc = strbuf_failed(&o) ? werr(w, H5_ENOMEM, "out of memory")
                             : append(w, o.buf, o.len, addr);
  strbuf_free(&o);
  return rc;
}

/* Copy o's old header messages (v2 prefix, flags kept) except those a new
** header writes afresh: nil, continuation and modification time messages
** never; the attribute info and attributes when o's attributes are all
** written again (attrs_loaded); and the types in skip[0..nskip). */
static void carry_msgs(strbuf *msgs, const h5w_obj *o, const int *skip, int nskip) {
  const h5_ohdr *h = &o->old->hdr;
  for (uint32_t i = 0; i < h->nmsg; i++) {
    const h5_msg *m = &h->msgs[i];
    int drop = m->type == H5_MSG_NIL || m->type == H5_MSG_CONTINUATION ||
               m->type == H5_MSG_MTIME || m->type == H5_MSG_MTIME_OLD ||
               (o->attrs_loaded && (m->type == H5_MSG_ATTR_INFO || m->type == H5_MSG_ATTRIBUTE));
    for (int k = 0; k < nskip; k++) drop |= m->type == skip[k];
    if (drop) continue;
    put_u8(msgs, m->type);
    strbuf_put_le(msgs, m->size, 2);
    put_u8(msgs, m->flags);
    strbuf_append(msgs, (const char *)m->data, m->size);
  }
}

static void put_dataspace(strbuf *b, const h5w_obj *d) {
  put_u8(b, 2);
  put_u8(b, (unsigned)d->rank);
  int hasmax = 0;
  for (int i = 0; i < d->rank; i++) hasmax |= d->maxdims[i] != d->dims[i];
  put_u8(b, hasmax ? 1 : 0);
  put_u8(b, d->rank ? 1 : 0);
  for (int i = 0; i < d->rank; i++) strbuf_put_le(b, d->dims[i], 8);
  for (int i = 0; hasmax && i < d->rank; i++) strbuf_put_le(b, d->maxdims[i], 8);
}

/* The layout message (version 3) of d; a chunked one after writing the
** chunk index. */
static int put_layout(h5w *w, strbuf *b, h5w_obj *d) {
  int rc = H5_OK;
  put_u8(b, 3);
  if (d->dcpl.layout == H5_LAYOUT_COMPACT) {
    put_u8(b, 0);
    strbuf_put_le(b, d->compact_len, 2);
    strbuf_append(b, (const char *)(d->compact ? d->compact : (uint8_t *)""), d->compact_len);
  } else if (d->dcpl.layout == H5_LAYOUT_CONTIGUOUS) {
    put_u8(b, 1);
    strbuf_put_le(b, d->data_addr, 8);
    strbuf_put_le(b, d->data_addr == H5_UNDEF_ADDR ? 0 : d->data_size, 8);
  } else {
    uint64_t root = H5_UNDEF_ADDR;
    if (d->nchunks) {
      int level = 0;
      size_t cap = W_TWO_K;
      while (cap < d->nchunks) {
        cap *= W_TWO_K;
        level++;
      }
      rc = write_btree(w, d, 0, d->nchunks, level, &root, NULL, 0);
    }
    put_u8(b, 2);
    put_u8(b, (unsigned)d->rank + 1);
    strbuf_put_le(b, root, 8);
    for (int i = 0; i < d->rank; i++) strbuf_put_le(b, d->dcpl.chunk[i], 4);
    strbuf_put_le(b, d->type->size, 4); /* the element size, last */
  }
  return rc;
}

/* The messages of a dataset of the opened file: the old ones, with a new
** dataspace and layout when rows were appended. */
static int old_dataset_msgs(h5w *w, h5w_obj *d, strbuf *msgs) {
  static const int skip[] = {H5_MSG_DATASPACE, H5_MSG_LAYOUT};
  int rc = H5_OK;
  if (d->data_changed) {
    strbuf b = {0};
    put_dataspace(&b, d);
    put_msg(msgs, H5_MSG_DATASPACE, &b, 0);
    b.len = 0;
    rc = put_layout(w, &b, d);
    put_msg(msgs, H5_MSG_LAYOUT, &b, 0);
    strbuf_free(&b);
  }
  carry_msgs(msgs, d, skip, d->data_changed ? 2 : 0);
  return rc;
}

static int write_dataset(h5w *w, h5w_obj *d) {
  strbuf msgs = {0}, b = {0};
  int rc = H5_OK;
  if (d->old) {
    rc = old_dataset_msgs(w, d, &msgs);
    if (rc == H5_OK && d->attrs_loaded) rc = put_attrs(w, &msgs, d);
    if (rc == H5_OK && strbuf_failed(&msgs)) rc = werr(w, H5_ENOMEM, "out of memory");
    if (rc == H5_OK) rc = write_ohdr(w, &msgs, &d->addr);
    strbuf_free(&msgs);
    return rc;
  }
  put_dataspace(&b, d);
  put_msg(&msgs, H5_MSG_DATASPACE, &b, 0);
  b.len = 0;
  /* datatype */
  rc = h5_type_encode(d->type, &b);
  put_msg(&msgs, H5_MSG_DATATYPE, &b, 1 /* constant */);
  b.len = 0;
  /* fill value: allocated early (contiguous) or incrementally (chunked) */
  put_u8(&b, 3);
  unsigned alloc = d->dcpl.layout == H5_LAYOUT_CHUNKED ? 3 : d->dcpl.layout == H5_LAYOUT_COMPACT ? 1 : 2;
  put_u8(&b, alloc | (2u << 2) | (d->fill ? 0x20u : 0u));
  if (d->fill) {
    strbuf_put_le(&b, d->type->size, 4);
    strbuf_append(&b, (const char *)d->fill, d->type->size);
  }
  put_msg(&msgs, H5_MSG_FILL, &b, 1);
  b.len = 0;
  /* filters */
  if (d->dcpl.layout == H5_LAYOUT_CHUNKED && is_filtered(d)) {
    int n = (d->dcpl.shuffle != 0) + (d->dcpl.deflate >= 0) + (d->dcpl.fletcher32 != 0) +
            (d->dcpl.codec != 0);
    put_u8(&b, 2);
    put_u8(&b, (unsigned)n);
    if (d->dcpl.shuffle) { /* id, flags (optional), 1 value: element size */
      strbuf_put_le(&b, 2, 2), strbuf_put_le(&b, 1, 2), strbuf_put_le(&b, 1, 2), strbuf_put_le(&b, d->type->size, 4);
    }
    if (d->dcpl.deflate >= 0) {
      strbuf_put_le(&b, 1, 2), strbuf_put_le(&b, 1, 2), strbuf_put_le(&b, 1, 2);
      strbuf_put_le(&b, (uint64_t)d->dcpl.deflate, 4);
    }
    if (d->dcpl.codec) { /* id, its name's length and name, optional, client values */
      uint32_t cd[8];
      uint64_t cbytes = d->type->size;
      for (int i = 0; i < d->rank; i++) cbytes *= d->dcpl.chunk[i];
      int ncd = h5_codec_cd(&d->dcpl, d->type->size, cbytes, cd);
      const char *nm = d->dcpl.codec == H5W_CODEC_ZSTD ? "zstd" : "blosc";
      strbuf_put_le(&b, d->dcpl.codec == H5W_CODEC_ZSTD ? 32015 : 32001, 2);
      strbuf_put_le(&b, strlen(nm) + 1, 2), strbuf_put_le(&b, 1, 2), strbuf_put_le(&b, (uint64_t)ncd, 2);
      strbuf_append(&b, nm, strlen(nm) + 1);
      for (int i = 0; i < ncd; i++) strbuf_put_le(&b, cd[i], 4);
    }
    if (d->dcpl.fletcher32) {
      strbuf_put_le(&b, 3, 2), strbuf_put_le(&b, 0, 2), strbuf_put_le(&b, 0, 2);
    }
    put_msg(&msgs, H5_MSG_FILTERS, &b, 1);
    b.len = 0;
  }
  if (rc == H5_OK) rc = put_layout(w, &b, d);
  put_msg(&msgs, H5_MSG_LAYOUT, &b, 0);
  strbuf_free(&b);
  if (rc == H5_OK) rc = put_attrs(w, &msgs, d);
  if (rc == H5_OK && strbuf_failed(&msgs)) rc = werr(w, H5_ENOMEM, "out of memory");
  if (rc == H5_OK) rc = write_ohdr(w, &msgs, &d->addr);
  strbuf_free(&msgs);
  return rc;
}

/* Append a link message (version 1) for a hard, soft or external link. */
static void put_link(strbuf *o, const char *name, int type, uint64_t addr,
                     const char *target, const char *filename) {
  size_t nlen = strlen(name);
  int wbits = nlen < 256 ? 0 : 1;
  put_u8(o, 1);                                   /* version */
  put_u8(o, (unsigned)wbits | 0x10 | (type != H5_LINK_HARD ? 0x08 : 0));
  if (type != H5_LINK_HARD) put_u8(o, (unsigned)type);
  put_u8(o, 1);                                   /* UTF-8 */
  strbuf_put_le(o, nlen, 1 << wbits);
  strbuf_append(o, name, nlen);
  if (type == H5_LINK_HARD) {
    strbuf_put_le(o, addr, 8);
  } else if (type == H5_LINK_SOFT) {
    strbuf_put_le(o, strlen(target), 2);
    strbuf_append(o, target, strlen(target));
  } else { /* external: flags, file name, object path, both NUL-ended */
    strbuf_put_le(o, 1 + strlen(filename) + 1 + strlen(target) + 1, 2);
    put_u8(o, 0);
    strbuf_append(o, filename, strlen(filename) + 1);
    strbuf_append(o, target, strlen(target) + 1);
  }
}

/* A group's links being encoded: messages one after the other in buf,
** message i ending at end[i]. */
typedef struct w_links {
  h5w *w;
  const h5w_obj *g;
  h5w_obj **olds; /* kids that come from the opened file, by name */
  size_t nolds;
  strbuf buf;
  size_t *end;
  const char **names;
  size_t n, cap;
  int rc;
} w_links;

static void links_add(w_links *l, const char *name, int type, uint64_t addr,
                      const char *target, const char *filename) {
  if (l->rc) return;
  if (l->n == l->cap) {
    size_t ncap = l->cap ? 2 * l->cap : 16;
    size_t *ne = realloc(l->end, ncap * sizeof *ne);
    if (ne) l->end = ne;
    const char **nn = ne ? realloc(l->names, ncap * sizeof *nn) : NULL;
    if (nn) l->names = nn;
    if (!ne || !nn) {
      l->rc = werr(l->w, H5_ENOMEM, "out of memory");
      return;
    }
    l->cap = ncap;
  }
  put_link(&l->buf, name, type, addr, target, filename);
  l->names[l->n] = name;
  l->end[l->n++] = l->buf.len;
}

static int by_kid_name(const void *a, const void *b) {
  return strcmp((*(h5w_obj *const *)a)->name, (*(h5w_obj *const *)b)->name);
}

static const char *old_name_at(const void *ctx, size_t i) {
  return ((const w_links *)ctx)->olds[i]->name;
}

/* An old link, again; to a kid we opened, at the kid's address now. */
static int old_link(void *ctx, const h5_link *ln) {
  w_links *l = ctx;
  size_t i = h5_bsearch_name(l->nolds, old_name_at, l, ln->name);
  if (i < l->nolds) {
    links_add(l, ln->name, H5_LINK_HARD, l->olds[i]->addr, NULL, NULL);
    return l->rc;
  }
  if (ln->type != H5_LINK_HARD && ln->type != H5_LINK_SOFT && ln->type != H5_LINK_EXTERNAL) {
    l->rc = werr(l->w, H5_EUNSUPPORTED, "link '%s': user-defined links cannot be kept", ln->name);
    return l->rc;
  }
  links_add(l, ln->name, ln->type, ln->addr, ln->target, ln->filename);
  return l->rc;
}

/* Encode g's links: for a group of the opened file its old ones (those to
** kids opened at their addresses now), then the new ones. */
static int collect_links(h5w *w, h5w_obj *g, w_links *l) {
  memset(l, 0, sizeof *l);
  l->w = w;
  l->g = g;
  if (g->old) {
    l->olds = malloc((g->nkids ? g->nkids : 1) * sizeof *l->olds);
    if (!l->olds) return werr(w, H5_ENOMEM, "out of memory");
    for (size_t i = 0; i < g->nkids; i++)
      if (g->kids[i]->old) l->olds[l->nolds++] = g->kids[i];
    if (l->nolds) qsort(l->olds, l->nolds, sizeof *l->olds, by_kid_name);
    int rc = h5_group_iter(g->old, old_link, l);
    if (rc && !l->rc) l->rc = werr(w, rc, "group '%s': %s", g->name ? g->name : "/",
                                   h5_errmsg(w->rf));
  }
  for (size_t i = 0; !l->rc && i < g->nkids; i++)
    if (!g->kids[i]->old)
      links_add(l, g->kids[i]->name, H5_LINK_HARD, g->kids[i]->addr, NULL, NULL);
  if (!l->rc && strbuf_failed(&l->buf)) l->rc = werr(w, H5_ENOMEM, "out of memory");
  return l->rc;
}

static void links_free(w_links *l) {
  free(l->olds);
  free(l->end);
  free(l->names);
  strbuf_free(&l->buf);
}

static int write_group(h5w *w, h5w_obj *g) {
  w_links l;
  int rc = collect_links(w, g, &l);
  int dense = l.n > W_MAX_COMPACT;
  for (size_t i = 0; i < l.n; i++)
    if (l.end[i] - (i ? l.end[i - 1] : 0) > W_MAX_MSG) dense = 1;
  uint64_t heap = H5_UNDEF_ADDR, bt2 = H5_UNDEF_ADDR;
  if (rc == H5_OK && dense) {
    h5w_dense_item *items = malloc(l.n * sizeof *items);
    if (!items) rc = werr(w, H5_ENOMEM, "out of memory");
    for (size_t i = 0; items && i < l.n; i++) {
      size_t start = i ? l.end[i - 1] : 0;
      items[i].name = l.names[i];
      items[i].msg = (const uint8_t *)l.buf.buf + start;
      items[i].len = l.end[i] - start;
    }
    if (rc == H5_OK) rc = h5w_dense_write(w, H5W_DENSE_LINKS, items, l.n, &heap, &bt2);
    free(items);
  }
  strbuf msgs = {0}, b = {0};
  /* link info: no creation order; the dense storage, if any */
  put_u8(&b, 0);
  put_u8(&b, 0);
  strbuf_put_le(&b, heap, 8);
  strbuf_put_le(&b, bt2, 8);
  put_msg(&msgs, H5_MSG_LINK_INFO, &b, 0);
  b.len = 0;
  if (g->old) {
    static const int skip[] = {H5_MSG_LINK_INFO, H5_MSG_LINK};
    carry_msgs(&msgs, g, skip, 2);
  }
  if (!g->old || !h5_ohdr_find(&g->old->hdr, H5_MSG_GROUP_INFO)) {
    put_u8(&b, 0); /* group info: version 0, no flags (libhdf5's defaults) */
    put_u8(&b, 0);
    put_msg(&msgs, H5_MSG_GROUP_INFO, &b, 0);
  }
  strbuf_free(&b);
  for (size_t i = 0; rc == H5_OK && !dense && i < l.n; i++) {
    size_t start = i ? l.end[i - 1] : 0;
    put_u8(&msgs, H5_MSG_LINK);
    strbuf_put_le(&msgs, l.end[i] - start, 2);
    put_u8(&msgs, 0);
    strbuf_append(&msgs, l.buf.buf + start, l.end[i] - start);
  }
  links_free(&l);
  if (rc == H5_OK && (!g->old || g->attrs_loaded)) rc = put_attrs(w, &msgs, g);
  if (rc == H5_OK)
    rc = strbuf_failed(&msgs) ? werr(w, H5_ENOMEM, "out of memory")
                              : write_ohdr(w, &msgs, &g->addr);
  strbuf_free(&msgs);
  return rc;
}

/* ---- flushing ------------------------------------------------------------ */

/* Raw data of the changed datasets under o: the rows that do not fill a
** row of chunks yet go to the file as provisional chunks (fill value past
** the rows) and into the index; d->pending keeps them for the next flush,
** which writes them again (reusing the slots when it may, reusable_slot). */
static int flush_raw(h5w *w, h5w_obj *o, int depth) {
  if (!o->dirty) return H5_OK;
  if (depth > 1000) return werr(w, H5_EINVAL, "groups nested too deeply");
  for (size_t i = 0; i < o->nkids; i++) {
    int rc = flush_raw(w, o->kids[i], depth + 1);
    if (rc) return rc;
  }
  if (o->is_group || !o->npending) return H5_OK;
  unlist_prov(o);
  size_t first = o->nchunks;
  int rc = write_chunks(w, o, o->pending, o->dims[0] - o->npending, o->npending);
  if (rc) return rc;
  size_t n = o->nchunks - first;
  w_chunk *p = realloc(o->prov, (n ? n : 1) * sizeof *p);
  if (!p) {
    o->nchunks = first;
    return werr(w, H5_ENOMEM, "out of memory");
  }
  memcpy(p, o->chunks + first, n * sizeof *p);
  o->prov = p;
  o->nprov = n;
  o->nprov_listed = n;
  return H5_OK;
}

/* New headers for the changed objects under o, children before parents. */
static int flush_meta(h5w *w, h5w_obj *o, int depth) {
  if (!o->dirty) return H5_OK;
  if (depth > 1000) return werr(w, H5_EINVAL, "groups nested too deeply");
  for (size_t i = 0; i < o->nkids; i++) {
    int rc = flush_meta(w, o->kids[i], depth + 1);
    if (rc) return rc;
  }
  int rc = o->is_group ? write_group(w, o) : write_dataset(w, o);
  if (rc == H5_OK) o->dirty = 0;
  return rc;
}

/* The superblock (version 2, or the opened file's 3), 48 bytes at 0. */
static int write_superblock(h5w *w) {
  uint8_t s[48];
  static const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  memcpy(s, sig, 8);
  s[8] = (uint8_t)w->sb_version;
  s[9] = W_SO;
  s[10] = W_SO;
  s[11] = 0;                         /* file consistency flags: closed */
  util_put_le(s + 12, 0, 8);           /* base address */
  util_put_le(s + 20, w->ext_addr, 8); /* superblock extension */
  util_put_le(s + 28, w->eoa, 8);      /* end of file */
  util_put_le(s + 36, w->root->addr, 8);
  util_put_le(s + 44, h5_lookup3(s, 44, 0), 4);
  return pwrite_all(w, s, sizeof s, 0);
}

int h5w_flush(h5w *w, int sync) {
  if (w->fd < 0) return werr(w, H5_EINVAL, "the file is closed");
  if (w->failed) return werr(w, H5_EIO, "an earlier write failed: %s", w->err);
  int rc = flush_raw(w, w->root, 0);
  if (rc == H5_OK) rc = gcol_flush(w);
  if (rc == H5_OK) rc = flush_meta(w, w->root, 0);
  if (rc == H5_OK && sync && fsync(w->fd) != 0) rc = h5w_errno(w, "fsync failed");
  if (rc != H5_OK) return rc;
  /* the commit point: until here the file on disk is the last flushed one */
  if (w->on_commit && w->on_commit(w->commit_ctx, 1) != 0)
    return werr(w, H5_EIO, "%s", w->commit_msg ? w->commit_msg : "the commit was refused");
  w->sb_started = 1;
  rc = write_superblock(w);
  if (rc == H5_OK && sync && fsync(w->fd) != 0) rc = h5w_errno(w, "fsync failed");
  if (rc == H5_OK) {
    w->sb_started = 0;
    w->committed_eoa = w->eoa;
  }
  if (w->on_commit) w->on_commit(w->commit_ctx, 0);
  return rc;
}

void h5w_on_commit(h5w *w, int (*fn)(void *ctx, int before), void *ctx, const char *msg) {
  w->on_commit = fn;
  w->commit_ctx = ctx;
  w->commit_msg = msg;
}

int h5w_discard(h5w *w) {
  if (!w || w->fd < 0 || w->sb_started || !w->committed_eoa) return H5_OK;
  struct stat st;
  if (fstat(w->fd, &st) != 0 || (uint64_t)st.st_size <= w->committed_eoa) return H5_OK;
  if (ftruncate(w->fd, (off_t)w->committed_eoa) != 0)
    return werr(w, H5_EIO, "cannot cut the failed write's tail: %s", strerror(errno));
  return H5_OK;
}

int h5w_close(h5w *w, int sync) {
  if (!w) return H5_OK;
  int rc = h5w_flush(w, sync);
  if (w->fd >= 0 && close(w->fd) != 0 && rc == H5_OK)
    rc = h5w_errno(w, "close failed");
  w->fd = -1;
  return rc;
}

void h5w_free(h5w *w) {
  if (!w) return;
  if (w->fd >= 0) close(w->fd);
  free(w->gcol);
  h5w_obj_free(w->root);
  h5_close(w->rf);
  free(w);
}
