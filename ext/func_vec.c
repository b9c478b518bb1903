/*
** ext/func_vec.c - the vector functions, with sqlite-vec's names and
** semantics: vec_f32, vec_f16, vec_int8, vec_bit, vec_as_f16, vec_to_json,
** vec_length, vec_type, the distances (vec_distance_l2, _cosine, _l1,
** _hamming, vec_dot), vec_normalize, vec_quantize_int8,
** vec_quantize_binary, vec_slice, vec_add, vec_sub, vec_version,
** vec_debug, and the table-valued vec_each.
**
** A vector argument is a BLOB (packed little-endian elements) or JSON TEXT
** ('[1, 2.5, -3]', read as float32).  A BLOB's element type is its value
** subtype: float32 (223), bit (224) and int8 (225) as sqlite-vec tags
** them, float16 (230) h5mem's own; an untagged BLOB is float32.  Subtypes
** do not survive storage in a table: vec_as_f16(col), vec_int8(col) and
** vec_bit(col) declare a stored BLOB's type again.  Where sqlite-vec would
** accept NaN, Infinity, half-formed JSON, a zero vector for cosine or an
** int8 sum that wraps around, these functions stop with an error that
** names the problem; docs/SQL.md lists each difference.
*/
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ext.h"
#include "h5mem_commit.h"
#include "k.h"
#include "util/vecjson.h"

/* The sqlite-vec release whose helper functions these match (vec_version). */
#define VEC_COMPAT "v0.1.9"

enum { VT_F32 = 1, VT_F16 = 2, VT_I8 = 3, VT_BIT = 4 };

static const char *vt_name(int type) {
  switch (type) {
  case VT_F16: return "float16";
  case VT_I8: return "int8";
  case VT_BIT: return "bit";
  default: return "float32";
  }
}

static int vt_subtype(int type) {
  switch (type) {
  case VT_F16: return EXT_SUBTYPE_F16;
  case VT_I8: return EXT_SUBTYPE_INT8;
  case VT_BIT: return EXT_SUBTYPE_BIT;
  default: return EXT_SUBTYPE_F32;
  }
}

/* The element type a BLOB's subtype names, or 0 for none of ours. */
static int vt_of_subtype(unsigned sub) {
  switch (sub) {
  case EXT_SUBTYPE_F32: return VT_F32;
  case EXT_SUBTYPE_F16: return VT_F16;
  case EXT_SUBTYPE_INT8: return VT_I8;
  case EXT_SUBTYPE_BIT: return VT_BIT;
  default: return 0;
  }
}

static int vt_is_float(int type) { return type == VT_F32 || type == VT_F16; }

/* A decoded vector argument.  data points into the sqlite3_value or into
** owned, a malloc'd copy that vec_arg_free releases. */
typedef struct vec_arg {
  int type;   /* VT_* */
  size_t n;   /* number of elements (bits for VT_BIT), > 0 */
  float amax; /* largest |element| as read (0 for a zero vector; a bit
                 vector: 1 if any bit is set) */
  const void *data;
  void *owned;
} vec_arg;

/* Bytes of a vector of n elements of type. */
static size_t vt_bytes(int type, size_t n) {
  switch (type) {
  case VT_F16: return n * 2;
  case VT_I8: return n;
  case VT_BIT: return n / 8;
  default: return n * 4;
  }
}

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
  void *p = malloc(bytes ? bytes : 1);
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

/* vec_error with a printf message. */
static void vec_errorf(sqlite3_context *ctx, const char *what, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));
static void vec_errorf(sqlite3_context *ctx, const char *what, const char *fmt,
                       ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  vec_error(ctx, what, msg);
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
  } else if (a->type == VT_F16) {
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
  } else if (a->type == VT_I8) {
    const int8_t *v = a->data;
    int m = 0;
    for (size_t i = 0; i < a->n; i++) {
      int x = v[i] < 0 ? -v[i] : v[i];
      if (x > m) m = x;
    }
    a->amax = (float)m;
  } else {
    const unsigned char *v = a->data;
    a->amax = 0.0f;
    for (size_t i = 0; i < a->n / 8; i++) {
      if (v[i]) {
        a->amax = 1.0f;
        break;
      }
    }
  }
  return a->n;
}

/* vec_arg_read's result besides 0: an error described in its message
** buffer, or out of memory. */
enum { VEC_EBAD = -1, VEC_ENOMEM = -2 };

