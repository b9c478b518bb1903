/*
** ext/func_migrate.c - h5mem_migrate(source_db, dest_h5 [, options_json]):
** an existing SQLite memory store moved into an h5mem store, and a JSON
** report of what was read, written and skipped, and why.
**
**   SELECT h5mem_migrate('agent.sqlite', 'agent.h5');
**   SELECT h5mem_migrate('vec.db', 'vec.h5', '{"dry_run": true}');
**
** The source is opened read-only through its own connection (a
** file:...?mode=ro URI; immutable=1 on request) and never written.  Its
** schema is recognised by ext/migrate/mig_detect.c (or named in the
** options); rows come from an SQL statement or from sqlite-vec's shadow
** tables (mig_vec0.c) as cells named after the store's columns.  Here each
** row is checked (id, text, embedding: float32, float64, JSON, int8; NaN,
** wrong dimension, empty text, duplicates) and written through the store's
** C API in transactions of `batch` rows; the store checkpoints by itself
** when its log passes its limit, and once more at the end.  The source's
** integer ids are kept, so a run cut short resumes by running it again:
** rows already in the destination count as duplicates.
**
** docs/MIGRATION.md describes the options, the report and every mapping.
** Registered SQLITE_DIRECTONLY (it writes files): not usable from
** triggers or views.
*/
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ext.h"
#include "ext_err.h"
#include "h5/h5.h"
#include "h5sql.h"
#include "migrate/mig.h"
#include "store/store.h"
#include "util/json.h"
#include "util/le.h"
#include "util/strbuf.h"
#include "util/timefmt.h"
#include "util/vecjson.h"
#include "vtab/search.h"

#define WHO "h5mem_migrate"
#define MIG_KNOWN                                                                        \
  "dry_run, overwrite, append, dim, metric, storage, index, schema, table, query, "      \
  "columns, vector_column, encoding, batch, limit, progress, progress_every, "           \
  "include_deleted, immutable, agent, embedder, declared_columns, entities, history"

/* ---- options ------------------------------------------------------------- */

/* Everything the options say; strings are sqlite3_mprintf'd copies. */
typedef struct mig_opts {
  int dry_run, overwrite, append, include_deleted, immutable;
  int no_declared; /* {"declared_columns": false} */
  int dim, metric, storage, index; /* metric, storage, index: -1 unless given */
  int encoding;                    /* MIG_ENC_*, -1 unless given */
  sqlite3_int64 batch, limit, progress_every;
  char *schema, *table, *query, *vector_column, *progress, *agent, *embedder;
  char *entities, *history; /* mem0's other files */
  char *col[MIG_NFIELD];
} mig_opts;

static void opts_free(mig_opts *o) {
  sqlite3_free(o->schema);
  sqlite3_free(o->table);
  sqlite3_free(o->query);
  sqlite3_free(o->vector_column);
  sqlite3_free(o->progress);
  sqlite3_free(o->agent);
  sqlite3_free(o->embedder);
  sqlite3_free(o->entities);
  sqlite3_free(o->history);
  for (int i = 0; i < MIG_NFIELD; i++) sqlite3_free(o->col[i]);
}

static int opt_bool(const search_opt *v, int *out) {
  if (v->type != UTIL_JSON_TRUE && v->type != UTIL_JSON_FALSE) return SQLITE_ERROR;
  *out = v->type == UTIL_JSON_TRUE;
  return SQLITE_OK;
}

static int opt_int(const search_opt *o, sqlite3_int64 lo, sqlite3_int64 hi, sqlite3_int64 *out, char **err) {
  sqlite3_int64 v = o->inum;
  if (o->type != UTIL_JSON_INTEGER || v < lo || v > hi) {
    *err = sqlite3_mprintf("expected an integer from %lld to %lld", (long long)lo, (long long)hi);
    return SQLITE_ERROR;
  }
  *out = v;
  return SQLITE_OK;
}

static int opt_str(const search_opt *v, char **out) {
  if (v->type != UTIL_JSON_TEXT) return SQLITE_ERROR;
  sqlite3_free(*out);
  *out = sqlite3_mprintf("%s", v->text);
  return *out ? SQLITE_OK : SQLITE_NOMEM;
}

/* One of names (NULL-ended) by the text value: its index, or -1. */
static int opt_pick(const search_opt *o, const char *const *names) {
  const char *v = o->text;
  if (!v) return -1;
  for (int i = 0; names[i]; i++)
    if (!sqlite3_stricmp(v, names[i])) return i;
  return -1;
}

static int column_option(void *ctx, const char *key, const search_opt *v, char **err) {
  mig_opts *o = ctx;
  (void)err;
  for (int f = 0; f < MIG_F_SKIP; f++)
    if (!strcmp(key, mig_field_name[f])) return opt_str(v, &o->col[f]);
  return SEARCH_UNKNOWN;
}

static int mig_option(void *ctx, const char *key, const search_opt *v, char **err) {
  mig_opts *o = ctx;
  sqlite3_int64 n;
  int rc = SQLITE_ERROR;
  static const char *const metrics[] = {"cosine", "l2", "dot", NULL};
  static const char *const storages[] = {"float16", "float32", "f16", "f32", NULL};
  static const char *const indexes[] = {"flat", "hnsw", "ivf", NULL};
  static const char *const encs[] = {"auto", "float32", "float64", "json", NULL};
  if (!strcmp(key, "dry_run")) return opt_bool(v, &o->dry_run);
  if (!strcmp(key, "overwrite")) return opt_bool(v, &o->overwrite);
  if (!strcmp(key, "append")) return opt_bool(v, &o->append);
  if (!strcmp(key, "include_deleted")) return opt_bool(v, &o->include_deleted);
  if (!strcmp(key, "immutable")) return opt_bool(v, &o->immutable);
  if (!strcmp(key, "declared_columns")) {
    int yes = 1;
    rc = opt_bool(v, &yes);
    o->no_declared = !yes;
    return rc;
  }
  if (!strcmp(key, "dim")) {
    if ((rc = opt_int(v, 1, 65536, &n, err)) == SQLITE_OK) o->dim = (int)n;
    return rc;
  }
  if (!strcmp(key, "batch")) return opt_int(v, 1, 1000000, &o->batch, err);
  if (!strcmp(key, "limit")) return opt_int(v, 0, LLONG_MAX, &o->limit, err);
  if (!strcmp(key, "progress_every")) return opt_int(v, 1, LLONG_MAX, &o->progress_every, err);
  if (!strcmp(key, "metric")) return (o->metric = opt_pick(v, metrics)) < 0 ? SQLITE_ERROR : SQLITE_OK;
  if (!strcmp(key, "storage")) {
    int i = opt_pick(v, storages);
    o->storage = i < 0 ? -1 : i % 2 == 0 ? STORE_F16 : STORE_F32;
    return i < 0 ? SQLITE_ERROR : SQLITE_OK;
  }
  if (!strcmp(key, "index")) return (o->index = opt_pick(v, indexes)) < 0 ? SQLITE_ERROR : SQLITE_OK;
  if (!strcmp(key, "encoding")) {
    int i = opt_pick(v, encs);
    o->encoding = i == 0 ? MIG_ENC_AUTO : i == 1 || i == 3 ? MIG_ENC_F32 : i == 2 ? MIG_ENC_F64 : -1;
    return i < 0 ? SQLITE_ERROR : SQLITE_OK;
  }
  if (!strcmp(key, "schema")) return opt_str(v, &o->schema);
  if (!strcmp(key, "table")) return opt_str(v, &o->table);
  if (!strcmp(key, "query")) return opt_str(v, &o->query);
  if (!strcmp(key, "vector_column")) return opt_str(v, &o->vector_column);
  if (!strcmp(key, "progress")) return opt_str(v, &o->progress);
  if (!strcmp(key, "agent")) return opt_str(v, &o->agent);
  if (!strcmp(key, "embedder")) return opt_str(v, &o->embedder);
  if (!strcmp(key, "entities")) return opt_str(v, &o->entities);
  if (!strcmp(key, "history")) return opt_str(v, &o->history);
  if (!strcmp(key, "columns")) {
    if (v->type != UTIL_JSON_OBJECT) return SQLITE_ERROR;
    char *e = NULL;
    rc = search_opts_object(v, "id, text, embedding, source, session, tags, tier, ts, importance, meta",
                            column_option, o, &e);
    if (rc != SQLITE_OK) *err = e;
    else sqlite3_free(e);
    return rc;
  }
  return SEARCH_UNKNOWN;
}

