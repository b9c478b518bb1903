/*
** lib/h5/h5_mdci.c - the metadata cache image: libhdf5 (1.10.1 and later,
** when asked to) may close a file leaving some of its metadata only in an
** image of its metadata cache, the object headers at their addresses in
** the file never written.  The superblock extension then holds a message
** (type 0x18: version 0, the image block's address and length) naming the
** block:
**
**   "MDCI", version 0, flags (bit 0, a resize status libhdf5 itself cannot
**   read), the block's length (a length), the number of entries (4 bytes),
**   then per entry: type, flags, ring, age (1 byte each), flush dependency
**   children, dirty children and parents (2 bytes each), LRU rank (4),
**   address (an offset), size (a length), the parents' addresses, the
**   entry's bytes as they would be in the file; a lookup3 checksum of the
**   whole block ends it.
**
** The entries' bytes are what the file holds at their addresses, for
** reading as for writing: they are laid over the file's bytes once, on
** opening (a mapped file's pages copied on write, privately; a file image
** in memory copied whole), so every reader sees them.  The image block is
** checked first: its checksum, entries inside it and inside the file, no
** two entries over one byte, none over the block itself.
*/
#include "config.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "h5_int.h"

#define H5_MSG_MDCI 0x18
#define H5_MDCI_MAX_ENTRY (32u << 20) /* libhdf5's largest cache entry */

typedef struct mdci_ent {
  uint64_t addr, size;
  const uint8_t *bytes;
} mdci_ent;

static int ent_cmp(const void *a, const void *b) {
  const mdci_ent *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int bad(h5_file *f, const char *why) {
  return h5_err(f, H5_ECORRUPT, "metadata cache image: %s", why);
}

/* The image block's entries, checked, sorted by address. */
static int entries(h5_file *f, uint64_t baddr, uint64_t blen, mdci_ent **out, uint32_t *nout) {
  const uint8_t *blk = h5_span(f, baddr, blen);
  if (!blk) return bad(f, "its block lies outside the file");
  if (blen < 10 + (uint64_t)f->sl + 4) return bad(f, "its block is too short");
  h5_cur c = h5c_make(blk, (size_t)blen - 4);
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c), flags = h5c_u8(&c);
  uint64_t len = h5c_len(&c, f);
  uint32_t n = h5c_u32(&c);
  if (c.bad || memcmp(sig, "MDCI", 4)) return bad(f, "no MDCI signature");
  if (version != 0)
    return h5_err(f, H5_EUNSUPPORTED, "metadata cache image block version %d", version);
  if (flags & 1)
    return h5_err(f, H5_EUNSUPPORTED,
                  "metadata cache image with a resize status (libhdf5 reads none)");
  if (len != blen) return bad(f, "the block's length differs from the message's");
  if (util_get_le(blk + blen - 4, 4) != h5_lookup3(blk, (size_t)blen - 4, 0))
    return bad(f, "checksum mismatch");
  uint64_t fixed = 14 + (uint64_t)f->so + (uint64_t)f->sl;
  if (n == 0 || n > h5c_left(&c) / fixed) return bad(f, "a bad number of entries");
  mdci_ent *e = calloc(n, sizeof *e);
  if (!e) return h5_err(f, H5_ENOMEM, "out of memory");
  int rc = H5_OK;
  for (uint32_t i = 0; i < n && rc == H5_OK; i++) {
    int type = h5c_u8(&c);
    h5c_skip(&c, 1); /* flags */
    int ring = h5c_u8(&c);
    h5c_skip(&c, 1 + 2 + 2); /* age, children, dirty children */
    uint16_t parents = h5c_u16(&c);
    h5c_skip(&c, 4); /* LRU rank */
    e[i].addr = h5c_addr(&c, f);
    e[i].size = h5c_len(&c, f);
    h5c_skip(&c, (size_t)parents * (size_t)f->so);
    if (c.bad) {
      rc = bad(f, "an entry runs past the block");
      break;
    }
    if (type > 24 || ring < 1 || ring > 3) rc = bad(f, "an entry of an unknown type or ring");
    else if (e[i].addr == H5_UNDEF_ADDR || !e[i].size || e[i].size > H5_MDCI_MAX_ENTRY)
      rc = bad(f, "an entry with no address or a bad size");
    else if (!(e[i].bytes = h5c_bytes(&c, (size_t)e[i].size)))
      rc = bad(f, "an entry runs past the block");
    else if (!h5_span(f, e[i].addr, e[i].size))
      rc = bad(f, "an entry's address lies outside the file");
    else if (e[i].addr < baddr + blen && baddr < e[i].addr + e[i].size)
      rc = bad(f, "an entry lies over the image block");
  }
  if (rc == H5_OK && h5c_left(&c)) rc = bad(f, "bytes after the last entry");
  if (rc == H5_OK) {
    qsort(e, n, sizeof *e, ent_cmp);
    for (uint32_t i = 1; i < n && rc == H5_OK; i++)
      if (e[i].addr < e[i - 1].addr + e[i - 1].size) rc = bad(f, "two entries overlap");
  }
  if (rc) {
    free(e);
    return rc;
  }
  *out = e;
  *nout = n;
  return H5_OK;
}

