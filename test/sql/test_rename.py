"""ALTER TABLE mem RENAME TO m2 (issue 20).

- Statements of the old name cached (Python's sqlite3 caches 128 per
  connection; they keep the old table's connection alive): inserts and
  deletes on the new name still work on that connection and on another one
  that was the writer when the rename was made elsewhere (before: 'is being
  written by another connection or process', a second handle of the same
  store in one connection).
- A rename inside an open transaction: the rows written before it are seen
  after it by that transaction, commit together with the rows written after
  it, and roll back together.
- The companion tables (mem_entities, mem_relations, mem_mentions) are
  renamed with the table (m2_entities ...) and work through the new name,
  kg_entity('m2', ...) included, after a reopen too; renaming back works.
- Every expected row set is what was written, counted independently.
"""
import os
import sqlite3
import tempfile

from sqltest import EXT, check, expect_error, finish, q


def conn(path, **kw):
    db = sqlite3.connect(path, **kw)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def ids(db, t):
    return [r[0] for r in db.execute("SELECT id FROM %s ORDER BY id" % t)]


def tables(db):
    return sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def attempt(db, sql, args=()):
    try:
        db.execute(sql, args)
        return "OK"
    except sqlite3.Error as e:
        return str(e)


def test_cached_other_connection(d):
    """b wrote through `mem` (its statement cached, so b keeps the old
    table's connection and store handle); a renames mem to m2; b's
    writes to m2 must go through its one handle."""
    dbf = os.path.join(d, "cached.db")
    fn = os.path.join(d, "cached.h5")
    a = conn(dbf)
    a.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(fn))
    a.commit()
    b = conn(dbf)  # Python's default: implicit BEGIN before DML, statements cached
    b.execute("INSERT INTO mem(id, embedding) VALUES (?, '[1,0,0]')", (1,))
    b.commit()  # b is the store's writer
    a.execute("ALTER TABLE mem RENAME TO m2")
    a.commit()
    got = attempt(b, "INSERT INTO m2(id, embedding) VALUES (?, '[0,1,0]')", (2,))
    check(got == "OK", "other connection: insert after the rename: %s" % got)
    b.commit()
    got = attempt(b, "DELETE FROM m2 WHERE id = ?", (1,))
    check(got == "OK", "other connection: delete after the rename: %s" % got)
    b.commit()
    check(ids(b, "m2") == [2], "other connection: rows after insert and delete: %r" % ids(b, "m2"))
    check(ids(a, "m2") == [2], "renaming connection reads them: %r" % ids(a, "m2"))
    # vec_search by the new name; the old name is gone on both
    got = [r[0] for r in b.execute("SELECT id FROM vec_search('m2', '[0,1,0]', 5)")]
    check(got == [2], "other connection: vec_search('m2'): %r" % got)
    expect_error(b, "SELECT id FROM vec_search('mem', '[0,1,0]', 5)", "mem")
    # now a is the writer, its statements of m2 cached, and b renames it back
    b.close()  # (the writer keeps the store until it closes the table)
    a.execute("INSERT INTO m2(id, embedding) VALUES (?, '[0,0,1]')", (3,))
    a.commit()
    a.execute("INSERT INTO m2(id, embedding) VALUES (?, '[1,1,0]')", (4,))
    a.commit()
    b = conn(dbf)
    check(ids(b, "m2") == [2, 3, 4], "b reopened reads a's rows: %r" % ids(b, "m2"))
    check(attempt(b, "INSERT INTO m2(id, embedding) VALUES (9, '[0,0,1]')") != "OK", "b is not the writer")
    b.rollback()
    b.execute("ALTER TABLE m2 RENAME TO mem")
    b.commit()
    got = attempt(a, "INSERT INTO mem(id, embedding) VALUES (?, '[1,0,1]')", (5,))
    check(got == "OK", "renamed back by the other connection: insert: %s" % got)
    a.commit()
    got = attempt(a, "DELETE FROM mem WHERE id = ?", (3,))
    check(got == "OK", "renamed back: delete: %s" % got)
    a.commit()
    check(ids(a, "mem") == [2, 4, 5], "renamed back: rows: %r" % ids(a, "mem"))
    check(ids(b, "mem") == [2, 4, 5], "renamed back: the other reads them: %r" % ids(b, "mem"))
    a.close()
    b.close()


