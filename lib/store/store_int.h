/*
** lib/store/store_int.h - the internal header of lib/store: what the files
** of the folder share and nothing outside it uses.  One section per file:
** the store's state (struct store, used by store*.c), then the interface
** to the code in each file.
**
** The store (store.h) is split by concern: store.c (opening, closing, the
** public API's glue and the writer's transactions), store_load.c (the base
** and loading a view), store_read.c (reading records by position),
** store_delta.c (the delta in memory, the undo list), store_log.c (the
** log's frames), store_ckpt.c (writing store files: create, checkpoint,
** optimize), store_idmap.c (the id map), store_int.c (root attributes and
** byte images of derived indexes).
*/
#ifndef H5MEM_STORE_INT_H
#define H5MEM_STORE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "h5/h5.h"
#include "store.h"
#include "store_graph.h"
#include "store_idmap.h"
#include "store_index.h"
#include "store_text.h"
#include "wal.h"

/* ---- the store's state (store.c, store_load.c, ... ) --------------------- */

/*
** Positions: base rows 0 .. nbase-1 (the checkpointed file, read in place),
** then delta records nbase .. nbase+ndelta-1 (committed or in the open
** transaction, in memory and in the log).  An id maps to the position of
** its live record; an update is a delete plus an insert, so a base row
** never changes: dead base rows are listed in /memories/deleted.
*/

#define FORMAT_NAME "h5mem-store"
#define MIGRATED_PREFIX "migrated_" /* extra attributes of / (store_opts.attrs) */
#define FORMAT_VERSION 1
#define DEFAULT_CHUNK 1024
#define DEFAULT_AUTOCKPT ((uint64_t)64 << 20)
#define NORMAL_SYNC_NS 100000000LL /* sync=normal: fsync at most every 100 ms */

/* The columns of /memories, in file order. */
enum {
  C_ID, C_TEXT, C_EMB, C_SOURCE, C_SESSION, C_TAGS, C_TS, C_TIER, C_IMPORTANCE,
  C_ACCESS_COUNT, C_LAST_ACCESS, C_META, NCOL
};
enum { K_I64, K_STR, K_EMB, K_F64 };
extern const char *const store_col_name[NCOL]; /* the columns' names */
extern const int store_col_kind[NCOL];         /* K_*: how a column's values are kept */
extern const int store_str_cols[6];             /* the string columns, in the order of store_rec's fields */

/* A column of the base: rows at chunk_addr[r / crows] + (r % crows) * rowbytes. */
typedef struct bcol {
  h5_obj *d;
  uint64_t crows, nchunks;
  size_t rowbytes;
  uint64_t *caddr; /* UINT64_MAX: chunk never written */
} bcol;

/* A string column of the base as codes (store_str_codes): equal strings,
** equal codes; a dictionary (open addressing) of the distinct strings,
** which point into the mapped file. */
typedef struct strcodes {
  uint32_t *code; /* per base row; NULL: not built */
  const uint8_t **dp;
  uint32_t *dlen, *dcode;
  uint64_t dcap, dn;
} strcodes;

/* A record of the delta: one allocation, strings NUL-terminated inside. */
typedef struct drec {
  int64_t id, ts, access_count, last_access;
  double importance;
  int dead;
  char *str[6];
  size_t len[6];
  void *emb; /* stored type, or NULL */
} drec;


typedef struct undo {
  int insert;   /* 1: a delta record was added at pos; 0: pos was deleted */
  int table;    /* 0: the memories; 1 + STORE_G_*: a graph table */
  uint64_t pos;
} undo;

struct store {
  char *path, *walpath;
  int readonly, writer, lockfd;
  int gatefd;        /* readers: the log, open to take the gate's read side (-1: none) */
  int gated;         /* the writer holds the gate's write side (gate_write_begin's result + 1),
                     ** or a negative GATE_E* code: it was refused */
  int gate_errno;    /* errno of a GATE_EIO */
  int loaded;        /* the state below is a whole view (a failed load leaves 0) */
  int dim, metric, storage, sync, chunk_rows;
  uint64_t autockpt;
  uint8_t store_id[16];
  char err[512];
  /* base */
  h5_file *f;
  struct stat fst;
  uint64_t nbase;
  int64_t *base_id;
  uint8_t *base_dead;
  bcol col[NCOL];
  uint64_t ckpt_seq; /* log frames up to this one are in the file */
  sindex_cfg icfg;
  sindex *ix;        /* the vector index of the file (store_index.c) */
  text_tok_opts tcfg;
  char tokenize[64]; /* tcfg in normal form */
  tindex *tx;        /* the text index of the file (store_text.c) */
  gstore *g;         /* the knowledge graph's tables (store_graph.c) */
  uint64_t changes;  /* records added, deleted or taken back */
  uint64_t reuses;   /* inserts undone (their positions may be taken again) */
  strcodes sc[6];    /* of the string columns (store_str_cols order), built on demand */
  bcol q8[2];        /* /index/q8 and q8_scale (nchunks 0: none) */
  int64_t *tsc;      /* the base rows' ts, read on the first store_get_ts */
  /* base rows deleted since the checkpoint, in order */
  uint64_t *newdead;
  uint64_t nnewdead, capnewdead;
  /* delta */
  drec **delta;
  uint64_t ndelta, capdelta;
  idmap map;
  uint64_t live;
  int64_t max_id;
  /* the log */
  wal *log;
  int replay_rc;           /* why store_replay_frame stopped */
  int64_t last_sync_ns;
  /* the open transaction */
  int in_txn, prepared;
  undo *ul;
  uint64_t nul, capul;
  uint8_t *frame;
  size_t frame_len, frame_cap;
};

