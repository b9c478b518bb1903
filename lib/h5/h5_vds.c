/*
** lib/h5/h5_vds.c - virtual datasets: the mappings a VDS keeps in a global
** heap object, its extent, and reading it from its source datasets.
**
** A mapping pairs a selection of the virtual dataset with a selection of a
** source dataset (a file name and a dataset path, "." naming the virtual
** dataset's own file); the k-th element of one is the k-th element of the
** other, each selection taken in C order (of the union of its blocks, for
** an irregular hyperslab).  One dimension of a regular
** hyperslab may be unlimited (its count or its block): such a mapping grows
** with its source, and with "%b" in a name each block of the virtual
** selection is another source (f-0.h5, f-1.h5, ...).
**
** The extent is computed on opening as libhdf5's default view
** (H5D_VDS_LAST_AVAILABLE) does: in each unlimited dimension the largest of
** what the mappings' sources reach, probing printf sources from block 0 to
** the first missing one (a gap of 0).  What no mapping covers, and what a
** missing source file or dataset would hold, reads as the fill value.
**
** Source files are trusted as external data files are (h5_dset.c): names
** relative to the virtual dataset's file and inside its directory; an
** absolute name, a name with "..", or any other file for a file image in
** memory is an error, never silently fill.  Sources that are themselves
** virtual are followed H5_VDS_MAX_DEPTH deep at most, and one file opens
** H5_VDS_MAX_SOURCES source files at most.
*/
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "h5_int.h"

#define H5_VDS_MAX_SOURCES 4096       /* source files one file keeps open */
#define H5_VDS_MAX_MAPPINGS 1000000   /* entries of one heap block */
#define H5_VDS_MAX_RUNS (1u << 22)    /* runs of an irregular or point selection */
#define H5_VDS_BOX_BYTES ((uint64_t)64 << 20) /* source data read at once, at most */
#define UNLIM UINT64_MAX

/* ---- selections ----------------------------------------------------------- */

enum { SEL_NONE, SEL_ALL, SEL_REG, SEL_LIST };

/* One dimension of a regular hyperslab: blocks of `block` elements every
** `stride`, `count` of them, the last one `last` long (a clipped selection
** may end in a partial block).  count or block UNLIM: unlimited. */
typedef struct dimsel {
  uint64_t start, stride, count, block, last;
} dimsel;

/* A list selection: runs along the last dimension, in selection order. */
typedef struct runs {
  uint64_t n, cap;
  uint64_t *at;  /* n x rank: the first element of each run */
  uint64_t *len; /* n */
  uint64_t *pos; /* n: the selection index of each run's first element */
} runs;

typedef struct vsel {
  int kind;
  int rank;          /* -1: as the dataspace it applies to (all, none) */
  int unlim;         /* SEL_REG: the dimension with an unlimited count or block, or -1 */
  dimsel d[H5_MAX_RANK];
  /* SEL_LIST, as stored: n blocks, each its first and last corners */
  uint64_t n;
  uint64_t *c;
  runs r;            /* built on first use */
  int built;
  uint64_t npoints;  /* SEL_REG (finite) and SEL_LIST once built */
} vsel;

static void vsel_free(vsel *s) {
  free(s->c);
  free(s->r.at);
  free(s->r.len);
  free(s->r.pos);
  memset(s, 0, sizeof *s);
}

/* The number of elements of dimension sel d (finite). */
static uint64_t dim_size(const dimsel *d) {
  return d->count ? (d->count - 1) * d->block + d->last : 0;
}

/* Whether coordinate x is in dimension sel d; its index there in *idx. */
static int dim_index(const dimsel *d, uint64_t x, uint64_t *idx) {
  if (x < d->start || !d->count || !d->block) return 0;
  uint64_t off = x - d->start, a, b;
  if (d->count == 1) {
    a = 0;
    b = off;
  } else {
    a = off / d->stride;
    b = off % d->stride;
  }
  if (a >= d->count || b >= (a == d->count - 1 ? d->last : d->block)) return 0;
  *idx = a * d->block + b;
  return 1;
}

/* The coordinate of index i of dimension sel d. */
static uint64_t dim_coord(const dimsel *d, uint64_t i) {
  return d->count == 1 ? d->start + i : d->start + (i / d->block) * d->stride + i % d->block;
}

/* One past the last coordinate of d (finite; 0 when it is empty), or
** UINT64_MAX on overflow. */
static uint64_t dim_end(const dimsel *d) {
  if (!d->count || !d->block) return 0;
  uint64_t span;
  if (d->count - 1 > (UINT64_MAX - d->last) / (d->stride ? d->stride : 1)) return UINT64_MAX;
  span = (d->count - 1) * d->stride + d->last;
  return span > UINT64_MAX - d->start ? UINT64_MAX : d->start + span;
}

/* Read an unsigned of w bytes; all ones is H5S_UNLIMITED. */
static uint64_t sel_uint(h5_cur *c, int w) {
  uint64_t v = h5c_uint(c, w);
  if (w < 8 && v == (UINT64_C(1) << (8 * w)) - 1) return UNLIM;
  return v;
}

static int sel_bad(h5_file *f, const char *what, const char *why) {
  return h5_err(f, H5_ECORRUPT, "virtual dataset mapping: %s selection: %s", what, why);
}

/* A regular hyperslab's dimensions, checked: at most one unlimited
** dimension, blocks that do not overlap, coordinates below 2^63. */
static int reg_check(h5_file *f, vsel *s, const char *what) {
  s->unlim = -1;
  for (int k = 0; k < s->rank; k++) {
    dimsel *d = &s->d[k];
    if (d->count == UNLIM || d->block == UNLIM) {
      if (s->unlim >= 0 || (d->count == UNLIM && d->block == UNLIM))
        return sel_bad(f, what, "more than one unlimited count or block");
      s->unlim = k;
    }
    if (d->count == 1) d->stride = d->block;
    if (d->count != 1 && d->count && d->block && d->stride < d->block)
      return sel_bad(f, what, "hyperslab blocks overlap");
    if (d->count == UNLIM && !d->block)
      return sel_bad(f, what, "an unlimited count of empty blocks");
    if (d->start > (uint64_t)INT64_MAX || (d->stride > (uint64_t)INT64_MAX && d->count != 1))
      return sel_bad(f, what, "hyperslab start or stride out of range");
    d->last = d->block;
    if (d->count != UNLIM && d->block != UNLIM && dim_end(d) > (uint64_t)INT64_MAX)
      return sel_bad(f, what, "hyperslab ends beyond 2^63");
  }
  return H5_OK;
}

