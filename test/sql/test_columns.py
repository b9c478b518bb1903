"""Declared columns (sqlite-vec's vec0 syntax) in the h5mem table, against
numpy brute force and h5py.

- Filters on metadata and partition-key columns before ranking: every
  operator (=, !=, <, <=, >, >=, BETWEEN, IN with NULL members, IS [NOT]
  NULL) on integer, float, text and boolean columns, alone and ANDed, at k
  1, 10, 100 and 10,000, in the KNN form and in vec_search's {"where": ...}
  ($nin too): the ids equal numpy's exact top k among the rows that meet
  the condition (SQL's NULL: a comparison with NULL meets nothing), in
  order (ties of equal vectors in the order the records were stored),
  distances to 1e-4. In five states of one store of 12,000 records: all in
  memory before any checkpoint, after a checkpoint, reopened with path=
  alone on a new connection, after deletes, updates and inserts since the
  checkpoint (file rows and memory records mixed), after optimize.
- bm25 and hybrid with "where": the filtered top k is the unfiltered
  ranking restricted to the matching records.
- Partition keys (integer and text): `user_id = ?` alone and with another
  filter, every partition.
- Distance bounds in the KNN form (distance >, >=, <, <=, with k and a
  filter) before the k rows are picked; paging by distance equals one
  large query.
- Values: every type round-trips (vectors as BLOBs, int8 from JSON,
  float16, bit), through checkpoint and reopen; wrong types are refused
  naming the column; UPDATE of one column keeps the others; DELETE;
  ROLLBACK.
- A text primary key: unique, free again after delete or rollback, across
  checkpoint and reopen; `WHERE key = 'x'`.
- Schema: reopening with path= alone restores the columns; restating them
  must match (the error names the difference); bad declarations.
- The file through h5py: /memories/columns/<name> with the documented NULLs
  (INT64_MIN, NaN, -1, null references, <name>.missing), the root's
  `columns` attribute, h5mem_format_version 2 (1 without declared columns).

Run by make check with Debian's /usr/bin/python3 (numpy; h5py where present).
"""
import json
import os
import sqlite3
import struct
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, failures, finish, q  # noqa: E402

DIM = 8
N = 12000
KS = (1, 10, 100, 10000)
INT64_MIN = -9223372036854775808
BIG = 2 ** 53 + 1  # (a float64 cannot hold it: integer/float comparisons must be exact)
ODD = 0x9e3779b97f4a7c15 - 2 ** 64  # (the partition index once keyed NULLs so)

SCHEMA = ("embedding float[8], user_id integer partition key, qty integer, category text, price float, "
          "flag boolean, +payload blob, key text primary key, img int8[4]")
DECL = ("user_id", "qty", "category", "price", "flag", "payload", "key", "img")
SOURCES = ["user", "agent", "tool", None]
CATS = ["a", "b", "c", "d", "B", "caf\u00e9", ""]
WORDS = ["alpha", "beta", "gamma", "delta", "omega", "river", "stone", "cloud"]


def rm_store(fn):
    for f in (fn, fn + "-wal"):
        if os.path.exists(f):
            os.remove(f)


# ---- the model: what the store must hold -----------------------------------------------------

class Model:
    """The records as the test wrote them; seq: the order they were stored (an UPDATE stores a
    record again), which breaks ties of equal distances."""

    def __init__(self):
        self.recs = {}
        self.seq = 0

    def put(self, r):
        self.seq += 1
        r["seq"] = self.seq
        self.recs[r["id"]] = r

    def arrays(self):
        """The live records that have an embedding, in stored order, as arrays."""
        rs = sorted((r for r in self.recs.values() if r["emb"] is not None), key=lambda r: r["seq"])
        a = {"rs": rs, "ids": np.array([r["id"] for r in rs], dtype=np.int64),
             "seq": np.array([r["seq"] for r in rs], dtype=np.int64),
             "E": np.array([r["emb"] for r in rs], dtype=np.float32).astype(np.float64)}
        for c in ("user_id", "qty", "category", "price", "flag", "source", "id"):
            a[c] = [r.get(c) for r in rs]
            a["key:" + c] = [sql_key(v) for v in a[c]]
        a["where"] = {int(i): j for j, i in enumerate(a["ids"])}
        return a


def rand_rec(rng, i, m):
    """A random record with id i; NULLs in every column."""
    def maybe(v, p=0.06):
        return None if rng.random() < p else v
    emb = None if rng.random() < 0.02 else rng.standard_normal(DIM).astype(np.float32)
    if emb is not None and m.recs and rng.random() < 0.01:  # an equal vector: a tie
        others = [r for r in list(m.recs.values())[-200:] if r["emb"] is not None]
        if others:
            emb = others[int(rng.integers(len(others)))]["emb"].copy()
    qty = int(rng.integers(-50, 51))
    if rng.random() < 0.01:
        qty = int(rng.choice([BIG, BIG - 1, BIG + 1, -BIG, 2 ** 62, -(2 ** 63) + 1, 2 ** 63 - 1]))
    price = float(rng.integers(-10, 200)) / 2
    if rng.random() < 0.02:
        price = float(rng.choice([-0.0, 1e-300, 1e300, 0.1, 9007199254740992.0]))
    return {
        "id": i, "emb": emb,
        "text": " ".join(rng.choice(WORDS, 3)),
        "source": SOURCES[int(rng.integers(4))],
        "user_id": maybe(int(rng.choice(list(range(1, 20)) + [-5, ODD]))),
        "qty": maybe(qty),
        "category": maybe(str(rng.choice(CATS))),
        "price": maybe(price),
        "flag": maybe(int(rng.integers(0, 2))),
        "payload": maybe(bytes(rng.integers(0, 256, int(rng.integers(0, 6))).astype(np.uint8))),
        "key": maybe("k%d" % i, 0.1),
        "img": maybe(bytes(rng.integers(-128, 128, 4).astype(np.int8).tobytes())),
    }


def insert_sql():
    return ("INSERT INTO v(id, text, embedding, source, %s) VALUES (?, ?, ?, ?, %s)"
            % (", ".join(DECL), ", ".join("?" * len(DECL))))


def rec_args(r):
    return [r["id"], r["text"], None if r["emb"] is None else r["emb"].tobytes(), r["source"]] + [r[c] for c in DECL]


def check_rows(db, m, what):
    """Every column of every record as the model says."""
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")  # (a damaged text fails the comparison)
    got = {row[0]: row for row in db.execute("SELECT id, text, embedding, source, %s FROM v" % ", ".join(DECL))}
    db.text_factory = str
    check(set(got) == set(m.recs), "%s: %d records, expected %d (missing %r, extra %r)" % (
        what, len(got), len(m.recs), sorted(set(m.recs) - set(got))[:5], sorted(set(got) - set(m.recs))[:5]))
    bad = []
    for i, r in m.recs.items():
        g = got.get(i)
        if g is None:
            continue
        want = tuple(rec_args(r))
        if g != want or any(type(a) is not type(b) for a, b in zip(g, want)):
            bad.append((g, want))
    check(not bad, "%s: %d records differ, e.g. %r" % (what, len(bad), bad[:2]))


# ---- conditions -------------------------------------------------------------------------------

def sql_key(v):
    """A text's order as SQLite's BINARY compares it."""
    return v.encode() if isinstance(v, str) else v


class Cond:
    """A condition on one column: its SQL (with parameters), its "where" JSON and its meaning
    (SQL's: a comparison with NULL meets nothing)."""

    def __init__(self, col, op, *args, sql=None, json_ok=True):
        self.col, self.op, self.args, self.sqltext, self.json_ok = col, op, args, sql, json_ok
        self.fixed = col in ("source", "id")  # (a fixed column: vec_search takes it in SQL)
        self.keys = [[sql_key(x) for x in a] if isinstance(a, list) else sql_key(a) for a in args]

    def __repr__(self):
        return "%s %s %r" % (self.col, self.op, self.args)

    def sql(self):
        c, a = self.col, self.args
        if self.sqltext:
            return self.sqltext, []
        if self.op == "isnull":
            return "%s IS NULL" % c, []
        if self.op == "notnull":
            return "%s IS NOT NULL" % c, []
        if self.op == "between":
            return "%s BETWEEN ? AND ?" % c, list(a)
        if self.op in ("in", "nin"):
            return "%s %s (%s)" % (c, "IN" if self.op == "in" else "NOT IN", ", ".join("?" * len(a[0]))), list(a[0])
        return "%s %s ?" % (c, self.op), [a[0]]

    def where(self, alt=False):
        ops = {"=": "$eq", "!=": "$ne", "<": "$lt", "<=": "$lte", ">": "$gt", ">=": "$gte",
               "in": "$in", "nin": "$nin"}
        a = self.args

        def jv(x):
            return bool(x) if self.col == "flag" and x in (0, 1) and alt else x
        if self.op == "isnull":
            return {self.col: None} if alt else {self.col: {"$null": True}}
        if self.op == "notnull":
            return {self.col: {"$null": False}}
        if self.op == "between":
            return {self.col: {"$between": [jv(a[0]), jv(a[1])]}}
        if self.op in ("in", "nin"):
            return {self.col: {ops[self.op]: [jv(x) for x in a[0]]}}
        if self.op == "=" and alt and a[0] is not None:
            return {self.col: jv(a[0])}
        return {self.col: {ops[self.op]: jv(a[0])}}

    def test(self, v):
        """Whether value v meets the condition."""
        return self.test_key(sql_key(v))

    def test_key(self, v):
        """The same of a value through sql_key."""
        op, a = self.op, self.keys
        if op == "isnull":
            return v is None
        if v is None:
            return False
        if op == "notnull":
            return True
        if op == "in":
            return any(x is not None and x == v for x in a[0])
        if op == "nin":
            return all(x is not None and x != v for x in a[0])
        if op == "between":
            return a[0] <= v <= a[1]
        x = a[0]
        if x is None:
            return False
        return {"=": v == x, "!=": v != x, "<": v < x, "<=": v <= x, ">": v > x, ">=": v >= x}[op]

    def mask(self, arr):
        t = self.test_key
        return np.array([t(v) for v in arr["key:" + self.col]], dtype=bool)


