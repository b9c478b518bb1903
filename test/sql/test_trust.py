"""A database file someone hands you must not reach your files (issue 17):

- evil.db declares `mem USING h5mem(path='<the victim's store>')` and its
  companion tables, with triggers and views over them and over vec_search,
  bm25, hybrid, kg_bfs, kg_activate, kg_resolve, h5mem_index,
  h5mem_checkpoint, kg_export_jsonl, kg_entity, kg_import_jsonl,
  h5mem_score.  The victim opens it (SQLite's default trusted_schema=ON),
  loads h5mem and runs an innocent INSERT INTO notes / SELECT from a view: each fails with SQLite's
  "unsafe use of ..." and the victim's store is byte-for-byte unchanged;
- a table a database file declares on a store that does not exist never
  creates it (xConnect only opens): every use is a clear error, and DROP
  TABLE works;
- direct use, in statements the user runs, keeps working;
- the store's temporary files (<store>.new-<pid>, <store>.optimize-<pid>)
  and the h5 table's (<file>.h5mem-new-<pid>) are made exclusively: a
  symbolic link planted at that name is never followed, its target is
  unchanged.
"""
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402


def snapshot(d):
    """Every file under d (name -> bytes; links as their target's name)."""
    out = {}
    for root, dirs, files in os.walk(d):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(root, x))]:
            p = os.path.join(root, f)
            out[os.path.relpath(p, d)] = ("link", os.readlink(p)) if os.path.islink(p) else open(p, "rb").read()
    return out


def make_victim(home):
    """The victim's store with memories, entities and relations, made in a trusted connection."""
    fn = os.path.join(home, "agent.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, dim=4)" % q(fn))
    for i, t in enumerate(["coffee in the morning", "tea at noon", "the password is swordfish"]):
        db.execute("INSERT INTO v(id, text, embedding) VALUES (?, ?, ?)", (i + 1, t, "[1,%d,3,4]" % i))
    db.execute("INSERT INTO v_entities(id, name, type) VALUES (1, 'Alice', 'person'), (2, 'Bob', 'person')")
    db.execute("INSERT INTO v_relations(id, src, dst, type) VALUES (1, 1, 2, 'knows')")
    db.execute("INSERT INTO v_mentions(memory_id, entity_id) VALUES (1, 1)")
    db.close()  # (checkpoints: the log is empty)
    return fn


# What evil.db's triggers and views do with the victim's store, by name:
# each is a view `v_<name>` (SELECT) and a trigger on table `t_<name>`.
PAYLOADS = {
    "mem": "SELECT text FROM mem",
    "entities": "SELECT name FROM mem_entities",
    "relations": "SELECT type FROM mem_relations",
    "mentions": "SELECT entity_id FROM mem_mentions",
    "vec_search": "SELECT text FROM vec_search('mem', '[1,0,3,4]', 3)",
    "bm25": "SELECT text FROM bm25('mem', 'password', 3)",
    "hybrid": "SELECT text FROM hybrid('mem', 'password', '[1,0,3,4]', 3)",
    "kg_bfs": "SELECT name FROM kg_bfs('mem', 'Alice', 3)",
    "kg_activate": "SELECT name FROM kg_activate('mem', '[\"Alice\"]')",
    "kg_resolve": "SELECT name FROM kg_resolve('mem', 'Alice')",
    "h5mem_index": "SELECT h5mem_index('mem')",
    "h5mem_checkpoint": "SELECT h5mem_checkpoint('mem')",
    "kg_export_jsonl": "SELECT kg_export_jsonl('mem')",
    "kg_entity": "SELECT kg_entity('mem', 'Mallory')",
    "kg_import_jsonl": "SELECT kg_import_jsonl('mem', '{\"type\":\"entity\",\"name\":\"M\",\"entityType\":\"x\",\"observations\":[]}')",
    "h5mem_score": "SELECT h5mem_score('mem', 1)",
    "h5mem_kg_walk": "SELECT h5mem_kg_walk('mem', NULL)",
}
# what each must name in SQLite's "unsafe use of ..." message
UNSAFE = {
    "mem": 'virtual table "mem"', "entities": 'virtual table "mem_entities"',
    "relations": 'virtual table "mem_relations"', "mentions": 'virtual table "mem_mentions"',
    "vec_search": 'virtual table "vec_search"', "bm25": 'virtual table "bm25"',
    "hybrid": 'virtual table "hybrid"', "kg_bfs": 'virtual table "kg_bfs"',
    "kg_activate": 'virtual table "kg_activate"', "kg_resolve": 'virtual table "kg_resolve"',
    "h5mem_index": "h5mem_index()", "h5mem_checkpoint": "h5mem_checkpoint()",
    "kg_export_jsonl": "kg_export_jsonl()", "kg_entity": "kg_entity()", "kg_import_jsonl": "kg_import_jsonl()",
    "h5mem_score": "h5mem_score()", "h5mem_kg_walk": "h5mem_kg_walk()",
}


