/*
** lib/h5/h5_attr.c - attributes: attribute messages in the object header
** (compact) or in a fractal heap indexed by a v2 B-tree (dense, named by
** the attribute info message).
*/
#include "config.h"

#include "h5_int.h"

/* Decode one attribute message into *a, its type into *type (the caller
** owns it).  a's pointers point into data. */
static int attr_decode(h5_file *f, const uint8_t *data, size_t size, h5_attr *a,
                       h5_type **type) {
  h5_cur c = h5c_make(data, size);
  memset(a, 0, sizeof *a);
  int version = h5c_u8(&c);
  uint8_t flags = 0;
  *type = NULL;
  if (version == 1) {
    h5c_skip(&c, 1);
  } else if (version == 2 || version == 3) {
    flags = h5c_u8(&c);
  } else {
    return h5_err(f, H5_ECORRUPT, "attribute message version %d", version);
  }
  uint16_t nlen = h5c_u16(&c), tlen = h5c_u16(&c), slen = h5c_u16(&c);
  if (version == 3) h5c_skip(&c, 1); /* name character set */
  int pad = version == 1;
#define FIELD(n) (pad ? (((size_t)(n) + 7) & ~(size_t)7) : (size_t)(n))
  const uint8_t *name = h5c_bytes(&c, FIELD(nlen));
  const uint8_t *tdata = h5c_bytes(&c, FIELD(tlen));
  const uint8_t *sdata = h5c_bytes(&c, FIELD(slen));
#undef FIELD
  if (c.bad || nlen == 0 || !memchr(name, 0, nlen))
    return h5_err(f, H5_ECORRUPT, "attribute message malformed");
  a->name = (const char *)name; /* (kept when the rest cannot be decoded) */
  /* a shared datatype or dataspace is a reference to the real message */
  const uint8_t *tbody = tdata, *sbody = sdata;
  size_t tsize = tlen, ssize = slen;
  int rc = H5_OK;
  if (flags & 1) {
    h5_msg sh = {H5_MSG_DATATYPE, H5_MSGFLAG_SHARED, -1, tdata, tlen};
    rc = h5_msg_body(f, &sh, &tbody, &tsize);
  }
  if (rc == H5_OK && (flags & 2)) {
    h5_msg sh = {H5_MSG_DATASPACE, H5_MSGFLAG_SHARED, -1, sdata, slen};
    rc = h5_msg_body(f, &sh, &sbody, &ssize);
  }
  if (rc) return rc;
  h5_space space;
  rc = h5_type_decode(f, tbody, tsize, type);
  if (rc == H5_OK) rc = h5_space_decode(f, sbody, ssize, &space);
  if (rc == H5_OK) {
    a->name = (const char *)name;
    a->type = *type;
    a->rank = space.rank;
    memcpy(a->dims, space.dims, sizeof a->dims);
    a->nelems = space.rank < 0 ? 0 : space.nelems;
    uint64_t need = a->nelems * (uint64_t)(*type)->size;
    if ((*type)->size && a->nelems > UINT64_MAX / (*type)->size) need = UINT64_MAX;
    a->data = c.p;
    a->data_len = h5c_left(&c);
    if (need > a->data_len)
      rc = h5_err(f, H5_ECORRUPT, "attribute '%s': %llu bytes of data, %zu stored",
                  a->name, (unsigned long long)need, a->data_len);
  }
  if (rc) {
    h5_type_free(*type);
    *type = NULL;
  }
  return rc;
}

/* The attributes of one object, decoded once and kept with it: names and
** data point into the file map or into heap, which stays open. */
struct h5_attrtab {
  size_t n, cap;
  h5_attr *v;
  h5_type **types;
  char **errs;     /* n: why v[i] cannot be read (NULL: it can) */
  size_t *by_name; /* indices of v sorted by name */
  h5_fheap *heap;
};

void h5_attrtab_free(struct h5_attrtab *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) {
    h5_type_free(t->types[i]);
    free(t->errs[i]);
  }
  free(t->v);
  free(t->types);
  free(t->errs);
  free(t->by_name);
  h5_fheap_close(t->heap);
  free(t);
}

static int tab_add(h5_file *f, struct h5_attrtab *t, const uint8_t *data,
                   size_t size) {
  if (t->n == t->cap) {
    size_t ncap = t->cap ? t->cap * 2 : 8;
    h5_attr *nv = realloc(t->v, ncap * sizeof *nv);
    if (!nv) return h5_err(f, H5_ENOMEM, "out of memory");
    t->v = nv;
    h5_type **nt = realloc(t->types, ncap * sizeof *nt);
    if (!nt) return h5_err(f, H5_ENOMEM, "out of memory");
    t->types = nt;
    char **ne = realloc(t->errs, ncap * sizeof *ne);
    if (!ne) return h5_err(f, H5_ENOMEM, "out of memory");
    t->errs = ne;
    t->cap = ncap;
  }
  h5_attr *a = &t->v[t->n];
  t->errs[t->n] = NULL;
  int rc = attr_decode(f, data, size, a, &t->types[t->n]);
  if (rc == H5_ENOMEM) return rc;
  if (rc != H5_OK) { /* this attribute alone: kept with its error, its name if it has one */
    const char *name = a->name ? a->name : "";
    memset(a, 0, sizeof *a);
    a->name = name;
    a->rank = -1;
    if (!(t->errs[t->n] = strdup(h5_errmsg(f)[0] ? h5_errmsg(f) : "cannot be decoded")))
      return h5_err(f, H5_ENOMEM, "out of memory");
    a->err = t->errs[t->n];
    t->types[t->n] = NULL;
  }
  t->n++;
  return H5_OK;
}

