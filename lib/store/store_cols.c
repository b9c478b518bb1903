/*
** lib/store/store_cols.c - the columns a store's creator declares beside
** the fixed ones (store.h, "declared columns"; docs/FORMAT.md, "Declared
** columns"): their declarations, their datasets, their values in records,
** the log and checkpoints, and the filters over them (conditions read a
** column alone; a partition key's index; a text primary key's map).
*/
#include "config.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <xxhash.h>

#include "k.h"
#include "util/utf8.h"
#include "store_int.h"

#define NULL_I64 INT64_MIN /* a NULL integer in the file */
#define NULL_BOOL (-1)     /* a NULL boolean (int8) */

/* ---- declarations ------------------------------------------------------------- */

static const struct {
  const char *name;
  int type, vtype;
} type_names[] = {
    {"integer", STORE_T_INTEGER, 0}, {"int", STORE_T_INTEGER, 0}, {"float", STORE_T_FLOAT, 0},
    {"double", STORE_T_FLOAT, 0},    {"real", STORE_T_FLOAT, 0},  {"text", STORE_T_TEXT, 0},
    {"blob", STORE_T_BLOB, 0},       {"boolean", STORE_T_BOOLEAN, 0}, {"bool", STORE_T_BOOLEAN, 0},
};
static const struct {
  const char *name;
  int vtype;
} vtype_names[] = {{"float", STORE_VT_F32}, {"float32", STORE_VT_F32}, {"f32", STORE_VT_F32},
                   {"float16", STORE_VT_F16}, {"f16", STORE_VT_F16}, {"int8", STORE_VT_I8},
                   {"i8", STORE_VT_I8}, {"bit", STORE_VT_BIT}};

static const char *type_name(const store_coldef *c) {
  static const char *const n[] = {"", "integer", "float", "text", "blob", "boolean", "vector"};
  return c->type >= 1 && c->type <= STORE_T_VECTOR ? n[c->type] : "?";
}
static const char *vtype_name(int vt) {
  return vt == STORE_VT_F32 ? "float32" : vt == STORE_VT_F16 ? "float16" : vt == STORE_VT_I8 ? "int8" : "bit";
}
static const char *metric_name(int m) {
  return m == STORE_L1 ? "l1" : m == STORE_HAMMING ? "hamming" : store_metric_name(m);
}

/* The next word of [*p, end): letters, digits, '_' (or one other byte). */
static size_t word(const char **p, const char *end, const char **w) {
  while (*p < end && isspace((unsigned char)**p)) (*p)++;
  *w = *p;
  while (*p < end && (isalnum((unsigned char)**p) || **p == '_')) (*p)++;
  if (*p == *w && *p < end) (*p)++;
  return (size_t)(*p - *w);
}

static int word_is(const char *w, size_t n, const char *kw) {
  return strlen(kw) == n && strncasecmp(w, kw, n) == 0;
}

int store_coldef_parse(const char *decl, size_t n, store_coldef *c, char *err, size_t errlen) {
  const char *p = decl, *end = decl + n, *w;
  size_t wn;
  memset(c, 0, sizeof *c);
  while (p < end && isspace((unsigned char)*p)) p++;
  if (p < end && *p == '+') {
    c->role = STORE_R_AUX;
    p++;
  }
  wn = word(&p, end, &w);
  if (!wn || !(isalpha((unsigned char)*w) || *w == '_')) {
    snprintf(err, errlen, "'%.*s': a column declaration starts with its name", (int)n, decl);
    return STORE_EINVAL;
  }
  for (size_t i = 0; i < wn; i++)
    if (!isalnum((unsigned char)w[i]) && w[i] != '_') {
      snprintf(err, errlen, "'%.*s': a column's name is letters, digits and _", (int)n, decl);
      return STORE_EINVAL;
    }
  if (wn >= STORE_COLNAME_MAX) {
    snprintf(err, errlen, "'%.*s': a column's name is at most %d bytes", (int)n, decl, STORE_COLNAME_MAX - 1);
    return STORE_EINVAL;
  }
  memcpy(c->name, w, wn);
  c->name[wn] = 0;
  const char *tw;
  size_t tn = word(&p, end, &tw);
  if (!tn) {
    snprintf(err, errlen, "column %s: no type (integer, float, text, blob, boolean, or a vector: "
                          "float[N], float16[N], int8[N], bit[N])", c->name);
    return STORE_EINVAL;
  }
  /* a vector: type[N] */
  const char *q = p;
  while (q < end && isspace((unsigned char)*q)) q++;
  if (q < end && *q == '[') {
    for (size_t i = 0; i < sizeof vtype_names / sizeof vtype_names[0]; i++)
      if (word_is(tw, tn, vtype_names[i].name)) c->vtype = vtype_names[i].vtype;
    if (!c->vtype) {
      snprintf(err, errlen, "column %s: '%.*s[...]': a vector's elements are float (float32), "
                            "float16, int8 or bit", c->name, (int)tn, tw);
      return STORE_EINVAL;
    }
    q++;
    char *e;
    long d = strtol(q, &e, 10);
    if (e == q || e >= end || *e != ']' || d < 1 || d > 65536 ||
        (c->vtype == STORE_VT_BIT && d % 8)) {
      snprintf(err, errlen, "column %s: the dimension in [...] must be 1..65536%s", c->name,
               c->vtype == STORE_VT_BIT ? " and a multiple of 8" : "");
      return STORE_EINVAL;
    }
    c->type = STORE_T_VECTOR;
    c->dim = (int)d;
    c->metric = c->vtype == STORE_VT_BIT ? STORE_HAMMING : STORE_L2;
    p = e + 1;
  } else {
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
      if (word_is(tw, tn, type_names[i].name)) c->type = type_names[i].type;
    if (!c->type) {
      snprintf(err, errlen, "column %s: unknown type '%.*s' (integer, float, text, blob, boolean, "
                            "or a vector: float[N], float16[N], int8[N], bit[N])", c->name, (int)tn, tw);
      return STORE_EINVAL;
    }
  }
  /* what may follow: partition key, primary key, distance_metric=... */
  for (;;) {
    wn = word(&p, end, &w);
    if (!wn) break;
    if (word_is(w, wn, "partition") || word_is(w, wn, "primary")) {
      int part = word_is(w, wn, "partition");
      const char *k;
      size_t kn = word(&p, end, &k);
      if (!word_is(k, kn, "key")) {
        snprintf(err, errlen, "column %s: '%s' must be followed by 'key'", c->name, part ? "partition" : "primary");
        return STORE_EINVAL;
      }
      if (c->role != STORE_R_METADATA || c->type == STORE_T_VECTOR) {
        snprintf(err, errlen, "column %s: %s a %s key", c->name,
                 c->role == STORE_R_AUX ? "an auxiliary column (+) cannot be" : c->type == STORE_T_VECTOR ? "a vector cannot be" : "declared twice as",
                 part ? "partition" : "primary");
        return STORE_EINVAL;
      }
      if (part && c->type != STORE_T_INTEGER && c->type != STORE_T_TEXT) {
        snprintf(err, errlen, "column %s: a partition key is integer or text, not %s", c->name, type_name(c));
        return STORE_EINVAL;
      }
      if (!part && c->type != STORE_T_TEXT) {
        snprintf(err, errlen, "column %s: a declared primary key is text (the integer primary key "
                              "is the table's id)", c->name);
        return STORE_EINVAL;
      }
      c->role = part ? STORE_R_PARTITION : STORE_R_PKEY;
      continue;
    }
    if (word_is(w, wn, "distance_metric")) {
      const char *m;
      while (p < end && isspace((unsigned char)*p)) p++;
      if (p >= end || *p != '=') {
        snprintf(err, errlen, "column %s: distance_metric=<metric>", c->name);
        return STORE_EINVAL;
      }
      p++;
      size_t mn = word(&p, end, &m);
      int metric = word_is(m, mn, "l2") ? STORE_L2 : word_is(m, mn, "cosine") ? STORE_COSINE
                 : word_is(m, mn, "l1") ? STORE_L1 : word_is(m, mn, "hamming") ? STORE_HAMMING
                 : word_is(m, mn, "dot") ? STORE_DOT : -1;
      if (c->type != STORE_T_VECTOR) {
        snprintf(err, errlen, "column %s: distance_metric applies to vector columns", c->name);
        return STORE_EINVAL;
      }
      if (metric < 0 || (metric == STORE_HAMMING) != (c->vtype == STORE_VT_BIT)) {
        snprintf(err, errlen, "column %s: distance_metric=%.*s: %s", c->name, (int)mn, m,
                 c->vtype == STORE_VT_BIT ? "a bit vector's distance is hamming"
                                          : "expected l2, cosine, l1 or dot");
        return STORE_EINVAL;
      }
      c->metric = metric;
      continue;
    }
    snprintf(err, errlen, "column %s: unexpected '%.*s'", c->name, (int)wn, w);
    return STORE_EINVAL;
  }
  if (c->role == STORE_R_AUX && c->type == STORE_T_VECTOR) {
    snprintf(err, errlen, "column %s: an auxiliary column (+) is integer, float, text, blob or boolean",
             c->name);
    return STORE_EINVAL;
  }
  return STORE_OK;
}

