/*
** ext/vtab/vtab_h5.c - the h5 virtual table: one HDF5 dataset as a SQL
** table, read and appended to.
**
**   CREATE VIRTUAL TABLE t USING h5(file='x.h5', dataset='/grp/ds'
**       [, row=vector|json] [, mode=rw|ro]
**       [, schema='id int64, score float32, name text, emb float32[384]',
**          chunk=ROWS, compression=none|deflate[:N]|zstd[:N]|blosc[:C][:N], shuffle=0|1|2,
**          sync=full|off]);
**
** One row per index of the dataset's first dimension: the index column i
** (also the rowid), then the data: `value` for a scalar or 1-D dataset of
** a non-compound type, one column per field of a compound, for 2-D
** numeric data the row as a float32 BLOB (row=json: a JSON array), for
** anything else the row as JSON.  Compound fields that are 1-D numeric
** arrays are float32 BLOBs too.
**
** Reading: constraints on i (=, IN, <, <=, >, >=, BETWEEN) and LIMIT /
** OFFSET become the range of rows read; rows are decoded a block at a time
** when a column is asked for (count(*) decodes nothing), and a block of a
** chunked dataset is whole chunks, so only the chunks the range touches are
** read.  Each query sees the file as it is when the query starts (the file
** is reopened when it changed on disk).
**
** Writing: INSERT appends rows to a chunked dataset whose first dimension
** is unlimited.  Rows are kept in memory until COMMIT (savepoints and
** ROLLBACK are exact), then appended and flushed with lib/h5's writer, the
** superblock written last: a crash leaves the file as of the last commit.
** A transaction of more than H5VT_SPILL bytes writes rows early (still
** invisible until COMMIT).  With schema= the file and dataset are created
** when missing (a compound dataset of the schema's fields; a single field
** named `value` makes a plain dataset, 2-D for an array type).  UPDATE and
** DELETE are errors: HDF5 datasets are append-only here.  DROP TABLE never
** deletes the file.
**
** The table touches the file system, so it is SQLITE_VTAB_DIRECTONLY: no
** use from triggers or views.  Files are opened read-only except while a
** transaction commits rows; a second writer of the same file (process or
** connection) gets SQLITE_BUSY.
**
** The options and schema= (parsing, types, creating the dataset) are in
** vtab_h5_schema.c, SQL values into HDF5 elements (INSERT) in
** vtab_h5_value.c; vtab_int.h declares what the three share.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ext_err.h"
#include "../h5sql.h"
#include "k.h"
#include "util/utf8.h"
#include "vtab_int.h"

/* The prefix of the table's messages. */
#define WHO "h5"

#define H5VT_BLOCK (4u << 20)    /* bytes decoded per block when scanning */
#define H5VT_MAXBLOCK (64u << 20)/* at most this much for one block */
#define H5VT_SPILL (64u << 20)   /* rows kept in memory per transaction */
#define H5VT_MAXSP 64            /* savepoint levels tracked */

enum { CK_ELEM, CK_VEC, CK_JSON };

/* One data column: how to make a SQL value of the bytes of a row. */
typedef struct h5col {
  char *name;
  int kind;
  const h5_type *type; /* CK_ELEM: the element; CK_VEC, CK_JSON: per element */
  uint32_t offset;     /* bytes into the row */
  int rank;            /* CK_VEC: 1; CK_JSON: rank of the sub-array */
  uint64_t dims[H5_MAX_RANK];
  uint64_t n;          /* elements (CK_VEC, CK_JSON) */
} h5col;

/* The columns of a dataset, and the CREATE TABLE declaring them. */
typedef struct h5cols {
  int ncols;
  h5col *cols;
  char *decl; /* CREATE TABLE x(...) */
  char *sig;  /* decl and the layout, to notice a changed dataset */
} h5cols;

/* The file as one query sees it; cursors hold a reference. */
typedef struct h5snap {
  int refs;
  h5_file *f;
  h5_obj *d;
  h5_dset_info info;
  struct stat st;
  uint64_t nrows;
  size_t rowbytes;
  const uint8_t *view; /* contiguous and unfiltered: the mapped bytes */
  h5cols c;            /* the columns, pointing at types of f */
} h5snap;

typedef struct h5vt {
  sqlite3_vtab base;
  sqlite3 *db;
  char *file, *dset;
  int row_json, readonly, sync;
  char *sig; /* the columns when declared (h5cols.sig) */
  h5snap *snap;
  /* the dataset's element type and shape as last seen, for writing */
  int rank;
  uint64_t rowdims[H5_MAX_RANK]; /* dims[1..rank) */
  size_t rowbytes;
  /* writing: rows of this transaction, as stored (vlen strings as pointers) */
  uint8_t *buf;
  uint64_t nbuf, capbuf;
  uint64_t nspilled; /* rows already handed to the writer */
  uint64_t sp[H5VT_MAXSP];
  int doomed;
  char *doom_msg;
  h5w *w;
  h5w_obj *wd;
  int lockfd;
} h5vt;

typedef struct h5cur {
  sqlite3_vtab_cursor base;
  h5snap *snap;
  uint64_t i, end;
  const uint8_t *blk; /* rows [b0, b0 + bn) */
  uint8_t *owned;
  uint64_t b0, bn;
} h5cur;

