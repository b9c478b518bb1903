/*
** lib/h5/h5_wdense.c - the writer's dense storage of links and attributes,
** as libhdf5 1.8 and later write it once a group has more than 8 links or
** an object more than 8 attributes (or one too large for a header message):
**
**   a fractal heap ("FRHP") holding the encoded link or attribute messages
**     in direct blocks ("FHDB", checksummed), under indirect blocks ("FHIB")
**     once they do not fit one root direct block; messages larger than the
**     heap's managed object limit (4 KiB) are "huge" objects, stored on
**     their own and found through a v2 B-tree of type 1 by a heap-assigned
**     ID;
**   a v2 B-tree ("BTHD", "BTIN", "BTLF") indexing them by the lookup3 hash
**     of the name (type 5 records for links: hash, heap ID; type 8 for
**     attributes: heap ID, message flags, creation order, hash), sorted by
**     hash, then name, as libhdf5 compares them.
**
** The heap parameters are libhdf5's (H5Gdense.c for links, H5Opkg.h's
** H5O_FHEAP_* for attributes): table width 4, starting block 512 (links) or
** 1024 (attributes) bytes, direct blocks up to 64 KiB, a heap of 2^32
** (links) or 2^40 (attributes) bytes, so heap IDs of 7 and 8 bytes (a flag
** byte, the offset, a 2-byte length); managed objects up to 4 KiB.  B-tree
** nodes are 512 bytes, split 100 %, merge 40 %, as libhdf5 creates them.
**
** Everything is built in memory and written at once, children before
** parents: huge objects, direct blocks (in heap offset order), indirect
** blocks, the huge object B-tree, the heap header (its space set aside
** first: every block names it), then the name index bottom-up.  Objects go
** to the first of the last few direct blocks with room, else to a new block
** at the heap's allocation point, which skips (leaves unallocated) blocks
** too small for the object, as libhdf5 does.  No free-space manager is
** written: libhdf5 does not need one to read, and builds a new one if it
** ever modifies the heap.  The header's statistics follow libhdf5's
** accounting (free space counts every direct block the root covers).
*/
#include "config.h"

#include "h5_int.h"

#define WD_SO 8                /* the writer's sizes of offsets and lengths */
#define WD_BT2_NODE 512        /* v2 B-tree node size, as libhdf5's indexes */
#define WD_BT2_SPLIT 100
#define WD_BT2_MERGE 40
#define WD_BT2_MAX_DEPTH 32
#define WD_MAX_ROWS 64
#define WD_RECENT 8            /* direct blocks tried before a new one */
#define WD_HDR_SIZE 146        /* heap header with 8-byte fields, no filters */
#define WD_START_ROOT_ROWS 1

enum { BT2_HUGE_INDIR = 1, BT2_LINK_NAME = 5, BT2_ATTR_NAME = 8 };

typedef struct wd_params {
  uint16_t id_len;
  uint16_t width;
  uint64_t start_block, max_direct;
  uint16_t max_bits; /* log2 of the maximum heap size */
  uint32_t max_man;  /* largest managed object */
} wd_params;

static const wd_params LINK_HEAP = {7, 4, 512, 65536, 32, 4096};
static const wd_params ATTR_HEAP = {8, 4, 1024, 65536, 40, 4096};


/* ---- v2 B-trees ---------------------------------------------------------- */

typedef struct bt2w {
  h5w *w;
  int type;
  uint16_t rec_size;
  int depth;
  h5_bt2_geom g;                            /* the shape, as the reader sees it */
} bt2w;

/* The shallowest tree whose root can hold n records below it, with the
** capacities and count widths the reader derives (h5_bt2_geometry); sets
** b->depth. */
static int bt2_levels(bt2w *b, uint64_t n) {
  for (int d = 0;; d++) {
    if (d > WD_BT2_MAX_DEPTH)
      return h5w_err(b->w, H5_EUNSUPPORTED, "v2 B-tree of %llu records too deep",
                     (unsigned long long)n);
    if (h5_bt2_geometry(WD_BT2_NODE, b->rec_size, WD_SO, d, &b->g) || b->g.max[d] < 2)
      return h5w_err(b->w, H5_EINVAL, "v2 B-tree records too large");
    if (b->g.cum[d] >= n) {
      b->depth = d;
      return H5_OK;
    }
  }
}

