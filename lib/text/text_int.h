/*
** lib/text/text_int.h - the internal header of lib/text: what its files
** share and nothing outside it uses (but unit tests).  One section per
** file.  (The character classes, unicode.h, have a header of their own:
** lib/graph/resolve.c uses them too, and scripts/gen_unicode.py writes
** their tables.)
*/
#ifndef H5MEM_TEXT_TEXT_INT_H
#define H5MEM_TEXT_TEXT_INT_H

#include <stddef.h>

/* ---- interface to code in porter.c --------------------------------------- */

/* The Porter stemmer of FTS5's porter tokenizer: stems w[0..n) in place and
** returns the new length (never more than n).  Tokens shorter than 3 or
** longer than 64 bytes are left as they are. */
size_t text_porter_stem(char *w, size_t n);

#endif /* H5MEM_TEXT_TEXT_INT_H */
