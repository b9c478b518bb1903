"""lib/h5 and the h5 SQL surface against files that claim what they cannot
deliver, and values a type cannot hold (issue 17).

1. Virtual datasets whose source files are absent (copies of the corpus's
   1_vds.h5 .. 5_vds.h5 and vds-eiger.h5 without them): the extent of the
   unlimited dimension is what the sources reach (nothing: 0 rows) and
   every read gives what h5py reads there, through h5_ls, h5_read_json
   (with and without a selection) and the h5 table.
2. Writing (USING h5(schema=...)): finite numbers beyond float16's 65504 or
   float32's FLT_MAX are errors naming the column and the range, as 300 is
   for int8; numbers that round to the largest finite value are stored as
   that value; explicit infinities are stored as infinities and NULL as
   NaN, in every float type; a JSON number beyond float64 (1e400) is an
   error, not infinity.
3. Dataspaces the storage cannot hold: huge_dataspace_table.h5 (/table10
   claims 2^64-1 rows) is refused when the h5 table is created, by
   h5_read_json, and h5_ls reports its element count as NULL, never -1;
   contiguous and compact datasets whose dataspace was enlarged behind
   their storage's back are refused likewise.

The fixture files are in test/data (copied from the HDF5 corpus, and the
regression input huge_dataspace_table.h5; test/data/README.md).  Run by
make check with Debian's /usr/bin/python3 (h5py, numpy).
"""
import json
import os
import sqlite3
import struct
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def ls(db, path):
    db.row_factory = sqlite3.Row
    try:
        return {r["path"]: dict(r) for r in db.execute("SELECT * FROM h5_ls(?)", (path,))}
    finally:
        db.row_factory = None


def bounded(db, sql, args=(), steps=200000):
    """Run sql, interrupted after about `steps` VM instructions (a query that
    would step forever fails instead of hanging the test)."""
    n = [0]

    def tick():
        n[0] += 1
        return 1 if n[0] > steps // 1000 else 0
    db.set_progress_handler(tick, 1000)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.set_progress_handler(None, 0)


# ------------------------------------------------------------ 1. virtual datasets

def test_vds():
    db = connect()
    files = ["1_vds.h5", "2_vds.h5", "3_1_vds.h5", "3_2_vds.h5", "4_vds.h5", "5_vds.h5", "vds-eiger.h5"]
    for name in files:
        fn = os.path.join(DATA, name)
        with h5py.File(fn, "r") as f:
            dsets = {}
            f.visititems(lambda p, o: dsets.__setitem__("/" + p, o[()]) if isinstance(o, h5py.Dataset) else None)
        rows = ls(db, fn)
        for path, want in dsets.items():
            r = rows.get(path)
            check(r is not None and r["layout"] == "virtual" and json.loads(r["shape"]) == list(want.shape)
                  and r["elements"] == want.size,
                  "%s %s: h5_ls lists the virtual dataset as h5py sees it (%r): %r" % (name, path, want.shape, r))
            for sel in (None, ":", "0:0"):
                args = (fn, path) if sel is None else (fn, path, sel)
                got = db.execute("SELECT h5_read_json(%s)" % ", ".join("?" * len(args)), args).fetchone()[0]
                check(json.loads(got) == want.tolist(), "%s %s [%s]: %r, h5py %r" % (name, path, sel, got, want.tolist()))
            tn = "v%d" % files.index(name)
            db.execute("CREATE VIRTUAL TABLE %s USING h5(file=%s, dataset=%s)" % (tn, q(fn), q(path)))
            n = db.execute("SELECT count(*) FROM %s" % tn).fetchone()[0]
            check(n == want.shape[0], "%s %s: the h5 table has %d rows, h5py %d" % (name, path, n, want.shape[0]))
    check(len(files) == 7, "files")


# ------------------------------------------------------------ 2. float ranges

