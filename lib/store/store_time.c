/*
** lib/store/store_time.c - the temporal index: the records in ts order,
** for time ranges (ts BETWEEN a AND b, ts > a, ...) and "the last n
** memories" in O(log n + rows) (store.h, store_time_range), and the same
** for one session (store_time_range_session).
**
** Sorted arrays of (ts, position) pairs, ordered by ts and then by
** position (so ties come in the order the records were stored; an update,
** a delete plus an insert, moves its record after its ties):
**
** - the base's: every file row, dead or alive (a row deleted later is
**   skipped as the iterator meets it, store_pos_live, so deletes never
**   touch the array).  Built on first use from the ts column (the one pass
**   store_ts_column makes for the filters anyway) with an LSD radix sort,
**   stable, skipping the bytes every key shares (ts over a year differ in
**   their low 4 bytes: 4 passes); kept until the base changes.  A
**   checkpoint appends the delta's live rows to the file: the array is
**   then carried over, merged with the appended rows, in O(n) without
**   reading the column again (store_time_rebase); a refresh (readers),
**   optimize (positions renumbered) or a checkpoint that saves a vector or
**   text index image (the file loaded again) builds it again.  Not saved in
**   the file: rebuilding costs about 50 ms per million rows on one core
**   (bench/bench_time.py), and a derived array saved would need its own
**   format and damage handling (docs/FORMAT.md, "The temporal index").
** - the delta's: every record in memory (committed or in the open
**   transaction, dead or alive), brought up to date when a range starts
**   after records were added (the new ones sorted and merged: O(delta)),
**   built again when one was taken back (an undone insert).  Records in
**   memory are few (the log's limit), so this costs less than keeping it
**   sorted on every insert, and inserts stay O(1).
**
** - the per-session one (store_time_range_session, `session = ?` with a
**   range or ORDER BY ts): the base's rows that have a session, grouped
**   by session, each group in (ts, pos) order, so a session's range is a
**   binary search in its group and its rows alone are read (testing each
**   row of the ts range read ~100 times the rows for 1 session in 100).
**   Built on first such use from the ts array by a stable counting sort
**   on the session column's string codes (store_str_codes: equal strings,
**   equal codes, one pass over the column, shared with the searches'
**   filters); the groups' strings are copies (hashed), so a checkpoint
**   carries it over as it does the ts array, merging the appended rows
**   (their sessions read from the delta, new sessions as new groups) in
**   O(n + new log new) without the codes (store_time_rebase_sess); a
**   refresh, optimize or reload frees it (built again on first use).
**   Rows with a NULL session are in no group (`session = NULL` matches
**   nothing).  16 bytes a row with a session.  The delta's records are
**   taken from the delta's array and their session compared as bytes
**   (they are few).
**
** An iterator merges the base's side and the delta's: O(log n) to start
** (binary searches), O(1) a row.  Positions from store_npos at its start on (records added while it
** walks) are not visited, as a scan does not visit them.  When the delta
** changes under it (a row inserted or taken back), it finds its place
** again from the last pair it gave (the pairs are unique).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "store_int.h"

/* ---- sorting ------------------------------------------------------------- */

static uint64_t tkey_u(int64_t ts) { return (uint64_t)ts ^ ((uint64_t)1 << 63); } /* (signed order) */

static int tkey_less(const store_tkey *a, int64_t ts, uint64_t pos) {
  return a->ts < ts || (a->ts == ts && a->pos < pos);
}

