/*
** test/unit/test_h5_chunk.c - lib/h5: the filter pipeline (h5_unfilter) on
** hand-made chunks, and hyperslab reads (h5_dset_read_slab) checked
** against whole-dataset reads of the chunked datasets in the conformance
** fixtures (every chunk index type, filtered and not); rows of a chunked
** dataset written again (h5w_rewrite_rows), read back.
*/
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "h5/h5_int.h"
#include "testutil.h"
#include "util/le.h"

/* ---- a dataset with a filter pipeline, no file behind it ---------------- */

typedef struct fake {
  h5_file f;
  h5_type type;
  struct h5_dset d;
  h5_filter filters[8];
  uint32_t cd[8][24];
} fake;

static fake *fake_new(uint32_t esize, uint64_t chunk_bytes) {
  fake *x = calloc(1, sizeof *x);
  ck_assert_ptr_nonnull(x);
  x->type.size = esize;
  x->d.type = &x->type;
  x->d.info.type = &x->type;
  x->d.chunk_bytes = chunk_bytes;
  x->d.filters = x->filters;
  x->d.info.filters = x->filters;
  return x;
}

static void fake_add(fake *x, uint16_t id, const uint32_t *cd, uint32_t ncd) {
  int i = x->d.info.nfilters++;
  x->filters[i].id = id;
  x->filters[i].ncd = ncd;
  if (ncd) memcpy(x->cd[i], cd, ncd * sizeof *cd);
  x->filters[i].cd = x->cd[i];
}

static int unfilter(fake *x, uint32_t mask, const uint8_t *in, size_t len, uint8_t **out,
                    size_t *outlen) {
  return h5_unfilter(&x->f, &x->d, mask, in, len, NULL, out, outlen);
}

static uint8_t *deflated(const uint8_t *in, size_t len, size_t *outlen) {
  uLongf n = compressBound(len);
  uint8_t *z = malloc(n);
  ck_assert_ptr_nonnull(z);
  ck_assert_int_eq(compress2(z, &n, in, len, 6), Z_OK);
  *outlen = n;
  return z;
}

static void put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
}

START_TEST(test_deflate_shuffle_fletcher) {
  enum { N = 1000 };
  uint8_t data[N * 4], shuf[N * 4 + 3];
  for (int i = 0; i < N; i++) put_be32(data + 4 * i, (uint32_t)(i * 2654435761u));
  /* pipeline: shuffle (0), deflate (1), fletcher32 (2) */
  fake *x = fake_new(4, sizeof data);
  uint32_t four = 4;
  fake_add(x, 2, &four, 1);
  fake_add(x, 1, (const uint32_t[]){6}, 1);
  fake_add(x, 3, NULL, 0);
  for (int i = 0; i < N; i++)
    for (int k = 0; k < 4; k++) shuf[k * N + i] = data[4 * i + k];
  size_t zlen;
  uint8_t *z = deflated(shuf, sizeof data, &zlen);
  uint8_t *stored = malloc(zlen + 4);
  memcpy(stored, z, zlen);
  uint32_t sum = h5_fletcher32(z, zlen);
  util_put_le32(stored + zlen, sum);
  uint8_t *out;
  size_t outlen;
  ck_assert_int_eq(unfilter(x, 0, stored, zlen + 4, &out, &outlen), H5_OK);
  ck_assert_uint_eq(outlen, sizeof data);
  ck_assert(memcmp(out, data, sizeof data) == 0);
  free(out);
  /* the checksum with the bytes of each half swapped (before 1.6.3) */
  util_put_le32(stored + zlen, ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu));
  ck_assert_int_eq(unfilter(x, 0, stored, zlen + 4, &out, &outlen), H5_OK);
  free(out);
  /* a wrong checksum */
  util_put_le32(stored + zlen, sum ^ 0x100);
  ck_assert_int_eq(unfilter(x, 0, stored, zlen + 4, &out, &outlen), H5_ECORRUPT);
  ck_assert_ptr_null(out);
  ck_assert(strstr(x->f.err, "checksum") != NULL);
  /* fletcher32 skipped (mask bit 2): the stream alone */
  ck_assert_int_eq(unfilter(x, 4, z, zlen, &out, &outlen), H5_OK);
  ck_assert(memcmp(out, data, sizeof data) == 0);
  free(out);
  /* deflate skipped (mask bit 1): shuffled bytes and a checksum */
  uint8_t *raw = malloc(sizeof data + 4);
  memcpy(raw, shuf, sizeof data);
  util_put_le32(raw + sizeof data, h5_fletcher32(shuf, sizeof data));
  ck_assert_int_eq(unfilter(x, 2, raw, sizeof data + 4, &out, &outlen), H5_OK);
  ck_assert(outlen == sizeof data && memcmp(out, data, sizeof data) == 0);
  free(out);
  /* a truncated stream */
  ck_assert_int_eq(unfilter(x, 4, z, zlen / 2, &out, &outlen), H5_ECORRUPT);
  /* garbage */
  memset(raw, 0x55, 64);
  ck_assert_int_eq(unfilter(x, 4, raw, 64, &out, &outlen), H5_ECORRUPT);
  free(raw);
  free(stored);
  free(z);
  free(x);
}
END_TEST

