/*
** lib/h5/h5_codec.c - the third-party compression filters files in the wild
** use, each decoded by its own library (optional at configure time; a build
** without one names the filter in its "not available" error):
**
**   4      szip       libaec's szlib interface (HDF5's own choice); the
**                     chunk starts with its unfiltered size, 4 bytes LE;
**                     client values: options mask, pixels per block, bits
**                     per pixel, pixels per scanline
**   305    lzo        liblzo2, as PyTables writes it: an LZO1X stream
**                     (PyTables 0.5 to 0.7 appended the Adler-32 of the
**                     unfiltered bytes and their size, 4 bytes each, LE)
**   307    bzip2      libbz2: one bzip2 stream
**   32001  blosc      libblosc: one blosc buffer (its header gives sizes)
**   32004  lz4        liblz4, the HDF5 LZ4 plugin's framing: unfiltered
**                     size (8 bytes BE), block size (4 BE), then per block
**                     its stored size (4 BE) and LZ4 block data (stored as
**                     is when that size equals the block's)
**   32015  zstd       libzstd: one or more zstd frames
**
** Every decoder writes at most the stage's cap (the chunk plus slack,
** h5_stage_cap) and checks the sizes the stream claims against it before
** allocating.
*/
#include "config.h"

#include <pthread.h>
#include <stdio.h>

#include "h5_int.h"

#ifdef HAVE_SZIP
#include <szlib.h>
#endif
#ifdef HAVE_LZO
#include <lzo/lzo1x.h>
#endif
#ifdef HAVE_BZIP2
#include <bzlib.h>
#endif
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#endif

/* A buffer of n bytes for a stage's output, n checked against the cap. */
__attribute__((unused)) static int out_buf(h5_file *f, const struct h5_dset *d, const char *who, uint64_t n, uint8_t **out) {
  if (n > h5_stage_cap(d) || n > SIZE_MAX)
    return h5_err(f, H5_ECORRUPT, "%s: the data claims %llu bytes, more than a chunk of %llu", who,
                  (unsigned long long)n, (unsigned long long)d->chunk_bytes);
  *out = h5_stage_alloc((size_t)n);
  return *out ? H5_OK : h5_err(f, H5_ENOMEM, "out of memory (%llu bytes for %s)", (unsigned long long)n, who);
}

__attribute__((unused)) static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

__attribute__((unused)) static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#ifdef HAVE_SZIP
static int szip_decode(h5_file *f, const struct h5_dset *d, const h5_filter *flt, const uint8_t *in, size_t inlen,
                       uint8_t **out, size_t *outlen) {
  if (flt->ncd < 4) return h5_err(f, H5_ECORRUPT, "szip: %u client values, not 4", (unsigned)flt->ncd);
  if (inlen < 4) return h5_err(f, H5_ECORRUPT, "szip: a chunk of %zu bytes", inlen);
  uint32_t n = le32(in);
  int rc = out_buf(f, d, "szip", n, out);
  if (rc) return rc;
  SZ_com_t p;
  p.options_mask = (int)flt->cd[0];
  p.pixels_per_block = (int)flt->cd[1];
  p.bits_per_pixel = (int)flt->cd[2];
  p.pixels_per_scanline = (int)flt->cd[3];
  size_t got = n;
  int r = SZ_BufftoBuffDecompress(*out, &got, in + 4, inlen - 4, &p);
  if (r != SZ_OK || got != n) {
    h5_stage_free(*out);
    *out = NULL;
    return h5_err(f, H5_ECORRUPT, "szip: the chunk does not decode (error %d, %zu of %u bytes)", r, got,
                  (unsigned)n);
  }
  *outlen = n;
  return H5_OK;
}
#endif

#ifdef HAVE_LZO
static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_ok;
static void lzo_start(void) { lzo_ok = lzo_init() == LZO_E_OK; }

