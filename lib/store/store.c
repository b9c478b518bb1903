/*
** lib/store/store.c - the memory store (store.h; the file layout is
** docs/FORMAT.md): opening and closing, the accessors, and the writer's
** transactions (begin, put, delete, prepare, commit, rollback).  The
** other concerns of the store are in the files listed in store_int.h.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/utf8.h"
#include "gate.h"
#include "store_int.h"

/* The columns of /memories (store_int.h). */
const char *const store_col_name[NCOL] = {"id", "text", "embedding", "source", "session",
                                           "tags", "ts", "tier", "importance", "access_count",
                                           "last_access", "meta"};
const int store_col_kind[NCOL] = {K_I64, K_STR, K_EMB, K_STR, K_STR, K_STR,
                                   K_I64, K_STR, K_F64, K_I64, K_I64, K_STR};
/* the string columns, in the order of store_rec's fields */
const int store_str_cols[6] = {C_TEXT, C_SOURCE, C_SESSION, C_TAGS, C_TIER, C_META};

int store_fail(store *s, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->err, sizeof s->err, fmt, ap);
  va_end(ap);
  return code;
}

int store_h5_code(int hr) {
  return hr == H5_EUNSUPPORTED || hr == H5_ENOTFOUND ? STORE_ECORRUPT : hr < 0 ? hr : STORE_EIO;
}

/* A failure of the HDF5 writer w while doing what (e.g. "checkpoint of"):
** the writer's code (STORE_EFULL when it found no space, ...), or the
** gate's when the gate refused the commit: STORE_EBUSY when readers kept
** the store busy, STORE_EIO when the lock call failed. */
int store_wfail(store *s, h5w *w, const char *what) {
  if (s->gated == GATE_EIO)
    return store_fail(s, STORE_EIO, "%s %s: cannot lock %s for the readers' gate: %s", what, s->path,
                      s->walpath, strerror(s->gate_errno));
  int code = s->gated < 0 ? s->gated : store_wcode(w);
  return store_fail(s, code, "%s %s: %s", what, s->path, h5w_errmsg(w));
}

const char *store_errmsg(const store *s) { return s ? s->err : "out of memory"; }
int store_dim(const store *s) { return s->dim; }
int store_metric(const store *s) { return s->metric; }
sindex *store_sindex(store *s) { return s->ix; }
tindex *store_tindex(store *s) { return s->tx; }
gstore *store_gstore(store *s) { return s->g; }
uint64_t store_changes(const store *s) { return s->changes; }
uint64_t store_reuses(const store *s) { return s->reuses; }
const char *store_tokenize(const store *s) { return s->tokenize; }

const char *store_index_name(int kind) {
  return kind == STORE_INDEX_HNSW ? "hnsw" : kind == STORE_INDEX_IVF ? "ivf" : "flat";
}

int store_attr(const store *s, const char *name, char *buf, size_t n) {
  static const char *const kept[4] = {"agent", "embedder", "embedder_digest", "embedder_model"};
  for (int i = 0; s->ephemeral && i < 4; i++) /* (an ephemeral store keeps its own) */
    if (!strcmp(name, kept[i]) && s->eattr[i] && strlen(s->eattr[i]) < n) {
      memcpy(buf, s->eattr[i], strlen(s->eattr[i]) + 1);
      return STORE_OK;
    }
  h5_obj *root;
  if (!s->f || h5_root(s->f, &root) != H5_OK) return STORE_ENOTFOUND;
  return store_attr_str(s->f, root, name, buf, n) > 0 ? STORE_OK : STORE_ENOTFOUND;
}

int store_index(const store *s, store_index_info *info) {
  if (info) {
    info->kind = s->icfg.kind;
    info->m = s->icfg.m;
    info->ef_construction = s->icfg.efc;
    info->ef_search = s->icfg.ef;
    info->graph_rows = sindex_rows(s->ix);
    info->saved_rows = sindex_saved_rows(s->ix);
    info->in_place = sindex_in_place(s->ix);
    info->nlist = sindex_nlist(s->ix);
    info->nprobe = s->icfg.nprobe;
    info->pq_m = s->icfg.pq_m;
    info->q8 = s->icfg.q8;
    info->q8_rows = s->q8[0].caddr && s->q8[1].caddr ? s->nbase : 0;
    info->note = sindex_note(s->ix);
  }
  return s->icfg.kind;
}
int store_storage(const store *s) { return s->storage; }
const char *store_path(const store *s) { return s->path; }
uint64_t store_npos(const store *s) { return s->nbase + s->ndelta; }
uint64_t store_count(const store *s) { return s->live; }
int64_t store_max_id(const store *s) { return s->max_id; }

