"""The store's log and files under damage, links and a full disk (issue 17):

- a damaged log frame with valid-looking frames after it is reported
  (h5mem_index's "log" note) and the log kept aside as agent.h5-wal.corrupt-N
  before a writer cuts it back; a torn tail (a crash mid-append) is not;
- a damaged log header with frames after it likewise;
- a symbolic link planted where the log goes is never followed: the store
  refuses it and its target is unchanged;
- the checkpoint and optimize commands fail the statement on a full disk
  (SQLITE_FULL) and leave no tail in the file; creating a store on a full
  disk is SQLITE_FULL.
"""
import json
import os
import resource
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402

HDR = 64  # the log's header (lib/store/wal.h)


def make_store(d, name, commits):
    """A store whose log holds `commits` frames (one record each), nothing checkpointed."""
    fn = os.path.join(d, name)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("SELECT h5mem_checkpoint('mem')")
    for i in range(commits):
        db.execute("INSERT INTO mem(id, text, embedding) VALUES (?, ?, '[1,2,3,4]')", (i + 1, "memory %d" % i))
    # as a killed process leaves them: the records in the log only (close
    # would checkpoint them)
    wal, h5 = open(fn + "-wal", "rb").read(), open(fn, "rb").read()
    db.close()
    open(fn + "-wal", "wb").write(wal)
    open(fn, "wb").write(h5)
    return fn


def frame_offsets(wal):
    """Offsets of the frames of a log image."""
    offs, at = [], HDR
    while at + 24 <= len(wal):
        n = int.from_bytes(wal[at + 4:at + 8], "little")
        offs.append(at)
        at += 24 + n
    return offs


def open_count(fn, write=False):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    n = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    info = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
    if write:
        db.execute("INSERT INTO mem(text) VALUES ('after')")
        n2 = db.execute("SELECT count(*) FROM mem").fetchone()[0]
        info = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
        db.close()
        return n, info, n2
    db.close()
    return n, info, None


def test_damaged_frame(d):
    fn = make_store(d, "flip.h5", 41)
    wal = bytearray(open(fn + "-wal", "rb").read())
    offs = frame_offsets(wal)
    check(len(offs) == 41, "41 frames in the log (%d)" % len(offs))
    wal[offs[0] + 20] ^= 0x10  # a bit of frame 1's payload
    open(fn + "-wal", "wb").write(wal)
    before = bytes(wal)
    # a reader: the valid prefix (none), and the damage reported
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    n = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    info = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
    check(n == 0, "reader: the valid prefix only (%d)" % n)
    note = info.get("log", {}).get("note", "")
    check("frame 1" in note and "40 later frames" in note and "damaged" in note, "reader's note: %r" % note)
    check(open(fn + "-wal", "rb").read() == before, "a reader leaves the log as it is")
    # a writer: the log kept aside whole, then cut back
    db.execute("INSERT INTO mem(text) VALUES ('after')")
    info = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
    note = info.get("log", {}).get("note", "")
    kept = fn + "-wal.corrupt-1"
    check(os.path.exists(kept) and open(kept, "rb").read() == before, "the damaged log is kept as %s" % kept)
    check("kept in" in note and kept in note, "writer's note names the copy: %r" % note)
    db.close()
    # later opens still say a damaged log lies beside the store
    n, info, _ = open_count(fn)
    check(n == 1, "the store goes on (%d)" % n)
    check("corrupt-1" in info.get("log", {}).get("note", ""), "later note: %r" % info.get("log", {}).get("note", ""))


def test_damaged_header(d):
    fn = make_store(d, "hdr.h5", 5)
    wal = bytearray(open(fn + "-wal", "rb").read())
    wal[33] ^= 1  # base_seq
    open(fn + "-wal", "wb").write(wal)
    before = bytes(wal)
    n, info, n2 = open_count(fn, write=True)
    check(n == 0 and n2 == 1, "header damaged: nothing replayed (%d, %r)" % (n, n2))
    check("header" in info.get("log", {}).get("note", "") and "5 frames" in info.get("log", {}).get("note", ""), "note: %r" % info.get("log", {}).get("note", ""))
    kept = fn + "-wal.corrupt-1"
    check(os.path.exists(kept) and open(kept, "rb").read() == before, "the log with the damaged header is kept")


def test_torn_tail(d):
    fn = make_store(d, "torn.h5", 10)
    wal = open(fn + "-wal", "rb").read()
    offs = frame_offsets(wal)
    open(fn + "-wal", "wb").write(wal[:offs[-1] + 30])  # the last frame cut short
    n, info, n2 = open_count(fn, write=True)
    check(n == 9 and n2 == 10, "torn tail: 9 frames replayed (%d, %r)" % (n, n2))
    check(info.get("log", {}).get("note", "") == "", "a torn tail is no damage: %r" % info.get("log", {}).get("note", ""))
    check(not os.path.exists(fn + "-wal.corrupt-1"), "a torn tail is not kept aside")
    # the last frame's checksum wrong (torn in place): still the tail
    fn = make_store(d, "torn2.h5", 10)
    wal = bytearray(open(fn + "-wal", "rb").read())
    wal[-3] ^= 0xff
    open(fn + "-wal", "wb").write(wal)
    n, info, _ = open_count(fn, write=True)
    check(n == 9 and info.get("log", {}).get("note", "") == "", "last frame bad: the tail (%d, %r)" % (n, info.get("log", {}).get("note", "")))


