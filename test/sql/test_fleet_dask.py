"""scripts/fleet_dask.py: fleet figures over 200 stores on a real Dask
LocalCluster of worker processes, checked store by store against SQL.

- 200 stores made through the extension (5 to 60 memories each, ts over 1
  to 7 UTC days, five tiers with NULL among them, some records without an
  embedding, dim 16 (every 25th store dim 8), float16 and float32 storage
  alternately, a third named by `agent=`, a few with index=hnsw, a declared
  column (format version 2) or optimized), each checkpointed after its
  inserts and again after deletes, updates (a new row) and tier moves (in
  place, copy-on-write chunks), then closed; plus a plain HDF5 file that is
  not a store (skipped, said).
- The script's functions run on LocalCluster(n_workers=2,
  threads_per_worker=1, processes=True); every figure (memories per agent
  per UTC day, tier mix, centroid, drift) is compared with the same figure
  computed per store through SQL in this process (GROUP BY
  date(ts, 'unixepoch'), GROUP BY tier, avg over vec_each of the
  embeddings), and the SQL figures with the records this test wrote (the
  float16 stores' values rounded to float16 as numpy does).
- One store has a writer open with three transactions in its log, not
  checkpointed: the figures are those of the file as of its checkpoint and
  the script says so; after the writer checkpoints (it is not kept busy by
  the workers' gate locks), a second run counts them and says nothing.
- The workers load no h5mem code (their memory maps hold no h5mem.so) and,
  in a sanitizer build (H5MEM_PRELOAD set, LD_PRELOAD of libasan in this
  host), do not inherit the sanitizer runtime; the cluster's processes are
  gone after it closes, and this process's environment is as before.
- The command line: the script on five stores writes JSON equal to the
  figures above.

Skipped (exit 77) without dask, distributed and pandas (Debian:
python3-dask python3-distributed python3-pandas), unless
H5MEM_REQUIRE_DASK=1.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import shutil
import time

sys.dont_write_bytecode = True  # nothing written into the source tree
os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # nor by the worker processes

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from sqltest import check, connect, finish, q  # noqa: E402

import numpy as np  # noqa: E402

SRCDIR = os.environ.get("H5MEM_SRCDIR") or os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(SRCDIR, "scripts", "fleet_dask.py")

N_STORES = 200
BASE = int(datetime.datetime(2026, 11, 2, tzinfo=datetime.timezone.utc).timestamp())
TIERS = ["working", "episodic", "semantic", "archive", None]
SEED = 20261204
EMPTIED = 150  # this store's records are all deleted: no figures but its row
TOL = 1e-9  # the same float16/float32 values summed in another order, in float64


def blob(v):
    return np.asarray(v, "<f4").tobytes()


def utc_day(ts):
    return str(np.datetime64(ts // 86400, "D"))


class Model:
    """What the test wrote to a store: the live records by id."""

    def __init__(self, path, agent, dim, storage):
        self.path, self.agent, self.dim, self.storage = path, agent, dim, storage
        self.live = {}  # id -> [ts, tier, embedding as stored (float64) or None]

    def stored(self, v):
        v = np.asarray(v, np.float32)
        return (v.astype(np.float16) if self.storage == "float16" else v).astype(np.float64)


def make_store(d, i, rng):
    stem = "store-%03d" % i
    path = os.path.join(d, stem + ".h5")
    dim = 8 if i % 25 == 3 else 16
    storage = "float16" if i % 2 else "float32"
    agent = "bot-%03d" % i if i % 3 == 0 else None
    opts = ["path=%s" % q(path), "dim=%d" % dim, "storage=%s" % storage]
    if agent:
        opts.append("agent=%s" % q(agent))
    if i % 40 == 7:
        opts.append("index=hnsw")
    if i % 50 == 11:
        opts.append("user_id integer")
    m = Model(path, agent or stem, dim, storage)
    n = int(rng.integers(5, 61))
    span = int(rng.integers(1, 8))
    center = rng.normal(0, 1, dim)
    shift = rng.normal(0, 1, dim) * rng.uniform(0, 0.6)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(%s)" % ", ".join(opts))
    db.execute("BEGIN")
    for j in range(n):
        ts = BASE + int(rng.integers(0, span * 86400))
        if j == 0:
            ts = BASE + span * 86400 - 1  # the last second of the last day
        tier = TIERS[int(rng.choice(5, p=[0.3, 0.25, 0.2, 0.15, 0.1]))]
        if rng.random() < 0.08:
            emb = None
        else:
            emb = center + shift * ((ts - BASE) / 86400.0) + rng.normal(0, 0.3, dim)
        cur = db.execute("INSERT INTO mem(text, embedding, ts, tier) VALUES (?, ?, ?, ?)",
                         ("memory %d of %s" % (j, stem), None if emb is None else blob(emb), ts, tier))
        m.live[cur.lastrowid] = [ts, tier, None if emb is None else m.stored(emb)]
    db.execute("COMMIT")
    db.execute("SELECT h5mem_checkpoint('mem')")
    ids = sorted(m.live)
    ndel = len(ids) if i == EMPTIED else min(int(rng.integers(0, 4)), len(ids) - 2)
    for rid in rng.choice(ids, size=ndel, replace=False):
        db.execute("DELETE FROM mem WHERE id = ?", (int(rid),))
        del m.live[int(rid)]
    ids = sorted(m.live)
    for rid in rng.choice(ids, size=min(3, len(ids)), replace=False):  # changes in place
        tier = TIERS[int(rng.integers(0, 5))]
        db.execute("UPDATE mem SET tier = ? WHERE id = ?", (tier, int(rid)))
        m.live[int(rid)][1] = tier
    if ids:  # a new row for the record, the old one dead
        rid = int(rng.choice(ids))
        db.execute("UPDATE mem SET text = 'updated', ts = ? WHERE id = ?", (BASE + 3600, rid))
        m.live[rid][0] = BASE + 3600
    db.execute("SELECT h5mem_checkpoint('mem')")
    if i % 30 == 5:
        db.execute("INSERT INTO mem(mem) VALUES ('optimize')")
    db.close()
    return m


def halves(days):
    k = len(days)
    if k < 2:
        return None
    return days[: k // 2], days[k - k // 2:]


def cosd(a, b):
    return 1.0 - float(np.dot(a, b)) / (np.linalg.norm(a) * np.linalg.norm(b))


def sql_centroid(db, dim, where="", args=()):
    rows = db.execute(
        "SELECT e.rowid, avg(e.value), count(*) FROM "
        "(SELECT embedding FROM mem WHERE embedding IS NOT NULL %s) m, vec_each(m.embedding) e "
        "GROUP BY e.rowid ORDER BY e.rowid" % where, args).fetchall()
    if not rows:
        return np.full(dim, np.nan), 0
    check([r[0] for r in rows] == list(range(dim)), "vec_each rows 0..dim-1")
    return np.array([r[1] for r in rows], np.float64), rows[0][2]


def sql_truth(path, dim):
    """Every figure of one store, through SQL."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(path))
    t = {}
    t["live"] = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    t["per_day"] = dict(db.execute("SELECT date(ts, 'unixepoch') AS d, count(*) FROM mem GROUP BY d"))
    t["tiers"] = {("" if k is None else k): v
                  for k, v in db.execute("SELECT tier, count(*) FROM mem GROUP BY tier")}
    t["centroid"], t["with_emb"] = sql_centroid(db, dim)
    days = [r[0] for r in db.execute(
        "SELECT DISTINCT date(ts, 'unixepoch') AS d FROM mem WHERE embedding IS NOT NULL ORDER BY d")]
    t["days"] = len(days)
    hv = halves(days)
    if hv is None:
        t["drift"] = float("nan")
    else:
        cs = [sql_centroid(db, dim, "AND date(ts, 'unixepoch') BETWEEN ? AND ?", (h[0], h[-1]))[0]
              for h in hv]
        t["drift"] = cosd(*cs)
        t["halves"] = ["%s..%s" % (h[0], h[-1]) for h in hv]
    db.close()
    return t