void store_coldef_format(const store_coldef *c, char *buf, size_t n) {
  if (c->type == STORE_T_VECTOR)
    snprintf(buf, n, "%s %s[%d] distance_metric=%s", c->name, vtype_name(c->vtype), c->dim,
             metric_name(c->metric));
  else
    snprintf(buf, n, "%s%s %s%s", c->role == STORE_R_AUX ? "+" : "", c->name, type_name(c),
             c->role == STORE_R_PARTITION ? " partition key" : c->role == STORE_R_PKEY ? " primary key" : "");
}

size_t store_coldef_width(const store_coldef *c) {
  if (c->type != STORE_T_VECTOR) return 0;
  return c->vtype == STORE_VT_BIT ? (size_t)c->dim / 8 : (size_t)c->dim * (size_t)c->vtype;
}

int store_ncols(const store *s) { return s->ncols; }
const store_coldef *store_col(const store *s, int i) { return i >= 0 && i < s->ncols ? &s->cdef[i] : NULL; }
int store_col_find(const store *s, const char *name, size_t n) {
  for (int i = 0; i < s->ncols; i++)
    if (strlen(s->cdef[i].name) == n && strncasecmp(s->cdef[i].name, name, n) == 0) return i;
  return -1;
}

/* The bytes of one row of column c in the file. */
static size_t row_bytes(const store_coldef *c) {
  switch (c->type) {
  case STORE_T_INTEGER:
  case STORE_T_FLOAT: return 8;
  case STORE_T_BOOLEAN: return 1;
  case STORE_T_TEXT:
  case STORE_T_BLOB: return 16;
  default: return store_coldef_width(c);
  }
}

int store_cols_check_defs(store *s, const store_coldef *c, int n) {
  if (n < 0 || n > STORE_COLS_MAX) return store_fail(s, STORE_EINVAL, "at most %d declared columns", STORE_COLS_MAX);
  int npk = 0;
  for (int i = 0; i < n; i++) {
    char err[256], buf[160];
    store_coldef chk;
    store_coldef_format(&c[i], buf, sizeof buf);
    if (store_coldef_parse(buf, strlen(buf), &chk, err, sizeof err) || memcmp(&chk, &c[i], sizeof chk))
      return store_fail(s, STORE_EINVAL, "column %d: not a valid declaration (%s)", i, buf);
    for (int k = 0; k < NCOL; k++)
      if (strcasecmp(c[i].name, store_col_name[k]) == 0 || strcasecmp(c[i].name, "deleted") == 0)
        return store_fail(s, STORE_EINVAL, "column %s: the store has a column of that name", c[i].name);
    for (int j = 0; j < i; j++)
      if (strcasecmp(c[i].name, c[j].name) == 0)
        return store_fail(s, STORE_EINVAL, "column %s is declared twice", c[i].name);
    npk += c[i].role == STORE_R_PKEY;
  }
  if (npk > 1) return store_fail(s, STORE_EINVAL, "only one column can be the primary key");
  return STORE_OK;
}

/* ---- the file ------------------------------------------------------------------ */

int store_cols_read(store *s, h5_obj *root, const store_opts *want) {
  enum { ATTR_MAX = STORE_COLS_MAX * 160 };
  char *text = malloc(ATTR_MAX);
  if (!text) return store_fail(s, STORE_ENOMEM, "out of memory");
  int r = store_attr_str(s->f, root, "columns", text, ATTR_MAX);
  int rc = STORE_OK;
  s->cdef = NULL;
  s->ncols = 0;
  if (r < 0) rc = store_fail(s, STORE_ECORRUPT, "%s: the 'columns' attribute is not a string", s->path);
  if (r > 0 && *text) {
    int n = 1;
    for (const char *p = text; *p; p++) n += *p == ',';
    if (n > STORE_COLS_MAX) n = STORE_COLS_MAX + 1;
    s->cdef = calloc((size_t)n, sizeof *s->cdef);
    if (!s->cdef) rc = store_fail(s, STORE_ENOMEM, "out of memory");
    const char *p = text;
    for (int i = 0; rc == STORE_OK && i < n; i++) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      char err[256];
      if (store_coldef_parse(p, len, &s->cdef[i], err, sizeof err))
        rc = store_fail(s, STORE_ECORRUPT, "%s: the 'columns' attribute: %s", s->path, err);
      p = e ? e + 1 : p + len;
    }
    if (rc == STORE_OK) {
      char keep[sizeof s->err];
      memcpy(keep, s->err, sizeof keep);
      if (store_cols_check_defs(s, s->cdef, n)) {
        char why[sizeof s->err];
        memcpy(why, s->err, sizeof why);
        rc = store_fail(s, STORE_ECORRUPT, "%s: the 'columns' attribute: %s", s->path, why);
      } else {
        memcpy(s->err, keep, sizeof keep);
      }
    }
    s->ncols = n;
  }
  free(text);
  if (rc == STORE_OK && want && want->ncols > 0) {
    /* the declarations restated must be the file's, in order (names
    ** compared without case); the message names the first difference */
    char a[160], b[160];
    for (int i = 0; i < want->ncols || i < s->ncols; i++) {
      if (i < s->ncols) store_coldef_format(&s->cdef[i], a, sizeof a);
      if (i < want->ncols) store_coldef_format(&want->cols[i], b, sizeof b);
      if (i < s->ncols && i < want->ncols && strcasecmp(a, b) == 0) continue;
      int wfound = 0, ffound = 0;
      for (int j = 0; i < want->ncols && j < s->ncols; j++) wfound |= !strcasecmp(want->cols[i].name, s->cdef[j].name);
      for (int j = 0; i < s->ncols && j < want->ncols; j++) ffound |= !strcasecmp(s->cdef[i].name, want->cols[j].name);
      if (i < want->ncols && !wfound) return store_fail(s, STORE_EMISMATCH, "%s has no column %s", s->path, b);
      if (i < s->ncols && !ffound)
        return store_fail(s, STORE_EMISMATCH, "%s has column %s, which is not declared", s->path, a);
      if (i < s->ncols && i < want->ncols && !strcasecmp(s->cdef[i].name, want->cols[i].name))
        return store_fail(s, STORE_EMISMATCH, "%s has column %s, not %s", s->path, a, b);
      return store_fail(s, STORE_EMISMATCH, "%s has its columns in another order (column %d is %s, not %s)", s->path,
                        i + 1, i < s->ncols ? a : "none", i < want->ncols ? b : "none");
    }
  }
  return rc;
}

