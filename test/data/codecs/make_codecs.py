"""Write the small compressed HDF5 files in this directory: seeds for
test/fuzz/run.sh's h5 target, so the fuzzer starts inside each codec's
decoder (lib/h5/h5_codec.c).  Each file holds /x, 300 int16 values in
chunks of 64 (the last one partial), and /y, 12 x 10 float32 values in
chunks of 5 x 5, compressed with one codec.

    /usr/bin/python3 test/data/codecs/make_codecs.py [DIR]

Needs python3-h5py, python3-hdf5plugin with Debian's hdf5-filter-plugin
and hdf5-filter-plugin-blosc-serial, python3-tables and python3-zstandard.
"""
import os
import sys

import h5py
import hdf5plugin
import numpy as np
import tables
import zstandard
from h5py import h5d, h5p, h5s, h5t, h5z

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
x = ((np.arange(300) * 37) % 251 - 125).astype("<i2")
y = np.linspace(-5, 5, 120).astype("<f4").reshape(12, 10)


def h5py_file(name, **opts):
    with h5py.File(os.path.join(out, name), "w", libver="earliest") as f:
        f.create_dataset("x", data=x, chunks=(64,), **opts)
        f.create_dataset("y", data=y, chunks=(5, 5), **opts)


h5py_file("szip.h5", compression="szip", compression_opts=("nn", 8))
h5py_file("bzip2.h5", **hdf5plugin.BZip2(blocksize=1))
h5py_file("lz4.h5", **hdf5plugin.LZ4(nbytes=32))
h5py_file("blosc_lz4_shuffle.h5", **hdf5plugin.Blosc(cname="lz4", clevel=5, shuffle=1))
h5py_file("blosc_zstd_bitshuffle.h5", **hdf5plugin.Blosc(cname="zstd", clevel=5, shuffle=2))

with tables.open_file(os.path.join(out, "lzo.h5"), "w") as h:
    filt = tables.Filters(complevel=5, complib="lzo")
    h.create_carray("/", "x", obj=x, filters=filt, chunkshape=(64,))
    h.create_carray("/", "y", obj=y, filters=filt, chunkshape=(5, 5))

with h5py.File(os.path.join(out, "zstd.h5"), "w", libver="earliest") as f:
    c = zstandard.ZstdCompressor(level=3)
    for name, a, chunk in (("x", x, (64,)), ("y", y, (5, 5))):
        dcpl = h5p.create(h5p.DATASET_CREATE)
        dcpl.set_chunk(chunk)
        dcpl.set_filter(32015, h5z.FLAG_OPTIONAL, (3,))
        t = h5t.STD_I16LE if a.dtype == np.dtype("<i2") else h5t.IEEE_F32LE
        ds = h5py.Dataset(h5d.create(f.id, name.encode(), t, h5s.create_simple(a.shape), dcpl=dcpl))
        grid = [range(0, n, k) for n, k in zip(a.shape, chunk)]
        for origin in np.array(np.meshgrid(*grid, indexing="ij")).reshape(len(chunk), -1).T:
            blk = np.zeros(chunk, a.dtype)
            sl = tuple(slice(o, o + k) for o, k in zip(origin, chunk))
            part = a[sl]
            blk[tuple(slice(0, n) for n in part.shape)] = part
            ds.id.write_direct_chunk(tuple(int(o) for o in origin), c.compress(blk.tobytes()), 0)
