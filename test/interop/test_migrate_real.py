"""h5mem_migrate on what the real libraries write (issue 27).

Each source is built with the library's own statements (copied DDL and
writes, cited below by package version or commit and file) or, where the
package runs here, with the package itself:

- LangGraph's SqliteStore (langgraph-checkpoint-sqlite 3.1.1, tag
  checkpointsqlite==3.1.1 = langchain-ai/langgraph@b2926a0f,
  libs/checkpoint-sqlite/langgraph/store/sqlite/base.py: MIGRATIONS and
  VECTOR_MIGRATIONS l. 41-87, _prepare_batch_PUT_queries l. 370-435): the
  field names and texts of one put with every path form, recorded from a
  run of that release's code (get_text_at_path, tokenize_path); the
  docstring's {"fields": [...]} config, which embeds the whole value under
  "$"; stale vectors (a put with index=False, a list that shrank); the
  store's times and TTL;
- LangChain's SQLiteVec (langchain-ai/langchain-community@bc877730
  libs/community/langchain_community/vectorstores/sqlitevec.py, l. 76-106
  the tables and trigger, l. 148-159 the search) with the real sqlite-vec:
  the migrated store answers the class's own query (vec0's MATCH, L2) with
  the same rows; a text with a NUL byte is reported as what it is;
- OpenClaw 2026.9.6 (npm openclaw, the decoded OPENCLAW_AGENT_SCHEMA_SQL of
  dist/openclaw-agent-board-schema-vd3Vff_q.mjs, the tables copied; the
  writes as dist/manager-source-index-kernel-Bb4WOObH.mjs l. 12-75 makes
  them, compiled by its kysely 0.29.5): recall metadata and provenance;
- mem0 (npm mem0ai 3.3.1, its own Memory class, test/interop/mem0_build.js:
  infer false, an OpenAI-style embedder on a local endpoint): memories,
  entities and mentions, history;
- LangChain.js' LibSQLVectorStore (npm @langchain/community 1.1.29 with
  @libsql/client 0.17.4, test/interop/libsql_build.js): both table shapes,
  and LangChain's own top-5 answered the same by the migrated store;
- every layout: a few examples of each skip reason with its detail; a
  source whose rows are all skipped is an error.
"""
import json
import math
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sql"))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402
import layouts  # noqa: E402  (test/interop, this file's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(HERE)))
INTEROP = os.path.join(SRCDIR, "test", "interop")
VEC0 = os.path.join(INTEROP, "node_modules", "sqlite-vec-linux-x64", "vec0")
TMP = tempfile.mkdtemp(prefix="h5mem_migrate_real_")


def path(name):
    return os.path.join(TMP, name)


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def as_f32(v):
    return [struct.unpack("<f", struct.pack("<f", x))[0] for x in v]


def migrate(src, dst, opts=None):
    db = connect()
    args = (src, dst) + ((json.dumps(opts),) if opts is not None else ())
    rep = json.loads(db.execute("SELECT h5mem_migrate(?, ?%s)" % (", ?" if opts is not None else ""),
                                args).fetchone()[0])
    db.close()
    return rep


def records(dst, cols=""):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE r USING h5mem(path=%s)" % q(dst))
    out = {}
    for row in db.execute("SELECT id, text, CASE WHEN embedding IS NOT NULL THEN vec_to_json(embedding) END, source, session, ts, importance, meta%s "
                          "FROM r" % cols):
        out[row[0]] = {"text": row[1], "emb": as_f32(json.loads(row[2])) if row[2] else None, "source": row[3],
                       "session": row[4], "ts": row[5], "importance": row[6],
                       "meta": json.loads(row[7]) if row[7] else None, "cols": list(row[8:])}
    db.close()
    return out


def node_script(script, *args):
    """Run a builder with Node (npm packages of test/interop); None when it cannot run."""
    r = subprocess.run(["node", os.path.join(INTEROP, script)] + list(args), capture_output=True, text=True,
                       cwd=INTEROP, timeout=300)
    check(r.returncode == 0, "%s failed (%d): %s%s (npm ci --prefix %s installs its packages)" % (
        script, r.returncode, r.stdout[-2000:], r.stderr[-2000:], INTEROP))
    return r.returncode == 0


# ---------------------------------------------------------------- LangGraph