def test_log_symlink(d):
    victim = os.path.join(d, "victim.txt")
    data = b"precious bytes\n" * 100
    open(victim, "wb").write(data)
    # a store whose log was replaced by a link
    fn = make_store(d, "link.h5", 0)
    os.unlink(fn + "-wal")
    os.symlink(victim, fn + "-wal")
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn), "symbolic link")
    db.close()
    check(open(victim, "rb").read() == data, "the link's target is unchanged (existing store)")
    # a new store where a link waits for its log
    fn = os.path.join(d, "new.h5")
    os.symlink(victim, fn + "-wal")
    db = connect()
    try:
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
        db.execute("INSERT INTO mem(text) VALUES ('x')")
        check(False, "a store whose log is a link must refuse to write")
    except Exception as e:  # noqa: BLE001
        check("symbolic link" in str(e), "new store, linked log: %s" % e)
    db.close()
    check(open(victim, "rb").read() == data, "the link's target is unchanged (new store)")
    # a log that is a directory
    fn = make_store(d, "dir.h5", 0)
    os.unlink(fn + "-wal")
    os.mkdir(fn + "-wal")
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn), "regular file")
    db.close()


FULL = r'''
import resource, sqlite3, sys, os
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
fn, mode = sys.argv[2], sys.argv[3]
if mode == "create":
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, resource.RLIM_INFINITY))
    try:
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=4)" % fn)
        print("OK")
    except sqlite3.Error as e:
        print("ERROR", getattr(e, "sqlite_errorname", "?"), e)
    sys.exit(0)
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % fn)
size = os.path.getsize(fn)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 2000, resource.RLIM_INFINITY))
for sql in ["INSERT INTO mem(mem) VALUES('%s')" % mode, "SELECT h5mem_checkpoint('mem')"]:
    try:
        db.execute(sql)
        print("OK", sql)
    except sqlite3.Error as e:
        print("ERROR", getattr(e, "sqlite_errorname", "?"), e)
    print("SIZE", os.path.getsize(fn), size)
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
db.execute("SELECT h5mem_checkpoint('mem')")
print("COUNT", db.execute("SELECT count(*) FROM mem").fetchone()[0])
db.close()
'''


def test_full_disk(d):
    script = os.path.join(d, "full.py")
    open(script, "w").write(FULL)
    for mode in ("checkpoint", "optimize"):
        fn = os.path.join(d, "full-%s.h5" % mode)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=64)" % q(fn))
        db.execute("SELECT h5mem_checkpoint('mem')")
        db.execute("BEGIN")
        for i in range(200):
            db.execute("INSERT INTO mem(text, embedding) VALUES (?, ?)", ("x" * 300, "[" + ",".join(["0.5"] * 64) + "]"))
        db.execute("COMMIT")
        wal, h5 = open(fn + "-wal", "rb").read(), open(fn, "rb").read()
        db.close()
        open(fn + "-wal", "wb").write(wal)  # the records in the log only
        open(fn, "wb").write(h5)
        p = subprocess.run([sys.executable, script, EXT, fn, mode], capture_output=True, text=True, timeout=120)
        out = p.stdout.splitlines()
        errs = [l for l in out if l.startswith("ERROR")]
        sizes = [l.split() for l in out if l.startswith("SIZE")]
        check(len(errs) == 2 and all("SQLITE_FULL" in e for e in errs),
              "%s on a full disk fails the statement with SQLITE_FULL: %r %s" % (mode, out, p.stderr[-300:]))
        check(sizes and all(int(a) == int(b) for _, a, b in sizes), "%s: no tail left in the file: %r" % (mode, sizes))
        check("COUNT 200" in out, "%s: every record once there is room: %r" % (mode, out))
    fn = os.path.join(d, "full-create.h5")
    p = subprocess.run([sys.executable, script, EXT, fn, "create"], capture_output=True, text=True, timeout=120)
    check("SQLITE_FULL" in p.stdout, "creating a store on a full disk: SQLITE_FULL (%r %s)" % (p.stdout, p.stderr[-300:]))
    check(not os.path.exists(fn), "no store file left after a failed create")


def test_command_in_transaction(d):
    fn = os.path.join(d, "txn.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(text) VALUES ('a')")
    expect_error(db, "INSERT INTO mem(mem) VALUES ('checkpoint')", "COMMIT first")
    db.execute("COMMIT")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 1, "the transaction commits after the refused command")
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(mem) VALUES ('checkpoint')")  # nothing changed yet: runs at once
    check(os.path.getsize(fn + "-wal") <= HDR, "checkpoint at the start of a transaction")
    db.execute("INSERT INTO mem(text) VALUES ('b')")
    db.execute("ROLLBACK")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 1, "rollback after a checkpoint")
    expect_error(db, "INSERT INTO mem(mem) VALUES ('vacuum')", "unknown command")
    db.close()


def main():
    d = tempfile.mkdtemp(prefix="h5mem-logdamage-")
    test_damaged_frame(d)
    test_damaged_header(d)
    test_torn_tail(d)
    test_log_symlink(d)
    test_full_disk(d)
    test_command_in_transaction(d)
    finish()


main()
