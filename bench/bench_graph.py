"""The knowledge graph from SQL (issue 8's benchmark), same process, same data:

  /usr/bin/python3 bench/bench_graph.py [--sizes 100,1000] [--queries 300] [--degree 4]

run from the build directory (./h5mem.so).

Random graphs of n entities and n x degree relations (3 relation types,
weights in [0.1, 1]) are written to an h5mem store's companion tables and,
the same rows, to ordinary tables (an index on each end of an edge) in the
same in-memory database.  Each query runs beside its peer, one query at a
time, alternating; results are compared.

1. BFS, 2 hops, direction out: kg_bfs('mem', start, 2) against a recursive
   CTE over the ordinary edges.  Also kg_bfs right after a write to the
   graph (a relation inserted and deleted), which makes the store rebuild
   its cached adjacency: the cost the cache saves.
2. Spreading activation over 100 entities (decay 0.5, threshold 0.01, 3
   steps, both directions): kg_activate against the same rule in plain SQL
   (one INSERT ... SELECT ... GROUP BY per step into a temporary table; a
   self-loop spreads once, as in lib/graph).
3. Resolution over 100 entities: kg_resolve with max_edits 0 against
   `name = ?` / `COLLATE NOCASE` lookups, and with max_edits 2 against a
   scan calling a Python Levenshtein function (sqlite3 create_function).
"""
import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time

