"""Exact searches pruned by the int8 sketch (lib/ann/prune.h) answer exactly
as the plain scan does.

A connection's first exact search of a store's file rows is a plain scan;
the second builds the sketch (h5mem_index's sketch_rows), and later ones
score only the rows it cannot rule out. For the embedding and for declared float32 and
float16 vector columns, under l2, cosine and dot, with rows lacking a
column's vector, deleted rows, records in memory after the checkpoint, and
a "where" filter, and cross-modal "columns": every query's answer on a new
connection (a plain scan) equals, id for id and distance for distance (bit
for bit), its answer once the sketch is built, and numpy's exact ranking (distances to
1e-4). Data: unit vectors around a few centres (near ties), exact
duplicates, and rows whose small elements the int8 codes lose (q8.h's
(x, 1, ..., 7) rows). A checkpoint drops the sketch with the old file rows.

The exact part of a graph search (index=hnsw: the file rows past the saved
graph, which a reader scans) is pruned the same way from the second search
(h5mem_index's tail_sketch_rows): a reader's answers, with and without a
filter, with deleted rows past the graph and records in memory, equal its
first search's (a plain scan of those rows) bit for bit, and the rows past
the graph among them have numpy's distances.

Run by make check with Debian's /usr/bin/python3 (numpy).
"""
import json
import os
import shutil
import tempfile

import numpy as np

from sqltest import check, connect, finish, vec_dist

N, DIM, K = 3000, 40, 10
rng = np.random.default_rng(20261204)


def data(kind):
    if kind == "clustered":
        c = rng.standard_normal((6, DIM))
        x = c[np.arange(N) % 6] + 0.05 * rng.standard_normal((N, DIM))
        return (x / np.linalg.norm(x, axis=1)[:, None]).astype(np.float32)
    if kind == "duplicates":
        return rng.standard_normal((7, DIM)).astype(np.float32)[np.arange(N) % 7]
    x = rng.integers(1, 8, (N, DIM)).astype(np.float32)  # lost elements
    x[:, 0] = 1700 + rng.integers(0, 200, N)
    return x


def search(db, q, opts):
    return db.execute("SELECT id, distance FROM vec_search('m', ?, ?, ?)",
                      (q.tobytes(), K, json.dumps(opts))).fetchall()


def index(db):
    return json.loads(db.execute("SELECT h5mem_index('m')").fetchone()[0])


