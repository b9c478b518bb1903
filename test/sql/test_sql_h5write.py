"""The h5 virtual table, writing: SQL rows into HDF5 files h5py reads.

- export round trip: INSERT ... SELECT from an ordinary table into a new
  file (every schema type), read back by h5py with the right dtypes and
  values, and by the table itself;
- transactions: ROLLBACK and ROLLBACK TO drop exactly their rows; several
  transactions and connections append in turn; a transaction over the
  in-memory limit writes early and still commits or rolls back whole;
- appending to a file h5py wrote (chunked, maxshape None), keeping every
  other object and attribute of the file as it was;
- errors: NULL in an integer column, out-of-range values, wrong vector
  lengths, malformed JSON, UPDATE, DELETE, a dataset that cannot grow,
  a schema that does not match the existing dataset, another writer
  holding the file (SQLITE_BUSY) - each a clear error that loses nothing;
- crashes: a process committing rows with sync=full is killed with SIGKILL
  at random moments; every commit it reported is in the file, h5py opens it,
  and appending goes on.

Run by make check with Debian's /usr/bin/python3 (h5py, numpy).
"""
import fcntl
import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402


def test_export(d):
    fn = os.path.join(d, "export.h5")
    db = connect()
    db.execute("CREATE TABLE src(a INTEGER, b REAL, c TEXT, e BLOB, f INTEGER, g REAL, h INTEGER)")
    rng = random.Random(5)
    rows = []
    for k in range(5000):
        emb = [rng.uniform(-1, 1) for _ in range(8)]
        rows.append((k * 1000003 - 2**40, rng.uniform(-1e6, 1e6), "row %d ünï" % k if k % 7 else None,
                     np.array(emb, dtype="<f4").tobytes(), k % 2, rng.uniform(-100, 100), k % 250))
    db.executemany("INSERT INTO src VALUES (?,?,?,?,?,?,?)", rows)
    db.execute("CREATE VIRTUAL TABLE out USING h5(file=%s, dataset='/g/results', "
               "schema='a int64, b float64, c text, e float32[8], f bool, g float16, h uint8', "
               "chunk=1000, compression='deflate:6', shuffle=1)" % q(fn))
    check(os.path.exists(fn), "the file exists after CREATE")
    with h5py.File(fn, "r") as f:
        check(f["g/results"].shape == (0,), "an empty dataset after CREATE")
    db.execute("INSERT INTO out(a, b, c, e, f, g, h) SELECT * FROM src")
    with h5py.File(fn, "r") as f:
        ds = f["g/results"]
        check(ds.shape == (5000,) and ds.maxshape == (None,) and ds.chunks == (1000,), "shape %r %r %r" % (ds.shape, ds.maxshape, ds.chunks))
        check(ds.compression == "gzip" and ds.compression_opts == 6 and ds.shuffle, "filters")
        names = ds.dtype.names
        check(names == ("a", "b", "c", "e", "f", "g", "h"), "field names %r" % (names,))
        dt = ds.dtype
        check(dt["a"] == np.dtype("<i8") and dt["b"] == np.dtype("<f8") and dt["e"] == np.dtype(("<f4", (8,)))
              and dt["f"] == np.dtype("bool") and dt["g"] == np.dtype("<f2") and dt["h"] == np.dtype("u1")
              and h5py.check_string_dtype(dt["c"]) is not None, "dtypes %r" % (dt,))
        arr = ds[:]
    ok = True
    for k, r in enumerate(rows):
        x = arr[k]
        c = x["c"].decode() if isinstance(x["c"], bytes) else x["c"]
        good = (int(x["a"]) == r[0] and float(x["b"]) == r[1] and (c == (r[2] or "")) and
                x["e"].tobytes() == r[3] and bool(x["f"]) == bool(r[4]) and
                float(x["g"]) == float(np.float16(r[5])) and int(x["h"]) == r[6])
        if not good:
            ok = False
            print("row", k, x, r)
            break
    check(ok, "h5py reads the exported values")
    # the table reads its own rows back
    back = db.execute("SELECT a, b, c, e, f, h FROM out ORDER BY i").fetchall()
    check([(r[0], r[1], r[2], r[3], r[4], r[6]) for r in rows] == back, "the table reads the rows back")
    # pandas-style access: one field
    with h5py.File(fn, "r") as f:
        check(np.array_equal(f["g/results"]["h"], np.array([r[6] for r in rows], dtype="u1")), "field read")
    # a plain dataset from a one-field schema; 2-D from an array
    fv = os.path.join(d, "plain.h5")
    db.execute("CREATE VIRTUAL TABLE pv USING h5(file=%s, dataset='/v', schema='value float32[3]')" % q(fv))
    db.execute("INSERT INTO pv(value) VALUES ('[1, 2, 3]'), (vec_f32('[4,5,6]'))")
    db.execute("CREATE VIRTUAL TABLE ps USING h5(file=%s, dataset='/s', schema='value int32')" % q(fv))
    db.execute("INSERT INTO ps(value) VALUES (1), (-2), ('3')")
    with h5py.File(fv, "r") as f:
        check(f["v"].shape == (2, 3) and f["v"][:].tolist() == [[1, 2, 3], [4, 5, 6]], "2-D plain dataset %r" % (f["v"][:],))
        check(f["s"].dtype == np.dtype("<i4") and f["s"][:].tolist() == [1, -2, 3], "1-D plain dataset")


