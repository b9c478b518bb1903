"""Signed checkpoints (issue 25): signing_key=, h5mem_sign, h5mem_verify,
checked against the independent verifier test/tools/h5mem_verify.py
(h5py, hashlib, PyNaCl; no h5mem code).

- a store made with signing_key= is signed at once; every checkpoint is
  signed; the leaves h5mem stores equal those the twin computes from the
  rows, for every column type, NULLs, dead, touched and updated rows, in
  float32 and float16 stores; both verifiers agree on every verdict;
- incremental checkpoints (random inserts, deletes, updates, touches)
  keep the stored leaves equal to a full recomputation;
- optimize carries the history over and signs the new file;
- h5mem_sign starts signing an existing store; the unsigned log is
  reported as such;
- tampering, each detected and located by both verifiers: an edited
  text, an edited embedding byte, a deleted row, two rows swapped, a
  replaced public key, a store signed again with another key (found when
  the key is pinned), a rolled-back file; later checkpoints do not
  launder an edit, and one that changes an edited row (in place, by an
  UPDATE of another column, or by a delete) refuses to sign it again; a
  NULL made '' is found; a string whose element's length was changed is found; a store whose /sign was removed is not signed
  anew by a table that gives signing_key=; leaves forged to match an
  edit are found, and not built on; the knowledge graph: an entity edited
  in the file is found, and not signed over;
- h5mem-mcp on a signed store signs its writes;
- errors: a signed store whose key file is gone keeps its changes in the
  log until the key is back; another key is refused; an ephemeral table
  refuses signing_key=; h5mem_sign without a key.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from sqltest import check, connect, expect_error, finish  # noqa: E402

db0 = connect()
if not json.loads(db0.execute("SELECT h5mem_info()").fetchone()[0])["libsodium"]:
    d = tempfile.mkdtemp(prefix="h5mem_signck_")
    expect_error(db0, "CREATE VIRTUAL TABLE m USING h5mem(path='%s/m.h5', dim=2, signing_key='%s/k')" % (d, d),
                 "libsodium")
    finish()
    sys.exit(0)

import h5py  # noqa: E402
import h5mem_verify as twin  # noqa: E402
import nacl.signing  # noqa: E402
import numpy as np  # noqa: E402

d = tempfile.mkdtemp(prefix="h5mem_signck_")
key = os.path.join(d, "agent.key")
pub = db0.execute("SELECT h5mem_keygen(?)", (key,)).fetchone()[0]
other = os.path.join(d, "other.key")
other_pub = db0.execute("SELECT h5mem_keygen(?)", (other,)).fetchone()[0]


def verify_both(path, pin=None, seen=0, db=None, name=None):
    """h5mem_verify's verdict and the twin's, which must agree."""
    args = [name or path] + ([pin] if pin or seen else []) + ([seen] if seen else [])
    if pin is None and seen:
        args[1] = None
    sql = "SELECT h5mem_verify(%s)" % ", ".join("?" * len(args))
    ours = json.loads((db or db0).execute(sql, args).fetchone()[0])
    theirs = twin.verify(path, twin.parse_key(pin) if pin else None, seen)
    for k in ("valid", "signed", "checkpoints", "verified", "edited", "added", "removed", "missing_rows",
              "leaves_intact", "graph"):
        check(ours.get(k) == theirs.get(k), "%s: %s: h5mem %r, the twin %r" % (path, k, ours.get(k), theirs.get(k)))
    if theirs.get("root"):
        check(ours["root"] == theirs["root"], "%s: roots differ" % path)
    return ours


def stored_leaves(path):
    with h5py.File(path, "r") as f:
        return [bytes(x).hex() for x in f["sign"]["leaves"][:]]


# ---- every column type, both storages: the leaves are the twin's -------------------------
for storage in ("float32", "float16"):
    p = os.path.join(d, "types_%s.h5" % storage)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=4, storage=%s, signing_key='%s', user_id integer, "
               "score float, flag boolean, note text, +payload blob, key text primary key, img float32[3], "
               "h float16[2], q int8[4], b bit[8])" % (p, storage, key))
    v = verify_both(p, pub)
    check(v["valid"] and v["checkpoints"] == 1 and v["rows"] == 0, "an empty store made signed: %r" % v)
    rng = random.Random(1)
    for i in range(60):
        emb = None if i % 7 == 0 else struct.pack("4f", *[rng.uniform(-1, 1) for _ in range(4)])
        db.execute("INSERT INTO mem(text, embedding, source, importance, last_access, user_id, score, flag, note, "
                   "payload, key, img, h, q, b) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   ("t%d" % i if i % 5 else None, emb, None if i % 3 else "src", None if i % 4 == 0 else rng.random(),
                    None if i % 2 else 1700000000 + i, None if i % 6 == 0 else i, None if i % 8 == 0 else rng.random(),
                    None if i % 9 == 0 else i % 2, None if i % 10 == 0 else "n%d" % i,
                    None if i % 11 == 0 else bytes([i, 0, 255]), "k%d" % i,
                    None if i % 4 == 1 else json.dumps([rng.random() for _ in range(3)]),
                    None if i % 5 == 2 else json.dumps([0.5, -0.25]),
                    None if i % 3 == 1 else json.dumps([1, -2, 3, 127]),
                    None if i % 2 == 1 else bytes([0b10100101])))
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.execute("DELETE FROM mem WHERE id IN (3, 4, 10)")
    db.execute("SELECT h5mem_touch('mem', 5)")
    db.execute("UPDATE mem SET tier = 'warm', importance = 0.25 WHERE id = 6")
    db.execute("UPDATE mem SET text = 'changed' WHERE id = 7")
    v = verify_both(p, pub, db=db, name="mem")
    check(v["valid"] and v["unsigned"]["frames"] > 0 and v["unsigned"]["ids"] == [3, 4, 5, 6, 7, 10],
          "the unsigned log reported: %r" % v["unsigned"])
    db.execute("SELECT h5mem_checkpoint('mem')")
    ours, theirs = stored_leaves(p), twin.leaves(p)
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    check(not bad and len(ours) == len(theirs) == 61, "%s: leaves differ at rows %r" % (storage, bad[:10]))
    v = verify_both(p, pub)
    check(v["valid"] and v["checkpoints"] == 3 and v["signed_rows"] == 61 and v["unsigned"]["frames"] == 0,
          "%s: after two checkpoints: %r" % (storage, v))
    db.close()

# the tree's shapes (odd levels carried up), against the twin
for n in range(0, 10):
    leaves = [("%02x" % i) * 32 for i in range(n)]
    check(twin.merkle_root(leaves) is not None, "root of %d leaves" % n)

# ---- incremental checkpoints against a full recomputation ---------------------------------
p = os.path.join(d, "inc.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=3, signing_key='%s', user_id integer)" % (p, key))
rng = random.Random(7)
ids = []
for round_ in range(8):
    for _ in range(rng.randint(5, 40)):
        r = rng.random()
        if r < 0.55 or not ids:
            db.execute("INSERT INTO mem(text, embedding, user_id) VALUES (?, ?, ?)",
                       ("r%d" % rng.randint(0, 10**6), struct.pack("3f", rng.random(), rng.random(), rng.random()),
                        rng.randint(0, 5)))
            ids.append(db.execute("SELECT last_insert_rowid()").fetchone()[0])
        elif r < 0.7:
            db.execute("DELETE FROM mem WHERE id = ?", (ids.pop(rng.randrange(len(ids))),))
        elif r < 0.85:
            db.execute("UPDATE mem SET importance = ?, tier = ? WHERE id = ?",
                       (rng.random(), rng.choice(["hot", "warm", None]), rng.choice(ids)))
        elif r < 0.93:
            db.execute("UPDATE mem SET text = ?, user_id = ? WHERE id = ?", ("u%d" % round_, round_, rng.choice(ids)))
        else:
            db.execute("SELECT h5mem_touch('mem', ?)", (rng.choice(ids),))
    db.execute("SELECT h5mem_checkpoint('mem')")
    ours, theirs = stored_leaves(p), twin.leaves(p)
    check(ours == theirs, "round %d: stored leaves differ from a full recomputation" % round_)
    v = verify_both(p, pub)
    check(v["valid"] and v["checkpoints"] == round_ + 2, "round %d: %r" % (round_, v["problems"]))
# optimize: the history carried over, the new file signed
n_before = verify_both(p, pub)["checkpoints"]
db.execute("INSERT INTO mem(mem) VALUES ('optimize')")
v = verify_both(p, pub)
check(v["valid"] and v["checkpoints"] == n_before + 1 and v["rows"] == len(ids),
      "after optimize: %r (expected %d checkpoints, %d rows)" % (v, n_before + 1, len(ids)))
db.execute("INSERT INTO mem(text) VALUES ('after optimize')")
db.execute("SELECT h5mem_checkpoint('mem')")
check(verify_both(p, pub)["valid"], "a checkpoint after optimize")
db.close()

# ---- h5mem_sign: an existing store signed later ---------------------------------------------
p = os.path.join(d, "later.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=2)" % p)
for i in range(20):
    db.execute("INSERT INTO mem(text) VALUES (?)", ("m%d" % i,))
db.execute("SELECT h5mem_checkpoint('mem')")
v = verify_both(p)
check(not v["valid"] and not v["signed"], "an unsigned store: %r" % v)
expect_error(db, "SELECT h5mem_sign('mem')", "no key")
db.execute("INSERT INTO mem(text) VALUES ('in the log')")
check(db.execute("SELECT h5mem_sign('mem', ?)", (key,)).fetchone()[0] == 1, "h5mem_sign's result: the checkpoint's number")
v = verify_both(p, pub)
check(v["valid"] and v["rows"] == 21, "signed later: %r" % v)
db.execute("INSERT INTO mem(text) VALUES ('next')")
db.execute("SELECT h5mem_checkpoint('mem')")
check(verify_both(p, pub)["checkpoints"] == 2, "checkpoints after h5mem_sign are signed")
db.close()
# a new connection finds the key file the store names (no signing_key= given)
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % p)
db.execute("INSERT INTO mem(text) VALUES ('another connection')")
db.execute("SELECT h5mem_checkpoint('mem')")
check(verify_both(p, pub)["checkpoints"] == 3, "a connection without signing_key= signs with the store's key file")
expect_error(db, "SELECT h5mem_sign('mem', ?)", "keeps one key", (other,))
db.close()

# ---- errors -----------------------------------------------------------------------------------
db = connect()
expect_error(db, "CREATE VIRTUAL TABLE e USING h5mem(ephemeral=on, dim=2, signing_key='%s')" % key, "ephemeral")
expect_error(db, "CREATE VIRTUAL TABLE m USING h5mem(path='%s/nokey.h5', dim=2, signing_key='%s/absent')" % (d, d),
             "absent")
check(not os.path.exists(os.path.join(d, "nokey.h5")), "a store is not made when its key cannot be read")
expect_error(db, "CREATE VIRTUAL TABLE m USING h5mem(path='%s', signing_key='%s')" % (p, other), "keeps one key")
# the key file gone: the checkpoint refuses, the changes stay in the log, and are signed once it is back
p = os.path.join(d, "gone.h5")
k2 = os.path.join(d, "gone.key")
db.execute("SELECT h5mem_keygen(?)", (k2,))
db.execute("CREATE VIRTUAL TABLE g USING h5mem(path='%s', dim=2, signing_key='%s')" % (p, k2))
db.execute("INSERT INTO g(text) VALUES ('kept')")
os.rename(k2, k2 + ".away")
expect_error(db, "SELECT h5mem_checkpoint('g')", "cannot be used")
check(db.execute("SELECT text FROM g").fetchall() == [("kept",)], "the record is still there")
os.rename(k2 + ".away", k2)
db.execute("SELECT h5mem_checkpoint('g')")
v = verify_both(p, k2 + ".pub")
check(v["valid"] and v["rows"] == 1 and v["checkpoints"] == 2, "signed once the key is back: %r" % v)
expect_error(db, "SELECT h5mem_verify(?)", "no h5mem table or store file", (os.path.join(d, "nothing.h5"),))
expect_error(db, "SELECT h5mem_verify('g', 'ed25519:00')", "")
db.close()

# ---- tampering ---------------------------------------------------------------------------------
base = os.path.join(d, "base.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=4, signing_key='%s')" % (base, key))
for i in range(30):
    db.execute("INSERT INTO mem(text, embedding) VALUES (?, ?)",
               ("memory number %d" % i, struct.pack("4f", i, i + 0.5, -i, 1.0)))
db.execute("SELECT h5mem_checkpoint('mem')")
rolled = os.path.join(d, "rolled.h5")
shutil.copy(base, rolled)  # checkpoint 2
db.execute("INSERT INTO mem(text) VALUES ('later')")
db.execute("SELECT h5mem_checkpoint('mem')")
db.close()
v = verify_both(base, pub)
check(v["valid"] and v["seq"] == 3, "the base is valid: %r" % v)


def tampered(name, edit):
    p = os.path.join(d, name + ".h5")
    shutil.copy(base, p)
    with h5py.File(p, "r+") as f:
        edit(f)
    return p


def row_of(f, id_):
    return int(list(f["memories"]["id"][:]).index(id_))


p = tampered("text", lambda f: f["memories"]["text"].__setitem__(row_of(f, 8), "memory number 80"))
v = verify_both(p, pub)
check(not v["valid"] and v["edited"] == [8] and v["leaves_intact"], "an edited text: %r" % v)


def flip_emb(f):
    r = row_of(f, 12)
    e = f["memories"]["embedding"][r]
    b = bytearray(e.tobytes())
    b[5] ^= 1
    f["memories"]["embedding"][r] = np.frombuffer(bytes(b), e.dtype)


p = tampered("emb", flip_emb)
v = verify_both(p, pub)
check(not v["valid"] and v["edited"] == [12], "an embedding byte: %r" % v)


def delete_row(f):
    dl = f["memories"]["deleted"]
    dl.resize((dl.shape[0] + 1,))
    dl[-1] = row_of(f, 20)


p = tampered("deleted", delete_row)
v = verify_both(p, pub)
check(not v["valid"] and v["removed"] == [20] and not v["edited"], "a deleted row: %r" % v)


def swap(f):
    a, b = row_of(f, 3), row_of(f, 4)
    for k in f["memories"]:
        ds = f["memories"][k]
        if isinstance(ds, h5py.Dataset) and ds.shape and ds.shape[0] > b and k != "deleted":
            x, y = ds[a], ds[b]
            ds[a], ds[b] = y, x


p = tampered("swap", swap)
v = verify_both(p, pub)
check(not v["valid"] and sorted(v["edited"]) == [3, 4], "two rows swapped: %r" % v)


def replace_key(f):
    f["sign"]["key"][-1] = np.frombuffer(bytes.fromhex(other_pub[8:]), "u1")


p = tampered("key", replace_key)
v = verify_both(p)
check(not v["valid"] and v["verified"] == 2 and "signature" in json.dumps(v["problems"]), "a replaced key: %r" % v)

# signed all over again with another key: valid on its own, caught when the owner's key is pinned
osk = nacl.signing.SigningKey(bytes.fromhex(open(other).read().strip().split(":")[1]))


def resign(f):
    g = f["sign"]
    sid = bytes.fromhex(f.attrs["store_id"].decode() if isinstance(f.attrs["store_id"], bytes) else f.attrs["store_id"])
    f["memories"]["text"][row_of(f, 8)] = "forged"
    lv = twin.leaves_of(f)
    g["leaves"][:] = np.array([list(bytes.fromhex(x)) for x in lv], "u1")
    prev = bytes(32)
    for r in range(len(g["seq"])):
        root = bytes.fromhex(twin.merkle_root(lv)) if r == len(g["seq"]) - 1 else bytes(g["root"][r])
        g["root"][r] = np.frombuffer(root, "u1")
        g["prev"][r] = np.frombuffer(prev, "u1")
        g["key"][r] = np.frombuffer(bytes(osk.verify_key), "u1")
        msg = twin.MSG_TAG + sid + struct.pack("<qqqq", *(int(g[k][r]) for k in ("seq", "wal_seq", "rows", "time")))
        msg += root + prev + bytes(osk.verify_key) + twin.schema_hash(f) + bytes(g["graph"][r])
        g["sig"][r] = np.frombuffer(osk.sign(msg).signature, "u1")
        prev = root


p = tampered("resigned", resign)
v = verify_both(p)
check(v["valid"], "a forgery signed with another key verifies without a pinned key: %r" % v["problems"])
v = verify_both(p, pub)
check(not v["valid"] and "not with" in json.dumps(v["problems"]), "... and fails with the owner's key pinned: %r" % v)

v = verify_both(rolled, pub, seen=3)
check(not v["valid"] and "rolled back" in json.dumps(v["problems"]), "a rolled-back file: %r" % v)
check(verify_both(rolled, pub, seen=2)["valid"], "the old file is valid for what it claims")

# an edit is not laundered by the checkpoints that follow
p = tampered("launder", lambda f: f["memories"]["text"].__setitem__(row_of(f, 9), "edited behind h5mem's back"))
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % p)
for i in range(5):
    db.execute("INSERT INTO mem(text) VALUES ('more %d')" % i)
    db.execute("UPDATE mem SET importance = 0.5 WHERE id = 2")
    db.execute("SELECT h5mem_checkpoint('mem')")
v = verify_both(p, pub, db=db, name="mem")
check(not v["valid"] and v["edited"] == [9], "an edit still found after later checkpoints: %r" % v)
db.close()



def refused(name, edit, *sqls):
    """A copy edited behind h5mem's back, then written through h5mem: its checkpoint refuses."""
    p = tampered(name, edit)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % p)
    for sql in sqls:
        db.execute(sql)
        expect_error(db, "SELECT h5mem_checkpoint('mem')", "not as it was signed")
    return p, db


