"""The ephemeral tier (issue 24, in progress): h5mem(ephemeral=on, dim=N),
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
- errors: path= with ephemeral=on, no dim=, index=hnsw, a checkpoint or
  optimize, a bad ephemeral= value.
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

    # transactions
    n0 = db.execute("SELECT count(*) FROM scratch").fetchone()[0]
    db.execute("BEGIN")
    db.execute("DELETE FROM scratch WHERE id <= 10")
    db.execute("INSERT INTO scratch(text, embedding, key) VALUES ('gone soon', ?, 'knew')", (vec(rng),))
    check(db.execute("SELECT count(*) FROM scratch").fetchone()[0] == n0 - 9, "inside the transaction")
    db.execute("ROLLBACK")
    check(db.execute("SELECT count(*) FROM scratch").fetchone()[0] == n0, "rolled back")
    check(db.execute("SELECT count(*) FROM scratch WHERE key = 'knew'").fetchone()[0] == 0, "the insert undone")
    db.execute("BEGIN")
    db.execute("DELETE FROM scratch WHERE id = 1")
    db.execute("SAVEPOINT a")
    db.execute("DELETE FROM scratch WHERE id = 2")
    db.execute("ROLLBACK TO a")
    db.execute("COMMIT")
    ids = {r[0] for r in db.execute("SELECT id FROM scratch WHERE id <= 3")}
    check(ids == {2, 3}, "savepoint: %s" % ids)

    # key-value use: by the text primary key
    db.execute("INSERT OR REPLACE INTO scratch(text, embedding, key) VALUES ('v1', ?, 'session:42')", (vec(rng),))
    db.execute("INSERT OR REPLACE INTO scratch(text, embedding, key) VALUES ('v2', ?, 'session:42')", (vec(rng),))
    rows = db.execute("SELECT text FROM scratch WHERE key = 'session:42'").fetchall()
    check(rows == [("v2",)], "INSERT OR REPLACE by key: %s" % rows)
    expect_error(db, "INSERT INTO scratch(text, embedding, key) VALUES ('v3', ?, 'session:42')", "is taken",
                 (vec(rng),))
    db.execute("DELETE FROM scratch WHERE key = 'session:42'")
    check(db.execute("SELECT count(*) FROM scratch WHERE key = 'session:42'").fetchone()[0] == 0, "deleted by key")

    # errors
    expect_error(db, "SELECT h5mem_checkpoint('scratch')", "ephemeral store: it has no file to checkpoint")
    expect_error(db, "INSERT INTO scratch(scratch) VALUES ('optimize')", "no file to rewrite")
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
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 300, "the persistent one kept its records")
    db.execute("INSERT INTO scratch(text, embedding, key) VALUES ('again', ?, 'a')", (vec(rng),))
    check(db.execute("SELECT id, text FROM scratch").fetchall() == [(1, "again")], "usable again")
    db.execute("DROP TABLE scratch")
    db.execute("DROP TABLE other")
    db.close()
    after = listing(tmp)
    made = set(after[tmp]) - set(before[tmp])
    check(made <= {"app.db", "p.h5", "p.h5-wal"}, "files at the end: %s" % sorted(made))
    os.chdir(cwd)
    finish()


main()
