/*
** lib/util/pool.c - run a loop body on several threads (see pool.h).
**
** Threads are started per call and take indices from a shared atomic
** counter; results are kept per index, so the outcome is the same with 1
** or N threads.
*/
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pool.h"

typedef struct loop {
  util_loop_fn fn;
  void *ctx;
  size_t n;
  atomic_size_t next;
  atomic_size_t first_fail; /* lowest index that failed, or n */
  int *rc;                  /* per index, only where it failed */
} loop;

static void run(loop *l) {
  for (;;) {
    size_t i = atomic_fetch_add(&l->next, 1);
    if (i >= l->n) return;
    /* no point in starting work after a failure at a lower index */
    if (atomic_load(&l->first_fail) < i) continue;
    int rc = l->fn(l->ctx, i);
    if (rc) {
      l->rc[i] = rc;
      size_t cur = atomic_load(&l->first_fail);
      while (i < cur && !atomic_compare_exchange_weak(&l->first_fail, &cur, i)) {
      }
    }
  }
}

static void *thread_main(void *arg) {
  run(arg);
  return NULL;
}

int util_parallel_for(int threads, size_t n, util_loop_fn fn, void *ctx) {
  if (n == 0) return 0;
  loop l;
  l.fn = fn;
  l.ctx = ctx;
  l.n = n;
  atomic_init(&l.next, 0);
  atomic_init(&l.first_fail, n);
  l.rc = calloc(n, sizeof *l.rc);
  if (!l.rc) { /* run it here, in order */
    for (size_t i = 0; i < n; i++) {
      int rc = fn(ctx, i);
      if (rc) return rc;
    }
    return 0;
  }
  if (threads < 1) threads = 1;
  if ((size_t)threads > n) threads = (int)n;
  pthread_t *tid = threads > 1 ? calloc((size_t)threads - 1, sizeof *tid) : NULL;
  int started = 0;
  for (int t = 0; tid && t < threads - 1; t++) {
    if (pthread_create(&tid[t], NULL, thread_main, &l) != 0) break;
    started++;
  }
  run(&l);
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  free(tid);
  size_t ff = atomic_load(&l.first_fail);
  int rc = ff < n ? l.rc[ff] : 0;
  free(l.rc);
  return rc;
}

int util_ncpu(void) {
  /* (asked once: glibc reads /sys/devices/system/cpu/online at each
  ** sysconf, a file opened and read per search) */
  static int cached;
  int n = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (!n) {
    /* the CPUs this process may run on (taskset, a container's cpuset),
    ** else those online */
    cpu_set_t set;
    long c = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
    __atomic_store_n(&cached, n, __ATOMIC_RELAXED);
  }
  return n;
}

void util_advise_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  uintptr_t lo = ((uintptr_t)p + ((uintptr_t)2 << 20) - 1) & ~(((uintptr_t)2 << 20) - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(((uintptr_t)2 << 20) - 1);
  if (p && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}
