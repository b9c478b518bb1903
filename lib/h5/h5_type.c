/*
** lib/h5/h5_type.c - datatype and dataspace messages.
**
** h5_type_decode turns a datatype message (versions 1-5, every class) into
** an h5_type tree; nesting deeper than H5_MAX_TYPE_DEPTH, more than
** H5_MAX_MEMBERS members, or members that do not fit their compound are
** refused as corrupt.
*/
#include "config.h"

#include "h5_int.h"
#include "util/strbuf.h"

void h5_type_free(h5_type *t) {
  if (!t) return;
  for (uint32_t i = 0; i < t->nmembers; i++) {
    free(t->members[i].name);
    h5_type_free(t->members[i].type);
  }
  free(t->members);
  h5_type_free(t->base);
  free(t->tag);
  free(t);
}

/* A NUL-terminated name at the cursor, copied; with pad8 the field is
** padded to a multiple of 8 bytes. */
static char *read_name(h5_cur *c, int pad8) {
  size_t left = h5c_left(c);
  const uint8_t *p = c->p;
  size_t n = 0;
  while (n < left && p[n]) n++;
  if (n == left) {
    c->bad = 1;
    return NULL;
  }
  size_t field = pad8 ? ((n + 8) & ~(size_t)7) : n + 1;
  if (!h5c_bytes(c, field)) return NULL;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = '\0';
  }
  return s;
}

/* Bytes needed to hold values up to v (compound v3 member offsets). */
static int width_of(uint64_t v) {
  int w = 1;
  while (w < 8 && (v >> (8 * w))) w++;
  return w;
}

static int decode(h5_file *f, h5_cur *c, int depth, h5_type **out);

static int corrupt(h5_file *f, const char *what) {
  return h5_err(f, H5_ECORRUPT, "datatype message: %s", what);
}

static int decode_compound(h5_file *f, h5_cur *c, int depth, h5_type *t,
                           int version, uint32_t bits) {
  uint32_t n = bits & 0xffff;
  if (n == 0) return corrupt(f, "compound with no members");
  t->members = calloc(n, sizeof *t->members);
  if (!t->members) return h5_err(f, H5_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    struct h5_member *m = &t->members[t->nmembers];
    m->name = read_name(c, version < 3);
    if (!m->name) return c->bad ? corrupt(f, "member name") : h5_err(f, H5_ENOMEM, "out of memory");
    t->nmembers++;
    int rank = 0;
    uint32_t dims[4] = {0};
    if (version >= 3) { /* (versions 3 to 5: the fewest bytes that hold the type's size) */
      m->offset = (uint32_t)h5c_uint(c, width_of(t->size));
    } else {
      m->offset = h5c_u32(c);
    }
    if (version == 1) {
      rank = h5c_u8(c);
      h5c_skip(c, 3 + 4 + 4);
      for (int d = 0; d < 4; d++) dims[d] = h5c_u32(c);
      if (rank > 4) return corrupt(f, "compound member rank above 4");
    }
    if (c->bad) return corrupt(f, "compound member truncated");
    int rc = decode(f, c, depth + 1, &m->type);
    if (rc) return rc;
    if (rank > 0) { /* old-style array member */
      h5_type *a = calloc(1, sizeof *a);
      if (!a) return h5_err(f, H5_ENOMEM, "out of memory");
      a->cls = H5_CLASS_ARRAY;
      a->rank = rank;
      uint64_t total = m->type->size;
      for (int d = 0; d < rank; d++) {
        a->dims[d] = dims[d];
        total *= dims[d];
        if (total > UINT32_MAX) {
          free(a);
          return corrupt(f, "array member too large");
        }
      }
      a->size = (uint32_t)total;
      a->base = m->type;
      m->type = a;
    }
    if ((uint64_t)m->offset + m->type->size > t->size)
      return h5_err(f, H5_ECORRUPT,
                    "datatype message: member '%s' (offset %u, size %u) does "
                    "not fit its compound of %u bytes",
                    m->name, m->offset, m->type->size, t->size);
  }
  return H5_OK;
}

static int decode_enum(h5_file *f, h5_cur *c, int depth, h5_type *t,
                       int version, uint32_t bits) {
  uint32_t n = bits & 0xffff;
  int rc = decode(f, c, depth + 1, &t->base);
  if (rc) return rc;
  if (t->base->size != t->size) return corrupt(f, "enum base size differs");
  t->members = calloc(n ? n : 1, sizeof *t->members);
  if (!t->members) return h5_err(f, H5_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    t->members[i].name = read_name(c, version < 3);
    if (!t->members[i].name)
      return c->bad ? corrupt(f, "enum name") : h5_err(f, H5_ENOMEM, "out of memory");
    t->nmembers++;
  }
  for (uint32_t i = 0; i < n; i++) {
    t->members[i].value = h5c_bytes(c, t->size);
    if (!t->members[i].value) return corrupt(f, "enum values truncated");
  }
  return H5_OK;
}

