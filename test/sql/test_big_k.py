"""k above 4096 (sqlite-vec's vec0 refuses k > 4096; issue 20): the KNN form
(`embedding MATCH :q AND k = N`), vec_search, bm25 and hybrid with k = 5000
and k = 100000 on a store of 12,000 records (more than 5000, fewer than
100000), each against an independent computation:

- KNN and vec_search: numpy's distances (float64) of every record, the k
  nearest; ids equal except where two distances tie within float32
  rounding, every returned distance equal to numpy's for that id;
- bm25: FTS5's bm25() over the same texts (test_bm25.py's oracle);
- hybrid: the fusion recomputed from vec_search and FTS5
  (test_hybrid.py's `expected`);
- the LIMIT form of KNN too where SQLite is 3.41 or later;
- with k = 100000 every record (or every match) comes back, once;
- the same after a checkpoint and a reopen, and on an HNSW store with
  {"exact": true} (the index is approximate: its k rows are checked to be
  k distinct records, and exact search equal to numpy).
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, finish, q, vec_dist  # noqa: E402
import test_hybrid  # noqa: E402

N = 12000
# `ORDER BY distance LIMIT N` as k needs SQLite 3.41 (docs/SQL.md)
LIMIT_IS_K = __import__("sqlite3").sqlite_version_info >= (3, 41, 0)
KS = (5000, 100000)


def vectors(db):
    rows = db.execute("SELECT id, embedding FROM mem ORDER BY id").fetchall()
    ids = np.array([r[0] for r in rows])
    x = np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
    return ids, x


def check_knn(tag, got, ids, dist, k):
    """got: [(id, distance)] in order; dist: numpy's distance of each of ids."""
    want = min(k, len(ids))
    check(len(got) == want, "%s: %d rows, want %d" % (tag, len(got), want))
    gids = [r[0] for r in got]
    check(len(set(gids)) == len(gids), "%s: an id twice" % tag)
    pos = {int(i): j for j, i in enumerate(ids)}
    bad = [(i, d, dist[pos[i]]) for i, d in got if abs(d - dist[pos[i]]) > 1e-4 * max(1, abs(dist[pos[i]]))]
    check(not bad, "%s: distances differ from numpy: %r" % (tag, bad[:3]))
    gd = np.array([r[1] for r in got])
    check(bool(np.all(np.diff(gd) >= -1e-6)), "%s: not in distance order" % tag)
    order = np.argsort(dist, kind="stable")
    kth = dist[order[want - 1]]
    # every record nearer than the k-th (beyond rounding) is in, every one farther is out
    must = {int(ids[j]) for j in order if dist[j] < kth - 1e-5 * max(1, abs(kth))}
    mustnot = {int(ids[j]) for j in order if dist[j] > kth + 1e-5 * max(1, abs(kth))}
    check(must <= set(gids), "%s: %d of the k nearest missing" % (tag, len(must - set(gids))))
    check(not (mustnot & set(gids)), "%s: %d beyond the k nearest returned" % (tag, len(mustnot & set(gids))))


def fts_bm25(db, text, k):
    terms = list(dict.fromkeys(json.loads(db.execute("SELECT h5mem_tokenize(?)", (text,)).fetchone()[0])))
    fq = " OR ".join('"%s"' % t for t in terms)
    return db.execute("SELECT f.rowid, -bm25(f) FROM f WHERE f MATCH ? ORDER BY bm25(f), f.rowid LIMIT ?",
                      (fq, k)).fetchall()


def same_scored(a, b):
    return len(a) == len(b) and all(x[0] == y[0] and abs(x[1] - y[1]) <= 1e-9 * max(1, abs(y[1]))
                                    for x, y in zip(a, b))


