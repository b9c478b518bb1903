/*
** ext/migrate/mig.h - h5mem_migrate's parts: what a source database is
** (mig_detect.c), how its rows are read (an SQL statement, or vec0's shadow
** tables in mig_vec0.c), and the rows as cells the driver (ext/func_migrate.c)
** turns into store records.  docs/MIGRATION.md describes every mapping.
**
** Every source is read through its own read-only connection; nothing here
** writes to it.  Every function returns an SQLite status and, on failure, a
** message in *err (sqlite3_mprintf'd; the caller frees it).
**
** The folder's one header: the types, then one section per file.  The
** driver, ext/func_migrate.c, is its one user outside the folder: it uses
** the types, mig_field_name and every function but mig_attr, mig_ident,
** mig_is_vec0, mig_vec0_vector and mig_graph_clawhdf5, which the parts use
** among themselves.
*/
#ifndef H5MEM_EXT_MIGRATE_MIG_H
#define H5MEM_EXT_MIGRATE_MIG_H

#include <stddef.h>
#include <stdint.h>

#include "ext.h"
#include "store/store.h"
#include "util/strbuf.h"

/* The store's columns a source column can feed, and four controls:
** MIG_F_SKIP (text: a reason to skip the row, e.g. "deleted", or
** "reason: detail"),
** MIG_F_TEXTPATH (text: LangGraph's field_name, the text being what
** LangGraph embedded for it from the item's JSON in the text column:
** mig_langgraph_text),
** MIG_F_SOURCE_ID (the source's own id when it is not an integer, e.g. a
** UUID: kept in meta.source_id while the rowid is the id) and MIG_F_STALE
** (text: why the row's embedding is not of its text now; LangGraph's
** vectors older than their item: written without one, or skipped as
** stale_vector when the field is gone). */
enum {
  MIG_F_ID, MIG_F_TEXT, MIG_F_EMB, MIG_F_SOURCE, MIG_F_SESSION, MIG_F_TAGS, MIG_F_TIER,
  MIG_F_TS, MIG_F_IMPORTANCE, MIG_F_META, MIG_F_SKIP, MIG_F_TEXTPATH, MIG_F_SOURCE_ID, MIG_F_STALE,
  MIG_NFIELD
};
extern const char *const mig_field_name[MIG_NFIELD];

/* How the embedding column's values are encoded. */
enum {
  MIG_ENC_AUTO,  /* BLOB: float32 or float64 LE by its length and the dim; TEXT: JSON */
  MIG_ENC_F32,   /* BLOB: float32 LE; TEXT: JSON */
  MIG_ENC_F64,   /* BLOB: float64 LE; TEXT: JSON */
  MIG_ENC_I8,    /* BLOB: int8 (sqlite-vec's int8[N]) */
  MIG_ENC_VEC0   /* float32 rows cut from sqlite-vec's vector chunks */
};

/* One value of a source row.  p points into the source's statement or
** buffers: valid until the next row. */
typedef struct mig_cell {
  int type;   /* SQLITE_NULL, _INTEGER, _FLOAT, _TEXT, _BLOB */
  int64_t i;
  double d;
  const void *p; /* TEXT / BLOB bytes */
  int n;
} mig_cell;

/* A column of the source a new store declares (store.h, "declared
** columns"): a vec0 table's metadata, partition, auxiliary, text primary
** key and further vector columns.  def is the store's declaration (its
** name the source's, or renamed where the store has a column of that
** name: src is then the source's); in_meta, set by the driver before the
** first row, sends its values into meta's JSON instead (the destination
** has no such column, or {"declared_columns": false}). */
typedef struct mig_decl {
  store_coldef def;
  char src[128];
  int in_meta;
} mig_decl;

/* A row reader.  next: SQLITE_ROW with ncol cells in cells, SQLITE_DONE,
** or an error (message in *err).  rewind: back to the first row.  Names of
** the cells are in names[0..ncol).  close frees the reader.  ndecl
** declared columns (0 for readers that have none) have their values in
** dcells[0..ndecl): integers (boolean 0 or 1), floats, text, blobs, and
** vectors as BLOBs in their element type (float32 LE, int8, bits). */
typedef struct mig_reader mig_reader;
struct mig_reader {
  int ncol;
  const char **names;
  mig_cell *cells;
  int ndecl;
  mig_decl *decl;
  mig_cell *dcells;
  int meta_has_decls; /* its meta holds the declared columns marked in_meta (else the driver adds them) */
  int (*next)(mig_reader *r, char **err);
  int (*rewind)(mig_reader *r, char **err);
  void (*close)(mig_reader *r);
};

/* A source understood: its schema, how to read it, what to tell.  Owned
** by the caller of mig_detect (mig_plan_free). */
#define MIG_MAX_ATTRS 8
#define MIG_MAX_DECL 8
typedef struct mig_plan mig_plan;
struct mig_plan {
  const char *schema;   /* "openclaw", "openclaw-legacy", "sqlite-vec", "clawhdf5",
                           "langchain", "langgraph", "generic" (static) */
  char *based_on;       /* the version of the schema the mapping follows */
  char *table;          /* the main table read */
  char *sql;            /* the SELECT reading it (NULL for vec0) */
  char *vec0;           /* the vec0 table read through its shadow tables, or NULL */
  int enc;              /* MIG_ENC_* of the embedding column */
  int dim;              /* the dimension the source declares (0: unknown) */
  int metric;           /* STORE_* the source declares, or -1 */
  int has_text;         /* rows have a text column (empty text is then skipped) */
  int ids;              /* 1: the source's own integer ids; 0: assigned ones */
  const char *ids_from; /* what the ids are (static text) */
  char *embedder;       /* for a new store (provider/model), or NULL */
  char *attrs[2 * MIG_MAX_ATTRS + 1]; /* migrated_* name, value pairs, NULL-ended */
  sqlite3_str *info;    /* JSON members (",\"key\":value...") for the report */
  sqlite3_str *notes;   /* JSON strings (",\"...\"") for the report's notes */
  /* declared columns of a new store, fed by the last ndecl columns of sql
     (mem0's UUID and scopes) */
  int ndecl;
  mig_decl decl[MIG_MAX_DECL];
  /* the graph, written after the memories (NULL: none); st NULL: a dry
     run, counted only */
  int (*graph)(sqlite3 *src, store *st, mig_plan *p, char **err);
};

