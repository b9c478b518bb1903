"""sql/migrate_*.sql, the plain-SQL migration scripts, against h5mem_migrate.

For each script (LangChain, LangGraph, generic, ClawhDF5, OpenClaw legacy,
sqlite-vec) a small source database is built with that layout's exact DDL
(docs/MIGRATION.md, test/interop/test_migrate.py), holding good rows and
one bad row of each kind the layout can have: NULL or blank text, a text
with a NUL byte, a wrong-dimension embedding, a NaN element, a truncated
BLOB or malformed JSON embedding, one the search cannot score
(vector_range), a duplicate id (generic), deleted rows and a graph with a
dangling relation (ClawhDF5), orphan and stale vectors (LangGraph).  The
script runs through the sqlite3 shell, as its header says, with its
ATTACH, path= and dim= pointed at the fixture; it must exit 0 and print
one row per outcome.  h5mem_migrate migrates the same source into another
store, and:

- the script's printed skip counts equal the report's non-zero skipped
  counts, and its printed written count equals the report's rows_written
  and the records its store holds;
- both stores hold the same records: id, text, embedding (float32), source,
  session, tags, ts, tier, importance, meta (as JSON), declared columns,
  and the same dim, metric and storage; ClawhDF5's mem_entities and
  mem_relations equal the graph h5mem_migrate wrote; some texts are also
  checked against what the source's own writer gives (LangGraph's "$" is
  Python's json.dumps(value, sort_keys=True, ensure_ascii=False));
- the script run a second time on its destination exits 0, writes
  nothing, and prints every row it wrote before as a duplicate (the bad
  rows under their reasons again), as h5mem_migrate run again does.

Three small fixtures more, each apart so that the main ones are compared
whatever happens to them: a LangGraph value whose embedded field holds a
NUL byte (its JSON has "\\u0000"), and ClawhDF5 rows the schema allows
beside the bad ones (deleted NULL, a relation without a timestamp) and a
NUL byte in session_id rather than the text: the row is skipped as
bad_text, as h5mem_migrate skips it, the others written.
"""
import json
import math
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sql"))
from sqltest import EXT, check, connect, finish, q  # noqa: E402
import layouts  # noqa: E402  (test/interop, this file's folder)

SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SQLDIR = os.path.join(SRCDIR, "sql")
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")
TMP = tempfile.mkdtemp(prefix="h5mem_migrate_sql_")
NAN = float("nan")
NO_META = "(SQL NULL)"  # a record without meta, told from one whose meta is JSON null
FIELDS = ["id", "text", "emb", "source", "session", "tags", "ts", "tier", "importance", "meta"]


def path(name):
    return os.path.join(TMP, name)


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def with_vec(db):
    db.enable_load_extension(True)
    db.load_extension(VEC0)
    return db


def migrate(name, src, dst, opts=None):
    """h5mem_migrate's report, or None (a failed check) when it fails."""
    db = connect()
    sql = "SELECT h5mem_migrate(?, ?%s)" % (", ?" if opts is not None else "")
    args = (src, dst) + ((json.dumps(opts),) if opts is not None else ())
    try:
        rep = json.loads(db.execute(sql, args).fetchone()[0])
    except sqlite3.Error as e:
        check(False, "%s: h5mem_migrate(%s) fails: %s" % (name, json.dumps(opts), e))
        rep = None
    db.close()
    return rep


# ---------------------------------------------------------------- the stores

def records(dst, decl=()):
    """Every record of the store by id (embedding as float32 values, meta
    parsed), its declared columns decl too."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE x USING h5mem(path=%s)" % q(dst))
    cols = "id, text, embedding, source, session, tags, ts, tier, importance, meta" + "".join(", " + c for c in decl)
    rows = {}
    for r in db.execute("SELECT %s FROM x" % cols):
        d = dict(zip(FIELDS + list(decl), r))
        if d["emb"] is not None:
            d["emb"] = [float(x) for x in np.frombuffer(d["emb"], "<f4")]
        d["meta"] = json.loads(d["meta"]) if d["meta"] is not None else NO_META
        rows[r[0]] = d
    db.close()
    return rows


def graph(dst):
    """The store's entities and relations (x_entities, x_relations), by id."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE x USING h5mem(path=%s)" % q(dst))
    ent = {r[0]: (r[1], r[2], r[3], json.loads(r[4]) if r[4] is not None else None)
           for r in db.execute("SELECT id, name, type, aliases, meta FROM x_entities")}
    rel = {r[0]: (r[1], r[2], r[3], r[4], r[5], json.loads(r[6]) if r[6] is not None else None)
           for r in db.execute("SELECT id, src, dst, type, weight, ts, meta FROM x_relations")}
    db.close()
    return ent, rel


def attrs(dst):
    """What the store was created with: dim, metric, storage, index."""
    with h5py.File(dst, "r") as f:
        return {k: (f.attrs[k].decode() if isinstance(f.attrs[k], bytes) else f.attrs[k])
                for k in ("dim", "metric", "storage", "index")}


