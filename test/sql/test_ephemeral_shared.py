"""The ephemeral tier shared by the connections of one process (issue 24):
every connection that has an ephemeral table of a name shares its store.

- two connections (each its own :memory: database, same thread): what one
  commits the other reads (rows, vec_search, bm25, the graph, kg_bfs), and
  the other way round;
- isolation: an open transaction's changes are not seen elsewhere until
  COMMIT, never after ROLLBACK; a second writer in the same thread is
  refused at once with a clear message, and succeeds after the COMMIT;
- a table of the name with other options is refused, naming both; a
  rename is refused (the name names the store);
- a connection alone keeps no log (h5mem_index: no frames); one that joins
  it later reads all its records, graph and changes (a snapshot of them
  starts the log), but not while it has a write transaction open in the
  same thread; alone again, the log is dropped;
- the store is gone when its last connection closes (a new one is empty);
- expiry: one clock for the process (h5mem_clock on one connection is the
  other's), expired records gone for both, a key expired and put again;
- capacity: the records a commit evicts are gone for every connection;
- the log in memory: after much more than a snapshot's worth of writes, a
  connection that did not read meanwhile (marked stale, reloaded), one
  that read now and then, and one opened afterwards (from the snapshot)
  all read exactly the writer's records and graph;
- threads: 4 threads, each with its own connection, INSERT OR REPLACE by
  key, DELETE, UPDATE and read at once (writers wait for each other); at
  the end every connection reads the same records, the model's;
- a reader holding a cursor open while another connection writes keeps
  reading the records as of its start.
"""
import os
import json
import random
import sqlite3
import struct
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqltest  # noqa: E402
from sqltest import check, connect, expect_error, finish  # noqa: E402

DIM = 8
WORDS = "tea coffee garden river mountain city train memory agent note plan task".split()


def vec(rng):
    return struct.pack("%df" % DIM, *[rng.uniform(-1, 1) for _ in range(DIM)])


def failures_now():
    return len(sqltest.failures) > 0


def rows(db, t="kv"):
    return db.execute("SELECT id, text, key, embedding, importance, tier, expires_at FROM %s ORDER BY id" % t).fetchall()


def graph(db, t="kv"):
    return (db.execute("SELECT id, name, type FROM %s_entities ORDER BY id" % t).fetchall(),
            db.execute("SELECT src, dst, type FROM %s_relations ORDER BY src, dst" % t).fetchall(),
            db.execute("SELECT memory_id, entity_id FROM %s_mentions ORDER BY 1, 2" % t).fetchall())


DECL = "h5mem(ephemeral=on, dim=%d, key text primary key)" % DIM


