/*
** lib/h5/h5_filter.c - the filter pipeline on read: deflate, shuffle,
** fletcher32, nbit and scaleoffset.
**
** h5_unfilter undoes a chunk's filters in reverse pipeline order, skipping
** those whose bit is set in the chunk's filter mask.  Like libhdf5, a filter
** that fails on read is an error whether or not it is optional (an optional
** filter that failed on write is recorded in the chunk's mask instead), and
** a filter this engine does not have is an error for that dataset only.
**
** Every stage writes into a buffer of bounded size: the pipeline's output is
** d->chunk_bytes, and no intermediate stage may exceed that by more than a
** little (what compressors add in the worst case), so a small corrupt or
** hostile input cannot make us allocate or write without bound.
*/
#include "config.h"

#include <malloc.h>
#include <math.h>
#include <zlib.h>
#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include "h5_int.h"

enum {
  F_DEFLATE = 1,
  F_SHUFFLE = 2,
  F_FLETCHER32 = 3,
  F_SZIP = 4,
  F_NBIT = 5,
  F_SCALEOFFSET = 6,
  F_LZF = 32000
};

/* Names of the registered filters, as The HDF Group's registry lists them
** (hdf5_plugins, docs/RegisteredFilterPlugins.md: ids 257 to 32030), for the
** "not available" message. */
const char *h5_filter_known_name(unsigned id) {
  switch (id) {
  case 1: return "deflate";
  case 2: return "shuffle";
  case 3: return "fletcher32";
  case 4: return "szip";
  case 5: return "nbit";
  case 6: return "scaleoffset";
  case 257: return "hzip";
  case 258: return "fpzip";
  case 305: return "lzo";
  case 307: return "bzip2";
  case 32000: return "lzf";
  case 32001: return "blosc";
  case 32002: return "mafisc";
  case 32003: return "snappy";
  case 32004: return "lz4";
  case 32005: return "apax";
  case 32006: return "cbf";
  case 32007: return "jpeg-xr";
  case 32008: return "bitshuffle";
  case 32009: return "spdp";
  case 32010: return "lpc-rice";
  case 32011: return "ccsds-123";
  case 32012: return "jpeg-ls";
  case 32013: return "zfp";
  case 32014: return "fpzip";
  case 32015: return "zstd";
  case 32016: return "b3d";
  case 32017: return "sz";
  case 32018: return "fcidecomp";
  case 32019: return "jpeg";
  case 32020: return "vbz";
  case 32021: return "fapec";
  case 32022: return "bitgroom";
  case 32023: return "granular bitround";
  case 32024: return "sz3";
  case 32025: return "delta-rice";
  case 32026: return "blosc2";
  case 32027: return "flac";
  case 32028: return "sperr";
  case 32029: return "terse/prolix";
  case 32030: return "ffmpeg";
  default: return NULL;
  }
}

const char *h5_filter_label(const h5_filter *flt) {
  const char *k = h5_filter_known_name(flt->id);
  if (k) return k;
  return flt->name && *flt->name ? flt->name : "unregistered";
}

/* The most bytes any stage may produce: the chunk plus what a compressor
** may add to incompressible data (deflate: 5 bytes per 16 KiB block and a
** header; scaleoffset: a 21-byte header). */
uint64_t h5_stage_cap(const struct h5_dset *d) {
  return d->chunk_bytes + d->chunk_bytes / 8 + 4096;
}

/* ---- stage buffers ------------------------------------------------------- */

/* While a chunked read runs (h5_stage_begin .. h5_stage_end, on its
** thread), the large stage buffers it frees are kept, H5_STAGE_SLOTS at
** most (a chunk read from the file, two stages, a fill block), and
** handed out again: the read then reuses the same memory chunk after chunk,
** where fresh allocations of a chunk's size would be new pages to fault in
** each time (the cost that dominated reading blosc or szip chunks).  Only
** buffers of 64 KiB to 64 MiB are kept, and h5_stage_end frees them, so
** nothing outlives the read: no per-thread destructor that could outlive
** the library (SQLite unloads an extension when its connection closes). */
#define STAGE_KEEP_MIN ((size_t)64 << 10)
#define STAGE_KEEP_MAX ((size_t)64 << 20)

