"""The extension through Python's sqlite3 module (Debian's /usr/bin/python3).

Numbers are checked against numpy, an independent implementation: float16
rounding against numpy's float16, distances against float64 arithmetic.
The numeric checks run once per SIMD level this machine can run, each in a
child process started with H5MEM_SIMD set, since the level is chosen once
per process.
"""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

import numpy as np

EXT = os.environ.get("H5MEM_EXT", "./h5mem")


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.enable_load_extension(False)
    return db


def f32(v):
    return np.asarray(v, dtype=np.float32).tobytes()


def write_topic_model(path):
    """A GloVe text file of 8-d word vectors, most frequent word first: the
    common words along one axis (the component SIF removes), three topics
    along three others; no topic word is shared by the texts and queries of
    the semantic search tests."""
    stop = ["the", "a", "we", "in", "to", "my", "has", "is", "went", "last", "with", "all", "been", "week"]
    topics = [["mountain", "alps", "hiking", "trek", "summit", "summer"],
              ["dog", "puppy", "vet", "sick", "fever", "ill"],
              ["budget", "finance", "review", "money", "quarterly", "costs"]]
    lines = []
    for i, w in enumerate(stop):
        v = [0.0] * 8
        v[7] = 1.0
        v[3 + i % 3] = 0.1
        lines.append(w + " " + " ".join("%g" % x for x in v))
    for t, ws in enumerate(topics):
        for j, w in enumerate(ws):
            v = [0.0] * 8
            v[t] = 1.0
            v[4 + j % 3] = 0.2
            lines.append(w + " " + " ".join("%g" % x for x in v))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Semantic(unittest.TestCase):
    """Offline semantic search from Python: the store embeds with a static
    word-vector model (issue 22)."""

    def test_store_embeds_texts_and_queries(self):
        d = tempfile.mkdtemp(prefix="h5mem_py_")
        try:
            db = sqlite3.connect(":memory:", isolation_level=None)
            db.enable_load_extension(True)
            db.load_extension(EXT)
            src, model = os.path.join(d, "topics.txt"), os.path.join(d, "topics.h5")
            write_topic_model(src)
            info = json.loads(db.execute("select h5mem_embedder_build(?, ?)", (src, model)).fetchone()[0])
            self.assertEqual((info["words"], info["dim"]), (32, 8))
            db.execute("create virtual table mem using h5mem(path=?, embedder=?)"
                       .replace("?", "'%s'") % (os.path.join(d, "m.h5"), "static:" + model))
            texts = ["we went hiking in the alps last summer", "my dog has been sick all week",
                     "the quarterly budget review"]
            for t in texts:
                db.execute("insert into mem(text) values (?)", (t,))
            for query, want in (("a mountain trek", 1), ("a puppy with a fever", 2), ("money and costs", 3)):
                got = db.execute("select id from vec_search('mem', ?, 1)", (query,)).fetchone()[0]
                self.assertEqual(got, want, query)
                got = db.execute("select id from mem where embedding match ? and k = 1", (query,)).fetchone()[0]
                self.assertEqual(got, want, query)
            v = db.execute("select h5mem_embed('a puppy with a fever', 'mem')").fetchone()[0]
            e = db.execute("select embedding from mem where id = 2").fetchone()[0]
            cos = float(np.dot(np.frombuffer(v, "<f4"), np.frombuffer(e, "<f4")))
            self.assertGreater(cos, 0.9)
            db.close()
        finally:
            shutil.rmtree(d)


class Basics(unittest.TestCase):
    def setUp(self):
        self.db = connect()

    def one(self, sql, *args):
        return self.db.execute(sql, args).fetchone()[0]

    def test_identity(self):
        info = json.loads(self.one("select h5mem_info()"))
        for key in ("version", "commit", "simd", "simd_usable", "simd_compiled",
                    "sqlite", "zlib", "xxhash"):
            self.assertIn(key, info)
        self.assertEqual(info["version"], self.one("select h5mem_version()"))
        self.assertEqual(info["sqlite"], sqlite3.sqlite_version)
        self.assertIn(info["simd"], info["simd_usable"])
        self.assertIn("scalar", info["simd_usable"])
        for level in info["simd_usable"]:
            self.assertIn(level, info["simd_compiled"])

    def test_blob_round_trip(self):
        v = [0.5, -1.25, 3.0e-5, 1234.5]
        self.assertEqual(self.one("select vec_f32(?)", json.dumps(v)), f32(v))
        self.assertEqual(self.one("select vec_f32(?)", f32(v)), f32(v))
        self.assertEqual(self.one("select vec_length(?)", f32(v)), 4)
        exact = json.loads(self.one("select vec_to_json(?, 1)", f32(v)))
        self.assertEqual(f32(exact), f32(v))

    def test_errors_raise(self):
        cases = {
            "select vec_f32('[1,2')": "expected ',' or ']' at byte 4",
            "select vec_f32(NULL)": "got NULL",
            "select vec_f32(x'00')": "multiple of 4 bytes",
            "select vec_distance_l2('[1]', '[1,2]')": "dimension mismatch",
            "select vec_f16('[1e6]')": "outside the float16 range",
            "select vec_distance_cosine('[0]', '[1]')": "zero vector",
        }
        for sql, msg in cases.items():
            with self.assertRaises(sqlite3.OperationalError) as cm:
                self.one(sql)
            self.assertIn(msg, str(cm.exception), sql)
        nan = struct.pack("<2f", 1.0, float("nan"))
        with self.assertRaises(sqlite3.OperationalError) as cm:
            self.one("select vec_dot(?, ?)", nan, nan)
        self.assertIn("first argument: element 1 is NaN", str(cm.exception))

    def test_many_threads(self):
        """Connections in several threads at once, the first calls racing
        to choose the kernels."""
        errors = []

        def work(seed):
            try:
                db = connect()
                rng = np.random.default_rng(seed)
                for _ in range(200):
                    a = rng.standard_normal(37).astype(np.float32)
                    b = rng.standard_normal(37).astype(np.float32)
                    got = db.execute("select vec_dot(?, ?)",
                                     (a.tobytes(), b.tobytes())).fetchone()[0]
                    want = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
                    if abs(got - want) > 1e-4 * (1 + abs(want)):
                        errors.append((got, want))
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


