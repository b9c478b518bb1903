/*
** lib/store/store.h - the memory store: an agent's memories in one HDF5
** file (docs/FORMAT.md), with a write-ahead log beside it.
**
** A store is the records of its last checkpoint, read in place from the
** memory-mapped .h5 file (the "base"), plus the records committed since,
** kept in memory and in the log `<path>-wal` (the "delta").  Opening reads
** the id column and the tombstones of the base, never the embeddings, and
** replays the log's valid prefix.  A checkpoint appends the delta's live
** records and the new tombstones to the .h5 file copy-on-write (lib/h5's
** h5w_open), writes the superblock last, then empties the log: its cost is
** proportional to what changed.  A crash at any moment leaves the last
** checkpoint plus the log's valid prefix.
**
** Changes are made in transactions: store_put / store_delete between
** store_begin and store_commit (or store_rollback), with savepoints as
** positions in the transaction (store_mark / store_undo_to).  Changes are
** visible to this handle at once; store_commit writes them to the log as
** one frame.  One writer per store: the first handle that writes takes an
** exclusive lock (flock) on the log file (the .h5 file is replaced by
** optimize; the log never is) and keeps it until store_close;
** another writer gets STORE_EBUSY.  A reader's view is the file and log as
** they were when it last refreshed (store_refresh).
**
** It knows nothing of SQLite.  One thread at a time per handle.
*/
#ifndef H5MEM_STORE_H
#define H5MEM_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ann/ann.h"
#include "util/err.h"
#include "graph/graph.h"

/* The codes of the one error space (util/err.h). */
enum {
  STORE_OK = UTIL_OK,
  STORE_EIO = UTIL_EIO,
  STORE_ENOMEM = UTIL_ENOMEM,
  STORE_ECORRUPT = UTIL_ECORRUPT,
  STORE_EINVAL = UTIL_EINVAL,         /* a bad argument or value */
  STORE_EMISMATCH = UTIL_EMISMATCH,   /* options disagree with the existing store */
  STORE_EBUSY = UTIL_EBUSY,           /* another handle (or process) is the writer */
  STORE_ENOTFOUND = UTIL_ENOTFOUND,
  STORE_EEXISTS = UTIL_EEXISTS,       /* the id is taken */
  STORE_EFULL = UTIL_EFULL,           /* no space left (disk full, file size limit) */
  STORE_ETOOBIG = UTIL_ETOOBIG,       /* beyond a format's limit (the text index's 32-bit fields) */
  STORE_EUNSUPPORTED = UTIL_EUNSUPPORTED /* this build cannot (signing without libsodium) */
};

enum { STORE_COSINE = 0, STORE_L2 = 1, STORE_DOT = 2 };
enum { STORE_F16 = 2, STORE_F32 = 4 };                       /* bytes per element */
enum { STORE_SYNC_OFF = 0, STORE_SYNC_NORMAL = 1, STORE_SYNC_FULL = 2 };
enum { STORE_INDEX_FLAT = 0, STORE_INDEX_HNSW = 1, STORE_INDEX_IVF = 2 };

#define STORE_NULL_TIME INT64_MIN /* last_access never set */

typedef struct store store;

