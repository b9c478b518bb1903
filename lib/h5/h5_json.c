/*
** lib/h5/h5_json.c - dataset and attribute values as JSON, in the encoding
** of the conformance fixtures (test/data/hdf5/README.md): nested
** arrays in C order, integers exact, floats as the shortest decimal that
** reads back as the same double ("NaN", "Infinity", "-Infinity" as strings),
** strings decoded as UTF-8 (else {"hex": ...}), compounds as objects
** (complex numbers as [re, im]), opaque data as {"hex": ...}, references as
** null.  Values are decoded from the stored bytes in any byte order, bit
** offset, precision and floating-point layout the datatype describes.
*/
#include "config.h"

#include <math.h>
#include <string.h>

#include "h5_int.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/vecjson.h"

/* Beyond this many values and lists, h5_json_values refuses. */
#define H5_JSON_MAX_ITEMS ((uint64_t)1 << 32)

/* Bits [off, off+prec) of the element at p (size bytes), prec <= 64. */
static uint64_t get_bits(const uint8_t *p, uint32_t size, int be, unsigned off,
                         unsigned prec) {
  uint64_t v = 0;
  for (unsigned k = 0; k < prec && k < 64; k++) {
    unsigned bit = off + k, byte = bit / 8;
    if (byte >= size) break;
    uint8_t b = p[be ? size - 1 - byte : byte];
    v |= (uint64_t)((b >> (bit % 8)) & 1u) << k;
  }
  return v;
}

/* A whole little- or big-endian unsigned integer of size <= 8. */
static uint64_t get_uint(const uint8_t *p, uint32_t size, int be) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < size; i++) v = (v << 8) | p[be ? i : size - 1 - i];
  return v;
}

static void put_integer(const h5_type *t, const uint8_t *p, strbuf *o) {
  uint64_t v;
  int is_signed;
  if (h5_elem_int(t, p, &v, &is_signed)) {
    strbuf_puts(o, "null"); /* an enum whose base is no integer */
    return;
  }
  if (is_signed)
    strbuf_printf(o, "%lld", (long long)(int64_t)v);
  else
    strbuf_printf(o, "%llu", (unsigned long long)v);
}

