/*
** lib/h5/h5_group.c - the links of a group, in any of its three storages:
**   old style: a symbol table message -> v1 B-tree -> SNOD nodes, with the
**              names in a local heap;
**   compact:   link messages in the object header;
**   dense:     link messages as objects of a fractal heap, indexed by name
**              hash in a v2 B-tree (the link info message names both).
** h5_group_iter collects the links, sorts them by name (as libhdf5 lists
** them), and calls back.
*/
#include "config.h"

#include "h5_int.h"

/* A collected link: the strings are malloc'd copies. */
typedef struct link_rec {
  h5_link l;
  char *name, *target, *filename;
} link_rec;

typedef struct link_set {
  h5_file *f;
  link_rec *v;
  size_t n, cap;
} link_set;

static void link_set_free(link_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    free(s->v[i].name);
    free(s->v[i].target);
    free(s->v[i].filename);
  }
  free(s->v);
}

static char *dup_n(const void *p, size_t n) {
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, p, n);
    s[n] = '\0';
  }
  return s;
}

/* Append a link; name/target/filename are copied (n bytes each). */
static int add_link(link_set *s, const char *name, size_t nlen, int type,
                    uint64_t addr, const char *target, size_t tlen,
                    const char *filename, size_t flen, int64_t corder) {
  if (s->n == s->cap) {
    size_t ncap = s->cap ? s->cap * 2 : 16;
    link_rec *nv = realloc(s->v, ncap * sizeof *nv);
    if (!nv) return h5_err(s->f, H5_ENOMEM, "out of memory");
    s->v = nv;
    s->cap = ncap;
  }
  link_rec *r = &s->v[s->n];
  memset(r, 0, sizeof *r);
  r->name = dup_n(name, nlen);
  r->target = target ? dup_n(target, tlen) : NULL;
  r->filename = filename ? dup_n(filename, flen) : NULL;
  s->n++; /* counted before the check, so that link_set_free frees them */
  if (!r->name || (target && !r->target) || (filename && !r->filename))
    return h5_err(s->f, H5_ENOMEM, "out of memory");
  r->l.type = type;
  r->l.addr = addr;
  r->l.corder = corder;
  return H5_OK;
}

/* ---- old style --------------------------------------------------------- */

typedef struct stab_walk {
  link_set *s;
  uint64_t heap;
} stab_walk;

static int stab_snod(void *ctx, const uint8_t *left, const uint8_t *right,
                     uint64_t child) {
  stab_walk *w = ctx;
  h5_file *f = w->s->f;
  (void)left;
  (void)right;
  h5_cur c = h5_cur_at(f, child);
  const uint8_t *sig = h5c_bytes(&c, 4);
  int version = h5c_u8(&c);
  h5c_skip(&c, 1);
  uint16_t nsym = h5c_u16(&c);
  if (c.bad || memcmp(sig, "SNOD", 4) != 0 || version != 1)
    return h5_err(f, H5_ECORRUPT, "no symbol table node at %llu",
                  (unsigned long long)child);
  for (uint16_t i = 0; i < nsym; i++) {
    uint64_t name_off = h5c_len(&c, f);
    uint64_t addr = h5c_addr(&c, f);
    uint32_t cache = h5c_u32(&c);
    h5c_skip(&c, 4);
    const uint8_t *scratch = h5c_bytes(&c, 16);
    if (c.bad)
      return h5_err(f, H5_ECORRUPT, "symbol table node at %llu overruns the file",
                    (unsigned long long)child);
    const char *name, *value = NULL;
    int rc = h5_lheap_string(f, w->heap, name_off, &name);
    if (rc) return rc;
    int type = H5_LINK_HARD;
    if (cache == 2) { /* soft link: its value in the local heap */
      type = H5_LINK_SOFT;
      rc = h5_lheap_string(f, w->heap, util_get_le(scratch, 4), &value);
      if (rc) return rc;
    }
    rc = add_link(w->s, name, strlen(name), type, addr, value,
                  value ? strlen(value) : 0, NULL, 0, -1);
    if (rc) return rc;
  }
  return H5_OK;
}

static int stab_links(h5_file *f, const h5_msg *m, link_set *s) {
  h5_cur c = h5c_make(m->data, m->size);
  uint64_t btree = h5c_addr(&c, f), heap = h5c_addr(&c, f);
  if (c.bad) return h5_err(f, H5_ECORRUPT, "symbol table message truncated");
  stab_walk w = {s, heap};
  return h5_bt1_iter(f, btree, 0, (size_t)f->sl, NULL, stab_snod, &w);
}

/* ---- link messages ------------------------------------------------------ */

