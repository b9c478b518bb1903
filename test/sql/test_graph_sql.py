"""The knowledge graph from SQL (docs/SQL.md, "Knowledge graph"):

- the companion tables mem_entities, mem_relations, mem_mentions: made and
  dropped with mem, INSERT / UPDATE / DELETE / SELECT, defaults, checks and
  their errors;
- transactions: writes to mem and its companions in one SQLite transaction
  are one store transaction (one frame of the log); ROLLBACK, savepoints
  (a table joining inside one), failing statements; reopening after a
  checkpoint and after a process died without one (the log replays); a
  random mix of statements against ordinary tables;
- kg_bfs equal to a recursive CTE over the same edges on random graphs
  (depths, directions, type filters, limits), every path a chain of edges;
- kg_activate and kg_resolve against hand-checked cases; kg_entity;
- the hybrid join through mem_mentions and kg_bfs;
- the MCP memory server's JSONL: export, import, round trip, errors.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import random
import sqlite3
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402


def log_frames(path):
    """The number of frames in a store's log (lib/store/wal.h)."""
    if not os.path.exists(path + "-wal"):
        return 0
    with open(path + "-wal", "rb") as f:
        b = f.read()
    n, off = 0, 64
    while off + 16 <= len(b):
        magic, ln = struct.unpack_from("<II", b, off)
        if magic != 0x464C4157 or off + 16 + ln + 8 > len(b):
            break
        n += 1
        off += 16 + ln + 8
    return n


def ents(db, t="mem_entities"):
    return db.execute("SELECT id, name, type, aliases, meta FROM %s ORDER BY id" % t).fetchall()


# ---------------------------------------------------------------- tables