static int vt_err(h5vt *vt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int vt_err(h5vt *vt, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = ext_vtab_verr(&vt->base, SQLITE_ERROR, WHO, fmt, ap);
  va_end(ap);
  return rc;
}

/* A failure of lib/h5 with code hr: its SQLite code (ext_err_rc), the
** message fmt's (none when out of memory). */
static int vt_fail(h5vt *vt, int hr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int vt_fail(h5vt *vt, int hr, const char *fmt, ...) {
  if (hr == H5_ENOMEM) return SQLITE_NOMEM;
  va_list ap;
  va_start(ap, fmt);
  int rc = ext_vtab_verr(&vt->base, ext_err_rc(hr), WHO, fmt, ap);
  va_end(ap);
  return rc;
}

/* ---- types --------------------------------------------------------- */

int h5vt_is_numeric(const h5_type *t) {
  return t->cls == H5_CLASS_INTEGER || t->cls == H5_CLASS_FLOAT;
}

static const char *decl_type(const h5_type *t) {
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_ENUM:
  case H5_CLASS_BITFIELD: return "INTEGER";
  case H5_CLASS_FLOAT: return "REAL";
  case H5_CLASS_STRING: return "TEXT";
  case H5_CLASS_VLEN: return t->vlen_kind == 1 ? "TEXT" : "";
  case H5_CLASS_OPAQUE: return "BLOB";
  default: return "";
  }
}

static void free_columns(h5cols *c);

static void snap_unref(h5snap *s) {
  if (!s || --s->refs > 0) return;
  free_columns(&s->c);
  h5_close(s->f);
  sqlite3_free(s);
}

static int make_columns(int row_json, const h5_dset_info *in, h5cols *out);

/* Open the file and dataset as they are now. */
static int snap_open(h5vt *vt, h5snap **out) {
  *out = NULL;
  h5snap *s = sqlite3_malloc(sizeof *s);
  if (!s) return SQLITE_NOMEM;
  memset(s, 0, sizeof *s);
  s->refs = 1;
  if (stat(vt->file, &s->st) != 0) {
    sqlite3_free(s);
    return vt_err(vt, "cannot open '%s': %s", vt->file, strerror(errno));
  }
  char *msg = NULL;
  int rc = h5sql_open(WHO, vt->file, &s->f, &msg);
  if (rc != SQLITE_OK) {
    sqlite3_free(s);
    sqlite3_free(vt->base.zErrMsg);
    vt->base.zErrMsg = msg;
    return rc;
  }
  int hr = h5_obj_open_path(s->f, vt->dset, &s->d);
  if (hr == H5_OK && h5_obj_kind(s->d) != H5_KIND_DATASET) {
    rc = vt_err(vt, "'%s' in '%s' is not a dataset", vt->dset, vt->file);
  } else if (hr != H5_OK) {
    rc = vt_fail(vt, hr, "%s", h5_errmsg(s->f));
  } else if ((hr = h5_dset_info_get(s->d, &s->info)) != H5_OK) {
    rc = vt_fail(vt, hr, "%s", h5_errmsg(s->f));
  } else if ((hr = h5_dset_check(s->d)) != H5_OK) {
    /* refused here, not at the first row read: count(*) reads no row */
    rc = vt_fail(vt, hr, "'%s': %s", vt->dset, h5_errmsg(s->f));
  }
  if (rc != SQLITE_OK) {
    h5_close(s->f);
    sqlite3_free(s);
    return rc;
  }
  const h5_dset_info *in = &s->info;
  s->nrows = in->rank < 0 ? 0 : in->rank == 0 ? 1 : in->dims[0];
  uint64_t rb = in->type->size;
  for (int k = 1; k < in->rank; k++) {
    if (in->dims[k] && rb > SIZE_MAX / 4 / in->dims[k]) {
      h5_close(s->f);
      sqlite3_free(s);
      return vt_err(vt, "rows of '%s' are too large", vt->dset);
    }
    rb *= in->dims[k];
  }
  s->rowbytes = (size_t)rb;
  const void *v;
  size_t vlen;
  if (in->rank >= 1 && h5_dset_view(s->d, &v, &vlen) == H5_OK && s->rowbytes &&
      vlen / s->rowbytes >= s->nrows)
    s->view = v;
  int rc2 = make_columns(vt->row_json, in, &s->c);
  if (rc2 != SQLITE_OK) {
    snap_unref(s);
    return rc2;
  }
  *out = s;
  return SQLITE_OK;
}

/* The columns of a dataset from its type and shape. */
static int make_columns(int row_json, const h5_dset_info *in, h5cols *out) {
  const h5_type *t = in->type;
  int rank = in->rank < 0 ? 1 : in->rank;
  int ncols = 1;
  if (rank <= 1 && t->cls == H5_CLASS_COMPOUND) ncols += (int)t->nmembers;
  else ncols += 1;
  h5col *cols = sqlite3_malloc64(sizeof *cols * (size_t)ncols);
  if (!cols) return SQLITE_NOMEM;
  memset(cols, 0, sizeof *cols * (size_t)ncols);
  cols[0].name = sqlite3_mprintf("i");
  if (rank <= 1 && t->cls == H5_CLASS_COMPOUND) {
    for (uint32_t m = 0; m < t->nmembers; m++) {
      h5col *c = &cols[m + 1];
      const h5_type *mt = t->members[m].type;
      c->name = sqlite3_mprintf("%s", t->members[m].name);
      c->offset = t->members[m].offset;
      c->type = mt;
      c->kind = CK_ELEM;
      if (mt->cls == H5_CLASS_ARRAY && mt->base && mt->rank == 1 && h5vt_is_numeric(mt->base) &&
          !row_json) {
        c->kind = CK_VEC;
        c->type = mt->base;
        c->rank = 1;
        c->dims[0] = c->n = mt->dims[0];
      }
    }
    /* a field called i: the index becomes _i (__i if that is a field too, ...) */
    for (int taken = 1; taken && cols[0].name;) {
      taken = 0;
      for (int k = 1; k < ncols && !taken; k++)
        taken = cols[k].name && sqlite3_stricmp(cols[k].name, cols[0].name) == 0;
      if (taken) {
        char *n = sqlite3_mprintf("_%s", cols[0].name);
        sqlite3_free(cols[0].name);
        cols[0].name = n;
      }
    }
  } else {
    h5col *c = &cols[1];
    c->name = sqlite3_mprintf("value");
    c->type = t;
    if (rank <= 1) {
      c->kind = CK_ELEM;
    } else {
      c->rank = rank - 1;
      c->n = 1;
      for (int k = 1; k < rank; k++) {
        c->dims[k - 1] = in->dims[k];
        c->n *= in->dims[k];
      }
      c->kind = rank == 2 && h5vt_is_numeric(t) && !row_json ? CK_VEC : CK_JSON;
    }
  }
  for (int k = 0; k < ncols; k++)
    if (!cols[k].name) goto oom;
  /* the declaration and the signature */
  strbuf d = {0};
  strbuf_puts(&d, "CREATE TABLE x(");
  for (int k = 0; k < ncols; k++) {
    char *q = sqlite3_mprintf("%w", cols[k].name);
    if (!q) {
      strbuf_free(&d);
      goto oom;
    }
    strbuf_printf(&d, "%s\"%s\" %s", k ? ", " : "", q,
                  k == 0 ? "INTEGER"
                  : cols[k].kind == CK_VEC ? "BLOB"
                  : cols[k].kind == CK_JSON ? "TEXT"
                                            : decl_type(cols[k].type));
    sqlite3_free(q);
  }
  strbuf_puts(&d, ")");
  strbuf g = {0};
  strbuf_puts(&g, d.buf ? d.buf : "");
  for (int k = 1; k < ncols; k++)
    strbuf_printf(&g, " %d:%u:%d:%llu", cols[k].kind, (unsigned)cols[k].offset,
                  cols[k].rank, (unsigned long long)cols[k].n);
  if (strbuf_failed(&d) || strbuf_failed(&g)) {
    strbuf_free(&d);
    strbuf_free(&g);
    goto oom;
  }
  out->cols = cols;
  out->ncols = ncols;
  out->decl = d.buf;
  out->sig = g.buf;
  return SQLITE_OK;
oom:
  for (int k = 0; k < ncols; k++) sqlite3_free(cols[k].name);
  sqlite3_free(cols);
  return SQLITE_NOMEM;
}

static void free_columns(h5cols *c) {
  for (int k = 0; k < c->ncols; k++) sqlite3_free(c->cols[k].name);
  sqlite3_free(c->cols);
  free(c->sig);
  free(c->decl);
  memset(c, 0, sizeof *c);
}

/* Point vt->snap at the file as it is now, reopening it when it changed
** on disk; the columns must stay the same. */
static int refresh(h5vt *vt) {
  struct stat st;
  if (stat(vt->file, &st) != 0) return vt_err(vt, "cannot open '%s': %s", vt->file, strerror(errno));
  if (vt->snap && h5sql_same_file(&vt->snap->st, &st)) return SQLITE_OK;
  h5snap *s;
  int rc = snap_open(vt, &s);
  if (rc != SQLITE_OK) return rc;
  if (strcmp(s->c.sig, vt->sig) != 0) {
    snap_unref(s);
    return vt_err(vt, "the type or shape of '%s' in '%s' changed since the table was "
                  "declared; drop and create the table again", vt->dset, vt->file);
  }
  snap_unref(vt->snap);
  vt->snap = s;
  vt->rank = s->info.rank;
  for (int k = 1; k < s->info.rank; k++) vt->rowdims[k] = s->info.dims[k];
  vt->rowbytes = s->rowbytes;
  return SQLITE_OK;
}

/* ---- the writer's lock ------------------------------------------- */

/* Take the writer's lock on path: an fd holding flock(LOCK_EX), or -1 and
** SQLITE_BUSY when another connection or process holds it. */
int h5vt_lock_file(const char *path, int *fd, char **msg) {
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    *msg = sqlite3_mprintf("cannot open '%s': %s", path, strerror(errno));
    return SQLITE_ERROR;
  }
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return SQLITE_OK;
  int e = errno;
  close(*fd);
  *fd = -1;
  if (e == EWOULDBLOCK) {
    *msg = sqlite3_mprintf("'%s' is being written by another connection or process", path);
    return SQLITE_BUSY;
  }
  *msg = sqlite3_mprintf("cannot lock '%s': %s", path, strerror(e));
  return SQLITE_ERROR;
}

