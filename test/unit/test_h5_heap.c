/*
** test/unit/test_h5_heap.c - lib/h5: v2 B-trees, fractal heaps and the shared
** message heap on synthetic files, valid and corrupt.
**
** Each test builds a small file in memory (a version 2 superblock, then the
** structures under test, checksummed), writes it to a temporary file, opens
** it and calls the internal readers directly.  Files written by libhdf5 are
** covered by the conformance corpus; these tests reach what libhdf5 does not
** write through its public API (filtered heaps, tiny and directly accessed
** huge objects) and what a corrupt or hostile file may hold.
*/
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "h5/h5_int.h"
#include "testutil.h"

/* ---- building files ------------------------------------------------------ */

typedef struct buf {
  uint8_t *p;
  size_t n, cap;
} buf;

static void reserve(buf *b, size_t n) {
  if (b->n + n > b->cap) {
    size_t ncap = b->cap ? b->cap : 4096;
    while (ncap < b->n + n) ncap *= 2;
    b->p = realloc(b->p, ncap);
    ck_assert_ptr_nonnull(b->p);
    b->cap = ncap;
  }
}

static size_t put(buf *b, const void *d, size_t n) {
  reserve(b, n);
  size_t at = b->n;
  if (d)
    memcpy(b->p + at, d, n);
  else
    memset(b->p + at, 0, n);
  b->n += n;
  return at;
}

static size_t u(buf *b, uint64_t v, int n) {
  reserve(b, (size_t)n);
  size_t at = b->n;
  util_put_le(b->p + at, v, n);
  b->n += (size_t)n;
  return at;
}

static void patch(buf *b, size_t at, uint64_t v, int n) {
  util_put_le(b->p + at, v, n);
}

/* the lookup3 checksum of [from, end), appended */
static void csum(buf *b, size_t from) {
  u(b, h5_lookup3(b->p + from, b->n - from, 0), 4);
}

static void align(buf *b, size_t a) {
  while (b->n % a) u(b, 0, 1);
}

/* A version 2 superblock (8-byte offsets and lengths) whose root group
** address is unused by these tests; ext: the superblock extension. */
static void superblock(buf *b, uint64_t ext) {
  b->n = 0;
  static const uint8_t sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  put(b, sig, 8);
  u(b, 2, 1);
  u(b, 8, 1);
  u(b, 8, 1);
  u(b, 0, 1);
  u(b, 0, 8);   /* base address */
  u(b, ext, 8); /* superblock extension */
  u(b, 0, 8);   /* end of file: patched by finish() */
  u(b, 0, 8);   /* root group */
  csum(b, 0);
}

static void set_ext(buf *b, uint64_t ext) {
  patch(b, 20, ext, 8);
  b->n -= 0; /* the checksum is redone by finish() */
}

/* Patch the end-of-file address and the superblock checksum, write the
** file and open it. */
static h5_file *finish(buf *b) {
  patch(b, 28, b->n, 8);
  patch(b, 44, h5_lookup3(b->p, 44, 0), 4);
  char path[] = "/tmp/test_h5_heap_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, b->p, b->n), (ssize_t)b->n);
  close(fd);
  h5_file *f;
  char err[256];
  int rc = h5_open(path, &f, err, sizeof err);
  unlink(path);
  ck_assert_msg(rc == H5_OK, "h5_open: %s", err);
  return f;
}

/* ---- v2 B-trees ----------------------------------------------------------- */

#define BT_TYPE 10
#define BT_NODE 64 /* leaves hold 13 records of 4 bytes, internal nodes 3 */
#define BT_REC 4

typedef struct collect {
  uint32_t v[256];
  size_t n;
  int stop_at; /* return H5_ESTOP at this record, -1: never */
} collect;

static int collect_cb(void *ctx, const uint8_t *rec, size_t len) {
  collect *c = ctx;
  ck_assert_uint_eq(len, BT_REC);
  if ((int)c->n == c->stop_at) return H5_ESTOP;
  ck_assert_uint_lt(c->n, 256);
  c->v[c->n++] = (uint32_t)util_get_le(rec, 4);
  return 0;
}

/* A subtree of the given depth whose nodes hold k records each, numbered in
** key order from *next.  Returns its address. */
static uint64_t bt_node(buf *b, int depth, unsigned k, uint32_t *next,
                        uint64_t *total) {
  if (depth == 0) {
    align(b, 8);
    size_t at = put(b, "BTLF", 4);
    u(b, 0, 1);
    u(b, BT_TYPE, 1);
    for (unsigned i = 0; i < k; i++) u(b, (*next)++, BT_REC);
    csum(b, at);
    put(b, NULL, BT_NODE - (b->n - at));
    *total += k;
    return at;
  }
  /* children first (they go before the node in the file) */
  uint64_t child[8], sub[8];
  uint32_t rec[8];
  for (unsigned i = 0; i <= k; i++) {
    sub[i] = 0;
    child[i] = bt_node(b, depth - 1, k, next, &sub[i]);
    if (i < k) rec[i] = (*next)++;
  }
  /* the records were numbered as the walk will meet them: child 0's, then
     record 0, ... so renumber nothing; write the node */
  align(b, 8);
  size_t at = put(b, "BTIN", 4);
  u(b, 0, 1);
  u(b, BT_TYPE, 1);
  for (unsigned i = 0; i < k; i++) u(b, rec[i], BT_REC);
  for (unsigned i = 0; i <= k; i++) {
    u(b, child[i], 8);
    u(b, depth == 1 ? sub[i] : k, 1); /* records in the child itself */
    if (depth > 1) u(b, sub[i], 1);   /* records below it (1 byte here) */
    *total += sub[i];
  }
  *total += k;
  csum(b, at);
  put(b, NULL, BT_NODE - (b->n - at));
  return at;
}

static uint64_t bt_header(buf *b, uint16_t depth, uint64_t root, uint16_t nrec,
                          uint64_t total, uint32_t node_size) {
  align(b, 8);
  size_t at = put(b, "BTHD", 4);
  u(b, 0, 1);
  u(b, BT_TYPE, 1);
  u(b, node_size, 4);
  u(b, BT_REC, 2);
  u(b, depth, 2);
  u(b, 100, 1);
  u(b, 40, 1);
  u(b, root, 8);
  u(b, nrec, 2);
  u(b, total, 8);
  csum(b, at);
  return at;
}

static void check_order(const collect *c, size_t n) {
  ck_assert_uint_eq(c->n, n);
  for (size_t i = 0; i < n; i++) ck_assert_uint_eq(c->v[i], i);
}