def two_connections():
    a, b = connect(), connect()
    a.execute("CREATE VIRTUAL TABLE kv USING " + DECL)
    b.execute("CREATE VIRTUAL TABLE kv USING " + DECL)  # (joins a's store)
    rng = random.Random(1)
    a.execute("BEGIN")
    for i in range(50):
        a.execute("INSERT INTO kv(text, embedding, key, importance) VALUES (?, ?, ?, ?)",
                  (" ".join(rng.choice(WORDS) for _ in range(4)), vec(rng), "k%d" % i, i / 50))
    a.execute("INSERT INTO kv_entities(id, name, type) VALUES (1, 'Alice', 'person'), (2, 'Bob', 'person')")
    a.execute("INSERT INTO kv_relations(src, dst, type) VALUES (1, 2, 'knows')")
    a.execute("INSERT INTO kv_mentions(memory_id, entity_id) VALUES (3, 1)")
    a.execute("COMMIT")
    check(rows(a) == rows(b) and len(rows(b)) == 50, "b reads what a committed")
    check(graph(a) == graph(b) and len(graph(b)[0]) == 2, "b reads a's graph")
    qv = vec(random.Random(9))
    for sql, args in (("SELECT rowid, distance FROM vec_search('kv', ?, 10)", (qv,)),
                      ("SELECT rowid, score FROM bm25('kv', 'tea garden', 10)", ()),
                      ("SELECT * FROM kg_bfs('kv', 1, 2)", ()),
                      ("SELECT text FROM kv WHERE key = 'k7'", ())):
        check(a.execute(sql, args).fetchall() == b.execute(sql, args).fetchall(), "same answer: " + sql)
    b.execute("INSERT OR REPLACE INTO kv(text, key) VALUES ('from b', 'k7')")
    b.execute("DELETE FROM kv WHERE key = 'k8'")
    b.execute("UPDATE kv SET importance = 0.99, tier = 'warm' WHERE key = 'k9'")
    check(rows(a) == rows(b), "a reads what b committed")
    check(a.execute("SELECT text FROM kv WHERE key = 'k7'").fetchone() == ("from b",), "b's replacement")
    check(a.execute("SELECT count(*) FROM kv WHERE key = 'k8'").fetchone()[0] == 0, "b's delete")
    check(a.execute("SELECT importance, tier FROM kv WHERE key = 'k9'").fetchone() == (0.99, "warm"), "b's update")

    # isolation
    a.execute("BEGIN")
    a.execute("INSERT INTO kv(text, key) VALUES ('pending', 'p1')")
    check(b.execute("SELECT count(*) FROM kv WHERE key = 'p1'").fetchone()[0] == 0, "uncommitted: not seen")
    expect_error(b, "INSERT INTO kv(text, key) VALUES ('b too', 'p2')", "another connection of this thread")
    check(b.execute("SELECT count(*) FROM kv WHERE key = 'p2'").fetchone()[0] == 0, "the refused insert left nothing")
    a.execute("ROLLBACK")
    check(b.execute("SELECT count(*) FROM kv WHERE key = 'p1'").fetchone()[0] == 0, "rolled back: never seen")
    b.execute("INSERT INTO kv(text, key) VALUES ('b too', 'p2')")  # (the role given back)
    a.execute("BEGIN")
    a.execute("INSERT INTO kv(text, key) VALUES ('kept', 'p3')")
    a.execute("COMMIT")
    check(b.execute("SELECT text FROM kv WHERE key IN ('p2', 'p3') ORDER BY key").fetchall() ==
          [("b too",), ("kept",)], "both commits seen")
    check(rows(a) == rows(b), "the same records after the transactions")

    # another table of the name with other options
    c = connect()
    expect_error(c, "CREATE VIRTUAL TABLE kv USING h5mem(ephemeral=on, dim=4)", "dim=8")
    msg = expect_error(c, "CREATE VIRTUAL TABLE kv USING h5mem(ephemeral=on, dim=%d)" % DIM, "is open in this process")
    check("key text primary key" in msg, "the message names the other's columns: " + msg)
    c.close()

    # renaming would part the table from the store its name names: refused
    expect_error(a, "ALTER TABLE kv RENAME TO kv2", "is an ephemeral table: its name names its store")
    check(rows(a) == rows(b) and a.execute("SELECT count(*) FROM sqlite_master WHERE name = 'kv'").fetchone()[0] == 1,
          "the table as it was after a refused rename")

    # a cursor open in b while a writes: b's statement reads as of its start
    cur = b.execute("SELECT key FROM kv ORDER BY id")
    first = cur.fetchone()
    a.execute("DELETE FROM kv WHERE key = 'k20'")
    a.execute("INSERT INTO kv(text, key) VALUES ('late', 'late')")
    seen = [first[0]] + [r[0] for r in cur.fetchall()]
    check("k20" in seen and "late" not in seen, "an open cursor reads as of its start")
    check(b.execute("SELECT count(*) FROM kv WHERE key IN ('k20', 'late')").fetchone()[0] == 1, "then the new state")

    a.close()
    check(len(rows(b)) > 0, "b keeps the store when a closes")
    b.close()
    d = connect()
    d.execute("CREATE VIRTUAL TABLE kv USING " + DECL)
    check(rows(d) == [], "gone with the last connection: a new store is empty")
    d.close()


