/*
** lib/h5/h5_chunk.c - chunked datasets: the chunk indexes (v1 B-tree,
** single chunk, implicit, fixed array, extensible array, v2 B-tree) and
** copying the selected part of each chunk into the caller's buffer.
**
** A read visits only the chunks a selection touches: the array indexes
** (implicit, fixed and extensible arrays) are looked up chunk by chunk,
** the B-trees are walked and chunks outside the selection skipped before
** their data is read.  One chunk is decoded at a time.
**
** The indexes are checked as they are read: signatures, checksums, the
** header address each block names, that array indexes stay inside their
** arrays, that B-tree chunk offsets are multiples of the chunk size inside
** the dataset's maximum extent, and that no two chunks claim one place.
** Chunks past the current extent (left by a shrunk dataset) are ignored,
** as libhdf5 ignores them.
*/
#include "config.h"

#include <stdio.h>

#include "h5_int.h"

/* *r = a * b; false (and *r untouched) when that overflows */
static int mul_ok(uint64_t a, uint64_t b, uint64_t *r) {
  if (a && b > UINT64_MAX / a) return 0;
  *r = a * b;
  return 1;
}

/* An address of the file's size at p; all ones is "undefined". */
static uint64_t addr_at(const h5_file *f, const uint8_t *p) {
  uint64_t v = util_get_le(p, f->so);
  if (f->so < 8 && v == (UINT64_C(1) << (8 * f->so)) - 1) return H5_UNDEF_ADDR;
  return v;
}

/* ---- copying the selected elements of a block ------------------------------ */

/* The range [*lo, *hi) of selection indexes i in dimension k whose element
** start + i * stride falls in [o, end); false when it is empty. */
static int sel_range(const h5_sel *sel, int k, uint64_t o, uint64_t end, uint64_t *lo,
                     uint64_t *hi) {
  uint64_t s = sel->start[k], t = sel->stride[k], c = sel->count[k];
  if (end <= s || end <= o) return 0;
  uint64_t a = o <= s ? 0 : (o - s + t - 1) / t;
  uint64_t b = (end - 1 - s) / t + 1;
  if (b > c) b = c;
  *lo = a;
  *hi = b;
  return a < b;
}

void h5_sel_copy_block(const struct h5_dset *d, const h5_sel *sel, const uint64_t *origin,
                       const uint64_t *bdims, const uint8_t *blk, uint8_t *out) {
  int rank = d->space.rank;
  size_t esz = d->type->size;
  if (rank <= 0) {
    memcpy(out, blk, esz);
    return;
  }
  uint64_t lo[H5_MAX_RANK], hi[H5_MAX_RANK], i[H5_MAX_RANK];
  uint64_t bstr[H5_MAX_RANK], ostr[H5_MAX_RANK]; /* strides in bytes */
  for (int k = 0; k < rank; k++) {
    uint64_t end = bdims[k] > d->space.dims[k] - origin[k] ? d->space.dims[k]
                                                          : origin[k] + bdims[k];
    if (!sel_range(sel, k, origin[k], end, &lo[k], &hi[k])) return;
    i[k] = lo[k];
  }
  bstr[rank - 1] = esz;
  ostr[rank - 1] = esz;
  for (int k = rank - 1; k > 0; k--) {
    bstr[k - 1] = bstr[k] * bdims[k];
    ostr[k - 1] = ostr[k] * sel->count[k];
  }
  int in = rank - 1; /* the innermost dimension: runs of elements */
  uint64_t run = hi[in] - lo[in];
  uint64_t t = sel->stride[in];
  for (;;) {
    uint64_t boff = 0, ooff = 0;
    for (int k = 0; k < in; k++) {
      boff += (sel->start[k] + i[k] * sel->stride[k] - origin[k]) * bstr[k];
      ooff += i[k] * ostr[k];
    }
    boff += (sel->start[in] + lo[in] * t - origin[in]) * esz;
    ooff += lo[in] * esz;
    if (t == 1) {
      memcpy(out + ooff, blk + boff, (size_t)(run * esz));
    } else {
      for (uint64_t j = 0; j < run; j++)
        memcpy(out + ooff + j * esz, blk + boff + j * t * esz, esz);
    }
    int k = in - 1;
    for (; k >= 0; k--) {
      if (++i[k] < hi[k]) break;
      i[k] = lo[k];
    }
    if (k < 0) break;
  }
}

/* ---- a read ------------------------------------------------------------------ */

typedef struct rd {
  h5_file *f;
  struct h5_dset *d;
  const h5_sel *sel;
  uint8_t *out;
  int rank;
  uint64_t cdims[H5_MAX_RANK];
  uint64_t nchunks[H5_MAX_RANK];  /* chunks across the current extent */
  uint64_t maxchunks[H5_MAX_RANK];/* across the maximum extent; UINT64_MAX: unlimited */
  /* chunks already read, one bit per chunk of the box the selection's
     chunks span (NULL when that box is too large to track) */
  uint8_t *seen;
  /* the chunks whose data reached out, same bits (NULL: the caller filled
     out beforehand, so chunks never written need nothing) */
  uint8_t *got;
  uint64_t box_lo[H5_MAX_RANK], box_n[H5_MAX_RANK];
  h5_amap verified;    /* index blocks whose checksum was verified */
  h5_chunk_cb visit;   /* hand each chunk to visit instead of decoding it */
  void *vctx;
} rd;

/* Whether the chunk at origin reaches past the dataset's current extent. */
static int chunk_is_partial(const rd *r, const uint64_t *origin) {
  for (int k = 0; k < r->rank; k++)
    if (r->cdims[k] > r->d->space.dims[k] - origin[k]) return 1;
  return 0;
}

