/*
** lib/store/store_int.h - the internal header of lib/store: what the files
** of the folder share and nothing outside it uses (but unit tests).  One
** section per file: first the interface to the code whose types the
** store's state holds (store_idmap.c, store_index.c, store_text.c,
** store_graph.c), then the store's state (struct store, used by
** store*.c), then the interface to the code in each other file.
**
** The store (store.h) is split by concern: store.c (opening, closing, the
** public API's glue and the writer's transactions), store_load.c (the base
** and loading a view), store_read.c (reading records by position),
** store_delta.c (the delta in memory, the undo list), store_log.c (the
** log's frames), store_ckpt.c (writing store files: create, checkpoint,
** optimize), store_idmap.c (the id map), store_index.c (the vector index),
** store_text.c (the text index), store_graph.c (the knowledge graph's
** tables), store_time.c (the temporal index), store_patch.c (changes in place),
** store_cols.c (declared columns), store_vcol.c (vector columns' searches and graphs),
** store_int.c (root attributes and byte images of derived
** indexes).  wal.c (the log file, wal.h) and gate.c (the reader/checkpoint
** gate, gate.h) have headers of their own: tests use them directly.
*/
#ifndef H5MEM_STORE_INT_H
#define H5MEM_STORE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/stat.h>

#include "h5/h5.h"
#include "store.h"
#include "text/tokenize.h"
#include "wal.h"

/* The live position of id (the map, then the sorted base rows): 1 found,
** 0 not (store_read.c). */
int store_pos_of(const store *s, int64_t id, uint64_t *pos);

/* ---- interface to code in store_idmap.c ---------------------------------- */

/* int64 key -> position, open addressing with linear probing (zero it
** to start; idmap_free to end). */
typedef struct idmap {
  int64_t *key;
  uint64_t *val; /* UINT64_MAX: empty */
  uint64_t cap, n;
} idmap;
uint64_t *idmap_slot(const idmap *m, int64_t id); /* NULL: absent */
int idmap_put(idmap *m, int64_t id, uint64_t pos); /* STORE_OK or STORE_ENOMEM */
void idmap_del(idmap *m, int64_t id);
/* Room for n keys in all, so that putting up to n never allocates:
** STORE_OK or STORE_ENOMEM (the map as it was). */
int idmap_reserve(idmap *m, uint64_t n);
/* Empty the map, keeping its room: putting at most as many keys as it held
** then never allocates (so never fails). */
void idmap_clear(idmap *m);
void idmap_free(idmap *m);

/* ---- interface to code in store_index.c ---------------------------------- */

/*
** The store's vector index, inside lib/store only
** (store_index.c; the layout is docs/FORMAT.md, "The vector index").
**
** The graph covers the base rows [0, n) as of its last save; rows appended
** since are searched exactly (store_knn).  A writer's checkpoint saves a new
** graph once those rows are enough of the store (sindex_wants_save), and
** otherwise adds them to its graph in memory (sindex_extend), which the
** checkpoint's rebase keeps (sindex_carries).  Base
** rows never move until store_optimize, which writes a new file and saves a
** graph of it at once, so a saved graph stays true of the rows it covers;
** rows deleted later are skipped at search time.
*/

/* The index's settings: root attributes fixed at creation. */
typedef struct sindex_cfg {
  int kind; /* STORE_INDEX_* */
  int m, efc, ef;
  int q8;   /* an int8 copy of the embeddings guides the graph search */
  uint32_t nlist; /* IVF: lists (0: sqrt of the rows at training) */
  int nprobe;     /* IVF: lists a search scans by default */
  int pq_m;       /* IVF: 0 (IVF-Flat) or the sub-quantisers of IVF-PQ */
} sindex_cfg;

/* Owned by the store: made by sindex_load, freed by sindex_free (before the
** file it maps is closed). */
typedef struct sindex sindex;

/* The settings from the root group's attributes (absent: a flat index, the
** format of stores made before indexes existed) into *c: STORE_OK, or
** STORE_ECORRUPT when they are present but invalid (a message in err). */
int sindex_cfg_read(h5_file *f, h5_obj *root, sindex_cfg *c, char *err, size_t errlen);
/* Write c as root attributes of a new store. */
int sindex_cfg_write(h5w *w, h5w_obj *root, const sindex_cfg *c);

/* The index of the mapped file f (whose base has nbase rows), rows read
** through s.  A missing or damaged saved graph is not an error (the index is
** derived data; the searches are then exact and the next checkpoint saves a
** new one): sindex_note says why.  Fails only when out of memory
** (STORE_ENOMEM). */
int sindex_load(store *s, h5_file *f, const sindex_cfg *c, uint64_t nbase, sindex **out);
void sindex_free(sindex *x);

