"""One error space, one SQLite mapping (issue 18): whichever statement meets
an error of the store, the client gets the same SQLite code, since it acts
on it (it retries on SQLITE_BUSY, stops on SQLITE_CORRUPT):

- BUSY: another connection holds the store's writer lock; writing through
  the table, its companion tables, h5mem_checkpoint, the checkpoint command,
  kg_entity and h5mem_migrate is SQLITE_BUSY naming the store, while
  vec_search, bm25 and hybrid (readers) still answer;
- FULL: a file size limit (RLIMIT_FSIZE) reached by a COMMIT, by kg_entity,
  by h5mem_migrate creating a store or checkpointing one, by rows appended
  to an HDF5 file through the h5 table is SQLITE_FULL;
- CORRUPT: a damaged .h5 file (cut short, or its signature overwritten),
  also met by a connection that has not used the table yet,
  met by CREATE VIRTUAL TABLE, by a reader's next query of the table, of
  vec_search, bm25, hybrid, the companion tables, kg_entity, h5mem_index,
  by h5mem_migrate's destination, and by h5_ls, h5_read_json and the h5
  table, is SQLITE_CORRUPT with a message naming the function and what is
  wrong; so is a checkpoint (h5mem_checkpoint, the checkpoint command)
  that finds the file damaged under its writer;
- the log made by the first writer where there is no room for its header
  is SQLITE_FULL; a store path that is a directory, and a checkpoint whose
  lock for the readers' gate fails (not another holding it), are
  SQLITE_ERROR (the operating system refused), never SQLITE_BUSY or
  SQLITE_CORRUPT.

SQLITE_TOOBIG from the text index (BM25_ETOOBIG: more than 2^32 rows, or
more than 4 GiB of distinct terms or postings in one image) is not tested
here: reaching it takes that much data.  The mapping itself is
ext_err_rc's (UTIL_ETOOBIG), checked where the code is made.

Run by make check with Debian's /usr/bin/python3 (3.11: the exception's
sqlite_errorname).
"""
import fcntl
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, finish, q  # noqa: E402

VEC = "[1, 0, 0, 0]"


def outcome(db, sql, args=()):
    """'OK' or (error name, message) of running sql."""
    try:
        db.execute(sql, args).fetchall()
        return "OK"
    except sqlite3.Error as e:
        return (getattr(e, "sqlite_errorname", "?"), str(e))


def expect_code(db, sql, name, words, args=()):
    """sql fails with SQLite's error name (SQLITE_BUSY ...) and a message
    holding every one of words."""
    got = outcome(db, sql, args)
    if got == "OK":
        check(False, "%s must fail with %s" % (sql, name))
        return
    check(got[0] == name, "%s: %s, not %s (%s)" % (sql, name, got[0], got[1]))
    for w in words:
        check(w in got[1], "%s: the message %r lacks %r" % (sql, got[1], w))


def make_store(fn, n=20):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("BEGIN")
    for i in range(n):
        db.execute("INSERT INTO mem(text, embedding) VALUES (?, ?)",
                   ("hello world %d" % i, "[1, 2, 3, %d]" % i))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()


def source_db(d, n=50):
    """An SQLite memory store for h5mem_migrate: a table of notes."""
    p = os.path.join(d, "notes-%d.sqlite" % n)
    if not os.path.exists(p):
        s = sqlite3.connect(p)
        s.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, vec TEXT)")
        s.executemany("INSERT INTO notes VALUES (?, ?, ?)",
                      [(1000 + i, "note %d %s" % (i, "x" * 200), "[0.5, 0.25, 1, %d]" % i) for i in range(n)])
        s.commit()
        s.close()
    return p


MIGRATE = "SELECT h5mem_migrate(?, ?, ?)"
NOTES = '{"table": "notes", "columns": {"id": "id", "text": "body", "embedding": "vec"}%s}'


