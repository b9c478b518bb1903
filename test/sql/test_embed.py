"""Static word-vector embedders (issue 22, first part): h5mem_embedder_build
makes a model file from GloVe text, word2vec text and wink-embeddings JSON;
h5mem_embed gives a text's SIF sentence vector, which must equal a numpy
computation from the model file as h5py reads it (the file's documented
format: docs/FORMAT.md), and 'hash:DIM' the lexical embedding.  Damaged
models, bad sources and bad options are errors that say what is wrong.

Run by make check with Debian's /usr/bin/python3.
"""
import json
import os
import shutil
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402

WORDS = ["the", "of", "and", "to", "in", "a", "was", "dog", "cat", "puppy", "kitten", "car", "automobile",
         "truck", "road", "mountain", "hike", "alps", "trek", "summer", "winter", "snow", "tax", "report",
         "bank", "money", "river", "café", "Über", "x-ray", ",", "'s", "The", "naïve"]


def vectors(dim=8):
    rng = np.random.default_rng(22)
    v = rng.standard_normal((len(WORDS), dim)).astype(np.float32)
    v[WORDS.index("puppy")] = v[WORDS.index("dog")] + 0.1 * v[WORDS.index("puppy")]
    v[WORDS.index("automobile")] = v[WORDS.index("car")] + 0.1 * v[WORDS.index("automobile")]
    return v


def write_glove(fn, v, header=False):
    with open(fn, "w", encoding="utf-8") as f:
        if header:
            f.write("%d %d\n" % v.shape)
        for w, row in zip(WORDS, v):
            f.write(w + " " + " ".join(repr(float(x)) for x in row) + "\n")


def write_wink(fn, v):
    vecs = {w: [float(x) for x in row] + [float(np.linalg.norm(row)), i] for i, (w, row) in enumerate(zip(WORDS, v))}
    with open(fn, "w", encoding="utf-8") as f:
        json.dump({"precision": 8, "l2NormIndex": v.shape[1], "wordIndex": v.shape[1] + 1, "size": len(WORDS),
                   "dimensions": v.shape[1], "words": WORDS, "vectors": vecs, "unkVector": [0.0] * v.shape[1]}, f)


def numpy_sif(model, text):
    """The sentence vector the format documents, from the file through h5py
    (tokens here: ASCII lowercase words, as unicode61 gives them)."""
    with h5py.File(model, "r") as f:
        b = f["vocab_bytes"][()].tobytes()
        off = f["vocab_offsets"][()]
        vocab = {b[off[i]:off[i + 1]].decode(): i for i in range(len(off) - 1)}
        vec = f["vectors"][()].astype(np.float64)
        w = f["weights"][()].astype(np.float64)
        pc = f["pc"][()].astype(np.float64)
    import re
    toks = [t for t in re.findall(r"[a-z0-9]+", text.lower()) if t in vocab]
    if not toks:
        return np.zeros(vec.shape[1])
    s = sum(w[vocab[t]] * vec[vocab[t]] for t in toks) / len(toks)
    s = s - (s @ pc) * pc
    return s / np.linalg.norm(s)


def emb(db, text, spec):
    r = db.execute("SELECT h5mem_embed(?, ?)", (text, spec)).fetchone()[0]
    return None if r is None else np.frombuffer(r, "<f4")


