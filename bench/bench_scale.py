"""The measured limits of one store (issue 26): at N records x 384 (float16)
its file size, open time, RSS after open, exact and HNSW search latency
and recall, the HNSW build on 1 and 2 threads, a checkpoint of 1,000 new
records and `optimize`.

  /usr/bin/python3 bench/bench_scale.py --n 1000000 --n 10000000 [--hnsw-max 1000000] [--dir DIR]
  /usr/bin/python3 bench/bench_scale.py --n 10000000 --hnsw-only --hnsw-cpus 0,1

run from the build directory (it loads ./h5mem.so).  Records: random unit
vectors around 4,096 random topics (numpy, seed 26; 384-d, stored as
float16; a topic's members at cosine distance ~0.15 from it), ~100 characters of
English text (the licence texts in /usr/share/common-licenses), source,
session and ts, written through Python's sqlite3 in transactions of
10,000.  Each store is written once, flat (exact search); for N up to
--hnsw-max the same records go into an `index=hnsw` store too, all in its
log (autocheckpoint above its size), so that one checkpoint builds the
whole graph: timed in a fresh process pinned to one CPU (taskset: the
build uses the CPUs the process may run on) and in one on both.
The open is measured in fresh processes (best of 3): `CREATE VIRTUAL
TABLE` on the existing store, and the RSS it added.  Searches: 50 queries
drawn as the records are, k = 10, each timed alone after an untimed
pass over five (the first search's time given apart: it reads what the
store reads on first use); the exact search's answers are the truth the
HNSW recall@10 is measured against.  --hnsw-only writes the HNSW store
alone (its own exact search gives the truth: the same float16 records);
--hnsw-cpus (repeatable; default 0 and 0,1) chooses the taskset CPU lists
the build is timed on (--quantize int8 or none: the HNSW stores' option,
int8 unless given).  --hnsw-incremental writes the HNSW store as any
store is written (the log checkpointed at 64 MiB, each checkpoint adding
its rows to the graph; at 10M one checkpoint of the whole log needs more
memory than this machine's 24 GiB: BENCHMARKS.md), and times the writer's
own searches before it closes (its graph in memory covers every row) beside
a fresh reader's (the saved graph, and the rows past it scanned exactly).
"""
import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import connect, licence_words  # noqa: E402

BUILD = os.getcwd()
EXT = os.path.join(BUILD, "h5mem")
DIM = 384
BATCH = 10000
HNSW_OPTS = ""  # (--quantize: e.g. ", quantize=none")


CENTERS = np.random.default_rng(1).standard_normal((4096, DIM), dtype=np.float32)
SPREAD = 0.6  # each vector: a topic's center plus noise of this norm's order, as embeddings cluster


def vectors(rng, m):
    """m unit vectors around random topics (uniform random vectors in 384
    dimensions have no near neighbours to find: every distance is about
    the same, which no index and no real embedding model shows)."""
    c = CENTERS[rng.integers(0, len(CENTERS), m)]
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    e = c + SPREAD * rng.standard_normal((m, DIM), dtype=np.float32) / np.sqrt(DIM)
    return (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)


def batches(n, seed=26):
    """The records, BATCH at a time: the same for every store of one n."""
    rng = np.random.default_rng(seed)
    w = licence_words()
    for b in range(0, n, BATCH):
        m = min(BATCH, n - b)
        e = vectors(rng, m)
        rows = []
        for i in range(m):
            j = ((b + i) * 7919) % (len(w) - 20)
            rows.append((b + i + 1, " ".join(w[j:j + 16]), e[i].tobytes(), ("user", "agent", "web")[(b + i) % 3],
                         "s%d" % ((b + i) % 1000), 1700000000 + b + i))
        yield rows


def fill(path, n, opts="", progress=False):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, storage=float16%s)" % (path, DIM, opts))
    t0 = time.perf_counter()
    done = 0
    for rows in batches(n):
        db.execute("BEGIN")
        db.executemany("INSERT INTO m(id, text, embedding, source, session, ts) VALUES (?, ?, ?, ?, ?, ?)", rows)
        db.execute("COMMIT")
        done += len(rows)
        if progress and done % 1000000 == 0:  # (how far it went, should it not finish)
            print("# %d records in %.1f s" % (done, time.perf_counter() - t0), flush=True)
    t = time.perf_counter() - t0
    return db, t