def model_truth(m):
    per_day, tiers, embs = {}, {}, []
    for ts, tier, emb in m.live.values():
        per_day[utc_day(ts)] = per_day.get(utc_day(ts), 0) + 1
        tiers[tier or ""] = tiers.get(tier or "", 0) + 1
        if emb is not None:
            embs.append(emb)
    c = np.mean(embs, axis=0) if embs else np.full(m.dim, np.nan)
    return {"live": len(m.live), "per_day": per_day, "tiers": tiers, "centroid": c}


def close(a, b, tol=TOL):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return False
    both_nan = np.isnan(a) & np.isnan(b)
    return bool(np.all(both_nan | (np.abs(a - b) <= tol * np.maximum(1.0, np.abs(b)))))


def compare(fleet, truths, models, what):
    """Every figure of fleet against the SQL truths (by agent)."""
    pd_rows = {}
    for r in fleet.per_day.itertuples(index=False):
        pd_rows.setdefault(r.agent, {})[r.day] = int(r.memories)
    tr_rows = {}
    for r in fleet.tier_mix.itertuples(index=False):
        tr_rows.setdefault(r.agent, {})[r.tier] = int(r.memories)
    drift = {r.agent: r for r in fleet.drift.itertuples(index=False)}
    stores = {r["path"]: r for r in fleet.stores.to_dict("records")}
    bad = 0
    for path, t in truths.items():
        m = models[path]
        a = m.agent
        st = stores.get(path)
        ok = st is not None and st["ok"] and st["agent"] == a
        check(ok, "%s: %s read, agent %r: %r" % (what, path, a, st))
        if not ok:
            bad += 1
            continue
        ok = (st["live"] == t["live"] and st["dead"] == st["rows"] - st["live"]
              and st["live_with_embedding"] == t["with_emb"] and st["dim"] == m.dim
              and st["storage"] == m.storage)
        check(ok, "%s: %s: counts %r, SQL %d live %d with embedding" % (what, a, st, t["live"], t["with_emb"]))
        ok = pd_rows.get(a, {}) == t["per_day"]
        check(ok, "%s: %s per day %r, SQL %r" % (what, a, pd_rows.get(a), t["per_day"]))
        bad += not ok
        ok = tr_rows.get(a, {}) == t["tiers"]
        check(ok, "%s: %s tiers %r, SQL %r" % (what, a, tr_rows.get(a), t["tiers"]))
        bad += not ok
        c = fleet.centroids.get(a)
        ok = c is not None and c.dtype == np.float64 and close(c, t["centroid"])
        check(ok, "%s: %s centroid %r, SQL %r" % (what, a, c, t["centroid"]))
        bad += not ok
        dr = drift.get(a)
        ok = dr is not None and dr.days == t["days"] and close([dr.drift], [t["drift"]])
        if ok and "halves" in t:
            ok = [dr.first_half, dr.last_half] == t["halves"]
        check(ok, "%s: %s drift %r, SQL %r %r" % (what, a, dr, t["drift"], t.get("halves")))
        bad += not ok
    return bad


