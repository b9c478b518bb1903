/*
** lib/h5/h5.h - h5mem's own HDF5 format engine: the public API.
**
** Reads what libhdf5 and h5py write (superblocks 0-3, object headers v1 and
** v2, old and new style groups, every layout and chunk index, the common
** filters) without libhdf5.  It knows nothing of SQLite.
**
** Handles are opaque.  An h5_file owns everything opened from it: objects
** (h5_obj) and types (h5_type) stay valid until h5_close() of their file.
** One thread at a time per h5_file.
**
** Every function that can fail returns an int status: H5_OK (0) or a
** negative H5_E* code, with a message in h5_errmsg(file) naming the
** problem (and, for corrupt files, where).  No input makes these functions
** crash, hang or allocate without bound: every offset, length and count read
** from a file is checked against the file's size before it is used.
*/
#ifndef H5MEM_H5_H
#define H5MEM_H5_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/strbuf.h"

/* The codes of the one error space (util/err.h). */
enum {
  H5_OK = UTIL_OK,
  H5_EIO = UTIL_EIO,                 /* the operating system refused (open, mmap, ...) */
  H5_ENOMEM = UTIL_ENOMEM,           /* out of memory */
  H5_ECORRUPT = UTIL_ECORRUPT,       /* the file breaks the format */
  H5_EUNSUPPORTED = UTIL_EUNSUPPORTED, /* valid HDF5 this engine does not handle (yet) */
  H5_ENOTFOUND = UTIL_ENOTFOUND,     /* no such link, attribute, ... */
  H5_EINVAL = UTIL_EINVAL,           /* a bad argument from the caller */
  H5_ESTOP = UTIL_ESTOP,             /* an iteration callback asked to stop */
  H5_EFULL = UTIL_EFULL              /* a write found no space (disk full, file size limit, quota) */
};

#define H5_UNDEF_ADDR UINT64_MAX /* "no address" in any offset size */
#define H5_MAX_RANK 32           /* HDF5's own limit on dimensions */

typedef struct h5_file h5_file;
typedef struct h5_obj h5_obj;
typedef struct h5_type h5_type;

/* ---- files --------------------------------------------------------- */

/* Open an existing HDF5 file read-only.  On failure returns an H5_E* code,
** *out is NULL, and a message is in err (errlen bytes). */
int h5_open(const char *path, h5_file **out, char *err, size_t errlen);

/* The same for a file image in memory (len bytes at data), which must stay
** unchanged until h5_close. */
int h5_open_mem(const void *data, size_t len, h5_file **out, char *err,
                size_t errlen);

/* Close the file and everything opened from it.  NULL is a no-op. */
void h5_close(h5_file *f);

/* The message of the last failure on f (never NULL). */
const char *h5_errmsg(const h5_file *f);
/* About to read the whole file: map all its pages now (one call, not a
** page fault each), or at least start reading them. */
void h5_file_prefault(h5_file *f);

/* Copy len bytes at file address addr into dst: read from the file (no
** page of the mapping touched: a page fault each is what a scattered read
** of the mapping costs), or copied from the image.  H5_OK, or H5_ECORRUPT
** when they are not all in the file. */
int h5_file_copy(h5_file *f, uint64_t addr, void *dst, uint64_t len);

/* Facts from the superblock. */
typedef struct h5_file_info {
  int superblock_version;
  int sizeof_offsets, sizeof_lengths;
  uint64_t base_addr;   /* absolute offset addresses are relative to */
  uint64_t file_size;
  uint64_t root_addr;   /* root group object header */
} h5_file_info;
void h5_file_info_get(const h5_file *f, h5_file_info *info);

/* ---- objects ------------------------------------------------------- */

typedef enum h5_kind {
  H5_KIND_GROUP,
  H5_KIND_DATASET,
  H5_KIND_DATATYPE, /* a committed (named) datatype */
  H5_KIND_OTHER
} h5_kind;

/* The object whose header is at addr (file-relative).  The handle belongs to
** the file (no close needed); opening the same address twice returns the
** same handle. */
int h5_obj_open(h5_file *f, uint64_t addr, h5_obj **out);
int h5_root(h5_file *f, h5_obj **out);
h5_kind h5_obj_kind(const h5_obj *o);
uint64_t h5_obj_addr(const h5_obj *o);

/* The object's modification time in seconds since 1970 (from a v2 header,
** the modification time message, or the old ASCII one), or -1 if none. */
int64_t h5_obj_mtime(const h5_obj *o);

