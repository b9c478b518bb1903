/*
** lib/graph/resolve.c - name resolution (kg_resolve) and the bounded
** Levenshtein distance (kg_levenshtein) of graph.h.
**
** Matching, strongest first:
**   KG_MATCH_EXACT  the name's bytes equal q's (alias 0);
**   KG_MATCH_ALIAS  an alias's bytes equal q's (alias != 0);
**   KG_MATCH_CASE   equal once both are decoded and case-folded;
**   KG_MATCH_EDIT   within max_edits Levenshtein edits of the folded code
**                   points (1 .. max_edits: 0 edits is KG_MATCH_CASE).
** Folding is case only: Unicode simple case folding as unicode61 does it
** (text_uc_fold(c, 0): the BMP and Deseret, Unicode 6.1 tables), so
** "ÉCOLE" ~ "école", "ΟΔΥΣΣΕΥΣ" ~ "οδυσσευς" (final sigma folds to σ),
** "МОСКВА" ~ "москва"; but diacritics are kept ("ecole" is one edit from
** "école"), nothing is normalized (a precomposed é and e + U+0301
** differ) and no fold changes the length (ß stays ß, not "ss").
**
** Decoding: well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or
** values above U+10FFFF) gives its code point; any other byte is one
** U+FFFD on its own and decoding resumes at the next byte.  Two names
** invalid in different bytes can therefore match case-insensitively; the
** exact kinds compare bytes and never confuse them.
*/
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "text/unicode.h"

/* ---- UTF-8 ------------------------------------------------------------- */

/* Decodes the character at z[i] (i < n) into *c; returns the index after
** it.  Never reads z[n] or beyond. */
static size_t utf8_next(const unsigned char *z, size_t n, size_t i, uint32_t *c) {
  unsigned b = z[i];
  if (b < 0x80) {
    *c = b;
    return i + 1;
  }
  size_t len;
  unsigned lo = 0x80, hi = 0xBF; /* the range of the second byte */
  uint32_t v;
  if (b >= 0xC2 && b <= 0xDF) {
    len = 2;
    v = b & 0x1F;
  } else if (b >= 0xE0 && b <= 0xEF) {
    len = 3;
    v = b & 0x0F;
    if (b == 0xE0) lo = 0xA0;      /* overlong */
    else if (b == 0xED) hi = 0x9F; /* surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    len = 4;
    v = b & 0x07;
    if (b == 0xF0) lo = 0x90;      /* overlong */
    else if (b == 0xF4) hi = 0x8F; /* above U+10FFFF */
  } else {
    *c = 0xFFFD;
    return i + 1;
  }
  if (n - i < len) {
    *c = 0xFFFD;
    return i + 1;
  }
  for (size_t k = 1; k < len; k++) {
    unsigned x = z[i + k];
    if (x < (k == 1 ? lo : 0x80) || x > (k == 1 ? hi : 0xBF)) {
      *c = 0xFFFD;
      return i + 1;
    }
    v = (v << 6) | (x & 0x3F);
  }
  *c = v;
  return i + len;
}

/* The n bytes at s decoded and case-folded into out (room for n code
** points: never more than the bytes); returns how many. */
static size_t fold_utf8(const char *s, size_t n, uint32_t *out) {
  const unsigned char *z = (const unsigned char *)s;
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    uint32_t c;
    i = utf8_next(z, n, i, &c);
    out[k++] = text_uc_fold(c, 0);
  }
  return k;
}

/* ---- Levenshtein ------------------------------------------------------- */

