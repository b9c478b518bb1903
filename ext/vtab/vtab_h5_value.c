/*
** ext/vtab/vtab_h5_value.c - SQL values into HDF5 elements, for the h5
** virtual table's INSERT (vtab_h5.c): numbers in range for the element's
** type (float16/32 overflow and integer ranges are errors), float32 BLOBs
** and JSON arrays into numeric arrays, text as UTF-8 strings.
*/
#include "config.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "k.h"
#include "util/clocale.h"
#include "util/utf8.h"
#include "vtab_int.h"

/* An integer literal at s (optional '-', digits, nothing of a fraction or
** an exponent after them) read exactly: *neg and its magnitude *mag, the
** end in *end.  0 when s is no such literal, or its magnitude exceeds
** 2^64 - 1 (then a double is as good as it gets). */
static int exact_int(const char *s, const char **end, int *neg, uint64_t *mag) {
  const char *p = s;
  *neg = *p == '-';
  if (*neg) p++;
  if (*p < '0' || *p > '9') return 0;
  uint64_t m = 0;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned dg = (unsigned)(*p - '0');
    if (m > (UINT64_MAX - dg) / 10) return 0;
    m = m * 10 + dg;
  }
  if (*p == '.' || *p == 'e' || *p == 'E') return 0;
  *end = p;
  *mag = m;
  return 1;
}

/* An element written from an exact integer: what put_number takes. */
typedef struct exint {
  int kind;    /* 0: use the double; 1: iv; 2: u, above INT64_MAX */
  int64_t iv;
  uint64_t u;
} exint;

static exint exint_of(int neg, uint64_t mag) {
  exint e = {0, 0, 0};
  if (!neg && mag > (uint64_t)INT64_MAX) {
    e.kind = 2;
    e.u = mag;
  } else if (!neg || mag <= (uint64_t)INT64_MAX + 1) {
    e.kind = 1;
    e.iv = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
  }
  return e;
}

/* A JSON array of n numbers into out (doubles), and where ints is given
** each integer element exactly too.  0 or -1 with *msg. */
static int json_numbers(const char *s, uint64_t n, double *out, exint *ints, char **msg) {
  const char *p = s;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p != '[') goto bad;
  p++;
  for (uint64_t k = 0;; k++) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == ']' && k == 0 && n == 0) { p++; break; }
    if (k >= n) {
      *msg = sqlite3_mprintf("the JSON array has more than %llu elements", (unsigned long long)n);
      return -1;
    }
    char *end;
    if (!(*p == '-' || (*p >= '0' && *p <= '9'))) goto bad;
    if (ints) {
      const char *ie;
      int neg;
      uint64_t mag;
      ints[k] = exact_int(p, &ie, &neg, &mag) ? exint_of(neg, mag) : (exint){0, 0, 0};
    }
    locale_t loc = util_c_locale();
    out[k] = loc ? strtod_l(p, &end, loc) : strtod(p, &end);
    if (end == p) goto bad;
    if (isinf(out[k])) { /* JSON has no infinity: a finite number beyond float64 */
      *msg = sqlite3_mprintf("element %llu (%.*s) is out of range for float64",
                             (unsigned long long)k, (int)(end - p > 40 ? 40 : end - p), p);
      return -1;
    }
    p = end;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == ',') { p++; continue; }
    if (*p == ']') {
      if (k + 1 != n) {
        *msg = sqlite3_mprintf("the JSON array has %llu elements, expected %llu",
                               (unsigned long long)(k + 1), (unsigned long long)n);
        return -1;
      }
      p++;
      break;
    }
    goto bad;
  }
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  if (*p) goto bad;
  return 0;
bad:
  *msg = sqlite3_mprintf("expected a JSON array of %llu numbers or a float32 BLOB of %llu bytes",
                         (unsigned long long)n, (unsigned long long)n * 4);
  return -1;
}

static void put_bytes(uint8_t *p, const void *v, size_t n, int big) {
  static const uint16_t one = 1;
  int le_host = *(const uint8_t *)&one == 1;
  if (big == !le_host) {
    memcpy(p, v, n);
  } else {
    const uint8_t *s = v;
    for (size_t k = 0; k < n; k++) p[k] = s[n - 1 - k];
  }
}