/* ---- the migration ------------------------------------------------------- */

/* Why rows were skipped; the report lists them in this order. */
enum {
  R_DUPLICATE, R_WRONG_DIM, R_NAN, R_EMPTY_TEXT, R_BAD_EMB, R_BAD_TEXT, R_BAD_ID, R_F16_RANGE,
  R_VEC_RANGE, R_COLUMN, R_STALE, R_OTHER, NREASON
};
static const char *const reason_name[NREASON] = {
    "duplicate", "wrong_dimension", "nan_or_inf",    "empty_text",   "bad_embedding", "bad_text",
    "bad_id",    "float16_range",   "vector_range",  "column_value", "stale_vector",  NULL};

/* Encodings seen; the report counts each. */
enum { E_F32, E_F64, E_JSON, E_I8, E_VEC0, NENC };
static const char *const enc_name[NENC] = {"float32_blob", "float64_blob", "json", "int8_blob",
                                           "vec0_float32"};

#define EXAMPLES_PER_REASON 3
#define MAX_OTHER 16

/* One migration's state.  Owns everything it points to except db, src
** (owned by the caller) and the plan (mig_plan_free). */
typedef struct mig_run {
  sqlite3 *db;  /* the connection the function runs on */
  sqlite3 *src; /* the source, read-only */
  mig_opts o;
  mig_plan plan;
  mig_reader *rd;
  store *st;   /* the destination; NULL in a dry run without one */
  int dim, metric, enc, created, resumed, existing;
  int field[MIG_NFIELD]; /* reader column of each field, or -1 */
  float *vec;
  char *srcpath, *dstpath, *key;
  /* counts */
  sqlite3_int64 read, written, skipped, no_emb, reason[NREASON], enc_seen[NENC];
  sqlite3_int64 ts_unparsed, meta_quoted, utf8_fixed, next_id, before;
  sqlite3_int64 stale; /* rows written without their stale embedding (MIG_F_STALE) */
  int complete;
  strbuf fix[MIG_NFIELD]; /* a row's strings with their invalid UTF-8 replaced */
  /* the reader's declared columns (rd->decl): the store's column each
     writes (dcol: -1 none, its values then in meta), their values, the
     record's values (rcols: the store's columns), a new store's
     declarations */
  int dcol[STORE_COLS_MAX + 1];
  store_val dval[STORE_COLS_MAX + 1], rcols[STORE_COLS_MAX];
  strbuf dfix[STORE_COLS_MAX + 1];
  char dnum[STORE_COLS_MAX + 1][40];
  store_coldef newcols[STORE_COLS_MAX];
  int nnew;
  char other_name[MAX_OTHER][32];
  sqlite3_int64 other_count[MAX_OTHER];
  int nother, stopped_by_limit;
  int remove_dest; /* a destination this run created and wrote nothing to: removed at the end */
  const char *dim_from; /* where dim came from, for the report */
  sqlite3_str *examples;
  int nexamples, nex[R_OTHER + MAX_OTHER];  /* examples kept: in all, of each reason */
  char first[R_OTHER + MAX_OTHER][240];     /* each reason's first example */
  double t0;
  FILE *progress;
  char err[1600];
} mig_run;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Count a skipped row under reason r (or the named reason why when r is
** R_OTHER), keeping the first EXAMPLES_PER_REASON of each reason as
** examples; the first of each also for the error of a run that wrote
** nothing (first[]). */
static void skip(mig_run *m, int r, const char *why, const mig_cell *id, const char *detail) {
  m->skipped++;
  const char *name = reason_name[r];
  int slot = r; /* its place in nex[] and first[] */
  if (r == R_OTHER) {
    int i = 0;
    while (i < m->nother && strcmp(m->other_name[i], why)) i++;
    if (i == m->nother && i < MAX_OTHER) snprintf(m->other_name[m->nother++], 32, "%s", why);
    if (i < MAX_OTHER) m->other_count[i]++;
    name = why;
    slot = i < MAX_OTHER ? R_OTHER + i : -1;
  } else {
    m->reason[r]++;
  }
  if (slot < 0 || m->nex[slot] >= EXAMPLES_PER_REASON) return;
  if (!m->nex[slot]++) {
    if (id && id->type == SQLITE_INTEGER)
      snprintf(m->first[slot], sizeof m->first[0], "row %lld, id %lld%s%s", (long long)m->read,
               (long long)id->i, detail ? ": " : "", detail ? detail : "");
    else
      snprintf(m->first[slot], sizeof m->first[0], "row %lld%s%s", (long long)m->read,
               detail ? ": " : "", detail ? detail : "");
  }
  sqlite3_str_appendf(m->examples, "%s{\"id\":", m->nexamples++ ? "," : "");
  if (id && id->type == SQLITE_INTEGER) sqlite3_str_appendf(m->examples, "%lld", (long long)id->i);
  else sqlite3_str_appendall(m->examples, "null");
  sqlite3_str_appendf(m->examples, ",\"row\":%lld,\"reason\":", (long long)m->read);
  mig_json_str(m->examples, name, strlen(name));
  if (detail) {
    sqlite3_str_appendall(m->examples, ",\"detail\":");
    mig_json_str(m->examples, detail, strlen(detail));
  }
  sqlite3_str_appendchar(m->examples, 1, '}');
}

static const mig_cell null_cell = {SQLITE_NULL, 0, 0, NULL, 0};

static const mig_cell *cell(const mig_run *m, int f) {
  return m->field[f] >= 0 ? &m->rd->cells[m->field[f]] : &null_cell;
}

/* ---- embeddings ---- */

/* The number of values in an embedding cell under encoding enc (0 when it
** has none or cannot be read), for the dimension of a new store. */
static int emb_count(const mig_cell *c, int enc) {
  if (c->type == SQLITE_TEXT) {
    float *f = NULL;
    size_t n = 0;
    char e[8];
    if (util_json_to_f32(c->p, (size_t)c->n, &f, &n, e, sizeof e)) return 0;
    free(f);
    return n <= 65536 ? (int)n : 0;
  }
  if (c->type != SQLITE_BLOB || c->n <= 0) return 0;
  int n = enc == MIG_ENC_F64 ? c->n / 8 : enc == MIG_ENC_I8 ? c->n : c->n / 4;
  return n <= 65536 ? n : 0;
}

/* The embedding cell into m->vec: *has 1 when there is one.  Returns -1
** when usable, else the reason to skip the row (detail in buf). */
static int emb_decode(mig_run *m, const mig_cell *c, int *has, char *buf, size_t n) {
  int dim = m->dim, enc = m->enc, e = -1;
  float *v = m->vec;
  *has = 0;
  if (c->type == SQLITE_NULL || (c->type == SQLITE_BLOB && c->n == 0)) return -1;
  if (c->type == SQLITE_TEXT) {
    float *f = NULL;
    size_t cnt = 0;
    if (util_json_to_f32(c->p, (size_t)c->n, &f, &cnt, buf, n)) return R_BAD_EMB;
    if (cnt == 0) return -1; /* "[]": no embedding */
    if (cnt != (size_t)dim) {
      free(f);
      snprintf(buf, n, "%zu values; the store has dim=%d", cnt, dim);
      return R_WRONG_DIM;
    }
    memcpy(v, f, (size_t)dim * 4);
    free(f);
    e = E_JSON;
  } else if (c->type == SQLITE_BLOB) {
    const uint8_t *b = c->p;
    size_t len = (size_t)c->n;
    if (enc == MIG_ENC_AUTO) enc = len == (size_t)dim * 8 ? MIG_ENC_F64 : MIG_ENC_F32;
    size_t esz = enc == MIG_ENC_F64 ? 8 : enc == MIG_ENC_I8 ? 1 : 4;
    if (len % esz) {
      snprintf(buf, n, "a BLOB of %zu bytes is not whole %s values", len,
               esz == 8 ? "float64" : "float32");
      return R_BAD_EMB;
    }
    if (len / esz != (size_t)dim) {
      snprintf(buf, n, "%zu %s values; the store has dim=%d", len / esz,
               esz == 8 ? "float64" : esz == 1 ? "int8" : "float32", dim);
      return R_WRONG_DIM;
    }
    if (esz == 8) {
      for (int i = 0; i < dim; i++) v[i] = (float)util_get_le_f64(b + 8 * i);
      e = E_F64;
    } else if (esz == 1) {
      for (int i = 0; i < dim; i++) v[i] = (float)(int8_t)b[i];
      e = E_I8;
    } else {
      for (int i = 0; i < dim; i++) v[i] = util_get_le_f32(b + 4 * i);
      e = enc == MIG_ENC_VEC0 ? E_VEC0 : E_F32;
    }
  } else {
    snprintf(buf, n, "an %s where an embedding was expected",
             c->type == SQLITE_INTEGER ? "INTEGER" : "REAL");
    return R_BAD_EMB;
  }
  for (int i = 0; i < dim; i++) {
    if (!isfinite(v[i])) {
      snprintf(buf, n, "element %d is %s", i, isnan(v[i]) ? "NaN" : "infinite");
      return R_NAN;
    }
    if (m->st && store_storage(m->st) == STORE_F16 && fabsf(v[i]) > STORE_F16_MAX) {
      snprintf(buf, n, "element %d (%g) is outside float16's range", i, (double)v[i]);
      return R_F16_RANGE;
    }
  }
  /* (what the search cannot score: as the table's INSERT) */
  if (search_knn_vec_range(m->st ? store_metric(m->st) : m->metric, v, dim, buf, n)) return R_VEC_RANGE;
  m->enc_seen[e]++;
  *has = 1;
  return -1;
}

