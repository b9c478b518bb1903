"""Multi-modal search (seed 002, "Multi-modal Search"): N records, each with
a 384-d text embedding (the store's `embedding`) and one embedding of its
primary modality, cycling image / audio / video (declared vector columns
`image`, `audio`, `video`; a record has one of them, the others NULL).

  /usr/bin/python3 bench/bench_multimodal.py [--sizes 1000,10000] [--queries 200]

run from the build directory (./h5mem.so).  Cross-modal:
vec_search(..., '{"columns": ["embedding", "image", "audio", "video"], "exact": true}')
scores every embedding of every record (2N vectors) and ranks each record
by its best; one modality: '{"column": "image"}' (N/3 vectors).  k = 10,
cosine: exact scans (index=flat, float32 and float16 columns), and the
columns' HNSW graphs (index=hnsw, float32, ef 128).  Every result is checked against numpy's exact float64 ranking of
the float32 data (the share of the top 10 it agrees on is printed; float16
rounds the stored vectors, so it may differ where two distances are within
its rounding).  Data from a fixed seed (unit vectors around 100 centres,
as bench_search.py).  Seed 002's own figures (its machine, its run) are
quoted in BENCHMARKS.md, not measured here.
"""
import argparse
import os
import platform
import sqlite3
import statistics
import tempfile
import time

import numpy as np

from benchutil import centres, clustered, pct, git_commit

BUILD = os.getcwd()
SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXT = os.path.join(BUILD, "h5mem")
DIM = 384
MODS = ("image", "audio", "video")


def cosd(M, q):
    M = M.astype(np.float64)
    q = q.astype(np.float64)
    return 1 - M @ q / (np.linalg.norm(M, axis=1) * np.linalg.norm(q))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--queries", type=int, default=200)
    a = ap.parse_args()
    commit = git_commit(SRCDIR)
    d = tempfile.mkdtemp(prefix="bench_mm_")
    print("# %s, commit %s, %s, SQLite %s; %d queries, k = 10, cosine, exact scans" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), sqlite3.sqlite_version, a.queries))
    print()
    print("| N | search | vectors scored | storage, index | p50 us | p99 us | top-10 agreement with numpy (float32 data) |")
    print("|---|---|---|---|---|---|---|")
    for n in [int(x) for x in a.sizes.split(",")]:
        rng = np.random.default_rng(7)
        c = centres(rng, DIM)
        text, modv, qs = clustered(rng, c, n), clustered(rng, c, n), clustered(rng, c, a.queries)
        kind = np.arange(n) % 3
        # numpy's answers
        want_cross, want_img = [], []
        for q in qs:
            best = np.minimum(cosd(text, q), cosd(modv, q))
            want_cross.append(list(np.argsort(best, kind="stable")[:10] + 1))
            di = cosd(modv, q)
            di[kind != 0] = np.inf
            want_img.append(list(np.argsort(di, kind="stable")[:10] + 1))
        for storage, index in (("float32", "flat"), ("float16", "flat"), ("float32", "hnsw")):
            db = sqlite3.connect(":memory:", isolation_level=None)
            db.enable_load_extension(True)
            db.load_extension(EXT)
            fn = os.path.join(d, "mm_%d_%s_%s.h5" % (n, storage, index))
            cols = ", ".join("%s %s[%d] distance_metric=cosine" % (m, storage, DIM) for m in MODS)
            db.execute("CREATE VIRTUAL TABLE mm USING h5mem(path='%s', dim=%d, storage=%s, metric=cosine, %s, "
                       "index=%s, sync=off)" % (fn, DIM, storage, cols, index))
            db.execute("BEGIN")
            for i in range(n):
                vals = [None, None, None]
                vals[kind[i]] = modv[i].tobytes()
                db.execute("INSERT INTO mm(id, embedding, image, audio, video) VALUES (?, ?, ?, ?, ?)",
                           (i + 1, text[i].tobytes(), *vals))
            db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('mm')")
            exact = ', "exact": true' if index == "flat" else ', "ef": 128'
            for label, opts, want, nvec in (
                    ("cross-modal", '{"columns": ["embedding", "image", "audio", "video"]%s}' % exact,
                     want_cross, "2N" if index == "flat" else "graphs"),
                    ("one modality (image)", '{"column": "image"%s}' % exact, want_img,
                     "N/3" if index == "flat" else "graph")):
                sql = "SELECT id FROM vec_search('mm', ?, 10, '%s')" % opts
                for q in qs[:3]:
                    db.execute(sql, (q.tobytes(),)).fetchall()
                ts, agree = [], []
                for q, w in zip(qs, want):
                    t0 = time.perf_counter()
                    got = [r[0] for r in db.execute(sql, (q.tobytes(),)).fetchall()]
                    ts.append(time.perf_counter() - t0)
                    agree.append(len(set(got) & set(w)) / 10)
                print("| %s | %s | %s | %s, index=%s | %.1f | %.1f | %.4f |" % (
                    "{:,}".format(n), label, nvec, storage, index, statistics.median(ts) * 1e6, pct(ts, 99) * 1e6,
                    float(np.mean(agree))))
            db.close()


if __name__ == "__main__":
    main()
