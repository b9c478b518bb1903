/*
** lib/store/store_graph.c - the knowledge graph's tables (store_int.h;
** docs/FORMAT.md, "The knowledge graph").
**
** Each table is an array of its live records (and, inside a transaction,
** the ones deleted since the last checkpoint, flagged), an id -> position
** map, and for mentions a (memory, entity) -> position map.  A record
** knows its row in the file (-1: not written yet); a checkpoint appends
** the unwritten live records and the rows of the deleted written ones,
** then gstore_rebase numbers the new rows and drops the dead records.
**
** In the log a change is one op: 'E', 'R', 'M' (a record: id, a, b, ts,
** weight, then four strings as a uint32 length (0xFFFFFFFF: NULL) and the
** bytes) or 'e', 'r', 'm' (an id deleted), little-endian.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/graph.h"
#include "store_int.h"
#include "util/utf8.h"
#include "util/check.h"

enum { F_ID, F_A, F_B, F_TS, F_W, F_S0, F_S1, F_S2, F_S3 };

typedef struct gcol {
  const char *name;
  int f;
} gcol;

static const char *const tab_name[STORE_G_NTABLES] = {"entities", "relations", "mentions"};
static const gcol cols[STORE_G_NTABLES][7] = {
    {{"id", F_ID}, {"name", F_S0}, {"type", F_S1}, {"aliases", F_S2}, {"meta", F_S3}},
    {{"id", F_ID}, {"src", F_A}, {"dst", F_B}, {"type", F_S1}, {"weight", F_W}, {"ts", F_TS},
     {"meta", F_S3}},
    {{"id", F_ID}, {"memory", F_A}, {"entity", F_B}},
};
static const int ncols[STORE_G_NTABLES] = {5, 7, 3};
static const char ops[STORE_G_NTABLES] = {'E', 'R', 'M'};

typedef struct grow {
  int64_t id, a, b, ts;
  double weight;
  char *s[4];   /* inside blk (or the table's arena), NUL-terminated; NULL: absent */
  uint32_t n[4];
  char *blk;    /* NULL: no strings, or strings in the arena */
  int64_t row;  /* its row in the file; -1: not written yet */
  int dead;     /* deleted since the checkpoint (row >= 0: its row is to be marked) */
} grow;

/* The strings of the records read from the file, in chunks freed with
** the table (a record deleted later leaves its bytes here until then: at
** most what the file held when it was read). */
typedef struct garena {
  struct garena *next;
  size_t used, cap;
  char data[];
} garena;

typedef struct gtab {
  garena *arena;
  grow *r;
  uint64_t n, cap;
  idmap ids;   /* live records */
  idmap pairs; /* mentions: hash of (memory, entity) -> position, live records */
  int64_t max_id;
  uint64_t live;
  uint64_t nfile; /* rows in the file */
} gtab;

struct gstore {
  gtab t[STORE_G_NTABLES];
  uint64_t version;
  /* the adjacency, as of adj_version, and its relation types */
  kg_adj *adj;
  uint64_t adj_version;
  int have_adj;
  const char **tname;
  size_t *tlen;
  uint32_t ntypes;
  idmap tmap; /* hash of a type -> code */
  int checked; /* gstore_checked */
};

int gstore_new(gstore **out, uint64_t version) {
  *out = calloc(1, sizeof **out);
  if (*out) (*out)->version = version;
  return *out ? STORE_OK : STORE_ENOMEM;
}

uint64_t gstore_version(const gstore *g) { return g ? g->version : 0; }

static void types_free(gstore *g) {
  kg_adj_free(g->adj);
  g->adj = NULL;
  free(g->tname);
  free(g->tlen);
  g->tname = NULL;
  g->tlen = NULL;
  g->ntypes = 0;
  idmap_free(&g->tmap);
  g->have_adj = 0;
}

void gstore_free(gstore *g) {
  if (!g) return;
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    for (uint64_t i = 0; i < g->t[t].n; i++) free(g->t[t].r[i].blk);
    for (garena *a = g->t[t].arena, *nx; a; a = nx) {
      nx = a->next;
      free(a);
    }
    free(g->t[t].r);
    idmap_free(&g->t[t].ids);
    idmap_free(&g->t[t].pairs);
  }
  types_free(g);
  free(g);
}

static int64_t pair_key(int64_t a, int64_t b) {
  uint64_t v[2] = {(uint64_t)a, (uint64_t)b};
  return (int64_t)XXH64(v, sizeof v, 0x6d656e74);
}