/* The base rows the loaded graph covers (0: none); and those its last
** image in the file covers (fewer when sindex_extend added rows since). */
/* (each loads the saved index first, if it is not loaded yet) */
uint64_t sindex_rows(sindex *x);
uint64_t sindex_saved_rows(sindex *x);
const char *sindex_note(sindex *x);
int sindex_in_place(sindex *x); /* the graph reads the mapped file */
uint32_t sindex_nlist(sindex *x); /* IVF lists (0: none, or not IVF) */

/* Whether a checkpoint leaving nbase base rows should save a new graph
** (force: whenever the rows pass the saved graph's).  The saved graph is
** not loaded to know. */
int sindex_wants_save(sindex *x, uint64_t nbase, int force);
/* Bring the graph up to nbase rows (adding the rows past it, on threads
** threads) and append its image to w's /index datasets; the caller flushes
** w and then loads the file again.  STORE_OK or STORE_E* with a message. */
int sindex_save(sindex *x, h5w *w, uint64_t nbase, int threads, char *err, size_t errlen);
/* The image sindex_save appended is in the file (w flushed): nbase rows. */
void sindex_saved_at(sindex *x, uint64_t nbase);
/* A writer's checkpoint that saves no image: its graph in memory (one it
** built or grew: not one read in place from the file) brought up to nbase
** rows all the same (HNSW; on threads threads), so that this store's
** searches walk the graph over every file row rather than scanning those
** past the saved image, and the next save has only to write it.  A writer
** opened on a store starts as a reader does, with the saved graph read in
** place and the rows past it scanned, until its checkpoints save a graph:
** growing the file's graph at its first checkpoint would check and copy
** it whole, then insert every row past it (150 s at 10M: BENCHMARKS.md).
** Out of memory: the graph is dropped (searches exact until the file is
** read again; sindex_note says why), and the checkpoint goes on. */
void sindex_extend(sindex *x, uint64_t nbase, int threads);
/* Whether x may outlive the mapping it was loaded from (rebase keeps it):
** an HNSW graph wholly in memory, reading rows through the store. */
int sindex_carries(sindex *x);

/* store.c: the store's index (NULL while no file is loaded). */
sindex *store_sindex(store *s);
/* store_load.c: base row i's int8 copy and its scale (ann_q8_fn), or NULL. */
const int8_t *store_q8_row(const store *s, uint32_t i, float *scale);
/* The embeddings of base rows r0 .. r1-1 (r1 <= nbase, r1 <= most) read
** into *buf (row r at *buf + r x its bytes), a run of chunks at a time;
** *buf (malloc'd, *cap rows, advised to huge pages) grows when r1 passes
** *cap, by a quarter but never past most rows.  STORE_OK, STORE_ENOMEM
** (*buf as it was), STORE_EINVAL, STORE_ECORRUPT (a message in s). */
int store_emb_read(store *s, uint8_t **buf, uint64_t *cap, uint64_t most, uint64_t r0, uint64_t r1);

/* ---- interface to code in store_text.c ----------------------------------- */

/*
** The store's text index for bm25, inside
** lib/store only (store_text.c; the layout is docs/FORMAT.md, "The text
** index").
**
** A saved image (lib/text/bm25) covers the base rows [0, rows) as of its
** save; the rows past it (base rows checkpointed since, and the records in
** memory) are tokenized into a segment in memory when a search first needs
** them, and again only for what was added since.  A checkpoint saves a new
** image once those rows are enough of the store (the vector index's rule);
** optimize saves one at once.  Rows deleted after a save stay in the image
** and are skipped when searching.
*/

typedef struct tindex tindex;

/* The tokenizer settings from the root attribute "tokenize" (absent: the
** default, the format of stores made before the text index): STORE_OK, or
** STORE_ECORRUPT with a message in err when it is present but not
** understood. */
int tindex_cfg_read(h5_file *f, h5_obj *root, text_tok_opts *o, char *err, size_t errlen);
int tindex_cfg_write(h5w *w, h5w_obj *root, const text_tok_opts *o);

/* The text index of the mapped file f (nbase base rows).  A missing or
** damaged image is not an error: the rows are then tokenized in memory and
** the next checkpoint saves an image.  Fails only when out of memory. */
int tindex_load(store *s, h5_file *f, const text_tok_opts *o, uint64_t nbase, tindex **out);
void tindex_free(tindex *x);

