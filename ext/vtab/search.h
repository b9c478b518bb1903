/*
** ext/vtab/search.h - what the rest of the binding uses of the search
** code (the graph functions, h5mem_migrate, the h5mem table): the reader
** of options objects (search_opts.c) and the range check of an embedding
** (vtab_search.c).  The search itself is vtab_int.h's, for this folder.
*/
#ifndef H5MEM_EXT_SEARCH_H
#define H5MEM_EXT_SEARCH_H

#include <stddef.h>

#include "ext.h"

/* Options as a JSON object (NULL: none): each(ctx, key, row, err) for
** each key, row being json_each's (key, type, value, atom); each returns
** SQLITE_OK, SEARCH_UNKNOWN for an unknown key, or SQLITE_ERROR for a bad
** value (a reason in *err, sqlite3_mprintf'd, optional; say the allowed
** values).  known lists the keys for the error message.  A key given twice
** is an error (JSON leaves it open which one counts). */
#define SEARCH_UNKNOWN (-1) /* not SQLITE_ERROR's 1: a bad value is not an unknown key */
int search_opts_parse(sqlite3 *db, sqlite3_value *v, const char *known,
                      int (*each)(void *ctx, const char *key, sqlite3_stmt *row, char **err),
                      void *ctx, char **err);
/* An option's value (a json_each row, as each gets it) that must be a
** number in lo .. hi, into *out; else SQLITE_ERROR with a reason in *err. */
int search_opts_num(sqlite3_stmt *row, double lo, double hi, double *out, char **err);

/* Whether an embedding can be scored under metric (STORE_*): 0, or 1 with
** the reason in buf ("its squared norm ..."). */
int search_knn_vec_range(int metric, const float *v, int dim, char *buf, size_t n);

#endif
