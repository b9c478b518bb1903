/*
** lib/store/store_text.h - the store's text index for bm25, inside
** lib/store only (store_text.c; the layout is docs/FORMAT.md, "The text
** index").
**
** A saved image (lib/text/bm25) covers the base rows [0, rows) as of its
** save; the rows past it (base rows checkpointed since, and the records in
** memory) are tokenized into a segment in memory when a search first needs
** them, and again only for what was added since.  A checkpoint saves a new
** image once those rows are enough of the store (the vector index's rule);
** optimize saves one at once.  Rows deleted after a save stay in the image
** and are skipped when searching.
*/
#ifndef H5MEM_STORE_TEXT_H
#define H5MEM_STORE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "h5/h5.h"
#include "store.h"
#include "text/tokenize.h"

typedef struct tindex tindex;

/* The tokenizer settings from the root attribute "tokenize" (absent: the
** default, the format of stores made before the text index): STORE_OK, or
** STORE_ECORRUPT with a message in err when it is present but not
** understood. */
int tindex_cfg_read(h5_file *f, h5_obj *root, text_tok_opts *o, char *err, size_t errlen);
int tindex_cfg_write(h5w *w, h5w_obj *root, const text_tok_opts *o);

/* The text index of the mapped file f (nbase base rows).  A missing or
** damaged image is not an error: the rows are then tokenized in memory and
** the next checkpoint saves an image.  Fails only when out of memory. */
int tindex_load(store *s, h5_file *f, const text_tok_opts *o, uint64_t nbase, tindex **out);
void tindex_free(tindex *x);

int tindex_wants_save(const tindex *x, uint64_t nbase);
/* Append an image of the base rows [0, nbase) to w's /index datasets. */
int tindex_save(tindex *x, h5w *w, uint64_t nbase, char *err, size_t errlen);

/* The index's state for store_text_index (reads the image's header). */
int tindex_info(tindex *x, store_text_info *info);

/* store.c, store_read.c: the text index, and what the text index needs of
** the store. */
tindex *store_tindex(store *s);
/* The text of position pos, dead or alive (NULL: none). */
int store_text_at(store *s, uint64_t pos, const char **text, size_t *len);
/* Counters that change when records are added or deleted (changes), and
** when a position is taken back (an insert undone: reused). */
uint64_t store_changes(const store *s);
uint64_t store_reuses(const store *s);


#endif
