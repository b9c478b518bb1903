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
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

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


def test_writing(d, db):
    """The h5 table writes zstd (filter 32015) and blosc (32001) chunks:
    h5py reads the blosc ones through Debian's plugin (and the zstd ones
    through python3-zstandard, chunk by chunk: Debian has no HDF5 zstd
    plugin), our reader reads both, rows appended in a later transaction
    (the file reopened for appending) land in chunks of the same codec, and
    a blosc dataset h5py wrote takes appended rows.  Settings out of range
    are errors.  (test_h5wasm.js has libhdf5 1.14 and 2.0 read such files
    with the h5wasm-plugins package's filters.)"""
    import h5py
    try:
        import hdf5plugin  # noqa: F401  (h5py finds Debian's plugins through it)
    except ImportError:
        pass
    from h5py import h5z
    fn = os.path.join(d, "written.h5")
    variants = [("zstd3", "compression='zstd'"), ("zstd19s", "compression='zstd:19', shuffle=1"),
                ("blosc", "compression='blosc'"), ("bloscz", "compression='blosc:zstd:7', shuffle=0"),
                ("blosclz", "compression='blosc:blosclz:9', shuffle=2"),
                ("bloschc", "compression='blosc:lz4hc:3'"), ("bloscli", "compression='blosc:zlib:1'")]
    n = 700
    rows = [(i, i * 0.25 - 40.0, "row %d" % i) for i in range(n)]
    vecs = (np.arange(n * 6, dtype="<f4").reshape(n, 6) * np.float32(0.37)) % np.float32(11.0)
    for name, opts in variants:
        try:
            db.execute("CREATE VIRTUAL TABLE temp.w_%s USING h5(file=%s, dataset='/%s', schema='x int32, "
                       "y float64, s text', chunk=64, %s)" % (name, q(fn), name, opts))
            db.execute("CREATE VIRTUAL TABLE temp.f_%s USING h5(file=%s, dataset='/%s_f', "
                       "schema='value float32[6]', chunk=50, %s)" % (name, q(fn), name, opts))
        except sqlite3.Error as e:
            if "this build has no" in str(e):
                skipped.append("writing %s: %s" % (name, e))
                continue
            raise
        for lo, hi in ((0, 300), (300, n)):  # (one table of a file per transaction)
            db.execute("BEGIN")
            db.executemany("INSERT INTO temp.w_%s(x, y, s) VALUES (?, ?, ?)" % name, rows[lo:hi])
            db.execute("COMMIT")
            db.execute("BEGIN")
            db.executemany("INSERT INTO temp.f_%s(value) VALUES (?)" % name,
                           [(vecs[i].tobytes(),) for i in range(lo, hi)])
            db.execute("COMMIT")
        db.execute("DROP TABLE temp.w_%s" % name)
        db.execute("DROP TABLE temp.f_%s" % name)

    def ids(ds):
        pl = ds.id.get_create_plist()
        return [pl.get_filter(i)[0] for i in range(pl.get_nfilters())]

    with h5py.File(fn, "r") as f:
        names = [k for k in f if not k.endswith("_f")]
        for k in names:
            fid = ids(f[k])
            got = json.loads(db.execute("SELECT h5_read_json(?, ?)", (fn, "/" + k)).fetchone()[0])
            check([[r["x"], r["y"], r["s"]] for r in got] == [list(r) for r in rows],
                  "%s: our reader reads back the rows we wrote" % k)
            got = json.loads(db.execute("SELECT h5_read_json(?, ?)", (fn, "/" + k + "_f")).fetchone()[0])
            check(got == vecs.tolist(), "%s_f: our reader reads back the vectors we wrote" % k)
            if 32001 in fid:
                if not h5z.filter_avail(32001):
                    skipped.append("blosc: h5py's libhdf5 finds no blosc plugin to read ours")
                    continue
                v = f[k][()]
                check([(int(a), float(b), c.decode()) for a, b, c in v] == rows,
                      "%s: h5py (Debian's blosc plugin) reads the rows we wrote" % k)
                check(np.array_equal(f[k + "_f"][()], vecs), "%s_f: h5py reads the vectors we wrote" % k)
            elif 32015 in fid:
                try:
                    import zstandard
                except ImportError:
                    skipped.append("python3-zstandard is not installed: our zstd chunks not checked by it")
                    continue
                ds = f[k + "_f"]
                raw = b""
                for c in range(ds.id.get_num_chunks()):
                    info = ds.id.get_chunk_info(c)
                    mask, chunk = ds.id.read_direct_chunk(info.chunk_offset)
                    check(mask == 0, "%s: every chunk filtered" % k)
                    b = zstandard.ZstdDecompressor().decompress(chunk, max_output_size=1 << 20)
                    if 2 in fid:  # HDF5's shuffle first
                        b = np.frombuffer(b, "u1").reshape(4, -1).T.tobytes()
                    raw += b
                v = np.frombuffer(raw, "<f4").reshape(-1, 6)[:n]
                check(np.array_equal(v, vecs), "%s_f: python3-zstandard decodes our chunks to the vectors" % k)
    check(len(names) == len(variants) - len([s for s in skipped if s.startswith("writing")]),
          "every variant written: %r" % names)
    # appending to a blosc dataset h5py wrote (hdf5plugin's Blosc)
    if h5z.filter_avail(32001):
        import hdf5plugin
        fh = os.path.join(d, "h5py_blosc.h5")
        with h5py.File(fh, "w", libver="latest") as f:
            f.create_dataset("v", data=np.arange(100, dtype="<i8"), maxshape=(None,), chunks=(32,),
                             **hdf5plugin.Blosc(cname="zstd", clevel=4, shuffle=2))
        db.execute("CREATE VIRTUAL TABLE temp.app USING h5(file=%s, dataset='/v')" % q(fh))
        db.executemany("INSERT INTO temp.app(value) VALUES (?)", [(i,) for i in range(100, 150)])
        db.execute("DROP TABLE temp.app")
        with h5py.File(fh, "r") as f:
            check(f["v"][()].tolist() == list(range(150)), "h5py reads the rows we appended to its blosc dataset")
            check(f["v"]._filters.get("32001", (0,) * 7)[4:] == (4, 2, 5), "the appended chunks keep blosc's settings")
    for opts, word in [("compression='zstd:23'", "expected none, deflate"),
                       ("compression='blosc:snappy'", "expected none, deflate"),
                       ("compression='blosc:10'", "expected none, deflate"),
                       ("compression='deflate', shuffle=2", "bit shuffle"),
                       ("shuffle=1", "without compression")]:
        expect_error(db, "CREATE VIRTUAL TABLE temp.bad USING h5(file=%s, dataset='/bad', schema='x int32', %s)"
                     % (q(os.path.join(d, "bad.h5")), opts), word)


def main():
    d = tempfile.mkdtemp(prefix="h5mem_codecs_")
    db = connect()
    try:
        test_h5py_codecs(d, db)
        test_pytables(d, db)
        test_zstd(d, db)
        test_writing(d, db)
    finally:
        shutil.rmtree(d)
    for s in sorted(set(skipped)):
        print("SKIP:", s)
    finish()


if __name__ == "__main__":
    main()
