"""Virtual datasets (issue 21): files h5py writes with libhdf5's own VDS
machinery, read through h5_read_json, h5_ls and the h5 table exactly as
h5py (the same libhdf5) reads them.

Covered: tiles from several files and from the file itself ("."), a missing
source file (the fill value), strided and rank-changing mappings, overlapping
mappings, points and irregular hyperslab selections, sources of another
integer or float type and byte order, unlimited mappings (unlimited count
and unlimited block) whose extent follows the sources, printf-style source
names ("%b") with a gap, a virtual dataset over a virtual dataset; slices of
each.  Refused with a clear error, never fill: source files outside the
file's directory (absolute names, ".."), a virtual dataset that is its own
source, a damaged mapping block (checksum), a source of a type that cannot
be converted.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

SLICES = [None, "1:3", "::2", "2:, 1::3", "0, 4:", "-1"]


def read(db, fn, path, sel=None):
    if sel is None:
        r = db.execute("SELECT h5_read_json(?, ?)", (fn, path)).fetchone()
    else:
        r = db.execute("SELECT h5_read_json(?, ?, ?)", (fn, path, sel)).fetchone()
    return json.loads(r[0])


def np_slice(a, sel):
    if sel is None:
        return a
    idx = []
    for part in sel.split(","):
        part = part.strip()
        if ":" in part:
            idx.append(slice(*[int(x) if x else None for x in part.split(":")]))
        else:
            idx.append(int(part))
    return a[tuple(idx)]


def same_as_h5py(db, fn, path, what, slices=SLICES):
    """Shape, layout and every slice as h5py reads them."""
    with h5py.File(fn, "r") as f:
        want = f[path][()]
        shape = list(f[path].shape)
    row = db.execute("SELECT shape, layout FROM h5_ls(?) WHERE path = ?", (fn, path)).fetchone()
    check(row is not None and json.loads(row[0]) == shape and row[1] == "virtual",
          "%s: h5_ls says %r, h5py shape %r" % (what, row, shape))
    for sel in slices:
        if sel is not None and want.ndim < len(sel.split(",")):
            continue
        try:
            got = read(db, fn, path, sel)
        except sqlite3.Error as e:
            check(False, "%s [%s]: %s" % (what, sel, e))
            continue
        exp = np_slice(want, sel)
        exp = exp.tolist() if isinstance(exp, np.ndarray) else exp.item()
        # our JSON's NaN and infinities are strings
        exp = json.loads(json.dumps(exp).replace("NaN", '"NaN"').replace("-Infinity", '"-Infinity"')
                         .replace(" Infinity", ' "Infinity"'))
        check(got == exp, "%s [%s]: differs from h5py:\n got %r\nwant %r" % (what, sel, got, exp))
    return want


def src(fn, name, data, maxshape=None):
    with h5py.File(fn, "a") as f:
        f.create_dataset(name, data=data, maxshape=maxshape, chunks=True if maxshape else None)


def one_source(fn, name, n, srcfile, srcname, dtype="<i4"):
    """fn's dataset name: n elements, all of them srcfile's srcname."""
    with h5py.File(fn, "a") as f:
        lay = h5py.VirtualLayout(shape=(n,), dtype=dtype)
        lay[:] = h5py.VirtualSource(srcfile, srcname, shape=(n,))
        f.create_virtual_dataset(name, lay)


def test_tiles(d, db):
    """Four 3x4 tiles of a 6x8 dataset: two files, the file itself, and a
    file that does not exist (its tile reads as the fill value)."""
    a = np.arange(12, dtype="<i4").reshape(3, 4)
    src(os.path.join(d, "t0.h5"), "a", a)
    src(os.path.join(d, "t1.h5"), "g/b", a + 100)
    fn = os.path.join(d, "tiles.h5")
    lay = h5py.VirtualLayout(shape=(6, 8), dtype="<i4")
    lay[0:3, 0:4] = h5py.VirtualSource("t0.h5", "a", shape=(3, 4))
    lay[0:3, 4:8] = h5py.VirtualSource("t1.h5", "/g/b", shape=(3, 4))
    lay[3:6, 4:8] = h5py.VirtualSource("missing.h5", "a", shape=(3, 4))
    with h5py.File(fn, "w") as f:
        f.create_dataset("own", data=a + 200)
        lay[3:6, 0:4] = h5py.VirtualSource(".", "own", shape=(3, 4))
        f.create_virtual_dataset("v", lay, fillvalue=-7)
    want = same_as_h5py(db, fn, "/v", "tiles")
    check((want[3:, 4:] == -7).all(), "tiles: h5py fills the missing tile (oracle sanity)")
    # the h5 table over the same dataset
    db.execute("CREATE VIRTUAL TABLE temp.vt USING h5(file=%s, dataset='/v')" % q(fn))
    rows = db.execute("SELECT * FROM temp.vt").fetchall()
    check(len(rows) == 6, "h5 table over a virtual dataset: %d rows" % len(rows))
    db.execute("DROP TABLE temp.vt")


def test_strides_ranks_overlap(d, db):
    """Strided source and virtual selections, a 1-D source into a row of a
    3-D dataset, and two mappings over one region (the later one wins)."""
    s = np.arange(40, dtype="<f8") * 0.5
    src(os.path.join(d, "s.h5"), "x", s)
    src(os.path.join(d, "s.h5"), "m", np.arange(60, dtype="<f8").reshape(3, 4, 5))
    fn = os.path.join(d, "strides.h5")
    vs = h5py.VirtualSource("s.h5", "x", shape=(40,))
    lay = h5py.VirtualLayout(shape=(4, 5, 10), dtype="<f8")
    lay[0, 0, :] = vs[0:20:2]
    lay[1, 1:5, 0:10:3] = vs[3:19]
    m = h5py.VirtualSource("s.h5", "m", shape=(3, 4, 5))
    lay[2, 0:4, 5:10] = m[1, :, :]
    lay[2, 1:3, 6:9] = m[2, 0:2, 1:4]  # over part of the mapping before it
    lay[3, 2:4, 0:10] = vs[10:30]
    with h5py.File(fn, "w") as f:
        f.create_virtual_dataset("v", lay, fillvalue=np.nan)
    same_as_h5py(db, fn, "/v", "strides, ranks, overlap",
                 [None, "2", "1, 1:5, ::3", "2:, 1:3, 5:", "::3, ::2, ::4"])


def test_irregular(d, db):
    """Irregular hyperslab selections (unions of blocks) on either side,
    through the low-level property list (h5py's VirtualLayout makes only
    regular ones; libhdf5 allows no point selections in mappings)."""
    fn_s = os.path.join(d, "p_src.h5")
    src(fn_s, "p", np.arange(100, dtype="<i8").reshape(10, 10))
    fn = os.path.join(d, "points.h5")
    with h5py.File(fn, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-1, dtype="<i8"))
        vspace = h5py.h5s.create_simple((8, 8))
        # mapping 1: a 2x3 block of the source into an irregular L-shape
        sspace = h5py.h5s.create_simple((10, 10))
        sspace.select_hyperslab((4, 2), (1, 1), block=(2, 3))
        v1 = h5py.h5s.create_simple((8, 8))
        v1.select_hyperslab((0, 0), (1, 1), block=(1, 4))
        v1.select_hyperslab((1, 0), (1, 1), block=(2, 1), op=h5py.h5s.SELECT_OR)
        dcpl.set_virtual(v1, b"p_src.h5", b"p", sspace)
        # mapping 2: an irregular source (blocks side by side, one taller)
        # into another irregular shape
        s2 = h5py.h5s.create_simple((10, 10))
        s2.select_hyperslab((6, 0), (1, 1), block=(2, 2))
        s2.select_hyperslab((6, 5), (1, 1), block=(3, 1), op=h5py.h5s.SELECT_OR)
        s2.select_hyperslab((0, 8), (1, 1), block=(1, 2), op=h5py.h5s.SELECT_OR)
        v2 = h5py.h5s.create_simple((8, 8))
        v2.select_hyperslab((3, 3), (1, 1), block=(3, 2))
        v2.select_hyperslab((7, 1), (1, 1), block=(1, 3), op=h5py.h5s.SELECT_OR)
        dcpl.set_virtual(v2, b"p_src.h5", b"p", s2)
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I64LE, vspace, dcpl=dcpl)
    same_as_h5py(db, fn, "/v", "irregular", [None, "7", "1:5, ::2", "3:8, 0:8:7"])


def test_types(d, db):
    """Sources of another byte order, width and precision: converted to the
    virtual dataset's type, values out of range saturating as libhdf5's
    conversions do.  (Not where libhdf5 1.10.8 does not: converting to the
    other byte order between integers of one size and another sign, it
    wraps, <u8 2^64 - 1 reading as >i8 -1 where <i8 gives 2^63 - 1; we
    saturate either way, so that case is left out.)"""
    fn_s = os.path.join(d, "types_src.h5")
    src(fn_s, "be16", np.array([-32768, -1, 0, 1, 32767], dtype=">i2"))
    src(fn_s, "u64", np.array([0, 5, 2**31 - 1, 2**31, 2**64 - 1], dtype="<u8"))
    src(fn_s, "f4", np.array([1.5, -0.25, 3e38, np.inf, 1e-40], dtype=">f4"))
    src(fn_s, "neg", np.array([-5, -1, 0, 7, 300], dtype="<i2"))
    src(fn_s, "u64small", np.array([0, 5, 2**31, 2**40, 2**63 - 1], dtype="<u8"))
    fn = os.path.join(d, "types.h5")
    with h5py.File(fn, "w") as f:
        for name, dt, s in [("i4_from_be16", "<i4", "be16"), ("i4_from_u64", "<i4", "u64"),
                            ("f8_from_f4", "<f8", "f4"), ("u1_from_i2", "u1", "neg"),
                            ("be8_from_u64", ">i8", "u64small")]:
            lay = h5py.VirtualLayout(shape=(5,), dtype=dt)
            lay[:] = h5py.VirtualSource("types_src.h5", s, shape=(5,))
            f.create_virtual_dataset(name, lay)
    for name in ["i4_from_be16", "i4_from_u64", "f8_from_f4", "u1_from_i2", "be8_from_u64"]:
        same_as_h5py(db, fn, "/" + name, "types " + name, [None, "1:4"])
    # a type no conversion reaches: an error naming the source, never fill
    src(fn_s, "str", np.array([b"ab", b"cd"], dtype="S2"))
    fn2 = os.path.join(d, "types_bad.h5")
    one_source(fn2, "v", 2, "types_src.h5", "str")
    expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(fn2), "cannot be converted")


def unlimited_vds(fn, fixed, maps, rows=0):
    """A virtual dataset of shape (0,) + fixed, unlimited in dimension 0:
    maps are (file, vstart, vstride, vcount, vblock, sstart, sstride,
    scount, sblock); the source datasets are "frames"."""
    U = h5py.h5s.UNLIMITED
    with h5py.File(fn, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_fill_value(np.array(-1, dtype="<i4"))
        for (sf, vst, vsd, vc, vb, sst, ssd, sc, sb) in maps:
            vspace = h5py.h5s.create_simple((0,) + fixed, (U,) + fixed)
            vspace.select_hyperslab(vst, vc, stride=vsd, block=vb)
            sspace = h5py.h5s.create_simple((0,) + fixed, (U,) + fixed)
            sspace.select_hyperslab(sst, sc, stride=ssd, block=sb)
            dcpl.set_virtual(vspace, sf.encode(), b"frames", sspace)
        space = h5py.h5s.create_simple((rows,) + fixed, (U,) + fixed)
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_I32LE, space, dcpl=dcpl)


def test_unlimited(d, db):
    """Mappings that grow with their sources: an unlimited block (a source
    appended to), an unlimited count (interleaved frames); the extent is
    the furthest any source reaches (libhdf5's default view)."""
    for i, n in enumerate([5, 3, 7]):
        src(os.path.join(d, "u%d.h5" % i), "frames", np.full((n, 2, 3), 10 * i + 1, dtype="<i4")
            + np.arange(n, dtype="<i4")[:, None, None], maxshape=(None, 2, 3))
    U = h5py.h5s.UNLIMITED
    # blocks: source i's frames stacked in columns i*3 .. i*3+2
    fn = os.path.join(d, "unlim_block.h5")
    unlimited_vds(fn, (2, 9), [("u%d.h5" % i, (0, 0, 3 * i), (1, 1, 1), (1, 1, 1), (U, 2, 3),
                                (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3)) for i in range(3)])
    want = same_as_h5py(db, fn, "/v", "unlimited block", [None, "5:", "::2, 1, ::4"])
    check(want.shape[0] == 7, "unlimited block: h5py's extent %r (oracle sanity)" % (want.shape,))
    # interleaved: frame j of source i at row 3*j + i (an unlimited count)
    fn = os.path.join(d, "unlim_count.h5")
    unlimited_vds(fn, (2, 3), [("u%d.h5" % i, (i, 0, 0), (3, 1, 1), (U, 1, 1), (1, 2, 3),
                                (0, 0, 0), (1, 1, 1), (U, 1, 1), (1, 2, 3)) for i in range(3)])
    want = same_as_h5py(db, fn, "/v", "unlimited count", [None, "4:17", "::5"])
    check(want.shape[0] == 21, "unlimited count: h5py's extent %r (oracle sanity)" % (want.shape,))
    # a source whose selection is unlimited in its count, into an unlimited
    # block, and one with a partial last block
    fn = os.path.join(d, "unlim_mixed.h5")
    unlimited_vds(fn, (2, 3), [("u2.h5", (1, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3),
                                (0, 0, 0), (2, 1, 1), (U, 1, 1), (1, 2, 3)),
                               ("u0.h5", (0, 0, 0), (5, 1, 1), (U, 1, 1), (2, 2, 3),
                                (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3))])
    same_as_h5py(db, fn, "/v", "unlimited, mixed", [None, "1::2"])
    # a fixed mapping ending below row 12 keeps the extent there although
    # the unlimited one reaches row 5 only (stored: 12, which libhdf5
    # requires at creation); a source that does not exist
    fn = os.path.join(d, "unlim_min.h5")
    unlimited_vds(fn, (2, 3), [("u0.h5", (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3),
                                (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3)),
                               ("u1.h5", (9, 0, 0), (1, 1, 1), (1, 1, 1), (3, 2, 3),
                                (0, 0, 0), (1, 1, 1), (1, 1, 1), (3, 2, 3)),
                               ("nowhere.h5", (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3),
                                (0, 0, 0), (1, 1, 1), (1, 1, 1), (U, 2, 3))], rows=12)
    want = same_as_h5py(db, fn, "/v", "unlimited with a fixed mapping beyond it", [None, "4:10"])
    check(want.shape[0] == 12, "fixed beyond unlimited: h5py's extent %r (oracle sanity)" % (want.shape,))
    # a source grows: the extent follows on the next open
    with h5py.File(os.path.join(d, "u1.h5"), "a") as f:
        f["frames"].resize((9, 2, 3))
        f["frames"][3:] = 99
    db2 = connect()
    same_as_h5py(db2, fn, "/v", "unlimited count after a source grew", [None])
    db2.close()


def test_printf(d, db):
    """"%b" names: block b of the virtual selection from file p-b.h5; the
    blocks end at the first missing file (p-2.h5), as libhdf5's default
    printf gap of 0 has it."""
    for i in [0, 1, 3]:
        src(os.path.join(d, "p-%d.h5" % i), "data", np.full((2, 4), i, dtype="<u2"))
    fn = os.path.join(d, "printf.h5")
    with h5py.File(fn, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        vspace = h5py.h5s.create_simple((0, 4), (h5py.h5s.UNLIMITED, 4))
        vspace.select_hyperslab((0, 0), (h5py.h5s.UNLIMITED, 1), stride=(2, 1), block=(2, 4))
        sspace = h5py.h5s.create_simple((2, 4))
        dcpl.set_virtual(vspace, b"p-%b.h5", b"data", sspace)
        h5py.h5d.create(f.id, b"v", h5py.h5t.STD_U16LE, vspace, dcpl=dcpl)
    want = same_as_h5py(db, fn, "/v", "printf", [None, "1:3", "3"])
    check(want.shape == (4, 4), "printf: h5py's extent %r (oracle sanity)" % (want.shape,))


def test_strings(d, db):
    """Variable-length strings from the file itself (their heap is this
    file's) read as h5py reads them; from another file they are refused
    (their heap references point into that file), as docs/H5.md says."""
    fn = os.path.join(d, "strings.h5")
    words = np.array(["alpha", "beta", "gamma", "délta"], dtype=h5py.string_dtype())
    with h5py.File(fn, "w") as f:
        f.create_dataset("w", data=words)
        lay = h5py.VirtualLayout(shape=(6,), dtype=h5py.string_dtype())
        lay[1:5] = h5py.VirtualSource(".", "w", shape=(4,))
        f.create_virtual_dataset("v", lay)
    got = read(db, fn, "/v")
    with h5py.File(fn, "r") as f:
        want = [x.decode() if isinstance(x, bytes) else x for x in f["v"][()].tolist()]
    check(got[1:5] == want[1:5] == ["alpha", "beta", "gamma", "délta"],
          "strings from the file itself: %r, h5py %r" % (got, want))
    other = os.path.join(d, "strings_other.h5")
    one_source(other, "v", 4, "strings.h5", "w", dtype=h5py.string_dtype())
    expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(other), "variable-length data or references from another file")


def lookup3(data, init=0):
    """Bob Jenkins' hashlittle, HDF5's metadata checksum."""
    M = 0xFFFFFFFF

    def rot(x, k):
        return ((x << k) | (x >> (32 - k))) & M

    a = b = c = (0xDEADBEEF + len(data) + init) & M
    i, n = 0, len(data)
    while n > 12:
        a = (a + int.from_bytes(data[i:i + 4], "little")) & M
        b = (b + int.from_bytes(data[i + 4:i + 8], "little")) & M
        c = (c + int.from_bytes(data[i + 8:i + 12], "little")) & M
        a = (a - c) & M; a ^= rot(c, 4); c = (c + b) & M
        b = (b - a) & M; b ^= rot(a, 6); a = (a + c) & M
        c = (c - b) & M; c ^= rot(b, 8); b = (b + a) & M
        a = (a - c) & M; a ^= rot(c, 16); c = (c + b) & M
        b = (b - a) & M; b ^= rot(a, 19); a = (a + c) & M
        c = (c - b) & M; c ^= rot(b, 4); b = (b + a) & M
        i += 12
        n -= 12
    if n == 0:
        return c
    tail = data[i:] + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & M
    b = (b + int.from_bytes(tail[4:8], "little")) & M
    c = (c + int.from_bytes(tail[8:12], "little")) & M
    c ^= b; c = (c - rot(b, 14)) & M
    a ^= c; a = (a - rot(c, 11)) & M
    b ^= a; b = (b - rot(a, 25)) & M
    c ^= b; c = (c - rot(b, 16)) & M
    a ^= c; a = (a - rot(c, 4)) & M
    b ^= a; b = (b - rot(a, 14)) & M
    c ^= b; c = (c - rot(b, 24)) & M
    return c


def test_block_v1(d, db):
    """HDF5 2.0's version 1 mapping block (shared names, "the same file"),
    from the format specification 4.0 (libhdf5 1.10 writes version 0 and
    h5wasm can make no virtual dataset): a version 0 block h5py wrote,
    re-encoded as version 1, must read as the original does."""
    a = np.arange(6, dtype="<i4").reshape(2, 3)
    src(os.path.join(d, "v1src.h5"), "a", a)
    fn = os.path.join(d, "v1.h5")
    lay = h5py.VirtualLayout(shape=(6, 3), dtype="<i4")
    lay[0:2] = h5py.VirtualSource("v1src.h5", "a", shape=(2, 3))
    lay[2:4] = h5py.VirtualSource("v1src.h5", "a", shape=(2, 3))
    with h5py.File(fn, "w") as f:
        f.create_dataset("own", data=a * 10)
        lay[4:6] = h5py.VirtualSource(".", "own", shape=(2, 3))
        f.create_virtual_dataset("v", lay, fillvalue=-1)
    want = same_as_h5py(db, fn, "/v", "block v0 (before re-encoding)", [None])
    raw = bytearray(open(fn, "rb").read())
    g = raw.find(b"GCOL")
    o = g + 16
    size = int.from_bytes(raw[o + 8:o + 16], "little")
    blk = bytes(raw[o + 16:o + 16 + size])
    check(blk[0] == 0 and int.from_bytes(raw[o + 16 + ((size + 7) & ~7):][:2], "little") == 0,
          "one version 0 block in the collection")
    # split the v0 entries: names, then two selections of known lengths
    n = int.from_bytes(blk[1:9], "little")
    at, ents = 9, []
    for _ in range(n):
        fname = blk[at:blk.index(b"\0", at)]
        at += len(fname) + 1
        dname = blk[at:blk.index(b"\0", at)]
        at += len(dname) + 1
        sels = []
        for _ in range(2):
            t, ver = int.from_bytes(blk[at:at + 4], "little"), int.from_bytes(blk[at + 4:at + 8], "little")
            if t == 3:
                ln = 16
            elif ver == 1:
                ln = 16 + int.from_bytes(blk[at + 12:at + 16], "little")
            else:  # version 2, regular: 8-byte fields
                rank = int.from_bytes(blk[at + 13:at + 17], "little")
                ln = 17 + 32 * rank
            sels.append(blk[at:at + ln])
            at += ln
        ents.append((fname, dname, sels))
    check(at + 4 == size and [e[0] for e in ents] == [b"v1src.h5", b"v1src.h5", b"."],
          "the v0 block parsed (%d of %d bytes): %r" % (at + 4, size, [e[0] for e in ents]))
    out = bytearray([1]) + n.to_bytes(8, "little")
    for i, (fname, dname, sels) in enumerate(ents):
        if fname == b".":
            out += bytes([4]) + dname + b"\0"
        elif i == 1:  # both names shared with mapping 0
            out += bytes([3]) + (0).to_bytes(8, "little") + (0).to_bytes(8, "little")
        else:
            out += bytes([0]) + fname + b"\0" + dname + b"\0"
        out += sels[0] + sels[1]
    out += lookup3(bytes(out)).to_bytes(4, "little")
    pad = (len(out) + 7) & ~7
    old = (size + 7) & ~7
    free_hdr = raw[o + 16 + old:o + 16 + old + 16]
    free_size = int.from_bytes(free_hdr[8:16], "little")
    raw[o + 8:o + 16] = len(out).to_bytes(8, "little")
    raw[o + 16:o + 16 + old] = bytes(out) + bytes(old - len(out))
    # the free space object moves up to just after the shorter block
    raw[o + 16 + pad:o + 16 + pad + 16] = bytes(8) + (free_size + old - pad).to_bytes(8, "little")
    fn1 = os.path.join(d, "v1_block.h5")
    open(fn1, "wb").write(bytes(raw))
    got = read(db, fn1, "/v")
    check(got == want.tolist(), "version 1 block: %r, want %r" % (got, want.tolist()))
    # a shared name naming a later mapping: refused
    bad = bytearray(raw)
    at = bad.find(bytes([3]) + bytes(16), o + 16)
    bad[at + 1] = 2
    body = bytes(bad[o + 16:o + 16 + len(out) - 4])
    bad[o + 16 + len(out) - 4:o + 16 + len(out)] = lookup3(body).to_bytes(4, "little")
    fn2 = os.path.join(d, "v1_bad.h5")
    open(fn2, "wb").write(bytes(bad))
    expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(fn2), "not an earlier one")