BUILD = os.getcwd()
EXT = os.path.join(BUILD, "h5mem")
SYL = ["ka", "to", "ri", "mo", "ne", "sa", "lu", "pe", "di", "go", "an", "el"]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def make_graph(db, d, n, degree, seed):
    rng = random.Random(seed)
    path = os.path.join(d, "g%d.h5" % n)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=2)" % path.replace("'", "''"))
    names = []
    seen = set()
    while len(names) < n:
        w = "".join(rng.choice(SYL) for _ in range(rng.randint(2, 4))).capitalize()
        if w not in seen:
            seen.add(w)
            names.append(w)
    edges = [(rng.randint(1, n), rng.randint(1, n), rng.choice("abc"), round(rng.uniform(0.1, 1), 3))
             for _ in range(n * degree)]
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem_entities(id, name) VALUES (?, ?)", list(enumerate(names, 1)))
    db.executemany("INSERT INTO mem_relations(src, dst, type, weight) VALUES (?, ?, ?, ?)", edges)
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.execute("CREATE TABLE ents(id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("CREATE INDEX ents_name ON ents(name)")
    db.execute("CREATE INDEX ents_nocase ON ents(name COLLATE NOCASE)")
    db.execute("CREATE TABLE e(id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, type TEXT, weight REAL)")
    db.execute("CREATE INDEX e_src ON e(src)")
    db.execute("CREATE INDEX e_dst ON e(dst)")
    db.executemany("INSERT INTO ents VALUES (?, ?)", list(enumerate(names, 1)))
    db.executemany("INSERT INTO e(src, dst, type, weight) VALUES (?, ?, ?, ?)", edges)
    return names


def timed(fn, *a):
    t = time.perf_counter()
    r = fn(*a)
    return time.perf_counter() - t, r


def report(label, ts_a, ts_b, na, nb):
    ma, mb = statistics.median(ts_a) * 1e6, statistics.median(ts_b) * 1e6
    print("  %-44s %-14s p50 %8.1f us   %-22s p50 %8.1f us   ratio %.2fx"
          % (label, na, ma, nb, mb, mb / ma if ma else float("nan")))


BFS_CTE = ("WITH RECURSIVE r(id, d) AS (SELECT ?1, 0 UNION SELECT e.dst, r.d + 1 FROM r JOIN e ON e.src = r.id "
           "WHERE r.d < ?2) SELECT id, min(d) FROM r GROUP BY id")


def bench_bfs(db, n, queries, rng):
    ta, tb, tc, bad = [], [], [], 0
    t0, s = time.perf_counter(), 0
    while time.perf_counter() - t0 < 0.3:  # warm up (caches, the CPU's clock)
        s += 1
        db.execute("SELECT id, depth FROM kg_bfs('mem', ?, 2)", (s % n + 1,)).fetchall()
        db.execute(BFS_CTE, (s % n + 1, 2)).fetchall()
    for _ in range(queries):
        s = rng.randint(1, n)
        t1, a = timed(lambda: db.execute("SELECT id, depth FROM kg_bfs('mem', ?, 2)", (s,)).fetchall())
        t2, b = timed(lambda: db.execute(BFS_CTE, (s, 2)).fetchall())
        ta.append(t1)
        tb.append(t2)
        bad += dict(a) != dict(b)
    for _ in range(max(queries // 5, 10)):  # after a write: the adjacency is rebuilt
        db.execute("INSERT INTO mem_relations(id, src, dst) VALUES (1000000000, 1, 1)")
        db.execute("DELETE FROM mem_relations WHERE id = 1000000000")
        s = rng.randint(1, n)
        t3, _ = timed(lambda: db.execute("SELECT id, depth FROM kg_bfs('mem', ?, 2)", (s,)).fetchall())
        tc.append(t3)
    report("BFS 2 hops, %d entities" % n, ta, tb, "kg_bfs", "recursive CTE")
    print("  %-44s %-14s p50 %8.1f us   (cached: %.1f us; mismatches %d)"
          % ("  kg_bfs right after a write", "kg_bfs", statistics.median(tc) * 1e6,
             statistics.median(ta) * 1e6, bad))


def sql_activate(db, seed, decay=0.5, threshold=0.01, steps=3):
    """kg_activate's rule in plain SQL: both directions, weights shared by W."""
    db.execute("DELETE FROM act")
    db.execute("INSERT INTO act VALUES (?, 1.0)", (seed,))
    for _ in range(steps):
        db.execute("DELETE FROM nxt")
        db.execute(
            "INSERT INTO nxt SELECT id, sum(a) FROM ("
            " SELECT id, a FROM act"
            " UNION ALL SELECT b.nb, act.a * ?1 * b.w / W.w FROM act JOIN both_e b ON b.id = act.id"
            "  JOIN wsum W ON W.id = act.id WHERE act.a >= ?2 AND W.w > 0"
            ") GROUP BY id", (decay, threshold))
        db.execute("DELETE FROM act")
        db.execute("INSERT INTO act SELECT * FROM nxt")
    return db.execute("SELECT id, a FROM act WHERE a >= ? ORDER BY a DESC, id", (threshold,)).fetchall()


def bench_activate(db, n, queries, rng):
    db.execute("CREATE TEMP VIEW both_e AS SELECT src AS id, dst AS nb, max(weight, 0) AS w FROM e "
               "WHERE src IN (SELECT id FROM ents) AND dst IN (SELECT id FROM ents) "
               "UNION ALL SELECT dst, src, max(weight, 0) FROM e "  # a self-loop once (lib/graph)
               "WHERE src != dst AND src IN (SELECT id FROM ents) AND dst IN (SELECT id FROM ents)")
    db.execute("CREATE TEMP TABLE wsum AS SELECT id, sum(w) AS w FROM both_e GROUP BY id")
    db.execute("CREATE INDEX temp.wsum_id ON wsum(id)")
    db.execute("CREATE TEMP TABLE act(id INTEGER PRIMARY KEY, a REAL)")
    db.execute("CREATE TEMP TABLE nxt(id INTEGER PRIMARY KEY, a REAL)")
    ta, tb, bad = [], [], 0
    for _ in range(queries):
        s = rng.randint(1, n)
        t1, a = timed(lambda: db.execute("SELECT id, activation FROM kg_activate('mem', ?)", (s,)).fetchall())
        t2, b = timed(sql_activate, db, s)
        ta.append(t1)
        tb.append(t2)
        da, dbb = dict(a), dict(b)
        bad += set(da) != set(dbb) or any(abs(da[k] - dbb[k]) > 1e-9 for k in da)
    report("activation, %d entities (mismatches %d)" % (n, bad), ta, tb, "kg_activate", "SQL, 3 steps")


def lev(a, b):
    a, b = a.casefold(), b.casefold()
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def bench_resolve(db, names, queries, rng):
    db.create_function("lev", 2, lev, deterministic=True)
    ta, tb, tc, td, bad = [], [], [], [], 0
    for _ in range(queries):
        name = rng.choice(names)
        q = rng.choice([name, name.lower(), name[:-1] + "x"])
        t1, a = timed(lambda: db.execute("SELECT id FROM kg_resolve('mem', ?, 0)", (q,)).fetchall())
        t2, b = timed(lambda: db.execute(
            "SELECT id FROM ents WHERE name = ?1 UNION SELECT id FROM ents WHERE name = ?1 COLLATE NOCASE",
            (q,)).fetchall())
        t3, c = timed(lambda: db.execute("SELECT id FROM kg_resolve('mem', ?, 2)", (q,)).fetchall())
        t4, e = timed(lambda: db.execute("SELECT id FROM ents WHERE lev(name, ?) <= 2", (q,)).fetchall())
        ta.append(t1)
        tb.append(t2)
        tc.append(t3)
        td.append(t4)
        bad += set(a) != set(b) or set(c) != set(e)
    report("resolution, %d entities, exact/case" % len(names), ta, tb, "kg_resolve 0", "= / NOCASE")
    report("resolution, %d entities, <= 2 edits (mism. %d)" % (len(names), bad), tc, td, "kg_resolve 2",
           "scan + Python lev()")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--degree", type=int, default=4)
    args = ap.parse_args()
    print("bench_graph: %s, Python %s, SQLite %s, degree %d, %d queries"
          % (platform.machine(), platform.python_version(), sqlite3.sqlite_version, args.degree, args.queries))
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as d:
        for n in (int(x) for x in args.sizes.split(",")):
            db = connect()
            names = make_graph(db, d, n, args.degree, seed=n)
            print("%d entities, %d relations" % (n, n * args.degree))
            bench_bfs(db, n, args.queries, rng)
            if n <= 100:
                bench_activate(db, n, args.queries, rng)
                bench_resolve(db, names, args.queries, rng)
            db.close()


if __name__ == "__main__":
    main()
