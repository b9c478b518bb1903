/*
** bench/bench_kernels.c - kernel throughput against the memory bandwidth.
**
**   make bench                      (or: ./bench/bench_kernels [options])
**   --rows N   rows per scan (default 100000)
**   --dim D    elements per row (default 384)
**   --reps R   timed repetitions per kernel (default 7; the median is kept)
**   --level L  only this SIMD level (scalar, sse2, avx2, avx512, avx512vnni, neon)
**
** Each batched kernel scores one query against every row, single thread,
** at every SIMD level this CPU runs.  GB/s counts the bytes of the rows
** read.  The reference is a plain read of as many bytes from another buffer
** (the widest loads this CPU has, four independent accumulators, nothing
** else; another buffer, so that neither pass leaves the other's data in
** cache).  Each timed
** kernel run is paired with a plain read just before it, so both see the
** same machine conditions (a shared VM's bandwidth drifts by 10-20% within
** seconds); "of read" is the median over the pairs of read time / kernel
** time, i.e. how close the scan comes to the bandwidth limit.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h5mem_commit.h"
#include "k.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* ---- the plain read: every byte loaded once, folded with XOR --------- */

static volatile uint64_t sink;

#if defined(__x86_64__)
__attribute__((target("avx2"))) static void read_avx2(const void *p,
                                                      size_t bytes) {
  const __m256i *v = p;
  size_t n = bytes / 128;
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < n; i++) {
    a = _mm256_xor_si256(a, _mm256_load_si256(v + 4 * i));
    b = _mm256_xor_si256(b, _mm256_load_si256(v + 4 * i + 1));
    c = _mm256_xor_si256(c, _mm256_load_si256(v + 4 * i + 2));
    d = _mm256_xor_si256(d, _mm256_load_si256(v + 4 * i + 3));
  }
  a = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
  sink = (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}

static void read_sse2(const void *p, size_t bytes) {
  const __m128i *v = p;
  size_t n = bytes / 64;
  __m128i a = _mm_setzero_si128(), b = a, c = a, d = a;
  for (size_t i = 0; i < n; i++) {
    a = _mm_xor_si128(a, _mm_load_si128(v + 4 * i));
    b = _mm_xor_si128(b, _mm_load_si128(v + 4 * i + 1));
    c = _mm_xor_si128(c, _mm_load_si128(v + 4 * i + 2));
    d = _mm_xor_si128(d, _mm_load_si128(v + 4 * i + 3));
  }
  a = _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d));
  sink = (uint64_t)_mm_cvtsi128_si64(a);
}
#else
static void read_u64(const void *p, size_t bytes) {
  const uint64_t *v = p;
  size_t n = bytes / 32;
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < n; i++) {
    a ^= v[4 * i];
    b ^= v[4 * i + 1];
    c ^= v[4 * i + 2];
    d ^= v[4 * i + 3];
  }
  sink = a ^ b ^ c ^ d;
}
#endif

typedef void (*read_fn)(const void *, size_t);

static read_fn pick_read(const char **name) {
#if defined(__x86_64__)
  if (k_ops_for(K_AVX2)) {
    *name = "AVX2 loads";
    return read_avx2;
  }
  *name = "SSE2 loads";
  return read_sse2;
#else
  *name = "64-bit loads";
  return read_u64;
#endif
}

/* ---- timing ------------------------------------------------------------ */

typedef struct bench_data {
  size_t rows, dim;
  float *q, *f32, *out, *scales;
  uint16_t *f16;
  int8_t *qi, *i8;
  const int8_t **i8p; /* the int8 rows in order (their batches gather) */
  char *other; /* what the plain reads read */
} bench_data;

static int reps = 7;

typedef struct timing {
  double kernel; /* median seconds per kernel run */
  double read;   /* median seconds per plain read of the same bytes */
  double ratio;  /* median of read/kernel over the pairs */
} timing;

/* One untimed warm-up run, then reps pairs of (plain read, kernel run). */
#define TIME_KERNEL(result, rd, base, bytes, call)      \
  do {                                                 \
    double tk_[64], tr_[64], q_[64];                   \
    call;                                              \
    for (int r_ = 0; r_ < reps; r_++) {                \
      double t0_ = now();                              \
      rd(base, bytes);                                 \
      double t1_ = now();                              \
      call;                                            \
      double t2_ = now();                              \
      tr_[r_] = t1_ - t0_;                             \
      tk_[r_] = t2_ - t1_;                             \
      q_[r_] = tr_[r_] / tk_[r_];                      \
    }                                                  \
    result.kernel = median(tk_, reps);                 \
    result.read = median(tr_, reps);                   \
    result.ratio = median(q_, reps);                   \
  } while (0)

static void *big(size_t bytes) {
  void *p = NULL;
  if (posix_memalign(&p, 64, bytes + 64)) {
    fprintf(stderr, "bench_kernels: cannot allocate %zu bytes\n", bytes);
    exit(1);
  }
  memset(p, 0, bytes + 64);
  return p;
}

