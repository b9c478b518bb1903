/*
** lib/h5/h5_wopen.c - adding to an existing HDF5 file, copy-on-write.
**
** h5w_open checks the superblock (version 2 or 3, 8-byte offsets and
** lengths, no user block, an extension only of kinds we can keep), cuts the
** file back to its end of allocation (bytes past it are what a writer that
** crashed left), and opens it with the reader.  From then on the file only
** grows: new raw data and new object headers go past the old end, nothing
** before it is written again except the superblock at 0, rewritten last at
** each flush (h5_write.c).
**
** Objects are opened lazily (h5w_lookup) as h5w_obj with `old` set: the
** reader's handle to their header.  An old object that changes gets a new
** header at the next flush, and so do the groups above it (their links to
** it change address): the old header messages are carried over byte for
** byte (the addresses in them stay valid), except those rewritten:
**   groups:   link info and links (all links again, in the writer's form,
**             compact or dense);
**   datasets: dataspace and layout, when rows were appended: the layout
**             becomes version 3 with a v1 B-tree over the old chunks (same
**             addresses, sizes and filter masks, whatever index held them:
**             v1/v2 B-tree, single chunk, implicit, fixed or extensible
**             array) and the new ones, which any reader reads;
**   both:     attribute info and attributes, when attributes were added
**             (all of them written again, compact or dense);
**   and modification times are dropped.
** The rows of a last, partial row of chunks are read back (reader) and the
** chunks rewritten at a new place as rows are appended.
**
** What is refused (H5_EUNSUPPORTED, with the reason): superblock 0/1 files,
** user blocks, other sizes of offsets, superblock extensions holding driver
** or file space information, old-style (symbol table) groups that would
** need a new header, creation order tracking on a changed object,
** user-defined links in a changed group, shared attributes, filters other
** than deflate, shuffle, fletcher32, zstd and blosc on a dataset appended to.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5_int.h"
#include "util/pool.h"

#define werr h5w_err

static const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

/* Check the superblock (48 bytes at 0 once version 2 or 3 is known); its
** end of allocation and extension address go to *eoa, *ext. */
static int check_superblock(int fd, uint64_t size, uint64_t *eoa, uint64_t *ext,
                            int *version, char *err, size_t errlen) {
  uint8_t s[48];
  ssize_t n = size >= 8 ? pread(fd, s, sizeof s, 0) : 0;
  if (n < 0) return fail(err, errlen, H5_EIO, "cannot read: %s", strerror(errno));
  if (n < 8 || memcmp(s, sig, 8) != 0) {
    uint8_t t[8];
    for (uint64_t at = 512; at + 8 <= size; at *= 2)
      if (pread(fd, t, 8, (off_t)at) == 8 && memcmp(t, sig, 8) == 0)
        return fail(err, errlen, H5_EUNSUPPORTED,
                    "cannot modify this file: it has a user block of %llu bytes",
                    (unsigned long long)at);
    return fail(err, errlen, H5_ECORRUPT, "not an HDF5 file (no superblock signature)");
  }
  if (n < 9) return fail(err, errlen, H5_ECORRUPT, "truncated file: superblock cut short");
  *version = s[8];
  if (s[8] == 0 || s[8] == 1)
    return fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: superblock version %d (files written with "
                "libver='earliest'); adding to a file needs superblock version 2 or 3 "
                "(libver='v108' or later)", s[8]);
  if (s[8] > 3)
    return fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: superblock version %d", s[8]);
  if (n < 48) return fail(err, errlen, H5_ECORRUPT, "truncated file: superblock cut short");
  if (!h5_checksum_ok(s, 44))
    return fail(err, errlen, H5_ECORRUPT, "superblock checksum mismatch");
  if (s[9] != 8 || s[10] != 8)
    return fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: %d-byte offsets, %d-byte lengths (only 8)",
                s[9], s[10]);
  if (s[11] & 5)
    return fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: it is marked open for writing by libhdf5 "
                "(still open, or its writer crashed: h5clear -s clears the mark)");
  if (util_get_le(s + 12, 8) != 0)
    return fail(err, errlen, H5_EUNSUPPORTED, "cannot modify this file: base address %llu",
                (unsigned long long)util_get_le(s + 12, 8));
  *ext = util_get_le(s + 20, 8);
  *eoa = util_get_le(s + 28, 8);
  if (*eoa < 48 || *eoa > size)
    return fail(err, errlen, H5_ECORRUPT,
                "truncated file: the superblock says it ends at %llu, it has %llu bytes",
                (unsigned long long)*eoa, (unsigned long long)size);
  return H5_OK;
}

