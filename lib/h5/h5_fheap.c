/*
** lib/h5/h5_fheap.c - fractal heaps: a header ("FRHP"), direct blocks
** ("FHDB") holding the objects, and indirect blocks ("FHIB") arranged as a
** doubling table over the heap's linear address space.
**
** A heap ID names an object in one of three ways (ID type in bits 4-5 of its
** first byte):
**   managed (0): offset in the heap's address space and length; the offset
**                leads through the doubling table to a direct block;
**   huge (1):    stored on its own in the file, either at an address and
**                length held in the ID ("directly accessed") or found by a
**                key in the heap's v2 B-tree of huge objects;
**   tiny (2):    the data is in the ID itself.
** Direct blocks and huge objects may pass through an I/O filter pipeline
** (deflate, shuffle and fletcher32 are undone here).
**
** A handle caches what it decoded: direct blocks (verified, and inflated
** when filtered), filtered huge objects, and the index of the huge object
** B-tree.  So the data h5_fheap_get returns stays valid until the handle is
** closed, and reading every object of a heap reads each block once.
** Memory is bounded by the file: unfiltered blocks and objects are read in
** place from the map, an inflated block or object is at most FH_MAX_BLOCK
** bytes and at most 1032 times (deflate's limit) its stored size.
*/
#include "config.h"

#include <zlib.h>

#include "h5_int.h"

#define FH_MAX_FILTERS 32                 /* as libhdf5 */
#define FH_MAX_BLOCK (UINT64_C(1) << 31) /* largest direct or filtered object */
#define FH_MAX_ROWS 64                    /* rows of a table of 64-bit offsets */

typedef struct fh_filter {
  uint16_t id;
  uint32_t cd0; /* the first client data value (shuffle: element size) */
} fh_filter;

/* A direct block, checked and (when filtered) inflated. */
typedef struct fh_block {
  const uint8_t *data; /* the block: into the map, or buf */
  uint8_t *buf;        /* malloc'd when filtered */
} fh_block;

/* A filtered huge object, inflated. */
typedef struct fh_obj {
  uint8_t *buf;
  size_t len;
} fh_obj;

/* One record of the huge object B-tree (indirectly accessed objects). */
typedef struct fh_huge {
  uint64_t id, addr, len, size;
  uint32_t mask;
} fh_huge;

struct h5_fheap {
  h5_file *f;
  uint64_t addr;
  uint16_t id_len;
  uint16_t filter_len; /* nonzero: blocks and huge objects are filtered */
  int checksum_dblocks;
  uint32_t max_man;
  uint64_t huge_bt2;
  uint16_t width;
  uint64_t start_block, max_direct;
  uint16_t max_bits; /* log2 of the heap's maximum size */
  uint64_t root;
  uint16_t root_rows;
  uint64_t root_fsize; /* filtered root direct block: its size and mask */
  uint32_t root_mask;
  int nfilters;
  fh_filter filters[FH_MAX_FILTERS];
  /* derived */
  int off_size, len_size;        /* widths of a managed ID's fields */
  unsigned start_bits, first_row_bits, max_direct_rows, max_root_rows;
  uint64_t row_size[FH_MAX_ROWS + 1], row_off[FH_MAX_ROWS + 1];
  size_t dblock_prefix;          /* bytes before a direct block's objects */
  int huge_direct;               /* huge IDs hold address and length */
  int huge_id_size;              /* otherwise: bytes of the B-tree key */
  int tiny_extended;             /* tiny IDs use a 12-bit length */
  /* caches */
  h5_amap blocks;                /* fh_block *, by direct block address */
  h5_amap iblocks_ok;            /* indirect blocks whose checksum matched */
  h5_amap huge_objs;             /* fh_obj *, by address (filtered huge) */
  fh_huge *huge;                 /* the huge object index, sorted by id */
  size_t nhuge;
  int huge_loaded;
};

static int is_pow2(uint64_t n) { return n && !(n & (n - 1)); }

/* ---- I/O filters -------------------------------------------------------- */

