/* The NEON kernels compiled on SIMDe's portable intrinsics, so that
** test_kernels checks them on x86 (table k_neon_emu_ops). */
#define K_EMULATE 1
#include "../../kernels/k_neon.c"
