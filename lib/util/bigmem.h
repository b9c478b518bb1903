/*
** lib/util/bigmem.h - large arrays on transparent huge pages.
**
** The HNSW walk reads a few hundred bytes at each of thousands of random
** places in arrays of tens to hundreds of MiB (the level-0 links, the int8
** copies of the rows).  On 4 KiB pages nearly every one of those reads also
** misses the TLB; on 2 MiB pages the arrays of a 100K-row store fit in the
** TLB.  Linux gives anonymous memory huge pages when it is asked to
** (MADV_HUGEPAGE) even where the system default (transparent_hugepage
** "madvise") gives none to plain malloc.
**
** big_alloc returns zeroed memory, 64-byte aligned, for n bytes: below
** BIG_MIN from calloc, otherwise a private anonymous mapping aligned to
** 2 MiB and advised MADV_HUGEPAGE (an advice: where the kernel has no huge
** page to give, the memory is ordinary).  big_free and big_realloc need the
** size the block was allocated with, since that decides where it came from.
** big_realloc keeps the first min(old, n) bytes and zeroes the rest.
*/
#ifndef H5MEM_UTIL_BIGMEM_H
#define H5MEM_UTIL_BIGMEM_H

#include <stddef.h>

#define BIG_MIN ((size_t)1 << 21)

void *big_alloc(size_t n);
void *big_realloc(void *p, size_t old, size_t n);
void big_free(void *p, size_t n);

#endif
