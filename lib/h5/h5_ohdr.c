/*
** lib/h5/h5_ohdr.c - object headers (v1 and v2) and their messages.
**
** An object header is a prefix and one or more chunks of messages; a
** continuation message names the next chunk.  h5_ohdr_read collects every
** message of every chunk into one array.  Chunks already visited are
** refused (a cycle), as are more than H5_MAX_CONTINUATIONS chunks.
*/
#include "config.h"

#include "h5_int.h"

/* Message array growth. */
static int push_msg(h5_file *f, h5_ohdr *h, size_t *cap, const h5_msg *m) {
  if (h->nmsg == *cap) {
    size_t ncap = *cap ? *cap * 2 : 16;
    h5_msg *nm = realloc(h->msgs, ncap * sizeof *nm);
    if (!nm) return h5_err(f, H5_ENOMEM, "out of memory");
    h->msgs = nm;
    *cap = ncap;
  }
  h->msgs[h->nmsg++] = *m;
  return H5_OK;
}

/* A pending continuation block. */
typedef struct chunk_ref {
  uint64_t addr, len;
} chunk_ref;

typedef struct chunk_list {
  chunk_ref *v;
  size_t n, cap, next;
} chunk_list;

static int add_chunk(h5_file *f, chunk_list *l, uint64_t addr, uint64_t len,
                     uint64_t hdr_addr) {
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i].addr == addr)
      return h5_err(f, H5_ECORRUPT,
                    "object header at %llu: continuation blocks form a cycle",
                    (unsigned long long)hdr_addr);
  if (l->n >= H5_MAX_CONTINUATIONS)
    return h5_err(f, H5_ECORRUPT,
                  "object header at %llu: more than %d continuation blocks",
                  (unsigned long long)hdr_addr, H5_MAX_CONTINUATIONS);
  if (l->n == l->cap) {
    size_t ncap = l->cap ? l->cap * 2 : 8;
    chunk_ref *nv = realloc(l->v, ncap * sizeof *nv);
    if (!nv) return h5_err(f, H5_ENOMEM, "out of memory");
    l->v = nv;
    l->cap = ncap;
  }
  l->v[l->n].addr = addr;
  l->v[l->n].len = len;
  l->n++;
  return H5_OK;
}

/* Record a continuation message's target for later. */
static int note_continuation(h5_file *f, const h5_msg *m, chunk_list *l,
                             uint64_t hdr_addr) {
  h5_cur c = h5c_make(m->data, m->size);
  uint64_t addr = h5c_addr(&c, f), len = h5c_len(&c, f);
  if (c.bad || !h5_span(f, addr, len) || len == 0)
    return h5_err(f, H5_ECORRUPT,
                  "object header at %llu: continuation block outside the file",
                  (unsigned long long)hdr_addr);
  return add_chunk(f, l, addr, len, hdr_addr);
}

/* Keep a message found in a chunk, its prefix read into *m and its body of
** m->size bytes next at c: note where a continuation leads, drop NIL
** (padding) messages. */
static int take_msg(h5_file *f, h5_ohdr *h, size_t *cap, h5_cur *c, h5_msg *m,
                    chunk_list *l, uint64_t hdr_addr) {
  m->data = h5c_bytes(c, m->size);
  if (!m->data)
    return h5_err(f, H5_ECORRUPT,
                  "object header at %llu: message of %zu bytes overruns its block",
                  (unsigned long long)hdr_addr, m->size);
  if (m->type == H5_MSG_CONTINUATION) {
    int rc = note_continuation(f, m, l, hdr_addr);
    if (rc) return rc;
  }
  return m->type == H5_MSG_NIL ? H5_OK : push_msg(f, h, cap, m);
}