/* Decode value v into *out.  raw_blob_type is the type of a BLOB without
** a vector subtype.  0, or VEC_EBAD with a message in msg, or VEC_ENOMEM.
** For callers without a function context (vec_each); functions call
** vec_arg_get. */
static int vec_arg_decode(sqlite3_value *v, int raw_blob_type, vec_arg *out,
                          char *msg, size_t msglen) {
  int vtype = sqlite3_value_type(v);
  memset(out, 0, sizeof *out);

  if (vtype == SQLITE_BLOB) {
    int type = vt_of_subtype(sqlite3_value_subtype(v));
    if (!type) type = raw_blob_type;
    const void *p = sqlite3_value_blob(v);
    size_t bytes = (size_t)sqlite3_value_bytes(v);
    if (bytes == 0) {
      snprintf(msg, msglen, "zero-length vectors are not supported");
      return VEC_EBAD;
    }
    size_t esz = vt_bytes(type, 1);
    if (type != VT_BIT && bytes % esz) {
      snprintf(msg, msglen,
               "a %s vector BLOB must be a multiple of %zu bytes long, got %zu "
               "bytes",
               vt_name(type), esz, bytes);
      return VEC_EBAD;
    }
    if (type == VT_BIT && bytes > SIZE_MAX / 8) {
      snprintf(msg, msglen, "a bit vector BLOB of %zu bytes is too long", bytes);
      return VEC_EBAD;
    }
    out->type = type;
    out->n = type == VT_BIT ? bytes * 8 : bytes / esz;
    out->data = p;
    if (esz > 1 && (uintptr_t)p % esz) { /* SQLite does not promise aligned BLOBs */
      out->owned = malloc(bytes);
      if (!out->owned) return VEC_ENOMEM;
      memcpy(out->owned, p, bytes);
      out->data = out->owned;
    }
  } else if (vtype == SQLITE_TEXT) {
    const char *s = (const char *)sqlite3_value_text(v);
    size_t len = (size_t)sqlite3_value_bytes(v);
    float *f = NULL;
    size_t n = 0;
    if (!s) return VEC_ENOMEM;
    if (util_json_to_f32(s, len, &f, &n, msg, msglen)) return VEC_EBAD;
    if (n == 0) {
      snprintf(msg, msglen, "zero-length vectors are not supported");
      return VEC_EBAD;
    }
    out->type = VT_F32;
    out->n = n;
    out->data = out->owned = f;
  } else {
    snprintf(msg, msglen, "expected a vector as a BLOB or JSON TEXT, got %s",
             sql_type_name(vtype));
    return VEC_EBAD;
  }

  int nan = 0;
  size_t bad = scan_elements(out, &nan);
  if (bad < out->n) {
    snprintf(msg, msglen, "element %zu is %s", bad, nan ? "NaN" : "infinite");
    vec_arg_free(out);
    return VEC_EBAD;
  }
  return 0;
}

/* vec_arg_decode for a function: on error sets the function's result to
** an error that starts with what ("" or "second argument: ") and returns
** -1. */
static int vec_arg_get(sqlite3_context *ctx, sqlite3_value *v,
                       const char *what, int raw_blob_type, vec_arg *out) {
  char msg[256];
  int rc = vec_arg_decode(v, raw_blob_type, out, msg, sizeof msg);
  if (rc == 0) return 0;
  if (rc == VEC_ENOMEM)
    sqlite3_result_error_nomem(ctx);
  else
    vec_error(ctx, what, msg);
  return -1;
}

/* Make a float32 copy of the argument's elements (no-op for f32): float16
** widened exactly, int8 as its integers, bit as 0 and 1.  0 or -1 (OOM). */
static int vec_arg_to_f32(sqlite3_context *ctx, vec_arg *a) {
  if (a->type == VT_F32) return 0;
  float *f = vec_alloc(ctx, a->n * sizeof *f);
  if (!f) return -1;
  if (a->type == VT_F16) {
    k_get()->f16_to_f32(a->data, f, a->n);
  } else if (a->type == VT_I8) {
    const int8_t *q = a->data;
    for (size_t i = 0; i < a->n; i++) f[i] = (float)q[i];
  } else {
    const unsigned char *b = a->data;
    for (size_t i = 0; i < a->n; i++) f[i] = (float)((b[i / 8] >> (i % 8)) & 1);
  }
  vec_arg_take(a, f, VT_F32);
  return 0;
}

/* Round the argument to float16 in place (no-op for f16).  0, or -1 with
** the function's error set (out of memory; an element beyond the float16
** range). */
static int vec_arg_to_f16(sqlite3_context *ctx, vec_arg *a) {
  if (a->type == VT_F16) return 0;
  if (vec_arg_to_f32(ctx, a)) return -1;
  const float *f = a->data;
  uint16_t *h = vec_alloc(ctx, a->n * sizeof *h);
  if (!h) return -1;
  k_get()->f32_to_f16(f, h, a->n);
  for (size_t i = 0; i < a->n; i++) {
    if ((h[i] & 0x7c00u) == 0x7c00u) {
      vec_errorf(ctx, "",
                 "element %zu (%g) is outside the float16 range (largest "
                 "finite magnitude 65504)",
                 i, (double)f[i]);
      free(h);
      return -1;
    }
  }
  vec_arg_take(a, h, VT_F16);
  return 0;
}