int tindex_wants_save(const tindex *x, uint64_t nbase);
/* Append an image of the base rows [0, nbase) to w's /index datasets. */
int tindex_save(tindex *x, h5w *w, uint64_t nbase, char *err, size_t errlen);

/* The index's state for store_text_index (reads the image's header). */
int tindex_info(tindex *x, store_text_info *info);

/* store.c, store_read.c: the text index, and what the text index needs of
** the store. */
tindex *store_tindex(store *s);
/* The text of position pos, dead or alive (NULL: none). */
int store_text_at(store *s, uint64_t pos, const char **text, size_t *len);
/* Counters that change when records are added or deleted (changes), and
** when a position is taken back (an insert undone: reused). */
uint64_t store_changes(const store *s);
uint64_t store_reuses(const store *s);

/* ---- interface to code in store_graph.c ---------------------------------- */

/*
** The knowledge graph's tables inside the store
** (entities, relations, mentions), inside lib/store only (store_graph.c;
** the layout is docs/FORMAT.md, "The knowledge graph").
**
** All three tables are held in memory whole: read from /graph when the
** store opens, changed by the store's transactions (store_log.c logs
** each change as an op of its frames; store.c keeps the undo list),
** appended to /graph at checkpoints like the memories (new rows, row
** numbers of rows deleted), rewritten by optimize.
*/

typedef struct gstore gstore;

/* An empty graph whose version (store_g_version) starts past version: a
** store that loads its graph again (a refresh, optimize) passes the old
** one's + 1, so that versions never repeat and caches keyed on them stay
** true. */
int gstore_new(gstore **out, uint64_t version);
/* The version of g (0 for NULL). */
uint64_t gstore_version(const gstore *g);
void gstore_free(gstore *g);
/* Read /graph of f (none: empty tables).  STORE_ECORRUPT with a message. */
int gstore_load(gstore *g, h5_file *f, char *err, size_t errlen);

/* Changes without undo (the store pushes the undo entry): insert (the
** record's position is then gstore_npos - 1), delete (its position). */
int gstore_put(gstore *g, int t, const store_grec *r);
int gstore_delete(gstore *g, int t, int64_t id, uint64_t *pos);
/* Undo the last insert of t (insert) or the deletion at pos. */
void gstore_undo(gstore *g, int t, int insert, uint64_t pos);

/* The log: an op for the change (insert: the record at pos; delete: its
** id) through put; and replaying one op (op byte already read; its bytes
** at *p, advanced): STORE_ECORRUPT when cut short, STORE_EINVAL for a
** string store_g_put would refuse (not UTF-8, or a NUL byte). */
int gstore_encode(const gstore *g, int t, int insert, uint64_t pos,
                  int (*put)(void *ctx, const void *p, size_t n), void *ctx);
int gstore_is_op(uint8_t op);
int gstore_replay(gstore *g, uint8_t op, const uint8_t **p, const uint8_t *end);

/* Whether the tables changed since the file was written. */
int gstore_dirty(const gstore *g);
/* A graph row's column for gstore_each: kind 0 int64 (i), 1 string (s, n;
** s NULL: NULL), 2 float64 (f). */
typedef struct gstore_val {
  int kind;
  int64_t i;
  double f;
  const char *s;
  size_t n;
} gstore_val;
typedef int (*gstore_row_cb)(void *ctx, const gstore_val *v, int ncols);
int gstore_each(const gstore *g, int t, int file, gstore_row_cb cb, void *ctx);
/* Whether a signed checkpoint found this graph, as loaded, to be the one
** signed (store_sign.c); a graph loaded anew has not been. */
int gstore_checked(const gstore *g);
void gstore_mark_checked(gstore *g);
/* Append the changes to w's /graph (made when missing); gstore_rebase once
** the file is written: the appended records become file rows. */
int gstore_checkpoint(gstore *g, h5w *w, char *err, size_t errlen);
void gstore_rebase(gstore *g);
/* Write the live records alone into w (a new file: store_optimize). */
int gstore_write_live(gstore *g, h5w *w, char *err, size_t errlen);

/* store.c: the store's graph (NULL while no file is loaded). */
gstore *store_gstore(store *s);

/* ---- interface to code in store_time.c ----------------------------------- */

/* One pair of the temporal index (store_time.c): ordered by ts, then pos. */
typedef struct store_tkey {
  int64_t ts;
  uint64_t pos;
} store_tkey;

