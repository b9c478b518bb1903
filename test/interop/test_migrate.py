"""h5mem_migrate: SQLite memory stores moved into h5mem stores.

Fixture databases are built here with the exact schemas of each source
(docs/MIGRATION.md names the versions): OpenClaw's legacy index (JSON
embeddings, FTS5 and a real sqlite-vec chunks_vec) and its memory_index_*
tables (float64 BLOBs), sqlite-vec vec0 tables (written by sqlite-vec
v0.1.9 itself: metadata, auxiliary, partition and text primary keys),
ClawhDF5's migration schema with its graph, LangChain's SQLiteVec and
LangGraph's SqliteStore, and a plain table / query.  Each holds known rows
and bad ones (wrong dimension, NaN, empty text, malformed JSON, truncated
BLOBs, wrong types).  Each is migrated and every field of every record is
compared through the h5mem table and read back with h5py; skipped rows must
be counted under the right reason.  Also: a dry run writes nothing; a
non-empty destination is refused, then replaced with overwrite; a migration
stopped by a limit, and one whose process is killed, resume when run again;
the sources' bytes and mtimes never change.
"""
import hashlib
import json
import math
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sql"))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402
import layouts  # noqa: E402  (test/interop, this file's folder)

SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")
TMP = tempfile.mkdtemp(prefix="h5mem_migrate_")
SOURCES = []  # (path, sha256, mtime) of every fixture, checked at the end


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def f64(v):
    return struct.pack("<%dd" % len(v), *v)


def as_f32(v):
    return list(np.asarray(v, dtype="<f4"))


def path(name):
    return os.path.join(TMP, name)


def with_vec(db):
    db.enable_load_extension(True)
    db.load_extension(VEC0)
    return db


def seal(p):
    """Record a fixture's bytes and mtime (it must never change)."""
    with open(p, "rb") as f:
        SOURCES.append((p, hashlib.sha256(f.read()).hexdigest(), os.stat(p).st_mtime_ns))


def migrate(src, dst, opts=None):
    db = connect()
    sql = "SELECT h5mem_migrate(?, ?%s)" % (", ?" if opts is not None else "")
    args = (src, dst) + ((json.dumps(opts),) if opts is not None else ())
    rep = json.loads(db.execute(sql, args).fetchone()[0])
    db.close()
    return rep


def records(dst):
    """Every record of the store, by id, through the h5mem table."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
    rows = {}
    for r in db.execute("SELECT id, text, embedding, source, session, tags, ts, tier, importance, meta FROM m"):
        rows[r[0]] = dict(zip(["id", "text", "emb", "source", "session", "tags", "ts", "tier", "importance", "meta"], r))
        if r[2] is not None:
            rows[r[0]]["emb"] = list(np.frombuffer(r[2], "<f4"))
    db.close()
    return rows


def decl_columns(dst, names):
    """The declared columns names of every record, by id, through the h5mem table."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
    rows = {r[0]: dict(zip(names, r[1:])) for r in db.execute("SELECT id, %s FROM m" % ", ".join(names))}
    db.close()
    return rows


def same_vec(a, b):
    return a is not None and b is not None and len(a) == len(b) and all(
        x == y for x, y in zip(as_f32(a), as_f32(b)))


def compare(name, got, want):
    """want: id -> dict of expected fields (emb as a list of floats)."""
    check(set(got) == set(want), "%s: ids %s, expected %s" % (name, sorted(got), sorted(want)))
    for i, w in want.items():
        g = got.get(i)
        if g is None:
            continue
        for k, v in w.items():
            if k == "emb":
                ok = (v is None and g["emb"] is None) or same_vec(g["emb"], v)
            elif k == "meta":
                ok = g["meta"] is not None and json.loads(g["meta"]) == v
            elif k == "importance" and v is None:
                ok = g[k] is None
            else:
                ok = g[k] == v
            check(ok, "%s id %d: %s = %r, expected %r" % (name, i, k, g[k], v))


def h5_ids_texts(dst):
    with h5py.File(dst, "r") as f:
        m = f["memories"]
        live = np.ones(m["id"].shape[0], bool)
        live[m["deleted"][:]] = False
        return (list(m["id"][live]), [t.decode() for t in m["text"][live]], m["embedding"][live],
                dict(f.attrs))


def check_h5(name, dst, want):
    ids, texts, emb, attrs = h5_ids_texts(dst)
    check(sorted(ids) == sorted(want), "%s: h5py ids %s" % (name, ids))
    for i, t, e in zip(ids, texts, emb):
        w = want.get(int(i))
        if w is None:
            continue
        if "text" in w:
            check(t == (w["text"] or ""), "%s: h5py text of %d: %r" % (name, i, t))
        if w.get("emb") is not None:
            check(same_vec(list(e), w["emb"]), "%s: h5py embedding of %d" % (name, i))
    return attrs


def skipped(rep, reason):
    return rep["skipped"].get(reason, 0)


# ---------------------------------------------------------------- OpenClaw legacy

