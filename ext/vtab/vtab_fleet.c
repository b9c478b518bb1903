/*
** ext/vtab/vtab_fleet.c - a fleet: many h5mem stores as one read-only table
** (docs/SQL.md, "Fleets"):
**
**   CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/agent-*.h5' [, max_open=64]);
**   SELECT store, id, text FROM fleet WHERE ts > 1700000000;
**   SELECT store, id, distance FROM vec_search('fleet', :q, 10);
**
** paths= is a glob(3) pattern or a JSON array of paths.  The pattern is
** matched again when a statement starts (a store added to the folder is
** in the next statement) unless its folder has not changed since.  Each
** row has the h5mem table's first twelve columns and `store`, its file's
** path.  A search over a fleet (vec_search, bm25, hybrid, the KNN form)
** runs on each store and merges the results as one store holding every
** record would rank them (search_set, vtab_int.h; BM25 with the statistics
** of all the stores).
**
** Stores are opened when a statement needs them, read-only (they see what
** the stores' writers committed, their logs included), and kept open up to
** max_open of them: the least recently used idle one is closed when
** another must open, so a fleet of thousands holds at most max_open file
** descriptors and mappings between statements.  A statement pins the
** stores whose rows it is returning (a scan, one at a time); a pinned store
** is never closed or refreshed under it.
*/
#include "config.h"

#define H5MEM_VT_PRIVATE /* the registry (vtab_int.h) */

#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../ext_err.h"
#include "util/json.h"
#include "vtab_int.h"

#define WHO "h5mem"
#define MAX_OPEN_DEFAULT 64

/* One store of a fleet, referenced by the fleet's listing and by each
** statement's set that holds it; open (st) while pinned or in the LRU. */
struct fleet_ent {
  fleet *fl;
  char *path;
  store *st;
  int refs, pins;
  fleet_ent *prev, *next; /* the LRU of open, unpinned stores: head the oldest */
};

struct fleet {
  h5mem_txvt tx; /* tx.fleet = 1, no store of its own (tx.ms NULL) */
  sqlite3 *db;
  registry *reg;
  fleet *next;
  char *schema, *name;
  char *pattern;   /* paths= as a pattern, or NULL: */
  char **list;     /* as a list (nlist paths) */
  int nlist;
  char *dir;       /* the pattern's folder when it has no wildcard (listed again when it changes) */
  struct timespec dir_mtime, dir_ctime;
  int listed;
  fleet_ent **ent; /* the listing, by path */
  int n;
  int max_open, nopen;
  fleet_ent *lru_head, *lru_tail;
};

/* ---- the stores ---------------------------------------------------------- */

static void lru_remove(fleet *fl, fleet_ent *e) {
  if (e->prev) e->prev->next = e->next;
  else fl->lru_head = e->next;
  if (e->next) e->next->prev = e->prev;
  else fl->lru_tail = e->prev;
  e->prev = e->next = NULL;
}

static void lru_append(fleet *fl, fleet_ent *e) {
  e->prev = fl->lru_tail;
  e->next = NULL;
  if (fl->lru_tail) fl->lru_tail->next = e;
  else fl->lru_head = e;
  fl->lru_tail = e;
}

/* e's store closed (taken out of the LRU when idle there). */
static void ent_close(fleet_ent *e) {
  if (!e->pins) lru_remove(e->fl, e);
  store_close(e->st);
  e->st = NULL;
  e->fl->nopen--;
}

/* Close the oldest idle stores while more than max are open. */
static void evict(fleet *fl, int max) {
  while (fl->nopen > max && fl->lru_head) ent_close(fl->lru_head);
}

static void ent_unref(fleet_ent *e) {
  if (--e->refs > 0) return;
  if (e->st) ent_close(e);
  sqlite3_free(e->path);
  sqlite3_free(e);
}