/* Free the index (the base changed: store_base_free). */
void store_time_free(store *s);
/* After a checkpoint appended rows oldn .. oldn + nnew - 1 (whose ts are
** newts, in order) to a base of oldn rows: the base's pairs before it (old,
** nold of them, malloc'd, taken; NULL: none built) merged with the new
** rows', so the index needs no rebuild.  Nothing on failure (built again
** on first use). */
void store_time_rebase(store *s, store_tkey *old, uint64_t nold, uint64_t oldn, const int64_t *newts,
                       uint64_t nnew);

/* The per-session index (store_time.c): the base rows that have a
** session, grouped by session, each group in (ts, pos) order; the
** sessions' strings its own (copies), so a checkpoint can carry it over
** without the file's string codes. */
typedef struct store_tsess {
  store_tkey *a;       /* group g: a[off[g] .. off[g + 1]) */
  uint64_t n, nbase;   /* pairs; the base's rows when built */
  uint64_t *off;       /* ng + 1 */
  char **str;          /* group g's session (NUL-terminated copy), len[g] bytes */
  size_t *len;
  uint32_t *slot;      /* open addressing over the groups: g + 1, 0 empty */
  uint64_t ng, cap, scap; /* groups, room for them, slots (a power of 2) */
} store_tsess;
/* After the same checkpoint (and store_time_rebase): the per-session
** index before it (old, taken; NULL: none built) with the appended rows
** (the delta's live records, still in s->delta) merged in.  Nothing on
** failure (built again on first use). */
void store_time_rebase_sess(store *s, store_tsess *old, uint64_t oldn);

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
#define FORMAT_VERSION 2 /* the newest read; a store without declared columns is written as 1 */
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
  /* the tier column with the overlay's tiers applied (store_patch.c):
  ** built for version pver of the overlay's tiers; phas: some base row's
  ** tier is patched (else code is the answer); own: copies of strings the
  ** dictionary points to that no file row has */
  uint32_t *pcode;
  uint64_t pver;
  int pbuilt, phas;
  char **own;
  uint64_t nown;
} strcodes;

/* A record of the delta: one allocation, strings NUL-terminated inside. */
typedef struct drec {
  int64_t id, ts, access_count, last_access;
  uint64_t used; /* an ephemeral store's use number (put, store_get): the least recently used go first */
  double importance;
  int dead;
  char *str[6];
  size_t len[6];
  void *emb; /* stored type, or NULL */
  store_val *cv; /* the declared columns' values (store_ncols; NULL when none) */
} drec;


enum { UNDO_DELETE = 0, UNDO_INSERT = 1, UNDO_PATCH = 2 };
typedef struct undo {
  int insert;   /* UNDO_INSERT: a delta record was added at pos; UNDO_DELETE: pos was
                ** deleted; UNDO_PATCH: pos was patched (store_patch.c's stack has
                ** its entry's previous state) */
  int table;    /* 0: the memories; 1 + STORE_G_*: a graph table */
  uint64_t pos;
} undo;

/* A position's fields set by store_update since the checkpoint (the
** overlay: store_patch.c): the STORE_P_* bits set so far, and the values. */
typedef struct ovent {
  uint64_t pos;
  unsigned set;
  int64_t ac, la;
  double imp;
  const char *tier; /* the overlay's copy (ovstrs), NUL-terminated; NULL: NULL */
  size_t tier_len;
} ovent;

/* The state of a position's entry before a patch in the open transaction. */
typedef struct ovundo {
  int had;   /* 0: it had none (the patch made it) */
  ovent old;
} ovundo;

/* The overlay's tiers, one copy per distinct string (open addressing). */
typedef struct ovstrs {
  char **v;   /* malloc'd strings; NULL: an empty slot */
  size_t *len;
  uint64_t *h;
  uint64_t cap, n;
} ovstrs;

