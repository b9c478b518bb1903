/*
** lib/store/store_time.c - the temporal index: the records in ts order,
** for time ranges (ts BETWEEN a AND b, ts > a, ...) and "the last n
** memories" in O(log n + rows) (store.h, store_time_range).
**
** Two sorted arrays of (ts, position) pairs, ordered by ts and then by
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
** An iterator merges the two: O(log n) to start (binary searches), O(1) a
** row.  Positions from store_npos at its start on (records added while it
** walks) are not visited, as a scan does not visit them.  When the delta
** changes under it (a row inserted or taken back), it finds its place
** again from the last pair it gave (the pairs are unique).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void store_time_free(store *s) {
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

int store_time_range(store *s, int64_t lo, int64_t hi, int desc, store_time_iter *it) {
  memset(it, 0, sizeof *it);
  it->lo = lo;
  it->hi = hi;
  it->desc = desc;
  it->end = store_npos(s);
  it->done = lo > hi;
  if (it->done) return STORE_OK;
  int rc = base_build(s);
  if (rc == STORE_OK) rc = delta_sync(s);
  if (rc != STORE_OK) return rc;
  s->time_ranges++;
  it->gen = s->time_gen;
  span(s->tb, s->ntb, lo, hi, &it->bb, &it->be);
  it->b = desc ? it->be : it->bb;
  delta_seek(s, it);
  return STORE_OK;
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
    const store_tkey *bp = NULL, *dp = NULL;
    if (it->desc) {
      if (it->b > it->bb) bp = &s->tb[it->b - 1];
      if (it->d > it->db) dp = &s->td[it->d - 1];
    } else {
      if (it->b < it->be) bp = &s->tb[it->b];
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
    } else if (it->desc) {
      it->b--;
    } else {
      it->b++;
    }
    if (p->pos >= it->end || !store_pos_live(s, p->pos)) continue;
    *pos = p->pos;
    if (ts) *ts = p->ts;
    return STORE_OK;
  }
}

void store_time_info(const store *s, store_time_stats *st) {
  st->rows = s->tb_built ? s->ntb + s->ntd : 0;
  st->built = s->tb_built;
  st->builds = s->time_builds;
  st->build_us = s->time_build_us;
  st->ranges = s->time_ranges;
}
