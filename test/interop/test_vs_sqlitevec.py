"""h5mem's vector functions against sqlite-vec v0.1.9 (npm sqlite-vec-linux-x64).

Two connections in one process: one with h5mem loaded, one with sqlite-vec.
On 1,200 random vector pairs (dimensions 1..1536, several magnitudes, BLOB
and JSON inputs) both must agree:
  vec_f32, vec_length, vec_to_json      identical bytes / text
  vec_distance_l2                       relative 1e-5 (sqlite-vec sums in
  vec_distance_cosine                   absolute 1e-5  float32 in order)
  vec_normalize                         each element within 1e-6 relative
The helpers (helpers()): on 600 random cases of each type, int8 (JSON and
BLOB, dimensions 1..1536), bit (1..192 bytes) and float32, vec_int8,
vec_bit, vec_length, vec_type, vec_to_json, subtype(), vec_distance_l1
(int8 exact, float32 identical), vec_distance_l2 / _cosine on int8 (1e-5),
vec_distance_hamming, vec_quantize_int8 and vec_quantize_binary (identical
bytes, and against the formula computed here), vec_add, vec_sub, vec_slice
and vec_each must agree, and sqlite-vec's own vec0 table in one connection
with h5mem must take h5mem's int8 and bit vectors for its columns.
Error cases: the inputs both reject must raise in both.  Where h5mem is
deliberately stricter (docs/SQL.md, "Differences from sqlite-vec"), the test
asserts that sqlite-vec still accepts the input and h5mem refuses it, so the
documented list stays true.
"""
import json
import os
import random
import sqlite3
import struct
import sys

