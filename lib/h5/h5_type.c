/*
** lib/h5/h5_type.c - datatype and dataspace messages.
**
** h5_type_decode turns a datatype message (versions 1-4, every class) into
** an h5_type tree; nesting deeper than H5_MAX_TYPE_DEPTH, more than
** H5_MAX_MEMBERS members, or members that do not fit their compound are
** refused as corrupt.
*/
#include "config.h"

#include "h5_int.h"

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
    if (version == 3) {
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
  int version = cv >> 4;
  if (version < 1 || version > 4)
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