/* Options for creating a store (dim 0 when only opening an existing one). */
typedef struct store_opts {
  int dim;            /* 1 .. 65536 */
  int metric;         /* STORE_COSINE, ... */
  int storage;        /* STORE_F16 or STORE_F32 */
  int sync;           /* STORE_SYNC_* (a property of the handle, not the file) */
  const char *agent;  /* NULL or text kept in the file */
  const char *embedder;
  const char *embedder_digest; /* NULL or the embedder's model digest, kept beside it */
  const char *embedder_model;  /* NULL or an HTTP embedder's model name, kept beside it */
  int chunk_rows;     /* rows per chunk of new datasets; 0: 1024 */
  uint64_t autocheckpoint; /* log bytes that trigger a checkpoint at commit; 0: 64 MiB */
  /* the vector index, fixed at creation (docs/FORMAT.md, "The vector index") */
  int index;          /* STORE_INDEX_FLAT (exact scans only), _HNSW or _IVF */
  int hnsw_m;         /* links per node; 0: 16 */
  int hnsw_efc;       /* ef_construction; 0: 128 */
  int ef_search;      /* a search's default ef; 0: 64 */
  int no_q8;          /* index=hnsw without the int8 copy of the embeddings */
  uint32_t ivf_nlist; /* index=ivf: lists; 0: sqrt of the rows when trained */
  int ivf_nprobe;     /* lists a search scans; 0: 16 */
  int ivf_pq_m;       /* 0: IVF-Flat; else IVF-PQ with this many sub-quantisers (dividing dim) */
  /* the text index's tokenizer, FTS5's syntax: "unicode61" or "porter
  ** unicode61", each optionally followed by "remove_diacritics 0|1|2";
  ** NULL: "unicode61 remove_diacritics 1" (store_tokenize_parse) */
  const char *tokenize;
  /* NULL, or more string attributes of / written at creation: name, value,
  ** name, value, ..., NULL.  Each name must begin with "migrated_" (the
  ** provenance h5mem_migrate records; STORE_EINVAL otherwise); optimize
  ** keeps them. */
  const char *const *attrs;
  /* open only: a missing file is an error (STORE_EIO, errno ENOENT's
  ** message), never created, even with dim > 0; dim and the rest are still
  ** checked against an existing store */
  int no_create;
  int writer;         /* take the writer role as the store opens: one load of the file, not a
                         reader's and then a writer's (store_become_writer) */
  /* the columns declared beside the fixed ones (docs/FORMAT.md, "Declared
  ** columns"): ncols of them (0: none; opening an existing store with 0
  ** takes the file's, else they must be the file's: STORE_EMISMATCH
  ** naming the difference) */
  const struct store_coldef *cols;
  int ncols;
  /* no file and no log: every record in memory, gone when the store is
  ** closed (the ephemeral tier, docs/SQL.md); the path only names it.
  ** The writer's role is the handle's at once; index must be flat */
  int ephemeral;
  /* ephemeral: a record's expiry is its declared column expires_at
  ** (integer, unix seconds; NULL: never); one inserted without gets now +
  ** ttl when ttl > 0 (store_clock) */
  int64_t ttl;
  /* ephemeral: at most capacity live records (0: no limit); past it, at
  ** each commit, the least recently used go (STORE_EVICT_LRU: put or read,
  ** store_get) or those of the lowest decay score (STORE_EVICT_SCORE:
  ** lib/life's, half life evict_half_life seconds, 0: its default) */
  uint64_t capacity;
  int evict_by;
  double evict_half_life;
  /* ephemeral: the lock of whoever uses the handle (an SQLite connection's
  ** sqlite3_db_mutex): owner_try takes it without waiting (1: taken) and
  ** owner_unlock gives it back.  A handle of the name opened later takes it
  ** to read this one's records when this one is alone (it keeps no log
  ** then); NULL: read when its last call was that thread's, else asked for */
  int (*owner_try)(void *owner);
  void (*owner_unlock)(void *owner);
  void *owner;
  /* the secret key file (lib/sign) every checkpoint is signed with (NULL:
  ** the one the file's last signature names, if it is signed); read at each
  ** checkpoint, never kept.  Creating a store with it reads it first and
  ** signs the empty store; opening one only notes the path */
  const char *signing_key;
  /* open only, readonly: the file as its last checkpoint left it, its log
  ** neither opened nor read (store_verify) */
  int file_only;
  /* create only: every record carries its history in the declared column
  ** `+provenance text`, which cols must hold (store_prov.c) */
  int provenance;
} store_opts;
enum { STORE_EVICT_LRU = 0, STORE_EVICT_SCORE = 1 };

/* ---- declared columns (store_cols.c) ----------------------------------- */

/* A column a store's creator declares beside the fixed ones, in sqlite-vec's
** vec0 syntax: a metadata column (`user_id integer`, filtered), a
** partition key (`user_id integer partition key`: searches by its value
** touch that partition alone), an auxiliary column (`+payload blob`:
** stored and returned, never filtered), a text primary key (`key text
** primary key`: unique) or a vector column (`image float[512]
** distance_metric=l2`). */
enum { STORE_T_INTEGER = 1, STORE_T_FLOAT, STORE_T_TEXT, STORE_T_BLOB, STORE_T_BOOLEAN,
       STORE_T_VECTOR };
enum { STORE_R_METADATA = 0, STORE_R_PARTITION, STORE_R_AUX, STORE_R_PKEY };
/* a vector column's element type (its bytes per element, but bit) */
enum { STORE_VT_F32 = 4, STORE_VT_F16 = 2, STORE_VT_I8 = 1, STORE_VT_BIT = 8 };
/* metrics beyond STORE_COSINE, STORE_L2, STORE_DOT (vector columns) */
enum { STORE_L1 = 3, STORE_HAMMING = 4 };
#define STORE_COLS_MAX 64
#define STORE_COLNAME_MAX 64
typedef struct store_coldef {
  char name[STORE_COLNAME_MAX]; /* [A-Za-z_][A-Za-z0-9_]*, at most 63 bytes */
  int type;                     /* STORE_T_* */
  int role;                     /* STORE_R_* */
  int vtype, dim, metric;       /* vectors: element type, elements (bits for bit), metric */
} store_coldef;
/* One declaration ("user_id integer partition key") into *c: STORE_OK, or
** STORE_EINVAL with a message in err naming what is wrong. */
int store_coldef_parse(const char *decl, size_t n, store_coldef *c, char *err, size_t errlen);
/* The declaration of c in normal form into buf (room for n bytes). */
void store_coldef_format(const store_coldef *c, char *buf, size_t n);
/* The bytes of one value of vector column c. */
size_t store_coldef_width(const store_coldef *c);
/* The store's declared columns: their number, and column i (0 .. n-1). */
int store_ncols(const store *s);
const store_coldef *store_col(const store *s, int i);
/* The declared column called name (n bytes, compared without case), or -1. */
int store_col_find(const store *s, const char *name, size_t n);