static int decode_array(h5_file *f, h5_cur *c, int depth, h5_type *t,
                        int version) {
  t->rank = h5c_u8(c);
  if (t->rank < 1 || t->rank > H5_MAX_RANK) return corrupt(f, "array rank");
  if (version < 3) h5c_skip(c, 3);
  for (int d = 0; d < t->rank; d++) t->dims[d] = h5c_u32(c);
  if (version < 3) h5c_skip(c, 4 * (size_t)t->rank); /* permutation */
  if (c->bad) return corrupt(f, "array truncated");
  int rc = decode(f, c, depth + 1, &t->base);
  if (rc) return rc;
  uint64_t total = t->base->size;
  for (int d = 0; d < t->rank; d++) {
    total *= t->dims[d];
    if (total > UINT32_MAX) return corrupt(f, "array too large");
  }
  if (total != t->size)
    return h5_err(f, H5_ECORRUPT,
                  "datatype message: array of %llu bytes declared %u bytes",
                  (unsigned long long)total, t->size);
  return H5_OK;
}

/* One datatype at the cursor (a message body, or a member/base type). */
static int decode(h5_file *f, h5_cur *c, int depth, h5_type **out) {
  *out = NULL;
  if (depth > H5_MAX_TYPE_DEPTH) return corrupt(f, "types nested too deeply");
  uint8_t cv = h5c_u8(c);
  uint32_t bits = (uint32_t)h5c_uint(c, 3);
  uint32_t size = h5c_u32(c);
  if (c->bad) return corrupt(f, "truncated");
  if (size == 0) return corrupt(f, "an element size of 0");
  int version = cv >> 4; /* (5, HDF5 2.0: as 3 and 4, plus the complex class) */
  if (version < 1 || version > 5)
    return h5_err(f, H5_EUNSUPPORTED, "datatype message version %d", version);
  h5_type *t = calloc(1, sizeof *t);
  if (!t) return h5_err(f, H5_ENOMEM, "out of memory");
  *out = t;
  t->cls = (h5_class)(cv & 0x0f);
  t->size = size;
  int rc = H5_OK;
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
    t->big_endian = bits & 1;
    t->is_signed = t->cls == H5_CLASS_INTEGER && (bits & 8);
    t->offset = h5c_u16(c);
    t->precision = h5c_u16(c);
    if ((uint64_t)t->offset + t->precision > 8 * (uint64_t)size)
      rc = corrupt(f, "integer bits outside the element");
    break;
  case H5_CLASS_FLOAT:
    t->big_endian = (bits & 1) && !(bits & 0x40);
    t->vax_order = (bits & 1) && (bits & 0x40);
    t->mant_norm = (bits >> 4) & 3;
    t->sign_pos = (uint8_t)(bits >> 8);
    t->offset = h5c_u16(c);
    t->precision = h5c_u16(c);
    t->exp_pos = h5c_u8(c);
    t->exp_size = h5c_u8(c);
    t->mant_pos = h5c_u8(c);
    t->mant_size = h5c_u8(c);
    t->exp_bias = h5c_u32(c);
    if ((uint64_t)t->offset + t->precision > 8 * (uint64_t)size ||
        t->exp_size == 0 || t->exp_size > 64 || t->mant_size > 128)
      rc = corrupt(f, "floating-point fields outside the element");
    break;
  case H5_CLASS_TIME:
    t->big_endian = bits & 1;
    t->precision = h5c_u16(c);
    break;
  case H5_CLASS_STRING:
    t->strpad = bits & 0x0f;
    t->cset = (bits >> 4) & 0x0f;
    break;
  case H5_CLASS_OPAQUE: {
    size_t taglen = bits & 0xff;
    const uint8_t *tag = h5c_bytes(c, taglen);
    t->tag = calloc(1, taglen + 1);
    if (!t->tag) {
      rc = h5_err(f, H5_ENOMEM, "out of memory");
    } else if (tag) {
      memcpy(t->tag, tag, taglen);
    }
    break;
  }
  case H5_CLASS_COMPOUND:
    rc = decode_compound(f, c, depth, t, version, bits);
    break;
  case H5_CLASS_REFERENCE:
    t->ref_kind = bits & 0x0f;
    break;
  case H5_CLASS_ENUM:
    rc = decode_enum(f, c, depth, t, version, bits);
    break;
  case H5_CLASS_VLEN:
    t->vlen_kind = bits & 0x0f;
    t->strpad = (bits >> 4) & 0x0f;
    t->cset = (bits >> 8) & 0x0f;
    rc = decode(f, c, depth + 1, &t->base);
    break;
  case H5_CLASS_ARRAY:
    rc = decode_array(f, c, depth, t, version);
    break;
  case H5_CLASS_COMPLEX: /* homogeneous, rectangular (the only form libhdf5 2.0 writes): a float base */
    if (!(bits & 1) || (bits & ~1u))
      rc = h5_err(f, H5_EUNSUPPORTED, "complex datatype with flags 0x%x (only homogeneous rectangular)", bits);
    else if ((rc = decode(f, c, depth + 1, &t->base)) == H5_OK &&
             (t->base->cls != H5_CLASS_FLOAT || 2 * (uint64_t)t->base->size != size))
      rc = corrupt(f, "a complex type whose base is not a float of half its size");
    break;
  default:
    rc = h5_err(f, H5_EUNSUPPORTED, "datatype class %d", (int)t->cls);
  }
  if (rc == H5_OK && c->bad) rc = corrupt(f, "truncated");
  if (rc != H5_OK) {
    h5_type_free(t);
    *out = NULL;
  }
  return rc;
}