# every function that touches files, called by a CHECK constraint of the
# handed file: the writers plant or change things, the readers read them
CHECK_CALLS = {
    "kg_entity": "kg_entity('mem', 'Mallory')",
    "kg_import_jsonl": "kg_import_jsonl('mem', '{\"type\":\"entity\",\"name\":\"Eve\"}')",
    "h5mem_checkpoint": "h5mem_checkpoint('mem')",
    "h5mem_index": "h5mem_index('mem')",
    "h5mem_score": "h5mem_score('mem', 1)",
    "h5_read_json": "h5_read_json('/etc/hostname', '/')",
    "h5mem_migrate": "h5mem_migrate('/etc/hostname', 'planted.h5')",
}
CHECKS = [("chk_" + fn, fn) for fn in CHECK_CALLS]


def craft(evil, store, newstore):
    """evil.db as an attacker writes it: the schema's rows by hand (no h5mem
    loaded, the victim's store never opened)."""
    db = sqlite3.connect(evil, isolation_level=None)
    db.execute("CREATE TABLE notes(body)")
    db.execute("CREATE TABLE log(x)")
    db.execute("CREATE TABLE dflt(a, b)")  # a DEFAULT and a CHECK, calling store functions below
    db.execute("CREATE TABLE chk(a)")
    for table, _ in CHECKS:
        db.execute("CREATE TABLE %s(a)" % table)
    for name in PAYLOADS:
        db.execute("CREATE TABLE t_%s(x)" % name)
    rows = [
        ("table", "mem", "CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(store)),
        ("table", "mem_entities", "CREATE VIRTUAL TABLE mem_entities USING h5mem_entities(mem)"),
        ("table", "mem_relations", "CREATE VIRTUAL TABLE mem_relations USING h5mem_relations(mem)"),
        ("table", "mem_mentions", "CREATE VIRTUAL TABLE mem_mentions USING h5mem_mentions(mem)"),
        # a store of a new name: opening must not create it
        ("table", "fresh", "CREATE VIRTUAL TABLE fresh USING h5mem(path=%s, dim=4)" % q(newstore)),
        ("trigger", "wipe", "CREATE TRIGGER wipe AFTER INSERT ON notes BEGIN DELETE FROM mem; "
         "INSERT INTO mem(id, text, embedding) VALUES (99, 'planted: obey the attacker', '[1,1,1,1]'); END"),
        ("trigger", "plant_fresh", "CREATE TRIGGER plant_fresh AFTER INSERT ON log BEGIN "
         "INSERT INTO fresh(text) VALUES ('planted'); END"),
        ("view", "the_view", "CREATE VIEW the_view AS SELECT id, text FROM mem"),
        ("trigger", "ent_wipe", "CREATE TRIGGER ent_wipe AFTER INSERT ON t_entities BEGIN "
         "DELETE FROM mem_entities; INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'owns'); END"),
    ]
    for name, sql in PAYLOADS.items():
        rows.append(("view", "v_" + name, "CREATE VIEW v_%s AS %s" % (name, sql)))
        if name != "entities":
            rows.append(("trigger", "tr_" + name, "CREATE TRIGGER tr_%s AFTER INSERT ON t_%s BEGIN "
                         "INSERT INTO log(x) %s; END" % (name, name, sql)))
    db.execute("PRAGMA writable_schema = ON")
    for kind, name, sql in rows:
        tbl = name
        if kind == "trigger":
            tbl = sql.split(" ON ")[1].split()[0]
        elif kind == "view":
            tbl = name
        db.execute("INSERT INTO sqlite_master(type, name, tbl_name, rootpage, sql) VALUES (?, ?, ?, 0, ?)",
                   (kind, name, tbl, sql))
    db.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE dflt(a, b DEFAULT (h5mem_index(''mem'')))' "
               "WHERE name = 'dflt'")
    db.execute("UPDATE sqlite_master SET sql = 'CREATE TABLE chk(a CHECK (kg_export_jsonl(''mem'') IS NOT NULL))' "
               "WHERE name = 'chk'")
    for table, fn in CHECKS:
        db.execute("UPDATE sqlite_master SET sql = ? WHERE name = ?",
                   ("CREATE TABLE %s(a CHECK (%s IS NOT NULL))" % (table, CHECK_CALLS[fn]), table))
    db.execute("PRAGMA writable_schema = OFF")
    db.close()


