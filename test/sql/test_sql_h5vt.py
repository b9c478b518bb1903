"""The h5 virtual table, reading: files h5py writes, read back through SQL.

- every layout (contiguous, compact, chunked with gzip/shuffle, libver
  earliest and latest), ranks 0-3, numeric types of every size and byte
  order, strings, compounds with array fields: SELECT * equals h5py's values
  (float32 BLOB rows for 2-D numeric data, JSON with row=json);
- constraints on i (=, IN, <, <=, >, >=, BETWEEN, with integer, real, text
  and NULL bounds) and LIMIT/OFFSET give exactly the rows Python's filtering
  gives, checked on random queries;
- only the chunks a query touches are decoded: a dataset with one corrupted
  chunk still counts its rows, reads the rows of other chunks, and fails
  cleanly (no crash) only when the corrupt chunk's rows are asked for;
- the table notices a file rewritten on disk, and refuses a changed type;
- safety: the table cannot be used from a view or trigger; bad options give
  clear errors.

Run by make check with Debian's /usr/bin/python3 (h5py, numpy).
"""
import math
import os
import random
import sqlite3
import struct
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402


def expect_value(x):
    """What a SQL value of one element of h5py's reading should be."""
    if isinstance(x, (bytes, np.bytes_)):
        try:
            return x.decode("utf-8")
        except UnicodeDecodeError:
            return bytes(x)
    if isinstance(x, str):
        return x
    if isinstance(x, (np.bool_, bool)):
        return int(x)
    if isinstance(x, (np.integer, int)):
        # unsigned beyond int64 come as REAL
        return int(x) if int(x) < 2**63 else float(x)
    if isinstance(x, (np.floating, float)):
        # SQLite has no NaN: a NaN REAL is NULL
        return None if math.isnan(x) else float(x)
    raise TypeError(type(x))


def same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def f32_blob(row):
    return np.asarray(row, dtype="<f4").tobytes()