/* The object's comment (NUL-terminated, in the file), or NULL. */
const char *h5_obj_comment(const h5_obj *o);

/* ---- links (group members) ---------------------------------------- */

typedef enum h5_link_type {
  H5_LINK_HARD = 0,
  H5_LINK_SOFT = 1,
  H5_LINK_EXTERNAL = 64,
  H5_LINK_UD = 65 /* user-defined, any other type >= 65 */
} h5_link_type;

/* One link (see h5_group_iter for how long it stays valid). */
typedef struct h5_link {
  const char *name; /* NUL-terminated UTF-8 */
  int type;         /* h5_link_type, or the raw type for H5_LINK_UD */
  uint64_t addr;    /* hard links: the target's object header */
  const char *target;   /* soft: the path; external: the object path */
  const char *filename; /* external: the file name */
  int64_t corder;       /* creation order, or -1 when not tracked */
} h5_link;

/* Call cb for every link of group g, in name order.  cb returns 0 to go on,
** anything else to stop (h5_group_iter then returns H5_ESTOP).  A group's
** links are collected on first use and kept until h5_close, so the h5_link
** handed out stays valid that long. */
typedef int (*h5_link_cb)(void *ctx, const h5_link *link);
int h5_group_iter(h5_obj *g, h5_link_cb cb, void *ctx);

/* The link called name in g (H5_ENOTFOUND if there is none). */
int h5_group_find(h5_obj *g, const char *name, const h5_link **out);

/* The object at path: names separated by '/', from the root whether or not
** the path starts with '/' ("" and "/" are the root, "." is skipped).  Soft
** links are followed (16 in a row at most, as libhdf5); an external or
** user-defined link on the way is H5_EUNSUPPORTED, a missing name
** H5_ENOTFOUND, each with a message naming the path. */
int h5_obj_open_path(h5_file *f, const char *path, h5_obj **out);

/* ---- datatypes ------------------------------------------------------ */

typedef enum h5_class {
  H5_CLASS_INTEGER = 0,
  H5_CLASS_FLOAT = 1,
  H5_CLASS_TIME = 2,
  H5_CLASS_STRING = 3,
  H5_CLASS_BITFIELD = 4,
  H5_CLASS_OPAQUE = 5,
  H5_CLASS_COMPOUND = 6,
  H5_CLASS_REFERENCE = 7,
  H5_CLASS_ENUM = 8,
  H5_CLASS_VLEN = 9,
  H5_CLASS_ARRAY = 10,
  H5_CLASS_COMPLEX = 11 /* HDF5 2.0: base is the real (and imaginary) part's float type */
} h5_class;

/* A decoded datatype.  All fields are read-only for callers. */
struct h5_type {
  h5_class cls;
  uint32_t size;     /* bytes of one element as stored */
  int big_endian;    /* integer, float, bitfield, enum base */
  int is_signed;     /* integer */
  uint16_t offset;   /* bit offset of the value (integer, float, bitfield) */
  uint16_t precision;/* bits of precision */
  /* float: bit positions and sizes */
  uint8_t sign_pos, exp_pos, exp_size, mant_pos, mant_size;
  uint32_t exp_bias;
  int mant_norm;     /* 0 none, 1 msb set, 2 msb implied */
  int vax_order;     /* float byte order is VAX */
  /* string / vlen string */
  int cset;          /* 0 ASCII, 1 UTF-8 */
  int strpad;        /* 0 null-terminated, 1 null-padded, 2 space-padded */
  /* vlen: 0 sequence, 1 string */
  int vlen_kind;
  /* reference: 0 object, 1 dataset region, 2+ newer kinds */
  int ref_kind;
  /* opaque: tag (NUL-terminated) */
  char *tag;
  /* compound members; enum names/values; vlen/array base */
  uint32_t nmembers;
  struct h5_member {
    char *name;
    uint32_t offset;      /* compound: byte offset in the element */
    h5_type *type;        /* compound member type */
    const uint8_t *value; /* enum: the member's value, base->size bytes */
  } *members;
  h5_type *base;     /* enum, vlen, array */
  int rank;          /* array */
  uint32_t dims[H5_MAX_RANK];
};

