/*
** ext/func_vec.c - vector scalar functions with sqlite-vec's names and
** semantics: vec_f32, vec_f16, vec_to_json, vec_length, vec_type,
** vec_distance_l2, vec_distance_cosine, vec_dot, vec_normalize, and
** vec_as_f16.
**
** A vector argument is a BLOB (packed little-endian elements) or JSON TEXT
** ('[1, 2.5, -3]').  A BLOB is float32 unless it carries the float16
** subtype that vec_f16() and vec_as_f16() set.  Subtypes do not survive
** storage in a table: vec_as_f16(col) declares a stored BLOB to be float16
** again.  Where sqlite-vec would accept NaN, Infinity, half-formed JSON or
** a zero vector for cosine, these functions stop with an error that names
** the problem; docs/SQL.md lists each difference.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "k.h"
#include "util/vecjson.h"

enum { VT_F32 = 1, VT_F16 = 2 };

/* A decoded vector argument.  data points into the sqlite3_value or into
** owned, a malloc'd copy that vec_arg_free releases. */
typedef struct vec_arg {
  int type;   /* VT_F32 or VT_F16 */
  size_t n;   /* number of elements, > 0 */
  float amax; /* largest |element| as read (0 for a zero vector) */
  const void *data;
  void *owned;
} vec_arg;

static void vec_arg_free(vec_arg *a) {
  free(a->owned);
  a->owned = NULL;
}

/* a's elements from now on: buf (malloc'd, a takes it) of type. */
static void vec_arg_take(vec_arg *a, void *buf, int type) {
  free(a->owned);
  a->owned = buf;
  a->data = buf;
  a->type = type;
}

/* malloc(bytes), or NULL with the function's error set (out of memory). */
static void *vec_alloc(sqlite3_context *ctx, size_t bytes) {
  void *p = malloc(bytes);
  if (!p) sqlite3_result_error_nomem(ctx);
  return p;
}

/* A malloc'd copy of src[0..bytes), or NULL as vec_alloc. */
static void *vec_copy(sqlite3_context *ctx, const void *src, size_t bytes) {
  void *p = vec_alloc(ctx, bytes);
  if (p) memcpy(p, src, bytes);
  return p;
}

static const char *sql_type_name(int t) {
  switch (t) {
  case SQLITE_INTEGER: return "INTEGER";
  case SQLITE_FLOAT: return "REAL";
  case SQLITE_TEXT: return "TEXT";
  case SQLITE_BLOB: return "BLOB";
  default: return "NULL";
  }
}

/* Report "<function>: <what><message>" as the function's error. */
static void vec_error(sqlite3_context *ctx, const char *what, const char *msg) {
  char *z = sqlite3_mprintf("%s: %s%s", (const char *)sqlite3_user_data(ctx),
                            what, msg);
  if (z) {
    sqlite3_result_error(ctx, z, -1);
    sqlite3_free(z);
  } else {
    sqlite3_result_error_nomem(ctx);
  }
}

/* One pass over a decoded argument: its largest magnitude into a->amax,
** or the index of its first NaN or infinite element (*nan tells which),
** or a->n when there is none. */
static size_t scan_elements(vec_arg *a, int *nan) {
  if (a->type == VT_F32) {
    const float *v = a->data;
    float m = 0.0f;
    for (size_t i = 0; i < a->n; i++) {
      if (!isfinite(v[i])) {
        *nan = isnan(v[i]);
        return i;
      }
      m = fmaxf(m, fabsf(v[i]));
    }
    a->amax = m;
  } else {
    const uint16_t *v = a->data;
    uint16_t m = 0; /* binary16 magnitudes order like their bit patterns */
    for (size_t i = 0; i < a->n; i++) {
      uint16_t x = v[i] & 0x7fffu;
      if (x >= 0x7c00u) {
        *nan = x != 0x7c00u;
        return i;
      }
      if (x > m) m = x;
    }
    k_get()->f16_to_f32(&m, &a->amax, 1);
  }
  return a->n;
}