static __thread h5_stage_cache *stage_current; /* the innermost read's cache, or NULL */
/* h5_unfilter's destination for its last stage (see there): handed out by
** the next h5_stage_alloc of exactly its size, never freed */
static __thread uint8_t *stage_dest, *stage_dest_given;
static __thread size_t stage_dest_len;

void h5_stage_begin(h5_stage_cache *c) {
  memset(c, 0, sizeof *c);
  c->outer = stage_current;
  stage_current = c;
}

void h5_stage_end(h5_stage_cache *c) {
  for (int i = 0; i < H5_STAGE_SLOTS; i++) {
    free(c->p[i]);
    c->p[i] = NULL;
  }
  stage_current = c->outer;
}

void *h5_stage_alloc(size_t n) {
  if (stage_dest && n == stage_dest_len) {
    stage_dest_given = stage_dest;
    stage_dest = NULL;
    return stage_dest_given;
  }
  h5_stage_cache *c = stage_current;
  if (c && n >= STAGE_KEEP_MIN / 2)
    for (int i = 0; i < H5_STAGE_SLOTS; i++)
      if (c->p[i] && c->cap[i] >= n && c->cap[i] / 4 <= n) {
        void *p = c->p[i];
        c->p[i] = NULL;
        return p;
      }
  return malloc(n ? n : 1);
}

void h5_stage_free(void *p) {
  if (!p || p == stage_dest_given) return; /* (the caller's memory) */
  h5_stage_cache *c = stage_current;
  size_t cap = c ? malloc_usable_size(p) : 0;
  if (!c || cap < STAGE_KEEP_MIN || cap > STAGE_KEEP_MAX) {
    free(p);
    return;
  }
  int i = 0; /* an empty slot, or the smallest */
  for (int j = 0; j < H5_STAGE_SLOTS; j++) {
    if (!c->p[j]) {
      i = j;
      break;
    }
    if (c->cap[j] < c->cap[i]) i = j;
  }
  free(c->p[i]);
  c->p[i] = p;
  c->cap[i] = cap;
}

/* ---- deflate ---------------------------------------------------------- */

/* The inflate buffer *buf of *alloc bytes, full, doubled but to at most
** limit bytes; a buffer already at the limit means the stream inflates
** beyond what the chunk may hold. */
static int grow_inflate_buf(h5_file *f, uint64_t limit, uint8_t **buf, size_t *alloc) {
  if (*alloc >= limit)
    return h5_err(f, H5_ECORRUPT, "deflate: chunk data inflates beyond %llu bytes",
                  (unsigned long long)limit);
  size_t grow = *alloc > (size_t)limit / 2 ? (size_t)limit : *alloc * 2;
  uint8_t *nb = realloc(*buf, grow);
  if (!nb) return h5_err(f, H5_ENOMEM, "out of memory (%zu bytes to inflate a chunk)", grow);
  *buf = nb;
  *alloc = grow;
  return H5_OK;
}