START_TEST(test_bt2_valid) {
  for (int depth = 0; depth <= 2; depth++) {
    buf b = {0};
    superblock(&b, H5_UNDEF_ADDR);
    uint32_t next = 0;
    uint64_t total = 0;
    unsigned k = depth == 0 ? 13 : 2;
    uint64_t root = bt_node(&b, depth, k, &next, &total);
    uint64_t hdr = bt_header(&b, (uint16_t)depth, root, (uint16_t)k, total, BT_NODE);
    h5_file *f = finish(&b);
    collect c = {.stop_at = -1};
    int rc = h5_bt2_iter(f, hdr, collect_cb, &c);
    ck_assert_msg(rc == H5_OK, "depth %d: %s", depth, h5_errmsg(f));
    check_order(&c, next);
    /* a callback's nonzero result stops the walk and is returned */
    collect s = {.stop_at = 3};
    ck_assert_int_eq(h5_bt2_iter(f, hdr, collect_cb, &s), H5_ESTOP);
    ck_assert_uint_eq(s.n, 3);
    h5_close(f);
    free(b.p);
  }
}
END_TEST

START_TEST(test_bt2_empty) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  uint64_t hdr = bt_header(&b, 0, H5_UNDEF_ADDR, 0, 0, BT_NODE);
  h5_file *f = finish(&b);
  collect c = {.stop_at = -1};
  ck_assert_int_eq(h5_bt2_iter(f, hdr, collect_cb, &c), H5_OK);
  ck_assert_uint_eq(c.n, 0);
  h5_close(f);
  free(b.p);
}
END_TEST

/* Build a depth-1 tree, apply a corruption, expect code and message. */
static void bt2_corrupt(int what, int want, const char *msg) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  uint32_t next = 0;
  uint64_t total = 0;
  uint64_t root = bt_node(&b, 1, 2, &next, &total);
  uint16_t depth = 1, nrec = 2;
  uint32_t node_size = BT_NODE;
  uint64_t leaf0 = 48; /* the first node built */
  switch (what) {
  case 0: /* the second child pointer names the first leaf again */
    patch(&b, root + 6 + 2 * BT_REC + 9, leaf0, 8);
    patch(&b, root + 6 + 2 * BT_REC + 3 * 9,
          h5_lookup3(b.p + root, 6 + 2 * BT_REC + 3 * 9, 0), 4);
    break;
  case 1: /* a leaf's record changed after its checksum */
    b.p[leaf0 + 6] ^= 1;
    break;
  case 2: /* more records in the root than fit */
    nrec = 4;
    break;
  case 3: /* too deep */
    depth = H5_MAX_BTREE_DEPTH + 1;
    break;
  case 4: /* a child outside the file */
    patch(&b, root + 6 + 2 * BT_REC, UINT64_C(1) << 40, 8);
    patch(&b, root + 6 + 2 * BT_REC + 3 * 9,
          h5_lookup3(b.p + root, 6 + 2 * BT_REC + 3 * 9, 0), 4);
    break;
  case 5: /* the root is a leaf where an internal node should be */
    root = leaf0;
    break;
  case 6: /* nodes of 20 bytes cannot hold an internal level */
    node_size = 20;
    break;
  }
  uint64_t hdr = bt_header(&b, depth, root, nrec, total, node_size);
  if (what == 7) b.p[hdr + 8] ^= 1; /* the header's node size */
  h5_file *f = finish(&b);
  collect c = {.stop_at = -1};
  int rc = h5_bt2_iter(f, hdr, collect_cb, &c);
  ck_assert_msg(rc == want, "case %d: rc %d (%s)", what, rc, h5_errmsg(f));
  ck_assert_msg(strstr(h5_errmsg(f), msg), "case %d: %s", what, h5_errmsg(f));
  h5_close(f);
  free(b.p);
}

START_TEST(test_bt2_corrupt) {
  bt2_corrupt(0, H5_ECORRUPT, "reached twice");
  bt2_corrupt(1, H5_ECORRUPT, "checksum mismatch");
  bt2_corrupt(2, H5_ECORRUPT, "at most");
  bt2_corrupt(3, H5_ECORRUPT, "depth");
  bt2_corrupt(4, H5_ECORRUPT, "outside the file");
  bt2_corrupt(5, H5_ECORRUPT, "no BTIN node");
  bt2_corrupt(6, H5_ECORRUPT, "cannot hold");
  bt2_corrupt(7, H5_ECORRUPT, "header checksum");
}
END_TEST

START_TEST(test_bt2_not_a_tree) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  put(&b, "nothing here", 12);
  h5_file *f = finish(&b);
  collect c = {.stop_at = -1};
  ck_assert_int_eq(h5_bt2_iter(f, 48, collect_cb, &c), H5_ECORRUPT);
  ck_assert_int_eq(h5_bt2_iter(f, H5_UNDEF_ADDR, collect_cb, &c), H5_ECORRUPT);
  ck_assert_int_eq(h5_bt2_iter(f, 1 << 20, collect_cb, &c), H5_ECORRUPT);
  h5_close(f);
  free(b.p);
}
END_TEST

/* ---- fractal heaps ---------------------------------------------------------- */

/* Heap parameters: width 4, blocks of 256 bytes up to 1024, 16-bit heap
** offsets, managed objects of at most 200 bytes: managed IDs are a flag
** byte, a 2-byte offset and a 1-byte length. */
#define FH_START 256
#define FH_MAXDIR 1024
#define FH_BITS 16
#define FH_PREFIX(ck) (4 + 1 + 8 + 2 + ((ck) ? 4 : 0))

typedef struct fh_spec {
  uint16_t id_len;
  int checksum; /* direct blocks are checksummed */
  uint64_t root;
  uint16_t rows;
  uint64_t start, maxdir;
  uint16_t width;
  uint64_t huge_bt2; /* 0: none */
  uint16_t bits;     /* 0: FH_BITS */
  /* filters: ids (0 ends), root direct block filtered size and mask */
  uint16_t filters[4];
  uint64_t root_fsize;
  uint32_t root_mask;
} fh_spec;

static uint64_t fh_header(buf *b, const fh_spec *s) {
  buf pl = {0};
  int nf = 0;
  while (nf < 4 && s->filters[nf]) nf++;
  if (nf) {
    u(&pl, 2, 1);
    u(&pl, (uint64_t)nf, 1);
    for (int i = 0; i < nf; i++) {
      u(&pl, s->filters[i], 2);
      if (s->filters[i] >= 256) u(&pl, 0, 2); /* no name */
      u(&pl, 0, 2);                           /* flags */
      u(&pl, 1, 2);                           /* one client data value */
      u(&pl, 4, 4);
    }
  }
  align(b, 8);
  size_t at = put(b, "FRHP", 4);
  u(b, 0, 1);
  u(b, s->id_len, 2);
  u(b, pl.n, 2);
  u(b, s->checksum ? 2 : 0, 1);
  u(b, 200, 4); /* largest managed object */
  u(b, 0, 8);
  u(b, s->huge_bt2 ? s->huge_bt2 : H5_UNDEF_ADDR, 8);
  u(b, 0, 8);
  u(b, H5_UNDEF_ADDR, 8);
  for (int i = 0; i < 8; i++) u(b, 0, 8);
  u(b, s->width ? s->width : 4, 2);
  u(b, s->start ? s->start : FH_START, 8);
  u(b, s->maxdir ? s->maxdir : FH_MAXDIR, 8);
  u(b, s->bits ? s->bits : FH_BITS, 2);
  u(b, 1, 2);
  u(b, s->root, 8);
  u(b, s->rows, 2);
  if (nf) {
    u(b, s->root_fsize, 8);
    u(b, s->root_mask, 4);
    put(b, pl.p, pl.n);
  }
  csum(b, at);
  free(pl.p);
  return at;
}