/* ---- connect / create ---------------------------------------------- */

static int h5vt_disconnect(sqlite3_vtab *base);

static int connect_common(sqlite3 *db, int argc, const char *const *argv, sqlite3_vtab **out,
                          char **pzErr, int creating) {
  h5opts o;
  int rc = h5vt_parse_opts(argc, argv, &o, pzErr);
  if (rc != SQLITE_OK) {
    h5vt_opts_free(&o);
    return rc;
  }
  int readonly = o.mode && sqlite3_stricmp(o.mode, "ro") == 0;
  if (creating && o.schema) {
    /* create the file or the dataset when missing; else check the schema */
    h5_file *f = NULL;
    h5_obj *d = NULL;
    struct stat st;
    int have_file = stat(o.file, &st) == 0, have_dset = 0;
    if (have_file) {
      char err[512];
      int hr = h5_open(o.file, &f, err, sizeof err);
      if (hr != H5_OK) {
        *pzErr = sqlite3_mprintf("%s: cannot open '%s': %s", WHO, o.file, err);
        h5vt_opts_free(&o);
        return ext_err_rc(hr);
      }
      hr = h5_obj_open_path(f, o.dset, &d);
      have_dset = hr == H5_OK;
      if (have_dset) {
        h5_type *want;
        int rank;
        uint64_t nc;
        h5_dset_info in;
        rc = h5vt_parse_schema(o.schema, &want, &rank, &nc, pzErr);
        if (rc == SQLITE_OK && (h5_obj_kind(d) != H5_KIND_DATASET || h5_dset_info_get(d, &in) != H5_OK)) {
          *pzErr = sqlite3_mprintf("%s: '%s' in '%s' is not a dataset", WHO, o.dset, o.file);
          rc = SQLITE_ERROR;
        } else if (rc == SQLITE_OK &&
                   (!h5vt_same_type(want, in.type) || in.rank != rank || (rank == 2 && in.dims[1] != nc))) {
          char *a = h5vt_type_text(want), *b = h5vt_type_text(in.type);
          *pzErr = sqlite3_mprintf("%s: schema='%s' (%s, rank %d) does not match the existing "
                                   "dataset '%s' (%s, rank %d)", WHO, o.schema, a ? a : "?", rank,
                                   o.dset, b ? b : "?", in.rank);
          sqlite3_free(a);
          sqlite3_free(b);
          rc = SQLITE_ERROR;
        }
        h5_type_free(want);
      } else if (hr != H5_ENOTFOUND) {
        *pzErr = sqlite3_mprintf("%s: %s", WHO, h5_errmsg(f));
        rc = ext_err_rc(hr);
      }
      h5_close(f);
    }
    if (rc == SQLITE_OK && !have_dset) {
      if (readonly) {
        *pzErr = sqlite3_mprintf("%s: mode=ro, and '%s' has no dataset '%s' to read", WHO, o.file, o.dset);
        rc = SQLITE_ERROR;
      } else {
        rc = h5vt_create_dataset(&o, pzErr);
      }
    }
    if (rc != SQLITE_OK) {
      h5vt_opts_free(&o);
      return rc;
    }
  }
  h5vt *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) {
    h5vt_opts_free(&o);
    return SQLITE_NOMEM;
  }
  memset(vt, 0, sizeof *vt);
  vt->db = db;
  vt->lockfd = -1;
  vt->file = o.file;
  vt->dset = o.dset;
  o.file = o.dset = NULL;
  vt->row_json = o.row && sqlite3_stricmp(o.row, "json") == 0;
  vt->readonly = readonly;
  vt->sync = !o.sync || sqlite3_stricmp(o.sync, "off") != 0;
  int had_schema = o.schema != NULL;
  h5vt_opts_free(&o);
  h5snap *s;
  rc = snap_open(vt, &s);
  if (rc != SQLITE_OK) {
    struct stat st;
    int missing = stat(vt->file, &st) != 0 && errno == ENOENT;
    *pzErr = sqlite3_mprintf("%s%s", vt->base.zErrMsg ? vt->base.zErrMsg : "h5: cannot open",
                             !had_schema && missing ? " (give schema= to create it)" : "");
    h5vt_disconnect(&vt->base);
    return rc;
  }
  vt->sig = strdup(s->c.sig);
  rc = vt->sig ? SQLITE_OK : SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    vt->snap = s;
    vt->rank = s->info.rank;
    for (int k = 1; k < s->info.rank; k++) vt->rowdims[k] = s->info.dims[k];
    vt->rowbytes = s->rowbytes;
    rc = sqlite3_declare_vtab(db, s->c.decl);
    if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("%s: cannot declare columns: %s", WHO, sqlite3_errmsg(db));
  } else {
    snap_unref(s);
  }
  if (rc != SQLITE_OK) {
    h5vt_disconnect(&vt->base);
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *out = &vt->base;
  return SQLITE_OK;
}