/* Decode one serialized dataspace selection (the form H5Sencode and the
** VDS heap block use): a 4-byte type, then its version and data. */
static int sel_decode(h5_file *f, h5_cur *c, vsel *s, const char *what) {
  memset(s, 0, sizeof *s);
  s->rank = -1;
  s->unlim = -1;
  uint32_t type = h5c_u32(c);
  uint32_t version = h5c_u32(c);
  if (c->bad) return sel_bad(f, what, "truncated");
  if (type == 0 || type == 3) { /* none, all: version 1, 8 reserved bytes */
    h5c_skip(c, 8);
    if (version != 1) return sel_bad(f, what, "unknown version");
    s->kind = type == 0 ? SEL_NONE : SEL_ALL;
    return c->bad ? sel_bad(f, what, "truncated") : H5_OK;
  }
  if (type == 1) return sel_bad(f, what, "a point selection (mappings have none)");
  if (type != 2) return sel_bad(f, what, "unknown selection type");
  /* a hyperslab: version 1 lists blocks in 4-byte numbers; version 2 is
  ** regular in 8-byte numbers (or lists blocks in them); version 3 either,
  ** in numbers of 2, 4 or 8 bytes */
  int w = 4, flags = 0;
  if (version == 1) {
    h5c_skip(c, 8); /* reserved, length */
  } else if (version == 2) {
    flags = h5c_u8(c);
    h5c_skip(c, 4); /* length (libhdf5 1.10 writes 4: not relied on) */
    w = 8;
  } else if (version == 3) {
    flags = h5c_u8(c);
    w = h5c_u8(c);
  } else {
    return sel_bad(f, what, "unknown version");
  }
  if (flags & ~1) return sel_bad(f, what, "unknown flags");
  if (w != 2 && w != 4 && w != 8) return sel_bad(f, what, "bad encoding size");
  uint32_t rank = h5c_u32(c);
  if (c->bad) return sel_bad(f, what, "truncated");
  if (rank < 1 || rank > H5_MAX_RANK) return sel_bad(f, what, "bad rank");
  s->rank = (int)rank;
  if (flags & 1) { /* regular */
    s->kind = SEL_REG;
    for (int k = 0; k < s->rank; k++) {
      s->d[k].start = sel_uint(c, w);
      s->d[k].stride = sel_uint(c, w);
      s->d[k].count = sel_uint(c, w);
      s->d[k].block = sel_uint(c, w);
    }
    if (c->bad) return sel_bad(f, what, "truncated");
    return reg_check(f, s, what);
  }
  /* blocks: their number, then each block's first and last corners */
  uint64_t n = h5c_uint(c, w);
  uint64_t per = 2 * (uint64_t)rank;
  if (c->bad || n > h5c_left(c) / ((uint64_t)w * per))
    return sel_bad(f, what, "more blocks than it holds");
  if (n > H5_VDS_MAX_RUNS)
    return h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset mapping: %s selection of %llu blocks (the limit is %u)",
                  what, (unsigned long long)n, H5_VDS_MAX_RUNS);
  s->kind = SEL_LIST;
  s->n = n;
  s->c = malloc((size_t)(n * per + 1) * sizeof *s->c);
  if (!s->c) return h5_err(f, H5_ENOMEM, "out of memory");
  for (uint64_t i = 0; i < n * per; i++) {
    s->c[i] = h5c_uint(c, w);
    if (s->c[i] > (uint64_t)INT64_MAX) return sel_bad(f, what, "coordinate beyond 2^63");
  }
  if (c->bad) return sel_bad(f, what, "truncated");
  for (uint64_t i = 0; i < n; i++)
    for (uint32_t k = 0; k < rank; k++)
      if (s->c[i * per + k] > s->c[i * per + rank + k])
        return sel_bad(f, what, "a block ends before it starts");
  if (!n) { /* no blocks: nothing */
    s->kind = SEL_NONE;
    return H5_OK;
  }
  if (n == 1) { /* one block: a regular hyperslab */
    s->kind = SEL_REG;
    for (uint32_t k = 0; k < rank; k++) {
      s->d[k].start = s->c[k];
      s->d[k].count = 1;
      s->d[k].block = s->c[rank + k] - s->c[k] + 1;
      s->d[k].stride = s->d[k].block;
    }
    return reg_check(f, s, what);
  }
  return H5_OK;
}

/* ---- list selections as runs ---------------------------------------------- */

static int runs_add(runs *r, int rank, const uint64_t *at, uint64_t len) {
  if (r->n == r->cap) {
    if (r->n >= H5_VDS_MAX_RUNS) return H5_EUNSUPPORTED;
    uint64_t ncap = r->cap ? 2 * r->cap : 16;
    uint64_t *a = realloc(r->at, (size_t)(ncap * (uint64_t)(rank ? rank : 1)) * sizeof *a);
    if (a) r->at = a;
    uint64_t *l = realloc(r->len, (size_t)ncap * sizeof *l);
    if (l) r->len = l;
    uint64_t *p = realloc(r->pos, (size_t)ncap * sizeof *p);
    if (p) r->pos = p;
    if (!a || !l || !p) return H5_ENOMEM;
    r->cap = ncap;
  }
  memcpy(r->at + r->n * (uint64_t)rank, at, (size_t)rank * sizeof *at);
  r->len[r->n] = len;
  r->pos[r->n] = r->n ? r->pos[r->n - 1] + r->len[r->n - 1] : 0;
  r->n++;
  return H5_OK;
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Intervals (start, end inclusive) sorted by start. */
static int ival_cmp(const void *a, const void *b) { return u64_cmp(a, b); }

/* The union of blocks act[0..nact) in C order, from dimension k on (the
** coordinates before k in at). */
static int sweep(const vsel *s, int k, const uint32_t *act, size_t nact, uint64_t *at,
                 runs *r) {
  int rank = s->rank;
  uint64_t per = 2 * (uint64_t)rank;
  if (k == rank - 1) {
    uint64_t *iv = malloc(2 * nact * sizeof *iv);
    if (!iv) return H5_ENOMEM;
    for (size_t i = 0; i < nact; i++) {
      iv[2 * i] = s->c[act[i] * per + k];
      iv[2 * i + 1] = s->c[act[i] * per + rank + k];
    }
    qsort(iv, nact, 2 * sizeof *iv, ival_cmp);
    int rc = H5_OK;
    for (size_t i = 0; i < nact && rc == H5_OK;) {
      uint64_t lo = iv[2 * i], hi = iv[2 * i + 1];
      for (i++; i < nact && iv[2 * i] <= hi + 1; i++)
        if (iv[2 * i + 1] > hi) hi = iv[2 * i + 1];
      at[k] = lo;
      rc = runs_add(r, rank, at, hi - lo + 1);
    }
    free(iv);
    return rc;
  }
  /* the coordinates where the set of blocks covering dimension k changes */
  uint64_t *ev = malloc(2 * nact * sizeof *ev);
  uint32_t *sub = malloc((nact + 1) * sizeof *sub);
  if (!ev || !sub) {
    free(ev);
    free(sub);
    return H5_ENOMEM;
  }
  for (size_t i = 0; i < nact; i++) {
    ev[2 * i] = s->c[act[i] * per + k];
    ev[2 * i + 1] = s->c[act[i] * per + rank + k] + 1;
  }
  qsort(ev, 2 * nact, sizeof *ev, u64_cmp);
  int rc = H5_OK;
  for (size_t e = 0; e + 1 < 2 * nact && rc == H5_OK; e++) {
    uint64_t lo = ev[e], hi = ev[e + 1];
    if (lo == hi) continue;
    size_t nsub = 0;
    for (size_t i = 0; i < nact; i++)
      if (s->c[act[i] * per + k] <= lo && s->c[act[i] * per + rank + k] >= lo)
        sub[nsub++] = act[i];
    for (uint64_t x = lo; x < hi && nsub && rc == H5_OK; x++) {
      at[k] = x;
      rc = sweep(s, k + 1, sub, nsub, at, r);
    }
  }
  free(ev);
  free(sub);
  return rc;
}

/* The runs of a list selection, built on first use. */
static int list_build(h5_file *f, vsel *s) {
  if (s->built) return H5_OK;
  uint32_t *act = malloc((size_t)(s->n + 1) * sizeof *act);
  uint64_t at[H5_MAX_RANK] = {0};
  if (!act) return h5_err(f, H5_ENOMEM, "out of memory");
  for (uint64_t i = 0; i < s->n; i++) act[i] = (uint32_t)i;
  int rc = sweep(s, 0, act, (size_t)s->n, at, &s->r);
  free(act);
  if (rc == H5_ENOMEM) return h5_err(f, H5_ENOMEM, "out of memory");
  if (rc)
    return h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset mapping: a selection of more than %u runs",
                  H5_VDS_MAX_RUNS);
  s->npoints = s->r.n ? s->r.pos[s->r.n - 1] + s->r.len[s->r.n - 1] : 0;
  s->built = 1;
  return H5_OK;
}