def test_tables(d):
    fn = os.path.join(d, "t.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master ORDER BY name")]
    check(names == ["mem", "mem_entities", "mem_mentions", "mem_relations"], "companions made: %r" % names)
    cols = {t: [r[1] for r in db.execute("PRAGMA table_info(%s)" % t)]
            for t in ("mem_entities", "mem_relations", "mem_mentions")}
    check(cols == {"mem_entities": ["id", "name", "type", "aliases", "meta"],
                   "mem_relations": ["id", "src", "dst", "type", "weight", "ts", "meta"],
                   "mem_mentions": ["id", "memory_id", "entity_id"]}, "columns: %r" % cols)
    db.execute("INSERT INTO mem(id, text) VALUES (1, 'Alice met Bob'), (2, 'Bob went home')")
    db.execute("INSERT INTO mem_entities(name, type, aliases, meta) VALUES "
               "('Alice', 'person', '[\"Al\", \"A.\"]', '{\"age\": 30}'), ('Bob', 'person', NULL, NULL)")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (10, 'Home')")
    db.execute("INSERT INTO mem_entities(name) VALUES ('Zoë')")
    check(ents(db) == [(1, "Alice", "person", '["Al", "A."]', '{"age": 30}'), (2, "Bob", "person", None, None),
                       (10, "Home", None, None, None), (11, "Zoë", None, None, None)], "entities: %r" % ents(db))
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')")
    db.execute("INSERT INTO mem_relations(src, dst, type, weight, ts, meta) VALUES "
               "(2, 10, 'lives_in', 0.5, '2026-11-29T12:00:00Z', '[1]')")
    rels = db.execute("SELECT id, src, dst, type, weight, ts, meta, typeof(ts) FROM mem_relations ORDER BY id").fetchall()
    now = db.execute("SELECT unixepoch()").fetchone()[0]
    check(rels[0][:5] == (1, 1, 2, "knows", 1.0) and abs(rels[0][5] - now) < 5 and rels[0][6] is None,
          "relation defaults: weight 1.0, ts now: %r" % (rels[0],))
    check(rels[1] == (2, 2, 10, "lives_in", 0.5, 1795953600, "[1]", "integer"), "ISO-8601 ts: %r" % (rels[1],))
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 1), (1, 2), (2, 2)")
    check(db.execute("SELECT * FROM mem_mentions ORDER BY id").fetchall() == [(1, 1, 1), (2, 1, 2), (3, 2, 2)],
          "mentions")
    # lookups, updates, deletes
    check(db.execute("SELECT name FROM mem_entities WHERE id = 2").fetchall() == [("Bob",)], "lookup by id")
    check(db.execute("SELECT name FROM mem_entities WHERE rowid = 10").fetchall() == [("Home",)], "lookup by rowid")
    check(db.execute("SELECT count(*) FROM mem_entities WHERE id = 99").fetchone()[0] == 0, "missing id")
    db.execute("UPDATE mem_entities SET type = 'place', aliases = '[\"house\"]' WHERE name = 'Home'")
    check(ents(db)[2] == (10, "Home", "place", '["house"]', None), "UPDATE keeps the id")
    db.execute("UPDATE mem_entities SET id = 12 WHERE id = 11")
    check([r[0] for r in ents(db)] == [1, 2, 10, 12], "UPDATE of the id")
    db.execute("UPDATE mem_relations SET weight = weight * 4 WHERE type = 'lives_in'")
    check(db.execute("SELECT weight FROM mem_relations WHERE id = 2").fetchone()[0] == 2.0, "UPDATE relation")
    db.execute("DELETE FROM mem_mentions WHERE memory_id = 2")
    check(db.execute("SELECT count(*) FROM mem_mentions").fetchone()[0] == 2, "DELETE mention")
    db.execute("INSERT INTO mem_entities(name) VALUES ('tmp')")
    check(db.execute("SELECT max(id) FROM mem_entities").fetchone()[0] == 13, "ids after the largest")
    db.execute("DELETE FROM mem_entities WHERE id = 13")
    db.execute("INSERT INTO mem_entities(name) VALUES ('tmp2')")
    check(db.execute("SELECT max(id) FROM mem_entities").fetchone()[0] == 14, "ids never reused")
    # conflicts
    expect_error(db, "INSERT INTO mem_entities(id, name) VALUES (1, 'dup')", "UNIQUE")
    db.execute("INSERT OR IGNORE INTO mem_entities(id, name) VALUES (1, 'dup')")
    check(ents(db)[0][1] == "Alice", "OR IGNORE")
    db.execute("INSERT OR REPLACE INTO mem_entities(id, name) VALUES (14, 'tmp3')")
    check(db.execute("SELECT name FROM mem_entities WHERE id = 14").fetchone()[0] == "tmp3", "OR REPLACE")
    expect_error(db, "INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)", "UNIQUE")
    db.execute("INSERT OR IGNORE INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)")
    check(db.execute("SELECT count(*) FROM mem_mentions").fetchone()[0] == 2, "mention OR IGNORE")
    db.execute("INSERT OR REPLACE INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)")
    check(db.execute("SELECT id FROM mem_mentions WHERE entity_id = 1").fetchall() == [(4,)], "mention OR REPLACE")
    expect_error(db, "UPDATE mem_mentions SET entity_id = 1 WHERE id = 2", "UNIQUE")
    check(db.execute("SELECT * FROM mem_mentions ORDER BY id").fetchall() == [(2, 1, 2), (4, 1, 1)],
          "a failed UPDATE of a mention leaves it")
    # checks
    expect_error(db, "INSERT INTO mem_entities(name) VALUES (NULL)", "name")
    # '' is a name (the MCP memory server's graphs have it), NULL is none
    db.execute("INSERT INTO mem_entities(id, name) VALUES (900, '')")
    check(db.execute("SELECT quote(name) FROM mem_entities WHERE id = 900").fetchone()[0] == "''", "'' is a name")
    db.execute("DELETE FROM mem_entities WHERE id = 900")
    expect_error(db, "INSERT INTO mem_entities(name, aliases) VALUES ('x', '[\"a\",')", "aliases")
    expect_error(db, "INSERT INTO mem_entities(name, aliases) VALUES ('x', '{\"a\": 1}')", "not a JSON array")
    expect_error(db, "INSERT INTO mem_entities(name, aliases) VALUES ('x', '[\"a\", 2]')", "element 1")
    expect_error(db, "INSERT INTO mem_entities(name, aliases) VALUES ('x', '[\"\"]')", "empty alias")
    expect_error(db, "INSERT INTO mem_entities(name, meta) VALUES ('x', '{bad}')", "meta: malformed JSON")
    expect_error(db, "INSERT INTO mem_entities(id, name) VALUES ('one', 'x')", "id")
    expect_error(db, "INSERT INTO mem_entities(id, name) VALUES (-3, 'x')", "positive")
    expect_error(db, "INSERT INTO mem_relations(src, dst) VALUES (1, 99)", "dst: no entity with id 99")
    expect_error(db, "INSERT INTO mem_relations(src, dst) VALUES (13, 1)", "src: no entity with id 13")
    expect_error(db, "INSERT INTO mem_relations(src, dst) VALUES (NULL, 1)", "NOT NULL")
    expect_error(db, "INSERT INTO mem_relations(src, dst, weight) VALUES (1, 2, 'heavy')", "weight")
    expect_error(db, "INSERT INTO mem_relations(src, dst, ts) VALUES (1, 2, 'yesterday')", "ts")
    expect_error(db, "INSERT INTO mem_relations(src, dst, meta) VALUES (1, 2, '[')", "meta")
    expect_error(db, "INSERT INTO mem_mentions(memory_id, entity_id) VALUES (7, 1)", "memory_id: no memory with id 7")
    expect_error(db, "INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 77)", "entity_id: no entity")
    expect_error(db, "CREATE VIRTUAL TABLE x USING h5mem_entities()", "expected one argument")
    expect_error(db, "CREATE VIRTUAL TABLE x USING h5mem_entities(nosuch)", "not an h5mem table")
    # deleting an entity leaves its relations (a traversal skips them)
    db.execute("DELETE FROM mem_entities WHERE id = 10")
    check(db.execute("SELECT count(*) FROM mem_relations WHERE dst = 10").fetchone()[0] == 1, "no cascade")
    check([r[0] for r in db.execute("SELECT id FROM kg_bfs('mem', 'Alice', 5)")] == [1, 2], "dangling relation skipped")
    # a reader on another connection sees what is committed
    other = connect()
    other.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(ents(other) == ents(db), "another connection reads the entities")
    db.execute("INSERT INTO mem_entities(name) VALUES ('late')")
    check(other.execute("SELECT count(*) FROM mem_entities WHERE name = 'late'").fetchone()[0] == 1,
          "and what is committed later")
    expect_error(other, "INSERT INTO mem_entities(name) VALUES ('x')", "being written")
    # a reader's names after the writer's checkpoints and optimize (the store reloads)
    for k, cmd in enumerate(["checkpoint", "optimize", "checkpoint"]):
        check(other.execute("SELECT count(*) FROM kg_resolve('mem', 'late', 0)").fetchone()[0] == 1, "reader resolves")
        db.execute("INSERT INTO mem(mem) VALUES (?)", (cmd,))
        db.execute("INSERT INTO mem_entities(name, aliases) VALUES (?, '[\"x\"]')", ("after%d" % k,))
        check(other.execute("SELECT name FROM kg_resolve('mem', ?, 0)", ("AFTER%d" % k,)).fetchall() ==
              [("after%d" % k,)], "the reader's names follow the writer's %s" % cmd)
    db.execute("DELETE FROM mem_entities WHERE name LIKE 'after%'")
    other.close()
    # DROP TABLE mem drops the companions, not the files, and not a user's table
    db.execute("DROP TABLE mem_mentions")
    db.execute("CREATE TABLE mem_mentions(x)")
    db.execute("DROP TABLE mem")
    names = [r[0] for r in db.execute("SELECT name FROM sqlite_master ORDER BY name")]
    check(names == ["mem_mentions"], "DROP TABLE mem drops its companions: %r" % names)
    check(os.path.exists(fn), "the file stays")
    db.execute("DROP TABLE mem_mentions")
    # existing databases: the companions by hand
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    db.execute("DROP TABLE mem_entities")
    db.execute("CREATE VIRTUAL TABLE mem_entities USING h5mem_entities(mem)")
    check([r[1] for r in ents(db)] == ["Alice", "Bob", "Zoë", "tmp3", "late"], "companion made by hand")
    # a temp table's companions are temp too
    db.execute("CREATE VIRTUAL TABLE temp.scratch USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "s.h5")))
    tnames = [r[0] for r in db.execute("SELECT name FROM temp.sqlite_master ORDER BY name")]
    check(tnames == ["scratch", "scratch_entities", "scratch_mentions", "scratch_relations"], "temp: %r" % tnames)
    db.execute("INSERT INTO scratch_entities(name) VALUES ('x')")
    check(db.execute("SELECT name FROM temp.scratch_entities").fetchall() == [("x",)], "temp companion works")
    db.close()
    # a database file: companions connect on their own after reopening
    dbf = os.path.join(d, "t.db")
    db = connect(dbf)
    db.execute("CREATE VIRTUAL TABLE m2 USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "m2.h5")))
    db.execute("INSERT INTO m2_entities(name) VALUES ('a'), ('b')")
    db.execute("INSERT INTO m2_relations(src, dst) VALUES (1, 2)")
    db.close()
    db = connect(dbf)
    check(db.execute("SELECT src, dst FROM m2_relations").fetchall() == [(1, 2)], "reopened: the companion first")
    check([r[0] for r in db.execute("SELECT id FROM kg_bfs('m2', 'a', 1)")] == [1, 2], "then the functions")
    db.close()


# ---------------------------------------------------------------- transactions

def test_transactions(d):
    fn = os.path.join(d, "tx.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    other = connect()
    other.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    f0 = log_frames(fn)
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(id, text) VALUES (1, 'a')")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'A'), (2, 'B')")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'r')")
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)")
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 2, "the writer sees its own entities")
    check(other.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 0, "others do not")
    db.execute("COMMIT")
    check(log_frames(fn) == f0 + 1, "one transaction over mem and its companions: one frame (%d -> %d)"
          % (f0, log_frames(fn)))
    check(other.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 2 and
          other.execute("SELECT count(*) FROM mem").fetchone()[0] == 1, "others see the commit")
    # the companion first, then mem: still one frame
    db.execute("BEGIN")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (3, 'C')")
    db.execute("INSERT INTO mem(id, text) VALUES (2, 'b')")
    db.execute("COMMIT")
    check(log_frames(fn) == f0 + 2, "companion first: one frame")
    # ROLLBACK undoes both
    db.execute("BEGIN")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (4, 'D')")
    db.execute("INSERT INTO mem(id, text) VALUES (3, 'c')")
    db.execute("DELETE FROM mem_entities WHERE id = 1")
    db.execute("ROLLBACK")
    check([r[0] for r in db.execute("SELECT id FROM mem_entities ORDER BY id")] == [1, 2, 3] and
          [r[0] for r in db.execute("SELECT id FROM mem ORDER BY id")] == [1, 2], "ROLLBACK undoes both")
    check(log_frames(fn) == f0 + 2, "ROLLBACK writes nothing")
    # savepoints: a table joining inside a savepoint
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(id, text) VALUES (3, 'c')")
    db.execute("SAVEPOINT a")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (5, 'E')")   # joins inside a
    db.execute("SAVEPOINT b")
    db.execute("INSERT INTO mem_relations(src, dst) VALUES (2, 5)")   # joins inside b
    db.execute("INSERT INTO mem(id, text) VALUES (4, 'd')")
    db.execute("ROLLBACK TO b")
    check(db.execute("SELECT count(*) FROM mem_relations").fetchone()[0] == 1 and
          db.execute("SELECT count(*) FROM mem WHERE id = 4").fetchone()[0] == 0 and
          db.execute("SELECT count(*) FROM mem_entities WHERE id = 5").fetchone()[0] == 1, "ROLLBACK TO b")
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (3, 5)")
    db.execute("ROLLBACK TO a")
    check(db.execute("SELECT count(*) FROM mem_entities WHERE id = 5").fetchone()[0] == 0 and
          db.execute("SELECT count(*) FROM mem_mentions").fetchone()[0] == 1 and
          db.execute("SELECT count(*) FROM mem WHERE id = 3").fetchone()[0] == 1, "ROLLBACK TO a keeps what came before")
    db.execute("RELEASE a")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (6, 'F')")
    db.execute("COMMIT")
    check([r[0] for r in db.execute("SELECT id FROM mem_entities ORDER BY id")] == [1, 2, 3, 6], "after savepoints")
    # savepoints opened before anything was written
    db.execute("SAVEPOINT outer_sp")
    db.execute("SAVEPOINT inner_sp")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (7, 'G')")
    db.execute("ROLLBACK TO outer_sp")
    db.execute("RELEASE outer_sp")
    check(db.execute("SELECT count(*) FROM mem_entities WHERE id = 7").fetchone()[0] == 0, "savepoints before the first write")
    # a failing statement undoes its own changes only
    db.execute("BEGIN")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (8, 'H')")
    expect_error(db, "INSERT INTO mem_relations(src, dst) VALUES (1, 2), (1, 99)", "no entity with id 99")
    expect_error(db, "INSERT INTO mem_entities(id, name) VALUES (9, 'I'), (10, NULL)", "name")
    db.execute("COMMIT")
    check([r[0] for r in db.execute("SELECT id FROM mem_entities WHERE id >= 8")] == [8] and
          db.execute("SELECT count(*) FROM mem_relations").fetchone()[0] == 1, "statement rollback")
    # a table made in the transaction that writes to it (no xBegin)
    db.execute("BEGIN")
    db.execute("CREATE VIRTUAL TABLE mem2 USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "tx2.h5")))
    db.execute("INSERT INTO mem2(text) VALUES ('x')")
    db.execute("INSERT INTO mem2_entities(name) VALUES ('y')")
    db.execute("COMMIT")
    check(db.execute("SELECT count(*) FROM mem2_entities").fetchone()[0] == 1, "made and written in one transaction")
    # DROP TABLE in a transaction with uncommitted changes is refused
    db.execute("BEGIN")
    db.execute("INSERT INTO mem2_entities(name) VALUES ('z')")
    expect_error(db, "DROP TABLE mem2", "locked")
    expect_error(db, "DROP TABLE mem2_entities", "locked")
    db.execute("COMMIT")
    db.execute("DROP TABLE mem2")
    # checkpoint, reopen
    db.execute("SELECT h5mem_checkpoint('mem')")
    want = (ents(db), db.execute("SELECT * FROM mem_relations").fetchall(),
            db.execute("SELECT * FROM mem_mentions").fetchall())
    other.close()
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    got = (ents(db), db.execute("SELECT * FROM mem_relations").fetchall(),
           db.execute("SELECT * FROM mem_mentions").fetchall())
    check(got == want, "after a checkpoint and reopening")
    db.close()
    # a process that dies without closing: the log replays
    script = (
        "import os, sqlite3, sys\n"
        "db = sqlite3.connect(':memory:', isolation_level=None)\n"
        "db.enable_load_extension(True); db.load_extension(sys.argv[1])\n"
        "db.execute(\"CREATE VIRTUAL TABLE mem USING h5mem(path='%s')\")\n"
        "db.execute('BEGIN')\n"
        "db.execute(\"INSERT INTO mem(id, text) VALUES (50, 'late')\")\n"
        "db.execute(\"INSERT INTO mem_entities(id, name, aliases) VALUES (50, 'Late', '[\\\"L\\\"]')\")\n"
        "db.execute(\"INSERT INTO mem_relations(src, dst, type) VALUES (50, 1, 'after')\")\n"
        "db.execute(\"INSERT INTO mem_mentions(memory_id, entity_id) VALUES (50, 50)\")\n"
        "db.execute('COMMIT')\n"
        "db.execute('BEGIN')\n"
        "db.execute(\"INSERT INTO mem_entities(id, name) VALUES (51, 'never')\")\n"
        "os._exit(0)\n" % fn.replace("'", "''"))
    p = subprocess.run([sys.executable, "-c", script, EXT], capture_output=True, text=True)
    check(p.returncode == 0, "writer process: %s" % p.stderr[-300:])
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(ents(db)[-1] == (50, "Late", None, '["L"]', None) and
          db.execute("SELECT count(*) FROM mem_entities WHERE id = 51").fetchone()[0] == 0,
          "the log replays the committed transaction only")
    check(db.execute("SELECT src, dst, type FROM mem_relations WHERE src = 50").fetchall() == [(50, 1, "after")] and
          db.execute("SELECT memory_id FROM mem_mentions WHERE entity_id = 50").fetchall() == [(50,)] and
          db.execute("SELECT text FROM mem WHERE id = 50").fetchall() == [("late",)], "all four tables")
    check([r[0] for r in db.execute("SELECT id FROM kg_bfs('mem', 'L', 1)")] == [50, 1], "and the traversal")
    db.close()


def test_random_statements(d):
    """Random statements over mem and its companions, with transactions and
    savepoints, mirrored in ordinary tables."""
    fn = os.path.join(d, "rnd.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    db.execute("CREATE TABLE r_mem(id INTEGER PRIMARY KEY, text)")
    db.execute("CREATE TABLE r_entities(id INTEGER PRIMARY KEY, name, type)")
    rng = random.Random(11)
    in_tx, stack = False, []
    for step in range(500):
        op = rng.random()
        i = rng.randrange(1, 30)
        try:
            if op < 0.05 and not in_tx and not stack:
                db.execute("BEGIN")
                in_tx = True
            elif op < 0.09 and (in_tx or stack):
                db.execute(rng.choice(["COMMIT", "ROLLBACK"]))
                in_tx, stack = False, []
            elif op < 0.14:
                stack.append("s%d" % step)
                db.execute("SAVEPOINT " + stack[-1])
            elif op < 0.20 and stack:
                k = rng.randrange(len(stack))
                if rng.random() < 0.5:
                    db.execute("ROLLBACK TO " + stack[k])
                    del stack[k + 1:]
                else:
                    db.execute("RELEASE " + stack[k])
                    del stack[k:]
            else:
                ty = rng.choice(["a", "b", None])
                for t in ("mem_entities", "r_entities"):
                    if op < 0.45:
                        db.execute("INSERT OR REPLACE INTO %s(id, name, type) VALUES (?, ?, ?)" % t,
                                   (i, "e%d" % step, ty))
                    elif op < 0.6:
                        db.execute("UPDATE %s SET name = name || '+' WHERE id = ?" % t, (i,))
                    elif op < 0.7:
                        db.execute("DELETE FROM %s WHERE id = ?" % t, (i,))
                for t in ("mem", "r_mem"):
                    if 0.7 <= op < 0.85:
                        db.execute("INSERT OR REPLACE INTO %s(id, text) VALUES (?, ?)" % t, (i, "m%d" % step))
                    elif 0.85 <= op < 0.92:
                        db.execute("DELETE FROM %s WHERE id = ?" % t, (i,))
                    elif 0.92 <= op:
                        db.execute("UPDATE %s SET text = text || '*' WHERE id %% 3 = ?" % t, (i % 3,))
        except sqlite3.OperationalError as e:
            check(False, "step %d: %s" % (step, e))
        if step % 25 == 0:
            a = db.execute("SELECT id, name, type FROM mem_entities ORDER BY id").fetchall()
            b = db.execute("SELECT id, name, type FROM r_entities ORDER BY id").fetchall()
            check(a == b, "step %d: entities equal the ordinary table %r" % (step, set(a) ^ set(b)))
            a = db.execute("SELECT id, text FROM mem ORDER BY id").fetchall()
            b = db.execute("SELECT id, text FROM r_mem ORDER BY id").fetchall()
            check(a == b, "step %d: memories equal the ordinary table" % step)
    if in_tx or stack:
        db.execute("COMMIT")
    want = db.execute("SELECT id, name, type FROM r_entities ORDER BY id").fetchall()
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT id, name, type FROM mem_entities ORDER BY id").fetchall() == want, "random: after reopen")
    db.close()


# ---------------------------------------------------------------- kg_bfs

CTE = {
    "out": "SELECT src AS a, dst AS b, type FROM e",
    "in": "SELECT dst AS a, src AS b, type FROM e",
    "both": "SELECT src AS a, dst AS b, type FROM e UNION ALL SELECT dst, src, type FROM e",
}


def cte_bfs(db, start, depth, direction, types):
    where = "" if types is None else " AND x.type IN (%s)" % ",".join(q(t) for t in types) if types else " AND 0"
    sql = ("WITH RECURSIVE x(a, b, type) AS (%s), r(id, d) AS (SELECT ?, 0 UNION "
           "SELECT x.b, r.d + 1 FROM r JOIN x ON x.a = r.id WHERE r.d < ?%s) "
           "SELECT id, min(d) FROM r GROUP BY id" % (CTE[direction], where))
    return dict(db.execute(sql, (start, depth)).fetchall())


def test_bfs(d):
    rng = random.Random(7)
    ncase = 0
    for g in range(25):
        fn = os.path.join(d, "g%d.h5" % g)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
        n = rng.randint(1, 40)
        m = rng.randint(0, 3 * n)
        types = ["a", "b", "c"]
        db.execute("BEGIN")
        db.executemany("INSERT INTO mem_entities(id, name) VALUES (?, ?)", [(i, "n%d" % i) for i in range(1, n + 1)])
        edges = []
        for k in range(m):
            s, t = rng.randint(1, n), rng.randint(1, n)
            edges.append((s, t, rng.choice(types)))
        db.executemany("INSERT INTO mem_relations(src, dst, type) VALUES (?, ?, ?)", edges)
        dead = set(rng.sample(range(1, n + 1), n // 8))
        db.executemany("DELETE FROM mem_entities WHERE id = ?", [(i,) for i in dead])
        db.execute("COMMIT")
        if g % 3 == 0:
            db.execute("SELECT h5mem_checkpoint('mem')")
        db.execute("CREATE TABLE e(id INTEGER PRIMARY KEY, src, dst, type)")
        db.execute("INSERT INTO e SELECT r.id, src, dst, r.type FROM mem_relations r "
                   "WHERE src IN (SELECT id FROM mem_entities) AND dst IN (SELECT id FROM mem_entities)")
        live = [i for i in range(1, n + 1) if i not in dead]
        rel = {r[0]: r[1:] for r in db.execute("SELECT id, src, dst, type FROM e")}
        for trial in range(8):
            if not live:
                break
            start = rng.choice(live)
            depth = rng.randint(0, 5)
            direction = rng.choice(["out", "in", "both"])
            tf = rng.choice([None, None, ["a"], ["b", "c"], ["zzz"]])
            opts = {"direction": direction}
            if tf is not None:
                opts["types"] = tf
            rows = db.execute("SELECT id, name, depth, path, relation, relation_id FROM kg_bfs('mem', ?, ?, ?)",
                              (start, depth, json.dumps(opts))).fetchall()
            want = cte_bfs(db, start, depth, direction, tf)
            got = {r[0]: r[2] for r in rows}
            ncase += 1
            check(got == want and len(rows) == len(got),
                  "graph %d: kg_bfs(%d, %d, %s) == recursive CTE: %r vs %r" % (g, start, depth, opts, got, want))
            check([r[2] for r in rows] == sorted(r[2] for r in rows), "rows in depth order")
            for (i, name, dep, path, rtype, rid) in rows:
                p = json.loads(path)
                ok = p[0] == start and p[-1] == i and len(p) == dep + 1 and name == "n%d" % i
                for a, b in zip(p, p[1:]):
                    ok = ok and any((s, t2) == (a, b) and (direction != "in") or (s, t2) == (b, a) and (direction != "out")
                                    for (s, t2, ty) in rel.values() if tf is None or ty in tf)
                if dep == 0:
                    ok = ok and rtype is None and rid is None
                else:
                    s, t2, ty = rel[rid]
                    ok = ok and ty == rtype and {s, t2} == {p[-2], p[-1]} and (tf is None or ty in tf)
                check(ok, "graph %d: row %r is a chain of edges" % (g, (i, dep, path, rtype, rid)))
            # limit: the first rows of the same order
            if len(rows) > 1:
                lim = rng.randint(1, len(rows))
                opts["limit"] = lim
                lrows = db.execute("SELECT id, depth, path FROM kg_bfs('mem', ?, ?, ?)",
                                   (start, depth, json.dumps(opts))).fetchall()
                check(lrows == [(r[0], r[2], r[3]) for r in rows[:lim]], "limit %d: a prefix" % lim)
        db.close()
    check(ncase > 150, "cases: %d" % ncase)


def test_bfs_args(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "a.h5")))
    db.execute("INSERT INTO mem_entities(id, name, aliases) VALUES (1, 'Alice', '[\"Al\"]'), (2, 'Bob', NULL), "
               "(3, 'bob', NULL), (4, 'Carol', '[\"Al\"]'), (5, 'Dave', NULL), (6, 'Dave', NULL)")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows'), (2, 4, 'knows'), (4, 1, NULL)")
    row = lambda s: db.execute("SELECT id FROM kg_bfs('mem', ?, 0)", (s,)).fetchall()  # noqa: E731
    check(row("Alice") == [(1,)] and row(1) == [(1,)], "start by name and id")
    check(row("Bob") == [(2,)] and row("bob") == [(3,)], "exact name before case")
    check(row("ALICE") == [(1,)], "case-insensitive")
    check(row("CAROL") == [(4,)], "unique case match")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'BOB', 1)", "matches 2 entities (ids 2, 3)")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Dave', 1)", "names 2 entities (ids 5, 6)")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Al', 1)", "is an alias of 2 entities")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Nobody', 1)", "no entity is named 'Nobody'")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 99, 1)", "no entity with id 99")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice')", "too few arguments")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', -1)", "max_depth")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 'two')", "max_depth")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 1, '{\"direction\": \"up\"}')", "direction")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 1, '{\"types\": \"knows\"}')", "types")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 1, '{\"limit\": 0}')", "limit")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 1, '{\"depth\": 2}')", "unknown option 'depth'")
    expect_error(db, "SELECT * FROM kg_bfs('mem', 'Alice', 1, '[1]')", "JSON object")
    expect_error(db, "SELECT * FROM kg_bfs('nosuch', 'Alice', 1)", "not an h5mem table")
    rows = db.execute("SELECT id, depth, path, relation FROM kg_bfs('mem', 'Alice', 3)").fetchall()
    check(rows == [(1, 0, "[1]", None), (2, 1, "[1,2]", "knows"), (4, 2, "[1,2,4]", "knows")], "chain: %r" % rows)
    rows = db.execute("SELECT id, relation FROM kg_bfs('mem', 'Alice', 1, '{\"direction\": \"in\"}')").fetchall()
    check(rows == [(1, None), (4, None)], "a NULL relation type stays NULL: %r" % rows)
    check(db.execute("SELECT count(*) FROM kg_bfs('mem', 'Alice', 3, '{\"types\": []}')").fetchone()[0] == 1,
          "no types: the start alone")
    db.close()


