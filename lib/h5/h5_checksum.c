/*
** lib/h5/h5_checksum.c - the checksums of the HDF5 format.
**
** Metadata: Bob Jenkins' lookup3 "hashlittle" (public domain, 2006), byte
** by byte so that it needs no alignment and reads the same on any host.
** Raw data: the fletcher32 filter's Fletcher-32 over big-endian 16-bit
** words, as libhdf5 computes it.
*/
#include "config.h"

#include "h5_int.h"

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

#define MIX(a, b, c)                                                         \
  do {                                                                       \
    a -= c; a ^= ROT(c, 4);  c += b;                                         \
    b -= a; b ^= ROT(a, 6);  a += c;                                         \
    c -= b; c ^= ROT(b, 8);  b += a;                                         \
    a -= c; a ^= ROT(c, 16); c += b;                                         \
    b -= a; b ^= ROT(a, 19); a += c;                                         \
    c -= b; c ^= ROT(b, 4);  b += a;                                         \
  } while (0)

#define FINAL(a, b, c)                                                       \
  do {                                                                       \
    c ^= b; c -= ROT(b, 14);                                                 \
    a ^= c; a -= ROT(c, 11);                                                 \
    b ^= a; b -= ROT(a, 25);                                                 \
    c ^= b; c -= ROT(b, 16);                                                 \
    a ^= c; a -= ROT(c, 4);                                                  \
    b ^= a; b -= ROT(a, 14);                                                 \
    c ^= b; c -= ROT(b, 24);                                                 \
  } while (0)

uint32_t h5_lookup3(const void *data, size_t len, uint32_t initval) {
  const uint8_t *k = data;
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + (uint32_t)len + initval;
  while (len > 12) {
    a += util_get_le32(k);
    b += util_get_le32(k + 4);
    c += util_get_le32(k + 8);
    MIX(a, b, c);
    len -= 12;
    k += 12;
  }
  if (len == 0) return c;
  /* the last 1..12 bytes, zero-padded */
  uint8_t t[12] = {0};
  memcpy(t, k, len);
  a += util_get_le32(t);
  b += util_get_le32(t + 4);
  c += util_get_le32(t + 8);
  FINAL(a, b, c);
  return c;
}

int h5_checksum_ok(const uint8_t *data, size_t len) {
  return h5_lookup3(data, len, 0) == (uint32_t)util_get_le(data + len, 4);
}

uint32_t h5_fletcher32(const void *data, size_t len) {
  const uint8_t *p = data;
  uint32_t sum1 = 0, sum2 = 0;
  size_t words = len / 2;
  while (words) {
    size_t t = words > 360 ? 360 : words; /* no overflow before folding */
    words -= t;
    do {
      sum1 += (uint32_t)p[0] << 8 | p[1];
      p += 2;
      sum2 += sum1;
    } while (--t);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (len % 2) {
    sum1 += (uint32_t)p[0] << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return sum2 << 16 | sum1;
}
