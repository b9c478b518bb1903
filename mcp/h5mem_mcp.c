/*
** mcp/h5mem_mcp.c - h5mem-mcp: an MCP server on one h5mem store (issue 23).
**
**   h5mem-mcp --store PATH [--dim N] [--embedder SPEC [--embedder-model M]
**             [--embedder-key-env VAR]] [--index KIND] [--table NAME] [--verbose]
**
** MCP over stdio: one JSON-RPC 2.0 message a line in, one a line out
** (newline-delimited, as the MCP stdio transport frames them); requests
** logged to stderr only with --verbose, never to stdout.  The store is
** opened once, as the h5mem table NAME (default "memory") in an in-memory
** SQLite database with the extension linked in (no .so beside it), and
** kept open until stdin ends.  A new store without --dim or --embedder
** uses embedder 'hash:256', and without --index an HNSW index (recall's
** vector side in well under a millisecond at 100K memories).  A new store imports the reference server's
** memory.jsonl named by --import, or by MEMORY_FILE_PATH (the reference's
** variable) when that file exists (kg_import_jsonl).
**
** Methods: initialize (the client's protocol version when this server
** knows it, else the latest), ping, tools/list, tools/call, and the
** reference's resource memory://knowledge-graph (resources/list, read,
** templates/list, subscribe, unsubscribe: a subscriber is notified of each
** call that changes the graph); notifications get no answer; any other
** request gets -32601.  A line that is not JSON
** gets -32700, one that is not a JSON-RPC request -32600.  Tool failures
** are tool results with isError, never a dead server.
*/
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"
#include "util/json.h"

int sqlite3_h5mem_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#define MCP_LATEST "2025-11-25"
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"};

static void usage(FILE *f) {
  fputs("usage: h5mem-mcp --store PATH [--dim N] [--embedder SPEC] [--embedder-model M]\n"
        "                 [--embedder-key-env VAR] [--index hnsw|flat|ivf] [--table NAME]\n"
        "                 [--import memory.jsonl] [--verbose]\n"
        "An MCP server (stdio) on the h5mem store PATH: the reference memory server's tools\n"
        "(create_entities, create_relations, add_observations, delete_entities,\n"
        "delete_observations, delete_relations, read_graph, search_nodes, open_nodes) and\n"
        "remember, recall, forget, memory_stats.  A new store imports the reference's\n"
        "memory.jsonl given by --import or MEMORY_FILE_PATH.\n",
        f);
}

/* The reference's one resource: the whole graph, JSON.stringify(graph,
** null, 2), as read_graph gives it. */
#define GRAPH_URI "memory://knowledge-graph"

/* ---- output ------------------------------------------------------------------ */

static void send_line(strbuf *b) {
  if (strbuf_failed(b)) {
    fputs("h5mem-mcp: out of memory writing an answer\n", stderr);
    return;
  }
  fwrite(b->buf, 1, b->len, stdout);
  fputc('\n', stdout);
  fflush(stdout);
}

static void send_error(const char *id, size_t idn, int code, const char *msg) {
  strbuf b = {0};
  strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
  if (id) strbuf_append(&b, id, idn);
  else strbuf_puts(&b, "null");
  strbuf_printf(&b, ",\"error\":{\"code\":%d,\"message\":", code);
  strbuf_json_string(&b, msg, strlen(msg));
  strbuf_puts(&b, "}}");
  send_line(&b);
  strbuf_free(&b);
}

/* {"jsonrpc":"2.0","id":ID,"result":RESULT} */
static void send_result(const char *id, size_t idn, const strbuf *result) {
  strbuf b = {0};
  strbuf_puts(&b, "{\"jsonrpc\":\"2.0\",\"id\":");
  strbuf_append(&b, id, idn);
  strbuf_puts(&b, ",\"result\":");
  strbuf_append(&b, result->buf ? result->buf : "{}", result->buf ? result->len : 2);
  strbuf_putc(&b, '}');
  send_line(&b);
  strbuf_free(&b);
}

/* ---- methods ------------------------------------------------------------------ */

