"""A checkpoint of 1,000 new records on an existing store (issue 26): the
time an application waits at `INSERT INTO m(m) VALUES('checkpoint')` after
adding 1,000 records to a store already large, e.g. the one
`bench_scale.py --keep` leaves.

  /usr/bin/python3 bench/bench_ckpt.py --store /work/scale/.../hnsw.h5 [--runs 3] EXT [EXT ...]

Each run is a fresh process (one writer, as an agent's process opening its
memory is): it opens the store, adds 1,000 records drawn as bench_scale's
are (ids after the store's largest) in one transaction (below the
automatic checkpoint's 64 MiB, so they stay in the log), and times the
checkpoint, then the first vector search after it and the close.  With
several extensions (each a build's h5mem.so, without the suffix: EXT is
what load_extension takes) the runs alternate among them, on the same
store; every run adds its 1,000 records to it.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import CHILD_OPEN, child_header  # noqa: E402

RUN = CHILD_OPEN + r'''
n0 = db.execute("SELECT max(id) FROM m").fetchone()[0]
rows = next(bench_scale.batches(1000, seed=int(n0) % 1000003))
rows = [(n0 + 1 + i,) + r[1:] for i, r in enumerate(rows)]
t0 = time.perf_counter()
db.execute("BEGIN")
db.executemany("INSERT INTO m(id, text, embedding, source, session, ts) VALUES (?, ?, ?, ?, ?, ?)", rows)
db.execute("COMMIT")
out["insert_1k_ms"] = (time.perf_counter() - t0) * 1e3
t0 = time.perf_counter()
db.execute("INSERT INTO m(m) VALUES('checkpoint')")
out["checkpoint_1k_ms"] = (time.perf_counter() - t0) * 1e3
ix = json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0])
out["index"] = {k: ix.get(k) for k in ("index", "graph_rows", "saved_rows", "exact_rows")}
q = bench_scale.queries(1)[0]
t0 = time.perf_counter()
db.execute("SELECT id FROM vec_search('m', ?, 10)", (q.tobytes(),)).fetchall()
out["first_search_ms"] = (time.perf_counter() - t0) * 1e3
t0 = time.perf_counter()
db.close()
out["close_ms"] = (time.perf_counter() - t0) * 1e3
out["rows"] = n0 + 1000
print(json.dumps(out))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("ext", nargs="+")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    print(child_header("bench_ckpt", a.store), flush=True)
    for r in range(a.runs):
        for ext in a.ext:
            p = subprocess.run([sys.executable, "-c", RUN, os.path.abspath(ext), a.store, here],
                               capture_output=True, text=True)
            if p.returncode:
                sys.exit("%s: %s" % (ext, p.stderr.strip()))
            o = json.loads(p.stdout)
            o["ext"] = ext
            o["run"] = r
            print(json.dumps(o), flush=True)


if __name__ == "__main__":
    main()
