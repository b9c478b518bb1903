"""What the Python SQL tests share: the freshly built extension (run from the
build directory, as make check does), connections that load it, checks
that record failures, and SQL quoting."""
import os
import sqlite3
import sys

EXT = os.path.join(os.getcwd(), "h5mem")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def connect(path=":memory:"):
    """A connection in autocommit mode (BEGIN/COMMIT as the test says) with h5mem loaded."""
    db = sqlite3.connect(path, isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(s):
    """s as an SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def expect_error(db, sql, word, args=()):
    """sql must fail with a message containing word; returns the message."""
    try:
        db.execute(sql, args)
    except sqlite3.Error as e:
        check(word in str(e), "%s: message %r lacks %r" % (sql, str(e), word))
        return str(e)
    check(False, "%s must fail" % sql)
    return ""


def finish():
    print("%d failures" % len(failures))
    sys.exit(1 if failures else 0)


def vec_dist(metric, qv, rows):
    """numpy: the distance vec_search reports from qv to each row (float64)."""
    import numpy as np
    qv = qv.astype(np.float64)
    rows = rows.astype(np.float64)
    if metric == "cosine":
        return 1 - rows @ qv / (np.linalg.norm(rows, axis=1) * np.linalg.norm(qv))
    if metric == "l2":
        return np.sqrt(((rows - qv) ** 2).sum(axis=1))
    return -(rows @ qv)