/* A direct block of size bytes at heap offset off, holding objs (n of
** them, each a NUL-terminated string, packed after the prefix). */
static void fh_dblock_image(buf *img, uint64_t heap, uint64_t off, size_t size,
                            int checksum, const char *const *objs, int n) {
  img->n = 0;
  put(img, "FHDB", 4);
  u(img, 0, 1);
  u(img, heap, 8);
  u(img, off, 2);
  size_t ck = checksum ? u(img, 0, 4) : 0;
  for (int i = 0; i < n; i++) put(img, objs[i], strlen(objs[i]));
  ck_assert_uint_le(img->n, size);
  put(img, NULL, size - img->n);
  if (checksum) patch(img, ck, h5_lookup3(img->p, size, 0), 4);
}

static uint64_t fh_dblock(buf *b, uint64_t heap, uint64_t off, size_t size,
                          int checksum, const char *const *objs, int n) {
  buf img = {0};
  fh_dblock_image(&img, heap, off, size, checksum, objs, n);
  align(b, 8);
  size_t at = put(b, img.p, img.n);
  free(img.p);
  return at;
}

/* A managed heap ID: offset, length */
static void man_id(uint8_t id[4], uint64_t off, unsigned len) {
  id[0] = 0;
  id[1] = (uint8_t)off;
  id[2] = (uint8_t)(off >> 8);
  id[3] = (uint8_t)len;
}

static void expect_obj(h5_fheap *h, h5_file *f, const uint8_t *id, size_t idlen,
                       const char *want) {
  const uint8_t *data;
  size_t len;
  int rc = h5_fheap_get(h, id, idlen, &data, &len);
  ck_assert_msg(rc == H5_OK, "%s: %s", want, h5_errmsg(f));
  ck_assert_uint_eq(len, strlen(want));
  ck_assert(memcmp(data, want, len) == 0);
}

static void expect_err(h5_fheap *h, h5_file *f, const uint8_t *id,
                       size_t idlen, int want, const char *msg) {
  const uint8_t *data;
  size_t len;
  int rc = h5_fheap_get(h, id, idlen, &data, &len);
  ck_assert_msg(rc == want, "%s: rc %d (%s)", msg, rc, h5_errmsg(f));
  ck_assert_msg(strstr(h5_errmsg(f), msg), "want '%s': %s", msg, h5_errmsg(f));
}

static const char *const OBJS[] = {"hello", "world!", "fractal"};

START_TEST(test_fheap_root_direct) {
  for (int ck = 0; ck <= 1; ck++) {
    buf b = {0};
    superblock(&b, H5_UNDEF_ADDR);
    /* the header goes first so its address is known to the block */
    fh_spec s = {.id_len = 8, .checksum = ck, .root = 0};
    uint64_t hdr = fh_header(&b, &s);
    uint64_t blk = fh_dblock(&b, hdr, 0, FH_START, ck, OBJS, 3);
    s.root = blk;
    b.n = hdr;
    fh_header(&b, &s); /* rewrite with the root's address */
    b.n = blk + FH_START;
    h5_file *f = finish(&b);
    h5_fheap *h;
    ck_assert_msg(h5_fheap_open(f, hdr, &h) == H5_OK, "%s", h5_errmsg(f));
    uint8_t id[8] = {0};
    size_t p = FH_PREFIX(ck);
    man_id(id, p, 5);
    expect_obj(h, f, id, 8, "hello");
    man_id(id, p + 5, 6);
    expect_obj(h, f, id, 8, "world!");
    man_id(id, p + 11, 7);
    expect_obj(h, f, id, 7, "fractal");
    /* tiny objects: the data is in the ID */
    uint8_t tiny[8] = {0x20 | 2, 'a', 'b', 'c'};
    expect_obj(h, f, tiny, 8, "abc");
    /* corrupt IDs */
    man_id(id, 3, 4);
    expect_err(h, f, id, 8, H5_ECORRUPT, "not inside its direct block");
    man_id(id, FH_START - 3, 7);
    expect_err(h, f, id, 8, H5_ECORRUPT, "not inside its direct block");
    man_id(id, p, 0);
    expect_err(h, f, id, 8, H5_ECORRUPT, "bad managed object");
    man_id(id, 0, 4);
    expect_err(h, f, id, 8, H5_ECORRUPT, "bad managed object");
    man_id(id, 2000, 4); /* beyond the root block */
    expect_err(h, f, id, 8, H5_ECORRUPT, "not inside its direct block");
    man_id(id, p, 250); /* longer than a managed object may be */
    expect_err(h, f, id, 8, H5_ECORRUPT, "bad managed object");
    expect_err(h, f, id, 2, H5_ECORRUPT, "managed object ID of 2 bytes");
    uint8_t t3[8] = {0x30};
    expect_err(h, f, t3, 8, H5_ECORRUPT, "type 3");
    uint8_t v1[8] = {0x40};
    expect_err(h, f, v1, 8, H5_EUNSUPPORTED, "version 1");
    uint8_t tiny_long[8] = {0x20 | 9};
    expect_err(h, f, tiny_long, 8, H5_ECORRUPT, "tiny object of 10 bytes");
    uint8_t huge[8] = {0x10, 1};
    expect_err(h, f, huge, 8, H5_ECORRUPT, "no huge object B-tree");
    h5_fheap_close(h);
    h5_close(f);
    free(b.p);
  }
}
END_TEST

START_TEST(test_fheap_dblock_checksum) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  fh_spec s = {.id_len = 8, .checksum = 1};
  uint64_t hdr = fh_header(&b, &s);
  uint64_t blk = fh_dblock(&b, hdr, 0, FH_START, 1, OBJS, 3);
  b.p[blk + FH_PREFIX(1) + 1] ^= 0x20; /* "hello" -> "hEllo" */
  s.root = blk;
  b.n = hdr;
  fh_header(&b, &s);
  b.n = blk + FH_START;
  h5_file *f = finish(&b);
  h5_fheap *h;
  ck_assert_int_eq(h5_fheap_open(f, hdr, &h), H5_OK);
  uint8_t id[4];
  man_id(id, FH_PREFIX(1), 5);
  expect_err(h, f, id, 4, H5_ECORRUPT, "checksum mismatch");
  h5_fheap_close(h);
  h5_close(f);
  free(b.p);
}
END_TEST