/* Decode a filter pipeline message (versions 1 and 2) into h->filters. */
static int parse_pipeline(h5_fheap *h, const uint8_t *p, size_t len) {
  h5_file *f = h->f;
  h5_cur c = h5c_make(p, len);
  int version = h5c_u8(&c);
  int n = h5c_u8(&c);
  if (version == 1) h5c_skip(&c, 6);
  if (c.bad || (version != 1 && version != 2))
    return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: bad filter pipeline",
                  (unsigned long long)h->addr);
  if (n > FH_MAX_FILTERS)
    return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: %d filters",
                  (unsigned long long)h->addr, n);
  for (int i = 0; i < n; i++) {
    fh_filter *fl = &h->filters[i];
    fl->id = h5c_u16(&c);
    uint16_t nlen = 0;
    if (version == 1 || fl->id >= 256) nlen = h5c_u16(&c);
    (void)h5c_u16(&c); /* flags */
    uint16_t ncd = h5c_u16(&c);
    if (version == 1)
      h5c_skip(&c, ((size_t)nlen + 7) & ~(size_t)7);
    else
      h5c_skip(&c, nlen);
    fl->cd0 = ncd ? h5c_u32(&c) : 0;
    if (ncd > 1) h5c_skip(&c, 4 * ((size_t)ncd - 1));
    if (version == 1 && (ncd & 1)) h5c_skip(&c, 4);
    if (c.bad)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: filter pipeline truncated",
                    (unsigned long long)h->addr);
  }
  h->nfilters = n;
  return H5_OK;
}

/* inflate in[0..inlen) into a buffer of at most cap bytes */
static int fh_inflate(h5_fheap *h, const uint8_t *in, size_t inlen, size_t cap,
                      uint8_t **out, size_t *outlen) {
  h5_file *f = h->f;
  uint8_t *buf = malloc(cap ? cap : 1);
  if (!buf) return h5_err(f, H5_ENOMEM, "out of memory");
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit(&z) != Z_OK) {
    free(buf);
    return h5_err(f, H5_ENOMEM, "fractal heap: zlib initialisation failed");
  }
  z.next_in = (Bytef *)(uintptr_t)in;
  z.next_out = buf;
  /* zlib counts in uInt: feed both sides in pieces of at most 1 GiB */
  size_t in_left = inlen, out_left = cap;
  int zrc;
  do {
    if (z.avail_in == 0 && in_left) {
      z.avail_in = in_left > (1u << 30) ? 1u << 30 : (uInt)in_left;
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0 && out_left) {
      z.avail_out = out_left > (1u << 30) ? 1u << 30 : (uInt)out_left;
      out_left -= z.avail_out;
    }
    zrc = inflate(&z, Z_NO_FLUSH); /* Z_BUF_ERROR: no progress possible */
  } while (zrc == Z_OK);
  out_left += z.avail_out;
  inflateEnd(&z);
  if (zrc != Z_STREAM_END) {
    free(buf);
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: deflated data is corrupt or larger "
                  "than %zu bytes",
                  (unsigned long long)h->addr, cap);
  }
  *out = buf;
  *outlen = cap - out_left;
  return H5_OK;
}