def same_field(k, a, b):
    if k == "emb":
        return (a is None and b is None) or (a is not None and b is not None and len(a) == len(b) and
                                             all(x == y for x, y in zip(a, b)))
    if k == "importance" and a is not None and b is not None and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare_stores(name, by_script, by_migrate, now_ts=None):
    """The two stores hold the same records, field by field.  now_ts: the
    source has no time, both stores stamp the migration's: ts within
    [start, end] of the test's run on both sides, not equal."""
    check(set(by_script) == set(by_migrate), "%s: ids: the script wrote %s, h5mem_migrate %s (only the script: "
          "%s, only h5mem_migrate: %s)" % (name, sorted(by_script), sorted(by_migrate),
                                           sorted(set(by_script) - set(by_migrate)),
                                           sorted(set(by_migrate) - set(by_script))))
    for i in sorted(set(by_script) & set(by_migrate)):
        a, b = by_script[i], by_migrate[i]
        for k in a:
            if k == "ts" and now_ts is not None:
                check(now_ts[0] <= a[k] <= now_ts[1] and now_ts[0] <= b[k] <= now_ts[1],
                      "%s id %d: ts %r (script) and %r (h5mem_migrate) are not the migration's time %r"
                      % (name, i, a[k], b[k], now_ts))
                continue
            check(same_field(k, a[k], b[k]), "%s id %d: %s = %r by the script, %r by h5mem_migrate"
                  % (name, i, k, a[k], b[k]))


# ---------------------------------------------------------------- the scripts

def script_text(name, src, dst, dim):
    """sql/migrate_<name>.sql with its ATTACH, path= and dim= pointed at the
    fixture (each must be there exactly once)."""
    with open(os.path.join(SQLDIR, "migrate_%s.sql" % name)) as f:
        text = f.read()
    for pat, rep, what in ((r"file:[^?']*\?mode=ro", "file:%s?mode=ro" % src, "the ATTACH"),
                           (r"path='[^']*'", "path=%s" % q(dst), "path="),
                           (r"\bdim=\d+", "dim=%d" % dim, "dim=")):
        text, n = re.subn(pat, lambda m: rep, text)
        check(n == 1, "sql/migrate_%s.sql: %s found %d times (expected once)" % (name, what, n))
    return text


