/*
** lib/h5/h5_btree2.c - version 2 B-trees (BTHD/BTIN/BTLF).  Placeholder
** until the implementation lands: every call reports "not supported yet".
*/
#include "config.h"

#include "h5_int.h"

int h5_bt2_iter(h5_file *f, uint64_t addr, h5_bt2_cb cb, void *ctx) {
  (void)cb;
  (void)ctx;
  return h5_err(f, H5_EUNSUPPORTED, "v2 B-tree at %llu: not supported yet",
                (unsigned long long)addr);
}
