/*
** ext/func_h5.c - any HDF5 file from SQL:
**
**   SELECT * FROM h5_ls('data.h5' [, '/group']);      every object, recursively
**   SELECT * FROM h5_attrs('data.h5' [, '/path']);    attributes
**   SELECT h5_read_json('data.h5', '/ds' [, '10:20, ::2']);   values as JSON
**
** Files are opened read-only.  Everything here touches the file system, so
** it is registered SQLITE_DIRECTONLY / SQLITE_VTAB_DIRECTONLY: usable in
** statements a user types, never from a trigger or a view a database file
** brings along.
*/
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ext_err.h"
#include "h5sql.h"

/* ---- walking a file ---------------------------------------------------- */

/* A set of object header addresses (open addressing; 0 marks a free slot,
** so addresses are stored plus one). */
typedef struct addrset {
  uint64_t *slot;
  size_t cap, n;
} addrset;

static int addrset_add(addrset *s, uint64_t addr) { /* 1 added, 0 there, -1 OOM */
  if (2 * (s->n + 1) > s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 64;
    uint64_t *ns = calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (size_t i = 0; i < s->cap; i++)
      if (s->slot[i]) {
        size_t j = (size_t)(s->slot[i] * 0x9E3779B97F4A7C15ull >> 17) & (ncap - 1);
        while (ns[j]) j = (j + 1) & (ncap - 1);
        ns[j] = s->slot[i];
      }
    free(s->slot);
    s->slot = ns;
    s->cap = ncap;
  }
  uint64_t key = addr + 1;
  size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 17) & (s->cap - 1);
  while (s->slot[j]) {
    if (s->slot[j] == key) return 0;
    j = (j + 1) & (s->cap - 1);
  }
  s->slot[j] = key;
  s->n++;
  return 1;
}

/* One row of h5_ls: an object (obj) or a soft/external/user-defined link. */
typedef struct ls_entry {
  char *path;
  h5_obj *obj;
  const h5_link *link; /* the link that led here (NULL for the start) */
} ls_entry;

typedef struct ls_list {
  ls_entry *v;
  size_t n, cap;
  addrset seen;
} ls_list;

#define LS_MAX_DEPTH 512 /* groups nested deeper than this are refused */

static void ls_list_free(ls_list *l) {
  for (size_t i = 0; i < l->n; i++) sqlite3_free(l->v[i].path);
  free(l->v);
  free(l->seen.slot);
  memset(l, 0, sizeof *l);
}

static int ls_add(ls_list *l, char *path, h5_obj *obj, const h5_link *link) {
  if (!path) return SQLITE_NOMEM;
  if (l->n == l->cap) {
    size_t ncap = l->cap ? 2 * l->cap : 64;
    ls_entry *nv = realloc(l->v, ncap * sizeof *nv);
    if (!nv) {
      sqlite3_free(path);
      return SQLITE_NOMEM;
    }
    l->v = nv;
    l->cap = ncap;
  }
  ls_entry *e = &l->v[l->n++];
  e->path = path;
  e->obj = obj;
  e->link = link;
  return SQLITE_OK;
}

typedef struct link_vec {
  const h5_link **v;
  size_t n, cap;
} link_vec;

static int collect_link(void *ctx, const h5_link *link) {
  link_vec *lv = ctx;
  if (lv->n == lv->cap) {
    size_t ncap = lv->cap ? 2 * lv->cap : 16;
    const h5_link **nv = realloc(lv->v, ncap * sizeof *nv);
    if (!nv) return 1;
    lv->v = nv;
    lv->cap = ncap;
  }
  lv->v[lv->n++] = link; /* valid until h5_close */
  return 0;
}

/* A failure (lib/h5's code hr) reading what (a group ..., an object) at
** path: its SQLite code (ext_err_rc: SQLITE_CORRUPT for a damaged file),
** the message in *pzErr (none when out of memory). */
static int ls_fail(h5_file *f, int hr, const char *what, const char *path, char **pzErr) {
  if (hr == H5_ENOMEM) return SQLITE_NOMEM;
  *pzErr = sqlite3_mprintf("%s'%s': %s", what, path, h5_errmsg(f));
  return ext_err_rc(hr);
}