EXT = os.environ.get("H5MEM_EXT", "./h5mem")
SRCDIR = os.environ.get("H5MEM_SRCDIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VEC0 = os.path.join(SRCDIR, "test", "interop", "node_modules", "sqlite-vec-linux-x64", "vec0")

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def connect(path):
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(path)
    return db


def run(db, sql, args):
    try:
        return ("ok", db.execute(sql, args).fetchone()[0])
    except sqlite3.OperationalError as e:
        return ("error", str(e))


def f32_round(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def random_vector(rng, dim):
    scale = rng.choice([1.0, 1e-3, 1e3, 0.5])
    return [f32_round(rng.gauss(0, 1) * scale) for _ in range(dim)]


def as_json(rng, v):
    # several spellings of the same numbers, all valid JSON
    style = rng.randrange(3)
    if style == 0:
        return json.dumps(v)
    if style == 1:
        return "[" + ",".join("%.9g" % x for x in v) + "]"
    return " [ " + " , ".join("%.17e" % x for x in v) + " ] "


def as_blob(v):
    return struct.pack("<%df" % len(v), *v)


def as_i8(v):
    return struct.pack("<%db" % len(v), *v)


def both_refuse(ours, peer, cases):
    """Each (sql, args) is an error in both extensions."""
    for sql, args in cases:
        r1, r2 = run(ours, sql, args), run(peer, sql, args)
        check(r1[0] == r2[0] == "error", f"{sql} {args!r}: h5mem {r1}, sqlite-vec {r2}")


def only_h5mem_refuses(ours, peer, cases):
    """Each (sql, args, reason): sqlite-vec accepts it (else the documented
    difference is gone) and h5mem refuses it with reason in the message."""
    for sql, args, reason in cases:
        r1, r2 = run(ours, sql, args), run(peer, sql, args)
        check(r2[0] == "ok", f"{sql} {args!r}: sqlite-vec no longer accepts it ({r2}); "
                             f"update docs/SQL.md and this list")
        check(r1[0] == "error" and reason in r1[1],
              f"{sql} {args!r}: h5mem gave {r1}, want an error with {reason!r}")


def q8_unit(v):
    """sqlite-vec's vec_quantize_int8(v, 'unit'): (x + 1) / step - 128 with
    step = 2/255 rounded to float32, clamped, truncated toward zero."""
    step = f32_round(2.0 / 255)
    return [int(max(-128.0, min(127.0, (x + 1.0) / step - 128))) for x in v]


def bits_of(v):
    """Binary quantization: element i set where v[i] > 0, bit i % 8 of byte i // 8."""
    return bytes(sum((v[k + j] > 0) << j for j in range(8)) for k in range(0, len(v), 8))


def same(ours, peer, sql, args, what):
    """Both give the same value (or both an error); returns h5mem's."""
    r1, r2 = run(ours, sql, args), run(peer, sql, args)
    if r1[0] == r2[0] == "error":
        return r1
    check(r1 == r2, f"{what}: {sql}: h5mem {r1[0]} {str(r1[1])[:80]} "
                    f"!= sqlite-vec {r2[0]} {str(r2[1])[:80]}")
    return r1


def rows(db, sql, args):
    try:
        return ("ok", db.execute(sql, args).fetchall())
    except sqlite3.OperationalError as e:
        return ("error", str(e))


def helpers(ours, peer, rng):
    """sqlite-vec's int8 and bit vectors and its other helpers: vec_int8,
    vec_bit, vec_quantize_int8, vec_quantize_binary, vec_distance_l1,
    vec_distance_hamming, vec_slice, vec_add, vec_sub, vec_each, on random
    vectors of every type."""
    dims = [1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 384, 768, 1024, 1536]
    n_i8 = n_bit = n_f32 = overflow = 0
    max_l2 = max_cos = 0.0
    for i in range(600):
        dim = dims[i % len(dims)] if i < 2 * len(dims) else rng.randint(1, 1536)
        what = f"case {i} dim {dim}"
        # ---- int8: small values (sums that fit) or the full range
        lim = rng.choice([127, 127, 60, 3])
        a = [rng.randint(-lim - (lim == 127), lim) for _ in range(dim)]
        b = [rng.randint(-lim - (lim == 127), lim) for _ in range(dim)]
        if i % 7 == 0:
            a[0] = -128  # the extremes
            b[-1] = 127
        ja, ba, bb = json.dumps(a), as_i8(a), as_i8(b)
        xa = ja if i % 2 else ba  # vec_int8 from JSON or a BLOB
        same(ours, peer, "select vec_int8(?)", (ja,), what)
        same(ours, peer, "select vec_int8(?)", (ba,), what)
        r = run(ours, "select vec_int8(?)", (xa,))
        check(r == ("ok", ba), f"{what}: vec_int8 gave {str(r)[:80]}")
        for sql in ("select vec_length(vec_int8(?))", "select vec_type(vec_int8(?))",
                    "select vec_to_json(vec_int8(?))", "select subtype(vec_int8(?))"):
            same(ours, peer, sql, (xa,), what)
        r = run(ours, "select vec_to_json(vec_int8(?))", (xa,))
        check(r[0] == "ok" and json.loads(r[1]) == a, f"{what}: vec_to_json of int8")
        r = same(ours, peer, "select vec_distance_l1(vec_int8(?), vec_int8(?))", (xa, bb), what)
        check(r == ("ok", sum(abs(x - y) for x, y in zip(a, b))), f"{what}: int8 l1 {r}")
        s1, d1 = run(ours, "select vec_distance_l2(vec_int8(?), vec_int8(?))", (xa, bb))
        s2, d2 = run(peer, "select vec_distance_l2(vec_int8(?), vec_int8(?))", (xa, bb))
        exact = sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5
        check(s1 == s2 == "ok", f"{what}: int8 l2 {s1} {d1} / {s2} {d2}")
        if s1 == s2 == "ok":
            max_l2 = max(max_l2, abs(d1 - d2) / max(d2, 1e-30))
            check(abs(d1 - d2) <= 1e-5 * max(d2, 1e-30), f"{what}: int8 l2 {d1!r} vs {d2!r}")
            check(abs(d1 - exact) <= 1e-6 * max(exact, 1e-30), f"{what}: int8 l2 {d1!r} vs exact {exact!r}")
        if any(a) and any(b):
            s1, c1 = run(ours, "select vec_distance_cosine(vec_int8(?), vec_int8(?))", (xa, bb))
            s2, c2 = run(peer, "select vec_distance_cosine(vec_int8(?), vec_int8(?))", (xa, bb))
            check(s1 == s2 == "ok", f"{what}: int8 cosine {s1} {c1} / {s2} {c2}")
            if s1 == s2 == "ok":
                max_cos = max(max_cos, abs(c1 - c2))
                check(abs(c1 - c2) <= 1e-5, f"{what}: int8 cosine {c1!r} vs {c2!r}")
        for op, f in (("vec_add", lambda x, y: x + y), ("vec_sub", lambda x, y: x - y)):
            want = [f(x, y) for x, y in zip(a, b)]
            sql = f"select {op}(vec_int8(?), vec_int8(?))"
            if all(-128 <= w <= 127 for w in want):
                r = same(ours, peer, sql, (xa, bb), what)
                check(r == ("ok", as_i8(want)), f"{what}: {op} int8 gave {str(r)[:60]}")
            else:  # sqlite-vec wraps around; h5mem refuses (documented)
                overflow += 1
                r1, r2 = run(ours, sql, (xa, bb)), run(peer, sql, (xa, bb))
                wrapped = [((w + 128) % 256) - 128 for w in want]
                check(r2 == ("ok", as_i8(wrapped)), f"{what}: sqlite-vec {op} no longer wraps: {str(r2)[:60]}")
                check(r1[0] == "error" and "outside the int8 range" in r1[1], f"{what}: h5mem {op} gave {str(r1)[:80]}")
        lo = rng.randrange(dim)
        hi = rng.randint(lo + 1, dim)
        r = same(ours, peer, "select vec_slice(vec_int8(?), ?, ?)", (xa, lo, hi), what)
        check(r == ("ok", as_i8(a[lo:hi])), f"{what}: vec_slice int8 [{lo}:{hi}] gave {str(r)[:60]}")
        r1 = rows(ours, "select rowid, value from vec_each(vec_int8(?))", (xa,))
        check(r1 == rows(peer, "select rowid, value from vec_each(vec_int8(?))", (xa,)) and
              r1 == ("ok", list(enumerate(a))), f"{what}: vec_each int8")
        if dim % 8 == 0:
            r = same(ours, peer, "select vec_quantize_binary(vec_int8(?))", (xa,), what)
            check(r == ("ok", bits_of(a)), f"{what}: vec_quantize_binary int8")
        n_i8 += 1

        # ---- bit: whole bytes
        nbytes = max(1, dim // 8) if i % 3 else rng.choice([1, 8, 16, 128])
        ua = bytes(rng.randrange(256) for _ in range(nbytes))
        ub = bytes(rng.randrange(256) for _ in range(nbytes))
        bits = [(ua[k // 8] >> (k % 8)) & 1 for k in range(8 * nbytes)]
        same(ours, peer, "select vec_bit(?)", (ua,), what)
        for sql in ("select vec_length(vec_bit(?))", "select vec_type(vec_bit(?))",
                    "select vec_to_json(vec_bit(?))", "select subtype(vec_bit(?))"):
            same(ours, peer, sql, (ua,), what)
        r = run(ours, "select vec_to_json(vec_bit(?))", (ua,))
        check(r[0] == "ok" and json.loads(r[1]) == bits, f"{what}: vec_to_json of bits")
        ham = sum(bin(x ^ y).count("1") for x, y in zip(ua, ub))
        r = same(ours, peer, "select vec_distance_hamming(vec_bit(?), vec_bit(?))", (ua, ub), what)
        check(r == ("ok", float(ham)), f"{what}: hamming {r} want {ham}")
        lo = 8 * rng.randrange(nbytes)
        hi = 8 * rng.randint(lo // 8 + 1, nbytes)
        r = same(ours, peer, "select vec_slice(vec_bit(?), ?, ?)", (ua, lo, hi), what)
        check(r == ("ok", ua[lo // 8:hi // 8]), f"{what}: vec_slice bit")
        # vec_each on bits: h5mem in vec_to_json's order, sqlite-vec from
        # each byte's top bit (documented)
        r1 = rows(ours, "select rowid, value from vec_each(vec_bit(?))", (ua,))
        r2 = rows(peer, "select rowid, value from vec_each(vec_bit(?))", (ua,))
        check(r1 == ("ok", list(enumerate(bits))), f"{what}: vec_each bit order")
        msb = [(ua[k // 8] >> (7 - k % 8)) & 1 for k in range(8 * nbytes)]
        check(r2 == ("ok", list(enumerate(msb))), f"{what}: sqlite-vec's vec_each on bits changed: update docs/SQL.md")
        n_bit += 1

        # ---- float32: quantization, l1, add/sub, slice, each
        scale = rng.choice([1.0, 0.5, 1.5, 1e-3, 100.0])
        fa = [f32_round(rng.uniform(-1, 1) * scale) for _ in range(dim)]
        fb = [f32_round(rng.uniform(-1, 1) * scale) for _ in range(dim)]
        if i % 5 == 0:  # the edges of 'unit'
            fa[: min(dim, 5)] = [-1.0, 1.0, 0.0, -0.0, 0.5][: min(dim, 5)]
        jfa = as_json(rng, fa)
        xfa = jfa if i % 2 else as_blob(fa)
        xfb = as_blob(fb)
        r = same(ours, peer, "select vec_quantize_int8(?, 'unit')", (xfa,), what)
        check(r[0] == "ok", f"{what}: vec_quantize_int8 {str(r)[:80]}")
        if r[0] == "ok":
            check(r[1] == as_i8(q8_unit(fa)), f"{what}: vec_quantize_int8 against the formula")
        if dim % 8 == 0:
            r = same(ours, peer, "select vec_quantize_binary(?)", (xfa,), what)
            check(r == ("ok", bits_of(fa)), f"{what}: vec_quantize_binary float32")
        else:
            r1, r2 = run(ours, "select vec_quantize_binary(?)", (xfa,)), run(peer, "select vec_quantize_binary(?)", (xfa,))
            check(r1[0] == r2[0] == "error" and "divisible by 8" in r1[1], f"{what}: quantize_binary of {dim}: {r1} {r2}")
        s1, l1 = run(ours, "select vec_distance_l1(?, ?)", (xfa, xfb))
        s2, l1p = run(peer, "select vec_distance_l1(?, ?)", (xfa, xfb))
        want = sum(abs(x - y) for x, y in zip(fa, fb))
        check(s1 == s2 == "ok" and l1 == l1p and abs(l1 - want) <= 1e-12 * max(want, 1e-30),
              f"{what}: l1 {s1} {l1!r} / {s2} {l1p!r} / {want!r}")
        for op, f in (("vec_add", lambda x, y: x + y), ("vec_sub", lambda x, y: x - y)):
            r = same(ours, peer, f"select {op}(?, ?)", (xfa, xfb), what)
            check(r == ("ok", as_blob([f32_round(f(x, y)) for x, y in zip(fa, fb)])), f"{what}: {op} float32")
        lo = rng.randrange(dim)
        hi = rng.randint(lo + 1, dim)
        r = same(ours, peer, "select vec_slice(?, ?, ?)", (xfa, lo, hi), what)
        check(r == ("ok", as_blob(fa[lo:hi])), f"{what}: vec_slice float32")
        r1 = rows(ours, "select rowid, value from vec_each(?)", (xfa,))
        check(r1 == rows(peer, "select rowid, value from vec_each(?)", (xfa,)) and
              r1 == ("ok", list(enumerate(fa))), f"{what}: vec_each float32")
        same(ours, peer, "select subtype(vec_add(?, ?))", (xfa, xfb), what)
        same(ours, peer, "select subtype(vec_quantize_int8(?, 'unit'))", (xfa,), what)
        n_f32 += 1
    print(f"helpers: {n_i8} int8, {n_bit} bit, {n_f32} float32 cases; {overflow} int8 sums that "
          f"wrap in sqlite-vec; max int8 l2 difference {max_l2:.2e}, cosine {max_cos:.2e}")

    # each value carries the subtype sqlite-vec's own vec0 table expects:
    # sqlite-vec and h5mem in one connection (h5mem loaded last, so the
    # functions are h5mem's and vec0 is sqlite-vec's)
    both = connect(VEC0)
    both.load_extension(EXT)
    check(both.execute("select vec_version()").fetchone()[0].endswith("+h5mem." +
          both.execute("select h5mem_version()").fetchone()[0]), "h5mem's vec_version in one connection")
    both.execute("create virtual table t using vec0(a int8[8], b bit[16], c float[8])")
    both.execute("insert into t(rowid, a, b, c) values (1, vec_int8('[1,2,3,4,5,6,7,8]'), vec_bit(x'0f0f'), vec_f32('[1,2,3,4,5,6,7,8]'))")
    qa = [0.1, 0.2, 0.3, -1, 1, 0, 0.5, -0.5]
    qb = [1, 1, 1, 1, -1, -1, -1, -1, 1, -1, 1, -1, 1, -1, 1, -1]
    both.execute("insert into t(rowid, a, b, c) values (2, vec_quantize_int8(?, 'unit'), "
                 "vec_quantize_binary(?), vec_slice('[1,2,3,4,5,6,7,8,9]', 1, 9))", (json.dumps(qa), json.dumps(qb)))
    for col, bad in (("a", "vec_f32('[1,2,3,4,5,6,7,8]')"), ("b", "vec_int8('[1,2]')"), ("c", "vec_int8('[1,2,3,4,5,6,7,8]')")):
        r = run(both, f"insert into t(rowid, {col}) values (3, {bad}) returning rowid", ())
        check(r[0] == "error", f"vec0 took {bad} for column {col}: {r}")
    got = both.execute("select rowid, distance from t where b match vec_bit(x'0f0f') and k = 2").fetchall()
    ham = sum(bin(x ^ y).count("1") for x, y in zip(b"\x0f\x0f", bits_of(qb)))
    check(got == [(1, 0.0), (2, float(ham))], f"vec0 hamming KNN with h5mem's bit vectors: {got}, want {ham}")
    got = both.execute("select a, b, c from t where rowid = 2").fetchone()
    check(got == (as_i8(q8_unit([f32_round(x) for x in qa])), bits_of(qb), as_blob(range(2, 10))),
          f"vec0 stored h5mem's vectors as {got}")
    both.close()

    # inputs both extensions reject
    i8, b8 = "vec_int8(?)", "vec_bit(?)"
    both_reject = [
        ("select vec_bit(?)", ("text",)), ("select vec_bit(?)", (None,)), ("select vec_bit(?)", (1,)),
        ("select vec_bit(?)", (1.5,)), ("select vec_bit(?)", (b"",)),
        ("select vec_int8(?)", ("[128]",)), ("select vec_int8(?)", ("[-129]",)),
        ("select vec_int8(?)", ("[1.5]",)), ("select vec_int8(?)", ("[1e2]",)),
        ("select vec_int8(?)", ("[99999999999999999999]",)), ("select vec_int8(?)", ("[]",)),
        ("select vec_int8(?)", ("",)), ("select vec_int8(?)", (b"",)), ("select vec_int8(?)", (None,)),
        ("select vec_int8(?)", (7,)), ("select vec_int8(?)", ("[1,\"2\"]",)), ("select vec_int8(?)", ("x",)),
        ("select vec_distance_hamming(?, ?)", ("[1]", "[1]")),
        (f"select vec_distance_hamming({i8}, {i8})", (b"\xff", b"\xff")),
        (f"select vec_distance_hamming({b8}, {b8})", (b"\xff", b"\xff\x00")),
        (f"select vec_distance_hamming({b8}, ?)", (b"\xff\x00\x00\x00", b"\xff\x00\x00\x00")),
        (f"select vec_distance_l2({b8}, {b8})", (b"\xff", b"\x0f")),
        (f"select vec_distance_l1({b8}, {b8})", (b"\xff", b"\x0f")),
        (f"select vec_distance_cosine({b8}, {b8})", (b"\xff", b"\x0f")),
        (f"select vec_distance_l2(?, {i8})", ("[1,2]", "[1,2]")),
        (f"select vec_distance_l1({i8}, ?)", ("[1,2]", "[1,2]")),
        (f"select vec_distance_cosine({i8}, {b8})", (b"\x01", b"\x01")),
        (f"select vec_distance_l2({i8}, {i8})", ("[1,2]", "[1,2,3]")),
        (f"select vec_distance_l1({i8}, {i8})", ("[1,2]", "[1,2,3]")),
        ("select vec_distance_l1(?, ?)", ("[1,2]", "[1,2,3]")),
        ("select vec_distance_l1(?, ?)", ("[1,2]", None)),
        ("select vec_quantize_binary(?)", ("[1,2,3]",)),
        (f"select vec_quantize_binary({i8})", ("[1,2,3,4,5,6,7]",)),
        (f"select vec_quantize_binary({b8})", (b"\xff",)),
        ("select vec_quantize_binary(?)", (None,)),
        ("select vec_quantize_int8(?, ?)", ("[0.5]", "binary")),
        ("select vec_quantize_int8(?, ?)", ("[0.5]", "units")),
        ("select vec_quantize_int8(?, ?)", ("[0.5]", None)),
        ("select vec_quantize_int8(?, ?)", ("[0.5]", 1)),
        ("select vec_quantize_int8(?, ?)", ("[]", "unit")),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", -1, 2)),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 0, -2)),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 4, 4)),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 0, 4)),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 2, 1)),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 1, 1)),
        ("select vec_slice(?, ?, ?)", (None, 0, 1)),
        (f"select vec_slice({i8}, ?, ?)", ("[1,2,3]", 0, 5)),
        (f"select vec_slice({b8}, ?, ?)", (b"\xaa\xbb", 2, 16)),
        (f"select vec_slice({b8}, ?, ?)", (b"\xaa\xbb", 0, 15)),
        (f"select vec_slice({b8}, ?, ?)", (b"\xaa\xbb", 0, 24)),
        (f"select vec_add({b8}, {b8})", (b"\xff", b"\xff")),
        (f"select vec_sub({b8}, {b8})", (b"\xff", b"\xff")),
        (f"select vec_add(?, {i8})", ("[1]", "[1]")),
        (f"select vec_sub({i8}, ?)", ("[1]", "[1]")),
        ("select vec_add(?, ?)", ("[1,2]", "[1]")),
        (f"select vec_sub({i8}, {i8})", ("[1,2]", "[1]")),
        (f"select vec_normalize({i8})", ("[1,2]",)),
        (f"select vec_normalize({b8})", (b"\xff",)),
        ("select vec_to_json(?)", (None,)), ("select vec_type(?)", (b"\xaa",)),
        ("select count(*) from vec_each(?)", (None,)), ("select count(*) from vec_each(?)", (b"\0\0",)),
        ("select count(*) from vec_each(?)", ("[]",)),
    ]
    both_refuse(ours, peer, both_reject)
    print(f"helpers: {len(both_reject)} inputs rejected by both")

    # documented differences: sqlite-vec accepts, h5mem refuses with a reason
    stricter = [
        ("select vec_int8(?)", ("[1 2]",), "expected ',' or ']'"),
        ("select vec_int8(?)", ("[+1]",), "expected a number"),
        ("select vec_int8(?)", ("[01]",), "expected ',' or ']'"),
        ("select vec_int8(?)", ("[1,]",), "expected a number"),
        ("select vec_int8(?)", ("[1]x",), "after the array"),
        ("select vec_int8(?)", ("[1,2",), "found end of input"),
        ("select vec_add(?, ?)", ("[1", "[1]"), "found end of input"),
        (f"select vec_add({i8}, {i8})", ("[100]", "[100]"), "100 + 100 = 200 is outside the int8 range"),
        (f"select vec_sub({i8}, {i8})", ("[-100]", "[100]"), "-100 - 100 = -200 is outside the int8 range"),
        ("select vec_add(?, ?)", ("[3e38]", "[3e38]"), "outside the float32 range"),
        ("select vec_sub(?, ?)", ("[-3e38]", "[3e38]"), "outside the float32 range"),
        (f"select vec_distance_cosine({i8}, {i8})", ("[0,0]", "[1,1]"), "zero vector"),
        ("select vec_int8(vec_f32(?))", ("[1]",), "tagged float32"),
        ("select vec_bit(vec_f32(?))", ("[1]",), "tagged float32"),
        (f"select vec_bit({i8})", (b"\xff",), "tagged int8"),
        (f"select vec_int8({b8})", (b"\xff",), "tagged bit"),
        (f"select vec_quantize_int8({i8}, 'unit')", (b"\0\0\0\0",), "not int8"),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 0, 2.0), "end must be an integer, not REAL"),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", "0", 2), "start must be an integer, not TEXT"),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", None, 2), "start must be an integer, not NULL"),
        ("select vec_slice(?, ?, ?)", ("[1,2,3]", 0, 2 ** 32 + 1), "past the end of the vector"),
        ("select vec_quantize_int8(?, 'unit')", ("[nan]",), "expected a number"),
        ("select vec_quantize_binary(?)", (struct.pack("<8f", *([1.0] * 7 + [float("nan")])),), "element 7 is NaN"),
        ("select vec_distance_l1(?, ?)", (struct.pack("<f", float("inf")), "[1]"), "element 0 is infinite"),
        ("select count(*) from vec_each(?)", ("[1,,2]",), "expected a number"),
    ]
    only_h5mem_refuses(ours, peer, stricter)
    print(f"helpers: {len(stricter)} documented refusals hold")

    # documented differences in what is returned
    r1, r2 = run(ours, "select vec_f32(vec_int8(?))", ("[1,-2,3,4]",)), run(peer, "select vec_f32(vec_int8(?))", ("[1,-2,3,4]",))
    check(r1 == ("ok", as_blob([1, -2, 3, 4])), f"h5mem vec_f32 of int8: {r1}")
    check(r2 == ("ok", as_i8([1, -2, 3, 4])), f"sqlite-vec's vec_f32 of int8 no longer reinterprets the bytes: {r2}")
    r1 = run(ours, "select vec_to_json(vec_f32(vec_bit(?)))", (b"\x05",))
    check(r1 == ("ok", "[1.000000,0.000000,1.000000,0.000000,0.000000,0.000000,0.000000,0.000000]"),
          f"h5mem vec_f32 of bits: {r1}")
    r1 = run(ours, "select vec_version()", ())
    r2 = run(peer, "select vec_version()", ())
    check(r1[0] == "ok" and r1[1] == r2[1] + "+h5mem." + ours.execute("select h5mem_version()").fetchone()[0],
          f"vec_version: {r1} / {r2}")
    d1, d2 = run(ours, "select vec_debug()", ()), run(peer, "select vec_debug()", ())
    check(len(d1[1].split("\n")) == len(d2[1].split("\n")) == 4 and d1[1].startswith("Version: " + r1[1] + "\n"),
          f"vec_debug: {d1} / {d2}")
    simd = json.loads(ours.execute("select h5mem_info()").fetchone()[0])["simd"]
    check(("\nSIMD: " + simd + " ") in d1[1], f"vec_debug names the SIMD level {simd}: {d1}")


def main():
    if not os.path.exists(VEC0 + ".so"):
        print(f"FAIL: sqlite-vec not found at {VEC0}.so; install the test peers "
              f"with: npm ci --prefix {os.path.join(SRCDIR, 'test', 'interop')}")
        return 1
    ours, peer = connect(EXT), connect(VEC0)
    print("sqlite-vec", peer.execute("select vec_version()").fetchone()[0],
          "| h5mem", ours.execute("select h5mem_version()").fetchone()[0],
          "| SQLite", sqlite3.sqlite_version)
    check(peer.execute("select vec_version()").fetchone()[0] == "v0.1.9",
          "the oracle must be sqlite-vec v0.1.9")

    rng = random.Random(20261129)
    dims = [1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64, 100, 128, 384, 768, 1536]
    max_l2 = max_cos = 0.0
    pairs = 1200
    for i in range(pairs):
        dim = dims[i % len(dims)] if i < 2 * len(dims) else rng.randint(1, 1536)
        a, b = random_vector(rng, dim), random_vector(rng, dim)
        ja, jb = as_json(rng, a), as_json(rng, b)
        ba, bb = as_blob(a), as_blob(b)
        # the same input in either form, in either argument
        xa = ja if i % 2 else ba
        xb = bb if i % 3 else jb
        for sql, args in (("select vec_f32(?)", (ja,)),
                          ("select vec_length(?)", (xa,)),
                          ("select vec_to_json(?)", (ba,)),
                          ("select vec_to_json(vec_f32(?))", (jb,))):
            r1, r2 = run(ours, sql, args), run(peer, sql, args)
            check(r1 == r2, f"pair {i} dim {dim}: {sql}: h5mem {r1[0]} {str(r1[1])[:80]} "
                            f"!= sqlite-vec {r2[0]} {str(r2[1])[:80]}")
        s1, l2 = run(ours, "select vec_distance_l2(?, ?)", (xa, xb))
        s2, l2p = run(peer, "select vec_distance_l2(?, ?)", (xa, xb))
        check(s1 == s2 == "ok", f"pair {i}: l2 {s1} {l2} / {s2} {l2p}")
        if s1 == s2 == "ok":
            rel = abs(l2 - l2p) / max(abs(l2p), 1e-30)
            max_l2 = max(max_l2, rel)
            check(rel <= 1e-5, f"pair {i} dim {dim}: l2 {l2!r} vs {l2p!r}")
        s1, c = run(ours, "select vec_distance_cosine(?, ?)", (xa, xb))
        s2, cp = run(peer, "select vec_distance_cosine(?, ?)", (xa, xb))
        check(s1 == s2 == "ok", f"pair {i}: cosine {s1} {c} / {s2} {cp}")
        if s1 == s2 == "ok":
            max_cos = max(max_cos, abs(c - cp))
            check(abs(c - cp) <= 1e-5, f"pair {i} dim {dim}: cosine {c!r} vs {cp!r}")
        s1, n1 = run(ours, "select vec_normalize(?)", (xa,))
        s2, n2 = run(peer, "select vec_normalize(?)", (xa,))
        check(s1 == s2 == "ok", f"pair {i}: normalize {s1} / {s2}")
        if s1 == s2 == "ok":
            u1 = struct.unpack("<%df" % dim, n1)
            u2 = struct.unpack("<%df" % dim, n2)
            check(all(abs(x - y) <= 1e-6 * max(abs(y), 1e-30) + 1e-12 for x, y in zip(u1, u2)),
                  f"pair {i} dim {dim}: normalize differs")
    print(f"{pairs} pairs: max relative l2 difference {max_l2:.2e}, "
          f"max cosine difference {max_cos:.2e}")

    # inputs both extensions reject
    both_reject = [
        ("select vec_f32(?)", (None,)), ("select vec_f32(?)", (42,)),
        ("select vec_f32(?)", (1.5,)), ("select vec_f32(?)", (b"\0\0\0",)),
        ("select vec_f32(?)", (b"",)), ("select vec_f32(?)", ("[]",)),
        ("select vec_f32(?)", ("{}",)), ("select vec_f32(?)", ('["1"]',)),
        ("select vec_f32(?)", ("abc",)), ("select vec_length(?)", (None,)),
        ("select vec_to_json(?)", (b"\0",)),
        ("select vec_distance_l2(?, ?)", ("[1,2]", "[1,2,3]")),
        ("select vec_distance_cosine(?, ?)", (as_blob([1.0]), as_blob([1.0, 2.0]))),
        ("select vec_distance_l2(?, ?)", ("[1]", None)),
        ("select vec_normalize(?)", ("[",)),
    ]
    both_refuse(ours, peer, both_reject)
    print(f"{len(both_reject)} inputs rejected by both")

    # documented differences: sqlite-vec accepts, h5mem refuses with a reason
    nan_blob = struct.pack("<2f", 1.0, float("nan"))
    inf_blob = struct.pack("<2f", float("inf"), 1.0)
    stricter = [
        ("select vec_f32(?)", ("[nan, 1]",), "expected a number"),
        ("select vec_f32(?)", ("[Infinity]",), "expected a number"),
        ("select vec_f32(?)", ("[1e39]",), "outside the float32 range"),
        ("select vec_f32(?)", ("[1 2 3]",), "expected ',' or ']'"),
        ("select vec_f32(?)", ("[1,2]xyz",), "after the array"),
        ("select vec_f32(?)", ("[1,2",), "found end of input"),
        ("select vec_f32(?)", ("[1,,2]",), "expected a number"),
        ("select vec_f32(?)", ("[1,]",), "expected a number"),
        ("select vec_f32(?)", ("[0x10]",), "expected ',' or ']'"),
        ("select vec_f32(?)", ("[+1]",), "expected a number"),
        ("select vec_f32(?)", ("[.5]",), "expected a number"),
        ("select vec_f32(?)", ("[01]",), "expected ',' or ']'"),
        ("select vec_f32(?)", (nan_blob,), "element 1 is NaN"),
        ("select vec_f32(?)", (inf_blob,), "element 0 is infinite"),
        ("select vec_distance_cosine(?, ?)", ("[0,0]", "[1,1]"), "zero vector"),
        ("select vec_normalize(?)", ("[0,0]",), "zero vector"),
    ]
    only_h5mem_refuses(ours, peer, stricter)
    print(f"{len(stricter)} documented differences hold")

    helpers(ours, peer, rng)

    for f in failures[:40]:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("h5mem and sqlite-vec agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
