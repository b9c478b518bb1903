/*
** test/tools/h5walk.c - walk an HDF5 file with lib/h5 and print what a reader sees,
** as JSON shaped like the conformance fixtures' expected/NAME.json, for
** test/interop/h5_conformance.py to compare.
**
**   h5walk FILE [MAX_BYTES]
**
** Objects are visited depth-first in name order from "/", each hard-linked
** object once under its first path; soft, external and user-defined links
** are listed as objects of their own.  Dataset values are printed when they
** take at most MAX_BYTES (default 64 MiB) in memory.  Exit status: 0 when
** the file was walked (single objects may still report errors), 1 when it
** could not be opened or walked, 2 on bad usage.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5/h5.h"
#include "util/strbuf.h"

typedef struct entry {
  char *path;
  h5_obj *obj;   /* NULL for soft/external/ud links */
  h5_link link;  /* for links: type, target, filename copied below */
  char *target, *filename;
} entry;

typedef struct walker {
  h5_file *f;
  entry *v;
  size_t n, cap;
  uint64_t *seen;
  size_t nseen, capseen;
  uint64_t max_bytes;
  int failed;
} walker;

static char *join(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  char *s = malloc(a + b + 2);
  if (!s) exit(3);
  memcpy(s, dir, a);
  size_t k = a;
  if (a == 0 || dir[a - 1] != '/') s[k++] = '/';
  memcpy(s + k, name, b + 1);
  return s;
}

static entry *add_entry(walker *w, char *path) {
  if (w->n == w->cap) {
    w->cap = w->cap ? w->cap * 2 : 64;
    w->v = realloc(w->v, w->cap * sizeof *w->v);
    if (!w->v) exit(3);
  }
  entry *e = &w->v[w->n++];
  memset(e, 0, sizeof *e);
  e->path = path;
  return e;
}

static int seen(walker *w, uint64_t addr) {
  for (size_t i = 0; i < w->nseen; i++)
    if (w->seen[i] == addr) return 1;
  if (w->nseen == w->capseen) {
    w->capseen = w->capseen ? w->capseen * 2 : 64;
    w->seen = realloc(w->seen, w->capseen * sizeof *w->seen);
    if (!w->seen) exit(3);
  }
  w->seen[w->nseen++] = addr;
  return 0;
}

static int visit(walker *w, h5_obj *g, const char *path);

typedef struct link_ctx {
  walker *w;
  const char *path;
  char **names;
  h5_link *links;
  char **targets, **files;
  size_t n, cap;
} link_ctx;

static char *sdup(const char *s) {
  if (!s) return NULL;
  char *d = strdup(s);
  if (!d) exit(3);
  return d;
}

static int collect(void *ctx, const h5_link *l) {
  link_ctx *c = ctx;
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 16;
    c->names = realloc(c->names, c->cap * sizeof *c->names);
    c->links = realloc(c->links, c->cap * sizeof *c->links);
    c->targets = realloc(c->targets, c->cap * sizeof *c->targets);
    c->files = realloc(c->files, c->cap * sizeof *c->files);
    if (!c->names || !c->links || !c->targets || !c->files) exit(3);
  }
  c->names[c->n] = sdup(l->name);
  c->links[c->n] = *l;
  c->targets[c->n] = sdup(l->target);
  c->files[c->n] = sdup(l->filename);
  c->n++;
  return 0;
}