/* d in the shortest form that reads back exactly (for messages). */
static char *shortest(double d) {
  char *s = NULL;
  for (int prec = 15; prec <= 17; prec++) {
    sqlite3_free(s);
    s = sqlite3_mprintf("%.*g", prec, d);
    if (!s || strtod(s, NULL) == d) break;
  }
  return s;
}

/* A finite d beyond float16's or float32's range would be stored as
** infinity: an error, as an out-of-range integer is.  A number that rounds
** to the largest finite value (below the midpoint between it and the next
** power of two) is stored as that value; explicit infinities and NaN (NULL)
** are stored as they are. */
static int float_range(double d, unsigned size, char **msg) {
  /* the midpoints, from which round-to-nearest-even gives infinity */
  double lim = size == 2 ? 65520.0 : 0x1.ffffffp127;
  if (!isfinite(d) || fabs(d) < lim) return 0;
  char *v = shortest(d);
  *msg = sqlite3_mprintf("%s is out of range for float%u (largest finite value +-%s)",
                         v ? v : "?", size * 8, size == 2 ? "65504" : "3.40282347e+38");
  sqlite3_free(v);
  return -1;
}

static int put_number(const h5_type *t, uint8_t *p, double d, int64_t iv, int is_int, char **msg);

/* An exact integer e (or the double d when e is none) into an element. */
static int put_exact(const h5_type *t, uint8_t *p, double d, exint e, char **msg) {
  if (e.kind == 1) return put_number(t, p, d, e.iv, 1, msg);
  if (e.kind == 0) return put_number(t, p, d, 0, 0, msg);
  /* above INT64_MAX: a uint64 holds it exactly, a float rounds it */
  if (t->cls == H5_CLASS_FLOAT) return put_number(t, p, (double)e.u, 0, 0, msg);
  if (t->is_signed || t->size != 8) {
    *msg = sqlite3_mprintf("%llu is out of range for %s%u", (unsigned long long)e.u, t->is_signed ? "int" : "uint",
                           (unsigned)t->size * 8);
    return -1;
  }
  put_bytes(p, &e.u, 8, t->big_endian);
  return 0;
}

/* A number d into an integer or float element. */
static int put_number(const h5_type *t, uint8_t *p, double d, int64_t iv, int is_int, char **msg) {
  if (t->cls == H5_CLASS_FLOAT) {
    if (is_int) d = (double)iv;
    if (t->size == 8) {
      put_bytes(p, &d, 8, t->big_endian);
    } else if (t->size == 4) {
      if (float_range(d, 4, msg)) return -1;
      float f = (float)d;
      put_bytes(p, &f, 4, t->big_endian);
    } else if (t->size == 2) {
      if (float_range(d, 2, msg)) return -1;
      float f = (float)d;
      uint16_t h;
      k_get()->f32_to_f16(&f, &h, 1);
      /* rounding twice (to float, then to half) can carry a number just
      ** below the midpoint 65520 up to it and on to infinity */
      if (isfinite(d) && (h & 0x7fff) == 0x7c00) h = (uint16_t)((h & 0x8000) | 0x7bff);
      put_bytes(p, &h, 2, t->big_endian);
    } else {
      *msg = sqlite3_mprintf("cannot write %u-byte floats", (unsigned)t->size);
      return -1;
    }
    return 0;
  }
  /* integers (and the bases of enums) */
  int sgn = t->is_signed;
  unsigned bits = t->size * 8;
  uint64_t u;
  if (!is_int) {
    if (isnan(d) || floor(d) != d) {
      *msg = sqlite3_mprintf("%.17g is not an integer", d);
      return -1;
    }
    if (d >= 0 && d < 18446744073709551616.0 && !(sgn || d < 9223372036854775808.0)) {
      u = (uint64_t)d;
      if (bits < 64 && u >> bits) goto range;
      put_bytes(p, &u, t->size, t->big_endian);
      return 0;
    }
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) goto range;
    iv = (int64_t)d;
  }
  if (sgn) {
    if (bits < 64) {
      int64_t lim = (int64_t)1 << (bits - 1);
      if (iv < -lim || iv >= lim) goto range;
    }
  } else if (iv < 0 || (bits < 64 && (uint64_t)iv >> bits)) {
    goto range;
  }
  u = (uint64_t)iv;
  put_bytes(p, &u, t->size, t->big_endian);
  return 0;
