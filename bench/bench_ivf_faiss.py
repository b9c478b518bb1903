#!/usr/bin/python3
"""bench/bench_ivf_faiss.py - faiss IndexIVFFlat and IndexIVFPQ on the data
bench/bench_ivf wrote with --dump DIR, with the same nlist, m, nprobe and k,
printing the table bench_ivf prints.

    bench/bench_ivf 20000 128 1 --dump /tmp/ivf && bench/bench_ivf_faiss.py /tmp/ivf

Needs Debian's faiss (`apt-get install python3-faiss`) and numpy.  Like
bench_ivf: 20 k-means iterations, at most 256 training rows per list (faiss'
own default cap), searches one query at a time on one thread, train and add
on the threads bench_ivf used.  IVF-PQ is wrapped in IndexRefineFlat with
k_factor = rerank / k, so that it re-scores its best candidates exactly as
ours does.  cosine: rows and queries normalised, inner-product indexes.
Recall is against the exact answers bench_ivf computed (DIR/gt.i32).
"""
import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import faiss
except ImportError:
    sys.exit("bench_ivf_faiss: faiss is not installed (apt-get install python3-faiss)")


def table(index, ivf, queries, gt, k, nlist):
    print("  nprobe  recall@10    p50 us    p99 us")
    nprobe = 1
    while True:
        ivf.nprobe = nprobe
        lat = np.empty(len(queries))
        hits = 0
        for i in range(len(queries)):
            q = queries[i:i + 1]
            t = time.perf_counter()
            _, ids = index.search(q, k)
            lat[i] = (time.perf_counter() - t) * 1e6
            hits += len(np.intersect1d(ids[0], gt[i]))
        lat.sort()
        print("  %6d     %.4f  %8.1f  %8.1f" % (nprobe, hits / (len(queries) * k),
                                                 lat[len(lat) // 2], lat[len(lat) * 99 // 100]))
        if nprobe == nlist:
            break
        nprobe = min(nprobe * 2, nlist)


def build(index, base, threads):
    faiss.omp_set_num_threads(threads)
    t0 = time.perf_counter()
    index.train(base)
    t1 = time.perf_counter()
    index.add(base)
    t2 = time.perf_counter()
    faiss.omp_set_num_threads(1)
    return t1 - t0, t2 - t1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="the directory bench_ivf --dump wrote")
    ap.add_argument("--threads", type=int, help="train/add threads (default: bench_ivf's)")
    a = ap.parse_args()
    with open(os.path.join(a.dir, "meta.json")) as f:
        meta = json.load(f)
    n, dim, nq, k = meta["n"], meta["dim"], meta["nq"], meta["k"]
    nlist, m, rerank, metric = meta["nlist"], meta["m"], meta["rerank"], meta["metric"]
    threads = a.threads or meta["threads"]
    base = np.fromfile(os.path.join(a.dir, "base.f32"), dtype="<f4").reshape(n, dim)
    queries = np.fromfile(os.path.join(a.dir, "queries.f32"), dtype="<f4").reshape(nq, dim)
    gt = np.fromfile(os.path.join(a.dir, "gt.i32"), dtype="<i4").reshape(nq, k)
    if metric == "cosine":
        base, queries = base.copy(), queries.copy()
        faiss.normalize_L2(base)
        faiss.normalize_L2(queries)
    fmetric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    print("faiss %s: n=%d dim=%d %s, %d queries" % (faiss.__version__, n, dim, metric, nq))

    def quantizer():
        return faiss.IndexFlatL2(dim) if fmetric == faiss.METRIC_L2 else faiss.IndexFlatIP(dim)

    q1 = quantizer()
    flat = faiss.IndexIVFFlat(q1, dim, nlist, fmetric)
    flat.cp.niter = 20
    tt, ta = build(flat, base, threads)
    print("\nIndexIVFFlat nlist=%d: train %.2f s, add %.2f s (%d thread%s)"
          % (nlist, tt, ta, threads, "s" if threads > 1 else ""))
    table(flat, flat, queries, gt, k, nlist)

    q2 = quantizer()
    pq = faiss.IndexIVFPQ(q2, dim, nlist, m, 8, fmetric)
    pq.cp.niter = 20
    pq.pq.cp.niter = 20
    refine = faiss.IndexRefineFlat(pq)
    refine.k_factor = max(1.0, rerank / k)
    tt, ta = build(refine, base, threads)
    print("\nIndexIVFPQ nlist=%d m=%d + IndexRefineFlat k_factor=%g: train %.2f s, add %.2f s "
          "(%d thread%s)" % (nlist, m, refine.k_factor, tt, ta, threads,
                             "s" if threads > 1 else ""))
    table(refine, pq, queries, gt, k, nlist)


if __name__ == "__main__":
    main()
