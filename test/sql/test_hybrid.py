"""hybrid() against the fusion recomputed in Python from its two parts:

- the vector side is vec_search (exact, tested against numpy elsewhere), the
  keyword side FTS5's bm25() (the oracle of test_bm25.py); for each query
  the union of the vector side's `candidates` and the keyword side's
  `keyword_candidates`, both scores of every record of it, then weighted
  min-max fusion (default 0.4 / 0.6, and other weights) or RRF (k = 60):
  ids and scores equal to 1e-9;
- filters pushed down (both sides see only the allowed records);
- query text only, query vector only; re-ranking by recency, source
  authority and activation; confidence rejection;
- retrieval writes nothing (the file and its log are unchanged);
- the hashed text embedder gives the demo's vectors (deterministic);
- errors for bad options and arguments.

Run by make check with Debian's /usr/bin/python3 (numpy).
"""
import json
import math
import os
import random
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

DIM = 16
WORDS = ("memory agent store vector search query token index graph session user assistant "
         "note plan task file time data model embed recall score rank text write read open "
         "close fast slow week day night coffee tea garden river mountain city train").split()
SOURCES = ["user", "assistant", "tool"]
NOW = 1_800_000_000


def setup(tmp, n=2000, seed=5):
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    cent = nrng.standard_normal((8, DIM)).astype(np.float32)
    path = os.path.join(tmp, "h.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d)" % (q(path), DIM))
    db.execute("CREATE VIRTUAL TABLE f USING fts5(t)")
    db.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, source, ts, access_count, last_access)")
    recs = []
    for i in range(1, n + 1):
        words = " ".join(rng.choice(WORDS[:int(rng.paretovariate(1.2) * 3) % len(WORDS) + 1])
                         for _ in range(rng.randint(3, 25)))
        v = cent[rng.randrange(8)] + 0.5 * nrng.standard_normal(DIM).astype(np.float32)
        recs.append((i, words, v.astype(np.float32).tobytes(), rng.choice(SOURCES),
                     NOW - rng.randint(0, 200 * 86400), rng.choice([0, 0, 0, 1, 3, 10]),
                     rng.choice([None, NOW - rng.randint(0, 90 * 86400), NOW + 5])))
    db.execute("BEGIN")
    db.executemany("INSERT INTO mem(id, text, embedding, source, ts, access_count, last_access) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)", recs)
    db.execute("COMMIT")
    db.executemany("INSERT INTO f(rowid, t) VALUES (?, ?)", [(r[0], r[1]) for r in recs])
    db.executemany("INSERT INTO m VALUES (?, ?, ?, ?, ?)", [(r[0], r[3], r[4], r[5], r[6])
                                                              for r in recs])
    return db, path, {r[0]: r for r in recs}, cent, nrng


