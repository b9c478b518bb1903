/*
** lib/h5/h5_filter.c - the filter pipeline: deflate, shuffle, fletcher32,
** nbit, scaleoffset.  Placeholder until the implementation lands.
*/
#include "config.h"

#include "h5_int.h"

int h5_unfilter(h5_file *f, const struct h5_dset *d, uint32_t mask,
                const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen) {
  (void)d;
  (void)mask;
  (void)in;
  (void)inlen;
  *out = NULL;
  *outlen = 0;
  return h5_err(f, H5_EUNSUPPORTED, "filters: not supported yet");
}