struct store {
  char *path, *walpath;
  int ephemeral;     /* no file, no log: store_opts.ephemeral */
  int closing;       /* store_close's checkpoint (adds no rows to the graph in memory) */
  int expcol;        /* ephemeral: the declared column expires_at (-1: none) */
  int64_t ttl, clock_set;
  uint64_t capacity, tick; /* tick: the last use's number (drec.used) */
  int evict_by;
  double evict_half_life;
  struct xent { int64_t at, id; } *xh; /* a min-heap of (expiry, id), a record's put at its insert */
  uint64_t nxh, capxh;
  char *eattr[4];    /* an ephemeral store's agent, embedder, embedder_digest, embedder_model */
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
  uint64_t base_cap; /* rows base_id and base_dead have room for (rebase appends) */
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
  /* the declared columns (store_cols.c): their definitions (read from the
  ** file with the base), the base's datasets, the filters' indexes */
  store_coldef *cdef;
  int ncols;
  bcol *ucol;        /* ncols: /memories/columns/<name> */
  bcol *umiss;       /* ncols: vectors' /memories/columns/<name>.missing (others: none) */
  struct cparts *parts; /* ncols: the partition keys' indexes (NULL: none built) */
  struct pkmap *pk;  /* the text primary key's map (NULL: not built) */
  struct vgraph *vg; /* ncols: the vector columns' graphs (store_vcol.c; NULL: none loaded) */
  /* the int8 sketches of the base's vectors that prune exact searches
  ** (store_sketch): slot 0 the embedding, 1 + c vector column c; and, in
  ** the same slots, of their base rows past their graphs
  ** (store_sketch_tail); built on the second exact search of a base, freed
  ** with it */
  struct store_sketch_slot {
    struct ann_sketch *sk;
    uint32_t uses; /* exact searches that asked before it was built */
    uint64_t from; /* the base row its row 0 is */
  } *skt, *sktail;
  int nskt; /* (slots of each) */
  int64_t *tsc;      /* the base rows' ts, read on the first store_get_ts */
  /* the temporal index (store_time.c): the base's pairs, the delta's */
  store_tkey *tb, *td;
  uint64_t ntb, ntd, captd;
  int tb_built;
  uint64_t td_reuses, td_gen; /* s->reuses when td was synced; td's version */
  uint64_t time_gen;          /* changes when the base's pairs are freed */
  uint64_t time_builds, time_ranges;
  int64_t time_build_us;
  store_tsess *tsx;           /* the per-session index; NULL: not built */
  uint64_t tsx_builds;
  int64_t tsx_build_us;
  /* base rows deleted since the checkpoint, in order */
  uint64_t *newdead;
  uint64_t nnewdead, capnewdead;
  /* delta */
  drec **delta;
  uint64_t ndelta, capdelta;
  /* the live records' ids -> positions: the delta's, and the base rows'
  ** unless base_sorted (store_pos_of) */
  idmap map;
  int base_sorted; /* base_id strictly increasing: a base row is found by binary search,
                      so opening builds no map of them */
  uint64_t live;
  int64_t max_id;
  /* changes in place (store_patch.c): the overlay, ovix[pos] - 1 its entry in ov[] (0: none) */
  uint64_t *ovix, capix;
  ovent *ov;
  uint64_t nov, capov;
  ovundo *ovundo;             /* one per UNDO_PATCH of the undo list, in order */
  uint64_t novundo, capovundo;
  uint64_t ov_tier_ver;       /* changes whenever a tier in the overlay does */
  ovstrs ovs;                 /* the overlay's tiers */
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
  /* an ephemeral store: the process's log it shares with the other
  ** connections' handles of its name (store_eph.c) */
  struct eph *eph;
  uint64_t eph_seq;        /* the last of its frames this handle has applied */
  int eph_stale;           /* (under the log's lock) it fell behind: reloaded from the last snapshot */
  struct eframe *eph_pend; /* the prepared transaction's frame, published at commit */
  int64_t *evict_ids;      /* the records the prepared transaction evicts (capacity) */
  uint64_t nevict;
  int held;                /* readers holding positions at store_begin (store_set_held) */
  uint64_t eph_reloads;    /* times it reloaded from a snapshot */
  /* capacity with evict=lru: the uses in order, (id, use number); an entry
  ** whose record is gone or used again since is stale, skipped (and
  ** dropped from the front, or all at once when they outnumber the live),
  ** so the least recently used are found from the front */
  struct luse { int64_t id; uint64_t tick; } *lq;
  uint64_t lq_head, lq_end, lq_cap;
  int lq_lost;             /* a use not queued (out of memory): evictions scan until it is made again */
  uint64_t ring_seen;      /* the process's reads applied here (store_eph_uses) */
  uint64_t eph_who;        /* this handle's number in the process (its reads' in the ring) */
  pthread_t eph_thr;       /* the thread of its last call (atomic) */
  /* its owner's lock (an SQLite connection's mutex: store_opts.owner) */
  int (*own_try)(void *own);
  void (*own_unlock)(void *own);
  void *own;
  /* provenance (store_prov.c): the column (-1: none), this handle's writer,
  ** tool and the next put's fields, the store's embedder and model */
  int prov_col;
  char *prov_writer, *prov_tool, *prov_fields, *prov_emb, *prov_model, *prov_agent;
  int prov_known; /* prov_emb, prov_model and prov_agent read */
  /* signed checkpoints (store_sign.c) */
  char *sign_path;         /* the secret key file given (NULL: the one the file's last signature names) */
  int sign_force;          /* the next checkpoint signs and hashes every row (store_sign_now) */
  struct store_mtree *mt;  /* the Merkle tree over the file's leaves, once a checkpoint built it */
  int file_only;           /* opened as the file alone, without its log (store_opts.file_only) */
};