/* e open and pinned: opened (after closing the oldest idle store when
** max_open are open), or taken from the LRU and refreshed (the first pin:
** no reader holds positions in it). */
static int ent_pin(fleet_ent *e, char **pzErr) {
  fleet *fl = e->fl;
  if (!e->st) {
    evict(fl, fl->max_open - 1);
    store_opts o;
    memset(&o, 0, sizeof o);
    o.no_create = 1;
    char err[600];
    int sr = store_open(e->path, &o, 1, &e->st, err, sizeof err);
    if (sr != STORE_OK) {
      e->st = NULL;
      if (sr == STORE_ENOMEM) return SQLITE_NOMEM;
      *pzErr = sqlite3_mprintf("%s", err);
      return ext_err_rc(sr) == SQLITE_CONSTRAINT ? SQLITE_ERROR : ext_err_rc(sr);
    }
    fl->nopen++;
  } else if (!e->pins) {
    lru_remove(fl, e);
    int sr = store_refresh(e->st);
    if (sr != STORE_OK) {
      lru_append(fl, e);
      return h5mem_store_err(e->st, sr, pzErr);
    }
  }
  e->pins++;
  return SQLITE_OK;
}

static void ent_unpin(fleet_ent *e) {
  if (--e->pins > 0) return;
  lru_append(e->fl, e);
  evict(e->fl, e->fl->max_open);
}

