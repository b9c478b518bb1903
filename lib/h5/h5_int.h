/*
** lib/h5/h5_int.h - shared by the files of lib/h5, not installed.
**
** The whole file is memory-mapped read-only.  Every structure is parsed
** through an h5_cur, a cursor over a checked span of the map whose reads
** never leave the span: a read past the end sets cur.bad and yields zeros,
** so a parser reads its fields, then checks bad once before using any of
** them.  Addresses read from the file are checked with h5_span() before
** anything is read at them.
*/
#ifndef H5MEM_H5_INT_H
#define H5MEM_H5_INT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h5.h"
#include "util/le.h"

/* Bounds on what a file may make us do; beyond them it is corrupt. */
#define H5_MAX_CONTINUATIONS 65536 /* object header chunks per object */
#define H5_MAX_BTREE_DEPTH 64
#define H5_MAX_TYPE_DEPTH 32       /* nested compound / array / vlen */
#define H5_MAX_MEMBERS 65536       /* compound or enum members */
#define H5_VDS_MAX_DEPTH 8         /* virtual datasets read through one another */

/* ---- cursor ------------------------------------------------------------ */

typedef struct h5_cur {
  const uint8_t *p, *end;
  int bad; /* a read went past end */
} h5_cur;

static inline h5_cur h5c_make(const uint8_t *p, size_t len) {
  h5_cur c = {p, p + len, 0};
  return c;
}

static inline size_t h5c_left(const h5_cur *c) {
  return c->bad ? 0 : (size_t)(c->end - c->p);
}

/* n bytes (or NULL, setting bad) */
static inline const uint8_t *h5c_bytes(h5_cur *c, size_t n) {
  if (c->bad || (size_t)(c->end - c->p) < n) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *q = c->p;
  c->p += n;
  return q;
}

static inline void h5c_skip(h5_cur *c, size_t n) { (void)h5c_bytes(c, n); }

/* floor(log2(v)), 0 for v <= 1 */
static inline unsigned h5_log2_floor(uint64_t v) {
  unsigned b = 0;
  while (v > 1) {
    v >>= 1;
    b++;
  }
  return b;
}

/* Index of name in a sorted array of n entries whose names name_at(ctx, i)
** gives, or n when it is not there. */
static inline size_t h5_bsearch_name(size_t n, const char *(*name_at)(const void *, size_t),
                                     const void *ctx, const char *name) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(name_at(ctx, mid), name);
    if (c == 0) return mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return n;
}

