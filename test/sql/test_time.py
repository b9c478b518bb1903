"""Time ranges on the h5mem table from the temporal index (issue 19; docs/SQL.md,
"Time ranges").

Every operator on ts (=, <, <=, >, >=, BETWEEN, two bounds), with and
without `session = ?`, ORDER BY ts [DESC] and a LIMIT, gives exactly what
an ordinary SQLite table with the same rows gives: random ts with many
ties, deletes, updates that change ts, uncommitted rows in a transaction
(and a savepoint rolled back), after a checkpoint and after reopening;
bounds of every type (integers, reals, numeric text, text, NULL).  ORDER
BY ts is compared as the sequence of ts (ties may come in another order:
ours is the order the records were stored) and as a set of rows without a
LIMIT; ORDER BY ts, id exactly.  EXPLAIN QUERY PLAN and h5mem_index's
"time_index" counter show the index answers them, with no sort for ORDER
BY ts; id lookups and KNN keep their plans.  vec_search, bm25 and hybrid
with a ts range (selective: read from the index) give what the same
search gives with the range's records listed as `id IN (...)`.
"""
import json
import os
import random
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, finish, q  # noqa: E402

DIM = 4
WORDS = ["coffee", "garden", "rain", "train", "book", "music", "river", "cat"]
rng = random.Random(int(os.environ.get("H5MEM_TEST_SEED", "19")))


def open_mem(db, path):
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS mem USING h5mem(path=%s, dim=%d)" % (q(path), DIM))


def reopen(db, path):
    """db closed and a new connection on the store at path, with the
    reference table's rows copied over."""
    want = db.execute("SELECT id, text, session, ts FROM ref").fetchall()
    db.close()
    db = connect()
    open_mem(db, path)
    db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
    db.executemany("INSERT INTO ref VALUES (?, ?, ?, ?)", want)
    return db


def ranges(db):
    return json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]["ranges"]


def plan(db, sql, args=()):
    return " | ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN " + sql, args))


def new_row(i):
    emb = [rng.uniform(-1, 1) for _ in range(DIM)]
    return (i, " ".join(rng.choice(WORDS) for _ in range(3)), json.dumps(emb),
            "s%d" % rng.randrange(4) if rng.random() > 0.05 else None, rng.randrange(-3, 50))


def insert(db, rows):
    db.executemany("INSERT INTO mem(id, text, embedding, session, ts) VALUES (?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO ref(id, text, session, ts) VALUES (?, ?, ?, ?)",
                   [(r[0], r[1], r[3], r[4]) for r in rows])


CONDS = [
    ("ts = ?", 1), ("ts > ?", 1), ("ts >= ?", 1), ("ts < ?", 1), ("ts <= ?", 1),
    ("ts BETWEEN ? AND ?", 2), ("ts > ? AND ts <= ?", 2), ("? < ts AND ? >= ts", 2),
    ("ts >= ? AND ts < ? AND ts > ?", 3), ("ts = ? AND ts >= ?", 2),
]
SPECIAL = [None, 2.5, -0.5, "10", "abc", 10.0, 1e30, -1e30, 9223372036854775807, -9223372036854775808]


def bound():
    return rng.choice(SPECIAL) if rng.random() < 0.15 else rng.randrange(-5, 53)