def run(d, metric, storage, kind):
    emb, img = data(kind), data(kind)
    has = np.arange(N) % 4 != 1  # a quarter lack the column's vector
    fn = os.path.join(d, "s_%s_%s_%s.h5" % (metric, storage, kind))
    ddl = ("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, metric=%s, storage=%s, "
           "image %s[%d] distance_metric=%s, grp integer, index=flat, sync=off)"
           % (fn, DIM, metric, storage, storage, DIM, metric))
    db = connect()
    db.execute(ddl)
    db.execute("BEGIN")
    for i in range(N):
        db.execute("INSERT INTO m(id, embedding, image, grp) VALUES (?, ?, ?, ?)",
                   (i + 1, emb[i].tobytes(), img[i].tobytes() if has[i] else None, i % 3))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('m')")
    # deletes among the file rows, records in memory after them
    dead = set(range(5, N, 11))
    db.execute("BEGIN")
    for i in sorted(dead):
        db.execute("DELETE FROM m WHERE id = ?", (i + 1,))
    db.execute("COMMIT")
    extra = 40
    emb2, img2 = data(kind)[:extra], data(kind)[:extra]
    db.execute("BEGIN")
    for j in range(extra):
        db.execute("INSERT INTO m(id, embedding, image, grp) VALUES (?, ?, ?, ?)",
                   (N + j + 1, emb2[j].tobytes(), img2[j].tobytes(), j % 3))
    db.execute("COMMIT")
    E, I = np.vstack([emb, emb2]), np.vstack([img, img2])
    if storage == "float16":
        E, I = E.astype(np.float16).astype(np.float32), I.astype(np.float16).astype(np.float32)
    live = np.array([i not in dead for i in range(N + extra)])
    hasI = np.concatenate([has, np.ones(extra, bool)]) & live
    grp = np.arange(N + extra) % 3
    grp[N:] = np.arange(extra) % 3
    qs = [E[rng.integers(0, N)] + 0.01 * rng.standard_normal(DIM).astype(np.float32) for _ in range(6)]
    qs.append(E[3].copy())  # a stored row itself
    cases = []
    for q in qs:
        q = q.astype(np.float32)
        cases.append((q, {"exact": True}, E, live))
        cases.append((q, {"exact": True, "column": "image"}, I, hasI))
        cases.append((q, {"exact": True, "where": {"grp": 1}}, E, live & (grp == 1)))
        cases.append((q, {"exact": True, "columns": ["embedding", "image"]}, None, None))
    tag = "%s/%s/%s" % (metric, storage, kind)
    check(index(db)["sketch_rows"] == 0, "%s: no sketch before a search" % tag)
    plain = []  # each on a new connection: its first exact search, a plain scan
    for q, o, _, _ in cases:
        f = connect()
        f.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % fn)
        plain.append(search(f, q, o))
        check(index(f)["sketch_rows"] == 0, "%s %s: one search built a sketch" % (tag, o))
        f.close()
    for q, o, _, _ in cases[:2]:
        search(db, q, o)
    ix = index(db)
    check(ix["sketch_rows"] == 0, "%s: one search built the sketch" % tag)
    for q, o, _, _ in cases:  # (the second search of each slot builds its sketch)
        search(db, q, o)
    ix = index(db)
    check(ix["sketch_rows"] == N, "%s: the embedding's sketch covers the %d file rows: %s" % (tag, N, ix["sketch_rows"]))
    check(ix["columns"][0]["sketch_rows"] == N, "%s: the column's sketch: %s" % (tag, ix["columns"][0]))
    again = [search(db, q, o) for q, o, _, _ in cases]
    for (q, o, M, ok), a, b in zip(cases, plain, again):
        check(a == b, "%s %s: plain %s, pruned %s" % (tag, o, a, b))
        if M is None:
            continue
        dd = vec_dist(metric, q, M)
        dd[~ok] = np.inf
        want = np.sort(dd)[:K]
        got = np.array([r[1] for r in b])
        check(len(b) == K and np.allclose(got, want, rtol=1e-4, atol=1e-4),
              "%s %s: distances %s, numpy %s" % (tag, o, got, want))
        for i, dist in b:  # each id's own distance is numpy's
            check(ok[i - 1] and abs(dd[i - 1] - dist) <= 1e-4 * max(1, abs(dist)),
                  "%s %s: id %d at %r, numpy %r" % (tag, o, i, dist, dd[i - 1]))
    # a checkpoint drops the sketch with the file rows it covered
    db.execute("SELECT h5mem_checkpoint('m')")
    check(index(db)["sketch_rows"] == 0, "%s: the sketch outlived its checkpoint" % tag)
    for (q, o, _, _), a in zip(cases[:4], again[:4]):
        search(db, q, o)
        b = search(db, q, o)
        check(a == b, "%s %s after the checkpoint: %s, then %s" % (tag, o, a, b))
    check(index(db)["sketch_rows"] == N + extra - len(dead) or index(db)["sketch_rows"] == N + extra,
          "%s: the new sketch covers the new file rows: %s" % (tag, index(db)["sketch_rows"]))
    db.close()


def image(ix):
    """h5mem_index's entry of the column image."""
    return [c for c in ix["columns"] if c["declaration"].startswith("image")][0]


