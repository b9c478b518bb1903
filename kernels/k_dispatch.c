/*
** kernels/k_dispatch.c - chooses the kernel level once, from CPUID and
** the H5MEM_SIMD environment variable.
*/
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define K_X86 1
#endif

static const char *const k_names[K_NLEVEL] = {"scalar", "sse2",   "avx2",
                                              "avx512", "neon", "avx512vnni"};

const char *k_level_name(k_level level) {
  return (unsigned)level < K_NLEVEL ? k_names[level] : "unknown";
}

k_level k_level_from_name(const char *name) {
  for (int i = 0; i < K_NLEVEL; i++)
    if (name && strcmp(name, k_names[i]) == 0) return (k_level)i;
  return K_NLEVEL;
}

#ifdef K_X86
/* XCR0: which register states the OS saves on context switch. */
static uint64_t k_xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

/* Bit mask of the levels this CPU and OS can run. */
static unsigned k_cpu_levels(void) {
  unsigned a, b, c, d, mask = 1u << K_SCALAR;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return mask;
  if (d & (1u << 26)) mask |= 1u << K_SSE2;
  int osxsave = (c & (1u << 27)) != 0;
  int avx = (c & (1u << 28)) != 0, fma = (c & (1u << 12)) != 0,
      f16c = (c & (1u << 29)) != 0;
  if (!osxsave || !avx) return mask;
  uint64_t xcr0 = k_xgetbv0();
  if ((xcr0 & 0x6) != 0x6) return mask; /* XMM and YMM state */
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return mask;
  int avx2 = (b & (1u << 5)) != 0;
  int avx512f = (b & (1u << 16)) != 0, avx512bw = (b & (1u << 30)) != 0;
  if (avx2 && fma && f16c) mask |= 1u << K_AVX2;
  if ((mask & (1u << K_AVX2)) && avx512f && avx512bw && (xcr0 & 0xe6) == 0xe6)
    mask |= 1u << K_AVX512;
  if ((mask & (1u << K_AVX512)) && (c & (1u << 11))) /* AVX512_VNNI */
    mask |= 1u << K_AVX512VNNI;
  return mask;
}
#elif defined(__aarch64__)
static unsigned k_cpu_levels(void) {
  return (1u << K_SCALAR) | (1u << K_NEON); /* AdvSIMD is mandatory */
}
#else
static unsigned k_cpu_levels(void) { return 1u << K_SCALAR; }
#endif

static const k_ops *k_compiled(k_level level) {
  switch (level) {
  case K_SCALAR: return &k_scalar_ops;
#ifdef HAVE_K_SSE2
  case K_SSE2: return &k_sse2_ops;
#endif
#ifdef HAVE_K_AVX2
  case K_AVX2: return &k_avx2_ops;
#endif
#ifdef HAVE_K_AVX512
  case K_AVX512: return &k_avx512_ops;
#endif
#ifdef HAVE_K_NEON
  case K_NEON: return &k_neon_ops;
#endif
#ifdef HAVE_K_AVX512VNNI
  case K_AVX512VNNI: return &k_avx512vnni_ops;
#endif
  default: return NULL;
  }
}

int k_compiled_in(k_level level) { return k_compiled(level) != NULL; }

/* Space-separated names of the levels in mask. */
static void k_levels_format(unsigned mask, char *buf, size_t buflen) {
  size_t used = 0;
  if (buflen) buf[0] = '\0';
  for (int i = 0; i < K_NLEVEL; i++) {
    if (!(mask & (1u << i))) continue;
    int w = snprintf(buf + used, buflen - used, "%s%s", used ? " " : "",
                     k_names[i]);
    if (w < 0 || (size_t)w >= buflen - used) break;
    used += (size_t)w;
  }
}

static pthread_once_t k_once = PTHREAD_ONCE_INIT;
static unsigned k_usable_mask;
static const k_ops *k_active;
static char k_env_error[256];

static void k_init(void) {
  unsigned cpu = k_cpu_levels();
  for (int i = 0; i < K_NLEVEL; i++)
    if ((cpu & (1u << i)) && k_compiled((k_level)i)) k_usable_mask |= 1u << i;
  /* best usable level: the highest-numbered one (on x86 the widest, VNNI
  ** above plain AVX-512; NEON never runs beside an x86 level) */
  k_active = &k_scalar_ops;
  for (int i = 0; i < K_NLEVEL; i++)
    if (k_usable_mask & (1u << i)) k_active = k_compiled((k_level)i);

  const char *env = getenv("H5MEM_SIMD");
  if (!env || !*env) return;
  k_level want = k_level_from_name(env);
  if (want < K_NLEVEL && (k_usable_mask & (1u << want))) {
    k_active = k_compiled(want);
    return;
  }
  char usable[64];
  k_levels_format(k_usable_mask, usable, sizeof usable);
  snprintf(k_env_error, sizeof k_env_error,
           "H5MEM_SIMD=%.40s: %s; usable here: %s", env,
           want == K_NLEVEL ? "unknown SIMD level"
           : k_compiled(want) ? "this CPU cannot run it"
                              : "not compiled into this build",
           usable);
}

const k_ops *k_get(void) {
  pthread_once(&k_once, k_init);
  return k_active;
}

const k_ops *k_ops_for(k_level level) {
  pthread_once(&k_once, k_init);
  if ((unsigned)level >= K_NLEVEL || !(k_usable_mask & (1u << level)))
    return NULL;
  return k_compiled(level);
}

void k_levels_usable(char *buf, size_t buflen) {
  pthread_once(&k_once, k_init);
  k_levels_format(k_usable_mask, buf, buflen);
}

int k_check_env(char *err, size_t errlen) {
  pthread_once(&k_once, k_init);
  if (!k_env_error[0]) return 0;
  snprintf(err, errlen, "%s", k_env_error);
  return -1;
}
