/*
** lib/h5/h5_attr.c - attributes: attribute messages in the object header
** (compact) or in a fractal heap indexed by a v2 B-tree (dense, named by
** the attribute info message).
*/
#include "config.h"

#include "h5_int.h"

/* Decode one attribute message and call cb with it. */
static int attr_message(h5_file *f, const uint8_t *data, size_t size,
                        h5_attr_cb cb, void *ctx) {
  h5_cur c = h5c_make(data, size);
  int version = h5c_u8(&c);
  uint8_t flags = 0;
  if (version == 1) {
    h5c_skip(&c, 1);
  } else if (version == 2 || version == 3) {
    flags = h5c_u8(&c);
  } else {
    return h5_err(f, H5_ECORRUPT, "attribute message version %d", version);
  }
  uint16_t nlen = h5c_u16(&c), tlen = h5c_u16(&c), slen = h5c_u16(&c);
  if (version == 3) h5c_skip(&c, 1); /* name character set */
  int pad = version == 1;
#define FIELD(n) (pad ? (((size_t)(n) + 7) & ~(size_t)7) : (size_t)(n))
  const uint8_t *name = h5c_bytes(&c, FIELD(nlen));
  const uint8_t *tdata = h5c_bytes(&c, FIELD(tlen));
  const uint8_t *sdata = h5c_bytes(&c, FIELD(slen));
#undef FIELD
  if (c.bad || nlen == 0 || !memchr(name, 0, nlen))
    return h5_err(f, H5_ECORRUPT, "attribute message malformed");
  /* a shared datatype or dataspace is a reference to the real message */
  const uint8_t *tbody = tdata, *sbody = sdata;
  size_t tsize = tlen, ssize = slen;
  int rc = H5_OK;
  if (flags & 1) {
    h5_msg sh = {H5_MSG_DATATYPE, H5_MSGFLAG_SHARED, -1, tdata, tlen};
    rc = h5_msg_body(f, &sh, &tbody, &tsize);
  }
  if (rc == H5_OK && (flags & 2)) {
    h5_msg sh = {H5_MSG_DATASPACE, H5_MSGFLAG_SHARED, -1, sdata, slen};
    rc = h5_msg_body(f, &sh, &sbody, &ssize);
  }
  if (rc) return rc;
  h5_attr a;
  memset(&a, 0, sizeof a);
  h5_type *type = NULL;
  h5_space space;
  rc = h5_type_decode(f, tbody, tsize, &type);
  if (rc == H5_OK) rc = h5_space_decode(f, sbody, ssize, &space);
  if (rc == H5_OK) {
    a.name = (const char *)name;
    a.type = type;
    a.rank = space.rank;
    memcpy(a.dims, space.dims, sizeof a.dims);
    a.nelems = space.rank < 0 ? 0 : space.nelems;
    uint64_t need = a.nelems * (uint64_t)type->size;
    if (type->size && a.nelems > UINT64_MAX / type->size)
      need = UINT64_MAX;
    a.data = c.p;
    a.data_len = h5c_left(&c);
    if (need > a.data_len)
      rc = h5_err(f, H5_ECORRUPT,
                  "attribute '%s': %llu bytes of data, %zu stored", a.name,
                  (unsigned long long)need, a.data_len);
    else if (cb(ctx, &a))
      rc = H5_ESTOP;
  }
  h5_type_free(type);
  return rc;
}

typedef struct dense_attr_walk {
  h5_file *f;
  h5_fheap *heap;
  h5_attr_cb cb;
  void *ctx;
} dense_attr_walk;

/* An attribute name index record (v2 B-tree type 8): heap ID (8), message
** flags (1), creation order (4), name hash (4).  A shared attribute (flags
** bit 1) is in the file's shared message heap: the ID is its ID there. */
static int dense_attr(void *ctx, const uint8_t *rec, size_t len) {
  dense_attr_walk *w = ctx;
  if (len < 9) return h5_err(w->f, H5_ECORRUPT, "attribute record too short");
  const uint8_t *obj;
  size_t olen;
  int rc;
  if (rec[8] & H5_MSGFLAG_SHARED) {
    uint8_t sh[10] = {3, 1}; /* a shared message, version 3, in the heap */
    memcpy(sh + 2, rec, 8);
    h5_msg m = {H5_MSG_ATTRIBUTE, H5_MSGFLAG_SHARED, -1, sh, sizeof sh};
    rc = h5_msg_body(w->f, &m, &obj, &olen);
  } else {
    rc = h5_fheap_get(w->heap, rec, 8, &obj, &olen);
  }
  return rc ? rc : attr_message(w->f, obj, olen, w->cb, w->ctx);
}

int h5_attr_iter(h5_obj *o, h5_attr_cb cb, void *ctx) {
  h5_file *f = o->f;
  int rc = H5_OK;
  for (uint32_t i = 0; rc == H5_OK && i < o->hdr.nmsg; i++) {
    const h5_msg *m = &o->hdr.msgs[i];
    if (m->type != H5_MSG_ATTRIBUTE) continue;
    const uint8_t *body;
    size_t size;
    rc = h5_msg_body(f, m, &body, &size);
    if (rc == H5_OK) rc = attr_message(f, body, size, cb, ctx);
  }
  const h5_msg *ai = h5_ohdr_find(&o->hdr, H5_MSG_ATTR_INFO);
  if (rc == H5_OK && ai) {
    h5_cur c = h5c_make(ai->data, ai->size);
    int version = h5c_u8(&c);
    uint8_t flags = h5c_u8(&c);
    if (flags & 1) h5c_skip(&c, 2); /* max creation index */
    uint64_t heap = h5c_addr(&c, f), name_bt2 = h5c_addr(&c, f);
    if (c.bad || version != 0)
      return h5_err(f, H5_ECORRUPT, "attribute info message malformed");
    if (heap != H5_UNDEF_ADDR) {
      dense_attr_walk w = {f, NULL, cb, ctx};
      rc = h5_fheap_open(f, heap, &w.heap);
      if (rc == H5_OK) rc = h5_bt2_iter(f, name_bt2, dense_attr, &w);
      h5_fheap_close(w.heap);
    }
  }
  return rc;
}