/* Types for writing.  Each returns a new type (NULL on a bad argument or
** out of memory), freed with h5_type_free; the functions that take another
** type take ownership of it, even when they fail.  Everything is
** little-endian. */
h5_type *h5_type_new_int(int bytes, int is_signed);  /* 1, 2, 4, 8 bytes */
h5_type *h5_type_new_float(int bytes);               /* 2, 4, 8 bytes */
/* size 0: variable-length; utf8: the character set flag */
h5_type *h5_type_new_string(uint32_t size, int utf8);
h5_type *h5_type_new_compound(uint32_t size);
/* A variable-length sequence of base (not itself variable-length), e.g.
** uint8 for bytes; written as a pointer and an element count (h5w_write). */
h5_type *h5_type_new_vlen(h5_type *base);
int h5_type_add_member(h5_type *compound, const char *name, uint32_t offset,
                       h5_type *member);
h5_type *h5_type_new_enum(h5_type *integer_base);
int h5_type_add_enum_value(h5_type *e, const char *name, const void *value);
h5_type *h5_type_new_bool(void); /* h5py's bool: int8 enum FALSE/TRUE */
h5_type *h5_type_new_array(h5_type *base, int rank, const uint32_t *dims);
void h5_type_free(h5_type *t);

/* ---- attributes ------------------------------------------------------ */

/* One attribute (see h5_attr_iter for how long it stays valid).  data holds its elements
** in the stored type (file byte order); variable-length elements hold
** global heap references, which h5_vlen_get() resolves. */
typedef struct h5_attr {
  const char *name;
  const char *err;     /* NULL, or why this attribute cannot be read: type,
                          data and dims are then empty (type NULL, rank -1) */
  const h5_type *type;
  int rank;            /* -1: null dataspace */
  uint64_t dims[H5_MAX_RANK];
  uint64_t nelems;
  const uint8_t *data; /* nelems * type->size bytes */
  size_t data_len;
} h5_attr;

/* Call cb for every attribute of o, in storage order.  An object's
** attributes are decoded on first use and kept until h5_close, so the
** h5_attr handed out stays valid that long.  An attribute that cannot be
** decoded (a type or dataspace this reader lacks, a damaged message) is
** handed out with err set and no type, the others as they are; only a
** damaged attribute index (or out of memory) fails the whole object. */
typedef int (*h5_attr_cb)(void *ctx, const h5_attr *attr);
int h5_attr_iter(h5_obj *o, h5_attr_cb cb, void *ctx);

/* The attribute called name (H5_ENOTFOUND if there is none; an attribute
** that cannot be decoded: H5_ECORRUPT, the message saying why). */
int h5_attr_get(h5_obj *o, const char *name, const h5_attr **out);

/* ---- datasets -------------------------------------------------------- */

typedef enum h5_layout {
  H5_LAYOUT_COMPACT = 0,
  H5_LAYOUT_CONTIGUOUS = 1,
  H5_LAYOUT_CHUNKED = 2,
  H5_LAYOUT_VIRTUAL = 3
} h5_layout;

typedef struct h5_filter {
  uint16_t id;
  uint16_t flags;      /* bit 0: optional */
  const char *name;    /* may be NULL */
  uint32_t ncd;
  const uint32_t *cd;  /* client data values */
} h5_filter;

typedef struct h5_dset_info {
  const h5_type *type;
  int rank;                     /* -1: null dataspace, 0: scalar */
  uint64_t dims[H5_MAX_RANK];
  uint64_t maxdims[H5_MAX_RANK];/* UINT64_MAX: unlimited */
  uint64_t nelems;
  h5_layout layout;
  int chunk_rank;
  uint64_t chunk[H5_MAX_RANK];  /* chunk dims (without the element size) */
  int nfilters;
  const h5_filter *filters;
  int external;                 /* raw data in external files */
  const uint8_t *fill;          /* fill value (type->size bytes) or NULL */
} h5_dset_info;

int h5_dset_info_get(h5_obj *d, h5_dset_info *info);

/* Whether the dataset can be read as its dataspace claims, without reading
** any data: H5_ECORRUPT when its storage cannot hold the elements the
** dataspace claims (compact data or allocated contiguous storage smaller
** than elements x element size), there are more than 2^63 - 1 elements or
** they take 2^64 bytes or more;
** H5_EUNSUPPORTED for a virtual dataset.  Every read (h5_dset_read,
** h5_dset_read_slab, h5_dset_view) makes this check first, whatever it
** selects; h5_dset_info_get does not, so such datasets can still be listed. */
int h5_dset_check(h5_obj *d);