int h5_type_decode(h5_file *f, const uint8_t *data, size_t size,
                   h5_type **out) {
  h5_cur c = h5c_make(data, size);
  return decode(f, &c, 0, out);
}

int h5_space_decode(h5_file *f, const uint8_t *data, size_t size,
                    h5_space *out) {
  h5_cur c = h5c_make(data, size);
  memset(out, 0, sizeof *out);
  int version = h5c_u8(&c);
  int rank = h5c_u8(&c);
  int flags = h5c_u8(&c);
  int type = 1;
  if (version == 1) {
    h5c_skip(&c, 5);
    type = rank ? 1 : 0;
  } else if (version == 2) {
    type = h5c_u8(&c);
  } else {
    return h5_err(f, H5_EUNSUPPORTED, "dataspace message version %d", version);
  }
  if (rank > H5_MAX_RANK)
    return h5_err(f, H5_ECORRUPT, "dataspace of rank %d (the limit is %d)", rank,
                  H5_MAX_RANK);
  if (type == 2) {
    out->rank = -1;
    return c.bad ? h5_err(f, H5_ECORRUPT, "dataspace message truncated") : H5_OK;
  }
  if (type != 0 && type != 1)
    return h5_err(f, H5_ECORRUPT, "dataspace type %d", type);
  out->rank = type == 0 ? 0 : rank;
  out->nelems = 1;
  for (int d = 0; d < out->rank; d++) {
    out->dims[d] = h5c_len(&c, f);
    if (out->dims[d] && out->nelems > UINT64_MAX / out->dims[d])
      return h5_err(f, H5_ECORRUPT, "dataspace has more than 2^64 elements");
    out->nelems *= out->dims[d];
  }
  for (int d = 0; d < out->rank; d++) {
    uint64_t m = (flags & 1) ? h5c_len(&c, f) : out->dims[d];
    if (f->sl < 8 && m == (UINT64_C(1) << (8 * f->sl)) - 1) m = UINT64_MAX;
    out->maxdims[d] = m;
  }
  if (c.bad) return h5_err(f, H5_ECORRUPT, "dataspace message truncated");
  return H5_OK;
}

/* ---- building and encoding types for writing ---------------------------- */

static h5_type *new_type(h5_class cls, uint32_t size) {
  h5_type *t = calloc(1, sizeof *t);
  if (t) {
    t->cls = cls;
    t->size = size;
  }
  return t;
}

h5_type *h5_type_new_int(int bytes, int is_signed) {
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return NULL;
  h5_type *t = new_type(H5_CLASS_INTEGER, (uint32_t)bytes);
  if (t) {
    t->is_signed = is_signed != 0;
    t->precision = (uint16_t)(8 * bytes);
  }
  return t;
}