def openclaw_legacy():
    p = path("openclaw_legacy.sqlite")
    db = with_vec(sqlite3.connect(p))
    rows = [  # id, path, source, text, embedding JSON, updated_at (ms)
        ("c1", "MEMORY.md", "memory", "we hiked up Mount Tam", "[0.1, 0.2, 0.3]", 1700000000123),
        ("c2", "sessions/abc.jsonl", "sessions", "user asked about ducks", "[1, -2, 3.5e-3]", 1700000100000),
        ("c3", "MEMORY.md", "memory", "no vector yet", "[]", 1700000200000),
        ("bad-dim", "MEMORY.md", "memory", "two values", "[0.5, 0.5]", 1700000300000),
        ("bad-json", "MEMORY.md", "memory", "broken", "[0.1, oops]", 1700000400000),
        ("bad-inf", "MEMORY.md", "memory", "too big", "[1e39, 0, 0]", 1700000500000),
        ("empty", "MEMORY.md", "memory", "", "[0, 0, 1]", 1700000600000),
    ]
    meta = layouts.openclaw_legacy(db, 3, rows, vec_ids=("c1", "c2"))
    db.commit()
    db.close()
    seal(p)
    dst = path("openclaw_legacy.h5")
    rep = migrate(p, dst)
    check(rep["schema"] == "openclaw-legacy", "openclaw legacy: schema %s" % rep["schema"])
    check(rep["rows_read"] == 7 and rep["rows_written"] == 3, "openclaw legacy: %r" % rep)
    # 1e39 is beyond float32: the JSON reader refuses it as malformed
    check(skipped(rep, "wrong_dimension") == 1 and skipped(rep, "bad_embedding") == 2 and
          skipped(rep, "empty_text") == 1, "openclaw legacy: skipped %r" % rep["skipped"])
    check(rep["dim"] == 3 and rep["dim_from"] == "source schema", "openclaw legacy: dim")
    check(rep["embedding_encodings"] == {"json": 2} and rep["without_embedding"] == 1,
          "openclaw legacy: encodings %r" % rep["embedding_encodings"])
    check(rep["tables"]["chunks_vec"] == 2 and rep["tables"]["chunks_fts"] == 7, "openclaw legacy: tables")
    want = {}
    for i, (cid, pth, src, text, emb, t) in enumerate(rows[:3]):
        want[i + 1] = {"text": text, "emb": json.loads(emb) or None, "source": src,
                       "session": pth if src == "sessions" else None, "ts": t // 1000,
                       "meta": {"openclaw_id": cid, "path": pth, "start_line": i + 1, "end_line": i + 2,
                                "hash": "h%d" % i, "model": "text-embedding-3-small", "updated_at": t}}
    compare("openclaw legacy", records(dst), want)
    attrs = check_h5("openclaw legacy", dst, want)
    check(attrs.get("migrated_provider") == "openai" and attrs.get("migrated_model") == "text-embedding-3-small"
          and attrs.get("migrated_dims") == "3" and json.loads(attrs.get("migrated_meta")) == meta
          and attrs.get("embedder") == "openai/text-embedding-3-small"
          and attrs.get("migrated_schema") == "openclaw-legacy", "openclaw legacy: attributes %r" % attrs)


# ---------------------------------------------------------------- OpenClaw current