def conditions():
    cs = []
    # the partition key (integer)
    for op, x in (("=", 3), ("!=", 3), ("<", 5), ("<=", 5), (">", 15), (">=", 15), ("=", 999), ("=", -5), ("=", ODD),
                  ("=", 3.0), ("<", 4.5), ("=", None)):
        cs.append(Cond("user_id", op, x))
    cs += [Cond("user_id", "between", 4, 8), Cond("user_id", "in", [1, 2, None, 19]), Cond("user_id", "in", [None]),
           Cond("user_id", "isnull"), Cond("user_id", "notnull"), Cond("user_id", "nin", [1, 2, 3]),
           Cond("user_id", "=", 3, sql="user_id = '3'", json_ok=False)]
    # an integer column, with values a float64 cannot hold
    for op, x in (("=", 7), ("!=", 0), ("<", -10), ("<=", -10), (">", 40), (">=", 40), (">", float(BIG - 1)),
                  (">=", BIG), ("=", BIG), ("<", -float(BIG)), ("=", 7.5), ("!=", 7.0)):
        cs.append(Cond("qty", op, x))
    cs += [Cond("qty", "between", -3, 3), Cond("qty", "between", 2.5, 9.5), Cond("qty", "in", [1, 2, 3, None]),
           Cond("qty", "isnull"), Cond("qty", "notnull")]
    # text
    for op, x in (("=", "a"), ("!=", "b"), ("<", "b"), ("<=", "b"), (">", "c"), (">=", "c"), ("=", ""),
                  ("=", "caf\u00e9"), (">", "caf"), ("=", "A")):
        cs.append(Cond("category", op, x))
    cs += [Cond("category", "between", "a", "c"), Cond("category", "in", ["a", "caf\u00e9", None]),
           Cond("category", "isnull"), Cond("category", "notnull"), Cond("category", "nin", ["a", "b"])]
    # float
    for op, x in (("=", 10), ("=", 10.5), ("!=", 10.5), ("<", 20), ("<=", 20.5), (">", 80), (">=", 80),
                  ("=", 0), ("<", 0.0), (">", 1e299)):
        cs.append(Cond("price", op, x))
    cs += [Cond("price", "between", 10, 20.5), Cond("price", "in", [1.5, 2, None, 99.5]),
           Cond("price", "isnull"), Cond("price", "notnull")]
    # boolean
    for op, x in (("=", 1), ("=", 0), ("!=", 1), ("<", 1), (">", 0)):
        cs.append(Cond("flag", op, x))
    cs += [Cond("flag", "in", [0, None]), Cond("flag", "isnull"), Cond("flag", "notnull"),
           Cond("flag", "=", 1, sql="flag = TRUE")]
    combos = [
        [Cond("user_id", "=", 4), Cond("price", "<", 50)],
        [Cond("user_id", "=", 4), Cond("category", "in", ["a", "b", None]), Cond("flag", "=", 1)],
        [Cond("category", "=", "a"), Cond("flag", "isnull")],
        [Cond("price", "between", 10, 60), Cond("qty", ">", 0), Cond("category", "!=", "c")],
        [Cond("user_id", "in", [2, 3, 5]), Cond("qty", "isnull")],
        [Cond("user_id", "notnull"), Cond("price", ">=", 90), Cond("flag", "=", 0)],
        [Cond("price", ">", 10), Cond("price", "<", 12)],  # (one column twice)
        [Cond("user_id", "=", 7), Cond("user_id", "=", 8)],  # nothing
        [Cond("user_id", "=", 9), Cond("qty", "between", -20, 20), Cond("category", "isnull")],
        [Cond("flag", "!=", 0), Cond("category", ">=", "b"), Cond("qty", "<", 0)],
        [Cond("user_id", "=", 11), Cond("user_id", ">", 10)],
        [Cond("source", "=", "user"), Cond("user_id", "=", 4)],  # (with the fixed columns' filters)
        [Cond("id", "in", list(range(1, N, 37))), Cond("category", "=", "a")],
        [Cond("id", "in", list(range(5, N, 11))), Cond("source", "=", "tool"), Cond("price", "<", 30)],
        [Cond("qty", "in", list(range(-40, 41, 2)) + [None, BIG]), Cond("flag", "notnull")],  # (a long IN list)
        [Cond("category", "in", ["x%d" % i for i in range(30)] + ["b", "d"])],
    ]
    return [[c] for c in cs] + combos


def sql_of(conds):
    frags, params = [], []
    for c in conds:
        f, p = c.sql()
        frags.append(f)
        params += p
    return " AND ".join(frags), params


def where_of(conds, alt):
    conds = [c for c in conds if not c.fixed]
    ws = [c.where(alt) for c in conds]
    cols = [c.col for c in conds]
    if not ws:
        return {}
    if len(set(cols)) == len(cols) and alt:
        w = {}
        for x in ws:
            w.update(x)
        return w
    return ws[0] if len(ws) == 1 else {"$and": ws}


# ---- comparing with brute force ---------------------------------------------------------------

def expected(arr, qv, mask, k):
    d = np.sqrt(((arr["E"] - qv.astype(np.float64)) ** 2).sum(axis=1))
    sel = np.nonzero(mask)[0]
    order = sel[np.lexsort((arr["seq"][sel], d[sel]))][:k]
    return arr["ids"][order], d[order], d


def same_top(got, arr, want_ids, want_d, dall, mask, what):
    """got [(id, distance)] against the exact top k (want_ids, want_d; dall: every record's
    distance, mask: those meeting the condition): as many rows; each a record that meets the
    condition, once; distances to 1e-4 of the expected ones row by row and of the record's own;
    the same records but where the k-th distance is tied within 1e-5; nearest first (within
    1e-5), records at equal distances (equal vectors) in the order they were stored."""
    def fail(why):
        check(False, "%s: %s (got %r, expected %r)" % (
            what, why, got[:3], list(zip(want_ids[:3].tolist(), want_d[:3].tolist()))))
        return False
    if len(got) != len(want_ids):
        return fail("%d rows, expected %d" % (len(got), len(want_ids)))
    if not got:
        return True
    gi = np.array([g[0] for g in got], dtype=np.int64)
    gd = np.array([g[1] for g in got], dtype=np.float64)
    where = arr["where"]
    bad = [int(i) for i in gi if int(i) not in where]
    if bad:
        return fail("ids %r are not live records with an embedding" % bad[:5])
    gj = np.array([where[int(i)] for i in gi])
    if len(set(gi.tolist())) != len(gi):
        return fail("an id comes twice")
    if not mask[gj].all():
        return fail("ids %r do not meet the condition" % gi[~mask[gj]][:5].tolist())
    off = np.nonzero(np.abs(gd - want_d) > 1e-4)[0]
    if len(off):
        i = int(off[0])
        return fail("row %d: distance %r, expected %r" % (i, got[i], (int(want_ids[i]), float(want_d[i]))))
    off = np.nonzero(np.abs(gd - dall[gj]) > 1e-4)[0]
    if len(off):
        return fail("row %d: %r is not that record's distance %r" % (int(off[0]), got[int(off[0])], dall[gj[int(off[0])]]))
    extra = set(gi.tolist()) ^ set(want_ids.tolist())
    kth = want_d[-1]
    far = [i for i in extra if abs(dall[where[i]] - kth) > 1e-5]
    if far:
        return fail("ids %r differ from the expected ones (not at the k-th distance)" % sorted(far)[:5])
    g = dall[gj]
    back = np.nonzero(g[1:] < g[:-1] - 1e-5)[0]
    if len(back):
        i = int(back[0])
        return fail("rows %d, %d out of order: %r" % (i, i + 1, got[i:i + 2]))
    order = np.lexsort((np.arange(len(g)), g))  # by distance, then row: equal distances in row order
    gs, ss = g[order], arr["seq"][gj][order]
    tie = np.nonzero((gs[1:] == gs[:-1]) & (ss[1:] < ss[:-1]))[0]
    if len(tie):
        i = int(tie[0])
        return fail("ids %d and %d at equal distances are not in the order they were stored" % (
            gi[order[i]], gi[order[i + 1]]))
    return True