/* The live mention (a, b), or UINT64_MAX. */
static uint64_t pair_find(const gtab *tb, int64_t a, int64_t b) {
  const uint64_t *v = idmap_slot(&tb->pairs, pair_key(a, b));
  if (!v) return UINT64_MAX;
  const grow *r = &tb->r[*v];
  if (r->a == a && r->b == b) return *v;
  for (uint64_t i = 0; i < tb->n; i++) /* (a 64-bit hash collision: look everywhere) */
    if (!tb->r[i].dead && tb->r[i].a == a && tb->r[i].b == b) return i;
  return UINT64_MAX;
}

/* n bytes in tb's arena, or NULL (out of memory). */
static char *arena_take(gtab *tb, size_t n) {
  garena *a = tb->arena;
  if (!a || a->cap - a->used < n) {
    size_t cap = n > (256u << 10) ? n : 256u << 10;
    a = malloc(sizeof *a + cap);
    if (!a) return NULL;
    a->used = 0;
    a->cap = cap;
    a->next = tb->arena;
    tb->arena = a;
  }
  char *p = a->data + a->used;
  a->used += n;
  return p;
}

/* A record of t from r: its strings copied into one block, taken from
** arena when given (a table's load), else from malloc (w->blk). */
static int row_make(int t, const store_grec *r, grow *w, gtab *arena) {
  memset(w, 0, sizeof *w);
  w->id = r->id;
  w->row = -1;
  if (t != STORE_G_ENTITY) {
    w->a = r->a;
    w->b = r->b;
  }
  if (t == STORE_G_RELATION) {
    w->ts = r->ts;
    w->weight = r->weight;
  }
  size_t total = 0;
  for (int k = 0; k < 4; k++) {
    int used = t == STORE_G_ENTITY || (t == STORE_G_RELATION && (k == 1 || k == 3));
    if (!used || !r->s[k]) continue;
    if (r->n[k] >= UINT32_MAX) return STORE_EINVAL;
    total += r->n[k] + 1;
  }
  if (!total) return STORE_OK;
  char *p = arena ? arena_take(arena, total) : (w->blk = malloc(total));
  if (!p) return STORE_ENOMEM;
  for (int k = 0; k < 4; k++) {
    int used = t == STORE_G_ENTITY || (t == STORE_G_RELATION && (k == 1 || k == 3));
    if (!used || !r->s[k]) continue;
    if (r->n[k]) memcpy(p, r->s[k], r->n[k]);
    p[r->n[k]] = 0;
    w->s[k] = p;
    w->n[k] = (uint32_t)r->n[k];
    p += r->n[k] + 1;
  }
  return STORE_OK;
}

/* Add w (taking its block) as a live record at the end of t's array. */
static int row_add(gstore *g, int t, grow *w) {
  gtab *tb = &g->t[t];
  if (tb->n == tb->cap) {
    uint64_t cap = tb->cap ? tb->cap * 2 : 64;
    grow *nr = realloc(tb->r, cap * sizeof *nr);
    if (!nr) return STORE_ENOMEM;
    tb->r = nr;
    tb->cap = cap;
  }
  if (idmap_put(&tb->ids, w->id, tb->n)) return STORE_ENOMEM;
  if (t == STORE_G_MENTION && idmap_put(&tb->pairs, pair_key(w->a, w->b), tb->n)) {
    idmap_del(&tb->ids, w->id);
    return STORE_ENOMEM;
  }
  tb->r[tb->n++] = *w;
  tb->live++;
  if (w->id > tb->max_id) tb->max_id = w->id;
  g->version++;
  return STORE_OK;
}

/* r put in t (its strings in t's arena when loading, else a block of its own). */
static int gput(gstore *g, int t, const store_grec *r, int loading) {
  gtab *tb = &g->t[t];
  if (idmap_slot(&tb->ids, r->id)) return STORE_EEXISTS;
  if (t == STORE_G_MENTION && pair_find(tb, r->a, r->b) != UINT64_MAX) return STORE_EEXISTS;
  grow w;
  int rc = row_make(t, r, &w, loading ? tb : NULL);
  if (!rc) rc = row_add(g, t, &w);
  if (rc) free(w.blk);
  return rc;
}

int gstore_put(gstore *g, int t, const store_grec *r) {
  if (t < 0 || t >= STORE_G_NTABLES) return STORE_EINVAL;
  return gput(g, t, r, 0);
}