static void m_initialize(const char *p, size_t pn, strbuf *r) {
  const char *ver = MCP_LATEST;
  size_t v0, v1;
  int is = 0;
  char *want = p && !mcp_member(p, pn, "protocolVersion", &v0, &v1) ? mcp_str(p, v0, v1, &is) : NULL;
  for (size_t i = 0; want && i < sizeof versions / sizeof *versions; i++)
    if (!strcmp(want, versions[i])) ver = versions[i];
  free(want);
  strbuf_printf(r, "{\"protocolVersion\":\"%s\",\"capabilities\":{\"tools\":{\"listChanged\":true},"
                "\"resources\":{\"listChanged\":true,\"subscribe\":true}},"
                   "\"serverInfo\":{\"name\":\"h5mem-mcp\",\"version\":\"%s\"}}",
                ver, PACKAGE_VERSION);
}

static void m_tools_list(strbuf *r) {
  strbuf_puts(r, "{\"tools\":[");
  for (int i = 0; i < MCP_REF_NTOOLS; i++) {
    if (i) strbuf_putc(r, ',');
    strbuf_puts(r, mcp_ref_tools[i]);
  }
  for (int i = 0; i < MCP_MEM_NTOOLS; i++) {
    strbuf_putc(r, ',');
    strbuf_puts(r, mcp_memory_tools[i]);
  }
  strbuf_puts(r, "]}");
}

/* tools/call: a result with the tool's structured content and its text
** (JSON.stringify(content, null, 2), or a fixed message), or isError. */
static void m_tools_call(mcp *m, const char *p, size_t pn, strbuf *r) {
  size_t v0, v1, a0 = 0, a1 = 0;
  int is = 0;
  char *name = p && !mcp_member(p, pn, "name", &v0, &v1) ? mcp_str(p, v0, v1, &is) : NULL;
  const char *args = "{}";
  size_t an = 2;
  if (p && !mcp_member(p, pn, "arguments", &a0, &a1) && util_json_type(p, a0, a1) == UTIL_JSON_OBJECT) {
    args = p + a0;
    an = a1 - a0;
  }
  mcp_out o;
  memset(&o, 0, sizeof o);
  if (!name) mcp_out_error(&o, "MCP error -32602: Invalid params: the tool's name is missing");
  else if (mcp_graph_call(m, name, args, an, &o) < 0 && mcp_memory_call(m, name, args, an, &o) < 0)
    mcp_out_error(&o, "MCP error -32602: Tool %s not found", name);
  if (m->verbose) fprintf(stderr, "h5mem-mcp: tools/call %s%s%s\n", name ? name : "?", o.error ? ": " : "",
                          o.error ? o.error : "");
  if (!o.error && o.changed && m->subscribed) { /* (before the result, as the reference sends it) */
    strbuf nb = {0};
    strbuf_puts(&nb, "{\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"" GRAPH_URI
                     "\"},\"jsonrpc\":\"2.0\"}");
    send_line(&nb);
    strbuf_free(&nb);
  }
  if (o.error) {
    strbuf_puts(r, "{\"content\":[{\"type\":\"text\",\"text\":");
    strbuf_json_string(r, o.error, strlen(o.error));
    strbuf_puts(r, "}],\"isError\":true}");
  } else {
    strbuf text = {0};
    util_json_iter it;
    if (o.text.len) {
      strbuf_append(&text, o.text.buf, o.text.len);
    } else if (o.inner && !util_json_iter_init(&it, o.result.buf, 0, o.result.len) && util_json_next(&it)) {
      mcp_pretty(o.result.buf + it.v0, it.v1 - it.v0, &text);
    } else {
      mcp_pretty(o.result.buf, o.result.len, &text);
    }
    strbuf_puts(r, "{\"content\":[{\"type\":\"text\",\"text\":");
    strbuf_json_string(r, text.buf ? text.buf : "", text.len);
    strbuf_puts(r, "}],\"structuredContent\":");
    strbuf_append(r, o.result.buf, o.result.len);
    strbuf_putc(r, '}');
    strbuf_free(&text);
  }
  free(name);
  free(o.error);
  strbuf_free(&o.result);
  strbuf_free(&o.text);
}

