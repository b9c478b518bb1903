"""Searches that record what they return, and the archive tier (issue 19):

- {"touch": true} on vec_search, bm25 and hybrid: exactly the returned
  memories get access_count + 1 and last_access = now ("now" given, or the
  clock), the others nothing; the rows are the same with and without
  touch (hybrid's rerank by activation too: it ranks on the values before
  the touch); a join on the table after the search sees the new values;
  every result of the search is touched, also those a LIMIT does not read;
- the touch is in the caller's transaction: ROLLBACK and ROLLBACK TO undo
  it, COMMIT keeps it across reopening and a checkpoint;
- the table's policy reinforce=on touches without the option, {"touch":
  false} turns it off; the KNN form never touches;
- bad values ("touch": 3, "now": "x", ...) are errors naming the option;
- the archive tier is left out of vec_search, bm25, hybrid and the KNN form
  unless the WHERE clause has a tier condition, with every filter (source,
  ts ranges selective and not, id IN) and in every state of the store
  (records in memory, in the file, both, tiers changed by UPDATE, deletes),
  for flat and HNSW stores: compared with an ordinary SQLite table holding
  the same rows (distances computed here, BM25 by FTS5, whose statistics
  count the archived records too, as ours do).

Run by make check with Debian's /usr/bin/python3.
"""
import json
import math
import os
import random
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

DIM = 4
WORDS = "coffee tea garden river mountain city train plan note task agent memory".split()
TIERS = ["working", "episodic", "semantic", "archive", None]
SOURCES = ["user", "assistant", "tool"]


def make_row(rng, i):
    return {
        "id": i,
        "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 8))),
        "emb": [rng.uniform(-1, 1) for _ in range(DIM)],
        "source": rng.choice(SOURCES),
        "session": "s%d" % rng.randint(0, 3),
        "ts": 1000 + i * 10 + rng.randint(0, 5),
        "tier": rng.choice(TIERS),
        "access_count": rng.randint(0, 4),
        "last_access": None if rng.random() < 0.5 else rng.randint(500, 900),
    }


class Pair:
    """An h5mem table and an ordinary table (ref, with an FTS5 index of
    the text) holding the same rows."""

    def __init__(self, path, opts=""):
        self.path = path
        self.opts = opts
        self.db = connect()
        self.db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, metric=l2%s)" % (q(path), DIM, opts))
        self.db.execute("CREATE TABLE ref(id INTEGER PRIMARY KEY, text, emb, source, session, ts, tier, "
                        "access_count, last_access)")
        self.db.execute("CREATE VIRTUAL TABLE ft USING fts5(t)")

    def put(self, rows):
        for r in rows:
            self.db.execute("INSERT INTO mem(id, text, embedding, source, session, ts, tier, access_count, "
                            "last_access) VALUES (?,?,?,?,?,?,?,?,?)",
                            (r["id"], r["text"], json.dumps(r["emb"]), r["source"], r["session"], r["ts"],
                             r["tier"], r["access_count"], r["last_access"]))
            self.db.execute("INSERT INTO ref VALUES (?,?,?,?,?,?,?,?,?)",
                            (r["id"], r["text"], json.dumps(r["emb"]), r["source"], r["session"], r["ts"],
                             r["tier"], r["access_count"], r["last_access"]))
            self.db.execute("INSERT INTO ft(rowid, t) VALUES (?, ?)", (r["id"], r["text"]))

    def set_tier(self, ids, tier):
        for i in ids:
            self.db.execute("UPDATE mem SET tier = ? WHERE id = ?", (tier, i))
            self.db.execute("UPDATE ref SET tier = ? WHERE id = ?", (tier, i))

    def delete(self, ids):
        for i in ids:
            self.db.execute("DELETE FROM mem WHERE id = ?", (i,))
            self.db.execute("DELETE FROM ref WHERE id = ?", (i,))
            self.db.execute("DELETE FROM ft WHERE rowid = ?", (i,))

    def access(self):
        return self.db.execute("SELECT id, access_count, last_access FROM mem ORDER BY id").fetchall()

    def ref_access(self):
        return self.db.execute("SELECT id, access_count, last_access FROM ref ORDER BY id").fetchall()

    def ref_touch(self, ids, now):
        for i in ids:
            self.db.execute("UPDATE ref SET access_count = access_count + 1, last_access = ? WHERE id = ?",
                            (now, i))

    def allowed(self, where, args):
        """The ids of ref meeting where (SQL over ref's columns), archive
        left out unless where names tier."""
        w = where if where else "1"
        if "tier" not in where:
            w = "(%s) AND tier IS NOT 'archive'" % w
        return set(r[0] for r in self.db.execute("SELECT id FROM ref WHERE " + w, args))

    def vec_oracle(self, qv, k, where, args):
        ok = self.allowed(where, args)
        d = []
        for i, e in self.db.execute("SELECT id, emb FROM ref"):
            if i in ok:
                v = json.loads(e)
                d.append((math.sqrt(sum((a - b) ** 2 for a, b in zip(v, qv))), i))
        d.sort()
        return d[:k]

    def bm25_oracle(self, words, where, args):
        ok = self.allowed(where, args)
        rows = self.db.execute("SELECT rowid, -bm25(ft) FROM ft WHERE ft MATCH ?", (" OR ".join(words),))
        return {i: s for i, s in rows if i in ok}


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


