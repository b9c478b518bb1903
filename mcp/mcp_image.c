/*
** mcp/mcp_image.c - h5mem-mcp's search image (mcp_image.h): made from
** arrays (mcp_image_make; kept_image, mcp_kept.c, gathers them from the
** kept graph), read in place, searched.
**
** Layout (little-endian; docs/MCP.md, "The search image"): a 144-byte
** header: the magic "H5MCPSI1"; eight uint64 counts (entities ne,
** relations nr, haystack bytes, trigrams, postings, entity JSON bytes,
** relation JSON bytes, relation list entries na); the state it was made
** from (store_state_key: the store's 16-byte id, uint64 checkpoint, four
** uint64 live counts); the header's checksum; 8 zero bytes.  Then these
** sections, each starting on 8 bytes:
**   hay_at  uint64[ne + 1]  entity i's haystack: hay[hay_at[i] .. hay_at[i + 1])
**   ej_at   uint64[ne + 1]  entity i's JSON: ej[ej_at[i] .. ej_at[i + 1]) (empty: a placeholder)
**   canon   uint32[ne]      the first entity of i's name
**   adj_at  uint64[ne + 1]  the relations with an end whose canon is i: adj[adj_at[i] .. adj_at[i + 1])
**   adj     uint32[na]      relation numbers, ascending within an entity's list
**   rj_at   uint64[nr + 1]  relation r's JSON in rj
**   tkey    uint32[ntri]    the trigrams (bytes b0 b1 b2 as b0 << 16 | b1 << 8 | b2, plus 1), ascending
**   toff    uint32[ntri + 1] trigram k's entities: tent[toff[k] .. toff[k + 1])
**   tent    uint32[npost]   entity numbers, ascending within a trigram
**   hay, ej, rj             bytes
** and last the blocks' checksums: XXH64 (seed 0) of each 4 KiB block from
** byte 144 to the end of the sections (the last block shorter), uint64
** each.  The header's checksum is XXH64 of that table with the seed XXH64
** (seed 0) of the header's first 128 bytes.
**
** A block is checked the first time a search reads from it, so a search
** reads only the blocks it needs: the binary search's probes of tkey, the
** candidates' lists, haystacks and JSON, their relation lists; a block
** that fails sets the image aside.
*/
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "mcp_image.h"

enum { S_HAYAT, S_EJAT, S_CANON, S_ADJAT, S_ADJ, S_RJAT, S_TKEY, S_TOFF, S_TENT, S_HAY, S_EJ, S_RJ, NSEC };
enum { H_COUNTS = 8, H_ID = 72, H_SEQ = 88, H_LIVE = 96, H_SUM = 128 }; /* the header's fields */

static uint64_t mcp_image_blocks(uint64_t end) {
  return (end - MCP_IMAGE_HEADER + MCP_IMAGE_BLOCK - 1) / MCP_IMAGE_BLOCK;
}

/* The sections' offsets (o) for counts c, where they end (*end) and the
** image's length; 0 when they cannot fit len bytes. */
static uint64_t layout(const uint64_t c[MCP_IMAGE_NCOUNTS], uint64_t len, uint64_t o[NSEC], uint64_t *end) {
  for (int k = 0; k < MCP_IMAGE_NCOUNTS; k++)
    if (c[k] > len || len > (UINT64_MAX >> 5)) return 0; /* (so that no size below overflows) */
  const uint64_t ne = c[0], nr = c[1];
  const uint64_t size[NSEC] = {(ne + 1) * 8, (ne + 1) * 8, ne * 4,         (ne + 1) * 8, c[7] * 4, (nr + 1) * 8,
                               c[3] * 4,     (c[3] + 1) * 4, c[4] * 4, c[2],         c[5],     c[6]};
  uint64_t at = MCP_IMAGE_HEADER;
  for (int k = 0; k < NSEC; k++) {
    at = (at + 7) & ~(uint64_t)7;
    o[k] = at;
    at += size[k];
    if (at > len + 8) return 0;
  }
  at = (at + 7) & ~(uint64_t)7;
  *end = at;
  return at + mcp_image_blocks(at) * 8;
}

static uint64_t header_sum(const uint8_t *h, const uint8_t *table, uint64_t nb) {
  return XXH64(table, nb * 8, XXH64(h, H_SUM, 0));
}