def expiry_and_capacity():
    a, b = connect(), connect()
    decl = "CREATE VIRTUAL TABLE ttl USING h5mem(ephemeral=on, dim=%d, ttl=60, key text primary key)" % DIM
    a.execute(decl)
    b.execute(decl)
    a.execute("SELECT h5mem_clock('ttl', 1000)")
    check(b.execute("SELECT h5mem_clock('ttl')").fetchone()[0] == 1000, "one clock for the process")
    a.execute("INSERT INTO ttl(text, key) VALUES ('short', 's'), ('long', 'l')")
    a.execute("UPDATE ttl SET expires_at = 2000 WHERE key = 'l'")
    check(b.execute("SELECT key, expires_at FROM ttl ORDER BY key").fetchall() == [("l", 2000), ("s", 1060)],
          "b reads the expiries")
    b.execute("SELECT h5mem_clock('ttl', 1060)")
    check(a.execute("SELECT key FROM ttl").fetchall() == [("l",)], "expired for a too")
    check(b.execute("SELECT key FROM ttl").fetchall() == [("l",)], "expired for b")
    b.execute("INSERT INTO ttl(text, key) VALUES ('again', 's')")  # (the key free again)
    check(a.execute("SELECT text, expires_at FROM ttl WHERE key = 's'").fetchone() == ("again", 1120),
          "a key expired and put again, seen elsewhere")
    a.execute("SELECT h5mem_clock('ttl', 5000)")
    check(a.execute("SELECT count(*) FROM ttl").fetchone()[0] == 0 and
          b.execute("SELECT count(*) FROM ttl").fetchone()[0] == 0, "all expired for both")
    b.execute("INSERT INTO ttl(text, key) VALUES ('new', 's')")
    check(a.execute("SELECT text FROM ttl").fetchall() == [("new",)], "a key put again after both expired it")

    decl = "CREATE VIRTUAL TABLE cap USING h5mem(ephemeral=on, dim=%d, capacity=3, key text primary key)" % DIM
    a.execute(decl)
    b.execute(decl)
    for k in "abcde":
        a.execute("INSERT INTO cap(text, key) VALUES (?, ?)", (k, k))
    check([r[0] for r in b.execute("SELECT key FROM cap ORDER BY key")] == ["c", "d", "e"],
          "the evicted are gone for b")
    b.execute("INSERT INTO cap(text, key) VALUES ('f', 'f')")
    check([r[0] for r in a.execute("SELECT key FROM cap ORDER BY key")] == ["d", "e", "f"],
          "b's commit evicts for a")
    # least recent use across connections: b reads d, then a's insert evicts e (not d)
    check(b.execute("SELECT text FROM cap WHERE key = 'd'").fetchone() == ("d",), "b reads d")
    a.execute("INSERT INTO cap(text, key) VALUES ('g', 'g')")
    check([r[0] for r in b.execute("SELECT key FROM cap ORDER BY key")] == ["d", "f", "g"],
          "b's read counted for a's eviction")
    # many records: each commit past the capacity evicts the oldest use
    a.execute("CREATE VIRTUAL TABLE cap2 USING h5mem(ephemeral=on, dim=%d, capacity=100, key text primary key)" % DIM)
    b.execute("CREATE VIRTUAL TABLE cap2 USING h5mem(ephemeral=on, dim=%d, capacity=100, key text primary key)" % DIM)
    for i in range(100):
        a.execute("INSERT INTO cap2(text, key) VALUES (?, ?)", (str(i), "c%d" % i))
    for i in range(0, 100, 2):  # b reads the even ones
        b.execute("SELECT text FROM cap2 WHERE key = ?", ("c%d" % i,)).fetchone()
    for i in range(100, 150):
        a.execute("INSERT INTO cap2(text, key) VALUES (?, ?)", (str(i), "c%d" % i))
    left = sorted(int(r[0][1:]) for r in b.execute("SELECT key FROM cap2"))
    check(left == list(range(0, 100, 2)) + list(range(100, 150)), "the odd ones evicted, read ones kept: %s" % left[:10])
    a.close()
    b.close()


def log(db, t):
    return json.loads(db.execute("SELECT h5mem_index(?)", (t,)).fetchone()[0])["log"]