def test_busy(d):
    fn = os.path.join(d, "busy.h5")
    make_store(fn)
    a = connect()
    a.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    a.execute("BEGIN")
    a.execute("INSERT INTO mem(text) VALUES ('held')")  # a holds the writer lock
    b = connect()
    b.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    held = ["being written", fn]
    expect_code(b, "INSERT INTO mem(text) VALUES ('x')", "SQLITE_BUSY", held)
    expect_code(b, "SELECT h5mem_checkpoint('mem')", "SQLITE_BUSY", ["h5mem_checkpoint"] + held)
    expect_code(b, "INSERT INTO mem(mem) VALUES ('checkpoint')", "SQLITE_BUSY", held)
    expect_code(b, "INSERT INTO mem_entities(name) VALUES ('alice')", "SQLITE_BUSY", held)
    expect_code(b, "SELECT kg_entity('mem', 'bob')", "SQLITE_BUSY", ["kg_entity"] + held)
    expect_code(b, MIGRATE, "SQLITE_BUSY", ["h5mem_migrate"] + held,
                (source_db(d), fn, NOTES % ', "append": true'))
    # readers are never busy
    for sql in ("SELECT count(*) FROM mem", "SELECT count(*) FROM vec_search('mem', '%s', 3)" % VEC,
                "SELECT count(*) FROM bm25('mem', 'hello', 3)",
                "SELECT count(*) FROM hybrid('mem', 'hello', '%s', 3)" % VEC):
        check(outcome(b, sql) == "OK", "%s while another writes: %r" % (sql, outcome(b, sql)))
    a.execute("COMMIT")
    a.close()
    check(outcome(b, "INSERT INTO mem(text) VALUES ('x')") == "OK", "the writer gone, b writes")
    b.close()


# Run in a child: RLIMIT_FSIZE applies to the whole process.
FULL = r'''
import resource, sqlite3, sys, os
ext, d, fn, src = sys.argv[1:5]
def run(db, sql, args=()):
    try:
        db.execute(sql, args).fetchall()
        print("OK", sql)
    except sqlite3.Error as e:
        print("ERROR", getattr(e, "sqlite_errorname", "?"), sql.split("(")[0], "|", e)
def limit(n):
    resource.setrlimit(resource.RLIMIT_FSIZE, (n, resource.RLIM_INFINITY))
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % fn.replace("'", "''"))
db.execute("INSERT INTO mem(text) VALUES ('first')")  # the log exists, this connection writes
limit(os.path.getsize(fn + "-wal") + 1000)
run(db, "INSERT INTO mem(text) VALUES (?)", ("x" * 100000,))
run(db, "SELECT kg_entity('mem', ?)", ("y" * 100000,))
limit(resource.RLIM_INFINITY)
db.close()
# a new store on a full disk
new = os.path.join(d, "full-new.h5")
limit(1000)
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
run(db, "SELECT h5mem_migrate(?, ?, ?)", (src, new, '{"table": "notes", "columns": {"id": "id", "text": "body", "embedding": "vec"}}'))
# an existing store whose checkpoint finds no room (the log, far smaller, has it)
limit(os.path.getsize(fn) + 64)
run(db, "SELECT h5mem_migrate(?, ?, ?)", (src, fn, '{"table": "notes", "columns": {"id": "id", "text": "body", "embedding": "vec"}, "append": true}'))
limit(resource.RLIM_INFINITY)
# the h5 table: rows appended to an HDF5 file at COMMIT
h5f = os.path.join(d, "full-table.h5")
db.execute("CREATE VIRTUAL TABLE t USING h5(file='%s', dataset='/d', schema='a int64, s text')" % h5f)
limit(os.path.getsize(h5f) + 1000)
run(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) "
        "INSERT INTO t(a, s) SELECT x, hex(randomblob(200)) FROM c")
limit(resource.RLIM_INFINITY)
print("DONE")
'''


def test_full(d):
    script = os.path.join(d, "full.py")
    open(script, "w").write(FULL)
    fn = os.path.join(d, "full.h5")
    make_store(fn, 200)
    p = subprocess.run([sys.executable, script, EXT, d, fn, source_db(d, 300)],
                       capture_output=True, text=True, timeout=300)
    out = p.stdout.splitlines()
    check("DONE" in out, "the full-disk child ran to the end: %r %s" % (out, p.stderr[-500:]))
    errs = [l for l in out if l.startswith("ERROR")]
    for what in ("INSERT INTO mem", "SELECT kg_entity", "SELECT h5mem_migrate", "WITH RECURSIVE"):
        mine = [l for l in errs if what in l]
        check(mine, "%s on a full disk must fail: %r" % (what, out))
    for l in errs:
        check(l.split()[1] == "SQLITE_FULL", "a full disk is SQLITE_FULL: %s" % l)
        check("size limit" in l or "no space" in l or "disk full" in l, "the message says the disk is full: %s" % l)
    check(len([l for l in errs if "h5mem_migrate" in l]) == 2, "both migrations fail: %r" % out)
    check(not os.path.exists(os.path.join(d, "full-new.h5")), "no store left after a failed create")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem WHERE text = 'first'").fetchone()[0] == 1,
          "what was committed before the disk filled is there")
    db.close()


