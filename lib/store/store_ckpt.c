/*
** lib/store/store_ckpt.c - writing store files: a new store, a
** checkpoint (the delta into the file), optimize (a new file).
*/
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ann/q8.h"
#include "util/pool.h"
#include "gate.h"
#include "store_int.h"
#include "util/check.h"

/* ---- writing the file --------------------------------------------------------- */

static h5_type *str_type(void) { return h5_type_new_string(0, 1); }

static int attr_str(h5w *w, h5w_obj *o, const char *name, const char *v) {
  uint8_t slot[16] = {0};
  memcpy(slot, &v, sizeof v);
  return h5w_attr(w, o, name, str_type(), 0, NULL, slot);
}

static int attr_i64(h5w *w, h5w_obj *o, const char *name, int64_t v) {
  return h5w_attr(w, o, name, h5_type_new_int(8, 1), 0, NULL, &v);
}

/* The groups, columns and attributes of an empty store in w. */
static int write_layout(store *s, h5w *w, const store_opts *o, const uint8_t id[16]) {
  h5w_obj *root = h5w_root(w), *mem, *meta, *d;
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", id[i]);
  const char *storage = o->storage == STORE_F16 ? "float16" : "float32";
  int hr = attr_str(w, root, "h5mem_format", FORMAT_NAME);
  /* (version 2 only with declared columns: earlier h5mem reads the rest) */
  if (!hr) hr = attr_i64(w, root, "h5mem_format_version", o->ncols > 0 ? 2 : 1);
  if (!hr) hr = attr_i64(w, root, "dim", o->dim);
  if (!hr) hr = attr_str(w, root, "metric", store_metric_name(o->metric));
  if (!hr) hr = attr_str(w, root, "storage", storage);
  if (!hr) hr = attr_str(w, root, "store_id", hex);
  if (!hr) hr = attr_str(w, root, "agent", o->agent ? o->agent : "");
  if (!hr) hr = attr_str(w, root, "embedder", o->embedder ? o->embedder : "");
  if (!hr && o->embedder_digest) hr = attr_str(w, root, "embedder_digest", o->embedder_digest);
  if (!hr && o->embedder_model) hr = attr_str(w, root, "embedder_model", o->embedder_model);
  if (!hr) hr = attr_str(w, root, "created_by", "h5mem " PACKAGE_VERSION);
  if (!hr && o->provenance) hr = attr_str(w, root, "provenance", "on");
  for (const char *const *a = o->attrs; !hr && a && a[0] && a[1]; a += 2)
    hr = attr_str(w, root, a[0], a[1]);
  sindex_cfg ic = {o->index, o->hnsw_m ? o->hnsw_m : 16, o->hnsw_efc ? o->hnsw_efc : 128,
                   o->ef_search ? o->ef_search : 64, o->index == STORE_INDEX_HNSW && !o->no_q8,
                   o->ivf_nlist, o->ivf_nprobe ? o->ivf_nprobe : 16, o->ivf_pq_m};
  h5w_obj *idx;
  if (!hr) hr = sindex_cfg_write(w, root, &ic);
  if (!hr) {
    text_tok_opts to = {0, 0};
    char norm[64], terr[256];
    if (store_tokenize_parse(o->tokenize, &to.porter, &to.remove_diacritics, norm, terr,
                             sizeof terr) == STORE_OK)
      hr = tindex_cfg_write(w, root, &to);
    else
      hr = H5_EINVAL; /* (store_open checks it first) */
  }
  if (!hr) hr = h5w_group(w, root, "index", &idx);
  if (!hr && ic.q8) { /* the int8 copy: rows as /memories/embedding's */
    h5w_dcpl dq;
    memset(&dq, 0, sizeof dq);
    dq.layout = H5_LAYOUT_CHUNKED;
    dq.deflate = -1;
    dq.chunk[0] = (uint64_t)s->chunk_rows;
    dq.chunk[1] = (uint64_t)o->dim;
    uint64_t dims[2] = {0, (uint64_t)o->dim}, maxd[2] = {UINT64_MAX, (uint64_t)o->dim};
    hr = h5w_dataset(w, idx, "q8", h5_type_new_int(1, 1), 2, dims, maxd, &dq, &d);
    if (!hr) hr = h5w_dataset(w, idx, "q8_scale", h5_type_new_float(4), 1, dims, maxd, &dq, &d);
  }
  if (!hr) hr = h5w_group(w, root, "memories", &mem);
  if (!hr) hr = h5w_group(w, root, "h5mem", &meta);
  if (!hr) hr = store_cols_layout(s, w, root, mem, o);
  uint64_t crows = (uint64_t)s->chunk_rows;
  for (int k = 0; !hr && k < NCOL + 3; k++) {
    h5w_dcpl dcpl;
    memset(&dcpl, 0, sizeof dcpl);
    dcpl.layout = H5_LAYOUT_CHUNKED;
    dcpl.deflate = -1;
    dcpl.chunk[0] = crows;
    uint64_t dims[2] = {0, (uint64_t)o->dim}, maxd[2] = {UINT64_MAX, (uint64_t)o->dim};
    h5_type *t;
    const char *name;
    h5w_obj *parent = mem;
    int rank = 1;
    if (k == NCOL) { /* tombstones */
      name = "deleted";
      t = h5_type_new_int(8, 1);
      dcpl.chunk[0] = 512;
    } else if (k >= NCOL + 1) {
      name = k == NCOL + 1 ? "checkpoints" : "max_id";
      parent = meta;
      t = h5_type_new_int(8, 1);
      dcpl.chunk[0] = 64;
    } else {
      name = store_col_name[k];
      switch (store_col_kind[k]) {
      case K_STR: t = str_type(); break;
      case K_EMB:
        t = h5_type_new_float(o->storage);
        rank = 2;
        dcpl.chunk[1] = (uint64_t)o->dim;
        break;
      case K_F64: t = h5_type_new_float(8); break;
      default: t = h5_type_new_int(8, 1);
      }
    }
    if (!t) return store_fail(s, STORE_ENOMEM, "out of memory");
    hr = h5w_dataset(w, parent, name, t, rank, dims, maxd, &dcpl, &d);
    if (!hr && k < NCOL) {
      static const char *const what[NCOL] = {
          "the record's id (rowid); an id may appear in a dead row and again later",
          "the memory's text (UTF-8)",
          "the embedding, one row per record (a record without one stores NaN first)",
          "where the memory came from", "the session it belongs to", "tags", "unix seconds",
          "tier", "importance", "times read", "unix seconds of the last access; INT64_MIN: never",
          "JSON metadata"};
      hr = attr_str(w, d, "description", what[k]);
    }
  }
  return hr ? store_fail(s, store_h5_code(hr), "cannot lay out %s: %s", s->path, h5w_errmsg(w)) : STORE_OK;
}

