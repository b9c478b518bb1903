"""h5mem_migrate throughput and memory: rows per second and peak RSS.

    python3 bench/bench_migrate.py                       # 100K x 384 and 100K x 1536
    python3 bench/bench_migrate.py --rows 5000 --dims 64 # a quick look

For each dimension it builds a source in ClawhDF5's migration schema
(memory_chunks with float32 BLOB embeddings; OpenClaw's legacy JSON index
with --schema openclaw-legacy) of random unit vectors and short texts, then
migrates it in a child process (python3 + the built h5mem.so), timing the
call and taking the child's peak RSS (wait4).  The embeddings alone are rows
x dim x 4 bytes; a bounded-memory migration keeps its peak RSS far below
that (the store's log is checkpointed every 64 MiB, the source is streamed).
Progress lines go to a file; the last one is printed.  Run it from the build
directory (or give --ext).
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "test", "interop"))
import layouts  # noqa: E402


def build(path, rows, dim, schema, seed=1):
    rng = np.random.default_rng(seed)
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")
    if schema == "clawhdf5":
        db.execute("CREATE TABLE memory_chunks (id INTEGER PRIMARY KEY, chunk TEXT NOT NULL, embedding BLOB NOT NULL, "
                   "source_channel TEXT DEFAULT 'api', timestamp REAL NOT NULL, session_id TEXT, "
                   "tags TEXT DEFAULT '', deleted INTEGER DEFAULT 0)")
    else:
        db.executescript(layouts.OPENCLAW_LEGACY)
        db.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)",
                   (json.dumps({"provider": "bench", "model": "random", "vectorDims": dim}),))
    block = 2000
    for start in range(0, rows, block):
        n = min(block, rows - start)
        e = rng.standard_normal((n, dim)).astype("<f4")
        e /= np.linalg.norm(e, axis=1, keepdims=True)
        if schema == "clawhdf5":
            db.executemany("INSERT INTO memory_chunks VALUES (?,?,?,?,?,?,?,0)",
                           ((start + i + 1, "memory number %d about topic %d" % (start + i, (start + i) % 97),
                             e[i].tobytes(), "api", 1700000000.0 + start + i, "s%d" % ((start + i) % 50), "")
                            for i in range(n)))
        else:
            db.executemany("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)",
                           (("c%d" % (start + i), "MEMORY.md", "memory", 1, 2, "h", "random",
                             "memory number %d" % (start + i), json.dumps(e[i].tolist()), 1700000000000 + start + i)
                            for i in range(n)))
        db.commit()
    db.close()


CHILD = """
import json, sqlite3, sys
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
rep = db.execute("SELECT h5mem_migrate(?, ?, ?)", (sys.argv[2], sys.argv[3], sys.argv[4])).fetchone()[0]
print(rep)
"""


def run(ext, src, dst, opts):
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", CHILD, ext, src, dst, json.dumps(opts)], stdout=subprocess.PIPE)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    secs = time.perf_counter() - t0
    if status != 0:
        raise SystemExit("migration failed (status %d)" % status)
    return json.loads(out), secs, ru.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--dims", default="384,1536")
    ap.add_argument("--schema", default="clawhdf5", choices=["clawhdf5", "openclaw-legacy"])
    ap.add_argument("--ext", default=os.path.join(os.getcwd(), "h5mem"))
    ap.add_argument("--dir", default=None, help="where the files go (default: a temporary directory)")
    ap.add_argument("--storage", default="float32")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="bench_migrate_")
    print("h5mem_migrate: %s source, %d rows, storage=%s, in %s" % (a.schema, a.rows, a.storage, d))
    print("%6s %9s %10s %9s %10s %11s %10s" % ("dim", "rows/s", "seconds", "peak MiB", "emb MiB", "source MiB", "h5 MiB"))
    for dim in [int(x) for x in a.dims.split(",")]:
        src = os.path.join(d, "src_%d.db" % dim)
        dst = os.path.join(d, "dst_%d.h5" % dim)
        for f in (src, dst, dst + "-wal"):
            if os.path.exists(f):
                os.unlink(f)
        build(src, a.rows, dim, a.schema)
        prog = os.path.join(d, "progress_%d.jsonl" % dim)
        rep, secs, rss = run(a.ext, src, dst, {"progress": prog, "progress_every": 10000, "storage": a.storage})
        assert rep["rows_written"] == a.rows, rep
        print("%6d %9.0f %10.2f %9.1f %10.1f %11.1f %10.1f" % (
            dim, a.rows / secs, secs, rss / 2**20, a.rows * dim * 4 / 2**20,
            os.path.getsize(src) / 2**20, os.path.getsize(dst) / 2**20))
        last = open(prog).read().splitlines()[-1]
        print("       last progress line: %s" % last)


if __name__ == "__main__":
    main()
