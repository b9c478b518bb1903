/*
** mcp/mcp_kept.c - the graph h5mem-mcp keeps between calls (mcp_kept.h):
** read through h5mem_kg_walk in a thread of its own, its strings in one
** arena, the names' index, the lowercased haystacks of search_nodes and
** their trigram index.
**
** The reading thread uses the SQLite connection until the graph is read
** (stage READ); the main thread touches the connection only after that
** (mcp_graph_quiet).  Then the thread makes the haystacks and the trigram
** index, each published with a release store that search_nodes reads with
** an acquire load (until then it searches field by field).  Only the
** writing tools change the graph; they stop the thread first (cancel,
** join), as does anything that frees the graph.
*/
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ext/kg_walk.h"
#include "mcp_image.h"
#include "mcp_kept.h"
#include "util/jsstr.h"

/* ---- strings ------------------------------------------------------------------ */

struct arena {
  struct arena *next;
  size_t used, cap;
  char data[];
};

char *kept_strdup(graph *g, const char *s, size_t n) {
  struct arena *a = g->strings;
  if (!a || a->cap - a->used < n + 1) {
    size_t cap = n + 1 > (1u << 20) ? n + 1 : (1u << 20);
    if (!(a = malloc(sizeof *a + cap))) return NULL;
    a->next = g->strings;
    a->used = 0;
    a->cap = cap;
    g->strings = a;
  }
  char *p = a->data + a->used;
  g->bytes += n + 1;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  a->used += n + 1;
  return p;
}

/* ---- the trigram index ------------------------------------------------------------ */

struct trigrams {
  struct tslot {
    uint32_t key; /* the three bytes + 1 (0: empty) */
    uint32_t id;  /* the trigram's number */
  } *slot;
  uint32_t cap, n;
  uint32_t *off;  /* trigram t's entities: ents[off[t] .. off[t + 1]) */
  uint32_t *ents;
};

static void tri_free(struct trigrams *t) {
  if (!t) return;
  free(t->slot);
  free(t->off);
  free(t->ents);
  free(t);
}

static struct tslot *tri_slot(const struct trigrams *t, uint32_t key) {
  uint32_t k = (key * 2654435761u) & (t->cap - 1);
  while (t->slot[k].key && t->slot[k].key != key) k = (k + 1) & (t->cap - 1);
  return &t->slot[k];
}

/* The number of trigram key, made when absent (UINT32_MAX: out of memory). */
static uint32_t tri_id(struct trigrams *t, uint32_t key) {
  if (2 * (t->n + 1) > t->cap) {
    struct trigrams old = *t;
    t->cap = t->cap ? 2 * t->cap : 4096;
    if (!(t->slot = calloc(t->cap, sizeof *t->slot))) {
      *t = old;
      return UINT32_MAX;
    }
    for (uint32_t k = 0; k < old.cap; k++)
      if (old.slot[k].key) *tri_slot(t, old.slot[k].key) = old.slot[k];
    free(old.slot);
  }
  struct tslot *s = tri_slot(t, key);
  if (!s->key) {
    s->key = key;
    s->id = t->n++;
  }
  return s->id;
}

