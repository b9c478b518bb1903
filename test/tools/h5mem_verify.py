#!/usr/bin/python3
"""test/tools/h5mem_verify.py - verify a signed h5mem store from its .h5
file alone, with h5py, hashlib and PyNaCl, by docs/FORMAT.md ("Signed
checkpoints"): no h5mem code.  An independent twin of h5mem_verify.

    /usr/bin/python3 test/tools/h5mem_verify.py agent.h5 [--key KEY] [--seen N] [--leaves]

KEY is "ed25519:<64 hex>" or a .pub file; N the number of a signed
checkpoint seen before (an older file fails: rolled back).  Prints a JSON
verdict (valid, checkpoints, verified, edited, added, removed, ...) and
exits 0 when the store is valid, 1 when not; --leaves prints each row's
leaf instead.
"""
import hashlib
import json
import math
import struct
import sys

import h5py
import numpy as np

NAN = struct.pack("<Q", 0x7FF8000000000000)


def f64(v):
    return NAN if math.isnan(v) else struct.pack("<d", v)


def s32(b, null=False):
    """A string as the leaf holds it: a uint32 length and the bytes; NULL as 0xFFFFFFFF alone."""
    if null:
        return struct.pack("<I", 0xFFFFFFFF)
    b = b or b""
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<I", len(b)) + bytes(b)


def null_mask(ds):
    """Which rows of a variable-length dataset are NULL, which h5py reads as
    b'' like an empty string: from each row's stored element (a uint32
    length, the global heap collection's address, the object's index), read
    raw from the dataset's chunks."""
    n = ds.shape[0]
    mask = np.zeros(n, bool)
    crows = ds.chunks[0]
    for i in range(ds.id.get_num_chunks()):
        info = ds.id.get_chunk_info(i)
        r0 = info.chunk_offset[0]
        raw = np.frombuffer(ds.id.read_direct_chunk(info.chunk_offset)[1], np.uint8).reshape(-1, 16)
        raw = raw[:max(0, min(crows, n - r0))]
        cnt = raw[:, 0:4].copy().view("<u4")[:, 0]
        addr = raw[:, 4:12].copy().view("<u8")[:, 0]
        idx = raw[:, 12:16].copy().view("<u4")[:, 0]
        mask[r0:r0 + len(raw)] = (addr == 0) | (addr == 0xFFFFFFFFFFFFFFFF) | ((idx == 0) & (cnt == 0))
    return mask


def text_attr(f, name, default=""):
    v = f.attrs.get(name, default)
    return v.decode() if isinstance(v, bytes) else str(v)


# the graph's tables: their columns in order, and kinds (0 int64, 1 string, 2 float64)
GRAPH = [("entities", [("id", 0), ("name", 1), ("type", 1), ("aliases", 1), ("meta", 1)]),
         ("relations", [("id", 0), ("src", 0), ("dst", 0), ("type", 1), ("weight", 2), ("ts", 0), ("meta", 1)]),
         ("mentions", [("id", 0), ("memory", 0), ("entity", 0)])]


def graph_hash(f):
    """The knowledge graph's three hashes (entities, relations, mentions): each
    table's live rows in id order, their columns encoded as a leaf's are."""
    out = b""
    for t, (name, cols) in enumerate(GRAPH):
        h = hashlib.blake2b(digest_size=32)
        h.update(b"h5mem-graph-v1\0" + bytes([t]))
        if "graph" in f and name in f["graph"]:
            g = f["graph"][name]
            n = g["id"].shape[0]
            dead = set(int(x) for x in g["deleted"][:]) if "deleted" in g else set()
            data = {c: g[c][:] for c, k in cols}
            nulls = {c: null_mask(g[c]) for c, k in cols if k == 1}
            for _, r in sorted((int(data["id"][r]), r) for r in range(n) if r not in dead):
                for c, k in cols:
                    if k == 0:
                        h.update(struct.pack("<q", int(data[c][r])))
                    elif k == 2:
                        h.update(f64(float(data[c][r])))
                    else:
                        h.update(s32(data[c][r], nulls[c][r]))
        out += h.digest()
    return out


