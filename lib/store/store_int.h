/*
** lib/store/store_int.h - helpers shared by the files of lib/store only:
** root attributes, and derived indexes saved inside a store's file as byte
** images (docs/FORMAT.md, "The vector index" and "The text index").
**
** /index/<kind>_image is a uint8 dataset of images one after another, each
** padded to whole chunks of STORE_IMG_CHUNK bytes; /index/<kind>_saves has
** one row of four int64 per save: the image's offset and length in the
** image dataset, then two numbers of the index's own (the base rows it
** covers, ...).  The last row is the current image.  An image is appended
** in one go, so its chunks normally lie one after another in the file and
** it is read in place from the mapped file; otherwise it is copied.
*/
#ifndef H5MEM_STORE_INT_H
#define H5MEM_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "h5/h5.h"
#include "store.h"
#include "store_idmap.h"

#define STORE_IMG_CHUNK 65536u

typedef struct simage {
  const void *p; /* the image: in the mapped file, or copy */
  size_t len;
  void *copy;    /* malloc'd when the chunks were scattered; the caller frees it */
  int64_t row[4]; /* the save's row: offset, length, and the index's two numbers */
} simage;

/* The last image of kind (e.g. "hnsw", "text") in f: STORE_OK, or
** STORE_ENOMEM, or STORE_ENOTFOUND with *why saying what is missing or
** wrong (no image saved yet, a damaged saves dataset, ...). */
int simage_load(h5_file *f, const char *kind, simage *img, const char **why);
/* Append img (len bytes) as a new image of kind with the numbers a and b
** in its row (the datasets made when missing).  STORE_OK or STORE_EIO /
** STORE_ENOMEM with a message in err. */
int simage_append(h5w *w, const char *kind, const uint8_t *img, size_t len, int64_t a, int64_t b,
                  char *err, size_t errlen);

/* Attribute name of o, a scalar: 1 and the value in *v (an integer) or in
** buf (a string, NUL-terminated, shorter than n bytes); 0 when o has no
** such attribute; -1 when it has one of another kind or too long. */
int store_attr_int(h5_obj *o, const char *name, int64_t *v);
int store_attr_str(h5_file *f, h5_obj *o, const char *name, char *buf, size_t n);

/* store.c: set the store's error message (store_errmsg); returns code. */
int store_set_error(store *s, int code, const char *msg);

#endif