static void put_double(double d, strbuf *o) {
  if (isnan(d)) {
    strbuf_puts(o, "\"NaN\"");
  } else if (isinf(d)) {
    strbuf_puts(o, d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
  } else {
    char buf[48];
    size_t n = util_f64_shortest(d, buf);
    /* a float stays a float for JSON readers, as Python's repr writes it:
    ** 1.0 and -0.0, not 1 and -0 (read back as integers, losing the sign) */
    if (n < sizeof buf - 2 && !memchr(buf, '.', n) && !memchr(buf, 'e', n) &&
        !memchr(buf, 'E', n)) {
      buf[n++] = '.';
      buf[n++] = '0';
    }
    strbuf_append(o, buf, n);
  }
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f,
           m = h & 0x3ff;
  float v;
  if (e == 0)
    v = ldexpf((float)m, -24);
  else if (e == 31)
    v = m ? NAN : INFINITY;
  else
    v = ldexpf((float)(m | 0x400), (int)e - 25);
  return sign ? -v : v;
}

/* Any floating-point layout the datatype message can describe. */
static double decode_float(const h5_type *t, const uint8_t *p) {
  uint8_t tmp[16];
  int be = t->big_endian;
  if (t->vax_order && (t->size == 4 || t->size == 8)) {
    /* VAX: 16-bit little-endian words, most significant word first */
    for (uint32_t w = 0; w < t->size / 2; w++) {
      tmp[2 * w] = p[t->size - 2 - 2 * w];
      tmp[2 * w + 1] = p[t->size - 1 - 2 * w];
    }
    p = tmp;
    be = 0;
  }
  if (!t->vax_order && t->offset == 0 && t->mant_norm == 2 && t->mant_pos == 0) {
    if (t->size == 4 && t->exp_size == 8 && t->mant_size == 23 && t->exp_bias == 127) {
      uint32_t b = (uint32_t)get_uint(p, 4, be);
      float f;
      memcpy(&f, &b, 4);
      return f;
    }
    if (t->size == 8 && t->exp_size == 11 && t->mant_size == 52 && t->exp_bias == 1023) {
      uint64_t b = get_uint(p, 8, be);
      double d;
      memcpy(&d, &b, 8);
      return d;
    }
    if (t->size == 2 && t->exp_size == 5 && t->mant_size == 10 && t->exp_bias == 15)
      return half_to_float((uint16_t)get_uint(p, 2, be));
  }
  unsigned ms = t->mant_size, drop = ms > 64 ? ms - 64 : 0;
  uint64_t sign = get_bits(p, t->size, be, t->sign_pos, 1);
  uint64_t e = get_bits(p, t->size, be, t->exp_pos, t->exp_size);
  uint64_t m = get_bits(p, t->size, be, t->mant_pos + drop, ms - drop);
  uint64_t emax = t->exp_size >= 64 ? UINT64_MAX : (UINT64_C(1) << t->exp_size) - 1;
  int64_t bias = t->exp_bias;
  double v;
  if (!t->vax_order && t->mant_norm == 2 && e == emax) {
    v = m ? NAN : INFINITY;
  } else if (t->mant_norm == 2) {
    int64_t x = e == 0 ? 1 - bias : (int64_t)e - bias;
    double frac = ldexp((double)m, -(int)(ms - drop));
    v = ldexp(e == 0 ? frac : 1.0 + frac, (int)(x < -20000 ? -20000 : x > 20000 ? 20000 : x));
    if (t->vax_order && e == 0) v = 0.0;
  } else {
    /* the leading bit is stored in the mantissa (x87 extended precision;
       libhdf5 describes it as normalization "msb set" or "none") */
    int64_t x = (int64_t)e - bias - (int64_t)(ms - 1) + drop;
    if (e == emax)
      v = (m << 1) ? NAN : INFINITY;
    else
      v = ldexp((double)m, (int)(x < -20000 ? -20000 : x > 20000 ? 20000 : x));
  }
  return sign ? -v : v;
}

/* Whether s[0..n) is well-formed UTF-8 (lib/util/utf8.h; NUL allowed). */
static int utf8_ok(const uint8_t *s, size_t n) { return util_utf8_check((const char *)s, n, 1) == n; }

static void put_hex(const uint8_t *p, size_t n, strbuf *o) {
  static const char hex[] = "0123456789abcdef";
  strbuf_puts(o, "{\"hex\": \"");
  for (size_t i = 0; i < n; i++) {
    char b[2] = {hex[p[i] >> 4], hex[p[i] & 15]};
    strbuf_append(o, b, 2);
  }
  strbuf_puts(o, "\"}");
}

static void put_text(const uint8_t *p, size_t n, strbuf *o) {
  if (utf8_ok(p, n))
    strbuf_json_string(o, (const char *)p, n);
  else
    put_hex(p, n, o);
}

/* A fixed-length string as libhdf5 hands it over: cut at the first NUL
** (null-terminated, null-padded) or without trailing spaces (space-padded). */
static void put_fixed_string(const h5_type *t, const uint8_t *p, strbuf *o) {
  put_text(p, h5_fixed_string_len(t, p), o);
}

static int is_complex(const h5_type *t) {
  return t->cls == H5_CLASS_COMPOUND && t->nmembers == 2 &&
         strcmp(t->members[0].name, "r") == 0 && strcmp(t->members[1].name, "i") == 0 &&
         t->members[0].type->cls == H5_CLASS_FLOAT &&
         t->members[1].type->cls == H5_CLASS_FLOAT &&
         t->members[0].type->size == t->members[1].type->size;
}

static int put_elem(h5_file *f, const h5_type *t, const uint8_t *p, strbuf *o,
                    int depth);

/* n elements of type t at p, shaped by dims[0..rank) */
static int put_array(h5_file *f, const h5_type *t, const uint8_t *p, int rank,
                     const uint32_t *dims32, const uint64_t *dims64, strbuf *o,
                     int depth) {
  if (rank == 0) return put_elem(f, t, p, o, depth);
  uint64_t n = dims32 ? dims32[0] : dims64[0], inner = t->size;
  for (int d = 1; d < rank; d++) inner *= dims32 ? dims32[d] : dims64[d];
  strbuf_putc(o, '[');
  for (uint64_t i = 0; i < n && !strbuf_failed(o); i++) {
    if (i) strbuf_puts(o, ", ");
    int rc = put_array(f, t, p + i * inner, rank - 1, dims32 ? dims32 + 1 : NULL,
                       dims64 ? dims64 + 1 : NULL, o, depth);
    if (rc) return rc;
  }
  strbuf_putc(o, ']');
  return H5_OK;
}

static int put_elem(h5_file *f, const h5_type *t, const uint8_t *p, strbuf *o,
                    int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return h5_err(f, H5_ECORRUPT, "values nested too deeply");
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
    put_integer(t, p, o);
    return H5_OK;
  case H5_CLASS_ENUM:
    put_integer(t->base, p, o);
    return H5_OK;
  case H5_CLASS_FLOAT:
    put_double(decode_float(t, p), o);
    return H5_OK;
  case H5_CLASS_STRING:
    put_fixed_string(t, p, o);
    return H5_OK;
  case H5_CLASS_OPAQUE:
    /* numpy's byte strings stored as opaque by h5py are strings again */
    if (t->tag && strncmp(t->tag, "NUMPY:|S", 8) == 0) {
      size_t n = t->size;
      const uint8_t *z = memchr(p, 0, n);
      put_text(p, z ? (size_t)(z - p) : n, o);
      return H5_OK;
    }
    put_hex(p, t->size, o);
    return H5_OK;
  case H5_CLASS_TIME:
    put_hex(p, t->size, o);
    return H5_OK;
  case H5_CLASS_REFERENCE:
    strbuf_puts(o, "null");
    return H5_OK;
  case H5_CLASS_ARRAY:
    return put_array(f, t->base, p, t->rank, t->dims, NULL, o, depth + 1);
  case H5_CLASS_COMPLEX: /* [re, im], as h5py's complex compounds */
    strbuf_putc(o, '[');
    put_double(decode_float(t->base, p), o);
    strbuf_puts(o, ", ");
    put_double(decode_float(t->base, p + t->base->size), o);
    strbuf_putc(o, ']');
    return H5_OK;
  case H5_CLASS_COMPOUND:
    if (is_complex(t)) {
      strbuf_putc(o, '[');
      put_double(decode_float(t->members[0].type, p + t->members[0].offset), o);
      strbuf_puts(o, ", ");
      put_double(decode_float(t->members[1].type, p + t->members[1].offset), o);
      strbuf_putc(o, ']');
      return H5_OK;
    }
    strbuf_putc(o, '{');
    for (uint32_t i = 0; i < t->nmembers; i++) {
      if (i) strbuf_puts(o, ", ");
      strbuf_json_string(o, t->members[i].name, strlen(t->members[i].name));
      strbuf_puts(o, ": ");
      int rc = put_elem(f, t->members[i].type, p + t->members[i].offset, o, depth + 1);
      if (rc) return rc;
    }
    strbuf_putc(o, '}');
    return H5_OK;
  case H5_CLASS_VLEN: {
    const uint8_t *data;
    size_t len;
    uint32_t count;
    if ((size_t)t->size < 8 + (size_t)f->so)
      return h5_err(f, H5_ECORRUPT, "variable-length element of %u bytes", t->size);
    int rc = h5_vlen_get(f, p, &data, &len, &count);
    if (rc) return rc;
    if (t->vlen_kind == 1) { /* string */
      put_text(data ? data : (const uint8_t *)"", data ? (count < len ? count : len) : 0, o);
      return H5_OK;
    }
    const h5_type *b = t->base;
    if (data && (uint64_t)count * b->size > len)
      return h5_err(f, H5_ECORRUPT, "variable-length sequence of %u elements in %zu bytes",
                    count, len);
    strbuf_putc(o, '[');
    for (uint32_t i = 0; data && i < count; i++) {
      if (i) strbuf_puts(o, ", ");
      rc = put_elem(f, b, data + (size_t)i * b->size, o, depth + 1);
      if (rc) return rc;
    }
    strbuf_putc(o, ']');
    return H5_OK;
  }
  default:
    return h5_err(f, H5_EUNSUPPORTED, "values of datatype class %d", (int)t->cls);
  }
}