START_TEST(test_deflate_bomb) {
  /* 64 MiB of zeros deflate to about 64 KiB; the chunk holds 4000 bytes */
  size_t big = (size_t)64 << 20;
  uint8_t *zeros = calloc(big, 1);
  ck_assert_ptr_nonnull(zeros);
  size_t zlen;
  uint8_t *z = deflated(zeros, big, &zlen);
  free(zeros);
  fake *x = fake_new(4, 4000);
  fake_add(x, 1, NULL, 0);
  uint8_t *out;
  size_t outlen;
  ck_assert_int_eq(unfilter(x, 0, z, zlen, &out, &outlen), H5_ECORRUPT);
  ck_assert_msg(strstr(x->f.err, "inflates beyond") != NULL, "%s", x->f.err);
  free(z);
  free(x);
}
END_TEST

START_TEST(test_unavailable) {
  /* filters no build has: the registry's name in the message */
  static const struct {
    uint16_t id;
    const char *msg;
  } cases[] = {
      {32002, "filter 32002 (mafisc) is not available"},
      {32013, "filter 32013 (zfp) is not available"},
      {32021, "filter 32021 (fapec) is not available"},
      {32022, "filter 32022 (bitgroom) is not available"},
      {32023, "filter 32023 (granular bitround) is not available"},
      {32024, "filter 32024 (sz3) is not available"},
      {32026, "filter 32026 (blosc2) is not available"},
      {32030, "filter 32030 (ffmpeg) is not available"},
      {40000, "filter 40000 (unregistered) is not available"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fake *x = fake_new(1, 16);
    fake_add(x, cases[i].id, NULL, 0);
    uint8_t in[16] = {0}, *out;
    size_t outlen;
    ck_assert_int_eq(unfilter(x, 0, in, 16, &out, &outlen), H5_EUNSUPPORTED);
    ck_assert_str_eq(x->f.err, cases[i].msg);
    /* skipped by the chunk's mask: no error */
    ck_assert_int_eq(unfilter(x, 1, in, 16, &out, &outlen), H5_OK);
    ck_assert_uint_eq(outlen, 16);
    free(out);
    free(x);
  }
  /* the codecs of libraries (h5_codec.c): garbage is an error naming the
  ** codec when the build has it, else "not available" naming the library */
  static const struct {
    uint16_t id;
    const char *name;
    int have;
  } codecs[] = {
#ifdef HAVE_SZIP
      {4, "szip", 1},
#else
      {4, "szip", 0},
#endif
#ifdef HAVE_LZO
      {305, "lzo", 1},
#else
      {305, "lzo", 0},
#endif
#ifdef HAVE_BZIP2
      {307, "bzip2", 1},
#else
      {307, "bzip2", 0},
#endif
#ifdef HAVE_BLOSC
      {32001, "blosc", 1},
#else
      {32001, "blosc", 0},
#endif
#ifdef HAVE_LZ4
      {32004, "lz4", 1},
#else
      {32004, "lz4", 0},
#endif
#ifdef HAVE_ZSTD
      {32015, "zstd", 1},
#else
      {32015, "zstd", 0},
#endif
  };
  static const uint32_t szip_cd[4] = {141, 32, 8, 16}; /* (szip needs its four values) */
  for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
    fake *x = fake_new(1, 16);
    fake_add(x, codecs[i].id, codecs[i].id == 4 ? szip_cd : NULL, codecs[i].id == 4 ? 4 : 0);
    uint8_t in[16], *out = NULL;
    for (int k = 0; k < 16; k++) in[k] = (uint8_t)(0xA5 ^ (k * 37));
    size_t outlen;
    int rc = unfilter(x, 0, in, 16, &out, &outlen);
    if (codecs[i].have) {
      T_CHECK(rc == H5_ECORRUPT && strstr(x->f.err, codecs[i].name), "%s of garbage: %d %s", codecs[i].name, rc,
              x->f.err);
    } else {
      T_CHECK(rc == H5_EUNSUPPORTED && strstr(x->f.err, "this build has no"), "%s without its library: %s",
              codecs[i].name, x->f.err);
    }
    T_CHECK(out == NULL, "%s: no output on error", codecs[i].name);
    free(x);
  }
}
END_TEST