/* The zlib stream in[0..inlen) inflated into a buffer of at most limit
** bytes, starting with alloc; *produced bytes come out. */
#ifdef HAVE_LIBDEFLATE
static int inflate_into(h5_file *f, const uint8_t *in, size_t inlen, uint64_t limit,
                        uint8_t **buf, size_t alloc, size_t *produced) {
  struct libdeflate_decompressor *dc = libdeflate_alloc_decompressor();
  if (!dc) return h5_err(f, H5_ENOMEM, "out of memory (deflate)");
  int rc = H5_OK;
  for (;;) {
    size_t used, got;
    enum libdeflate_result r =
        libdeflate_zlib_decompress_ex(dc, in, inlen, *buf, alloc, &used, &got);
    if (r == LIBDEFLATE_SUCCESS) {
      *produced = got;
      break;
    }
    if (r != LIBDEFLATE_INSUFFICIENT_SPACE) {
      rc = h5_err(f, H5_ECORRUPT, "deflate: corrupt or truncated stream");
      break;
    }
    if ((rc = grow_inflate_buf(f, limit, buf, &alloc)) != H5_OK) break;
  }
  libdeflate_free_decompressor(dc);
  return rc;
}
#else
static int inflate_into(h5_file *f, const uint8_t *in, size_t inlen, uint64_t limit,
                        uint8_t **buf, size_t alloc, size_t *produced) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit(&zs) != Z_OK)
    return h5_err(f, H5_ENOMEM, "deflate: cannot initialize zlib");
  size_t in_left = inlen, done = 0;
  const uint8_t *next_in = in;
  int rc = H5_OK;
  for (;;) {
    if (zs.avail_in == 0 && in_left > 0) {
      zs.next_in = (Bytef *)(uintptr_t)next_in;
      zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
      next_in += zs.avail_in;
      in_left -= zs.avail_in;
    }
    if (done == alloc && (rc = grow_inflate_buf(f, limit, buf, &alloc)) != H5_OK) break;
    size_t room = alloc - done;
    zs.next_out = *buf + done;
    zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
    uInt before = zs.avail_out;
    int zr = inflate(&zs, Z_NO_FLUSH);
    done += before - zs.avail_out;
    if (zr == Z_STREAM_END) break;
    if (zr == Z_OK) continue;
    if (zr == Z_BUF_ERROR && zs.avail_out == 0) continue; /* needs more room */
    if (zr == Z_BUF_ERROR)
      rc = h5_err(f, H5_ECORRUPT, "deflate: chunk data ends before the stream does");
    else
      rc = h5_err(f, zr == Z_MEM_ERROR ? H5_ENOMEM : H5_ECORRUPT, "deflate: %s",
                  zs.msg ? zs.msg : "corrupt stream");
    break;
  }
  inflateEnd(&zs);
  *produced = done;
  return rc;
}
#endif

static int unfilter_deflate(h5_file *f, const struct h5_dset *d, const uint8_t *in,
                            size_t inlen, uint8_t **out, size_t *outlen) {
  /* deflate expands at most 1032:1, so the input bounds the output too */
  uint64_t limit = h5_stage_cap(d);
  if (inlen < (UINT64_MAX - 4096) / 1032 && (uint64_t)inlen * 1032 + 4096 < limit)
    limit = (uint64_t)inlen * 1032 + 4096;
  if (limit > SIZE_MAX) limit = SIZE_MAX;
  size_t alloc = d->chunk_bytes && d->chunk_bytes < limit ? (size_t)d->chunk_bytes
                                                            : (size_t)limit;
  if (alloc == 0) alloc = 1;
  uint8_t *buf = h5_stage_alloc(alloc);
  if (!buf)
    return h5_err(f, H5_ENOMEM, "out of memory (%zu bytes to inflate a chunk)", alloc);
  size_t produced = 0;
  int rc = inflate_into(f, in, inlen, limit, &buf, alloc, &produced);
  if (rc) {
    h5_stage_free(buf);
    return rc;
  }
  *out = buf;
  *outlen = produced;
  return H5_OK;
}

/* ---- lzf (h5py's filter 32000) -------------------------------------------- */

/* LZF, as liblzf writes it: a control byte below 32 starts a run of
** ctrl + 1 literal bytes; above, its top 3 bits (7: plus a length byte) and
** 2 give the length of a copy from (low 5 bits << 8 | next byte) + 1 bytes
** back.  The output size is h5py's third client value (the chunk size). */
static int unfilter_lzf(h5_file *f, const struct h5_dset *d, const h5_filter *flt,
                        const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen) {
  uint64_t cap = flt->ncd >= 3 && flt->cd[2] ? flt->cd[2] : d->chunk_bytes;
  if (cap == 0 || cap > h5_stage_cap(d) || cap > SIZE_MAX)
    return h5_err(f, H5_ECORRUPT, "lzf: bad chunk size %llu", (unsigned long long)cap);
  uint8_t *o = h5_stage_alloc((size_t)cap);
  if (!o) return h5_err(f, H5_ENOMEM, "out of memory");
  size_t ip = 0, op = 0;
  while (ip < inlen) {
    unsigned ctrl = in[ip++];
    if (ctrl < 32) {
      size_t n = (size_t)ctrl + 1;
      if (n > inlen - ip || n > cap - op) goto corrupt;
      memcpy(o + op, in + ip, n);
      ip += n;
      op += n;
      continue;
    }
    size_t n = ctrl >> 5;
    if (n == 7) {
      if (ip >= inlen) goto corrupt;
      n += in[ip++];
    }
    if (ip >= inlen) goto corrupt;
    size_t back = ((size_t)(ctrl & 0x1f) << 8) + in[ip++] + 1;
    n += 2;
    if (back > op || n > cap - op) goto corrupt;
    for (size_t k = 0; k < n; k++, op++) o[op] = o[op - back]; /* may overlap */
  }
  *out = o;
  *outlen = op;
  return H5_OK;
corrupt:
  h5_stage_free(o);
  return h5_err(f, H5_ECORRUPT, "lzf: corrupt data at byte %zu", ip);
}