def damaged(data, kind):
    b = bytearray(data)
    if kind == "cut":
        return bytes(b[: len(b) // 2])
    b[0:8] = b"XXXXXXXX"  # no superblock signature
    return bytes(b)


def replace(fn, data):
    """fn's content becomes data: a new file renamed over it, so a reader's
    mapping of the old one stays valid."""
    open(fn + ".tmp", "wb").write(data)
    os.rename(fn + ".tmp", fn)


WHY = {"cut": "truncated file", "sig": "not an HDF5 file"}


def test_corrupt(d):
    fn = os.path.join(d, "bad.h5")
    make_store(fn)
    good = open(fn, "rb").read()
    for kind in ("cut", "sig"):
        why = WHY[kind]
        # opened by the table
        replace(fn, damaged(good, kind))
        db = connect()
        expect_code(db, "CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn), "SQLITE_CORRUPT", ["h5mem", why])
        db.close()
        # met by a reader's next query: the store was loaded, then the file was damaged
        replace(fn, good)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 20, "the store reads")
        replace(fn, damaged(good, kind))
        for who, sql in (("h5mem", "SELECT count(*) FROM mem"),
                         ("vec_search", "SELECT count(*) FROM vec_search('mem', '%s', 3)" % VEC),
                         ("bm25", "SELECT count(*) FROM bm25('mem', 'hello', 3)"),
                         ("hybrid", "SELECT count(*) FROM hybrid('mem', 'hello', '%s', 3)" % VEC),
                         ("mem_entities", "SELECT count(*) FROM mem_entities"),
                         ("kg_entity", "SELECT kg_entity('mem', 'alice')"),
                         ("h5mem_index", "SELECT h5mem_index('mem')")):
            expect_code(db, sql, "SQLITE_CORRUPT", [who, why])
        db.close()
        # met by a connection that has not used the table yet (a database
        # file declares it; the function connects it): the connect's code
        replace(fn, good)
        dbf = os.path.join(d, "decl_%s.db" % kind)
        db = connect(dbf)
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        db.close()
        replace(fn, damaged(good, kind))
        for who, sql in (("vec_search", "SELECT count(*) FROM vec_search('mem', '%s', 3)" % VEC),
                         ("bm25", "SELECT count(*) FROM bm25('mem', 'hello', 3)"),
                         ("hybrid", "SELECT count(*) FROM hybrid('mem', 'hello', '%s', 3)" % VEC),
                         ("kg_entity", "SELECT kg_entity('mem', 'alice')"),
                         ("kg_bfs", "SELECT count(*) FROM kg_bfs('mem', 1, 2)")):
            db = connect(dbf)
            expect_code(db, sql, "SQLITE_CORRUPT", [who, why])
            db.close()
        # the destination of a migration
        expect_code(connect(), MIGRATE, "SQLITE_CORRUPT", ["h5mem_migrate", fn, why],
                    (source_db(d), fn, NOTES % ', "append": true'))
        check(open(fn, "rb").read() == damaged(good, kind), "a damaged destination is left alone")
    replace(fn, good)


def test_corrupt_h5(d):
    """The HDF5 file functions and the h5 table: a damaged file is SQLITE_CORRUPT too."""
    import h5py
    import numpy as np
    fn = os.path.join(d, "plain.h5")
    with h5py.File(fn, "w") as f:
        f["d"] = np.arange(100, dtype="<i8")
    good = open(fn, "rb").read()
    for kind in ("cut", "sig"):
        replace(fn, damaged(good, kind))
        db = connect()
        expect_code(db, "SELECT * FROM h5_ls(%s)" % q(fn), "SQLITE_CORRUPT", ["h5_ls", fn])
        expect_code(db, "SELECT h5_read_json(%s, '/d')" % q(fn), "SQLITE_CORRUPT", ["h5_read_json", fn])
        expect_code(db, "CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/d')" % q(fn), "SQLITE_CORRUPT", ["h5:", fn])
        db.close()
    replace(fn, good)
    db = connect()
    check(db.execute("SELECT count(*) FROM h5_ls(%s)" % q(fn)).fetchone()[0] >= 1, "the file reads again")
    db.close()


def damage_in_place(fn, offsets, width=4):
    """Overwrite width bytes at each offset of fn where it is, keeping its
    modification time: a reader's handle sees no change to reload, so the
    damage is met by the next read of those bytes (a column's value)."""
    st = os.stat(fn)
    with open(fn, "r+b") as w:
        for off in offsets:
            w.seek(off)
            w.write(b"X" * width)
    os.utime(fn, ns=(st.st_atime_ns, st.st_mtime_ns))


def heap_collections(fn):
    """Where fn's global heap collections (variable-length strings) start."""
    data = open(fn, "rb").read()
    at, found = data.find(b"GCOL"), []
    while at >= 0:
        found.append(at)
        at = data.find(b"GCOL", at + 1)
    return found


def test_corrupt_column(d):
    """A column read that meets damaged bytes (a string's heap, after the
    table was opened) is SQLITE_CORRUPT, not SQLITE_ERROR: the table,
    vec_search and bm25.  (lib/h5 indexes a heap collection once per
    handle: in a store with entities, whose names share the heap and are
    read as it loads, the damage would go unseen; so this one has none.)"""
    fn = os.path.join(d, "column.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("BEGIN")
    for i in range(20):
        db.execute("INSERT INTO mem(text, embedding) VALUES (?, ?)", ("hello world %d" % i, "[1, 2, 3, %d]" % i))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    heaps = heap_collections(fn)
    check(heaps, "the store keeps its strings in a global heap")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 20, "the store reads")
    damage_in_place(fn, heaps)
    check(outcome(db, "SELECT id FROM mem") == "OK", "a column outside the damage still reads")
    for who, sql in (("h5mem", "SELECT text FROM mem"),
                     ("h5mem", "SELECT text FROM mem WHERE id = 3"),
                     ("vec_search", "SELECT text FROM vec_search('mem', '%s', 3)" % VEC),
                     ("bm25", "SELECT text FROM bm25('mem', 'hello', 3)")):
        expect_code(db, sql, "SQLITE_CORRUPT", [who, "heap"])
    db.close()


def test_corrupt_graph_texts(d):
    """kg_export_jsonl and kg_import_jsonl read the texts of the memories
    that mention an entity: a text that cannot be read is SQLITE_CORRUPT,
    never an export without it (an entity with no observations) or an
    import that adds a known observation again.  The memory is
    checkpointed before the entity, so its text lies in a heap collection
    of its own, damaged after the table was opened."""
    fn = os.path.join(d, "graph-texts.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("INSERT INTO mem(id, text, embedding) VALUES (1, ?, '[1, 2, 3, 4]')",
               ("observation " + "z" * 200000,))
    db.execute("SELECT h5mem_checkpoint('mem')")
    check(db.execute("SELECT kg_entity('mem', 'alice', 'person')").fetchone()[0] == 1, "an entity")
    db.execute("INSERT INTO mem_mentions(memory_id, entity_id) VALUES (1, 1)")
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    data = open(fn, "rb").read()
    text = data.find(b"zzzzzzzz")
    own = max(h for h in heap_collections(fn) if h < text)
    check(data.find(b"alice") > text, "the entity's name lies in a later collection")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 1, "the store reads")
    damage_in_place(fn, [own])
    expect_code(db, "SELECT kg_export_jsonl('mem')", "SQLITE_CORRUPT", ["kg_export_jsonl", "heap"])
    line = '{"type":"entity","name":"bob","entityType":"person","observations":["new"]}'
    expect_code(db, "SELECT kg_import_jsonl('mem', ?)", "SQLITE_CORRUPT", ["kg_import_jsonl", "heap"],
                (line,))
    check(db.execute("SELECT count(*) FROM mem_entities").fetchone()[0] == 1, "a failed import adds nothing")
    db.close()


def test_corrupt_h5_object(d):
    """h5_ls, h5_attrs, h5_read_json and the h5 table on a file whose
    other parts read: a damaged object header, a damaged chunk, a damaged
    string heap are SQLITE_CORRUPT, met listing, reading or in a column."""
    import h5py
    import numpy as np
    fn = os.path.join(d, "objects.h5")
    with h5py.File(fn, "w") as f:
        f.create_group("g").create_dataset("d", data=np.arange(10, dtype="<i8"))
        f["g/d"].attrs["unit"] = "m"
        f.create_dataset("z", data=np.arange(1000, dtype="<i8"), chunks=(100,), compression="gzip")
        header = h5py.h5o.get_info(f["g/d"].id).addr
        chunk = f["z"].id.get_chunk_info(0)
    data = bytearray(open(fn, "rb").read())
    data[header:header + 16] = b"\xee" * 16  # /g/d's object header
    data[chunk.byte_offset:chunk.byte_offset + chunk.size] = bytes(chunk.size)  # /z's first chunk
    replace(fn, bytes(data))
    db = connect()
    for who, sql in (("h5_ls", "SELECT path FROM h5_ls(%s)" % q(fn)),
                     ("h5_attrs", "SELECT * FROM h5_attrs(%s)" % q(fn)),
                     ("h5_attrs", "SELECT * FROM h5_attrs(%s, '/g/d')" % q(fn)),
                     ("h5_read_json", "SELECT h5_read_json(%s, '/g/d')" % q(fn)),
                     ("h5_read_json", "SELECT h5_read_json(%s, '/z')" % q(fn))):
        expect_code(db, sql, "SQLITE_CORRUPT", [who, "/g/d" if "/z" not in sql else "chunk"])
    db.execute("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/z')" % q(fn))
    check(db.execute("SELECT count(*) FROM t").fetchone()[0] == 1000, "the h5 table counts without reading")
    expect_code(db, "SELECT * FROM t", "SQLITE_CORRUPT", ["h5:", "chunk"])
    db.close()
    # a string attribute and a string dataset whose heap is damaged: met in a column
    fn = os.path.join(d, "strings.h5")
    with h5py.File(fn, "w") as f:
        f.create_dataset("d", data=np.arange(10, dtype="<i8")).attrs["unit"] = "metres"
        f.create_dataset("s", data=["alpha", "beta"], dtype=h5py.string_dtype())
    damage_in_place(fn, heap_collections(fn))
    db = connect()
    check(outcome(db, "SELECT name FROM h5_attrs(%s)" % q(fn)) == "OK", "the attributes' names read")
    expect_code(db, "SELECT value FROM h5_attrs(%s)" % q(fn), "SQLITE_CORRUPT", ["h5_attrs", "heap"])
    db.execute("CREATE VIRTUAL TABLE s USING h5(file=%s, dataset='/s')" % q(fn))
    expect_code(db, "SELECT * FROM s", "SQLITE_CORRUPT", ["h5:", "heap"])
    db.close()


def test_migrate_files(d):
    """h5mem_migrate's own files: a source that is missing or cannot be read
    as a database file, a destination that cannot be created, a progress
    file that cannot be opened are SQLITE_ERROR (the operating system
    refused: lib/'s EIO), never SQLITE_CANTOPEN or SQLITE_IOERR; a full disk
    is SQLITE_FULL (test_full)."""
    src = source_db(d)
    nowhere = os.path.join(d, "no-such-dir")
    a_file = os.path.join(d, "a-file")
    open(a_file, "w").write("x")
    for what, args in (("the source", (os.path.join(nowhere, "notes.sqlite"), os.path.join(d, "m1.h5"), NOTES % "")),
                       ("the source", (d, os.path.join(d, "m2.h5"), NOTES % "")),  # a directory
                       ("cannot create", (src, os.path.join(nowhere, "m3.h5"), NOTES % "")),
                       ("cannot create", (src, os.path.join(a_file, "m4.h5"), NOTES % "")),
                       ("progress", (src, os.path.join(d, "m5.h5"),
                                     NOTES % (', "progress": %s' % json.dumps(os.path.join(nowhere, "p.log")))))):
        expect_code(connect(), MIGRATE, "SQLITE_ERROR", ["h5mem_migrate", what], args)
    check(not os.path.exists(os.path.join(d, "m1.h5")) and not os.path.exists(os.path.join(d, "m2.h5")),
          "no store made for a source that cannot be read")


def test_checkpoint_damaged(d):
    """A writer's checkpoint that finds the .h5 file damaged (another file
    renamed over it): SQLITE_CORRUPT, the log keeping every commit."""
    fn = os.path.join(d, "ckpt-bad.h5")
    make_store(fn)
    good = open(fn, "rb").read()
    for kind in ("cut", "sig"):
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        db.execute("INSERT INTO mem(text) VALUES ('in the log')")  # this connection is the writer
        replace(fn, damaged(good, kind))
        expect_code(db, "SELECT h5mem_checkpoint('mem')", "SQLITE_CORRUPT",
                    ["h5mem_checkpoint", fn, WHY[kind]])
        expect_code(db, "INSERT INTO mem(mem) VALUES ('checkpoint')", "SQLITE_CORRUPT", [fn, WHY[kind]])
        replace(fn, good)
        check(outcome(db, "SELECT h5mem_checkpoint('mem')") == "OK",
              "the good file back, the checkpoint runs")
        db.close()
        good = open(fn, "rb").read()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem WHERE text = 'in the log'").fetchone()[0] == 2,
          "both commits made before the failed checkpoints are there")
    db.close()