def ofd(fd, kind, start):
    """An OFD lock (fcntl.F_WRLCK, F_RDLCK, F_UNLCK) on one byte, not waiting."""
    import fcntl
    import struct
    fcntl.fcntl(fd, getattr(fcntl, "F_OFD_SETLK", 37), struct.pack("=hh4xqqi4x", kind, 0, start, 1, 0))


def test_gate(d, fleet_dask):
    """read_store takes the gate's read side as h5mem's readers do: it waits
    while a writer holds R or P exclusive, and leaves no lock behind."""
    import fcntl
    import threading
    path = os.path.join(d, "gate.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(path))
    db.execute("INSERT INTO mem(text, embedding, ts) VALUES ('a', '[1,2,3,4]', ?)", (BASE,))
    db.close()
    P = 1 << 50
    fd = os.open(path + "-wal", os.O_RDWR)
    try:
        for byte in (P + 1, P):  # R: a writer changing the store; P: a writer waiting for R
            ofd(fd, fcntl.F_WRLCK, byte)
            t = threading.Timer(0.4, ofd, (fd, fcntl.F_UNLCK, byte))
            t0 = time.monotonic()
            t.start()
            r = fleet_dask.read_store(path)
            took = time.monotonic() - t0
            t.join()
            check(r["ok"] and r["info"]["live"] == 1 and took >= 0.35,
                  "read_store waits for the gate (byte %d held exclusive): %.2f s, %r" % (byte - P, took, r["error"]))
            try:
                ofd(fd, fcntl.F_WRLCK, P)
                ofd(fd, fcntl.F_WRLCK, P + 1)
                ofd(fd, fcntl.F_UNLCK, P)
                ofd(fd, fcntl.F_UNLCK, P + 1)
            except OSError as e:
                check(False, "read_store left a lock on the gate: %s" % e)
    finally:
        os.close(fd)


def test_busy_writer(d, fleet_dask):
    """read_store while a writer inserts, checkpoints after each insert and
    optimizes (a new file renamed into place) every fourth time: every read
    succeeds and none sees fewer records or an earlier checkpoint than the
    one before it."""
    import threading
    path = os.path.join(d, "busy.h5")
    stop = threading.Event()
    done = []

    def writer():
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(path))
        k = 0
        while not stop.is_set() and k < 400:
            k += 1
            db.execute("INSERT INTO mem(text, embedding, ts) VALUES ('w', '[1,0,0,1]', ?)", (BASE + k,))
            db.execute("SELECT h5mem_checkpoint('mem')")
            if k % 4 == 0:
                db.execute("INSERT INTO mem(mem) VALUES ('optimize')")
        done.append(k)
        db.close()

    th = threading.Thread(target=writer)
    th.start()
    while not os.path.exists(path + "-wal"):
        time.sleep(0.01)
    reads, last, errors = 0, (0, 0), []
    t_end = time.monotonic() + 2.0
    while time.monotonic() < t_end:
        r = fleet_dask.read_store(path)
        reads += 1
        if not r["ok"]:
            errors.append(r["error"])
            continue
        now = (r["info"]["live"], r["info"]["checkpoint_seq"])
        if now[0] < last[0] or now[1] < last[1]:
            errors.append("went back from %r to %r" % (last, now))
        last = now
    stop.set()
    th.join()
    check(not errors, "reads during checkpoints and optimize: %r" % errors[:3])
    check(reads >= 5 and last[0] >= 1, "busy writer: %d reads, last %r, %r writes" % (reads, last, done))
    print("busy writer: %d reads during %d inserts, checkpoints and %d optimizes" % (reads, done[0], done[0] // 4))


def main():
    try:
        import dask  # noqa: F401
        import dask.dataframe  # noqa: F401
        import distributed  # noqa: F401
        import pandas  # noqa: F401
        import h5py
    except ImportError as e:
        if os.environ.get("H5MEM_REQUIRE_DASK") == "1":
            check(False, "H5MEM_REQUIRE_DASK=1 but %s (apt-get install python3-dask python3-distributed "
                  "python3-pandas)" % e)
            finish()
        print("SKIP: %s (Debian: python3-dask python3-distributed python3-pandas)" % e)
        sys.exit(77)
    sys.path.insert(0, os.path.dirname(SCRIPT))
    import fleet_dask

    t0 = time.monotonic()
    rng = np.random.default_rng(SEED)
    top = tempfile.mkdtemp(prefix="h5mem_fleet_")
    d = os.path.join(top, "fleet")
    os.mkdir(d)
    try:
        test_gate(top, fleet_dask)
        test_busy_writer(top, fleet_dask)
        models = {}
        for i in range(N_STORES):
            m = make_store(d, i, rng)
            models[m.path] = m
        with h5py.File(os.path.join(d, "notes.h5"), "w") as f:  # not a store
            f["x"] = np.arange(3)
        t_made = time.monotonic()
        truths = {p: sql_truth(p, m.dim) for p, m in models.items()}
        t_sql = time.monotonic()
        # the SQL figures are those of the records written
        for p, m in models.items():
            mt, t = model_truth(m), truths[p]
            ok = (mt["live"] == t["live"] and mt["per_day"] == t["per_day"] and mt["tiers"] == t["tiers"]
                  and close(mt["centroid"], t["centroid"]))
            check(ok, "SQL figures of %s match the records written: %r / %r" % (m.agent, mt, t))
        print("stores: %d, %d live records (%d with an embedding); made in %.1f s, SQL figures %.1f s" % (
            len(models), sum(t["live"] for t in truths.values()),
            sum(t["with_emb"] for t in truths.values()), t_made - t0, t_sql - t_made))

        # one store with transactions in its log, past its checkpoint
        wal_path = os.path.join(d, "store-%03d.h5" % (N_STORES - 1))
        wm = models[wal_path]
        writer = connect()
        writer.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(wal_path))
        late = BASE + 20 * 86400
        writer.execute("INSERT INTO mem(text, embedding, ts, tier) VALUES ('late', ?, ?, 'late')",
                       (blob(np.ones(wm.dim)), late))
        writer.execute("DELETE FROM mem WHERE id = ?", (min(wm.live),))
        writer.execute("UPDATE mem SET tier = 'moved' WHERE id = ?", (max(wm.live),))

        preload = os.environ.get("LD_PRELOAD", "")
        env_before = dict(os.environ)
        paths = fleet_dask.find_stores(d)
        check(len(paths) == N_STORES + 1, "find_stores: %d files" % len(paths))
        t1 = time.monotonic()
        with fleet_dask.fleet_cluster(workers=2, threads_per_worker=1) as client:
            t_up = time.monotonic()
            nw = len(client.scheduler_info()["workers"])
            check(nw == 2, "2 workers, not %d" % nw)

            def probe():
                import os as o
                import threading
                with open("/proc/self/maps") as fh:
                    maps = fh.read()
                return (o.getpid(), o.environ.get("LD_PRELOAD", ""), "libasan" in maps, "h5mem" in maps,
                        threading.active_count())
            probes = client.run(probe)
            pids = [p[0] for p in probes.values()]
            check(len(set(pids)) == 2 and os.getpid() not in pids, "workers are 2 processes: %r" % pids)
            for addr, (pid, wpre, asan, h5m, _) in probes.items():
                check(not h5m, "worker %s has h5mem mapped" % addr)
                check(not asan and "libasan" not in wpre,
                      "worker %s inherited the sanitizer runtime (LD_PRELOAD %r)" % (addr, wpre))
            if "libasan" in preload:
                print("sanitizer host: LD_PRELOAD=%s; workers' LD_PRELOAD: %r" % (
                    preload, sorted(set(p[1] for p in probes.values()))))

            fleet = fleet_dask.fleet_figures(paths, client)
            t_run = time.monotonic()
            # figures equal SQL's, the log's store as of its checkpoint
            bad = compare(fleet, truths, models, "fleet")
            check(bad == 0, "%d figures differ" % bad)
            check(len(fleet.centroids) == N_STORES, "agents: %d" % len(fleet.centroids))
            notes = [w for w in fleet.warnings if "notes.h5" in w]
            check(len(notes) == 1 and "not an h5mem store" in notes[0], "notes.h5 skipped: %r" % notes)
            logw = [w for w in fleet.warnings if wal_path in w]
            check(len(logw) == 1 and "3 transactions" in logw[0] and "as of that checkpoint" in logw[0],
                  "the log's store is said to be read as of its checkpoint: %r" % logw)
            check(len(fleet.warnings) == 2, "warnings: %r" % fleet.warnings)
            st = fleet.stores.set_index("path").loc[wal_path]
            check(st["log_state"] == "pending" and st["log_frames_pending"] == 3,
                  "log state of %s: %r" % (wal_path, st.to_dict()))
            others = fleet.stores[(fleet.stores["ok"]) & (fleet.stores["path"] != wal_path)]
            check(set(others["log_state"]) == {"empty"}, "other stores' logs: %r" % set(others["log_state"]))
            check(set(fleet.stores[fleet.stores["ok"]]["format_version"]) == {1, 2}, "format versions 1 and 2")
            j = json.loads(json.dumps(fleet.to_json()))
            check(len(j["centroids"]) == N_STORES and len(j["memories_per_day"]) == N_STORES,
                  "JSON of the figures")

            # the writer is not kept busy; after its checkpoint the log is counted
            got = writer.execute("SELECT h5mem_checkpoint('mem')").fetchone()[0]
            check(got == len(wm.live), "checkpoint after the fleet run: %r records" % got)
            t2 = sql_truth(wal_path, wm.dim)
            check(t2["per_day"].get(utc_day(late)) == 1, "the late record is in SQL")
            f2 = fleet_dask.fleet_figures([wal_path], client)
            check(f2.warnings == [], "no warning after the checkpoint: %r" % f2.warnings)
            check(compare(f2, {wal_path: t2}, models, "after checkpoint") == 0, "figures after the checkpoint")
            # the functions one by one, on the dask collections
            ten = sorted(models)[:10]
            fdata = fleet_dask.load_fleet(ten, client)
            check(fdata.rows.npartitions == 10, "one partition per store: %d" % fdata.rows.npartitions)
            sub = {p: truths[p] for p in ten}
            part = fleet_dask.Fleet(fdata.stores, fleet_dask.memories_per_day(fdata), fleet_dask.tier_mix(fdata),
                                    fleet_dask.centroids(fdata), fleet_dask.drift(fdata), fdata.warnings)
            check(compare(part, sub, models, "functions") == 0, "the functions one by one")
            fdata.release()
        t_closed = time.monotonic()
        writer.close()
        for _ in range(100):
            alive = [p for p in pids if os.path.exists("/proc/%d" % p)]
            if not alive:
                break
            time.sleep(0.05)
        check(not alive, "worker processes still there after the cluster closed: %r" % alive)
        check(dict(os.environ) == env_before, "the environment is as before the cluster")
        print("cluster: up in %.1f s, figures of %d stores in %.1f s, closed in %.1f s" % (
            t_up - t1, len(paths), t_run - t_up, t_closed - t_run))

        # the command line, on five stores
        out = os.path.join(d, "five.json")
        five = sorted(models)[:5]
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "store-00[0-4].h5"), "--workers", "2",
                            "--json", out], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "command line: exit %d: %s" % (r.returncode, r.stderr[-2000:]))
        if r.returncode == 0:
            check("memories per agent per UTC day" in r.stdout, "the printed tables")
            with open(out) as fh:
                doc = json.load(fh)
            for p in five:
                a, t = models[p].agent, truths[p]
                ok = (doc["memories_per_day"].get(a) == t["per_day"] and doc["tier_mix"].get(a) == t["tiers"]
                      and close(doc["centroids"][a], t["centroid"]))
                dr = doc["drift"][a]["drift"]
                ok = ok and close([np.nan if dr is None else dr], [t["drift"]])
                check(ok, "command line JSON of %s: %r" % (a, {k: doc[k].get(a) for k in
                                                              ("memories_per_day", "tier_mix", "drift")}))
            check(doc["warnings"] == [], "command line warnings: %r" % doc["warnings"])
        print("total %.1f s" % (time.monotonic() - t0))
    finally:
        shutil.rmtree(top, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
