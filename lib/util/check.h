/*
** lib/util/check.h - assertions of the invariants the code's comments state
** ("no growth", "cannot fail", "n <= M0").
**
** UTIL_ASSERT(c): in a debug build (H5MEM_DEBUG: configure --enable-debug,
** and --enable-sanitizers turns it on) a false c prints the condition and
** where it failed to stderr and aborts; in other builds c is not evaluated
** at all, so c must have no side effects: take a result first, then assert
** on it.
*/
#ifndef H5MEM_UTIL_CHECK_H
#define H5MEM_UTIL_CHECK_H

#ifdef H5MEM_DEBUG
#include <stdio.h>
#include <stdlib.h>
#define UTIL_ASSERT(c)                                                                     \
  ((c) ? (void)0                                                                           \
       : (fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #c), abort()))
#else
#define UTIL_ASSERT(c) ((void)sizeof(!(c)))
#endif

#endif /* H5MEM_UTIL_CHECK_H */
