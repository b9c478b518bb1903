/*
** lib/h5/h5_file.c - opening a file: the map, the superblock, errors, and
** the table of objects opened from it.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5_int.h"

static const uint8_t h5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

int h5_err(h5_file *f, int code, const char *fmt, ...) {
  /* formatted aside first: an argument may be f's own message (a prefix
  ** added to it) */
  char msg[sizeof f->err];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(f->err, msg, sizeof msg);
  return code;
}

const char *h5_errmsg(const h5_file *f) { return f ? f->err : "no file"; }

/* The bytes of the mapping at p .. p + len read from the file into b (no
** page of the mapping touched): how many it read (all of them, unless the
** file is not mapped from a descriptor or a read failed). */
static size_t read_span(const h5_file *f, const uint8_t *p, uint8_t *b, uint64_t len) {
  size_t got = 0;
  while (f->mapped && !f->overlaid && f->fd >= 0 && got < len) {
    ssize_t r = pread(f->fd, b + got, (size_t)(len - got), (off_t)(p - f->map) + (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  return got;
}

const uint8_t *h5_span_read(const h5_file *f, const uint8_t *p, uint64_t len, uint8_t **copy) {
  *copy = NULL;
  if (!f->mapped || f->overlaid || f->fd < 0 || len < ((uint64_t)64 << 10) || len > SIZE_MAX) return p;
  uint8_t *b = h5_stage_alloc((size_t)len);
  if (!b) return p;
  size_t got = read_span(f, p, b, len);
  if (got != len) { /* (the map has them all the same) */
    h5_stage_free(b);
    return p;
  }
  *copy = b;
  return b;
}

int h5_file_copy(h5_file *f, uint64_t addr, void *dst, uint64_t len) {
  const uint8_t *p = h5_span(f, addr, len);
  if (!p) return h5_err(f, H5_ECORRUPT, "%llu bytes at %llu are beyond the end of the file",
                        (unsigned long long)len, (unsigned long long)addr);
  size_t got = read_span(f, p, dst, len);
  if (got < len) memcpy((uint8_t *)dst + got, p + got, (size_t)(len - got)); /* (the map has them all the same) */
  return H5_OK;
}

const uint8_t *h5_span(const h5_file *f, uint64_t addr, uint64_t len) {
  if (addr == H5_UNDEF_ADDR || addr > f->size || f->base > f->size - addr)
    return NULL;
  uint64_t abs = f->base + addr;
  if (len > f->size - abs) return NULL;
  return f->map + abs;
}

h5_cur h5_cur_at(const h5_file *f, uint64_t addr) {
  const uint8_t *p = h5_span(f, addr, 0);
  if (!p) {
    h5_cur c = {NULL, NULL, 1};
    return c;
  }
  return h5c_make(p, (size_t)(f->size - (uint64_t)(p - f->map)));
}

uint64_t h5c_addr(h5_cur *c, const h5_file *f) {
  const uint8_t *q = h5c_bytes(c, (size_t)f->so);
  if (!q) return H5_UNDEF_ADDR;
  uint64_t v = util_get_le(q, f->so);
  if (f->so < 8 && v == (UINT64_C(1) << (8 * f->so)) - 1) return H5_UNDEF_ADDR;
  return v;
}

uint64_t h5c_len(h5_cur *c, const h5_file *f) { return h5c_uint(c, f->sl); }

/* ---- superblock ------------------------------------------------------ */

static int valid_size(int n) { return n == 2 || n == 4 || n == 8; }

/* Parse the superblock at absolute offset at. */
static int read_superblock(h5_file *f, uint64_t at) {
  h5_cur c = h5c_make(f->map + at, (size_t)(f->size - at));
  h5c_skip(&c, 8);
  int version = h5c_u8(&c);
  uint64_t eof;
  f->sb_version = version;
  if (version == 0 || version == 1) {
    h5c_skip(&c, 4); /* free-space, root entry, reserved, shared header versions */
    f->so = h5c_u8(&c);
    f->sl = h5c_u8(&c);
    h5c_skip(&c, 1);
    uint16_t leaf_k = h5c_u16(&c), node_k = h5c_u16(&c);
    h5c_skip(&c, 4); /* consistency flags */
    if (version == 1) h5c_skip(&c, 4);
    if (c.bad || !valid_size(f->so) || !valid_size(f->sl))
      return h5_err(f, H5_ECORRUPT, "superblock at %llu: bad sizes of offsets/lengths",
                    (unsigned long long)at);
    if (leaf_k == 0 || node_k == 0)
      return h5_err(f, H5_ECORRUPT, "superblock: group B-tree K of 0");
    h5c_skip(&c, (size_t)f->so);       /* base address: see below */
    (void)h5c_addr(&c, f);             /* free-space info */
    eof = h5c_addr(&c, f);
    (void)h5c_addr(&c, f);             /* driver info */
    /* root group symbol table entry */
    (void)h5c_addr(&c, f);             /* link name offset */
    f->root_addr = h5c_addr(&c, f);
    h5c_skip(&c, 24);                  /* cache type, reserved, scratch */
    f->ext_addr = H5_UNDEF_ADDR;
  } else if (version == 2 || version == 3) {
    f->so = h5c_u8(&c);
    f->sl = h5c_u8(&c);
    h5c_skip(&c, 1);
    if (c.bad || !valid_size(f->so) || !valid_size(f->sl))
      return h5_err(f, H5_ECORRUPT, "superblock at %llu: bad sizes of offsets/lengths",
                    (unsigned long long)at);
    h5c_skip(&c, (size_t)f->so); /* base address */
    f->ext_addr = h5c_addr(&c, f);
    eof = h5c_addr(&c, f);
    f->root_addr = h5c_addr(&c, f);
    size_t body = (size_t)(c.p - (f->map + at));
    if (c.bad || h5c_left(&c) < 4)
      return h5_err(f, H5_ECORRUPT, "superblock truncated");
    if (!h5_checksum_ok(f->map + at, body))
      return h5_err(f, H5_ECORRUPT, "superblock checksum mismatch");
  } else {
    return h5_err(f, H5_EUNSUPPORTED, "superblock version %d is not supported",
                  version);
  }
  if (c.bad) return h5_err(f, H5_ECORRUPT, "superblock truncated");
  /* Addresses are relative to the superblock itself (libhdf5 moves the base
     address there when the two differ). */
  f->base = at;
  /* libhdf5 compares the stored end of file with the file's size as it
     is, user block included */
  if (eof == H5_UNDEF_ADDR || eof > f->size)
    return h5_err(f, H5_ECORRUPT,
                  "truncated file: the superblock says it ends at %llu, it has "
                  "%llu bytes",
                  (unsigned long long)(eof == H5_UNDEF_ADDR ? 0 : eof),
                  (unsigned long long)f->size);
  if (f->root_addr == H5_UNDEF_ADDR || !h5_span(f, f->root_addr, 1))
    return h5_err(f, H5_ECORRUPT, "root group address outside the file");
  return H5_OK;
}

static int find_superblock(h5_file *f) {
  /* at 0, then 512, 1024, 2048, ... (user blocks are powers of two) */
  for (uint64_t at = 0; at + 8 <= f->size; at = at ? at * 2 : 512) {
    if (memcmp(f->map + at, h5_signature, 8) == 0) return read_superblock(f, at);
  }
  return h5_err(f, H5_ECORRUPT, "not an HDF5 file (no superblock signature)");
}

int h5_open(const char *path, h5_file **out, char *err, size_t errlen) {
  *out = NULL;
  h5_file *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(err, errlen, "out of memory");
    return H5_ENOMEM;
  }
  f->fd = -1;
  int rc = H5_OK;
  struct stat st;
  f->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (f->fd < 0) {
    rc = h5_err(f, H5_EIO, "cannot open %s: %s", path, strerror(errno));
  } else if (fstat(f->fd, &st) != 0) {
    rc = h5_err(f, H5_EIO, "cannot stat %s: %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    rc = h5_err(f, H5_EIO, "%s is not a regular file", path);
  } else {
    f->size = (uint64_t)st.st_size;
    if (f->size < 8) {
      rc = h5_err(f, H5_ECORRUPT, "%s is not an HDF5 file (%llu bytes)", path,
                  (unsigned long long)f->size);
    } else {
      void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
      if (m == MAP_FAILED) {
        rc = h5_err(f, H5_EIO, "cannot map %s: %s", path, strerror(errno));
      } else {
        f->map = m;
        f->mapped = 1;
        rc = find_superblock(f);
        if (rc == H5_OK) rc = h5_mdci_load(f);
      }
    }
  }
  if (rc != H5_OK) {
    snprintf(err, errlen, "%s", f->err);
    h5_close(f);
    return rc;
  }
  *out = f;
  return H5_OK;
}

void h5_file_prefault(h5_file *f) {
  if (!f->mapped) return;
#ifdef MADV_POPULATE_READ
  if (madvise((void *)f->map, (size_t)f->size, MADV_POPULATE_READ) == 0) return;
#endif
  madvise((void *)f->map, (size_t)f->size, MADV_WILLNEED);
}

int h5_open_mem(const void *data, size_t len, h5_file **out, char *err,
                size_t errlen) {
  *out = NULL;
  h5_file *f = calloc(1, sizeof *f);
  if (!f) {
    snprintf(err, errlen, "out of memory");
    return H5_ENOMEM;
  }
  f->fd = -1;
  f->map = data;
  f->size = len;
  int rc = len < 8 ? h5_err(f, H5_ECORRUPT, "not an HDF5 file (%zu bytes)", len)
                   : find_superblock(f);
  if (rc == H5_OK) rc = h5_mdci_load(f);
  if (rc != H5_OK) {
    snprintf(err, errlen, "%s", f->err);
    h5_close(f);
    return rc;
  }
  *out = f;
  return H5_OK;
}

void h5_file_info_get(const h5_file *f, h5_file_info *info) {
  info->superblock_version = f->sb_version;
  info->sizeof_offsets = f->so;
  info->sizeof_lengths = f->sl;
  info->base_addr = f->base;
  info->file_size = f->size;
  info->root_addr = f->root_addr;
}

/* ---- the objects of a file ------------------------------------------- */

static void obj_free(h5_obj *o) {
  h5_ohdr_free(&o->hdr);
  h5_dset_free(o->dset);
  h5_attrtab_free(o->attrs);
  h5_linktab_free(o->links);
  free(o);
}

static size_t addr_hash(uint64_t a) {
  a ^= a >> 33;
  a *= 0xff51afd7ed558ccdull;
  a ^= a >> 33;
  return (size_t)a;
}

static size_t amap_find(const h5_amap *m, uint64_t key) {
  size_t i = addr_hash(key) & (m->cap - 1);
  while (m->val[i] && m->key[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

void *h5_amap_get(const h5_amap *m, uint64_t key) {
  return m->cap ? m->val[amap_find(m, key)] : NULL;
}

int h5_amap_put(h5_amap *m, uint64_t key, void *val) {
  if (m->n * 2 >= m->cap) {
    size_t ncap = m->cap ? m->cap * 2 : 64;
    h5_amap nm = {calloc(ncap, sizeof *nm.key), calloc(ncap, sizeof *nm.val),
                  ncap, 0};
    if (!nm.key || !nm.val) {
      free(nm.key);
      free(nm.val);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
      if (m->val[i]) {
        size_t j = amap_find(&nm, m->key[i]);
        nm.key[j] = m->key[i];
        nm.val[j] = m->val[i];
        nm.n++;
      }
    free(m->key);
    free(m->val);
    *m = nm;
  }
  size_t i = amap_find(m, key);
  if (!m->val[i]) m->n++;
  m->key[i] = key;
  m->val[i] = val;
  return 0;
}

void h5_amap_free(h5_amap *m) {
  free(m->key);
  free(m->val);
  memset(m, 0, sizeof *m);
}

void h5_close(h5_file *f) {
  if (!f) return;
  h5_vsrc_close(f);
  for (size_t i = 0; i < f->objs.cap; i++)
    if (f->objs.val[i]) obj_free(f->objs.val[i]);
  h5_amap_free(&f->objs);
  for (size_t i = 0; i < f->gcols.cap; i++) free(f->gcols.val[i]);
  h5_amap_free(&f->gcols);
  for (size_t i = 0; i < f->sohm_heaps.cap; i++)
    h5_fheap_close(f->sohm_heaps.val[i]);
  h5_amap_free(&f->sohm_heaps);
  if (f->mapped) munmap((void *)f->map, (size_t)f->size);
  free(f->owned);
  if (f->fd >= 0) close(f->fd);
  free(f);
}

/* What the messages say the object is. */
static h5_kind classify(const h5_ohdr *h) {
  if (h5_ohdr_find(h, H5_MSG_LAYOUT)) return H5_KIND_DATASET;
  if (h5_ohdr_find(h, H5_MSG_SYMBOL_TABLE) || h5_ohdr_find(h, H5_MSG_LINK_INFO) ||
      h5_ohdr_find(h, H5_MSG_LINK) || h5_ohdr_find(h, H5_MSG_GROUP_INFO))
    return H5_KIND_GROUP;
  if (h5_ohdr_find(h, H5_MSG_DATATYPE)) return H5_KIND_DATATYPE;
  return H5_KIND_OTHER;
}

int h5_obj_open(h5_file *f, uint64_t addr, h5_obj **out) {
  *out = h5_amap_get(&f->objs, addr);
  if (*out) return H5_OK;
  h5_obj *o = calloc(1, sizeof *o);
  if (!o) return h5_err(f, H5_ENOMEM, "out of memory");
  o->f = f;
  o->addr = addr;
  int rc = h5_ohdr_read(f, addr, &o->hdr);
  if (rc != H5_OK) {
    free(o);
    return rc;
  }
  o->kind = classify(&o->hdr);
  if (h5_amap_put(&f->objs, addr, o)) {
    obj_free(o);
    return h5_err(f, H5_ENOMEM, "out of memory");
  }
  *out = o;
  return H5_OK;
}

int h5_root(h5_file *f, h5_obj **out) { return h5_obj_open(f, f->root_addr, out); }

h5_kind h5_obj_kind(const h5_obj *o) { return o->kind; }

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int digits(const uint8_t *p, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9') return -1;
    v = v * 10 + (p[i] - '0');
  }
  return v;
}

int64_t h5_obj_mtime(const h5_obj *o) {
  if (o->hdr.mtime >= 0) return o->hdr.mtime;
  const h5_msg *m = h5_ohdr_find(&o->hdr, H5_MSG_MTIME);
  if (m && m->size >= 8 && m->data[0] == 1) return (int64_t)util_get_le(m->data + 4, 4);
  m = h5_ohdr_find(&o->hdr, H5_MSG_MTIME_OLD);
  if (m && m->size >= 14) { /* "YYYYMMDDhhmmss", UTC */
    int y = digits(m->data, 4), mo = digits(m->data + 4, 2), d = digits(m->data + 6, 2);
    int h = digits(m->data + 8, 2), mi = digits(m->data + 10, 2), s = digits(m->data + 12, 2);
    if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || s < 0 || s > 60)
      return -1;
    return days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
  }
  return -1;
}

const char *h5_obj_comment(const h5_obj *o) {
  const h5_msg *m = h5_ohdr_find(&o->hdr, H5_MSG_COMMENT);
  if (!m || !m->size || !memchr(m->data, 0, m->size)) return NULL;
  return (const char *)m->data;
}

uint64_t h5_obj_addr(const h5_obj *o) { return o->addr; }