# ---------------------------------------------------------------- activation, resolution

def test_activate(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "act.h5")))
    # A -> B (1), A -> C (3), B -> D (1), E alone
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'A'), (2, 'B'), (3, 'C'), (4, 'D'), (5, 'E')")
    db.execute("INSERT INTO mem_relations(src, dst, weight) VALUES (1, 2, 1), (1, 3, 3), (2, 4, 1)")

    def act(seeds, opts=None):
        sql = "SELECT id, name, activation FROM kg_activate('mem', ?%s)" % (", ?" if opts is not None else "")
        args = (seeds,) + ((json.dumps(opts),) if opts is not None else ())
        return [(r[0], r[1], round(r[2], 9)) for r in db.execute(sql, args)]

    # step 1 from A = 1: B += 1 * 0.5 * 1/4, C += 1 * 0.5 * 3/4
    check(act('["A"]', {"steps": 1, "direction": "out"}) == [(1, "A", 1.0), (3, "C", 0.375), (2, "B", 0.125)],
          "one step: %r" % act('["A"]', {"steps": 1, "direction": "out"}))
    # step 2: A gives again (B 0.25, C 0.75); B (0.125) gives D 0.0625
    check(act('["A"]', {"steps": 2, "direction": "out"}) ==
          [(1, "A", 1.0), (3, "C", 0.75), (2, "B", 0.25), (4, "D", 0.0625)],
          "two steps: %r" % act('["A"]', {"steps": 2, "direction": "out"}))
    # the threshold: D (0.0625) drops out, and nodes below it do not spread
    check([r[0] for r in act('["A"]', {"steps": 2, "direction": "out", "threshold": 0.1})] == [1, 3, 2], "threshold")
    check(act('{"A": 2}', {"steps": 1, "direction": "out", "decay": 1}) ==
          [(1, "A", 2.0), (3, "C", 1.5), (2, "B", 0.5)], "weighted seeds, decay 1")
    # direction in: from D back to B, then A
    # (D gives B 0.5 twice; B's first 0.5 gives A 0.25; ties by id)
    check(act("D", {"steps": 2, "direction": "in"}) == [(2, "B", 1.0), (4, "D", 1.0), (1, "A", 0.25)],
          "in: %r" % act("D", {"steps": 2, "direction": "in"}))
    # both (the default): B spreads over its two edges
    got = act('[2]', {"steps": 1})
    check(got == [(2, "B", 1.0), (1, "A", 0.25), (4, "D", 0.25)], "both: %r" % got)
    check(act(2, {"steps": 1}) == got and act('{"2": 1}', {"steps": 1}) == got, "an id, and an id as a key")
    check(act('["E"]') == [(5, "E", 1.0)], "an isolated seed")
    expect_error(db, "SELECT * FROM kg_activate('mem', '[\"Nobody\"]')", "no entity is named")
    expect_error(db, "SELECT * FROM kg_activate('mem', '[1.5]')", "element 0")
    expect_error(db, "SELECT * FROM kg_activate('mem', '{\"A\": \"x\"}')", "number")
    expect_error(db, "SELECT * FROM kg_activate('mem', '[\"A\"')", "malformed JSON")
    expect_error(db, "SELECT * FROM kg_activate('mem', 'A', '{\"decay\": 0}')", "decay")
    expect_error(db, "SELECT * FROM kg_activate('mem', 'A', '{\"decay\": 1.5}')", "decay")
    expect_error(db, "SELECT * FROM kg_activate('mem', 'A', '{\"steps\": 0}')", "steps")
    expect_error(db, "SELECT * FROM kg_activate('mem', 'A', '{\"threshold\": -1}')", "threshold")
    db.close()


