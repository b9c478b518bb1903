/*
** lib/store/store_eph.c - an ephemeral store shared by the connections of
** one process: each connection has its own handle (its own copy of the
** records, read without locks, as a persistent store's readers have their
** own view), and the handles of one name share a log in memory, the file
** log's part.  One handle at a time holds the writer's role, from its
** transaction's start to its end; a commit publishes its frame (the same
** frame a persistent store appends to its file log: store_log.c), and the
** other handles replay what was published before they next read.
**
** So that a handle opened later need not replay every frame ever written,
** the writer adds a snapshot (the whole state as one frame) once the
** frames since the last one outgrow it; the frames before the last
** snapshot are dropped when every handle has applied them, and a handle
** that falls too far behind is marked stale and reloads from the snapshot
** at its next read.  The log so holds about twice the live records.
**
** A handle alone keeps no log at all.  One that joins it has the log
** started from the lone handle's state: a snapshot read while that
** handle's owner (its SQLite connection) is between calls, or added by
** the lone handle itself at its next call when asked (base_from).
**
** Locking: one mutex for the registry and every log; frames are immutable
** once published and counted (a handle replays them outside the lock).
*/
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_int.h"

typedef struct eframe {
  uint64_t seq;
  int snap;        /* the whole state as of seq - 1 (replayed into an emptied handle only) */
  int refs;        /* the log's and the replaying handles' (under mu) */
  uint64_t at;     /* the bytes published before it */
  size_t len, cap;
  uint8_t *b;      /* after the header, or (a snapshot) the builder's buffer, taken over (cap bytes) */
} eframe;

typedef struct eph {
  struct eph *next;
  char *name, *cfg;
  int refs;
  eframe **f;       /* f[0 .. nf): seq f[0]->seq, f[0]->seq + 1, ... */
  size_t nf, capf;
  size_t snap;      /* the last snapshot's index (when has_snap) */
  int has_snap;
  uint64_t last;    /* the last seq published */
  uint64_t total;   /* bytes published */
  store **h;        /* the handles */
  size_t nh, caph;
  store *writer;
  pthread_t wthread;
  pthread_cond_t cv;
  int64_t clock_set;
  uint64_t snapshots;
  /* frames are kept only while another handle may need them: a handle
  ** alone keeps none (its commits cost no copy), and one joining it has
  ** the log started from its state (base_from) */
  int logging;
  int want_snap;    /* a handle joining waits for the lone one to add a snapshot */
  int joining;      /* handles waiting in base_from */
  /* the buffer of a snapshot dropped, kept for the next one (its pages
  ** are the process's already: a new buffer of that size costs a page
  ** fault per page) */
  uint8_t *spare;
  size_t spare_cap;
  /* the last EPH_RING reads of every handle (capacity with evict=lru), for
  ** the writer's choice of the least recently used */
  struct ruse { int64_t id; uint64_t who; } ring[4096];
  uint64_t ring_n;
} eph;
#define EPH_RING 4096u

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static eph *reg;
static uint64_t handles_made; /* (under mu: each handle's number, never 0) */

/* A snapshot is added once the frames since the last one hold this many
** bytes and as many as the snapshot does; a handle behind the published
** bytes by more than twice that is marked stale. */
#define SNAP_MIN ((uint64_t)1 << 20)

/* (under mu) e: the log, to keep a snapshot's buffer as its spare */
static void frame_unref(eph *e, eframe *f) {
  if (!f || --f->refs) return;
  if (f->b != (uint8_t *)(f + 1)) {
    if (e && f->cap > e->spare_cap) {
      free(e->spare);
      e->spare = f->b;
      e->spare_cap = f->cap;
    } else {
      free(f->b);
    }
  }
  free(f);
}