h5_type *h5_type_new_float(int bytes) {
  h5_type *t;
  switch (bytes) {
  case 2:
    if ((t = new_type(H5_CLASS_FLOAT, 2))) {
      t->precision = 16, t->sign_pos = 15, t->exp_pos = 10, t->exp_size = 5;
      t->mant_size = 10, t->exp_bias = 15;
    }
    break;
  case 4:
    if ((t = new_type(H5_CLASS_FLOAT, 4))) {
      t->precision = 32, t->sign_pos = 31, t->exp_pos = 23, t->exp_size = 8;
      t->mant_size = 23, t->exp_bias = 127;
    }
    break;
  case 8:
    if ((t = new_type(H5_CLASS_FLOAT, 8))) {
      t->precision = 64, t->sign_pos = 63, t->exp_pos = 52, t->exp_size = 11;
      t->mant_size = 52, t->exp_bias = 1023;
    }
    break;
  default:
    return NULL;
  }
  if (t) t->mant_norm = 2;
  return t;
}

h5_type *h5_type_new_vlen(h5_type *base) {
  if (!base) return NULL;
  h5_type *t = new_type(H5_CLASS_VLEN, 16);
  if (!t) {
    h5_type_free(base);
    return NULL;
  }
  t->vlen_kind = 0;
  t->base = base;
  return t;
}

h5_type *h5_type_new_string(uint32_t size, int utf8) {
  if (size == 0) { /* variable length: a vlen of bytes */
    h5_type *t = new_type(H5_CLASS_VLEN, 16);
    if (!t) return NULL;
    t->vlen_kind = 1;
    t->cset = utf8 ? 1 : 0;
    t->base = h5_type_new_int(1, 0);
    if (!t->base) {
      free(t);
      return NULL;
    }
    return t;
  }
  h5_type *t = new_type(H5_CLASS_STRING, size);
  if (t) {
    t->cset = utf8 ? 1 : 0;
    t->strpad = 1; /* null-padded, as h5py writes fixed strings */
  }
  return t;
}

h5_type *h5_type_new_compound(uint32_t size) {
  return size ? new_type(H5_CLASS_COMPOUND, size) : NULL;
}

/* Grow t->members by one; 0 or -1. */
static int add_member(h5_type *t, const char *name) {
  struct h5_member *m = realloc(t->members, (t->nmembers + 1) * sizeof *m);
  if (!m) return -1;
  t->members = m;
  memset(&m[t->nmembers], 0, sizeof *m);
  m[t->nmembers].name = strdup(name);
  if (!m[t->nmembers].name) return -1;
  t->nmembers++;
  return 0;
}

int h5_type_add_member(h5_type *c, const char *name, uint32_t offset,
                       h5_type *member) {
  if (!c || c->cls != H5_CLASS_COMPOUND || !member || !name || !*name ||
      (uint64_t)offset + member->size > c->size || c->nmembers >= H5_MAX_MEMBERS) {
    h5_type_free(member);
    return H5_EINVAL;
  }
  for (uint32_t i = 0; i < c->nmembers; i++)
    if (strcmp(c->members[i].name, name) == 0) {
      h5_type_free(member);
      return H5_EINVAL;
    }
  if (add_member(c, name)) {
    h5_type_free(member);
    return H5_ENOMEM;
  }
  c->members[c->nmembers - 1].offset = offset;
  c->members[c->nmembers - 1].type = member;
  return H5_OK;
}

h5_type *h5_type_new_enum(h5_type *base) {
  if (!base || base->cls != H5_CLASS_INTEGER) {
    h5_type_free(base);
    return NULL;
  }
  h5_type *t = new_type(H5_CLASS_ENUM, base->size);
  if (!t) {
    h5_type_free(base);
    return NULL;
  }
  t->base = base;
  return t;
}

int h5_type_add_enum_value(h5_type *e, const char *name, const void *value) {
  if (!e || e->cls != H5_CLASS_ENUM || !name || !*name) return H5_EINVAL;
  /* the value bytes live in one allocation with the name: name\0value */
  size_t n = strlen(name);
  if (add_member(e, name)) return H5_ENOMEM;
  struct h5_member *m = &e->members[e->nmembers - 1];
  char *both = realloc(m->name, n + 1 + e->size);
  if (!both) return H5_ENOMEM;
  memcpy(both + n + 1, value, e->size);
  m->name = both;
  m->value = (const uint8_t *)both + n + 1;
  return H5_OK;
}

h5_type *h5_type_new_bool(void) {
  /* as h5py writes numpy bool: an int8 enum FALSE = 0, TRUE = 1 */
  h5_type *t = h5_type_new_enum(h5_type_new_int(1, 1));
  int8_t f = 0, v = 1;
  if (t && (h5_type_add_enum_value(t, "FALSE", &f) || h5_type_add_enum_value(t, "TRUE", &v))) {
    h5_type_free(t);
    return NULL;
  }
  return t;
}

