/*
** bench/bench_h5.c - lib/h5 against libhdf5's C API, in one run, on the same
** machine, files and data (the h5bench-like workloads of the seeds).
**
**   make bench/bench_h5 && ./bench/bench_h5 [--reps N] [--dir DIR]
**   ./bench/bench_h5 [--reps N] --read FILE DATASET   (one row: that dataset
**                                                      read whole, both sides)
**
** libhdf5 (Debian libhdf5-dev) is linked into this benchmark only.  Each
** workload runs reps times per side, alternating sides; the median is
** reported, and "ratio" is libhdf5's median / ours (above 1: we are
** faster).  Both sides use the same layout and filters in every comparison
** (said beside each row); libhdf5 runs with its default file format, ours
** writes superblock 2 / object header 2 (its default): the bytes differ,
** the data does not.  Files are in DIR (default /tmp), in the page cache:
** this measures the libraries, not the disk.
*/
#include "config.h"

#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "h5/h5.h"
#include "h5mem_commit.h"

static int reps = 15;
static char dir[512] = "/tmp";

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

__attribute__((noreturn)) static void die(const char *what) {
  fprintf(stderr, "bench_h5: %s failed\n", what);
  exit(1);
}

static char *path(const char *name) {
  static char buf[2][1024];
  static int k;
  k ^= 1;
  snprintf(buf[k], sizeof buf[k], "%s/bench_h5_%s", dir, name);
  return buf[k];
}

typedef void (*work_fn)(void *ctx);

/* Median seconds of fn over reps runs, ours and theirs alternating (theirs
** NULL: ours alone, the row saying note). */
static void race(const char *what, const char *note, work_fn ours, work_fn theirs,
                 void *ctx) {
  double *a = malloc((size_t)reps * sizeof *a), *b = malloc((size_t)reps * sizeof *b);
  if (!a || !b) die("malloc");
  ours(ctx); /* warm-up: page cache, lazy initialisation */
  if (theirs) theirs(ctx);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    ours(ctx);
    double t1 = now();
    if (theirs) theirs(ctx);
    double t2 = now();
    a[r] = t1 - t0;
    b[r] = t2 - t1;
  }
  double ma = median(a, reps), mb = median(b, reps);
  if (theirs)
    printf("| %-44s | %10.1f | %10.1f | %6.2f | %s |\n", what, ma * 1e6, mb * 1e6, mb / ma, note);
  else
    printf("| %-44s | %10.1f | %10s | %6s | %s |\n", what, ma * 1e6, "-", "-", note);
  fflush(stdout);
  free(a);
  free(b);
}

/* ---- contiguous f32: write a file, read it back --------------------------- */

typedef struct vec_ctx {
  size_t n;
  float *data, *back;
} vec_ctx;

static void ours_write_vec(void *p) {
  vec_ctx *c = p;
  char err[256];
  h5w *w;
  h5w_obj *d;
  uint64_t dims[1] = {c->n};
  if (h5w_create(path("ours.h5"), 1, &w, err, sizeof err)) die("h5w_create");
  if (h5w_dataset(w, h5w_root(w), "x", h5_type_new_float(4), 1, dims, NULL, NULL, &d) ||
      h5w_write(w, d, c->data) || h5w_close(w, 0))
    die("h5w write");
  h5w_free(w);
}

