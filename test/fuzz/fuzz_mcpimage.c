/*
** test/fuzz/fuzz_mcpimage.c - libFuzzer target for h5mem-mcp's search
** image (mcp/mcp_image.c), the file <store>-mcp the server maps when it
** starts: mcp_image_open, then searches (search_nodes' ways: the empty
** query, a short one scanned, one through the trigram index).
**
** Input: one byte of settings (bit 0: the checksums written again over the
** input first, so that damaged counts, offsets and indexes are reached past
** them), one byte of query length (up to 15), the query, then the image.
** Invariants: nothing read outside the image (ASan); a search that answers
** appends {"entities":[...],"relations":[...]}, one that does not leaves
** the output as it was; an image found damaged stays set aside.
** Seeds (H5MEM_FUZZ_SEEDS): images mcp_image_make writes of small graphs.
*/
#include "config.h"

#include "fuzz.h"
#include "mcp_image.h"

static int cmp64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* An image of a graph of n entities (names e0, e1, ...; a placeholder
** every fifth) and as many relations, its trigrams counted here. */
static void seed_graph(const char *dir, size_t which, size_t n) {
  strbuf hay = {0}, ej = {0}, rj = {0};
  uint64_t *hay_at = calloc(n + 1, 8), *ej_at = calloc(n + 1, 8), *rj_at = calloc(n + 1, 8);
  uint32_t *canon = calloc(n + 1, 4), *ra = calloc(n + 1, 4), *rb = calloc(n + 1, 4), *adj = calloc(2 * n + 1, 4);
  uint64_t *adj_at = calloc(n + 1, 8);
  for (size_t i = 0; i < n; i++) {
    hay_at[i] = hay.len;
    ej_at[i] = ej.len;
    rj_at[i] = rj.len;
    canon[i] = (uint32_t)(i % 7 == 6 ? i - 1 : i);
    if (i % 5 == 4) {
      strbuf_putc(&hay, 1);
    } else {
      strbuf_printf(&hay, "e%zu\001person\001likes tea %zu\001", i, i * 7);
      strbuf_printf(&ej, "{\"name\":\"e%zu\",\"entityType\":\"person\",\"observations\":[\"likes tea %zu\"]}", i, i * 7);
    }
    ra[i] = canon[i];
    rb[i] = canon[(i * 3) % n];
    strbuf_printf(&rj, "{\"from\":\"e%zu\",\"to\":\"e%zu\",\"relationType\":\"knows\"}", i, (i * 3) % n);
  }
  hay_at[n] = hay.len, ej_at[n] = ej.len, rj_at[n] = rj.len;
  /* each name's relations, ascending (one with both ends of a name once) */
  size_t na = 0;
  for (size_t c = 0; c < n; c++) {
    adj_at[c] = na;
    for (size_t r = 0; r < n; r++)
      if (ra[r] == c || rb[r] == c) adj[na++] = (uint32_t)r;
  }
  adj_at[n] = na;
  /* every trigram (none spanning 0x01) with its entities, by key */
  uint64_t *pairs = malloc(hay.len * 8 + 8); /* key << 32 | entity */
  size_t np = 0;
  for (size_t i = 0; i < n; i++)
    for (uint64_t k = hay_at[i]; k + 3 <= hay_at[i + 1]; k++) {
      const uint8_t *h = (const uint8_t *)hay.buf + k;
      if (h[0] != 1 && h[1] != 1 && h[2] != 1)
        pairs[np++] = (uint64_t)(((uint32_t)h[0] << 16 | (uint32_t)h[1] << 8 | h[2]) + 1) << 32 | i;
    }
  qsort(pairs, np, sizeof *pairs, cmp64);
  uint32_t *tkey = malloc(np * 4 + 4), *toff = malloc(np * 4 + 8), *tent = malloc(np * 4 + 4);
  size_t ntri = 0, npost = 0;
  for (size_t j = 0; j < np; j++) {
    if (j && pairs[j] == pairs[j - 1]) continue;
    uint32_t key = (uint32_t)(pairs[j] >> 32);
    if (!ntri || tkey[ntri - 1] != key) tkey[ntri] = key, toff[ntri++] = (uint32_t)npost;
    tent[npost++] = (uint32_t)pairs[j];
  }
  free(pairs);
  toff[ntri] = (uint32_t)npost;
  mcp_image_src src = {n, n, hay_at, hay.buf ? hay.buf : "", ej_at, ej.buf ? ej.buf : "", canon, adj_at, adj, rj_at,
                       rj.buf ? rj.buf : "", ntri, tkey, toff, npost, tent};
  store_state_key k;
  memset(&k, 0, sizeof k);
  k.seq = which;
  uint8_t *img = NULL;
  size_t len = 0;
  if (mcp_image_make(&src, &k, &img, &len) == 0) {
    /* (a made image opens, and answers as its graph does: "e12" is e12 alone) */
    mcp_image im;
    const char *why = NULL;
    strbuf out = {0};
    FUZZ_ASSERT(mcp_image_open(&im, img, len, &k, &why) == 0);
    FUZZ_ASSERT(mcp_image_search(&im, "e12", 3, &out) == 0);
    FUZZ_ASSERT(n < 13 ? strstr(out.buf, "\"entities\":[]") != NULL
                       : strstr(out.buf, "\"name\":\"e12\"") && !strstr(out.buf, "\"name\":\"e1\""));
    strbuf_free(&out);
    mcp_image_close(&im);
    uint8_t *in = malloc(len + 5);
    memcpy(in, "\0\003e12", 5); /* (settings 0, the query "e12") */
    memcpy(in + 5, img, len);
    free(img);
    fuzz_seed_image(dir, which, in, len + 5);
  }
  free(hay_at), free(ej_at), free(rj_at), free(canon), free(ra), free(rb), free(tkey), free(toff), free(tent);
  free(adj), free(adj_at);
  strbuf_free(&hay), strbuf_free(&ej), strbuf_free(&rj);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *seeds = fuzz_seed_dir();
  if (!seeds) return 0;
  seed_graph(seeds, 0, 1);
  seed_graph(seeds, 1, 13);
  seed_graph(seeds, 2, 40);
  return 0;
}

