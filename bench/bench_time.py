"""Time ranges on the h5mem table (issue 19, "Time: a temporal index"):
a window of about 100 rows and "the last 20", alone and with a session,
against the same queries on an ordinary SQLite table with indexes on ts
and (session, ts), in the same run on the same data: in a database file
(WAL journal, its own connection: durable, as the h5mem table is) and in
the h5mem connection's in-memory main database; and against a full scan
of the h5mem table (the index not used: `+ts` hides the column from
the planner).  Also the cost of building the index (first query after
opening) and of a checkpoint that carries it over.

  /usr/bin/python3 bench/bench_time.py [--rows 1000000] [--reps 200] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  Records: ts random
over a year, session among 100, a short text, no embedding (dim 8).  Times
are medians over random bounds, through Python's sqlite3 (each includes
one statement's Python and SQLite overhead), files in the page cache.
"""
import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import statistics
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchutil import connect, q  # noqa: E402

YEAR = 365 * 86400
T0 = 1_700_000_000




def median_us(db, sql, argsf, reps):
    ts = []
    n = 0
    for _ in range(reps):
        a = argsf()
        t = time.perf_counter()
        rows = db.execute(sql, a).fetchall()
        ts.append(time.perf_counter() - t)
        n += len(rows)
    return statistics.median(ts) * 1e6, n / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--scan-reps", type=int, default=3)
    ap.add_argument("--dir")
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench_time", dir=a.dir)
    rng = random.Random(19)
    n = a.rows
    try:
        fn = os.path.join(d, "t.h5")
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=8, sync=off)" % q(fn))
        db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
        rows = [(i, "memory %d" % i, "s%d" % rng.randrange(100), T0 + rng.randrange(YEAR)) for i in range(1, n + 1)]
        t = time.perf_counter()
        db.execute("BEGIN")
        db.executemany("INSERT INTO mem(id, text, session, ts) VALUES (?, ?, ?, ?)", rows)
        db.execute("COMMIT")
        t_ins = time.perf_counter() - t
        t = time.perf_counter()
        db.execute("SELECT h5mem_checkpoint('mem')")
        t_ck = time.perf_counter() - t
        t = time.perf_counter()
        db.execute("BEGIN")
        db.executemany("INSERT INTO ref VALUES (?, ?, ?, ?)", rows)
        db.execute("CREATE INDEX ref_ts ON ref(ts)")
        db.execute("CREATE INDEX ref_sts ON ref(session, ts)")
        db.execute("COMMIT")
        t_ref = time.perf_counter() - t
        del rows
        print("%d rows: h5mem insert %.1f s + checkpoint %.1f s; SQLite table + 2 indexes %.1f s" % (n, t_ins, t_ck, t_ref))
        db.close()

        # the first query after opening builds the index
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY)")  # (placeholder: the reference is below)
        t = time.perf_counter()
        db.execute("SELECT id FROM mem ORDER BY ts DESC LIMIT 20").fetchall()
        t_first = time.perf_counter() - t
        ti = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]
        print("first query after opening: %.1f ms (building the index: %.1f ms, %d rows)" % (
            t_first * 1e3, ti["build_ms"], ti["rows"]))
        db.close()

        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        db.execute("SELECT id FROM mem ORDER BY ts DESC LIMIT 1").fetchall()  # (built)
        # rebuild the reference in this connection (an in-memory table)
        db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
        db.execute("BEGIN")
        db.execute("INSERT INTO ref SELECT id, text, session, ts FROM mem")
        db.execute("CREATE INDEX ref_ts ON ref(ts)")
        db.execute("CREATE INDEX ref_sts ON ref(session, ts)")
        db.execute("COMMIT")

        # and the same table in a database file (WAL journal, as an agent's
        # memory in SQLite is kept), through a connection of its own: a
        # durable store, as the h5mem table is, paying its per-statement
        # checks of the file as the h5mem table pays its own
        reff = os.path.join(d, "ref.db")
        db.execute("ATTACH %s AS f" % q(reff))
        db.execute("PRAGMA f.journal_mode=WAL")
        db.execute("CREATE TABLE f.ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
        db.execute("INSERT INTO f.ref SELECT * FROM main.ref")
        db.execute("CREATE INDEX f.ref_ts ON ref(ts)")
        db.execute("CREATE INDEX f.ref_sts ON ref(session, ts)")
        db.execute("DETACH f")
        fdb = sqlite3.connect(reff, isolation_level=None)
        fdb.execute("SELECT count(*) FROM ref").fetchall()

        w100 = int(YEAR * 100 / n)  # a window holding about 100 rows
        w100s = w100 * 100  # with a session (1 in 100): about 100 rows of it
        def win(w):
            def f():
                lo = T0 + rng.randrange(YEAR - w)
                return (lo, lo + w)
            return f
        def win_s(w):
            def f():
                lo = T0 + rng.randrange(YEAR - w)
                return ("s%d" % rng.randrange(100), lo, lo + w)
            return f
        def sess():
            return ("s%d" % rng.randrange(100),)
        queries = [
            ("100-row window", "SELECT id, ts FROM %s WHERE ts BETWEEN ? AND ?", win(w100)),
            ("last 20", "SELECT id, ts FROM %s ORDER BY ts DESC LIMIT 20", lambda: ()),
            ("session + window (~100 rows)", "SELECT id, ts FROM %s WHERE session = ? AND ts BETWEEN ? AND ?", win_s(w100s)),
            ("session, last 20", "SELECT id, ts FROM %s WHERE session = ? ORDER BY ts DESC LIMIT 20", sess),
        ]
        print()
        print("%-30s %12s %16s %15s %15s %8s" % ("query (%d rows)" % n, "h5mem (us)", "SQLite file (us)",
                                                 "SQLite mem (us)", "h5mem scan (us)", "rows"))
        for name, sql, argsf in queries:
            state = rng.getstate()
            m, rows_m = median_us(db, sql % "mem", argsf, a.reps)
            rng.setstate(state)
            rf, rows_f = median_us(fdb, sql % "ref", argsf, a.reps)
            rng.setstate(state)
            r, rows_r = median_us(db, sql % "ref", argsf, a.reps)
            rng.setstate(state)
            scan_sql = (sql % "mem").replace("ts BETWEEN", "+ts BETWEEN").replace("ORDER BY ts", "ORDER BY +ts")
            s, _ = median_us(db, scan_sql, argsf, a.scan_reps)
            check = "" if abs(rows_m - rows_r) < 1e-9 and abs(rows_m - rows_f) < 1e-9 else \
                "  (rows differ: %.1f vs %.1f, %.1f)" % (rows_m, rows_r, rows_f)
            print("%-30s %12.1f %16.1f %15.1f %15.0f %8.1f%s" % (name, m, rf, r, s, rows_m, check))
        p = " | ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN SELECT id FROM mem ORDER BY +ts DESC LIMIT 20"))
        print("(scan plan: %s)" % p)

        # a checkpoint after 1000 new rows carries the index over (no rebuild)
        db.execute("BEGIN")
        db.executemany("INSERT INTO mem(id, session, ts) VALUES (?, ?, ?)",
                       [(n + i, "s1", T0 + rng.randrange(YEAR)) for i in range(1, 1001)])
        db.execute("COMMIT")
        # (this connection became the store's writer: it loaded the store
        # for writing, and its first query builds the index again)
        db.execute("SELECT id FROM mem ORDER BY ts DESC LIMIT 20").fetchall()
        b0 = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]["builds"]
        t = time.perf_counter()
        db.execute("SELECT h5mem_checkpoint('mem')")
        t_ck = time.perf_counter() - t
        t = time.perf_counter()
        db.execute("SELECT id FROM mem ORDER BY ts DESC LIMIT 20").fetchall()
        t_q = time.perf_counter() - t
        ti = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]
        print("\ncheckpoint of 1000 rows: %.1f ms; the next last-20 query %.2f ms (index builds by the checkpoint: %d)" % (
            t_ck * 1e3, t_q * 1e3, ti["builds"] - b0))
        db.close()
        fdb.close()
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