/* The blocks' checksums and the header's written (the sections ending at end). */
static void seal(uint8_t *img, uint64_t end) {
  uint64_t nb = mcp_image_blocks(end);
  uint8_t *table = img + end;
  for (uint64_t b = 0; b < nb; b++) {
    uint64_t a = MCP_IMAGE_HEADER + b * MCP_IMAGE_BLOCK, n = end - a < MCP_IMAGE_BLOCK ? end - a : MCP_IMAGE_BLOCK;
    uint64_t s = XXH64(img + a, n, 0);
    memcpy(table + 8 * b, &s, 8);
  }
  uint64_t h = header_sum(img, table, nb);
  memcpy(img + H_SUM, &h, 8);
}

int mcp_image_make(const mcp_image_src *s, const store_state_key *k, uint8_t **img, size_t *len) {
  *img = NULL;
  *len = 0;
  uint64_t c[MCP_IMAGE_NCOUNTS] = {s->ne,    s->nr,           s->hay_at[s->ne], s->ntri,
                                   s->npost, s->ej_at[s->ne], s->rj_at[s->nr],  s->adj_at[s->ne]};
  uint64_t o[NSEC], end, big = MCP_IMAGE_HEADER + 8 * NSEC; /* (a bound: every count is below the sizes' sum) */
  for (int i = 0; i < MCP_IMAGE_NCOUNTS; i++) big += c[i] * 8 + 8;
  uint64_t total = layout(c, big, o, &end);
  uint8_t *p = total && total <= SIZE_MAX ? calloc(1, (size_t)total) : NULL;
  if (!p) return -1;
  memcpy(p, MCP_IMAGE_MAGIC, 8);
  memcpy(p + H_COUNTS, c, sizeof c);
  memcpy(p + H_ID, k->id, 16);
  memcpy(p + H_SEQ, &k->seq, 8);
  memcpy(p + H_LIVE, k->live, 32);
  const void *from[NSEC] = {s->hay_at, s->ej_at, s->canon, s->adj_at, s->adj, s->rj_at,
                            s->tkey,   s->toff,  s->tent,  s->hay,    s->ej,  s->rj};
  const uint64_t size[NSEC] = {(s->ne + 1) * 8, (s->ne + 1) * 8,   s->ne * 4,     (s->ne + 1) * 8,
                               c[7] * 4,        (s->nr + 1) * 8,   s->ntri * 4,   (s->ntri + 1) * 4,
                               s->npost * 4,    c[2],              c[5],          c[6]};
  for (int i = 0; i < NSEC; i++)
    if (size[i]) memcpy(p + o[i], from[i], (size_t)size[i]);
  seal(p, end);
  *img = p;
  *len = (size_t)total;
  return 0;
}

int mcp_image_reseal(uint8_t *img, size_t len) {
  uint64_t c[MCP_IMAGE_NCOUNTS], o[NSEC], end;
  if (len < MCP_IMAGE_HEADER) return -1;
  memcpy(c, img + H_COUNTS, sizeof c);
  if (layout(c, len, o, &end) != len) return -1;
  seal(img, end);
  return 0;
}

int mcp_image_open(mcp_image *im, const void *p, size_t len, const store_state_key *want, const char **why) {
  memset(im, 0, sizeof *im);
  const uint8_t *b = p;
  if (((uintptr_t)p & 7) || len < MCP_IMAGE_HEADER || memcmp(b, MCP_IMAGE_MAGIC, 8) != 0) {
    *why = "not a search image of this version";
    return -1;
  }
  if (want && (memcmp(b + H_ID, want->id, 16) || memcmp(b + H_SEQ, &want->seq, 8) ||
               memcmp(b + H_LIVE, want->live, 32))) {
    *why = memcmp(b + H_ID, want->id, 16) ? "made from another store" : "made before the store last changed";
    return -1;
  }
  uint64_t c[MCP_IMAGE_NCOUNTS], o[NSEC], end;
  memcpy(c, b + H_COUNTS, sizeof c);
  if (layout(c, len, o, &end) != len) {
    *why = "its sections do not fit its length";
    return -1;
  }
  im->nblocks = mcp_image_blocks(end);
  im->sums = b + end;
  uint64_t hs;
  memcpy(&hs, b + H_SUM, 8);
  if (header_sum(b, im->sums, im->nblocks) != hs) {
    *why = "its header's checksum is wrong";
    return -1;
  }
  im->checked = calloc(im->nblocks / 8 + 1, 1);
  if (!im->checked) {
    *why = "out of memory";
    return -1;
  }
  im->p = b;
  im->end = end;
  im->ne = c[0], im->nr = c[1], im->hay_len = c[2], im->ntri = c[3], im->npost = c[4];
  im->ej_len = c[5], im->rj_len = c[6], im->nadj = c[7];
  im->hay_at = (const uint64_t *)(b + o[S_HAYAT]);
  im->ej_at = (const uint64_t *)(b + o[S_EJAT]);
  im->canon = (const uint32_t *)(b + o[S_CANON]);
  im->adj_at = (const uint64_t *)(b + o[S_ADJAT]);
  im->adj = (const uint32_t *)(b + o[S_ADJ]);
  im->rj_at = (const uint64_t *)(b + o[S_RJAT]);
  im->tkey = (const uint32_t *)(b + o[S_TKEY]);
  im->toff = (const uint32_t *)(b + o[S_TOFF]);
  im->tent = (const uint32_t *)(b + o[S_TENT]);
  im->hay = (const char *)(b + o[S_HAY]);
  im->ej = (const char *)(b + o[S_EJ]);
  im->rj = (const char *)(b + o[S_RJ]);
  return 0;
}