/* Add the members of group g (at path) depth-first in name order; each
** object once, under the first path that reaches it. */
static int ls_visit(h5_file *f, h5_obj *g, const char *path, int depth, ls_list *l,
                    char **pzErr) {
  if (depth > LS_MAX_DEPTH) {
    *pzErr = sqlite3_mprintf("'%s': groups nested deeper than %d", path, LS_MAX_DEPTH);
    return SQLITE_ERROR;
  }
  link_vec lv = {0};
  int rc = h5_group_iter(g, collect_link, &lv);
  if (rc != H5_OK) {
    free(lv.v);
    if (rc == H5_ESTOP) return SQLITE_NOMEM;
    return ls_fail(f, rc, "group ", path, pzErr);
  }
  int src = SQLITE_OK;
  const char *sep = strcmp(path, "/") == 0 ? "" : "/";
  for (size_t i = 0; src == SQLITE_OK && i < lv.n; i++) {
    const h5_link *k = lv.v[i];
    char *p = sqlite3_mprintf("%s%s%s", path, sep, k->name);
    if (k->type != H5_LINK_HARD) {
      src = ls_add(l, p, NULL, k);
      continue;
    }
    int fresh = addrset_add(&l->seen, k->addr);
    if (fresh <= 0) {
      sqlite3_free(p);
      if (fresh < 0) src = SQLITE_NOMEM;
      continue;
    }
    h5_obj *o;
    int hr = h5_obj_open(f, k->addr, &o);
    if (hr != H5_OK) {
      src = ls_fail(f, hr, "", p ? p : "?", pzErr);
      sqlite3_free(p);
      break;
    }
    src = ls_add(l, p, o, k);
    if (src == SQLITE_OK && h5_obj_kind(o) == H5_KIND_GROUP)
      src = ls_visit(f, o, l->v[l->n - 1].path, depth + 1, l, pzErr);
  }
  free(lv.v);
  return src;
}

/* The canonical form of a path argument: '/' first, no '/' at the end. */
static char *canon_path(const char *path) {
  while (*path == '/') path++;
  char *p = sqlite3_mprintf("/%s", path);
  if (p) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
  }
  return p;
}

/* The object at path, and with recurse everything under it. */
static int ls_collect(h5_file *f, const char *path, int recurse, ls_list *l, char **pzErr) {
  h5_obj *o;
  int hr = h5_obj_open_path(f, path, &o);
  if (hr != H5_OK) return ls_fail(f, hr, "", path, pzErr);
  char *p = canon_path(path);
  int rc = ls_add(l, p, o, NULL);
  if (rc == SQLITE_OK && addrset_add(&l->seen, h5_obj_addr(o)) < 0) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK && recurse && h5_obj_kind(o) == H5_KIND_GROUP)
    rc = ls_visit(f, o, l->v[0].path, 0, l, pzErr);
  return rc;
}

/* ---- h5_ls and h5_attrs: eponymous virtual tables ---------------------- */

enum {
  LS_PATH, LS_NAME, LS_KIND, LS_DTYPE, LS_SHAPE, LS_MAXSHAPE, LS_CHUNKS, LS_FILTERS,
  LS_LAYOUT, LS_ELEMENTS, LS_BYTES, LS_NATTRS, LS_TARGET, LS_TARGET_FILE, LS_ERROR, LS_FILE, LS_ROOT
};
enum { AT_PATH, AT_NAME, AT_DTYPE, AT_SHAPE, AT_VALUE, AT_ERROR, AT_FILE, AT_ROOT };

typedef struct ls_vtab {
  sqlite3_vtab base;
  int attrs; /* h5_attrs rather than h5_ls */
} ls_vtab;

typedef struct attr_row {
  const char *path;
  const h5_attr *a;
} attr_row;

typedef struct ls_cursor {
  sqlite3_vtab_cursor base;
  h5_file *f;
  ls_list list;
  attr_row *rows; /* h5_attrs */
  size_t nrows, caprows;
  size_t i;
} ls_cursor;

/* msg (taken) as the table's error (ext_vtab_msg). */
static int vt_error(sqlite3_vtab *vt, int rc, const char *who, char *msg) {
  return ext_vtab_msg(vt, rc, who, &msg);
}

