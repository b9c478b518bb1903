/*
** test/unit/test_prune.c - lib/ann/prune: an exact search pruned by the int8
** sketch must answer exactly as the plain gather over the same rows (the
** same positions, the same distances bit for bit, the same order), for
** every metric and element type, on data made to strain the bounds: near
** ties around tight clusters, exact duplicates, rows whose small elements
** the codes lose (q8.h's (x, 1, ..., 7) rows), mixed magnitudes, zero and
** non-finite rows, rows without a vector, rows past the sketch; and on
** clustered data it must actually prune.
*/
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ann/ann.h"
#include "ann/prune.h"
#include "k.h"
#include "testutil.h"

typedef struct rows {
  ann_elem elem;
  int dim;
  uint64_t n;
  uint8_t *data;   /* n rows */
  uint8_t *none;   /* n: 1 = block answers NULL (no vector) */
  uint64_t chunk;  /* rows per block */
} rows;

static const void *blockf(void *ctx, uint64_t pos, uint64_t *count) {
  const rows *r = ctx;
  uint64_t end = (pos / r->chunk + 1) * r->chunk;
  if (end > r->n) end = r->n;
  if (r->none[pos]) {
    *count = 1;
    return NULL;
  }
  uint64_t c = 1;
  while (pos + c < end && c < *count && !r->none[pos + c]) c++;
  *count = c;
  return r->data + pos * (size_t)r->dim * (size_t)r->elem;
}

static void put(rows *r, uint64_t i, const float *x) {
  uint8_t *p = r->data + i * (size_t)r->dim * (size_t)r->elem;
  if (r->elem == ANN_F32) memcpy(p, x, (size_t)r->dim * sizeof(float));
  else k_get()->f32_to_f16(x, (uint16_t *)p, (size_t)r->dim);
}

enum { D_UNIFORM, D_CLUSTER, D_DUPS, D_LOST, D_MAGNITUDE, D_KINDS };
static const char *dname[] = {"uniform", "clustered", "duplicates", "lost-elements", "magnitudes"};

/* row i of data kind `kind` into x */
static void make(t_rng *g, int kind, int dim, const float *centres, uint64_t i, float *x) {
  switch (kind) {
  case D_UNIFORM:
    for (int j = 0; j < dim; j++) x[j] = t_unit(g);
    break;
  case D_CLUSTER: { /* 20 centres, tiny noise: many near ties */
    const float *c = centres + (i % 20) * (size_t)dim;
    for (int j = 0; j < dim; j++) x[j] = c[j] + 0.01f * t_unit(g);
    break;
  }
  case D_DUPS: { /* every row one of 7 */
    t_rng h = {1000 + i % 7};
    for (int j = 0; j < dim; j++) x[j] = t_unit(&h);
    break;
  }
  case D_LOST: /* (x, 1..7 repeating): the codes keep little of the small elements */
    x[0] = 1700.0f + (float)(t_next(g) % 200);
    for (int j = 1; j < dim; j++) x[j] = (float)(1 + (t_next(g) % 7));
    break;
  default: { /* magnitudes from 1e-6 to 1e6 */
    double m = pow(10.0, (double)(t_next(g) % 13) - 6.0);
    for (int j = 0; j < dim; j++) x[j] = (float)(m * t_unit(g));
  }
  }
}

static void run_case(t_rng *g, ann_elem elem, ann_metric metric, int kind, int dim, uint64_t n) {
  rows r = {elem, dim, n, malloc((size_t)n * (size_t)dim * (size_t)elem), calloc((size_t)n, 1), 97};
  float *x = malloc((size_t)dim * sizeof *x), *centres = malloc(20 * (size_t)dim * sizeof *centres);
  ck_assert_ptr_nonnull(r.data);
  for (int j = 0; j < 20 * dim; j++) centres[j] = t_unit(g);
  for (uint64_t i = 0; i < n; i++) {
    make(g, kind, dim, centres, i, x);
    uint64_t u = t_next(g) % 1000;
    if (u < 5) { /* a row without a vector: NULL from block, or NaN first */
      r.none[i] = u < 3;
      x[0] = NAN;
    } else if (u < 8) {
      memset(x, 0, (size_t)dim * sizeof *x);
    } else if (u < 9) {
      x[dim - 1] = INFINITY;
    }
    put(&r, i, x);
  }
  ann_src src = {dim, elem, metric, n, blockf, &r};
  uint64_t covered = n - n / 10; /* the last tenth past the sketch */
  ann_sketch *sk = ann_sketch_build(&src, covered, 2);
  ck_assert_ptr_nonnull(sk);
  ck_assert_uint_eq(ann_sketch_rows(sk), covered);
  uint64_t *pos = malloc((size_t)n * sizeof *pos);
  ann_res *a = malloc(200 * sizeof *a), *b = malloc(200 * sizeof *b);
  uint64_t pruned_well = 0, tries = 0;
  for (int t = 0; t < 12; t++) {
    /* a query like the rows (or one of them, exactly) */
    make(g, kind, dim, centres, t_next(g) % n, x);
    if (t % 4 == 3) {
      uint64_t i = t_next(g) % n;
      if (elem == ANN_F32 && !r.none[i]) memcpy(x, r.data + i * (size_t)dim * 4, (size_t)dim * 4);
      for (int j = 0; j < dim; j++)
        if (!isfinite(x[j])) x[j] = 0.5f;
    }
    uint64_t m = 0, keep = t % 3 == 0 ? 1 : t % 3 == 1 ? 2 : 10; /* all rows, half, a tenth */
    for (uint64_t i = 0; i < n; i++)
      if (t_next(g) % keep == 0) pos[m++] = i;
    static const uint64_t ks[] = {1, 10, 50};
    uint64_t k = ks[t % 3];
    uint64_t na = 0, nb = 0, scored = 0;
    ck_assert_int_eq(ann_flat_gather(&src, x, k, pos, m, a, &na), ANN_OK);
    ck_assert_int_eq(ann_flat_gather_pruned(&src, sk, x, k, pos, m, b, &nb, &scored), ANN_OK);
    T_CHECK(na == nb, "%s elem %d metric %d dim %d: %llu results, pruned %llu", dname[kind], elem, metric, dim,
            (unsigned long long)na, (unsigned long long)nb);
    for (uint64_t i = 0; i < na; i++)
      T_CHECK(a[i].pos == b[i].pos && memcmp(&a[i].dist, &b[i].dist, sizeof(float)) == 0,
              "%s elem %d metric %d dim %d k %llu: result %llu is row %llu at %.9g, pruned row %llu at %.9g",
              dname[kind], elem, metric, dim, (unsigned long long)k, (unsigned long long)i,
              (unsigned long long)a[i].pos, (double)a[i].dist, (unsigned long long)b[i].pos, (double)b[i].dist);
    T_CHECK(scored <= m, "scored %llu of %llu", (unsigned long long)scored, (unsigned long long)m);
    if (m >= 256 && k <= m / 8) {
      tries++;
      pruned_well += scored < m / 2;
    }
  }
  /* clustered rows far apart: most are ruled out */
  if (kind == D_CLUSTER && dim >= 16)
    T_CHECK(pruned_well * 2 >= tries, "%s elem %d metric %d dim %d: pruned well in %llu of %llu searches",
            dname[kind], elem, metric, dim, (unsigned long long)pruned_well, (unsigned long long)tries);
  ann_sketch_free(sk);
  free(pos);
  free(a);
  free(b);
  free(x);
  free(centres);
  free(r.data);
  free(r.none);
}