def run_filters(db, m, rng, state, conds_list):
    arr = m.arrays()
    nq = 0
    for ci, conds in enumerate(conds_list):
        mask = np.ones(len(arr["ids"]), dtype=bool)
        for c in conds:
            mask &= c.mask(arr)
        frag, params = sql_of(conds)
        json_ok = all(c.json_ok for c in conds)
        for k in KS:
            if rng.random() < 0.15 and len(arr["ids"]):  # the query equals a stored vector (ties at 0)
                qv = arr["E"][int(rng.integers(len(arr["ids"])))].astype(np.float32)
            else:
                qv = rng.standard_normal(DIM).astype(np.float32)
            want_ids, want_d, dall = expected(arr, qv, mask, k)
            what = "%s: KNN k=%d WHERE %s %r" % (state, k, frag, params)
            if all(c.op != "nin" for c in conds):  # ($nin: vec_search's alone; SQLite keeps NOT IN to itself)
                try:
                    got = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = ? AND " + frag,
                                     [qv.tobytes(), k] + params).fetchall()
                    same_top(got, arr, want_ids, want_d, dall, mask, what)
                except sqlite3.Error as e:
                    check(False, "%s: %s" % (what, e))
                nq += 1
            if not json_ok:
                continue
            w = {"where": where_of(conds, (ci + k) % 2 == 1)}
            ffrag, fparams = sql_of([c for c in conds if c.fixed])
            what = "%s: vec_search k=%d %s %s %r" % (state, k, json.dumps(w), ffrag, fparams)
            try:
                got = db.execute("SELECT id, distance FROM vec_search('v', ?, ?, ?)" + (" WHERE " + ffrag if ffrag else ""),
                                 [qv.tobytes(), k, json.dumps(w)] + fparams).fetchall()
                same_top(got, arr, want_ids, want_d, dall, mask, what)
            except sqlite3.Error as e:
                check(False, "%s: %s" % (what, e))
            nq += 1
    return nq


def run_scans(db, m, state, conds_list):
    """The table's own queries (no MATCH) with the same conditions: the ids of every live record
    that meets them, with or without an embedding."""
    recs = list(m.recs.values())
    for conds in conds_list:
        want = {r["id"] for r in recs if all(c.test(r[c.col]) for c in conds)}
        frag, params = sql_of(conds)
        try:
            got = [r[0] for r in db.execute("SELECT id FROM v WHERE " + frag, params)]
            check(len(got) == len(set(got)) and set(got) == want, "%s: scan WHERE %s %r: %d ids (%d expected), %r extra, %r missing" % (
                state, frag, params, len(got), len(want), sorted(set(got) - want)[:3], sorted(want - set(got))[:3]))
            n = db.execute("SELECT count(*) FROM v WHERE " + frag, params).fetchone()[0]
            check(n == len(want), "%s: count(*) WHERE %s %r: %d, expected %d" % (state, frag, params, n, len(want)))
        except sqlite3.Error as e:
            check(False, "%s: scan WHERE %s: %s" % (state, frag, e))


def run_partitions(db, m, rng, state):
    """Every partition of user_id, alone and with another filter, both forms."""
    arr = m.arrays()
    for u in sorted({x for x in arr["user_id"] if x is not None}) + [1000]:
        for extra in (None, Cond("price", "<", 50), Cond("category", "=", "a")):
            conds = [Cond("user_id", "=", u)] + ([extra] if extra else [])
            mask = np.ones(len(arr["ids"]), dtype=bool)
            for c in conds:
                mask &= c.mask(arr)
            frag, params = sql_of(conds)
            k = int(rng.choice([5, 50, 2000]))
            qv = rng.standard_normal(DIM).astype(np.float32)
            want_ids, want_d, dall = expected(arr, qv, mask, k)
            got = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = ? AND " + frag,
                             [qv.tobytes(), k] + params).fetchall()
            same_top(got, arr, want_ids, want_d, dall, mask, "%s: partition KNN k=%d %s %r" % (state, k, frag, params))
            w = json.dumps({"where": where_of(conds, True)})
            got = db.execute("SELECT id, distance FROM vec_search('v', ?, ?, ?)", (qv.tobytes(), k, w)).fetchall()
            same_top(got, arr, want_ids, want_d, dall, mask, "%s: partition vec_search k=%d %s" % (state, k, w))


def run_bounds(db, m, rng, state):
    """Distance bounds before the k rows are picked; paging by distance."""
    arr = m.arrays()
    for lo, hi, k, conds in ((3.0, None, 10, []), (None, 2.5, 100, []), (2.0, 3.0, 10000, []),
                             (2.5, None, 50, [Cond("user_id", "=", 6)]), (None, 3.5, 20, [Cond("category", "=", "b")]),
                             (1.5, 4.0, 30, [Cond("price", "<", 40), Cond("flag", "=", 1)]),
                             (9.0, None, 10, []), (None, 0.1, 10, [])):
        for lo_op in ((">", ">=") if lo is not None else (None,)):
            for hi_op in (("<", "<=") if hi is not None else (None,)):
                qv = rng.standard_normal(DIM).astype(np.float32)
                d = np.sqrt(((arr["E"] - qv.astype(np.float64)) ** 2).sum(axis=1))
                mask = np.ones(len(arr["ids"]), dtype=bool)
                for c in conds:
                    mask &= c.mask(arr)
                # each bound at a matching record's own distance (as the store computes it), so
                # that > and >= differ; the records near a bound judged by the store's distances
                bparams, bsql = [], []
                for x, op in ((lo, lo_op), (hi, hi_op)):
                    if x is None:
                        continue
                    cand = np.nonzero(mask)[0]
                    if len(cand):
                        j = cand[int(np.argmin(np.abs(d[cand] - x)))]
                        x = store_dist1(db, qv, int(arr["ids"][j]))
                    near = np.nonzero(np.abs(d - x) < 1e-5)[0]
                    sd = d.copy()
                    sd[near] = [store_dist1(db, qv, int(arr["ids"][j])) for j in near]
                    mask &= {">": sd > x, ">=": sd >= x, "<": sd < x, "<=": sd <= x}[op]
                    bsql.append("distance %s ?" % op)
                    bparams.append(x)
                want_ids, want_d, dall = expected(arr, qv, mask, k)
                frag, params = sql_of(conds)
                sql = ("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = ? AND "
                       + " AND ".join(bsql + ([frag] if frag else [])))
                try:
                    got = db.execute(sql, [qv.tobytes(), k] + bparams + params).fetchall()
                    same_top(got, arr, want_ids, want_d, dall, mask, "%s: %s %r" % (state, sql, bparams + params))
                except sqlite3.Error as e:
                    check(False, "%s: %s: %s" % (state, sql, e))
    # paging: next page = distance > the last one's; the same sequence as one large query
    for conds in ([], [Cond("user_id", "in", [2, 3, 4])], [Cond("price", ">", 50), Cond("flag", "notnull")]):
        qv = rng.standard_normal(DIM).astype(np.float32)
        frag, params = sql_of(conds)
        extra = (" AND " + frag) if frag else ""
        whole = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = 3000" + extra,
                           [qv.tobytes()] + params).fetchall()
        pages, last = [], None
        while len(pages) < 3000:
            if last is None:
                page = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = 137" + extra,
                                  [qv.tobytes()] + params).fetchall()
            else:
                page = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = 137 AND distance > ?"
                                  + extra, [qv.tobytes(), last] + params).fetchall()
            if not page:
                break
            pages += page
            last = page[-1][1]
        # (a page ending inside a run of equal distances skips the rest of the run: the same cut)
        want = paged(whole, 137)
        n = min(len(want), 3000)
        check(pages[:n] == want[:n] and len(pages) >= n,
              "%s: paging by distance %r: %d rows differ from one query (first %r)"
              % (state, frag, sum(a != b for a, b in zip(pages, want)),
                 next(((a, b) for a, b in zip(pages, want) if a != b), None)))


def paged(whole, size):
    """The rows that paging through `whole` (nearest first) `size` at a time with `distance >
    last` visits."""
    out, i = [], 0
    while i < len(whole):
        page = whole[i:i + size]
        out += page
        last = page[-1][1]
        i += len(page)
        while i < len(whole) and whole[i][1] <= last:
            i += 1
    return out


def store_dist1(db, qv, rid):
    """The store's distance from qv to record rid (the KNN form restricted to it)."""
    r = db.execute("SELECT distance FROM v WHERE embedding MATCH ? AND k = 1 AND id = ?", (qv.tobytes(), rid)).fetchone()
    return r[0]


def run_text_search(db, m, rng, state):
    """bm25 and hybrid with "where": bm25's filtered top k is its unfiltered ranking restricted
    to the matching records (its statistics are over every record); hybrid returns k rows that
    meet the condition (when k do), their vector scores exact."""
    arr = m.arrays()
    for conds in ([Cond("user_id", "=", 5)], [Cond("category", "in", ["a", "b"]), Cond("price", "<", 60)],
                  [Cond("flag", "isnull")], [Cond("qty", ">=", BIG)]):
        w = json.dumps({"where": where_of(conds, False)})
        ok_ids = {i for i, r in m.recs.items() if all(c.test(r[c.col]) for c in conds)}
        for word in ("gamma", "river stone"):
            full = db.execute("SELECT id, score FROM bm25('v', ?, 100000)", (word,)).fetchall()
            want = [x for x in full if x[0] in ok_ids][:25]
            got = db.execute("SELECT id, score FROM bm25('v', ?, 25, ?)", (word, w)).fetchall()
            check([g[0] for g in got] == [x[0] for x in want] and
                  all(abs(a[1] - b[1]) <= 1e-9 * max(1, abs(b[1])) for a, b in zip(got, want)),
                  "%s: bm25(%r, %s): %r, expected %r" % (state, word, w, got[:4], want[:4]))
        qv = rng.standard_normal(DIM).astype(np.float32)
        got = db.execute("SELECT id, vector_score FROM hybrid('v', 'alpha', ?, 25, ?)", (qv.tobytes(), w)).fetchall()
        nmatch = sum(1 for i in ok_ids if m.recs[i]["emb"] is not None or "alpha" in m.recs[i]["text"].split())
        check(len(got) == min(25, nmatch) and all(g[0] in ok_ids for g in got),
              "%s: hybrid where %s: %d rows (expected %d), outside the condition: %r" % (
                  state, w, len(got), min(25, nmatch), [g[0] for g in got if g[0] not in ok_ids][:5]))
        where = {int(i): j for j, i in enumerate(arr["ids"])}
        bad = [(g, i) for g in got for i in [where.get(g[0])] if i is not None and
               abs(g[1] - 1 / (1 + np.sqrt(((arr["E"][i] - qv) ** 2).sum()))) > 1e-5]
        check(not bad, "%s: hybrid where %s: vector scores %r" % (state, w, bad[:3]))