def numeric_checks(level):
    """Compare the extension with numpy; raises AssertionError on a mismatch.
    Runs in a child process whose H5MEM_SIMD is `level`."""
    db = connect()
    used = json.loads(db.execute("select h5mem_info()").fetchone()[0])["simd"]
    assert used == level, (used, level)
    rng = np.random.default_rng(7)
    checked = 0
    for dim in list(range(1, 70)) + [127, 128, 129, 384, 768, 1000, 1536]:
        for scale in (1.0, 1e-3, 1e3):
            a = (rng.standard_normal(dim) * scale).astype(np.float32)
            b = (rng.standard_normal(dim) * scale).astype(np.float32)
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            # float16: numpy's round-to-nearest-even is the oracle, bit for bit
            h = db.execute("select vec_f16(?)", (a.tobytes(),)).fetchone()[0]
            assert h == a.astype(np.float16).tobytes(), (dim, scale)
            l2, cos, dot, l2h, cosh, doth = db.execute(
                "select vec_distance_l2(?1, ?2), vec_distance_cosine(?1, ?2),"
                " vec_dot(?1, ?2), vec_distance_l2(?1, vec_f16(?2)),"
                " vec_distance_cosine(vec_f16(?2), ?1), vec_dot(?1, vec_f16(?2))",
                (a.tobytes(), b.tobytes())).fetchone()
            terms = np.abs(a64 * b64).sum()
            want_l2 = np.sqrt(((a64 - b64) ** 2).sum())
            want_cos = 1 - np.dot(a64, b64) / np.sqrt(np.dot(a64, a64) * np.dot(b64, b64))
            assert abs(l2 - want_l2) <= 1e-5 * want_l2 + 1e-6, (dim, l2, want_l2)
            assert abs(cos - want_cos) <= 1e-5, (dim, cos, want_cos)
            assert abs(dot - np.dot(a64, b64)) <= 1e-5 * terms + 1e-6, (dim, dot)
            bh = b.astype(np.float16).astype(np.float64)
            want_l2h = np.sqrt(((a64 - bh) ** 2).sum())
            want_cosh = 1 - np.dot(a64, bh) / np.sqrt(np.dot(a64, a64) * np.dot(bh, bh))
            assert abs(l2h - want_l2h) <= 1e-5 * want_l2h + 1e-6, (dim, l2h, want_l2h)
            assert abs(cosh - want_cosh) <= 1e-5, (dim, cosh, want_cosh)
            assert abs(doth - np.dot(a64, bh)) <= 1e-5 * np.abs(a64 * bh).sum() + 1e-6
            n = db.execute("select vec_normalize(?)", (a.tobytes(),)).fetchone()[0]
            got = np.frombuffer(n, dtype=np.float32).astype(np.float64)
            assert np.allclose(got, a64 / np.linalg.norm(a64), rtol=1e-6, atol=1e-7), dim
            checked += 1
    # float16 edge values: subnormals, ties, the overflow threshold
    edges = np.array([0.0, -0.0, 5.9604645e-08, 2.9802322e-08, 2.9802326e-08,
                      6.1035156e-05, 65504.0, 65519.996, 1.0004883, 1.0014648,
                      -0.33333334, 1e-10], dtype=np.float32)
    h = db.execute("select vec_f16(?)", (edges.tobytes(),)).fetchone()[0]
    assert h == edges.astype(np.float16).tobytes()
    back = db.execute("select vec_f32(vec_f16(?))", (edges.tobytes(),)).fetchone()[0]
    assert back == edges.astype(np.float16).astype(np.float32).tobytes()
    print(f"{level}: {checked} vector pairs match numpy")


class EveryLevel(unittest.TestCase):
    def test_numeric_every_level(self):
        db = connect()
        levels = json.loads(db.execute("select h5mem_info()").fetchone()[0])["simd_usable"]
        for level in levels:
            env = dict(os.environ, H5MEM_SIMD=level)
            r = subprocess.run([sys.executable, __file__, "--numeric", level],
                               env=env, capture_output=True, text=True)
            sys.stdout.write(r.stdout)
            self.assertEqual(r.returncode, 0, f"level {level}:\n{r.stdout}{r.stderr}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--numeric":
        numeric_checks(sys.argv[2])
        sys.exit(0)
    unittest.main(verbosity=2)