static int visit(walker *w, h5_obj *g, const char *path) {
  link_ctx c = {w, path, NULL, NULL, NULL, NULL, 0, 0};
  int rc = h5_group_iter(g, collect, &c);
  if (rc) {
    fprintf(stderr, "h5walk: %s: %s\n", path, h5_errmsg(w->f));
    w->failed = 1;
  }
  for (size_t i = 0; rc == 0 && i < c.n; i++) {
    char *p = join(path, c.names[i]);
    const h5_link *l = &c.links[i];
    if (l->type != H5_LINK_HARD) {
      entry *e = add_entry(w, p);
      e->link = *l;
      e->target = c.targets[i];
      e->filename = c.files[i];
      c.targets[i] = c.files[i] = NULL;
      continue;
    }
    if (seen(w, l->addr)) {
      free(p);
      continue;
    }
    h5_obj *o;
    if (h5_obj_open(w->f, l->addr, &o)) {
      fprintf(stderr, "h5walk: %s: %s\n", p, h5_errmsg(w->f));
      free(p);
      w->failed = 1;
      rc = 1;
      break;
    }
    entry *e = add_entry(w, p);
    e->obj = o;
    if (h5_obj_kind(o) == H5_KIND_GROUP) {
      char *keep = sdup(p);
      rc = visit(w, o, keep);
      free(keep);
    }
  }
  for (size_t i = 0; i < c.n; i++) {
    free(c.names[i]);
    free(c.targets[i]);
    free(c.files[i]);
  }
  free(c.names);
  free(c.links);
  free(c.targets);
  free(c.files);
  return rc;
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const entry *)a)->path, ((const entry *)b)->path);
}

static void put_dims(strbuf *o, int rank, const uint64_t *dims, int unlimited_null) {
  if (rank < 0) {
    strbuf_puts(o, "null");
    return;
  }
  strbuf_putc(o, '[');
  for (int i = 0; i < rank; i++) {
    if (i) strbuf_puts(o, ", ");
    if (unlimited_null && dims[i] == UINT64_MAX)
      strbuf_puts(o, "null");
    else
      strbuf_printf(o, "%llu", (unsigned long long)dims[i]);
  }
  strbuf_putc(o, ']');
}

typedef struct attr_ctx {
  h5_file *f;
  strbuf *o;
  int n;
} attr_ctx;

static int put_attr(void *ctx, const h5_attr *a) {
  attr_ctx *c = ctx;
  strbuf *o = c->o;
  if (c->n++) strbuf_puts(o, ", ");
  strbuf_json_string(o, a->name, strlen(a->name));
  if (a->err) { /* an attribute this reader cannot decode: the others are still listed */
    strbuf_puts(o, ": {\"dtype\": null, \"shape\": null, \"value\": null, \"read_error\": ");
    strbuf_json_string(o, a->err, strlen(a->err));
    strbuf_putc(o, '}');
    return 0;
  }
  strbuf_puts(o, ": {\"dtype\": ");
  if (h5_json_dtype(a->type, o) != H5_OK) strbuf_puts(o, "null");
  strbuf_puts(o, ", \"shape\": ");
  put_dims(o, a->rank, a->dims, 0);
  strbuf_printf(o, ", \"elements\": %llu, \"value\": ", (unsigned long long)a->nelems);
  if (a->rank < 0) {
    strbuf_puts(o, "null, \"empty\": true}");
    return 0;
  }
  strbuf tmp = {0};
  if (h5_json_values(c->f, a->type, a->data, a->rank, a->dims, &tmp) == H5_OK) {
    strbuf_append(o, tmp.buf ? tmp.buf : "null", tmp.buf ? tmp.len : 4);
    strbuf_putc(o, '}');
  } else {
    strbuf_puts(o, "null, \"read_error\": ");
    strbuf_json_string(o, h5_errmsg(c->f), strlen(h5_errmsg(c->f)));
    strbuf_putc(o, '}');
  }
  strbuf_free(&tmp);
  return 0;
}

/* A comment as JSON text (comments are ASCII, but only UTF-8 goes as is) */
static void put_text_json(strbuf *o, const char *s) {
  strbuf tmp = {0};
  size_t n = strlen(s);
  int ascii = 1;
  for (size_t i = 0; i < n; i++) ascii &= (unsigned char)s[i] < 0x80;
  if (ascii)
    strbuf_json_string(o, s, n);
  else
    strbuf_puts(o, "null");
  strbuf_free(&tmp);
}