/* The largest magnitude a float16 store takes (float16's largest finite). */
#define STORE_F16_MAX 65504.0f

/* One record.  Strings are UTF-8, NULL when absent (len ignored).  emb is
** dim float32 values, NULL when the record has no embedding. */
/* A value of a declared column: type 0 is NULL, else the column's type;
** i for integer and boolean (0 or 1), f for float, p and n bytes for text
** (UTF-8, no NUL), blob and vector (store_coldef_width bytes, the
** column's element type). */
typedef struct store_val {
  int type;
  int64_t i;
  double f;
  const void *p;
  size_t n;
} store_val;

typedef struct store_rec {
  /* the declared columns' values, store_ncols of them (NULL: all NULL) */
  const store_val *cols;
  int64_t id;
  const char *text, *source, *session, *tags, *tier, *meta;
  size_t text_len, source_len, session_len, tags_len, tier_len, meta_len;
  const float *emb;
  int64_t ts;
  double importance;
  int64_t access_count;
  int64_t last_access; /* STORE_NULL_TIME: never */
} store_rec;

/* Open the store at path.  When the file is missing and create has dim > 0
** (and not no_create), create it (and its empty log).  When it exists, create (if given) must
** agree on dim, metric and storage (STORE_EMISMATCH, naming both values).
** readonly: never write or lock anything. */
int store_open(const char *path, const store_opts *create, int readonly, store **out,
               char *err, size_t errlen);
/* Checkpoint if this handle is the writer and something changed, release
** the lock, free everything.  NULL is a no-op.  Returns the checkpoint's
** status (the handle is freed either way). */
int store_close(store *s);
const char *store_errmsg(const store *s);

int store_dim(const store *s);
/* The string attribute name of / into buf (room for n bytes, NUL-terminated):
** STORE_OK, STORE_ENOTFOUND (none, or not a string that fits). */
int store_attr(const store *s, const char *name, char *buf, size_t n);
int store_metric(const store *s);
int store_storage(const store *s);
const char *store_path(const store *s);

/* The index the store was created with (STORE_INDEX_*, returned) and, when
** info is not NULL, its settings and state. */
typedef struct store_index_info {
  int kind, m, ef_construction, ef_search;
  uint32_t nlist;      /* IVF: the lists of the saved index (0: none yet) */
  int nprobe, pq_m;    /* IVF settings */
  uint64_t graph_rows; /* base rows the graph covers (0: none yet) */
  uint64_t saved_rows; /* ... and its last image in the file (fewer: rows added since in memory) */
  int in_place;        /* the graph is read from the mapped file, not copied */
  int q8;              /* the store keeps an int8 copy of the embeddings */
  uint64_t q8_rows;    /* base rows with an int8 copy mapped */
  const char *note;    /* why a store that should have a graph has none, or "" */
} store_index_info;
int store_index(const store *s, store_index_info *info);
/* "flat", "hnsw" or "ivf". */
const char *store_index_name(int kind);

/* The log as this handle read it: its valid frames and bytes, and into
** note (n bytes) "" or what is wrong with it: frames that look valid after
** a damaged one (not replayed; a writer keeps the log as it was in
** "<log>.corrupt-N" before cutting it back: wal.h, wal_note), or such
** copies found beside the store. */
typedef struct store_log_info {
  uint64_t frames, bytes;
  /* an ephemeral store's log in memory: the handles sharing it, the
  ** snapshots written to it, and this handle's reloads from one */
  uint64_t handles, snapshots, reloads;
} store_log_info;
void store_log(const store *s, store_log_info *info, char *note, size_t n);

/* Re-read the file and log if they changed on disk (readers only; a no-op
** for the writer, whose view is always current).  An ephemeral store:
** what the other handles committed replayed, its expired records deleted
** and, once the dead outnumber the live, its memory given back (so the
** caller holds no position of it); inside a transaction nothing (one sees
** the records as of its start). */
int store_refresh(store *s);

/* ---- reading --------------------------------------------------------- */