FILTERS = [
    ("", ()),
    ("source = ?", ("user",)),
    ("session = ? AND source = ?", ("s1", "tool")),
    ("ts BETWEEN ? AND ?", (1000, 3000)),          # most records: tested record by record
    ("ts BETWEEN ? AND ?", (1400, 1600)),          # a few: from the temporal index
    ("ts > ? AND source = ?", (2500, "assistant")),
    ("id IN (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 30, 31, 32)", ()),
    ("tier = ?", ("archive",)),
    ("tier = ?", ("working",)),
    ("tier = ? AND ts BETWEEN ? AND ?", ("archive", 1400, 1600)),
    ("tier IN ('archive', 'semantic')", ()),
]


def compare_searches(p, rng, tag, nq=4):
    """Every search with every filter against the oracle."""
    db = p.db
    for where, args in FILTERS:
        ww = (" WHERE " + where) if where else ""
        for _ in range(nq):
            qv = [rng.uniform(-1, 1) for _ in range(DIM)]
            k = rng.choice([1, 5, 20, 1000])
            runs = "tier IN" in where  # (SQLite runs the search once per value: compared whole)
            if runs:
                k = 1000
            want = p.vec_oracle(qv, k, where, args)
            got = db.execute("SELECT id, distance FROM vec_search('mem', ?, ?, '{\"exact\": true}')" + ww,
                             (json.dumps(qv), k) + args).fetchall()
            if runs:
                want.sort(key=lambda r: r[1])
                got.sort()
            check([i for _, i in want] == [i for i, _ in got] and
                  all(close(a[0], b[1], 1e-5) for a, b in zip(want, got)),
                  "%s: vec_search %r k=%d: %r, expected %r" % (tag, where, k, got[:5], want[:5]))
            got = db.execute("SELECT id, distance FROM mem WHERE embedding MATCH ? AND k = ?" +
                             (" AND " + where if where else ""), (json.dumps(qv), k) + args).fetchall()
            if runs:
                got.sort()
            check([i for _, i in want] == [i for i, _ in got],
                  "%s: the KNN form %r k=%d: %r, expected %r" % (tag, where, k, got[:5], want[:5]))
            words = rng.sample(WORDS, rng.randint(1, 3))
            want_k = p.bm25_oracle(words, where, args)
            got = db.execute("SELECT id, score FROM bm25('mem', ?, 1000)" + ww,
                             (" ".join(words),) + args).fetchall()
            check(set(i for i, _ in got) == set(want_k) and
                  all(close(s, want_k[i], 1e-9) for i, s in got if i in want_k),
                  "%s: bm25 %r %r: %d rows, expected %d" % (tag, where, words, len(got), len(want_k)))
            # hybrid with every record in its pools: the allowed records, each once
            got = db.execute("SELECT id FROM hybrid('mem', ?, ?, 1000)" + ww,
                             (" ".join(words), json.dumps(qv)) + args).fetchall()
            ok = p.allowed(where, args)
            check(sorted(i for i, in got) == sorted(ok),
                  "%s: hybrid %r: %d rows, expected %d" % (tag, where, len(got), len(ok)))


