"""lib/h5's h5w_flush and h5w_open, checked with h5py and h5dump.

1. Flushes: test/tools/h5append steps appends batches to four datasets (partial
   chunks, deflate+shuffle+fletcher32, vlen strings, compound) and flushes
   after each; after every flush h5py must see exactly the rows flushed.
   h5w_free without h5w_close leaves the last flush (and a file longer than
   its end of allocation, which h5py accepts).
2. h5w_open on files made by h5py (libver 'latest' and 'v108': extensible
   array, v2 B-tree, fixed array, single chunk indexes; dense attributes and
   links; soft links): rows appended, a group and datasets added,
   attributes added; every old object and value must read back unchanged.
   Our own files: reopen, append, reopen, append.  libver='earliest' files
   and lzf-filtered datasets are refused with a clear message; a refused
   file is left byte for byte as it was.
3. Crashes: h5append crash appends and flushes in a loop and is killed
   with SIGKILL at random moments, 30 times; each time h5py must read one
   of the flushed states, at least the last one reported, and h5w_open
   must carry on from it.
4. Corrupt and truncated files: an error, never a crash.

Run by make check (Debian's /usr/bin/python3 with python3-h5py).
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

os.environ["HDF5_USE_FILE_LOCKING"] = "FALSE"
import h5py  # noqa: E402
import numpy as np  # noqa: E402

BUILD = os.getcwd()
APPEND = os.path.join(BUILD, "test", "tools", "h5append")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def env():
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    return e


def run(*args):
    return subprocess.run([APPEND, *args], capture_output=True, text=True, env=env())


def h5dump_ok(path):
    if not shutil.which("h5dump"):
        return True
    r = subprocess.run(["h5dump", path], capture_output=True)
    return r.returncode == 0


# ---- the formulas of test/tools/h5append.c -----------------------------------------

def check_rows(path, rows, label):
    """The four datasets of h5append steps/crash hold exactly rows rows."""
    try:
        with h5py.File(path, "r") as f:
            r = np.arange(rows)
            check(f["plain"].shape == (rows,), f"{label}: plain shape {f['plain'].shape}")
            check(np.array_equal(f["plain"][:], r * 0.5), f"{label}: plain values")
            ints = np.stack([3 * r, 3 * r + 1, 3 * r + 2], axis=1).astype(np.int32).reshape(rows, 3)
            check(f["g/ints"].shape == (rows, 3), f"{label}: ints shape")
            check(np.array_equal(f["g/ints"][:], ints), f"{label}: ints values")
            s = [x.decode() for x in f["s"][:]]
            check(s == [f"s{i}" for i in range(rows)], f"{label}: vlen strings")
            c = f["c"][:]
            check(c.shape == (rows,) and np.array_equal(c["a"], r) and np.array_equal(c["b"], r * 0.25),
                  f"{label}: compound values")
    except Exception as e:  # noqa: BLE001
        check(False, f"{label}: h5py cannot read the file: {e}")


def rows_in(path):
    """The rows h5append crash has flushed: 0 in a file a run killed before
    its first flush left without datasets (its superblock and root only)."""
    with h5py.File(path, "r") as f:
        return f["plain"].shape[0] if "plain" in f else 0


def eoa(path):
    with open(path, "rb") as fh:
        sb = fh.read(48)
    return int.from_bytes(sb[28:36], "little")


# ---- 1. flushes -------------------------------------------------------------------

def part1(tmp):
    path = os.path.join(tmp, "steps.h5")
    p = subprocess.Popen([APPEND, "steps", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env())
    for step in range(12):
        line = p.stdout.readline().split()
        check(len(line) == 2 and line[0] == "flushed", f"steps: bad line {line}")
        if len(line) != 2:
            break
        rows = int(line[1])
        check_rows(path, rows, f"steps after flush {step} ({rows} rows)")
        if step in (0, 3, 11):
            check(h5dump_ok(path), f"steps: h5dump fails after flush {step}")
        p.stdin.write("more\n" if step < 11 else "close\n")
        p.stdin.flush()
    p.stdin.close()
    p.wait()
    check(p.returncode == 0, f"steps: exit {p.returncode}")
    final = rows_in(path)
    check_rows(path, final, "steps after close")

    # h5w_free without close: the last flush stays; raw data written after
    # it lies past the end of allocation, which h5py accepts
    r = run("edit", path, "append:/plain:3", "flush", "append:/plain:30", "free")
    check(r.returncode == 0, f"free: {r.stderr}")
    with h5py.File(path, "r") as f:
        check(f["plain"].shape == (final + 3,), "free: the flushed rows only")
        check(np.array_equal(f["plain"][final:], np.arange(final, final + 3) % 100000),
              "free: appended values")
    check(os.path.getsize(path) > eoa(path), "free: nothing past the end of allocation")
    check(h5dump_ok(path), "free: h5dump fails on a file longer than its EOA")
    # reopening cuts the file back to its end of allocation
    r = run("edit", path)
    check(r.returncode == 0 and os.path.getsize(path) >= eoa(path), f"reopen after free: {r.stderr}")

    # an empty file, and a dataset of 0 rows, flushed
    path2 = os.path.join(tmp, "empty.h5")
    p = subprocess.Popen([APPEND, "steps", path2], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env())
    check(p.stdout.readline().strip() == "flushed 0", "empty: first flush")
    check_rows(path2, 0, "empty datasets")
    p.kill()
    p.wait()
    check_rows(path2, 0, "empty datasets after a kill")


# ---- 2. h5w_open ---------------------------------------------------------------------

def make_h5py_file(path, libver):
    rng = np.random.default_rng(7)
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("ea", data=rng.standard_normal(23).astype(np.float32), maxshape=(None,),
                         chunks=(10,), compression="gzip", shuffle=True, fletcher32=True)
        f.create_dataset("bt2", data=np.arange(20, dtype=np.int64).reshape(5, 4),
                         maxshape=(None, None), chunks=(2, 2))
        f.create_dataset("ea2d", data=np.arange(21, dtype=np.int32).reshape(7, 3),
                         maxshape=(None, 3), chunks=(4, 3), compression="gzip")
        f.create_dataset("fa", data=np.arange(20, dtype=np.float64), chunks=(6,))
        f.create_dataset("single", data=np.arange(10, dtype=np.int16), chunks=(10,))
        f.create_dataset("full", data=np.arange(16, dtype=np.int32), maxshape=(None,), chunks=(8,))
        f.create_dataset("contig", data=np.arange(5, dtype=np.uint8))
        vs = f.create_dataset("vs", shape=(6,), maxshape=(None,), chunks=(4,),
                              dtype=h5py.string_dtype())
        vs[:] = [f"old{i}" for i in range(6)]
        for i in range(12):
            f.attrs[f"a{i}"] = np.arange(i + 1)
        f["ea"].attrs["units"] = "m"
        f["ea"].attrs["scale"] = 2.5
        g = f.create_group("grp")
        sub = g.create_group("sub")
        for i in range(11):
            sub.create_dataset(f"d{i}", data=np.full(3, i, dtype=np.int8))
        g.attrs["note"] = "hello"
        f["soft"] = h5py.SoftLink("/ea")
        f["grp/soft2"] = h5py.SoftLink("/grp/sub/d3")


def snapshot(path):
    """Every object, link and attribute value of path, as h5py reads them."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            link = f.get(name, getlink=True)
            out[name + " link"] = type(link).__name__ + (link.path if isinstance(link, h5py.SoftLink) else "")
            for k, v in obj.attrs.items():
                out[f"{name} @{k}"] = np.array(v).tolist()
            if isinstance(obj, h5py.Dataset):
                out[name] = (obj.shape, obj.dtype.str, np.array(obj[()]).tolist())
        for k, v in f.attrs.items():
            out[f"/ @{k}"] = np.array(v).tolist()
        f.visititems_links(lambda n, l: None) if hasattr(f, "visititems_links") else None
        f.visititems(visit)
        for name in ("soft", "grp/soft2"):
            link = f.get(name, getlink=True)
            out[name + " softlink"] = getattr(link, "path", None)
    return out