/* Records are addressed by a position: 0 .. store_npos(s) - 1 covers every
** record slot (base rows, then delta records), some of them dead. */
uint64_t store_npos(const store *s);
int store_pos_live(const store *s, uint64_t pos);
/* The position of id, or STORE_ENOTFOUND. */
int store_find(const store *s, int64_t id, uint64_t *pos);
/* The live record at pos, the parts in `want` (STORE_V_*) that v does not
** have yet (v->have; zero v for a new record).  Strings and emb point into
** the mapped file or into the handle (valid until the next change, refresh
** or checkpoint); emb is in the stored type (store_storage bytes per
** element), NULL if none.  Only the columns asked for are read, so a query
** touches only their pages of the file. */
enum {
  STORE_V_TEXT = 1, STORE_V_SOURCE = 2, STORE_V_SESSION = 4, STORE_V_TAGS = 8,
  STORE_V_TIER = 16, STORE_V_META = 32, STORE_V_EMB = 64,
  STORE_V_NUM = 128, /* ts, importance, access_count, last_access */
  STORE_V_ALL = 255,
  /* a base row as its file holds it, without the changes in place made
  ** since the checkpoint, and read even when deleted since (a signed
  ** checkpoint's check of a row it signs again) */
  STORE_V_FILE = 256
};
typedef struct store_view {
  int64_t id;
  const char *text, *source, *session, *tags, *tier, *meta;
  size_t text_len, source_len, session_len, tags_len, tier_len, meta_len;
  const void *emb;
  int64_t ts;
  double importance;
  int64_t access_count, last_access;
  unsigned have;
} store_view;
int store_get(store *s, uint64_t pos, unsigned want, store_view *v);
/* The tier alone of the live record at pos (NULL: a NULL tier), as
** store_get gives it, for a filter that tests every record: for a record
** in memory two pointer reads.  STORE_OK, STORE_ENOTFOUND (not live),
** STORE_ECORRUPT. */
int store_get_tier(store *s, uint64_t pos, const char **tier, size_t *len);
uint64_t store_count(const store *s); /* live records */

/* The value of declared column c (0 .. store_ncols - 1) of the live record
** at pos into *v (pointers into the mapped file or the handle, valid as
** store_get's).  STORE_OK, STORE_ENOTFOUND (not live), STORE_ECORRUPT. */
int store_get_col(store *s, uint64_t pos, int c, store_val *v);
/* Every declared column's value of the live record at pos as a copy of
** its own: *out is one malloc'd block (the values, then their bytes; the
** caller frees it), NULL when the store has no declared columns. */
int store_get_cols(store *s, uint64_t pos, store_val **out);

/* A condition on a declared column, for filters over many records:
** SQLite's comparison (a NULL value matches no operator but ISNULL;
** numbers compare as numbers, integer against float exactly; text as
** bytes (BINARY); a number is less than any text, text less than any
** blob).  v: one value (nv 1), or the list of IN and NOT IN (NULLs in
** it match nothing; NOT IN: a NULL value matches nothing either). */
enum { STORE_OP_EQ = 1, STORE_OP_NE, STORE_OP_LT, STORE_OP_LE, STORE_OP_GT, STORE_OP_GE,
       STORE_OP_ISNULL, STORE_OP_NOTNULL, STORE_OP_IN, STORE_OP_NOTIN };
typedef struct store_cond {
  int col, op;
  const store_val *v; /* type: 0 (NULL), STORE_T_INTEGER, _FLOAT, _TEXT or _BLOB */
  int nv;
} store_cond;
/* Clear the bits (of positions below npos; bits as store_live_bits's) of
** records whose column fails cond, reading the column alone, and only for
** the positions set (a word of zeros costs one test); *n is then the bits
** still set.  A condition `=` on a partition key takes the partition's
** positions from its index (built on first use, kept until the base
** changes) without reading the other rows.  STORE_OK or an error. */
int store_col_filter(store *s, const store_cond *cond, uint64_t npos, uint8_t *bits, uint64_t *n);
/* Whether the live record at pos passes cond (1), not (0), or an error (-1). */
int store_col_test(store *s, const store_cond *cond, uint64_t pos);
/* The live record whose text primary key is key (n bytes): STORE_OK with
** its position, or STORE_ENOTFOUND (also when the store has none). */
int store_pkey_find(store *s, const char *key, size_t n, uint64_t *pos);

/* For filters over many records: the base rows' values of one string
** column (want: one STORE_V_* string bit) as codes, equal strings equal
** codes: codes[pos] for pos < *ncodes (the base rows; later positions are
** records in memory: use store_get).  *code is the code of v (n bytes;
** v NULL: the code of NULL), or UINT32_MAX when no base row has it.  Built
** by one pass over the column on first use, kept until the base changes
** (a checkpoint, refresh or optimize); valid until then. */
int store_str_codes(store *s, unsigned want, const char *v, size_t n, const uint32_t **codes,
                    uint64_t *ncodes, uint32_t *code);
/* The ts of the live record at pos, reading only that column (the file's
** rows: all of them on the first call, kept until the base changes). */
int store_get_ts(store *s, uint64_t pos, int64_t *ts);
/* The ts of every file row, ts[pos] for pos < *n (the rows store_get_ts
** reads from; records in memory are past them): built on first use, kept
** until the base changes. */
int store_ts_column(store *s, const int64_t **ts, uint64_t *n);