int store_cols_map(store *s, h5_obj *mem, uint64_t n) {
  if (!s->ncols) return STORE_OK;
  s->ucol = calloc((size_t)s->ncols, sizeof *s->ucol);
  s->umiss = calloc((size_t)s->ncols, sizeof *s->umiss);
  if (!s->ucol || !s->umiss) return store_fail(s, STORE_ENOMEM, "out of memory");
  h5_obj *g;
  if (store_open_child(s->f, mem, "columns", &g) != H5_OK)
    return store_fail(s, STORE_ECORRUPT, "%s: /memories/columns is missing", s->path);
  for (int i = 0; i < s->ncols; i++) {
    const store_coldef *c = &s->cdef[i];
    char path[160], name[80];
    h5_obj *d;
    snprintf(path, sizeof path, "/memories/columns/%s", c->name);
    if (store_open_child(s->f, g, c->name, &d) != H5_OK)
      return store_fail(s, STORE_ECORRUPT, "%s: %s is missing", s->path, path);
    size_t esz = c->type == STORE_T_VECTOR ? (c->vtype == STORE_VT_BIT ? 1 : (size_t)c->vtype) : row_bytes(c);
    int width = c->type == STORE_T_VECTOR ? (int)(store_coldef_width(c) / esz) : 0;
    uint64_t rows = n;
    int rc = store_map_col(s, d, path, &s->ucol[i], esz, width, &rows);
    if (rc) return rc;
    if (c->type == STORE_T_VECTOR) {
      snprintf(name, sizeof name, "%s.missing", c->name);
      snprintf(path, sizeof path, "/memories/columns/%s", name);
      if (store_open_child(s->f, g, name, &d) != H5_OK)
        return store_fail(s, STORE_ECORRUPT, "%s: %s is missing", s->path, path);
      if ((rc = store_map_col(s, d, path, &s->umiss[i], 1, 0, &rows))) return rc;
    }
  }
  return STORE_OK;
}

typedef struct cparts { /* a column's indexes of the base rows, built on first use */
  /* a partition key's: sorted (key, pos) pairs of the rows that have a value: the value's hash / the integer */
  uint64_t *key;
  uint64_t *pos;
  uint64_t n;
  int built;
  /* a text column's values as codes: code[r] for base row r (UINT32_MAX: NULL),
  ** dict[code] the distinct values (pointing into the mapped file) */
  uint32_t *code;
  store_val *dict;
  uint64_t ndict;
} cparts;

typedef struct pkmap { /* the primary key: hash -> position of the live record */
  uint64_t *h, *pos;   /* pos UINT64_MAX: empty; UINT64_MAX - 1: removed */
  uint64_t cap, n, used;
} pkmap;

static void pkmap_free(store *s) {
  if (!s->pk) return;
  free(s->pk->h);
  free(s->pk->pos);
  free(s->pk);
  s->pk = NULL;
}

void store_cols_positions_moved(store *s) { pkmap_free(s); }

void store_cols_base_free(store *s) {
  store_vgraphs_free(s); /* (they read the mapped file: first) */
  for (int i = 0; i < s->ncols; i++) {
    if (s->ucol) free(s->ucol[i].caddr);
    if (s->umiss) free(s->umiss[i].caddr);
    if (s->parts) {
      free(s->parts[i].key);
      free(s->parts[i].pos);
      free(s->parts[i].code);
      free(s->parts[i].dict);
    }
  }
  free(s->ucol);
  free(s->umiss);
  free(s->parts);
  free(s->cdef);
  s->ucol = s->umiss = NULL;
  s->parts = NULL;
  s->cdef = NULL;
  s->ncols = 0;
  pkmap_free(s);
}

static h5_type *col_type(const store_coldef *c) {
  switch (c->type) {
  case STORE_T_INTEGER: return h5_type_new_int(8, 1);
  case STORE_T_FLOAT: return h5_type_new_float(8);
  case STORE_T_BOOLEAN: return h5_type_new_int(1, 1);
  case STORE_T_TEXT: return h5_type_new_string(0, 1);
  case STORE_T_BLOB: return h5_type_new_vlen(h5_type_new_int(1, 0));
  default:
    return c->vtype == STORE_VT_F32 ? h5_type_new_float(4) : c->vtype == STORE_VT_F16 ? h5_type_new_float(2)
         : c->vtype == STORE_VT_I8 ? h5_type_new_int(1, 1) : h5_type_new_int(1, 0);
  }
}

int store_cols_layout(store *s, h5w *w, h5w_obj *root, h5w_obj *mem, const store_opts *o) {
  if (o->ncols <= 0) return H5_OK;
  size_t cap = (size_t)o->ncols * 160 + 1, len = 0;
  char *all = malloc(cap);
  if (!all) return H5_ENOMEM;
  all[0] = 0;
  for (int i = 0; i < o->ncols; i++) {
    char b[160];
    store_coldef_format(&o->cols[i], b, sizeof b);
    len += (size_t)snprintf(all + len, cap - len, "%s%s", i ? ", " : "", b);
  }
  h5_type *st = h5_type_new_string(0, 1);
  uint8_t slot[16] = {0}; /* (a variable-length string's element: its pointer in a 16-byte slot) */
  memcpy(slot, &all, sizeof all);
  int hr = st ? h5w_attr(w, root, "columns", st, 0, NULL, slot) : H5_ENOMEM;
  free(all);
  h5w_obj *g, *d;
  if (!hr) hr = h5w_group(w, mem, "columns", &g);
  for (int i = 0; !hr && i < o->ncols; i++) {
    const store_coldef *c = &o->cols[i];
    h5w_dcpl dcpl;
    memset(&dcpl, 0, sizeof dcpl);
    dcpl.layout = H5_LAYOUT_CHUNKED;
    dcpl.deflate = -1;
    dcpl.chunk[0] = (uint64_t)s->chunk_rows;
    int vec = c->type == STORE_T_VECTOR;
    uint64_t width = vec ? store_coldef_width(c) / (c->vtype == STORE_VT_BIT ? 1 : (size_t)c->vtype) : 0;
    uint64_t dims[2] = {0, width}, maxd[2] = {UINT64_MAX, width};
    dcpl.chunk[1] = width;
    h5_type *t = col_type(c);
    if (!t) return H5_ENOMEM;
    hr = h5w_dataset(w, g, c->name, t, vec ? 2 : 1, dims, maxd, &dcpl, &d);
    char desc[256], decl[160];
    store_coldef_format(c, decl, sizeof decl);
    snprintf(desc, sizeof desc, "declared column: %s%s", decl,
             c->type == STORE_T_INTEGER ? "; INT64_MIN: NULL" : c->type == STORE_T_FLOAT ? "; NaN: NULL"
             : c->type == STORE_T_BOOLEAN ? "; 0 false, 1 true, -1 NULL"
             : vec ? "; a NULL is marked in <name>.missing (its row: zeros; float: NaN first)" : "; a null reference: NULL");
    if (!hr) {
      const char *dv = desc;
      uint8_t dslot[16] = {0};
      memcpy(dslot, &dv, sizeof dv);
      h5_type *a = h5_type_new_string(0, 1);
      hr = a ? h5w_attr(w, d, "description", a, 0, NULL, dslot) : H5_ENOMEM;
    }
    if (!hr && vec) {
      char name[80];
      snprintf(name, sizeof name, "%s.missing", c->name);
      t = h5_type_new_int(1, 0);
      if (!t) return H5_ENOMEM;
      hr = h5w_dataset(w, g, name, t, 1, dims, maxd, &dcpl, &d);
    }
  }
  return hr;
}