/* Index of the first of n entries, in ascending order of the keys
** key_at(ctx, i) gives, whose key is >= key; n when there is none. */
static inline size_t h5_lower_bound(size_t n, uint64_t (*key_at)(const void *, size_t),
                                    const void *ctx, uint64_t key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (key_at(ctx, mid) < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static inline uint64_t h5c_uint(h5_cur *c, int n) {
  const uint8_t *q = h5c_bytes(c, (size_t)n);
  return q ? util_get_le(q, n) : 0;
}

static inline uint8_t h5c_u8(h5_cur *c) { return (uint8_t)h5c_uint(c, 1); }
static inline uint16_t h5c_u16(h5_cur *c) { return (uint16_t)h5c_uint(c, 2); }
static inline uint32_t h5c_u32(h5_cur *c) { return (uint32_t)h5c_uint(c, 4); }

/* ---- files ---------------------------------------------------------------- */

/* Things parsed from a file, by their address (open addressing). */
typedef struct h5_amap {
  uint64_t *key;
  void **val; /* NULL: empty slot */
  size_t cap, n;
} h5_amap;

void *h5_amap_get(const h5_amap *m, uint64_t key);
int h5_amap_put(h5_amap *m, uint64_t key, void *val); /* 0, or -1 (OOM) */
void h5_amap_free(h5_amap *m);

struct h5_file {
  int fd;
  const uint8_t *map; /* the whole file, read-only; NULL when size is 0 */
  int mapped;         /* map came from mmap (else from h5_open_mem) */
  uint8_t *owned;     /* a file image's copy, with a metadata cache image
                         laid over it (h5_mdci.c), or NULL */
  int overlaid;       /* a metadata cache image was laid over the map: the
                         map, not the file, has the bytes (h5_span_read) */
  uint64_t size;
  uint64_t base;      /* absolute offset of relative address 0 */
  int so, sl;         /* sizes of offsets and lengths, bytes */
  int sb_version;
  uint64_t root_addr;
  uint64_t ext_addr;  /* superblock extension object header */
  h5_amap objs;       /* h5_obj *, by object header address */
  h5_amap gcols;      /* struct h5_gcol *, by collection address */
  h5_amap sohm_heaps; /* h5_fheap * of shared message indexes, by heap
                         address, open until h5_close (h5_ohdr.c) */
  struct h5_vsrc *vsrc; /* source files of virtual datasets, open until */
  size_t nvsrc;         /* h5_close (h5_vds.c) */
  int vds_depth;        /* virtual datasets being read through, this file's
                           included (sources of sources ...) */
  char err[512];
};

/* Record a failure: the message goes into f->err (an argument may be
** h5_errmsg(f) itself); returns code. */
int h5_err(h5_file *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The bytes [addr, addr+len) of the file (addr relative to the base), or
** NULL when any of them lies outside the file or addr is undefined. */
const uint8_t *h5_span(const h5_file *f, uint64_t addr, uint64_t len);

/* The bytes [p, p + len) of f's map (a span h5_span gave), to be read
** once and whole (a stored chunk about to be decoded): for 64 KiB or more
** of a file opened from a path, a copy read with pread into a stage buffer
** (*copy, for h5_stage_free), else p itself (*copy NULL; always so when a
** metadata cache image was laid over the map).  Each open maps
** the file anew, and touching a fresh mapping costs a page fault per page
** (dearly on a virtual machine: a 52 MB blosc dataset read in 33 ms
** through the map, 13 ms through pread); the copy costs less. */
const uint8_t *h5_span_read(const h5_file *f, const uint8_t *p, uint64_t len, uint8_t **copy);

/* A cursor over [addr, end of file). */
h5_cur h5_cur_at(const h5_file *f, uint64_t addr);

/* Read an address / a length field of the file's sizes; an all-ones
** address reads as H5_UNDEF_ADDR. */
uint64_t h5c_addr(h5_cur *c, const h5_file *f);
uint64_t h5c_len(h5_cur *c, const h5_file *f);

/* ---- checksums (h5_checksum.c) ------------------------------------------- */

/* Jenkins lookup3 hashlittle with initial value 0: HDF5's metadata checksum */
uint32_t h5_lookup3(const void *data, size_t len, uint32_t initval);
/* HDF5's Fletcher-32 over big-endian 16-bit words (the fletcher32 filter) */
uint32_t h5_fletcher32(const void *data, size_t len);

/* Whether the 4 bytes after data[0..len) hold lookup3(data). */
int h5_checksum_ok(const uint8_t *data, size_t len);

/* ---- object headers (h5_ohdr.c) ----------------------------------------- */

enum {
  H5_MSG_NIL = 0x00,
  H5_MSG_DATASPACE = 0x01,
  H5_MSG_LINK_INFO = 0x02,
  H5_MSG_DATATYPE = 0x03,
  H5_MSG_FILL_OLD = 0x04,
  H5_MSG_FILL = 0x05,
  H5_MSG_LINK = 0x06,
  H5_MSG_EXTERNAL = 0x07,
  H5_MSG_LAYOUT = 0x08,
  H5_MSG_BOGUS = 0x09,
  H5_MSG_GROUP_INFO = 0x0a,
  H5_MSG_FILTERS = 0x0b,
  H5_MSG_ATTRIBUTE = 0x0c,
  H5_MSG_COMMENT = 0x0d,
  H5_MSG_MTIME_OLD = 0x0e,
  H5_MSG_SOHM_TABLE = 0x0f,
  H5_MSG_CONTINUATION = 0x10,
  H5_MSG_SYMBOL_TABLE = 0x11,
  H5_MSG_MTIME = 0x12,
  H5_MSG_BTREE_K = 0x13,
  H5_MSG_DRIVER_INFO = 0x14,
  H5_MSG_ATTR_INFO = 0x15,
  H5_MSG_REFCOUNT = 0x16,
  H5_MSG_FSINFO = 0x17
};

#define H5_MSGFLAG_SHARED 0x02

/* One header message; data points into the file map. */
typedef struct h5_msg {
  uint16_t type;
  uint8_t flags;
  int32_t corder; /* creation order, -1 if not stored */
  const uint8_t *data;
  size_t size;
} h5_msg;

typedef struct h5_ohdr {
  int version;
  uint8_t flags;  /* v2 header flags */
  int64_t mtime;  /* v2 header modification time, or -1 */
  uint32_t nmsg;
  h5_msg *msgs;   /* malloc'd */
} h5_ohdr;

/* Parse the object header at addr, following continuation blocks. */
int h5_ohdr_read(h5_file *f, uint64_t addr, h5_ohdr *out);
void h5_ohdr_free(h5_ohdr *h);

/* The first message of the given type, or NULL. */
const h5_msg *h5_ohdr_find(const h5_ohdr *h, uint16_t type);

/* The body of a message that may be shared (flags bit 1): for a shared one,
** the message it refers to (in another object header, or in the shared
** message heap).  *data and *size point into the map. */
int h5_msg_body(h5_file *f, const h5_msg *m, const uint8_t **data,
                size_t *size);

struct h5_obj {
  h5_file *f;
  uint64_t addr;
  h5_kind kind;
  h5_ohdr hdr;
  struct h5_dset *dset;       /* dataset facts, decoded on first use */
  struct h5_attrtab *attrs;   /* attributes, decoded on first use */
  struct h5_linktab *links;   /* group members, collected on first use */
  int loading;                /* its dataset facts are being decoded (a
                                 virtual dataset that is its own source) */
};

void h5_attrtab_free(struct h5_attrtab *t); /* h5_attr.c */
void h5_linktab_free(struct h5_linktab *t); /* h5_group.c */

/* ---- datatypes and dataspaces (h5_type.c) -------------------------------- */

/* Decode a datatype message body.  *out is malloc'd (h5_type_free). */
int h5_type_decode(h5_file *f, const uint8_t *data, size_t size,
                   h5_type **out);

/* Append the datatype message body for t (h5_write.c). */
int h5_type_encode(const h5_type *t, strbuf *out);

typedef struct h5_space {
  int rank; /* -1 null, 0 scalar */
  uint64_t dims[H5_MAX_RANK];
  uint64_t maxdims[H5_MAX_RANK];
  uint64_t nelems;
} h5_space;

int h5_space_decode(h5_file *f, const uint8_t *data, size_t size,
                    h5_space *out);

/* ---- datasets (h5_dset.c, h5_chunk.c, h5_filter.c) ---- */

/* Chunk index types (layout v4); layout v1-v3 chunks use a v1 B-tree. */
enum {
  H5_CIDX_BTREE1 = 0,
  H5_CIDX_SINGLE = 1,
  H5_CIDX_IMPLICIT = 2,
  H5_CIDX_FARRAY = 3,
  H5_CIDX_EARRAY = 4,
  H5_CIDX_BTREE2 = 5
};

/* Everything a read needs to know about a dataset; owned by its h5_obj. */
struct h5_dset {
  h5_dset_info info; /* the public part; info.type is type below */
  h5_type *type;
  h5_space space;
  int layout_version;
  /* compact */
  const uint8_t *compact;
  size_t compact_len;
  /* contiguous: addr (H5_UNDEF_ADDR when never written) and size;
     chunked: the index address */
  uint64_t addr, size;
  /* chunked */
  int cidx;                 /* H5_CIDX_* */
  uint8_t chunk_flags;      /* layout v4 flags */
  uint64_t chunk_bytes;     /* bytes of one chunk, unfiltered */
  uint64_t chunk_esize;     /* element size the layout message gives */
  uint8_t idx_params[8];    /* the index type's parameters, as stored */
  uint64_t single_size;     /* single chunk, filtered: its size and mask */
  uint32_t single_mask;
  /* filters */
  h5_filter *filters;
  char **filter_names;
  uint32_t *cd;             /* all client data values */
  /* fill value (type->size bytes, malloc'd) or NULL for zeros */
  uint8_t *fill;
  /* external storage: the external file list message, if any */
  const h5_msg *efl;
  /* virtual: the mappings' global heap object (collection addr, index) */
  uint32_t vds_index;
  struct h5_vds *vds;
};

/* The decoded dataset behind o (decoded on first use); freed with o. */
void h5_dset_free(struct h5_dset *d);
int h5_dset_get(h5_obj *o, struct h5_dset **out);

/* Fill buf (n elements of esz bytes) with the dataset's fill value. */
void h5_fill(const struct h5_dset *d, uint8_t *buf, uint64_t n);


/* h5_codec.c: compress one chunk (len bytes of elements of esz bytes,
** HDF5's shuffle already applied when asked for) with the codec p names;
** *out is malloc'd (*outlen bytes).  H5_EUNSUPPORTED without the library,
** H5_EIO when the library fails. */
int h5_codec_encode(const h5w_dcpl *p, size_t esz, const uint8_t *in, size_t len, uint8_t **out,
                    size_t *outlen);
/* The client values h5py's plugins store for the codec p names
** (blosc: its filter version, format, type size, chunk bytes, level,
** shuffle, compressor; zstd: its level); returns how many (at most 8). */
int h5_codec_cd(const h5w_dcpl *p, size_t esz, uint64_t chunk_bytes, uint32_t *cd);

/* h5_mdci.c: lay a metadata cache image (a superblock extension message
** naming it) over the file's bytes; H5_OK when there is none. */
int h5_mdci_load(h5_file *f);

/* Whether a file name another file gives (external data, virtual dataset
** sources) stays inside that file's directory: relative, no "..". */
int h5_name_inside(const char *name);

/* The directory of f's file with a trailing '/' ("" when unknown: names
** are then relative to the working directory). */
void h5_file_dir(const h5_file *f, char *dir, size_t cap);


/* h5_filter.c: a filter's name for messages: the registered one, else the
** name stored with it, else "unregistered". */
const char *h5_filter_label(const h5_filter *flt);

/* h5_chunk.c: the bytes the written chunks of the current extent take in
** the file (their stored, filtered sizes). */
int h5_chunked_storage(h5_file *f, struct h5_dset *d, uint64_t *bytes);

/* h5_chunk.c: call cb for every written chunk of the current extent,
** whatever the chunk index (h5_chunk_cb: h5.h). */
int h5_chunked_each(h5_file *f, struct h5_dset *d, h5_chunk_cb cb, void *ctx);
/* A hyperslab of a dataset of rank r: in dimension k the elements
** start[k] + i * stride[k] for i in [0, count[k]).  Checked by the caller
** to lie inside the dataset, with no count 0 and no stride 0. */
typedef struct h5_sel {
  uint64_t start[H5_MAX_RANK], count[H5_MAX_RANK], stride[H5_MAX_RANK];
} h5_sel;

/* h5_chunk.c: read the elements sel selects (NULL: the whole dataset) from
** a chunked dataset into out (count[0] x ... elements, C order), decoding
** only the chunks the selection touches, one at a time; unwritten chunks
** (and chunks the index does not list) get the fill value, written only
** where no chunk's data lands, so out need not be filled first. */
int h5_chunked_read_sel(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *out,
                        size_t outlen);

/* Copy the elements sel selects from the block of data at origin (bdims
** elements per dimension, C order, clipped to the dataset's extent) to
** their places in out. */
void h5_sel_copy_block(const struct h5_dset *d, const h5_sel *sel, const uint64_t *origin,
                       const uint64_t *bdims, const uint8_t *blk, uint8_t *out);

/* h5_vds.c: virtual datasets.  h5_vds_load decodes d's mappings and sets
** its extent (opening the sources an unlimited mapping depends on);
** h5_vds_read reads the elements sel selects (NULL: all, n elements) into
** out, the fill value where no source is. */
int h5_vds_load(h5_file *f, struct h5_dset *d);
int h5_vds_read(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *out, uint64_t n);
void h5_vds_free(struct h5_vds *v);
void h5_vsrc_close(h5_file *f); /* the source files f opened */

/* h5_filter.c: undo a chunk's filters (those not skipped by mask) in
** reverse order.  in/inlen: the stored chunk; on success *out is a stage
** buffer of *outlen bytes (the caller frees it: h5_stage_free), or dest
** itself: given the chunk's place in the caller's output (chunk_bytes
** bytes, NULL for none), the last stage decodes into it where it can
** (blosc, lz4, shuffle), saving a copy. */
int h5_unfilter(h5_file *f, const struct h5_dset *d, uint32_t mask, const uint8_t *in,
                size_t inlen, uint8_t *dest, uint8_t **out, size_t *outlen);
/* The most bytes one stage of a chunk's pipeline may produce: the chunk
** plus what a compressor may add to incompressible data. */
uint64_t h5_stage_cap(const struct h5_dset *d);

/* A stage's output buffer, and its release (h5_filter.c): between
** h5_stage_begin and h5_stage_end on a thread (a chunked read), large ones
** are kept for the next chunk, and freed by h5_stage_end; outside, plain
** malloc and free.  h5_unfilter's *out is one: release it with
** h5_stage_free. */
#define H5_STAGE_SLOTS 4
typedef struct h5_stage_cache {
  void *p[H5_STAGE_SLOTS];
  size_t cap[H5_STAGE_SLOTS];
  struct h5_stage_cache *outer;
} h5_stage_cache;
void h5_stage_begin(h5_stage_cache *c);
void h5_stage_end(h5_stage_cache *c);
void *h5_stage_alloc(size_t n);
void h5_stage_free(void *p);

/* h5_codec.c: undo one third-party compression filter (szip, lzo, bzip2,
** blosc, lz4, zstd) through its library, into a malloc'd *out; a filter
** this build lacks (or no one has): H5_EUNSUPPORTED, "filter N (name) is
** not available", saying which library the build lacks. */
int h5_codec_unfilter(h5_file *f, const struct h5_dset *d, const h5_filter *flt, const uint8_t *in, size_t inlen,
                      uint8_t **out, size_t *outlen);

/* ---- v1 B-trees (h5_btree1.c) ------------------------------------------ */

/* Called for each child of a leaf, in key order: the keys on its left and
** right (keylen bytes each, in the file) and its address.  Return 0 to go on;
** anything else stops the walk and is returned. */
typedef int (*h5_bt1_cb)(void *ctx, const uint8_t *left, const uint8_t *right,
                         uint64_t child);

/* Asked, when not NULL, for each child (of any level) before it is visited,
** with the keys around it: nonzero skips the child and everything below it.
** Keys bound a child's contents: each key is <= everything on its right. */
typedef int (*h5_bt1_skip)(void *ctx, const uint8_t *left, const uint8_t *right);

/* Walk the v1 B-tree of the given node type (0 groups, 1 chunks) rooted at
** addr; keylen is the size of one key (groups: sizeof lengths; chunks:
** 8 + 8 * (rank + 1)). */
int h5_bt1_iter(h5_file *f, uint64_t addr, int type, size_t keylen,
                h5_bt1_skip skip, h5_bt1_cb cb, void *ctx);

/* ---- v2 B-trees (h5_btree2.c) and fractal heaps (h5_fheap.c) ---- */

/* Call cb with every record of the v2 B-tree at addr, in order. */
typedef int (*h5_bt2_cb)(void *ctx, const uint8_t *rec, size_t len);
int h5_bt2_iter(h5_file *f, uint64_t addr, h5_bt2_cb cb, void *ctx);

/* A v2 B-tree's shape, as libhdf5 derives it from the node size, record
** size and size of offsets; the reader and the writer share it so that
** they agree byte for byte (h5_btree2.c). */
#define H5_BT2_PREFIX 10 /* node signature 4, version 1, type 1, checksum 4 */
typedef struct h5_bt2_geom {
  int nw;                               /* bytes of a child's record count */
  uint64_t max[H5_MAX_BTREE_DEPTH + 1]; /* records a node holds, by depth */
  uint64_t cum[H5_MAX_BTREE_DEPTH + 1]; /* most records below a node */
  int tw[H5_MAX_BTREE_DEPTH + 1];       /* bytes of a child's total count */
} h5_bt2_geom;

/* Fill g for depths 0..depth (<= H5_MAX_BTREE_DEPTH).  0, or -1 when a
** level cannot hold a single record. */
int h5_bt2_geometry(uint64_t node_size, uint64_t rec_size, int so, int depth,
                    h5_bt2_geom *g);

/* floor(log2(n)) / 8 + 1: the bytes libhdf5 uses to encode values <= n */
static inline int h5_enc_bytes(uint64_t n) { return (int)(h5_log2_floor(n) / 8 + 1); }

typedef struct h5_fheap h5_fheap;
int h5_fheap_open(h5_file *f, uint64_t addr, h5_fheap **out);
/* The object with heap ID id (idlen bytes).  *data stays valid until the
** next h5_fheap_get on h or h5_fheap_close(h). */
int h5_fheap_get(h5_fheap *h, const uint8_t *id, size_t idlen,
                 const uint8_t **data, size_t *len);
void h5_fheap_close(h5_fheap *h); /* NULL is a no-op */

/* ---- heaps (h5_heap.c) --------------------------------------------------- */

/* The NUL-terminated string at offset off in the local heap at heap_addr. */
int h5_lheap_string(h5_file *f, uint64_t heap_addr, uint64_t off,
                    const char **s);

/* The object with index idx in the global heap collection at addr. */
int h5_gheap_get(h5_file *f, uint64_t addr, uint32_t idx,
                 const uint8_t **data, size_t *len);

/* ---- the writer's internals (h5_write.c, h5_wdense.c) -------------------- */

/* Record a failure of w (its message in h5w_errmsg); returns code. */
int h5w_err(h5w *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record a failed write or sync (errno set by it): H5_EFULL when it found no
** space, else H5_EIO, with what failed in the message. */
int h5w_errno(h5w *w, const char *what);
/* Write len bytes at the end of the file; *at gets their address. */
int h5w_file_append(h5w *w, const void *buf, size_t len, uint64_t *at);
/* Set len bytes aside at the end of the file, to be written later with
** h5w_file_write; *at gets their address. */
int h5w_file_reserve(h5w *w, uint64_t len, uint64_t *at);
int h5w_file_write(h5w *w, const void *buf, size_t len, uint64_t at);

/* One link or attribute for dense storage: its name and its encoded
** message (link message or attribute message body). */
typedef struct h5w_dense_item {
  const char *name;
  const uint8_t *msg;
  size_t len;
} h5w_dense_item;

enum { H5W_DENSE_LINKS, H5W_DENSE_ATTRS };

/* h5_wdense.c: write the n items (names distinct) as libhdf5's dense
** storage of a group's links or an object's attributes: a fractal heap of
** the messages and a v2 B-tree indexing them by name hash.  Their addresses
** go to *heap_addr and *bt2_addr, for the link info or attribute info
** message. */
int h5w_dense_write(h5w *w, int kind, const h5w_dense_item *items, size_t n,
                    uint64_t *heap_addr, uint64_t *bt2_addr);

/* ---- the writer's objects (h5_write.c, h5_wopen.c) ---------------------- */

/* The writer's internals shared by h5_write.c (new objects, chunks,
** headers, flushes) and h5_wopen.c (opening an existing file and adapting
** its objects copy-on-write). */

#define W_SO 8 /* sizes of offsets and lengths written */

/* One entry of a chunked dataset's index. */
typedef struct w_chunk {
  uint64_t off[H5_MAX_RANK]; /* element offsets of the chunk */
  uint64_t addr, size;
  uint32_t mask;
} w_chunk;

/* One attribute: its message body is attrs.buf[off, off + len). */
typedef struct w_attr {
  char *name;
  size_t off, len;
} w_attr;

/* A set of names (pointers to strings owned elsewhere), to refuse
** duplicates without comparing every pair. */
typedef struct w_names {
  const char **slot; /* NULL: empty */
  size_t cap, n;
} w_names;

/* A group or dataset.  Allocated by h5w_group/h5w_dataset (new objects) or
** by h5w_lookup (objects of an opened file: old is set); owned by its
** parent (the root by h5w) and freed with it. */
struct h5w_obj {
  int is_group;
  char *name;
  h5w_obj *parent;
  uint64_t addr; /* object header, once written (old objects: where it is) */
  int dirty;     /* changed since the last flush: needs a new header */
  /* an object of the opened file: its header is read through the reader
     (owned by h5w's reader); messages not rewritten are carried over */
  h5_obj *old;
  int old_ok;        /* 0 unchecked, 1 may be rewritten, -1 may not */
  int attrs_loaded;  /* old attributes copied into attrs (all re-emitted) */
  int data_changed;  /* old dataset: dataspace and layout rewritten */
  int chunks_loaded; /* old dataset: index read into chunks, ready to append */
  int type_borrowed; /* type belongs to the reader */
  /* group */
  h5w_obj **kids;
  size_t nkids, capkids;
  w_names kid_names;
  /* attribute message bodies, encoded, one after the other */
  strbuf attrs;
  w_attr *attrv;
  size_t nattrs, capattrs;
  w_names attr_names;
  /* dataset */
  h5_type *type;
  int rank;
  uint64_t dims[H5_MAX_RANK], maxdims[H5_MAX_RANK];
  h5w_dcpl dcpl;
  uint8_t *fill;
  int written;
  uint64_t data_addr, data_size;   /* contiguous */
  uint8_t *compact;                /* compact */
  size_t compact_len;
  w_chunk *chunks;                 /* chunked, sorted by offset */
  size_t nchunks, capchunks;
  size_t nprov_listed;             /* the last ones of chunks are provisional */
  w_chunk *prov;                   /* provisional chunks of the last flush */
  size_t nprov;
  uint8_t *pending;                /* appended rows not yet in a chunk */
  uint64_t npending;
  int appended;
};

struct h5w {
  int fd;
  uint64_t eoa;
  h5w_obj *root;
  int threads;
  int failed;
  char err[512];
  int code;     /* the H5_E* code of the last failure (err) */
  /* the global heap collection being filled (variable-length data) */
  uint8_t *gcol;
  uint64_t gcol_addr, gcol_cap, gcol_used;
  uint16_t gcol_next;
  /* superblock fields kept from an opened file */
  int sb_version;
  uint64_t ext_addr;
  h5_file *rf; /* the opened file as it was (h5w_open), or NULL */
  uint64_t committed_eoa; /* the end of file the last superblock on disk records */
  int sb_started;         /* a superblock write was begun and not completed */
  int (*on_commit)(void *ctx, int before); /* h5w_on_commit */
  void *commit_ctx;
  const char *commit_msg;
};

/* h5_write.c */
int h5w_names_has(const w_names *s, const char *name);
int h5w_names_add(w_names *s, const char *name);
/* Attach o (allocated by the caller) to parent as name without marking
** anything changed. */
int h5w_kid_attach(h5w *w, h5w_obj *parent, const char *name, h5w_obj *o);
/* Make room for n more chunk entries. */
int h5w_chunks_reserve(h5w *w, h5w_obj *d, size_t n);
/* Add an encoded attribute message body, as h5w_attr does. */
int h5w_attr_raw(h5w *w, h5w_obj *o, const char *name, const uint8_t *msg, size_t len);
void h5w_obj_free(h5w_obj *o);

/* h5_wopen.c: old objects */
/* Whether old object o may get a new header (new-style group, no creation
** order tracking, ...); sets the error when not. */
int h5w_old_check(h5w *w, h5w_obj *o);
/* Copy o's old attributes into o->attrs (once), so that all of them are
** written again with the new ones. */
int h5w_old_attrs(h5w *w, h5w_obj *o);
/* Get old dataset d ready for h5w_append: its chunk index into d->chunks,
** the rows of a last partial row of chunks into d->pending, its filters
** into d->dcpl. */
int h5w_old_prepare_append(h5w *w, h5w_obj *d);

#endif /* H5MEM_H5_INT_H */