/* Undo the pipeline (filters not skipped by mask, last first) on in[0..inlen);
** the result must be exactly want bytes.  *out is malloc'd. */
static int unfilter(h5_fheap *h, uint32_t mask, const uint8_t *in, size_t inlen,
                    size_t want, uint8_t **out) {
  h5_file *f = h->f;
  uint8_t *cur = NULL; /* owned buffer holding the current stage */
  const uint8_t *data = in;
  size_t len = inlen;
  /* intermediate stages may carry a few bytes more than the result
     (fletcher32's checksum) */
  size_t cap = want + 4 * (size_t)h->nfilters + 64;
  int rc = H5_OK;
  /* deflate expands at most about 1032 times: a larger claim is corrupt,
     and allocating for it would not be bounded by the file */
  if (want / 1032 > inlen + 64)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: %zu bytes claimed from %zu filtered",
                  (unsigned long long)h->addr, want, inlen);
  for (int i = h->nfilters - 1; i >= 0 && rc == H5_OK; i--) {
    if (i < 32 && (mask & (UINT32_C(1) << i))) continue;
    const fh_filter *fl = &h->filters[i];
    uint8_t *next = NULL;
    size_t nlen = 0;
    if (fl->id == 1) { /* deflate */
      rc = fh_inflate(h, data, len, cap, &next, &nlen);
    } else if (fl->id == 2) { /* shuffle */
      size_t esz = fl->cd0;
      next = malloc(len ? len : 1);
      if (!next) {
        rc = h5_err(f, H5_ENOMEM, "out of memory");
      } else {
        nlen = len;
        if (esz <= 1 || len < esz) {
          memcpy(next, data, len);
        } else {
          size_t n = len / esz;
          for (size_t b = 0; b < esz; b++)
            for (size_t e = 0; e < n; e++) next[e * esz + b] = data[b * n + e];
          memcpy(next + n * esz, data + n * esz, len - n * esz);
        }
      }
    } else if (fl->id == 3) { /* fletcher32: a checksum after the data */
      if (len < 4) {
        rc = h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: fletcher32 data too short",
                    (unsigned long long)h->addr);
      } else {
        uint32_t sum = h5_fletcher32(data, len - 4);
        uint32_t stored = (uint32_t)util_get_le(data + len - 4, 4);
        uint32_t swapped = (sum >> 24) | ((sum >> 8) & 0xff00) |
                           ((sum << 8) & 0xff0000) | (sum << 24);
        if (stored != sum && stored != swapped) {
          rc = h5_err(f, H5_ECORRUPT,
                      "fractal heap at %llu: fletcher32 checksum mismatch",
                      (unsigned long long)h->addr);
        } else {
          next = malloc(len - 4 ? len - 4 : 1);
          if (!next)
            rc = h5_err(f, H5_ENOMEM, "out of memory");
          else {
            memcpy(next, data, len - 4);
            nlen = len - 4;
          }
        }
      }
    } else {
      rc = h5_err(f, H5_EUNSUPPORTED,
                  "fractal heap at %llu: I/O filter %u is not supported (only "
                  "deflate, shuffle and fletcher32)",
                  (unsigned long long)h->addr, fl->id);
    }
    if (rc == H5_OK) {
      free(cur);
      cur = next;
      data = next;
      len = nlen;
    }
  }
  if (rc == H5_OK && len != want)
    rc = h5_err(f, H5_ECORRUPT,
                "fractal heap at %llu: filtered object holds %zu bytes, %zu "
                "expected",
                (unsigned long long)h->addr, len, want);
  if (rc == H5_OK && !cur) { /* every filter skipped */
    cur = malloc(want ? want : 1);
    if (!cur) rc = h5_err(f, H5_ENOMEM, "out of memory");
    else memcpy(cur, data, want);
  }
  if (rc != H5_OK) {
    free(cur);
    return rc;
  }
  *out = cur;
  return H5_OK;
}

/* ---- header ------------------------------------------------------------- */