def test_float_range(d):
    fn = os.path.join(d, "floats.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE w USING h5(file=%s, dataset='/w', "
               "schema='h float16, s float32, x float64, b int8, hv float16[2], sv float32[2], xv float64[2]')" % q(fn))
    ins = "INSERT INTO w(h, s, x, b, hv, sv, xv) VALUES (%s)"
    ok = "0, 0, 0, 0, '[0,0]', '[0,0]', '[0,0]'"

    def bad(col_index, value, column, words):
        vals = ok.split(", ")
        vals[col_index] = value
        msg = expect_error(db, ins % ", ".join(vals), "column %s" % column)
        for w in words:
            check(w in msg, "%s = %s: message %r lacks %r" % (column, value, msg, w))

    bad(3, "300", "b", ["out of range for int8"])  # as it was
    bad(0, "70000", "h", ["70000", "float16", "65504"])
    bad(0, "-70000", "h", ["float16"])
    bad(0, "65520", "h", ["float16"])  # halfway to 65536: rounds to infinity
    bad(0, "1e300", "h", ["float16"])
    bad(1, "1e300", "s", ["1e+300", "float32", "3.40282"])
    bad(1, "-1e39", "s", ["float32"])
    bad(1, "3.4028235677973366e38", "s", ["float32"])  # halfway to 2^128
    bad(4, "'[1, 70000]'", "hv", ["float16"])
    bad(5, "'[1e300, 0]'", "sv", ["float32"])
    bad(6, "'[1e400, 0]'", "xv", ["float64"])
    blob70k = "x'%s'" % np.array([70000, 0], dtype="<f4").tobytes().hex()
    bad(4, blob70k, "hv", ["float16"])

    # rounding to the largest finite value is fine; infinities and NULL are kept
    good = [
        ("65504", "3.4028234663852886e38", "1e300", "-128", "'[65519.99999999, -65519]'", "'[3.4028235e38, 0]'", "'[1e308, 0]'"),
        ("9e999", "9e999", "9e999", "0", "'[0, 0]'", "'[0, 0]'", "'[0, 0]'"),
        ("-9e999", "-9e999", "-9e999", "0", "'[0, 0]'", "'[0, 0]'", "'[0, 0]'"),
        ("NULL", "NULL", "NULL", "0", "'[0, 0]'", "'[0, 0]'", "'[0, 0]'"),
    ]
    for g in good:
        try:
            db.execute(ins % ", ".join(g))
        except sqlite3.Error as e:
            check(False, "%s: %s" % (g, e))
    inf16 = "x'%s'" % np.array([np.inf, -np.inf], dtype="<f4").tobytes().hex()
    db.execute(ins % "0, 0, 0, 0, %s, %s, '[0, 0]'" % (inf16, inf16))
    db.close()
    with h5py.File(fn, "r") as f:
        w = f["/w"][:]
    check(len(w) == 5, "rows written: %d" % len(w))
    if len(w) == 5:
        check(w["h"][0] == 65504 and w["s"][0] == np.float32(3.4028235e38) and w["x"][0] == 1e300,
              "largest finite values: %r" % (w[0],))
        check(w["hv"][0].tolist() == [65504, -65504] and w["sv"][0][0] == np.finfo(np.float32).max,
              "arrays round to the largest finite value: %r" % (w[0],))
        check(all(np.isposinf(w[c][1]) for c in "hsx") and all(np.isneginf(w[c][2]) for c in "hsx"),
              "explicit infinities stay infinite: %r %r" % (w[1], w[2]))
        check(all(np.isnan(w[c][3]) for c in "hsx"), "NULL is NaN: %r" % (w[3],))
        check(np.isposinf(w["hv"][4][0]) and np.isneginf(w["sv"][4][1]), "infinities in BLOBs: %r" % (w[4],))


# ------------------------------------------------------------ 3. storage vs dataspace

def test_huge_dataspace():
    fn = os.path.join(DATA, "huge_dataspace_table.h5")
    db = connect()
    rows = ls(db, fn)
    r = rows.get("/table10")
    check(r is not None and r["kind"] == "dataset", "h5_ls lists /table10: %r" % r)
    if r:
        check(r["elements"] is None, "h5_ls: /table10's elements are NULL, not %r" % r["elements"])
    check(all(x["elements"] is None or x["elements"] >= 0 for x in rows.values()), "h5_ls: no negative counts")
    check(rows.get("/table1", {}).get("elements") == 8, "h5_ls: other datasets as they are: %r" % rows.get("/table1"))
    expect_error(db, "SELECT h5_read_json(?, '/table10', '0:2')", "2^63", (fn,))
    try:
        db.execute("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/table10')" % q(fn))
    except sqlite3.Error as e:
        check("table10" in str(e) and "2^63" in str(e), "CREATE: %r" % str(e))
    else:
        try:
            n = bounded(db, "SELECT count(*) FROM t")
            check(False, "count(*) over 2^64-1 claimed rows: %r" % n)
        except sqlite3.Error as e:
            check(False, "count(*) must not be reached (CREATE should fail): %s" % e)
    # the other tables of the file read as h5py reads them
    db.execute("CREATE VIRTUAL TABLE t1 USING h5(file=%s, dataset='/table1')" % q(fn))
    check(db.execute("SELECT count(*) FROM t1").fetchone()[0] == 8, "count(*) of /table1")


def patch_u64(fn, old, new):
    """Every 8-byte little-endian occurrence of old (the dataspace's dims and
    maximum dims) becomes new; returns how many."""
    with open(fn, "rb") as f:
        b = bytearray(f.read())
    pat, n, at = struct.pack("<Q", old), 0, 0
    while True:
        at = b.find(pat, at)
        if at < 0:
            break
        b[at:at + 8] = struct.pack("<Q", new)
        n += 1
        at += 8
    with open(fn, "wb") as f:
        f.write(b)
    return n


