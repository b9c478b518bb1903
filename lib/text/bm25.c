/*
** lib/text/bm25.c - segments and images of the text index (bm25.h).
**
** Image (little-endian, util/le.h; read in place, every field through the
** util_get_le* helpers, so any host byte order reads it):
**
**   0    "H5MTXT1\0"                 8 bytes
**   8    uint32 version (1)          12  uint32 flags (tokenizer settings)
**   16   uint64 rows                 24  uint64 nterms
**   32   uint64 documents with text  40  uint64 tokens in them
**   48   uint64 lens offset          56  uint64 dict offset
**   64   uint64 terms offset         72  uint64 terms bytes
**   80   uint64 postings offset      88  uint64 postings bytes
**   96   uint64 image bytes          104 uint64 XXH64 of bytes 128..end, seed 0
**   112  16 bytes of zeros
**   128  lens: rows x uint32, each document's tokens (0xffffffff: no text)
**        dict: nterms entries of 32 bytes, in increasing byte order of the
**        terms: uint64 postings offset (in the postings), uint32 postings
**        bytes, uint32 documents, uint32 last document, uint32 term offset
**        (in the terms), uint32 term bytes, uint32 0
**        terms: the terms' bytes one after another
**        postings: per term, per document: LEB128 varints of the gap to the
**        previous document (the first: the document itself) and of the
**        term's count in it
**
** Each section starts on 8 bytes.  Opening checks the checksum and that
** every section lies inside the image; each dict entry is checked again
** when used, and a posting walk stops at its bytes' end, so a damaged image
** (that passed the checksum) can give wrong answers but never a read
** outside it.
**
** A segment: an open-addressing hash table of its terms (XXH64 of the
** bytes), each with a growable array of (doc - base, tf) pairs; documents
** come in increasing order, so a term already seen in the current document
** is the last pair of its array.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "bm25.h"
#include "util/le.h"

#define HDR 128
#define MAGIC "H5MTXT1"

/* ---- segments ---------------------------------------------------------- */

typedef struct sterm {
  uint64_t hash;
  uint32_t off, len; /* in the segment's term bytes */
  uint32_t *pairs;   /* (doc - base, tf) */
  uint64_t n, cap;   /* pairs */
} sterm;

struct bm25_seg {
  uint64_t base, end;
  sterm *t;           /* the table (cap slots, a slot empty when pairs NULL) */
  uint64_t nt, cap;
  char *bytes;        /* the terms */
  size_t nbytes, capbytes;
  uint32_t *lens;     /* per document */
  uint64_t caplens;
};

int bm25_seg_new(uint64_t base, bm25_seg **out) {
  bm25_seg *g = calloc(1, sizeof *g);
  if (!g) return BM25_ENOMEM;
  g->base = g->end = base;
  g->cap = 1024;
  g->t = calloc(g->cap, sizeof *g->t);
  if (!g->t) {
    free(g);
    return BM25_ENOMEM;
  }
  *out = g;
  return BM25_OK;
}

void bm25_seg_free(bm25_seg *g) {
  if (!g) return;
  for (uint64_t i = 0; i < g->cap; i++) free(g->t[i].pairs);
  free(g->t);
  free(g->bytes);
  free(g->lens);
  free(g);
}

uint64_t bm25_seg_end(const bm25_seg *g) { return g->end; }

uint32_t bm25_seg_len(const bm25_seg *g, uint64_t doc) {
  return doc >= g->base && doc < g->end ? g->lens[doc - g->base] : BM25_NOTEXT;
}

static sterm *seg_slot(const bm25_seg *g, const char *tok, size_t n, uint64_t h) {
  uint64_t mask = g->cap - 1;
  for (uint64_t i = h & mask;; i = (i + 1) & mask) {
    sterm *t = &g->t[i];
    if (!t->pairs || (t->hash == h && t->len == n && !memcmp(g->bytes + t->off, tok, n))) return t;
  }
}

static int seg_grow(bm25_seg *g) {
  uint64_t ncap = g->cap * 2;
  sterm *nt = calloc(ncap, sizeof *nt), *old = g->t;
  if (!nt) return BM25_ENOMEM;
  uint64_t ocap = g->cap;
  g->t = nt;
  g->cap = ncap;
  for (uint64_t i = 0; i < ocap; i++) {
    if (!old[i].pairs) continue;
    uint64_t j = old[i].hash & (ncap - 1);
    while (nt[j].pairs) j = (j + 1) & (ncap - 1);
    nt[j] = old[i];
  }
  free(old);
  return BM25_OK;
}