/* Decode value v into *out.  raw_blob_type is the type of a BLOB without
** a vector subtype.  On error sets the function's result to an error that
** starts with what ("" or "second argument: ") and returns -1. */
static int vec_arg_read(sqlite3_context *ctx, sqlite3_value *v,
                        const char *what, int raw_blob_type, vec_arg *out) {
  char msg[256];
  int vtype = sqlite3_value_type(v);
  int sub = (int)sqlite3_value_subtype(v);
  memset(out, 0, sizeof *out);

  if (vtype == SQLITE_BLOB) {
    if (sub == EXT_SUBTYPE_INT8 || sub == EXT_SUBTYPE_BIT) {
      vec_error(ctx, what,
                sub == EXT_SUBTYPE_INT8
                    ? "int8 vectors (sqlite-vec's vec_int8) are not supported; "
                      "use float32 or float16"
                    : "bit vectors (sqlite-vec's vec_bit) are not supported; "
                      "use float32 or float16");
      return -1;
    }
    int type = sub == EXT_SUBTYPE_F16   ? VT_F16
               : sub == EXT_SUBTYPE_F32 ? VT_F32
                                        : raw_blob_type;
    size_t esz = type == VT_F16 ? 2 : 4;
    const void *p = sqlite3_value_blob(v);
    size_t bytes = (size_t)sqlite3_value_bytes(v);
    if (bytes == 0) {
      vec_error(ctx, what, "zero-length vectors are not supported");
      return -1;
    }
    if (bytes % esz) {
      snprintf(msg, sizeof msg,
               "a %s vector BLOB must be a multiple of %zu bytes long, got %zu "
               "bytes",
               type == VT_F16 ? "float16" : "float32", esz, bytes);
      vec_error(ctx, what, msg);
      return -1;
    }
    out->type = type;
    out->n = bytes / esz;
    out->data = p;
    if ((uintptr_t)p % esz) { /* SQLite does not promise aligned BLOBs */
      out->owned = vec_copy(ctx, p, bytes);
      if (!out->owned) return -1;
      out->data = out->owned;
    }
  } else if (vtype == SQLITE_TEXT) {
    const char *s = (const char *)sqlite3_value_text(v);
    size_t len = (size_t)sqlite3_value_bytes(v);
    float *f = NULL;
    size_t n = 0;
    if (!s) {
      sqlite3_result_error_nomem(ctx);
      return -1;
    }
    if (util_json_to_f32(s, len, &f, &n, msg, sizeof msg)) {
      vec_error(ctx, what, msg);
      return -1;
    }
    if (n == 0) {
      vec_error(ctx, what, "zero-length vectors are not supported");
      return -1;
    }
    out->type = VT_F32;
    out->n = n;
    out->data = out->owned = f;
  } else {
    snprintf(msg, sizeof msg,
             "expected a vector as a BLOB or JSON TEXT, got %s",
             sql_type_name(vtype));
    vec_error(ctx, what, msg);
    return -1;
  }

  int nan = 0;
  size_t bad = scan_elements(out, &nan);
  if (bad < out->n) {
    snprintf(msg, sizeof msg, "element %zu is %s", bad,
             nan ? "NaN" : "infinite");
    vec_error(ctx, what, msg);
    vec_arg_free(out);
    return -1;
  }
  return 0;
}

/* Make a float32 copy of an f16 argument (no-op for f32).  0 or -1 (OOM). */
static int vec_arg_to_f32(sqlite3_context *ctx, vec_arg *a) {
  if (a->type == VT_F32) return 0;
  float *f = vec_alloc(ctx, a->n * sizeof *f);
  if (!f) return -1;
  k_get()->f16_to_f32(a->data, f, a->n);
  vec_arg_take(a, f, VT_F32);
  return 0;
}

/* Round an f32 argument to float16 in place (no-op for f16).  0, or -1
** with the function's error set (out of memory; an element beyond the
** float16 range). */
static int vec_arg_to_f16(sqlite3_context *ctx, vec_arg *a) {
  if (a->type == VT_F16) return 0;
  const float *f = a->data;
  uint16_t *h = vec_alloc(ctx, a->n * sizeof *h);
  if (!h) return -1;
  k_get()->f32_to_f16(f, h, a->n);
  for (size_t i = 0; i < a->n; i++) {
    if ((h[i] & 0x7c00u) == 0x7c00u) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "element %zu (%g) is outside the float16 range (largest "
               "finite magnitude 65504)",
               i, (double)f[i]);
      vec_error(ctx, "", msg);
      free(h);
      return -1;
    }
  }
  vec_arg_take(a, h, VT_F16);
  return 0;
}

/* Set a vector result, tagged with its subtype.  Takes a->owned if set. */
static void vec_result(sqlite3_context *ctx, vec_arg *a) {
  size_t bytes = a->n * (a->type == VT_F16 ? 2 : 4);
  if (a->owned) {
    sqlite3_result_blob64(ctx, a->owned, bytes, free);
    a->owned = NULL;
  } else {
    sqlite3_result_blob64(ctx, a->data, bytes, SQLITE_TRANSIENT);
  }
  sqlite3_result_subtype(ctx, a->type == VT_F16 ? EXT_SUBTYPE_F16
                                                : EXT_SUBTYPE_F32);
}

/* The vector v as the function's result, its elements of type to (VT_F32
** or VT_F16). */
static void vec_convert(sqlite3_context *ctx, sqlite3_value *v, int to) {
  vec_arg a;
  if (vec_arg_read(ctx, v, "", VT_F32, &a)) return;
  if ((to == VT_F16 ? vec_arg_to_f16(ctx, &a) : vec_arg_to_f32(ctx, &a)) == 0) vec_result(ctx, &a);
  vec_arg_free(&a);
}