int64_t store_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int store_set_error(store *s, int code, const char *msg) { return store_fail(s, code, "%s", msg); }

/* ---- opening ----------------------------------------------------------------- */

static int writer_lock(store *s);

int store_open(const char *path, const store_opts *create, int readonly, store **out,
               char *err, size_t errlen) {
  *out = NULL;
  store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  s->lockfd = -1;
  s->gatefd = -1;
  s->expcol = -1;
  s->prov_col = -1;
  s->readonly = readonly;
  s->sync = create ? create->sync : STORE_SYNC_FULL;
  s->chunk_rows = create && create->chunk_rows > 0 ? create->chunk_rows : DEFAULT_CHUNK;
  s->autockpt = create && create->autocheckpoint ? create->autocheckpoint : DEFAULT_AUTOCKPT;
  size_t n = strlen(path);
  s->path = malloc(n + 1);
  s->walpath = malloc(n + 5);
  if (!s->path || !s->walpath) {
    store_close(s);
    snprintf(err, errlen, "out of memory");
    return STORE_ENOMEM;
  }
  memcpy(s->path, path, n + 1);
  memcpy(s->walpath, path, n);
  memcpy(s->walpath + n, "-wal", 5);
  struct stat st;
  int rc = STORE_OK, porter, rd, made = 0;
  char norm[64], terr[256];
  for (const char *const *a = create ? create->attrs : NULL; a && a[0]; a += 2)
    if (strncmp(a[0], MIGRATED_PREFIX, strlen(MIGRATED_PREFIX)) != 0 || !a[1]) {
      snprintf(err, errlen, "%s: attribute '%s': extra attributes are named " MIGRATED_PREFIX
               "... and have a value", path, a[0]);
      store_close(s);
      return STORE_EINVAL;
    }
  if (create && create->tokenize &&
      store_tokenize_parse(create->tokenize, &porter, &rd, norm, terr, sizeof terr)) {
    snprintf(err, errlen, "%s", terr);
    store_close(s);
    return STORE_EINVAL;
  }
  if (create && create->ephemeral && create->signing_key) {
    snprintf(err, errlen, "an ephemeral store has no file: it is not signed (signing_key= is for stores with a file)");
    store_close(s);
    return STORE_EINVAL;
  }
  if (create && create->file_only && !readonly) {
    snprintf(err, errlen, "a store opened without its log is opened read-only");
    store_close(s);
    return STORE_EINVAL;
  }
  s->file_only = create && create->file_only;
  if (create && create->ephemeral) { /* (no file: every record in memory) */
    rc = readonly ? store_fail(s, STORE_EINVAL, "an ephemeral store cannot be opened read-only")
                  : store_ephemeral_load(s, create);
    s->own_try = create->owner_try, s->own_unlock = create->owner_unlock, s->own = create->owner;
    if (rc == STORE_OK) rc = store_eph_join(s); /* (the process's other handles of its name) */
    if (rc != STORE_OK) {
      snprintf(err, errlen, "%s", s->err);
      store_close(s);
      return rc;
    }
    *out = s;
    return STORE_OK;
  }
  if (stat(path, &st) != 0) {
    if (errno != ENOENT || !create || create->dim <= 0 || create->no_create || readonly)
      rc = store_fail(s, STORE_EIO, "%s: %s%s", path, strerror(errno),
                errno == ENOENT && (!create || create->dim <= 0) ? " (give dim= to create a store)" : "");
    else if ((rc = create->signing_key ? store_sign_key(s, create->signing_key) : STORE_OK) == STORE_OK &&
             (rc = store_write_new(s, create)) == STORE_OK)
      made = 1;
  }
  /* the writer role asked for at once: locked first, then loaded for
  ** writing, as store_become_writer does, without a reader's load before */
  int writer = create && create->writer && !readonly;
  if (rc == STORE_OK && writer) rc = writer_lock(s);
  if (rc == STORE_OK) rc = store_state_load(s, create, writer);
  if (rc == STORE_OK && writer) {
    s->writer = 1;
    s->last_sync_ns = store_now_ns();
  }
  /* the key to sign with: a store made with it is signed at once, empty;
  ** for one that exists, its path is kept and read at each checkpoint */
  if (rc == STORE_OK && create && create->signing_key && !readonly) {
    if (made) {
      rc = store_sign_now(s, NULL);
    } else if (!s->sign_path && !(s->sign_path = strdup(create->signing_key))) {
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    }
  }
  if (rc != STORE_OK) {
    snprintf(err, errlen, "%s", s->err);
    store_close(s);
    return rc;
  }
  *out = s;
  return STORE_OK;
}