def tail(d, metric, storage):
    """A reader of an index=hnsw store whose last checkpoint did not save a
    graph: 20,480 rows in the saved graph, 2,400 past it (fewer than an
    eighth: no new save) on topics of their own, some deleted, 30 records
    in memory; and the same for a declared vector column's graph (image:
    each embedding reversed)."""
    g, t, extra, dim = 20480, 2400, 30, 24
    c = rng.standard_normal((12, dim))
    topic = np.where(np.arange(g + t + extra) < g, np.arange(g + t + extra) % 8, 8 + np.arange(g + t + extra) % 4)
    x = (c[topic] + 0.3 * rng.standard_normal((g + t + extra, dim))).astype(np.float32)
    fn = os.path.join(d, "t_%s_%s.h5" % (metric, storage))
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', dim=%d, metric=%s, storage=%s, "
               "grp integer, image %s[%d] distance_metric=%s, index=hnsw, sync=off)"
               % (fn, dim, metric, storage, storage, dim, metric))

    def put(a, b):
        db.execute("BEGIN")
        db.executemany("INSERT INTO m(id, embedding, grp, image) VALUES (?, ?, ?, ?)",
                       [(i + 1, x[i].tobytes(), i % 3, x[i][::-1].tobytes()) for i in range(a, b)])
        db.execute("COMMIT")
    put(0, g)
    db.execute("SELECT h5mem_checkpoint('m')")
    put(g, g + t)
    db.execute("SELECT h5mem_checkpoint('m')")
    tag = "tail %s/%s" % (metric, storage)
    ix = index(db)
    check(ix["saved_rows"] == g and ix["graph_rows"] == g + t and ix["tail_sketch_rows"] == 0,
          "%s: the writer's graph grew, none saved past %d: %s" % (tag, g, ix))
    dead = set(range(g + 3, g + t, 7))
    db.execute("BEGIN")
    for i in sorted(dead):
        db.execute("DELETE FROM m WHERE id = ?", (i + 1,))
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('m')")
    db.close()
    X = x.astype(np.float16).astype(np.float32) if storage == "float16" else x
    XI = X[:, ::-1]
    live = np.array([i not in dead for i in range(g + t + extra)])
    grp = np.arange(g + t + extra) % 3
    # queries near rows past the graph (their nearest are there), and one of them itself
    qs = [X[g + 11 * j] + 0.02 * rng.standard_normal(dim).astype(np.float32) for j in range(5)]
    qs.append(X[g + 100].copy())
    cases = []
    for q in qs:
        q = q.astype(np.float32)
        cases.append((q, {"ef": 64}, live, X))
        cases.append((q, {"ef": 64, "where": {"grp": 1}}, live & (grp == 1), X))
        cases.append((q[::-1].copy(), {"ef": 64, "column": "image"}, live, XI))

    def reader():
        r = connect()
        r.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % fn)
        r.execute("BEGIN")  # records in memory after the file rows (its own, not committed)
        r.executemany("INSERT INTO m(id, embedding, grp, image) VALUES (?, ?, ?, ?)",
                      [(i + 1, x[i].tobytes(), i % 3, x[i][::-1].tobytes()) for i in range(g + t, g + t + extra)])
        return r
    plain = []  # each the first search of a new reader: the rows past the graph scanned
    for q, o, _, _ in cases:
        r = reader()
        ix = index(r)
        check(ix["saved_rows"] == g and ix["exact_rows"] == t + extra and image(ix)["graph_rows"] == g,
              "%s: a reader's graphs: %s" % (tag, ix))
        plain.append(search(r, q, o))
        ix = index(r)
        check(ix["tail_sketch_rows"] == 0 and image(ix)["tail_sketch_rows"] == 0,
              "%s %s: one search built a sketch" % (tag, o))
        r.close()
    r = reader()
    for q, o, _, _ in cases[:3]:  # (the second search of each slot builds its sketch)
        search(r, q, o)
        search(r, q, o)
    ix = index(r)
    check(ix["tail_sketch_rows"] == t and image(ix)["tail_sketch_rows"] == t,
          "%s: the sketches cover the %d file rows past the graphs: %s" % (tag, t, ix))
    past = 0
    for (q, o, ok, X), a in zip(cases, plain):
        b = search(r, q, o)
        check(a == b, "%s %s: plain %s, pruned %s" % (tag, o, a, b))
        dd = vec_dist(metric, q, X)
        for i, dist in b:
            check(ok[i - 1] and abs(dd[i - 1] - dist) <= 1e-4 * max(1, abs(dist)),
                  "%s %s: id %d at %r, numpy %r" % (tag, o, i, dist, dd[i - 1]))
            past += i > g
    check(past >= len(cases) * K // 2, "%s: the answers came from the graph (%d past it)" % (tag, past))
    r.execute("ROLLBACK")
    r.close()


def main():
    d = tempfile.mkdtemp(prefix="h5mem_sketch_")
    try:
        for metric in ("l2", "cosine", "dot"):
            tail(d, metric, "float16" if metric == "cosine" else "float32")
        for metric in ("l2", "cosine", "dot"):
            for storage in ("float32", "float16"):
                for kind in ("clustered", "duplicates", "lost"):
                    run(d, metric, storage, kind)
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
