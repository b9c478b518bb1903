"""One HNSW build timed with several builds of h5mem, alternately, on the
same records: N records (bench_scale.py's) written to an index=hnsw
store's log alone, copied aside, then for each extension given (in the
order given, so that `A B A B` pairs them) the log put back and one
checkpoint, which builds the whole graph on every CPU, timed in a fresh
process.

  /usr/bin/python3 bench/bench_build_ab.py --n 1000000 --dir /work/ab \\
      /work/base/h5mem /work/main/h5mem /work/base/h5mem /work/main/h5mem

Each extension is a path without its .so, as SQLite's load_extension
takes it (its file must be named h5mem.so: the entry point is named after
the file).  The records stay in --dir (DIR/h.h5.keep, DIR/h.h5-wal.keep)
for later runs of the same N.
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale  # noqa: E402  (its main() runs only as a script)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("ext", nargs="+")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "h.h5")
    if not os.path.exists(path + ".keep"):
        # the records in the log alone, left by a process that ends without closing
        pid = os.fork()
        if pid == 0:
            try:
                bench_scale.fill(path, a.n, ", index=hnsw, autocheckpoint=%d" % (1 << 40))
                os._exit(0)
            except BaseException:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert status == 0, status
        shutil.copy(path, path + ".keep")
        shutil.copy(path + "-wal", path + "-wal.keep")
    for ext in a.ext:
        shutil.copy(path + ".keep", path)
        shutil.copy(path + "-wal.keep", path + "-wal")
        t = subprocess.run([sys.executable, "-c", bench_scale.BUILDG, ext, path], capture_output=True, text=True,
                           check=True)
        print("%s %.1f s" % (ext, float(t.stdout)), flush=True)


if __name__ == "__main__":
    main()