int store_new_check(store *s, const store_opts *o) {
  if (o->dim < 1 || o->dim > 65536) return store_fail(s, STORE_EINVAL, "dim=%d: expected 1..65536", o->dim);
  if (o->storage != STORE_F16 && o->storage != STORE_F32)
    return store_fail(s, STORE_EINVAL, "storage must be float16 or float32");
  if (o->index == STORE_INDEX_IVF && o->ivf_pq_m && o->dim % o->ivf_pq_m)
    return store_fail(s, STORE_EINVAL, "pq_m=%d must divide dim=%d", o->ivf_pq_m, o->dim);
  if (o->ncols && store_cols_check_defs(s, o->cols, o->ncols)) return STORE_EINVAL;
  /* the attributes of / are strings like the records' (store_str_check) */
  if (o->agent && store_str_check(s, "agent", o->agent, strlen(o->agent))) return STORE_EINVAL;
  if (o->embedder && store_str_check(s, "embedder", o->embedder, strlen(o->embedder))) return STORE_EINVAL;
  if (o->embedder_digest &&
      store_str_check(s, "embedder_digest", o->embedder_digest, strlen(o->embedder_digest)))
    return STORE_EINVAL;
  if (o->embedder_model &&
      store_str_check(s, "embedder_model", o->embedder_model, strlen(o->embedder_model)))
    return STORE_EINVAL;
  for (const char *const *a = o->attrs; a && a[0]; a += 2)
    if (store_str_check(s, a[0], a[1], strlen(a[1]))) return STORE_EINVAL;
  int prov = 0;
  for (int i = 0; i < o->ncols; i++)
    prov |= !strcmp(o->cols[i].name, "provenance") && o->cols[i].type == STORE_T_TEXT && o->cols[i].role == STORE_R_AUX;
  if (o->provenance && !prov)
    return store_fail(s, STORE_EINVAL, "provenance needs the declared column +provenance text");
  return STORE_OK;
}

