/*
** lib/h5/h5_dset.c - datasets: the layout, filter pipeline, fill value and
** external storage messages, and reading a whole dataset.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "h5_int.h"

void h5_dset_free(struct h5_dset *d) {
  if (!d) return;
  h5_type_free(d->type);
  if (d->filter_names)
    for (int i = 0; i < d->info.nfilters; i++) free(d->filter_names[i]);
  free(d->filter_names);
  free(d->filters);
  free(d->cd);
  free(d->fill);
  h5_vds_free(d->vds);
  free(d);
}

static int layout_decode(h5_file *f, struct h5_dset *d, const h5_msg *m) {
  h5_cur c = h5c_make(m->data, m->size);
  int version = h5c_u8(&c);
  d->layout_version = version;
  d->addr = H5_UNDEF_ADDR;
  int cls, ndims = 0;
  uint64_t dims[H5_MAX_RANK + 1];
  if (version == 1 || version == 2) {
    ndims = h5c_u8(&c);
    cls = h5c_u8(&c);
    h5c_skip(&c, 5);
    if (ndims < 1 || ndims > H5_MAX_RANK + 1)
      return h5_err(f, H5_ECORRUPT, "layout message: dimensionality %d", ndims);
    if (cls > 2) return h5_err(f, H5_ECORRUPT, "layout message: class %d", cls);
    if (cls != 0) d->addr = h5c_addr(&c, f);
    /* for chunked storage the last dimension is the element size */
    for (int i = 0; i < ndims; i++) dims[i] = h5c_u32(&c);
    if (cls == 0) {
      uint32_t n = h5c_u32(&c);
      d->compact = h5c_bytes(&c, n);
      d->compact_len = n;
    }
    if (cls == 1) /* contiguous: the whole dataset (these dims may be truncated) */
      d->size = d->space.nelems * d->type->size;
  } else if (version >= 3 && version <= 5) {
    /* (version 5, libhdf5 2.0: version 4's bytes; its chunk indexes give
    ** filtered chunk sizes a field as wide as a length, which the index
    ** structures state and we read from them either way) */
    cls = h5c_u8(&c);
    if (cls == 0) {
      uint16_t n = h5c_u16(&c);
      d->compact = h5c_bytes(&c, n);
      d->compact_len = n;
    } else if (cls == 1) {
      d->addr = h5c_addr(&c, f);
      d->size = h5c_len(&c, f);
    } else if (cls == 2 && version == 3) {
      ndims = h5c_u8(&c);
      if (ndims < 1 || ndims > H5_MAX_RANK + 1)
        return h5_err(f, H5_ECORRUPT, "layout message: dimensionality %d", ndims);
      d->addr = h5c_addr(&c, f);
      for (int i = 0; i < ndims; i++) dims[i] = h5c_u32(&c);
      d->cidx = H5_CIDX_BTREE1;
    } else if (cls == 2) {
      d->chunk_flags = h5c_u8(&c);
      ndims = h5c_u8(&c);
      int w = h5c_u8(&c);
      if (ndims < 1 || ndims > H5_MAX_RANK + 1 || w < 1 || w > 8)
        return h5_err(f, H5_ECORRUPT, "layout message: dimensionality %d width %d",
                      ndims, w);
      for (int i = 0; i < ndims; i++) dims[i] = h5c_uint(&c, w);
      d->cidx = h5c_u8(&c);
      size_t np = d->cidx == H5_CIDX_FARRAY ? 1
                  : d->cidx == H5_CIDX_EARRAY ? 5
                  : d->cidx == H5_CIDX_BTREE2 ? 6 : 0;
      const uint8_t *params = h5c_bytes(&c, np);
      if (params) memcpy(d->idx_params, params, np);
      if (d->cidx == H5_CIDX_SINGLE && (d->chunk_flags & 2)) {
        d->single_size = h5c_len(&c, f);
        d->single_mask = h5c_u32(&c);
      }
      if (d->cidx < H5_CIDX_SINGLE || d->cidx > H5_CIDX_BTREE2)
        return h5_err(f, H5_ECORRUPT, "layout message: chunk index type %d", d->cidx);
      d->addr = h5c_addr(&c, f);
    } else if (cls == 3 && version >= 4) {
      d->addr = h5c_addr(&c, f); /* the mappings: a global heap object */
      d->vds_index = h5c_u32(&c);
    } else {
      return h5_err(f, H5_ECORRUPT, "layout message: class %d", cls);
    }
  } else {
    return h5_err(f, H5_EUNSUPPORTED, "layout message version %d", version);
  }
  if (c.bad) return h5_err(f, H5_ECORRUPT, "layout message truncated");
  d->info.layout = (h5_layout)cls;
  if (cls == 2) {
    /* the last dimension is the element size, not a data dimension */
    d->info.chunk_rank = ndims - 1;
    /* a chunk element size other than the datatype's makes the chunks
       unreadable, but the dataset's shape and layout are still reported */
    d->chunk_esize = dims[ndims - 1];
    d->chunk_bytes = d->type->size;
    for (int i = 0; i < ndims - 1; i++) {
      d->info.chunk[i] = dims[i];
      if (dims[i] == 0 || d->chunk_bytes > UINT64_MAX / dims[i] ||
          d->chunk_bytes * dims[i] > ((uint64_t)1 << 32))
        return h5_err(f, H5_ECORRUPT, "layout message: bad chunk dimensions");
      d->chunk_bytes *= dims[i];
    }
    if (d->space.rank >= 0 && d->info.chunk_rank != d->space.rank)
      return h5_err(f, H5_ECORRUPT, "layout message: chunks of rank %d for rank %d",
                    d->info.chunk_rank, d->space.rank);
  }
  return H5_OK;
}