def run_state(db, m, rng, state, conds_list):
    check_rows(db, m, state)
    run_filters(db, m, rng, state, conds_list)
    run_scans(db, m, state, conds_list)
    run_partitions(db, m, rng, state)
    run_bounds(db, m, rng, state)
    run_text_search(db, m, rng, state)


def random_changes(db, m, rng):
    """Deletes, updates of every kind and inserts, in one transaction."""
    live = sorted(m.recs)
    pick = rng.permutation(live)
    dels, ups = pick[:500], pick[500:1300]
    db.execute("BEGIN")
    for i in dels:
        db.execute("DELETE FROM v WHERE id = ?", (int(i),))
        del m.recs[int(i)]
    next_id = max(live) + 1
    for n, i in enumerate(ups):
        i = int(i)
        r = dict(m.recs[i])
        fresh = rand_rec(rng, i, m)
        kind = n % 8
        if kind == 0:
            r["user_id"] = fresh["user_id"]
            db.execute("UPDATE v SET user_id = ? WHERE id = ?", (r["user_id"], i))
        elif kind == 1:
            r["category"], r["price"] = fresh["category"], fresh["price"]
            db.execute("UPDATE v SET category = ?, price = ? WHERE id = ?", (r["category"], r["price"], i))
        elif kind == 2:
            r["flag"], r["qty"] = None, fresh["qty"]
            db.execute("UPDATE v SET flag = NULL, qty = ? WHERE id = ?", (r["qty"], i))
        elif kind == 3:
            r["text"] = "changed " + fresh["text"]
            db.execute("UPDATE v SET text = ? WHERE id = ?", (r["text"], i))
        elif kind == 4:
            r["emb"] = fresh["emb"]
            db.execute("UPDATE v SET embedding = ? WHERE id = ?", (None if r["emb"] is None else r["emb"].tobytes(), i))
        elif kind == 5:  # a new id: the declared columns move with the record
            del m.recs[i]
            r["id"] = next_id
            next_id += 1
            db.execute("UPDATE v SET id = ? WHERE id = ?", (r["id"], i))
        elif kind == 6:
            r["payload"], r["img"], r["key"] = fresh["payload"], fresh["img"], None
            db.execute("UPDATE v SET payload = ?, img = ?, key = NULL WHERE id = ?", (r["payload"], r["img"], i))
        else:  # everything at once
            fresh["id"], fresh["key"] = i, r["key"]
            r = fresh
            db.execute("UPDATE v SET text = ?, embedding = ?, source = ?, %s WHERE id = ?" % ", ".join("%s = ?" % c for c in DECL),
                       rec_args(r)[1:] + [i])
        m.put(r)
    for _ in range(400):
        r = rand_rec(rng, next_id, m)
        next_id += 1
        db.execute(insert_sql(), rec_args(r))
        m.put(r)
    db.execute("COMMIT")


def test_exact(d, rng):
    fn = os.path.join(d, "v.h5")
    m = Model()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, %s)" % (q(fn), SCHEMA))
    db.execute("BEGIN")
    recs = []
    for i in range(1, N + 1):
        r = rand_rec(rng, i, m)
        m.put(r)
        recs.append(rec_args(r))
    db.executemany(insert_sql(), recs)
    db.execute("COMMIT")
    conds_list = conditions()
    check(db.execute("SELECT count(*) FROM v").fetchone()[0] == N, "count")
    check(os.path.getsize(fn + "-wal") > 500000, "before the checkpoint, the records are in the log")
    run_state(db, m, rng, "in memory", conds_list)
    db.execute("INSERT INTO v(v) VALUES('checkpoint')")
    check(os.path.getsize(fn + "-wal") < 4096 if os.path.exists(fn + "-wal") else True, "checkpoint empties the log")
    run_state(db, m, rng, "checkpointed", conds_list)
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s)" % q(fn))
    run_state(db, m, rng, "reopened", conds_list)
    random_changes(db, m, rng)
    run_state(db, m, rng, "file and memory", conds_list)
    db.execute("INSERT INTO v(v) VALUES('optimize')")
    run_state(db, m, rng, "optimized", conds_list)
    db.close()
    return fn, m


# ---- a text partition key; a reader beside the writer ------------------------------------------

def test_text_partition(d, rng):
    fn = os.path.join(d, "tp.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, embedding float[8], tenant text partition key, "
               "user_id integer)" % q(fn))
    m = Model()
    tenants = ["t%d" % i for i in range(30)] + ["", "T0", "caf\u00e9"]

    def add(n):
        db.execute("BEGIN")
        for _ in range(n):
            i = max(m.recs, default=0) + 1
            r = {"id": i, "emb": rng.standard_normal(DIM).astype(np.float32),
                 "tenant": None if rng.random() < 0.05 else str(rng.choice(tenants)), "user_id": int(rng.integers(3))}
            db.execute("INSERT INTO v(id, embedding, tenant, user_id) VALUES (?, ?, ?, ?)",
                       (i, r["emb"].tobytes(), r["tenant"], r["user_id"]))
            m.put(r)
        db.execute("COMMIT")

    def search(conn, state):
        arr = m.arrays()
        tcol = [r["tenant"] for r in arr["rs"]]
        ucol = [r["user_id"] for r in arr["rs"]]
        for t in tenants + ["nobody"]:
            for extra in (None, 1):
                mask = np.array([x == t for x in tcol])
                sql, params = "tenant = ?", [t]
                if extra is not None:
                    mask &= np.array([u == extra for u in ucol])
                    sql, params = sql + " AND user_id = ?", params + [extra]
                k = int(rng.choice([3, 40, 500]))
                qv = rng.standard_normal(DIM).astype(np.float32)
                want_ids, want_d, dall = expected(arr, qv, mask, k)
                got = conn.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = ? AND " + sql,
                                   [qv.tobytes(), k] + params).fetchall()
                same_top(got, arr, want_ids, want_d, dall, mask, "%s: text partition KNN %s %r" % (state, sql, params))
                w = {"tenant": t} if extra is None else {"tenant": t, "user_id": extra}
                got = conn.execute("SELECT id, distance FROM vec_search('v', ?, ?, ?)",
                                   (qv.tobytes(), k, json.dumps({"where": w}))).fetchall()
                same_top(got, arr, want_ids, want_d, dall, mask, "%s: text partition vec_search %r" % (state, w))

    add(3000)
    search(db, "text partition, in memory")
    db.execute("INSERT INTO v(v) VALUES('checkpoint')")
    search(db, "text partition, checkpointed")
    # a reader on another connection builds its own partition index; the writer moves on
    rd = connect()
    rd.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s)" % q(fn))
    search(rd, "text partition, reader")
    add(700)
    for i in list(m.recs)[::9]:
        db.execute("UPDATE v SET tenant = ? WHERE id = ?", ("t1", i))
        m.recs[i]["tenant"] = "t1"
        m.put(m.recs[i])
    search(rd, "text partition, reader after commits")
    db.execute("INSERT INTO v(v) VALUES('checkpoint')")
    search(rd, "text partition, reader after the writer's checkpoint")
    db.execute("INSERT INTO v(v) VALUES('optimize')")
    search(rd, "text partition, reader after the writer's optimize")
    search(db, "text partition, optimized")
    rd.close()
    db.close()


# ---- cosine and dot: filters and distance bounds -------------------------------------------------