# a row edited behind h5mem's back, then changed in place through h5mem: the
# checkpoint does not sign it again (the change stays in the log), until
# h5mem_sign accepts the store as it is
p, db = refused("resign_refused", lambda f: f["memories"]["text"].__setitem__(row_of(f, 9), "edited behind its back"),
                "UPDATE mem SET importance = 0.75 WHERE id = 9")
check(db.execute("SELECT importance FROM mem WHERE id = 9").fetchone()[0] == 0.75, "the change is kept (in the log)")
v = verify_both(p, pub, db=db, name="mem")
check(not v["valid"] and v["edited"] == [9] and v["unsigned"]["ids"] == [9], "found, and the change unsigned: %r" % v)
db.execute("SELECT h5mem_sign('mem')")
v = verify_both(p, pub)
check(v["valid"] and v["seq"] == 4, "h5mem_sign accepts the store as it is: %r" % v)
db.close()

# ... nor through an UPDATE of another column (a delete and a put of the row's values), nor a delete
p, db = refused("reput_refused", lambda f: f["memories"]["source"].__setitem__(row_of(f, 7), "admin"),
                "UPDATE mem SET text = 'rewritten' WHERE id = 7", "DELETE FROM mem WHERE id = 7")
db.close()
check(verify_both(p, pub)["edited"] == [7], "the edit behind an UPDATE is still found")