/* Create the file: written under a temporary name, then linked into place
** (link fails if someone else created it first), so a store file is never
** seen half-written. */
int store_write_new(store *s, const store_opts *o) {
  int crc = store_new_check(s, o);
  if (crc != STORE_OK) return crc;
  uint8_t id[16];
  if (getrandom(id, sizeof id, 0) != (ssize_t)sizeof id) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    uint64_t a = (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32), b = (uint64_t)t.tv_sec;
    memcpy(id, &a, 8);
    memcpy(id + 8, &b, 8);
  }
  size_t n = strlen(s->path) + 40;
  char *base = malloc(n), *tmp = NULL;
  if (!base) return store_fail(s, STORE_ENOMEM, "out of memory");
  snprintf(base, n, "%s.new-%d", s->path, (int)getpid());
  char err[512];
  h5w *w;
  int rc = STORE_OK;
  /* made exclusively, never through a link planted at the name (h5.h) */
  int hr = h5w_create_temp(base, 1, &w, &tmp, err, sizeof err);
  free(base);
  if (hr != H5_OK) return store_fail(s, store_h5_code(hr), "cannot create %s: %s", s->path, err);
  rc = write_layout(s, w, o, id);
  if (rc != STORE_OK && h5w_errcode(w) == H5_EFULL) rc = store_wfail(s, w, "cannot write");
  if (rc == STORE_OK && h5w_close(w, o->sync != STORE_SYNC_OFF) != H5_OK) rc = store_wfail(s, w, "cannot write");
  h5w_free(w);
  if (rc == STORE_OK && link(tmp, s->path) != 0 && errno != EEXIST)
    rc = store_fail(s, util_err_write(errno), "cannot create %s: %s", s->path, strerror(errno));
  unlink(tmp);
  free(tmp);
  return rc;
}

/* ---- checkpoints ------------------------------------------------------------- */

/* The values of column k for the delta's live records, as h5w_append takes them. */
static void *column_rows(store *s, int k, uint64_t n) {
  size_t esz = s->col[k].rowbytes;
  uint8_t *buf = calloc(n ? n : 1, esz);
  if (!buf) return NULL;
  uint64_t j = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    const drec *d = s->delta[i];
    if (d->dead) continue;
    uint8_t *p = buf + j++ * esz;
    const ovent *e = store_patch_at(s, s->nbase + i); /* (its changes in place) */
    unsigned set = e ? e->set : 0;
    switch (k) {
    case C_ID: memcpy(p, &d->id, 8); break;
    case C_TS: memcpy(p, &d->ts, 8); break;
    case C_ACCESS_COUNT: memcpy(p, set & STORE_P_ACCESS_COUNT ? &e->ac : &d->access_count, 8); break;
    case C_LAST_ACCESS: memcpy(p, set & STORE_P_LAST_ACCESS ? &e->la : &d->last_access, 8); break;
    case C_IMPORTANCE: memcpy(p, set & STORE_P_IMPORTANCE ? &e->imp : &d->importance, 8); break;
    case C_TIER: memcpy(p, set & STORE_P_TIER ? (const void *)&e->tier : (const void *)&d->str[4], sizeof(char *)); break;
    case C_EMB:
      if (d->emb) {
        memcpy(p, d->emb, esz);
      } else if (s->storage == STORE_F32) {
        float nan = NAN;
        memcpy(p, &nan, 4);
      } else {
        uint16_t h = 0x7e00;
        memcpy(p, &h, 2);
      }
      break;
    default:
      for (int m = 0; m < 6; m++)
        if (store_str_cols[m] == k) {
          const char *str = d->str[m];
          memcpy(p, &str, sizeof str);
        }
    }
  }
  return buf;
}

