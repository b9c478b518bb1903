"""Keyword and hybrid retrieval (issue 7's benchmark), same process, same data:

  /usr/bin/python3 bench/bench_bm25.py [--sizes 10000,100000] [--hybrid-sizes 1000,10000,100000]
                                        [--queries 200]

run from the build directory (./h5mem.so).

1. bm25: h5mem's bm25('mem', 'a b c', 10) against FTS5 in the same SQLite
   (the one Python links), `SELECT rowid, bm25(f) FROM f WHERE f MATCH
   'a OR b OR c' ORDER BY rank LIMIT 10`, on the same texts: a synthetic
   corpus of conversation turns (Zipf words over a 30,000-word vocabulary,
   5-80 words per turn); 3-term queries drawn from the same distribution
   (so common words with long posting lists come up).  Both are timed one
   query at a time, alternating; the results are compared (ids, and scores
   to 1e-9 relative).  h5mem's store is checkpointed first, so its index is
   the saved image read in place, as after a reopen.
2. hybrid: hybrid('mem', text, vec, 10) p50 and p99 on the same kind of
   texts with 384-d clustered unit vectors (seed 002's data), the store
   made with index=hnsw (int8 walk, ef 64) and checkpointed.
"""
import argparse
import os
import platform
import random
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
SYL = ["ka", "to", "ri", "mo", "ne", "sa", "lu", "pe", "di", "go", "an", "el", "or", "ist", "ven",
       "tra", "bel", "com", "pro", "ment", "ing", "er", "al", "ic"]


def vocab(n, seed=11):
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        w = "".join(rng.choice(SYL) for _ in range(rng.randint(1, 4)))
        if w not in seen:
            seen.add(w)
            out.append(w)
    return out


class Zipf:
    def __init__(self, words, s=1.07, seed=12):
        self.words = words
        w = 1.0 / np.arange(1, len(words) + 1) ** s
        self.cdf = np.cumsum(w / w.sum())
        self.rng = np.random.default_rng(seed)

    def draw(self, m):
        return [self.words[i] for i in np.searchsorted(self.cdf, self.rng.random(m))]


def corpus(n, z, seed=13):
    rng = random.Random(seed)
    return [" ".join(z.draw(rng.randint(5, 80))) for _ in range(n)]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def bench_bm25(n, nq, tmp):
    z = Zipf(vocab(30000))
    texts = corpus(n, z)
    path = os.path.join(tmp, "bm25_%d.h5" % n)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=4, sync=off)" % path)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    t0 = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem(id, text) VALUES (?, ?)", enumerate(texts, 1))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    db.execute("BEGIN")
    db.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", enumerate(texts, 1))
    db.execute("COMMIT")
    t_fts = time.perf_counter() - t0
    db.close()
    db = connect()  # reopened: the saved image, read in place
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % path)
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", enumerate(texts, 1))
    db.execute("COMMIT")
    qz = Zipf(z.words, seed=14)
    queries = [qz.draw(3) for _ in range(nq)]
    ours_sql = "SELECT id, score FROM bm25('mem', ?, 10)"
    fts_sql = "SELECT rowid, -bm25(f) FROM f WHERE f MATCH ? ORDER BY rank, rowid LIMIT 10"
    for qw in queries[:5]:  # warm both
        db.execute(ours_sql, (" ".join(qw),)).fetchall()
        db.execute(fts_sql, (" OR ".join(dict.fromkeys(qw)),)).fetchall()
    to, tf, bad, matches = [], [], 0, 0
    for qw in queries:
        a = " ".join(qw)
        b = " OR ".join(dict.fromkeys(qw))
        t0 = time.perf_counter()
        r1 = db.execute(ours_sql, (a,)).fetchall()
        t1 = time.perf_counter()
        r2 = db.execute(fts_sql, (b,)).fetchall()
        t2 = time.perf_counter()
        to.append(t1 - t0)
        tf.append(t2 - t1)
        matches += db.execute("SELECT count(*) FROM f WHERE f MATCH ?", (b,)).fetchone()[0]
        if [r[0] for r in r1] != [r[0] for r in r2] or any(
                abs(x[1] - y[1]) > 1e-9 * abs(y[1]) for x, y in zip(r1, r2)):
            bad += 1
    db.close()
    return dict(n=n, ins_ours=t_ours, ins_fts=t_fts, p50o=pct(to, 50), p99o=pct(to, 99),
                p50f=pct(tf, 50), p99f=pct(tf, 99), bad=bad, nq=nq, matches=matches / nq,
                size=os.path.getsize(path))


def bench_hybrid(n, nq, tmp):
    z = Zipf(vocab(30000))
    texts = corpus(n, z, seed=15)
    xs, qs = data(n, nq)
    path = os.path.join(tmp, "hyb_%d.h5" % n)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=384, index=hnsw, sync=off)" % path)
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem(id, text, embedding) VALUES (?, ?, ?)",
                   ((i + 1, texts[i], xs[i].tobytes()) for i in range(n)))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % path)
    qz = Zipf(z.words, seed=16)
    qt = [" ".join(qz.draw(3)) for _ in range(nq)]
    sql = "SELECT id, score FROM hybrid('mem', ?, ?, 10)"
    for i in range(5):
        db.execute(sql, (qt[i], qs[i].tobytes())).fetchall()
    ts = []
    for i in range(nq):
        t0 = time.perf_counter()
        db.execute(sql, (qt[i], qs[i].tobytes())).fetchall()
        ts.append(time.perf_counter() - t0)
    db.close()
    return dict(n=n, p50=pct(ts, 50), p99=pct(ts, 99))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--hybrid-sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                            text=True, cwd=SRC).stdout.strip()
    print("# %s, commit %s, %s, SQLite %s (FTS5), %d queries, k = 10" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), sqlite3.sqlite_version, a.queries))
    with tempfile.TemporaryDirectory(prefix="bench_text_") as tmp:
        print()
        print("| N | matches per query | h5mem bm25 p50 ms | p99 ms | FTS5 p50 ms | p99 ms | "
              "speed-up (p50) | results differing | insert+index h5mem s | FTS5 s |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in [int(x) for x in a.sizes.split(",") if x]:
            r = bench_bm25(n, a.queries, tmp)
            print("| %d | %.0f | %.3f | %.3f | %.3f | %.3f | %.1fx | %d of %d | %.2f | %.2f |" % (
                r["n"], r["matches"], r["p50o"] * 1e3, r["p99o"] * 1e3, r["p50f"] * 1e3,
                r["p99f"] * 1e3, r["p50f"] / r["p50o"], r["bad"], r["nq"], r["ins_ours"],
                r["ins_fts"]), flush=True)
        print()
        print("| N | hybrid p50 ms | p99 ms |")
        print("|---:|---:|---:|")
        for n in [int(x) for x in a.hybrid_sizes.split(",") if x]:
            r = bench_hybrid(n, a.queries, tmp)
            print("| %d | %.3f | %.3f |" % (r["n"], r["p50"] * 1e3, r["p99"] * 1e3), flush=True)


if __name__ == "__main__":
    main()