/* The element origin of the chunk at scaled position scaled into origin;
** 0 when the chunk lies past the current extent or the selection wants
** nothing of it. */
static int chunk_wanted(const rd *r, const uint64_t *scaled, uint64_t *origin) {
  const struct h5_dset *d = r->d;
  uint64_t lo, hi;
  for (int k = 0; k < r->rank; k++) {
    if (scaled[k] >= r->nchunks[k]) return 0; /* past the current extent */
    origin[k] = scaled[k] * r->cdims[k]; /* < dims[k]: no overflow */
    uint64_t end = r->cdims[k] > d->space.dims[k] - origin[k] ? d->space.dims[k]
                                                              : origin[k] + r->cdims[k];
    if (!sel_range(r->sel, k, origin[k], end, &lo, &hi)) return 0; /* not wanted */
  }
  return 1;
}

/* The bit of the chunk at scaled position scaled in r->seen and r->got. */
static uint64_t box_bit(const rd *r, const uint64_t *scaled) {
  uint64_t bit = 0;
  for (int k = 0; k < r->rank; k++) bit = bit * r->box_n[k] + (scaled[k] - r->box_lo[k]);
  return bit;
}

/* Where the chunk at origin lies in the output as one run of bytes, the
** whole chunk wanted: its place there (it can be decoded into it), else
** NULL.  So when the selection takes every element of the chunk (stride
** 1, the chunk inside the selection and the current extent) and, in every
** dimension but the first, as many as the chunk has (whole rows). */
static uint8_t *in_place(const rd *r, const uint64_t *origin) {
  const h5_sel *sel = r->sel;
  uint64_t off = 0;
  if (!r->out || r->rank < 1) return NULL;
  for (int k = 0; k < r->rank; k++) {
    if (sel->stride[k] != 1 || origin[k] < sel->start[k] ||
        r->cdims[k] > sel->start[k] + sel->count[k] - origin[k] ||
        r->cdims[k] > r->d->space.dims[k] - origin[k])
      return NULL;
    if (k > 0 && (origin[k] != sel->start[k] || r->cdims[k] != sel->count[k])) return NULL;
    off = k == 0 ? origin[0] - sel->start[0] : off * sel->count[k];
  }
  return r->out + off * r->d->type->size;
}

/* Decode the chunk at scaled position scaled (stored at addr, size bytes,
** filter mask mask) and copy what the selection wants of it. */
static int take_chunk(rd *r, const uint64_t *scaled, uint64_t addr, uint64_t size,
                      uint32_t mask) {
  h5_file *f = r->f;
  struct h5_dset *d = r->d;
  uint64_t origin[H5_MAX_RANK];
  if (!chunk_wanted(r, scaled, origin)) return H5_OK;
  if (r->seen) {
    uint64_t bit = box_bit(r, scaled);
    if (r->seen[bit / 8] & (1u << (bit % 8))) {
      char where[64] = "";
      size_t at = 0;
      for (int k = 0; k < r->rank && at < sizeof where - 24; k++)
        at += (size_t)snprintf(where + at, sizeof where - at, "%s%llu", k ? "," : "",
                               (unsigned long long)origin[k]);
      return h5_err(f, H5_ECORRUPT, "chunk index lists the chunk at [%s] twice", where);
    }
    r->seen[bit / 8] |= (uint8_t)(1u << (bit % 8));
  }
  if (addr == H5_UNDEF_ADDR) return H5_OK; /* never written */
  if (r->visit) return r->visit(r->vctx, origin, addr, size, mask);
  int filtered = d->info.nfilters > 0;
  if (filtered && (d->chunk_flags & 1) && chunk_is_partial(r, origin))
    filtered = 0; /* edge chunks are stored unfiltered */
  const uint8_t *data;
  uint8_t *dec = NULL, *dest = in_place(r, origin); /* (dec may be dest: never freed) */
  if (filtered) {
    /* no filter of ours makes a chunk much larger than it was */
    if (size > 2 * d->chunk_bytes + 65536)
      return h5_err(f, H5_ECORRUPT, "chunk at %llu stores %llu bytes for %llu",
                    (unsigned long long)addr, (unsigned long long)size,
                    (unsigned long long)d->chunk_bytes);
    const uint8_t *raw = size ? h5_span(f, addr, size) : NULL;
    if (!raw)
      return h5_err(f, H5_ECORRUPT, "chunk at %llu (%llu bytes) lies outside the file",
                    (unsigned long long)addr, (unsigned long long)size);
    uint8_t *copy = NULL;
    raw = h5_span_read(f, raw, size, &copy);
    size_t declen;
    int rc = h5_unfilter(f, d, mask, raw, (size_t)size, dest, &dec, &declen);
    h5_stage_free(copy);
    if (rc) {
      if (rc != H5_EUNSUPPORTED && rc != H5_ENOMEM) {
        char why[sizeof f->err];
        memcpy(why, f->err, sizeof why);
        h5_err(f, rc, "chunk at %llu: %s", (unsigned long long)addr, why);
      }
      return rc;
    }
    if (declen < d->chunk_bytes) {
      if (dec != dest) h5_stage_free(dec);
      return h5_err(f, H5_ECORRUPT, "chunk at %llu decodes to %zu bytes, not %llu",
                    (unsigned long long)addr, declen, (unsigned long long)d->chunk_bytes);
    }
    data = dec;
  } else {
    data = h5_span(f, addr, d->chunk_bytes);
    if (!data)
      return h5_err(f, H5_ECORRUPT, "chunk at %llu (%llu bytes) lies outside the file",
                    (unsigned long long)addr, (unsigned long long)d->chunk_bytes);
  }
  if (!dec || dec != dest) h5_sel_copy_block(d, r->sel, origin, r->cdims, data, r->out);
  if (dec != dest) h5_stage_free(dec);
  if (r->got) {
    uint64_t bit = box_bit(r, scaled);
    r->got[bit / 8] |= (uint8_t)(1u << (bit % 8));
  }
  return H5_OK;
}