/* ---- values ----------------------------------------------------------------------- */

int store_cols_check(store *s, const store_val *cv) {
  for (int i = 0; cv && i < s->ncols; i++) {
    const store_coldef *c = &s->cdef[i];
    const store_val *v = &cv[i];
    if (!v->type) continue;
    if (v->type != c->type)
      return store_fail(s, STORE_EINVAL, "%s: expected %s, got a value of another type", c->name, type_name(c));
    switch (c->type) {
    case STORE_T_INTEGER:
      if (v->i == NULL_I64)
        return store_fail(s, STORE_EINVAL, "%s: -9223372036854775808 is the file's NULL; not storable", c->name);
      break;
    case STORE_T_BOOLEAN:
      if (v->i != 0 && v->i != 1) return store_fail(s, STORE_EINVAL, "%s: a boolean is 0 or 1", c->name);
      break;
    case STORE_T_FLOAT:
      if (!isfinite(v->f)) return store_fail(s, STORE_EINVAL, "%s: not a finite number", c->name);
      break;
    case STORE_T_TEXT:
      if (store_str_check(s, c->name, v->p ? v->p : "", v->n)) return STORE_EINVAL;
      break;
    case STORE_T_BLOB:
      if (v->n > UINT32_MAX - 1) return store_fail(s, STORE_EINVAL, "%s: a blob is at most 4 GiB", c->name);
      break;
    default:
      if (v->n != store_coldef_width(c))
        return store_fail(s, STORE_EINVAL, "%s: expected %d dimensions of %s, got %zu bytes", c->name,
                          c->dim, vtype_name(c->vtype), v->n);
      for (int k = 0; c->vtype == STORE_VT_F32 && k < c->dim; k++) {
        float f;
        memcpy(&f, (const uint8_t *)v->p + 4 * (size_t)k, 4);
        if (!isfinite(f)) return store_fail(s, STORE_EINVAL, "%s: element %d is not finite", c->name, k);
      }
      for (int k = 0; c->vtype == STORE_VT_F16 && k < c->dim; k++) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)v->p + 2 * (size_t)k, 2);
        if ((h & 0x7c00) == 0x7c00) return store_fail(s, STORE_EINVAL, "%s: element %d is not finite", c->name, k);
      }
    }
  }
  return STORE_OK;
}

static int has_bytes(const store_coldef *c) {
  return c->type == STORE_T_TEXT || c->type == STORE_T_BLOB || c->type == STORE_T_VECTOR;
}

size_t store_cols_size(const store *s, const store_val *cv) {
  size_t n = (size_t)s->ncols * sizeof(store_val) + 16;
  for (int i = 0; cv && i < s->ncols; i++)
    if (cv[i].type && has_bytes(&s->cdef[i])) n += cv[i].n + 1 + 8; /* (8: a vector's alignment) */
  return n;
}

void store_cols_copy(const store *s, const store_val *cv, store_val *out, uint8_t **p) {
  for (int i = 0; i < s->ncols; i++) {
    memset(&out[i], 0, sizeof out[i]);
    if (!cv || !cv[i].type) continue;
    out[i] = cv[i];
    if (has_bytes(&s->cdef[i])) {
      if (s->cdef[i].type == STORE_T_VECTOR) /* (on an 8-byte boundary: the kernels read its elements) */
        *p += (8 - (uintptr_t)*p % 8) % 8;
      if (cv[i].n) memcpy(*p, cv[i].p, cv[i].n);
      (*p)[cv[i].n] = 0; /* (text: NUL-terminated, as the writer takes it) */
      out[i].p = *p;
      *p += cv[i].n + 1;
    }
  }
}

int store_cols_encode(const store *s, const drec *d, int (*put)(void *ctx, const void *p, size_t n), void *ctx) {
  int bad = 0;
  for (int i = 0; i < s->ncols && !bad; i++) {
    const store_val *v = &d->cv[i];
    uint8_t has = v->type != 0;
    bad |= put(ctx, &has, 1);
    if (!has) continue;
    switch (s->cdef[i].type) {
    case STORE_T_INTEGER:
    case STORE_T_BOOLEAN: bad |= put(ctx, &v->i, 8); break;
    case STORE_T_FLOAT: bad |= put(ctx, &v->f, 8); break;
    case STORE_T_VECTOR: bad |= put(ctx, v->p, v->n); break;
    default: {
      uint32_t n = (uint32_t)v->n;
      bad |= put(ctx, &n, 4) | put(ctx, v->p, v->n);
    }
    }
  }
  return bad;
}

int store_cols_decode(store *s, const uint8_t **p, const uint8_t *end, store_val *out, char *err, size_t errlen) {
  err[0] = 0;
  for (int i = 0; i < s->ncols; i++) {
    const store_coldef *c = &s->cdef[i];
    store_val *v = &out[i];
    memset(v, 0, sizeof *v);
    if (*p >= end) return STORE_ECORRUPT;
    uint8_t has = *(*p)++;
    if (has > 1) return STORE_ECORRUPT;
    if (!has) continue;
    v->type = c->type;
    size_t n = 8;
    if (c->type == STORE_T_VECTOR) {
      n = store_coldef_width(c);
    } else if (c->type == STORE_T_TEXT || c->type == STORE_T_BLOB) {
      uint32_t len;
      if ((size_t)(end - *p) < 4) return STORE_ECORRUPT;
      memcpy(&len, *p, 4);
      *p += 4;
      n = len;
    }
    if ((size_t)(end - *p) < n) return STORE_ECORRUPT;
    if (c->type == STORE_T_INTEGER || c->type == STORE_T_BOOLEAN) memcpy(&v->i, *p, 8);
    else if (c->type == STORE_T_FLOAT) memcpy(&v->f, *p, 8);
    else {
      v->p = *p;
      v->n = n;
    }
    *p += n;
  }
  char keep[sizeof s->err];
  memcpy(keep, s->err, sizeof keep);
  /* a frame holds what store_put took: values of the columns' types, and a
  ** primary key no live record has (the frame's ops are applied in order,
  ** as the writer made them) */
  int rc = store_cols_check(s, out);
  if (!rc) rc = store_cols_pkey_free(s, out);
  if (rc) {
    snprintf(err, errlen, "%s", s->err);
    memcpy(s->err, keep, sizeof keep);
    return rc == STORE_ENOMEM ? rc : STORE_ECORRUPT;
  }
  return STORE_OK;
}

