/*
** ext/vtab/h5vt_int.h - what the h5 virtual table's files share: the
** table (vtab_h5.c), its options and schema= (vtab_h5_schema.c) and the
** conversion of SQL values into HDF5 elements (vtab_h5_value.c).
*/
#ifndef H5MEM_EXT_H5VT_INT_H
#define H5MEM_EXT_H5VT_INT_H

#include <stdint.h>

#include "../h5sql.h"

/* The prefix of the table's messages. */
#define WHO "h5"

/* ---- interface to code in vtab_h5.c ------------------------------------ */

/* Whether t is an integer or floating-point type. */
int h5vt_is_numeric(const h5_type *t);

/* Take the writer's lock on path: an fd holding flock(LOCK_EX), or -1 and
** SQLITE_BUSY when another connection or process holds it. */
int h5vt_lock_file(const char *path, int *fd, char **msg);

/* ---- interface to code in vtab_h5_schema.c ----------------------------- */

/* The options of CREATE VIRTUAL TABLE ... USING h5(...). */
typedef struct h5opts {
  char *file, *dset, *schema, *row, *mode, *compression, *sync;
  int64_t chunk;
  int shuffle;
} h5opts;

void h5vt_opts_free(h5opts *o);

/* Parse the module arguments argv[3..argc) into o (free it with
** h5vt_opts_free, on failure too); an error names the option. */
int h5vt_parse_opts(int argc, const char *const *argv, h5opts *o, char **pzErr);

/* Parse 'name type, ...' into a compound type (or, for one field called
** value, that field's type) for a dataset with shape (0[, N]). */
int h5vt_parse_schema(const char *s, h5_type **out, int *rank, uint64_t *ncols, char **pzErr);

/* A compact description of a type for messages ('<f4', compound JSON). */
char *h5vt_type_text(const h5_type *t);

/* Whether a (from a schema) and b (in the file) hold the same values. */
int h5vt_same_type(const h5_type *a, const h5_type *b);

/* Create the dataset of a schema in a new file or an existing one. */
int h5vt_create_dataset(const h5opts *o, char **pzErr);

/* ---- interface to code in vtab_h5_value.c ------------------------------ */

typedef struct h5vt h5vt; /* the table (vtab_h5.c) */

/* Whether this module can write elements of type t. */
int h5vt_writable(const h5_type *t);

/* n numbers (a float32 BLOB or a JSON array) into elements of type t at p.
** 0; -1 with the message in *msg; or SQLITE_NOMEM. */
int h5vt_put_array(const h5_type *t, uint8_t *p, uint64_t n, sqlite3_value *v, char **msg);

/* One SQL value into one element of type t at p (zeroed before).  0; -1
** with the message in *msg; or SQLITE_NOMEM. */
int h5vt_put_value(h5vt *vt, const h5_type *t, uint8_t *p, sqlite3_value *v, char **msg);

/* Free the strings (variable-length, malloc'd) of the element of type t at
** p, and zero their pointers. */
void h5vt_free_strings(const h5_type *t, uint8_t *p);

#endif