def test_metrics(d, rng):
    """The same exactness under cosine and dot (dot's distances are negative), the embedding
    declared by `embedding float[8] distance_metric=...` and by dim= metric=."""
    for metric, how in (("cosine", "embedding float[8] distance_metric=cosine"), ("dot", "dim=8, metric=dot")):
        fn = os.path.join(d, "m_%s.h5" % metric)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, %s, user_id integer partition key, price float)"
                   % (q(fn), how))
        m = Model()
        db.execute("BEGIN")
        for i in range(1, 2501):
            r = {"id": i, "emb": rng.standard_normal(DIM).astype(np.float32),
                 "user_id": None if i % 17 == 0 else int(rng.integers(1, 8)),
                 "price": None if i % 13 == 0 else float(rng.integers(0, 100))}
            db.execute("INSERT INTO v(id, embedding, user_id, price) VALUES (?, ?, ?, ?)",
                       (i, r["emb"].tobytes(), r["user_id"], r["price"]))
            m.put(r)
        db.execute("COMMIT")
        for state in ("in memory", "checkpointed"):
            if state == "checkpointed":
                db.execute("INSERT INTO v(v) VALUES('checkpoint')")
            arr = m.arrays()
            E = arr["E"]
            for conds, bound in (([Cond("user_id", "=", 3)], None), ([Cond("price", "between", 20, 60)], None),
                                 ([Cond("user_id", "in", [1, 2]), Cond("price", "isnull")], None),
                                 ([Cond("user_id", "!=", 5)], (">", 0.5)), ([], ("<", -0.5)), ([], (">=", 1.0)),
                                 ([Cond("price", ">", 50)], ("<=", 0.9))):
                qv = rng.standard_normal(DIM).astype(np.float32)
                q64 = qv.astype(np.float64)
                if metric == "cosine":
                    dall = 1 - E @ q64 / (np.linalg.norm(E, axis=1) * np.linalg.norm(q64))
                else:
                    dall = -(E @ q64)
                mask = np.ones(len(arr["ids"]), dtype=bool)
                for c in conds:
                    mask &= np.array([c.test(r[c.col]) for r in arr["rs"]])
                bsql, bparams = [], []
                if bound:
                    op, x = bound
                    if metric == "dot":
                        x = -x * 2
                    if metric == "cosine" and x < 0:
                        x = 1 + x
                    sd = dall.copy()  # (the records near the bound judged by the store's distances)
                    near = np.nonzero(np.abs(dall - x) < 1e-5)[0]
                    sd[near] = [store_dist1(db, qv, int(arr["ids"][j])) for j in near]
                    mask &= {">": sd > x, ">=": sd >= x, "<": sd < x, "<=": sd <= x}[op]
                    bsql, bparams = ["distance %s ?" % op], [x]
                sel = np.nonzero(mask)[0]
                for k in (7, 300):
                    order = sel[np.lexsort((arr["seq"][sel], dall[sel]))][:k]
                    frag, params = sql_of(conds)
                    where = " AND ".join(bsql + ([frag] if frag else []))
                    got = db.execute("SELECT id, distance FROM v WHERE embedding MATCH ? AND k = ?"
                                     + (" AND " + where if where else ""), [qv.tobytes(), k] + bparams + params).fetchall()
                    same_top(got, arr, arr["ids"][order], dall[order], dall, mask,
                             "%s %s: KNN k=%d %s %r" % (metric, state, k, where, bparams + params))
                    if not bound:
                        w = json.dumps({"where": where_of(conds, True)})
                        got = db.execute("SELECT id, distance FROM vec_search('v', ?, ?, ?)", (qv.tobytes(), k, w)).fetchall()
                        same_top(got, arr, arr["ids"][order], dall[order], dall, mask,
                                 "%s %s: vec_search k=%d %s" % (metric, state, k, w))
        db.close()


# ---- values -------------------------------------------------------------------------------------

VSCHEMA = ("embedding float[4], i integer, f float, s text, b boolean, +bl blob, +at text, +ai integer, "
           "+af float, +ab boolean, key text primary key, v32 float[3], v16 float16[4], v8 int8[4], vb bit[16], "
           "part text partition key, vc float[2] distance_metric=cosine")
VCOLS = ("text", "source", "importance", "i", "f", "s", "b", "bl", "at", "ai", "af", "ab", "key", "v32", "v16", "v8", "vb",
         "part", "vc")


def f32(*x):
    return np.array(x, dtype=np.float32).tobytes()


def f16(*x):
    return np.array(x, dtype=np.float32).astype(np.float16).tobytes()


def i8(*x):
    return np.array(x, dtype=np.int8).tobytes()


def same_value(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)  # (-0.0 is not 0.0)
    return type(a) is type(b) and a == b


class Vals:
    """The values table and what it must hold."""

    def __init__(self, db):
        self.db, self.model = db, {}

    def ins(self, rid, given, want=None):
        cols = list(given)
        self.db.execute("INSERT INTO t(%s) VALUES (?%s)" % (", ".join(["id"] + cols), ", ?" * len(cols)),
                        [rid] + [given[c] for c in cols])
        w = dict.fromkeys(VCOLS)
        w.update(given)
        w.update(want or {})
        self.model[rid] = w

    def same(self, what):
        db = self.db
        db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
        rows = {r[0]: r[1:] for r in db.execute("SELECT id, %s FROM t" % ", ".join(VCOLS))}
        db.text_factory = str
        check(set(rows) == set(self.model), "%s: ids %r, expected %r" % (what, sorted(rows), sorted(self.model)))
        for rid, w in sorted(self.model.items()):
            got = rows.get(rid)
            if got is None:
                continue
            bad = [(c, g, w[c]) for c, g in zip(VCOLS, got) if not same_value(g, w[c])]
            check(not bad, "%s: record %d: (column, got, expected) %r" % (what, rid, bad))


