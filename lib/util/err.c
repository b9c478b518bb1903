/*
** lib/util/err.c - the names of the error codes (err.h).
*/
#include "util/err.h"

#include <errno.h>

const char *util_err_name(int code) {
  switch (code) {
  case UTIL_OK: return "UTIL_OK";
  case UTIL_EIO: return "UTIL_EIO";
  case UTIL_ENOMEM: return "UTIL_ENOMEM";
  case UTIL_ECORRUPT: return "UTIL_ECORRUPT";
  case UTIL_EUNSUPPORTED: return "UTIL_EUNSUPPORTED";
  case UTIL_ENOTFOUND: return "UTIL_ENOTFOUND";
  case UTIL_EINVAL: return "UTIL_EINVAL";
  case UTIL_ESTOP: return "UTIL_ESTOP";
  case UTIL_EFULL: return "UTIL_EFULL";
  case UTIL_EBUSY: return "UTIL_EBUSY";
  case UTIL_EMISMATCH: return "UTIL_EMISMATCH";
  case UTIL_EEXISTS: return "UTIL_EEXISTS";
  case UTIL_ETOOBIG: return "UTIL_ETOOBIG";
  default: return "unknown error code";
  }
}

int util_err_write(int e) {
  if (e == ENOSPC || e == EFBIG) return UTIL_EFULL;
#ifdef EDQUOT
  if (e == EDQUOT) return UTIL_EFULL;
#endif
  return UTIL_EIO;
}
