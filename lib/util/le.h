/*
** lib/util/le.h - little-endian encode and decode, the one copy.
**
** The rule, for every image h5mem writes (HDF5 structures, the WAL, the
** HNSW, IVF and text index images, sqlite-vec blobs it migrates): the bytes
** are little-endian whatever the host.  Nothing on disk is ever in host
** order.
**
**   - Fields are read and written through these helpers, which take any
**     pointer (no alignment needed) and swap on a big-endian host.
**   - Bulk arrays of 4-byte words (an image's link lists, centroids, ids)
**     may be used in place only when the host is little-endian
**     (util_host_le) and the array is 4-byte aligned; otherwise the reader
**     copies them once into host order with util_get_le32s (swapping on a
**     big-endian host) and the writer stores them with util_put_le32s.  A
**     big-endian host therefore reads and writes the same images as a
**     little-endian one; no image is refused for the host's byte order.
**
** Floats are IEEE-754 binary32/binary64 stored as the little-endian bytes
** of their bit pattern (util_get_le_f32 and friends).  Header only, static
** inline; depends on nothing but the C library.
*/
#ifndef H5MEM_UTIL_LE_H
#define H5MEM_UTIL_LE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1 when the host stores integers least significant byte first */
static inline int util_host_le(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return 1;
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return 0;
#else
  const uint16_t one = 1;
  return *(const uint8_t *)&one == 1;
#endif
}

static inline uint16_t util_get_le16(const uint8_t *p) {
  return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t util_get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static inline uint64_t util_get_le64(const uint8_t *p) {
  return (uint64_t)util_get_le32(p) | (uint64_t)util_get_le32(p + 4) << 32;
}

static inline void util_put_le16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static inline void util_put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static inline void util_put_le64(uint8_t *p, uint64_t v) {
  util_put_le32(p, (uint32_t)v);
  util_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* An unsigned integer of n bytes (0 <= n <= 8), as HDF5 stores its
** variable-width fields (lengths, offsets of "size of lengths" bytes). */
static inline uint64_t util_get_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* The low n bytes (0 <= n <= 8) of v; higher bytes of v are dropped. */
static inline void util_put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static inline float util_get_le_f32(const uint8_t *p) {
  uint32_t u = util_get_le32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline double util_get_le_f64(const uint8_t *p) {
  uint64_t u = util_get_le64(p);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

static inline void util_put_le_f32(uint8_t *p, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  util_put_le32(p, u);
}

static inline void util_put_le_f64(uint8_t *p, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  util_put_le64(p, u);
}

/* n 4-byte words (uint32 or float) from the image at src into host order
** at dst (any alignment; dst may be src, converting in place). */
static inline void util_get_le32s(void *dst, const uint8_t *src, size_t n) {
  if (util_host_le()) {
    if (n && dst != (const void *)src) memmove(dst, src, n * 4);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t w = util_get_le32(src + 4 * i);
    memcpy((uint8_t *)dst + 4 * i, &w, 4);
  }
}

/* n 4-byte words (uint32 or float) in host order at src into the image at
** dst (any alignment; dst may be src). */
static inline void util_put_le32s(uint8_t *dst, const void *src, size_t n) {
  if (util_host_le()) {
    if (n && (const void *)dst != src) memmove(dst, src, n * 4);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t w;
    memcpy(&w, (const uint8_t *)src + 4 * i, 4);
    util_put_le32(dst + 4 * i, w);
  }
}

#endif