def openclaw_current():
    p = path("openclaw_agent.sqlite")
    db = sqlite3.connect(p)
    db.executescript("""
    CREATE TABLE memory_index_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
    CREATE TABLE memory_index_sources (id INTEGER PRIMARY KEY, path TEXT NOT NULL,
        source TEXT NOT NULL DEFAULT 'memory', hash TEXT NOT NULL, mtime REAL NOT NULL,
        size INTEGER NOT NULL, UNIQUE (path, source)) STRICT;
    CREATE TABLE memory_index_chunks (chunk_rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL,
        end_line INTEGER NOT NULL, hash TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL,
        embedding BLOB NOT NULL, updated_at INTEGER NOT NULL) STRICT;
    CREATE TABLE memory_embedding_cache (provider TEXT NOT NULL, model TEXT NOT NULL,
        provider_key TEXT NOT NULL, hash TEXT NOT NULL, embedding BLOB NOT NULL, dims INTEGER,
        updated_at INTEGER NOT NULL, PRIMARY KEY (provider, model, provider_key, hash)) STRICT;
    CREATE TABLE memory_index_state (id INTEGER PRIMARY KEY CHECK (id = 1), revision INTEGER NOT NULL) STRICT;
    """)
    db.execute("INSERT INTO memory_index_meta VALUES ('memory_index_meta_v1', ?)",
               (json.dumps({"model": "nomic-embed-text", "provider": "ollama", "chunkTokens": 400,
                            "chunkOverlap": 80, "vectorDims": 4}),))
    vals = [[0.125, -1.5, 2.0, 1e-3], [3.0, 2.0, 1.0, 0.0], [0.1, 0.2, 0.3, 0.4]]
    rows = [(10, "a", vals[0]), (11, "b", vals[1]), (15, "c", vals[2])]
    for rid, cid, v in rows:
        db.execute("INSERT INTO memory_index_chunks VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (rid, cid, "memory/%s.md" % cid, "memory", 1, 9, "h", "nomic-embed-text",
                    "memory %s" % cid, f64(v), 1750000000000 + rid))
    bad = [(20, "trunc", f64([1, 2, 3, 4])[:-3]), (21, "nan", f64([1, float("nan"), 0, 0])),
           (22, "dim", f64([1, 2, 3])), (23, "f32", f32([1, 2, 3, 4, 5, 6, 7]))]
    for rid, cid, blob in bad:
        db.execute("INSERT INTO memory_index_chunks VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (rid, cid, "p", "memory", 1, 1, "h", "m", "bad " + cid, blob, 1))
    db.commit()
    db.close()
    seal(p)
    dst = path("openclaw_agent.h5")
    rep = migrate(p, dst)
    check(rep["schema"] == "openclaw", "openclaw: schema %s" % rep["schema"])
    check(rep["rows_written"] == 3 and skipped(rep, "bad_embedding") == 2 and
          skipped(rep, "nan_or_inf") == 1 and skipped(rep, "wrong_dimension") == 1,
          "openclaw: %r" % rep["skipped"])
    check(rep["embedding_encodings"] == {"float64_blob": 3}, "openclaw: encodings")
    want = {rid: {"text": "memory %s" % cid, "emb": v, "source": "memory", "session": None,
                  "ts": (1750000000000 + rid) // 1000,
                  "meta": {"openclaw_id": cid, "path": "memory/%s.md" % cid, "start_line": 1, "end_line": 9,
                           "hash": "h", "model": "nomic-embed-text", "updated_at": 1750000000000 + rid}}
            for rid, cid, v in rows}
    compare("openclaw", records(dst), want)
    attrs = check_h5("openclaw", dst, want)
    check(attrs.get("embedder") == "ollama/nomic-embed-text", "openclaw: embedder %r" % attrs.get("embedder"))


# ---------------------------------------------------------------- sqlite-vec

def sqlite_vec():
    p = path("vec.db")
    db = with_vec(sqlite3.connect(p))
    db.execute("CREATE VIRTUAL TABLE notes USING vec0(embedding float[3] distance_metric=cosine, "
               "user_id integer partition key, category text, score float, pinned boolean, "
               "+content text, chunk_size=8)")
    want = {}
    for i in range(1, 30):
        v = [i * 0.5, -1.0, 1.0 / i]
        cat = "a long category text %d" % i if i % 3 == 0 else "c%d" % (i % 3)
        db.execute("INSERT INTO notes(rowid, embedding, user_id, category, score, pinned, content) "
                   "VALUES (?,?,?,?,?,?,?)", (i, f32(v), i % 4, cat, i * 0.25, i % 2, "note %d" % i))
        want[i] = {"text": "note %d" % i, "emb": v,
                   "meta": {"user_id": i % 4, "category": cat, "score": i * 0.25, "pinned": bool(i % 2)}}
    for i in (4, 17):
        db.execute("DELETE FROM notes WHERE rowid = ?", (i,))
        del want[i]
    db.execute("UPDATE notes SET content = '' WHERE rowid = 9")  # empty text: skipped
    del want[9]
    # a text primary key, int8 vectors, L2
    db.execute("CREATE VIRTUAL TABLE docs USING vec0(doc_id text primary key, emb int8[4], +body text)")
    for i in range(1, 6):
        db.execute("INSERT INTO docs(doc_id, emb, body) VALUES (?, vec_int8(?), ?)",
                   ("doc-%d" % i, json.dumps([i, -i, 0, 127]), "body %d" % i))
    db.commit()
    db.close()
    seal(p)
    # two vec0 tables: detection must ask which
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(p), q(path("vec_x.h5"))), "vec0 tables")
    db.close()
    # {"declared_columns": false}: the columns no field takes in meta's JSON
    dst = path("vec_notes.h5")
    rep = migrate(p, dst, {"table": "notes", "declared_columns": False})
    check(rep["schema"] == "sqlite-vec" and rep["vec0"]["chunk_size"] == 8 and
          rep["vec0"]["text_column"] == "content" and rep["vec0"]["partition_columns"] == 1,
          "vec0: %r" % rep.get("vec0"))
    check(rep["rows_written"] == 26 and skipped(rep, "empty_text") == 1, "vec0: %r" % rep)
    check(rep["store"]["metric"] == "cosine", "vec0: metric")
    compare("vec0", records(dst), want)
    check_h5("vec0", dst, want)
    # by default they are the new store's declared columns, meta NULL
    dst = path("vec_notes_cols.h5")
    rep = migrate(p, dst, {"table": "notes"})
    check(rep["columns"] == ["user_id integer partition key", "category text", "score float", "pinned boolean"],
          "vec0 columns: %r" % rep.get("columns"))
    check(rep["rows_written"] == 26 and skipped(rep, "empty_text") == 1, "vec0 columns: %r" % rep)
    want_cols = {i: w.pop("meta") for i, w in want.items()}
    for i in want:
        want[i]["meta"] = None
        want_cols[i]["pinned"] = int(want_cols[i]["pinned"])
    got = records(dst)
    check(all(g["meta"] is None for g in got.values()), "vec0 columns: meta is NULL")
    compare("vec0 columns", got, {i: {k: v for k, v in w.items() if k != "meta"} for i, w in want.items()})
    check(decl_columns(dst, ["user_id", "category", "score", "pinned"]) == want_cols,
          "vec0 columns: values %r" % decl_columns(dst, ["user_id", "category", "score", "pinned"]))
    dst = path("vec_docs.h5")
    rep = migrate(p, dst, {"table": "docs", "declared_columns": False})
    check(rep["rows_written"] == 5 and rep["embedding_encodings"] == {"int8_blob": 5} and
          rep["store"]["metric"] == "l2", "vec0 int8: %r" % rep)
    # the vec0 rowids of a text-keyed table are 1.. in insert order
    compare("vec0 text pk", records(dst),
            {i: {"text": "body %d" % i, "emb": [i, -i, 0, 127], "meta": {"doc_id": "doc-%d" % i}}
             for i in range(1, 6)})
    dst = path("vec_docs_cols.h5")
    rep = migrate(p, dst, {"table": "docs"})
    check(rep["rows_written"] == 5 and rep["columns"] == ["doc_id text primary key"], "vec0 text pk: %r" % rep)
    check(decl_columns(dst, ["doc_id"]) == {i: {"doc_id": "doc-%d" % i} for i in range(1, 6)},
          "vec0 text pk: %r" % decl_columns(dst, ["doc_id"]))
    # a damaged copy: a truncated vector chunk and a broken rowids entry
    p2 = path("vec_damaged.db")
    with open(p, "rb") as a, open(p2, "wb") as b:
        b.write(a.read())
    db = sqlite3.connect(p2)
    db.execute("UPDATE notes_vector_chunks00 SET vectors = substr(vectors, 1, 10) WHERE _rowid_ = "
               "(SELECT min(chunk_id) FROM notes_chunks)")
    db.execute("UPDATE notes_rowids SET chunk_offset = chunk_offset + 1 WHERE rowid = 28")
    db.commit()
    db.close()
    seal(p2)
    rep = migrate(p2, path("vec_damaged.h5"), {"table": "notes"})
    check(skipped(rep, "vec0_bad_chunk") == 1 and skipped(rep, "vec0_inconsistent") == 1,
          "vec0 damaged: %r" % rep["skipped"])


# ---------------------------------------------------------------- ClawhDF5