/* A cursor over message m's body (a shared message's, from where it is
** kept). */
static int msg_cursor(h5_file *f, const h5_msg *m, h5_cur *c) {
  const uint8_t *body;
  size_t size;
  int rc = h5_msg_body(f, m, &body, &size);
  if (rc == H5_OK) *c = h5c_make(body, size);
  return rc;
}

static int filters_decode(h5_file *f, struct h5_dset *d, const h5_msg *m) {
  h5_cur c;
  int rc = msg_cursor(f, m, &c);
  if (rc) return rc;
  int version = h5c_u8(&c);
  int n = h5c_u8(&c);
  if (version == 1) h5c_skip(&c, 6);
  if (c.bad || (version != 1 && version != 2) || n > 32)
    return h5_err(f, H5_ECORRUPT, "filter pipeline message malformed");
  d->filters = calloc((size_t)n + 1, sizeof *d->filters);
  d->filter_names = calloc((size_t)n + 1, sizeof *d->filter_names);
  if (!d->filters || !d->filter_names) return h5_err(f, H5_ENOMEM, "out of memory");
  /* client data: first pass counts, second fills */
  h5_cur save = c;
  size_t total = 0;
  for (int pass = 0; pass < 2; pass++) {
    c = save;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
      h5_filter *flt = &d->filters[i];
      uint16_t id = h5c_u16(&c);
      uint16_t nlen = (version == 1 || id >= 256) ? h5c_u16(&c) : 0;
      uint16_t flags = h5c_u16(&c);
      uint16_t ncd = h5c_u16(&c);
      size_t field = version == 1 ? ((size_t)nlen + 7) & ~(size_t)7 : nlen;
      const uint8_t *name = h5c_bytes(&c, field);
      if (c.bad) return h5_err(f, H5_ECORRUPT, "filter pipeline message truncated");
      for (uint16_t k = 0; k < ncd; k++) {
        uint32_t v = h5c_u32(&c);
        if (pass == 1) d->cd[at + k] = v;
      }
      if (version == 1 && (ncd & 1)) h5c_skip(&c, 4);
      if (c.bad) return h5_err(f, H5_ECORRUPT, "filter pipeline message truncated");
      if (pass == 1) {
        flt->id = id;
        flt->flags = flags;
        flt->ncd = ncd;
        flt->cd = d->cd + at;
        if (nlen) {
          size_t len = strnlen((const char *)name, nlen);
          d->filter_names[i] = malloc(len + 1);
          if (!d->filter_names[i]) return h5_err(f, H5_ENOMEM, "out of memory");
          memcpy(d->filter_names[i], name, len);
          d->filter_names[i][len] = '\0';
          flt->name = d->filter_names[i];
        }
      }
      at += ncd;
    }
    if (pass == 0) {
      total = at;
      d->cd = calloc(total + 1, sizeof *d->cd);
      if (!d->cd) return h5_err(f, H5_ENOMEM, "out of memory");
    }
  }
  d->info.nfilters = n;
  d->info.filters = d->filters;
  return H5_OK;
}