/* Set a vector result, tagged with its subtype.  Takes a->owned if set. */
static void vec_result(sqlite3_context *ctx, vec_arg *a) {
  size_t bytes = vt_bytes(a->type, a->n);
  if (a->owned) {
    sqlite3_result_blob64(ctx, a->owned, bytes, free);
    a->owned = NULL;
  } else {
    sqlite3_result_blob64(ctx, a->data, bytes, SQLITE_TRANSIENT);
  }
  sqlite3_result_subtype(ctx, (unsigned)vt_subtype(a->type));
}

/* Read both vector arguments of a two-vector function into *a and *b.
** float32 and float16 mix; any other pair must be of one type, and the
** two of one length.  0, or -1 with the function's error set (nothing to
** free then). */
static int vec_pair_get(sqlite3_context *ctx, sqlite3_value **argv,
                        vec_arg *a, vec_arg *b) {
  if (vec_arg_get(ctx, argv[0], "first argument: ", VT_F32, a)) return -1;
  if (vec_arg_get(ctx, argv[1], "second argument: ", VT_F32, b)) {
    vec_arg_free(a);
    return -1;
  }
  if (a->type != b->type && !(vt_is_float(a->type) && vt_is_float(b->type))) {
    vec_errorf(ctx, "",
               "type mismatch: the first vector is %s, the second is %s",
               vt_name(a->type), vt_name(b->type));
  } else if (a->n != b->n) {
    vec_errorf(ctx, "",
               "dimension mismatch: the first vector has %zu elements, the "
               "second has %zu",
               a->n, b->n);
  } else {
    return 0;
  }
  vec_arg_free(a);
  vec_arg_free(b);
  return -1;
}

/* The vector v as the function's result, its elements of type to (VT_F32
** or VT_F16). */
static void vec_convert(sqlite3_context *ctx, sqlite3_value *v, int to) {
  vec_arg a;
  if (vec_arg_get(ctx, v, "", VT_F32, &a)) return;
  if ((to == VT_F16 ? vec_arg_to_f16(ctx, &a) : vec_arg_to_f32(ctx, &a)) == 0)
    vec_result(ctx, &a);
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

/* The BLOB argument of vec_as_f16, vec_int8 and vec_bit, which declare
** raw bytes to hold elements of type: untagged or already of type.  0, or
** -1 with the function's error set.  convert names the function that
** converts a vector of another type. */
static int vec_declare(sqlite3_context *ctx, sqlite3_value *v, int type,
                       const char *convert, vec_arg *a) {
  int sub = vt_of_subtype(sqlite3_value_subtype(v));
  if (sub && sub != type) {
    vec_errorf(ctx, "",
               "the BLOB is tagged %s; %s declares untagged bytes to be %s "
               "(use %s to convert a vector)",
               vt_name(sub), (const char *)sqlite3_user_data(ctx),
               vt_name(type), convert);
    return -1;
  }
  return vec_arg_get(ctx, v, "", type, a);
}

/* vec_as_f16(blob): the same bytes, declared to be float16 elements (for
** BLOBs read back from a table, which have lost vec_f16's subtype). */
static void fn_vec_as_f16(sqlite3_context *ctx, int argc,
                          sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    vec_errorf(ctx, "", "expected a float16 BLOB, got %s",
               sql_type_name(sqlite3_value_type(argv[0])));
    return;
  }
  if (vec_declare(ctx, argv[0], VT_F16, "vec_f16", &a)) return;
  vec_result(ctx, &a);
  vec_arg_free(&a);
}

/* vec_int8(v): an int8 vector from a BLOB (one signed byte per element)
** or a JSON array of integers from -128 to 127. */
static void fn_vec_int8(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  int vtype = sqlite3_value_type(argv[0]);
  if (vtype == SQLITE_TEXT) {
    const char *s = (const char *)sqlite3_value_text(argv[0]);
    size_t len = (size_t)sqlite3_value_bytes(argv[0]);
    int8_t *q = NULL;
    size_t n = 0;
    char msg[256];
    if (!s) {
      sqlite3_result_error_nomem(ctx);
      return;
    }
    if (util_json_to_i8(s, len, &q, &n, msg, sizeof msg)) {
      vec_error(ctx, "", msg);
      return;
    }
    if (n == 0) {
      vec_error(ctx, "", "zero-length vectors are not supported");
      return;
    }
    memset(&a, 0, sizeof a);
    a.type = VT_I8;
    a.n = n;
    a.data = a.owned = q;
  } else if (vtype == SQLITE_BLOB) {
    if (vec_declare(ctx, argv[0], VT_I8, "vec_quantize_int8", &a)) return;
  } else {
    vec_errorf(ctx, "",
               "expected an int8 vector as a BLOB or a JSON array of "
               "integers, got %s",
               sql_type_name(vtype));
    return;
  }
  vec_result(ctx, &a);
  vec_arg_free(&a);
}