/* Write the subtree at depth d holding the n records at recs (n >= 1);
** *addr gets its node's address, *nrec the records in that node. */
static int bt2_node(bt2w *b, const uint8_t *recs, uint64_t n, int d,
                    uint64_t *addr, uint64_t *nrec) {
  size_t rs = b->rec_size;
  uint8_t *node = calloc(1, WD_BT2_NODE);
  if (!node) return h5w_err(b->w, H5_ENOMEM, "out of memory");
  memcpy(node, d ? "BTIN" : "BTLF", 4);
  node[4] = 0;
  node[5] = (uint8_t)b->type;
  size_t used = 6;
  int rc = H5_OK;
  if (d == 0) {
    if (n == 0 || n > b->g.max[0]) {
      rc = h5w_err(b->w, H5_EINVAL, "v2 B-tree leaf of %llu records", (unsigned long long)n);
    } else {
      memcpy(node + used, recs, (size_t)n * rs);
      used += (size_t)n * rs;
      *nrec = n;
    }
  } else {
    /* the fewest children that hold n records with one record between
       each pair, the records shared out evenly */
    uint64_t sub = b->g.cum[d - 1];
    uint64_t k = n / (sub + 1) + 1;
    if (k < 2) k = 2;
    if (k > b->g.max[d] + 1 || n < 2 * k - 1) {
      rc = h5w_err(b->w, H5_EINVAL, "v2 B-tree node of %llu records at depth %d",
                   (unsigned long long)n, d);
    } else {
      uint64_t c = n - (k - 1), base = c / k, extra = c % k;
      size_t ptr = WD_SO + (size_t)b->g.nw + (d > 1 ? (size_t)b->g.tw[d - 1] : 0);
      uint8_t *rp = node + used, *pp = node + used + (size_t)(k - 1) * rs;
      const uint8_t *p = recs;
      for (uint64_t i = 0; rc == H5_OK && i < k; i++) {
        uint64_t m = base + (i < extra), caddr = 0, cn = 0;
        rc = bt2_node(b, p, m, d - 1, &caddr, &cn);
        if (rc) break;
        p += m * rs;
        util_put_le(pp, caddr, WD_SO);
        util_put_le(pp + WD_SO, cn, b->g.nw);
        if (d > 1) util_put_le(pp + WD_SO + b->g.nw, m, b->g.tw[d - 1]);
        pp += ptr;
        if (i + 1 < k) {
          memcpy(rp, p, rs);
          rp += rs;
          p += rs;
        }
      }
      used = (size_t)(pp - node);
      *nrec = k - 1;
    }
  }
  if (rc == H5_OK) {
    util_put_le(node + used, h5_lookup3(node, used, 0), 4);
    rc = h5w_file_append(b->w, node, WD_BT2_NODE, addr);
  }
  free(node);
  return rc;
}

/* Write a v2 B-tree of type `type` holding the n records (rec_size bytes
** each, in key order) at recs; *addr gets its header's address. */
static int bt2_write(h5w *w, int type, uint16_t rec_size, const uint8_t *recs,
                     uint64_t n, uint64_t *addr) {
  bt2w b;
  memset(&b, 0, sizeof b);
  b.w = w;
  b.type = type;
  b.rec_size = rec_size;
  int rc = bt2_levels(&b, n);
  uint64_t root = H5_UNDEF_ADDR, root_nrec = 0;
  if (rc == H5_OK && n) rc = bt2_node(&b, recs, n, b.depth, &root, &root_nrec);
  if (rc) return rc;
  uint8_t h[38], *p = h;
  memcpy(p, "BTHD", 4);
  p[4] = 0;
  p[5] = (uint8_t)type;
  util_put_le(p + 6, WD_BT2_NODE, 4);
  util_put_le(p + 10, rec_size, 2);
  util_put_le(p + 12, n ? (uint64_t)b.depth : 0, 2);
  p[14] = WD_BT2_SPLIT;
  p[15] = WD_BT2_MERGE;
  util_put_le(p + 16, root, WD_SO);
  util_put_le(p + 24, root_nrec, 2);
  util_put_le(p + 26, n, WD_SO);
  util_put_le(p + 34, h5_lookup3(h, 34, 0), 4);
  return h5w_file_append(w, h, sizeof h, addr);
}