static int ls_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **pzErr) {
  (void)argc;
  (void)argv;
  int attrs = aux != NULL;
  int rc = sqlite3_declare_vtab(
      db, attrs ? "CREATE TABLE x(path TEXT, name TEXT, dtype TEXT, shape TEXT, value, error TEXT,"
                  " file HIDDEN, root HIDDEN)"
                : "CREATE TABLE x(path TEXT, name TEXT, kind TEXT, dtype TEXT, shape TEXT,"
                  " maxshape TEXT, chunks TEXT, filters TEXT, layout TEXT, elements INTEGER,"
                  " bytes INTEGER, nattrs INTEGER, target TEXT, target_file TEXT, error TEXT,"
                  " file HIDDEN, root HIDDEN)");
  if (rc != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("%s: cannot declare columns: %s", attrs ? "h5_attrs" : "h5_ls", sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  ls_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  vt->attrs = attrs;
  *out = &vt->base;
  return SQLITE_OK;
}

static int ls_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* Plans: idxNum bit 0 = the file argument, bit 1 = the root argument. */
static int ls_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  ls_vtab *v = (ls_vtab *)vt;
  int col_file = v->attrs ? AT_FILE : LS_FILE, col_root = v->attrs ? AT_ROOT : LS_ROOT;
  int ifile = -1, iroot = -1;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (c->iColumn == col_file) {
      if (!c->usable) return SQLITE_CONSTRAINT;
      ifile = i;
    } else if (c->iColumn == col_root) {
      if (!c->usable) return SQLITE_CONSTRAINT;
      iroot = i;
    }
  }
  if (ifile < 0) {
    /* Not an error here: SQLite also asks about plans without the file
    ** argument (the OR optimisation, 'WHERE path = ... OR ...'), and the
    ** plan that has it must win.  Priced out; xFilter reports the error if
    ** it is run all the same (no file argument at all). */
    info->idxNum = 0;
    info->estimatedCost = 1e99;
    info->estimatedRows = 1000000000;
    return SQLITE_OK;
  }
  info->aConstraintUsage[ifile].argvIndex = 1;
  info->aConstraintUsage[ifile].omit = 1;
  info->idxNum = 1;
  if (iroot >= 0) {
    info->aConstraintUsage[iroot].argvIndex = 2;
    info->aConstraintUsage[iroot].omit = 1;
    info->idxNum |= 2;
  }
  info->estimatedCost = 1000;
  info->estimatedRows = 1000;
  return SQLITE_OK;
}

static int ls_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  ls_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void ls_reset(ls_cursor *c) {
  ls_list_free(&c->list);
  free(c->rows);
  c->rows = NULL;
  c->nrows = c->caprows = 0;
  h5_close(c->f);
  c->f = NULL;
  c->i = 0;
}

