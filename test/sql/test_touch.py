"""Changes in place through SQL (issue 19; docs/SQL.md, "Memory lifecycle";
docs/FORMAT.md, "Changes in place"):

- an UPDATE of access_count, last_access, importance or tier alone is a
  change in place: the log grows by a few dozen bytes, not by the record
  (its embedding and text); an UPDATE of other columns still writes the
  record, with the columns it leaves kept as they were;
- the 'touch' command, h5mem_touch(table, id [, now]): access_count + 1
  and last_access; their errors; in a transaction, ROLLBACK and ROLLBACK TO
  take them back;
- another connection sees the changes; after a checkpoint h5py (libhdf5)
  reads the new values from the file, and the file grew by chunks of the
  changed columns, not by records;
- a model: an ordinary SQLite table given the same statements holds the
  same rows at every step.

Run by make check with Debian's /usr/bin/python3.
"""
import os
import random
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish  # noqa: E402

DIM = 64
COLS = "id, text, source, session, tags, ts, tier, importance, access_count, last_access, meta"


def rows(db, table):
    return db.execute("SELECT %s, hex(embedding) FROM %s ORDER BY id" % (COLS, table)).fetchall()


def wal_bytes(path):
    return os.path.getsize(path + "-wal")


def main():
    tmp = tempfile.mkdtemp(prefix="test_touch")
    path = os.path.join(tmp, "mem.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=%d, chunk=64)" % (path, DIM))
    db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text, embedding, source, session, tags, ts, tier, "
               "importance, access_count, last_access, meta)")
    rnd = random.Random(7)
    db.execute("BEGIN")
    for i in range(1, 301):
        emb = struct.pack("%df" % DIM, *[rnd.uniform(-1, 1) for _ in range(DIM)])
        vals = (i, "memory number %d " % i + "x" * 200, emb, "src%d" % (i % 3), "s%d" % (i % 5), None,
                1700000000 + i, "working", None, 0, None, '{"n": %d}' % i)
        for t in ("mem", "ref"):
            db.execute("INSERT INTO %s(id, text, embedding, source, session, tags, ts, tier, importance, "
                       "access_count, last_access, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)" % t, vals)
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    check(rows(db, "mem") == rows(db, "ref"), "the rows as inserted")

    # an UPDATE of the lifecycle columns alone: a few dozen bytes in the log
    w0 = wal_bytes(path)
    db.execute("UPDATE mem SET access_count = access_count + 1, last_access = 1800000000 WHERE id = 5")
    db.execute("UPDATE ref SET access_count = access_count + 1, last_access = 1800000000 WHERE id = 5")
    grew = wal_bytes(path) - w0
    check(0 < grew <= 64 + 24 + 26, "a touch by UPDATE grew the log by %d bytes" % grew)
    w0 = wal_bytes(path)
    db.execute("UPDATE mem SET tier = 'archive', importance = 0.25 WHERE id BETWEEN 10 AND 19")
    db.execute("UPDATE ref SET tier = 'archive', importance = 0.25 WHERE id BETWEEN 10 AND 19")
    grew = wal_bytes(path) - w0
    check(grew < 24 + 10 * 48, "ten tier moves grew the log by %d bytes" % grew)
    # an UPDATE of the text: the record again, its other columns kept
    w0 = wal_bytes(path)
    db.execute("UPDATE mem SET text = 'changed' WHERE id = 5")
    db.execute("UPDATE ref SET text = 'changed' WHERE id = 5")
    check(wal_bytes(path) - w0 > DIM * 4, "a text UPDATE writes the record (and its embedding)")
    check(rows(db, "mem") == rows(db, "ref"), "after UPDATEs in place and of text")

    # the touch command and h5mem_touch
    db.execute("INSERT INTO mem(mem, id, last_access) VALUES('touch', 7, 1800000100)")
    db.execute("UPDATE ref SET access_count = access_count + 1, last_access = 1800000100 WHERE id = 7")
    n = db.execute("SELECT h5mem_touch('mem', 7, 1800000200)").fetchone()[0]
    db.execute("UPDATE ref SET access_count = access_count + 1, last_access = 1800000200 WHERE id = 7")
    check(n == 2, "h5mem_touch returns the new access_count: %r" % n)
    check(rows(db, "mem") == rows(db, "ref"), "after touches")
    import time
    t0 = int(time.time())
    db.execute("SELECT h5mem_touch('mem', 8)")
    la = db.execute("SELECT last_access FROM mem WHERE id = 8").fetchone()[0]
    check(t0 <= la <= int(time.time()), "h5mem_touch without now: the clock (%r)" % la)
    db.execute("UPDATE ref SET access_count = 1, last_access = ? WHERE id = 8", (la,))
    check(db.execute("SELECT h5mem_touch('mem', NULL)").fetchone()[0] is None, "a NULL id: NULL")
    expect_error(db, "SELECT h5mem_touch('mem', 9999)", "no memory with id 9999")
    expect_error(db, "SELECT h5mem_touch('mem', 'x')", "id: expected an integer")
    expect_error(db, "SELECT h5mem_touch('nope', 1)", "no h5mem table 'nope'")
    expect_error(db, "INSERT INTO mem(mem) VALUES('touch')", "the id of the memory is missing")
    expect_error(db, "INSERT INTO mem(mem, id) VALUES('touch', 9999)", "no memory with id 9999")
    expect_error(db, "INSERT INTO mem(mem, id, last_access) VALUES('touch', 1, 'soon')", "last_access")
    expect_error(db, "INSERT INTO mem(mem) VALUES('tuch')", "known: 'checkpoint', 'optimize', 'touch'")
    expect_error(db, "UPDATE mem SET importance = 'high' WHERE id = 1", "importance")
    expect_error(db, "UPDATE mem SET access_count = 1.5 WHERE id = 1", "access_count")
    expect_error(db, "UPDATE mem SET tier = x'61ff' WHERE id = 1", "tier")
    check(rows(db, "mem") == rows(db, "ref"), "nothing changed by the refused ones")

    # transactions: ROLLBACK and ROLLBACK TO take the changes back
    db.execute("BEGIN")
    db.execute("SELECT h5mem_touch('mem', 20, 1)")
    db.execute("UPDATE mem SET tier = 'semantic' WHERE id = 21")
    db.execute("SAVEPOINT a")
    db.execute("UPDATE mem SET tier = 'episodic', access_count = 50 WHERE id = 21")
    db.execute("ROLLBACK TO a")
    check(db.execute("SELECT tier, access_count FROM mem WHERE id = 21").fetchone() == ("semantic", 0),
          "ROLLBACK TO keeps the change before the savepoint")
    db.execute("ROLLBACK")
    check(rows(db, "mem") == rows(db, "ref"), "ROLLBACK takes the changes back")
    db.execute("BEGIN")
    db.execute("SELECT h5mem_touch('mem', 20, 1)")
    db.execute("UPDATE ref SET access_count = access_count + 1, last_access = 1 WHERE id = 20")
    db.execute("UPDATE mem SET tier = 'semantic' WHERE id = 21")
    db.execute("UPDATE ref SET tier = 'semantic' WHERE id = 21")
    db.execute("COMMIT")

    # random statements on both tables, compared at the end of each
    for step in range(200):
        i = rnd.randint(1, 300)
        c = rnd.randrange(6)
        if c == 0:
            stmt, args = "UPDATE %s SET access_count = access_count + 1, last_access = ? WHERE id = ?", (rnd.randint(0, 2 ** 40), i)
        elif c == 1:
            stmt, args = "UPDATE %s SET tier = ? WHERE id %% 7 = ?", (rnd.choice(["working", "episodic", None, "日本語"]), i % 7)
        elif c == 2:
            stmt, args = "UPDATE %s SET importance = ? WHERE id = ?", (rnd.choice([None, 0.5, -3.25, 7]), i)
        elif c == 3:
            stmt, args = "UPDATE %s SET tags = ?, access_count = 3 WHERE id = ?", ("t%d" % step, i)
        elif c == 4:
            stmt, args = "DELETE FROM %s WHERE id = ?", (i,)
        else:
            stmt, args = "UPDATE %s SET id = ? WHERE id = ?", (1000 + step, i)
        for t in ("mem", "ref"):
            db.execute(stmt % t, args)
        if step % 50 == 49:
            db.execute("SELECT h5mem_checkpoint('mem')")
        if step % 20 == 0:
            check(rows(db, "mem") == rows(db, "ref"), "random step %d" % step)
    check(rows(db, "mem") == rows(db, "ref"), "after the random statements")

    # another connection sees the changes (from the log)
    db.execute("UPDATE mem SET access_count = 77, tier = 'semantic' WHERE id = 30")
    db.execute("UPDATE ref SET access_count = 77, tier = 'semantic' WHERE id = 30")
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % path)
    check(db2.execute("SELECT %s FROM mem ORDER BY id" % COLS).fetchall() ==
          db.execute("SELECT %s FROM ref ORDER BY id" % COLS).fetchall(), "a second connection")
    check(db2.execute("SELECT count(*) FROM mem WHERE tier = 'semantic'").fetchone() ==
          db.execute("SELECT count(*) FROM ref WHERE tier = 'semantic'").fetchone(), "a tier filter")
    db2.close()

    # a checkpoint: h5py reads the values; the file grew by chunks, not records
    db.execute("SELECT h5mem_checkpoint('mem')")
    size0 = os.path.getsize(path)
    db.execute("BEGIN")
    for i in range(100, 164):  # (a chunk's worth of ids, wherever their rows are)
        db.execute("UPDATE mem SET access_count = access_count + 5 WHERE id = ?", (i,))
        db.execute("UPDATE ref SET access_count = access_count + 5 WHERE id = ?", (i,))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    grew = os.path.getsize(path) - size0
    check(grew < 64 * 1024, "64 touches grew the file by %d bytes (records: %d)" % (grew, 64 * (DIM * 4 + 200)))
    want = {r[0]: r for r in db.execute("SELECT id, access_count, last_access, importance, tier FROM ref")}
    db.close()
    import h5py
    import math
    with h5py.File(path, "r") as f:
        m = f["memories"]
        dead = set(int(x) for x in m["deleted"][:])
        got = {}
        ids, ac, la, imp, tier = m["id"][:], m["access_count"][:], m["last_access"][:], m["importance"][:], m["tier"][:]
        for r in range(len(ids)):
            if r in dead:
                continue
            t = tier[r].decode() if tier[r] != b"" else None
            got[int(ids[r])] = (int(ids[r]), int(ac[r]), None if la[r] == -2 ** 63 else int(la[r]),
                                None if math.isnan(imp[r]) else float(imp[r]), t)
    # (h5py reads a NULL string as b'': compare those as NULL on both sides)
    want = {k: v[:4] + (v[4] if v[4] != "" else None,) for k, v in want.items()}
    check(got == want, "h5py reads the values after the checkpoint (%d rows differ)" %
          sum(1 for k in set(got) | set(want) if got.get(k) != want.get(k)))
    finish()


if __name__ == "__main__":
    main()
