"""HDF5 files as SQL: the h5 virtual table against h5py + numpy, same run,
same files.

  /usr/bin/python3 bench/bench_h5sql.py [--reps N] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  Workloads (issue 4):

1. sum of a 1M-row float32 dataset: `SELECT sum(value) FROM t` against
   `f['x'][:].sum(dtype=float64)` (h5py reads the whole dataset, numpy adds),
   contiguous and chunked + deflate; beside it, the same sum over an
   ordinary SQLite table, the floor of any row-at-a-time SQL.
2. a range read touching one chunk of a chunked, deflated dataset of 1M and
   of 10M rows: `SELECT sum(value) FROM t WHERE i BETWEEN a AND a + 99` at
   random a, against `ds[a:a+100].sum()`; the time should not depend on the
   dataset's size.
3. export of 1M rows (id int64, score float32, name text) from an SQLite
   table: `INSERT INTO out SELECT ...` into a new .h5 file, against fetching
   the rows with Python's sqlite3 and writing them with h5py (compound
   dataset, the same layout and chunking).

Each figure is the median of --reps runs (files are in the page cache after
the first run of each side; both sides see the same cache).
"""
import argparse
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import tempfile
import time

import h5py
import numpy as np

BUILD = os.getcwd()


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(os.path.join(BUILD, "h5mem"))
    return db