def test_archive(tmp):
    rng = random.Random(19)
    p = Pair(os.path.join(tmp, "arch.h5"))
    p.put([make_row(rng, i) for i in range(1, 201)])
    compare_searches(p, rng, "in memory")
    p.db.execute("SELECT h5mem_checkpoint('mem')")
    compare_searches(p, rng, "in the file")
    # records in both places; tiers changed both ways; deletes
    p.put([make_row(rng, i) for i in range(201, 261)])
    arch = [r[0] for r in p.db.execute("SELECT id FROM ref WHERE tier = 'archive' ORDER BY id")]
    p.set_tier(arch[:8], "working")
    p.set_tier([5, 17, 44, 150, 230], "archive")
    p.delete([6, 7, 210])
    compare_searches(p, rng, "mixed")
    p.db.execute("SELECT h5mem_checkpoint('mem')")
    p.set_tier([9, 10], "archive")  # base rows changed after the checkpoint
    compare_searches(p, rng, "after a second checkpoint")
    # no archived record at all: every record comes back
    p.set_tier([r[0] for r in p.db.execute("SELECT id FROM ref WHERE tier = 'archive'")], "episodic")
    n = p.db.execute("SELECT count(*) FROM vec_search('mem', '[0,0,0,0]', 10000)").fetchone()[0]
    check(n == p.db.execute("SELECT count(*) FROM ref").fetchone()[0], "no archive: %d rows" % n)
    compare_searches(p, rng, "nothing archived", nq=1)
    # a tier condition SQLite tests itself (another collation) does not bring archived records back
    p.set_tier([11], "archive")
    got = p.db.execute("SELECT id FROM vec_search('mem', '[0,0,0,0]', 10000) "
                       "WHERE tier = 'ARCHIVE' COLLATE NOCASE").fetchall()
    check(got == [], "a NOCASE tier condition: %r" % got)


def test_archive_hnsw(tmp):
    rng = random.Random(7)
    p = Pair(os.path.join(tmp, "hnsw.h5"), ", index=hnsw, ef_search=32")
    p.put([make_row(rng, i) for i in range(1, 701)])
    p.db.execute("SELECT h5mem_checkpoint('mem')")
    p.put([make_row(rng, i) for i in range(701, 761)])
    arch = p.allowed("tier = 'archive'", ())
    check(len(arch) > 50, "archived records: %d" % len(arch))
    for _ in range(30):
        qv = [rng.uniform(-1, 1) for _ in range(DIM)]
        got = [i for i, in p.db.execute("SELECT id FROM vec_search('mem', ?, 10)", (json.dumps(qv),))]
        check(len(got) == 10 and not (set(got) & arch), "hnsw: %r (archived: %r)" % (got, set(got) & arch))
        got = [i for i, in p.db.execute("SELECT id FROM vec_search('mem', ?, 10) WHERE tier = 'archive'",
                                         (json.dumps(qv),))]
        check(len(got) == 10 and set(got) <= arch, "hnsw, tier archive: %r" % got)
        got = [i for i, in p.db.execute("SELECT id FROM mem WHERE embedding MATCH ? AND k = 10",
                                         (json.dumps(qv),))]
        check(len(got) == 10 and not (set(got) & arch), "hnsw KNN form: %r" % got)
    compare_searches(p, rng, "hnsw", nq=1)


SEARCHES = [
    ("vec_search", "SELECT * FROM vec_search('mem', ?, ?, ?)", lambda rng: [json.dumps([rng.uniform(-1, 1) for _ in range(DIM)])]),
    ("bm25", "SELECT * FROM bm25('mem', ?, ?, ?)", lambda rng: [" ".join(rng.sample(WORDS, 2))]),
    ("hybrid", "SELECT * FROM hybrid('mem', ?, ?, ?, ?)",
     lambda rng: [" ".join(rng.sample(WORDS, 2)), json.dumps([rng.uniform(-1, 1) for _ in range(DIM)])]),
]


def opts(base, **kw):
    o = dict(base)
    o.update(kw)
    return json.dumps(o)