/* ---- shuffle ---------------------------------------------------------- */

/* Byte k of every element was stored in plane k; trailing bytes that make
** no whole element are stored as they are. */
static int unfilter_shuffle(h5_file *f, const struct h5_dset *d, const h5_filter *flt,
                            const uint8_t *in, size_t len, uint8_t **out) {
  size_t es = flt->ncd >= 1 && flt->cd[0] ? flt->cd[0] : d->type->size;
  *out = NULL;
  if (es <= 1 || len / es <= 1) return H5_OK; /* nothing was shuffled */
  size_t n = len / es;
  uint8_t *buf = h5_stage_alloc(len);
  if (!buf) return h5_err(f, H5_ENOMEM, "out of memory");
  for (size_t k = 0; k < es; k++) {
    const uint8_t *plane = in + k * n;
    uint8_t *o = buf + k;
    for (size_t i = 0; i < n; i++, o += es) *o = plane[i];
  }
  memcpy(buf + n * es, in + n * es, len - n * es);
  *out = buf;
  return H5_OK;
}

/* ---- fletcher32 --------------------------------------------------------- */

static int unfilter_fletcher32(h5_file *f, const uint8_t *in, size_t len, size_t *outlen) {
  if (len < 4)
    return h5_err(f, H5_ECORRUPT, "fletcher32: chunk of %zu bytes has no checksum", len);
  uint32_t sum = h5_fletcher32(in, len - 4);
  uint32_t stored = (uint32_t)util_get_le(in + len - 4, 4);
  /* releases before 1.6.3 swapped the bytes of each 16-bit half */
  uint32_t swapped = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
  if (stored != sum && stored != swapped)
    return h5_err(f, H5_ECORRUPT,
                  "fletcher32: chunk checksum mismatch (stored %08x, computed %08x)",
                  stored, sum);
  *outlen = len - 4;
  return H5_OK;
}

/* ---- bit streams (nbit, scaleoffset) ------------------------------------ */

/* Bits are packed most significant first, with no padding between values. */
typedef struct bitin {
  const uint8_t *p;
  uint64_t nbits, pos;
} bitin;

/* The next n <= 64 bits as an unsigned number; 0 when the input ran out
** (*bad is set). */
static uint64_t bits_get(bitin *b, unsigned n, int *bad) {
  if (n == 0) return 0;
  if (b->nbits - b->pos < n) {
    *bad = 1;
    b->pos = b->nbits;
    return 0;
  }
  uint64_t v = 0;
  while (n) {
    unsigned used = (unsigned)(b->pos & 7);
    unsigned take = 8 - used;
    if (take > n) take = n;
    unsigned byte = b->p[b->pos >> 3];
    unsigned bits = (byte >> (8 - used - take)) & ((1u << take) - 1);
    v = take == 64 ? bits : (v << take) | bits;
    b->pos += take;
    n -= take;
  }
  return v;
}

/* ---- nbit --------------------------------------------------------------- */

enum { NB_ATOMIC = 1, NB_ARRAY = 2, NB_COMPOUND = 3, NB_NOOP = 4 };

typedef struct nbit {
  h5_file *f;
  const uint32_t *cd;
  size_t ncd;
  bitin in;
  uint8_t *out;
  size_t outlen;
  int bad; /* the input ran out */
} nbit;

static int nb_params(nbit *c, size_t at, size_t n) {
  if (at > c->ncd || c->ncd - at < n)
    return h5_err(c->f, H5_ECORRUPT,
                  "nbit: parameters end before the datatype they describe");
  return H5_OK;
}

