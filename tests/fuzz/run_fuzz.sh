#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in their own build directory and runs
# each for a bounded time. Usage: run_fuzz.sh BUILD_DIR [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$1/fuzz
seconds=${2:-20}
command -v clang++ >/dev/null || { echo "clang++ not installed (.ci/deps installs clang and libclang-rt-14-dev)" >&2; exit 1; }
cmake -S "$here/project" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" net_protocol_fuzzer >/dev/null
corpus=$build/corpus
mkdir -p "$corpus"
"$build/net_protocol_fuzzer" -max_total_time="$seconds" -max_len=2048 -print_final_stats=1 "$corpus" 2>&1 | tail -n 12
