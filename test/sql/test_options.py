"""Bad input ends fast and cleanly (issue 17): table names, options, schemas.

- any table name works for an h5mem table, names of its own columns too
  (k, distance, text, id, rowid, ...): reads, writes, the KNN form,
  vec_search, the command column (named h5mem when the table's name is
  taken), the companion tables;
- constructors say why they fail (never SQLite's bare "vtable constructor
  failed");
- an option given twice is an error: in CREATE VIRTUAL TABLE (h5mem, h5) and
  in every JSON options object (vec_search, bm25, hybrid and its rerank,
  kg_bfs, kg_activate, h5mem_migrate);
- 'schema.table' names that table, never one of another schema; an unknown
  schema is an error naming it (vec_search, bm25, hybrid, kg_bfs,
  kg_export_jsonl, h5mem_index, h5mem_checkpoint);
- a numeric option out of range is an error naming the option and its
  range, not "unknown option";
- options and kg_activate's seeds are read by the extension's strict JSON
  reader, not SQLite's JSON functions: what RFC 8259 refuses and SQLite took
  (a lone surrogate, invalid UTF-8, nesting deeper than 1000) is malformed
  JSON; escaped keys and values count decoded, as before.

Run by make check with Debian's /usr/bin/python3.
"""
import os
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402


def ident(s):
    """s as an SQL identifier."""
    return '"' + s.replace('"', '""') + '"'


# the table's own column names, and the rowid's: the command column is h5mem then
TAKEN = {"id", "text", "embedding", "source", "session", "tags", "ts", "tier", "importance",
         "access_count", "last_access", "meta", "distance", "k", "rowid", "oid", "_rowid_"}


def no_bare_constructor_message(db, sql, word):
    msg = expect_error(db, sql, word)
    check("constructor failed" not in msg, "%s: message %r says nothing" % (sql, msg))


