#!/bin/sh
# test/fuzz/run.sh SECONDS [BUILDDIR] - build the libFuzzer harness for
# lib/h5 with clang (ASan + UBSan) and fuzz it for SECONDS, starting from
# the files of the conformance corpus.  Exits non-zero on any finding (the
# crashing input is left as crash-* in the working directory).
#
#   test/fuzz/run.sh 60          # what CI runs
#   test/fuzz/run.sh 3600        # a longer run by hand
set -eu
secs=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${2:-$top}
fixtures=${H5MEM_FIXTURES:-$top/../shared/fixtures/hdf5}
work=${TMPDIR:-/tmp}/h5mem-fuzz
mkdir -p "$work/corpus"
test -f "$build/config.h" || { echo "run ./configure first (config.h missing)"; exit 1; }

srcs="$here/fuzz_h5.c $(ls "$top"/lib/h5/*.c "$top"/lib/util/*.c)"
libs="-lz -lpthread -lm"
grep -q "define HAVE_LIBDEFLATE 1" "$build/config.h" && libs="-ldeflate $libs"
clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=all -I"$build" -I"$top/lib" -I"$top/lib/h5" -I"$top/kernels" \
  $srcs -o "$work/fuzz_h5" $libs

# seeds: the corpus files under 1 MiB
if [ -d "$fixtures/files" ]; then
  find "$fixtures/files" -type f -size -1024k -exec cp -n {} "$work/corpus/" \; 2>/dev/null || true
fi
cd "$work"
./fuzz_h5 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=1048576 \
  -print_final_stats=1 corpus
