/*
** ext/vtab/vtab_h5mem.c - the h5mem virtual table: an agent's memories,
** stored in one HDF5 file (lib/store).
**
**   CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=384
**       [, metric=cosine|l2|dot] [, storage=float16|float32]
**       [, index=flat|hnsw|ivf] [, M=16] [, ef_construction=128] [, ef_search=64]
**       [, quantize=int8|none] [, nlist=0] [, nprobe=16] [, pq_m=0]
**       [, tokenize='unicode61 remove_diacritics 1']
**       [, sync=full|normal|off] [, writer=on] [, agent='...'] [, embedder='...']
**       [, embedder_model='...'] [, embedder_key_env='...'] [, embedder_timeout=30]
**       [, embedder_retries=3] [, embedder_batch=64]
**       [, chunk=1024] [, autocheckpoint=67108864]
**       [, the lifecycle options: working_capacity=1000, promote_after=3, ...]);
**   (path: also file=, or a first bare argument; storage also f16|f32.
**   These are every option parse_opts knows, opt_names, and the lifecycle
**   options of life_policy.c; docs/SQL.md has each one's range and default.)
**
** Columns: id (the rowid), text, embedding (float32 BLOB out; a float32
** BLOB or a JSON array in), source, session, tags, ts (unix seconds;
** ISO-8601 text accepted), tier, importance, access_count, last_access,
** meta (JSON), and a hidden column named like the table for commands:
** INSERT INTO mem(mem) VALUES('checkpoint') / ('optimize') (named h5mem
** when the table's name is a column's: cmd_column);
** INSERT INTO mem(mem, meta) VALUES('consolidate', '{options}') runs one
** consolidation cycle in the transaction (mem_consolidate.c).
** SELECT h5mem_checkpoint('mem') checkpoints too.
**
** Transactions map onto the store's: xBegin starts one (taking the store's
** writer lock: SQLITE_BUSY when another connection or process has it),
** xSync writes it to the log, xCommit makes it final, xRollback and
** savepoints undo.  DROP TABLE leaves the files alone.
**
** The table, h5mem_checkpoint and h5mem_index touch the store's files, so
** they are SQLITE_VTAB_DIRECTONLY / SQLITE_DIRECTONLY: never used from a
** trigger or view a database file brings along.  Only xCreate makes a
** store; xConnect (a database file being opened) only opens one, and a
** missing store leaves the table connected but unusable, so that DROP
** TABLE works (docs/SQL.md, "Trust").
**
** The registry of a connection's h5mem tables, the store handle and
** transaction the table shares with its companions, and finding a table
** by name are vtab_h5mem_shared.c's (vtab_int.h).
*/
#include "config.h"

#define H5MEM_VT_PRIVATE /* the h5mem table's structs (vtab_int.h) */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "../ext_err.h"
#include "../h5sql.h"
#include "embed/embed.h"
#include "embed/embedder.h"
#include "k.h"
#include "text/hashembed.h"
#include "store/store.h"
#include "util/json.h"
#include "util/timefmt.h"
#include "util/vecjson.h"
#include "util/strbuf.h"
#include "vtab_int.h"

#define WHO "h5mem"
/* a fleet (paths=): the module passes its calls to vtab_fleet.c */
#define FLEET(vt) (((const h5mem_txvt *)(vt))->fleet)

enum {
  COL_ID, COL_TEXT, COL_EMB, COL_SOURCE, COL_SESSION, COL_TAGS, COL_TS, COL_TIER,
  COL_IMPORTANCE, COL_ACCESS_COUNT, COL_LAST_ACCESS, COL_META, COL_CMD, COL_DISTANCE, COL_K,
  NCOLS
};
/* the columns a KNN query can filter on before ranking */
static const int knn_field[NCOLS] = {KNN_F_ID, -1, -1, KNN_F_SOURCE, KNN_F_SESSION, -1, KNN_F_TS,
                                     KNN_F_TIER, -1, -1, -1, -1, -1, -1, -1};

typedef struct memcur {
  sqlite3_vtab_cursor base;
  uint64_t pos, end;
  int one; /* a lookup by id: pos is the row, or end */
  int knn; /* a KNN query: the rows are res[0 .. nres) */
  int vcol; /* its vector column: a declared one (its distances final), or -1: the embedding */
  ann_res *res;
  uint64_t nres, ires;
  double unit; /* search_knn_query's: raw distances times this */
  store_view v;
  int have_v;
  int timeq; /* a time range (plan 3): the rows come from it, in ts order */
  store_time_iter it;
  int tdone;
  char *sess; /* the range's `session = ?` (NULL: none): the iterator's, which walks its rows alone */
  uint8_t *sbits; /* plan 5: the positions a scan visits (conditions on declared columns); NULL: all */
  int64_t ts; /* the row's ts, as the index gave it */
} memcur;

static int vt_err(memvt *vt, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int vt_err(memvt *vt, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc = ext_vtab_verr(&vt->tx.base, rc, WHO, fmt, ap);
  va_end(ap);
  return rc;
}

/* A message (*msg, taken) as the table's error (ext_vtab_msg). */
static int vt_msg(memvt *vt, int rc, char **msg) { return ext_vtab_msg(&vt->tx.base, rc, WHO, msg); }

/* The store's error rc as the table's (h5mem_store_err). */
static int st_err(memvt *vt, int rc) {
  char *msg = NULL;
  return vt_msg(vt, h5mem_store_err(vt->st, rc, &msg), &msg);
}

/* ---- options --------------------------------------------------------- */

typedef struct memopts {
  char *path, *agent, *embedder, *tokenize;
  char *emodel, *ekey;  /* embedder_model, embedder_key_env */
  char *skey;           /* signing_key: the secret key file's path */
  double etimeout;      /* embedder_timeout (0: the default) */
  int eretries, ebatch; /* embedder_retries (-1: the default), embedder_batch (0: the default) */
  store_opts o;
  int have_metric, have_storage, have_index;
  int have_emb_decl;   /* `embedding float[N]` was declared (vec0's form of dim=) */
  store_coldef cols[STORE_COLS_MAX]; /* the declared columns (o.cols) */
  h5mem_policy policy; /* the lifecycle options (life_policy.c) */
} memopts;

/* The options, for the rule that each is given once (bit i: names[i]). */
static const char *const opt_names[] = {
    "path|file", "agent", "embedder", "tokenize", "dim", "chunk", "autocheckpoint", "M",
    "ef_construction", "ef_search", "nlist", "nprobe", "pq_m", "quantize", "index", "metric",
    "storage", "sync", "embedder_model", "embedder_key_env", "embedder_timeout", "embedder_retries",
    "embedder_batch", "writer", "ephemeral", "ttl", "capacity", "signing_key", "provenance", NULL};

/* Whether arg declares a column (sqlite-vec's vec0 syntax: `user_id integer
** partition key`, `+payload blob`, `image float[512] distance_metric=l2`)
** rather than giving an option (`key=value`, a bare path): a '+' first, or
** a name followed by blanks and something other than '='. */
static int is_decl(const char *a) {
  while (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r') a++;
  if (*a == '+') return 1;
  if (!((*a >= 'a' && *a <= 'z') || (*a >= 'A' && *a <= 'Z') || *a == '_')) return 0;
  while ((*a >= 'a' && *a <= 'z') || (*a >= 'A' && *a <= 'Z') || (*a >= '0' && *a <= '9') || *a == '_') a++;
  if (*a != ' ' && *a != '\t' && *a != '\n' && *a != '\r') return 0;
  while (*a == ' ' || *a == '\t' || *a == '\n' || *a == '\r') a++;
  return *a && *a != '=';
}

/* The names a declared column cannot take: the table's hidden columns and
** the rowid's (the fixed columns' the store refuses). */
static int reserved_name(const char *n) {
  static const char *const r[] = {"distance", "k", "rowid", "oid", "_rowid_", "h5mem", NULL};
  for (int i = 0; r[i]; i++)
    if (!sqlite3_stricmp(n, r[i])) return 1;
  return 0;
}

/* A column declaration into m: the embedding's (`embedding float[N]`: dim,
** storage and metric, vec0's default metric l2), the id's (`id integer
** primary key`: what the id is already), or a declared column. */
static int parse_decl(const char *arg, memopts *m, char **pzErr) {
  store_coldef c;
  char err[300];
  const char *a = arg;
  while (*a == ' ' || *a == '\t') a++;
  size_t n = strlen(a);
  char words[3][32] = {"", "", ""};
  sscanf(a, "%31s %31s %31s", words[0], words[1], words[2]);
  if ((!sqlite3_stricmp(words[0], "id") || !sqlite3_stricmp(words[0], "rowid")) &&
      !sqlite3_stricmp(words[1], "integer") && !sqlite3_stricmp(words[2], "primary")) {
    char extra[32] = "";
    sscanf(a, "%*s %*s %*s %31s %31s", words[2], extra);
    if (!sqlite3_stricmp(words[2], "key") && !extra[0]) return SQLITE_OK; /* what the id is */
  }
  if (store_coldef_parse(a, n, &c, err, sizeof err) != STORE_OK) {
    *pzErr = sqlite3_mprintf("%s: %s", WHO, err);
    return SQLITE_ERROR;
  }
  if (!sqlite3_stricmp(c.name, "embedding")) {
    if (c.type != STORE_T_VECTOR || c.role != STORE_R_METADATA ||
        (c.vtype != STORE_VT_F32 && c.vtype != STORE_VT_F16) || c.metric == STORE_L1) {
      *pzErr = sqlite3_mprintf("%s: the embedding column is float[N] or float16[N] with distance_metric l2, "
                               "cosine or dot (or give dim=, storage=, metric=)", WHO);
      return SQLITE_ERROR;
    }
    if (m->have_emb_decl || (m->o.dim && m->o.dim != c.dim)) {
      *pzErr = sqlite3_mprintf("%s: the embedding's dimension is given twice", WHO);
      return SQLITE_ERROR;
    }
    int explicit_metric = strstr(a, "distance_metric") != NULL || strstr(a, "DISTANCE_METRIC") != NULL;
    m->have_emb_decl = 1;
    m->o.dim = c.dim;
    m->o.storage = c.vtype == STORE_VT_F16 ? STORE_F16 : STORE_F32;
    m->have_storage = 1;
    if (explicit_metric || !m->have_metric) m->o.metric = c.metric; /* (l2 unless stated) */
    m->have_metric = 1;
    return SQLITE_OK;
  }
  if (reserved_name(c.name)) {
    *pzErr = sqlite3_mprintf("%s: column %s: the table has a hidden column of that name", WHO, c.name);
    return SQLITE_ERROR;
  }
  if (m->o.ncols >= STORE_COLS_MAX) {
    *pzErr = sqlite3_mprintf("%s: at most %d declared columns", WHO, STORE_COLS_MAX);
    return SQLITE_ERROR;
  }
  m->cols[m->o.ncols++] = c;
  m->o.cols = m->cols;
  return SQLITE_OK;
}

static int parse_opts(int argc, const char *const *argv, memopts *m, char **pzErr) {
  unsigned seen = 0, pseen = 0;
  memset(m, 0, sizeof *m);
  h5mem_policy_default(&m->policy);
  m->o.metric = STORE_COSINE;
  m->o.storage = STORE_F32;
  m->o.sync = STORE_SYNC_FULL;
  m->eretries = -1;
  for (int a = 3; a < argc; a++) {
    const char *arg = argv[a], *k;
    size_t kl;
    char *v;
    if (is_decl(arg)) {
      int drc = parse_decl(arg, m, pzErr);
      if (drc != SQLITE_OK) return drc;
      continue;
    }
    if (ext_vtab_arg(arg, &k, &kl, &v) != SQLITE_OK) return SQLITE_NOMEM;
    if (!kl) {
      if (m->path) {
        sqlite3_free(v);
        *pzErr = sqlite3_mprintf("%s: unexpected argument %s (options are key=value)", WHO, arg);
        return SQLITE_ERROR;
      }
      m->path = v;
      seen |= 1; /* path */
      continue;
    }
    if (ext_key_repeated(k, kl, opt_names, &seen)) {
      *pzErr = sqlite3_mprintf("%s: duplicate option '%.*s' (each option once%s)", WHO, (int)kl, k,
                               ext_key_is(k, kl, "path") || ext_key_is(k, kl, "file")
                                   ? "; path and file are one option, as is a first bare argument" : "");
      sqlite3_free(v);
      return SQLITE_ERROR;
    }
#define KEY(s) ext_key_is(k, kl, s)
    int bad = 0;
    int prc = h5mem_policy_arg(&m->policy, k, kl, v, &pseen, pzErr);
    if (prc != SEARCH_UNKNOWN) { /* a lifecycle option (life_policy.c) */
      sqlite3_free(v);
      if (prc != SQLITE_OK) return prc;
      continue;
    }
    if (KEY("path") || KEY("file")) {
      sqlite3_free(m->path);
      m->path = v;
      continue;
    } else if (KEY("agent")) {
      sqlite3_free(m->agent);
      m->agent = v;
      continue;
    } else if (KEY("signing_key")) {
      sqlite3_free(m->skey);
      m->skey = v;
      if (!*v) {
        *pzErr = sqlite3_mprintf("%s: signing_key= names a secret key file (h5mem_keygen makes one)", WHO);
        return SQLITE_ERROR;
      }
      continue;
    } else if (KEY("embedder")) {
      sqlite3_free(m->embedder);
      m->embedder = v;
      continue;
    } else if (KEY("embedder_model") || KEY("embedder_key_env")) {
      char **dst = KEY("embedder_model") ? &m->emodel : &m->ekey;
      sqlite3_free(*dst);
      *dst = v;
      continue;
    } else if (KEY("embedder_timeout")) {
      char *end;
      double t = strtod(v, &end);
      bad = end == v || *end || !(t > 0 && t <= EMBEDDER_MAX_TIMEOUT);
      if (bad)
        *pzErr = sqlite3_mprintf("%s: embedder_timeout=%s: expected seconds, more than 0 and at most %d", WHO, v,
                                 EMBEDDER_MAX_TIMEOUT);
      else m->etimeout = t;
    } else if (KEY("embedder_retries") || KEY("embedder_batch")) {
      char *end;
      long n = strtol(v, &end, 10);
      int batch = KEY("embedder_batch");
      int hi = batch ? EMBEDDER_MAX_BATCH : EMBEDDER_MAX_RETRIES;
      bad = end == v || *end || n < (batch ? 1 : 0) || n > hi;
      if (bad) *pzErr = sqlite3_mprintf("%s: %.*s=%s: expected an integer in %d..%d", WHO, (int)kl, k, v,
                                        batch ? 1 : 0, hi);
      else if (batch) m->ebatch = (int)n;
      else m->eretries = (int)n;
    } else if (KEY("tokenize")) {
      int porter, rd;
      char norm[64], terr[300];
      if (store_tokenize_parse(v, &porter, &rd, norm, terr, sizeof terr) != STORE_OK) {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: %s", WHO, terr);
      } else {
        sqlite3_free(m->tokenize);
        m->tokenize = v;
        continue;
      }
    } else if (KEY("dim") || KEY("chunk") || KEY("autocheckpoint") || KEY("M") ||
               KEY("ef_construction") || KEY("ef_search") || KEY("nlist") || KEY("nprobe") ||
               KEY("pq_m") || KEY("ttl") || KEY("capacity")) {
      char *end;
      long long n = strtoll(v, &end, 10);
      long long lo = KEY("M") ? 2 : KEY("nlist") || KEY("pq_m") ? 0 : 1; /* nlist, pq_m: 0 is the default */
      long long hi = KEY("dim") || KEY("pq_m") ? 65536
                   : KEY("chunk") || KEY("ef_construction") ? (1 << 20)
                   : KEY("nlist") || KEY("nprobe") ? (1 << 24)
                   : KEY("M") ? 512 : KEY("ef_search") ? 100000 : KEY("ttl") ? 100LL * 365 * 86400
                   : (1LL << 40); /* (capacity, autocheckpoint) */
      bad = end == v || *end || n < lo || n > hi;
      if (!bad && KEY("dim") && m->have_emb_decl && n != m->o.dim) {
        *pzErr = sqlite3_mprintf("%s: dim=%lld, but the embedding is declared float[%d]", WHO, n, m->o.dim);
        sqlite3_free(v);
        return SQLITE_ERROR;
      }
      if (!bad && KEY("dim")) m->o.dim = (int)n;
      else if (!bad && KEY("chunk")) m->o.chunk_rows = (int)n;
      else if (!bad && KEY("M")) m->o.hnsw_m = (int)n;
      else if (!bad && KEY("ef_construction")) m->o.hnsw_efc = (int)n;
      else if (!bad && KEY("ef_search")) m->o.ef_search = (int)n;
      else if (!bad && KEY("nlist")) m->o.ivf_nlist = (uint32_t)n;
      else if (!bad && KEY("nprobe")) m->o.ivf_nprobe = (int)n;
      else if (!bad && KEY("pq_m")) m->o.ivf_pq_m = (int)n;
      else if (!bad && KEY("ttl")) m->o.ttl = n;
      else if (!bad && KEY("capacity")) m->o.capacity = (uint64_t)n;
      else if (!bad) m->o.autocheckpoint = (uint64_t)n;
      if (bad)
        *pzErr = sqlite3_mprintf("%s: %.*s=%s: expected an integer in %lld..%lld", WHO, (int)kl, k, v, lo, hi);
    } else if (KEY("quantize")) {
      if (!sqlite3_stricmp(v, "int8")) m->o.no_q8 = 0;
      else if (!sqlite3_stricmp(v, "none")) m->o.no_q8 = 1;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: quantize=%s: expected int8 or none", WHO, v);
      }
    } else if (KEY("index")) {
      m->have_index = 1;
      if (!sqlite3_stricmp(v, "flat")) m->o.index = STORE_INDEX_FLAT;
      else if (!sqlite3_stricmp(v, "hnsw")) m->o.index = STORE_INDEX_HNSW;
      else if (!sqlite3_stricmp(v, "ivf")) m->o.index = STORE_INDEX_IVF;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: index=%s: expected flat, hnsw or ivf", WHO, v);
      }
    } else if (KEY("metric")) {
      m->have_metric = 1;
      if (!sqlite3_stricmp(v, "cosine")) m->o.metric = STORE_COSINE;
      else if (!sqlite3_stricmp(v, "l2")) m->o.metric = STORE_L2;
      else if (!sqlite3_stricmp(v, "dot")) m->o.metric = STORE_DOT;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: metric=%s: expected cosine, l2 or dot", WHO, v);
      }
    } else if (KEY("storage")) {
      m->have_storage = 1;
      if (!sqlite3_stricmp(v, "float16") || !sqlite3_stricmp(v, "f16")) m->o.storage = STORE_F16;
      else if (!sqlite3_stricmp(v, "float32") || !sqlite3_stricmp(v, "f32")) m->o.storage = STORE_F32;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: storage=%s: expected float16 or float32", WHO, v);
      }
    } else if (KEY("ephemeral")) {
      if (!sqlite3_stricmp(v, "on") || !strcmp(v, "1")) m->o.ephemeral = 1;
      else if (!sqlite3_stricmp(v, "off") || !strcmp(v, "0")) m->o.ephemeral = 0;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: ephemeral=%s: expected on or off", WHO, v);
      }
    } else if (KEY("provenance")) {
      if (!sqlite3_stricmp(v, "on") || !strcmp(v, "1")) m->o.provenance = 1;
      else if (!sqlite3_stricmp(v, "off") || !strcmp(v, "0")) m->o.provenance = 0;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: provenance=%s: expected on or off", WHO, v);
      }
    } else if (KEY("writer")) {
      if (!sqlite3_stricmp(v, "on") || !strcmp(v, "1")) m->o.writer = 1;
      else if (!sqlite3_stricmp(v, "off") || !strcmp(v, "0")) m->o.writer = 0;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: writer=%s: expected on or off", WHO, v);
      }
    } else if (KEY("sync")) {
      if (!sqlite3_stricmp(v, "full")) m->o.sync = STORE_SYNC_FULL;
      else if (!sqlite3_stricmp(v, "normal")) m->o.sync = STORE_SYNC_NORMAL;
      else if (!sqlite3_stricmp(v, "off")) m->o.sync = STORE_SYNC_OFF;
      else {
        bad = 1;
        *pzErr = sqlite3_mprintf("%s: sync=%s: expected full, normal or off", WHO, v);
      }
    } else {
      bad = 1;
      *pzErr = sqlite3_mprintf("%s: unknown option '%.*s' (known: path, dim, metric, storage, "
                               "index, M, ef_construction, ef_search, quantize, nlist, nprobe, pq_m, "
                               "tokenize, sync, agent, embedder, embedder_model, embedder_key_env, "
                               "embedder_timeout, embedder_retries, embedder_batch, "
                               "chunk, autocheckpoint, writer, ephemeral, ttl, capacity, " H5MEM_POLICY_KNOWN ")", WHO,
                               (int)kl, k);
    }