def compare(db, what):
    """Every condition and order on mem against ref."""
    for cond, nargs in CONDS:
        for _ in range(3):
            args = tuple(bound() for _ in range(nargs))
            for sess in (None, "s%d" % rng.randrange(4)):
                where = cond + (" AND session = ?" if sess else "")
                a = args + ((sess,) if sess else ())
                got = sorted(db.execute("SELECT id, ts, session FROM mem WHERE " + where, a).fetchall())
                want = sorted(db.execute("SELECT id, ts, session FROM ref WHERE " + where, a).fetchall())
                check(got == want, "%s: %s %r: %d rows, expected %d" % (what, where, a, len(got), len(want)))
                for order in ("ASC", "DESC"):
                    sql = "SELECT id, ts FROM %s WHERE " + where + " ORDER BY ts " + order
                    g = db.execute(sql % "mem", a).fetchall()
                    w = db.execute(sql % "ref", a).fetchall()
                    check([r[1] for r in g] == [r[1] for r in w] and sorted(g) == sorted(w),
                          "%s: %s ORDER BY ts %s %r" % (what, where, order, a))
                    g = db.execute((sql % "mem") + ", id", a).fetchall()
                    w = db.execute((sql % "ref") + ", id", a).fetchall()
                    check(g == w, "%s: %s ORDER BY ts %s, id %r" % (what, where, order, a))
                    lim = rng.randrange(1, 8)
                    g = db.execute((sql % "mem") + " LIMIT %d" % lim, a).fetchall()
                    w = db.execute((sql % "ref") + " LIMIT %d" % lim, a).fetchall()
                    ok = [r[1] for r in g] == [r[1] for r in w] and len(set(g)) == len(g)
                    allrows = set(db.execute((sql % "ref"), a).fetchall())
                    check(ok and set(g) <= allrows, "%s: %s ORDER BY ts %s LIMIT %d %r: %r, expected %r" % (
                        what, where, order, lim, a, g, w))
    # the last n, with and without a session, and every row by ts
    for n in (1, 5, 20, 1000):
        for sess in (None, "s1"):
            where = " WHERE session = ?" if sess else ""
            a = (sess,) if sess else ()
            for order in ("ASC", "DESC"):
                sql = "SELECT ts FROM %s" + where + " ORDER BY ts " + order + " LIMIT %d" % n
                check(db.execute(sql % "mem", a).fetchall() == db.execute(sql % "ref", a).fetchall(),
                      "%s: ORDER BY ts %s LIMIT %d%s" % (what, order, n, where))


def test_table(d):
    fn = os.path.join(d, "t.h5")
    db = connect()
    open_mem(db, fn)
    db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
    db.execute("CREATE INDEX ref_ts ON ref(ts)")
    compare(db, "empty")
    insert(db, [new_row(i) for i in range(1, 401)])
    compare(db, "committed")
    db.execute("SELECT h5mem_checkpoint('mem')")
    compare(db, "checkpointed")
    # the plans: the index for ts, no sort for ORDER BY ts; ids and KNN as before
    p = plan(db, "SELECT id FROM mem WHERE ts BETWEEN 3 AND 9")
    check("INDEX 3:" in p, "a ts range uses the temporal index: %s" % p)
    p = plan(db, "SELECT id FROM mem ORDER BY ts DESC LIMIT 20")
    check("INDEX 3:D" in p and "TEMP B-TREE" not in p, "the last 20 read from the index, no sort: %s" % p)
    p = plan(db, "SELECT id FROM mem WHERE session = 's1' ORDER BY ts LIMIT 5")
    check("INDEX 3:AS" in p and "TEMP B-TREE" not in p, "session with ORDER BY ts: %s" % p)
    p = plan(db, "SELECT id FROM mem ORDER BY ts, id")
    check("TEMP B-TREE" in p, "ORDER BY ts, id is sorted by SQLite (ties are by position): %s" % p)
    p = plan(db, "SELECT id FROM mem WHERE id = 5 AND ts > 3")
    check("INDEX 1:" in p, "an id lookup stays the plan: %s" % p)
    p = plan(db, "SELECT id FROM mem WHERE embedding MATCH '[1,0,0,0]' AND k = 3 AND ts > 3")
    check("INDEX 2:" in p, "a KNN query stays the plan: %s" % p)
    p = plan(db, "SELECT id FROM mem WHERE session = 's1'")
    check("INDEX 3" not in p, "no ts condition, no order: a scan: %s" % p)
    r0 = ranges(db)
    n = db.execute("SELECT count(*) FROM mem WHERE ts > 40").fetchone()[0]
    check(ranges(db) == r0 + 1 and n > 0, "the query walked one range (%d -> %d)" % (r0, ranges(db)))
    ti = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]
    check(ti["built"] and ti["rows"] == 400, "time_index: %r" % ti)
    # deletes and updates that change ts (and session)
    for _ in range(60):
        i = rng.randrange(1, 401)
        db.execute("DELETE FROM mem WHERE id = ?", (i,))
        db.execute("DELETE FROM ref WHERE id = ?", (i,))
    for _ in range(60):
        i, t, s = rng.randrange(1, 401), rng.randrange(-3, 50), "s%d" % rng.randrange(4)
        for tab in ("mem", "ref"):
            db.execute("UPDATE %s SET ts = ?, session = ? WHERE id = ?" % tab, (t, s, i))
    db.execute("UPDATE mem SET ts = ts + 1 WHERE ts BETWEEN 10 AND 12")  # the range walked while it changes
    db.execute("UPDATE ref SET ts = ts + 1 WHERE ts BETWEEN 10 AND 12")
    db.execute("DELETE FROM mem WHERE ts > 45")
    db.execute("DELETE FROM ref WHERE ts > 45")
    compare(db, "updated")
    # uncommitted rows, and a savepoint rolled back
    db.execute("BEGIN")
    insert(db, [new_row(i) for i in range(401, 461)])
    db.execute("DELETE FROM mem WHERE ts = 7")
    db.execute("DELETE FROM ref WHERE ts = 7")
    compare(db, "in a transaction")
    db.execute("SAVEPOINT a")
    insert(db, [new_row(i) for i in range(461, 481)])
    db.execute("ROLLBACK TO a")
    db.execute("RELEASE a")
    compare(db, "after ROLLBACK TO")
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    compare(db, "checkpointed again")
    db.execute("INSERT INTO mem(mem) VALUES('optimize')")
    compare(db, "optimized")
    db = reopen(db, fn)
    compare(db, "reopened")
    # a second connection (a reader) sees the writer's commits in its ranges
    db2 = connect()
    open_mem(db2, fn)
    before = db2.execute("SELECT count(*) FROM mem WHERE ts > 100").fetchone()[0]
    db.execute("INSERT INTO mem(id, ts) VALUES (9999, 500)")
    after = db2.execute("SELECT id FROM mem WHERE ts > 100").fetchall()
    check(before == 0 and after == [(9999,)], "a reader's range after a commit: %r %r" % (before, after))
    db2.close()
    db.execute("DELETE FROM mem WHERE id = 9999")
    # ISO-8601 text bounds are compared as SQLite compares them (text sorts after integers)
    got = db.execute("SELECT count(*) FROM mem WHERE ts < '2024-01-01'").fetchone()[0]
    nref = db.execute("SELECT count(*) FROM ref").fetchone()[0]
    check(got == nref, "ts < text: every row (%d of %d)" % (got, nref))
    return db