int gstore_delete(gstore *g, int t, int64_t id, uint64_t *pos) {
  if (t < 0 || t >= STORE_G_NTABLES) return STORE_EINVAL;
  gtab *tb = &g->t[t];
  const uint64_t *v = idmap_slot(&tb->ids, id);
  if (!v) return STORE_ENOTFOUND;
  uint64_t p = *v;
  grow *w = &tb->r[p];
  w->dead = 1;
  idmap_del(&tb->ids, id);
  if (t == STORE_G_MENTION) idmap_del(&tb->pairs, pair_key(w->a, w->b));
  tb->live--;
  g->version++;
  *pos = p;
  return STORE_OK;
}

void gstore_undo(gstore *g, int t, int insert, uint64_t pos) {
  gtab *tb = &g->t[t];
  g->version++;
  if (insert) { /* the last record */
    grow *w = &tb->r[--tb->n];
    idmap_del(&tb->ids, w->id);
    if (t == STORE_G_MENTION) idmap_del(&tb->pairs, pair_key(w->a, w->b));
    free(w->blk);
    tb->live--;
    return;
  }
  grow *w = &tb->r[pos];
  w->dead = 0;
  /* (the slots were just freed: no growth, no failure) */
  int prc = idmap_put(&tb->ids, w->id, pos);
  if (t == STORE_G_MENTION && prc == STORE_OK) prc = idmap_put(&tb->pairs, pair_key(w->a, w->b), pos);
  UTIL_ASSERT(prc == STORE_OK);
  tb->live++;
}

/* ---- the store's public functions ------------------------------------ */

uint64_t store_g_npos(const store *s, int t) {
  const gstore *g = store_gstore((store *)s);
  return g && t >= 0 && t < STORE_G_NTABLES ? g->t[t].n : 0;
}

uint64_t store_g_count(const store *s, int t) {
  const gstore *g = store_gstore((store *)s);
  return g && t >= 0 && t < STORE_G_NTABLES ? g->t[t].live : 0;
}

int store_g_find(const store *s, int t, int64_t id, uint64_t *pos) {
  const gstore *g = store_gstore((store *)s);
  if (!g || t < 0 || t >= STORE_G_NTABLES) return STORE_EINVAL;
  const uint64_t *v = idmap_slot(&g->t[t].ids, id);
  if (!v) return STORE_ENOTFOUND;
  *pos = *v;
  return STORE_OK;
}

int store_g_get(const store *s, int t, uint64_t pos, store_grec *r) {
  const gstore *g = store_gstore((store *)s);
  memset(r, 0, sizeof *r);
  if (!g || t < 0 || t >= STORE_G_NTABLES) return STORE_EINVAL;
  if (pos >= g->t[t].n || g->t[t].r[pos].dead) return STORE_ENOTFOUND;
  const grow *w = &g->t[t].r[pos];
  r->id = w->id;
  r->a = w->a;
  r->b = w->b;
  r->ts = w->ts;
  r->weight = w->weight;
  for (int k = 0; k < 4; k++) {
    r->s[k] = w->s[k];
    r->n[k] = w->n[k];
  }
  return STORE_OK;
}

int64_t store_g_max_id(const store *s, int t) {
  const gstore *g = store_gstore((store *)s);
  return g && t >= 0 && t < STORE_G_NTABLES ? g->t[t].max_id : 0;
}

uint64_t store_g_version(const store *s) {
  const gstore *g = store_gstore((store *)s);
  return g ? g->version : 0;
}

/* ---- the adjacency ------------------------------------------------------ */

static uint32_t type_find(const gstore *g, const char *p, size_t n) {
  const uint64_t *v = idmap_slot(&g->tmap, (int64_t)XXH64(p, n, 0));
  if (v && g->tlen[*v] == n && !memcmp(g->tname[*v], p, n)) return (uint32_t)*v;
  if (!v) return UINT32_MAX;
  for (uint32_t i = 0; i < g->ntypes; i++) /* (a hash collision) */
    if (g->tlen[i] == n && !memcmp(g->tname[i], p, n)) return i;
  return UINT32_MAX;
}