/* A root indirect block of 5 rows: rows 0-3 direct (blocks of 256, 256,
** 512, 1024), row 4 indirect (blocks of 2048, each an indirect block of 2
** rows).  Direct blocks at entries 1 (heap offset 256) and 9 (row 2, col 1:
** 1024 + 512 + ... see below), and one child indirect block at entry 16
** (heap offset 8192) with a direct block at its entry 4 (row 1, column 0:
** heap offset 8192 + 1024). */
START_TEST(test_fheap_indirect) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  fh_spec s = {.id_len = 8, .checksum = 1, .rows = 5};
  uint64_t hdr = fh_header(&b, &s);
  /* row offsets: 0, 1024, 2048, 4096, 8192 */
  const char *a[] = {"in block one"};
  const char *c[] = {"in row two"};
  const char *d[] = {"in a child"};
  uint64_t b1 = fh_dblock(&b, hdr, 256, 256, 1, a, 1);
  uint64_t b9 = fh_dblock(&b, hdr, 2048 + 512, 512, 1, c, 1);
  uint64_t bc = fh_dblock(&b, hdr, 8192 + 1024, 256, 1, d, 1);
  /* the child indirect block: 2 rows of 4 direct entries */
  align(&b, 8);
  size_t child = put(&b, "FHIB", 4);
  u(&b, 0, 1);
  u(&b, hdr, 8);
  u(&b, 8192, 2);
  for (int e = 0; e < 8; e++) u(&b, e == 4 ? bc : H5_UNDEF_ADDR, 8);
  csum(&b, child);
  /* the root: 16 direct entries, 4 indirect */
  align(&b, 8);
  size_t root = put(&b, "FHIB", 4);
  u(&b, 0, 1);
  u(&b, hdr, 8);
  u(&b, 0, 2);
  for (int e = 0; e < 16; e++)
    u(&b, e == 1 ? b1 : e == 9 ? b9 : H5_UNDEF_ADDR, 8);
  for (int e = 0; e < 4; e++) u(&b, e == 0 ? child : H5_UNDEF_ADDR, 8);
  csum(&b, root);
  size_t end = b.n;
  s.root = root;
  b.n = hdr;
  fh_header(&b, &s);
  b.n = end;
  h5_file *f = finish(&b);
  h5_fheap *h;
  ck_assert_msg(h5_fheap_open(f, hdr, &h) == H5_OK, "%s", h5_errmsg(f));
  uint8_t id[4];
  man_id(id, 256 + FH_PREFIX(1), 12);
  expect_obj(h, f, id, 4, "in block one");
  man_id(id, 2048 + 512 + FH_PREFIX(1), 10);
  expect_obj(h, f, id, 4, "in row two");
  man_id(id, 8192 + 1024 + FH_PREFIX(1), 10);
  expect_obj(h, f, id, 4, "in a child");
  /* again, from the cache */
  expect_obj(h, f, id, 4, "in a child");
  man_id(id, 512 + FH_PREFIX(1), 4); /* entry 2: never allocated */
  expect_err(h, f, id, 4, H5_ECORRUPT, "never allocated");
  man_id(id, 10240 + FH_PREFIX(1), 4); /* child entry 0 of the second child */
  expect_err(h, f, id, 4, H5_ECORRUPT, "never allocated");
  man_id(id, 40000, 4); /* beyond the root's 5 rows */
  expect_err(h, f, id, 4, H5_ECORRUPT, "beyond its indirect block");
  h5_fheap_close(h);
  /* the child indirect block's checksum */
  b.p[child + 20] ^= 1;
  h5_close(f);
  f = finish(&b);
  ck_assert_int_eq(h5_fheap_open(f, hdr, &h), H5_OK);
  man_id(id, 8192 + 1024 + FH_PREFIX(1), 10);
  expect_err(h, f, id, 4, H5_ECORRUPT, "checksum mismatch");
  h5_fheap_close(h);
  h5_close(f);
  free(b.p);
}
END_TEST

/* Huge objects addressed directly by the ID (IDs of 20 bytes hold an
** address and a length), and tiny objects with a 12-bit length. */
START_TEST(test_fheap_huge_tiny) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  fh_spec s = {.id_len = 20, .root = H5_UNDEF_ADDR};
  uint64_t hdr = fh_header(&b, &s);
  size_t obj = put(&b, "a huge object, stored on its own", 32);
  h5_file *f = finish(&b);
  h5_fheap *h;
  ck_assert_int_eq(h5_fheap_open(f, hdr, &h), H5_OK);
  buf id = {0};
  u(&id, 0x10, 1);
  u(&id, obj, 8);
  u(&id, 32, 8);
  u(&id, 0, 3);
  expect_obj(h, f, id.p, 20, "a huge object, stored on its own");
  patch(&id, 9, 1 << 20, 8);
  expect_err(h, f, id.p, 20, H5_ECORRUPT, "outside the file");
  /* tiny, extended length: 12 bits, one less than the length */
  uint8_t tiny[20] = {0x20, 16};
  memcpy(tiny + 2, "seventeen bytes!!", 17);
  expect_obj(h, f, tiny, 20, "seventeen bytes!!");
  tiny[1] = 18;
  expect_err(h, f, tiny, 20, H5_ECORRUPT, "tiny object of 19 bytes");
  /* a managed object in an empty heap */
  uint8_t m[20] = {0, 40, 0, 4};
  expect_err(h, f, m, 20, H5_ECORRUPT, "empty heap");
  h5_fheap_close(h);
  h5_close(f);
  free(id.p);
  free(b.p);
}
END_TEST

/* A filtered heap whose root is an indirect block: its direct block entries
** carry each block's filtered size and filter mask. */
START_TEST(test_fheap_filtered_indirect) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  fh_spec s = {.id_len = 8, .checksum = 1, .rows = 1, .filters = {1}};
  uint64_t hdr = fh_header(&b, &s);
  buf img = {0};
  fh_dblock_image(&img, hdr, 256, FH_START, 1, OBJS, 3);
  uLongf zlen = compressBound(img.n);
  uint8_t *z = malloc(zlen);
  ck_assert_int_eq(compress2(z, &zlen, img.p, img.n, 6), Z_OK);
  align(&b, 8);
  size_t blk = put(&b, z, zlen);
  size_t raw = put(&b, img.p, img.n); /* the same block, stored unfiltered */
  fh_dblock_image(&img, hdr, 512, FH_START, 1, OBJS, 3);
  put(&b, img.p, img.n);
  align(&b, 8);
  size_t root = put(&b, "FHIB", 4);
  u(&b, 0, 1);
  u(&b, hdr, 8);
  u(&b, 0, 2);
  for (int e = 0; e < 4; e++) {
    u(&b, e == 1 ? blk : e == 2 ? raw + FH_START : H5_UNDEF_ADDR, 8);
    u(&b, e == 1 ? zlen : e == 2 ? FH_START : 0, 8);
    u(&b, e == 2 ? 1 : 0, 4); /* entry 2: the filter skipped */
  }
  csum(&b, root);
  size_t end = b.n;
  s.root = root;
  b.n = hdr;
  fh_header(&b, &s);
  b.n = end;
  h5_file *f = finish(&b);
  h5_fheap *h;
  ck_assert_msg(h5_fheap_open(f, hdr, &h) == H5_OK, "%s", h5_errmsg(f));
  uint8_t id[4];
  man_id(id, 256 + FH_PREFIX(1) + 11, 7);
  expect_obj(h, f, id, 4, "fractal");
  man_id(id, 512 + FH_PREFIX(1) + 5, 6);
  expect_obj(h, f, id, 4, "world!");
  h5_fheap_close(h);
  h5_close(f);
  free(z);
  free(img.p);
  free(b.p);
}
END_TEST