/* A put's record with its provenance filled (store_put): *out is r with
** cols[prov_col] the history; *buf holds what out points to (freed by
** the caller). */
int store_prov_fill(store *s, const store_rec *r, store_rec *out, void **buf);
void store_prov_buf_free(void *buf);
void store_prov_free(store *s);
/* The provenance column of a store whose root says provenance (-1: none). */
int store_prov_find(store *s, int on);

/* Base row pos's value of declared column c as the file holds it, dead
** or alive (store_sign.c's check of a row it signs again). */
int store_get_col_file(store *s, uint64_t pos, int c, store_val *v);
/* Whether each string of base row pos (the six, and the declared text and
** blob columns') has the length its element records
** (a string whose element and heap object disagree reads differently in
** other HDF5 readers). */
int store_row_strings_agree(store *s, uint64_t pos);
/* The same for the declared text and blob columns. */
int store_cols_strings_agree(store *s, uint64_t pos);

/* ---- signed checkpoints (store_sign.c) ---------------------------------------- */

typedef struct store_mtree store_mtree;

/* What a checkpoint needs to sign, found before it writes anything. */
typedef struct store_signer {
  int on;             /* this checkpoint signs */
  int full;           /* every row is hashed (the first signature, store_sign_now) */
  int64_t n;          /* signed checkpoints in the file */
  uint64_t nleaves;   /* rows of /sign/leaves */
  uint8_t last[32];   /* the last signed root (zeros: none) */
  uint8_t last_graph[96]; /* the last signed graph hashes */
  uint8_t schema[32];     /* the schema's hash (store_sign.c: schema_hash), read once */
  uint8_t pk[32], seed[32];
  char *key_file;     /* the key file's path as recorded (malloc'd) */
} store_signer;

/* Whether the checkpoint signs (a key given, or the file signed), reading
** the key and checking that the file is as its last signature left it. */
int store_sign_begin(store *s, store_signer *sg);
/* Hash the rows the checkpoint changes and adds (nlive of the delta's
** records) and write their leaves, the root and the signature into w. */
int store_sign_write(store *s, h5w *w, store_signer *sg, uint64_t upto, uint64_t nlive);
/* optimize: the history and the live rows' leaves copied into w, the new
** file's rows signed (nlive live rows of the base). */
int store_sign_optimize(store *s, h5w *w, store_signer *sg, uint64_t nlive);
/* After the checkpoint: ok, or failed (the tree, built past the file, goes). */
void store_sign_end(store *s, store_signer *sg, int ok);
void store_mtree_free(store_mtree *t);

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
/* A failed writer's code: store_h5_code(h5w_errcode(w)). */
int store_wcode(const h5w *w);
/* The dataset at path of w in *out, made in g (the path's parent group)
** when missing (stores from before may lack it): of type ty (taken over,
** freed when the dataset exists), chunked by crows rows, unfiltered, 1-D
** (width 0) or [rows, width] with rows unlimited.  STORE_OK or the
** writer's code. */
int store_wdset(h5w *w, h5w_obj *g, const char *path, h5_type *ty, uint64_t crows, uint64_t width,
                h5w_obj **out);
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
/* The positions of records moved (store_compact): what store_cols.c keeps
** by position dropped. */
void store_cols_positions_moved(store *s);
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

/* ---- interface to code in store_patch.c ---------------------------------- */

/* The overlay's entry of pos, or NULL. */
const ovent *store_patch_at(const store *s, uint64_t pos);
/* The fields of v that v->have holds, with pos's entry applied. */
void store_patch_view(const store *s, uint64_t pos, store_view *v);
/* store_update without its checks (replaying the log). */
int store_patch_apply(store *s, int64_t id, const store_patch *p);
/* Take back the last patch (of pos: its UNDO_PATCH entry). */
void store_patch_undo(store *s, uint64_t pos);
/* The transaction ended: its undo states go. */
void store_patch_commit(store *s);
/* Empty the overlay (a checkpoint wrote it); free it all (the state goes). */
void store_patch_clear(store *s);
void store_patch_free(store *s);
/* The log op of pos's entry through put ('U', id, bits, values; nothing
** when pos has none): nonzero when put failed. */
int store_patch_encode(const store *s, uint64_t pos, int (*put)(void *ctx, const void *p, size_t n),
                       void *ctx);