def test_nested(d, db):
    """A virtual dataset whose source is a virtual dataset."""
    fn = os.path.join(d, "nested.h5")
    lay = h5py.VirtualLayout(shape=(2, 6, 8), dtype="<i4")
    lay[0] = h5py.VirtualSource("tiles.h5", "v", shape=(6, 8))
    lay[1, ::2, :] = h5py.VirtualSource("tiles.h5", "v", shape=(6, 8))[1::2, :]
    with h5py.File(fn, "w") as f:
        f.create_virtual_dataset("v", lay, fillvalue=3)
    same_as_h5py(db, fn, "/v", "nested", [None, "1, 2:"])


def test_refused(d, db):
    """Sources outside the directory, a dataset that is its own source, a
    damaged mapping block: errors that say so."""
    os.makedirs(os.path.join(d, "sub"))
    src(os.path.join(d, "outside.h5"), "a", np.arange(4, dtype="<i4"))
    for name, target in [("abs", os.path.join(d, "outside.h5")), ("up", "../outside.h5")]:
        fn = os.path.join(d, "sub", name + ".h5")
        one_source(fn, "v", 4, target, "a")
        with h5py.File(fn, "r") as f:
            check(list(f["v"][()]) == [0, 1, 2, 3], "%s: h5py reads it (oracle sanity)" % name)
        expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(fn), "outside the HDF5 file's directory")
    fn = os.path.join(d, "self.h5")
    one_source(fn, "v", 4, ".", "v")
    expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(fn), "its own source")
    # a damaged mapping block: flip a byte of a source name
    good = os.path.join(d, "tiles.h5")
    data = bytearray(open(good, "rb").read())
    at = data.find(b"t1.h5\x00")
    check(at > 0, "the mapping block holds the source name")
    data[at] ^= 0x20
    bad = os.path.join(d, "tiles_bad.h5")
    open(bad, "wb").write(bytes(data))
    expect_error(db, "SELECT h5_read_json(%s, '/v')" % q(bad), "checksum")


def test_committed_seed(db):
    """test/data/vds/self_maps.h5 (the fuzzer's seed: every source in the
    file itself) reads as h5py reads it."""
    fn = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "vds",
                      "self_maps.h5")
    for name in ["tiles", "unlim", "interleave", "frames", "nested"]:
        same_as_h5py(db, fn, "/" + name, "self_maps.h5 " + name, [None, "1::2", "-1"])


def main():
    d = tempfile.mkdtemp(prefix="h5mem_vds_")
    db = connect()
    try:
        test_tiles(d, db)
        test_strides_ranks_overlap(d, db)
        test_irregular(d, db)
        test_types(d, db)
        test_unlimited(d, db)
        test_printf(d, db)
        test_strings(d, db)
        test_block_v1(d, db)
        test_nested(d, db)
        test_refused(d, db)
        test_committed_seed(db)
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