/* Messages of one v1 chunk: 8-byte aligned, 8-byte prefixes. */
static int v1_chunk(h5_file *f, h5_ohdr *h, size_t *cap, const uint8_t *p,
                    size_t len, chunk_list *l, uint64_t hdr_addr) {
  size_t off = 0;
  while (off + 8 <= len) {
    h5_cur c = h5c_make(p + off, len - off);
    h5_msg m;
    m.type = h5c_u16(&c);
    uint16_t size = h5c_u16(&c);
    m.flags = h5c_u8(&c);
    h5c_skip(&c, 3);
    m.corder = -1;
    m.size = size;
    off += 8 + (((size_t)size + 7) & ~(size_t)7);
    int rc = take_msg(f, h, cap, &c, &m, l, hdr_addr);
    if (rc) return rc;
  }
  return H5_OK;
}

/* Messages of one v2 chunk (between prefix/signature and checksum). */
static int v2_chunk(h5_file *f, h5_ohdr *h, size_t *cap, const uint8_t *p,
                    size_t len, chunk_list *l, uint64_t hdr_addr) {
  size_t prefix = (h->flags & 0x04) ? 6 : 4;
  size_t off = 0;
  while (len - off >= prefix) { /* less than a prefix left: a gap */
    h5_cur c = h5c_make(p + off, len - off);
    h5_msg m;
    m.type = h5c_u8(&c);
    uint16_t size = h5c_u16(&c);
    m.flags = h5c_u8(&c);
    m.corder = (h->flags & 0x04) ? (int32_t)h5c_u16(&c) : -1;
    m.size = size;
    off += prefix + size;
    int rc = take_msg(f, h, cap, &c, &m, l, hdr_addr);
    if (rc) return rc;
  }
  return H5_OK;
}

int h5_ohdr_read(h5_file *f, uint64_t addr, h5_ohdr *out) {
  memset(out, 0, sizeof *out);
  size_t cap = 0;
  chunk_list l = {0};
  int rc = H5_OK;
  const uint8_t *p = h5_span(f, addr, 16);
  if (!p) {
    return h5_err(f, H5_ECORRUPT, "object header address %llu outside the file",
                  (unsigned long long)addr);
  }
  /* The object header itself is a chunk too, for the cycle check. */
  if ((rc = add_chunk(f, &l, addr, 0, addr))) goto done;
  l.next = 1;

  if (memcmp(p, "OHDR", 4) == 0) {
    h5_cur c = h5_cur_at(f, addr);
    h5c_skip(&c, 4);
    out->version = h5c_u8(&c);
    out->flags = h5c_u8(&c);
    if (out->version != 2) {
      rc = h5_err(f, H5_EUNSUPPORTED, "object header at %llu: version %d",
                  (unsigned long long)addr, out->version);
      goto done;
    }
    out->mtime = -1;
    if (out->flags & 0x20) { /* access, modification, change, birth times */
      h5c_skip(&c, 4);
      out->mtime = h5c_u32(&c);
      h5c_skip(&c, 8);
    }
    if (out->flags & 0x10) h5c_skip(&c, 4);
    uint64_t size0 = h5c_uint(&c, 1 << (out->flags & 3));
    const uint8_t *body = h5c_bytes(&c, (size_t)size0);
    if (c.bad || size0 > f->size || h5c_left(&c) < 4) {
      rc = h5_err(f, H5_ECORRUPT, "object header at %llu overruns the file",
                  (unsigned long long)addr);
      goto done;
    }
    if (!h5_checksum_ok(p, (size_t)(body + size0 - p))) {
      rc = h5_err(f, H5_ECORRUPT, "object header at %llu: checksum mismatch",
                  (unsigned long long)addr);
      goto done;
    }
    rc = v2_chunk(f, out, &cap, body, (size_t)size0, &l, addr);
    while (rc == H5_OK && l.next < l.n) {
      chunk_ref r = l.v[l.next++];
      const uint8_t *q = h5_span(f, r.addr, r.len);
      if (!q || r.len < 8 || memcmp(q, "OCHK", 4) != 0) {
        rc = h5_err(f, H5_ECORRUPT,
                    "object header at %llu: bad continuation block at %llu",
                    (unsigned long long)addr, (unsigned long long)r.addr);
        break;
      }
      if (!h5_checksum_ok(q, (size_t)r.len - 4)) {
        rc = h5_err(f, H5_ECORRUPT,
                    "object header at %llu: continuation block checksum mismatch",
                    (unsigned long long)addr);
        break;
      }
      rc = v2_chunk(f, out, &cap, q + 4, (size_t)r.len - 8, &l, addr);
    }
  } else {
    h5_cur c = h5_cur_at(f, addr);
    out->mtime = -1;
    out->version = h5c_u8(&c);
    if (out->version != 1) {
      rc = h5_err(f, H5_ECORRUPT,
                  "object header at %llu: unknown version %d (no OHDR signature)",
                  (unsigned long long)addr, out->version);
      goto done;
    }
    h5c_skip(&c, 1);
    (void)h5c_u16(&c); /* number of messages: counted as found */
    h5c_skip(&c, 4);   /* reference count */
    uint32_t size0 = h5c_u32(&c);
    h5c_skip(&c, 4);   /* pad to 8 */
    const uint8_t *body = h5c_bytes(&c, size0);
    if (!body) {
      rc = h5_err(f, H5_ECORRUPT, "object header at %llu overruns the file",
                  (unsigned long long)addr);
      goto done;
    }
    rc = v1_chunk(f, out, &cap, body, size0, &l, addr);
    while (rc == H5_OK && l.next < l.n) {
      chunk_ref r = l.v[l.next++];
      rc = v1_chunk(f, out, &cap, h5_span(f, r.addr, r.len), (size_t)r.len, &l,
                    addr);
    }
  }
done:
  free(l.v);
  if (rc != H5_OK) h5_ohdr_free(out);
  return rc;
}

