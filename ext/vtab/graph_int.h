/*
** ext/vtab/graph_int.h - what the knowledge graph's tables (vtab_graph.c)
** and functions (func_graph.c) share.
*/
#ifndef H5MEM_EXT_GRAPH_INT_H
#define H5MEM_EXT_GRAPH_INT_H

#include <stddef.h>

/* Call each(ctx, str, len) for each string of the JSON array s[0..n), in
** order, decoded to UTF-8 (escapes resolved; str is valid during the call
** only).  Returns 0; -1 with a message in err when s is not a JSON array of
** strings ("malformed JSON: ...", "not a JSON array", "element 2 is not a
** string"); -2 when out of memory; or each's nonzero return. */
int graph_json_strings(const char *s, size_t n, int (*each)(void *ctx, const char *str, size_t len),
                       void *ctx, char *err, size_t errlen);

#endif