/* vec_bit(blob): a bit vector, 8 elements per byte, element i in bit
** i % 8 (least significant first) of byte i / 8. */
static void fn_vec_bit(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (sqlite3_value_type(argv[0]) != SQLITE_BLOB) {
    vec_errorf(ctx, "", "expected a bit vector as a BLOB, got %s",
               sql_type_name(sqlite3_value_type(argv[0])));
    return;
  }
  if (vec_declare(ctx, argv[0], VT_BIT, "vec_quantize_binary", &a)) return;
  vec_result(ctx, &a);
  vec_arg_free(&a);
}

/* Element i of a bit vector: 0 or 1. */
static int bit_at(const void *data, size_t i) {
  return (((const unsigned char *)data)[i / 8] >> (i % 8)) & 1;
}

/* vec_to_json(v [, exact]): JSON text.  By default each float element is
** printed with "%f", as sqlite-vec does; with exact true, as the shortest
** decimal that reads back to the same float32.  int8 and bit elements are
** integers. */
static void fn_vec_to_json(sqlite3_context *ctx, int argc,
                           sqlite3_value **argv) {
  vec_arg a;
  int exact = argc > 1 && sqlite3_value_int(argv[1]) != 0;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  if (a.type == VT_F16 && vec_arg_to_f32(ctx, &a)) {
    vec_arg_free(&a);
    return;
  }
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  char buf[32];
  sqlite3_str_appendchar(s, 1, '[');
  for (size_t i = 0; i < a.n; i++) {
    if (i) sqlite3_str_appendchar(s, 1, ',');
    if (a.type == VT_I8) {
      sqlite3_str_appendf(s, "%d", ((const int8_t *)a.data)[i]);
    } else if (a.type == VT_BIT) {
      sqlite3_str_appendchar(s, 1, (char)('0' + bit_at(a.data, i)));
    } else if (exact) {
      size_t w = util_f32_shortest(((const float *)a.data)[i], buf);
      sqlite3_str_append(s, buf, (int)w);
    } else {
      sqlite3_str_appendf(s, "%f", (double)((const float *)a.data)[i]);
    }
  }
  sqlite3_str_appendchar(s, 1, ']');
  vec_arg_free(&a);
  ext_result_json(ctx, s);
}

/* vec_length(v): number of elements (bits of a bit vector). */
static void fn_vec_length(sqlite3_context *ctx, int argc,
                          sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  sqlite3_result_int64(ctx, (sqlite3_int64)a.n);
  vec_arg_free(&a);
}

/* vec_type(v): 'float32', 'float16', 'int8' or 'bit'. */
static void fn_vec_type(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  sqlite3_result_text(ctx, vt_name(a.type), -1, SQLITE_STATIC);
  vec_arg_free(&a);
}

typedef enum { DIST_L2, DIST_COS, DIST_DOT, DIST_L1, DIST_HAM } dist_kind;

static const char *dist_name(dist_kind kind) {
  switch (kind) {
  case DIST_L2: return "L2 distance";
  case DIST_COS: return "cosine distance";
  case DIST_DOT: return "the dot product";
  case DIST_L1: return "L1 distance";
  default: return "hamming distance";
  }
}

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

/* Differing bits of a[0..bytes) and b[0..bytes). */
static uint64_t hamming(const unsigned char *a, const unsigned char *b,
                        size_t bytes) {
  uint64_t d = 0;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t x, y;
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    d += (uint64_t)__builtin_popcountll(x ^ y);
  }
  for (; i < bytes; i++) d += (uint64_t)__builtin_popcount(a[i] ^ b[i]);
  return d;
}

/* An int8 pair's distance as the function's result: exact integer sums
** (the kernels'), L1 an INTEGER as sqlite-vec returns it. */
static void distance_i8(sqlite3_context *ctx, dist_kind kind, const int8_t *a,
                        const int8_t *b, size_t n) {
  const k_ops *k = k_get();
  if (kind == DIST_L1) {
    int64_t s = 0;
    for (size_t i = 0; i < n; i++) s += a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    sqlite3_result_int64(ctx, s);
  } else if (kind == DIST_L2) {
    sqlite3_result_double(ctx, sqrt((double)k->l2sq_i8(a, 1.0f, b, 1.0f, n)));
  } else if (kind == DIST_COS) {
    sqlite3_result_double(ctx, (double)k->cos_i8(a, b, n));
  } else {
    sqlite3_result_double(ctx, (double)k->dot_i8(a, 1.0f, b, 1.0f, n));
  }
}