/* ---- checkpoints, optimize ---------------------------------------------------------- */

/* Row j of column c in the form h5w_append takes, from value v. */
static void row_put(const store_coldef *c, const store_val *v, uint8_t *row) {
  switch (c->type) {
  case STORE_T_INTEGER: {
    int64_t x = v->type ? v->i : NULL_I64;
    memcpy(row, &x, 8);
    break;
  }
  case STORE_T_FLOAT: {
    double x = v->type ? v->f : NAN;
    memcpy(row, &x, 8);
    break;
  }
  case STORE_T_BOOLEAN: row[0] = (uint8_t)(int8_t)(v->type ? (int8_t)v->i : NULL_BOOL); break;
  case STORE_T_TEXT:
  case STORE_T_BLOB: {
    const void *p = v->type ? (v->p ? v->p : "") : NULL;
    uint64_t n = v->type ? v->n : 0;
    memcpy(row, &p, sizeof p);
    memcpy(row + 8, &n, 8);
    break;
  }
  default:
    if (v->type) {
      memcpy(row, v->p, v->n);
    } else { /* (a float vector's first element NaN too, as the embedding's: scans skip it) */
      memset(row, 0, store_coldef_width(c));
      if (c->vtype == STORE_VT_F32) {
        float nan = NAN;
        memcpy(row, &nan, 4);
      } else if (c->vtype == STORE_VT_F16) {
        uint16_t h = 0x7e00;
        memcpy(row, &h, 2);
      }
    }
  }
}

static int append_col(store *s, h5w *w, int i, const store_val *const *vals, uint64_t n) {
  const store_coldef *c = &s->cdef[i];
  size_t rb = row_bytes(c);
  int vec = c->type == STORE_T_VECTOR;
  uint8_t *buf = calloc(n ? n : 1, rb ? rb : 1), *miss = vec ? calloc(n ? n : 1, 1) : NULL;
  if (!buf || (vec && !miss)) {
    free(buf);
    free(miss);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  for (uint64_t j = 0; j < n; j++) {
    row_put(c, vals[j], buf + j * rb);
    if (vec) miss[j] = !vals[j]->type;
  }
  char path[160];
  snprintf(path, sizeof path, "/memories/columns/%s", c->name);
  h5w_obj *d;
  int rc = STORE_OK;
  if (h5w_lookup(w, path, &d) != H5_OK || h5w_append(w, d, buf, n) != H5_OK) rc = store_wfail(s, w, "checkpoint of");
  if (!rc && vec) {
    snprintf(path, sizeof path, "/memories/columns/%s.missing", c->name);
    if (h5w_lookup(w, path, &d) != H5_OK || h5w_append(w, d, miss, n) != H5_OK) rc = store_wfail(s, w, "checkpoint of");
  }
  free(buf);
  free(miss);
  return rc;
}

int store_cols_append(store *s, h5w *w, uint64_t nlive) {
  if (!s->ncols || !nlive) return STORE_OK;
  const store_val **vals = malloc(nlive * sizeof *vals);
  store_val *none = calloc((size_t)s->ncols, sizeof *none);
  int rc = vals && none ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  for (int i = 0; rc == STORE_OK && i < s->ncols; i++) {
    uint64_t j = 0;
    for (uint64_t k = 0; k < s->ndelta; k++) {
      const drec *d = s->delta[k];
      if (!d->dead) vals[j++] = d->cv ? &d->cv[i] : &none[i];
    }
    rc = append_col(s, w, i, vals, nlive);
  }
  free(vals);
  free(none);
  return rc;
}

int store_cols_copy_rows(store *s, h5w *w, uint64_t r0, uint64_t r1, uint64_t m) {
  if (!s->ncols || !m) return STORE_OK;
  store_val *v = malloc(m * sizeof *v);
  const store_val **vals = malloc(m * sizeof *vals);
  int rc = v && vals ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  for (int i = 0; rc == STORE_OK && i < s->ncols; i++) {
    uint64_t j = 0;
    size_t tbytes = 0;
    for (uint64_t r = r0; r < r1 && rc == STORE_OK; r++) {
      if (s->base_dead[r]) continue;
      rc = store_get_col(s, r, i, &v[j]);
      if (v[j].type == STORE_T_TEXT) tbytes += v[j].n + 1;
      vals[j] = &v[j];
      j++;
    }
    /* a text is NUL-terminated for the writer (strlen), and one in the file
    ** is not (the next heap object follows it): copies */
    char *tb = NULL;
    if (rc == STORE_OK && s->cdef[i].type == STORE_T_TEXT && !(tb = malloc(tbytes ? tbytes : 1)))
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    for (uint64_t k = 0, off = 0; tb && k < j; k++) {
      if (v[k].type != STORE_T_TEXT) continue;
      if (v[k].n) memcpy(tb + off, v[k].p, v[k].n);
      tb[off + v[k].n] = 0;
      v[k].p = tb + off;
      off += v[k].n + 1;
    }
    if (rc == STORE_OK) rc = append_col(s, w, i, vals, j);
    free(tb);
  }
  free(v);
  free(vals);
  return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

static const uint8_t *ucol_row(const store *s, const bcol *c, uint64_t r) {
  uint64_t k = c->crows ? r / c->crows : 0;
  if (k >= c->nchunks || c->caddr[k] == UINT64_MAX) return NULL;
  return h5_file_span(s->f, c->caddr[k] + (r % c->crows) * c->rowbytes, c->rowbytes);
}

/* Base row r's value of column i (live or not). */
static int base_val(store *s, uint64_t r, int i, store_val *v) {
  const store_coldef *c = &s->cdef[i];
  memset(v, 0, sizeof *v);
  const uint8_t *p = ucol_row(s, &s->ucol[i], r);
  if (!p)
    return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/columns/%s lies outside the file", s->path,
                      (unsigned long long)r, c->name);
  switch (c->type) {
  case STORE_T_INTEGER:
    memcpy(&v->i, p, 8);
    v->type = v->i == NULL_I64 ? 0 : c->type;
    break;
  case STORE_T_FLOAT:
    memcpy(&v->f, p, 8);
    v->type = isnan(v->f) ? 0 : c->type;
    break;
  case STORE_T_BOOLEAN:
    v->i = (int8_t)p[0];
    v->type = v->i == NULL_BOOL ? 0 : c->type;
    break;
  case STORE_T_TEXT:
  case STORE_T_BLOB: {
    const uint8_t *data;
    size_t len;
    uint32_t cnt;
    if (h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK)
      return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/columns/%s: %s", s->path,
                        (unsigned long long)r, c->name, h5_errmsg(s->f));
    if (data) {
      v->type = c->type;
      v->p = data;
      v->n = len;
    }
    break;
  }
  default: {
    const uint8_t *m = ucol_row(s, &s->umiss[i], r);
    if (!m)
      return store_fail(s, STORE_ECORRUPT, "%s: row %llu of /memories/columns/%s.missing lies outside the file",
                        s->path, (unsigned long long)r, c->name);
    if (!*m) {
      v->type = c->type;
      v->p = p;
      v->n = store_coldef_width(c);
    }
  }
  }
  return STORE_OK;
}