#undef KEY
    sqlite3_free(v);
    if (bad) return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
  }
  if (m->o.ephemeral && m->path) {
    *pzErr = sqlite3_mprintf("%s: an ephemeral store has no file: path= goes with ephemeral=off", WHO);
    return SQLITE_ERROR;
  }
  if ((m->o.capacity || m->policy.evict_order) && !m->o.ephemeral) {
    *pzErr = sqlite3_mprintf("%s: %s goes with ephemeral=on", WHO,
                             m->o.capacity ? "capacity=" : "evict=lru|score (a capacity's order)");
    return SQLITE_ERROR;
  }
  if (m->policy.evict_order && !m->o.capacity) {
    *pzErr = sqlite3_mprintf("%s: evict=%s orders what goes past a capacity: give capacity=N", WHO,
                             m->policy.evict_order == 2 ? "score" : "lru");
    return SQLITE_ERROR;
  }
  m->o.evict_by = m->policy.evict_order == 2 ? STORE_EVICT_SCORE : STORE_EVICT_LRU;
  m->o.evict_half_life = m->policy.half_life_days * 86400.0;
  if (m->o.ttl && !m->o.ephemeral) {
    *pzErr = sqlite3_mprintf("%s: ttl= goes with ephemeral=on (a store with a file keeps its records)", WHO);
    return SQLITE_ERROR;
  }
  if (m->o.ephemeral) { /* (its records' expiry: a declared column, made when not declared) */
    int at = -1;
    for (int i = 0; i < m->o.ncols; i++)
      if (!sqlite3_stricmp(m->cols[i].name, "expires_at")) at = i;
    if (at >= 0 && (m->cols[at].type != STORE_T_INTEGER || m->cols[at].role != STORE_R_METADATA)) {
      *pzErr = sqlite3_mprintf("%s: expires_at: an ephemeral store's expiry is an integer column "
                               "(unix seconds; declare it `expires_at integer` or leave it out)", WHO);
      return SQLITE_ERROR;
    }
    if (at < 0 && m->o.ncols >= STORE_COLS_MAX) {
      *pzErr = sqlite3_mprintf("%s: at most %d declared columns (an ephemeral store adds expires_at)", WHO,
                               STORE_COLS_MAX - 1);
      return SQLITE_ERROR;
    }
    if (at < 0) {
      store_coldef c;
      memset(&c, 0, sizeof c);
      snprintf(c.name, sizeof c.name, "expires_at");
      c.type = STORE_T_INTEGER;
      c.role = STORE_R_METADATA;
      m->cols[m->o.ncols++] = c;
      m->o.cols = m->cols;
    }
  }
  if (m->o.ephemeral && m->o.dim <= 0) {
    *pzErr = sqlite3_mprintf("%s: an ephemeral store is made at once: dim= is required, e.g. USING "
                             "h5mem(ephemeral=on, dim=384)", WHO);
    return SQLITE_ERROR;
  }
  if (!m->o.ephemeral && (!m->path || !*m->path)) {
    *pzErr = sqlite3_mprintf("%s: path= is required, e.g. USING h5mem(path='agent.h5', dim=384)", WHO);
    return SQLITE_ERROR;
  }
  if (m->o.provenance) { /* (the history's column, declared last) */
    char err[300];
    if (m->o.ncols >= STORE_COLS_MAX) {
      *pzErr = sqlite3_mprintf("%s: at most %d declared columns, provenance's among them", WHO, STORE_COLS_MAX);
      return SQLITE_ERROR;
    }
    if (store_coldef_parse("+provenance text", 16, &m->cols[m->o.ncols], err, sizeof err) != STORE_OK) {
      *pzErr = sqlite3_mprintf("%s: %s", WHO, err);
      return SQLITE_ERROR;
    }
    m->o.ncols++;
    m->o.cols = m->cols;
  }
  if (m->o.ephemeral && m->skey) {
    *pzErr = sqlite3_mprintf("%s: an ephemeral store has no file to sign: signing_key= is for stores with a file", WHO);
    return SQLITE_ERROR;
  }
  m->o.signing_key = m->skey;
  m->o.agent = m->agent;
  m->o.embedder = m->embedder;
  m->o.tokenize = m->tokenize;
  if ((!m->embedder || strncmp(m->embedder, "openai:", 7)) &&
      (m->emodel || m->ekey || m->etimeout || m->eretries >= 0 || m->ebatch)) {
    *pzErr = sqlite3_mprintf("%s: the embedder_* options go with embedder='openai:URL'", WHO);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

static void opts_free(memopts *m) {
  sqlite3_free(m->path);
  sqlite3_free(m->agent);
  sqlite3_free(m->embedder);
  sqlite3_free(m->tokenize);
  sqlite3_free(m->emodel);
  sqlite3_free(m->ekey);
  sqlite3_free(m->skey);
}

/* The embedder the options name, as lib/embed takes it. */
static embedder_conf opts_econf(const memopts *m) {
  embedder_conf c = {m->embedder, m->emodel, m->ekey, m->etimeout, m->eretries, m->ebatch};
  return c;
}

/* An embedder h5mem runs (else a label, kept in the file as it is). */
static int runs_embedder(const char *spec) {
  return spec && (!strncmp(spec, "hash:", 5) || !strncmp(spec, "static:", 7) || !strncmp(spec, "openai:", 7));
}

/* The embedder the options name, opened (the connection's cache): it gives
** the dimension (dim= may then be left out, and if given or declared must
** agree; an HTTP embedder making a new store without dim= is asked once),
** and what the new store keeps of it (a static model's digest, an HTTP
** embedder's model). */

static int opts_embedder(registry *reg, memopts *m, int creating, char **pzErr) {
  if (!runs_embedder(m->embedder)) return SQLITE_OK;
  embedder_cache *c = h5mem_registry_embedders(reg);
  if (!c) return SQLITE_NOMEM;
  embedder_conf conf = opts_econf(m);
  char err[1200];
  int erc;
  embedder *e = embedder_cache_get(c, &conf, &erc, err, sizeof err);
  if (!e) {
    *pzErr = sqlite3_mprintf("%s: %s", WHO, err);
    return erc == EMBED_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  struct stat sb;
  if (embedder_kind(e) == EMBEDDER_OPENAI && !m->o.dim && creating && stat(m->path, &sb) != 0 &&
      embedder_probe(e, err, sizeof err) != EMBED_OK) {
    *pzErr = sqlite3_mprintf("%s: dim= not given, and asking the embedder for it failed: %s", WHO, err);
    return SQLITE_ERROR;
  }
  int edim = embedder_dim(e);
  if (edim && m->o.dim && m->o.dim != edim) {
    *pzErr = sqlite3_mprintf(m->have_emb_decl ? "%s: the embedder '%s' gives %d dimensions, the table "
                                                "declares the embedding float[%d]"
                                              : "%s: the embedder '%s' gives %d dimensions, the table "
                                                "says dim=%d",
                             WHO, m->embedder, edim, m->o.dim);
    return SQLITE_ERROR;
  }
  if (edim) m->o.dim = edim;
  if (embedder_kind(e) == EMBEDDER_STATIC) m->o.embedder_digest = embedder_digest(e);
  /* (e stays in the cache while this connection lives: o's strings stay valid) */
  if (embedder_kind(e) == EMBEDDER_OPENAI) m->o.embedder_model = embedder_model(e);
  return SQLITE_OK;
}

/* The store's embedder (its file's attributes) beside the one the options
** name: the same kind and model (a static model's digest, an HTTP one's
** model name; an HTTP one's URL may change), or an error.  The table uses
** the options' (a static model at another path with the same digest is
** fine).  With no embedder in the options, a hashed or static one the file
** records is used; an HTTP one is not (eblocked says why): a table reaches
** the network only when its own statement names the URL. */
static int vt_embedder_setup(memvt *vt, const memopts *m, char **pzErr) {
  char fspec[1024] = "", fmodel[1024] = "", fdig[64] = "";
  store_attr(vt->st, "embedder", fspec, sizeof fspec);
  store_attr(vt->st, "embedder_model", fmodel, sizeof fmodel);
  store_attr(vt->st, "embedder_digest", fdig, sizeof fdig);
  int fk = !strncmp(fspec, "hash:", 5) ? EMBEDDER_HASH : !strncmp(fspec, "static:", 7) ? EMBEDDER_STATIC
         : !strncmp(fspec, "openai:", 7) ? EMBEDDER_OPENAI : 0;
  if (runs_embedder(m->embedder)) {
    int ok = 1;
    const char *slash = strrchr(fspec, '/');
    if (!strncmp(m->embedder, "hash:", 5)) ok = fk == EMBEDDER_HASH && !strcmp(fspec, m->embedder);
    else if (!strncmp(m->embedder, "static:", 7)) ok = fk == EMBEDDER_STATIC && (!*fdig || !m->o.embedder_digest || !strcmp(fdig, m->o.embedder_digest));
    else if (!fk && slash && m->emodel) ok = !strcmp(slash + 1, m->emodel); /* h5mem_migrate's "provider/model" */
    else ok = fk == EMBEDDER_OPENAI && m->emodel && (!*fmodel || !strcmp(fmodel, m->emodel));
    if (!ok) {
      *pzErr = !*fspec ? sqlite3_mprintf("%s: the store %s was made without an embedder (its vectors came from "
                                         "elsewhere): leave embedder= out, or make a new store", WHO, m->path)
                       : sqlite3_mprintf("%s: the store %s was made with the embedder '%s'%s%s%s; the table names "
                                         "'%s'%s%s%s: its vectors would not be comparable", WHO, m->path, fspec,
                                         *fmodel ? " (model '" : *fdig ? " (digest " : "", *fmodel ? fmodel : fdig,
                                         *fmodel ? "')" : *fdig ? ")" : "", m->embedder,
                                         m->emodel ? " (model '" : m->o.embedder_digest ? " (digest " : "",
                                         m->emodel ? m->emodel : m->o.embedder_digest ? m->o.embedder_digest : "",
                                         m->emodel ? "')" : m->o.embedder_digest ? ")" : "");
      return *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    }
    vt->espec = sqlite3_mprintf("%s", m->embedder);
    vt->emodel = m->emodel ? sqlite3_mprintf("%s", m->emodel) : NULL;
    vt->ekey = m->ekey ? sqlite3_mprintf("%s", m->ekey) : NULL;
    vt->econf = opts_econf(m);
    if (!vt->espec || (m->emodel && !vt->emodel) || (m->ekey && !vt->ekey)) return SQLITE_NOMEM;
  } else if (fk) {
    vt->espec = sqlite3_mprintf("%s", fspec);
    vt->emodel = *fmodel ? sqlite3_mprintf("%s", fmodel) : NULL;
    if (!vt->espec || (*fmodel && !vt->emodel)) return SQLITE_NOMEM;
    memset(&vt->econf, 0, sizeof vt->econf);
    vt->econf.retries = -1;
    if (fk == EMBEDDER_OPENAI &&
        !(vt->eblocked = sqlite3_mprintf("the store's embedder is '%s' (model '%s'); a table uses an HTTP "
                                         "embedder only when its own options name it: embedder='%s', "
                                         "embedder_model='%s'", fspec, fmodel, fspec, fmodel)))
      return SQLITE_NOMEM;
  }
  vt->econf.spec = vt->espec;
  vt->econf.model = vt->emodel;
  vt->econf.key_env = vt->ekey;
  return SQLITE_OK;
}

/* The error of a table whose store is missing, in its zErrMsg. */
static int vt_missing(memvt *vt) {
  char *m = NULL;
  int rc = h5mem_table_missing(vt, &m);
  if (m) {
    vt_err(vt, rc, "%s", m);
    sqlite3_free(m);
  }
  return rc;
}

/* ---- connect ----------------------------------------------------------- */

static int mem_disconnect(sqlite3_vtab *base);
static void pend_discard(memvt *vt);
static int mem_tx_msg(sqlite3_vtab *base, int rc, char **msg);
static int mem_tx_missing(sqlite3_vtab *base);

/* The hidden command column's name: the table's, unless that is the name
** of another column (id, text, ..., distance, k) or of the rowid (rowid,
** oid, _rowid_: the column would hide it); then "h5mem".  So any table
** name works. */
static const char *cmd_column(const char *table, const store_coldef *cols, int ncols) {
  static const char *const taken[] = {
      "id", "text", "embedding", "source", "session", "tags", "ts", "tier", "importance",
      "access_count", "last_access", "meta", "distance", "k", "rowid", "oid", "_rowid_", NULL};
  for (int i = 0; taken[i]; i++)
    if (!sqlite3_stricmp(table, taken[i])) return "h5mem";
  for (int i = 0; i < ncols; i++) /* (a declared column's name; none is "h5mem": the store refuses it) */
    if (!sqlite3_stricmp(table, cols[i].name)) return "h5mem";
  return table;
}

/* The SQL type of a declared column (its affinity). */
static const char *decl_sql_type(const store_coldef *c) {
  switch (c->type) {
  case STORE_T_INTEGER:
  case STORE_T_BOOLEAN: return "INTEGER";
  case STORE_T_FLOAT: return "REAL";
  case STORE_T_TEXT: return "TEXT";
  default: return "BLOB";
  }
}

/* The table's declared columns from its store (or, a store missing, as
** declared) into vt, with the scratch for a record's values. */
static int vt_cols(memvt *vt, const memopts *m) {
  int n = vt->st ? store_ncols(vt->st) : m->o.ncols;
  size_t vbytes = 0;
  vt->ncols = n;
  if (!n) return SQLITE_OK;
  vt->cdef = sqlite3_malloc64((sqlite3_uint64)n * sizeof *vt->cdef);
  vt->cv = sqlite3_malloc64((sqlite3_uint64)n * sizeof *vt->cv);
  if (!vt->cdef || !vt->cv) return SQLITE_NOMEM;
  for (int i = 0; i < n; i++) {
    vt->cdef[i] = vt->st ? *store_col(vt->st, i) : m->cols[i];
    vbytes += store_coldef_width(&vt->cdef[i]);
  }
  vt->cbuf = sqlite3_malloc64(vbytes + 1);
  return vt->cbuf ? SQLITE_OK : SQLITE_NOMEM;
}

/* An ephemeral store's owner lock (store_opts.owner): the connection's
** mutex, free when no thread is in a call on the connection. */
static int db_mutex_try(void *m) { return sqlite3_mutex_try(m) == SQLITE_OK; }
static void db_mutex_unlock(void *m) { sqlite3_mutex_leave(m); }

/* The table, opening its store.  Only xCreate (creating) makes a store
** that does not exist: xConnect runs when a database file declaring the
** table is opened, and must not make files wherever that file says.  A
** store missing then leaves the table connected but "missing" (vt->missing),
** every use an error: DROP TABLE needs xConnect to succeed. */
static int mem_connect_common(sqlite3 *db, void *aux, int argc, const char *const *argv,
                              sqlite3_vtab **out, char **pzErr, int creating) {
  if (h5mem_fleet_args(argc, argv)) return h5mem_fleet_connect(db, aux, argc, argv, out, pzErr);
  registry *reg = aux;
  memopts m;
  int rc = parse_opts(argc, argv, &m, pzErr);
  if (rc == SQLITE_OK) rc = opts_embedder(reg, &m, creating, pzErr);
  if (rc != SQLITE_OK) {
    opts_free(&m);
    return rc;
  }
  memvt *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) {
    opts_free(&m);
    return SQLITE_NOMEM;
  }
  memset(vt, 0, sizeof *vt);
  vt->tx.msg = mem_tx_msg;
  vt->tx.missing = mem_tx_missing;
  vt->db = db;
  vt->policy = m.policy;
  vt->schema = sqlite3_mprintf("%s", argv[1]);
  vt->name = sqlite3_mprintf("%s", argv[2]);
  char *key = sqlite3_mprintf("%s.%s", argv[1], argv[2]);
  if (m.o.ephemeral && !m.path) { /* (no file: the table's name names it, in the whole process) */
    m.path = sqlite3_mprintf("%s", argv[2]);
    if (!m.path) rc = SQLITE_NOMEM;
  }
  char err[600];
  store_opts o = m.o;
  if (!m.o.dim) o.dim = 0; /* open only; then metric/storage are not checked */
  if (m.o.ephemeral && (o.owner = sqlite3_db_mutex(db)) != NULL) { /* (NULL: SQLite built without mutexes) */
    o.owner_try = db_mutex_try;
    o.owner_unlock = db_mutex_unlock;
  }
  o.no_create = !creating;
  struct stat sb;
  if (!vt->schema || !vt->name || !key) {
    rc = SQLITE_NOMEM;
  } else if ((vt->tx.ms = h5mem_store_find(reg, key, m.path)) != NULL) {
    vt->st = h5mem_store_handle(vt->tx.ms); /* connected again while a companion holds the store */
  } else if (rc != SQLITE_OK) {
    /* (out of memory above) */
  } else if (!creating && !m.o.ephemeral && stat(m.path, &sb) != 0 && errno == ENOENT) {
    vt->missing = sqlite3_mprintf("%s", m.path); /* (a store made later is found at the next connect) */
    if (!vt->missing) rc = SQLITE_NOMEM;
  } else {
    store *st = NULL;
    int sr = store_open(m.path, &o, 0, &st, err, sizeof err);
    if (sr == STORE_OK) {
      vt->tx.ms = h5mem_store_new(reg, key, st);
      vt->st = vt->tx.ms ? st : NULL;
      if (!vt->tx.ms) sr = STORE_ENOMEM;
    }
    if (sr == STORE_ENOMEM) {
      rc = SQLITE_NOMEM;
    } else if (sr != STORE_OK) {
      rc = ext_err_rc(sr) == SQLITE_CONSTRAINT ? SQLITE_ERROR : ext_err_rc(sr);
      *pzErr = sqlite3_mprintf("%s: %s", WHO, err);
    } else if (m.o.dim == 0 && ((m.have_metric && m.o.metric != store_metric(vt->st)) ||
                                (m.have_storage && m.o.storage != store_storage(vt->st)) ||
                                (m.have_index && m.o.index != store_index(vt->st, NULL)))) {
      rc = SQLITE_ERROR;
      *pzErr = sqlite3_mprintf("%s: %s: metric, storage or index differ from the store's (%s, %s, %s)", WHO, m.path,
                               store_metric(vt->st) == STORE_L2 ? "l2" : store_metric(vt->st) == STORE_DOT ? "dot" : "cosine",
                               store_storage(vt->st) == STORE_F16 ? "float16" : "float32",
                               store_index_name(store_index(vt->st, NULL)));
    }
  }
  sqlite3_free(key);
  /* signing_key= at CREATE: the key is read now, and must be a signed
  ** store's (a store it made was signed empty by store_open; one that exists
  ** unsigned is signed only by h5mem_sign, so that a store whose signatures
  ** were removed is never signed anew unasked); later connects note the path */
  if (rc == SQLITE_OK && vt->st && creating && m.skey) {
    int64_t seq = store_sign_seq(vt->st);
    int sr = seq < 0 ? (int)-seq : store_sign_key(vt->st, m.skey);
    if (sr != STORE_OK) {
      rc = ext_err_rc(sr) == SQLITE_CONSTRAINT ? SQLITE_ERROR : ext_err_rc(sr);
      *pzErr = sqlite3_mprintf("%s: %s", WHO, store_errmsg(vt->st));
    }
  } else if (rc == SQLITE_OK && vt->st && m.skey) {
    store_sign_note(vt->st, m.skey);
  }
  if (rc == SQLITE_OK && vt->st) rc = vt_embedder_setup(vt, &m, pzErr);
  if (rc == SQLITE_OK) rc = vt_cols(vt, &m);
  opts_free(&m);
  if (rc == SQLITE_OK) {
    /* the declared columns after the hidden ones (SQL columns NCOLS + i):
    ** `SELECT *` and INSERT without a column list take them after meta */
    sqlite3_str *d = sqlite3_str_new(db);
    sqlite3_str_appendf(d, "CREATE TABLE x(id INTEGER, text TEXT, embedding BLOB, source TEXT, session TEXT, "
                           "tags TEXT, ts INTEGER, tier TEXT, importance REAL, access_count INTEGER, "
                           "last_access INTEGER, meta TEXT, \"%w\" HIDDEN, distance HIDDEN, k HIDDEN",
                        cmd_column(argv[2], vt->cdef, vt->ncols));
    for (int i = 0; i < vt->ncols; i++)
      sqlite3_str_appendf(d, ", \"%w\" %s", vt->cdef[i].name, decl_sql_type(&vt->cdef[i]));
    sqlite3_str_appendf(d, ")");
    char *q = sqlite3_str_finish(d);
    rc = q ? sqlite3_declare_vtab(db, q) : SQLITE_NOMEM;
    sqlite3_free(q);
    if (q && rc != SQLITE_OK) *pzErr = sqlite3_mprintf("%s: cannot declare columns: %s", WHO, sqlite3_errmsg(db));
  }
  if (rc == SQLITE_OK) {
    vt->vec = sqlite3_malloc64((sqlite3_uint64)(vt->st ? store_dim(vt->st) : 1) * 4);
    if (!vt->vec) rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    mem_disconnect(&vt->tx.base);
    return rc;
  }
  sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
  /* it reads and writes files: never from a trigger or view (docs/SQL.md, "Trust") */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  h5mem_registry_add(reg, vt);
  *out = &vt->tx.base;
  return SQLITE_OK;
}

static int mem_disconnect(sqlite3_vtab *base) {
  if (FLEET(base)) return h5mem_fleet_module.xDisconnect(base);
  memvt *vt = (memvt *)base;
  pend_discard(vt); /* (before the store goes: its ms->pend may point here) */
  h5mem_registry_remove(vt);
  h5mem_store_release(vt->tx.ms);
  sqlite3_free(vt->pend);
  sqlite3_free(vt->espec);
  sqlite3_free(vt->emodel);
  sqlite3_free(vt->ekey);
  sqlite3_free(vt->eblocked);
  sqlite3_free(vt->vec);
  sqlite3_free(vt->cdef);
  sqlite3_free(vt->cv);
  sqlite3_free(vt->cbuf);
  sqlite3_free(vt->schema);
  sqlite3_free(vt->name);
  sqlite3_free(vt->missing);
  sqlite3_free(vt->tx.base.zErrMsg);
  sqlite3_free(vt);
  return SQLITE_OK;
}

static int mem_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **out, char **pzErr) {
  return mem_connect_common(db, aux, argc, argv, out, pzErr, 0);
}

