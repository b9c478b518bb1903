/*
** ext/h5sql.c - HDF5 types, shapes and elements as SQL text and values,
** shared by the h5_* functions and the h5 virtual table.
*/
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ext_err.h"
#include "h5sql.h"

int h5sql_directonly_ok(void) { return sqlite3_libversion_number() >= 3031000; }

int h5sql_open(const char *who, const char *path, h5_file **f, char **pzErr) {
  char err[512];
  *f = NULL;
  int rc = h5_open(path, f, err, sizeof err);
  if (rc == H5_OK) return SQLITE_OK;
  if (rc == H5_ENOMEM) return SQLITE_NOMEM;
  *pzErr = sqlite3_mprintf("%s: cannot open '%s': %s", who, path, err);
  return *pzErr ? ext_err_rc(rc) : SQLITE_NOMEM;
}

int h5sql_dtype(const h5_type *t, strbuf *o) {
  switch (t->cls) {
  case H5_CLASS_VLEN:
    if (t->vlen_kind == 1) {
      strbuf_puts(o, t->cset == 1 ? "vlen-utf8" : "vlen-ascii");
      return 0;
    }
    if (!t->base) return -1;
    strbuf_puts(o, "vlen-");
    return h5sql_dtype(t->base, o);
  case H5_CLASS_REFERENCE:
    strbuf_puts(o, t->ref_kind == 0 ? "ref-object" : t->ref_kind == 1 ? "ref-region" : "ref");
    return 0;
  default: break;
  }
  strbuf tmp = {0};
  int rc = h5_json_dtype(t, &tmp) == H5_OK && tmp.buf && strcmp(tmp.buf, "null") != 0 ? 0 : -1;
  if (rc == 0) {
    /* a plain dtype string ("<f4") loses its quotes; a descr stays JSON */
    if (tmp.len >= 2 && tmp.buf[0] == '"' && tmp.buf[tmp.len - 1] == '"' &&
        !memchr(tmp.buf + 1, '"', tmp.len - 2) && !memchr(tmp.buf, '\\', tmp.len))
      strbuf_append(o, tmp.buf + 1, tmp.len - 2);
    else
      strbuf_append(o, tmp.buf, tmp.len);
  }
  strbuf_free(&tmp);
  return rc;
}

void h5sql_dims_json(strbuf *o, int rank, const uint64_t *dims, int unlimited_null) {
  strbuf_putc(o, '[');
  for (int i = 0; i < rank; i++) {
    if (i) strbuf_putc(o, ',');
    if (unlimited_null && dims[i] == UINT64_MAX)
      strbuf_puts(o, "null");
    else
      strbuf_printf(o, "%llu", (unsigned long long)dims[i]);
  }
  strbuf_putc(o, ']');
}

void h5sql_filters_json(strbuf *o, const h5_dset_info *info) {
  strbuf_putc(o, '[');
  for (int i = 0; i < info->nfilters; i++) {
    const h5_filter *fl = &info->filters[i];
    const char *name = h5_filter_known_name(fl->id);
    if (!name) name = fl->name;
    strbuf_printf(o, "%s{\"id\":%u,\"name\":", i ? "," : "", fl->id);
    if (name && h5_utf8_valid((const uint8_t *)name, strlen(name)))
      strbuf_json_string(o, name, strlen(name));
    else
      strbuf_puts(o, "null");
    strbuf_printf(o, ",\"optional\":%s,\"cd\":[", fl->flags & 1 ? "true" : "false");
    for (uint32_t k = 0; k < fl->ncd; k++) strbuf_printf(o, "%s%u", k ? "," : "", fl->cd[k]);
    strbuf_puts(o, "]}");
  }
  strbuf_putc(o, ']');
}