def run_script(name, text, vec=False):
    """The script through the sqlite3 shell: its outcomes {reason: rows}
    (None: written) and the count h5mem_checkpoint prints last."""
    cmd = ["sqlite3", "-cmd", ".load " + EXT] + (["-cmd", ".load " + VEC0] if vec else []) + [":memory:"]
    p = subprocess.run(cmd, input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    check(p.returncode == 0, "%s script: the shell exits %d: %s" % (name, p.returncode, err.strip()))
    check(err == "", "%s script: the shell's stderr: %r" % (name, err))
    lines = out.splitlines()
    outcomes, last = {}, None
    for i, line in enumerate(lines):
        m = re.match(r"^([a-z0-9_]*)\|(\d+)$", line)
        if m:
            reason = m.group(1) or None
            check(reason not in outcomes, "%s script: outcome %r printed twice" % (name, reason))
            outcomes[reason] = int(m.group(2))
        elif i == len(lines) - 1 and re.match(r"^\d+$", line):
            last = int(line)
        else:
            check(False, "%s script: unexpected output line %r" % (name, line))
    check(last is not None, "%s script: no h5mem_checkpoint count last: %r" % (name, out))
    return outcomes, last


def nonzero(d):
    return {k: v for k, v in d.items() if v}


def diff(a, b):
    return ", ".join("%s: %s vs %s" % (k, a.get(k, 0), b.get(k, 0)) for k in sorted(set(a) | set(b), key=str)
                     if a.get(k, 0) != b.get(k, 0))


def run_both(script, src, dim, opts=None, vec=False, decl=(), now_ts=False, expect_skips=None, name=None,
             with_graph=False):
    """sql/migrate_<script>.sql and h5mem_migrate on src; every comparison
    (name: for the messages and files, else script; with_graph: compare the
    knowledge graphs too).  Returns (the script's destination,
    h5mem_migrate's, the records of each)."""
    name = name or script
    sdst, mdst = path(name + "_script.h5"), path(name + "_migrate.h5")
    text = script_text(script, src, sdst, dim)
    t0 = int(time.time())
    outcomes, ckpt = run_script(name, text, vec)
    rep = migrate(name, src, mdst, opts)
    t1 = int(time.time()) + 1
    got_s, got_m = records(sdst, decl), {}
    written = outcomes.pop(None, 0)
    s_skips = nonzero(outcomes)
    check(written == len(got_s) and ckpt == len(got_s),
          "%s: the script prints %d rows written, its store holds %d records (h5mem_checkpoint: %s)"
          % (name, written, len(got_s), ckpt))
    graph_s = graph(sdst) if with_graph else None
    if rep is not None:
        got_m = records(mdst, decl)
        m_skips = nonzero(rep["skipped"])
        # (a) the same outcomes
        check(s_skips == m_skips, "%s: skipped by the script %s, by h5mem_migrate %s; differ in %s"
              % (name, s_skips, m_skips, diff(s_skips, m_skips)))
        check(written == rep["rows_written"], "%s: the script prints %d rows written, h5mem_migrate wrote %d"
              % (name, written, rep["rows_written"]))
        check(rep["complete"] and len(got_m) == rep["rows_written"], "%s: h5mem_migrate: %r" % (name, rep))
        if expect_skips is not None:
            check(m_skips == expect_skips, "%s: h5mem_migrate skipped %s, the fixture has %s (differ in %s)"
                  % (name, m_skips, expect_skips, diff(m_skips, expect_skips)))
        # (b) the same records, in stores made alike
        compare_stores(name, got_s, got_m, (t0, t1) if now_ts else None)
        check(attrs(sdst) == attrs(mdst), "%s: the script's store is %r, h5mem_migrate's %r"
              % (name, attrs(sdst), attrs(mdst)))
        if with_graph:
            graph_m = graph(mdst)
            check(graph_s[0] == graph_m[0], "%s: entities by the script %r, by h5mem_migrate %r"
                  % (name, graph_s[0], graph_m[0]))
            check(graph_s[1] == graph_m[1], "%s: relations by the script %r, by h5mem_migrate %r"
                  % (name, graph_s[1], graph_m[1]))
    if expect_skips is not None:
        check(s_skips == expect_skips, "%s: the script skipped %s, the fixture has %s (differ in %s)"
              % (name, s_skips, expect_skips, diff(s_skips, expect_skips)))
    # the script run again: nothing new, every row it wrote now a duplicate
    again, ckpt2 = run_script(name + " run again", text, vec)
    want = dict(s_skips)
    if written:
        want["duplicate"] = want.get("duplicate", 0) + written
    check(nonzero(again) == want, "%s run again: the script prints %s, expected %s (differ in %s)"
          % (name, nonzero(again), want, diff(nonzero(again), want)))
    got_s2 = records(sdst, decl)
    check(got_s2 == got_s and ckpt2 == len(got_s), "%s run again: the script's store changed (%d records, "
          "then %d; checkpoint %s)" % (name, len(got_s), len(got_s2), ckpt2))
    if with_graph:
        check(graph(sdst) == graph_s, "%s run again: the script's graph changed: %r, then %r"
              % (name, graph_s, graph(sdst)))
    if rep is not None:
        rep2 = migrate(name + " run again", src, mdst, opts)
        check(rep2 is not None and nonzero(rep2["skipped"]) == want and rep2["rows_written"] == 0,
              "%s run again: h5mem_migrate skipped %s, the script %s" % (name, rep2 and nonzero(rep2["skipped"]),
                                                                         want))
    return sdst, mdst, got_s, got_m


# ---------------------------------------------------------------- LangChain

def langchain():
    """SQLiteVec: {table}(rowid, text, metadata, text_embedding) beside
    {table}_vec (vec0) and the trigger; the script's table is state_union."""
    p = path("langchain.db")
    db = with_vec(sqlite3.connect(p))
    table = "state_union"
    layouts.langchain(db, table, 3)
    rows = [("passage one", {"source": "a.txt", "page": 1}, [1, 0.5, -0.5]),
            ("passage two, caf\u00e9 \u2615", {"source": "b.txt", "nested": {"k": [1, 2]}}, [0.25, -2, 3]),
            ("passage three", {}, [0, 0, 1]),
            ("not json meta", None, [2, 2, 2]),            # metadata 'plain' below
            (None, {"why": "null text"}, [1, 1, 1]),        # empty_text
            ("  \n\t", {"why": "blank"}, [1, 2, 3]),        # empty_text
            ("nul\x00byte", {"why": "nul"}, [1, 2, 3]),     # bad_text
            ("nan", {"why": "nan"}, [NAN, 0, 0]),           # nan_or_inf
            ("huge", {"why": "huge"}, [1e20, 1e20, 1e20]),  # vector_range
            ("two values", {}, [1, 2, 3]),                  # wrong_dimension (updated below)
            ("cut", {}, [1, 2, 3])]                         # bad_embedding (updated below)
    for text, md, v in rows:
        db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES (?,?,?)" % table,
                   (text, json.dumps(md) if md is not None else "plain", f32(v)))
    # (vec0 refuses these on INSERT: a row changed later, the trigger fires on INSERT only)
    db.execute("UPDATE %s SET text_embedding = ? WHERE text = 'two values'" % table, (f32([1, 2]),))
    db.execute("UPDATE %s SET text_embedding = ? WHERE text = 'cut'" % table, (f32([1, 2, 3])[:-1],))
    db.commit()
    db.close()
    sdst, _, got_s, _ = run_both("langchain", p, 3, now_ts=True, expect_skips={
        "empty_text": 2, "bad_text": 1, "nan_or_inf": 1, "vector_range": 1, "wrong_dimension": 1,
        "bad_embedding": 1})
    check(attrs(sdst)["metric"] == "l2", "langchain: the script's metric %r (SQLiteVec ranks with l2)"
          % attrs(sdst)["metric"])
    check(sorted(got_s) == [1, 2, 3, 4] and got_s[2]["text"] == rows[1][0] and
          got_s[2]["meta"] == rows[1][1] and got_s[4]["meta"] == "plain" and got_s[2]["emb"] == [0.25, -2, 3],
          "langchain: the records %r" % got_s)