/* The distance functions share one body; which one is in the name. */
static void vec_distance(sqlite3_context *ctx, sqlite3_value **argv,
                         dist_kind kind) {
  vec_arg a, b;
  if (vec_pair_get(ctx, argv, &a, &b)) return;
  if (a.type == VT_BIT) {
    if (kind == DIST_HAM)
      sqlite3_result_double(ctx, (double)hamming(a.data, b.data, a.n / 8));
    else
      vec_errorf(ctx, "",
                 "%s is not defined for bit vectors (use "
                 "vec_distance_hamming)",
                 dist_name(kind));
    goto done;
  }
  if (kind == DIST_HAM) {
    vec_errorf(ctx, "",
               "hamming distance needs bit vectors (from vec_bit or "
               "vec_quantize_binary), not %s%s%s",
               vt_name(a.type), a.type == b.type ? "" : " and ",
               a.type == b.type ? "" : vt_name(b.type));
    goto done;
  }
  if (kind == DIST_COS && (a.amax == 0.0f || b.amax == 0.0f)) {
    vec_error(ctx, a.amax == 0.0f ? "first argument: " : "second argument: ",
              "cosine distance is undefined for a zero vector");
    goto done;
  }
  if (a.type == VT_I8) {
    distance_i8(ctx, kind, a.data, b.data, a.n);
    goto done;
  }
  if (kind == DIST_L1) { /* in double, as sqlite-vec sums it */
    if (vec_arg_to_f32(ctx, &a) || vec_arg_to_f32(ctx, &b)) goto done;
    const float *x = a.data, *y = b.data;
    double s = 0.0;
    for (size_t i = 0; i < a.n; i++) s += fabs((double)x[i] - (double)y[i]);
    sqlite3_result_double(ctx, s);
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

static void fn_vec_distance_l1(sqlite3_context *ctx, int argc,
                               sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_L1);
}

static void fn_vec_distance_hamming(sqlite3_context *ctx, int argc,
                                    sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_HAM);
}

static void fn_vec_dot(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_distance(ctx, argv, DIST_DOT);
}

/* vec_normalize(v): v / |v|, in v's element type (float32 or float16). */
static void fn_vec_normalize(sqlite3_context *ctx, int argc,
                             sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  int type = a.type;
  if (!vt_is_float(type)) {
    vec_errorf(ctx, "",
               "only float32 and float16 vectors can be normalized, not %s",
               vt_name(type));
    goto done;
  }
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

/* vec_quantize_binary(v): a bit vector with element i set where v's
** element i is above zero; v's length must be a multiple of 8. */
static void fn_vec_quantize_binary(sqlite3_context *ctx, int argc,
                                   sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  if (a.type == VT_BIT) {
    vec_error(ctx, "", "the vector is a bit vector already; binary "
                       "quantization takes float32, float16 or int8");
    goto done;
  }
  if (a.n % 8) {
    vec_errorf(ctx, "",
               "binary quantization needs a length divisible by 8, got %zu "
               "elements",
               a.n);
    goto done;
  }
  if (a.type == VT_F16 && vec_arg_to_f32(ctx, &a)) goto done;
  unsigned char *out = vec_alloc(ctx, a.n / 8);
  if (!out) goto done;
  memset(out, 0, a.n / 8);
  for (size_t i = 0; i < a.n; i++) {
    int set = a.type == VT_I8 ? ((const int8_t *)a.data)[i] > 0
                              : ((const float *)a.data)[i] > 0.0f;
    out[i / 8] |= (unsigned char)(set << (i % 8));
  }
  vec_arg_take(&a, out, VT_BIT);
  vec_result(ctx, &a);
done:
  vec_arg_free(&a);
}

/* vec_quantize_int8(v, 'unit'): each element x of v, taken to lie in
** [-1, 1], as the int8 trunc((x + 1) / (2/255) - 128) clamped to
** [-128, 127]: sqlite-vec's formula and its float32 step, so that both
** give the same codes. */
static void fn_vec_quantize_int8(sqlite3_context *ctx, int argc,
                                 sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "first argument: ", VT_F32, &a)) return;
  if (!vt_is_float(a.type)) {
    vec_errorf(ctx, "first argument: ",
               "expected a float32 or float16 vector, not %s",
               vt_name(a.type));
    goto done;
  }
  sqlite3_value *how = argv[1];
  if (sqlite3_value_type(how) != SQLITE_TEXT ||
      sqlite3_value_bytes(how) != 4 ||
      sqlite3_stricmp((const char *)sqlite3_value_text(how), "unit") != 0) {
    if (sqlite3_value_type(how) == SQLITE_TEXT)
      vec_errorf(ctx, "second argument: ",
                 "the quantization must be 'unit' (elements in [-1, 1]), not "
                 "'%.40s'",
                 (const char *)sqlite3_value_text(how));
    else
      vec_errorf(ctx, "second argument: ",
                 "the quantization must be 'unit' (elements in [-1, 1]), not "
                 "%s",
                 sql_type_name(sqlite3_value_type(how)));
    goto done;
  }
  if (vec_arg_to_f32(ctx, &a)) goto done;
  int8_t *out = vec_alloc(ctx, a.n);
  if (!out) goto done;
  const float step = (float)(2.0 / 255.0);
  const float *f = a.data;
  for (size_t i = 0; i < a.n; i++) {
    double v = ((double)f[i] + 1.0) / (double)step - 128.0;
    if (v > 127.0) v = 127.0;
    if (v < -128.0) v = -128.0;
    out[i] = (int8_t)v; /* toward zero, as sqlite-vec's cast */
  }
  vec_arg_take(&a, out, VT_I8);
  vec_result(ctx, &a);