def test_cached_same_connection(d):
    """One connection, Python's default mode: cached statements of the old
    name, then the rename, then writes by the new name."""
    dbf = os.path.join(d, "same.db")
    db = conn(dbf)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "same.h5")))
    for i in range(1, 4):
        db.execute("INSERT INTO mem(id, embedding) VALUES (?, '[1,0,0]')", (i,))
        db.commit()
    db.execute("SELECT id FROM mem WHERE id = ?", (1,)).fetchall()
    db.execute("ALTER TABLE mem RENAME TO m2")
    for sql, args in (("INSERT INTO m2(id, embedding) VALUES (?, '[0,1,0]')", (4,)),
                      ("DELETE FROM m2 WHERE id = ?", (2,))):
        got = attempt(db, sql, args)
        check(got == "OK", "same connection: %s: %s" % (sql, got))
        db.commit()
    check(ids(db, "m2") == [1, 3, 4], "same connection: rows: %r" % ids(db, "m2"))
    expect_error(db, "SELECT id FROM mem", "no such table")
    db.close()


def test_in_transaction(d):
    """A rename inside BEGIN ... COMMIT/ROLLBACK keeps the transaction."""
    dbf = os.path.join(d, "tx.db")
    db = conn(dbf, isolation_level=None)
    other = conn(dbf, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "tx.h5")))
    db.execute("INSERT INTO mem(id, embedding) VALUES (1, '[1,0,0]')")
    # committed together
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(id, embedding) VALUES (2, '[0,1,0]')")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'Alice')")
    db.execute("ALTER TABLE mem RENAME TO m2")
    check(ids(db, "m2") == [1, 2], "in the transaction after the rename: %r" % ids(db, "m2"))
    got = [r[0] for r in db.execute("SELECT name FROM m2_entities")]
    check(got == ["Alice"], "in the transaction: the entity written before the rename: %r" % got)
    got = [r[0] for r in db.execute("SELECT id FROM vec_search('m2', '[0,1,0]', 1)")]
    check(got == [2], "in the transaction: vec_search sees the row written before the rename: %r" % got)
    db.execute("INSERT INTO m2(id, embedding) VALUES (3, '[0,0,1]')")
    db.execute("DELETE FROM m2 WHERE id = 1")
    db.execute("INSERT INTO m2_entities(id, name) VALUES (2, 'Bob')")
    check(ids(db, "m2") == [2, 3], "in the transaction, written after the rename: %r" % ids(db, "m2"))
    db.execute("COMMIT")
    check(ids(db, "m2") == [2, 3], "committed together: %r" % ids(db, "m2"))
    check(ids(other, "m2") == [2, 3], "another connection sees the commit: %r" % ids(other, "m2"))
    got = [r[0] for r in other.execute("SELECT name FROM m2_entities ORDER BY id")]
    check(got == ["Alice", "Bob"], "another connection: the entities: %r" % got)
    # rolled back together
    db.execute("BEGIN")
    db.execute("INSERT INTO m2(id, embedding) VALUES (4, '[1,0,0]')")
    db.execute("DELETE FROM m2 WHERE id = 2")
    db.execute("ALTER TABLE m2 RENAME TO m3")
    db.execute("INSERT INTO m3(id, embedding) VALUES (5, '[1,0,0]')")
    check(ids(db, "m3") == [3, 4, 5], "second transaction before ROLLBACK: %r" % ids(db, "m3"))
    db.execute("ROLLBACK")
    check(tables(db) == ["m2", "m2_entities", "m2_mentions", "m2_relations"],
          "ROLLBACK undoes the rename: %r" % tables(db))
    check(ids(db, "m2") == [2, 3], "rolled back together: %r" % ids(db, "m2"))
    check(ids(other, "m2") == [2, 3], "another connection after the ROLLBACK: %r" % ids(other, "m2"))
    # a savepoint around the rename
    db.execute("BEGIN")
    db.execute("INSERT INTO m2(id, embedding) VALUES (6, '[1,0,0]')")
    db.execute("SAVEPOINT s")
    db.execute("ALTER TABLE m2 RENAME TO m4")
    db.execute("INSERT INTO m4(id, embedding) VALUES (7, '[1,0,0]')")
    db.execute("ROLLBACK TO s")
    db.execute("RELEASE s")
    check(tables(db)[0] == "m2", "ROLLBACK TO undoes the rename: %r" % tables(db))
    db.execute("INSERT INTO m2(id, embedding) VALUES (8, '[1,0,0]')")
    db.execute("COMMIT")
    check(ids(db, "m2") == [2, 3, 6, 8], "savepoint: the rows before it and after its rollback: %r" % ids(db, "m2"))
    # the one writer is kept: the other connection still cannot write
    expect_error(other, "INSERT INTO m2(id, embedding) VALUES (9, '[1,0,0]')", "being written")
    db.close()
    other.close()