static int h5vt_create(sqlite3 *db, void *aux, int argc, const char *const *argv,
                     sqlite3_vtab **out, char **pzErr) {
  (void)aux;
  return connect_common(db, argc, argv, out, pzErr, 1);
}

static int h5vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **pzErr) {
  (void)aux;
  return connect_common(db, argc, argv, out, pzErr, 0);
}

static void buf_truncate(h5vt *vt, uint64_t n);
static void writer_drop(h5vt *vt);

static int h5vt_disconnect(sqlite3_vtab *base) {
  h5vt *vt = (h5vt *)base;
  buf_truncate(vt, 0);
  sqlite3_free(vt->buf);
  writer_drop(vt);
  snap_unref(vt->snap);
  free(vt->sig);
  sqlite3_free(vt->file);
  sqlite3_free(vt->dset);
  sqlite3_free(vt->doom_msg);
  sqlite3_free(vt->base.zErrMsg);
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* ---- planning ------------------------------------------------------ */

#ifndef SQLITE_INDEX_CONSTRAINT_LIMIT
#define SQLITE_INDEX_CONSTRAINT_LIMIT 73
#define SQLITE_INDEX_CONSTRAINT_OFFSET 74
#endif

/* idxNum bits: which arguments xFilter gets, in this order. */
enum { P_EQ = 1, P_LO = 2, P_LO_GT = 4, P_HI = 8, P_HI_LT = 16, P_LIMIT = 32, P_OFFSET = 64 };

static int h5vt_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  h5vt *vt = (h5vt *)base;
  int eq = -1, lo = -1, hi = -1, lim = -1, off = -1, other = 0;
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT || c->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (!c->usable) continue;
      if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT) lim = k;
      else off = k;
      continue;
    }
    if (!c->usable || (c->iColumn != 0 && c->iColumn != -1)) {
      other = 1;
      continue;
    }
    switch (c->op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      if (eq < 0) eq = k; else other = 1;
      break;
    case SQLITE_INDEX_CONSTRAINT_GT:
    case SQLITE_INDEX_CONSTRAINT_GE:
      if (lo < 0) lo = k; else other = 1;
      break;
    case SQLITE_INDEX_CONSTRAINT_LT:
    case SQLITE_INDEX_CONSTRAINT_LE:
      if (hi < 0) hi = k; else other = 1;
      break;
    default: other = 1;
    }
  }
  int plan = 0, argi = 0;
  double rows = vt->snap ? (double)vt->snap->nrows : 1e6;
  if (eq >= 0) {
    plan |= P_EQ;
    info->aConstraintUsage[eq].argvIndex = ++argi;
    info->aConstraintUsage[eq].omit = 1;
    rows = 1;
    info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  }
  if (lo >= 0) {
    plan |= P_LO | (info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GT ? P_LO_GT : 0);
    info->aConstraintUsage[lo].argvIndex = ++argi;
    info->aConstraintUsage[lo].omit = 1;
    rows = rows / 4 + 1;
  }
  if (hi >= 0) {
    plan |= P_HI | (info->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LT ? P_HI_LT : 0);
    info->aConstraintUsage[hi].argvIndex = ++argi;
    info->aConstraintUsage[hi].omit = 1;
    rows = rows / 4 + 1;
  }
  int ordered = 0;
  if (info->nOrderBy == 1 && (info->aOrderBy[0].iColumn == 0 || info->aOrderBy[0].iColumn == -1) &&
      !info->aOrderBy[0].desc) {
    info->orderByConsumed = 1;
    ordered = 1;
  }
  /* LIMIT and OFFSET count rows after every other condition: take them
  ** only when no other condition is left for SQLite to check, no IN list
  ** repeats the scan, and the order is ours. */
  if (!other && eq < 0 && (info->nOrderBy == 0 || ordered)) {
    if (lim >= 0) {
      plan |= P_LIMIT;
      info->aConstraintUsage[lim].argvIndex = ++argi;
      info->aConstraintUsage[lim].omit = 1;
    }
    if (off >= 0) {
      plan |= P_OFFSET;
      info->aConstraintUsage[off].argvIndex = ++argi;
      info->aConstraintUsage[off].omit = 1;
    }
  }
  info->idxNum = plan;
  info->estimatedRows = (sqlite3_int64)rows;
  info->estimatedCost = rows + 10;
  return SQLITE_OK;
}