/* HDF5 2.0's datatype message version 5: the complex class (11, a float
** base of half the size; [re, im] in JSON, numpy's "<c8"/"<c16") and a
** compound under version 5 (as versions 3 and 4); other complex forms are
** refused, a base that is not a float of half the size is corrupt. */
START_TEST(test_dtype_v5) {
  h5_file *f = calloc(1, sizeof *f);
  ck_assert_ptr_nonnull(f);
  /* complex64: 0x5b (version 5, class 11), homogeneous rectangular, size 8,
  ** then the base: IEEE float32 little-endian */
  static const uint8_t c64[] = {0x5b, 1, 0, 0, 8, 0, 0, 0, 0x11, 0x20, 0x1f, 0, 4, 0, 0, 0,
                                0, 0, 32, 0, 23, 8, 0, 23, 127, 0, 0, 0};
  h5_type *t = NULL;
  ck_assert_int_eq(h5_type_decode(f, c64, sizeof c64, &t), H5_OK);
  ck_assert_int_eq(t->cls, H5_CLASS_COMPLEX);
  ck_assert_uint_eq(t->size, 8);
  ck_assert_int_eq(t->base->cls, H5_CLASS_FLOAT);
  strbuf sb = {0};
  ck_assert_int_eq(h5_json_dtype(t, &sb), H5_OK);
  ck_assert_str_eq(sb.buf, "\"<c8\"");
  strbuf_free(&sb);
  float v[4] = {1.5f, -0.5f, 3.0f, 4.25f};
  uint64_t dims[1] = {2};
  strbuf vs = {0};
  ck_assert_int_eq(h5_json_values(f, t, (const uint8_t *)v, 1, dims, &vs), H5_OK);
  ck_assert_str_eq(vs.buf, "[[1.5, -0.5], [3.0, 4.25]]");
  strbuf_free(&vs);
  h5_type_free(t);
  /* polar form (bits 1-2 = 1): refused, not misread */
  uint8_t polar[sizeof c64];
  memcpy(polar, c64, sizeof c64);
  polar[1] = 1 | 2;
  ck_assert_int_eq(h5_type_decode(f, polar, sizeof polar, &t), H5_EUNSUPPORTED);
  /* a size that is not twice the base's */
  uint8_t odd[sizeof c64];
  memcpy(odd, c64, sizeof c64);
  odd[4] = 12;
  ck_assert_int_eq(h5_type_decode(f, odd, sizeof odd, &t), H5_ECORRUPT);
  /* a compound of version 5 (as h5wasm 0.10 writes it under libver latest):
  ** {r: <f4 at 0, i: <f4 at 4}, names unpadded, offsets one byte */
  static const uint8_t comp[] = {0x56, 2, 0, 0, 8, 0, 0, 0,
                                 'r', 0, 0, 0x11, 0x20, 0x1f, 0, 4, 0, 0, 0, 0, 0, 32, 0, 23, 8, 0, 23, 127, 0, 0, 0,
                                 'i', 0, 4, 0x11, 0x20, 0x1f, 0, 4, 0, 0, 0, 0, 0, 32, 0, 23, 8, 0, 23, 127, 0, 0, 0};
  ck_assert_int_eq(h5_type_decode(f, comp, sizeof comp, &t), H5_OK);
  ck_assert_int_eq(t->cls, H5_CLASS_COMPOUND);
  ck_assert_uint_eq(t->nmembers, 2);
  ck_assert_uint_eq(t->members[1].offset, 4);
  h5_type_free(t);
  /* version 6 is not known */
  uint8_t v6[sizeof comp];
  memcpy(v6, comp, sizeof comp);
  v6[0] = 0x66;
  ck_assert_int_eq(h5_type_decode(f, v6, sizeof v6, &t), H5_EUNSUPPORTED);
  free(f);
}
END_TEST

/* lzf: literal runs and overlapping back references, and corrupt streams. */
START_TEST(test_lzf) {
  uint32_t cd[3] = {4, 0, 12};
  /* "abcd" as a literal run, then 8 bytes copied from 4 back: abcd x 3 */
  const uint8_t good[] = {3, 'a', 'b', 'c', 'd', (8 - 2) << 5, 3};
  fake *x = fake_new(1, 12);
  fake_add(x, 32000, cd, 3);
  uint8_t *out;
  size_t outlen;
  ck_assert_int_eq(unfilter(x, 0, good, sizeof good, &out, &outlen), H5_OK);
  ck_assert_uint_eq(outlen, 12);
  ck_assert(memcmp(out, "abcdabcdabcd", 12) == 0);
  free(out);
  static const struct {
    uint8_t b[8];
    size_t n;
  } bad[] = {
      {{5, 'a', 'b'}, 3},                       /* literal run past the input */
      {{0, 'a', 1 << 5, 5}, 4},                 /* reference before the start */
      {{0, 'a', 7 << 5}, 3},                    /* length byte missing */
      {{3, 'a', 'b', 'c', 'd', 7 << 5, 200, 3}, 8}, /* output past the chunk */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(unfilter(x, 0, bad[i].b, bad[i].n, &out, &outlen), H5_ECORRUPT);
    ck_assert_msg(strstr(x->f.err, "lzf"), "%s", x->f.err);
  }
  free(x);
}
END_TEST

