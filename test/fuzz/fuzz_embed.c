/*
** test/fuzz/fuzz_embed.c - libFuzzer target for lib/embed: a static
** word-vector model file (embed_model_open) and sentence vectors from it.
**
** Input: one byte of settings, then the file.  Settings bit 0: skip the
** digest comparison (every structural check stays), so that damaged
** vocabularies, offsets and vectors reach the checks and the lookups
** behind it.  An opened model embeds a few texts, and a text taken from
** the file's last bytes; every vector must be all zeros or of unit length
** (or the embedding an error: a damaged model's values that are not finite).
** Settings bit 1: the rest is instead an answer of an OpenAI-compatible
** embeddings endpoint (embed_http_parse, for 1 to 4 inputs by bits 2-3,
** the dimension learned or, bit 4, fixed at 3): accepted only with every
** number finite and every input's vector given once.
** Seeds (H5MEM_FUZZ_SEEDS): models embed_build wrote from GloVe text, and
** answers as the API's reference shapes them.
*/
#include "config.h"

#include <math.h>
#include <sys/stat.h>

#include "embed/embed_int.h"
#include "fuzz.h"

static char dir[512], path[600];

static void done(void) {
  unlink(path);
  rmdir(dir);
}

static void check_vec(const float *v, int dim) {
  double n = 0;
  for (int k = 0; k < dim; k++) {
    FUZZ_ASSERT(isfinite(v[k]));
    n += (double)v[k] * v[k];
  }
  FUZZ_ASSERT(n == 0 || fabs(n - 1) < 1e-3);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(dir, sizeof dir, "%s/h5mem-fuzz-embed.XXXXXX", fuzz_tmp_base());
  if (!mkdtemp(dir)) abort();
  snprintf(path, sizeof path, "%s/model.h5", dir);
  atexit(done);
  const char *seeds = fuzz_seed_dir();
  if (!seeds) return 0;
  /* models of 40 and 300 words, float16 and float32 */
  for (int s = 0; s < 3; s++) {
    char src[700];
    snprintf(src, sizeof src, "%s/src.txt", dir);
    FILE *f = fopen(src, "w");
    if (!f) abort();
    int nw = s == 1 ? 300 : 40, dim = s == 2 ? 3 : 16;
    for (int w = 0; w < nw; w++) {
      fprintf(f, "w%d%s", w, w % 7 == 0 ? "x" : "");
      for (int k = 0; k < dim; k++) fprintf(f, " %.4f", sin(w * 0.37 + k * 1.3));
      fputc('\n', f);
    }
    fclose(f);
    embed_build_opts o = {.float32 = s == 2};
    embed_build_info info;
    char err[512];
    if (embed_build(src, path, &o, &info, err, sizeof err) != EMBED_OK) {
      fprintf(stderr, "seed model: %s\n", err);
      abort();
    }
    unlink(src);
    FILE *m = fopen(path, "rb");
    if (!m) abort();
    fseek(m, 0, SEEK_END);
    long n = ftell(m);
    fseek(m, 0, SEEK_SET);
    uint8_t *img = malloc((size_t)n + 1);
    if (!img || fread(img + 1, 1, (size_t)n, m) != (size_t)n) abort();
    fclose(m);
    img[0] = (uint8_t)(s & 1);
    fuzz_seed_image(seeds, (size_t)s, img, (size_t)n + 1);
  }
  static const char *const answers[] = {
      "\x02{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":[0.1,-0.2,3e-1]}],"
      "\"model\":\"m\",\"usage\":{\"prompt_tokens\":2,\"total_tokens\":2}}",
      "\x16{\"data\":[{\"index\":1,\"embedding\":[1,2,3]},{\"index\":0,\"embedding\":[4,5,6]}]}",
  };
  for (size_t a = 0; a < sizeof answers / sizeof *answers; a++) {
    char name[32];
    snprintf(name, sizeof name, "answer-%zu", a);
    fuzz_seed(seeds, name, answers[a], strlen(answers[a]));
  }
  return 0;
}

/* An embeddings answer (settings byte d0, then the body). */
static void one_answer(uint8_t d0, const uint8_t *b, size_t n) {
  size_t inputs = 1 + ((d0 >> 2) & 3);
  int dim = (d0 & 16) ? 3 : 0;
  float *out = malloc(inputs * 65536 * sizeof *out);
  if (!out) abort();
  char err[512];
  int rc = embed_http_parse((const char *)b, n, inputs, &dim, out, err, sizeof err);
  FUZZ_ASSERT(rc == EMBED_OK || rc == EMBED_ECORRUPT || rc == EMBED_ENOMEM);
  if (rc == EMBED_OK) {
    FUZZ_ASSERT(dim >= 1 && dim <= 65536 && (!(d0 & 16) || dim == 3));
    for (size_t i = 0; i < inputs * (size_t)dim; i++) FUZZ_ASSERT(isfinite(out[i]));
  } else {
    FUZZ_ASSERT(err[0]);
  }
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  if (data[0] & 2) {
    one_answer(data[0], data + 1, size - 1);
    return 0;
  }
  FILE *f = fopen(path, "wb");
  if (!f || (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) || fclose(f) != 0) abort();
  embed_model *m;
  char err[512];
  int rc = (data[0] & 1) ? embed_model_open_nodigest(path, &m, err, sizeof err)
                         : embed_model_open(path, &m, err, sizeof err);
  if (rc != EMBED_OK) return 0;
  int dim = embed_model_dim(m);
  float *v = malloc(sizeof *v * (size_t)dim);
  if (!v) abort();
  static const char *const texts[] = {"w1 w2 w3", "w7x and w14x", "", "W299 w0 w0 w0", "nothing"};
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    uint64_t known;
    int r = embed_model_embed(m, texts[i], strlen(texts[i]), v, &known);
    FUZZ_ASSERT(r == EMBED_OK || r == EMBED_ECORRUPT); /* (non-finite values in a damaged model) */
    if (r == EMBED_OK) check_vec(v, dim);
  }
  size_t tail = size > 33 ? 32 : size - 1;
  int r = embed_model_embed(m, (const char *)data + size - tail, tail, v, NULL);
  FUZZ_ASSERT(r == EMBED_OK || r == EMBED_ECORRUPT);
  if (r == EMBED_OK) check_vec(v, dim);
  free(v);
  embed_model_close(m);
  return 0;
}