def test_touch(tmp):
    rng = random.Random(3)
    p = Pair(os.path.join(tmp, "touch.h5"))
    p.put([make_row(rng, i) for i in range(1, 121)])
    db = p.db
    now = 1700000000
    for state in ("in memory", "in the file"):
        if state == "in the file":
            db.execute("SELECT h5mem_checkpoint('mem')")
        for name, sql, qargs in SEARCHES:
            base = {"rerank": {"activation": 1.0, "now": 5000}} if name == "hybrid" else {}
            for where, args in FILTERS[:7] + FILTERS[7:8]:
                ww = (" WHERE " + where) if where else ""
                qa = qargs(rng)
                k = rng.choice([3, 10])
                before = p.access()
                check(before == p.ref_access(), "%s: the access values differ from ref's" % state)
                r0 = db.execute(sql + ww, qa + [k, opts(base)] + list(args)).fetchall()
                check(p.access() == before, "%s %s %r: a search without touch changed access values" % (state, name, where))
                r1 = db.execute(sql + ww, qa + [k, opts(base, touch=False, now=now)] + list(args)).fetchall()
                check(r1 == r0 and p.access() == before, "%s %s: touch false" % (state, name))
                now += 100
                r2 = db.execute(sql + ww, qa + [k, opts(base, touch=True, now=now)] + list(args)).fetchall()
                check(r2 == r0, "%s %s %r: rows differ with touch: %r / %r" % (state, name, where, r2[:2], r0[:2]))
                ids = [r[0] for r in r2]
                check(len(set(ids)) == len(ids), "%s %s: an id twice" % (state, name))
                p.ref_touch(ids, now)
                after = p.access()
                check(after == p.ref_access(), "%s %s %r: touched %r; access values %r, expected %r" % (
                    state, name, where, ids,
                    [a for a, b in zip(after, p.ref_access()) if a != b][:4],
                    [b for a, b in zip(after, p.ref_access()) if a != b][:4]))
                # (the rows of the next run, touched or not, are the same: hybrid's rerank
                # reads the new counts, so it is compared with its own untouched run)
    # a join after the search sees the touched values; a LIMIT does not spare the rest
    now += 100
    qv = json.dumps([0.1, 0.2, 0.3, 0.4])
    before = dict((i, (a, l)) for i, a, l in p.access())
    rows = db.execute("SELECT v.id, m.access_count, m.last_access FROM vec_search('mem', ?, 5, ?) v "
                      "JOIN mem m ON m.id = v.id", (qv, opts({}, touch=True, now=now))).fetchall()
    check(len(rows) == 5 and all(a == before[i][0] + 1 and l == now for i, a, l in rows),
          "the join reads the touched values: %r" % rows)
    p.ref_touch([r[0] for r in rows], now)
    now += 100
    ids = [i for i, in db.execute("SELECT id FROM vec_search('mem', ?, 6, ?)", (qv, '{}'))]
    got = db.execute("SELECT id FROM vec_search('mem', ?, 6, ?) LIMIT 2", (qv, opts({}, touch=True, now=now))).fetchall()
    check(len(got) == 2, "LIMIT 2: %r" % got)
    p.ref_touch(ids, now)
    check(p.access() == p.ref_access(), "LIMIT: every result of the search is touched")
    # the clock when now is not given
    t0 = int(time.time())
    ids = [r[0] for r in db.execute("SELECT id FROM bm25('mem', 'coffee', 4, '{\"touch\": true}')")]
    t1 = int(time.time())
    las = [db.execute("SELECT last_access FROM mem WHERE id = ?", (i,)).fetchone()[0] for i in ids]
    check(ids and all(t0 <= x <= t1 for x in las), "the clock: %r not in %d .. %d" % (las, t0, t1))
    for i, x in zip(ids, las):
        p.ref_touch([i], x)
    check(p.access() == p.ref_access(), "the clock: other values")
    # archived memories are not touched by a search that leaves them out
    now += 100
    arch = p.allowed("tier = 'archive'", ())
    got = [i for i, in db.execute("SELECT id FROM vec_search('mem', ?, 1000, ?)", (qv, opts({}, touch=True, now=now)))]
    check(not (set(got) & arch), "archived returned")
    p.ref_touch(got, now)
    check(p.access() == p.ref_access(), "touch of everything but the archive")
    now += 100
    got = [i for i, in db.execute("SELECT id FROM vec_search('mem', ?, 1000, ?) WHERE tier = 'archive'",
                                  (qv, opts({}, touch=True, now=now)))]
    check(set(got) == arch, "the archive named: %d of %d" % (len(got), len(arch)))
    p.ref_touch(got, now)
    check(p.access() == p.ref_access(), "touch of the archive")
    # the KNN form takes no options and never touches
    db.execute("SELECT id FROM mem WHERE embedding MATCH ? AND k = 5", (qv,)).fetchall()
    check(p.access() == p.ref_access(), "the KNN form touched")
    return p, now