int store_cols_strings_agree(store *s, uint64_t pos) {
  for (int i = 0; i < s->ncols; i++) {
    if (s->cdef[i].type != STORE_T_TEXT && s->cdef[i].type != STORE_T_BLOB) continue;
    const uint8_t *p = ucol_row(s, &s->ucol[i], pos), *data;
    size_t len;
    uint32_t cnt;
    if (!p || h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK || (data && cnt != len)) return 0;
  }
  return 1;
}

int store_get_col_file(store *s, uint64_t pos, int c, store_val *v) {
  if (c < 0 || c >= s->ncols || pos >= s->nbase)
    return store_fail(s, STORE_EINVAL, "no declared column %d of a base row at %llu", c, (unsigned long long)pos);
  return base_val(s, pos, c, v);
}

int store_get_col(store *s, uint64_t pos, int c, store_val *v) {
  if (c < 0 || c >= s->ncols) return store_fail(s, STORE_EINVAL, "no declared column %d", c);
  if (!store_pos_live(s, pos))
    return store_fail(s, STORE_ENOTFOUND, "no record at position %llu", (unsigned long long)pos);
  if (pos >= s->nbase) {
    const drec *d = s->delta[pos - s->nbase];
    if (d->cv) *v = d->cv[c];
    else memset(v, 0, sizeof *v);
    return STORE_OK;
  }
  return base_val(s, pos, c, v);
}

