"""Write test/data/vds/self_maps.h5: virtual datasets whose sources are all
in the file itself (source file "."), so that a reader given the file image
alone (test/fuzz/run.sh's h5 target) reaches every part of lib/h5/h5_vds.c:
regular and irregular selections, unlimited counts and blocks, printf-style
dataset names, a virtual dataset over a virtual dataset, another byte order.

    /usr/bin/python3 test/data/vds/make_vds.py test/data/vds/self_maps.h5
"""
import sys

import h5py
import numpy as np

U = h5py.h5s.UNLIMITED


def virtual(f, name, shape, maxshape, maps, dtype=h5py.h5t.STD_I32LE, fill=-1):
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_fill_value(np.array(fill, dtype="<i4"))
    for (dset, vsel, sshape, smax, ssel) in maps:
        vspace = h5py.h5s.create_simple(shape, maxshape)
        for i, (start, count, stride, block) in enumerate(vsel):
            vspace.select_hyperslab(start, count, stride=stride, block=block,
                                    op=h5py.h5s.SELECT_SET if i == 0 else h5py.h5s.SELECT_OR)
        sspace = h5py.h5s.create_simple(sshape, smax)
        if ssel is None:
            sspace.select_all()
        else:
            for i, (start, count, stride, block) in enumerate(ssel):
                sspace.select_hyperslab(start, count, stride=stride, block=block,
                                        op=h5py.h5s.SELECT_SET if i == 0 else h5py.h5s.SELECT_OR)
        dcpl.set_virtual(vspace, b".", dset.encode(), sspace)
    h5py.h5d.create(f.id, name.encode(), dtype, h5py.h5s.create_simple(shape, maxshape), dcpl=dcpl)


def main(out):
    with h5py.File(out, "w") as f:
        f.create_dataset("a", data=np.arange(24, dtype="<i4").reshape(4, 6))
        f.create_dataset("be", data=np.arange(12, dtype=">i2").reshape(2, 6))
        f.create_dataset("grow", data=np.arange(30, dtype="<i4").reshape(5, 6), maxshape=(None, 6),
                         chunks=(2, 6))
        for b in range(3):
            f.create_dataset("frame_%d" % b, data=np.full((2, 6), 100 + b, dtype="<i4"))
        # tiles, strides, another byte order, an irregular selection
        virtual(f, "tiles", (6, 6), (6, 6), [
            ("a", [((0, 0), (1, 1), (1, 1), (2, 6))], (4, 6), (4, 6), [((0, 0), (1, 1), (1, 1), (2, 6))]),
            ("be", [((2, 0), (2, 3), (1, 2), (1, 2))], (2, 6), (2, 6), None),
            ("a", [((4, 0), (1, 1), (1, 1), (1, 4)), ((5, 2), (1, 1), (1, 1), (1, 4))], (4, 6), (4, 6),
             [((3, 0), (1, 1), (1, 1), (1, 4)), ((2, 1), (1, 1), (1, 1), (1, 4))]),
        ])
        # an unlimited block and an unlimited count
        virtual(f, "unlim", (0, 6), (U, 6), [
            ("grow", [((0, 0), (1, 1), (1, 1), (U, 6))], (5, 6), (U, 6), [((0, 0), (1, 1), (1, 1), (U, 6))]),
        ])
        virtual(f, "interleave", (0, 6), (U, 6), [
            ("grow", [((1, 0), (U, 1), (2, 1), (1, 6))], (5, 6), (U, 6), [((0, 0), (U, 1), (1, 1), (1, 6))]),
        ])
        # printf-style names: frame_0, frame_1, frame_2 (frame_3 missing)
        virtual(f, "frames", (0, 6), (U, 6), [
            ("frame_%b", [((0, 0), (U, 1), (3, 1), (2, 6))], (2, 6), (2, 6), None),
        ])
        # over a virtual dataset
        virtual(f, "nested", (3, 6), (3, 6), [
            ("tiles", [((0, 0), (1, 1), (1, 1), (3, 6))], (6, 6), (6, 6), [((1, 0), (3, 1), (2, 1), (1, 6))]),
        ])


if __name__ == "__main__":
    main(sys.argv[1])