done:
  vec_arg_free(&a);
}

/* vec_add(a, b) and vec_sub(a, b): element by element, in the arguments'
** type (float32 when float32 and float16 mix).  An int8 result outside
** -128..127 or a float beyond its range is an error. */
static void vec_arith(sqlite3_context *ctx, sqlite3_value **argv, int sign) {
  vec_arg a, b;
  const char *op = sign > 0 ? "+" : "-";
  if (vec_pair_get(ctx, argv, &a, &b)) return;
  if (a.type == VT_BIT) {
    vec_errorf(ctx, "", "cannot %s bit vectors", sign > 0 ? "add" : "subtract");
    goto done;
  }
  if (a.type == VT_I8) {
    const int8_t *x = a.data, *y = b.data;
    int8_t *out = vec_alloc(ctx, a.n);
    if (!out) goto done;
    for (size_t i = 0; i < a.n; i++) {
      int r = sign > 0 ? x[i] + y[i] : x[i] - y[i];
      if (r < -128 || r > 127) {
        vec_errorf(ctx, "",
                   "element %zu: %d %s %d = %d is outside the int8 range "
                   "(-128 to 127)",
                   i, x[i], op, y[i], r);
        free(out);
        goto done;
      }
      out[i] = (int8_t)r;
    }
    vec_arg_take(&a, out, VT_I8);
    vec_result(ctx, &a);
    goto done;
  }
  int half = a.type == VT_F16 && b.type == VT_F16;
  if (vec_arg_to_f32(ctx, &a) || vec_arg_to_f32(ctx, &b)) goto done;
  const float *x = a.data, *y = b.data;
  float *out = vec_alloc(ctx, a.n * sizeof *out);
  if (!out) goto done;
  for (size_t i = 0; i < a.n; i++) {
    out[i] = sign > 0 ? x[i] + y[i] : x[i] - y[i];
    if (!isfinite(out[i])) {
      vec_errorf(ctx, "", "element %zu: %g %s %g is outside the float32 range",
                 i, (double)x[i], op, (double)y[i]);
      free(out);
      goto done;
    }
  }
  vec_arg_take(&a, out, VT_F32);
  if (half && vec_arg_to_f16(ctx, &a)) goto done;
  vec_result(ctx, &a);
done:
  vec_arg_free(&a);
  vec_arg_free(&b);
}

static void fn_vec_add(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_arith(ctx, argv, 1);
}

static void fn_vec_sub(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  vec_arith(ctx, argv, -1);
}

/* vec_slice(v, start, end): elements start .. end-1 of v, in v's type;
** 0 <= start < end <= length, and multiples of 8 for a bit vector. */
static void fn_vec_slice(sqlite3_context *ctx, int argc,
                         sqlite3_value **argv) {
  vec_arg a;
  (void)argc;
  if (vec_arg_get(ctx, argv[0], "", VT_F32, &a)) return;
  static const char *const names[2] = {"start", "end"};
  sqlite3_int64 ix[2];
  for (int k = 0; k < 2; k++) {
    int t = sqlite3_value_type(argv[1 + k]);
    if (t != SQLITE_INTEGER) {
      vec_errorf(ctx, "", "%s must be an integer, not %s", names[k],
                 sql_type_name(t));
      goto done;
    }
    ix[k] = sqlite3_value_int64(argv[1 + k]);
    if (ix[k] < 0) {
      vec_errorf(ctx, "", "%s (%lld) must not be negative", names[k],
                 (long long)ix[k]);
      goto done;
    }
  }
  for (int k = 0; k < 2; k++) {
    if ((sqlite3_uint64)ix[k] > a.n) {
      vec_errorf(ctx, "", "%s (%lld) is past the end of the vector (%zu element%s)",
                 names[k], (long long)ix[k], a.n, a.n == 1 ? "" : "s");
      goto done;
    }
  }
  if (ix[0] > ix[1]) {
    vec_errorf(ctx, "", "start (%lld) is after end (%lld)", (long long)ix[0],
               (long long)ix[1]);
    goto done;
  }
  if (ix[0] == ix[1]) {
    vec_errorf(ctx, "",
               "start and end are both %lld: the slice would be empty "
               "(zero-length vectors are not supported)",
               (long long)ix[0]);
    goto done;
  }
  if (a.type == VT_BIT && (ix[0] % 8 || ix[1] % 8)) {
    vec_errorf(ctx, "",
               "a bit vector is sliced at multiples of 8: %s (%lld) is not one",
               ix[0] % 8 ? "start" : "end", (long long)(ix[0] % 8 ? ix[0] : ix[1]));
    goto done;
  }
  vec_arg r = {a.type, (size_t)(ix[1] - ix[0]), 0.0f,
               (const unsigned char *)a.data + vt_bytes(a.type, (size_t)ix[0]),
               NULL};
  vec_result(ctx, &r); /* copies: r points into a */
done:
  vec_arg_free(&a);
}