def test_resolve(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "res.h5")))
    db.execute("INSERT INTO mem_entities(id, name, aliases) VALUES "
               "(1, 'Alice Smith', '[\"Al\", \"A. Smith\"]'), (2, 'alice smith', NULL), (3, 'Alicia Smith', NULL), "
               "(4, 'Bob', '[\"Bobby\"]'), (5, 'Zoë', NULL), (6, 'Al', NULL), (7, 'ZOË Ltd', NULL)")
    res = lambda s, k=None: db.execute(  # noqa: E731
        "SELECT id, name, match, edits FROM kg_resolve('mem', ?%s)" % (", ?" if k is not None else ""),
        (s,) + ((k,) if k is not None else ())).fetchall()
    check(res("Alice Smith") == [(1, "Alice Smith", "exact", 0), (2, "alice smith", "case", 0),
                                 (3, "Alicia Smith", "edit", 2)], "exact, case, edit: %r" % res("Alice Smith"))
    check(res("Alice Smith", 1) == [(1, "Alice Smith", "exact", 0), (2, "alice smith", "case", 0)], "max_edits 1")
    check(res("Al") == [(6, "Al", "exact", 0), (1, "Alice Smith", "alias", 0)], "name before alias: %r" % res("Al"))
    check(res("bobby") == [(4, "Bob", "case", 0)], "alias, case-insensitive")
    check(res("Bobb") == [(4, "Bob", "edit", 1)], "an entity once, at its best: %r" % res("Bobb"))
    check(res("ZOË", 0) == [(5, "Zoë", "case", 0)], "Unicode case folding: %r" % res("ZOË", 0))
    check(res("ZOË") == [(5, "Zoë", "case", 0), (4, "Bob", "edit", 2)], "zoë - bob: 2 edits: %r" % res("ZOË"))
    check(res("Zoe", 1) == [(5, "Zoë", "edit", 1)], "edits count code points: %r" % res("Zoe", 1))
    check(res("nobody at all") == [] and res(None) == [], "no match")
    expect_error(db, "SELECT * FROM kg_resolve('mem', 'x', -1)", "max_edits")
    expect_error(db, "SELECT * FROM kg_resolve('mem')", "too few arguments")
    # kg_entity: resolve or make
    check(db.execute("SELECT kg_entity('mem', 'Alice Smith'), kg_entity('mem', 'BOB'), kg_entity('mem', 'Bobby')")
          .fetchone() == (1, 4, 4), "kg_entity resolves")
    check(db.execute("SELECT kg_entity('mem', 'ALICE SMITH')").fetchone()[0] == 1, "several case matches: the lowest id")
    check(db.execute("SELECT kg_entity('mem', 'Carol', 'person')").fetchone()[0] == 8, "kg_entity makes one")
    check(ents(db)[-1] == (8, "Carol", "person", None, None), "with its type")
    check(db.execute("SELECT kg_entity('mem', 'carol', 'robot')").fetchone()[0] == 8, "and finds it next time")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (kg_entity('mem', 'Dan'), kg_entity('mem', 'Eve'), 'knows')")
    check(db.execute("SELECT e1.name, e2.name FROM mem_relations r JOIN mem_entities e1 ON e1.id = r.src "
                     "JOIN mem_entities e2 ON e2.id = r.dst").fetchall() == [("Dan", "Eve")], "inside an INSERT")
    db.execute("BEGIN")
    db.execute("SELECT kg_entity('mem', 'Ghost')")
    db.execute("ROLLBACK")
    check(db.execute("SELECT count(*) FROM mem_entities WHERE name = 'Ghost'").fetchone()[0] == 0,
          "kg_entity is in the transaction")
    check(db.execute("SELECT kg_entity('mem', NULL)").fetchone()[0] is None, "NULL name: NULL")
    expect_error(db, "SELECT kg_entity('mem', '')", "name")
    db.execute("CREATE VIEW v AS SELECT kg_entity('mem', 'Mallory')")
    expect_error(db, "SELECT * FROM v", "unsafe use")
    db.close()


