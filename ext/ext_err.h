/*
** ext/ext_err.h - the SQLite result code for an error of lib/ (the one
** error space, util/err.h), the same at every place the binding reports
** one, since clients act on it: they retry on SQLITE_BUSY and stop on
** SQLITE_CORRUPT; and the few ways an error is reported to SQLite (a
** function's or a column's result, a virtual table's message).
*/
#ifndef H5MEM_EXT_ERR_H
#define H5MEM_EXT_ERR_H

#include <stdarg.h>

#include "ext.h"
#include "util/err.h"

/* code (UTIL_E* or a library's name for one: STORE_EBUSY, H5_ECORRUPT,
** ...) as an SQLite code:
**   0                 SQLITE_OK
**   UTIL_ENOMEM       SQLITE_NOMEM
**   UTIL_EBUSY        SQLITE_BUSY     another connection or process writes
**   UTIL_EFULL        SQLITE_FULL     disk full, file size limit, quota
**   UTIL_ECORRUPT     SQLITE_CORRUPT  a damaged file
**   UTIL_EEXISTS      SQLITE_CONSTRAINT
**   UTIL_ETOOBIG      SQLITE_TOOBIG
**   anything else     SQLITE_ERROR (the message says what and where).
** UTIL_EIO is SQLITE_ERROR too, not SQLITE_IOERR: it also stands for a
** store file that is missing or a log that is a link, and SQLite answers
** SQLITE_IOERR by rolling back the whole transaction. */
int ext_err_rc(int code);

/* msg (copied) as the error result of a function or of a column read
** (xColumn), with the SQLite code rc.  Both are needed: after
** sqlite3_result_error alone the statement fails with SQLITE_ERROR
** whatever xColumn returns.  rc SQLITE_NOMEM, or msg NULL (it could not be
** made): out of memory; rc SQLITE_OK, SQLITE_ROW or SQLITE_DONE (no error
** code): SQLITE_ERROR. */
void ext_result_rc(sqlite3_context *ctx, int rc, const char *msg);
/* The same for lib/'s code (ext_err_rc). */
void ext_result_err(sqlite3_context *ctx, int code, const char *msg);
/* ext_result_rc with the message "who: err"; err (sqlite3_mprintf'd, may
** be NULL: out of memory) is taken. */
void ext_result_msg(sqlite3_context *ctx, int rc, const char *who, char *err);

/* A virtual table's error: vt->zErrMsg becomes "who: " and the message
** fmt formats (the one before is freed); rc, or SQLITE_NOMEM when the
** message cannot be made. */
int ext_vtab_verr(sqlite3_vtab *vt, int rc, const char *who, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* A message (*msg, sqlite3_mprintf'd; taken, *msg NULLed) as the virtual
** table's error "who: message" (ext_vtab_verr); returns rc.  For rc
** SQLITE_OK the message is dropped.  Without a message rc is returned as
** it is, but SQLITE_ERROR, which always comes with one, becomes
** SQLITE_NOMEM: the message could not be made.  (msg by reference, so that
** a call can set it in the argument before: f(vt, check(v, &m), &m).) */
int ext_vtab_msg(sqlite3_vtab *vt, int rc, const char *who, char **msg);

#endif
