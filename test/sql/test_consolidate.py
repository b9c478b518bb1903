"""The consolidation cycle through SQL (issue 19; docs/SQL.md, "Memory
lifecycle"): h5mem_consolidate and the command
INSERT INTO mem(mem, meta) VALUES('consolidate', '{options}').

- the tier flow: working -> episodic at promote_after uses, episodic ->
  semantic at semantic_after (2 x promote_after by default), one step a
  cycle; other tiers (NULL included) left alone;
- eviction: the lowest decay scores beyond working_capacity, checked
  against a Python computation of the documented score on random records
  (ties: the lower id first); archive vs delete; per-call options;
- merges: near-duplicates within merge_threshold, the survivor (higher
  tier, then more used, then lower id) with the summed access counts and
  the merged ids and sessions in its meta (its own list and the other's
  kept), merge_scope working vs all;
- transactions: ROLLBACK undoes a cycle, a bad option changes nothing,
  the tiers survive a checkpoint and reopen;
- errors: unknown and bad options, malformed JSON;
- a kill: a writer SIGKILLed while it runs cycles leaves the state before
  or after a cycle, never part of one.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402

NOW = 1800000000
DAY = 86400.0


def table(db, d, name, opts=""):
    fn = os.path.join(d, name + ".h5")
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4%s)" % (q(fn), opts))
    return fn


def cons(db, **o):
    o.setdefault("now", NOW)
    return json.loads(db.execute("SELECT h5mem_consolidate('mem', ?)", (json.dumps(o),)).fetchone()[0])


def score_py(imp, ts, n, last, now=NOW, half_life_days=7.0):
    """docs/SQL.md's decay score, again (weights 0.4, 0.4, 0.2; access_full 100)."""
    i = 0.5 if imp is None else min(1.0, max(0.0, imp))
    age = now - max(t for t in (ts, last) if t is not None)
    r = 1.0 if age <= 0 else 0.5 ** (age / (half_life_days * DAY))
    a = 0.0 if not n or n <= 0 else min(1.0, math.log1p(n) / math.log1p(100))
    return (0.4 * i + 0.4 * r + 0.2 * a) / 1.0


def tiers(db):
    return dict(db.execute("SELECT id, tier FROM mem").fetchall())


def ins(db, id, tier="working", ac=0, ts=NOW, imp=0.5, emb=None, session=None, meta=None, last=None):
    db.execute("INSERT INTO mem(id, text, tier, access_count, ts, importance, embedding, session, meta, last_access) "
               "VALUES (?,?,?,?,?,?,?,?,?,?)",
               (id, "m%d" % id, tier, ac, ts, imp, json.dumps(emb) if emb else None, session, meta, last))


def test_tiers(d):
    db = connect()
    table(db, d, "t", ", promote_after=3, merge_threshold=off")
    ins(db, 1, ac=2)
    ins(db, 2, ac=3)
    ins(db, 3, ac=7)          # working, used often: one step (episodic) a cycle
    ins(db, 4, "episodic", ac=5)
    ins(db, 5, "episodic", ac=6)
    ins(db, 6, "semantic", ac=0)
    ins(db, 7, None, ac=9)    # no tier: left alone
    ins(db, 8, "notes", ac=9)  # another tier: left alone
    ins(db, 9, "archive", ac=9)
    r = cons(db)
    check(tiers(db) == {1: "working", 2: "episodic", 3: "episodic", 4: "episodic", 5: "semantic", 6: "semantic",
                        7: None, 8: "notes", 9: "archive"}, "tiers after one cycle %r" % tiers(db))
    check(r["promoted"] == 3 and r["promoted_episodic"] == 2 and r["promoted_semantic"] == 1 and
          r["working"] == 1 and r["episodic"] == 3 and r["semantic"] == 2 and r["archive"] == 1 and
          r["unmanaged"] == 2 and r["evicted"] == 0 and r["now"] == NOW, "report %r" % r)
    r = cons(db)
    check(tiers(db)[3] == "semantic" and r["promoted"] == 1, "the next cycle: 3 to semantic %r" % r)
    r = cons(db, semantic_after=100)
    check(r["promoted"] == 0, "nothing more %r" % r)
    # access counts and the rest are untouched by a move
    check(db.execute("SELECT access_count, importance, text FROM mem WHERE id = 3").fetchone() == (7, 0.5, "m3"), "row")
    db.close()