/* Each entity into the list of each trigram of its haystack (not spanning a
** 0x01): a pass that numbers the trigrams and counts their entities, and
** one that fills the lists.  NULL when out of memory or cancelled. */
static struct trigrams *tri_build(const graph *g, const int *cancel) {
  struct trigrams *t = calloc(1, sizeof *t);
  uint32_t *cnt = NULL, *last = NULL, cap = 0;
  int ok = t != NULL;
  for (int pass = 0; pass < 2 && ok; pass++) {
    if (pass == 1) { /* the lists' offsets */
      if (!(t->off = malloc(((size_t)t->n + 1) * sizeof *t->off))) break;
      size_t sum = 0;
      for (uint32_t k = 0; k < t->n; k++) {
        t->off[k] = (uint32_t)sum;
        sum += cnt[k];
        cnt[k] = t->off[k];
      }
      t->off[t->n] = (uint32_t)sum;
      if (!(t->ents = malloc(sum * sizeof *t->ents + 1))) break;
      if (t->n) memset(last, 0, (size_t)t->n * sizeof *last);
    }
    for (size_t i = 0; i < g->ne && ok; i++) {
      if ((i & 1023) == 0 && __atomic_load_n(cancel, __ATOMIC_RELAXED)) ok = 0;
      const char *h = g->hay + g->hay_at[i];
      size_t n = g->hay_at[i + 1] - g->hay_at[i];
      for (size_t k = 0; k + 3 <= n && ok; k++) {
        if (h[k] == 1 || h[k + 1] == 1 || h[k + 2] == 1) continue;
        uint32_t id = pass ? tri_slot(t, mcp_tri_key(h + k))->id : tri_id(t, mcp_tri_key(h + k));
        if (id == UINT32_MAX) {
          ok = 0;
        } else if (pass == 0 && id >= cap) { /* (a new trigram: room for its count) */
          uint32_t nc = cap ? 2 * cap : 4096;
          uint32_t *a = realloc(cnt, nc * sizeof *a), *b = a ? realloc(last, nc * sizeof *b) : NULL;
          if (a) cnt = a;
          if (b) last = b;
          if (!a || !b) {
            ok = 0;
            break;
          }
          memset(cnt + cap, 0, (nc - cap) * sizeof *cnt);
          memset(last + cap, 0, (nc - cap) * sizeof *last);
          cap = nc;
        }
        if (!ok || last[id] == i + 1) continue; /* (the entity is in its list already) */
        last[id] = (uint32_t)i + 1;
        if (pass == 0) cnt[id]++;
        else t->ents[cnt[id]++] = (uint32_t)i;
      }
    }
  }
  free(cnt);
  free(last);
  if (ok && t && t->ents) return t;
  tri_free(t);
  return NULL;
}

/* ---- search ------------------------------------------------------------------- */

void kept_lower(strbuf *b, const char *s) { util_js_lower(b, s, strlen(s)); }

/* The entity whose haystack holds offset off. */
static size_t hay_entity(const graph *g, size_t off) {
  size_t lo = 0, hi = g->ne; /* the last i with hay_at[i] <= off */
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (g->hay_at[mid] <= off) lo = mid;
    else hi = mid;
  }
  return lo;
}

int kept_search(mcp *m, graph *g, const char *ql, size_t qn, uint8_t *keep) {
  (void)m;
  const struct trigrams *t = __atomic_load_n(&g->tri, __ATOMIC_ACQUIRE);
  const char *hay = __atomic_load_n(&g->hay, __ATOMIC_ACQUIRE);
  if (!qn) {
    for (size_t i = 0; i < g->ne; i++) keep[i] = !g->e[i].placeholder;
  } else if (!hay || memchr(ql, 1, qn)) { /* (no haystacks yet, or a query holding a 0x01: field by field) */
    strbuf f = {0};
    for (size_t i = 0; i < g->ne; i++) {
      const gent *e = &g->e[i];
      int hit = 0;
      for (size_t k = 0; !e->placeholder && !hit && k < e->nobs + 2; k++) {
        f.len = 0;
        kept_lower(&f, k == 0 ? e->name : k == 1 ? e->type : e->obs[k - 2]);
        if (strbuf_failed(&f)) break;
        hit = memmem(f.buf, f.len, ql, qn) != NULL;
      }
      keep[i] = (uint8_t)hit;
    }
    int bad = strbuf_failed(&f);
    strbuf_free(&f);
    if (bad) return -1;
  } else if (t && qn >= 3) { /* the entities holding the query's rarest trigram */
    if (!t->n) return 0; /* (no trigrams at all: none matches) */
    const uint32_t *cand = NULL;
    size_t nc = 0;
    for (size_t k = 0; k + 3 <= qn; k++) {
      const struct tslot *s = tri_slot(t, mcp_tri_key(ql + k));
      if (!s->key) return 0; /* a trigram no entity has: none matches */
      size_t c = t->off[s->id + 1] - t->off[s->id];
      if (!cand || c < nc) cand = t->ents + t->off[s->id], nc = c;
    }
    for (size_t c = 0; c < nc; c++) {
      size_t i = cand[c];
      keep[i] = memmem(hay + g->hay_at[i], g->hay_at[i + 1] - g->hay_at[i], ql, qn) != NULL;
    }
  } else { /* one pass over all the haystacks (a match never spans a 0x01) */
    size_t off = 0, end = g->hay_at[g->ne];
    const char *p;
    while (off < end && (p = memmem(hay + off, end - off, ql, qn))) {
      size_t i = hay_entity(g, (size_t)(p - hay));
      keep[i] = 1;
      off = g->hay_at[i + 1];
    }
  }
  return 0;
}

