"""HNSW against hnswlib on the same data in the same run, and filtered
searches through SQL (issue 6's benchmark).

    make bench/bench_ann       # (make bench builds it too)
    /usr/bin/python3 bench/bench_ann.py [--sizes 1000,10000,100000] [--efs 16,32,64,128,256]
                                        [--queries 200] [--filtered 100000]
                                        [--repeat N] [--before PATH] [--seeds 1,2,3] [--efc 64]
                                        [--passes 3]

Run from the build directory.  Data as in seed 002 (bench_search.data):
384-d unit vectors, 100 cluster centres plus noise; ground truth is the
exact top 10 by numpy (dot product = cosine on unit vectors; ties by id).

1. The index alone: bench/bench_ann (lib/ann/hnsw, metric dot; the graph
   walked with the float32 rows, and with their int8 copy as the store
   does by default, candidates re-scored exactly) and
   bench/peer_hnswlib (Debian libhnswlib-dev 0.6.2, InnerProductSpace,
   compiled here with g++ -O3 -march=native) read the same files; M = 16,
   ef_construction = 64; build on 1 and on 2 threads; recall@10, QPS, p50
   and p99 of one query at a time on one thread, per ef: the best of
   --passes N passes over the queries (3; ann-benchmarks keeps the best of
   its runs too), and the first pass's QPS beside.  Why both: h5mem's int8
   walk reads 0.5 KB a row (int8 copy and links) against hnswlib's 1.7 KB
   (float32 row and links), so at 100K rows much more of its index stays in
   the CPU caches from one pass to the next.
   --repeat N: the single-thread runs N times each, in turn (ours, the
   --before binary if any, hnswlib), and the median of each figure: on a
   busy machine the runs of one round see the same conditions.
   --before PATH: another build's bench/bench_ann (e.g. of the commit
   before a change) run on the same files in the same rounds, its columns
   beside ours.
   --seeds S1,S2,..: the graphs' share of recall: single-thread builds of
   ours (hnsw_params.seed) and of hnswlib (random_seed) with each seed,
   recall@10 per ef (int8 walk for ours) and the mean; one build per seed
   and library, so the default run time is unchanged without it.
2. Through SQL (--filtered N): a store with index=hnsw (cosine, float32);
   vec_search with no filter, tier = (50%), session = (10%), source = (1%),
   ts = the cluster farthest from the query; recall@10 against numpy's
   exact filtered top 10, p50 and p99, beside the exact scan of the same
   query ('{"exact": true}').
"""
import argparse
import os
import platform
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_search import data, pct  # noqa: E402

BUILD = os.getcwd()
SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(BUILD, "h5mem")
K = 10


def exact_top(base, qs, k=K):
    out = np.empty((len(qs), k), np.int32)
    for i, qv in enumerate(qs):
        d = -(base @ qv)
        idx = np.argpartition(d, k)[:k + 1] if len(d) > k + 1 else np.arange(len(d))
        o = idx[np.lexsort((idx, d[idx]))][:k]
        out[i] = o
    return out


def peer_binary(tmp):
    if not os.path.exists("/usr/include/hnswlib/hnswlib.h"):
        sys.exit("bench_ann: hnswlib's headers are missing: apt-get install libhnswlib-dev")
    exe = os.path.join(tmp, "peer_hnswlib")
    subprocess.run(["g++", "-O3", "-march=native", "-std=c++17", "-pthread", "-o", exe,
                    os.path.join(SRC, "bench", "peer_hnswlib.cpp")], check=True)
    return exe


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    build, rows, rows8 = None, {}, {}
    for line in out.splitlines():
        f = line.split()
        if f[0] == "build":
            build = float(f[2])
        elif f[0] in ("search", "search_q8"):
            (rows if f[0] == "search" else rows8)[int(f[1])] = tuple(float(x) for x in f[2:7])
    return build, rows, rows8


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def med_rows(results, i):
    """per ef, the median of each figure over the runs (i: 1 f32 walk, 2 int8)"""
    efs = results[0][i].keys()
    return {ef: tuple(median([r[i][ef][j] for r in results]) for j in range(5)) for ef in efs}