/* Huge objects found through the heap's v2 B-tree of huge objects (IDs of
** 8 bytes cannot hold an address and a length): records of type 1
** (address, length, ID) or, in a filtered heap, type 2 (address, length,
** filter mask, size, ID). */
START_TEST(test_fheap_huge_btree) {
  static const char *const objs[] = {"the first huge object",
                                     "and the second, a little longer"};
  for (int filtered = 0; filtered <= 1; filtered++) {
    buf b = {0};
    superblock(&b, H5_UNDEF_ADDR);
    uint64_t addr[2], len[2];
    for (int i = 0; i < 2; i++) {
      size_t n = strlen(objs[i]);
      align(&b, 8);
      if (filtered) {
        uLongf zlen = compressBound(n);
        uint8_t *z = malloc(zlen);
        ck_assert_int_eq(compress2(z, &zlen, (const Bytef *)objs[i], n, 6), Z_OK);
        addr[i] = put(&b, z, zlen);
        len[i] = zlen;
        free(z);
      } else {
        addr[i] = put(&b, objs[i], n);
        len[i] = n;
      }
    }
    /* the B-tree: one leaf, records in key (ID) order */
    size_t rec = filtered ? 36 : 24;
    align(&b, 8);
    size_t leaf = put(&b, "BTLF", 4);
    u(&b, 0, 1);
    u(&b, filtered ? 2 : 1, 1);
    for (int i = 0; i < 2; i++) {
      u(&b, addr[i], 8);
      u(&b, len[i], 8);
      if (filtered) {
        u(&b, 0, 4);
        u(&b, strlen(objs[i]), 8);
      }
      u(&b, (uint64_t)i + 1, 8);
    }
    csum(&b, leaf);
    put(&b, NULL, 512 - (b.n - leaf));
    size_t bt = put(&b, "BTHD", 4);
    u(&b, 0, 1);
    u(&b, filtered ? 2 : 1, 1);
    u(&b, 512, 4);
    u(&b, rec, 2);
    u(&b, 0, 2);
    u(&b, 100, 1);
    u(&b, 40, 1);
    u(&b, leaf, 8);
    u(&b, 2, 2);
    u(&b, 2, 8);
    csum(&b, bt);
    fh_spec s = {.id_len = 8, .root = H5_UNDEF_ADDR, .huge_bt2 = bt};
    if (filtered) s.filters[0] = 1;
    uint64_t hdr = fh_header(&b, &s);
    h5_file *f = finish(&b);
    h5_fheap *h;
    ck_assert_msg(h5_fheap_open(f, hdr, &h) == H5_OK, "%s", h5_errmsg(f));
    uint8_t id[8] = {0x10, 2};
    expect_obj(h, f, id, 8, objs[1]);
    id[1] = 1;
    expect_obj(h, f, id, 8, objs[0]);
    expect_obj(h, f, id, 8, objs[0]);
    id[1] = 3;
    expect_err(h, f, id, 8, H5_ECORRUPT, "no huge object 3");
    h5_fheap_close(h);
    h5_close(f);
    free(b.p);
  }
}
END_TEST

/* A filtered root direct block (deflate), with and without the filter
** skipped by the mask; an unknown filter. */
START_TEST(test_fheap_filtered) {
  for (int variant = 0; variant < 6; variant++) {
    buf b = {0};
    superblock(&b, H5_UNDEF_ADDR);
    fh_spec s = {.id_len = 8, .checksum = 1, .filters = {1}};
    if (variant == 2) s.filters[0] = 32000;
    if (variant == 5) { /* shuffle (4-byte elements), deflate, fletcher32 */
      s.filters[0] = 2;
      s.filters[1] = 1;
      s.filters[2] = 3;
    }
    if (variant == 3) { /* a bomb: 1 MiB from 16 bytes */
      s.maxdir = s.start = 1 << 20;
      s.bits = 24;
    }
    size_t bsize = s.start ? (size_t)s.start : FH_START;
    uint64_t hdr = fh_header(&b, &s);
    buf img = {0};
    fh_dblock_image(&img, hdr, 0, bsize, 1, OBJS, 3);
    buf in = {0};
    put(&in, img.p, img.n);
    if (variant == 5) /* shuffle: byte k of every element together */
      for (size_t e = 0; e < img.n / 4; e++)
        for (size_t k = 0; k < 4; k++) in.p[k * (img.n / 4) + e] = img.p[e * 4 + k];
    uLongf zlen = compressBound(in.n) + 4;
    uint8_t *z = malloc(zlen);
    ck_assert_int_eq(compress2(z, &zlen, in.p, in.n, 6), Z_OK);
    if (variant == 5) { /* fletcher32 after the deflated data */
      uint32_t sum = h5_fletcher32(z, zlen);
      for (int k = 0; k < 4; k++) z[zlen + (uLongf)k] = (uint8_t)(sum >> (8 * k));
      zlen += 4;
    }
    free(in.p);
    align(&b, 8);
    size_t blk;
    if (variant == 1) { /* stored as is: the mask skips the filter */
      blk = put(&b, img.p, img.n);
      s.root_fsize = img.n;
      s.root_mask = 1;
    } else {
      blk = put(&b, z, zlen);
      s.root_fsize = variant == 3 ? 16 : variant == 4 ? zlen / 2 : zlen;
    }
    size_t end = b.n;
    s.root = blk;
    b.n = hdr;
    fh_header(&b, &s);
    b.n = end;
    h5_file *f = finish(&b);
    h5_fheap *h;
    ck_assert_msg(h5_fheap_open(f, hdr, &h) == H5_OK, "%s", h5_errmsg(f));
    uint8_t id[5];
    man_id(id, FH_PREFIX(1) + 5, 6);
    if (variant == 3) { /* 3-byte offsets */
      id[3] = 0;
      id[4] = 6;
    }
    if (variant < 2 || variant == 5) {
      expect_obj(h, f, id, 4, "world!");
      man_id(id, FH_PREFIX(1), 5);
      expect_obj(h, f, id, 4, "hello");
    } else if (variant == 2) {
      expect_err(h, f, id, 4, H5_EUNSUPPORTED, "filter 32000");
    } else if (variant == 3) {
      expect_err(h, f, id, 5, H5_ECORRUPT, "claimed");
    } else {
      expect_err(h, f, id, 4, H5_ECORRUPT, "deflated data is corrupt");
    }
    h5_fheap_close(h);
    h5_close(f);
    free(z);
    free(img.p);
    free(b.p);
  }
}
END_TEST