/* The haystacks: each entity's lowercased name, type and observations,
** 0x01 after each (a placeholder: the 0x01 alone). */
static int hay_build(graph *g, const int *cancel) {
  strbuf h = {0};
  if (!(g->hay_at = malloc((g->ne + 1) * sizeof *g->hay_at))) return -1;
  if (!(h.buf = malloc(g->bytes + g->ne + 1))) return -1; /* (its size: each string lowercased, a 0x01 after it) */
  h.cap = g->bytes + g->ne + 1;
  for (size_t i = 0; i < g->ne; i++) {
    const gent *e = &g->e[i];
    if ((i & 1023) == 0 && __atomic_load_n(cancel, __ATOMIC_RELAXED)) {
      strbuf_free(&h);
      return -1;
    }
    g->hay_at[i] = h.len;
    if (!e->placeholder) {
      kept_lower(&h, e->name);
      strbuf_putc(&h, 1);
      kept_lower(&h, e->type);
      for (size_t k = 0; k < e->nobs; k++) {
        strbuf_putc(&h, 1);
        kept_lower(&h, e->obs[k]);
      }
    }
    strbuf_putc(&h, 1);
  }
  g->hay_at[g->ne] = h.len;
  if (strbuf_failed(&h)) {
    strbuf_free(&h);
    return -1;
  }
  char *hay = h.buf ? h.buf : calloc(1, 1);
  if (hay) __atomic_store_n(&g->hay, hay, __ATOMIC_RELEASE); /* (hay_at first: search_nodes reads hay first) */
  return hay ? 0 : -1;
}

/* ---- reading the graph ------------------------------------------------------------ */

static size_t name_hash(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return (size_t)h;
}

static size_t *name_slot(const graph *g, const char *name) {
  size_t k = name_hash(name) & (g->ncap - 1);
  while (g->names[k] && strcmp(g->e[g->names[k] - 1].name, name)) k = (k + 1) & (g->ncap - 1);
  return &g->names[k];
}

gent *kept_named(graph *g, const char *name, int ph) {
  if (!g->ncap) return NULL;
  size_t k = *name_slot(g, name);
  return k && g->e[k - 1].placeholder == ph ? &g->e[k - 1] : NULL;
}