/* The distance, or max + 1 when above max, with na >= nb, na - nb <= max,
** 0 <= max <= na, max < INT_MAX - 1, and band holding 2 * max + 1 ints.
** Ukkonen's band: only the cells with |i - j| <= max can be <= max; band[k]
** holds row i's cell j = i + k - max, updated in place (cell k of the row
** above is its diagonal, k + 1 the one above it, k - 1 of this row the one
** to its left).  Cells outside the matrix or above max count as max + 1,
** and the search stops once a whole row is above max. */
static int lev_band(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, int max,
                    int *band) {
  const int big = max + 1;
  const size_t m = (size_t)max, w = 2 * m + 1;
  for (size_t k = 0; k < w; k++) band[k] = k < m || k - m > nb ? big : (int)(k - m);
  for (size_t i = 1; i <= na; i++) {
    int left = big, rowmin = big;
    for (size_t k = 0; k < w; k++) {
      int v;
      if (i + k < m || i + k - m > nb) {
        v = big; /* j < 0 or j > nb */
      } else if (i + k == m) {
        v = i < (size_t)big ? (int)i : big; /* j == 0 */
      } else {
        size_t j = i + k - m;
        int up = k + 1 < w ? band[k + 1] : big;
        v = band[k] + (a[i - 1] != b[j - 1]);
        if (up + 1 < v) v = up + 1;
        if (left + 1 < v) v = left + 1;
        if (v > big) v = big;
      }
      band[k] = v;
      left = v;
      if (v < rowmin) rowmin = v;
    }
    if (rowmin > max) return big;
  }
  return band[nb + m - na];
}

/* Drops the common prefix and suffix of a and b (they do not change the
** distance) and swaps them so that a is the longer; returns its length. */
static size_t lev_trim(const uint32_t **a, size_t *na, const uint32_t **b, size_t *nb) {
  size_t p = 0;
  while (p < *na && p < *nb && (*a)[p] == (*b)[p]) p++;
  *a += p;
  *b += p;
  *na -= p;
  *nb -= p;
  while (*na && *nb && (*a)[*na - 1] == (*b)[*nb - 1]) {
    (*na)--;
    (*nb)--;
  }
  if (*na < *nb) {
    const uint32_t *t = *a;
    size_t tn = *na;
    *a = *b;
    *na = *nb;
    *b = t;
    *nb = tn;
  }
  return *na;
}

/* The distance of a and b, or max + 1 when above max (>= 0).  band: cap
** ints from the caller; when the band needs more (2 * min(max, longer) + 1
** after trimming), *need gets that count and nothing is computed. */
static int lev_bounded(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, int max,
                       int *band, size_t cap, size_t *need) {
  *need = 0;
  size_t longer = lev_trim(&a, &na, &b, &nb);
  int m = max > INT_MAX - 2 ? INT_MAX - 2 : max;
  if (na - nb > (size_t)m) return max + (max < INT_MAX);
  if (nb == 0) return (int)na; /* na <= m */
  if ((size_t)m > longer) m = (int)longer;
  size_t w = 2 * (size_t)m + 1;
  if (w > cap) {
    *need = w;
    return 0;
  }
  int d = lev_band(a, na, b, nb, m, band);
  return d > m ? max + (max < INT_MAX) : d;
}

/* Bounded work: O(min(na, nb) * max) time, a band of 2 * max + 1 ints (on
** the stack up to max 127).  max < 0 is taken as 0; should memory for a
** wider band not be had, the answer is max + 1 (never a false match). */
int kg_levenshtein(const uint32_t *a, size_t na, const uint32_t *b, size_t nb, int max) {
  if (max < 0) max = 0;
  if ((!a && na) || (!b && nb)) return max + (max < INT_MAX);
  int stack[255], *band = stack;
  size_t need;
  int d = lev_bounded(a, na, b, nb, max, stack, sizeof stack / sizeof stack[0], &need);
  if (!need) return d;
  band = malloc(need * sizeof *band);
  if (!band) return max + (max < INT_MAX);
  d = lev_bounded(a, na, b, nb, max, band, need, &need);
  free(band);
  return d;
}

/* ---- resolution -------------------------------------------------------- */

static int match_by_id(const void *pa, const void *pb) {
  const kg_match *a = pa, *b = pb;
  if (a->id != b->id) return a->id < b->id ? -1 : 1;
  if (a->kind != b->kind) return a->kind - b->kind;
  return (a->edits > b->edits) - (a->edits < b->edits);
}

static int match_by_rank(const void *pa, const void *pb) {
  const kg_match *a = pa, *b = pb;
  if (a->kind != b->kind) return a->kind - b->kind;
  if (a->edits != b->edits) return a->edits - b->edits;
  return (a->id > b->id) - (a->id < b->id);
}

