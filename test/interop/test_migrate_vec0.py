"""h5mem_migrate of vec0 tables with metadata, partition, auxiliary, text
primary key and further vector columns, written by sqlite-vec v0.1.9 itself
(the npm package in test/interop/node_modules).

Several thousand rows with deletes, updates (short and long metadata text,
auxiliary values), NULLs where vec0 takes them (partition keys, auxiliary
columns) are migrated; then every value read through the vec0 table (with
sqlite-vec) must equal the value read through the h5mem table, with the
same type, and each record keep its vec0 rowid. Filtered KNN queries on
the new table (partition key, metadata =, !=, <, <=, >, >=, BETWEEN, IN)
must return the ids vec0's own filtered KNN returns on the same data, at
distances equal within float32 rounding. Also: the dry run reports the
columns it would make and writes nothing; a run stopped by a limit resumes
into the same columns; an existing destination takes the columns it has
(the others into meta), refuses a vector column it lacks and a column of
another type; values the store cannot hold (an infinite float, a NUL byte)
skip their row, invalid UTF-8 is repaired.
"""
import json
import math
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile

import h5py

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sql"))
from sqltest import check, connect, expect_error, failures, finish, q  # noqa: E402

SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")
TMP = tempfile.mkdtemp(prefix="h5mem_migrate_vec0_")
N = 4000
DIM = 8
rng = random.Random(20)


def path(name):
    return os.path.join(TMP, name)


def f32(v):
    return struct.pack("<%df" % len(v), *v)


def vec_db(p):
    db = sqlite3.connect(p)
    db.enable_load_extension(True)
    db.load_extension(VEC0)
    db.text_factory = bytes  # (invalid UTF-8 is read back as it is)
    return db


def migrate(src, dst, opts=None):
    db = connect()
    rep = json.loads(db.execute("SELECT h5mem_migrate(?, ?, ?)", (src, dst, json.dumps(opts or {}))).fetchone()[0])
    db.close()
    return rep


def h5mem(dst):
    db = connect()
    db.text_factory = bytes
    db.execute("CREATE VIRTUAL TABLE m USING h5mem(path=%s)" % q(dst))
    return db


def typed(rows):
    """Rows as tuples of (type, value): an integer 1 and a float 1.0 differ."""
    return [tuple((type(x).__name__, x) for x in r) for r in rows]


# ---------------------------------------------------------------- the source

ITEMS_COLS = ["key", "user_id", "category", "price", "qty", "flag", "payload", "raw", "n", "img", "sig"]
CATS = ["cat0", "cat1", "cat2", "cat3", "a category longer than twelve bytes", "caf\u00e9 \u2615", ""]


