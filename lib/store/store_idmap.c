/*
** lib/store/store_idmap.c - the id map: int64 key -> position, open
** addressing with linear probing (store_int.h).  Used for a store's ids
** (store.c) and the graph tables' ids and pairs (store_graph.c).
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

static uint64_t hash64(int64_t k) {
  uint64_t x = (uint64_t)k;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* The map rebuilt with room for cap slots (a power of two, > m->n). */
static int idmap_resize(idmap *m, uint64_t cap) {
  int64_t *key = malloc(cap * sizeof *key);
  uint64_t *val = malloc(cap * sizeof *val);
  if (!key || !val) {
    free(key);
    free(val);
    return STORE_ENOMEM;
  }
  memset(val, 0xff, cap * sizeof *val);
  for (uint64_t i = 0; i < m->cap; i++) {
    if (m->val[i] == UINT64_MAX) continue;
    uint64_t h = hash64(m->key[i]) & (cap - 1);
    while (val[h] != UINT64_MAX) h = (h + 1) & (cap - 1);
    key[h] = m->key[i];
    val[h] = m->val[i];
  }
  free(m->key);
  free(m->val);
  m->key = key;
  m->val = val;
  m->cap = cap;
  return STORE_OK;
}

static int idmap_grow(idmap *m) { return idmap_resize(m, m->cap ? m->cap * 2 : 1024); }

int idmap_reserve(idmap *m, uint64_t n) {
  uint64_t cap = m->cap ? m->cap : 1024;
  while (n * 4 > cap * 3) {
    if (cap > UINT64_MAX / 4) return STORE_ENOMEM;
    cap *= 2;
  }
  return cap > m->cap ? idmap_resize(m, cap) : STORE_OK;
}

uint64_t *idmap_slot(const idmap *m, int64_t id) {
  if (!m->cap) return NULL;
  uint64_t h = hash64(id) & (m->cap - 1);
  while (m->val[h] != UINT64_MAX) {
    if (m->key[h] == id) return &m->val[h];
    h = (h + 1) & (m->cap - 1);
  }
  return NULL;
}

int idmap_put(idmap *m, int64_t id, uint64_t pos) {
  uint64_t *v = idmap_slot(m, id);
  if (v) {
    *v = pos;
    return STORE_OK;
  }
  if ((m->n + 1) * 4 > m->cap * 3) {
    int rc = idmap_grow(m);
    if (rc) return rc;
  }
  uint64_t h = hash64(id) & (m->cap - 1);
  while (m->val[h] != UINT64_MAX) h = (h + 1) & (m->cap - 1);
  m->key[h] = id;
  m->val[h] = pos;
  m->n++;
  return STORE_OK;
}

/* Remove id (backward-shift deletion keeps probe chains whole). */
void idmap_del(idmap *m, int64_t id) {
  uint64_t *v = idmap_slot(m, id);
  if (!v) return;
  uint64_t i = (uint64_t)(v - m->val), mask = m->cap - 1;
  m->val[i] = UINT64_MAX;
  m->n--;
  for (uint64_t j = (i + 1) & mask; m->val[j] != UINT64_MAX; j = (j + 1) & mask) {
    uint64_t h = hash64(m->key[j]) & mask;
    /* j's entry may move to i when i lies cyclically in [h, j) */
    int move = i <= j ? (h <= i || h > j) : (h <= i && h > j);
    if (move) {
      m->key[i] = m->key[j];
      m->val[i] = m->val[j];
      m->val[j] = UINT64_MAX;
      i = j;
    }
  }
}

void idmap_clear(idmap *m) {
  if (m->cap) memset(m->val, 0xff, m->cap * sizeof *m->val);
  m->n = 0;
}

void idmap_free(idmap *m) {
  free(m->key);
  free(m->val);
  memset(m, 0, sizeof *m);
}