/* ---- a selection made concrete ---------------------------------------------- */

/* A selection over a known extent: a product of dimension selections
** (regular, clipped), or a list's runs; npoints elements. */
typedef struct csel {
  int rank;
  int list;
  dimsel d[H5_MAX_RANK];
  uint64_t size[H5_MAX_RANK]; /* elements per dimension (product form) */
  const runs *r;              /* list form */
  uint64_t npoints;
} csel;

/* Clip an unlimited dimension u so that it selects n elements ("slices")
** of that dimension; the selection then ends at dim_end. */
static void clip_slices(dimsel *d, uint64_t n) {
  if (d->block == UNLIM) {
    d->count = n ? 1 : 0;
    d->block = d->last = n;
    d->stride = n;
  } else if (!d->block) {
    d->count = 0;
  } else {
    d->count = (n + d->block - 1) / d->block;
    d->last = n - (d->count ? (d->count - 1) * d->block : 0);
  }
}

/* Clip an unlimited dimension to the extent e: the elements below e. */
static uint64_t clip_extent(dimsel *d, uint64_t e) {
  if (e <= d->start) {
    clip_slices(d, 0);
    return 0;
  }
  uint64_t room = e - d->start, n;
  if (d->block == UNLIM) {
    n = room;
  } else if (d->count == 1 || !d->block) {
    n = room < d->block ? room : d->block;
  } else {
    uint64_t full = room / d->stride, rem = room % d->stride;
    n = full * d->block + (rem < d->block ? rem : d->block);
  }
  clip_slices(d, n);
  return n;
}

/* s made concrete over dims (rank elements): all of it for SEL_ALL, the
** unlimited dimension clipped to `slices` elements (UNLIM: to dims). */
static int csel_make(h5_file *f, vsel *s, int rank, const uint64_t *dims, uint64_t slices,
                     csel *out) {
  memset(out, 0, sizeof *out);
  out->rank = rank;
  if (s->rank >= 0 && s->rank != rank)
    return h5_err(f, H5_ECORRUPT,
                  "virtual dataset mapping: a selection of rank %d for a dataspace of rank %d",
                  s->rank, rank);
  if (s->kind == SEL_LIST) {
    int rc = list_build(f, s);
    if (rc) return rc;
    out->list = 1;
    out->r = &s->r;
    out->npoints = s->npoints;
    return H5_OK;
  }
  uint64_t n = 1;
  for (int k = 0; k < rank; k++) {
    dimsel *d = &out->d[k];
    if (s->kind == SEL_ALL) {
      *d = (dimsel){0, dims[k], dims[k] ? 1 : 0, dims[k], dims[k]};
    } else if (s->kind == SEL_NONE) {
      *d = (dimsel){0, 1, 0, 0, 0};
    } else {
      *d = s->d[k];
      if (k == s->unlim) {
        if (slices == UNLIM) clip_extent(d, dims[k]);
        else clip_slices(d, slices);
      }
    }
    out->size[k] = dim_size(d);
    if (out->size[k] && n > UINT64_MAX / out->size[k])
      return h5_err(f, H5_ECORRUPT, "virtual dataset mapping: a selection of 2^64 elements");
    n *= out->size[k];
  }
  out->npoints = s->kind == SEL_NONE ? 0 : n;
  return H5_OK;
}

/* The coordinates of element p of c. */
static void csel_coords(const csel *c, uint64_t p, uint64_t *x) {
  if (c->list) {
    uint64_t lo = 0, hi = c->r->n; /* the last run with pos <= p */
    while (hi - lo > 1) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (c->r->pos[mid] <= p) lo = mid;
      else hi = mid;
    }
    memcpy(x, c->r->at + lo * (uint64_t)c->rank, (size_t)c->rank * sizeof *x);
    if (c->rank) x[c->rank - 1] += p - c->r->pos[lo];
    return;
  }
  for (int k = c->rank - 1; k >= 0; k--) {
    x[k] = dim_coord(&c->d[k], p % c->size[k]);
    p /= c->size[k];
  }
}

/* ---- the mappings ---------------------------------------------------------------- */

typedef struct vmap {
  char *file, *dset; /* as stored */
  int printf_;       /* "%b" in either name */
  vsel virt, src;
  /* found when the extent is computed */
  uint64_t nsub;     /* printf: blocks 0 .. nsub-1 may have a source */
  uint64_t slices;   /* unlimited, not printf: elements of the unlimited dimension
                        the source gives (UNLIM: not unlimited) */
} vmap;

struct h5_vds {
  uint64_t n;
  vmap *m;
};

void h5_vds_free(struct h5_vds *v) {
  if (!v) return;
  for (uint64_t i = 0; i < v->n; i++) {
    free(v->m[i].file);
    free(v->m[i].dset);
    vsel_free(&v->m[i].virt);
    vsel_free(&v->m[i].src);
  }
  free(v->m);
  free(v);
}

/* A NUL-terminated string at the cursor, copied. */
static int cstr(h5_file *f, h5_cur *c, char **out) {
  const uint8_t *nul = h5c_left(c) ? memchr(c->p, 0, h5c_left(c)) : NULL;
  if (!nul) return h5_err(f, H5_ECORRUPT, "virtual dataset mapping: a name without its end");
  size_t len = (size_t)(nul - c->p);
  *out = malloc(len + 1);
  if (!*out) return h5_err(f, H5_ENOMEM, "out of memory");
  memcpy(*out, c->p, len + 1);
  h5c_skip(c, len + 1);
  return H5_OK;
}