def test_short_storage(d):
    db = connect()
    # contiguous: 12345 int32 (49380 bytes) claiming 2^40 and 12346 elements
    for claim, words in ((1 << 40, ["contiguous", "49380"]), (12346, ["contiguous", "49380", "49384"]),
                         (1 << 62, ["2^64 bytes"])):
        fn = os.path.join(d, "contig%d.h5" % claim)
        with h5py.File(fn, "w") as f:
            f.create_dataset("c", data=np.arange(12345, dtype="<i4"))
        check(patch_u64(fn, 12345, claim) >= 1, "patched the dataspace")
        for sql in ("SELECT h5_read_json(?, '/c')", "SELECT h5_read_json(?, '/c', '0:3')"):
            msg = expect_error(db, sql, "/c", (fn,))
            for w in words:
                check(w in msg, "%s: %r lacks %r" % (sql, msg, w))
        tn = "c%d" % len(fn)  # (each name a different length)
        try:
            db.execute("CREATE VIRTUAL TABLE %s USING h5(file=%s, dataset='/c')" % (tn, q(fn)))
            check(False, "CREATE over a contiguous dataset claiming %d elements must fail" % claim)
            bounded(db, "SELECT count(*) FROM %s" % tn)
        except sqlite3.Error as e:
            check(words[0] in str(e), "CREATE: %r" % str(e))
        r = ls(db, fn).get("/c")
        check(r is not None and r["elements"] is None and r["layout"] == "contiguous",
              "h5_ls: elements NULL for the bad dataset: %r" % r)
    # contiguous storage never allocated reads as the fill value, however
    # large (as the corpus's tlayouto.h5: more than 2^63 bytes is fine)
    fn = os.path.join(d, "unallocated.h5")
    with h5py.File(fn, "w") as f:
        f.create_dataset("u", shape=(12345,), dtype="<i4", fillvalue=7)
    check(patch_u64(fn, 12345, (1 << 61) + 1) >= 1, "patched the unallocated dataspace")
    check(json.loads(db.execute("SELECT h5_read_json(?, '/u', '-3:')", (fn,)).fetchone()[0]) == [7, 7, 7],
          "an unallocated dataset of 2^63 + 4 bytes reads as its fill value")
    r = ls(db, fn).get("/u")
    check(r is not None and r["elements"] == (1 << 61) + 1, "h5_ls of the unallocated dataset: %r" % r)
    # compact: 1111 int32 (4444 bytes) claiming 1112
    fn = os.path.join(d, "compact.h5")
    with h5py.File(fn, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        sid = h5py.h5s.create_simple((1111,))
        ds = h5py.h5d.create(f.id, b"k", h5py.h5t.STD_I32LE, sid, dcpl=dcpl)
        ds.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(1111, dtype="<i4"))
    check(db.execute("SELECT h5_read_json(?, '/k', '1110')", (fn,)).fetchone()[0] == "1110", "compact before")
    check(patch_u64(fn, 1111, 1112) >= 1, "patched the compact dataspace")
    msg = expect_error(db, "SELECT h5_read_json(?, '/k', '0:1')", "compact", (fn,))
    check("4444" in msg and "4448" in msg, "compact: %r" % msg)
    try:
        db.execute("CREATE VIRTUAL TABLE k USING h5(file=%s, dataset='/k')" % q(fn))
        check(False, "CREATE over a short compact dataset must fail")
    except sqlite3.Error as e:
        check("compact" in str(e), "CREATE: %r" % str(e))
    r = ls(db, fn).get("/k")
    check(r is not None and r["elements"] is None and r["layout"] == "compact", "h5_ls compact: %r" % r)
    # a 2-D dataspace whose element count overflows 64 bits
    fn = os.path.join(d, "overflow.h5")
    with h5py.File(fn, "w") as f:
        f.create_dataset("o", data=np.zeros((777, 778), dtype="<i1"), chunks=(7, 7))
    check(patch_u64(fn, 777, 1 << 40) >= 1 and patch_u64(fn, 778, 1 << 40) >= 1, "patched the 2-D dataspace")
    expect_error(db, "SELECT h5_read_json(?, '/o', '0, 0')", "2^64", (fn,))
    r = ls(db, fn).get("/o")
    check(r is not None and r["elements"] is None, "h5_ls overflow: %r" % r)


def main():
    test_vds()
    test_huge_dataspace()
    with tempfile.TemporaryDirectory() as d:
        test_float_range(d)
        test_short_storage(d)
    finish()


if __name__ == "__main__":
    main()
