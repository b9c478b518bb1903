/*
** ext/ext.h - shared by the files of the SQLite binding (ext/, ext/vtab/).
**
** Every file here talks to SQLite only through the sqlite3_api routines
** handed to sqlite3_h5mem_init, so the extension works inside any host
** (the sqlite3 shell, Python, Node) whatever SQLite it links.
*/
#ifndef H5MEM_EXT_H
#define H5MEM_EXT_H

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

/* Flags missing from older sqlite3.h; older SQLite ignores unknown bits. */
#ifndef SQLITE_SUBTYPE
#define SQLITE_SUBTYPE 0x000100000
#endif
#ifndef SQLITE_INNOCUOUS
#define SQLITE_INNOCUOUS 0x000200000
#endif
#ifndef SQLITE_RESULT_SUBTYPE
#define SQLITE_RESULT_SUBTYPE 0x001000000
#endif

/* Value subtypes.  The vector ones but float16 are sqlite-vec's, JSON SQLite's,
** so vectors pass between the two extensions' functions. */
#define EXT_SUBTYPE_JSON 74  /* SQLite's JSON subtype ('J') */
#define EXT_SUBTYPE_F32 223  /* sqlite-vec: float32 vector */
#define EXT_SUBTYPE_BIT 224  /* sqlite-vec: bit vector */
#define EXT_SUBTYPE_INT8 225 /* sqlite-vec: int8 vector */
#define EXT_SUBTYPE_F16 230  /* h5mem: float16 vector */

/* The entry point.  SQLite derives the name it looks for from the file
** name keeping letters only, so `.load ./h5mem` calls sqlite3_hmem_init,
** an alias; sqlite3_h5mem_init is the name to pass explicitly. */
__attribute__((visibility("default"))) int
sqlite3_h5mem_init(sqlite3 *db, char **pzErrMsg,
                   const sqlite3_api_routines *pApi);
__attribute__((visibility("default"))) int
sqlite3_hmem_init(sqlite3 *db, char **pzErrMsg,
                  const sqlite3_api_routines *pApi);

/* Finish s and make it the function's result: text tagged as JSON.  Takes
** s; reports out-of-memory itself. */
void ext_result_json(sqlite3_context *ctx, sqlite3_str *s);


/* A text argument: 1 with its bytes in *s, *n; 0 when it is NULL (the
** function's result stays NULL); -1 out of memory (the error is set). */
int ext_arg_text(sqlite3_context *ctx, sqlite3_value *v, const char **s, size_t *n);

/* For the direct-only functions that touch files (docs/SQL.md, "Trust"):
** whether a statement running on the connection calls name itself.
** SQLite refuses direct-only functions in triggers, views and DEFAULTs,
** and from 3.50.0 in CHECK constraints; before that, a database file's
** CHECK could call them while you insert into its table.  There, the call
** must come from a running statement's own text; else the function's
** error is set ("unsafe use of name()") and 0 returned.  Always 1 from
** SQLite 3.50.0. */
int ext_direct_call(sqlite3_context *ctx, const char *name);

/* ---- registration: every SQL function and module, and where -----------
**
** sqlite3_h5mem_init (ext/h5mem.c) calls the functions taking only db, in
** one list.  Those taking a registry are the h5mem table's family, which
** share one registry of the connection's h5mem tables: ext_vtab_h5mem_register
** makes it and calls them.  Each returns an SQLite code; what it registered
** stays registered on failure (sqlite3_h5mem_init then fails). */

/* h5mem_version and h5mem_info (ext/h5mem.c). */
int ext_identity_register(sqlite3 *db);

/* The vector functions (ext/func_vec.c). */
int ext_vec_register(sqlite3 *db);

/* h5mem_tokenize and h5mem_embed_text (ext/func_text.c). */
int ext_text_register(sqlite3 *db);

/* h5mem_embed and h5mem_embedder_build (ext/func_embed.c). */
int ext_embed_register(sqlite3 *db);

/* h5_ls, h5_attrs and h5_read_json (ext/func_h5.c). */
int ext_h5_register(sqlite3 *db);

/* The h5 virtual table module (ext/vtab/vtab_h5.c). */
int ext_vtab_h5_register(sqlite3 *db);

/* The h5mem virtual table, h5mem_checkpoint() and h5mem_index()
** (ext/vtab/vtab_h5mem.c), then the rest of its family below, with one
** registry (ext/vtab/vtab_h5mem_shared.c). */
int ext_vtab_h5mem_register(sqlite3 *db);

/* h5mem_migrate(): SQLite memory stores into an h5mem store (ext/func_migrate.c). */
int ext_migrate_register(sqlite3 *db);

/* h5mem_gate and h5mem_decay: the lifecycle policies of lib/life
** (ext/func_life.c). */
int ext_life_register(sqlite3 *db);
/* The decay score's options (h5mem_decay's, h5mem_score's; NULL: none)
** into *o, and *now: the option, else the current time.  SQLITE_OK, or an
** SQLite code with the message in *err. */
struct life_score_opts;
int ext_life_score_opts(sqlite3_value *v, struct life_score_opts *o, sqlite3_int64 *now, char **err);
/* One option of the gate (h5mem_gate's options object: ctx a
** life_gate_opts *), as search_opts_parse's each (vtab/search.h). */
struct search_opt;
#define EXT_LIFE_GATE_KNOWN "trivial, min_chars, min_words, min_distinct_ratio, min_alnum_ratio"
int ext_life_gate_option(void *ctx, const char *key, const struct search_opt *v, char **err);

/* The h5mem table's family: each module or function takes a reference to
** reg that SQLite lets go (also on failure): h5mem_registry_module and
** h5mem_registry_function (ext/vtab/vtab_h5mem_shared.c). */
struct registry;
/* vec_search, bm25 and hybrid (ext/vtab/vtab_search.c). */
int ext_vtab_search_register(sqlite3 *db, struct registry *reg);
/* The companion tables' modules, h5mem_entities, h5mem_relations and
** h5mem_mentions (ext/vtab/vtab_graph.c). */
int ext_vtab_graph_register(sqlite3 *db, struct registry *reg);
/* The graph functions (ext/vtab/func_graph.c; it registers the JSONL
** import and export of func_graph_jsonl.c with graph_jsonl_register). */
int ext_func_graph_register(sqlite3 *db, struct registry *reg);

#endif /* H5MEM_EXT_H */