int h5_fheap_open(h5_file *f, uint64_t addr, h5_fheap **out) {
  *out = NULL;
  h5_cur c = h5_cur_at(f, addr);
  const uint8_t *start = c.p;
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c);
  if (c.bad || memcmp(sig, "FRHP", 4) != 0)
    return h5_err(f, H5_ECORRUPT, "no fractal heap header at %llu",
                  (unsigned long long)addr);
  if (version != 0)
    return h5_err(f, H5_EUNSUPPORTED, "fractal heap at %llu: version %d",
                  (unsigned long long)addr, version);
  h5_fheap *h = calloc(1, sizeof *h);
  if (!h) return h5_err(f, H5_ENOMEM, "out of memory");
  h->f = f;
  h->addr = addr;
  h->id_len = h5c_u16(&c);
  h->filter_len = h5c_u16(&c);
  uint8_t flags = h5c_u8(&c);
  h->checksum_dblocks = (flags & 0x02) != 0;
  h->max_man = h5c_u32(&c);
  (void)h5c_len(&c, f); /* next huge object ID */
  h->huge_bt2 = h5c_addr(&c, f);
  (void)h5c_len(&c, f);  /* free space in managed blocks */
  (void)h5c_addr(&c, f); /* free space manager */
  for (int i = 0; i < 8; i++) (void)h5c_len(&c, f); /* statistics */
  h->width = h5c_u16(&c);
  h->start_block = h5c_len(&c, f);
  h->max_direct = h5c_len(&c, f);
  h->max_bits = h5c_u16(&c);
  (void)h5c_u16(&c); /* starting rows of the root indirect block */
  h->root = h5c_addr(&c, f);
  h->root_rows = h5c_u16(&c);
  const uint8_t *pipeline = NULL;
  if (h->filter_len) {
    h->root_fsize = h5c_len(&c, f);
    h->root_mask = h5c_u32(&c);
    pipeline = h5c_bytes(&c, h->filter_len);
  }
  int rc = H5_OK;
  if (c.bad || h5c_left(&c) < 4) {
    rc = h5_err(f, H5_ECORRUPT, "fractal heap at %llu: header truncated",
                (unsigned long long)addr);
    goto fail;
  }
  if (!h5_checksum_ok(start, (size_t)(c.p - start))) {
    rc = h5_err(f, H5_ECORRUPT, "fractal heap at %llu: header checksum mismatch",
                (unsigned long long)addr);
    goto fail;
  }
  if (pipeline && (rc = parse_pipeline(h, pipeline, h->filter_len))) goto fail;
  /* the doubling table */
  if (!is_pow2(h->width) || !is_pow2(h->start_block) ||
      !is_pow2(h->max_direct) || h->max_direct < h->start_block ||
      h->max_bits == 0 || h->max_bits > 64 || h->id_len == 0) {
    rc = h5_err(f, H5_ECORRUPT,
                "fractal heap at %llu: bad doubling table (width %u, blocks "
                "%llu to %llu, %u bits)",
                (unsigned long long)addr, h->width,
                (unsigned long long)h->start_block,
                (unsigned long long)h->max_direct, h->max_bits);
    goto fail;
  }
  if (h->max_direct > FH_MAX_BLOCK) {
    rc = h5_err(f, H5_EUNSUPPORTED,
                "fractal heap at %llu: direct blocks of %llu bytes",
                (unsigned long long)addr, (unsigned long long)h->max_direct);
    goto fail;
  }
  h->start_bits = h5_log2_floor(h->start_block);
  h->first_row_bits = h->start_bits + h5_log2_floor(h->width);
  unsigned max_direct_bits = h5_log2_floor(h->max_direct);
  h->max_direct_rows = max_direct_bits - h->start_bits + 2;
  if (h->first_row_bits > h->max_bits || max_direct_bits > h->max_bits) {
    rc = h5_err(f, H5_ECORRUPT,
                "fractal heap at %llu: blocks larger than the heap (%u bits)",
                (unsigned long long)addr, h->max_bits);
    goto fail;
  }
  h->max_root_rows = h->max_bits - h->first_row_bits + 1;
  if (h->root_rows > h->max_root_rows) {
    rc = h5_err(f, H5_ECORRUPT,
                "fractal heap at %llu: root indirect block of %u rows (at most "
                "%u)",
                (unsigned long long)addr, h->root_rows, h->max_root_rows);
    goto fail;
  }
  /* rows r >= 1 hold blocks of start << (r-1) at start*width << (r-1);
     with max_bits <= 64 neither overflows */
  h->row_size[0] = h->start_block;
  h->row_off[0] = 0;
  for (unsigned r = 1; r < h->max_root_rows && r <= FH_MAX_ROWS; r++) {
    h->row_size[r] = h->start_block << (r - 1);
    h->row_off[r] = (h->start_block * h->width) << (r - 1);
  }
  h->off_size = (h->max_bits + 7) / 8;
  int dir_off = ((int)max_direct_bits + 7) / 8;
  int man_len = (int)h5_log2_floor(h->max_man) / 8 + 1;
  h->len_size = dir_off < man_len ? dir_off : man_len;
  h->dblock_prefix = 5 + (size_t)f->so + (size_t)h->off_size +
                     (h->checksum_dblocks ? 4 : 0);
  if (h->dblock_prefix >= h->start_block) {
    rc = h5_err(f, H5_ECORRUPT,
                "fractal heap at %llu: direct blocks of %llu bytes cannot hold "
                "their header",
                (unsigned long long)addr, (unsigned long long)h->start_block);
    goto fail;
  }
  /* huge objects: directly accessed when the ID can hold where they are */
  size_t direct_len = (size_t)f->so + (size_t)f->sl +
                      (h->filter_len ? 4 + (size_t)f->sl : 0);
  h->huge_direct = (size_t)h->id_len - 1 >= direct_len;
  h->huge_id_size = h->id_len - 1 < 8 ? h->id_len - 1 : 8;
  /* tiny objects: a 4-bit length, or 12 bits in IDs of more than 18 bytes */
  h->tiny_extended = h->id_len - 1 > 17;
  *out = h;
  return H5_OK;
fail:
  h5_fheap_close(h);
  return rc;
}