static int lzo_decode(h5_file *f, const struct h5_dset *d, const uint8_t *in, size_t inlen, uint8_t **out,
                      size_t *outlen) {
  pthread_once(&lzo_once, lzo_start);
  if (!lzo_ok) return h5_err(f, H5_EUNSUPPORTED, "lzo: liblzo2 does not initialize (lzo_init)");
  uint64_t cap = h5_stage_cap(d);
  int rc = out_buf(f, d, "lzo", cap, out);
  if (rc) return rc;
  /* PyTables since 0.8: the LZO1X stream alone */
  lzo_uint got = (lzo_uint)cap;
  if (lzo1x_decompress_safe(in, (lzo_uint)inlen, *out, &got, NULL) == LZO_E_OK) {
    *outlen = got;
    return H5_OK;
  }
  /* PyTables 0.5 to 0.7: then the Adler-32 of the unfiltered bytes and
  ** their size, 4 bytes each (little-endian) */
  if (inlen >= 8) {
    uint32_t n = le32(in + inlen - 4);
    got = (lzo_uint)cap;
    if (n <= cap && lzo1x_decompress_safe(in, (lzo_uint)(inlen - 8), *out, &got, NULL) == LZO_E_OK && got == n &&
        lzo_adler32(lzo_adler32(0, NULL, 0), *out, got) == le32(in + inlen - 8)) {
      *outlen = got;
      return H5_OK;
    }
  }
  h5_stage_free(*out);
  *out = NULL;
  return h5_err(f, H5_ECORRUPT, "lzo: the chunk does not decode");
}
#endif

#ifdef HAVE_BZIP2
static int bzip2_decode(h5_file *f, const struct h5_dset *d, const uint8_t *in, size_t inlen, uint8_t **out,
                        size_t *outlen) {
  uint64_t cap = h5_stage_cap(d);
  if (cap > UINT_MAX) cap = UINT_MAX;
  if (inlen > UINT_MAX) return h5_err(f, H5_ECORRUPT, "bzip2: a chunk of %zu bytes", inlen);
  int rc = out_buf(f, d, "bzip2", cap, out);
  if (rc) return rc;
  unsigned got = (unsigned)cap;
  int r = BZ2_bzBuffToBuffDecompress((char *)*out, &got, (char *)(uintptr_t)in, (unsigned)inlen, 0, 0);
  if (r != BZ_OK) {
    h5_stage_free(*out);
    *out = NULL;
    return h5_err(f, H5_ECORRUPT, "bzip2: the chunk does not decode (%s)",
                  r == BZ_OUTBUFF_FULL ? "it holds more than a chunk" : "a damaged stream");
  }
  *outlen = got;
  return H5_OK;
}
#endif

#ifdef HAVE_BLOSC
static int blosc_decode(h5_file *f, const struct h5_dset *d, const uint8_t *in, size_t inlen, uint8_t **out,
                        size_t *outlen) {
  size_t n = 0;
  if (blosc_cbuffer_validate(in, inlen, &n) != 0)
    return h5_err(f, H5_ECORRUPT, "blosc: the chunk is not a valid blosc buffer");
  int rc = out_buf(f, d, "blosc", n, out);
  if (rc) return rc;
  int got = blosc_decompress_ctx(in, *out, n, 1); /* (no global state: safe beside the host's own blosc) */
  if (got < 0 || (size_t)got != n) {
    h5_stage_free(*out);
    *out = NULL;
    return h5_err(f, H5_ECORRUPT, "blosc: the chunk does not decode (%d)", got);
  }
  *outlen = n;
  return H5_OK;
}
#endif

