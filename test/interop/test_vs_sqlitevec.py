"""h5mem's vector functions against sqlite-vec v0.1.9 (npm sqlite-vec-linux-x64).

Two connections in one process: one with h5mem loaded, one with sqlite-vec.
On 1,200 random vector pairs (dimensions 1..1536, several magnitudes, BLOB
and JSON inputs) both must agree:
  vec_f32, vec_length, vec_to_json      identical bytes / text
  vec_distance_l2                       relative 1e-5 (sqlite-vec sums in
  vec_distance_cosine                   absolute 1e-5  float32 in order)
  vec_normalize                         each element within 1e-6 relative
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


def main():
    if not os.path.exists(VEC0 + ".so"):
        print(f"FAIL: sqlite-vec not found at {VEC0}.so; install the test peers "
              f"with: npm ci --prefix {os.path.join(SRCDIR, 'test')}")
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
    for sql, args in both_reject:
        r1, r2 = run(ours, sql, args), run(peer, sql, args)
        check(r1[0] == r2[0] == "error", f"{sql} {args!r}: h5mem {r1}, sqlite-vec {r2}")
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
    for sql, args, reason in stricter:
        r1, r2 = run(ours, sql, args), run(peer, sql, args)
        check(r2[0] == "ok", f"{sql} {args!r}: sqlite-vec no longer accepts it ({r2}); "
                             f"update docs/SQL.md and this list")
        check(r1[0] == "error" and reason in r1[1],
              f"{sql} {args!r}: h5mem gave {r1}, want an error with {reason!r}")
    print(f"{len(stricter)} documented differences hold")

    for f in failures[:40]:
        print("FAIL:", f)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("h5mem and sqlite-vec agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
