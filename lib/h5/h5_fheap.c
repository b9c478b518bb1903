/*
** lib/h5/h5_fheap.c - fractal heaps (FRHP/FHDB/FHIB).  Placeholder until the
** implementation lands: every call reports "not supported yet".
*/
#include "config.h"

#include "h5_int.h"

int h5_fheap_open(h5_file *f, uint64_t addr, h5_fheap **out) {
  *out = NULL;
  return h5_err(f, H5_EUNSUPPORTED, "fractal heap at %llu: not supported yet",
                (unsigned long long)addr);
}

int h5_fheap_get(h5_fheap *h, const uint8_t *id, size_t idlen,
                 const uint8_t **data, size_t *len) {
  (void)h;
  (void)id;
  (void)idlen;
  *data = NULL;
  *len = 0;
  return H5_EUNSUPPORTED;
}

void h5_fheap_close(h5_fheap *h) { (void)h; }
