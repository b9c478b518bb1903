/*
** test/tools/h5mkfile.c - write sample files with lib/h5's writer, for
** test/interop/test_h5_interop.py to read back with h5py, h5dump and our reader.
**
**   h5mkfile DIR     writes DIR/basic.h5, DIR/many.h5, DIR/bigchunks.h5,
**                    DIR/links.h5, DIR/attrs.h5
**
** Every value follows a formula the Python test computes too:
**   integer datasets: element i = i * 3 - 7 (clipped to the type by C rules)
**   float datasets:   element i = i * 0.25 - 1.5
** (attrs.h5 shifts them by the attribute's number; see attrs()).
** many.h5, links.h5 and attrs.h5 hold more than 8 links or attributes per
** object: dense storage (fractal heap + v2 B-tree), next to objects of
** exactly 8 (still compact) and 9.
** Exit status 0, or 1 with a message.
*/
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5/h5.h"

static h5w *W;

static void check(int rc, const char *what) {
  if (rc != H5_OK) {
    fprintf(stderr, "h5mkfile: %s: %s\n", what, h5w_errmsg(W));
    exit(1);
  }
}

static char *path_in(const char *dir, const char *name) {
  static char buf[4096];
  snprintf(buf, sizeof buf, "%s/%s", dir, name);
  return buf;
}

#define N1 37

static void ints(h5w_obj *g, const char *name, int bytes, int is_signed) {
  uint64_t dims[1] = {N1};
  uint8_t buf[N1 * 8];
  for (int i = 0; i < N1; i++) {
    int64_t v = (int64_t)i * 3 - 7;
    switch (bytes) {
    case 1: { int8_t x = (int8_t)v; uint8_t u = (uint8_t)v; memcpy(buf + i, is_signed ? (void *)&x : (void *)&u, 1); break; }
    case 2: { int16_t x = (int16_t)v; uint16_t u = (uint16_t)v; memcpy(buf + 2 * i, is_signed ? (void *)&x : (void *)&u, 2); break; }
    case 4: { int32_t x = (int32_t)v; uint32_t u = (uint32_t)v; memcpy(buf + 4 * i, is_signed ? (void *)&x : (void *)&u, 4); break; }
    default: { uint64_t u = (uint64_t)v; memcpy(buf + 8 * i, &u, 8); break; }
    }
  }
  h5w_obj *d;
  check(h5w_dataset(W, g, name, h5_type_new_int(bytes, is_signed), 1, dims, NULL, NULL, &d), name);
  check(h5w_write(W, d, buf), name);
}

static void floats(h5w_obj *g, const char *name, int bytes) {
  uint64_t dims[1] = {N1};
  uint8_t buf[N1 * 8];
  for (int i = 0; i < N1; i++) {
    double v = i * 0.25 - 1.5;
    if (bytes == 8) {
      memcpy(buf + 8 * i, &v, 8);
    } else if (bytes == 4) {
      float f = (float)v;
      memcpy(buf + 4 * i, &f, 4);
    } else { /* exact in binary16: quarters up to 7.5 */
      uint16_t h;
      float f = (float)v;
      uint32_t b;
      memcpy(&b, &f, 4);
      uint32_t sign = (b >> 16) & 0x8000, e = (b >> 23) & 0xff, m = b & 0x7fffff;
      h = (uint16_t)(f == 0.0f ? sign : sign | ((e - 112) << 10) | (m >> 13));
      memcpy(buf + 2 * i, &h, 2);
    }
  }
  h5w_obj *d;
  check(h5w_dataset(W, g, name, h5_type_new_float(bytes), 1, dims, NULL, NULL, &d), name);
  check(h5w_write(W, d, buf), name);
}

/* A 16-byte slot holding a const char * (the writer's vlen string input). */
typedef struct vslot {
  const char *s;
  uint64_t pad;
} vslot;