static void hdf_write_vec(void *p) {
  vec_ctx *c = p;
  hsize_t dims[1] = {c->n};
  hid_t f = H5Fcreate(path("hdf5.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s = H5Screate_simple(1, dims, NULL);
  hid_t d = H5Dcreate2(f, "x", H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0 || d < 0 || H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->data) < 0)
    die("libhdf5 write");
  H5Dclose(d);
  H5Sclose(s);
  H5Fclose(f);
}

static h5_obj *ours_child(h5_file *f, const char *name);

static void ours_read_vec(void *p) {
  vec_ctx *c = p;
  char err[256];
  h5_file *f;
  if (h5_open(path("ours.h5"), &f, err, sizeof err)) die("h5_open");
  h5_obj *d = ours_child(f, "x");
  if (!d || h5_dset_read(d, c->back, c->n * 4)) die("h5_dset_read");
  h5_close(f);
}

static void hdf_read_vec(void *p) {
  vec_ctx *c = p;
  hid_t f = H5Fopen(path("hdf5.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "x", H5P_DEFAULT);
  if (d < 0 || H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->back) < 0)
    die("libhdf5 read");
  H5Dclose(d);
  H5Fclose(f);
}

/* the child `name` of the root group */
static h5_obj *ours_child(h5_file *f, const char *name) {
  h5_obj *root, *o;
  const h5_link *l;
  if (h5_root(f, &root) || h5_group_find(root, name, &l) || h5_obj_open(f, l->addr, &o))
    return NULL;
  return o;
}

/* ---- chunked 512 x 512 f32, deflate 6 ---------------------------------- */

typedef struct chunk_ctx {
  float *data, *back;
  int threads;
} chunk_ctx;

#define CD 512
#define CC 128

static void ours_write_chunked(void *p) {
  chunk_ctx *c = p;
  char err[256];
  h5w *w;
  h5w_obj *d;
  uint64_t dims[2] = {CD, CD};
  h5w_dcpl dc = {.layout = H5_LAYOUT_CHUNKED, .chunk = {CC, CC}, .deflate = 6};
  if (h5w_create(path("ours_z.h5"), c->threads, &w, err, sizeof err)) die("h5w_create");
  if (h5w_dataset(w, h5w_root(w), "z", h5_type_new_float(4), 2, dims, NULL, &dc, &d) ||
      h5w_write(w, d, c->data) || h5w_close(w, 0))
    die("h5w chunked write");
  h5w_free(w);
}

static void hdf_write_chunked(void *p) {
  chunk_ctx *c = p;
  hsize_t dims[2] = {CD, CD}, ch[2] = {CC, CC};
  hid_t f = H5Fcreate(path("hdf5_z.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s = H5Screate_simple(2, dims, NULL);
  hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_chunk(pl, 2, ch);
  H5Pset_deflate(pl, 6);
  hid_t d = H5Dcreate2(f, "z", H5T_IEEE_F32LE, s, H5P_DEFAULT, pl, H5P_DEFAULT);
  if (d < 0 || H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->data) < 0)
    die("libhdf5 chunked write");
  H5Dclose(d);
  H5Pclose(pl);
  H5Sclose(s);
  H5Fclose(f);
}

static void ours_read_chunked(void *p) {
  chunk_ctx *c = p;
  char err[256];
  h5_file *f;
  if (h5_open(path("ours_z.h5"), &f, err, sizeof err)) die("h5_open");
  h5_obj *d = ours_child(f, "z");
  if (!d || h5_dset_read(d, c->back, (size_t)CD * CD * 4)) die("h5 chunked read");
  h5_close(f);
}

static void hdf_read_chunked(void *p) {
  chunk_ctx *c = p;
  hid_t f = H5Fopen(path("hdf5_z.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "z", H5P_DEFAULT);
  if (d < 0 || H5Dread(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->back) < 0)
    die("libhdf5 chunked read");
  H5Dclose(d);
  H5Fclose(f);
}

/* ---- attributes and groups ------------------------------------------------ */

#define NATTR 128
#define NGROUP 64

static void ours_write_attrs(void *p) {
  (void)p;
  char err[256], name[32];
  h5w *w;
  if (h5w_create(path("ours_a.h5"), 1, &w, err, sizeof err)) die("h5w_create");
  for (int i = 0; i < NATTR; i++) {
    double v = i * 0.5;
    snprintf(name, sizeof name, "attr%03d", i);
    if (h5w_attr(w, h5w_root(w), name, h5_type_new_float(8), 0, NULL, &v)) die("h5w_attr");
  }
  if (h5w_close(w, 0)) die("h5w_close");
  h5w_free(w);
}

static void hdf_write_attrs(void *p) {
  (void)p;
  char name[32];
  hid_t f = H5Fcreate(path("hdf5_a.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s = H5Screate(H5S_SCALAR);
  for (int i = 0; i < NATTR; i++) {
    double v = i * 0.5;
    snprintf(name, sizeof name, "attr%03d", i);
    hid_t a = H5Acreate2(f, name, H5T_IEEE_F64LE, s, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0 || H5Awrite(a, H5T_NATIVE_DOUBLE, &v) < 0) die("libhdf5 attr");
    H5Aclose(a);
  }
  H5Sclose(s);
  H5Fclose(f);
}

static int sum_attr(void *p, const h5_attr *a) {
  double v;
  memcpy(&v, a->data, 8);
  *(double *)p += v;
  return 0;
}

static void ours_read_attrs(void *p) {
  char err[256];
  h5_file *f;
  h5_obj *root;
  double sum = 0;
  if (h5_open(path("ours_a.h5"), &f, err, sizeof err) || h5_root(f, &root) ||
      h5_attr_iter(root, sum_attr, &sum))
    die("h5 attrs");
  h5_close(f);
  *(double *)p = sum;
}

static herr_t hdf_attr_cb(hid_t loc, const char *name, const H5A_info_t *info, void *p) {
  (void)info;
  double v;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  H5Aread(a, H5T_NATIVE_DOUBLE, &v);
  H5Aclose(a);
  *(double *)p += v;
  return 0;
}

static void hdf_read_attrs(void *p) {
  double sum = 0;
  hid_t f = H5Fopen(path("hdf5_a.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t g = H5Gopen2(f, "/", H5P_DEFAULT);
  if (H5Aiterate2(g, H5_INDEX_NAME, H5_ITER_INC, NULL, hdf_attr_cb, &sum) < 0) die("libhdf5 attrs");
  H5Gclose(g);
  H5Fclose(f);
  *(double *)p = sum;
}

static void ours_one_attr(void *p) {
  char err[256];
  h5_file *f;
  h5_obj *root;
  const h5_attr *a;
  if (h5_open(path("ours_a.h5"), &f, err, sizeof err) || h5_root(f, &root) ||
      h5_attr_get(root, "attr077", &a))
    die("h5 one attr");
  memcpy(p, a->data, 8);
  h5_close(f);
}

static void hdf_one_attr(void *p) {
  hid_t f = H5Fopen(path("hdf5_a.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t a = H5Aopen_by_name(f, "/", "attr077", H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, p) < 0) die("libhdf5 one attr");
  H5Aclose(a);
  H5Fclose(f);
}

static void ours_write_groups(void *p) {
  (void)p;
  char err[256], name[32];
  h5w *w;
  h5w_obj *g;
  if (h5w_create(path("ours_g.h5"), 1, &w, err, sizeof err)) die("h5w_create");
  for (int i = 0; i < NGROUP; i++) {
    snprintf(name, sizeof name, "group%02d", i);
    if (h5w_group(w, h5w_root(w), name, &g)) die("h5w_group");
  }
  if (h5w_close(w, 0)) die("h5w_close");
  h5w_free(w);
}

static void hdf_write_groups(void *p) {
  (void)p;
  char name[32];
  hid_t f = H5Fcreate(path("hdf5_g.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  for (int i = 0; i < NGROUP; i++) {
    snprintf(name, sizeof name, "group%02d", i);
    hid_t g = H5Gcreate2(f, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) die("libhdf5 group");
    H5Gclose(g);
  }
  H5Fclose(f);
}

static int count_cb(void *p, const h5_link *l) {
  (void)l;
  ++*(int *)p;
  return 0;
}

static void ours_traverse(void *p) {
  char err[256];
  h5_file *f;
  h5_obj *root;
  int n = 0;
  if (h5_open(path("ours_g.h5"), &f, err, sizeof err) || h5_root(f, &root) ||
      h5_group_iter(root, count_cb, &n))
    die("h5 traverse");
  h5_close(f);
  *(int *)p = n;
}

#if H5_VERSION_GE(1, 12, 0)
typedef H5L_info2_t bench_linfo;
#define bench_literate H5Literate2
#else
typedef H5L_info_t bench_linfo;
#define bench_literate H5Literate
#endif

static herr_t hdf_count_cb(hid_t g, const char *name, const bench_linfo *info, void *p) {
  (void)g, (void)name, (void)info;
  ++*(int *)p;
  return 0;
}

static void hdf_traverse(void *p) {
  int n = 0;
  hid_t f = H5Fopen(path("hdf5_g.h5"), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (bench_literate(f, H5_INDEX_NAME, H5_ITER_INC, NULL, hdf_count_cb, &n) < 0) die("libhdf5 iterate");
  H5Fclose(f);
  *(int *)p = n;
}

/* ---- the same metadata reads in a file already open ---------------------- */

typedef struct open_ctx {
  h5_file *f;
  h5_obj *root;
  hid_t hf, hg;
  double sum;
  int n;
} open_ctx;

static void ours_attrs_open(void *p) {
  open_ctx *c = p;
  c->sum = 0;
  if (h5_attr_iter(c->root, sum_attr, &c->sum)) die("h5_attr_iter");
}

static void hdf_attrs_open(void *p) {
  open_ctx *c = p;
  c->sum = 0;
  if (H5Aiterate2(c->hg, H5_INDEX_NAME, H5_ITER_INC, NULL, hdf_attr_cb, &c->sum) < 0)
    die("libhdf5 attrs");
}

static void ours_one_attr_open(void *p) {
  open_ctx *c = p;
  const h5_attr *a;
  if (h5_attr_get(c->root, "attr077", &a)) die("h5_attr_get");
  memcpy(&c->sum, a->data, 8);
}

static void hdf_one_attr_open(void *p) {
  open_ctx *c = p;
  hid_t a = H5Aopen(c->hg, "attr077", H5P_DEFAULT);
  if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &c->sum) < 0) die("libhdf5 one attr");
  H5Aclose(a);
}

static void ours_list_open(void *p) {
  open_ctx *c = p;
  c->n = 0;
  if (h5_group_iter(c->root, count_cb, &c->n)) die("h5_group_iter");
}

static void hdf_list_open(void *p) {
  open_ctx *c = p;
  c->n = 0;
  if (bench_literate(c->hg, H5_INDEX_NAME, H5_ITER_INC, NULL, hdf_count_cb, &c->n) < 0)
    die("libhdf5 iterate");
}

static void open_both(open_ctx *c, const char *ours, const char *theirs) {
  char err[256];
  if (h5_open(path(ours), &c->f, err, sizeof err) || h5_root(c->f, &c->root)) die("h5_open");
  c->hf = H5Fopen(path(theirs), H5F_ACC_RDONLY, H5P_DEFAULT);
  c->hg = H5Gopen2(c->hf, "/", H5P_DEFAULT);
  if (c->hg < 0) die("H5Fopen");
}

static void close_both(open_ctx *c) {
  h5_close(c->f);
  H5Gclose(c->hg);
  H5Fclose(c->hf);
}

/* ---- selections of a 4096 x 2048 f64 dataset ------------------------------- */

#define SR 4096
#define SC 2048

typedef struct slab_ctx {
  const char *ours, *theirs; /* file names */
  uint64_t start[2], count[2];
  double *buf;
} slab_ctx;

static void ours_slab(void *p) {
  slab_ctx *c = p;
  char err[256];
  h5_file *f;
  if (h5_open(path(c->ours), &f, err, sizeof err)) die("h5_open");
  h5_obj *d = ours_child(f, "m");
  if (!d || h5_dset_read_slab(d, c->start, c->count, NULL, c->buf,
                              (size_t)(c->count[0] * c->count[1] * 8)))
    die(h5_errmsg(f));
  h5_close(f);
}

static void hdf_slab(void *p) {
  slab_ctx *c = p;
  hsize_t start[2] = {c->start[0], c->start[1]}, count[2] = {c->count[0], c->count[1]};
  hid_t f = H5Fopen(path(c->theirs), H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = H5Dopen2(f, "m", H5P_DEFAULT);
  hid_t fs = H5Dget_space(d);
  H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
  hid_t ms = H5Screate_simple(2, count, NULL);
  if (H5Dread(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, c->buf) < 0) die("libhdf5 slab");
  H5Sclose(ms);
  H5Sclose(fs);
  H5Dclose(d);
  H5Fclose(f);
}

/* Write the 4096 x 2048 matrix with both libraries, in one layout. */
static void make_matrix(const double *m, const char *ours, const char *theirs,
                        int chunked, int deflate) {
  char err[256];
  h5w *w;
  h5w_obj *d;
  uint64_t dims[2] = {SR, SC};
  h5w_dcpl dc = {.layout = chunked ? H5_LAYOUT_CHUNKED : H5_LAYOUT_CONTIGUOUS,
                 .chunk = {256, 256}, .deflate = deflate ? 6 : -1};
  if (h5w_create(path(ours), 0, &w, err, sizeof err) ||
      h5w_dataset(w, h5w_root(w), "m", h5_type_new_float(8), 2, dims, NULL, &dc, &d) ||
      h5w_write(w, d, m) || h5w_close(w, 0))
    die("h5w matrix");
  h5w_free(w);
  hsize_t hd[2] = {SR, SC}, ch[2] = {256, 256};
  hid_t f = H5Fcreate(path(theirs), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s = H5Screate_simple(2, hd, NULL);
  hid_t pl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunked) H5Pset_chunk(pl, 2, ch);
  if (deflate) H5Pset_deflate(pl, 6);
  hid_t ds = H5Dcreate2(f, "m", H5T_IEEE_F64LE, s, H5P_DEFAULT, pl, H5P_DEFAULT);
  if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, m) < 0)
    die("libhdf5 matrix");
  H5Dclose(ds);
  H5Pclose(pl);
  H5Sclose(s);
  H5Fclose(f);
}

/* ---- --read FILE DSET: one dataset of a file someone else wrote ---------- */

typedef struct read_ctx {
  const char *file, *dset;
  size_t bytes;
  uint8_t *ours, *theirs;
  hid_t mem_type;
} read_ctx;

static void ours_read_file(void *p) {
  read_ctx *c = p;
  char err[256];
  h5_file *f;
  h5_obj *d;
  if (h5_open(c->file, &f, err, sizeof err)) die("h5_open");
  if (h5_obj_open_path(f, c->dset, &d) || h5_dset_read(d, c->ours, c->bytes)) {
    fprintf(stderr, "bench_h5: %s %s: %s\n", c->file, c->dset, h5_errmsg(f));
    exit(1);
  }
  h5_close(f);
}

static int hdf_try_read(read_ctx *c) {
  hid_t f = H5Fopen(c->file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = f < 0 ? -1 : H5Dopen2(f, c->dset, H5P_DEFAULT);
  int ok = d >= 0 && H5Dread(d, c->mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, c->theirs) >= 0;
  if (d >= 0) H5Dclose(d);
  if (f >= 0) H5Fclose(f);
  return ok;
}

static void hdf_read_file(void *p) {
  if (!hdf_try_read(p)) die("libhdf5 read");
}

/* Read file's dataset whole with both libraries (their filters through
** libhdf5's plugins): the same bytes, then the race.  Little-endian data
** only (ours returns the stored bytes).  When libhdf5 cannot read it (no
** plugin for its filter), ours alone, and the row says so. */
static int read_file(const char *file, const char *dset) {
  char err[256];
  h5_file *hf;
  h5_obj *o;
  h5_dset_info in;
  if (h5_open(file, &hf, err, sizeof err) || h5_obj_open_path(hf, dset, &o) || h5_dset_info_get(o, &in))
    die("h5 open");
  read_ctx c = {file, dset, (size_t)in.nelems * in.type->size, NULL, NULL, -1};
  h5_close(hf);
  c.ours = malloc(c.bytes);
  c.theirs = malloc(c.bytes);
  if (!c.ours || !c.theirs) die("malloc");
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
  hid_t d = f < 0 ? -1 : H5Dopen2(f, dset, H5P_DEFAULT);
  if (d >= 0) {
    hid_t ft = H5Dget_type(d);
    c.mem_type = H5Tget_native_type(ft, H5T_DIR_ASCEND);
    H5Tclose(ft);
    H5Dclose(d);
  }
  if (f >= 0) H5Fclose(f);
  ours_read_file(&c);
  int peer = c.mem_type >= 0 && hdf_try_read(&c);
  if (peer && memcmp(c.ours, c.theirs, c.bytes)) {
    fprintf(stderr, "bench_h5: %s %s: the two libraries read different bytes\n", file, dset);
    return 1;
  }
  char what[200];
  snprintf(what, sizeof what, "read %s %s (%.1f MB)", strrchr(file, '/') ? strrchr(file, '/') + 1 : file, dset,
           (double)c.bytes / 1e6);
  race(what, peer ? "the same file" : "libhdf5 cannot read it (no plugin for its filter)", ours_read_file,
       peer ? hdf_read_file : NULL, &c);
  free(c.ours);
  free(c.theirs);
  if (c.mem_type >= 0) H5Tclose(c.mem_type);
  return 0;
}

int main(int argc, char **argv) {
  const char *rfile = NULL, *rdset = NULL;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--dir")) snprintf(dir, sizeof dir, "%s", argv[i + 1]);
    else if (!strcmp(argv[i], "--read") && i + 2 < argc) {
      rfile = argv[i + 1];
      rdset = argv[i + 2];
      i++;
    } else {
      fprintf(stderr, "usage: bench_h5 [--reps N] [--dir DIR] [--read FILE DATASET]\n");
      return 2;
    }
  }
  if (reps < 1) reps = 1;
  if (rfile) return read_file(rfile, rdset);
  unsigned maj, min, rel;
  H5get_libversion(&maj, &min, &rel);
  time_t t = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  printf("bench_h5: lib/h5 (commit %s) vs libhdf5 %u.%u.%u, date %s, median of %d runs, files in %s\n\n",
         H5MEM_COMMIT, maj, min, rel, date, reps, dir);
  printf("| %-44s | %10s | %10s | %6s | %s |\n", "workload", "ours us", "libhdf5 us", "ratio", "same on both sides");
  printf("|%s|------------|------------|--------|------|\n", "----------------------------------------------");

  size_t sizes[3] = {1000, 10000, 100000};
  for (int k = 0; k < 3; k++) {
    vec_ctx c = {sizes[k], malloc(sizes[k] * 4), malloc(sizes[k] * 4)};
    for (size_t i = 0; i < c.n; i++) c.data[i] = (float)i * 0.5f;
    char what[64];
    snprintf(what, sizeof what, "open+write+close %zuK f32", c.n / 1000);
    race(what, "contiguous", ours_write_vec, hdf_write_vec, &c);
    snprintf(what, sizeof what, "open+read+close %zuK f32", c.n / 1000);
    race(what, "contiguous", ours_read_vec, hdf_read_vec, &c);
    free(c.data);
    free(c.back);
  }

  chunk_ctx cc = {malloc((size_t)CD * CD * 4), malloc((size_t)CD * CD * 4), 0};
  uint64_t seed = 7;
  /* a smooth field with a little noise in the last digits: data that
     compresses the way measured fields do (the same bytes on both sides) */
  for (size_t i = 0; i < (size_t)CD * CD; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    cc.data[i] = (float)(sin((double)(i % CD) * 0.05) * cos((double)(i / CD) * 0.03) +
                         (double)(seed >> 40) / 16777216.0 * 1e-4);
  }
  cc.threads = 1;
  race("chunked 512x512 f32 deflate-6 write, 1 thread", "16 chunks 128x128, deflate 6", ours_write_chunked,
       hdf_write_chunked, &cc);
  cc.threads = 0;
  race("chunked 512x512 f32 deflate-6 write, all CPUs", "16 chunks 128x128, deflate 6", ours_write_chunked,
       hdf_write_chunked, &cc);
  race("chunked 512x512 f32 deflate-6 read", "16 chunks 128x128, deflate 6", ours_read_chunked,
       hdf_read_chunked, &cc);
  free(cc.data);
  free(cc.back);

  double sum;
  /* metadata: each library stores it in its default way (ours: dense
     storage beyond 8 items; libhdf5 1.8+ defaults: attributes in the
     object header, an old-style symbol table for groups) */
  race("128 attribute writes (new file)", "scalar f64, each library's default storage", ours_write_attrs, hdf_write_attrs, &sum);
  race("128 attribute reads (open, iterate, close)", "scalar f64", ours_read_attrs, hdf_read_attrs, &sum);
  race("open a file, read one attribute", "scalar f64 of 128", ours_one_attr, hdf_one_attr, &sum);
  int n;
  race("64 group creates (new file)", "each library's default storage", ours_write_groups, hdf_write_groups, &n);
  race("open + list 64 groups + close", "each library's default storage", ours_traverse, hdf_traverse, &n);
  open_ctx oc;
  open_both(&oc, "ours_a.h5", "hdf5_a.h5");
  race("iterate 128 attributes, file open", "scalar f64", ours_attrs_open, hdf_attrs_open, &oc);
  race("read one attribute of 128, file open", "scalar f64", ours_one_attr_open, hdf_one_attr_open, &oc);
  close_both(&oc);
  open_both(&oc, "ours_g.h5", "hdf5_g.h5");
  race("list 64 groups, file open", "each library's default storage", ours_list_open, hdf_list_open, &oc);
  close_both(&oc);

  double *m = malloc((size_t)SR * SC * 8);
  for (size_t i = 0; i < (size_t)SR * SC; i++) m[i] = (double)(i % 1000) * 0.001 + (double)(i / SC);
  double *buf = malloc((size_t)512 * 512 * 8 > (size_t)SR * 8 ? (size_t)512 * 512 * 8 : (size_t)SR * 8);
  const char *kinds[3][3] = {{"m_contig", "contiguous", "contiguous"},
                             {"m_chunked", "chunked", "chunks 256x256"},
                             {"m_deflate", "chunked+deflate", "chunks 256x256, deflate 6"}};
  for (int k = 0; k < 3; k++) {
    char o[64], h[64], what[96];
    snprintf(o, sizeof o, "%s_ours.h5", kinds[k][0]);
    snprintf(h, sizeof h, "%s_hdf5.h5", kinds[k][0]);
    make_matrix(m, o, h, k > 0, k == 2);
    slab_ctx rows = {o, h, {1000, 0}, {1, SC}, buf};
    slab_ctx cols = {o, h, {0, 700}, {SR, 1}, buf};
    slab_ctx win = {o, h, {1000, 500}, {512, 512}, buf};
    snprintf(what, sizeof what, "4096x2048 f64 %s: one row", kinds[k][1]);
    race(what, kinds[k][2], ours_slab, hdf_slab, &rows);
    snprintf(what, sizeof what, "4096x2048 f64 %s: one column", kinds[k][1]);
    race(what, kinds[k][2], ours_slab, hdf_slab, &cols);
    snprintf(what, sizeof what, "4096x2048 f64 %s: 512x512 window", kinds[k][1]);
    race(what, kinds[k][2], ours_slab, hdf_slab, &win);
  }
  free(m);
  free(buf);
  return 0;
}
