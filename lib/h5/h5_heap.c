/*
** lib/h5/h5_heap.c - local heaps (names of old-style groups) and global
** heap collections (variable-length data, region references).
**
** A global heap collection is indexed on first use and the index kept with
** the file, so reading N variable-length elements costs O(N), not O(N^2).
*/
#include "config.h"

#include "h5_int.h"

int h5_lheap_string(h5_file *f, uint64_t heap_addr, uint64_t off,
                    const char **s) {
  h5_cur c = h5_cur_at(f, heap_addr);
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c);
  h5c_skip(&c, 3);
  uint64_t size = h5c_len(&c, f);
  (void)h5c_len(&c, f); /* free list */
  uint64_t data = h5c_addr(&c, f);
  if (c.bad || memcmp(sig, "HEAP", 4) != 0 || version != 0)
    return h5_err(f, H5_ECORRUPT, "no local heap at %llu",
                  (unsigned long long)heap_addr);
  const uint8_t *seg = h5_span(f, data, size);
  if (!seg)
    return h5_err(f, H5_ECORRUPT, "local heap at %llu: data outside the file",
                  (unsigned long long)heap_addr);
  if (off >= size || !memchr(seg + off, 0, (size_t)(size - off)))
    return h5_err(f, H5_ECORRUPT,
                  "local heap at %llu: no string at offset %llu",
                  (unsigned long long)heap_addr, (unsigned long long)off);
  *s = (const char *)seg + off;
  return H5_OK;
}

/* An indexed collection: obj[i] / len[i] for object index i (NULL: none). */
struct h5_gcol {
  uint32_t nidx;
  const uint8_t **obj;
  uint64_t *len;
};

static int gcol_index(h5_file *f, uint64_t addr, struct h5_gcol **out) {
  *out = h5_amap_get(&f->gcols, addr);
  if (*out) return H5_OK;
  h5_cur c = h5_cur_at(f, addr);
  const uint8_t *start = c.p;
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c);
  h5c_skip(&c, 3);
  uint64_t size = h5c_len(&c, f);
  if (c.bad || memcmp(sig, "GCOL", 4) != 0 || version != 1)
    return h5_err(f, H5_ECORRUPT, "no global heap collection at %llu",
                  (unsigned long long)addr);
  if (size < 16 || !h5_span(f, addr, size))
    return h5_err(f, H5_ECORRUPT, "global heap collection at %llu: bad size",
                  (unsigned long long)addr);
  /* first pass: the largest index */
  h5_cur body = h5c_make(start + 16, (size_t)size - 16);
  uint32_t maxidx = 0;
  size_t hdr = 8 + (size_t)f->sl;
  while (h5c_left(&body) >= hdr) {
    uint16_t idx = h5c_u16(&body);
    h5c_skip(&body, 6);
    uint64_t len = h5c_len(&body, f);
    if (idx == 0) break; /* free space: the end */
    if (len > h5c_left(&body))
      return h5_err(f, H5_ECORRUPT,
                    "global heap collection at %llu: object %u overruns it",
                    (unsigned long long)addr, idx);
    h5c_skip(&body, (size_t)((len + 7) & ~(uint64_t)7));
    if (idx > maxidx) maxidx = idx;
  }
  struct h5_gcol *g = calloc(1, sizeof *g + (maxidx + 1) * (sizeof *g->obj + sizeof *g->len));
  if (!g) return h5_err(f, H5_ENOMEM, "out of memory");
  g->nidx = maxidx + 1;
  g->obj = (const uint8_t **)(g + 1);
  g->len = (uint64_t *)(g->obj + g->nidx);
  body = h5c_make(start + 16, (size_t)size - 16);
  while (h5c_left(&body) >= hdr) {
    uint16_t idx = h5c_u16(&body);
    h5c_skip(&body, 6);
    uint64_t len = h5c_len(&body, f);
    if (idx == 0) break;
    g->obj[idx] = body.p;
    g->len[idx] = len;
    h5c_skip(&body, (size_t)((len + 7) & ~(uint64_t)7));
  }
  if (h5_amap_put(&f->gcols, addr, g)) {
    free(g);
    return h5_err(f, H5_ENOMEM, "out of memory");
  }
  *out = g;
  return H5_OK;
}

int h5_gheap_get(h5_file *f, uint64_t addr, uint32_t idx,
                 const uint8_t **data, size_t *len) {
  struct h5_gcol *g;
  int rc = gcol_index(f, addr, &g);
  if (rc) return rc;
  if (idx >= g->nidx || !g->obj[idx])
    return h5_err(f, H5_ECORRUPT,
                  "global heap collection at %llu has no object %u",
                  (unsigned long long)addr, idx);
  *data = g->obj[idx];
  *len = (size_t)g->len[idx];
  return H5_OK;
}

int h5_vlen_get(h5_file *f, const uint8_t *elem, const uint8_t **data,
                size_t *len, uint32_t *count) {
  h5_cur c = h5c_make(elem, 8 + (size_t)f->so);
  *count = h5c_u32(&c);
  uint64_t addr = h5c_addr(&c, f);
  uint32_t idx = h5c_u32(&c);
  *data = NULL;
  *len = 0;
  if (addr == 0 || addr == H5_UNDEF_ADDR) return H5_OK; /* a NULL element */
  if (idx == 0 && *count == 0) return H5_OK;
  return h5_gheap_get(f, addr, idx, data, len);
}