/* Whether a source name has printf substitutions: "%b" (and "%%" for a
** percent sign); any other use of '%' is an error. */
static int name_printf(h5_file *f, const char *name, int *has) {
  *has = 0;
  for (const char *p = name; *p; p++) {
    if (*p != '%') continue;
    if (p[1] == 'b') *has = 1;
    else if (p[1] != '%')
      return h5_err(f, H5_ECORRUPT,
                    "virtual dataset mapping: source name \"%s\": '%%' must be followed by "
                    "'b' or '%%'",
                    name);
    p++;
  }
  return H5_OK;
}

/* name with "%b" replaced by block and "%%" by '%'. */
static int name_subst(h5_file *f, const char *name, uint64_t block, char *out, size_t cap) {
  size_t n = 0;
  for (const char *p = name; *p; p++) {
    char num[24];
    const char *add = p;
    size_t len = 1;
    if (*p == '%' && p[1] == 'b') {
      len = (size_t)snprintf(num, sizeof num, "%llu", (unsigned long long)block);
      add = num;
      p++;
    } else if (*p == '%' && p[1] == '%') {
      p++;
    }
    if (n + len >= cap) return h5_err(f, H5_EUNSUPPORTED, "virtual dataset: source name too long");
    memcpy(out + n, add, len);
    n += len;
  }
  out[n] = '\0';
  return H5_OK;
}

/* An earlier mapping's name, for a version 1 block's shared names: the
** index of the mapping that stores it (0 for the first). */
static int shared_name(h5_file *f, h5_cur *c, const struct h5_vds *v, uint64_t i, int file,
                       char **out) {
  uint64_t j = h5c_len(c, f);
  if (c->bad) return h5_err(f, H5_ECORRUPT, "virtual dataset mappings truncated");
  if (j >= i)
    return h5_err(f, H5_ECORRUPT,
                  "virtual dataset mapping %llu shares the name of mapping %llu, not an "
                  "earlier one",
                  (unsigned long long)i, (unsigned long long)j);
  const char *s = file ? v->m[j].file : v->m[j].dset;
  *out = strdup(s);
  return *out ? H5_OK : h5_err(f, H5_ENOMEM, "out of memory");
}

/* The mappings: a version byte, their number, then per mapping the source
** file and dataset names (version 1: after a flags byte that may make
** either a reference to an earlier mapping's, or the file this one), the
** source and the virtual selections; a checksum of all that ends it. */
static int block_decode(h5_file *f, struct h5_dset *d, const uint8_t *p, size_t len,
                        struct h5_vds *v) {
  h5_cur c = h5c_make(p, len);
  int version = h5c_u8(&c);
  uint64_t n = h5c_len(&c, f);
  if (c.bad) return h5_err(f, H5_ECORRUPT, "virtual dataset mappings truncated");
  if (version > 1)
    return h5_err(f, H5_EUNSUPPORTED, "virtual dataset mappings of version %d", version);
  if (n > H5_VDS_MAX_MAPPINGS || n > h5c_left(&c) / 34)
    return h5_err(f, H5_ECORRUPT, "virtual dataset: %llu mappings in %zu bytes",
                  (unsigned long long)n, len);
  v->m = calloc((size_t)n + 1, sizeof *v->m);
  if (!v->m) return h5_err(f, H5_ENOMEM, "out of memory");
  v->n = n;
  for (uint64_t i = 0; i < n; i++) {
    vmap *m = &v->m[i];
    int flags = version == 1 ? h5c_u8(&c) : 0, rc;
    if (flags & ~7)
      return h5_err(f, H5_ECORRUPT, "virtual dataset mapping %llu: unknown flags 0x%x",
                    (unsigned long long)i, (unsigned)flags);
    if (flags & 4) rc = (m->file = strdup(".")) ? H5_OK : h5_err(f, H5_ENOMEM, "out of memory");
    else if (flags & 1) rc = shared_name(f, &c, v, i, 1, &m->file);
    else rc = cstr(f, &c, &m->file);
    if (!rc) rc = (flags & 2) ? shared_name(f, &c, v, i, 0, &m->dset) : cstr(f, &c, &m->dset);
    if (!rc) rc = sel_decode(f, &c, &m->src, "source");
    if (!rc) rc = sel_decode(f, &c, &m->virt, "virtual");
    int pf = 0, pd = 0;
    if (!rc) rc = name_printf(f, m->file, &pf);
    if (!rc) rc = name_printf(f, m->dset, &pd);
    if (rc) return rc;
    m->printf_ = pf || pd;
    m->slices = UNLIM;
    if (m->virt.rank >= 0 && m->virt.rank != d->space.rank)
      return h5_err(f, H5_ECORRUPT,
                    "virtual dataset mapping %llu: a selection of rank %d in a dataset of "
                    "rank %d",
                    (unsigned long long)i, m->virt.rank, d->space.rank);
    int vu = m->virt.kind == SEL_REG ? m->virt.unlim : -1;
    int su = m->src.kind == SEL_REG ? m->src.unlim : -1;
    if (vu >= 0 && d->space.maxdims[vu] != UINT64_MAX)
      return h5_err(f, H5_ECORRUPT,
                    "virtual dataset mapping %llu: unlimited in dimension %d, which is not",
                    (unsigned long long)i, vu);
    if (m->printf_ ? (vu < 0 || su >= 0 || m->virt.d[vu].count != UNLIM) : (vu >= 0) != (su >= 0))
      return h5_err(f, H5_ECORRUPT, "virtual dataset mapping %llu: %s", (unsigned long long)i,
                    m->printf_ ? "a printf-style source needs a virtual selection with an "
                                 "unlimited count and a fixed source selection"
                               : "one selection is unlimited, the other not");
  }
  size_t at = len - h5c_left(&c);
  const uint8_t *sum = h5c_bytes(&c, 4);
  if (c.bad) return h5_err(f, H5_ECORRUPT, "virtual dataset mappings truncated");
  if (util_get_le(sum, 4) != h5_lookup3(p, at, 0))
    return h5_err(f, H5_ECORRUPT, "virtual dataset mappings: checksum mismatch");
  if (h5c_left(&c))
    return h5_err(f, H5_ECORRUPT, "virtual dataset mappings: %zu bytes after the checksum",
                  h5c_left(&c));
  return H5_OK;
}

/* ---- source files ------------------------------------------------------------- */

struct h5_vsrc {
  char *path;
  h5_file *f; /* NULL: the file does not exist */
};

void h5_vsrc_close(h5_file *f) {
  for (size_t i = 0; i < f->nvsrc; i++) {
    free(f->vsrc[i].path);
    h5_close(f->vsrc[i].f);
  }
  free(f->vsrc);
  f->vsrc = NULL;
  f->nvsrc = 0;
}

