"""lib/h5 against h5py and h5dump, both ways.

1. Our writer -> libhdf5: test/tools/h5mkfile writes sample files; h5py reads back
   exactly the values the writer was given (the formulas are in h5mkfile.c),
   h5dump exits 0 on each, and our own reader agrees with h5py on every
   object and value.  Groups and objects with more than 8 links or
   attributes must be in dense storage as h5debug and h5stat show it.
2. h5py's writer -> our reader: files made here with h5py (libver earliest,
   v108 and latest; every chunk index; deflate, shuffle, fletcher32; vlen
   strings; compound; float16; big-endian; 100+ groups and 100+ attributes)
   are read by test/tools/h5walk and compared with h5py's reading of them (the
   conformance fixtures' make_expected.py describes what h5py sees).

Run by make check (Debian's /usr/bin/python3 with python3-h5py).
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FIXTURES = os.environ.get("H5MEM_FIXTURES", os.path.join(SRCDIR, "test", "data", "hdf5"))
BUILD = os.getcwd()
MKFILE = os.path.join(BUILD, "test", "tools", "h5mkfile")
WALK = os.path.join(BUILD, "test", "tools", "h5walk")
sys.path.insert(0, os.path.join(SRCDIR, "test"))
from h5_conformance import compare  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def sanitizer_env():
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)  # the test programs carry their own runtime
    env["ASAN_OPTIONS"] = "detect_leaks=1"
    return env


def h5py_view(path, tmp):
    """What h5py reads from path, as the fixtures' expected JSON."""
    out = os.path.join(tmp, os.path.basename(path) + ".expected.json")
    r = subprocess.run(["/usr/bin/python3", os.path.join(FIXTURES, "scripts", "make_expected.py"),
                        path, os.path.basename(path), out],
                       capture_output=True, text=True, cwd=os.path.dirname(path))
    if r.returncode != 0:
        raise RuntimeError(f"make_expected.py failed on {path}: {r.stderr[-500:]}")
    with open(out) as fh:
        return json.load(fh)


def our_view(path):
    r = subprocess.run([WALK, path], capture_output=True, text=True, env=sanitizer_env())
    if r.returncode != 0:
        return None, r.stderr.strip()
    return json.loads(r.stdout), ""


def agree(path, tmp, label):
    exp = h5py_view(path, tmp)
    got, err = our_view(path)
    if got is None:
        check(False, f"{label}: our reader failed: {err}")
        return
    bad = compare(exp, got)
    check(not bad, f"{label}: our reader differs from h5py: {bad[:5]}")


def formula_int(n, dtype):
    return (np.arange(n, dtype=np.int64) * 3 - 7).astype(dtype)


def formula_float(n):
    return np.arange(n, dtype=np.float64) * 0.25 - 1.5


