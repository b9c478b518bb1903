/*
** ext/vtab/vtab_args.h - CREATE VIRTUAL TABLE arguments, and helpers of
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

/* The table object of a table-valued function over the stores (vec_search,
** bm25, hybrid, kg_bfs, kg_activate, kg_resolve): the connection, the
** module's aux (the stores' registry) and which of the module's functions
** it is (kind: the module's own description of it). */
typedef struct ext_tvf {
  sqlite3_vtab base;
  sqlite3 *db;
  void *aux;
  const void *kind;
} ext_tvf;

/* xConnect of such a function: schema declared (who: the function's name,
** for errors), the object allocated into *out, db, aux and kind recorded,
** and SQLITE_VTAB_DIRECTONLY: it reads a store's files, so never from a
** trigger or view (docs/SQL.md, "Trust"). */
int ext_tvf_connect(sqlite3 *db, void *aux, const void *kind, const char *schema, const char *who,
                    sqlite3_vtab **out, char **pzErr);
/* xDisconnect of such a function. */
int ext_tvf_disconnect(sqlite3_vtab *vt);

/* Define fn, the xConnect of the function k describes (a pointer to a
** struct with its schema and name). */
#define EXT_TVF_CONNECT(fn, k)                                                                    \
  static int fn(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,    \
                char **pzErr) {                                                                   \
    (void)argc;                                                                                   \
    (void)argv;                                                                                   \
    return ext_tvf_connect(db, aux, (k), (k)->schema, (k)->name, out, pzErr);                     \
  }

#endif
