/*
** bench/bench_life.c - the cost of lib/life's policies per call: the write
** gate on trivial, short and substantive texts, the save strategies, a new
** memory's importance, and the decay score per record.
**
**   make bench                      (or: ./bench/bench_life [options])
**   --reps R   timed repetitions (default 7; the median is kept)
**
** For reference only (another machine, another implementation, not run
** here): seed 002 measured its decision gate at 58-571 ns a call and its
** save strategy at 733 ns.  This program reports ours; it compares with
** no constant.
*/
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "h5mem_commit.h"
#include "k.h"
#include "life/life.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static volatile double sink;

static const char *const paragraph =
    "Alice moved to Lisbon in March after accepting a position at the observatory, where she "
    "works on the calibration of the new spectrograph. She prefers green tea in the morning, "
    "takes the tram to work, and has asked to be reminded of her sister's birthday on the "
    "twelfth of June. Her manager is Bob, who travels often; meetings with him are best "
    "scheduled on Tuesdays or Thursdays after lunch. She is allergic to peanuts and dislikes "
    "loud restaurants, but loves the small fish place near the river that serves grilled "
    "sardines. Next quarter she plans to present the instrument's first results at the "
    "conference in Granada, and she wants her slides reviewed a week before by the team.";

typedef struct gate_case {
  const char *name;
  const char *text;
} gate_case;

/* The median seconds per call of one gate case over reps runs of iters calls. */
static double time_gate(const char *text, int reps, int iters) {
  double *t = malloc((size_t)reps * sizeof *t);
  size_t n = strlen(text);
  life_gate_result r;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) {
      life_gate(NULL, text, n, &r);
      sink += r.information;
    }
    t[rep] = (now() - t0) / iters;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  double m = t[reps / 2];
  free(t);
  return m;
}

static void fill(float *v, size_t n, uint64_t *s) {
  for (size_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
  }
}

int main(int argc, char **argv) {
  int reps = 7;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
  if (reps < 1) reps = 1;

  printf("bench_life: lib/life per call, median of %d runs, one thread, kernels %s\n"
         "h5mem %s\n"
         "(reference only, another machine: seed 002's gate 58-571 ns, strategy 733 ns)\n\n",
         reps, k_get()->name, H5MEM_COMMIT);

  char sentence[] = "Alice moved to Lisbon in March and works at the observatory on the spectrograph";
  const gate_case cases[] = {
      {"trivial \"ok\"", "ok"},
      {"trivial \"Thank you!\"", "Thank you!"},
      {"trivial emoji", "\xf0\x9f\x91\x8d\xf0\x9f\x8e\x89"},
      {"too short \"Paris\"", "Paris"},
      {"low info \"ha ha ha ha\"", "ha ha ha ha"},
      {"sentence (13 words)", sentence},
      {"CJK sentence (12 chars)", "\xe7\x88\xb1\xe4\xb8\xbd\xe4\xb8\x9d\xe4\xb8\x89\xe6\x9c\x88"
                                  "\xe6\x90\xac\xe5\x88\xb0\xe4\xba\x86\xe9\x87\x8c\xe6\x96\xaf"
                                  "\xe6\x9c\xac\xe3\x80\x82"},
      {"paragraph (~130 words)", paragraph},
  };
  printf("%-28s %8s %10s %10s\n", "write gate", "bytes", "ns/call", "reason");
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    life_gate_result r;
    life_gate(NULL, cases[c].text, strlen(cases[c].text), &r);
    double s = time_gate(cases[c].text, reps, 200000);
    printf("%-28s %8zu %10.1f %10s\n", cases[c].name, strlen(cases[c].text), s * 1e9,
           life_reason_name(r.reason));
  }

  /* strategies and importance: dim 384, 8 recent embeddings, 100 working */
  enum { DIM = 384, RECENT = 8, WORKING = 100 };
  uint64_t seed = 20261129;
  float *emb = malloc(DIM * sizeof *emb), *recent = malloc((size_t)RECENT * DIM * sizeof *recent),
        *working = malloc((size_t)WORKING * DIM * sizeof *working);
  fill(emb, DIM, &seed);
  fill(recent, (size_t)RECENT * DIM, &seed);
  fill(working, (size_t)WORKING * DIM, &seed);
  life_gate_result g;
  life_gate(NULL, sentence, strlen(sentence), &g);
  printf("\n%-44s %10s\n", "strategy / importance (dim 384)", "ns/call");
  const struct {
    const char *name;
    life_strategy s;
    int gate;
  } strat[] = {{"every_exchange (gate included)", LIFE_EVERY_EXCHANGE, 1},
               {"semantic_shift, 8 recent (gate included)", LIFE_SEMANTIC_SHIFT, 1},
               {"semantic_shift, 8 recent (decision only)", LIFE_SEMANTIC_SHIFT, 0}};
  for (size_t c = 0; c < sizeof strat / sizeof *strat; c++) {
    double *t = malloc((size_t)reps * sizeof *t);
    int iters = 100000;
    for (int rep = 0; rep < reps; rep++) {
      double t0 = now(), d;
      for (int i = 0; i < iters; i++) {
        if (strat[c].gate) life_gate(NULL, sentence, sizeof sentence - 1, &g);
        sink += life_should_save(strat[c].s, &g, emb, recent, RECENT, DIM, LIFE_SHIFT_THRESHOLD, &d);
      }
      t[rep] = (now() - t0) / iters;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%-44s %10.1f\n", strat[c].name, t[reps / 2] * 1e9);
    free(t);
  }
  {
    double *t = malloc((size_t)reps * sizeof *t);
    int iters = 20000;
    for (int rep = 0; rep < reps; rep++) {
      double t0 = now();
      for (int i = 0; i < iters; i++) sink += life_importance(emb, working, WORKING, DIM, &g, LIFE_W_NOVELTY);
      t[rep] = (now() - t0) / iters;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("%-44s %10.1f\n", "importance, 100 working embeddings", t[reps / 2] * 1e9);
    free(t);
  }

  /* the decay score over 1M records */
  enum { NREC = 1000000 };
  life_record *recs = malloc((size_t)NREC * sizeof *recs);
  const int64_t tnow = 1800000000;
  for (size_t i = 0; i < NREC; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    recs[i] = (life_record){.has_importance = (seed >> 60) != 0,
                            .importance = (double)((seed >> 20) & 1023) / 1023.0,
                            .has_ts = 1,
                            .ts = tnow - (int64_t)((seed >> 8) % (365 * 86400)),
                            .access_count = (int64_t)((seed >> 40) % 50),
                            .has_last_access = (seed & 1) != 0,
                            .last_access = tnow - (int64_t)((seed >> 30) % (30 * 86400))};
  }
  life_score_opts so;
  life_score_opts_default(&so);
  double *t = malloc((size_t)reps * sizeof *t);
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now(), acc = 0;
    for (size_t i = 0; i < NREC; i++) acc += life_score(&so, &recs[i], tnow, NULL);
    t[rep] = (now() - t0) / NREC;
    sink += acc;
  }
  qsort(t, (size_t)reps, sizeof *t, cmp_double);
  printf("\n%-44s %10.1f\n", "decay score per record (1M records)", t[reps / 2] * 1e9);
  free(t);
  free(recs);
  free(emb);
  free(recent);
  free(working);
  return 0;
}