def search_same(db, what, sql, ids_sql, args):
    g = db.execute(sql, args).fetchall()
    w = db.execute(ids_sql, args).fetchall()
    check(g == w, "%s: %r, expected %r" % (what, g[:5], w[:5]))


def test_searches(db):
    """vec_search, bm25 and hybrid with a ts range (selective: from the index)
    give what the same search with the range's ids listed gives."""
    for lo, hi in ((3, 5), (10, 10), (0, 40), (-100, 100), (60, 70)):
        ids = [r[0] for r in db.execute("SELECT id FROM mem WHERE ts BETWEEN ? AND ?", (lo, hi))]
        inlist = "(%s)" % ",".join(str(i) for i in ids) if ids else "(-1)"
        qv = json.dumps([rng.uniform(-1, 1) for _ in range(DIM)])
        for sess in ("", " AND session = 's2'"):
            r0 = ranges(db)
            search_same(db, "vec_search ts %d..%d%s" % (lo, hi, sess),
                        "SELECT id, distance FROM vec_search('mem', ?, 10, '{\"exact\":true}') WHERE ts BETWEEN %d AND %d%s" % (lo, hi, sess),
                        "SELECT id, distance FROM vec_search('mem', ?, 10, '{\"exact\":true}') WHERE id IN %s%s" % (inlist, sess), (qv,))
            search_same(db, "bm25 ts %d..%d%s" % (lo, hi, sess),
                        "SELECT id, score FROM bm25('mem', 'coffee rain', 10) WHERE ts BETWEEN %d AND %d%s" % (lo, hi, sess),
                        "SELECT id, score FROM bm25('mem', 'coffee rain', 10) WHERE id IN %s%s" % (inlist, sess), ())
            search_same(db, "hybrid ts %d..%d%s" % (lo, hi, sess),
                        "SELECT id, score FROM hybrid('mem', 'coffee garden', ?, 10) WHERE ts BETWEEN %d AND %d%s" % (lo, hi, sess),
                        "SELECT id, score FROM hybrid('mem', 'coffee garden', ?, 10) WHERE id IN %s%s" % (inlist, sess), (qv,))
            n = db.execute("SELECT count(*) FROM mem").fetchone()[0]
            if len(ids) < n / 8:
                db.execute("SELECT id FROM vec_search('mem', ?, 3) WHERE ts BETWEEN %d AND %d" % (lo, hi), (qv,)).fetchall()
                check(ranges(db) > r0, "vec_search ts %d..%d (%d of %d rows) reads the index" % (lo, hi, len(ids), n))