static int adj_build(gstore *g) {
  types_free(g);
  const gtab *te = &g->t[STORE_G_ENTITY], *tr = &g->t[STORE_G_RELATION];
  int64_t *ents = malloc((te->live ? te->live : 1) * sizeof *ents);
  kg_edge *edges = malloc((tr->live ? tr->live : 1) * sizeof *edges);
  g->tname = malloc((tr->live ? tr->live : 1) * sizeof *g->tname);
  g->tlen = malloc((tr->live ? tr->live : 1) * sizeof *g->tlen);
  int rc = ents && edges && g->tname && g->tlen ? STORE_OK : STORE_ENOMEM;
  uint64_t ne = 0, nr = 0;
  for (uint64_t i = 0; !rc && i < te->n; i++)
    if (!te->r[i].dead) ents[ne++] = te->r[i].id;
  for (uint64_t i = 0; !rc && i < tr->n; i++) {
    const grow *w = &tr->r[i];
    if (w->dead) continue;
    const char *tp = w->s[1] ? w->s[1] : "";
    size_t tn = w->s[1] ? w->n[1] : 0;
    uint32_t code = type_find(g, tp, tn);
    if (code == UINT32_MAX) {
      code = g->ntypes++;
      g->tname[code] = tp;
      g->tlen[code] = tn;
      uint64_t h = XXH64(tp, tn, 0);
      if (!idmap_slot(&g->tmap, (int64_t)h) && idmap_put(&g->tmap, (int64_t)h, code)) rc = STORE_ENOMEM;
    }
    edges[nr++] = (kg_edge){w->id, w->a, w->b, code, w->weight};
  }
  if (!rc) {
    /* (KG_EINVAL here: two entities with one id, which a store whose
    ** ids are unique by construction holds only when damaged) */
    int kr = kg_adj_build(ents, ne, edges, nr, &g->adj);
    rc = kr == KG_EINVAL ? STORE_ECORRUPT : kr;
  }
  free(ents);
  free(edges);
  if (rc) {
    types_free(g);
    return rc;
  }
  g->have_adj = 1;
  g->adj_version = g->version;
  return STORE_OK;
}

int store_g_adj(store *s, const kg_adj **out) {
  gstore *g = store_gstore(s);
  *out = NULL;
  if (!g) return STORE_EINVAL;
  if (!g->have_adj || g->adj_version != g->version) {
    int rc = adj_build(g);
    if (rc) return store_set_error(s, rc, rc == STORE_ENOMEM ? "out of memory"
                                                               : "the graph has two entities with one id");
  }
  *out = g->adj;
  return STORE_OK;
}

uint32_t store_g_type_code(store *s, const char *type, size_t n) {
  const kg_adj *a;
  if (store_g_adj(s, &a) != STORE_OK) return UINT32_MAX;
  return type_find(store_gstore(s), type ? type : "", type ? n : 0);
}

const char *store_g_type_name(store *s, uint32_t code, size_t *n) {
  gstore *g = store_gstore(s);
  if (!g || !g->have_adj || g->adj_version != g->version || code >= g->ntypes) return NULL;
  *n = g->tlen[code];
  return g->tname[code];
}

/* ---- the log ------------------------------------------------------------ */

int gstore_is_op(uint8_t op) { return op && memchr("ERMerm", op, 6) != NULL; }

int gstore_encode(const gstore *g, int t, int insert, uint64_t pos,
                  int (*put)(void *ctx, const void *p, size_t n), void *ctx) {
  const grow *w = &g->t[t].r[pos];
  char op = insert ? ops[t] : (char)(ops[t] + ('a' - 'A'));
  int bad = put(ctx, &op, 1) | put(ctx, &w->id, 8);
  if (!insert) return bad;
  bad |= put(ctx, &w->a, 8) | put(ctx, &w->b, 8) | put(ctx, &w->ts, 8) | put(ctx, &w->weight, 8);
  for (int k = 0; k < 4; k++) {
    uint32_t n = w->s[k] ? w->n[k] : UINT32_MAX;
    bad |= put(ctx, &n, 4);
    if (w->s[k]) bad |= put(ctx, w->s[k], w->n[k]);
  }
  return bad;
}

static const uint8_t *take(const uint8_t **p, const uint8_t *end, size_t n) {
  if ((size_t)(end - *p) < n) return NULL;
  const uint8_t *q = *p;
  *p += n;
  return q;
}

int gstore_replay(gstore *g, uint8_t op, const uint8_t **p, const uint8_t *end) {
  int t = op == 'E' || op == 'e' ? STORE_G_ENTITY : op == 'R' || op == 'r' ? STORE_G_RELATION
                                                                       : STORE_G_MENTION;
  const uint8_t *q = take(p, end, 8);
  if (!q) return STORE_ECORRUPT;
  int64_t id;
  memcpy(&id, q, 8);
  if (op >= 'a') {
    uint64_t pos;
    return gstore_delete(g, t, id, &pos);
  }
  store_grec r;
  memset(&r, 0, sizeof r);
  r.id = id;
  if (!(q = take(p, end, 32))) return STORE_ECORRUPT;
  memcpy(&r.a, q, 8);
  memcpy(&r.b, q + 8, 8);
  memcpy(&r.ts, q + 16, 8);
  memcpy(&r.weight, q + 24, 8);
  for (int k = 0; k < 4; k++) {
    if (!(q = take(p, end, 4))) return STORE_ECORRUPT;
    uint32_t n;
    memcpy(&n, q, 4);
    if (n == UINT32_MAX) continue;
    if (!(q = take(p, end, n))) return STORE_ECORRUPT;
    r.s[k] = (const char *)q;
    r.n[k] = n;
    /* the strings the table keeps, as store_g_put checks them */
    int used = t == STORE_G_ENTITY || (t == STORE_G_RELATION && k % 2);
    if (used && util_utf8_check(r.s[k], n, 0) != n) return STORE_EINVAL;
  }
  return gstore_put(g, t, &r);
}