def index_alone(sizes, efs, nq, tmp, repeat=1, before=None, seeds=None, efc=64, passes=3):
    peer = peer_binary(tmp)
    ours = os.path.join(BUILD, "bench", "bench_ann")
    for n in sizes:
        base, qs = data(n, nq)
        gt = exact_top(base, qs)
        files = [os.path.join(tmp, x) for x in ("base.f32", "q.f32", "gt.i32")]
        base.tofile(files[0])
        qs.tofile(files[1])
        gt.tofile(files[2])
        args = files + ["384", "dot", "16", str(efc)]
        pa = ["passes=%d" % passes]
        r_o, r_b, r_p = [], [], []
        for _ in range(repeat):  # the commands take turns
            r_o.append(run([ours] + args + ["1", efs, "q8"] + pa))
            if before:
                r_b.append(run([before] + args + ["1", efs, "q8"] + pa))
            r_p.append(run([peer] + args + ["1", efs] + pa))
        b1, p1 = median([r[0] for r in r_o]), median([r[0] for r in r_p])
        r_ours, r_q8, r_peer = med_rows(r_o, 1), med_rows(r_o, 2), med_rows(r_p, 1)
        b2, _, _ = run([ours] + args + ["2", ""])
        p2, _, _ = run([peer] + args + ["2", ""])
        print("\n### N = %d\n" % n)
        print("QPS, p50, p99: the best of %d passes over the queries (as ann-benchmarks), "
              "after 20 warm-up queries%s.\n" % (passes, "; medians of %d runs each, taking turns"
                                                  % repeat if repeat > 1 else ""))
        cols = [("h5mem f32 walk", r_ours), ("h5mem int8 walk", r_q8)]
        if before:
            bb = median([r[0] for r in r_b])
            cols += [("before: f32 walk", med_rows(r_b, 1)), ("before: int8 walk", med_rows(r_b, 2))]
            print("before: %s\n" % before)
        cols.append(("hnswlib", r_peer))
        mid = ("before | ", "---:|", "%.2f s | " % bb, "| ") if before else ("", "", "", "")
        print("| build | h5mem | %shnswlib |\n|---|---:|%s---:|" % mid[:2])
        print("| 1 thread | %.2f s | %s%.2f s |" % (b1, mid[2], p1))
        print("| 2 threads | %.2f s | %s%.2f s |" % (b2, mid[3], p2))
        print("\n| ef |" + "".join(" %s: recall@10 | QPS | p50 us | p99 us |" % c for c, _ in cols))
        print("|---:|" + "---:|" * (4 * len(cols)))
        for ef in sorted(r_ours):
            row = (ef,) + sum((c.get(ef, (0, 0, 0, 0, 0))[:4] for _, c in cols), ())
            print(("| %d" + " | %.4f | %.0f | %.0f | %.0f" * len(cols) + " |") % row)
        print("\nThe first pass alone (caches as the warm-up left them), QPS:\n")
        print("| ef |" + "".join(" %s |" % c for c, _ in cols))
        print("|---:|" + "---:|" * len(cols))
        for ef in sorted(r_ours):
            print(("| %d" + " | %.0f" * len(cols) + " |") % ((ef,) + tuple(
                c.get(ef, (0, 0, 0, 0, 0))[4] for _, c in cols)))
        sys.stdout.flush()
        if seeds:
            graphs(args, efs, seeds, ours, peer)


def graphs(args, efs, seeds, ours, peer):
    """recall@10 per ef of single-thread builds with each seed, both libraries"""
    got = []
    for sd in seeds:
        _, _, r8 = run([ours] + args + ["1", efs, "q8", "seed=%d" % sd])
        _, rp, _ = run([peer] + args + ["1", efs, "seed=%d" % sd])
        got.append((sd, r8, rp))
    efl = sorted(got[0][1])
    print("\nRecall@10 of single-thread builds by seed (h5mem: int8 walk, hnswlib):\n")
    print("| seed |" + "".join(" ef %d h5mem | hnswlib |" % ef for ef in efl))
    print("|---:|" + "---:|---:|" * len(efl))
    for sd, r8, rp in got:
        print("| %d |" % sd + "".join(" %.4f | %.4f |" % (r8[ef][0], rp[ef][0]) for ef in efl))
    print("| mean |" + "".join(" %.4f | %.4f |" % (sum(g[1][ef][0] for g in got) / len(got),
                                                    sum(g[2][ef][0] for g in got) / len(got))
                                for ef in efl))
    sys.stdout.flush()


