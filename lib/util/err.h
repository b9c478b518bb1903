/*
** lib/util/err.h - the one error space of lib/: a distinct negative value
** per meaning, whichever library returns it.
**
** Each library names its codes after its own prefix (H5_ECORRUPT,
** STORE_EFULL, WAL_EIO, ANN_EINVAL, BM25_ETOOBIG, KG_ENOTFOUND, ...), and
** every such name is defined from the value below that means the same, so
** a code keeps its meaning when it crosses from one library into another
** (a writer's "disk full" is the store's "disk full") and one function
** (ext/ext_err.h) turns any of them into the SQLite code a client acts on.
** Success is 0; positive values are a function's own results (a count, a
** "found"), never errors.  The values are not stored in any file: a test
** compares names, never numbers.
*/
#ifndef H5MEM_UTIL_ERR_H
#define H5MEM_UTIL_ERR_H

enum {
  UTIL_OK = 0,
  UTIL_EIO = -1,          /* the operating system refused (open, read, write, sync, lock) */
  UTIL_ENOMEM = -2,       /* out of memory */
  UTIL_ECORRUPT = -3,     /* a file or image breaks its format */
  UTIL_EUNSUPPORTED = -4, /* valid input this code does not handle (yet) */
  UTIL_ENOTFOUND = -5,    /* no such record, link, attribute, ... */
  UTIL_EINVAL = -6,       /* a bad argument or value from the caller */
  UTIL_ESTOP = -7,        /* an iteration callback asked to stop */
  UTIL_EFULL = -8,        /* no space: disk full, file size limit (RLIMIT_FSIZE), quota */
  UTIL_EBUSY = -9,        /* another handle or process holds what is needed */
  UTIL_EMISMATCH = -10,   /* options or a file disagree with what exists */
  UTIL_EEXISTS = -11,     /* the id or name is taken */
  UTIL_ETOOBIG = -12      /* beyond a format's limit (rows, terms, bytes) */
};

/* The code's name ("UTIL_EFULL"), "UTIL_OK" for 0, "unknown error code"
** for anything else. */
const char *util_err_name(int code);

/* The code for a failed write, sync or link whose errno is e: UTIL_EFULL
** when it found no space (ENOSPC, EFBIG from RLIMIT_FSIZE, EDQUOT), else
** UTIL_EIO. */
int util_err_write(int e);

#endif