/* Decode one link message (in a header or a fractal heap) into s. */
static int parse_link(link_set *s, const uint8_t *data, size_t size) {
  h5_file *f = s->f;
  h5_cur c = h5c_make(data, size);
  int version = h5c_u8(&c);
  uint8_t flags = h5c_u8(&c);
  if (version != 1) return h5_err(f, H5_ECORRUPT, "link message version %d", version);
  int type = (flags & 0x08) ? h5c_u8(&c) : H5_LINK_HARD;
  int64_t corder = (flags & 0x04) ? (int64_t)h5c_uint(&c, 8) : -1;
  if (flags & 0x10) h5c_skip(&c, 1); /* name character set */
  uint64_t nlen = h5c_uint(&c, 1 << (flags & 3));
  const uint8_t *name = h5c_bytes(&c, (size_t)nlen);
  if (c.bad || nlen == 0 || nlen > size)
    return h5_err(f, H5_ECORRUPT, "link message: bad name");
  if (type == H5_LINK_HARD) {
    uint64_t addr = h5c_addr(&c, f);
    if (c.bad) return h5_err(f, H5_ECORRUPT, "link message truncated");
    return add_link(s, (const char *)name, (size_t)nlen, type, addr, NULL, 0,
                    NULL, 0, corder);
  }
  uint16_t vlen = h5c_u16(&c);
  const uint8_t *val = h5c_bytes(&c, vlen);
  if (c.bad) return h5_err(f, H5_ECORRUPT, "link message truncated");
  if (type == H5_LINK_SOFT)
    return add_link(s, (const char *)name, (size_t)nlen, type, H5_UNDEF_ADDR,
                    (const char *)val, vlen, NULL, 0, corder);
  if (type == H5_LINK_EXTERNAL) {
    /* a version/flags byte, the file name, the object path, both NUL-ended */
    const uint8_t *fn = val + 1, *end = val + vlen;
    const uint8_t *fz = vlen > 1 ? memchr(fn, 0, (size_t)(end - fn)) : NULL;
    const uint8_t *path = fz ? fz + 1 : NULL;
    const uint8_t *pz = path && path < end ? memchr(path, 0, (size_t)(end - path)) : NULL;
    if (!pz) return h5_err(f, H5_ECORRUPT, "external link value malformed");
    return add_link(s, (const char *)name, (size_t)nlen, type, H5_UNDEF_ADDR,
                    (const char *)path, (size_t)(pz - path), (const char *)fn,
                    (size_t)(fz - fn), corder);
  }
  return add_link(s, (const char *)name, (size_t)nlen, type < 65 ? 65 : type,
                  H5_UNDEF_ADDR, NULL, 0, NULL, 0, corder);
}

/* ---- dense storage -------------------------------------------------------- */

typedef struct dense_walk {
  link_set *s;
  h5_fheap *heap;
} dense_walk;

/* A name index record (v2 B-tree type 5): name hash (4), heap ID (7). */
static int dense_record(void *ctx, const uint8_t *rec, size_t len) {
  dense_walk *w = ctx;
  if (len < 11) return h5_err(w->s->f, H5_ECORRUPT, "link name record too short");
  const uint8_t *obj;
  size_t olen;
  int rc = h5_fheap_get(w->heap, rec + 4, 7, &obj, &olen);
  return rc ? rc : parse_link(w->s, obj, olen);
}

static int dense_links(h5_file *f, const h5_msg *m, link_set *s) {
  h5_cur c = h5c_make(m->data, m->size);
  int version = h5c_u8(&c);
  uint8_t flags = h5c_u8(&c);
  if (flags & 1) h5c_skip(&c, 8); /* max creation index */
  uint64_t heap_addr = h5c_addr(&c, f);
  uint64_t name_bt2 = h5c_addr(&c, f);
  if (c.bad || version != 0)
    return h5_err(f, H5_ECORRUPT, "link info message malformed");
  if (heap_addr == H5_UNDEF_ADDR) return H5_OK; /* compact: link messages */
  dense_walk w = {s, NULL};
  int rc = h5_fheap_open(f, heap_addr, &w.heap);
  if (rc == H5_OK) rc = h5_bt2_iter(f, name_bt2, dense_record, &w);
  h5_fheap_close(w.heap);
  return rc;
}

/* ---- iteration ------------------------------------------------------------ */

static int by_name(const void *a, const void *b) {
  return strcmp(((const link_rec *)a)->name, ((const link_rec *)b)->name);
}

/* The group's links, collected and sorted on first use, kept with g. */
struct h5_linktab {
  link_set s;
};

void h5_linktab_free(struct h5_linktab *t) {
  if (!t) return;
  link_set_free(&t->s);
  free(t);
}