/* ---- reading ------------------------------------------------------- */

static int h5vt_open_cursor(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  h5cur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  (void)base;
  *out = &c->base;
  return SQLITE_OK;
}

static void cur_reset(h5cur *c) {
  free(c->owned);
  c->owned = NULL;
  c->blk = NULL;
  c->bn = 0;
  snap_unref(c->snap);
  c->snap = NULL;
}

static int h5vt_close_cursor(sqlite3_vtab_cursor *cur) {
  cur_reset((h5cur *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* A bound from a constraint's value: the first (lower) or one past the last
** (upper) row index it allows, as SQLite compares an INTEGER with it.
** Returns 0 when no row can match. */
static int value_bound(sqlite3_value *v, int upper, int strict, uint64_t n, uint64_t *out) {
  int t = sqlite3_value_numeric_type(v);
  if (t == SQLITE_NULL) return 0;
  if (t == SQLITE_TEXT || t == SQLITE_BLOB) { /* integers sort before text and blobs */
    if (!upper) return 0;
    *out = n;
    return 1;
  }
  double d = sqlite3_value_double(v);
  int64_t x = sqlite3_value_int64(v);
  if (t == SQLITE_FLOAT) {
    if (isnan(d)) return 0;
    if (d >= 9.2e18) d = 9.2e18;
    if (d <= -9.2e18) d = -9.2e18;
    /* lower: first integer >= d (> d if strict); upper: first integer
    ** above the allowed ones */
    if (!upper) x = (int64_t)(strict ? floor(d) + 1 : ceil(d));
    else x = (int64_t)(strict ? ceil(d) : floor(d) + 1);
  } else if (!upper) {
    if (strict) {
      if (x == INT64_MAX) return 0;
      x++;
    }
  } else if (!strict) {
    if (x == INT64_MAX) { *out = n; return 1; }
    x++;
  }
  if (x < 0) x = 0;
  *out = (uint64_t)x < n ? (uint64_t)x : n;
  return 1;
}

static int h5vt_filter(sqlite3_vtab_cursor *cur, int plan, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxStr;
  h5cur *c = (h5cur *)cur;
  h5vt *vt = (h5vt *)cur->pVtab;
  cur_reset(c);
  int rc = refresh(vt);
  if (rc != SQLITE_OK) return rc;
  c->snap = vt->snap;
  c->snap->refs++;
  uint64_t n = c->snap->nrows, lo = 0, hi = n;
  int a = 0, empty = 0;
  if (plan & P_EQ && a < argc) {
    sqlite3_value *v = argv[a++];
    int t = sqlite3_value_numeric_type(v);
    if (t == SQLITE_INTEGER && sqlite3_value_int64(v) >= 0) {
      lo = (uint64_t)sqlite3_value_int64(v);
      hi = lo < n ? lo + 1 : lo;
    } else if (t == SQLITE_FLOAT && sqlite3_value_double(v) >= 0 &&
               sqlite3_value_double(v) < 9.2e18 &&
               floor(sqlite3_value_double(v)) == sqlite3_value_double(v)) {
      lo = (uint64_t)sqlite3_value_double(v);
      hi = lo < n ? lo + 1 : lo;
    } else {
      empty = 1;
    }
  }
  if (plan & P_LO && a < argc) {
    uint64_t b;
    if (!value_bound(argv[a++], 0, (plan & P_LO_GT) != 0, n, &b)) empty = 1;
    else if (b > lo) lo = b;
  }
  if (plan & P_HI && a < argc) {
    uint64_t b;
    if (!value_bound(argv[a++], 1, (plan & P_HI_LT) != 0, n, &b)) empty = 1;
    else if (b < hi) hi = b;
  }
  int64_t limit = -1, offset = 0;
  if (plan & P_LIMIT && a < argc) limit = sqlite3_value_int64(argv[a++]);
  if (plan & P_OFFSET && a < argc) offset = sqlite3_value_int64(argv[a++]);
  if (offset > 0) lo = (uint64_t)offset > hi - (lo < hi ? lo : hi) ? hi : lo + (uint64_t)offset;
  if (limit >= 0 && lo < hi && (uint64_t)limit < hi - lo) hi = lo + (uint64_t)limit;
  if (empty || lo > hi) lo = hi;
  c->i = lo;
  c->end = hi;
  return SQLITE_OK;
}

static int h5vt_next(sqlite3_vtab_cursor *cur) {
  ((h5cur *)cur)->i++;
  return SQLITE_OK;
}

static int h5vt_eof(sqlite3_vtab_cursor *cur) {
  h5cur *c = (h5cur *)cur;
  return c->i >= c->end;
}

static int h5vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((h5cur *)cur)->i;
  return SQLITE_OK;
}

/* Make the bytes of row c->i available at *row: H5_OK, or lib/h5's code
** with the message in *msg (sqlite3_mprintf'd; none when out of memory). */
static int row_bytes(h5cur *c, const uint8_t **row, char **msg) {
  h5snap *s = c->snap;
  size_t rb = s->rowbytes;
  if (s->view) {
    *row = s->view + c->i * rb;
    return H5_OK;
  }
  if (c->blk && c->i >= c->b0 && c->i < c->b0 + c->bn) {
    *row = c->blk + (c->i - c->b0) * rb;
    return H5_OK;
  }
  free(c->owned);
  c->owned = NULL;
  c->blk = NULL;
  c->bn = 0;
  const h5_dset_info *in = &s->info;
  if (in->rank == 0) { /* a scalar */
    c->owned = malloc(rb ? rb : 1);
    if (!c->owned) return H5_ENOMEM;
    int hr = h5_dset_read(s->d, c->owned, rb);
    if (hr != H5_OK) {
      *msg = hr == H5_ENOMEM ? NULL : sqlite3_mprintf("%s: %s", WHO, h5_errmsg(s->f));
      return hr;
    }
    c->blk = c->owned;
    c->b0 = 0;
    c->bn = 1;
    *row = c->blk;
    return H5_OK;
  }
  /* whole chunks when chunked, as many as fit in H5VT_BLOCK bytes, but not
  ** past the end of the scan; else H5VT_BLOCK bytes of rows */
  uint64_t per = rb ? H5VT_BLOCK / rb : c->end - c->i;
  if (per < 1) per = 1;
  uint64_t b0 = c->i, b1;
  if (in->layout == H5_LAYOUT_CHUNKED && in->chunk[0] > 0) {
    uint64_t ch = in->chunk[0];
    b0 = c->i - c->i % ch;
    uint64_t nch = per / ch ? per / ch : 1;
    if (ch * rb > H5VT_MAXBLOCK) { /* huge chunks: parts of one */
      b0 = c->i;
      nch = 0;
      b1 = b0 + (rb ? H5VT_MAXBLOCK / rb : 1);
    } else {
      b1 = b0 + nch * ch;
      uint64_t endc = c->end + (ch - c->end % ch) % ch; /* the scan's last chunk's end */
      if (b1 > endc) b1 = endc;
    }
    (void)nch;
  } else {
    b1 = b0 + per;
    if (b1 > c->end) b1 = c->end;
  }
  if (b1 > s->nrows) b1 = s->nrows;
  if (b1 <= c->i) b1 = c->i + 1;
  uint64_t nr = b1 - b0;
  size_t bytes = (size_t)(nr * rb);
  c->owned = malloc(bytes ? bytes : 1);
  if (!c->owned) return H5_ENOMEM;
  uint64_t start[H5_MAX_RANK] = {0}, count[H5_MAX_RANK];
  start[0] = b0;
  count[0] = nr;
  for (int k = 1; k < in->rank; k++) count[k] = in->dims[k];
  int hr = h5_dset_read_slab(s->d, start, count, NULL, c->owned, bytes);
  if (hr != H5_OK) {
    *msg = hr == H5_ENOMEM ? NULL : sqlite3_mprintf("%s: %s", WHO, h5_errmsg(s->f));
    free(c->owned);
    c->owned = NULL;
    return hr;
  }
  c->blk = c->owned;
  c->b0 = b0;
  c->bn = nr;
  *row = c->blk + (c->i - b0) * rb;
  return H5_OK;
}

static void result_vec(sqlite3_context *ctx, const h5_type *t, const uint8_t *p, uint64_t n) {
  static const uint16_t one = 1;
  int le_host = *(const uint8_t *)&one == 1;
  if (t->cls == H5_CLASS_FLOAT && t->size == 4 && (!t->big_endian) == le_host && t->precision == 32) {
    sqlite3_result_blob64(ctx, p, n * 4, SQLITE_TRANSIENT);
  } else {
    float *v = sqlite3_malloc64(n * 4 + 1);
    if (!v) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    if (t->cls == H5_CLASS_FLOAT && t->size == 2 && !t->big_endian && le_host) {
      k_get()->f16_to_f32((const uint16_t *)(const void *)p, v, (size_t)n);
    } else {
      for (uint64_t k = 0; k < n; k++) {
        double d = 0;
        h5_elem_double(t, p + k * t->size, &d);
        v[k] = (float)d;
      }
    }
    sqlite3_result_blob64(ctx, v, n * 4, sqlite3_free);
  }
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_F32);
}

static int h5vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  h5cur *c = (h5cur *)cur;
  if (col == 0) {
    sqlite3_result_int64(ctx, (sqlite3_int64)c->i);
    return SQLITE_OK;
  }
  if (!c->snap || col < 0 || col >= c->snap->c.ncols) return SQLITE_OK;
  char *msg = NULL;
  const uint8_t *row = NULL;
  int hr = row_bytes(c, &row, &msg);
  if (hr != H5_OK) { /* the read's code, not SQLITE_ERROR: SQLITE_CORRUPT for a damaged file */
    ext_result_err(ctx, hr, msg);
    sqlite3_free(msg);
    return ext_err_rc(hr);
  }
  const h5col *k = &c->snap->c.cols[col];
  switch (k->kind) {
  case CK_ELEM: h5sql_result_elem(ctx, WHO, c->snap->f, k->type, row + k->offset); break;
  case CK_VEC: result_vec(ctx, k->type, row + k->offset, k->n); break;
  default: h5sql_result_values(ctx, WHO, c->snap->f, k->type, row + k->offset, k->rank, k->dims);
  }
  return SQLITE_OK;
}