void h5_fheap_close(h5_fheap *h) {
  if (!h) return;
  for (size_t i = 0; i < h->blocks.cap; i++)
    if (h->blocks.val[i]) {
      fh_block *b = h->blocks.val[i];
      free(b->buf);
      free(b);
    }
  h5_amap_free(&h->blocks);
  h5_amap_free(&h->iblocks_ok);
  for (size_t i = 0; i < h->huge_objs.cap; i++)
    if (h->huge_objs.val[i]) {
      fh_obj *o = h->huge_objs.val[i];
      free(o->buf);
      free(o);
    }
  h5_amap_free(&h->huge_objs);
  free(h->huge);
  free(h);
}

/* ---- managed objects ------------------------------------------------------ */

/* The direct block at addr: size bytes at heap offset block_off, stored in
** fsize bytes with filter mask mask when the heap is filtered. */
static int load_dblock(h5_fheap *h, uint64_t addr, uint64_t size,
                       uint64_t block_off, uint64_t fsize, uint32_t mask,
                       const uint8_t **out) {
  h5_file *f = h->f;
  fh_block *b = h5_amap_get(&h->blocks, addr);
  if (b) {
    *out = b->data;
    return H5_OK;
  }
  b = calloc(1, sizeof *b);
  if (!b) return h5_err(f, H5_ENOMEM, "out of memory");
  int rc = H5_OK;
  if (h->filter_len) {
    const uint8_t *raw = h5_span(f, addr, fsize);
    if (!raw || fsize == 0)
      rc = h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: direct block at %llu outside the file",
                  (unsigned long long)h->addr, (unsigned long long)addr);
    else
      rc = unfilter(h, mask, raw, (size_t)fsize, (size_t)size, &b->buf);
    b->data = b->buf;
  } else {
    b->data = h5_span(f, addr, size);
    if (!b->data)
      rc = h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: direct block at %llu outside the file",
                  (unsigned long long)h->addr, (unsigned long long)addr);
  }
  if (rc == H5_OK) {
    h5_cur c = h5c_make(b->data, (size_t)size);
    const uint8_t *sig = h5c_bytes(&c, 4);
    int version = h5c_u8(&c);
    uint64_t heap = h5c_addr(&c, f);
    uint64_t off = h5c_uint(&c, h->off_size);
    if (c.bad || memcmp(sig, "FHDB", 4) != 0 || version != 0 || heap != h->addr)
      rc = h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: no direct block of it at %llu",
                  (unsigned long long)h->addr, (unsigned long long)addr);
    else if (off != block_off)
      rc = h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: direct block at %llu is for offset "
                  "%llu, not %llu",
                  (unsigned long long)h->addr, (unsigned long long)addr,
                  (unsigned long long)off, (unsigned long long)block_off);
  }
  if (rc == H5_OK && h->checksum_dblocks) {
    /* lookup3 over the whole block with its checksum field zeroed */
    size_t at = h->dblock_prefix - 4;
    uint32_t stored = (uint32_t)util_get_le(b->data + at, 4);
    uint8_t *copy = b->buf ? b->buf : malloc((size_t)size);
    if (!copy) {
      rc = h5_err(f, H5_ENOMEM, "out of memory");
    } else {
      if (copy != b->buf) memcpy(copy, b->data, (size_t)size);
      memset(copy + at, 0, 4);
      uint32_t sum = h5_lookup3(copy, (size_t)size, 0);
      if (copy == b->buf)
        memcpy(copy + at, (uint8_t[4]){(uint8_t)stored, (uint8_t)(stored >> 8),
                                       (uint8_t)(stored >> 16),
                                       (uint8_t)(stored >> 24)},
               4);
      else
        free(copy);
      if (sum != stored)
        rc = h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: direct block at %llu: checksum "
                    "mismatch",
                    (unsigned long long)h->addr, (unsigned long long)addr);
    }
  }
  if (rc == H5_OK && h5_amap_put(&h->blocks, addr, b))
    rc = h5_err(f, H5_ENOMEM, "out of memory");
  if (rc != H5_OK) {
    free(b->buf);
    free(b);
    return rc;
  }
  *out = b->data;
  return H5_OK;
}

