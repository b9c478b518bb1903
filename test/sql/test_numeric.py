"""Vector search with queries of extreme scale (issue 17, "no silent wrong
result"): vec_search (through the index and exact), the KNN form and
hybrid, for index=flat, hnsw and ivf, metrics cosine, l2 and dot, storage
float32 and float16.

The stored vectors are of ordinary scale; the queries are an ordinary
vector u scaled to all-subnormal (1e-40), to all 1e-30, and u with one
element 3e38.  Every answer is either right -- each id's distance (or
hybrid's vector_score) as numpy computes it in double from the stored
float32 vectors and the float32 query, the exact paths' top k as numpy's --
or a clear error (l2's query beyond float32's range); never the old
answer, every distance 1.0 (or inf) and the first k ids.  Also: a zero
query under cosine is an error; embeddings the search cannot score are
refused by INSERT (and skipped by h5mem_migrate), a zero embedding under
cosine is kept, at distance 1; an l2 distance that overflows float32 is an
error naming the record.

Run by make check with Debian's /usr/bin/python3 (numpy).
"""
import json
import os
import sqlite3
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, failures, finish, q  # noqa: E402
from sqltest import vec_dist  # noqa: E402

DIM = 16
N = 600   # (at least 256 at the checkpoint: IVF trains its lists)
TAIL = 20  # rows after the checkpoint: searched exactly beside the index
K = 10


def ref(metric, qv, rows):
    """numpy in double: distances and (hybrid's vector_score) scores."""
    d = vec_dist(metric, qv, rows)
    if metric == "cosine":
        return d, 1 - d
    if metric == "l2":
        return d, 1 / (1 + d)
    return d, -d


def tolerance(metric, qv, rows):
    """Per row: float32 kernels' error bound (relative to the terms' scale)."""
    qd, rd = qv.astype(np.float64), rows.astype(np.float64)
    if metric == "cosine":
        return np.full(len(rows), 1e-4)
    if metric == "l2":
        return 1e-4 * np.sqrt(((rd - qd) ** 2).sum(axis=1)) + 1e-30
    return 1e-4 * np.abs(rd * qd).sum(axis=1) + 1e-300


def judge(what, got, ids, dref, tol, exact):
    """got: [(id, value)] best first; dref/tol by position in ids; exact:
    the top k must be numpy's (up to near ties)."""
    where = {int(i): j for j, i in enumerate(ids)}
    if len(got) != min(K, len(ids)):
        check(False, "%s: %d results, expected %d" % (what, len(got), min(K, len(ids))))
        return
    bad = [(g, float(dref[where[g[0]]])) for g in got
           if g[0] not in where or not abs(g[1] - dref[where[g[0]]]) <= tol[where[g[0]]]]
    check(not bad, "%s: distances differ from numpy's (got, numpy): %r" % (what, bad[:3]))
    check(len({g[1] for g in got}) > 1, "%s: every distance the same (%r)" % (what, got[0][1]))
    check([g[0] for g in got] != sorted(ids)[:K], "%s: the first %d ids" % (what, K))
    if exact:
        order = np.lexsort((ids, dref))
        kth = dref[order[K - 1]]
        tolk = tol[order[K - 1]]
        gotids = {g[0] for g in got}
        missing = [int(ids[i]) for i in order[:K] if int(ids[i]) not in gotids and dref[i] < kth - 2 * tolk]
        check(not missing, "%s: the exact top %d lacks %r" % (what, K, missing))


def queries(u):
    big = u.copy()
    big[5] = np.float32(3e38)
    return [("ordinary", u), ("all 1e-40 (subnormal)", (u * np.float32(1e-40)).astype(np.float32)),
            ("all 1e-30", (u * np.float32(1e-30)).astype(np.float32)), ("one element 3e38", big)]


def refused(what, msg, metric, name):
    """An error is right only where the query is out of l2's range."""
    ok = metric == "l2" and name == "one element 3e38" and "float32 range" in msg and "l2" in msg
    check(ok, "%s: unexpected error %r" % (what, msg))


