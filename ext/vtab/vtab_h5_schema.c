/*
** ext/vtab/vtab_h5_schema.c - the h5 virtual table's options and schema=:
** parsing the module arguments, mapping schema= to an HDF5 type, comparing
** it with an existing dataset's, and creating the file or dataset it
** describes (the table itself: vtab_h5.c).
*/
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ext_err.h"
#include "vtab_int.h"

/* The prefix of the table's messages. */
#define WHO "h5"

/* ---- options ------------------------------------------------------- */

void h5vt_opts_free(h5opts *o) {
  sqlite3_free(o->file);
  sqlite3_free(o->dset);
  sqlite3_free(o->schema);
  sqlite3_free(o->row);
  sqlite3_free(o->mode);
  sqlite3_free(o->compression);
  sqlite3_free(o->sync);
}

/* The options, for the rule that each is given once (bit i: names[i]). */
static const char *const opt_names[] = {"file|path", "dataset", "schema", "row", "mode", "compression",
                                        "sync", "chunk", "shuffle", NULL};

int h5vt_parse_opts(int argc, const char *const *argv, h5opts *o, char **pzErr) {
  unsigned seen = 0;
  memset(o, 0, sizeof *o);
  o->chunk = 0;
  o->shuffle = -1;
  int npos = 0;
  for (int a = 3; a < argc; a++) {
    const char *arg = argv[a], *k;
    size_t kl;
    char *v;
    if (ext_vtab_arg(arg, &k, &kl, &v) != SQLITE_OK) return SQLITE_NOMEM;
    if (!kl) { /* positional: file, then dataset */
      char **slot = npos == 0 ? &o->file : npos == 1 ? &o->dset : NULL;
      if (slot && *slot) { /* given as file= or dataset= before */
        *pzErr = sqlite3_mprintf("%s: duplicate option '%s' (each option once; a first bare argument is "
                                 "file, a second dataset)", WHO, npos == 0 ? "file" : "dataset");
        sqlite3_free(v);
        return SQLITE_ERROR;
      }
      seen |= npos == 0 ? 1u : 2u;
      npos++;
      if (!slot) {
        sqlite3_free(v);
        *pzErr = sqlite3_mprintf("%s: unexpected argument %s (options are key=value)", WHO, arg);
        return SQLITE_ERROR;
      }
      *slot = v;
      continue;
    }
    if (ext_key_repeated(k, kl, opt_names, &seen)) {
      *pzErr = sqlite3_mprintf("%s: duplicate option '%.*s' (each option once; file and path are one "
                               "option, a first bare argument is file, a second dataset)", WHO, (int)kl, k);
      sqlite3_free(v);
      return SQLITE_ERROR;
    }
    char **slot = NULL;
#define KEY(s) ext_key_is(k, kl, s)
    if (KEY("file") || KEY("path")) slot = &o->file;
    else if (KEY("dataset")) slot = &o->dset;
    else if (KEY("schema")) slot = &o->schema;
    else if (KEY("row")) slot = &o->row;
    else if (KEY("mode")) slot = &o->mode;
    else if (KEY("compression")) slot = &o->compression;
    else if (KEY("sync")) slot = &o->sync;
    else if (KEY("chunk") || KEY("shuffle")) {
      char *end;
      errno = 0;
      long long n = strtoll(v, &end, 10);
      int bad = errno || end == v || *end || n < 0 || (KEY("chunk") && n < 1) ||
                (KEY("shuffle") && n > 2);
      if (bad) {
        *pzErr = sqlite3_mprintf("%s: %.*s=%s: expected %s", WHO, (int)kl, k, v,
                                 KEY("chunk") ? "a number of rows >= 1"
                                              : "0, 1 or 2 (2: blosc's bit shuffle)");
        sqlite3_free(v);
        return SQLITE_ERROR;
      }
      if (KEY("chunk")) o->chunk = n;
      else o->shuffle = (int)n;
      sqlite3_free(v);
      continue;
    } else {
      *pzErr = sqlite3_mprintf("%s: unknown option '%.*s' (known: file, dataset, schema, row, "
                               "mode, chunk, compression, shuffle, sync)", WHO, (int)kl, k);
      sqlite3_free(v);
      return SQLITE_ERROR;
    }
#undef KEY
    sqlite3_free(*slot);
    *slot = v;
  }
  if (!o->file || !*o->file) {
    *pzErr = sqlite3_mprintf("%s: file= is required, e.g. USING h5(file='x.h5', dataset='/ds')", WHO);
    return SQLITE_ERROR;
  }
  if (!o->dset || !*o->dset) {
    *pzErr = sqlite3_mprintf("%s: dataset= is required, e.g. USING h5(file='x.h5', dataset='/ds')", WHO);
    return SQLITE_ERROR;
  }
  if (o->row && sqlite3_stricmp(o->row, "vector") && sqlite3_stricmp(o->row, "json")) {
    *pzErr = sqlite3_mprintf("%s: row='%s': expected vector or json", WHO, o->row);
    return SQLITE_ERROR;
  }
  if (o->mode && sqlite3_stricmp(o->mode, "rw") && sqlite3_stricmp(o->mode, "ro")) {
    *pzErr = sqlite3_mprintf("%s: mode='%s': expected rw or ro", WHO, o->mode);
    return SQLITE_ERROR;
  }
  if (o->sync && sqlite3_stricmp(o->sync, "full") && sqlite3_stricmp(o->sync, "normal") &&
      sqlite3_stricmp(o->sync, "off")) {
    *pzErr = sqlite3_mprintf("%s: sync='%s': expected full, normal or off", WHO, o->sync);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

/* ---- creating a file or dataset from a schema ------------------------ */

static h5_type *scalar_type(const char *w, size_t n) {
  static const struct {
    const char *name;
    int kind, bytes, sgn; /* kind 0 int, 1 float, 2 bool, 3 text */
  } map[] = {
      {"int8", 0, 1, 1},    {"int16", 0, 2, 1},    {"int32", 0, 4, 1},   {"int64", 0, 8, 1},
      {"uint8", 0, 1, 0},   {"uint16", 0, 2, 0},   {"uint32", 0, 4, 0},  {"uint64", 0, 8, 0},
      {"int", 0, 8, 1},     {"integer", 0, 8, 1},  {"bigint", 0, 8, 1},  {"float16", 1, 2, 0},
      {"half", 1, 2, 0},    {"float32", 1, 4, 0},  {"float64", 1, 8, 0}, {"float", 1, 8, 0},
      {"double", 1, 8, 0},  {"real", 1, 8, 0},     {"bool", 2, 1, 0},    {"boolean", 2, 1, 0},
      {"text", 3, 0, 0},    {"str", 3, 0, 0},      {"string", 3, 0, 0},  {"varchar", 3, 0, 0},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (strlen(map[i].name) != n || sqlite3_strnicmp(map[i].name, w, (int)n)) continue;
    switch (map[i].kind) {
    case 0: return h5_type_new_int(map[i].bytes, map[i].sgn);
    case 1: return h5_type_new_float(map[i].bytes);
    case 2: return h5_type_new_bool();
    default: return h5_type_new_string(0, 1);
    }
  }
  return NULL;
}

static const char SCHEMA_TYPES[] =
    "int8, int16, int32, int64 (int, integer), uint8 .. uint64, float16, float32, "
    "float64 (float, double, real), bool, text, and NAME[N] arrays of the numeric ones";

/* Parse 'name type, ...' into a compound type (or, for one field called
** value, that field's type) for a dataset with shape (0[, N]). */
int h5vt_parse_schema(const char *s, h5_type **out, int *rank, uint64_t *ncols, char **pzErr) {
  *out = NULL;
  typedef struct { char *name; h5_type *t; } fld;
  fld f[256];
  int nf = 0, rc = SQLITE_OK;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    if (nf == 256) { rc = SQLITE_ERROR; *pzErr = sqlite3_mprintf("%s: schema: at most 256 fields", WHO); goto done; }
    /* the name */
    char *name;
    if (*p == '"') {
      const char *e = strchr(p + 1, '"');
      if (!e) { rc = SQLITE_ERROR; *pzErr = sqlite3_mprintf("%s: schema: unterminated \" in '%s'", WHO, s); goto done; }
      name = sqlite3_mprintf("%.*s", (int)(e - p - 1), p + 1);
      p = e + 1;
    } else {
      const char *b = p;
      while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
             (*p >= '0' && *p <= '9') || (unsigned char)*p >= 0x80)
        p++;
      if (p == b) { rc = SQLITE_ERROR; *pzErr = sqlite3_mprintf("%s: schema: expected a field name at '%s'", WHO, b); goto done; }
      name = sqlite3_mprintf("%.*s", (int)(p - b), b);
    }
    if (!name) { rc = SQLITE_NOMEM; goto done; }
    f[nf].name = name;
    f[nf].t = NULL;
    nf++;
    if (!*name || strchr(name, '/') || strcmp(name, ".") == 0) {
      rc = SQLITE_ERROR;
      *pzErr = sqlite3_mprintf("%s: schema: bad field name '%s'", WHO, name);
      goto done;
    }
    for (int j = 0; j + 1 < nf; j++)
      if (sqlite3_stricmp(f[j].name, name) == 0) {
        rc = SQLITE_ERROR;
        *pzErr = sqlite3_mprintf("%s: schema: field '%s' twice", WHO, name);
        goto done;
      }
    while (*p == ' ' || *p == '\t') p++;
    const char *b = p;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) p++;
    h5_type *t = scalar_type(b, (size_t)(p - b));
    if (!t) {
      rc = SQLITE_ERROR;
      *pzErr = sqlite3_mprintf("%s: schema: field '%s': unknown type '%.*s' (known: %s)", WHO,
                               name, (int)(p - b), b, SCHEMA_TYPES);
      goto done;
    }
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '[') {
      char *end;
      errno = 0;
      unsigned long long n = strtoull(p + 1, &end, 10);
      if (errno || end == p + 1 || *end != ']' || n < 1 || n > (1u << 24) ||
          !h5vt_is_numeric(t) ) {
        h5_type_free(t);
        rc = SQLITE_ERROR;
        *pzErr = sqlite3_mprintf("%s: schema: field '%s': arrays are TYPE[N] with N in 1..%u of "
                                 "a numeric type", WHO, name, 1u << 24);
        goto done;
      }
      uint32_t d = (uint32_t)n;
      t = h5_type_new_array(t, 1, &d);
      if (!t) { rc = SQLITE_NOMEM; goto done; }
      p = end + 1;
    }
    f[nf - 1].t = t;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == ',') { p++; continue; }
    if (*p) {
      rc = SQLITE_ERROR;
      *pzErr = sqlite3_mprintf("%s: schema: expected ',' at '%s'", WHO, p);
      goto done;
    }
  }
  if (nf == 0) {
    rc = SQLITE_ERROR;
    *pzErr = sqlite3_mprintf("%s: schema is empty; e.g. schema='id int64, score float32'", WHO);
    goto done;
  }
  *rank = 1;
  *ncols = 0;
  if (nf == 1 && strcmp(f[0].name, "value") == 0) {
    h5_type *t = f[0].t;
    f[0].t = NULL;
    if (t->cls == H5_CLASS_ARRAY) { /* a plain 2-D dataset */
      h5_type *base = t->base;
      *ncols = t->dims[0];
      *rank = 2;
      /* rebuild the base on its own: the array owns it */
      h5_type *nb = base->cls == H5_CLASS_FLOAT ? h5_type_new_float((int)base->size)
                                                : h5_type_new_int((int)base->size, base->is_signed);
      h5_type_free(t);
      if (!nb) { rc = SQLITE_NOMEM; goto done; }
      t = nb;
    }
    *out = t;
    goto done;
  }
  uint32_t size = 0;
  for (int j = 0; j < nf; j++) size += f[j].t->size;
  h5_type *c = h5_type_new_compound(size);
  if (!c) { rc = SQLITE_NOMEM; goto done; }
  uint32_t off = 0;
  for (int j = 0; j < nf; j++) {
    uint32_t sz = f[j].t->size;
    int hr = h5_type_add_member(c, f[j].name, off, f[j].t);
    f[j].t = NULL;
    if (hr != H5_OK) {
      h5_type_free(c);
      rc = SQLITE_NOMEM;
      goto done;
    }
    off += sz;
  }
  *out = c;