START_TEST(test_same_as_gather) {
  t_rng g = {t_seed()};
  static const int dims[] = {3, 16, 100, 384};
  for (int kind = 0; kind < D_KINDS; kind++)
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
      for (int e = 0; e < 2; e++)
        for (int m = 0; m < 3; m++) {
          ann_elem elem = e ? ANN_F16 : ANN_F32;
          if (elem == ANN_F16 && kind == D_MAGNITUDE) continue; /* (f16 holds no 1e6) */
          run_case(&g, elem, (ann_metric)m, kind, dims[di], dims[di] >= 100 ? 3000 : 9000);
        }
}
END_TEST

/* Cases the search must leave to a plain gather: no sketch, too few rows,
** k too large a share; and a sketch of another shape. */
START_TEST(test_fallbacks) {
  t_rng g = {t_seed() + 1};
  int dim = 8;
  uint64_t n = 1000;
  rows r = {ANN_F32, dim, n, malloc((size_t)n * (size_t)dim * 4), calloc((size_t)n, 1), 1000};
  for (uint64_t i = 0; i < n * (uint64_t)dim; i++) ((float *)r.data)[i] = t_unit(&g);
  ann_src src = {dim, ANN_F32, ANN_L2, n, blockf, &r};
  ann_src other = {dim, ANN_F32, ANN_COSINE, n, blockf, &r};
  ann_sketch *sk = ann_sketch_build(&src, n, 1), *sko = ann_sketch_build(&other, n, 1);
  ck_assert_ptr_nonnull(sk);
  ck_assert_ptr_null(ann_sketch_build(&src, 0, 1));
  ck_assert_uint_eq(ann_sketch_bytes(sk), ann_sketch_size(n, dim));
  uint64_t *pos = malloc(n * sizeof *pos);
  for (uint64_t i = 0; i < n; i++) pos[i] = i;
  float q[8];
  for (int j = 0; j < dim; j++) q[j] = t_unit(&g);
  ann_res a[200], b[200];
  uint64_t na, nb, scored;
  struct { const ann_sketch *sk; uint64_t n, k; } c[] = {{NULL, n, 5}, {sk, 100, 5}, {sk, n, 200}, {sko, n, 5}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    ck_assert_int_eq(ann_flat_gather(&src, q, c[i].k, pos, c[i].n, a, &na), ANN_OK);
    ck_assert_int_eq(ann_flat_gather_pruned(&src, c[i].sk, q, c[i].k, pos, c[i].n, b, &nb, &scored), ANN_OK);
    ck_assert_uint_eq(na, nb);
    ck_assert_uint_eq(scored, c[i].n); /* every row scored */
    ck_assert(memcmp(a, b, na * sizeof *a) == 0);
  }
  /* a query the encoding cannot bound (zero): every row scored, same answer */
  memset(q, 0, sizeof q);
  ck_assert_int_eq(ann_flat_gather(&src, q, 5, pos, n, a, &na), ANN_OK);
  ck_assert_int_eq(ann_flat_gather_pruned(&src, sk, q, 5, pos, n, b, &nb, &scored), ANN_OK);
  ck_assert_uint_eq(scored, n);
  ck_assert(na == nb && memcmp(a, b, na * sizeof *a) == 0);
  ann_sketch_free(sk);
  ann_sketch_free(sko);
  ann_sketch_free(NULL);
  free(pos);
  free(r.data);
  free(r.none);
}
END_TEST

int main(void) {
  printf("test_prune: seed %llu, kernels %s\n", (unsigned long long)t_seed(), k_get()->name);
  Suite *s = suite_create("prune");
  TCase *tc = tcase_create("prune");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_same_as_gather);
  tcase_add_test(tc, test_fallbacks);
  suite_add_tcase(s, tc);
  return t_run(s);
}
