#!/usr/bin/env python3
"""scripts/fleet_dask.py - fleet analytics over many h5mem stores on Dask.

    python3 scripts/fleet_dask.py 'agents/*.h5' [--workers 2] [--json out.json]
    python3 scripts/fleet_dask.py agents/            # every agents/*.h5
    python3 scripts/fleet_dask.py 'agents/*.h5' --scheduler tcp://127.0.0.1:8786

Reads each store with h5py on the workers of a dask.distributed cluster (a
LocalCluster of worker processes unless one is given), from the on-disk
format alone (docs/FORMAT.md): nothing of h5mem is imported or loaded, here
or on the workers, so the workers need only Python, numpy, h5py and dask.

Figures, per agent (one store = one agent):

- memories per agent per day: live records per UTC day of `ts`
  (floor(ts / 86400), i.e. SQLite's date(ts, 'unixepoch'));
- tier mix: live records per value of `tier` (a NULL tier and an empty one
  both read as "": h5py reads a null string as b'', FORMAT.md);
- centroid: the mean, in float64, of the embeddings of the live records
  that have one (float16 or float32 as stored, widened exactly); NaN
  everywhere when no live record has one;
- drift: the cosine distance 1 - a.b / (|a| |b|) between the centroid of
  the agent's first half of days and that of its last half.  The days are
  the distinct UTC days of the live records with an embedding, sorted;
  with k of them the first half is the first floor(k/2) days and the last
  half the last floor(k/2) (an odd k leaves the middle day out), and each
  half's centroid is the mean of all its records' embeddings.  NaN when k
  < 2 or a half's centroid is the zero vector.

The agent is the store's `agent` attribute (FORMAT.md: "as given at
creation", "" if not) when it is not empty, else the file name's stem
(`--agent-from stem|attr|auto`); two stores giving the same agent are an
error.

What is read, what is not.  Per store, the root attributes
(`h5mem_format`, `h5mem_format_version` 1 or 2, `dim`, `storage`,
`store_id`, `agent`), `/h5mem/checkpoints`, and of `/memories` only `ts`,
`tier`, `embedding` and `deleted` (and the length of `id`), each whole:
rows listed in `deleted` are dead (a deleted record, or the old row of an
updated one) and left out; an embedding whose first element is NaN is "no
embedding" and left out of centroids and drift.  Texts, the other
columns, declared columns, the indexes (`/index`), the graph (`/graph`),
`/sign` and the `.h5-mcp` search image are not read, and nothing is
written.  A worker keeps a store's live days, tiers and embeddings (as
float64) in memory until the figures are computed, so the fleet must fit
in the workers' memory.  With --scheduler, every worker must see the
stores at the paths given.

The log.  A store's `.h5` file holds every memory as of its last
checkpoint; transactions committed since live only in `agent.h5-wal`.  This
script does not replay the log: it reads the file as of the last checkpoint
and says so, per store, when the log holds frames past it (found by the
log's documented frame layout, lib/store/wal.h; the XXH64 checksums are
checked when the python3-xxhash module is there, else the frames'
structure only).  Run `SELECT h5mem_checkpoint('mem')` (or close the
writer, which checkpoints) first to include them.  A tier changed in place
since the checkpoint (a `U` op in the log) is likewise not seen.

Consistency with a writer at work.  Each worker loads a store the way
h5mem's readers do (FORMAT.md, "Readers and checkpoints"): it takes the
gate's two open-file-description locks on the log (P shared, R shared, P
released), opens the `.h5` file and reads the log's header and frames,
then lets R go; then reads the datasets from the open file, which a
checkpoint never overwrites (it appends, then rewrites the superblock,
which this open file has already read) and which an optimize replaces by a
rename (this open file keeps the old one).  Without the gate (no log, no
OFD locks, a wait of 10 s, H5MEM_NO_GATE=1) it checks that the `.h5`
file and the log's header were the same before and after, and loads again
if not.

Sanitizer builds.  The workers never load h5mem, so a sanitizer runtime
preloaded into the process that starts the cluster (LD_PRELOAD of libasan
and libubsan, as the test harness does) is kept out of them
(--keep-sanitizer-preload to keep it).

Importable:

    import fleet_dask
    with fleet_dask.fleet_cluster(workers=2) as client:
        fleet = fleet_dask.fleet_figures(fleet_dask.find_stores('agents/*.h5'), client)
    fleet.per_day, fleet.tier_mix, fleet.drift   # pandas DataFrames
    fleet.centroids                              # {agent: numpy float64 [dim]}
    fleet.stores, fleet.warnings                 # per-store facts, log notes

Lower level: load_fleet() reads the stores into worker memory and gives a
FleetData: the dask dataframe `rows` (agent, day, tier of each live
record, one partition per store), and per dim the dask array of the
fleet's embeddings, one chunk per store (`fleet_embeddings`, with
`fleet_embedding_days`; `embeddings[agent]` is one store's chunk);
memories_per_day(), tier_mix(), embedding_stats(), centroids() and drift()
compute one figure each from it (fleet_figures() all in one pass).
"""
import argparse
import contextlib
import errno
import fcntl
import glob
import json
import logging
import math
import os
import shutil
import struct
import sys
import tempfile
import time