def test_eviction(d):
    rng = random.Random(19)
    for evict in ("archive", "delete"):
        db = connect()
        table(db, d, "e_" + evict, ", working_capacity=40, promote_after=1000, merge_threshold=off, evict=" + evict)
        recs = {}
        db.execute("BEGIN")
        for i in range(1, 301):
            imp = rng.choice([None, round(rng.random(), 3)])
            ts = NOW - rng.randrange(0, 60) * 86400
            ac = rng.randrange(0, 5)
            last = rng.choice([None, ts + rng.randrange(0, 10) * 86400])
            if i % 7 == 0:  # ties: the same score as i - 1
                imp, ts, ac, last = recs[i - 1]
            recs[i] = (imp, ts, ac, last)
            ins(db, i, ac=ac, ts=ts, imp=imp, last=last)
        db.execute("COMMIT")
        # scores agree with h5mem_score, and with Python
        for i in (1, 50, 299):
            s = db.execute("SELECT h5mem_score('mem', ?, ?)", (i, json.dumps({"now": NOW}))).fetchone()[0]
            check(abs(s - score_py(*recs[i])) < 1e-12, "score %d" % i)
        order = sorted(recs, key=lambda i: (score_py(*recs[i]), i))
        want_evicted = set(order[:260])
        r = cons(db)
        t = tiers(db)
        if evict == "archive":
            got = {i for i, x in t.items() if x == "archive"}
            check(len(t) == 300, "archive keeps every record")
        else:
            got = set(recs) - set(t)
            check(len(t) == 40, "delete: 40 left")
        check(got == want_evicted, "%s: evicted %d differ from Python's" % (evict, len(got ^ want_evicted)))
        check(r["evicted"] == 260 and r["working"] == 40 and
              (r["archived"], r["deleted"]) == ((260, 0) if evict == "archive" else (0, 260)), "report %r" % r)
        # a second cycle: nothing over capacity
        r = cons(db)
        check(r["evicted"] == 0 and r["working"] == 40, "second cycle %r" % r)
        # per-call capacity and evict
        r = cons(db, working_capacity=10, evict="delete")
        check(r["deleted"] == 30 and db.execute("SELECT count(*) FROM mem WHERE tier='working'").fetchone()[0] == 10,
              "per-call options %r" % r)
        db.close()
    # half_life matters: an old important memory against a new unimportant one
    db = connect()
    table(db, d, "hl", ", working_capacity=1, merge_threshold=off")
    ins(db, 1, ts=NOW - 30 * 86400, imp=1.0)
    ins(db, 2, ts=NOW, imp=0.1)
    cons(db, half_life_days=1000)
    check(tiers(db) == {1: "working", 2: "archive"}, "long half-life keeps the important %r" % tiers(db))
    db.execute("UPDATE mem SET tier = 'working'")
    cons(db, half_life_days=1)
    check(tiers(db) == {1: "archive", 2: "working"}, "short half-life keeps the recent %r" % tiers(db))
    db.close()


