"""What the Python benchmarks share with the SQL tests (test/sql/sqltest.py):
connections that load the freshly built extension (run from the build
directory: ./h5mem.so) and SQL quoting; and what the vector benchmarks
share among themselves: seed 002's clustered data and a percentile."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "sql"))
from sqltest import connect, q  # noqa: E402,F401


def centres(rng, dim):
    """100 unit cluster centres of dim dimensions (seed 002's data)."""
    import numpy as np
    c = rng.standard_normal((100, dim)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def clustered(rng, c, m):
    """m unit vectors around the centres c: a centre plus noise, normalised."""
    import numpy as np
    dim = c.shape[1]
    x = c[rng.integers(0, 100, m)] + 0.35 * rng.standard_normal((m, dim)).astype(np.float32) / np.sqrt(dim) * 4
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def licence_words():
    """The words of the licence texts in /usr/share/common-licenses: English
    for the records' texts."""
    import glob
    w = []
    for fn in sorted(glob.glob("/usr/share/common-licenses/*")):
        try:
            with open(fn, encoding="utf-8", errors="ignore") as fh:
                w += fh.read().split()
        except (IsADirectoryError, PermissionError):
            pass
    return w


def pct(xs, p):
    """The p-th percentile of xs (the element at that rank)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))]


def git_commit(srcdir):
    """The source tree's commit (12 hex digits), as the figures cite it."""
    return subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                          cwd=srcdir).stdout.strip()


# The start of a child process's script (bench_ckpt.py, bench_reader.py: one
# fresh process per run, as an agent's process opening its memory is): argv
# is the extension, the store and the bench folder; h5mem loaded, the store
# opened as m, the open's time in out["open_ms"].
CHILD_OPEN = r'''
import json, sqlite3, statistics, sys, time
sys.path.insert(0, sys.argv[3])
import bench_scale
ext, path = sys.argv[1], sys.argv[2]
db = sqlite3.connect(':memory:', isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
out = {}
t0 = time.perf_counter()
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % path)
out["open_ms"] = (time.perf_counter() - t0) * 1e3
'''


def child_header(name, store):
    """The first line of bench_ckpt's and bench_reader's output: when, the
    commit, the store and its size."""
    here = os.path.dirname(os.path.abspath(__file__))
    return "# %s: %s, commit %s, store %s (%d MiB)" % (
        name, subprocess.run(["date", "-u", "+%Y-%m-%d %H:%M"], capture_output=True, text=True).stdout.strip(),
        git_commit(here), store, os.path.getsize(store) >> 20)