/* ---- the file ----------------------------------------------------------- */

static int col_kind(int f) { return f == F_W ? 2 : f >= F_S0 ? 1 : 0; } /* 0 int64, 1 string, 2 float64 */

/* A table's dataset d read whole into *buf (elements of esz bytes): n rows. */
static int read_col(h5_file *f, h5_obj *grp, const char *name, int kind, uint64_t *n, uint8_t **buf,
                    char *err, size_t errlen, const char *tname) {
  h5_obj *d;
  h5_dset_info in;
  *buf = NULL;
  int ok = store_open_child(f, grp, name, &d) == H5_OK && h5_dset_info_get(d, &in) == H5_OK &&
           in.rank == 1;
  if (ok) {
    if (kind == 1) ok = in.type->cls == H5_CLASS_VLEN && in.type->vlen_kind == 1;
    else if (kind == 2) ok = in.type->cls == H5_CLASS_FLOAT && in.type->size == 8 && !in.type->big_endian;
    else ok = in.type->cls == H5_CLASS_INTEGER && in.type->size == 8 && !in.type->big_endian;
  }
  if (!ok) {
    snprintf(err, errlen, "/graph/%s/%s is missing or of the wrong type", tname, name);
    return STORE_ECORRUPT;
  }
  size_t esz = in.type->size;
  if (in.dims[0] > SIZE_MAX / (esz ? esz : 1) / 2) {
    snprintf(err, errlen, "/graph/%s/%s is too large", tname, name);
    return STORE_ECORRUPT;
  }
  *n = in.dims[0];
  *buf = malloc(in.dims[0] * esz + 1);
  if (!*buf) return STORE_ENOMEM;
  if (in.dims[0] && h5_dset_read(d, *buf, in.dims[0] * esz) != H5_OK) {
    snprintf(err, errlen, "/graph/%s/%s: %s", tname, name, h5_errmsg(f));
    free(*buf);
    *buf = NULL;
    return STORE_ECORRUPT;
  }
  return STORE_OK;
}

