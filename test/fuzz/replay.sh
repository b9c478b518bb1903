#!/bin/sh
# test/fuzz/replay.sh - make check's part of test/fuzz: each target, linked
# with the plain driver replay.c by the normal compiler (no libFuzzer),
# writes its seeds (valid images, logs and frames) and runs over them and
# over its regressions, test/fuzz/regress/TARGET/ (inputs the fuzzer once
# found a bug with).  Fuzzing itself is run.sh's (clang, CI).
set -eu
src=${H5MEM_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/h5mem_replay.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for t in h5 wal store hnsw ivf bm25 embed jsonl mcpimage langgraph; do
  mkdir "$tmp/$t"
  set -- "$tmp/$t"
  if [ -d "$src/test/fuzz/regress/$t" ]; then set -- "$@" "$src/test/fuzz/regress/$t"; fi
  if ! H5MEM_FUZZ_SEEDS="$tmp/$t" ./test/fuzz/replay_$t "$@" >"$tmp/$t.log" 2>&1; then
    cat "$tmp/$t.log"
    echo "FAIL: fuzz target $t (an input above is a finding)"
    exit 1
  fi
  tail -1 "$tmp/$t.log"
done