static int linktab_get(h5_obj *g, link_set **out) {
  h5_file *f = g->f;
  if (g->kind != H5_KIND_GROUP)
    return h5_err(f, H5_EINVAL, "object at %llu is not a group",
                  (unsigned long long)g->addr);
  if (g->links) {
    *out = &g->links->s;
    return H5_OK;
  }
  struct h5_linktab *t = calloc(1, sizeof *t);
  if (!t) return h5_err(f, H5_ENOMEM, "out of memory");
  link_set *s = &t->s;
  s->f = f;
  int rc = H5_OK;
  const h5_msg *stab = h5_ohdr_find(&g->hdr, H5_MSG_SYMBOL_TABLE);
  const h5_msg *linfo = h5_ohdr_find(&g->hdr, H5_MSG_LINK_INFO);
  if (stab) rc = stab_links(f, stab, s);
  if (rc == H5_OK && linfo) rc = dense_links(f, linfo, s);
  for (uint32_t i = 0; rc == H5_OK && i < g->hdr.nmsg; i++)
    if (g->hdr.msgs[i].type == H5_MSG_LINK)
      rc = parse_link(s, g->hdr.msgs[i].data, g->hdr.msgs[i].size);
  if (rc != H5_OK) {
    h5_linktab_free(t);
    return rc;
  }
  if (s->n) qsort(s->v, s->n, sizeof *s->v, by_name); /* s->v may be NULL */
  for (size_t i = 0; i < s->n; i++) {
    link_rec *r = &s->v[i];
    r->l.name = r->name;
    r->l.target = r->target;
    r->l.filename = r->filename;
  }
  g->links = t;
  *out = s;
  return H5_OK;
}

int h5_group_iter(h5_obj *g, h5_link_cb cb, void *ctx) {
  link_set *s;
  int rc = linktab_get(g, &s);
  for (size_t i = 0; rc == H5_OK && i < s->n; i++)
    if (cb(ctx, &s->v[i].l)) rc = H5_ESTOP;
  return rc;
}

static const char *link_name_at(const void *ctx, size_t i) {
  return ((const link_set *)ctx)->v[i].name;
}

int h5_group_find(h5_obj *g, const char *name, const h5_link **out) {
  link_set *s;
  *out = NULL;
  int rc = linktab_get(g, &s);
  if (rc) return rc;
  size_t i = h5_bsearch_name(s->n, link_name_at, s, name);
  if (i < s->n) {
    *out = &s->v[i].l;
    return H5_OK;
  }
  return h5_err(g->f, H5_ENOTFOUND, "no link '%s'", name);
}

/* ---- paths ------------------------------------------------------------------ */

#define H5_MAX_SOFT_HOPS 16 /* libhdf5's default limit on soft links followed */

/* Resolve path from group g (absolute paths restart at the root); *hops
** counts the soft links followed so far. */
static int resolve(h5_file *f, h5_obj *g, const char *path, int *hops, h5_obj **out) {
  h5_obj *o = g;
  if (*path == '/') {
    int rc = h5_root(f, &o);
    if (rc) return rc;
  }
  const char *p = path;
  char name[1024];
  for (;;) {
    while (*p == '/') p++;
    if (!*p) break;
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n >= sizeof name)
      return h5_err(f, H5_EINVAL, "a name in the path is over %zu bytes", sizeof name - 1);
    memcpy(name, p, n);
    name[n] = '\0';
    p += n;
    if (strcmp(name, ".") == 0) continue;
    if (h5_obj_kind(o) != H5_KIND_GROUP)
      return h5_err(f, H5_ENOTFOUND, "'%.*s' is not a group", (int)(p - path - n), path);
    const h5_link *l;
    int rc = h5_group_find(o, name, &l);
    if (rc == H5_ENOTFOUND)
      return h5_err(f, H5_ENOTFOUND, "no object '%.*s'", (int)(p - path), path);
    if (rc) return rc;
    if (l->type == H5_LINK_HARD) {
      rc = h5_obj_open(f, l->addr, &o);
      if (rc) return rc;
    } else if (l->type == H5_LINK_SOFT) {
      if (++*hops > H5_MAX_SOFT_HOPS)
        return h5_err(f, H5_EINVAL, "'%.*s': more than %d soft links in a row (a loop?)",
                      (int)(p - path), path, H5_MAX_SOFT_HOPS);
      char *target = strdup(l->target ? l->target : "");
      if (!target) return h5_err(f, H5_ENOMEM, "out of memory");
      rc = resolve(f, o, target, hops, &o);
      free(target);
      if (rc == H5_ENOTFOUND) {
        char why[sizeof f->err];
        memcpy(why, f->err, sizeof why);
        h5_err(f, H5_ENOTFOUND, "'%.*s' is a dangling soft link: %s", (int)(p - path), path,
               why);
      }
      if (rc) return rc;
    } else if (l->type == H5_LINK_EXTERNAL) {
      return h5_err(f, H5_EUNSUPPORTED,
                    "'%.*s' is an external link to '%s' in file '%s' (open that file instead)",
                    (int)(p - path), path, l->target ? l->target : "",
                    l->filename ? l->filename : "");
    } else {
      return h5_err(f, H5_EUNSUPPORTED, "'%.*s' is a user-defined link (type %d)",
                    (int)(p - path), path, l->type);
    }
  }
  *out = o;
  return H5_OK;
}

int h5_obj_open_path(h5_file *f, const char *path, h5_obj **out) {
  h5_obj *root;
  int hops = 0;
  *out = NULL;
  int rc = h5_root(f, &root);
  if (rc) return rc;
  return resolve(f, root, path, &hops, out);
}
