/*
** lib/store/store_text.c - the store's text index and store_bm25
** (store_int.h; docs/FORMAT.md, "The text index").
**
** On disk (store_int.h): images under kind "text", each save's row holding
** the base rows the image covers.  The image is checked (checksum,
** sections) the first time a search or a save needs it, not when the store
** opens, so opening reads none of it.
**
** Scoring is FTS5's bm25() with k1 = 1.2 and b = 0.75, term by term in the
** order the terms first appear in the query, added up per record in a
** scratch array of scores indexed by position; the statistics count the
** live records with text (NULL text is no document; "" is one of length 0).
*/
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"
#include "text/bm25.h"

#define SAVE_MIN_ROWS 256 /* as the vector index (store_index.c) */
#define SAVE_TAIL_SHARE 8
#define BM25_K1 1.2
#define BM25_B 0.75

struct tindex {
  store *s;
  text_tok_opts o;
  uint32_t flags;     /* of the tokenizer, as kept in an image */
  simage im;          /* the last saved image (im.p NULL: none) */
  int checked;        /* im has been checked (img set when it is sound) */
  bm25_img *img;
  uint64_t rows;      /* base rows img covers */
  bm25_seg *seg;      /* positions [rows, ...) tokenized in memory */
  uint64_t seg_reuses;
  /* the statistics, as of (st_changes, st_npos) */
  int st_valid;
  uint64_t st_changes, st_npos, ndocs, ntok;
  /* scratch of a search */
  double *acc;
  uint64_t acccap;
  uint64_t *touched;
  uint64_t ntouched, captouched;
  char note[256];
};

/* ---- settings ---------------------------------------------------------- */

int store_tokenize_parse(const char *spec, int *porter, int *rd, char *norm, char *err,
                         size_t errlen) {
  *porter = 0;
  *rd = 1;
  if (!spec) spec = "unicode61";
  char w[4][24];
  int nw = 0;
  const char *p = spec;
  while (*p) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    const char *q = p;
    while (*q && *q != ' ' && *q != '\t') q++;
    if (nw == 4 || (size_t)(q - p) >= sizeof w[0]) {
      snprintf(err, errlen, "tokenize: '%s' is not understood (expected e.g. 'unicode61', "
               "'porter unicode61', 'unicode61 remove_diacritics 2')", spec);
      return STORE_EINVAL;
    }
    memcpy(w[nw], p, (size_t)(q - p));
    w[nw][q - p] = 0;
    nw++;
    p = q;
  }
  int i = 0;
  if (i < nw && !strcmp(w[i], "porter")) {
    *porter = 1;
    i++;
  }
  int ok = 1;
  if (i < nw && !strcmp(w[i], "unicode61")) i++;
  else if (!*porter || i < nw) ok = 0; /* "porter" alone wraps unicode61 as FTS5's does */
  if (ok && i < nw) {
    if (i + 2 == nw && !strcmp(w[i], "remove_diacritics") && w[i + 1][1] == 0 &&
        w[i + 1][0] >= '0' && w[i + 1][0] <= '2')
      *rd = w[i + 1][0] - '0';
    else
      ok = 0;
  }
  if (!ok) {
    snprintf(err, errlen, "tokenize: '%s' is not understood (expected 'unicode61' or 'porter "
             "unicode61', optionally followed by 'remove_diacritics 0', '1' or '2')", spec);
    return STORE_EINVAL;
  }
  snprintf(norm, 64, "%sunicode61 remove_diacritics %d", *porter ? "porter " : "", *rd);
  return STORE_OK;
}

