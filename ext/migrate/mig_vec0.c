/*
** ext/migrate/mig_vec0.c - sqlite-vec's vec0 tables read from their shadow
** tables, without sqlite-vec (layout of sqlite-vec v0.1.x, checked against
** v0.1.9's sqlite-vec.c; docs/MIGRATION.md, "sqlite-vec").
**
** A vec0 table T keeps its rows in chunks of chunk_size (1024 unless
** declared) rows:
**   T_chunks(chunk_id INTEGER PRIMARY KEY, size, validity BLOB, rowids BLOB
**            [, partition00 ...])  validity: size/8 bytes, bit i%8 of byte
**            i/8 set when slot i holds a row; rowids: size int64 LE
**   T_rowids(rowid, id, chunk_id, chunk_offset)  one per row; id is the
**            text primary key when the table has one
**   T_vector_chunksNN(rowid, vectors BLOB)  per vector column NN, keyed by
**            chunk_id (SQLite's own rowid, which sqlite-vec reads through
**            sqlite3_blob_open); size vectors of float32 (4 x dim bytes),
**            int8 (dim) or bit (dim / 8)
**   T_auxiliary(rowid, value00 ...)  the +auxiliary columns, per row
**   T_metadatachunksNN(rowid, data BLOB)  per metadata column, keyed by
**            chunk_id: boolean bits, int64 or float64 LE per slot, or for
**            text 16 bytes per slot (int32 length, 12 first bytes); text
**            longer than 12 bytes is whole in T_metadatatextNN(rowid, data)
** The declaration (sqlite_master.sql) says which columns there are, of
** which kind and in which order; every shadow table and blob length is
** checked against it before a row is read, and a source that disagrees is
** refused or its chunk skipped, never read as something else.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mig.h"
#include "store/store.h"
#include "util/le.h"

enum { K_VEC, K_PART, K_AUX, K_META };
enum { E_F32, E_I8, E_BIT };
enum { M_BOOL, M_INT, M_FLOAT, M_TEXT };
#define VEC0_MAX_COLS 64

typedef struct vcol {
  char name[128];
  int kind;   /* K_* */
  int idx;    /* its number among its kind (the NN of its shadow table) */
  int type;   /* K_VEC: E_*; K_META: M_*; K_PART, K_AUX: an SQLite type or 0 */
  int dim;    /* K_VEC */
  int metric; /* K_VEC: STORE_L2, STORE_COSINE, or -1 (L1) */
  int decl;   /* its declared column in the new store (the reader's decl), or -1 */
} vcol;

typedef struct vec0_decl {
  vcol col[VEC0_MAX_COLS];
  int ncol, nvec, npart, naux, nmeta;
  int chunk_size;
  int pk_text;     /* a TEXT primary key (its values in T_rowids.id) */
  char pk[128];    /* the primary key column's name, or "" */
} vec0_decl;

/* ---- the declaration ----------------------------------------------------- */

int mig_is_vec0(const char *sql) {
  /* CREATE VIRTUAL TABLE name USING vec0( */
  const char *u = sql;
  while ((u = strchr(u, ' ')) != NULL) {
    u++;
    if (!sqlite3_strnicmp(u, "USING", 5)) {
      u += 5;
      while (*u == ' ' || *u == '\t' || *u == '\n' || *u == '\r') u++;
      return !sqlite3_strnicmp(u, "vec0", 4) && (u[4] == '(' || u[4] == ' ' || u[4] == '\t' ||
                                                  u[4] == '\n' || u[4] == '\r');
    }
  }
  return 0;
}

/* The words of one argument: identifiers and numbers as words, each of
** + [ ] = as a word of its own.  Returns how many (at most max). */
static int words(const char *a, size_t n, char w[][128], int max) {
  int k = 0;
  size_t i = 0;
  while (i < n && k < max) {
    char c = a[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      i++;
    } else if (c == '+' || c == '[' || c == ']' || c == '=') {
      w[k][0] = c;
      w[k++][1] = 0;
      i++;
    } else if (c == '"' || c == '`' || c == '\'') { /* a quoted name */
      size_t j = i + 1, l = 0;
      while (j < n && a[j] != c && l + 1 < 128) w[k][l++] = a[j++];
      w[k++][l] = 0;
      i = j + 1;
    } else {
      size_t l = 0;
      while (i < n && !strchr(" \t\n\r+[]=\"'`", a[i]) && l + 1 < 128) w[k][l++] = a[i++];
      w[k++][l] = 0;
      if (!l) i++; /* an unexpected character: skip it */
    }
  }
  return k;
}

static int word_is(const char *w, const char *s) { return !sqlite3_stricmp(w, s); }

static int aux_type(const char *t) {
  if (word_is(t, "text")) return SQLITE_TEXT;
  if (word_is(t, "int") || word_is(t, "integer")) return SQLITE_INTEGER;
  if (word_is(t, "float") || word_is(t, "double")) return SQLITE_FLOAT;
  if (word_is(t, "blob")) return SQLITE_BLOB;
  return -1;
}