typedef struct add_ctx {
  bm25_seg *g;
  uint32_t doc; /* doc - base */
  uint64_t ntok;
  int rc;
} add_ctx;

static int add_tok(void *ctx, const char *tok, size_t n, size_t start, size_t end) {
  (void)start;
  (void)end;
  add_ctx *a = ctx;
  bm25_seg *g = a->g;
  if (n > UINT32_MAX) return a->rc = BM25_ETOOBIG;
  a->ntok++;
  uint64_t h = XXH64(tok, n, 0);
  sterm *t = seg_slot(g, tok, n, h);
  if (t->pairs) {
    if (t->pairs[2 * (t->n - 1)] == a->doc) {
      t->pairs[2 * (t->n - 1) + 1]++;
      return 0;
    }
  } else {
    if ((g->nt + 1) * 4 > g->cap * 3) { /* keep the table under 3/4 full */
      if ((a->rc = seg_grow(g))) return a->rc;
      t = seg_slot(g, tok, n, h);
    }
    if (g->nbytes + n > UINT32_MAX) return a->rc = BM25_ETOOBIG;
    if (g->nbytes + n > g->capbytes) {
      size_t nc = g->capbytes ? g->capbytes * 2 : 4096;
      while (nc < g->nbytes + n) nc *= 2;
      char *nb = realloc(g->bytes, nc);
      if (!nb) return a->rc = BM25_ENOMEM;
      g->bytes = nb;
      g->capbytes = nc;
    }
    uint32_t *p = malloc(4 * sizeof *p);
    if (!p) return a->rc = BM25_ENOMEM;
    memcpy(g->bytes + g->nbytes, tok, n);
    t->hash = h;
    t->off = (uint32_t)g->nbytes;
    t->len = (uint32_t)n;
    t->pairs = p;
    t->n = 0;
    t->cap = 2;
    g->nbytes += n;
    g->nt++;
  }
  if (t->n == t->cap) {
    uint32_t *p = realloc(t->pairs, t->cap * 4 * sizeof *p);
    if (!p) return a->rc = BM25_ENOMEM;
    t->pairs = p;
    t->cap *= 2;
  }
  t->pairs[2 * t->n] = a->doc;
  t->pairs[2 * t->n + 1] = 1;
  t->n++;
  return 0;
}

int bm25_seg_add(bm25_seg *g, const text_tok_opts *o, const char *text, size_t n) {
  uint64_t d = g->end - g->base;
  if (g->end >= UINT32_MAX || d >= UINT32_MAX) return BM25_ETOOBIG;
  if (d == g->caplens) {
    uint64_t nc = g->caplens ? g->caplens * 2 : 256;
    uint32_t *nl = realloc(g->lens, nc * sizeof *nl);
    if (!nl) return BM25_ENOMEM;
    g->lens = nl;
    g->caplens = nc;
  }
  add_ctx a = {g, (uint32_t)d, 0, BM25_OK};
  if (text) {
    int rc = text_tokenize(o, text, n, add_tok, &a);
    if (a.rc) rc = a.rc;
    if (rc) { /* take back what this document added */
      for (uint64_t i = 0; i < g->cap; i++) {
        sterm *t = &g->t[i];
        if (t->pairs && t->n && t->pairs[2 * (t->n - 1)] == a.doc) t->n--;
      }
      return rc; /* (TEXT_ENOMEM is BM25_ENOMEM: one error space) */
    }
  }
  g->lens[d] = !text ? BM25_NOTEXT : a.ntok >= BM25_NOTEXT ? BM25_NOTEXT - 1 : (uint32_t)a.ntok;
  g->end++;
  return BM25_OK;
}

uint64_t bm25_seg_term(const bm25_seg *g, const char *tok, size_t n, bm25_cur *c) {
  memset(c, 0, sizeof *c);
  if (!g) return 0;
  sterm *t = seg_slot(g, tok, n, XXH64(tok, n, 0));
  if (!t->pairs) return 0;
  c->pairs = t->pairs;
  c->n = t->n;
  c->base = g->base;
  return t->n;
}

/* ---- images ------------------------------------------------------------ */

