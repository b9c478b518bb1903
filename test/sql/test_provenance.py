"""Provenance (issue 25): provenance=on keeps each record's history in the
declared column `provenance`, a JSON array of events.

- an INSERT's event: op insert, by the store's agent (or the connection's
  writer, h5mem_writer), at (unix seconds), tool, embedder;
- an UPDATE appends an event naming the columns it set, an UPDATE of
  importance alone too (no change in place then); a failed UPDATE leaves
  no fields behind for the next write;
- the column cannot be given (INSERT, UPDATE); h5mem_writer on a store
  without provenance is an error;
- the histories persist through checkpoints, a new connection (whose
  writer is the agent again), optimize; h5py reads the same JSON;
- rows held back for the embedder, h5mem_promote from an ephemeral table
  and an ephemeral table itself get histories; a consolidation's merge
  appends an update of the survivor;
- in a signed store a history edited in the file is found by h5mem_verify
  and by the independent verifier.
"""
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
from sqltest import check, connect, expect_error, finish  # noqa: E402

d = tempfile.mkdtemp(prefix="h5mem_prov_")
p = os.path.join(d, "agent.h5")
db = connect()
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s', embedder='hash:8', agent='alice', provenance=on, "
           "user_id integer)" % p)


def hist(db, id_, table="m"):
    return json.loads(db.execute("SELECT provenance FROM %s WHERE id = ?" % table, (id_,)).fetchone()[0])


t0 = int(time.time())
db.execute("INSERT INTO m(text, user_id) VALUES ('first', 1)")
h = hist(db, 1)
check(len(h) == 1 and h[0]["op"] == "insert" and h[0]["by"] == "alice" and h[0]["embedder"] == "hash:8"
      and t0 <= h[0]["at"] <= int(time.time()) + 1 and "tool" not in h[0] and "fields" not in h[0],
      "an insert's event: %r" % h)
check(db.execute("SELECT h5mem_writer('m', 'bob', 'planner')").fetchone()[0] == "bob", "h5mem_writer's result")
db.execute("INSERT INTO m(text) VALUES ('second')")
h = hist(db, 2)
check(h[0]["by"] == "bob" and h[0]["tool"] == "planner", "the connection's writer and tool: %r" % h)
db.execute("UPDATE m SET text = 'first, edited', user_id = 2 WHERE id = 1")
db.execute("UPDATE m SET importance = 0.9 WHERE id = 1")
h = hist(db, 1)
check([e["op"] for e in h] == ["insert", "update", "update"] and h[0]["by"] == "alice" and h[1]["by"] == "bob"
      and h[1]["fields"] == ["text", "user_id"] and h[2]["fields"] == ["importance"],
      "updates append events naming their columns: %r" % h)
check(db.execute("SELECT importance FROM m WHERE id = 1").fetchone()[0] == 0.9, "the update itself")
# SQL's JSON functions read it
r = db.execute("SELECT provenance ->> '$[0].by', provenance ->> '$[#-1].by', json_array_length(provenance) "
               "FROM m WHERE id = 1").fetchone()
check(r == ("alice", "bob", 3), "queried with ->>: %r" % (r,))
# never given
expect_error(db, "INSERT INTO m(text, provenance) VALUES ('x', '[]')", "written by h5mem")
expect_error(db, "UPDATE m SET provenance = '[]' WHERE id = 1", "written by h5mem")
expect_error(db, "UPDATE m SET provenance = NULL WHERE id = 1", "written by h5mem")
# a failed UPDATE leaves nothing for the next write
expect_error(db, "UPDATE m SET id = 2, text = 'clash' WHERE id = 1", "UNIQUE")
db.execute("INSERT INTO m(text) VALUES ('third')")
check("fields" not in hist(db, 3)[0], "no fields left from a failed UPDATE: %r" % hist(db, 3))
db.execute("SELECT h5mem_writer('m', NULL)")
db.execute("INSERT INTO m(text) VALUES ('fourth')")
check(hist(db, 4)[0]["by"] == "alice" and "tool" not in hist(db, 4)[0], "h5mem_writer(NULL): the agent again")
# rows held back for the embedder (a transaction of inserts)
db.execute("BEGIN")
for i in range(5):
    db.execute("INSERT INTO m(text) VALUES (?)", ("batch %d" % i,))
db.execute("COMMIT")
n = db.execute("SELECT count(*) FROM m WHERE json_array_length(provenance) = 1 AND text LIKE 'batch%'").fetchone()[0]
check(n == 5, "held-back rows get histories: %d of 5" % n)
before = {r[0]: r[1] for r in db.execute("SELECT id, provenance FROM m")}
db.execute("SELECT h5mem_checkpoint('m')")
db.close()