def main():
    d = tempfile.mkdtemp(prefix="h5mem_embed_")
    db = connect()
    try:
        v = vectors()
        glove, w2v, wink = (os.path.join(d, n) for n in ("g.txt", "w2v.txt", "wink.json"))
        write_glove(glove, v)
        write_glove(w2v, v, header=True)
        write_wink(wink, v)
        outs = {}
        for name, src, opts in [("glove", glove, None), ("w2v", w2v, None), ("wink", wink, None),
                                ("glove_fmt", glove, '{"format": "glove"}'),
                                ("f32", glove, '{"dtype": "float32"}'), ("top10", glove, '{"max_words": 10}')]:
            model = os.path.join(d, name + ".h5")
            args = (src, model) if opts is None else (src, model, opts)
            r = db.execute("SELECT h5mem_embedder_build(%s)" % ", ".join("?" * len(args)), args).fetchone()[0]
            outs[name] = json.loads(r)
        g = outs["glove"]
        # "," is no token and "x-ray" two; "The" repeats "the"; "'s" is the
        # token "s"; "café", "Über", "naïve" fold to "cafe", "uber", "naive"
        check(g["words"] == len(WORDS) - 3 and g["skipped"] == 3 and g["dim"] == 8,
              "the glove build keeps the one-token words: %r" % g)
        check(outs["w2v"]["digest"] == g["digest"] == outs["wink"]["digest"] == outs["glove_fmt"]["digest"],
              "the three formats of the same vectors make the same model: %r" % outs)
        check(outs["f32"]["digest"] != g["digest"] and outs["top10"]["words"] == 10,
              "float32 storage and max_words: %r %r" % (outs["f32"], outs["top10"]))
        with h5py.File(os.path.join(d, "glove.h5"), "r") as f:
            b = f["vocab_bytes"][()].tobytes()
            off = f["vocab_offsets"][()]
            words = [b[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)]
            check(words == sorted(words, key=lambda s: s.encode()) and "cafe" in words and "uber" in words
                  and "naive" in words and "the" in words and "s" in words and "," not in words,
                  "the vocabulary: folded, in byte order: %r" % words)
            check(f["vectors"].dtype == np.float16 and f.attrs["h5mem_model"] == b"static-sif",
                  "float16 vectors, the kind attribute")
            w = f["weights"][()]
            check(w[words.index("the")] < w[words.index("alps")], "a frequent word weighs less (SIF)")
        with h5py.File(os.path.join(d, "top10.h5"), "r") as f:
            b = f["vocab_bytes"][()].tobytes()
            off = f["vocab_offsets"][()]
            kept = {b[off[i]:off[i + 1]].decode() for i in range(len(off) - 1)}
            check(kept == {"the", "of", "and", "to", "in", "a", "was", "dog", "cat", "puppy"},
                  "max_words keeps the most frequent: %r" % kept)
        # sentence vectors equal numpy's reading of the format
        for model in ("glove", "f32"):
            spec = "static:" + os.path.join(d, model + ".h5")
            for text in ["The dog and the cat", "a puppy in the snow", "hike the Alps in summer",
                         "automobile", "tax report, bank money!", "Café naïve über"]:
                got = emb(db, text, spec)
                want = numpy_sif(os.path.join(d, model + ".h5"), text.replace("é", "e").replace("ï", "i")
                                 .replace("ü", "u"))
                check(got is not None and np.allclose(got, want, atol=2e-6),
                      "%s %r: %r, numpy %r" % (model, text, got, want))
        spec = "static:" + os.path.join(d, "glove.h5")
        check(np.all(emb(db, "zebra quux", spec) == 0), "no known word: the zero vector")
        check(emb(db, None, spec) is None, "NULL text: NULL")
        sim = lambda a, b: float(emb(db, a, spec) @ emb(db, b, spec))  # noqa: E731
        check(sim("my dog", "a puppy") > sim("my dog", "tax report"), "dog is nearer puppy than tax")
        h = emb(db, "hello world", "hash:16")
        ref = np.frombuffer(db.execute("SELECT h5mem_embed_text('hello world', 16)").fetchone()[0], "<f4")
        check(np.array_equal(h, ref), "hash:16 is h5mem_embed_text")
        # the h5mem table's embedder gives its dimension
        db.execute("CREATE VIRTUAL TABLE temp.eh USING h5mem(path=%s, embedder='hash:24')" % q(os.path.join(d, "eh.h5")))
        db.execute("INSERT INTO temp.eh(text, embedding) VALUES ('a', h5mem_embed('a', 'hash:24'))")
        check(db.execute("SELECT vec_length(embedding) FROM temp.eh").fetchone()[0] == 24, "hash:24 gives dim 24")
        db.execute("CREATE VIRTUAL TABLE temp.es USING h5mem(path=%s, embedder=%s)" % (q(os.path.join(d, "es.h5")), q(spec)))
        db.execute("INSERT INTO temp.es(text, embedding) VALUES ('dog', h5mem_embed('dog', ?))", (spec,))
        check(db.execute("SELECT vec_length(embedding) FROM temp.es").fetchone()[0] == 8, "the model gives dim 8")
        expect_error(db, "CREATE VIRTUAL TABLE temp.e2 USING h5mem(path=%s, embedder='hash:24', dim=32)"
                     % q(os.path.join(d, "e2.h5")), "gives 24 dimensions, the table says dim=32")
        expect_error(db, "CREATE VIRTUAL TABLE temp.e3 USING h5mem(path=%s, embedder='hash:8', embedding float[16])"
                     % q(os.path.join(d, "e3.h5")), "declares the embedding float[16]")
        expect_error(db, "CREATE VIRTUAL TABLE temp.e4 USING h5mem(path=%s, embedder=%s)"
                     % (q(os.path.join(d, "e4.h5")), q("static:" + os.path.join(d, "none.h5"))),
                     "cannot open the model")
        expect_error(db, "CREATE VIRTUAL TABLE temp.e5 USING h5mem(path=%s, embedder='openai:x')"
                     % q(os.path.join(d, "e5.h5")), "needs the model")
        # the store embeds the text of an INSERT without an embedding, and a
        # search's query text (vec_search, the KNN form, hybrid's one text)
        texts = ["the dog and the cat", "a puppy in the snow", "hike the alps in summer", "tax report",
                 "bank money river", "zebra quux"]
        db.executemany("INSERT INTO temp.es(text) VALUES (?)", [(t,) for t in texts])
        rows = db.execute("SELECT text, embedding FROM temp.es WHERE id > 1 ORDER BY id").fetchall()
        for t, e in rows:
            want = emb(db, t, spec)
            if t == "zebra quux":
                check(e is None, "no known word: the record has no embedding, not a zero vector")
            else:
                check(e is not None and np.array_equal(np.frombuffer(e, "<f4"), want), "INSERT embedded %r" % t)
        for qt in ["a little puppy", "money in the bank"]:
            got = db.execute("SELECT id, distance FROM vec_search('es', ?, 3)", (qt,)).fetchall()
            want = db.execute("SELECT id, distance FROM vec_search('es', h5mem_embed(?, ?), 3)", (qt, spec)).fetchall()
            check(got == want and len(got) == 3, "vec_search with text %r: %r, with its vector %r" % (qt, got, want))
            got = db.execute("SELECT id FROM temp.es WHERE embedding MATCH ? AND k = 2", (qt,)).fetchall()
            check([r[0] for r in got] == [r[0] for r in want[:2]], "the KNN form with text %r: %r" % (qt, got))
        r = json.loads(db.execute("SELECT h5mem_remember('es', 'the kitten and the cat by the river', NULL, "
                                  "'{\"strategy\": \"always\", \"dedup\": \"off\"}')").fetchone()[0])
        e = db.execute("SELECT embedding FROM temp.es WHERE id = ?", (r.get("id"),)).fetchone()
        check(r.get("action") == "inserted" and e and e[0] is not None and
              np.array_equal(np.frombuffer(e[0], "<f4"), emb(db, "the kitten and the cat by the river", spec)),
              "h5mem_remember without an embedding embeds the text: %r" % r)
        h = db.execute("SELECT id, vector_score FROM hybrid('es', 'puppy snow', NULL, 3)").fetchall()
        check(h and all(r[1] is not None for r in h), "hybrid's text serves the vector side: %r" % h)
        expect_error(db, "SELECT * FROM vec_search('es', 'zebra quux', 1)", "has no word")
        db.execute("INSERT INTO temp.eh(text) VALUES ('hello world')")
        e = db.execute("SELECT embedding FROM temp.eh WHERE text = 'hello world'").fetchone()[0]
        check(np.array_equal(np.frombuffer(e, "<f4"), emb(db, "hello world", "hash:24")), "hash:24 embeds INSERTs")
        # an empty id IN list: no rows (it once reached qsort with no array: UBSan)
        for f in ("vec_search('eh', 'hello world', 3)", "hybrid('eh', 'hello world', NULL, 3)"):
            n = db.execute("SELECT count(*) FROM %s WHERE id IN (SELECT 1 WHERE 0)" % f).fetchone()[0]
            check(n == 0, "%s with an empty id IN list: %d rows" % (f, n))
        # h5mem_embed(text, table) uses the table's embedder; h5mem_embed(text)
        # the one embedder of the open tables, or is an error saying why not
        check(db.execute("SELECT h5mem_embed('hello world', 'eh')").fetchone()[0] == emb(db, "hello world", "hash:24").tobytes(),
              "h5mem_embed(text, table)")
        expect_error(db, "SELECT h5mem_embed('hello world')", "different embedders")
        db.execute("DROP TABLE temp.es")
        check(db.execute("SELECT h5mem_embed('hello world')").fetchone()[0] == emb(db, "hello world", "hash:24").tobytes(),
              "h5mem_embed(text): the open tables' one embedder")
        db.execute("CREATE VIRTUAL TABLE temp.es USING h5mem(path=%s)" % q(os.path.join(d, "es.h5")))
        db.execute("CREATE VIRTUAL TABLE temp.en USING h5mem(path=%s, dim=4)" % q(os.path.join(d, "en.h5")))
        db.execute("INSERT INTO temp.en(text) VALUES ('no embedder here')")
        check(db.execute("SELECT embedding FROM temp.en").fetchone()[0] is None, "without an embedder: no embedding")
        expect_error(db, "SELECT * FROM vec_search('en', 'some text', 1)", "needs the store's embedder")
        for t in ("eh", "es", "en"):
            db.execute("DROP TABLE temp.%s" % t)
        # the store keeps its model's digest: another model at the path is refused
        mp = os.path.join(d, "model_moving.h5")
        shutil.copy(os.path.join(d, "glove.h5"), mp)
        sp = os.path.join(d, "digest_store.h5")
        db.execute("CREATE VIRTUAL TABLE temp.ed USING h5mem(path=%s, embedder=%s)" % (q(sp), q("static:" + mp)))
        db.execute("INSERT INTO temp.ed(text) VALUES ('a dog')")
        db.execute("DROP TABLE temp.ed")
        with h5py.File(sp, "r") as f:
            got = f.attrs["embedder_digest"]
            got = got.decode() if isinstance(got, bytes) else got
            check(got == g["digest"], "the store keeps the model's digest: %r" % got)
        db2 = connect()
        db2.execute("CREATE VIRTUAL TABLE temp.ed USING h5mem(path=%s, embedder=%s)" % (q(sp), q("static:" + mp)))
        os.replace(os.path.join(d, "f32.h5"), mp)  # another model (float32: another digest), same dim
        expect_error(db2, "INSERT INTO temp.ed(text) VALUES ('a cat')", "is another model now")
        expect_error(db2, "SELECT * FROM vec_search('ed', 'a dog', 1)", "is another model now")
        db2.close()
        db3 = connect()  # naming the other model when connecting: refused at once
        expect_error(db3, "CREATE VIRTUAL TABLE temp.ed USING h5mem(path=%s, embedder=%s)" % (q(sp), q("static:" + mp)),
                     "would not be comparable")
        db3.close()
        # errors
        expect_error(db, "SELECT h5mem_embed('x', 'bert:large')", "unknown embedder")
        expect_error(db, "SELECT h5mem_embed('x', 'hash:0')", "DIM from 1 to 65536")
        expect_error(db, "SELECT h5mem_embed('x', 'static:%s')" % os.path.join(d, "none.h5"), "No such file")
        expect_error(db, "SELECT h5mem_embed('x', 'static:%s')" % glove, "cannot open the model")
        dmg = os.path.join(d, "damaged.h5")
        raw = bytearray(open(os.path.join(d, "glove.h5"), "rb").read())
        with h5py.File(os.path.join(d, "glove.h5"), "r") as f:
            at = f["vectors"].id.get_offset()
        raw[at + 5] ^= 0x40
        open(dmg, "wb").write(bytes(raw))
        expect_error(db, "SELECT h5mem_embed('dog', %s)" % q("static:" + dmg), "changed or damaged")
        bad = os.path.join(d, "bad.txt")
        open(bad, "w").write("dog 0.1 0.2\ncat 0.3\n")
        expect_error(db, "SELECT h5mem_embedder_build(%s, %s)" % (q(bad), q(os.path.join(d, "x.h5"))), "line 2")
        check(not os.path.exists(os.path.join(d, "x.h5")), "a failed build leaves no model file")
        expect_error(db, "SELECT h5mem_embedder_build(%s, %s, '{\"format\": \"fasttext\"}')" % (q(glove), q(dmg)),
                     "option 'format'")
        expect_error(db, "SELECT h5mem_embedder_build(%s, %s, '{\"max_words\": 0}')" % (q(glove), q(dmg)),
                     "option 'max_words'")
        expect_error(db, "SELECT h5mem_embedder_build(%s, %s)" % (q(os.path.join(d, "nofile.txt")), q(dmg)),
                     "cannot read")
    finally:
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