/* ---- other columns ---- */

/* A text value (TEXT, a BLOB of text, or a number written out) into *s /
** *n (NULL for NULL), ill-formed UTF-8 replaced in fix: mig_utf8's
** result (0, 1 repaired, -1 a NUL byte unless nul_ok, -2 out of memory). */
static int text_of(const mig_cell *c, int nul_ok, char *num, size_t numlen, strbuf *fix, const char **s,
                   size_t *n) {
  *s = NULL;
  *n = 0;
  switch (c->type) {
  case SQLITE_NULL: return 0;
  case SQLITE_INTEGER: *n = (size_t)snprintf(num, numlen, "%lld", (long long)c->i); *s = num; return 0;
  case SQLITE_FLOAT: *n = (size_t)snprintf(num, numlen, "%.17g", c->d); *s = num; return 0;
  default: return mig_utf8(c->n ? c->p : "", (size_t)c->n, nul_ok, fix, s, n);
  }
}

/* A time cell as unix seconds (NULL: now); 0, or -1 when unreadable. */
static int time_of(const mig_cell *c, int64_t *out) {
  switch (c->type) {
  case SQLITE_NULL: *out = (int64_t)time(NULL); return 0;
  case SQLITE_INTEGER: *out = c->i; return 0;
  case SQLITE_FLOAT:
    if (!(fabs(c->d) < 9.2e18)) return -1;
    *out = (int64_t)floor(c->d);
    return 0;
  case SQLITE_TEXT: {
    if (util_iso8601_parse(c->p, (size_t)c->n, out, NULL, 0) == 0) return 0;
    char buf[64], *end;
    if (c->n <= 0 || c->n >= (int)sizeof buf) return -1;
    memcpy(buf, c->p, (size_t)c->n);
    buf[c->n] = 0;
    double d = strtod(buf, &end);
    if (end == buf || *end || !(fabs(d) < 9.2e18)) return -1;
    *out = (int64_t)floor(d);
    return 0;
  }
  default: return -1;
  }
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strchr(" \t\n\r", s[i])) return 0;
  return 1;
}

/* Declared column k's cell c (the reader's decl[k]) as the store takes it
** into m->dval[k], with the checks the store makes (store_cols_check):
** -1 when usable, else the reason to skip the row (detail in buf).
** *fixed: set when invalid UTF-8 was repaired; -2: out of memory. */
static int decl_value(mig_run *m, int k, const mig_cell *c, int *fixed, char *buf, size_t n) {
  const store_coldef *d = &m->rd->decl[k].def;
  store_val *v = &m->dval[k];
  static const char *const tname[] = {"", "an integer", "a real", "text", "a blob", "NULL"};
  int t = c->type;
  memset(v, 0, sizeof *v);
  if (t == SQLITE_NULL) return -1;
  switch (d->type) {
  case STORE_T_INTEGER:
  case STORE_T_BOOLEAN:
    if (t == SQLITE_FLOAT && c->d == floor(c->d) && c->d >= -9223372036854775808.0 &&
        c->d < 9223372036854775808.0) /* an integral real: that integer */
      v->i = (int64_t)c->d;
    else if (t == SQLITE_INTEGER)
      v->i = c->i;
    else
      goto mismatch;
    if (d->type == STORE_T_BOOLEAN && v->i != 0 && v->i != 1) {
      snprintf(buf, n, "%s: a boolean is 0 or 1, not %lld", d->name, (long long)v->i);
      return R_COLUMN;
    }
    if (v->i == INT64_MIN) {
      snprintf(buf, n, "%s: -9223372036854775808 is the file's NULL; not storable", d->name);
      return R_COLUMN;
    }
    break;
  case STORE_T_FLOAT:
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) goto mismatch;
    v->f = t == SQLITE_INTEGER ? (double)c->i : c->d;
    if (!isfinite(v->f)) {
      snprintf(buf, n, "%s: %g is not a finite number", d->name, v->f);
      return R_COLUMN;
    }
    break;
  case STORE_T_TEXT: {
    const char *p;
    size_t len;
    int r = text_of(c, 0, m->dnum[k], sizeof m->dnum[k], &m->dfix[k], &p, &len);
    if (r == -2) return -2;
    if (r < 0) {
      snprintf(buf, n, "%s holds a NUL byte", d->name);
      return R_BAD_TEXT;
    }
    *fixed |= r;
    v->p = p ? p : "";
    v->n = len;
    break;
  }
  case STORE_T_BLOB:
    if (t != SQLITE_BLOB && t != SQLITE_TEXT) goto mismatch;
    v->p = c->n ? c->p : "";
    v->n = (size_t)c->n;
    break;
  default: { /* a vector: its bytes, as the source keeps them */
    size_t w = store_coldef_width(d);
    if (t != SQLITE_BLOB || (size_t)c->n != w) {
      snprintf(buf, n, "%s: expected %zu bytes of %s[%d], got %s of %d bytes", d->name, w,
               d->vtype == STORE_VT_F32 ? "float" : d->vtype == STORE_VT_I8 ? "int8" : "bit", d->dim,
               tname[t < 1 || t > 5 ? 5 : t], t == SQLITE_BLOB || t == SQLITE_TEXT ? c->n : 0);
      return R_COLUMN;
    }
    for (int i = 0; d->vtype == STORE_VT_F32 && i < d->dim; i++) {
      float f = util_get_le_f32((const uint8_t *)c->p + 4 * (size_t)i);
      if (!isfinite(f)) {
        snprintf(buf, n, "%s: element %d is %s", d->name, i, isnan(f) ? "NaN" : "infinite");
        return R_NAN;
      }
    }
    v->p = c->p;
    v->n = w;
  }
  }
  v->type = d->type;
  return -1;
mismatch:
  snprintf(buf, n, "%s: expected %s, got %s", d->name,
           d->type == STORE_T_FLOAT ? "a number" : d->type == STORE_T_BLOB ? "a blob or text"
           : d->type == STORE_T_BOOLEAN ? "a boolean (0 or 1)" : "an integer",
           tname[t < 1 || t > 5 ? 5 : t]);
  return R_COLUMN;
}

/* The members begun in s ("{" and members, not closed) followed by meta's:
** the rest of meta when it is a JSON object, else meta as member "meta"
** (none when NULL); s finished (NULL out of memory). */
static char *meta_after(sqlite3_str *s, const char *meta, size_t len) {
  size_t i = meta ? util_json_ws(meta, 0, len) : 0;
  if (meta && util_json_is_object(meta, len)) {
    i = util_json_ws(meta, i + 1, len); /* past '{' */
    if (meta[i] != '}') sqlite3_str_appendchar(s, 1, ',');
    sqlite3_str_append(s, meta + i, (int)(len - i));
  } else {
    if (meta) {
      sqlite3_str_appendall(s, ",\"meta\":");
      sqlite3_str_append(s, meta + i, (int)(len - i));
    }
    sqlite3_str_appendchar(s, 1, '}');
  }
  return sqlite3_str_finish(s);
}