done:
  for (int j = 0; j < nf; j++) {
    sqlite3_free(f[j].name);
    h5_type_free(f[j].t);
  }
  return rc;
}

/* A compact description of a type for messages ('<f4', compound JSON). */
char *h5vt_type_text(const h5_type *t) {
  strbuf b = {0};
  if (h5sql_dtype(t, &b) != 0 || strbuf_failed(&b)) {
    strbuf_free(&b);
    return sqlite3_mprintf("(class %d)", (int)t->cls);
  }
  char *r = sqlite3_mprintf("%s", b.buf);
  strbuf_free(&b);
  return r;
}

/* Whether a (from a schema) and b (in the file) hold the same values. */
int h5vt_same_type(const h5_type *a, const h5_type *b) {
  if (a->cls != b->cls) {
    /* h5py's bool is an enum; so is ours */
    return 0;
  }
  switch (a->cls) {
  case H5_CLASS_INTEGER: return a->size == b->size && a->is_signed == b->is_signed;
  case H5_CLASS_FLOAT: return a->size == b->size;
  case H5_CLASS_ENUM: return a->size == b->size && a->nmembers == b->nmembers;
  case H5_CLASS_VLEN: return a->vlen_kind == b->vlen_kind;
  case H5_CLASS_STRING: return a->size == b->size;
  case H5_CLASS_ARRAY:
    return a->rank == b->rank && a->dims[0] == b->dims[0] && h5vt_same_type(a->base, b->base);
  case H5_CLASS_COMPOUND:
    if (a->nmembers != b->nmembers) return 0;
    for (uint32_t m = 0; m < a->nmembers; m++)
      if (strcmp(a->members[m].name, b->members[m].name) ||
          !h5vt_same_type(a->members[m].type, b->members[m].type))
        return 0;
    return 1;
  default: return 0;
  }
}