/* After a checkpoint appended the delta's live records (in order) to the
** file: map the grown file and turn those records into its new rows,
** without reading the old rows' ids again: the cost is the records that
** changed and a walk of every column's chunk index (which grows with the
** store, but costs little: 2% of a checkpoint of 1,000 records at 10M,
** BENCHMARKS.md), not the old rows. */
static int rebase(store *s, uint64_t upto) {
  uint64_t oldn = s->nbase, nlive = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) nlive += !s->delta[i]->dead;
  int64_t *ids = s->base_id;
  uint8_t *dead = s->base_dead;
  uint64_t cap = s->base_cap;
  s->base_id = NULL;
  s->base_dead = NULL;
  /* the ts column and the temporal index, when built, are carried over:
  ** the appended rows' ts added (NULL newts: they are built again on first
  ** use, as after a refresh) */
  int64_t *tsc = s->tsc, *newts = (s->tsc || s->tb_built) ? malloc((nlive ? nlive : 1) * sizeof *newts) : NULL;
  store_tkey *tb = s->tb_built ? s->tb : NULL;
  uint64_t ntb = s->ntb;
  store_tsess *tsx = s->tsx; /* (the per-session index too: store_time_rebase_sess) */
  s->tsc = NULL;
  s->tb = NULL;
  s->tsx = NULL;
  if (newts)
    for (uint64_t i = 0, j = 0; i < s->ndelta; i++)
      if (!s->delta[i]->dead) newts[j++] = s->delta[i]->ts;
  /* a graph in memory is kept too (its rows do not move; it reads them
  ** through the store): not read again, nor checked, at the next search */
  sindex *keep = sindex_carries(s->ix) ? s->ix : NULL;
  if (keep) s->ix = NULL;
  store_base_free(s);
  int rc = store_base_load(s, NULL, 1);
  if (keep && rc == STORE_OK && s->nbase == oldn + nlive) {
    sindex_free(s->ix);
    s->ix = keep;
  } else {
    sindex_free(keep);
  }
  if (rc == STORE_OK && s->nbase == oldn + nlive && newts) {
    int64_t *t = tsc ? realloc(tsc, (s->nbase ? s->nbase : 1) * sizeof *t) : NULL;
    if (t) {
      memcpy(t + oldn, newts, nlive * sizeof *t);
      s->tsc = t;
      tsc = NULL;
    }
    store_time_rebase(s, tb, ntb, oldn, newts, nlive);
    tb = NULL;
  }
  if (rc == STORE_OK) store_time_rebase_sess(s, tsx, oldn); /* (frees it when it cannot) */
  else store_time_rebase_sess(s, tsx, UINT64_MAX);
  free(tsc);
  free(tb);
  free(newts);
  if (rc == STORE_OK && s->nbase != oldn + nlive)
    rc = store_fail(s, STORE_ECORRUPT, "%s: %llu rows after the checkpoint, expected %llu", s->path,
              (unsigned long long)s->nbase, (unsigned long long)(oldn + nlive));
  /* room for the new rows' ids, a quarter more than needed: a realloc of
  ** ids this large may copy them (80 MB at 10M rows, most of a checkpoint
  ** of 1,000 records there: BENCHMARKS.md) */
  if (rc == STORE_OK && s->nbase > cap) {
    uint64_t n = cap + cap / 4 > s->nbase ? cap + cap / 4 : s->nbase;
    int64_t *ni = realloc(ids, n * sizeof *ni);
    if (ni) ids = ni;
    uint8_t *nd = ni ? realloc(dead, n) : NULL;
    if (nd) dead = nd;
    if (!ni || !nd) rc = store_fail(s, STORE_ENOMEM, "out of memory");
    else cap = n;
    if (ni) util_advise_huge(ids, n * sizeof *ids);
  }
  if (rc != STORE_OK) {
    free(ids);
    free(dead);
    return rc;
  }
  /* the base stays sorted when the rows appended continue its order (then
  ** the map, which held the delta's ids alone, is emptied); else every live
  ** base row goes into the map (room made first: nothing below fails) */
  int sorted = s->base_sorted;
  int64_t last = oldn ? ids[oldn - 1] : INT64_MIN;
  for (uint64_t i = 0; sorted && i < s->ndelta; i++)
    if (!s->delta[i]->dead) {
      if (s->delta[i]->id <= last && (oldn || i)) sorted = 0;
      last = s->delta[i]->id;
    }
  if (s->base_sorted && !sorted && idmap_reserve(&s->map, s->live)) {
    free(ids);
    free(dead);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  for (uint64_t i = 0; s->base_sorted && !sorted && i < oldn; i++)
    if (!dead[i]) {
      int prc = idmap_put(&s->map, ids[i], i); /* (room was made) */
      UTIL_ASSERT(prc == STORE_OK);
    }
  uint64_t j = oldn;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    drec *d = s->delta[i];
    if (!d->dead) {
      ids[j] = d->id;
      dead[j] = 0;
      if (!sorted) {
        int prc = idmap_put(&s->map, d->id, j); /* (the id is in the map: no growth) */
        UTIL_ASSERT(prc == STORE_OK);
      }
      j++;
    }
    store_drec_free(d);
  }
  if (sorted) idmap_clear(&s->map);
  s->base_sorted = sorted;
  s->ndelta = 0;
  s->nnewdead = 0;
  gstore_rebase(s->g);
  s->base_id = ids;
  s->base_dead = dead;
  s->base_cap = cap;
  s->ckpt_seq = upto;
  return STORE_OK;
}