def test_transactions(p, now, tmp):
    db = p.db
    qv = json.dumps([0.5, -0.2, 0.1, 0.0])
    before = p.access()
    db.execute("BEGIN")
    ids = [i for i, in db.execute("SELECT id FROM vec_search('mem', ?, 4, ?)", (qv, opts({}, touch=True, now=now + 1)))]
    ids2 = [i for i, in db.execute("SELECT id FROM bm25('mem', 'garden river', 4, ?)", (opts({}, touch=True, now=now + 2),))]
    mid = p.access()
    check(mid != before and len(ids) == 4, "inside BEGIN: touched")
    db.execute("ROLLBACK")
    check(p.access() == before, "ROLLBACK undoes the touch")
    db.execute("BEGIN")
    db.execute("SELECT id FROM vec_search('mem', ?, 4, ?)", (qv, opts({}, touch=True, now=now + 3))).fetchall()
    db.execute("SAVEPOINT a")
    db.execute("SELECT id FROM hybrid('mem', 'garden', ?, 4, ?)", (qv, opts({}, touch=True, now=now + 4))).fetchall()
    db.execute("ROLLBACK TO a")
    db.execute("RELEASE a")
    db.execute("COMMIT")
    p.ref_touch(ids, now + 3)
    check(p.access() == p.ref_access(), "ROLLBACK TO undoes the touch after it, COMMIT keeps the one before")
    # statements that write, with a touching search in them (autocommit and in BEGIN)
    for n, tx in enumerate(("", "BEGIN")):
        try:
            if tx:
                db.execute(tx)
            db.execute("CREATE TABLE picked%d AS SELECT id FROM bm25('mem', 'coffee', 3, ?)" % n,
                       (opts({}, touch=True, now=now + 5 + n),))
            db.execute("UPDATE mem SET tags = 'used' WHERE id IN (SELECT id FROM vec_search('mem', ?, 2, ?))",
                       (qv, opts({}, touch=True, now=now + 7 + n)))
            if tx:
                db.execute("COMMIT")
        except sqlite3.Error as e:
            check(False, "a touching search in a statement that writes (%s): %s" % (tx or "autocommit", e))
            if tx:
                db.execute("ROLLBACK")
            continue
        picked = [i for i, in db.execute("SELECT id FROM picked%d" % n)]
        p.ref_touch(picked, now + 5 + n)
        used = [i for i, in db.execute("SELECT id FROM vec_search('mem', ?, 2)", (qv,))]
        p.ref_touch(used, now + 7 + n)
        tagged = sorted(i for i, in db.execute("SELECT id FROM mem WHERE tags = 'used'"))
        check(set(used) <= set(tagged), "the UPDATE's rows: %r of %r" % (used, tagged))
        check(len(picked) == 3 and p.access() == p.ref_access(),
              "a touching search in a statement that writes (%s)" % (tx or "autocommit"))
    # kept across reopening, before and after a checkpoint
    want = p.access()
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(p.path))
    got = db2.execute("SELECT id, access_count, last_access FROM mem ORDER BY id").fetchall()
    check(got == want, "another connection sees the committed touches")
    # a reader that touches writes: the writer's lock is another connection's
    db2.execute("SELECT id FROM vec_search('mem', ?, 3, '{\"touch\": false}')", (qv,)).fetchall()
    try:
        db2.execute("SELECT id FROM vec_search('mem', ?, 3, '{\"touch\": true}')", (qv,)).fetchall()
        check(False, "a touch by a reader while another connection writes must fail")
    except sqlite3.Error as e:
        check("being written" in str(e) or "locked" in str(e) or "busy" in str(e).lower(),
              "a reader's touch: %s" % e)
    check(db2.execute("SELECT id, access_count, last_access FROM mem ORDER BY id").fetchall() == want,
          "a failed touch changes nothing")
    db2.close()
    db.execute("SELECT h5mem_checkpoint('mem')")
    db.close()
    db3 = connect()
    db3.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(p.path))
    got = db3.execute("SELECT id, access_count, last_access FROM mem ORDER BY id").fetchall()
    check(got == want, "after a checkpoint and reopening: the touches kept")
    db3.close()