/* Zero-copy views of contiguous and compact data; none of chunked data. */
START_TEST(test_view) {
  char path[] = "/tmp/h5mem_view_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char err[256];
  h5w *w;
  h5w_obj *d;
  float v[100];
  for (int i = 0; i < 100; i++) v[i] = (float)i * 0.5f;
  uint64_t dims[1] = {100};
  ck_assert_int_eq(h5w_create(path, 1, &w, err, sizeof err), H5_OK);
  h5w_dcpl compact = {.layout = H5_LAYOUT_COMPACT, .deflate = -1};
  h5w_dcpl chunked = {.layout = H5_LAYOUT_CHUNKED, .chunk = {10}, .deflate = -1};
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "contig", h5_type_new_float(4), 1, dims, NULL, NULL, &d), H5_OK);
  ck_assert_int_eq(h5w_write(w, d, v), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "compact", h5_type_new_float(4), 1, dims, NULL, &compact, &d), H5_OK);
  ck_assert_int_eq(h5w_write(w, d, v), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "chunked", h5_type_new_float(4), 1, dims, NULL, &chunked, &d), H5_OK);
  ck_assert_int_eq(h5w_write(w, d, v), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "unwritten", h5_type_new_float(4), 1, dims, NULL, NULL, &d), H5_OK);
  ck_assert_int_eq(h5w_close(w, 0), H5_OK);
  h5w_free(w);
  h5_file *f;
  h5_obj *root, *o;
  const h5_link *l;
  ck_assert_int_eq(h5_open(path, &f, err, sizeof err), H5_OK);
  ck_assert_int_eq(h5_root(f, &root), H5_OK);
  const char *names[4] = {"contig", "compact", "chunked", "unwritten"};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(h5_group_find(root, names[i], &l), H5_OK);
    ck_assert_int_eq(h5_obj_open(f, l->addr, &o), H5_OK);
    const void *p;
    size_t n;
    int rc = h5_dset_view(o, &p, &n);
    if (i < 2) {
      ck_assert_int_eq(rc, H5_OK);
      ck_assert_uint_eq(n, sizeof v);
      ck_assert(memcmp(p, v, sizeof v) == 0);
    } else {
      ck_assert_int_eq(rc, H5_EUNSUPPORTED);
      ck_assert_ptr_null(p);
    }
  }
  ck_assert_int_eq(h5_group_find(root, "missing", &l), H5_ENOTFOUND);
  h5_close(f);
  unlink(path);
}
END_TEST

/* ---- rows written again (h5w_rewrite_rows) ---------------------------------- */

/* The dataset at name of the file at path, read whole into buf (n bytes). */
static void read_whole(const char *path, const char *name, void *buf, size_t n, uint64_t want_rows) {
  char err[256];
  h5_file *f;
  h5_obj *root, *o;
  const h5_link *l;
  ck_assert_int_eq(h5_open(path, &f, err, sizeof err), H5_OK);
  ck_assert_int_eq(h5_root(f, &root), H5_OK);
  ck_assert_int_eq(h5_group_find(root, name, &l), H5_OK);
  ck_assert_int_eq(h5_obj_open(f, l->addr, &o), H5_OK);
  h5_dset_info di;
  ck_assert_int_eq(h5_dset_info_get(o, &di), H5_OK);
  ck_assert_uint_eq(di.dims[0], want_rows);
  ck_assert_int_eq(h5_dset_read(o, buf, n), H5_OK);
  h5_close(f);
}