import numpy as np

SECONDS_PER_DAY = 86400
FORMAT_NAME = "h5mem-store"
FORMAT_VERSIONS = (1, 2)

# The log (lib/store/wal.h): a 64-byte header, then frames of a 16-byte
# header, the payload and an 8-byte checksum.
WAL_MAGIC = b"H5MEMWAL"
WAL_HEADER_SIZE = 64
WAL_FRAME_MAGIC = 0x464C4157  # "WALF"
WAL_MAX_FRAME = 1 << 30
# The gate (FORMAT.md, "Readers and checkpoints"; lib/store/gate.c).
GATE_P = 1 << 50
GATE_R = GATE_P + 1
GATE_WAIT_S = 10.0
# Linux's value where Python's fcntl module does not name it.
F_OFD_SETLK = getattr(fcntl, "F_OFD_SETLK", 37 if sys.platform.startswith("linux") else None)

SANITIZER_RUNTIMES = ("libasan", "libubsan", "libtsan", "liblsan", "libhwasan", "libmsan")


# ------------------------------------------------------------ the workers' side

def _day_iso(day):
    return str(np.datetime64(int(day), "D"))


def _gate_lock(fd, kind, start):
    """One non-blocking OFD lock (kind: fcntl.F_RDLCK or F_UNLCK) on byte start."""
    # struct flock on 64-bit Linux: short type, short whence, off_t start,
    # off_t len, pid_t pid (0 for OFD locks), padded to 32 bytes.
    fcntl.fcntl(fd, F_OFD_SETLK, struct.pack("=hh4xqqi4x", kind, os.SEEK_SET, start, 1, 0))


def _gate_wait(fd, start, deadline):
    delay = 0.0001
    while True:
        try:
            _gate_lock(fd, fcntl.F_RDLCK, start)
            return True
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.002)


def _gate_read_begin(fd):
    """The read side: P shared, R shared, P released. True when held."""
    if fd is None or F_OFD_SETLK is None or os.environ.get("H5MEM_NO_GATE") == "1":
        return False
    deadline = time.monotonic() + GATE_WAIT_S
    try:
        if not _gate_wait(fd, GATE_P, deadline):
            return False
        try:
            return _gate_wait(fd, GATE_R, deadline)
        finally:
            _gate_lock(fd, fcntl.F_UNLCK, GATE_P)
    except OSError:  # no OFD locks here (EINVAL), or the call failed
        return False


def _gate_read_end(fd, held):
    if held:
        _gate_lock(fd, fcntl.F_UNLCK, GATE_R)


def _open_log(path):
    """(fd, note): the log opened for reading, never through a link."""
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), None
    except FileNotFoundError:
        return None, None
    except OSError as e:
        if e.errno == errno.ELOOP:
            return None, "the log %s is a symbolic link (h5mem refuses such a log); not read" % path
        return None, "the log %s cannot be opened: %s" % (path, e.strerror)


def _read_at(fd, n, offset):
    return os.pread(fd, n, offset)