static int by_path(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the pattern's folder, as sb shows it, is as it was at the last
** listing. */
static int dir_same(const fleet *fl, const struct stat *sb) {
  return sb->st_mtim.tv_sec == fl->dir_mtime.tv_sec && sb->st_mtim.tv_nsec == fl->dir_mtime.tv_nsec &&
         sb->st_ctim.tv_sec == fl->dir_ctime.tv_sec && sb->st_ctim.tv_nsec == fl->dir_ctime.tv_nsec;
}

/* The listing brought up to date: the paths the pattern matches now (or the
** list), sorted, each store that stays keeping its entry (and open handle). */
static int fleet_list(fleet *fl, char **pzErr) {
  if (fl->listed && !fl->pattern) return SQLITE_OK;
  struct stat sb; /* (taken before the listing: a change during it lists again) */
  int have_dir = fl->dir && stat(fl->dir, &sb) == 0;
  if (fl->listed && have_dir && dir_same(fl, &sb)) return SQLITE_OK;
  glob_t g;
  memset(&g, 0, sizeof g);
  char **paths = fl->list;
  size_t np = (size_t)fl->nlist;
  if (fl->pattern) {
    int gr = glob(fl->pattern, 0, NULL, &g); /* (a folder that is missing matches nothing) */
    if (gr == GLOB_NOSPACE) return SQLITE_NOMEM;
    if (gr != 0 && gr != GLOB_NOMATCH) {
      globfree(&g);
      *pzErr = sqlite3_mprintf("paths: '%s': cannot read the folder (%s)", fl->pattern, strerror(errno));
      return SQLITE_ERROR;
    }
    paths = g.gl_pathv;
    np = gr == GLOB_NOMATCH ? 0 : g.gl_pathc;
    if (np) qsort(paths, np, sizeof *paths, by_path); /* (bytes, whatever the locale) */
  }
  fleet_ent **ne = sqlite3_malloc64(np * sizeof *ne + 1);
  int rc = ne ? SQLITE_OK : SQLITE_NOMEM, m = 0, j = 0;
  for (size_t i = 0; i < np && rc == SQLITE_OK; i++) {
    if (m && !strcmp(ne[m - 1]->path, paths[i])) continue; /* (a list naming one path twice) */
    while (j < fl->n && strcmp(fl->ent[j]->path, paths[i]) < 0) j++;
    if (j < fl->n && !strcmp(fl->ent[j]->path, paths[i])) {
      ne[m] = fl->ent[j];
      ne[m++]->refs++;
      continue;
    }
    fleet_ent *e = sqlite3_malloc(sizeof *e);
    if (e) memset(e, 0, sizeof *e);
    if (e && !(e->path = sqlite3_mprintf("%s", paths[i]))) {
      sqlite3_free(e);
      e = NULL;
    }
    if (!e) {
      rc = SQLITE_NOMEM;
      break;
    }
    e->fl = fl;
    e->refs = 1;
    ne[m++] = e;
  }
  if (fl->pattern) globfree(&g);
  if (rc != SQLITE_OK) {
    for (int i = 0; i < m; i++) ent_unref(ne[i]);
    sqlite3_free(ne);
    return rc;
  }
  for (int i = 0; i < fl->n; i++) ent_unref(fl->ent[i]);
  sqlite3_free(fl->ent);
  fl->ent = ne;
  fl->n = m;
  fl->listed = 1;
  if (have_dir) {
    fl->dir_mtime = sb.st_mtim;
    fl->dir_ctime = sb.st_ctim;
  }
  return SQLITE_OK;
}

/* ---- the sets of the searches ------------------------------------------- */

void search_set_table(search_set *ss, store *st) {
  memset(ss, 0, sizeof *ss);
  ss->n = 1;
  ss->one = st;
  ss->st = &ss->one;
}

int search_set_fleet(search_set *ss, fleet *fl, const char *only, char **pzErr) {
  memset(ss, 0, sizeof *ss);
  int rc = fleet_list(fl, pzErr);
  if (rc != SQLITE_OK) return rc;
  int lo = 0, hi = fl->n;
  if (only) { /* (the listing is sorted: the one path, or none) */
    for (lo = 0; lo < fl->n && strcmp(fl->ent[lo]->path, only); lo++) {
    }
    hi = lo < fl->n ? lo + 1 : lo;
  }
  int n = hi - lo;
  ss->ent = sqlite3_malloc64((uint64_t)n * sizeof *ss->ent + 1);
  ss->st = sqlite3_malloc64((uint64_t)n * sizeof *ss->st + 1);
  if (!ss->ent || !ss->st) {
    sqlite3_free(ss->ent);
    sqlite3_free(ss->st);
    memset(ss, 0, sizeof *ss);
    return SQLITE_NOMEM;
  }
  for (int i = 0; i < n; i++) {
    ss->ent[i] = fl->ent[lo + i];
    ss->ent[i]->refs++;
    ss->st[i] = NULL;
  }
  ss->n = n;
  ss->fl = fl;
  ss->vec = 1;
  return SQLITE_OK;
}

static const char *metric_name(int m) { return m == STORE_L2 ? "l2" : m == STORE_DOT ? "dot" : "cosine"; }

int search_set_store(search_set *ss, int i, store **out, char **pzErr) {
  *out = NULL;
  if (!ss->fl) {
    *out = ss->one;
    return SQLITE_OK;
  }
  if (i < 0 || i >= ss->n) return SQLITE_INTERNAL;
  if (!ss->st[i]) {
    int rc = ent_pin(ss->ent[i], pzErr);
    if (rc != SQLITE_OK) return rc;
    store *st = ss->ent[i]->st;
    if (ss->vec && ss->dim && (store_dim(st) != ss->dim || store_metric(st) != ss->metric)) {
      *pzErr = sqlite3_mprintf("dim=%d metric=%s, another store of the fleet has dim=%d metric=%s: a "
                               "fleet's stores are searched together only when they share both",
                               store_dim(st), metric_name(store_metric(st)), ss->dim, metric_name(ss->metric));
      ent_unpin(ss->ent[i]);
      return SQLITE_ERROR;
    }
    if (!ss->dim) {
      ss->dim = store_dim(st);
      ss->metric = store_metric(st);
    }
    ss->st[i] = st;
  }
  *out = ss->st[i];
  return SQLITE_OK;
}

void search_set_let(search_set *ss, int i) {
  if (!ss->fl || i < 0 || i >= ss->n || !ss->st[i]) return;
  ss->st[i] = NULL;
  ent_unpin(ss->ent[i]);
}

const char *search_set_path(const search_set *ss, int i) {
  if (!ss->fl) return store_path(ss->one);
  return i >= 0 && i < ss->n ? ss->ent[i]->path : NULL;
}

void search_set_free(search_set *ss) {
  if (ss->fl) {
    for (int i = 0; i < ss->n; i++) {
      search_set_let(ss, i);
      ent_unref(ss->ent[i]);
    }
    sqlite3_free(ss->ent);
    sqlite3_free(ss->st);
  }
  memset(ss, 0, sizeof *ss);
}

/* ---- the table ------------------------------------------------------------ */

/* the columns: the h5mem table's first twelve, then these */
enum { FC_STORE = H5MEM_VIEW_COLS, FC_DISTANCE, FC_K, FC_N };
enum { FC_ID = 0, FC_EMB = 2 }; /* (as the h5mem table's) */
static const int fleet_field[FC_N] = {KNN_F_ID, -1, -1, KNN_F_SOURCE, KNN_F_SESSION, -1, KNN_F_TS,
                                      KNN_F_TIER, -1, -1, -1, -1, -1, -1, -1};

static int fl_err(fleet *fl, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fl_err(fleet *fl, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc = ext_vtab_verr(&fl->tx.base, rc, WHO, fmt, ap);
  va_end(ap);
  return rc;
}

static int fl_msg(fleet *fl, int rc, char **msg) { return ext_vtab_msg(&fl->tx.base, rc, WHO, msg); }

int h5mem_fleet_args(int argc, const char *const *argv) {
  for (int i = 3; i < argc; i++) {
    const char *key;
    size_t klen;
    char *value = NULL;
    int rc = ext_vtab_arg(argv[i], &key, &klen, &value);
    sqlite3_free(value);
    if (rc == SQLITE_OK && ext_key_is(key, klen, "paths")) return 1;
  }
  return 0;
}

/* paths= as a JSON array of strings into fl->list. */
static int parse_list(fleet *fl, const char *v, char **pzErr) {
  size_t n = strlen(v);
  util_json_iter it;
  if (util_json_iter_init(&it, v, 0, n)) {
    *pzErr = sqlite3_mprintf("%s: paths: not a JSON array of paths", WHO);
    return SQLITE_ERROR;
  }
  while (util_json_next(&it)) {
    char *p = util_json_type(v, it.v0, n) == UTIL_JSON_TEXT ? util_json_cstr(v, it.v0, n, NULL) : NULL;
    if (!p || !*p) {
      int nomem = util_json_type(v, it.v0, n) == UTIL_JSON_TEXT && !p;
      free(p);
      if (nomem) return SQLITE_NOMEM;
      *pzErr = sqlite3_mprintf("%s: paths: expected a JSON array of paths (strings)", WHO);
      return SQLITE_ERROR;
    }
    char **g = sqlite3_realloc64(fl->list, (uint64_t)(fl->nlist + 1) * sizeof *g);
    if (!g) {
      free(p);
      return SQLITE_NOMEM;
    }
    fl->list = g;
    fl->list[fl->nlist] = sqlite3_mprintf("%s", p);
    free(p);
    if (!fl->list[fl->nlist++]) return SQLITE_NOMEM;
  }
  if (fl->nlist) qsort(fl->list, (size_t)fl->nlist, sizeof *fl->list, by_path);
  return SQLITE_OK;
}

/* paths= as a pattern: kept, with its folder when no wildcard is in it. */
static int parse_pattern(fleet *fl, const char *v) {
  if (!(fl->pattern = sqlite3_mprintf("%s", v))) return SQLITE_NOMEM;
  const char *slash = strrchr(v, '/');
  int n = slash ? (int)(slash - v) : 0;
  if (strcspn(v, "*?[\\") < (size_t)n) return SQLITE_OK; /* a wildcard in the folder: listed every time */
  fl->dir = slash ? (n ? sqlite3_mprintf("%.*s", n, v) : sqlite3_mprintf("/")) : sqlite3_mprintf(".");
  return fl->dir ? SQLITE_OK : SQLITE_NOMEM;
}

static int fleet_opts(fleet *fl, int argc, const char *const *argv, char **pzErr) {
  int rc = SQLITE_OK, have_paths = 0, have_max = 0;
  for (int i = 3; i < argc && rc == SQLITE_OK; i++) {
    const char *key;
    size_t klen;
    char *v = NULL;
    if ((rc = ext_vtab_arg(argv[i], &key, &klen, &v)) != SQLITE_OK) break;
    if (ext_key_is(key, klen, "paths") && !have_paths) {
      have_paths = 1;
      const char *p = v;
      while (*p == ' ' || *p == '\t' || *p == '\n') p++;
      if (!*p) {
        *pzErr = sqlite3_mprintf("%s: paths: give a pattern ('agents/agent-*.h5') or a JSON array of paths", WHO);
        rc = SQLITE_ERROR;
      } else {
        rc = *p == '[' ? parse_list(fl, p, pzErr) : parse_pattern(fl, v);
      }
    } else if (ext_key_is(key, klen, "max_open") && !have_max) {
      have_max = 1;
      char *end;
      errno = 0;
      long m = strtol(v, &end, 10);
      if (end == v || *end || errno || m < 1 || m > 65536) {
        *pzErr = sqlite3_mprintf("%s: max_open: expected an integer 1 .. 65536, got '%s'", WHO, v);
        rc = SQLITE_ERROR;
      }
      fl->max_open = (int)m;
    } else {
      *pzErr = sqlite3_mprintf("%s: a fleet (paths=) takes paths and max_open%s, got '%s' (a fleet reads "
                               "the stores as they are: create and write each through its own table)",
                               WHO, klen ? ", each once" : "", argv[i]);
      rc = SQLITE_ERROR;
    }
    sqlite3_free(v);
  }
  return rc;
}

static int fleet_readonly(sqlite3_vtab *base) {
  return fl_err((fleet *)base, SQLITE_READONLY, "%s: a fleet is read-only (write through each store's own table)",
                ((fleet *)base)->name);
}

static int fleet_disconnect(sqlite3_vtab *base) {
  fleet *fl = (fleet *)base;
  if (fl->reg) {
    for (fleet **p = &fl->reg->fleets; *p; p = &(*p)->next)
      if (*p == fl) {
        *p = fl->next;
        break;
      }
  }
  for (int i = 0; i < fl->n; i++) ent_unref(fl->ent[i]);
  sqlite3_free(fl->ent);
  for (int i = 0; i < fl->nlist; i++) sqlite3_free(fl->list[i]);
  sqlite3_free(fl->list);
  sqlite3_free(fl->pattern);
  sqlite3_free(fl->dir);
  sqlite3_free(fl->schema);
  sqlite3_free(fl->name);
  sqlite3_free(fl);
  return SQLITE_OK;
}

int h5mem_fleet_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
                        char **pzErr) {
  *out = NULL;
  fleet *fl = sqlite3_malloc(sizeof *fl);
  if (!fl) return SQLITE_NOMEM;
  memset(fl, 0, sizeof *fl);
  fl->tx.fleet = 1;
  fl->tx.missing = fleet_readonly; /* (xBegin: only a write begins a transaction) */
  fl->db = db;
  fl->max_open = MAX_OPEN_DEFAULT;
  fl->schema = sqlite3_mprintf("%s", argv[1]);
  fl->name = sqlite3_mprintf("%s", argv[2]);
  int rc = fl->schema && fl->name ? fleet_opts(fl, argc, argv, pzErr) : SQLITE_NOMEM;
  if (rc == SQLITE_OK)
    rc = sqlite3_declare_vtab(db, "CREATE TABLE x(id INTEGER, text TEXT, embedding BLOB, source TEXT, "
                                  "session TEXT, tags TEXT, ts INTEGER, tier TEXT, importance REAL, "
                                  "access_count INTEGER, last_access INTEGER, meta TEXT, store TEXT, "
                                  "distance HIDDEN, k HIDDEN)");
  if (rc != SQLITE_OK) {
    fleet_disconnect(&fl->tx.base);
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY); /* (it reads files: never from a trigger or view) */
  fl->reg = aux;
  fl->next = fl->reg->fleets;
  fl->reg->fleets = fl;
  *out = &fl->tx.base;
  return SQLITE_OK;
}

fleet *h5mem_fleet_find(registry *reg, const char *name) {
  const char *dot = strchr(name, '.');
  for (fleet *fl = reg->fleets; fl; fl = fl->next) {
    if (dot) {
      if (strlen(fl->schema) == (size_t)(dot - name) && !sqlite3_strnicmp(fl->schema, name, (int)(dot - name)) &&
          !sqlite3_stricmp(fl->name, dot + 1))
        return fl;
    } else if (!sqlite3_stricmp(fl->name, name)) {
      return fl;
    }
  }
  return NULL;
}

/* ---- reading -------------------------------------------------------------- */

typedef struct fcur {
  sqlite3_vtab_cursor base;
  search_set ss;
  int have_ss;
  int i;            /* the store being read (pinned), or ss.n: done */
  uint64_t pos, end;
  int by_id;        /* id = ?: one position per store */
  int64_t id;
  srow *res;        /* a KNN query's rows (by_knn), their stores pinned */
  uint64_t nres, ires;
  int knn;
  store_view v;
  int have_v;
} fcur;

/* idxNum 1: a scan; idxStr: 'S' (store = ?), 'I' (id = ?), one per
** argument.  idxNum 2: the KNN form, as the h5mem table's: 'Q' (the
** query), 'K' (k), 'L' (LIMIT), 'S' (store = ?), then search_knn_plan's
** filter tokens. */
static int fleet_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  (void)base;
  int match = -1, keq = -1, lim = -1, sto = -1, idc = -1;
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    if (c->op == SQLITE_INDEX_CONSTRAINT_MATCH && c->iColumn == FC_EMB && match < 0) {
      if (!c->usable) return SQLITE_CONSTRAINT;
      match = k;
    } else if (!c->usable) {
      continue;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == FC_K) {
      keq = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT) {
      lim = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == FC_STORE && sto < 0) {
      const char *coll = sqlite3_vtab_collation(info, k);
      if (!coll || !sqlite3_stricmp(coll, "BINARY")) sto = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == FC_ID && idc < 0) {
      idc = k;
    }
  }
  char *plan = sqlite3_malloc(256);
  if (!plan) return SQLITE_NOMEM;
  int argi = 0, used = 0;
  size_t n = 0;
  if (match >= 0) {
    plan[n++] = 'Q';
    info->aConstraintUsage[match].argvIndex = ++argi;
    info->aConstraintUsage[match].omit = 1;
    if (keq >= 0) {
      plan[n++] = 'K';
      info->aConstraintUsage[keq].argvIndex = ++argi;
      info->aConstraintUsage[keq].omit = 1;
    }
  }
  if (sto >= 0) {
    plan[n++] = 'S';
    info->aConstraintUsage[sto].argvIndex = ++argi;
    info->aConstraintUsage[sto].omit = 1;
  }
  if (match < 0 && idc >= 0) {
    plan[n++] = 'I';
    info->aConstraintUsage[idc].argvIndex = ++argi;
    info->aConstraintUsage[idc].omit = 1;
  }
  plan[n] = 0;
  if (match >= 0) {
    search_knn_plan(info, fleet_field, FC_N, plan, 200, &argi, &used);
    int other = 0; /* LIMIT N is k only when nothing is left for SQLite to filter */
    for (int k = 0; k < info->nConstraint; k++)
      if (info->aConstraint[k].op != SQLITE_INDEX_CONSTRAINT_LIMIT && !info->aConstraintUsage[k].argvIndex)
        other = 1;
    int by_distance = info->nOrderBy == 1 && info->aOrderBy[0].iColumn == FC_DISTANCE && !info->aOrderBy[0].desc;
    if (keq < 0 && lim >= 0 && !other && (info->nOrderBy == 0 || by_distance)) {
      n = strlen(plan);
      plan[n++] = 'L';
      plan[n] = 0;
      info->aConstraintUsage[lim].argvIndex = ++argi;
    }
    if (by_distance) info->orderByConsumed = 1;
  }
  info->idxNum = match >= 0 ? 2 : 1;
  info->idxStr = plan;
  info->needToFreeIdxStr = 1;
  info->estimatedCost = match >= 0 ? 1e4 : sto >= 0 && idc >= 0 ? 10 : sto >= 0 ? 1e4 : idc >= 0 ? 1e3 : 1e7;
  info->estimatedRows = match >= 0 ? 10 : idc >= 0 ? (sto >= 0 ? 1 : 10) : sto >= 0 ? 1000 : 100000;
  if (sto >= 0 && idc >= 0 && match < 0) info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
  return SQLITE_OK;
}