/* The registered name of a filter id ("deflate", "lzf", "blosc", ...; the
** HDF Group's list), or NULL for ids not on it. */
const char *h5_filter_known_name(unsigned id);

/* The bytes the dataset's raw data takes in the file, as libhdf5's
** H5Dget_storage_size counts them: compact and contiguous (0 if never
** written) their size, chunked the stored (filtered) size of the chunks
** written, external data its size, virtual 0.  Reads the whole chunk index. */
int h5_dset_storage_size(h5_obj *d, uint64_t *bytes);

/* Every written chunk of a chunked dataset's current extent, whatever its
** chunk index: cb gets the chunk's offset (in elements, per dimension), its
** address in the file, stored (filtered) size and filter mask, and returns
** H5_OK to go on.  H5_EINVAL for other layouts. */
typedef int (*h5_chunk_cb)(void *ctx, const uint64_t *offset, uint64_t addr, uint64_t size,
                           uint32_t mask);
int h5_dset_chunk_iter(h5_obj *d, h5_chunk_cb cb, void *ctx);

/* Zero copy: len bytes of the file at addr as mapped (valid until
** h5_close), or NULL when they do not lie inside the file. */
const void *h5_file_span(h5_file *f, uint64_t addr, uint64_t len);

/* Zero copy: the bytes of a contiguous (or compact) dataset stored in this
** file without filters, in the mapped file (valid until h5_close), in the
** stored type and byte order.  H5_EUNSUPPORTED for other layouts, and when
** the data was never written. */
int h5_dset_view(h5_obj *d, const void **data, size_t *len);

/* Read the whole dataset into buf (nelems * type->size bytes, C order), in
** the stored type.  Chunks that were never written read as the fill value. */
int h5_dset_read(h5_obj *d, void *buf, size_t buflen);

/* Read a hyperslab into buf (C order, count[0] x count[1] x ... elements
** of type->size bytes, which buflen must hold): in dimension k the
** elements start[k] + i * stride[k] for i in [0, count[k]).  stride may be
** NULL (all 1); for a scalar dataset the arrays are not used (one element).
** Of a chunked dataset only the chunks the selection touches are read.
** H5_EINVAL when the selection leaves the dataset, a stride is 0 or buflen
** is too small. */
int h5_dset_read_slab(h5_obj *d, const uint64_t *start, const uint64_t *count,
                      const uint64_t *stride, void *buf, size_t buflen);

/* ---- variable-length data ------------------------------------------- */

/* Resolve the variable-length element stored at elem (the 4-byte length,
** then a global heap collection address and object index, as stored in a
** dataset or attribute of a vlen type).  *data points into the file; for a
** NULL element *data is NULL and *len 0.  *count is the stored length
** field (elements of a sequence, bytes of a string). */
int h5_vlen_get(h5_file *f, const uint8_t *elem, const uint8_t **data,
                size_t *len, uint32_t *count);

/* ---- writing files (h5_write.c, h5_wopen.c) ---------------------------- */

typedef struct h5w h5w;         /* a file being written */
typedef struct h5w_obj h5w_obj; /* a group or dataset in it; owned by h5w */

/* The codecs of other libraries the writer can compress with (each only
** where the build has its library: h5w_codec_available). */
enum {
  H5W_CODEC_NONE = 0,
  H5W_CODEC_ZSTD = 1, /* filter 32015, libzstd; level 1-22 */
  H5W_CODEC_BLOSC = 2 /* filter 32001, libblosc; level 0-9, compressor, its own shuffle */
};

/* Dataset creation properties.  Zero-initialise, then set what you need:
** layout (H5_LAYOUT_CONTIGUOUS = default when dcpl is NULL, COMPACT,
** CHUNKED), chunk dims, deflate level 0-9 (-1: none), or instead a codec
** (H5W_CODEC_*) with its level (and blosc's compressor, by blosc's codes:
** 0 blosclz, 1 lz4, 2 lz4hc, 4 zlib, 5 zstd, and its shuffle: 0 none, 1
** bytes, 2 bits), shuffle (HDF5's filter, before deflate or zstd),
** fletcher32, and fill (one element, or NULL for zeros).  Filters need
** chunks.  Filters are written in the order shuffle, deflate or the codec,
** fletcher32, as h5py does. */
typedef struct h5w_dcpl {
  int layout;
  uint64_t chunk[H5_MAX_RANK];
  int deflate;
  int shuffle;
  int fletcher32;
  int codec, codec_level, blosc_cname, blosc_shuffle;
  const void *fill;
} h5w_dcpl;