/* Rows of old and new datasets rewritten: in whole chunks (copied past the
** end), in the last partial row of chunks (in memory, then completed by
** appends), twice in one session, a chunk never written (the fill value
** first), two columns a row; what the reader then reads is the model;
** filtered datasets, rows out of order or past the end are refused. */
START_TEST(test_rewrite_rows) {
  char path[] = "/tmp/h5mem_rewrite_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char err[256];
  h5w *w;
  h5w_obj *a, *m, *z;
  int64_t va[64];
  float vm[64][3];
  for (int i = 0; i < 64; i++) {
    va[i] = i;
    for (int k = 0; k < 3; k++) vm[i][k] = (float)(i * 10 + k);
  }
  uint64_t d0[2] = {0, 3}, mx[2] = {UINT64_MAX, 3};
  h5w_dcpl c10 = {.layout = H5_LAYOUT_CHUNKED, .chunk = {10, 3}, .deflate = -1};
  h5w_dcpl zc = {.layout = H5_LAYOUT_CHUNKED, .chunk = {10}, .deflate = 6};
  ck_assert_int_eq(h5w_create(path, 1, &w, err, sizeof err), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "a", h5_type_new_int(8, 1), 1, d0, mx, &c10, &a), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "m", h5_type_new_float(4), 2, d0, mx, &c10, &m), H5_OK);
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "z", h5_type_new_int(8, 1), 1, d0, mx, &zc, &z), H5_OK);
  ck_assert_int_eq(h5w_append(w, a, va, 35), H5_OK);
  ck_assert_int_eq(h5w_append(w, m, vm, 35), H5_OK);
  ck_assert_int_eq(h5w_append(w, z, va, 35), H5_OK);
  /* in a new file, before any flush: whole chunks and the pending rows */
  uint64_t r1[3] = {1, 12, 31};
  int64_t n1[3] = {-1, -12, -31};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, r1, n1, 3), H5_OK);
  for (int i = 0; i < 3; i++) va[r1[i]] = n1[i];
  ck_assert_int_eq(h5w_close(w, 0), H5_OK);
  h5w_free(w);
  int64_t got[64];
  read_whole(path, "a", got, 35 * 8, 35);
  ck_assert(memcmp(got, va, 35 * 8) == 0);

  /* the file opened again: rows in old chunks, in the old partial chunk,
  ** the same chunk twice, then appends completing the partial chunk */
  ck_assert_int_eq(h5w_open(path, 1, &w, err, sizeof err), H5_OK);
  ck_assert_int_eq(h5w_lookup(w, "/a", &a), H5_OK);
  ck_assert_int_eq(h5w_lookup(w, "/m", &m), H5_OK);
  ck_assert_int_eq(h5w_lookup(w, "/z", &z), H5_OK);
  uint64_t r2[5] = {0, 9, 10, 33, 34};
  int64_t n2[5] = {100, 109, 110, 133, 134};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, r2, n2, 5), H5_OK);
  for (int i = 0; i < 5; i++) va[r2[i]] = n2[i];
  uint64_t r3[2] = {5, 9};
  int64_t n3[2] = {205, 209};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, r3, n3, 2), H5_OK); /* chunk 0 again: its copy is read */
  for (int i = 0; i < 2; i++) va[r3[i]] = n3[i];
  uint64_t rm[2] = {3, 32};
  float nm[2][3] = {{-1, -2, -3}, {-4, -5, -6}};
  ck_assert_int_eq(h5w_rewrite_rows(w, m, rm, nm, 2), H5_OK);
  memcpy(vm[3], nm[0], sizeof nm[0]);
  memcpy(vm[32], nm[1], sizeof nm[1]);
  ck_assert_int_eq(h5w_append(w, a, va + 35, 10), H5_OK); /* rows 35..44: chunk 3 completes */
  uint64_t r4[2] = {36, 44};
  int64_t n4[2] = {336, 344};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, r4, n4, 2), H5_OK);
  va[36] = 336;
  va[44] = 344;
  /* refused: nothing changes */
  uint64_t bad1[2] = {5, 5}, bad2[1] = {45}, bad3[2] = {7, 3};
  int64_t nb[2] = {-9, -9};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, bad1, nb, 2), H5_EINVAL);
  ck_assert_int_eq(h5w_rewrite_rows(w, a, bad2, nb, 1), H5_EINVAL);
  ck_assert_int_eq(h5w_rewrite_rows(w, a, bad3, nb, 2), H5_EINVAL);
  ck_assert_int_eq(h5w_rewrite_rows(w, z, r3, nb, 2), H5_EUNSUPPORTED);
  ck_assert_int_eq(h5w_close(w, 0), H5_OK);
  h5w_free(w);
  read_whole(path, "a", got, 45 * 8, 45);
  for (int i = 0; i < 45; i++) ck_assert_msg(got[i] == va[i], "row %d: %lld, not %lld", i, (long long)got[i], (long long)va[i]);
  float gm[35][3];
  read_whole(path, "m", gm, sizeof gm, 35);
  ck_assert(memcmp(gm, vm, sizeof gm) == 0);
  read_whole(path, "z", got, 35 * 8, 35); /* (the filtered one as it was) */
  for (int i = 0; i < 35; i++) ck_assert_int_eq(got[i], i);

  /* a chunk never written: a dataset of 30 rows with only its first chunk */
  ck_assert_int_eq(h5w_create(path, 1, &w, err, sizeof err), H5_OK);
  uint64_t d30[1] = {30};
  h5w_dcpl c10b = {.layout = H5_LAYOUT_CHUNKED, .chunk = {10}, .deflate = -1};
  ck_assert_int_eq(h5w_dataset(w, h5w_root(w), "s", h5_type_new_int(8, 1), 1, d30, NULL, &c10b, &a), H5_OK);
  uint64_t r5[2] = {15, 29};
  int64_t n5[2] = {15, 29};
  ck_assert_int_eq(h5w_rewrite_rows(w, a, r5, n5, 2), H5_OK);
  ck_assert_int_eq(h5w_close(w, 0), H5_OK);
  h5w_free(w);
  read_whole(path, "s", got, 30 * 8, 30);
  for (int i = 0; i < 30; i++) ck_assert_int_eq(got[i], i == 15 || i == 29 ? i : 0);
  unlink(path);
}
END_TEST

/* Most significant bit first, no padding: the nbit and scaleoffset packing. */
typedef struct bitout {
  uint8_t buf[256];
  size_t pos;
} bitout;

static void bits_put(bitout *b, uint64_t v, unsigned n) {
  while (n--) {
    if ((v >> n) & 1) b->buf[b->pos / 8] |= (uint8_t)(0x80u >> (b->pos % 8));
    b->pos++;
  }
}