/* The source file called name (after substitution): f itself for ".";
** *src NULL when it does not exist. */
static int src_file(h5_file *f, const char *name, h5_file **src) {
  *src = NULL;
  if (!strcmp(name, ".")) {
    *src = f;
    return H5_OK;
  }
  if (!f->mapped || f->fd < 0)
    return h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset: source file \"%s\" of a file image in memory", name);
  if (!h5_name_inside(name))
    return h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset: source file \"%s\" is outside the HDF5 file's directory "
                  "(absolute, or with \"..\")",
                  name);
  char path[8192], dir[4096];
  h5_file_dir(f, dir, sizeof dir);
  if ((size_t)snprintf(path, sizeof path, "%s%s", dir, name) >= sizeof path)
    return h5_err(f, H5_EUNSUPPORTED, "virtual dataset: source path too long");
  for (size_t i = 0; i < f->nvsrc; i++)
    if (!strcmp(f->vsrc[i].path, path)) {
      *src = f->vsrc[i].f;
      return H5_OK;
    }
  if (f->nvsrc >= H5_VDS_MAX_SOURCES)
    return h5_err(f, H5_EUNSUPPORTED, "virtual dataset: more than %d source files",
                  H5_VDS_MAX_SOURCES);
  if (f->vds_depth >= H5_VDS_MAX_DEPTH)
    return h5_err(f, H5_EUNSUPPORTED,
                  "virtual dataset: sources nested more than %d deep (a cycle?)",
                  H5_VDS_MAX_DEPTH);
  h5_file *sf = NULL;
  struct stat st;
  if (stat(path, &st) == 0 || errno != ENOENT) {
    char err[512];
    int rc = h5_open(path, &sf, err, sizeof err);
    if (rc) return h5_err(f, rc, "virtual dataset: source file %s: %s", path, err);
    sf->vds_depth = f->vds_depth + 1;
  }
  struct h5_vsrc *nv = realloc(f->vsrc, (f->nvsrc + 1) * sizeof *nv);
  char *p = strdup(path);
  if (nv) f->vsrc = nv;
  if (!nv || !p) {
    free(p);
    h5_close(sf);
    return h5_err(f, H5_ENOMEM, "out of memory");
  }
  f->vsrc[f->nvsrc].path = p;
  f->vsrc[f->nvsrc].f = sf;
  f->nvsrc++;
  *src = sf;
  return H5_OK;
}

/* Two datatypes whose elements are the same bytes with the same meaning. */
static int type_same(const h5_type *a, const h5_type *b, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return 0;
  if (a->cls != b->cls || a->size != b->size) return 0;
  switch (a->cls) {
  case H5_CLASS_INTEGER:
  case H5_CLASS_BITFIELD:
    return a->big_endian == b->big_endian && a->is_signed == b->is_signed &&
           a->offset == b->offset && a->precision == b->precision;
  case H5_CLASS_FLOAT:
  case H5_CLASS_COMPLEX:
    if (a->cls == H5_CLASS_COMPLEX) return type_same(a->base, b->base, depth + 1);
    return a->big_endian == b->big_endian && a->offset == b->offset &&
           a->precision == b->precision && a->sign_pos == b->sign_pos &&
           a->exp_pos == b->exp_pos && a->exp_size == b->exp_size &&
           a->mant_pos == b->mant_pos && a->mant_size == b->mant_size &&
           a->exp_bias == b->exp_bias && a->mant_norm == b->mant_norm &&
           a->vax_order == b->vax_order;
  case H5_CLASS_STRING: return a->cset == b->cset && a->strpad == b->strpad;
  case H5_CLASS_OPAQUE: return !strcmp(a->tag ? a->tag : "", b->tag ? b->tag : "");
  case H5_CLASS_ENUM:
    if (a->nmembers != b->nmembers || !type_same(a->base, b->base, depth + 1)) return 0;
    for (uint32_t i = 0; i < a->nmembers; i++)
      if (strcmp(a->members[i].name, b->members[i].name) ||
          memcmp(a->members[i].value, b->members[i].value, a->base->size))
        return 0;
    return 1;
  case H5_CLASS_COMPOUND:
    if (a->nmembers != b->nmembers) return 0;
    for (uint32_t i = 0; i < a->nmembers; i++)
      if (strcmp(a->members[i].name, b->members[i].name) ||
          a->members[i].offset != b->members[i].offset ||
          !type_same(a->members[i].type, b->members[i].type, depth + 1))
        return 0;
    return 1;
  case H5_CLASS_ARRAY:
    if (a->rank != b->rank || memcmp(a->dims, b->dims, sizeof a->dims)) return 0;
    return type_same(a->base, b->base, depth + 1);
  case H5_CLASS_VLEN: /* (the same only within one file: type_portable) */
    if (a->vlen_kind != b->vlen_kind || a->cset != b->cset || a->strpad != b->strpad) return 0;
    return a->vlen_kind == 1 || type_same(a->base, b->base, depth + 1);
  case H5_CLASS_REFERENCE: return a->ref_kind == b->ref_kind;
  case H5_CLASS_TIME: return a->big_endian == b->big_endian;
  default: return 0;
  }
}

/* How a source's elements become the virtual dataset's: as they are, or
** converted between integer types (any size, sign and byte order; values
** out of range saturate, as libhdf5's conversions do) or between IEEE
** floats (any byte order, 4 or 8 bytes). */
enum { CONV_NONE, CONV_INT, CONV_FLOAT };

static int plain_int(const h5_type *t) {
  return t->cls == H5_CLASS_INTEGER && t->offset == 0 && t->precision == 8 * t->size &&
         (t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8);
}

static int plain_float(const h5_type *t) {
  return t->cls == H5_CLASS_FLOAT && !t->vax_order && t->offset == 0 &&
         ((t->size == 4 && t->exp_size == 8 && t->mant_size == 23 && t->exp_bias == 127) ||
          (t->size == 8 && t->exp_size == 11 && t->mant_size == 52 && t->exp_bias == 1023)) &&
         t->sign_pos == 8 * t->size - 1;
}

static int conv_kind(const h5_type *from, const h5_type *to) {
  if (type_same(from, to, 0)) return CONV_NONE;
  if (plain_int(from) && plain_int(to)) return CONV_INT;
  if (plain_float(from) && plain_float(to)) return CONV_FLOAT;
  return -1;
}

static uint64_t load_bytes(const uint8_t *p, uint32_t n, int big) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n; i++) v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
  return v;
}

