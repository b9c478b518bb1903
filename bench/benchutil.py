"""What the Python benchmarks share: connections that load the freshly
built extension (run from the build directory: ./h5mem.so) and SQL
quoting."""
import os
import sqlite3

EXT = os.path.join(os.getcwd(), "h5mem")


def connect(path=":memory:"):
    """A connection in autocommit mode (BEGIN/COMMIT as the bench says) with h5mem loaded."""
    db = sqlite3.connect(path, isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(s):
    """s as an SQL string literal."""
    return "'" + s.replace("'", "''") + "'"