/* After a walk that tracked r->got: the fill value into the selected parts
** of the chunks whose data did not come (never written, or not listed). */
static int fill_missing(rd *r) {
  struct h5_dset *d = r->d;
  uint64_t box = 1;
  for (int k = 0; k < r->rank; k++) box *= r->box_n[k];
  uint8_t *blk = NULL;
  uint64_t scaled[H5_MAX_RANK], origin[H5_MAX_RANK];
  for (uint64_t bit = 0; bit < box; bit++) {
    if (r->got[bit / 8] & (1u << (bit % 8))) continue;
    uint64_t rest = bit; /* (box_bit backwards) */
    for (int k = r->rank - 1; k >= 0; k--) {
      scaled[k] = r->box_lo[k] + rest % r->box_n[k];
      rest /= r->box_n[k];
    }
    if (!chunk_wanted(r, scaled, origin)) continue;
    if (!blk) {
      if (!(blk = h5_stage_alloc((size_t)d->chunk_bytes))) return h5_err(r->f, H5_ENOMEM, "out of memory");
      h5_fill(d, blk, d->chunk_bytes / d->type->size);
    }
    h5_sel_copy_block(d, r->sel, origin, r->cdims, blk, r->out);
  }
  h5_stage_free(blk);
  return H5_OK;
}

/* Call fn for every chunk position the selection touches, in C order. */
typedef int (*chunk_fn)(rd *r, const uint64_t *scaled, void *ctx);

static int each_touched(rd *r, chunk_fn fn, void *ctx) {
  const h5_sel *sel = r->sel;
  uint64_t n[H5_MAX_RANK], j[H5_MAX_RANK], scaled[H5_MAX_RANK];
  int rank = r->rank;
  for (int k = 0; k < rank; k++) {
    uint64_t c = r->cdims[k];
    /* a stride of a chunk or more touches a new chunk with every element;
       a smaller one every chunk between the first and the last */
    n[k] = sel->stride[k] >= c ? sel->count[k] : r->box_n[k];
    j[k] = 0;
  }
  for (;;) {
    for (int k = 0; k < rank; k++)
      scaled[k] = sel->stride[k] >= r->cdims[k]
                      ? (sel->start[k] + j[k] * sel->stride[k]) / r->cdims[k]
                      : r->box_lo[k] + j[k];
    int rc = fn(r, scaled, ctx);
    if (rc) return rc;
    int k = rank - 1;
    for (; k >= 0; k--) {
      if (++j[k] < n[k]) break;
      j[k] = 0;
    }
    if (k < 0) return H5_OK;
  }
}

/* The linear index of a chunk in an array of chunks laid out in C order
** over the maximum extent, with dimension first (the unlimited one of an
** extensible array) moved to the front. */
typedef struct lin {
  int order[H5_MAX_RANK];
  uint64_t down[H5_MAX_RANK];
} lin;

static int lin_init(rd *r, lin *l, int first) {
  int n = 0;
  if (first >= 0) l->order[n++] = first;
  for (int k = 0; k < r->rank; k++)
    if (k != first) l->order[n++] = k;
  if (r->rank == 0) return H5_OK;
  l->down[r->rank - 1] = 1;
  for (int k = r->rank - 1; k > 0; k--) {
    uint64_t m = r->maxchunks[l->order[k]];
    if (m == UINT64_MAX || !mul_ok(l->down[k], m, &l->down[k - 1]))
      return h5_err(r->f, H5_ECORRUPT,
                    "chunk index: the maximum extent has too many chunks");
  }
  return H5_OK;
}

static int lin_index(rd *r, const lin *l, const uint64_t *scaled, uint64_t *idx) {
  uint64_t v = 0, t;
  for (int k = 0; k < r->rank; k++) {
    if (!mul_ok(scaled[l->order[k]], l->down[k], &t) || t > UINT64_MAX - v)
      return h5_err(r->f, H5_ECORRUPT, "chunk index: chunk position out of range");
    v += t;
  }
  *idx = v;
  return H5_OK;
}

/* The total of maxchunks over all dimensions (all finite). */
static int max_total(rd *r, uint64_t *n) {
  uint64_t v = 1;
  for (int k = 0; k < r->rank; k++)
    if (r->maxchunks[k] == UINT64_MAX || !mul_ok(v, r->maxchunks[k], &v))
      return h5_err(r->f, H5_ECORRUPT,
                    "chunk index: the maximum extent has too many chunks");
  *n = v;
  return H5_OK;
}

/* ---- single chunk, implicit ------------------------------------------------ */

static int read_single(rd *r) {
  uint64_t zero[H5_MAX_RANK] = {0};
  struct h5_dset *d = r->d;
  int filtered = d->info.nfilters > 0 && (d->chunk_flags & 2);
  return take_chunk(r, zero, d->addr, filtered ? d->single_size : d->chunk_bytes,
                    filtered ? d->single_mask : 0);
}

static int implicit_one(rd *r, const uint64_t *scaled, void *ctx) {
  const lin *l = ctx;
  uint64_t idx, off;
  int rc = lin_index(r, l, scaled, &idx);
  if (rc) return rc;
  if (!mul_ok(idx, r->d->chunk_bytes, &off) || off > UINT64_MAX - r->d->addr)
    return h5_err(r->f, H5_ECORRUPT, "implicit chunk index: chunk %llu out of range",
                  (unsigned long long)idx);
  return take_chunk(r, scaled, r->d->addr + off, r->d->chunk_bytes, 0);
}

