/*
** ext/ext_err.c - lib/'s error codes as SQLite's (ext_err.h).
*/
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