START_TEST(test_fheap_bad_header) {
  for (int what = 0; what < 4; what++) {
    buf b = {0};
    superblock(&b, H5_UNDEF_ADDR);
    fh_spec s = {.id_len = 8, .root = H5_UNDEF_ADDR};
    if (what == 1) s.width = 3;
    if (what == 2) s.maxdir = 128; /* smaller than the starting block */
    if (what == 3) s.rows = 60;    /* more rows than 16 bits need */
    uint64_t hdr = fh_header(&b, &s);
    if (what == 0) b.p[hdr + 12] ^= 1;
    h5_file *f = finish(&b);
    h5_fheap *h = (h5_fheap *)&b; /* must be reset */
    ck_assert_int_eq(h5_fheap_open(f, hdr, &h), H5_ECORRUPT);
    ck_assert_ptr_null(h);
    ck_assert_int_eq(h5_fheap_open(f, hdr + 1, &h), H5_ECORRUPT);
    h5_close(f);
    free(b.p);
  }
}
END_TEST

/* ---- the shared message heap ------------------------------------------------ */

/* A version 2 object header holding the given messages (type, body). */
static uint64_t ohdr(buf *b, int n, const uint8_t *types,
                     const buf *bodies) {
  size_t size = 0;
  for (int i = 0; i < n; i++) size += 4 + bodies[i].n;
  align(b, 8);
  size_t at = put(b, "OHDR", 4);
  u(b, 2, 1);
  u(b, 1, 1); /* chunk size in 2 bytes */
  u(b, size, 2);
  for (int i = 0; i < n; i++) {
    u(b, types[i], 1);
    u(b, bodies[i].n, 2);
    u(b, 0, 1);
    put(b, bodies[i].p, bodies[i].n);
  }
  csum(b, at);
  return at;
}

START_TEST(test_sohm) {
  buf b = {0};
  superblock(&b, H5_UNDEF_ADDR);
  /* the heap: one direct block holding a dataspace message body */
  fh_spec s = {.id_len = 8, .checksum = 1};
  uint64_t hdr = fh_header(&b, &s);
  static const char *const body[] = {"DATASPACE BODY"};
  uint64_t blk = fh_dblock(&b, hdr, 0, FH_START, 1, body, 1);
  size_t end = b.n;
  s.root = blk;
  b.n = hdr;
  fh_header(&b, &s);
  b.n = end;
  /* the table: one index, tracking dataspaces (1 << 1) and datatypes */
  align(&b, 8);
  size_t table = put(&b, "SMTB", 4);
  u(&b, 0, 1);
  u(&b, 1, 1);
  u(&b, (1 << 1) | (1 << 3), 2);
  u(&b, 1, 4);
  u(&b, 50, 2);
  u(&b, 40, 2);
  u(&b, 1, 2);
  u(&b, H5_UNDEF_ADDR, 8);
  u(&b, hdr, 8);
  csum(&b, table);
  /* the superblock extension */
  buf msg = {0};
  u(&msg, 0, 1);
  u(&msg, table, 8);
  u(&msg, 1, 1);
  uint8_t type = H5_MSG_SOHM_TABLE;
  uint64_t ext = ohdr(&b, 1, &type, &msg);
  set_ext(&b, ext);
  h5_file *f = finish(&b);
  /* a shared dataspace message: version 3, type 1, heap ID */
  uint8_t sh[10] = {3, 1, 0, (uint8_t)FH_PREFIX(1), 0, 14};
  h5_msg m = {H5_MSG_DATASPACE, H5_MSGFLAG_SHARED, -1, sh, sizeof sh};
  const uint8_t *data;
  size_t size;
  int rc = h5_msg_body(f, &m, &data, &size);
  ck_assert_msg(rc == H5_OK, "%s", h5_errmsg(f));
  ck_assert_uint_eq(size, 14);
  ck_assert(memcmp(data, "DATASPACE BODY", 14) == 0);
  /* twice: the heap stays open */
  ck_assert_int_eq(h5_msg_body(f, &m, &data, &size), H5_OK);
  /* an attribute: no index tracks it */
  m.type = H5_MSG_ATTRIBUTE;
  ck_assert_int_eq(h5_msg_body(f, &m, &data, &size), H5_ECORRUPT);
  ck_assert(strstr(h5_errmsg(f), "no index"));
  /* truncated */
  m.type = H5_MSG_DATASPACE;
  m.size = 6;
  ck_assert_int_eq(h5_msg_body(f, &m, &data, &size), H5_ECORRUPT);
  h5_close(f);
  /* the table's checksum */
  b.p[table + 6] ^= 1;
  f = finish(&b);
  m.size = sizeof sh;
  ck_assert_int_eq(h5_msg_body(f, &m, &data, &size), H5_ECORRUPT);
  ck_assert(strstr(h5_errmsg(f), "checksum"));
  h5_close(f);
  /* no superblock extension */
  set_ext(&b, H5_UNDEF_ADDR);
  f = finish(&b);
  ck_assert_int_eq(h5_msg_body(f, &m, &data, &size), H5_ECORRUPT);
  ck_assert(strstr(h5_errmsg(f), "superblock extension"));
  h5_close(f);
  free(msg.p);
  free(b.p);
}
END_TEST

/* ---- the writer's dense storage ---------------------------------------------- */

/* The heap address named by o's link info or attribute info message:
** H5_UNDEF_ADDR for compact storage. */
static uint64_t dense_heap(h5_obj *o, uint16_t type) {
  const h5_msg *m = h5_ohdr_find(&o->hdr, type);
  ck_assert_ptr_nonnull(m);
  ck_assert_uint_ge(m->size, 18);
  ck_assert_uint_eq(m->data[1], 0); /* no creation order */
  return util_get_le(m->data + 2, 8);
}

typedef struct hash_walk {
  size_t hash_at; /* where a record holds the name hash */
  uint32_t last;
  size_t n, bad;
} hash_walk;

static int hash_walk_cb(void *ctx, const uint8_t *rec, size_t len) {
  hash_walk *c = ctx;
  T_CHECK(len >= c->hash_at + 4, "record of %zu bytes", len);
  uint32_t h = (uint32_t)util_get_le(rec + c->hash_at, 4);
  if (c->n++ && h < c->last) c->bad++;
  c->last = h;
  return 0;
}