def test_policy(tmp):
    rng = random.Random(5)
    path = os.path.join(tmp, "policy.h5")
    db = connect()
    try:
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d, reinforce=on)" % (q(path), DIM))
    except sqlite3.Error as e:
        # (the table option is parsed by the lifecycle options' work, issue 19;
        # until it is there, this part cannot run: said, not failed)
        if "unknown option 'reinforce'" in str(e):
            print("SKIP test_policy: the table option reinforce=on is not parsed yet")
            return
        check(False, "reinforce=on: %s" % e)
        return
    for i in range(1, 31):
        r = make_row(rng, i)
        db.execute("INSERT INTO mem(id, text, embedding, tier) VALUES (?,?,?,?)",
                   (i, r["text"], json.dumps(r["emb"]), r["tier"]))
    def acc():
        return dict((i, (a, l)) for i, a, l in db.execute("SELECT id, access_count, last_access FROM mem"))
    qv = json.dumps([0.3, 0.3, -0.1, 0.2])
    for name, sql, touched in [
            ("vec_search", "SELECT id FROM vec_search('mem', ?1, 4)", True),
            ("vec_search now", "SELECT id FROM vec_search('mem', ?1, 4, '{\"now\": 777}')", True),
            ("bm25", "SELECT id FROM bm25('mem', 'coffee tea', 4, '{\"now\": 778}')", True),
            ("hybrid", "SELECT id FROM hybrid('mem', 'garden', ?1, 4, '{\"now\": 779}')", True),
            ("vec_search false", "SELECT id FROM vec_search('mem', ?1, 4, '{\"touch\": false}')", False),
            ("bm25 false", "SELECT id FROM bm25('mem', 'coffee', 4, '{\"touch\": false}')", False),
            ("hybrid false", "SELECT id FROM hybrid('mem', 'garden', ?1, 4, '{\"touch\": false}')", False),
            ("KNN form", "SELECT id FROM mem WHERE embedding MATCH ?1 AND k = 4", False)]:
        before = acc()
        args = (qv,) if "?1" in sql else ()
        ids = [i for i, in db.execute(sql, args)]
        after = acc()
        changed = sorted(i for i in after if after[i] != before[i])
        want = sorted(ids) if touched else []
        check(ids and changed == want, "reinforce=on, %s: changed %r, expected %r" % (name, changed, want))
        check(all(after[i][0] == before[i][0] + 1 for i in want), "reinforce=on, %s: counts" % name)
        if touched and "now" in sql:
            n = int(sql.split('"now": ')[1].split("}")[0])
            check(all(after[i][1] == n for i in want), "reinforce=on, %s: last_access" % name)
    db.close()


def test_errors(tmp):
    db = connect()
    path = os.path.join(tmp, "err.h5")
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d)" % (q(path), DIM))
    db.execute("INSERT INTO mem(text, embedding) VALUES ('coffee garden', '[1,0,0,0]')")
    qv = "[1,0,0,0]"
    calls = [("vec_search", "SELECT * FROM vec_search('mem', %s, 3, ?)" % q(qv)),
             ("bm25", "SELECT * FROM bm25('mem', 'coffee', 3, ?)"),
             ("hybrid", "SELECT * FROM hybrid('mem', 'coffee', %s, 3, ?)" % q(qv))]
    for name, sql in calls:
        for o, word in [('{"touch": 3}', "bad value for 'touch': expected true or false"),
                        ('{"touch": "yes"}', "bad value for 'touch'"),
                        ('{"touch": null}', "bad value for 'touch'"),
                        ('{"touch": 1}', "bad value for 'touch'"),
                        ('{"now": "x"}', "bad value for 'now': expected a number"),
                        ('{"now": 1e16}', "bad value for 'now'"),
                        ('{"touch": true, "touch": false}', "duplicate option 'touch'"),
                        ('{"tuoch": true}', "unknown option 'tuoch'")]:
            msg = expect_error(db, sql, word, (o,))
            check(msg.startswith(name + ":"), "%s: the message names the function: %r" % (name, msg))
            check("touch" in msg and "now" in msg or "duplicate" in msg, "%s: known keys listed: %r" % (name, msg))
        check(db.execute("SELECT access_count, last_access FROM mem").fetchall() == [(0, None)],
              "%s: a failed search touched" % name)
    db.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_archive(tmp)
        test_archive_hnsw(tmp)
        p, now = test_touch(tmp)
        test_transactions(p, now, tmp)
        test_policy(tmp)
        test_errors(tmp)
    finish()


if __name__ == "__main__":
    main()