def lg_embed(text):
    """A deterministic stand-in for the embedder (4 values from the text)."""
    h = [(sum(ord(c) * (i + 3) ** k for k, c in enumerate(text)) % 1000) / 500.0 - 1 for i in range(4)]
    return [x if x else 0.5 for x in h]


def lg_put(db, ns, key, value_json, fields, ttl=None):
    """_prepare_batch_PUT_queries' two statements for one put (base.py l. 378-431): the item (its value as
    orjson's compact bytes), then one vector per (field name, text) LangGraph embedded; fields None is a
    put with index=False."""
    now = time.time()
    expires_at = None
    if ttl is not None:
        import datetime
        expires_at = datetime.datetime.fromtimestamp(now, datetime.timezone.utc) + datetime.timedelta(minutes=ttl)
    db.execute("INSERT OR REPLACE INTO store (prefix, key, value, created_at, updated_at, expires_at, ttl_minutes) "
               "VALUES (?, ?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP, ?, ?)",
               (ns, key, value_json.encode(), expires_at.isoformat(sep=" ") if expires_at else None, ttl))
    if fields:
        db.execute("INSERT OR REPLACE INTO store_vectors (prefix, key, field_name, embedding, created_at, "
                   "updated_at) VALUES %s" % ",".join(["(?, ?, ?, ?, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"] *
                                                       len(fields)),
                   [x for name, text in fields for x in (ns, key, name, f32(lg_embed(text)))])
    db.commit()


# One value and every path form, as langgraph-checkpoint-sqlite 3.1.1 stored and embedded it: the value
# (orjson's bytes: keys in order, no spaces), then (field_name, text) in the order of its embed call, recorded
# from a run of that release with index={"text_fields": [these paths]}.
LG_VALUE = ('{"text":"hello","profile":{"bio":"I like C","age":41,"nested":{"z":1,"a":["x","\u00e9"]}},'
            '"tags":["red","green","blue"],"one":["solo"],"empty":[],"nul":null,"num":3.0,"int":7,"flag":true,'
            '"big":1e100,"small":1e-7,"a":{"b":"B","c":2,"d":null},"b":"bee","items":[{"name":"n1"},{"nope":1},'
            '{"name":null},{"name":{"k":"v"}}],"uni":"\u65e5\u672c\u8a9e"}')
LG_DOLLAR = ('{"a": {"b": "B", "c": 2, "d": null}, "b": "bee", "big": 1e+100, "empty": [], "flag": true, "int": 7, '
             '"items": [{"name": "n1"}, {"nope": 1}, {"name": null}, {"name": {"k": "v"}}], "nul": null, '
             '"num": 3.0, "one": ["solo"], "profile": {"age": 41, "bio": "I like C", "nested": {"a": ["x", '
             '"\u00e9"], "z": 1}}, "small": 1e-07, "tags": ["red", "green", "blue"], "text": "hello", '
             '"uni": "\u65e5\u672c\u8a9e"}')
LG_PROFILE = '{"age": 41, "bio": "I like C", "nested": {"a": ["x", "\u00e9"], "z": 1}}'
LG_FIELDS = [
    ("text", "hello"), ("profile.bio", "I like C"), ("profile", LG_PROFILE), ("profile.age", "41"),
    ("tags[*].0", "red"), ("tags[*].1", "green"), ("tags[*].2", "blue"), ("tags[0]", "red"), ("tags[-1]", "blue"),
    ("tags", '["red", "green", "blue"]'), ("one[*]", "solo"), ("empty", "[]"), ("num", "3.0"), ("int", "7"),
    ("flag", "True"), ("big", "1e+100"), ("small", "1e-07"),
    ("{a,b}.0", '{"b": "B", "c": 2, "d": null}'), ("{a,b}.1", "bee"),
    ("{text,nul,missing,profile.bio}.0", "hello"), ("{text,nul,missing,profile.bio}.1", "I like C"),
    ("a.{b,c,d}.0", "B"), ("a.{b,c,d}.1", "2"), ("items[*].name.0", "n1"), ("items[*].name.1", '{"k": "v"}'),
    ("$", LG_DOLLAR), ("", LG_DOLLAR),
    ("*.0", "hello"), ("*.1", LG_PROFILE), ("*.2", '["red", "green", "blue"]'), ("*.3", '["solo"]'), ("*.4", "[]"),
    ("*.5", "3.0"), ("*.6", "7"), ("*.7", "True"), ("*.8", "1e+100"), ("*.9", "1e-07"),
    ("*.10", '{"b": "B", "c": 2, "d": null}'), ("*.11", "bee"),
    ("*.12", '[{"name": "n1"}, {"nope": 1}, {"name": null}, {"name": {"k": "v"}}]'), ("*.13", "\u65e5\u672c\u8a9e"),
    ("a.*.0", "B"), ("a.*.1", "2"), ("uni", "\u65e5\u672c\u8a9e"), ("profile.nested", '{"a": ["x", "\u00e9"], "z": 1}'),
]