static void store_bytes(uint8_t *p, uint64_t v, uint32_t n, int big) {
  for (uint32_t i = 0; i < n; i++) p[big ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

/* The bits of an IEEE float of 4 or 8 bytes as one of to bytes (rounded
** to nearest; beyond float32's range: infinity). */
static uint64_t float_convert(uint64_t raw, uint32_t from, uint32_t to) {
  float f;
  double x;
  uint32_t u = (uint32_t)raw;
  if (from == 4) memcpy(&f, &u, 4), x = f;
  else memcpy(&x, &raw, 8);
  if (to == 8) {
    memcpy(&raw, &x, 8);
    return raw;
  }
  f = (float)x;
  memcpy(&u, &f, 4);
  return u;
}

static void conv_elem(int kind, const h5_type *from, const h5_type *to, const uint8_t *in,
                      uint8_t *out) {
  if (kind == CONV_INT) {
    uint64_t raw = load_bytes(in, from->size, from->big_endian);
    int neg = 0;
    uint64_t mag = raw; /* the value: neg ? -mag : mag */
    if (from->is_signed && from->size < 8 && (raw >> (8 * from->size - 1)))
      raw |= ~(uint64_t)0 << (8 * from->size);
    if (from->is_signed && (int64_t)raw < 0) {
      neg = 1;
      mag = (uint64_t)0 - raw;
    }
    uint64_t v;
    unsigned bits = 8 * to->size;
    if (!to->is_signed) {
      uint64_t max = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
      v = neg ? 0 : mag > max ? max : mag;
    } else {
      uint64_t max = ((uint64_t)1 << (bits - 1)) - 1;
      if (neg) v = mag > max + 1 ? (uint64_t)0 - (max + 1) : (uint64_t)0 - mag;
      else v = mag > max ? max : mag;
    }
    store_bytes(out, v, to->size, to->big_endian);
    return;
  }
  /* CONV_FLOAT */
  store_bytes(out, float_convert(load_bytes(in, from->size, from->big_endian), from->size, to->size),
              to->size, to->big_endian);
}

/* A type whose elements mean the same in any file (no heap or object
** references). */
static int type_portable(const h5_type *t, int depth) {
  if (depth > H5_MAX_TYPE_DEPTH) return 0;
  switch (t->cls) {
  case H5_CLASS_VLEN:
  case H5_CLASS_REFERENCE: return 0;
  case H5_CLASS_COMPOUND:
    for (uint32_t i = 0; i < t->nmembers; i++)
      if (!type_portable(t->members[i].type, depth + 1)) return 0;
    return 1;
  case H5_CLASS_ARRAY: return type_portable(t->base, depth + 1);
  default: return 1;
  }
}

/* The source dataset of mapping m for block b (0 unless printf): *o NULL
** when its file or the dataset does not exist. */
static int src_open(h5_file *f, const struct h5_dset *d, const vmap *m, uint64_t b,
                    h5_obj **o, struct h5_dset **sd) {
  char fname[4096], dname[4096];
  *o = NULL;
  *sd = NULL;
  int rc = name_subst(f, m->file, b, fname, sizeof fname);
  if (!rc) rc = name_subst(f, m->dset, b, dname, sizeof dname);
  if (rc) return rc;
  h5_file *sf;
  if ((rc = src_file(f, fname, &sf)) != H5_OK || !sf) return rc;
  rc = h5_obj_open_path(sf, dname, o);
  if (rc == H5_ENOTFOUND) {
    *o = NULL;
    return H5_OK;
  }
  if (rc == H5_OK && h5_obj_kind(*o) != H5_KIND_DATASET)
    rc = h5_err(sf, H5_EINVAL, "%s is not a dataset", dname);
  if (rc == H5_OK) rc = h5_dset_get(*o, sd);
  if (rc == H5_OK && conv_kind((*sd)->type, d->type) < 0)
    rc = h5_err(sf, H5_EUNSUPPORTED,
                "its datatype cannot be converted to the virtual dataset's (this reader "
                "converts integers to integers and floats to floats)");
  if (rc == H5_OK && sf != f && !type_portable(d->type, 0))
    rc = h5_err(sf, H5_EUNSUPPORTED,
                "variable-length data or references from another file");
  if (rc && sf != f)
    rc = h5_err(f, rc, "virtual dataset: source %s in %s: %s", dname, fname, h5_errmsg(sf));
  else if (rc)
    rc = h5_err(f, rc, "virtual dataset: source %s: %s", dname, h5_errmsg(f));
  if (rc) *o = NULL;
  return rc;
}

/* ---- the extent ------------------------------------------------------------------ */

/* Decode the mappings of d and compute its extent (into d->space). */
int h5_vds_load(h5_file *f, struct h5_dset *d) {
  const uint8_t *p;
  size_t len;
  int rc;
  if (d->space.rank < 0)
    return h5_err(f, H5_ECORRUPT, "virtual dataset with a null dataspace");
  struct h5_vds *v = calloc(1, sizeof *v);
  if (!v) return h5_err(f, H5_ENOMEM, "out of memory");
  d->vds = v;
  if (d->addr == H5_UNDEF_ADDR) return H5_OK; /* no mappings: all fill */
  if ((rc = h5_gheap_get(f, d->addr, d->vds_index, &p, &len)) != H5_OK)
    return h5_err(f, rc, "virtual dataset mappings: %s", h5_errmsg(f));
  if ((rc = block_decode(f, d, p, len, v)) != H5_OK) return rc;
  int rank = d->space.rank;
  /* in each dimension a mapping grows in: the furthest its source reaches,
  ** but never short of where the fixed mappings (and the fixed dimensions
  ** of the others) end, as libhdf5 has it */
  uint64_t ext[H5_MAX_RANK], mind[H5_MAX_RANK];
  int grows[H5_MAX_RANK] = {0};
  for (int k = 0; k < rank; k++) ext[k] = mind[k] = 0;
  for (uint64_t i = 0; i < v->n; i++) {
    vmap *m = &v->m[i];
    int vu = m->virt.kind == SEL_REG ? m->virt.unlim : -1;
    for (int k = 0; k < rank; k++) {
      uint64_t e = 0;
      if (k == vu) continue;
      if (m->virt.kind == SEL_REG) {
        e = dim_end(&m->virt.d[k]);
      } else if (m->virt.kind == SEL_LIST) {
        for (uint64_t b = 0; b < m->virt.n; b++)
          if (m->virt.c[b * 2 * (uint64_t)rank + rank + k] + 1 > e)
            e = m->virt.c[b * 2 * (uint64_t)rank + rank + k] + 1;
      }
      if (e > mind[k]) mind[k] = e;
    }
    if (vu < 0) continue;
    grows[vu] = 1;
    dimsel vd = m->virt.d[vu];
    if (m->printf_) {
      /* blocks 0, 1, ... while their source exists */
      uint64_t b = 0;
      for (;; b++) {
        h5_obj *o;
        struct h5_dset *sd;
        if (b >= (uint64_t)INT64_MAX / (vd.stride ? vd.stride : 1)) break;
        if ((rc = src_open(f, d, m, b, &o, &sd)) != H5_OK) return rc;
        if (!o) break;
      }
      m->nsub = b;
      vd.count = b;
      vd.last = vd.block;
    } else {
      h5_obj *o;
      struct h5_dset *sd;
      if ((rc = src_open(f, d, m, 0, &o, &sd)) != H5_OK) return rc;
      if (!o) {
        m->slices = 0;
      } else {
        int su = m->src.unlim;
        if (m->src.rank != sd->space.rank)
          return h5_err(f, H5_ECORRUPT,
                        "virtual dataset mapping %llu: a source selection of rank %d for a "
                        "dataset of rank %d",
                        (unsigned long long)i, m->src.rank, sd->space.rank);
        dimsel sdim = m->src.d[su];
        m->slices = clip_extent(&sdim, sd->space.dims[su]);
      }
      clip_slices(&vd, m->slices);
    }
    uint64_t end = dim_end(&vd);
    if (end > (uint64_t)INT64_MAX)
      return h5_err(f, H5_ECORRUPT, "virtual dataset mapping %llu: extent beyond 2^63",
                    (unsigned long long)i);
    if (end > ext[vu]) ext[vu] = end;
  }
  uint64_t n = 1;
  for (int k = 0; k < rank; k++) {
    if (grows[k]) d->space.dims[k] = ext[k] > mind[k] ? ext[k] : mind[k];
    if (d->space.dims[k] && n > UINT64_MAX / d->space.dims[k])
      return h5_err(f, H5_ECORRUPT, "dataspace has more than 2^64 elements");
    n *= d->space.dims[k];
  }
  d->space.nelems = n;
  return H5_OK;
}

/* ---- reading ------------------------------------------------------------------------ */

/* The requested elements: sel (within the extent) of the virtual dataset,
** written to out in C order of sel's counts. */
typedef struct vread {
  h5_file *f;
  struct h5_dset *d;
  h5_sel sel;
  uint8_t *out;
  uint64_t omul[H5_MAX_RANK]; /* output elements per step of each dimension */
} vread;

/* One mapping (or one block of a printf mapping) made concrete. */
typedef struct vpair {
  csel v, s;
  h5_obj *src;
  struct h5_dset *sd;
} vpair;

/* Visit the elements of p.v that sub (a part of the request) selects:
** cb(ctx, output index, selection index). */
typedef void (*elem_cb)(void *ctx, uint64_t oi, uint64_t vi);

/* The request indices i in dimension k whose coordinate lies in the
** virtual selection's dimension: pairs (output step, selection index). */
static int dim_pairs(const vread *r, const h5_sel *sub, const csel *v, int k, uint64_t **out,
                     uint64_t *n) {
  uint64_t c = sub->count[k];
  uint64_t *pr = malloc((size_t)(2 * c + 1) * sizeof *pr);
  if (!pr) return h5_err(r->f, H5_ENOMEM, "out of memory");
  uint64_t m = 0, idx;
  uint64_t lo = v->d[k].start, hi = dim_end(&v->d[k]);
  for (uint64_t i = 0; i < c; i++) {
    uint64_t x = sub->start[k] + i * sub->stride[k];
    if (x < lo || x >= hi || !dim_index(&v->d[k], x, &idx)) continue;
    pr[2 * m] = (x - r->sel.start[k]) / r->sel.stride[k];
    pr[2 * m + 1] = idx;
    m++;
  }
  *out = pr;
  *n = m;
  return H5_OK;
}

static int visit(const vread *r, const h5_sel *sub, const csel *v, elem_cb cb, void *ctx) {
  int rank = v->rank;
  if (v->list) {
    const runs *rs = v->r;
    for (uint64_t i = 0; i < rs->n; i++) {
      const uint64_t *at = rs->at + i * (uint64_t)rank;
      uint64_t obase = 0;
      int in = 1;
      for (int k = 0; k < rank - 1 && in; k++) {
        uint64_t x = at[k];
        if (x < sub->start[k] || (x - sub->start[k]) % sub->stride[k] ||
            (x - sub->start[k]) / sub->stride[k] >= sub->count[k])
          in = 0;
        else obase += (x - r->sel.start[k]) / r->sel.stride[k] * r->omul[k];
      }
      if (!in) continue;
      if (rank == 0) {
        cb(ctx, 0, rs->pos[i]);
        continue;
      }
      int l = rank - 1;
      for (uint64_t j = 0; j < rs->len[i]; j++) {
        uint64_t x = at[l] + j;
        if (x < sub->start[l] || (x - sub->start[l]) % sub->stride[l] ||
            (x - sub->start[l]) / sub->stride[l] >= sub->count[l])
          continue;
        cb(ctx, obase + (x - r->sel.start[l]) / r->sel.stride[l], rs->pos[i] + j);
      }
    }
    return H5_OK;
  }
  uint64_t *pr[H5_MAX_RANK] = {0}, np[H5_MAX_RANK], vmul[H5_MAX_RANK];
  int rc = H5_OK;
  for (int k = rank - 1; k >= 0 && rc == H5_OK; k--) {
    vmul[k] = k == rank - 1 ? 1 : vmul[k + 1] * v->size[k + 1];
    rc = dim_pairs(r, sub, v, k, &pr[k], &np[k]);
    if (rc == H5_OK && !np[k]) goto done;
  }
  if (rc) goto done;
  uint64_t idx[H5_MAX_RANK] = {0};
  for (;;) {
    uint64_t oi = 0, vi = 0;
    for (int k = 0; k < rank; k++) {
      oi += pr[k][2 * idx[k]] * r->omul[k];
      vi += pr[k][2 * idx[k] + 1] * vmul[k];
    }
    cb(ctx, oi, vi);
    int k = rank - 1;
    for (; k >= 0; k--) {
      if (++idx[k] < np[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
done:
  for (int k = 0; k < rank; k++) free(pr[k]);
  return rc;
}

/* The box of source coordinates the visited elements need. */
typedef struct boxctx {
  const csel *s;
  const uint64_t *sdims;
  uint64_t lo[H5_MAX_RANK], hi[H5_MAX_RANK]; /* hi exclusive */
  uint64_t n;
} boxctx;

static void box_cb(void *ctx, uint64_t oi, uint64_t vi) {
  boxctx *b = ctx;
  uint64_t x[H5_MAX_RANK];
  (void)oi;
  csel_coords(b->s, vi, x);
  for (int k = 0; k < b->s->rank; k++)
    if (x[k] >= b->sdims[k]) return; /* outside the source's extent: fill */
  for (int k = 0; k < b->s->rank; k++) {
    if (!b->n || x[k] < b->lo[k]) b->lo[k] = x[k];
    if (!b->n || x[k] + 1 > b->hi[k]) b->hi[k] = x[k] + 1;
  }
  b->n++;
}

typedef struct copyctx {
  const csel *s;
  const uint64_t *sdims;
  const uint64_t *lo, *bmul;
  const uint8_t *box;
  uint8_t *out;
  size_t esz, sesz; /* element sizes: ours, the source's */
  int conv;         /* CONV_* */
  const h5_type *from, *to;
} copyctx;

static void copy_cb(void *ctx, uint64_t oi, uint64_t vi) {
  copyctx *c = ctx;
  uint64_t x[H5_MAX_RANK], at = 0;
  csel_coords(c->s, vi, x);
  for (int k = 0; k < c->s->rank; k++) {
    if (x[k] >= c->sdims[k]) return;
    at += (x[k] - c->lo[k]) * c->bmul[k];
  }
  if (c->conv == CONV_NONE) memcpy(c->out + oi * c->esz, c->box + at * c->esz, c->esz);
  else conv_elem(c->conv, c->from, c->to, c->box + at * c->sesz, c->out + oi * c->esz);
}

/* Copy the elements of pair p that sub selects, reading the box of source
** data they need at once, or halving sub until that box is small enough. */
static int pair_read(const vread *r, const vpair *p, const h5_sel *sub) {
  int rc;
  boxctx b = {.s = &p->s, .sdims = p->sd->space.dims};
  if ((rc = visit(r, sub, &p->v, box_cb, &b)) != H5_OK) return rc;
  if (!b.n) return H5_OK;
  int srank = p->s.rank;
  size_t esz = p->sd->type->size; /* the source's */
  uint64_t cnt[H5_MAX_RANK], bmul[H5_MAX_RANK], total = 1;
  int big = 0;
  for (int k = srank - 1; k >= 0; k--) {
    cnt[k] = b.hi[k] - b.lo[k];
    bmul[k] = total;
    if (total > UINT64_MAX / cnt[k]) big = 1;
    else total *= cnt[k];
  }
  if (!big && total > H5_VDS_BOX_BYTES / esz && total > 4 * b.n) big = 1;
  if (big) {
    int k = 0;
    while (k < r->d->space.rank && sub->count[k] < 2) k++;
    if (k < r->d->space.rank) { /* halve the request */
      h5_sel a = *sub, c = *sub;
      a.count[k] = sub->count[k] / 2;
      c.count[k] = sub->count[k] - a.count[k];
      c.start[k] = sub->start[k] + a.count[k] * sub->stride[k];
      rc = pair_read(r, p, &a);
      return rc ? rc : pair_read(r, p, &c);
    }
    if (total > SIZE_MAX / esz)
      return h5_err(r->f, H5_EUNSUPPORTED, "virtual dataset: a source region too large");
  }
  uint8_t *box = malloc((size_t)(total * esz) + 1);
  if (!box) return h5_err(r->f, H5_ENOMEM, "out of memory");
  h5_file *sf = p->src->f;
  rc = h5_dset_read_slab(p->src, b.lo, cnt, NULL, box, (size_t)(total * esz));
  if (rc && sf != r->f) {
    rc = h5_err(r->f, rc, "virtual dataset: reading a source: %s", h5_errmsg(sf));
  } else if (rc == H5_OK) {
    copyctx c = {&p->s, p->sd->space.dims, b.lo, bmul, box, r->out, r->d->type->size, esz,
                 conv_kind(p->sd->type, r->d->type), p->sd->type, r->d->type};
    rc = visit(r, sub, &p->v, copy_cb, &c);
  }
  free(box);
  return rc;
}

/* Mapping m, block blk, made concrete and read. */
static int map_read(const vread *r, const vmap *m, uint64_t blk) {
  struct h5_dset *d = r->d;
  vpair p;
  memset(&p, 0, sizeof p);
  int rc = src_open(r->f, d, m, blk, &p.src, &p.sd);
  if (rc || !p.src) return rc; /* no source: the fill value stays */
  if (p.sd == d)
    return h5_err(r->f, H5_EUNSUPPORTED, "virtual dataset: a mapping names the dataset as its own source");
  if (m->src.rank >= 0 && m->src.rank != p.sd->space.rank)
    return h5_err(r->f, H5_ECORRUPT,
                  "virtual dataset: a source selection of rank %d for a dataset of rank %d",
                  m->src.rank, p.sd->space.rank);
  vsel *vs = (vsel *)&m->virt, *ss = (vsel *)&m->src;
  if (m->printf_) {
    vsel one = *vs; /* block blk of the unlimited dimension */
    int u = vs->unlim;
    one.d[u].start = vs->d[u].start + blk * vs->d[u].stride;
    one.d[u].count = 1;
    one.d[u].stride = one.d[u].last = vs->d[u].block;
    one.unlim = -1;
    rc = csel_make(r->f, &one, d->space.rank, d->space.dims, UNLIM, &p.v);
  } else {
    rc = csel_make(r->f, vs, d->space.rank, d->space.dims, m->slices, &p.v);
  }
  if (!rc) rc = csel_make(r->f, ss, p.sd->space.rank, p.sd->space.dims, UNLIM, &p.s);
  if (rc) return rc;
  if (p.v.npoints != p.s.npoints)
    return h5_err(r->f, H5_ECORRUPT,
                  "virtual dataset: a mapping's virtual selection has %llu elements, its "
                  "source selection %llu",
                  (unsigned long long)p.v.npoints, (unsigned long long)p.s.npoints);
  if (!p.v.npoints) return H5_OK;
  return pair_read(r, &p, &r->sel);
}

int h5_vds_read(h5_file *f, struct h5_dset *d, const h5_sel *sel, uint8_t *out, uint64_t n) {
  vread r = {.f = f, .d = d, .out = out};
  int rank = d->space.rank;
  if (sel) {
    r.sel = *sel;
  } else {
    for (int k = 0; k < rank; k++) {
      r.sel.start[k] = 0;
      r.sel.count[k] = d->space.dims[k];
      r.sel.stride[k] = 1;
    }
  }
  for (int k = rank - 1; k >= 0; k--)
    r.omul[k] = k == rank - 1 ? 1 : r.omul[k + 1] * r.sel.count[k + 1];
  h5_fill(d, out, n);
  if (!d->type->size) return H5_OK;
  if (f->vds_depth >= H5_VDS_MAX_DEPTH)
    return h5_err(f, H5_EUNSUPPORTED, "virtual dataset: sources nested more than %d deep",
                  H5_VDS_MAX_DEPTH);
  struct h5_vds *v = d->vds;
  int rc = H5_OK;
  f->vds_depth++;
  for (uint64_t i = 0; i < v->n && rc == H5_OK; i++) {
    const vmap *m = &v->m[i];
    if (!m->printf_) {
      rc = map_read(&r, m, 0);
    } else {
      /* the blocks whose rows the request reaches */
      int u = m->virt.unlim;
      const dimsel *vd = &m->virt.d[u];
      uint64_t lo = r.sel.start[u], hi = lo + (r.sel.count[u] - 1) * r.sel.stride[u] + 1;
      uint64_t b0 = lo < vd->start + vd->block ? 0 : (lo - vd->start - vd->block) / vd->stride + 1;
      for (uint64_t b = b0; b < m->nsub && rc == H5_OK; b++) {
        if (vd->start + b * vd->stride >= hi) break;
        rc = map_read(&r, m, b);
      }
    }
  }
  f->vds_depth--;
  return rc;
}
