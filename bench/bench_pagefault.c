/*
** bench/bench_pagefault.c - what memory new to a process costs on this
** machine: 64 MiB mapped and each 4 KiB page written once (a page fault
** each), then the same with transparent huge pages asked for (madvise).
** BENCHMARKS.md cites it for h5mem-mcp's first call (issue 23).
**
**   cc -O2 -o /tmp/bench_pagefault bench/bench_pagefault.c && /tmp/bench_pagefault
*/
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

static double us_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(void) {
  size_t n = (size_t)64 << 20, huge = (size_t)2 << 20;
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  char *q = mmap(NULL, n + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED || q == MAP_FAILED) return 1;
  double t0 = us_now();
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  double t1 = us_now();
  q = (char *)(((uintptr_t)q + huge - 1) & ~(uintptr_t)(huge - 1));
  madvise(q, n, MADV_HUGEPAGE);
  double t2 = us_now();
  for (size_t i = 0; i < n; i += 4096) q[i] = 1;
  double t3 = us_now();
  printf("4 KiB pages: %.2f us a page\n", (t1 - t0) / (double)(n / 4096));
  printf("huge pages asked for: %.2f us a 4 KiB page\n", (t3 - t2) / (double)(n / 4096));
  return 0;
}