int h5_json_values(h5_file *f, const h5_type *t, const uint8_t *data,
                   int rank, const uint64_t *dims, strbuf *out) {
  if (rank < 0) { /* a null dataspace holds no values */
    strbuf_puts(out, "null");
    return strbuf_failed(out) ? h5_err(f, H5_ENOMEM, "out of memory") : H5_OK;
  }
  /* Bound the output: the lists printed, even when all are empty (a
     dataspace of (2^50, 0) has no elements but 2^50 "[]"). */
  uint64_t lists = 0, row = 1;
  for (int d = 0; d < rank; d++) {
    lists += row;
    if (dims[d] && row > H5_JSON_MAX_ITEMS / dims[d]) row = H5_JSON_MAX_ITEMS + 1;
    else row *= dims[d];
    if (lists > H5_JSON_MAX_ITEMS) break;
  }
  if (lists + row > H5_JSON_MAX_ITEMS)
    return h5_err(f, H5_EINVAL, "more than %llu values or lists to print as JSON",
                  (unsigned long long)H5_JSON_MAX_ITEMS);
  int rc = put_array(f, t, data, rank, NULL, dims, out, 0);
  if (rc == H5_OK && out->over)
    rc = h5_err(f, H5_EINVAL, "the JSON text would exceed %zu bytes", out->limit);
  else if (rc == H5_OK && out->oom)
    rc = h5_err(f, H5_ENOMEM, "out of memory");
  return rc;
}

