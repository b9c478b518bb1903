"""Filtered vector search: h5mem's KNN form with conditions on declared
columns against sqlite-vec v0.1.9's vec0 with the same metadata and
partition-key columns, same process, same data, same queries.

  /usr/bin/python3 bench/bench_filter.py [--n 100000] [--queries 100]

run from the build directory (./h5mem.so; sqlite-vec from
test/interop/node_modules/sqlite-vec-linux-x64, which `make check` installs).
Data as in bench_search.py (384-d unit vectors, 100 cluster centres plus
noise), k = 10, cosine.  Each record has `bucket integer` uniform in 0..99
and `user_id integer partition key` uniform over 100 users, so `bucket < 1`,
`bucket < 10`, `bucket < 50` keep 1%, 10%, 50% of the records and
`user_id = u` one partition (1%).  Both sides search exactly (h5mem
index=flat, float32 read in place from its .h5 file after a checkpoint;
vec0 brute force over its chunks, an in-memory database), so their ids must
agree; the table prints the share of the top 10 they agree on.
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
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")
DIM = 384


def data(n, nq, seed=2):
    rng = np.random.default_rng(seed)
    c = centres(rng, DIM)
    xs, qs = clustered(rng, c, n), clustered(rng, c, nq)
    return xs, qs, rng.integers(0, 100, n), rng.integers(0, 100, n), rng.integers(0, 100, nq)


def timed(db, sql, args):
    ts, out = [], []
    for a in args:
        t0 = time.perf_counter()
        out.append(db.execute(sql, a).fetchall())
        ts.append(time.perf_counter() - t0)
    return ts, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=100)
    a = ap.parse_args()
    commit = git_commit(SRCDIR)
    d = tempfile.mkdtemp(prefix="bench_filter_")
    n = a.n
    xs, qs, bucket, user, quser = data(n, a.queries)
    print("# %s, commit %s, %s, SQLite %s; N = %s, %d queries, k = 10, cosine, exact on both sides" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), sqlite3.sqlite_version, "{:,}".format(n),
        a.queries))
    print()
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.load_extension(VEC0)
    db.execute("CREATE VIRTUAL TABLE v USING vec0(user_id integer partition key, bucket integer, "
               "embedding float[%d] distance_metric=cosine)" % DIM)
    fn = os.path.join(d, "f.h5")
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', embedding float[%d] distance_metric=cosine, "
               "user_id integer partition key, bucket integer, sync=off)" % (fn, DIM))
    rows = [(i + 1, int(user[i]), int(bucket[i]), xs[i].tobytes()) for i in range(n)]
    db.execute("BEGIN")
    db.executemany("INSERT INTO v(rowid, user_id, bucket, embedding) VALUES (?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO m(id, user_id, bucket, embedding) VALUES (?, ?, ?, ?)", rows)
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('m')")
    cases = [("bucket < 1 (1%)", "bucket < 1", None), ("bucket < 10 (10%)", "bucket < 10", None),
             ("bucket < 50 (50%)", "bucket < 50", None), ("no filter", None, None),
             ("user_id = u (partition, 1%)", "user_id = ?", "user")]
    print("| filter | engine | QPS | p50 ms | p99 ms | speed-up vs vec0 (p50) | top-10 agreement |")
    print("|---|---|---|---|---|---|---|")
    for label, cond, extra in cases:
        where = " AND " + cond if cond else ""
        args = [(qv.tobytes(), int(quser[i])) if extra else (qv.tobytes(),) for i, qv in enumerate(qs)]
        res = {}
        times = {}
        for name, table, col in (("sqlite-vec 0.1.9 vec0", "v", "rowid"), ("h5mem (KNN form)", "m", "id")):
            sql = "SELECT %s, distance FROM %s WHERE embedding MATCH ? AND k = 10%s" % (col, table, where)
            for x in args[:3]:
                db.execute(sql, x).fetchall()  # warm
            ts, out = timed(db, sql, args)
            res[name], times[name] = out, ts
        vp50 = statistics.median(times["sqlite-vec 0.1.9 vec0"])
        for name in res:
            ts = times[name]
            agree = np.mean([len({r[0] for r in h} & {r[0] for r in v}) / max(1, len(v))
                             for h, v in zip(res[name], res["sqlite-vec 0.1.9 vec0"])])
            p50 = statistics.median(ts)
            print("| %s | %s | %.0f | %.2f | %.2f | %.1fx | %.4f |" % (
                label, name, len(ts) / sum(ts), p50 * 1e3, pct(ts, 99) * 1e3, vp50 / p50, agree))
    db.close()


if __name__ == "__main__":
    main()