/* The fill value, when one is stored with the datatype's size. */
static int fill_from(h5_file *f, struct h5_dset *d, const h5_ohdr *h) {
  const uint8_t *val = NULL;
  uint32_t len = 0;
  const h5_msg *m = h5_ohdr_find(h, H5_MSG_FILL);
  if (m) {
    h5_cur c;
    int rc = msg_cursor(f, m, &c);
    if (rc) return rc;
    int version = h5c_u8(&c);
    if (version == 1 || version == 2) {
      h5c_skip(&c, 2); /* allocation and fill write times */
      int defined = h5c_u8(&c);
      /* the size and value only when defined, as libhdf5 reads them (a
      ** version 1 message may still hold a size field: PyTables writes
      ** 0xFFFFFFFF, "undefined", with defined 0); the size is signed,
      ** and one of 0 or below holds no value */
      if (defined) {
        len = h5c_u32(&c);
        if (len == 0 || len > INT32_MAX) len = 0;
        else val = h5c_bytes(&c, len);
      }
    } else if (version == 3) {
      uint8_t flags = h5c_u8(&c);
      if (flags & 0x20) {
        len = h5c_u32(&c);
        val = h5c_bytes(&c, len);
      }
    } else {
      return h5_err(f, H5_ECORRUPT, "fill value message version %d", version);
    }
    if (c.bad) return h5_err(f, H5_ECORRUPT, "fill value message truncated");
  } else if ((m = h5_ohdr_find(h, H5_MSG_FILL_OLD))) {
    h5_cur c = h5c_make(m->data, m->size);
    len = h5c_u32(&c);
    val = h5c_bytes(&c, len);
    if (c.bad) return h5_err(f, H5_ECORRUPT, "fill value message truncated");
  }
  if (val && len == d->type->size && len > 0) {
    d->fill = malloc(len);
    if (!d->fill) return h5_err(f, H5_ENOMEM, "out of memory");
    memcpy(d->fill, val, len);
    d->info.fill = d->fill;
  }
  return H5_OK;
}

int h5_dset_get(h5_obj *o, struct h5_dset **out) {
  h5_file *f = o->f;
  *out = NULL;
  if (o->dset) {
    *out = o->dset;
    return H5_OK;
  }
  if (o->kind != H5_KIND_DATASET)
    return h5_err(f, H5_EINVAL, "object at %llu is not a dataset",
                  (unsigned long long)o->addr);
  struct h5_dset *d = calloc(1, sizeof *d);
  if (!d) return h5_err(f, H5_ENOMEM, "out of memory");
  const h5_msg *tm = h5_ohdr_find(&o->hdr, H5_MSG_DATATYPE);
  const h5_msg *sm = h5_ohdr_find(&o->hdr, H5_MSG_DATASPACE);
  const h5_msg *lm = h5_ohdr_find(&o->hdr, H5_MSG_LAYOUT);
  const h5_msg *pm = h5_ohdr_find(&o->hdr, H5_MSG_FILTERS);
  int rc = H5_OK;
  const uint8_t *body;
  size_t size;
  if (!tm || !sm) {
    rc = h5_err(f, H5_ECORRUPT, "dataset at %llu lacks a %s message",
                (unsigned long long)o->addr, tm ? "dataspace" : "datatype");
  }
  if (rc == H5_OK) rc = h5_msg_body(f, tm, &body, &size);
  if (rc == H5_OK) rc = h5_type_decode(f, body, size, &d->type);
  if (rc == H5_OK) rc = h5_msg_body(f, sm, &body, &size);
  if (rc == H5_OK) rc = h5_space_decode(f, body, size, &d->space);
  if (rc == H5_OK) rc = layout_decode(f, d, lm);
  if (rc == H5_OK && pm) rc = filters_decode(f, d, pm);
  if (rc == H5_OK) rc = fill_from(f, d, &o->hdr);
  if (rc == H5_OK && d->info.layout == H5_LAYOUT_VIRTUAL) {
    /* the extent of a virtual dataset is what its sources reach */
    if (o->loading) {
      rc = h5_err(f, H5_EUNSUPPORTED, "virtual dataset at %llu is its own source",
                  (unsigned long long)o->addr);
    } else if (f->vds_depth >= H5_VDS_MAX_DEPTH) {
      rc = h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset: sources nested more than %d deep (a cycle?)",
                  H5_VDS_MAX_DEPTH);
    } else {
      o->loading = 1;
      f->vds_depth++;
      rc = h5_vds_load(f, d);
      f->vds_depth--;
      o->loading = 0;
    }
  }
  if (rc != H5_OK) {
    h5_dset_free(d);
    return rc;
  }
  d->efl = h5_ohdr_find(&o->hdr, H5_MSG_EXTERNAL);
  d->info.type = d->type;
  d->info.rank = d->space.rank;
  memcpy(d->info.dims, d->space.dims, sizeof d->info.dims);
  memcpy(d->info.maxdims, d->space.maxdims, sizeof d->info.maxdims);
  d->info.nelems = d->space.rank < 0 ? 0 : d->space.nelems;
  d->info.external = d->efl != NULL;
  o->dset = d;
  *out = d;
  return H5_OK;
}