gent *kept_by_id(graph *g, int64_t id) {
  size_t lo = 0, hi = g->ne;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (g->e[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < g->ne && g->e[lo].id == id ? &g->e[lo] : NULL;
}

int kept_add_obs(graph *g, gent *e, const char *text) {
  if (e->nobs == e->cap || !e->cap) { /* (a slice of the graph's arrays: its own from now on) */
    size_t cap = e->nobs ? 2 * e->nobs : 4;
    char **no = malloc(cap * sizeof *no);
    int64_t *nm = malloc(cap * sizeof *nm);
    if (!no || !nm) {
      free(no);
      free(nm);
      return -1;
    }
    if (e->nobs) {
      memcpy(no, e->obs, e->nobs * sizeof *no);
      memcpy(nm, e->mid, e->nobs * sizeof *nm);
    }
    if (e->cap) {
      free(e->obs);
      free(e->mid);
    }
    e->obs = no, e->mid = nm, e->cap = cap;
  }
  char *t = kept_strdup(g, text, strlen(text));
  if (!t) return -1;
  e->obs[e->nobs] = t;
  e->mid[e->nobs++] = 0;
  return 0;
}

/* The names' index: each name to its first entity (a placeholder only
** when no entity has the name); canon of each. */
static int names_build(graph *g) {
  g->ncap = 16;
  while (g->ncap < 2 * g->ne + 2) g->ncap *= 2;
  if (!(g->names = calloc(g->ncap, sizeof *g->names))) return -1;
  for (size_t i = 0; i < g->ne; i++) {
    size_t *k = name_slot(g, g->e[i].name);
    if (!*k || (g->e[*k - 1].placeholder && !g->e[i].placeholder)) *k = i + 1;
  }
  for (size_t i = 0; i < g->ne; i++) g->e[i].canon = *name_slot(g, g->e[i].name) - 1;
  return 0;
}

typedef struct reader {
  graph *g;
  strbuf tmp;
} reader;

/* A string of a record as a JavaScript string (NULL: ""), in the arena. */
static char *read_str(reader *r, const char *s, size_t n, const char *meta, size_t mn, const char *field) {
  if (!s) return kept_strdup(r->g, "", 0);
  if (!meta) return kept_strdup(r->g, s, n);
  r->tmp.len = 0;
  util_js_kept(&r->tmp, s, n, meta, mn, field);
  return strbuf_failed(&r->tmp) ? NULL : kept_strdup(r->g, r->tmp.buf, r->tmp.len);
}

/* The arrays at their size: no copies as they fill. */
static int rd_begin(void *ctx, size_t nent, size_t nrel, size_t nmen) {
  graph *g = ((reader *)ctx)->g;
  g->e = malloc((nent + 1) * sizeof *g->e);
  g->r = malloc((nrel + 1) * sizeof *g->r);
  g->obs = malloc((nmen + 1) * sizeof *g->obs);
  g->mid = malloc((nmen + 1) * sizeof *g->mid);
  g->ecap = nent, g->rcap = nrel, g->obscap = nmen;
  return g->e && g->r && g->obs && g->mid ? SQLITE_OK : SQLITE_NOMEM;
}

static int rd_entity(void *ctx, const store_grec *s) {
  reader *r = ctx;
  graph *g = r->g;
  if (g->ne == g->ecap) return SQLITE_INTERNAL; /* (more than begin said) */
  gent *e = &g->e[g->ne++];
  memset(e, 0, sizeof *e);
  e->id = s->id;
  e->obs = g->obs + g->nobs; /* (its observations come next) */
  e->mid = g->mid + g->nobs;
  e->name = read_str(r, s->s[0], s->n[0], s->s[3], s->n[3], "name");
  e->type = read_str(r, s->s[1], s->n[1], s->s[3], s->n[3], "entityType");
  e->placeholder = util_js_placeholder(s->s[3], s->n[3]);
  return e->name && e->type ? SQLITE_OK : SQLITE_NOMEM;
}

static int rd_observation(void *ctx, int64_t entity, int64_t memory, const store_view *v) {
  reader *r = ctx;
  graph *g = r->g;
  gent *e = g->ne ? &g->e[g->ne - 1] : NULL; /* (the walk gives an entity's observations right after it) */
  if (!e || e->id != entity || g->nobs == g->obscap) return SQLITE_INTERNAL;
  char *t = read_str(r, v->text, v->text_len, v->meta, v->meta_len, "text");
  if (!t) return SQLITE_NOMEM;
  g->obs[g->nobs] = t;
  g->mid[g->nobs++] = memory;
  e->nobs++;
  return SQLITE_OK;
}

static int rd_relation(void *ctx, const store_grec *s, const store_grec *from, const store_grec *to) {
  reader *r = ctx;
  graph *g = r->g;
  gent *a = kept_by_id(g, from->id), *b = kept_by_id(g, to->id);
  if (!a || !b) return SQLITE_OK;
  if (g->nr == g->rcap) return SQLITE_INTERNAL;
  char *type = read_str(r, s->s[1], s->n[1], s->s[3], s->n[3], "relationType");
  g->r[g->nr++] = (grel){s->id, (size_t)(a - g->e), (size_t)(b - g->e), type, 0};
  return type ? SQLITE_OK : SQLITE_NOMEM;
}

static double ms_since(const struct timespec *t0);

/* The graph read (h5mem_kg_walk) and indexed by name; an SQLite code, the
** message in *err (malloc'd); how long each took in ms[2]. */
static int graph_read(mcp *m, graph *g, char **err, double ms[2]) {
  reader r = {g, {0}};
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  kg_walker w = {&r, rd_begin, rd_entity, rd_observation, rd_relation, NULL};
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(m->db, "SELECT h5mem_kg_walk(?1, ?2)", -1, &st, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, m->table, -1, SQLITE_STATIC);
    sqlite3_bind_pointer(st, 2, &w, "h5mem_kg_walker", NULL);
    rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : sqlite3_errcode(m->db);
  }
  if (rc != SQLITE_OK) *err = strdup(rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(m->db));
  sqlite3_finalize(st);
  strbuf_free(&r.tmp);
  ms[0] = ms_since(&t0);
  if (rc == SQLITE_OK && names_build(g)) rc = SQLITE_NOMEM;
  ms[1] = ms_since(&t0) - ms[0];
  if (rc == SQLITE_NOMEM && !*err) *err = strdup("out of memory");
  return rc;
}

static void graph_free(graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->ne; i++)
    if (g->e[i].cap) {
      free(g->e[i].obs);
      free(g->e[i].mid);
    }
  free(g->obs);
  free(g->mid);
  while (g->strings) {
    struct arena *a = g->strings;
    g->strings = a->next;
    free(a);
  }
  tri_free(g->tri);
  free(g->e);
  free(g->r);
  free(g->names);
  free(g->hay);
  free(g->hay_at);
  free(g);
}