/* ---- numpy dtypes ----------------------------------------------------- */

static void put_str(strbuf *o, const char *s) { strbuf_json_string(o, s, strlen(s)); }

static int put_dtype(const h5_type *t, strbuf *o, int depth);

/* The size libhdf5 gives t in memory, as h5py sees it (H5T_set_loc):
** variable-length strings are pointers (8 bytes), sequences hvl_t (16),
** and compounds grow or shrink with their members. */
static uint64_t mem_size(const h5_type *t, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return t->size;
  switch (t->cls) {
  case H5_CLASS_VLEN:
    return t->vlen_kind == 1 ? 8 : 16;
  case H5_CLASS_ARRAY: {
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->dims[d];
    return n * mem_size(t->base, depth + 1);
  }
  case H5_CLASS_COMPOUND: {
    int64_t change = 0;
    for (uint32_t i = 0; i < t->nmembers; i++)
      change += (int64_t)mem_size(t->members[i].type, depth + 1) -
                (int64_t)t->members[i].type->size;
    return (uint64_t)((int64_t)t->size + change);
  }
  default:
    return t->size;
  }
}

/* Where member i of compound t lies in memory: its file offset shifted by
** the size changes of the members stored before it. */
static uint64_t mem_offset(const h5_type *t, uint32_t i, int depth) {
  int64_t change = 0;
  for (uint32_t k = 0; k < t->nmembers; k++)
    if (t->members[k].offset < t->members[i].offset)
      change += (int64_t)mem_size(t->members[k].type, depth + 1) -
                (int64_t)t->members[k].type->size;
  return (uint64_t)((int64_t)t->members[i].offset + change);
}

/* numpy's bytes for a field of type t: 8 for object fields (pointers). */
static uint64_t numpy_size(const h5_type *t, int depth) {
  if (t->cls == H5_CLASS_VLEN || (t->cls == H5_CLASS_REFERENCE && t->ref_kind <= 1)) return 8;
  if (t->cls == H5_CLASS_ARRAY) {
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->dims[d];
    return n * numpy_size(t->base, depth + 1);
  }
  return mem_size(t, depth);
}