/* Grows *p (of *cap elements of size sz) to hold need; KG_ENOMEM. */
static int grow(void **p, size_t *cap, size_t need, size_t sz) {
  if (need <= *cap) return KG_OK;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
  if (ncap > SIZE_MAX / sz) return KG_ENOMEM;
  void *q = realloc(*p, ncap * sz);
  if (!q) return KG_ENOMEM;
  *p = q;
  *cap = ncap;
  return KG_OK;
}

/* How q matches one name: a KG_MATCH_* kind and its edits, or -1.  fq/nq:
** q folded; buf/band: the call's growable buffers. */
static int match_one(const kg_name *nm, const char *q, size_t qn, const uint32_t *fq, size_t nq,
                     int max_edits, uint32_t **buf, size_t *bufcap, int **band, size_t *bandcap,
                     int *edits) {
  *edits = 0;
  if (nm->n == qn && (qn == 0 || !memcmp(nm->s, q, qn)))
    return nm->alias ? KG_MATCH_ALIAS : KG_MATCH_EXACT;
  /* a name of n bytes has n/4 .. n code points: too short or too long? */
  size_t lo = (nm->n + 3) / 4, hi = nm->n, me = (size_t)max_edits;
  if (hi + me < nq || lo > nq + me) return -1;
  if (grow((void **)buf, bufcap, nm->n ? nm->n : 1, sizeof **buf)) return KG_ENOMEM;
  size_t nn = fold_utf8(nm->s, nm->n, *buf);
  if (nn == nq && (nq == 0 || !memcmp(*buf, fq, nq * sizeof *fq))) return KG_MATCH_CASE;
  if (max_edits == 0) return -1;
  size_t need;
  int d = lev_bounded(fq, nq, *buf, nn, max_edits, *band, *bandcap, &need);
  if (need) {
    if (grow((void **)band, bandcap, need, sizeof **band)) return KG_ENOMEM;
    d = lev_bounded(fq, nq, *buf, nn, max_edits, *band, *bandcap, &need);
  }
  if (d > max_edits) return -1;
  *edits = d;
  return KG_MATCH_EDIT;
}

/* Every name is tried (a name's kind is known only once it is compared),
** the matches gathered, then sorted by entity to keep each one's best,
** then by rank.  names[i].s NULL with n > 0, q NULL with qn > 0 or
** max_edits < 0: KG_EINVAL.  No match: *out NULL, *nout 0. */
int kg_resolve(const kg_name *names, size_t nnames, const char *q, size_t qn, int max_edits,
               kg_match **out, size_t *nout) {
  if (!out || !nout) return KG_EINVAL;
  *out = NULL;
  *nout = 0;
  if ((!names && nnames) || (!q && qn) || max_edits < 0) return KG_EINVAL;
  for (size_t i = 0; i < nnames; i++)
    if (!names[i].s && names[i].n) return KG_EINVAL;
  int rc = KG_OK;
  uint32_t *fq = malloc((qn ? qn : 1) * sizeof *fq), *buf = NULL;
  int *band = NULL;
  kg_match *m = NULL;
  size_t nq = 0, bufcap = 0, bandcap = 0, nm = 0, mcap = 0;
  if (!fq) return KG_ENOMEM;
  nq = fold_utf8(q, qn, fq);
  for (size_t i = 0; i < nnames && rc == KG_OK; i++) {
    int edits, kind = match_one(&names[i], q, qn, fq, nq, max_edits, &buf, &bufcap, &band,
                                &bandcap, &edits);
    if (kind == KG_ENOMEM) rc = KG_ENOMEM;
    else if (kind >= 0 && (rc = grow((void **)&m, &mcap, nm + 1, sizeof *m)) == KG_OK)
      m[nm++] = (kg_match){names[i].id, kind, edits};
  }
  free(fq);
  free(buf);
  free(band);
  if (rc != KG_OK) {
    free(m);
    return rc;
  }
  if (nm > 1) {
    qsort(m, nm, sizeof *m, match_by_id);
    size_t k = 0;
    for (size_t i = 0; i < nm; i++)
      if (k == 0 || m[k - 1].id != m[i].id) m[k++] = m[i];
    nm = k;
    qsort(m, nm, sizeof *m, match_by_rank);
  }
  *out = m;
  *nout = nm;
  return KG_OK;
}
