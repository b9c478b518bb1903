/*
** test/fuzz/fuzz_h5.c - libFuzzer harness for lib/h5's reader.
**
** Each input is taken as a whole HDF5 file image: open it, walk every group
** (at most 512 objects), list every attribute and turn its value into JSON,
** and read every dataset of at most 4 MiB.  Any failure must be a clean
** error; crashes, leaks, hangs and sanitizer findings are bugs.
** Built and run by test/fuzz/run.sh; its seeds are the conformance
** corpus's files (it writes none of its own).
*/
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "fuzz.h"
#include "h5/h5.h"
#include "util/strbuf.h"

typedef struct fz {
  h5_file *f;
  int budget;
} fz;

static int on_attr(void *ctx, const h5_attr *a) {
  fz *z = ctx;
  if (a->err) return 0; /* (an attribute this reader cannot decode) */
  strbuf sb = {.limit = 1 << 22};
  (void)h5_json_values(z->f, a->type, a->data, a->rank, a->dims, &sb);
  strbuf_free(&sb);
  return 0;
}

static void visit_obj(fz *z, h5_obj *o, int depth);

static int on_link(void *ctx, const h5_link *l) {
  fz *z = ctx;
  if (l->type != H5_LINK_HARD || z->budget <= 0) return 0;
  h5_obj *o;
  if (h5_obj_open(z->f, l->addr, &o) == H5_OK) visit_obj(z, o, 1);
  return 0;
}

static void visit_obj(fz *z, h5_obj *o, int depth) {
  if (--z->budget < 0 || depth > 16) return;
  (void)h5_attr_iter(o, on_attr, z);
  if (h5_obj_kind(o) == H5_KIND_GROUP) {
    (void)h5_group_iter(o, on_link, z);
  } else if (h5_obj_kind(o) == H5_KIND_DATASET) {
    h5_dset_info info;
    if (h5_dset_info_get(o, &info) != H5_OK || info.rank < 0) return;
    uint64_t bytes = info.nelems * (uint64_t)info.type->size;
    if (info.type->size && info.nelems > ((uint64_t)4 << 20) / info.type->size) return;
    uint8_t *buf = malloc(bytes ? (size_t)bytes : 1);
    if (!buf) return;
    if (h5_dset_read(o, buf, (size_t)bytes) == H5_OK) {
      strbuf sb = {.limit = 1 << 24};
      (void)h5_json_values(z->f, info.type, buf, info.rank, info.dims, &sb);
      strbuf_free(&sb);
    }
    free(buf);
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  fz z = {NULL, 512};
  if (h5_open_mem(data, size, &z.f, err, sizeof err) != H5_OK) return 0;
  h5_obj *root;
  if (h5_root(z.f, &root) == H5_OK) visit_obj(&z, root, 0);
  h5_close(z.f);
  return 0;
}