/* ---- time ranges (store_time.c) ---------------------------------------- */

/* The live records with lo <= ts <= hi in ts order (desc: newest first),
** ties in the order of their positions (the order they were stored; an
** update moves its record after its ties), from a sorted index of ts
** (docs/FORMAT.md, "The temporal index"): O(log n) to start, O(1) a row
** (a deleted row costs a step).  The index is built on first use, one
** pass over the ts column and a radix sort, kept until the base changes
** (a checkpoint carries it over in O(n); a refresh or optimize builds it
** again); the records in memory are merged in.  Positions past
** store_npos at the start (records added meanwhile) are not visited, nor
** a record that would come before the last one given (put, after an
** undone insert, at the position it freed): the order holds.  The
** store must not checkpoint or refresh during the walk (store_time_next
** then fails with STORE_EINVAL).  The fields are the iterator's own. */
typedef struct store_time_iter {
  int64_t lo, hi;
  int desc, done;
  uint64_t end, gen;
  uint64_t b, bb, be;      /* the file's rows: next, and the span of the range */
  uint64_t d, db, de, dgen; /* the records in memory: the same, and the array's version */
  int dhas;                /* the last pair taken from the records in memory: */
  int64_t dts;
  uint64_t dpos;
  int by_sess;             /* store_time_range_session: the session's rows alone */
  const char *sess;
  size_t sesslen;
  int has_last;            /* the last pair given: a pair that would come before */
  int64_t last_ts;         /* it (a record put at a position an undone insert */
  uint64_t last_pos;       /* freed, behind the walk) is not visited */
} store_time_iter;
int store_time_range(store *s, int64_t lo, int64_t hi, int desc, store_time_iter *it);
/* The same for the live records whose session is session (len bytes,
** compared as bytes; NULL matches nothing, as SQL's `session = NULL`):
** the file's rows from a per-session index (one group per session, in ts
** order: O(log n) to start, O(1) a row of the session), built on first
** use from the ts index and the session column's string codes
** (store_str_codes), kept and carried over as the ts index is; the
** records in memory are walked in ts order and tested.  session must
** stay valid until the walk ends. */
int store_time_range_session(store *s, const char *session, size_t len, int64_t lo, int64_t hi, int desc,
                             store_time_iter *it);
/* The next position (and its ts, when ts is not NULL): STORE_OK, or
** STORE_ENOTFOUND at the end, or an error. */
int store_time_next(store *s, store_time_iter *it, uint64_t *pos, int64_t *ts);
/* The records with lo <= ts <= hi, dead ones deleted since the last
** checkpoint included (an upper bound of the live ones): O(log n). */
int store_time_count(store *s, int64_t lo, int64_t hi, uint64_t *n);
/* The index's state: pairs held (0 while not built), whether built, how
** many times it was built and how long the last build took, and the
** ranges walked since the store opened (a counter for tests). */
typedef struct store_time_stats {
  uint64_t rows;
  int built;
  uint64_t builds;
  int64_t build_us;
  uint64_t ranges;
  /* the per-session index: pairs and sessions held (0 while not built),
  ** whether built, builds and the last one's time */
  uint64_t sess_rows, sessions;
  int sess_built;
  uint64_t sess_builds;
  int64_t sess_build_us;
} store_time_stats;
void store_time_info(const store *s, store_time_stats *st);

/* The embeddings of positions pos, pos + 1, ... that lie one after another
** in memory (one chunk of the file, or one delta record), in the stored
** type: at most *count of them on entry, how many on return.  NULL when pos
** has no embedding (or is dead in the delta; *count is then 1).  Dead base
** rows are included: check store_pos_live.  Thread-safe (reads only). */
const void *store_emb_block(const store *s, uint64_t pos, uint64_t *count);
int64_t store_max_id(const store *s);
/* The id of the record at pos (dead or alive; pos < store_npos). */
int64_t store_pos_id(const store *s, uint64_t pos);  /* largest id ever used (0 if none) */

/* Which records a search may return: a bitmap over positions (bit pos % 8
** of byte pos / 8; only live records set, nbits of them), or else a
** function saying whether the live record at pos is allowed (called from
** the searching thread only; it reports its own errors through ctx), or
** neither (every live record).  With fn, fn_all may give the same answers
** for every position below npos at once, when a search wants the allowed
** set whole: bits (npos / 8 + 1 bytes, zeroed) set for the live allowed
** records, their number in *n; 0, or -1 on an error (reported through ctx
** as fn's). */
typedef struct store_filter {
  const uint8_t *bits;
  uint64_t nbits;
  int (*fn)(void *ctx, uint64_t pos);
  void *ctx;
  int (*fn_all)(void *ctx, uint64_t npos, uint8_t *bits, uint64_t *n);
} store_filter;