def langgraph():
    p = path("langgraph.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.LANGGRAPH)
    db.commit()
    # 1. every path form
    lg_put(db, "users.alice", "k1", LG_VALUE, LG_FIELDS)
    # 2. the docstring's {"fields": ["text"]}: SqliteStore reads text_fields, so the whole value is
    #    embedded under "$" as json.dumps(value, sort_keys=True, ensure_ascii=False)
    doc = {"text": "Python tutorial", "n": 1, "\u00e9": "\u00fc", "x": [1.5, None, True], "q": "a\"b\\c\n"}
    doc_json = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    lg_put(db, "docs", "d1", doc_json, [("$", json.dumps(doc, sort_keys=True, ensure_ascii=False))])
    # 3. stale vectors: a put with index=False later (its old vectors stay), and a list that shrank
    lg_put(db, "users.bob", "k2", '{"text":"old text","tags":["a","b","c"]}',
           [("text", "old text"), ("tags[*].0", "a"), ("tags[*].1", "b"), ("tags[*].2", "c")])
    lg_put(db, "users.bob", "k3", '{"text":"kept"}', [("text", "kept")], ttl=5)
    time.sleep(1.2)  # (LangGraph's times are whole seconds)
    lg_put(db, "users.bob", "k2", '{"text":"new text","tags":["x"]}', None)  # index=False
    # 4. an orphan (its item deleted: SqliteStore never enables foreign keys, so nothing cascades)
    lg_put(db, "users.carol", "k4", '{"text":"gone"}', [("text", "gone")])
    db.execute("DELETE FROM store WHERE prefix = 'users.carol'")
    db.commit()
    items = {(r[0], r[1]): r[2:] for r in db.execute(
        "SELECT prefix, key, created_at, updated_at, expires_at, ttl_minutes FROM store")}
    vrows = list(db.execute("SELECT rowid, prefix, key, field_name, updated_at FROM store_vectors ORDER BY rowid"))
    db.close()
    dst = path("langgraph.h5")
    rep = migrate(p, dst)
    got = records(dst)
    check(rep["schema"] == "langgraph" and rep["store"]["metric"] == "cosine", "langgraph: %r" % rep)
    texts = dict(LG_FIELDS)
    for rowid, ns, key, field, vupd in vrows:
        r = got.get(rowid)
        if ns == "users.alice":
            check(r is not None and r["text"] == texts[field],
                  "langgraph field %r: %r, LangGraph embedded %r" % (field, r and r["text"], texts[field]))
            check(r is not None and r["emb"] == as_f32(lg_embed(texts[field])), "langgraph %r: embedding" % field)
        elif ns == "docs":
            check(r is not None and r["text"] == json.dumps(doc, sort_keys=True, ensure_ascii=False),
                  "langgraph $ of the fields config: %r" % (r and r["text"]))
    check(len([x for x in vrows if x[1] == "users.alice"]) == len(LG_FIELDS), "langgraph: the put's vectors")
    # stale: k2's text vector is written with the new text and no embedding; tags[*].1/.2 are gone
    # (skipped as stale_vector), tags[*].0 is no longer a name LangGraph gives ["x"] (stale too)
    by_field = {(x[1], x[2], x[3]): x[0] for x in vrows}
    k2 = got.get(by_field[("users.bob", "k2", "text")])
    check(k2 is not None and k2["text"] == "new text" and k2["emb"] is None and k2["meta"].get("stale_vector") is True,
          "langgraph stale vector: %r" % k2)
    check(rep.get("stale_vectors") == 1 and rep["skipped"].get("stale_vector") == 3,
          "langgraph stale counts: %r %r" % (rep.get("stale_vectors"), rep["skipped"]))
    check(all(by_field[("users.bob", "k2", f)] not in got for f in ("tags[*].0", "tags[*].1", "tags[*].2")),
          "langgraph: the gone fields are not records")
    ex = [e for e in rep["skipped_examples"] if e["reason"] == "stale_vector"]
    check(ex and "not in the item's value now" in ex[0]["detail"] and "without this field being embedded again"
          in ex[0]["detail"], "langgraph stale example: %r" % ex)
    check(any("older than their item's last put" in n for n in rep["notes"]), "langgraph stale note: %r" % rep["notes"])
    # the orphan
    check(rep["skipped"].get("orphan") == 1 and by_field[("users.carol", "k4", "text")] not in got,
          "langgraph orphan: %r" % rep["skipped"])
    # times: ts is the item's updated_at; meta keeps created_at, updated_at, expires_at, ttl_minutes and the
    # vector's own time
    k3 = got[by_field[("users.bob", "k3", "text")]]
    cr, up, exp, ttl = items[("users.bob", "k3")]
    check(k3["meta"]["created_at"] == cr and k3["meta"]["updated_at"] == up and k3["meta"]["expires_at"] == exp and
          k3["meta"]["ttl_minutes"] == 5.0 and k3["meta"]["embedded_at"] == up and exp and "+00:00" in exp,
          "langgraph times: %r vs %r" % (k3["meta"], items[("users.bob", "k3")]))
    check(k3["ts"] == int(time.mktime(time.strptime(up + " UTC", "%Y-%m-%d %H:%M:%S %Z"))) - time.timezone,
          "langgraph ts: %r (updated_at %s)" % (k3["ts"], up))
    # the SQL function the plain script uses gives the same texts
    db = connect()
    for name, text in LG_FIELDS:
        got_t = db.execute("SELECT h5mem_langgraph_text(?, ?)", (LG_VALUE.encode(), name)).fetchone()[0]
        check(got_t == text, "h5mem_langgraph_text(%r): %r, LangGraph %r" % (name, got_t, text))
    check(db.execute("SELECT h5mem_langgraph_text('{\"c\":[1,2]}', 'c.0')").fetchone()[0] is None,
          "content.0 is no name LangGraph gives a list's element")
    expect_error(db, "SELECT h5mem_langgraph_text('{bad', 'x')", "not JSON")
    db.close()


# ---------------------------------------------------------------- LangChain SQLiteVec

def langchain():
    p = path("langchain.db")
    db = sqlite3.connect(p)
    db.enable_load_extension(True)
    db.load_extension(VEC0)
    table, dim = "state_union", 16
    layouts.langchain(db, table, dim)  # (create_table_if_not_exists, statement for statement)
    rng = random.Random(27)
    vecs = {}
    for i in range(300):  # unnormalised vectors: L2 and cosine rank them differently
        v = [rng.gauss(0, 1) * rng.choice((0.2, 1, 5)) for _ in range(dim)]
        db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES (?, ?, ?)" % table,
                   ("passage %d" % i, json.dumps({"i": i}), f32(v)))
        vecs[i + 1] = as_f32(v)
    db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES (?, ?, ?)" % table,
               ("has a NUL\x00 byte", "{}", f32([1.0] * dim)))
    db.commit()
    # the class's similarity search (l. 148-159); the row with the NUL byte (301), which the store cannot
    # hold, left out of its answers
    queries = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(10)]
    theirs = [[r[0] for r in db.execute(
        "SELECT e.rowid, distance FROM %s AS e INNER JOIN %s_vec AS v on v.rowid = e.rowid WHERE "
        "v.text_embedding MATCH ? AND k = ? ORDER BY distance" % (table, table), (f32(qv), 11)) if r[0] != 301][:10]
        for qv in queries]
    db.close()
    dst = path("langchain.h5")
    rep = migrate(p, dst)
    check(rep["store"]["metric"] == "l2" and rep["dim"] == dim and rep["dim_from"] == "source schema" and
          rep.get("vec_table", {}).get("distance_metric") == "l2", "langchain: metric and dim from _vec: %r" % rep)
    ex = [e for e in rep["skipped_examples"] if e["reason"] == "bad_text"]
    check(rep["skipped"].get("bad_text") == 1 and ex and ex[0]["detail"] ==
          "text holds a NUL byte (at byte 9), which no HDF5 string can hold", "langchain NUL: %r" % ex)
    mdb = connect()
    mdb.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
    agree = 0
    for qv, want in zip(queries, theirs):
        ours = [r[0] for r in mdb.execute("SELECT id FROM vec_search('m', ?, 10)", (f32(qv),))]
        agree += ours == want
    mdb.close()
    check(agree == len(queries), "langchain: %d of %d top-10 lists equal SQLiteVec's own" % (agree, len(queries)))
    # a _vec declared with distance_metric=cosine makes a cosine store
    p2 = path("langchain_cos.db")
    db = sqlite3.connect(p2)
    db.enable_load_extension(True)
    db.load_extension(VEC0)
    db.execute("CREATE TABLE docs (rowid INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT, metadata BLOB, "
               "text_embedding BLOB)")
    db.execute("CREATE VIRTUAL TABLE docs_vec USING vec0(rowid INTEGER PRIMARY KEY, text_embedding float[4] "
               "distance_metric=cosine)")
    db.execute("INSERT INTO docs(text, metadata, text_embedding) VALUES ('a', '{}', ?)", (f32([1, 2, 3, 4]),))
    db.commit()
    db.close()
    rep = migrate(p2, path("langchain_cos.h5"))
    check(rep["store"]["metric"] == "cosine" and rep["dim"] == 4, "langchain cosine _vec: %r" % rep["store"])