SESSIONS = ["a", "b", "c", "", "s\u00e9", "long-" + "x" * 300, "A"]


def time_index(db):
    return json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])["time_index"]


def sess_row(i):
    s = rng.choice(SESSIONS) if rng.random() > 0.1 else None
    return (i, "t%d" % i, None, s, rng.randrange(0, 30))  # (few ts: many ties within a session)


def compare_sessions(db, what):
    """session = ? (present, absent, empty, NULL) with every kind of ts
    condition and order, on mem against ref."""
    for sess in SESSIONS + ["zz", None]:
        for cond, nargs in (("1", 0), ("ts BETWEEN ? AND ?", 2), ("ts = ?", 1), ("ts > ?", 1), ("ts <= ?", 1)):
            args = tuple(rng.randrange(-2, 32) for _ in range(nargs)) + (sess,)
            where = " WHERE " + cond + " AND session = ?"
            for order in ("", " ORDER BY ts", " ORDER BY ts DESC"):
                if cond == "1" and not order:
                    continue
                sql = "SELECT id, ts, session FROM %s" + where + order
                g = db.execute(sql % "mem", args).fetchall()
                w = db.execute(sql % "ref", args).fetchall()
                check(sorted(g) == sorted(w) and (not order or [r[1] for r in g] == [r[1] for r in w]),
                      "%s: %s%s %r: %d rows, expected %d" % (what, where, order, args, len(g), len(w)))
                if order:
                    g = db.execute((sql % "mem") + ", id", args).fetchall()
                    w = db.execute((sql % "ref") + ", id", args).fetchall()
                    check(g == w, "%s: %s%s, id %r" % (what, where, order, args))
                    lim = rng.randrange(1, 6)
                    g = db.execute((sql % "mem") + " LIMIT %d" % lim, args).fetchall()
                    w = db.execute((sql % "ref") + " LIMIT %d" % lim, args).fetchall()
                    allrows = set(db.execute(sql % "ref", args).fetchall())
                    check([r[1] for r in g] == [r[1] for r in w] and set(g) <= allrows and len(set(g)) == len(g),
                          "%s: %s%s LIMIT %d %r: %r, expected %r" % (what, where, order, lim, args, g, w))
    p = plan(db, "SELECT id FROM mem WHERE session = ? AND ts > 3", ("a",))
    check("INDEX 3:" in p and "S" in p.split("INDEX 3:")[1], "%s: session with a ts range: %s" % (what, p))
    # session = NULL matches nothing; IS NULL is not the index's
    g = db.execute("SELECT count(*) FROM mem WHERE session = NULL ORDER BY ts").fetchone()[0]
    check(g == 0, "%s: session = NULL: %d rows" % (what, g))
    g = db.execute("SELECT id FROM mem WHERE session IS NULL AND ts >= 0 ORDER BY ts, id").fetchall()
    w = db.execute("SELECT id FROM ref WHERE session IS NULL AND ts >= 0 ORDER BY ts, id").fetchall()
    check(g == w, "%s: session IS NULL with a range" % what)


def sess_change(db, n0, n1):
    """Deletes, and updates that change the session, the ts or both."""
    for _ in range(25):
        i = rng.randrange(n0, n1)
        for tab in ("mem", "ref"):
            db.execute("DELETE FROM %s WHERE id = ?" % tab, (i,))
    for _ in range(40):
        i, t = rng.randrange(n0, n1), rng.randrange(0, 30)
        s = rng.choice(SESSIONS + [None, "new%d" % rng.randrange(3)])
        k = rng.randrange(3)
        for tab in ("mem", "ref"):
            if k == 0:
                db.execute("UPDATE %s SET session = ? WHERE id = ?" % tab, (s, i))
            elif k == 1:
                db.execute("UPDATE %s SET ts = ? WHERE id = ?" % tab, (t, i))
            else:
                db.execute("UPDATE %s SET ts = ?, session = ? WHERE id = ?" % tab, (t, s, i))