def _scan_log(fd, store_id_hex, checkpoint_seq):
    """What the log holds past the file's last checkpoint: a dict with
    state ('none', 'empty', 'pending', 'foreign', 'unknown'), frames and
    bytes pending, base_seq, how the frames were checked, and a note."""
    out = {"state": "none", "frames_pending": 0, "bytes_pending": 0, "base_seq": None,
           "checked": None, "note": None}
    if fd is None:
        return out
    size = os.fstat(fd).st_size
    hdr = _read_at(fd, WAL_HEADER_SIZE, 0)
    if len(hdr) < WAL_HEADER_SIZE or hdr[:8] != WAL_MAGIC:
        out.update(state="unknown", note="the log's header is not one this script knows (%d bytes)" % size)
        return out
    version, hdr_size = struct.unpack_from("<II", hdr, 8)
    if version != 1 or hdr_size != WAL_HEADER_SIZE:
        out.update(state="unknown", note="the log is of version %d (this script reads version 1)" % version)
        return out
    log_store_id = hdr[16:32].hex()
    base_seq, = struct.unpack_from("<Q", hdr, 32)
    hdr_sum, = struct.unpack_from("<Q", hdr, 56)
    out["base_seq"] = base_seq
    try:
        import xxhash
    except ImportError:
        xxhash = None
    out["checked"] = "xxh64" if xxhash else "structure"
    if xxhash is not None and xxhash.xxh64_intdigest(hdr[:56], seed=0) != hdr_sum:
        out.update(state="unknown", note="the log's header fails its checksum (damaged)")
        return out
    if store_id_hex and log_store_id != store_id_hex.lower():
        out.update(state="foreign", note="the log belongs to another store (store_id %s); h5mem never replays it here" % log_store_id)
        return out
    off, seq, chain = WAL_HEADER_SIZE, base_seq, hdr_sum
    frames = pending = pending_bytes = 0
    while off + 16 + 8 <= size:
        fh = _read_at(fd, 16, off)
        if len(fh) < 16:
            break
        magic, length, fseq = struct.unpack("<IIQ", fh)
        if magic != WAL_FRAME_MAGIC or length > WAL_MAX_FRAME or fseq != seq or off + 16 + length + 8 > size:
            break
        if xxhash is not None:
            h = xxhash.xxh64(seed=chain)
            h.update(fh)
            pos, left = off + 16, length
            while left:
                piece = _read_at(fd, min(left, 1 << 20), pos)
                if not piece:
                    break
                h.update(piece)
                pos += len(piece)
                left -= len(piece)
            fsum, = struct.unpack("<Q", _read_at(fd, 8, off + 16 + length))
            if left or h.intdigest() != fsum:
                break
            chain = fsum
        frames += 1
        if fseq > checkpoint_seq:
            pending += 1
            pending_bytes += 16 + length + 8
        off += 16 + length + 8
        seq += 1
    out["frames_pending"] = pending
    out["bytes_pending"] = pending_bytes
    out["state"] = "pending" if pending else "empty"
    if off < size:
        out["note"] = "%d bytes after the log's last whole frame (a torn or damaged tail; h5mem does not replay it)" % (size - off)
    return out


def _h5_identity(path):
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _attr_str(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray) and v.shape == ():
        return _attr_str(v[()])
    return str(v)


def _attr_int(v):
    return int(np.asarray(v).reshape(-1)[0])


def _agent_of(path, attr, agent_from):
    stem = os.path.splitext(os.path.basename(path))[0]
    if agent_from == "stem":
        return stem
    if agent_from == "attr":
        return attr
    return attr if attr else stem


def _open_h5(path):
    import h5py
    try:
        return h5py.File(path, "r", locking=False)
    except (TypeError, ValueError):  # an h5py or libhdf5 without file locking control
        return h5py.File(path, "r")


def read_store(path, agent_from="auto"):
    """Reads one store as of its last checkpoint (runs on a worker).

    Returns a dict: path, agent, ok (False: error says why, nothing else
    is filled in), info (format version, dim, storage, rows, dead, live,
    live rows with an embedding, the last checkpoint's log frame, the
    log's state), and numpy arrays of the live rows: day (int64 UTC days
    since 1970-01-01), tier (str), emb (float64 [n, dim], the live rows
    with an embedding) and emb_day (their days)."""
    res = {"path": path, "agent": None, "ok": False, "error": None}
    try:
        _read_store(path, agent_from, res)
        res["ok"] = True
    except Exception as e:  # reported per store; the fleet goes on
        res["error"] = "%s: %s" % (type(e).__name__, e)
    return res


