/*
** test/fuzz/fuzz.h - what the libFuzzer targets of test/fuzz share.
**
** Every target defines LLVMFuzzerTestOneInput and LLVMFuzzerInitialize.
** Initialize sets the target up and, when H5MEM_FUZZ_SEEDS names a
** directory, writes valid inputs (images, logs, frames made by the code
** under test) there as seeds.  The same target is linked with libFuzzer by
** run.sh (clang, ASan + UBSan) and with replay.c by `make check`, which
** runs it over those seeds and the regressions in regress/<target>/.
*/
#ifndef H5MEM_FUZZ_H
#define H5MEM_FUZZ_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/le.h" /* the formats under test store little-endian integers */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant a valid input must keep (a saved image that loads again,
** ...): its failure is a finding like a crash. */
#define FUZZ_ASSERT(c)                                                                \
  do {                                                                                \
    if (!(c)) {                                                                       \
      fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #c);  \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* The seed directory (NULL: none asked for). */
static inline const char *fuzz_seed_dir(void) {
  const char *d = getenv("H5MEM_FUZZ_SEEDS");
  return d && *d ? d : NULL;
}

/* Where a target that works with files makes its directory:
** H5MEM_FUZZ_TMP (run.sh's, removed when it ends: a target stopped by the
** fuzzer does not clean up), else /dev/shm when writable (writers fsync),
** else TMPDIR or /tmp. */
static inline const char *fuzz_tmp_base(void) {
  const char *d = getenv("H5MEM_FUZZ_TMP"), *t = getenv("TMPDIR");
  if (d && *d) return d;
  if (access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return t && *t ? t : "/tmp";
}

/* Write one seed, dir/name. */
static inline void fuzz_seed(const char *dir, const char *name, const void *p, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
    fprintf(stderr, "cannot write the seed %s: %s\n", path, strerror(errno));
    exit(1);
  }
}

/* Seed number i, dir/seed-i: an image the target made (malloc'd: freed
** here). */
static inline void fuzz_seed_image(const char *dir, size_t i, uint8_t *img, size_t len) {
  char name[32];
  snprintf(name, sizeof name, "seed-%zu", i);
  fuzz_seed(dir, name, img, len);
  free(img);
}

/* A little-endian reader over the input, for targets that take their
** settings from its first bytes: zero once it runs out. */
typedef struct fuzz_in {
  const uint8_t *p;
  size_t n;
} fuzz_in;

static inline uint32_t fuzz_u8(fuzz_in *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static inline uint32_t fuzz_u16(fuzz_in *in) {
  uint32_t lo = fuzz_u8(in);
  return lo | fuzz_u8(in) << 8;
}

/* A small deterministic value for row i, element j (the vectors the ANN
** targets index). */
static inline float fuzz_val(uint32_t i, uint32_t j) {
  uint32_t x = i * 2654435761u ^ (j + 1) * 2246822519u;
  x ^= x >> 15;
  x *= 2654435761u;
  x ^= x >> 13;
  return (float)(int)(x % 2001u) / 1000.0f - 1.0f;
}

#endif