/* vec_f32(v): v as a float32 BLOB. */
static void fn_vec_f32(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_convert(ctx, argv[0], VT_F32);
}

/* vec_f16(v): v as an IEEE binary16 BLOB, rounded to nearest-even. */
static void fn_vec_f16(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_convert(ctx, argv[0], VT_F16);
}

/* vec_as_f16(blob): the same bytes, declared to be float16 elements (for
** BLOBs read back from a table, which have lost vec_f16's subtype). */
static void fn_vec_as_f16(sqlite3_context *ctx, int argc,
                          sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    char msg[96];
    snprintf(msg, sizeof msg, "expected a float16 BLOB, got %s",
             sql_type_name(sqlite3_value_type(argv[0])));
    vec_error(ctx, "", msg);
    return;
  }
  if (vec_arg_read(ctx, argv[0], "", VT_F16, &a)) return;
  if (a.type != VT_F16) {
    vec_error(ctx, "", "the BLOB is tagged float32 (by vec_f32); use vec_f16 "
                       "to convert it");
    vec_arg_free(&a);
    return;
  }
  vec_result(ctx, &a);
  vec_arg_free(&a);
}

/* vec_to_json(v [, exact]): JSON text.  By default each element is printed
** with "%f", as sqlite-vec does; with exact true, as the shortest decimal
** that reads back to the same float32. */
static void fn_vec_to_json(sqlite3_context *ctx, int argc,
                           sqlite3_value **argv) {
  vec_arg a;
  int exact = argc > 1 && sqlite3_value_int(argv[1]) != 0;
  if (vec_arg_read(ctx, argv[0], "", VT_F32, &a)) return;
  if (vec_arg_to_f32(ctx, &a)) {
    vec_arg_free(&a);
    return;
  }
  const float *f = a.data;
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  char buf[32];
  sqlite3_str_appendchar(s, 1, '[');
  for (size_t i = 0; i < a.n; i++) {
    if (i) sqlite3_str_appendchar(s, 1, ',');
    if (exact) {
      size_t w = util_f32_shortest(f[i], buf);
      sqlite3_str_append(s, buf, (int)w);
    } else {
      sqlite3_str_appendf(s, "%f", (double)f[i]);
    }
  }
  sqlite3_str_appendchar(s, 1, ']');
  vec_arg_free(&a);
  ext_result_json(ctx, s);
}

/* vec_length(v): number of elements. */
static void fn_vec_length(sqlite3_context *ctx, int argc,
                          sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_read(ctx, argv[0], "", VT_F32, &a)) return;
  sqlite3_result_int64(ctx, (sqlite3_int64)a.n);
  vec_arg_free(&a);
}

/* vec_type(v): 'float32' or 'float16'. */
static void fn_vec_type(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_read(ctx, argv[0], "", VT_F32, &a)) return;
  sqlite3_result_text(ctx, a.type == VT_F16 ? "float16" : "float32", -1,
                      SQLITE_STATIC);
  vec_arg_free(&a);
}

typedef enum { DIST_L2, DIST_COS, DIST_DOT } dist_kind;

/* Whether the float kernels can score this vector without overflow or
** underflow: every |element| at most 2^50 and the largest at least 2^-50
** (or all zero), and at most 2^20 elements, so that squares stay normal
** and their sums finite.  float16 vectors always qualify. */
static int float_safe(const vec_arg *a) {
  if (a->type == VT_F16) return 1;
  if (a->n > ((size_t)1 << 20)) return 0;
  return a->amax == 0.0f || (a->amax >= 0x1p-50f && a->amax <= 0x1p50f);
}

/* The distance in double precision, for vectors the float kernels cannot
** take (both float32 here). */
static double distance_double(dist_kind kind, const float *a, const float *b,
                              size_t n) {
  double ab = 0.0, aa = 0.0, bb = 0.0, dd = 0.0;
  for (size_t i = 0; i < n; i++) {
    double x = a[i], y = b[i];
    ab += x * y;
    aa += x * x;
    bb += y * y;
    dd += (x - y) * (x - y);
  }
  if (kind == DIST_L2) return sqrt(dd);
  return kind == DIST_DOT ? ab : k_cos_finish(ab, aa, bb);
}