static int ls_close(sqlite3_vtab_cursor *cur) {
  ls_cursor *c = (ls_cursor *)cur;
  ls_reset(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

typedef struct attr_ctx {
  ls_cursor *c;
  const char *path;
} attr_ctx;

static int collect_attr(void *ctx, const h5_attr *a) {
  attr_ctx *ac = ctx;
  ls_cursor *c = ac->c;
  if (c->nrows == c->caprows) {
    size_t ncap = c->caprows ? 2 * c->caprows : 16;
    attr_row *nv = realloc(c->rows, ncap * sizeof *nv);
    if (!nv) return 1;
    c->rows = nv;
    c->caprows = ncap;
  }
  c->rows[c->nrows].path = ac->path;
  c->rows[c->nrows].a = a; /* valid until h5_close */
  c->nrows++;
  return 0;
}

static int ls_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxStr;
  ls_cursor *c = (ls_cursor *)cur;
  ls_vtab *vt = (ls_vtab *)cur->pVtab;
  const char *who = vt->attrs ? "h5_attrs" : "h5_ls";
  ls_reset(c);
  if (!(idxNum & 1) || argc < 1)
    return vt_error(&vt->base, SQLITE_ERROR, who, sqlite3_mprintf("the first argument, the file name, is missing"));
  const char *file = (const char *)sqlite3_value_text(argv[0]);
  const char *root = (idxNum & 2) && argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : "/";
  if (!file || !root)
    return vt_error(&vt->base, SQLITE_ERROR, who,
                    sqlite3_mprintf(!file ? "the file name is NULL" : "the path is NULL"));
  char *err = NULL;
  int rc = h5sql_open(who, file, &c->f, &err);
  if (rc != SQLITE_OK) {
    sqlite3_free(vt->base.zErrMsg);
    vt->base.zErrMsg = err;
    return rc;
  }
  /* h5_attrs with a path: that object's attributes; otherwise everything */
  int recurse = !vt->attrs || !(idxNum & 2);
  rc = ls_collect(c->f, root, recurse, &c->list, &err);
  if (rc != SQLITE_OK) return vt_error(&vt->base, rc, who, err);
  if (vt->attrs) {
    for (size_t i = 0; i < c->list.n; i++) {
      ls_entry *e = &c->list.v[i];
      if (!e->obj) continue;
      attr_ctx ac = {c, e->path};
      int hrc = h5_attr_iter(e->obj, collect_attr, &ac);
      if (hrc == H5_ESTOP) return SQLITE_NOMEM;
      if (hrc != H5_OK)
        return hrc == H5_ENOMEM ? SQLITE_NOMEM
                                : vt_error(&vt->base, ext_err_rc(hrc), who,
                                           sqlite3_mprintf("attributes of '%s': %s", e->path, h5_errmsg(c->f)));
    }
  }
  return SQLITE_OK;
}

static int ls_next(sqlite3_vtab_cursor *cur) {
  ((ls_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int ls_eof(sqlite3_vtab_cursor *cur) {
  ls_cursor *c = (ls_cursor *)cur;
  ls_vtab *vt = (ls_vtab *)cur->pVtab;
  return c->i >= (vt->attrs ? c->nrows : c->list.n);
}

static int ls_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((ls_cursor *)cur)->i + 1;
  return SQLITE_OK;
}

/* Text from s as the result (NULL when fail), freeing s. */
static void result_sb(sqlite3_context *ctx, strbuf *s, int fail, int json) {
  if (s->oom)
    sqlite3_result_error_nomem(ctx);
  else if (fail || !s->buf)
    sqlite3_result_null(ctx);
  else {
    sqlite3_result_text(ctx, s->buf, (int)s->len, SQLITE_TRANSIENT);
    if (json) sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
  }
  strbuf_free(s);
}

static const char *last_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s && s[1] ? s + 1 : path;
}

typedef struct count_ctx {
  sqlite3_int64 n;
} count_ctx;

static int count_attr(void *ctx, const h5_attr *a) {
  (void)a;
  ((count_ctx *)ctx)->n++;
  return 0;
}

static int ls_column_obj(ls_cursor *c, sqlite3_context *ctx, int col) {
  ls_entry *e = &c->list.v[c->i];
  strbuf s = {0};
  if (col == LS_PATH) {
    sqlite3_result_text(ctx, e->path, -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
  }
  if (col == LS_NAME) {
    sqlite3_result_text(ctx, last_name(e->path), -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
  }
  if (!e->obj) { /* a link that leads nowhere in this file */
    const h5_link *k = e->link;
    switch (col) {
    case LS_KIND:
      sqlite3_result_text(ctx,
                          k->type == H5_LINK_SOFT       ? "softlink"
                          : k->type == H5_LINK_EXTERNAL ? "extlink"
                                                        : "udlink",
                          -1, SQLITE_STATIC);
      break;
    case LS_TARGET:
      if (k->target) sqlite3_result_text(ctx, k->target, -1, SQLITE_TRANSIENT);
      break;
    case LS_TARGET_FILE:
      if (k->filename) sqlite3_result_text(ctx, k->filename, -1, SQLITE_TRANSIENT);
      break;
    default: break;
    }
    return SQLITE_OK;
  }
  h5_kind kind = h5_obj_kind(e->obj);
  h5_dset_info info;
  int is_dset = kind == H5_KIND_DATASET;
  int have_info = is_dset && h5_dset_info_get(e->obj, &info) == H5_OK;
  if (col == LS_ERROR) { /* why a dataset's dtype, shape and layout are NULL */
    if (is_dset && !have_info) {
      const char *m = h5_errmsg(c->f);
      sqlite3_result_text(ctx, m[0] ? m : "the dataset's header cannot be read", -1, SQLITE_TRANSIENT);
    }
    return SQLITE_OK;
  }
  switch (col) {
  case LS_KIND:
    sqlite3_result_text(ctx,
                        kind == H5_KIND_GROUP     ? "group"
                        : kind == H5_KIND_DATASET ? "dataset"
                        : kind == H5_KIND_DATATYPE ? "datatype"
                                                   : "other",
                        -1, SQLITE_STATIC);
    break;
  case LS_DTYPE:
    if (have_info) result_sb(ctx, &s, h5sql_dtype(info.type, &s) != 0, 0);
    break;
  case LS_SHAPE:
  case LS_MAXSHAPE:
    if (have_info && info.rank >= 0) {
      h5sql_dims_json(&s, info.rank, col == LS_SHAPE ? info.dims : info.maxdims,
                      col == LS_MAXSHAPE);
      result_sb(ctx, &s, 0, 1);
    }
    break;
  case LS_CHUNKS:
    if (have_info && info.layout == H5_LAYOUT_CHUNKED) {
      h5sql_dims_json(&s, info.chunk_rank, info.chunk, 0);
      result_sb(ctx, &s, 0, 1);
    }
    break;
  case LS_FILTERS:
    if (have_info) {
      h5sql_filters_json(&s, &info);
      result_sb(ctx, &s, 0, 1);
    }
    break;
  case LS_LAYOUT:
    if (have_info) {
      static const char *names[] = {"compact", "contiguous", "chunked", "virtual"};
      sqlite3_result_text(ctx, info.external ? "external" : names[info.layout & 3], -1,
                          SQLITE_STATIC);
    }
    break;
  case LS_ELEMENTS: /* NULL for a null dataspace, as its shape, and for a
                      dataspace its storage cannot hold (h5_dset_check) */
    if (have_info && info.rank >= 0 && h5_dset_check(e->obj) != H5_ECORRUPT)
      sqlite3_result_int64(ctx, (sqlite3_int64)info.nelems);
    break;
  case LS_BYTES:
    if (have_info) {
      uint64_t b;
      if (h5_dset_storage_size(e->obj, &b) == H5_OK) sqlite3_result_int64(ctx, (sqlite3_int64)b);
    }
    break;
  case LS_NATTRS: {
    count_ctx cc = {0};
    if (h5_attr_iter(e->obj, count_attr, &cc) == H5_OK) sqlite3_result_int64(ctx, cc.n);
    break;
  }
  default: break;
  }
  return SQLITE_OK;
}

static int ls_column_attr(ls_cursor *c, sqlite3_context *ctx, int col) {
  const attr_row *r = &c->rows[c->i];
  const h5_attr *a = r->a;
  strbuf s = {0};
  if (a->err) { /* an attribute this reader cannot decode: its path, name and why */
    if (col == AT_PATH) sqlite3_result_text(ctx, r->path, -1, SQLITE_TRANSIENT);
    else if (col == AT_NAME) sqlite3_result_text(ctx, a->name, -1, SQLITE_TRANSIENT);
    else if (col == AT_ERROR) sqlite3_result_text(ctx, a->err, -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
  }
  switch (col) {
  case AT_PATH: sqlite3_result_text(ctx, r->path, -1, SQLITE_TRANSIENT); break;
  case AT_NAME: sqlite3_result_text(ctx, a->name, -1, SQLITE_TRANSIENT); break;
  case AT_DTYPE: result_sb(ctx, &s, h5sql_dtype(a->type, &s) != 0, 0); break;
  case AT_SHAPE:
    if (a->rank >= 0) {
      h5sql_dims_json(&s, a->rank, a->dims, 0);
      result_sb(ctx, &s, 0, 1);
    }
    break;
  case AT_VALUE: h5sql_result_values(ctx, "h5_attrs", c->f, a->type, a->data, a->rank, a->dims); break;
  default: break;
  }
  return SQLITE_OK;
}

static int ls_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  ls_cursor *c = (ls_cursor *)cur;
  return ((ls_vtab *)cur->pVtab)->attrs ? ls_column_attr(c, ctx, col)
                                        : ls_column_obj(c, ctx, col);
}

static sqlite3_module ls_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = ls_connect,
    .xBestIndex = ls_best_index,
    .xDisconnect = ls_disconnect,
    .xOpen = ls_open,
    .xClose = ls_close,
    .xFilter = ls_filter,
    .xNext = ls_next,
    .xEof = ls_eof,
    .xColumn = ls_column,
    .xRowid = ls_rowid,
};

/* ---- h5_read_json ------------------------------------------------------- */

/* Files h5_read_json opened lately, kept per connection while they are
** unchanged on disk (same inode, size and modification time). */
#define FCACHE_N 4
typedef struct fcache_entry {
  char *path;
  struct stat st;
  h5_file *f;
  unsigned long use;
} fcache_entry;

typedef struct fcache {
  fcache_entry e[FCACHE_N];
  unsigned long clock;
  int refs; /* functions holding the cache */
} fcache;

static void fcache_unref(void *p) {
  fcache *fc = p;
  if (--fc->refs > 0) return;
  for (int i = 0; i < FCACHE_N; i++) {
    free(fc->e[i].path);
    h5_close(fc->e[i].f);
  }
  sqlite3_free(fc);
}

static int fcache_get(fcache *fc, const char *who, const char *path, h5_file **out,
                      char **pzErr) {
  struct stat st;
  if (stat(path, &st) != 0) {
    *pzErr = sqlite3_mprintf("%s: cannot open '%s': %s", who, path, strerror(errno));
    return SQLITE_ERROR;
  }
  int victim = -1;
  for (int i = 0; i < FCACHE_N && victim < 0; i++) {
    fcache_entry *e = &fc->e[i];
    if (!e->f || strcmp(e->path, path) != 0) continue;
    if (h5sql_same_file(&e->st, &st)) {
      e->use = ++fc->clock;
      *out = e->f;
      return SQLITE_OK;
    }
    victim = i; /* changed on disk: reopen in its place */
  }
  for (int i = 0; i < FCACHE_N && victim < 0; i++)
    if (!fc->e[i].f) victim = i;
  if (victim < 0) { /* the least recently used */
    victim = 0;
    for (int i = 1; i < FCACHE_N; i++)
      if (fc->e[i].use < fc->e[victim].use) victim = i;
  }
  h5_file *f;
  int rc = h5sql_open(who, path, &f, pzErr);
  if (rc != SQLITE_OK) return rc;
  char *p = strdup(path);
  if (!p) {
    h5_close(f);
    return SQLITE_NOMEM;
  }
  fcache_entry *e = &fc->e[victim];
  free(e->path);
  h5_close(e->f);
  e->path = p;
  e->st = st;
  e->f = f;
  e->use = ++fc->clock;
  *out = f;
  return SQLITE_OK;
}

/* A selection in numpy's slice syntax, one item per dimension separated
** by commas: an index (negative counts from the end; the dimension is
** dropped from the result), start:stop[:step] with any part left out
** (positive steps only, as in h5py; out-of-range bounds are clipped as
** Python does), and at most one '...' for all the dimensions not named. */
typedef struct sel {
  uint64_t start[H5_MAX_RANK], count[H5_MAX_RANK], stride[H5_MAX_RANK];
  int keep[H5_MAX_RANK]; /* 0: an index, dropped from the result */
} sel;

static int parse_int(const char **s, int64_t *v) {
  const char *p = *s;
  while (*p == ' ' || *p == '\t') p++;
  int neg = 0;
  if (*p == '-' || *p == '+') neg = *p++ == '-';
  if (*p < '0' || *p > '9') return 0;
  uint64_t x = 0;
  while (*p >= '0' && *p <= '9') {
    if (x > (UINT64_MAX - 9) / 10) return -1;
    x = x * 10 + (uint64_t)(*p++ - '0');
  }
  if (x > (uint64_t)INT64_MAX) return -1;
  while (*p == ' ' || *p == '\t') p++;
  *v = neg ? -(int64_t)x : (int64_t)x;
  *s = p;
  return 1;
}

/* Python's rule for a slice bound v (given) on a dimension of n. */
static uint64_t clip_bound(int64_t v, uint64_t n) {
  if (v < 0) {
    uint64_t back = (uint64_t)(-(v + 1)) + 1;
    return back >= n ? 0 : n - back;
  }
  return (uint64_t)v > n ? n : (uint64_t)v;
}

static char *parse_item(const char *item, size_t len, uint64_t n, int k, sel *out) {
  char buf[128];
  if (len >= sizeof buf) return sqlite3_mprintf("selection item '%.*s' too long", (int)len, item);
  memcpy(buf, item, len);
  buf[len] = '\0';
  const char *p = buf;
  int64_t v[3] = {0, 0, 1};
  int have[3] = {0, 0, 0}, nparts = 1;
  for (int part = 0;; part++) {
    int r = parse_int(&p, &v[part]);
    if (r < 0) return sqlite3_mprintf("number out of range in '%s'", buf);
    have[part] = r;
    if (r == 0)
      while (*p == ' ' || *p == '\t') p++;
    if (*p == ':' && part < 2) {
      p++;
      nparts++;
      continue;
    }
    if (*p) return sqlite3_mprintf("cannot read selection item '%s'", buf);
    break;
  }
  if (nparts == 1) {
    if (!have[0]) return sqlite3_mprintf("empty selection item for dimension %d", k);
    int64_t i = v[0];
    uint64_t back = i < 0 ? (uint64_t)(-(i + 1)) + 1 : 0;
    uint64_t idx = i < 0 ? n - back : (uint64_t)i;
    if (i < 0 ? back > n : idx >= n)
      return sqlite3_mprintf("index %lld is out of range for dimension %d of size %llu",
                             (long long)i, k, (unsigned long long)n);
    out->start[k] = idx;
    out->count[k] = 1;
    out->stride[k] = 1;
    out->keep[k] = 0;
    return NULL;
  }
  int64_t step = have[2] ? v[2] : 1;
  if (step <= 0)
    return sqlite3_mprintf("step %lld in '%s': only positive steps are supported (as in h5py)",
                           (long long)step, buf);
  uint64_t a = have[0] ? clip_bound(v[0], n) : 0, b = have[1] ? clip_bound(v[1], n) : n;
  out->start[k] = a < n ? a : 0;
  out->count[k] = b > a ? (b - a - 1) / (uint64_t)step + 1 : 0;
  out->stride[k] = (uint64_t)step;
  out->keep[k] = 1;
  return NULL;
}

/* Parse text against a dataset of the given rank and dims; NULL or a
** sqlite3_malloc'd message. */
static char *parse_sel(const char *text, int rank, const uint64_t *dims, sel *out) {
  for (int k = 0; k < rank; k++) {
    out->start[k] = 0;
    out->count[k] = dims[k];
    out->stride[k] = 1;
    out->keep[k] = 1;
  }
  const char *items[H5_MAX_RANK + 2];
  size_t lens[H5_MAX_RANK + 2];
  int n = 0, ellipsis = -1;
  const char *p = text;
  int blank = 1;
  for (const char *q = text; *q; q++) blank &= *q == ' ' || *q == '\t';
  if (blank) return NULL;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    while (len && (*p == ' ' || *p == '\t')) p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (n == H5_MAX_RANK + 1)
      return sqlite3_mprintf("selection has more items than the dataset's %d dimensions", rank);
    if (len == 3 && memcmp(p, "...", 3) == 0) {
      if (ellipsis >= 0) return sqlite3_mprintf("selection has more than one '...'");
      ellipsis = n;
    }
    items[n] = p;
    lens[n] = len;
    n++;
    if (!e) break;
    p = e + 1;
  }
  /* a trailing comma, as in '5,', adds nothing */
  if (n > 1 && lens[n - 1] == 0) n--;
  int named = ellipsis >= 0 ? n - 1 : n;
  if (named > rank)
    return sqlite3_mprintf("selection has %d items for a dataset of %d dimension%s", named,
                           rank, rank == 1 ? "" : "s");
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (i == ellipsis) {
      k += rank - named;
      continue;
    }
    char *err = parse_item(items[i], lens[i], dims[k], k, out);
    if (err) return err;
    k++;
  }
  return NULL;
}

static void fn_read_json(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  static const char who[] = "h5_read_json";
  if (!ext_direct_call(ctx, who)) return;
  const char *file = (const char *)sqlite3_value_text(argv[0]);
  const char *path = (const char *)sqlite3_value_text(argv[1]);
  const char *seltext = argc > 2 ? (const char *)sqlite3_value_text(argv[2]) : NULL;
  if (!file || !path) {
    h5sql_error(ctx, UTIL_EINVAL, who, "%s is NULL", !file ? "the file name" : "the path");
    return;
  }
  h5_file *f;
  char *err = NULL;
  int rc = fcache_get(sqlite3_user_data(ctx), who, file, &f, &err);
  if (rc != SQLITE_OK) {
    ext_result_rc(ctx, rc, err);
    sqlite3_free(err);
    return;
  }
  h5_obj *o;
  h5_dset_info info;
  int hrc = h5_obj_open_path(f, path, &o);
  if (hrc != H5_OK) {
    h5sql_error(ctx, hrc, who, "'%s': %s", path, h5_errmsg(f));
    return;
  }
  if (h5_obj_kind(o) != H5_KIND_DATASET) {
    h5sql_error(ctx, UTIL_EINVAL, who, "'%s' is not a dataset", path);
    return;
  }
  if ((hrc = h5_dset_info_get(o, &info)) != H5_OK || (hrc = h5_dset_check(o)) != H5_OK) {
    h5sql_error(ctx, hrc, who, "'%s': %s", path, h5_errmsg(f));
    return;
  }
  if (info.rank < 0) { /* a null dataspace: no element to select */
    if (seltext && (err = parse_sel(seltext, 0, NULL, &(sel){0})) != NULL) {
      h5sql_error(ctx, UTIL_EINVAL, who, "selection '%s' on '%s', which has no dataspace: %s", seltext, path,
                  err);
      sqlite3_free(err);
      return;
    }
    sqlite3_result_text(ctx, "null", 4, SQLITE_STATIC);
    sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
    return;
  }
  sel s;
  if (seltext) {
    err = parse_sel(seltext, info.rank, info.dims, &s);
    if (err) {
      h5sql_error(ctx, UTIL_EINVAL, who, "selection '%s': %s", seltext, err);
      sqlite3_free(err);
      return;
    }
  } else {
    parse_sel("", info.rank, info.dims, &s);
  }
  uint64_t n = 1, odims[H5_MAX_RANK];
  int orank = 0;
  for (int k = 0; k < info.rank; k++) {
    n = s.count[k] && n > UINT64_MAX / s.count[k] ? UINT64_MAX : n * s.count[k];
    if (s.keep[k]) odims[orank++] = s.count[k];
  }
  sqlite3_int64 limit = sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
  uint64_t esz = info.type->size;
  /* every value takes a byte of JSON at least, and its buffer esz bytes */
  if (n > (uint64_t)limit || (esz && n > ((uint64_t)1 << 32) / esz)) {
    h5sql_error(ctx, UTIL_EINVAL, who,
                "'%s': %llu values are too many for one JSON text; select a part, "
                "e.g. '0:1000'",
                path, (unsigned long long)n);
    return;
  }
  uint8_t *buf = malloc(n && esz ? (size_t)(n * esz) : 1);
  if (!buf) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  hrc = info.rank == 0 ? h5_dset_read(o, buf, (size_t)esz)
                       : h5_dset_read_slab(o, s.start, s.count, s.stride, buf, (size_t)(n * esz));
  if (hrc != H5_OK) {
    h5sql_error(ctx, hrc, who, "'%s': %s", path, h5_errmsg(f));
  } else {
    strbuf out = {0};
    out.limit = (size_t)limit;
    hrc = h5_json_values(f, info.type, buf, orank, odims, &out);
    if (hrc != H5_OK && !strbuf_failed(&out)) {
      strbuf_free(&out);
      h5sql_error(ctx, hrc, who, "'%s': %s", path, h5_errmsg(f));
    } else {
      h5sql_result_json(ctx, &out);
    }
  }
  free(buf);
}

int ext_h5_register(sqlite3 *db) {
  if (!h5sql_directonly_ok()) return SQLITE_OK; /* see h5sql.h */
  fcache *fc = sqlite3_malloc(sizeof *fc);
  if (!fc) return SQLITE_NOMEM;
  memset(fc, 0, sizeof *fc);
  fc->refs = 2; /* the 2- and 3-argument forms share it */
  int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_RESULT_SUBTYPE;
  /* on failure SQLite calls the destructor itself */
  int rc = sqlite3_create_function_v2(db, "h5_read_json", 3, flags, fc, fn_read_json, NULL,
                                      NULL, fcache_unref);
  if (rc != SQLITE_OK) {
    fcache_unref(fc); /* the 2-argument form's reference */
    return rc;
  }
  rc = sqlite3_create_function_v2(db, "h5_read_json", 2, flags, fc, fn_read_json, NULL, NULL,
                                  fcache_unref);
  if (rc == SQLITE_OK) rc = sqlite3_create_module_v2(db, "h5_ls", &ls_module, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_module_v2(db, "h5_attrs", &ls_module, (void *)1, NULL);
  return rc;
}
