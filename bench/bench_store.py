"""The memory store (the h5mem table): write latency, throughput,
checkpoints, open time, file size and memory, as issue 5 asks.

  /usr/bin/python3 bench/bench_store.py [--max 1000000] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  Records: 384-d
embeddings (random unit vectors) stored as float16, ~200 characters of
English text (sentences of the licence texts in /usr/share/common-licenses),
source/session/tags/meta filled in.  Everything goes through Python's
sqlite3, so each figure includes the Python and SQLite call overhead of one
statement.  Files are in the page cache (warm) unless noted.
"""
import argparse
import glob
import os
import platform
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

BUILD = os.getcwd()
EXT = os.path.join(BUILD, "h5mem")
DIM = 384


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(s):
    return "'" + s.replace("'", "''") + "'"


def texts():
    words = []
    for fn in sorted(glob.glob("/usr/share/common-licenses/*")):
        try:
            with open(fn, encoding="utf-8", errors="ignore") as fh:
                words += fh.read().split()
        except (IsADirectoryError, PermissionError):
            pass
    if len(words) < 1000:
        words = ("the quick brown fox jumps over the lazy dog " * 200).split()
    out, i = [], 0
    while len(out) < 5000:
        t = []
        while sum(len(w) + 1 for w in t) < 200:
            t.append(words[i % len(words)])
            i += 1
        out.append(" ".join(t))
    return out


class Rows:
    def __init__(self, seed=1):
        self.rng = np.random.default_rng(seed)
        self.texts = texts()

    def batch(self, start, n):
        e = self.rng.standard_normal((n, DIM)).astype("<f4")
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        return [(start + k, self.texts[(start + k) % len(self.texts)], e[k].tobytes(),
                 "user" if k % 2 else "agent", "s%d" % ((start + k) // 100), "tag%d" % (k % 7),
                 1700000000 + start + k, '{"n": %d}' % (start + k)) for k in range(n)]


INS = "INSERT INTO mem(id, text, embedding, source, session, tags, ts, meta) VALUES (?,?,?,?,?,?,?,?)"


def create(path, sync="full"):
    for f in (path, path + "-wal"):
        if os.path.exists(f):
            os.remove(f)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, storage=float16, sync=%s)" % (q(path), DIM, sync))
    return db


def fill(db, rows, n, start=1, batch=20000):
    for s in range(start, start + n, batch):
        m = min(batch, start + n - s)
        db.execute("BEGIN")
        db.executemany(INS, rows.batch(s, m))
        db.execute("COMMIT")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


MEM_CHILD = r'''
import sqlite3, sys, time
def rss():
    for l in open("/proc/self/status"):
        if l.startswith("VmRSS:"):
            return int(l.split()[1]) / 1024
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
r0 = rss()
t0 = time.perf_counter()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % sys.argv[2].replace("'", "''"))
n = db.execute("SELECT count(*) FROM mem").fetchone()[0]
t1 = time.perf_counter()
r1 = rss()
db.execute("SELECT sum(length(embedding)) FROM mem").fetchone()
r2 = rss()
print(n, (t1 - t0) * 1e3, r1 - r0, r2 - r0)
'''


def reopen_stats(path):
    """(records, open ms, RSS MiB after open, after reading every embedding) in a fresh process."""
    out = subprocess.run([sys.executable, "-c", MEM_CHILD, EXT, path], capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), float(out[1]), float(out[2]), float(out[3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=int, default=1_000_000)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="bench_store_")
    commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    print("# %s, commit %s, %s, SQLite %s, Python %s; files in %s" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), sqlite3.sqlite_version, platform.python_version(), d))
    rows = Rows()

    print("\n## single-record INSERT (autocommit), 384-d float16 + ~200 chars\n")
    print("| sync | n | median µs | p99 µs |")
    print("|---|---|---|---|")
    for sync, n in (("off", 2000), ("normal", 2000), ("full", 300)):
        path = os.path.join(d, "single_%s.h5" % sync)
        db = create(path, sync)
        data = rows.batch(1, n)
        ts = []
        for r in data:
            t0 = time.perf_counter()
            db.execute(INS, r)
            ts.append(time.perf_counter() - t0)
        print("| %s | %d | %.1f | %.1f |" % (sync, n, statistics.median(ts) * 1e6, pct(ts, 99) * 1e6))
        db.close()

    print("\n## batch INSERT, one transaction (sync=full)\n")
    print("| records | ms | records/s |")
    print("|---|---|---|")
    for n in (1000, 100_000):
        path = os.path.join(d, "batch_%d.h5" % n)
        db = create(path)
        data = rows.batch(1, n)
        t0 = time.perf_counter()
        db.execute("BEGIN")
        db.executemany(INS, data)
        db.execute("COMMIT")
        t = time.perf_counter() - t0
        print("| %s | %.1f | %s |" % ("{:,}".format(n), t * 1e3, "{:,.0f}".format(n / t)))
        db.close()

    print("\n## checkpoint of 1,000 new records into a store of N (sync=full), and of a whole 100K store\n")
    print("| N | checkpoint ms | file grew by MiB |")
    print("|---|---|---|")
    for n in (10_000, 100_000):
        path = os.path.join(d, "ckpt_%d.h5" % n)
        db = create(path)
        fill(db, rows, n)
        db.execute("SELECT h5mem_checkpoint('mem')")
        size0 = os.path.getsize(path)
        db.execute("BEGIN")
        db.executemany(INS, rows.batch(n + 1, 1000))
        db.execute("COMMIT")
        t0 = time.perf_counter()
        db.execute("SELECT h5mem_checkpoint('mem')")
        t = time.perf_counter() - t0
        print("| %s | %.1f | %.2f |" % ("{:,}".format(n), t * 1e3, (os.path.getsize(path) - size0) / 2**20))
        db.close()
    # the seeds' figure is the checkpoint that writes a whole 100K store
    path = os.path.join(d, "ckpt_full.h5")
    for f in (path, path + "-wal"):
        if os.path.exists(f):
            os.remove(f)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, storage=float16, autocheckpoint=1099511627776)" % (q(path), DIM))
    fill(db, rows, 100_000)
    t0 = time.perf_counter()
    db.execute("SELECT h5mem_checkpoint('mem')")
    t = time.perf_counter() - t0
    print("| 0 (100,000 new records: the whole store) | %.1f | %.2f |" % (t * 1e3, os.path.getsize(path) / 2**20))
    db.close()

    print("\n## open, file size and memory of a reopened store (fresh process)\n")
    print("| N | open ms | file MiB | bytes / record | embeddings MiB | RSS after open MiB | RSS after reading every embedding MiB | RSS / embeddings |")
    print("|---|---|---|---|---|---|---|---|")
    sizes = [n for n in (1000, 10_000, 100_000, 1_000_000) if n <= a.max]
    path = os.path.join(d, "open.h5")
    db = create(path, "off")
    have = 0
    for n in sizes:
        fill(db, rows, n - have, start=have + 1, batch=50000)
        have = n
        db.close()  # checkpoints
        opens = [reopen_stats(path) for _ in range(3)]
        cnt, ms, r1, r2 = min(opens, key=lambda x: x[1])
        assert cnt == n, (cnt, n)
        fsize = os.path.getsize(path)
        emb = n * DIM * 2 / 2**20
        print("| %s | %.1f | %.1f | %.0f | %.1f | %.1f | %.1f | %.2fx |" % (
            "{:,}".format(n), ms, fsize / 2**20, fsize / n, emb, r1, r2, r2 / emb))
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, sync=off)" % q(path))
    db.close()


if __name__ == "__main__":
    main()
