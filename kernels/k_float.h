/*
** kernels/k_float.h - the float distance loops, written once for every SIMD
** level and both row types.
**
** A level's file (k_sse2.c, k_avx2.c, ...) defines its vector operations and
** includes this file, which makes, for an f32 query q against a row r of
** f32 and of f16 (binary16) elements:
**   kp_dot_f32, kp_dot_f16(q, r, n)          sum q[i]*r[i]
**   kp_l2sq_f32, kp_l2sq_f16(q, r, n)        sum (q[i]-r[i])^2
**   kp_dotnorm_f32, kp_dotnorm_f16(q, r, n, &rr)
**                                           sum q[i]*r[i], *rr = sum r[i]^2
**
** Four independent accumulators over 4*KW elements a step keep the FMA
** latency hidden; the last n % KW elements go through one more vector step
** on zero-padded copies, so nothing reads past the end of q or r.
**
** Expected definitions:
**   KV               the vector type; KW its number of float lanes
**   KZERO()          a vector of zeros
**   KADD(a, b), KSUB(a, b)
**   KFMA(a, b, c)    c + a*b
**   KHSUM(v)         the sum of v's lanes, as a float
**   KLOADQ(p)        KW floats from p; KTAILQ(p, n) the n < KW floats at p,
**                    zero-padded
**   KLOADH(p), KTAILH(p, n)   the same for binary16 elements, widened
*/
#define KROW float
#define KLOADR(p) KLOADQ(p)
#define KTAILR(p, n) KTAILQ(p, n)
#define KSUFFIX f32
#include "k_float_loops.h"

#define KROW uint16_t
#define KLOADR(p) KLOADH(p)
#define KTAILR(p, n) KTAILH(p, n)
#define KSUFFIX f16
#include "k_float_loops.h"