def schema_hash(f):
    """dim, metric, storage and the declared columns, as the signatures cover them."""
    b = b"h5mem-schema-v1\0" + struct.pack("<q", int(f.attrs["dim"]))
    for name in ("metric", "storage", "columns"):
        b += s32(text_attr(f, name))
    return hashlib.blake2b(b, digest_size=32).digest()


def columns(f):
    """The declared columns in order: (name, declaration) from the root's `columns`."""
    c = f.attrs.get("columns")
    if c is None:
        return []
    c = c.decode() if isinstance(c, bytes) else str(c)
    out = []
    for decl in [d.strip() for d in c.split(", ") if d.strip()]:
        name = decl.lstrip("+").split()[0]
        out.append((name, decl.lstrip("+").split()[1]))
    return out


def leaves(path):
    """Each row's leaf (hex) of the store at path."""
    with h5py.File(path, "r") as f:
        return leaves_of(f)


def leaves_of(f):
    m = f["memories"]
    n = m["id"].shape[0]
    dead = set(int(r) for r in m["deleted"][:]) if "deleted" in m else set()
    ids, ts = m["id"][:], m["ts"][:]
    ac, la, imp = m["access_count"][:], m["last_access"][:], m["importance"][:]
    names = ("text", "source", "session", "tags", "tier", "meta")
    strs = [m[k][:] for k in names]
    nulls = [null_mask(m[k]) for k in names]
    emb = m["embedding"]
    cols = columns(f)
    cnull = {name: null_mask(m["columns"][name]) for name, typ in cols if typ in ("text", "blob")}
    out = []
    for r in range(n):
        h = hashlib.blake2b(digest_size=32)
        if r in dead:
            h.update(b"h5mem-dead-v1\0" + struct.pack("<q", int(ids[r])))
            out.append(h.hexdigest())
            continue
        h.update(b"h5mem-leaf-v1\0")
        h.update(struct.pack("<qqqq", int(ids[r]), int(ts[r]), int(ac[r]), int(la[r])))
        h.update(f64(float(imp[r])))
        for s, nl in zip(strs, nulls):
            h.update(s32(s[r], nl[r]))
        e = emb[r]
        if math.isnan(float(e[0])):
            h.update(b"\0")
        else:
            h.update(b"\1" + np.ascontiguousarray(e).tobytes())
        for name, typ in cols:
            v = m["columns"][name][r]
            if typ == "integer":
                h.update(struct.pack("<q", int(v)))
            elif typ in ("float", "double", "real"):
                h.update(f64(float(v)))
            elif typ in ("boolean", "bool"):
                h.update(struct.pack("<b", int(v)))
            elif typ in ("text", "blob"):
                h.update(s32(bytes(v) if not isinstance(v, (bytes, str)) else v, cnull[name][r]))
            else:  # a vector: missing flag, then the row's bytes
                if int(m["columns"][name + ".missing"][r]):
                    h.update(b"\0")
                else:
                    h.update(b"\1" + np.ascontiguousarray(v).tobytes())
        out.append(h.hexdigest())
    return out


def merkle_root(hex_leaves):
    """The root over the leaves (lib/store/store_sign.c's tree)."""
    if not hex_leaves:
        return hashlib.blake2b(b"h5mem-empty-v1\0", digest_size=32).hexdigest()
    lv = [bytes.fromhex(x) for x in hex_leaves]
    while len(lv) > 1:
        nxt = [hashlib.blake2b(b"h5mem-node-v1\0" + lv[i] + lv[i + 1], digest_size=32).digest()
               for i in range(0, len(lv) - 1, 2)]
        if len(lv) % 2:
            nxt.append(lv[-1])
        lv = nxt
    return lv[0].hex()


MSG_TAG = b"h5mem-checkpoint-v1\0"


def parse_key(text):
    if not text.startswith("ed25519:"):
        text = open(text).read().strip()
    if not text.startswith("ed25519:") or len(text) != 8 + 64:
        raise ValueError("not a public key: %r" % text[:80])
    return bytes.fromhex(text[8:])


