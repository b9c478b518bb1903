"""The metadata cache image (issue 21): libhdf5 (asked to by
H5Pset_mdc_image_config) closes a file leaving its object headers, heaps
and B-tree nodes only in an image of its metadata cache, their places in
the file never written.  test/tools/h5mdci (libhdf5, the test oracle) writes
such a file: groups (one stored densely), an attribute, chunked and
compressed, compact and big-endian contiguous datasets.  Every object,
attribute and value must read through h5_ls, h5_attrs and h5_read_json as
h5py reads it; a damaged image (a byte of an entry changed) must be an
error naming the cache image, never other data.  The corpus's
h5clear_mdc_image.h5 is compared by h5_conformance.py.

Skipped (exit 77) when the build has no libhdf5 to make the file with.
Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

TOOL = os.path.join(os.getcwd(), "test", "tools", "h5mdci")


def main():
    if not os.path.exists(TOOL):
        print("SKIP: test/tools/h5mdci was not built (configure found no libhdf5)")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="h5mem_mdci_")
    try:
        fn = os.path.join(d, "image.h5")
        # (libhdf5's own allocations are not ours to report in a sanitizer build)
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        subprocess.run([TOOL, fn], check=True, env=env)
        raw = open(fn, "rb").read()
        check(raw.count(b"MDCI") == 1, "the file has a metadata cache image (oracle sanity)")
        with h5py.File(fn, "r") as f:
            objs = {}
            f.visititems(lambda p, o: objs.__setitem__("/" + p, o))
            want = {p: (o[()] if isinstance(o, h5py.Dataset) else None) for p, o in objs.items()}
            attrs = {k: v.tolist() for k, v in f.attrs.items()}
        # the root group's object header is only in the image
        check(raw[48:52] != b"OHDR", "the root object header is not at its home address (oracle sanity)")
        db = connect()
        rows = {r[0]: r[1:] for r in db.execute("SELECT path, kind, shape FROM h5_ls(?)", (fn,))}
        check(set(rows) == set(want) | {"/"}, "h5_ls lists %r, h5py %r" % (sorted(rows), sorted(want)))
        for p, v in want.items():
            if v is None:
                check(rows.get(p, [None])[0] == "group", "%s: a group" % p)
                continue
            got = json.loads(db.execute("SELECT h5_read_json(?, ?)", (fn, p)).fetchone()[0])
            check(got == v.tolist(), "%s: %r, h5py %r" % (p, str(got)[:80], str(v.tolist())[:80]))
        got = {r[0]: json.loads(r[1]) for r in db.execute("SELECT name, value FROM h5_attrs(?, '/')", (fn,))}
        check(got == attrs, "root attributes %r, h5py %r" % (got, attrs))
        check(len([p for p in rows if p.startswith("/many/")]) == 40, "the dense group's 40 members")
        # a damaged entry: an error about the image, not other values
        at = raw.index(b"MDCI") + 40
        bad = bytearray(raw)
        bad[at] ^= 0x55
        fb = os.path.join(d, "damaged.h5")
        open(fb, "wb").write(bytes(bad))
        expect_error(db, "SELECT count(*) FROM h5_ls(%s)" % q(fb), "metadata cache image: checksum mismatch")
        db.close()
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