def _read_store(path, agent_from, res):
    log_path = path + "-wal"
    delay, deadline = 0.001, time.monotonic() + GATE_WAIT_S
    while True:
        fd, log_note = _open_log(log_path)
        f = None
        try:
            ident = _h5_identity(path)
            hdr0 = _read_at(fd, WAL_HEADER_SIZE, 0) if fd is not None else None
            held = _gate_read_begin(fd)
            try:
                f = _open_h5(path)
                attrs = f.attrs
                fmt = _attr_str(attrs.get("h5mem_format", ""))
                if fmt != FORMAT_NAME:
                    raise ValueError("not an h5mem store (h5mem_format is %r)" % fmt)
                version = _attr_int(attrs["h5mem_format_version"])
                if version not in FORMAT_VERSIONS:
                    raise ValueError("format version %d; this script reads versions %s" % (version, FORMAT_VERSIONS))
                store_id = _attr_str(attrs.get("store_id", ""))
                ck = f["h5mem/checkpoints"] if "h5mem/checkpoints" in f else None
                ckpt = int(ck[-1]) if ck is not None and ck.shape[0] else 0
                log = _scan_log(fd, store_id, ckpt)
            finally:
                _gate_read_end(fd, held)
            if not held:
                # no gate: the file and the log's header must not have moved
                same = _h5_identity(path) == ident and (
                    (fd is None and (log_note is not None or not os.path.lexists(log_path)))
                    or (fd is not None and _read_at(fd, WAL_HEADER_SIZE, 0) == hdr0))
            else:
                same = True
            # the log starts no later than the frame after the file's checkpoint
            if log["state"] in ("empty", "pending") and log["base_seq"] > ckpt + 1:
                same = False
            if same:
                break
            if time.monotonic() >= deadline:
                raise RuntimeError("the store keeps changing under this reader")
        except BaseException:
            if f is not None:
                f.close()
            raise
        finally:
            if fd is not None:
                os.close(fd)
        f.close()
        time.sleep(delay)
        delay = min(delay * 2, 0.064)

    with f:
        dim = _attr_int(attrs["dim"])
        storage = _attr_str(attrs.get("storage", ""))
        agent_attr = _attr_str(attrs.get("agent", ""))
        m = f["memories"]
        n = m["id"].shape[0]
        for name in ("ts", "tier", "embedding"):
            if m[name].shape[0] != n:
                raise ValueError("/memories/%s has %d rows, /memories/id %d (damaged)" % (name, m[name].shape[0], n))
        if m["embedding"].ndim != 2 or m["embedding"].shape[1] != dim:
            raise ValueError("/memories/embedding is %r, dim is %d (damaged)" % (m["embedding"].shape, dim))
        live = np.ones(n, bool)
        dead = m["deleted"][()] if "deleted" in m else np.zeros(0, np.int64)
        if dead.size and (dead.min() < 0 or dead.max() >= n):
            raise ValueError("/memories/deleted names a row outside 0..%d (damaged)" % (n - 1))
        live[dead] = False
        nlive = int(live.sum())
        ts = m["ts"][()][live].astype(np.int64)
        day = np.floor_divide(ts, SECONDS_PER_DAY)
        tier = np.asarray(m["tier"].asstr()[()], dtype=object)[live] if n else np.zeros(0, object)
        emb = m["embedding"][()][live] if n else np.zeros((0, dim), np.float32)
        has = ~np.isnan(emb[:, 0]) if dim else np.zeros(nlive, bool)
        res.update(
            agent=_agent_of(path, agent_attr, agent_from),
            info={"format_version": version, "dim": dim, "storage": storage, "store_id": store_id,
                  "agent_attr": agent_attr, "rows": int(n), "dead": int(n - nlive), "live": nlive,
                  "live_with_embedding": int(has.sum()), "checkpoint_seq": ckpt,
                  "log": log, "log_note": log_note},
            day=day,
            tier=tier,
            emb=emb[has].astype(np.float64),
            emb_day=day[has].reshape(-1, 1),
        )


def _summary(st):
    """What the client needs to lay out the graph: no arrays."""
    out = {k: st[k] for k in ("path", "agent", "ok", "error")}
    if st["ok"]:
        out["info"] = st["info"]
        days = np.unique(st["emb_day"][:, 0])
        out["emb_days"] = [int(d) for d in days]
    return out


def _rows_frame(st):
    import pandas as pd
    n = len(st["day"])
    return pd.DataFrame({"agent": pd.Series([st["agent"]] * n, dtype=object),
                         "day": pd.Series(st["day"], dtype="int64"),
                         "tier": pd.Series(st["tier"], dtype=object)})


# ------------------------------------------------------------ the client's side

def find_stores(patterns):
    """The store files a folder (its *.h5) or glob names, sorted; a list of
    either is allowed.  Logs, search images and temporary files beside the
    stores are left out."""
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    found = set()
    for p in patterns:
        p = os.fspath(p)
        names = glob.glob(os.path.join(p, "*.h5")) if os.path.isdir(p) else glob.glob(p)
        for name in names:
            base = os.path.basename(name)
            if base.endswith(("-wal", "-mcp")) or "-wal.corrupt-" in base or ".new-" in base or ".optimize-" in base:
                continue
            if os.path.isfile(name):
                found.add(os.path.abspath(name))
    return sorted(found)


def _strip_sanitizers(preload):
    keep = [p for p in preload.replace(":", " ").split()
            if not any(r in os.path.basename(p) for r in SANITIZER_RUNTIMES)]
    return ":".join(keep)