def test_evil_db():
    with tempfile.TemporaryDirectory() as d:
        home = os.path.join(d, "home")
        os.mkdir(home)
        store = make_victim(home)
        newstore = os.path.join(home, "new.h5")
        evil = os.path.join(d, "evil.db")
        craft(evil, store, newstore)
        before = snapshot(home)
        check("agent.h5" in before, "the victim's files: %s" % sorted(before))

        # the victim opens it, as anyone would
        db = connect(evil)
        check(db.execute("PRAGMA trusted_schema").fetchone()[0] == 1, "SQLite's default trusted_schema=ON")
        expect_error(db, "INSERT INTO notes VALUES ('buy milk')", 'unsafe use of virtual table "mem"')
        expect_error(db, "SELECT * FROM the_view", 'unsafe use of virtual table "mem"')
        expect_error(db, "INSERT INTO log VALUES (1)", 'unsafe use of virtual table "fresh"')
        expect_error(db, "INSERT INTO t_entities VALUES (1)", 'unsafe use of virtual table "mem_entities"')
        expect_error(db, "INSERT INTO dflt(a) VALUES (1)", "unsafe use of h5mem_index()")
        # a CHECK: SQLite refuses it from 3.50.0; before, ext_direct_call
        # does (no running statement calls the function: docs/SQL.md, "Trust")
        expect_error(db, "INSERT INTO chk(a) VALUES (1)", "unsafe use of kg_export_jsonl()")
        for table, fn in CHECKS:
            expect_error(db, "INSERT INTO %s(a) VALUES (1)" % table, "unsafe use of %s()" % fn)
        for name in PAYLOADS:
            expect_error(db, "SELECT * FROM v_%s" % name, "unsafe use of " + UNSAFE[name])
            if name != "entities":
                expect_error(db, "INSERT INTO t_%s VALUES (1)" % name, "unsafe use of " + UNSAFE[name])
        check(db.execute("SELECT count(*) FROM notes").fetchone()[0] == 0, "the INSERT was undone")
        check(db.execute("SELECT count(*) FROM log").fetchone()[0] == 0, "no trigger wrote rows")
        db.close()
        check(snapshot(home) == before, "the victim's store is unchanged, no file made: %s" % sorted(snapshot(home)))

        # direct use keeps working: the user's own statements
        db = connect(evil)
        check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 3, "direct SELECT")
        check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 2, "direct companion")
        check(db.execute("SELECT count(*) FROM vec_search('mem', '[1,0,3,4]', 3)").fetchone()[0] == 3, "vec_search")
        check(db.execute("SELECT text FROM bm25('mem', 'swordfish', 3)").fetchall() ==
              [("the password is swordfish",)], "bm25")
        check(db.execute("SELECT count(*) FROM hybrid('mem', 'tea', '[1,1,3,4]', 3)").fetchone()[0] == 3, "hybrid")
        check([r[0] for r in db.execute("SELECT name FROM kg_bfs('mem', 'Alice', 3)")] == ["Alice", "Bob"], "kg_bfs")
        check(db.execute("SELECT count(*) FROM kg_resolve('mem', 'Alice')").fetchone()[0] == 1, "kg_resolve")
        check(db.execute("SELECT count(*) FROM kg_activate('mem', '[\"Alice\"]')").fetchone()[0] >= 1, "kg_activate")
        check('"index"' in db.execute("SELECT h5mem_index('mem')").fetchone()[0], "h5mem_index")
        check("Alice" in db.execute("SELECT kg_export_jsonl('mem')").fetchone()[0], "kg_export_jsonl")
        check(0 <= db.execute("SELECT h5mem_score('mem', 1)").fetchone()[0] <= 1, "h5mem_score")
        db.close()
        check(snapshot(home) == before, "reading changed nothing")

        # the table of a new name: connected, never created, every use an
        # error naming the store; DROP TABLE works and makes nothing
        db = connect(evil)
        for sql in ["SELECT * FROM fresh", "INSERT INTO fresh(text) VALUES ('x')",
                    "SELECT h5mem_index('fresh')", "SELECT * FROM vec_search('fresh', '[1,2,3,4]', 1)"]:
            msg = expect_error(db, sql, "does not exist")
            check(newstore in msg, "%s: the message names the store: %r" % (sql, msg))
        db.execute("DROP TABLE fresh")
        check(not os.path.exists(newstore) and not os.path.exists(newstore + "-wal"), "DROP made no store")
        db.close()
        check(snapshot(home) == before, "the missing store's table made no file")

        # a database whose store was deleted: its table and companions are
        # unusable with a clear message, and DROP TABLE drops all four
        mine = os.path.join(d, "mine.db")
        gone = os.path.join(d, "gone.h5")
        db = connect(mine)
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s, dim=4)" % q(gone))
        db.execute("INSERT INTO m(text, embedding) VALUES ('x', '[1,2,3,4]')")
        db.close()
        os.remove(gone)
        for f in os.listdir(d):
            if f.startswith("gone.h5"):
                os.remove(os.path.join(d, f))
        db = connect(mine)
        expect_error(db, "SELECT * FROM m", "does not exist")
        expect_error(db, "INSERT INTO m(text) VALUES ('y')", "does not exist")
        expect_error(db, "SELECT * FROM m_entities", "does not exist")
        expect_error(db, "INSERT INTO m_relations(src, dst, type) VALUES (1, 2, 'x')", "does not exist")
        expect_error(db, "SELECT h5mem_checkpoint('m')", "does not exist")
        expect_error(db, "ALTER TABLE m RENAME TO m2", "does not exist")
        check(not os.path.exists(gone), "connecting made no store")
        db.execute("DROP TABLE m")
        check(db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0, "DROP dropped the companions")
        check(not any(f.startswith("gone.h5") for f in os.listdir(d)), "DROP made no file")
        # CREATE VIRTUAL TABLE (the user's own statement) still makes a store
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s, dim=4)" % q(gone))
        check(os.path.exists(gone), "CREATE makes the store")
        db.close()


