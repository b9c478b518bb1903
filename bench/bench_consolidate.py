"""The lifecycle (issue 19, "Consolidate and forget"; docs/SQL.md, "Memory
lifecycle"), measured through SQL:

1. one consolidation cycle (h5mem_consolidate) at 1K, 10K, 100K, 1M
   records, all in the working tier, checkpointed (file rows), 5% used
   promote_after times or more, working_capacity 1000, evict=archive,
   merge_scope=working (the default); each cycle run in a transaction
   rolled back (the same state every time): median of --reps, and the
   report's own "ms" (the cycle alone, without SQL); the same without the
   merge step (merge_threshold off: seed 002's cycle merges nothing); then
   one cycle committed: the COMMIT's time (its log frame of tier changes,
   sync=off) and the frame's size;
2. seed 002's retrieval before/after: 1,000 records (10 signal used 15+
   times, 990 noise), working_capacity 100: Hit@1/5/10 and MRR of the
   signal's queries and the search latency (vec_search, k=10, exact),
   before and after a cycle (evict=delete: the searched set shrinks; with
   evict=archive the searches skip archive once they exclude it);
3. h5mem_remember per call (gate, strategy, dedup search, importance,
   insert) under every_exchange and semantic_shift, and h5mem_gate alone.

  /usr/bin/python3 bench/bench_consolidate.py [--sizes 1000,10000,100000,1000000] [--reps 5] [--dim 16]

Embeddings are synthetic (numpy-free: Python's random, Gaussian, unit
length); the retrieval queries are a signal's embedding plus Gaussian
noise (--noise).  Run from the build directory (it loads ./h5mem.so).
"""
import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import struct
import tempfile
import time

EXT = os.path.join(os.getcwd(), "h5mem")
NOW = 1_800_000_000


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(s):
    return "'" + s.replace("'", "''") + "'"


def unit(rng, dim):
    v = [rng.gauss(0, 1) for _ in range(dim)]
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def blob(v):
    return struct.pack("%df" % len(v), *v)


def bench_cycle(d, sizes, reps, dim):
    print("== consolidation cycle (working_capacity=1000, dim=%d)" % dim)
    print("%10s %12s %12s %14s %10s %10s %11s %10s" % ("records", "median ms", "cycle ms", "no merge ms",
                                                       "evicted", "promoted", "commit ms", "log MB"))
    rng = random.Random(2)
    for n in sizes:
        fn = os.path.join(d, "c%d.h5" % n)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, sync=off, working_capacity=1000)" % (q(fn), dim))
        db.execute("BEGIN")
        ins = "INSERT INTO mem(id, text, embedding, tier, ts, importance, access_count) VALUES (?,?,?,?,?,?,?)"
        batch = []
        for i in range(1, n + 1):
            batch.append((i, "m", blob(unit(rng, dim)), "working", NOW - rng.randrange(0, 90 * 86400),
                          rng.random(), 3 if rng.random() < 0.05 else rng.randrange(0, 3)))
            if len(batch) == 10000:
                db.executemany(ins, batch)
                batch = []
        if batch:
            db.executemany(ins, batch)
        db.execute("COMMIT")
        db.execute("SELECT h5mem_checkpoint('mem')")
        walls, cyc, nomerge = [], [], []
        rep = None
        for _ in range(reps):
            db.execute("BEGIN")
            t = time.perf_counter()
            rep = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()[0])
            walls.append((time.perf_counter() - t) * 1000)
            cyc.append(rep["ms"])
            db.execute("ROLLBACK")
            # the same cycle without the merge step (seed 002's cycle has none)
            db.execute("BEGIN")
            r2 = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)",
                                       (json.dumps({"now": NOW, "merge_threshold": "off"}),)).fetchone()[0])
            nomerge.append(r2["ms"])
            db.execute("ROLLBACK")
        # and once committed: the log frame of its tier changes written (sync=off)
        w0 = os.path.getsize(fn + "-wal")
        db.execute("BEGIN")
        db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()
        t = time.perf_counter()
        db.execute("COMMIT")
        tc = (time.perf_counter() - t) * 1000
        logmb = (os.path.getsize(fn + "-wal") - w0) / 1e6
        print("%10d %12.3f %12.3f %14.3f %10d %10d %11.1f %10.1f" % (n, statistics.median(walls), statistics.median(cyc),
                                                             statistics.median(nomerge), rep["evicted"],
                                                             rep["promoted"], tc, logmb))
        db.close()
        for f in os.listdir(d):
            if f.startswith("c%d.h5" % n):
                os.remove(os.path.join(d, f))