@contextlib.contextmanager
def fleet_cluster(workers=2, threads_per_worker=1, scheduler=None, keep_sanitizer_preload=False,
                  memory_limit="auto"):
    """A dask.distributed Client: on a LocalCluster of `workers` worker
    processes (threads_per_worker threads each, on 127.0.0.1, no dashboard,
    its scratch space in a temporary folder removed at the end), or on the
    scheduler at `scheduler`.  Closed, its processes ended, on exit.

    The worker processes never load h5mem, so a sanitizer runtime preloaded
    into this process (LD_PRELOAD of libasan/libubsan in a sanitizer build's
    tests) is kept out of them: it is taken out of LD_PRELOAD while the
    cluster runs (other preloads stay), and the environment is put back as
    it was afterwards (distributed's own pre-spawn settings included)."""
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler:
        client = Client(scheduler)
        try:
            yield client
        finally:
            client.close()
        return
    saved = dict(os.environ)
    scratch = tempfile.mkdtemp(prefix="fleet_dask_")
    cluster = client = None
    try:
        pre = os.environ.get("LD_PRELOAD")
        if pre and not keep_sanitizer_preload:
            kept = _strip_sanitizers(pre)
            if kept:
                os.environ["LD_PRELOAD"] = kept
            else:
                del os.environ["LD_PRELOAD"]
        with dask.config.set({"temporary-directory": scratch,
                              "distributed.worker.daemon": True}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                                   processes=True, host="127.0.0.1", dashboard_address=None,
                                   local_directory=scratch, memory_limit=memory_limit,
                                   silence_logs=logging.ERROR)
            client = Client(cluster)
            yield client
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        for k in set(os.environ) - set(saved):
            del os.environ[k]
        for k, v in saved.items():
            if os.environ.get(k) != v:
                os.environ[k] = v
        shutil.rmtree(scratch, ignore_errors=True)


def _register_by_value():
    """Workers need not import this file: its functions travel with the tasks."""
    mod = sys.modules.get(__name__)
    if __name__ != "__main__" and mod is not None:
        try:
            import cloudpickle
            cloudpickle.register_pickle_by_value(mod)
        except (ImportError, AttributeError, ValueError):
            pass


class FleetData:
    """The fleet laid out as dask collections (nothing computed but the
    per-store summaries).

    rows: dask DataFrame of the live records (agent, day, tier), one
    partition per store; fleet_embeddings / fleet_embedding_days: {dim:
    dask array} of the live records with an embedding of the stores of
    that dim (float64 [n, dim]; int64 [n, 1]), one chunk per store, in the
    order of agents_by_dim[dim]; embeddings / embedding_days: {agent: dask
    array}, that agent's chunk (float64 [n, dim]; int64 [n]); stores:
    pandas DataFrame of per-store facts; emb_days: {agent: sorted distinct
    days with an embedding}; dims: {agent: dim}; agents; warnings."""

    def __init__(self, client, loaded, summaries):
        import dask
        import dask.dataframe as dd
        import pandas as pd

        self.client = client
        self._loaded = loaded  # persisted: the stores' arrays stay on the workers
        self.warnings = []
        good, recs, seen = [], [], {}
        for s, ld in zip(summaries, loaded):
            rec = {"agent": s["agent"], "path": s["path"], "ok": s["ok"], "error": s["error"]}
            if s["ok"]:
                info = s["info"]
                log = info["log"]
                rec.update({k: info[k] for k in ("format_version", "dim", "storage", "rows", "dead",
                                                 "live", "live_with_embedding", "checkpoint_seq")})
                rec.update(log_state=log["state"], log_frames_pending=log["frames_pending"],
                           log_bytes_pending=log["bytes_pending"], log_checked=log["checked"])
                if log["state"] == "pending":
                    self.warnings.append(
                        "%s: its log holds %d transaction%s (%d bytes) committed after the last "
                        "checkpoint (log frame %d); these figures read the .h5 file as of that "
                        "checkpoint, without them (checkpoint the store, e.g. SELECT "
                        "h5mem_checkpoint('mem'), or close its writer, to include them)"
                        % (s["path"], log["frames_pending"], "" if log["frames_pending"] == 1 else "s",
                           log["bytes_pending"], info["checkpoint_seq"]))
                for note in (log["note"], info["log_note"]):
                    if note:
                        self.warnings.append("%s: %s" % (s["path"], note))
                if not s["agent"]:
                    rec.update(ok=False, error="the store has no agent attribute (--agent-from attr)")
                    self.warnings.append("%s: skipped: %s" % (s["path"], rec["error"]))
                elif s["agent"] in seen:
                    raise ValueError("two stores give the agent %r: %s and %s (use --agent-from stem, "
                                     "or rename one)" % (s["agent"], seen[s["agent"]], s["path"]))
                else:
                    seen[s["agent"]] = s["path"]
                    good.append((s, ld))
            else:
                self.warnings.append("%s: skipped: %s" % (s["path"], s["error"]))
            recs.append(rec)
        self.stores = pd.DataFrame(recs)
        meta = pd.DataFrame({"agent": pd.Series(dtype=object), "day": pd.Series(dtype="int64"),
                             "tier": pd.Series(dtype=object)})
        if good:
            self.rows = dd.from_delayed([dask.delayed(_rows_frame)(ld) for _, ld in good],
                                        meta=meta, verify_meta=False)
        else:
            self.rows = dd.from_pandas(meta, npartitions=1)
        self.agents = [s["agent"] for s, _ in good]
        self.dims = {s["agent"]: s["info"]["dim"] for s, _ in good}
        self.emb_days = {s["agent"]: s["emb_days"] for s, _ in good}
        # per dim, the fleet's embeddings as one dask array chunked by store
        # (a chunk is a store's live rows with an embedding), and their days
        self.agents_by_dim, self.fleet_embeddings, self.fleet_embedding_days = {}, {}, {}
        by_dim = {}
        for s, ld in good:
            by_dim.setdefault(s["info"]["dim"], []).append((s, ld))
        self.embeddings, self.embedding_days = {}, {}
        for dim, group in sorted(by_dim.items()):
            agents = [s["agent"] for s, _ in group]
            lds = [ld for _, ld in group]
            rows = tuple(s["info"]["live_with_embedding"] for s, _ in group)
            e = _store_chunks("fleet-embeddings-%d" % dim, lds, "emb", (rows, (dim,)), np.float64)
            d = _store_chunks("fleet-embedding-days-%d" % dim, lds, "emb_day", (rows, (1,)), np.int64)
            self.agents_by_dim[dim] = agents
            self.fleet_embeddings[dim] = e
            self.fleet_embedding_days[dim] = d
            for i, a in enumerate(agents):
                self.embeddings[a] = e.blocks[i]
                self.embedding_days[a] = d.blocks[i][:, 0]

    def release(self):
        """Lets the workers drop the stores' arrays (the dask collections
        go with them)."""
        self._loaded = []
        self.rows = None
        self.embeddings, self.embedding_days = {}, {}
        self.fleet_embeddings, self.fleet_embedding_days = {}, {}