/* The records of o's dense name index (link info or attribute info message
** of type `type`): how many, checked to be in name hash order as libhdf5
** searches them. */
static size_t name_index_records(h5_obj *o, uint16_t type) {
  const h5_msg *m = h5_ohdr_find(&o->hdr, type);
  ck_assert_ptr_nonnull(m);
  hash_walk c = {type == H5_MSG_LINK_INFO ? 0 : 13, 0, 0, 0};
  int rc = h5_bt2_iter(o->f, util_get_le(m->data + 10, 8), hash_walk_cb, &c);
  ck_assert_msg(rc == H5_OK, "%s", h5_errmsg(o->f));
  ck_assert_uint_eq(c.bad, 0);
  return c.n;
}

/* Name i of a group of n links: 1 to 37 bytes, every 97th 300 and more
** (a 2-byte length field), and in groups of more than 5 name 5 has 5000
** bytes (a link message over 4 KiB: a huge heap object). */
static const char *wname(size_t i, size_t n, char *out) {
  if (i == 5 && n > 5) {
    memset(out, 'h', 5000);
    snprintf(out + 5000, 24, "%zu", i);
  } else if (i % 97 == 96) {
    memset(out, 'L', 300);
    snprintf(out + 300, 24, "%zu", i);
  } else {
    snprintf(out, 64, "%zu%.*s", i, (int)(i % 37), "-abcdefghijklmnopqrstuvwxyz0123456789");
  }
  return out;
}

/* The links of a group, as h5_group_iter lists them (in name order). */
typedef struct link_list {
  char **name;
  uint64_t *addr;
  size_t n, cap;
} link_list;

static int link_list_cb(void *ctx, const h5_link *l) {
  link_list *c = ctx;
  T_CHECK(l->type == H5_LINK_HARD && l->addr != H5_UNDEF_ADDR, "link %s", l->name);
  T_CHECK(c->n == 0 || strcmp(c->name[c->n - 1], l->name) < 0, "links out of order at %s",
          l->name);
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 16;
    c->name = realloc(c->name, c->cap * sizeof *c->name);
    c->addr = realloc(c->addr, c->cap * sizeof *c->addr);
    ck_assert(c->name && c->addr);
  }
  c->name[c->n] = strdup(l->name);
  c->addr[c->n++] = l->addr;
  return 0;
}

static link_list list_links(h5_obj *g) {
  link_list c = {NULL, NULL, 0, 0};
  ck_assert_msg(h5_group_iter(g, link_list_cb, &c) == H5_OK, "%s", h5_errmsg(g->f));
  return c;
}

static void link_list_free(link_list *c) {
  for (size_t i = 0; i < c->n; i++) free(c->name[i]);
  free(c->name);
  free(c->addr);
}

static size_t count_links(h5_obj *g) {
  link_list c = list_links(g);
  size_t n = c.n;
  link_list_free(&c);
  return n;
}