def expected(db, text, qv, k, opts, where="", fwhere="", args=()):
    """The hybrid result recomputed from vec_search and FTS5."""
    pool = max(10 * k, 100)
    nv = max(opts.get("candidates", pool), k)
    nk = max(opts.get("keyword_candidates", pool), k)
    vs = {}
    if qv is not None:
        vs = dict(db.execute("SELECT id, score FROM vec_search('mem', ?, ?, '{\"exact\": true}')"
                             + where, (qv.tobytes(), nv) + args).fetchall())
    ks = {}
    if text is not None:
        terms = list(dict.fromkeys(json.loads(
            db.execute("SELECT h5mem_tokenize(?)", (text,)).fetchone()[0])))
        if terms:
            fq = " OR ".join('"%s"' % t for t in terms)
            ks = dict(db.execute("SELECT f.rowid, -bm25(f) FROM f JOIN m ON m.id = f.rowid "
                                 "WHERE f MATCH ?" + fwhere + " ORDER BY bm25(f), f.rowid LIMIT ?",
                                 (fq,) + args + (nk,)).fetchall())
    union = sorted(set(vs) | set(ks))
    if qv is not None:
        miss = [i for i in union if i not in vs]
        if miss:
            sql = ("SELECT id, score FROM vec_search('mem', ?, ?, '{\"exact\": true}') WHERE id IN (%s)"
                   % ",".join(map(str, miss)))
            vs.update(dict(db.execute(sql, (qv.tobytes(), len(miss))).fetchall()))
    if opts.get("reject_below") is not None and not ks:
        if not vs or max(vs.values()) < opts["reject_below"]:
            return []
    score = {}
    if opts.get("fusion") == "rrf":
        rk = opts.get("rrf_k", 60)
        for r, i in enumerate(sorted(vs, key=lambda i: (-vs[i], i))):
            score[i] = score.get(i, 0) + 1 / (rk + r + 1)
        for r, i in enumerate(sorted(ks, key=lambda i: (-ks[i], i))):
            score[i] = score.get(i, 0) + 1 / (rk + r + 1)
    else:
        wv, wk = opts.get("vector_weight", 0.4), opts.get("keyword_weight", 0.6)
        vals = [vs[i] for i in union if i in vs]
        vmin, vmax = (min(vals), max(vals)) if vals else (0, 0)
        kvals = [ks.get(i, 0.0) for i in union]
        kmin, kmax = min(kvals), max(kvals)
        for i in union:
            vn = 0 if i not in vs else (vs[i] - vmin) / (vmax - vmin) if vmax > vmin else 1.0
            kv = ks.get(i, 0.0)
            kn = (kv - kmin) / (kmax - kmin) if kmax > kmin else (1.0 if kmax > 0 else 0.0)
            score[i] = wv * vn + wk * kn
    if "rerank" in opts:
        rr = opts["rerank"]
        w_rel, w_rec = rr.get("relevance", 1.0), rr.get("recency", 0.2)
        w_auth, w_act = rr.get("authority", 0.1), rr.get("activation", 0.1)
        hl = rr.get("half_life_days", 30) * 86400.0
        now = rr.get("now")
        src = rr.get("sources", {})
        dflt = rr.get("default_authority", 0.5)
        meta = {r[0]: r[1:] for r in db.execute(
            "SELECT id, source, ts, access_count, last_access FROM m WHERE id IN (%s)" % ",".join(
                map(str, union)))}
        best = max(score.values())
        raw = {}
        for i in union:
            acc, la = meta[i][2], meta[i][3]
            idle = 0 if la is None else now - la
            raw[i] = (math.log1p(acc) if acc > 0 else 0) * (1.0 if idle <= 0 else math.pow(0.5, idle / hl))
        maxact = max(raw.values())
        for i in union:
            s, ts, acc, la = meta[i]
            age = now - ts
            rec = 1.0 if age <= 0 else math.pow(0.5, age / hl)
            act = raw[i] / maxact if maxact > 0 else 0
            auth = min(max(src.get(s, dflt), 0), 1)
            rel = score[i] / best if best > 0 else 0
            score[i] = w_rel * rel + w_rec * rec + w_auth * auth + w_act * act
    order = sorted(union, key=lambda i: (-score[i], i))[:k]
    return [(i, score[i], vs.get(i), ks.get(i, 0.0) if text is not None else None) for i in order]


def run(db, text, qv, k, opts, where="", args=()):
    sql = "SELECT id, score, vector_score, keyword_score FROM hybrid('mem', ?, ?, ?, ?)" + where
    return db.execute(sql, (text, None if qv is None else qv.tobytes(), k, json.dumps(opts)) +
                      args).fetchall()


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[0] != y[0]:
            return False
        for u, v in zip(x[1:], y[1:]):
            if (u is None) != (v is None) or (u is not None and abs(u - v) > 1e-9 * max(1, abs(v))):
                return False
    return True