# ---------------------------------------------------------------- OpenClaw 2026.9.6

# OPENCLAW_AGENT_SCHEMA_SQL (npm openclaw 2026.9.6, dist/openclaw-agent-board-schema-vd3Vff_q.mjs l. 3, decoded:
# its lines 707-784), the memory index's tables copied verbatim (the same in 2026.8.2)
OC_TABLES = """CREATE TABLE IF NOT EXISTS memory_index_meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS memory_index_sources (
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory',
  hash TEXT NOT NULL,
  mtime REAL NOT NULL,
  size INTEGER NOT NULL,
  UNIQUE (path, source)
) STRICT;

CREATE TABLE IF NOT EXISTS memory_index_chunks (
  chunk_rowid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory',
  start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL,
  hash TEXT NOT NULL,
  model TEXT NOT NULL,
  text TEXT NOT NULL,
  embedding BLOB NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE IF NOT EXISTS memory_index_chunk_recall_metadata (
  chunk_id TEXT PRIMARY KEY,
  importance INTEGER CHECK (importance IS NULL OR importance BETWEEN 1 AND 10),
  triggers TEXT,
  project_key TEXT,
  FOREIGN KEY (chunk_id) REFERENCES memory_index_chunks(id) ON DELETE CASCADE
) STRICT;

CREATE TABLE IF NOT EXISTS memory_index_chunk_provenance (
  chunk_id TEXT PRIMARY KEY,
  origin_class TEXT NOT NULL CHECK (origin_class IN ('owner', 'agent', 'untrusted', 'system')),
  session_kind TEXT NOT NULL CHECK (session_kind IN ('interactive', 'cron', 'heartbeat', 'subagent', 'unknown')),
  observed_at INTEGER NOT NULL,
  supersedes_key TEXT,
  FOREIGN KEY (chunk_id) REFERENCES memory_index_chunks(id) ON DELETE CASCADE
) STRICT;
"""
# dist/manager-source-index-kernel-Bb4WOObH.mjs l. 14-53, as its kysely 0.29.5 compiles them
OC_CHUNK = ('insert into "memory_index_chunks" ("id", "path", "source", "start_line", "end_line", "hash", "model", '
            '"text", "embedding", "updated_at") values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict ("id") do update '
            'set "hash" = "excluded"."hash", "model" = "excluded"."model", "text" = "excluded"."text", "embedding" = '
            '"excluded"."embedding", "updated_at" = "excluded"."updated_at"')