# ---------------------------------------------------------------- LangGraph



def orjson(value):
    """The bytes orjson.dumps writes: compact, keys in their order, UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def put_items(db, items):
    for prefix, key, value, upd, exp, ttl in items:
        db.execute("INSERT INTO store(prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
                   "VALUES (?,?,?,?,?,?,?)", (prefix, key, orjson(value), "2025-05-01 10:00:00", upd, exp, ttl))


def put_vectors(db, vecs, t):
    for prefix, key, field, blob, _ in vecs:
        db.execute("INSERT INTO store_vectors(prefix, key, field_name, embedding, created_at, updated_at) "
                   "VALUES (?,?,?,?,?,?)", (prefix, key, field, blob, "2025-05-01 10:00:00", t))


def langgraph():
    p = path("langgraph.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.LANGGRAPH)
    t_put, t_later, t_emb = "2025-05-02 11:30:00", "2025-06-01 08:00:00", "2025-05-02 11:30:00"
    alice = {"text": "Alice likes tea", "kind": "pr\u00e9f\u00e9rence \u2615", "n": 3, "w": 2.5, "ok": True,
             "nested": {"b": [1, None, "x"], "a": "\"quoted\"\n"}}
    items = [  # prefix, key, value, updated_at, expires_at, ttl_minutes
        ("users.alice.memories", "m1", alice, t_put, "2025-07-01 00:00:00", 60.0),
        ("users.alice.memories", "p1", {"profile": {"bio": "hikes on weekends", "age": 41},
                                        "tags": ["tea", "hills"]}, t_put, None, None),
        ("users.bob.memories", "blank", {"text": "   "}, t_put, None, None),
        ("users.bob.memories", "null", {"text": None}, t_put, None, None),
        ("users.bob.memories", "dim", {"text": "two values"}, t_put, None, None),
        ("users.bob.memories", "nan", {"text": "not a number"}, t_put, None, None),
        ("users.bob.memories", "cut", {"text": "a cut BLOB"}, t_put, None, None),
        ("users.bob.memories", "huge", {"text": "too large"}, t_put, None, None),
        # put again (with another value) after its vectors were written
        ("users.carol.memories", "s1", {"text": "the new text", "other": 1}, t_later, None, None),
        ("users.carol.memories", "plain", {"text": "never indexed"}, t_put, None, None),
    ]
    put_items(db, items)
    vecs = [  # prefix, key, field_name, embedding, expected text (None: skipped)
        ("users.alice.memories", "m1", "text", f32([1, 0, 0]), "Alice likes tea"),
        ("users.alice.memories", "m1", "$", f32([0, 1, 0]), json.dumps(alice, sort_keys=True, ensure_ascii=False)),
        ("users.alice.memories", "m1", "n", f32([0, 1, 1]), "3"),
        ("users.alice.memories", "p1", "profile.bio", f32([0, 0, 1]), "hikes on weekends"),
        ("users.alice.memories", "p1", "tags[*].0", f32([1, 1, 0]), "tea"),
        ("users.alice.memories", "p1", "tags[*].1", f32([1, 0, 1]), "hills"),
        ("users.alice.memories", "m1", "missing", f32([1, 1, 1]), None),      # empty_text
        ("users.bob.memories", "blank", "text", f32([1, 2, 3]), None),        # empty_text
        ("users.bob.memories", "null", "text", f32([1, 2, 3]), None),         # empty_text
        ("users.bob.memories", "dim", "text", f32([1, 2]), None),             # wrong_dimension
        ("users.bob.memories", "nan", "text", f32([1, NAN, 3]), None),        # nan_or_inf
        ("users.bob.memories", "cut", "text", f32([1, 2, 3])[:-2], None),     # bad_embedding
        ("users.bob.memories", "huge", "text", f32([1e20, 1e20, 1e20]), None),  # vector_range
        ("users.bob.memories", "gone", "text", f32([1, 1, 1]), None),         # orphan
        ("users.carol.memories", "s1", "text", f32([2, 0, 0]), "the new text"),  # stale: no embedding
        ("users.carol.memories", "s1", "summary", f32([0, 2, 0]), None),      # stale_vector
    ]
    put_vectors(db, vecs, t_emb)
    db.commit()
    db.close()
    _, _, got_s, got_m = run_both("langgraph", p, 3, expect_skips={
        "empty_text": 3, "wrong_dimension": 1, "nan_or_inf": 1, "bad_embedding": 1,
        "vector_range": 1, "orphan": 1, "stale_vector": 1})
    # the texts LangGraph embedded, on both sides
    for name, got in (("script", got_s), ("h5mem_migrate", got_m)):
        for i, (prefix, key, field, blob, text) in enumerate(vecs):
            if text is None:
                continue
            g = got.get(i + 1)
            check(g is not None and g["text"] == text, "langgraph (%s): store_vectors row %d (%s) has text %r, "
                  "LangGraph embedded %r" % (name, i + 1, field, g and g["text"], text))
        # the stale vector whose field is still there: no embedding, the item's time, meta says so
        s1 = got.get(1 + [v[:3] for v in vecs].index(("users.carol.memories", "s1", "text")))
        check(s1 is not None and s1["emb"] is None and isinstance(s1["meta"], dict) and
              s1["meta"].get("stale_vector") is True and s1["ts"] == 1748764800,
              "langgraph (%s): the stale vector of s1: %r" % (name, s1))
        m1 = got.get(1)
        check(m1 is not None and isinstance(m1["meta"], dict) and m1["meta"].get("value") == alice and
              m1["meta"].get("expires_at") == "2025-07-01 00:00:00" and m1["meta"].get("ttl_minutes") == 60.0 and
              m1["source"] == "users.alice.memories" and m1["ts"] == 1746185400,
              "langgraph (%s): m1's record %r" % (name, m1))


def langgraph_nul():
    """A value whose embedded field holds a NUL byte (orjson writes it
    "\\u0000"): the text LangGraph embedded cannot be stored, the row is
    skipped as bad_text, the others are written (its own fixture, so that
    the layout's other rows are compared whatever happens to it)."""
    p = path("langgraph_nul.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.LANGGRAPH)
    t = "2025-05-02 11:30:00"
    put_items(db, [("users.bob.memories", "ok", {"text": "fine"}, t, None, None),
                   ("users.bob.memories", "nul", {"text": "a\x00b"}, t, None, None)])
    put_vectors(db, [("users.bob.memories", "ok", "text", f32([1, 2, 3]), "fine"),
                     ("users.bob.memories", "nul", "text", f32([1, 2, 3]), None)], t)
    db.commit()
    db.close()
    run_both("langgraph", p, 3, expect_skips={"bad_text": 1}, name="langgraph_nul")


# ---------------------------------------------------------------- generic

def generic():
    """Any table: notes(note_id, body, vec, created, author, conversation) as
    the script reads it; note_id is not a key, so an id can come twice."""
    p = path("notes.db")
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE notes (note_id INTEGER, body TEXT, vec BLOB, created TEXT, author TEXT, "
               "conversation TEXT)")
    rows = [  # note_id, body, vec, created, author, conversation
        (7, "first note", f32([1, 2, 3, 4]), "2026-01-02T03:04:05Z", "alice", "conv-1"),
        (14, "second note, JSON vector", "[0.5, -1, 2, 1e-3]", "2026-02-03 04:05:06", "bob", None),
        (21, "third note, unix time", f32([0, 0, 0, 1]), 1767225600, None, "conv-2"),
        (28, "fourth note, real time", f32([4, 3, 2, 1]), 1767225600.75, "carol", "conv-1"),
        (35, "no vector", None, "2026-03-04T05:06:07Z", "alice", None),
        (42, None, f32([1, 1, 1, 1]), "2026-01-01T00:00:00Z", "x", None),           # empty_text
        (49, " \t ", f32([1, 1, 1, 1]), "2026-01-01T00:00:00Z", "x", None),         # empty_text
        (56, "nul\x00", f32([1, 1, 1, 1]), "2026-01-01T00:00:00Z", "x", None),      # bad_text
        (63, "three values", f32([1, 1, 1]), "2026-01-01T00:00:00Z", "x", None),    # wrong_dimension
        (70, "nan", f32([1, NAN, 1, 1]), "2026-01-01T00:00:00Z", "x", None),        # nan_or_inf
        (77, "bad JSON", "[1, 2, x, 4]", "2026-01-01T00:00:00Z", "x", None),        # bad_embedding
        (84, "cut BLOB", f32([1, 2, 3, 4])[:-1], "2026-01-01T00:00:00Z", "x", None),  # bad_embedding
        (91, "huge", f32([1e20] * 4), "2026-01-01T00:00:00Z", "x", None),           # vector_range
        (7, "first note's id again", f32([9, 9, 9, 9]), "2026-01-01T00:00:00Z", "x", None),  # duplicate
    ]
    db.executemany("INSERT INTO notes VALUES (?,?,?,?,?,?)", rows)
    db.commit()
    db.close()
    opts = {"table": "notes", "columns": {"id": "note_id", "text": "body", "embedding": "vec", "ts": "created",
                                          "source": "author", "session": "conversation"}}
    _, _, got_s, _ = run_both("generic", p, 4, opts, expect_skips={
        "empty_text": 2, "bad_text": 1, "wrong_dimension": 1, "nan_or_inf": 1, "bad_embedding": 2,
        "vector_range": 1, "duplicate": 1})
    check(sorted(got_s) == [7, 14, 21, 28, 35] and got_s[7]["text"] == "first note" and
          got_s[7]["ts"] == 1767323045 and got_s[14]["emb"] == [0.5, -1, 2, float(np.float32(1e-3))] and
          got_s[28]["ts"] == 1767225600 and got_s[35]["emb"] is None and got_s[7]["session"] == "conv-1",
          "generic: the records %r" % got_s)


# ---------------------------------------------------------------- ClawhDF5



def clawhdf5():
    p = path("zeroclaw.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.CLAWHDF5)
    for i in range(1, 7):
        ts = 1700000000.0 + i * 10 + (0.5 if i % 2 else 0)
        db.execute("INSERT INTO memory_chunks VALUES (?,?,?,?,?,?,?,?)",
                   (i, "chunk %d" % i, f32([i, i * 0.5, -i, 0.25]), "discord" if i % 2 else "api", ts,
                    "sess-%d" % (i % 2), "tag1,tag2" if i != 3 else "", 1 if i in (4, 6) else 0))
    bad = [(20, "   ", f32([1, 2, 3, 4])),          # empty_text
           (21, "a\x00b", f32([1, 2, 3, 4])),       # bad_text
           (22, "short", f32([1, 2])),              # wrong_dimension
           (23, "nan", f32([NAN, 0, 0, 0])),        # nan_or_inf
           (24, "cut", f32([1, 2, 3, 4])[:-1]),     # bad_embedding
           (25, "integer", 42),                     # bad_embedding
           (26, "huge", f32([1e20] * 4))]           # vector_range
    for i, text, emb in bad:
        db.execute("INSERT INTO memory_chunks VALUES (?, ?, ?, 'api', 1700000000, 's', '', 0)", (i, text, emb))
    db.execute("INSERT INTO sessions VALUES ('sess-1', 0, 3, 'discord', 1700000000.0, 'a summary')")
    db.executemany("INSERT INTO entities VALUES (?,?,?,?)", [(1, "Alice", "person", -1), (2, "Bob", "person", 5),
                                                             (3, "", "place", -1), (4, "Tam", "place", 0)])
    db.executemany("INSERT INTO relations VALUES (?,?,?,?,?)",
                   [(1, 2, "knows", 1.0, 1700000000.5), (2, 1, "knows", None, 1700000100.0),
                    (1, 99, "likes", 1.0, 1700000200.0), (2, 4, "hikes", 0.25, 1700000300.0)])
    db.commit()
    db.close()
    sdst, mdst, got_s, _ = run_both("clawhdf5", p, 4, with_graph=True, expect_skips={
        "deleted": 2, "empty_text": 1, "bad_text": 1, "wrong_dimension": 1, "nan_or_inf": 1, "bad_embedding": 2,
        "vector_range": 1})
    check(sorted(got_s) == [1, 2, 3, 5] and got_s[1]["ts"] == 1700000010 and got_s[1]["meta"] ==
          {"timestamp": 1700000010.5} and got_s[2]["meta"] == NO_META and got_s[3]["tags"] == "",
          "clawhdf5: the records %r" % got_s)
    ge_m, gr_m = graph(mdst)
    check(sorted(ge_m) == [1, 2, 4] and ge_m[2][3] == {"embedding_idx": 5} and ge_m[4][3] == {"embedding_idx": 0}
          and sorted(gr_m) == [1, 2, 4] and gr_m[2][3] == 1.0 and gr_m[1][4] == 1700000000,
          "clawhdf5: the graph %r %r" % (ge_m, gr_m))


def clawhdf5_edges():
    """Values the schema allows beside the bad rows: deleted NULL (the
    column has a default, not NOT NULL) and a relation without a timestamp
    (nullable): both sides must treat them alike."""
    p = path("zeroclaw_edges.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.CLAWHDF5)
    db.execute("INSERT INTO memory_chunks VALUES (1, 'kept', ?, 'api', 1700000000, 's', '', 0)", (f32([1, 2, 3, 4]),))
    db.execute("INSERT INTO memory_chunks VALUES (2, 'deleted is NULL', ?, 'api', 1700000000, 's', '', NULL)",
               (f32([4, 3, 2, 1]),))
    db.executemany("INSERT INTO entities VALUES (?,?,?,-1)", [(1, "Alice", "person"), (2, "Bob", "person")])
    db.execute("INSERT INTO relations VALUES (1, 2, 'knows', 1.0, NULL)")
    db.commit()
    db.close()
    run_both("clawhdf5", p, 4, with_graph=True, name="clawhdf5_edges")


def clawhdf5_nul_session():
    """A NUL byte in session_id (not the text): h5mem_migrate skips the row
    as bad_text; the script must do the same and write the other rows."""
    p = path("zeroclaw_nul.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.CLAWHDF5)
    db.execute("INSERT INTO memory_chunks VALUES (1, 'kept', ?, 'api', 1700000000, 's', '', 0)", (f32([1, 2, 3, 4]),))
    db.execute("INSERT INTO memory_chunks VALUES (2, 'its session has a NUL', ?, 'api', 1700000000, ?, '', 0)",
               (f32([4, 3, 2, 1]), "sess\x00ion"))
    db.commit()
    db.close()
    run_both("clawhdf5", p, 4, expect_skips={"bad_text": 1}, name="clawhdf5_nul_session")


# ---------------------------------------------------------------- OpenClaw legacy

def openclaw_legacy():
    p = path("main.sqlite")
    db = with_vec(sqlite3.connect(p))
    rows = [  # id, path, source, text, embedding JSON, updated_at
        ("c1", "MEMORY.md", "memory", "we hiked up Mount Tam", "[0.1, 0.2, 0.3]", 1700000000123),
        ("c2", "sessions/abc.jsonl", "sessions", "user asked about ducks", "[1, -2, 3.5e-3]", 1700000100000),
        ("c3", "MEMORY.md", "memory", "no vector yet", "[]", 1700000200000),
        ("c4", "memory/2026.md", "memory", "seconds, not ms", "[3, 2, 1]", 1700000300),
        ("empty", "MEMORY.md", "memory", "", "[0, 0, 1]", 1700000400000),            # empty_text
        ("blank", "MEMORY.md", "memory", " \n ", "[0, 0, 1]", 1700000400000),        # empty_text
        ("nul", "MEMORY.md", "memory", "a\x00b", "[0, 0, 1]", 1700000400000),         # bad_text
        ("dim", "MEMORY.md", "memory", "two values", "[0.5, 0.5]", 1700000400000),   # wrong_dimension
        ("json", "MEMORY.md", "memory", "broken", "[0.1, oops]", 1700000400000),     # bad_embedding
        ("nan", "MEMORY.md", "memory", "JS NaN", "[null, 0, 0]", 1700000400000),     # bad_embedding
        ("huge", "MEMORY.md", "memory", "too large", "[1e20, 1e20, 1e20]", 1700000400000),  # vector_range
    ]
    layouts.openclaw_legacy(db, 3, rows, vec_ids=("c1", "c2", "c4"))
    db.commit()
    db.close()
    _, _, got_s, _ = run_both("openclaw_legacy", p, 3, expect_skips={
        "empty_text": 2, "bad_text": 1, "wrong_dimension": 1, "bad_embedding": 2, "vector_range": 1})
    check(sorted(got_s) == [1, 2, 3, 4] and got_s[3]["emb"] is None and got_s[2]["session"] == "sessions/abc.jsonl"
          and got_s[1]["ts"] == 1700000000 and got_s[4]["ts"] == 1700000300 and
          got_s[1]["meta"]["openclaw_id"] == "c1", "openclaw legacy: the records %r" % got_s)


# ---------------------------------------------------------------- OpenClaw, current

def openclaw():
    """memory_index_* as OpenClaw 2026.9.6 makes them (npm openclaw, the decoded OPENCLAW_AGENT_SCHEMA_SQL:
    the columns of its tables, STRICT), with the recall metadata and provenance side tables and
    memory_index_chunks_vec (vec0) holding the float32 copies the script reads."""
    p = path("openclaw-agent.sqlite")
    db = with_vec(sqlite3.connect(p))
    db.executescript("""
    CREATE TABLE memory_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    CREATE TABLE memory_index_chunks (chunk_rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, path TEXT NOT NULL,
      source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
      hash TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL, embedding BLOB NOT NULL,
      updated_at INTEGER NOT NULL) STRICT;
    CREATE TABLE memory_index_chunk_recall_metadata (chunk_id TEXT PRIMARY KEY,
      importance INTEGER CHECK (importance IS NULL OR importance BETWEEN 1 AND 10), triggers TEXT,
      project_key TEXT, FOREIGN KEY (chunk_id) REFERENCES memory_index_chunks(id) ON DELETE CASCADE) STRICT;
    CREATE TABLE memory_index_chunk_provenance (chunk_id TEXT PRIMARY KEY,
      origin_class TEXT NOT NULL CHECK (origin_class IN ('owner', 'agent', 'untrusted', 'system')),
      session_kind TEXT NOT NULL CHECK (session_kind IN ('interactive', 'cron', 'heartbeat', 'subagent', 'unknown')),
      observed_at INTEGER NOT NULL, supersedes_key TEXT,
      FOREIGN KEY (chunk_id) REFERENCES memory_index_chunks(id) ON DELETE CASCADE) STRICT;
    CREATE VIRTUAL TABLE memory_index_chunks_vec USING vec0(id TEXT PRIMARY KEY, embedding FLOAT[4]);
    """)
    db.execute("INSERT INTO memory_index_meta VALUES ('memory_index_meta_v1', ?)",
               (json.dumps({"provider": "openai", "model": "m", "vectorDims": 4}),))
    rows = [  # id, path, source, text, embedding (exact in float32), recall, provenance
        ("c1", "MEMORY.md", "memory", "# Memory\n- Prefers metric units", [0.5, -0.25, 1, 2], (8, "units; metric", None),
         ("agent", "unknown", 1767225000456, None)),
        ("c2", "MEMORY.md", "memory", "- Works on h5mem", [1, 0, 0.125, -4], (None, None, "github.com/acme/h5mem"),
         ("agent", "unknown", 1767225000456, "k")),
        ("c3", "sessions/main/3f.jsonl", "sessions", "User: hi", [0, 1, 0, 0], None, None),
        ("c4", "MEMORY.md", "memory", "  ", [0, 0, 1, 0], (3, None, None), ("owner", "cron", 1, None)),  # empty_text
        ("c5", "MEMORY.md", "memory", "a\x00b", [0, 0, 1, 0], None, None),                             # bad_text
    ]
    for i, (cid, pth, src, text, emb, rc, pv) in enumerate(rows):
        db.execute("INSERT INTO memory_index_chunks(id, path, source, start_line, end_line, hash, model, text, "
                   "embedding, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (cid, pth, src, i + 1, i + 2, "h%d" % i, "m", text, struct.pack("<4d", *emb), 1767225600123))
        db.execute("INSERT INTO memory_index_chunks_vec(id, embedding) VALUES (?, ?)", (cid, f32(emb)))
        if rc:
            db.execute("INSERT INTO memory_index_chunk_recall_metadata VALUES (?,?,?,?)", (cid,) + rc)
        if pv:
            db.execute("INSERT INTO memory_index_chunk_provenance VALUES (?,?,?,?,?)", (cid,) + pv)
    db.commit()
    db.close()
    _, _, got_s, _ = run_both("openclaw", p, 4, vec=True, expect_skips={"empty_text": 1, "bad_text": 1})
    check(sorted(got_s) == [1, 2, 3] and got_s[1]["importance"] == 8 and got_s[1]["meta"]["triggers"] ==
          "units; metric" and got_s[2]["meta"]["provenance"]["supersedes_key"] == "k" and
          got_s[3]["meta"]["provenance"] is None, "openclaw: the records %r" % got_s)


# ---------------------------------------------------------------- sqlite-vec

def sqlite_vec():
    """vec0(embedding float[3], category text, +content text), as the script has it, named items."""
    p = path("vec.db")
    db = with_vec(sqlite3.connect(p))
    db.execute("CREATE VIRTUAL TABLE items USING vec0(embedding float[3], category text, +content text)")
    rows = [(1, [1, 2, 3], "a", "hello"), (2, [0.5, -0.5, 0], "b", "caf\u00e9"), (5, [0, 0, 1], "a", "five"),
            (6, [1, 1, 1], "a", None),               # empty_text
            (7, [1, 1, 1], "b", "  "),               # empty_text
            (8, [1, 1, 1], "b", "x\x00y"),           # bad_text
            (9, [NAN, 1, 1], "b", "nan"),            # nan_or_inf
            (10, [1e20, 1e20, 1e20], "b", "huge")]   # vector_range
    for rid, v, cat, content in rows:
        db.execute("INSERT INTO items(rowid, embedding, category, content) VALUES (?,?,?,?)",
                   (rid, f32(v), cat, content))
    db.commit()
    db.close()
    _, _, got_s, _ = run_both("sqlite_vec", p, 3, {"table": "items"}, vec=True, decl=("category",), now_ts=True,
                              expect_skips={"empty_text": 2, "bad_text": 1, "nan_or_inf": 1, "vector_range": 1})
    check(sorted(got_s) == [1, 2, 5] and got_s[2]["text"] == "caf\u00e9" and got_s[2]["category"] == "b" and
          got_s[1]["emb"] == [1, 2, 3], "sqlite-vec: the records %r" % got_s)


def main():
    if not os.path.exists(VEC0 + ".so"):
        print("sqlite-vec (npm) is missing: run make check once (npm ci)")
        sys.exit(1)
    if not shutil.which("sqlite3"):
        print("the sqlite3 shell is missing")
        sys.exit(1)
    t0 = time.time()
    try:
        for test in (langchain, langgraph, langgraph_nul, generic, clawhdf5, clawhdf5_edges, clawhdf5_nul_session,
                     openclaw_legacy, openclaw, sqlite_vec):
            test()
    finally:
        if os.environ.get("H5MEM_KEEP_TMP"):
            print("kept", TMP)
        else:
            shutil.rmtree(TMP, ignore_errors=True)
    print("%.1f s" % (time.time() - t0))
    finish()


main()