# ---------------------------------------------------------------- hybrid through the graph

def test_hybrid_join(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=64)" % q(os.path.join(d, "hy.h5")))
    texts = ["Alice runs the marathon in June", "Bob drinks coffee with Alice", "Carol plants tomatoes",
             "Dave fixes the coffee machine", "Alice and Carol talk about tomatoes", "Erin reads about coffee",
             "Bob trains for the marathon", "Frank likes coffee and tea"]
    db.executemany("INSERT INTO mem(id, text, embedding) VALUES (?, ?, h5mem_embed_text(?, 64))",
                   [(i + 1, t, t) for i, t in enumerate(texts)])
    people = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank"]
    db.executemany("INSERT INTO mem_entities(name) VALUES (?)", [(p,) for p in people])
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'friend'), (2, 4, 'colleague'), (3, 5, 'friend')")
    for mid, t in enumerate(texts, 1):
        for eid, p in enumerate(people, 1):
            if p in t:
                db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (?, ?)", (mid, eid))
    sql = ("SELECT id FROM hybrid('mem', 'coffee', h5mem_embed_text('coffee', 64), 3) WHERE id IN "
           "(SELECT memory_id FROM mem_mentions WHERE entity_id IN (SELECT id FROM kg_bfs('mem', 'Alice', 1)))")
    got = [r[0] for r in db.execute(sql)]
    allowed = sorted({r[0] for r in db.execute(
        "SELECT memory_id FROM mem_mentions WHERE entity_id IN (1, 2)")})
    want = [r[0] for r in db.execute(
        "SELECT id FROM hybrid('mem', 'coffee', h5mem_embed_text('coffee', 64), 3) WHERE id IN (%s)"
        % ",".join(map(str, allowed)))]
    check(got == want and len(got) == 3 and set(got) <= set(allowed), "hybrid through the graph: %r vs %r" % (got, want))
    check(2 in got and 4 not in got and 6 not in got, "coffee memories of Alice's neighbourhood only: %r" % got)
    db.close()


