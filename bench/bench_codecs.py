"""Decode speed of the HDF5 codecs of other libraries (lib/h5/h5_codec.c):
one dataset per codec, read whole by lib/h5, by libhdf5's C API (with
Debian's filter plugins) and by h5py, from the same file, in one run.

  make bench/bench_h5 && /usr/bin/python3 bench/bench_codecs.py [--mb 64] [--reps 7]

run from the build directory.  The data: float32, 4096 columns, rows
enough for --mb megabytes, a smooth signal plus noise (compresses 2-4x, as
measurements do); chunks of 64 rows (1 MiB).  Files are written by h5py
with hdf5plugin's filter classes over Debian's plugins (szip by libhdf5
itself; lzo by PyTables; zstd chunks by python3-zstandard through
write_direct_chunk, as Debian 12 has no HDF5 zstd plugin: libhdf5 and h5py
cannot read that file, their cells say so; h5py reads the lzo file through
the filter PyTables registers in this process).  lib/h5 and libhdf5 time in
bench_h5 (--read: open, read the dataset whole, close; alternating; median
of --reps; the output buffer allocated once); h5py the same in this
process (`File(fn)["d"].read_direct(buf)` into one array kept across
reads, median of --reps after one warm-up: a fresh array per read would
time this VM's page faults, 10x the decoding).  Both C sides return the same bytes (checked
by bench_h5 before timing).  MB/s counts decoded bytes.
"""
import argparse
import os
import platform
import re
import statistics
import subprocess
import tempfile
import time

import h5py
import numpy as np

from benchutil import git_commit

BUILD = os.getcwd()
SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make(d, mb):
    import hdf5plugin
    rows = max(64, mb * 1024 * 1024 // (4096 * 4))
    rng = np.random.default_rng(4)
    t = np.linspace(0, 60, 4096, dtype=np.float32)
    a = np.empty((rows, 4096), "<f4")
    for r in range(rows):
        a[r] = np.sin(t + r * 0.01) * 100 + rng.standard_normal(4096).astype("<f4")
    a = np.round(a, 2)
    files = []

    def h5py_file(name, label, **opts):
        fn = os.path.join(d, name + ".h5")
        with h5py.File(fn, "w") as f:
            f.create_dataset("d", data=a, chunks=(64, 4096), **opts)
        files.append((label, fn))

    h5py_file("deflate", "deflate 6 + shuffle (for scale)", compression="gzip", compression_opts=6, shuffle=True)
    h5py_file("szip", "szip (nn, 32)", compression="szip", compression_opts=("nn", 32))
    h5py_file("bzip2", "bzip2 (9)", **hdf5plugin.BZip2(blocksize=9))
    h5py_file("lz4", "lz4 (1 GiB blocks)", **hdf5plugin.LZ4())
    h5py_file("blosc_lz4", "blosc lz4 5 + shuffle", **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=1))
    h5py_file("blosc_zstd", "blosc zstd 5 + bitshuffle", **hdf5plugin.Blosc(cname="zstd", clevel=5, shuffle=2))
    try:
        import tables
        fn = os.path.join(d, "lzo.h5")
        with tables.open_file(fn, "w") as h:
            h.create_carray("/", "d", obj=a, filters=tables.Filters(5, "lzo", shuffle=True), chunkshape=(64, 4096))
        files.append(("lzo + shuffle (PyTables)", fn))
    except ImportError:
        pass
    try:
        import zstandard
        from h5py import h5d, h5p, h5s, h5t, h5z
        fn = os.path.join(d, "zstd.h5")
        with h5py.File(fn, "w") as f:
            dcpl = h5p.create(h5p.DATASET_CREATE)
            dcpl.set_chunk((64, 4096))
            dcpl.set_filter(32015, h5z.FLAG_OPTIONAL, (3,))
            ds = h5py.Dataset(h5d.create(f.id, b"d", h5t.IEEE_F32LE, h5s.create_simple(a.shape), dcpl=dcpl))
            c = zstandard.ZstdCompressor(level=3)
            for r in range(0, rows, 64):
                blk = np.zeros((64, 4096), "<f4")
                blk[:min(64, rows - r)] = a[r:r + 64]
                ds.id.write_direct_chunk((r, 0), c.compress(blk.tobytes()), 0)
        files.append(("zstd 3 (no plugin in Debian 12)", fn))
    except ImportError:
        pass
    return a.nbytes, files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=64)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    commit = git_commit(SRCDIR)
    d = tempfile.mkdtemp(prefix="bench_codecs_")
    nbytes, files = make(d, a.mb)
    print("# %s, commit %s, %s, h5py %s (libhdf5 %s); %.0f MB float32 per file, chunks of 1 MiB, median of %d" % (
        time.strftime("%Y-%m-%d"), commit, platform.machine(), h5py.version.version, h5py.version.hdf5_version,
        nbytes / 1e6, a.reps))
    print()
    print("| codec | stored MB | lib/h5 ms | libhdf5 C ms | h5py ms | lib/h5 MB/s | vs libhdf5 | vs h5py |")
    print("|---|---|---|---|---|---|---|---|")
    for label, fn in files:
        stored = os.path.getsize(fn) / 1e6
        with open(fn, "rb") as fh:  # (into the page cache: every side reads from memory)
            while fh.read(1 << 24):
                pass
        r = subprocess.run([os.path.join(BUILD, "bench", "bench_h5"), "--reps", str(a.reps), "--read", fn, "/d"],
                           capture_output=True, text=True)
        m = re.search(r"\|\s*read [^|]*\|\s*([\d.]+)\s*\|\s*([\d.]+|-)\s*\|", r.stdout)
        if not m:
            print("| %s | bench_h5 failed: %s |" % (label, (r.stderr or r.stdout).strip()[:200]))
            continue
        ours = float(m.group(1)) / 1e3
        theirs = float(m.group(2)) / 1e3 if m.group(2) != "-" else None
        with open(fn, "rb") as fh:
            while fh.read(1 << 24):
                pass
        hp = None
        try:  # (opened for each read, into one array kept across reads, as the two C sides do)
            ts, buf = [], None
            for r in range(a.reps + 1):
                t0 = time.perf_counter()
                with h5py.File(fn, "r") as f:
                    ds = f["d"]
                    if buf is None:
                        buf = np.empty(ds.shape, ds.dtype)
                    ds.read_direct(buf)
                if r:
                    ts.append(time.perf_counter() - t0)
            hp = statistics.median(ts) * 1e3
        except (OSError, ValueError):
            hp = None  # (h5py: no filter to read it)
        cell = lambda v: "%.1f" % v if v is not None else "cannot read"
        ratio = lambda v: "%.2fx" % (v / ours) if v is not None and ours else "-"
        print("| %s | %.1f | %.1f | %s | %s | %.0f | %s | %s |" % (
            label, stored, ours, cell(theirs), cell(hp), nbytes / 1e6 / (ours / 1e3), ratio(theirs), ratio(hp)))


if __name__ == "__main__":
    main()