/* ---- the companion tables ------------------------------------------------ */

const char *const h5mem_companion[3] = {"entities", "relations", "mentions"};
const char *const h5mem_companion_module[3] = {"h5mem_entities", "h5mem_relations", "h5mem_mentions"};

/* CREATE VIRTUAL TABLE mem makes mem_entities, mem_relations and
** mem_mentions beside it (in the same schema, bound to mem by name), as
** FTS5 makes its shadow tables: a table of that name already there is left
** alone. */
static int mem_create(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **pzErr) {
  int rc = mem_connect_common(db, aux, argc, argv, out, pzErr, 1);
  for (int k = 0; k < 3 && rc == SQLITE_OK && !FLEET(*out); k++) {
    char *sql = sqlite3_mprintf("CREATE VIRTUAL TABLE IF NOT EXISTS \"%w\".\"%w_%s\" USING %s(\"%w\")",
                                argv[1], argv[2], h5mem_companion[k], h5mem_companion_module[k], argv[2]);
    char *err = NULL;
    rc = sql ? sqlite3_exec(db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc != SQLITE_OK) {
      *pzErr = sqlite3_mprintf("%s: creating %s_%s: %s", WHO, argv[2], h5mem_companion[k],
                               err ? err : sqlite3_errstr(rc));
      mem_disconnect(*out);
      *out = NULL;
    }
    sqlite3_free(err);
  }
  return rc;
}

/* Whether schema.table is a companion table made by module k (not a table
** of the user's that has the name). */
static int is_companion(sqlite3 *db, const char *schema, const char *table, int k) {
  char *sql = sqlite3_mprintf("SELECT sql FROM \"%w\".sqlite_master WHERE type = 'table' AND name = ?1",
                              schema);
  sqlite3_stmt *st = NULL;
  int yes = 0;
  if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) {
      const char *def = (const char *)sqlite3_column_text(st, 0);
      char *want = sqlite3_mprintf("%% USING %s(%%", h5mem_companion_module[k]);
      yes = def && want && sqlite3_strlike(want, def, 0) == 0;
      sqlite3_free(want);
    }
  }
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return yes;
}

/* DROP TABLE mem drops its companion tables too (never the files).  Not in
** a transaction that changed the store and has not committed: those changes
** would have no table left to commit them. */
static int mem_destroy(sqlite3_vtab *base) {
  if (FLEET(base)) return h5mem_fleet_module.xDestroy(base);
  memvt *vt = (memvt *)base;
  if (vt->tx.ms && h5mem_tx_dirty(vt->tx.ms))
    return vt_err(vt, SQLITE_LOCKED, "cannot drop %s while this transaction has uncommitted changes "
                  "to its store; COMMIT or ROLLBACK first", vt->name); /* (SQLite shows its own
                  message for SQLITE_LOCKED: "database table is locked") */
  for (int k = 0; k < 3; k++) {
    char *table = sqlite3_mprintf("%s_%s", vt->name, h5mem_companion[k]);
    if (!table) return SQLITE_NOMEM;
    int rc = SQLITE_OK;
    if (is_companion(vt->db, vt->schema, table, k)) {
      char *sql = sqlite3_mprintf("DROP TABLE \"%w\".\"%w\"", vt->schema, table);
      char *err = NULL;
      rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
      if (rc != SQLITE_OK) vt_err(vt, rc, "dropping %s: %s", table, err ? err : sqlite3_errstr(rc));
      sqlite3_free(err);
      sqlite3_free(sql);
    }
    sqlite3_free(table);
    if (rc != SQLITE_OK) return rc;
  }
  if (vt->tx.ms) h5mem_store_orphan(vt->tx.ms); /* a companion left behind (by another name) now refuses to work */
  return mem_disconnect(base);
}

/* ---- reading ------------------------------------------------------------ */

/* Plan 2: a KNN query, sqlite-vec's form: `embedding MATCH :q` with
** `k = N` or a LIMIT.  idxStr: 'Q' (the query), 'K' (k), 'L' (LIMIT),
** 'F' (OFFSET), then search_knn_plan's filter tokens, in argument order. */
static int knn_best_index(memvt *vt, sqlite3_index_info *info) {
  int match = -1, keq = -1, lim = -1, off = -1;
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    int vcol = c->iColumn >= NCOLS && c->iColumn - NCOLS < vt->ncols &&
               vt->cdef[c->iColumn - NCOLS].type == STORE_T_VECTOR;
    if (c->op == SQLITE_INDEX_CONSTRAINT_MATCH && (c->iColumn == COL_EMB || vcol) && match < 0) {
      if (!c->usable) return SQLITE_CONSTRAINT;
      match = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->iColumn == COL_K && c->usable) {
      keq = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_LIMIT && c->usable) {
      lim = k;
    } else if (c->op == SQLITE_INDEX_CONSTRAINT_OFFSET && c->usable) {
      off = k;
    }
  }
  if (match < 0) return SQLITE_NOTFOUND;
  char *plan = sqlite3_malloc(256);
  if (!plan) return SQLITE_NOMEM;
  int argi = 0, used = 0;
  size_t n = 0;
  plan[n++] = 'Q';
  info->aConstraintUsage[match].argvIndex = ++argi;
  info->aConstraintUsage[match].omit = 1;
  int mcol = info->aConstraint[match].iColumn;
  if (mcol >= NCOLS) { /* a declared vector column: 'M' and its number (no argument) */
    plan[n++] = 'M';
    plan[n++] = (char)('0' + (mcol - NCOLS) / 10);
    plan[n++] = (char)('0' + (mcol - NCOLS) % 10);
  }
  if (keq >= 0) {
    plan[n++] = 'K';
    info->aConstraintUsage[keq].argvIndex = ++argi;
    info->aConstraintUsage[keq].omit = 1;
  }
  plan[n] = 0;
  search_knn_plan(info, knn_field, NCOLS, plan, 200, &argi, &used);
  search_knn_plan_decl(info, NCOLS, vt->cdef, vt->ncols, plan, 200, &argi, &used);
  /* distance bounds, applied before the k rows are picked (vec0's rule) */
  n = strlen(plan);
  for (int k = 0; k < info->nConstraint && n + 2 < 200; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    char op = c->op == SQLITE_INDEX_CONSTRAINT_LT ? '<' : c->op == SQLITE_INDEX_CONSTRAINT_LE ? 'l'
            : c->op == SQLITE_INDEX_CONSTRAINT_GT ? '>' : c->op == SQLITE_INDEX_CONSTRAINT_GE ? 'g' : 0;
    if (c->iColumn != COL_DISTANCE || !c->usable || !op || info->aConstraintUsage[k].argvIndex) continue;
    plan[n++] = 'X';
    plan[n++] = op;
    plan[n] = 0;
    info->aConstraintUsage[k].argvIndex = ++argi;
    info->aConstraintUsage[k].omit = 1;
  }
  /* LIMIT N is k only when nothing else is left for SQLite to filter */
  int other = 0;
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    if (c->op != SQLITE_INDEX_CONSTRAINT_LIMIT && c->op != SQLITE_INDEX_CONSTRAINT_OFFSET &&
        !info->aConstraintUsage[k].argvIndex)
      other = 1;
  }
  int by_distance = info->nOrderBy == 1 && info->aOrderBy[0].iColumn == COL_DISTANCE && !info->aOrderBy[0].desc;
  if (keq < 0 && lim >= 0 && !other && (info->nOrderBy == 0 || by_distance)) {
    n = strlen(plan);
    plan[n++] = 'L';
    info->aConstraintUsage[lim].argvIndex = ++argi;
    if (off >= 0) {
      plan[n++] = 'F';
      info->aConstraintUsage[off].argvIndex = ++argi;
    }
    plan[n] = 0;
  }
  if (by_distance) info->orderByConsumed = 1;
  info->idxNum = 2;
  info->idxStr = plan;
  info->needToFreeIdxStr = 1;
  info->estimatedCost = 1000.0 + (double)store_count(vt->st) / 100;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