static int nb_room(nbit *c, size_t off, uint64_t size) {
  if (off > c->outlen || c->outlen - off < size)
    return h5_err(c->f, H5_ECORRUPT, "nbit: datatype parameters overrun the chunk");
  return H5_OK;
}

/* One integer or float: prec significant bits at bit offset boff of a
** size-byte value in the given byte order (0 little, 1 big endian). */
static int nb_atomic(nbit *c, size_t off, uint32_t size, uint32_t order, uint32_t prec,
                     uint32_t boff) {
  if (size == 0 || (uint64_t)prec + boff > (uint64_t)size * 8 || order > 1)
    return h5_err(c->f, H5_ECORRUPT, "nbit: precision %u offset %u in %u bytes", prec, boff,
                  size);
  int rc = nb_room(c, off, size);
  if (rc) return rc;
  uint8_t *v = c->out + off;
  for (uint32_t b = prec; b-- > 0;) {
    int bad = 0;
    unsigned bit = (unsigned)bits_get(&c->in, 1, &bad);
    if (bad) {
      c->bad = 1;
      return h5_err(c->f, H5_ECORRUPT, "nbit: packed data ends early");
    }
    uint32_t pos = boff + b;
    uint32_t byte = order == 0 ? pos / 8 : size - 1 - pos / 8;
    v[byte] |= (uint8_t)(bit << (pos % 8));
  }
  return H5_OK;
}

static int nb_noop(nbit *c, size_t off, uint32_t size) {
  int rc = nb_room(c, off, size);
  if (rc) return rc;
  for (uint32_t i = 0; i < size; i++) {
    int bad = 0;
    c->out[off + i] = (uint8_t)bits_get(&c->in, 8, &bad);
    if (bad) return h5_err(c->f, H5_ECORRUPT, "nbit: packed data ends early");
  }
  return H5_OK;
}

static int nb_compound(nbit *c, size_t off, size_t *pi, int depth);

/* An array: its total size, its base class, the base's parameters.  As in
** libhdf5, after an array of arrays or compounds the parameter index is
** left at the base's parameters (the packer does the same). */
static int nb_array(nbit *c, size_t off, size_t *pi, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH)
    return h5_err(c->f, H5_ECORRUPT, "nbit: datatype nested too deeply");
  int rc = nb_params(c, *pi, 2);
  if (rc) return rc;
  uint32_t total = c->cd[(*pi)++];
  uint32_t base = c->cd[(*pi)++];
  if ((rc = nb_room(c, off, total))) return rc;
  switch (base) {
  case NB_ATOMIC: {
    if ((rc = nb_params(c, *pi, 4))) return rc;
    uint32_t size = c->cd[*pi], order = c->cd[*pi + 1], prec = c->cd[*pi + 2],
             boff = c->cd[*pi + 3];
    *pi += 4;
    if (size == 0) return h5_err(c->f, H5_ECORRUPT, "nbit: element size 0");
    for (uint32_t i = 0; i < total / size; i++)
      if ((rc = nb_atomic(c, off + (size_t)i * size, size, order, prec, boff))) return rc;
    return H5_OK;
  }
  case NB_ARRAY:
  case NB_COMPOUND: {
    if ((rc = nb_params(c, *pi, 1))) return rc;
    uint32_t bsize = c->cd[*pi];
    if (bsize == 0) return h5_err(c->f, H5_ECORRUPT, "nbit: element size 0");
    size_t begin = *pi;
    for (uint32_t i = 0; i < total / bsize; i++) {
      rc = base == NB_ARRAY ? nb_array(c, off + (size_t)i * bsize, pi, depth + 1)
                            : nb_compound(c, off + (size_t)i * bsize, pi, depth + 1);
      if (rc) return rc;
      *pi = begin;
    }
    return H5_OK;
  }
  case NB_NOOP:
    if ((rc = nb_params(c, *pi, 1))) return rc;
    (*pi)++;
    return nb_noop(c, off, total);
  default:
    return h5_err(c->f, H5_ECORRUPT, "nbit: datatype class %u", base);
  }
}

