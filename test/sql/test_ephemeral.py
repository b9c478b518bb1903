"""The ephemeral tier (issue 24): h5mem(ephemeral=on, dim=N),
a store with no file and no log.

- no file is made anywhere (the working directory and the database's
  directory are listed before and after);
- the same data in an ephemeral and a persistent store gives the same
  answers: rows, vec_search, the KNN form, bm25, hybrid (every column),
  filters, declared columns, the graph tables and kg_bfs;
- transactions: ROLLBACK and savepoints undo, COMMIT keeps;
- the key-value use: a text primary key, INSERT OR REPLACE by key, SELECT
  and DELETE by key;
- a database file that declares the table connects it again empty (the
  records lived in the process that made them); DROP TABLE works;
- memory: deleted records freed at COMMIT once they outnumber the live
  ones, and by 'optimize' (h5mem_index's exact_rows), values changed in
  place kept, the answers still the persistent store's;
- expiry: expires_at given or from ttl=, a fixed clock (h5mem_clock);
  expired records gone for every read, their keys free again; INSERT OR
  REPLACE and UPDATE set a new expiry; a write transaction sees the
  records as of its start; 3000 expired records freed;
- h5mem_promote: by id, by a condition, all; the columns both tables
  have; moved, not copied; a rolled back or failed promotion changes
  nothing; a process killed before its commit leaves the persistent store
  without them, after it with all;
- capacity: the least recently used go past it at COMMIT (a read is a
  use), not at ROLLBACK; evict=score: the lowest decay score;
- errors: path= with ephemeral=on, no dim=, index=hnsw, a checkpoint, a
  bad ephemeral= value, ttl= without ephemeral, a text expires_at,
  h5mem_clock on a persistent store.
"""
import os
import random
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish  # noqa: E402

DIM = 8
WORDS = "tea coffee garden river mountain city train memory agent note plan task".split()


def vec(rng):
    return struct.pack("%df" % DIM, *[rng.uniform(-1, 1) for _ in range(DIM)])


def listing(*dirs):
    return {d: sorted(os.listdir(d)) for d in dirs}


def fill(db, table, n=300, seed=3):
    rng = random.Random(seed)
    db.execute("BEGIN")
    for i in range(n):
        db.execute("INSERT INTO %s(text, embedding, source, session, ts, importance, user_id, key) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?)" % table,
                   (" ".join(rng.choice(WORDS) for _ in range(5)), vec(rng), rng.choice(["user", "tool"]),
                    "s%d" % (i % 4), 1_700_000_000 + i, rng.random(), i % 7, "k%d" % i))
    db.execute("COMMIT")