/* ---- writing ------------------------------------------------------- */

/* Free the strings of rows [n, nbuf) and drop those rows. */
static void buf_truncate(h5vt *vt, uint64_t n) {
  if (vt->buf && vt->snap) {
    const h5_type *t = vt->snap->info.type;
    size_t per = t->size, rb = vt->rowbytes;
    for (uint64_t r = n; r < vt->nbuf; r++)
      for (size_t o = 0; o + per <= rb; o += per) h5vt_free_strings(t, vt->buf + r * rb + o);
  }
  if (n < vt->nbuf) vt->nbuf = n;
}

static void unlock(h5vt *vt) {
  if (vt->lockfd >= 0) {
    flock(vt->lockfd, LOCK_UN);
    close(vt->lockfd);
    vt->lockfd = -1;
  }
}

/* Forget the writer (its unflushed work is garbage past the file's end of
** allocation) and the lock. */
static void writer_drop(h5vt *vt) {
  h5w_free(vt->w);
  vt->w = NULL;
  vt->wd = NULL;
  unlock(vt);
}

/* Lock the file and open it for appending to the dataset. */
static int writer_open(h5vt *vt) {
  if (vt->w) return SQLITE_OK;
  char *msg = NULL;
  int lrc = h5vt_lock_file(vt->file, &vt->lockfd, &msg);
  if (lrc != SQLITE_OK) return ext_vtab_msg(&vt->base, lrc, WHO, &msg);
  char err[512] = "";
  int hr = h5w_open(vt->file, 1, &vt->w, err, sizeof err);
  if (hr != H5_OK) {
    vt->w = NULL;
    unlock(vt);
    return vt_fail(vt, hr, "cannot append to '%s': %s", vt->file, err);
  }
  hr = h5w_lookup(vt->w, vt->dset, &vt->wd);
  h5w_info wi;
  if (hr == H5_OK) hr = h5w_obj_info(vt->wd, &wi);
  int rc = SQLITE_OK;
  if (hr != H5_OK) {
    rc = vt_fail(vt, hr, "cannot append to '%s' in '%s': %s", vt->dset, vt->file, h5w_errmsg(vt->w));
  } else if (wi.is_group || wi.rank != (vt->rank < 1 ? 1 : vt->rank) || vt->rank < 1) {
    rc = vt_err(vt, "'%s' in '%s' changed or cannot grow", vt->dset, vt->file);
  } else {
    for (int k = 1; k < wi.rank; k++)
      if (wi.dims[k] != vt->rowdims[k]) rc = vt_err(vt, "the shape of '%s' in '%s' changed", vt->dset, vt->file);
    if (rc == SQLITE_OK && (wi.layout != H5_LAYOUT_CHUNKED || wi.maxdims[0] <= wi.dims[0]))
      rc = vt_err(vt, "'%s' in '%s' cannot grow: rows can be appended only to a chunked dataset "
                  "whose first dimension is unlimited (maxshape=(None, ...))", vt->dset, vt->file);
  }
  if (rc != SQLITE_OK) writer_drop(vt);
  return rc;
}

