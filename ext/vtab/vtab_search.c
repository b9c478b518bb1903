/*
** ext/vtab/vtab_search.c - vector search over an h5mem store:
**
**   SELECT * FROM vec_search('mem', :query, 10 [, '{"exact": true}'])
**     WHERE source = 'user' AND ts BETWEEN :a AND :b;
**
** A table-valued function with columns id, distance, score, text, source,
** session, ts, tier (and the hidden arguments store, query, k, options).
** Conditions on source, session, tier (=), ts (=, <, <=, >, >=, BETWEEN) and
** id (=, IN) are applied before ranking: the result is the exact top k among
** the records that meet them.  The same search serves the h5mem table's
** sqlite-vec style KNN form (WHERE embedding MATCH :q AND k = 10), through
** search_knn_plan / search_knn_run below.  vec_search, bm25 and hybrid
** read a store's files: SQLITE_VTAB_DIRECTONLY, never from a trigger or
** view (docs/SQL.md, "Trust").  Their options objects are read by
** search_opts.c; bm25's and hybrid's runs are search_text.c's.
*/
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ann/ann.h"
#include "../ext_err.h"
#include "k.h"
#include "util/vecjson.h"
#include "vtab_int.h"

/* ---- filters ------------------------------------------------------------ */

void search_knn_filter_free(knn_filter *f) {
  sqlite3_free(f->ids);
  sqlite3_free(f->conds);
  sqlite3_free(f->coff);
  sqlite3_free(f->vals);
  for (int i = 0; i < f->nmem; i++) sqlite3_free(f->mem[i]);
  sqlite3_free(f->mem);
  memset(f, 0, sizeof *f);
}

/* A value of a condition on a declared column of type type into *out, with
** the column's affinity (numeric columns: sqlite3_value_numeric_type); text
** and blob bytes point into v.  1: a text column against a non-text value
** (left to SQLite), else 0. */
static int cond_value(int type, sqlite3_value *v, store_val *out) {
  memset(out, 0, sizeof *out);
  int numeric = type == STORE_T_INTEGER || type == STORE_T_FLOAT || type == STORE_T_BOOLEAN;
  int t = numeric ? sqlite3_value_numeric_type(v) : sqlite3_value_type(v);
  if (t == SQLITE_NULL) return 0;
  if (type == STORE_T_TEXT && t != SQLITE_TEXT) return 1;
  if (t == SQLITE_INTEGER) {
    out->type = STORE_T_INTEGER;
    out->i = sqlite3_value_int64(v);
  } else if (t == SQLITE_FLOAT) {
    out->f = sqlite3_value_double(v);
    out->type = isnan(out->f) ? 0 : STORE_T_FLOAT;
  } else {
    out->p = t == SQLITE_BLOB ? sqlite3_value_blob(v) : (const void *)sqlite3_value_text(v);
    out->n = (size_t)sqlite3_value_bytes(v);
    out->type = t == SQLITE_BLOB ? STORE_T_BLOB : STORE_T_TEXT;
    if (!out->p) out->p = "";
  }
  return 0;
}

/* search_knn_filter_vals; copy 0: the values' bytes are f's already. */
static int filter_vals(knn_filter *f, int col, int op, const store_val *vals, int nv, int copy) {
  if (op != STORE_OP_ISNULL && op != STORE_OP_NOTNULL && op != STORE_OP_IN && op != STORE_OP_NOTIN &&
      (nv != 1 || !vals[0].type)) { /* a comparison with NULL: nothing */
    f->empty = 1;
    return SQLITE_OK;
  }
  store_val *all = sqlite3_realloc64(f->vals, (sqlite3_uint64)(f->nvals + nv + 1) * sizeof *all);
  if (!all) return SQLITE_NOMEM;
  f->vals = all;
  store_cond *cs = sqlite3_realloc64(f->conds, (sqlite3_uint64)(f->nconds + 1) * sizeof *cs);
  if (!cs) return SQLITE_NOMEM;
  f->conds = cs;
  int *co = sqlite3_realloc64(f->coff, (sqlite3_uint64)(f->nconds + 1) * sizeof *co);
  if (!co) return SQLITE_NOMEM;
  f->coff = co;
  for (int i = 0; i < nv; i++) {
    store_val v = vals[i];
    if (copy && (v.type == STORE_T_TEXT || v.type == STORE_T_BLOB)) { /* the bytes copied: f's own */
      void **m = sqlite3_realloc64(f->mem, (sqlite3_uint64)(f->nmem + 1) * sizeof *m);
      if (!m) return SQLITE_NOMEM;
      f->mem = m;
      void *c = sqlite3_malloc64(v.n + 1);
      if (!c) return SQLITE_NOMEM;
      if (v.n) memcpy(c, v.p, v.n);
      f->mem[f->nmem++] = c;
      v.p = c;
    }
    f->vals[f->nvals + i] = v;
  }
  cs[f->nconds].col = col;
  cs[f->nconds].op = op;
  cs[f->nconds].v = NULL; /* (f->vals moves while conditions are added: coff) */
  cs[f->nconds].nv = nv;
  co[f->nconds] = f->nvals;
  f->nconds++;
  f->nvals += nv;
  if (op == STORE_OP_IN && !nv) f->empty = 1;
  return SQLITE_OK;
}

int search_knn_filter_vals(knn_filter *f, int col, int op, const store_val *vals, int nv) {
  return filter_vals(f, col, op, vals, nv, 1);
}

int search_knn_filter_cond(knn_filter *f, int col, int type, int op, sqlite3_value *v) {
  store_val *vals = NULL;
  int nv = 0, rc;
  if (op == STORE_OP_IN) {
    sqlite3_value *x;
    int cap = 0;
    for (rc = sqlite3_vtab_in_first(v, &x); rc == SQLITE_OK && x; rc = sqlite3_vtab_in_next(v, &x)) {
      if (nv == cap) {
        cap = cap ? cap * 2 : 16;
        store_val *n = sqlite3_realloc64(vals, (sqlite3_uint64)cap * sizeof *n);
        if (!n) {
          sqlite3_free(vals);
          return SQLITE_NOMEM;
        }
        vals = n;
      }
      if (cond_value(type, x, &vals[nv])) { /* (one value SQLite must judge: the whole IN is left to it) */
        sqlite3_free(vals);
        return SQLITE_OK;
      }
      /* (the bytes of a value are valid until the next one: copied now) */
      nv++;
      if (vals[nv - 1].type == STORE_T_TEXT || vals[nv - 1].type == STORE_T_BLOB) {
        void **m = sqlite3_realloc64(f->mem, (sqlite3_uint64)(f->nmem + 1) * sizeof *m);
        void *c = m ? sqlite3_malloc64(vals[nv - 1].n + 1) : NULL;
        if (m) f->mem = m;
        if (!c) {
          sqlite3_free(vals);
          return SQLITE_NOMEM;
        }
        if (vals[nv - 1].n) memcpy(c, vals[nv - 1].p, vals[nv - 1].n);
        f->mem[f->nmem++] = c;
        vals[nv - 1].p = c;
      }
    }
    if (rc != SQLITE_OK && rc != SQLITE_DONE) {
      sqlite3_free(vals);
      return rc;
    }
    rc = filter_vals(f, col, op, vals, nv, 0); /* (their bytes: copied into f as they came) */
    sqlite3_free(vals);
    return rc;
  }
  store_val one;
  memset(&one, 0, sizeof one);
  if (op != STORE_OP_ISNULL && op != STORE_OP_NOTNULL && cond_value(type, v, &one)) return SQLITE_OK;
  return search_knn_filter_vals(f, col, op, &one, op == STORE_OP_ISNULL || op == STORE_OP_NOTNULL ? 0 : 1);
}

static const struct {
  int sop, op;
  char c;
} cond_ops[] = {
    {SQLITE_INDEX_CONSTRAINT_EQ, STORE_OP_EQ, '='},       {SQLITE_INDEX_CONSTRAINT_NE, STORE_OP_NE, '!'},
    {SQLITE_INDEX_CONSTRAINT_LT, STORE_OP_LT, '<'},       {SQLITE_INDEX_CONSTRAINT_LE, STORE_OP_LE, 'l'},
    {SQLITE_INDEX_CONSTRAINT_GT, STORE_OP_GT, '>'},       {SQLITE_INDEX_CONSTRAINT_GE, STORE_OP_GE, 'g'},
    {SQLITE_INDEX_CONSTRAINT_ISNULL, STORE_OP_ISNULL, 'n'}, {SQLITE_INDEX_CONSTRAINT_ISNOTNULL, STORE_OP_NOTNULL, 'N'},
    {-1, STORE_OP_IN, 'i'}};

void search_knn_plan_decl(sqlite3_index_info *info, int first, const store_coldef *cdef, int n, char *plan,
                          size_t cap, int *argi, int *used) {
  size_t len = strlen(plan);
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    int col = k->iColumn - first;
    if (!k->usable || info->aConstraintUsage[c].argvIndex || col < 0 || col >= n) continue;
    const store_coldef *d = &cdef[col];
    if (d->role == STORE_R_AUX || d->type == STORE_T_VECTOR) continue; /* (never filtered) */
    char op = 0;
    for (size_t j = 0; j < sizeof cond_ops / sizeof cond_ops[0]; j++)
      if (cond_ops[j].sop == k->op) op = cond_ops[j].c;
    if (!op) continue;
    if (d->type == STORE_T_TEXT) {
      const char *coll = sqlite3_vtab_collation(info, c);
      if (coll && sqlite3_stricmp(coll, "BINARY")) continue; /* (bytes compared: BINARY only) */
    }
    if (op == '=' && sqlite3_libversion_number() >= 3038000 && sqlite3_vtab_in(info, c, -1)) {
      sqlite3_vtab_in(info, c, 1); /* the whole IN list at once */
      op = 'i';
    }
    if (len + 4 >= cap) break;
    plan[len++] = 'C';
    plan[len++] = (char)('0' + col / 10);
    plan[len++] = (char)('0' + col % 10);
    plan[len++] = op;
    plan[len] = 0;
    info->aConstraintUsage[c].argvIndex = ++*argi;
    /* exact as SQLite compares, but a text column against a number, whose
    ** affinity is the other side's: SQLite tests text conditions again */
    info->aConstraintUsage[c].omit = d->type != STORE_T_TEXT;
    (*used)++;
  }
}