OC_RECALL = ('insert into "memory_index_chunk_recall_metadata" ("chunk_id", "importance", "triggers", "project_key") '
             'values (?, ?, ?, ?) on conflict ("chunk_id") do update set "importance" = "excluded"."importance", '
             '"triggers" = "excluded"."triggers", "project_key" = "excluded"."project_key"')
OC_PROV = ('insert into "memory_index_chunk_provenance" ("chunk_id", "origin_class", "session_kind", "observed_at", '
           '"supersedes_key") values (?, ?, ?, ?, ?) on conflict ("chunk_id") do update set "origin_class" = '
           '"excluded"."origin_class", "session_kind" = "excluded"."session_kind", "observed_at" = '
           '"excluded"."observed_at", "supersedes_key" = "excluded"."supersedes_key"')


def openclaw():
    import hashlib
    p = path("openclaw-agent.sqlite")
    db = sqlite3.connect(p, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    db.executescript(OC_TABLES)
    model, now = "text-embedding-3-small", 1767225600123
    chunks = [  # (path, source, start, end, text, embedding, importance, triggers, project_key, provenance)
        ("MEMORY.md", "memory", 1, 2, "# Memory\n- Prefers metric units", [0.1, -0.2, 0.3, 0.4], 8, "units; metric",
         None, ("agent", "unknown", 1767225000456, None)),
        ("MEMORY.md", "memory", 3, 3, "- Works on h5mem", [0.5, 0.6, -0.7, 0.8], None, None,
         "github.com/Acme/h5mem; path:/work/main", ("agent", "unknown", 1767225000456, None)),
        ("sessions/main/3f1c2a.jsonl", "sessions", 1, 2, "User: hi\nAssistant: hello", [0.0, 1.0, 0.0, 0.0], None,
         None, None, ("owner", "interactive", 1767225099000, "k-old")),
    ]
    want = {}
    db.execute("BEGIN IMMEDIATE")
    for n, (cp, src, a, b, text, emb, imp, trig, proj, prov) in enumerate(chunks):
        h = hashlib.sha256(text.encode()).hexdigest()
        cid = hashlib.sha256(("%s:%s:%d:%d:%s:%s" % (src, cp, a, b, h, model)).encode()).hexdigest()
        db.execute(OC_CHUNK, (cid, cp, src, a, b, h, model, text, struct.pack("<%dd" % len(emb), *emb), now))
        if n < 2:  # (the third chunk: a file written before the side tables, none for it)
            db.execute(OC_RECALL, (cid, imp, trig, proj))
            db.execute(OC_PROV, (cid,) + prov)
        want[n + 1] = (cid, imp, trig, proj, prov if n < 2 else None)
    db.execute("INSERT INTO memory_index_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
               "value=excluded.value", ("memory_index_meta_v1", json.dumps({"model": model, "provider": "openai",
                                                                            "vectorDims": 4})))
    db.execute("COMMIT")
    db.close()
    dst = path("openclaw.h5")
    rep = migrate(p, dst)
    got = records(dst)
    check(rep["schema"] == "openclaw" and rep["rows_written"] == 3 and not any("not migrated" in n for n in
          rep["notes"]), "openclaw 2026.9: %r" % rep)
    for i, (cid, imp, trig, proj, prov) in want.items():
        r = got.get(i)
        m = r["meta"] if r else {}
        check(r is not None and m.get("openclaw_id") == cid and (r["importance"] == imp if imp else
              r["importance"] is None), "openclaw %d importance: %r" % (i, r))
        check(m.get("triggers") == trig and m.get("project_key") == proj, "openclaw %d recall: %r" % (i, m))
        wp = None if prov is None else {"origin_class": prov[0], "session_kind": prov[1], "observed_at": prov[2],
                                        "supersedes_key": prov[3]}
        check(m.get("provenance") == wp, "openclaw %d provenance: %r, want %r" % (i, m.get("provenance"), wp))


# ---------------------------------------------------------------- mem0

def mem0():
    out = path("mem0")
    os.mkdir(out)
    if not node_script("mem0_build.js", out):
        return
    with open(os.path.join(out, "expected.json")) as f:
        exp = json.load(f)
    src = os.path.join(out, "vector_store.db")
    dst = path("mem0.h5")
    rep = migrate(src, dst)
    check(rep["schema"] == "mem0" and rep["complete"] and rep["rows_written"] == len(exp["memories"]) and
          rep["dim"] == exp["dim"] and rep["store"]["metric"] == "cosine", "mem0: %r" % rep)
    check(rep["mem0"] == {"entities": os.path.join(out, "vector_store_entities.db"),
                          "history": os.path.join(out, "history.db")}, "mem0 files: %r" % rep.get("mem0"))
    got = records(dst, ", mem0_id, user_id, agent_id, run_id")
    by_uuid = {r["cols"][0]: (i, r) for i, r in got.items()}
    dropped = {"data", "textLemmatized", "user_id", "agent_id", "run_id"}
    for mm in exp["memories"]:
        i, r = by_uuid.get(mm["id"], (None, None))
        if not check(r is not None, "mem0: memory %s (%s) not migrated" % (mm["id"], mm["label"])):
            continue
        check(r["text"] == mm["text"] and r["emb"] == mm["embedding"], "mem0 %s: text/embedding" % mm["label"])
        check(r["cols"][1:] == [mm["user_id"], mm["agent_id"], mm["run_id"]], "mem0 %s scopes: %r" % (
            mm["label"], r["cols"]))
        payload = json.loads(mm["payload_text"])
        want_meta = {k: v for k, v in payload.items() if k not in dropped}
        hist = [{"action": h["action"], "previous_value": h["previous_value"], "new_value": h["new_value"],
                 "created_at": h["created_at"], "updated_at": h["updated_at"], "is_deleted": h["is_deleted"]}
                for h in sorted(exp["history_rows"], key=lambda h: h["id"]) if h["memory_id"] == mm["id"]]
        want_meta["history"] = hist
        check(r["meta"] == want_meta, "mem0 %s meta: %r, want %r" % (mm["label"], r["meta"], want_meta))
        created = payload["createdAt"]
        check(r["ts"] == int(time.mktime(time.strptime(created[:19], "%Y-%m-%dT%H:%M:%S"))) - time.timezone,
              "mem0 %s ts %r vs %s" % (mm["label"], r["ts"], created))
    # entities and mentions: each entity of the entity store, a mention per linked memory
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
    ents = {json.loads(r[3])["mem0_id"]: (r[0], r[1], r[2]) for r in
            db.execute("SELECT id, name, type, meta FROM m_entities")}
    ment = set(db.execute("SELECT memory_id, entity_id FROM m_mentions").fetchall())
    db.close()
    want_ment = set()
    for e in exp["entities"]:
        check(e["id"] in ents and ents[e["id"]][1:] == (e["text"], e["entityType"]), "mem0 entity %s: %r" % (
            e["text"], ents.get(e["id"])))
        for mid in e["linkedMemoryIds"]:
            if e["id"] in ents and mid in by_uuid:
                want_ment.add((by_uuid[mid][0], ents[e["id"]][0]))
    check(len(ents) == len(exp["entities"]) and ment == want_ment and len(ment) > len(exp["entities"]),
          "mem0 mentions: %d of %d, %d entities" % (len(ment & want_ment), len(want_ment), len(ents)))
    check(rep["graph_written"]["entities"] == len(exp["entities"]) and
          rep["graph_written"]["mentions"] == len(want_ment), "mem0 graph report: %r" % rep["graph_written"])
    # run again: everything there already (resumed, complete)
    rep = migrate(src, dst)
    check(rep["resumed"] and rep["complete"] and rep["rows_written"] == 0 and
          rep["graph_written"]["skipped"]["duplicate"] == len(exp["entities"]) + len(want_ment), "mem0 rerun: %r" % rep)
    # into an existing store without the declared columns: the UUID and the scopes go into meta
    plain = path("mem0_plain.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE p USING h5mem(path=%s, dim=%d)" % (q(plain), exp["dim"]))
    db.execute("INSERT INTO p(id, text) VALUES (1000000, 'already here')")
    db.close()
    rep = migrate(src, plain, {"append": True})
    got = records(plain)
    check(rep["rows_written"] == len(exp["memories"]) and rep.get("columns_in_meta") == ["mem0_id", "user_id",
          "agent_id", "run_id"] and rep["ids"] == "the source's rowid (its text key in meta)", "mem0 append: %r" % rep)
    for mm in exp["memories"]:
        r = [x for x in got.values() if x["meta"] and x["meta"].get("mem0_id") == mm["id"]]
        want = {k: mm[k] for k in ("user_id", "agent_id", "run_id") if mm[k] is not None}
        check(len(r) == 1 and all(r[0]["meta"].get(k) == v for k, v in want.items()) and
              list(r[0]["meta"])[0] == "mem0_id" and "history" in r[0]["meta"],
              "mem0 append: %s's meta %r" % (mm["label"], r and r[0]["meta"]))
    # the entity store alone is refused, naming the file to migrate
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(os.path.join(out, "vector_store_entities.db")),
                                                        q(path("mem0e.h5"))), "migrate the memories' file")
    db.close()