static int nb_compound(nbit *c, size_t off, size_t *pi, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH)
    return h5_err(c->f, H5_ECORRUPT, "nbit: datatype nested too deeply");
  int rc = nb_params(c, *pi, 2);
  if (rc) return rc;
  uint32_t size = c->cd[(*pi)++];
  uint32_t nmembers = c->cd[(*pi)++];
  if ((rc = nb_room(c, off, size))) return rc;
  uint64_t used = 0;
  for (uint32_t m = 0; m < nmembers; m++) {
    if ((rc = nb_params(c, *pi, 3))) return rc;
    uint32_t moff = c->cd[(*pi)++];
    uint32_t cls = c->cd[(*pi)++];
    uint32_t msize = c->cd[*pi];
    used += msize;
    if (msize == 0 || used > size || (uint64_t)moff + msize > size)
      return h5_err(c->f, H5_ECORRUPT, "nbit: compound member overruns its compound");
    switch (cls) {
    case NB_ATOMIC:
      if ((rc = nb_params(c, *pi, 4))) return rc;
      rc = nb_atomic(c, off + moff, msize, c->cd[*pi + 1], c->cd[*pi + 2], c->cd[*pi + 3]);
      *pi += 4;
      break;
    case NB_ARRAY:
      rc = nb_array(c, off + moff, pi, depth + 1);
      break;
    case NB_COMPOUND:
      rc = nb_compound(c, off + moff, pi, depth + 1);
      break;
    case NB_NOOP:
      (*pi)++;
      rc = nb_noop(c, off + moff, msize);
      break;
    default:
      rc = h5_err(c->f, H5_ECORRUPT, "nbit: datatype class %u", cls);
    }
    if (rc) return rc;
  }
  return H5_OK;
}

/* cd: number of parameters, "nothing to do" flag, elements per chunk,
** class, size, then the class's parameters. */
static int unfilter_nbit(h5_file *f, const struct h5_dset *d, const h5_filter *flt,
                         const uint8_t *in, size_t len, uint8_t **out, size_t *outlen) {
  const uint32_t *cd = flt->cd;
  *out = NULL;
  if (flt->ncd < 5 || cd[0] != flt->ncd)
    return h5_err(f, H5_ECORRUPT, "nbit: %u parameters", flt->ncd);
  if (cd[1]) { /* the datatype needed no packing */
    *outlen = len;
    return H5_OK;
  }
  uint64_t n = cd[2], size = cd[4];
  if (size == 0 || n * size > h5_stage_cap(d))
    return h5_err(f, H5_ECORRUPT, "nbit: %llu elements of %llu bytes in a chunk of %llu",
                  (unsigned long long)n, (unsigned long long)size,
                  (unsigned long long)d->chunk_bytes);
  nbit c = {f, cd, flt->ncd, {in, (uint64_t)len * 8, 0}, NULL, (size_t)(n * size), 0};
  c.out = h5_stage_alloc(c.outlen);
  if (!c.out) return h5_err(f, H5_ENOMEM, "out of memory");
  memset(c.out, 0, c.outlen);
  int rc = H5_OK;
  if (cd[3] == NB_ATOMIC) {
    if ((rc = nb_params(&c, 0, 8)) == H5_OK)
      for (uint64_t i = 0; i < n && !rc; i++)
        rc = nb_atomic(&c, (size_t)(i * size), cd[4], cd[5], cd[6], cd[7]);
  } else if (cd[3] == NB_ARRAY || cd[3] == NB_COMPOUND) {
    for (uint64_t i = 0; i < n && !rc; i++) {
      size_t pi = 4;
      rc = cd[3] == NB_ARRAY ? nb_array(&c, (size_t)(i * size), &pi, 0)
                             : nb_compound(&c, (size_t)(i * size), &pi, 0);
    }
  } else {
    rc = h5_err(f, H5_ECORRUPT, "nbit: datatype class %u", cd[3]);
  }
  if (rc) {
    h5_stage_free(c.out);
    return rc;
  }
  *out = c.out;
  *outlen = c.outlen;
  return H5_OK;
}

/* ---- scaleoffset ---------------------------------------------------------- */

enum { SO_FLOAT_DSCALE = 0, SO_FLOAT_ESCALE = 1, SO_INT = 2 };

static void put_uint(uint8_t *p, uint64_t v, unsigned size, int big_endian) {
  for (unsigned i = 0; i < size; i++) {
    uint8_t b = (uint8_t)(v >> (8 * i));
    p[big_endian ? size - 1 - i : i] = b;
  }
}

