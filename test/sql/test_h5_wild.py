"""HDF5 as other programs write it (issue 21): messages and values lib/h5
must read the way libhdf5 does.

1. A fill value message of version 1 whose "defined" byte is 0 and whose
   size field is 0xFFFFFFFF (PyTables writes it so: attr-u16.h5) means "no
   fill value", as libhdf5 reads it; it used to be "fill value message
   truncated", and h5_ls showed the dataset with NULL dtype, shape and
   layout without saying why. The file is made with h5py, then its fill
   message rewritten in place; h5py (libhdf5) reads the rewritten file too.
2. One attribute lib/h5 cannot decode (a datatype class it does not know)
   no longer fails h5_attrs for the object: that attribute's row has its
   name, NULL dtype, shape and value, and the reason in `error`; the other
   attributes are returned as before.
3. A dataset whose header cannot be read is still listed by h5_ls, its
   `error` column saying why (NULL for every readable object).
4. Writing (USING h5(schema=...)): integers given as text or in JSON
   arrays are stored exactly over the type's whole range, beyond SQLite's
   int64 and a double's 53 bits ('9223372036854775809' and
   '18446744073709551615' into uint64, as h5py reads them back); one past
   the range is an error naming it.

5. HDF5 2.0 (test/data/hdf5-2.0, written by libhdf5 2.0.0 in h5wasm
   0.10): layout message version 5 and datatype message version 5 (a
   compound, its attribute, a dimension scale's REFERENCE_LIST).
6. tmisc38a.h5's damaged scale-offset chunk is an error, as in libhdf5 2.0.

Run by make check with Debian's /usr/bin/python3 (h5py, numpy).
"""
import json
import os
import shutil
import sqlite3
import struct
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, finish  # noqa: E402

FILL = 12345.678


def patch_once(fn, old, new):
    b = bytearray(open(fn, "rb").read())
    i = b.find(old)
    check(i >= 0 and b.find(old, i + 1) < 0, "%s: the bytes to patch occur once" % fn)
    if i >= 0:
        b[i:i + len(new)] = new
        open(fn, "wb").write(bytes(b))


def rows(db, sql, args=()):
    db.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in db.execute(sql, args)]
    finally:
        db.row_factory = None


def test_fill_v1_undefined(d):
    fn = os.path.join(d, "fill_v1.h5")
    with h5py.File(fn, "w", libver="earliest") as f:
        f.create_dataset("x", data=np.arange(6, dtype="<f4"), chunks=(3,), fillvalue=np.float32(FILL))
    val = struct.pack("<f", FILL)
    # version 2, defined: 02 alloc write 01, size 4, the value; made version
    # 1, undefined, with the size field 0xFFFFFFFF (the value's bytes stay,
    # unused, as the message's size says)
    b = open(fn, "rb").read()
    i = b.find(b"\x01\x04\x00\x00\x00" + val)
    check(i >= 3 and b[i - 3] == 2, "the fill value message (version 2, defined) is in the file")
    if i < 3:
        return
    patch_once(fn, bytes(b[i - 3:i + 9]), b"\x01" + bytes(b[i - 2:i]) + b"\x00\xff\xff\xff\xff" + val)
    with h5py.File(fn, "r") as f:  # libhdf5 reads it, the fill value undefined
        check(list(f["x"][()]) == list(np.arange(6, dtype="<f4")), "h5py reads the rewritten file")
    db = connect()
    r = {x["path"]: x for x in rows(db, "SELECT * FROM h5_ls(?)", (fn,))}
    x = r.get("/x", {})
    check(x.get("dtype") == "<f4" and x.get("shape") == "[6]" and x.get("layout") == "chunked"
          and x.get("error") is None, "h5_ls of a version 1 fill message with size 0xFFFFFFFF: %r" % x)
    got = db.execute("SELECT h5_read_json(?, '/x')", (fn,)).fetchone()[0]
    check(json.loads(got) == [0, 1, 2, 3, 4, 5], "h5_read_json: %s" % got)
    check(all(v.get("error") is None for v in r.values()), "no object has an error: %r" % r)


