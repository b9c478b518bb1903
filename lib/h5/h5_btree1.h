/*
** lib/h5/h5_btree1.h - version 1 B-trees (internal).
*/
#ifndef H5MEM_H5_BTREE1_H
#define H5MEM_H5_BTREE1_H

#include "h5_int.h"

/* Called for each child of a leaf, in key order: the keys on its left and
** right (keylen bytes each, in the file) and its address.  Return 0 to go on;
** anything else stops the walk and is returned. */
typedef int (*h5_bt1_cb)(void *ctx, const uint8_t *left, const uint8_t *right,
                         uint64_t child);

/* Asked, when not NULL, for each child (of any level) before it is visited,
** with the keys around it: nonzero skips the child and everything below it.
** Keys bound a child's contents: each key is <= everything on its right. */
typedef int (*h5_bt1_skip)(void *ctx, const uint8_t *left, const uint8_t *right);

/* Walk the v1 B-tree of the given node type (0 groups, 1 chunks) rooted at
** addr; keylen is the size of one key (groups: sizeof lengths; chunks:
** 8 + 8 * (rank + 1)). */
int h5_bt1_iter(h5_file *f, uint64_t addr, int type, size_t keylen,
                h5_bt1_skip skip, h5_bt1_cb cb, void *ctx);

#endif