def part1(tmp):
    r = subprocess.run([MKFILE, tmp], capture_output=True, text=True, env=sanitizer_env())
    check(r.returncode == 0, f"h5mkfile: {r.stderr}")
    if r.returncode != 0:
        return
    for name in ("basic.h5", "many.h5", "bigchunks.h5", "links.h5", "attrs.h5"):
        p = os.path.join(tmp, name)
        d = subprocess.run(["h5dump", p], capture_output=True, text=True)
        check(d.returncode == 0, f"h5dump {name} exited {d.returncode}: {d.stderr[-300:]}")
        agree(p, tmp, name)
    with h5py.File(os.path.join(tmp, "basic.h5"), "r") as f:
        for name, dt in [("i8", "i1"), ("u8", "u1"), ("i16", "i2"), ("u16", "u2"),
                         ("i32", "i4"), ("u32", "u4"), ("i64", "i8"), ("u64", "u8")]:
            ds = f["numbers"][name]
            check(ds.dtype == np.dtype("<" + dt) or ds.dtype == np.dtype(dt), f"{name} dtype {ds.dtype}")
            check(np.array_equal(ds[()], formula_int(37, dt)), f"{name} values")
        for name, dt in [("f16", "<f2"), ("f32", "<f4"), ("f64", "<f8")]:
            ds = f["numbers"][name]
            check(ds.dtype == np.dtype(dt), f"{name} dtype {ds.dtype}")
            check(np.array_equal(ds[()], formula_float(37).astype(dt)), f"{name} values")
        check(list(f["a/b/c/compact"][()]) == [10, 20, 30, 40], "compact")
        check(f["a/b/c/compact"].id.get_create_plist().get_layout() == h5py.h5d.COMPACT, "compact layout")
        grid = formula_float(3000).astype("<f4").reshape(100, 30)
        for name in ("filtered", "chunked"):
            ds = f[name]
            check(ds.chunks == (16, 7), f"{name} chunks {ds.chunks}")
            check(np.array_equal(ds[()], grid), f"{name} values")
        flt = f["filtered"]
        check(flt.compression == "gzip" and flt.compression_opts == 6 and flt.shuffle and flt.fletcher32,
              f"filtered filters {flt.compression} {flt.shuffle} {flt.fletcher32}")
        ap = f["appended"]
        check(ap.shape == (10, 3) and ap.maxshape == (None, 3), f"appended shape {ap.shape} {ap.maxshape}")
        check(np.array_equal(ap[()], formula_int(30, "i8").reshape(10, 3)), "appended values")
        check(ap.fillvalue == -1, f"appended fill {ap.fillvalue}")
        words = ["alpha", "béta", "", "a much longer string, with commas"]
        fx = [x.decode("utf-8", "replace") for x in f["fixed_strings"][()]]
        check(fx == ["alpha", "béta", "", "a much l", ""], f"fixed strings {fx}")
        vs = [x.decode() if isinstance(x, bytes) else x for x in f["vlen_strings"][()]]
        check(vs == words + [""], f"vlen strings {vs}")
        rec = f["records"][()]
        check(list(rec["id"]) == [1, 2, 3], "records id")
        check(np.array_equal(rec["score"], formula_float(3)), "records score")
        check([x for x in rec["tag"]] == [b"tag"] * 3, f"records tag {rec['tag']}")
        check([x.decode() if isinstance(x, bytes) else x for x in rec["note"]] == ["first", "second", "third"],
              "records note")
        check(h5py.check_enum_dtype(f["colors"].dtype) == {"RED": 0, "GREEN": 1, "BLUE": 2},
              f"enum {h5py.check_enum_dtype(f['colors'].dtype)}")
        check(list(f["colors"][()]) == [2, 0, 1, 2], "enum values")
        check(f["flags"].dtype == np.bool_ and list(f["flags"][()]) == [True, False, False, True],
              f"bool {f['flags'].dtype}")
        check(np.array_equal(f["arrays"][()], formula_int(12, "i2").reshape(4, 3)), "array type")
        check(abs(f.attrs["pi"] - 3.14159265358979) < 1e-15, "attr pi")
        t = f.attrs["title"]
        check((t.decode() if isinstance(t, bytes) else t) == "agent memory ✓", f"attr title {t!r}")
        check(list(f["numbers"].attrs["vec"]) == [1, -2, 3, -4], "attr vec")
        check(f["arrays"].attrs["fixed"] == b"fixedval", f"attr fixed {f['arrays'].attrs['fixed']!r}")
    with h5py.File(os.path.join(tmp, "many.h5"), "r") as f:
        check(len(f) == 150 and len(f.attrs) == 150, f"many: {len(f)} groups, {len(f.attrs)} attrs")
        check(all(f[f"group{i:03d}"].attrs["index"] == i for i in range(150)), "many: group attrs")
        check(all(f.attrs[f"attr{i:03d}"] == i * 3 - 7 for i in range(150)), "many: root attrs")
    dense_links(tmp)
    dense_attrs(tmp)
    with h5py.File(os.path.join(tmp, "bigchunks.h5"), "r") as f:
        check(np.array_equal(f["ints"][()], formula_int(50000, "i4")), "bigchunks values")
        check(np.array_equal(f["ints"][12345:12400], formula_int(50000, "i4")[12345:12400]),
              "bigchunks slice")


def link_name(i):
    """Link i of links.h5, as test/tools/h5mkfile.c names it."""
    if i == 12345:
        return "huge12345_" + "y" * 5000
    if i % 1000 == 999:
        return f"long{i:05d}_" + "x" * 300
    return f"link{i:05d}" + "_abcdefghijklmnopqrstuvwxyz"[:i % 28]


def h5debug_storage(path, obj_path):
    """libhdf5's view of an object header: h5debug's dense storage heap
    addresses for its links and its attributes (None: compact)."""
    with h5py.File(path, "r") as f:
        addr = h5py.h5o.get_info(f[obj_path].id).addr
    r = subprocess.run(["h5debug", path, str(addr)], capture_output=True, text=True)
    found = {}
    for line in r.stdout.splitlines():
        for kind in ("link", "attribute"):
            if f"'Dense' {kind} storage fractal heap address:" in line:
                v = int(line.split(":")[-1])
                found[kind] = None if v == 2**64 - 1 else v
    return found