def clawhdf5():
    p = path("zeroclaw.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.CLAWHDF5)
    want = {}
    for i in range(1, 9):
        v = [i, i * 0.5, -i, 0.25]
        ts = 1700000000.0 + i * 10 + (0.5 if i % 2 else 0)
        db.execute("INSERT INTO memory_chunks VALUES (?,?,?,?,?,?,?,?)",
                   (i, "chunk %d" % i, f32(v), "discord" if i % 2 else "api", ts, "sess-%d" % (i % 2),
                    "tag1,tag2", 1 if i == 4 else 0))
        if i != 4:
            want[i] = {"text": "chunk %d" % i, "emb": v, "source": "discord" if i % 2 else "api",
                       "session": "sess-%d" % (i % 2), "tags": "tag1,tag2", "ts": int(math.floor(ts))}
            if i % 2:
                want[i]["meta"] = {"timestamp": ts}
    db.execute("INSERT INTO memory_chunks VALUES (20, 'nan', ?, 'api', 1, 's', '', 0)", (f32([float("nan"), 0, 0, 0]),))
    db.execute("INSERT INTO memory_chunks VALUES (21, 'short', ?, 'api', 1, 's', '', 0)", (f32([1, 2]),))
    db.execute("INSERT INTO memory_chunks VALUES (22, '   ', ?, 'api', 1, 's', '', 0)", (f32([1, 2, 3, 4]),))
    db.execute("INSERT INTO memory_chunks VALUES (23, 'text type', 42, 'api', 1, 's', '', 0)")
    db.execute("INSERT INTO sessions VALUES ('sess-1', 0, 3, 'discord', 1700000000.0, 'a summary')")
    db.executemany("INSERT INTO entities VALUES (?,?,?,-1)", [(1, "Alice", "person"), (2, "Bob", "person"),
                                                               (3, "", "place")])
    db.executemany("INSERT INTO relations VALUES (?,?,?,1.0,1700000000.0)",
                   [(1, 2, "knows"), (2, 1, "knows"), (1, 99, "likes")])
    db.commit()
    db.close()
    seal(p)
    dst = path("zeroclaw.h5")
    rep = migrate(p, dst, {"batch": 3})
    check(rep["schema"] == "clawhdf5" and rep["rows_written"] == 7, "clawhdf5: %r" % rep)
    check(skipped(rep, "deleted") == 1 and skipped(rep, "nan_or_inf") == 1 and
          skipped(rep, "wrong_dimension") == 1 and skipped(rep, "empty_text") == 1 and
          skipped(rep, "bad_embedding") == 1, "clawhdf5: %r" % rep["skipped"])
    g = rep["graph"]
    check(g["status"] == "read and checked" and g["entities"] == 3 and g["relations"] == 3 and
          g["invalid_entities"] == 1 and g["dangling_relations"] == 1, "clawhdf5 graph: %r" % g)
    gw = rep["graph_written"]
    check(gw == {"entities": 2, "relations": 2, "skipped": {"invalid": 1, "dangling": 1, "duplicate": 0}},
          "clawhdf5 graph written: %r" % gw)
    with h5py.File(dst, "r") as f:
        names = [x.decode() for x in f["/graph/entities/name"][()]]
        rels = list(zip(f["/graph/relations/src"][()].tolist(), f["/graph/relations/dst"][()].tolist(),
                        [x.decode() for x in f["/graph/relations/type"][()]],
                        f["/graph/relations/ts"][()].tolist()))
    check(names == ["Alice", "Bob"], "entities in /graph: %r" % names)
    check(rels == [(1, 2, "knows", 1700000000), (2, 1, "knows", 1700000000)], "relations in /graph: %r" % rels)
    rep = migrate(p, dst, {"append": True})
    check(rep["graph_written"]["skipped"]["duplicate"] == 4 and rep["graph_written"]["entities"] == 0,
          "a second run writes the graph once: %r" % rep["graph_written"])
    compare("clawhdf5", records(dst), want)
    check_h5("clawhdf5", dst, want)
    # include_deleted brings row 4 back
    rep = migrate(p, path("zeroclaw_all.h5"), {"include_deleted": True})
    check(rep["rows_written"] == 8, "clawhdf5 include_deleted: %r" % rep["rows_written"])


# ---------------------------------------------------------------- LangChain

def langchain():
    p = path("langchain.db")
    db = with_vec(sqlite3.connect(p))
    table = "state_union"
    layouts.langchain(db, table, 3)
    want = {}
    for i in range(1, 6):
        v = [i, 0.5, -0.5]
        md = {"source": "doc%d.txt" % i, "page": i}
        db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES (?,?,?)" % table,
                   ("passage %d" % i, json.dumps(md), f32(v)))
        want[i] = {"text": "passage %d" % i, "emb": v, "meta": md}
    db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES (NULL, '{}', ?)" % table, (f32([1, 1, 1]),))
    db.execute("INSERT INTO %s(text, metadata, text_embedding) VALUES ('not json meta', 'plain', ?)" % table,
               (f32([2, 2, 2]),))
    want[7] = {"text": "not json meta", "meta": "plain"}
    db.commit()
    db.close()
    seal(p)
    dst = path("langchain.h5")
    rep = migrate(p, dst)
    check(rep["schema"] == "langchain" and rep["table"] == table, "langchain: %r" % rep)
    check(rep["rows_written"] == 6 and skipped(rep, "empty_text") == 1 and rep.get("meta_not_json") == 1,
          "langchain: %r" % rep)
    compare("langchain", records(dst), want)
    check_h5("langchain", dst, want)


# ---------------------------------------------------------------- LangGraph

