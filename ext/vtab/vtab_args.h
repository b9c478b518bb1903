/*
** ext/vtab/vtab_args.h - CREATE VIRTUAL TABLE arguments, and a helper of
** xConnect (vtab_args.c).
*/
#ifndef H5MEM_EXT_VTAB_ARGS_H
#define H5MEM_EXT_VTAB_ARGS_H

#include <stddef.h>

#include "ext.h"

/* s without surrounding blanks and quotes ('..', "..", `..` or [..]; a
** doubled quote inside stands for one), sqlite3_malloc'd (NULL: no memory). */
char *ext_unquote(const char *s);

/* One argument: key=value gives the key (trimmed, not NUL-terminated:
** *key, *klen) and the unquoted value; a bare value (no '=' before any
** quote) gives *klen 0.  *value is sqlite3_malloc'd. */
int ext_vtab_arg(const char *arg, const char **key, size_t *klen, char **value);

/* Whether key[0..klen) is name, ignoring case. */
int ext_key_is(const char *key, size_t klen, const char *name);

/* Each option once: whether key (one of names, NULL-ended, aliases of one
** option joined by '|', as "path|file") is marked in *seen already (bit i
** for names[i]); marks it.  A key not in names: 0. */
int ext_key_repeated(const char *key, size_t klen, const char *const *names, unsigned *seen);

/* For a table-valued function's xConnect: declare schema and allocate
** the table object, size bytes (a struct starting with its sqlite3_vtab),
** zeroed, into *out; on failure, why in *pzErr (who: the module). */
int ext_vtab_declare_new(sqlite3 *db, const char *schema, size_t size, sqlite3_vtab **out,
                         const char *who, char **pzErr);

#endif