def h5stat_heaps(path):
    """h5stat's bytes of group and attribute B-trees and heaps."""
    r = subprocess.run(["h5stat", path], capture_output=True, text=True)
    out, section = {}, None
    for line in r.stdout.splitlines():
        t = line.strip()
        if t in ("Groups:", "Attributes:"):
            section = t[:-1]
        elif section and (t.startswith("B-tree/List:") or t.startswith("Heap:")):
            out[(section, t.split(":")[0])] = int(t.split(":")[1])
        elif section and not t.startswith(("B-tree", "Heap")):
            section = None
    return out, r.returncode


def dense_links(tmp):
    p = os.path.join(tmp, "links.h5")
    with h5py.File(p, "r") as f:
        names = set(f.keys())
        want = {link_name(i) for i in range(20000)} | {"edge8", "edge9"}
        check(names == want, f"links: {len(names)} names, {len(names ^ want)} differ")
        check(all(f[link_name(i)].attrs["index"] == i for i in range(0, 20000, 1000)), "links: index attrs")
        check(isinstance(f[link_name(12345)], h5py.Group), "links: the 5010-byte name")
        check(sorted(f["edge8"]) == [f"s{i}" for i in range(8)], "links: edge8")
        check(sorted(f["edge9"]) == [f"s{i}" for i in range(9)], "links: edge9")
    root, e8, e9 = (h5debug_storage(p, x) for x in ("/", "edge8", "edge9"))
    check(root.get("link") is not None, f"links: root not dense for libhdf5 {root}")
    check("link" in e8 and e8["link"] is None, f"links: edge8 not compact {e8}")
    check(e9.get("link") is not None, f"links: edge9 not dense {e9}")
    stat, rc = h5stat_heaps(p)
    check(rc == 0 and stat.get(("Groups", "Heap"), 0) > 500000, f"links: h5stat {stat}")


def dense_attrs(tmp):
    p = os.path.join(tmp, "attrs.h5")
    with h5py.File(p, "r") as f:
        a = f.attrs
        check(len(a) == 2003, f"attrs: {len(a)} on the root")
        bad = []
        for i in range(2000):
            name, k = f"attr{i:04d}", i % 5
            v = a[name]
            if k == 0:
                ok = v.dtype == np.dtype("<i8") and v == i * 3 - 7
            elif k == 1:
                ok = np.array_equal(v, formula_float(i % 7 + 1 + i)[i:])
            elif k == 2:
                ok = v == f"s{i:04d}".encode()
            elif k == 3:
                ok = (v.decode() if isinstance(v, bytes) else v) == f"vlen {i} ✓"
            else:
                ok = v.dtype == np.dtype("<i4") and np.array_equal(v, formula_int(1010 + i % 10 * 2 + i, "i4")[i:])
            if not ok:
                bad.append(name)
        check(not bad, f"attrs: wrong values {bad[:5]}")
        check(np.array_equal(a["big_int"], formula_int(20000, "i4")), "attrs: big_int")
        check(np.array_equal(a["big_float"], formula_float(50000)), "attrs: big_float")
        check(a["big_str"] == b"z" * 70000, "attrs: big_str")
        d = f["d50"]
        check(np.array_equal(d[()], formula_int(10, "i4")), "attrs: d50 values")
        check(len(d.attrs) == 50 and all(d.attrs[f"a{i:02d}"] == i * 3 - 7 and d.attrs[f"a{i:02d}"].dtype == np.dtype("<i2")
                                         for i in range(50)), "attrs: d50 attributes")
        b = f["d_big"]
        check(b.attrs["small"] == 5 and np.array_equal(b.attrs["huge"], formula_int(30000, "i4")), "attrs: d_big")
        w = f["wide"].attrs
        check(sorted(w) == [f"w{i:02d}" for i in range(12)] and
              all(np.array_equal(w[f"w{i:02d}"], formula_int(1010 + i * 2 + i, "i4")[i:]) for i in range(12)),
              "attrs: wide")
        for n in (8, 9):
            g = f[f"edge{n}"]
            check(sorted(g.attrs) == [f"e{i}" for i in range(n)] and all(g.attrs[f"e{i}"] == i * 3 - 7 for i in range(n)),
                  f"attrs: edge{n}")
    expect = {"/": True, "d50": True, "d_big": True, "wide": True, "edge8": False, "edge9": True}
    for obj, dense in expect.items():
        st = h5debug_storage(p, obj)
        check("attribute" in st and (st["attribute"] is not None) == dense,
              f"attrs: {obj} {'not ' if dense else ''}dense for libhdf5: {st}")
    stat, rc = h5stat_heaps(p)
    check(rc == 0 and stat.get(("Attributes", "Heap"), 0) > 1000000, f"attrs: h5stat {stat}")