/* What a handle of the name must agree on, in words (the message names it). */
#define ADD(...) (n < cap ? n += snprintf(c + n, cap - (size_t)n, __VA_ARGS__) : n)
static char *config_of(const store *s) {
  size_t cap = 512 + (size_t)s->ncols * (STORE_COLNAME_MAX + 96);
  for (int i = 0; i < 4; i++) cap += s->eattr[i] ? strlen(s->eattr[i]) + 32 : 0;
  char *c = malloc(cap);
  if (!c) return NULL;
  static const char *const ev[] = {"lru", "score"};
  size_t n = 0;
  ADD("dim=%d, metric=%s, storage=%s, tokenize='%s', ttl=%lld, capacity=%llu, evict=%s",
                   s->dim, s->metric == STORE_L2 ? "l2" : s->metric == STORE_DOT ? "dot" : "cosine",
                   s->storage == STORE_F16 ? "float16" : "float32", s->tokenize, (long long)s->ttl,
                   (unsigned long long)s->capacity, ev[s->evict_by == STORE_EVICT_SCORE]);
  if (s->evict_half_life > 0) ADD(", half_life=%g", s->evict_half_life);
  for (int i = 0; i < s->ncols; i++) {
    char d[STORE_COLNAME_MAX + 64];
    store_coldef_format(&s->cdef[i], d, sizeof d);
    ADD("%s%s", i ? ", " : ", columns (", d);
  }
  if (s->ncols) ADD(")");
  static const char *const an[4] = {"agent", "embedder", "embedder_digest", "embedder_model"};
  for (int i = 0; i < 4; i++)
    if (s->eattr[i]) ADD(", %s='%s'", an[i], s->eattr[i]);
  return c;
}
#undef ADD

static void eph_free(eph *e) {
  for (size_t i = 0; i < e->nf; i++) frame_unref(NULL, e->f[i]);
  free(e->spare);
  free(e->f);
  free(e->h);
  free(e->name);
  free(e->cfg);
  pthread_cond_destroy(&e->cv);
  free(e);
}

/* The index of the frame of seq in e->f (e->nf: after the last). */
static size_t index_of(const eph *e, uint64_t seq) {
  if (!e->nf || seq > e->last) return e->nf;
  return seq < e->f[0]->seq ? 0 : (size_t)(seq - e->f[0]->seq);
}

/* Under mu: handles far behind marked stale, and the frames before the
** last snapshot dropped once no handle that is not stale needs them. */
static void trim(eph *e) {
  if (!e->has_snap) return;
  const eframe *sn = e->f[e->snap];
  uint64_t limit = 2 * (sn->len > SNAP_MIN ? sn->len : SNAP_MIN), min = e->last;
  for (size_t i = 0; i < e->nh; i++) {
    store *h = e->h[i];
    if (h->eph_stale || h->eph_seq >= sn->seq) continue;
    size_t at = index_of(e, h->eph_seq + 1);
    if (at < e->nf && e->f[at]->seq == h->eph_seq + 1 && e->total - e->f[at]->at <= limit) {
      if (h->eph_seq < min) min = h->eph_seq;
    } else {
      __atomic_store_n(&h->eph_stale, 1, __ATOMIC_RELEASE);
    }
  }
  size_t drop = 0;
  while (drop < e->snap && e->f[drop]->seq <= min) frame_unref(e, e->f[drop++]);
  if (!drop) return;
  memmove(e->f, e->f + drop, (e->nf - drop) * sizeof *e->f);
  e->nf -= drop;
  e->snap -= drop;
}

/* Room for two more frames in e->f (a transaction's and a snapshot). */
static int room(eph *e) {
  if (e->nf + 2 <= e->capf) return 0;
  size_t cap = e->capf ? 2 * e->capf : 64;
  eframe **n = realloc(e->f, cap * sizeof *n);
  if (!n) return -1;
  e->f = n;
  e->capf = cap;
  return 0;
}

