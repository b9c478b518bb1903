"""Readers during checkpoints (docs/FORMAT.md, "Readers and checkpoints").

A writer process commits small transactions to a store without pause and
checkpoints it every few of them (now and then it optimizes it, which
replaces the file); 4 reader processes and 6 reader threads of this
process, each on its own connection, query it meanwhile.  Every query must
succeed and see a consistent state (the ids are 1..N with no hole: no
frame lost, none counted twice), never older than the last commit that
returned before the query began, and never less than the same reader's
previous query.

H5MEM_READERS_SECS sets how long it runs (60 s unless given).
"""
import multiprocessing as mp
import os
import sqlite3
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sqltest import EXT, check, finish, q  # noqa: E402

SECS = float(os.environ.get("H5MEM_READERS_SECS", "60"))
DIM = 8


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None, timeout=30)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def open_table(db, path):
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path=%s, dim=%d)" % (q(path), DIM))


def writer(path, committed, stop, errors):
    """Commit 1..8 rows at a time; checkpoint every 5th commit, optimize every 150th."""
    try:
        db = connect()
        open_table(db, path)
        n, txn = 0, 0
        while not stop.is_set():
            txn += 1
            k = 1 + txn % 8
            db.execute("BEGIN")
            for _ in range(k):
                n += 1
                db.execute("INSERT INTO mem(id, text, embedding) VALUES (?, ?, ?)",
                           (n, "memory %d" % n, "[%s]" % ",".join(str((n + i) % 7 + 1) for i in range(DIM))))
            db.execute("COMMIT")
            committed.value = n
            if txn % 150 == 0:
                db.execute("INSERT INTO mem(mem) VALUES('optimize')")
            elif txn % 5 == 0:
                db.execute("SELECT h5mem_checkpoint('mem')")
        db.close()
    except Exception as e:  # noqa: BLE001
        errors.put("writer: %r" % (e,))


def read_loop(path, committed, stop, who, out):
    """Query until stop; put (who, queries, errors-list) on out (a list or a queue)."""
    errs = []
    queries = 0
    try:
        db = connect()
        open_table(db, path)
    except Exception as e:  # noqa: BLE001
        out_put(out, (who, 0, ["%s: connect: %r" % (who, e)]))
        return
    last = 0
    qv = "[%s]" % ",".join("1" for _ in range(DIM))
    while not stop.is_set():
        floor = committed.value
        try:
            if queries % 4 == 3:
                got = db.execute("SELECT count(*) FROM vec_search('mem', ?, 5)", (qv,)).fetchone()[0]
                if floor >= 5 and got != 5:
                    errs.append("%s: vec_search gave %d rows of %d" % (who, got, floor))
            cnt, mx = db.execute("SELECT count(*), coalesce(max(id), 0) FROM mem").fetchone()
        except sqlite3.Error as e:
            errs.append("%s: %s" % (who, e))
            continue
        finally:
            queries += 1
        if cnt != mx:
            errs.append("%s: %d records but ids up to %d" % (who, cnt, mx))
        if cnt < floor:
            errs.append("%s: saw %d records after %d were committed" % (who, cnt, floor))
        if cnt < last:
            errs.append("%s: went back from %d to %d records" % (who, last, cnt))
        last = max(last, cnt)
        if len(errs) > 20:
            break
    db.close()
    out_put(out, (who, queries, errs))


def out_put(out, item):
    if isinstance(out, list):
        out.append(item)
    else:
        out.put(item)


def run(secs, label):
    """One round: a writer and 10 readers on a new store for secs seconds."""
    ctx = mp.get_context("fork")
    tmp = tempfile.mkdtemp(prefix="h5mem-readers-")
    path = os.path.join(tmp, "agent.h5")
    db = connect()
    open_table(db, path)  # create it
    db.close()
    committed = ctx.Value("q", 0, lock=False)
    stop = ctx.Event()
    errors = ctx.Queue()
    results = ctx.Queue()
    procs = [ctx.Process(target=read_loop, args=(path, committed, stop, "%s: process %d" % (label, i), results))
             for i in range(4)]
    wproc = ctx.Process(target=writer, args=(path, committed, stop, errors))
    wproc.start()
    for p in procs:
        p.start()
    tres = []
    threads = [threading.Thread(target=read_loop, args=(path, committed, stop, "%s: thread %d" % (label, i), tres))
               for i in range(6)]
    for t in threads:
        t.start()
    time.sleep(secs)
    stop.set()
    for t in threads:
        t.join()
    out = list(tres)
    for _ in procs:
        out.append(results.get(timeout=120))
    for p in procs + [wproc]:
        p.join(timeout=120)
    while not errors.empty():
        check(False, "%s: %s" % (label, errors.get()))
    total = 0
    for who, queries, errs in out:
        total += queries
        for e in errs:
            check(False, e)
        check(queries > 0, "%s ran no query" % who)
    print("%s: %d records committed, %d queries by 10 readers in %.0f s" % (label, committed.value, total, secs))
    check(committed.value > 100, "%s: the writer committed only %d records" % (label, committed.value))


def main():
    run(SECS, "gate")
    # the checks readers fall back on where there is no gate
    os.environ["H5MEM_NO_GATE"] = "1"
    run(max(5.0, SECS / 3), "no gate")
    del os.environ["H5MEM_NO_GATE"]
    finish()


if __name__ == "__main__":
    main()
