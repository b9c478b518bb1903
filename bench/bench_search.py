"""Exact vector search: h5mem's vec_search against sqlite-vec v0.1.9's
brute-force KNN (vec0), same process, same data, same queries.

  /usr/bin/python3 bench/bench_search.py [--sizes 10000,100000] [--queries 200]

run from the build directory (./h5mem.so; sqlite-vec from
test/interop/node_modules/sqlite-vec-linux-x64, which `make check` installs).
Data as in seed 002: 384-d unit vectors, 100 cluster centres plus noise;
queries drawn the same way; k = 10, cosine distance.  h5mem stores float32
(and, in a second row, float16) in its .h5 file, read in place; vec0 keeps
float32 in its SQLite shadow tables (an in-memory database here).
"""
import argparse
import os
import platform
import sqlite3
import statistics
import subprocess
import tempfile
import time

import numpy as np

from benchutil import centres, clustered, pct

BUILD = os.getcwd()
SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(BUILD, "h5mem")
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")
DIM = 384


def data(n, nq, seed=2):
    rng = np.random.default_rng(seed)
    c = centres(rng, DIM)
    return clustered(rng, c, n), clustered(rng, c, nq)


def timed(fn, queries):
    ts, out = [], []
    for qv in queries:
        t0 = time.perf_counter()
        out.append(fn(qv))
        ts.append(time.perf_counter() - t0)
    return ts, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, cwd=SRCDIR).stdout.strip()
    d = tempfile.mkdtemp(prefix="bench_search_")
    print("# %s, commit %s, %s, SQLite %s; %d queries, k = 10, cosine" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), sqlite3.sqlite_version, a.queries))
    print()
    print("| N | engine | storage | QPS | p50 ms | p99 ms | speed-up vs sqlite-vec (p50) | top-10 agreement with sqlite-vec |")
    print("|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in a.sizes.split(",")]:
        xs, qs = data(n, a.queries)
        db = sqlite3.connect(":memory:", isolation_level=None)
        db.enable_load_extension(True)
        db.load_extension(EXT)
        db.load_extension(VEC0)
        db.execute("CREATE VIRTUAL TABLE v USING vec0(embedding float[%d] distance_metric=cosine)" % DIM)
        db.execute("BEGIN")
        db.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)", ((i + 1, xs[i].tobytes()) for i in range(n)))
        db.execute("COMMIT")
        vq = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND k = 10"
        for qv in qs[:3]:
            db.execute(vq, (qv.tobytes(),)).fetchall()  # warm
        vt, vres = timed(lambda qv: db.execute(vq, (qv.tobytes(),)).fetchall(), qs)
        vp50 = statistics.median(vt)
        print("| %s | sqlite-vec 0.1.9 vec0 | float32 | %.0f | %.2f | %.2f | 1.0x | - |" % (
            "{:,}".format(n), len(qs) / sum(vt), vp50 * 1e3, pct(vt, 99) * 1e3))
        for storage in ("float32", "float16"):
            fn = os.path.join(d, "s_%d_%s.h5" % (n, storage))
            db.execute("CREATE VIRTUAL TABLE m_%s USING h5mem(path='%s', dim=%d, storage=%s, sync=off)" % (storage, fn, DIM, storage))
            db.execute("BEGIN")
            db.executemany("INSERT INTO m_%s(id, embedding) VALUES (?, ?)" % storage, ((i + 1, xs[i].tobytes()) for i in range(n)))
            db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('m_%s')" % storage)
            hq = "SELECT id, distance FROM vec_search('m_%s', ?, 10)" % storage
            for qv in qs[:3]:
                db.execute(hq, (qv.tobytes(),)).fetchall()
            ht, hres = timed(lambda qv: db.execute(hq, (qv.tobytes(),)).fetchall(), qs)
            agree = np.mean([len({r[0] for r in h} & {r[0] for r in v}) / 10 for h, v in zip(hres, vres)])
            hp50 = statistics.median(ht)
            print("| %s | h5mem vec_search (exact) | %s | %.0f | %.2f | %.2f | %.1fx | %.4f |" % (
                "{:,}".format(n), storage, len(qs) / sum(ht), hp50 * 1e3, pct(ht, 99) * 1e3, vp50 / hp50, agree))
        db.close()


if __name__ == "__main__":
    main()