def test_sessions(d):
    """The per-session index: every combination against an ordinary table,
    carried over by a checkpoint, built again after optimize and reopening."""
    fn = os.path.join(d, "s.h5")
    db = connect()
    open_mem(db, fn)
    db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text TEXT, session TEXT, ts INTEGER)")
    compare_sessions(db, "sessions: empty")
    insert(db, [sess_row(i) for i in range(1, 301)])
    compare_sessions(db, "sessions: in memory")
    db.execute("SELECT h5mem_checkpoint('mem')")
    compare_sessions(db, "sessions: checkpointed")
    ti = time_index(db)
    check(ti["session"]["built"] and ti["session"]["sessions"] == len(SESSIONS)
          and ti["session"]["rows"] == db.execute("SELECT count(*) FROM ref WHERE session IS NOT NULL").fetchone()[0],
          "sessions: the per-session index: %r" % ti)
    # new rows (new sessions among them) in memory, then a checkpoint that carries the index over
    insert(db, [sess_row(i) for i in range(301, 361)] + [(361, "t", None, "fresh", 5), (362, "t", None, "fresh", 5)])
    sess_change(db, 1, 363)
    compare_sessions(db, "sessions: changed")
    before = time_index(db)
    db.execute("SELECT h5mem_checkpoint('mem')")
    compare_sessions(db, "sessions: checkpointed again")
    g = db.execute("SELECT id FROM mem WHERE session = 'fresh' AND ts = 5 ORDER BY ts, id").fetchall()
    w = db.execute("SELECT id FROM ref WHERE session = 'fresh' AND ts = 5 ORDER BY ts, id").fetchall()
    check(g == w, "sessions: a session first stored by the checkpoint: %r %r" % (g, w))
    after = time_index(db)
    check(after["session"]["built"] and after["session"]["sessions"] >= before["session"]["sessions"] and
          after["session"]["builds"] - before["session"]["builds"] == after["builds"] - before["builds"],
          "sessions: a checkpoint carries the per-session index over as the ts index: %r -> %r" % (before, after))
    # uncommitted rows, a savepoint rolled back, a range walked while its rows change
    db.execute("BEGIN")
    insert(db, [sess_row(i) for i in range(400, 440)])
    sess_change(db, 1, 440)
    compare_sessions(db, "sessions: in a transaction")
    db.execute("SAVEPOINT a")
    insert(db, [sess_row(i) for i in range(440, 460)])
    db.execute("ROLLBACK TO a")
    db.execute("RELEASE a")
    compare_sessions(db, "sessions: after ROLLBACK TO")
    for tab in ("mem", "ref"):
        db.execute("UPDATE %s SET ts = ts + 1 WHERE session = 'a' AND ts BETWEEN 5 AND 9" % tab)
    compare_sessions(db, "sessions: a range updated while walked")
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    compare_sessions(db, "sessions: committed, checkpointed")
    sess_change(db, 1, 440)
    db.execute("INSERT INTO mem(mem) VALUES('optimize')")
    compare_sessions(db, "sessions: optimized")
    db = reopen(db, fn)
    compare_sessions(db, "sessions: reopened")
    # a reader refreshed after the writer's checkpoint builds its index again
    db2 = connect()
    open_mem(db2, fn)
    n0 = db2.execute("SELECT count(*) FROM mem WHERE session = 'b' AND ts >= 0").fetchone()[0]
    db.execute("INSERT INTO mem(id, session, ts) VALUES (9001, 'b', 3)")
    db.execute("SELECT h5mem_checkpoint('mem')")
    n1 = db2.execute("SELECT count(*) FROM mem WHERE session = 'b' AND ts >= 0").fetchone()[0]
    check(n1 == n0 + 1, "sessions: a reader's session range after a checkpoint: %d -> %d" % (n0, n1))
    db2.close()
    db.close()