static int read_implicit(rd *r) {
  if (r->d->info.nfilters > 0)
    return h5_err(r->f, H5_ECORRUPT, "implicit chunk index with filters");
  lin l;
  uint64_t total;
  int rc = lin_init(r, &l, -1);
  if (!rc) rc = max_total(r, &total);
  if (rc) return rc;
  return each_touched(r, implicit_one, &l);
}

/* ---- fixed array ------------------------------------------------------------- */

/* One element of a fixed or extensible array of chunks. */
typedef struct elem_fmt {
  int esize;    /* bytes of an element */
  int filtered; /* address, chunk size, filter mask; else address only */
  int w;        /* bytes of the chunk size */
} elem_fmt;

static int elem_fmt_init(h5_file *f, const struct h5_dset *d, int client, int esize,
                         elem_fmt *e, const char *what) {
  e->filtered = d->info.nfilters > 0;
  e->esize = esize;
  e->w = esize - f->so - 4;
  if (client != e->filtered)
    return h5_err(f, H5_ECORRUPT, "%s: client %d for a dataset %s filters", what, client,
                  e->filtered ? "with" : "without");
  if (e->filtered ? (e->w < 1 || e->w > 8) : esize != f->so)
    return h5_err(f, H5_ECORRUPT, "%s: elements of %d bytes", what, esize);
  return H5_OK;
}

static void elem_decode(const h5_file *f, const struct h5_dset *d, const elem_fmt *e,
                        const uint8_t *p, uint64_t *addr, uint64_t *size, uint32_t *mask) {
  *addr = addr_at(f, p);
  if (e->filtered) {
    *size = util_get_le(p + f->so, e->w);
    *mask = (uint32_t)util_get_le(p + f->so + e->w, 4);
  } else {
    *size = d->chunk_bytes;
    *mask = 0;
  }
}

/* The block at addr: len bytes and their checksum, verified once per read
** (r->verified maps the address to the length verified). */
static int checked_block(rd *r, uint64_t addr, uint64_t len, const char *what,
                         const uint8_t **out) {
  h5_file *f = r->f;
  const uint8_t *p = len <= UINT64_MAX - 4 ? h5_span(f, addr, len + 4) : NULL;
  *out = NULL;
  if (!p)
    return h5_err(f, H5_ECORRUPT, "%s at %llu (%llu bytes) lies outside the file", what,
                  (unsigned long long)addr, (unsigned long long)len);
  void *known = h5_amap_get(&r->verified, addr);
  if (!known || (uintptr_t)known != (uintptr_t)len + 1) {
    if (!h5_checksum_ok(p, (size_t)len))
      return h5_err(f, H5_ECORRUPT, "%s at %llu: checksum mismatch", what,
                    (unsigned long long)addr);
    if (h5_amap_put(&r->verified, addr, (void *)((uintptr_t)len + 1)))
      return h5_err(f, H5_ENOMEM, "out of memory");
  }
  *out = p;
  return H5_OK;
}

typedef struct farr {
  lin l;
  elem_fmt e;
  uint64_t nelmts;
  uint64_t page_nelmts; /* 0: not paged */
  uint64_t npages;
  const uint8_t *bitmap; /* pages initialized, most significant bit first */
  const uint8_t *elems;  /* unpaged: the elements */
  uint64_t pages_at;     /* paged: the address of the first page */
} farr;

static int farray_one(rd *r, const uint64_t *scaled, void *ctx) {
  farr *a = ctx;
  h5_file *f = r->f;
  uint64_t idx;
  int rc = lin_index(r, &a->l, scaled, &idx);
  if (rc) return rc;
  if (idx >= a->nelmts)
    return h5_err(f, H5_ECORRUPT, "fixed array of %llu chunks has no chunk %llu",
                  (unsigned long long)a->nelmts, (unsigned long long)idx);
  const uint8_t *p;
  if (!a->page_nelmts) {
    p = a->elems + idx * (uint64_t)a->e.esize;
  } else {
    uint64_t page = idx / a->page_nelmts;
    if (!(a->bitmap[page / 8] & (0x80u >> (page % 8)))) return H5_OK; /* empty page */
    uint64_t psize = a->page_nelmts * (uint64_t)a->e.esize;
    uint64_t n = page + 1 == a->npages ? a->nelmts - page * a->page_nelmts : a->page_nelmts;
    uint64_t at;
    if (!mul_ok(page, psize + 4, &at) || at > UINT64_MAX - a->pages_at)
      return h5_err(f, H5_ECORRUPT, "fixed array page %llu out of range",
                    (unsigned long long)page);
    at += a->pages_at;
    const uint8_t *pg;
    if ((rc = checked_block(r, at, n * (uint64_t)a->e.esize, "fixed array page", &pg)))
      return rc;
    p = pg + (idx % a->page_nelmts) * (uint64_t)a->e.esize;
  }
  uint64_t addr, size;
  uint32_t mask;
  elem_decode(f, r->d, &a->e, p, &addr, &size, &mask);
  return take_chunk(r, scaled, addr, size, mask);
}

