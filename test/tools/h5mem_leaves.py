#!/usr/bin/python3
"""test/tools/h5mem_leaves.py - the leaves of a store's rows computed from
its .h5 file alone (h5py, hashlib), by the encoding in
lib/store/store_sign.c (issue 25, work in progress): an independent twin
of h5mem's own computation.

    /usr/bin/python3 test/tools/h5mem_leaves.py agent.h5    # one hex leaf per row
"""
import hashlib
import math
import struct
import sys

import h5py
import numpy as np

NAN = struct.pack("<Q", 0x7FF8000000000000)


def f64(v):
    return NAN if math.isnan(v) else struct.pack("<d", v)


def s32(b):
    b = b or b""
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<I", len(b)) + bytes(b)


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
    f = h5py.File(path, "r")
    m = f["memories"]
    n = m["id"].shape[0]
    dead = set(int(r) for r in m["deleted"][:]) if "deleted" in m else set()
    ids, ts = m["id"][:], m["ts"][:]
    ac, la, imp = m["access_count"][:], m["last_access"][:], m["importance"][:]
    strs = [m[k][:] for k in ("text", "source", "session", "tags", "tier", "meta")]
    emb = m["embedding"]
    cols = columns(f)
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
        for s in strs:
            h.update(s32(s[r]))
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
                h.update(s32(bytes(v) if not isinstance(v, (bytes, str)) else v))
            else:  # a vector: missing flag, then the row's bytes
                if int(m["columns"][name + ".missing"][r]):
                    h.update(b"\0")
                else:
                    h.update(b"\1" + np.ascontiguousarray(v).tobytes())
        out.append(h.hexdigest())
    return out


def root(hex_leaves):
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


if __name__ == "__main__":
    for leaf in leaves(sys.argv[1]):
        print(leaf)