static int fleet_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  (void)base;
  fcur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static void fcur_reset(fcur *c) {
  if (c->have_ss) search_set_free(&c->ss);
  c->have_ss = 0;
  sqlite3_free(c->res);
  c->res = NULL;
  c->nres = c->ires = 0;
  c->knn = c->by_id = 0;
  c->have_v = 0;
}

static int fleet_close(sqlite3_vtab_cursor *cur) {
  fcur_reset((fcur *)cur);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The scan at the first live record of store i or after (the store before
** let go, this one pinned). */
static int scan_store(fcur *c, int i) {
  fleet *fl = (fleet *)c->base.pVtab;
  if (c->i < c->ss.n) search_set_let(&c->ss, c->i);
  for (c->i = i; c->i < c->ss.n; c->i++) {
    store *st;
    char *err = NULL;
    int rc = search_set_pin(&c->ss, c->i, &st, &err);
    if (rc != SQLITE_OK) return fl_msg(fl, rc, &err);
    if (c->by_id) {
      uint64_t pos;
      if (store_find(st, c->id, &pos) == STORE_OK) {
        c->pos = pos;
        c->end = pos + 1;
        return SQLITE_OK;
      }
    } else {
      c->end = store_npos(st);
      for (c->pos = 0; c->pos < c->end && !store_pos_live(st, c->pos); c->pos++) {
      }
      if (c->pos < c->end) return SQLITE_OK;
    }
    search_set_let(&c->ss, c->i);
  }
  return SQLITE_OK;
}

static int fleet_knn(fcur *c, fleet *fl, const char *idxStr, int argc, sqlite3_value **argv) {
  search_args sa;
  memset(&sa, 0, sizeof sa);
  search_touch tch;
  memset(&tch, 0, sizeof tch);
  sa.touch = &tch;
  sa.k = -1;
  knn_filter f;
  memset(&f, 0, sizeof f);
  sqlite3_value *kv = NULL, *lv = NULL;
  const char *only = NULL;
  int a = 0, rc = SQLITE_OK;
  for (const char *p = idxStr; *p && a < argc && rc == SQLITE_OK; a++) {
    switch (*p) {
    case 'Q': sa.query = argv[a]; p++; break;
    case 'K': kv = argv[a]; p++; break;
    case 'L': lv = argv[a]; p++; break;
    case 'S': only = (const char *)sqlite3_value_text(argv[a]); f.empty |= !only; p++; break;
    default:
      if (!p[1]) break;
      rc = search_knn_filter_add(&f, p[0] - '0', p[1] - '0', argv[a]);
      p += 2;
    }
  }
  sqlite3_value *n = kv ? kv : lv;
  if (rc == SQLITE_OK && (!n || sqlite3_value_numeric_type(n) != SQLITE_INTEGER || sqlite3_value_int64(n) < 0))
    rc = fl_err(fl, SQLITE_ERROR, "a KNN query on a fleet needs k = N or LIMIT N (an integer >= 0)");
  char *err = NULL;
  if (rc == SQLITE_OK) {
    sa.k = sqlite3_value_int64(n);
    rc = search_set_fleet(&c->ss, fl, only, &err);
    c->have_ss = rc == SQLITE_OK;
    if (rc == SQLITE_OK && !f.empty) rc = search_vec_run(&c->ss, &sa, &f, &c->res, &c->nres, &err);
    if (rc != SQLITE_OK) rc = fl_msg(fl, rc, &err);
  }
  search_knn_filter_free(&f);
  if (rc == SQLITE_OK) rc = search_set_keep(&c->ss, c->res, c->nres);
  if (rc != SQLITE_OK) return rc;
  c->knn = 1;
  return SQLITE_OK;
}

static int fleet_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc, sqlite3_value **argv) {
  fcur *c = (fcur *)cur;
  fleet *fl = (fleet *)cur->pVtab;
  fcur_reset(c);
  if (!idxStr) idxStr = "";
  if (idxNum == 2) return fleet_knn(c, fl, idxStr, argc, argv);
  const char *only = NULL;
  int none = 0;
  for (int a = 0; idxStr[a] && a < argc; a++) {
    if (idxStr[a] == 'S') {
      only = (const char *)sqlite3_value_text(argv[a]);
      none |= !only;
    } else if (idxStr[a] == 'I') {
      if (sqlite3_value_numeric_type(argv[a]) != SQLITE_INTEGER) none = 1; /* (no id is not an integer) */
      c->by_id = 1;
      c->id = sqlite3_value_int64(argv[a]);
    }
  }
  char *err = NULL;
  int rc = search_set_fleet(&c->ss, fl, only, &err);
  if (rc != SQLITE_OK) return fl_msg(fl, rc, &err);
  c->have_ss = 1;
  c->ss.vec = 0; /* (a scan reads stores of any dim) */
  c->i = c->ss.n;
  return none ? SQLITE_OK : scan_store(c, 0);
}

