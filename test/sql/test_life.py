"""The lifecycle policies through SQL (issue 19; docs/SQL.md, "Memory lifecycle"):

- h5mem_gate's decision on a table of examples (trivial, too short, low
  information, passed; CJK counted in characters), its options (each rule
  off, thresholds), its errors;
- h5mem_decay against a Python re-computation of the documented formula,
  its range and monotonicity, options and errors;
- h5mem_score on a real store equals h5mem_decay over the row's columns
  (the store's state as this connection sees it, its transaction too);
  no such table, not an h5mem table, no such id are clear errors.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

DAY = 86400.0
NOW = 1800000000

GATE = [
    ("ok", False, "trivial"),
    ("OK.", False, "trivial"),
    ("  Thanks!! ", False, "trivial"),
    ("thank you", False, "trivial"),
    ("Got it 👍", False, "trivial"),
    ("yes", False, "trivial"),
    ("no", False, "trivial"),
    ("sure", False, "trivial"),
    ("cool", False, "trivial"),
    ("great!", False, "trivial"),
    ("🎉🎉🎉", False, "trivial"),
    ("?!...", False, "trivial"),
    ("", False, "trivial"),
    ("Paris", False, "too_short"),
    ("ab cd", False, "too_short"),
    ("好的", False, "too_short"),
    ("ha ha ha ha", False, "low_information"),
    ("哈哈哈哈哈哈", False, "low_information"),
    ("!!!! ?? okay then ?? !!!! #### $$$$ %%%% &&&&", False, "low_information"),
    ("ab cde", True, "passed"),
    ("我喜欢喝绿茶", True, "passed"),
    ("ok, the meeting moved to Tuesday", True, "passed"),
    ("Alice moved to Lisbon in March and works at the observatory", True, "passed"),
]


def gate(db, text, opts=None):
    if opts is None:
        return json.loads(db.execute("SELECT h5mem_gate(?)", (text,)).fetchone()[0])
    return json.loads(db.execute("SELECT h5mem_gate(?, ?)", (text, json.dumps(opts))).fetchone()[0])


def test_gate():
    db = connect()
    for text, save, reason in GATE:
        r = gate(db, text)
        check(r["save"] is save and r["reason"] == reason, "h5mem_gate(%r): %r, want %s %s" % (text, r, save, reason))
        check(set(r) == {"save", "reason", "chars", "words", "distinct", "distinct_ratio", "alnum_ratio",
                         "information"}, "keys %s" % sorted(r))
    # the measures
    r = gate(db, "我喜欢喝绿茶")
    check((r["chars"], r["words"], r["distinct"]) == (6, 6, 6), "CJK counted by character: %r" % r)
    r = gate(db, "ha ha ha ha")
    check(r["distinct_ratio"] == 0.25 and r["words"] == 4, "ratio %r" % r)
    r = gate(db, "Alice moved to Lisbon in March")
    check(abs(r["information"] - math.log1p(6) / math.log1p(32)) < 1e-15, "information %r" % r)
    check(db.execute("SELECT h5mem_gate(NULL)").fetchone()[0] is None, "NULL in, NULL out")
    check(db.execute("SELECT json_extract(h5mem_gate('ha ha ha ha'), '$.reason')").fetchone()[0] ==
          "low_information", "JSON for json_extract")
    # options: each rule off, thresholds
    check(gate(db, "ok", {"trivial": False})["reason"] == "too_short", "trivial off")
    check(gate(db, "ok", {"trivial": False, "min_chars": 0, "min_words": 0})["save"] is True, "all short rules off")
    check(gate(db, "ha ha ha ha", {"min_distinct_ratio": 0})["save"] is True, "distinct off")
    check(gate(db, "ha ha ha ha", {"min_distinct_ratio": 0.25})["save"] is True, "0.25 is not below 0.25")
    check(gate(db, "Paris is nice", {"min_chars": 12})["save"] is False, "min_chars 12")
    check(gate(db, "Paris is nice", {"min_chars": 11})["save"] is True, "min_chars 11")
    check(gate(db, "Paris is nice", {"min_words": 4})["reason"] == "too_short", "min_words 4")
    check(gate(db, "x = f(a, b);", {"min_alnum_ratio": 0.5})["reason"] == "low_information", "alnum 0.5")
    check(gate(db, "x = f(a, b);", {"min_alnum_ratio": 0, "min_chars": 0})["save"] is True, "alnum off")
    check(gate(db, "", {"trivial": False, "min_chars": 0, "min_words": 0, "min_distinct_ratio": 0,
                        "min_alnum_ratio": 0})["save"] is True, "everything off")
    # errors
    expect_error(db, "SELECT h5mem_gate('ok', '{\"nope\": 1}')",
                 "unknown option 'nope' (known: trivial, min_chars, min_words, min_distinct_ratio, min_alnum_ratio)")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"min_chars\": -1}')", "min_chars")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"min_chars\": 2.5}')", "expected an integer")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"min_distinct_ratio\": 1.5}')", "from 0 to 1")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"trivial\": 1}')", "expected true or false")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"trivial\": true, \"trivial\": false}')", "duplicate option 'trivial'")
    expect_error(db, "SELECT h5mem_gate('ok', '{\"trivial\": tru}')", "malformed JSON")
    expect_error(db, "SELECT h5mem_gate('ok', '[1]')", "expected a JSON object")
    expect_error(db, "SELECT h5mem_gate(42)", "h5mem_gate: text: expected TEXT, got a number")
    expect_error(db, "SELECT h5mem_gate(x'00')", "got a BLOB")
    db.close()


def decay_py(imp, ts, n, last, now=NOW, half_life_days=7.0, w=(0.4, 0.4, 0.2), access_full=100.0, dflt=0.5):
    """docs/SQL.md's formula, again."""
    i = dflt if imp is None else min(1.0, max(0.0, imp))
    times = [t for t in (ts, last) if t is not None]
    if not times:
        r = 0.0
    else:
        age = now - max(times)
        r = 1.0 if age <= 0 else 0.5 ** (age / (half_life_days * DAY))
    a = 0.0 if not n or n <= 0 else min(1.0, math.log1p(n) / math.log1p(access_full))
    return (w[0] * i + w[1] * r + w[2] * a) / sum(w)


