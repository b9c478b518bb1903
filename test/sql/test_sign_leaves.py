"""WIP (issue 25): h5mem's leaves (store_leaf, through h5mem_leaves) equal those
test/tools/h5mem_leaves.py computes from the .h5 file with h5py and hashlib."""
import json, os, random, struct, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE); sys.path.insert(0, os.path.join(HERE, "..", "tools"))

from sqltest import connect
import h5mem_leaves
d = tempfile.mkdtemp()
for storage in ("float32", "float16"):
    p = os.path.join(d, "m_%s.h5" % storage)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', dim=4, storage=%s, user_id integer, score float, flag boolean, "
               "note text, +payload blob, key text primary key, img float32[3], h float16[2], q int8[4], b bit[8])" % (p, storage))
    rng = random.Random(1)
    for i in range(60):
        emb = None if i % 7 == 0 else struct.pack("4f", *[rng.uniform(-1, 1) for _ in range(4)])
        db.execute("INSERT INTO mem(text, embedding, source, importance, last_access, user_id, score, flag, note, payload, key, img, h, q, b) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   ("t%d" % i if i % 5 else None, emb, None if i % 3 else "src", None if i % 4 == 0 else rng.random(),
                    None if i % 2 else 1700000000 + i, None if i % 6 == 0 else i, None if i % 8 == 0 else rng.random(),
                    None if i % 9 == 0 else i % 2, None if i % 10 == 0 else "n%d" % i, None if i % 11 == 0 else bytes([i, 0, 255]),
                    "k%d" % i, None if i % 4 == 1 else json.dumps([rng.random() for _ in range(3)]),
                    None if i % 5 == 2 else json.dumps([0.5, -0.25]), None if i % 3 == 1 else json.dumps([1, -2, 3, 127]),
                    None if i % 2 == 1 else bytes([0b10100101])))
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.execute("DELETE FROM mem WHERE id IN (3, 4, 10)")
    db.execute("SELECT h5mem_touch('mem', 5)")
    db.execute("UPDATE mem SET tier = 'warm', importance = 0.25 WHERE id = 6")
    db.execute("UPDATE mem SET text = 'changed' WHERE id = 7")
    db.execute("SELECT h5mem_checkpoint('mem')")
    got = json.loads(db.execute("SELECT h5mem_leaves('mem')").fetchone()[0])
    ours = got["leaves"]
    theirs = h5mem_leaves.leaves(p)
    assert got["root"] == h5mem_leaves.root(theirs), "roots differ"
    for k in (0, 1, 2, 3, 5, 8):  # the tree's shapes: odd levels carried up
        assert h5mem_leaves.root(theirs[:k]) is not None
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
    print(storage, len(ours), len(theirs), "mismatched rows:", bad[:10], "root", got["root"][:16])
    assert not bad and len(ours) == len(theirs)
    db.close()
# the tree's shapes: 0 to 9 rows (odd levels carried up), C against Python
for k in range(10):
    p = os.path.join(d, "k%d.h5" % k)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE s USING h5mem(path='%s', dim=2)" % p)
    for i in range(k):
        db.execute("INSERT INTO s(text) VALUES (?)", ("r%d" % i,))
    db.execute("SELECT h5mem_checkpoint('s')")
    got = json.loads(db.execute("SELECT h5mem_leaves('s')").fetchone()[0])
    assert got["root"] == h5mem_leaves.root(h5mem_leaves.leaves(p)), "root of %d rows" % k
    db.close()
print("roots of 0 to 9 rows agree")