/* A compound's numpy descr: members in their stored order with gaps as
** ["", "|Vn"]; numpy's dict form when their offsets do not increase. */
static int put_compound_dtype(const h5_type *t, strbuf *o, int depth) {
  uint32_t n = t->nmembers;
  int ordered = 1;
  uint64_t end = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t off = mem_offset(t, i, depth);
    if (i && off < end) ordered = 0;
    end = off + numpy_size(t->members[i].type, depth + 1);
  }
  uint64_t itemsize = mem_size(t, depth);
  int rc = H5_OK;
  if (!ordered) {
    strbuf_puts(o, "{\"names\": [");
    for (uint32_t i = 0; i < n; i++) {
      if (i) strbuf_puts(o, ", ");
      put_str(o, t->members[i].name);
    }
    strbuf_puts(o, "], \"formats\": [");
    for (uint32_t i = 0; rc == H5_OK && i < n; i++) {
      if (i) strbuf_puts(o, ", ");
      rc = put_dtype(t->members[i].type, o, depth + 1);
    }
    strbuf_puts(o, "], \"offsets\": [");
    for (uint32_t i = 0; i < n; i++)
      strbuf_printf(o, "%s%llu", i ? ", " : "", (unsigned long long)mem_offset(t, i, depth));
    strbuf_printf(o, "], \"itemsize\": %llu}", (unsigned long long)itemsize);
    return rc;
  }
  strbuf_putc(o, '[');
  uint64_t at = 0;
  int first = 1;
  for (uint32_t k = 0; rc == H5_OK && k < n; k++) {
    const struct h5_member *m = &t->members[k];
    uint64_t off = mem_offset(t, k, depth);
    if (off > at) {
      strbuf_printf(o, "%s[\"\", \"|V%llu\"]", first ? "" : ", ",
                    (unsigned long long)(off - at));
      first = 0;
    }
    strbuf_puts(o, first ? "[" : ", [");
    first = 0;
    put_str(o, m->name);
    strbuf_puts(o, ", ");
    const h5_type *mt = m->type;
    if (mt->cls == H5_CLASS_ARRAY) { /* a member array is [name, base, shape] */
      rc = put_dtype(mt->base, o, depth + 1);
      strbuf_puts(o, ", [");
      for (int d = 0; d < mt->rank; d++) strbuf_printf(o, "%s%u", d ? ", " : "", mt->dims[d]);
      strbuf_putc(o, ']');
    } else {
      rc = put_dtype(mt, o, depth + 1);
    }
    strbuf_putc(o, ']');
    at = off + numpy_size(mt, depth + 1);
  }
  if (rc == H5_OK && at < itemsize)
    strbuf_printf(o, "%s[\"\", \"|V%llu\"]", first ? "" : ", ",
                  (unsigned long long)(itemsize - at));
  strbuf_putc(o, ']');
  return rc;
}

static int is_bool_enum(const h5_type *t) {
  return t->nmembers == 2 && t->size == 1 && t->base->is_signed &&
         strcmp(t->members[0].name, "FALSE") == 0 && t->members[0].value[0] == 0 &&
         strcmp(t->members[1].name, "TRUE") == 0 && t->members[1].value[0] == 1;
}