static int read_farray(rd *r) {
  h5_file *f = r->f;
  uint64_t hdr = r->d->addr;
  farr a;
  memset(&a, 0, sizeof a);
  size_t hlen = 8 + (size_t)f->sl + (size_t)f->so;
  const uint8_t *h = h5_span(f, hdr, hlen + 4);
  if (!h || memcmp(h, "FAHD", 4) != 0)
    return h5_err(f, H5_ECORRUPT, "no fixed array header at %llu", (unsigned long long)hdr);
  if (!h5_checksum_ok(h, hlen))
    return h5_err(f, H5_ECORRUPT, "fixed array header at %llu: checksum mismatch",
                  (unsigned long long)hdr);
  h5_cur c = h5c_make(h + 4, hlen - 4);
  int version = h5c_u8(&c), client = h5c_u8(&c), esize = h5c_u8(&c), page_bits = h5c_u8(&c);
  a.nelmts = h5c_len(&c, f);
  uint64_t dblk = h5c_addr(&c, f);
  if (version != 0)
    return h5_err(f, H5_EUNSUPPORTED, "fixed array header version %d", version);
  int rc = elem_fmt_init(f, r->d, client, esize, &a.e, "fixed array");
  if (rc) return rc;
  uint64_t need = 0;
  if ((rc = lin_init(r, &a.l, -1)) || (rc = max_total(r, &need))) return rc;
  if (a.nelmts < need)
    return h5_err(f, H5_ECORRUPT, "fixed array of %llu elements for %llu chunks",
                  (unsigned long long)a.nelmts, (unsigned long long)need);
  if (page_bits > 32)
    return h5_err(f, H5_ECORRUPT, "fixed array: %d page bits", page_bits);
  if (dblk == H5_UNDEF_ADDR) return H5_OK; /* no chunk written yet */
  uint64_t prefix = 6 + (uint64_t)f->so;
  if (a.nelmts > (UINT64_C(1) << page_bits)) {
    a.page_nelmts = UINT64_C(1) << page_bits;
    a.npages = (a.nelmts + a.page_nelmts - 1) / a.page_nelmts;
    prefix += (a.npages + 7) / 8;
  }
  uint64_t len = prefix;
  if (!a.page_nelmts &&
      (!mul_ok(a.nelmts, (uint64_t)esize, &len) || len > UINT64_MAX - prefix - 4))
    return h5_err(f, H5_ECORRUPT, "fixed array of %llu elements",
                  (unsigned long long)a.nelmts);
  if (!a.page_nelmts) len += prefix;
  const uint8_t *db;
  if ((rc = checked_block(r, dblk, len, "fixed array data block", &db))) return rc;
  if (memcmp(db, "FADB", 4) != 0 || db[4] != 0 || db[5] != client ||
      addr_at(f, db + 6) != hdr)
    return h5_err(f, H5_ECORRUPT, "fixed array data block at %llu does not belong to %llu",
                  (unsigned long long)dblk, (unsigned long long)hdr);
  if (a.page_nelmts) {
    a.bitmap = db + 6 + f->so;
    a.pages_at = dblk + prefix + 4;
  } else {
    a.elems = db + prefix;
  }
  return each_touched(r, farray_one, &a);
}

/* ---- extensible array ---------------------------------------------------------- */

#define EA_MAX_SBLKS 65

typedef struct earr {
  lin l;
  elem_fmt e;
  uint64_t hdr;
  int client;
  unsigned arr_off;      /* bytes of a block offset */
  uint64_t ibe;          /* elements in the index block */
  uint64_t min_elmts;    /* elements in the smallest data block */
  uint64_t page_nelmts;  /* elements in a data block page */
  uint64_t max_idx_set;  /* elements past this were never set */
  unsigned nsblks, iblk_nsblks;
  uint64_t ndblk_addrs, nsblk_addrs;
  struct {
    uint64_t ndblks, dblk_nelmts, start_idx, start_dblk;
  } sb[EA_MAX_SBLKS];
  const uint8_t *ielems, *idblks, *isblks; /* in the index block */
} earr;

/* The element with index idx, or NULL (in *p) when it was never set. */
static int earray_elem(rd *r, earr *a, uint64_t idx, const uint8_t **p) {
  h5_file *f = r->f;
  uint64_t es = (uint64_t)a->e.esize;
  *p = NULL;
  if (idx >= a->max_idx_set) return H5_OK;
  if (idx < a->ibe) {
    *p = a->ielems + idx * es;
    return H5_OK;
  }
  uint64_t j = idx - a->ibe;
  unsigned s = h5_log2_floor(j / a->min_elmts + 1);
  if (s >= a->nsblks || j < a->sb[s].start_idx)
    return h5_err(f, H5_ECORRUPT, "extensible array has no element %llu",
                  (unsigned long long)idx);
  uint64_t e = j - a->sb[s].start_idx;
  uint64_t dn = a->sb[s].dblk_nelmts;
  uint64_t daddr, di = e / dn;
  int paged = dn > a->page_nelmts;
  const uint8_t *sblk = NULL;
  uint64_t npages = paged ? dn / a->page_nelmts : 0;
  if (s < a->iblk_nsblks) {
    uint64_t k = a->sb[s].start_dblk + di;
    if (k >= a->ndblk_addrs)
      return h5_err(f, H5_ECORRUPT, "extensible array: data block %llu out of range",
                    (unsigned long long)k);
    daddr = addr_at(f, a->idblks + k * f->so);
    if (daddr == H5_UNDEF_ADDR) return H5_OK;
    if (paged)
      return h5_err(f, H5_EUNSUPPORTED,
                    "extensible array: paged data block in the index block");
  } else {
    uint64_t saddr = addr_at(f, a->isblks + (uint64_t)(s - a->iblk_nsblks) * f->so);
    if (saddr == H5_UNDEF_ADDR) return H5_OK;
    uint64_t nd = a->sb[s].ndblks;
    uint64_t bitmap = paged ? nd * ((npages + 7) / 8) : 0;
    uint64_t len = 6 + (uint64_t)f->so + a->arr_off + bitmap;
    uint64_t alen;
    if (!mul_ok(nd, (uint64_t)f->so, &alen) || alen > UINT64_MAX - len - 4)
      return h5_err(f, H5_ECORRUPT, "extensible array super block too large");
    len += alen;
    int rc = checked_block(r, saddr, len, "extensible array super block", &sblk);
    if (rc) return rc;
    if (memcmp(sblk, "EASB", 4) != 0 || sblk[4] != 0 || sblk[5] != a->client ||
        addr_at(f, sblk + 6) != a->hdr)
      return h5_err(f, H5_ECORRUPT, "no extensible array super block at %llu",
                    (unsigned long long)saddr);
    daddr = addr_at(f, sblk + 6 + f->so + a->arr_off + bitmap + di * f->so);
    if (daddr == H5_UNDEF_ADDR) return H5_OK;
  }
  e %= dn;
  uint64_t dprefix = 6 + (uint64_t)f->so + a->arr_off;
  if (paged) {
    uint64_t page = e / a->page_nelmts;
    uint64_t bit = di * npages + page;
    const uint8_t *bits = sblk + 6 + f->so + a->arr_off;
    if (!(bits[bit / 8] & (0x80u >> (bit % 8)))) return H5_OK; /* page never written */
    uint64_t psize = a->page_nelmts * es;
    uint64_t at;
    if (!mul_ok(page, psize + 4, &at) || daddr > UINT64_MAX - dprefix - 4 ||
        at > UINT64_MAX - daddr - dprefix - 4)
      return h5_err(f, H5_ECORRUPT, "extensible array page out of range");
    at += daddr + dprefix + 4;
    const uint8_t *pg;
    int rc = checked_block(r, at, psize, "extensible array page", &pg);
    if (rc) return rc;
    *p = pg + (e % a->page_nelmts) * es;
    return H5_OK;
  }
  uint64_t len;
  if (!mul_ok(dn, es, &len) || len > UINT64_MAX - dprefix - 4)
    return h5_err(f, H5_ECORRUPT, "extensible array data block too large");
  const uint8_t *db;
  int rc = checked_block(r, daddr, dprefix + len, "extensible array data block", &db);
  if (rc) return rc;
  if (memcmp(db, "EADB", 4) != 0 || db[4] != 0 || db[5] != a->client ||
      addr_at(f, db + 6) != a->hdr)
    return h5_err(f, H5_ECORRUPT, "no extensible array data block at %llu",
                  (unsigned long long)daddr);
  *p = db + dprefix + e * es;
  return H5_OK;
}