/* The live positions below npos (<= store_npos) into bits (npos / 8 + 1
** bytes, zeroed), their number in *n. */
void store_live_bits(const store *s, uint64_t npos, uint8_t *bits, uint64_t *n);

/* The k nearest allowed records to q (dim float32 values); flt may be NULL
** (every live record).  Results (position and distance, sorted by distance
** then position) go to out, room for k; their number to *nout, which is
** min(k, records allowed) whenever that many have a vector.  Exact when
** opt->exact or the store has no graph yet; otherwise the graph's
** candidates for the rows it covers merged with an exact scan of the rows
** added since it was saved.  A filtered search scans the allowed records
** exactly when they are few (about ef x 2M or fewer: a filter function is
** then run on every record), else searches the graph with ef raised in
** proportion to what the filter removes (a function's share estimated from
** 512 rows; it then runs only on the rows the search visits), and scans
** exactly when the graph cannot reach k of them.  opt may be NULL. */
typedef struct store_knn_opts {
  int exact;   /* 1: scan every record */
  int ef;      /* the graph's candidate list; 0: the store's ef_search */
  int nprobe;  /* IVF lists to scan; 0: the store's */
} store_knn_opts;
int store_knn(store *s, const float *q, uint64_t k, const store_filter *flt,
              const store_knn_opts *opt, ann_res *out, uint64_t *nout);

/* The k nearest allowed records (flt as for store_knn; NULL: every live
** record) by declared vector column c, those without a vector skipped: an
** exact scan.  q is the query in the column's terms: dim float32 values
** for a float32 or float16 column, dim int8 values for int8, dim / 8 bytes
** for bit.  Distances as sqlite-vec gives them: l2 (not squared), cosine
** (1 - cos), dot (its negation), l1, hamming (bits that differ).  Sorted by
** distance, then position; *nout of them.  Exact, but through the
** column's graph when it has one (store_col_graph_rows) unless opt says
** exact (opt->ef: the graph's candidates; opt may be NULL). */
int store_knn_col(store *s, int c, const void *q, uint64_t k, const store_filter *flt, const store_knn_opts *opt,
                  ann_res *out,
                  uint64_t *nout);
/* The file rows column c's saved graph covers (0: none; index=hnsw stores
** keep one per float vector column under l2, cosine or dot, and search it
** as the embedding's: the graph for the rows it covers, an exact scan of
** the rest, an exact gather when a filter leaves few rows). */
uint64_t store_col_graph_rows(const store *s, int c);
/* The file rows the int8 sketch of the embedding (c = -1) or of vector
** column c covers: 0 until the second exact search of the base builds it
** (lib/ann/prune.h; it prunes exact searches, their results unchanged).
** store_tail_sketch_rows: the file rows past the embedding's (c = -1) or
** column c's graph that their own sketch covers, which prunes the exact
** part of a graph search the same way. */
uint64_t store_sketch_rows(const store *s, int c);
uint64_t store_tail_sketch_rows(const store *s, int c);

/* ---- keyword search (BM25) ------------------------------------------- */

/* The text index's tokenizer setting parsed (store_opts.tokenize); its
** normal form into norm (room for 64 bytes).  STORE_EINVAL with a message
** in err when not understood. */
int store_tokenize_parse(const char *spec, int *porter, int *remove_diacritics, char *norm,
                         char *err, size_t errlen);
/* The store's tokenizer setting, in normal form. */
const char *store_tokenize(const store *s);

typedef struct store_hit {
  uint64_t pos;
  double score; /* BM25, higher is better (FTS5's bm25() is its negation) */
} store_hit;

/* The k allowed records (flt as for store_knn; NULL: every live record)
** that best match the words of query[0..n) by BM25 (k1 = 1.2, b = 0.75),
** any word matching: the query is tokenized as the text is, each distinct
** term counted once.  The statistics (records, average length, records
** holding a term) are over every live record with text, filtered or not,
** as FTS5 computes them.  Sorted by score, then id; *nout of them (fewer
** when fewer match). */
int store_bm25(store *s, const char *query, size_t n, uint64_t k, const store_filter *flt,
               store_hit *out, uint64_t *nout);

/* BM25's statistics over several stores (a fleet searched as one): the
** live records with text and their tokens, and for each distinct term of
** a query, in the order store_bm25 takes them, the live records holding
** it.  Zero it first; free df with free(). */
typedef struct store_bm25_corpus {
  uint64_t ndocs, ntok;
  size_t nterms;
  uint64_t *df;
} store_bm25_corpus;
/* Add the store's statistics for query[0..n) to c.  The stores added
** must tokenize alike (store_tokenize): else STORE_EINVAL. */
int store_bm25_corpus_add(store *s, const char *query, size_t n, store_bm25_corpus *c);
/* store_bm25 scored with c's statistics (NULL: the store's own), so that
** the scores of several stores' records are those of one store holding
** them all. */
int store_bm25_in(store *s, const char *query, size_t n, uint64_t k, const store_filter *flt,
                  const store_bm25_corpus *c, store_hit *out, uint64_t *nout);

