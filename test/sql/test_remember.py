"""The agent-facing write path through SQL (issue 19; docs/SQL.md, "Memory
lifecycle"): h5mem_remember and the table's lifecycle options.

- the write gate (table options and per call; off), the strategies
  (every_exchange, always, semantic_shift against the session's recent
  memories), near-duplicates (merged: the memory touched, in the dedup
  scope; archive never a target), the importance against an independent
  Python computation of the documented formula (novelty against the
  working tier only);
- per-call options (session, source, tags, meta, ts, importance, now);
- errors: bad creation options name the option, bad per-call options,
  wrong dimension, NaN, malformed JSON vector and options, text not TEXT;
- transactions: ROLLBACK takes a remember back, a failed one leaves
  nothing; consolidate=auto:N runs a cycle every N inserts;
- the same from the sqlite3 shell and from Node's better-sqlite3.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, finish, q  # noqa: E402

NOW = 1800000000


def table(db, d, name="a", opts=""):
    fn = os.path.join(d, name + ".h5")
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3%s)" % (q(fn), opts))
    return fn


def rem(db, text, emb=None, **opts):
    opts.setdefault("now", NOW)
    r = db.execute("SELECT h5mem_remember('mem', ?, ?, ?)",
                   (text, json.dumps(emb) if isinstance(emb, list) else emb, json.dumps(opts))).fetchone()[0]
    return json.loads(r)


def cosd(a, b):
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 1.0
    return 1 - sum(x * y for x, y in zip(a, b)) / (na * nb)


def importance_py(db, text, emb, working):
    """docs/SQL.md: 0.7 * N + 0.3 * information, N = min(1, nearest cosine
    distance to the working tier) (1: none; 0.5: no embedding)."""
    g = json.loads(db.execute("SELECT h5mem_gate(?)", (text,)).fetchone()[0])
    info = g["distinct_ratio"] * min(1.0, math.log1p(g["words"]) / math.log1p(32))
    if emb is None:
        n = 0.5
    elif not working:
        n = 1.0
    else:
        n = min(1.0, min(cosd(emb, w) for w in working))
    return 0.7 * n + 0.3 * info


def test_gate_and_strategies(d):
    db = connect()
    table(db, d, "g")
    r = rem(db, "ok")
    check(r == {"id": None, "action": "skipped", "reason": "trivial"}, "ok: %r" % r)
    check(rem(db, "Paris")["reason"] == "too_short", "too_short")
    check(rem(db, "ha ha ha ha ha")["reason"] == "low_information", "low_information")
    r = rem(db, "Paris", gate={"min_words": 0})
    check(r["action"] == "inserted" and r["reason"] == "passed", "per-call gate: %r" % r)
    r = rem(db, "thanks", gate=False)
    check(r["action"] == "inserted" and r["reason"] == "gate_off", "gate false: %r" % r)
    r = rem(db, "ok", strategy="always")
    check(r["action"] == "inserted" and r["reason"] == "always", "always: %r" % r)
    rows = db.execute("SELECT text, tier, ts FROM mem ORDER BY id").fetchall()
    check(rows == [("Paris", "working", NOW), ("thanks", "working", NOW), ("ok", "working", NOW)], "rows %r" % rows)
    db.close()
    # the table's gate options, and gate=off
    db = connect()
    table(db, d, "g2", ", gate='{\"min_words\": 4}'")
    check(rem(db, "Alice likes tea")["reason"] == "too_short", "table gate min_words 4")
    check(rem(db, "Alice likes green tea")["action"] == "inserted", "table gate: 4 words pass")
    check(rem(db, "Alice likes tea", gate={"min_words": 3})["action"] == "inserted", "per-call overrides table")
    db.close()
    db = connect()
    table(db, d, "g3", ", gate=off, strategy=always")
    check(rem(db, "ok")["action"] == "inserted", "gate=off")
    db.close()


def test_semantic_shift(d):
    db = connect()
    table(db, d, "s", ", strategy=semantic_shift, shift_threshold=0.3, merge_threshold=off")
    r = rem(db, "Alice moved to Lisbon last spring", [1, 0, 0], session="s1")
    check(r["action"] == "inserted", "first of a session is a shift: %r" % r)
    r = rem(db, "Alice now lives in Lisbon Portugal", [1, 0.2, 0], session="s1")
    want = cosd([1, 0.2, 0], [1, 0, 0])
    check(r["action"] == "skipped" and r["reason"] == "no_shift" and abs(r["distance"] - want) < 1e-6,
          "close to the session's recent: %r (distance %r)" % (r, want))
    r = rem(db, "Alice now lives in Lisbon Portugal", [1, 0.2, 0], session="s2")
    check(r["action"] == "inserted", "another session has no recent: %r" % r)
    r = rem(db, "Bob collects vintage film cameras", [0, 1, 0], session="s1")
    check(r["action"] == "inserted", "a new topic is a shift: %r" % r)
    # the nearest of the recent, not the mean: [1,1,0] lies between both
    r = rem(db, "Alice and Bob met at the camera shop", [0.9, 0.1, 0], session="s1")
    check(r["action"] == "skipped", "near one of the recent: %r" % r)
    # window: recent=1 compares with the latest alone
    r = rem(db, "Alice and Bob met at the camera shop", [0.9, 0.1, 0], session="s1", recent=1)
    check(r["action"] == "inserted", "recent=1: only the latest (Bob): %r" % r)
    # strategy per call
    r = rem(db, "Alice and Bob met at the camera shop", [0.9, 0.1, 0], session="s1", strategy="every_exchange")
    check(r["action"] == "inserted", "every_exchange ignores the shift: %r" % r)
    db.close()


def test_merge(d):
    db = connect()
    table(db, d, "m", ", merge_threshold=0.01")
    a = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s1", now=NOW)
    r = rem(db, "Alice moved to Lisbon in March!", [1, 0.05, 0], session="s1", now=NOW + 5)
    check(r["action"] == "merged" and r["id"] == a["id"] and r["reason"] == "near_duplicate", "merged %r" % r)
    check(abs(r["distance"] - cosd([1, 0.05, 0], [1, 0, 0])) < 1e-6, "distance %r" % r)
    row = db.execute("SELECT count(*), max(access_count), max(last_access) FROM mem").fetchone()
    check(row == (1, 1, NOW + 5), "touched, not inserted: %r" % (row,))
    # beyond the threshold: inserted
    r = rem(db, "Alice moved to Lisbon in May", [1, 0.3, 0], session="s1")
    check(r["action"] == "inserted", "beyond threshold %r" % r)
    # another session and source: by default not a duplicate
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s2")
    check(r["action"] == "inserted", "other session %r" % r)
    # the same source is enough
    db.execute("UPDATE mem SET source = 'chat' WHERE id = ?", (a["id"],))
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s3", source="chat")
    check(r["action"] == "merged" and r["id"] == a["id"], "same source %r" % r)
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s4", source="web", dedup="session")
    check(r["action"] == "inserted", "dedup session: %r" % r)
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s9", dedup="any")
    check(r["action"] == "merged", "dedup any: %r" % r)
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s1", dedup="off")
    check(r["action"] == "inserted", "dedup off: %r" % r)
    # archive is no target
    n = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    db.execute("UPDATE mem SET tier = 'archive'")
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], dedup="any")
    check(r["action"] == "inserted", "archive is not merged into: %r" % r)
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == n + 1, "count")
    # no session nor source given: any memory
    r = rem(db, "Alice moved to Lisbon in March", [1, 0.001, 0])
    check(r["action"] == "merged", "neither given: any: %r" % r)
    db.close()


def test_importance(d):
    db = connect()
    table(db, d, "i", ", merge_threshold=off")
    working = []
    cases = [
        ("Alice moved to Lisbon in March", [1, 0, 0]),
        ("Bob collects vintage film cameras and lenses", [0.6, 0.8, 0]),
        ("Carol plays violin", [0.2, 0.1, 0.9]),
        ("Dave flies planes for a small regional airline in the north", None),
        ("Erin is allergic to peanuts and shellfish", [0.3, 0.3, 0.3]),
    ]
    for text, emb in cases:
        want = importance_py(db, text, emb, working)
        r = rem(db, text, emb)
        check(abs(r["importance"] - want) < 1e-6, "importance of %r: %r, want %r" % (text, r, want))
        got = db.execute("SELECT importance FROM mem WHERE id = ?", (r["id"],)).fetchone()[0]
        check(abs(got - r["importance"]) < 1e-12, "stored importance %r" % got)
        if emb is not None:
            working.append(emb)
    # only the working tier counts: archive and episodic memories are not novelty's
    db.execute("UPDATE mem SET tier = 'episodic' WHERE id = 1")
    db.execute("UPDATE mem SET tier = 'archive' WHERE id = 2")
    working = [c[1] for c in cases[2:] if c[1] is not None]
    text, emb = "Alice moved to Porto in June", [1, 0.05, 0]
    want = importance_py(db, text, emb, working)
    r = rem(db, text, emb)
    check(abs(r["importance"] - want) < 1e-6, "novelty against working only: %r want %r" % (r, want))
    # given importance is kept
    r = rem(db, "Frank studies marine biology", [0, 0, 1], importance=0.25)
    check(r["importance"] == 0.25, "given importance %r" % r)
    db.close()


def test_options(d):
    db = connect()
    table(db, d, "o")
    r = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], session="s1", source="chat",
            tags=["travel", "alice"], meta={"k": [1, 2]}, ts="2024-03-01T00:00:00Z")
    row = db.execute("SELECT session, source, tags, meta, ts, tier, access_count FROM mem WHERE id = ?",
                     (r["id"],)).fetchone()
    check(row == ("s1", "chat", '["travel", "alice"]', '{"k": [1, 2]}', 1709251200, "working", 0), "row %r" % (row,))
    r = rem(db, "Bob collects vintage film cameras", struct.pack("3f", 0, 1, 0), ts=1234)
    row = db.execute("SELECT ts, vec_to_json(embedding, 1) FROM mem WHERE id = ?", (r["id"],)).fetchone()
    check(row == (1234, "[0,1,0]"), "blob embedding, ts %r" % (row,))
    r = rem(db, "Carol plays the violin at night")
    check(r["action"] == "inserted", "no embedding %r" % r)
    check(db.execute("SELECT embedding IS NULL, ts FROM mem WHERE id = ?", (r["id"],)).fetchone() == (1, NOW), "null emb")
    db.close()


def test_errors(d):
    db = connect()
    for opt, word in [("working_capacity=-1", "working_capacity=-1"), ("promote_after=0", "promote_after=0"),
                      ("half_life_days=abc", "half_life_days=abc"), ("merge_threshold=3", "merge_threshold=3"),
                      ("evict=burn", "evict=burn: expected archive or delete"),
                      ("consolidate=sometimes", "consolidate=sometimes"), ("consolidate=auto:0", "consolidate=auto:0"),
                      ("reinforce=maybe", "reinforce=maybe"), ("gate='{\"min_words\": -1}'", "gate:"),
                      ("gate='{oops'", "gate: malformed JSON"), ("gate='{\"nope\": 1}'", "unknown option 'nope'"),
                      ("strategy=often", "strategy=often"), ("shift_threshold=-0.1", "shift_threshold"),
                      ("dedup=nobody", "dedup=nobody"), ("merge_scope=world", "merge_scope=world"),
                      ("evict=archive, evict=delete", "duplicate option 'evict'")]:
        expect_error(db, "CREATE VIRTUAL TABLE x USING h5mem(path=%s, dim=3, %s)" % (q(os.path.join(d, "e.h5")), opt),
                     word)
    table(db, d, "e2")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', '[1,2]')", "embedding: 2 values; the store has dim=3")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', ?)", "element 1 is NaN",
                 (struct.pack("3f", 1, float("nan"), 0),))
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', x'0000')", "BLOB of 2 bytes")
    # the embedding read as the table reads it: vec_f16's BLOB taken, float16's range checked there
    db16 = connect()
    db16.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3, storage=float16)" % q(os.path.join(d, "f16.h5")))
    r = json.loads(db16.execute("SELECT h5mem_remember('mem', 'Alice moved to Lisbon in March', "
                                "vec_f16('[1,2,3]'), '{\"now\": 1800000000}')").fetchone()[0])
    got = db16.execute("SELECT vec_to_json(embedding) FROM mem WHERE id = ?", (r["id"],)).fetchone()
    check(r["action"] == "inserted" and got == ("[1.000000,2.000000,3.000000]",), "a float16 BLOB: %r %r" % (r, got))
    expect_error(db16, "SELECT h5mem_remember('mem', 'Bob moved to Porto in May', '[1,2,70000]')",
                 "element 2 (70000) is outside the float16 range")
    db16.close()
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', '[1,2,')", "malformed JSON vector")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', NULL, '{bad')", "malformed JSON")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', NULL, '{\"when\": 1}')",
                 "unknown option 'when'")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', NULL, '{\"strategy\": \"x\"}')",
                 "bad value for 'strategy'")
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', NULL, '{\"ts\": \"yesterday\"}')",
                 "bad value for 'ts'")
    expect_error(db, "SELECT h5mem_remember('mem', NULL)", "text: expected TEXT, got NULL")
    expect_error(db, "SELECT h5mem_remember('mem', 12)", "text: expected TEXT")
    expect_error(db, "SELECT h5mem_remember('nope', 'Alice moved to Lisbon')", "no h5mem table 'nope'")
    # inside a statement that writes: SQLite refuses its savepoint; a clear
    # error (not SQLITE_BUSY, which asks for a retry), nothing written
    n0 = db.execute("SELECT count(*) FROM mem").fetchone()[0]
    db.execute("CREATE TEMP TABLE said(r)")
    m = expect_error(db, "INSERT INTO said SELECT h5mem_remember('mem', 'Alice moved to Lisbon in March')",
                     "cannot run inside a statement that writes")
    check("call it in a SELECT of its own" in m, "the message says what to do: %r" % m)
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == n0, "nothing remembered")
    # a failed insert (meta not JSON) leaves nothing
    expect_error(db, "SELECT h5mem_remember('mem', 'Alice moved to Lisbon', NULL, '{\"meta\": \"{not json\"}')",
                 "meta: malformed JSON")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 0, "nothing left by a failed remember")
    db.close()


def test_transactions(d):
    db = connect()
    table(db, d, "t0")
    db.execute("BEGIN")
    rem(db, "Alice moved to Lisbon in March", [1, 0, 0])
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 1, "seen in the transaction")
    db.execute("ROLLBACK")
    check(db.execute("SELECT count(*) FROM mem").fetchone()[0] == 0, "ROLLBACK takes it back")
    db.close()
    db = connect()
    fn = table(db, d, "t", ", consolidate=auto:3, working_capacity=1, merge_threshold=off")
    r1 = rem(db, "Alice moved to Lisbon in March", [1, 0, 0], now=NOW)
    r2 = rem(db, "Bob collects vintage film cameras", [0, 1, 0], now=NOW + 10)
    check("consolidated" not in r1 and "consolidated" not in r2, "no cycle before 3: %r %r" % (r1, r2))
    r3 = rem(db, "Carol plays the violin at night", [0, 0, 1], now=NOW + 20)
    c = r3.get("consolidated")
    check(c is not None and c["evicted"] == 2 and c["working"] == 1 and c["archive"] == 2, "cycle at the 3rd: %r" % r3)
    tiers = db.execute("SELECT id, tier FROM mem ORDER BY id").fetchall()
    check(tiers == [(1, "archive"), (2, "archive"), (3, "working")], "tiers after auto cycle %r" % tiers)
    r4 = rem(db, "Dave flies planes for a regional airline", [1, 1, 0], now=NOW + 30)
    check("consolidated" not in r4, "counter reset %r" % r4)
    db.close()
    # state across reopen
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s)" % q(fn))
    check(db.execute("SELECT count(*) FROM mem WHERE tier = 'archive'").fetchone()[0] == 2, "archive after reopen")
    db.close()


def test_shell_and_node(d):
    fn = os.path.join(d, "sh.h5")
    sql = (".load %s\nCREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3);\n"
           "SELECT h5mem_remember('mem', 'Alice moved to Lisbon in March', '[1,0,0]', '{\"now\": 5, \"session\": \"s\"}');\n"
           "SELECT h5mem_remember('mem', 'Alice moved to Lisbon in March', '[1,0,0]', '{\"now\": 6, \"session\": \"s\"}');\n"
           "SELECT h5mem_remember('mem', 'ok');\n"
           "SELECT id, access_count, last_access FROM mem;\n" % (EXT, q(fn)))
    p = subprocess.run(["sqlite3", ":memory:"], input=sql, capture_output=True, text=True)
    lines = p.stdout.split("\n")
    check(p.returncode == 0 and len(lines) >= 4 and json.loads(lines[0])["action"] == "inserted" and
          json.loads(lines[1]) == {"id": 1, "action": "merged", "reason": "near_duplicate", "distance": 0.0} and
          json.loads(lines[2])["action"] == "skipped" and lines[3] == "1|1|6",
          "shell: %r %r" % (p.stdout, p.stderr))
    node = shutil.which("node")
    here = os.path.dirname(os.path.abspath(__file__))
    mods = os.path.join(here, "..", "interop", "node_modules")
    if not node or not os.path.isdir(os.path.join(mods, "better-sqlite3")):
        check(os.environ.get("H5MEM_REQUIRE_NODE") != "1", "node or better-sqlite3 missing")
        print("skip: node with better-sqlite3")
        return
    js = r"""