def part2(tmp):
    rng = np.random.default_rng(3)
    for libver in ("earliest", "v108", "latest"):
        p = os.path.join(tmp, f"h5py_{libver}.h5")
        with h5py.File(p, "w", libver=(libver, "latest") if libver != "earliest" else "earliest") as f:
            f.create_dataset("contig", data=np.arange(100, dtype="<i4"))
            f.create_dataset("f16", data=np.linspace(-2, 2, 50).astype("<f2"))
            f.create_dataset("be", data=np.arange(20, dtype=">f8") / 3)
            f.create_dataset("be_int", data=np.arange(20, dtype=">i2") - 10)
            f.create_dataset("gzip", data=rng.standard_normal((60, 40)).astype("<f4"),
                             chunks=(16, 16), compression="gzip", compression_opts=4,
                             shuffle=True, fletcher32=True)
            f.create_dataset("single_chunk", data=np.arange(64, dtype="<i8").reshape(8, 8),
                             chunks=(8, 8))
            f.create_dataset("fixed_array", data=np.arange(1000, dtype="<i4"), chunks=(10,))
            ea = f.create_dataset("ext_array", shape=(0, 4), maxshape=(None, 4), chunks=(5, 4), dtype="<f8")
            ea.resize((23, 4))
            ea[...] = np.arange(92).reshape(23, 4) * 0.5
            bt = f.create_dataset("btree2", shape=(0, 0), maxshape=(None, None), chunks=(4, 4), dtype="<i2")
            bt.resize((10, 9))
            bt[...] = np.arange(90, dtype="<i2").reshape(10, 9)
            f.create_dataset("vlen_str", data=["one", "twö", "", "four"],
                             dtype=h5py.string_dtype("utf-8"))
            cdt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])
            f.create_dataset("compound", data=np.array([(1, 0.5, b"x"), (2, 1.5, b"yz")], dtype=cdt))
            g = f.create_group("many_groups")
            for i in range(120):
                g.create_group(f"g{i:03d}")
            for i in range(120):
                g.attrs[f"a{i:03d}"] = i
            f.attrs["note"] = "made by h5py"
        agree(p, tmp, f"h5py libver={libver}")


def part3():
    """Modification times and comments against libhdf5's own tools: h5debug
    (TZ=UTC) prints an object header's time, h5ls -v its comment."""
    import csv
    import re
    with open(os.path.join(FIXTURES, "MANIFEST.tsv")) as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t")
                if r["libhdf5_opens"] == "yes" and ("mtime" in r["features"] or "comment" in r["features"])]
    env = dict(os.environ, TZ="UTC")
    times = comments = 0
    with_comments = [r for r in rows if "comment" in r["features"]]
    with_times = [r for r in rows if "comment" not in r["features"]][:20]
    for r in with_comments + with_times:
        path = os.path.join(FIXTURES, "files", r["file"])
        got, err = our_view(path)
        if got is None:
            continue
        ls = subprocess.run(["h5ls", "-rv", path], capture_output=True, text=True, env=env).stdout
        ls_comments = {}
        cur = None
        for line in ls.splitlines():
            m = re.match(r"^(/\S*)\s", line)
            if m:
                cur = m.group(1)
            m = re.match(r'^\s+Comment:\s+"(.*)"$', line)
            if m and cur:
                ls_comments[cur] = m.group(1)
        for o in got["objects"]:
            if o["kind"] not in ("group", "dataset", "datatype"):
                continue
            if "comment" in r["features"]:
                check(o.get("comment") == ls_comments.get(o["path"]),
                      f"{r['file']} {o['path']}: comment {o.get('comment')!r} != {ls_comments.get(o['path'])!r}")
                comments += 1
            if "mtime" in o and times < 60:
                dbg = subprocess.run(["h5debug", path, str(o["addr"])], capture_output=True, text=True,
                                     env=env).stdout
                m = re.search(r"(?:Modification Time|Time):\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC", dbg)
                want = m.group(1) if m else None
                import datetime
                mine = datetime.datetime.fromtimestamp(o["mtime"], datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
                check(mine == want, f"{r['file']} {o['path']}: mtime {mine} != h5debug {want}")
                times += 1
    check(times >= 20 and comments >= 3, f"only {times} times and {comments} comments compared")
    print(f"modification times ({times}) and comments ({comments}) agree with h5debug and h5ls")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        part1(tmp)
        part2(tmp)
    part3()
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("h5py, h5dump and lib/h5 agree on every file")
    return 0


if __name__ == "__main__":
    sys.exit(main())
