/*
** lib/h5/h5_btree2.c - version 2 B-trees: a header ("BTHD") naming the root
** node, internal nodes ("BTIN") and leaves ("BTLF"), each checksummed.
**
** h5_bt2_iter visits every record in key order (child 0, record 0, child 1,
** ..., child N).  The records are opaque here: the callback gets a pointer to
** each one in the map and the record size from the header.
**
** Nodes do not store how many records they hold: the parent's pointer (or,
** for the root, the header) does.  The widths of those counts are not stored
** either; they follow from the node size and record size as libhdf5 computes
** them (H5B2hdr.c):
**   leaf capacity     max[0] = (node_size - 10) / rec_size
**   count width       nw     = bytes(max[0])        (the same at every level)
**   pointer at depth d       = address, count (nw bytes), and for d > 1 the
**                              total below it (tw[d-1] bytes)
**   capacity at depth d      max[d] = (node_size - 10 - ptr) / (rec_size + ptr)
**   most records below d     cum[d] = (max[d] + 1) * cum[d-1] + max[d]
**   total width       tw[d]  = bytes(cum[d])
** where 10 is the signature, version, type and checksum, and bytes(n) is
** floor(log2(n)) / 8 + 1.  The spec describes the count width per level; the
** files (and libhdf5) use the leaf's for all levels.
**
** Corrupt trees end in an error: the depth is bounded by H5_MAX_BTREE_DEPTH,
** every node's level is one below its parent's, no node is visited twice,
** every count is checked against the capacity of its level, and every node
** lies inside the file with a matching checksum.
*/
#include "config.h"

#include "h5_int.h"


typedef struct bt2_walk {
  h5_file *f;
  uint64_t hdr_addr;
  int type;
  uint32_t node_size;
  uint16_t rec_size;
  h5_bt2_geom g;
  h5_bt2_cb cb;
  void *ctx;
  h5_amap seen;
} bt2_walk;

int h5_bt2_geometry(uint64_t node_size, uint64_t rec_size, int so, int depth,
                    h5_bt2_geom *g) {
  if (rec_size == 0 || node_size <= H5_BT2_PREFIX || depth > H5_MAX_BTREE_DEPTH) return -1;
  uint64_t leaf = (node_size - H5_BT2_PREFIX) / rec_size;
  if (leaf == 0) return -1;
  g->max[0] = g->cum[0] = leaf;
  g->tw[0] = 0;
  g->nw = h5_enc_bytes(leaf);
  for (int d = 1; d <= depth; d++) {
    uint64_t ptr = (uint64_t)so + (uint64_t)g->nw + (uint64_t)g->tw[d - 1];
    if (node_size < H5_BT2_PREFIX + ptr) return -1;
    uint64_t max = (node_size - H5_BT2_PREFIX - ptr) / (rec_size + ptr);
    if (max == 0) return -1;
    g->max[d] = max;
    /* cum = (max + 1) * cum + max, saturating */
    uint64_t cum = g->cum[d - 1];
    g->cum[d] = cum > (UINT64_MAX - max) / (max + 1) ? UINT64_MAX : (max + 1) * cum + max;
    int tw = h5_enc_bytes(g->cum[d]);
    g->tw[d] = tw > 8 ? 8 : tw;
  }
  return 0;
}