def make_source():
    p = path("vec.db")
    db = vec_db(p)
    # a text primary key; an integer partition key (NULL in some rows);
    # metadata integer, float, text, boolean; auxiliary blob, text,
    # integer; two more vector columns (int8 and bit)
    db.execute("CREATE VIRTUAL TABLE items USING vec0(key text primary key, embedding float[%d], "
               "user_id integer partition key, category text, price float, qty integer, flag boolean, "
               "+payload blob, +raw text, +n integer, img int8[4], sig bit[16], chunk_size=64)" % DIM)
    for i in range(1, N + 1):
        emb = [rng.uniform(-1, 1) for _ in range(DIM)]
        uid = None if i % 17 == 0 else rng.randrange(6)
        payload = None if i % 5 == 0 else b"" if i % 11 == 0 else bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        raw = None if i % 7 == 0 else "" if i % 13 == 0 else "raw text %d %s" % (i, "x" * rng.randrange(30))
        n = None if i % 3 == 0 else rng.randrange(-10**12, 10**12)
        img = json.dumps([rng.randrange(-128, 128) for _ in range(4)])
        sig = bytes(rng.randrange(256) for _ in range(2))
        db.execute("INSERT INTO items(key, embedding, user_id, category, price, qty, flag, payload, raw, n, img, sig) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, vec_int8(?), vec_bit(?))",
                   ("item-%05d" % i, f32(emb), uid, rng.choice(CATS), round(rng.uniform(0, 10), 3),
                    rng.randrange(100), rng.randrange(2), payload, raw, n, img, sig))
    # holes, and values changed after insert (metadata text short <-> long)
    for i in range(5, N, 9):
        db.execute("DELETE FROM items WHERE key = ?", ("item-%05d" % i,))
    for i in range(2, N, 10):
        db.execute("UPDATE items SET category = ?, price = ?, raw = ?, n = NULL WHERE key = ?",
                   ("updated to a long category %d" % i if i % 20 == 2 else "u%d" % (i % 3), i / 100.0,
                    "raw updated", "item-%05d" % i))
    # integer rowids, a text partition key, cosine; an infinite float, a
    # NUL byte and invalid UTF-8 among the values
    db.execute("CREATE VIRTUAL TABLE docs USING vec0(embedding float[%d] distance_metric=cosine, "
               "tenant text partition key, score float, tag text, +note text, +weight float)" % DIM)
    for i in range(1, 601):
        db.execute("INSERT INTO docs(rowid, embedding, tenant, score, tag, note, weight) VALUES (?,?,?,?,?,?,?)",
                   (i * 3, f32([rng.uniform(-1, 1) for _ in range(DIM)]), None if i % 10 == 0 else "t%d" % (i % 4),
                    rng.uniform(-5, 5), "tag%d" % (i % 5), None if i % 4 == 0 else "note %d" % i,
                    None if i % 6 == 0 else rng.uniform(0, 1)))
    # values the store cannot hold as they are: an infinite float, a NUL
    # byte (rows skipped), invalid UTF-8 (repaired), an integer that an
    # UPDATE put in a text auxiliary column (its text)
    db.execute("CREATE VIRTUAL TABLE odd USING vec0(embedding float[2], score float, tag text, +note text)")
    for i in range(1, 6):
        db.execute("INSERT INTO odd(rowid, embedding, score, tag, note) VALUES (?, ?, ?, ?, ?)",
                   (i, f32([i, 1]), i * 1.5, "tag%d" % i, "note %d" % i))
    db.execute("UPDATE odd SET score = 1e999 WHERE rowid = 2")
    db.execute("UPDATE odd SET tag = 'nul' || char(0) || 'byte' WHERE rowid = 3")
    db.execute("UPDATE odd SET note = CAST(X'6E6F7465C328' AS TEXT) WHERE rowid = 4")
    db.execute("UPDATE odd SET note = 42 WHERE rowid = 5")
    # names the store has columns of
    db.execute("CREATE VIRTUAL TABLE clash USING vec0(id text primary key, embedding float[2], meta text, "
               "+deleted integer, +tags_x text)")
    db.execute("INSERT INTO clash(id, embedding, meta, deleted, tags_x) VALUES ('a', ?, 'm', 1, 't')", (f32([1, 2]),))
    db.commit()
    db.close()
    return p


# ---------------------------------------------------------------- the checks

def vec0_rowids(src, table):
    db = sqlite3.connect(src)
    ids = {k.encode(): r for r, k in db.execute("SELECT rowid, id FROM %s_rowids" % table)}
    db.close()
    return ids