/* Hand the buffered rows to the writer. */
static int spill(h5vt *vt) {
  if (!vt->nbuf) return SQLITE_OK;
  int rc = writer_open(vt);
  if (rc != SQLITE_OK) return rc;
  if (h5w_append(vt->w, vt->wd, vt->buf, vt->nbuf) != H5_OK) {
    rc = vt_fail(vt, h5w_errcode(vt->w), "cannot append to '%s': %s", vt->file, h5w_errmsg(vt->w));
    writer_drop(vt);
    return rc;
  }
  vt->nspilled += vt->nbuf;
  buf_truncate(vt, 0);
  return SQLITE_OK;
}

static int h5vt_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  h5vt *vt = (h5vt *)base;
  if (argc == 1 || sqlite3_value_type(argv[0]) != SQLITE_NULL)
    return vt_err(vt, "%s is not supported: '%s' is append-only (INSERT adds rows at the end)",
                  argc == 1 ? "DELETE" : "UPDATE", vt->dset);
  if (vt->readonly) return vt_err(vt, "the table was declared with mode=ro");
  if (vt->doomed) return vt_err(vt, "%s", vt->doom_msg ? vt->doom_msg : "the transaction failed; roll it back");
  /* the file as the transaction's first row found it */
  int rc = vt->nbuf || vt->nspilled ? SQLITE_OK : refresh(vt);
  if (rc != SQLITE_OK) return rc;
  const h5_type *t = vt->snap->info.type;
  if (vt->rank < 1 || !h5vt_writable(t)) {
    char *tt = h5vt_type_text(t);
    rc = vt_err(vt, "cannot append to '%s': %s", vt->dset,
                vt->rank < 1 ? "a scalar dataset has no rows to add" : tt ? tt : "its type");
    if (vt->rank >= 1) {
      char *m = sqlite3_mprintf("%s (this type cannot be written)", vt->base.zErrMsg);
      sqlite3_free(vt->base.zErrMsg);
      vt->base.zErrMsg = m;
    }
    sqlite3_free(tt);
    return rc;
  }
  /* the position: the row index, if given, must be the next one */
  uint64_t at = vt->snap->nrows + vt->nspilled + vt->nbuf;
  sqlite3_value *iv = sqlite3_value_type(argv[1]) != SQLITE_NULL ? argv[1] : argv[2];
  if (sqlite3_value_type(iv) != SQLITE_NULL &&
      (sqlite3_value_numeric_type(iv) != SQLITE_INTEGER || sqlite3_value_int64(iv) < 0 ||
       (uint64_t)sqlite3_value_int64(iv) != at))
    return vt_err(vt, "i is the row's position: leave it out (the next row is %llu)",
                  (unsigned long long)at);
  if (vt->nbuf == vt->capbuf) {
    uint64_t cap = vt->capbuf ? vt->capbuf * 2 : 64;
    uint8_t *nb = sqlite3_realloc64(vt->buf, cap * vt->rowbytes + 1);
    if (!nb) return SQLITE_NOMEM;
    vt->buf = nb;
    vt->capbuf = cap;
  }
  uint8_t *row = vt->buf + vt->nbuf * vt->rowbytes;
  memset(row, 0, vt->rowbytes);
  vt->nbuf++; /* (so a failure below frees its strings) */
  char *msg = NULL;
  int bad = 0;
  const h5cols *cs = &vt->snap->c;
  for (int k = 1; k < cs->ncols && !bad; k++) {
    const h5col *c = &cs->cols[k];
    sqlite3_value *v = argv[2 + k];
    if (c->kind == CK_ELEM) {
      bad = h5vt_put_value(vt, c->type, row + c->offset, v, &msg);
    } else if (c->kind == CK_VEC) {
      bad = h5vt_put_array(c->type, row + c->offset, c->n, v, &msg);
    } else if (h5vt_is_numeric(c->type)) { /* a JSON row of numbers */
      bad = sqlite3_value_type(v) == SQLITE_TEXT ? h5vt_put_array(c->type, row + c->offset, c->n, v, &msg)
                                                  : (msg = sqlite3_mprintf("expected a JSON array"), -1);
    } else {
      bad = -1;
      msg = sqlite3_mprintf("rows of this shape cannot be written");
    }
    if (bad) {
      rc = bad > 0 ? bad : vt_err(vt, "column %s: %s", c->name, msg ? msg : "bad value");
      sqlite3_free(msg);
    }
  }
  if (bad) {
    buf_truncate(vt, vt->nbuf - 1);
    return rc;
  }
  *rowid = (sqlite3_int64)at;
  if (vt->nbuf * vt->rowbytes >= H5VT_SPILL) return spill(vt);
  return SQLITE_OK;
}