/* Plan 3: a time range from the store's temporal index (store_time_range):
** ts =, <, <=, >, >= (BETWEEN is two of them) and ORDER BY ts [DESC], with
** `session = ?` from the per-session index (store_time_range_session: that
** session's rows alone; its session column given without a read).  idxStr: 'A' (ts ascending), 'D'
** (descending) or 'N' (no order asked: ascending), then one letter per
** argument: '=', '>', 'g' (>=), '<', 'l' (<=) for ts, 'S' for session.  The
** constraints are not omitted: SQLite checks them again, so the range
** (search_knn_filter_add's bounds, as vec_search's filters) need only hold
** every row that meets them.  The order is (ts, position), so ORDER BY ts
** alone is consumed, not ORDER BY ts, id.  The cost: the rows the range
** is expected to hold (a bound keeps a quarter, = keeps few, as SQLite
** guesses for its own indexes) against a scan's n; with ORDER BY ts alone
** and no bound, a scan's cost without its sort, so SQLite prefers it and
** a LIMIT stops it after the rows it wants (the last 20: 20 rows read). */
static int time_best_index(memvt *vt, sqlite3_index_info *info) {
  static const struct { int op; char c; } ops[] = {
      {SQLITE_INDEX_CONSTRAINT_EQ, '='}, {SQLITE_INDEX_CONSTRAINT_GT, '>'}, {SQLITE_INDEX_CONSTRAINT_GE, 'g'},
      {SQLITE_INDEX_CONSTRAINT_LT, '<'}, {SQLITE_INDEX_CONSTRAINT_LE, 'l'}};
  char plan[40];
  size_t n = 1;
  int argi = 0, nts = 0, lower = 0, upper = 0, eq = 0, sess = -1;
  int by_ts = info->nOrderBy == 1 && info->aOrderBy[0].iColumn == COL_TS;
  plan[0] = by_ts ? (info->aOrderBy[0].desc ? 'D' : 'A') : 'N';
  for (int k = 0; k < info->nConstraint && n + 2 < sizeof plan; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    if (!c->usable) continue;
    if (c->iColumn == COL_TS) {
      for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++)
        if (c->op == ops[j].op) {
          plan[n++] = ops[j].c;
          info->aConstraintUsage[k].argvIndex = ++argi;
          nts++;
          eq |= ops[j].c == '=';
          lower |= ops[j].c == '>' || ops[j].c == 'g';
          upper |= ops[j].c == '<' || ops[j].c == 'l';
        }
    } else if (c->iColumn == COL_SESSION && c->op == SQLITE_INDEX_CONSTRAINT_EQ && sess < 0) {
      const char *coll = sqlite3_vtab_collation(info, k);
      if (coll && sqlite3_stricmp(coll, "BINARY")) continue; /* (bytes compared: BINARY only) */
      sess = k;
      plan[n++] = 'S';
      info->aConstraintUsage[k].argvIndex = ++argi;
    }
  }
  plan[n] = 0;
  if (!nts && !by_ts) { /* nothing for the index: undo */
    for (int k = 0; k < info->nConstraint; k++) info->aConstraintUsage[k].argvIndex = 0;
    return SQLITE_NOTFOUND;
  }
  double rows = (double)store_count(vt->st) + 1;
  if (eq) rows = rows / 1000 + 1;
  if (lower) rows /= 4;
  if (upper) rows /= 4;
  if (sess >= 0) rows = rows / 10 + 1;
  char *p = sqlite3_mprintf("%s", plan);
  if (!p) return SQLITE_NOMEM;
  info->idxNum = 3;
  info->idxStr = p;
  info->needToFreeIdxStr = 1;
  info->orderByConsumed = by_ts;
  info->estimatedCost = nts ? rows * 10 + 20 : (double)store_count(vt->st) * 10;
  info->estimatedRows = (sqlite3_int64)rows;
  return SQLITE_OK;
}

/* Plan 4: a lookup by the text primary key (`key = ?`, a text value;
** SQLite tests the row again).  Plan 5: a scan of the records that meet
** the conditions on declared columns (search_knn_plan_decl's tokens), the
** allowed positions computed first (a partition key's = from its index). */
static int decl_best_index(memvt *vt, sqlite3_index_info *info) {
  for (int k = 0; k < info->nConstraint; k++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[k];
    int col = c->iColumn - NCOLS;
    if (!c->usable || c->op != SQLITE_INDEX_CONSTRAINT_EQ || col < 0 || col >= vt->ncols ||
        vt->cdef[col].role != STORE_R_PKEY)
      continue;
    const char *coll = sqlite3_vtab_collation(info, k);
    if (coll && sqlite3_stricmp(coll, "BINARY")) continue;
    info->aConstraintUsage[k].argvIndex = 1;
    info->idxNum = 4;
    info->estimatedCost = 2;
    info->estimatedRows = 1;
    info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
    return SQLITE_OK;
  }
  char *plan = sqlite3_malloc(256);
  if (!plan) return SQLITE_NOMEM;
  plan[0] = 0;
  int argi = 0, used = 0, part = 0;
  search_knn_plan_decl(info, NCOLS, vt->cdef, vt->ncols, plan, 200, &argi, &used);
  if (!used) {
    sqlite3_free(plan);
    return SQLITE_NOTFOUND;
  }
  for (const char *p = plan; p[0] == 'C' && p[1] && p[2] && p[3]; p += 4)
    part |= p[3] == '=' && vt->cdef[(p[1] - '0') * 10 + (p[2] - '0')].role == STORE_R_PARTITION;
  double n = (double)store_count(vt->st) + 1;
  info->idxNum = 5;
  info->idxStr = plan;
  info->needToFreeIdxStr = 1;
  info->estimatedRows = (sqlite3_int64)(part ? n / 100 + 1 : n / 4 + 1);
  info->estimatedCost = part ? n / 10 + 10 : n * 2; /* (less than a scan's n * 10) */
  return SQLITE_OK;
}

static int mem_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
  if (FLEET(base)) return h5mem_fleet_module.xBestIndex(base, info);
  memvt *vt = (memvt *)base;
  if (vt->missing) return vt_missing(vt); /* (every query plans first) */
  int krc = knn_best_index(vt, info);
  if (krc != SQLITE_NOTFOUND) return krc;
  h5mem_plan_id(info, store_count(vt->st)); /* (COL_ID is column 0) */
  if (info->idxNum == 0) { /* no id lookup: a time range, when one is asked for */
    int trc = time_best_index(vt, info);
    if (trc != SQLITE_NOTFOUND) return trc;
  }
  if (info->idxNum == 0 && vt->ncols) { /* conditions on declared columns */
    int drc = decl_best_index(vt, info);
    if (drc != SQLITE_NOTFOUND) return drc;
  }
  return SQLITE_OK;
}

/* Plan 5's positions: the live records that meet the conditions. */
static int decl_scan_rows(memcur *c, memvt *vt, const char *idxStr, int argc, sqlite3_value **argv) {
  knn_filter f;
  memset(&f, 0, sizeof f);
  int rc = SQLITE_OK, a = 0;
  for (const char *p = idxStr ? idxStr : ""; *p == 'C' && a < argc && rc == SQLITE_OK; a++)
    rc = search_knn_plan_decl_add(&f, vt->cdef, vt->ncols, &p, argv[a]);
  uint64_t npos = store_npos(vt->st), n = 0;
  if (rc == SQLITE_OK && !(c->sbits = sqlite3_malloc64(npos / 8 + 1))) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    memset(c->sbits, 0, npos / 8 + 1);
    if (!f.empty) store_live_bits(vt->st, npos, c->sbits, &n);
    for (int i = 0; i < f.nconds; i++) f.conds[i].v = f.vals + f.coff[i];
    for (int pass = 0; pass < 2 && rc == SQLITE_OK; pass++) /* a partition key's = first */
      for (int i = 0; i < f.nconds && n && rc == SQLITE_OK; i++) {
        const store_coldef *d = &vt->cdef[f.conds[i].col];
        if ((d->role == STORE_R_PARTITION && f.conds[i].op == STORE_OP_EQ) != (pass == 0)) continue;
        int src = store_col_filter(vt->st, &f.conds[i], npos, c->sbits, &n);
        if (src) rc = st_err(vt, src);
      }
  }
  search_knn_filter_free(&f);
  c->one = 0;
  c->pos = 0;
  c->end = npos;
  return rc;
}

static int mem_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
  if (FLEET(base)) return h5mem_fleet_module.xOpen(base, out);
  memvt *vt = (memvt *)base;
  memcur *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  vt->tx.ms->holds++;
  *out = &c->base;
  return SQLITE_OK;
}

static int mem_close(sqlite3_vtab_cursor *cur) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xClose(cur);
  memvt *vt = (memvt *)cur->pVtab;
  vt->tx.ms->holds--;
  sqlite3_free(((memcur *)cur)->res);
  sqlite3_free(((memcur *)cur)->sbits);
  sqlite3_free(((memcur *)cur)->sess);
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* The KNN rows into c->res; the cursor walks them. */
/* Whether distance d meets the bounds (lo, hi; *_open: strict). */
typedef struct dbounds {
  int has_lo, has_hi, lo_open, hi_open, empty;
  double lo, hi;
} dbounds;

static void dbound_add(dbounds *b, char op, sqlite3_value *v) {
  int t = sqlite3_value_numeric_type(v);
  if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) { /* NULL: nothing; text: above every number */
    if (t == SQLITE_NULL || op == '>' || op == 'g') b->empty = 1;
    return;
  }
  double x = sqlite3_value_double(v);
  int open = op == '<' || op == '>';
  if (op == '<' || op == 'l') {
    if (!b->has_hi || x < b->hi || (x == b->hi && open)) {
      b->hi = x;
      b->hi_open = open;
    }
    b->has_hi = 1;
  } else {
    if (!b->has_lo || x > b->lo || (x == b->lo && open)) {
      b->lo = x;
      b->lo_open = open;
    }
    b->has_lo = 1;
  }
}

static int dbound_ok(const dbounds *b, double d) {
  if (b->has_lo && (b->lo_open ? !(d > b->lo) : !(d >= b->lo))) return 0;
  if (b->has_hi && (b->hi_open ? !(d < b->hi) : !(d <= b->hi))) return 0;
  return 1;
}

/* The k nearest whose distance meets b: the records below an upper bound
** are a prefix of the ranking (the top k cut to it); a lower bound skips
** a prefix, so the search asks for more until k remain or none are left. */
/* The search of a KNN query: by the embedding (through the index) or by a
** declared vector column (c->vcol; its query in that column's terms). */
static int knn_search(memcur *c, memvt *vt, const void *q, uint64_t k, const knn_filter *f, char **err) {
  if (c->vcol >= 0) return search_knn_run_col(vt->st, c->vcol, q, k, f, NULL, &c->res, &c->nres, err);
  return search_knn_run(vt->st, q, k, f, NULL, &c->res, &c->nres, err);
}

static double knn_dist(memcur *c, memvt *vt, float d) {
  return c->vcol >= 0 ? (double)d : search_knn_distance(vt->st, d, c->unit);
}

static int knn_bounded(memcur *c, memvt *vt, const void *q, uint64_t k, const knn_filter *f,
                       const dbounds *b, char **err) {
  uint64_t want = k, total = store_count(vt->st);
  for (;;) {
    sqlite3_free(c->res);
    c->res = NULL;
    c->nres = 0;
    int rc = knn_search(c, vt, q, want, f, err);
    if (rc != SQLITE_OK) return rc;
    uint64_t m = 0, below = 0;
    for (uint64_t i = 0; i < c->nres; i++) {
      double d = knn_dist(c, vt, c->res[i].dist);
      if (dbound_ok(b, d)) c->res[m++] = c->res[i];
      else if (b->has_hi && (b->hi_open ? d >= b->hi : d > b->hi)) below = 1; /* (and all after it) */
    }
    /* done: k found, the search returned all it could, or it passed the upper bound */
    if (m >= k || c->nres < want || want >= total || below || !b->has_lo) {
      c->nres = m < k ? m : k;
      return SQLITE_OK;
    }
    want = want > total / 4 ? total : want * 4;
  }
}

static int knn_filter_rows(memcur *c, memvt *vt, const char *idxStr, int argc, sqlite3_value **argv) {
  sqlite3_value *qv = NULL, *kv = NULL, *lv = NULL, *ov = NULL;
  knn_filter f;
  memset(&f, 0, sizeof f);
  dbounds db;
  memset(&db, 0, sizeof db);
  int a = 0, rc = SQLITE_OK;
  c->vcol = -1;
  for (const char *p = idxStr ? idxStr : ""; *p && a < argc && rc == SQLITE_OK; a++) {
    switch (*p) {
    case 'Q':
      qv = argv[a];
      p++;
      if (p[0] == 'M' && p[1] && p[2]) { /* (no argument of its own) */
        c->vcol = (p[1] - '0') * 10 + (p[2] - '0');
        p += 3;
      }
      break;
    case 'K': kv = argv[a]; p++; break;
    case 'L': lv = argv[a]; p++; break;
    case 'F': ov = argv[a]; p++; break;
    case 'C': rc = search_knn_plan_decl_add(&f, vt->cdef, vt->ncols, &p, argv[a]); break;
    case 'X':
      if (p[1]) dbound_add(&db, p[1], argv[a]);
      p += p[1] ? 2 : 1;
      break;
    default:
      if (!p[1]) break;
      rc = search_knn_filter_add(&f, p[0] - '0', p[1] - '0', argv[a]);
      p += 2;
    }
  }
  int64_t k = -1;
  if (rc == SQLITE_OK && kv) {
    if (sqlite3_value_numeric_type(kv) != SQLITE_INTEGER || sqlite3_value_int64(kv) < 0)
      rc = vt_err(vt, SQLITE_ERROR, "k must be an integer >= 0");
    else k = sqlite3_value_int64(kv);
  } else if (rc == SQLITE_OK && lv) {
    k = sqlite3_value_int64(lv);
    if (k >= 0 && ov && sqlite3_value_int64(ov) > 0) k += sqlite3_value_int64(ov);
  }
  if (rc == SQLITE_OK && k < 0)
    rc = vt_err(vt, SQLITE_ERROR, "a KNN query (embedding MATCH ...) needs `AND k = N`; `ORDER BY "
                "distance LIMIT N` serves as k on SQLite 3.41 and later, when nothing but this "
                "table's columns is in the WHERE clause (this is SQLite %s)", sqlite3_libversion());
  void *q = NULL;
  char *err = NULL;
  if (db.empty) f.empty = 1;
  c->unit = 1.0;
  if (rc == SQLITE_OK && c->vcol >= vt->ncols) rc = SQLITE_INTERNAL;
  if (rc == SQLITE_OK)
    rc = c->vcol >= 0 ? search_col_query(vt->st, c->vcol, qv, &q, &err)
                      : search_knn_query(vt->st, vt, qv, (float **)&q, &c->unit, &err);
  if (rc == SQLITE_OK) {
    if (db.has_lo || db.has_hi) rc = knn_bounded(c, vt, q, (uint64_t)k, &f, &db, &err);
    else rc = knn_search(c, vt, q, (uint64_t)k, &f, &err);
  }
  sqlite3_free(q);
  search_knn_filter_free(&f);
  if (err) {
    rc = vt_err(vt, rc, "%s", err);
    sqlite3_free(err);
  }
  if (rc != SQLITE_OK) return rc;
  c->knn = 1;
  c->ires = 0;
  c->pos = c->nres ? c->res[0].pos : 0;
  c->end = store_npos(vt->st);
  return SQLITE_OK;
}