void h5_ohdr_free(h5_ohdr *h) {
  free(h->msgs);
  h->msgs = NULL;
  h->nmsg = 0;
}

const h5_msg *h5_ohdr_find(const h5_ohdr *h, uint16_t type) {
  for (uint32_t i = 0; i < h->nmsg; i++)
    if (h->msgs[i].type == type) return &h->msgs[i];
  return NULL;
}

/* ---- the shared message heap (SOHM) ---------------------------------------
** The superblock extension holds a shared message table message naming the
** table ("SMTB") of indexes; each index tracks some message types (bit 1 << type
** of its flags, as libhdf5 writes them) and keeps their bodies in a fractal
** heap.  A shared message of version 3, type 1 holds the 8-byte heap ID of
** its body in the heap of the index for its type.  The heaps stay open in
** f->sohm_heaps until the file is closed, so the bodies they return stay
** valid. */

#define SOHM_ID_LEN 8

/* The fractal heap of the shared message index that tracks message type. */
static int sohm_heap(h5_file *f, uint16_t type, h5_fheap **out) {
  *out = NULL;
  if (f->ext_addr == H5_UNDEF_ADDR)
    return h5_err(f, H5_ECORRUPT,
                  "message 0x%x is in the shared message heap, but the file "
                  "has no superblock extension",
                  type);
  h5_obj *ext;
  int rc = h5_obj_open(f, f->ext_addr, &ext);
  if (rc) return rc;
  const h5_msg *tm = h5_ohdr_find(&ext->hdr, H5_MSG_SOHM_TABLE);
  if (!tm)
    return h5_err(f, H5_ECORRUPT,
                  "message 0x%x is in the shared message heap, but the file "
                  "has no shared message table",
                  type);
  h5_cur c = h5c_make(tm->data, tm->size);
  int version = h5c_u8(&c);
  uint64_t table = h5c_addr(&c, f);
  unsigned nidx = h5c_u8(&c);
  if (c.bad || version != 0)
    return h5_err(f, H5_ECORRUPT, "shared message table message malformed");
  /* the table: signature, nidx index headers, checksum */
  size_t entry = 14 + 2 * (size_t)f->so;
  size_t len = 4 + nidx * entry;
  const uint8_t *p = h5_span(f, table, len + 4);
  if (!p || memcmp(p, "SMTB", 4) != 0)
    return h5_err(f, H5_ECORRUPT, "no shared message table at %llu",
                  (unsigned long long)table);
  if (!h5_checksum_ok(p, len))
    return h5_err(f, H5_ECORRUPT,
                  "shared message table at %llu: checksum mismatch",
                  (unsigned long long)table);
  /* the old fill value message is indexed as the new one */
  unsigned bit = type == H5_MSG_FILL_OLD ? H5_MSG_FILL : type;
  uint32_t flag = bit < 16 ? UINT32_C(1) << bit : 0;
  c = h5c_make(p + 4, nidx * entry);
  for (unsigned i = 0; i < nidx; i++) {
    int iversion = h5c_u8(&c);
    (void)h5c_u8(&c); /* index type: list or v2 B-tree, not needed */
    uint16_t types = h5c_u16(&c);
    h5c_skip(&c, 10); /* minimum size, cutoffs, number of messages */
    (void)h5c_addr(&c, f); /* the index */
    uint64_t heap = h5c_addr(&c, f);
    if (c.bad || iversion != 0)
      return h5_err(f, H5_ECORRUPT,
                    "shared message table at %llu: index %u malformed",
                    (unsigned long long)table, i);
    if (!(types & flag)) continue;
    if (heap == H5_UNDEF_ADDR)
      return h5_err(f, H5_ECORRUPT,
                    "shared message table at %llu: index %u has no heap",
                    (unsigned long long)table, i);
    *out = h5_amap_get(&f->sohm_heaps, heap);
    if (*out) return H5_OK;
    rc = h5_fheap_open(f, heap, out);
    if (rc) return rc;
    if (h5_amap_put(&f->sohm_heaps, heap, *out)) {
      h5_fheap_close(*out);
      *out = NULL;
      return h5_err(f, H5_ENOMEM, "out of memory");
    }
    return H5_OK;
  }
  return h5_err(f, H5_ECORRUPT,
                "message 0x%x is in the shared message heap, but no index of "
                "the shared message table tracks its type",
                type);
}