def test_transactions(d):
    fn = os.path.join(d, "tx.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/x', schema='n int64, s text', chunk=7)" % q(fn))

    def count():
        with h5py.File(fn, "r") as f:
            return f["x"].shape[0]
    db.execute("BEGIN")
    db.executemany("INSERT INTO t(n, s) VALUES (?, ?)", [(k, "s%d" % k) for k in range(10)])
    check(count() == 0, "uncommitted rows are not in the file")
    db.execute("ROLLBACK")
    check(count() == 0 and db.execute("SELECT count(*) FROM t").fetchone()[0] == 0, "ROLLBACK drops rows")
    db.execute("BEGIN")
    db.executemany("INSERT INTO t(n, s) VALUES (?, ?)", [(k, "s%d" % k) for k in range(10)])
    db.execute("SAVEPOINT a")
    db.executemany("INSERT INTO t(n, s) VALUES (?, ?)", [(k, "s%d" % k) for k in range(10, 15)])
    db.execute("SAVEPOINT b")
    db.executemany("INSERT INTO t(n, s) VALUES (?, ?)", [(k, "s%d" % k) for k in range(15, 20)])
    db.execute("ROLLBACK TO a")
    db.executemany("INSERT INTO t(n, s) VALUES (?, ?)", [(k, "s%d" % k) for k in range(100, 103)])
    db.execute("COMMIT")
    want = list(range(10)) + [100, 101, 102]
    with h5py.File(fn, "r") as f:
        check(f["x"]["n"].tolist() == want, "savepoints: %r" % f["x"]["n"].tolist())
    # a failing statement inside a transaction drops only its own rows
    db.execute("BEGIN")
    db.execute("INSERT INTO t(n, s) VALUES (1000, 'ok')")
    expect_error(db, "INSERT INTO t(n, s) VALUES (1001, 'ok'), (NULL, 'bad')", "NULL")
    db.execute("COMMIT")
    want.append(1000)
    # more transactions, another connection, autocommit statements
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE t2 USING h5(file=%s, dataset='/x')" % q(fn))
    for k in range(5):
        (db if k % 2 else db2).execute("INSERT INTO %s(n, s) VALUES (?, ?)" % ("t" if k % 2 else "t2"), (2000 + k, None))
        want.append(2000 + k)
    with h5py.File(fn, "r") as f:
        check(f["x"]["n"].tolist() == want, "appends from two connections")
    check([r[0] for r in db.execute("SELECT n FROM t")] == want, "the first connection sees the second's rows")
    check(db.execute("SELECT s FROM t WHERE i = ?", (len(want) - 1,)).fetchone()[0] is None, "NULL text stays NULL")
    # the position column
    expect_error(db, "INSERT INTO t(i, n, s) VALUES (0, 1, 'x')", "position")
    db.execute("INSERT INTO t(i, n, s) VALUES (?, 7, 'x')", (len(want),))
    want.append(7)
    # big transactions write early, and still commit or roll back whole
    fb = os.path.join(d, "big.h5")
    db.execute("CREATE VIRTUAL TABLE big USING h5(file=%s, dataset='/v', schema='k int32, v float32[4096]', chunk=64)" % q(fb))
    vec = np.arange(4096, dtype="<f4").tobytes()
    db.execute("BEGIN")
    db.executemany("INSERT INTO big(k, v) VALUES (?, ?)", [(k, vec) for k in range(5000)])  # 80 MB
    db.execute("ROLLBACK")
    with h5py.File(fb, "r") as f:
        check(f["v"].shape == (0,), "a rolled-back big transaction leaves no rows")
    db.execute("BEGIN")
    db.executemany("INSERT INTO big(k, v) VALUES (?, ?)", [(k, vec) for k in range(5000)])
    db.execute("COMMIT")
    with h5py.File(fb, "r") as f:
        v = f["v"]
        check(v.shape == (5000,) and v[4999]["k"] == 4999 and v[2500]["v"][4095] == 4095, "a big transaction commits")
    db.execute("BEGIN")
    db.execute("SAVEPOINT s")
    db.executemany("INSERT INTO big(k, v) VALUES (?, ?)", [(k, vec) for k in range(5000)])
    db.execute("ROLLBACK TO s")
    expect_error(db, "COMMIT", "roll back")
    if db.in_transaction:  # (SQLite rolls back itself when a table's commit fails)
        db.execute("ROLLBACK")
    with h5py.File(fb, "r") as f:
        check(f["v"].shape == (5000,), "a doomed transaction leaves the file as it was")
    db.execute("INSERT INTO big(k, v) VALUES (5000, ?)", (vec,))
    with h5py.File(fb, "r") as f:
        check(f["v"].shape == (5001,), "appending goes on after a rolled-back big transaction")