int tindex_cfg_read(h5_file *f, h5_obj *root, text_tok_opts *o, char *err, size_t errlen) {
  char spec[128], norm[64];
  int has = store_attr_str(f, root, "tokenize", spec, sizeof spec);
  if (has < 0) {
    snprintf(err, errlen, "the tokenize attribute is not a short string");
    return STORE_ECORRUPT;
  }
  int porter, rd;
  /* (a spec the store wrote itself: not understood means damaged) */
  if (store_tokenize_parse(has ? spec : NULL, &porter, &rd, norm, err, errlen)) return STORE_ECORRUPT;
  memset(o, 0, sizeof *o);
  o->porter = porter;
  o->remove_diacritics = rd;
  return STORE_OK;
}

int tindex_cfg_write(h5w *w, h5w_obj *root, const text_tok_opts *o) {
  char norm[64];
  snprintf(norm, sizeof norm, "%sunicode61 remove_diacritics %d", o->porter ? "porter " : "",
           o->remove_diacritics);
  const char *v = norm;
  uint8_t slot[16] = {0}; /* a variable-length string, as the other attributes */
  memcpy(slot, &v, sizeof v);
  return h5w_attr(w, root, "tokenize", h5_type_new_string(0, 1), 0, NULL, slot);
}

/* ---- loading ----------------------------------------------------------- */

int tindex_load(store *s, h5_file *f, const text_tok_opts *o, uint64_t nbase, tindex **out) {
  *out = NULL;
  tindex *x = calloc(1, sizeof *x);
  if (!x) return STORE_ENOMEM;
  x->s = s;
  x->o = *o;
  x->flags = (uint32_t)(o->porter ? 1 : 0) | (uint32_t)o->remove_diacritics << 8;
  const char *why = "an ephemeral store keeps no saved index";
  int rc = f ? simage_load(f, "text", &x->im, &why) : STORE_ENOTFOUND;
  if (rc == STORE_ENOMEM) {
    free(x);
    return rc;
  }
  if (rc != STORE_OK) {
    snprintf(x->note, sizeof x->note, "%s", why);
    memset(&x->im, 0, sizeof x->im);
  } else if ((uint64_t)x->im.row[2] > nbase) {
    snprintf(x->note, sizeof x->note, "the saved text index covers more rows than the store has");
    free(x->im.copy);
    memset(&x->im, 0, sizeof x->im);
  }
  *out = x;
  return STORE_OK;
}

void tindex_free(tindex *x) {
  if (!x) return;
  bm25_img_free(x->img);
  bm25_seg_free(x->seg);
  free(x->im.copy);
  free(x->acc);
  free(x->touched);
  free(x);
}

/* Check the saved image the first time it is needed. */
static int check_image(tindex *x) {
  if (x->checked) return STORE_OK;
  x->checked = 1;
  if (!x->im.p) return STORE_OK;
  char why[128] = "";
  int rc = bm25_img_open(x->im.p, x->im.len, &x->img, why, sizeof why);
  if (rc == BM25_ENOMEM) {
    x->checked = 0;
    return STORE_ENOMEM;
  }
  if (rc == BM25_OK && (bm25_img_rows(x->img) != (uint64_t)x->im.row[2] ||
                        bm25_img_flags(x->img) != x->flags)) {
    snprintf(why, sizeof why, "its rows or tokenizer disagree with the store");
    bm25_img_free(x->img);
    x->img = NULL;
    rc = BM25_ECORRUPT;
  }
  if (rc != BM25_OK) {
    snprintf(x->note, sizeof x->note, "the saved text index is damaged (%s); its rows are "
             "tokenized in memory until the next checkpoint saves a new one", why);
    return STORE_OK;
  }
  x->rows = bm25_img_rows(x->img);
  return STORE_OK;
}

/* A failure of lib/text/bm25 as the store's: its code as it is (one error
** space: BM25_ETOOBIG is STORE_ETOOBIG), and a message. */
static int bm25_code(store *s, int rc) {
  return store_set_error(s, rc, rc == BM25_ENOMEM ? "out of memory"
                                : rc == BM25_ETOOBIG ? "text index: too many rows, terms or bytes"
                                                     : "text index: damaged");
}