/* The distance functions share one body; which one is in the name. */
static void vec_distance(sqlite3_context *ctx, sqlite3_value **argv,
                         dist_kind kind) {
  vec_arg a, b;
  char msg[160];
  if (vec_arg_read(ctx, argv[0], "first argument: ", VT_F32, &a)) return;
  if (vec_arg_read(ctx, argv[1], "second argument: ", VT_F32, &b)) {
    vec_arg_free(&a);
    return;
  }
  if (a.n != b.n) {
    snprintf(msg, sizeof msg,
             "dimension mismatch: the first vector has %zu elements, the "
             "second has %zu",
             a.n, b.n);
    vec_error(ctx, "", msg);
    goto done;
  }
  if (kind == DIST_COS && (a.amax == 0.0f || b.amax == 0.0f)) {
    vec_error(ctx, a.amax == 0.0f ? "first argument: " : "second argument: ",
              "cosine distance is undefined for a zero vector");
    goto done;
  }
  /* Kernels take an f32 query against f32 or f16 rows: order the pair so
     the f32 one comes first (all three distances are symmetric). */
  vec_arg *q = &a, *r = &b;
  if (q->type == VT_F16) {
    q = &b;
    r = &a;
  }
  if (q->type == VT_F16 && vec_arg_to_f32(ctx, q)) goto done;

  double d = NAN;
  if (float_safe(q) && float_safe(r)) {
    const k_ops *k = k_get();
    float f;
    if (r->type == VT_F32) {
      f = kind == DIST_L2    ? k->l2sq_f32(q->data, r->data, q->n)
          : kind == DIST_COS ? k->cos_f32(q->data, r->data, q->n)
                             : k->dot_f32(q->data, r->data, q->n);
    } else {
      f = kind == DIST_L2    ? k->l2sq_f16(q->data, r->data, q->n)
          : kind == DIST_COS ? k->cos_f16(q->data, r->data, q->n)
                             : k->dot_f16(q->data, r->data, q->n);
    }
    d = kind == DIST_L2 ? sqrt((double)f) : (double)f;
  }
  if (!isfinite(d)) { /* out of float's range: redo it in double */
    if (vec_arg_to_f32(ctx, r)) goto done;
    d = distance_double(kind, q->data, r->data, q->n);
  }
  sqlite3_result_double(ctx, d);
done:
  vec_arg_free(&a);
  vec_arg_free(&b);
}

static void fn_vec_distance_l2(sqlite3_context *ctx, int argc,
                               sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_L2);
}

static void fn_vec_distance_cosine(sqlite3_context *ctx, int argc,
                                   sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_COS);
}

static void fn_vec_dot(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_DOT);
}

/* vec_normalize(v): v / |v|, in v's element type. */
static void fn_vec_normalize(sqlite3_context *ctx, int argc,
                             sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_read(ctx, argv[0], "", VT_F32, &a)) return;
  int type = a.type;
  if (vec_arg_to_f32(ctx, &a)) goto done;
  if (!a.owned) { /* the result is built in place: own a copy */
    float *f = vec_copy(ctx, a.data, a.n * sizeof *f);
    if (!f) goto done;
    vec_arg_take(&a, f, VT_F32);
  }
  float *f = a.owned;
  double ss = 0.0;
  for (size_t i = 0; i < a.n; i++) ss += (double)f[i] * (double)f[i];
  if (ss == 0.0) {
    vec_error(ctx, "", "cannot normalize a zero vector");
    goto done;
  }
  double norm = sqrt(ss);
  for (size_t i = 0; i < a.n; i++) f[i] = (float)((double)f[i] / norm);
  if (type == VT_F16 && vec_arg_to_f16(ctx, &a)) goto done;
  vec_result(ctx, &a);
done:
  vec_arg_free(&a);
}

int ext_vec_register(sqlite3 *db) {
  static const struct {
    const char *name;
    int nArg;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
    int flags;
  } fns[] = {
      {"vec_f32", 1, fn_vec_f32, SQLITE_RESULT_SUBTYPE},
      {"vec_f16", 1, fn_vec_f16, SQLITE_RESULT_SUBTYPE},
      {"vec_as_f16", 1, fn_vec_as_f16, SQLITE_RESULT_SUBTYPE},
      {"vec_to_json", 1, fn_vec_to_json, SQLITE_RESULT_SUBTYPE},
      {"vec_to_json", 2, fn_vec_to_json, SQLITE_RESULT_SUBTYPE},
      {"vec_length", 1, fn_vec_length, 0},
      {"vec_type", 1, fn_vec_type, 0},
      {"vec_distance_l2", 2, fn_vec_distance_l2, 0},
      {"vec_distance_cosine", 2, fn_vec_distance_cosine, 0},
      {"vec_dot", 2, fn_vec_dot, 0},
      {"vec_normalize", 1, fn_vec_normalize, SQLITE_RESULT_SUBTYPE},
  };
  const int base =
      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS | SQLITE_SUBTYPE;
  int rc = SQLITE_OK;
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof fns / sizeof fns[0]; i++)
    rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].nArg,
                                    base | fns[i].flags, (void *)fns[i].name,
                                    fns[i].fn, NULL, NULL, NULL);
  return rc;
}
