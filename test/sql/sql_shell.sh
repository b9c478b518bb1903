#!/bin/sh
# test/sql/sql_shell.sh - the extension in the real sqlite3 shell.
#
# Each test/sql/NAME.sql runs in `sqlite3 -batch :memory:` from the build
# directory (so `.load ./h5mem` finds the fresh build) once per SIMD level
# this machine runs, and its stdout+stderr must equal test/sql/NAME.expected
# every time (stdout first, then stderr, which carries the error lines:
# keeping them apart makes the order independent of buffering).  Also checks that a bad H5MEM_SIMD makes the load fail.
set -u
srcdir=${H5MEM_SRCDIR:?run through make check}
shell=${SQLITE3_SHELL:-sqlite3}
host="$srcdir/test/tools/host.sh"
fail=0

levels=$(sh "$host" "$shell" -batch :memory: ".load ./h5mem" \
  "select group_concat(value, ' ') from json_each(h5mem_info(), '\$.simd_usable');") || {
  echo "FAIL: cannot load ./h5mem into $shell"; exit 1; }
echo "SIMD levels: $levels"

for sql in "$srcdir"/test/sql/*.sql; do
  name=$(basename "$sql" .sql)
  for level in $levels; do
    rm -f sql_shell_*.h5 sql_shell_*.h5-wal # (stores a test makes start afresh)
    out=$(H5MEM_SIMD=$level sh "$host" "$shell" -batch :memory: < "$sql" 2> sql_shell.stderr)
    out=$(printf '%s\n' "$out"; cat sql_shell.stderr)
    rm -f sql_shell.stderr
    if printf '%s\n' "$out" | diff -u "$srcdir/test/sql/$name.expected" - > sql_shell.$name.diff; then
      echo "ok   $name [$level]"
      rm -f sql_shell.$name.diff
    else
      echo "FAIL $name [$level]:"; cat sql_shell.$name.diff; fail=1
    fi
  done
done
rm -f sql_shell_*.h5 sql_shell_*.h5-wal

# A level this CPU cannot run, or a typo, must stop the load with a message.
bad_levels=avx9
case $(uname -m) in x86_64|amd64) bad_levels="avx9 neon" ;; esac
for bad in $bad_levels; do
  out=$(H5MEM_SIMD=$bad sh "$host" "$shell" -batch :memory: ".load ./h5mem" 2>&1)
  case "$out" in
    *"H5MEM_SIMD=$bad: "*"usable here: scalar"*) echo "ok   H5MEM_SIMD=$bad refused" ;;
    *) echo "FAIL H5MEM_SIMD=$bad: $out"; fail=1 ;;
  esac
done
exit $fail
