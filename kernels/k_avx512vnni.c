/*
** kernels/k_avx512vnni.c - AVX-512 VNNI level (compiled with
** AVX512VNNI_CFLAGS): k_avx512.c again, its int8 sums by vpdpbusd (64
** products per instruction, against 32 by vpmovsxbw + vpmaddwd).  Chosen
** at run time only on CPUs that have AVX512_VNNI as well as F and BW.
*/
#define K_VNNI 1
#include "k_avx512.c"
