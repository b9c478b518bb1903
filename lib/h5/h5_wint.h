/*
** lib/h5/h5_wint.h - the writer's internals, shared by h5_write.c (new
** objects, chunks, headers, flushes) and h5_wopen.c (opening an existing
** file and adapting its objects copy-on-write).
*/
#ifndef H5MEM_H5_WINT_H
#define H5MEM_H5_WINT_H

#include "h5_int.h"

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

#endif /* H5MEM_H5_WINT_H */