static int put_dtype(const h5_type *t, strbuf *o, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return H5_ECORRUPT;
  char order = t->big_endian ? '>' : '<';
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD: {
    char kind = t->cls == H5_CLASS_INTEGER && t->is_signed ? 'i' : 'u';
    if (t->size == 1)
      strbuf_printf(o, "\"|%c1\"", kind);
    else if (t->size == 2 || t->size == 4 || t->size == 8)
      strbuf_printf(o, "\"%c%c%u\"", order, kind, t->size);
    else
      strbuf_puts(o, "null");
    return H5_OK;
  }
  case H5_CLASS_FLOAT:
    if (t->size == 2 || t->size == 4 || t->size == 8)
      strbuf_printf(o, "\"%c%s%u\"", t->vax_order ? '<' : order, "f", t->size);
    else if (t->size == 12 || t->size == 16)
      strbuf_puts(o, "\"<f16\""); /* numpy's long double */
    else
      strbuf_puts(o, "null");
    return H5_OK;
  case H5_CLASS_STRING:
    strbuf_printf(o, "\"|S%u\"", t->size);
    return H5_OK;
  case H5_CLASS_VLEN:
    strbuf_puts(o, "\"|O\"");
    return H5_OK;
  case H5_CLASS_REFERENCE:
    strbuf_puts(o, t->ref_kind <= 1 ? "\"|O\"" : "null");
    return H5_OK;
  case H5_CLASS_OPAQUE:
    if (t->tag && strncmp(t->tag, "NUMPY:", 6) == 0)
      put_str(o, t->tag + 6);
    else
      strbuf_printf(o, "\"|V%u\"", t->size);
    return H5_OK;
  case H5_CLASS_ENUM:
    if (is_bool_enum(t)) {
      strbuf_puts(o, "\"|b1\"");
      return H5_OK;
    }
    return put_dtype(t->base, o, depth + 1);
  case H5_CLASS_ARRAY: {
    strbuf_puts(o, "{\"subarray\": ");
    int rc = put_dtype(t->base, o, depth + 1);
    strbuf_puts(o, ", \"shape\": [");
    for (int d = 0; d < t->rank; d++) strbuf_printf(o, "%s%u", d ? ", " : "", t->dims[d]);
    strbuf_puts(o, "]}");
    return rc;
  }
  case H5_CLASS_COMPOUND:
    if (is_complex(t)) {
      const h5_type *m = t->members[0].type;
      strbuf_printf(o, "\"%cc%u\"", m->big_endian ? '>' : '<', 2 * m->size);
      return H5_OK;
    }
    return put_compound_dtype(t, o, depth);
  case H5_CLASS_COMPLEX:
    if (t->base->size == 4 || t->base->size == 8)
      strbuf_printf(o, "\"%cc%u\"", t->base->big_endian ? '>' : '<', 2 * t->base->size);
    else
      strbuf_puts(o, "null"); /* (numpy has no complex of float16 halves) */
    return H5_OK;
  default:
    strbuf_puts(o, "null");
    return H5_OK;
  }
}

int h5_json_dtype(const h5_type *t, strbuf *out) {
  int rc = put_dtype(t, out, 0);
  return rc ? rc : strbuf_failed(out) ? H5_ENOMEM : H5_OK;
}

/* ---- single elements, for bindings ------------------------------------------ */

int h5_elem_int(const h5_type *t, const uint8_t *p, uint64_t *bits, int *is_signed) {
  if (t->cls == H5_CLASS_ENUM) t = t->base;
  if (!t || (t->cls != H5_CLASS_INTEGER && t->cls != H5_CLASS_BITFIELD) || t->size == 0)
    return H5_EINVAL;
  uint64_t v;
  unsigned prec = t->precision ? t->precision : 8 * t->size;
  if (prec > 64) prec = 64;
  if (t->offset == 0 && prec == 8 * t->size && t->size <= 8)
    v = get_uint(p, t->size, t->big_endian);
  else
    v = get_bits(p, t->size, t->big_endian, t->offset, prec);
  *is_signed = t->cls == H5_CLASS_INTEGER && t->is_signed;
  if (*is_signed && prec < 64 && (v >> (prec - 1)) & 1) v |= ~(uint64_t)0 << prec;
  *bits = v;
  return H5_OK;
}

int h5_elem_double(const h5_type *t, const uint8_t *p, double *out) {
  if (t->cls == H5_CLASS_FLOAT) {
    *out = decode_float(t, p);
    return H5_OK;
  }
  uint64_t v;
  int s;
  if (h5_elem_int(t, p, &v, &s)) return H5_EINVAL;
  *out = s ? (double)(int64_t)v : (double)v;
  return H5_OK;
}

size_t h5_fixed_string_len(const h5_type *t, const uint8_t *p) {
  size_t n = t->size;
  const uint8_t *z = memchr(p, 0, n);
  if (z) n = (size_t)(z - p);
  if (t->strpad == 2)
    while (n > 0 && p[n - 1] == ' ') n--;
  return n;
}

int h5_utf8_valid(const uint8_t *s, size_t n) { return utf8_ok(s, n); }