def test_values(d):
    fn = os.path.join(d, "vals.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING h5mem(path=%s, %s)" % (q(fn), VSCHEMA))
    V = Vals(db)
    V.ins(1, {"text": "one", "i": 42, "f": 1.5, "s": "h\u00e9llo w\u00f6rld", "b": 1, "bl": b"\x00\xff", "at": "aux",
              "ai": -7, "af": 2.25, "ab": 0, "key": "k1", "v32": f32(1, 2, 3), "v16": "[0.5, 1, 2, 3]",
              "v8": "[1, -2, 3, 4]", "vb": b"\xff\x00", "part": "p1", "vc": "[1, 0]"},
          {"v16": f16(0.5, 1, 2, 3), "v8": i8(1, -2, 3, 4), "vc": f32(1, 0)})
    V.ins(2, {})
    V.ins(3, {"i": 2 ** 63 - 1, "f": -0.0, "s": "", "b": 0, "bl": b"", "at": "", "ai": -(2 ** 63 - 1), "af": 5e-324,
              "ab": 1, "key": "", "v32": f32(1e38, -1e-38, 0), "v16": f32(0.1, 0.2, -0.3, 65504),
              "v8": i8(-128, 127, 0, 1), "vb": b"\x00\x00", "part": "", "vc": f32(0, 1)},
          {"v16": f16(0.1, 0.2, -0.3, 65504)})
    V.ins(4, {"i": "42", "f": 3, "s": 5, "b": 1.0, "bl": "text", "at": 12, "ai": 7.0, "af": "2.5", "ab": True,
              "key": "abcdefgh", "v16": f16(1, 2, 3, 4), "part": "abcdefgh", "text": "abcdefgh", "source": "abcdefgh"},
          {"i": 42, "f": 3.0, "s": "5", "b": 1, "bl": b"text", "at": "12", "ai": 7, "af": 2.5, "ab": 1})
    V.ins(5, {"i": -1, "s": "x" * 1000, "bl": bytes(range(256)) * 40, "key": "k5", "f": 1e308, "af": -1e-300})
    db.execute("INSERT INTO t(id, v16) VALUES (6, vec_f16('[1, 2, 3, 4]'))")
    V.model[6] = dict.fromkeys(VCOLS)
    V.model[6]["v16"] = f16(1, 2, 3, 4)
    V.same("values, in memory")

    # wrong values: refused naming the column; nothing changes
    wrong = [
        ("INSERT INTO t(id, i) VALUES (20, 'abc')", "i: expected an integer"),
        ("INSERT INTO t(id, i) VALUES (20, 1.5)", "i: expected an integer"),
        ("INSERT INTO t(id, i) VALUES (20, 1e20)", "i: expected an integer"),
        ("INSERT INTO t(id, i) VALUES (20, -9223372036854775808)", "i: -9223372036854775808"),
        ("INSERT INTO t(id, ai) VALUES (20, -9223372036854775808)", "ai: -9223372036854775808"),
        ("INSERT INTO t(id, i) VALUES (20, x'01')", "i: expected an integer"),
        ("INSERT INTO t(id, b) VALUES (20, 2)", "b: expected a boolean"),
        ("INSERT INTO t(id, b) VALUES (20, -1)", "b: expected a boolean"),
        ("INSERT INTO t(id, b) VALUES (20, 'true')", "b: expected a boolean"),
        ("INSERT INTO t(id, ab) VALUES (20, 0.5)", "ab: expected a boolean"),
        ("INSERT INTO t(id, f) VALUES (20, 'abc')", "f: expected a number"),
        ("INSERT INTO t(id, f) VALUES (20, 9e999)", "f: not a finite number"),
        ("INSERT INTO t(id, af) VALUES (20, -9e999)", "af: not a finite number"),
        ("INSERT INTO t(id, s) VALUES (20, x'00')", "s: expected text"),
        ("INSERT INTO t(id, s) VALUES (20, CAST(x'ff' AS TEXT))", "s: invalid UTF-8"),
        ("INSERT INTO t(id, at) VALUES (20, 'a' || char(0) || 'b')", "at: a NUL byte"),
        ("INSERT INTO t(id, bl) VALUES (20, 5)", "bl: expected a blob"),
        ("INSERT INTO t(id, v32) VALUES (20, x'0000')", "v32: expected a float32 BLOB of 3 dimensions"),
        ("INSERT INTO t(id, v32) VALUES (20, '[1, 2]')", "v32: expected 3 dimensions"),
        ("INSERT INTO t(id, v32) VALUES (20, '[1, 2, 1e39]')", "v32:"),
        ("INSERT INTO t(id, v32) VALUES (20, 5)", "v32: expected a float32 vector"),
        ("INSERT INTO t(id, v32) VALUES (20, '[1, 2, nope]')", "v32:"),
        ("INSERT INTO t(id, v16) VALUES (20, '[1, 2, 3, 70000]')", "v16: element 3"),
        ("INSERT INTO t(id, v16) VALUES (20, x'00')", "v16: expected a float16 BLOB"),
        ("INSERT INTO t(id, v8) VALUES (20, '[1, 2, 3, 128]')", "v8: element 3"),
        ("INSERT INTO t(id, v8) VALUES (20, '[1, 2, 3, 1.5]')", "v8: element 3"),
        ("INSERT INTO t(id, v8) VALUES (20, '[1, 2, 3]')", "v8: expected 4 dimensions"),
        ("INSERT INTO t(id, vb) VALUES (20, '[1, 0]')", "vb: expected a bit vector"),
        ("INSERT INTO t(id, vb) VALUES (20, x'000000')", "vb: expected a bit BLOB"),
        ("INSERT INTO t(id, vc) VALUES (20, x'0000c07f00000000')", "vc: element 0 is not finite"),
        ("INSERT INTO t(id, key) VALUES (20, 'k1')", "key: 'k1' is taken (by id 1)"),
        ("INSERT INTO t(id, key) VALUES (20, 5)", None),  # (as text: '5', free)
        ("UPDATE t SET b = 3 WHERE id = 1", "b: expected a boolean"),
        ("UPDATE t SET i = 'x', s = 'fine' WHERE id = 1", "i: expected an integer"),
        ("UPDATE t SET key = 'k5' WHERE id = 1", "key: 'k5' is taken (by id 5)"),
        ("UPDATE t SET v8 = '[1, 2, 3, -129]' WHERE id = 2", "v8: element 3"),
        # a vector column's query (these messages crashed once: %zu in SQLite's printf)
        ("SELECT id FROM t WHERE v32 MATCH x'00' AND k = 3", "the query for column v32 is a BLOB of 1 bytes; expected 12"),
        ("SELECT id FROM t WHERE v32 MATCH '[1, 2]' AND k = 3", "the query for column v32 has 2 dimensions"),
        ("SELECT id FROM t WHERE v8 MATCH '[1, 2]' AND k = 3", "the query for column v8 has 2 dimensions"),
        ("SELECT id FROM t WHERE v32 MATCH x'0000c07f0000000000000000' AND k = 3", "v32: element 0 is not finite"),
        ("SELECT id FROM t WHERE vb MATCH x'000000' AND k = 3", "the query for column vb is a BLOB of 3 bytes"),
    ]
    for sql, word in wrong:
        if word is None:
            db.execute(sql)
            db.execute("DELETE FROM t WHERE id = 20")
            continue
        expect_error(db, sql, word if sql.startswith("SELECT") else "h5mem: " + word)
    V.same("values, after refused statements")
    rd = connect()  # a reader: the records from the log
    rd.execute("CREATE VIRTUAL TABLE t USING h5mem(path=%s)" % q(fn))
    V.db = rd
    V.same("values, a reader before the checkpoint")
    V.db = db

    db.execute("INSERT INTO t(t) VALUES('checkpoint')")
    V.same("values, checkpointed")

    def upd(rid, sets):
        db.execute("UPDATE t SET %s WHERE id = ?" % ", ".join("%s = ?" % c for c in sets), list(sets.values()) + [rid])
        V.model[rid].update(sets)

    upd(1, {"i": 43})  # one declared column: the others kept
    upd(1, {"importance": 0.5})  # (a change in place of the life columns)
    upd(3, {"importance": 0.25})
    upd(1, {"text": "one again"})  # the text: the declared columns kept
    upd(3, {"v16": None, "s": None, "ab": None})
    upd(2, {"vb": b"\x01\x01", "part": "p2", "f": 0.25, "at": "now"})
    upd(5, {"v32": f32(4, 5, 6), "key": "k5b"})
    db.execute("INSERT INTO t(id, key) VALUES (7, 'k5')")  # (free again)
    V.model[7] = dict.fromkeys(VCOLS)
    V.model[7]["key"] = "k5"
    db.execute("UPDATE t SET id = 10 WHERE id = 4")
    V.model[10] = V.model.pop(4)
    db.execute("DELETE FROM t WHERE id = 6")
    del V.model[6]
    V.same("values, after updates")
    V.db = rd
    V.same("values, a reader after updates")
    V.db = db
    # ROLLBACK undoes; ROLLBACK TO undoes since the savepoint
    db.execute("BEGIN")
    db.execute("UPDATE t SET i = 0, s = 'zz', v32 = NULL, key = 'new' WHERE id = 1")
    db.execute("DELETE FROM t WHERE id = 3")
    db.execute("INSERT INTO t(id, i, key) VALUES (30, 1, 'k1')")
    db.execute("ROLLBACK")
    V.same("values, after ROLLBACK")
    db.execute("BEGIN")
    db.execute("UPDATE t SET ai = 99 WHERE id = 1")
    db.execute("SAVEPOINT a")
    db.execute("UPDATE t SET ai = 100, vb = NULL WHERE id = 2")
    db.execute("DELETE FROM t WHERE id = 5")
    db.execute("ROLLBACK TO a")
    db.execute("COMMIT")
    V.model[1]["ai"] = 99
    V.same("values, after ROLLBACK TO")
    expect_error(db, "INSERT INTO t(id, key) VALUES (31, 'k1')", "key: 'k1' is taken")

    rd.close()
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING h5mem(path=%s)" % q(fn))
    V.db = db
    V.same("values, reopened")
    h5_check(fn, V.model, "values, reopened (log replayed at close)")
    db.execute("INSERT INTO t(t) VALUES('optimize')")
    V.same("values, optimized")
    h5_check(fn, V.model, "values, optimized")
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING h5mem(path=%s)" % q(fn))
    V.db = db
    V.same("values, reopened after optimize")
    # a filter on each type: a scan, the KNN form and vec_search agree with the values
    db.execute("UPDATE t SET embedding = '[1, 0, 0, 0]'")
    for frag, w, pred in (("i = 42", {"i": 42}, lambda r: r["i"] == 42),
                          ("i > 0", {"i": {"$gt": 0}}, lambda r: r["i"] is not None and r["i"] > 0),
                          ("s = ''", {"s": ""}, lambda r: r["s"] == ""),
                          ("s >= 'h'", {"s": {"$gte": "h"}}, lambda r: r["s"] is not None and r["s"] >= "h"),
                          ("b = 0", {"b": False}, lambda r: r["b"] == 0),
                          ("b IS NOT NULL", {"b": {"$null": False}}, lambda r: r["b"] is not None),
                          ("f < 0.5", {"f": {"$lt": 0.5}}, lambda r: r["f"] is not None and r["f"] < 0.5),
                          ("f = 0", {"f": 0}, lambda r: r["f"] == 0),
                          ("part = 'p2'", {"part": "p2"}, lambda r: r["part"] == "p2"),
                          ("part = ''", {"part": ""}, lambda r: r["part"] == ""),
                          ("key = 'abcdefgh'", {"key": "abcdefgh"}, lambda r: r["key"] == "abcdefgh"),
                          ("key IN ('k1', 'k5', '')", {"key": {"$in": ["k1", "k5", ""]}}, lambda r: r["key"] in ("k1", "k5", "")),
                          ("i IS NULL", {"i": None}, lambda r: r["i"] is None)):
        ids = {i for i, r in V.model.items() if pred(r)}
        got = {r[0] for r in db.execute("SELECT id FROM t WHERE " + frag)}
        check(got == ids, "values: WHERE %s: %r, expected %r" % (frag, got, ids))
        got = {r[0] for r in db.execute("SELECT id FROM t WHERE embedding MATCH '[1, 0, 0, 0]' AND k = 100 AND " + frag)}
        check(got == ids, "values: KNN WHERE %s: %r, expected %r" % (frag, got, ids))
        got = {r[0] for r in db.execute("SELECT id FROM vec_search('t', '[1, 0, 0, 0]', 100, ?)",
                                        (json.dumps({"where": w}),))}
        check(got == ids, "values: vec_search where %r: %r, expected %r" % (w, got, ids))
    db.close()


# ---- the file through h5py -----------------------------------------------------------------------