def filtered(n, nq, tmp):
    base, qs = data(n, nq)
    rng = np.random.default_rng(6)
    # the cluster of each row: its nearest centre is what data() drew from;
    # recover it as the argmax over the centres data() used
    c_rng = np.random.default_rng(2)
    cent = c_rng.standard_normal((100, 384)).astype(np.float32)
    cent /= np.linalg.norm(cent, axis=1, keepdims=True)
    lab = np.argmax(base @ cent.T, axis=1)
    tier = np.where(rng.random(n) < 0.5, "h", "o")
    sess = np.array(["s%d" % x for x in rng.integers(0, 10, n)])
    src = np.array(["p%d" % x for x in rng.integers(0, 100, n)])
    path = os.path.join(tmp, "f.h5")
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=384, index=hnsw, sync=off, "
               "autocheckpoint=1000000000000)" % path)
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem(id, embedding, tier, session, source, ts) VALUES (?, ?, ?, ?, ?, ?)",
                   ((i + 1, base[i].tobytes(), str(tier[i]), str(sess[i]), str(src[i]), int(lab[i]))
                    for i in range(n)))
    db.execute("COMMIT")
    t0 = time.perf_counter()
    db.execute("SELECT h5mem_checkpoint('mem')")
    ckpt = time.perf_counter() - t0
    ids = np.arange(1, n + 1)
    print("\n### Filtered searches through SQL, N = %d\n" % n)
    print("Checkpoint of %d rows into an empty store, graph built and saved: %.1f s.\n" % (n, ckpt))
    print("| filter | share | recall@10 | p50 ms | p99 ms | exact scan p50 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    cases = [("none", "", lambda qv: np.ones(n, bool)),
             ("tier = 'h'", " WHERE tier = 'h'", lambda qv: tier == "h"),
             ("session = 's3'", " WHERE session = 's3'", lambda qv: sess == "s3"),
             ("source = 'p7'", " WHERE source = 'p7'", lambda qv: src == "p7"),
             ("ts = far cluster", None, None)]
    for name, where, maskf in cases:
        rec, lat, lat_x, share = 0.0, [], [], 0.0
        # the exact answers first: numpy between the timed queries would
        # empty the CPU caches the searches run in
        plan = []
        for qv in qs:
            if where is None:
                far = int(np.argmin(cent @ qv))
                w, mask = " WHERE ts = %d" % far, lab == far
            else:
                w, mask = where, maskf(qv)
            share += mask.mean()
            sel = np.nonzero(mask)[0]
            d = -(base[sel] @ qv)
            plan.append((qv, w, set(ids[sel][np.lexsort((ids[sel], d))][:K].tolist()), len(sel)))
        for qv, w, want, nsel in plan:  # (the exact scans apart: they too empty the caches)
            t0 = time.perf_counter()
            got = db.execute("SELECT id FROM vec_search('mem', ?, 10)" + w, (qv.tobytes(),)).fetchall()
            lat.append(time.perf_counter() - t0)
            rec += len(want & {g[0] for g in got}) / min(K, nsel)
        for qv, w, want, nsel in plan:
            t0 = time.perf_counter()
            db.execute("SELECT id FROM vec_search('mem', ?, 10, '{\"exact\": true}')" + w, (qv.tobytes(),)).fetchall()
            lat_x.append(time.perf_counter() - t0)
        print("| %s | %.1f%% | %.4f | %.3f | %.3f | %.3f | %.3f |" % (
            name, 100 * share / len(qs), rec / len(qs), 1e3 * pct(lat, 50), 1e3 * pct(lat, 99),
            1e3 * pct(lat_x, 50), 1e3 * pct(lat_x, 99)))
        sys.stdout.flush()
    db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--efs", default="16,32,64,128,256")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--filtered", type=int, default=100000, help="0: skip")
    ap.add_argument("--repeat", type=int, default=1, help="single-thread runs of each, medians")
    ap.add_argument("--before", help="another build's bench/bench_ann, run beside ours")
    ap.add_argument("--seeds", help="comma-separated level seeds: recall of builds by seed")
    ap.add_argument("--efc", type=int, default=64, help="ef_construction of both libraries")
    ap.add_argument("--passes", type=int, default=3, help="passes over the queries per ef: the best")
    a = ap.parse_args()
    print("h5mem %s, %s, %d CPUs" % (
        subprocess.run(["git", "-C", SRC, "rev-parse", "--short", "HEAD"], capture_output=True,
                       text=True).stdout.strip(), platform.processor() or platform.machine(), os.cpu_count()))
    with tempfile.TemporaryDirectory() as tmp:
        if a.sizes:
            index_alone([int(x) for x in a.sizes.split(",")], a.efs, a.queries, tmp, max(1, a.repeat),
                        a.before, [int(x) for x in a.seeds.split(",")] if a.seeds else None, a.efc,
                        max(1, a.passes))
        if a.filtered:
            filtered(a.filtered, a.queries, tmp)


if __name__ == "__main__":
    main()