int search_knn_plan_decl_add(knn_filter *f, const store_coldef *cdef, int n, const char **p, sqlite3_value *v) {
  const char *t = *p;
  if (t[0] != 'C' || !t[1] || !t[2] || !t[3]) return SQLITE_INTERNAL;
  int col = (t[1] - '0') * 10 + (t[2] - '0'), op = 0;
  for (size_t j = 0; j < sizeof cond_ops / sizeof cond_ops[0]; j++)
    if (cond_ops[j].c == t[3]) op = cond_ops[j].op;
  *p = t + 4;
  if (col < 0 || col >= n || !op) return SQLITE_INTERNAL;
  return search_knn_filter_cond(f, col, cdef[col].type, op, v);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* One constraint's value into the filter: op is one of the KNN_OP_* codes. */
int search_knn_filter_add(knn_filter *f, int field, int op, sqlite3_value *v) {
  if (field == KNN_F_ID) {
    if (op == KNN_OP_IN) {
      sqlite3_value *x;
      int rc;
      for (rc = sqlite3_vtab_in_first(v, &x); rc == SQLITE_OK && x; rc = sqlite3_vtab_in_next(v, &x)) {
        if (sqlite3_value_numeric_type(x) != SQLITE_INTEGER) continue; /* matches no integer id */
        if (f->nids % 64 == 0) {
          int64_t *n = sqlite3_realloc64(f->ids, (f->nids + 64) * sizeof *n);
          if (!n) return SQLITE_NOMEM;
          f->ids = n;
        }
        f->ids[f->nids++] = sqlite3_value_int64(x);
      }
      if (rc != SQLITE_OK && rc != SQLITE_DONE) return rc;
    } else {
      if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) {
        int64_t *n = sqlite3_realloc64(f->ids, 64 * sizeof *n);
        if (!n) return SQLITE_NOMEM;
        f->ids = n;
        f->ids[0] = sqlite3_value_int64(v);
        f->nids = 1;
      } else {
        f->nids = 0;
      }
    }
    if (f->has_ids) f->empty = 1; /* two id conditions: keep it simple and exact */
    f->has_ids = 1;
    if (!f->nids) f->empty = 1;
    if (f->nids > 1) qsort(f->ids, f->nids, sizeof *f->ids, cmp_i64); /* (an empty IN list: ids NULL) */
    return SQLITE_OK;
  }
  if (field == KNN_F_TS) {
    int t = sqlite3_value_numeric_type(v);
    if (t == SQLITE_NULL) {
      f->empty = 1;
      return SQLITE_OK;
    }
    if (t == SQLITE_TEXT || t == SQLITE_BLOB) { /* integers sort before text */
      if (op == KNN_OP_EQ || op == KNN_OP_GT || op == KNN_OP_GE) f->empty = 1;
      return SQLITE_OK;
    }
    double d = sqlite3_value_double(v);
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    int exact = t == SQLITE_INTEGER;
    int64_t x = sqlite3_value_int64(v);
    /* a real compares with the integers exactly (as SQLite compares them):
    ** beyond every int64 when outside [-2^63, 2^63), or NaN */
    if (!exact && !(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
      if (isnan(d) || op == KNN_OP_EQ || (d > 0) == (op == KNN_OP_GT || op == KNN_OP_GE)) f->empty = 1;
      return SQLITE_OK;
    }
    switch (op) {
    case KNN_OP_EQ:
      if (!exact && floor(d) != d) f->empty = 1;
      lo = hi = exact ? x : (int64_t)d;
      break;
    case KNN_OP_GT: lo = exact ? (x == INT64_MAX ? (f->empty = 1, x) : x + 1) : (int64_t)floor(d) + 1; break;
    case KNN_OP_GE: lo = exact ? x : (int64_t)ceil(d); break;
    case KNN_OP_LT:
      if (exact ? x == INT64_MIN : ceil(d) == -9223372036854775808.0) f->empty = 1; /* nothing below */
      else hi = exact ? x - 1 : (int64_t)ceil(d) - 1;
      break;
    case KNN_OP_LE: hi = exact ? x : (int64_t)floor(d); break;
    }
    if (!f->has_ts) {
      f->ts_lo = INT64_MIN;
      f->ts_hi = INT64_MAX;
      f->has_ts = 1;
    }
    if (lo > f->ts_lo) f->ts_lo = lo;
    if (hi < f->ts_hi) f->ts_hi = hi;
    return SQLITE_OK;
  }
  /* source, session, tier: equality with a text value */
  int k = field - KNN_F_SOURCE;
  if (sqlite3_value_type(v) == SQLITE_NULL) {
    f->empty = 1;
    return SQLITE_OK;
  }
  /* a number (or BLOB) compares with the text column by the affinity of
  ** the other side, which a virtual table cannot see ('05' = 5 when it is
  ** a numeric column's): no restriction here, SQLite tests the rows (the
  ** planners never omit these constraints) */
  if (sqlite3_value_type(v) != SQLITE_TEXT) return SQLITE_OK;
  const char *s = (const char *)sqlite3_value_text(v);
  if (!s) return SQLITE_NOMEM;
  size_t n = (size_t)sqlite3_value_bytes(v);
  if (f->has[k] && (f->len[k] != n || memcmp(f->str[k], s, n))) f->empty = 1;
  f->str[k] = s;
  f->len[k] = n;
  f->has[k] = 1;
  return SQLITE_OK;
}

/* The conditions of f other than id, ready to test record by record: the
** string columns of the file's rows compared as codes (store_str_codes).
** Without a tier condition, the archive tier is left out (noarch: some
** live record is archived; codes[2] and code[2] are then the tier column's
** codes and the code of "archive", tested for inequality). */
typedef struct meets_ctx {
  store *st;
  const knn_filter *f;
  int err; /* the store's code of a failed read (STORE_E*), reported by search_knn_allow_check */
  int noarch;
  const uint32_t *codes[3];
  uint64_t ncodes[3];
  uint32_t code[3];
} meets_ctx;

static const unsigned str_want[3] = {STORE_V_SOURCE, STORE_V_SESSION, STORE_V_TIER};

static const char archive_tier[] = "archive";
#define ARCHIVE_LEN (sizeof archive_tier - 1)

static int is_archive(const char *s, size_t n) {
  return s && n == ARCHIVE_LEN && !memcmp(s, archive_tier, ARCHIVE_LEN);
}

/* The tier of the live record at pos into *t, *tn: 1, or 0 with the
** store's code in m->err. */
static int tier_of(meets_ctx *m, uint64_t pos, const char **t, size_t *tn) {
  int rc = store_get_tier(m->st, pos, t, tn);
  if (rc != STORE_OK) m->err = rc;
  return rc == STORE_OK;
}

/* Whether a record may be archived (the searches then test for it; else
** no test at all, the search unfiltered): a file row has the code of
** "archive" (store_str_codes: UINT32_MAX when none has it), or a live
** record in memory is archived (one by one: a pointer each, no read of the
** file; records in memory are those since the last checkpoint). */
static int any_archived(meets_ctx *m) {
  uint64_t npos = store_npos(m->st);
  if (m->code[2] != UINT32_MAX) return 1;
  for (uint64_t p = m->ncodes[2]; p < npos; p++) {
    if (!store_pos_live(m->st, p)) continue;
    const char *t;
    size_t tn;
    if (!tier_of(m, p, &t, &tn)) return 0;
    if (is_archive(t, tn)) return 1;
  }
  return 0;
}

/* STORE_OK or the store's error code. */
static int meets_init(meets_ctx *m, store *st, const knn_filter *f) {
  memset(m, 0, sizeof *m);
  m->st = st;
  m->f = f;
  for (int k = 0; k < 3; k++) {
    int rc = f->has[k] ? store_str_codes(st, str_want[k], f->str[k], f->len[k], &m->codes[k],
                                         &m->ncodes[k], &m->code[k])
             : k == 2 ? store_str_codes(st, STORE_V_TIER, archive_tier, ARCHIVE_LEN, &m->codes[2],
                                        &m->ncodes[2], &m->code[2])
                      : STORE_OK;
    if (rc != STORE_OK) return rc;
  }
  if (!f->has[2]) {
    m->noarch = any_archived(m);
    if (m->err) return m->err;
  }
  return STORE_OK;
}

/* Whether the live record at pos meets the conditions (not the id part). */
static int meets(meets_ctx *m, uint64_t pos) {
  const knn_filter *f = m->f;
  unsigned want = 0;
  for (int k = 0; k < 3; k++) {
    if (!f->has[k]) continue;
    if (pos < m->ncodes[k]) {
      if (m->codes[k][pos] != m->code[k]) return 0;
    } else {
      want |= str_want[k];
    }
  }
  if (m->noarch) { /* (no tier condition: f->has[2] is 0) */
    if (pos < m->ncodes[2]) {
      if (m->codes[2][pos] == m->code[2]) return 0;
    } else {
      want |= STORE_V_TIER;
    }
  }
  if (want == STORE_V_TIER) { /* a record in memory, only its tier wanted */
    const char *t;
    size_t tn;
    if (!tier_of(m, pos, &t, &tn)) return 0;
    if (f->has[2] && (!t || tn != f->len[2] || memcmp(t, f->str[2], tn))) return 0;
    if (m->noarch && is_archive(t, tn)) return 0;
  } else if (want) { /* records in memory */
    store_view v;
    memset(&v, 0, sizeof v);
    int rc = store_get(m->st, pos, want, &v);
    if (rc != STORE_OK) {
      m->err = rc;
      return 0;
    }
    const char *sv[3] = {v.source, v.session, v.tier};
    size_t sl[3] = {v.source_len, v.session_len, v.tier_len};
    for (int k = 0; k < 3; k++)
      if (f->has[k] && (want & str_want[k]) && (!sv[k] || sl[k] != f->len[k] || memcmp(sv[k], f->str[k], sl[k])))
        return 0;
    if (m->noarch && (want & STORE_V_TIER) && is_archive(v.tier, v.tier_len)) return 0;
  }
  if (f->has_ts) {
    int64_t ts;
    int rc = store_get_ts(m->st, pos, &ts);
    if (rc != STORE_OK) {
      m->err = rc;
      return 0;
    }
    if (ts < f->ts_lo || ts > f->ts_hi) return 0;
  }
  return 1;
}

static int meets_fn(void *ctx, uint64_t pos) {
  meets_ctx *m = ctx;
  return !m->err && meets(m, pos);
}

/* bit j: c[j] == w, for j < 8 */
static inline unsigned eq8(const uint32_t *c, uint32_t w) {
  unsigned m = 0;
  for (unsigned j = 0; j < 8; j++) m |= (unsigned)(c[j] == w) << j;
  return m;
}

/* bit j: lo <= t[j] <= hi, for j < 8 */
static inline unsigned in8(const int64_t *t, int64_t lo, int64_t hi) {
  unsigned m = 0;
  for (unsigned j = 0; j < 8; j++) m |= (unsigned)(t[j] >= lo && t[j] <= hi) << j;
  return m;
}

/* the bits set in a byte (no popcnt instruction in a generic build) */
static inline unsigned pop8(unsigned x) {
  x = x - ((x >> 1) & 0x55u);
  x = (x & 0x33u) + ((x >> 2) & 0x33u);
  return (x + (x >> 4)) & 0x0fu;
}

/* meets_fn for every position below npos at once (store_filter.fn_all):
** the live bits, then the file's rows 8 at a time against the code and ts
** columns, and meets for the records in memory. */
static int meets_all(void *ctx, uint64_t npos, uint8_t *bits, uint64_t *n) {
  meets_ctx *m = ctx;
  const knn_filter *f = m->f;
  if (m->err) return -1;
  store_live_bits(m->st, npos, bits, n);
  const int64_t *ts = NULL;
  uint64_t nts = 0, cover = npos; /* positions the columns answer for */
  int rc = f->has_ts ? store_ts_column(m->st, &ts, &nts) : STORE_OK;
  if (rc != STORE_OK) {
    m->err = rc;
    return -1;
  }
  if (f->has_ts && nts < cover) cover = nts;
  for (int k = 0; k < 3; k++)
    if ((f->has[k] || (k == 2 && m->noarch)) && m->ncodes[k] < cover) cover = m->ncodes[k];
  /* the file's rows 8 at a time (a byte of bits), a column at a time,
  ** without branches on the data */
  uint64_t c = 0, p = 0;
  for (; p + 8 <= cover; p += 8) {
    unsigned ok = bits[p / 8];
    if (!ok) continue;
    for (int k = 0; k < 3; k++)
      if (f->has[k]) ok &= eq8(m->codes[k] + p, m->code[k]);
    if (m->noarch) ok &= ~eq8(m->codes[2] + p, m->code[2]);
    if (ts) ok &= in8(ts + p, f->ts_lo, f->ts_hi);
    bits[p / 8] = (uint8_t)ok;
    c += pop8(ok);
  }
  for (; p < npos; p++) { /* the rest, and the records in memory */
    unsigned bit = 1u << (p % 8);
    if (!(bits[p / 8] & bit)) continue;
    if (meets(m, p))
      c++;
    else
      bits[p / 8] &= (uint8_t)~bit;
    if (m->err) return -1;
  }
  *n = c;
  return 0;
}

struct knn_allow_ctx {
  meets_ctx mc;
};

/* A selective ts range (the temporal index holds fewer than 1/8 of the
** live records in it): the allowed records as bits, from the index's
** range alone, O(log n + rows in range), instead of a test of every
** record's ts.  1: done (a->bits); 0: not selective; -1: an error (the
** store's code in mc->err). */
static int allow_from_time(store *st, const knn_filter *f, meets_ctx *mc, knn_allow *a) {
  uint64_t n, pos;
  int rc = store_time_count(st, f->ts_lo, f->ts_hi, &n);
  if (rc != STORE_OK) {
    mc->err = rc;
    return -1;
  }
  if (n >= store_count(st) / 8) return 0;
  uint64_t npos = store_npos(st);
  a->bits = sqlite3_malloc64(npos / 8 + 1);
  if (!a->bits) {
    mc->err = STORE_ENOMEM;
    return -1;
  }
  memset(a->bits, 0, npos / 8 + 1);
  store_time_iter it;
  rc = store_time_range(st, f->ts_lo, f->ts_hi, 0, &it);
  while (rc == STORE_OK && (rc = store_time_next(st, &it, &pos, NULL)) == STORE_OK && !mc->err)
    if (meets(mc, pos)) { /* (the other conditions; ts again, from the column the index read) */
      a->bits[pos / 8] |= (uint8_t)(1u << (pos % 8));
      a->flt.nbits++;
    }
  if (rc != STORE_ENOTFOUND && rc != STORE_OK) mc->err = rc;
  if (mc->err) return -1;
  a->flt.bits = a->bits;
  if (!a->flt.nbits) a->none = 1;
  return 1;
}

/* The allowed records as bits when f has conditions on declared columns:
** the listed ids' (id IN) or the live records, narrowed by each condition
** in turn (a partition key's `=` first: its index gives the partition's
** rows alone), then by the other conditions (meets) on the rows left.
** SQLITE_OK, SQLITE_NOMEM, or the store's code (STORE_E*). */
static int allow_from_conds(store *st, const knn_filter *f, meets_ctx *mc, knn_allow *a) {
  uint64_t npos = store_npos(st), n = 0;
  a->bits = sqlite3_malloc64(npos / 8 + 1);
  if (!a->bits) return SQLITE_NOMEM;
  memset(a->bits, 0, npos / 8 + 1);
  if (f->has_ids) {
    for (size_t i = 0; i < f->nids; i++) {
      uint64_t pos;
      if (store_find(st, f->ids[i], &pos) == STORE_OK && !(a->bits[pos / 8] >> (pos % 8) & 1)) {
        a->bits[pos / 8] |= (uint8_t)(1u << (pos % 8));
        n++;
      }
    }
  } else {
    store_live_bits(st, npos, a->bits, &n);
  }
  store_cond *cs = f->conds;
  for (int i = 0; i < f->nconds; i++) cs[i].v = f->vals + f->coff[i]; /* (all in now) */
  for (int pass = 0; pass < 2; pass++) /* a partition key's = first */
    for (int i = 0; i < f->nconds && n; i++) {
      const store_coldef *d = store_col(st, cs[i].col);
      int part = d && d->role == STORE_R_PARTITION && cs[i].op == STORE_OP_EQ;
      if (part != (pass == 0)) continue;
      int rc = store_col_filter(st, &cs[i], npos, a->bits, &n);
      if (rc) return rc;
    }
  if (n && (f->has[0] || f->has[1] || f->has[2] || f->has_ts || mc->noarch)) {
    uint64_t kept = 0;
    for (uint64_t p = 0; p < npos && !mc->err; p++) {
      if (!(a->bits[p / 8] >> (p % 8) & 1)) {
        if (!a->bits[p / 8]) p |= 7; /* (a byte of zeros) */
        continue;
      }
      if (meets(mc, p)) kept++;
      else a->bits[p / 8] &= (uint8_t)~(1u << (p % 8));
    }
    if (mc->err) return mc->err;
    n = kept;
  }
  a->flt.bits = a->bits;
  a->flt.nbits = n;
  if (!n) a->none = 1;
  return SQLITE_OK;
}

int search_knn_allow_init(store *st, const knn_filter *f, knn_allow *a, char **pzErr) {
  memset(a, 0, sizeof *a);
  if (f->empty) {
    a->none = 1;
    return SQLITE_OK;
  }
  a->c = sqlite3_malloc(sizeof *a->c);
  if (!a->c) return SQLITE_NOMEM;
  meets_ctx *mc = &a->c->mc;
  int src = meets_init(mc, st, f);
  if (src != STORE_OK) {
    search_knn_allow_free(a);
    return h5mem_store_err(st, src, pzErr);
  }
  if (f->nconds) { /* the declared columns' conditions: a bitmap, a column at a time */
    int arc = allow_from_conds(st, f, mc, a);
    if (arc != SQLITE_OK) {
      search_knn_allow_free(a);
      return arc == SQLITE_NOMEM ? arc : h5mem_store_err(st, arc, pzErr);
    }
  } else if (f->has_ids) { /* the listed records that meet the rest */
    uint64_t npos = store_npos(st);
    a->bits = sqlite3_malloc64(npos / 8 + 1);
    if (!a->bits) {
      search_knn_allow_free(a);
      return SQLITE_NOMEM;
    }
    memset(a->bits, 0, npos / 8 + 1);
    for (size_t i = 0; i < f->nids && !mc->err; i++) {
      uint64_t pos;
      if (store_find(st, f->ids[i], &pos) == STORE_OK && !(a->bits[pos / 8] >> (pos % 8) & 1) &&
          meets(mc, pos)) {
        a->bits[pos / 8] |= (uint8_t)(1u << (pos % 8));
        a->flt.nbits++;
      }
    }
    a->flt.bits = a->bits;
    if (!a->flt.nbits) a->none = 1;
  } else if (f->has_ts && allow_from_time(st, f, mc, a) != 0) {
    /* (a selective range: the bits, or an error search_knn_allow_check reports) */
  } else if (f->has[0] || f->has[1] || f->has[2] || f->has_ts || mc->noarch) {
    a->flt.fn = meets_fn; /* decided row by row, as the search needs */
    a->flt.fn_all = meets_all; /* or for all at once */
    a->flt.ctx = mc;
  }
  return search_knn_allow_check(a, st, pzErr);
}

int search_knn_allow_check(const knn_allow *a, store *st, char **pzErr) {
  return a->c ? h5mem_store_err(st, a->c->mc.err, pzErr) : SQLITE_OK;
}

void search_knn_allow_free(knn_allow *a) {
  sqlite3_free(a->bits);
  sqlite3_free(a->c);
  memset(a, 0, sizeof *a);
}

int search_knn_run(store *st, const float *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
                   ann_res **out, uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (f->empty || k == 0 || store_count(st) == 0) return SQLITE_OK;
  knn_allow al;
  int rc = search_knn_allow_init(st, f, &al, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (al.none) {
    search_knn_allow_free(&al);
    return SQLITE_OK;
  }
  if (k > store_count(st)) k = store_count(st);
  ann_res *res = sqlite3_malloc64(k * sizeof *res + 1);
  int src = res ? store_knn(st, q, k, &al.flt, o, res, nout) : STORE_ENOMEM;
  rc = search_knn_allow_check(&al, st, pzErr);
  search_knn_allow_free(&al);
  if (rc == SQLITE_OK) rc = h5mem_store_err(st, src, pzErr);
  if (rc == SQLITE_OK) rc = search_knn_check(st, res, *nout, pzErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(res);
    *nout = 0;
    return rc;
  }
  *out = res;
  return SQLITE_OK;
}

static const char *metric_name(int metric) {
  return metric == STORE_L2 ? "l2" : metric == STORE_DOT ? "dot" : "cosine";
}

/* The kernels sum in float32 lanes (kernels/k.h): a squared norm beyond
** FLT_MAX overflows them, and under cosine one below FLT_MIN loses its
** digits or reads as zero (a distance of 1 whatever the direction).  The
** SQL functions rescale such vectors (func_vec.c); a search cannot rescale
** the stored side, so an embedding outside that range is refused. */
int search_knn_vec_range(int metric, const float *v, int dim, char *buf, size_t n) {
  double nn = 0;
  for (int i = 0; i < dim; i++) nn += (double)v[i] * (double)v[i];
  if (nn > FLT_MAX) {
    snprintf(buf, n, "its squared norm (%g) is beyond the float32 range (%g) that distances are computed in "
             "(the norm must be below %g)", nn, (double)FLT_MAX, sqrt((double)FLT_MAX));
    return 1;
  }
  if (metric == STORE_COSINE && nn > 0 && nn < FLT_MIN) {
    snprintf(buf, n, "its squared norm (%g) is below the float32 range (%g) that cosine distances are computed "
             "in (metric=cosine; scaling the vector up does not change its cosine distances)", nn,
             (double)FLT_MIN);
    return 1;
  }
  return 0;
}

/* The query as the kernels are to score it, whatever its scale: under
** cosine, the unit vector (normalised in double: its squared norm is 1, so
** nothing over- or underflows, and the distances are the same); under dot,
** a query whose norm is far from 1 times a power of two (exact, the
** ranking unchanged; *unit undoes it in search_knn_distance and
** search_knn_score); under l2, where neither helps, a query beyond
** float32's range is refused. */
static int query_prepare(store *st, float *f, int dim, double *unit, char **pzErr) {
  double nn = 0;
  for (int i = 0; i < dim; i++) nn += (double)f[i] * (double)f[i];
  *unit = 1.0;
  int metric = store_metric(st);
  if (metric == STORE_COSINE) {
    if (nn == 0) {
      *pzErr = sqlite3_mprintf("a zero query vector has no cosine distance (metric=cosine)");
      return SQLITE_ERROR;
    }
    double r = 1.0 / sqrt(nn);
    for (int i = 0; i < dim; i++) f[i] = (float)((double)f[i] * r);
  } else if (metric == STORE_L2) {
    if (nn > FLT_MAX) {
      *pzErr = sqlite3_mprintf("the query's squared norm (%g) is beyond the float32 range (%g) that metric=l2 "
                               "computes squared distances in (the norm must be below %g)",
                               nn, (double)FLT_MAX, sqrt((double)FLT_MAX));
      return SQLITE_ERROR;
    }
  } else {
    int e = 0;
    if (nn > 0) frexp(sqrt(nn), &e);
    if (e < -30 || e > 30) { /* (a query nearer 1 is left as it is, its results unchanged) */
      for (int i = 0; i < dim; i++) f[i] = (float)ldexp((double)f[i], -e);
      *unit = ldexp(1.0, e);
    }
  }
  return SQLITE_OK;
}

/* A search's distances must be finite: an infinite one (a stored vector or
** the query too large for float32) would rank by chance. */
int search_knn_check(store *st, const ann_res *r, uint64_t n, char **pzErr) {
  for (uint64_t i = 0; i < n; i++)
    if (!isfinite(r[i].dist)) {
      *pzErr = sqlite3_mprintf("the distance from the query to record %lld overflows float32 (metric=%s): "
                               "the query or that embedding is too large",
                               (long long)store_pos_id(st, r[i].pos), metric_name(store_metric(st)));
      return SQLITE_ERROR;
    }
  return SQLITE_OK;
}

/* The query vector: a float32 BLOB (float16 with vec_f16's subtype) or
** JSON; its length must be the store's dim.  Prepared for the kernels by
** query_prepare: distances are the raw ones times *unit. */
int search_knn_query(store *st, memvt *mt, sqlite3_value *v, float **out, double *unit, char **pzErr) {
  *out = NULL;
  *unit = 1.0;
  int dim = store_dim(st);
  float *f = sqlite3_malloc64((sqlite3_uint64)dim * 4);
  if (!f) return SQLITE_NOMEM;
  int t = sqlite3_value_type(v);
  if (t == SQLITE_BLOB) {
    int f16 = sqlite3_value_subtype(v) == EXT_SUBTYPE_F16;
    size_t len = (size_t)sqlite3_value_bytes(v), want = (size_t)dim * (f16 ? 2 : 4);
    if (sqlite3_value_subtype(v) == EXT_SUBTYPE_INT8 || sqlite3_value_subtype(v) == EXT_SUBTYPE_BIT) {
      *pzErr = sqlite3_mprintf("the query is an %s vector; the embedding is float (convert it with vec_f32())",
                               sqlite3_value_subtype(v) == EXT_SUBTYPE_INT8 ? "int8" : "bit");
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    if (len != want) {
      *pzErr = sqlite3_mprintf("the query is a %s BLOB of %llu values; the store has dim=%d",
                               f16 ? "float16" : "float32", (unsigned long long)(len / (f16 ? 2 : 4)), dim);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    if (f16) {
      uint16_t *h = sqlite3_malloc64(want);
      if (!h) {
        sqlite3_free(f);
        return SQLITE_NOMEM;
      }
      memcpy(h, sqlite3_value_blob(v), want);
      k_get()->f16_to_f32(h, f, (size_t)dim);
      sqlite3_free(h);
    } else {
      memcpy(f, sqlite3_value_blob(v), want);
    }
  } else if (t == SQLITE_TEXT) {
    float *p = NULL;
    size_t n = 0;
    char err[256];
    const char *s = (const char *)sqlite3_value_text(v);
    size_t sn = (size_t)sqlite3_value_bytes(v), i = 0;
    while (i < sn && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    if (mt && s && (i == sn || s[i] != '[')) { /* text, not a JSON array: the table's embedder */
      int rc = SQLITE_OK, done = h5mem_text_query(mt, s, sn, f, &rc, pzErr);
      if (done < 0 || (done == 0 && rc != SQLITE_OK)) {
        sqlite3_free(f);
        return rc;
      }
      if (done == 1) goto have;
    }
    if (util_json_to_f32(s, sn, &p, &n, err, sizeof err)) {
      *pzErr = i < sn && s[i] == '['
                   ? sqlite3_mprintf("the query: %s", err)
                   : sqlite3_mprintf("the query: %s (a text query needs the store's embedder: "
                                     "embedder='hash:DIM' or 'static:/path/model.h5')", err);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    if (n != (size_t)dim) {
      *pzErr = sqlite3_mprintf("the query has %llu values; the store has dim=%d", (unsigned long long)n, dim);
      free(p);
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
    memcpy(f, p, (size_t)dim * 4);
    free(p);
  } else {
    *pzErr = sqlite3_mprintf("the query must be a float32 BLOB, a JSON array of %d numbers or (with the "
                             "store's embedder) a text, not %s", dim,
                             t == SQLITE_NULL ? "NULL" : "a number");
    sqlite3_free(f);
    return SQLITE_ERROR;
  }
have:
  for (int i = 0; i < dim; i++)
    if (!isfinite(f[i])) {
      *pzErr = sqlite3_mprintf("the query's element %d is %s", i, isnan(f[i]) ? "NaN" : "infinite");
      sqlite3_free(f);
      return SQLITE_ERROR;
    }
  int rc = query_prepare(st, f, dim, unit, pzErr);
  if (rc != SQLITE_OK) {
    sqlite3_free(f);
    return rc;
  }
  *out = f;
  return SQLITE_OK;
}

/* Distances as reported: L2 as the Euclidean distance (sqlite-vec's), not
** its square; the score: cosine similarity, dot product, or 1/(1+L2).
** unit: search_knn_query's (dot's scale; 1 otherwise). */
double search_knn_distance(const store *st, float d, double unit) {
  return store_metric(st) == STORE_L2 ? sqrt((double)d) : (double)d * unit;
}

/* ---- search by a declared vector column ------------------------------------------ */

int search_col_query(store *st, int c, sqlite3_value *v, void **out, char **pzErr) {
  const store_coldef *d = store_col(st, c);
  *out = NULL;
  size_t dim = (size_t)d->dim, w = store_coldef_width(d);
  int isf = d->vtype == STORE_VT_F32 || d->vtype == STORE_VT_F16;
  uint8_t *q = sqlite3_malloc64(isf ? dim * 4 : w + 1);
  if (!q) return SQLITE_NOMEM;
  int t = sqlite3_value_type(v), rc = SQLITE_OK;
  if (t == SQLITE_BLOB) {
    size_t n = (size_t)sqlite3_value_bytes(v);
    const void *b = sqlite3_value_blob(v);
    int st_ = (int)sqlite3_value_subtype(v), f16 = st_ == EXT_SUBTYPE_F16;
    int want_st = isf ? 0 : d->vtype == STORE_VT_I8 ? EXT_SUBTYPE_INT8 : EXT_SUBTYPE_BIT;
    int other = isf ? (st_ == EXT_SUBTYPE_INT8 || st_ == EXT_SUBTYPE_BIT)
                    : (st_ == EXT_SUBTYPE_F32 || st_ == EXT_SUBTYPE_F16 || (st_ && st_ != want_st &&
                                                                          (st_ == EXT_SUBTYPE_INT8 || st_ == EXT_SUBTYPE_BIT)));
    if (other) {
      *pzErr = sqlite3_mprintf("the query for column %s is a vector of another type (the column is %s)", d->name,
                               d->vtype == STORE_VT_I8 ? "int8" : d->vtype == STORE_VT_BIT ? "bit"
                               : d->vtype == STORE_VT_F16 ? "float16" : "float32");
      rc = SQLITE_ERROR;
    } else if (isf && f16 && n == dim * 2) {
      uint16_t *h = sqlite3_malloc64(n + 1);
      if (!h) rc = SQLITE_NOMEM;
      else {
        memcpy(h, b, n);
        k_get()->f16_to_f32(h, (float *)(void *)q, dim);
        sqlite3_free(h);
      }
    } else if (n == (isf ? dim * 4 : w)) {
      memcpy(q, b, n);
    } else {
      *pzErr = sqlite3_mprintf("the query for column %s is a BLOB of %llu bytes; expected %llu (%d dimensions of %s)",
                               d->name, (unsigned long long)n, (unsigned long long)(isf ? dim * 4 : w), d->dim,
                               d->vtype == STORE_VT_I8 ? "int8" : d->vtype == STORE_VT_BIT ? "bit" : "float32");
      rc = SQLITE_ERROR;
    }
  } else if (t == SQLITE_TEXT && d->vtype == STORE_VT_I8) {
    int8_t *i8 = NULL;
    size_t n = 0;
    char err[200];
    if (util_json_to_i8((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &i8, &n, err, sizeof err)) {
      *pzErr = sqlite3_mprintf("the query for int8 column %s: %s", d->name, err);
      rc = SQLITE_ERROR;
    } else if (n != dim) {
      *pzErr = sqlite3_mprintf("the query for column %s has %llu dimensions; the column has %d", d->name,
                               (unsigned long long)n, d->dim);
      rc = SQLITE_ERROR;
    } else {
      memcpy(q, i8, dim);
    }
    free(i8);
  } else if (t == SQLITE_TEXT && isf) {
    float *f = NULL;
    size_t n = 0;
    char err[200];
    if (util_json_to_f32((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &f, &n, err, sizeof err)) {
      *pzErr = sqlite3_mprintf("the query for column %s: %s", d->name, err);
      rc = SQLITE_ERROR;
    } else if (n != dim) {
      *pzErr = sqlite3_mprintf("the query for column %s has %llu dimensions; the column has %d", d->name,
                               (unsigned long long)n, d->dim);
      rc = SQLITE_ERROR;
    } else {
      memcpy(q, f, dim * 4);
    }
    free(f);
  } else {
    *pzErr = sqlite3_mprintf("the query for column %s must be a %s", d->name,
                             d->vtype == STORE_VT_BIT ? "bit vector BLOB (vec_bit)" : "BLOB or a JSON array");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && isf) {
    const float *f = (const float *)(void *)q;
    double nn = 0;
    for (size_t i = 0; i < dim && rc == SQLITE_OK; i++) {
      if (!isfinite(f[i])) {
        *pzErr = sqlite3_mprintf("the query for column %s: element %llu is not finite", d->name,
                                 (unsigned long long)i);
        rc = SQLITE_ERROR;
      }
      nn += (double)f[i] * f[i];
    }
    if (rc == SQLITE_OK && d->metric == STORE_COSINE && nn == 0) {
      *pzErr = sqlite3_mprintf("a zero query vector has no cosine distance (column %s)", d->name);
      rc = SQLITE_ERROR;
    }
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(q);
    return rc;
  }
  *out = q;
  return SQLITE_OK;
}

int search_knn_run_col(store *st, int c, const void *q, uint64_t k, const knn_filter *f, const store_knn_opts *o,
                       ann_res **out,
                       uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  if (f->empty || k == 0 || store_count(st) == 0) return SQLITE_OK;
  knn_allow al;
  int rc = search_knn_allow_init(st, f, &al, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (al.none) {
    search_knn_allow_free(&al);
    return SQLITE_OK;
  }
  if (k > store_count(st)) k = store_count(st);
  ann_res *res = sqlite3_malloc64(k * sizeof *res + 1);
  int src = res ? store_knn_col(st, c, q, k, &al.flt, o, res, nout) : STORE_ENOMEM;
  rc = search_knn_allow_check(&al, st, pzErr);
  search_knn_allow_free(&al);
  if (rc == SQLITE_OK) rc = h5mem_store_err(st, src, pzErr);
  for (uint64_t i = 0; rc == SQLITE_OK && i < *nout; i++)
    if (!isfinite(res[i].dist)) {
      *pzErr = sqlite3_mprintf("the distance from the query to record %lld overflows float32 (column %s)",
                               (long long)store_pos_id(st, res[i].pos), store_col(st, c)->name);
      rc = SQLITE_ERROR;
    }
  if (rc != SQLITE_OK) {
    sqlite3_free(res);
    *nout = 0;
    return rc;
  }
  *out = res;
  return SQLITE_OK;
}

double search_col_score(const store_coldef *d, double dist) {
  return d->metric == STORE_DOT ? -dist : d->metric == STORE_COSINE ? 1.0 - dist : 1.0 / (1.0 + dist);
}

double search_knn_score(const store *st, float d, double unit) {
  switch (store_metric(st)) {
  case STORE_L2: return 1.0 / (1.0 + sqrt((double)d));
  case STORE_DOT: return -(double)d * unit;
  default: return 1.0 - (double)d;
  }
}

/* Plan the constraints a KNN can apply before ranking: columns map a
** column number to KNN_F_* (or -1); tokens go to plan (2 chars each:
** field, op) in argv order starting at *argi. */
void search_knn_plan(sqlite3_index_info *info, const int *colfield, int ncols, char *plan, size_t cap,
                     int *argi, int *used) {
  size_t n = strlen(plan);
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    if (!k->usable || info->aConstraintUsage[c].argvIndex) continue;
    int field = k->iColumn >= 0 && k->iColumn < ncols ? colfield[k->iColumn] : -1;
    if (k->iColumn == -1) field = KNN_F_ID;
    if (field < 0) continue;
    int op = -1;
    switch (k->op) {
    case SQLITE_INDEX_CONSTRAINT_EQ: op = KNN_OP_EQ; break;
    case SQLITE_INDEX_CONSTRAINT_GT: op = KNN_OP_GT; break;
    case SQLITE_INDEX_CONSTRAINT_GE: op = KNN_OP_GE; break;
    case SQLITE_INDEX_CONSTRAINT_LT: op = KNN_OP_LT; break;
    case SQLITE_INDEX_CONSTRAINT_LE: op = KNN_OP_LE; break;
    }
    if (op < 0 || (field != KNN_F_TS && op != KNN_OP_EQ)) continue;
    int text = field == KNN_F_SOURCE || field == KNN_F_SESSION || field == KNN_F_TIER;
    const char *coll = text ? sqlite3_vtab_collation(info, c) : NULL;
    if (coll && sqlite3_stricmp(coll, "BINARY")) continue; /* (bytes compared: BINARY only) */
    if (field == KNN_F_ID && op == KNN_OP_EQ && sqlite3_libversion_number() >= 3038000 &&
        sqlite3_vtab_in(info, c, -1)) {
      sqlite3_vtab_in(info, c, 1); /* the whole IN list at once */
      op = KNN_OP_IN;
    } else if (field == KNN_F_ID && op == KNN_OP_EQ && sqlite3_libversion_number() < 3038000) {
      continue; /* an IN would run the search once per value */
    }
    if (n + 2 >= cap) break;
    plan[n++] = (char)('0' + field);
    plan[n++] = (char)('0' + op);
    plan[n] = 0;
    info->aConstraintUsage[c].argvIndex = ++*argi;
    /* a text condition is tested again by SQLite: a number on the other
    ** side compares by its affinity (search_knn_filter_add) */
    info->aConstraintUsage[c].omit = !text;
    (*used)++;
  }
}

/* ---- the table-valued functions ------------------------------------------ */

/* vec_search, bm25 and hybrid share one module shape: the columns below
** (their roles), hidden arguments, filters planned by search_knn_plan, results
** computed whole in xFilter (srow) and read out by position. */
enum {
  R_ID, R_DISTANCE, R_SCORE, R_VSCORE, R_KSCORE, R_TEXT, R_SOURCE, R_SESSION, R_TS, R_TIER,
  R_STORE, R_QUERY, R_QTEXT, R_K, R_OPTIONS,
  R_PATH /* hidden, not an argument: the file of the row's store */
};
#define R_HIDDEN R_STORE

typedef struct fkind {
  const char *name;
  const char *schema;
  int ncol;
  int role[16];
  int order_col;  /* the column whose order the results come in */
  int order_desc;
  int (*run)(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
             uint64_t *nout, char **pzErr);
} fkind;

static const fkind kinds[3] = {
    {"vec_search",
     "CREATE TABLE x(id INTEGER, distance REAL, score REAL, text TEXT, source TEXT, session TEXT, "
     "ts INTEGER, tier TEXT, store HIDDEN, query HIDDEN, k HIDDEN, options HIDDEN, path HIDDEN)",
     13,
     {R_ID, R_DISTANCE, R_SCORE, R_TEXT, R_SOURCE, R_SESSION, R_TS, R_TIER, R_STORE, R_QUERY, R_K,
      R_OPTIONS, R_PATH},
     1, 0, search_vec_run},
    {"bm25",
     "CREATE TABLE x(id INTEGER, score REAL, text TEXT, source TEXT, session TEXT, ts INTEGER, "
     "tier TEXT, store HIDDEN, query HIDDEN, k HIDDEN, options HIDDEN, path HIDDEN)",
     12,
     {R_ID, R_SCORE, R_TEXT, R_SOURCE, R_SESSION, R_TS, R_TIER, R_STORE, R_QTEXT, R_K, R_OPTIONS, R_PATH},
     1, 1, search_bm25_run},
    {"hybrid",
     "CREATE TABLE x(id INTEGER, score REAL, vector_score REAL, keyword_score REAL, text TEXT, "
     "source TEXT, session TEXT, ts INTEGER, tier TEXT, store HIDDEN, query_text HIDDEN, "
     "query_vec HIDDEN, k HIDDEN, options HIDDEN, path HIDDEN)",
     15,
     {R_ID, R_SCORE, R_VSCORE, R_KSCORE, R_TEXT, R_SOURCE, R_SESSION, R_TS, R_TIER, R_STORE,
      R_QTEXT, R_QUERY, R_K, R_OPTIONS, R_PATH},
     1, 1, search_hybrid_run},
};

static const int role_field[R_PATH + 1] = {KNN_F_ID, -1, -1, -1, -1, -1, KNN_F_SOURCE,
                                           KNN_F_SESSION, KNN_F_TS, KNN_F_TIER, -1, -1, -1,
                                           -1, -1, -1};

/* The table object: an ext_tvf (vtab_int.h) whose kind is one of kinds. */
static const fkind *kind_of(sqlite3_vtab *vt) { return ((const ext_tvf *)vt)->kind; }

typedef struct scur {
  sqlite3_vtab_cursor base;
  memvt *mt;       /* a table's search (NULL: a fleet's) */
  search_set ss;   /* its stores: those of the results stay pinned */
  int have_ss;
  srow *res;
  uint64_t n, i;
  store_view v;
  int have_v;
} scur;

EXT_TVF_CONNECT(vec_connect, &kinds[0])
EXT_TVF_CONNECT(bm25_connect, &kinds[1])
EXT_TVF_CONNECT(hybrid_connect, &kinds[2])

/* idxStr: one token per argument: 'S','Q','T','K','O' for the hidden
** ones (store, query vector, query text, k, options), then the filter
** tokens of search_knn_plan. */
static int s_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  const fkind *kd = kind_of(base);
  static const char tok[5] = {'S', 'Q', 'T', 'K', 'O'};
  int need[5] = {-1, -1, -1, -1, -1}, has[5] = {0, 0, 0, 0, 0};
  int field[16];
  for (int c = 0; c < kd->ncol; c++) {
    field[c] = role_field[kd->role[c]];
    if (kd->role[c] >= R_HIDDEN && kd->role[c] != R_PATH) has[kd->role[c] - R_HIDDEN] = 1;
  }
  for (int c = 0; c < info->nConstraint; c++) {
    const struct sqlite3_index_constraint *k = &info->aConstraint[c];
    if (k->iColumn < 0 || k->iColumn >= kd->ncol || kd->role[k->iColumn] < R_HIDDEN ||
        kd->role[k->iColumn] == R_PATH || k->op != SQLITE_INDEX_CONSTRAINT_EQ)
      continue;
    if (!k->usable) return SQLITE_CONSTRAINT;
    need[kd->role[k->iColumn] - R_HIDDEN] = c;
  }
  /* the store and the queries are required */
  for (int j = 0; j < 3; j++)
    if (has[j] && need[j] < 0) return SQLITE_CONSTRAINT;
  char *plan = sqlite3_malloc(256);
  if (!plan) return SQLITE_NOMEM;
  int argi = 0, used = 0;
  size_t n = 0;
  for (int j = 0; j < 5; j++) {
    if (need[j] < 0) continue;
    plan[n++] = tok[j];
    info->aConstraintUsage[need[j]].argvIndex = ++argi;
    info->aConstraintUsage[need[j]].omit = 1;
  }
  plan[n] = 0;
  search_knn_plan(info, field, kd->ncol, plan, 256, &argi, &used);
  info->idxStr = plan;
  info->needToFreeIdxStr = 1;
  info->estimatedCost = 1000.0 / (1 + used);
  info->estimatedRows = 10;
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == kd->order_col &&
      info->aOrderBy[0].desc == kd->order_desc)
    info->orderByConsumed = 1;
  return SQLITE_OK;
}

static int s_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  (void)base;
  scur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void s_reset(scur *c) {
  sqlite3_free(c->res);
  c->res = NULL;
  c->n = c->i = 0;
  if (c->mt) h5mem_table_hold(c->mt, -1);
  c->mt = NULL;
  if (c->have_ss) search_set_free(&c->ss);
  c->have_ss = 0;
}

static int s_close(sqlite3_vtab_cursor *cur) {
  s_reset((scur *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* A message (*msg, taken) as the function's error (ext_vtab_msg). */
static int s_msg(sqlite3_vtab *vt, int rc, char **msg) { return ext_vtab_msg(vt, rc, kind_of(vt)->name, msg); }

srow *search_srow_alloc(uint64_t n) {
  srow *r = sqlite3_malloc64(n * sizeof *r + 1);
  if (r) memset(r, 0, n * sizeof *r);
  return r;
}

#define KNN_KNOWN "exact true/false, ef an integer 1..100000, nprobe an integer 1..16777216, " \
                  "index 'flat', 'hnsw' or 'ivf', column 'name', columns ['name', ...], " SEARCH_TOUCH_KNOWN

typedef struct vec_opts {
  store_knn_opts ko;
  search_touch *touch;
  char *cols[STORE_COLS_MAX + 1]; /* "column" / "columns": the vector columns to search (sqlite3_malloc'd) */
  int ncols;
} vec_opts;

static int vec_option(void *ctx, const char *key, const search_opt *v, char **err) {
  vec_opts *o = ctx;
  if (!strcmp(key, "column") || !strcmp(key, "columns")) {
    if (o->ncols) {
      *err = sqlite3_mprintf("give column or columns, once");
      return SQLITE_ERROR;
    }
    if (!strcmp(key, "column")) {
      if (v->type != UTIL_JSON_TEXT || !v->text) {
        *err = sqlite3_mprintf("expected a column's name");
        return SQLITE_ERROR;
      }
      if (!(o->cols[o->ncols++] = sqlite3_mprintf("%s", v->text))) return SQLITE_NOMEM;
      return SQLITE_OK;
    }
    util_json_iter it;
    if (v->type != UTIL_JSON_ARRAY || util_json_iter_init(&it, v->json, 0, v->len)) {
      *err = sqlite3_mprintf("expected an array of vector columns' names");
      return SQLITE_ERROR;
    }
    while (util_json_next(&it)) {
      if (util_json_type(v->json, it.v0, v->len) != UTIL_JSON_TEXT || o->ncols > STORE_COLS_MAX) {
        *err = sqlite3_mprintf("expected an array of at most %d vector columns' names", STORE_COLS_MAX + 1);
        return SQLITE_ERROR;
      }
      char *name = util_json_cstr(v->json, it.v0, v->len, NULL);
      if (!name) return SQLITE_NOMEM;
      o->cols[o->ncols] = sqlite3_mprintf("%s", name);
      free(name);
      if (!o->cols[o->ncols++]) return SQLITE_NOMEM;
    }
    if (!o->ncols) {
      *err = sqlite3_mprintf("expected at least one column");
      return SQLITE_ERROR;
    }
    return SQLITE_OK;
  }
  int rc = search_touch_option(o->touch, key, v, err);
  return rc != SEARCH_UNKNOWN ? rc : search_knn_option(&o->ko, key, v, err);
}

static int res_by_pos(const void *a, const void *b) {
  const ann_res *x = a, *y = b;
  return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : (x->dist > y->dist) - (x->dist < y->dist);
}
static int res_by_dist(const void *a, const void *b) {
  const ann_res *x = a, *y = b;
  return x->dist < y->dist ? -1 : x->dist > y->dist ? 1 : (x->pos > y->pos) - (x->pos < y->pos);
}

/* vec_search by the columns named (the embedding is "embedding"): each
** column's k nearest (final distances), and with several columns each
** record's best (the union of the columns' top k holds the k records of
** smallest best distance: exact when each column's search is). */
static int vec_run_cols(store *st, const search_args *a, const knn_filter *f, const vec_opts *vo, srow **out,
                        uint64_t *nout, char **pzErr) {
  int col[STORE_COLS_MAX + 1], metric = -1, dim = 0, rc = SQLITE_OK;
  for (int i = 0; i < vo->ncols; i++) {
    const char *name = vo->cols[i];
    int c = sqlite3_stricmp(name, "embedding") ? store_col_find(st, name, strlen(name)) : -1;
    const store_coldef *d = c >= 0 ? store_col(st, c) : NULL;
    if (sqlite3_stricmp(name, "embedding") && (!d || d->type != STORE_T_VECTOR)) {
      *pzErr = sqlite3_mprintf("options: column: '%s' is not a vector column of the table", name);
      return SQLITE_ERROR;
    }
    int m = d ? d->metric : store_metric(st), n = d ? d->dim : store_dim(st);
    if (vo->ncols > 1 && ((metric >= 0 && (m != metric || n != dim)) ||
                          (d && d->vtype != STORE_VT_F32 && d->vtype != STORE_VT_F16))) {
      *pzErr = sqlite3_mprintf("options: columns: searched together, the columns must be float vectors of one "
                               "dimension and one metric (%s differs)", name);
      return SQLITE_ERROR;
    }
    metric = m;
    dim = n;
    col[i] = c;
  }
  ann_res *all = NULL;
  uint64_t nall = 0;
  for (int i = 0; i < vo->ncols && rc == SQLITE_OK; i++) {
    ann_res *res = NULL;
    uint64_t n = 0;
    void *q = NULL;
    double unit = 1.0;
    if (col[i] >= 0) {
      if ((rc = search_col_query(st, col[i], a->query, &q, pzErr)) == SQLITE_OK)
        rc = search_knn_run_col(st, col[i], q, (uint64_t)a->k, f, &vo->ko, &res, &n, pzErr);
    } else if ((rc = search_knn_query(st, a->mt, a->query, (float **)&q, &unit, pzErr)) == SQLITE_OK) {
      rc = search_knn_run(st, q, (uint64_t)a->k, f, &vo->ko, &res, &n, pzErr);
      for (uint64_t j = 0; j < n; j++) res[j].dist = (float)search_knn_distance(st, res[j].dist, unit);
    }
    sqlite3_free(q);
    if (rc == SQLITE_OK && n) {
      ann_res *g = sqlite3_realloc64(all, (nall + n) * sizeof *g);
      if (!g) rc = SQLITE_NOMEM;
      else {
        all = g;
        memcpy(all + nall, res, n * sizeof *res);
        nall += n;
      }
    }
    sqlite3_free(res);
  }
  if (rc != SQLITE_OK) {
    sqlite3_free(all);
    return rc;
  }
  /* each record once, at its best distance, then the k best */
  qsort(all, nall, sizeof *all, res_by_pos);
  uint64_t m = 0;
  for (uint64_t i = 0; i < nall; i++)
    if (!m || all[m - 1].pos != all[i].pos) all[m++] = all[i];
  qsort(all, m, sizeof *all, res_by_dist);
  if (m > (uint64_t)a->k) m = (uint64_t)a->k;
  srow *r = search_srow_alloc(m);
  if (!r) {
    sqlite3_free(all);
    return SQLITE_NOMEM;
  }
  const store_coldef *d0 = col[0] >= 0 ? store_col(st, col[0]) : NULL;
  for (uint64_t i = 0; i < m; i++) {
    r[i].pos = all[i].pos;
    r[i].v[0] = all[i].dist;
    if (d0) r[i].v[1] = search_col_score(d0, all[i].dist);
    else
      r[i].v[1] = metric == STORE_L2 ? 1.0 / (1.0 + all[i].dist) : metric == STORE_DOT ? -(double)all[i].dist
                                                                                        : 1.0 - all[i].dist;
  }
  sqlite3_free(all);
  *out = r;
  *nout = m;
  return SQLITE_OK;
}

int search_set_err(const search_set *ss, int i, int rc, char **pzErr) {
  if (rc != SQLITE_OK && ss->fl && *pzErr) {
    char *m = sqlite3_mprintf("%s: %s", search_set_path(ss, i), *pzErr);
    sqlite3_free(*pzErr);
    *pzErr = m;
    if (!m) rc = SQLITE_NOMEM;
  }
  return rc;
}

int search_set_pin(search_set *ss, int i, store **st, char **pzErr) {
  return search_set_err(ss, i, search_set_store(ss, i, st, pzErr), pzErr);
}

int search_set_keep(search_set *ss, const srow *res, uint64_t n) {
  if (!ss->fl) return SQLITE_OK;
  uint8_t *keep = sqlite3_malloc64((uint64_t)ss->n + 1);
  if (!keep) return SQLITE_NOMEM;
  memset(keep, 0, (size_t)ss->n + 1);
  for (uint64_t i = 0; i < n; i++) keep[SEARCH_SIDX(res[i].pos)] = 1;
  for (int i = 0; i < ss->n; i++)
    if (!keep[i]) search_set_let(ss, i);
  sqlite3_free(keep);
  return SQLITE_OK;
}

int search_set_merge(search_set *ss, int i, srow *r, uint64_t n, uint64_t k, int desc, srow **top,
                     uint64_t *ntop, uint32_t *held, const uint32_t *hold) {
  uint64_t m = *ntop + n < k ? *ntop + n : k, a = 0, b = 0, j = 0;
  const srow *t = *top;
  srow *o = search_srow_alloc(m);
  if (!o) return SQLITE_NOMEM;
  while (j < m && (a < *ntop || b < n)) {
    int take = a >= *ntop || (b < n && (desc ? r[b].v[0] > t[a].v[0] : r[b].v[0] < t[a].v[0]));
    o[j++] = take ? r[b++] : t[a++];
  }
  for (uint64_t x = 0; x < *ntop; x++) held[SEARCH_SIDX(t[x].pos)] = 0;
  held[i] = 0;
  for (uint64_t x = 0; x < j; x++) held[SEARCH_SIDX(o[x].pos)]++;
  /* the stores that lost all their rows (and keep none elsewhere) */
  for (uint64_t x = 0; x <= *ntop; x++) {
    int s = x < *ntop ? SEARCH_SIDX(t[x].pos) : i;
    if (!held[s] && !(hold && hold[s])) search_set_let(ss, s);
  }
  sqlite3_free(*top);
  *top = o;
  *ntop = j;
  return SQLITE_OK;
}

/* The query vector of a set's search, prepared by its first store (the
** stores of a fleet must share dim and metric: search_set_store checks). */
static int set_query(search_set *ss, memvt *mt, sqlite3_value *v, float **q, double *unit, char **pzErr) {
  store *st;
  int rc = search_set_pin(ss, 0, &st, pzErr);
  if (rc == SQLITE_OK) rc = search_knn_query(st, mt, v, q, unit, pzErr);
  return rc;
}

/* vec_search: the k nearest; options {"exact": bool, "ef": n, "nprobe": n,
** "index": "flat"|"hnsw"|"ivf"} ("index": "flat" is "exact": true; the
** others, the store's index), "column"/"columns" (vector columns), and
** touch, now (search_touch).  Over a fleet: each store's k nearest merged,
** which is exact when each store's search is. */
int search_vec_run(search_set *ss, const search_args *a, const knn_filter *f, srow **out,
                   uint64_t *nout, char **pzErr) {
  *out = NULL;
  *nout = 0;
  vec_opts vo;
  memset(&vo, 0, sizeof vo);
  vo.touch = a->touch;
  int rc = search_opts_parse(a->options, KNN_KNOWN, vec_option, &vo, pzErr);
  store_knn_opts ko = vo.ko;
  if (rc == SQLITE_OK && vo.ncols && ss->fl) {
    *pzErr = sqlite3_mprintf("options: column(s): a fleet searches the embedding alone");
    rc = SQLITE_ERROR;
  } else if (rc == SQLITE_OK && vo.ncols) {
    rc = vec_run_cols(ss->one, a, f, &vo, out, nout, pzErr);
  }
  for (int i = 0; i < vo.ncols; i++) sqlite3_free(vo.cols[i]);
  if (rc != SQLITE_OK || vo.ncols || !ss->n) return rc;
  float *q = NULL;
  double unit = 1.0;
  if ((rc = set_query(ss, a->mt, a->query, &q, &unit, pzErr)) != SQLITE_OK) return rc;
  uint32_t *held = sqlite3_malloc64((uint64_t)ss->n * sizeof *held);
  if (!held) rc = SQLITE_NOMEM;
  srow *top = NULL;
  uint64_t ntop = 0;
  for (int i = 0; i < ss->n && rc == SQLITE_OK; i++) {
    store *st;
    ann_res *res = NULL;
    uint64_t n = 0;
    if ((rc = search_set_pin(ss, i, &st, pzErr)) != SQLITE_OK) break;
    rc = search_set_err(ss, i, search_knn_run(st, q, (uint64_t)a->k, f, &ko, &res, &n, pzErr), pzErr);
    srow *r = rc == SQLITE_OK ? search_srow_alloc(n) : NULL;
    if (rc == SQLITE_OK && !r) rc = SQLITE_NOMEM;
    for (uint64_t j = 0; r && j < n; j++) {
      r[j].pos = SEARCH_GPOS(i, res[j].pos);
      r[j].v[0] = search_knn_distance(st, res[j].dist, unit);
      r[j].v[1] = search_knn_score(st, res[j].dist, unit);
    }
    sqlite3_free(res);
    if (rc == SQLITE_OK) rc = search_set_merge(ss, i, r, n, (uint64_t)a->k, 0, &top, &ntop, held, NULL);
    sqlite3_free(r);
  }
  sqlite3_free(q);
  sqlite3_free(held);
  if (rc != SQLITE_OK) {
    sqlite3_free(top);
    return rc;
  }
  *out = top;
  *nout = ntop;
  return SQLITE_OK;
}

/* Record a use of each memory of the results (h5mem_touch_ids: one
** savepoint, in the caller's transaction), once the results are known: the
** ranking saw the access values before it (hybrid's rerank reads them),
** the rows read afterwards (the table joined on id) see them after.  The
** cursor holds the store (h5mem_table_hold) meanwhile, so no automatic
** checkpoint moves the records; each result's position is looked up again
** by its id all the same, whatever the touch did to the records. */
static int s_touch(scur *c, int64_t now, char **pzErr) {
  if (!c->n) return SQLITE_OK;
  int64_t *ids = sqlite3_malloc64(c->n * sizeof *ids);
  if (!ids) return SQLITE_NOMEM;
  for (uint64_t i = 0; i < c->n; i++) ids[i] = store_pos_id(c->ss.one, c->res[i].pos);
  int rc = h5mem_touch_ids(c->mt, ids, (size_t)c->n, now, pzErr);
  for (uint64_t i = 0; rc == SQLITE_OK && i < c->n; i++) {
    uint64_t pos;
    int src = store_find(c->ss.one, ids[i], &pos);
    if (src != STORE_OK) {
      *pzErr = sqlite3_mprintf("memory %lld went away while its use was recorded", (long long)ids[i]);
      rc = SQLITE_ERROR;
    } else {
      c->res[i].pos = pos;
    }
  }
  sqlite3_free(ids);
  return rc;
}

static int s_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                    sqlite3_value **argv) {
  (void)idxNum;
  scur *c = (scur *)cur;
  ext_tvf *vt = (ext_tvf *)cur->pVtab;
  s_reset(c);
  sqlite3_value *store_v = NULL, *k_v = NULL;
  search_args sa;
  memset(&sa, 0, sizeof sa);
  knn_filter f;
  memset(&f, 0, sizeof f);
  int a = 0, rc = SQLITE_OK;
  const char *p = idxStr ? idxStr : "";
  for (; *p && a < argc && rc == SQLITE_OK; a++) {
    switch (*p) {
    case 'S': store_v = argv[a]; p++; break;
    case 'Q': sa.query = argv[a]; p++; break;
    case 'T': sa.qtext = argv[a]; p++; break;
    case 'K': k_v = argv[a]; p++; break;
    case 'O': sa.options = argv[a]; p++; break;
    default:
      if (!p[1]) break;
      rc = search_knn_filter_add(&f, p[0] - '0', p[1] - '0', argv[a]);
      p += 2;
    }
  }
  if (rc != SQLITE_OK) {
    search_knn_filter_free(&f);
    return rc;
  }
  const char *name = store_v ? (const char *)sqlite3_value_text(store_v) : NULL;
  char *err = NULL;
  if (!name) {
    search_knn_filter_free(&f);
    err = sqlite3_mprintf("the first argument names an h5mem table");
    return s_msg(&vt->base, SQLITE_ERROR, &err);
  }
  sa.k = 10;
  if (k_v && sqlite3_value_type(k_v) != SQLITE_NULL) {
    if (sqlite3_value_numeric_type(k_v) != SQLITE_INTEGER || sqlite3_value_int64(k_v) < 0) {
      search_knn_filter_free(&f);
      err = sqlite3_mprintf("k must be an integer >= 0");
      return s_msg(&vt->base, SQLITE_ERROR, &err);
    }
    sa.k = sqlite3_value_int64(k_v);
  }
  search_touch tch;
  memset(&tch, 0, sizeof tch);
  sa.touch = &tch;
  fleet *fl = h5mem_fleet_find(vt->aux, name);
  memvt *mt = NULL;
  int trc = SQLITE_OK;
  if (!fl && !(mt = h5mem_table(vt->aux, vt->db, name, &err, &trc))) {
    if ((fl = h5mem_fleet_find(vt->aux, name)) == NULL) { /* (connected by h5mem_table's look) */
      search_knn_filter_free(&f);
      return s_msg(&vt->base, trc, &err);
    }
    sqlite3_free(err);
    err = NULL;
  }
  if (fl) { /* a fleet: read-only, its stores' own columns alone */
    rc = search_set_fleet(&c->ss, fl, NULL, &err);
    c->have_ss = rc == SQLITE_OK;
    if (rc == SQLITE_OK && search_opts_has(sa.options, "where")) {
      err = sqlite3_mprintf("options: where: a fleet has no declared columns (filter on source, session, "
                            "ts, tier or id)");
      rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK) rc = kind_of(&vt->base)->run(&c->ss, &sa, &f, &c->res, &c->n, &err);
    if (rc == SQLITE_OK && tch.has_touch && tch.touch) {
      err = sqlite3_mprintf("options: touch: a fleet is read-only");
      rc = SQLITE_ERROR;
    }
    search_knn_filter_free(&f);
    if (rc != SQLITE_OK) {
      s_reset(c);
      return s_msg(&vt->base, rc, &err);
    }
    if (search_set_keep(&c->ss, c->res, c->n) != SQLITE_OK) {
      s_reset(c);
      return SQLITE_NOMEM;
    }
    c->have_v = 0;
    return SQLITE_OK;
  }
  store *st = h5mem_table_store(mt);
  sa.mt = mt;
  search_set_table(&c->ss, st);
  c->have_ss = 1;
  /* a reader sees what others committed (not under another scan of the store) */
  if ((rc = h5mem_store_refresh(h5mem_table_ms(mt), 0, &err)) == SQLITE_OK &&
      (rc = search_where(st, sa.options, &f, &err)) == SQLITE_OK)
    rc = kind_of(&vt->base)->run(&c->ss, &sa, &f, &c->res, &c->n, &err);
  search_knn_filter_free(&f);
  if (rc != SQLITE_OK) {
    s_reset(c);
    return s_msg(&vt->base, rc, &err);
  }
  c->mt = mt;
  h5mem_table_hold(mt, +1);
  c->have_v = 0;
  if (tch.has_touch ? tch.touch : h5mem_table_policy(mt)->reinforce) {
    if ((rc = s_touch(c, tch.has_now ? tch.now : (int64_t)time(NULL), &err)) != SQLITE_OK) {
      s_reset(c);
      return s_msg(&vt->base, rc, &err);
    }
  }
  return SQLITE_OK;
}

static int s_next(sqlite3_vtab_cursor *cur) {
  scur *c = (scur *)cur;
  c->i++;
  c->have_v = 0;
  return SQLITE_OK;
}

static int s_eof(sqlite3_vtab_cursor *cur) {
  scur *c = (scur *)cur;
  return c->i >= c->n;
}

static int s_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((scur *)cur)->i;
  return SQLITE_OK;
}

static int s_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  scur *c = (scur *)cur;
  const fkind *kd = kind_of(cur->pVtab);
  const srow *r = &c->res[c->i];
  int role = col >= 0 && col < kd->ncol ? kd->role[col] : R_STORE;
  /* the numbers: v[] in the order of the kind's number columns */
  int vi = role == R_DISTANCE || (role == R_SCORE && kd != &kinds[0]) ? 0
           : role == R_SCORE || role == R_VSCORE ? 1 : role == R_KSCORE ? 2 : -1;
  if (vi >= 0) {
    if (r->null >> vi & 1) sqlite3_result_null(ctx);
    else sqlite3_result_double(ctx, r->v[vi]);
    return SQLITE_OK;
  }
  if (role == R_PATH) { /* the file of the row's store (a fleet's: its `store` column) */
    const char *path = search_set_path(&c->ss, SEARCH_SIDX(r->pos));
    sqlite3_result_text(ctx, path, -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
  }
  if (role >= R_HIDDEN) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (!c->have_v) {
    memset(&c->v, 0, sizeof c->v);
    c->have_v = 1;
  }
  unsigned want = role == R_TEXT ? STORE_V_TEXT : role == R_SOURCE ? STORE_V_SOURCE
                  : role == R_SESSION ? STORE_V_SESSION : role == R_TIER ? STORE_V_TIER
                  : role == R_TS ? STORE_V_NUM : 0;
  store *st = c->ss.st[SEARCH_SIDX(r->pos)];
  int src = st ? store_get(st, SEARCH_LPOS(r->pos), want, &c->v) : STORE_EINVAL;
  if (src != STORE_OK) { /* the read's code, not SQLITE_ERROR: SQLITE_CORRUPT for a damaged store */
    char *m = sqlite3_mprintf("%s: %s", kd->name, st ? store_errmsg(st) : "the store was let go");
    ext_result_err(ctx, src, m);
    sqlite3_free(m);
    return ext_err_rc(src);
  }
  switch (role) {
  case R_ID: sqlite3_result_int64(ctx, c->v.id); break;
  case R_TEXT: h5mem_result_text(ctx, c->v.text, c->v.text_len); break;
  case R_SOURCE: h5mem_result_text(ctx, c->v.source, c->v.source_len); break;
  case R_SESSION: h5mem_result_text(ctx, c->v.session, c->v.session_len); break;
  case R_TIER: h5mem_result_text(ctx, c->v.tier, c->v.tier_len); break;
  case R_TS: sqlite3_result_int64(ctx, c->v.ts); break;
  }
  return SQLITE_OK;
}

#define MODULE(var, connect)                                                                      \
  static sqlite3_module var = {                                                                   \
      .iVersion = 1, .xConnect = connect, .xBestIndex = s_best_index,                             \
      .xDisconnect = ext_tvf_disconnect, .xOpen = s_open, .xClose = s_close,                      \
      .xFilter = s_filter,                                                                        \
      .xNext = s_next, .xEof = s_eof, .xColumn = s_column, .xRowid = s_rowid,                     \
  };
MODULE(vec_module, vec_connect)
MODULE(bm25_module, bm25_connect)
MODULE(hybrid_module, hybrid_connect)
#undef MODULE

int ext_vtab_search_register(sqlite3 *db, registry *reg) {
  static const struct {
    const char *name;
    const sqlite3_module *mod;
  } mods[] = {{"vec_search", &vec_module}, {"bm25", &bm25_module}, {"hybrid", &hybrid_module}};
  int rc = SQLITE_OK;
  for (size_t k = 0; k < sizeof mods / sizeof mods[0] && rc == SQLITE_OK; k++) {
    rc = h5mem_registry_module(db, reg, mods[k].name, mods[k].mod);
  }
  return rc;
}