# ---------------------------------------------------------------- LangChain.js LibSQL

def libsql():
    out = path("libsql.db")
    if not node_script("libsql_build.js", out, "8"):
        return
    with open(path("libsql.json")) as f:
        exp = json.load(f)
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(out), q(path("ls_any.h5"))), "LangChain.js LibSQL tables")
    db.close()
    for table, t in exp["tables"].items():
        dst = path("ls_%s.h5" % table)
        rep = migrate(out, dst, {"table": table})
        rows = t["rows"]
        check(rep["schema"] == "langchainjs-libsql" and rep["rows_written"] == len(rows) and rep["dim"] == 8 and
              rep["store"]["metric"] == "cosine", "libsql %s: %r" % (table, rep))
        got = records(dst)
        for row in rows:
            r = got.get(row["id"])
            check(r is not None and r["text"] == row["content"] and r["emb"] == row["embedding"] and
                  r["meta"] == row["metadata"], "libsql %s row %s: %r vs %r" % (table, row["id"], r, row))
        for qq in [x for x in exp["queries"] if x["table"] == table]:
            mdb = connect()
            mdb.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
            ours = mdb.execute("SELECT id, distance FROM vec_search('m', ?, ?)",
                               (json.dumps(qq["embedding"]), qq["k"])).fetchall()
            mdb.close()
            check([r[0] for r in ours] == [h["id"] for h in qq["results"]] and
                  all(abs(a[1] - h["score"]) < 1e-5 for a, h in zip(ours, qq["results"])),
                  "libsql %s query %r: ours %r, LangChain's %r" % (table, qq.get("text"), ours, qq["results"]))
        check(not any(r["id"] in got for r in [{"id": i} for i in t.get("deleted_ids", [])]),
              "libsql %s: a deleted row came back" % table)