def test_companions(d):
    """The companions go with the table; the graph functions by the new name;
    after a reopen; renamed back; a name taken refuses the rename."""
    dbf = os.path.join(d, "g.db")
    db = conn(dbf, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "g.h5")))
    db.execute("INSERT INTO mem(id, text, embedding) VALUES (1, 'Alice met Bob', '[1,0,0]')")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'Alice'), (2, 'Bob')")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')")
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)")
    cached = db.execute("SELECT count(*) FROM mem_entities").fetchall()
    db.execute("ALTER TABLE mem RENAME TO m2")
    check(tables(db) == ["m2", "m2_entities", "m2_mentions", "m2_relations"], "renamed with it: %r" % tables(db))
    got = db.execute("SELECT (SELECT count(*) FROM m2_entities), (SELECT count(*) FROM m2_relations), "
                     "(SELECT count(*) FROM m2_mentions)").fetchone()
    check(got == (2, 1, 1), "the companions by the new names: %r" % (got,))
    db.execute("SELECT kg_entity('m2', 'Carol')")
    got = [r[0] for r in db.execute("SELECT name FROM m2_entities ORDER BY id")]
    check(got == ["Alice", "Bob", "Carol"], "kg_entity('m2') writes through m2_entities: %r" % got)
    got = sorted(r[0] for r in db.execute("SELECT id FROM kg_bfs('m2', 'Alice', 2)"))
    check(got == [1, 2], "kg_bfs('m2'): %r" % got)
    db.close()
    # reopened: bound to m2 (their CREATE statement still says mem)
    db = conn(dbf, isolation_level=None)
    got = db.execute("SELECT (SELECT count(*) FROM m2_entities), (SELECT count(*) FROM m2_relations), "
                     "(SELECT count(*) FROM m2_mentions)").fetchone()
    check(got == (3, 1, 1), "reopened: the companions: %r" % (got,))
    db.execute("INSERT INTO m2_entities(id, name) VALUES (10, 'Dan')")
    # a new table called mem: its own companions; m2's stay m2's
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "g-new.h5")))
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 0, "the new mem's entities")
    check(db.execute("SELECT count(*) FROM m2_entities").fetchone()[0] == 4, "m2's entities stay m2's")
    db.close()
    db = conn(dbf, isolation_level=None)
    check(db.execute("SELECT count(*) FROM m2_entities").fetchone()[0] == 4, "reopened: m2's entities stay m2's")
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 0, "reopened: the new mem's")
    # a companion name taken: the rename is refused, nothing renamed
    db.execute("CREATE TABLE m3_relations(x)")
    expect_error(db, "ALTER TABLE m2 RENAME TO m3", "m3_relations")
    check("m2" in tables(db) and "m2_entities" in tables(db) and "m3" not in tables(db),
          "refused rename changed nothing: %r" % tables(db))
    db.execute("DROP TABLE mem")
    # renamed back
    db.execute("ALTER TABLE m2 RENAME TO mem")
    check([t for t in tables(db) if t.startswith("m")] == ["m3_relations", "mem", "mem_entities", "mem_mentions",
                                                           "mem_relations"], "renamed back: %r" % tables(db))
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 4, "renamed back: entities")
    check(ids(db, "mem") == [1], "renamed back: rows")
    db.close()
    db = conn(dbf, isolation_level=None)
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 4, "renamed back, reopened")
    db.close()
    del cached


def main():
    d = tempfile.mkdtemp(prefix="h5rename_")
    for test in (test_cached_other_connection, test_cached_same_connection, test_in_transaction, test_companions):
        try:
            test(d)
        except sqlite3.Error as e:
            check(False, "%s: %s" % (test.__name__, e))
    finish()


if __name__ == "__main__":
    main()