def run(d, index, metric, storage, rng):
    fn = os.path.join(d, "n_%s_%s_%s.h5" % (index, metric, storage))
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, metric=%s, index=%s, storage=%s)"
               % (q(fn), DIM, metric, index, storage))
    embs = rng.standard_normal((N + TAIL, DIM)).astype(np.float32)
    if storage == "float16":  # (what the store keeps)
        embs = embs.astype(np.float16).astype(np.float32)
    db.execute("BEGIN")
    for i in range(N):
        db.execute("INSERT INTO mem(id, text, embedding) VALUES (?, ?, ?)", (i + 1, "note %d" % i, embs[i].tobytes()))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    for i in range(N, N + TAIL):
        db.execute("INSERT INTO mem(id, text, embedding) VALUES (?, ?, ?)", (i + 1, "note %d" % i, embs[i].tobytes()))
    info = json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
    if index != "flat":
        check(info["graph_rows"] == N, "%s/%s: the index covers the checkpointed rows: %r" % (index, metric, info))
    ids = np.arange(1, N + TAIL + 1)
    u = rng.standard_normal(DIM).astype(np.float32)
    forms = [
        ("vec_search", "SELECT id, distance FROM vec_search('mem', ?, %d)" % K, False, 0),
        ("vec_search exact", "SELECT id, distance FROM vec_search('mem', ?, %d, '{\"exact\": true}')" % K, True, 0),
        ("KNN", "SELECT id, distance FROM mem WHERE embedding MATCH ? AND k = %d" % K, index == "flat", 0),
        ("hybrid", "SELECT id, vector_score FROM hybrid('mem', NULL, ?, %d)" % K, False, 1),
        ("hybrid exact", "SELECT id, vector_score FROM hybrid('mem', NULL, ?, %d, '{\"exact\": true}')" % K, True, 1),
    ]
    for name, qv in queries(u):
        dref, sref = ref(metric, qv, embs)
        tol = tolerance(metric, qv, embs)
        for form, sql, exact, col in forms:
            what = "%s/%s/%s %s, query %s" % (index, metric, storage, form, name)
            try:
                got = db.execute(sql, (qv.tobytes(),)).fetchall()
            except sqlite3.Error as e:
                refused(what, str(e), metric, name)
                continue
            check(not (metric == "l2" and name == "one element 3e38"), "%s: must be refused, got %r" % (what, got[:3]))
            if col:  # hybrid: best score first; as distances (smaller is better) for judge
                judge(what, [(i, -s) for i, s in got], ids, -sref, tol / (1 + dref) ** 2 if metric == "l2" else tol,
                      exact)
            else:
                judge(what, got, ids, dref, tol, exact)
        if metric == "cosine" and name != "ordinary":
            # a scaled query has the unscaled one's cosine distances
            base = db.execute(forms[1][1], (u.tobytes(),)).fetchall()
            scaled = db.execute(forms[1][1], (qv.tobytes(),)).fetchall()
            if name == "all 1e-30":  # (1e-40 loses digits to subnormal rounding before h5mem sees it)
                check([i for i, _ in base] == [i for i, _ in scaled] and
                      all(abs(a[1] - b[1]) <= 1e-5 for a, b in zip(base, scaled)),
                      "%s/cosine: query x 1e-30 has the query's distances: %r vs %r" % (index, base[:3], scaled[:3]))
    if metric == "cosine":
        z = np.zeros(DIM, np.float32).tobytes()
        for sql in ("SELECT * FROM vec_search('mem', ?, 3)", "SELECT id FROM mem WHERE embedding MATCH ? AND k = 3",
                    "SELECT * FROM hybrid('mem', NULL, ?, 3)"):
            expect_error(db, sql, "a zero query vector has no cosine distance", (z,))
    db.close()