/* Write the base rows' entries over their columns' chunks (the
** checkpoint's writer w). */
int store_patch_write(store *s, h5w *w);

/* ---- interface to code in store_cols.c ------------------------------------ */

/* Map dataset d (path, for messages) as a column of *n rows (store_load.c;
** UINT64_MAX: as many as it has, stored into *n): chunked along the rows,
** unfiltered, elements of esz bytes, 1-D (width 0) or [rows, width]. */
int store_map_col(store *s, h5_obj *d, const char *path, bcol *c, size_t esz, int width, uint64_t *n);
/* Read the declared columns from the root attribute `columns` (none: a
** store without them) and, when want declares columns, check they are the
** same (STORE_EMISMATCH naming the difference). */
int store_cols_read(store *s, h5_obj *root, const store_opts *want);
/* Map the declared columns' datasets (n rows, as the fixed columns'). */
int store_cols_map(store *s, h5_obj *mem, uint64_t n);
/* Free what store_cols_read and _map made, and the indexes of the base. */
void store_cols_base_free(store *s);
/* Check opts' declarations (store_write_new); lay them out in a new file:
** the root attribute and /memories/columns with a dataset each. */
int store_cols_check_defs(store *s, const store_coldef *c, int n);
int store_cols_layout(store *s, h5w *w, h5w_obj *root, h5w_obj *mem, const store_opts *o);
/* A record's values: checked (store_put), their bytes (a drec's room),
** copied into the drec's room at *p (advanced). */
int store_cols_check(store *s, const store_val *cv);
size_t store_cols_size(const store *s, const store_val *cv);
void store_cols_copy(const store *s, const store_val *cv, store_val *out, uint8_t **p);
/* The log: a record's values after its fixed fields; decoding them from
** *p (advanced; STORE_ECORRUPT when cut short or not what store_put takes,
** a message naming the column in err). */
int store_cols_encode(const store *s, const drec *d, int (*put)(void *ctx, const void *p, size_t n),
                      void *ctx);
int store_cols_decode(store *s, const uint8_t **p, const uint8_t *end, store_val *out, char *err,
                      size_t errlen);
/* A checkpoint: append the delta's live records' values (nlive of them). */
int store_cols_append(store *s, h5w *w, uint64_t nlive);
/* optimize: append the live base rows r0 .. r1 - 1 (m of them). */
int store_cols_copy_rows(store *s, h5w *w, uint64_t r0, uint64_t r1, uint64_t m);
/* A record at pos became live (1) or dead (0) (put, delete, their undo):
** the primary key's map follows. */
void store_cols_note(store *s, uint64_t pos, int live);
/* The key of pos's record is free (store_put): STORE_OK or STORE_EEXISTS. */
int store_cols_pkey_free(store *s, const store_val *cv);
/* The text primary key's column (-1: none). */
int store_pk_col(const store *s);

/* ---- interface to code in store_vcol.c ----------------------------------- */

/* The vector columns' saved graphs (index=hnsw: each float vector column
** under l2, cosine or dot has one) loaded from the mapped file; a missing
** or damaged one is not an error (searches are exact until a checkpoint
** saves one).  Fails only when out of memory. */
int store_vgraphs_load(store *s);
void store_vgraphs_free(store *s);
/* Whether a checkpoint (force: optimize) should save a column's graph;
** bring those graphs up to the base's rows and append their images. */
int store_vgraphs_wanted(const store *s, int force);
int store_vgraphs_save(store *s, h5w *w, int force, int threads, char *err, size_t errlen);

/* The sketch (lib/ann/prune.h) of slot 0 (the embedding) or 1 + c (vector
** column c) over the base's rows, src reading them: built on the second
** exact search of the base that asks (one search alone does not pay for
** it), when the base has at least STORE_SKETCH_MIN rows and the sketch
** would hold at most STORE_SKETCH_MAX bytes.  NULL: none (yet), or out of
** memory (the search is then a plain scan).  Freed with the base. */
#define STORE_SKETCH_MIN 2048
#define STORE_SKETCH_MAX ((size_t)512 << 20)
const struct ann_sketch *store_sketch(store *s, int slot, const ann_src *src);
/* The same for slot's base rows [from, nbase) (src reading row `from` as
** its row 0): the rows past the embedding's or a column's graph, which
** the graph's searches score exactly (store_knn, store_knn_col). */
const struct ann_sketch *store_sketch_tail(store *s, int slot, uint64_t from, const ann_src *src);
void store_sketches_free(store *s);

/* ---- interface to code in store_log.c ------------------------------------ */