/* What the dataspace claims must fit what the storage can hold, be a
** number of elements SQLite can count (below 2^63) and of bytes that fits
** 64 bits: a damaged dataspace is then an error before any read, never a
** read past the data, a scan of 2^64 rows or a count of -1.  (More than
** 2^63 bytes is fine: tlayouto.h5 of the corpus has 2^63 + 2^35 bytes of
** contiguous storage never allocated, which reads as the fill value.)
** Only the layout message is consulted (no chunk index is read): compact
** data must hold every element, allocated contiguous storage too; chunked
** data is bounded by the limits; external data is checked segment by
** segment as it is read. */
static int dset_sound(h5_file *f, const struct h5_dset *d) {
  uint64_t n = d->info.nelems, esz = d->type->size;
  if (n > (uint64_t)INT64_MAX)
    return h5_err(f, H5_ECORRUPT, "the dataspace claims %llu elements: more than 2^63 - 1",
                  (unsigned long long)n);
  if (esz && n > UINT64_MAX / esz)
    return h5_err(f, H5_ECORRUPT,
                  "the dataspace claims %llu elements of %llu bytes: 2^64 bytes or more",
                  (unsigned long long)n, (unsigned long long)esz);
  uint64_t bytes = n * esz;
  if (d->efl) return H5_OK;
  if (d->info.layout == H5_LAYOUT_COMPACT && d->compact_len < bytes)
    return h5_err(f, H5_ECORRUPT,
                  "compact storage of %zu bytes cannot hold the %llu elements of %llu "
                  "bytes (%llu bytes) its dataspace claims",
                  d->compact_len, (unsigned long long)n, (unsigned long long)esz,
                  (unsigned long long)bytes);
  if (d->info.layout == H5_LAYOUT_CONTIGUOUS && d->addr != H5_UNDEF_ADDR && d->size < bytes)
    return h5_err(f, H5_ECORRUPT,
                  "contiguous storage of %llu bytes cannot hold the %llu elements of %llu "
                  "bytes (%llu bytes) its dataspace claims",
                  (unsigned long long)d->size, (unsigned long long)n,
                  (unsigned long long)esz, (unsigned long long)bytes);
  return H5_OK;
}

/* The data's size in bytes: elements x element size (fits 64 bits once
** dset_sound has passed). */
static uint64_t dset_bytes(const struct h5_dset *d) { return d->info.nelems * d->type->size; }

/* Every read starts here, before anything that could answer without
** touching the data (an empty extent or selection, a null dataspace). */
static int dset_readable(h5_file *f, const struct h5_dset *d) { return dset_sound(f, d); }