void h5sql_error(sqlite3_context *ctx, int code, const char *who, const char *fmt, ...) {
  if (code == H5_ENOMEM) {
    sqlite3_result_error_nomem(ctx);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  char *m = sqlite3_vmprintf(fmt, ap);
  va_end(ap);
  char *z = m ? sqlite3_mprintf("%s: %s", who, m) : NULL;
  ext_result_err(ctx, code, z);
  sqlite3_free(m);
  sqlite3_free(z);
}

void h5sql_result_json(sqlite3_context *ctx, strbuf *s) {
  if (s->over) {
    sqlite3_result_error_toobig(ctx);
  } else if (s->oom) {
    sqlite3_result_error_nomem(ctx);
  } else {
    sqlite3_result_text(ctx, s->buf ? s->buf : "null", s->buf ? (int)s->len : 4,
                        SQLITE_TRANSIENT);
    sqlite3_result_subtype(ctx, EXT_SUBTYPE_JSON);
  }
  strbuf_free(s);
}

static void result_text(sqlite3_context *ctx, const uint8_t *p, size_t n) {
  if (n > (size_t)sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1)) {
    sqlite3_result_error_toobig(ctx);
    return;
  }
  if (h5_utf8_valid(p, n))
    sqlite3_result_text(ctx, (const char *)p, (int)n, SQLITE_TRANSIENT);
  else
    sqlite3_result_blob(ctx, p, (int)n, SQLITE_TRANSIENT);
}

/* f's error (lib/h5's code rc) as the result: "who: message", its code. */
static void result_h5_err(sqlite3_context *ctx, const char *who, h5_file *f, int rc) {
  h5sql_error(ctx, rc, who, "%s", h5_errmsg(f));
}

static void result_json_of(sqlite3_context *ctx, const char *who, h5_file *f, const h5_type *t,
                           const uint8_t *p, int rank, const uint64_t *dims) {
  strbuf s = {0};
  s.limit = (size_t)sqlite3_limit(sqlite3_context_db_handle(ctx), SQLITE_LIMIT_LENGTH, -1);
  int rc = h5_json_values(f, t, p, rank, dims, &s);
  if (rc != H5_OK && !strbuf_failed(&s)) {
    strbuf_free(&s);
    result_h5_err(ctx, who, f, rc);
    return;
  }
  h5sql_result_json(ctx, &s);
}

void h5sql_result_elem(sqlite3_context *ctx, const char *who, h5_file *f, const h5_type *t,
                       const uint8_t *p) {
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
  case H5_CLASS_ENUM: {
    uint64_t v;
    int is_signed;
    if (h5_elem_int(t, p, &v, &is_signed) != H5_OK)
      sqlite3_result_null(ctx);
    else if (is_signed || v <= (uint64_t)INT64_MAX)
      sqlite3_result_int64(ctx, (sqlite3_int64)v);
    else
      sqlite3_result_double(ctx, (double)v);
    return;
  }
  case H5_CLASS_FLOAT: {
    double d;
    if (h5_elem_double(t, p, &d) == H5_OK)
      sqlite3_result_double(ctx, d);
    else
      sqlite3_result_null(ctx);
    return;
  }
  case H5_CLASS_STRING:
    result_text(ctx, p, h5_fixed_string_len(t, p));
    return;
  case H5_CLASS_VLEN:
    if (t->vlen_kind == 1) {
      const uint8_t *data;
      size_t len;
      uint32_t count;
      int rc = h5_vlen_get(f, p, &data, &len, &count);
      if (rc != H5_OK) {
        result_h5_err(ctx, who, f, rc);
        return;
      }
      if (!data) {
        sqlite3_result_null(ctx);
        return;
      }
      /* libhdf5 hands over a string up to its first NUL */
      const uint8_t *z = memchr(data, 0, len);
      result_text(ctx, data, z ? (size_t)(z - data) : len);
      return;
    }
    break;
  case H5_CLASS_OPAQUE:
    sqlite3_result_blob(ctx, p, (int)t->size, SQLITE_TRANSIENT);
    return;
  case H5_CLASS_REFERENCE:
    sqlite3_result_null(ctx);
    return;
  default: break;
  }
  result_json_of(ctx, who, f, t, p, 0, NULL);
}

void h5sql_result_values(sqlite3_context *ctx, const char *who, h5_file *f, const h5_type *t,
                         const uint8_t *data, int rank, const uint64_t *dims) {
  if (rank < 0)
    sqlite3_result_null(ctx);
  else if (rank == 0)
    h5sql_result_elem(ctx, who, f, t, data);
  else
    result_json_of(ctx, who, f, t, data, rank, dims);
}

int h5sql_same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}
