/*
** lib/util/bigmem.c - large arrays on transparent huge pages (bigmem.h).
*/
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "bigmem.h"

#define HUGE_PAGE ((size_t)1 << 21)

/* bytes a mapping of n takes: whole huge pages */
static size_t map_len(size_t n) { return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); }

void *big_alloc(size_t n) {
  if (n < BIG_MIN) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 1)) return NULL;
    memset(p, 0, n);
    return p;
  }
  size_t len = map_len(n);
  if (len < n || len + HUGE_PAGE < len) return NULL;
  /* map a huge page more than needed and trim both ends to 2 MiB */
  uint8_t *m = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  if (m == MAP_FAILED) return NULL;
  uintptr_t a = ((uintptr_t)m + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uint8_t *p = (uint8_t *)a;
  if (p > m) munmap(m, (size_t)(p - m));
  size_t tail = (size_t)(m + len + HUGE_PAGE - (p + len));
  if (tail) munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
  madvise(p, len, MADV_HUGEPAGE);
#endif
  return p;
}

void big_free(void *p, size_t n) {
  if (!p) return;
  if (n < BIG_MIN)
    free(p);
  else
    munmap(p, map_len(n));
}

void *big_realloc(void *p, size_t old, size_t n) {
  if (!p) return big_alloc(n);
  if (old >= BIG_MIN && n >= BIG_MIN && map_len(old) == map_len(n)) {
    if (n < old) memset((uint8_t *)p + n, 0, old - n);
    return p;
  }
  void *q = big_alloc(n);
  if (!q) return NULL;
  memcpy(q, p, old < n ? old : n);
  big_free(p, old);
  return q;
}