const Database = require('better-sqlite3');
const db = new Database(':memory:');
db.loadExtension(process.argv[2]);
db.exec(`CREATE VIRTUAL TABLE mem USING h5mem(path='${process.argv[3]}', dim=3, working_capacity=1)`);
const one = (sql, ...a) => db.prepare(sql).pluck().get(...a);
const out = [];
const emb = Buffer.from(new Float32Array([1, 0, 0]).buffer);
out.push(JSON.parse(one("SELECT h5mem_remember('mem', ?, ?, ?)", 'Alice moved to Lisbon in March', emb, '{"now": 100, "importance": 0.5}')));
out.push(JSON.parse(one("SELECT h5mem_remember('mem', ?, ?, ?)", 'Bob collects vintage film cameras', '[0,1,0]', '{"now": 200, "importance": 0.5}')));
out.push(JSON.parse(one("SELECT h5mem_consolidate('mem', ?)", '{"now": 300}')));
out.push(db.prepare('SELECT id, tier FROM mem ORDER BY id').raw().all());
console.log(JSON.stringify(out));
"""
    jsf = os.path.join(d, "t.js")
    with open(jsf, "w") as f:
        f.write(js)
    env = dict(os.environ, NODE_PATH=mods)
    p = subprocess.run([node, jsf, EXT, os.path.join(d, "node.h5")], capture_output=True, text=True, env=env)
    try:
        out = json.loads(p.stdout)
    except ValueError:
        out = None
    check(out is not None and out[0]["id"] == 1 and out[1]["id"] == 2 and out[2]["evicted"] == 1 and
          out[3] == [[1, "archive"], [2, "working"]], "node: %r %r" % (p.stdout, p.stderr))


def main():
    d = tempfile.mkdtemp()
    try:
        test_gate_and_strategies(d)
        test_semantic_shift(d)
        test_merge(d)
        test_importance(d)
        test_options(d)
        test_errors(d)
        test_transactions(d)
        test_shell_and_node(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