def test_attr_isolated(d):
    fn = os.path.join(d, "attrs.h5")
    with h5py.File(fn, "w", libver="earliest") as f:
        g = f.create_group("g")
        g.attrs["before"] = np.int32(7)
        g.attrs["odd_one"] = np.array([1, 2], dtype=">i2")  # (the only big-endian int16 in the file)
        g.attrs["after"] = "text"
    # its datatype message: fixed-point, version 1, big-endian signed, 2
    # bytes, offset 0, precision 16; the class made 15 (none)
    dt = b"\x10\x09\x00\x00\x02\x00\x00\x00\x00\x00\x10\x00"
    patch_once(fn, dt, b"\x1f" + dt[1:])
    db = connect()
    got = {r["name"]: r for r in rows(db, "SELECT * FROM h5_attrs(?, '/g')", (fn,))}
    check(set(got) == {"before", "odd_one", "after"}, "h5_attrs lists the three attributes: %r" % got)
    check(got.get("before", {}).get("value") == 7 and got["before"].get("error") is None,
          "the attribute before: %r" % got.get("before"))
    check(got.get("after", {}).get("value") == "text" and got["after"].get("error") is None,
          "the attribute after: %r" % got.get("after"))
    o = got.get("odd_one", {})
    check(o.get("dtype") is None and o.get("value") is None and o.get("shape") is None
          and "class 15" in (o.get("error") or ""), "the undecodable attribute: %r" % o)
    # every object's attributes, and h5_ls's count
    allr = rows(db, "SELECT * FROM h5_attrs(?)", (fn,))
    check(len(allr) == 3, "h5_attrs of the whole file: %r" % allr)
    ls = {r["path"]: r for r in rows(db, "SELECT * FROM h5_ls(?)", (fn,))}
    check(ls.get("/g", {}).get("nattrs") == 3 and ls["/g"].get("error") is None, "h5_ls /g: %r" % ls.get("/g"))


def test_ls_error(d):
    fn = os.path.join(d, "badtype.h5")
    with h5py.File(fn, "w", libver="earliest") as f:
        f.create_dataset("good", data=np.arange(3, dtype="<f8"))
        f.create_dataset("bad", data=np.arange(4, dtype=">i2"))
    dt = b"\x10\x09\x00\x00\x02\x00\x00\x00\x00\x00\x10\x00"
    patch_once(fn, dt, b"\x1f" + dt[1:])
    db = connect()
    ls = {r["path"]: r for r in rows(db, "SELECT * FROM h5_ls(?)", (fn,))}
    bad, good = ls.get("/bad", {}), ls.get("/good", {})
    check(bad.get("kind") == "dataset" and bad.get("dtype") is None and "class 15" in (bad.get("error") or ""),
          "h5_ls says why /bad has no dtype: %r" % bad)
    check(good.get("dtype") == "<f8" and good.get("error") is None, "h5_ls /good: %r" % good)


def test_uint64_exact(d):
    fn = os.path.join(d, "u64.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE w USING h5(file='%s', dataset='/w', "
               "schema='u uint64, i int64, uv uint64[2], s int16')" % fn)
    ins = "INSERT INTO w(u, i, uv, s) VALUES "
    db.execute(ins + "('9223372036854775809', '-9223372036854775808', "
               "'[18446744073709551615, 9223372036854775809]', ' -32768 ')")
    db.execute(ins + "('18446744073709551615', 9223372036854775807, '[0, 9007199254740993]', 32767)")
    for bad, col, word in (("('18446744073709551616', 0, '[0,0]', 0)", "u", "uint64"),
                           ("('-1', 0, '[0,0]', 0)", "u", "uint64"),
                           ("(0, '9223372036854775808', '[0,0]', 0)", "i", "int64"),
                           ("(0, 0, '[18446744073709551616, 0]', 0)", "uv", "uint64"),
                           ("(0, 0, '[0, -1]', 0)", "uv", "uint64"),
                           ("(0, 0, '[0, 0]', '32768')", "s", "int16")):
        try:
            db.execute(ins + bad)
            check(False, "%s must be refused" % bad)
        except sqlite3.Error as e:
            check("column %s" % col in str(e) and word in str(e), "%s: %s" % (bad, e))
    db.close()
    with h5py.File(fn, "r") as f:
        w = f["w"][()]
    check([int(x) for x in w["u"]] == [9223372036854775809, 18446744073709551615], "uint64: %r" % w["u"])
    check([int(x) for x in w["i"]] == [-9223372036854775808, 9223372036854775807], "int64: %r" % w["i"])
    check([[int(x) for x in r] for r in w["uv"]] == [[18446744073709551615, 9223372036854775809],
                                                     [0, 9007199254740993]], "uint64[2]: %r" % w["uv"])
    check([int(x) for x in w["s"]] == [-32768, 32767], "int16: %r" % w["s"])