/* meta with the source's own id c first, as "source_id" (a JSON number
** or string, its invalid UTF-8 replaced): {"source_id": id, meta's
** members...} when meta is an object (one with a source_id of its own is
** kept as it is), {"source_id": id, "meta": meta} when it is other JSON,
** {"source_id": id} when there is none.  Into *out (sqlite3_malloc'd);
** 0, 1 when the id was repaired, -1 out of memory. */
static int with_source_id(mig_run *m, const mig_cell *c, const char *meta, size_t len, char **out) {
  char num[40];
  const char *id;
  size_t n, v0, v1;
  int t = text_of(c, 1, num, sizeof num, &m->fix[MIG_F_SOURCE_ID], &id, &n);
  if (t < 0) return -1;
  int object = meta && util_json_is_object(meta, len);
  if (object && util_json_at_path(meta, len, "source_id", &v0, &v1) == 0) {
    *out = sqlite3_mprintf("%.*s", (int)len, meta);
    return *out ? 0 : -1;
  }
  sqlite3_str *s = sqlite3_str_new(NULL);
  sqlite3_str_appendall(s, "{\"source_id\":");
  if (c->type == SQLITE_INTEGER || c->type == SQLITE_FLOAT) sqlite3_str_append(s, id, (int)n);
  else mig_json_str(s, id, n);
  *out = meta_after(s, meta, len);
  return *out ? t : -1;
}

/* The reader's declared columns that the destination has no column for
** (in_meta), put first in meta as members named like the source's columns:
** into *out (sqlite3_malloc'd), or *out NULL when there are none.  A
** reader that makes meta itself (vec0's) has put them there already.
** 0, or -1 out of memory. */
static int decls_into_meta(mig_run *m, const char *meta, size_t len, char **out) {
  *out = NULL;
  if (m->rd->meta_has_decls) return 0;
  sqlite3_str *s = NULL;
  for (int k = 0; k < m->rd->ndecl; k++) {
    const mig_cell *c = &m->rd->dcells[k];
    if (!m->rd->decl[k].in_meta || c->type == SQLITE_NULL) continue;
    if (!s) s = sqlite3_str_new(NULL);
    sqlite3_str_appendchar(s, 1, sqlite3_str_length(s) ? ',' : '{');
    mig_json_str(s, m->rd->decl[k].src, strlen(m->rd->decl[k].src));
    sqlite3_str_appendchar(s, 1, ':');
    if (c->type == SQLITE_INTEGER) sqlite3_str_appendf(s, "%lld", (long long)c->i);
    else if (c->type == SQLITE_FLOAT && isfinite(c->d)) sqlite3_str_appendf(s, "%!.17g", c->d);
    else if (c->type == SQLITE_TEXT) {
      const char *t;
      size_t n;
      if (mig_utf8(c->n ? c->p : "", (size_t)c->n, 1, &m->dfix[k], &t, &n) == -2) {
        sqlite3_free(sqlite3_str_finish(s));
        return -1;
      }
      mig_json_str(s, t, n);
    } else sqlite3_str_appendall(s, "null");
  }
  if (!s) return 0;
  *out = meta_after(s, meta, len);
  return *out ? 0 : -1;
}

/* One row of the reader into the store (or only checked, in a dry run).
** Returns SQLITE_OK (written or skipped) or an error of the store. */
static int migrate_row(mig_run *m) {
  const mig_cell *idc = cell(m, MIG_F_ID), *sk = cell(m, MIG_F_SKIP);
  char detail[200], num[MIG_NFIELD][40];
  if (sk->type != SQLITE_NULL) { /* "reason" or "reason: detail" */
    char why[32];
    int n = sk->type == SQLITE_TEXT ? sk->n : 0, k = 0;
    const char *z = n ? sk->p : "";
    while (k < n && z[k] != ':') k++;
    snprintf(why, sizeof why, "%.*s", k, z);
    if (k + 2 <= n) snprintf(detail, sizeof detail, "%.*s", n - k - 2, z + k + 2);
    skip(m, R_OTHER, why[0] ? why : "skipped", idc, k + 2 <= n ? detail : NULL);
    return SQLITE_OK;
  }
  store_rec r;
  memset(&r, 0, sizeof r);
  /* id */
  if (m->plan.ids) {
    if (idc->type == SQLITE_INTEGER) r.id = idc->i;
    else if (idc->type == SQLITE_FLOAT && floor(idc->d) == idc->d && fabs(idc->d) < 9.2e18)
      r.id = (int64_t)idc->d;
    else {
      skip(m, R_BAD_ID, NULL, idc, "the id is not an integer");
      return SQLITE_OK;
    }
    uint64_t pos;
    if (m->st && store_find(m->st, r.id, &pos) == STORE_OK) {
      skip(m, R_DUPLICATE, NULL, idc, "the id is in the destination already");
      return SQLITE_OK;
    }
  } else {
    if (m->next_id == INT64_MAX) {
      snprintf(m->err, sizeof m->err, "writing %s: no ids left (new ids are assigned after the "
               "largest, %lld)", m->dstpath, (long long)m->next_id);
      return SQLITE_FULL;
    }
    r.id = ++m->next_id;
  }
  /* text, and the other strings */
  const char **dst[] = {&r.text, &r.source, &r.session, &r.tags, &r.tier, &r.meta};
  size_t *dlen[] = {&r.text_len, &r.source_len, &r.session_len, &r.tags_len, &r.tier_len, &r.meta_len};
  static const int fld[] = {MIG_F_TEXT, MIG_F_SOURCE, MIG_F_SESSION, MIG_F_TAGS, MIG_F_TIER, MIG_F_META};
  int fixed = 0;
  for (int k = 0; k < 6; k++) {
    int t = text_of(cell(m, fld[k]), 0, num[fld[k]], sizeof num[0], &m->fix[fld[k]], dst[k], dlen[k]);
    if (t == -2) return SQLITE_NOMEM;
    if (t < 0) {
      const mig_cell *c = cell(m, fld[k]);
      const char *z = memchr(c->p, 0, (size_t)c->n);
      snprintf(detail, sizeof detail, "%s holds a NUL byte (at byte %lld), which no HDF5 string "
               "can hold", mig_field_name[fld[k]], z ? (long long)(z - (const char *)c->p) : 0LL);
      skip(m, R_BAD_TEXT, NULL, idc, detail);
      return SQLITE_OK;
    }
    fixed |= t;
  }
  const mig_cell *tp = cell(m, MIG_F_TEXTPATH), *stale = cell(m, MIG_F_STALE);
  char *owned = NULL; /* the text, when rebuilt here (sqlite3_malloc'd) */
  if (tp->type == SQLITE_TEXT && r.text) { /* LangGraph: the text embedded for field_name */
    int t = mig_langgraph_text(r.text, r.text_len, tp->p, (size_t)tp->n, &owned, &r.text_len);
    if (t == -2) return SQLITE_NOMEM;
    r.text = t == 1 ? owned : NULL;
    const char *z = r.text ? memchr(r.text, 0, r.text_len) : NULL;
    if (z) { /* (a \u0000 in the value's JSON) */
      snprintf(detail, sizeof detail, "text holds a NUL byte (at byte %lld), which no HDF5 string can hold",
               (long long)(z - r.text));
      sqlite3_free(owned);
      skip(m, R_BAD_TEXT, NULL, idc, detail);
      return SQLITE_OK;
    }
  }
  if (m->plan.has_text && (!r.text || blank(r.text, r.text_len))) {
    int gone = tp->type == SQLITE_TEXT && !r.text && cell(m, MIG_F_TEXT)->type != SQLITE_NULL;
    if (gone && stale->type == SQLITE_TEXT)
      snprintf(detail, sizeof detail, "the field %.*s is not in the item's value now: %.*s", tp->n,
               (const char *)tp->p, stale->n, (const char *)stale->p);
    else if (gone)
      snprintf(detail, sizeof detail, "the field %.*s is not in the value", tp->n, (const char *)tp->p);
    else
      snprintf(detail, sizeof detail, "the text is %s", !r.text ? "NULL" : r.text_len ? "white space only"
                                                                        : "empty");
    sqlite3_free(owned);
    if (gone && stale->type == SQLITE_TEXT) skip(m, R_STALE, NULL, idc, detail);
    else skip(m, R_EMPTY_TEXT, NULL, idc, detail);
    return SQLITE_OK;
  }
  /* the embedding */
  int has = 0;
  int why = emb_decode(m, cell(m, MIG_F_EMB), &has, detail, sizeof detail);
  if (why >= 0) {
    sqlite3_free(owned);
    skip(m, why, NULL, idc, detail);
    return SQLITE_OK;
  }
  r.emb = has ? m->vec : NULL;
  /* the declared columns, into the store's (rcols) */
  int ns = m->st ? store_ncols(m->st) : 0;
  for (int c = 0; c < ns; c++) memset(&m->rcols[c], 0, sizeof m->rcols[c]);
  for (int k = 0; k < m->rd->ndecl; k++) {
    if (m->rd->decl[k].in_meta) continue;
    int dfixed = 0;
    why = decl_value(m, k, &m->rd->dcells[k], &dfixed, detail, sizeof detail);
    if (why == -2) {
      sqlite3_free(owned);
      return SQLITE_NOMEM;
    }
    if (why >= 0) {
      sqlite3_free(owned);
      skip(m, why, NULL, idc, detail);
      return SQLITE_OK;
    }
    fixed |= dfixed;
    if (m->dcol[k] >= 0 && m->dcol[k] < ns) m->rcols[m->dcol[k]] = m->dval[k];
  }
  r.cols = ns ? m->rcols : NULL;
  if (!has) m->no_emb++;
  /* meta: JSON as it is; anything else kept as a JSON string */
  char *quoted = NULL;
  if (r.meta && util_json_valid(r.meta, r.meta_len, NULL, 0)) {
    sqlite3_str *q = sqlite3_str_new(NULL);
    mig_json_str(q, r.meta, r.meta_len);
    r.meta_len = (size_t)sqlite3_str_length(q);
    quoted = sqlite3_str_finish(q);
    if (!quoted) {
      sqlite3_free(owned);
      return SQLITE_NOMEM;
    }
    r.meta = quoted;
    m->meta_quoted++;
  }
  /* the source's own id (not an integer) first in meta, as source_id */
  char *withid = NULL;
  const mig_cell *sid = cell(m, MIG_F_SOURCE_ID);
  if (sid->type != SQLITE_NULL) {
    int t = with_source_id(m, sid, r.meta, r.meta_len, &withid);
    if (t < 0) {
      sqlite3_free(owned);
      sqlite3_free(quoted);
      return SQLITE_NOMEM;
    }
    fixed |= t;
    r.meta = withid;
    r.meta_len = strlen(withid);
  }
  char *withcols = NULL;
  if (decls_into_meta(m, r.meta, r.meta_len, &withcols)) {
    sqlite3_free(owned);
    sqlite3_free(quoted);
    sqlite3_free(withid);
    return SQLITE_NOMEM;
  }
  if (withcols) {
    r.meta = withcols;
    r.meta_len = strlen(withcols);
  }
  /* times and numbers */
  if (time_of(cell(m, MIG_F_TS), &r.ts)) {
    r.ts = (int64_t)time(NULL);
    m->ts_unparsed++;
  }
  r.last_access = STORE_NULL_TIME;
  const mig_cell *imp = cell(m, MIG_F_IMPORTANCE);
  r.importance = (imp->type == SQLITE_INTEGER || imp->type == SQLITE_FLOAT) && isfinite(imp->d) ? imp->d : NAN;
  int rc = STORE_OK;
  if (m->st && !m->o.dry_run) rc = store_put(m->st, &r);
  sqlite3_free(owned);
  sqlite3_free(quoted);
  sqlite3_free(withid);
  sqlite3_free(withcols);
  if (rc == STORE_EEXISTS) {
    skip(m, R_DUPLICATE, NULL, idc, "the id is in the destination already");
    return SQLITE_OK;
  }
  if (rc != STORE_OK) {
    snprintf(m->err, sizeof m->err, "writing %s: %s", m->dstpath, store_errmsg(m->st));
    return ext_err_rc(rc);
  }
  m->written++;
  m->utf8_fixed += fixed;
  m->stale += stale->type != SQLITE_NULL;
  return SQLITE_OK;
}