def test_merge(d):
    db = connect()
    table(db, d, "m", ", merge_threshold=0.01, promote_after=100")
    ins(db, 1, ac=2, emb=[1, 0, 0, 0], session="s1", meta='{"note": "x"}', last=NOW - 5)
    ins(db, 2, ac=5, emb=[1, 0.01, 0, 0], session="s2", last=NOW - 9)    # survivor: more used
    ins(db, 3, ac=1, emb=[0, 1, 0, 0], session="s3", meta='{"merged": [{"id": 77, "session": "old"}]}')
    ins(db, 4, ac=1, emb=[0, 1, 0.001, 0], session=None, meta='[1, 2]')  # tie on use: the lower id (3) survives
    ins(db, 5, ac=0, emb=[0, 0, 1, 0], session="s5")
    ins(db, 6, "episodic", ac=0, emb=[0, 0, 1, 0.001], session="s6")  # not in scope working
    r = cons(db)
    t = tiers(db)
    check(r["merged"] == 2 and sorted(t) == [2, 3, 5, 6], "merged %r %r" % (r, t))
    row = db.execute("SELECT access_count, last_access, meta, text, vec_to_json(embedding, 1), session FROM mem "
                     "WHERE id = 2").fetchone()
    check(row[0] == 7 and row[1] == NOW - 5 and json.loads(row[2]) == {"merged": [{"id": 1, "session": "s1"}]} and
          row[3] == "m2" and row[4] == "[1,0.01,0,0]" and row[5] == "s2", "survivor 2 %r" % (row,))
    meta = json.loads(db.execute("SELECT meta FROM mem WHERE id = 3").fetchone()[0])
    check(meta == {"merged": [{"id": 77, "session": "old"}, {"id": 4, "session": None}]}, "survivor 3 meta %r" % meta)
    # merge_scope=all reaches the episodic one, which survives (higher tier)
    r = cons(db, merge_scope="all")
    t = tiers(db)
    check(r["merged"] == 1 and 5 not in t and t[6] == "episodic", "scope all %r %r" % (r, t))
    meta = json.loads(db.execute("SELECT meta FROM mem WHERE id = 6").fetchone()[0])
    check(meta == {"merged": [{"id": 5, "session": "s5"}]}, "survivor 6 %r" % meta)
    # the merged's own list is carried over; a non-object meta is kept under "meta"
    ins(db, 10, ac=0, emb=[0, 0, 0, 1], session="a", meta='{"merged": [{"id": 8, "session": "z"}], "k": 1}')
    ins(db, 11, ac=3, emb=[0, 0, 0.001, 1], session="b", meta='"text"')
    cons(db)
    meta = json.loads(db.execute("SELECT meta FROM mem WHERE id = 11").fetchone()[0])
    check(meta == {"meta": "text", "merged": [{"id": 10, "session": "a"}, {"id": 8, "session": "z"}]}, "carried %r" % meta)
    # merge_threshold off: nothing
    ins(db, 20, emb=[0.5, 0.5, 0, 0])
    ins(db, 21, emb=[0.5, 0.5, 0, 0])
    check(cons(db, merge_threshold="off")["merged"] == 0, "threshold off")
    check(cons(db, merge_threshold=0)["merged"] == 1, "threshold 0: exact duplicates")
    db.close()