def verify(path, key=None, seen=0):
    """The verdict on the store at path, as a dict (h5mem_verify's fields)."""
    import nacl.exceptions
    import nacl.signing
    out = {"valid": False, "signed": False, "checkpoints": 0, "verified": 0, "edited": [], "added": [],
           "removed": [], "missing_rows": 0, "leaves_intact": False, "problems": []}
    f = h5py.File(path, "r")
    if "sign" not in f:
        out["problems"].append("not signed")
        return out
    g = f["sign"]
    sid = f.attrs["store_id"]
    sid = bytes.fromhex(sid.decode() if isinstance(sid, bytes) else sid)
    try:
        cols = {k: g[k][:] for k in ("seq", "wal_seq", "rows", "time", "root", "prev", "key", "sig", "graph")}
        stored = [bytes(x).hex() for x in g["leaves"][:]]
    except KeyError as e:
        out["problems"].append("/sign is damaged: %s" % e)
        return out
    schema = schema_hash(f)
    n = len(cols["seq"])
    out.update(signed=n > 0, checkpoints=n)
    if not n or any(len(v) != n for v in cols.values()):
        out["problems"].append("/sign's datasets differ in length")
        return out
    for r in range(n):
        root, prev, pk, sig = (bytes(cols[k][r]) for k in ("root", "prev", "key", "sig"))
        if int(cols["seq"][r]) != r + 1:
            out["problems"].append("checkpoint %d is numbered %d" % (r + 1, cols["seq"][r]))
            break
        if prev != (bytes(cols["root"][r - 1]) if r else bytes(32)):
            out["problems"].append("checkpoint %d does not follow checkpoint %d" % (r + 1, r))
            break
        msg = MSG_TAG + sid + struct.pack("<qqqq", *(int(cols[k][r]) for k in ("seq", "wal_seq", "rows", "time")))
        msg += root + prev + pk + schema + bytes(cols["graph"][r])
        try:
            nacl.signing.VerifyKey(pk).verify(msg, sig)
        except nacl.exceptions.BadSignatureError:
            out["problems"].append("checkpoint %d: the signature does not verify" % (r + 1))
            break
        if key is not None and pk != key:
            out["problems"].append("checkpoint %d is signed with another key" % (r + 1))
            break
        out["verified"] += 1
    last = n - 1
    rows, root = int(cols["rows"][last]), bytes(cols["root"][last]).hex()
    out.update(seq=int(cols["seq"][last]), signed_rows=rows, root=root)
    if seen > out["seq"]:
        out["problems"].append("rolled back: checkpoint %d was seen, the file's last is %d" % (seen, out["seq"]))
    now = leaves_of(f)
    ids = f["memories"]["id"][:]
    dead = set(int(r) for r in f["memories"]["deleted"][:])
    out["rows"] = len(now)
    out["leaves_intact"] = len(stored) == rows and merkle_root(stored) == root
    data_ok = len(now) == rows and merkle_root(now) == root
    if not data_ok:
        for r, leaf in enumerate(now):
            if r >= rows:
                if r not in dead:
                    out["added"].append(int(ids[r]))
            elif r < len(stored) and leaf != stored[r]:
                out["removed" if r in dead else "edited"].append(int(ids[r]))
        out["missing_rows"] = max(0, rows - len(now))
        out["problems"].append("the rows differ from the last signed checkpoint's")
    elif not out["leaves_intact"]:
        out["problems"].append("/sign/leaves was changed")
    gh, signed = graph_hash(f), bytes(cols["graph"][last])
    out["graph"] = {name: gh[32 * t:32 * t + 32] == signed[32 * t:32 * t + 32] for t, (name, _) in enumerate(GRAPH)}
    for name, ok in out["graph"].items():
        if not ok:
            out["problems"].append("the knowledge graph's %s differ" % name)
    out["valid"] = not out["problems"]
    return out


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--leaves" in args:
        for leaf in leaves(args[0]):
            print(leaf)
        sys.exit(0)
    key = parse_key(args[args.index("--key") + 1]) if "--key" in args else None
    seen = int(args[args.index("--seen") + 1]) if "--seen" in args else 0
    v = verify(args[0], key, seen)
    print(json.dumps(v))
    sys.exit(0 if v["valid"] else 1)