/* Positions [from, to) into g. */
static int seg_fill(tindex *x, bm25_seg *g, uint64_t to) {
  for (uint64_t pos = bm25_seg_end(g); pos < to; pos++) {
    const char *t;
    size_t n;
    int rc = store_text_at(x->s, pos, &t, &n);
    if (rc) return rc;
    if ((rc = bm25_seg_add(g, &x->o, t, n))) return bm25_code(x->s, rc);
  }
  return STORE_OK;
}

/* The segment brought up to every position of the store. */
static int seg_update(tindex *x) {
  uint64_t npos = store_npos(x->s);
  if (x->seg && (x->seg_reuses != store_reuses(x->s) || bm25_seg_end(x->seg) > npos)) {
    bm25_seg_free(x->seg);
    x->seg = NULL;
  }
  if (!x->seg) {
    if (bm25_seg_new(x->rows, &x->seg)) return STORE_ENOMEM;
    x->seg_reuses = store_reuses(x->s);
    x->st_valid = 0;
  }
  return seg_fill(x, x->seg, npos);
}

static uint32_t doc_len(const tindex *x, uint64_t pos) {
  return pos < x->rows ? bm25_img_len(x->img, pos) : bm25_seg_len(x->seg, pos);
}

static void stats_update(tindex *x) {
  uint64_t npos = store_npos(x->s);
  if (x->st_valid && x->st_changes == store_changes(x->s) && x->st_npos == npos) return;
  uint64_t nd = 0, nt = 0;
  for (uint64_t pos = 0; pos < npos; pos++) {
    if (!store_pos_live(x->s, pos)) continue;
    uint32_t l = doc_len(x, pos);
    if (l == BM25_NOTEXT) continue;
    nd++;
    nt += l;
  }
  x->ndocs = nd;
  x->ntok = nt;
  x->st_valid = 1;
  x->st_changes = store_changes(x->s);
  x->st_npos = npos;
}

/* ---- saving ------------------------------------------------------------ */

int tindex_wants_save(const tindex *x, uint64_t nbase) {
  if (!x) return 0;
  uint64_t have = x->checked ? x->rows : x->im.p ? (uint64_t)x->im.row[2] : 0;
  if (nbase <= have) return 0;
  return nbase - have >= SAVE_MIN_ROWS && nbase - have >= have / SAVE_TAIL_SHARE;
}

int tindex_save(tindex *x, h5w *w, uint64_t nbase, char *err, size_t errlen) {
  int rc = check_image(x);
  bm25_seg *g = NULL;
  uint8_t *img = NULL;
  size_t len = 0;
  if (rc == STORE_OK && nbase > UINT32_MAX - 1)
    rc = store_set_error(x->s, STORE_ETOOBIG, "text index: at most 2^32 - 2 rows");
  if (rc == STORE_OK && bm25_seg_new(x->rows, &g)) rc = STORE_ENOMEM;
  if (rc == STORE_OK) rc = seg_fill(x, g, nbase);
  if (rc == STORE_OK) {
    int br = bm25_img_build(x->img, g, nbase, x->flags, &img, &len);
    if (br) rc = bm25_code(x->s, br);
  }
  bm25_seg_free(g);
  if (rc != STORE_OK) {
    snprintf(err, errlen, "%s", rc == STORE_ENOMEM ? "out of memory" : store_errmsg(x->s));
    return rc;
  }
  rc = simage_append(w, "text", img, len, (int64_t)nbase, 0, err, errlen);
  free(img);
  return rc;
}

/* ---- search ------------------------------------------------------------ */

typedef struct qterms {
  char *buf;
  size_t len, cap;
  size_t *off, *n;
  size_t nt, capt;
  int rc;
} qterms;