/* Whether this build can write codec (H5W_CODEC_*); if not, *lib names the
** library it lacks. */
int h5w_codec_available(int codec, const char **lib);

/* Create (or truncate) path for writing, an empty valid file at once (an
** empty root group); threads compress chunks (0: one per CPU).  On failure
** a message is in err.  It follows a symbolic link at path, as open(2)
** does: for names the caller chose; temporary names use h5w_create_temp. */
int h5w_create(const char *path, int threads, h5w **out, char *err,
               size_t errlen);
/* As h5w_create, for a temporary file beside another: creates base, or
** when that name is taken (by anything: a file left by a process that
** died, a symbolic link someone planted) base.1, base.2, ... (up to
** base.99), each exclusively (O_EXCL | O_NOFOLLOW: never truncating a
** file, never following a link); what was there is left alone.  *path_out
** is the name made (malloc'd; the caller renames or unlinks it and frees
** it).  All names taken: H5_EIO, naming base. */
int h5w_create_temp(const char *base, int threads, h5w **out, char **path_out,
                    char *err, size_t errlen);
h5w_obj *h5w_root(h5w *w);
int h5w_group(h5w *w, h5w_obj *parent, const char *name, h5w_obj **out);
/* A dataset of the given type (taken over), shape and maximum shape (NULL:
** the shape; UINT64_MAX: unlimited, chunked only). */
int h5w_dataset(h5w *w, h5w_obj *parent, const char *name, h5_type *type,
                int rank, const uint64_t *dims, const uint64_t *maxdims,
                const h5w_dcpl *dcpl, h5w_obj **out);
/* Write the whole dataset once: C order, elements as stored, except that a
** variable-length string element is a const char * (NULL: no string) in
** the first 8 bytes of its 16-byte slot, and a variable-length sequence a
** pointer to its elements (NULL: none) and then their number (uint64). */
int h5w_write(h5w *w, h5w_obj *d, const void *data);
/* Append rows along dimension 0 of a chunked dataset: one created with
** shape[0] 0 and maxshape[0] unlimited, or one of an opened file whose
** maxshape[0] leaves room (rows go after its rows; its filters must be among
** deflate, shuffle, fletcher32).  Whole rows of chunks are written as they
** fill; the rest waits in memory (and goes out provisionally at a flush). */
int h5w_append(h5w *w, h5w_obj *d, const void *rows, uint64_t nrows);
/* Write rows again: n rows of a chunked dataset (dimension 0), rows[i]
** strictly ascending and below its current dims[0], their new values one
** after another in values (as h5w_append takes rows: a variable-length
** string is a const char * slot).  The dataset must be unfiltered and its
** chunks must hold whole rows (chunk[1] >= dims[1], chunk[k] == dims[k]
** for k > 1), as a store's columns do: else H5_EUNSUPPORTED.  Copy-on-write: each chunk
** holding some of the rows is read, changed and written past the end of
** the file, and the index points to the copy at the next flush; the old
** chunk is left as it is (a crash before the flush's superblock leaves the
** old values; the bytes become dead space, which only a rewrite of the
** file reclaims).  Rows not yet in a whole chunk (appended since the
** last row of chunks filled) change in memory.  Each changed chunk costs
** one chunk of bytes, whatever the number of rows changed in it. */
int h5w_rewrite_rows(h5w *w, h5w_obj *d, const uint64_t *rows, const void *values, uint64_t n);
/* An attribute of a group or dataset (type taken over; data as h5w_write).
** H5_EINVAL if the object has one of that name already. */
int h5w_attr(h5w *w, h5w_obj *o, const char *name, h5_type *type, int rank,
             const uint64_t *dims, const void *data);
