/*
** mcp/mcp_image.h - h5mem-mcp's search image: what search_nodes needs of
** the graph (the haystacks, their trigram index, each entity's and each
** relation's JSON as the reference writes it), written beside the store
** (<store>-mcp) as the server ends and mapped when it starts again, so the
** first search_nodes is answered before the graph is read (mcp_image.c;
** docs/MCP.md, "The search image").
**
** The image names the store's state it was made from (store_state_key:
** the store's id, its last checkpoint, its live records); a store in any
** other state (changed by anyone since, or another store) does not use it.
** Its content is a file's: every count, offset and index in it is checked
** before it is used (mcp_image_open checks the header and the sections'
** sizes; a search checks what it reads), and a damaged image is set aside
** (the graph read from the store answers instead).
*/
#ifndef H5MEM_MCP_IMAGE_H
#define H5MEM_MCP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"
#include "util/strbuf.h"

#define MCP_IMAGE_MAGIC "H5MCPSI1"
#define MCP_IMAGE_HEADER 144
#define MCP_IMAGE_NCOUNTS 8
#define MCP_IMAGE_BLOCK 4096u /* (each block's checksum checked when first read) */

/* A trigram's key: its bytes b0 b1 b2 as b0 << 16 | b1 << 8 | b2, plus 1
** (0 stays free: an empty slot of mcp_kept.c's table). */
static inline uint32_t mcp_tri_key(const char *p) {
  return ((uint32_t)(uint8_t)p[0] << 16 | (uint32_t)(uint8_t)p[1] << 8 | (uint8_t)p[2]) + 1;
}

typedef struct mcp_image {
  const uint8_t *p; /* the image */
  uint64_t end;     /* of the sections (the checksums follow) */
  uint64_t nblocks;
  const uint8_t *sums;
  uint8_t *checked; /* a bit a block: its checksum checked */
  uint64_t ne, nr, hay_len, ntri, npost, ej_len, rj_len, nadj;
  const uint64_t *hay_at, *ej_at, *adj_at, *rj_at;
  const uint32_t *canon, *adj, *tkey, *toff, *tent;
  const char *hay, *ej, *rj;
  int bad; /* found damaged while searching: not used again */
} mcp_image;

/* What an image holds (the sections of mcp_image.c, as arrays). */
typedef struct mcp_image_src {
  uint64_t ne, nr;
  const uint64_t *hay_at;
  const char *hay;
  const uint64_t *ej_at;
  const char *ej;
  const uint32_t *canon;
  const uint64_t *adj_at; /* [ne + 1] */
  const uint32_t *adj;
  const uint64_t *rj_at;
  const char *rj;
  uint64_t ntri;
  const uint32_t *tkey, *toff;
  uint64_t npost;
  const uint32_t *tent;
} mcp_image_src;

/* The image of s made from the store in state k: 0 with *img (malloc'd)
** and *len, or -1 out of memory. */
int mcp_image_make(const mcp_image_src *s, const store_state_key *k, uint8_t **img, size_t *len);
/* The checksums of img (len bytes, its header and sections as they are)
** written again: for the fuzz target, which reaches damaged sections past
** their checksums.  0, or -1 when its counts do not fit len. */
int mcp_image_reseal(uint8_t *img, size_t len);

/* p (len bytes, 8-byte aligned) opened as an image made from the store in
** state want (NULL: any): 0 (mcp_image_close ends it), or -1 with why. */
int mcp_image_open(mcp_image *im, const void *p, size_t len, const store_state_key *want, const char **why);
void mcp_image_close(mcp_image *im);

/* search_nodes(q) answered from the image: ql (qn bytes) is q lowercased
** (kept_lower); {"entities":[...],"relations":[...]} appended to out as the
** kept graph would give it.  0; 1 when the image cannot answer (a query
** holding 0x01, or the image found damaged: im->bad); -1 out of memory. */
int mcp_image_search(mcp_image *im, const char *ql, size_t qn, strbuf *out);

#endif /* H5MEM_MCP_IMAGE_H */