def check_items(name, src, dst):
    """Every value of every row of items through vec0 and through h5mem."""
    cols = ", ".join(ITEMS_COLS + ["embedding"])
    v = vec_db(src)
    want = sorted(v.execute("SELECT %s FROM items" % cols).fetchall(), key=lambda r: r[0])
    v.close()
    m = h5mem(dst)
    got = sorted(m.execute("SELECT %s FROM m" % cols).fetchall(), key=lambda r: r[0])
    ids = dict(m.execute("SELECT key, id FROM m").fetchall())
    m.close()
    check(len(want) > N // 2 and len(got) == len(want), "%s: %d rows, vec0 has %d" % (name, len(got), len(want)))
    bad = [(a, b) for a, b in zip(typed(want), typed(got)) if a != b]
    check(not bad, "%s: %d rows differ, first: vec0 %r, h5mem %r" % ((name, len(bad)) + (bad[0] if bad else (None, None))))
    nulls = {c: sum(1 for r in got if r[i] is None) for i, c in enumerate(ITEMS_COLS)}
    check(nulls["user_id"] > 100 and nulls["payload"] > 100 and nulls["raw"] > 100 and nulls["n"] > 100,
          "%s: NULLs kept %r" % (name, nulls))
    check(sum(1 for r in got if r[6] == b"") > 10 and sum(1 for r in got if r[7] == b"") > 10,
          "%s: empty blobs and texts kept" % name)
    check(ids == vec0_rowids(src, "items"), "%s: ids are not vec0's rowids" % name)


ITEMS_FILTERS = [
    ("user_id = 3 AND price < 5", ()),
    ("user_id = 0", ()),
    ("category = 'cat2'", ()),
    ("category != 'cat1' AND user_id = 1", ()),
    ("flag = 1 AND qty >= 50", ()),
    ("qty > 10 AND qty <= 60 AND flag = 0", ()),
    ("price BETWEEN 2 AND 3", ()),
    ("category IN ('cat0', 'cat3', 'a category longer than twelve bytes')", ()),
    ("user_id = 5 AND category = ? AND price > 1", ("caf\u00e9 \u2615",)),
]


def knn_same(name, src, dst, table, filters, vcol="embedding", key="rowid", ks=(10, 50)):
    """Filtered KNN on vec0 and on h5mem: the same ids, in the same order,
    at the same distances (within float32 rounding)."""
    v = vec_db(src)
    m = h5mem(dst)
    hkey = "id" if key == "rowid" else key
    nq = 0
    for where, args in filters:
        for k in ks:
            for _ in range(6):
                qv = f32([rng.uniform(-1, 1) for _ in range(DIM)])
                a = v.execute("SELECT %s, distance FROM %s WHERE %s MATCH ? AND k = %d AND %s ORDER BY distance"
                              % (key, table, vcol, k, where), (qv,) + args).fetchall()
                b = m.execute("SELECT %s, distance FROM m WHERE %s MATCH ? AND k = %d AND %s"
                              % (hkey, vcol, k, where), (qv,) + args).fetchall()
                nq += 1
                same = [x[0] for x in a] == [x[0] for x in b] and all(
                    math.isclose(x[1], y[1], rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(a, b))
                check(same, "%s: KNN k=%d WHERE %s: vec0 %r, h5mem %r" % (name, k, where, a[:12], b[:12]))
                check(len(a) > 0, "%s: KNN WHERE %s found nothing (a filter that tests nothing)" % (name, where))
    v.close()
    m.close()
    return nq


def items(src):
    dst = path("items.h5")
    # a dry run names the columns and writes nothing
    rep = migrate(src, dst, {"table": "items", "dry_run": True})
    cols = ["user_id integer partition key", "category text", "price float", "qty integer", "flag boolean",
            "+payload blob", "+raw text", "+n integer", "img int8[4] distance_metric=l2",
            "sig bit[16] distance_metric=hamming", "key text primary key"]
    check(rep["columns"] == cols, "dry run: columns %r" % rep.get("columns"))
    check(rep["store"] is None and not os.path.exists(dst), "dry run: nothing written")
    n_live = rep["rows_written"]
    check(n_live > N // 2 and rep["rows_skipped"] == 0, "dry run: %r" % rep)
    rep = migrate(src, dst, {"table": "items"})
    check(rep["rows_written"] == n_live and rep["complete"] and rep["columns"] == cols, "items: %r" % rep)
    check(rep["store"]["metric"] == "l2", "items: metric %r" % rep["store"])
    check_items("items", src, dst)
    nq = knn_same("items", src, dst, "items", ITEMS_FILTERS, key="key")
    check(nq == len(ITEMS_FILTERS) * 12, "items: %d queries" % nq)
    # the h5 file holds each declared column as /memories/columns/<name>
    with h5py.File(dst, "r") as f:
        names = sorted(n for n in f["/memories/columns"].keys() if not n.endswith(".missing"))
    check(names == sorted(c.split()[0].lstrip("+") for c in cols), "items: datasets %r" % names)
    # a run stopped by its limit, then resumed: the same columns, every value
    dst2 = path("items_resumed.h5")
    rep = migrate(src, dst2, {"table": "items", "limit": 1500, "batch": 400})
    check(not rep["complete"] and rep["rows_written"] == 1500, "items limit: %r" % rep)
    rep = migrate(src, dst2, {"table": "items"})
    check(rep["complete"] and rep["resumed"] and rep["rows_written"] == n_live - 1500 and
          rep["skipped"]["duplicate"] == 1500 and rep["columns"] == cols, "items resumed: %r" % rep)
    check_items("items resumed", src, dst2)
    # an existing store without the vector columns: refused, naming one
    dst3 = path("items_existing.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE e USING h5mem(path=%s, embedding float[%d], user_id integer partition key)"
               % (q(dst3), DIM))
    db.execute("DROP TABLE e")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"table\": \"items\", \"append\": true}')" % (q(src), q(dst3)),
                 "has no column img")
    # {"declared_columns": false}: one vector column, the rest in meta
    dst4 = path("items_meta.h5")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"table\": \"items\", \"declared_columns\": false}')"
                 % (q(src), q(dst4)), "vector columns: choose one")
    db.close()
    rep = migrate(src, dst4, {"table": "items", "declared_columns": False, "vector_column": "embedding"})
    check("columns" not in rep and rep["rows_written"] == n_live, "declared_columns false: %r" % rep)
    m = h5mem(dst4)
    row = m.execute("SELECT meta FROM m LIMIT 1").fetchone()
    m.close()
    meta = json.loads(row[0])
    check(set(meta) == {"user_id", "category", "price", "qty", "flag", "payload", "raw", "n", "key"},
          "declared_columns false: meta %r" % meta)


def docs(src):
    dst = path("docs.h5")
    rep = migrate(src, dst, {"table": "docs"})
    cols = ["tenant text partition key", "score float", "tag text", "+note text", "+weight float"]
    check(rep["columns"] == cols, "docs: columns %r" % rep.get("columns"))
    check(rep["rows_written"] == 600 and rep["rows_skipped"] == 0, "docs: %r" % rep)
    check(rep["store"]["metric"] == "cosine", "docs: metric")
    sel = "rowid, tenant, score, tag, note, weight, embedding"
    v = vec_db(src)
    want = v.execute("SELECT %s FROM docs ORDER BY rowid" % sel).fetchall()
    v.close()
    m = h5mem(dst)
    got = m.execute("SELECT %s FROM m ORDER BY id" % sel.replace("rowid", "id")).fetchall()
    m.close()
    check(len(got) == 600 and typed(want) == typed(got), "docs: values differ (%d / %d rows)" % (len(want), len(got)))
    filters = [("tenant = 't1'", ()), ("tenant = 't2' AND score > 0", ()), ("tag != 'tag3' AND score <= 1", ()),
               ("tag IN ('tag0', 'tag4')", ())]
    knn_same("docs", src, dst, "docs", filters, ks=(10,))
    # an existing store with some of the columns: those written there, the
    # others in meta; one of another type refused
    dst2 = path("docs_existing.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE e USING h5mem(path=%s, embedding float[%d] distance_metric=cosine, "
               "tenant text partition key, +weight float)" % (q(dst2), DIM))
    db.execute("DROP TABLE e")
    dst3 = path("docs_wrong.h5")
    db.execute("CREATE VIRTUAL TABLE e USING h5mem(path=%s, embedding float[%d], tenant integer)" % (q(dst3), DIM))
    db.execute("DROP TABLE e")
    expect_error(db, "SELECT h5mem_migrate(%s, %s, '{\"table\": \"docs\"}')" % (q(src), q(dst3)),
                 "has the column 'tenant integer'")
    db.close()
    rep = migrate(src, dst2, {"table": "docs"})
    check(rep["columns"] == ["tenant text partition key", "+weight float"] and
          rep["columns_in_meta"] == ["score", "tag", "note"] and rep["rows_written"] == 600, "docs existing: %r" % rep)
    v = vec_db(src)
    want = {r[0]: r[1:] for r in v.execute("SELECT rowid, tenant, weight, score, tag, note FROM docs")}
    v.close()
    m = h5mem(dst2)
    got = {}
    for i, tenant, weight, meta in m.execute("SELECT id, tenant, weight, meta FROM m"):
        j = json.loads(meta)
        got[i] = (tenant, weight, j["score"], j["tag"].encode(), None if j["note"] is None else j["note"].encode())
    m.close()
    check(got == want, "docs existing: values differ")


def odd(src):
    dst = path("odd.h5")
    rep = migrate(src, dst, {"table": "odd"})
    check(rep["rows_written"] == 3 and rep["skipped"].get("column_value") == 1 and
          rep["skipped"].get("bad_text") == 1 and rep.get("utf8_repaired") == 1, "odd: %r" % rep)
    ex = {e["id"]: e for e in rep["skipped_examples"]}
    check(ex.get(2, {}).get("reason") == "column_value" and "score" in ex[2].get("detail", ""),
          "odd: the infinite score %r" % ex)
    check(ex.get(3, {}).get("reason") == "bad_text" and "tag" in ex[3].get("detail", ""),
          "odd: the NUL byte %r" % ex)
    m = h5mem(dst)
    got = m.execute("SELECT id, score, tag, note FROM m ORDER BY id").fetchall()
    m.close()
    check(got == [(1, 1.5, b"tag1", b"note 1"), (4, 6.0, b"tag4", b"note\xef\xbf\xbd("), (5, 7.5, b"tag5", b"42")],
          "odd: %r" % got)


def clash(src):
    dst = path("clash.h5")
    rep = migrate(src, dst, {"table": "clash"})
    check(rep["columns"] == ["meta_ text", "+deleted_ integer", "+tags_x text", "id_ text primary key"] and
          sum("is the store's column" in n for n in rep["notes"]) == 3, "clash: %r" % rep)
    m = h5mem(dst)
    got = m.execute("SELECT id, id_, meta_, deleted_, tags_x, meta FROM m").fetchall()
    m.close()
    check(got == [(1, b"a", b"m", 1, b"t", None)], "clash: %r" % got)


def main():
    if not os.path.exists(VEC0 + ".so"):
        print("sqlite-vec (npm) is missing: run make check once (npm ci)")
        sys.exit(1)
    src = make_source()
    items(src)
    docs(src)
    odd(src)
    clash(src)
    if not failures:
        shutil.rmtree(TMP, ignore_errors=True)
    finish()


main()
