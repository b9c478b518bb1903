"""Signed checkpoints (issue 25): what signing adds to a checkpoint, what
verifying costs, and the bytes it adds, against the same store unsigned
in the same run (seed 002's figures are the goals: docs in BENCHMARKS.md).

  /usr/bin/python3 bench/bench_sign.py [--sizes 1000,10000,100000] [--reps 7] [--dir DIR]

run from the build directory (it loads ./h5mem.so).  Records as in
bench/bench_store.py: 384-d unit vectors stored as float16, ~200 characters
of text, source, session, tags, ts and meta.  For each size N, two stores
get the same rows, one made with signing_key=; then, alternating between
them, 1,000 new records are committed and checkpointed (sync=full), reps
times; the medians are reported.  Then a whole-store checkpoint (N records
in the log, none in the file), h5mem_sign on an unsigned store of N (every
record hashed), and h5mem_verify on the file (every record hashed again,
the signatures checked). Last, a checkpoint that adds one relation to a
graph of 30,000 rows, signed and not.
"""
import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_store as bs  # noqa: E402
from benchutil import git_commit  # noqa: E402


def ms(f):
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1e3


def store(d, name, key=None, ckpt=None):
    path = os.path.join(d, name + ".h5")
    for f in (path, path + "-wal"):
        if os.path.exists(f):
            os.remove(f)
    db = bs.connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, storage=float16, sync=full%s%s)" %
               (bs.q(path), bs.DIM, ", signing_key=%s" % bs.q(key) if key else "",
                ", autocheckpoint=%d" % ckpt if ckpt else ""))
    return db, path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="h5mem_bench_sign_")
    sizes = [int(x) for x in a.sizes.split(",")]
    rows = bs.Rows(1)
    db0 = bs.connect()
    key = os.path.join(d, "bench.key")
    if not os.path.exists(key):
        db0.execute("SELECT h5mem_keygen(?)", (key,))
    print("# signed checkpoints, %s, commit %s, %s, SQLite %s" % (time.strftime("%Y-%m-%d"), git_commit(HERE),
                                                                  platform.node(), db0.execute("SELECT sqlite_version()").fetchone()[0]))
    print("\n## 1,000 new records checkpointed into a store of N (sync=full), medians of %d\n" % a.reps)
    print("| N | unsigned ms | signed ms | signing adds ms | adds % | file bytes added per record |")
    print("|---|---|---|---|---|---|")
    for n in sizes:
        (du, pu), (ds, ps) = store(d, "u%d" % n), store(d, "s%d" % n, key)
        data = []
        for s in range(1, n + 1, 20000):
            data.append(rows.batch(s, min(20000, n + 1 - s)))
        for db in (du, ds):
            for b in data:
                db.execute("BEGIN")
                db.executemany(bs.INS, b)
                db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('mem')")
        tu, ts = [], []
        start = n + 1
        for r in range(a.reps):
            b = rows.batch(start, 1000)
            start += 1000
            order = [(du, tu), (ds, ts)] if r % 2 == 0 else [(ds, ts), (du, tu)]
            for db, out in order:
                db.execute("BEGIN")
                db.executemany(bs.INS, b)
                db.execute("COMMIT")
                out.append(ms(lambda: db.execute("SELECT h5mem_checkpoint('mem')")))
        mu, msg = statistics.median(tu), statistics.median(ts)
        # bytes: the signed file against the unsigned, per record it holds
        total = start - 1
        extra = (os.path.getsize(ps) - os.path.getsize(pu)) / total
        print("| %s | %.2f | %.2f | %+.2f | %+.1f%% | %.1f |" % ("{:,}".format(n), mu, msg, msg - mu,
                                                                 100 * (msg - mu) / mu, extra))
        du.close()
        ds.close()

    print("\n## the whole store at once, and verifying (medians of 3)\n")
    print("| N | whole-store checkpoint, unsigned ms | signed ms | h5mem_sign of a store of N ms | h5mem_verify ms |")
    print("|---|---|---|---|---|")
    for n in sizes:
        data = [rows.batch(s, min(20000, n + 1 - s)) for s in range(1, n + 1, 20000)]
        whole = {}
        for kind in ("u", "s"):
            t = []
            for r in range(3):
                db, p = store(d, "w%s%d" % (kind, n), key if kind == "s" else None, ckpt=1 << 40)
                for b in data:
                    db.execute("BEGIN")
                    db.executemany(bs.INS, b)
                    db.execute("COMMIT")
                t.append(ms(lambda: db.execute("SELECT h5mem_checkpoint('mem')")))
                db.close()
            whole[kind] = statistics.median(t)
        # h5mem_sign on the unsigned store just made (its records all in the file)
        t = []
        for r in range(3):
            db, p = store(d, "l%d" % n)
            for b in data:
                db.execute("BEGIN")
                db.executemany(bs.INS, b)
                db.execute("COMMIT")
            db.execute("SELECT h5mem_checkpoint('mem')")
            t.append(ms(lambda: db.execute("SELECT h5mem_sign('mem', ?)", (key,)).fetchone()))
            db.close()
        sign_ms = statistics.median(t)
        ver = []
        for r in range(3):
            out = []
            ver.append(ms(lambda: out.append(db0.execute("SELECT h5mem_verify(?)", (p,)).fetchone()[0])))
            assert '"valid":true' in out[0], out[0][:300]
        print("| %s | %.1f | %.1f | %.1f | %.1f |" % ("{:,}".format(n), whole["u"], whole["s"], sign_ms,
                                                       statistics.median(ver)))
    graph_bench(d, key, a.reps)


def graph_bench(d, key, reps):
    """A checkpoint that adds one relation to a graph of 10,000 entities and
    20,000 relations, signed and not (alternating): a graph-changing signed
    checkpoint hashes the graph's tables whole."""
    db = bs.connect()
    for name in ("gs", "gu"):
        path = os.path.join(d, name + ".h5")
        for f in (path, path + "-wal"):
            if os.path.exists(f):
                os.remove(f)
        db.execute("CREATE VIRTUAL TABLE %s USING h5mem(path=%s, dim=2%s)" %
                   (name, bs.q(path), ", signing_key=%s" % bs.q(key) if name == "gs" else ""))
        db.execute("BEGIN")
        db.executemany("INSERT INTO %s_entities(name, type) VALUES (?, 'thing')" % name,
                       [("e%d" % i,) for i in range(10000)])
        db.executemany("INSERT INTO %s_relations(src, dst, type, weight) VALUES (?, ?, 'rel', 1.0)" % name,
                       [(1 + i % 10000, 1 + (i * 7) % 10000) for i in range(20000)])
        db.execute("COMMIT")
        db.execute("SELECT h5mem_checkpoint('%s')" % name)
    res = {"gs": [], "gu": []}
    for r in range(reps):
        for name in ("gu", "gs") if r % 2 else ("gs", "gu"):
            db.execute("INSERT INTO %s_relations(src, dst, type) VALUES (1, 2, 'x')" % name)
            res[name].append(ms(lambda: db.execute("SELECT h5mem_checkpoint('%s')" % name)))
    ver = ms(lambda: db.execute("SELECT h5mem_verify('gs')").fetchone())
    print("\n## one relation added to a graph of 10,000 entities and 20,000 relations (medians of %d)\n" % reps)
    print("| checkpoint, unsigned ms | signed ms | h5mem_verify ms |")
    print("|---|---|---|")
    print("| %.2f | %.2f | %.1f |" % (statistics.median(res["gu"]), statistics.median(res["gs"]), ver))


if __name__ == "__main__":
    main()