/* ---- fractal heaps -------------------------------------------------------- */

typedef struct wd_block {
  uint64_t off, size, used; /* used: bytes from the block's start */
  uint64_t addr;
  uint8_t *buf;
} wd_block;

typedef struct wd_heap {
  h5w *w;
  const wd_params *p;
  uint64_t addr; /* the header, set aside first */
  unsigned first_row_bits, max_direct_rows, max_root_rows;
  int off_size, len_size;
  size_t prefix; /* a direct block's header, checksum included */
  uint64_t row_size[WD_MAX_ROWS + 1], row_off[WD_MAX_ROWS + 1];
  wd_block *blk;
  size_t nblk, capblk;
  uint64_t next_off; /* where the next direct block goes */
  uint8_t *huge;     /* huge object B-tree records: address, length, ID */
  uint64_t nhuge, huge_size;
  size_t caphuge;
  uint64_t man_nobjs, man_bytes, tiny_nobjs, tiny_size;
} wd_heap;

static int heap_init(wd_heap *h, h5w *w, const wd_params *p) {
  memset(h, 0, sizeof *h);
  h->w = w;
  h->p = p;
  unsigned start_bits = h5_log2_floor(p->start_block);
  h->first_row_bits = start_bits + h5_log2_floor(p->width);
  h->max_direct_rows = h5_log2_floor(p->max_direct) - start_bits + 2;
  h->max_root_rows = p->max_bits - h->first_row_bits + 1;
  h->row_size[0] = p->start_block;
  h->row_off[0] = 0;
  for (unsigned r = 1; r <= h->max_root_rows && r <= WD_MAX_ROWS; r++) {
    h->row_size[r] = p->start_block << (r - 1);
    h->row_off[r] = (p->start_block * p->width) << (r - 1);
  }
  h->off_size = (p->max_bits + 7) / 8;
  int dir = ((int)h5_log2_floor(p->max_direct) + 7) / 8, man = h5_enc_bytes(p->max_man);
  h->len_size = dir < man ? dir : man;
  h->prefix = 5 + WD_SO + (size_t)h->off_size + 4;
  return h5w_file_reserve(w, WD_HDR_SIZE, &h->addr);
}

static void heap_free(wd_heap *h) {
  for (size_t i = 0; i < h->nblk; i++) free(h->blk[i].buf);
  free(h->blk);
  free(h->huge);
}

/* The row of the doubling table holding relative offset rel. */
static unsigned row_of(const wd_heap *h, uint64_t rel) {
  if (rel < h->p->start_block * h->p->width) return 0;
  return h5_log2_floor(rel) - h->first_row_bits + 1;
}

/* The size of the direct block that starts at heap offset off (a block
** boundary), going down through indirect blocks; 0 past the heap's end. */
static uint64_t block_size_at(const wd_heap *h, uint64_t off) {
  if (h->p->max_bits < 64 && off >= (UINT64_C(1) << h->p->max_bits)) return 0;
  uint64_t rel = off;
  for (;;) {
    unsigned row = row_of(h, rel);
    if (row >= h->max_root_rows) return 0;
    if (row < h->max_direct_rows) return h->row_size[row];
    uint64_t col = (rel - h->row_off[row]) / h->row_size[row];
    rel -= h->row_off[row] + col * h->row_size[row];
  }
}

