/*
** ext/ext_err.c - lib/'s error codes as SQLite's, and reporting them
** (ext_err.h).
*/
#include <stddef.h>

#include "ext.h"
#include "ext_err.h"

int ext_err_rc(int code) {
  switch (code) {
  case UTIL_OK: return SQLITE_OK;
  case UTIL_ENOMEM: return SQLITE_NOMEM;
  case UTIL_EBUSY: return SQLITE_BUSY;
  case UTIL_EFULL: return SQLITE_FULL;
  case UTIL_ECORRUPT: return SQLITE_CORRUPT;
  case UTIL_EEXISTS: return SQLITE_CONSTRAINT;
  case UTIL_ETOOBIG: return SQLITE_TOOBIG;
  default: return SQLITE_ERROR;
  }
}

void ext_result_rc(sqlite3_context *ctx, int rc, const char *msg) {
  if (rc == SQLITE_NOMEM || !msg) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_error(ctx, msg, -1);
  if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE && rc != SQLITE_ERROR)
    sqlite3_result_error_code(ctx, rc);
}

void ext_result_err(sqlite3_context *ctx, int code, const char *msg) { ext_result_rc(ctx, ext_err_rc(code), msg); }

void ext_result_msg(sqlite3_context *ctx, int rc, const char *who, char *err) {
  char *m = err ? sqlite3_mprintf("%s: %s", who, err) : NULL;
  ext_result_rc(ctx, rc, m);
  sqlite3_free(m);
  sqlite3_free(err);
}

int ext_vtab_verr(sqlite3_vtab *vt, int rc, const char *who, const char *fmt, va_list ap) {
  char *m = sqlite3_vmprintf(fmt, ap);
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = m ? sqlite3_mprintf("%s: %s", who, m) : NULL;
  sqlite3_free(m);
  return vt->zErrMsg ? rc : SQLITE_NOMEM;
}

/* ext_vtab_verr with its arguments as ... */
static int vtab_err(sqlite3_vtab *vt, int rc, const char *who, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int vtab_err(sqlite3_vtab *vt, int rc, const char *who, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  rc = ext_vtab_verr(vt, rc, who, fmt, ap);
  va_end(ap);
  return rc;
}

int ext_vtab_msg(sqlite3_vtab *vt, int rc, const char *who, char **msg) {
  char *m = *msg;
  *msg = NULL;
  if (rc == SQLITE_OK || !m) {
    sqlite3_free(m);
    return rc == SQLITE_ERROR && !m ? SQLITE_NOMEM : rc;
  }
  rc = vtab_err(vt, rc, who, "%s", m);
  sqlite3_free(m);
  return rc;
}