/* o's dataset in *d, when it can be read (dset_readable). */
static int dset_get_readable(h5_obj *o, struct h5_dset **d) {
  int rc = h5_dset_get(o, d);
  return rc ? rc : dset_readable(o->f, *d);
}

int h5_dset_check(h5_obj *o) {
  struct h5_dset *d;
  return dset_get_readable(o, &d);
}

/* The stored bytes (whole of them) of a compact or contiguous dataset, in
** the file; *p is NULL when contiguous storage was never allocated (the
** data then reads as the fill value). */
static int inline_bytes(h5_file *f, const struct h5_dset *d, uint64_t whole,
                        const uint8_t **p) {
  *p = NULL;
  if (d->info.layout == H5_LAYOUT_COMPACT) {
    if (!d->compact || d->compact_len < whole)
      return h5_err(f, H5_ECORRUPT, "compact dataset holds %zu of %llu bytes",
                    d->compact_len, (unsigned long long)whole);
    *p = d->compact;
    return H5_OK;
  }
  if (d->addr == H5_UNDEF_ADDR) return H5_OK;
  *p = h5_span(f, d->addr, whole);
  if (!*p)
    return h5_err(f, H5_ECORRUPT, "contiguous data at %llu (%llu bytes) outside the file",
                  (unsigned long long)d->addr, (unsigned long long)whole);
  return H5_OK;
}

int h5_dset_view(h5_obj *o, const void **data, size_t *len) {
  struct h5_dset *d;
  h5_file *f = o->f;
  *data = NULL;
  *len = 0;
  int rc = dset_get_readable(o, &d);
  if (rc) return rc;
  uint64_t bytes = dset_bytes(d);
  if (d->efl || d->info.nfilters)
    return h5_err(f, H5_EUNSUPPORTED, "no direct view: the data is filtered or external");
  if (d->info.layout != H5_LAYOUT_COMPACT && d->info.layout != H5_LAYOUT_CONTIGUOUS)
    return h5_err(f, H5_EUNSUPPORTED, "no direct view of a %s dataset",
                  d->info.layout == H5_LAYOUT_CHUNKED ? "chunked" : "virtual");
  const uint8_t *p;
  rc = inline_bytes(f, d, bytes, &p);
  if (rc) return rc;
  if (!p) return h5_err(f, H5_EUNSUPPORTED, "no direct view: the data was never written");
  *data = p;
  if (bytes > SIZE_MAX) return h5_err(f, H5_EUNSUPPORTED, "dataset larger than memory");
  *len = (size_t)bytes;
  return H5_OK;
}

/* A chunked dataset's layout message repeats the element size: it must be
** the datatype's. */
static int chunk_esize_check(h5_file *f, const struct h5_dset *d) {
  if (d->chunk_esize == d->type->size) return H5_OK;
  return h5_err(f, H5_ECORRUPT, "layout message: chunk element size %llu, datatype size %u",
                (unsigned long long)d->chunk_esize, d->type->size);
}

int h5_dset_chunk_iter(h5_obj *o, h5_chunk_cb cb, void *ctx) {
  struct h5_dset *d;
  int rc = h5_dset_get(o, &d);
  if (rc == H5_OK) rc = dset_sound(o->f, d);
  if (rc) return rc;
  if (d->info.layout != H5_LAYOUT_CHUNKED || d->efl)
    return h5_err(o->f, H5_EINVAL, "not a chunked dataset");
  if (d->addr == H5_UNDEF_ADDR) return H5_OK;
  if ((rc = chunk_esize_check(o->f, d)) != H5_OK) return rc;
  return h5_chunked_each(o->f, d, cb, ctx);
}

const void *h5_file_span(h5_file *f, uint64_t addr, uint64_t len) {
  return h5_span(f, addr, len);
}