START_TEST(test_nbit) {
  /* 4-byte little-endian integers, 12 bits at offset 3 */
  enum { N = 20 };
  uint32_t cd[8] = {8, 0, N, 1, 4, 0, 12, 3};
  fake *x = fake_new(4, N * 4);
  fake_add(x, 5, cd, 8);
  bitout b = {{0}, 0};
  uint8_t want[N * 4];
  for (uint32_t i = 0; i < N; i++) {
    uint32_t v = (i * 397u) & 0xfff;
    bits_put(&b, v, 12);
    util_put_le32(want + 4 * i, v << 3);
  }
  uint8_t *out;
  size_t outlen;
  ck_assert_int_eq(unfilter(x, 0, b.buf, (b.pos + 7) / 8, &out, &outlen), H5_OK);
  ck_assert(outlen == sizeof want && memcmp(out, want, sizeof want) == 0);
  free(out);
  /* the packed data ends early */
  ck_assert_int_eq(unfilter(x, 0, b.buf, b.pos / 8 - 2, &out, &outlen), H5_ECORRUPT);
  /* precision and offset beyond the size */
  x->cd[0][6] = 30;
  ck_assert_int_eq(unfilter(x, 0, b.buf, (b.pos + 7) / 8, &out, &outlen), H5_ECORRUPT);
  /* the parameter count disagrees */
  x->cd[0][6] = 12;
  x->cd[0][0] = 9;
  ck_assert_int_eq(unfilter(x, 0, b.buf, (b.pos + 7) / 8, &out, &outlen), H5_ECORRUPT);
  /* "no packing needed": passed through */
  x->cd[0][0] = 8;
  x->cd[0][1] = 1;
  ck_assert_int_eq(unfilter(x, 0, b.buf, 7, &out, &outlen), H5_OK);
  ck_assert_uint_eq(outlen, 7);
  free(out);
  free(x);

  /* a compound {uint16 BE, 5 bits at 1; opaque 2 bytes} */
  uint32_t cc[] = {0, 0, 3, 3, 4, 2, 0, 1, 2, 1, 5, 1, 2, 4, 2};
  cc[0] = sizeof cc / sizeof cc[0];
  x = fake_new(4, 12);
  fake_add(x, 5, cc, cc[0]);
  bitout c = {{0}, 0};
  uint8_t cw[12];
  for (int i = 0; i < 3; i++) {
    uint32_t v = (uint32_t)(7 * i + 3) & 31;
    bits_put(&c, v, 5);
    cw[4 * i] = (uint8_t)((v << 1) >> 8);
    cw[4 * i + 1] = (uint8_t)(v << 1);
    bits_put(&c, 0xa0 + (unsigned)i, 8);
    bits_put(&c, 0x0b, 8);
    cw[4 * i + 2] = (uint8_t)(0xa0 + i);
    cw[4 * i + 3] = 0x0b;
  }
  ck_assert_int_eq(unfilter(x, 0, c.buf, (c.pos + 7) / 8, &out, &outlen), H5_OK);
  ck_assert(outlen == 12 && memcmp(out, cw, 12) == 0);
  free(out);
  free(x);
}
END_TEST

START_TEST(test_scaleoffset) {
  /* 2-byte signed big-endian integers, 5 bits above a minimum of -7, the
     fill value 1000 written as all ones */
  enum { N = 30 };
  uint32_t cd[20] = {2, 0, N, 0, 2, 1, 1, 1, 1000};
  fake *x = fake_new(2, N * 2);
  fake_add(x, 6, cd, 20);
  uint8_t in[21 + 32] = {5, 0, 0, 0, 8};
  util_put_le64(in + 5, (uint64_t)-7);
  bitout b = {{0}, 0};
  uint8_t want[N * 2];
  for (int i = 0; i < N; i++) {
    uint32_t v = (uint32_t)(i * 11) % 32;
    bits_put(&b, v, 5);
    int16_t r = v == 31 ? 1000 : (int16_t)(v - 7);
    want[2 * i] = (uint8_t)((uint16_t)r >> 8);
    want[2 * i + 1] = (uint8_t)r;
  }
  memcpy(in + 21, b.buf, (b.pos + 7) / 8);
  size_t len = 21 + (b.pos + 7) / 8;
  uint8_t *out;
  size_t outlen;
  ck_assert_int_eq(unfilter(x, 0, in, len, &out, &outlen), H5_OK);
  ck_assert(outlen == sizeof want && memcmp(out, want, sizeof want) == 0);
  free(out);
  ck_assert_int_eq(unfilter(x, 0, in, len - 3, &out, &outlen), H5_ECORRUPT);
  in[0] = 17; /* more bits than the type has */
  ck_assert_int_eq(unfilter(x, 0, in, len, &out, &outlen), H5_ECORRUPT);
  in[0] = 5;
  x->cd[0][0] = 1; /* E-scale for integers */
  ck_assert_int_eq(unfilter(x, 0, in, len, &out, &outlen), H5_ECORRUPT);
  free(x);
}
END_TEST

/* ---- hyperslabs against whole reads of the fixtures -------------------------- */