def langgraph():
    p = path("langgraph.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.LANGGRAPH)
    items = [("users.alice.memories", "m1", {"text": "Alice likes tea", "kind": "pref"}),
             ("users.alice.memories", "m2", {"content": ["first part", "second part"]}),
             ("users.bob.memories", "m1", {"memory": {"text": "Bob hikes \"often\""}}),
             ("users.bob.memories", "m3", {"text": "not indexed"})]
    for prefix, key, value in items:
        # orjson.dumps gives bytes: the value is a BLOB of JSON
        db.execute("INSERT INTO store(prefix, key, value, created_at, updated_at) VALUES (?,?,?,?,?)",
                   (prefix, key, json.dumps(value).encode(), "2025-05-01 10:00:00", "2025-05-02 11:30:00"))
    vecs = [("users.alice.memories", "m1", "text", [1, 0, 0], "Alice likes tea"),
            # (index={"text_fields": ["content[*]"]}: a path giving two texts names them .0, .1)
            ("users.alice.memories", "m2", "content[*].0", [0, 1, 0], "first part"),
            ("users.alice.memories", "m2", "content[*].1", [0, 0, 1], "second part"),
            ("users.bob.memories", "m1", "memory.text", [1, 1, 0], 'Bob hikes "often"'),
            ("users.bob.memories", "gone", "text", [1, 1, 1], None),
            ("users.alice.memories", "m1", "missing", [0, 1, 1], None)]
    want = {}
    for i, (prefix, key, field, v, text) in enumerate(vecs):
        db.execute("INSERT INTO store_vectors(prefix, key, field_name, embedding, created_at, updated_at) "
                   "VALUES (?,?,?,?,?,?)", (prefix, key, field, f32(v), "2025-05-01 10:00:00", "2025-05-02 11:30:00"))
        if text:
            value = [x[2] for x in items if x[0] == prefix and x[1] == key][0]
            want[i + 1] = {"text": text, "emb": v, "source": prefix, "ts": 1746185400,
                           "meta": {"namespace": prefix, "key": key, "field": field, "value": value,
                                    "created_at": "2025-05-01 10:00:00", "updated_at": "2025-05-02 11:30:00",
                                    "expires_at": None, "ttl_minutes": None,
                                    "embedded_at": "2025-05-02 11:30:00"}}
    db.commit()
    db.close()
    seal(p)
    dst = path("langgraph.h5")
    rep = migrate(p, dst)
    check(rep["schema"] == "langgraph" and rep["rows_written"] == 4, "langgraph: %r" % rep)
    check(skipped(rep, "orphan") == 1 and skipped(rep, "empty_text") == 1, "langgraph: %r" % rep["skipped"])
    check(any("not indexed" in n or "no embedding" in n for n in rep["notes"]), "langgraph notes: %r" % rep["notes"])
    compare("langgraph", records(dst), want)
    check_h5("langgraph", dst, want)


# ---------------------------------------------------------------- generic

def generic():
    p = path("plain.db")
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE notes (note_id INTEGER PRIMARY KEY, body TEXT, vec BLOB, made TEXT, who TEXT, "
               "conv TEXT, extra TEXT)")
    want = {}
    for i in range(1, 6):
        v = [i, 2.0, 3.0, 4.0, 5.0]
        db.execute("INSERT INTO notes VALUES (?,?,?,?,?,?,?)",
                   (i * 7, "body %d" % i, f32(v) if i != 3 else json.dumps(v), "2026-0%d-01T00:00:00Z" % i,
                    "user", "conv-%d" % (i % 2), json.dumps({"n": i})))
        want[i * 7] = {"text": "body %d" % i, "emb": v, "source": "user", "session": "conv-%d" % (i % 2),
                       "meta": {"n": i}}
    db.execute("INSERT INTO notes VALUES (100, 'doubles', ?, NULL, NULL, NULL, NULL)", (f64([1, 2, 3, 4, 5]),))
    db.commit()
    db.close()
    seal(p)
    cols = {"id": "note_id", "text": "body", "embedding": "vec", "ts": "made", "source": "who",
            "session": "conv", "meta": "extra"}
    dst = path("plain.h5")
    rep = migrate(p, dst, {"table": "notes", "columns": cols})
    check(rep["schema"] == "generic" and rep["rows_written"] == 6, "generic: %r" % rep)
    check(rep["embedding_encodings"] == {"float32_blob": 4, "json": 1, "float64_blob": 1},
          "generic encodings: %r" % rep["embedding_encodings"])
    got = records(dst)
    compare("generic", {k: v for k, v in got.items() if k != 100}, want)
    check(got[7]["ts"] == 1767225600 and got[35]["ts"] == 1777593600, "generic ts: %r" % got[7]["ts"])
    # a query, columns named as the store's
    dst = path("plain_q.h5")
    rep = migrate(p, dst, {"query": "SELECT note_id AS id, upper(body) AS text, vec AS embedding FROM notes "
                                    "WHERE note_id < 30"})
    check(rep["rows_written"] == 4 and rep["ids"] == "the id column", "generic query: %r" % rep)
    check(records(dst)[14]["text"] == "BODY 2", "generic query text")
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"table\": \"notes\", \"columns\": {\"text\": \"nope\"}}')"
                 % (q(p), q(path("x.h5"))), "no column 'nope'")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"bogus\": 1}')" % (q(p), q(path("x.h5"))),
                 "unknown option 'bogus'")
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(p), q(path("x.h5"))), "no known memory schema")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"schema\": \"openclaw\"}')" % (q(p), q(path("x.h5"))),
                 "not openclaw")
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(path("missing.db")), q(path("x.h5"))), "missing.db")
    not_db = path("not_a_db.txt")
    with open(not_db, "w") as f:
        f.write("hello, not sqlite\n" * 100)
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(not_db), q(path("x.h5"))), "cannot open")
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(p), q(p)), "same file")
    check(not os.path.exists(path("x.h5")), "failed migrations create no destination")
    db.close()


# ---------------------------------------------------------------- text ids (mem0)

