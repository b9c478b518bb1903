/*
** lib/store/store_graph.h - the knowledge graph's tables inside the store
** (entities, relations, mentions), inside lib/store only (store_graph.c;
** the layout is docs/FORMAT.md, "The knowledge graph").
**
** All three tables are held in memory whole: read from /graph when the
** store opens, changed by the store's transactions (store_log.c logs
** each change as an op of its frames; store.c keeps the undo list),
** appended to /graph at checkpoints like the memories (new rows, row
** numbers of rows deleted), rewritten by optimize.
*/
#ifndef H5MEM_STORE_GRAPH_H
#define H5MEM_STORE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "h5/h5.h"
#include "store.h"

typedef struct gstore gstore;

/* An empty graph whose version (store_g_version) starts past version: a
** store that loads its graph again (a refresh, optimize) passes the old
** one's + 1, so that versions never repeat and caches keyed on them stay
** true. */
int gstore_new(gstore **out, uint64_t version);
/* The version of g (0 for NULL). */
uint64_t gstore_version(const gstore *g);
void gstore_free(gstore *g);
/* Read /graph of f (none: empty tables).  STORE_ECORRUPT with a message. */
int gstore_load(gstore *g, h5_file *f, char *err, size_t errlen);

/* Changes without undo (the store pushes the undo entry): insert (the
** record's position is then gstore_npos - 1), delete (its position). */
int gstore_put(gstore *g, int t, const store_grec *r);
int gstore_delete(gstore *g, int t, int64_t id, uint64_t *pos);
/* Undo the last insert of t (insert) or the deletion at pos. */
void gstore_undo(gstore *g, int t, int insert, uint64_t pos);

/* The log: an op for the change (insert: the record at pos; delete: its
** id) through put; and replaying one op (op byte already read; its bytes
** at *p, advanced): STORE_ECORRUPT when cut short, STORE_EINVAL for a
** string store_g_put would refuse (not UTF-8, or a NUL byte). */
int gstore_encode(const gstore *g, int t, int insert, uint64_t pos,
                  int (*put)(void *ctx, const void *p, size_t n), void *ctx);
int gstore_is_op(uint8_t op);
int gstore_replay(gstore *g, uint8_t op, const uint8_t **p, const uint8_t *end);

/* Whether the tables changed since the file was written. */
int gstore_dirty(const gstore *g);
/* Append the changes to w's /graph (made when missing); gstore_rebase once
** the file is written: the appended records become file rows. */
int gstore_checkpoint(gstore *g, h5w *w, char *err, size_t errlen);
void gstore_rebase(gstore *g);
/* Write the live records alone into w (a new file: store_optimize). */
int gstore_write_live(gstore *g, h5w *w, char *err, size_t errlen);

/* store.c: the store's graph (NULL while no file is loaded). */
gstore *store_gstore(store *s);

#endif