/* ---- the reading thread ----------------------------------------------------------- */

enum { READING, READ, DONE }; /* READ: the connection is free again; DONE: indexed, or stopped */

typedef struct mcp_loader {
  mcp *m;
  graph *g;
  pthread_t th;
  int threaded;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stage;
  int cancel;
  int rc;
  char *err;
} mcp_loader;

static double ms_since(const struct timespec *t0) {
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void set_stage(mcp_loader *L, int stage) {
  pthread_mutex_lock(&L->mu);
  L->stage = stage;
  pthread_cond_broadcast(&L->cv);
  pthread_mutex_unlock(&L->mu);
}

static void wait_stage(mcp_loader *L, int stage) {
  pthread_mutex_lock(&L->mu);
  while (L->stage < stage) pthread_cond_wait(&L->cv, &L->mu);
  pthread_mutex_unlock(&L->mu);
}

/* H5MEM_MCP_SEARCH (for the tests: each way of search_nodes, every time):
** "fields" makes neither haystacks nor index (field by field), "scan" no
** index (the haystacks scanned), "index" both before the graph is served;
** unset, both come after, in the thread. */
static const char *search_mode(void) {
  const char *s = getenv("H5MEM_MCP_SEARCH");
  return s ? s : "";
}

static void *load_main(void *arg) {
  mcp_loader *L = arg;
  graph *g = L->g;
  const char *mode = search_mode();
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double ms[2];
  L->rc = graph_read(L->m, g, &L->err, ms);
  if (L->m->verbose && !L->rc)
    fprintf(stderr, "h5mem-mcp: graph read: %zu entities, %zu relations, %.1f ms (store %.1f, names %.1f)\n", g->ne,
            g->nr, ms_since(&t0), ms[0], ms[1]);
  int late = strcmp(mode, "index") != 0;
  if (late) set_stage(L, READ);
  if (!L->rc && strcmp(mode, "fields")) {
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int hr = hay_build(g, &L->cancel);
    double hms = ms_since(&t0);
    struct trigrams *t = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!hr && strcmp(mode, "scan") && (t = tri_build(g, &L->cancel)))
      __atomic_store_n(&g->tri, t, __ATOMIC_RELEASE);
    if (L->m->verbose)
      fprintf(stderr, "h5mem-mcp: search: haystacks %s in %.1f ms, index %s in %.1f ms\n", hr ? "not made" : "made",
              hms, t ? "built" : "not built", ms_since(&t0));
  }
  if (!late) set_stage(L, READ);
  set_stage(L, DONE);
  return NULL;
}