def mem0():
    """mem0's SQLite vector store: vectors(id TEXT PRIMARY KEY (UUIDs), vector BLOB, payload TEXT (JSON))."""
    import uuid
    p = path("mem0.db")
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE vectors (id TEXT PRIMARY KEY, vector BLOB, payload TEXT)")
    rng = np.random.default_rng(3)
    want, uuids = {}, {}
    for i in range(1, 200):
        u = str(uuid.UUID(bytes=bytes(rng.integers(0, 256, 16, dtype=np.uint8))))
        v = [float(x) for x in rng.standard_normal(4).astype("<f4")]
        pay = {"data": "memory %d" % i, "hash": "h%d" % i, "user_id": "alice", "created_at": "2026-01-01"}
        db.execute("INSERT INTO vectors VALUES (?, ?, ?)", (u, f32(v), json.dumps(pay)))
        want[i] = {"emb": v, "text": None, "meta": dict(pay, source_id=u)}
        uuids[i] = u
    # meta of every shape beside its text id
    db.execute("CREATE TABLE odd (id, vector BLOB, payload TEXT)")
    odd = [("u-1", '{"data": "x"}', {"source_id": "u-1", "data": "x"}),
           ("u-2", "{}", {"source_id": "u-2"}),
           ("u-3", None, {"source_id": "u-3"}),
           ("u-4", "[1, 2]", {"source_id": "u-4", "meta": [1, 2]}),
           ("u-5", "not json", {"source_id": "u-5", "meta": "not json"}),
           ("u-6", '{"source_id": "mine", "n": 1}', {"source_id": "mine", "n": 1}),
           (7, '{"n": 7}', {"source_id": 7, "n": 7}),
           (None, '{"n": 8}', {"n": 8})]
    for u, pay, _ in odd:
        db.execute("INSERT INTO odd VALUES (?, ?, ?)", (u, f32([1, 2, 3, 4]), pay))
    db.commit()
    db.close()
    seal(p)
    cols = {"embedding": "vector", "meta": "payload"}
    # a dry run counts every row
    rep = migrate(p, path("mem0_dry.h5"), {"table": "vectors", "columns": cols, "dry_run": True})
    check(rep["complete"] and rep["rows_written"] == 199 and rep["rows_skipped"] == 0, "mem0 dry run: %r" % rep)
    dst = path("mem0.h5")
    rep = migrate(p, dst, {"table": "vectors", "columns": cols})
    check(rep["complete"] and rep["rows_read"] == 199 and rep["rows_written"] == 199 and
          skipped(rep, "bad_id") == 0, "mem0: %r" % rep)
    check(rep["ids"] == "the table's rowid (the id column's text in meta.source_id)" and rep["resumable"],
          "mem0 ids: %r" % rep["ids"])
    check(any("meta.source_id" in n for n in rep["notes"]), "mem0 notes: %r" % rep["notes"])
    got = records(dst)
    compare("mem0", got, want)
    check(all(list(json.loads(got[i]["meta"]))[0] == "source_id" for i in got), "mem0: source_id comes first")
    check_h5("mem0", dst, want)
    # run again: every row is there already, and that is complete
    rep = migrate(p, dst, {"table": "vectors", "columns": cols})
    check(rep["resumed"] and rep["complete"] and rep["rows_written"] == 0 and skipped(rep, "duplicate") == 199,
          "mem0 again: %r" % rep)
    # {"id": "rowid"}: the rowid, and no source_id
    dst = path("mem0_rowid.h5")
    rep = migrate(p, dst, {"table": "vectors", "columns": dict(cols, id="rowid", text="payload")})
    check(rep["complete"] and rep["rows_written"] == 199 and rep["ids"] == "the table's rowid", "rowid: %r" % rep)
    got = records(dst)
    check(json.loads(got[5]["meta"]) == json.loads(got[5]["text"]) and "source_id" not in json.loads(got[5]["meta"]),
          "id=rowid meta: %r" % got[5]["meta"])
    # the text from the payload, by a query selecting the rowid
    dst = path("mem0_q.h5")
    rep = migrate(p, dst, {"query": "SELECT rowid AS id, json_extract(payload, '$.data') AS text, vector AS "
                                    "embedding, json_set(payload, '$.source_id', id) AS meta FROM vectors"})
    check(rep["complete"] and rep["rows_written"] == 199 and rep["ids"] == "the id column", "mem0 query: %r" % rep)
    check(records(dst)[17]["text"] == "memory 17" and json.loads(records(dst)[17]["meta"])["source_id"] == uuids[17],
          "mem0 query: text and source_id")
    # a query whose id is text: new ids, the text in meta.source_id, not resumable
    dst = path("mem0_q2.h5")
    rep = migrate(p, dst, {"query": "SELECT id, vector AS embedding, payload AS meta FROM vectors ORDER BY rowid"})
    check(rep["complete"] and rep["rows_written"] == 199 and not rep["resumable"] and
          rep["ids"] == "assigned (new ids; the id column's text in meta.source_id)", "text ids, query: %r" % rep)
    compare("mem0 query ids", records(dst), want)
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s, %s)" % (q(p), q(path("x.h5")), q(json.dumps(
        {"query": "SELECT vector AS embedding FROM vectors", "columns": {"id": "rowid"}}))),
        "columns: id: the query has no rowid")
    # new ids after the destination's largest: none left after 2^63-1
    full = path("mem0_full.h5")
    db.execute("CREATE VIRTUAL TABLE f USING h5mem(path=%s, dim=4)" % q(full))
    db.execute("INSERT INTO f(id, text) VALUES (9223372036854775807, 'last')")
    db.execute("DROP TABLE f")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, %s)" % (q(p), q(full), q(json.dumps(
        {"query": "SELECT id, vector AS embedding FROM vectors", "append": True}))), "no ids left")
    db.close()
    check([r["id"] for r in records(full).values()] == [9223372036854775807], "no ids left: nothing written")
    # meta of every shape
    dst = path("odd.h5")
    rep = migrate(p, dst, {"table": "odd", "columns": cols})
    check(rep["rows_written"] == len(odd) and rep["complete"] and rep["meta_not_json"] == 1, "odd: %r" % rep)
    compare("odd", records(dst), {i + 1: {"meta": m} for i, (_, _, m) in enumerate(odd)})
    # nothing written of a non-empty source is an error naming why, with an
    # example (dry run too), and the destination it created is gone; an
    # empty source is complete
    for dry in (False, True):
        db = connect()
        expect_error(db, "SELECT h5mem_migrate(%s, %s, %s)" % (q(p), q(path("mem0_dim8.h5")), q(json.dumps(
            {"table": "vectors", "columns": cols, "dim": 8, "dry_run": dry}))),
            "none of the 199 rows read from vectors %s written: 199 wrong_dimension (row 1, id 1: 4 float32 "
            "values; the store has dim=8)%s" % ("would be" if dry else "was", "" if dry else
                                                 "; the new destination is removed"))
        db.close()
        check(not os.path.exists(path("mem0_dim8.h5")) and not os.path.exists(path("mem0_dim8.h5-wal")),
              "all skipped: the destination is removed")
    e = path("empty.db")
    db = sqlite3.connect(e)
    db.execute("CREATE TABLE vectors (id TEXT PRIMARY KEY, vector BLOB, payload TEXT)")
    db.commit()
    db.close()
    rep = migrate(e, path("empty.h5"), {"table": "vectors", "columns": cols, "dim": 4})
    check(rep["complete"] and rep["rows_read"] == 0 and rep["store"]["records"] == 0, "empty source: %r" % rep)


