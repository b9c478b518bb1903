"""Fleets (issue 26): h5mem(paths=...) is a read-only union of many stores.

Twelve stores written through their own tables (some rows deleted, some
stores checkpointed and some with their last writes still in the log),
and beside them the union done by hand: one store holding every record,
record (store s, id i) under id 1000 * (s + 1) + i, so that its order of
ids is the fleet's order of (store, id).  Then, each compared with the
union's answer:
- the scan (all columns), `store = ?`, `id = ?`, both, and filters;
- vec_search, the KNN form (`embedding MATCH ? AND k = N`), bm25 (scores
  equal: the fleet's BM25 uses the statistics of all its stores), hybrid
  (weighted and rrf, with rerank), each with filters, and the `path`
  column joined back to the fleet;
- a store added to the folder is in the next statement, a removed one is
  gone; a JSON list of paths; a pattern matching nothing;
- max_open=3 over the twelve: the same answers, and the process holds
  file descriptors for at most three stores between statements;
- errors: writes, a store of another dim in a search (its path named, the
  scan still works), a file that is no store, bad options.
"""
import json
import os
import random
import shutil
import sqlite3
import tempfile

from sqltest import check, connect as conn, finish

DIM = 8
NSTORES = 12
WORDS = ("river mountain coffee tea garden alpha beta gamma delta apple storm harbor lantern meadow "
         "copper violet").split()
TIERS = ("working", "episodic", "semantic")
SOURCES = ("user", "agent", "web")


def vec(rng):
    return [round(rng.uniform(-1, 1), 3) for _ in range(DIM)]


def build(tmp, rng):
    """The stores and the union by hand; the records as written."""
    folder = os.path.join(tmp, "agents")
    os.mkdir(folder)
    union = conn()
    union.execute("CREATE VIRTUAL TABLE u USING h5mem(path='%s', dim=%d)" % (os.path.join(tmp, "union.h5"), DIM))
    recs = {}
    for s in range(NSTORES):
        path = os.path.join(folder, "agent%02d.h5" % s)
        db = conn()
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d)" % (path, DIM))
        n = rng.randint(5, 40)
        db.execute("BEGIN")
        for i in range(1, n + 1):
            r = (i, " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))), vec(rng),
                 rng.choice(SOURCES), 1700000000 + rng.randint(0, 10 * 86400), rng.choice(TIERS))
            db.execute("INSERT INTO m(id, text, embedding, source, ts, tier) VALUES (?, ?, vec_f32(?), ?, ?, ?)",
                       (r[0], r[1], json.dumps(r[2]), r[3], r[4], r[5]))
            recs[(path, i)] = r
        db.execute("COMMIT")
        if s % 3 == 0:
            db.execute("INSERT INTO m(m) VALUES('checkpoint')")
        for i in rng.sample(range(1, n + 1), 2):  # deleted: in the log only for most stores
            db.execute("DELETE FROM m WHERE id = ?", (i,))
            del recs[(path, i)]
        if s % 3 == 1:
            db.execute("INSERT INTO m(m) VALUES('checkpoint')")
        db.close()
    union.execute("BEGIN")
    for (path, i), r in sorted(recs.items()):
        union.execute("INSERT INTO u(id, text, embedding, source, ts, tier) VALUES (?, ?, vec_f32(?), ?, ?, ?)",
                      (uid(path, i), r[1], json.dumps(r[2]), r[3], r[4], r[5]))
    union.execute("COMMIT")
    return folder, union, recs


def uid(path, i):
    return 1000 * (int(os.path.basename(path)[5:7]) + 1) + i