static void m_resources_list(strbuf *r) {
  strbuf_puts(r, "{\"resources\":[{\"uri\":\"" GRAPH_URI "\",\"name\":\"knowledge-graph\",\"title\":"
                 "\"Knowledge Graph\",\"description\":\"The full knowledge graph with all entities and "
                 "relations\",\"mimeType\":\"application/json\"}]}");
}

/* The uri parameter (malloc'd), or NULL. */
static char *uri_param(const char *p, size_t pn) {
  size_t v0, v1;
  int is = 0;
  return p && !mcp_member(p, pn, "uri", &v0, &v1) ? mcp_str(p, v0, v1, &is) : NULL;
}

/* resources/read: the result, or an error (code, message) in *code, msg. */
static void m_resources_read(mcp *m, const char *p, size_t pn, strbuf *r, int *code, char **msg) {
  char *uri = uri_param(p, pn);
  if (!uri || strcmp(uri, GRAPH_URI)) {
    *code = -32602; /* (no uri: "Invalid params") */
    size_t n = uri ? strlen(uri) + 64 : 0;
    if (uri && (*msg = malloc(n))) snprintf(*msg, n, "MCP error -32602: Resource %s not found", uri);
    free(uri);
    return;
  }
  free(uri);
  mcp_out o;
  memset(&o, 0, sizeof o);
  if (mcp_graph_json(m, &o) == 0) {
    strbuf text = {0};
    mcp_pretty(o.result.buf, o.result.len, &text);
    strbuf_puts(r, "{\"contents\":[{\"uri\":\"" GRAPH_URI "\",\"mimeType\":\"application/json\",\"text\":");
    strbuf_json_string(r, text.buf ? text.buf : "", text.len);
    strbuf_puts(r, "}]}");
    strbuf_free(&text);
  } else {
    *code = -32603;
    *msg = strdup(o.error ? o.error : "the graph cannot be read");
  }
  free(o.error);
  strbuf_free(&o.result);
  strbuf_free(&o.text);
}

/* resources/subscribe and unsubscribe: any uri is taken (as the reference
** takes it); the graph's changes are notified while it is subscribed. */
static int m_subscribe(mcp *m, const char *p, size_t pn, int on, strbuf *r) {
  char *uri = uri_param(p, pn);
  if (!uri) return -1;
  if (!strcmp(uri, GRAPH_URI)) m->subscribed = on;
  free(uri);
  strbuf_puts(r, "{}");
  return 0;
}

/* One message (a line). */
static void handle(mcp *m, const char *s, size_t n) {
  char jerr[200];
  if (util_json_valid_js(s, n, jerr, sizeof jerr)) { /* (JSON as JSON.parse reads it) */
    send_error(NULL, 0, -32700, "Parse error");
    return;
  }
  size_t i0, i1, v0, v1, p0 = 0, p1 = 0;
  int has_id = !mcp_member(s, n, "id", &i0, &i1);
  int t = has_id ? util_json_type(s, i0, i1) : -1;
  if (has_id && t != UTIL_JSON_INTEGER && t != UTIL_JSON_REAL && t != UTIL_JSON_TEXT) has_id = 0;
  int is = 0;
  char *ver = !mcp_member(s, n, "jsonrpc", &v0, &v1) ? mcp_str(s, v0, v1, &is) : NULL;
  char *method = !mcp_member(s, n, "method", &v0, &v1) ? mcp_str(s, v0, v1, &is) : NULL;
  int has_params = !mcp_member(s, n, "params", &p0, &p1);
  const char *p = has_params && util_json_type(s, p0, p1) == UTIL_JSON_OBJECT ? s + p0 : NULL;
  size_t pn = p ? p1 - p0 : 0;
  if (!ver || strcmp(ver, "2.0") || !method || (has_params && !p)) {
    /* not a request: an answer (result or error, no method) gets none */
    int answer = !method && !has_params &&
                 (!mcp_member(s, n, "result", &v0, &v1) || !mcp_member(s, n, "error", &v0, &v1));
    if (!answer) send_error(has_id ? s + i0 : NULL, has_id ? i1 - i0 : 0, -32600, "Invalid Request");
  } else if (!has_id) {
    if (m->verbose) fprintf(stderr, "h5mem-mcp: notification %s\n", method);
  } else {
    strbuf r = {0};
    int code = 0;
    char *msg = NULL;
    if (m->verbose) fprintf(stderr, "h5mem-mcp: %s\n", method);
    if (!strcmp(method, "initialize")) m_initialize(p, pn, &r);
    else if (!strcmp(method, "ping")) strbuf_puts(&r, "{}");
    else if (!strcmp(method, "tools/list")) m_tools_list(&r);
    else if (!strcmp(method, "tools/call")) m_tools_call(m, p, pn, &r);
    else if (!strcmp(method, "resources/list")) m_resources_list(&r);
    else if (!strcmp(method, "resources/templates/list")) strbuf_puts(&r, "{\"resourceTemplates\":[]}");
    else if (!strcmp(method, "resources/read")) m_resources_read(m, p, pn, &r, &code, &msg);
    else if (!strcmp(method, "resources/subscribe") || !strcmp(method, "resources/unsubscribe")) {
      if (m_subscribe(m, p, pn, method[10] == 's', &r)) code = -32602;
    }
    if (code) send_error(s + i0, i1 - i0, code, msg ? msg : "Invalid params");
    else if (r.len) send_result(s + i0, i1 - i0, &r);
    else send_error(s + i0, i1 - i0, -32601, "Method not found");
    free(msg);
    strbuf_free(&r);
  }
  free(ver);
  free(method);
}