typedef struct dense_attr_walk {
  h5_file *f;
  struct h5_attrtab *t;
} dense_attr_walk;

/* An attribute name index record (v2 B-tree type 8): heap ID (8), message
** flags (1), creation order (4), name hash (4).  A shared attribute (flags
** bit 1) is in the file's shared message heap: the ID is its ID there. */
static int dense_attr(void *ctx, const uint8_t *rec, size_t len) {
  dense_attr_walk *w = ctx;
  if (len < 9) return h5_err(w->f, H5_ECORRUPT, "attribute record too short");
  const uint8_t *obj;
  size_t olen;
  int rc;
  if (rec[8] & H5_MSGFLAG_SHARED) {
    uint8_t sh[10] = {3, 1}; /* a shared message, version 3, in the heap */
    memcpy(sh + 2, rec, 8);
    h5_msg m = {H5_MSG_ATTRIBUTE, H5_MSGFLAG_SHARED, -1, sh, sizeof sh};
    rc = h5_msg_body(w->f, &m, &obj, &olen);
  } else {
    rc = h5_fheap_get(w->t->heap, rec, 8, &obj, &olen);
  }
  return rc ? rc : tab_add(w->f, w->t, obj, olen);
}

static _Thread_local struct h5_attrtab *by_name_tab; /* for qsort only */

static int by_name(const void *a, const void *b) {
  return strcmp(by_name_tab->v[*(const size_t *)a].name,
                by_name_tab->v[*(const size_t *)b].name);
}

/* Decode o's attributes into its table, on first use. */
static int attrtab_get(h5_obj *o, struct h5_attrtab **out) {
  h5_file *f = o->f;
  if (o->attrs) {
    *out = o->attrs;
    return H5_OK;
  }
  struct h5_attrtab *t = calloc(1, sizeof *t);
  if (!t) return h5_err(f, H5_ENOMEM, "out of memory");
  int rc = H5_OK;
  for (uint32_t i = 0; rc == H5_OK && i < o->hdr.nmsg; i++) {
    const h5_msg *m = &o->hdr.msgs[i];
    if (m->type != H5_MSG_ATTRIBUTE) continue;
    const uint8_t *body;
    size_t size;
    rc = h5_msg_body(f, m, &body, &size);
    if (rc == H5_OK) rc = tab_add(f, t, body, size);
  }
  const h5_msg *ai = h5_ohdr_find(&o->hdr, H5_MSG_ATTR_INFO);
  if (rc == H5_OK && ai) {
    h5_cur c = h5c_make(ai->data, ai->size);
    int version = h5c_u8(&c);
    uint8_t flags = h5c_u8(&c);
    if (flags & 1) h5c_skip(&c, 2); /* max creation index */
    uint64_t heap = h5c_addr(&c, f), name_bt2 = h5c_addr(&c, f);
    if (c.bad || version != 0) {
      rc = h5_err(f, H5_ECORRUPT, "attribute info message malformed");
    } else if (heap != H5_UNDEF_ADDR) {
      dense_attr_walk w = {f, t};
      rc = h5_fheap_open(f, heap, &t->heap);
      if (rc == H5_OK) rc = h5_bt2_iter(f, name_bt2, dense_attr, &w);
    }
  }
  if (rc == H5_OK) {
    t->by_name = malloc((t->n ? t->n : 1) * sizeof *t->by_name);
    if (!t->by_name) rc = h5_err(f, H5_ENOMEM, "out of memory");
  }
  if (rc != H5_OK) {
    h5_attrtab_free(t);
    return rc;
  }
  for (size_t i = 0; i < t->n; i++) t->by_name[i] = i;
  by_name_tab = t;
  if (t->n) qsort(t->by_name, t->n, sizeof *t->by_name, by_name);
  o->attrs = t;
  *out = t;
  return H5_OK;
}

int h5_attr_iter(h5_obj *o, h5_attr_cb cb, void *ctx) {
  struct h5_attrtab *t;
  int rc = attrtab_get(o, &t);
  for (size_t i = 0; rc == H5_OK && i < t->n; i++)
    if (cb(ctx, &t->v[i])) rc = H5_ESTOP;
  return rc;
}

static const char *attr_name_at(const void *ctx, size_t i) {
  const struct h5_attrtab *t = ctx;
  return t->v[t->by_name[i]].name;
}

int h5_attr_get(h5_obj *o, const char *name, const h5_attr **out) {
  struct h5_attrtab *t;
  *out = NULL;
  int rc = attrtab_get(o, &t);
  if (rc) return rc;
  size_t i = h5_bsearch_name(t->n, attr_name_at, t, name);
  if (i < t->n) {
    const h5_attr *a = &t->v[t->by_name[i]];
    if (a->err) return h5_err(o->f, H5_ECORRUPT, "attribute '%s': %s", name, a->err);
    *out = a;
    return H5_OK;
  }
  return h5_err(o->f, H5_ENOTFOUND, "no attribute '%s'", name);
}