static int earray_one(rd *r, const uint64_t *scaled, void *ctx) {
  earr *a = ctx;
  uint64_t idx;
  const uint8_t *p;
  int rc = lin_index(r, &a->l, scaled, &idx);
  if (!rc) rc = earray_elem(r, a, idx, &p);
  if (rc || !p) return rc;
  uint64_t addr, size;
  uint32_t mask;
  elem_decode(r->f, r->d, &a->e, p, &addr, &size, &mask);
  return take_chunk(r, scaled, addr, size, mask);
}

static int read_earray(rd *r) {
  h5_file *f = r->f;
  earr *a = calloc(1, sizeof *a);
  if (!a) return h5_err(f, H5_ENOMEM, "out of memory");
  a->hdr = r->d->addr;
  int rc = H5_OK, unlim = -1;
  for (int k = 0; k < r->rank && !rc; k++)
    if (r->maxchunks[k] == UINT64_MAX) {
      if (unlim >= 0) rc = h5_err(f, H5_ECORRUPT, "extensible array index for a dataset "
                                                  "with two unlimited dimensions");
      unlim = k;
    }
  if (!rc && unlim < 0)
    rc = h5_err(f, H5_ECORRUPT, "extensible array index for a dataset of fixed size");
  if (!rc) rc = lin_init(r, &a->l, unlim);
  size_t hlen = 12 + 6 * (size_t)f->sl + (size_t)f->so;
  const uint8_t *h = rc ? NULL : h5_span(f, a->hdr, hlen + 4);
  if (!rc && (!h || memcmp(h, "EAHD", 4) != 0))
    rc = h5_err(f, H5_ECORRUPT, "no extensible array header at %llu",
                (unsigned long long)a->hdr);
  if (!rc && !h5_checksum_ok(h, hlen))
    rc = h5_err(f, H5_ECORRUPT, "extensible array header at %llu: checksum mismatch",
                (unsigned long long)a->hdr);
  uint64_t iblk = H5_UNDEF_ADDR;
  if (!rc) {
    h5_cur c = h5c_make(h + 4, hlen - 4);
    int version = h5c_u8(&c);
    a->client = h5c_u8(&c);
    int esize = h5c_u8(&c), max_bits = h5c_u8(&c);
    a->ibe = h5c_u8(&c);
    a->min_elmts = h5c_u8(&c);
    uint64_t min_ptrs = h5c_u8(&c);
    int page_bits = h5c_u8(&c);
    for (int i = 0; i < 4; i++) (void)h5c_len(&c, f); /* statistics */
    a->max_idx_set = h5c_len(&c, f);
    (void)h5c_len(&c, f);
    iblk = h5c_addr(&c, f);
    if (version != 0)
      rc = h5_err(f, H5_EUNSUPPORTED, "extensible array header version %d", version);
    else
      rc = elem_fmt_init(f, r->d, a->client, esize, &a->e, "extensible array");
    if (!rc && (max_bits < 1 || max_bits > 64 || a->min_elmts == 0 ||
                (a->min_elmts & (a->min_elmts - 1)) ||
                h5_log2_floor(a->min_elmts) > (unsigned)max_bits || min_ptrs == 0 ||
                (min_ptrs & (min_ptrs - 1)) || page_bits > max_bits || page_bits > 32))
      rc = h5_err(f, H5_ECORRUPT, "extensible array header at %llu: bad parameters",
                  (unsigned long long)a->hdr);
    if (!rc) {
      a->arr_off = (unsigned)(max_bits + 7) / 8;
      a->page_nelmts = UINT64_C(1) << page_bits;
      a->nsblks = 1 + (unsigned)max_bits - h5_log2_floor(a->min_elmts);
      a->iblk_nsblks = 2 * h5_log2_floor(min_ptrs);
      a->ndblk_addrs = 2 * (min_ptrs - 1);
      if (a->iblk_nsblks > a->nsblks)
        rc = h5_err(f, H5_ECORRUPT, "extensible array header at %llu: bad parameters",
                    (unsigned long long)a->hdr);
      else
        a->nsblk_addrs = a->nsblks - a->iblk_nsblks;
    }
    uint64_t start_idx = 0, start_dblk = 0;
    for (unsigned u = 0; !rc && u < a->nsblks; u++) {
      a->sb[u].ndblks = UINT64_C(1) << (u / 2);
      a->sb[u].dblk_nelmts = (UINT64_C(1) << ((u + 1) / 2));
      if (!mul_ok(a->sb[u].dblk_nelmts, a->min_elmts, &a->sb[u].dblk_nelmts))
        a->sb[u].dblk_nelmts = UINT64_MAX;
      a->sb[u].start_idx = start_idx;
      a->sb[u].start_dblk = start_dblk;
      uint64_t t;
      if (!mul_ok(a->sb[u].ndblks, a->sb[u].dblk_nelmts, &t) || t > UINT64_MAX - start_idx)
        start_idx = UINT64_MAX; /* unreachable super blocks */
      else
        start_idx += t;
      start_dblk += a->sb[u].ndblks;
    }
  }
  if (!rc && iblk != H5_UNDEF_ADDR) {
    uint64_t len = 6 + (uint64_t)f->so + a->ibe * (uint64_t)a->e.esize +
                   (a->ndblk_addrs + a->nsblk_addrs) * (uint64_t)f->so;
    const uint8_t *ib;
    rc = checked_block(r, iblk, len, "extensible array index block", &ib);
    if (rc) {
      /* recorded */
    } else if (memcmp(ib, "EAIB", 4) != 0 || ib[4] != 0 || ib[5] != a->client ||
               addr_at(f, ib + 6) != a->hdr) {
      rc = h5_err(f, H5_ECORRUPT, "no extensible array index block at %llu",
                  (unsigned long long)iblk);
    } else {
      a->ielems = ib + 6 + f->so;
      a->idblks = a->ielems + a->ibe * (uint64_t)a->e.esize;
      a->isblks = a->idblks + a->ndblk_addrs * f->so;
      rc = each_touched(r, earray_one, a);
    }
  }
  free(a);
  return rc;
}

