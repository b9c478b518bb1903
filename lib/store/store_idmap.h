/*
** lib/store/store_idmap.h - the id map of lib/store (store_idmap.c).
*/
#ifndef H5MEM_STORE_IDMAP_H
#define H5MEM_STORE_IDMAP_H

#include <stdint.h>

/* int64 key -> position, open addressing with linear probing (zero it
** to start; idmap_free to end). */
typedef struct idmap {
  int64_t *key;
  uint64_t *val; /* UINT64_MAX: empty */
  uint64_t cap, n;
} idmap;
uint64_t *idmap_slot(const idmap *m, int64_t id); /* NULL: absent */
int idmap_put(idmap *m, int64_t id, uint64_t pos); /* STORE_OK or STORE_ENOMEM */
void idmap_del(idmap *m, int64_t id);
/* Empty the map, keeping its room: putting at most as many keys as it held
** then never allocates (so never fails). */
void idmap_clear(idmap *m);
void idmap_free(idmap *m);

#endif