def test_append_to_h5py_file(d):
    fn = os.path.join(d, "theirs.h5")
    with h5py.File(fn, "w", libver="latest") as f:
        ds = f.create_dataset("log", data=np.arange(10, dtype="<f8"), chunks=(4,), maxshape=(None,), compression="gzip")
        ds.attrs["units"] = "m"
        for k in range(12):
            f.attrs["a%d" % k] = k
        f["other/fixed"] = np.arange(6).reshape(2, 3)
        f["other/link"] = h5py.SoftLink("/other/fixed")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE lg USING h5(file=%s, dataset='/log')" % q(fn))
    db.execute("INSERT INTO lg(value) VALUES (10.5), (NULL)")
    with h5py.File(fn, "r") as f:
        v = f["log"][:]
        check(v.shape == (12,) and v[:11].tolist() == list(range(10)) + [10.5] and math.isnan(v[11]), "appended to h5py's dataset: %r" % v)
        check(f["log"].attrs["units"] == "m" and all(f.attrs["a%d" % k] == k for k in range(12)), "attributes kept")
        check(f["other/link"][:].tolist() == [[0, 1, 2], [3, 4, 5]], "other objects kept")
    # a new dataset in an existing file
    db.execute("CREATE VIRTUAL TABLE nw USING h5(file=%s, dataset='/new/grp/ds', schema='x int16')" % q(fn))
    db.execute("INSERT INTO nw(x) VALUES (1), (2)")
    with h5py.File(fn, "r") as f:
        check(f["new/grp/ds"]["x"].tolist() == [1, 2] and f["log"].shape == (12,), "a new dataset beside the old")
    # a dataset that cannot grow
    db.execute("CREATE VIRTUAL TABLE fx USING h5(file=%s, dataset='/other/fixed')" % q(fn))
    expect_error(db, "INSERT INTO fx(value) VALUES (vec_f32('[1,2,3]'))", "cannot grow")