/* cd: scale type, scale factor, elements per chunk, class (0 integer,
** 1 float), size, sign, byte order, fill value defined, fill value (in
** little-endian 32-bit pieces).  The data: minbits (4 bytes), the size of
** minval (1), minval (8, little-endian), 8 unused bytes, then the values
** less minval, minbits each (the fill value as all ones). */
static int unfilter_scaleoffset(h5_file *f, const struct h5_dset *d, const h5_filter *flt,
                                const uint8_t *in, size_t len, uint8_t **out,
                                size_t *outlen) {
  const uint32_t *cd = flt->cd;
  *out = NULL;
  if (flt->ncd != 20) return h5_err(f, H5_ECORRUPT, "scaleoffset: %u parameters", flt->ncd);
  uint32_t scale_type = cd[0], cls = cd[3], size = cd[4], sign = cd[5], order = cd[6];
  int scale_factor = (int)cd[1];
  int filavail = cd[7] == 1;
  uint64_t n = cd[2];
  if (cls > 1 || order > 1 || sign > 1)
    return h5_err(f, H5_ECORRUPT, "scaleoffset: class %u order %u sign %u", cls, order,
                  sign);
  if (cls == 0 ? (size != 1 && size != 2 && size != 4 && size != 8)
               : (size != 4 && size != 8))
    return h5_err(f, H5_EUNSUPPORTED, "scaleoffset: %s of %u bytes",
                  cls ? "floats" : "integers", size);
  if (cls == 1 && scale_type != SO_FLOAT_DSCALE)
    return h5_err(f, H5_EUNSUPPORTED, "scaleoffset: float scale type %u", scale_type);
  if (cls == 0) {
    if (scale_type != SO_INT)
      return h5_err(f, H5_ECORRUPT, "scaleoffset: integer scale type %u", scale_type);
    if (scale_factor < 0) scale_factor = 0;
    if (scale_factor > (int)size * 8)
      return h5_err(f, H5_ECORRUPT, "scaleoffset: %d bits for %u-byte integers",
                    scale_factor, size);
    if (scale_factor == (int)size * 8) { /* stored as they are */
      *outlen = len;
      return H5_OK;
    }
  }
  if (n * size > h5_stage_cap(d))
    return h5_err(f, H5_ECORRUPT, "scaleoffset: %llu elements in a chunk of %llu bytes",
                  (unsigned long long)n, (unsigned long long)d->chunk_bytes);
  if (len < 21) return h5_err(f, H5_ECORRUPT, "scaleoffset: chunk of %zu bytes", len);
  uint32_t minbits = (uint32_t)util_get_le(in, 4);
  unsigned mvsize = in[4] < 8 ? in[4] : 8;
  uint64_t minval = util_get_le(in + 5, (int)mvsize);
  if (minbits > size * 8)
    return h5_err(f, H5_ECORRUPT, "scaleoffset: %u bits for %u-byte values", minbits, size);
  size_t olen = (size_t)(n * size);
  uint8_t *o = h5_stage_alloc(olen);
  if (!o) return h5_err(f, H5_ENOMEM, "out of memory");
  const uint8_t *data = in + 21;
  size_t dlen = len - 21;
  int big = order == 1;
  if (minbits == size * 8) {
    /* full precision: the values as they are, little-endian */
    if (dlen < olen) {
      h5_stage_free(o);
      return h5_err(f, H5_ECORRUPT, "scaleoffset: chunk data ends early");
    }
    for (uint64_t i = 0; i < n; i++)
      put_uint(o + i * size, util_get_le(data + i * size, (int)size), size, big);
    *out = o;
    *outlen = olen;
    return H5_OK;
  }
  if (minbits && (uint64_t)dlen * 8 / minbits < n) {
    h5_stage_free(o);
    return h5_err(f, H5_ECORRUPT, "scaleoffset: chunk data ends early");
  }
  bitin b = {data, (uint64_t)dlen * 8, 0};
  int bad = 0;
  uint64_t allones = minbits == 64 ? UINT64_MAX : (UINT64_C(1) << minbits) - 1;
  uint64_t mask = size == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * size)) - 1;
  uint64_t fill = ((uint64_t)cd[9] << 32 | cd[8]) & mask;
  if (cls == 0) {
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = bits_get(&b, minbits, &bad);
      uint64_t r = filavail && v == allones ? fill : (v + minval) & mask;
      put_uint(o + i * size, r, size, big);
    }
  } else if (size == 4) {
    float min, fv;
    uint32_t u = (uint32_t)minval, fu = (uint32_t)fill;
    memcpy(&min, &u, 4);
    memcpy(&fv, &fu, 4);
    float scale = powf(10.0f, (float)scale_factor);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = bits_get(&b, minbits, &bad);
      float r = filavail && v == allones ? fv : (float)(int32_t)(uint32_t)v / scale + min;
      memcpy(&u, &r, 4);
      put_uint(o + i * size, u, 4, big);
    }
  } else {
    double min, fv;
    uint64_t u = minval;
    memcpy(&min, &u, 8);
    memcpy(&fv, &fill, 8);
    double scale = pow(10.0, (double)scale_factor);
    for (uint64_t i = 0; i < n; i++) {
      uint64_t v = bits_get(&b, minbits, &bad);
      double r = filavail && v == allones ? fv : (double)(int64_t)v / scale + min;
      memcpy(&u, &r, 8);
      put_uint(o + i * size, u, 8, big);
    }
  }
  (void)bad; /* the length was checked above */
  *out = o;
  *outlen = olen;
  return H5_OK;
}