static void basic(const char *dir) {
  char err[256];
  if (h5w_create(path_in(dir, "basic.h5"), 0, &W, err, sizeof err)) {
    fprintf(stderr, "h5mkfile: %s\n", err);
    exit(1);
  }
  h5w_obj *root = h5w_root(W), *nums, *a, *b, *c, *d;
  check(h5w_group(W, root, "numbers", &nums), "numbers");
  ints(nums, "i8", 1, 1);
  ints(nums, "u8", 1, 0);
  ints(nums, "i16", 2, 1);
  ints(nums, "u16", 2, 0);
  ints(nums, "i32", 4, 1);
  ints(nums, "u32", 4, 0);
  ints(nums, "i64", 8, 1);
  ints(nums, "u64", 8, 0);
  floats(nums, "f16", 2);
  floats(nums, "f32", 4);
  floats(nums, "f64", 8);
  check(h5w_group(W, root, "a", &a), "a");
  check(h5w_group(W, a, "b", &b), "b");
  check(h5w_group(W, b, "c", &c), "c");

  /* compact */
  uint64_t d4[1] = {4};
  int32_t small[4] = {10, 20, 30, 40};
  h5w_dcpl compact = {.layout = H5_LAYOUT_COMPACT, .deflate = -1};
  check(h5w_dataset(W, c, "compact", h5_type_new_int(4, 1), 1, d4, NULL, &compact, &d), "compact");
  check(h5w_write(W, d, small), "compact");

  /* chunked 2-D with every filter; 100 x 30 in 16 x 7 chunks (edges partial) */
  uint64_t d2[2] = {100, 30};
  float *grid = malloc(100 * 30 * sizeof *grid);
  for (int i = 0; i < 3000; i++) grid[i] = (float)(i * 0.25 - 1.5);
  h5w_dcpl filt = {.layout = H5_LAYOUT_CHUNKED, .chunk = {16, 7}, .deflate = 6,
                   .shuffle = 1, .fletcher32 = 1};
  check(h5w_dataset(W, root, "filtered", h5_type_new_float(4), 2, d2, NULL, &filt, &d), "filtered");
  check(h5w_write(W, d, grid), "filtered");
  h5w_dcpl plain = {.layout = H5_LAYOUT_CHUNKED, .chunk = {16, 7}, .deflate = -1};
  check(h5w_dataset(W, root, "chunked", h5_type_new_float(4), 2, d2, NULL, &plain, &d), "chunked");
  check(h5w_write(W, d, grid), "chunked");
  free(grid);

  /* appended rows: unlimited dimension 0, three appends, fill value -1 */
  uint64_t d0[2] = {0, 3}, dmax[2] = {UINT64_MAX, 3};
  int64_t fillv = -1;
  h5w_dcpl app = {.layout = H5_LAYOUT_CHUNKED, .chunk = {4, 3}, .deflate = 1, .fill = &fillv};
  check(h5w_dataset(W, root, "appended", h5_type_new_int(8, 1), 2, d0, dmax, &app, &d), "appended");
  int64_t rows[10 * 3];
  for (int i = 0; i < 30; i++) rows[i] = i * 3 - 7;
  check(h5w_append(W, d, rows, 3), "append 1");
  check(h5w_append(W, d, rows + 9, 6), "append 2");
  check(h5w_append(W, d, rows + 27, 1), "append 3");

  /* strings */
  const char *words[5] = {"alpha", "béta", "", "a much longer string, with commas", NULL};
  char fixed[5][8];
  memset(fixed, 0, sizeof fixed);
  for (int i = 0; i < 5; i++)
    if (words[i]) strncpy(fixed[i], words[i], 8);
  uint64_t d5[1] = {5};
  check(h5w_dataset(W, root, "fixed_strings", h5_type_new_string(8, 1), 1, d5, NULL, NULL, &d), "fixed");
  check(h5w_write(W, d, fixed), "fixed");
  vslot vs[5];
  for (int i = 0; i < 5; i++) vs[i].s = words[i], vs[i].pad = 0;
  check(h5w_dataset(W, root, "vlen_strings", h5_type_new_string(0, 1), 1, d5, NULL, NULL, &d), "vlen");
  check(h5w_write(W, d, vs), "vlen");

  /* compound {id i32, score f64, tag S4, note vlen str} */
  h5_type *ct = h5_type_new_compound(32);
  check(h5_type_add_member(ct, "id", 0, h5_type_new_int(4, 1)), "member id");
  check(h5_type_add_member(ct, "score", 4, h5_type_new_float(8)), "member score");
  check(h5_type_add_member(ct, "tag", 12, h5_type_new_string(4, 0)), "member tag");
  check(h5_type_add_member(ct, "note", 16, h5_type_new_string(0, 1)), "member note");
  uint8_t recs[3][32];
  memset(recs, 0, sizeof recs);
  const char *notes[3] = {"first", "second", "third"};
  for (int i = 0; i < 3; i++) {
    int32_t id = i + 1;
    double sc = i * 0.25 - 1.5;
    memcpy(recs[i], &id, 4);
    memcpy(recs[i] + 4, &sc, 8);
    memcpy(recs[i] + 12, "tag", 3);
    memcpy(recs[i] + 16, &notes[i], sizeof(char *));
  }
  uint64_t d3[1] = {3};
  check(h5w_dataset(W, root, "records", ct, 1, d3, NULL, NULL, &d), "records");
  check(h5w_write(W, d, recs), "records");

  /* enum, bool, array */
  h5_type *et = h5_type_new_enum(h5_type_new_int(1, 0));
  uint8_t red = 0, green = 1, blue = 2;
  check(h5_type_add_enum_value(et, "RED", &red), "enum");
  check(h5_type_add_enum_value(et, "GREEN", &green), "enum");
  check(h5_type_add_enum_value(et, "BLUE", &blue), "enum");
  uint8_t colors[4] = {2, 0, 1, 2};
  check(h5w_dataset(W, root, "colors", et, 1, d4, NULL, NULL, &d), "colors");
  check(h5w_write(W, d, colors), "colors");
  int8_t flags[4] = {1, 0, 0, 1};
  check(h5w_dataset(W, root, "flags", h5_type_new_bool(), 1, d4, NULL, NULL, &d), "flags");
  check(h5w_write(W, d, flags), "flags");
  uint32_t adims[1] = {3};
  int16_t arr[4][3];
  for (int i = 0; i < 12; i++) arr[i / 3][i % 3] = (int16_t)(i * 3 - 7);
  check(h5w_dataset(W, root, "arrays", h5_type_new_array(h5_type_new_int(2, 1), 1, adims), 1, d4,
                    NULL, NULL, &d), "arrays");
  check(h5w_write(W, d, arr), "arrays");

  /* attributes */
  double pi = 3.14159265358979;
  check(h5w_attr(W, root, "pi", h5_type_new_float(8), 0, NULL, &pi), "attr pi");
  vslot title = {"agent memory ✓", 0};
  check(h5w_attr(W, root, "title", h5_type_new_string(0, 1), 0, NULL, &title), "attr title");
  int32_t vec[4] = {1, -2, 3, -4};
  check(h5w_attr(W, nums, "vec", h5_type_new_int(4, 1), 1, d4, vec), "attr vec");
  check(h5w_attr(W, d, "fixed", h5_type_new_string(8, 0), 0, NULL, "fixedval"), "attr fixed");
  check(h5w_close(W, 1), "close");
  h5w_free(W);
}