def test_path_is_directory(d):
    """A store path that is a directory: SQLITE_ERROR (not SQLITE_CORRUPT)."""
    fn = os.path.join(d, "dir.h5")
    os.mkdir(fn)
    db = connect()
    for sql in ("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn),
                "CREATE VIRTUAL TABLE mem2 USING h5mem(path=%s, dim=4)" % q(fn)):
        expect_code(db, sql, "SQLITE_ERROR", [fn, "not a regular file"])
    db.close()
    os.rmdir(fn)


# Run in a child: RLIMIT_FSIZE applies to the whole process.
LOG_FULL = r"""
import resource, sqlite3, sys
ext, fn = sys.argv[1:3]
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % fn.replace("'", "''"))
resource.setrlimit(resource.RLIMIT_FSIZE, (32, resource.RLIM_INFINITY))  # below a log header
try:
    db.execute("INSERT INTO mem(text) VALUES ('x')")
    print("OK")
except sqlite3.Error as e:
    print("ERROR", getattr(e, "sqlite_errorname", "?"), "|", e)
"""


def test_log_no_room(d):
    """The first writer makes the log: no room for its header is SQLITE_FULL."""
    fn = os.path.join(d, "log-full.h5")
    make_store(fn)
    os.unlink(fn + "-wal")
    script = os.path.join(d, "log_full.py")
    open(script, "w").write(LOG_FULL)
    p = subprocess.run([sys.executable, script, EXT, fn], capture_output=True, text=True, timeout=120)
    out = p.stdout.strip()
    check(out.startswith("ERROR SQLITE_FULL"), "a log with no room: %r %s" % (out, p.stderr[-500:]))
    check(fn + "-wal" in out and "no space" in out, "the message names the log and says no space: %r" % out)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(outcome(db, "INSERT INTO mem(text) VALUES ('room again')") == "OK", "with room the store writes")
    db.close()