static void search(mcp_image *im, const char *q, size_t qn) {
  strbuf out = {0};
  strbuf_puts(&out, "x");
  int was_bad = im->bad;
  int rc = mcp_image_search(im, q, qn, &out);
  FUZZ_ASSERT(rc >= -1 && rc <= 1);
  if (rc == 0) {
    FUZZ_ASSERT(out.len >= 1 + 29 && !memcmp(out.buf + 1, "{\"entities\":[", 13));
    FUZZ_ASSERT(!memcmp(out.buf + out.len - 2, "]}", 2));
  }
  if (rc == 1) FUZZ_ASSERT(out.len == 1);
  if (was_bad) FUZZ_ASSERT(rc == 1);
  strbuf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int reseal = data[0] & 1;
  size_t qn = data[1] & 15;
  if (size < 2 + qn) return 0;
  char q[16];
  memcpy(q, data + 2, qn);
  size_t len = size - 2 - qn;
  uint64_t *buf = malloc((len / 8 + 1) * 8); /* (8-byte aligned, as a mapped file is) */
  uint8_t *img = (uint8_t *)buf;
  if (!img) return 0;
  memcpy(img, data + 2 + qn, len);
  if (reseal) mcp_image_reseal(img, len);
  mcp_image im;
  const char *why = NULL;
  if (mcp_image_open(&im, img, len, NULL, &why) == 0) {
    search(&im, q, qn);
    search(&im, "", 0);
    search(&im, q, qn < 2 ? qn : 2);
    search(&im, "tea", 3);
    mcp_image_close(&im);
  } else {
    FUZZ_ASSERT(why && *why);
  }
  free(buf);
  return 0;
}