/* The time range's next row (c->tdone at the end). */
static int time_step(memcur *c, memvt *vt) {
  uint64_t pos;
  int rc = store_time_next(vt->st, &c->it, &pos, &c->ts);
  if (rc == STORE_ENOTFOUND) {
    c->tdone = 1;
    return SQLITE_OK;
  }
  if (rc != STORE_OK) return st_err(vt, rc);
  c->pos = pos;
  c->have_v = 0;
  return SQLITE_OK;
}

/* Plan 3 (time_best_index): the range from the ts constraints, walked in
** the order asked. */
static int time_filter_rows(memcur *c, memvt *vt, const char *idxStr, int argc, sqlite3_value **argv) {
  knn_filter f;
  memset(&f, 0, sizeof f);
  const char *p = idxStr ? idxStr : "N";
  int desc = *p == 'D', rc = SQLITE_OK;
  c->timeq = 1;
  c->tdone = 0;
  sqlite3_free(c->sess);
  c->sess = NULL;
  if (*p) p++;
  for (int a = 0; *p && a < argc && rc == SQLITE_OK; a++, p++) {
    int op = *p == '=' ? KNN_OP_EQ : *p == '>' ? KNN_OP_GT : *p == 'g' ? KNN_OP_GE
           : *p == '<' ? KNN_OP_LT : KNN_OP_LE;
    rc = search_knn_filter_add(&f, *p == 'S' ? KNN_F_SESSION : KNN_F_TS, op, argv[a]);
  }
  size_t sesslen = 0;
  if (rc == SQLITE_OK && !f.empty && f.has[1]) { /* (`session = NULL`: f.empty, no rows) */
    c->sess = sqlite3_malloc64(f.len[1] + 1);
    if (!c->sess) rc = SQLITE_NOMEM;
    else memcpy(c->sess, f.str[1], f.len[1]);
    sesslen = f.len[1];
  }
  int64_t lo = f.has_ts ? f.ts_lo : INT64_MIN, hi = f.has_ts ? f.ts_hi : INT64_MAX;
  int empty = f.empty;
  search_knn_filter_free(&f);
  if (rc != SQLITE_OK) return rc;
  if (empty) {
    c->tdone = 1;
    return SQLITE_OK;
  }
  /* with a session, its rows alone from the per-session index (built on
  ** first use, kept as the ts index is) */
  int src = c->sess ? store_time_range_session(vt->st, c->sess, sesslen, lo, hi, desc, &c->it)
                    : store_time_range(vt->st, lo, hi, desc, &c->it);
  if (src != STORE_OK) return st_err(vt, src);
  return time_step(c, vt);
}

static void skip_dead(memcur *c, memvt *vt) {
  if (c->sbits) { /* (plan 5: the allowed positions alone; a byte of zeros at once) */
    while (c->pos < c->end && (!(c->sbits[c->pos / 8] >> (c->pos % 8) & 1) || !store_pos_live(vt->st, c->pos)))
      c->pos = c->sbits[c->pos / 8] ? c->pos + 1 : (c->pos | 7) + 1;
    return;
  }
  while (c->pos < c->end && !store_pos_live(vt->st, c->pos)) c->pos++;
}

static int mem_filter(sqlite3_vtab_cursor *cur, int plan, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xFilter(cur, plan, idxStr, argc, argv);
  (void)idxStr;
  memcur *c = (memcur *)cur;
  memvt *vt = (memvt *)cur->pVtab;
  c->have_v = 0;
  char *msg = NULL; /* (the cursor holds the store: refreshed unless another scan does too) */
  int rc = h5mem_store_refresh(vt->tx.ms, 1, &msg);
  if (rc != SQLITE_OK) return vt_msg(vt, rc, &msg);
  sqlite3_free(c->res);
  c->res = NULL;
  sqlite3_free(c->sbits);
  c->sbits = NULL;
  c->knn = 0;
  c->timeq = 0;
  if (plan == 2) return knn_filter_rows(c, vt, idxStr, argc, argv);
  if (plan == 5) {
    int drc = decl_scan_rows(c, vt, idxStr, argc, argv);
    if (drc == SQLITE_OK) skip_dead(c, vt);
    return drc;
  }
  if (plan == 4 && argc == 1 && sqlite3_value_type(argv[0]) == SQLITE_TEXT) { /* the text primary key */
    c->one = 1;
    c->end = store_npos(vt->st);
    c->pos = c->end;
    uint64_t pos; /* (not text: a number compares by the other side's affinity: the scan below, SQLite tests) */
    if (store_pkey_find(vt->st, (const char *)sqlite3_value_text(argv[0]), (size_t)sqlite3_value_bytes(argv[0]),
                        &pos) == STORE_OK)
      c->pos = pos;
    return SQLITE_OK;
  }
  if (plan == 3) return time_filter_rows(c, vt, idxStr, argc, argv);
  if (plan == 1 && argc == 1) {
    c->one = 1;
    c->end = store_npos(vt->st);
    c->pos = c->end;
    int64_t id;
    int given;
    if (h5mem_value_id(argv[0], "id", &id, &given, &msg) != SQLITE_OK || !given) {
      sqlite3_free(msg); /* matches no integer id */
      return SQLITE_OK;
    }
    uint64_t pos;
    if (store_find(vt->st, id, &pos) == STORE_OK) c->pos = pos;
    return SQLITE_OK;
  }
  c->one = 0;
  c->pos = 0;
  c->end = store_npos(vt->st); /* rows added during the scan are not visited */
  skip_dead(c, vt);
  return SQLITE_OK;
}

static int mem_next(sqlite3_vtab_cursor *cur) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xNext(cur);
  memcur *c = (memcur *)cur;
  memvt *vt = (memvt *)cur->pVtab;
  c->have_v = 0;
  if (c->knn) {
    if (++c->ires < c->nres) c->pos = c->res[c->ires].pos;
    return SQLITE_OK;
  }
  if (c->one) {
    c->pos = c->end;
    return SQLITE_OK;
  }
  if (c->timeq) return time_step(c, vt);
  c->pos++;
  skip_dead(c, vt);
  return SQLITE_OK;
}

static int mem_eof(sqlite3_vtab_cursor *cur) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xEof(cur);
  memcur *c = (memcur *)cur;
  memvt *vt = (memvt *)cur->pVtab;
  if (c->knn) return c->ires >= c->nres;
  if (c->timeq) return c->tdone;
  /* a row deleted by this very statement ends a lookup too */
  return c->pos >= c->end || !store_pos_live(vt->st, c->pos);
}

/* The parts of the current record a column needs (the id always). */
static int load(memcur *c, memvt *vt, unsigned want) {
  if (!c->have_v) memset(&c->v, 0, sizeof c->v);
  c->have_v = 1;
  if ((c->v.have & want) == want && (want || c->v.have)) return SQLITE_OK;
  int rc = store_get(vt->st, c->pos, want, &c->v);
  return rc ? st_err(vt, rc) : SQLITE_OK;
}

unsigned h5mem_view_part(int col) {
  switch (col) {
  case COL_TEXT: return STORE_V_TEXT;
  case COL_SOURCE: return STORE_V_SOURCE;
  case COL_SESSION: return STORE_V_SESSION;
  case COL_TAGS: return STORE_V_TAGS;
  case COL_TIER: return STORE_V_TIER;
  case COL_META: return STORE_V_META;
  case COL_EMB: return STORE_V_EMB;
  case COL_ID: return 0;
  default: return STORE_V_NUM;
  }
}