int h5_dset_storage_size(h5_obj *o, uint64_t *bytes) {
  struct h5_dset *d;
  *bytes = 0;
  int rc = h5_dset_get(o, &d);
  if (rc == H5_OK) rc = dset_sound(o->f, d);
  if (rc) return rc;
  if (d->efl) {
    *bytes = dset_bytes(d); /* in the external files */
    return H5_OK;
  }
  switch (d->info.layout) {
  case H5_LAYOUT_COMPACT: *bytes = d->compact_len; return H5_OK;
  case H5_LAYOUT_CONTIGUOUS: *bytes = d->addr == H5_UNDEF_ADDR ? 0 : d->size; return H5_OK;
  case H5_LAYOUT_CHUNKED:
    if (d->addr == H5_UNDEF_ADDR) return H5_OK;
    if ((rc = chunk_esize_check(o->f, d)) != H5_OK) return rc;
    return h5_chunked_storage(o->f, d, bytes);
  default: return H5_OK; /* virtual: the data is in other datasets */
  }
}

int h5_dset_info_get(h5_obj *o, h5_dset_info *info) {
  struct h5_dset *d;
  int rc = h5_dset_get(o, &d);
  if (rc == H5_OK) *info = d->info;
  return rc;
}

/* ---- external storage ---------------------------------------------------- */

/* The raw data of a dataset with an External Data Files message is the
** concatenation of segments of other files (offset and size in each), named
** in a local heap relative to the HDF5 file's directory.  Bytes a segment
** reserves past the end of its file read as zeros, as in libhdf5.  Names
** that are absolute or climb out with ".." are refused, and so are external
** files of a file image opened from memory: a file from an untrusted source
** must not make us read other files of this machine. */
typedef struct efl {
  h5_file *f;
  uint64_t heap;
  uint32_t nslots;
  const uint8_t *slots; /* nslots x (name offset, file offset, size) */
  char dir[4096];       /* the HDF5 file's directory, "" when unknown */
  int fd;               /* the segment file open last, or -1 */
  uint32_t fd_slot;
} efl;

static int efl_open(h5_file *f, const struct h5_dset *d, efl *e) {
  memset(e, 0, sizeof *e);
  e->f = f;
  e->fd = -1;
  h5_cur c;
  int rc = msg_cursor(f, d->efl, &c);
  if (rc) return rc;
  int version = h5c_u8(&c);
  h5c_skip(&c, 3);
  (void)h5c_u16(&c); /* allocated slots */
  e->nslots = h5c_u16(&c);
  e->heap = h5c_addr(&c, f);
  e->slots = h5c_bytes(&c, (size_t)e->nslots * 3 * (size_t)f->sl);
  if (c.bad || version != 1)
    return h5_err(f, H5_ECORRUPT, "external data files message malformed");
  if (!f->mapped || f->fd < 0) /* a file image in memory has no directory */
    return h5_err(f, H5_EUNSUPPORTED,
                  "external data files of a file image in memory are not supported");
  h5_file_dir(f, e->dir, sizeof e->dir);
  return H5_OK;
}

void h5_file_dir(const h5_file *f, char *dir, size_t cap) {
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", f->fd);
  ssize_t n = f->fd < 0 ? -1 : readlink(link, dir, cap - 1);
  if (n > 0 && n < (ssize_t)cap - 1 && dir[0] == '/') {
    dir[n] = '\0';
    strrchr(dir, '/')[1] = '\0';
  } else {
    dir[0] = '\0'; /* names relative to the working directory */
  }
}

static void efl_close(efl *e) {
  if (e->fd >= 0) close(e->fd);
  e->fd = -1;
}

int h5_name_inside(const char *name) {
  if (!*name || name[0] == '/') return 0;
  for (const char *p = name; *p;) {
    const char *q = strchr(p, '/');
    size_t len = q ? (size_t)(q - p) : strlen(p);
    if (len == 2 && p[0] == '.' && p[1] == '.') return 0;
    if (!q) break;
    p = q + 1;
  }
  return 1;
}