def med(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def q(s):
    return "'" + s.replace("'", "''") + "'"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="bench_h5sql_")
    rng = np.random.default_rng(1)
    try:
        commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except OSError:
        commit = "?"
    print("# %s, commit %s, %s, h5py %s, numpy %s, SQLite %s" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), h5py.__version__, np.__version__,
        sqlite3.sqlite_version))
    print("# median of %d runs; files in %s" % (a.reps, d))

    # 1. sum over 1M float32
    n = 1_000_000
    x = rng.standard_normal(n).astype("<f4")
    fn = os.path.join(d, "sum.h5")
    with h5py.File(fn, "w") as f:
        f.create_dataset("contig", data=x)
        f.create_dataset("chunked", data=x, chunks=(65536,), compression="gzip", compression_opts=4)
    db = connect()
    db.execute("CREATE TABLE plain(value REAL)")
    db.executemany("INSERT INTO plain VALUES (?)", ((float(v),) for v in x))
    print("\n## 1. sum of 1,000,000 float32\n")
    print("| layout | h5mem SQL ms | h5py+numpy ms | SQL / numpy | ordinary SQLite table ms |")
    print("|---|---|---|---|---|")
    base = med(lambda: db.execute("SELECT sum(value) FROM plain").fetchone(), a.reps)
    for name in ("contig", "chunked"):
        db.execute("CREATE VIRTUAL TABLE %s USING h5(file=%s, dataset='/%s')" % (name, q(fn), name))
        s_sql = db.execute("SELECT sum(value) FROM %s" % name).fetchone()[0]
        with h5py.File(fn, "r") as f:
            s_np = float(f[name][:].sum(dtype=np.float64))
        assert abs(s_sql - s_np) <= 1e-6 * max(1.0, abs(s_np)), (s_sql, s_np)
        t_sql = med(lambda: db.execute("SELECT sum(value) FROM %s" % name).fetchone(), a.reps)

        def np_sum():
            with h5py.File(fn, "r") as f:
                return f[name][:].sum(dtype=np.float64)
        t_np = med(np_sum, a.reps)
        print("| %s | %.1f | %.1f | %.1fx | %.1f |" % (name, t_sql * 1e3, t_np * 1e3, t_sql / t_np, base * 1e3))

    # 2. a range inside one chunk, 1M vs 10M rows
    print("\n## 2. `WHERE i BETWEEN a AND a+99`, one chunk of 65,536 rows, deflate 4\n")
    print("| rows | h5mem SQL µs/query | h5py µs/query |")
    print("|---|---|---|")
    for rows in (1_000_000, 10_000_000):
        fr = os.path.join(d, "range%d.h5" % rows)
        with h5py.File(fr, "w") as f:
            ds = f.create_dataset("x", shape=(rows,), dtype="<f4", chunks=(65536,), compression="gzip",
                                  compression_opts=4)
            step = 1 << 20
            for s in range(0, rows, step):
                m = min(step, rows - s)
                ds[s:s + m] = np.arange(s, s + m, dtype="<f4")
        t = "r%d" % rows
        db.execute("CREATE VIRTUAL TABLE %s USING h5(file=%s, dataset='/x')" % (t, q(fr)))
        r = random.Random(7)
        starts = []
        while len(starts) < 200:  # ranges inside one chunk
            s = r.randrange(0, rows - 100)
            if s // 65536 == (s + 99) // 65536:
                starts.append(s)
        qs = "SELECT sum(value) FROM %s WHERE i BETWEEN ? AND ?" % t
        for s in starts[:5]:
            assert db.execute(qs, (s, s + 99)).fetchone()[0] == float(sum(np.arange(s, s + 100, dtype="<f4").astype(np.float64)))

        def sql_run():
            for s in starts:
                db.execute(qs, (s, s + 99)).fetchone()
        f = h5py.File(fr, "r")
        ds = f["x"]

        def h5_run():
            for s in starts:
                ds[s:s + 100].sum()
        t_sql = med(sql_run, a.reps) / len(starts)
        t_h5 = med(h5_run, a.reps) / len(starts)
        f.close()
        print("| %s | %.0f | %.0f |" % ("{:,}".format(rows), t_sql * 1e6, t_h5 * 1e6))

    # 3. export 1M rows
    print("\n## 3. export of 1,000,000 rows (id int64, score float32, name text)\n")
    src = connect()
    src.execute("CREATE TABLE src(id INTEGER, score REAL, name TEXT)")
    ids = np.arange(n, dtype=np.int64)
    scores = rng.standard_normal(n).astype("<f4")
    src.executemany("INSERT INTO src VALUES (?, ?, ?)",
                    ((int(i), float(s), "name-%d" % i) for i, s in zip(ids, scores)))
    chunk = 16384

    def sql_export():
        out = os.path.join(d, "out_sql.h5")
        if os.path.exists(out):
            os.remove(out)
        src.execute("DROP TABLE IF EXISTS out")
        src.execute("CREATE VIRTUAL TABLE out USING h5(file=%s, dataset='/results', "
                    "schema='id int64, score float32, name text', chunk=%d)" % (q(out), chunk))
        src.execute("INSERT INTO out(id, score, name) SELECT id, score, name FROM src")
        src.commit()

    def h5py_export():
        out = os.path.join(d, "out_h5py.h5")
        rows = src.execute("SELECT id, score, name FROM src").fetchall()
        dt = np.dtype([("id", "<i8"), ("score", "<f4"), ("name", h5py.string_dtype())])
        arr = np.array(rows, dtype=dt)
        with h5py.File(out, "w") as f:
            f.create_dataset("results", data=arr, chunks=(chunk,), maxshape=(None,))
    t_sql = med(sql_export, a.reps)
    t_h5 = med(h5py_export, a.reps)
    with h5py.File(os.path.join(d, "out_sql.h5"), "r") as f:
        r = f["results"]
        assert r.shape == (n,) and int(r[n - 1]["id"]) == n - 1
        assert r[12345]["name"].decode() == "name-12345"
    print("| h5mem `INSERT INTO out SELECT` s | sqlite3 fetchall + numpy + h5py s | ratio |")
    print("|---|---|---|")
    print("| %.2f | %.2f | %.2fx |" % (t_sql, t_h5, t_sql / t_h5))
    print("\nfile sizes: h5mem %.1f MB, h5py %.1f MB" % (
        os.path.getsize(os.path.join(d, "out_sql.h5")) / 1e6,
        os.path.getsize(os.path.join(d, "out_h5py.h5")) / 1e6))


if __name__ == "__main__":
    main()
