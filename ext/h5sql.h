/*
** ext/h5sql.h - what the SQL side of HDF5 shares (ext/func_h5.c,
** ext/vtab/vtab_h5.c): opening files, describing types, shapes and filters
** as text, and HDF5 elements as SQL values.
*/
#ifndef H5MEM_EXT_H5SQL_H
#define H5MEM_EXT_H5SQL_H

#include <sys/stat.h>

#include "ext.h"
#include "h5/h5.h"
#include "util/strbuf.h"

/* Open path read-only.  On failure returns lib/h5's code as SQLite's
** (ext_err_rc: SQLITE_CORRUPT for a damaged file, else SQLITE_ERROR;
** SQLITE_NOMEM) with *pzErr a sqlite3_mprintf'd message "who: cannot open
** 'path': why". */
int h5sql_open(const char *who, const char *path, h5_file **f, char **pzErr);

/* The datatype as h5_ls shows it: numpy's dtype.str ('<f4', '>i2', '|S10',
** '|b1'), 'vlen-utf8' / 'vlen-ascii' for variable-length strings,
** 'vlen-' + base for other sequences, 'ref-object' / 'ref-region' for
** references, JSON for compounds and array types (numpy's descr).  -1 when
** there is no mapping (nothing appended). */
int h5sql_dtype(const h5_type *t, strbuf *out);

/* dims as a JSON array, '[10,3]'; UINT64_MAX entries as null when
** unlimited_null. */
void h5sql_dims_json(strbuf *o, int rank, const uint64_t *dims, int unlimited_null);

/* The filter pipeline as JSON: [{"id":1,"name":"deflate","cd":[6]}, ...]. */
void h5sql_filters_json(strbuf *o, const h5_dset_info *info);

/* Make one element (of type t at p) the result (an error reading the file:
** "who: message" with its code, ext_err_rc): integers (enum and bool
** values too) as INTEGER (unsigned beyond 2^63 as REAL), floats as REAL,
** strings as TEXT (BLOB when not UTF-8; a NULL variable-length string as
** NULL), opaque data as BLOB, references as NULL, and compounds, arrays and
** sequences as JSON text. */
void h5sql_result_elem(sqlite3_context *ctx, const char *who, h5_file *f, const h5_type *t,
                       const uint8_t *p);

/* Values of rank >= 1 (or a scalar: as h5sql_result_elem) as JSON text. */
void h5sql_result_values(sqlite3_context *ctx, const char *who, h5_file *f, const h5_type *t,
                         const uint8_t *data, int rank, const uint64_t *dims);

/* An error "who: message" as ctx's result, with the SQLite code of lib/'s
** code (ext_err_rc: SQLITE_CORRUPT for a damaged file; UTIL_EINVAL for a
** bad argument, SQLITE_ERROR). */
void h5sql_error(sqlite3_context *ctx, int code, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The SQL result for strbuf s holding JSON text (takes s's buffer); a
** limit overrun is SQLITE_TOOBIG. */
void h5sql_result_json(sqlite3_context *ctx, strbuf *s);

/* Whether two stats are of the same file, unchanged (device, inode, size,
** modification time to the nanosecond). */
int h5sql_same_file(const struct stat *a, const struct stat *b);

/* Whether this SQLite can keep file-touching functions and tables out of
** triggers and views (SQLITE_DIRECTONLY, 3.31); without it they are not
** registered. */
int h5sql_directonly_ok(void);

#endif
