/*
** lib/h5/h5_chunk.c - chunked datasets: the chunk indexes (v1 B-tree,
** single chunk, implicit, fixed array, extensible array, v2 B-tree).
** Placeholder until the implementation lands.
*/
#include "config.h"

#include "h5_int.h"

int h5_chunked_read(h5_file *f, struct h5_dset *d, uint8_t *buf, size_t buflen) {
  (void)buf;
  (void)buflen;
  return h5_err(f, H5_EUNSUPPORTED, "chunk index type %d: not supported yet",
                d->cidx);
}
