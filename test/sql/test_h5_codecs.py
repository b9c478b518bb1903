"""The compression filters of files in the wild (issue 21), decoded by their
own libraries: szip (libaec), lzo (PyTables' framing), bzip2, blosc (every
compressor blosc 1 has, byte and bit shuffle), lz4 (the HDF5 LZ4 plugin's
framing), zstd.

Files are written at test time by the programs people use:
- h5py (Debian's libhdf5, which has szip) for szip;
- h5py with Debian's filter plugins (hdf5-filter-plugin: lz4, bzip2;
  hdf5-filter-plugin-blosc-serial: blosc) through hdf5plugin's classes;
- PyTables (python3-tables) for lzo, and for its own blosc and bzip2;
- zstd chunks made by python3-zstandard and written raw with h5py's
  write_direct_chunk (Debian 12 ships no HDF5 zstd plugin).
Every dataset (integers and floats, big- and little-endian, 1-D to 3-D,
partial edge chunks) reads through h5_read_json exactly as h5py (or
PyTables) reads it, h5_ls names each filter, and a chunk whose bytes are
damaged gives an error naming the codec, never a crash or a wrong value.
A codec this build lacks (its library missing at configure time) must say
so in its error ("this build has no ..."): the test then skips that codec,
saying why.  A writer Debian lacks is skipped likewise.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, finish  # noqa: E402

skipped = []


def data(kind, shape):
    rng = np.random.default_rng(21)
    n = int(np.prod(shape))
    if kind == "i2":
        return (rng.integers(-300, 300, n)).astype(">i2").reshape(shape)
    if kind == "u1":
        return (np.arange(n) % 7).astype("u1").reshape(shape)
    if kind == "f4":
        return np.cumsum(rng.standard_normal(n)).astype("<f4").reshape(shape)
    return np.linspace(-1e3, 1e3, n).astype("<f8").reshape(shape)


DATASETS = [("i2", (1000,), (128,)), ("f4", (50, 37), (16, 10)), ("f8", (9, 8, 7), (4, 4, 4)),
            ("u1", (3000,), (1000,))]


def as_json(a):
    return json.loads(json.dumps(a.tolist()))


def compare(db, fn, path, want, codec):
    try:
        got = json.loads(db.execute("SELECT h5_read_json(?, ?)", (fn, path)).fetchone()[0])
    except sqlite3.Error as e:
        msg = str(e)
        if "this build has no" in msg:
            skipped.append("%s: %s" % (codec, msg))
            return False
        check(False, "%s %s: %s" % (codec, path, msg))
        return False
    check(got == as_json(want), "%s %s: h5_read_json differs from the writer's data" % (codec, path))
    return True


def filters(db, fn, path):
    r = db.execute("SELECT filters FROM h5_ls(?) WHERE path = ?", (fn, path)).fetchone()
    return [x["name"] for x in json.loads(r[0])] if r and r[0] else []


def damaged(db, fn, path, codec, chunk_index=0):
    """Flip bytes in the middle of one stored chunk: an error, never data."""
    import h5py
    with h5py.File(fn, "r") as f:
        info = f[path].id.get_chunk_info(chunk_index)
    b = bytearray(open(fn, "rb").read())
    mid = info.byte_offset + info.size // 2
    for k in range(mid, min(mid + 8, info.byte_offset + info.size)):
        b[k] ^= 0x5A
    bad = fn + ".bad.h5"
    open(bad, "wb").write(bytes(b))
    try:
        db.execute("SELECT h5_read_json(?, ?)", (bad, path)).fetchone()
        # a stream may survive a flip (stored blocks, slack bytes): then the
        # values must still be what the damaged bytes decode to, which the
        # writer cannot tell us; only a crash or hang is a failure here
    except sqlite3.Error as e:
        check(codec in str(e) or "decode" in str(e) or "checksum" in str(e),
              "%s damaged %s: the error names the codec: %s" % (codec, path, e))


def test_h5py_codecs(d, db):
    import h5py
    try:
        import hdf5plugin
    except ImportError:
        hdf5plugin = None
    from h5py import h5z
    variants = [("szip", lambda: {"compression": "szip", "compression_opts": ("nn", 16)}, 4, "szip")]
    if hdf5plugin:
        variants += [("lz4", lambda: dict(hdf5plugin.LZ4(nbytes=1024)), hdf5plugin.LZ4_ID, "lz4"),
                     ("lz4", lambda: dict(hdf5plugin.LZ4()), hdf5plugin.LZ4_ID, "lz4"),
                     ("bzip2", lambda: dict(hdf5plugin.BZip2(blocksize=5)), hdf5plugin.BZIP2_ID, "bzip2")]
        for cname in ("blosclz", "lz4", "lz4hc", "zlib", "zstd"):
            for shuffle in (0, 1, 2):
                variants.append(("blosc", (lambda c=cname, s=shuffle: dict(hdf5plugin.Blosc(cname=c, clevel=5,
                                                                                             shuffle=s))),
                                 hdf5plugin.BLOSC_ID, "blosc"))
    else:
        skipped.append("hdf5plugin (python3-hdf5plugin) is not installed: lz4, bzip2, blosc files not made")
    for n, (codec, opts, fid, name) in enumerate(variants):
        if not h5z.filter_avail(fid):
            skipped.append("%s: h5py's libhdf5 has no filter %d to write it" % (codec, fid))
            continue
        fn = os.path.join(d, "%s_%d.h5" % (codec, n))
        with h5py.File(fn, "w") as f:
            for kind, shape, chunks in DATASETS:
                if codec == "szip" and kind == "u1":
                    continue
                f.create_dataset(kind, data=data(kind, shape), chunks=chunks, **opts())
        with h5py.File(fn, "r") as f:
            want = {k: f[k][()] for k in f}
        for k, v in want.items():
            check(np.array_equal(v, data(k, v.shape)), "%s: h5py reads back what it wrote" % codec)
            if compare(db, fn, "/" + k, v, codec):
                check(name in filters(db, fn, "/" + k), "%s: h5_ls names the filter: %s" % (codec, filters(db, fn, "/" + k)))
        if n in (0, 1, 3, 4):
            damaged(db, fn, "/f4", codec)


def test_pytables(d, db):
    try:
        import tables
    except ImportError:
        skipped.append("PyTables (python3-tables) is not installed: lzo files not made")
        return
    for complib in ("lzo", "blosc", "blosc:lz4", "blosc:zstd", "bzip2"):
        if tables.which_lib_version(complib.split(":")[0]) is None:
            skipped.append("PyTables has no %s" % complib)
            continue
        fn = os.path.join(d, "pt_%s.h5" % complib.replace(":", "_"))
        filt = tables.Filters(complevel=5, complib=complib, shuffle=complib != "lzo")
        want = {}
        with tables.open_file(fn, "w") as h:
            for kind, shape, chunks in DATASETS:
                a = data(kind, shape)
                h.create_carray("/", "c_" + kind, obj=a, filters=filt, chunkshape=chunks)
                want["/c_" + kind] = a
            e = h.create_earray("/", "e", tables.Float64Atom(), (0, 5), filters=filt, chunkshape=(64, 5))
            a = data("f8", (1000, 5))
            e.append(a)
            want["/e"] = a
            t = h.create_table("/", "t", {"x": tables.Int32Col(pos=0), "y": tables.Float64Col(pos=1)},
                               filters=filt, chunkshape=100)
            rows = np.zeros(777, dtype=[("x", "<i4"), ("y", "<f8")])
            rows["x"] = np.arange(777)
            rows["y"] = np.arange(777) * 0.25
            t.append(rows)
        with tables.open_file(fn, "r") as h:  # PyTables reads its own file
            for p, a in want.items():
                check(np.array_equal(h.get_node(p)[:], a), "PyTables %s reads back %s" % (complib, p))
        for p, a in want.items():
            compare(db, fn, p, a, complib.split(":")[0])
        try:
            got = json.loads(db.execute("SELECT h5_read_json(?, '/t')", (fn,)).fetchone()[0])
            check(got == [{"x": int(r[0]), "y": float(r[1])} for r in rows],
                  "PyTables %s table: %s..." % (complib, str(got)[:80]))
        except sqlite3.Error as e:
            if "this build has no" in str(e):
                skipped.append("%s table: %s" % (complib, e))
            else:
                check(False, "PyTables %s table: %s" % (complib, e))
        if complib == "lzo":
            check("lzo" in filters(db, fn, "/c_f4"), "h5_ls names lzo: %s" % filters(db, fn, "/c_f4"))
            damaged(db, fn, "/c_f4", "lzo")


def test_zstd(d, db):
    try:
        import zstandard
    except ImportError:
        skipped.append("python3-zstandard is not installed: zstd files not made")
        return
    import h5py
    from h5py import h5d, h5p, h5s, h5t, h5z
    fn = os.path.join(d, "zstd.h5")
    want = data("f8", (100, 10))
    with h5py.File(fn, "w") as f:
        for name, level, chunk in (("z3", 3, 30), ("z19", 19, 7), ("zraw", 1, 100)):
            dcpl = h5p.create(h5p.DATASET_CREATE)
            dcpl.set_chunk((chunk, 10))
            dcpl.set_filter(32015, h5z.FLAG_OPTIONAL, (level,))
            ds = h5py.Dataset(h5d.create(f.id, name.encode(), h5t.IEEE_F64LE, h5s.create_simple((100, 10)),
                                         dcpl=dcpl))
            # (zraw: written without the content size in the frame header)
            c = zstandard.ZstdCompressor(level=level, write_content_size=name != "zraw")
            for r in range(0, 100, chunk):
                blk = np.zeros((chunk, 10), "<f8")
                part = want[r:r + chunk]
                blk[:len(part)] = part
                ds.id.write_direct_chunk((r, 0), c.compress(blk.tobytes()), 0)
    for name in ("z3", "z19", "zraw"):
        if compare(db, fn, "/" + name, want, "zstd"):
            check(filters(db, fn, "/" + name) == ["zstd"], "h5_ls names zstd")
    damaged(db, fn, "/z3", "zstd")


def main():
    d = tempfile.mkdtemp(prefix="h5mem_codecs_")
    db = connect()
    try:
        test_h5py_codecs(d, db)
        test_pytables(d, db)
        test_zstd(d, db)
    finally:
        shutil.rmtree(d)
    for s in sorted(set(skipped)):
        print("SKIP:", s)
    finish()


if __name__ == "__main__":
    main()