/* One argument of the declaration into d. */
static int parse_arg(const char *a, size_t n, vec0_decl *d, char **err) {
  char w[12][128];
  int k = words(a, n, w, 12);
  if (!k) return SQLITE_OK;
  if (d->ncol >= VEC0_MAX_COLS) {
    *err = sqlite3_mprintf("vec0: more than %d columns", VEC0_MAX_COLS);
    return SQLITE_ERROR;
  }
  vcol *c = &d->col[d->ncol];
  memset(c, 0, sizeof *c);
  c->decl = -1;
  if (k >= 5 && w[2][0] == '[' && w[4][0] == ']') { /* name type[dim] [distance_metric=m] */
    c->kind = K_VEC;
    if (word_is(w[1], "float") || word_is(w[1], "f32") || word_is(w[1], "float32")) c->type = E_F32;
    else if (word_is(w[1], "int8") || word_is(w[1], "i8")) c->type = E_I8;
    else if (word_is(w[1], "bit")) c->type = E_BIT;
    else goto bad;
    c->dim = atoi(w[3]);
    c->metric = STORE_L2; /* sqlite-vec's default */
    if (c->dim <= 0) goto bad;
    if (k == 8 && word_is(w[5], "distance_metric") && w[6][0] == '=') {
      if (word_is(w[7], "cosine")) c->metric = STORE_COSINE;
      else if (word_is(w[7], "l2")) c->metric = STORE_L2;
      else if (word_is(w[7], "l1")) c->metric = -1;
      else goto bad;
    } else if (k != 5) {
      goto bad;
    }
    c->idx = d->nvec++;
  } else if (k == 3 && w[1][0] == '=') { /* table option */
    if (!word_is(w[0], "chunk_size")) goto bad;
    d->chunk_size = atoi(w[2]);
    if (d->chunk_size <= 0 || d->chunk_size % 8 || d->chunk_size > 4096) goto bad;
    return SQLITE_OK;
  } else if (k == 3 && w[0][0] == '+') { /* +name type */
    c->kind = K_AUX;
    snprintf(c->name, sizeof c->name, "%s", w[1]);
    if ((c->type = aux_type(w[2])) < 0) goto bad;
    c->idx = d->naux++;
    d->ncol++;
    return SQLITE_OK;
  } else if (k == 4 && word_is(w[2], "primary") && word_is(w[3], "key")) {
    if (d->pk[0]) goto bad;
    snprintf(d->pk, sizeof d->pk, "%s", w[0]);
    d->pk_text = word_is(w[1], "text");
    if (!d->pk_text && !word_is(w[1], "integer") && !word_is(w[1], "int")) goto bad;
    return SQLITE_OK;
  } else if (k == 4 && word_is(w[2], "partition") && word_is(w[3], "key")) {
    c->kind = K_PART;
    c->type = aux_type(w[1]);
    c->idx = d->npart++;
  } else if (k == 2) { /* name type: metadata */
    c->kind = K_META;
    if (word_is(w[1], "boolean") || word_is(w[1], "bool")) c->type = M_BOOL;
    else if (word_is(w[1], "integer") || word_is(w[1], "int") || word_is(w[1], "int64") ||
             word_is(w[1], "integer64"))
      c->type = M_INT;
    else if (word_is(w[1], "float") || word_is(w[1], "double") || word_is(w[1], "float64") ||
             word_is(w[1], "f64"))
      c->type = M_FLOAT;
    else if (word_is(w[1], "text")) c->type = M_TEXT;
    else goto bad;
    c->idx = d->nmeta++;
  } else {
    goto bad;
  }
  snprintf(c->name, sizeof c->name, "%s", w[0]);
  d->ncol++;
  return SQLITE_OK;
bad:
  *err = sqlite3_mprintf("vec0: cannot read the declaration's argument '%.*s'", (int)n, a);
  return SQLITE_ERROR;
}