static int load_table(gstore *g, h5_file *f, h5_obj *root, int t, char *err, size_t errlen) {
  const char *tn = tab_name[t];
  const h5_link *l;
  h5_obj *grp;
  char path[64];
  snprintf(path, sizeof path, "/graph/%s", tn);
  if (h5_obj_open_path(f, path, &grp) != H5_OK) return STORE_OK; /* none yet */
  (void)root;
  uint8_t *col[7] = {0}, *del = NULL;
  uint64_t n = 0, ndel = 0;
  int rc = STORE_OK;
  for (int c = 0; c < ncols[t] && !rc; c++) {
    uint64_t m;
    rc = read_col(f, grp, cols[t][c].name, col_kind(cols[t][c].f), &m, &col[c], err, errlen, tn);
    if (!rc && c && m != n) {
      snprintf(err, errlen, "/graph/%s: columns of different lengths", tn);
      rc = STORE_ECORRUPT;
    }
    if (!c) n = m;
  }
  if (!rc && h5_group_find(grp, "deleted", &l) == H5_OK)
    rc = read_col(f, grp, "deleted", 0, &ndel, &del, err, errlen, tn);
  uint8_t *dead = rc ? NULL : calloc(n ? n : 1, 1);
  if (!rc && !dead) rc = STORE_ENOMEM;
  for (uint64_t i = 0; !rc && i < ndel; i++) {
    int64_t r;
    memcpy(&r, del + 8 * i, 8);
    if (r < 0 || (uint64_t)r >= n) {
      snprintf(err, errlen, "/graph/%s/deleted lists row %lld of %llu", tn, (long long)r,
               (unsigned long long)n);
      rc = STORE_ECORRUPT;
    } else {
      dead[r] = 1;
    }
  }
  gtab *tb = &g->t[t];
  /* room for every live row at once: no array or map grown row by row
  ** (each growth copies what is there into memory new to the process) */
  if (!rc) {
    uint64_t live = 0;
    for (uint64_t i = 0; i < n; i++) live += !dead[i];
    uint64_t want = tb->n + live;
    if (want > tb->cap) {
      grow *nr = want > SIZE_MAX / sizeof *nr ? NULL : realloc(tb->r, want * sizeof *nr);
      if (!nr) rc = STORE_ENOMEM;
      else {
        tb->r = nr;
        tb->cap = want;
      }
    }
    if (!rc) rc = idmap_reserve(&tb->ids, tb->ids.n + live);
    if (!rc && t == STORE_G_MENTION) rc = idmap_reserve(&tb->pairs, tb->pairs.n + live);
  }
  for (uint64_t i = 0; !rc && i < n; i++) {
    store_grec r;
    memset(&r, 0, sizeof r);
    for (int c = 0; c < ncols[t] && !rc; c++) {
      int fl = cols[t][c].f;
      if (dead[i] && fl != F_ID) continue; /* (only its id counts) */
      const uint8_t *e = col[c] + i * (col_kind(fl) == 1 ? 16 : 8);
      int64_t v;
      memcpy(&v, e, 8);
      switch (fl) {
      case F_ID: r.id = v; break;
      case F_A: r.a = v; break;
      case F_B: r.b = v; break;
      case F_TS: r.ts = v; break;
      case F_W: memcpy(&r.weight, e, 8); break;
      default: {
        const uint8_t *data;
        size_t len;
        uint32_t cnt;
        if (h5_vlen_get(f, e, &data, &len, &cnt) != H5_OK) {
          snprintf(err, errlen, "/graph/%s/%s row %llu: %s", tn, cols[t][c].name,
                   (unsigned long long)i, h5_errmsg(f));
          rc = STORE_ECORRUPT;
        }
        r.s[fl - F_S0] = (const char *)data;
        r.n[fl - F_S0] = len;
      }
      }
    }
    if (rc) break;
    if (r.id > tb->max_id) tb->max_id = r.id;
    if (dead[i]) continue;
    rc = gput(g, t, &r, 1);
    if (rc == STORE_EEXISTS) {
      snprintf(err, errlen, "/graph/%s: id %lld is live in two rows", tn, (long long)r.id);
      rc = STORE_ECORRUPT;
    }
    if (!rc) tb->r[tb->n - 1].row = (int64_t)i;
  }
  tb->nfile = n;
  for (int c = 0; c < 7; c++) free(col[c]);
  free(del);
  free(dead);
  return rc;
}

int gstore_load(gstore *g, h5_file *f, char *err, size_t errlen) {
  h5_obj *root, *mx;
  if (h5_root(f, &root) != H5_OK) return STORE_OK;
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    int rc = load_table(g, f, root, t, err, errlen);
    if (rc) return rc;
  }
  /* the largest ids ever used, so ids deleted and optimized away stay unused */
  h5_dset_info in;
  if (h5_obj_open_path(f, "/graph/max_id", &mx) == H5_OK && h5_dset_info_get(mx, &in) == H5_OK &&
      in.rank == 2 && in.dims[1] == STORE_G_NTABLES && in.dims[0] > 0 &&
      in.type->cls == H5_CLASS_INTEGER && in.type->size == 8 && !in.type->big_endian) {
    int64_t last[STORE_G_NTABLES];
    uint64_t start[2] = {in.dims[0] - 1, 0}, count[2] = {1, STORE_G_NTABLES};
    if (h5_dset_read_slab(mx, start, count, NULL, last, sizeof last) == H5_OK)
      for (int t = 0; t < STORE_G_NTABLES; t++)
        if (last[t] > g->t[t].max_id) g->t[t].max_id = last[t];
  }
  g->version++;
  return STORE_OK;
}

/* The rows of table t that the file holds (file: its rows, deleted since
** or not) or that it will after a checkpoint (the live ones), in id order:
** cb gets each as its columns (docs/FORMAT.md, the graph's columns):
** kinds[c] 0 int64, 1 string, 2 float64, and the values. */
typedef struct idix {
  int64_t id;
  uint64_t i;
} idix;

static int by_id(const void *a, const void *b) {
  int64_t x = ((const idix *)a)->id, y = ((const idix *)b)->id;
  return x < y ? -1 : x > y;
}