/* Find the direct block holding heap offset off, through the indirect
** blocks from the root.  Sets its address, size, heap offset, and its
** filtered size and mask. */
static int locate(h5_fheap *h, uint64_t off, uint64_t *addr, uint64_t *size,
                  uint64_t *block_off, uint64_t *fsize, uint32_t *mask) {
  h5_file *f = h->f;
  uint64_t ib_addr = h->root, ib_off = 0;
  unsigned nrows = h->root_rows;
  size_t dir_entry = (size_t)f->so + (h->filter_len ? (size_t)f->sl + 4 : 0);
  for (;;) {
    /* row and column of off in this block */
    uint64_t rel = off - ib_off;
    unsigned row;
    uint64_t col;
    if (rel < h->start_block * h->width) {
      row = 0;
      col = rel / h->start_block;
    } else {
      unsigned high = h5_log2_floor(rel);
      row = high - h->first_row_bits + 1;
      col = row < nrows ? (rel - (UINT64_C(1) << high)) / h->row_size[row] : 0;
    }
    if (row >= nrows)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: offset %llu beyond its indirect "
                    "block at %llu",
                    (unsigned long long)h->addr, (unsigned long long)off,
                    (unsigned long long)ib_addr);
    /* the indirect block */
    unsigned drows = nrows < h->max_direct_rows ? nrows : h->max_direct_rows;
    uint64_t ndir = (uint64_t)drows * h->width;
    uint64_t nind = (uint64_t)(nrows - drows) * h->width;
    uint64_t ib_size = 5 + (uint64_t)f->so + (uint64_t)h->off_size +
                       ndir * dir_entry + nind * (uint64_t)f->so + 4;
    const uint8_t *p = h5_span(f, ib_addr, ib_size);
    if (!p)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: indirect block at %llu outside the "
                    "file",
                    (unsigned long long)h->addr, (unsigned long long)ib_addr);
    h5_cur c = h5c_make(p, (size_t)ib_size);
    const uint8_t *sig = h5c_bytes(&c, 4);
    int version = h5c_u8(&c);
    uint64_t heap = h5c_addr(&c, f);
    uint64_t stored_off = h5c_uint(&c, h->off_size);
    if (memcmp(sig, "FHIB", 4) != 0 || version != 0 || heap != h->addr ||
        stored_off != ib_off)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: no indirect block of it (for offset "
                    "%llu) at %llu",
                    (unsigned long long)h->addr, (unsigned long long)ib_off,
                    (unsigned long long)ib_addr);
    if (!h5_amap_get(&h->iblocks_ok, ib_addr)) {
      if (!h5_checksum_ok(p, (size_t)ib_size - 4))
        return h5_err(f, H5_ECORRUPT,
                      "fractal heap at %llu: indirect block at %llu: checksum "
                      "mismatch",
                      (unsigned long long)h->addr, (unsigned long long)ib_addr);
      if (h5_amap_put(&h->iblocks_ok, ib_addr, (void *)1))
        return h5_err(f, H5_ENOMEM, "out of memory");
    }
    uint64_t entry = (uint64_t)row * h->width + col;
    uint64_t child_off = ib_off + h->row_off[row] + col * h->row_size[row];
    if (row < h->max_direct_rows) {
      h5c_skip(&c, (size_t)(entry * dir_entry));
      *addr = h5c_addr(&c, f);
      *fsize = h->filter_len ? h5c_len(&c, f) : 0;
      *mask = h->filter_len ? h5c_u32(&c) : 0;
      *size = h->row_size[row];
      *block_off = child_off;
      if (*addr == H5_UNDEF_ADDR)
        return h5_err(f, H5_ECORRUPT,
                      "fractal heap at %llu: offset %llu is in a direct block "
                      "never allocated",
                      (unsigned long long)h->addr, (unsigned long long)off);
      return H5_OK;
    }
    h5c_skip(&c, (size_t)(ndir * dir_entry + (entry - ndir) * (uint64_t)f->so));
    uint64_t child = h5c_addr(&c, f);
    int child_rows = (int)h5_log2_floor(h->row_size[row]) - (int)h->first_row_bits + 1;
    if (child == H5_UNDEF_ADDR)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: offset %llu is in an indirect block "
                    "never allocated",
                    (unsigned long long)h->addr, (unsigned long long)off);
    /* rows shrink going down, so this loop ends */
    if (child_rows < 1 || (unsigned)child_rows >= nrows)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: indirect block of %d rows under one "
                    "of %u",
                    (unsigned long long)h->addr, child_rows, nrows);
    ib_addr = child;
    ib_off = child_off;
    nrows = (unsigned)child_rows;
  }
}