range:
  if (is_int) *msg = sqlite3_mprintf("%lld is out of range for %s%u", (long long)iv, sgn ? "int" : "uint", bits);
  else *msg = sqlite3_mprintf("%.17g is out of range for %s%u", d, sgn ? "int" : "uint", bits);
  return -1;
}

/* Whether this module can write elements of type t. */
int h5vt_writable(const h5_type *t) {
  switch (t->cls) {
  case H5_CLASS_INTEGER: return t->size <= 8 && t->offset == 0 && t->precision == t->size * 8;
  case H5_CLASS_FLOAT:
    return (t->size == 2 || t->size == 4 || t->size == 8) && t->precision == t->size * 8 &&
           !t->vax_order;
  case H5_CLASS_ENUM: return t->base && t->base->cls == H5_CLASS_INTEGER && t->base->size <= 8;
  case H5_CLASS_STRING: return 1;
  case H5_CLASS_VLEN: return t->vlen_kind == 1;
  case H5_CLASS_ARRAY: return t->base && h5vt_is_numeric(t->base) && h5vt_writable(t->base);
  case H5_CLASS_COMPOUND:
    for (uint32_t m = 0; m < t->nmembers; m++)
      if (!h5vt_writable(t->members[m].type)) return 0;
    return 1;
  default: return 0;
  }
}

/* n numbers (a float32 BLOB or a JSON array) into elements of type t. */
int h5vt_put_array(const h5_type *t, uint8_t *p, uint64_t n, sqlite3_value *v, char **msg) {
  double *d = sqlite3_malloc64(n * sizeof *d + 1);
  exint *ints = t->cls == H5_CLASS_INTEGER ? sqlite3_malloc64(n * sizeof *ints + 1) : NULL;
  if (!d || (t->cls == H5_CLASS_INTEGER && !ints)) {
    sqlite3_free(d);
    sqlite3_free(ints);
    return SQLITE_NOMEM;
  }
  for (uint64_t k = 0; ints && k < n; k++) ints[k] = (exint){0, 0, 0};
  int rc = 0;
  if (sqlite3_value_type(v) == SQLITE_BLOB) {
    const uint8_t *b = sqlite3_value_blob(v);
    uint64_t len = (uint64_t)sqlite3_value_bytes(v);
    if (len != n * 4) {
      *msg = sqlite3_mprintf("a float32 BLOB of %llu bytes, expected %llu (%llu floats)",
                             (unsigned long long)len, (unsigned long long)n * 4,
                             (unsigned long long)n);
      rc = -1;
    } else {
      for (uint64_t k = 0; k < n; k++) {
        float f;
        memcpy(&f, b + 4 * k, 4);
        d[k] = f;
      }
    }
  } else if (sqlite3_value_type(v) == SQLITE_TEXT) {
    rc = json_numbers((const char *)sqlite3_value_text(v), n, d, ints, msg);
  } else {
    *msg = sqlite3_mprintf("expected a float32 BLOB or a JSON array of %llu numbers, not %s",
                           (unsigned long long)n,
                           sqlite3_value_type(v) == SQLITE_NULL ? "NULL" : "a number");
    rc = -1;
  }
  for (uint64_t k = 0; rc == 0 && k < n; k++)
    rc = ints ? put_exact(t, p + k * t->size, d[k], ints[k], msg) : put_number(t, p + k * t->size, d[k], 0, 0, msg);
  sqlite3_free(d);
  sqlite3_free(ints);
  return rc;
}

/* When must (a UTF-8 string type, or a BLOB for a variable-length
** string): whether s[0..n) is refused for not being well-formed UTF-8,
** which every reader (h5py's .asstr(), Python's .decode()) needs; the
** message in *msg. */
static int utf8_refused(int must, const char *s, size_t n, char **msg) {
  size_t bad = must ? util_utf8_check(s, n, 1) : n;
  if (bad == n) return 0;
  *msg = sqlite3_mprintf("invalid UTF-8 at byte %llu", (unsigned long long)bad);
  return 1;
}