# ---------------------------------------------------------------- invalid UTF-8

def utf8():
    """Text with invalid UTF-8 is kept with U+FFFD (counted); a NUL byte skips its row."""
    from test_utf8 import every_string_decodes
    p = path("badutf8.db")
    db = sqlite3.connect(p)
    db.executescript("""
    CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT, embedding BLOB, source TEXT, tags TEXT, meta TEXT);
    CREATE TABLE uuids (id TEXT, text TEXT, embedding BLOB);
    """)
    e = f32([1, 0, 0])
    rows = [(1, b"ok", b"src", None, '{"a": 1}'),
            (2, b"caf\xe9", b"src", b"t", None),                      # Latin-1
            (3, b"ab\xed\xa0\x80cd", b"s\xc0\xaf", b"\xff", None),   # surrogate, overlong, FF
            (4, b"cut \xe2\x82", None, None, b'{"k": "\xf4\x90\x80\x80"}'),  # truncated; meta JSON once repaired
            (5, b"a\x00b", None, None, None)]                          # NUL: skipped
    for i, t, src, tags, meta in rows:
        db.execute("INSERT INTO notes VALUES (?, CAST(? AS TEXT), ?, CAST(? AS TEXT), CAST(? AS TEXT), "
                   "CAST(? AS TEXT))", (i, t, e, src, tags, meta))
    db.execute("INSERT INTO uuids VALUES (CAST(? AS TEXT), 'x', ?)", (b"id-\xff", e))
    db.commit()
    db.close()
    seal(p)
    dst = path("badutf8.h5")
    rep = migrate(p, dst, {"table": "notes"})
    check(rep["rows_written"] == 4 and rep["utf8_repaired"] == 3 and skipped(rep, "bad_text") == 1 and
          rep["complete"], "utf8: %r" % rep)
    ex = [x for x in rep["skipped_examples"] if x["reason"] == "bad_text"]
    check(ex and ex[0]["id"] == 5 and ex[0]["detail"] == "text holds a NUL byte (at byte 1), which no HDF5 string can hold", "utf8 examples: %r" % ex)
    got = records(dst)
    check(got[1]["text"] == "ok" and got[1]["meta"] == '{"a": 1}', "utf8: a valid row unchanged")
    check(got[2]["text"] == "caf\ufffd" and got[2]["tags"] == "t", "utf8 row 2: %r" % got[2])
    check(got[3]["text"] == "ab\ufffd\ufffd\ufffdcd" and got[3]["source"] == "s\ufffd\ufffd" and
          got[3]["tags"] == "\ufffd", "utf8 row 3: %r" % got[3])
    check(got[4]["text"] == "cut \ufffd" and json.loads(got[4]["meta"]) == {"k": "\ufffd" * 4},
          "utf8 row 4: %r" % got[4])
    every_string_decodes(dst, "migrated with invalid UTF-8")
    dst = path("badutf8_ids.h5")
    rep = migrate(p, dst, {"table": "uuids"})
    check(rep["rows_written"] == 1 and rep["utf8_repaired"] == 1, "utf8 text id: %r" % rep)
    check(json.loads(records(dst)[1]["meta"]) == {"source_id": "id-\ufffd"}, "utf8 text id: %r" % records(dst))
    # the ClawhDF5 graph: a name repaired, a name with a NUL byte invalid
    p = path("badutf8_claw.db")
    db = sqlite3.connect(p)
    db.executescript(layouts.CLAWHDF5)
    db.execute("INSERT INTO memory_chunks VALUES (1, 'one', ?, 'api', 1700000000, 's', '', 0)", (e,))
    db.execute("INSERT INTO entities VALUES (1, CAST(? AS TEXT), 'person', -1)", (b"Jos\xe9",))
    db.execute("INSERT INTO entities VALUES (2, CAST(? AS TEXT), 'person', -1)", (b"a\x00b",))
    db.execute("INSERT INTO entities VALUES (3, 'Ann', CAST(? AS TEXT), -1)", (b"\xc0",))
    db.execute("INSERT INTO relations VALUES (1, 3, CAST(? AS TEXT), 1.0, 1700000000)", (b"kn\xc3ows",))
    db.commit()
    db.close()
    seal(p)
    dst = path("badutf8_claw.h5")
    rep = migrate(p, dst)
    gw = rep["graph_written"]
    check(gw == {"entities": 2, "relations": 1, "skipped": {"invalid": 1, "dangling": 0, "duplicate": 0},
                 "utf8_repaired": 3}, "utf8 graph: %r" % gw)
    with h5py.File(dst, "r") as f:
        names = [x.decode() for x in f["/graph/entities/name"][()]]
        types = [x.decode() for x in f["/graph/entities/type"][()]]
        rtypes = [x.decode() for x in f["/graph/relations/type"][()]]
    check(names == ["Jos\ufffd", "Ann"] and types == ["person", "\ufffd"] and rtypes == ["kn\ufffdows"],
          "utf8 graph strings: %r %r %r" % (names, types, rtypes))
    every_string_decodes(dst, "graph migrated with invalid UTF-8")