/* Store one object; its heap ID (id_len bytes) goes to id. */
static int heap_insert(wd_heap *h, const uint8_t *obj, size_t len, uint8_t *id) {
  const wd_params *p = h->p;
  memset(id, 0, p->id_len);
  if (len == 0) return h5w_err(h->w, H5_EINVAL, "empty heap object");
  if (len < p->id_len && len <= 16) { /* tiny: in the ID itself */
    id[0] = (uint8_t)(0x20 | (len - 1));
    memcpy(id + 1, obj, len);
    h->tiny_nobjs++;
    h->tiny_size += len;
    return H5_OK;
  }
  if (len > p->max_man) { /* huge: on its own, found through a B-tree */
    uint64_t at;
    int rc = h5w_file_append(h->w, obj, len, &at);
    if (rc) return rc;
    if (h->nhuge == h->caphuge) {
      size_t ncap = h->caphuge ? 2 * h->caphuge : 8;
      uint8_t *nh = realloc(h->huge, ncap * 3 * WD_SO);
      if (!nh) return h5w_err(h->w, H5_ENOMEM, "out of memory");
      h->huge = nh;
      h->caphuge = ncap;
    }
    uint64_t key = ++h->nhuge;
    uint8_t *r = h->huge + (key - 1) * 3 * WD_SO;
    util_put_le(r, at, WD_SO);
    util_put_le(r + WD_SO, len, WD_SO);
    util_put_le(r + 2 * WD_SO, key, WD_SO);
    h->huge_size += len;
    int key_size = p->id_len - 1 < 8 ? p->id_len - 1 : 8;
    if (key_size < 8 && key >> (8 * key_size))
      return h5w_err(h->w, H5_EUNSUPPORTED, "too many huge heap objects");
    id[0] = 0x10;
    util_put_le(id + 1, key, key_size);
    return H5_OK;
  }
  /* managed: in one of the last blocks with room, else a new block */
  wd_block *b = NULL;
  for (size_t i = h->nblk > WD_RECENT ? h->nblk - WD_RECENT : 0; i < h->nblk; i++)
    if (h->blk[i].size - h->blk[i].used >= len) {
      b = &h->blk[i];
      break;
    }
  if (!b) {
    uint64_t size;
    for (;;) { /* blocks too small for the object are skipped */
      size = block_size_at(h, h->next_off);
      if (size == 0)
        return h5w_err(h->w, H5_EUNSUPPORTED, "fractal heap full (2^%u bytes)", p->max_bits);
      if (size >= h->prefix + len) break;
      h->next_off += size;
    }
    if (h->nblk == h->capblk) {
      size_t ncap = h->capblk ? 2 * h->capblk : 8;
      wd_block *nb = realloc(h->blk, ncap * sizeof *nb);
      if (!nb) return h5w_err(h->w, H5_ENOMEM, "out of memory");
      h->blk = nb;
      h->capblk = ncap;
    }
    b = &h->blk[h->nblk];
    memset(b, 0, sizeof *b);
    b->buf = calloc(1, (size_t)size);
    if (!b->buf) return h5w_err(h->w, H5_ENOMEM, "out of memory");
    h->nblk++;
    b->off = h->next_off;
    b->size = size;
    b->used = h->prefix;
    h->next_off += size;
  }
  memcpy(b->buf + b->used, obj, len);
  id[0] = 0;
  util_put_le(id + 1, b->off + b->used, h->off_size);
  util_put_le(id + 1 + h->off_size, len, h->len_size);
  b->used += len;
  h->man_nobjs++;
  h->man_bytes += len;
  return H5_OK;
}

/* Free space of every direct block under an indirect block of nrows rows
** (libhdf5's accounting: allocated or not). */
static uint64_t iblock_free(const wd_heap *h, unsigned nrows) {
  uint64_t sum = 0;
  for (unsigned r = 0; r < nrows; r++) {
    uint64_t one = r < h->max_direct_rows
                       ? h->row_size[r] - h->prefix
                       : iblock_free(h, h5_log2_floor(h->row_size[r]) - h->first_row_bits + 1);
    sum += one * h->p->width;
  }
  return sum;
}

/* The index of the first block at heap offset >= off (blocks are in
** offset order). */
static uint64_t blk_off_at(const void *ctx, size_t i) {
  return ((const wd_heap *)ctx)->blk[i].off;
}

static size_t first_block_from(const wd_heap *h, uint64_t off) {
  return h5_lower_bound(h->nblk, blk_off_at, h, off);
}