static int add_qterm(void *ctx, const char *tok, size_t n, size_t start, size_t end) {
  (void)start;
  (void)end;
  qterms *q = ctx;
  for (size_t i = 0; i < q->nt; i++)
    if (q->n[i] == n && !memcmp(q->buf + q->off[i], tok, n)) return 0; /* counted once */
  if (q->nt == q->capt) {
    size_t nc = q->capt ? q->capt * 2 : 8;
    size_t *no = realloc(q->off, nc * sizeof *no);
    if (no) q->off = no;
    size_t *nn = no ? realloc(q->n, nc * sizeof *nn) : NULL;
    if (nn) q->n = nn;
    if (!no || !nn) return q->rc = STORE_ENOMEM;
    q->capt = nc;
  }
  if (q->len + n > q->cap) {
    size_t nc = q->cap ? q->cap * 2 : 256;
    while (nc < q->len + n) nc *= 2;
    char *nb = realloc(q->buf, nc);
    if (!nb) return q->rc = STORE_ENOMEM;
    q->buf = nb;
    q->cap = nc;
  }
  memcpy(q->buf + q->len, tok, n);
  q->off[q->nt] = q->len;
  q->n[q->nt] = n;
  q->nt++;
  q->len += n;
  return 0;
}

typedef struct hitheap {
  store_hit *h;
  int64_t *id;
  uint64_t n, k;
} hitheap;

/* a ranks below b: lower score, or the same and a larger id */
static int below(const hitheap *hp, uint64_t a, uint64_t b) {
  return hp->h[a].score < hp->h[b].score ||
         (hp->h[a].score == hp->h[b].score && hp->id[a] > hp->id[b]);
}

static void swap_at(hitheap *hp, uint64_t a, uint64_t b) {
  store_hit t = hp->h[a];
  hp->h[a] = hp->h[b];
  hp->h[b] = t;
  int64_t i = hp->id[a];
  hp->id[a] = hp->id[b];
  hp->id[b] = i;
}

/* The root is the worst of the heap. */
static void sift_down(hitheap *hp, uint64_t i) {
  for (;;) {
    uint64_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < hp->n && below(hp, l, m)) m = l;
    if (r < hp->n && below(hp, r, m)) m = r;
    if (m == i) return;
    swap_at(hp, i, m);
    i = m;
  }
}