struct bm25_img {
  const uint8_t *p;
  size_t len;
  uint64_t rows, nterms;
  uint32_t flags;
  const uint8_t *lens, *dict, *terms, *post;
  uint64_t nterm_bytes, npost;
};

static int bad(char *why, size_t n, const char *msg) {
  if (why && n) {
    strncpy(why, msg, n - 1);
    why[n - 1] = 0;
  }
  return BM25_ECORRUPT;
}

/* Whether [off, off + n) lies in [HDR, len) and off is on 8 bytes. */
static int section_ok(uint64_t off, uint64_t n, uint64_t len) {
  return off >= HDR && off % 8 == 0 && off <= len && n <= len - off;
}

int bm25_img_open(const void *p, size_t len, bm25_img **out, char *why, size_t whylen) {
  *out = NULL;
  const uint8_t *b = p;
  if (len < HDR || memcmp(b, MAGIC, 8)) return bad(why, whylen, "not a text index image");
  if (util_get_le32(b + 8) != 1) return bad(why, whylen, "unknown text index version");
  uint64_t rows = util_get_le64(b + 16), nterms = util_get_le64(b + 24), total = util_get_le64(b + 96);
  uint64_t lo = util_get_le64(b + 48), dofs = util_get_le64(b + 56), to = util_get_le64(b + 64), tn = util_get_le64(b + 72);
  uint64_t po = util_get_le64(b + 80), pn = util_get_le64(b + 88);
  if (total != len) return bad(why, whylen, "the image's length is wrong");
  if (rows > UINT32_MAX || nterms > UINT32_MAX || !section_ok(lo, rows * 4, len) ||
      !section_ok(dofs, nterms * 32, len) || !section_ok(to, tn, len) || !section_ok(po, pn, len))
    return bad(why, whylen, "a section lies outside the image");
  if (XXH64(b + HDR, len - HDR, 0) != util_get_le64(b + 104))
    return bad(why, whylen, "checksum mismatch");
  bm25_img *m = calloc(1, sizeof *m);
  if (!m) return BM25_ENOMEM;
  m->p = b;
  m->len = len;
  m->rows = rows;
  m->nterms = nterms;
  m->flags = util_get_le32(b + 12);
  m->lens = b + lo;
  m->dict = b + dofs;
  m->terms = b + to;
  m->nterm_bytes = tn;
  m->post = b + po;
  m->npost = pn;
  *out = m;
  return BM25_OK;
}

void bm25_img_free(bm25_img *m) { free(m); }
uint64_t bm25_img_rows(const bm25_img *m) { return m ? m->rows : 0; }
uint64_t bm25_img_terms(const bm25_img *m) { return m ? m->nterms : 0; }
uint32_t bm25_img_flags(const bm25_img *m) { return m ? m->flags : 0; }
uint32_t bm25_img_len(const bm25_img *m, uint64_t doc) {
  return m && doc < m->rows ? util_get_le32(m->lens + 4 * doc) : BM25_NOTEXT;
}

/* Dict entry i's term, or NULL when the entry points outside the terms. */
static const uint8_t *img_term_at(const bm25_img *m, uint64_t i, uint32_t *n) {
  const uint8_t *e = m->dict + 32 * i;
  uint64_t off = util_get_le32(e + 20), len = util_get_le32(e + 24);
  if (off > m->nterm_bytes || len > m->nterm_bytes - off) return NULL;
  *n = (uint32_t)len;
  return m->terms + off;
}

static int term_cmp(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  return c ? c : na < nb ? -1 : na > nb;
}

/* Entry i as a cursor (0 when its postings lie outside the image). */
static uint64_t img_cursor(const bm25_img *m, uint64_t i, bm25_cur *c) {
  const uint8_t *e = m->dict + 32 * i;
  uint64_t off = util_get_le64(e), n = util_get_le32(e + 8), df = util_get_le32(e + 12);
  if (off > m->npost || n > m->npost - off) return 0;
  c->p = m->post + off;
  c->end = c->p + n;
  c->n = df;
  c->limit = m->rows;
  return df;
}

uint64_t bm25_img_term(const bm25_img *m, const char *tok, size_t n, bm25_cur *c) {
  memset(c, 0, sizeof *c);
  if (!m) return 0;
  uint64_t lo = 0, hi = m->nterms;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    uint32_t tn;
    const uint8_t *t = img_term_at(m, mid, &tn);
    if (!t) return 0;
    int r = term_cmp(t, tn, (const uint8_t *)tok, n);
    if (r == 0) return img_cursor(m, mid, c);
    if (r < 0) lo = mid + 1;
    else hi = mid;
  }
  return 0;
}