/* ---- B-trees ----------------------------------------------------------------- */

/* A chunk found in a B-tree at scaled position scaled: check it lies
** inside the maximum extent, then take it. */
static int tree_chunk(rd *r, const uint64_t *scaled, uint64_t addr, uint64_t size,
                      uint32_t mask) {
  for (int k = 0; k < r->rank; k++)
    if (r->maxchunks[k] != UINT64_MAX && scaled[k] >= r->maxchunks[k])
      return h5_err(r->f, H5_ECORRUPT,
                    "chunk index: chunk at %llu lies outside the dataset's maximum extent",
                    (unsigned long long)addr);
  return take_chunk(r, scaled, addr, size, mask);
}

/* v1 B-tree keys: chunk size (4 bytes), filter mask (4), the chunk's
** offset in elements (8 per dimension), and 0 for the element size. */
static int bt1_chunk(void *ctx, const uint8_t *left, const uint8_t *right, uint64_t child) {
  rd *r = ctx;
  (void)right;
  uint64_t scaled[H5_MAX_RANK];
  uint32_t size = (uint32_t)util_get_le(left, 4), mask = (uint32_t)util_get_le(left + 4, 4);
  for (int k = 0; k < r->rank; k++) {
    uint64_t off = util_get_le(left + 8 + 8 * k, 8);
    if (off % r->cdims[k])
      return h5_err(r->f, H5_ECORRUPT,
                    "v1 B-tree: chunk offset %llu is not a multiple of the chunk size %llu",
                    (unsigned long long)off, (unsigned long long)r->cdims[k]);
    scaled[k] = off / r->cdims[k];
  }
  return tree_chunk(r, scaled, child, size, mask);
}

/* Whether the chunks between two v1 B-tree keys all lie outside the rows
** (dimension 0) the selection's chunks span.  Keys order chunks by their
** offsets, first dimension first, so everything between them starts at a
** row from the left key's to the right key's. */
static int bt1_skip(void *ctx, const uint8_t *left, const uint8_t *right) {
  const rd *r = ctx;
  if (r->rank == 0) return 0;
  uint64_t lo = util_get_le(left + 8, 8), hi = util_get_le(right + 8, 8);
  uint64_t first = r->box_lo[0] * r->cdims[0];
  uint64_t last = (r->box_lo[0] + r->box_n[0] - 1) * r->cdims[0];
  return lo > last || hi < first;
}

/* v2 B-tree records (types 10 and 11): address, [chunk size, filter mask,]
** scaled offsets (8 bytes each). */
static int bt2_chunk(void *ctx, const uint8_t *rec, size_t len) {
  rd *r = ctx;
  h5_file *f = r->f;
  int filtered = r->d->info.nfilters > 0;
  size_t fixed = (size_t)f->so + 8 * (size_t)r->rank;
  size_t w = filtered && len >= fixed + 4 ? len - fixed - 4 : 0;
  if (filtered ? (w < 1 || w > 8) : len != fixed)
    return h5_err(f, H5_ECORRUPT, "v2 B-tree chunk record of %zu bytes", len);
  uint64_t addr = addr_at(f, rec), size = r->d->chunk_bytes;
  uint32_t mask = 0;
  const uint8_t *p = rec + f->so;
  if (filtered) {
    size = util_get_le(p, (int)w);
    mask = (uint32_t)util_get_le(p + w, 4);
    p += w + 4;
  }
  uint64_t scaled[H5_MAX_RANK];
  for (int k = 0; k < r->rank; k++) scaled[k] = util_get_le(p + 8 * k, 8);
  return tree_chunk(r, scaled, addr, size, mask);
}