/* Sort a[0..n) by ts, stably (tmp: room for n), LSD by bytes of ts - min,
** skipping the bytes every key shares.  The result is in a. */
static void radix_sort(store_tkey *a, store_tkey *tmp, uint64_t n) {
  if (n < 2) return;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t k = tkey_u(a[i].ts);
    if (k < lo) lo = k;
    if (k > hi) hi = k;
  }
  uint64_t range = hi - lo;
  uint64_t cnt[8][256]; /* (16 KiB on the stack: handles may sort on several threads) */
  memset(cnt, 0, sizeof cnt);
  int nb = 0;
  while (nb < 8 && (range >> (8 * nb))) nb++;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t k = tkey_u(a[i].ts) - lo;
    for (int b = 0; b < nb; b++) cnt[b][(k >> (8 * b)) & 255]++;
  }
  store_tkey *src = a, *dst = tmp;
  for (int b = 0; b < nb; b++) {
    uint64_t sum = 0;
    for (int d = 0; d < 256; d++) {
      uint64_t c = cnt[b][d];
      cnt[b][d] = sum;
      sum += c;
    }
    for (uint64_t i = 0; i < n; i++) {
      uint64_t k = tkey_u(src[i].ts) - lo;
      dst[cnt[b][(k >> (8 * b)) & 255]++] = src[i];
    }
    store_tkey *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

static int tkey_cmp(const void *x, const void *y) {
  const store_tkey *a = x, *b = y;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* ---- the arrays ---------------------------------------------------------- */

static void tsess_free(store_tsess *x);

void store_time_free(store *s) {
  tsess_free(s->tsx);
  s->tsx = NULL;
  free(s->tb);
  s->tb = NULL;
  s->ntb = 0;
  s->tb_built = 0;
  free(s->td);
  s->td = NULL;
  s->ntd = s->captd = 0;
  s->time_gen++;
}

static int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* The base's array, built when missing. */
static int base_build(store *s) {
  if (s->tb_built) return STORE_OK;
  int64_t t0 = now_us();
  const int64_t *ts;
  uint64_t n;
  int rc = store_ts_column(s, &ts, &n);
  if (rc != STORE_OK) return rc;
  store_tkey *a = malloc((n ? n : 1) * sizeof *a), *tmp = malloc((n ? n : 1) * sizeof *tmp);
  if (!a || !tmp) {
    free(a);
    free(tmp);
    return store_fail(s, STORE_ENOMEM, "out of memory");
  }
  for (uint64_t i = 0; i < n; i++) {
    a[i].ts = ts[i];
    a[i].pos = i;
  }
  radix_sort(a, tmp, n);
  free(tmp);
  free(s->tb);
  s->tb = a;
  s->ntb = n;
  s->tb_built = 1;
  s->time_builds++;
  s->time_build_us = now_us() - t0;
  return STORE_OK;
}

/* The delta's array brought up to date (every record in memory). */
static int delta_sync(store *s) {
  if (s->ntd == s->ndelta && s->td_reuses == s->reuses) return STORE_OK;
  uint64_t from = s->ntd;
  if (s->td_reuses != s->reuses || s->ntd > s->ndelta) from = 0; /* a record taken back: all again */
  if (s->ndelta > s->captd) {
    uint64_t cap = s->captd ? s->captd : 64;
    while (cap < s->ndelta) cap *= 2;
    store_tkey *n = realloc(s->td, cap * sizeof *n);
    if (!n) return store_fail(s, STORE_ENOMEM, "out of memory");
    s->td = n;
    s->captd = cap;
  }
  uint64_t add = s->ndelta - from;
  store_tkey *fresh = malloc((add ? add : 1) * sizeof *fresh);
  if (!fresh) return store_fail(s, STORE_ENOMEM, "out of memory");
  for (uint64_t i = 0; i < add; i++) {
    fresh[i].ts = s->delta[from + i]->ts;
    fresh[i].pos = s->nbase + from + i;
  }
  qsort(fresh, add, sizeof *fresh, tkey_cmp);
  /* merge fresh into td[0..from) from the back, in place (room: ndelta) */
  uint64_t i = from, j = add, o = s->ndelta;
  while (j > 0) {
    if (i > 0 && tkey_cmp(&s->td[i - 1], &fresh[j - 1]) > 0) s->td[--o] = s->td[--i];
    else s->td[--o] = fresh[--j];
  }
  free(fresh);
  s->ntd = s->ndelta;
  s->td_reuses = s->reuses;
  s->td_gen++;
  return STORE_OK;
}

void store_time_rebase(store *s, store_tkey *old, uint64_t nold, uint64_t oldn,
                       const int64_t *newts, uint64_t nnew) {
  /* the appended rows oldn .. oldn + nnew - 1, in ts order, merged with
  ** the old rows' pairs (positions unchanged) */
  if (!old || s->tb_built || s->nbase != oldn + nnew || nold != oldn) {
    free(old);
    return;
  }
  store_tkey *a = malloc((s->nbase ? s->nbase : 1) * sizeof *a);
  store_tkey *fresh = malloc((nnew ? nnew : 1) * sizeof *fresh);
  if (!a || !fresh) {
    free(a);
    free(fresh);
    free(old);
    return; /* (built again on first use) */
  }
  for (uint64_t i = 0; i < nnew; i++) {
    fresh[i].ts = newts[i];
    fresh[i].pos = oldn + i;
  }
  qsort(fresh, nnew, sizeof *fresh, tkey_cmp);
  uint64_t i = 0, j = 0, o = 0;
  while (i < nold || j < nnew) {
    if (j >= nnew || (i < nold && tkey_cmp(&old[i], &fresh[j]) < 0)) a[o++] = old[i++];
    else a[o++] = fresh[j++];
  }
  free(fresh);
  free(old);
  s->tb = a;
  s->ntb = s->nbase;
  s->tb_built = 1;
}

/* ---- the per-session index ----------------------------------------------- */

#define SESS 2 /* the session's place among the string columns (store_str_cols, drec's str) */

static void tsess_free(store_tsess *x) {
  if (!x) return;
  free(x->a);
  free(x->off);
  if (x->str)
    for (uint64_t g = 0; g < x->ng; g++) free(x->str[g]);
  free(x->str);
  free(x->len);
  free(x->slot);
  free(x);
}

/* The slot of (v, n): where its group is, or the empty one where it goes. */
static uint64_t tsess_slot(const store_tsess *x, const char *v, size_t n) {
  uint64_t h = XXH64(v, n, 0) & (x->scap - 1);
  while (x->slot[h]) {
    uint64_t g = x->slot[h] - 1;
    if (x->len[g] == n && !memcmp(x->str[g], v, n)) break;
    h = (h + 1) & (x->scap - 1);
  }
  return h;
}

/* The group of session (v, n), or UINT64_MAX: no base row has it. */
static uint64_t tsess_lookup(const store_tsess *x, const char *v, size_t n) {
  if (!x->scap) return UINT64_MAX;
  uint64_t h = tsess_slot(x, v, n);
  return x->slot[h] ? x->slot[h] - 1 : UINT64_MAX;
}

/* Session (v, n) as group x->ng (it has none yet): 0, or -1 out of memory. */
static int tsess_add(store_tsess *x, const char *v, size_t n) {
  if (x->ng >= UINT32_MAX - 1 || n == SIZE_MAX) return -1;
  if (x->ng == x->cap) {
    uint64_t cap = x->cap ? x->cap * 2 : 16;
    char **str = realloc(x->str, cap * sizeof *str);
    if (!str) return -1;
    x->str = str;
    size_t *len = realloc(x->len, cap * sizeof *len);
    if (!len) return -1;
    x->len = len;
    x->cap = cap;
  }
  if ((x->ng + 1) * 2 > x->scap) { /* (at most half full) */
    uint64_t scap = x->scap ? x->scap * 2 : 64;
    uint32_t *slot = calloc(scap, sizeof *slot);
    if (!slot) return -1;
    free(x->slot);
    x->slot = slot;
    x->scap = scap;
    for (uint64_t g = 0; g < x->ng; g++) x->slot[tsess_slot(x, x->str[g], x->len[g])] = (uint32_t)(g + 1);
  }
  char *c = malloc(n + 1);
  if (!c) return -1;
  memcpy(c, v, n);
  c[n] = 0;
  uint64_t h = tsess_slot(x, v, n);
  x->str[x->ng] = c;
  x->len[x->ng] = n;
  x->slot[h] = (uint32_t)(x->ng + 1);
  x->ng++;
  return 0;
}

/* The per-session index, built when missing: the ts index's pairs (in
** (ts, pos) order) distributed by the session's code (store_str_codes:
** equal strings, equal codes, 0 .. distinct - 1), a stable counting sort,
** so each group stays in (ts, pos) order; rows with a NULL session in no
** group (`session = NULL` matches nothing). */
static int sess_build(store *s) {
  if (s->tsx) return STORE_OK;
  int64_t t0 = now_us();
  int rc = base_build(s);
  if (rc != STORE_OK) return rc;
  const uint32_t *codes = NULL;
  uint64_t nc = 0;
  uint32_t code;
  rc = store_str_codes(s, STORE_V_SESSION, NULL, 0, &codes, &nc, &code);
  if (rc != STORE_OK) return rc;
  if (nc != s->ntb) return store_fail(s, STORE_EINVAL, "store_time: %llu session codes for %llu rows",
                                      (unsigned long long)nc, (unsigned long long)s->ntb);
  uint64_t ng = 0;
  for (uint64_t r = 0; r < nc; r++)
    if (codes[r] < UINT32_MAX - 1 && codes[r] >= ng) ng = (uint64_t)codes[r] + 1;
  store_tsess *x = calloc(1, sizeof *x);
  uint64_t *first = x ? malloc((ng ? ng : 1) * sizeof *first) : NULL;
  if (x) x->off = calloc(ng + 2, sizeof *x->off);
  if (!x || !first || !x->off) goto nomem;
  for (uint64_t g = 0; g < ng; g++) first[g] = UINT64_MAX;
  /* the groups' sizes (in off[g + 2], shifted twice below) and each one's first row */
  for (uint64_t r = 0; r < nc; r++) {
    uint32_t g = codes[r];
    if (g >= ng) continue;
    x->off[g + 2]++;
    if (first[g] == UINT64_MAX) first[g] = r;
  }
  for (uint64_t g = 0; g < ng; g++) x->off[g + 2] += x->off[g + 1]; /* off[g + 2]: where group g + 1 starts */
  x->n = x->off[ng + 1];
  x->a = malloc((x->n ? x->n : 1) * sizeof *x->a);
  if (!x->a) goto nomem;
  for (uint64_t i = 0; i < s->ntb; i++) { /* off[g + 1]: group g's next place, then its end */
    uint32_t g = codes[s->tb[i].pos];
    if (g < ng) x->a[x->off[g + 1]++] = s->tb[i];
  }
  /* the sessions' strings, from each group's first row: groups in code order */
  for (uint64_t g = 0; g < ng; g++) {
    const uint8_t *p = first[g] == UINT64_MAX ? NULL : store_base_row(s, C_SESSION, first[g]), *data;
    size_t len;
    uint32_t cnt;
    if (!p || h5_vlen_get(s->f, p, &data, &len, &cnt) != H5_OK || !data) {
      tsess_free(x);
      free(first);
      return store_fail(s, STORE_ECORRUPT, "%s: a row of /memories/session cannot be read", s->path);
    }
    if (tsess_lookup(x, (const char *)data, len) != UINT64_MAX) { /* (codes of distinct strings) */
      tsess_free(x);
      free(first);
      return store_fail(s, STORE_EINVAL, "store_time: a session with two codes");
    }
    if (tsess_add(x, (const char *)data, len)) goto nomem;
  }
  free(first);
  x->nbase = s->nbase;
  s->tsx = x;
  s->tsx_builds++;
  s->tsx_build_us = now_us() - t0;
  return STORE_OK;
nomem:
  tsess_free(x);
  free(first);
  return store_fail(s, STORE_ENOMEM, "out of memory");
}

typedef struct gkey {
  uint64_t g;
  store_tkey k;
} gkey;

static int gkey_cmp(const void *x, const void *y) {
  const gkey *a = x, *b = y;
  if (a->g != b->g) return a->g < b->g ? -1 : 1;
  return tkey_cmp(&a->k, &b->k);
}

void store_time_rebase_sess(store *s, store_tsess *old, uint64_t oldn) {
  /* the appended rows are the delta's live records, in order, from oldn */
  if (!old) return;
  gkey *fresh = NULL;
  uint64_t *off = NULL;
  store_tkey *a = NULL;
  uint64_t nnew = s->nbase - oldn, m = 0, j = 0, oldng = old->ng;
  if (s->tsx || !s->tb_built || s->ntb != s->nbase || old->nbase != oldn || s->nbase < oldn) goto fail;
  fresh = malloc((nnew ? nnew : 1) * sizeof *fresh);
  if (!fresh) goto fail;
  for (uint64_t i = 0; i < s->ndelta; i++) {
    const drec *d = s->delta[i];
    if (d->dead) continue;
    uint64_t pos = oldn + j++;
    if (j > nnew) goto fail;
    if (!d->str[SESS]) continue; /* (in no group) */
    uint64_t g = tsess_lookup(old, d->str[SESS], d->len[SESS]);
    if (g == UINT64_MAX) {
      if (tsess_add(old, d->str[SESS], d->len[SESS])) goto fail;
      g = old->ng - 1;
    }
    fresh[m].g = g;
    fresh[m].k.ts = d->ts;
    fresh[m].k.pos = pos;
    m++;
  }
  if (j != nnew) goto fail;
  qsort(fresh, m, sizeof *fresh, gkey_cmp);
  a = malloc((old->n + m ? old->n + m : 1) * sizeof *a);
  off = malloc((old->ng + 1) * sizeof *off);
  if (!a || !off) goto fail;
  uint64_t o = 0, f = 0;
  for (uint64_t g = 0; g < old->ng; g++) { /* each group: its old pairs and new ones, merged */
    off[g] = o;
    uint64_t i = g < oldng ? old->off[g] : 0, e = g < oldng ? old->off[g + 1] : 0;
    while (i < e || (f < m && fresh[f].g == g)) {
      if (f >= m || fresh[f].g != g || (i < e && tkey_cmp(&old->a[i], &fresh[f].k) < 0)) a[o++] = old->a[i++];
      else a[o++] = fresh[f++].k;
    }
  }
  off[old->ng] = o;
  free(fresh);
  free(old->a);
  free(old->off);
  old->a = a;
  old->off = off;
  old->n = o;
  old->nbase = s->nbase;
  s->tsx = old;
  return;
fail:
  free(fresh);
  free(a);
  free(off);
  tsess_free(old); /* (built again on first use) */
}

/* The first index of a[0..n) whose pair is not below (ts, pos). */
static uint64_t lower(const store_tkey *a, uint64_t n, int64_t ts, uint64_t pos) {
  uint64_t l = 0, h = n;
  while (l < h) {
    uint64_t m = l + (h - l) / 2;
    if (tkey_less(&a[m], ts, pos)) l = m + 1;
    else h = m;
  }
  return l;
}

/* [*b, *e): the pairs of a[0..n) with lo <= ts <= hi. */
static void span(const store_tkey *a, uint64_t n, int64_t lo, int64_t hi, uint64_t *b, uint64_t *e) {
  *b = lower(a, n, lo, 0);
  *e = hi == INT64_MAX ? n : lower(a, n, hi + 1, 0);
  if (*e < *b) *e = *b;
}

int store_time_count(store *s, int64_t lo, int64_t hi, uint64_t *n) {
  *n = 0;
  if (lo > hi) return STORE_OK;
  int rc = base_build(s);
  if (rc == STORE_OK) rc = delta_sync(s);
  if (rc != STORE_OK) return rc;
  uint64_t b, e, db, de;
  span(s->tb, s->ntb, lo, hi, &b, &e);
  span(s->td, s->ntd, lo, hi, &db, &de);
  *n = (e - b) + (de - db);
  return STORE_OK;
}

/* ---- the iterator -------------------------------------------------------- */


/* The delta side's place again, after the delta's array changed. */
static void delta_seek(store *s, store_time_iter *it) {
  span(s->td, s->ntd, it->lo, it->hi, &it->db, &it->de);
  if (!it->dhas) {
    it->d = it->desc ? it->de : it->db;
  } else {
    uint64_t at = lower(s->td, s->ntd, it->dts, it->dpos);
    if (!it->desc && at < s->ntd && s->td[at].ts == it->dts && s->td[at].pos == it->dpos) at++;
    if (at < it->db) at = it->db;
    if (at > it->de) at = it->de;
    it->d = at;
  }
  it->dgen = s->td_gen;
}

#define PREFETCH 4 /* how many of the base's pairs ahead a row's data is fetched */

/* The iterator's start: the base's side from a[0..n), whose indexes are
** off + those of a (the span of a session's group in tsx->a). */
static int range_start(store *s, int64_t lo, int64_t hi, int desc, store_time_iter *it, int by_sess,
                       const char *sess, size_t len) {
  memset(it, 0, sizeof *it);
  it->lo = lo;
  it->hi = hi;
  it->desc = desc;
  it->end = store_npos(s);
  it->by_sess = by_sess;
  it->sess = sess;
  it->sesslen = len;
  it->done = lo > hi || (by_sess && !sess);
  if (it->done) return STORE_OK;
  int rc = by_sess ? sess_build(s) : base_build(s);
  if (rc == STORE_OK) rc = delta_sync(s);
  if (rc != STORE_OK) return rc;
  s->time_ranges++;
  it->gen = s->time_gen;
  if (by_sess) {
    uint64_t g = tsess_lookup(s->tsx, sess, len), off = 0, n = 0;
    if (g != UINT64_MAX) {
      off = s->tsx->off[g];
      n = s->tsx->off[g + 1] - off;
    }
    span(s->tsx->a + off, n, lo, hi, &it->bb, &it->be);
    it->bb += off;
    it->be += off;
  } else {
    span(s->tb, s->ntb, lo, hi, &it->bb, &it->be);
  }
  it->b = desc ? it->be : it->bb;
  delta_seek(s, it);
  return STORE_OK;
}

int store_time_range(store *s, int64_t lo, int64_t hi, int desc, store_time_iter *it) {
  return range_start(s, lo, hi, desc, it, 0, NULL, 0);
}

int store_time_range_session(store *s, const char *session, size_t len, int64_t lo, int64_t hi, int desc,
                             store_time_iter *it) {
  return range_start(s, lo, hi, desc, it, 1, session, len);
}

int store_time_next(store *s, store_time_iter *it, uint64_t *pos, int64_t *ts) {
  for (;;) {
    if (it->done) return STORE_ENOTFOUND;
    if (it->gen != s->time_gen) /* the base changed: a checkpoint or refresh while walking */
      return store_fail(s, STORE_EINVAL, "store_time_next: the store's base changed during the walk");
    if (s->ntd != s->ndelta || s->td_reuses != s->reuses) {
      int rc = delta_sync(s);
      if (rc != STORE_OK) return rc;
    }
    if (it->dgen != s->td_gen) delta_seek(s, it);
    /* the next pair of each side, and the one that comes first */
    const store_tkey *bp = NULL, *dp = NULL, *ba = it->by_sess ? s->tsx->a : s->tb;
    if (it->desc) {
      if (it->b > it->bb) bp = &ba[it->b - 1];
      if (it->d > it->db) dp = &s->td[it->d - 1];
    } else {
      if (it->b < it->be) bp = &ba[it->b];
      if (it->d < it->de) dp = &s->td[it->d];
    }
    if (!bp && !dp) {
      it->done = 1;
      return STORE_ENOTFOUND;
    }
    int take_d = !bp || (dp && (tkey_cmp(dp, bp) < 0) != it->desc);
    const store_tkey *p = take_d ? dp : bp;
    if (take_d) {
      if (it->desc) it->d--;
      else it->d++;
      it->dhas = 1;
      it->dts = p->ts;
      it->dpos = p->pos;
    } else {
      if (it->desc) it->b--;
      else it->b++;
      /* a row a few steps on: its dead flag and id fetched now, so its cache
      ** misses (positions in ts order are scattered over the file's rows)
      ** overlap with the work on this one and the ones between */
      uint64_t ahead = it->desc ? (it->b >= it->bb + PREFETCH ? it->b - PREFETCH : UINT64_MAX)
                                : (it->b + PREFETCH < it->be ? it->b + PREFETCH : UINT64_MAX);
      if (ahead != UINT64_MAX && ba[ahead].pos < s->nbase) {
        __builtin_prefetch(&s->base_dead[ba[ahead].pos]);
        __builtin_prefetch(&s->base_id[ba[ahead].pos]);
      }
    }
    if (p->pos >= it->end || !store_pos_live(s, p->pos)) continue;
    if (it->has_last) { /* (the order given so far is kept: see store_time_iter) */
      store_tkey last = {it->last_ts, it->last_pos};
      int c = tkey_cmp(p, &last);
      if (it->desc ? c >= 0 : c <= 0) continue;
    }
    if (take_d && it->by_sess) { /* (the base's side holds the session's rows alone) */
      const drec *d = s->delta[p->pos - s->nbase];
      if (!d->str[SESS] || d->len[SESS] != it->sesslen || memcmp(d->str[SESS], it->sess, it->sesslen)) continue;
    }
    *pos = p->pos;
    if (ts) *ts = p->ts;
    it->has_last = 1;
    it->last_ts = p->ts;
    it->last_pos = p->pos;
    return STORE_OK;
  }
}

void store_time_info(const store *s, store_time_stats *st) {
  st->rows = s->tb_built ? s->ntb + s->ntd : 0;
  st->built = s->tb_built;
  st->builds = s->time_builds;
  st->build_us = s->time_build_us;
  st->ranges = s->time_ranges;
  st->sess_built = s->tsx != NULL;
  st->sess_rows = s->tsx ? s->tsx->n : 0;
  st->sessions = s->tsx ? s->tsx->ng : 0;
  st->sess_builds = s->tsx_builds;
  st->sess_build_us = s->tsx_build_us;
}