/* ---- interface to code in store.c ---------------------------------------- */

/* The monotonic clock, in nanoseconds. */
int64_t store_now_ns(void);
/* Set the store's error message (store_errmsg) from fmt; returns code. */
int store_fail(store *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A failure of the HDF5 writer w while doing what (store_fail's code and message). */
int store_wfail(store *s, h5w *w, const char *what);
/* A code of lib/h5 met on the store's own .h5 file as the store's: the
** same value (one error space), except that H5_EUNSUPPORTED and
** H5_ENOTFOUND are STORE_ECORRUPT: h5mem writes its stores with only what
** lib/h5 reads and with every object the format names, so a store file
** that needs more or lacks one is not as h5mem wrote it (damaged), and a
** client should stop on it, not wait for it to change.  H5_OK (a writer
** that failed without a code) is STORE_EIO. */
int store_h5_code(int hr);
/* Set the store's error message (store_errmsg); returns code. */
int store_set_error(store *s, int code, const char *msg);
/* Become the writer: lock the store, load the current state for writing. */
int store_become_writer(store *s);
/* A string of a record to be written: STORE_OK or STORE_EINVAL naming col. */
int store_str_check(store *s, const char *col, const char *p, size_t n);

/* ---- interface to code in store_load.c ----------------------------------- */

/* Row r of base column col in the mapped file (NULL: outside the file). */
const uint8_t *store_base_row(const store *s, int col, uint64_t r);
void store_codes_free(strcodes *c);
void store_base_free(store *s);
int store_read_attr_str(store *s, h5_obj *o, const char *name, char *buf, size_t n);
const char *store_metric_name(int m);
/* Map the file's base (columns_only: the columns, not the indexes). */
int store_base_load(store *s, const store_opts *want, int columns_only);
void store_state_free(store *s);
/* Load the file and replay the log (for writing: repair the log's tail);
** readers take the gate's read side meanwhile. */
int store_state_load(store *s, const store_opts *want, int for_write);
/* The gate (gate.h) as the HDF5 writer takes it (h5w's callback). */
int store_gate_take(void *ctx, int before);
void store_gate_release(store *s);

/* ---- interface to code in store_read.c ----------------------------------- */

/* A little-endian int64 at p. */
int64_t store_get_i64(const uint8_t *p);

/* ---- interface to code in store_delta.c ---------------------------------- */

void store_drec_free(drec *d);
void store_delta_free(store *s);
/* Note a change in the open transaction's undo list (no transaction: nothing). */
int store_ul_push(store *s, int insert, uint64_t pos);
/* Insert / delete without the checks the public entries do. */
int store_apply_put(store *s, const store_rec *r);
int store_apply_delete(store *s, int64_t id);
/* Take back one change of the undo list. */
void store_undo_one(store *s, const undo *u);

/* ---- interface to code in store_log.c ------------------------------------ */

/* The open transaction as a frame in s->frame. */
int store_frame_build(store *s);
/* Apply a frame of the log (wal_replay's callback; ctx is the store). */
int store_replay_frame(void *ctx, uint64_t seq, const uint8_t *p, size_t len);

/* ---- interface to code in store_ckpt.c ----------------------------------- */

/* Create the store's file from o (under a temporary name, then linked). */
int store_write_new(store *s, const store_opts *o);

/* ---- interface to code in store_int.c ------------------------------------ */

/*
** /index/<kind>_image is a uint8 dataset of images one after another, each
** padded to whole chunks of STORE_IMG_CHUNK bytes; /index/<kind>_saves has
** one row of four int64 per save: the image's offset and length in the
** image dataset, then two numbers of the index's own (the base rows it
** covers, ...).  The last row is the current image.  An image is appended
** in one go, so its chunks normally lie one after another in the file and
** it is read in place from the mapped file; otherwise it is copied.
** (Derived indexes saved inside a store's file as byte images:
** docs/FORMAT.md, "The vector index" and "The text index".)
*/
#define STORE_IMG_CHUNK 65536u

typedef struct simage {
  const void *p; /* the image: in the mapped file, or copy */
  size_t len;
  void *copy;    /* malloc'd when the chunks were scattered; the caller frees it */
  int64_t row[4]; /* the save's row: offset, length, and the index's two numbers */
} simage;

/* The last image of kind (e.g. "hnsw", "text") in f: STORE_OK, or
** STORE_ENOMEM, or STORE_ENOTFOUND with *why saying what is missing or
** wrong (no image saved yet, a damaged saves dataset, ...). */
int simage_load(h5_file *f, const char *kind, simage *img, const char **why);
/* Append img (len bytes) as a new image of kind with the numbers a and b
** in its row (the datasets made when missing).  STORE_OK, or STORE_ENOMEM
** or the writer's code (store_h5_code: STORE_EFULL, STORE_EIO, ...) with a
** message in err. */
int simage_append(h5w *w, const char *kind, const uint8_t *img, size_t len, int64_t a, int64_t b,
                  char *err, size_t errlen);

/* The object the hard link name of group g leads to, opened into *o:
** H5_OK, or an h5 code when there is no such link or it cannot be opened. */
int store_open_child(h5_file *f, h5_obj *g, const char *name, h5_obj **o);

/* Attribute name of o, a scalar: 1 and the value in *v (an integer) or in
** buf (a string, NUL-terminated, shorter than n bytes); 0 when o has no
** such attribute; -1 when it has one of another kind or too long. */
int store_attr_int(h5_obj *o, const char *name, int64_t *v);
int store_attr_str(h5_file *f, h5_obj *o, const char *name, char *buf, size_t n);

#endif