int h5_msg_body(h5_file *f, const h5_msg *m, const uint8_t **data,
                size_t *size) {
  if (!(m->flags & H5_MSGFLAG_SHARED)) {
    *data = m->data;
    *size = m->size;
    return H5_OK;
  }
  h5_cur c = h5c_make(m->data, m->size);
  int version = h5c_u8(&c);
  int type = h5c_u8(&c);
  uint64_t addr;
  if (version == 1) {
    /* reserved bytes, then an old symbol table entry: heap offset, address */
    h5c_skip(&c, 6 + (size_t)f->sl);
    addr = h5c_addr(&c, f);
  } else if (version == 2 || (version == 3 && type == 2)) {
    addr = h5c_addr(&c, f);
  } else if (version == 3 && type == 1) {
    const uint8_t *id = h5c_bytes(&c, SOHM_ID_LEN);
    if (!id) return h5_err(f, H5_ECORRUPT, "shared message truncated");
    h5_fheap *heap;
    int rc = sohm_heap(f, m->type, &heap);
    if (rc == H5_OK) rc = h5_fheap_get(heap, id, SOHM_ID_LEN, data, size);
    return rc;
  } else {
    return h5_err(f, H5_ECORRUPT, "shared message: version %d type %d", version,
                  type);
  }
  if (c.bad) return h5_err(f, H5_ECORRUPT, "shared message truncated");
  h5_obj *o;
  int rc = h5_obj_open(f, addr, &o);
  if (rc) return rc;
  const h5_msg *t = h5_ohdr_find(&o->hdr, m->type);
  if (!t || (t->flags & H5_MSGFLAG_SHARED))
    return h5_err(f, H5_ECORRUPT,
                  "shared message 0x%x: the object at %llu does not hold it",
                  m->type, (unsigned long long)addr);
  *data = t->data;
  *size = t->size;
  return H5_OK;
}
