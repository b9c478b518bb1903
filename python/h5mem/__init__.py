"""h5mem: an AI agent's memory in one HDF5 file, queried with SQL.

    import sqlite3, h5mem
    db = sqlite3.connect("agent.db")
    h5mem.load(db)
    db.execute("CREATE VIRTUAL TABLE mem USING h5mem(path='agent.h5', dim=384)")

The package carries the SQLite extension built from the repository
(h5mem.so) and the MCP server (h5mem-mcp, installed on the PATH).
"""
import os

__version__ = "@VERSION@"


def loadable_path():
    """The extension's path without its suffix, as load_extension takes it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "h5mem")


def load(conn):
    """Load h5mem into an open sqlite3 connection.

    Extension loading is enabled only for the load, and switched off again.
    """
    if not hasattr(conn, "enable_load_extension"):
        raise RuntimeError("this Python's sqlite3 module was built without extension loading "
                           "(SQLITE_OMIT_LOAD_EXTENSION); Debian's python3 has it")
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)