def make_files(d, rng):
    """(file, dataset, numpy array, kind) for a set of h5py datasets."""
    out = []
    for libver in ("earliest", "latest"):
        fn = os.path.join(d, "f_%s.h5" % libver)
        with h5py.File(fn, "w", libver=libver) as f:
            dts = ["<i1", "<u1", ">i2", "<u2", "<i4", ">u4", "<i8", "<u8", "<f2", "<f4", ">f4", "<f8", "?"]
            for k, dt in enumerate(dts):
                n = int(rng.integers(0, 3000))
                if dt == "?":
                    a = rng.integers(0, 2, n).astype(bool)
                elif dt[1] == "f":
                    a = (rng.standard_normal(n) * 1000).astype(dt)
                    if n > 3:
                        a[1] = np.nan
                        a[2] = np.inf
                else:
                    info = np.iinfo(np.dtype(dt))
                    a = rng.integers(info.min, info.max, n, dtype=np.dtype(dt).newbyteorder("=")).astype(dt)
                layout = k % 3
                name = "d%d" % k
                if layout == 0:
                    f.create_dataset(name, data=a)
                elif layout == 1:
                    f.create_dataset(name, data=a, chunks=(max(1, int(rng.integers(1, 500))),),
                                     maxshape=(None,), compression="gzip", shuffle=True)
                else:
                    if n == 0:
                        f.create_dataset(name, data=a)
                    else:
                        f.create_dataset(name, data=a, chunks=(max(1, n // 3),))
                out.append((fn, "/" + name, a, "1d"))
            # 2-D numeric: float32 BLOB rows
            for k, (dt, shape, chunks) in enumerate([("<f4", (50, 8), (7, 8)), ("<f8", (30, 5), None),
                                                      ("<i2", (20, 3), (4, 2)), ("<f4", (0, 4), None)]):
                a = (rng.standard_normal(shape) * 100).astype(dt)
                f.create_dataset("m%d" % k, data=a, chunks=chunks)
                out.append((fn, "/m%d" % k, a, "2d"))
            # 3-D: JSON
            a = rng.integers(-9, 9, (4, 3, 2)).astype("<i4")
            f.create_dataset("cube", data=a, chunks=(1, 3, 2))
            out.append((fn, "/cube", a, "nd"))
            # strings
            s = np.array(["alpha", "", "ünïcode", "x" * 300], dtype=object)
            f.create_dataset("vs", data=s, dtype=h5py.string_dtype())
            out.append((fn, "/vs", s, "str"))
            fs = np.array([b"ab", b"cde", b""], dtype="S4")
            f.create_dataset("fs", data=fs)
            out.append((fn, "/fs", fs, "str"))
            # compound with an array field and a string
            dt = np.dtype([("id", "<i8"), ("score", "<f4"), ("name", h5py.string_dtype()),
                           ("emb", "<f4", (6,)), ("flag", "?")])
            c = np.zeros(40, dtype=dt)
            c["id"] = np.arange(40) * 3
            c["score"] = rng.standard_normal(40)
            c["name"] = ["n%d" % i for i in range(40)]
            c["emb"] = rng.standard_normal((40, 6))
            c["flag"] = rng.integers(0, 2, 40).astype(bool)
            f.create_dataset("grp/comp", data=c, chunks=(9,), compression="gzip")
            out.append((fn, "/grp/comp", c, "comp"))
            f["scalar"] = np.float64(2.5)
            out.append((fn, "/scalar", np.array(2.5), "scalar"))
    return out


def expected_rows(a, kind):
    rows = []
    if kind == "scalar":
        return [(0, float(a))]
    for i in range(a.shape[0]):
        if kind == "1d" or kind == "str":
            rows.append((i, expect_value(a[i])))
        elif kind == "2d":
            rows.append((i, f32_blob(a[i])))
        elif kind == "nd":
            rows.append((i, a[i].tolist()))
        elif kind == "comp":
            r = a[i]
            rows.append((i, int(r["id"]), float(r["score"]), expect_value(r["name"]),
                         f32_blob(r["emb"]), int(r["flag"])))
    return rows


def test_reading(db, files):
    import json
    for n, (fn, ds, a, kind) in enumerate(files):
        t = "t%d" % n
        db.execute("CREATE VIRTUAL TABLE %s USING h5(file=%s, dataset=%s)" % (t, q(fn), q(ds)))
        got = db.execute("SELECT * FROM %s" % t).fetchall()
        if kind == "nd":
            got = [(r[0], json.loads(r[1])) for r in got]
        want = expected_rows(a, kind)
        ok = len(got) == len(want) and all(
            len(g) == len(w) and all(same(x, y) for x, y in zip(g, w)) for g, w in zip(got, want))
        check(ok, "%s %s (%s): SELECT * differs from h5py (%d vs %d rows)%s" % (
            fn, ds, kind, len(got), len(want),
            "" if ok or not got or not want else " first: %r vs %r" % (got[0], want[0])))
        check(db.execute("SELECT count(*) FROM %s" % t).fetchone()[0] == len(want),
              "%s %s: count(*)" % (fn, ds))
        if kind == "2d":
            db.execute("CREATE VIRTUAL TABLE %sj USING h5(file=%s, dataset=%s, row=json)" % (t, q(fn), q(ds)))
            gj = [json.loads(r[0]) for r in db.execute("SELECT value FROM %sj" % t)]
            check(gj == a.tolist(), "%s %s: row=json values" % (fn, ds))
        if kind == "comp":
            types = db.execute("SELECT typeof(i), typeof(id), typeof(score), typeof(name), typeof(emb), typeof(flag) FROM %s LIMIT 1" % t).fetchone()
            check(types == ("integer", "integer", "real", "text", "blob", "integer"), "compound column types %r" % (types,))


def test_ranges(db, rng):
    d = tempfile.mkdtemp()
    fn = os.path.join(d, "r.h5")
    n = 1000
    with h5py.File(fn, "w") as f:
        f.create_dataset("x", data=np.arange(n, dtype="<i8") * 7, chunks=(64,), compression="gzip")
    db.execute("CREATE VIRTUAL TABLE r USING h5(file=%s, dataset='/x')" % q(fn))
    ops = ["=", "<", "<=", ">", ">="]
    bounds = [lambda: int(rng.integers(-20, n + 20)), lambda: float(rng.integers(-20, n + 20)) + rng.choice([0, 0.5, -0.5]),
              lambda: None, lambda: "'abc'", lambda: "'%d'" % int(rng.integers(0, n))]
    idx = list(range(n))
    for it in range(400):
        conds, py = [], []
        for _ in range(int(rng.integers(1, 3))):
            op = ops[int(rng.integers(0, len(ops)))]
            b = bounds[int(rng.choice([0, 0, 0, 1, 1, 2, 3, 4]))]()
            lit = "NULL" if b is None else (b if isinstance(b, str) else repr(b))
            conds.append("i %s %s" % (op, lit))
        where = " AND ".join(conds)
        extra = ""
        if it % 3 == 0:
            extra = " LIMIT %d" % int(rng.integers(0, 50))
            if it % 2 == 0:
                extra += " OFFSET %d" % int(rng.integers(0, 50))
        if it % 5 == 0:
            where = "i IN (%s)" % ",".join(str(int(rng.integers(-5, n + 5))) for _ in range(5))
        sqlq = "SELECT i, value FROM r WHERE %s ORDER BY i%s" % (where, extra)
        got = db.execute(sqlq).fetchall()
        # the same query over an ordinary table is the oracle
        want = db.execute(sqlq.replace("FROM r ", "FROM plain ")).fetchall()
        check(got == want, "range query %s: %r... vs %r..." % (sqlq, got[:5], want[:5]))
    got = db.execute("SELECT i FROM r WHERE i BETWEEN 100 AND 103").fetchall()
    check(got == [(100,), (101,), (102,), (103,)], "BETWEEN")
    plan = " ".join(str(r) for r in db.execute("EXPLAIN QUERY PLAN SELECT * FROM r WHERE i BETWEEN 10 AND 20"))
    check("INDEX" in plan, "BETWEEN is handed to the table: %s" % plan)


def test_corrupt_chunk():
    d = tempfile.mkdtemp()
    fn = os.path.join(d, "c.h5")
    with h5py.File(fn, "w") as f:
        ds = f.create_dataset("x", data=np.arange(4000, dtype="<f4"), chunks=(1000,), compression="gzip")
        info = ds.id.get_chunk_info(2)  # rows 2000..2999
    with open(fn, "r+b") as fh:
        fh.seek(info.byte_offset + 10)
        fh.write(b"\xff" * 16)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE c USING h5(file=%s, dataset='/x')" % q(fn))
    check(db.execute("SELECT count(*) FROM c").fetchone()[0] == 4000, "count(*) reads no chunk")
    s = db.execute("SELECT sum(value) FROM c WHERE i BETWEEN 100 AND 1999").fetchone()[0]
    check(s == float(sum(range(100, 2000))), "rows of intact chunks: %r" % s)
    s = db.execute("SELECT sum(value) FROM c WHERE i >= 3000").fetchone()[0]
    check(s == float(sum(range(3000, 4000))), "rows after the corrupt chunk: %r" % s)
    check(db.execute("SELECT value FROM c LIMIT 2 OFFSET 3998").fetchall() == [(3998.0,), (3999.0,)], "LIMIT/OFFSET skip chunks")
    try:
        db.execute("SELECT sum(value) FROM c WHERE i = 2500").fetchone()
        check(False, "the corrupt chunk must fail")
    except sqlite3.Error as e:
        check("h5" in str(e), "corrupt chunk message: %s" % e)


def test_refresh_and_errors():
    d = tempfile.mkdtemp()
    fn = os.path.join(d, "e.h5")
    with h5py.File(fn, "w") as f:
        f["x"] = np.arange(5, dtype="<i4")
        f["g/y"] = np.arange(3, dtype="<f8")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE e USING h5(file=%s, dataset='/x')" % q(fn))
    check(db.execute("SELECT count(*) FROM e").fetchone()[0] == 5, "before rewrite")
    with h5py.File(fn, "w") as f:
        f["x"] = np.arange(9, dtype="<i4")
    check(db.execute("SELECT count(*), sum(value) FROM e").fetchone() == (9, 36), "sees the rewritten file")
    with h5py.File(fn, "w") as f:
        f["x"] = np.arange(9, dtype="<f8").reshape(3, 3)
    try:
        db.execute("SELECT * FROM e").fetchall()
        check(False, "changed type must fail")
    except sqlite3.Error as e:
        check("changed" in str(e), "changed type message: %s" % e)
    bad = [
        ("USING h5(dataset='/x')", "file= is required"),
        ("USING h5(file=%s)" % q(fn), "dataset= is required"),
        ("USING h5(file=%s, dataset='/nope')" % q(fn), "nope"),
        ("USING h5(file=%s, dataset='/g')" % q(os.path.join(d, "missing.h5")), "schema="),
        ("USING h5(file=%s, dataset='/x', row=wide)" % q(fn), "row="),
        ("USING h5(file=%s, dataset='/x', colour=red)" % q(fn), "unknown option"),
        ("USING h5(file=%s, dataset='/x', chunk=0)" % q(fn), "chunk="),
    ]
    with open(os.path.join(d, "junk.h5"), "wb") as fh:
        fh.write(b"not hdf5 at all" * 100)
    bad.append(("USING h5(file=%s, dataset='/x')" % q(os.path.join(d, "junk.h5")), "cannot open"))
    for k, (args, word) in enumerate(bad):
        try:
            db.execute("CREATE VIRTUAL TABLE bad%d %s" % (k, args))
            check(False, "%s must fail" % args)
        except sqlite3.Error as e:
            check(word in str(e), "%s: message %r lacks %r" % (args, str(e), word))
    # direct-only: no views, no triggers
    db.execute("CREATE VIRTUAL TABLE ok USING h5(file=%s, dataset='/x')" % q(fn))
    db.execute("CREATE VIEW v AS SELECT * FROM ok")
    try:
        db.execute("SELECT * FROM v").fetchall()
        check(False, "a view over h5 must fail")
    except sqlite3.Error as e:
        check("unsafe use" in str(e), "view message: %s" % e)
    db.execute("CREATE TABLE log(n)")
    db.execute("CREATE TRIGGER tr AFTER INSERT ON log BEGIN SELECT count(*) FROM ok; END")
    try:
        db.execute("INSERT INTO log VALUES (1)")
        check(False, "a trigger using h5 must fail")
    except sqlite3.Error as e:
        check("unsafe use" in str(e), "trigger message: %s" % e)
    # DROP TABLE leaves the file
    db.execute("DROP VIEW v")
    db.execute("DROP TABLE ok")
    check(os.path.exists(fn), "DROP TABLE keeps the file")


def main():
    rng = np.random.default_rng(20261129)
    d = tempfile.mkdtemp()
    files = make_files(d, rng)
    db = connect()
    # the oracle table for the range queries
    db.execute("CREATE TABLE plain(i INTEGER PRIMARY KEY, value INTEGER)")
    db.executemany("INSERT INTO plain VALUES (?, ?)", [(i, i * 7) for i in range(1000)])
    test_reading(db, files)
    test_ranges(db, rng)
    test_corrupt_chunk()
    test_refresh_and_errors()
    print("%d datasets read; %d failures" % (len(files), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