int gstore_each(const gstore *g, int t, int file, gstore_row_cb cb, void *ctx) {
  if (!g || t < 0 || t >= STORE_G_NTABLES) return STORE_EINVAL;
  const gtab *tb = &g->t[t];
  uint64_t m = 0;
  idix *ix = malloc((tb->n ? tb->n : 1) * sizeof *ix);
  if (!ix) return STORE_ENOMEM;
  for (uint64_t i = 0; i < tb->n; i++)
    if (file ? tb->r[i].row >= 0 : !tb->r[i].dead) ix[m++] = (idix){tb->r[i].id, i};
  if (m > 1) qsort(ix, m, sizeof *ix, by_id);
  int rc = STORE_OK;
  for (uint64_t k = 0; k < m && !rc; k++) {
    const grow *r = &tb->r[ix[k].i];
    gstore_val v[7];
    for (int c = 0; c < ncols[t]; c++) {
      int f = cols[t][c].f;
      v[c].kind = col_kind(f);
      v[c].i = f == F_ID ? r->id : f == F_A ? r->a : f == F_B ? r->b : f == F_TS ? r->ts : 0;
      v[c].f = r->weight;
      v[c].s = f >= F_S0 ? r->s[f - F_S0] : NULL;
      v[c].n = f >= F_S0 && r->s[f - F_S0] ? r->n[f - F_S0] : 0;
    }
    rc = cb(ctx, v, ncols[t]);
  }
  free(ix);
  return rc;
}

int gstore_checked(const gstore *g) { return g && g->checked; }
void gstore_mark_checked(gstore *g) {
  if (g) g->checked = 1;
}

int gstore_dirty(const gstore *g) {
  for (int t = 0; t < STORE_G_NTABLES; t++)
    for (uint64_t i = 0; i < g->t[t].n; i++)
      if ((g->t[t].r[i].row < 0) != g->t[t].r[i].dead) return 1;
  return 0;
}

/* The dataset at path in w, made (with its groups) when missing: STORE_OK
** or the writer's code. */
static int dset(h5w *w, int t, const char *name, int kind, h5w_obj **out) {
  char path[96];
  if (t < 0) snprintf(path, sizeof path, "/graph/%s", name);
  else snprintf(path, sizeof path, "/graph/%s/%s", tab_name[t], name);
  if (h5w_lookup(w, path, out) == H5_OK) return STORE_OK;
  h5w_obj *gg, *tg = NULL;
  if (h5w_lookup(w, "/graph", &gg) != H5_OK && h5w_group(w, h5w_root(w), "graph", &gg) != H5_OK)
    return store_wcode(w);
  if (t >= 0) {
    char tp[64];
    snprintf(tp, sizeof tp, "/graph/%s", tab_name[t]);
    if (h5w_lookup(w, tp, &tg) != H5_OK && h5w_group(w, gg, tab_name[t], &tg) != H5_OK) return store_wcode(w);
  }
  h5_type *ty = kind == 1 ? h5_type_new_string(0, 1) : kind == 2 ? h5_type_new_float(8)
                                                                : h5_type_new_int(8, 1);
  if (t < 0) /* max_id: [K, 3] */
    return store_wdset(w, gg, path, ty, 64, STORE_G_NTABLES, out);
  return store_wdset(w, tg, path, ty, 1024, 0, out);
}

/* Append t's live records (only_new: those not in the file yet) to its
** columns; *nout of them.  STORE_OK, STORE_ENOMEM or the writer's code. */
static int append_rows(gstore *g, h5w *w, int t, int only_new, uint64_t *nout) {
  gtab *tb = &g->t[t];
  uint64_t m = 0;
  for (uint64_t i = 0; i < tb->n; i++) m += !tb->r[i].dead && (!only_new || tb->r[i].row < 0);
  *nout = m;
  if (!m) return STORE_OK;
  /* (a string column takes 16-byte elements, the first 8 a char *, as
  ** h5w_append reads variable-length strings) */
  uint8_t *buf = calloc(m, 16);
  if (!buf) return STORE_ENOMEM;
  int rc = STORE_OK;
  for (int c = 0; c < ncols[t] && !rc; c++) {
    int fl = cols[t][c].f;
    size_t esz = col_kind(fl) == 1 ? 16 : 8;
    uint64_t j = 0;
    for (uint64_t i = 0; i < tb->n; i++) {
      const grow *r = &tb->r[i];
      if (r->dead || (only_new && r->row >= 0)) continue;
      uint8_t *e = buf + esz * j;
      switch (fl) {
      case F_ID: memcpy(e, &r->id, 8); break;
      case F_A: memcpy(e, &r->a, 8); break;
      case F_B: memcpy(e, &r->b, 8); break;
      case F_TS: memcpy(e, &r->ts, 8); break;
      case F_W: memcpy(e, &r->weight, 8); break;
      default: memcpy(e, &r->s[fl - F_S0], sizeof(char *)); break;
      }
      j++;
    }
    h5w_obj *d;
    rc = dset(w, t, cols[t][c].name, col_kind(fl), &d);
    if (rc == STORE_OK && h5w_append(w, d, buf, m) != H5_OK) rc = store_wcode(w);
  }
  free(buf);
  return rc;
}