/* Make the file on disk a complete HDF5 file holding everything given so
** far, then go on writing.  Raw data first (rows short of a row of chunks as
** provisional, fill-padded chunks), then new headers for the objects changed
** since the last flush and their ancestors, children first, then (after
** fsync when sync) the superblock at 0, the commit point, then fsync again
** when sync.  Objects not changed keep their headers.  A crash at any
** moment leaves the file as the last completed flush (or h5w_create /
** h5w_open) left it. */
int h5w_flush(h5w *w, int sync);
/* Called around every superblock write of w (the commit point of a flush):
** fn(ctx, 1) just before it, fn(ctx, 0) once it is written (and synced when
** the flush syncs), whether it succeeded or not.  fn(ctx, 1) returning
** nonzero fails the flush before anything is committed (its message: "msg").
** For a caller that must keep others from reading the file while its
** superblock changes (lib/store's readers and checkpoints). */
void h5w_on_commit(h5w *w, int (*fn)(void *ctx, int before), void *ctx, const char *msg);
/* After a failed write or flush: cut the file back to where the last
** committed superblock says it ends, so a failed attempt leaves no tail;
** nothing is cut when the failure may have reached the superblock (its
** write was started).  Returns H5_OK, or H5_EIO if the cut failed. */
int h5w_discard(h5w *w);
/* h5w_flush, then close the file; then free it with h5w_free (which alone,
** without h5w_close, leaves the file as the last flush left it). */
int h5w_close(h5w *w, int sync);
void h5w_free(h5w *w);
const char *h5w_errmsg(const h5w *w);
/* The H5_E* code of the last failure h5w_errmsg describes (H5_EFULL: no
** space left), H5_OK if none. */
int h5w_errcode(const h5w *w);

/* Open an existing HDF5 file to add to it, copy-on-write: new data and new
** headers go past its end of allocation (bytes past it, from a writer that
** crashed, are cut off first), objects not changed keep their addresses,
** the superblock is rewritten last at each flush.  Files with superblock
** version 2 or 3, 8-byte offsets and lengths, no user block, groups with
** new-style links (what libver 'v108' and 'latest' write, and h5w_create);
** others fail with H5_EUNSUPPORTED and a message saying why, the file
** untouched.  Existing objects are read lazily through the reader. */
int h5w_open(const char *path, int threads, h5w **out, char *err, size_t errlen);
/* The group or dataset at an absolute path of hard links ("/": the root);
** H5_ENOTFOUND if there is none, H5_EUNSUPPORTED through a soft link or to
** a committed datatype.  New objects made through h5w_group/h5w_dataset
** are found too.  The handle belongs to w. */
int h5w_lookup(h5w *w, const char *path, h5w_obj **out);

/* What a group or dataset is (type belongs to w; layout an h5_layout). */
typedef struct h5w_info {
  int is_group;
  const h5_type *type;
  int rank;
  uint64_t dims[H5_MAX_RANK], maxdims[H5_MAX_RANK], chunk[H5_MAX_RANK];
  int layout;
} h5w_info;
int h5w_obj_info(h5w_obj *o, h5w_info *info);

/* ---- values as JSON (h5_json.c) --------------------------------------- */

/* Append the values of type t at data (shaped by dims[0..rank); rank 0: one
** element; rank -1, a null dataspace: null) to out as JSON: nested arrays, integers exact, floats
** shortest round-trip ("NaN"/"Infinity" as strings), strings as UTF-8 text
** or {"hex": ...}, compounds as objects, complex pairs as [re, im], opaque
** as {"hex": ...}, references as null.  Set out->limit to bound the text:
** beyond it the call fails with H5_EINVAL. */
int h5_json_values(h5_file *f, const h5_type *t, const uint8_t *data, int rank,
                   const uint64_t *dims, strbuf *out);

/* Append t as numpy describes it, in JSON, as h5py maps HDF5 types:
** dtype.str ("<f4", "|S10", "|O" for variable-length and references,
** "|b1" for h5py's bool enum, "<c8" for r/i compounds), compound descr
** lists (gaps as ["", "|Vn"]), {"subarray": ..., "shape": [...]} for array
** types; null where h5py has no mapping. */
int h5_json_dtype(const h5_type *t, strbuf *out);

/* ---- single elements, for bindings (h5_json.c) ------------------------- */

/* An integer, bitfield or enum element at p (any size up to 64 bits of
** precision, either byte order): its bits in *bits (sign-extended when
** *is_signed).  H5_EINVAL for other classes. */
int h5_elem_int(const h5_type *t, const uint8_t *p, uint64_t *bits, int *is_signed);

/* A float element of any layout the format describes (or an integer one)
** as a double.  H5_EINVAL for other classes. */
int h5_elem_double(const h5_type *t, const uint8_t *p, double *out);

/* The length of a fixed-length string element as libhdf5 hands it over:
** up to the first NUL, or without trailing spaces when space-padded. */
size_t h5_fixed_string_len(const h5_type *t, const uint8_t *p);

/* Whether s[0..n) is well-formed UTF-8. */
int h5_utf8_valid(const uint8_t *s, size_t n);

#endif /* H5MEM_H5_H */