OPEN = r'''
import sqlite3, sys, time
def rss():
    return int([l for l in open('/proc/self/status') if l.startswith('VmRSS')][0].split()[1]) * 1024
db = sqlite3.connect(':memory:', isolation_level=None)
db.enable_load_extension(True); db.load_extension(sys.argv[1])
r0 = rss(); t0 = time.perf_counter()
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % sys.argv[2])
t1 = time.perf_counter(); r1 = rss()
n = db.execute("SELECT count(*) FROM m").fetchone()[0]
print((t1 - t0) * 1e3, (r1 - r0) / 2**20, n)
'''


def open_time(path):
    best = None
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", OPEN, EXT, path], capture_output=True, text=True, check=True)
        ms, mib, n = out.stdout.split()
        if best is None or float(ms) < best[0]:
            best = (float(ms), float(mib), int(n))
    return best


def queries(k=50, seed=7):
    return vectors(np.random.default_rng(seed), k)


def search(db, qs, opts):
    """Each query timed alone, after one untimed pass over five of them
    (the first search pays what the store reads on first use)."""
    t0 = time.perf_counter()
    db.execute("SELECT id FROM vec_search('m', ?, 10, ?)", (qs[0].tobytes(), opts)).fetchall()
    first = (time.perf_counter() - t0) * 1e3
    for q in qs[1:5]:
        db.execute("SELECT id FROM vec_search('m', ?, 10, ?)", (q.tobytes(), opts)).fetchall()
    times, res = [], []
    for q in qs:
        t0 = time.perf_counter()
        ids = [r[0] for r in db.execute("SELECT id FROM vec_search('m', ?, 10, ?)", (q.tobytes(), opts))]
        times.append((time.perf_counter() - t0) * 1e3)
        res.append(ids)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1], res, first


BUILDG = r'''
import sqlite3, sys, time
db = sqlite3.connect(':memory:', isolation_level=None)
db.enable_load_extension(True); db.load_extension(sys.argv[1])
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % sys.argv[2])
t0 = time.perf_counter()
db.execute("INSERT INTO m(m) VALUES('checkpoint')")
print(time.perf_counter() - t0)
'''


def hnsw_incremental(tmp, n, qs, out):
    """An index=hnsw store written as any store is (the log checkpointed at
    64 MiB, each checkpoint adding its rows to the graph, on every CPU): the
    inserts' time includes the graph's building.  The writer's own searches
    (its graph in memory covers every checkpointed row) are timed before it
    closes; their recall is computed once the truth is known."""
    path = os.path.join(tmp, "hnsw.h5")
    db, t = fill(path, n, ", index=hnsw" + HNSW_OPTS, progress=True)
    t0 = time.perf_counter()
    db.execute("INSERT INTO m(m) VALUES('checkpoint')")
    out["hnsw_incremental_insert_s"] = t
    out["hnsw_incremental_final_checkpoint_s"] = time.perf_counter() - t0
    out["hnsw_writer_index"] = {k: v for k, v in json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0]).items()
                                if k in ("graph_rows", "saved_rows", "exact_rows")}
    writer = {}
    for ef in (64, 128):
        p50, p95, res, first = search(db, qs, '{"ef": %d}' % ef)
        writer[ef] = ({"first_ms": first, "p50_ms": p50, "p95_ms": p95}, res)
    db.close()
    return path, writer


def hnsw(tmp, n, qs, truth, out, cpu_lists, incremental=False, keep_store=False):
    writer = None
    if incremental:
        path, writer = hnsw_incremental(tmp, n, qs, out)
        cpu_lists = []
    else:
        path = os.path.join(tmp, "hnsw.h5")
        # the records in the log alone (autocheckpoint above its size), left
        # there by a process that ends without closing (no checkpoint)
        pid = os.fork()
        if pid == 0:
            try:
                db, _ = fill(path, n, ", index=hnsw, autocheckpoint=%d" % (1 << 40) + HNSW_OPTS)
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        keep = len(cpu_lists) > 1  # the same checkpoint again for each CPU list
        if keep:
            shutil.copy(path, path + ".keep")
            shutil.copy(path + "-wal", path + "-wal.keep")
        for cpus in cpu_lists:  # e.g. the graph built on 1 and on 2 CPUs
            if keep:
                shutil.copy(path + ".keep", path)
                shutil.copy(path + "-wal.keep", path + "-wal")
            t = subprocess.run(["taskset", "-c", cpus, sys.executable, "-c", BUILDG, EXT, path],
                               capture_output=True, text=True, check=True)
            out["hnsw_build_%dcpu_s" % len(cpus.split(","))] = float(t.stdout)
        if keep:
            os.remove(path + ".keep")
            os.remove(path + "-wal.keep")
    out["hnsw_file_mib"] = os.path.getsize(path) / 2**20
    out["hnsw_open_ms"], out["hnsw_open_rss_mib"], _ = open_time(path)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % path)
    out["hnsw_reader_index"] = {k: v for k, v in json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0]).items()
                                if k in ("graph_rows", "saved_rows", "exact_rows")}
    if truth is None:  # (--hnsw-only: the store's own exact search)
        p50, p95, truth, first = search(db, qs, '{"exact": true}')
        out["exact"] = {"first_ms": first, "p50_ms": p50, "p95_ms": p95, "recall10": 1.0}
    for ef in (64, 128):
        p50, p95, res, first = search(db, qs, '{"ef": %d}' % ef)
        rec = sum(len(set(a) & set(b)) for a, b in zip(res, truth)) / (10 * len(truth))
        out["hnsw_ef%d" % ef] = {"first_ms": first, "p50_ms": p50, "p95_ms": p95, "recall10": rec}
    for ef, (w, res) in sorted((writer or {}).items()):  # (the writer's, before it closed)
        w["recall10"] = sum(len(set(a) & set(b)) for a, b in zip(res, truth)) / (10 * len(truth))
        out["hnsw_writer_ef%d" % ef] = w
    db.close()
    if keep_store:  # (--keep: left for later measurements)
        out["kept"] = path
        return
    for f in glob.glob(path + "*"):
        os.remove(f)