static int max_ids(gstore *g, h5w *w) {
  h5w_obj *d;
  int64_t v[STORE_G_NTABLES];
  for (int t = 0; t < STORE_G_NTABLES; t++) v[t] = g->t[t].max_id;
  int rc = dset(w, -1, "max_id", 0, &d);
  return rc == STORE_OK && h5w_append(w, d, v, 1) != H5_OK ? store_wcode(w) : rc;
}

/* A failure rc (STORE_ENOMEM or the writer's code) said in err; returns rc. */
static int fail_w(h5w *w, int rc, char *err, size_t errlen) {
  snprintf(err, errlen, "%s", rc == STORE_ENOMEM ? "out of memory" : h5w_errmsg(w));
  return rc;
}

int gstore_checkpoint(gstore *g, h5w *w, char *err, size_t errlen) {
  if (!gstore_dirty(g)) return STORE_OK;
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    gtab *tb = &g->t[t];
    uint64_t m;
    int r = append_rows(g, w, t, 1, &m);
    if (r) return fail_w(w, r, err, errlen);
    uint64_t nd = 0;
    for (uint64_t i = 0; i < tb->n; i++) nd += tb->r[i].dead && tb->r[i].row >= 0;
    if (!m && !nd) continue;
    h5w_obj *d;
    if ((r = dset(w, t, "deleted", 0, &d))) return fail_w(w, r, err, errlen);
    if (!nd) continue;
    int64_t *rows = malloc(nd * sizeof *rows);
    if (!rows) return fail_w(w, STORE_ENOMEM, err, errlen);
    uint64_t j = 0;
    for (uint64_t i = 0; i < tb->n; i++)
      if (tb->r[i].dead && tb->r[i].row >= 0) rows[j++] = tb->r[i].row;
    r = h5w_append(w, d, rows, nd) != H5_OK ? store_wcode(w) : STORE_OK;
    free(rows);
    if (r) return fail_w(w, r, err, errlen);
  }
  int r = max_ids(g, w);
  return r ? fail_w(w, r, err, errlen) : STORE_OK;
}

void gstore_rebase(gstore *g) {
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    gtab *tb = &g->t[t];
    uint64_t j = 0;
    for (uint64_t i = 0; i < tb->n; i++) {
      grow *r = &tb->r[i];
      if (r->dead) {
        free(r->blk);
        continue;
      }
      if (r->row < 0) r->row = (int64_t)tb->nfile++;
      tb->r[j++] = *r;
    }
    tb->n = j;
    /* the maps emptied but not freed: they held every live row, so putting
    ** them again never allocates, never fails (it freed them and allocated
    ** anew, and out of memory left rows out of the maps) */
    idmap_clear(&tb->ids);
    idmap_clear(&tb->pairs);
    for (uint64_t i = 0; i < tb->n; i++) {
      int prc = idmap_put(&tb->ids, tb->r[i].id, i);
      if (t == STORE_G_MENTION && prc == STORE_OK)
        prc = idmap_put(&tb->pairs, pair_key(tb->r[i].a, tb->r[i].b), i);
      UTIL_ASSERT(prc == STORE_OK);
    }
  }
  g->version++;
}

int gstore_write_live(gstore *g, h5w *w, char *err, size_t errlen) {
  int any = 0;
  for (int t = 0; t < STORE_G_NTABLES; t++) any |= g->t[t].live > 0 || g->t[t].max_id > 0;
  if (!any) return STORE_OK;
  for (int t = 0; t < STORE_G_NTABLES; t++) {
    uint64_t m;
    int r = append_rows(g, w, t, 0, &m);
    h5w_obj *d;
    if (!r) r = dset(w, t, "deleted", 0, &d);
    for (int c = 0; !r && !m && c < ncols[t]; c++) /* an empty table: its columns all the same */
      r = dset(w, t, cols[t][c].name, col_kind(cols[t][c].f), &d);
    if (r) return fail_w(w, r, err, errlen);
  }
  int r = max_ids(g, w);
  return r ? fail_w(w, r, err, errlen) : STORE_OK;
}