/* The superblock extension may stay as it is when it holds only what a
** file growing at its end does not invalidate. */
static int check_extension(h5_file *f, uint64_t ext, char *err, size_t errlen) {
  if (ext == H5_UNDEF_ADDR) return H5_OK;
  h5_ohdr h;
  int rc = h5_ohdr_read(f, ext, &h);
  if (rc) return fail(err, errlen, rc, "superblock extension: %s", h5_errmsg(f));
  for (uint32_t i = 0; rc == H5_OK && i < h.nmsg; i++) {
    const h5_msg *m = &h.msgs[i];
    switch (m->type) {
    case H5_MSG_NIL:
    case H5_MSG_SOHM_TABLE: /* new messages are written unshared */
      break;
    case H5_MSG_BTREE_K: /* chunk B-tree nodes are written for K 32 */
      if (m->size < 3 || util_get_le(m->data + 1, 2) != 32)
        rc = fail(err, errlen, H5_EUNSUPPORTED,
                  "cannot modify this file: chunk B-tree K other than 32");
      break;
    case H5_MSG_DRIVER_INFO:
      rc = fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: written through a file driver (driver info)");
      break;
    case H5_MSG_FSINFO:
      rc = fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: it keeps file space information "
                "(a file space strategy or persistent free space)");
      break;
    default:
      rc = fail(err, errlen, H5_EUNSUPPORTED,
                "cannot modify this file: superblock extension message type %d",
                m->type);
    }
  }
  h5_ohdr_free(&h);
  return rc;
}

