"""Recall@10 of an HNSW store against `ef` and k (issue 26): whether the
ten nearest records a search misses were in the pool it scored exactly
(then a larger k, which scores 2k of the pool exactly, finds them) or were
never reached by the walk (then only a larger ef does).

  /usr/bin/python3 bench/bench_ef.py --store STORE.h5 [--ext ./h5mem]

for a store that bench_scale.py --keep left (its queries are bench_scale's:
50 drawn as the records are).  The store's own exact search gives the
truth; each search takes the k nearest and keeps the first ten.  Opens the
store as a reader (its saved graph, the rows past it scanned exactly).
"""
import argparse
import json
import os
import sqlite3
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--ext", default=os.path.join(os.getcwd(), "h5mem"))
    a = ap.parse_args()
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(os.path.abspath(a.ext))
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % a.store.replace("'", "''"))
    ix = json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0])
    print(json.dumps({k: ix[k] for k in ("graph_rows", "saved_rows", "exact_rows", "quantize")}), flush=True)
    qs = bench_scale.queries()
    sql = "SELECT id FROM vec_search('m', ?, ?, ?)"
    truth = [[r[0] for r in db.execute(sql, (q.tobytes(), 10, '{"exact": true}'))] for q in qs]
    for k in (10, 20, 40):
        for ef in (64, 128, 256, 512, 1024):
            times, rec = [], 0.0
            for q, want in zip(qs, truth):
                t0 = time.perf_counter()
                got = [r[0] for r in db.execute(sql, (q.tobytes(), k, '{"ef": %d}' % ef))][:10]
                times.append((time.perf_counter() - t0) * 1e3)
                rec += len(set(got) & set(want)) / 10
            print(json.dumps({"k": k, "ef": ef, "recall10": round(rec / len(qs), 3),
                              "p50_ms": round(statistics.median(times), 2)}), flush=True)


if __name__ == "__main__":
    main()
