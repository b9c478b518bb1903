#!/bin/sh
# test/tools/host.sh PROGRAM ARGS... - runs a test's host program (python3, node).
# In a sanitizer build (configure --enable-sanitizers) h5mem.so needs ASan's
# runtime loaded first, so it is preloaded into the host; leak reports are
# off there because the hosts' own allocations outlive their exit.  The
# Check unit tests are linked with the runtime and keep leak detection.
if [ -n "$H5MEM_PRELOAD" ]; then
  LD_PRELOAD="$H5MEM_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}"
  ASAN_OPTIONS="detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export LD_PRELOAD ASAN_OPTIONS
fi
exec "$@"
