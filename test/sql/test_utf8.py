"""Strings that are not well-formed UTF-8 are refused by every SQL writer
(docs/SQL.md, "Errors"), so that every reader of the files gets valid
strings back:

- the h5mem table's text, source, session, tags, tier and meta, given as
  TEXT or as a BLOB, on INSERT and UPDATE: each invalid shape (overlong
  forms, surrogates, code points past U+10FFFF, truncated sequences, stray
  continuation bytes, bytes that never occur) is an error naming the column
  and the byte; a NUL byte too; the store is unchanged (an UPDATE keeps its
  old row, in a transaction and outside one);
- the graph tables' strings (name, type, aliases, meta) and kg_entity;
  kg_import_jsonl reads ill-formed UTF-8 as U+FFFD (as the MCP memory
  server's Node does) and keeps U+0000 as U+FFFD with the string in meta;
- the h5 table's UTF-8 string columns (variable and fixed length; ASCII
  fixed-length strings still take any bytes);
- the edges of the valid range are accepted and round-trip byte for byte;
- afterwards h5py reads every string of the files with .decode() and
  .asstr().

Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, connect, expect_error, failures, finish, q  # noqa: E402

# (bytes, offset of the first bad byte, what it is)
INVALID = [
    (b"ab\xc0\xaf", 2, "overlong '/' (C0)"),
    (b"\xc1\xbf", 0, "overlong (C1)"),
    (b"x\xe0\x80\xaf", 1, "overlong 3-byte"),
    (b"\xf0\x80\x80\xaf", 0, "overlong 4-byte"),
    (b"abc\xed\xa0\x80", 3, "surrogate U+D800"),
    (b"\xed\xbf\xbf", 0, "surrogate U+DFFF"),
    (b"\xf4\x90\x80\x80", 0, "U+110000"),
    (b"ok \xf5\x80\x80\x80", 3, "F5 lead byte"),
    (b"\xff", 0, "FF"),
    (b"ab\xe2\x82", 2, "truncated at the end"),
    (b"\xe2\x82x", 0, "truncated in the middle"),
    (b"\xf0\x9f\x98", 0, "truncated 4-byte"),
    (b"a\x80b", 1, "stray continuation byte"),
    (b"\xc3\xa9\xbf", 2, "continuation after a whole character"),
]

# the edges of the valid range: each must be accepted and read back as it is
VALID = [b"\xc2\x80", b"\xdf\xbf", b"\xe0\xa0\x80", b"\xed\x9f\xbf", b"\xee\x80\x80", b"\xef\xbf\xbd",
         b"\xef\xbf\xbf", b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", "héllo wörld ✓ 🎉".encode()]

COLS = ["text", "source", "session", "tags", "tier", "meta"]


def hexlit(b):
    return "x'%s'" % b.hex()


def as_text(b):
    """b as an SQL TEXT value (the bytes as they are)."""
    return "CAST(%s AS TEXT)" % hexlit(b)


def value_for(col, b):
    """The SQL for col holding b: meta must be JSON, so b is a string in it."""
    if col == "meta":
        return as_text(b'{"k":"' + b + b'"}')
    return as_text(b)


def dump(db, table, cols):
    return db.execute("SELECT %s FROM %s ORDER BY 1" % (", ".join(cols), table)).fetchall()


def every_string_decodes(path, what):
    """h5py: every string dataset of the file reads with .decode() and .asstr()."""
    bad = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.dtype.kind != "O" and obj.dtype.kind != "S":
            return
        if h5py.check_string_dtype(obj.dtype) is None:
            return
        try:
            for v in np.asarray(obj[()]).ravel():
                if isinstance(v, bytes):
                    v.decode("utf-8")
            if h5py.check_string_dtype(obj.dtype).encoding == "utf-8":
                obj.asstr()[()]
        except (UnicodeDecodeError, ValueError) as e:
            bad.append("%s: %s" % (name, e))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    check(not bad, "%s: strings h5py cannot decode: %r" % (what, bad))


def test_h5mem(d):
    fn = os.path.join(d, "mem.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    db.execute("INSERT INTO mem(id, text, source, session, tags, tier, meta) "
               "VALUES (1, 'one', 's', 'x', 't', 'hot', '{\"a\":1}')")
    allcols = ["id"] + COLS
    before = dump(db, "mem", allcols)
    for col in COLS:
        for b, at, what in INVALID:
            off = at + (len('{"k":"') if col == "meta" else 0)
            word = ("meta: malformed JSON: invalid UTF-8 at byte %d" % off if col == "meta"
                    else "h5mem: %s: invalid UTF-8 at byte %d" % (col, off))
            other = "" if col == "text" else ", text"
            otherv = "" if col == "text" else ", 'x'"
            msg = expect_error(db, "INSERT INTO mem(%s%s) VALUES (%s%s)" % (col, other, value_for(col, b), otherv),
                               word)
            check(word in msg, "%s, %s (TEXT): %r" % (col, what, msg))
            if col != "meta":  # the same bytes as a BLOB
                expect_error(db, "INSERT INTO mem(%s%s) VALUES (%s%s)" % (col, other, hexlit(b), otherv), word)
            expect_error(db, "UPDATE mem SET %s = %s WHERE id = 1" % (col, value_for(col, b)), word)
        if col != "meta":
            expect_error(db, "INSERT INTO mem(%s%s) VALUES (%s%s)" % (col, other, as_text(b"ab\0c"), otherv),
                         "h5mem: %s: a NUL byte at byte 2" % col)
    check(dump(db, "mem", allcols) == before, "refused writes changed the table: %r" % dump(db, "mem", allcols))
    # an UPDATE refused in a transaction keeps its old row (and OR REPLACE its victim)
    db.execute("BEGIN")
    db.execute("INSERT INTO mem(id, text) VALUES (2, 'two')")
    expect_error(db, "UPDATE mem SET text = %s WHERE id = 1" % as_text(b"\xff"), "invalid UTF-8")
    expect_error(db, "UPDATE OR REPLACE mem SET id = 2, text = %s WHERE id = 1" % as_text(b"\xff"),
                 "invalid UTF-8")
    expect_error(db, "INSERT OR REPLACE INTO mem(id, text) VALUES (2, %s)" % as_text(b"\xff"), "invalid UTF-8")
    got = dump(db, "mem", ["id", "text"])
    check(got == [(1, "one"), (2, "two")], "refused UPDATEs in a transaction: %r" % got)
    db.execute("COMMIT")
    check(dump(db, "mem", ["id", "text"]) == [(1, "one"), (2, "two")], "after COMMIT")
    # the valid edges round-trip in every column
    for i, b in enumerate(VALID):
        db.execute("INSERT INTO mem(id, text, source, session, tags, tier, meta) VALUES (%d, %s)"
                   % (10 + i, ", ".join(value_for(c, b) for c in COLS)))
        row = db.execute("SELECT CAST(text AS BLOB), CAST(tier AS BLOB), CAST(meta AS BLOB) FROM mem "
                         "WHERE id = %d" % (10 + i)).fetchone()
        check(row == (b, b, b'{"k":"' + b + b'"}'), "valid %r: %r" % (b, row))
    db.execute("INSERT INTO mem(mem) VALUES ('checkpoint')")
    db.close()
    every_string_decodes(fn, "h5mem")
    with h5py.File(fn, "r") as f:
        texts = [t.decode() for t in f["/memories/text"][()]]
    check(texts[:2] == ["one", "two"] and texts[2:] == [b.decode() for b in VALID], "h5py texts: %r" % texts)


def test_graph(d):
    fn = os.path.join(d, "g.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=2)" % q(fn))
    db.execute("INSERT INTO mem_entities(id, name, type) VALUES (1, 'Alice', 'person'), (2, 'Bob', 'person')")
    db.execute("INSERT INTO mem_relations(id, src, dst, type) VALUES (1, 1, 2, 'knows')")
    ents = dump(db, "mem_entities", ["id", "name", "type", "aliases", "meta"])
    rels = dump(db, "mem_relations", ["id", "type", "meta"])
    # (statement, how the bytes go in, the message, how far into the value they stand)
    writes = [
        ("INSERT INTO mem_entities(name) VALUES (%s)", as_text, "mem_entities: name", 0),
        ("INSERT INTO mem_entities(name) VALUES (%s)", hexlit, "mem_entities: name", 0),
        ("INSERT INTO mem_entities(name, type) VALUES ('x', %s)", as_text, "mem_entities: type", 0),
        ("INSERT INTO mem_entities(name, aliases) VALUES ('x', %s)", lambda b: as_text(b'["' + b + b'"]'),
         "aliases: expected a JSON array of names: malformed JSON", 2),
        ("INSERT INTO mem_entities(name, meta) VALUES ('x', %s)", lambda b: value_for("meta", b),
         "meta: malformed JSON", 6),
        ("UPDATE mem_entities SET name = %s WHERE id = 1", as_text, "mem_entities: name", 0),
        ("INSERT INTO mem_relations(src, dst, type) VALUES (1, 2, %s)", as_text, "mem_relations: type", 0),
        ("UPDATE mem_relations SET type = %s WHERE id = 1", hexlit, "mem_relations: type", 0),
        ("SELECT kg_entity('mem', %s)", as_text, "kg_entity: mem_entities: name", 0),
        ("SELECT kg_entity('mem', 'Carol', %s)", as_text, "kg_entity: mem_entities: type", 0),
    ]
    for b, at, _ in INVALID:
        for sql, val, word, off in writes:
            expect_error(db, sql % val(b), "%s: invalid UTF-8 at byte %d" % (word, at + off))
    expect_error(db, "INSERT INTO mem_entities(name) VALUES (%s)" % as_text(b"a\0b"),
                 "mem_entities: name: a NUL byte at byte 1")
    check(dump(db, "mem_entities", ["id", "name", "type", "aliases", "meta"]) == ents,
          "refused writes changed mem_entities")
    check(dump(db, "mem_relations", ["id", "type", "meta"]) == rels, "refused writes changed mem_relations")
    # kg_import_jsonl reads the MCP memory server's file as that server
    # (Node) reads it: each ill-formed sequence one U+FFFD, counted
    for i, (b, at, _) in enumerate(INVALID):
        line = b'{"type":"entity","name":"bad' + str(i).encode() + b + b'"}'
        rep = json.loads(db.execute("SELECT kg_import_jsonl('mem', %s)" % as_text(line)).fetchone()[0])
        want = ("bad%d".encode() % i + b).decode("utf-8", "replace")  # (Python replaces as WHATWG does)
        check(rep["entities"] == 1 and rep["adjusted"]["invalid_utf8"] == want.count("\ufffd"),
              "import of %r: %r" % (b, rep))
        check(db.execute("SELECT count(*) FROM mem_entities WHERE name = ?", (want,)).fetchone()[0] == 1,
              "%r read as %r" % (b, want))
    # a NUL (\u0000) in any string of a line (an observation, a name, a
    # type): the store keeps U+FFFD, and meta the string itself, which the
    # export gives back
    lines = ('{"type":"entity","name":"Dan","observations":["x\\u0000y"]}\n'
             '{"type":"entity","name":"D\\u0000an","entityType":"p\\u0000"}\n'
             '{"type":"relation","from":"Dan","to":"Alice","relationType":"k\\u0000nows"}')
    rep = json.loads(db.execute("SELECT kg_import_jsonl('mem', ?)", (lines,)).fetchone()[0])
    check(rep["adjusted"]["strings_kept_in_meta"] == 4, "kept in meta: %r" % rep)
    check(db.execute("SELECT name, type, meta FROM mem_entities WHERE name = ?", ("D\ufffdan",)).fetchall() ==
          [("D\ufffdan", "p\ufffd", '{"jsonl":{"name":"\\"D\\\\u0000an\\"","entityType":"\\"p\\\\u0000\\""}}')],
          "U+0000 stored as U+FFFD, the string in meta")
    check(db.execute("SELECT text FROM mem").fetchall() == [("x\ufffdy",)], "an observation's U+0000")
    out = db.execute("SELECT kg_export_jsonl('mem')").fetchone()[0].split("\n")
    for want in ('"observations":["x\\u0000y"]', '"name":"D\\u0000an","entityType":"p\\u0000"',
                 '"relationType":"k\\u0000nows"'):
        check(any(want in l for l in out), "exported as it was: %s in %r" % (want, out))
    # an escaped backslash before u0000 is no NUL: the name is those 7 characters
    db.execute("SELECT kg_import_jsonl('mem', '{\"type\":\"entity\",\"name\":\"B\\\\u0000\"}')")
    check(db.execute("SELECT count(*) FROM mem_entities WHERE name = 'B\\u0000'").fetchone()[0] == 1,
          "an escaped backslash before u0000 was taken for a NUL")
    for i, b in enumerate(VALID):
        db.execute("INSERT INTO mem_entities(name, type, aliases) VALUES (%s, %s, %s)"
                   % (as_text(b + b"%d" % i), as_text(b), as_text(b'["' + b + b'"]')))
    db.execute("INSERT INTO mem(mem) VALUES ('checkpoint')")
    db.close()
    every_string_decodes(fn, "graph")


def test_h5_table(d):
    fn = os.path.join(d, "t.h5")
    with h5py.File(fn, "w", libver="latest") as f:
        f.create_dataset("fixed", shape=(0,), maxshape=(None,), chunks=(16,),
                         dtype=h5py.string_dtype("utf-8", 8))
        f.create_dataset("ascii", shape=(0,), maxshape=(None,), chunks=(16,), dtype="S8")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING h5(file=%s, dataset='/rows', schema='n int32, s text')" % q(fn))
    db.execute("CREATE VIRTUAL TABLE fx USING h5(file=%s, dataset='/fixed')" % q(fn))
    db.execute("CREATE VIRTUAL TABLE asc USING h5(file=%s, dataset='/ascii')" % q(fn))
    db.execute("INSERT INTO t(n, s) VALUES (1, 'ok')")
    db.execute("INSERT INTO fx(value) VALUES ('ok')")
    for b, at, what in INVALID:
        expect_error(db, "INSERT INTO t(n, s) VALUES (2, %s)" % as_text(b),
                     "column s: invalid UTF-8 at byte %d" % at)
        expect_error(db, "INSERT INTO t(n, s) VALUES (2, %s)" % hexlit(b), "column s: invalid UTF-8 at byte %d" % at)
        expect_error(db, "INSERT INTO fx(value) VALUES (%s)" % as_text(b), "invalid UTF-8 at byte %d" % at)
    # an ASCII fixed-length string takes bytes as they are (h5py reads them as bytes)
    db.execute("INSERT INTO asc(value) VALUES (%s)" % hexlit(b"\xff\xfe"))
    for b in VALID[:-1]:
        db.execute("INSERT INTO t(n, s) VALUES (3, %s)" % as_text(b))
        db.execute("INSERT INTO fx(value) VALUES (%s)" % as_text(b))
    db.close()
    with h5py.File(fn, "r") as f:
        s = list(f["/rows"]["s"])
        fx = list(f["/fixed"].asstr()[()])
        asc = list(f["/ascii"][()])
    check([x.decode() for x in s] == ["ok"] + [b.decode() for b in VALID[:-1]], "h5 table strings: %r" % s)
    check(fx == ["ok"] + [b.decode() for b in VALID[:-1]], "fixed strings: %r" % fx)
    check(asc == [b"\xff\xfe"], "ascii strings: %r" % asc)


def test_store_attrs(d):
    """agent= and embedder= become attributes of / : the same rule, no file
    when they break it.  The sqlite3 shell takes the statement's bytes as
    they are (Python's sqlite3 module cannot hold invalid UTF-8 in SQL)."""
    for opt, at in [(b"agent='a\xffb'", 1), (b"embedder='xy\xc0\xaf'", 2)]:
        fn = os.path.join(d, "attrs.h5")
        sql = (b".load " + EXT.encode() + b"\nCREATE VIRTUAL TABLE m USING h5mem(path='" + fn.encode()
               + b"', dim=4, " + opt + b");\n")
        r = subprocess.run(["sqlite3", ":memory:"], input=sql, capture_output=True)
        word = opt.split(b"=")[0].decode()
        check(("h5mem: %s: invalid UTF-8 at byte %d" % (word, at)).encode() in r.stderr,
              "%s: %r" % (word, r.stderr))
        check(not os.path.exists(fn), "a store was created with %s" % word)


def main():
    d = tempfile.mkdtemp(prefix="h5mem_utf8_")
    test_h5mem(d)
    test_graph(d)
    test_h5_table(d)
    test_store_attrs(d)
    if not failures:
        shutil.rmtree(d, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