static void heap_offer(hitheap *hp, uint64_t pos, double score, int64_t id) {
  if (hp->n < hp->k) {
    uint64_t i = hp->n++;
    hp->h[i].pos = pos;
    hp->h[i].score = score;
    hp->id[i] = id;
    while (i > 0 && below(hp, i, (i - 1) / 2)) {
      swap_at(hp, i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
    return;
  }
  hp->h[0].pos = pos;
  hp->h[0].score = score;
  hp->id[0] = id;
  sift_down(hp, 0);
}

static int allowed(const store_filter *flt, uint64_t pos) {
  if (!flt) return 1;
  if (flt->bits) return flt->bits[pos / 8] >> (pos % 8) & 1;
  if (flt->fn) return flt->fn(flt->ctx, pos);
  return 1;
}

/* The query's distinct terms (q zeroed before; free its arrays after). */
static int query_terms(tindex *x, const char *query, size_t n, qterms *q) {
  int rc = text_tokenize(&x->o, query, n, add_qterm, q);
  if (q->rc) return q->rc;
  return rc ? STORE_ENOMEM : STORE_OK;
}

static void query_terms_free(qterms *q) {
  free(q->buf);
  free(q->off);
  free(q->n);
}

/* Term t of q: its posting lists (c[0] the image's, c[1] the segment's)
** and in *df the live records holding it (0: none). */
static int term_df(store *s, tindex *x, const qterms *q, size_t t, int no_dead, bm25_cur c[2], uint64_t *df) {
  *df = bm25_img_term(x->img, q->buf + q->off[t], q->n[t], &c[0]);
  *df += bm25_seg_term(x->seg, q->buf + q->off[t], q->n[t], &c[1]);
  if (!*df || no_dead) return STORE_OK;
  bm25_cur d[2] = {c[0], c[1]}; /* records holding the term that are live */
  *df = 0;
  for (int j = 0; j < 2; j++) {
    int r;
    while ((r = bm25_next(&d[j])) == 1) *df += store_pos_live(s, d[j].doc);
    if (r < 0) return STORE_ECORRUPT;
  }
  return STORE_OK;
}

/* The index checked and brought up to date, its statistics counted. */
static int tindex_ready(store *s, tindex *x) {
  int rc = check_image(x);
  if (rc == STORE_OK) rc = seg_update(x);
  if (rc == STORE_ENOMEM) return store_set_error(s, rc, "out of memory");
  if (rc) return rc; /* (store_text_at set the message) */
  stats_update(x);
  return STORE_OK;
}

/* A search's status rc with its message: a malformed posting list, out of
** memory. */
static int search_end(store *s, tindex *x, int rc) {
  if (rc == STORE_ECORRUPT) {
    snprintf(x->note, sizeof x->note, "the saved text index is damaged (a posting list is "
             "malformed); optimize rebuilds it");
    return store_set_error(s, rc, x->note);
  }
  if (rc == STORE_ENOMEM) return store_set_error(s, rc, "out of memory");
  return rc;
}

int store_bm25_corpus_add(store *s, const char *query, size_t n, store_bm25_corpus *c) {
  tindex *x = store_tindex(s);
  qterms q;
  memset(&q, 0, sizeof q);
  int rc = x ? tindex_ready(s, x) : STORE_OK;
  if (rc == STORE_OK && x) rc = query_terms(x, query, n, &q);
  if (rc == STORE_OK && x && !c->df) {
    c->nterms = q.nt;
    if (!(c->df = calloc(q.nt + 1, sizeof *c->df))) rc = STORE_ENOMEM;
  }
  if (rc == STORE_OK && x && q.nt != c->nterms) {
    rc = store_set_error(s, STORE_EINVAL, "the stores tokenize the query differently (tokenize= differs)");
  } else if (rc == STORE_OK && x && x->ndocs) {
    c->ndocs += x->ndocs;
    c->ntok += x->ntok;
    int no_dead = store_count(s) == store_npos(s);
    for (size_t t = 0; rc == STORE_OK && t < q.nt; t++) {
      bm25_cur cur[2];
      uint64_t df = 0;
      rc = term_df(s, x, &q, t, no_dead, cur, &df);
      c->df[t] += df;
    }
  }
  query_terms_free(&q);
  return search_end(s, x, rc);
}

int store_bm25(store *s, const char *query, size_t n, uint64_t k, const store_filter *flt,
               store_hit *out, uint64_t *nout) {
  return store_bm25_in(s, query, n, k, flt, NULL, out, nout);
}

int store_bm25_in(store *s, const char *query, size_t n, uint64_t k, const store_filter *flt,
                  const store_bm25_corpus *corpus, store_hit *out, uint64_t *nout) {
  *nout = 0;
  tindex *x = store_tindex(s);
  if (!x || k == 0) return STORE_OK;
  int rc = tindex_ready(s, x);
  if (rc) return rc;
  if (!x->ndocs) return STORE_OK;
  qterms q;
  memset(&q, 0, sizeof q);
  rc = query_terms(x, query, n, &q);
  if (!rc && corpus && q.nt != corpus->nterms)
    rc = store_set_error(s, STORE_EINVAL, "the stores tokenize the query differently (tokenize= differs)");
  uint64_t npos = store_npos(s);
  if (!rc && npos > x->acccap) {
    double *na = realloc(x->acc, npos * sizeof *na);
    if (!na) {
      rc = STORE_ENOMEM;
    } else {
      memset(na + x->acccap, 0, (npos - x->acccap) * sizeof *na);
      x->acc = na;
      x->acccap = npos;
    }
  }
  double N = corpus ? (double)corpus->ndocs : (double)x->ndocs;
  double avgdl = corpus ? (double)corpus->ntok / N : (double)x->ntok / N;
  int no_dead = store_count(s) == npos;
  x->ntouched = 0;
  for (size_t t = 0; !rc && t < q.nt; t++) {
    bm25_cur c[2];
    uint64_t df = 0;
    /* (with a corpus the postings alone: its df counts the live records) */
    if ((rc = term_df(s, x, &q, t, corpus ? 1 : no_dead, c, &df)) != STORE_OK || !df) continue;
    if (corpus) df = corpus->df[t];
    if (!df) continue;
    double idf = log((N - (double)df + 0.5) / ((double)df + 0.5));
    if (idf <= 0.0) idf = 1e-6;
    for (int j = 0; j < 2 && !rc; j++) {
      int r;
      while ((r = bm25_next(&c[j])) == 1) {
        uint64_t pos = c[j].doc;
        if (pos >= npos || (!no_dead && !store_pos_live(s, pos))) continue;
        uint32_t len = doc_len(x, pos);
        if (len == BM25_NOTEXT) continue;
        double f = (double)c[j].tf, D = (double)len;
        double num = f * (BM25_K1 + 1.0);
        double den = f + BM25_K1 * (1 - BM25_B + BM25_B * D / avgdl);
        if (x->acc[pos] == 0.0) {
          if (x->ntouched == x->captouched) {
            uint64_t nc = x->captouched ? x->captouched * 2 : 1024;
            uint64_t *nt = realloc(x->touched, nc * sizeof *nt);
            if (!nt) {
              rc = STORE_ENOMEM;
              break;
            }
            x->touched = nt;
            x->captouched = nc;
          }
          x->touched[x->ntouched++] = pos;
        }
        x->acc[pos] += idf * (num / den);
      }
      if (r < 0) rc = STORE_ECORRUPT;
    }
  }
  query_terms_free(&q);
  /* the k best allowed */
  hitheap hp = {NULL, NULL, 0, k < x->ntouched ? k : x->ntouched};
  if (!rc && hp.k) {
    hp.h = malloc(hp.k * sizeof *hp.h);
    hp.id = malloc(hp.k * sizeof *hp.id);
    if (!hp.h || !hp.id) rc = STORE_ENOMEM;
  }
  for (uint64_t i = 0; !rc && i < x->ntouched; i++) {
    uint64_t pos = x->touched[i];
    double sc = x->acc[pos];
    if (hp.n == hp.k && sc < hp.h[0].score) continue; /* (most: no id needed) */
    int64_t id = store_pos_id(s, pos);
    if (hp.n == hp.k && sc == hp.h[0].score && id > hp.id[0]) continue;
    if (!allowed(flt, pos)) continue;
    heap_offer(&hp, pos, sc, id);
  }
  for (uint64_t i = 0; i < x->ntouched; i++) x->acc[x->touched[i]] = 0.0;
  x->ntouched = 0;
  if (!rc) { /* best first: pop the worst to the end */
    uint64_t m = hp.n;
    while (hp.n > 1) {
      swap_at(&hp, 0, hp.n - 1);
      hp.n--;
      sift_down(&hp, 0);
    }
    if (m) memcpy(out, hp.h, m * sizeof *out);
    *nout = m;
  }
  free(hp.h);
  free(hp.id);
  return search_end(s, x, rc);
}

/* ---- info -------------------------------------------------------------- */

int tindex_info(tindex *x, store_text_info *info) {
  memset(info, 0, sizeof *info);
  if (!x) return STORE_OK;
  if (check_image(x)) return STORE_ENOMEM;
  info->image_rows = x->checked ? x->rows : x->im.p ? (uint64_t)x->im.row[2] : 0;
  info->image_terms = bm25_img_terms(x->img);
  info->memory_rows = x->seg ? bm25_seg_end(x->seg) - x->rows : 0;
  info->in_place = x->im.p && !x->im.copy && (!x->checked || x->img);
  info->note = x->note;
  return STORE_OK;
}