/* ---- entry points ---------------------------------------------------------- */

/* Walk the chunks sel touches: each one's data handed to visit, or (visit
** NULL) copied into out with the fill value where no chunk's data lands
** (tracked chunk by chunk when the chunks are few enough, else out filled
** first). */
static int chunked_walk(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *out,
                        size_t outlen, h5_chunk_cb visit, void *vctx) {
  int fill = !visit;
  rd r;
  memset(&r, 0, sizeof r);
  r.visit = visit;
  r.vctx = vctx;
  r.f = f;
  r.d = d;
  r.sel = sel;
  r.out = out;
  r.rank = d->space.rank < 0 ? 0 : d->space.rank;
  if (d->info.chunk_rank != r.rank)
    return h5_err(f, H5_ECORRUPT, "chunks of rank %d for a dataset of rank %d",
                  d->info.chunk_rank, r.rank);
  if (d->chunk_bytes > SIZE_MAX)
    return h5_err(f, H5_EUNSUPPORTED, "chunks of %llu bytes",
                  (unsigned long long)d->chunk_bytes);
  if (d->addr == H5_UNDEF_ADDR) {
    if (fill) h5_fill(d, out, outlen / d->type->size);
    return H5_OK;
  }
  uint64_t box = 1;
  for (int k = 0; k < r.rank; k++) {
    uint64_t c = d->info.chunk[k], dim = d->space.dims[k], mx = d->space.maxdims[k];
    r.cdims[k] = c;
    r.nchunks[k] = dim / c + (dim % c != 0);
    r.maxchunks[k] = mx == UINT64_MAX ? UINT64_MAX
                     : (mx > dim ? mx : dim) / c + ((mx > dim ? mx : dim) % c != 0);
    uint64_t last = sel->start[k] + (sel->count[k] - 1) * sel->stride[k];
    r.box_lo[k] = sel->start[k] / c;
    r.box_n[k] = last / c - r.box_lo[k] + 1;
    if (box && !mul_ok(box, r.box_n[k], &box)) box = 0;
  }
  /* B-trees may list a chunk twice (array indexes cannot): track the
     chunks read when that takes no more memory than the output */
  uint64_t budget = (uint64_t)outlen * 8 > ((uint64_t)1 << 23) ? (uint64_t)outlen * 8
                                                                 : ((uint64_t)1 << 23);
  if (box && box <= budget && (d->cidx == H5_CIDX_BTREE1 || d->cidx == H5_CIDX_BTREE2)) {
    r.seen = calloc((size_t)((box + 7) / 8), 1);
    if (!r.seen) return h5_err(f, H5_ENOMEM, "out of memory");
  }
  /* the fill value only where no chunk's data lands (the common case:
     nowhere), when the box is small enough to track and the caller asks */
  if (fill && box && box <= budget && d->chunk_bytes % d->type->size == 0) {
    r.got = calloc((size_t)((box + 7) / 8), 1);
    if (!r.got) {
      free(r.seen);
      return h5_err(f, H5_ENOMEM, "out of memory");
    }
  } else if (fill) {
    h5_fill(d, out, outlen / d->type->size);
  }
  int rc;
  h5_stage_cache stages; /* (the walk's stage buffers, reused chunk after chunk) */
  h5_stage_begin(&stages);
  switch (d->cidx) {
  case H5_CIDX_BTREE1:
    rc = h5_bt1_iter(f, d->addr, 1, 8 + 8 * ((size_t)r.rank + 1), bt1_skip, bt1_chunk, &r);
    break;
  case H5_CIDX_SINGLE: rc = read_single(&r); break;
  case H5_CIDX_IMPLICIT: rc = read_implicit(&r); break;
  case H5_CIDX_FARRAY: rc = read_farray(&r); break;
  case H5_CIDX_EARRAY: rc = read_earray(&r); break;
  case H5_CIDX_BTREE2: rc = h5_bt2_iter(f, d->addr, bt2_chunk, &r); break;
  default: rc = h5_err(f, H5_ECORRUPT, "chunk index type %d", d->cidx);
  }
  if (rc == H5_OK && r.got) rc = fill_missing(&r);
  h5_stage_end(&stages);
  free(r.seen);
  free(r.got);
  h5_amap_free(&r.verified);
  return rc;
}

/* The whole current extent as a selection; 0 when it is empty. */
static int whole_sel(const struct h5_dset *d, h5_sel *sel) {
  int rank = d->space.rank < 0 ? 0 : d->space.rank;
  for (int k = 0; k < rank; k++) {
    sel->start[k] = 0;
    sel->count[k] = d->space.dims[k];
    sel->stride[k] = 1;
    if (sel->count[k] == 0) return 0;
  }
  return 1;
}

int h5_chunked_read_sel(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *out,
                        size_t outlen) {
  h5_sel all;
  if (!sel && !whole_sel(d, &all)) return H5_OK;
  return chunked_walk(f, d, sel ? sel : &all, out, outlen, NULL, NULL);
}

int h5_chunked_each(h5_file *f, struct h5_dset *d, h5_chunk_cb cb, void *ctx) {
  h5_sel sel;
  if (!whole_sel(d, &sel)) return H5_OK;
  return chunked_walk(f, d, &sel, NULL, 0, cb, ctx);
}

static int add_size(void *ctx, const uint64_t *offset, uint64_t addr, uint64_t size,
                    uint32_t mask) {
  (void)offset;
  (void)addr;
  (void)mask;
  *(uint64_t *)ctx += size;
  return H5_OK;
}

int h5_chunked_storage(h5_file *f, struct h5_dset *d, uint64_t *bytes) {
  *bytes = 0;
  return h5_chunked_each(f, d, add_size, bytes);
}