/* Lay the entries over the file's bytes: a mapped file's pages are made
** writable (private: copied on write, the file untouched) while they are
** written, a file image in memory is copied first. */
static int overlay(h5_file *f, const mdci_ent *e, uint32_t n) {
  uint8_t *base;
  if (f->mapped) {
    base = (uint8_t *)f->map;
  } else {
    if (!(f->owned = malloc((size_t)f->size))) return h5_err(f, H5_ENOMEM, "out of memory");
    memcpy(f->owned, f->map, (size_t)f->size);
    f->map = f->owned;
    base = f->owned;
  }
  /* (a file image's entries point into the caller's bytes, unchanged) */
  long pg = sysconf(_SC_PAGESIZE);
  if (pg <= 0) pg = 4096;
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *dst = base + f->base + e[i].addr;
    if (f->mapped) {
      uintptr_t lo = (uintptr_t)dst & ~(uintptr_t)(pg - 1);
      uintptr_t hi = (uintptr_t)dst + (uintptr_t)e[i].size;
      if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE))
        return h5_err(f, H5_EIO, "metadata cache image: cannot lay it over the file");
      memmove(dst, e[i].bytes, (size_t)e[i].size);
      mprotect((void *)lo, hi - lo, PROT_READ);
    } else {
      memmove(dst, e[i].bytes, (size_t)e[i].size);
    }
  }
  return H5_OK;
}

int h5_mdci_load(h5_file *f) {
  if (f->ext_addr == H5_UNDEF_ADDR) return H5_OK;
  h5_ohdr h;
  int rc = h5_ohdr_read(f, f->ext_addr, &h);
  if (rc) return H5_OK; /* the extension is read (and its errors reported) where used */
  const h5_msg *m = h5_ohdr_find(&h, H5_MSG_MDCI);
  uint64_t baddr = H5_UNDEF_ADDR, blen = 0;
  if (m) {
    h5_cur c = h5c_make(m->data, m->size);
    int version = h5c_u8(&c);
    baddr = h5c_addr(&c, f);
    blen = h5c_len(&c, f);
    if (c.bad) rc = bad(f, "its message is truncated");
    else if (version != 0)
      rc = h5_err(f, H5_EUNSUPPORTED, "metadata cache image message version %d", version);
  }
  h5_ohdr_free(&h);
  if (rc || !m || baddr == H5_UNDEF_ADDR) return rc;
  mdci_ent *e = NULL;
  uint32_t n = 0;
  if ((rc = entries(f, baddr, blen, &e, &n)) != H5_OK) return rc;
  rc = overlay(f, e, n);
  f->overlaid = rc == H5_OK;
  free(e);
  return rc;
}