static const char *kind_name(h5_kind k) {
  switch (k) {
  case H5_KIND_GROUP: return "group";
  case H5_KIND_DATASET: return "dataset";
  case H5_KIND_DATATYPE: return "datatype";
  default: return "other";
  }
}

static void put_dataset(walker *w, h5_obj *d, strbuf *o) {
  h5_dset_info info;
  if (h5_dset_info_get(d, &info)) {
    strbuf_puts(o, ", \"values\": null, \"read_error\": ");
    strbuf_json_string(o, h5_errmsg(w->f), strlen(h5_errmsg(w->f)));
    return;
  }
  static const char *layouts[] = {"compact", "contiguous", "chunked", "virtual"};
  strbuf_puts(o, ", \"dtype\": ");
  if (h5_json_dtype(info.type, o) != H5_OK) strbuf_puts(o, "null");
  strbuf_puts(o, ", \"shape\": ");
  put_dims(o, info.rank, info.dims, 0);
  strbuf_puts(o, ", \"maxshape\": ");
  put_dims(o, info.rank, info.maxdims, 1);
  strbuf_printf(o, ", \"layout\": \"%s\"",
                info.external ? "external" : layouts[info.layout & 3]);
  strbuf_puts(o, ", \"chunks\": ");
  if (info.layout == H5_LAYOUT_CHUNKED)
    put_dims(o, info.chunk_rank, info.chunk, 0);
  else
    strbuf_puts(o, "null");
  strbuf_puts(o, ", \"filters\": [");
  for (int i = 0; i < info.nfilters; i++)
    strbuf_printf(o, "%s%u", i ? ", " : "", info.filters[i].id);
  strbuf_printf(o, "], \"elements\": %llu", (unsigned long long)info.nelems);
  if (info.rank < 0) {
    strbuf_puts(o, ", \"values\": null, \"empty\": true");
    return;
  }
  uint64_t bytes = info.nelems * (uint64_t)info.type->size;
  if (info.type->size && info.nelems > UINT64_MAX / info.type->size) bytes = UINT64_MAX;
  if (bytes > w->max_bytes) {
    strbuf_puts(o, ", \"values\": null, \"not_read\": \"too large\"");
    return;
  }
  uint8_t *buf = malloc(bytes ? (size_t)bytes : 1);
  if (!buf) exit(3);
  strbuf tmp = {0};
  if (h5_dset_read(d, buf, (size_t)bytes) == H5_OK &&
      h5_json_values(w->f, info.type, buf, info.rank, info.dims, &tmp) == H5_OK) {
    strbuf_puts(o, ", \"values\": ");
    strbuf_append(o, tmp.buf ? tmp.buf : "null", tmp.buf ? tmp.len : 4);
  } else {
    strbuf_puts(o, ", \"values\": null, \"read_error\": ");
    strbuf_json_string(o, h5_errmsg(w->f), strlen(h5_errmsg(w->f)));
  }
  strbuf_free(&tmp);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: h5walk FILE [MAX_BYTES]\n");
    return 2;
  }
  char err[512];
  walker w = {0};
  w.max_bytes = argc == 3 ? strtoull(argv[2], NULL, 10) : (uint64_t)64 << 20;
  if (h5_open(argv[1], &w.f, err, sizeof err)) {
    fprintf(stderr, "h5walk: %s\n", err);
    return 1;
  }
  h5_obj *root;
  if (h5_root(w.f, &root)) {
    fprintf(stderr, "h5walk: %s\n", h5_errmsg(w.f));
    h5_close(w.f);
    return 1;
  }
  entry *r = add_entry(&w, sdup("/"));
  r->obj = root;
  seen(&w, h5_obj_addr(root));
  if (h5_obj_kind(root) == H5_KIND_GROUP) visit(&w, root, "/");
  qsort(w.v, w.n, sizeof *w.v, by_path);

  strbuf o = {0};
  strbuf_puts(&o, "{\"objects\": [");
  for (size_t i = 0; i < w.n; i++) {
    entry *e = &w.v[i];
    strbuf_puts(&o, i ? ",\n " : "\n ");
    strbuf_puts(&o, "{\"path\": ");
    strbuf_json_string(&o, e->path, strlen(e->path));
    if (!e->obj) {
      const char *k = e->link.type == H5_LINK_SOFT ? "softlink"
                      : e->link.type == H5_LINK_EXTERNAL ? "extlink" : "udlink";
      strbuf_printf(&o, ", \"kind\": \"%s\"", k);
      if (e->target) {
        strbuf_puts(&o, ", \"target\": ");
        strbuf_json_string(&o, e->target, strlen(e->target));
      }
      if (e->filename) {
        strbuf_puts(&o, ", \"filename\": ");
        strbuf_json_string(&o, e->filename, strlen(e->filename));
      }
      if (e->link.type >= H5_LINK_UD && e->link.type != H5_LINK_EXTERNAL)
        strbuf_printf(&o, ", \"link_type\": %d", e->link.type);
      strbuf_putc(&o, '}');
      continue;
    }
    h5_kind kind = h5_obj_kind(e->obj);
    strbuf_printf(&o, ", \"kind\": \"%s\", \"addr\": %llu", kind_name(kind),
                  (unsigned long long)h5_obj_addr(e->obj));
    if (h5_obj_mtime(e->obj) >= 0)
      strbuf_printf(&o, ", \"mtime\": %lld", (long long)h5_obj_mtime(e->obj));
    if (h5_obj_comment(e->obj)) {
      strbuf_puts(&o, ", \"comment\": ");
      put_text_json(&o, h5_obj_comment(e->obj));
    }
    strbuf_puts(&o, ", \"attrs\": {");
    strbuf attrs = {0};
    attr_ctx ac = {w.f, &attrs, 0};
    if (h5_attr_iter(e->obj, put_attr, &ac) == H5_OK) {
      strbuf_append(&o, attrs.buf ? attrs.buf : "", attrs.len);
      strbuf_putc(&o, '}');
    } else {
      o.len -= 1; /* drop the '{' */
      strbuf_puts(&o, "null, \"attrs_error\": ");
      strbuf_json_string(&o, h5_errmsg(w.f), strlen(h5_errmsg(w.f)));
    }
    strbuf_free(&attrs);
    if (kind == H5_KIND_GROUP) {
      link_ctx c = {&w, e->path, NULL, NULL, NULL, NULL, 0, 0};
      strbuf_puts(&o, ", \"members\": [");
      if (h5_group_iter(e->obj, collect, &c) == H5_OK)
        for (size_t k = 0; k < c.n; k++) {
          if (k) strbuf_puts(&o, ", ");
          strbuf_json_string(&o, c.names[k], strlen(c.names[k]));
        }
      strbuf_putc(&o, ']');
      for (size_t k = 0; k < c.n; k++) {
        free(c.names[k]);
        free(c.targets[k]);
        free(c.files[k]);
      }
      free(c.names);
      free(c.links);
      free(c.targets);
      free(c.files);
    } else if (kind == H5_KIND_DATASET) {
      put_dataset(&w, e->obj, &o);
    }
    strbuf_putc(&o, '}');
  }
  strbuf_puts(&o, "\n]}\n");
  if (strbuf_failed(&o)) {
    fprintf(stderr, "h5walk: out of memory\n");
    return 3;
  }
  fwrite(o.buf, 1, o.len, stdout);
  strbuf_free(&o);
  for (size_t i = 0; i < w.n; i++) {
    free(w.v[i].path);
    free(w.v[i].target);
    free(w.v[i].filename);
  }
  free(w.v);
  free(w.seen);
  h5_close(w.f);
  return w.failed ? 1 : 0;
}