int h5mem_view_result(sqlite3_context *ctx, store *st, const store_view *v, int col) {
  switch (col) {
  case COL_ID: sqlite3_result_int64(ctx, v->id); break;
  case COL_TEXT: h5mem_result_text(ctx, v->text, v->text_len); break;
  case COL_SOURCE: h5mem_result_text(ctx, v->source, v->source_len); break;
  case COL_SESSION: h5mem_result_text(ctx, v->session, v->session_len); break;
  case COL_TAGS: h5mem_result_text(ctx, v->tags, v->tags_len); break;
  case COL_TIER: h5mem_result_text(ctx, v->tier, v->tier_len); break;
  case COL_META: h5mem_result_text(ctx, v->meta, v->meta_len); break;
  case COL_TS: sqlite3_result_int64(ctx, v->ts); break;
  case COL_IMPORTANCE:
    if (isnan(v->importance)) sqlite3_result_null(ctx);
    else sqlite3_result_double(ctx, v->importance);
    break;
  case COL_ACCESS_COUNT: sqlite3_result_int64(ctx, v->access_count); break;
  case COL_LAST_ACCESS:
    if (v->last_access == STORE_NULL_TIME) sqlite3_result_null(ctx);
    else sqlite3_result_int64(ctx, v->last_access);
    break;
  case COL_EMB: {
    if (!v->emb) {
      sqlite3_result_null(ctx);
      break;
    }
    size_t dim = (size_t)store_dim(st);
    if (store_storage(st) == STORE_F32) {
      sqlite3_result_blob64(ctx, v->emb, dim * 4, SQLITE_TRANSIENT);
    } else {
      float *f = sqlite3_malloc64(dim * 4);
      if (!f) {
        sqlite3_result_error_nomem(ctx);
        return SQLITE_NOMEM;
      }
      uint16_t *h = sqlite3_malloc64(dim * 2);
      if (!h) {
        sqlite3_free(f);
        sqlite3_result_error_nomem(ctx);
        return SQLITE_NOMEM;
      }
      memcpy(h, v->emb, dim * 2); /* (mapped rows need not be aligned) */
      k_get()->f16_to_f32(h, f, dim);
      sqlite3_free(h);
      sqlite3_result_blob64(ctx, f, dim * 4, sqlite3_free);
    }
    sqlite3_result_subtype(ctx, EXT_SUBTYPE_F32);
    break;
  }
  default: sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

/* A declared column's value of the cursor's record. */
static int decl_column(memvt *vt, memcur *c, sqlite3_context *ctx, int i) {
  store_val v;
  int rc = i < vt->ncols ? store_get_col(vt->st, c->pos, i, &v) : STORE_EINVAL;
  if (rc) {
    rc = st_err(vt, rc);
    ext_result_rc(ctx, rc, vt->tx.base.zErrMsg ? vt->tx.base.zErrMsg : WHO ": read failed");
    return rc;
  }
  const store_coldef *d = &vt->cdef[i];
  if (!v.type) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  switch (d->type) {
  case STORE_T_INTEGER:
  case STORE_T_BOOLEAN: sqlite3_result_int64(ctx, v.i); break;
  case STORE_T_FLOAT: sqlite3_result_double(ctx, v.f); break;
  case STORE_T_TEXT: h5mem_result_text(ctx, v.p ? v.p : "", v.n); break;
  case STORE_T_BLOB: sqlite3_result_blob64(ctx, v.p ? v.p : "", v.n, SQLITE_TRANSIENT); break;
  default:
    sqlite3_result_blob64(ctx, v.p, v.n, SQLITE_TRANSIENT);
    sqlite3_result_subtype(ctx, d->vtype == STORE_VT_F32 ? EXT_SUBTYPE_F32 : d->vtype == STORE_VT_F16 ? EXT_SUBTYPE_F16
                                : d->vtype == STORE_VT_I8 ? EXT_SUBTYPE_INT8 : EXT_SUBTYPE_BIT);
  }
  return SQLITE_OK;
}

static int mem_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xRowid(cur, rowid);
  memcur *c = (memcur *)cur;
  int rc = load(c, (memvt *)cur->pVtab, 0);
  if (rc) return rc;
  *rowid = c->v.id;
  return SQLITE_OK;
}

static int mem_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  if (FLEET(cur->pVtab)) return h5mem_fleet_module.xColumn(cur, ctx, col);
  memcur *c = (memcur *)cur;
  memvt *vt = (memvt *)cur->pVtab;
  if (col != COL_ID && sqlite3_vtab_nochange(ctx)) /* an UPDATE leaves it: xUpdate reads */
    return SQLITE_OK;                              /* what it needs (mem_update) */
  if (col == COL_CMD || col == COL_K) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (col >= NCOLS) return decl_column(vt, c, ctx, col - NCOLS);
  if (col == COL_DISTANCE) {
    if (c->knn) sqlite3_result_double(ctx, knn_dist(c, vt, c->res[c->ires].dist));
    else sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  if (col == COL_TS && c->timeq) { /* (the index gave it: no read) */
    sqlite3_result_int64(ctx, c->ts);
    return SQLITE_OK;
  }
  if (col == COL_ID && c->timeq && store_pos_live(vt->st, c->pos)) { /* (no view to fill for the id) */
    sqlite3_result_int64(ctx, store_pos_id(vt->st, c->pos));
    return SQLITE_OK;
  }
  if (col == COL_SESSION && c->timeq && c->sess) { /* (the row's session is these bytes: no read of the
                                                   ** string, which SQLite asks for to test `session = ?`) */
    h5mem_result_text(ctx, c->sess, c->it.sesslen);
    return SQLITE_OK;
  }
  int rc = load(c, vt, h5mem_view_part(col));
  if (rc) { /* the read's code, not SQLITE_ERROR: SQLITE_CORRUPT for a damaged store */
    ext_result_rc(ctx, rc, vt->tx.base.zErrMsg ? vt->tx.base.zErrMsg : WHO ": read failed");
    return rc;
  }
  return h5mem_view_result(ctx, vt->st, &c->v, col);
}

/* ---- writing ------------------------------------------------------------- */

int h5mem_value_text(sqlite3_value *v, const char **s, size_t *n) {
  *s = NULL;
  *n = 0;
  if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  *s = (const char *)sqlite3_value_text(v);
  *n = (size_t)sqlite3_value_bytes(v);
  return *s ? SQLITE_OK : SQLITE_NOMEM;
}

/* A time: INTEGER or REAL unix seconds, or ISO-8601 text. */
int h5mem_value_time(sqlite3_value *v, const char *col, int64_t *out, char **msg) {
  switch (sqlite3_value_type(v)) {
  case SQLITE_INTEGER: *out = sqlite3_value_int64(v); return SQLITE_OK;
  case SQLITE_FLOAT: {
    double d = sqlite3_value_double(v);
    if (!(fabs(d) < 9.2e18)) {
      *msg = sqlite3_mprintf("%s: %g is not a time", col, d);
      return SQLITE_MISMATCH;
    }
    *out = (int64_t)floor(d);
    return SQLITE_OK;
  }
  case SQLITE_TEXT: {
    const char *s = (const char *)sqlite3_value_text(v);
    size_t n = (size_t)sqlite3_value_bytes(v);
    char err[200];
    if (util_iso8601_parse(s, n, out, err, sizeof err) == 0) return SQLITE_OK;
    int t = sqlite3_value_numeric_type(v);
    if (t == SQLITE_INTEGER || t == SQLITE_FLOAT) return h5mem_value_time(v, col, out, msg);
    *msg = sqlite3_mprintf("%s: '%s' is neither unix seconds nor an ISO-8601 time (%s)", col, s, err);
    return SQLITE_MISMATCH;
  }
  default:
    *msg = sqlite3_mprintf("%s: expected unix seconds or ISO-8601 text", col);
    return SQLITE_MISMATCH;
  }
}

/* An id: an integer (or an integral REAL); NULL: not given. */
int h5mem_value_id(sqlite3_value *v, const char *col, int64_t *id, int *given, char **msg) {
  *given = 0;
  if (sqlite3_value_type(v) == SQLITE_NULL) return SQLITE_OK;
  int t = sqlite3_value_numeric_type(v);
  if (t == SQLITE_INTEGER) {
    *id = sqlite3_value_int64(v);
  } else if (t == SQLITE_FLOAT && floor(sqlite3_value_double(v)) == sqlite3_value_double(v) &&
             fabs(sqlite3_value_double(v)) < 9.2e18) {
    *id = (int64_t)sqlite3_value_double(v);
  } else {
    *msg = sqlite3_mprintf("%s: expected an integer", col);
    return SQLITE_MISMATCH;
  }
  *given = 1;
  return SQLITE_OK;
}

static int time_arg(memvt *vt, sqlite3_value *v, const char *col, int64_t *out) {
  char *msg = NULL;
  return vt_msg(vt, h5mem_value_time(v, col, out, &msg), &msg);
}

/* The embedding: a float32 BLOB (float16 with vec_f16's subtype), or JSON. */
int h5mem_emb_value(store *st, sqlite3_value *v, float *f, int *has, char **pzErr) {
  const char *why = NULL;
  return h5mem_emb_check(st, v, f, has, pzErr, &why);
}

int h5mem_emb_check(store *st, sqlite3_value *v, float *f, int *has, char **pzErr, const char **reason) {
  *has = 0;
  int dim = store_dim(st);
  int t = v ? sqlite3_value_type(v) : SQLITE_NULL;
  if (t == SQLITE_NULL) return SQLITE_OK;
  *reason = "bad_embedding";
#define BAD(...) return (*pzErr = sqlite3_mprintf(__VA_ARGS__)) ? SQLITE_MISMATCH : SQLITE_NOMEM
  if (t == SQLITE_BLOB) {
    const uint8_t *b = sqlite3_value_blob(v);
    size_t len = (size_t)sqlite3_value_bytes(v);
    int f16 = sqlite3_value_subtype(v) == EXT_SUBTYPE_F16;
    if (sqlite3_value_subtype(v) == EXT_SUBTYPE_INT8 || sqlite3_value_subtype(v) == EXT_SUBTYPE_BIT)
      BAD("embedding: an %s vector; the embedding is float (convert it with vec_f32())",
          sqlite3_value_subtype(v) == EXT_SUBTYPE_INT8 ? "int8" : "bit");
    size_t want = (size_t)dim * (f16 ? 2 : 4);
    if (len % (f16 ? 2 : 4) == 0) *reason = "wrong_dimension";
    if (len != want)
      BAD("embedding: a %s BLOB of %llu bytes (%llu values); the store has dim=%d (%llu bytes)",
          f16 ? "float16" : "float32", (unsigned long long)len, (unsigned long long)(len / (f16 ? 2 : 4)), dim,
          (unsigned long long)want);
    if (f16) {
      uint16_t *h = sqlite3_malloc64(want);
      if (!h) return SQLITE_NOMEM;
      memcpy(h, b, want);
      k_get()->f16_to_f32(h, f, (size_t)dim);
      sqlite3_free(h);
    } else {
      memcpy(f, b, want);
    }
  } else if (t == SQLITE_TEXT) {
    float *p = NULL;
    size_t n = 0;
    char err[256];
    if (util_json_to_f32((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &p, &n,
                         err, sizeof err))
      BAD("embedding: malformed JSON vector: %s", err);
    if (n != (size_t)dim) {
      free(p);
      *reason = "wrong_dimension";
      BAD("embedding: %llu values; the store has dim=%d", (unsigned long long)n, dim);
    }
    memcpy(f, p, (size_t)dim * 4);
    free(p);
  } else {
    BAD("embedding: expected a float32 BLOB or a JSON array of %d numbers", dim);
  }
  for (int i = 0; i < dim; i++) {
    *reason = "nan_or_inf";
    if (!isfinite(f[i])) BAD("embedding: element %d is %s", i, isnan(f[i]) ? "NaN" : "infinite");
    *reason = "float16_range";
    if (store_storage(st) == STORE_F16 && fabsf(f[i]) > STORE_F16_MAX)
      BAD("embedding: element %d (%g) is outside the float16 range (storage=float16; largest magnitude 65504)", i,
          (double)f[i]);
  }
  char why[200];
  *reason = "vector_range";
  if (search_knn_vec_range(store_metric(st), f, dim, why, sizeof why)) BAD("embedding: %s", why);
#undef BAD
  *reason = NULL;
  *has = 1;
  return SQLITE_OK;
}

/* The table's message (vt_err's) moved into *pzErr. */
static int take_err(memvt *vt, int rc, char **pzErr) {
  *pzErr = vt->tx.base.zErrMsg;
  vt->tx.base.zErrMsg = NULL;
  return rc;
}

/* The store's embedder, from the connection's cache, checked against the
** store: the model the store was made with (a static model's digest) and
** its dim.  NULL with the table's error in *rc. */
static embedder *vt_embedder(memvt *vt, int *rc) {
  int dim = store_dim(vt->st);
  char err[1200], want[64];
  if (vt->eblocked) {
    *rc = vt_err(vt, SQLITE_ERROR, "%s", vt->eblocked);
    return NULL;
  }
  embedder_cache *c = h5mem_registry_embedders(vt->reg);
  if (!c) {
    *rc = SQLITE_NOMEM;
    return NULL;
  }
  int erc;
  embedder *e = embedder_cache_get(c, &vt->econf, &erc, err, sizeof err);
  if (!e) {
    *rc = erc == EMBED_ENOMEM ? SQLITE_NOMEM : vt_err(vt, SQLITE_ERROR, "the store's embedder: %s", err);
    return NULL;
  }
  if (embedder_kind(e) == EMBEDDER_STATIC && store_attr(vt->st, "embedder_digest", want, sizeof want) == STORE_OK &&
      *want && strcmp(want, embedder_digest(e))) {
    *rc = vt_err(vt, SQLITE_ERROR, "the store's embedder '%s' is another model now (digest %s; the store's "
                 "vectors came from %s): rebuild the model the store was made with, or make a new store",
                 vt->espec, embedder_digest(e), want);
    return NULL;
  }
  if (embedder_expect_dim(e, dim, err, sizeof err) != EMBED_OK) {
    *rc = vt_err(vt, SQLITE_ERROR, "%s", err);
    return NULL;
  }
  *rc = SQLITE_OK;
  return e;
}

/* The store's embedder's vector of text[0..n) into vt->vec: *has 0 when
** the text has none (no word the model knows: the record then has no
** embedding, never a zero vector). */
static int emb_text(memvt *vt, const char *text, size_t n, int *has) {
  int rc;
  *has = 0;
  embedder *e = vt_embedder(vt, &rc);
  if (!e) return rc;
  char err[1200];
  uint8_t h = 0;
  int erc = embedder_embed(e, 1, &text, &n, vt->vec, &h, err, sizeof err);
  if (erc == EMBED_ENOMEM) return SQLITE_NOMEM;
  if (erc) return vt_err(vt, erc == EMBED_ECORRUPT && embedder_kind(e) == EMBEDDER_STATIC ? SQLITE_CORRUPT
                                                                                            : SQLITE_ERROR, "%s", err);
  *has = h;
  return SQLITE_OK;
}

embedder *h5mem_table_embedder(memvt *mt, int *rc, char **pzErr) {
  if (!mt->espec || !mt->st) {
    *pzErr = sqlite3_mprintf("the table %s has no embedder", mt->name);
    *rc = *pzErr ? SQLITE_ERROR : SQLITE_NOMEM;
    return NULL;
  }
  embedder *e = vt_embedder(mt, rc);
  if (!e) take_err(mt, *rc, pzErr);
  return e;
}

int h5mem_table_embeds(const memvt *mt) { return mt->espec && mt->st; }

int h5mem_text_query(memvt *mt, const char *text, size_t n, float *out, int *rc, char **pzErr) {
  *rc = SQLITE_OK;
  if (!mt->espec || !mt->st) return 0;
  int has;
  float *keep = mt->vec;
  mt->vec = out;
  *rc = emb_text(mt, text, n, &has);
  mt->vec = keep;
  if (*rc != SQLITE_OK) { /* (emb_text left its message on the table: moved to the caller) */
    *pzErr = sqlite3_mprintf("%s", mt->tx.base.zErrMsg ? mt->tx.base.zErrMsg : "out of memory");
    sqlite3_free(mt->tx.base.zErrMsg);
    mt->tx.base.zErrMsg = NULL;
    return -1;
  }
  if (!has) {
    *pzErr = sqlite3_mprintf("the query text has no word the store's embedder '%s' knows", mt->espec);
    *rc = SQLITE_ERROR;
    return 0;
  }
  return 1;
}

static int emb_arg(memvt *vt, sqlite3_value *v, const float **out) {
  int has;
  char *msg = NULL;
  int rc = h5mem_emb_value(vt->st, v, vt->vec, &has, &msg);
  *out = has ? vt->vec : NULL;
  return rc ? vt_msg(vt, rc, &msg) : SQLITE_OK;
}

static int decl_values(memvt *vt, sqlite3_value **col, int update, store_rec *r);

/* A record from the INSERT/UPDATE arguments (argv[2 + column]). */
static int record_from(memvt *vt, sqlite3_value **col, int64_t id, int update, store_rec *r) {
  memset(r, 0, sizeof *r);
  r->id = id;
  int rc;
  if ((rc = decl_values(vt, col, update, r))) return rc;
  if ((rc = h5mem_value_text(col[COL_TEXT], &r->text, &r->text_len)) ||
      (rc = h5mem_value_text(col[COL_SOURCE], &r->source, &r->source_len)) ||
      (rc = h5mem_value_text(col[COL_SESSION], &r->session, &r->session_len)) ||
      (rc = h5mem_value_text(col[COL_TAGS], &r->tags, &r->tags_len)) ||
      (rc = h5mem_value_text(col[COL_TIER], &r->tier, &r->tier_len)) ||
      (rc = h5mem_value_text(col[COL_META], &r->meta, &r->meta_len)))
    return rc;
  if (r->meta) {
    char err[200];
    if (util_json_valid(r->meta, r->meta_len, err, sizeof err))
      return vt_err(vt, SQLITE_MISMATCH, "meta: malformed JSON: %s", err);
  }
  if ((rc = emb_arg(vt, col[COL_EMB], &r->emb))) return rc;
  if (!update && !r->emb && r->text && vt->espec && !vt->no_embed) { /* INSERT of text alone: the store embeds it */
    int has;
    if ((rc = emb_text(vt, r->text, r->text_len, &has))) return rc;
    if (has) r->emb = vt->vec;
  }
  if (sqlite3_value_type(col[COL_TS]) == SQLITE_NULL) r->ts = (int64_t)time(NULL);
  else if ((rc = time_arg(vt, col[COL_TS], "ts", &r->ts))) return rc;
  r->last_access = STORE_NULL_TIME;
  if (sqlite3_value_type(col[COL_LAST_ACCESS]) != SQLITE_NULL &&
      (rc = time_arg(vt, col[COL_LAST_ACCESS], "last_access", &r->last_access)))
    return rc;
  sqlite3_value *imp = col[COL_IMPORTANCE];
  if (sqlite3_value_type(imp) == SQLITE_NULL) {
    r->importance = NAN;
  } else {
    int t = sqlite3_value_numeric_type(imp);
    if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
      return vt_err(vt, SQLITE_MISMATCH, "importance: expected a number");
    r->importance = sqlite3_value_double(imp);
    if (!isfinite(r->importance)) return vt_err(vt, SQLITE_MISMATCH, "importance: not a finite number");
  }
  sqlite3_value *ac = col[COL_ACCESS_COUNT];
  if (sqlite3_value_type(ac) != SQLITE_NULL) {
    if (sqlite3_value_numeric_type(ac) != SQLITE_INTEGER)
      return vt_err(vt, SQLITE_MISMATCH, "access_count: expected an integer");
    r->access_count = sqlite3_value_int64(ac);
  }
  return SQLITE_OK;
}

/* A vector column's value (c) from v into out (store_coldef_width bytes):
** a BLOB of the column's type (a float32 BLOB also for float16, converted;
** a BLOB tagged as another type by vec_int8/vec_bit/vec_f32/vec_f16 is an
** error), or a JSON array (int8: vec_int8's JSON integers -128..127; bit
** vectors take BLOBs). */
static int vec_value(memvt *vt, const store_coldef *c, sqlite3_value *v, uint8_t *out) {
  size_t w = store_coldef_width(c), d = (size_t)c->dim;
  static const char *const tn[] = {"", "int8", "float16", "", "float32", "", "", "", "bit"};
  if (sqlite3_value_type(v) == SQLITE_BLOB) {
    size_t n = (size_t)sqlite3_value_bytes(v);
    const void *b = sqlite3_value_blob(v);
    int st = (int)sqlite3_value_subtype(v), isf = c->vtype == STORE_VT_F32 || c->vtype == STORE_VT_F16;
    int sti = st == EXT_SUBTYPE_INT8 ? STORE_VT_I8 : st == EXT_SUBTYPE_BIT ? STORE_VT_BIT
            : st == EXT_SUBTYPE_F32 ? STORE_VT_F32 : st == EXT_SUBTYPE_F16 ? STORE_VT_F16 : 0;
    if (sti && (isf ? !(sti == STORE_VT_F32 || sti == STORE_VT_F16) : sti != c->vtype))
      return vt_err(vt, SQLITE_MISMATCH, "%s: a %s vector; the column is %s", c->name, tn[sti], tn[c->vtype]);
    if (c->vtype == STORE_VT_F16 && n == d * 4 && sqlite3_value_subtype(v) != EXT_SUBTYPE_F16) {
      float *f = sqlite3_malloc64(n);
      if (!f) return SQLITE_NOMEM;
      memcpy(f, b, n);
      for (size_t i = 0; i < d; i++)
        if (!isfinite(f[i]) || fabsf(f[i]) > STORE_F16_MAX) {
          sqlite3_free(f);
          return vt_err(vt, SQLITE_MISMATCH, "%s: element %llu is not finite or outside float16's range", c->name,
                        (unsigned long long)i);
        }
      k_get()->f32_to_f16(f, (uint16_t *)(void *)out, d);
      sqlite3_free(f);
      return SQLITE_OK;
    }
    if (n != w)
      return vt_err(vt, SQLITE_MISMATCH, "%s: expected a %s BLOB of %d dimensions (%llu bytes), got %llu bytes",
                    c->name, tn[c->vtype], c->dim, (unsigned long long)w, (unsigned long long)n);
    if (n) memcpy(out, b, n);
    return SQLITE_OK;
  }
  if (sqlite3_value_type(v) != SQLITE_TEXT || c->vtype == STORE_VT_BIT)
    return vt_err(vt, SQLITE_MISMATCH, "%s: expected a %s vector (a BLOB%s)", c->name, tn[c->vtype],
                  c->vtype == STORE_VT_BIT ? ", e.g. vec_bit(...)" : " or a JSON array");
  char err[200];
  if (c->vtype == STORE_VT_I8) { /* (vec_int8's rule: JSON integers -128..127) */
    int8_t *i8 = NULL;
    size_t n = 0;
    if (util_json_to_i8((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &i8, &n, err,
                        sizeof err))
      return vt_err(vt, SQLITE_MISMATCH, "%s: %s", c->name, err);
    int rc = n == d ? SQLITE_OK : vt_err(vt, SQLITE_MISMATCH, "%s: expected %d dimensions, got %llu", c->name,
                                                   c->dim, (unsigned long long)n);
    if (!rc) memcpy(out, i8, d);
    free(i8);
    return rc;
  }
  float *f = NULL;
  size_t n = 0;
  if (util_json_to_f32((const char *)sqlite3_value_text(v), (size_t)sqlite3_value_bytes(v), &f, &n, err,
                       sizeof err))
    return vt_err(vt, SQLITE_MISMATCH, "%s: %s", c->name, err);
  int rc = SQLITE_OK;
  if (n != d) {
    rc = vt_err(vt, SQLITE_MISMATCH, "%s: expected %d dimensions, got %llu", c->name, c->dim, (unsigned long long)n);
  } else if (c->vtype == STORE_VT_F32) {
    memcpy(out, f, d * 4);
  } else if (c->vtype == STORE_VT_F16) {
    for (size_t i = 0; i < d && !rc; i++)
      if (fabsf(f[i]) > STORE_F16_MAX)
        rc = vt_err(vt, SQLITE_MISMATCH, "%s: element %llu (%g) is outside float16's range", c->name,
                    (unsigned long long)i, (double)f[i]);
    if (!rc) k_get()->f32_to_f16(f, (uint16_t *)(void *)out, d);
  }
  free(f);
  return rc;
}

/* The table's provenance column (store_prov.c), or -1. */
static int prov_col(const memvt *vt) {
  if (!vt->st || !store_has_provenance(vt->st)) return -1;
  for (int i = 0; i < vt->ncols; i++)
    if (!strcmp(vt->cdef[i].name, "provenance")) return i;
  return -1;
}

/* The declared columns' values from the INSERT/UPDATE arguments into
** vt->cv (r->cols), as the table's types take them: an integer (or a text
** that reads as one, as INTEGER affinity converts it), a number for float,
** 0 or 1 for boolean, text (numbers as their text), a BLOB or text's bytes
** for blob, a vector.  Columns SQLite leaves unchanged (an UPDATE) are
** marked type -1, for keep_columns. */
static int decl_values(memvt *vt, sqlite3_value **col, int update, store_rec *r) {
  uint8_t *vb = vt->cbuf;
  int pc = prov_col(vt);
  for (int i = 0; i < vt->ncols; i++) {
    const store_coldef *c = &vt->cdef[i];
    sqlite3_value *x = col[NCOLS + i];
    store_val *v = &vt->cv[i];
    memset(v, 0, sizeof *v);
    if (update && sqlite3_value_nochange(x)) {
      v->type = -1;
      vb += store_coldef_width(c);
      continue;
    }
    if (i == pc && (update || sqlite3_value_type(x) != SQLITE_NULL)) /* (SET provenance = NULL would erase it) */
      return vt_err(vt, SQLITE_CONSTRAINT, "provenance is written by h5mem, not given: leave the column out");
    if (sqlite3_value_type(x) == SQLITE_NULL) {
      vb += store_coldef_width(c);
      continue;
    }
    int t = c->type == STORE_T_TEXT || c->type == STORE_T_BLOB || c->type == STORE_T_VECTOR
                ? sqlite3_value_type(x) : sqlite3_value_numeric_type(x);
    static const char *const tname[] = {"", "an integer", "a real", "text", "a blob", "NULL"};
    switch (c->type) {
    case STORE_T_INTEGER:
    case STORE_T_BOOLEAN:
      if (t == SQLITE_FLOAT) { /* an integral real is that integer, as INTEGER affinity makes it */
        double d = sqlite3_value_double(x);
        if (d == floor(d) && d >= -9223372036854775808.0 && d < 9223372036854775808.0) {
          v->i = (int64_t)d;
          t = SQLITE_INTEGER;
        }
      } else if (t == SQLITE_INTEGER) {
        v->i = sqlite3_value_int64(x);
      }
      if (t != SQLITE_INTEGER || (c->type == STORE_T_BOOLEAN && v->i != 0 && v->i != 1))
        return vt_err(vt, SQLITE_MISMATCH, "%s: expected %s, got %s", c->name,
                      c->type == STORE_T_BOOLEAN ? "a boolean (0 or 1)" : "an integer",
                      t == SQLITE_INTEGER ? "another integer" : tname[t]);
      break;
    case STORE_T_FLOAT:
      if (t != SQLITE_INTEGER && t != SQLITE_FLOAT)
        return vt_err(vt, SQLITE_MISMATCH, "%s: expected a number, got %s", c->name, tname[t]);
      v->f = sqlite3_value_double(x);
      break;
    case STORE_T_TEXT: {
      const char *p;
      size_t n;
      if (t == SQLITE_BLOB) return vt_err(vt, SQLITE_MISMATCH, "%s: expected text, got a blob", c->name);
      if (h5mem_value_text(x, &p, &n)) return SQLITE_NOMEM;
      v->p = p;
      v->n = n;
      break;
    }
    case STORE_T_BLOB:
      if (t != SQLITE_BLOB && t != SQLITE_TEXT)
        return vt_err(vt, SQLITE_MISMATCH, "%s: expected a blob, got %s", c->name, tname[t]);
      v->p = t == SQLITE_BLOB ? sqlite3_value_blob(x) : (const void *)sqlite3_value_text(x);
      v->n = (size_t)sqlite3_value_bytes(x);
      if (!v->p && v->n) return SQLITE_NOMEM;
      break;
    default: {
      int rc = vec_value(vt, c, x, vb);
      if (rc) return rc;
      v->p = vb;
      v->n = store_coldef_width(c);
    }
    }
    v->type = c->type;
    vb += store_coldef_width(c);
  }
  r->cols = vt->ncols ? vt->cv : NULL;
  return SQLITE_OK;
}

/* The declared columns an UPDATE leaves (type -1 in vt->cv) from the
** record at pos. */
static int keep_decl(memvt *vt, uint64_t pos) {
  for (int i = 0; i < vt->ncols; i++) {
    if (vt->cv[i].type != -1) continue;
    int rc = store_get_col(vt->st, pos, i, &vt->cv[i]);
    if (rc) return st_err(vt, rc);
  }
  return SQLITE_OK;
}

/* OR REPLACE: the live record other than id (and than keep) whose text
** primary key r's is goes first, as SQLite's REPLACE deletes the row a
** UNIQUE value conflicts with.  A store code. */
static int replace_key(memvt *vt, const store_rec *r, int64_t keep) {
  if (sqlite3_vtab_on_conflict(vt->db) != SQLITE_REPLACE || !r->cols) return STORE_OK;
  for (int i = 0; i < vt->ncols; i++) {
    if (vt->cdef[i].role != STORE_R_PKEY || r->cols[i].type != STORE_T_TEXT) continue;
    uint64_t pos;
    if (store_pkey_find(vt->st, r->cols[i].p, r->cols[i].n, &pos) != STORE_OK) return STORE_OK;
    int64_t other = store_pos_id(vt->st, pos);
    return other == r->id || other == keep ? STORE_OK : store_delete(vt->st, other);
  }
  return STORE_OK;
}

/* The columns of `same` (bits 1 << COL_*) of r from the record old. */
static int keep_columns(memvt *vt, int64_t old, unsigned same, store_rec *r) {
  uint64_t pos;
  store_view v;
  memset(&v, 0, sizeof v);
  if (store_find(vt->st, old, &pos) != STORE_OK) return SQLITE_OK; /* (gone: the put stands alone) */
  int rc = store_get(vt->st, pos, STORE_V_ALL & ~STORE_V_EMB, &v);
  if (rc) return st_err(vt, rc);
  const char *const *sv[6] = {&v.text, &v.source, &v.session, &v.tags, &v.tier, &v.meta};
  const size_t *sl[6] = {&v.text_len, &v.source_len, &v.session_len, &v.tags_len, &v.tier_len, &v.meta_len};
  const char **rv[6] = {&r->text, &r->source, &r->session, &r->tags, &r->tier, &r->meta};
  size_t *rl[6] = {&r->text_len, &r->source_len, &r->session_len, &r->tags_len, &r->tier_len, &r->meta_len};
  static const int scol[6] = {COL_TEXT, COL_SOURCE, COL_SESSION, COL_TAGS, COL_TIER, COL_META};
  for (int k = 0; k < 6; k++)
    if (same & 1u << scol[k]) {
      *rv[k] = *sv[k];
      *rl[k] = *sl[k];
    }
  if (same & 1u << COL_TS) r->ts = v.ts;
  if (same & 1u << COL_IMPORTANCE) r->importance = v.importance;
  if (same & 1u << COL_ACCESS_COUNT) r->access_count = v.access_count;
  if (same & 1u << COL_LAST_ACCESS) r->last_access = v.last_access;
  if (same & 1u << COL_EMB) { /* as float32, in the table's scratch */
    int has;
    if ((rc = h5mem_pos_emb(vt->st, pos, vt->vec, &has))) return st_err(vt, rc);
    r->emb = has ? vt->vec : NULL;
  }
  return SQLITE_OK;
}

static int id_arg(memvt *vt, sqlite3_value *v, int64_t *id, int *given) {
  char *msg = NULL;
  return vt_msg(vt, h5mem_value_id(v, "id", id, given, &msg), &msg);
}

/* INSERT INTO mem(mem, id [, last_access]) VALUES('touch', id [, t]): a use
** of memory id, access_count + 1 and last_access = t (default now), as a
** change in place (store_update_at), in the transaction. */
static int touch_command(memvt *vt, sqlite3_value **col) {
  int64_t id;
  int given, rc;
  if ((rc = id_arg(vt, col[COL_ID], &id, &given))) return rc;
  if (!given) return vt_err(vt, SQLITE_ERROR, "touch: the id of the memory is missing (INSERT INTO %s(%s, id) "
                            "VALUES('touch', 42))", vt->name, h5mem_table_command(vt));
  int64_t now = (int64_t)time(NULL);
  if (sqlite3_value_type(col[COL_LAST_ACCESS]) != SQLITE_NULL &&
      (rc = time_arg(vt, col[COL_LAST_ACCESS], "last_access", &now)))
    return rc;
  uint64_t pos;
  store_view v;
  memset(&v, 0, sizeof v);
  if (store_find(vt->st, id, &pos) != STORE_OK)
    return vt_err(vt, SQLITE_ERROR, "touch: no memory with id %lld in %s", (long long)id, vt->name);
  if ((rc = store_get(vt->st, pos, STORE_V_NUM, &v))) return st_err(vt, rc);
  store_patch p = {STORE_P_ACCESS_COUNT | STORE_P_LAST_ACCESS, 0, now, 0, NULL, 0};
  p.access_count = v.access_count < INT64_MAX ? v.access_count + 1 : INT64_MAX;
  rc = store_update_at(vt->st, pos, &p);
  return rc ? st_err(vt, rc) : SQLITE_OK;
}

const char *h5mem_table_command(const memvt *vt) { return cmd_column(vt->name, vt->cdef, vt->ncols); }

/* The commands.  'touch' and 'consolidate' are changes in the transaction
** (touch_command, mem_consolidate.c).  INSERT INTO mem(mem)
** VALUES('checkpoint' | 'optimize'): run at once, so
** that its failure (a full disk, busy readers) fails the statement; SQLite
** ignores what xCommit returns.  Only outside a transaction that changed
** the store: the commands move committed records, and a transaction's own
** changes are not committed yet.  The store's (empty) transaction is ended
** for the command and begun again after it. */
static int run_command(memvt *vt, sqlite3_value **col) {
  sqlite3_value *cmd = col[COL_CMD];
  const char *c = (const char *)sqlite3_value_text(cmd);
  if (c && !sqlite3_stricmp(c, "touch")) return touch_command(vt, col);
  if (c && !sqlite3_stricmp(c, "consolidate")) { /* in the transaction (mem_consolidate.c) */
    char *msg = NULL;
    int rc = h5mem_consolidate_cmd(vt, vt->st, col[COL_META], &msg);
    return rc == SQLITE_OK ? rc : vt_msg(vt, rc, &msg);
  }
  int opt = c && !sqlite3_stricmp(c, "optimize");
  if (!opt && !(c && !sqlite3_stricmp(c, "checkpoint")))
    return vt_err(vt, SQLITE_ERROR, "unknown command '%s' (known: 'checkpoint', 'optimize', 'touch', 'consolidate')",
                  c ? c : "");
  if (h5mem_tx_dirty(vt->tx.ms))
    return vt_err(vt, SQLITE_ERROR, "%s: this transaction has changed the store; COMMIT first, "
                  "then run the command", c);
  if (vt->tx.ms->holds)
    return vt_err(vt, SQLITE_BUSY, "%s: the table is being read by a query", c);
  h5mem_tx_rollback(vt->tx.ms);
  int rc = opt ? store_optimize(vt->st) : store_checkpoint(vt->st);
  int erc = rc ? st_err(vt, rc) : SQLITE_OK;
  char *msg = NULL;
  int brc = h5mem_tx_begin(vt->tx.ms, &msg);
  if (brc != SQLITE_OK) {
    if (erc == SQLITE_OK) return vt_msg(vt, brc, &msg);
    sqlite3_free(msg);
  }
  return erc;
}

/* ---- INSERTs held back to embed in one batch ----------------------------
**
** With an HTTP embedder, an INSERT of text without an embedding after the
** transaction's first write is held back (its id given at once: the
** writer lock is held) and embedded with the ones after it in one
** request: when embedder_batch
** rows wait, when the statement ends (xSync in autocommit; the statement
** savepoint's release in a transaction), and before anything else reads
** or writes the store (h5mem_tx_flush).  A batch that fails writes none
** of its rows and fails the statement that wrote it out, and the
** transaction cannot commit. */
struct pend_row {
  int64_t id;
  sqlite3_value **v; /* NCOLS + ncols copies (argv + 2) */
};

static void pend_discard(memvt *vt) {
  for (int i = 0; i < vt->npend; i++) {
    for (int c = 0; c < NCOLS + vt->ncols; c++) sqlite3_value_free(vt->pend[i].v[c]);
    sqlite3_free(vt->pend[i].v);
  }
  vt->npend = 0;
  if (vt->tx.ms && vt->tx.ms->pend == vt) vt->tx.ms->pend = NULL;
}

static int pend_flush(memvt *vt, char **pzErr) {
  int n = vt->npend, rc = SQLITE_OK, erc;
  size_t dim = (size_t)store_dim(vt->st);
  const char **tx = sqlite3_malloc64((sqlite3_uint64)n * sizeof *tx);
  size_t *tl = sqlite3_malloc64((sqlite3_uint64)n * sizeof *tl);
  uint8_t *has = sqlite3_malloc64((sqlite3_uint64)n);
  float *vec = sqlite3_malloc64((sqlite3_uint64)n * dim * sizeof *vec);
  embedder *e = NULL;
  if (!tx || !tl || !has || !vec) rc = SQLITE_NOMEM;
  for (int i = 0; i < n && !rc; i++) {
    tx[i] = (const char *)sqlite3_value_text(vt->pend[i].v[COL_TEXT]);
    tl[i] = (size_t)sqlite3_value_bytes(vt->pend[i].v[COL_TEXT]);
    if (!tx[i]) rc = SQLITE_NOMEM;
  }
  if (!rc && !(e = vt_embedder(vt, &rc))) rc = take_err(vt, rc, pzErr);
  char err[1200];
  if (!rc && (erc = embedder_embed(e, (size_t)n, tx, tl, vec, has, err, sizeof err)) != EMBED_OK) {
    rc = erc == EMBED_ENOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    if (rc != SQLITE_NOMEM)
      *pzErr = sqlite3_mprintf("%s: the %d rows held back to embed in one batch (ids %lld to %lld) were not "
                               "written: %s", vt->name, n, (long long)vt->pend[0].id, (long long)vt->pend[n - 1].id,
                               err);
  }
  for (int i = 0; i < n && !rc; i++) {
    store_rec r;
    vt->no_embed = 1;
    rc = record_from(vt, vt->pend[i].v, vt->pend[i].id, 0, &r);
    vt->no_embed = 0;
    if (rc) {
      rc = take_err(vt, rc, pzErr);
      break;
    }
    r.emb = has[i] ? vec + (size_t)i * dim : NULL;
    int src = store_put(vt->st, &r);
    if (src) rc = h5mem_store_err(vt->st, src, pzErr);
  }
  pend_discard(vt);
  sqlite3_free(tx);
  sqlite3_free(tl);
  sqlite3_free(has);
  sqlite3_free(vec);
  return rc;
}

/* Whether this INSERT (col: argv + 2) is held back: the store's embedder
** batches (HTTP), the writer lock is held already (the transaction wrote:
** the first row embeds before taking it, as the only row of a statement
** would), the row has text and no embedding, and nothing about it needs
** the row written now (OR REPLACE, a primary key column). */
static int pend_wanted(memvt *vt, sqlite3_value **col) {
  if (!vt->espec || vt->eblocked || strncmp(vt->espec, "openai:", 7) || vt->econf.batch == 1) return 0;
  if (vt->tx.ms->state != MS_OPEN) return 0;
  if (sqlite3_value_type(col[COL_TEXT]) == SQLITE_NULL || sqlite3_value_type(col[COL_EMB]) != SQLITE_NULL)
    return 0;
  if (sqlite3_vtab_on_conflict(vt->db) == SQLITE_REPLACE) return 0;
  for (int i = 0; i < vt->ncols; i++)
    if (vt->cdef[i].role == STORE_R_PKEY) return 0;
  return 1;
}

/* Hold back the INSERT of argv (id given or not), its id into *rowid. */
static int pend_add(memvt *vt, sqlite3_value **argv, int64_t id, int given, sqlite3_int64 *rowid) {
  memstore *ms = vt->tx.ms;
  sqlite3_value **col = argv + 2;
  char *msg = NULL;
  int rc = h5mem_tx_lock(ms, &msg);
  if (rc == SQLITE_OK && (ms->failed || (ms->pend && ms->pend != vt)))
    rc = h5mem_tx_flush(ms, &msg); /* (another table's rows; a failed batch's message) */
  if (rc != SQLITE_OK) return vt_msg(vt, rc, &msg);
  store_rec r; /* the row checked now, as it will be written */
  vt->no_embed = 1;
  rc = record_from(vt, col, id, 0, &r);
  vt->no_embed = 0;
  if (rc) return rc;
  int64_t top = store_max_id(vt->st);
  int taken = 0;
  for (int i = 0; i < vt->npend; i++) {
    if (vt->pend[i].id > top) top = vt->pend[i].id;
    taken |= given && vt->pend[i].id == id;
  }
  uint64_t pos;
  if (given && (taken || store_find(vt->st, id, &pos) == STORE_OK))
    return vt_err(vt, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.id (id %lld exists)", vt->name,
                  (long long)id);
  if (!given) {
    if (top == INT64_MAX) return vt_err(vt, SQLITE_FULL, "no ids left");
    id = top + 1;
  }
  if (vt->npend == vt->pcap) {
    int cap = vt->pcap ? 2 * vt->pcap : 16;
    struct pend_row *p = sqlite3_realloc64(vt->pend, (sqlite3_uint64)cap * sizeof *p);
    if (!p) return SQLITE_NOMEM;
    vt->pend = p;
    vt->pcap = cap;
  }
  int nv = NCOLS + vt->ncols;
  sqlite3_value **v = sqlite3_malloc64((sqlite3_uint64)nv * sizeof *v);
  if (!v) return SQLITE_NOMEM;
  for (int c = 0; c < nv; c++)
    if (!(v[c] = sqlite3_value_dup(col[c]))) {
      while (c--) sqlite3_value_free(v[c]);
      sqlite3_free(v);
      return SQLITE_NOMEM;
    }
  vt->pend[vt->npend++] = (struct pend_row){id, v};
  ms->pend = vt;
  ms->flush = pend_flush;
  ms->discard = pend_discard;
  *rowid = id;
  int batch = vt->econf.batch ? vt->econf.batch : EMBEDDER_BATCH;
  if (vt->npend < batch) return SQLITE_OK;
  rc = h5mem_tx_flush(ms, &msg);
  return rc == SQLITE_OK ? SQLITE_OK : vt_msg(vt, rc, &msg);
}

/* An UPDATE's changed columns as the next put's provenance fields (a JSON
** array of names): the fixed ones SQLite did not leave as they are (same:
** those it did, as bits of COL_*), the declared ones set, id when it moved. */
static int prov_fields(memvt *vt, unsigned same, int id_moved, char **out) {
  static const char *const fixed[COL_META + 1] = {"id", "text", "embedding", "source", "session", "tags", "ts",
                                                  "tier", "importance", "access_count", "last_access", "meta"};
  strbuf sb = {0};
  int n = 0, pc = prov_col(vt);
  strbuf_putc(&sb, '[');
  if (id_moved) strbuf_puts(&sb, n++ ? ",\"id\"" : "\"id\"");
  for (int j = COL_TEXT; j <= COL_META; j++)
    if (!(same & 1u << j)) {
      if (n++) strbuf_putc(&sb, ',');
      strbuf_json_string(&sb, fixed[j], strlen(fixed[j]));
    }
  for (int i = 0; i < vt->ncols; i++)
    if (i != pc && vt->cv[i].type != -1) {
      if (n++) strbuf_putc(&sb, ',');
      strbuf_json_string(&sb, vt->cdef[i].name, strlen(vt->cdef[i].name));
    }
  strbuf_putc(&sb, ']');
  if (strbuf_failed(&sb)) {
    strbuf_free(&sb);
    return SQLITE_NOMEM;
  }
  *out = sb.buf;
  return SQLITE_OK;
}

static int mem_update(sqlite3_vtab *base, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  if (FLEET(base)) return h5mem_fleet_module.xUpdate(base, argc, argv, rowid);
  memvt *vt = (memvt *)base;
  if (vt->missing) return vt_missing(vt);
  store *s = vt->st;
  char *msg = NULL;
  sqlite3_value **col = argv + 2;
  int insert = argc > 1 && sqlite3_value_type(argv[0]) == SQLITE_NULL &&
               sqlite3_value_type(col[COL_CMD]) == SQLITE_NULL;
  /* an INSERT embeds its text before it takes the writer lock (when no
     rows are held back: writing those needs the lock, and the scratch),
     or is held back to be embedded with the ones after it */
  int64_t id = 0;
  int given = 0, rc;
  if (insert) {
    if ((rc = id_arg(vt, argv[1], &id, &given))) return rc;
    if (!given && (rc = id_arg(vt, col[COL_ID], &id, &given))) return rc;
    if (pend_wanted(vt, col)) return pend_add(vt, argv, id, given, rowid);
  }
  int trc = insert && !vt->tx.ms->pend && !vt->tx.ms->failed ? SQLITE_OK : h5mem_tx_need(vt->tx.ms, &msg);
  if (trc != SQLITE_OK) return vt_msg(vt, trc, &msg);
  if (argc == 1) { /* DELETE */
    rc = store_delete(s, sqlite3_value_int64(argv[0]));
    return rc == STORE_ENOTFOUND ? SQLITE_OK : rc ? st_err(vt, rc) : SQLITE_OK;
  }
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL && sqlite3_value_type(col[COL_CMD]) != SQLITE_NULL)
    return run_command(vt, col);
  /* the new id: the rowid, else the id column, else the next one */
  if (!insert && (rc = id_arg(vt, argv[1], &id, &given))) return rc;
  if (!insert && !given && (rc = id_arg(vt, col[COL_ID], &id, &given))) return rc;
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) { /* UPDATE */
    int64_t old = sqlite3_value_int64(argv[0]);
    int64_t cid;
    int cg;
    if ((rc = id_arg(vt, col[COL_ID], &cid, &cg))) return rc;
    if (cg) id = cid; /* SET id = ... */
    else if (!given) id = old;
    store_rec r;
    if ((rc = record_from(vt, col, id, 1, &r))) return rc;
    /* the columns SQLite leaves as they are (mem_column did not read them)
    ** come from the record; when only the columns of a memory's life
    ** change, the record is not written again: a change in place */
    unsigned same = 0;
    for (int j = COL_TEXT; j <= COL_META; j++)
      if (sqlite3_value_nochange(col[j])) same |= 1u << j;
    const unsigned lifecols = 1u << COL_ACCESS_COUNT | 1u << COL_LAST_ACCESS | 1u << COL_IMPORTANCE |
                              1u << COL_TIER, all = ((1u << (COL_META + 1)) - 1) & ~1u;
    int decl_same = 1, pc = prov_col(vt);
    for (int i = 0; i < vt->ncols; i++) decl_same &= vt->cv[i].type == -1;
    /* (with provenance every UPDATE is a put, which records it) */
    if (id == old && (same | lifecols) == all && decl_same && pc < 0) {
      store_patch p = {0, r.access_count, r.last_access, r.importance, r.tier, r.tier_len};
      if (!(same & 1u << COL_ACCESS_COUNT)) p.set |= STORE_P_ACCESS_COUNT;
      if (!(same & 1u << COL_LAST_ACCESS)) p.set |= STORE_P_LAST_ACCESS;
      if (!(same & 1u << COL_IMPORTANCE)) p.set |= STORE_P_IMPORTANCE;
      if (!(same & 1u << COL_TIER)) p.set |= STORE_P_TIER;
      rc = p.set ? store_update(s, id, &p) : STORE_OK;
      if (rc == STORE_ENOTFOUND) rc = STORE_OK; /* (gone: as a DELETE of it) */
      if (rc) return st_err(vt, rc);
      *rowid = id;
      return SQLITE_OK;
    }
    char *fields = NULL; /* (what the UPDATE sets, before the kept columns are filled in) */
    if (pc >= 0 && (rc = prov_fields(vt, same, id != old, &fields))) return rc;
    if (same && (rc = keep_columns(vt, old, same, &r))) {
      free(fields);
      return rc;
    }
    if (vt->ncols) { /* (the declared columns SQLite left as they are) */
      uint64_t opos;
      int kept = 0;
      for (int i = 0; i < vt->ncols; i++) kept |= vt->cv[i].type == -1;
      if (kept && store_find(s, old, &opos) == STORE_OK && (rc = keep_decl(vt, opos))) {
        free(fields);
        return rc;
      }
      for (int i = 0; i < vt->ncols; i++)
        if (vt->cv[i].type == -1) vt->cv[i].type = 0; /* (the record was gone) */
    }
    uint64_t pos;
    if (id != old && store_find(s, id, &pos) == STORE_OK &&
        sqlite3_vtab_on_conflict(vt->db) != SQLITE_REPLACE) {
      free(fields);
      return vt_err(vt, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.id (id %lld exists)",
                    vt->name, (long long)id);
    }
    rc = fields ? store_prov_fields(s, fields) : STORE_OK;
    free(fields);
    if (rc) return st_err(vt, rc);
    /* the deletes and the put succeed or fail together (SQLite has no
       statement savepoint to undo a failing UPDATE with) */
    uint64_t mark = store_mark(s);
    if ((id != old && (rc = store_delete(s, id)) && rc != STORE_ENOTFOUND) ||
        ((rc = store_delete(s, old)) && rc != STORE_ENOTFOUND) || (rc = replace_key(vt, &r, old)) ||
        (rc = store_put(s, &r))) {
      rc = st_err(vt, rc);
      store_undo_to(s, mark);
      store_prov_fields(s, NULL); /* (when the put was not reached) */
      return rc;
    }
    *rowid = id;
    return SQLITE_OK;
  }
  /* INSERT */
  store_rec r;
  if ((rc = record_from(vt, col, id, 0, &r))) return rc; /* (its embedding made) */
  if ((trc = h5mem_tx_need(vt->tx.ms, &msg)) != SQLITE_OK) return vt_msg(vt, trc, &msg);
  if (!given) {
    if (store_max_id(s) == INT64_MAX) return vt_err(vt, SQLITE_FULL, "no ids left");
    r.id = id = store_max_id(s) + 1;
  }
  uint64_t pos;
  int taken = store_find(s, id, &pos) == STORE_OK;
  if (taken && sqlite3_vtab_on_conflict(vt->db) != SQLITE_REPLACE)
    return vt_err(vt, SQLITE_CONSTRAINT, "UNIQUE constraint failed: %s.id (id %lld exists)",
                  vt->name, (long long)id);
  uint64_t mark = store_mark(s);
  if ((taken && (rc = store_delete(s, id))) || (rc = replace_key(vt, &r, id)) || (rc = store_put(s, &r))) {
    rc = st_err(vt, rc);
    store_undo_to(s, mark); /* OR REPLACE's delete too */
    return rc;
  }
  *rowid = id;
  return SQLITE_OK;
}

/* The transaction methods are the shared store's (h5mem_vt_*), with the
** table's messages. */
static int mem_tx_msg(sqlite3_vtab *base, int rc, char **msg) { return vt_msg((memvt *)base, rc, msg); }
static int mem_tx_missing(sqlite3_vtab *base) { return vt_missing((memvt *)base); }

/* Whether schema has a table, index, view or trigger called name. */
static int schema_has(sqlite3 *db, const char *schema, const char *name) {
  char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE name = ?1 COLLATE NOCASE", schema);
  sqlite3_stmt *st = NULL;
  int yes = 0;
  if (sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    yes = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  sqlite3_free(sql);
  return yes;
}

/* ALTER TABLE mem RENAME TO name renames its companion tables mem_entities,
** mem_relations, mem_mentions (made by their modules) to name_entities ...,
** as FTS5 renames its shadow tables; a companion's CREATE statement still
** names mem, and a companion called <t>_entities belongs to the h5mem
** table t (vtab_graph.c).  A companion's new name taken refuses the rename
** before anything is renamed. */
static int rename_companions(memvt *vt, const char *name) {
  char *from[3] = {0}, *to[3] = {0};
  int own[3] = {0}, rc = SQLITE_OK;
  for (int k = 0; k < 3 && rc == SQLITE_OK; k++) {
    from[k] = sqlite3_mprintf("%s_%s", vt->name, h5mem_companion[k]);
    to[k] = sqlite3_mprintf("%s_%s", name, h5mem_companion[k]);
    if (!from[k] || !to[k]) {
      rc = SQLITE_NOMEM;
    } else if ((own[k] = sqlite3_stricmp(from[k], to[k]) && is_companion(vt->db, vt->schema, from[k], k)) &&
               schema_has(vt->db, vt->schema, to[k])) {
      rc = vt_err(vt, SQLITE_ERROR, "cannot rename %s to %s: its companion table %s would be renamed to %s, "
                  "a name taken", vt->name, name, from[k], to[k]);
    }
  }
  for (int k = 0; k < 3 && rc == SQLITE_OK; k++) {
    if (!own[k]) continue;
    char *sql = sqlite3_mprintf("ALTER TABLE \"%w\".\"%w\" RENAME TO \"%w\"", vt->schema, from[k], to[k]);
    char *err = NULL;
    rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM)
      vt_err(vt, rc, "renaming %s to %s: %s", from[k], to[k], err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    sqlite3_free(sql);
  }
  for (int k = 0; k < 3; k++) {
    sqlite3_free(from[k]);
    sqlite3_free(to[k]);
  }
  return rc;
}

/* The table's name and its store's key become name; its companions follow
** (rename_companions).  The store handle stays, and with it the writer's
** lock and the open transaction: what it wrote before the rename is seen
** after it and commits or rolls back with what it writes after it. */
static int mem_rename(sqlite3_vtab *base, const char *name) {
  if (FLEET(base)) return h5mem_fleet_module.xRename(base, name);
  memvt *vt = (memvt *)base;
  if (vt->missing) return vt_missing(vt); /* (it has no store to go by the new name) */
  if (vt->st && store_is_ephemeral(vt->st)) /* (its name is its store's in the whole process) */
    return vt_err(vt, SQLITE_ERROR, "%s is an ephemeral table: its name names its store in the process (the "
                   "other connections' tables of that name share it), so it is not renamed; make a new one and "
                   "INSERT INTO new SELECT ... FROM %s", vt->name, vt->name);
  char *n = sqlite3_mprintf("%s", name);
  /* the store goes by the new key too: SQLite connects the renamed table
  ** before it lets go of this one, which must not open the store twice */
  char *key = sqlite3_mprintf("%s.%s", vt->schema, name);
  int rc = n && key ? rename_companions(vt, name) : SQLITE_NOMEM;
  if (rc != SQLITE_OK) {
    sqlite3_free(n);
    sqlite3_free(key);
    return rc;
  }
  sqlite3_free(vt->name);
  vt->name = n;
  h5mem_store_rekey(vt->tx.ms, key);
  return SQLITE_OK;
}

/* SQLite honours a constraint's omit only for its first 16 constraints: a
** MATCH further down the list (many conditions in the WHERE clause) is
** evaluated by SQLite as well, on the rows the KNN plan gave, where it
** holds by construction.  (A plan without the MATCH is never chosen: the
** best index refuses an unusable one.) */
static void match_holds(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  /* (the left side is the column's value, argv[1]: a vector, which the
  ** table returns with its subtype; any other column's MATCH is an error,
  ** as without this function) */
  unsigned st = argc == 2 ? sqlite3_value_subtype(argv[1]) : 0;
  if (argc == 2 && sqlite3_value_type(argv[1]) == SQLITE_BLOB &&
      (st == EXT_SUBTYPE_F32 || st == EXT_SUBTYPE_F16 || st == EXT_SUBTYPE_INT8 || st == EXT_SUBTYPE_BIT))
    sqlite3_result_int(ctx, 1);
  else
    sqlite3_result_error(ctx, "h5mem: MATCH works on the embedding and declared vector columns, with `k = N` "
                              "(the KNN form)", -1);
}

static int mem_find_function(sqlite3_vtab *base, int nArg, const char *name,
                             void (**fn)(sqlite3_context *, int, sqlite3_value **), void **arg) {
  (void)base;
  if (nArg != 2 || sqlite3_stricmp(name, "match")) return 0;
  *fn = match_holds;
  *arg = NULL;
  return 1;
}

static sqlite3_module mem_module = {
    .iVersion = 2,
    .xCreate = mem_create,
    .xConnect = mem_connect,
    .xBestIndex = mem_best_index,
    .xDisconnect = mem_disconnect,
    .xDestroy = mem_destroy, /* DROP TABLE leaves the store's files alone */
    .xOpen = mem_open,
    .xClose = mem_close,
    .xFilter = mem_filter,
    .xNext = mem_next,
    .xEof = mem_eof,
    .xColumn = mem_column,
    .xRowid = mem_rowid,
    .xUpdate = mem_update,
    .xRename = mem_rename,
    .xFindFunction = mem_find_function,
    /* the transaction: shared with the companion tables (vtab_int.h) */
    .xBegin = h5mem_vt_begin,
    .xSync = h5mem_vt_sync,
    .xCommit = h5mem_vt_commit,
    .xRollback = h5mem_vt_rollback,
    .xSavepoint = h5mem_vt_savepoint,
    .xRelease = h5mem_vt_release,
    .xRollbackTo = h5mem_vt_rollback_to,
};

int ext_vtab_h5mem_register(sqlite3 *db) {
  /* each module and function registered takes a reference
  ** (h5mem_registry_module/_function; SQLite lets it go, on failure too);
  ** the one h5mem_registry_new gives is ours until registration ends */
  registry *reg = h5mem_registry_new(db);
  if (!reg) return SQLITE_NOMEM;
  int rc = h5mem_registry_module(db, reg, "h5mem", &mem_module);
  if (rc == SQLITE_OK) rc = h5mem_func_register(db, reg);
  if (rc == SQLITE_OK) rc = h5mem_sign_register(db, reg);
  if (rc == SQLITE_OK) rc = h5mem_life_register(db, reg);
  if (rc == SQLITE_OK) rc = ext_vtab_search_register(db, reg);
  if (rc == SQLITE_OK) rc = ext_vtab_graph_register(db, reg);
  if (rc == SQLITE_OK) rc = ext_func_graph_register(db, reg);
  h5mem_registry_unref(reg);
  return rc;
}