def metrics(db, queries, signal_ids, reps=3):
    hits = {1: 0, 5: 0, 10: 0}
    rr = 0.0
    lat = []
    for qv, sid in zip(queries, signal_ids):
        for _ in range(reps):
            t = time.perf_counter()
            ids = [r[0] for r in db.execute("SELECT id FROM vec_search('mem', ?, 10, '{\"exact\": true}')", (blob(qv),))]
            lat.append((time.perf_counter() - t) * 1e6)
        if sid in ids:
            rank = ids.index(sid) + 1
            rr += 1.0 / rank
            for k in hits:
                hits[k] += rank <= k
    n = len(queries)
    return {"hit1": hits[1] / n, "hit5": hits[5] / n, "hit10": hits[10] / n, "mrr": rr / n,
            "search_us": statistics.median(lat)}


def bench_retrieval(d, dim, noise):
    print("== seed 002's retrieval before/after a cycle (1,000 records: 10 signal used 15+ times, 990 noise; "
          "working_capacity=100, evict=delete, dim=%d, query noise %.2f)" % (dim, noise))
    rng = random.Random(20)
    fn = os.path.join(d, "r.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, working_capacity=100, evict=delete)" % (q(fn), dim))
    sig = []
    db.execute("BEGIN")
    for i in range(1, 1001):
        v = unit(rng, dim)
        signal = i % 100 == 0
        if signal:
            sig.append((i, v))
        db.execute("INSERT INTO mem(id, text, embedding, tier, ts, access_count, last_access) VALUES (?,?,?,?,?,?,?)",
                   (i, "m%d" % i, blob(v), "working", NOW - rng.randrange(0, 30 * 86400),
                    15 + rng.randrange(0, 10) if signal else rng.randrange(0, 2), NOW - 3600 if signal else None))
    db.execute("COMMIT")
    queries, ids = [], []
    for i, v in sig:
        for _ in range(10):
            w = [x + rng.gauss(0, noise) for x in v]
            queries.append(w)
            ids.append(i)
    before = metrics(db, queries, ids)
    rep = json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps({"now": NOW}),)).fetchone()[0])
    after = metrics(db, queries, ids)
    for name, m in (("before", before), ("after", after)):
        print("%-7s Hit@1 %.3f  Hit@5 %.3f  Hit@10 %.3f  MRR %.3f  search %.1f us (median, vec_search k=10)" %
              (name, m["hit1"], m["hit5"], m["hit10"], m["mrr"], m["search_us"]))
    print("cycle: %s" % json.dumps(rep))
    print("search speed-up: %.2fx" % (before["search_us"] / after["search_us"]))
    db.close()


def bench_calls(d, dim, sizes=(1000, 10000)):
    print("== per call (dim=%d)" % dim)
    rng = random.Random(3)
    db = connect()
    texts = ["ok", "thanks!", "Alice moved to Lisbon in March and works at the observatory"]
    for t in texts:
        n = 20000
        t0 = time.perf_counter()
        for _ in range(n):
            db.execute("SELECT h5mem_gate(?)", (t,)).fetchone()
        print("h5mem_gate(%r): %.2f us a call (through Python's sqlite3)" % (t, (time.perf_counter() - t0) / n * 1e6))
    t0 = time.perf_counter()
    for _ in range(20000):
        db.execute("SELECT 1").fetchone()
    print("(SELECT 1 alone: %.2f us a call)" % ((time.perf_counter() - t0) / 20000 * 1e6))
    db.close()
    for n in sizes:
        for strat in ("every_exchange", "semantic_shift"):
            fn = os.path.join(d, "p%d%s.h5" % (n, strat))
            db = connect()
            db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, sync=off, strategy=%s)" % (q(fn), dim, strat))
            db.execute("BEGIN")
            db.executemany("INSERT INTO mem(id, text, embedding, tier, session, ts) VALUES (?,?,?,?,?,?)",
                           [(i, "m", blob(unit(rng, dim)), "working", "s%d" % (i % 50), NOW - i) for i in range(1, n + 1)])
            db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('mem')")
            calls = 500
            db.execute("BEGIN")
            t0 = time.perf_counter()
            acts = {}
            for k in range(calls):
                r = json.loads(db.execute("SELECT h5mem_remember('mem', ?, ?, ?)",
                                          ("note %d about topic %d and more words" % (k, k % 13), blob(unit(rng, dim)),
                                           json.dumps({"now": NOW, "session": "s%d" % (k % 50)}))).fetchone()[0])
                acts[r["action"]] = acts.get(r["action"], 0) + 1
            dt = (time.perf_counter() - t0) / calls * 1e6
            db.execute("COMMIT")
            print("h5mem_remember, %s, %d records: %.1f us a call (%s)" % (strat, n, dt, acts))
            db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--noise", type=float, default=0.08)
    ap.add_argument("--dir")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp()
    try:
        bench_cycle(d, [int(x) for x in a.sizes.split(",")], a.reps, a.dim)
        bench_retrieval(d, 100, a.noise)
        bench_calls(d, a.dim)
    finally:
        if not a.dir:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
