/*
** bench/bench_text.c - lib/text's tokenizer beside FTS5's, in C, on the same
** text: unicode61 and porter, remove_diacritics 1.
**
**   make bench                      (or: ./bench/bench_text [options])
**   --mb M     megabytes of text (default 16)
**   --reps R   timed repetitions (default 7; the median is kept)
**
** The text mixes English, French, German, Russian, Greek, Chinese,
** Japanese and emoji sentences at random.  Both tokenizers hand every
** token to a callback that only counts tokens and bytes; FTS5's is reached
** through its fts5_api (the libsqlite3 this program links), so neither side
** pays for anything but tokenizing.  The counts must agree.
*/
#include "config.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h5mem_commit.h"
#include "text/tokenize.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct counts {
  uint64_t ntok, nbytes;
} counts;

static int count_ours(void *ctx, const char *tok, size_t ntok, size_t start, size_t end) {
  counts *c = ctx;
  (void)tok;
  (void)start;
  (void)end;
  c->ntok++;
  c->nbytes += ntok;
  return 0;
}

static int count_fts5(void *ctx, int flags, const char *tok, int ntok, int start, int end) {
  counts *c = ctx;
  (void)flags;
  (void)tok;
  (void)start;
  (void)end;
  c->ntok++;
  c->nbytes += (uint64_t)ntok;
  return 0;
}

/* FTS5's tokenizer `name` with args, from a fresh in-memory connection. */
static int find_fts5(sqlite3 *db, const char *name, const char **args, int nargs,
                          fts5_tokenizer *t, Fts5Tokenizer **h) {
  fts5_api *api = NULL;
  sqlite3_stmt *st;
  void *ud;
  if (sqlite3_prepare_v2(db, "SELECT fts5(?1)", -1, &st, NULL) != SQLITE_OK) return -1;
  sqlite3_bind_pointer(st, 1, (void *)&api, "fts5_api_ptr", NULL);
  sqlite3_step(st);
  sqlite3_finalize(st);
  if (!api || api->xFindTokenizer(api, name, &ud, t) != SQLITE_OK) return -1;
  return t->xCreate(ud, args, nargs, h) == SQLITE_OK ? 0 : -1;
}

static const char *sentences[] = {
    "The quick brown fox jumps over the lazy dog; generalizations are conditionally hopeful.",
    "Connection pooling in relational databases reduces the latency of short transactions.",
    "Le cœur déçu mais l'âme plutôt naïve, Louÿs rêva de crapaüter en canoë au delà des îles.",
    "Falsches Üben von Xylophonmusik quält jeden größeren Zwerg auf der Straße.",
    "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία, είπε ο άνθρωπος.",
    "我能吞下玻璃而不伤身体。天地玄黄，宇宙洪荒。",
    "いろはにほへと ちりぬるを わかよたれそ つねならむ、日本語の文章です。",
    "Emoji 😀 👍🏽 and numbers 3.14159, 1,000,000, v2.0-rc1 at 2024-01-31T12:34:56Z.",
};

int main(int argc, char **argv) {
  size_t mb = 16;
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--mb")) mb = (size_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  }
  if (mb < 1) mb = 1;
  if (reps < 1) reps = 1;

  size_t n = mb << 20, len = 0;
  char *text = malloc(n + 256);
  uint64_t r = 20261129;
  while (len < n) {
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    const char *s = sentences[(r >> 33) % (sizeof sentences / sizeof sentences[0])];
    size_t k = strlen(s);
    memcpy(text + len, s, k);
    len += k;
    text[len++] = ' ';
  }

  sqlite3 *db;
  if (sqlite3_open(":memory:", &db) != SQLITE_OK) return 1;
  printf("bench_text: %zu MB of mixed-language text, median of %d runs, one thread\n"
         "h5mem %s, SQLite %s\n\n", mb, reps, H5MEM_COMMIT, sqlite3_libversion());
  printf("%-22s %12s %12s %8s\n", "tokenizer", "h5mem MB/s", "FTS5 MB/s", "ratio");
  for (int porter = 0; porter <= 1; porter++) {
    const char *uargs[] = {"remove_diacritics", "1"};
    const char *pargs[] = {"unicode61", "remove_diacritics", "1"};
    fts5_tokenizer ft;
    Fts5Tokenizer *fh;
    if (find_fts5(db, porter ? "porter" : "unicode61", porter ? pargs : uargs,
                       porter ? 3 : 2, &ft, &fh)) {
      fprintf(stderr, "bench_text: this SQLite has no FTS5\n");
      return 1;
    }
    text_tok_opts o = {1, porter};
    double *tours = malloc((size_t)reps * sizeof *tours), *tfts = malloc((size_t)reps * sizeof *tfts);
    counts co = {0, 0}, cf = {0, 0};
    for (int rep = 0; rep < reps; rep++) {
      co.ntok = co.nbytes = cf.ntok = cf.nbytes = 0;
      double t0 = now();
      text_tokenize(&o, text, len, count_ours, &co);
      double t1 = now();
      ft.xTokenize(fh, &cf, FTS5_TOKENIZE_DOCUMENT, text, (int)len, count_fts5);
      double t2 = now();
      tours[rep] = t1 - t0;
      tfts[rep] = t2 - t1;
    }
    qsort(tours, (size_t)reps, sizeof *tours, cmp_double);
    qsort(tfts, (size_t)reps, sizeof *tfts, cmp_double);
    double mo = (double)len / 1e6 / tours[reps / 2], mf = (double)len / 1e6 / tfts[reps / 2];
    printf("%-22s %12.1f %12.1f %7.2fx\n", porter ? "porter unicode61" : "unicode61", mo, mf,
           mo / mf);
    if (co.ntok != cf.ntok || co.nbytes != cf.nbytes) {
      fprintf(stderr, "bench_text: the tokenizers disagree: %llu tokens / %llu bytes vs %llu / %llu\n",
              (unsigned long long)co.ntok, (unsigned long long)co.nbytes,
              (unsigned long long)cf.ntok, (unsigned long long)cf.nbytes);
      return 1;
    }
    ft.xDelete(fh);
    free(tours);
    free(tfts);
  }
  sqlite3_close(db);
  free(text);
  return 0;
}