static void many(const char *dir) {
  char err[256];
  if (h5w_create(path_in(dir, "many.h5"), 0, &W, err, sizeof err)) {
    fprintf(stderr, "h5mkfile: %s\n", err);
    exit(1);
  }
  h5w_obj *root = h5w_root(W), *g;
  for (int i = 0; i < 150; i++) {
    char name[32];
    snprintf(name, sizeof name, "group%03d", i);
    check(h5w_group(W, root, name, &g), name);
    int32_t v = i;
    check(h5w_attr(W, g, "index", h5_type_new_int(4, 1), 0, NULL, &v), "attr");
  }
  for (int i = 0; i < 150; i++) {
    char name[32];
    snprintf(name, sizeof name, "attr%03d", i);
    int64_t v = (int64_t)i * 3 - 7;
    check(h5w_attr(W, root, name, h5_type_new_int(8, 1), 0, NULL, &v), name);
  }
  check(h5w_close(W, 0), "close");
  h5w_free(W);
}

static void bigchunks(const char *dir) {
  char err[256];
  if (h5w_create(path_in(dir, "bigchunks.h5"), 0, &W, err, sizeof err)) {
    fprintf(stderr, "h5mkfile: %s\n", err);
    exit(1);
  }
  /* 5000 chunks: a three-level chunk B-tree */
  uint64_t dims[1] = {50000};
  int32_t *v = malloc(50000 * sizeof *v);
  for (int i = 0; i < 50000; i++) v[i] = i * 3 - 7;
  h5w_dcpl dc = {.layout = H5_LAYOUT_CHUNKED, .chunk = {10}, .deflate = 4, .shuffle = 1};
  h5w_obj *d;
  check(h5w_dataset(W, h5w_root(W), "ints", h5_type_new_int(4, 1), 1, dims, NULL, &dc, &d), "ints");
  check(h5w_write(W, d, v), "ints");
  free(v);
  check(h5w_close(W, 0), "close");
  h5w_free(W);
}

