"""Fleets (issue 26): searching many stores as one, against one store
holding the same records, in the same run.

  /usr/bin/python3 bench/bench_fleet.py [--stores 200] [--per 2000] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  `--stores` stores of
`--per` records each (384-d float16 vectors around random topics, ~100
characters of licence text), checkpointed, and the union: one store of
every record.  Timed, each query alone (median of 30, k = 10): vec_search
(exact), bm25, hybrid and `count(*)`, over the union, over the fleet with
every store kept open (max_open above the count), and over the fleet with
max_open = 16 (each statement reopens most stores: the LRU's cost).  Also
the first statement of a new connection's fleet (every store opened).
"""
import argparse
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

DIM = 384


def vectors(rng, centers, m):
    c = centers[rng.integers(0, len(centers), m)]
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    e = c + 0.6 * rng.standard_normal((m, DIM), dtype=np.float32) / np.sqrt(DIM)
    return (e / np.linalg.norm(e, axis=1, keepdims=True)).astype(np.float32)


def build(tmp, stores, per):
    rng = np.random.default_rng(26)
    centers = np.random.default_rng(1).standard_normal((1024, DIM), dtype=np.float32)
    w = licence_words()
    os.mkdir(os.path.join(tmp, "agents"))
    u = connect()
    u.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, storage=float16)" % (os.path.join(tmp, "union.h5"), DIM))
    uid = 0
    for s in range(stores):
        db = connect()
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, storage=float16)"
                   % (os.path.join(tmp, "agents", "a%04d.h5" % s), DIM))
        e = vectors(rng, centers, per)
        rows = []
        for i in range(per):
            j = int(rng.integers(0, len(w) - 20))
            rows.append((i + 1, " ".join(w[j:j + 16]), e[i].tobytes()))
        db.execute("BEGIN")
        db.executemany("INSERT INTO m(id, text, embedding) VALUES (?, ?, ?)", rows)
        db.execute("COMMIT")
        db.close()
        u.execute("BEGIN")
        u.executemany("INSERT INTO m(id, text, embedding) VALUES (?, ?, ?)",
                      [(uid + i + 1, t, b) for i, t, b in rows])
        u.execute("COMMIT")
        uid += per
    u.close()
    return vectors(np.random.default_rng(7), centers, 30), [" ".join(w[i:i + 2]) for i in range(100, 3100, 100)]


def timed(db, sql, args_list):
    t = []
    for args in args_list:
        t0 = time.perf_counter()
        db.execute(sql, args).fetchall()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def run(db, name, qs, texts):
    return {
        "vec_search": timed(db, "SELECT path, id FROM vec_search('%s', ?, 10)" % name, [(q.tobytes(),) for q in qs]),
        "bm25": timed(db, "SELECT path, id FROM bm25('%s', ?, 10)" % name, [(t,) for t in texts]),
        "hybrid": timed(db, "SELECT path, id FROM hybrid('%s', ?, ?, 10)" % name,
                        [(t, q.tobytes()) for t, q in zip(texts, qs)]),
        "count": timed(db, "SELECT count(*) FROM %s" % name, [()] * 5),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stores", type=int, default=200)
    ap.add_argument("--per", type=int, default=2000)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print("# bench_fleet: %s, %s, %d CPUs, commit %s, %d stores x %d records" % (
        time.strftime("%Y-%m-%d %H:%M"), platform.platform(), os.cpu_count(), commit, a.stores, a.per), flush=True)
    tmp = tempfile.mkdtemp(prefix="h5mem_fleetb_", dir=a.dir)
    old = os.getcwd()
    try:
        qs, texts = build(tmp, a.stores, a.per)
        os.chdir(tmp)
        out = {}
        db = connect()
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='union.h5')")
        out["union"] = run(db, "m", qs, texts)
        db.close()
        db = connect()
        db.execute("CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/*.h5', max_open=%d)" % (a.stores + 1))
        t0 = time.perf_counter()
        db.execute("SELECT count(*) FROM fleet").fetchall()
        out["fleet_first_statement_ms"] = (time.perf_counter() - t0) * 1e3
        out["fleet_all_open"] = run(db, "fleet", qs, texts)
        db.close()
        db = connect()
        db.execute("CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/*.h5', max_open=16)")
        out["fleet_max_open_16"] = run(db, "fleet", qs, texts)
        db.close()
        print(json.dumps(out), flush=True)
    finally:
        os.chdir(old)
        shutil.rmtree(tmp, ignore_errors=True)


main()