/* compression=: none, deflate[:0-9] (gzip, zlib: the same), zstd[:1-22]
** (HDF5 filter 32015; level 3 by default, as the zstd plugin and
** hdf5plugin have it), blosc[:compressor][:0-9] (filter 32001; lz4 at
** level 5 by default, as hdf5plugin.Blosc()); shuffle= then says whether
** to shuffle first: HDF5's shuffle filter before deflate or zstd (1),
** blosc's own byte (1, its default) or bit (2) shuffle.  Sets dcpl. */
static int parse_compression(const h5opts *o, h5w_dcpl *dcpl, char **pzErr) {
  const char *c = o->compression;
  dcpl->deflate = -1;
  if (!c || !*c || sqlite3_stricmp(c, "none") == 0) {
    if (o->shuffle > 0) goto shuffle_alone;
    return SQLITE_OK;
  }
  const char *colon = strchr(c, ':');
  size_t n = colon ? (size_t)(colon - c) : strlen(c);
  char *end;
  if ((n == 7 && sqlite3_strnicmp(c, "deflate", 7) == 0) ||
      (n == 4 && sqlite3_strnicmp(c, "gzip", 4) == 0) ||
      (n == 4 && sqlite3_strnicmp(c, "zlib", 4) == 0)) {
    dcpl->deflate = 4; /* h5py's default gzip level */
    if (colon && colon[1] >= '0' && colon[1] <= '9' && !colon[2]) dcpl->deflate = colon[1] - '0';
    else if (colon) goto bad;
    if (o->shuffle == 2) goto bit_shuffle;
    dcpl->shuffle = o->shuffle == 1;
    return SQLITE_OK;
  }
  if (n == 4 && sqlite3_strnicmp(c, "zstd", 4) == 0) {
    dcpl->codec = H5W_CODEC_ZSTD;
    dcpl->codec_level = 3;
    if (colon) {
      long lv = strtol(colon + 1, &end, 10);
      if (end == colon + 1 || *end || lv < 1 || lv > 22) goto bad;
      dcpl->codec_level = (int)lv;
    }
    if (o->shuffle == 2) goto bit_shuffle;
    dcpl->shuffle = o->shuffle == 1;
  } else if (n == 5 && sqlite3_strnicmp(c, "blosc", 5) == 0) {
    static const char *const names[] = {"blosclz", "lz4", "lz4hc", NULL, "zlib", "zstd"};
    dcpl->codec = H5W_CODEC_BLOSC;
    dcpl->codec_level = 5;
    dcpl->blosc_cname = 1;
    dcpl->blosc_shuffle = o->shuffle < 0 ? 1 : o->shuffle;
    const char *p = colon ? colon + 1 : NULL;
    if (p && !(*p >= '0' && *p <= '9')) { /* a compressor */
      const char *c2 = strchr(p, ':');
      size_t m = c2 ? (size_t)(c2 - p) : strlen(p);
      int found = -1;
      for (int i = 0; i < 6; i++)
        if (names[i] && strlen(names[i]) == m && sqlite3_strnicmp(p, names[i], (int)m) == 0) found = i;
      if (found < 0) goto bad;
      dcpl->blosc_cname = found;
      p = c2 ? c2 + 1 : NULL;
    }
    if (p) {
      if (!(p[0] >= '0' && p[0] <= '9') || p[1]) goto bad;
      dcpl->codec_level = p[0] - '0';
    }
  } else {
    goto bad;
  }
  {
    const char *lib;
    if (!h5w_codec_available(dcpl->codec, &lib)) {
      *pzErr = sqlite3_mprintf("%s: compression='%s': this build has no %s", WHO, c, lib);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
bad:
  *pzErr = sqlite3_mprintf("%s: compression='%s': expected none, deflate[:0-9], zstd[:1-22] or "
                           "blosc[:blosclz|lz4|lz4hc|zlib|zstd][:0-9]",
                           WHO, c);
  return SQLITE_ERROR;
bit_shuffle:
  *pzErr = sqlite3_mprintf("%s: shuffle=2 (bit shuffle) is blosc's: use compression='blosc...'", WHO);
  return SQLITE_ERROR;
shuffle_alone:
  *pzErr = sqlite3_mprintf("%s: shuffle=%d without compression (shuffle rearranges bytes for a "
                           "compressor)", WHO, o->shuffle);
  return SQLITE_ERROR;
}

/* Create the groups along path (in w) and return the parent and last name. */
static int make_parents(h5w *w, const char *path, h5w_obj **parent, const char **name,
                        char **pzErr) {
  h5w_obj *g = h5w_root(w);
  char *dup = sqlite3_mprintf("%s", path);
  if (!dup) return SQLITE_NOMEM;
  char *s = dup;
  while (*s == '/') s++;
  char *last = s;
  for (;;) {
    char *slash = strchr(s, '/');
    if (!slash) break;
    *slash = 0;
    if (*s) { /* (the name ends the path dup for now) */
      h5w_obj *next = NULL;
      int hr = h5w_lookup(w, dup, &next); /* dup is the path up to s */
      if (hr == H5_ENOTFOUND) hr = h5w_group(w, g, s, &next);
      if (hr != H5_OK) {
        *pzErr = sqlite3_mprintf("%s: cannot create group '%s' in '%s': %s", WHO, s, path,
                                 h5w_errmsg(w));
        sqlite3_free(dup);
        return SQLITE_ERROR;
      }
      g = next;
    }
    *slash = '/';
    s = slash + 1;
    last = s;
  }
  if (!*last) {
    *pzErr = sqlite3_mprintf("%s: dataset='%s' does not name a dataset", WHO, path);
    sqlite3_free(dup);
    return SQLITE_ERROR;
  }
  *parent = g;
  *name = path + (last - dup);
  sqlite3_free(dup);
  return SQLITE_OK;
}

/* Create the dataset of a schema in a new file or an existing one. */
int h5vt_create_dataset(const h5opts *o, char **pzErr) {
  h5_type *t;
  int rank;
  uint64_t ncols;
  int rc = h5vt_parse_schema(o->schema, &t, &rank, &ncols, pzErr);
  if (rc != SQLITE_OK) return rc;
  h5w_dcpl dcpl;
  memset(&dcpl, 0, sizeof dcpl);
  if ((rc = parse_compression(o, &dcpl, pzErr)) != SQLITE_OK) {
    h5_type_free(t);
    return rc;
  }
  uint64_t rowbytes = t->size * (rank == 2 ? ncols : 1);
  uint64_t chunk = (uint64_t)o->chunk;
  if (!chunk) { /* about 1 MiB of rows, a power of two */
    chunk = 1;
    while (chunk * 2 * rowbytes <= (1u << 20) && chunk < (1u << 20)) chunk *= 2;
  }
  if (chunk * rowbytes > (uint64_t)1 << 32) {
    h5_type_free(t);
    *pzErr = sqlite3_mprintf("%s: chunk=%llu rows of %llu bytes is over HDF5's 4 GiB chunk limit",
                             WHO, (unsigned long long)chunk, (unsigned long long)rowbytes);
    return SQLITE_ERROR;
  }
  char err[512] = "";
  h5w *w = NULL;
  struct stat st;
  int exists = stat(o->file, &st) == 0;
  /* a new file is written under a temporary name and renamed into place,
  ** so no one ever sees (or is left with) half a file */
  char *base = exists ? NULL : sqlite3_mprintf("%s.h5mem-new-%d", o->file, (int)getpid());
  char *tmp = NULL; /* the name made (malloc'd) */
  if (!exists && !base) {
    h5_type_free(t);
    return SQLITE_NOMEM;
  }
  int lockfd = -1;
  if (exists) {
    char *msg = NULL;
    rc = h5vt_lock_file(o->file, &lockfd, &msg);
    if (rc != SQLITE_OK) {
      h5_type_free(t);
      *pzErr = msg ? sqlite3_mprintf("%s: %s", WHO, msg) : NULL;
      sqlite3_free(msg);
      return *pzErr ? rc : SQLITE_NOMEM;
    }
  }
  /* the temporary file is made exclusively, never through a link planted at its name (h5.h) */
  int hr = exists ? h5w_open(o->file, 1, &w, err, sizeof err)
                  : h5w_create_temp(base, 1, &w, &tmp, err, sizeof err);
  sqlite3_free(base);
  if (hr != H5_OK) {
    h5_type_free(t);
    *pzErr = sqlite3_mprintf("%s: cannot %s '%s': %s", WHO, exists ? "add to" : "create",
                             o->file, err);
    if (lockfd >= 0) close(lockfd);
    return ext_err_rc(hr);
  }
  h5w_obj *parent, *d;
  const char *name;
  rc = make_parents(w, o->dset, &parent, &name, pzErr);
  if (rc == SQLITE_OK) {
    dcpl.layout = H5_LAYOUT_CHUNKED;
    dcpl.chunk[0] = chunk;
    dcpl.chunk[1] = ncols;
    uint64_t dims[2] = {0, ncols}, maxdims[2] = {UINT64_MAX, ncols};
    hr = h5w_dataset(w, parent, name, t, rank, dims, maxdims, &dcpl, &d);
    t = NULL;
    if (hr != H5_OK) {
      *pzErr = sqlite3_mprintf("%s: cannot create dataset '%s' in '%s': %s", WHO, o->dset,
                               o->file, h5w_errmsg(w));
      rc = ext_err_rc(hr);
    }
  }
  h5_type_free(t);
  int sync = !o->sync || sqlite3_stricmp(o->sync, "off") != 0;
  if (rc == SQLITE_OK && h5w_close(w, sync) != H5_OK) {
    *pzErr = sqlite3_mprintf("%s: cannot write '%s': %s", WHO, o->file, h5w_errmsg(w));
    rc = ext_err_rc(h5w_errcode(w));
  }
  h5w_free(w);
  if (tmp) {
    if (rc == SQLITE_OK && rename(tmp, o->file) != 0) {
      *pzErr = sqlite3_mprintf("%s: cannot create '%s': %s", WHO, o->file, strerror(errno));
      rc = SQLITE_ERROR;
    }
    if (rc != SQLITE_OK) unlink(tmp);
    free(tmp);
  }
  if (lockfd >= 0) close(lockfd); /* (closing drops the lock) */
  return rc;
}