static int fleet_eof(sqlite3_vtab_cursor *cur) {
  fcur *c = (fcur *)cur;
  return c->knn ? c->ires >= c->nres : !c->have_ss || c->i >= c->ss.n;
}

static int fleet_next(sqlite3_vtab_cursor *cur) {
  fcur *c = (fcur *)cur;
  c->have_v = 0;
  if (c->knn) {
    c->ires++;
    return SQLITE_OK;
  }
  store *st = c->ss.st[c->i];
  for (c->pos++; c->pos < c->end && !store_pos_live(st, c->pos); c->pos++) {
  }
  return c->pos < c->end ? SQLITE_OK : scan_store(c, c->i + 1);
}

/* The row's store and position. */
static store *row_at(fcur *c, int *i, uint64_t *pos) {
  if (c->knn) {
    *i = SEARCH_SIDX(c->res[c->ires].pos);
    *pos = SEARCH_LPOS(c->res[c->ires].pos);
  } else {
    *i = c->i;
    *pos = c->pos;
  }
  return c->ss.st[*i];
}

static int fleet_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  int i;
  uint64_t pos;
  row_at((fcur *)cur, &i, &pos);
  *rowid = (sqlite3_int64)SEARCH_GPOS(i, pos);
  return SQLITE_OK;
}