def h5_check(fn, model, what):
    """/memories/columns/<name> as docs/FORMAT.md says: INT64_MIN, NaN, -1 for NULL; null references
    (h5py: b'' and an empty array); a vector's NULL: <name>.missing = 1 and zeros (a float vector's
    with NaN first)."""
    try:
        import h5py
    except ImportError:
        print("h5py not installed: the file's columns not read through h5py")
        return
    with h5py.File(fn, "r") as f:
        check(f.attrs["h5mem_format_version"] == 2, "%s: h5mem_format_version %r" % (what, f.attrs["h5mem_format_version"]))
        cols = f.attrs["columns"]
        cols = cols.decode() if isinstance(cols, bytes) else cols
        want_cols = ("i integer, f float, s text, b boolean, +bl blob, +at text, +ai integer, +af float, "
                     "+ab boolean, key text primary key, v32 float32[3] distance_metric=l2, "
                     "v16 float16[4] distance_metric=l2, v8 int8[4] distance_metric=l2, "
                     "vb bit[16] distance_metric=hamming, part text partition key, vc float32[2] distance_metric=cosine")
        check(cols == want_cols, "%s: the columns attribute %r, expected %r" % (what, cols, want_cols))
        ids = f["/memories/id"][:]
        dead = set(f["/memories/deleted"][:].tolist()) if "deleted" in f["/memories"] else set()
        rows = {int(ids[r]): r for r in range(len(ids)) if r not in dead}
        check(set(rows) == set(model), "%s: the file's live ids %r, expected %r" % (what, sorted(rows), sorted(model)))
        g = f["/memories/columns"]
        kinds = {"i": ("int", "<i8"), "ai": ("int", "<i8"), "f": ("float", "<f8"), "af": ("float", "<f8"),
                 "b": ("bool", "|i1"), "ab": ("bool", "|i1"), "s": ("str", None), "at": ("str", None),
                 "key": ("str", None), "part": ("str", None), "bl": ("blob", None),
                 "v32": ("vec", "<f4"), "v16": ("vec", "<f2"), "v8": ("vec", "|i1"), "vb": ("vec", "|u1"),
                 "vc": ("vec", "<f4")}
        for c, (kind, dt) in kinds.items():
            if c not in g:
                check(False, "%s: /memories/columns/%s missing" % (what, c))
                continue
            ds = g[c]
            check(ds.shape[0] == len(ids), "%s: %s has %d rows, /memories/id %d" % (what, c, ds.shape[0], len(ids)))
            if dt:
                check(ds.dtype.str == dt, "%s: %s is %s, expected %s" % (what, c, ds.dtype.str, dt))
            check("description" in ds.attrs, "%s: %s has no description" % (what, c))
            data = ds[:]
            miss = g[c + ".missing"][:] if kind == "vec" else None
            if kind == "vec":
                check(g[c + ".missing"].dtype.str == "|u1", "%s: %s.missing is %s" % (what, c, g[c + ".missing"].dtype))
            for rid, r in rows.items():
                w = model.get(rid, {}).get(c)
                x = data[r]
                if kind == "int":
                    ok = int(x) == (INT64_MIN if w is None else w)
                elif kind == "float":
                    ok = np.isnan(x) if w is None else struct.pack("<d", float(x)) == struct.pack("<d", w)
                elif kind == "bool":
                    ok = int(x) == (-1 if w is None else w)
                elif kind == "str":
                    x = x.decode() if isinstance(x, bytes) else x
                    ok = x == ("" if w is None else w)
                elif kind == "blob":
                    ok = bytes(x.tobytes()) == (b"" if w is None else w)
                elif w is None:  # (zeros; a float vector's NaN first, as the embedding's)
                    ok = miss[r] == 1 and not np.any(x[1:]) and (np.isnan(x[0]) if x.dtype.kind == "f" else x[0] == 0)
                else:
                    ok = miss[r] == 0 and x.tobytes() == w
                if not ok:
                    check(False, "%s: h5py: /memories/columns/%s of id %d: %r, expected %r" % (what, c, rid, x, w))
                    break


def test_format_version(d):
    try:
        import h5py
    except ImportError:
        return
    fn = os.path.join(d, "plain.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE p USING h5mem(path=%s, dim=2)" % q(fn))
    db.execute("INSERT INTO p(embedding) VALUES ('[1, 2]')")
    db.close()
    with h5py.File(fn, "r") as f:
        check(f.attrs["h5mem_format_version"] == 1 and "columns" not in f.attrs and "columns" not in f["/memories"],
              "a store without declared columns: version %r, columns %r" % (
                  f.attrs["h5mem_format_version"], f.attrs.get("columns")))


# ---- a text primary key ---------------------------------------------------------------------------

def test_primary_key(d):
    fn = os.path.join(d, "pk.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, embedding float[2], key text primary key, n integer)" % q(fn))
    db.execute("INSERT INTO v(id, key, n) VALUES (1, 'a', 1), (2, 'b', 2), (3, NULL, 3), (4, NULL, 4)")

    def keys():
        return dict(db.execute("SELECT id, key FROM v"))
    expect_error(db, "INSERT INTO v(id, key) VALUES (5, 'a')", "key: 'a' is taken (by id 1)")
    expect_error(db, "UPDATE v SET key = 'b' WHERE id = 1", "key: 'b' is taken (by id 2)")
    expect_error(db, "INSERT INTO v(id, key) VALUES (5, 'c'), (6, 'c')", "key: 'c' is taken (by id 5)")
    check(keys() == {1: "a", 2: "b", 3: None, 4: None}, "pk: a failed statement left %r" % keys())
    db.execute("UPDATE v SET n = 10 WHERE id = 1")  # (its own key is not another's)
    db.execute("UPDATE v SET key = 'a', text = 'x' WHERE id = 1")
    db.execute("UPDATE v SET id = 11 WHERE id = 1")
    check(db.execute("SELECT id, n FROM v WHERE key = 'a'").fetchall() == [(11, 10)], "pk: WHERE key = 'a'")
    # free after a delete, a rollback, a rolled back delete keeps it taken
    db.execute("DELETE FROM v WHERE id = 2")
    db.execute("INSERT INTO v(id, key) VALUES (12, 'b')")
    db.execute("BEGIN")
    db.execute("INSERT INTO v(id, key) VALUES (13, 'c')")
    db.execute("ROLLBACK")
    db.execute("INSERT INTO v(id, key) VALUES (14, 'c')")
    db.execute("BEGIN")
    db.execute("DELETE FROM v WHERE id = 14")
    db.execute("INSERT INTO v(id, key) VALUES (15, 'c')")
    db.execute("ROLLBACK")
    expect_error(db, "INSERT INTO v(id, key) VALUES (16, 'c')", "key: 'c' is taken (by id 14)")
    db.execute("BEGIN")
    db.execute("UPDATE v SET key = 'd' WHERE id = 14")
    db.execute("INSERT INTO v(id, key) VALUES (17, 'c')")
    db.execute("ROLLBACK")
    check(keys() == {11: "a", 12: "b", 3: None, 4: None, 14: "c"}, "pk: after rollbacks %r" % keys())
    # across a checkpoint
    db.execute("INSERT INTO v(v) VALUES('checkpoint')")
    for k, owner in (("a", 11), ("b", 12), ("c", 14)):
        expect_error(db, "INSERT INTO v(id, key) VALUES (20, ?)", "key: '%s' is taken (by id %d)" % (k, owner), (k,))
    db.execute("DELETE FROM v WHERE id = 12")  # (a file row)
    db.execute("INSERT INTO v(id, key) VALUES (21, 'b')")
    db.execute("UPDATE v SET key = 'e' WHERE id = 14")
    db.execute("INSERT INTO v(id, key) VALUES (22, 'c')")
    db.execute("INSERT INTO v(id, key) VALUES (23, NULL)")
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s)" % q(fn))
    for k, owner in (("a", 11), ("b", 21), ("c", 22), ("e", 14)):
        expect_error(db, "INSERT INTO v(id, key) VALUES (30, ?)", "key: '%s' is taken (by id %d)" % (k, owner), (k,))
        got = db.execute("SELECT id FROM v WHERE key = ?", (k,)).fetchall()
        check(got == [(owner,)], "pk after reopen: WHERE key = %r: %r" % (k, got))
    db.execute("INSERT INTO v(id, key) VALUES (31, 'd')")
    db.execute("INSERT INTO v(v) VALUES('optimize')")
    expect_error(db, "INSERT INTO v(id, key) VALUES (32, 'd')", "key: 'd' is taken (by id 31)")
    db.execute("DELETE FROM v WHERE id = 31")
    db.execute("INSERT INTO v(id, key) VALUES (33, 'd')")
    check(keys() == {11: "a", 21: "b", 22: "c", 14: "e", 33: "d", 3: None, 4: None, 23: None},
          "pk: at the end %r" % keys())
    # many keys: the map grows; every one found, every one taken
    db.execute("BEGIN")
    db.executemany("INSERT INTO v(id, key) VALUES (?, ?)", [(100 + i, "u%05d" % i) for i in range(5000)])
    db.execute("COMMIT")
    db.execute("DELETE FROM v WHERE id % 7 = 0 AND id >= 100")
    db.execute("INSERT INTO v(v) VALUES('checkpoint')")
    free = taken = 0
    for i in range(0, 5000, 97):
        try:
            db.execute("INSERT INTO v(id, key) VALUES (?, ?)", (10000 + i, "u%05d" % i))
            free += 1
            ok = (100 + i) % 7 == 0
        except sqlite3.Error:
            taken += 1
            ok = (100 + i) % 7 != 0
        check(ok, "pk: u%05d %s" % (i, "was free" if (100 + i) % 7 != 0 else "was taken"))
    db.close()


# ---- schema ---------------------------------------------------------------------------------------

