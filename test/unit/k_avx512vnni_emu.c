/* The AVX-512 VNNI kernels compiled on SIMDe's portable intrinsics (table
** k_avx512vnni_emu_ops): k_avx512_emu.c with K_VNNI, as k_avx512vnni.c
** is k_avx512.c with it. */
#define K_VNNI 1
#include "k_avx512_emu.c"