def test_scaleoffset_damaged():
    """tmisc38a.h5 (the corpus): a scale-offset chunk claiming 127 bits per
    2-byte value is an error, as libhdf5 2.0 makes it; its twin reads."""
    base = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "hdf5", "files",
                        "hdf5", "test", "testfiles", "tmisc38a.h5")
    db = connect()
    good = json.loads(db.execute("SELECT h5_read_json(?, '/Scale_offset_short_data_be')", (base,)).fetchone()[0])
    check(good[0][:3] == [0, 1, 2] and good[1][:3] == [1, 2, 3], "the big-endian twin: %r" % good[:2])
    try:
        db.execute("SELECT h5_read_json(?, '/Scale_offset_short_data_le')", (base,)).fetchone()
        check(False, "the damaged scale-offset chunk must be an error")
    except sqlite3.Error as e:
        check("scaleoffset" in str(e) and "127 bits" in str(e), "damaged scale-offset chunk: %s" % e)


def test_hdf5_20():
    """Files libhdf5 2.0.0 wrote (h5wasm 0.10, libver latest;
    test/data/hdf5-2.0/make.mjs): layout message version 5 and datatype
    message version 5 read as the values make.mjs wrote.  libhdf5 1.10
    (h5py here) cannot read those datasets, which shows they use them."""
    d20 = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "hdf5-2.0")
    lay, dt = os.path.join(d20, "layout_v5.h5"), os.path.join(d20, "dtype_v5.h5")
    db = connect()

    def rj(fn, p):
        return json.loads(db.execute("SELECT h5_read_json(?, ?)", (fn, p)).fetchone()[0])

    f32 = [i * 0.5 for i in range(100)]
    i32 = [i * 3 - 7 for i in range(100)]
    check(rj(lay, "/plain") == f32, "layout_v5 /plain")
    check(rj(lay, "/chunked") == [f32[r * 10:r * 10 + 10] for r in range(10)], "layout_v5 /chunked")
    check(rj(lay, "/deflate") == [i32[r * 10:r * 10 + 10] for r in range(10)], "layout_v5 /deflate (layout v5)")
    check(rj(lay, "/ext") == i32, "layout_v5 /ext")
    check(rj(lay, "/ext_deflate") == f32, "layout_v5 /ext_deflate (layout v5)")
    ls = {r["path"]: r for r in rows(db, "SELECT * FROM h5_ls(?)", (lay,))}
    check(all(r["error"] is None for r in ls.values()), "layout_v5: no object has an error: %r" % ls)
    check(ls["/deflate"]["filters"] and "deflate" in ls["/deflate"]["filters"], "layout_v5 /deflate filters")
    check(rj(dt, "/comp") == [{"a": 1, "b": 1.5}, {"a": 2, "b": 2.5}, {"a": 3, "b": 3.5}], "dtype_v5 /comp")
    at = {(r["path"], r["name"]): r for r in rows(db, "SELECT * FROM h5_attrs(?)", (dt,))}
    check(all(r["error"] is None for r in at.values()), "dtype_v5: every attribute decodes: %r" % at)
    check(json.loads(at[("/comp", "cattr")]["value"]) == [{"a": 7, "b": 0.25}], "dtype_v5 cattr: %r" % at.get(("/comp", "cattr")))
    ref = at.get(("/x", "REFERENCE_LIST"), {})
    check(ref.get("dtype", "").startswith('[["dataset", "|O"], ["dimension", "<u4"]'), "REFERENCE_LIST: %r" % ref)
    # libhdf5 1.10 refuses what 2.0 wrote
    for fn, p in ((lay, "deflate"), (dt, "comp")):
        try:
            with h5py.File(fn, "r") as f:
                f[p][()]
            check(False, "libhdf5 %s read %s: the file is not version 5" % (h5py.version.hdf5_version, p))
        except (OSError, ValueError, KeyError):
            pass


def main():
    d = tempfile.mkdtemp(prefix="h5mem_wild_")
    try:
        test_fill_v1_undefined(d)
        test_attr_isolated(d)
        test_ls_error(d)
        test_uint64_exact(d)
        test_scaleoffset_damaged()
        test_hdf5_20()
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