static int get_managed(h5_fheap *h, const uint8_t *id, size_t idlen,
                       const uint8_t **data, size_t *len) {
  h5_file *f = h->f;
  if (idlen < 1 + (size_t)h->off_size + (size_t)h->len_size)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: managed object ID of %zu bytes",
                  (unsigned long long)h->addr, idlen);
  uint64_t off = util_get_le(id + 1, h->off_size);
  uint64_t olen = util_get_le(id + 1 + h->off_size, h->len_size);
  if (off == 0 || olen == 0 || olen > h->max_direct || olen > h->max_man ||
      (h->max_bits < 64 && off >= (UINT64_C(1) << h->max_bits)))
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: bad managed object (offset %llu, "
                  "length %llu)",
                  (unsigned long long)h->addr, (unsigned long long)off,
                  (unsigned long long)olen);
  if (h->root == H5_UNDEF_ADDR)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: object at offset %llu in an empty heap",
                  (unsigned long long)h->addr, (unsigned long long)off);
  uint64_t baddr = 0, bsize = 0, boff = 0, fsize = 0;
  uint32_t mask = 0;
  if (h->root_rows == 0) { /* the root is a direct block */
    baddr = h->root;
    bsize = h->start_block;
    boff = 0;
    fsize = h->root_fsize;
    mask = h->root_mask;
  } else {
    int rc = locate(h, off, &baddr, &bsize, &boff, &fsize, &mask);
    if (rc) return rc;
  }
  uint64_t in = off - boff;
  if (off < boff || in < h->dblock_prefix || in > bsize || olen > bsize - in)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: object (offset %llu, length %llu) not "
                  "inside its direct block",
                  (unsigned long long)h->addr, (unsigned long long)off,
                  (unsigned long long)olen);
  const uint8_t *block = NULL;
  int rc = load_dblock(h, baddr, bsize, boff, fsize, mask, &block);
  if (rc) return rc;
  *data = block + in;
  *len = (size_t)olen;
  return H5_OK;
}

/* ---- huge objects --------------------------------------------------------- */

typedef struct huge_load {
  h5_fheap *h;
  size_t cap;
} huge_load;

static int huge_record(void *ctx, const uint8_t *rec, size_t len) {
  huge_load *l = ctx;
  h5_fheap *h = l->h;
  h5_file *f = h->f;
  size_t want = (size_t)f->so + 2 * (size_t)f->sl +
                (h->filter_len ? 4 + (size_t)f->sl : 0);
  if (len != want)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: huge object records of %zu bytes, not "
                  "%zu",
                  (unsigned long long)h->addr, len, want);
  if (h->nhuge == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 16;
    fh_huge *nv = realloc(h->huge, ncap * sizeof *nv);
    if (!nv) return h5_err(f, H5_ENOMEM, "out of memory");
    h->huge = nv;
    l->cap = ncap;
  }
  fh_huge *r = &h->huge[h->nhuge++];
  h5_cur c = h5c_make(rec, len);
  r->addr = h5c_addr(&c, f);
  r->len = h5c_len(&c, f);
  r->mask = h->filter_len ? h5c_u32(&c) : 0;
  r->size = h->filter_len ? h5c_len(&c, f) : r->len;
  r->id = h5c_len(&c, f);
  return H5_OK;
}

static int by_id(const void *a, const void *b) {
  uint64_t x = ((const fh_huge *)a)->id, y = ((const fh_huge *)b)->id;
  return x < y ? -1 : x > y;
}

static uint64_t huge_id_at(const void *ctx, size_t i) {
  return ((const h5_fheap *)ctx)->huge[i].id;
}

/* The bytes of a huge object: addr/len in the file, filtered or not. */
static int huge_data(h5_fheap *h, uint64_t addr, uint64_t len, int filtered,
                     uint32_t mask, uint64_t size, const uint8_t **data,
                     size_t *olen) {
  h5_file *f = h->f;
  const uint8_t *p = h5_span(f, addr, len);
  if (!p)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: huge object at %llu (%llu bytes) "
                  "outside the file",
                  (unsigned long long)h->addr, (unsigned long long)addr,
                  (unsigned long long)len);
  if (!filtered) {
    *data = p;
    *olen = (size_t)len;
    return H5_OK;
  }
  fh_obj *o = h5_amap_get(&h->huge_objs, addr);
  if (!o) {
    if (size > FH_MAX_BLOCK)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: huge object of %llu bytes stored in "
                    "%llu",
                    (unsigned long long)h->addr, (unsigned long long)size,
                    (unsigned long long)len);
    o = calloc(1, sizeof *o);
    if (!o) return h5_err(f, H5_ENOMEM, "out of memory");
    int rc = unfilter(h, mask, p, (size_t)len, (size_t)size, &o->buf);
    if (rc == H5_OK && h5_amap_put(&h->huge_objs, addr, o))
      rc = h5_err(f, H5_ENOMEM, "out of memory");
    if (rc) {
      free(o->buf);
      free(o);
      return rc;
    }
    o->len = (size_t)size;
  }
  *data = o->buf;
  *olen = o->len;
  return H5_OK;
}