static const char *fixture_files[] = {
    "jamesmudd+jhdf/jhdf/src/test/resources/hdf5/chunked_v4_datasets.hdf5",
    "jamesmudd+jhdf/jhdf/src/test/resources/hdf5/implicit_index_datasets.hdf5",
    "jamesmudd+jhdf/jhdf/src/test/resources/hdf5/test_compressed_chunked_datasets_earliest.hdf5",
    "jamesmudd+jhdf/jhdf/src/test/resources/hdf5/test_compressed_chunked_datasets_latest.hdf5",
    "jamesmudd+jhdf/jhdf/src/test/resources/hdf5/fletcher32_datasets_latest.hdf5",
    "hdf5/test/testfiles/h5fc_ext1_f.h5",
    "hdf5/test/testfiles/h5fc_ext3_isf.h5",
    "hdf5/tools/test/h5format_convert/testfiles/h5fc_edge_v3.h5",
    "hdf5/tools/test/h5stat/testfiles/h5stat_idx.h5",
    "hdf5/test/testfiles/btree_idx_1_8.h5",
    "hdf5/tools/test/h5repack/testfiles/h5repack_layout2.h5",
    "hdf5/test/testfiles/tmisc38a.h5",
    "NCAS-CMS+pyfive/tests/data/filter_pipeline_v2.hdf5",
};

typedef struct dsets {
  h5_obj *v[256];
  int n;
} dsets;

static void collect_dsets(h5_file *f, h5_obj *g, dsets *out, int depth);

static int collect_cb(void *ctx, const h5_link *l) {
  void **c = ctx;
  h5_file *f = c[0];
  dsets *out = c[1];
  int depth = *(int *)c[2];
  if (l->type != H5_LINK_HARD) return 0;
  h5_obj *o;
  if (h5_obj_open(f, l->addr, &o)) return 0;
  if (h5_obj_kind(o) == H5_KIND_GROUP) {
    collect_dsets(f, o, out, depth + 1);
  } else if (h5_obj_kind(o) == H5_KIND_DATASET && out->n < 256) {
    for (int i = 0; i < out->n; i++)
      if (out->v[i] == o) return 0;
    out->v[out->n++] = o;
  }
  return 0;
}

static void collect_dsets(h5_file *f, h5_obj *g, dsets *out, int depth) {
  if (depth > 8) return;
  void *c[3] = {f, out, &depth};
  (void)h5_group_iter(g, collect_cb, c);
}

static const char *fixtures_dir(char *buf, size_t len) {
  const char *e = getenv("H5MEM_FIXTURES");
  if (e && *e) return e;
  const char *src = getenv("H5MEM_SRCDIR");
  snprintf(buf, len, "%s/test/data/hdf5", src && *src ? src : ".");
  return buf;
}

/* Compare one random hyperslab of d with the same elements of whole. */
static void check_slab(h5_obj *d, const h5_dset_info *info, const uint8_t *whole,
                       t_rng *rng, const char *what) {
  int rank = info->rank;
  size_t esz = info->type->size;
  uint64_t start[H5_MAX_RANK], count[H5_MAX_RANK], stride[H5_MAX_RANK];
  uint64_t n = 1;
  for (int k = 0; k < rank; k++) {
    uint64_t dim = info->dims[k];
    start[k] = t_next(rng) % dim;
    stride[k] = 1 + t_next(rng) % (t_next(rng) % 2 ? 1 : (dim / 2 + 1));
    uint64_t most = (dim - 1 - start[k]) / stride[k] + 1;
    count[k] = 1 + t_next(rng) % most;
    n *= count[k];
  }
  uint8_t *buf = malloc(n * esz + 1);
  ck_assert_ptr_nonnull(buf);
  int rc = h5_dset_read_slab(d, start, count, stride, buf, n * esz);
  ck_assert_msg(rc == H5_OK, "%s: slab read failed: %d", what, rc);
  /* walk the selection in C order */
  uint64_t idx[H5_MAX_RANK] = {0};
  for (uint64_t e = 0; e < n; e++) {
    uint64_t off = 0;
    for (int k = 0; k < rank; k++)
      off = off * info->dims[k] + start[k] + idx[k] * stride[k];
    T_CHECK(memcmp(buf + e * esz, whole + off * esz, esz) == 0, "%s: element %llu differs",
            what, (unsigned long long)e);
    for (int k = rank - 1; k >= 0; k--) {
      if (++idx[k] < count[k]) break;
      idx[k] = 0;
    }
  }
  free(buf);
}

/* Files to check besides the fixtures: H5MEM_TEST_H5FILES, colon-separated. */
static size_t extra_files(char *paths[], size_t max) {
  static char buf[8192];
  const char *e = getenv("H5MEM_TEST_H5FILES");
  size_t n = 0;
  if (!e) return 0;
  snprintf(buf, sizeof buf, "%s", e);
  for (char *p = strtok(buf, ":"); p && n < max; p = strtok(NULL, ":")) paths[n++] = p;
  return n;
}

