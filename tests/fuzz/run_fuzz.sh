#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build directory (unless
# HOSTPERF_FUZZERS names the directory of a clang sanitizer build's fuzzers)
# and runs each for a bounded time, starting from its seed corpus in
# tests/fuzz/corpus.
# Usage: run_fuzz.sh BUILD_DIR [SECONDS_PER_TARGET] [TARGET...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1/fuzz
seconds=${2:-20}
shift $(( $# >= 2 ? 2 : 1 ))
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(net_protocol config units run_api web_config)
if [ -n "${HOSTPERF_FUZZERS:-}" ]; then
  # Built already, by a clang sanitizer build (tests/fuzz/CMakeLists.txt).
  fuzzers=$HOSTPERF_FUZZERS
else
  command -v clang++ >/dev/null || { echo "clang++ not installed (.ci/deps installs clang and libclang-rt-14-dev)" >&2; exit 1; }
  cmake -S "$here/project" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  # ninja prints compile errors on stdout: shown only when the build fails.
  ninja -C "$build" "${targets[@]/%/_fuzzer}" >"$build/ninja.log" 2>&1 || { cat "$build/ninja.log" >&2; exit 1; }
  fuzzers=$build
fi
for target in "${targets[@]}"; do
  # New inputs go to the first (scratch) directory; the seeds stay as they are.
  corpus=$build/corpus/$target
  mkdir -p "$corpus"
  echo "== $target"
  "$fuzzers/${target}_fuzzer" -max_total_time="$seconds" -max_len=4096 -print_final_stats=1 "$corpus" \
    "$here/corpus/$target" 2>&1 | tail -n 12
done