#ifdef HAVE_LZ4
static int lz4_decode(h5_file *f, const struct h5_dset *d, const uint8_t *in, size_t inlen, uint8_t **out,
                      size_t *outlen) {
  if (inlen < 12) return h5_err(f, H5_ECORRUPT, "lz4: a chunk of %zu bytes", inlen);
  uint64_t n = be(in, 8), bs = be(in + 8, 4);
  if (bs > n) bs = n;
  if (n && !bs) return h5_err(f, H5_ECORRUPT, "lz4: a block size of 0");
  int rc = out_buf(f, d, "lz4", n, out);
  if (rc) return rc;
  size_t ip = 12;
  uint64_t op = 0;
  while (op < n) {
    uint64_t b = n - op < bs ? n - op : bs;
    if (inlen - ip < 4) goto corrupt;
    uint64_t c = be(in + ip, 4);
    ip += 4;
    if (c > inlen - ip || c > INT32_MAX || b > INT32_MAX) goto corrupt;
    if (c == b) { /* (stored as it was) */
      memcpy(*out + op, in + ip, (size_t)b);
    } else if (LZ4_decompress_safe((const char *)in + ip, (char *)*out + op, (int)c, (int)b) != (int)b) {
      goto corrupt;
    }
    ip += (size_t)c;
    op += b;
  }
  *outlen = (size_t)n;
  return H5_OK;
corrupt:
  h5_stage_free(*out);
  *out = NULL;
  return h5_err(f, H5_ECORRUPT, "lz4: the chunk does not decode (at byte %zu)", ip);
}
#endif

#ifdef HAVE_ZSTD
static int zstd_decode(h5_file *f, const struct h5_dset *d, const uint8_t *in, size_t inlen, uint8_t **out,
                       size_t *outlen) {
  unsigned long long n = ZSTD_getFrameContentSize(in, inlen);
  if (n == ZSTD_CONTENTSIZE_ERROR) return h5_err(f, H5_ECORRUPT, "zstd: the chunk is not a zstd frame");
  uint64_t cap = n == ZSTD_CONTENTSIZE_UNKNOWN ? h5_stage_cap(d) : (uint64_t)n;
  int rc = out_buf(f, d, "zstd", cap, out);
  if (rc) return rc;
  size_t got = ZSTD_decompress(*out, (size_t)cap, in, inlen);
  if (ZSTD_isError(got) || (n != ZSTD_CONTENTSIZE_UNKNOWN && got != n)) {
    h5_stage_free(*out);
    *out = NULL;
    return h5_err(f, H5_ECORRUPT, "zstd: the chunk does not decode (%s)",
                  ZSTD_isError(got) ? ZSTD_getErrorName(got) : "a different size");
  }
  *outlen = got;
  return H5_OK;
}
#endif

int h5_codec_unfilter(h5_file *f, const struct h5_dset *d, const h5_filter *flt, const uint8_t *in, size_t inlen,
                      uint8_t **out, size_t *outlen) {
  *out = NULL;
  const char *lib = NULL; /* the library a build without the codec lacks */
  switch (flt->id) {
  case 4:
#ifdef HAVE_SZIP
    return szip_decode(f, d, flt, in, inlen, out, outlen);
#else
    lib = "libaec (libaec-dev)";
    break;
#endif
  case 305:
#ifdef HAVE_LZO
    return lzo_decode(f, d, in, inlen, out, outlen);
#else
    lib = "liblzo2 (liblzo2-dev)";
    break;
#endif
  case 307:
#ifdef HAVE_BZIP2
    return bzip2_decode(f, d, in, inlen, out, outlen);
#else
    lib = "libbz2 (libbz2-dev)";
    break;
#endif
  case 32001:
#ifdef HAVE_BLOSC
    return blosc_decode(f, d, in, inlen, out, outlen);
#else
    lib = "libblosc (libblosc-dev)";
    break;
#endif
  case 32004:
#ifdef HAVE_LZ4
    return lz4_decode(f, d, in, inlen, out, outlen);
#else
    lib = "liblz4 (liblz4-dev)";
    break;
#endif
  case 32015:
#ifdef HAVE_ZSTD
    return zstd_decode(f, d, in, inlen, out, outlen);
#else
    lib = "libzstd (libzstd-dev)";
    break;
#endif
  default: break;
  }
  (void)in, (void)inlen, (void)outlen;
  if (lib)
    return h5_err(f, H5_EUNSUPPORTED, "filter %u (%s) is not available: this build has no %s", flt->id,
                  h5_filter_label(flt), lib);
  return h5_err(f, H5_EUNSUPPORTED, "filter %u (%s) is not available", flt->id, h5_filter_label(flt));
}