int h5w_open(const char *path, int threads, h5w **out, char *err, size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(err, errlen, H5_EIO, "cannot open %s: %s", path, strerror(errno));
  struct stat st;
  uint64_t eoa = 0, ext = H5_UNDEF_ADDR;
  int version = 0, rc = H5_OK;
  h5_file *f = NULL;
  if (fstat(fd, &st) != 0)
    rc = fail(err, errlen, H5_EIO, "cannot stat %s: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = fail(err, errlen, H5_EIO, "%s is not a regular file", path);
  if (rc == H5_OK)
    rc = check_superblock(fd, (uint64_t)st.st_size, &eoa, &ext, &version, err, errlen);
  if (rc == H5_OK) rc = h5_open(path, &f, err, errlen);
  if (rc == H5_OK) rc = check_extension(f, ext, err, errlen);
  /* every check passed: cut what lies past the end of allocation, then
     map the file again (the reader must not map bytes that go away) */
  h5_close(f);
  f = NULL;
  if (rc == H5_OK && (uint64_t)st.st_size > eoa && ftruncate(fd, (off_t)eoa) != 0)
    rc = fail(err, errlen, H5_EIO, "cannot truncate %s: %s", path, strerror(errno));
  if (rc == H5_OK) rc = h5_open(path, &f, err, errlen);
  h5_obj *ro = NULL;
  if (rc == H5_OK && (rc = h5_root(f, &ro)) != H5_OK)
    fail(err, errlen, rc, "%s", h5_errmsg(f));
  if (rc == H5_OK && h5_obj_kind(ro) != H5_KIND_GROUP)
    rc = fail(err, errlen, H5_ECORRUPT, "the root object is not a group");
  h5w *w = rc == H5_OK ? calloc(1, sizeof *w) : NULL;
  h5w_obj *root = w ? calloc(1, sizeof *root) : NULL;
  if (rc == H5_OK && !root) rc = fail(err, errlen, H5_ENOMEM, "out of memory");
  if (rc) {
    free(w);
    h5_close(f);
    close(fd);
    return rc;
  }
  root->is_group = 1;
  root->old = ro;
  root->addr = h5_obj_addr(ro);
  w->fd = fd;
  w->eoa = eoa;
  w->committed_eoa = eoa;
  w->root = root;
  w->threads = threads > 0 ? threads : util_ncpu();
  w->sb_version = version;
  w->ext_addr = ext;
  w->rf = f;
  *out = w;
  return H5_OK;
}

/* ---- looking objects up -------------------------------------------------- */

/* A handle for the object the hard link l of old group g names. */
static int open_old(h5w *w, h5w_obj *g, const h5_link *l, h5w_obj **out) {
  h5_obj *ho;
  int rc = h5_obj_open(w->rf, l->addr, &ho);
  if (rc) return werr(w, rc, "'%s': %s", l->name, h5_errmsg(w->rf));
  h5_kind kind = h5_obj_kind(ho);
  if (kind != H5_KIND_GROUP && kind != H5_KIND_DATASET)
    return werr(w, H5_EUNSUPPORTED, "'%s' is not a group or dataset", l->name);
  h5_dset_info info;
  if (kind == H5_KIND_DATASET && (rc = h5_dset_info_get(ho, &info)) != H5_OK)
    return werr(w, rc, "'%s': %s", l->name, h5_errmsg(w->rf));
  h5w_obj *o = calloc(1, sizeof *o);
  if (!o) return werr(w, H5_ENOMEM, "out of memory");
  o->old = ho;
  o->addr = l->addr;
  o->is_group = kind == H5_KIND_GROUP;
  o->data_addr = H5_UNDEF_ADDR;
  o->dcpl.deflate = -1;
  if (kind == H5_KIND_DATASET) {
    o->type = (h5_type *)info.type;
    o->type_borrowed = 1;
    o->rank = info.rank;
    for (int k = 0; k < info.rank; k++) {
      o->dims[k] = info.dims[k];
      o->maxdims[k] = info.maxdims[k];
    }
    o->dcpl.layout = (int)info.layout;
    for (int k = 0; k < info.chunk_rank && k < H5_MAX_RANK; k++) o->dcpl.chunk[k] = info.chunk[k];
    if (info.fill) {
      o->fill = malloc(info.type->size ? info.type->size : 1);
      if (o->fill) memcpy(o->fill, info.fill, info.type->size);
    }
    if (info.fill && !o->fill) rc = werr(w, H5_ENOMEM, "out of memory");
  }
  if (rc == H5_OK) rc = h5w_kid_attach(w, g, l->name, o);
  if (rc) {
    if (!o->parent) h5w_obj_free(o);
    return rc;
  }
  *out = o;
  return H5_OK;
}

int h5w_lookup(h5w *w, const char *path, h5w_obj **out) {
  *out = NULL;
  h5w_obj *o = w->root;
  const char *p = path ? path : "";
  char name[65536];
  while (*p) {
    while (*p == '/') p++;
    size_t n = strcspn(p, "/");
    if (n == 0) break;
    if (n >= sizeof name) return werr(w, H5_EINVAL, "name too long in '%s'", path);
    memcpy(name, p, n);
    name[n] = 0;
    p += n;
    if (strcmp(name, ".") == 0) continue;
    if (!o->is_group) return werr(w, H5_ENOTFOUND, "'%s': '%s' is not a group", path, o->name);
    h5w_obj *next = NULL;
    if (h5w_names_has(&o->kid_names, name))
      for (size_t i = 0; i < o->nkids && !next; i++)
        if (strcmp(o->kids[i]->name, name) == 0) next = o->kids[i];
    if (!next) {
      const h5_link *l;
      int rc = o->old ? h5_group_find(o->old, name, &l) : H5_ENOTFOUND;
      if (rc == H5_ENOTFOUND) return werr(w, H5_ENOTFOUND, "'%s': no '%s'", path, name);
      if (rc) return werr(w, rc, "'%s': %s", path, h5_errmsg(w->rf));
      if (l->type != H5_LINK_HARD)
        return werr(w, H5_EUNSUPPORTED, "'%s': '%s' is a %s link; only hard links are followed",
                    path, name, l->type == H5_LINK_SOFT ? "soft" : "external or user-defined");
      rc = open_old(w, o, l, &next);
      if (rc) return rc;
    }
    o = next;
  }
  *out = o;
  return H5_OK;
}

int h5w_obj_info(h5w_obj *o, h5w_info *info) {
  memset(info, 0, sizeof *info);
  info->is_group = o->is_group;
  if (o->is_group) return H5_OK;
  info->type = o->type;
  info->rank = o->rank;
  for (int k = 0; k < o->rank; k++) {
    info->dims[k] = o->dims[k];
    info->maxdims[k] = o->maxdims[k];
    info->chunk[k] = o->dcpl.layout == H5_LAYOUT_CHUNKED ? o->dcpl.chunk[k] : 0;
  }
  info->layout = o->dcpl.layout;
  return H5_OK;
}

/* ---- what an old object may become --------------------------------------- */

static const char *oname(const h5w_obj *o) { return o->name ? o->name : "/"; }

static int no_ud_link(void *ctx, const h5_link *l) {
  (void)ctx;
  return l->type != H5_LINK_HARD && l->type != H5_LINK_SOFT && l->type != H5_LINK_EXTERNAL;
}

int h5w_old_check(h5w *w, h5w_obj *o) {
  if (o->old_ok > 0) return H5_OK;
  const h5_ohdr *h = &o->old->hdr;
  int rc = H5_OK;
  if (h->version == 2 && (h->flags & 0x04))
    rc = werr(w, H5_EUNSUPPORTED,
              "cannot change '%s': it tracks attribute creation order (track_order)", oname(o));
  if (rc == H5_OK && o->is_group) {
    const h5_msg *li = h5_ohdr_find(h, H5_MSG_LINK_INFO);
    if (h5_ohdr_find(h, H5_MSG_SYMBOL_TABLE) || !li)
      rc = werr(w, H5_EUNSUPPORTED,
                "cannot change group '%s': an old-style group (symbol table, as "
                "libver='earliest' writes it)", oname(o));
    else if (li->size < 2 || (li->data[1] & 1))
      rc = werr(w, H5_EUNSUPPORTED,
                "cannot change group '%s': it tracks link creation order (track_order)",
                oname(o));
    if (rc == H5_OK) {
      int r = h5_group_iter(o->old, no_ud_link, NULL);
      if (r == H5_ESTOP)
        rc = werr(w, H5_EUNSUPPORTED, "cannot change group '%s': it has user-defined links",
                  oname(o));
      else if (r)
        rc = werr(w, r, "group '%s': %s", oname(o), h5_errmsg(w->rf));
    }
  }
  if (rc == H5_OK) o->old_ok = 1;
  return rc;
}

/* ---- old attributes -------------------------------------------------------- */

/* Add the attribute message msg (flags: as stored) to o->attrs, named as
** the message names it. */
static int take_attr(h5w *w, h5w_obj *o, uint8_t flags, const uint8_t *msg, size_t len) {
  if (flags & H5_MSGFLAG_SHARED)
    return werr(w, H5_EUNSUPPORTED, "cannot add attributes to '%s': it has shared attributes",
                oname(o));
  if (len < 8 || msg[0] < 1 || msg[0] > 3)
    return werr(w, H5_ECORRUPT, "'%s': bad attribute message", oname(o));
  size_t nlen = (size_t)util_get_le(msg + 2, 2), at = msg[0] == 3 ? 9 : 8;
  if (nlen == 0 || nlen > len - at || len < at)
    return werr(w, H5_ECORRUPT, "'%s': bad attribute name", oname(o));
  char *name = malloc(nlen + 1);
  if (!name) return werr(w, H5_ENOMEM, "out of memory");
  memcpy(name, msg + at, nlen);
  name[nlen] = 0;
  int rc = h5w_attr_raw(w, o, name, msg, len);
  free(name);
  return rc;
}

typedef struct dense_attrs {
  h5w *w;
  h5w_obj *o;
  h5_fheap *heap;
} dense_attrs;

static int dense_attr(void *ctx, const uint8_t *rec, size_t len) {
  dense_attrs *d = ctx;
  if (len < 9) return werr(d->w, H5_ECORRUPT, "attribute record too short");
  const uint8_t *msg;
  size_t mlen;
  if (rec[8] & H5_MSGFLAG_SHARED) return take_attr(d->w, d->o, rec[8], NULL, 0);
  int rc = h5_fheap_get(d->heap, rec, 8, &msg, &mlen);
  if (rc) return werr(d->w, rc, "'%s': %s", oname(d->o), h5_errmsg(d->w->rf));
  return take_attr(d->w, d->o, 0, msg, mlen);
}

int h5w_old_attrs(h5w *w, h5w_obj *o) {
  if (o->attrs_loaded) return H5_OK;
  const h5_ohdr *h = &o->old->hdr;
  int rc = H5_OK;
  for (uint32_t i = 0; rc == H5_OK && i < h->nmsg; i++)
    if (h->msgs[i].type == H5_MSG_ATTRIBUTE)
      rc = take_attr(w, o, h->msgs[i].flags, h->msgs[i].data, h->msgs[i].size);
  const h5_msg *ai = h5_ohdr_find(h, H5_MSG_ATTR_INFO);
  if (rc == H5_OK && ai) {
    if (ai->size < 18 || ai->data[0] != 0)
      return werr(w, H5_ECORRUPT, "'%s': attribute info message malformed", oname(o));
    if (ai->data[1] & 3)
      return werr(w, H5_EUNSUPPORTED,
                  "cannot add attributes to '%s': it tracks their creation order", oname(o));
    uint64_t heap = util_get_le(ai->data + 2, 8), bt2 = util_get_le(ai->data + 10, 8);
    if (heap != H5_UNDEF_ADDR) {
      dense_attrs d = {w, o, NULL};
      rc = h5_fheap_open(w->rf, heap, &d.heap);
      if (rc) rc = werr(w, rc, "'%s': %s", oname(o), h5_errmsg(w->rf));
      if (rc == H5_OK) {
        rc = h5_bt2_iter(w->rf, bt2, dense_attr, &d);
        if (rc && rc != H5_ENOMEM && !strstr(w->err, oname(o)))
          rc = werr(w, rc, "'%s': %s", oname(o), h5_errmsg(w->rf));
      }
      h5_fheap_close(d.heap);
    }
  }
  if (rc == H5_OK) o->attrs_loaded = 1;
  return rc;
}

/* ---- old chunks ------------------------------------------------------------- */

/* Collecting the chunks of an old dataset (the reader walks its index). */
typedef struct cl {
  h5w *w;
  h5w_obj *d;
  h5_file *f;
} cl;

static int corrupt(cl *c, const char *what) {
  return werr(c->w, H5_ECORRUPT, "'%s': chunk index: %s", oname(c->d), what);
}

static int cl_add(void *ctx, const uint64_t *offset, uint64_t addr, uint64_t size,
                  uint32_t mask) {
  cl *c = ctx;
  w_chunk ch;
  memset(&ch, 0, sizeof ch);
  for (int k = 0; k < c->d->rank; k++) ch.off[k] = offset[k];
  if (size > UINT32_MAX)
    return werr(c->w, H5_EUNSUPPORTED, "'%s': a chunk of %llu bytes", oname(c->d),
                (unsigned long long)size);
  if (!h5_span(c->f, addr, size)) return corrupt(c, "chunk outside the file");
  ch.addr = addr;
  ch.size = size;
  ch.mask = mask;
  int rc = h5w_chunks_reserve(c->w, c->d, 1);
  if (rc == H5_OK) c->d->chunks[c->d->nchunks++] = ch;
  return rc;
}

static int by_offset(const void *a, const void *b) {
  const w_chunk *x = a, *y = b;
  for (int k = 0; k < H5_MAX_RANK; k++)
    if (x->off[k] != y->off[k]) return x->off[k] < y->off[k] ? -1 : 1;
  return 0;
}

/* All chunks of old dataset d, sorted by offset, into d->chunks. */
#define OLD_CHUNKS_RESERVE 65536 /* (no more room is made ahead for dimensions a file may overstate) */
static int old_chunks(h5w *w, h5w_obj *d, struct h5_dset *ds) {
  cl c = {w, d, w->rf};
  uint64_t most = 1; /* the chunks across the extent: room made at once when they are few */
  for (int k = 0; k < d->rank; k++) {
    if (d->dcpl.chunk[k] == 0) return corrupt(&c, "chunk dimension 0");
    uint64_t n = d->dims[k] / d->dcpl.chunk[k] + (d->dims[k] % d->dcpl.chunk[k] != 0);
    most = n && most > OLD_CHUNKS_RESERVE / n ? OLD_CHUNKS_RESERVE + 1 : most * n;
  }
  int rc = most <= OLD_CHUNKS_RESERVE ? h5w_chunks_reserve(w, d, (size_t)most) : H5_OK;
  if (rc == H5_OK) rc = h5_chunked_each(w->rf, ds, cl_add, &c);
  if (rc && rc != H5_ENOMEM && !strstr(w->err, oname(d)))
    rc = werr(w, rc, "'%s': %s", oname(d), h5_errmsg(w->rf));
  if (rc == H5_OK && d->nchunks) qsort(d->chunks, d->nchunks, sizeof *d->chunks, by_offset);
  for (size_t i = 1; rc == H5_OK && i < d->nchunks; i++)
    if (by_offset(&d->chunks[i - 1], &d->chunks[i]) == 0)
      rc = corrupt(&c, "a chunk listed twice");
  return rc;
}

int h5w_old_prepare_append(h5w *w, h5w_obj *d) {
  struct h5_dset *ds;
  int rc = h5_dset_get(d->old, &ds);
  if (rc) return werr(w, rc, "'%s': %s", oname(d), h5_errmsg(w->rf));
  if (ds->info.external) return werr(w, H5_EUNSUPPORTED, "'%s': external storage", oname(d));
  /* the filters the writer applies, in its order */
  int stage = 0;
  for (int i = 0; i < ds->info.nfilters; i++) {
    const h5_filter *f = &ds->info.filters[i];
    if (f->id == 2 && stage < 1) {
      d->dcpl.shuffle = 1;
      stage = 1;
    } else if (f->id == 1 && stage < 2) {
      d->dcpl.deflate = f->ncd >= 1 && f->cd[0] <= 9 ? (int)f->cd[0] : 6;
      stage = 2;
    } else if (f->id == 32015 && stage < 2) { /* zstd: its level, else the plugin's 3 */
      d->dcpl.codec = H5W_CODEC_ZSTD;
      d->dcpl.codec_level = f->ncd >= 1 && f->cd[0] >= 1 && f->cd[0] <= 22 ? (int)f->cd[0] : 3;
      stage = 2;
    } else if (f->id == 32001 && stage < 2) { /* blosc: level, shuffle, compressor (the plugin's defaults) */
      d->dcpl.codec = H5W_CODEC_BLOSC;
      d->dcpl.codec_level = f->ncd > 4 && f->cd[4] <= 9 ? (int)f->cd[4] : 5;
      d->dcpl.blosc_shuffle = f->ncd > 5 && f->cd[5] <= 2 ? (int)f->cd[5] : 1;
      d->dcpl.blosc_cname = f->ncd > 6 ? (int)f->cd[6] : 0;
      if (d->dcpl.blosc_cname > 5 || d->dcpl.blosc_cname == 3)
        return werr(w, H5_EUNSUPPORTED,
                    "cannot append to '%s': blosc compressor %d (snappy, or unknown)", oname(d),
                    d->dcpl.blosc_cname);
      stage = 2;
    } else if (f->id == 3 && stage < 3) {
      d->dcpl.fletcher32 = 1;
      stage = 3;
    } else if (f->id == 1 || f->id == 2 || f->id == 3 || f->id == 32015 || f->id == 32001) {
      return werr(w, H5_EUNSUPPORTED,
                  "cannot append to '%s': its filters are not in the order shuffle, "
                  "deflate (or zstd or blosc), fletcher32", oname(d));
    } else {
      return werr(w, H5_EUNSUPPORTED,
                  "cannot append to '%s': filter %s (id %u) is not one the writer writes "
                  "(deflate, shuffle, fletcher32, zstd, blosc)", oname(d), h5_filter_label(f), f->id);
    }
  }
  if (d->dcpl.codec) {
    const char *lib;
    if (!h5w_codec_available(d->dcpl.codec, &lib))
      return werr(w, H5_EUNSUPPORTED, "cannot append to '%s': this build has no %s", oname(d), lib);
  }
  if (ds->info.nfilters && (ds->chunk_flags & 1))
    return werr(w, H5_EUNSUPPORTED,
                "cannot append to '%s': its partial edge chunks are stored unfiltered",
                oname(d));
  rc = old_chunks(w, d, ds);
  if (rc) return rc;
  /* a last row of chunks not full: its rows become pending rows, its
     chunks are written anew as rows come */
  uint64_t c0 = d->dcpl.chunk[0], row0 = d->dims[0] / c0 * c0;
  size_t keep = 0;
  while (keep < d->nchunks && d->chunks[keep].off[0] < row0) keep++;
  /* their slots may take the completed chunks in place when unfiltered
     (reusable_slot in h5_write.c says why that is crash-safe): the file
     then grows by new rows only, not by a copy of the partial chunk */
  if (keep < d->nchunks && !ds->info.nfilters) {
    size_t n = d->nchunks - keep;
    w_chunk *p = malloc(n * sizeof *p);
    if (!p) return werr(w, H5_ENOMEM, "out of memory");
    memcpy(p, d->chunks + keep, n * sizeof *p);
    free(d->prov);
    d->prov = p;
    d->nprov = n;
    d->nprov_listed = 0;
  }
  d->nchunks = keep;
  uint64_t rowbytes = d->type->size;
  for (int k = 1; k < d->rank; k++) rowbytes *= d->dims[k];
  uint64_t n = d->dims[0] - row0;
  if (n && rowbytes) {
    uint64_t start[H5_MAX_RANK] = {0}, count[H5_MAX_RANK];
    start[0] = row0;
    count[0] = n;
    for (int k = 1; k < d->rank; k++) count[k] = d->dims[k];
    d->pending = malloc((size_t)(n * rowbytes));
    if (!d->pending) return werr(w, H5_ENOMEM, "out of memory");
    rc = h5_dset_read_slab(d->old, start, count, NULL, d->pending, (size_t)(n * rowbytes));
    if (rc) return werr(w, rc, "'%s': %s", oname(d), h5_errmsg(w->rf));
  }
  d->npending = n;
  d->chunks_loaded = 1;
  return H5_OK;
}