def wal_fds_readonly(wal):
    """Every descriptor of this process open for reading and writing on wal
    (the writer's lock and its log) replaced by one open for reading only:
    the gate's write lock on it then fails (EBADF).  How many."""
    want = os.path.realpath(wal)
    ro = os.open(wal, os.O_RDONLY)
    n = 0
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd == ro:
            continue
        try:
            if os.readlink("/proc/self/fd/%d" % fd) != want:
                continue
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDWR:
                continue
        except OSError:
            continue
        os.dup2(ro, fd)
        n += 1
    os.close(ro)
    return n


def test_gate_io_error(d):
    """A checkpoint whose lock for the readers' gate fails (the lock call
    itself, not another holder): SQLITE_ERROR naming the log, not
    SQLITE_BUSY; the commits stay in the log."""
    if os.environ.get("H5MEM_NO_GATE", "0") not in ("", "0") or not os.path.isdir("/proc/self/fd"):
        return
    fn = os.path.join(d, "gate.h5")
    make_store(fn)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    db.execute("INSERT INTO mem(text) VALUES ('kept')")  # this connection is the writer
    check(wal_fds_readonly(fn + "-wal") >= 1, "the writer's descriptors on the log found")
    expect_code(db, "SELECT h5mem_checkpoint('mem')", "SQLITE_ERROR",
                ["h5mem_checkpoint", "cannot lock", fn + "-wal"])
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem WHERE text = 'kept'").fetchone()[0] == 1, "the commit is kept")
    check(outcome(db, "SELECT h5mem_checkpoint('mem')") == "OK", "a writer with a lockable log checkpoints")
    db.close()


def main():
    d = tempfile.mkdtemp(prefix="h5mem-errors-")
    test_busy(d)
    test_full(d)
    test_corrupt(d)
    test_corrupt_h5(d)
    test_corrupt_column(d)
    test_corrupt_graph_texts(d)
    test_corrupt_h5_object(d)
    test_migrate_files(d)
    test_checkpoint_damaged(d)
    test_path_is_directory(d)
    test_log_no_room(d)
    test_gate_io_error(d)
    finish()


if __name__ == "__main__":
    main()