void mcp_image_close(mcp_image *im) {
  free(im->checked);
  im->checked = NULL;
}

/* The blocks holding the n bytes at p (inside the sections) checked: 0,
** or -1 when one fails (im->bad set). */
static int sure(mcp_image *im, const void *p, uint64_t n) {
  if (im->bad) return -1;
  if (!n) return 0;
  uint64_t a = (uint64_t)((const uint8_t *)p - im->p);
  uint64_t first = (a - MCP_IMAGE_HEADER) / MCP_IMAGE_BLOCK, last = (a + n - 1 - MCP_IMAGE_HEADER) / MCP_IMAGE_BLOCK;
  for (uint64_t k = first; k <= last; k++) {
    if (im->checked[k / 8] & (1u << (k % 8))) continue;
    uint64_t s = MCP_IMAGE_HEADER + k * MCP_IMAGE_BLOCK, len = im->end - s < MCP_IMAGE_BLOCK ? im->end - s : MCP_IMAGE_BLOCK;
    uint64_t want;
    memcpy(&want, im->sums + 8 * k, 8);
    if (XXH64(im->p + s, len, 0) != want) {
      im->bad = 1;
      return -1;
    }
    im->checked[k / 8] |= (uint8_t)(1u << (k % 8));
  }
  return 0;
}

/* [at[i], at[i + 1]) within n, checked: 1, else 0. */
static int span(mcp_image *im, const uint64_t *at, uint64_t i, uint64_t n, uint64_t *a, uint64_t *z) {
  if (sure(im, at + i, 16)) return 0;
  *a = at[i];
  *z = at[i + 1];
  return *a <= *z && *z <= n;
}

/* The uint32 at p, checked (0: damaged, im->bad set). */
static int u32(mcp_image *im, const uint32_t *p, uint32_t *v) {
  if (sure(im, p, 4)) return 0;
  *v = *p;
  return 1;
}

/* Trigram key's number in *t (ntri: absent): 0, or -1 damaged. */
static int tri_find(mcp_image *im, uint32_t key, uint64_t *t) {
  uint64_t lo = 0, hi = im->ntri;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    uint32_t v;
    if (!u32(im, im->tkey + mid, &v)) return -1;
    if (v < key) lo = mid + 1;
    else hi = mid;
  }
  uint32_t v = 0;
  if (lo < im->ntri && !u32(im, im->tkey + lo, &v)) return -1;
  *t = lo < im->ntri && v == key ? lo : im->ntri;
  return 0;
}

/* Whether entity i's haystack holds the query (0 no, 1 yes, -1 damaged). */
static int hay_has(mcp_image *im, uint64_t i, const char *ql, size_t qn) {
  uint64_t a, z;
  if (i >= im->ne || !span(im, im->hay_at, i, im->hay_len, &a, &z) || sure(im, im->hay + a, z - a)) return -1;
  return memmem(im->hay + a, z - a, ql, qn) != NULL;
}

/* A growing list of uint32. */
typedef struct u32s {
  uint32_t *v;
  size_t n, cap;
  int oom;
} u32s;

static void push(u32s *l, uint32_t x) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    uint32_t *p = realloc(l->v, cap * sizeof *p);
    if (!p) {
      l->oom = 1;
      return;
    }
    l->v = p;
    l->cap = cap;
  }
  l->v[l->n++] = x;
}