static int fleet_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  fcur *c = (fcur *)cur;
  int i;
  uint64_t pos;
  store *st = row_at(c, &i, &pos);
  if (col == FC_STORE) {
    sqlite3_result_text(ctx, search_set_path(&c->ss, i), -1, SQLITE_TRANSIENT);
    return SQLITE_OK;
  }
  if (col == FC_DISTANCE) {
    if (c->knn) sqlite3_result_double(ctx, c->res[c->ires].v[0]);
    else sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (col >= H5MEM_VIEW_COLS) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (!c->have_v) memset(&c->v, 0, sizeof c->v);
  c->have_v = 1;
  int src = st ? store_get(st, pos, h5mem_view_part(col), &c->v) : STORE_EINVAL; /* (what v has is not read again) */
  if (src != STORE_OK) {
    char *m = sqlite3_mprintf("%s: %s: %s", WHO, search_set_path(&c->ss, i), st ? store_errmsg(st) : "not open");
    ext_result_err(ctx, src, m);
    sqlite3_free(m);
    return ext_err_rc(src);
  }
  return h5mem_view_result(ctx, st, &c->v, col);
}

static int fleet_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  (void)argc;
  (void)argv;
  (void)rowid;
  return fleet_readonly(base);
}

static int fleet_rename(sqlite3_vtab *base, const char *name) {
  fleet *fl = (fleet *)base;
  char *n = sqlite3_mprintf("%s", name);
  if (!n) return SQLITE_NOMEM;
  sqlite3_free(fl->name);
  fl->name = n;
  return SQLITE_OK;
}

const sqlite3_module h5mem_fleet_module = {
    .xBestIndex = fleet_best_index,
    .xDisconnect = fleet_disconnect,
    .xDestroy = fleet_disconnect, /* (the stores' files are left alone) */
    .xOpen = fleet_open,
    .xClose = fleet_close,
    .xFilter = fleet_filter,
    .xNext = fleet_next,
    .xEof = fleet_eof,
    .xColumn = fleet_column,
    .xRowid = fleet_rowid,
    .xUpdate = fleet_update,
    .xRename = fleet_rename,
};