typedef struct store_text_info {
  const char *tokenize;  /* the setting, normal form */
  uint64_t image_rows;   /* base rows the saved image covers (0: none) */
  uint64_t image_terms;  /* its distinct terms */
  uint64_t memory_rows;  /* rows tokenized in memory (as of the last search) */
  int in_place;          /* the image is read from the mapped file */
  const char *note;      /* why there is no image, or "" */
} store_text_info;
int store_text_index(store *s, store_text_info *info);

/* ---- writing --------------------------------------------------------- */

int store_begin(store *s);
/* Insert r (r->id must be free: else STORE_EEXISTS).  Its strings must be
** well-formed UTF-8 without NUL bytes: else STORE_EINVAL, the message
** naming the column and the byte ("text: invalid UTF-8 at byte 3"). */
int store_put(store *s, const store_rec *r);
/* Delete the record with this id (STORE_ENOTFOUND if none). */
int store_delete(store *s, int64_t id);
/* A position in the open transaction, and undoing back to it. */
uint64_t store_mark(const store *s);
int store_undo_to(store *s, uint64_t mark);
/* Write the transaction to the log (fsync per the sync mode).  On failure
** nothing of it is durable; call store_rollback. */
int store_prepare(store *s);
/* Make the prepared transaction final, and when may_checkpoint (no reader
** holds positions or views) checkpoint if the log is over the limit; a
** failed automatic checkpoint is reported but the transaction stays
** committed. */
int store_commit(store *s, int may_checkpoint);
void store_rollback(store *s);

/* ---- the knowledge graph ---------------------------------------------- */

/* Three tables kept with the memories, in the same file and log and the
** same transactions (store_begin ... store_commit; store_mark/undo_to
** undo them too): entities, relations between entities, and mentions (a
** memory mentions an entity).  Each record has an int64 id (> 0, never
** reused, like a memory's).  They are held in memory whole (read when the
** store opens).  Deleting an entity or a memory leaves the relations and
** mentions that name it (a traversal ignores relations to entities that
** are gone); nothing cascades. */
enum { STORE_G_ENTITY = 0, STORE_G_RELATION = 1, STORE_G_MENTION = 2, STORE_G_NTABLES = 3 };

/* One record; which fields mean what depends on the table:
**   entity:   s[0] name, s[1] type, s[2] aliases (JSON array text), s[3] meta (JSON text)
**   relation: a src, b dst (entity ids), s[1] type, s[3] meta, weight, ts
**   mention:  a memory id, b entity id
** Strings are UTF-8, NULL when absent (n ignored); unused fields are
** ignored on input and zero / NULL on output. */
typedef struct store_grec {
  int64_t id;
  int64_t a, b;
  const char *s[4];
  size_t n[4];
  double weight;
  int64_t ts;
} store_grec;

/* Insert r into table t (r->id must be free: STORE_EEXISTS); a mention
** whose (memory, entity) pair is already there is STORE_EEXISTS too.  Its
** strings are checked as store_put's (STORE_EINVAL, "name: ..."). */
int store_g_put(store *s, int t, const store_grec *r);
int store_g_delete(store *s, int t, int64_t id);
/* Records by position (0 .. store_g_npos - 1, some dead) and by id. */
uint64_t store_g_npos(const store *s, int t);
uint64_t store_g_count(const store *s, int t); /* live records */
int store_g_find(const store *s, int t, int64_t id, uint64_t *pos);
/* The live record at pos (STORE_ENOTFOUND when dead); its strings stay
** valid until the record is deleted or the store changes files
** (checkpoint, refresh). */
int store_g_get(const store *s, int t, uint64_t pos, store_grec *r);
int64_t store_g_max_id(const store *s, int t); /* the largest id ever used (0: none) */
/* A number that changes whenever any of the three tables changes (the
** caller's caches of the graph are stale when it differs). */
uint64_t store_g_version(const store *s);
/* The adjacency of the live entities and relations for lib/graph's
** traversals, built on first use and kept until the graph changes (valid
** until then).  Relation types are coded by store_g_type_code (a NULL
** type is ""). */
int store_g_adj(store *s, const kg_adj **out);
/* The code of a relation type in the adjacency (UINT32_MAX: no live
** relation has it); the type of code c (NULL if none), as given. */
uint32_t store_g_type_code(store *s, const char *type, size_t n);
const char *store_g_type_name(store *s, uint32_t code, size_t *n);

/* ---- small changes in place (store_patch.c) ---------------------------- */