static int visit(bt2_walk *w, uint64_t addr, int depth, uint64_t nrec) {
  h5_file *f = w->f;
  if (h5_amap_get(&w->seen, addr))
    return h5_err(f, H5_ECORRUPT, "v2 B-tree at %llu: node at %llu reached twice",
                  (unsigned long long)w->hdr_addr, (unsigned long long)addr);
  if (h5_amap_put(&w->seen, addr, (void *)1))
    return h5_err(f, H5_ENOMEM, "out of memory");
  if (nrec > w->g.max[depth])
    return h5_err(f, H5_ECORRUPT,
                  "v2 B-tree at %llu: node at %llu has %llu records, at most "
                  "%llu fit",
                  (unsigned long long)w->hdr_addr, (unsigned long long)addr,
                  (unsigned long long)nrec, (unsigned long long)w->g.max[depth]);
  /* the node's bytes up to and including its checksum */
  uint64_t ptr = depth > 0 ? (uint64_t)f->so + (uint64_t)w->g.nw +
                                 (uint64_t)(depth > 1 ? w->g.tw[depth - 1] : 0)
                           : 0;
  uint64_t used = H5_BT2_PREFIX + nrec * w->rec_size + (depth > 0 ? (nrec + 1) * ptr : 0);
  const uint8_t *p = used <= w->node_size ? h5_span(f, addr, used) : NULL;
  if (!p)
    return h5_err(f, H5_ECORRUPT,
                  "v2 B-tree at %llu: node at %llu outside the file",
                  (unsigned long long)w->hdr_addr, (unsigned long long)addr);
  const char *sig = depth > 0 ? "BTIN" : "BTLF";
  if (memcmp(p, sig, 4) != 0 || p[4] != 0 || p[5] != w->type)
    return h5_err(f, H5_ECORRUPT,
                  "v2 B-tree at %llu: no %s node (version 0, type %d) at %llu",
                  (unsigned long long)w->hdr_addr, sig, w->type,
                  (unsigned long long)addr);
  if (!h5_checksum_ok(p, (size_t)used - 4))
    return h5_err(f, H5_ECORRUPT,
                  "v2 B-tree at %llu: checksum mismatch in node at %llu",
                  (unsigned long long)w->hdr_addr, (unsigned long long)addr);
  const uint8_t *recs = p + 6;
  if (depth == 0) {
    for (uint64_t i = 0; i < nrec; i++) {
      int rc = w->cb(w->ctx, recs + i * w->rec_size, w->rec_size);
      if (rc) return rc;
    }
    return H5_OK;
  }
  h5_cur c = h5c_make(recs + nrec * w->rec_size, (size_t)((nrec + 1) * ptr));
  int tw = depth > 1 ? w->g.tw[depth - 1] : 0;
  for (uint64_t i = 0; i <= nrec; i++) {
    uint64_t child = h5c_addr(&c, f);
    uint64_t child_nrec = h5c_uint(&c, w->g.nw);
    if (tw) (void)h5c_uint(&c, tw); /* records below the child: not needed */
    if (c.bad) /* cannot happen: the span was sized for these */
      return h5_err(f, H5_ECORRUPT, "v2 B-tree node at %llu truncated",
                    (unsigned long long)addr);
    int rc = visit(w, child, depth - 1, child_nrec);
    if (rc) return rc;
    if (i < nrec) {
      rc = w->cb(w->ctx, recs + i * w->rec_size, w->rec_size);
      if (rc) return rc;
    }
  }
  return H5_OK;
}

int h5_bt2_iter(h5_file *f, uint64_t addr, h5_bt2_cb cb, void *ctx) {
  h5_cur c = h5_cur_at(f, addr);
  const uint8_t *start = c.p;
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c);
  int type = h5c_u8(&c);
  uint32_t node_size = h5c_u32(&c);
  uint16_t rec_size = h5c_u16(&c);
  uint16_t depth = h5c_u16(&c);
  h5c_skip(&c, 2); /* split and merge percents */
  uint64_t root = h5c_addr(&c, f);
  uint16_t root_nrec = h5c_u16(&c);
  (void)h5c_len(&c, f); /* records in the whole tree */
  if (c.bad || h5c_left(&c) < 4 || memcmp(sig, "BTHD", 4) != 0)
    return h5_err(f, H5_ECORRUPT, "no v2 B-tree header at %llu",
                  (unsigned long long)addr);
  if (version != 0)
    return h5_err(f, H5_EUNSUPPORTED, "v2 B-tree at %llu: version %d",
                  (unsigned long long)addr, version);
  if (!h5_checksum_ok(start, (size_t)(c.p - start)))
    return h5_err(f, H5_ECORRUPT, "v2 B-tree at %llu: header checksum mismatch",
                  (unsigned long long)addr);
  if (root == H5_UNDEF_ADDR) return H5_OK; /* an empty tree */
  if (rec_size == 0 || node_size <= H5_BT2_PREFIX)
    return h5_err(f, H5_ECORRUPT,
                  "v2 B-tree at %llu: records of %u bytes in nodes of %u",
                  (unsigned long long)addr, rec_size, node_size);
  if (depth > H5_MAX_BTREE_DEPTH)
    return h5_err(f, H5_ECORRUPT, "v2 B-tree at %llu: depth %u (more than %d)",
                  (unsigned long long)addr, depth, H5_MAX_BTREE_DEPTH);
  bt2_walk *w = calloc(1, sizeof *w);
  if (!w) return h5_err(f, H5_ENOMEM, "out of memory");
  w->f = f;
  w->hdr_addr = addr;
  w->type = type;
  w->node_size = node_size;
  w->rec_size = rec_size;
  w->cb = cb;
  w->ctx = ctx;
  int rc;
  if (h5_bt2_geometry(node_size, rec_size, f->so, (int)depth, &w->g))
    rc = h5_err(f, H5_ECORRUPT,
                "v2 B-tree at %llu: nodes of %u bytes cannot hold records of "
                "%u bytes at depth %u",
                (unsigned long long)addr, node_size, rec_size, depth);
  else
    rc = visit(w, root, depth, root_nrec);
  h5_amap_free(&w->seen);
  free(w);
  return rc;
}
