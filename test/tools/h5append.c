/*
** test/tools/h5append.c - drive lib/h5's h5w_flush and h5w_open for
** test/interop/test_h5_modify.py, which checks the files with h5py and h5dump.
**
**   h5append steps FILE      create FILE; then for each line read on stdin
**                            append a batch to every dataset, flush, and
**                            print "flushed ROWS" (the rows each dataset has)
**   h5append crash FILE      open FILE (create it when absent) and append
**                            batches + flush forever, printing "flushed ROWS"
**                            after each flush: the test kills it
**   h5append edit FILE OP... open FILE (h5w_open) and apply the OPs, then
**                            close it; OPs:
**       append:PATH:N        N rows more (numbers: element e = e % 100000)
**       vlen:PATH:N          N variable-length strings "v<row>" more
**       attr:PATH:NAME       a scalar int32 attribute NAME = 42
**       group:PATH           a new group
**       dset:PATH:N          a new chunked, deflated float64 dataset of N
**                            rows (element i = i * 0.5)
**       flush                h5w_flush
**       free                 h5w_free without h5w_close, and stop
**
** Datasets of steps/crash (row r of each follows a formula):
**   /plain     float64 [r], chunks of 7, no filters: r * 0.5
**   /g/ints    int32 [r][3], chunks 10x3, shuffle+deflate+fletcher32:
**              3r, 3r+1, 3r+2
**   /s         vlen UTF-8 strings, chunks of 5: "s<r>"
**   /c         compound {a: int32, b: float64}, chunks of 4: {r, r * 0.25}
** Exit status 0, or 1 with "h5append: <rc> <message>" on stderr.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "h5/h5.h"

static h5w *W;

static void check(int rc, const char *what) {
  if (rc != H5_OK) {
    fprintf(stderr, "h5append: %d %s: %s\n", rc, what, W ? h5w_errmsg(W) : "");
    exit(1);
  }
}

static h5w_obj *D[4];

static void make_datasets(void) {
  h5w_obj *g;
  uint64_t z1[1] = {0}, u1[1] = {UINT64_MAX}, z2[2] = {0, 3}, u2[2] = {UINT64_MAX, 3};
  h5w_dcpl p;
  memset(&p, 0, sizeof p);
  p.layout = H5_LAYOUT_CHUNKED;
  p.deflate = -1;
  p.chunk[0] = 7;
  check(h5w_dataset(W, h5w_root(W), "plain", h5_type_new_float(8), 1, z1, u1, &p, &D[0]), "plain");
  check(h5w_group(W, h5w_root(W), "g", &g), "g");
  h5w_dcpl q = p;
  q.chunk[0] = 10;
  q.chunk[1] = 3;
  q.deflate = 4;
  q.shuffle = 1;
  q.fletcher32 = 1;
  check(h5w_dataset(W, g, "ints", h5_type_new_int(4, 1), 2, z2, u2, &q, &D[1]), "ints");
  h5w_dcpl s = p;
  s.chunk[0] = 5;
  check(h5w_dataset(W, h5w_root(W), "s", h5_type_new_string(0, 1), 1, z1, u1, &s, &D[2]), "s");
  h5_type *ct = h5_type_new_compound(12);
  h5_type_add_member(ct, "a", 0, h5_type_new_int(4, 1));
  h5_type_add_member(ct, "b", 4, h5_type_new_float(8));
  h5w_dcpl c = p;
  c.chunk[0] = 4;
  check(h5w_dataset(W, h5w_root(W), "c", ct, 1, z1, u1, &c, &D[3]), "c");
}

static void find_datasets(void) {
  check(h5w_lookup(W, "/plain", &D[0]), "/plain");
  check(h5w_lookup(W, "/g/ints", &D[1]), "/g/ints");
  check(h5w_lookup(W, "/s", &D[2]), "/s");
  check(h5w_lookup(W, "/c", &D[3]), "/c");
}

/* Append n rows from row r0 to the four datasets. */
static void batch(uint64_t r0, uint64_t n) {
  double *pl = malloc(n * 8 + 8);
  int32_t *in = malloc(n * 12 + 12);
  uint8_t *st = calloc(n + 1, 16), *cp = malloc(n * 12 + 12);
  char (*txt)[32] = malloc((n + 1) * 32);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = r0 + i;
    pl[i] = (double)r * 0.5;
    for (int j = 0; j < 3; j++) in[3 * i + j] = (int32_t)(3 * r + (uint64_t)j);
    snprintf(txt[i], 32, "s%llu", (unsigned long long)r);
    const char *t = txt[i];
    memcpy(st + 16 * i, &t, sizeof t);
    int32_t a = (int32_t)r;
    double b = (double)r * 0.25;
    memcpy(cp + 12 * i, &a, 4);
    memcpy(cp + 12 * i + 4, &b, 8);
  }
  check(h5w_append(W, D[0], pl, n), "append plain");
  check(h5w_append(W, D[1], in, n), "append ints");
  check(h5w_append(W, D[2], st, n), "append s");
  check(h5w_append(W, D[3], cp, n), "append c");
  free(pl);
  free(in);
  free(st);
  free(cp);
  free(txt);
}

static int steps(const char *path) {
  char err[512], line[64];
  check(h5w_create(path, 2, &W, err, sizeof err), err);
  make_datasets();
  check(h5w_flush(W, 0), "flush");
  printf("flushed 0\n");
  fflush(stdout);
  uint64_t rows = 0, k = 0;
  static const uint64_t sizes[] = {3, 4, 1, 10, 25, 7, 0, 33, 2};
  while (fgets(line, sizeof line, stdin)) {
    if (strncmp(line, "close", 5) == 0) break;
    uint64_t n = sizes[k++ % (sizeof sizes / sizeof *sizes)];
    batch(rows, n);
    rows += n;
    check(h5w_flush(W, k % 2), "flush");
    printf("flushed %llu\n", (unsigned long long)rows);
    fflush(stdout);
  }
  check(h5w_close(W, 1), "close");
  h5w_free(W);
  return 0;
}