static void publish(eph *e, eframe *f) { /* (under mu, with room) */
  f->seq = e->last + 1;
  __atomic_store_n(&e->last, f->seq, __ATOMIC_RELEASE); /* (read without the lock: catch_up) */
  f->at = e->total;
  f->refs = 1;
  e->total += f->len;
  e->f[e->nf++] = f;
}

/* Under mu: the log dropped when its one handle has applied all of it
** (nothing to keep for: the next handle to join starts it again). */
static void drop_if_alone(eph *e) {
  if (!e->logging || e->nh != 1 || (size_t)e->refs != e->nh || e->writer || e->h[0]->eph_seq != e->last ||
      e->h[0]->eph_stale)
    return; /* (another handle, one joining, one behind or not whole) */
  for (size_t i = 0; i < e->nf; i++)
    if (e->f[i]->refs != 1) return; /* (a replay still holds frames: it may yet fail and need them) */
  for (size_t i = 0; i < e->nf; i++) frame_unref(e, e->f[i]);
  e->nf = 0;
  e->has_snap = 0;
  __atomic_store_n(&e->logging, 0, __ATOMIC_RELEASE);
  free(e->spare);
  e->spare = NULL;
  e->spare_cap = 0;
}

/* (under mu, with room) sf, h's state, published as the log's last snapshot */
static void publish_snapshot(eph *e, store *h, eframe *sf) {
  sf->snap = 1;
  publish(e, sf);
  e->snap = e->nf - 1;
  e->has_snap = 1;
  e->snapshots++;
  h->eph_seq = e->last;
}

static eframe *frame_copy(store *s) {
  eframe *f = malloc(sizeof *f + s->frame_len);
  if (!f) return NULL;
  memset(f, 0, sizeof *f);
  f->len = s->frame_len;
  f->b = (uint8_t *)(f + 1);
  memcpy(f->b, s->frame, s->frame_len);
  return f;
}

/* s->frame itself as a frame (a snapshot's: no copy of a large buffer);
** the handle's next frame gets a buffer of its own. */
static eframe *frame_take(store *s) {
  eframe *f = malloc(sizeof *f);
  if (!f) return NULL;
  memset(f, 0, sizeof *f);
  f->len = s->frame_len;
  f->cap = s->frame_cap;
  f->b = s->frame;
  s->frame = NULL;
  s->frame_len = s->frame_cap = 0;
  return f;
}

/* Replay the frames pin[0 .. n) (counted for us; the first a snapshot's
** when whole, into a handle emptied first when clear); then let go of
** them. */
static int replay(store *s, eframe **pin, size_t n, int whole, int clear) {
  int rc = clear ? store_clear(s) : STORE_OK;
  for (size_t i = 0; i < n && !rc; i++) {
    if (pin[i]->snap && !(whole && i == 0)) continue; /* (its state is here already) */
    if (store_replay_frame(s, pin[i]->seq, pin[i]->b, pin[i]->len)) rc = s->replay_rc ? s->replay_rc : STORE_ECORRUPT;
  }
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < n; i++) frame_unref(s->eph, pin[i]);
  if (rc) __atomic_store_n(&s->eph_stale, 1, __ATOMIC_RELEASE); /* (half applied: reloaded next time) */
  else drop_if_alone(s->eph); /* (the others gone, and this one has all) */
  pthread_mutex_unlock(&mu);
  return rc;
}

/* Under mu: the frames this handle needs counted for it into *pin (from
** the last snapshot when reload), its position set to the last frame. */
static int pin_frames(store *s, int reload, eframe ***pin, size_t *n) {
  eph *e = s->eph;
  size_t from = reload ? (e->has_snap ? e->snap : 0) : index_of(e, s->eph_seq + 1);
  *n = e->nf - from;
  *pin = NULL;
  if (*n && !(*pin = malloc(*n * sizeof **pin))) return store_fail(s, STORE_ENOMEM, "out of memory");
  for (size_t i = 0; i < *n; i++) {
    (*pin)[i] = e->f[from + i];
    (*pin)[i]->refs++;
  }
  s->eph_seq = e->last;
  __atomic_store_n(&s->eph_stale, 0, __ATOMIC_RELEASE);
  return STORE_OK;
}