def plant(link, target):
    os.symlink(target, link)
    return link


def test_temp_links():
    """Links planted at the temporary names are never followed (the
    extension runs in this process, so the names hold os.getpid())."""
    pid = os.getpid()
    with tempfile.TemporaryDirectory() as d:
        victim = os.path.join(d, "victim.txt")
        open(victim, "wb").write(b"the victim's file\n")
        store = os.path.join(d, "agent.h5")
        links = [plant("%s.new-%d" % (store, pid), victim), plant("%s.optimize-%d" % (store, pid), victim)]
        # a file left by a process that died with this pid: left alone too
        stale = "%s.new-%d.1" % (store, pid)
        open(stale, "wb").write(b"left behind\n")
        db = connect()
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s, dim=4)" % q(store))
        for i in range(5):
            db.execute("INSERT INTO m(id, text, embedding) VALUES (?, 'x', '[1,2,3,4]')", (i + 1,))
        db.execute("DELETE FROM m WHERE id <= 2")
        db.execute("INSERT INTO m(m) VALUES ('optimize')")
        check(db.execute("SELECT group_concat(id) FROM m").fetchone()[0] == "3,4,5", "the store works")
        db.close()
        check(open(victim, "rb").read() == b"the victim's file\n", "the links' target is unchanged")
        check(all(os.readlink(x) == victim for x in links), "the links are left alone")
        check(open(stale, "rb").read() == b"left behind\n", "the leftover is left alone")
        made = sorted(f for f in os.listdir(d) if f.startswith("agent.h5"))
        check(made == sorted(["agent.h5", "agent.h5-wal"] + [os.path.basename(x) for x in links + [stale]]),
              "no temporary file left: %s" % made)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(store))
        check(db.execute("SELECT count(*) FROM m").fetchone()[0] == 3, "the store reopens")
        db.close()

        # every name taken: a clear error, nothing touched, no store
        other = os.path.join(d, "other.h5")
        base = "%s.new-%d" % (other, pid)
        for k in range(100):
            plant(base if k == 0 else "%s.%d" % (base, k), victim)
        db = connect()
        msg = expect_error(db, "CREATE VIRTUAL TABLE o USING h5mem(path=%s, dim=4)" % q(other), "all taken")
        check(base in msg, "the message names the name: %r" % msg)
        db.close()
        check(not os.path.exists(other), "no store made")
        check(open(victim, "rb").read() == b"the victim's file\n", "the links' target is unchanged")

        # the h5 table's new file (<file>.h5mem-new-<pid>)
        fn = os.path.join(d, "out.h5")
        link = plant("%s.h5mem-new-%d" % (fn, pid), victim)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/x', schema='n int64')" % q(fn))
        db.execute("INSERT INTO t(n) VALUES (7)")
        check(db.execute("SELECT n FROM t").fetchall() == [(7,)], "the h5 table works")
        db.close()
        check(open(victim, "rb").read() == b"the victim's file\n", "the h5 table's link's target is unchanged")
        check(os.readlink(link) == victim, "the h5 table's link is left alone")


if __name__ == "__main__":
    test_evil_db()
    test_temp_links()
    finish()
