/* The AVX-512 kernels compiled on SIMDe's portable intrinsics, so that
** test_kernels checks them on CPUs without AVX-512 (table k_avx512_emu_ops).
**
** SIMDe 0.7.4 (Debian 12) lacks a few AVX-512 intrinsics the kernels use
** and aliases _mm512_madd_epi16 to its masked form; the shims below stand
** in for them, built from SIMDe's own 256-bit F16C and plain stores. */
#define K_EMULATE 1
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/f16c.h>

#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)

#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif

#ifndef _mm512_cvtph_ps
static inline simde__m512 emu_cvtph_ps(simde__m256i h) {
  simde__m512 lo = simde_mm512_castps256_ps512(
      simde_mm256_cvtph_ps(simde_mm256_castsi256_si128(h)));
  return simde_mm512_insertf32x8(
      lo, simde_mm256_cvtph_ps(simde_mm256_extracti128_si256(h, 1)), 1);
}
#define _mm512_cvtph_ps(h) emu_cvtph_ps(h)
#endif

#ifndef _mm512_cvtps_ph
static inline simde__m256i emu_cvtps_ph(simde__m512 f) {
  simde__m128i lo = simde_mm256_cvtps_ph(simde_mm512_castps512_ps256(f), 0);
  simde__m128i hi = simde_mm256_cvtps_ph(
      simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(f), 1)), 0);
  return simde_mm256_set_m128i(hi, lo);
}
#define _mm512_cvtps_ph(f, r) emu_cvtps_ph(f)
#endif

#ifndef _mm512_reduce_add_ps
static inline float emu_reduce_add_ps(simde__m512 v) {
  float t[16], s = 0.0f;
  simde_mm512_storeu_ps(t, v);
  for (int i = 0; i < 16; i++) s += t[i];
  return s;
}
#define _mm512_reduce_add_ps(v) emu_reduce_add_ps(v)
#endif

#ifndef _mm512_reduce_add_epi32
static inline int32_t emu_reduce_add_epi32(simde__m512i v) {
  int32_t t[16], s = 0;
  simde_mm512_storeu_si512(t, v);
  for (int i = 0; i < 16; i++) s += t[i];
  return s;
}
#define _mm512_reduce_add_epi32(v) emu_reduce_add_epi32(v)
#endif

#include "../../kernels/k_avx512.c"