/* ---- source and destination --------------------------------------------- */

/* The code for the operating system refusing (errno e) what h5mem_migrate
** does to files itself (finding the source, removing the destination to
** overwrite it, opening the progress file): lib/'s (util_err_write), as
** SQLite's, so SQLITE_FULL when there is no space and SQLITE_ERROR
** otherwise, as for the store's files (ext_err.h). */
static int os_rc(int e) { return ext_err_rc(util_err_write(e)); }

/* An SQLite code met reading the source (or any, for the result): the
** operating system's refusals, SQLITE_CANTOPEN and SQLITE_IOERR (extended
** codes too), are SQLITE_ERROR as lib/'s UTIL_EIO is (ext_err.h: SQLite
** answers SQLITE_IOERR by rolling back the caller's transaction); the
** others (SQLITE_NOTADB, SQLITE_CORRUPT, SQLITE_BUSY, ...) stay. */
static int source_rc(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_CANTOPEN || primary == SQLITE_IOERR ? SQLITE_ERROR : rc;
}

/* The source opened read-only: file:<path>?mode=ro[&immutable=1]. */
static int open_source(mig_run *m, const char *path) {
  char *uri = mig_ro_uri(path, m->o.immutable);
  if (!uri) return SQLITE_NOMEM;
  int rc = sqlite3_open_v2(uri, &m->src, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
  sqlite3_free(uri);
  if (rc == SQLITE_OK) {
    /* reading sqlite_master proves it is a database */
    rc = sqlite3_exec(m->src, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL);
  }
  if (rc != SQLITE_OK)
    snprintf(m->err, sizeof m->err, "cannot open the source %s read-only: %s", path,
             m->src ? sqlite3_errmsg(m->src) : "out of memory");
  return rc;
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

/* Where the reader's declared columns go.  st NULL: a new store, which
** declares each of them (m->newcols).  Else the existing destination st:
** each to the store's column of its name, which must hold the same type
** (vectors: element type and dimension); one the store lacks goes into
** meta's JSON (a vector column: refused, it has no place there). */
static int map_columns(mig_run *m, store *st) {
  m->nnew = 0;
  for (int k = 0; k < m->rd->ndecl; k++) {
    mig_decl *d = &m->rd->decl[k];
    d->in_meta = 0;
    m->dcol[k] = -1;
    if (!st) {
      m->dcol[k] = m->nnew;
      m->newcols[m->nnew++] = d->def;
      continue;
    }
    int c = store_col_find(st, d->def.name, strlen(d->def.name));
    char want[200], have[200];
    store_coldef_format(&d->def, want, sizeof want);
    if (c < 0 && d->def.type == STORE_T_VECTOR) {
      snprintf(m->err, sizeof m->err, "the destination %s has no column %s for the source's vector "
               "column %s (%s): migrate into a new store, or give {\"declared_columns\": false} to "
               "migrate one vector column alone", m->dstpath, d->def.name, d->src, want);
      return SQLITE_ERROR;
    }
    if (c < 0) {
      d->in_meta = 1;
      if (d->def.role == STORE_R_PKEY)
        m->plan.ids_from = m->plan.vec0 ? "the vec0 rowid (the text primary key in meta)"
                                        : "the source's rowid (its text key in meta)";
      mig_note(&m->plan, "the destination has no column %s: the source's column %s goes into meta",
               d->def.name, d->src);
      continue;
    }
    const store_coldef *e = store_col(st, c);
    store_coldef_format(e, have, sizeof have);
    if (e->type != d->def.type || (e->type == STORE_T_VECTOR && (e->vtype != d->def.vtype || e->dim != d->def.dim))) {
      snprintf(m->err, sizeof m->err, "the destination %s has the column '%s'; the source's column %s "
               "is '%s'", m->dstpath, have, d->src, want);
      return SQLITE_ERROR;
    }
    m->dcol[k] = c;
  }
  return SQLITE_OK;
}

/* The destination: opened, created, replaced or refused.  Sets m->st (NULL
** in a dry run with no destination yet). */
static int open_dest(mig_run *m) {
  char err[512];
  int exists = file_exists(m->dstpath);
  if (exists) {
    store_opts oo;
    memset(&oo, 0, sizeof oo); /* dim 0: open only */
    oo.sync = STORE_SYNC_NORMAL;
    int sr = store_open(m->dstpath, &oo, m->o.dry_run, &m->st, err, sizeof err);
    if (sr != STORE_OK) {
      snprintf(m->err, sizeof m->err, "the destination %s exists and is not an h5mem store "
               "that can be opened (%s); it is left alone", m->dstpath, err);
      return ext_err_rc(sr);
    }
    m->existing = 1;
    uint64_t n = store_count(m->st);
    char key[4096];
    int same = store_attr(m->st, "migrated_source", key, sizeof key) == STORE_OK && !strcmp(key, m->key);
    if (n > 0 && m->o.overwrite) {
      if (m->o.dry_run) {
        store_close(m->st);
        m->st = NULL; /* a dry run: as if replaced */
      } else {
        store_close(m->st);
        m->st = NULL;
        char *wal = sqlite3_mprintf("%s-wal", m->dstpath);
        if (!wal) return SQLITE_NOMEM;
        if (unlink(m->dstpath) != 0 || (unlink(wal) != 0 && errno != ENOENT)) {
          int e = errno;
          snprintf(m->err, sizeof m->err, "cannot remove %s to overwrite it: %s", m->dstpath, strerror(e));
          sqlite3_free(wal);
          return os_rc(e);
        }
        sqlite3_free(wal);
        exists = 0;
      }
      m->existing = 0;
    } else if (n > 0 && !m->o.append && !same) {
      snprintf(m->err, sizeof m->err, "the destination %s already holds %llu records: give "
               "{\"append\": true} to add to it or {\"overwrite\": true} to replace it",
               m->dstpath, (unsigned long long)n);
      return SQLITE_ERROR;
    } else {
      m->resumed = n > 0 && same;
      if (!m->dim) m->dim = store_dim(m->st);
      if (m->dim != store_dim(m->st)) {
        snprintf(m->err, sizeof m->err, "the destination %s has dim=%d; the source has dim=%d",
                 m->dstpath, store_dim(m->st), m->dim);
        return SQLITE_ERROR;
      }
      m->before = (sqlite3_int64)n;
      m->next_id = store_max_id(m->st);
      return map_columns(m, m->st);
    }
  }
  if (m->o.dry_run || exists) return SQLITE_OK;
  if (!m->dim) {
    snprintf(m->err, sizeof m->err, "the source has no embedding to take the dimension from: "
             "give {\"dim\": N}");
    return SQLITE_ERROR;
  }
  store_opts so;
  memset(&so, 0, sizeof so);
  so.dim = m->dim;
  so.metric = m->metric;
  so.storage = m->o.storage >= 0 ? m->o.storage : STORE_F32;
  /* normal: the log is fdatasync'ed every 100 ms and at checkpoints; a
     killed process loses nothing, a crashed machine at most the last
     batches, which running the migration again writes */
  so.sync = STORE_SYNC_NORMAL;
  so.index = m->o.index >= 0 ? m->o.index : STORE_INDEX_FLAT;
  so.agent = m->o.agent;
  so.embedder = m->o.embedder ? m->o.embedder : m->plan.embedder;
  so.cols = m->nnew ? m->newcols : NULL;
  so.ncols = m->nnew;
  /* provenance: where, what and when; the plan's own (OpenClaw's meta) */
  char when[UTIL_ISO8601_BUFSIZE];
  util_iso8601_format((int64_t)time(NULL), when);
  const char *attrs[2 * (MIG_MAX_ATTRS + 4) + 1];
  int k = 0;
  attrs[k++] = "migrated_source", attrs[k++] = m->key;
  attrs[k++] = "migrated_from", attrs[k++] = m->srcpath;
  attrs[k++] = "migrated_schema", attrs[k++] = m->plan.schema;
  attrs[k++] = "migrated_at", attrs[k++] = when;
  for (int i = 0; m->plan.attrs[i]; i++) attrs[k++] = m->plan.attrs[i];
  attrs[k] = NULL;
  so.attrs = attrs;
  int sr = store_open(m->dstpath, &so, 0, &m->st, err, sizeof err);
  if (sr != STORE_OK) {
    snprintf(m->err, sizeof m->err, "cannot create %s: %s", m->dstpath, err);
    return ext_err_rc(sr);
  }
  m->created = 1;
  return SQLITE_OK;
}

/* The dimension from the first embedding in the source (0: none). */
static int probe_dim(mig_run *m) {
  char *err = NULL;
  int dim = 0, rc;
  while (!dim && (rc = m->rd->next(m->rd, &err)) == SQLITE_ROW)
    if (cell(m, MIG_F_SKIP)->type == SQLITE_NULL) dim = emb_count(cell(m, MIG_F_EMB), m->enc);
  sqlite3_free(err);
  err = NULL;
  m->rd->rewind(m->rd, &err);
  sqlite3_free(err);
  return dim;
}

/* ---- progress and report ---------------------------------------------- */

static void progress_line(mig_run *m, int done) {
  if (!m->progress) return;
  fprintf(m->progress, "{\"rows_read\":%lld,\"rows_written\":%lld,\"rows_skipped\":%lld,"
          "\"seconds\":%.3f%s}\n", (long long)m->read, (long long)m->written,
          (long long)m->skipped, now_s() - m->t0, done ? ",\"done\":true" : "");
  fflush(m->progress);
}

static char *report(mig_run *m) {
  sqlite3_str *s = sqlite3_str_new(m->db);
  double secs = now_s() - m->t0;
  sqlite3_str_appendall(s, "{\"source\":");
  mig_json_str(s, m->srcpath, strlen(m->srcpath));
  sqlite3_str_appendall(s, ",\"destination\":");
  mig_json_str(s, m->dstpath, strlen(m->dstpath));
  sqlite3_str_appendf(s, ",\"schema\":\"%s\",\"based_on\":", m->plan.schema);
  mig_json_str(s, m->plan.based_on ? m->plan.based_on : "", m->plan.based_on ? strlen(m->plan.based_on) : 0);
  sqlite3_str_appendall(s, ",\"table\":");
  mig_json_str(s, m->plan.table ? m->plan.table : "", m->plan.table ? strlen(m->plan.table) : 0);
  sqlite3_str_appendf(s, ",\"dry_run\":%s", m->o.dry_run ? "true" : "false");
  sqlite3_str_appendf(s, ",\"complete\":%s", m->complete ? "true" : "false");
  sqlite3_str_appendf(s, ",\"rows_read\":%lld,\"rows_written\":%lld,\"rows_skipped\":%lld",
                      (long long)m->read, (long long)m->written, (long long)m->skipped);
  sqlite3_str_appendall(s, ",\"skipped\":{");
  int first = 1;
  for (int r = 0; r < R_OTHER; r++) {
    if (!m->reason[r] && r > R_BAD_EMB) continue;
    sqlite3_str_appendf(s, "%s\"%s\":%lld", first ? "" : ",", reason_name[r], (long long)m->reason[r]);
    first = 0;
  }
  for (int i = 0; i < m->nother; i++) {
    sqlite3_str_appendchar(s, 1, ',');
    mig_json_str(s, m->other_name[i], strlen(m->other_name[i]));
    sqlite3_str_appendf(s, ":%lld", (long long)m->other_count[i]);
  }
  char *ex = sqlite3_str_finish(m->examples);
  m->examples = NULL;
  sqlite3_str_appendf(s, "},\"skipped_examples\":[%s]", ex ? ex : "");
  sqlite3_free(ex);
  sqlite3_str_appendf(s, ",\"without_embedding\":%lld,\"dim\":%d,\"dim_from\":\"%s\"",
                      (long long)m->no_emb, m->dim, m->dim_from ? m->dim_from : "none");
  sqlite3_str_appendall(s, ",\"embedding_encodings\":{");
  first = 1;
  for (int e = 0; e < NENC; e++) {
    if (!m->enc_seen[e]) continue;
    sqlite3_str_appendf(s, "%s\"%s\":%lld", first ? "" : ",", enc_name[e], (long long)m->enc_seen[e]);
    first = 0;
  }
  sqlite3_str_appendf(s, "},\"ids\":\"%s\"", m->plan.ids_from ? m->plan.ids_from : "");
  sqlite3_str_appendf(s, ",\"resumable\":%s,\"resumed\":%s", m->plan.ids ? "true" : "false",
                      m->resumed ? "true" : "false");
  if (m->st) {
    sqlite3_str_appendf(s, ",\"store\":{\"created\":%s,\"records_before\":%lld,\"records\":%llu,"
                        "\"metric\":\"%s\",\"storage\":\"%s\",\"index\":\"%s\"}",
                        m->created ? "true" : "false", (long long)m->before,
                        (unsigned long long)store_count(m->st),
                        store_metric(m->st) == STORE_L2 ? "l2" : store_metric(m->st) == STORE_DOT ? "dot" : "cosine",
                        store_storage(m->st) == STORE_F16 ? "float16" : "float32",
                        store_index_name(store_index(m->st, NULL)));
  } else {
    sqlite3_str_appendall(s, ",\"store\":null");
  }
  if (m->rd && m->rd->ndecl) { /* the declared columns written (or that would be), and those in meta */
    sqlite3_str_appendall(s, ",\"columns\":[");
    int n = 0;
    for (int k = 0; k < m->rd->ndecl; k++) {
      if (m->rd->decl[k].in_meta) continue;
      char buf[200];
      store_coldef_format(m->st && m->existing ? store_col(m->st, m->dcol[k]) : &m->rd->decl[k].def, buf,
                          sizeof buf);
      if (n++) sqlite3_str_appendchar(s, 1, ',');
      mig_json_str(s, buf, strlen(buf));
    }
    sqlite3_str_appendchar(s, 1, ']');
    n = 0;
    for (int k = 0; k < m->rd->ndecl; k++) {
      if (!m->rd->decl[k].in_meta) continue;
      sqlite3_str_appendall(s, n++ ? "," : ",\"columns_in_meta\":[");
      mig_json_str(s, m->rd->decl[k].src, strlen(m->rd->decl[k].src));
    }
    if (n) sqlite3_str_appendchar(s, 1, ']');
  }
  if (m->ts_unparsed) sqlite3_str_appendf(s, ",\"ts_unreadable\":%lld", (long long)m->ts_unparsed);
  if (m->meta_quoted) sqlite3_str_appendf(s, ",\"meta_not_json\":%lld", (long long)m->meta_quoted);
  if (m->utf8_fixed) sqlite3_str_appendf(s, ",\"utf8_repaired\":%lld", (long long)m->utf8_fixed);
  if (m->stale) sqlite3_str_appendf(s, ",\"stale_vectors\":%lld", (long long)m->stale);
  char *info = sqlite3_str_finish(m->plan.info);
  m->plan.info = NULL;
  if (info) sqlite3_str_appendall(s, info);
  sqlite3_free(info);
  char *notes = sqlite3_str_finish(m->plan.notes);
  m->plan.notes = NULL;
  sqlite3_str_appendf(s, ",\"notes\":[%s]", notes ? notes + (notes[0] == ',') : "");
  sqlite3_free(notes);
  sqlite3_str_appendf(s, ",\"seconds\":%.3f,\"rows_per_second\":%.0f}", secs,
                      secs > 0 ? (double)m->read / secs : 0.0);
  if (sqlite3_str_errcode(s)) {
    sqlite3_free(sqlite3_str_finish(s));
    return NULL;
  }
  return sqlite3_str_finish(s);
}

/* ---- the function --------------------------------------------------------- */

/* The error of a run that read rows and wrote none: how many were skipped
** for each reason, with the first example of each. */
static int nothing_written(mig_run *m) {
  sqlite3_str *e = sqlite3_str_new(NULL);
  sqlite3_str_appendf(e, "none of the %lld rows read from %s %s written:", (long long)m->read,
                      m->plan.table ? m->plan.table : "the source", m->o.dry_run ? "would be" : "was");
  const char *sep = " ";
  for (int r = 0; r < R_OTHER + m->nother; r++) {
    sqlite3_int64 n = r < R_OTHER ? m->reason[r] : m->other_count[r - R_OTHER];
    if (!n) continue;
    sqlite3_str_appendf(e, "%s%lld %s (%s)", sep, (long long)n,
                        r < R_OTHER ? reason_name[r] : m->other_name[r - R_OTHER], m->first[r]);
    sep = "; ";
  }
  if (m->created) sqlite3_str_appendall(e, "; the new destination is removed");
  char *z = sqlite3_str_finish(e);
  if (!z) return SQLITE_NOMEM;
  snprintf(m->err, sizeof m->err, "%s", z);
  sqlite3_free(z);
  m->remove_dest = m->created;
  return SQLITE_ERROR;
}

static int run(mig_run *m, const char *src, const char *dst) {
  int rc = open_source(m, src);
  if (rc != SQLITE_OK) return rc;
  mig_want w;
  memset(&w, 0, sizeof w);
  w.schema = m->o.schema;
  w.table = m->o.table;
  w.query = m->o.query;
  w.vector_column = m->o.vector_column;
  w.include_deleted = m->o.include_deleted;
  w.no_declared = m->o.no_declared;
  w.srcpath = m->srcpath;
  w.entities = m->o.entities;
  w.history = m->o.history;
  w.immutable = m->o.immutable;
  for (int f = 0; f < MIG_NFIELD; f++) w.col[f] = m->o.col[f];
  char *err = NULL;
  rc = mig_detect(m->src, &w, &m->plan, &err);
  if (rc == SQLITE_OK)
    rc = m->plan.vec0 ? mig_vec0_open(m->src, m->plan.vec0, &w, &m->plan, &m->rd, &err)
                      : mig_reader_open(m->src, &m->plan, &w, &m->rd, &err);
  if (rc != SQLITE_OK) {
    snprintf(m->err, sizeof m->err, "%s", err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    return rc;
  }
  for (int f = 0; f < MIG_NFIELD; f++) {
    m->field[f] = -1;
    for (int i = 0; i < m->rd->ncol; i++)
      if (!strcmp(m->rd->names[i], mig_field_name[f])) m->field[f] = i;
  }
  m->enc = m->o.encoding >= 0 && !m->plan.vec0 ? m->o.encoding : m->plan.enc;
  m->metric = m->o.metric >= 0 ? m->o.metric : m->plan.metric >= 0 ? m->plan.metric
              : m->plan.vec0 ? STORE_L2 : STORE_COSINE;
  m->key = sqlite3_mprintf("%s:%s:%s", m->plan.schema, m->srcpath, m->plan.table ? m->plan.table : "");
  if (!m->key) return SQLITE_NOMEM;
  m->dim = m->o.dim ? m->o.dim : m->plan.dim;
  if (m->o.dim && m->plan.dim && m->o.dim != m->plan.dim)
    mig_note(&m->plan, "dim %d from the options; the source declares %d", m->o.dim, m->plan.dim);
  (void)dst;
  if ((rc = map_columns(m, NULL)) != SQLITE_OK) return rc;
  if (m->dim) m->dim_from = m->o.dim ? "options" : "source schema";
  if (!m->dim && !m->o.overwrite && file_exists(m->dstpath)) {
    store *t;
    char e[256];
    if (store_open(m->dstpath, NULL, 1, &t, e, sizeof e) == STORE_OK) {
      m->dim = store_dim(t);
      m->dim_from = "destination";
      store_close(t);
    }
  }
  if (!m->dim) {
    m->dim = probe_dim(m);
    m->dim_from = m->dim > 0 ? "first embedding" : "none";
    if (m->dim && m->enc == MIG_ENC_AUTO)
      mig_note(&m->plan, "dim %d taken from the first embedding (a BLOB read as float32; give "
               "{\"encoding\": \"float64\"} or {\"dim\": N} otherwise)", m->dim);
  }
  if ((rc = open_dest(m)) != SQLITE_OK) return rc;
  m->vec = sqlite3_malloc64((sqlite3_uint64)(m->dim > 0 ? m->dim : 1) * 4);
  if (!m->vec) return SQLITE_NOMEM;
  if (m->o.progress) {
    m->progress = !strcmp(m->o.progress, "stderr") ? stderr : fopen(m->o.progress, "a");
    if (!m->progress) {
      int e = errno;
      snprintf(m->err, sizeof m->err, "progress: cannot open %s: %s", m->o.progress, strerror(e));
      return os_rc(e);
    }
  }
  /* the rows, in transactions of batch rows */
  int writing = m->st && !m->o.dry_run, in_tx = 0;
  sqlite3_int64 in_batch = 0;
  while (rc == SQLITE_OK) {
    if (m->o.limit && m->read >= m->o.limit) {
      m->stopped_by_limit = 1;
      break;
    }
    int r = m->rd->next(m->rd, &err);
    if (r == SQLITE_DONE) break;
    if (r != SQLITE_ROW) {
      snprintf(m->err, sizeof m->err, "%s", err ? err : sqlite3_errstr(r));
      rc = r;
      break;
    }
    m->read++;
    if (writing && !in_tx) {
      int br = store_begin(m->st);
      if (br != STORE_OK) {
        snprintf(m->err, sizeof m->err, "%s: %s", m->dstpath, store_errmsg(m->st));
        rc = ext_err_rc(br);
        break;
      }
      in_tx = 1;
    }
    rc = migrate_row(m);
    if (rc == SQLITE_OK && in_tx && ++in_batch >= m->o.batch) {
      int sr = store_prepare(m->st);
      if (sr == STORE_OK) sr = store_commit(m->st, 1);
      else store_rollback(m->st);
      in_tx = 0;
      in_batch = 0;
      if (sr != STORE_OK) {
        snprintf(m->err, sizeof m->err, "committing to %s: %s", m->dstpath, store_errmsg(m->st));
        rc = ext_err_rc(sr);
      }
    }
    if (m->progress && m->read % m->o.progress_every == 0) progress_line(m, 0);
  }
  sqlite3_free(err);
  if (in_tx) {
    int sr = rc == SQLITE_OK ? store_prepare(m->st) : STORE_EIO;
    if (sr == STORE_OK) sr = store_commit(m->st, 1);
    else store_rollback(m->st);
    if (sr != STORE_OK && rc == SQLITE_OK) {
      snprintf(m->err, sizeof m->err, "committing to %s: %s", m->dstpath, store_errmsg(m->st));
      rc = ext_err_rc(sr);
    }
  }
  /* a source of which nothing came over (every row skipped, none there
     already) is an error naming why, not a report */
  if (rc == SQLITE_OK && !m->stopped_by_limit && m->read > 0 && m->written + m->reason[R_DUPLICATE] == 0)
    rc = nothing_written(m);
  if (rc == SQLITE_OK && m->plan.graph && !m->stopped_by_limit) {
    char *ge = NULL;
    rc = m->plan.graph(m->src, writing ? m->st : NULL, &m->plan, &ge);
    if (rc != SQLITE_OK) snprintf(m->err, sizeof m->err, "%s", ge ? ge : sqlite3_errstr(rc));
    sqlite3_free(ge);
  }
  int cr = rc == SQLITE_OK && writing ? store_checkpoint(m->st) : STORE_OK;
  if (cr != STORE_OK) {
    snprintf(m->err, sizeof m->err, "checkpoint of %s: %s", m->dstpath, store_errmsg(m->st));
    rc = ext_err_rc(cr);
  }
  /* complete: read to the end (and, above, something of a non-empty
     source is in the destination: written now, or there already) */
  m->complete = !m->stopped_by_limit;
  if (m->stale || m->reason[R_STALE])
    mig_note(&m->plan, "%lld vectors are older than their item's last put (put again with index=False, "
             "or a value that no longer gives the field): %lld written without the stale embedding "
             "(meta.stale_vector), %lld skipped as stale_vector (the field is gone)",
             (long long)(m->stale + m->reason[R_STALE]), (long long)m->stale, (long long)m->reason[R_STALE]);
  progress_line(m, 1);
  return rc;
}

/* h5mem_migrate(source_db, dest_h5 [, options_json]) */
static void fn_migrate(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (!ext_direct_call(ctx, "h5mem_migrate")) return;
  const char *src = (const char *)sqlite3_value_text(argv[0]);
  const char *dst = (const char *)sqlite3_value_text(argv[1]);
  if (!src || !dst || !*src || !*dst) {
    sqlite3_result_error(ctx, WHO ": give the source database and the destination .h5 file", -1);
    return;
  }
  mig_run *m = sqlite3_malloc(sizeof *m);
  if (!m) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  memset(m, 0, sizeof *m);
  m->db = sqlite3_context_db_handle(ctx);
  m->o.metric = m->o.storage = m->o.index = m->o.encoding = -1;
  m->o.batch = 1000;
  m->o.progress_every = 10000;
  m->examples = sqlite3_str_new(NULL);
  m->t0 = now_s();
  char *e = NULL;
  int rc = search_opts_parse(argc > 2 ? argv[2] : NULL, MIG_KNOWN, mig_option, &m->o, &e);
  if (rc != SQLITE_OK) snprintf(m->err, sizeof m->err, "%s", e ? e : "bad options");
  sqlite3_free(e);
  if (rc == SQLITE_OK && m->o.overwrite && m->o.append) {
    snprintf(m->err, sizeof m->err, "options: overwrite and append exclude each other");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) {
    char *rs = realpath(src, NULL);
    m->srcpath = sqlite3_mprintf("%s", rs ? rs : src);
    free(rs);
    m->dstpath = sqlite3_mprintf("%s", dst);
    if (!m->srcpath || !m->dstpath) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) {
    struct stat a, b;
    if (stat(src, &a) != 0) {
      int se = errno;
      snprintf(m->err, sizeof m->err, "the source %s: %s", src, strerror(se));
      rc = os_rc(se);
    } else if (stat(dst, &b) == 0 && h5sql_same_file(&a, &b)) {
      snprintf(m->err, sizeof m->err, "the source and the destination are the same file");
      rc = SQLITE_ERROR;
    }
  }
  if (rc == SQLITE_OK) rc = source_rc(run(m, src, dst));
  char *rep = rc == SQLITE_OK ? report(m) : NULL;
  if (rc == SQLITE_OK && !rep) rc = SQLITE_NOMEM;
  /* close the destination (its checkpoint was taken) and the source */
  int xr = m->st ? store_close(m->st) : STORE_OK;
  if (xr != STORE_OK && rc == SQLITE_OK && !m->o.dry_run) {
    snprintf(m->err, sizeof m->err, "closing %s failed (%s)", m->dstpath, util_err_name(xr));
    rc = ext_err_rc(xr);
  }
  if (m->remove_dest) { /* (created by this run, and empty) */
    char *wal = sqlite3_mprintf("%s-wal", m->dstpath);
    unlink(m->dstpath);
    if (wal) unlink(wal);
    sqlite3_free(wal);
  }
  if (m->rd) m->rd->close(m->rd);
  sqlite3_close(m->src);
  if (m->progress && m->progress != stderr) fclose(m->progress);
  if (rc == SQLITE_OK) {
    sqlite3_result_text(ctx, rep, -1, sqlite3_free);
    sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
  } else {
    sqlite3_free(rep);
    char *msg = rc == SQLITE_NOMEM ? NULL : sqlite3_mprintf(WHO ": %s", m->err[0] ? m->err : sqlite3_errstr(rc));
    ext_result_rc(ctx, rc, msg);
    sqlite3_free(msg);
  }
  sqlite3_free(sqlite3_str_finish(m->examples));
  for (int f = 0; f < MIG_NFIELD; f++) strbuf_free(&m->fix[f]);
  for (int k = 0; k <= STORE_COLS_MAX; k++) strbuf_free(&m->dfix[k]);
  mig_plan_free(&m->plan);
  opts_free(&m->o);
  sqlite3_free(m->vec);
  sqlite3_free(m->srcpath);
  sqlite3_free(m->dstpath);
  sqlite3_free(m->key);
  sqlite3_free(m);
}

/* h5mem_langgraph_text(value, field_name): the text LangGraph embedded for
** a store_vectors row (mig_langgraph_text); NULL when the value gives none. */
static void fn_langgraph_text(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) return;
  const char *v = (const char *)sqlite3_value_text(argv[0]);
  size_t vn = (size_t)sqlite3_value_bytes(argv[0]);
  const char *f = (const char *)sqlite3_value_text(argv[1]);
  size_t fn = (size_t)sqlite3_value_bytes(argv[1]);
  if (!v || !f) return sqlite3_result_error_nomem(ctx);
  char *out;
  size_t n;
  int t = mig_langgraph_text(v, vn, f, fn, &out, &n);
  if (t == -2) return sqlite3_result_error_nomem(ctx);
  if (t == -1) return sqlite3_result_error(ctx, "h5mem_langgraph_text: the value is not JSON", -1);
  if (t == 1) sqlite3_result_text64(ctx, out, n, sqlite3_free, SQLITE_UTF8);
}

int ext_migrate_register(sqlite3 *db) {
  int rc = sqlite3_create_function_v2(db, "h5mem_langgraph_text", 2,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                                      fn_langgraph_text, NULL, NULL, NULL);
  if (rc != SQLITE_OK || !h5sql_directonly_ok()) return rc; /* h5mem_migrate writes files: only where views cannot call it */
  for (int n = 2; n <= 3 && rc == SQLITE_OK; n++)
    rc = sqlite3_create_function_v2(db, "h5mem_migrate", n,
                                    SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE, NULL,
                                    fn_migrate, NULL, NULL, NULL);
  return rc;
}