def snapshots():
    """Far more than a snapshot's worth (1 MiB) of writes: an idle reader,
    a reader now and then, a connection opened afterwards."""
    w, idle, some = connect(), connect(), connect()
    decl = "CREATE VIRTUAL TABLE big USING h5mem(ephemeral=on, dim=%d, key text primary key)" % DIM
    for db in (w, idle, some):
        db.execute(decl)
    check(rows(idle, "big") == [], "idle starts empty")
    rng = random.Random(5)
    pad = "x" * 900
    w.execute("INSERT INTO big_entities(id, name, type) VALUES (1, 'Alice', 'person'), (2, 'Bob', 'person')")
    for rnd in range(12):
        w.execute("BEGIN")
        for i in range(400):
            k = "k%d" % rng.randrange(1500)
            w.execute("INSERT OR REPLACE INTO big(text, embedding, key) VALUES (?, ?, ?)",
                      ("%s %d %s" % (rng.choice(WORDS), rnd, pad), vec(rng), k))
        w.execute("DELETE FROM big WHERE key IN (%s)" % ",".join("'k%d'" % rng.randrange(1500) for _ in range(50)))
        w.execute("COMMIT")
        w.execute("INSERT INTO big_relations(src, dst, type) VALUES (1, 2, 'r%d')" % rnd)
        if rnd % 3 == 0:
            check(rows(some, "big") == rows(w, "big"), "the reader now and then, round %d" % rnd)
    late = connect()
    late.execute(decl)
    lw = log(w, "big")
    print("log:", lw)
    check(lw["snapshots"] >= 2 and lw["connections"] == 4, "snapshots written: %s" % lw)
    # the log holds about a snapshot and what came after: not every write (~5 MB)
    check(lw["bytes"] < 4 * 2**20 and lw["frames"] < 40, "the log trimmed: %s" % lw)
    # the idle one, far behind, first runs a DELETE ... WHERE: its statement's
    # own cursor holds nothing yet, so it reloads rather than fail
    idle.execute("DELETE FROM big WHERE key = 'no such key'")
    check(log(idle, "big")["reloads"] == 1, "a DELETE ... WHERE reloads a stale connection: %s" % log(idle, "big"))
    want = rows(w, "big")
    check(len(want) > 500, "records written: %d" % len(want))
    for name, db in (("idle", idle), ("now and then", some), ("opened afterwards", late)):
        check(rows(db, "big") == want, name + ": the writer's records")
        check(graph(db, "big") == graph(w, "big"), name + ": the writer's graph")
        qv = vec(rng)
        sql = "SELECT rowid, distance FROM vec_search('big', ?, 5)"
        check(db.execute(sql, (qv,)).fetchall() == w.execute(sql, (qv,)).fetchall(), name + ": vec_search")
    check(log(idle, "big")["reloads"] == 1, "idle, far behind, reloaded once: %s" % log(idle, "big"))
    check(log(some, "big")["reloads"] == 0, "the reader now and then replayed, never reloaded")
    check(log(late, "big")["reloads"] == 0, "opened afterwards: from the snapshot, no reload")
    # then the one opened afterwards writes, and the others read it
    late.execute("INSERT INTO big(text, key) VALUES ('from late', 'late')")
    check(idle.execute("SELECT text FROM big WHERE key = 'late'").fetchone() == ("from late",), "late's write seen")
    # a connection holding a cursor open while the others write far more
    # than the log keeps cannot reload under it: its write says so; once
    # the statement is done it reloads and writes
    cur = some.execute("SELECT key FROM big ORDER BY id")
    held = cur.fetchone()
    for rnd in range(12):
        w.execute("BEGIN")
        for i in range(400):
            w.execute("INSERT OR REPLACE INTO big(text, key) VALUES (?, ?)",
                      ("again %d %s" % (rnd, pad), "k%d" % rng.randrange(1500)))
        w.execute("COMMIT")
    expect_error(some, "INSERT INTO big(text, key) VALUES ('while held', 'held')", "changed too much")
    rest = cur.fetchall()
    check(held is not None and len(rest) + 1 == len(want) + 1, "the held cursor read its records to the end")
    some.execute("INSERT INTO big(text, key) VALUES ('after', 'held')")
    check(log(some, "big")["reloads"] == 1, "then reloaded: %s" % log(some, "big"))
    check(rows(some, "big") == rows(w, "big") == rows(idle, "big"), "and all read the same records")
    for db in (w, idle, some, late):
        db.close()