/* One SQL value into one element of type t at p (zeroed before). */
int h5vt_put_value(h5vt *vt, const h5_type *t, uint8_t *p, sqlite3_value *v, char **msg) {
  (void)vt;
  int vtype = sqlite3_value_type(v);
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_ENUM:
  case H5_CLASS_FLOAT: {
    const h5_type *it = t->cls == H5_CLASS_ENUM ? t->base : t;
    if (vtype == SQLITE_NULL) {
      if (t->cls == H5_CLASS_FLOAT) return put_number(t, p, NAN, 0, 0, msg);
      *msg = sqlite3_mprintf("NULL in an integer column (HDF5 has no NULL; floats store NaN)");
      return -1;
    }
    if (vtype == SQLITE_TEXT && t->cls == H5_CLASS_INTEGER) { /* an integer in text: exactly, beyond int64 too */
      const char *s = (const char *)sqlite3_value_text(v), *e;
      int neg;
      uint64_t mag;
      while (s && (*s == ' ' || *s == '\t')) s++;
      if (s && exact_int(s, &e, &neg, &mag)) {
        while (*e == ' ' || *e == '\t') e++;
        if (!*e) return put_exact(it, p, neg ? -(double)mag : (double)mag, exint_of(neg, mag), msg);
      }
    }
    int nt = sqlite3_value_numeric_type(v);
    if (nt != SQLITE_INTEGER && nt != SQLITE_FLOAT) {
      *msg = sqlite3_mprintf("expected a number, not %s", nt == SQLITE_TEXT ? "text" : "a BLOB");
      return -1;
    }
    if (t->cls == H5_CLASS_ENUM) { /* bool: any nonzero number is TRUE */
      int64_t b = nt == SQLITE_INTEGER ? sqlite3_value_int64(v) != 0 : sqlite3_value_double(v) != 0;
      return put_number(it, p, 0, b, 1, msg);
    }
    return put_number(it, p, sqlite3_value_double(v), sqlite3_value_int64(v),
                      nt == SQLITE_INTEGER, msg);
  }
  case H5_CLASS_VLEN: {
    if (vtype == SQLITE_NULL) return 0; /* a NULL string */
    const char *s = (const char *)sqlite3_value_text(v);
    int n = sqlite3_value_bytes(v);
    if (!s) return SQLITE_NOMEM;
    if ((int)strlen(s) != n) {
      *msg = sqlite3_mprintf("text with a NUL byte (HDF5 strings end at NUL)");
      return -1;
    }
    if (utf8_refused(t->cset == 1 || vtype == SQLITE_BLOB, s, (size_t)n, msg)) return -1;
    char *copy = malloc((size_t)n + 1);
    if (!copy) return SQLITE_NOMEM;
    memcpy(copy, s, (size_t)n + 1);
    memcpy(p, &copy, sizeof copy);
    return 0;
  }
  case H5_CLASS_STRING: {
    if (vtype == SQLITE_NULL) return 0; /* empty */
    const char *s = vtype == SQLITE_BLOB ? sqlite3_value_blob(v) : (const char *)sqlite3_value_text(v);
    int n = sqlite3_value_bytes(v);
    if ((uint32_t)n > t->size) {
      *msg = sqlite3_mprintf("%d bytes do not fit a %u-byte string", n, (unsigned)t->size);
      return -1;
    }
    if (utf8_refused(t->cset == 1, s, (size_t)n, msg)) return -1;
    if (n) memcpy(p, s, (size_t)n);
    if (t->strpad == 2) memset(p + n, ' ', t->size - (uint32_t)n);
    return 0;
  }
  case H5_CLASS_ARRAY: {
    uint64_t n = 1;
    for (int k = 0; k < t->rank; k++) n *= t->dims[k];
    return h5vt_put_array(t->base, p, n, v, msg);
  }
  default:
    *msg = sqlite3_mprintf("cannot write this type");
    return -1;
  }
}

/* Free the strings (variable-length, malloc'd) of the element of type t at
** p, and zero their pointers. */
void h5vt_free_strings(const h5_type *t, uint8_t *p) {
  if (t->cls == H5_CLASS_VLEN) {
    char *s;
    memcpy(&s, p, sizeof s);
    free(s);
    memset(p, 0, sizeof s);
  } else if (t->cls == H5_CLASS_COMPOUND) {
    for (uint32_t m = 0; m < t->nmembers; m++) h5vt_free_strings(t->members[m].type, p + t->members[m].offset);
  }
}