def test_names(d):
    db = connect()
    names = ["k", "distance", "text", "embedding", "id", "meta", "ts", "tags", "last_access", "K",
             "Distance", "rowid", "oid", "_rowid_", "h5mem", "select", "my table", 'a"b', "mem", "x"]
    for i, name in enumerate(names):
        fn = os.path.join(d, "name%d.h5" % i)
        t = ident(name)
        what = "table %r" % name
        try:
            db.execute("CREATE VIRTUAL TABLE %s USING h5mem(path=%s, dim=3)" % (t, q(fn)))
        except sqlite3.Error as e:
            check(False, "%s: CREATE failed: %s" % (what, e))
            continue
        try:
            use_table(db, name, t, what)
        except sqlite3.Error as e:
            check(False, "%s: %s" % (what, e))
        db.execute("DROP TABLE %s" % t)
    # renamed to a taken name: connected again with the command column h5mem
    try:
        db.execute("CREATE VIRTUAL TABLE r1 USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "renamed.h5")))
        db.execute("INSERT INTO r1(id, embedding) VALUES (3, '[0,0,1]')")
        db.execute("ALTER TABLE r1 RENAME TO k")
        db.execute("INSERT INTO k(h5mem) VALUES ('checkpoint')")
        db.execute("INSERT INTO k(id, embedding) VALUES (4, '[0,1,0]')")
        got = db.execute("SELECT id FROM k WHERE embedding MATCH '[0,0,1]' AND k = 1").fetchall()
        check(got == [(3,)], "renamed to k: KNN: %r" % got)
    except sqlite3.Error as e:
        check(False, "renamed to k: %s" % e)
    db.close()


def use_table(db, name, t, what):
    db.execute("INSERT INTO %s(id, text, embedding) VALUES (7, 'seven', '[1,0,0]')" % t)
    db.execute("INSERT INTO %s(id, text, embedding) VALUES (8, 'eight', '[0,1,0]')" % t)
    got = db.execute("SELECT text FROM %s WHERE rowid = 7" % t).fetchall()
    check(got == [("seven",)], "%s: by rowid: %r" % (what, got))
    got = db.execute("SELECT rowid, id, text FROM %s WHERE id = 8" % t).fetchall()
    check(got == [(8, 8, "eight")], "%s: by id: %r" % (what, got))
    got = db.execute("SELECT id, distance FROM %s WHERE embedding MATCH '[0,1,0]' AND k = 1" % t).fetchall()
    check(len(got) == 1 and got[0][0] == 8 and abs(got[0][1]) < 1e-6, "%s: KNN: %r" % (what, got))
    got = db.execute("SELECT id FROM vec_search(?, '[1,0,0]', 1)", (name,)).fetchall()
    check(got == [(7,)], "%s: vec_search: %r" % (what, got))
    cmd = "h5mem" if name.lower() in TAKEN else name
    db.execute("INSERT INTO %s(%s) VALUES ('checkpoint')" % (t, ident(cmd)))
    got = db.execute("SELECT count(*), sum(id) FROM %s" % t).fetchall()
    check(got == [(2, 15)], "%s: after the checkpoint command: %r" % (what, got))
    db.execute("INSERT INTO %s(name) VALUES ('Alice')" % ident(name + "_entities"))
    got = db.execute("SELECT name FROM %s" % ident(name + "_entities")).fetchall()
    check(got == [("Alice",)], "%s: its entities: %r" % (what, got))


def test_constructors(d):
    db = connect()
    fn = q(os.path.join(d, "c.h5"))
    for sql, word in [
        ("CREATE VIRTUAL TABLE c1 USING h5mem(dim=3)", "path= is required"),
        ("CREATE VIRTUAL TABLE c1 USING h5mem(path=%s, dim=3, colour=red)" % fn, "unknown option 'colour'"),
        ("CREATE VIRTUAL TABLE c1 USING h5mem_entities(nosuch)", "nosuch"),
        ("CREATE VIRTUAL TABLE c1 USING h5mem_entities(a, b)", "expected one argument"),
        ("CREATE VIRTUAL TABLE c1 USING h5(file=%s)" % fn, "dataset= is required"),
    ]:
        no_bare_constructor_message(db, sql, word)
    # h5: fields called i and _i: the index column is __i (it was _i twice)
    try:
        db.execute("CREATE VIRTUAL TABLE hi USING h5(file=%s, dataset='/d', schema='i int64, _i int64')"
                   % q(os.path.join(d, "fields.h5")))
        db.execute("INSERT INTO hi(i, _i) VALUES (5, 6)")
        got = db.execute("SELECT __i, i, _i FROM hi").fetchall()
        check(got == [(0, 5, 6)], "h5 fields i and _i: %r" % got)
    except sqlite3.Error as e:
        check(False, "h5 fields i and _i: %s" % e)
    db.close()


def test_duplicates(d):
    db = connect()
    fn = os.path.join(d, "dup.h5")
    h5 = os.path.join(d, "dup_h5.h5")
    for sql, word in [
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, dim=9)" % q(fn), "duplicate option 'dim'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, DIM=8)" % q(fn), "duplicate option 'DIM'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, file=%s, dim=8)" % (q(fn), q(fn)), "duplicate option 'file'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(%s, path=%s, dim=8)" % (q(fn), q(fn)), "duplicate option 'path'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, index=hnsw, M=8, m=16)" % q(fn), "duplicate option 'm'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, metric=l2, metric=dot)" % q(fn), "duplicate option 'metric'"),
        ("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, sync=off, sync=off)" % q(fn), "duplicate option 'sync'"),
        ("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/a', dataset='/b', schema='x int64')" % q(h5),
         "duplicate option 'dataset'"),
        ("CREATE VIRTUAL TABLE t USING h5(%s, file=%s, dataset='/a', schema='x int64')" % (q(h5), q(h5)),
         "duplicate option 'file'"),
        ("CREATE VIRTUAL TABLE t USING h5(dataset='/a', %s, '/b', schema='x int64')" % q(h5),
         "duplicate option 'dataset'"),
        ("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/a', schema='x int64', chunk=4, chunk=8)" % q(h5),
         "duplicate option 'chunk'"),
    ]:
        no_bare_constructor_message(db, sql, word)
        db.execute("DROP TABLE IF EXISTS t")  # (if it was made after all)
    check(not os.path.exists(fn) and not os.path.exists(h5), "a refused CREATE made a file")

    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "dup2.h5")))
    db.execute("INSERT INTO mem(id, text, embedding) VALUES (1, 'coffee', '[1,0,0]')")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'Alice'), (2, 'Bob')")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')")
    for sql in [
        "SELECT * FROM vec_search('mem', '[1,0,0]', 1, '{\"ef\": 10, \"ef\": 20}')",
        "SELECT * FROM vec_search('mem', '[1,0,0]', 1, '{\"exact\": true, \"ef\": 10, \"exact\": false}')",
        "SELECT * FROM bm25('mem', 'coffee', 1, '{\"x\": 1, \"x\": 2}')",
        "SELECT * FROM hybrid('mem', 'coffee', '[1,0,0]', 1, '{\"fusion\": \"rrf\", \"fusion\": \"weighted\"}')",
        "SELECT * FROM hybrid('mem', 'coffee', '[1,0,0]', 1, '{\"rerank\": {\"recency\": 0.1, \"recency\": 0.2}}')",
        "SELECT * FROM hybrid('mem', 'coffee', '[1,0,0]', 1, '{\"rerank\": {\"sources\": {\"user\": 1, \"user\": 0.2}}}')",
        "SELECT * FROM kg_bfs('mem', 'Alice', 2, '{\"limit\": 1, \"limit\": 5}')",
        "SELECT * FROM kg_bfs('mem', 'Alice', 2, '{\"direction\": \"in\", \"direction\": \"out\"}')",
        "SELECT * FROM kg_activate('mem', 'Alice', '{\"decay\": 0.5, \"decay\": 0.9}')",
        "SELECT h5mem_migrate('nosuch.db', 'nosuch.h5', '{\"dim\": 3, \"dim\": 4}')",
    ]:
        msg = expect_error(db, sql, "duplicate option")
        check("unknown option" not in msg, "%s: %r" % (sql, msg))
    # the first of them, alone, is fine
    got = db.execute("SELECT id FROM vec_search('mem', '[1,0,0]', 1, '{\"ef\": 10}')").fetchall()
    check(got == [(1,)], "vec_search with ef: %r" % got)
    db.close()


