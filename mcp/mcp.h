/*
** mcp/mcp.h - h5mem-mcp, an MCP server (JSON-RPC 2.0 over stdio) on one
** h5mem store (issue 23): what its files share.
**
**   h5mem_mcp.c   the program: options, the store, the JSON-RPC loop
**                 (initialize, ping, tools/list, tools/call)
**   mcp_graph.c   the reference memory server's tools on the store's
**                 knowledge graph
**   tools_ref.c   those tools' definitions, as the reference lists them
**   mcp_memory.c  h5mem-mcp's memory tools: remember, recall, forget,
**                 memory_stats
**   mcp_json.c    reading arguments, writing results (JSON.stringify's
**                 2-space form for text content)
*/
#ifndef H5MEM_MCP_H
#define H5MEM_MCP_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "util/strbuf.h"

#define MCP_REF_NTOOLS 9
extern const char *const mcp_ref_tools[MCP_REF_NTOOLS];

typedef struct graph graph; /* the graph as the reference sees it (mcp_kept.h) */

/* The server's state. */
typedef struct mcp {
  sqlite3 *db;
  const char *table;    /* the h5mem table (its graph: <table>_entities, ...) */
  const char *store;    /* its file */
  const char *embedder; /* the embedder named (NULL: the store's) */
  const char *import;   /* a JSONL graph for a new store */
  int import_given;     /* (by --import: a missing file is an error) */
  graph *graph;         /* the graph, kept between calls (NULL: read it) */
  struct mcp_loader *loader; /* the thread that reads it (mcp_kept.c) */
  struct mcp_image *image; /* the search image, while the store is as it was made from
                              (mcp_image.h; NULL: none, or the store changed) */
  void *image_map;         /* (its file, mapped) */
  size_t image_len;
  int verbose;
  int subscribed; /* to memory://knowledge-graph: its changes are notified */
} mcp;

/* A tool call's outcome: result (compact JSON, the structured content),
** or an error message (a tool result with isError).  text: the text
** content when it is not the result pretty-printed (a fixed message). */
typedef struct mcp_out {
  strbuf result;
  strbuf text;
  int inner;   /* the text is the result's one member's value pretty-printed (the
                  reference's create_* and add_observations answer with the array) */
  char *error; /* malloc'd */
  int changed; /* a tool that writes ran and committed (the graph resource changed) */
} mcp_out;

void mcp_out_error(mcp_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run tool name with arguments args (a JSON object, args[0..n)); 0 when
** the tool is one of the reference's (o filled), -1 when no tool has
** that name. */
int mcp_graph_call(mcp *m, const char *name, const char *args, size_t n, mcp_out *o);
/* The whole graph as read_graph's result into o->result (the
** knowledge-graph resource): 0, or -1 with o->error. */
int mcp_graph_json(mcp *m, mcp_out *o);
/* The kept graph dropped (its reading thread stopped first): the next
** graph tool reads it again. */
void mcp_graph_forget(mcp *m);
/* The search image (<store>-mcp): looked for when the store opens (before
** the graph's reading thread starts), dropped when the store changes,
** written (when there was none, or the store changed) as the server ends
** (mcp_graph.c). */
void mcp_image_find(mcp *m);
void mcp_image_drop(mcp *m);
void mcp_image_save(mcp *m);
/* Start reading the graph in a thread of its own (when the store opens,
** and after a call that writes); nothing when it is kept or being read. */
void mcp_graph_start(mcp *m);
/* Wait until that thread is off the SQLite connection (before any other
** use of it). */
void mcp_graph_quiet(mcp *m);

/* The same for h5mem-mcp's own memory tools (mcp_memory.c). */
#define MCP_MEM_NTOOLS 4
extern const char *const mcp_memory_tools[MCP_MEM_NTOOLS];
int mcp_memory_call(mcp *m, const char *name, const char *args, size_t n, mcp_out *o);

/* SQL on the store's tables (mcp_graph.c): in sql, {T}, {E}, {R}, {M} name
** the table and its entities, relations and mentions tables (quoted), {N}
** is the table's name as a string literal.  An SQLite code; a message in
** o on failure.  mcp_run binds its arguments by kinds ("s" text, "i"
** int64) and gives the last insert rowid. */
int mcp_prepare(mcp *m, sqlite3_stmt **st, mcp_out *o, const char *sql);
int mcp_exec(mcp *m, mcp_out *o, const char *sql);
int mcp_run(mcp *m, mcp_out *o, int64_t *rowid, const char *kinds, const char *sql, ...);

/* ---- JSON (mcp_json.c) ---------------------------------------------------- */

/* The value of member key of the object s[0..n): its span, or -1. */
int mcp_member(const char *s, size_t n, const char *key, size_t *v0, size_t *v1);
/* s[v0..v1) as a malloc'd string when it is a JSON string, else NULL
** (*is 0; 1 with NULL: out of memory): in the store's form (a lone
** surrogate or U+0000 becomes U+FFFD), or with mcp_jstr, the JavaScript
** string exactly (JS-UTF-8, util/jsstr.h: the graph tools compare names
** and texts as the reference does). */
char *mcp_str(const char *s, size_t v0, size_t v1, int *is);
char *mcp_jstr(const char *s, size_t v0, size_t v1, int *is);
/* The reference's validation message: "MCP error -32602: Input validation
** error: Invalid arguments for tool TOOL: Invalid input: expected WANT at
** PATH.KEY" (PATH NULL: at KEY). */
void mcp_bad_arg(mcp_out *o, const char *tool, const char *path, const char *key, const char *want);
/* The strings of the array member key of the object at s[v0..v1) (path:
** where that object is, for the messages), malloc'd (an empty array: a
** non-NULL one with *count 0).  NULL with the validation message, or, when
** optional and the member is absent, NULL without one. */
char **mcp_strs(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                int optional, size_t *count, mcp_out *o);
char **mcp_jstrs(const char *tool, const char *s, size_t v0, size_t v1, const char *key, const char *path,
                 int optional, size_t *count, mcp_out *o); /* (strings as mcp_jstr) */
void mcp_strs_free(char **v, size_t n);
/* The compact JSON c[0..n) as JSON.stringify(value, null, 2) writes it. */
void mcp_pretty(const char *c, size_t n, strbuf *out);

#endif /* H5MEM_MCP_H */