def decay(db, imp, ts, n, last, opts=None):
    o = dict(opts or {})
    o.setdefault("now", NOW)
    return db.execute("SELECT h5mem_decay(?, ?, ?, ?, ?)", (imp, ts, n, last, json.dumps(o))).fetchone()[0]


def test_decay():
    db = connect()
    import random
    rnd = random.Random(19)
    for _ in range(300):
        imp = rnd.choice([None, rnd.random(), 1.5, -0.2, 0, 1])
        ts = rnd.choice([None, NOW - rnd.randrange(0, 400 * 86400), NOW + 500])
        n = rnd.choice([None, 0, rnd.randrange(0, 300), -3])
        last = rnd.choice([None, NOW - rnd.randrange(0, 40 * 86400)])
        got = decay(db, imp, ts, n, last)
        want = decay_py(imp, ts, n, last)
        check(abs(got - want) < 1e-12, "decay(%r,%r,%r,%r) = %r, want %r" % (imp, ts, n, last, got, want))
        check(0 <= got <= 1, "in [0, 1]: %r" % got)
    # options
    o = {"half_life_days": 1, "weights": {"importance": 1, "recency": 3, "access": 0}, "access_full": 10,
         "default_importance": 0.2}
    for args in [(None, NOW - 86400, 3, None), (0.9, NOW - 3 * 86400, 12, NOW - 86400)]:
        got = decay(db, *args, opts=o)
        want = decay_py(*args, half_life_days=1, w=(1, 3, 0), access_full=10, dflt=0.2)
        check(abs(got - want) < 1e-12, "options: %r, want %r" % (got, want))
    # the half-life halves the recency part exactly
    only_r = {"weights": {"importance": 0, "recency": 1, "access": 0}}
    check(decay(db, 0.5, NOW - 7 * 86400, 0, None, only_r) == 0.5, "one half-life")
    check(decay(db, 0.5, NOW - 14 * 86400, 0, None, only_r) == 0.25, "two half-lives")
    # monotone: older lower, used more higher, importance higher
    check(decay(db, 0.5, NOW - 10, 1, None) > decay(db, 0.5, NOW - 86400, 1, None), "older scores lower")
    check(decay(db, 0.5, NOW - 10, 5, None) > decay(db, 0.5, NOW - 10, 4, None), "used more scores higher")
    check(decay(db, 0.6, NOW - 10, 5, None) > decay(db, 0.5, NOW - 10, 5, None), "more important higher")
    # ISO-8601 times as the table takes them
    iso = db.execute("SELECT h5mem_decay(0.5, '2026-01-01T00:00:00Z', 0, NULL, '{\"now\": 1767225600}')").fetchone()[0]
    check(abs(iso - (0.4 * 0.5 + 0.4)) < 1e-12, "ISO ts: %r" % iso)
    # the current time by default: a fresh memory's recency is about 1
    fresh = db.execute("SELECT h5mem_decay(0, unixepoch(), 0, NULL)").fetchone()[0]
    check(abs(fresh - 0.4) < 1e-5, "now by default: %r" % fresh)
    # errors
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"half_life_days\": -1}')", "half_life_days")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"half_life_days\": 0}')", "half_life_days")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"now\": \"soon\"}')", "expected a number")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"when\": 1}')",
                 "unknown option 'when' (known: now, half_life_days, weights, access_full, default_importance)")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"weights\": {\"importance\": -1}}')", "weights")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"weights\": {\"importance\": 0, \"recency\": 0, "
                 "\"access\": 0}}')", "must not all be 0")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"weights\": {\"speed\": 1}}')", "unknown option 'speed'")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{\"default_importance\": 2}')", "default_importance")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, NULL, '{')", "malformed JSON")
    expect_error(db, "SELECT h5mem_decay('high', 0, 0, NULL)", "importance: expected a number or NULL, got TEXT")
    expect_error(db, "SELECT h5mem_decay(9e999, 0, 0, NULL)", "importance: expected a finite number")
    expect_error(db, "SELECT h5mem_decay(0.5, 'yesterday', 0, NULL)", "ts: expected unix seconds or ISO-8601 text")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 0, x'01')", "last_access")
    expect_error(db, "SELECT h5mem_decay(0.5, 0, 'many', NULL)", "access_count: expected an integer")
    expect_error(db, "SELECT h5mem_decay(0.5, 9e999, 0, NULL)", "ts: expected unix seconds")
    db.close()