/* Write the indirect block of nrows rows at heap offset ib_off, after the
** indirect blocks below it; *addr gets its address. */
static int write_iblock(wd_heap *h, uint64_t ib_off, unsigned nrows, uint64_t *addr) {
  unsigned width = h->p->width;
  unsigned drows = nrows < h->max_direct_rows ? nrows : h->max_direct_rows;
  size_t nent = (size_t)nrows * width;
  size_t size = 5 + WD_SO + (size_t)h->off_size + nent * WD_SO + 4;
  uint8_t *ib = calloc(1, size);
  if (!ib) return h5w_err(h->w, H5_ENOMEM, "out of memory");
  memcpy(ib, "FHIB", 4);
  ib[4] = 0;
  util_put_le(ib + 5, h->addr, WD_SO);
  util_put_le(ib + 5 + WD_SO, ib_off, h->off_size);
  uint8_t *e = ib + 5 + WD_SO + h->off_size;
  int rc = H5_OK;
  for (unsigned r = 0; rc == H5_OK && r < nrows; r++)
    for (unsigned c = 0; rc == H5_OK && c < width; c++, e += WD_SO) {
      uint64_t off = ib_off + h->row_off[r] + c * h->row_size[r];
      uint64_t child = H5_UNDEF_ADDR;
      size_t i = first_block_from(h, off);
      if (r < drows) {
        if (i < h->nblk && h->blk[i].off == off) child = h->blk[i].addr;
      } else if (i < h->nblk && h->blk[i].off < off + h->row_size[r]) {
        unsigned crows = h5_log2_floor(h->row_size[r]) - h->first_row_bits + 1;
        rc = write_iblock(h, off, crows, &child);
      }
      util_put_le(e, child, WD_SO);
    }
  if (rc == H5_OK) {
    util_put_le(e, h5_lookup3(ib, size - 4, 0), 4);
    rc = h5w_file_append(h->w, ib, size, addr);
  }
  free(ib);
  return rc;
}

/* Write the blocks, the huge object index and the header. */
static int heap_finish(wd_heap *h) {
  const wd_params *p = h->p;
  int rc = H5_OK;
  for (size_t i = 0; rc == H5_OK && i < h->nblk; i++) {
    wd_block *b = &h->blk[i];
    memcpy(b->buf, "FHDB", 4);
    b->buf[4] = 0;
    util_put_le(b->buf + 5, h->addr, WD_SO);
    util_put_le(b->buf + 5 + WD_SO, b->off, h->off_size);
    /* lookup3 of the whole block, its checksum field zero */
    util_put_le(b->buf + h->prefix - 4, h5_lookup3(b->buf, (size_t)b->size, 0), 4);
    rc = h5w_file_append(h->w, b->buf, (size_t)b->size, &b->addr);
    free(b->buf);
    b->buf = NULL;
  }
  /* the root: nothing, one starting-size direct block, or an indirect
     block covering them all: as libhdf5 grows it, rows enough for the
     first block (at least 1), doubled as needed */
  uint64_t root = H5_UNDEF_ADDR, man_size = 0, iter_off = 0, free_space = 0;
  uint64_t alloc = 0;
  unsigned root_rows = 0;
  for (size_t i = 0; i < h->nblk; i++) alloc += h->blk[i].size;
  if (rc == H5_OK && h->nblk == 1 && h->blk[0].off == 0) {
    root = h->blk[0].addr;
    man_size = p->start_block;
    free_space = p->start_block - h->prefix;
  } else if (rc == H5_OK && h->nblk) {
    unsigned need = row_of(h, h->blk[h->nblk - 1].off) + 1;
    root_rows = row_of(h, h->blk[0].off) + 1;
    if (root_rows < WD_START_ROOT_ROWS) root_rows = WD_START_ROOT_ROWS;
    while (root_rows < need) root_rows *= 2;
    if (root_rows > h->max_root_rows) root_rows = h->max_root_rows;
    rc = write_iblock(h, 0, root_rows, &root);
    man_size = h->row_off[root_rows];
    iter_off = h->next_off;
    free_space = iblock_free(h, root_rows);
  }
  free_space -= h->man_bytes;
  uint64_t huge_bt2 = H5_UNDEF_ADDR;
  if (rc == H5_OK && h->nhuge)
    rc = bt2_write(h->w, BT2_HUGE_INDIR, 3 * WD_SO, h->huge, h->nhuge, &huge_bt2);
  if (rc) return rc;
  uint8_t hd[WD_HDR_SIZE], *q = hd;
  memcpy(q, "FRHP", 4);
  q[4] = 0;
  util_put_le(q + 5, p->id_len, 2);
  util_put_le(q + 7, 0, 2);          /* no I/O filters */
  q[9] = 0x02;                  /* direct blocks checksummed */
  util_put_le(q + 10, p->max_man, 4);
  q += 14;
  uint64_t f[] = {h->nhuge,      /* next huge object ID: the last one used */
                  huge_bt2,      free_space,
                  H5_UNDEF_ADDR, /* no free-space manager */
                  man_size,      alloc,         iter_off,     h->man_nobjs,
                  h->huge_size,  h->nhuge,      h->tiny_size, h->tiny_nobjs};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++, q += WD_SO) util_put_le(q, f[i], WD_SO);
  util_put_le(q, p->width, 2);
  util_put_le(q + 2, p->start_block, WD_SO);
  util_put_le(q + 10, p->max_direct, WD_SO);
  util_put_le(q + 18, p->max_bits, 2);
  util_put_le(q + 20, WD_START_ROOT_ROWS, 2);
  util_put_le(q + 22, root, WD_SO);
  util_put_le(q + 30, root_rows, 2);
  q += 32;
  util_put_le(q, h5_lookup3(hd, (size_t)(q - hd), 0), 4);
  return h5w_file_write(h->w, hd, sizeof hd, h->addr);
}

