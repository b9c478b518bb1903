"""What the Python benchmarks share with the SQL tests (test/sql/sqltest.py):
connections that load the freshly built extension (run from the build
directory: ./h5mem.so) and SQL quoting."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "sql"))
from sqltest import connect, q  # noqa: E402,F401
