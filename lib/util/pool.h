/*
** lib/util/pool.h - run a loop body on several threads (and the CPUs and
** the memory advice such loops want).
**
** util_parallel_for(threads, n, fn, ctx) calls fn(ctx, i) for every i in
** [0, n), spread over up to `threads` threads (the caller's among them),
** and returns when all are done.  Which thread runs which i is not fixed,
** so fn must write only to places that belong to its i: results then do
** not depend on the number of threads.  Returns the first nonzero value fn
** returned (in index order), or 0.
*/
#ifndef H5MEM_UTIL_POOL_H
#define H5MEM_UTIL_POOL_H

#include <stddef.h>

typedef int (*util_loop_fn)(void *ctx, size_t i);

int util_parallel_for(int threads, size_t n, util_loop_fn fn, void *ctx);

/* The number of CPUs this process may run on (at least 1). */
int util_ncpu(void);

/* Advise the kernel to back the 2 MiB pages wholly inside [p, p + n) with
** huge pages (large arrays filled at once, or read at random: one page
** fault and one TLB entry per 2 MiB).  Advice only: ignored where not
** supported. */
void util_advise_huge(void *p, size_t n);

#endif