def test_stored(d):
    """INSERT refuses what the search cannot score; a zero embedding under
    cosine stays (distance 1); an l2 distance beyond float32 is an error."""
    for metric in ("cosine", "l2", "dot"):
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4, metric=%s)" % (q(os.path.join(d, "st_%s.h5" % metric)), metric))
        db.execute("INSERT INTO mem(id, text, embedding) VALUES (1, 'a', '[1, 2, 3, 4]')")
        expect_error(db, "INSERT INTO mem(text, embedding) VALUES ('b', '[1e20, 0, 0, 0]')", "beyond the float32 range")
        expect_error(db, "UPDATE mem SET embedding = '[1e19, 1e19, 1e19, 1e19]' WHERE id = 1", "beyond the float32 range")
        tiny = "INSERT INTO mem(id, text, embedding) VALUES (20, 'c', '[1e-30, 1e-30, 1e-30, 1e-30]')"
        if metric == "cosine":
            expect_error(db, tiny, "below the float32 range")
            db.execute("INSERT INTO mem(id, text, embedding) VALUES (30, 'z', '[0, 0, 0, 0]')")
            got = db.execute("SELECT id, distance FROM vec_search('mem', '[1, 2, 3, 4]', 5)").fetchall()
            check(len(got) == 2 and got[0][0] == 1 and abs(got[0][1]) < 1e-6 and got[1] == (30, 1.0),
                  "cosine: a zero embedding is at distance 1: %r" % got)
        else:
            db.execute(tiny)  # l2 and dot score it
            qt = "[1e-30, 1e-30, 1e-30, 1e-30]" if metric == "l2" else "[-1e-30, -1e-30, -1e-30, -1e-30]"
            got = db.execute("SELECT id, distance FROM vec_search('mem', ?, 1)", (qt,)).fetchall()
            want = 0.0 if metric == "l2" else 4e-60
            check(got and got[0][0] == 20 and abs(got[0][1] - want) <= 1e-5 * abs(want), "%s: tiny rows: %r" % (metric, got))
        if metric == "l2":  # each in range, their distance not
            db.execute("INSERT INTO mem(id, text, embedding) VALUES (40, 'd', '[1.5e19, 0, 0, 0]')")
            for sql in ("SELECT * FROM vec_search('mem', '[-1.5e19, 0, 0, 0]', 5)",
                        "SELECT id FROM mem WHERE embedding MATCH '[-1.5e19, 0, 0, 0]' AND k = 5",
                        "SELECT * FROM hybrid('mem', NULL, '[-1.5e19, 0, 0, 0]', 5)"):
                expect_error(db, sql, "record 40 overflows float32 (metric=l2)")
        if metric == "dot":  # scaled: right however large
            db.execute("INSERT INTO mem(id, text, embedding) VALUES (40, 'd', '[1.5e19, 0, 0, 0]')")
            got = db.execute("SELECT id, distance FROM vec_search('mem', '[1e19, 0, 0, 1]', 1)").fetchall()
            check(got and got[0][0] == 40 and abs(got[0][1] + 1.5e38) <= 1e-6 * 1.5e38, "dot: large: %r" % got)
        db.close()


def test_migrate(d):
    src = os.path.join(d, "src.db")
    s = sqlite3.connect(src)
    s.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT, embedding BLOB)")
    for i, v in enumerate([[1, 2, 3, 4], [1e20, 0, 0, 0], [1e-30] * 4, [0.5, 0.5, 0.5, 0.5]]):
        s.execute("INSERT INTO notes VALUES (?, ?, ?)", (i + 1, "n%d" % i, np.array(v, np.float32).tobytes()))
    s.commit()
    s.close()
    db = connect()
    rep = json.loads(db.execute("SELECT h5mem_migrate(?, ?, ?)", (src, os.path.join(d, "mig.h5"),
                                json.dumps({"table": "notes", "metric": "cosine"}))).fetchone()[0])
    check(rep.get("rows_written") == 2 and rep.get("skipped", {}).get("vector_range") == 2,
          "h5mem_migrate skips what the search cannot score: %r" % rep)
    db.close()


def main():
    rng = np.random.default_rng(17)
    with tempfile.TemporaryDirectory() as d:
        for index in ("flat", "hnsw", "ivf"):
            for metric in ("cosine", "l2", "dot"):
                for storage in ("float32", "float16"):
                    run(d, index, metric, storage, rng)
        test_stored(d)
        test_migrate(d)
    finish()


if __name__ == "__main__":
    main()
