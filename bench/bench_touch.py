"""Touches and changes in place (issue 19, "Reinforce"): what recording a
use costs through SQL, and what a checkpoint after many of them writes.

  /usr/bin/python3 bench/bench_touch.py [--rows 100000] [--touches 10000] [--dim 384] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  A store of --rows
records (a 200-byte text and a random float32 embedding of --dim values,
1,024 rows a chunk), checkpointed; then, each from a copy of that store:

- per touch, through Python's sqlite3, --touches of them in one
  transaction: `UPDATE mem SET access_count = access_count + 1,
  last_access = ? WHERE id = ?` (a change in place), h5mem_touch(), the
  touch command, and, for reference in the same run, the same UPDATE on an
  ordinary SQLite table (INTEGER PRIMARY KEY, the same columns and data,
  in a file) and an UPDATE of `tags` on the h5mem table (what any touch
  cost before: the whole record written again);
- the checkpoint after --touches touches: spread over the whole store
  (random ids: every chunk touched), and clustered (ids 1..touches: the
  fewest chunks), against the checkpoint after --touches whole-record
  updates; its time and the bytes the .h5 file grew by; the log's bytes.

Times are wall clock, files in the page cache; sync=off for the h5mem
table and synchronous=OFF for SQLite's, so that the fsyncs (the same on
both sides) do not hide the work.
"""
import argparse
import os
import random
import shutil
import sqlite3
import sys
import struct
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import connect, q  # noqa: E402





def open_store(path, dim):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, sync=off)" % (q(path), dim))
    return db


def timed(f):
    t = time.perf_counter()
    r = f()
    return time.perf_counter() - t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--touches", type=int, default=10000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--dir")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench_touch", dir=a.dir)
    base = os.path.join(tmp, "base.h5")
    rnd = random.Random(1)
    db = open_store(base, a.dim)
    ref = sqlite3.connect(os.path.join(tmp, "ref.db"), isolation_level=None)
    ref.execute("PRAGMA synchronous=OFF")
    ref.execute("PRAGMA journal_mode=WAL")
    ref.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text, embedding, source, session, tags, ts, tier, "
                "importance, access_count, last_access, meta)")
    db.execute("BEGIN")
    ref.execute("BEGIN")
    text = "x" * 200
    for i in range(1, a.rows + 1):
        emb = struct.pack("%df" % a.dim, *(rnd.random() for _ in range(a.dim)))
        vals = (i, text, emb, "src", "s%d" % (i % 100), None, 1700000000 + i, "working", None, 0, None, None)
        db.execute("INSERT INTO mem(id, text, embedding, source, session, tags, ts, tier, importance, "
                   "access_count, last_access, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", vals)
        ref.execute("INSERT INTO ref VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", vals)
    db.execute("COMMIT")
    ref.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    size0 = os.path.getsize(base)
    print("store: %d records, dim %d, %.1f MB" % (a.rows, a.dim, size0 / 1e6))

    n = a.touches
    spread = [rnd.randint(1, a.rows) for _ in range(n)]
    clustered = list(range(1, n + 1))
    now = 1800000000

    def per_touch(label, stmt, ids, conn=None, table="mem"):
        path = os.path.join(tmp, "t.h5")
        shutil.copy(base, path)
        c = conn or open_store(path, a.dim)
        c.execute("SELECT count(*) FROM %s WHERE id = 1" % table).fetchall()  # (opened, warm)
        c.execute("BEGIN")
        t, _ = timed(lambda: [c.execute(stmt, (now + k, i)) for k, i in enumerate(ids)])
        t2, _ = timed(lambda: c.execute("COMMIT"))
        wal = os.path.getsize(path + "-wal") if conn is None else 0
        print("%-58s %8.2f us/touch  commit %7.1f ms  log %6.1f bytes/touch" %
              (label, t / len(ids) * 1e6, t2 * 1e3, wal / len(ids)))
        if conn is None:
            c.close()
            os.unlink(path)
            os.unlink(path + "-wal") if os.path.exists(path + "-wal") else None

    print("\n-- per touch, %d in one transaction, random ids" % n)
    per_touch("h5mem UPDATE access_count, last_access (in place)",
              "UPDATE mem SET access_count = access_count + 1, last_access = ?1 WHERE id = ?2", spread)
    per_touch("h5mem h5mem_touch('mem', id, now)", "SELECT h5mem_touch('mem', ?2, ?1)", spread)
    per_touch("h5mem INSERT INTO mem(mem, id, last_access) 'touch'",
              "INSERT INTO mem(mem, id, last_access) VALUES('touch', ?2, ?1)", spread)
    per_touch("SQLite table UPDATE access_count, last_access (reference)",
              "UPDATE ref SET access_count = access_count + 1, last_access = ?1 WHERE id = ?2", spread, ref, "ref")
    per_touch("h5mem UPDATE tags (the whole record again, as before)",
              "UPDATE mem SET tags = ?1 WHERE id = ?2", spread)

    def ckpt(label, stmt, ids):
        path = os.path.join(tmp, "c.h5")
        shutil.copy(base, path)
        c = open_store(path, a.dim)
        c.execute("BEGIN")
        for k, i in enumerate(ids):
            c.execute(stmt, (now + k, i))
        c.execute("COMMIT")
        wal = os.path.getsize(path + "-wal")
        s0 = os.path.getsize(path)
        t, _ = timed(lambda: c.execute("SELECT h5mem_checkpoint('mem')").fetchall())
        grew = os.path.getsize(path) - s0
        print("%-58s %8.1f ms  file +%9d bytes  (log was %d bytes)" % (label, t * 1e3, grew, wal))
        c.close()
        os.unlink(path)
        os.unlink(path + "-wal")

    print("\n-- checkpoint after %d changes" % n)
    touch = "UPDATE mem SET access_count = access_count + 1, last_access = ?1 WHERE id = ?2"
    ckpt("touches, random ids (every chunk)", touch, spread)
    ckpt("touches, ids 1..%d (%d chunks)" % (n, (n + 1023) // 1024), touch, clustered)
    ckpt("whole-record updates (tags), random ids (reference)", "UPDATE mem SET tags = ?1 WHERE id = ?2", spread)
    ref.close()
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