/* The columns a memory's life changes (a use, a move between tiers, a new
** importance) can be set without writing the record again: the log holds
** an op of a few dozen bytes (docs/FORMAT.md, "The log"), the new values
** are kept in memory beside the record (an overlay, read by store_get),
** and a checkpoint writes only the chunks of those columns that hold a
** changed row, copy-on-write (docs/FORMAT.md, "Changes in place").  The
** record keeps its position and its place in every index. */
enum { STORE_P_ACCESS_COUNT = 1, STORE_P_LAST_ACCESS = 2, STORE_P_IMPORTANCE = 4, STORE_P_TIER = 8 };
typedef struct store_patch {
  unsigned set;          /* STORE_P_* bits: the fields below that apply */
  int64_t access_count;
  int64_t last_access;   /* STORE_NULL_TIME: NULL */
  double importance;     /* NaN: NULL; else finite */
  const char *tier;      /* NULL: NULL; UTF-8 without NUL bytes, as store_put's */
  size_t tier_len;
} store_patch;
/* Set the fields p->set names of the live record id, in the open
** transaction (undone by store_undo_to and store_rollback as a put is).
** STORE_ENOTFOUND (no live record), STORE_EINVAL (unknown bits, an
** importance that is not finite, a tier store_put would refuse: the
** message names it). */
int store_update(store *s, int64_t id, const store_patch *p);
/* The same for the live record at position pos (STORE_ENOTFOUND: none):
** for a pass over the positions, without the id's lookup. */
int store_update_at(store *s, uint64_t pos, const store_patch *p);

/* ---- provenance (store_prov.c; docs/SQL.md, "Provenance") ---------------------- */

/* A store made with provenance: store_put fills the declared column
** `provenance` with the record's history, a JSON array of events, the
** value the record had (an UPDATE keeps it) with one event appended:
** {"op": "insert" (no history before) or "update", "by": the writer,
** "at": unix seconds, "tool", "embedder", "model" (when known), "fields":
** the columns changed (when the caller said)}.  The writer is the
** store's agent attribute unless store_prov_set names another. */
int store_has_provenance(const store *s);
/* This handle's writer and tool (NULL: the store's agent; no tool). */
int store_prov_set(store *s, const char *writer, const char *tool);
/* The next put's changed columns, a JSON array of names (NULL: none); the
** put clears it. */
int store_prov_fields(store *s, const char *fields_json);

/* ---- signed checkpoints (store_sign.c; docs/FORMAT.md, "Signed checkpoints") ---- */

/* The number of the file's last signed checkpoint: 0 when it is not
** signed (STORE_ECORRUPT and the like as negative codes). */
int64_t store_sign_seq(store *s);
/* Sign with the secret key file at path from now on (NULL: the file's
** own): the key is read now, and must be the store's if it is signed. */
int store_sign_key(store *s, const char *path);
/* The same, the key file only noted: read at the next checkpoint (a
** table connected from a schema, whose key may be elsewhere now). */
int store_sign_note(store *s, const char *path);
/* Sign now: a checkpoint that hashes every row again and signs the store
** as it is, with the key file at path (NULL: the one set or the file's). */
int store_sign_now(store *s, const char *path);
/* Verify the store file at path: its signatures, their chain, and its
** rows against the last signed root (docs/SQL.md, h5mem_verify), as JSON
** into out.  pk: the public key it must be signed with, or NULL;
** min_seq: the sequence number of a signed checkpoint the caller saw
** (an older file fails: rolled back), or 0.  tail: a handle of the store
** whose unsigned log is reported (NULL: none).  STORE_OK whatever the
** verdict; an error only when it cannot say (no file, out of memory). */
struct strbuf;
int store_verify(const char *path, const uint8_t *pk, int64_t min_seq, store *tail, struct strbuf *out,
                 char *err, size_t errlen);

/* Checkpoint now (the writer only; outside a transaction). */
int store_checkpoint(store *s);

/* An ephemeral store's clock, unix seconds: the time, unless set (a test's
** fixed time; store_set_clock(s, 0): the time again).  Records with
** expires_at <= the clock are deleted by store_refresh. */
int64_t store_clock(const store *s);
void store_set_clock(store *s, int64_t now);
int store_is_ephemeral(const store *s);
/* How many readers hold positions of s now (said before store_begin): an
** ephemeral store that fell behind the other connections reloads (and so
** renumbers) at the transaction's start only when none does. */
void store_set_held(store *s, int held);
/* Rewrite the file without dead records (a new file renamed into place),
** after a checkpoint: the file shrinks.  Outside a transaction. */
int store_optimize(store *s);

/* What names the store's state, for a program that keeps something derived
** from it beside the store (h5mem-mcp's search image): the store's id, the
** log frame its file's last checkpoint covers, whether the store is as that
** checkpoint left it (nothing in the log since, no transaction open), and
** its live records (memories, entities, relations, mentions). */
typedef struct store_state_key {
  uint8_t id[16];
  uint64_t seq;
  int checkpointed;
  uint64_t live[4];
} store_state_key;
void store_state_key_get(const store *s, store_state_key *k);

#endif
