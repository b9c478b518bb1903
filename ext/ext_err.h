/*
** ext/ext_err.h - the SQLite result code for an error of lib/ (the one
** error space, util/err.h), the same at every place the binding reports
** one, since clients act on it: they retry on SQLITE_BUSY and stop on
** SQLITE_CORRUPT.
*/
#ifndef H5MEM_EXT_ERR_H
#define H5MEM_EXT_ERR_H

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

#endif