static int varint(const uint8_t **pp, const uint8_t *end, uint64_t *v) {
  const uint8_t *p = *pp;
  uint64_t x = 0;
  for (int s = 0; s < 64; s += 7) {
    if (p >= end) return 0;
    uint8_t b = *p++;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *pp = p;
      *v = x;
      return 1;
    }
  }
  return 0;
}

int bm25_next(bm25_cur *c) {
  if (c->pairs) {
    if (c->i >= c->n) return 0;
    c->doc = c->base + c->pairs[2 * c->i];
    c->tf = c->pairs[2 * c->i + 1];
    c->i++;
    return 1;
  }
  if (!c->p || c->i >= c->n) return 0;
  uint64_t gap, tf;
  if (!varint(&c->p, c->end, &gap) || !varint(&c->p, c->end, &tf) || tf == 0 || tf > UINT32_MAX ||
      (c->started && gap == 0) || gap >= c->limit || (c->started && c->doc >= c->limit - gap))
    return BM25_ECORRUPT;
  c->doc = c->started ? c->doc + gap : gap;
  c->tf = (uint32_t)tf;
  c->started = 1;
  c->i++;
  return 1;
}

/* ---- building an image --------------------------------------------------- */

typedef struct obuf {
  uint8_t *b;
  size_t n, cap;
} obuf;

static int ob_room(obuf *o, size_t need) {
  if (o->n + need <= o->cap) return 0;
  size_t nc = o->cap ? o->cap * 2 : 65536;
  while (nc < o->n + need) nc *= 2;
  uint8_t *nb = realloc(o->b, nc);
  if (!nb) return -1;
  o->b = nb;
  o->cap = nc;
  return 0;
}