def run_all(db, tag, nrng):
    ids, x = vectors(db)
    check(len(ids) == N, "%s: %d records" % (tag, len(ids)))
    for n in range(2):
        qv = nrng.standard_normal(test_hybrid.DIM).astype(np.float32)
        dist = vec_dist("cosine", qv, x)
        for k in KS:
            t = "%s q%d k=%d" % (tag, n, k)
            got = db.execute("SELECT id, distance FROM mem WHERE embedding MATCH ? AND k = ?",
                             (qv.tobytes(), k)).fetchall()
            check_knn(t + " KNN form", got, ids, dist, k)
            if LIMIT_IS_K:
                got = db.execute("SELECT id, distance FROM mem WHERE embedding MATCH ? ORDER BY distance LIMIT ?",
                                 (qv.tobytes(), k)).fetchall()
                check_knn(t + " KNN form with LIMIT", got, ids, dist, k)
            got = db.execute("SELECT id, distance FROM vec_search('mem', ?, ?)", (qv.tobytes(), k)).fetchall()
            check_knn(t + " vec_search", got, ids, dist, k)
            for text in ("memory", "memory agent coffee"):
                ours = db.execute("SELECT id, score FROM bm25('mem', ?, ?)", (text, k)).fetchall()
                theirs = fts_bm25(db, text, k)
                check(same_scored(ours, theirs), "%s bm25 %r: %d rows vs FTS5's %d, first %r vs %r"
                      % (t, text, len(ours), len(theirs), ours[:2], theirs[:2]))
                if k == KS[0]:
                    check(len(ours) == k, "%s bm25 %r: more matches than k wanted, got %d" % (t, text, len(ours)))
                for opts in ({}, {"fusion": "rrf"}):
                    got = test_hybrid.run(db, text, qv, k, opts)
                    want = test_hybrid.expected(db, text, qv, k, opts)
                    check(len(got) == min(k, N), "%s hybrid %r %r: %d rows" % (t, text, opts, len(got)))
                    check(test_hybrid.same(got, want), "%s hybrid %r %r: differs from the recomputed fusion"
                          % (t, text, opts))


def test_hnsw(tmp, nrng):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE h USING h5mem(path=%s, dim=8, index=hnsw)" % q(os.path.join(tmp, "hn.h5")))
    x = nrng.standard_normal((6000, 8)).astype(np.float32)
    db.execute("BEGIN")
    db.executemany("INSERT INTO h(id, embedding) VALUES (?, ?)", [(i + 1, x[i].tobytes()) for i in range(len(x))])
    db.execute("COMMIT")
    ids = np.arange(1, len(x) + 1)
    qv = nrng.standard_normal(8).astype(np.float32)
    dist = vec_dist("cosine", qv, x)
    for k in (5000, 100000):
        got = db.execute("SELECT id, distance FROM vec_search('h', ?, ?, '{\"exact\": true}')",
                         (qv.tobytes(), k)).fetchall()
        check_knn("hnsw exact k=%d" % k, got, ids, dist, k)
        for sql in ("SELECT id, distance FROM vec_search('h', ?, ?)",
                    "SELECT id, distance FROM h WHERE embedding MATCH ? AND k = ?"):
            got = db.execute(sql, (qv.tobytes(), k)).fetchall()
            gids = [r[0] for r in got]
            check(len(gids) == min(k, len(x)) and len(set(gids)) == len(gids),
                  "hnsw k=%d %s: %d rows, %d distinct" % (k, sql[:40], len(gids), len(set(gids))))
    db.close()


def main():
    tmp = tempfile.mkdtemp(prefix="h5bigk_")
    db, path, _recs, _cent, nrng = test_hybrid.setup(tmp, n=N, seed=20)
    run_all(db, "fresh", nrng)
    db.execute("INSERT INTO mem(mem) VALUES ('checkpoint')")
    run_all(db, "checkpointed", nrng)
    # reopened: the mirror tables are in the same in-memory database, kept
    db.execute("DROP TABLE mem")
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    run_all(db, "reopened", nrng)
    db.close()
    test_hnsw(tmp, nrng)
    finish()


if __name__ == "__main__":
    main()