def test_score():
    with tempfile.TemporaryDirectory() as d:
        db = connect()
        db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(os.path.join(d, "a.h5")))
        rows = [(1, 0.9, NOW - 86400, 3, None), (2, None, NOW - 30 * 86400, 0, NOW - 3600),
                (3, 0.1, NOW, 50, NOW), (4, None, None, None, None)]
        for r in rows:
            db.execute("INSERT INTO mem(id, text, embedding, importance, ts, access_count, last_access) "
                       "VALUES (?, 'm', '[1,0]', ?, ?, ?, ?)", r)
        db.execute("UPDATE mem SET ts = NULL WHERE id = 4")
        opts = json.dumps({"now": NOW})
        got = db.execute("SELECT id, h5mem_score('mem', id, ?), h5mem_decay(importance, ts, access_count, "
                         "last_access, ?), importance, ts, access_count, last_access FROM mem ORDER BY id",
                         (opts, opts)).fetchall()
        for id_, s, dcy, imp, ts, n, last in got:
            check(s == dcy, "h5mem_score(%d) %r == h5mem_decay %r" % (id_, s, dcy))
            check(abs(s - decay_py(imp, ts, n, last)) < 1e-12, "h5mem_score(%d) %r" % (id_, s))
        # ranking in SQL
        order = [r[0] for r in db.execute("SELECT id FROM mem ORDER BY h5mem_decay(importance, ts, access_count, "
                                          "last_access, ?) DESC", (opts,))]
        want = sorted([r[0] for r in got], key=lambda i: -[g[1] for g in got if g[0] == i][0])
        check(order == want, "ORDER BY h5mem_decay: %r, want %r" % (order, want))
        # a non-constant table name, a bound id, schema-qualified and any case
        check(db.execute("SELECT h5mem_score(?, 1, ?)", ("mem", opts)).fetchone()[0] == got[0][1], "bound name")
        check(db.execute("SELECT h5mem_score('main.mem', 1, ?)", (opts,)).fetchone()[0] == got[0][1], "main.mem")
        check(db.execute("SELECT h5mem_score('MEM', 1, ?)", (opts,)).fetchone()[0] == got[0][1], "MEM")
        check(db.execute("SELECT h5mem_score('mem', NULL)").fetchone()[0] is None, "NULL id")
        # inside a transaction: what this connection wrote
        db.execute("BEGIN")
        db.execute("UPDATE mem SET access_count = 99 WHERE id = 1")
        s = db.execute("SELECT h5mem_score('mem', 1, ?)", (opts,)).fetchone()[0]
        check(abs(s - decay_py(0.9, NOW - 86400, 99, None)) < 1e-12, "uncommitted update seen: %r" % s)
        db.execute("ROLLBACK")
        # errors
        db.execute("CREATE TABLE plain(id, importance, ts, access_count, last_access)")
        expect_error(db, "SELECT h5mem_score('nope', 1)", "h5mem_score: no h5mem table 'nope'")
        expect_error(db, "SELECT h5mem_score('plain', 1)", "h5mem_score: no h5mem table 'plain'")
        expect_error(db, "SELECT h5mem_score('mem', 77)", "h5mem_score: no memory with id 77 in mem")
        expect_error(db, "SELECT h5mem_score('mem', 'one')", "id: expected an integer")
        expect_error(db, "SELECT h5mem_score(NULL, 1)", "h5mem_score: no h5mem table ''")
        expect_error(db, "SELECT h5mem_score('mem', 1, '{\"half_life_days\": -7}')", "half_life_days")
        # direct-only: not from a view or trigger
        db.execute("CREATE VIEW v AS SELECT h5mem_score('mem', 1) AS s")
        expect_error(db, "SELECT * FROM v", "unsafe use of h5mem_score()")
        db.close()


test_gate()
test_decay()
test_score()
finish()