def test_schemas(d):
    db = connect()
    db.execute("ATTACH ':memory:' AS aux")
    # aux's first: an unqualified or wrongly qualified name must not fall back to the other
    db.execute("CREATE VIRTUAL TABLE aux.mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "aux.h5")))
    db.execute("CREATE VIRTUAL TABLE main.mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "main.h5")))
    db.execute("INSERT INTO aux.mem(id, text, embedding) VALUES (100, 'coffee aux', '[1,0,0]')")
    db.execute("INSERT INTO main.mem(id, text, embedding) VALUES (1, 'coffee main', '[1,0,0]')")
    db.execute("INSERT INTO aux.mem_entities(id, name) VALUES (5, 'Zed')")
    db.execute("INSERT INTO main.mem_entities(id, name) VALUES (1, 'Alice')")
    for name, want in [("aux.mem", 100), ("AUX.mem", 100), ("main.mem", 1), ("mem", 1)]:
        got = db.execute("SELECT id FROM vec_search(?, '[1,0,0]', 5)", (name,)).fetchall()
        check(got == [(want,)], "vec_search(%r): %r" % (name, got))
        got = db.execute("SELECT id FROM bm25(?, 'coffee', 5)", (name,)).fetchall()
        check(got == [(want,)], "bm25(%r): %r" % (name, got))
        got = db.execute("SELECT id FROM hybrid(?, 'coffee', '[1,0,0]', 5)", (name,)).fetchall()
        check(got == [(want,)], "hybrid(%r): %r" % (name, got))
    try:
        got = db.execute("SELECT id FROM kg_bfs('aux.mem', 'Zed', 1)").fetchall()
    except sqlite3.Error as e:
        got = str(e)
    check(got == [(5,)], "kg_bfs('aux.mem'): %r" % got)
    expect_error(db, "SELECT id FROM kg_bfs('aux.mem', 'Alice', 1)", "Alice")
    got = db.execute("SELECT kg_export_jsonl('aux.mem')").fetchone()[0]
    check("Zed" in got and "Alice" not in got, "kg_export_jsonl('aux.mem'): %r" % got)
    for sql in [
        "SELECT * FROM vec_search('nosuchschema.mem', '[1,0,0]', 1)",
        "SELECT * FROM bm25('nosuchschema.mem', 'coffee', 1)",
        "SELECT * FROM hybrid('nosuchschema.mem', 'coffee', '[1,0,0]', 1)",
        "SELECT * FROM kg_bfs('nosuchschema.mem', 'Alice', 1)",
        "SELECT * FROM kg_activate('nosuchschema.mem', 'Alice')",
        "SELECT kg_export_jsonl('nosuchschema.mem')",
        "SELECT kg_entity('nosuchschema.mem', 'Carol')",
        "SELECT h5mem_index('nosuchschema.mem')",
        "SELECT h5mem_checkpoint('nosuchschema.mem')",
    ]:
        expect_error(db, sql, "no database 'nosuchschema'")
    # a schema that exists without the table
    for sql in ["SELECT * FROM vec_search('temp.mem', '[1,0,0]', 1)",
                "SELECT h5mem_index('temp.mem')",
                "SELECT h5mem_checkpoint('temp.mem')"]:
        expect_error(db, sql, "temp.mem")
    got = db.execute("SELECT h5mem_checkpoint('aux.mem'), h5mem_checkpoint('main.mem')").fetchall()
    check(got == [(1, 1)], "h5mem_checkpoint of each: %r" % got)
    # a bare name is the table SQLite would take: temp's before main's
    db.execute("CREATE VIRTUAL TABLE temp.mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "temp.h5")))
    db.execute("INSERT INTO temp.mem(id, embedding) VALUES (1000, '[1,0,0]')")
    got = db.execute("SELECT id FROM vec_search('mem', '[1,0,0]', 5)").fetchall()
    check(got == [(1000,)], "vec_search('mem') with temp.mem: %r" % got)
    db.execute("DROP TABLE temp.mem")
    # ... even when it is not an h5mem table
    db.execute("CREATE TEMP TABLE mem(x)")
    expect_error(db, "SELECT * FROM vec_search('mem', '[1,0,0]', 5)", "not an h5mem table")
    expect_error(db, "SELECT h5mem_index('mem')", "no h5mem table")
    got = db.execute("SELECT id FROM vec_search('main.mem', '[1,0,0]', 5)").fetchall()
    check(got == [(1,)], "vec_search('main.mem') beside a temp table mem: %r" % got)
    db.close()


def test_ranges(d):
    db = connect()
    fn = os.path.join(d, "range.h5")
    # CREATE's numeric options
    for opt, rng in [("dim=0", "1..65536"), ("dim=65537", "1..65536"), ("M=1", "2..512"),
                     ("ef_search=0", "1..100000"), ("ef_construction=0", "1..1048576"),
                     ("chunk=0", "1..1048576"), ("nlist=-1", "0..16777216"), ("nprobe=0", "1..16777216"),
                     ("pq_m=-1", "0..65536"), ("autocheckpoint=0", "1..")]:
        key = opt.split("=")[0]
        sql = "CREATE VIRTUAL TABLE t USING h5mem(path=%s, %s%s)" % (q(fn), "" if key == "dim" else "dim=8, ", opt)
        msg = expect_error(db, sql, "%s: expected an integer in %s" % (opt, rng))
        check("unknown" not in msg, "%s: %r" % (sql, msg))
    # nlist=0 and pq_m=0 are their defaults, as the synopsis shows them
    try:
        db.execute("CREATE VIRTUAL TABLE t USING h5mem(path=%s, dim=8, index=ivf, nlist=0, pq_m=0)"
                   % q(os.path.join(d, "ivf.h5")))
        got = db.execute("SELECT h5mem_index('t') ->> '$.index'").fetchone()[0]
        check(got == "ivf", "nlist=0, pq_m=0: index %r" % got)
    except sqlite3.Error as e:
        check(False, "nlist=0, pq_m=0: %s" % e)
    db.execute("CREATE VIRTUAL TABLE ivf USING h5mem(path=%s, dim=8)" % q(fn))
    db.execute("INSERT INTO ivf(id, text, embedding) VALUES (1, 'coffee', '[1,0,0,0,0,0,0,0]')")
    db.execute("INSERT INTO ivf_entities(id, name) VALUES (1, 'Alice')")
    v = "'[1,0,0,0,0,0,0,0]'"
    cases = [
        ("vec_search('ivf', %s, 1, '{\"ef\": 0}')" % v, "ef", "1 to 100000"),
        ("vec_search('ivf', %s, 1, '{\"ef\": 100001}')" % v, "ef", "1 to 100000"),
        ("vec_search('ivf', %s, 1, '{\"ef\": 1.5}')" % v, "ef", "1 to 100000"),
        ("vec_search('ivf', %s, 1, '{\"nprobe\": 0}')" % v, "nprobe", "1 to 16777216"),
        ("vec_search('ivf', %s, 1, '{\"exact\": 1}')" % v, "exact", "true or false"),
        ("vec_search('ivf', %s, 1, '{\"index\": \"tree\"}')" % v, "index", "flat"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"ef\": 0}')" % v, "ef", "1 to 100000"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"candidates\": 0}')" % v, "candidates", ">= 1"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"keyword_candidates\": -1}')" % v, "keyword_candidates", ">= 1"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"vector_weight\": -1}')" % v, "vector_weight", "from 0"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"rrf_k\": -1}')" % v, "rrf_k", "from 0"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"fusion\": \"max\"}')" % v, "fusion", "rrf"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"rerank\": {\"recency\": -1}}')" % v, "recency", "from 0"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"rerank\": {\"half_life_days\": 0}}')" % v, "half_life_days", "from 1e-09"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"rerank\": {\"default_authority\": 2}}')" % v, "default_authority", "from 0 to 1"),
        ("hybrid('ivf', 'coffee', %s, 1, '{\"rerank\": {\"sources\": {\"user\": 2}}}')" % v, "'user'", "from 0 to 1"),
        ("kg_bfs('ivf', 'Alice', 1, '{\"limit\": 0}')", "limit", ">= 1"),
        ("kg_activate('ivf', 'Alice', '{\"decay\": 0}')", "decay", "(0, 1]"),
        ("kg_activate('ivf', 'Alice', '{\"decay\": 1.5}')", "decay", "to 1"),
        ("kg_activate('ivf', 'Alice', '{\"threshold\": 0}')", "threshold", "> 0"),
        ("kg_activate('ivf', 'Alice', '{\"steps\": 0}')", "steps", "1 to 1000"),
        ("kg_activate('ivf', 'Alice', '{\"steps\": 1001}')", "steps", "1 to 1000"),
    ]
    for call, opt, rng in cases:
        sql = "SELECT * FROM " + call
        msg = expect_error(db, sql, "'%s'" % opt if not opt.startswith("'") else opt)
        check(rng in msg and "unknown option" not in msg, "%s: %r lacks the range %r" % (sql, msg, rng))
    for opts, opt, rng in [('{"dim": 0}', "dim", "1 to 65536"), ('{"batch": 0}', "batch", "1 to 1000000"),
                           ('{"limit": -1}', "limit", "0 to"), ('{"progress_every": 0}', "progress_every", "1 to")]:
        sql = "SELECT h5mem_migrate('nosuch.db', 'nosuch.h5', '%s')" % opts
        msg = expect_error(db, sql, "'%s'" % opt)
        check(rng in msg and "unknown option" not in msg, "%s: %r lacks the range %r" % (sql, msg, rng))
    # the arguments that are numbers
    expect_error(db, "SELECT * FROM vec_search('ivf', %s, -1)" % v, "k must be an integer >= 0")
    expect_error(db, "SELECT * FROM kg_bfs('ivf', 'Alice', -1)", "max_depth must be an integer >= 0")
    db.close()


def test_strict_json(d):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=3)" % q(os.path.join(d, "strict.h5")))
    db.execute("INSERT INTO mem(id, text, embedding, source) VALUES (1, 'coffee', '[1,0,0]', 'user'),"
               " (2, 'coffee tea', '[0,1,0]', 'web')")
    db.execute("INSERT INTO mem_entities(id, name) VALUES (1, 'Alice'), (2, 'Bob')")
    db.execute("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, 'knows')")
    deep = "[" * 1000 + "]" * 1000  # with the object around it: 1001 levels
    bad = {  # an SQL expression for an options object SQLite's json_each took
        "lone surrogate": "'{\"x\": \"\\ud800\"}'",
        "lone low surrogate": "'{\"x\": \"a\\udc00b\"}'",
        "invalid UTF-8": "CAST(X'7B2278223A2280227D' AS TEXT)",  # {"x":"\x80"}
        "an overlong form": "CAST(X'7B2278223A22C0AF227D' AS TEXT)",
        "nesting 1001 deep": "'{\"x\": %s}'" % deep,
    }
    calls = [
        "SELECT * FROM vec_search('mem', '[1,0,0]', 1, %s)",
        "SELECT * FROM bm25('mem', 'coffee', 1, %s)",
        "SELECT * FROM hybrid('mem', 'coffee', '[1,0,0]', 1, %s)",
        "SELECT * FROM kg_bfs('mem', 'Alice', 2, %s)",
        "SELECT * FROM kg_activate('mem', 'Alice', %s)",
        "SELECT h5mem_migrate('nosuch.db', 'nosuch.h5', %s)",
    ]
    for what, expr in bad.items():
        for call in calls:
            sql = call % expr
            msg = expect_error(db, sql, "options: malformed JSON")
            check("unknown option" not in msg, "%s (%s): %r" % (sql, what, msg))
    # seeds too (an array of names or ids; an object name -> activation)
    for expr in ["'[\"\\ud800\"]'", "'{\"\\udc00\": 1}'", "CAST(X'5B2280225D' AS TEXT)",
                 "CAST(X'5B22C0AF225D' AS TEXT)", "'[%s]'" % deep]:
        expect_error(db, "SELECT * FROM kg_activate('mem', %s)" % expr, "seeds: malformed JSON")
    # 1000 levels is the limit, not past it: the usual answer
    expect_error(db, "SELECT * FROM vec_search('mem', '[1,0,0]', 1, '{\"x\": %s}')" % deep[1:-1],
                 "unknown option 'x'")
    # escapes decode as json_each decoded them: keys, values, pairs
    got = db.execute("SELECT id FROM vec_search('mem', '[1,0,0]', 1, '{\"\\u0065f\": 10}')").fetchall()
    check(got == [(1,)], "escaped key: %r" % got)
    expect_error(db, "SELECT * FROM vec_search('mem', '[1,0,0]', 1, '{\"ef\": 10, \"\\u0065f\": 20}')",
                 "duplicate option 'ef'")
    got = db.execute("SELECT id FROM hybrid('mem', 'coffee', '[1,0,0]', 2, '{\"fusion\": \"rr\\u0066\"}')").fetchall()
    check(sorted(got) == [(1,), (2,)], "escaped value: %r" % got)
    expect_error(db, "SELECT * FROM hybrid('mem', 'coffee', '[1,0,0]', 1, '{\"fusion\": \"\\uD83D\\uDE00\"}')",
                 "bad value for 'fusion'")
    # an integer past int64 is clamped, as SQLite gave it
    got = db.execute("SELECT id FROM kg_bfs('mem', 'Alice', 2, '{\"limit\": 99999999999999999999}')").fetchall()
    check(sorted(got) == [(1,), (2,)], "huge limit: %r" % got)
    expect_error(db, "SELECT * FROM kg_activate('mem', '[99999999999999999999]')", "is not an entity id")
    # source authorities found by the decoded key (SQLite 3.40's json_extract
    # compared the key as written, so "w\u0065b" was not "web")
    q0 = ("SELECT id FROM hybrid('mem', 'coffee', NULL, 2, '{\"rerank\": {\"relevance\": 0, \"authority\": 1,"
          " \"default_authority\": 0, \"sources\": {\"%s\": 1, \"user\": 0.5}}}')")
    check(db.execute(q0 % "web").fetchall()[0] == (2,), "authority by key")
    check(db.execute(q0 % "w\\u0065b").fetchall()[0] == (2,), "authority by an escaped key")
    check(db.execute(q0 % "nosuch").fetchall()[0] == (1,), "authority by key, none")
    db.close()


def main():
    d = tempfile.mkdtemp(prefix="h5options_")
    os.chdir(d)
    for test in (test_names, test_constructors, test_duplicates, test_schemas, test_ranges, test_strict_json):
        try:
            test(d)
        except sqlite3.Error as e:
            check(False, "%s: %s" % (test.__name__, e))
    finish()


if __name__ == "__main__":
    main()