/* Append the int8 copies of n embeddings (rows[i]: the stored type, or NULL
** for none: zeros, scale 0) to /index/q8 and q8_scale, when the store keeps
** them. */
static int append_q8(store *s, h5w *w, const void *const *rows, uint64_t n) {
  h5w_obj *dq, *ds;
  if (!s->icfg.q8 || !n || h5w_lookup(w, "/index/q8", &dq) != H5_OK ||
      h5w_lookup(w, "/index/q8_scale", &ds) != H5_OK)
    return STORE_OK;
  int8_t *codes = calloc(n, (size_t)s->dim);
  float *scale = calloc(n, sizeof *scale);
  int rc = STORE_OK;
  if (!codes || !scale) {
    rc = store_fail(s, STORE_ENOMEM, "out of memory");
  } else {
    ann_elem e = s->storage == STORE_F16 ? ANN_F16 : ANN_F32;
    for (uint64_t i = 0; i < n; i++)
      if (rows[i] && !ann_row_missing(e, rows[i]))
        ann_q8_encode(rows[i], e, s->dim, codes + i * (size_t)s->dim, &scale[i]);
    if (h5w_append(w, dq, codes, n) != H5_OK || h5w_append(w, ds, scale, n) != H5_OK)
      rc = store_wfail(s, w, "the int8 copy of");
  }
  free(codes);
  free(scale);
  return rc;
}

/* Save a graph of the base (and an image of the text index) when the rows
** past the saved one call for it (force: whenever some are), appended
** copy-on-write like a checkpoint; a crash leaves the file as the
** checkpoint left it.  Else the graph in memory grows (sindex_extend). */
static int index_save(store *s, int force) {
  int vec = sindex_wants_save(s->ix, s->nbase, force);
  int txt = force ? s->nbase > 0 : tindex_wants_save(s->tx, s->nbase);
  int cols = store_vgraphs_wanted(s, force); /* (the vector columns' graphs) */
  /* no image due: the rows past the graph are added to it in memory (not
  ** when the store is closing: nothing would search it) */
  if (!vec && !s->closing) sindex_extend(s->ix, s->nbase, util_ncpu());
  if (!vec && !txt && !cols) return STORE_OK;
  char err[512];
  h5w *w;
  int orc = h5w_open(s->path, 1, &w, err, sizeof err);
  if (orc != H5_OK) return store_fail(s, store_h5_code(orc), "saving the indexes of %s: %s", s->path, err);
  h5w_on_commit(w, store_gate_take, s, "readers kept the store busy");
  int rc = vec ? sindex_save(s->ix, w, s->nbase, util_ncpu(), err, sizeof err) : STORE_OK;
  if (rc == STORE_OK && txt) rc = tindex_save(s->tx, w, s->nbase, err, sizeof err);
  if (rc == STORE_OK && cols) rc = store_vgraphs_save(s, w, force, util_ncpu(), err, sizeof err);
  if (rc == STORE_OK && h5w_flush(w, s->sync != STORE_SYNC_OFF) != H5_OK) {
    rc = store_wfail(s, w, "saving the indexes of");
    snprintf(err, sizeof err, "%s", h5w_errmsg(w));
  }
  store_gate_release(s);
  if (rc != STORE_OK) h5w_discard(w); /* no tail left behind */
  else if (vec) sindex_saved_at(s->ix, s->nbase);
  h5w_free(w);
  /* map the file again (the saved images are read in place, but for a graph
  ** kept in memory: rebase) */
  int lrc = rebase(s, s->ckpt_seq);
  if (lrc != STORE_OK) lrc = store_state_load(s, NULL, 1);
  if (rc != STORE_OK) return store_fail(s, rc, "saving the indexes of %s: %s", s->path, err);
  return lrc;
}