/* The user's choices that detection needs. */
typedef struct mig_want {
  const char *schema;   /* forced schema, or NULL: detect */
  const char *table;    /* a table to read (generic or vec0), or NULL */
  const char *query;    /* a SELECT to read (generic), or NULL */
  const char *col[MIG_NFIELD]; /* column names given for the store's fields */
  const char *vector_column;   /* vec0 with several vector columns */
  int include_deleted;  /* clawhdf5: migrate rows marked deleted */
  int no_declared;      /* vec0: every column into meta, one vector column ({"declared_columns": false}) */
  const char *srcpath;  /* the source's path (its sibling files: mem0's) */
  const char *entities; /* mem0: the entity store's file, or NULL: beside the source */
  const char *history;  /* mem0: the history file, or NULL: beside the source */
  int immutable;        /* open those files with immutable=1 too */
} mig_want;

/* ---- interface to code in mig_detect.c ----------------------------------- */

void mig_plan_free(mig_plan *p);
/* Append a note (printf-style) to the plan's notes. */
void mig_note(mig_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Record an attribute (name must begin with migrated_); value copied. */
int mig_attr(mig_plan *p, const char *name, const char *value);

/* Look at the source (read-only connection src) and choose a plan. */
int mig_detect(sqlite3 *src, const mig_want *w, mig_plan *p, char **err);

/* A reader for the plan: its SQL, or its vec0 table. */
int mig_reader_open(sqlite3 *src, const mig_plan *p, const mig_want *w, mig_reader **out,
                    char **err);

/* A source's string s[0..n) as the store takes it: 0 and s itself when
** it is well-formed UTF-8; 1 and its copy in fix (emptied first) with each
** ill-formed sequence replaced by U+FFFD; -1 when it holds a NUL byte and
** not nul_ok (the store refuses those: the row is skipped); -2 out of
** memory.  *out, *outn: the text. */
int mig_utf8(const char *s, size_t n, int nul_ok, strbuf *fix, const char **out, size_t *outn);

/* s[0..n) (UTF-8) as a JSON string literal appended to out. */
void mig_json_str(sqlite3_str *out, const char *s, size_t n);

/* Quote s as an SQL identifier ("..."), sqlite3_mprintf'd. */
char *mig_ident(const char *s);

/* ---- interface to code in mig_vec0.c ------------------------------------- */

/* vec0 (mig_vec0.c): a reader over the shadow tables of table; fills the
** plan's dim, metric and info from its declaration, and the reader's
** declared columns (unless w->no_declared): every metadata, partition,
** auxiliary and text primary key column that no field of the store takes,
** and every vector column but the one read as the embedding. */
int mig_vec0_open(sqlite3 *src, const char *table, const mig_want *w, mig_plan *p,
                  mig_reader **out, char **err);
/* The first float or int8 vector column of vec0 table `table`, as its
** declaration gives it: its dim, metric (STORE_L2 unless declared:
** sqlite-vec's default; -1 for L1) and name (into name[0..n)).
** SQLITE_NOTFOUND when there is no such table or column, or the
** declaration cannot be read; else an error of the source. */
int mig_vec0_vector(sqlite3 *db, const char *table, int *dim, int *metric, char *name, size_t n);
/* 1 when the CREATE statement sql declares a vec0 virtual table. */
int mig_is_vec0(const char *sql);

/* ---- interface to code in mig_langgraph.c -------------------------------- */

/* The text LangGraph's SqliteStore embedded for field name field[0..fn)
** of the item value v[0..vn) (JSON): 1 with it in *out (sqlite3_malloc'd,
** *outn bytes), 0 when the value gives none (the field is not there, or
** not as LangGraph would name it now: a stale vector), -1 when v is not
** JSON, -2 out of memory. */
int mig_langgraph_text(const char *v, size_t vn, const char *field, size_t fn, char **out, size_t *outn);

/* ---- interface to code in mig_graph.c ------------------------------------ */

/* The ClawhDF5 graph (entities, relations): read and checked at
** detection; written to the store's graph (st NULL: a dry run, counted
** only) after the memories (the plan's graph). */
int mig_graph_clawhdf5(sqlite3 *src, mig_plan *p, char **err);
int mig_graph_write(sqlite3 *src, store *st, mig_plan *p, char **err);
/* mem0's entity store (attached to src as mem0_entities): each entity an
** entity of the store's graph, each of its linkedMemoryIds a mention of
** it by that memory (the plan's graph). */
int mig_graph_mem0(sqlite3 *src, store *st, mig_plan *p, char **err);

/* "file:PATH?mode=ro[&immutable=1]" for sqlite3_open_v2 or ATTACH
** (sqlite3_malloc'd; NULL out of memory). */
char *mig_ro_uri(const char *path, int immutable);

#endif
