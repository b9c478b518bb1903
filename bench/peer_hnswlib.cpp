// bench/peer_hnswlib.cpp - hnswlib (Debian libhnswlib-dev, header-only) on
// the files bench/bench_ann.py writes; the same arguments and output as
// bench/bench_ann.c, so the two run side by side on the same data.  A
// benchmark peer only: never part of h5mem.
//
//   peer_hnswlib base.f32 queries.f32 gt.i32 dim metric M efc threads ef,ef,... [seed=N]
//
// metric: l2 (L2Space) or dot (InnerProductSpace, 1 - dot).  The build on
// `threads` threads hands out rows through an atomic counter, as hnswlib's
// own Python binding does; searches run one query at a time on one thread.
// seed=N: hnswlib's random_seed (its level generator; default 100).
#include <hnswlib/hnswlib.h>

#include "passes.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

template <class T>
static std::vector<T> slurp(const char *path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

int main(int argc, char **argv) {
  size_t seed = 100;
  int npass = 1;
  for (int a = 10; a < argc; a++)
    if (!std::strncmp(argv[a], "seed=", 5))
      seed = std::strtoull(argv[a] + 5, nullptr, 10);
    else if (!std::strncmp(argv[a], "passes=", 7))
      npass = std::max(1, std::atoi(argv[a] + 7));
    else
      argc = 0;
  if (argc < 10) {
    std::fprintf(stderr, "usage: peer_hnswlib base queries gt dim metric M efc threads ef,... [seed=N] [passes=N]\n");
    return 2;
  }
  const int K = 10;
  int dim = std::atoi(argv[4]), M = std::atoi(argv[6]), efc = std::atoi(argv[7]),
      threads = std::atoi(argv[8]);
  std::vector<float> base = slurp<float>(argv[1]), qs = slurp<float>(argv[2]);
  std::vector<int32_t> gt = slurp<int32_t>(argv[3]);
  size_t n = base.size() / dim, nq = std::min(qs.size() / dim, gt.size() / K);
  hnswlib::SpaceInterface<float> *space;
  if (!std::strcmp(argv[5], "l2"))
    space = new hnswlib::L2Space(dim);
  else
    space = new hnswlib::InnerProductSpace(dim);
  auto *h = new hnswlib::HierarchicalNSW<float>(space, n, M, efc, seed);
  double t0 = now();
  if (threads <= 1) {
    for (size_t i = 0; i < n; i++) h->addPoint(base.data() + i * dim, i);
  } else {
    std::atomic<size_t> next(0);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
      ts.emplace_back([&] {
        for (size_t i; (i = next++) < n;) h->addPoint(base.data() + i * dim, i);
      });
    for (auto &t : ts) t.join();
  }
  std::printf("build %d %.3f\n", threads, now() - t0);
  std::fflush(stdout);
  std::vector<double> lat(nq);
  std::stringstream efs(argv[9]);
  std::string tok;
  while (std::getline(efs, tok, ',')) {
    int ef = std::atoi(tok.c_str());
    h->setEf(ef);
    for (size_t i = 0; i < nq && i < 20; i++) h->searchKnn(qs.data() + i * dim, K);
    // npass passes over the queries, as bench_ann: the best, then the first's QPS
    bench_passes bp = {0, 0, 0, 0};
    long hits = 0;
    for (int ps = 0; ps < npass; ps++) {
      double total = 0;
      hits = 0;
      for (size_t i = 0; i < nq; i++) {
        double a = now();
        auto res = h->searchKnn(qs.data() + i * dim, K);
        lat[i] = now() - a;
        total += lat[i];
        while (!res.empty()) {
          size_t id = res.top().second;
          res.pop();
          for (int t = 0; t < K; t++) hits += (int32_t)id == gt[i * K + t];
        }
      }
      bench_pass_add(&bp, ps, lat.data(), nq, total);
    }
    std::printf("search %d %.4f %.0f %.1f %.1f %.0f\n", ef, (double)hits / (nq * K), bp.best,
                bp.p50 * 1e6, bp.p99 * 1e6, bp.first);
    std::fflush(stdout);
  }
  delete h;
  delete space;
  return 0;
}