/* The arguments of CREATE VIRTUAL TABLE ... USING vec0(...) into d. */
static int parse_decl(const char *sql, vec0_decl *d, char **err) {
  memset(d, 0, sizeof *d);
  d->chunk_size = 1024;
  const char *p = strchr(sql, '(');
  if (!mig_is_vec0(sql) || !p) {
    *err = sqlite3_mprintf("not a vec0 declaration: %s", sql);
    return SQLITE_ERROR;
  }
  p++;
  const char *a = p;
  int depth = 0;
  char q = 0;
  for (; *p; p++) {
    if (q) {
      if (*p == q) q = 0;
      continue;
    }
    if (*p == '\'' || *p == '"' || *p == '`') q = *p;
    else if (*p == '(') depth++;
    else if ((*p == ',' || *p == ')') && depth == 0) {
      int rc = parse_arg(a, (size_t)(p - a), d, err);
      if (rc != SQLITE_OK) return rc;
      if (*p == ')') break;
      a = p + 1;
    } else if (*p == ')') depth--;
  }
  if (!d->nvec) {
    *err = sqlite3_mprintf("vec0: the declaration has no vector column");
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int mig_vec0_vector(sqlite3 *db, const char *table, int *dim, int *metric, char *name, size_t n) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  const char *sql = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
  vec0_decl *d = sql ? sqlite3_malloc(sizeof *d) : NULL;
  char *err = NULL;
  rc = !sql ? SQLITE_NOTFOUND : !d ? SQLITE_NOMEM : parse_decl(sql, d, &err);
  sqlite3_free(err);
  sqlite3_finalize(st);
  if (rc == SQLITE_OK) {
    rc = SQLITE_NOTFOUND;
    for (int i = 0; i < d->ncol; i++) {
      const vcol *c = &d->col[i];
      if (c->kind != K_VEC || c->type == E_BIT) continue;
      *dim = c->dim;
      *metric = c->metric;
      snprintf(name, n, "%s", c->name);
      rc = SQLITE_OK;
      break;
    }
  }
  sqlite3_free(d);
  return rc;
}

/* ---- the reader ------------------------------------------------------------ */

/* Canonical output cells, in the order of mig_field_name up to meta. */
#define NOUT (MIG_F_SKIP + 1)

typedef struct vec0_reader {
  mig_reader base;
  sqlite3 *db;
  char *t;
  vec0_decl d;
  int vec;               /* the vector column read */
  int vbytes;            /* bytes of one of its vectors */
  int field[MIG_NFIELD]; /* the declaration's column feeding each field, or -1 */
  sqlite3_stmt *chunks, *vecs, *rowids, *aux;
  sqlite3_stmt *meta[VEC0_MAX_COLS], *mtext[VEC0_MAX_COLS];
  /* the current chunk */
  int have_chunk, size, off; /* off: the next slot to look at */
  int cur;                    /* the slot of the current row */
  int64_t chunk_id;
  const uint8_t *validity, *rowid_blob, *vectors;
  const uint8_t *mdata[VEC0_MAX_COLS];
  /* the declared columns: the vector columns' statements and chunk bytes */
  mig_decl decls[VEC0_MAX_COLS + 1];
  mig_cell dvals[VEC0_MAX_COLS + 1];
  int pk_decl; /* the text primary key's declared column, or -1 */
  sqlite3_stmt *vstmt[VEC0_MAX_COLS];
  const uint8_t *vdata[VEC0_MAX_COLS];
  int vbyte[VEC0_MAX_COLS];
  const char *bad; /* why the current chunk cannot be read, or NULL */
  int bad_done;
  /* the current row */
  mig_cell out[NOUT];
  mig_cell val[VEC0_MAX_COLS + 1]; /* each declared column's value; [ncol]: the text id */
  sqlite3_str *metajson;
  char *metabuf;
  char hexbuf[64];
  char why[300]; /* a skipped row's "reason: detail" */
} vec0_reader;

/* "reason: detail" (the driver's _skip cell) in v->why. */
static const char *why(vec0_reader *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *why(vec0_reader *v, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->why, sizeof v->why, fmt, ap);
  va_end(ap);
  return v->why;
}

static const char *const out_names[NOUT] = {"id", "text", "embedding", "source", "session", "tags",
                                            "tier", "ts", "importance", "meta", "_skip"};

static void v_close(mig_reader *r) {
  vec0_reader *v = (vec0_reader *)r;
  if (!v) return;
  sqlite3_finalize(v->chunks);
  sqlite3_finalize(v->vecs);
  sqlite3_finalize(v->rowids);
  sqlite3_finalize(v->aux);
  for (int i = 0; i < VEC0_MAX_COLS; i++) {
    sqlite3_finalize(v->meta[i]);
    sqlite3_finalize(v->mtext[i]);
    sqlite3_finalize(v->vstmt[i]);
  }
  sqlite3_free(v->metabuf);
  sqlite3_free(sqlite3_str_finish(v->metajson));
  sqlite3_free(v->t);
  sqlite3_free(v);
}

static int prep(vec0_reader *v, sqlite3_stmt **st, char **err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *q = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  if (!q) return SQLITE_NOMEM;
  int rc = sqlite3_prepare_v2(v->db, q, -1, st, NULL);
  if (rc != SQLITE_OK)
    *err = sqlite3_mprintf("vec0 table %s: its shadow tables are not sqlite-vec v0.1's (%s)", v->t,
                           sqlite3_errmsg(v->db));
  sqlite3_free(q);
  return rc;
}

static int v_rewind(mig_reader *r, char **err) {
  (void)err;
  vec0_reader *v = (vec0_reader *)r;
  sqlite3_reset(v->chunks);
  v->have_chunk = 0;
  return SQLITE_OK;
}

/* A blob of the chunk from stmt (bound to the chunk id): its bytes, or NULL
** when missing or not want bytes long. */
static const uint8_t *chunk_blob(sqlite3_stmt *st, int64_t chunk, int want) {
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, chunk);
  if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 0) != SQLITE_BLOB ||
      sqlite3_column_bytes(st, 0) != want)
    return NULL;
  return sqlite3_column_blob(st, 0);
}

static int meta_bytes(int type, int size) {
  switch (type) {
  case M_BOOL: return size / 8;
  case M_TEXT: return size * 16;
  default: return size * 8;
  }
}