def _store_chunks(name, lds, field, chunks, dtype):
    """A dask array whose chunk i is the array `field` of the store loaded
    as lds[i] (one getitem task per store, no copy)."""
    import operator
    import uuid
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph
    name = "%s-%s" % (name, uuid.uuid4().hex)
    dsk = {(name, i) + (0,) * (len(chunks) - 1): (operator.getitem, ld.key, field) for i, ld in enumerate(lds)}
    return da.Array(HighLevelGraph.from_collections(name, dsk, dependencies=lds), name, chunks, dtype)


def load_fleet(paths, client, agent_from="auto"):
    """Reads the stores on the workers (kept there, persisted) and lays the
    fleet out as dask collections: a FleetData."""
    import dask
    _register_by_value()
    loaded = client.persist([dask.delayed(read_store, pure=False)(p, agent_from) for p in paths])
    summaries = client.compute([dask.delayed(_summary)(ld) for ld in loaded], sync=True)
    return FleetData(client, loaded, summaries)


def _per_day_graph(fd):
    return fd.rows.groupby(["agent", "day"]).size()


def _tier_graph(fd):
    return fd.rows.groupby(["agent", "tier"]).size()


def drift_halves(days):
    """(first, last): the day ranges of the first and last half (see the
    module's docstring), as (lowest, highest) day numbers; None when fewer
    than 2 days."""
    k = len(days)
    if k < 2:
        return None
    h = k // 2
    return (days[0], days[h - 1]), (days[k - h], days[-1])


def _emb_stats_block(e, d, halves=(), block_id=None):
    """One store's block: rows [sum of all embeddings, count], [sum and
    count of the first half's days], [the last half's] (float64 [3, dim+1])."""
    out = np.zeros((3, e.shape[1] + 1), np.float64)
    out[0, :-1] = e.sum(axis=0)
    out[0, -1] = e.shape[0]
    hv = halves[block_id[0]]
    if hv is not None:
        day = d[:, 0]
        for row, (lo, hi) in enumerate(hv, 1):
            sel = (day >= lo) & (day <= hi)
            out[row, :-1] = e[sel].sum(axis=0)
            out[row, -1] = sel.sum()
    return out