def test_errors(d):
    fn = os.path.join(d, "err.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE e USING h5(file=%s, dataset='/d', schema='a int8, b uint16, v float32[3], s text, f float32')" % q(fn))
    before = open(fn, "rb").read()
    for sql, word in [
        ("INSERT INTO e(a, b, v, s, f) VALUES (NULL, 1, '[1,2,3]', 'x', 1)", "NULL"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (200, 1, '[1,2,3]', 'x', 1)", "out of range"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, -1, '[1,2,3]', 'x', 1)", "out of range"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1.5, 1, '[1,2,3]', 'x', 1)", "not an integer"),
        ("INSERT INTO e(a, b, v, s, f) VALUES ('abc', 1, '[1,2,3]', 'x', 1)", "expected a number"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2]', 'x', 1)", "expected 3"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2,3,4]', 'x', 1)", "more than 3"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2,', 'x', 1)", "JSON"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, x'0000', 'x', 1)", "BLOB"),
        ("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2,3]', x'ff00', 1)", "NUL"),
    ]:
        expect_error(db, sql, word)
    check(open(fn, "rb").read() == before, "failed inserts leave the file as it was")
    expect_error(db, "CREATE VIRTUAL TABLE e2 USING h5(file=%s, dataset='/d', schema='a int16')" % q(fn), "does not match")
    expect_error(db, "CREATE VIRTUAL TABLE e3 USING h5(file=%s, dataset='/z', schema='a int13')" % q(fn), "unknown type")
    expect_error(db, "CREATE VIRTUAL TABLE e4 USING h5(file=%s, dataset='/z', schema='a int8, a int8')" % q(fn), "twice")
    expect_error(db, "CREATE VIRTUAL TABLE e5 USING h5(file=%s, dataset='/z', schema='a int8', compression='lz4')" % q(fn), "compression")
    db.execute("CREATE VIRTUAL TABLE ro USING h5(file=%s, dataset='/d', mode=ro)" % q(fn))
    expect_error(db, "INSERT INTO ro(a, b, v, s, f) VALUES (1, 1, '[1,2,3]', 'x', 1)", "mode=ro")
    # another writer holds the file: SQLITE_BUSY, then it works
    fh = open(fn, "rb")
    fcntl.flock(fh, fcntl.LOCK_EX)
    msg = expect_error(db, "INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2,3]', 'x', 1)", "another")
    check("locked" in msg or "busy" in msg.lower() or "another" in msg, "busy message %r" % msg)
    fcntl.flock(fh, fcntl.LOCK_UN)
    fh.close()
    db.execute("INSERT INTO e(a, b, v, s, f) VALUES (1, 1, '[1,2,3]', 'x', 1)")
    check(db.execute("SELECT count(*) FROM e").fetchone()[0] == 1, "insert after the lock is gone")
    # (with no rows, UPDATE and DELETE change nothing and succeed, as on any table)
    before = open(fn, "rb").read()
    expect_error(db, "UPDATE e SET a = 2", "append-only")
    expect_error(db, "DELETE FROM e", "append-only")
    check(open(fn, "rb").read() == before, "UPDATE and DELETE leave the file as it was")


CHILD = r'''
import os, sqlite3, sys
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
db.execute("CREATE VIRTUAL TABLE c USING h5(file='%s', dataset='/r', schema='k int64, v float64, s text', chunk=16)" % sys.argv[2].replace("'", "''"))
n = db.execute("SELECT count(*) FROM c").fetchone()[0]
while True:
    m = 1 + (n * 7) % 23
    db.execute("BEGIN")
    db.executemany("INSERT INTO c(k, v, s) VALUES (?, ?, ?)", [(k, k * 0.5, "r%d" % k) for k in range(n, n + m)])
    db.execute("COMMIT")
    n += m
    sys.stdout.write("%d\n" % n)
    sys.stdout.flush()
'''


def test_crash(d, rounds):
    fn = os.path.join(d, "crash.h5")
    script = os.path.join(d, "child.py")
    with open(script, "w") as fh:
        fh.write(CHILD)
    rng = random.Random(11)
    last = 0
    env = dict(os.environ)
    for r in range(rounds):
        p = subprocess.Popen([sys.executable, script, EXT, fn], stdout=subprocess.PIPE, env=env)
        time.sleep(rng.uniform(0.05, 0.4))
        p.send_signal(signal.SIGKILL)
        out = p.stdout.read().decode().split()
        p.wait()
        reported = int(out[-1]) if out else last
        if not os.path.exists(fn):  # killed before it made the file (a slow start)
            check(reported == 0, "crash round %d: %d rows reported, no file" % (r, reported))
            continue
        with h5py.File(fn, "r") as f:
            r_ = f["r"][:]
        n = len(r_)
        ok = n >= reported and all(int(r_[k]["k"]) == k and float(r_[k]["v"]) == k * 0.5 and r_[k]["s"].decode() == "r%d" % k for k in range(n))
        check(ok, "crash round %d: %d rows in the file, %d reported committed" % (r, n, reported))
        if not ok:
            break
        last = n
    print("crash test: %d kills, %d rows committed" % (rounds, last))


def main():
    d = tempfile.mkdtemp(prefix="h5write_")
    test_export(d)
    test_transactions(d)
    test_append_to_h5py_file(d)
    test_errors(d)
    test_crash(d, int(os.environ.get("H5MEM_CRASH_ROUNDS", "30")))
    finish()


if __name__ == "__main__":
    main()