def compare(db, rng, nrng, cent, nq, tag, opts, where="", fwhere="", args=(), text=True, vec=True):
    bad = 0
    for _ in range(nq):
        text_q = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) if text else None
        qv = (cent[rng.randrange(8)] + 0.5 * nrng.standard_normal(DIM)).astype(np.float32) if vec else None
        k = rng.choice([1, 5, 10, 20])
        ours = run(db, text_q, qv, k, opts, where, args)
        exp = expected(db, text_q, qv, k, opts, where, fwhere, args)
        if not same(ours, exp):
            bad += 1
            if bad <= 2:
                print("  %s: %r k=%d\n   ours %r\n   exp  %r" % (tag, text_q, k, ours[:3], exp[:3]))
    check(bad == 0, "%s: %d of %d queries differ" % (tag, bad, nq))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db, path, recs, cent, nrng = setup(tmp)
        rng = random.Random(9)
        compare(db, rng, nrng, cent, 60, "weighted 0.4/0.6", {})
        compare(db, rng, nrng, cent, 30, "weighted 0.7/0.3", {"vector_weight": 0.7, "keyword_weight": 0.3})
        compare(db, rng, nrng, cent, 30, "rrf", {"fusion": "rrf"})
        compare(db, rng, nrng, cent, 20, "small pools", {"candidates": 15, "keyword_candidates": 12})
        db.execute("SELECT h5mem_checkpoint('mem')")
        compare(db, rng, nrng, cent, 30, "after a checkpoint", {})
        compare(db, rng, nrng, cent, 20, "source filter", {}, " WHERE source = ?", " AND m.source = ?",
                ("tool",))
        compare(db, rng, nrng, cent, 20, "ts filter", {}, " WHERE ts >= ?", " AND m.ts >= ?",
                (NOW - 50 * 86400,))
        compare(db, rng, nrng, cent, 20, "text only", {}, vec=False)
        compare(db, rng, nrng, cent, 20, "vector only", {}, text=False)
        rr = {"rerank": {"now": NOW, "recency": 0.5, "half_life_days": 7, "authority": 0.3,
                         "sources": {"user": 1.0, "tool": 0.2}, "activation": 0.2}}
        compare(db, rng, nrng, cent, 30, "re-ranked", rr)
        compare(db, rng, nrng, cent, 10, "re-ranked, default weights", {"rerank": {"now": NOW}})
        # confidence: words no record has and a vector far from everything
        far = np.full(DIM, 0.0, np.float32)
        far[0] = -1.0
        rows = run(db, "zzzunknown qqqnothing", far, 10, {"reject_below": 0.99})
        check(rows == [], "nothing relevant: no rows (%d)" % len(rows))
        rows = run(db, "zzzunknown", far, 10, {})
        check(len(rows) == 10, "without the rule the vector side still answers")
        rows = run(db, "coffee zzzunknown", far, 10, {"reject_below": 0.99})
        check(len(rows) == 10, "a keyword hit is relevant whatever the vectors")
        # retrieval writes nothing
        st = [os.stat(p) for p in (path, path + "-wal")]
        for _ in range(5):
            run(db, "coffee tea", cent[0], 10, rr)
        st2 = [os.stat(p) for p in (path, path + "-wal")]
        check([(s.st_size, s.st_mtime_ns) for s in st] == [(s.st_size, s.st_mtime_ns) for s in st2],
              "hybrid writes nothing")
        acc = db.execute("SELECT sum(access_count) FROM mem").fetchone()[0]
        check(acc == sum(r[5] for r in recs.values()), "access counts unchanged")
        # the deterministic hashed embedder (not semantic): same text, same vector
        a = db.execute("SELECT h5mem_embed_text('coffee by the river', 16)").fetchone()[0]
        b = db.execute("SELECT h5mem_embed_text('coffee by the river', 16)").fetchone()[0]
        check(a == b and len(a) == 64, "h5mem_embed_text is deterministic")
        rows = db.execute("SELECT id FROM hybrid('mem', 'coffee', h5mem_embed_text('coffee', 16), 3)").fetchall()
        check(len(rows) == 3, "hybrid takes h5mem_embed_text's vector")
        # errors
        expect_error(db, "SELECT * FROM hybrid('mem', NULL, NULL, 10)", "query text")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', '[1,2]', 10)", "dim")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"fusion\": \"max\"}')", "fusion")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"vector_weight\": -1}')",
                     "vector_weight")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"vector_weight\": 0, "
                     "\"keyword_weight\": 0}')", "must be > 0")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"rerank\": {\"speed\": 1}}')",
                     "unknown option")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"colour\": 1}')",
                     "unknown option")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x', NULL, 10, '{\"candidates\": 0}')",
                     "candidates")
        expect_error(db, "SELECT * FROM hybrid('mem', 'x')", "")
        db.close()
    finish()


if __name__ == "__main__":
    main()