static h5w *open_out(const char *dir, const char *name) {
  char err[256];
  if (h5w_create(path_in(dir, name), 0, &W, err, sizeof err)) {
    fprintf(stderr, "h5mkfile: %s\n", err);
    exit(1);
  }
  return W;
}

/* Link i of links.h5: names of 8 to 35 bytes, every 1000th one of 310
** (two-byte name lengths), and one of 5010 (a link message over the heap's
** 4 KiB managed object limit: a huge object). */
static const char *link_name(int i) {
  static char buf[6000];
  if (i == 12345) {
    snprintf(buf, sizeof buf, "huge%05d_", i);
    memset(buf + 10, 'y', 5000);
    buf[5010] = '\0';
  } else if (i % 1000 == 999) {
    snprintf(buf, sizeof buf, "long%05d_", i);
    memset(buf + 10, 'x', 300);
    buf[310] = '\0';
  } else {
    snprintf(buf, sizeof buf, "link%05d%.*s", i, i % 28, "_abcdefghijklmnopqrstuvwxyz");
  }
  return buf;
}

#define NLINKS 20000

/* 20000 links in the root (a fractal heap past its root indirect block's
** direct rows, a three-level name index); groups of 8 and 9 links. */
static void links(const char *dir) {
  open_out(dir, "links.h5");
  h5w_obj *root = h5w_root(W), *g, *e;
  for (int i = 0; i < NLINKS; i++) {
    check(h5w_group(W, root, link_name(i), &g), "link");
    if (i % 1000 == 0) {
      int32_t v = i;
      check(h5w_attr(W, g, "index", h5_type_new_int(4, 1), 0, NULL, &v), "index");
    }
  }
  for (int n = 8; n <= 9; n++) {
    char name[32];
    snprintf(name, sizeof name, "edge%d", n);
    check(h5w_group(W, root, name, &e), name);
    for (int i = 0; i < n; i++) {
      snprintf(name, sizeof name, "s%d", i);
      check(h5w_group(W, e, name, &g), name);
    }
  }
  check(h5w_close(W, 0), "close");
  h5w_free(W);
}

static void int_attr(h5w_obj *o, const char *name, int bytes, uint64_t n, int64_t shift) {
  uint8_t *buf = malloc(n * (uint64_t)bytes);
  for (uint64_t j = 0; j < n; j++) {
    int64_t v = ((int64_t)j + shift) * 3 - 7;
    if (bytes == 2) { int16_t x = (int16_t)v; memcpy(buf + 2 * j, &x, 2); }
    else if (bytes == 4) { int32_t x = (int32_t)v; memcpy(buf + 4 * j, &x, 4); }
    else memcpy(buf + 8 * j, &v, 8);
  }
  uint64_t dims[1] = {n};
  check(h5w_attr(W, o, name, h5_type_new_int(bytes, 1), n == 1 ? 0 : 1, dims, buf), name);
  free(buf);
}

static void float_attr(h5w_obj *o, const char *name, uint64_t n, int64_t shift) {
  double *buf = malloc(n * sizeof *buf);
  for (uint64_t j = 0; j < n; j++) buf[j] = ((int64_t)j + shift) * 0.25 - 1.5;
  uint64_t dims[1] = {n};
  check(h5w_attr(W, o, name, h5_type_new_float(8), 1, dims, buf), name);
  free(buf);
}