static int crash(const char *path) {
  char err[512];
  uint64_t rows = 0;
  if (access(path, F_OK) == 0) {
    int rc = h5w_open(path, 2, &W, err, sizeof err);
    if (rc) {
      fprintf(stderr, "h5append: %d %s\n", rc, err);
      return 1;
    }
    h5w_obj *o;
    if (h5w_lookup(W, "/plain", &o) != H5_OK) { /* (a run killed before its first flush left the file empty) */
      make_datasets();
      check(h5w_flush(W, 0), "flush");
    } else {
      find_datasets();
      h5w_info info;
      check(h5w_obj_info(D[0], &info), "info");
      rows = info.dims[0];
    }
  } else {
    check(h5w_create(path, 2, &W, err, sizeof err), err);
    make_datasets();
    check(h5w_flush(W, 0), "flush");
  }
  printf("flushed %llu\n", (unsigned long long)rows);
  fflush(stdout);
  for (uint64_t k = 0;; k++) {
    uint64_t n = (k * 7 + 3) % 23;
    batch(rows, n);
    rows += n;
    check(h5w_flush(W, 0), "flush");
    printf("flushed %llu\n", (unsigned long long)rows);
    fflush(stdout);
  }
}

static h5w_obj *parent_of(const char *path, const char **name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  char *slash = strrchr(buf, '/');
  h5w_obj *p;
  *name = path + (slash ? slash - buf + 1 : 0);
  if (slash) *slash = 0;
  check(h5w_lookup(W, slash ? buf : "/", &p), path);
  return p;
}

static void op_append(const char *path, uint64_t n, int vlen) {
  h5w_obj *d;
  h5w_info info;
  check(h5w_lookup(W, path, &d), path);
  check(h5w_obj_info(d, &info), path);
  uint64_t per = 1;
  for (int k = 1; k < info.rank; k++) per *= info.dims[k];
  uint64_t e0 = info.dims[0] * per, ne = n * per;
  size_t esz = info.type->size;
  uint8_t *buf = calloc(ne + 1, esz);
  char (*txt)[32] = malloc((n + 1) * 32);
  for (uint64_t i = 0; i < ne; i++) {
    uint64_t v = (e0 + i) % 100000;
    uint8_t *p = buf + i * esz;
    if (vlen) {
      snprintf(txt[i], 32, "v%llu", (unsigned long long)(info.dims[0] + i));
      const char *t = txt[i];
      memcpy(p, &t, sizeof t);
    } else if (info.type->cls == H5_CLASS_FLOAT) {
      if (esz == 8) {
        double x = (double)v;
        memcpy(p, &x, 8);
      } else {
        float x = (float)v;
        memcpy(p, &x, 4);
      }
    } else {
      memcpy(p, &v, esz); /* little-endian integers */
    }
  }
  check(h5w_append(W, d, buf, n), path);
  free(buf);
  free(txt);
}

static int edit(const char *path, int nops, char **ops) {
  char err[512];
  int rc = h5w_open(path, 2, &W, err, sizeof err);
  if (rc) {
    fprintf(stderr, "h5append: %d %s\n", rc, err);
    return 1;
  }
  for (int i = 0; i < nops; i++) {
    char *op = ops[i], *a = strchr(op, ':'), *b = a ? strchr(a + 1, ':') : NULL;
    if (a) *a++ = 0;
    if (b) *b++ = 0;
    if (strcmp(op, "append") == 0 && b) {
      op_append(a, strtoull(b, NULL, 10), 0);
    } else if (strcmp(op, "vlen") == 0 && b) {
      op_append(a, strtoull(b, NULL, 10), 1);
    } else if (strcmp(op, "attr") == 0 && b) {
      h5w_obj *o;
      int32_t v = 42;
      check(h5w_lookup(W, a, &o), a);
      check(h5w_attr(W, o, b, h5_type_new_int(4, 1), 0, NULL, &v), b);
    } else if (strcmp(op, "group") == 0 && a) {
      const char *name;
      h5w_obj *p = parent_of(a, &name), *g;
      check(h5w_group(W, p, name, &g), a);
    } else if (strcmp(op, "dset") == 0 && b) {
      const char *name;
      h5w_obj *p = parent_of(a, &name), *d;
      uint64_t n = strtoull(b, NULL, 10), dims[1] = {n};
      h5w_dcpl dc;
      memset(&dc, 0, sizeof dc);
      dc.layout = H5_LAYOUT_CHUNKED;
      dc.chunk[0] = 4;
      dc.deflate = 6;
      double *v = malloc(n * 8 + 8);
      for (uint64_t k = 0; k < n; k++) v[k] = (double)k * 0.5;
      check(h5w_dataset(W, p, name, h5_type_new_float(8), 1, dims, NULL, &dc, &d), a);
      check(h5w_write(W, d, v), a);
      free(v);
    } else if (strcmp(op, "flush") == 0) {
      check(h5w_flush(W, 0), "flush");
    } else if (strcmp(op, "free") == 0) {
      h5w_free(W);
      return 0;
    } else {
      fprintf(stderr, "h5append: bad op %s\n", op);
      return 2;
    }
  }
  check(h5w_close(W, 0), "close");
  h5w_free(W);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "steps") == 0) return steps(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "crash") == 0) return crash(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "edit") == 0) return edit(argv[2], argc - 3, argv + 3);
  fprintf(stderr, "usage: h5append steps|crash|edit FILE [OP...]\n");
  return 2;
}