/* The next chunk: SQLITE_ROW, SQLITE_DONE or an error. */
static int next_chunk(vec0_reader *v, char **err) {
  int rc = sqlite3_step(v->chunks);
  if (rc == SQLITE_DONE) return rc;
  if (rc != SQLITE_ROW) {
    *err = sqlite3_mprintf("vec0 table %s: %s", v->t, sqlite3_errmsg(v->db));
    return rc;
  }
  v->have_chunk = 1;
  v->off = 0;
  v->bad = NULL;
  v->bad_done = 0;
  v->chunk_id = sqlite3_column_int64(v->chunks, 0);
  sqlite3_int64 size = sqlite3_column_int64(v->chunks, 1);
  v->size = size > 0 && size <= 4096 && size % 8 == 0 ? (int)size : 0;
  if (!v->size || sqlite3_column_bytes(v->chunks, 2) != v->size / 8 ||
      sqlite3_column_bytes(v->chunks, 3) != v->size * 8) {
    v->bad = why(v, "vec0_bad_chunk: chunk %lld: its size, validity or rowids do not fit "
                 "(size %lld, %d and %d bytes)", (long long)v->chunk_id, (long long)size,
                 sqlite3_column_bytes(v->chunks, 2), sqlite3_column_bytes(v->chunks, 3));
    return SQLITE_ROW;
  }
  v->validity = sqlite3_column_blob(v->chunks, 2);
  v->rowid_blob = sqlite3_column_blob(v->chunks, 3);
  v->vectors = chunk_blob(v->vecs, v->chunk_id, v->size * v->vbytes);
  if (!v->vectors)
    v->bad = why(v, "vec0_bad_chunk: chunk %lld: %s_vector_chunks%02d holds no %d vectors of %d bytes",
                 (long long)v->chunk_id, v->t, v->d.col[v->vec].idx, v->size, v->vbytes);
  for (int i = 0; i < v->d.ncol && !v->bad; i++) {
    vcol *c = &v->d.col[i];
    if (c->kind == K_VEC && v->vstmt[i]) {
      v->vdata[i] = chunk_blob(v->vstmt[i], v->chunk_id, v->size * v->vbyte[i]);
      if (!v->vdata[i])
        v->bad = why(v, "vec0_bad_chunk: chunk %lld: the vectors of %s do not fit", (long long)v->chunk_id,
                     c->name);
    }
    if (c->kind != K_META) continue;
    v->mdata[i] = chunk_blob(v->meta[i], v->chunk_id, meta_bytes(c->type, v->size));
    if (!v->mdata[i])
      v->bad = why(v, "vec0_bad_chunk: chunk %lld: the metadata of %s does not fit", (long long)v->chunk_id,
                   c->name);
  }
  return SQLITE_ROW;
}

static void cell_from(mig_cell *c, sqlite3_stmt *st, int i) {
  c->type = sqlite3_column_type(st, i);
  c->p = NULL;
  c->n = 0;
  if (c->type == SQLITE_INTEGER) c->i = sqlite3_column_int64(st, i), c->d = (double)c->i;
  else if (c->type == SQLITE_FLOAT) c->d = sqlite3_column_double(st, i);
  else if (c->type == SQLITE_TEXT) c->p = sqlite3_column_text(st, i), c->n = sqlite3_column_bytes(st, i);
  else if (c->type == SQLITE_BLOB) c->p = sqlite3_column_blob(st, i), c->n = sqlite3_column_bytes(st, i);
}

/* The value of declared column i for slot off of the current chunk. */
static int column_value(vec0_reader *v, int i, int64_t rowid, mig_cell *c) {
  vcol *col = &v->d.col[i];
  memset(c, 0, sizeof *c);
  int off = v->cur;
  switch (col->kind) {
  case K_VEC: /* the embedding's is read apart; declared ones as BLOBs */
    c->type = SQLITE_NULL;
    if (v->vstmt[i] && v->vdata[i]) {
      c->type = SQLITE_BLOB;
      c->p = v->vdata[i] + (size_t)off * (size_t)v->vbyte[i];
      c->n = v->vbyte[i];
    }
    return SQLITE_OK;
  case K_PART: cell_from(c, v->chunks, 4 + col->idx); return SQLITE_OK;
  case K_AUX:
    if (v->aux) cell_from(c, v->aux, col->idx);
    return SQLITE_OK;
  default: break;
  }
  const uint8_t *m = v->mdata[i];
  switch (col->type) {
  case M_BOOL: c->type = SQLITE_INTEGER; c->i = m[off / 8] >> (off % 8) & 1; break;
  case M_INT: c->type = SQLITE_INTEGER; c->i = (int64_t)util_get_le64(m + 8 * off); break;
  case M_FLOAT: c->type = SQLITE_FLOAT; c->d = util_get_le_f64(m + 8 * off); break;
  default: {
    const uint8_t *e = m + 16 * off;
    int32_t len = (int32_t)util_get_le32(e);
    if (len < 0) return SQLITE_CORRUPT;
    c->type = SQLITE_TEXT;
    if (len <= 12) {
      c->p = e + 4;
      c->n = len;
    } else {
      sqlite3_stmt *st = v->mtext[i];
      sqlite3_reset(st);
      sqlite3_bind_int64(st, 1, rowid);
      if (sqlite3_step(st) != SQLITE_ROW) return SQLITE_CORRUPT;
      cell_from(c, st, 0);
      if (c->type != SQLITE_TEXT || c->n != len) return SQLITE_CORRUPT;
    }
  }
  }
  return SQLITE_OK;
}