/* 2000 attributes of five kinds on the root, three over 64 KiB; a dataset
** with 50; a dataset with 2, one over 64 KiB; a group of 12 of about 4 KiB;
** groups of 8 and 9. */
static void attrs(const char *dir) {
  open_out(dir, "attrs.h5");
  h5w_obj *root = h5w_root(W), *d, *g;
  char name[32];
  for (int i = 0; i < 2000; i++) {
    snprintf(name, sizeof name, "attr%04d", i);
    switch (i % 5) {
    case 0: /* int64 scalar */
      int_attr(root, name, 8, 1, i);
      break;
    case 1: /* float64, 1 to 7 elements */
      float_attr(root, name, (uint64_t)(i % 7) + 1, i);
      break;
    case 2: { /* fixed-length string */
      char s[12] = {0};
      snprintf(s, sizeof s, "s%04d", i);
      check(h5w_attr(W, root, name, h5_type_new_string(12, 1), 0, NULL, s), name);
      break;
    }
    case 3: { /* variable-length string */
      char s[32];
      snprintf(s, sizeof s, "vlen %d \xe2\x9c\x93", i);
      const char *slot[2] = {s, NULL};
      check(h5w_attr(W, root, name, h5_type_new_string(0, 1), 0, NULL, slot), name);
      break;
    }
    default: /* int32 arrays whose messages straddle the 4 KiB managed limit */
      int_attr(root, name, 4, 1010 + (uint64_t)(i % 10) * 2, i);
    }
  }
  int_attr(root, "big_int", 4, 20000, 0);      /* 80 KB */
  float_attr(root, "big_float", 50000, 0);     /* 400 KB */
  char *z = malloc(70000);
  memset(z, 'z', 70000);
  check(h5w_attr(W, root, "big_str", h5_type_new_string(70000, 0), 0, NULL, z), "big_str");
  free(z);

  uint64_t dims[1] = {10};
  int32_t data[10];
  for (int i = 0; i < 10; i++) data[i] = i * 3 - 7;
  check(h5w_dataset(W, root, "d50", h5_type_new_int(4, 1), 1, dims, NULL, NULL, &d), "d50");
  check(h5w_write(W, d, data), "d50");
  for (int i = 0; i < 50; i++) {
    snprintf(name, sizeof name, "a%02d", i);
    int_attr(d, name, 2, 1, i);
  }
  check(h5w_dataset(W, root, "d_big", h5_type_new_int(4, 1), 1, dims, NULL, NULL, &d), "d_big");
  check(h5w_write(W, d, data), "d_big");
  int_attr(d, "small", 2, 1, 4);
  int_attr(d, "huge", 4, 30000, 0); /* 120 KB: dense storage with 2 */
  /* only messages of about 4 KiB: 8 KiB direct blocks from the start */
  check(h5w_group(W, root, "wide", &g), "wide");
  for (int i = 0; i < 12; i++) {
    snprintf(name, sizeof name, "w%02d", i);
    int_attr(g, name, 4, 1010 + (uint64_t)i * 2, i);
  }
  for (int n = 8; n <= 9; n++) {
    snprintf(name, sizeof name, "edge%d", n);
    check(h5w_group(W, root, name, &g), name);
    for (int i = 0; i < n; i++) {
      snprintf(name, sizeof name, "e%d", i);
      int_attr(g, name, 8, 1, i);
    }
  }
  /* refused: a second attribute of the same name */
  int64_t one = 1;
  if (h5w_attr(W, g, "e0", h5_type_new_int(8, 1), 0, NULL, &one) != H5_EINVAL) {
    fprintf(stderr, "h5mkfile: a duplicate attribute name was accepted\n");
    exit(1);
  }
  check(h5w_close(W, 0), "close");
  h5w_free(W);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: h5mkfile DIR\n");
    return 2;
  }
  basic(argv[1]);
  many(argv[1]);
  bigchunks(argv[1]);
  links(argv[1]);
  attrs(argv[1]);
  return 0;
}
