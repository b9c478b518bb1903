/*
** test/fuzz/replay.c - runs one libFuzzer target (linked in) over files,
** without libFuzzer: `make check` builds one per target with the normal
** compiler, so every target keeps compiling and its regressions and seeds
** keep passing in every build (test/fuzz/replay.sh).
**
**   replay_hnsw FILE|DIR ...    each file, or each file of each directory
**
** LLVMFuzzerInitialize runs first (with H5MEM_FUZZ_SEEDS set it writes the
** target's seeds, which a later argument may then name).  A finding aborts
** the program as it would the fuzzer; otherwise it says how many inputs ran.
*/
#include "config.h"

#include <dirent.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      uint8_t *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  int bad = !buf || ferror(f);
  fclose(f);
  if (bad) {
    fprintf(stderr, "cannot read %s\n", path);
    free(buf);
    return -1;
  }
  /* (an exact-size copy, so that ASan sees a read past the input) */
  uint8_t *in = malloc(n ? n : 1);
  if (!in) abort();
  if (n) memcpy(in, buf, n);
  free(buf);
  fprintf(stderr, "%s\n", path);
  LLVMFuzzerTestOneInput(in, n);
  free(in);
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order: how many, or -1. */
static long run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "cannot open %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *nn);
      if (!nn) abort();
      names = nn;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    if (!(names[n] = malloc(len))) abort();
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  long done = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      if (run_file(names[i]) != 0) done = -1;
      else if (done >= 0) done++;
    }
    free(names[i]);
  }
  free(names);
  return done;
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  long total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    long n;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
      return 1;
    }
    n = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
    if (n < 0) return 1;
    total += n;
  }
  printf("%s: %ld inputs, no findings\n", argv[0], total);
  return 0;
}