# a new connection: the same histories; its writer is the agent
db = connect()
db.execute("CREATE VIRTUAL TABLE m USING h5mem(path='%s')" % p)
after = {r[0]: r[1] for r in db.execute("SELECT id, provenance FROM m")}
check(after == before, "histories persist")
db.execute("UPDATE m SET tags = 'x' WHERE id = 2")
h = hist(db, 2)
check(h[-1]["by"] == "alice" and h[-1]["fields"] == ["tags"] and h[0]["by"] == "bob", "another connection: %r" % h)
db.execute("INSERT INTO m(m) VALUES ('optimize')")
check(hist(db, 2) == h, "optimize keeps them")
db.execute("INSERT INTO m(text) VALUES ('after optimize')")
check(hist(db, db.execute("SELECT max(id) FROM m").fetchone()[0])[0]["op"] == "insert", "and still records")
# h5py reads the same JSON
import h5py  # noqa: E402
with h5py.File(p, "r") as f:
    ids = list(f["memories"]["id"][:])
    dead = set(int(x) for x in f["memories"]["deleted"][:])
    col = f["memories"]["columns"]["provenance"][:]
    check(f.attrs["provenance"] in (b"on", "on"), "the root's provenance attribute")
    r = max(i for i, x in enumerate(ids) if x == 2 and i not in dead)
    got = col[r].decode() if isinstance(col[r], bytes) else col[r]
    check(json.loads(got)[:2] == h[:2], "h5py reads the history")

# h5mem_writer without provenance; provenance on an existing store without it
db.execute("CREATE VIRTUAL TABLE plain USING h5mem(path='%s/plain.h5', dim=2)" % d)
expect_error(db, "SELECT h5mem_writer('plain', 'x')", "keeps no provenance")
expect_error(db, "CREATE VIRTUAL TABLE plain2 USING h5mem(path='%s/plain.h5', provenance=on, n integer)" % d, "")
expect_error(db, "CREATE VIRTUAL TABLE bad USING h5mem(path='%s/bad.h5', dim=2, provenance=maybe)" % d, "on or off")

# ephemeral, and h5mem_promote into a store with provenance: the target's own history
db.execute("CREATE VIRTUAL TABLE e USING h5mem(ephemeral=on, dim=8, embedder='hash:8', agent='scratch', provenance=on)")
db.execute("INSERT INTO e(text) VALUES ('short-lived')")
check(hist(db, 1, "e")[0]["by"] == "scratch", "an ephemeral table's history")
n0 = db.execute("SELECT count(*) FROM m").fetchone()[0]
check(db.execute("SELECT h5mem_promote('e', 'm')").fetchone()[0] == 1, "promoted")
nid = db.execute("SELECT max(id) FROM m").fetchone()[0]
h = hist(db, nid)
check(db.execute("SELECT count(*) FROM m").fetchone()[0] == n0 + 1 and len(h) == 1 and h[0]["op"] == "insert"
      and h[0]["by"] == "alice", "a promoted record's history in the target: %r" % h)
db.close()

# a consolidation's merge: an update of the survivor
db = connect()
db.execute("CREATE VIRTUAL TABLE c USING h5mem(path='%s/c.h5', embedder='hash:16', agent='alice', provenance=on)" % d)
db.execute("INSERT INTO c(text, tier) VALUES ('the cat sat on the mat', 'working')")
db.execute("INSERT INTO c(text, tier) VALUES ('the cat sat on the mat', 'working')")
db.execute("INSERT INTO c(c, meta) VALUES ('consolidate', '{\"merge_threshold\": 0.05}')")
rows = db.execute("SELECT id, provenance FROM c").fetchall()
h = json.loads(rows[0][1]) if len(rows) == 1 else []
check(len(rows) == 1 and [e["op"] for e in h] == ["insert", "update"]
      and h[1]["fields"] == ["meta", "importance", "access_count", "last_access"], "a merge's event: %r" % rows)
db.close()

# signed: a history edited in the file is found
db = connect()
info = json.loads(db.execute("SELECT h5mem_info()").fetchone()[0])
if info["libsodium"]:
    import shutil

    import h5mem_verify as twin
    key = os.path.join(d, "k")
    pub = db.execute("SELECT h5mem_keygen(?)", (key,)).fetchone()[0]
    sp = os.path.join(d, "signed.h5")
    db.execute("CREATE VIRTUAL TABLE s USING h5mem(path='%s', dim=2, provenance=on, signing_key='%s')" % (sp, key))
    for i in range(4):
        db.execute("INSERT INTO s(text) VALUES (?)", ("s%d" % i,))
    db.execute("UPDATE s SET text = 'changed' WHERE id = 2")
    db.execute("SELECT h5mem_checkpoint('s')")
    v = json.loads(db.execute("SELECT h5mem_verify('s', ?)", (pub,)).fetchone()[0])
    check(v["valid"], "a signed store with provenance verifies: %r" % v["problems"])
    db.close()
    tp = os.path.join(d, "forged.h5")
    shutil.copy(sp, tp)
    with h5py.File(tp, "r+") as f:
        ids = list(f["memories"]["id"][:])
        r = ids.index(3)
        f["memories"]["columns"]["provenance"][r] = '[{"op":"insert","by":"mallory","at":0}]'
    db = connect()
    v = json.loads(db.execute("SELECT h5mem_verify(?, ?)", (tp, pub)).fetchone()[0])
    t = twin.verify(tp, twin.parse_key(pub))
    check(not v["valid"] and v["edited"] == [3] and t["edited"] == [3], "a forged history is found: %r %r" % (v, t))
finish()