static int get_huge(h5_fheap *h, const uint8_t *id, size_t idlen,
                    const uint8_t **data, size_t *len) {
  h5_file *f = h->f;
  int filtered = h->filter_len > 0;
  if (h->huge_direct) {
    h5_cur c = h5c_make(id + 1, idlen - 1);
    uint64_t addr = h5c_addr(&c, f);
    uint64_t flen = h5c_len(&c, f);
    uint32_t mask = filtered ? h5c_u32(&c) : 0;
    uint64_t size = filtered ? h5c_len(&c, f) : flen;
    if (c.bad)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: huge object ID of %zu bytes",
                    (unsigned long long)h->addr, idlen);
    return huge_data(h, addr, flen, filtered, mask, size, data, len);
  }
  if (idlen < 1 + (size_t)h->huge_id_size)
    return h5_err(f, H5_ECORRUPT,
                  "fractal heap at %llu: huge object ID of %zu bytes",
                  (unsigned long long)h->addr, idlen);
  uint64_t key = util_get_le(id + 1, h->huge_id_size);
  if (!h->huge_loaded) {
    if (h->huge_bt2 == H5_UNDEF_ADDR)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: huge object %llu but no huge object "
                    "B-tree",
                    (unsigned long long)h->addr, (unsigned long long)key);
    huge_load l = {h, 0};
    int rc = h5_bt2_iter(f, h->huge_bt2, huge_record, &l);
    if (rc) {
      free(h->huge);
      h->huge = NULL;
      h->nhuge = 0;
      return rc;
    }
    qsort(h->huge, h->nhuge, sizeof *h->huge, by_id);
    h->huge_loaded = 1;
  }
  size_t lo = h5_lower_bound(h->nhuge, huge_id_at, h, key);
  if (lo == h->nhuge || h->huge[lo].id != key)
    return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: no huge object %llu",
                  (unsigned long long)h->addr, (unsigned long long)key);
  const fh_huge *r = &h->huge[lo];
  return huge_data(h, r->addr, r->len, filtered, r->mask, r->size, data, len);
}

/* ---- lookup ----------------------------------------------------------------- */

int h5_fheap_get(h5_fheap *h, const uint8_t *id, size_t idlen,
                 const uint8_t **data, size_t *len) {
  h5_file *f = h->f;
  *data = NULL;
  *len = 0;
  if (idlen == 0)
    return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: empty heap ID",
                  (unsigned long long)h->addr);
  if (idlen > h->id_len) idlen = h->id_len; /* bytes past the heap's IDs */
  int version = id[0] >> 6, type = (id[0] >> 4) & 3;
  if (version != 0)
    return h5_err(f, H5_EUNSUPPORTED,
                  "fractal heap at %llu: heap ID version %d",
                  (unsigned long long)h->addr, version);
  switch (type) {
  case 0:
    return get_managed(h, id, idlen, data, len);
  case 1:
    return get_huge(h, id, idlen, data, len);
  case 2: {
    size_t n, skip;
    if (h->tiny_extended) {
      if (idlen < 2)
        return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: tiny object ID truncated",
                      (unsigned long long)h->addr);
      n = ((size_t)(id[0] & 0x0f) << 8 | id[1]) + 1;
      skip = 2;
    } else {
      n = (size_t)(id[0] & 0x0f) + 1;
      skip = 1;
    }
    if (n > idlen - skip)
      return h5_err(f, H5_ECORRUPT,
                    "fractal heap at %llu: tiny object of %zu bytes in an ID of "
                    "%zu",
                    (unsigned long long)h->addr, n, idlen);
    *data = id + skip;
    *len = n;
    return H5_OK;
  }
  default:
    return h5_err(f, H5_ECORRUPT, "fractal heap at %llu: heap ID of type 3",
                  (unsigned long long)h->addr);
  }
}
