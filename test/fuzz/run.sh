#!/bin/sh
# test/fuzz/run.sh SECONDS [TARGET ...] - build the libFuzzer targets with
# clang (ASan + UBSan) and fuzz each for its share of SECONDS.  Targets
# (test/fuzz/fuzz_TARGET.c), every on-disk format h5mem reads:
#   h5     lib/h5's reader (seeds: the conformance corpus, test/data/codecs,
#          test/data/vds)
#   wal    the write-ahead log file (wal_open, wal_replay)
#   store  log frames replayed into a store (records, deletes, graph ops,
#          declared columns), or the store's .h5 file damaged
#   hnsw   the HNSW image (hnsw_load, then searches, writes, a re-save)
#   ivf    the IVF image (ivf_load, ...)
#   bm25   the text index image (bm25_img_open, postings, a rebuild)
#   embed  a static word-vector model file (embed_model_open, embeddings)
#   jsonl  the MCP memory server's JSONL as JSON.parse reads it, and its
#          JavaScript strings (lib/util json.c, jsstr.c: kg_import_jsonl's
#          and h5mem-mcp's readers)
#   mcpimage  h5mem-mcp's search image (mcp/mcp_image.c: the file
#          <store>-mcp it maps at start; opened, then searched)
#   langgraph  a LangGraph store's item value and field name, into the
#          text h5mem_migrate rebuilds (ext/migrate/mig_langgraph.c; links
#          SQLite, not instrumented)
# Each target but h5 writes its own seeds (valid images and logs) at start.
# Exits non-zero on any finding, after running every target; the input
# is left as $TMPDIR/h5mem-fuzz/TARGET-crash-* (or -leak-, -timeout-, ...).
# Replay one with the target's fuzz_TARGET binary there, or add it to
# test/fuzz/regress/TARGET/ (make check replays those: replay.sh).
#
#   test/fuzz/run.sh 180              # what CI runs: 30 s a target
#   test/fuzz/run.sh 3600 store       # an hour on one target
#
# Needs a configured tree (config.h; H5MEM_BUILD names the build directory
# when it is not the source tree).  The library is compiled once into
# $TMPDIR/h5mem-fuzz/obj, again when a source is newer.
set -eu
secs=${1:-180}
[ $# -gt 0 ] && shift
targets=${*:-"h5 wal store hnsw ivf bm25 embed jsonl mcpimage langgraph"}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${H5MEM_BUILD:-$top}
fixtures=${H5MEM_FIXTURES:-$top/test/data/hdf5}
work=${TMPDIR:-/tmp}/h5mem-fuzz
test -f "$build/config.h" || { echo "run ./configure first (config.h missing)"; exit 1; }
mkdir -p "$work/obj"

cflags="-g -O1 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer -ffp-contract=off -pthread
  -fsanitize=address,undefined -fno-sanitize-recover=all
  -I$build -I$top/lib -I$top/kernels"
libs="-lxxhash -lz -lpthread -lm"
grep -q "define HAVE_LIBDEFLATE 1" "$build/config.h" && libs="-ldeflate $libs"
# libcurl, when configured (lib/embed/http.c; not instrumented)
grep -q "define HAVE_LIBCURL 1" "$build/config.h" && libs="-lcurl $libs"
# libsodium, when configured (lib/sign; not instrumented)
grep -q "define HAVE_LIBSODIUM 1" "$build/config.h" && libs="-lsodium $libs"
# the HDF5 codecs configure found (their libraries are not instrumented)
codec_libs=$(sed -n 's/^CODEC_LIBS = //p' "$build/Makefile" 2>/dev/null)
libs="$codec_libs $libs"
codec_cflags=$(sed -n 's/^CODEC_CFLAGS = //p' "$build/Makefile" 2>/dev/null)
cflags="$cflags $codec_cflags"

# the library, instrumented for coverage (fuzzer-no-link); each SIMD
# variant with its flags, as configure.ac builds them
have() { grep -q "define $1 1" "$build/config.h"; }
srcs=$(cd "$top" && ls lib/*/*.c kernels/k_scalar.c kernels/k_dispatch.c)
have HAVE_K_SSE2 && srcs="$srcs kernels/k_sse2.c"
have HAVE_K_NEON && srcs="$srcs kernels/k_neon.c"
have HAVE_K_AVX2 && srcs="$srcs kernels/k_avx2.c"
have HAVE_K_AVX512 && srcs="$srcs kernels/k_avx512.c"
have HAVE_K_AVX512VNNI && srcs="$srcs kernels/k_avx512vnni.c"
stamp="$work/obj/stamp"
if [ ! -f "$stamp" ] || [ -n "$(find "$top/lib" "$top/kernels" "$build/config.h" -newer "$stamp" | head -1)" ]; then
  echo "compiling the library for fuzzing ($work/obj)"
  rm -f "$work/obj"/*.o
  for s in $srcs; do echo "$s"; done | xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} sh -c '
    s={}; o="'"$work"'/obj/$(echo "$s" | tr / _).o"
    case $s in
      *k_avx2.c) x="-mavx2 -mfma -mf16c";;
      *k_avx512.c) x="-mavx512f -mavx512bw -mavx2 -mfma -mf16c";;
      *k_avx512vnni.c) x="-mavx512f -mavx512bw -mavx2 -mfma -mf16c -mavx512vnni";;
      *) x="";;
    esac
    clang '"$(echo $cflags)"' -fsanitize=fuzzer-no-link $x -c "'"$top"'/$s" -o "$o"'
  touch "$stamp"
fi

# the targets' files (logs, stores): in memory when possible, removed at the end
shm=/dev/shm
[ -d "$shm" ] && [ -w "$shm" ] || shm=${TMPDIR:-/tmp}
H5MEM_FUZZ_TMP=$(mktemp -d "$shm/h5mem-fuzz.XXXXXX")
export H5MEM_FUZZ_TMP
trap 'rm -rf "$H5MEM_FUZZ_TMP"' EXIT

failed=""
n=$(echo $targets | wc -w)
per=$((secs / n))
[ "$per" -ge 5 ] || per=5
for t in $targets; do
  src="$here/fuzz_$t.c"
  test -f "$src" || { echo "no target $t ($src)"; exit 2; }
  echo "=== fuzz_$t: building"
  more=""
  tlibs=$libs
  [ "$t" = mcpimage ] && more="-I$top/mcp $top/mcp/mcp_image.c" # (h5mem-mcp's, not the library's)
  if [ "$t" = langgraph ]; then # (h5mem_migrate's, with SQLite's strings)
    more="-I$top/ext -DSQLITE_CORE $top/ext/migrate/mig_langgraph.c"
    tlibs="-lsqlite3 $libs"
  fi
  clang $cflags -fsanitize=fuzzer -I"$here" $more "$src" "$work"/obj/*.o -o "$work/fuzz_$t" $tlibs
  corpus="$work/corpus/$t"
  mkdir -p "$corpus"
  extra=""
  [ -d "$here/regress/$t" ] && extra="$here/regress/$t"
  maxlen=65536
  if [ "$t" = h5 ]; then
    maxlen=1048576
    if [ -d "$fixtures/files" ]; then
      find "$fixtures/files" -type f -size -1024k -exec cp -n {} "$corpus/" \; 2>/dev/null || true
    fi
    # one small file per codec of other libraries (test/data/codecs), and
    # virtual datasets whose sources are in the file itself (test/data/vds)
    cp -n "$top"/test/data/codecs/*.h5 "$top"/test/data/vds/*.h5 "$corpus/" 2>/dev/null || true
  fi
  echo "=== fuzz_$t: ${per}s"
  if ! (cd "$work" && H5MEM_FUZZ_SEEDS="$corpus" "./fuzz_$t" -max_total_time="$per" -timeout=10 \
        -rss_limit_mb=2048 -max_len="$maxlen" -print_final_stats=1 -artifact_prefix="$work/$t-" \
        "$corpus" $extra); then
    failed="$failed $t"
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: findings in:$failed (inputs left as $work/TARGET-crash-* and the like)"
  exit 1
fi
echo "fuzz: no findings in $targets"