/* The object that link `name` of the list leads to. */
static h5_obj *find(h5_file *f, const link_list *c, const char *name) {
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(c->name[mid], name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  ck_assert_msg(lo < c->n && strcmp(c->name[lo], name) == 0, "no link %.40s", name);
  h5_obj *o;
  ck_assert_int_eq(h5_obj_open(f, c->addr[lo], &o), H5_OK);
  return o;
}

static h5_obj *child(h5_obj *g, const char *name) {
  link_list c = list_links(g);
  h5_obj *o = find(g->f, &c, name);
  link_list_free(&c);
  return o;
}

static h5w *new_file(char *path) {
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  h5w *w;
  char err[256];
  ck_assert_msg(h5w_create(path, 1, &w, err, sizeof err) == H5_OK, "h5w_create: %s", err);
  return w;
}

static h5_file *close_and_open(h5w *w, const char *path) {
  ck_assert_msg(h5w_close(w, 0) == H5_OK, "h5w_close: %s", h5w_errmsg(w));
  h5w_free(w);
  h5_file *f;
  char err[256];
  int rc = h5_open(path, &f, err, sizeof err);
  unlink(path);
  ck_assert_msg(rc == H5_OK, "h5_open: %s", err);
  return f;
}

static const size_t nlinks[] = {0, 1, 8, 9, 100, 3000, 30000};
#define NLINK_SIZES (sizeof nlinks / sizeof nlinks[0])

START_TEST(test_write_dense_links) {
  char path[] = "/tmp/test_h5_wlinks_XXXXXX";
  h5w *w = new_file(path);
  char *name = malloc(65536 + 16);
  ck_assert_ptr_nonnull(name);
  h5w_obj *g, *kid;
  for (size_t k = 0; k < NLINK_SIZES; k++) {
    snprintf(name, 32, "g%zu", nlinks[k]);
    ck_assert_int_eq(h5w_group(w, h5w_root(w), name, &g), H5_OK);
    for (size_t i = 0; i < nlinks[k]; i++)
      T_CHECK(h5w_group(w, g, wname(i, nlinks[k], name), &kid) == H5_OK, "%s", h5w_errmsg(w));
    if (nlinks[k]) /* a name taken */
      ck_assert_int_eq(h5w_group(w, g, wname(0, nlinks[k], name), &kid), H5_EINVAL);
  }
  /* two links, one with a name too long for a header message: dense */
  ck_assert_int_eq(h5w_group(w, h5w_root(w), "longname", &g), H5_OK);
  memset(name, 'n', 65535);
  name[65535] = '\0';
  ck_assert_int_eq(h5w_group(w, g, name, &kid), H5_OK);
  ck_assert_int_eq(h5w_group(w, g, "short", &kid), H5_OK);
  h5_file *f = close_and_open(w, path);
  h5_obj *root;
  ck_assert_int_eq(h5_root(f, &root), H5_OK);
  ck_assert_uint_eq(count_links(root), NLINK_SIZES + 1);
  for (size_t k = 0; k < NLINK_SIZES; k++) {
    snprintf(name, 32, "g%zu", nlinks[k]);
    h5_obj *o = child(root, name);
    link_list c = list_links(o);
    ck_assert_uint_eq(c.n, nlinks[k]);
    int dense = dense_heap(o, H5_MSG_LINK_INFO) != H5_UNDEF_ADDR;
    ck_assert_int_eq(dense, nlinks[k] > 8);
    if (dense) ck_assert_uint_eq(name_index_records(o, H5_MSG_LINK_INFO), nlinks[k]);
    /* every name leads to an empty group */
    for (size_t i = 0; i < nlinks[k]; i++) {
      h5_obj *e = find(f, &c, wname(i, nlinks[k], name));
      T_CHECK(h5_obj_kind(e) == H5_KIND_GROUP, "link %zu", i);
      if (i % 100 == 0) ck_assert_uint_eq(count_links(e), 0);
    }
    link_list_free(&c);
  }
  h5_obj *o = child(root, "longname");
  ck_assert_uint_eq(count_links(o), 2);
  child(o, "short");
  ck_assert_uint_ne(dense_heap(o, H5_MSG_LINK_INFO), H5_UNDEF_ADDR);
  memset(name, 'n', 65535);
  name[65535] = '\0';
  child(o, name);
  h5_close(f);
  free(name);
}
END_TEST

typedef struct attr_walk {
  size_t n;
  int bad;
  char first_bad[64];
} attr_walk;

/* Attribute "a<i>": an int32 array of i % 13 + 1 elements, of 20000 + i
** for every 100th (over 64 KiB), and from 10000 on of 1000 + i % 17 (around
** the heap's 4 KiB managed object limit: 8 KiB direct blocks, the smaller
** ones skipped, or huge objects); element j = (i + j) * 3 - 7. */
static uint64_t attr_len(size_t i) {
  return i >= 10000 ? 1000 + i % 17 : i % 100 == 99 ? 20000 + i : i % 13 + 1;
}

static int attr_walk_cb(void *ctx, const h5_attr *a) {
  attr_walk *c = ctx;
  size_t i = (size_t)strtoul(a->name + 1, NULL, 10);
  int ok = a->name[0] == 'a' && a->type && a->type->cls == H5_CLASS_INTEGER && a->type->size == 4 &&
           a->rank == 1 && a->nelems == attr_len(i);
  for (uint64_t j = 0; ok && j < a->nelems; j++)
    ok = (int32_t)util_get_le(a->data + 4 * j, 4) == (int32_t)((int64_t)(i + j) * 3 - 7);
  if (!ok && !c->bad++) snprintf(c->first_bad, sizeof c->first_bad, "%s", a->name);
  c->n++;
  return 0;
}

static void add_attrs(h5w *w, h5w_obj *o, size_t from, size_t n) {
  int32_t *v = malloc(sizeof *v * (20000 + 2 * (from + n)));
  ck_assert_ptr_nonnull(v);
  for (size_t i = from; i < from + n; i++) {
    char name[32];
    snprintf(name, sizeof name, "a%zu", i);
    uint64_t dims[1] = {attr_len(i)};
    for (uint64_t j = 0; j < dims[0]; j++) v[j] = (int32_t)((int64_t)(i + j) * 3 - 7);
    T_CHECK(h5w_attr(w, o, name, h5_type_new_int(4, 1), 1, dims, v) == H5_OK, "%s",
            h5w_errmsg(w));
  }
  free(v);
}

START_TEST(test_write_dense_attrs) {
  static const size_t counts[] = {0, 8, 9, 99, 2000};
  enum { NC = sizeof counts / sizeof counts[0] };
  char path[] = "/tmp/test_h5_wattrs_XXXXXX";
  h5w *w = new_file(path);
  h5w_obj *o;
  char name[32];
  for (size_t k = 0; k < NC; k++) {
    snprintf(name, sizeof name, "g%zu", counts[k]);
    ck_assert_int_eq(h5w_group(w, h5w_root(w), name, &o), H5_OK);
    add_attrs(w, o, 0, counts[k]);
    snprintf(name, sizeof name, "d%zu", counts[k]);
    uint64_t dims[1] = {3};
    int8_t data[3] = {1, 2, 3};
    ck_assert_int_eq(h5w_dataset(w, h5w_root(w), name, h5_type_new_int(1, 1), 1, dims,
                                 NULL, NULL, &o), H5_OK);
    ck_assert_int_eq(h5w_write(w, o, data), H5_OK);
    add_attrs(w, o, 0, counts[k]);
    if (counts[k]) { /* a name taken */
      int32_t one = 1;
      ck_assert_int_eq(h5w_attr(w, o, "a0", h5_type_new_int(4, 1), 0, NULL, &one), H5_EINVAL);
    }
  }
  /* two attributes, one over 64 KiB: dense */
  ck_assert_int_eq(h5w_group(w, h5w_root(w), "big", &o), H5_OK);
  add_attrs(w, o, 98, 2);
  /* attribute messages of about 4 KiB */
  ck_assert_int_eq(h5w_group(w, h5w_root(w), "wide", &o), H5_OK);
  add_attrs(w, o, 10000, 40);
  h5_file *f = close_and_open(w, path);
  h5_obj *root;
  ck_assert_int_eq(h5_root(f, &root), H5_OK);
  for (size_t k = 0; k < NC; k++)
    for (int ds = 0; ds < 2; ds++) {
      snprintf(name, sizeof name, "%c%zu", ds ? 'd' : 'g', counts[k]);
      h5_obj *c = child(root, name);
      attr_walk aw = {0, 0, ""};
      ck_assert_int_eq(h5_attr_iter(c, attr_walk_cb, &aw), H5_OK);
      ck_assert_msg(!aw.bad, "%s: %d attributes wrong, first %s", name, aw.bad, aw.first_bad);
      ck_assert_uint_eq(aw.n, counts[k]);
      int dense = dense_heap(c, H5_MSG_ATTR_INFO) != H5_UNDEF_ADDR;
      ck_assert_int_eq(dense, counts[k] > 8);
      if (dense) ck_assert_uint_eq(name_index_records(c, H5_MSG_ATTR_INFO), counts[k]);
    }
  h5_obj *c = child(root, "big");
  attr_walk aw = {0, 0, ""};
  ck_assert_int_eq(h5_attr_iter(c, attr_walk_cb, &aw), H5_OK);
  ck_assert_msg(!aw.bad && aw.n == 2, "big: %zu attributes, %d wrong", aw.n, aw.bad);
  ck_assert_uint_ne(dense_heap(c, H5_MSG_ATTR_INFO), H5_UNDEF_ADDR);
  c = child(root, "wide");
  memset(&aw, 0, sizeof aw);
  ck_assert_int_eq(h5_attr_iter(c, attr_walk_cb, &aw), H5_OK);
  ck_assert_msg(!aw.bad && aw.n == 40, "wide: %zu attributes, %d wrong", aw.n, aw.bad);
  ck_assert_uint_eq(name_index_records(c, H5_MSG_ATTR_INFO), 40);
  h5_close(f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("h5_heap");
  TCase *tc = tcase_create("btree2");
  tcase_add_test(tc, test_bt2_valid);
  tcase_add_test(tc, test_bt2_empty);
  tcase_add_test(tc, test_bt2_corrupt);
  tcase_add_test(tc, test_bt2_not_a_tree);
  suite_add_tcase(s, tc);
  tc = tcase_create("fheap");
  tcase_add_test(tc, test_fheap_root_direct);
  tcase_add_test(tc, test_fheap_dblock_checksum);
  tcase_add_test(tc, test_fheap_indirect);
  tcase_add_test(tc, test_fheap_huge_tiny);
  tcase_add_test(tc, test_fheap_huge_btree);
  tcase_add_test(tc, test_fheap_filtered_indirect);
  tcase_add_test(tc, test_fheap_filtered);
  tcase_add_test(tc, test_fheap_bad_header);
  suite_add_tcase(s, tc);
  tc = tcase_create("sohm");
  tcase_add_test(tc, test_sohm);
  suite_add_tcase(s, tc);
  tc = tcase_create("writer");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_write_dense_links);
  tcase_add_test(tc, test_write_dense_attrs);
  suite_add_tcase(s, tc);
  return t_run(s);
}
