/*
** lib/h5/h5_btree1.c - version 1 B-trees ("TREE" nodes): the index of
** old-style groups (type 0) and of chunks in layout v1-v3 (type 1).
**
** h5_bt1_iter visits the children of the leaves in key order, skipping the
** subtrees its caller rules out by their keys (a chunk read visits only the
** nodes above the chunks it wants).  Each node's
** level must be one below its parent's, and no node may be visited twice,
** so corrupt trees end in an error rather than a loop.
*/
#include "config.h"

#include "h5_int.h"

typedef struct walk {
  h5_file *f;
  int type;
  size_t keylen;
  h5_bt1_skip skip;
  h5_bt1_cb cb;
  void *ctx;
  h5_amap seen;
} walk;

static int visit(walk *w, uint64_t addr, int want_level, int depth) {
  h5_file *f = w->f;
  if (depth > H5_MAX_BTREE_DEPTH)
    return h5_err(f, H5_ECORRUPT, "v1 B-tree deeper than %d", H5_MAX_BTREE_DEPTH);
  if (h5_amap_get(&w->seen, addr))
    return h5_err(f, H5_ECORRUPT, "v1 B-tree node at %llu reached twice",
                  (unsigned long long)addr);
  if (h5_amap_put(&w->seen, addr, (void *)1))
    return h5_err(f, H5_ENOMEM, "out of memory");
  h5_cur c = h5_cur_at(f, addr);
  const uint8_t *sig = h5c_bytes(&c, 4);
  int type = h5c_u8(&c);
  int level = h5c_u8(&c);
  uint16_t used = h5c_u16(&c);
  (void)h5c_addr(&c, f); /* left sibling */
  (void)h5c_addr(&c, f); /* right sibling */
  if (c.bad || memcmp(sig, "TREE", 4) != 0)
    return h5_err(f, H5_ECORRUPT, "no v1 B-tree node at %llu",
                  (unsigned long long)addr);
  if (type != w->type || (want_level >= 0 && level != want_level))
    return h5_err(f, H5_ECORRUPT, "v1 B-tree node at %llu: type %d level %d",
                  (unsigned long long)addr, type, level);
  size_t need = (size_t)used * (w->keylen + (size_t)f->so) + w->keylen;
  if (h5c_left(&c) < need)
    return h5_err(f, H5_ECORRUPT, "v1 B-tree node at %llu overruns the file",
                  (unsigned long long)addr);
  for (uint16_t i = 0; i < used; i++) {
    const uint8_t *left = h5c_bytes(&c, w->keylen);
    uint64_t child = h5c_addr(&c, f);
    const uint8_t *right = c.p; /* the next key, present by the check above */
    if (w->skip && w->skip(w->ctx, left, right)) continue;
    int rc = level == 0 ? w->cb(w->ctx, left, right, child)
                        : visit(w, child, level - 1, depth + 1);
    if (rc) return rc;
  }
  return H5_OK;
}

int h5_bt1_iter(h5_file *f, uint64_t addr, int type, size_t keylen,
                h5_bt1_skip skip, h5_bt1_cb cb, void *ctx) {
  walk w = {f, type, keylen, skip, cb, ctx, {0}};
  int rc = visit(&w, addr, -1, 0);
  h5_amap_free(&w.seen);
  return rc;
}