def one(n, tmp, hnsw_max, hnsw_only, cpu_lists, incremental=False, keep=False):
    out = {"n": n}
    if hnsw_only:
        hnsw(tmp, n, queries(), None, out, cpu_lists, incremental, keep)
        return out
    path = os.path.join(tmp, "flat.h5")
    db, t_fill = fill(path, n)
    out["insert_s"] = t_fill
    t0 = time.perf_counter()
    db.execute("INSERT INTO m(m) VALUES('checkpoint')")
    out["final_checkpoint_s"] = time.perf_counter() - t0
    db.close()
    out["file_mib"] = os.path.getsize(path) / 2**20
    out["bytes_per_record"] = os.path.getsize(path) / n
    out["open_ms"], out["open_rss_mib"], cnt = open_time(path)
    assert cnt == n, (cnt, n)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % path)
    qs = queries()
    p50, p95, truth, first = search(db, qs, '{"exact": true}')
    out["exact"] = {"first_ms": first, "p50_ms": p50, "p95_ms": p95, "recall10": 1.0}
    # a checkpoint of 1,000 new records
    rows = next(batches(1000, seed=99))
    rows = [(n + 1 + i,) + r[1:] for i, r in enumerate(rows)]
    db.execute("BEGIN")
    db.executemany("INSERT INTO m(id, text, embedding, source, session, ts) VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.execute("COMMIT")
    t0 = time.perf_counter()
    db.execute("INSERT INTO m(m) VALUES('checkpoint')")
    out["checkpoint_1k_ms"] = (time.perf_counter() - t0) * 1e3
    # optimize after deleting 1,000 records (every n/1000-th)
    db.execute("BEGIN")
    db.executemany("DELETE FROM m WHERE id = ?", [(i,) for i in range(1, n + 1, max(1, n // 1000))])
    db.execute("COMMIT")
    t0 = time.perf_counter()
    db.execute("INSERT INTO m(m) VALUES('optimize')")
    out["optimize_s"] = time.perf_counter() - t0
    db.close()
    out["file_after_optimize_mib"] = os.path.getsize(path) / 2**20
    for f in glob.glob(path + "*"):
        os.remove(f)
    if n <= hnsw_max:
        hnsw(tmp, n, qs, truth, out, cpu_lists)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, action="append", required=True)
    ap.add_argument("--hnsw-max", type=int, default=1000000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--hnsw-only", action="store_true")
    ap.add_argument("--hnsw-cpus", action="append", default=None)
    ap.add_argument("--hnsw-incremental", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the HNSW store of --hnsw-only (its path is printed)")
    ap.add_argument("--quantize", choices=("int8", "none"), default=None, help="the HNSW stores' quantize option")
    a = ap.parse_args()
    global HNSW_OPTS
    if a.quantize:
        HNSW_OPTS = ", quantize=" + a.quantize
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print("# bench_scale: %s, %s, %d CPUs, commit %s" % (time.strftime("%Y-%m-%d %H:%M"), platform.platform(),
                                                          os.cpu_count(), commit), flush=True)
    for n in a.n:
        tmp = tempfile.mkdtemp(prefix="h5mem_scale_", dir=a.dir)
        try:
            print(json.dumps(one(n, tmp, a.hnsw_max, a.hnsw_only, a.hnsw_cpus or ["0", "0,1"], a.hnsw_incremental,
                                 a.keep)), flush=True)
        finally:
            if not (a.keep and a.hnsw_only):
                shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