/* ---- the name index ------------------------------------------------------- */

typedef struct wd_key {
  uint32_t hash;
  const char *name;
  size_t idx;
} wd_key;

static int by_hash_name(const void *a, const void *b) {
  const wd_key *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return strcmp(x->name, y->name);
}

int h5w_dense_write(h5w *w, int kind, const h5w_dense_item *items, size_t n,
                    uint64_t *heap_addr, uint64_t *bt2_addr) {
  const wd_params *p = kind == H5W_DENSE_LINKS ? &LINK_HEAP : &ATTR_HEAP;
  size_t rec_size = kind == H5W_DENSE_LINKS ? 4 + (size_t)p->id_len
                                            : (size_t)p->id_len + 1 + 4 + 4;
  wd_heap h;
  uint8_t *ids = malloc((n ? n : 1) * p->id_len);
  uint8_t *recs = malloc((n ? n : 1) * rec_size);
  wd_key *keys = malloc((n ? n : 1) * sizeof *keys);
  int rc = heap_init(&h, w, p);
  if (rc == H5_OK && (!ids || !recs || !keys)) rc = h5w_err(w, H5_ENOMEM, "out of memory");
  for (size_t i = 0; rc == H5_OK && i < n; i++)
    rc = heap_insert(&h, items[i].msg, items[i].len, ids + i * p->id_len);
  if (rc == H5_OK) rc = heap_finish(&h);
  heap_free(&h);
  if (rc == H5_OK) {
    for (size_t i = 0; i < n; i++) {
      keys[i].hash = h5_lookup3(items[i].name, strlen(items[i].name), 0);
      keys[i].name = items[i].name;
      keys[i].idx = i;
    }
    if (n) qsort(keys, n, sizeof *keys, by_hash_name);
    for (size_t i = 0; rc == H5_OK && i < n; i++) {
      if (i && by_hash_name(&keys[i - 1], &keys[i]) == 0)
        rc = h5w_err(w, H5_EINVAL, "'%s' named twice", keys[i].name);
      uint8_t *r = recs + i * rec_size;
      const uint8_t *id = ids + keys[i].idx * p->id_len;
      if (kind == H5W_DENSE_LINKS) { /* name hash, heap ID */
        util_put_le(r, keys[i].hash, 4);
        memcpy(r + 4, id, p->id_len);
      } else { /* heap ID, message flags, creation order, name hash */
        memcpy(r, id, p->id_len);
        r[p->id_len] = 0;
        util_put_le(r + p->id_len + 1, 0, 4);
        util_put_le(r + p->id_len + 5, keys[i].hash, 4);
      }
    }
  }
  if (rc == H5_OK)
    rc = bt2_write(w, kind == H5W_DENSE_LINKS ? BT2_LINK_NAME : BT2_ATTR_NAME,
                   (uint16_t)rec_size, recs, n, bt2_addr);
  if (rc == H5_OK) *heap_addr = h.addr;
  free(ids);
  free(recs);
  free(keys);
  return rc;
}