def test_edges(d):
    """Conditions a virtual table cannot read alone: a real bound near the
    ends of int64 (compared exactly, as SQLite compares an integer with a
    real), a session compared with a numeric column (numeric affinity:
    '05' = 5) and under another collation; in the temporal index's plan and
    in the KNN form, each against an ordinary table with the same rows."""
    db = connect()
    open_mem(db, os.path.join(d, "edges.h5"))
    db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, session TEXT, ts INTEGER)")
    big = 9220000000000000000
    rows = [(1, "5", 1), (2, "05", 2), (3, "5.0", 3), (4, " 5", 4), (5, "a", big), (6, "A", -big),
            (7, "", 5), (8, None, 6), (9, "5e0", 7)]
    for i, sess, ts in rows:
        db.execute("INSERT INTO mem(id, text, embedding, session, ts) VALUES (?, 'x', ?, ?, ?)",
                   (i, json.dumps([1.0, i, 0, 0]), sess, ts))
        db.execute("INSERT INTO ref VALUES (?, ?, ?)", (i, sess, ts))
    db.execute("CREATE TABLE n(x INTEGER)")
    db.execute("INSERT INTO n VALUES (5)")
    db.execute("CREATE TABLE r(x REAL)")
    db.execute("INSERT INTO r VALUES (5)")
    where = [("ts > ?", (9.21e18,)), ("ts >= ?", (9.21e18,)), ("ts <= ?", (-9.21e18,)), ("ts = ?", (9.22e18,)),
             ("ts < ?", (-9223372036854775808.0,)), ("ts >= ?", (-9223372036854775808.0,)),
             ("ts > ?", (9223372036854775807,)), ("ts < ?", (-9223372036854775808,)), ("ts > ?", (9.3e18,)),
             ("session = ? AND ts > 0", (5,)), ("session = ? AND ts > 0", ("5",)),
             ("session = ? COLLATE NOCASE AND ts > -1e19", ("a",))]
    joins = ["SELECT m.id FROM n CROSS JOIN {t} m WHERE m.session = n.x AND m.ts > 0",
             "SELECT m.id FROM n CROSS JOIN {t} m WHERE m.session = n.x ORDER BY m.ts",
             "SELECT m.id FROM r CROSS JOIN {t} m WHERE m.session = r.x AND m.ts > 0"]
    for stage in ("in memory", "checkpointed"):
        for w, a in where:
            got = sorted(db.execute("SELECT id FROM mem WHERE " + w, a).fetchall())
            want = sorted(db.execute("SELECT id FROM ref WHERE " + w, a).fetchall())
            check(got == want, "%s: %s %r: %r, want %r" % (stage, w, a, got, want))
        for j in joins:
            got = sorted(db.execute(j.format(t="mem")).fetchall())
            want = sorted(db.execute(j.format(t="ref")).fetchall())
            check(got == want, "%s: %s: %r, want %r" % (stage, j, got, want))
        # the KNN form, k covering every record: the matching ones, all of them
        for cond in ("m.session = n.x", "m.session = 'a' COLLATE NOCASE", "m.ts > 9.21e18"):
            got = sorted(db.execute("SELECT m.id FROM n CROSS JOIN mem m WHERE m.embedding MATCH '[1, 0, 0, 0]' "
                                    "AND k = 20 AND " + cond).fetchall())
            want = sorted(db.execute("SELECT m.id FROM n CROSS JOIN ref m WHERE " + cond).fetchall())
            check(got == want, "%s: KNN with %s: %r, want %r" % (stage, cond, got, want))
        db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    # a range walked in ts order stays in order when, under it, an insert is
    # taken back and another one takes its place behind the walk
    db = connect()
    open_mem(db, os.path.join(d, "undo.h5"))
    for i in range(1, 6):
        db.execute("INSERT INTO mem(id, text, ts) VALUES (?, 'x', ?)", (i, 10 * i))
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.execute("BEGIN")
    db.execute("SAVEPOINT sp0")
    db.execute("INSERT INTO mem(id, text, ts) VALUES (6, 'x', 100)")
    cur = db.cursor()
    cur.execute("SELECT id, ts FROM mem WHERE ts >= 0 ORDER BY ts")
    seen = [cur.fetchone() for _ in range(3)]
    db.execute("ROLLBACK TO sp0")
    db.execute("INSERT INTO mem(id, text, ts) VALUES (7, 'x', 5)")
    seen += cur.fetchall()
    check([t for _, t in seen] == sorted(t for _, t in seen) and (6, 100) not in seen,
          "ORDER BY ts across ROLLBACK TO and an insert behind the walk: %r" % seen)
    db.execute("COMMIT")
    db.close()


def main():
    d = tempfile.mkdtemp(prefix="test_time")
    try:
        db = test_table(d)
        test_searches(db)
        db.close()
        test_sessions(d)
        test_edges(d)
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
