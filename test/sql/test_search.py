"""Vector search over the memory store: vec_search and the KNN form
(`embedding MATCH :q AND k = N`) against numpy brute force.

- f32 and f16 storage, cosine / l2 / dot, records without embeddings,
  deleted and updated records, rows in the file (checkpointed) and in the
  log: the top k equals numpy's exact top k (distances to 1e-5, ids where
  distances are not tied);
- filters before ranking (source, session, tier, ts ranges, id IN), alone
  and combined: the exact top k among the matching records, never fewer
  than k when k match;
- identical results after reopening; deleted records never come back;
- errors: wrong dimension, NaN, bad options, unknown table.

Run by make check with Debian's /usr/bin/python3 (numpy).
"""
import json
import os
import random
import sqlite3
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402
from sqltest import vec_dist as dist  # noqa: E402


def same_topk(got, ref_ids, ref_d, k, what):
    """got: [(id, distance)]; ref: all candidate ids and distances."""
    order = np.lexsort((ref_ids, ref_d))
    want = [(int(ref_ids[i]), float(ref_d[i])) for i in order[:k]]
    if len(got) != len(want):
        check(False, "%s: %d results, expected %d" % (what, len(got), len(want)))
        return
    tol = 2e-4
    ok = all(abs(g[1] - w[1]) <= tol * max(1.0, abs(w[1])) for g, w in zip(got, want))
    # ids must agree except among (near-)ties
    byid = {int(i): float(d) for i, d in zip(ref_ids, ref_d)}
    ok = ok and all(g[0] in byid and abs(byid[g[0]] - g[1]) <= tol * max(1.0, abs(g[1])) for g in got)
    if want:
        kth = want[-1][1]
        ok = ok and all(byid[w[0]] > kth + tol or w[0] in {g[0] for g in got} for w in want)
    check(ok, "%s: top-%d differs: %r vs %r" % (what, k, got[:4], want[:4]))


def run(d, storage, metric, rng):
    fn = os.path.join(d, "s_%s_%s.h5" % (storage, metric))
    dim = 16
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, storage=%s, metric=%s)" % (q(fn), dim, storage, metric))
    n = 3003  # (not a multiple of 8: the filters test the file rows 8 at a time, then the rest)
    centres = rng.standard_normal((8, dim))
    embs = (centres[rng.integers(0, 8, n)] + 0.3 * rng.standard_normal((n, dim))).astype(np.float32)
    sources = ["user", "agent", "tool"]
    recs = {}
    db.execute("BEGIN")
    for i in range(1, n + 1):
        e = None if i % 97 == 0 else embs[i - 1]
        r = dict(id=i, src=sources[i % 3], sess="s%d" % (i % 10), tier=["working", "episodic"][i % 2], ts=1000 + i, emb=e)
        recs[i] = r
        db.execute("INSERT INTO mem(id, text, embedding, source, session, tier, ts) VALUES (?,?,?,?,?,?,?)",
                   (i, "t%d" % i, None if e is None else e.tobytes(), r["src"], r["sess"], r["tier"], r["ts"]))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")  # half of what follows stays in the log
    for i in rng.choice(np.arange(1, n + 1), 300, replace=False):
        i = int(i)
        if i % 2:
            db.execute("DELETE FROM mem WHERE id = ?", (i,))
            del recs[i]
        else:
            e = rng.standard_normal(dim).astype(np.float32)
            db.execute("UPDATE mem SET embedding = ? WHERE id = ?", (e.tobytes(), i))
            recs[i]["emb"] = e

    def stored(e):
        return e.astype(np.float16).astype(np.float32) if storage == "float16" else e

    def brute(qv, pred=lambda r: True):
        ids = [i for i, r in recs.items() if r["emb"] is not None and pred(r)]
        if not ids:
            return np.array([], dtype=np.int64), np.array([])
        rows = np.array([stored(recs[i]["emb"]) for i in ids])
        return np.array(ids), dist(metric, qv, rows)

    filters = [
        ("", lambda r: True),
        ("WHERE source = 'user'", lambda r: r["src"] == "user"),
        ("WHERE session = 's3' AND tier = 'episodic'", lambda r: r["sess"] == "s3" and r["tier"] == "episodic"),
        ("WHERE ts BETWEEN 1500 AND 1600", lambda r: 1500 <= r["ts"] <= 1600),
        ("WHERE ts > 3990", lambda r: r["ts"] > 3990),
        ("WHERE id IN (5, 17, 300, 2999, 123456)", lambda r: r["id"] in (5, 17, 300, 2999, 123456)),
        ("WHERE source = 'tool' AND ts < 1100", lambda r: r["src"] == "tool" and r["ts"] < 1100),
        ("WHERE source = 'nobody'", lambda r: False),
    ]
    for t in range(30):
        qv = (centres[t % 8] + 0.3 * rng.standard_normal(dim)).astype(np.float32)
        k = [1, 10, 50][t % 3]
        for sql, pred in filters[: (8 if t < 10 else 2)]:
            got = db.execute("SELECT id, distance FROM vec_search('mem', ?, ?) %s" % sql, (qv.tobytes(), k)).fetchall()
            ids, ds = brute(qv, pred)
            same_topk(got, ids, ds, k, "%s/%s vec_search %s" % (storage, metric, sql))
            if sql.startswith("WHERE") or sql == "":
                cond = sql[6:] if sql else ""
                g2 = db.execute("SELECT id, distance FROM mem WHERE embedding MATCH ? AND k = ? %s" % ("AND " + cond if cond else ""), (qv.tobytes(), k)).fetchall()
                check(g2 == got, "%s/%s MATCH form equals vec_search (%s)" % (storage, metric, sql))
    # JSON queries, large k, k = 0
    qv = embs[0]
    g = db.execute("SELECT count(*) FROM vec_search('mem', ?, 100000)", (json.dumps([float(x) for x in qv]),)).fetchone()[0]
    check(g == sum(1 for r in recs.values() if r["emb"] is not None), "k beyond the store: every record with an embedding (%d)" % g)
    check(db.execute("SELECT count(*) FROM vec_search('mem', ?, 0)", (qv.tobytes(),)).fetchone()[0] == 0, "k = 0")
    # the same after reopening
    before = db.execute("SELECT id, distance, score, text, source, session, ts, tier FROM vec_search('mem', ?, 20)", (qv.tobytes(),)).fetchall()
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    after = db.execute("SELECT id, distance, score, text, source, session, ts, tier FROM vec_search('mem', ?, 20)", (qv.tobytes(),)).fetchall()
    check(before == after, "%s/%s: identical after reopen" % (storage, metric))
    dead = [i for i in range(1, n + 1) if i not in recs]
    got = {r[0] for r in db.execute("SELECT id FROM vec_search('mem', ?, 100000)", (qv.tobytes(),))}
    check(not (got & set(dead)), "deleted records never come back")
    db.close()