def threads():
    n_threads, n_ops = 4, 300
    errors = []
    done = threading.Barrier(n_threads)
    finals = [None] * n_threads
    # each thread owns its keys (t<i>-<k>): the model is each thread's own
    # last write per key, whatever the interleaving
    models = [dict() for _ in range(n_threads)]

    def work(i):
        db = connect()  # (a connection per thread, as Python wants)
        db.execute("CREATE VIRTUAL TABLE th USING h5mem(ephemeral=on, dim=%d, key text primary key)" % DIM)
        rng = random.Random(100 + i)
        try:
            for op in range(n_ops):
                k = "t%d-%d" % (i, rng.randrange(40))
                r = rng.random()
                if r < 0.6:
                    text = "%d %d" % (i, op)
                    db.execute("INSERT OR REPLACE INTO th(text, key, embedding) VALUES (?, ?, ?)", (text, k, vec(rng)))
                    models[i][k] = text
                elif r < 0.7:
                    db.execute("DELETE FROM th WHERE key = ?", (k,))
                    models[i].pop(k, None)
                elif r < 0.8 and k in models[i]:
                    db.execute("BEGIN")
                    db.execute("UPDATE th SET text = text || '+' WHERE key = ?", (k,))
                    db.execute("COMMIT")
                    models[i][k] += "+"
                else:
                    got = db.execute("SELECT text FROM th WHERE key = ?", (k,)).fetchone()
                    if (got[0] if got else None) != models[i].get(k):
                        errors.append("thread %d reads %r for its key %s, wrote %r" % (i, got, k, models[i].get(k)))
                    db.execute("SELECT rowid FROM vec_search('th', ?, 3)", (vec(rng),)).fetchall()
        except sqlite3.Error as e:
            errors.append("thread %d: %s" % (i, e))
        done.wait()  # (every thread's writes made: each reads the end state)
        finals[i] = sorted(db.execute("SELECT key, text FROM th").fetchall())
        done.wait()
        db.close()

    ts = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check(not errors, "threads: %s" % errors[:5])
    want = sorted((k, v) for m in models for k, v in m.items())
    for i, got in enumerate(finals):
        check(got == want, "connection %d reads the model (%d records, %d wanted)" % (i, len(got or []), len(want)))


def lone_then_joined():
    """A connection alone keeps no log; one that joins it later reads its
    records (a snapshot of them starts the log), not while it writes."""
    a = connect()
    a.execute("CREATE VIRTUAL TABLE solo USING " + DECL.replace("h5mem(", "h5mem(ttl=600, "))
    rng = random.Random(3)
    for i in range(300):
        a.execute("INSERT OR REPLACE INTO solo(text, embedding, key) VALUES (?, ?, ?)",
                  ("t%d" % i, vec(rng), "k%d" % (i % 200)))
    a.execute("INSERT INTO solo_entities(id, name, type) VALUES (1, 'Alice', 'person')")
    a.execute("UPDATE solo SET importance = 0.5, tier = 'warm' WHERE key = 'k5'")
    la = log(a, "solo")
    check(la["frames"] == 0 and la["bytes"] == 0 and la["connections"] == 1 and la["snapshots"] == 0,
          "alone: no log kept: %s" % la)
    # a write transaction open on a: a connection of the same thread cannot join now
    a.execute("BEGIN")
    a.execute("INSERT INTO solo(text, key) VALUES ('pending', 'p')")
    b = connect()
    expect_error(b, "CREATE VIRTUAL TABLE solo USING " + DECL.replace("h5mem(", "h5mem(ttl=600, "),
                 "another connection of this thread")
    a.execute("COMMIT")
    b.execute("CREATE VIRTUAL TABLE solo USING " + DECL.replace("h5mem(", "h5mem(ttl=600, "))
    check(rows(b, "solo") == rows(a, "solo") and len(rows(b, "solo")) == 201, "b joins with a's records")
    check(graph(b, "solo") == graph(a, "solo"), "and a's graph")
    check(b.execute("SELECT importance, tier FROM solo WHERE key = 'k5'").fetchone() == (0.5, "warm"),
          "and a's changes in place")
    lb = log(b, "solo")
    check(lb["connections"] == 2 and lb["snapshots"] == 1, "the log started from a snapshot: %s" % lb)
    b.execute("INSERT INTO solo(text, key) VALUES ('from b', 'fb')")
    check(a.execute("SELECT text FROM solo WHERE key = 'fb'").fetchone() == ("from b",), "a reads b's write")
    b.close()
    a.execute("INSERT INTO solo(text, key) VALUES ('alone again', 'aa')")
    la = log(a, "solo")
    check(la["frames"] == 0 and la["connections"] == 1, "alone again: the log dropped: %s" % la)
    c = connect()
    c.execute("CREATE VIRTUAL TABLE solo USING " + DECL.replace("h5mem(", "h5mem(ttl=600, "))
    check(rows(c, "solo") == rows(a, "solo"), "a third joins with everything")
    a.close()
    c.close()


two_connections()
lone_then_joined()
expiry_and_capacity()
snapshots()
threads()
finish()