START_TEST(test_slabs) {
  char dirbuf[1024], path[2048];
  const char *dir = fixtures_dir(dirbuf, sizeof dirbuf);
  t_rng rng = {t_seed()};
  int files = 0, checked = 0;
  char *extra[64];
  size_t nfix = sizeof fixture_files / sizeof fixture_files[0];
  size_t nextra = extra_files(extra, 64);
  for (size_t i = 0; i < nfix + nextra; i++) {
    if (i < nfix)
      snprintf(path, sizeof path, "%s/files/%s", dir, fixture_files[i]);
    else
      snprintf(path, sizeof path, "%s", extra[i - nfix]);
    h5_file *f;
    char err[512];
    if (h5_open(path, &f, err, sizeof err)) continue;
    files++;
    h5_obj *root;
    ck_assert_int_eq(h5_root(f, &root), H5_OK);
    dsets ds = {{0}, 0};
    collect_dsets(f, root, &ds, 0);
    for (int j = 0; j < ds.n; j++) {
      h5_dset_info info;
      if (h5_dset_info_get(ds.v[j], &info) || info.rank <= 0 || info.nelems == 0 ||
          info.nelems > 1000000)
        continue;
      size_t bytes = (size_t)info.nelems * info.type->size;
      uint8_t *whole = malloc(bytes);
      ck_assert_ptr_nonnull(whole);
      if (h5_dset_read(ds.v[j], whole, bytes) == H5_OK) {
        char what[2200];
        snprintf(what, sizeof what, "%s object %llu", path,
                 (unsigned long long)h5_obj_addr(ds.v[j]));
        for (int t = 0; t < 20; t++) check_slab(ds.v[j], &info, whole, &rng, what);
        /* the whole dataset as a slab */
        uint64_t start[H5_MAX_RANK] = {0};
        uint8_t *again = malloc(bytes);
        ck_assert_int_eq(h5_dset_read_slab(ds.v[j], start, info.dims, NULL, again, bytes),
                         H5_OK);
        ck_assert(memcmp(again, whole, bytes) == 0);
        free(again);
        if (info.layout == H5_LAYOUT_CHUNKED || info.external) checked++;
      }
      free(whole);
    }
    h5_close(f);
  }
  if (files == (int)nextra) {
    ck_assert_msg(getenv("H5MEM_REQUIRE_FIXTURES") == NULL, "no fixtures under %s", dir);
    printf("test_h5_chunk: no fixtures under %s; hyperslab checks skipped\n", dir);
  } else {
    printf("test_h5_chunk: hyperslabs of %d chunked datasets in %d files checked\n",
           checked, files);
    ck_assert_int_gt(checked, 20);
  }
}
END_TEST

START_TEST(test_slab_args) {
  char dirbuf[1024], path[2048];
  const char *dir = fixtures_dir(dirbuf, sizeof dirbuf);
  snprintf(path, sizeof path, "%s/files/%s", dir, fixture_files[0]);
  h5_file *f;
  char err[512];
  if (h5_open(path, &f, err, sizeof err)) return;
  h5_obj *root;
  ck_assert_int_eq(h5_root(f, &root), H5_OK);
  dsets ds = {{0}, 0};
  collect_dsets(f, root, &ds, 0);
  ck_assert_int_gt(ds.n, 0);
  h5_dset_info info;
  h5_obj *d = NULL;
  for (int j = 0; j < ds.n && !d; j++)
    if (h5_dset_info_get(ds.v[j], &info) == H5_OK && info.rank >= 1 && info.dims[0] > 2)
      d = ds.v[j];
  ck_assert_ptr_nonnull(d);
  uint64_t start[H5_MAX_RANK] = {0}, count[H5_MAX_RANK], stride[H5_MAX_RANK];
  for (int k = 0; k < info.rank; k++) {
    count[k] = 1;
    stride[k] = 1;
  }
  uint8_t buf[64];
  /* leaves the dataset */
  start[0] = info.dims[0];
  ck_assert_int_eq(h5_dset_read_slab(d, start, count, stride, buf, sizeof buf), H5_EINVAL);
  start[0] = 0;
  count[0] = 2;
  stride[0] = info.dims[0];
  ck_assert_int_eq(h5_dset_read_slab(d, start, count, stride, buf, sizeof buf), H5_EINVAL);
  stride[0] = 0;
  ck_assert_int_eq(h5_dset_read_slab(d, start, count, stride, buf, sizeof buf), H5_EINVAL);
  stride[0] = 1;
  /* a buffer too small */
  ck_assert_int_eq(h5_dset_read_slab(d, start, count, stride, buf, 1), H5_EINVAL);
  /* nothing selected */
  count[0] = 0;
  ck_assert_int_eq(h5_dset_read_slab(d, start, count, stride, buf, 0), H5_OK);
  h5_close(f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("h5_chunk");
  TCase *tc = tcase_create("filters");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_deflate_shuffle_fletcher);
  tcase_add_test(tc, test_deflate_bomb);
  tcase_add_test(tc, test_unavailable);
  tcase_add_test(tc, test_lzf);
  tcase_add_test(tc, test_dtype_v5);
  tcase_add_test(tc, test_view);
  tcase_add_test(tc, test_rewrite_rows);
  tcase_add_test(tc, test_nbit);
  tcase_add_test(tc, test_scaleoffset);
  suite_add_tcase(s, tc);
  TCase *tr = tcase_create("slabs");
  tcase_set_timeout(tr, 300);
  tcase_add_test(tr, test_slabs);
  tcase_add_test(tr, test_slab_args);
  suite_add_tcase(s, tr);
  return t_run(s);
}