/* ---- writing: zstd and blosc ------------------------------------------------ */

int h5w_codec_available(int codec, const char **lib) {
  *lib = NULL;
  switch (codec) {
  case H5W_CODEC_NONE: return 1;
  case H5W_CODEC_ZSTD:
#ifdef HAVE_ZSTD
    return 1;
#else
    *lib = "libzstd (libzstd-dev)";
    return 0;
#endif
  case H5W_CODEC_BLOSC:
#ifdef HAVE_BLOSC
    return 1;
#else
    *lib = "libblosc (libblosc-dev)";
    return 0;
#endif
  default: *lib = "a library for this codec"; return 0;
  }
}

int h5_codec_cd(const h5w_dcpl *p, size_t esz, uint64_t chunk_bytes, uint32_t *cd) {
  if (p->codec == H5W_CODEC_ZSTD) {
    cd[0] = (uint32_t)p->codec_level;
    return 1;
  }
  /* blosc, as the HDF5 blosc plugin fills them in: its version (2), blosc's
  ** format version (2), the type size (1 above blosc's 255), the chunk's
  ** bytes, then what the user chose */
  cd[0] = 2;
  cd[1] = 2;
  cd[2] = esz > 255 ? 1 : (uint32_t)esz;
  cd[3] = (uint32_t)chunk_bytes;
  cd[4] = (uint32_t)p->codec_level;
  cd[5] = (uint32_t)p->blosc_shuffle;
  cd[6] = (uint32_t)p->blosc_cname;
  return 7;
}

int h5_codec_encode(const h5w_dcpl *p, size_t esz, const uint8_t *in, size_t len, uint8_t **out,
                    size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  (void)esz, (void)in;
  size_t cap;
  if (p->codec == H5W_CODEC_ZSTD) {
#ifdef HAVE_ZSTD
    cap = ZSTD_compressBound(len);
#else
    return H5_EUNSUPPORTED;
#endif
  } else if (p->codec == H5W_CODEC_BLOSC) {
#ifdef HAVE_BLOSC
    if (len > (size_t)INT32_MAX - BLOSC_MAX_OVERHEAD) return H5_EUNSUPPORTED; /* blosc 1's limit */
    cap = len + BLOSC_MAX_OVERHEAD;
#else
    return H5_EUNSUPPORTED;
#endif
  } else {
    return H5_EINVAL;
  }
  uint8_t *z = malloc(cap ? cap : 1);
  if (!z) return H5_ENOMEM;
  size_t n = 0;
  int ok = 0;
#ifdef HAVE_ZSTD
  if (p->codec == H5W_CODEC_ZSTD) {
    n = ZSTD_compress(z, cap, in, len, p->codec_level);
    ok = !ZSTD_isError(n);
  }
#endif
#ifdef HAVE_BLOSC
  if (p->codec == H5W_CODEC_BLOSC) {
    const char *cname = NULL;
    /* (the context call: no global state, safe beside the host's own blosc;
    ** a buffer that does not compress is stored in blosc's framing as is) */
    int r = blosc_compcode_to_compname(p->blosc_cname, &cname) < 0 || !cname
                ? -1
                : blosc_compress_ctx(p->codec_level, p->blosc_shuffle, esz > 255 ? 1 : esz, len, in,
                                     z, cap, cname, 0, 1);
    n = r > 0 ? (size_t)r : 0;
    ok = r > 0;
  }
#endif
  if (!ok) {
    free(z);
    return H5_EIO;
  }
  *out = z;
  *outlen = n;
  return H5_OK;
}