/* vec_version(): sqlite-vec's release whose helpers these match, and
** h5mem's: 'v0.1.9+h5mem.0.1.0' (semver build metadata: compares equal to
** v0.1.9). */
static void fn_vec_version(sqlite3_context *ctx, int argc,
                           sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(ctx, VEC_COMPAT "+h5mem." PACKAGE_VERSION, -1,
                      SQLITE_STATIC);
}

/* vec_debug(): four lines, as sqlite-vec's: the version, the commit, the
** SIMD level in use (and those this CPU runs), the levels compiled in. */
static void fn_vec_debug(sqlite3_context *ctx, int argc,
                         sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  char usable[128];
  k_levels_usable(usable, sizeof usable);
  sqlite3_str *s = sqlite3_str_new(sqlite3_context_db_handle(ctx));
  sqlite3_str_appendf(s,
                      "Version: " VEC_COMPAT "+h5mem." PACKAGE_VERSION
                      "\nCommit: %s\nSIMD: %s (usable here: %s)\nBuild flags:",
                      H5MEM_COMMIT, k_get()->name, usable);
  for (int i = 0; i < K_NLEVEL; i++)
    if (k_compiled_in((k_level)i))
      sqlite3_str_appendf(s, " %s", k_level_name((k_level)i));
  int err = sqlite3_str_errcode(s);
  int len = sqlite3_str_length(s);
  char *z = sqlite3_str_finish(s);
  if (err || !z) {
    sqlite3_free(z);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, z, len, sqlite3_free);
}

/* ---- vec_each(v): one row per element ----------------------------------
**
** An eponymous table-valued function, sqlite-vec's columns: rowid (the
** element's index from 0), value (REAL for float32/float16, INTEGER for
** int8 and bit), and the hidden argument vector. */

typedef struct each_cursor {
  sqlite3_vtab_cursor base;
  vec_arg v;      /* the vector; v.owned always set (a copy of the argument) */
  sqlite3_int64 i; /* the current element */
} each_cursor;

enum { EACH_VALUE = 0, EACH_VECTOR = 1 };

static int each_connect(sqlite3 *db, void *aux, int argc,
                        const char *const *argv, sqlite3_vtab **out,
                        char **pzErr) {
  (void)aux;
  (void)argc;
  (void)argv;
  int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(value, vector HIDDEN)");
  if (rc != SQLITE_OK) {
    *pzErr = sqlite3_mprintf("vec_each: cannot declare columns: %s",
                             sqlite3_errmsg(db));
    return rc;
  }
  sqlite3_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  memset(vt, 0, sizeof *vt);
  *out = vt;
  return SQLITE_OK;
}

static int each_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

/* idxNum 1: the vector argument is argv[0]; 0: it is missing (priced out;
** xFilter reports the error if that plan runs all the same). */
static int each_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  (void)vt;
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->iColumn != EACH_VECTOR || c->op != SQLITE_INDEX_CONSTRAINT_EQ)
      continue;
    if (!c->usable) return SQLITE_CONSTRAINT;
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    info->idxNum = 1;
    info->estimatedCost = 100;
    info->estimatedRows = 100;
    return SQLITE_OK;
  }
  info->idxNum = 0;
  info->estimatedCost = 1e99;
  info->estimatedRows = 1000000000;
  return SQLITE_OK;
}

static int each_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  each_cursor *c = sqlite3_malloc(sizeof *c);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, sizeof *c);
  *out = &c->base;
  return SQLITE_OK;
}