/* ---- the store ------------------------------------------------------------------ */

/* A store this run made and could not fill: its files go (the next start
** makes it again and imports again). */
static void remove_new_store(const char *path) {
  size_t n = strlen(path) + 8;
  char *wal = malloc(n);
  if (wal) {
    snprintf(wal, n, "%s-wal", path);
    unlink(wal);
  }
  free(wal);
  unlink(path);
}

static int open_store(mcp *m, const char *path, const char *dim, const char *emb, const char *emodel,
                      const char *ekey, const char *index) {
  char *err = NULL;
  if (sqlite3_open(":memory:", &m->db) != SQLITE_OK || sqlite3_h5mem_init(m->db, &err, NULL) != SQLITE_OK) {
    fprintf(stderr, "h5mem-mcp: cannot start SQLite with h5mem: %s\n", err ? err : sqlite3_errmsg(m->db));
    sqlite3_free(err);
    return -1;
  }
  struct stat sb;
  int fresh = stat(path, &sb) != 0;
  sqlite3_str *q = sqlite3_str_new(m->db);
  /* the server is the store's writer while it runs (another writer would
     change the graph it keeps between calls): writer=on takes the role as
     the store opens (one read of the file) */
  sqlite3_str_appendf(q, "CREATE VIRTUAL TABLE temp.\"%w\" USING h5mem(path=%Q, writer=on", m->table, path);
  if (dim) sqlite3_str_appendf(q, ", dim=%Q", dim);
  if (emb) sqlite3_str_appendf(q, ", embedder=%Q", emb);
  else if (fresh && !dim) {
    sqlite3_str_appendf(q, ", embedder='hash:256'");
    m->embedder = "hash:256";
  }
  if (fresh || index) sqlite3_str_appendf(q, ", index=%Q", index ? index : "hnsw");
  if (emodel) sqlite3_str_appendf(q, ", embedder_model=%Q", emodel);
  if (ekey) sqlite3_str_appendf(q, ", embedder_key_env=%Q", ekey);
  sqlite3_str_appendf(q, ")");
  char *sql = sqlite3_str_finish(q);
  int rc = sql ? sqlite3_exec(m->db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc != SQLITE_OK) {
    fprintf(stderr, "h5mem-mcp: %s\n", err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    if (fresh) remove_new_store(path); /* (one this run made) */
    return -1;
  }
  /* a new store takes the reference server's graph: --import FILE, or
     the file its MEMORY_FILE_PATH names */
  if (fresh && m->import && *m->import) {
    FILE *f = fopen(m->import, "rb");
    if (!f) {
      if (m->import_given) {
        fprintf(stderr, "h5mem-mcp: --import %s: %s\n", m->import, strerror(errno));
        remove_new_store(path);
        return -1;
      }
      return 0; /* (MEMORY_FILE_PATH naming no file yet: nothing to import) */
    }
    strbuf b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) strbuf_append(&b, chunk, got);
    int bad = ferror(f);
    fclose(f);
    sqlite3_stmt *st = NULL;
    char *isql = sqlite3_mprintf("SELECT kg_import_jsonl(%Q, ?1)", m->table);
    rc = bad || strbuf_failed(&b) ? SQLITE_IOERR : isql ? sqlite3_prepare_v2(m->db, isql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(isql);
    if (rc == SQLITE_OK) {
      sqlite3_bind_text(st, 1, b.buf ? b.buf : "", (int)b.len, SQLITE_STATIC);
      rc = sqlite3_step(st) == SQLITE_ROW ? SQLITE_OK : SQLITE_ERROR;
      if (rc == SQLITE_OK) fprintf(stderr, "h5mem-mcp: imported %s: %s\n", m->import, sqlite3_column_text(st, 0));
    }
    if (rc != SQLITE_OK)
      fprintf(stderr, "h5mem-mcp: cannot import %s: %s\n", m->import, bad ? "read error" : sqlite3_errmsg(m->db));
    sqlite3_finalize(st);
    strbuf_free(&b);
    if (rc != SQLITE_OK) {
      remove_new_store(path);
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  /* a server that reads the whole graph at start and again after each
     write keeps the memory it frees and reuses it: one arena for both
     threads, and large blocks from the heap, never given back.  Memory
     new to the process costs a page fault per 4 KiB (12 us each on a VM
     measured for BENCHMARKS.md); reused, it costs none */
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  const char *store = getenv("H5MEM_STORE"), *dim = NULL, *emb = NULL, *emodel = NULL, *ekey = NULL, *index = NULL;
  mcp m;
  memset(&m, 0, sizeof m);
  m.table = "memory";
  m.import = getenv("MEMORY_FILE_PATH"); /* (the reference server's file, imported into a new store) */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **dst = !strcmp(a, "--store") ? &store : !strcmp(a, "--dim") ? &dim
                     : !strcmp(a, "--embedder") ? &emb : !strcmp(a, "--embedder-model") ? &emodel
                     : !strcmp(a, "--embedder-key-env") ? &ekey : !strcmp(a, "--table") ? &m.table
                     : !strcmp(a, "--index") ? &index
                     : !strcmp(a, "--import") ? &m.import : NULL;
    if (dst && i + 1 < argc) {
      *dst = argv[++i];
      m.import_given |= dst == &m.import;
    } else if (!strcmp(a, "--verbose")) {
      m.verbose = 1;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      printf("h5mem-mcp %s\n", PACKAGE_VERSION);
      return 0;
    } else {
      fprintf(stderr, "h5mem-mcp: %s: %s\n", a, dst ? "needs a value" : "unknown option");
      usage(stderr);
      return 2;
    }
  }
  if (!store || !*store) {
    fputs("h5mem-mcp: --store PATH is needed (or H5MEM_STORE)\n", stderr);
    usage(stderr);
    return 2;
  }
  m.store = store;
  m.embedder = emb;
  if (open_store(&m, store, dim, emb, emodel, ekey, index)) return 1;
  if (m.verbose) fprintf(stderr, "h5mem-mcp: serving %s on stdio\n", store);
  mcp_image_find(&m); /* (search_nodes answered from it until the graph is indexed) */
  mcp_graph_start(&m); /* (read while the client starts) */
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    size_t len = (size_t)n;
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
    size_t i = util_json_ws(line, 0, len);
    if (i == len) continue; /* (a blank line) */
    handle(&m, line, len);
  }
  free(line);
  mcp_image_save(&m); /* (for the next start, unless the one found still stands) */
  mcp_graph_forget(&m);
  sqlite3_close(m.db); /* (the store is checkpointed as it closes) */
  return 0;
}
