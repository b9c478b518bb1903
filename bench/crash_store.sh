#!/bin/sh
# bench/crash_store.sh [ROUNDS] - the memory store's crash test, longer than
# in make check: a writer committing with sync=full is killed with SIGKILL
# ROUNDS times (default 2000) at random moments; after each, every commit it
# reported must be in the store and nothing else.  Run from the build
# directory; the rest of test/sql/test_store.py runs too.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
H5MEM_CRASH_ROUNDS=${1:-2000} exec /usr/bin/python3 "$here/test/sql/test_store.py"
