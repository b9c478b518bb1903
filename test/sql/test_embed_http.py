#!/usr/bin/python3
"""The HTTP embedder (embedder='openai:URL', issue 22) against a local server
speaking OpenAI's /v1/embeddings API (test/tools/openai_stub.py): vectors as
the server gives them, the dimension asked once, batches of held-back
INSERTs (autocommit, transactions, savepoints), retries of 429 and 5xx with
Retry-After, every failure an error naming the status and the provider's
message that writes nothing, the key read from the environment and never
kept in the file, a first INSERT embedded before the connection becomes the
store's writer."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from sqltest import check, connect, expect_error, finish, q  # noqa: E402
from openai_stub import embed  # noqa: E402

STUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "openai_stub.py")


def start(key=None):
    p = subprocess.Popen(["/usr/bin/python3", STUB] + (["--key", key] if key else []), stdout=subprocess.PIPE)
    port = int(p.stdout.readline())
    return p, "http://127.0.0.1:%d" % port


def call(base, path, obj=None):
    data = None if obj is None else json.dumps(obj).encode()
    r = urllib.request.urlopen(urllib.request.Request(base + path, data=data, method="GET" if obj is None else "POST"))
    return json.loads(r.read())


def log(base):
    return call(base, "/log")


def reset(base):
    call(base, "/reset", {})


def queue(base, *steps):
    call(base, "/control", {"queue": list(steps)})


def blob(v):
    return np.asarray(v, dtype="<f4").tobytes()


def vec(b):
    return np.frombuffer(b, "<f4")


def main():
    has_curl = json.loads(connect().execute("SELECT h5mem_info()").fetchone()[0]).get("libcurl")
    if has_curl is False:
        print("SKIP: this h5mem was built without libcurl")
        sys.exit(77)
    d = tempfile.mkdtemp(prefix="h5mem_http_")
    srv, base = start()
    ksrv, kbase = start(key="sk-test-7f3a")
    url = base + "/v1"
    try:
        db = connect()
        # h5mem_embed: the server's vector, exactly
        got = db.execute("SELECT h5mem_embed('the hike in the alps', %s, '{\"model\": \"stub-8\"}')" % q("openai:" + url)).fetchone()[0]
        check(np.array_equal(vec(got), embed("the hike in the alps", 8)), "h5mem_embed gives the server's vector")
        body = log(base)[-1]["body"]
        check(body["model"] == "stub-8" and body["input"] == ["the hike in the alps"], "request shape: %r" % body)
        check(log(base)[-1]["content_type"] == "application/json", "sent as JSON")
        expect_error(db, "SELECT h5mem_embed('x', %s)" % q("openai:" + url), "needs the model")
        expect_error(db, "SELECT h5mem_embed('x', %s, '{\"model\": \"nope\"}')" % q("openai:" + url),
                     "HTTP 404: The model `nope` does not exist")
        expect_error(db, "SELECT h5mem_embed('x', %s, '{\"modle\": \"stub-8\"}')" % q("openai:" + url), "option 'modle'")

        # a store: dim asked of the server once, the embedder kept in the file (never the key)
        p1 = os.path.join(d, "m1.h5")
        reset(base)
        db.execute("CREATE VIRTUAL TABLE temp.m USING h5mem(path=%s, embedder=%s, embedder_model='stub-16')"
                   % (q(p1), q("openai:" + url)))
        check(len(log(base)) == 1, "one request learns the dimension: %d" % len(log(base)))
        # a multi-row INSERT: the first row embedded before the writer lock is
        # taken, the others held back and embedded in batches of embedder_batch (64)
        texts = ["memory %d about topic %d" % (i, i % 7) for i in range(150)]
        reset(base)
        db.execute("INSERT INTO temp.m(text) VALUES " + ",".join("(%s)" % q(t) for t in texts))
        sizes = [len(r["body"]["input"]) for r in log(base)]
        check(sizes == [1, 64, 64, 21], "the first row, then batches of 64: %r" % sizes)
        rows = db.execute("SELECT id, text, embedding FROM temp.m ORDER BY id").fetchall()
        check(len(rows) == 150 and [r[0] for r in rows] == list(range(1, 151)), "ids 1..150")
        check(all(np.array_equal(vec(r[2]), embed(r[1], 16)) for r in rows), "each row has its text's vector")
        check(db.execute("SELECT last_insert_rowid()").fetchone()[0] == 150, "last_insert_rowid")
        # a text query: embedded by the server
        hit = db.execute("SELECT id FROM vec_search('m', 'memory 42 about topic 0', 1)").fetchone()
        check(hit == (43,), "vec_search by text: %r" % (hit,))
        hit = db.execute("SELECT id FROM temp.m WHERE embedding MATCH 'memory 7 about topic 0' AND k = 1").fetchone()
        check(hit == (8,), "KNN MATCH by text: %r" % (hit,))
        hit = db.execute("SELECT id FROM hybrid('m', 'memory 99 topic', NULL, 1)").fetchone()
        check(hit == (100,), "hybrid's one text serves both sides: %r" % (hit,))
        # a transaction: single INSERTs held back, written before a read sees the store
        reset(base)
        db.execute("BEGIN")
        for i in range(5):
            db.execute("INSERT INTO temp.m(text) VALUES (?)", ("txn row %d" % i,))
        check(db.execute("SELECT last_insert_rowid()").fetchone()[0] == 155, "ids given at once")
        check(len(log(base)) == 1, "only the first sent yet")
        n = db.execute("SELECT count(*) FROM temp.m WHERE embedding IS NOT NULL").fetchone()[0]
        check(n == 155, "a read sees the held-back rows: %d" % n)
        check([len(r["body"]["input"]) for r in log(base)] == [1, 4], "then one batch of 4")
        db.execute("INSERT INTO temp.m(text) VALUES ('after the read'), ('and one more')")
        db.execute("SAVEPOINT s")
        db.execute("INSERT INTO temp.m(text) VALUES ('rolled back')")
        db.execute("ROLLBACK TO s")
        db.execute("RELEASE s")
        db.execute("COMMIT")
        got = [r[0] for r in db.execute("SELECT text FROM temp.m WHERE id > 155 ORDER BY id")]
        check(got == ["after the read", "and one more"], "savepoint rollback drops its held-back row: %r" % got)
        # ids given while rows are held back: a taken one is refused, the next follows
        db.execute("BEGIN")
        db.execute("INSERT INTO temp.m(text) VALUES ('first, embedded at once')")
        db.execute("INSERT INTO temp.m(id, text) VALUES (500, 'held with its id')")
        expect_error(db, "INSERT INTO temp.m(id, text) VALUES (500, 'again')", "UNIQUE constraint failed")
        db.execute("INSERT INTO temp.m(text) VALUES ('after 500')")
        check(db.execute("SELECT last_insert_rowid()").fetchone()[0] == 501, "the next id follows a held one")
        db.execute("COMMIT")
        got = db.execute("SELECT id, text FROM temp.m WHERE id >= 500 ORDER BY id").fetchall()
        check(got == [(500, "held with its id"), (501, "after 500")], "held rows with ids: %r" % got)
        check(db.execute("SELECT count(*) FROM temp.m WHERE id >= 500 AND embedding IS NULL").fetchone()[0] == 0,
              "held rows embedded")
        # an INSERT with its embedding, a text with none, an empty text
        db.execute("INSERT INTO temp.m(text, embedding) VALUES ('given', ?)", (blob(np.ones(16) / 4),))
        db.execute("INSERT INTO temp.m(text) VALUES ('')")
        e = db.execute("SELECT embedding FROM temp.m WHERE text = ''").fetchone()[0]
        check(e is None, "an empty text has no embedding")
        check(np.allclose(vec(db.execute("SELECT embedding FROM temp.m WHERE text='given'").fetchone()[0]), 0.25),
              "a given embedding is kept")
        db.execute("DROP TABLE temp.m")
        with h5py.File(p1, "r") as f:
            a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
        check(a.get("embedder") == "openai:" + url and a.get("embedder_model") == "stub-16",
              "the file keeps the embedder and model: %r" % {k: a.get(k) for k in ("embedder", "embedder_model")})

        # retries: 429 and 503 with Retry-After, then an answer
        p2 = os.path.join(d, "m2.h5")
        db.execute("CREATE VIRTUAL TABLE temp.r USING h5mem(path=%s, dim=8, embedder=%s, embedder_model='stub-8', "
                   "embedder_retries=2)" % (q(p2), q("openai:" + url)))
        reset(base)
        queue(base, {"status": 429, "retry_after": "0", "message": "Rate limit reached"},
              {"status": 503, "retry_after": "0"})
        db.execute("INSERT INTO temp.r(text) VALUES ('patience pays')")
        check(len(log(base)) == 3, "two retries, then the answer: %d requests" % len(log(base)))
        check(db.execute("SELECT count(*) FROM temp.r WHERE embedding IS NOT NULL").fetchone()[0] == 1, "written")
        # failures write nothing, and name the status and the provider's message
        reset(base)
        queue(base, *[{"status": 500, "retry_after": "0", "message": "the GPU caught fire"}] * 3)
        expect_error(db, "INSERT INTO temp.r(text) VALUES ('a'), ('b'), ('c')", "HTTP 500: the GPU caught fire")
        check(len(log(base)) == 3, "1 + 2 retries: %d" % len(log(base)))
        check(db.execute("SELECT count(*) FROM temp.r").fetchone()[0] == 1, "a failed batch writes nothing")
        queue(base, {"status": 400, "message": "input too long"})
        expect_error(db, "INSERT INTO temp.r(text) VALUES ('x')", "HTTP 400: input too long")
        for bad, word in (("dims", "has 7 numbers, expected 8"), ("count", "embeddings for"),
                          ("index", "given twice"), ("not_json", "not JSON"), ("base64", "no \"embedding\" array"),
                          ("nan", "not JSON")):
            queue(base, {}, {"bad": bad})  # (the first row's answer, then the batch's)
            expect_error(db, "INSERT INTO temp.r(text) VALUES ('one'), ('two'), ('three')", word)
        check(db.execute("SELECT count(*) FROM temp.r").fetchone()[0] == 1, "malformed answers write nothing")
        # in a transaction: a failed batch fails the statement that sends it, and COMMIT
        reset(base)
        db.execute("BEGIN")
        db.execute("INSERT INTO temp.r(text) VALUES ('first, embedded at once')")
        db.execute("INSERT INTO temp.r(text) VALUES ('held back')")
        queue(base, *[{"status": 500, "retry_after": "0"}] * 3)
        expect_error(db, "SELECT count(*) FROM temp.r", "HTTP 500")
        expect_error(db, "COMMIT", "cannot commit")
        check(not db.in_transaction, "a failed COMMIT rolls back")
        check(db.execute("SELECT count(*) FROM temp.r").fetchone()[0] == 1, "the transaction wrote nothing")
        db.execute("DROP TABLE temp.r")
        # a timeout, a server that drops the connection, one that is not there
        reset(base)
        db.execute("CREATE VIRTUAL TABLE temp.t USING h5mem(path=%s, embedder=%s, embedder_model='stub-8', "
                   "embedder_timeout=0.5, embedder_retries=0)" % (q(p2), q("openai:" + url)))
        queue(base, {"delay": 2})
        expect_error(db, "INSERT INTO temp.t(text) VALUES ('slow')", "timed out")
        queue(base, {"close": True})
        expect_error(db, "INSERT INTO temp.t(text) VALUES ('dropped')", "openai:")
        db.execute("DROP TABLE temp.t")
        time.sleep(2)
        expect_error(db, "SELECT h5mem_embed('x', 'openai:http://127.0.0.1:9/v1', '{\"model\": \"stub-8\"}')",
                     "127.0.0.1:9")

        # the key: from the variable the option names, sent as a bearer token, never kept in the file
        p3 = os.path.join(d, "m3.h5")
        kurl = kbase + "/v1"
        expect_error(db, "CREATE VIRTUAL TABLE temp.k USING h5mem(path=%s, embedder=%s, embedder_model='stub-8', "
                     "embedder_key_env='H5MEM_TEST_KEY')" % (q(p3), q("openai:" + kurl)), "H5MEM_TEST_KEY")
        os.environ["H5MEM_TEST_KEY"] = "sk-wrong"
        expect_error(db, "CREATE VIRTUAL TABLE temp.k USING h5mem(path=%s, embedder=%s, embedder_model='stub-8', "
                     "embedder_key_env='H5MEM_TEST_KEY')" % (q(p3), q("openai:" + kurl)),
                     "HTTP 401: Incorrect API key provided")
        os.environ["H5MEM_TEST_KEY"] = "sk-test-7f3a"
        db.execute("CREATE VIRTUAL TABLE temp.k USING h5mem(path=%s, embedder=%s, embedder_model='stub-8', "
                   "embedder_key_env='H5MEM_TEST_KEY')" % (q(p3), q("openai:" + kurl)))
        db.execute("INSERT INTO temp.k(text) VALUES ('secret keeping')")
        check(log(kbase)[-1]["auth"] == "Bearer sk-test-7f3a", "the key as a bearer token")
        db.execute("DROP TABLE temp.k")
        check(b"sk-test-7f3a" not in open(p3, "rb").read(), "the key is not in the file")
        for far in ("http://192.0.2.1/v1", "http://127.0.0.1.example.com/v1", "http://127.0.0.1@example.com/v1",
                    "http://[::1].example.com/v1"):
            expect_error(db, "SELECT h5mem_embed('x', 'openai:%s', "
                         "'{\"model\": \"m\", \"key_env\": \"H5MEM_TEST_KEY\"}')" % far, "over https")

        # a store made with an HTTP embedder: used only when the table's options name it
        db2 = connect()
        db2.execute("CREATE VIRTUAL TABLE temp.m USING h5mem(path=%s)" % q(p1))
        expect_error(db2, "INSERT INTO temp.m(text) VALUES ('x')", "only when its own options name it")
        expect_error(db2, "SELECT * FROM vec_search('m', 'memory', 1)", "only when its own options name it")
        check(db2.execute("SELECT count(*) FROM vec_search('m', ?, 3)", (blob(embed("memory", 16)),)).fetchone()[0] == 3,
              "vector queries work without it")
        db2.close()
        db3 = connect()
        expect_error(db3, "CREATE VIRTUAL TABLE temp.m USING h5mem(path=%s, embedder=%s, embedder_model='stub-32')"
                     % (q(p1), q("openai:" + url)), "would not be comparable")
        db3.close()

        # h5mem_remember with the table's embedder
        p4 = os.path.join(d, "m4.h5")
        db.execute("CREATE VIRTUAL TABLE temp.rm USING h5mem(path=%s, embedder=%s, embedder_model='stub-8')"
                   % (q(p4), q("openai:" + url)))
        out = json.loads(db.execute("SELECT h5mem_remember('rm', 'we hiked the alps in june')").fetchone()[0])
        e = db.execute("SELECT embedding FROM temp.rm WHERE id = ?", (out["id"],)).fetchone()[0]
        check(e is not None and np.array_equal(vec(e), embed("we hiked the alps in june", 8)), "remember embeds")
        db.execute("DROP TABLE temp.rm")

        # a connection embeds its first INSERT before it becomes the store's
        # writer (lib/store: one writer per store, for as long as it keeps
        # the store open): another connection writes meanwhile
        p5 = os.path.join(d, "m5.h5")
        a = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        a.enable_load_extension(True)
        a.load_extension(os.path.join(os.getcwd(), "h5mem"))
        a.execute("CREATE VIRTUAL TABLE temp.w USING h5mem(path=%s, dim=8, embedder=%s, embedder_model='stub-8')"
                  % (q(p5), q("openai:" + url)))
        queue(base, {"delay": 1.5})
        errs = []

        def slow():
            try:
                a.execute("INSERT INTO temp.w(text) VALUES ('slow to embed')")
            except sqlite3.Error as ex:
                errs.append(str(ex))
        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.4)
        b = connect()
        b.execute("CREATE VIRTUAL TABLE temp.w USING h5mem(path=%s)" % q(p5))
        try:
            b.execute("INSERT INTO temp.w(text, embedding) VALUES ('quick', ?)", (blob(np.ones(8)),))
            quick = True
        except sqlite3.Error as ex:
            quick = str(ex)
        b.close()
        t.join()
        check(quick is True, "another connection writes while an INSERT embeds: %r" % (quick,))
        check(not errs, "the slow INSERT succeeds after it: %r" % errs)
        got = [r[0] for r in a.execute("SELECT text FROM temp.w ORDER BY id")]
        check(got == ["quick", "slow to embed"], "both written, the slow one after: %r" % got)
        a.close()
    finally:
        srv.kill()
        ksrv.kill()
        shutil.rmtree(d)
    finish()


if __name__ == "__main__":
    main()
