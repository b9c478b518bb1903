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
#include "util/json.h"

/* An option's value, as search_opts_parse gives it to each: its type
** (UTIL_JSON_*, util/json.h; util_json_type_name names it as json_each
** does), its JSON text json[0..len) (the whole object or array for those),
** and decoded: text for a string (NUL-terminated; a \u0000 ends it, as in
** json_each), NULL otherwise; num a number's value; inum an integer's
** (clamped to int64, as SQLite gives it). */
typedef struct search_opt {
  int type;
  const char *json;
  size_t len;
  const char *text;
  double num;
  sqlite3_int64 inum;
} search_opt;

/* Options as a JSON object (NULL: none): each(ctx, key, v, err) for each
** key (decoded), in order; each returns SQLITE_OK, SEARCH_UNKNOWN for an
** unknown key, SQLITE_NOMEM, or SQLITE_ERROR for a bad value (a reason in
** *err, sqlite3_mprintf'd, optional; say the allowed values).  known lists
** the keys for the error message.  A key given twice is an error (JSON
** leaves it open which one counts).  Read by lib/util/json.c's strict
** reader, without SQL: JSON SQLite would take but RFC 8259 does not (a lone
** surrogate, invalid UTF-8, nesting deeper than 1000) is malformed. */
#define SEARCH_UNKNOWN (-1) /* not SQLITE_ERROR's 1: a bad value is not an unknown key */
int search_opts_parse(sqlite3_value *v, const char *known,
                      int (*each)(void *ctx, const char *key, const search_opt *v, char **err),
                      void *ctx, char **err);
/* The same for an option's value that is itself an object (type
** UTIL_JSON_OBJECT; else SQLITE_ERROR, "expected a JSON object"). */
int search_opts_object(const search_opt *v, const char *known,
                       int (*each)(void *ctx, const char *key, const search_opt *v, char **err),
                       void *ctx, char **err);
/* Whether the options object v has key (malformed options: 0, the run
** that parses them says why). */
int search_opts_has(sqlite3_value *v, const char *key);
/* An option's value that must be a number in lo .. hi, into *out; else
** SQLITE_ERROR with a reason in *err. */
int search_opts_num(const search_opt *v, double lo, double hi, double *out, char **err);

/* Whether an embedding can be scored under metric (STORE_*): 0, or 1 with
** the reason in buf ("its squared norm ..."). */
int search_knn_vec_range(int metric, const float *v, int dim, char *buf, size_t n);

#endif