# NULL and '' differ: a NULL session made '' is an edit
p = tampered("null", lambda f: f["memories"]["session"].__setitem__(row_of(f, 11), ""))
v = verify_both(p, pub)
check(not v["valid"] and v["edited"] == [11], "NULL made '': %r" % v)

# a string's element made to disagree with its heap object (other readers read another string)
def shorten(f):
    d = f["memories"]["text"]
    r = row_of(f, 13)
    info = d.id.get_chunk_info(r // d.chunks[0])
    raw = bytearray(d.id.read_direct_chunk(info.chunk_offset)[1])
    at = (r - info.chunk_offset[0]) * 16
    n = int.from_bytes(raw[at:at + 4], "little")
    raw[at:at + 4] = (n - 1).to_bytes(4, "little")
    d.id.write_direct_chunk(info.chunk_offset, bytes(raw))


p = tampered("shortened", shorten)
v = verify_both(p, pub)
check(not v["valid"] and v["edited"] == [13], "an element's length changed: %r" % v)

# /sign removed: a table that gives signing_key= refuses to checkpoint rather than sign anew
p = tampered("stripped", lambda f: f.__delitem__("sign"))
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', signing_key='%s')" % (p, key))
db.execute("INSERT INTO mem(text) VALUES ('after the strip')")
expect_error(db, "SELECT h5mem_checkpoint('mem')", "no signatures")
db.close()
v = verify_both(p, pub)
check(not v["valid"] and not v["signed"], "a stripped store is not valid: %r" % v)


def forge_leaf(f):
    r = row_of(f, 5)
    f["memories"]["text"][r] = "forged with its leaf"
    leaf = twin.leaves_of(f)[r]
    f["sign"]["leaves"][r] = np.frombuffer(bytes.fromhex(leaf), "u1")


# an edit with its leaf forged to match: verify finds the rows and leaves both changed, and a
# checkpoint refuses to build on leaves that do not give the signed root
p = tampered("forged_leaf", forge_leaf)
v = verify_both(p, pub)
check(not v["valid"] and not v["leaves_intact"], "a forged leaf: %r" % v)
db = connect()
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s')" % p)
db.execute("INSERT INTO mem(text) VALUES ('more')")
expect_error(db, "SELECT h5mem_checkpoint('mem')", "does not give the last signed root")
db.close()

# the knowledge graph is signed too: an entity edited in the file is found (by table), and a
# checkpoint that changes the graph does not sign it over
gp = os.path.join(d, "graph.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE g USING h5mem(path='%s', dim=2, signing_key='%s')" % (gp, key))
db.execute("INSERT INTO g_entities(name, type, aliases) VALUES ('Alice', 'person', '[\"Al\"]'), ('Bob', 'person', NULL), "
           "('Acme', NULL, NULL)")
db.execute("INSERT INTO g_relations(src, dst, type, weight) VALUES (1, 2, 'knows', 0.5), (2, 3, 'works_at', 1)")
db.execute("INSERT INTO g(text) VALUES ('Alice met Bob')")
db.execute("INSERT INTO g_mentions(memory_id, entity_id) VALUES (1, 1), (1, 2)")
db.execute("SELECT h5mem_checkpoint('g')")
db.execute("DELETE FROM g_relations WHERE id = 2")
db.execute("INSERT INTO g_entities(name) VALUES ('Carol')")
db.execute("SELECT h5mem_checkpoint('g')")
db.execute("INSERT INTO g(text) VALUES ('no graph change')")
db.execute("SELECT h5mem_checkpoint('g')")
db.close()
v = verify_both(gp, pub)
check(v["valid"] and v["graph"] == {"entities": True, "relations": True, "mentions": True}, "a signed graph: %r" % v)


def edit_entity(f):
    e = f["graph"]["entities"]
    r = list(e["id"][:]).index(2)
    e["name"][r] = "Mallory"


shutil.copy(gp, os.path.join(d, "graph_base.h5"))
base_g = os.path.join(d, "graph_base.h5")
ep = os.path.join(d, "graph_edit.h5")
shutil.copy(base_g, ep)
with h5py.File(ep, "r+") as f:
    edit_entity(f)
v = verify_both(ep, pub)
check(not v["valid"] and v["graph"] == {"entities": False, "relations": True, "mentions": True}
      and not v["edited"], "an edited entity: %r" % v)
db = connect()
db.execute("CREATE VIRTUAL TABLE g USING h5mem(path='%s')" % ep)
db.execute("INSERT INTO g(text) VALUES ('no graph change')")
db.execute("SELECT h5mem_checkpoint('g')")  # (the graph unchanged: signed as it was signed)
check(verify_both(ep, pub)["graph"]["entities"] is False, "still found after a checkpoint")
db.execute("INSERT INTO g_relations(src, dst, type) VALUES (1, 3, 'visits')")
expect_error(db, "SELECT h5mem_checkpoint('g')", "entities are not as they were signed")
db.close()

# h5mem-mcp on a signed store: its writes are checkpointed and signed with the key file the store names
server = os.path.join(os.getcwd(), "h5mem-mcp")
mp = os.path.join(d, "mcp.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', embedder='hash:64', signing_key='%s')" % (mp, key))
db.close()
msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "create_entities",
                    "arguments": {"entities": [{"name": "Alice", "entityType": "person", "observations": ["tea"]}]}}}]
out = subprocess.run([server, "--store", mp], input="\n".join(json.dumps(m) for m in msgs) + "\n", capture_output=True,
                     text=True, timeout=60)
check(out.returncode == 0 and '"id":2,"result"' in out.stdout, "h5mem-mcp wrote: %r" % out.stderr[-300:])
v = verify_both(mp, pub)
check(v["valid"] and v["checkpoints"] == 2 and v["graph"]["entities"], "h5mem-mcp's writes are signed: %r" % v)

# a damaged /sign: a verdict, never a crash
p = tampered("damaged", lambda f: f["sign"]["seq"].resize((1,)))
v = json.loads(db0.execute("SELECT h5mem_verify(?)", (p,)).fetchone()[0])
check(not v["valid"] and v["problems"], "a damaged /sign: %r" % v)

# the independent verifier as a command: exit 0 valid, 1 not
tool = os.path.join(HERE, "..", "tools", "h5mem_verify.py")
check(subprocess.run([sys.executable, tool, base, "--key", key + ".pub"], capture_output=True).returncode == 0,
      "h5mem_verify.py: valid")
check(subprocess.run([sys.executable, tool, rolled, "--seen", "3"], capture_output=True).returncode == 1,
      "h5mem_verify.py: rolled back")
finish()