def part2(tmp):
    for libver in ("latest", "v108"):
        path = os.path.join(tmp, f"py_{libver}.h5")
        make_h5py_file(path, libver)
        before = snapshot(path)
        ops = ["append:/ea:17", "append:/bt2:3", "append:/ea2d:5", "vlen:/vs:4", "append:/full:9",
               "attr:/:newattr", "attr:/fa:fa_attr", "attr:/grp:x", "group:/newg", "dset:/newg/d:9",
               "dset:/grp/sub/extra:5"]
        r = run("edit", path, *ops)
        check(r.returncode == 0, f"{libver}: edit failed: {r.stderr}")
        after = snapshot(path)
        changed = {"ea", "bt2", "ea2d", "vs", "full", "/ @newattr", "fa @fa_attr", "grp @x"}
        for k, v in before.items():
            if k in changed:
                continue
            check(after.get(k) == v, f"{libver}: {k} changed")
        with h5py.File(path, "r") as f:
            old = np.array(before["ea"][2], dtype=np.float32)
            ea = f["ea"][:]
            check(ea.shape == (40,) and np.array_equal(ea[:23], old) and
                  np.array_equal(ea[23:], np.arange(23, 40).astype(np.float32)), f"{libver}: ea")
            check(np.array_equal(f["soft"][:], ea), f"{libver}: soft link to ea")
            bt2 = f["bt2"][:]
            check(bt2.shape == (8, 4) and np.array_equal(bt2.ravel(), np.arange(32)), f"{libver}: bt2")
            ea2d = f["ea2d"][:]
            check(ea2d.shape == (12, 3) and np.array_equal(ea2d.ravel(), np.arange(36)), f"{libver}: ea2d")
            vs = [x.decode() for x in f["vs"][:]]
            check(vs == [f"old{i}" for i in range(6)] + [f"v{i}" for i in range(6, 10)], f"{libver}: vs {vs}")
            full = f["full"][:]
            check(np.array_equal(full, np.arange(25)), f"{libver}: full")
            check(f.attrs["newattr"] == 42 and len(f.attrs) == 13, f"{libver}: root attrs")
            check(f["fa"].attrs["fa_attr"] == 42, f"{libver}: fa attr")
            check(f["grp"].attrs["x"] == 42 and f["grp"].attrs["note"] == "hello", f"{libver}: grp attrs")
            check(np.array_equal(f["newg/d"][:], np.arange(9) * 0.5), f"{libver}: new dataset")
            check(np.array_equal(f["grp/sub/extra"][:], np.arange(5) * 0.5), f"{libver}: dense group addition")
            check(len(f["grp/sub"]) == 12, f"{libver}: grp/sub links")
        check(h5dump_ok(path), f"{libver}: h5dump fails")
        # lzf (h5dump has no plugin for it: a file of its own): refused,
        # naming the filter, the file unchanged
        lzf = os.path.join(tmp, f"lzf_{libver}.h5")
        with h5py.File(lzf, "w", libver=libver) as f:
            f.create_dataset("lzf", data=np.arange(10, dtype=np.int32), maxshape=(None,), chunks=(4,),
                             compression="lzf")
        with open(lzf, "rb") as fh:
            img = fh.read()
        r = run("edit", lzf, "append:/lzf:3")
        check(r.returncode == 1 and "lzf" in r.stderr, f"{libver}: lzf not refused: {r.stderr}")
        with open(lzf, "rb") as fh:
            check(fh.read() == img, f"{libver}: a refused change altered the file")
        with open(path, "rb") as fh:
            img = fh.read()
        # appending past a fixed maximum shape is refused too
        r = run("edit", path, "append:/single:1")
        check(r.returncode == 1 and "maximum" in r.stderr, f"{libver}: single: {r.stderr}")
        with open(path, "rb") as fh:
            check(fh.read() == img, f"{libver}: a refused change altered the file")

    # our own file: reopen, append, reopen, append
    path = os.path.join(tmp, "own.h5")
    p = subprocess.Popen([APPEND, "steps", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True, env=env())
    p.stdout.readline()
    p.stdin.write("more\nmore\nclose\n")
    p.stdin.close()
    p.wait()
    n = rows_in(path)
    for k in range(3):
        r = run("edit", path, "append:/plain:11", "append:/g/ints:11", "vlen:/s:11")
        check(r.returncode == 0, f"own reopen {k}: {r.stderr}")
    with h5py.File(path, "r") as f:
        pl = f["plain"][:]
        check(pl.shape == (n + 33,) and np.array_equal(pl[:n], np.arange(n) * 0.5) and
              np.array_equal(pl[n:], np.arange(n, n + 33)), "own: plain")
        ints = f["g/ints"][:]
        check(np.array_equal(ints[n:].ravel(), np.arange(3 * n, 3 * n + 99)), "own: ints")
        s = [x.decode() for x in f["s"][:]]
        check(s[n:] == [f"v{i}" for i in range(n, n + 33)], "own: vlen")
    check(h5dump_ok(path), "own: h5dump fails")

    # libver='earliest': refused, the file byte for byte as it was
    path = os.path.join(tmp, "earliest.h5")
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("x", data=np.arange(5), maxshape=(None,), chunks=(2,))
    with open(path, "ab") as fh:
        fh.write(b"junk past the end")
    with open(path, "rb") as fh:
        img = fh.read()
    r = run("edit", path, "append:/x:3")
    check(r.returncode == 1 and "superblock version 0" in r.stderr and "earliest" in r.stderr,
          f"earliest: {r.stderr}")
    with open(path, "rb") as fh:
        check(fh.read() == img, "earliest: the file changed")


# ---- 3. crashes ------------------------------------------------------------------------

def part3(tmp, kills=30):
    path = os.path.join(tmp, "crash.h5")
    rnd = random.Random(11)
    last = 0
    for k in range(kills):
        p = subprocess.Popen([APPEND, "crash", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env())
        time.sleep(rnd.uniform(0.0, 0.25))
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        reported = [int(x.split()[1]) for x in out.splitlines() if x.startswith("flushed ")]
        if not reported:
            # killed before its first flush (a slow start, e.g. under
            # sanitizers): the file must still hold what it held before
            if not os.path.exists(path):
                continue
            rows = rows_in(path)
            check(rows >= last, f"crash {k}: {rows} rows, fewer than the last flushed {last}")
            if rows:
                check_rows(path, rows, f"crash {k}")
            last = rows
            continue
        rows = rows_in(path)
        last = reported[-1]
        # the next flush the child may have completed without reporting it
        nxt = last + ((len(reported) - 1) * 7 + 3) % 23
        check(rows in reported or rows == nxt, f"crash {k}: {rows} rows, flushed {reported[-3:]}")
        check(rows >= last, f"crash {k}: {rows} rows, fewer than the last flushed {last}")
        check_rows(path, rows, f"crash {k}")
        last = rows
    check(h5dump_ok(path), "crash: h5dump fails")


# ---- 4. corrupt files ---------------------------------------------------------------

def part4(tmp):
    src = os.path.join(tmp, "steps.h5")
    with open(src, "rb") as fh:
        img = fh.read()
    cases = {"truncated": img[: len(img) // 2], "garbage": b"not hdf5 at all" * 10,
             "tiny": img[:20], "empty": b""}
    rnd = random.Random(5)
    for i in range(40):
        b = bytearray(img)
        at = rnd.randrange(48, len(b))
        for j in range(rnd.randint(1, 16)):
            if at + j < len(b):
                b[at + j] = rnd.randrange(256)
        cases[f"flip{i}"] = bytes(b)
    for name, data in cases.items():
        path = os.path.join(tmp, f"bad_{name}.h5")
        with open(path, "wb") as fh:
            fh.write(data)
        r = run("edit", path, "append:/plain:9", "append:/g/ints:9", "vlen:/s:9", "attr:/g:zz",
                "dset:/g/new:3")
        check(r.returncode in (0, 1), f"corrupt {name}: exit {r.returncode}: {r.stderr[-300:]}")
        if name in ("truncated", "garbage", "tiny", "empty"):
            check(r.returncode == 1 and r.stderr.startswith("h5append: -"), f"corrupt {name}: {r.stderr}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        part1(tmp)
        part2(tmp)
        part3(tmp)
        part4(tmp)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