/* Bytes [off, off + len) of the external data into dst. */
static int efl_range(efl *e, uint64_t off, uint64_t len, uint8_t *dst) {
  h5_file *f = e->f;
  uint64_t at = 0; /* where slot i starts in the dataset's bytes */
  for (uint32_t i = 0; i < e->nslots && len; i++) {
    const uint8_t *s = e->slots + (size_t)i * 3 * (size_t)f->sl;
    uint64_t name_off = util_get_le(s, f->sl), foff = util_get_le(s + f->sl, f->sl);
    uint64_t size = util_get_le(s + 2 * f->sl, f->sl);
    if (f->sl < 8 && size == (UINT64_C(1) << (8 * f->sl)) - 1) size = UINT64_MAX;
    if (size > UINT64_MAX - at) size = UINT64_MAX - at; /* to the end of everything */
    if (off >= at + size) {
      at += size;
      continue;
    }
    uint64_t in = off - at, take = size - in;
    if (take > len) take = len;
    if (e->fd < 0 || e->fd_slot != i) {
      const char *name;
      int rc = h5_lheap_string(f, e->heap, name_off, &name);
      if (rc) return rc;
      if (!h5_name_inside(name))
        return h5_err(f, H5_EUNSUPPORTED,
                      "external data file \"%s\" is outside the HDF5 file's directory",
                      name);
      char path[8192];
      snprintf(path, sizeof path, "%s%s", e->dir, name);
      efl_close(e);
      e->fd = open(path, O_RDONLY | O_CLOEXEC);
      if (e->fd < 0)
        return h5_err(f, H5_EIO, "cannot open external data file %s: %s", path,
                      strerror(errno));
      e->fd_slot = i;
    }
    if (foff > (uint64_t)INT64_MAX - in || take > (uint64_t)INT64_MAX - foff - in)
      return h5_err(f, H5_ECORRUPT, "external data file offset out of range");
    uint64_t got = 0;
    while (got < take) {
      uint64_t want = take - got > ((uint64_t)1 << 30) ? (uint64_t)1 << 30 : take - got;
      ssize_t r = pread(e->fd, dst + got, (size_t)want, (off_t)(foff + in + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0)
        return h5_err(f, H5_EIO, "reading an external data file: %s", strerror(errno));
      if (r == 0) break;
      got += (uint64_t)r;
    }
    memset(dst + got, 0, (size_t)(take - got)); /* reserved past the end of the file */
    dst += take;
    off += take;
    len -= take;
    at += size;
  }
  if (len)
    return h5_err(f, H5_ECORRUPT,
                  "external data files end %llu bytes before the dataset does",
                  (unsigned long long)len);
  return H5_OK;
}

/* The elements sel selects, read run by run (whole rows when the innermost
** stride is 1). */
static int efl_slab(efl *e, const struct h5_dset *d, const h5_sel *sel, uint8_t *out) {
  int rank = d->space.rank;
  uint64_t esz = d->type->size;
  if (rank == 0) return efl_range(e, 0, esz, out);
  uint64_t dstr[H5_MAX_RANK], idx[H5_MAX_RANK] = {0};
  dstr[rank - 1] = 1;
  for (int k = rank - 1; k > 0; k--) dstr[k - 1] = dstr[k] * d->space.dims[k];
  int in = rank - 1;
  for (;;) {
    uint64_t base = 0;
    for (int k = 0; k < in; k++)
      base += (sel->start[k] + idx[k] * sel->stride[k]) * dstr[k];
    if (sel->stride[in] == 1) {
      int rc = efl_range(e, (base + sel->start[in]) * esz, sel->count[in] * esz, out);
      if (rc) return rc;
      out += sel->count[in] * esz;
    } else {
      for (uint64_t j = 0; j < sel->count[in]; j++, out += esz) {
        uint64_t at = (base + sel->start[in] + j * sel->stride[in]) * esz;
        int rc = efl_range(e, at, esz, out);
        if (rc) return rc;
      }
    }
    int k = in - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < sel->count[k]) break;
      idx[k] = 0;
    }
    if (k < 0) return H5_OK;
  }
}

static int efl_read(h5_file *f, const struct h5_dset *d, const h5_sel *sel, uint64_t whole,
                    uint8_t *out) {
  if (d->info.layout != H5_LAYOUT_CONTIGUOUS)
    return h5_err(f, H5_ECORRUPT,
                  "external data files for a dataset not stored contiguously");
  efl e;
  int rc = efl_open(f, d, &e);
  if (!rc) rc = sel ? efl_slab(&e, d, sel, out) : efl_range(&e, 0, whole, out);
  efl_close(&e);
  return rc;
}