def main():
    tmp = tempfile.mkdtemp(prefix="h5mem_eph_")
    cwd = os.getcwd()
    os.chdir(tmp)
    dbfile = os.path.join(tmp, "app.db")
    before = listing(tmp)
    db = connect(dbfile)
    decl = "user_id integer, key text primary key"
    db.execute("CREATE VIRTUAL TABLE scratch USING h5mem(ephemeral=on, dim=%d, %s)" % (DIM, decl))
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=%d, %s)" % (os.path.join(tmp, "p.h5"), DIM, decl))
    fill(db, "scratch")
    fill(db, "mem")
    made = set(listing(tmp)[tmp]) - set(before[tmp])
    check(made == {"app.db", "p.h5", "p.h5-wal"} or made == {"app.db", "p.h5", "p.h5-wal", "app.db-journal"},
          "files made: %s (the ephemeral store makes none)" % sorted(made))

    # the same answers as the persistent store on the same data
    rng = random.Random(9)
    same = [
        ("rows", "SELECT id, text, source, session, ts, importance, user_id, key FROM {t} ORDER BY id", ()),
        ("by key", "SELECT id, text FROM {t} WHERE key = 'k17'", ()),
        ("filter", "SELECT id FROM {t} WHERE user_id = 3 AND session = 's1' ORDER BY id", ()),
    ]
    for i in range(5):
        qv = vec(rng)
        w = rng.choice(WORDS)
        same += [
            ("vec_search", "SELECT id, distance FROM vec_search('{t}', ?, 10)", (qv,)),
            ("vec_search filtered", "SELECT id, distance FROM vec_search('{t}', ?, 5) WHERE source = 'tool'", (qv,)),
            ("KNN", "SELECT id, distance FROM {t} WHERE embedding MATCH ? AND k = 7", (qv,)),
            ("KNN partition", "SELECT id, distance FROM {t} WHERE embedding MATCH ? AND k = 4 AND user_id = 2", (qv,)),
            ("bm25", "SELECT id, score FROM bm25('{t}', ?, 10)", (w,)),
            ("hybrid", "SELECT id, score, vector_score, keyword_score, text, source, session, ts, tier "
                       "FROM hybrid('{t}', ?, ?, 8)", (w + " " + rng.choice(WORDS), qv)),
        ]
    for what, sql, args in same:
        a = db.execute(sql.format(t="scratch"), args).fetchall()
        b = db.execute(sql.format(t="mem"), args).fetchall()
        check(a == b and len(a) > 0, "%s: ephemeral %s vs persistent %s" % (what, a[:3], b[:3]))

    # the graph tables
    for t in ("scratch", "mem"):
        db.execute("INSERT INTO %s_entities(id, name, type) VALUES (1, 'Alice', 'person'), (2, 'Bob', 'person')" % t)
        db.execute("INSERT INTO %s_relations(src, dst, type) VALUES (1, 2, 'knows')" % t)
        db.execute("INSERT INTO %s_mentions(memory_id, entity_id) VALUES (5, 1)" % t)
    for sql in ("SELECT name, type FROM {t}_entities ORDER BY id", "SELECT src, dst, type FROM {t}_relations",
                "SELECT memory_id, entity_id FROM {t}_mentions", "SELECT * FROM kg_bfs('{t}', 1, 2)"):
        a = db.execute(sql.format(t="scratch")).fetchall()
        b = db.execute(sql.format(t="mem")).fetchall()
        check(a == b and a, "%s: %s vs %s" % (sql, a, b))

    # transactions (the same on the persistent table, which keeps the two alike)
    for t in ("scratch", "mem"):
        n0 = db.execute("SELECT count(*) FROM %s" % t).fetchone()[0]
        db.execute("BEGIN")
        db.execute("DELETE FROM %s WHERE id <= 10" % t)
        db.execute("INSERT INTO %s(text, embedding, key) VALUES ('gone soon', ?, 'knew')" % t, (vec(rng),))
        check(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] == n0 - 9, "%s: inside the transaction" % t)
        db.execute("ROLLBACK")
        check(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] == n0, "%s: rolled back" % t)
        check(db.execute("SELECT count(*) FROM %s WHERE key = 'knew'" % t).fetchone()[0] == 0, "the insert undone")
        db.execute("BEGIN")
        db.execute("DELETE FROM %s WHERE id = 1" % t)
        db.execute("SAVEPOINT a")
        db.execute("DELETE FROM %s WHERE id = 2" % t)
        db.execute("ROLLBACK TO a")
        db.execute("COMMIT")
        ids = {r[0] for r in db.execute("SELECT id FROM %s WHERE id <= 3" % t)}
        check(ids == {2, 3}, "%s: savepoint: %s" % (t, ids))

    # key-value use: by the text primary key (the same on the persistent table)
    for t in ("scratch", "mem"):
        v = [vec(random.Random(k)) for k in range(3)]
        db.execute("INSERT OR REPLACE INTO %s(text, embedding, key) VALUES ('v1', ?, 'session:42')" % t, (v[0],))
        db.execute("INSERT OR REPLACE INTO %s(text, embedding, key) VALUES ('v2', ?, 'session:42')" % t, (v[1],))
        rows = db.execute("SELECT text FROM %s WHERE key = 'session:42'" % t).fetchall()
        check(rows == [("v2",)], "%s: INSERT OR REPLACE by key: %s" % (t, rows))
        expect_error(db, "INSERT INTO %s(text, embedding, key) VALUES ('v3', ?, 'session:42')" % t, "is taken",
                     (v[2],))
        db.execute("DELETE FROM %s WHERE key = 'session:42'" % t)
        check(db.execute("SELECT count(*) FROM %s WHERE key = 'session:42'" % t).fetchone()[0] == 0,
              "%s: deleted by key" % t)

    # memory given back: deleted records freed once they outnumber the live
    # ones (at COMMIT), or at once by 'optimize'; values changed in place
    # (importance, tier, access) kept; the same answers as the persistent store
    def rows_of(t):
        return db.execute("SELECT id, text, tier, importance, access_count, last_access, key, user_id FROM %s "
                          "ORDER BY id" % t).fetchall()

    def exact_rows(t):
        import json
        return json.loads(db.execute("SELECT h5mem_index('%s')" % t).fetchone()[0])["exact_rows"]

    for t in ("scratch", "mem"):
        db.execute("UPDATE %s SET importance = 0.25, tier = 'warm' WHERE id IN (20, 21)" % t)
        db.execute("BEGIN")
        crng = random.Random(77)
        for i in range(3000):
            db.execute("INSERT INTO %s(text, embedding, key, user_id, ts) VALUES (?, ?, ?, ?, ?)" % t,
                       ("churn %d %s" % (i, crng.choice(WORDS)), vec(crng), "c%d" % i, i % 7, 1_750_000_000 + i))
        db.execute("COMMIT")
        db.execute("DELETE FROM %s WHERE key LIKE 'c%%' AND (user_id != 3 OR id %% 2 = 0)" % t)
    live = db.execute("SELECT count(*) FROM scratch").fetchone()[0]
    check(exact_rows("scratch") == live, "deleted records freed at commit: %d rows kept, %d live"
          % (exact_rows("scratch"), live))
    check(rows_of("scratch") == rows_of("mem"), "after the churn: the same rows")
    check(db.execute("SELECT tier, importance FROM scratch WHERE id = 20").fetchone() == ("warm", 0.25),
          "a value changed in place, kept through the compaction")
    for what, sql, args in same:
        a = db.execute(sql.format(t="scratch"), args).fetchall()
        b = db.execute(sql.format(t="mem"), args).fetchall()
        check(a == b, "after the churn, %s: ephemeral %s vs persistent %s" % (what, a[:3], b[:3]))
    n_mem = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    db.execute("DELETE FROM scratch WHERE id % 3 = 0")
    before_opt = exact_rows("scratch")
    db.execute("INSERT INTO scratch(scratch) VALUES ('optimize')")
    live = db.execute("SELECT count(*) FROM scratch").fetchone()[0]
    check(before_opt > live and exact_rows("scratch") == live, "optimize frees them at once: %d -> %d (%d live)"
          % (before_opt, exact_rows("scratch"), live))
    k40 = db.execute("SELECT id, text FROM scratch WHERE key = 'k40'").fetchall()
    check(k40 == db.execute("SELECT id, text FROM mem WHERE key = 'k40'").fetchall() and k40, "by key after optimize")
    check(db.execute("SELECT count(*) FROM scratch_relations").fetchone()[0] == 1, "the graph kept")

    # expiry: the column expires_at (unix seconds), a table's default ttl,
    # a controllable clock; expired records invisible at once to every read
    db.execute("CREATE VIRTUAL TABLE kv USING h5mem(ephemeral=on, dim=%d, ttl=60, key text primary key)" % DIM)
    check(db.execute("SELECT h5mem_clock('kv', 1000)").fetchone()[0] == 1000, "the clock set")
    kvv = [vec(random.Random(100 + i)) for i in range(4)]
    db.execute("INSERT INTO kv(text, embedding, key) VALUES ('alpha tea', ?, 'a')", (kvv[0],))
    db.execute("INSERT INTO kv(text, embedding, key, expires_at) VALUES ('beta tea', ?, 'b', 1010)", (kvv[1],))
    db.execute("INSERT INTO kv(text, embedding, key, expires_at) VALUES ('gamma tea', ?, 'c', 5000)", (kvv[2],))
    rows = db.execute("SELECT key, expires_at FROM kv ORDER BY id").fetchall()
    check(rows == [("a", 1060), ("b", 1010), ("c", 5000)], "expires_at given or from ttl: %s" % rows)
    db.execute("SELECT h5mem_clock('kv', 1009)")
    check(db.execute("SELECT count(*) FROM kv").fetchone()[0] == 3, "nothing expired before its time")
    db.execute("SELECT h5mem_clock('kv', 1010)")
    reads = {
        "scan": "SELECT key FROM kv ORDER BY key",
        "by key": "SELECT key FROM kv WHERE key IN ('a', 'b', 'c') ORDER BY key",
        "vec_search": "SELECT k.key FROM vec_search('kv', ?, 10) v JOIN kv k ON k.id = v.id ORDER BY k.key",
        "KNN": "SELECT key FROM kv WHERE embedding MATCH ? AND k = 10 ORDER BY key",
        "bm25": "SELECT k.key FROM bm25('kv', 'tea', 10) b JOIN kv k ON k.id = b.id ORDER BY k.key",
        "hybrid": "SELECT k.key FROM hybrid('kv', 'tea', ?, 10) h JOIN kv k ON k.id = h.id ORDER BY k.key",
    }
    for what, sql in reads.items():
        got = [r[0] for r in db.execute(sql, (kvv[1],) if "?" in sql else ()).fetchall()]
        check(got == ["a", "c"], "expired at its time, %s: %s" % (what, got))
    check(db.execute("SELECT key FROM kv WHERE key = 'b'").fetchall() == [], "gone by key")
    db.execute("INSERT INTO kv(text, embedding, key) VALUES ('beta again', ?, 'b')", (kvv[1],))
    check(db.execute("SELECT expires_at FROM kv WHERE key = 'b'").fetchone() == (1070,), "its key free again")
    # INSERT OR REPLACE and UPDATE set a new expiry; the old one does nothing
    db.execute("INSERT OR REPLACE INTO kv(text, embedding, key) VALUES ('alpha 2', ?, 'a')", (kvv[0],))
    db.execute("UPDATE kv SET expires_at = 2000 WHERE key = 'b'")
    db.execute("SELECT h5mem_clock('kv', 1069)")
    got = db.execute("SELECT key, expires_at FROM kv ORDER BY key").fetchall()
    check(got == [("a", 1070), ("b", 2000), ("c", 5000)], "new expiries (the old ones do nothing): %s" % got)
    db.execute("SELECT h5mem_clock('kv', 1130)")
    check([r[0] for r in db.execute("SELECT key FROM kv ORDER BY key")] == ["b", "c"], "replaced: the new expiry")
    # a write transaction sees the records as of its start; they go after it
    db.execute("BEGIN")
    db.execute("INSERT INTO kv(text, embedding, key, expires_at) VALUES ('delta', ?, 'd', 1135)", (kvv[3],))
    db.execute("SELECT h5mem_clock('kv', 3000)")
    check(db.execute("SELECT count(*) FROM kv").fetchone()[0] == 3, "inside a write transaction: as at its start")
    db.execute("COMMIT")
    check([r[0] for r in db.execute("SELECT key FROM kv ORDER BY key")] == ["c"], "after it: expired")
    db.execute("BEGIN")
    db.execute("INSERT INTO kv(text, embedding, key, expires_at) VALUES ('epsilon', ?, 'e', 3001)", (kvv[3],))
    db.execute("ROLLBACK")
    db.execute("SELECT h5mem_clock('kv', 3002)")
    check([r[0] for r in db.execute("SELECT key FROM kv ORDER BY key")] == ["c"], "a rolled back insert's expiry")
    # many records expiring: their memory given back (the deleted outnumber the live)
    db.execute("BEGIN")
    for i in range(3000):
        db.execute("INSERT INTO kv(text, embedding, key) VALUES (?, ?, ?)", ("churn %d" % i, kvv[i % 4], "t%d" % i))
    db.execute("COMMIT")
    check(exact_rows("kv") >= 3001, "3000 added")
    db.execute("SELECT h5mem_clock('kv', 3062)")
    check(db.execute("SELECT count(*) FROM kv").fetchone()[0] == 1, "3000 expired")
    check(exact_rows("kv") == 1, "their memory given back: %d rows kept" % exact_rows("kv"))
    check(db.execute("SELECT key FROM kv").fetchall() == [("c",)], "the one left")
    db.execute("SELECT h5mem_clock('kv', NULL)")
    import time
    check(abs(db.execute("SELECT h5mem_clock('kv')").fetchone()[0] - time.time()) < 5, "the clock given back")
    expect_error(db, "SELECT h5mem_clock('mem', 5)", "not an ephemeral store")
    expect_error(db, "SELECT h5mem_clock('kv', -5)", "unix seconds")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(path='e2.h5', dim=4, ttl=5)", "goes with ephemeral=on")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, dim=4, expires_at text)", "integer column")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, dim=4, ttl=-1)", "ttl=-1")
    db.execute("DROP TABLE kv")

    # capacity: past it, at each commit, the least recently used go (a put
    # or a read is a use), or those of the lowest decay score
    db.execute("CREATE VIRTUAL TABLE lru USING h5mem(ephemeral=on, dim=%d, capacity=3, key text primary key)" % DIM)
    for k in "abc":
        db.execute("INSERT INTO lru(text, embedding, key) VALUES (?, ?, ?)", ("v" + k, kvv[0], k))
    check(db.execute("SELECT text FROM lru WHERE key = 'a'").fetchone() == ("va",), "a read")
    db.execute("INSERT INTO lru(text, embedding, key) VALUES ('vd', ?, 'd')", (kvv[0],))
    keys = [r[0] for r in db.execute("SELECT key FROM lru ORDER BY key")]
    check(keys == ["a", "c", "d"], "the least recently used went (b; a was read): %s" % keys)
    db.execute("BEGIN")
    for k in "efgh":
        db.execute("INSERT INTO lru(text, embedding, key) VALUES (?, ?, ?)", ("v" + k, kvv[0], k))
    check(db.execute("SELECT count(*) FROM lru").fetchone()[0] == 7, "past the capacity inside a transaction")
    db.execute("ROLLBACK")
    check([r[0] for r in db.execute("SELECT key FROM lru ORDER BY key")] == ["a", "c", "d"], "a rollback evicts nothing")
    db.execute("BEGIN")
    for k in "efgh":
        db.execute("INSERT INTO lru(text, embedding, key) VALUES (?, ?, ?)", ("v" + k, kvv[0], k))
    db.execute("COMMIT")
    keys = [r[0] for r in db.execute("SELECT key FROM lru ORDER BY key")]
    check(keys == ["f", "g", "h"], "after the commit: the capacity's newest: %s" % keys)
    db.execute("CREATE VIRTUAL TABLE sc USING h5mem(ephemeral=on, dim=%d, capacity=2, evict=score)" % DIM)
    for t, imp in (("low", 0.1), ("high", 0.9), ("mid", 0.5)):
        db.execute("INSERT INTO sc(text, embedding, importance, ts) VALUES (?, ?, ?, 1700000000)", (t, kvv[0], imp))
    texts = sorted(r[0] for r in db.execute("SELECT text FROM sc"))
    check(texts == ["high", "mid"], "the lowest decay score went: %s" % texts)
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(path='e2.h5', dim=4, capacity=5)", "goes with ephemeral=on")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, dim=4, evict=lru)", "give capacity=N")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, dim=4, capacity=5, evict=newest)",
                 "lru or score")
    db.execute("DROP TABLE lru")
    db.execute("DROP TABLE sc")

    # h5mem_promote: records moved into a persistent store (new ids there,
    # the columns both have), in one savepoint
    prom = os.path.join(tmp, "prom.h5")
    db.execute("CREATE VIRTUAL TABLE ps USING h5mem(ephemeral=on, dim=%d, key text primary key, user_id integer)" % DIM)
    db.execute("CREATE VIRTUAL TABLE pm USING h5mem(path='%s', dim=%d, key text, note text)" % (prom, DIM))
    for i in range(10):
        db.execute("INSERT INTO ps(text, embedding, key, user_id, session, ts, importance) VALUES (?, ?, ?, ?, ?, ?, ?)",
                   ("m%d" % i, kvv[i % 4], "k%d" % i, i, "s%d" % (i % 2), 1_700_000_000 + i, i / 10))
    check(db.execute("SELECT h5mem_promote('ps', 'pm', 3)").fetchone()[0] == 1, "promote one id (m2's)")
    check(db.execute("SELECT h5mem_promote('ps', 'pm', 'session = ''s0''')").fetchone()[0] == 4,
          "promote by a condition (s0 but the id taken already)")
    got = db.execute("SELECT text, key, note, session, ts, importance, embedding FROM pm ORDER BY id").fetchall()
    want = [("m%d" % i, "k%d" % i, None, "s%d" % (i % 2), 1_700_000_000 + i, i / 10, kvv[i % 4])
            for i in (2, 0, 4, 6, 8)]
    check(got == want,
          "the promoted records, their columns: %s" % [g[:2] for g in got])
    left = [r[0] for r in db.execute("SELECT text FROM ps ORDER BY id")]
    check(left == ["m1", "m3", "m5", "m7", "m9"], "moved, not copied: %s" % left)
    db.execute("BEGIN")
    check(db.execute("SELECT h5mem_promote('ps', 'pm')").fetchone()[0] == 5, "promote all")
    db.execute("ROLLBACK")
    check(db.execute("SELECT count(*) FROM ps").fetchone()[0] == 5 and
          db.execute("SELECT count(*) FROM pm").fetchone()[0] == 5, "a rolled back promotion: both as they were")
    expect_error(db, "SELECT h5mem_promote('ps', 'pm', 'no_such_column = 1')", "no such column")
    check(db.execute("SELECT count(*) FROM ps").fetchone()[0] == 5, "a failed promotion moves nothing")
    expect_error(db, "SELECT h5mem_promote('ps', 'pm', '1); DROP TABLE pm; --')", "one SQL expression")
    check(db.execute("SELECT count(*) FROM pm").fetchone()[0] == 5, "a condition with a second statement runs nothing")
    expect_error(db, "SELECT h5mem_promote('ps', 'ps')", "one store")
    expect_error(db, "SELECT h5mem_promote('ps', 'pm', 1.5)", "an id, or an SQL condition")
    db.execute("CREATE VIRTUAL TABLE p3 USING h5mem(ephemeral=on, dim=3)")
    expect_error(db, "SELECT h5mem_promote('ps', 'p3')", "do not fit")
    db.execute("DROP TABLE p3")
    # a process killed in the middle: the persistent store has all of them or none
    import subprocess
    child = '''
import os, signal, sqlite3, struct, sys
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
db.execute("CREATE VIRTUAL TABLE s USING h5mem(ephemeral=on, dim=%d)")
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%%s', dim=%d, sync=full)" %% sys.argv[2])
for i in range(200):
    db.execute("INSERT INTO s(text, embedding) VALUES (?, ?)", ("r%%d" %% i, struct.pack("%df", *([0.5] * %d))))
if sys.argv[3] == "before":
    db.execute("BEGIN")
db.execute("SELECT h5mem_promote('s', 'm')").fetchone()
os.kill(os.getpid(), signal.SIGKILL)
''' % (DIM, DIM, DIM, DIM)
    from sqltest import EXT
    for when, n in (("before", 0), ("after", 200)):
        path = os.path.join(tmp, "kill_%s.h5" % when)
        subprocess.run([sys.executable, "-c", child, EXT, path, when])
        d2 = connect()
        d2.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % path)
        got = d2.execute("SELECT count(*) FROM m").fetchone()[0]
        check(got == n, "killed %s its commit: %d records in the persistent store, not %d" % (when, got, n))
        d2.close()
    db.execute("DROP TABLE ps")

    # errors
    expect_error(db, "SELECT h5mem_checkpoint('scratch')", "ephemeral store: it has no file to checkpoint")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, path='x.h5', dim=4)", "has no file")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on)", "dim= is required")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, dim=4, index=hnsw)", "searches exactly")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=maybe, dim=4)", "expected on or off")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5mem(ephemeral=on, ephemeral=on, dim=4)", "ephemeral")

    # two ephemeral tables are two stores
    db.execute("CREATE VIRTUAL TABLE other USING h5mem(ephemeral=on, dim=%d)" % DIM)
    check(db.execute("SELECT count(*) FROM other").fetchone()[0] == 0, "another ephemeral table is empty")
    db.close()

    # the database file declares the tables: connected again, the ephemeral
    # one is empty (its records lived in the process that made them)
    db = connect(dbfile)
    check(db.execute("SELECT count(*) FROM scratch").fetchone()[0] == 0, "empty when connected again")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == n_mem, "the persistent one kept its records")
    db.execute("INSERT INTO scratch(text, embedding, key) VALUES ('again', ?, 'a')", (vec(rng),))
    check(db.execute("SELECT id, text FROM scratch").fetchall() == [(1, "again")], "usable again")
    db.execute("DROP TABLE scratch")
    db.execute("DROP TABLE other")
    db.close()
    after = listing(tmp)
    made = set(after[tmp]) - set(before[tmp])
    check(made <= {"app.db", "p.h5", "p.h5-wal", "prom.h5", "prom.h5-wal", "kill_before.h5", "kill_before.h5-wal",
                   "kill_after.h5", "kill_after.h5-wal"}, "files at the end: %s" % sorted(made))
    os.chdir(cwd)
    finish()


main()