static int h5vt_begin(sqlite3_vtab *base) {
  h5vt *vt = (h5vt *)base;
  buf_truncate(vt, 0);
  vt->nspilled = 0;
  vt->doomed = 0;
  for (int k = 0; k < H5VT_MAXSP; k++) vt->sp[k] = 0;
  return SQLITE_OK;
}

static int h5vt_sync(sqlite3_vtab *base) {
  h5vt *vt = (h5vt *)base;
  if (vt->doomed) return vt_err(vt, "%s", vt->doom_msg ? vt->doom_msg : "the transaction failed");
  if (!vt->nbuf && !vt->w) return SQLITE_OK;
  int rc = spill(vt);
  if (rc != SQLITE_OK) return rc;
  if (h5w_flush(vt->w, vt->sync) != H5_OK) {
    rc = vt_fail(vt, h5w_errcode(vt->w), "cannot commit to '%s': %s", vt->file, h5w_errmsg(vt->w));
    writer_drop(vt);
    return rc;
  }
  return SQLITE_OK;
}

static int h5vt_commit(sqlite3_vtab *base) {
  h5vt *vt = (h5vt *)base;
  buf_truncate(vt, 0);
  vt->nspilled = 0;
  writer_drop(vt); /* flushed by h5vt_sync */
  return SQLITE_OK;
}

static int h5vt_rollback(sqlite3_vtab *base) {
  h5vt *vt = (h5vt *)base;
  buf_truncate(vt, 0);
  vt->nspilled = 0;
  vt->doomed = 0;
  writer_drop(vt);
  return SQLITE_OK;
}

static int h5vt_savepoint(sqlite3_vtab *base, int i) {
  h5vt *vt = (h5vt *)base;
  if (i >= 0 && i < H5VT_MAXSP) vt->sp[i] = vt->nspilled + vt->nbuf;
  return SQLITE_OK;
}

static int h5vt_release(sqlite3_vtab *base, int i) {
  (void)base;
  (void)i;
  return SQLITE_OK;
}

static int h5vt_rollback_to(sqlite3_vtab *base, int i) {
  h5vt *vt = (h5vt *)base;
  if (i < 0 || i >= H5VT_MAXSP || vt->sp[i] < vt->nspilled) {
    vt->doomed = 1;
    sqlite3_free(vt->doom_msg);
    vt->doom_msg = sqlite3_mprintf(
        "cannot roll back to a savepoint: rows after it were already written to '%s' "
        "(a transaction over %u MiB, or savepoints nested over %d deep); roll back the "
        "whole transaction", vt->file, H5VT_SPILL >> 20, H5VT_MAXSP);
    return SQLITE_OK;
  }
  buf_truncate(vt, vt->sp[i] - vt->nspilled);
  return SQLITE_OK;
}

static int h5vt_rename(sqlite3_vtab *base, const char *name) {
  (void)base;
  (void)name;
  return SQLITE_OK;
}

static sqlite3_module h5_module = {
    .iVersion = 2,
    .xCreate = h5vt_create,
    .xConnect = h5vt_connect,
    .xBestIndex = h5vt_best_index,
    .xDisconnect = h5vt_disconnect,
    .xDestroy = h5vt_disconnect, /* DROP TABLE leaves the file alone */
    .xOpen = h5vt_open_cursor,
    .xClose = h5vt_close_cursor,
    .xFilter = h5vt_filter,
    .xNext = h5vt_next,
    .xEof = h5vt_eof,
    .xColumn = h5vt_column,
    .xRowid = h5vt_rowid,
    .xUpdate = h5vt_update,
    .xBegin = h5vt_begin,
    .xSync = h5vt_sync,
    .xCommit = h5vt_commit,
    .xRollback = h5vt_rollback,
    .xRename = h5vt_rename,
    .xSavepoint = h5vt_savepoint,
    .xRelease = h5vt_release,
    .xRollbackTo = h5vt_rollback_to,
};

int ext_vtab_h5_register(sqlite3 *db) {
  if (!h5sql_directonly_ok()) return SQLITE_OK; /* see h5sql.h */
  return sqlite3_create_module_v2(db, "h5", &h5_module, NULL, NULL);
}