def test_transactions(d):
    db = connect()
    fn = table(db, d, "tx", ", working_capacity=2, merge_threshold=off")
    for i in range(1, 6):
        ins(db, i, ts=NOW - i)
    before = tiers(db)
    db.execute("BEGIN")
    r = cons(db)
    check(r["evicted"] == 3 and sorted(tiers(db).values()).count("archive") == 3, "in the transaction")
    db.execute("ROLLBACK")
    check(tiers(db) == before, "ROLLBACK undoes the cycle %r" % tiers(db))
    db.execute("BEGIN")
    db.execute("SAVEPOINT a")
    db.execute("INSERT INTO mem(mem, meta) VALUES('consolidate', '{\"now\": %d, \"evict\": \"delete\"}')" % NOW)
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 2, "the command form")
    db.execute("ROLLBACK TO a")
    check(tiers(db) == before, "ROLLBACK TO undoes it")
    db.execute("COMMIT")
    # one statement, no savepoint: it runs inside a statement that writes too
    db.execute("CREATE TEMP TABLE reports(r)")
    db.execute("BEGIN")
    db.execute("INSERT INTO reports SELECT h5mem_consolidate('mem', '{\"now\": %d}')" % NOW)
    r = json.loads(db.execute("SELECT r FROM reports").fetchone()[0])
    check(r["evicted"] == 3 and sorted(tiers(db).values()).count("archive") == 3,
          "inside INSERT ... SELECT: %r" % r)
    db.execute("ROLLBACK")
    check(tiers(db) == before, "ROLLBACK undoes the cycle run inside INSERT ... SELECT")
    # a bad option fails and changes nothing
    expect_error(db, "SELECT h5mem_consolidate('mem', '{\"evict\": \"burn\"}')", "bad value for 'evict'")
    expect_error(db, "SELECT h5mem_consolidate('mem', '{\"capacity\": 1}')", "unknown option 'capacity'")
    expect_error(db, "SELECT h5mem_consolidate('mem', '{oops')", "malformed JSON")
    expect_error(db, "SELECT h5mem_consolidate('mem', 5)", "options: expected a JSON object")
    expect_error(db, "SELECT h5mem_consolidate('mem', '{\"working_capacity\": -1}')", "bad value for 'working_capacity'")
    expect_error(db, "SELECT h5mem_consolidate('nope')", "no h5mem table 'nope'")
    check(tiers(db) == before, "nothing changed by failures")
    cons(db)
    db.execute("SELECT h5mem_checkpoint('mem')")
    after = tiers(db)
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(tiers(db) == after and list(after.values()).count("archive") == 3, "after checkpoint and reopen %r" % tiers(db))
    db.close()


CHILD = r'''
import sqlite3, sys
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(sys.argv[1])
db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='%s', sync=full, working_capacity=100, merge_threshold=off, autocheckpoint=200000)" % sys.argv[2].replace("'", "''"))
i = 0
while True:
    i += 1
    db.execute("SELECT h5mem_consolidate('mem', '{\"now\": 1800000000}')")
    sys.stdout.write("c%d\n" % i)
    sys.stdout.flush()
    db.execute("UPDATE mem SET tier = 'working' WHERE tier = 'archive'")
    sys.stdout.write("u%d\n" % i)
    sys.stdout.flush()
    if i % 5 == 0:
        db.execute("SELECT h5mem_checkpoint('mem')")
'''


def test_kill(d, rounds=12, n=3000):
    fn = os.path.join(d, "kill.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=4)" % q(fn))
    db.execute("BEGIN")
    for i in range(1, n + 1):
        db.execute("INSERT INTO mem(id, text, tier, ts, importance) VALUES (?, 't', 'working', ?, ?)",
                   (i, NOW - i, (i % 97) / 97.0))
    db.execute("COMMIT")
    db.close()
    script = os.path.join(d, "child.py")
    with open(script, "w") as fh:
        fh.write(CHILD)
    rng = random.Random(5)
    seen = set()
    for r in range(rounds):
        p = subprocess.Popen([sys.executable, script, EXT, fn], stdout=subprocess.PIPE)
        time.sleep(rng.uniform(0.05, 0.6))
        p.send_signal(signal.SIGKILL)
        p.stdout.read()
        p.wait()
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
        c = dict(db.execute("SELECT tier, count(*) FROM mem GROUP BY tier").fetchall())
        db.close()
        ok = c in ({"working": n}, {"working": 100, "archive": n - 100})
        seen.add(tuple(sorted(c.items())))
        check(ok, "kill round %d: tiers %r (before or after a cycle, never part of one)" % (r, c))
        if not ok:
            break
    print("kill test: %d kills, states seen %r" % (rounds, sorted(seen)))


def main():
    d = tempfile.mkdtemp()
    try:
        test_tiers(d)
        test_eviction(d)
        test_merge(d)
        test_transactions(d)
        test_kill(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