int store_get_cols(store *s, uint64_t pos, store_val **out) {
  *out = NULL;
  if (!s->ncols) return STORE_OK;
  store_val *v = malloc((size_t)s->ncols * sizeof *v);
  if (!v) return store_fail(s, STORE_ENOMEM, "out of memory");
  for (int i = 0; i < s->ncols; i++) {
    int rc = store_get_col(s, pos, i, &v[i]);
    if (rc) {
      free(v);
      return rc;
    }
  }
  size_t n = store_cols_size(s, v);
  store_val *c = malloc(n);
  if (!c) {
    free(v);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  uint8_t *p = (uint8_t *)(c + s->ncols);
  store_cols_copy(s, v, c, &p);
  free(v);
  *out = c;
  return STORE_OK;
}

/* ---- conditions ---------------------------------------------------------------------- */

/* SQLite's order of two non-NULL values: <0, 0, >0 (classes: numbers, text, blob). */
static int cls(int t) { return t == STORE_T_TEXT ? 1 : t == STORE_T_BLOB ? 2 : 0; }

static int num_cmp(const store_val *a, const store_val *b) {
  int ai = a->type != STORE_T_FLOAT, bi = b->type != STORE_T_FLOAT;
  if (ai && bi) return (a->i > b->i) - (a->i < b->i);
  if (!ai && !bi) return (a->f > b->f) - (a->f < b->f);
  /* an integer against a float, exactly */
  int64_t i = ai ? a->i : b->i;
  double f = ai ? b->f : a->f;
  int r; /* i against f */
  if (f >= 9223372036854775808.0) r = -1;
  else if (f < -9223372036854775808.0) r = 1;
  else {
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    r = i < fi ? -1 : i > fi ? 1 : fl < f ? -1 : 0;
  }
  return ai ? r : -r;
}

static int val_cmp(const store_val *a, const store_val *b) {
  int ca = cls(a->type), cb = cls(b->type);
  if (ca != cb) return ca - cb;
  if (ca == 0) return num_cmp(a, b);
  size_t n = a->n < b->n ? a->n : b->n;
  int r = n ? memcmp(a->p, b->p, n) : 0;
  return r ? r : (a->n > b->n) - (a->n < b->n);
}

/* Whether comparison op holds of an order r (<0, 0, >0). */
static int op_holds(int op, int r) {
  switch (op) {
  case STORE_OP_EQ: return r == 0;
  case STORE_OP_NE: return r != 0;
  case STORE_OP_LT: return r < 0;
  case STORE_OP_LE: return r <= 0;
  case STORE_OP_GT: return r > 0;
  case STORE_OP_GE: return r >= 0;
  default: return 0;
  }
}

static int test_val(const store_cond *cond, const store_val *v) {
  if (cond->op == STORE_OP_ISNULL) return !v->type;
  if (cond->op == STORE_OP_NOTNULL) return v->type != 0;
  if (!v->type) return 0;
  if (cond->op == STORE_OP_IN || cond->op == STORE_OP_NOTIN) {
    int in = cond->op == STORE_OP_IN;
    for (int k = 0; k < cond->nv; k++)
      if (cond->v[k].type && val_cmp(v, &cond->v[k]) == 0) return in;
    return !in;
  }
  if (!cond->nv || !cond->v[0].type) return 0;
  return op_holds(cond->op, val_cmp(v, &cond->v[0]));
}

int store_col_test(store *s, const store_cond *cond, uint64_t pos) {
  store_val v;
  if (store_get_col(s, pos, cond->col, &v)) return -1;
  return test_val(cond, &v);
}

/* The key of a partition's value in its index: the integer, or a hash of
** the text; NULL's is PART_NULL, which an integer may equal. */
#define PART_NULL 0x9e3779b97f4a7c15ull
static uint64_t part_key(const store_val *v) {
  if (!v->type) return PART_NULL; /* (not in the index: parts_build leaves NULL rows out) */
  if (v->type == STORE_T_TEXT) return XXH64(v->p, v->n, 1);
  return (uint64_t)v->i;
}

typedef struct kp {
  uint64_t key, pos;
} kp;
static int kp_cmp(const void *a, const void *b) {
  const kp *x = a, *y = b;
  return x->key != y->key ? (x->key > y->key) - (x->key < y->key) : (x->pos > y->pos) - (x->pos < y->pos);
}

static int parts_build(store *s, int i) {
  if (!s->parts && !(s->parts = calloc((size_t)s->ncols, sizeof *s->parts)))
    return store_fail(s, STORE_ENOMEM, "out of memory");
  cparts *cp = &s->parts[i];
  if (cp->built) return STORE_OK;
  kp *a = malloc((s->nbase ? s->nbase : 1) * sizeof *a);
  if (!a) return store_fail(s, STORE_ENOMEM, "out of memory");
  uint64_t m = 0; /* (the rows with a value: a NULL meets no `=`) */
  for (uint64_t r = 0; r < s->nbase; r++) {
    store_val v;
    int rc = base_val(s, r, i, &v);
    if (rc) {
      free(a);
      return rc;
    }
    if (!v.type) continue;
    a[m].key = part_key(&v);
    a[m].pos = r;
    m++;
  }
  qsort(a, m, sizeof *a, kp_cmp);
  cp->key = malloc((s->nbase ? s->nbase : 1) * 8);
  cp->pos = malloc((s->nbase ? s->nbase : 1) * 8);
  if (!cp->key || !cp->pos) {
    free(a);
    free(cp->key);
    free(cp->pos);
    cp->key = cp->pos = NULL;
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  for (uint64_t r = 0; r < m; r++) {
    cp->key[r] = a[r].key;
    cp->pos[r] = a[r].pos;
  }
  free(a);
  cp->n = m;
  cp->built = 1;
  return STORE_OK;
}

#define BIT(b, p) ((b)[(p) >> 3] >> ((p) & 7) & 1)

/* A text column's base rows as codes (cparts.code, .dict): one pass over
** the column, equal strings one code (open addressing on their hashes). */
static int codes_build(store *s, int i) {
  if (!s->parts && !(s->parts = calloc((size_t)s->ncols, sizeof *s->parts)))
    return store_fail(s, STORE_ENOMEM, "out of memory");
  cparts *cp = &s->parts[i];
  if (cp->code) return STORE_OK;
  uint64_t cap = 256, nd = 0;
  uint32_t *slot = malloc(cap * sizeof *slot); /* code + 1, 0: empty */
  uint64_t *hs = malloc(cap * sizeof *hs);
  store_val *dict = malloc(cap / 2 * sizeof *dict);
  uint32_t *code = malloc((s->nbase ? s->nbase : 1) * sizeof *code);
  int rc = slot && hs && dict && code ? STORE_OK : store_fail(s, STORE_ENOMEM, "out of memory");
  if (slot) memset(slot, 0, cap * sizeof *slot);
  for (uint64_t r = 0; rc == STORE_OK && r < s->nbase; r++) {
    store_val v;
    if ((rc = base_val(s, r, i, &v))) break;
    if (!v.type) {
      code[r] = UINT32_MAX;
      continue;
    }
    uint64_t h = XXH64(v.p, v.n, 2), j = h & (cap - 1);
    while (slot[j] && !(hs[j] == h && dict[slot[j] - 1].n == v.n && !memcmp(dict[slot[j] - 1].p, v.p, v.n)))
      j = (j + 1) & (cap - 1);
    if (slot[j]) {
      code[r] = slot[j] - 1;
      continue;
    }
    if ((nd + 1) * 2 > cap) { /* grow: the dictionary and the slots */
      uint64_t nc = cap * 2;
      uint32_t *ns = calloc(nc, sizeof *ns);
      uint64_t *nh = malloc(nc * sizeof *nh);
      store_val *ndict = realloc(dict, nc / 2 * sizeof *ndict);
      if (ndict) dict = ndict;
      if (!ns || !nh || !ndict || nd >= UINT32_MAX - 1) {
        free(ns);
        free(nh);
        rc = store_fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      for (uint64_t t = 0; t < cap; t++)
        if (slot[t]) {
          uint64_t u = hs[t] & (nc - 1);
          while (ns[u]) u = (u + 1) & (nc - 1);
          ns[u] = slot[t];
          nh[u] = hs[t];
        }
      free(slot);
      free(hs);
      slot = ns;
      hs = nh;
      cap = nc;
      j = h & (cap - 1);
      while (slot[j]) j = (j + 1) & (cap - 1);
    }
    dict[nd] = v;
    slot[j] = (uint32_t)(nd + 1);
    hs[j] = h;
    code[r] = (uint32_t)nd++;
  }
  free(slot);
  free(hs);
  if (rc) {
    free(dict);
    free(code);
    return rc;
  }
  cp->code = code;
  cp->dict = dict;
  cp->ndict = nd;
  return STORE_OK;
}

/* The records in memory (positions nb .. npos - 1) tested one by one, after
** the file's rows left kept bits set: *n the total. */
static int memory_rows(store *s, const store_cond *cond, uint64_t nb, uint64_t npos, uint8_t *bits, uint64_t kept,
                       uint64_t *n) {
  for (uint64_t p = nb; p < npos; p++) {
    if (!BIT(bits, p)) continue;
    int t = store_col_test(s, cond, p);
    if (t < 0) return STORE_ECORRUPT;
    if (t) kept++;
    else bits[p >> 3] &= (uint8_t) ~(1u << (p & 7));
  }
  *n = kept;
  return STORE_OK;
}

int store_col_filter(store *s, const store_cond *cond, uint64_t npos, uint8_t *bits, uint64_t *n) {
  if (cond->col < 0 || cond->col >= s->ncols) return store_fail(s, STORE_EINVAL, "no declared column %d", cond->col);
  const store_coldef *c = &s->cdef[cond->col];
  uint64_t kept = 0, nb = npos < s->nbase ? npos : s->nbase;
  if (c->role == STORE_R_PARTITION && cond->op == STORE_OP_EQ && cond->nv == 1 &&
      cond->v[0].type == (c->type == STORE_T_TEXT ? STORE_T_TEXT : STORE_T_INTEGER)) {
    /* the partition's base rows from its index, the rest of the base cleared */
    int rc = parts_build(s, cond->col);
    if (rc) return rc;
    cparts *cp = &s->parts[cond->col];
    uint64_t key = part_key(&cond->v[0]), lo = 0, hi = cp->n;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (cp->key[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    uint8_t *keep = calloc(nb / 8 + 1, 1);
    if (!keep) return store_fail(s, STORE_ENOMEM, "out of memory");
    for (uint64_t j = lo; j < cp->n && cp->key[j] == key; j++) {
      uint64_t p = cp->pos[j];
      if (p >= nb || !BIT(bits, p)) continue;
      if (c->type == STORE_T_TEXT || key == PART_NULL) { /* (hashes may collide; NULLs share the key) */
        int t = store_col_test(s, cond, p);
        if (t < 0) {
          free(keep);
          return STORE_ECORRUPT;
        }
        if (!t) continue;
      }
      keep[p >> 3] |= (uint8_t)(1u << (p & 7));
    }
    /* bits of the base := keep (whole bytes below nb, then the partial one) */
    uint64_t whole = nb / 8;
    memcpy(bits, keep, whole);
    for (uint64_t p = whole * 8; p < nb; p++) {
      bits[p >> 3] &= (uint8_t) ~(1u << (p & 7));
      bits[p >> 3] |= keep[p >> 3] & (uint8_t)(1u << (p & 7));
    }
    free(keep);
    for (uint64_t b = 0; b < whole; b++) kept += (uint64_t)__builtin_popcount(bits[b]);
    for (uint64_t p = whole * 8; p < nb; p++) kept += BIT(bits, p);
    return memory_rows(s, cond, nb, npos, bits, kept, n);
  }
  /* a text column's file rows: the condition tested once per distinct
  ** value (the column's codes), then a lookup per row */
  uint8_t *okc = NULL;
  const uint32_t *codes = NULL;
  int oknull = 0;
  if (c->type == STORE_T_TEXT && nb > 64) {
    int rc = codes_build(s, cond->col);
    if (rc) return rc;
    cparts *cp = &s->parts[cond->col];
    okc = malloc(cp->ndict + 1);
    if (!okc) return store_fail(s, STORE_ENOMEM, "out of memory");
    for (uint64_t d = 0; d < cp->ndict; d++) okc[d] = (uint8_t)test_val(cond, &cp->dict[d]);
    store_val nul;
    memset(&nul, 0, sizeof nul);
    oknull = test_val(cond, &nul);
    codes = cp->code;
  }
  /* an integer (or boolean) column against an integer: the file's rows a
  ** chunk at a time, compared in place */
  if ((c->type == STORE_T_INTEGER || c->type == STORE_T_FLOAT) && cond->nv == 1 &&
      cond->v[0].type == (c->type == STORE_T_INTEGER ? STORE_T_INTEGER : STORE_T_FLOAT) &&
      cond->op >= STORE_OP_EQ && cond->op <= STORE_OP_GE && nb) {
    const bcol *bc = &s->ucol[cond->col];
    int64_t x = cond->v[0].i;
    double fx = cond->v[0].f;
    int isint = c->type == STORE_T_INTEGER, op = cond->op;
    for (uint64_t k = 0; k * bc->crows < nb; k++) {
      uint64_t r0 = k * bc->crows, r1 = r0 + bc->crows < nb ? r0 + bc->crows : nb;
      const uint8_t *base = k < bc->nchunks && bc->caddr[k] != UINT64_MAX
                                ? h5_file_span(s->f, bc->caddr[k], (r1 - r0) * 8) : NULL;
      if (!base)
        return store_fail(s, STORE_ECORRUPT, "%s: a chunk of /memories/columns/%s lies outside the file", s->path,
                          c->name);
      for (uint64_t p = r0; p < r1; p++) {
        if (!bits[p >> 3]) {
          p |= 7;
          continue;
        }
        if (!BIT(bits, p)) continue;
        int ok, r;
        if (isint) {
          int64_t y;
          memcpy(&y, base + (p - r0) * 8, 8);
          r = (y > x) - (y < x);
          ok = y != NULL_I64;
        } else {
          double y;
          memcpy(&y, base + (p - r0) * 8, 8);
          r = (y > fx) - (y < fx);
          ok = !isnan(y);
        }
        if (ok) ok = op_holds(op, r);
        if (ok) kept++;
        else bits[p >> 3] &= (uint8_t) ~(1u << (p & 7));
      }
    }
    return memory_rows(s, cond, nb, npos, bits, kept, n);
  }
  /* every set position, the column alone; words of zeros skipped */
  for (uint64_t b = 0; b < (npos + 7) / 8; b++) {
    if (b % 8 == 0 && b + 8 <= (npos + 7) / 8) {
      uint64_t wv;
      memcpy(&wv, bits + b, 8);
      if (!wv) {
        b += 7;
        continue;
      }
    }
    if (!bits[b]) continue;
    for (int k = 0; k < 8; k++) {
      uint64_t p = b * 8 + (uint64_t)k;
      if (p >= npos || !(bits[b] >> k & 1)) continue;
      int ok;
      if (codes && p < nb) {
        ok = codes[p] == UINT32_MAX ? oknull : okc[codes[p]];
      } else {
        store_val v;
        int rc = p < s->nbase ? base_val(s, p, cond->col, &v) : store_get_col(s, p, cond->col, &v);
        if (rc) {
          free(okc);
          return rc;
        }
        ok = test_val(cond, &v);
      }
      if (ok) kept++;
      else bits[b] &= (uint8_t) ~(1u << k);
    }
  }
  free(okc);
  *n = kept;
  return STORE_OK;
}

/* ---- the text primary key ---------------------------------------------------------------- */

int store_pk_col(const store *s) {
  for (int i = 0; i < s->ncols; i++)
    if (s->cdef[i].role == STORE_R_PKEY) return i;
  return -1;
}

#define PK_EMPTY UINT64_MAX
#define PK_GONE (UINT64_MAX - 1)

static int pk_grow(store *s, pkmap *m) {
  uint64_t cap = m->cap ? m->cap * 2 : 1024;
  while (cap < (m->n + 1) * 2) cap *= 2;
  uint64_t *h = malloc(cap * 8), *pos = malloc(cap * 8);
  if (!h || !pos) {
    free(h);
    free(pos);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  memset(pos, 0xff, cap * 8);
  for (uint64_t i = 0; i < m->cap; i++) {
    if (m->pos[i] >= PK_GONE) continue;
    uint64_t j = m->h[i] & (cap - 1);
    while (pos[j] != PK_EMPTY) j = (j + 1) & (cap - 1);
    h[j] = m->h[i];
    pos[j] = m->pos[i];
  }
  free(m->h);
  free(m->pos);
  m->h = h;
  m->pos = pos;
  m->cap = cap;
  m->used = m->n;
  return STORE_OK;
}

static int pk_add(store *s, uint64_t h, uint64_t p) {
  pkmap *m = s->pk;
  if ((m->used + 1) * 2 > m->cap && pk_grow(s, m)) return STORE_ENOMEM;
  uint64_t j = h & (m->cap - 1);
  while (m->pos[j] < PK_GONE) j = (j + 1) & (m->cap - 1);
  if (m->pos[j] == PK_EMPTY) m->used++;
  m->h[j] = h;
  m->pos[j] = p;
  m->n++;
  return STORE_OK;
}

/* The map over every live record (built on first use; kept up to date by
** store_cols_note until the base changes). */
static int pk_build(store *s) {
  if (s->pk) return STORE_OK;
  int c = store_pk_col(s);
  if (c < 0) return STORE_ENOTFOUND;
  if (!(s->pk = calloc(1, sizeof *s->pk))) return store_fail(s, STORE_ENOMEM, "out of memory");
  uint64_t np = s->nbase + s->ndelta;
  for (uint64_t p = 0; p < np; p++) {
    if (!store_pos_live(s, p)) continue;
    store_val v;
    int rc = store_get_col(s, p, c, &v);
    if (!rc && v.type) rc = pk_add(s, XXH64(v.p, v.n, 0), p);
    if (rc) {
      pkmap_free(s);
      return rc;
    }
  }
  return STORE_OK;
}

int store_pkey_find(store *s, const char *key, size_t n, uint64_t *pos) {
  int c = store_pk_col(s);
  if (c < 0 || !key) return STORE_ENOTFOUND;
  int rc = pk_build(s);
  if (rc) return rc;
  pkmap *m = s->pk;
  uint64_t h = XXH64(key, n, 0);
  for (uint64_t j = h & (m->cap - 1); m->cap && m->pos[j] != PK_EMPTY; j = (j + 1) & (m->cap - 1)) {
    if (m->pos[j] == PK_GONE || m->h[j] != h || !store_pos_live(s, m->pos[j])) continue;
    store_val v;
    if (store_get_col(s, m->pos[j], c, &v)) return STORE_ECORRUPT;
    if (v.type && v.n == n && (!n || memcmp(v.p, key, n) == 0)) {
      *pos = m->pos[j];
      return STORE_OK;
    }
  }
  return STORE_ENOTFOUND;
}

int store_cols_pkey_free(store *s, const store_val *cv) {
  int c = store_pk_col(s);
  if (c < 0 || !cv || !cv[c].type) return STORE_OK;
  uint64_t pos;
  int rc = store_pkey_find(s, cv[c].p, cv[c].n, &pos);
  if (rc == STORE_OK)
    return store_fail(s, STORE_EEXISTS, "%s: '%.*s' is taken (by id %lld)", s->cdef[c].name,
                      cv[c].n > 200 ? 200 : (int)cv[c].n, (const char *)cv[c].p, (long long)store_pos_id(s, pos));
  return rc == STORE_ENOTFOUND ? STORE_OK : rc;
}

void store_cols_note(store *s, uint64_t pos, int live) {
  if (!s->pk) return;
  int c = store_pk_col(s);
  store_val v;
  memset(&v, 0, sizeof v);
  if (pos >= s->nbase) {
    const drec *d = s->delta[pos - s->nbase];
    if (d->cv) v = d->cv[c];
  } else if (base_val(s, pos, c, &v)) {
    pkmap_free(s); /* (built again on first use) */
    return;
  }
  if (!v.type) return;
  uint64_t h = XXH64(v.p, v.n, 0);
  pkmap *m = s->pk;
  if (live) {
    if (pk_add(s, h, pos)) pkmap_free(s);
    return;
  }
  for (uint64_t j = h & (m->cap - 1); m->cap && m->pos[j] != PK_EMPTY; j = (j + 1) & (m->cap - 1))
    if (m->pos[j] == pos) {
      m->pos[j] = PK_GONE;
      m->n--;
      return;
    }
}
