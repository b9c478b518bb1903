/*
** ext/vtab/h5mem_int.h - what the h5mem table (vtab_h5mem.c) shares with
** the search functions (vtab_search.c): finding a table by name.
*/
#ifndef H5MEM_EXT_H5MEM_INT_H
#define H5MEM_EXT_H5MEM_INT_H

#include "ext.h"
#include "store/store.h"

typedef struct registry registry; /* the h5mem tables of one connection */
typedef struct memvt memvt;       /* one h5mem table */

/* The h5mem table called name ("table" or "schema.table") on this
** connection, connecting it first if this connection has not used it yet;
** NULL with *pzErr (sqlite3_mprintf'd) if there is none. */
memvt *h5mem_table(registry *reg, sqlite3 *db, const char *name, char **pzErr);
store *h5mem_table_store(memvt *vt);
const char *h5mem_table_name(const memvt *vt);
/* A reader holding positions of the table's store (+1 when it starts, -1
** when done): no checkpoint moves rows meanwhile. */
void h5mem_table_hold(memvt *vt, int delta);

/* A store's string (NULL: SQL NULL) as a result. */
static inline void h5mem_result_text(sqlite3_context *ctx, const char *s, size_t n) {
  if (!s) sqlite3_result_null(ctx);
  else sqlite3_result_text64(ctx, s, n, SQLITE_TRANSIENT, SQLITE_UTF8);
}

/* Register vec_search (vtab_search.c); reg_unref is called when SQLite
** lets go of reg (also on failure). */
int ext_vtab_search_register(sqlite3 *db, registry *reg, void (*reg_unref)(void *));

#endif