static void ob_varint(obuf *o, uint64_t v) {
  while (v >= 0x80) {
    o->b[o->n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  o->b[o->n++] = (uint8_t)v;
}

typedef struct sref {
  const uint8_t *b; /* the term's bytes */
  const sterm *t;
} sref;

static int cmp_sref(const void *a, const void *b) {
  const sref *x = a, *y = b;
  return term_cmp(x->b, x->t->len, y->b, y->t->len);
}

typedef struct dent {
  uint64_t off;
  uint32_t n, df, last, toff, tlen;
} dent;

int bm25_img_build(const bm25_img *old, const bm25_seg *g, uint64_t rows, uint32_t flags,
                   uint8_t **out, size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  uint64_t orows = old ? old->rows : 0;
  if (rows > UINT32_MAX) return BM25_ETOOBIG;
  if ((g && (g->base != orows || g->end != rows)) || (!g && rows != orows)) return BM25_ECORRUPT;
  uint64_t ns = g ? g->nt : 0, no = old ? old->nterms : 0;
  sref *st = malloc((ns ? ns : 1) * sizeof *st);
  dent *d = malloc((ns + no ? ns + no : 1) * sizeof *d);
  obuf terms = {0}, post = {0};
  int rc = BM25_OK;
  if (!st || !d) {
    rc = BM25_ENOMEM;
    goto done;
  }
  uint64_t j = 0;
  for (uint64_t i = 0; g && i < g->cap; i++)
    if (g->t[i].pairs && g->t[i].n)
      st[j++] = (sref){(const uint8_t *)g->bytes + g->t[i].off, &g->t[i]};
  ns = j;
  if (ns) qsort(st, ns, sizeof *st, cmp_sref);
  uint64_t io = 0, is = 0, nd = 0;
  while (io < no || is < ns) {
    uint32_t otn = 0;
    const uint8_t *ot = io < no ? img_term_at(old, io, &otn) : NULL;
    if (io < no && !ot) {
      rc = BM25_ECORRUPT;
      goto done;
    }
    const sterm *s = is < ns ? st[is].t : NULL;
    int r = !ot ? 1 : !s ? -1 : term_cmp(ot, otn, (const uint8_t *)g->bytes + s->off, s->len);
    dent *e = &d[nd++];
    memset(e, 0, sizeof *e);
    const uint8_t *tb = ot;
    uint32_t tl = otn;
    if (!ot || r > 0) {
      tb = (const uint8_t *)g->bytes + s->off;
      tl = s->len;
    }
    if (ob_room(&terms, tl)) {
      rc = BM25_ENOMEM;
      goto done;
    }
    if (terms.n + tl > UINT32_MAX) {
      rc = BM25_ETOOBIG;
      goto done;
    }
    e->toff = (uint32_t)terms.n;
    e->tlen = tl;
    if (tl) memcpy(terms.b + terms.n, tb, tl);
    terms.n += tl;
    e->off = post.n;
    uint64_t prev = 0;
    int started = 0;
    if (ot && r <= 0) { /* the old postings as they are */
      const uint8_t *oe = old->dict + 32 * io;
      uint64_t poff = util_get_le64(oe), pn = util_get_le32(oe + 8);
      if (poff > old->npost || pn > old->npost - poff) {
        rc = BM25_ECORRUPT;
        goto done;
      }
      if (ob_room(&post, pn)) {
        rc = BM25_ENOMEM;
        goto done;
      }
      if (pn) memcpy(post.b + post.n, old->post + poff, pn);
      post.n += pn;
      e->df = util_get_le32(oe + 12);
      e->last = util_get_le32(oe + 16);
      prev = e->last;
      started = e->df > 0;
      io++;
    }
    if (s && (!ot || r >= 0)) { /* then the segment's */
      if (ob_room(&post, s->n * 20)) {
        rc = BM25_ENOMEM;
        goto done;
      }
      for (uint64_t k = 0; k < s->n; k++) {
        uint64_t doc = g->base + s->pairs[2 * k];
        ob_varint(&post, started ? doc - prev : doc);
        ob_varint(&post, s->pairs[2 * k + 1]);
        prev = doc;
        started = 1;
      }
      if ((uint64_t)e->df + s->n > UINT32_MAX) {
        rc = BM25_ETOOBIG;
        goto done;
      }
      e->df += (uint32_t)s->n;
      e->last = (uint32_t)prev;
      is++;
    }
    if (post.n - e->off > UINT32_MAX) {
      rc = BM25_ETOOBIG;
      goto done;
    }
    e->n = (uint32_t)(post.n - e->off);
  }
  /* the layout */
  uint64_t ndocs = 0, ntok = 0;
  uint64_t lo = HDR, dofs = (lo + rows * 4 + 7) / 8 * 8, to = dofs + nd * 32;
  uint64_t po = (to + terms.n + 7) / 8 * 8, total = (po + post.n + 7) / 8 * 8;
  uint8_t *img = calloc(1, total);
  if (!img) {
    rc = BM25_ENOMEM;
    goto done;
  }
  for (uint64_t r = 0; r < rows; r++) {
    uint32_t l = r < orows ? bm25_img_len(old, r) : bm25_seg_len(g, r);
    util_put_le32(img + lo + 4 * r, l);
    if (l != BM25_NOTEXT) {
      ndocs++;
      ntok += l;
    }
  }
  for (uint64_t i = 0; i < nd; i++) {
    uint8_t *e = img + dofs + 32 * i;
    util_put_le64(e, d[i].off);
    util_put_le32(e + 8, d[i].n);
    util_put_le32(e + 12, d[i].df);
    util_put_le32(e + 16, d[i].last);
    util_put_le32(e + 20, d[i].toff);
    util_put_le32(e + 24, d[i].tlen);
  }
  if (terms.n) memcpy(img + to, terms.b, terms.n);
  if (post.n) memcpy(img + po, post.b, post.n);
  memcpy(img, MAGIC, 8);
  util_put_le32(img + 8, 1);
  util_put_le32(img + 12, flags);
  util_put_le64(img + 16, rows);
  util_put_le64(img + 24, nd);
  util_put_le64(img + 32, ndocs);
  util_put_le64(img + 40, ntok);
  util_put_le64(img + 48, lo);
  util_put_le64(img + 56, dofs);
  util_put_le64(img + 64, to);
  util_put_le64(img + 72, terms.n);
  util_put_le64(img + 80, po);
  util_put_le64(img + 88, post.n);
  util_put_le64(img + 96, total);
  util_put_le64(img + 104, XXH64(img + HDR, total - HDR, 0));
  *out = img;
  *outlen = total;
done:
  free(st);
  free(d);
  free(terms.b);
  free(post.b);
  return rc;
}