def test_errors(d):
    fn = os.path.join(d, "err.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(fn))
    db.execute("INSERT INTO mem(text, embedding) VALUES ('a', '[1,2,3]')")
    for sql, word in [
        ("SELECT * FROM vec_search('mem', '[1,2]', 3)", "dim=3"),
        ("SELECT * FROM vec_search('mem', '[1,2,', 3)", "JSON"),
        ("SELECT * FROM vec_search('mem', x'00000000', 3)", "dim=3"),
        ("SELECT * FROM vec_search('mem', NULL, 3)", "NULL"),
        ("SELECT * FROM vec_search('mem', '[1,2,3]', -1)", "k must be"),
        ("SELECT * FROM vec_search('mem', '[1,2,3]', 3, '{\"ef\": 0}')", "ef"),
        ("SELECT * FROM vec_search('mem', '[1,2,3]', 3, '{\"speed\": 1}')", "unknown option"),
        ("SELECT * FROM vec_search('mem', '[1,2,3]', 3, '[1]')", "JSON object"),
        ("SELECT * FROM vec_search('nope', '[1,2,3]', 3)", "not an h5mem table"),
        ("SELECT * FROM mem WHERE embedding MATCH '[1,2,3]'", "k = N"),
    ]:
        try:
            db.execute(sql).fetchall()
            check(False, "%s must fail" % sql)
        except sqlite3.Error as e:
            check(word in str(e), "%s: %r lacks %r" % (sql, str(e), word))
    # ts bounds of every kind agree with SQLite's own comparison of the column
    for k in range(2, 7):
        db.execute("INSERT INTO mem(text, embedding, ts) VALUES ('t', '[1,2,3]', ?)", (k * 10,))
    for cond in ["ts < 1e30", "ts > 1e30", "ts > -1e30", "ts = -1e30", "ts >= 20.5", "ts < 40.0", "ts = 30.0",
                 "ts = 30.5", "ts > 'abc'", "ts < 'abc'", "ts <= 9223372036854775807", "ts > 9223372036854775807",
                 "ts BETWEEN 25 AND 45"]:
        a = db.execute("SELECT count(*) FROM vec_search('mem', '[1,2,3]', 100) WHERE %s" % cond).fetchone()[0]
        b = db.execute("SELECT count(*) FROM mem WHERE embedding IS NOT NULL AND %s" % cond).fetchone()[0]
        check(a == b, "filter %s: %d rows, SQLite says %d" % (cond, a, b))
    nan = np.array([1, np.nan, 0], dtype="<f4").tobytes()
    try:
        db.execute("SELECT * FROM vec_search('mem', ?, 3)", (nan,)).fetchall()
        check(False, "NaN query must fail")
    except sqlite3.Error as e:
        check("NaN" in str(e), "NaN query message %s" % e)
    # a table used only through vec_search is connected on demand
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE IF NOT EXISTS mem USING h5mem(path=%s)" % q(fn))
    db2.close()


def main():
    d = tempfile.mkdtemp(prefix="h5search_")
    rng = np.random.default_rng(11)
    for storage in ("float32", "float16"):
        for metric in ("cosine", "l2", "dot"):
            run(d, storage, metric, rng)
    test_errors(d)
    finish()


if __name__ == "__main__":
    main()