/* Under mu: a snapshot of h's state (h idle, outside a transaction, its
** frames all applied) published as the log's start. */
static int snapshot_from(eph *e, store *h) {
  eframe *sf = NULL;
  if (room(e) || store_snapshot_build(h, 0) || !(sf = frame_take(h))) return STORE_ENOMEM;
  publish_snapshot(e, h, sf);
  __atomic_store_n(&e->logging, 1, __ATOMIC_RELEASE);
  __atomic_store_n(&e->want_snap, 0, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&e->cv);
  return STORE_OK;
}

static struct timespec after_ms(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Under mu: s joins a log whose one handle keeps no frames; the log is
** started from that handle's state.  It is read here when its owner's
** lock is free (an SQLite connection between calls: sqlite3_db_mutex),
** or, without one, when its last call was this thread's; else the handle
** is asked to add the snapshot at its next call.  It must be outside a
** write transaction.  Waits up to STORE_EPH_WAIT_MS. */
static int base_wait(store *s, eph *e);

static int base_from(store *s, eph *e) {
  e->joining++;
  int rc = base_wait(s, e);
  if (--e->joining == 0) __atomic_store_n(&e->want_snap, 0, __ATOMIC_RELEASE); /* (no one asks any more) */
  return rc;
}

static int base_wait(store *s, eph *e) {
  struct timespec until = after_ms(STORE_EPH_WAIT_MS);
  for (;;) {
    if (e->logging || e->nh == 0) return STORE_OK; /* (started, or the handle went: nothing to take) */
    store *h = e->h[0];
    int self = pthread_equal(__atomic_load_n(&h->eph_thr, __ATOMIC_ACQUIRE), pthread_self());
    if (e->writer == h && self)
      return store_fail(s, STORE_EBUSY, "the ephemeral store '%s' is being written by another connection of "
                        "this thread (end its transaction first)", s->path);
    if (e->writer != h) {
      int locked = h->own_try && h->own_try(h->own);
      if (locked || (!h->own_try && self)) {
        int rc = snapshot_from(e, h);
        if (locked) h->own_unlock(h->own);
        return rc ? store_fail(s, rc, "out of memory") : STORE_OK;
      }
    }
    __atomic_store_n(&e->want_snap, 1, __ATOMIC_RELEASE);
    struct timespec slice = after_ms(10), now = after_ms(0);
    if (!before(&now, &until))
      return store_fail(s, STORE_EBUSY, "the ephemeral store '%s' is busy in another connection (waited %d s "
                        "for it)", s->path, STORE_EPH_WAIT_MS / 1000);
    pthread_cond_timedwait(&e->cv, &mu, before(&slice, &until) ? &slice : &until);
  }
}

/* The lone handle, asked by one joining (want_snap), adds the snapshot. */
static void serve(store *s) {
  eph *e = s->eph;
  if (!__atomic_load_n(&e->want_snap, __ATOMIC_ACQUIRE) || s->in_txn) return;
  pthread_mutex_lock(&mu);
  if (!e->logging && e->nh == 1 && e->h[0] == s && !e->writer) snapshot_from(e, s); /* (no room: asked again) */
  pthread_mutex_unlock(&mu);
}

/* Under mu: one count of e less; the last frees it. */
static void eph_release(eph *e) {
  if (--e->refs) return;
  for (eph **p = &reg; *p; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  eph_free(e);
}

int store_eph_join(store *s) {
  char *cfg = config_of(s);
  if (!cfg) return store_fail(s, STORE_ENOMEM, "out of memory");
  pthread_mutex_lock(&mu);
  eph *e = reg;
  while (e && strcmp(e->name, s->path)) e = e->next;
  if (e && strcmp(e->cfg, cfg)) {
    int rc = store_fail(s, STORE_EMISMATCH, "the ephemeral store '%s' is open in this process with %s; "
                        "this table asks for %s (every table of that name shares the store and "
                        "declares it alike)", s->path, e->cfg, cfg);
    pthread_mutex_unlock(&mu);
    free(cfg);
    return rc;
  }
  int made = 0;
  if (!e && (e = calloc(1, sizeof *e)) != NULL) {
    made = 1;
    e->name = strdup(s->path);
    e->cfg = cfg;
    cfg = NULL;
    pthread_cond_init(&e->cv, NULL);
    if (!e->name) {
      eph_free(e);
      e = NULL;
    }
  }
  free(cfg);
  if (!e) {
    pthread_mutex_unlock(&mu);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  if (made) {
    e->next = reg;
    reg = e;
  }
  e->refs++; /* (the log lives while we wait) */
  s->eph = e;
  s->eph_who = ++handles_made;
  __atomic_store_n(&s->eph_thr, pthread_self(), __ATOMIC_RELEASE);
  int rc = e->nh == 1 && !e->logging ? base_from(s, e) : STORE_OK;
  if (rc == STORE_OK && e->nh == e->caph) {
    size_t cap = e->caph ? 2 * e->caph : 4;
    store **n = realloc(e->h, cap * sizeof *n);
    if (n) {
      e->h = n;
      e->caph = cap;
    } else {
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    }
  }
  if (rc != STORE_OK) {
    eph_release(e);
    s->eph = NULL;
    pthread_mutex_unlock(&mu);
    return rc;
  }
  e->h[e->nh++] = s;
  eframe **pin;
  size_t n;
  rc = pin_frames(s, 1, &pin, &n);
  pthread_mutex_unlock(&mu);
  if (rc == STORE_OK) rc = replay(s, pin, n, 1, 0); /* (an empty handle: nothing to clear) */
  free(pin);
  return rc;
}

/* The prepared frame and evictions dropped. */
static void pend_free(store *s) {
  free(s->eph_pend);
  s->eph_pend = NULL;
  free(s->evict_ids);
  s->evict_ids = NULL;
  s->nevict = 0;
}

static void give_back(eph *e, store *s) { /* (under mu) the writer's role */
  if (e->writer != s) return;
  e->writer = NULL;
  pthread_cond_broadcast(&e->cv);
}

void store_eph_use(store *s, int64_t id) { /* (no lock: a slot taken, then filled) */
  eph *e = s->eph;
  uint64_t i = __atomic_fetch_add(&e->ring_n, 1, __ATOMIC_ACQ_REL);
  __atomic_store_n(&e->ring[i % EPH_RING].id, id, __ATOMIC_RELAXED);
  __atomic_store_n(&e->ring[i % EPH_RING].who, s->eph_who, __ATOMIC_RELEASE);
}

/* (a slot taken and not yet filled reads as what it held before: one more
   use of a record read earlier, harmless) */
void store_eph_uses(store *s) {
  eph *e = s->eph;
  if (!e || !s->capacity || s->evict_by != STORE_EVICT_LRU) return;
  uint64_t n = __atomic_load_n(&e->ring_n, __ATOMIC_ACQUIRE);
  uint64_t from = n - s->ring_seen > EPH_RING ? n - EPH_RING : s->ring_seen;
  for (uint64_t i = from; i < n; i++) {
    uint64_t pos;
    if (__atomic_load_n(&e->ring[i % EPH_RING].who, __ATOMIC_ACQUIRE) == s->eph_who) continue; /* (counted here) */
    int64_t id = __atomic_load_n(&e->ring[i % EPH_RING].id, __ATOMIC_RELAXED);
    if (store_find(s, id, &pos) == STORE_OK && pos >= s->nbase) store_use(s, s->delta[pos - s->nbase], 0);
  }
  s->ring_seen = n;
}


void store_eph_leave(store *s) {
  eph *e = s->eph;
  if (!e) return;
  pthread_mutex_lock(&mu);
  give_back(e, s);
  for (size_t i = 0; i < e->nh; i++)
    if (e->h[i] == s) {
      e->h[i] = e->h[--e->nh];
      break;
    }
  if (e->refs > 1) {
    trim(e);
    drop_if_alone(e);
  }
  eph_release(e);
  pthread_mutex_unlock(&mu);
  pend_free(s);
  s->eph = NULL;
}

int store_eph_catch_up(store *s, int may_reload) {
  eph *e = s->eph;
  if (!e) return STORE_OK;
  /* what this handle has expired goes first, so that what the others
     wrote since (a key put again, say) finds it gone as they did */
  store_expire_now(s);
  __atomic_store_n(&s->eph_thr, pthread_self(), __ATOMIC_RELEASE); /* (its calls' thread: base_from) */
  serve(s);
  /* (the usual case, without the lock: nothing published since) */
  if (__atomic_load_n(&e->last, __ATOMIC_ACQUIRE) == s->eph_seq && !__atomic_load_n(&s->eph_stale, __ATOMIC_ACQUIRE))
    return STORE_OK;
  pthread_mutex_lock(&mu);
  int reload = __atomic_load_n(&s->eph_stale, __ATOMIC_ACQUIRE);
  if (reload && !e->has_snap) { /* (nothing to reload from: never empty the handle) */
    pthread_mutex_unlock(&mu);
    return store_fail(s, STORE_ECORRUPT, "the ephemeral store '%s' cannot be reloaded in this connection (an "
                      "earlier replay failed and no snapshot is left): close it and open it again", s->path);
  }
  if (reload && !may_reload) {
    pthread_mutex_unlock(&mu);
    return store_fail(s, STORE_EBUSY, "the ephemeral store '%s' changed too much in other connections while a "
                      "statement of this one held it open: finish that statement and try again", s->path);
  }
  eframe **pin;
  size_t n;
  int rc = pin_frames(s, reload, &pin, &n);
  pthread_mutex_unlock(&mu);
  if (rc == STORE_OK) rc = replay(s, pin, n, reload, reload);
  free(pin);
  s->eph_reloads += reload;
  return rc;
}

int store_eph_begin(store *s) {
  eph *e = s->eph;
  pthread_mutex_lock(&mu);
  struct timespec until = after_ms(STORE_EPH_WAIT_MS);
  while (e->writer && e->writer != s) {
    /* (this thread's other connection cannot end its transaction while we wait) */
    if (pthread_equal(e->wthread, pthread_self()) ||
        pthread_cond_timedwait(&e->cv, &mu, &until) == ETIMEDOUT) {
      int self = pthread_equal(e->wthread, pthread_self());
      pthread_mutex_unlock(&mu);
      if (self)
        return store_fail(s, STORE_EBUSY, "the ephemeral store '%s' is being written by another connection of "
                          "this thread (end its transaction first)", s->path);
      return store_fail(s, STORE_EBUSY, "the ephemeral store '%s' is being written by another connection "
                        "(waited %d s)", s->path, STORE_EPH_WAIT_MS / 1000);
    }
  }
  e->writer = s;
  e->wthread = pthread_self();
  pthread_mutex_unlock(&mu);
  int rc = store_eph_catch_up(s, s->held == 0);
  store_eph_uses(s); /* (the others' reads count for the records it evicts) */
  if (rc) {
    pthread_mutex_lock(&mu);
    give_back(e, s);
    pthread_mutex_unlock(&mu);
  }
  return rc;
}

int store_eph_prepare(store *s) {
  /* a handle alone makes no frame (the writer's role keeps one from
     joining, and so the log from starting, until the commit) */
  int logging = __atomic_load_n(&s->eph->logging, __ATOMIC_ACQUIRE);
  int rc = s->nul && logging ? store_frame_build(s) : STORE_OK;
  if (!s->nul || !logging) s->frame_len = 0;
  free(s->evict_ids);
  s->evict_ids = NULL;
  s->nevict = 0;
  /* the records past the capacity, as the transaction leaves it: deleted
     in the same frame, so that every handle drops the same ones */
  if (!rc) rc = store_evict_pick(s, &s->evict_ids, &s->nevict);
  for (uint64_t i = 0; !rc && logging && i < s->nevict; i++) rc = store_frame_delete(s, s->evict_ids[i]);
  free(s->eph_pend);
  s->eph_pend = NULL;
  if (!rc && s->frame_len && !(s->eph_pend = frame_copy(s))) rc = store_fail(s, STORE_ENOMEM, "out of memory");
  if (!rc) {
    pthread_mutex_lock(&mu);
    if (room(s->eph)) rc = store_fail(s, STORE_ENOMEM, "out of memory");
    pthread_mutex_unlock(&mu);
  }
  return rc;
}

void store_eph_commit(store *s) {
  eph *e = s->eph;
  for (uint64_t i = 0; i < s->nevict; i++) store_gone_id(s, s->evict_ids[i]);
  store_lru_commit(s);
  free(s->evict_ids);
  s->evict_ids = NULL;
  s->nevict = 0;
  pthread_mutex_lock(&mu);
  if (s->eph_pend) { /* (room was made by store_eph_prepare) */
    publish(e, s->eph_pend);
    s->eph_pend = NULL;
    s->eph_seq = e->last;
  }
  uint64_t since = e->has_snap ? e->total - e->f[e->snap]->at - e->f[e->snap]->len : e->total;
  uint64_t snap = e->has_snap ? e->f[e->snap]->len : 0;
  int due = e->logging && since >= SNAP_MIN && since >= snap;
  if (due && e->spare && e->spare_cap > s->frame_cap) { /* (built in the spare: its pages are there) */
    free(s->frame);
    s->frame = e->spare;
    s->frame_cap = e->spare_cap;
    e->spare = NULL;
    e->spare_cap = 0;
  }
  pthread_mutex_unlock(&mu);
  eframe *sf = NULL;
  /* (the room the last snapshot and the frames since took, at most:
     built in place, without growing by copies) */
  if (due && store_snapshot_build(s, snap + since) == STORE_OK) sf = frame_take(s); /* (none: the log grows; tried again) */
  pthread_mutex_lock(&mu);
  if (sf && room(e) == 0) {
    publish_snapshot(e, s, sf);
    trim(e);
  } else if (sf) { /* (no room: the log grows; tried again at the next commit) */
    free(sf->b);
    free(sf);
  }
  give_back(e, s);
  drop_if_alone(e);
  pthread_mutex_unlock(&mu);
  serve(s);
}

void store_eph_rollback(store *s) {
  pend_free(s);
  if (!s->eph) return;
  pthread_mutex_lock(&mu);
  give_back(s->eph, s);
  pthread_mutex_unlock(&mu);
}

int64_t store_eph_clock(const store *s) { return __atomic_load_n(&s->eph->clock_set, __ATOMIC_RELAXED); }
void store_eph_set_clock(store *s, int64_t now) { __atomic_store_n(&s->eph->clock_set, now, __ATOMIC_RELAXED); }

void store_eph_log(const store *s, store_log_info *info) {
  const eph *e = s->eph;
  if (!e) return;
  pthread_mutex_lock(&mu);
  info->frames = e->nf;
  for (size_t i = 0; i < e->nf; i++) info->bytes += e->f[i]->len;
  info->handles = e->nh;
  info->snapshots = e->snapshots;
  pthread_mutex_unlock(&mu);
  info->reloads = s->eph_reloads;
}