# ---------------------------------------------------------------- MCP memory JSONL

MCP = "\n".join([
    '{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish","Graduated in 2019"]}',
    '{"type":"entity","name":"Anthropic","entityType":"organization","observations":[]}',
    '{"type":"entity","name":"Zoë \\"Z\\" Ng","entityType":"person","observations":["Likes \\u00e9clairs\\nand tea", "😀"]}',
    '{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}',
    '{"type":"relation","from":"Zoë \\"Z\\" Ng","to":"John_Smith","relationType":"knows"}',
]) + "\n"


def test_jsonl(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "j1.h5")))
    rep = json.loads(db.execute("SELECT kg_import_jsonl('mem', ?)", (MCP,)).fetchone()[0])
    check(rep == {"lines": 5, "entities": 3, "entities_existing": 0, "relations": 2, "relations_existing": 0,
                  "observations": 4, "observations_existing": 0, "dangling_relations": 0, "placeholders": 0,
                  "adjusted": {"lines_ignored": 0, "ignored_lines": [], "strings_kept_in_meta": 0, "invalid_utf8": 0,
                               "members_missing": 0}}, "import report: %r" % rep)
    check(ents(db) == [(1, "John_Smith", "person", None, None), (2, "Anthropic", "organization", None, None),
                       (3, 'Zoë "Z" Ng', "person", None, None)], "entities imported")
    check(db.execute("SELECT m.text, e.name FROM mem m JOIN mem_mentions x ON x.memory_id = m.id "
                     "JOIN mem_entities e ON e.id = x.entity_id ORDER BY m.id").fetchall() ==
          [("Speaks fluent Spanish", "John_Smith"), ("Graduated in 2019", "John_Smith"),
           ("Likes éclairs\nand tea", 'Zoë "Z" Ng'), ("😀", 'Zoë "Z" Ng')], "observations become memories")
    check(db.execute("SELECT DISTINCT source FROM mem").fetchall() == [("mcp",)], "source 'mcp'")
    out = db.execute("SELECT kg_export_jsonl('mem')").fetchone()[0]
    check([json.loads(x) for x in out.splitlines()] == [json.loads(x) for x in MCP.splitlines()],
          "export gives back what was imported:\n%s" % out)
    check(not out.endswith("\n") and all(json.loads(x)["type"] in ("entity", "relation") for x in out.splitlines()),
          "one object a line, lines joined by \\n as the reference writes them")
    # a second import of the same: nothing new
    rep = json.loads(db.execute("SELECT kg_import_jsonl('mem', ?)", (MCP,)).fetchone()[0])
    check(rep["entities"] == 0 and rep["entities_existing"] == 3 and rep["relations"] == 0 and
          rep["relations_existing"] == 2 and rep["observations"] == 0 and rep["observations_existing"] == 4,
          "import twice: nothing added: %r" % rep)
    # a store built from SQL, exported, imported elsewhere, exported again: the same text
    db.execute("INSERT INTO mem_entities(name, type) VALUES ('Solo', NULL)")
    db.execute("INSERT INTO mem(id, text) VALUES (100, 'about Solo and Anthropic')")
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (100, 4), (100, 2)")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (4, 4, 'self'), (4, 2, NULL)")
    out = db.execute("SELECT kg_export_jsonl('mem')").fetchone()[0]
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE m2 USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "j2.h5")))
    db2.execute("SELECT kg_import_jsonl('m2', ?)", (out,))
    out2 = db2.execute("SELECT kg_export_jsonl('m2')").fetchone()[0]
    check(out2 == out, "round trip:\n%s\n%s" % (out, out2))
    check(json.loads(out.splitlines()[3]) == {"type": "entity", "name": "Solo", "entityType": "",
                                               "observations": ["about Solo and Anthropic"]}, "a NULL type is \"\"")
    # a bigger random graph round-trips too
    rng = random.Random(5)
    lines = []
    for i in range(200):
        obs = ["fact %d.%d %s" % (i, k, rng.choice(["é", "\t", "\"", "\\", "x"])) for k in range(rng.randint(0, 3))]
        lines.append(json.dumps({"type": "entity", "name": "e%d" % i, "entityType": rng.choice(["a", "b"]),
                                 "observations": obs}, ensure_ascii=False, separators=(",", ":")))
    for k in range(400):
        lines.append(json.dumps({"type": "relation", "from": "e%d" % rng.randrange(200), "to": "e%d" % rng.randrange(200),
                                 "relationType": rng.choice(["r", "s"])}, separators=(",", ":")))
    text = "\n".join(lines) + "\n"
    db3 = connect()
    db3.execute("CREATE VIRTUAL TABLE m3 USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "j3.h5")))
    rep = json.loads(db3.execute("SELECT kg_import_jsonl('m3', ?)", (text,)).fetchone()[0])
    check(rep["entities"] == 200 and rep["relations"] == 400 and rep["relations_existing"] == 0,
          "random import: %r" % rep)
    out3 = db3.execute("SELECT kg_export_jsonl('m3')").fetchone()[0]
    check(out3 == "\n".join(lines), "random round trip, byte for byte (duplicate relations kept, as the reference "
          "keeps them)")
    # errors: nothing is imported
    n0 = db3.execute("SELECT count(*) FROM m3_entities").fetchone()[0]
    for bad, word in [('{"type":"entity","name":"new1"}\n{"type":"entity","name":', "line 2: malformed JSON"),
                      ('{"type":"entity","name":"new4"}\n\n{"type":"entity","name":7}', "line 3: \"name\" must be a string"),
                      ('{"type":"entity","name":"new5","observations":"x"}', "observations"),
                      ('{"type":"entity","name":"new6"}\n{"type":"relation","from":"new6"}', "line 2: \"to\" must be")]:
        expect_error(db3, "SELECT kg_import_jsonl('m3', ?)", word, (bad,))
    check(db3.execute("SELECT count(*) FROM m3_entities").fetchone()[0] == n0, "a failed import adds nothing")
    db3.execute("BEGIN")
    db3.execute("SELECT kg_import_jsonl('m3', ?)", ('{"type":"entity","name":"in_tx"}',))
    db3.execute("ROLLBACK")
    check(db3.execute("SELECT count(*) FROM m3_entities WHERE name = 'in_tx'").fetchone()[0] == 0,
          "an import in a transaction is rolled back with it")
    check(db3.execute("SELECT kg_export_jsonl('m3') = ?", (out3,)).fetchone()[0] == 1, "unchanged")
    check(db.execute("SELECT kg_export_jsonl('mem')").fetchone()[0].count("\n") == 7, "export counts")
    # lines the reference leaves out are left out and reported; a relation
    # naming no entity is kept (its end a placeholder entity, not exported)
    rep = json.loads(db3.execute("SELECT kg_import_jsonl('m3', ?)", (
        '[1]\n{"type":"thing"}\n{"type":"relation","from":"e1","to":"nobody","relationType":"r"}',)).fetchone()[0])
    check(rep["adjusted"]["ignored_lines"] == [1, 2] and rep["relations"] == 1 and rep["dangling_relations"] == 1 and
          rep["placeholders"] == 1, "ignored and dangling: %r" % rep)
    check(db3.execute("SELECT name, meta FROM m3_entities WHERE name = 'nobody'").fetchall() ==
          [("nobody", '{"jsonl":{"placeholder":true}}')], "a placeholder")
    check(db3.execute("SELECT kg_export_jsonl('m3')").fetchone()[0] ==
          out3 + '\n{"type":"relation","from":"e1","to":"nobody","relationType":"r"}', "exported as it was")
    # an entity of that name comes later: it takes the placeholder's
    # relations (as the reference, where the name now names an entity) and
    # the placeholder goes; the entity comes last, as there
    rep = json.loads(db3.execute("SELECT kg_import_jsonl('m3', ?)", (
        '{"type":"entity","name":"nobody","entityType":"now","observations":["here"]}',)).fetchone()[0])
    check(rep["entities"] == 1 and rep["placeholders"] == 0, "the placeholder's name imported: %r" % rep)
    check(db3.execute("SELECT count(*) FROM m3_entities WHERE name = 'nobody'").fetchone()[0] == 1,
          "one entity of the name, the placeholder gone")
    nid = db3.execute("SELECT id FROM m3_entities WHERE name = 'nobody'").fetchone()[0]
    check(db3.execute("SELECT count(*) FROM m3_relations WHERE dst = ?", (nid,)).fetchone()[0] == 1,
          "the relation moved to the entity")
    want = (lines[:200] + ['{"type":"entity","name":"nobody","entityType":"now","observations":["here"]}'] +
            lines[200:] + ['{"type":"relation","from":"e1","to":"nobody","relationType":"r"}'])
    check(db3.execute("SELECT kg_export_jsonl('m3')").fetchone()[0] == "\n".join(want), "exported with its entity")
    empty = connect()
    empty.execute("CREATE VIRTUAL TABLE e USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "j4.h5")))
    check(empty.execute("SELECT kg_export_jsonl('e')").fetchone()[0] == "", "an empty graph: empty text")
    expect_error(empty, "SELECT kg_import_jsonl('e', NULL)", "text")
    # the walk behind the export is for C callers (a pointer): from SQL, an error
    expect_error(empty, "SELECT h5mem_kg_walk('e', NULL)", "walker: a kg_walker pointer (sqlite3_bind_pointer) from C")
    expect_error(empty, "SELECT h5mem_kg_walk('e', 'x')", "walker: a kg_walker pointer")
    for c in (db, db2, db3, empty):
        c.close()


def main():
    with tempfile.TemporaryDirectory() as d:
        for t in (test_tables, test_transactions, test_random_statements, test_bfs, test_bfs_args,
                  test_activate, test_resolve, test_hybrid_join, test_jsonl):
            sub = os.path.join(d, t.__name__)
            os.mkdir(sub)
            try:
                t(sub)
            except Exception as e:  # noqa: BLE001
                import traceback
                traceback.print_exc()
                check(False, "%s raised %r" % (t.__name__, e))
    finish()


if __name__ == "__main__":
    main()