h5_type *h5_type_new_array(h5_type *base, int rank, const uint32_t *dims) {
  if (!base || rank < 1 || rank > H5_MAX_RANK) {
    h5_type_free(base);
    return NULL;
  }
  uint64_t size = base->size;
  for (int i = 0; i < rank; i++) size *= dims[i];
  if (size == 0 || size > UINT32_MAX) {
    h5_type_free(base);
    return NULL;
  }
  h5_type *t = new_type(H5_CLASS_ARRAY, (uint32_t)size);
  if (!t) {
    h5_type_free(base);
    return NULL;
  }
  t->base = base;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->dims[i] = dims[i];
  return t;
}

static void put_u8(strbuf *o, unsigned v) {
  char c = (char)(v & 0xff);
  strbuf_append(o, &c, 1);
}

static int encode(const h5_type *t, strbuf *o, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return H5_EINVAL;
  /* version 3 for compounds, enums and arrays (unpadded names, no array
     permutation), version 1 otherwise: all readable by libhdf5 1.8 */
  int version = (t->cls == H5_CLASS_COMPOUND || t->cls == H5_CLASS_ENUM ||
                 t->cls == H5_CLASS_ARRAY) ? 3 : 1;
  uint32_t bits = 0;
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
    bits = (t->big_endian ? 1u : 0u) | (t->is_signed ? 8u : 0u);
    break;
  case H5_CLASS_FLOAT:
    bits = (t->big_endian ? 1u : 0u) | (uint32_t)(t->mant_norm & 3) << 4 |
           (uint32_t)t->sign_pos << 8;
    break;
  case H5_CLASS_STRING:
    bits = (uint32_t)(t->strpad & 15) | (uint32_t)(t->cset & 15) << 4;
    break;
  case H5_CLASS_COMPOUND:
  case H5_CLASS_ENUM:
    bits = t->nmembers;
    break;
  case H5_CLASS_VLEN:
    bits = (uint32_t)(t->vlen_kind & 15) | (uint32_t)(t->strpad & 15) << 4 |
           (uint32_t)(t->cset & 15) << 8;
    break;
  case H5_CLASS_ARRAY:
    break;
  default:
    return H5_EUNSUPPORTED;
  }
  put_u8(o, (unsigned)t->cls | (unsigned)version << 4);
  strbuf_put_le(o, bits, 3);
  strbuf_put_le(o, t->size, 4);
  switch (t->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
    strbuf_put_le(o, t->offset, 2);
    strbuf_put_le(o, t->precision ? t->precision : 8 * t->size, 2);
    break;
  case H5_CLASS_FLOAT:
    strbuf_put_le(o, t->offset, 2);
    strbuf_put_le(o, t->precision, 2);
    put_u8(o, t->exp_pos);
    put_u8(o, t->exp_size);
    put_u8(o, t->mant_pos);
    put_u8(o, t->mant_size);
    strbuf_put_le(o, t->exp_bias, 4);
    break;
  case H5_CLASS_COMPOUND: {
    int w = width_of(t->size);
    for (uint32_t i = 0; i < t->nmembers; i++) {
      strbuf_append(o, t->members[i].name, strlen(t->members[i].name) + 1);
      strbuf_put_le(o, t->members[i].offset, w);
      int rc = encode(t->members[i].type, o, depth + 1);
      if (rc) return rc;
    }
    break;
  }
  case H5_CLASS_ENUM: {
    int rc = encode(t->base, o, depth + 1);
    if (rc) return rc;
    for (uint32_t i = 0; i < t->nmembers; i++)
      strbuf_append(o, t->members[i].name, strlen(t->members[i].name) + 1);
    for (uint32_t i = 0; i < t->nmembers; i++)
      strbuf_append(o, (const char *)t->members[i].value, t->size);
    break;
  }
  case H5_CLASS_VLEN:
    return encode(t->base, o, depth + 1);
  case H5_CLASS_ARRAY:
    put_u8(o, (unsigned)t->rank);
    for (int d = 0; d < t->rank; d++) strbuf_put_le(o, t->dims[d], 4);
    return encode(t->base, o, depth + 1);
  default:
    break;
  }
  return H5_OK;
}

int h5_type_encode(const h5_type *t, strbuf *out) {
  int rc = encode(t, out, 0);
  return rc ? rc : strbuf_failed(out) ? H5_ENOMEM : H5_OK;
}