void mcp_graph_start(mcp *m) {
  if (m->graph || m->loader) return;
  mcp_loader *L = calloc(1, sizeof *L);
  graph *g = L ? calloc(1, sizeof *g) : NULL;
  if (!g) {
    free(L);
    return; /* (mcp_kept says out of memory) */
  }
  L->m = m;
  L->g = g;
  pthread_mutex_init(&L->mu, NULL);
  pthread_cond_init(&L->cv, NULL);
  m->loader = L;
  L->threaded = pthread_create(&L->th, NULL, load_main, L) == 0;
  if (!L->threaded) load_main(L); /* (no thread: read it now) */
}

/* The reading thread stopped and gone; its graph, unless published, freed. */
static void loader_end(mcp *m) {
  mcp_loader *L = m->loader;
  if (!L) return;
  __atomic_store_n(&L->cancel, 1, __ATOMIC_RELAXED);
  if (L->threaded) pthread_join(L->th, NULL);
  if (L->g != m->graph) graph_free(L->g);
  pthread_mutex_destroy(&L->mu);
  pthread_cond_destroy(&L->cv);
  free(L->err);
  free(L);
  m->loader = NULL;
}

void mcp_graph_settle(mcp *m) {
  if (m->graph) loader_end(m); /* (the graph is published: it stays) */
}

void mcp_graph_quiet(mcp *m) {
  if (m->loader) wait_stage(m->loader, READ);
}

graph *mcp_kept(mcp *m, mcp_out *o) {
  if (m->graph) return m->graph;
  mcp_graph_start(m);
  mcp_loader *L = m->loader;
  if (!L) {
    mcp_out_error(o, "out of memory");
    return NULL;
  }
  wait_stage(L, READ);
  if (L->rc) {
    mcp_out_error(o, "%s", L->err ? L->err : "the graph cannot be read");
    loader_end(m); /* (the next call reads it again) */
    return NULL;
  }
  return m->graph = L->g;
}

void mcp_graph_forget(mcp *m) {
  mcp_image_drop(m); /* (the store changed, or the server ends) */
  loader_end(m);
  graph_free(m->graph);
  m->graph = NULL;
}

/* ---- the search image ------------------------------------------------------------- */

static int key_cmp(const void *a, const void *b) {
  uint32_t x = ((const struct tslot *)a)->key, y = ((const struct tslot *)b)->key;
  return x < y ? -1 : x > y;
}