static uint64_t rng_state = 12345;
static float frand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static void report(const char *level, const char *kernel, const char *type,
                   size_t bytes, timing t) {
  printf("| %-6s | %-8s | %-4s | %7.2f | %7.2f | %7.2f | %5.2f |\n", level,
         kernel, type, t.kernel * 1e3, (double)bytes / t.kernel / 1e9,
         (double)bytes / t.read / 1e9, t.ratio);
}

int main(int argc, char **argv) {
  bench_data d = {.rows = 100000, .dim = 384};
  int only = -1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rows")) d.rows = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--dim")) d.dim = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--level")) only = k_level_from_name(argv[i + 1]);
    else {
      fprintf(stderr, "usage: %s [--rows N] [--dim D] [--reps R] [--level L]\n",
              argv[0]);
      return 2;
    }
  }
  if (only == K_NLEVEL || (only >= 0 && !k_ops_for((k_level)only))) {
    fprintf(stderr, "bench_kernels: that SIMD level is unknown or not usable here\n");
    return 2;
  }
  if (reps < 1 || reps > 64 || d.rows == 0 || d.dim == 0) {
    fprintf(stderr, "bench_kernels: rows, dim > 0 and 1 <= reps <= 64\n");
    return 2;
  }
  size_t n = d.rows * d.dim;
  d.q = big(d.dim * 4);
  d.qi = big(d.dim);
  d.f32 = big(n * 4);
  d.f16 = big(n * 2);
  d.i8 = big(n);
  d.out = big(d.rows * 4);
  d.scales = big(d.rows * 4);
  d.other = big(n * 4);
  memset(d.other, 0x5a, n * 4);
  for (size_t i = 0; i < d.dim; i++) {
    d.q[i] = frand();
    d.qi[i] = (int8_t)(frand() * 127);
  }
  for (size_t i = 0; i < n; i++) d.f32[i] = frand();
  k_get()->f32_to_f16(d.f32, d.f16, n);
  for (size_t i = 0; i < n; i++) d.i8[i] = (int8_t)(d.f32[i] * 127);
  d.i8p = big(d.rows * sizeof *d.i8p);
  for (size_t r = 0; r < d.rows; r++) {
    d.scales[r] = 1.0f / 127;
    d.i8p[r] = d.i8 + r * d.dim;
  }

  const char *read_name;
  read_fn rd = pick_read(&read_name);

  char usable[64];
  k_levels_usable(usable, sizeof usable);
  time_t t = time(NULL);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&t));
  printf("bench_kernels: %zu rows x %zu dims, single thread, median of %d "
         "runs, each paired with a plain read (%s) of the same bytes\n",
         d.rows, d.dim, reps, read_name);
  printf("date %s, commit %s, levels usable: %s\n\n", date, H5MEM_COMMIT,
         usable);
  printf("| level  | kernel   | rows | ms/scan | GB/s    | read GB/s | of read |\n");
  printf("|--------|----------|------|---------|---------|-----------|---------|\n");

  for (int l = 0; l < K_NLEVEL; l++) {
    const k_ops *k = k_ops_for((k_level)l);
    if (!k || (only >= 0 && l != only)) continue;
    timing s;
#define RUN(kern_, type_, bytes_, call_)        \
  TIME_KERNEL(s, rd, d.other, bytes_, call_);   \
  report(k->name, kern_, type_, bytes_, s)
    RUN("dot", "f32", n * 4, k->dot_f32_batch(d.q, d.f32, d.rows, d.dim, d.out));
    RUN("l2sq", "f32", n * 4, k->l2sq_f32_batch(d.q, d.f32, d.rows, d.dim, d.out));
    RUN("cos", "f32", n * 4, k->cos_f32_batch(d.q, d.f32, d.rows, d.dim, d.out));
    RUN("dot", "f16", n * 2, k->dot_f16_batch(d.q, d.f16, d.rows, d.dim, d.out));
    RUN("l2sq", "f16", n * 2, k->l2sq_f16_batch(d.q, d.f16, d.rows, d.dim, d.out));
    RUN("cos", "f16", n * 2, k->cos_f16_batch(d.q, d.f16, d.rows, d.dim, d.out));
    RUN("dot", "i8", n,
        k->dot_i8_batch(d.qi, 1.0f / 127, d.i8p, d.scales, d.rows, d.dim, d.out));
    RUN("l2sq", "i8", n,
        k->l2sq_i8_batch(d.qi, 1.0f / 127, d.i8p, d.scales, d.rows, d.dim, d.out));
    RUN("cos", "i8", n, k->cos_i8_batch(d.qi, d.i8p, d.rows, d.dim, d.out));
    /* conversions also write: "of read" compares with reading the source */
    RUN("f16->f32", "f16", n * 2, k->f16_to_f32(d.f16, d.f32, n));
    RUN("f32->f16", "f32", n * 4, k->f32_to_f16(d.f32, d.f16, n));
#undef RUN
  }
  /* a checksum of the last results, so no kernel call can be elided */
  double cs = 0;
  for (size_t r = 0; r < d.rows; r++) cs += d.out[r];
  printf("\nchecksum %.6g\n", cs);
  return 0;
}