/* ---- the writer ------------------------------------------------------------- */

/* Become the writer: lock the store (its log file, which, unlike the .h5
** file, is never replaced), then load the current state for writing. */
/* The writer's lock: the log file opened (made when missing) and locked
** exclusively, its descriptor in s->lockfd. */
static int writer_lock(store *s) {
  /* the log, never through a link (a planted one must not be followed to
  ** another file), created exclusively when missing */
  int fd = open(s->walpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT)
    fd = open(s->walpath, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) fd = open(s->walpath, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  struct stat lst;
  if (fd >= 0 && (fstat(fd, &lst) != 0 || !S_ISREG(lst.st_mode))) {
    close(fd);
    return store_fail(s, STORE_EIO, "%s is not a regular file; a log must be one", s->walpath);
  }
  if (fd < 0)
    return store_fail(s, STORE_EIO, "%s: %s", s->walpath,
                errno == ELOOP ? "it is a symbolic link (a log is never opened through one)"
                               : strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    close(fd);
    return e == EWOULDBLOCK
               ? store_fail(s, STORE_EBUSY, "the store %s is being written by another connection or "
                      "process", s->path)
               : store_fail(s, STORE_EIO, "cannot lock %s: %s", s->walpath, strerror(e));
  }
  s->lockfd = fd;
  return STORE_OK;
}

int store_become_writer(store *s) {
  if (s->writer) return STORE_OK;
  if (s->readonly) return store_fail(s, STORE_EINVAL, "%s is open read-only", s->path);
  int rc = writer_lock(s);
  if (rc != STORE_OK) return rc;
  rc = store_state_load(s, NULL, 1);
  if (rc != STORE_OK) {
    close(s->lockfd);
    s->lockfd = -1;
    /* back to a consistent read view if we can */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    store_state_load(s, NULL, 0);
    memcpy(s->err, keep, sizeof keep);
    return rc;
  }
  s->writer = 1;
  s->last_sync_ns = store_now_ns();
  return STORE_OK;
}

void store_log(const store *s, store_log_info *info, char *note, size_t n) {
  memset(info, 0, sizeof *info);
  info->frames = wal_frames(s->log);
  info->bytes = wal_bytes(s->log);
  if (s->ephemeral) { /* (its log in memory) */
    store_eph_log(s, info);
    note[0] = 0;
    return;
  }
  const char *w = wal_note(s->log);
  if (*w) {
    snprintf(note, n, "%s", w);
    return;
  }
  note[0] = 0;
  /* copies of damaged logs kept by an earlier writer */
  size_t len = strlen(s->walpath) + 32;
  char *name = malloc(len);
  struct stat st;
  int k = 1;
  while (name && k < 1000) {
    snprintf(name, len, "%s.corrupt-%d", s->walpath, k);
    if (lstat(name, &st) != 0) break;
    k++;
  }
  if (name && k > 1)
    snprintf(note, n, "%d damaged log%s kept beside the store (%s.corrupt-1%s): the frames "
             "after the damage in them were not replayed", k - 1, k > 2 ? "s" : "", s->walpath,
             k > 2 ? " ..." : "");
  free(name);
}

int store_refresh(store *s) {
  if (s->in_txn) return STORE_OK;
  if (s->ephemeral) { /* what the other connections committed, and nothing expired among what is read */
    int rc = store_eph_catch_up(s, 1); /* (which expires first what this handle holds) */
    if (rc) return rc;
    store_expire_now(s); /* (then what it replayed) */
    return store_compact_due(s); /* (the caller holds no position: as at a commit) */
  }
  if (s->writer) return STORE_OK;
  if (s->loaded) {
    struct stat st;
    if (stat(s->path, &st) != 0) return store_fail(s, STORE_EIO, "%s: %s", s->path, strerror(errno));
    if (st.st_dev == s->fst.st_dev && st.st_ino == s->fst.st_ino && st.st_size == s->fst.st_size &&
        st.st_mtim.tv_sec == s->fst.st_mtim.tv_sec && st.st_mtim.tv_nsec == s->fst.st_mtim.tv_nsec &&
        !wal_changed(s->log, 0))
      return STORE_OK;
  }
  return store_state_load(s, NULL, 0);
}

int store_begin(store *s) {
  if (s->in_txn) return store_fail(s, STORE_EINVAL, "a transaction is open");
  int rc = s->ephemeral ? store_eph_begin(s) : store_become_writer(s);
  if (rc) return rc;
  s->in_txn = 1;
  s->prepared = 0;
  s->nul = 0;
  return STORE_OK;
}

/* A string of a record to be written: well-formed UTF-8 without a NUL
** byte (libhdf5 ends strings at NUL; h5py and Python decode UTF-8
** strictly), else STORE_EINVAL naming the column and the byte. */
int store_str_check(store *s, const char *col, const char *p, size_t n) {
  size_t bad = p ? util_utf8_check(p, n, 0) : n;
  if (bad == n) return STORE_OK;
  return store_fail(s, STORE_EINVAL, "%s: %s at byte %zu", col, p[bad] ? "invalid UTF-8" : "a NUL byte", bad);
}

/* An embedding to be written: finite, and for float16 storage within its
** range (the store marks a record without one by a NaN first element, and
** a larger value would round to float16's largest or turn into an
** infinity; the SQL layer refuses the same). */
static int emb_check(store *s, const float *e) {
  for (int i = 0; e && i < s->dim; i++) {
    if (!isfinite(e[i]))
      return store_fail(s, STORE_EINVAL, "embedding: element %d is not finite (NaN or infinity)", i);
    if (s->storage == STORE_F16 && fabsf(e[i]) > STORE_F16_MAX)
      return store_fail(s, STORE_EINVAL, "embedding: element %d (%g) is outside float16's range", i,
                        (double)e[i]);
  }
  return STORE_OK;
}

int store_put(store *s, const store_rec *r) {
  if (!s->in_txn) return store_fail(s, STORE_EINVAL, "no transaction is open");
  int rc;
  if ((rc = emb_check(s, r->emb))) return rc;
  if ((rc = store_str_check(s, "text", r->text, r->text_len)) ||
      (rc = store_str_check(s, "source", r->source, r->source_len)) ||
      (rc = store_str_check(s, "session", r->session, r->session_len)) ||
      (rc = store_str_check(s, "tags", r->tags, r->tags_len)) ||
      (rc = store_str_check(s, "tier", r->tier, r->tier_len)) ||
      (rc = store_str_check(s, "meta", r->meta, r->meta_len)))
    return rc;
  void *pbuf = NULL; /* (a store with provenance: the record with its history filled) */
  store_rec pr;
  if (s->prov_col >= 0 || s->prov_fields) {
    if ((rc = store_prov_fill(s, r, &pr, &pbuf))) return rc;
    r = &pr;
  }
  if (s->ncols && ((rc = store_cols_check(s, r->cols)) || (rc = store_cols_pkey_free(s, r->cols)))) {
    store_prov_buf_free(pbuf);
    return rc;
  }
  rc = store_apply_put(s, r);
  store_prov_buf_free(pbuf);
  return rc;
}

int store_delete(store *s, int64_t id) {
  if (!s->in_txn) return store_fail(s, STORE_EINVAL, "no transaction is open");
  return store_apply_delete(s, id);
}

static const char *const gname[STORE_G_NTABLES] = {"entity", "relation", "mention"};

/* Room for one more undo entry, so that a change made is always undoable. */
static int ul_room(store *s) {
  if (s->nul < s->capul) return STORE_OK;
  int rc = store_ul_push(s, 1, 0);
  if (!rc) s->nul--;
  return rc;
}

int store_g_put(store *s, int t, const store_grec *r) {
  if (!s->in_txn) return store_fail(s, STORE_EINVAL, "no transaction is open");
  if (t < 0 || t >= STORE_G_NTABLES) return store_fail(s, STORE_EINVAL, "no graph table %d", t);
  static const char *const scol[4] = {"name", "type", "aliases", "meta"};
  for (int k = 0; k < 4 && t != STORE_G_MENTION; k++) /* (a relation has only type and meta) */
    if ((t == STORE_G_ENTITY || k % 2) && store_str_check(s, scol[k], r->s[k], r->n[k]))
      return STORE_EINVAL;
  int rc = ul_room(s);
  if (rc) return rc;
  rc = gstore_put(s->g, t, r);
  if (rc == STORE_EEXISTS) {
    uint64_t p;
    if (t == STORE_G_MENTION && store_g_find(s, t, r->id, &p) != STORE_OK)
      return store_fail(s, rc, "memory %lld already mentions entity %lld", (long long)r->a, (long long)r->b);
    return store_fail(s, rc, "%s id %lld exists", gname[t], (long long)r->id);
  }
  if (rc) return store_fail(s, rc, rc == STORE_ENOMEM ? "out of memory" : "bad %s", gname[t]);
  rc = store_ul_push(s, 1, store_g_npos(s, t) - 1);
  s->ul[s->nul - 1].table = 1 + t;
  return rc;
}

int store_g_delete(store *s, int t, int64_t id) {
  if (!s->in_txn) return store_fail(s, STORE_EINVAL, "no transaction is open");
  if (t < 0 || t >= STORE_G_NTABLES) return store_fail(s, STORE_EINVAL, "no graph table %d", t);
  int rc = ul_room(s);
  if (rc) return rc;
  uint64_t pos;
  rc = gstore_delete(s->g, t, id, &pos);
  if (rc) return store_fail(s, rc, "no %s with id %lld", gname[t], (long long)id);
  rc = store_ul_push(s, 0, pos);
  s->ul[s->nul - 1].table = 1 + t;
  return rc;
}

uint64_t store_mark(const store *s) { return s->nul; }

int store_undo_to(store *s, uint64_t mark) {
  while (s->nul > mark) store_undo_one(s, &s->ul[--s->nul]);
  return STORE_OK;
}

int store_prepare(store *s) {
  if (!s->in_txn) return STORE_OK; /* (SQLite commits a table it just created) */
  if (s->ephemeral) { /* (no file log: the frame waits for the commit to publish it) */
    int rc = store_eph_prepare(s);
    if (rc == STORE_OK) s->prepared = 1;
    return rc;
  }
  if (s->nul == 0) { /* (nothing to log) */
    s->prepared = 1;
    return STORE_OK;
  }
  int rc = store_frame_build(s);
  if (rc) return rc;
  int sync = s->sync == STORE_SYNC_FULL;
  if (s->sync == STORE_SYNC_NORMAL && store_now_ns() - s->last_sync_ns >= NORMAL_SYNC_NS) sync = 1;
  uint64_t seq;
  int wr = wal_append(s->log, s->frame, s->frame_len, sync, &seq);
  if (wr != WAL_OK) return store_fail(s, wr, "%s", wal_errmsg(s->log));
  if (sync) s->last_sync_ns = store_now_ns();
  s->prepared = 1;
  return STORE_OK;
}

int store_commit(store *s, int may_checkpoint) {
  if (!s->in_txn) return STORE_OK;
  if (!s->prepared) {
    int rc = store_prepare(s);
    if (rc) return rc;
  }
  s->in_txn = 0;
  s->prepared = 0;
  s->nul = 0;
  store_patch_commit(s);
  if (may_checkpoint && wal_bytes(s->log) >= s->autockpt) return store_checkpoint(s);
  if (!s->ephemeral) return STORE_OK;
  /* an ephemeral store: its frame published (the records past its
     capacity, picked at prepare, go with it: not undoable), and the memory
     of its deleted records given back once they outnumber the live ones
     (each record copied once for as many deletes, at most) */
  store_eph_commit(s);
  return may_checkpoint ? store_compact_due(s) : STORE_OK;
}

void store_rollback(store *s) {
  if (!s->in_txn) return;
  store_undo_to(s, 0);
  s->in_txn = 0;
  s->prepared = 0;
  if (s->ephemeral) store_eph_rollback(s);
}

int store_close(store *s) {
  if (!s) return STORE_OK;
  int rc = STORE_OK;
  if (s->in_txn) store_rollback(s);
  store_eph_leave(s);
  s->closing = 1;
  if (s->writer && s->log && (s->ndelta || s->nnewdead || wal_frames(s->log))) rc = store_checkpoint(s);
  if (s->writer && s->log && s->sync == STORE_SYNC_NORMAL) wal_sync(s->log);
  store_state_free(s);
  store_gate_release(s);
  if (s->lockfd >= 0) close(s->lockfd);
  if (s->gatefd >= 0) close(s->gatefd);
  free(s->ul);
  free(s->frame);
  for (int i = 0; i < 4; i++) free(s->eattr[i]);
  free(s->xh);
  free(s->lq);
  free(s->sign_path);
  store_prov_free(s);
  free(s->path);
  free(s->walpath);
  free(s);
  return rc;
}

void store_state_key_get(const store *s, store_state_key *k) {
  memset(k, 0, sizeof *k);
  memcpy(k->id, s->store_id, sizeof k->id);
  k->seq = s->ckpt_seq;
  k->checkpointed = !s->in_txn && (!s->log || wal_frames(s->log) == 0) && s->ndelta == 0 && s->nnewdead == 0;
  k->live[0] = store_count(s);
  for (int t = 0; t < STORE_G_NTABLES; t++) k->live[1 + t] = store_g_count(s, t);
}