int kept_image(const graph *g, const store_state_key *key, uint8_t **img, size_t *len) {
  *img = NULL;
  *len = 0;
  const struct trigrams *t = __atomic_load_n(&g->tri, __ATOMIC_ACQUIRE);
  if (!t || !g->hay) return 1;
  strbuf ej = {0}, rj = {0};
  mcp_image_src src = {g->ne, g->nr, NULL, g->hay, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                       t->n, NULL, NULL, t->off[t->n], NULL};
  uint64_t *hay_at = malloc((g->ne + 1) * 8), *ej_at = malloc((g->ne + 1) * 8), *rj_at = malloc((g->nr + 1) * 8);
  uint64_t *adj_at = calloc(g->ne + 2, 8);
  uint32_t *canon = malloc(g->ne * 4 + 4), *adj = malloc(g->nr * 8 + 4);
  uint32_t *tkey = malloc((size_t)t->n * 4 + 4), *toff = malloc((size_t)t->n * 4 + 4);
  uint32_t *tent = malloc((size_t)t->off[t->n] * 4 + 4);
  struct tslot *keys = malloc(((size_t)t->n + 1) * sizeof *keys);
  int rc = hay_at && ej_at && rj_at && adj_at && canon && adj && tkey && toff && tent && keys ? 0 : -1;
  for (size_t i = 0; !rc && i < g->ne; i++) {
    const gent *e = &g->e[i];
    hay_at[i] = g->hay_at[i];
    ej_at[i] = ej.len;
    canon[i] = (uint32_t)e->canon;
    if (!e->placeholder) mcp_put_entity(&ej, e->name, e->type, e->obs, e->nobs);
  }
  for (size_t i = 0; !rc && i < g->nr; i++) {
    rj_at[i] = rj.len;
    mcp_put_relation(&rj, g->e[g->r[i].a].name, g->e[g->r[i].b].name, g->r[i].type);
  }
  /* each name's relations (an end of the name's first entity), in order:
     counted, then placed (a relation with both ends of one name once) */
  for (int pass = 0; !rc && pass < 2; pass++) {
    if (pass) {
      for (size_t i = 0; i < g->ne; i++) adj_at[i + 1] += adj_at[i];
      memmove(adj_at + 1, adj_at, g->ne * 8); /* (each list's start, moved on as it fills) */
      adj_at[0] = 0;
    }
    for (size_t i = 0; i < g->nr; i++) {
      size_t ca = g->e[g->r[i].a].canon, cb = g->e[g->r[i].b].canon;
      for (int end = 0; end < 2; end++) {
        size_t c = end ? cb : ca;
        if (end && cb == ca) break;
        if (pass) adj[adj_at[c + 1]++] = (uint32_t)i;
        else adj_at[c + 1]++;
      }
    }
  }
  if (!rc && (strbuf_failed(&ej) || strbuf_failed(&rj))) rc = -1;
  if (!rc) {
    hay_at[g->ne] = g->hay_at[g->ne];
    ej_at[g->ne] = ej.len;
    rj_at[g->nr] = rj.len;
    /* the trigrams by key, each with its entities */
    size_t nk = 0;
    for (uint32_t k = 0; k < t->cap; k++)
      if (t->slot[k].key) keys[nk++] = t->slot[k];
    qsort(keys, nk, sizeof *keys, key_cmp);
    uint32_t at = 0;
    for (size_t k = 0; k < nk; k++) {
      uint32_t a = t->off[keys[k].id], n = t->off[keys[k].id + 1] - a;
      tkey[k] = keys[k].key;
      toff[k] = at;
      memcpy(tent + at, t->ents + a, (size_t)n * 4);
      at += n;
    }
    toff[nk] = at;
    src.hay_at = hay_at, src.ej_at = ej_at, src.ej = ej.buf ? ej.buf : "", src.canon = canon;
    src.rj_at = rj_at, src.rj = rj.buf ? rj.buf : "", src.adj_at = adj_at, src.adj = adj;
    src.tkey = tkey, src.toff = toff, src.tent = tent;
    rc = mcp_image_make(&src, key, img, len);
  }
  free(hay_at);
  free(ej_at);
  free(rj_at);
  free(canon);
  free(adj_at);
  free(adj);
  free(tkey);
  free(toff);
  free(tent);
  free(keys);
  strbuf_free(&ej);
  strbuf_free(&rj);
  return rc;
}

int mcp_kept_ready(const mcp *m) {
  const graph *g = m->graph ? m->graph : m->loader ? m->loader->g : NULL;
  return g && __atomic_load_n(&g->tri, __ATOMIC_ACQUIRE) != NULL;
}

graph *mcp_kept_indexed(mcp *m) {
  mcp_out o;
  memset(&o, 0, sizeof o);
  graph *g = mcp_kept(m, &o);
  free(o.error);
  if (!g) return NULL;
  if (m->loader) wait_stage(m->loader, DONE);
  return __atomic_load_n(&g->tri, __ATOMIC_ACQUIRE) ? g : NULL;
}