def _emb_stats_graphs(fd):
    """{dim: dask array [3 * stores, dim + 1]}: _emb_stats_block of each
    store of that dim, from the fleet's embeddings of that dim as one dask
    array chunked by store."""
    import dask.array as da
    out = {}
    for dim, agents in fd.agents_by_dim.items():
        e, d = fd.fleet_embeddings[dim], fd.fleet_embedding_days[dim]
        halves = [drift_halves(fd.emb_days[a]) for a in agents]
        out[dim] = da.map_blocks(_emb_stats_block, e, d, halves=halves, dtype=np.float64,
                                 chunks=((3,) * len(agents), (dim + 1,)))
    return out


def _stats_by_agent(fd, computed):
    out = {}
    for dim, agents in fd.agents_by_dim.items():
        st = np.asarray(computed[dim]).reshape(len(agents), 3, dim + 1)
        for a, block in zip(agents, st):
            out[a] = block
    return out


def cosine_distance(a, b):
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if not (na > 0 and nb > 0) or not (np.isfinite(na) and np.isfinite(nb)):
        return float("nan")
    return float(1.0 - np.dot(a, b) / (na * nb))


def _per_day_frame(series):
    import pandas as pd
    df = series.rename("memories").reset_index()
    df = df.sort_values(["agent", "day"], kind="stable").reset_index(drop=True)
    df["day"] = [_day_iso(d) for d in df["day"]]
    df["memories"] = df["memories"].astype("int64")
    return pd.DataFrame(df, columns=["agent", "day", "memories"])


def _tier_frame(series):
    df = series.rename("memories").reset_index()
    df["memories"] = df["memories"].astype("int64")
    return df.sort_values(["agent", "tier"], kind="stable").reset_index(drop=True)


def _mean(row):
    return row[:-1] / row[-1] if row[-1] > 0 else np.full(row.shape[0] - 1, np.nan)


def _centroid_dict(fd, stats):
    return {a: _mean(stats[a][0]) for a in fd.agents}


def _drift_frame(fd, stats):
    import pandas as pd
    recs = []
    for a in fd.agents:
        days = fd.emb_days[a]
        halves = drift_halves(days)
        rec = {"agent": a, "days": len(days), "first_half": None, "last_half": None, "drift": float("nan")}
        if halves is not None:
            rec["first_half"] = "%s..%s" % (_day_iso(halves[0][0]), _day_iso(halves[0][1]))
            rec["last_half"] = "%s..%s" % (_day_iso(halves[1][0]), _day_iso(halves[1][1]))
            rec["drift"] = cosine_distance(_mean(stats[a][1]), _mean(stats[a][2]))
        recs.append(rec)
    return pd.DataFrame(recs, columns=["agent", "days", "first_half", "last_half", "drift"])


def _compute(client, *graphs):
    """dask.compute on client's cluster (lists, tuples and dicts traversed)."""
    import dask
    return dask.compute(*graphs, scheduler=client)


def memories_per_day(fd):
    """pandas DataFrame agent, day ('YYYY-MM-DD', UTC), memories."""
    return _per_day_frame(_compute(fd.client, _per_day_graph(fd))[0])


def tier_mix(fd):
    """pandas DataFrame agent, tier, memories (long form; .pivot for a table)."""
    return _tier_frame(_compute(fd.client, _tier_graph(fd))[0])


def embedding_stats(fd):
    """{agent: numpy float64 [3, dim + 1]}: per row, the sum of embeddings
    and their number (last column): all the live ones, those of the first
    half of days, those of the last half (zeros when under 2 days)."""
    return _stats_by_agent(fd, _compute(fd.client, _emb_stats_graphs(fd))[0])


def centroids(fd, stats=None):
    """{agent: numpy float64 [dim]}: the mean of the live embeddings."""
    return _centroid_dict(fd, stats if stats is not None else embedding_stats(fd))


def drift(fd, stats=None):
    """pandas DataFrame agent, days, first_half, last_half, drift."""
    return _drift_frame(fd, stats if stats is not None else embedding_stats(fd))


class Fleet:
    """Every figure, computed: stores, per_day, tier_mix, drift (pandas),
    centroids ({agent: numpy float64}), warnings (list of str)."""

    def __init__(self, stores, per_day, tier_mix, centroids, drift, warnings):
        self.stores, self.per_day, self.tier_mix = stores, per_day, tier_mix
        self.centroids, self.drift, self.warnings = centroids, drift, warnings

    def to_json(self):
        def num(x):
            if isinstance(x, (float, np.floating)):
                return None if math.isnan(x) else float(x)
            if isinstance(x, np.integer):
                return int(x)
            if isinstance(x, np.bool_):
                return bool(x)
            return x

        per_day = {a: {} for a in self.centroids}  # every agent read, with records or not
        tiers = {a: {} for a in self.centroids}
        for r in self.per_day.itertuples(index=False):
            per_day.setdefault(r.agent, {})[r.day] = int(r.memories)
        for r in self.tier_mix.itertuples(index=False):
            tiers.setdefault(r.agent, {})[r.tier] = int(r.memories)
        return {
            "stores": [{k: num(v) for k, v in rec.items()} for rec in self.stores.to_dict("records")],
            "memories_per_day": per_day,
            "tier_mix": tiers,
            "centroids": {a: [num(x) for x in c] for a, c in self.centroids.items()},
            "drift": {r["agent"]: {k: num(v) for k, v in r.items() if k != "agent"}
                      for r in self.drift.to_dict("records")},
            "warnings": list(self.warnings),
        }