def back(u):
    """A union id as (store file name, id)."""
    return "agent%02d.h5" % (u // 1000 - 1), u % 1000


def fleet_rows(rows):
    return [(os.path.basename(p), i) + tuple(rest) for p, i, *rest in rows]


def union_rows(rows):
    return [back(u) + tuple(rest) for u, *rest in rows]


def rounded(rows, nd=9):
    return [tuple(round(x, nd) if isinstance(x, float) else x for x in r) for r in rows]


def main():
    rng = random.Random(26)
    tmp = tempfile.mkdtemp(prefix="h5mem_fleet_")
    old = os.getcwd()
    try:
        folder, union, recs = build(tmp, rng)
        os.chdir(tmp)
        db = conn()
        db.execute("CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/*.h5')")
        run_checks(db, union, recs, rng, "max_open=64")
        small = conn()
        small.execute("CREATE VIRTUAL TABLE fleet USING h5mem(paths='agents/*.h5', max_open=3)")
        fds0 = len(os.listdir("/proc/self/fd"))
        run_checks(small, union, recs, rng, "max_open=3")
        grown = len(os.listdir("/proc/self/fd")) - fds0
        one = conn()
        one.execute("CREATE VIRTUAL TABLE f1 USING h5mem(paths='agents/agent00.h5')")
        fa = len(os.listdir("/proc/self/fd"))
        one.execute("SELECT count(*) FROM f1").fetchone()
        per_store = len(os.listdir("/proc/self/fd")) - fa
        check(per_store >= 1, "an open store holds a file descriptor (%d)" % per_store)
        check(grown <= 3 * per_store, "max_open=3: %d descriptors held after the statements (%d per store)"
              % (grown, per_store))
        one.close()
        folder_changes(db)
        lists(db)
        errors(db, tmp)
        db.close()
        small.close()
        union.close()
    finally:
        os.chdir(old)
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


def run_checks(db, union, recs, rng, what):
    # the scan, whole
    got = fleet_rows(db.execute("SELECT store, id, text, source, ts, tier, embedding FROM fleet"))
    want = union_rows(union.execute("SELECT id, text, source, ts, tier, embedding FROM u ORDER BY id"))
    check(sorted(got) == sorted(want), "%s: the scan is the union (%d rows, %d expected)" % (what, len(got), len(want)))
    check(len(got) == len(recs), "%s: every live record once" % what)
    n = db.execute("SELECT count(*) FROM fleet WHERE store = 'agents/agent05.h5'").fetchone()[0]
    check(n == sum(1 for p, _ in recs if p.endswith("agent05.h5")), "%s: store = ? counts one store" % what)
    some = rng.choice(sorted(recs))
    row = db.execute("SELECT text FROM fleet WHERE store = ? AND id = ?",
                     (os.path.relpath(some[0]), some[1])).fetchall()
    check(row == [(recs[some][1],)], "%s: store = ? AND id = ? finds the record" % what)
    ids = fleet_rows(db.execute("SELECT store, id FROM fleet WHERE id = 3"))
    check(sorted(ids) == sorted((os.path.basename(p), 3) for p, i in recs if i == 3), "%s: id = 3 in every store" % what)
    got = fleet_rows(db.execute("SELECT store, id FROM fleet WHERE source = 'web' AND ts > 1700400000"))
    want = union_rows(union.execute("SELECT id FROM u WHERE source = 'web' AND ts > 1700400000"))
    check(sorted(got) == sorted(want), "%s: a filtered scan" % what)

    for trial in range(6):
        q = json.dumps(vec(rng))
        k = rng.choice([1, 5, 10, 40])
        flt, fargs = rng.choice([("", ()), (" WHERE source = ?", ("user",)), (" WHERE tier = ? AND ts >= ?",
                                                                          ("episodic", 1700300000))])
        got = fleet_rows(db.execute("SELECT path, id, distance FROM vec_search('fleet', ?, ?)" + flt, (q, k) + fargs))
        want = union_rows(union.execute("SELECT id, distance FROM vec_search('u', ?, ?)" + flt, (q, k) + fargs))
        check(rounded(got) == rounded(want), "%s: vec_search k=%d%s: %s, the union %s" % (what, k, flt, got[:3], want[:3]))
        knn = fleet_rows(db.execute("SELECT store, id, distance FROM fleet WHERE embedding MATCH ? AND k = ?"
                                    + flt.replace(" WHERE", " AND"), (q, k) + fargs))
        check(rounded(knn) == rounded(want), "%s: the KNN form k=%d%s" % (what, k, flt))
        t = " ".join(rng.sample(WORDS, 2))
        got = fleet_rows(db.execute("SELECT path, id, score FROM bm25('fleet', ?, ?)" + flt, (t, k) + fargs))
        want = union_rows(union.execute("SELECT id, score FROM bm25('u', ?, ?)" + flt, (t, k) + fargs))
        check(rounded(got) == rounded(want), "%s: bm25 %r k=%d%s: %s, the union %s" % (what, t, k, flt, got[:3], want[:3]))
        opts = rng.choice(['{}', '{"fusion": "rrf"}', '{"candidates": 7, "keyword_candidates": 5}',
                           '{"rerank": {"relevance": 1, "recency": 0.5, "now": 1701000000}}'])
        got = fleet_rows(db.execute("SELECT path, id, score, vector_score, keyword_score FROM hybrid('fleet', ?, ?, ?, ?)"
                                    + flt, (t, q, k, opts) + fargs))
        want = union_rows(union.execute("SELECT id, score, vector_score, keyword_score FROM hybrid('u', ?, ?, ?, ?)"
                                        + flt, (t, q, k, opts) + fargs))
        check(rounded(got) == rounded(want), "%s: hybrid %s k=%d%s: %s, the union %s" % (what, opts, k, flt, got[:3], want[:3]))
    # the path joined back to the fleet's rows
    q = json.dumps(vec(rng))
    got = fleet_rows(db.execute("SELECT v.path, v.id, m.text FROM vec_search('fleet', ?, 5) v "
                                "JOIN fleet m ON m.store = v.path AND m.id = v.id", (q,)))
    want = union_rows(union.execute("SELECT v.id, m.text FROM vec_search('u', ?, 5) v JOIN u m ON m.id = v.id", (q,)))
    check(sorted(got) == sorted(want), "%s: vec_search joined to the fleet by path and id" % what)


def folder_changes(db):
    before = db.execute("SELECT count(DISTINCT store) FROM fleet").fetchone()[0]
    w = conn()
    w.execute("CREATE VIRTUAL TABLE n USING h5mem(path='agents/agent99.h5', dim=%d)" % DIM)
    w.execute("INSERT INTO n(id, text, embedding) VALUES (1, 'a zebra crossing', vec_f32(?))", (json.dumps([1] * DIM),))
    got = db.execute("SELECT store, text FROM fleet WHERE store = 'agents/agent99.h5'").fetchall()
    check(got == [("agents/agent99.h5", "a zebra crossing")], "a store added to the folder is in the next statement: %s" % got)
    hit = db.execute("SELECT path, id FROM bm25('fleet', 'zebra', 3)").fetchall()
    check(hit == [("agents/agent99.h5", 1)], "... and in its searches: %s" % hit)
    w.execute("INSERT INTO n(id, text, embedding) VALUES (2, 'zebra again', vec_f32(?))", (json.dumps([1] * DIM),))
    hit = db.execute("SELECT id FROM bm25('fleet', 'zebra', 3) ORDER BY id").fetchall()
    check(hit == [(1,), (2,)], "a store's new commit is seen by the fleet's next statement: %s" % hit)
    w.close()
    os.remove("agents/agent99.h5")
    if os.path.exists("agents/agent99.h5-wal"):
        os.remove("agents/agent99.h5-wal")
    after = db.execute("SELECT count(DISTINCT store) FROM fleet").fetchone()[0]
    check(after == before, "a store removed from the folder is gone: %d, %d before" % (after, before))


def lists(db):
    db.execute("""CREATE VIRTUAL TABLE two USING h5mem(paths='["agents/agent03.h5", "agents/agent01.h5"]')""")
    got = db.execute("SELECT DISTINCT store FROM two").fetchall()
    check(got == [("agents/agent01.h5",), ("agents/agent03.h5",)], "a JSON list of paths, in path order: %s" % got)
    db.execute("CREATE VIRTUAL TABLE none USING h5mem(paths='nowhere/*.h5')")
    check(db.execute("SELECT count(*) FROM none").fetchone()[0] == 0, "a pattern matching nothing: no rows")
    check(db.execute("SELECT count(*) FROM vec_search('none', ?, 5)", (json.dumps([1] * DIM),)).fetchone()[0] == 0,
          "a search of an empty fleet: no rows")


def expect(db, sql, args, words, what):
    try:
        db.execute(sql, args).fetchall()
        check(False, "%s: no error" % what)
    except sqlite3.Error as e:
        check(all(w in str(e) for w in words), "%s: %s" % (what, e))


def errors(db, tmp):
    expect(db, "INSERT INTO fleet(text) VALUES ('x')", (), ["read-only"], "INSERT into a fleet")
    expect(db, "DELETE FROM fleet WHERE id = 1", (), ["read-only"], "DELETE from a fleet")
    expect(db, "CREATE VIRTUAL TABLE bad USING h5mem(paths='agents/*.h5', dim=4)", (), ["paths and max_open"],
           "a fleet with dim=")
    expect(db, "CREATE VIRTUAL TABLE bad USING h5mem(paths='agents/*.h5', max_open=0)", (), ["max_open"],
           "max_open=0")
    expect(db, "CREATE VIRTUAL TABLE bad USING h5mem(paths='[1, 2]')", (), ["paths"], "a list of numbers")
    os.mkdir("mixed")
    shutil.copy("agents/agent02.h5", "mixed/a.h5")
    w = conn()
    w.execute("CREATE VIRTUAL TABLE o USING h5mem(path='mixed/b.h5', dim=3)")
    w.execute("INSERT INTO o(id, text, embedding) VALUES (1, 'three', vec_f32('[1,0,0]'))")
    w.close()
    db.execute("CREATE VIRTUAL TABLE mixed USING h5mem(paths='mixed/*.h5')")
    n = db.execute("SELECT count(*) FROM mixed").fetchone()[0]
    check(n > 1, "a fleet of two dims is scanned (%d rows)" % n)
    expect(db, "SELECT * FROM vec_search('mixed', ?, 3)", (json.dumps([1] * DIM),), ["mixed/b.h5", "dim=3"],
           "vec_search over two dims names the store")
    with open("mixed/c.h5", "wb") as f:
        f.write(b"not an HDF5 file at all" * 10)
    expect(db, "SELECT count(*) FROM mixed", (), ["mixed/c.h5"], "a file that is no store names it")


main()