int store_checkpoint(store *s) {
  if (s->ephemeral) return store_fail(s, STORE_EINVAL, "%s is an ephemeral store: it has no file to checkpoint", s->path);
  if (s->in_txn) return store_fail(s, STORE_EINVAL, "cannot checkpoint inside a transaction");
  if (!s->writer) {
    int rc = store_become_writer(s);
    if (rc) return rc;
  }
  /* nothing to write: but an index a writer killed after its checkpoint
  ** did not save may be due (store_close and the automatic checkpoint
  ** come here only with something to write) */
  if (s->ndelta == 0 && s->nnewdead == 0 && wal_frames(s->log) == 0 && !s->sign_force) return index_save(s, 0);
  /* a signed store signs every checkpoint: its key read, and the file
  ** checked to be as its last signature left it, before anything is written */
  store_signer sg;
  int src = store_sign_begin(s, &sg);
  if (src) return src;
  uint64_t nlive = 0;
  for (uint64_t i = 0; i < s->ndelta; i++) nlive += !s->delta[i]->dead;
  uint64_t upto = wal_last_seq(s->log);
  char err[512];
  h5w *w;
  int orc = h5w_open(s->path, 1, &w, err, sizeof err);
  if (orc != H5_OK) { /* (a damaged file: STORE_ECORRUPT) */
    store_sign_end(s, &sg, 0);
    return store_fail(s, store_h5_code(orc), "checkpoint of %s: %s", s->path, err);
  }
  h5w_on_commit(w, store_gate_take, s, "readers kept the store busy");
  int rc = STORE_OK;
  for (int k = 0; rc == STORE_OK && k < NCOL + 3; k++) {
    char path[64];
    snprintf(path, sizeof path, k == NCOL + 1 ? "/h5mem/checkpoints" : k == NCOL + 2 ? "/h5mem/max_id"
             : "/memories/%s", k == NCOL ? "deleted" : k < NCOL ? store_col_name[k] : "");
    h5w_obj *d;
    if (h5w_lookup(w, path, &d) != H5_OK) {
      rc = store_wfail(s, w, "checkpoint of");
      break;
    }
    int hr = H5_OK;
    if (k < NCOL) {
      if (!nlive) continue;
      void *rows = column_rows(s, k, nlive);
      if (!rows) {
        rc = store_fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      hr = h5w_append(w, d, rows, nlive);
      free(rows);
    } else if (k == NCOL) {
      if (!s->nnewdead) continue;
      hr = h5w_append(w, d, s->newdead, s->nnewdead); /* uint64 rows < 2^63: same bytes */
    } else {
      int64_t v = k == NCOL + 1 ? (int64_t)upto : s->max_id;
      hr = h5w_append(w, d, &v, 1);
    }
    if (hr != H5_OK) rc = store_wfail(s, w, "checkpoint of");
  }
  if (rc == STORE_OK) rc = store_cols_append(s, w, nlive);
  if (rc == STORE_OK && nlive) {
    const void **rows = malloc(nlive * sizeof *rows);
    if (!rows) {
      rc = store_fail(s, STORE_ENOMEM, "out of memory");
    } else {
      uint64_t j = 0;
      for (uint64_t i = 0; i < s->ndelta; i++)
        if (!s->delta[i]->dead) rows[j++] = s->delta[i]->emb;
      rc = append_q8(s, w, rows, nlive);
      free(rows);
    }
  }
  if (rc == STORE_OK) rc = store_patch_write(s, w); /* the base rows changed in place */
  if (rc == STORE_OK) {
    int gr = gstore_checkpoint(s->g, w, err, sizeof err);
    if (gr) rc = store_fail(s, gr, "checkpoint of %s: %s", s->path, err);
  }
  /* the leaves of the rows written and changed, the root, the signature (docs/FORMAT.md) */
  if (rc == STORE_OK && sg.on) rc = store_sign_write(s, w, &sg, upto, nlive);
  if (rc == STORE_OK && h5w_flush(w, s->sync != STORE_SYNC_OFF) != H5_OK) rc = store_wfail(s, w, "checkpoint of");
  store_sign_end(s, &sg, rc == STORE_OK);
  if (rc != STORE_OK) {
    /* the file is as it was (its failed tail cut off); the log still holds everything */
    store_gate_release(s);
    h5w_discard(w);
    h5w_free(w);
    return rc;
  }
  h5w_free(w);
  /* The file now holds everything up to frame upto: empty the log, still
  ** inside the gate (if that fails, the frames are in both: opening skips
  ** them by sequence number), and make the delta's live records base rows. */
  int wr = wal_reset(s->log, upto);
  if (wr != WAL_OK) rc = store_fail(s, wr, "%s", wal_errmsg(s->log));
  store_gate_release(s);
  store_patch_clear(s); /* (the file holds the values now) */
  if (rebase(s, upto) != STORE_OK) { /* read it all again */
    char keep[sizeof s->err];
    memcpy(keep, s->err, sizeof keep);
    int lrc = store_state_load(s, NULL, 1);
    if (lrc) return lrc;
    if (rc == STORE_OK) memcpy(s->err, keep, sizeof keep);
  }
  if (rc == STORE_OK) rc = index_save(s, 0);
  return rc;
}

/* The migrated_* string attributes of / as name, value, ..., NULL (each
** strdup'd; extra_attrs_free frees them), for optimize to write again. */
typedef struct extra_attrs {
  store *s;
  h5_obj *root;
  char **v; /* n names and values, then NULL */
  size_t n;
  int oom;
} extra_attrs;

static int collect_migrated(void *ctx, const h5_attr *a) {
  extra_attrs *ex = ctx;
  char buf[65536];
  if (strncmp(a->name, MIGRATED_PREFIX, strlen(MIGRATED_PREFIX)) != 0 ||
      store_attr_str(ex->s->f, ex->root, a->name, buf, sizeof buf) <= 0)
    return 0;
  char **v = realloc(ex->v, (ex->n + 3) * sizeof *v);
  if (!v) {
    ex->oom = 1;
    return 1;
  }
  ex->v = v;
  v[ex->n] = strdup(a->name);
  v[ex->n + 1] = strdup(buf);
  v[ex->n + 2] = NULL;
  if (!v[ex->n] || !v[ex->n + 1]) ex->oom = 1;
  ex->n += 2;
  return ex->oom;
}

static void extra_attrs_free(extra_attrs *ex) {
  for (size_t i = 0; i < ex->n; i++) free(ex->v[i]);
  free(ex->v);
}

int store_optimize(store *s) {
  if (s->ephemeral) { /* (no file: its memory given back) */
    if (s->in_txn) return store_fail(s, STORE_EINVAL, "cannot optimize inside a transaction");
    return store_compact(s);
  }
  int rc = store_checkpoint(s);
  if (rc) return rc;
  if (!s->writer) return STORE_OK;
  store_signer sg; /* (a signed store: its history and leaves carried over, the new file signed) */
  if ((rc = store_sign_begin(s, &sg))) return rc;
  if (sg.on && sg.full) { /* (the checkpoint just made signed it: cannot be) */
    store_sign_end(s, &sg, 0);
    return store_fail(s, STORE_ECORRUPT, "optimize %s: the store is not signed as its key says", s->path);
  }
  /* a new file with the live rows only, under a temporary name */
  size_t n = strlen(s->path) + 40;
  char *tmp = malloc(n); /* the base of the temporary name, then the name made */
  if (!tmp) {
    store_sign_end(s, &sg, 0);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  snprintf(tmp, n, "%s.optimize-%d", s->path, (int)getpid());
  char err[512], agent[1024] = "", embedder[1024] = "", edigest[64] = "", emodel[1024] = "";
  h5_obj *root;
  if (h5_root(s->f, &root) == H5_OK) {
    store_read_attr_str(s, root, "agent", agent, sizeof agent);
    store_read_attr_str(s, root, "embedder", embedder, sizeof embedder);
    store_read_attr_str(s, root, "embedder_digest", edigest, sizeof edigest);
    store_read_attr_str(s, root, "embedder_model", emodel, sizeof emodel);
  }
  store_opts o;
  memset(&o, 0, sizeof o);
  o.dim = s->dim;
  o.metric = s->metric;
  o.storage = s->storage;
  o.agent = agent;
  o.embedder = embedder;
  o.embedder_digest = *edigest ? edigest : NULL;
  o.embedder_model = *emodel ? emodel : NULL;
  o.index = s->icfg.kind;
  o.hnsw_m = s->icfg.m;
  o.hnsw_efc = s->icfg.efc;
  o.ef_search = s->icfg.ef;
  o.no_q8 = !s->icfg.q8;
  o.ivf_nlist = s->icfg.nlist;
  o.ivf_nprobe = s->icfg.nprobe;
  o.ivf_pq_m = s->icfg.pq_m;
  o.tokenize = s->tokenize;
  o.cols = s->cdef;
  o.ncols = s->ncols;
  o.provenance = s->prov_col >= 0;
  extra_attrs ex = {s, NULL, NULL, 0, 0};
  if (h5_root(s->f, &ex.root) == H5_OK) h5_attr_iter(ex.root, collect_migrated, &ex);
  if (ex.oom) {
    extra_attrs_free(&ex);
    free(tmp);
    store_sign_end(s, &sg, 0);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  o.attrs = (const char *const *)ex.v;
  h5w *w;
  char *base = tmp;
  /* made exclusively, never through a link planted at the name (h5.h) */
  int hr = h5w_create_temp(base, 1, &w, &tmp, err, sizeof err);
  free(base);
  if (hr != H5_OK) {
    extra_attrs_free(&ex);
    store_sign_end(s, &sg, 0);
    return store_fail(s, store_h5_code(hr), "optimize %s: %s", s->path, err);
  }
  rc = write_layout(s, w, &o, s->store_id);
  extra_attrs_free(&ex);
  /* the live base rows, a block of rows at a time */
  uint64_t block = 4096;
  for (uint64_t r0 = 0; rc == STORE_OK && r0 < s->nbase; r0 += block) {
    uint64_t r1 = r0 + block < s->nbase ? r0 + block : s->nbase, m = 0;
    for (uint64_t r = r0; r < r1; r++) m += !s->base_dead[r];
    if (!m) continue;
    for (int k = 0; rc == STORE_OK && k < NCOL; k++) {
      size_t esz = s->col[k].rowbytes;
      uint8_t *buf = calloc(m, esz);
      char **strs = store_col_kind[k] == K_STR ? calloc(m, sizeof *strs) : NULL;
      if (!buf || (store_col_kind[k] == K_STR && !strs)) {
        free(buf);
        free(strs);
        rc = store_fail(s, STORE_ENOMEM, "out of memory");
        break;
      }
      uint64_t j = 0;
      for (uint64_t r = r0; r < r1 && rc == STORE_OK; r++) {
        if (s->base_dead[r]) continue;
        const uint8_t *p = store_base_row(s, k, r);
        if (!p) {
          rc = store_fail(s, STORE_ECORRUPT, "%s: row %llu outside the file", s->path, (unsigned long long)r);
          break;
        }
        if (store_col_kind[k] != K_STR) {
          memcpy(buf + j * esz, p, esz);
        } else {
          const uint8_t *data;
          size_t len;
          uint32_t cnt;
          if (h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK) {
            rc = store_fail(s, STORE_ECORRUPT, "%s: %s", s->path, h5_errmsg(s->f));
            break;
          }
          if (data) {
            strs[j] = malloc(len + 1);
            if (!strs[j]) {
              rc = store_fail(s, STORE_ENOMEM, "out of memory");
              break;
            }
            memcpy(strs[j], data, len);
            strs[j][len] = 0;
          }
          memcpy(buf + j * esz, &strs[j], sizeof strs[j]);
        }
        j++;
      }
      char path[64];
      snprintf(path, sizeof path, "/memories/%s", store_col_name[k]);
      h5w_obj *d;
      if (rc == STORE_OK && (h5w_lookup(w, path, &d) != H5_OK || h5w_append(w, d, buf, m) != H5_OK))
        rc = store_wfail(s, w, "optimize");
      if (rc == STORE_OK && k == C_EMB) { /* and their int8 copies */
        const void **rows = malloc(m * sizeof *rows);
        if (!rows) rc = store_fail(s, STORE_ENOMEM, "out of memory");
        for (uint64_t i = 0; rows && i < m; i++) rows[i] = buf + i * esz;
        if (rows) rc = append_q8(s, w, rows, m);
        free(rows);
      }
      for (uint64_t i = 0; strs && i < m; i++) free(strs[i]);
      free(strs);
      free(buf);
    }
    if (rc == STORE_OK) rc = store_cols_copy_rows(s, w, r0, r1, m);
  }
  if (rc == STORE_OK) {
    int gr = gstore_write_live(s->g, w, err, sizeof err);
    if (gr) rc = store_fail(s, gr, "optimize %s: %s", s->path, err);
  }
  h5w_obj *ck, *mx;
  int64_t v = (int64_t)s->ckpt_seq;
  if (rc == STORE_OK && (h5w_lookup(w, "/h5mem/checkpoints", &ck) != H5_OK ||
                         h5w_append(w, ck, &v, 1) != H5_OK ||
                         h5w_lookup(w, "/h5mem/max_id", &mx) != H5_OK ||
                         h5w_append(w, mx, &s->max_id, 1) != H5_OK))
    rc = store_wfail(s, w, "optimize");
  if (rc == STORE_OK && sg.on) rc = store_sign_optimize(s, w, &sg, store_count(s));
  store_sign_end(s, &sg, 0); /* (the tree is the old file's: built again for the new one) */
  if (rc == STORE_OK && h5w_close(w, s->sync != STORE_SYNC_OFF) != H5_OK) rc = store_wfail(s, w, "optimize");
  h5w_free(w);
  /* the new file replaces the old inside the gate: no reader is between
  ** opening the .h5 file and reading the log */
  int g = rc == STORE_OK ? gate_write_begin(s->lockfd) : GATE_NONE;
  if (g == GATE_EBUSY)
    rc = store_fail(s, STORE_EBUSY, "optimize %s: readers kept the store busy", s->path);
  else if (g != GATE_OK && g != GATE_NONE) /* (GATE_EIO: an I/O error, not busy) */
    rc = store_fail(s, g, "optimize %s: cannot lock %s for the readers' gate: %s", s->path,
                    s->walpath, strerror(errno));
  if (rc == STORE_OK && rename(tmp, s->path) != 0)
    rc = store_fail(s, STORE_EIO, "optimize %s: %s", s->path, strerror(errno));
  gate_write_end(s->lockfd, g);
  if (rc != STORE_OK) unlink(tmp);
  free(tmp);
  if (rc != STORE_OK) return rc;
  rc = store_state_load(s, NULL, 1);
  return rc ? rc : index_save(s, 1);
}