def fleet_figures(paths, client, agent_from="auto"):
    """Every figure of the stores at `paths` (a list, or a folder or glob
    given to find_stores), computed on `client`'s cluster in one pass: a
    Fleet."""
    if isinstance(paths, (str, os.PathLike)):
        paths = find_stores(paths)
    fd = load_fleet(list(paths), client, agent_from)
    try:
        per_day, tiers, stats = _compute(client, _per_day_graph(fd), _tier_graph(fd), _emb_stats_graphs(fd))
        stats = _stats_by_agent(fd, stats)
        return Fleet(fd.stores, _per_day_frame(per_day), _tier_frame(tiers), _centroid_dict(fd, stats),
                     _drift_frame(fd, stats), fd.warnings)
    finally:
        fd.release()


# ------------------------------------------------------------ command line

def _print_tables(fleet, out):
    import pandas as pd
    with pd.option_context("display.width", 200, "display.max_rows", None, "display.max_columns", None):
        st = fleet.stores
        cols = [c for c in ("agent", "path", "storage", "dim", "rows", "dead", "live",
                            "live_with_embedding", "log_state", "error") if c in st.columns]
        print("== stores (%d)" % len(st), file=out)
        print(st[cols].to_string(index=False), file=out)
        print("\n== memories per agent per UTC day", file=out)
        if len(fleet.per_day):
            print(fleet.per_day.pivot(index="agent", columns="day", values="memories")
                  .fillna(0).astype(int).to_string(), file=out)
        print("\n== tier mix (live memories per tier; \"\" = NULL or empty)", file=out)
        if len(fleet.tier_mix):
            print(fleet.tier_mix.pivot(index="agent", columns="tier", values="memories")
                  .fillna(0).astype(int).to_string(), file=out)
        print("\n== drift (cosine distance between the centroids of the first and last half of days)",
              file=out)
        print(fleet.drift.to_string(index=False), file=out)
        print("\n== centroid norms (full vectors: --json)", file=out)
        for a, c in fleet.centroids.items():
            print("%s\t%s" % (a, "nan" if np.isnan(c).any() else "%.6f" % np.linalg.norm(c)), file=out)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Fleet figures over h5mem stores on Dask (h5py on the workers).")
    ap.add_argument("stores", nargs="+", help="folders (their *.h5) or globs of store files")
    ap.add_argument("--workers", type=int, default=2, help="worker processes of the LocalCluster (2)")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker (1)")
    ap.add_argument("--scheduler", help="use the cluster at this scheduler address instead")
    ap.add_argument("--json", metavar="FILE", help="write every figure as JSON to FILE ('-': stdout)")
    ap.add_argument("--agent-from", choices=("auto", "attr", "stem"), default="auto",
                    help="the agent's name: the store's agent attribute, else the file stem (auto)")
    ap.add_argument("--keep-sanitizer-preload", action="store_true",
                    help="let the workers inherit a sanitizer runtime in LD_PRELOAD")
    args = ap.parse_args(argv)
    paths = find_stores(args.stores)
    if not paths:
        print("fleet_dask: no store matches %s" % " ".join(args.stores), file=sys.stderr)
        return 2
    t0 = time.monotonic()
    try:
        with fleet_cluster(args.workers, args.threads, args.scheduler, args.keep_sanitizer_preload) as client:
            fleet = fleet_figures(paths, client, args.agent_from)
    except ValueError as e:  # two stores of one agent
        print("fleet_dask: %s" % e, file=sys.stderr)
        return 2
    for w in fleet.warnings:
        print("fleet_dask: " + w, file=sys.stderr)
    if args.json:
        doc = fleet.to_json()
        if args.json == "-":
            json.dump(doc, sys.stdout, indent=1)
            print()
        else:
            with open(args.json, "w") as fh:
                json.dump(doc, fh, indent=1)
    if args.json != "-":
        _print_tables(fleet, sys.stdout)
        print("\n%d stores, %d agents, %.1f s" % (len(paths), len(fleet.centroids), time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
