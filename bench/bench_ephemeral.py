#!/usr/bin/python3
"""bench/bench_ephemeral.py - the ephemeral tier from Python (the sqlite3
module, the extension loaded) beside a real Redis through redis-py, the
scripting view of bench_ephemeral.c (issue 24):

    apt-get install redis-server python3-redis
    /usr/bin/python3 bench/bench_ephemeral.py [ops]     # from the build directory

A redis-server of its own is started on a Unix socket (no persistence) and
stopped at the end.  The same operations as the C benchmark, ops of each
(default 20000): SET with a TTL, GET hit, GET miss, DELETE, SET with a
384-d float32 embedding; Redis one request at a time and in pipelines of
100; then a SET on one connection and the GET of that key on another (two
connections sharing the table; two Redis clients).  Each row: the mean
time of an operation (µs) and operations a second.
"""
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import redis

EXT = os.path.join(os.getcwd(), "h5mem")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
VAL = ("abcdefghijklmnopqrstuvwxyz" * 4)[:100]
rng = random.Random(7)
EMBS = [struct.pack("384f", *[rng.uniform(-1, 1) for _ in range(384)]) for _ in range(1000)]


def row(system, op, secs, n):
    print("| %s | %s | %.2f | %.0f |" % (system, op, secs / n * 1e6, n / secs), flush=True)


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def table(name):
    import sqlite3
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE VIRTUAL TABLE %s USING h5mem(ephemeral=on, dim=384, ttl=600, key text primary key)" % name)
    return db


def h5mem():
    db = table("kv")
    ex = db.execute
    keys = ["key:%d" % i for i in range(N)]
    miss = ["nokey:%d" % i for i in range(N)]
    name = "h5mem, Python sqlite3"
    row(name, "SET with TTL", timed(lambda: [ex("INSERT OR REPLACE INTO kv(key, text) VALUES (?, ?)", (k, VAL))
                                             for k in keys]), N)
    row(name, "GET hit", timed(lambda: [ex("SELECT text FROM kv WHERE key = ?", (k,)).fetchone() for k in keys]), N)
    row(name, "GET miss", timed(lambda: [ex("SELECT text FROM kv WHERE key = ?", (k,)).fetchone() for k in miss]), N)
    row(name, "DELETE", timed(lambda: [ex("DELETE FROM kv WHERE key = ?", (k,)) for k in keys]), N)
    row(name, "SET with a 384-d embedding",
        timed(lambda: [ex("INSERT OR REPLACE INTO kv(key, text, embedding) VALUES (?, ?, ?)",
                          ("vec:%d" % (i % 1000), VAL, EMBS[i % 1000])) for i in range(N)]), N)
    db.close()
    # two connections sharing one table: a SET on one, the GET on the other
    a, b = table("kv2"), table("kv2")

    def set_get():
        for k in keys:
            a.execute("INSERT OR REPLACE INTO kv2(key, text) VALUES (?, ?)", (k, VAL))
            if b.execute("SELECT text FROM kv2 WHERE key = ?", (k,)).fetchone() is None:
                raise SystemExit("the other connection missed " + k)
    row("h5mem, two Python sqlite3 connections", "SET on one, GET on the other", timed(set_get), N)
    a.close()
    b.close()


def redis_rows(r, how):
    keys = ["key:%d" % i for i in range(N)]
    miss = ["nokey:%d" % i for i in range(N)]
    r.flushall()
    name = "Redis 7, redis-py, " + how
    row(name, "SET with TTL", timed(lambda: [r.set(k, VAL, ex=600) for k in keys]), N)
    row(name, "GET hit", timed(lambda: [r.get(k) for k in keys]), N)
    row(name, "GET miss", timed(lambda: [r.get(k) for k in miss]), N)
    row(name, "DELETE", timed(lambda: [r.delete(k) for k in keys]), N)
    row(name, "SET with a 384-d embedding",
        timed(lambda: [r.set("vec:%d" % (i % 1000), EMBS[i % 1000], ex=600) for i in range(N)]), N)

    def piped(fn, items):
        for i in range(0, len(items), 100):
            p = r.pipeline(transaction=False)
            for x in items[i:i + 100]:
                fn(p, x)
            p.execute()

    r.flushall()
    name = "Redis 7, redis-py, " + how + ", pipelined"
    row(name, "SET with TTL", timed(lambda: piped(lambda p, k: p.set(k, VAL, ex=600), keys)), N)
    row(name, "GET hit", timed(lambda: piped(lambda p, k: p.get(k), keys)), N)
    row(name, "GET miss", timed(lambda: piped(lambda p, k: p.get(k), miss)), N)
    row(name, "DELETE", timed(lambda: piped(lambda p, k: p.delete(k), keys)), N)
    row(name, "SET with a 384-d embedding",
        timed(lambda: piped(lambda p, i: p.set("vec:%d" % (i % 1000), EMBS[i % 1000], ex=600), list(range(N)))), N)


def main():
    d = tempfile.mkdtemp(prefix="bench_redis_py_")
    sock = os.path.join(d, "redis.sock")
    srv = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
                            "--dir", d, "--logfile", "redis.log"])
    try:
        r = redis.Redis(unix_socket_path=sock)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        print("# %d operations each; redis-server %s; redis-py %s; Python %s\n" %
              (N, r.info("server")["redis_version"], redis.__version__, sys.version.split()[0]))
        print("| system | operation | µs per op | ops per second |\n|---|---|---:|---:|")
        h5mem()
        redis_rows(r, "Unix socket")
        r2 = redis.Redis(unix_socket_path=sock)
        r.flushall()
        keys = ["key:%d" % i for i in range(N)]

        def set_get():
            for k in keys:
                r.set(k, VAL, ex=600)
                if r2.get(k) is None:
                    raise SystemExit("the other client missed " + k)
        row("Redis 7, redis-py, Unix socket, two clients", "SET on one, GET on the other", timed(set_get), N)
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(d, ignore_errors=True)


main()