# ---------------------------------------------------------------- every layout

def examples():
    """Three examples of each reason, each with its detail."""
    p = path("reasons.db")
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, embedding BLOB)")
    for i in range(1, 6):
        db.execute("INSERT INTO notes VALUES (?, ?, ?)", (i, "  ", f32([1, 2, 3])))
    for i in range(6, 11):
        db.execute("INSERT INTO notes VALUES (?, ?, ?)", (i, "ok %d" % i, f32([1, 2])))
    db.execute("INSERT INTO notes VALUES (11, 'fine', ?)", (f32([1, 2, 3]),))
    db.commit()
    db.close()
    rep = migrate(p, path("reasons.h5"), {"table": "notes", "dim": 3})
    ex = rep["skipped_examples"]
    for reason, n in (("empty_text", 5), ("wrong_dimension", 5)):
        mine = [e for e in ex if e["reason"] == reason]
        check(rep["skipped"][reason] == n and len(mine) == 3 and all(e.get("detail") for e in mine),
              "examples of %s: %r" % (reason, mine))
    check([e["detail"] for e in ex if e["reason"] == "empty_text"][0] == "the text is white space only" and
          [e["detail"] for e in ex if e["reason"] == "wrong_dimension"][0] == "2 float32 values; the store has dim=3",
          "details: %r" % ex)
    # a layout whose rows are all skipped is an error, and leaves no new store behind
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"table\": \"notes\", \"dim\": 5}')" % (
        q(p), q(path("none.h5"))), "none of the 11 rows read from notes was written: 6 wrong_dimension (row 6, id "
        "6: 2 float32 values; the store has dim=5); 5 empty_text (row 1, id 1: the text is white space only); the "
        "new destination is removed")
    db.close()
    check(not os.path.exists(path("none.h5")), "an all-skipped migration left its new store")


def main():
    for t in (langgraph, langchain, openclaw, mem0, libsql, examples):
        t()
    shutil.rmtree(TMP, ignore_errors=True)
    finish()


main()