/* meta: a JSON object of the declared columns no field takes (and the text
** primary key). */
static int build_meta(vec0_reader *v) {
  sqlite3_str *s = v->metajson;
  sqlite3_str_reset(s);
  int first = 1;
  for (int i = 0; i <= v->d.ncol; i++) {
    const char *name = i < v->d.ncol ? v->d.col[i].name : v->d.pk;
    if (i < v->d.ncol && v->d.col[i].kind == K_VEC) continue;
    if (i == v->d.ncol && !v->d.pk_text) continue;
    int decl = i < v->d.ncol ? v->d.col[i].decl : v->pk_decl;
    if (decl >= 0 && !v->decls[decl].in_meta) continue; /* a declared column of its own */
    int taken = 0;
    for (int f = 0; f < MIG_NFIELD; f++) taken |= v->field[f] == i;
    if (taken) continue;
    mig_cell *c = &v->val[i];
    sqlite3_str_appendchar(s, 1, first ? '{' : ',');
    first = 0;
    mig_json_str(s, name, strlen(name));
    sqlite3_str_appendchar(s, 1, ':');
    if (i < v->d.ncol && v->d.col[i].kind == K_META && v->d.col[i].type == M_BOOL)
      sqlite3_str_appendall(s, c->i ? "true" : "false");
    else if (c->type == SQLITE_INTEGER) sqlite3_str_appendf(s, "%lld", (long long)c->i);
    else if (c->type == SQLITE_FLOAT) sqlite3_str_appendf(s, "%!.17g", c->d);
    else if (c->type == SQLITE_TEXT) mig_json_str(s, c->p, (size_t)c->n);
    else if (c->type == SQLITE_BLOB) {
      sqlite3_str_appendchar(s, 1, '"');
      for (int b = 0; b < c->n; b++) sqlite3_str_appendf(s, "%02x", ((const uint8_t *)c->p)[b]);
      sqlite3_str_appendchar(s, 1, '"');
    } else sqlite3_str_appendall(s, "null");
  }
  sqlite3_free(v->metabuf);
  v->metabuf = NULL;
  if (first) {
    v->out[MIG_F_META].type = SQLITE_NULL;
    return SQLITE_OK;
  }
  sqlite3_str_appendchar(s, 1, '}');
  if (sqlite3_str_errcode(s)) return SQLITE_NOMEM;
  int n = sqlite3_str_length(s);
  v->metabuf = sqlite3_str_finish(s);
  v->metajson = sqlite3_str_new(NULL);
  v->out[MIG_F_META].type = SQLITE_TEXT;
  v->out[MIG_F_META].p = v->metabuf;
  v->out[MIG_F_META].n = n;
  return SQLITE_OK;
}

static void skip_row(vec0_reader *v, const char *why) {
  for (int f = 0; f < NOUT; f++) v->out[f].type = SQLITE_NULL;
  v->out[MIG_F_SKIP].type = SQLITE_TEXT;
  v->out[MIG_F_SKIP].p = why;
  v->out[MIG_F_SKIP].n = (int)strlen(why);
}

static int v_next(mig_reader *r, char **err) {
  vec0_reader *v = (vec0_reader *)r;
  for (;;) {
    if (!v->have_chunk || (v->bad && v->bad_done) || (!v->bad && v->off >= v->size)) {
      int rc = next_chunk(v, err);
      if (rc != SQLITE_ROW) return rc;
    }
    if (v->bad) { /* one skipped row stands for the unreadable chunk */
      v->bad_done = 1;
      skip_row(v, v->bad);
      return SQLITE_ROW;
    }
    int off = v->cur = v->off++;
    if (!(v->validity[off / 8] >> (off % 8) & 1)) continue;
    int64_t rowid = (int64_t)util_get_le64(v->rowid_blob + 8 * off);
    /* the row's entry in T_rowids must point back here */
    sqlite3_reset(v->rowids);
    sqlite3_bind_int64(v->rowids, 1, rowid);
    if (sqlite3_step(v->rowids) != SQLITE_ROW ||
        sqlite3_column_int64(v->rowids, 1) != v->chunk_id ||
        sqlite3_column_int64(v->rowids, 2) != off) {
      skip_row(v, why(v, "vec0_inconsistent: rowid %lld: its %s_rowids entry does not point at "
                         "chunk %lld, slot %d", (long long)rowid, v->t, (long long)v->chunk_id, off));
      return SQLITE_ROW;
    }
    cell_from(&v->val[v->d.ncol], v->rowids, 0); /* the text id */
    if (v->aux) {
      sqlite3_reset(v->aux);
      sqlite3_bind_int64(v->aux, 1, rowid);
      if (sqlite3_step(v->aux) != SQLITE_ROW) {
        skip_row(v, why(v, "vec0_inconsistent: rowid %lld: no %s_auxiliary row", (long long)rowid, v->t));
        return SQLITE_ROW;
      }
    }
    int bad = -1;
    for (int i = 0; i < v->d.ncol && bad < 0; i++)
      if (column_value(v, i, rowid, &v->val[i]) != SQLITE_OK) bad = i;
    if (bad >= 0) {
      skip_row(v, why(v, "vec0_inconsistent: rowid %lld: the value of %s cannot be read (its long text "
                      "missing or of another length)", (long long)rowid, v->d.col[bad].name));
      return SQLITE_ROW;
    }
    for (int f = 0; f < NOUT; f++) {
      v->out[f].type = SQLITE_NULL;
      if (f < MIG_NFIELD && v->field[f] >= 0) v->out[f] = v->val[v->field[f]];
    }
    v->out[MIG_F_ID].type = SQLITE_INTEGER;
    v->out[MIG_F_ID].i = rowid;
    v->out[MIG_F_EMB].type = SQLITE_BLOB;
    v->out[MIG_F_EMB].p = v->vectors + (size_t)off * (size_t)v->vbytes;
    v->out[MIG_F_EMB].n = v->vbytes;
    for (int i = 0; i <= v->d.ncol; i++) {
      int decl = i < v->d.ncol ? v->d.col[i].decl : v->pk_decl;
      if (decl >= 0) v->dvals[decl] = v->val[i];
    }
    int rc = build_meta(v);
    return rc == SQLITE_OK ? SQLITE_ROW : rc;
  }
}