def test_schema(d):
    fn = os.path.join(d, "schema.h5")
    decl = ("embedding float[4], user_id integer partition key, category text, price float, flag boolean, "
            "+payload blob, key text primary key, img int8[4], sig bit[16], aud float16[2] distance_metric=cosine")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s, %s)" % (q(fn), decl))
    cols = db.execute("SELECT name, type FROM pragma_table_xinfo('v') WHERE hidden = 0").fetchall()
    want = [("id", "INTEGER"), ("text", "TEXT"), ("embedding", "BLOB"), ("source", "TEXT"), ("session", "TEXT"),
            ("tags", "TEXT"), ("ts", "INTEGER"), ("tier", "TEXT"), ("importance", "REAL"), ("access_count", "INTEGER"),
            ("last_access", "INTEGER"), ("meta", "TEXT"), ("user_id", "INTEGER"), ("category", "TEXT"),
            ("price", "REAL"), ("flag", "INTEGER"), ("payload", "BLOB"), ("key", "TEXT"), ("img", "BLOB"),
            ("sig", "BLOB"), ("aud", "BLOB")]
    check([c[0] for c in cols] == [c[0] for c in want], "schema: columns %r" % cols)
    db.execute("INSERT INTO v(id, embedding, user_id, category, key, img, sig, aud) "
               "VALUES (1, '[1, 0, 0, 0]', 3, 'a', 'x', '[1, 2, 3, 4]', x'0f0f', '[1, 0]')")
    db.execute("INSERT INTO v VALUES (2, 't', '[0, 1, 0, 0]', 's', NULL, NULL, 5, NULL, NULL, 0, NULL, NULL, "
               "4, 'b', 2.5, 0, x'01', 'y', '[0, 0, 0, 1]', x'0000', '[0, 1]')")  # (no column list)
    star = db.execute("SELECT * FROM v ORDER BY id").fetchall()
    check(star[1][12:] == (4, "b", 2.5, 0, b"\x01", "y", i8(0, 0, 0, 1), b"\0\0", f16(0, 1)),
          "schema: INSERT without a column list: %r" % (star[1],))
    db.execute("DELETE FROM v WHERE id = 2")
    check(len(star[0]) == len(want) and star[0][12:15] == (3, "a", None), "schema: SELECT * %r" % (star,))
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s)" % q(fn))
    cols2 = db.execute("SELECT name, type FROM pragma_table_xinfo('v') WHERE hidden = 0").fetchall()
    check(cols2 == cols, "schema: reopened with path= alone: %r, expected %r" % (cols2, cols))
    check(db.execute("SELECT user_id, category, key, img FROM v").fetchall() == [(3, "a", "x", i8(1, 2, 3, 4))],
          "schema: values after reopen")
    db.execute("CREATE VIRTUAL TABLE v2 USING h5mem(path=%s, %s)" % (q(fn), decl))  # (restated as made)
    db.execute("CREATE VIRTUAL TABLE v3 USING h5mem(path=%s, embedding float[4], user_id INT partition key, "
               "category TEXT, price real, flag bool, + payload blob, key text PRIMARY KEY, img int8[4], "
               "sig bit[16] distance_metric=hamming, aud f16[2] distance_metric=cosine)" % q(fn))  # (other spellings)
    db.close()
    base = ["user_id integer partition key", "category text", "price float", "flag boolean", "+payload blob",
            "key text primary key", "img int8[4]", "sig bit[16]", "aud float16[2] distance_metric=cosine"]
    for i, (change, words) in enumerate((
            (lambda b: b[:2] + ["price integer"] + b[3:], ["price float", "price integer"]),
            (lambda b: b[:3] + b[4:], ["flag"]),
            (lambda b: b + ["extra text"], ["extra text"]),
            (lambda b: ["user_id integer"] + b[1:], ["user_id integer partition key", "user_id integer"]),
            (lambda b: b[:5] + ["key text"] + b[6:], ["key text primary key"]),
            (lambda b: b[:6] + ["img int8[8]"] + b[7:], ["img int8[8]"]),
            (lambda b: b[:8] + ["aud float16[2]"], ["cosine"]),
            (lambda b: b[:4] + ["payload blob"] + b[5:], ["+payload blob"]),
            (lambda b: [b[1], b[0]] + b[2:], ["user_id", "category"]))):
        db = connect()
        msg = expect_error(db, "CREATE VIRTUAL TABLE v USING h5mem(path=%s, embedding float[4], %s)"
                           % (q(fn), ", ".join(change(list(base)))), words[0])
        for w in words[1:]:
            check(w in msg, "schema: restated differently (%d): %r lacks %r" % (i, msg, w))
        db.close()
    # bad declarations: clear errors, no file made
    bad = [("x foo", "x: unknown type 'foo'"), ("distance float", "distance"), ("k integer", "column k"),
           ("rowid integer", "rowid"), ("text text", "column text"), ("source text", "column source"),
           ("ts integer", "column ts"), ("tier text", "column tier"), ("meta text", "column meta"),
           ("deleted integer", "column deleted"),
           ("a text primary key, b text primary key", "primary key"), ("p float partition key", "p: a partition key"),
           ("p boolean partition key", "p: a partition key"), ("n integer distance_metric=l2", "n: distance_metric"),
           ("v float[0]", "v: the dimension"), ("v bit[12]", "multiple of 8"), ("+v float[2]", "v: an auxiliary"),
           ("+p integer partition key", "p: an auxiliary"), ("a text, a integer", "a is declared twice"),
           ("A text, a integer", "declared twice"), ("n integer primary key", "n: a declared primary key is text"),
           ("v float[2] distance_metric=hamming", "v: distance_metric=hamming"),
           ("v bit[8] distance_metric=l2", "v: distance_metric=l2"), ("v complex[2]", "v: 'complex[...]'"),
           ("x" * 64 + " text", "at most 63 bytes"), ("n integer partition", "'partition' must be followed by 'key'"),
           ("n integer unique", "n: unexpected 'unique'"), ("embedding int8[4]", "embedding column"),
           ("v float[2] distance_metric=", "v: distance_metric=")]
    for k, (dcl, word) in enumerate(bad):
        fnb = os.path.join(d, "bad%d.h5" % k)
        db = connect()
        expect_error(db, "CREATE VIRTUAL TABLE b USING h5mem(path=%s, embedding float[4], %s)" % (q(fnb), dcl), word)
        check(not os.path.exists(fnb), "schema: %r made a file" % dcl)
        db.close()
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE b USING h5mem(path=%s, dim=8, embedding float[4])" % q(os.path.join(d, "bd.h5")),
                 "embedding's dimension")
    # the "where" option's errors name the column and the problem
    db.execute("CREATE VIRTUAL TABLE v USING h5mem(path=%s)" % q(fn))
    for w, word in (({"nope": 1}, "no declared column 'nope'"), ({"payload": "x"}, "payload is an auxiliary column"),
                    ({"img": 1}, "img is a vector column"), ({"price": {"$foo": 1}}, "price: unknown operator '$foo'"),
                    ({"price": {"$between": [1]}}, "price: $between"), ({"price": {"$in": 3}}, "price: $in: expected an array"),
                    ({"$or": []}, "$or is not supported"), ({"flag": {"$null": 1}}, "flag: $null")):
        expect_error(db, "SELECT id FROM vec_search('v', '[1, 0, 0, 0]', 3, ?)", word, (json.dumps({"where": w}),))
    db.close()


def test_lead_fixes(d):
    """What the first run of this test reported and the lead then fixed."""
    fn = os.path.join(d, "lead.h5")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE r USING h5mem(path=%s, embedding float[1], n integer, key text primary key, "
               "+p blob, v int8[1])" % q(fn))
    db.execute("INSERT INTO r(id, embedding, n, key, p, v) VALUES (1, '[1]', 5, 'x', x'00', '[1]'), "
               "(2, '[2]', 6, 'y', x'01', '[2]'), (3, '[3]', 1, NULL, x'02', '[3]')")
    # OR REPLACE deletes the record whose text key the new one takes, as SQLite's REPLACE does for UNIQUE
    db.execute("INSERT OR REPLACE INTO r(id, embedding, key) VALUES (4, '[4]', 'x')")
    check(db.execute("SELECT id FROM r ORDER BY id").fetchall() == [(2,), (3,), (4,)], "OR REPLACE by key: record 1 goes")
    db.execute("UPDATE OR REPLACE r SET key = 'y' WHERE id = 4")
    check(db.execute("SELECT id, key FROM r ORDER BY id").fetchall() == [(3, None), (4, "y")], "UPDATE OR REPLACE by key")
    expect_error(db, "INSERT INTO r(id, key) VALUES (9, 'y')", "key: 'y' is taken")
    # a MATCH past SQLite's first 16 constraints (evaluated by SQLite too) still works, on both kinds of column
    many = " AND ".join("n != %d" % (100 + i) for i in range(20))
    for col, qv in (("embedding", "[0]"), ("v", "[0]")):
        got = [r[0] for r in db.execute("SELECT id FROM r WHERE k = 2 AND %s MATCH '%s' AND %s" % (col, qv, many))]
        check(got == [3], "%s MATCH with 20 more conditions (record 4: n NULL): %r" % (col, got))
    expect_error(db, "SELECT id FROM r WHERE p MATCH x'00'", "MATCH works on the embedding and declared vector columns")
    expect_error(db, "SELECT id FROM vec_search('r', '[0]', 3, ?)", "where: n: expected a string",
                 (json.dumps({"where": {"n": [1]}}),))
    db.close()
    # a restatement's names compare without case; a column left out is named as missing
    db = connect()
    db.execute("CREATE VIRTUAL TABLE r USING h5mem(path=%s, embedding float[1], N integer, KEY text primary key, "
               "+P blob, V int8[1])" % q(fn))
    check(db.execute("SELECT count(*) FROM r").fetchone()[0] == 2, "restated in capitals")
    db.close()
    db = connect()
    expect_error(db, "CREATE VIRTUAL TABLE r USING h5mem(path=%s, n integer, +p blob, v int8[1])" % q(fn),
                 "has column key text primary key, which is not declared")
    db.close()


def main():
    rng = np.random.default_rng(20)
    with tempfile.TemporaryDirectory() as d:
        test_values(d)
        test_lead_fixes(d)
        test_primary_key(d)
        test_schema(d)
        test_format_version(d)
        test_text_partition(d, rng)
        test_metrics(d, rng)
        test_exact(d, rng)
    finish()


if __name__ == "__main__":
    main()
