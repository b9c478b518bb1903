/*
** ext/h5mem.c - the extension's entry point and its identity functions.
**
**   .load ./h5mem          (sqlite3 shell)
**   conn.load_extension("./h5mem")   (Python)
**
** sqlite3_h5mem_init registers every function and module of the extension
** on one connection.  It and its alias sqlite3_hmem_init (the name SQLite
** derives from "h5mem", which keeps letters only) are the only symbols
** h5mem.so exports.
*/
#include "config.h"

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <xxhash.h>
#include <zlib.h>

#include "embed/embedder.h"
#include "sign/sign.h"
#include "ext.h"
#include "h5mem_commit.h"
#include "k.h"

/* The oldest SQLite whose routine table has everything used here (the
** sqlite3_str API came in 3.25). */
#define H5MEM_MIN_SQLITE 3025000

void ext_result_json(sqlite3_context *ctx, sqlite3_str *s) {
  int err = sqlite3_str_errcode(s);
  int len = sqlite3_str_length(s);
  char *z = sqlite3_str_finish(s);
  if (err == SQLITE_TOOBIG) {
    sqlite3_free(z);
    sqlite3_result_error_toobig(ctx);
    return;
  }
  if (!z) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, z, len, sqlite3_free);
  sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
}

/* Whether sql calls the function name: name( with anything but an
** identifier character before it (a quote after it allowed). */
static int sql_calls(const char *sql, const char *name) {
  size_t n = strlen(name);
  for (const char *p = sql; p && *p; p++) {
    if (sqlite3_strnicmp(p, name, (int)n) != 0) continue;
    char b = p > sql ? p[-1] : ' ';
    if (isalnum((unsigned char)b) || b == '_' || b == '$') continue;
    const char *q = p + n;
    if (*q == '"' || *q == '`' || *q == ']' || *q == '\'') q++;
    while (isspace((unsigned char)*q)) q++;
    if (*q == '(') return 1;
  }
  return 0;
}

int ext_arg_text(sqlite3_context *ctx, sqlite3_value *v, const char **s, size_t *n) {
  if (sqlite3_value_type(v) == SQLITE_NULL) return 0;
  *s = (const char *)sqlite3_value_text(v);
  *n = (size_t)sqlite3_value_bytes(v);
  if (!*s && *n) {
    sqlite3_result_error_nomem(ctx);
    return -1;
  }
  return 1;
}

int ext_direct_call(sqlite3_context *ctx, const char *name) {
  if (sqlite3_libversion_number() >= 3050000) return 1;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st))
    if (sqlite3_stmt_busy(st) && sql_calls(sqlite3_sql(st), name)) return 1;
  char *m = sqlite3_mprintf("unsafe use of %s(): no running statement calls it, so a database file's schema "
                            "(a CHECK constraint) does; SQLite before 3.50.0 lets it (docs/SQL.md, \"Trust\")",
                            name);
  if (m) sqlite3_result_error(ctx, m, -1);
  else sqlite3_result_error_nomem(ctx);
  sqlite3_free(m);
  return 0;
}

/* h5mem_version(): the release, e.g. '0.1.0'. */
static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, PACKAGE_VERSION, -1, SQLITE_STATIC);
}

/* ,"key":["scalar",...] for the levels that pass the test. */
static void append_levels(sqlite3_str *s, const char *key, int usable) {
  int first = 1;
  sqlite3_str_appendf(s, ",\"%s\":[", key);
  for (int i = 0; i < K_NLEVEL; i++) {
    int ok = usable ? k_ops_for((k_level)i) != NULL : k_compiled_in((k_level)i);
    if (!ok) continue;
    sqlite3_str_appendf(s, "%s\"%s\"", first ? "" : ",",
                        k_level_name((k_level)i));
    first = 0;
  }
  sqlite3_str_appendchar(s, 1, ']');
}

/* h5mem_info(): JSON describing this build and what it runs on. */
static void fn_info(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  unsigned xxh = XXH_versionNumber();
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendf(s, "{\"version\":\"%s\",\"commit\":\"%s\"",
                      PACKAGE_VERSION, H5MEM_COMMIT);
  sqlite3_str_appendf(s, ",\"simd\":\"%s\"", k_get()->name);
  append_levels(s, "simd_usable", 1);
  append_levels(s, "simd_compiled", 0);
  sqlite3_str_appendf(s,
                      ",\"sqlite\":\"%s\",\"zlib\":\"%s\","
                      "\"xxhash\":\"%u.%u.%u\"",
                      sqlite3_libversion(), zlibVersion(), xxh / 10000,
                      xxh / 100 % 100, xxh % 100);
  sqlite3_str_appendf(s, ",\"libcurl\":%s", embed_http_available() ? "true" : "false");
  sqlite3_str_appendf(s, ",\"libsodium\":%s", sign_available() ? "true" : "false");
#if defined(__clang__)
  sqlite3_str_appendf(s, ",\"compiler\":\"clang %s\"", __clang_version__);
#elif defined(__GNUC__)
  sqlite3_str_appendf(s, ",\"compiler\":\"gcc %s\"", __VERSION__);
#endif
  sqlite3_str_appendchar(s, 1, '}');
  ext_result_json(ctx, s);
}

int ext_identity_register(sqlite3 *db) {
  int rc = sqlite3_create_function_v2(db, "h5mem_version", 0,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC |
                                          SQLITE_INNOCUOUS,
                                      NULL, fn_version, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(
        db, "h5mem_info", 0,
        SQLITE_UTF8 | SQLITE_INNOCUOUS | SQLITE_RESULT_SUBTYPE, NULL, fn_info,
        NULL, NULL, NULL);
  return rc;
}

/* Every function and module of the extension, in the order registered
** (ext.h, "registration"). */
static int (*const registrations[])(sqlite3 *db) = {
    ext_identity_register, ext_vec_register,        ext_text_register,      ext_embed_register,
    ext_h5_register,       ext_vtab_h5_register,    ext_vtab_h5mem_register,
    ext_migrate_register,  ext_life_register,
};

int sqlite3_h5mem_init(sqlite3 *db, char **pzErrMsg,
                   const sqlite3_api_routines *pApi) {
  char err[256];
  int rc = SQLITE_OK;
  SQLITE_EXTENSION_INIT2(pApi);

  /* the sqlite3_str API (3.25) is the newest routine used; an older host's
     routine table would not have it */
  if (sqlite3_libversion_number() < H5MEM_MIN_SQLITE) {
    *pzErrMsg = sqlite3_mprintf("h5mem needs SQLite 3.25.0 or later; this "
                                "process runs SQLite %s",
                                sqlite3_libversion());
    return SQLITE_ERROR;
  }
  if (k_check_env(err, sizeof err)) {
    *pzErrMsg = sqlite3_mprintf("h5mem: %s", err);
    return SQLITE_ERROR;
  }
  for (size_t i = 0; i < sizeof registrations / sizeof *registrations && rc == SQLITE_OK; i++)
    rc = registrations[i](db);
  if (rc != SQLITE_OK)
    *pzErrMsg = sqlite3_mprintf("h5mem: cannot register functions: %s",
                                sqlite3_errmsg(db));
  return rc;
}

int sqlite3_hmem_init(sqlite3 *db, char **pzErrMsg,
                      const sqlite3_api_routines *pApi) {
  return sqlite3_h5mem_init(db, pzErrMsg, pApi);
}
