"""A reader's vector search of an HNSW store written as any store is (the
file's rows past the saved graph scored exactly), build against build, on
the same store: e.g. the one `bench_scale.py --keep` leaves.

  /usr/bin/python3 bench/bench_reader.py --store /work/scale/.../hnsw.h5 [--runs 2] EXT [EXT ...]
  /usr/bin/python3 bench/bench_reader.py --store S.h5 --make 1000000 --tail 120000 [--storage float32] EXT ...

--make N --tail T (multiples of 10,000) first writes such a store at S.h5 (which must not exist)
with the first extension: bench_scale's first N records, index=hnsw, in one
checkpoint (the graph built and saved), then the next T (fewer than N/8,
so the checkpoint saves no graph: a reader scores them exactly), stored as
--storage says (float16 unless given).

Each run is a fresh process (a reader, as an agent's process opening its
memory is): it opens the store and searches bench_scale's 50 queries
(k = 10) at ef 64, then at ef 128, each timed alone; the first search and
the second are given apart (a build may do work there: since the tail
sketch, the second builds the sketch of the rows past the graph), the
percentiles are over the 50 after an untimed pass over five.  With
several extensions (each a build's h5mem.so without the suffix, as
load_extension takes it) the runs alternate among them; every run's
answers must be the first run's, id for id (the exact part's answer does
not depend on the build), else the script fails.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import CHILD_OPEN, child_header  # noqa: E402

RUN = CHILD_OPEN + r'''
qs = bench_scale.queries()
sql = "SELECT id FROM vec_search('m', ?, 10, ?)"
answers = []
for ef in (64, 128):
    o = '{"ef": %d}' % ef
    first = []
    for q in qs[:2]:
        t0 = time.perf_counter()
        db.execute(sql, (q.tobytes(), o)).fetchall()
        first.append((time.perf_counter() - t0) * 1e3)
    for q in qs[2:5]:
        db.execute(sql, (q.tobytes(), o)).fetchall()
    times = []
    for q in qs:
        t0 = time.perf_counter()
        answers.append([r[0] for r in db.execute(sql, (q.tobytes(), o))])
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    out["ef%d" % ef] = {"first_ms": first[0], "second_ms": first[1], "p50_ms": statistics.median(times),
                        "p95_ms": times[int(len(times) * 0.95) - 1]}
ix = json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0])
out["index"] = {k: ix.get(k) for k in ("graph_rows", "saved_rows", "exact_rows", "tail_sketch_rows")}
out["answers"] = answers
print(json.dumps(out))
'''


MAKE = r'''
import json, sqlite3, sys, time
sys.path.insert(0, sys.argv[3])
import bench_scale
ext, path, n, t, storage = sys.argv[1], sys.argv[2], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
db = sqlite3.connect(':memory:', isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, storage=%s, index=hnsw, autocheckpoint=%d)"
           % (path, bench_scale.DIM, storage, 1 << 40))
done = 0
for rows in bench_scale.batches(n + t):
    if done == n:
        db.execute("INSERT INTO m(m) VALUES('checkpoint')")
    db.execute("BEGIN")
    db.executemany("INSERT INTO m(id, text, embedding, source, session, ts) VALUES (?, ?, ?, ?, ?, ?)", rows)
    db.execute("COMMIT")
    done += len(rows)
db.execute("INSERT INTO m(m) VALUES('checkpoint')")
ix = json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0])
print(json.dumps({k: ix[k] for k in ("graph_rows", "saved_rows")}))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--make", type=int, default=0)
    ap.add_argument("--tail", type=int, default=0)
    ap.add_argument("--storage", default="float16", choices=("float16", "float32"))
    ap.add_argument("ext", nargs="+")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if a.make:
        if os.path.exists(a.store):
            sys.exit("%s exists" % a.store)
        if a.make % 10000 or a.tail % 10000 or a.tail * 8 >= a.make:
            sys.exit("--make and --tail: multiples of 10,000, the tail under an eighth")
        p = subprocess.run([sys.executable, "-c", MAKE, os.path.abspath(a.ext[0]), a.store, here,
                            str(a.make), str(a.tail), a.storage], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("--make: %s" % p.stderr.strip())
        print("# made %s: %s" % (a.store, p.stdout.strip()), flush=True)
    print(child_header("bench_reader", a.store), flush=True)
    first = None
    for r in range(a.runs):
        for ext in a.ext:
            p = subprocess.run([sys.executable, "-c", RUN, os.path.abspath(ext), a.store, here],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit("%s: %s" % (ext, p.stderr.strip()))
            out = json.loads(p.stdout)
            answers = out.pop("answers")
            if first is None:
                first = answers
            elif answers != first:
                sys.exit("%s: run %d answered differently from the first run" % (ext, r + 1))
            print(json.dumps(dict(ext=ext, run=r + 1, **out)), flush=True)


if __name__ == "__main__":
    main()