void h5_fill(const struct h5_dset *d, uint8_t *buf, uint64_t n) {
  size_t esz = d->type->size;
  if (!d->fill) {
    memset(buf, 0, (size_t)(n * esz));
    return;
  }
  for (uint64_t i = 0; i < n; i++) memcpy(buf + i * esz, d->fill, esz);
}

/* The selection sel of dataset d (NULL: all of it), n elements, read into
** buf: the one read path of h5_dset_read and h5_dset_read_slab. */
static int dset_read_sel(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *buf,
                         uint64_t n) {
  uint64_t whole = dset_bytes(d), bytes = n * d->type->size;
  if (d->efl) return efl_read(f, d, sel, whole, buf);
  switch (d->info.layout) {
  case H5_LAYOUT_COMPACT:
  case H5_LAYOUT_CONTIGUOUS: {
    const uint8_t *p;
    uint64_t origin[H5_MAX_RANK] = {0};
    int rc = inline_bytes(f, d, whole, &p);
    if (rc == H5_OK && p && sel) h5_sel_copy_block(d, sel, origin, d->space.dims, p, buf);
    if (rc == H5_OK && p && !sel) memcpy(buf, p, (size_t)whole);
    if (rc == H5_OK && !p) h5_fill(d, buf, n);
    return rc;
  }
  case H5_LAYOUT_CHUNKED: {
    int rc = chunk_esize_check(f, d);
    if (rc != H5_OK) return rc;
    return h5_chunked_read_sel(f, d, sel, buf, (size_t)bytes);
  }
  case H5_LAYOUT_VIRTUAL: return h5_vds_read(f, d, sel, buf, n);
  default: return h5_err(f, H5_ECORRUPT, "layout class %d", (int)d->info.layout);
  }
}

int h5_dset_read(h5_obj *o, void *out, size_t buflen) {
  struct h5_dset *d;
  h5_file *f = o->f;
  int rc = dset_get_readable(o, &d);
  if (rc) return rc;
  uint64_t n = d->info.nelems, need = dset_bytes(d);
  if (buflen < need)
    return h5_err(f, H5_EINVAL, "buffer of %zu bytes for %llu bytes of data",
                  buflen, (unsigned long long)need);
  if (need == 0) return H5_OK;
  return dset_read_sel(f, d, NULL, out, n);
}

int h5_dset_read_slab(h5_obj *o, const uint64_t *start, const uint64_t *count,
                      const uint64_t *stride, void *out, size_t buflen) {
  struct h5_dset *d;
  h5_file *f = o->f;
  int rc = dset_get_readable(o, &d);
  if (rc) return rc;
  int rank = d->space.rank;
  if (rank < 0) return H5_OK; /* a null dataspace selects nothing */
  if (rank > 0 && (!start || !count))
    return h5_err(f, H5_EINVAL, "hyperslab without start or count");
  h5_sel sel;
  uint64_t n = 1, esz = d->type->size;
  for (int k = 0; k < rank; k++) {
    uint64_t s = start[k], c = count[k], t = stride ? stride[k] : 1, dim = d->space.dims[k];
    if (t == 0) return h5_err(f, H5_EINVAL, "hyperslab stride 0 in dimension %d", k);
    if (c && (s >= dim || (c - 1) > (dim - 1 - s) / t))
      return h5_err(f, H5_EINVAL,
                    "hyperslab leaves dimension %d (start %llu, count %llu, stride %llu, "
                    "size %llu)",
                    k, (unsigned long long)s, (unsigned long long)c, (unsigned long long)t,
                    (unsigned long long)dim);
    sel.start[k] = s;
    sel.count[k] = c;
    sel.stride[k] = t;
    if (c && n > UINT64_MAX / c)
      return h5_err(f, H5_EINVAL, "hyperslab of more than 2^64 elements");
    n *= c;
  }
  if (n && esz > UINT64_MAX / n)
    return h5_err(f, H5_EINVAL, "hyperslab larger than 2^64 bytes");
  if (buflen < n * esz)
    return h5_err(f, H5_EINVAL, "buffer of %zu bytes for %llu bytes of data", buflen,
                  (unsigned long long)(n * esz));
  if (n == 0) return H5_OK;
  return dset_read_sel(f, d, &sel, out, n);
}