static const char *const text_names[] = {"text", "content", "chunk", "body", "document", NULL};

/* Which declared column feeds each field: the options' names, else a column
** named as the field (text: also content, chunk, body, document). */
static int choose_fields(vec0_reader *v, const mig_want *w, char **err) {
  for (int f = 0; f < MIG_NFIELD; f++) {
    v->field[f] = -1;
    if (f == MIG_F_ID || f == MIG_F_EMB || f == MIG_F_META || f >= MIG_F_SKIP) continue;
    for (int k = 0; k < (f == MIG_F_TEXT ? 5 : 1) && v->field[f] < 0; k++) {
      const char *want = w->col[f] ? w->col[f] : f == MIG_F_TEXT ? text_names[k] : mig_field_name[f];
      for (int i = 0; i < v->d.ncol; i++)
        if (v->d.col[i].kind != K_VEC && !sqlite3_stricmp(v->d.col[i].name, want)) v->field[f] = i;
      if (w->col[f]) break;
    }
    if (w->col[f] && v->field[f] < 0) {
      *err = sqlite3_mprintf("columns: vec0 table %s has no column '%s' (for %s)", v->t, w->col[f],
                             mig_field_name[f]);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

/* The names a declared column cannot take: the store's own columns
** (lib/store's store_col_name, and its deleted flag) and the h5mem
** table's hidden columns and the rowid's (ext/vtab/vtab_h5mem.c). */
static int taken_name(const vec0_reader *v, const char *n, int upto) {
  static const char *const r[] = {"id", "text", "embedding", "source", "session", "tags", "ts", "tier",
                                  "importance", "access_count", "last_access", "meta", "deleted",
                                  "distance", "k", "rowid", "oid", "_rowid_", "h5mem", NULL};
  for (int i = 0; r[i]; i++)
    if (!sqlite3_stricmp(n, r[i])) return 1;
  for (int i = 0; i < upto; i++)
    if (!sqlite3_stricmp(n, v->decls[i].def.name)) return 1;
  return 0;
}

/* Declared column number base.ndecl for the source's column src: its
** store name (src, else with '_' added until free; a name the store cannot
** take, not [A-Za-z_][A-Za-z0-9_]* of at most 63 bytes, is made one), the
** declaration checked as the store will check it. */
static int add_decl(vec0_reader *v, const char *src, store_coldef *c, mig_plan *p, char **err) {
  int k = v->base.ndecl;
  mig_decl *d = &v->decls[k];
  char name[STORE_COLNAME_MAX];
  size_t n = 0;
  for (const char *s = src; *s && n + 2 < sizeof name; s++) {
    int ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_' || (n && *s >= '0' && *s <= '9');
    name[n++] = ok ? *s : '_';
  }
  if (!n) name[n++] = '_';
  name[n] = 0;
  while (taken_name(v, name, k)) {
    if (n + 1 >= sizeof name) {
      *err = sqlite3_mprintf("vec0 table %s: no name for its column %s in the new store", v->t, src);
      return SQLITE_ERROR;
    }
    name[n++] = '_';
    name[n] = 0;
  }
  memcpy(c->name, name, n + 1);
  char buf[200], e[256];
  store_coldef chk;
  store_coldef_format(c, buf, sizeof buf);
  if (store_coldef_parse(buf, strlen(buf), &chk, e, sizeof e) != STORE_OK || memcmp(&chk, c, sizeof chk)) {
    *err = sqlite3_mprintf("vec0 table %s: its column %s cannot be a column of the store (%s)", v->t, src,
                           buf);
    return SQLITE_ERROR;
  }
  d->def = *c;
  snprintf(d->src, sizeof d->src, "%s", src);
  d->in_meta = 0;
  if (strcmp(name, src))
    mig_note(p, "vec0 column %s is the store's column %s (the store has a column %s, or cannot take the "
                "name)", src, name, src);
  v->base.ndecl = k + 1;
  return SQLITE_OK;
}

/* The declared columns of the new store: every partition, auxiliary and
** metadata column no field takes, the text primary key, and the vector
** columns but the embedding's, in the declaration's order. */
static int make_decls(vec0_reader *v, mig_plan *p, char **err) {
  v->pk_decl = -1;
  v->base.decl = v->decls;
  v->base.dcells = v->dvals;
  for (int i = 0; i < v->d.ncol; i++) {
    vcol *col = &v->d.col[i];
    store_coldef c;
    memset(&c, 0, sizeof c);
    col->decl = -1;
    int taken = i == v->vec;
    for (int f = 0; f < MIG_NFIELD; f++) taken |= v->field[f] == i;
    if (taken) continue;
    switch (col->kind) {
    case K_VEC:
      c.type = STORE_T_VECTOR;
      c.vtype = col->type == E_F32 ? STORE_VT_F32 : col->type == E_I8 ? STORE_VT_I8 : STORE_VT_BIT;
      c.dim = col->dim;
      c.metric = col->type == E_BIT ? STORE_HAMMING : col->metric < 0 ? STORE_L1 : col->metric;
      break;
    case K_PART:
      c.role = STORE_R_PARTITION;
      c.type = col->type == SQLITE_TEXT ? STORE_T_TEXT : STORE_T_INTEGER;
      break;
    case K_AUX:
      c.role = STORE_R_AUX;
      c.type = col->type == SQLITE_TEXT ? STORE_T_TEXT : col->type == SQLITE_INTEGER ? STORE_T_INTEGER
             : col->type == SQLITE_FLOAT ? STORE_T_FLOAT : STORE_T_BLOB;
      break;
    default:
      c.type = col->type == M_BOOL ? STORE_T_BOOLEAN : col->type == M_INT ? STORE_T_INTEGER
             : col->type == M_FLOAT ? STORE_T_FLOAT : STORE_T_TEXT;
    }
    if (v->base.ndecl >= STORE_COLS_MAX) {
      *err = sqlite3_mprintf("vec0 table %s: more than the store's %d declared columns", v->t, STORE_COLS_MAX);
      return SQLITE_ERROR;
    }
    col->decl = v->base.ndecl;
    int rc = add_decl(v, col->name, &c, p, err);
    if (rc != SQLITE_OK) return rc;
  }
  if (v->d.pk_text) {
    store_coldef c;
    memset(&c, 0, sizeof c);
    c.role = STORE_R_PKEY;
    c.type = STORE_T_TEXT;
    v->pk_decl = v->base.ndecl;
    if (v->base.ndecl >= STORE_COLS_MAX) {
      *err = sqlite3_mprintf("vec0 table %s: more than the store's %d declared columns", v->t, STORE_COLS_MAX);
      return SQLITE_ERROR;
    }
    int rc = add_decl(v, v->d.pk, &c, p, err);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

int mig_vec0_open(sqlite3 *db, const char *table, const mig_want *w, mig_plan *p,
                  mig_reader **out, char **err) {
  *out = NULL;
  sqlite3_stmt *st;
  const char *sql = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
                              -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
  if (sqlite3_step(st) == SQLITE_ROW) sql = (const char *)sqlite3_column_text(st, 0);
  vec0_reader *v = sqlite3_malloc(sizeof *v);
  if (!v) {
    sqlite3_finalize(st);
    return SQLITE_NOMEM;
  }
  memset(v, 0, sizeof *v);
  v->db = db;
  v->pk_decl = -1;
  v->t = sqlite3_mprintf("%s", table);
  v->metajson = sqlite3_str_new(NULL);
  v->base.ncol = NOUT;
  v->base.names = (const char **)out_names;
  v->base.cells = v->out;
  v->base.next = v_next;
  v->base.rewind = v_rewind;
  v->base.close = v_close;
  v->base.meta_has_decls = 1; /* (build_meta) */
  rc = !v->t ? SQLITE_NOMEM : !sql ? SQLITE_ERROR : parse_decl(sql, &v->d, err);
  if (!sql && !*err) *err = sqlite3_mprintf("no vec0 table '%s'", table);
  sqlite3_finalize(st);
  /* the vector column */
  /* the vector column read as the embedding: the one named, else (the
     others declared columns) one named embedding, else the first that is
     not bit; with no_declared, the only one */
  v->vec = -1;
  for (int i = 0; rc == SQLITE_OK && i < v->d.ncol; i++) {
    vcol *c = &v->d.col[i];
    if (c->kind != K_VEC) continue;
    if (w->vector_column ? !sqlite3_stricmp(w->vector_column, c->name) : v->vec < 0) v->vec = i;
  }
  for (int i = 0; rc == SQLITE_OK && !w->vector_column && !w->no_declared && i < v->d.ncol; i++)
    if (v->d.col[i].kind == K_VEC && !sqlite3_stricmp(v->d.col[i].name, "embedding")) v->vec = i;
  for (int i = 0; rc == SQLITE_OK && !w->vector_column && !w->no_declared && v->vec >= 0 &&
                  v->d.col[v->vec].type == E_BIT && i < v->d.ncol; i++)
    if (v->d.col[i].kind == K_VEC && v->d.col[i].type != E_BIT) v->vec = i;
  if (rc == SQLITE_OK && v->vec < 0) {
    *err = sqlite3_mprintf("vec0 table %s has no vector column '%s'", table,
                           w->vector_column ? w->vector_column : "");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && v->d.nvec > 1 && !w->vector_column && w->no_declared) {
    *err = sqlite3_mprintf("vec0 table %s has %d vector columns: choose one with "
                           "{\"vector_column\": ...}", table, v->d.nvec);
    rc = SQLITE_ERROR;
  }
  vcol *vc = rc == SQLITE_OK ? &v->d.col[v->vec] : NULL;
  if (vc && vc->type == E_BIT) {
    *err = sqlite3_mprintf("vec0 table %s: bit vectors (%s bit[%d]) have no float values to "
                           "migrate", table, vc->name, vc->dim);
    rc = SQLITE_ERROR;
  }
  if (vc && vc->dim > 65536) {
    *err = sqlite3_mprintf("vec0 table %s: dim %d is more than the store's 65536", table, vc->dim);
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) {
    v->vbytes = vc->type == E_F32 ? 4 * vc->dim : vc->dim;
    rc = choose_fields(v, w, err);
  }
  if (rc == SQLITE_OK && !w->no_declared) rc = make_decls(v, p, err);
  /* the shadow tables, each checked by preparing what reads it */
  if (rc == SQLITE_OK) {
    sqlite3_str *q = sqlite3_str_new(NULL);
    sqlite3_str_appendall(q, "SELECT chunk_id, size, validity, rowids");
    for (int i = 0; i < v->d.npart; i++) sqlite3_str_appendf(q, ", partition%02d", i);
    sqlite3_str_appendf(q, " FROM \"%w_chunks\" ORDER BY chunk_id", table);
    char *z = sqlite3_str_finish(q);
    rc = z ? prep(v, &v->chunks, err, "%s", z) : SQLITE_NOMEM;
    sqlite3_free(z);
  }
  if (rc == SQLITE_OK)
    rc = prep(v, &v->vecs, err, "SELECT vectors FROM \"%w_vector_chunks%02d\" WHERE _rowid_ = ?1",
              table, vc->idx);
  if (rc == SQLITE_OK)
    rc = prep(v, &v->rowids, err, "SELECT id, chunk_id, chunk_offset FROM \"%w_rowids\" WHERE rowid = ?1",
              table);
  if (rc == SQLITE_OK && v->d.naux) {
    sqlite3_str *q = sqlite3_str_new(NULL);
    sqlite3_str_appendall(q, "SELECT ");
    for (int i = 0; i < v->d.naux; i++) sqlite3_str_appendf(q, "%svalue%02d", i ? ", " : "", i);
    sqlite3_str_appendf(q, " FROM \"%w_auxiliary\" WHERE rowid = ?1", table);
    char *z = sqlite3_str_finish(q);
    rc = z ? prep(v, &v->aux, err, "%s", z) : SQLITE_NOMEM;
    sqlite3_free(z);
  }
  for (int i = 0; rc == SQLITE_OK && i < v->d.ncol; i++) {
    vcol *c = &v->d.col[i];
    if (c->kind == K_VEC && c->decl >= 0) {
      v->vbyte[i] = c->type == E_F32 ? 4 * c->dim : c->type == E_I8 ? c->dim : (c->dim + 7) / 8;
      rc = prep(v, &v->vstmt[i], err, "SELECT vectors FROM \"%w_vector_chunks%02d\" WHERE _rowid_ = ?1",
                table, c->idx);
    }
    if (c->kind != K_META) continue;
    rc = prep(v, &v->meta[i], err, "SELECT data FROM \"%w_metadatachunks%02d\" WHERE _rowid_ = ?1",
              table, c->idx);
    if (rc == SQLITE_OK && c->type == M_TEXT)
      rc = prep(v, &v->mtext[i], err, "SELECT data FROM \"%w_metadatatext%02d\" WHERE rowid = ?1",
                table, c->idx);
  }
  if (rc != SQLITE_OK) {
    v_close(&v->base);
    return rc;
  }
  /* the plan */
  p->schema = "sqlite-vec";
  p->based_on = sqlite3_mprintf("asg017/sqlite-vec v0.1.x shadow tables (checked against v0.1.9)");
  p->table = sqlite3_mprintf("%s", table);
  p->enc = vc->type == E_I8 ? MIG_ENC_I8 : MIG_ENC_VEC0;
  p->dim = vc->dim;
  p->metric = vc->metric;
  p->has_text = v->field[MIG_F_TEXT] >= 0;
  p->ids = 1;
  p->ids_from = !v->d.pk_text ? "the vec0 rowid"
                : v->pk_decl >= 0 ? "the vec0 rowid (the text primary key in its own column)"
                                  : "the vec0 rowid (the text primary key in meta)";
  sqlite3_str_appendall(p->info, ",\"vec0\":{\"vector_column\":");
  mig_json_str(p->info, vc->name, strlen(vc->name));
  sqlite3_str_appendf(p->info, ",\"element_type\":\"%s\",\"dim\":%d,"
                      "\"distance_metric\":\"%s\",\"chunk_size\":%d,\"text_column\":",
                      vc->type == E_I8 ? "int8" : "float32", vc->dim,
                      vc->metric == STORE_COSINE ? "cosine" : vc->metric == STORE_L2 ? "l2" : "l1",
                      v->d.chunk_size);
  if (p->has_text) mig_json_str(p->info, v->d.col[v->field[MIG_F_TEXT]].name,
                                strlen(v->d.col[v->field[MIG_F_TEXT]].name));
  else sqlite3_str_appendall(p->info, "null");
  sqlite3_str_appendf(p->info, ",\"partition_columns\":%d,\"auxiliary_columns\":%d,"
                      "\"metadata_columns\":%d}", v->d.npart, v->d.naux, v->d.nmeta);
  if (vc->metric < 0) mig_note(p, "vec0 distance_metric=L1 has no h5mem metric: the new store uses l2");
  if (!p->has_text)
    mig_note(p, "vec0 table %s has no text column: records are migrated without text", table);
  char *q = sqlite3_mprintf("SELECT value FROM \"%w_info\" WHERE key = 'CREATE_VERSION'", table);
  if (q && sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
    const char *ver = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0) : NULL;
    if (ver) {
      sqlite3_str_appendall(p->info, ",\"vec0_create_version\":");
      mig_json_str(p->info, ver, strlen(ver));
    }
    sqlite3_finalize(st);
  }
  sqlite3_free(q);
  *out = &v->base;
  return SQLITE_OK;
}