/* ---- the pipeline ----------------------------------------------------------- */

int h5_unfilter(h5_file *f, const struct h5_dset *d, uint32_t mask, const uint8_t *in,
                size_t inlen, uint8_t *dest, uint8_t **out, size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  const uint8_t *cur = in;
  size_t len = inlen;
  uint8_t *own = NULL; /* the buffer cur points into, when it is ours */
  int last = 0; /* the last filter to undo: the first applied */
  while (last < d->info.nfilters && last < 32 && ((mask >> last) & 1)) last++;
  stage_dest_given = NULL;
  for (int i = d->info.nfilters - 1; i >= 0; i--) {
    if (i < 32 && (mask >> i) & 1) continue; /* skipped when the chunk was written */
    const h5_filter *flt = &d->filters[i];
    uint8_t *next = NULL;
    size_t nlen = len;
    int rc;
    /* the last stage may decode straight into dest: the stages whose
    ** output is one buffer of the chunk's size, written once, never grown
    ** (shuffle, blosc, lz4; deflate grows its buffer with realloc, which
    ** must never see the caller's memory) */
    if (dest && i == last &&
        (flt->id == F_SHUFFLE || flt->id == 32001 || flt->id == 32004)) {
      stage_dest = dest;
      stage_dest_len = (size_t)d->chunk_bytes;
    }
    switch (flt->id) {
    case F_DEFLATE: rc = unfilter_deflate(f, d, cur, len, &next, &nlen); break;
    case F_SHUFFLE: rc = unfilter_shuffle(f, d, flt, cur, len, &next); break;
    case F_FLETCHER32: rc = unfilter_fletcher32(f, cur, len, &nlen); break;
    case F_NBIT: rc = unfilter_nbit(f, d, flt, cur, len, &next, &nlen); break;
    case F_SCALEOFFSET: rc = unfilter_scaleoffset(f, d, flt, cur, len, &next, &nlen); break;
    case F_LZF: rc = unfilter_lzf(f, d, flt, cur, len, &next, &nlen); break;
    default: rc = h5_codec_unfilter(f, d, flt, cur, len, &next, &nlen); /* (h5_codec.c) */
    }
    stage_dest = NULL;
    if (rc) {
      h5_stage_free(next);
      h5_stage_free(own);
      stage_dest_given = NULL;
      return rc;
    }
    if (next) {
      h5_stage_free(own);
      own = next;
      cur = next;
    }
    len = nlen;
  }
  if (!own) {
    own = dest && len == d->chunk_bytes ? dest : h5_stage_alloc(len);
    if (!own) return h5_err(f, H5_ENOMEM, "out of memory");
    memcpy(own, cur, len);
  }
  stage_dest_given = NULL;
  *out = own;
  *outlen = len;
  return H5_OK;
}
