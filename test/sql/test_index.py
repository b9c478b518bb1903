"""The store's HNSW index (CREATE ... index=hnsw) through SQL, against numpy
brute force on clustered data (centres plus noise):

- recall@10 at 1K (f32/f16 x cosine/l2/dot) and 10K above stated floors,
  every returned distance the exact one;
- filtered searches: random 50%, 10% (tier, and id IN) and 1% (source) of
  the records, the cluster farthest from the query (session): never fewer than k, the exact filtered top k on
  the scan paths and recall above a floor on the over-fetched graph path;
- rows added after the graph was saved are found (searched exactly), the
  save policy (a new graph once the rows past it are >= 256 and >= 1/8);
- deleted records never come back; identical results after reopening and
  from the KNN form; the graph read in place from the mapped file;
- a damaged saved graph: the store still opens, says why, searches exactly;
- optimize rebuilds the graph; a store made before indexes existed (no
  index attributes) opens as flat; errors for bad options.

Run by make check with Debian's /usr/bin/python3 (numpy, h5py).
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402
from sqltest import vec_dist as dist  # noqa: E402

K = 10

# h5mem_index as another process reading the store sees it
READER = r'''
import sqlite3, sys
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True); db.load_extension(sys.argv[1])
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % sys.argv[2].replace("'", "''"))
print(db.execute("SELECT h5mem_index('mem')").fetchone()[0])
'''


def clustered(rng, n, dim, ncent=32, spread=0.35):
    cent = rng.uniform(-1, 1, (ncent, dim)).astype(np.float32)
    lab = rng.integers(0, ncent, n)
    x = cent[lab] + spread * rng.standard_normal((n, dim)).astype(np.float32)
    return x.astype(np.float32), lab, cent


def top(metric, qv, X, ids, k=K):
    d = dist(metric, qv, X)
    o = np.lexsort((ids, d))[:k]
    return [int(ids[i]) for i in o], d


def search(db, qv, k=K, opts=None, where=""):
    sql = "SELECT id, distance FROM vec_search('mem', ?, ?%s)%s" % (", ?" if opts else "", where)
    args = (qv.tobytes(), k) + ((json.dumps(opts),) if opts else ())
    return db.execute(sql, args).fetchall()


def info(db):
    return json.loads(db.execute("SELECT h5mem_index('mem')").fetchone()[0])


def make(path, dim, metric="cosine", storage="float32", extra="", index="hnsw"):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, metric=%s, storage=%s, "
               "index=%s%s)" % (q(path), dim, metric, storage, index, extra))
    return db


def insert(db, X, first_id=1, sources=None, sessions=None, tiers=None):
    db.execute("BEGIN")
    for i, v in enumerate(X):
        db.execute("INSERT INTO mem(id, text, embedding, source, session, tier) VALUES (?, ?, ?, ?, ?, ?)",
                   (first_id + i, "m%d" % (first_id + i), v.tobytes(),
                    sources[i] if sources is not None else "s",
                    sessions[i] if sessions is not None else None,
                    tiers[i] if tiers is not None else None))
    db.execute("COMMIT")


def stored(X, storage):
    return X.astype(np.float16).astype(np.float32) if storage == "float16" else X


def recall_and_distances(db, metric, Q, Xs, ids, what, opts=None):
    """Mean recall@10 over Q; every distance checked against the exact one."""
    rec, bad = 0.0, 0
    for qv in Q:
        want, d = top(metric, qv, Xs, ids)
        got = search(db, qv, opts=opts)
        byid = dict(zip(ids.tolist(), d.tolist()))
        for gid, gd in got:
            if gid not in byid or abs(byid[gid] - gd) > 2e-4 * max(1.0, abs(gd)):
                bad += 1
        check(len(got) == K, "%s: %d results" % (what, len(got)))
        rec += len(set(want) & {g[0] for g in got}) / K
    check(bad == 0, "%s: %d distances differ from the exact ones" % (what, bad))
    return rec / len(Q)


def test_recall_small(d, rng):
    """1K rows, every storage and metric: recall@10 >= 0.97 at the default ef."""
    for storage in ("float32", "float16"):
        for metric in ("cosine", "l2", "dot"):
            path = os.path.join(d, "r_%s_%s.h5" % (storage, metric))
            X, _, cent = clustered(rng, 1000, 24)
            db = make(path, 24, metric, storage)
            insert(db, X)
            db.execute("SELECT h5mem_checkpoint('mem')")
            inf = info(db)
            # (the writer keeps the graph it built in memory; a reader reads it in place)
            check(inf["graph_rows"] == 1000 and inf["saved_rows"] == 1000 and inf["exact_rows"] == 0 and
                  not inf["in_place"] and inf["quantize"] == "int8" and inf["q8_rows"] == 1000,
                  "1K %s %s: index %r" % (storage, metric, inf))
            Q = clustered(rng, 40, 24)[0]
            ids = np.arange(1, 1001)
            r = recall_and_distances(db, metric, Q, stored(X, storage), ids, "1K %s %s" % (storage, metric))
            print("recall@10 1K %s %s: %.4f" % (storage, metric, r))
            check(r >= 0.97, "1K %s %s: recall %.4f < 0.97" % (storage, metric, r))
            db.close()


def test_10k(d, rng):
    """10K rows: recall floors, filters, tail rows, deletes, reopen, damage, optimize."""
    path = os.path.join(d, "big.h5")
    dim, n, metric = 48, 10000, "l2"
    X, lab, cent = clustered(rng, n, dim, spread=0.6)
    src = np.array(["p%d" % (r % 100) for r in rng.permutation(n)])  # p0..p99: 1% each
    db = make(path, dim, metric)
    u = rng.random(n)
    tiers = np.where(u < 0.5, "h", np.where(u < 0.6, "t", "o"))  # 50%, 10%, 40%
    insert(db, X, sources=src, sessions=["c%d" % c for c in lab], tiers=tiers)
    db.execute("SELECT h5mem_checkpoint('mem')")
    inf = info(db)
    check(inf["graph_rows"] == n and inf["saved_rows"] == n and inf["note"] == "", "10K: index %r" % inf)
    ids = np.arange(1, n + 1)
    Q = (cent[rng.integers(0, 32, 60)] + 0.6 * rng.standard_normal((60, dim))).astype(np.float32)
    r64 = recall_and_distances(db, metric, Q, X, ids, "10K ef=64")
    r200 = recall_and_distances(db, metric, Q, X, ids, "10K ef=200", {"ef": 200})
    print("recall@10 10K: ef=64 %.4f, ef=200 %.4f" % (r64, r200))
    check(r64 >= 0.95, "10K: recall %.4f < 0.95 at ef=64" % r64)
    check(r200 >= 0.99, "10K: recall %.4f < 0.99 at ef=200" % r200)
    r_ex = recall_and_distances(db, metric, Q[:10], X, ids, "10K exact", {"exact": True})
    check(r_ex == 1.0, "10K: exact recall %.4f" % r_ex)

    # filters: random 50% / 10% / 1%, two far clusters, id IN
    def filtered(where, mask, exact_path, what):
        rec, n_q = 0.0, 0
        for qv in Q[:30]:
            sel = np.nonzero(mask)[0]
            want, _ = top(metric, qv, X[sel], ids[sel])
            got = [g[0] for g in search(db, qv, where=where)]
            check(len(got) == min(K, len(sel)), "%s: %d results of %d allowed" % (what, len(got), len(sel)))
            check(all(mask[g - 1] for g in got), "%s: a result the filter refuses" % what)
            if exact_path:
                check(got == want, "%s: %r != exact %r" % (what, got[:3], want[:3]))
            rec += len(set(want) & set(got)) / max(1, min(K, len(sel)))
            n_q += 1
        print("filtered recall@10 %s: %.4f" % (what, rec / n_q))
        check(rec / n_q >= 0.97, "%s: filtered recall %.4f" % (what, rec / n_q))

    num = np.array([int(s[1:]) for s in src])
    filtered("", np.ones(n, bool), False, "no filter")
    filtered(" WHERE source = 'p7'", num == 7, True, "1%")
    # 50% and 10% by a column (decided row by row as the graph search visits
    # them), and by an id IN list (a bitmap made first)
    filtered(" WHERE tier = 'h'", tiers == "h", False, "50% (tier)")
    filtered(" WHERE tier = 't'", tiers == "t", False, "10% (tier)")
    for share, what in ((0.5, "50%"), (0.1, "10%")):
        allow = rng.random(n) < share
        where = " WHERE id IN (%s)" % ",".join(str(i) for i in ids[allow])
        filtered(where, allow, False, what)
    # the cluster farthest from the query
    for qv in Q[:10]:
        far = int(np.argmax(((cent - qv) ** 2).sum(axis=1)))
        sel = np.nonzero(lab == far)[0]
        want, _ = top(metric, qv, X[sel], ids[sel])
        got = [g[0] for g in search(db, qv, where=" WHERE session = 'c%d'" % far)]
        check(got == want, "far cluster: %r != %r" % (got[:3], want[:3]))

    # rows added after the save: in the log, then checkpointed but below the
    # save threshold (added to the writer's graph in memory, not saved; a
    # reader searches them exactly), then past it (a new graph saved)
    near = (Q[0] + 0.001 * rng.standard_normal((5, dim))).astype(np.float32)
    insert(db, near, first_id=n + 1)
    got = [g[0] for g in search(db, Q[0])]
    check(set(range(n + 1, n + 6)) <= set(got), "new rows in the log are found: %r" % got)
    db.execute("SELECT h5mem_checkpoint('mem')")
    inf = info(db)
    check(inf["graph_rows"] == n + 5 and inf["saved_rows"] == n and inf["exact_rows"] == 0,
          "5 new rows join the graph in memory, not the saved one: %r" % inf)
    rd = subprocess.run([sys.executable, "-c", READER, EXT, path], capture_output=True, text=True, check=True)
    rinf = json.loads(rd.stdout)
    check(rinf["graph_rows"] == n and rinf["saved_rows"] == n and rinf["exact_rows"] == 5 and rinf["in_place"],
          "a reader: the saved graph and 5 rows searched exactly: %r" % rinf)
    got = [g[0] for g in search(db, Q[0])]
    check(set(range(n + 1, n + 6)) <= set(got), "checkpointed rows past the graph are found: %r" % got)
    # the writer's graph in memory (its rows read from its copy of the
    # embeddings): exact distances, the recall of the saved graph
    r = recall_and_distances(db, metric, Q[:20], np.vstack([X, near]), np.arange(1, n + 6), "graph in memory")
    check(r >= 0.95, "the writer's graph in memory: recall %.4f" % r)
    more, _, _ = clustered(rng, n // 8, dim)
    insert(db, more, first_id=n + 6)
    db.execute("SELECT h5mem_checkpoint('mem')")
    inf = info(db)
    n2 = n + 5 + n // 8
    check(inf["graph_rows"] == n2 and inf["saved_rows"] == n2 and inf["exact_rows"] == 0,
          "1/8 more rows: a new graph saved: %r" % inf)
    got = [g[0] for g in search(db, Q[0])]
    check(set(range(n + 1, n + 6)) <= set(got), "rows in the new graph are found: %r" % got)
    Xall = np.vstack([X, near, more])
    idsall = np.arange(1, n2 + 1)

    # deletes: the nearest rows of each query and 30% at random
    dead = set(rng.choice(idsall, n2 * 3 // 10, replace=False).tolist())
    for qv in Q[:20]:
        dead |= set(top(metric, qv, Xall, idsall, 3)[0])
    db.execute("BEGIN")
    for i in sorted(dead):
        db.execute("DELETE FROM mem WHERE id = ?", (i,))
    db.execute("COMMIT")
    live = np.array([i not in dead for i in idsall])

    def after_delete(what):
        rec = 0.0
        for qv in Q[:20]:
            got = [g[0] for g in search(db, qv)]
            check(not (set(got) & dead), "%s: a deleted record came back" % what)
            want, _ = top(metric, qv, Xall[live], idsall[live])
            check(len(got) == K, "%s: %d results" % (what, len(got)))
            rec += len(set(got) & set(want)) / K
        check(rec / 20 >= 0.95, "%s: recall %.4f" % (what, rec / 20))
    after_delete("deleted, in the log")
    db.execute("SELECT h5mem_checkpoint('mem')")
    after_delete("deleted, checkpointed")
    before = [search(db, qv) for qv in Q[:20]]
    knn = [db.execute("SELECT id, distance FROM mem WHERE embedding MATCH ? AND k = 10",
                      (qv.tobytes(),)).fetchall() for qv in Q[:20]]
    check(knn == before, "the KNN form gives vec_search's results")
    db.close()

    # reopen: the same graph, read in place, the same results
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    check([search(db, qv) for qv in Q[:20]] == before, "identical results after reopening")
    inf = info(db)
    check(inf["graph_rows"] == n2 and inf["in_place"], "reopened: %r" % inf)
    db.close()

    # h5py reads the index datasets
    with h5py.File(path, "r") as f:
        saves = f["index/hnsw_saves"][:]
        check(saves.shape[1] == 4 and saves[-1][2] == n2, "h5py: hnsw_saves %r" % saves)
        img = f["index/hnsw_image"][saves[-1][0]:saves[-1][0] + 8].tobytes()
        check(img == b"H5MHNSW1", "h5py: the image starts with its magic: %r" % img)
        check(f.attrs["index"] == "hnsw" and f.attrs["hnsw_M"] == 16, "h5py: root attributes")
        off = int(f["index/hnsw_image"].id.get_chunk_info_by_coord((int(saves[-1][0]),)).byte_offset)
        # the int8 copy: each element within half a step of the embedding
        emb = f["memories/embedding"][:].astype(np.float64)
        codes = f["index/q8"][:].astype(np.float64)
        scale = f["index/q8_scale"][:].astype(np.float64)
        check(codes.shape == emb.shape and np.abs(codes).max() <= 127, "h5py: /index/q8 shape and range")
        err = np.abs(codes * scale[:, None] - emb).max(axis=1) / np.maximum(scale, 1e-30)
        check(err.max() <= 0.5001, "h5py: int8 copy within half a step (%.4f)" % err.max())
        # every chunk starts on 8 bytes: rows are read in place, naturally aligned
        for ds in ("memories/embedding", "memories/ts", "index/q8_scale", "index/hnsw_image"):
            dsid = f[ds].id
            offs = [dsid.get_chunk_info(i).byte_offset for i in range(dsid.get_num_chunks())]
            check(all(o % 8 == 0 for o in offs), "%s: a chunk not on 8 bytes: %r" % (ds, [o for o in offs if o % 8][:3]))

    # damage the saved graph's magic: the store opens, says why, searches exactly
    with open(path, "r+b") as fh:
        fh.seek(off)
        fh.write(b"XXXXXXXX")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    inf = info(db)
    check(inf["graph_rows"] == 0 and "damaged" in inf["note"], "damaged graph: %r" % inf)
    for qv in Q[:5]:
        want, _ = top(metric, qv, Xall[live], idsall[live])
        check([g[0] for g in search(db, qv)] == want, "damaged graph: exact results")
    # random damage inside the graph: never a crash, only real rows, exact distances
    with open(path, "r+b") as fh:
        fh.seek(off)
        fh.write(b"H5MHNSW1")
        for _ in range(40):
            fh.seek(off + 80 + int(rng.integers(0, 200000)))
            fh.write(bytes([int(rng.integers(0, 256))]))
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    for qv in Q[:10]:
        got = search(db, qv)
        dd = dist(metric, qv, Xall)
        check(len(got) == K and all(live[g[0] - 1] and abs(dd[g[0] - 1] - g[1]) < 2e-4 * max(1, g[1]) for g in got),
              "randomly damaged graph: real live rows with exact distances")
    # optimize: a new file of the live rows and a graph of them at once
    db.execute("INSERT INTO mem(mem) VALUES ('optimize')")
    inf = info(db)
    check(inf["graph_rows"] == int(live.sum()) and inf["saved_rows"] == int(live.sum()) and inf["note"] == ""
          and inf["q8_rows"] == int(live.sum()), "after optimize: %r" % inf)
    r = 0.0
    for qv in Q[:20]:
        want, _ = top(metric, qv, Xall[live], idsall[live])
        r += len(set(want) & {g[0] for g in search(db, qv)}) / K
    check(r / 20 >= 0.95, "after optimize: recall %.4f" % (r / 20))
    db.close()


def test_writer_graph(d, rng):
    """The writer that saved a graph keeps it in memory and adds each later
    checkpoint's rows to it without saving it; its answers are exact in
    distance and as good in recall, queries near the rows just added
    included (their int8 copies appended to the copy the walk reads: made,
    then made larger, then appended to in place).  A writer opened on the
    store starts as a reader does (the saved graph read in place, the rows
    past it scanned: its checkpoints add nothing to the graph) until a
    checkpoint saves one, over rows that several checkpoints wrote (their
    chunks apart in the file); a reader, meanwhile, has the saved graph and
    scans the rest."""
    path = os.path.join(d, "writer.h5")
    dim, metric = 32, "cosine"
    X, _, _ = clustered(rng, 2280, dim)
    Xs = stored(X, "float16")
    db = make(path, dim, metric, "float16")

    def step(a, b, graph, saved, exact, in_place, what):
        insert(db, X[a:b], first_id=a + 1)
        db.execute("SELECT h5mem_checkpoint('mem')")
        inf = info(db)
        check(inf["graph_rows"] == graph and inf["saved_rows"] == saved and inf["exact_rows"] == exact and
              inf["in_place"] == in_place and inf["quantize"] == "int8", "%s: %r" % (what, inf))
        near = X[max(a, b - 30):b]  # (the rows just checkpointed, found through the graph or the scan)
        Q = np.concatenate([near + 0.01 * rng.standard_normal(near.shape), clustered(rng, 10, dim)[0]])
        r = recall_and_distances(db, metric, Q.astype(np.float32), Xs[:b], np.arange(1, b + 1), what)
        check(r >= 0.95, "%s: recall %.4f" % (what, r))

    step(0, 2000, 2000, 2000, 0, False, "the first save")
    step(2000, 2100, 2100, 2000, 0, False, "the graph grown in memory")
    step(2100, 2200, 2200, 2000, 0, False, "the graph grown again")  # (fewer than 256 rows past the save)
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    inf = info(db)
    check(inf["graph_rows"] == 2000 and inf["exact_rows"] == 200 and inf["in_place"], "reopened: %r" % inf)
    step(2200, 2250, 2000, 2000, 250, True, "a new writer's checkpoint")
    step(2250, 2260, 2260, 2260, 0, False, "a new writer's save")  # (260 rows past the saved graph)
    step(2260, 2280, 2280, 2260, 0, False, "a new writer's graph grown in memory")
    rd = subprocess.run([sys.executable, "-c", READER, EXT, path], capture_output=True, text=True, check=True)
    rinf = json.loads(rd.stdout)
    check(rinf["graph_rows"] == 2260 and rinf["exact_rows"] == 20, "a reader meanwhile: %r" % rinf)
    db.close()


def test_ivf(d, rng):
    """index=ivf (IVF-Flat and IVF-PQ): recall, filters, tail rows, deletes,
    reopening, retraining as the store grows, a damaged image."""
    for pq in (0, 8):
        path = os.path.join(d, "ivf%d.h5" % pq)
        dim, n, metric = 32, 6000, "l2"
        X, lab, cent = clustered(rng, n, dim, spread=0.5)
        tiers = np.where(rng.random(n) < 0.1, "t", "o")
        db = make(path, dim, metric, extra=", nprobe=8, pq_m=%d" % pq if pq else ", nprobe=8", index="ivf")
        db.execute("UPDATE mem SET tier = NULL WHERE 0")  # (connects the table)
        ids = np.arange(1, n + 1)
        insert(db, X, tiers=tiers)
        db.execute("SELECT h5mem_checkpoint('mem')")
        inf = info(db)
        what = "ivf pq_m=%d" % pq
        check(inf["index"] == "ivf" and inf["graph_rows"] == n and inf["nlist"] == 77 and inf["nprobe"] == 8
              and inf["pq_m"] == pq and inf["in_place"] and inf["quantize"] == "none", "%s: %r" % (what, inf))
        Q = (cent[rng.integers(0, 32, 40)] + 0.5 * rng.standard_normal((40, dim))).astype(np.float32)
        r = recall_and_distances(db, metric, Q, X, ids, what)
        r_all = recall_and_distances(db, metric, Q[:10], X, ids, what + " nprobe=all", {"nprobe": 1000})
        print("recall@10 %s: nprobe 8 %.4f, all %.4f" % (what, r, r_all))
        check(r >= 0.93, "%s: recall %.4f" % (what, r))
        check(r_all >= (1.0 if pq == 0 else 0.97), "%s: recall %.4f with every list" % (what, r_all))
        # a filter (10%), over-fetched through more lists
        rec = 0.0
        for qv in Q[:20]:
            sel = np.nonzero(tiers == "t")[0]
            want, _ = top(metric, qv, X[sel], ids[sel])
            got = [g[0] for g in search(db, qv, where=" WHERE tier = 't'")]
            check(len(got) == K and all(tiers[g - 1] == "t" for g in got), "%s: filtered results" % what)
            rec += len(set(want) & set(got)) / K
        check(rec / 20 >= 0.93, "%s: filtered recall %.4f" % (what, rec / 20))
        # new rows (log, then past the saved lists), deletes, reopening
        near = (Q[0] + 0.001 * rng.standard_normal((3, dim))).astype(np.float32)
        insert(db, near, first_id=n + 1)
        got = [g[0] for g in search(db, Q[0])]
        check({n + 1, n + 2, n + 3} <= set(got), "%s: new rows found: %r" % (what, got))
        db.execute("DELETE FROM mem WHERE id IN (%d, %s)" % (n + 1, ",".join(str(i) for i in got[3:6])))
        gone = {n + 1} | set(got[3:6])
        db.execute("SELECT h5mem_checkpoint('mem')")
        before = [search(db, qv) for qv in Q[:10]]
        check(not any(set(g[0] for g in b) & gone for b in before), "%s: deleted records came back" % what)
        db.close()
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
        check([search(db, qv) for qv in Q[:10]] == before, "%s: identical results after reopening" % what)
        # growth: 1/8 more rows adds them to the lists; 4x the trained rows trains anew
        more = clustered(rng, 3 * n, dim, spread=0.5)[0]
        insert(db, more[:n // 8], first_id=n + 4)
        db.execute("SELECT h5mem_checkpoint('mem')")
        insert(db, more[n // 8:], first_id=n + 4 + n // 8)
        db.execute("SELECT h5mem_checkpoint('mem')")
        inf = info(db)
        total = n + 2 + 3 * n  # (row n + 1 was deleted before it reached the file)
        check(inf["graph_rows"] == total and inf["nlist"] == round(total ** 0.5), "%s grown: %r" % (what, inf))
        db.close()
        with h5py.File(path, "r") as f:
            saves = f["index/ivf_saves"][:]
            check([int(r[3]) for r in saves] == [n, n, total] and int(saves[-1][2]) == total,
                  "%s: trained rows per save %r" % (what, saves.tolist()))
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE e USING h5mem(path=%s, dim=30, index=ivf, pq_m=8)"
                 % q(os.path.join(d, "bad.h5")), "pq_m=8 must divide dim=30")
    db.close()


def test_flat_and_old(d, rng):
    """A store made before indexes existed opens as flat; index=flat stays exact."""
    path = os.path.join(d, "old.h5")
    X, _, _ = clustered(rng, 600, 8)
    db = make(path, 8, extra="")
    insert(db, X)
    db.close()
    with h5py.File(path, "r+") as f:
        for a in ("index", "hnsw_M", "hnsw_ef_construction", "ef_search"):
            del f.attrs[a]
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    inf = info(db)
    check(inf["index"] == "flat" and inf["graph_rows"] == 0, "no attributes: flat: %r" % inf)
    qv = X[3]
    want, _ = top("cosine", qv, X, np.arange(1, 601))
    check([g[0] for g in search(db, qv)] == want, "old store: exact results")
    db.close()

    path = os.path.join(d, "flat.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=8, index=flat)" % q(path))
    insert(db, X)
    db.execute("SELECT h5mem_checkpoint('mem')")
    check(info(db)["graph_rows"] == 0, "index=flat: no graph")
    check([g[0] for g in search(db, qv)] == want, "index=flat: exact results")
    db.close()


def test_errors(d):
    path = os.path.join(d, "e.h5")
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE a USING h5mem(path=%s, dim=4, index=ivfpq)" % q(path), "index=ivfpq")
    expect_error(db, "CREATE VIRTUAL TABLE a USING h5mem(path=%s, dim=4, index=hnsw, M=1)" % q(path), "M=1")
    expect_error(db, "CREATE VIRTUAL TABLE a USING h5mem(path=%s, dim=4, ef_search=0)" % q(path), "ef_search")
    expect_error(db, "CREATE VIRTUAL TABLE a USING h5mem(path=%s, dim=4, quantize=int4)" % q(path), "quantize=int4")
    # quantize=none: a graph without the int8 copy
    path_n = os.path.join(d, "none.h5")
    db.execute("CREATE VIRTUAL TABLE n USING h5mem(path=%s, dim=4, index=hnsw, quantize=none)" % q(path_n))
    db.execute("INSERT INTO n(embedding) SELECT json_array(value, 1, 2, 3) FROM json_each('[%s]')"
               % ",".join(str(i) for i in range(300)))
    db.execute("SELECT h5mem_checkpoint('n')")
    inf = json.loads(db.execute("SELECT h5mem_index('n')").fetchone()[0])
    check(inf["quantize"] == "none" and inf["q8_rows"] == 0 and inf["graph_rows"] == 300,
          "quantize=none: %r" % inf)
    got = [r[0] for r in db.execute("SELECT id FROM vec_search('n', '[7, 1, 2, 3]', 3)")]
    want = [r[0] for r in db.execute("SELECT id FROM vec_search('n', '[7, 1, 2, 3]', 3, '{\"exact\": true}')")]
    check(got == want, "quantize=none: %r vs %r" % (got, want))
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4, index=hnsw, M=8, ef_construction=40, "
               "ef_search=32)" % q(path))
    inf = info(db)
    check((inf["M"], inf["ef_construction"], inf["ef_search"]) == (8, 40, 32), "settings kept: %r" % inf)
    db.execute("INSERT INTO mem(embedding) VALUES (vec_f32('[1,2,3,4]'))")
    qv = np.array([1, 2, 3, 4], np.float32)
    for opts, word in (({"ef": 0}, "ef"), ({"index": "pq"}, "index"), ({"nprobe": 0}, "nprobe"),
                       ({"exact": 1}, "exact")):
        expect_error(db, "SELECT * FROM vec_search('mem', ?, 3, ?)", word, (qv.tobytes(), json.dumps(opts)))
    check(len(search(db, qv, 3, {"index": "flat"})) == 1, "index 'flat' option")
    db.close()
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE m2 USING h5mem(path=%s, index=flat)" % q(path), "index")
    expect_error(db, "CREATE VIRTUAL TABLE m2 USING h5mem(path=%s, dim=4, index=flat)" % q(path), "index=hnsw")
    expect_error(db, "SELECT h5mem_index('nope')", "no h5mem table")
    db.close()


def main():
    rng = np.random.default_rng(20261201)
    with tempfile.TemporaryDirectory() as d:
        test_recall_small(d, rng)
        test_10k(d, rng)
        test_writer_graph(d, rng)
        test_ivf(d, rng)
        test_flat_and_old(d, rng)
        test_errors(d)
    finish()


if __name__ == "__main__":
    main()