/* The open transaction as a frame in s->frame. */
int store_frame_build(store *s);
/* The whole state as one frame in s->frame (an ephemeral store's
** snapshot): its live records (with their changes), then its entities,
** relations and mentions; hint: the bytes it will likely take. */
int store_snapshot_build(store *s, size_t hint);
/* A delete of record id appended to s->frame. */
int store_frame_delete(store *s, int64_t id);
/* Apply a frame of the log (wal_replay's callback; ctx is the store). */
int store_replay_frame(void *ctx, uint64_t seq, const uint8_t *p, size_t len);

/* ---- interface to code in store_ckpt.c ----------------------------------- */

/* Create the store's file from o (under a temporary name, then linked). */
int store_write_new(store *s, const store_opts *o);
/* The options o checked as a new store's (store_write_new checks them so). */
int store_new_check(store *s, const store_opts *o);

/* ---- interface to code in store_load.c (beyond the state's load) --------- */

/* An ephemeral store's state from o: no file, no log, nothing in it; the
** writer's role taken. */
int store_ephemeral_load(store *s, const store_opts *o);

/* ---- interface to code in store_eph.c ------------------------------------- */

/* An ephemeral store's handle joins the log of its name (s->path) in this
** process, made when no handle has it: STORE_EMISMATCH when the log's
** store was made with other options (the message names both), else its
** records (the last snapshot and the frames after it) replayed. */
int store_eph_join(store *s);
/* The handle leaves its log (the last one frees it); a write transaction's
** role given back. */
void store_eph_leave(store *s);
/* This handle's expired records deleted, then the frames other handles
** published since it last looked replayed (a handle that fell behind is
** reloaded from the last snapshot when may_reload: no reader holds a
** position). */
int store_eph_catch_up(store *s, int may_reload);
/* The writer's role of the log (waiting up to STORE_EPH_WAIT_MS for
** another thread's transaction; STORE_EBUSY after that, or at once when
** it is this thread's), then caught up. */
int store_eph_begin(store *s);
/* The transaction's frame (and its evictions') made ready to publish. */
int store_eph_prepare(store *s);
/* Published (the evictions applied here too), the role given back, a
** snapshot added when the log since the last one outgrew it. */
void store_eph_commit(store *s);
/* The prepared frame dropped and the role given back. */
void store_eph_rollback(store *s);
/* A use of the record d: its use number bumped (and, with capacity and
** evict=lru, queued); a read also told to the other handles. */
void store_use(store *s, drec *d, int read);
/* A read of record id put in the log's ring of the last reads (no lock). */
void store_eph_use(store *s, int64_t id);
/* The ring's reads since this handle last looked applied here (the
** writer's evictions count every handle's reads). */
void store_eph_uses(store *s);
/* The log's frames and bytes held, handles, snapshots, this handle's reloads. */
void store_eph_log(const store *s, store_log_info *info);
int64_t store_eph_clock(const store *s);
void store_eph_set_clock(store *s, int64_t now);
#define STORE_EPH_WAIT_MS 5000

/* ---- interface to code in store_delta.c (beyond the delta's changes) ------ */

/* An ephemeral store's deleted records freed and the live ones numbered
** again from 0 (the overlay folded into them, what is kept by position
** dropped, to be made again when needed): outside a transaction, with no
** position held by a reader.  Anything else: a no-op.  STORE_OK or
** STORE_ENOMEM (nothing lost: the records stay as they were). */
int store_compact(store *s);
/* store_compact when the deleted records outnumber the live ones (at least
** 1024 of them): each record copied once for as many deletes, at most. */
int store_compact_due(store *s);
/* An ephemeral store past its capacity: the ids of the records over it in
** *ids (malloc'd, *n of them), the least recently used or those of the
** lowest decay score first (ties: the lowest id).  None: *ids NULL. */
int store_evict_pick(store *s, int64_t **ids, uint64_t *n);
/* The live record id deleted for good (not undoable: expiry, eviction,
** outside a transaction); none: a no-op. */
void store_gone_id(store *s, int64_t id);
/* The expired records deleted (not undoable), nothing moved (no
** compaction: a position held stays valid). */
void store_expire_now(store *s);
/* After a commit's evictions: the stale entries at the front of the queue
** of uses dropped (or the queue made again, when a use was lost). */
void store_lru_commit(store *s);
/* Every record and graph row of an ephemeral store dropped (a reload). */
int store_clear(store *s);

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
/* The row of the last save of kind alone (offset, length, the index's two
** numbers), the image not read: STORE_OK, or STORE_ENOTFOUND with *why. */
int simage_last(h5_file *f, const char *kind, int64_t row[4], const char **why);
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