static int each_close(sqlite3_vtab_cursor *cur) {
  each_cursor *c = (each_cursor *)cur;
  vec_arg_free(&c->v);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* Set the table's error message "vec_each: msg"; returns SQLITE_ERROR. */
static int each_error(sqlite3_vtab_cursor *cur, const char *msg) {
  sqlite3_vtab *vt = cur->pVtab;
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("vec_each: %s", msg);
  return vt->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

static int each_filter(sqlite3_vtab_cursor *cur, int idxNum,
                       const char *idxStr, int argc, sqlite3_value **argv) {
  (void)idxStr;
  each_cursor *c = (each_cursor *)cur;
  char msg[256];
  vec_arg_free(&c->v);
  memset(&c->v, 0, sizeof c->v);
  c->i = 0;
  if (idxNum != 1 || argc < 1)
    return each_error(cur, "the vector argument is missing: SELECT rowid, "
                           "value FROM vec_each(:vector)");
  int rc = vec_arg_decode(argv[0], VT_F32, &c->v, msg, sizeof msg);
  if (rc == VEC_ENOMEM) return SQLITE_NOMEM;
  if (rc) return each_error(cur, msg);
  if (!c->v.owned) { /* argv[0] lives only as long as this call */
    size_t bytes = vt_bytes(c->v.type, c->v.n);
    void *p = malloc(bytes);
    if (!p) return SQLITE_NOMEM;
    memcpy(p, c->v.data, bytes);
    vec_arg_take(&c->v, p, c->v.type);
  }
  return SQLITE_OK;
}

static int each_next(sqlite3_vtab_cursor *cur) {
  ((each_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int each_eof(sqlite3_vtab_cursor *cur) {
  each_cursor *c = (each_cursor *)cur;
  return c->i >= (sqlite3_int64)c->v.n;
}

static int each_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx,
                       int col) {
  each_cursor *c = (each_cursor *)cur;
  size_t i = (size_t)c->i;
  if (col != EACH_VALUE) return SQLITE_OK; /* the argument: NULL, as sqlite-vec */
  switch (c->v.type) {
  case VT_F32:
    sqlite3_result_double(ctx, (double)((const float *)c->v.data)[i]);
    break;
  case VT_F16: {
    float f;
    k_get()->f16_to_f32((const uint16_t *)c->v.data + i, &f, 1);
    sqlite3_result_double(ctx, (double)f);
    break;
  }
  case VT_I8:
    sqlite3_result_int(ctx, ((const int8_t *)c->v.data)[i]);
    break;
  default:
    sqlite3_result_int(ctx, bit_at(c->v.data, i));
    break;
  }
  return SQLITE_OK;
}

static int each_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((each_cursor *)cur)->i;
  return SQLITE_OK;
}

static sqlite3_module each_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = each_connect,
    .xBestIndex = each_best_index,
    .xDisconnect = each_disconnect,
    .xOpen = each_open,
    .xClose = each_close,
    .xFilter = each_filter,
    .xNext = each_next,
    .xEof = each_eof,
    .xColumn = each_column,
    .xRowid = each_rowid,
};

int ext_vec_register(sqlite3 *db) {
  static const struct {
    const char *name;
    int nArg;
    void (*fn)(sqlite3_context *, int, sqlite3_value **);
    int flags;
  } fns[] = {
      {"vec_f32", 1, fn_vec_f32, SQLITE_RESULT_SUBTYPE},
      {"vec_f16", 1, fn_vec_f16, SQLITE_RESULT_SUBTYPE},
      {"vec_int8", 1, fn_vec_int8, SQLITE_RESULT_SUBTYPE},
      {"vec_bit", 1, fn_vec_bit, SQLITE_RESULT_SUBTYPE},
      {"vec_as_f16", 1, fn_vec_as_f16, SQLITE_RESULT_SUBTYPE},
      {"vec_to_json", 1, fn_vec_to_json, SQLITE_RESULT_SUBTYPE},
      {"vec_to_json", 2, fn_vec_to_json, SQLITE_RESULT_SUBTYPE},
      {"vec_length", 1, fn_vec_length, 0},
      {"vec_type", 1, fn_vec_type, 0},
      {"vec_distance_l2", 2, fn_vec_distance_l2, 0},
      {"vec_distance_cosine", 2, fn_vec_distance_cosine, 0},
      {"vec_distance_l1", 2, fn_vec_distance_l1, 0},
      {"vec_distance_hamming", 2, fn_vec_distance_hamming, 0},
      {"vec_dot", 2, fn_vec_dot, 0},
      {"vec_normalize", 1, fn_vec_normalize, SQLITE_RESULT_SUBTYPE},
      {"vec_quantize_binary", 1, fn_vec_quantize_binary, SQLITE_RESULT_SUBTYPE},
      {"vec_quantize_int8", 2, fn_vec_quantize_int8, SQLITE_RESULT_SUBTYPE},
      {"vec_add", 2, fn_vec_add, SQLITE_RESULT_SUBTYPE},
      {"vec_sub", 2, fn_vec_sub, SQLITE_RESULT_SUBTYPE},
      {"vec_slice", 3, fn_vec_slice, SQLITE_RESULT_SUBTYPE},
      {"vec_version", 0, fn_vec_version, 0},
      {"vec_debug", 0, fn_vec_debug, 0},
  };
  const int base =
      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS | SQLITE_SUBTYPE;
  int rc = SQLITE_OK;
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof fns / sizeof fns[0]; i++)
    rc = sqlite3_create_function_v2(db, fns[i].name, fns[i].nArg,
                                    base | fns[i].flags, (void *)fns[i].name,
                                    fns[i].fn, NULL, NULL, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_module_v2(db, "vec_each", &each_module, NULL, NULL);
  return rc;
}