/* The entities matching, ascending, into h (kept_search's ways, over the
** image): 0, or -1 damaged. */
static int match(mcp_image *im, const char *ql, size_t qn, u32s *h) {
  if (!qn) {
    for (uint64_t i = 0; i < im->ne && !h->oom; i++) {
      uint64_t a, z;
      if (!span(im, im->ej_at, i, im->ej_len, &a, &z)) return -1;
      if (z > a) push(h, (uint32_t)i); /* (not a placeholder) */
    }
    return 0;
  }
  if (qn < 3) { /* every haystack (a placeholder's is 0x01 alone) */
    for (uint64_t i = 0; i < im->ne && !h->oom; i++) {
      int y = hay_has(im, i, ql, qn);
      if (y < 0) return -1;
      if (y) push(h, (uint32_t)i);
    }
    return 0;
  }
  /* the entities holding the query's rarest trigram */
  uint64_t best = im->ntri;
  uint32_t ba = 0, bz = 0;
  for (size_t k = 0; k + 3 <= qn; k++) {
    uint64_t t;
    uint32_t a, z;
    if (tri_find(im, mcp_tri_key(ql + k), &t)) return -1;
    if (t == im->ntri) return 0; /* a trigram no entity has: none matches */
    if (!u32(im, im->toff + t, &a) || !u32(im, im->toff + t + 1, &z) || a > z || z > im->npost) return -1;
    if (best == im->ntri || z - a < bz - ba) best = t, ba = a, bz = z;
  }
  const uint32_t *cand = im->tent + ba;
  if (sure(im, cand, (uint64_t)(bz - ba) * 4)) return -1;
  for (uint64_t j = 0; j < bz - ba && !h->oom; j++) {
    if (j && cand[j] <= cand[j - 1]) return -1; /* (ascending, each once) */
    int y = hay_has(im, cand[j], ql, qn);
    if (y < 0) return -1;
    if (y) push(h, cand[j]);
  }
  return 0;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int mcp_image_search(mcp_image *im, const char *ql, size_t qn, strbuf *out) {
  if (im->bad || memchr(ql, 1, qn)) return 1;
  u32s h = {0}, rel = {0}, names = {0};
  int bad = match(im, ql, qn, &h);
  /* the names of the entities found (their canon, each once), and the
     relations with an end of one of those names, ascending, each once */
  for (size_t k = 0; !bad && k < h.n; k++) {
    uint32_t c;
    if (!u32(im, im->canon + h.v[k], &c) || c >= im->ne) bad = -1;
    else push(&names, c);
  }
  if (!bad && names.n) qsort(names.v, names.n, sizeof *names.v, cmp_u32);
  for (size_t k = 0; !bad && k < names.n; k++) {
    uint64_t a = 0, z = 0;
    if (k && names.v[k] == names.v[k - 1]) continue;
    if (!span(im, im->adj_at, names.v[k], im->nadj, &a, &z) || sure(im, im->adj + a, (z - a) * 4)) bad = -1;
    for (uint64_t j = a; !bad && j < z; j++) {
      if (im->adj[j] >= im->nr) bad = -1;
      else push(&rel, im->adj[j]);
    }
  }
  if (!bad && rel.n) qsort(rel.v, rel.n, sizeof *rel.v, cmp_u32);
  int oom = h.oom || rel.oom || names.oom;
  size_t at = out->len;
  strbuf_puts(out, "{\"entities\":[");
  int first = 1;
  for (size_t k = 0; !bad && !oom && k < h.n; k++) {
    uint64_t a, z;
    if (!span(im, im->ej_at, h.v[k], im->ej_len, &a, &z) || sure(im, im->ej + a, z - a)) bad = -1;
    else if (z > a) { /* (a placeholder has none) */
      if (!first) strbuf_putc(out, ',');
      first = 0;
      strbuf_append(out, im->ej + a, (size_t)(z - a));
    }
  }
  strbuf_puts(out, "],\"relations\":[");
  first = 1;
  for (size_t k = 0; !bad && !oom && k < rel.n; k++) {
    uint64_t a, z;
    if (k && rel.v[k] == rel.v[k - 1]) continue;
    if (!span(im, im->rj_at, rel.v[k], im->rj_len, &a, &z) || sure(im, im->rj + a, z - a)) {
      bad = -1;
      break;
    }
    if (!first) strbuf_putc(out, ',');
    first = 0;
    strbuf_append(out, im->rj + a, (size_t)(z - a));
  }
  strbuf_puts(out, "]}");
  free(h.v);
  free(rel.v);
  free(names.v);
  if (bad) { /* (nothing of it given: the graph answers) */
    im->bad = 1;
    out->len = at;
    return 1;
  }
  if (oom) out->len = at;
  return oom || strbuf_failed(out) ? -1 : 0;
}
