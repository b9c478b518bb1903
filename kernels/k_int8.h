/*
** kernels/k_int8.h - the int8 sum loops, written once for every SIMD level.
**
** A level's file defines the operations below and includes this file; it
** makes
**   kp_dot_i8(a, b, n)            exact sum a[i]*b[i]
**   kp_dotnorm_i8(q, r, n, &rr)   exact sum q[i]*r[i], and *rr = sum r[i]^2
** Products are summed in int32 lanes and flushed into int64 every
** K_I8_BLOCK elements, so no lane can overflow whatever n is (each level
** states its lane bound next to its K_I8_BLOCK).  The last n % KI_STEP
** elements go through one more step on zero-padded copies.
**
** Expected definitions:
**   KI_ACC              the accumulator vector type (int32 lanes)
**   KI_STEP             int8 elements consumed by one KI_DOT
**   KI_ZERO()           a zero accumulator
**   KI_DOT(acc, a, b)   acc plus the products of the KI_STEP int8 at a and b
**   KI_HSUM(acc)        the sum of acc's lanes (fits in int32 by the bound)
**   K_I8_BLOCK          a multiple of KI_STEP
*/

K_PRIM int64_t kp_dot_i8(const int8_t *a, const int8_t *b, size_t n) {
  int64_t total = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    KI_ACC s = KI_ZERO();
    for (; i + KI_STEP <= end; i += KI_STEP) s = KI_DOT(s, a + i, b + i);
    if (i < end) {
      int8_t ta[KI_STEP] = {0}, tb[KI_STEP] = {0};
      memcpy(ta, a + i, end - i);
      memcpy(tb, b + i, end - i);
      s = KI_DOT(s, ta, tb);
      i = end;
    }
    total += KI_HSUM(s);
  }
  return total;
}

K_PRIM int64_t kp_dotnorm_i8(const int8_t *q, const int8_t *r, size_t n,
                             int64_t *rr) {
  int64_t total = 0, norm = 0;
  size_t i = 0;
  while (i < n) {
    size_t end = n - i > K_I8_BLOCK ? i + K_I8_BLOCK : n;
    KI_ACC s = KI_ZERO(), t = s;
    for (; i + KI_STEP <= end; i += KI_STEP) {
      s = KI_DOT(s, q + i, r + i);
      t = KI_DOT(t, r + i, r + i);
    }
    if (i < end) {
      int8_t tq[KI_STEP] = {0}, tr[KI_STEP] = {0};
      memcpy(tq, q + i, end - i);
      memcpy(tr, r + i, end - i);
      s = KI_DOT(s, tq, tr);
      t = KI_DOT(t, tr, tr);
      i = end;
    }
    total += KI_HSUM(s);
    norm += KI_HSUM(t);
  }
  *rr = norm;
  return total;
}