# ---------------------------------------------------------------- destination rules

def destination_rules():
    p = path("zeroclaw.db")
    # dry run: counts, nothing written
    dst = path("dry.h5")
    rep = migrate(p, dst, {"dry_run": True})
    check(rep["dry_run"] and rep["rows_written"] == 7 and rep["store"] is None, "dry run: %r" % rep)
    check(not os.path.exists(dst) and not os.path.exists(dst + "-wal"), "dry run wrote a file")
    # a non-empty destination from another source is refused
    dst = path("langchain.h5")
    db = connect()
    before = records(dst)
    expect_error(db, "SELECT h5mem_migrate(%s, %s)" % (q(p), q(dst)), "already holds 6 records")
    check(records(dst) == before, "a refused migration changed the destination")
    # a file that is not a store is never touched
    other = path("other.h5")
    with open(other, "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"overwrite\": true}')" % (q(p), q(other)), "left alone")
    check(os.path.getsize(other) == 108, "a non-store destination was changed")
    db.close()
    # dry run against it: duplicates are not counted (different ids), refused all the same
    rep = migrate(p, dst, {"overwrite": True})
    check(rep["rows_written"] == 7 and rep["store"]["records"] == 7 and rep["store"]["created"],
          "overwrite: %r" % rep)
    # append: a source whose declared dim (LangChain's state_union_vec, float[3]) is not the
    # destination's is refused before anything is written
    db = connect()
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"append\": true}')" % (q(path("langchain.db")), q(dst)),
                 "the destination %s has dim=4; the source has dim=3" % dst)
    db.close()
    check(len(records(dst)) == 7, "a refused append changed the destination")


def resume():
    # a migration stopped by its limit, then run again
    p = path("big.db")
    db = sqlite3.connect(p)
    db.execute("CREATE TABLE memory_chunks (id INTEGER PRIMARY KEY, chunk TEXT NOT NULL, embedding BLOB NOT NULL, "
               "source_channel TEXT DEFAULT 'api', timestamp REAL NOT NULL, session_id TEXT, tags TEXT DEFAULT '', "
               "deleted INTEGER DEFAULT 0)")
    rng = np.random.default_rng(7)
    n, dim = 12000, 32
    emb = rng.standard_normal((n, dim)).astype("<f4")
    db.executemany("INSERT INTO memory_chunks VALUES (?,?,?,?,?,?,?,0)",
                   ((i + 1, "memory %d" % i, emb[i].tobytes(), "api", 1700000000 + i, "s", "") for i in range(n)))
    db.commit()
    db.close()
    seal(p)
    dst = path("big.h5")
    rep = migrate(p, dst, {"limit": 1000, "batch": 300})
    check(not rep["complete"] and rep["rows_written"] == 1000, "limit: %r" % rep)
    rep = migrate(p, dst, {"batch": 5000})
    check(rep["resumed"] and rep["complete"] and skipped(rep, "duplicate") == 1000 and
          rep["rows_written"] == n - 1000 and rep["store"]["records"] == n, "resume: %r" % rep)
    ids, texts, e, _ = h5_ids_texts(dst)
    order = np.argsort(ids)
    check(list(np.asarray(ids)[order]) == list(range(1, n + 1)), "resume: ids")
    check(np.array_equal(np.asarray(e)[order], emb), "resume: embeddings bit for bit")
    # killed in the middle: a process migrating with progress lines, killed
    dst = path("killed.h5")
    prog = path("progress.jsonl")
    script = ("import sqlite3,sys; db=sqlite3.connect(':memory:'); db.enable_load_extension(True); "
              "db.load_extension(sys.argv[1]); db.execute(\"SELECT h5mem_migrate(?, ?, "
              "'{\\\"batch\\\": 100, \\\"progress\\\": \\\"%s\\\", \\\"progress_every\\\": 500}')\", "
              "(sys.argv[2], sys.argv[3])).fetchone()" % prog)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", script, EXT, p, dst], env=env)
    t0 = time.time()
    while time.time() - t0 < 30:
        if os.path.exists(prog) and open(prog).read().count("\n") >= 1:
            break
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    lines = [json.loads(x) for x in open(prog).read().splitlines()]
    check(lines and all("rows_read" in x for x in lines), "progress lines: %r" % lines[:2])
    check(not any(x.get("done") for x in lines), "the migration finished before it was killed")
    rep = migrate(p, dst)
    check(rep["complete"] and rep["store"]["records"] == n, "after kill: %r" % rep["store"])
    check(rep["rows_written"] + skipped(rep, "duplicate") == n, "after kill: counts %r" % rep)
    ids, _, e, _ = h5_ids_texts(dst)
    check(sorted(ids) == list(range(1, n + 1)), "after kill: ids")


def main():
    if not os.path.exists(VEC0 + ".so"):
        print("sqlite-vec (npm) is missing: run make check once (npm ci)")
        sys.exit(1)
    openclaw_legacy()
    openclaw_current()
    sqlite_vec()
    clawhdf5()
    langchain()
    langgraph()
    generic()
    mem0()
    utf8()
    destination_rules()
    resume()
    for p, digest, mtime in SOURCES:
        with open(p, "rb") as f:
            check(hashlib.sha256(f.read()).hexdigest() == digest, "%s: the source's bytes changed" % p)
        check(os.stat(p).st_mtime_ns == mtime, "%s: the source's mtime changed" % p)
        check(not os.path.exists(p + "-journal") and not os.path.exists(p + "-wal"), "%s: a journal appeared" % p)
    if not failures:
        shutil.rmtree(TMP, ignore_errors=True)
    finish()


main()
