#!/usr/bin/env bash
# shellcheck disable=SC2317 # the steps run through record()
# The added-probe proof: a probe is one folder and zero central lines.
#
# Copies the tree at REF (default HEAD, `git archive`) into a scratch
# directory, makes it a git repository of its own, and adds a real probe,
# `loadavg`, from the files kept in tests/probes/proof_probe/: probe/ becomes
# probes/loadavg/ and test/ becomes tests/probes/loadavg/. Then:
#   1. `git status --porcelain` in the copy must list only those two folders;
#   2. it configures and builds the copy (ccache as the compiler launcher when
#      installed): hostperf_exporter, hostperf, hostperf_probe_loadavg_test
#      and the central tests that derive their probe lists from the
#      registered modules;
#   3. it runs the probe's own test, those central tests (each with the new
#      probe among the ones it iterates), `hostperf loadavg --help` and a run,
#      the example-config and --config.check checks, a daemon whose /metrics
#      must serve the new probe's families, each documented on its page, the
#      soak for HOSTPERF_PROOF_SOAK_SECONDS (default 30; 0 skips it), the
#      footprint test, and the layering and format checks;
# and prints PASS or FAIL for each step and overall (exit status 0 or 1).
# Not a ctest: it builds a second tree and takes about 10 minutes with a
# warm ccache, far longer without.
#
# Usage: tests/probes/add_probe_proof.sh [SCRATCH_DIR]
#   SCRATCH_DIR  where the copy goes (SCRATCH_DIR/tree, replaced if present);
#                default: a new directory under $TMPDIR. Beside your own build
#                (e.g. build/proof in the checkout, with ccache's base_dir
#                above both) the copy's compiles hit your ccache.
# Environment: HOSTPERF_PROOF_REF (default HEAD), HOSTPERF_PROOF_JOBS (2),
#   HOSTPERF_PROOF_CMAKE_ARGS (extra configure arguments, split on spaces),
#   HOSTPERF_PROOF_SOAK_SECONDS (30).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel) || exit 2
ref=${HOSTPERF_PROOF_REF:-HEAD}
jobs=${HOSTPERF_PROOF_JOBS:-2}
soak_seconds=${HOSTPERF_PROOF_SOAK_SECONDS:-30}
scratch=${1:-$(mktemp -d "${TMPDIR:-/tmp}/hostperf-proof-XXXXXX")}
mkdir -p "$scratch" && scratch=$(cd "$scratch" && pwd)
tree=$scratch/tree
build=$tree/build/cc
proof=$here/proof_probe

results=()
failed=0
step() { printf '\n== %s\n' "$*"; }
# record NAME COMMAND...: runs it, keeps PASS or FAIL for the summary.
record() {
  local name=$1
  shift
  step "$name"
  if "$@"; then
    results+=("PASS  $name")
  else
    results+=("FAIL  $name")
    failed=1
    return 1
  fi
}
summary() {
  step "summary (scratch copy: $tree)"
  printf '%s\n' "${results[@]}"
  if ((failed)); then echo "add_probe_proof: FAIL"; else echo "add_probe_proof: PASS"; fi
  exit "$failed"
}

# --- a: the copy, a repository of its own -------------------------------------
copy_tree() {
  rm -rf "$tree" && mkdir -p "$tree" || return 1
  git -C "$repo" archive --format=tar "$ref" | tar -x -C "$tree" || return 1
  git -C "$tree" init -q && git -C "$tree" add -A &&
    git -C "$tree" -c user.name=proof -c user.email=proof@localhost commit -qm "copy of $ref" || return 1
  echo "copied $(git -C "$repo" rev-parse --short "$ref") to $tree ($(git -C "$tree" ls-files | wc -l) files)"
}

# --- b: the probe, one folder plus its test folder ------------------------------
add_probe() {
  [[ -d $tree/probes/loadavg || -d $tree/tests/probes/loadavg ]] && { echo "loadavg exists already"; return 1; }
  cp -r "$proof/probe" "$tree/probes/loadavg" && mkdir "$tree/tests/probes/loadavg" &&
    cp "$proof"/test/* "$tree/tests/probes/loadavg/" || return 1
  (cd "$tree" && find probes/loadavg tests/probes/loadavg -type f | sort)
}

# --- c: nothing else changed ----------------------------------------------------
only_two_folders() {
  local status
  status=$(git -C "$tree" status --porcelain --untracked-files=all) || return 1
  printf '%s\n' "$status"
  [[ -n $status ]] || { echo "nothing added"; return 1; }
  if grep -vE '^\?\? (probes/loadavg/|tests/probes/loadavg/)' <<<"$status"; then
    echo "^ outside probes/loadavg/ and tests/probes/loadavg/"
    return 1
  fi
  echo "only probes/loadavg/ and tests/probes/loadavg/ are new; no tracked file changed"
}

# --- d: build -------------------------------------------------------------------
configure() {
  local launcher=()
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # shellcheck disable=SC2086 # HOSTPERF_PROOF_CMAKE_ARGS is a list of arguments
  cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "${launcher[@]}" ${HOSTPERF_PROOF_CMAKE_ARGS:-} >"$scratch/configure.log" ||
    { tail -30 "$scratch/configure.log"; return 1; }
  grep -q 'hostperf/probes/loadavg/module.h' "$build/probes/generated/hostperf/probes/registered_modules.h" ||
    { echo "registered_modules.h does not include the loadavg module"; return 1; }
  echo "registered_modules.h: $(grep -o '&::hostperf::probes::[a-z_]*::kModule' \
    "$build/probes/generated/hostperf/probes/registered_modules.h" | sed 's/.*probes::\(.*\)::kModule/\1/' | paste -sd' ')"
}
build_targets() {
  nice -n 10 cmake --build "$build" -j "$jobs" --target hostperf_exporter hostperf hostperf_probe_loadavg_test \
    hostperf_probes_test hostperf_config_test hostperf_daemon_test hostperf_integration_test >"$scratch/build.log" 2>&1 ||
    { grep -E 'error|FAILED' "$scratch/build.log" | head -30; return 1; }
  tail -1 "$scratch/build.log"
}

# --- d: run ---------------------------------------------------------------------
gtest() {  # BINARY FILTER: a test executable of the copy, only the tests FILTER names
  local binary=$1 filter=$2 log
  log=$scratch/$(basename "$binary").log
  "$build/$binary" "--gtest_filter=$filter" >"$log" 2>&1
  local status=$?
  echo "$binary --gtest_filter='$filter':"
  # The instances of the new probe by name, then gtest's totals.
  grep -E '^\[       OK \] .*loadavg' "$log" | sed -E 's/^\[       OK \] /  ok: /; s/ \([0-9]+ ms\)$//'
  grep -E '^\[  (PASSED|SKIPPED|FAILED)  ?\]' "$log" | sed 's/^/  /'
  ((status == 0)) || tail -40 "$log"
  return "$status"
}
fetch() { python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"; }
# Every test of the probe's own suite.
probe_tests() { gtest tests/hostperf_probe_loadavg_test '*'; }
# The central tests whose probe lists come from the registered modules, and
# the example-config and --config.check tests, with loadavg registered.
central_unit_tests() {
  gtest tests/hostperf_probes_test 'ModuleReasonsTest.*' &&
    gtest tests/hostperf_config_test 'DefaultsTest.*:LoadStringTest.EmptyDocumentGivesDefaults:ExampleConfigTest.*:ShippedConffileTest.*' &&
    gtest tests/hostperf_daemon_test 'FrameworkMetricsTest.*:HeadlineFiguresTest.MalformedResultsGiveNoFigures'
}
central_integration_tests() {
  gtest tests/integration/hostperf_integration_test \
    'CliUsage.*:CliDropIn.*:ExampleProbe.*:ExporterBinary.ConfigCheckValidatesAndExits:ExporterBinary.FirstCpuRunPassesPromtoolAndHasRealValues:RunApi.SmallFullRunOfEveryProbeAndHistoryAcrossARestart:EveryProbe/SigtermDuringProbe.*'
}
soak() {
  ((soak_seconds > 0)) || { echo "skipped (HOSTPERF_PROOF_SOAK_SECONDS=0)"; return 0; }
  HOSTPERF_SOAK_SECONDS=$soak_seconds gtest tests/integration/hostperf_integration_test 'SoakTest.*' &&
    grep -E '^soak: ' "$scratch/hostperf_integration_test.log"
}
footprint() {
  python3 "$tree/tests/integration/footprint_test.py" --exporter "$build/exporter/hostperf_exporter" \
    --work "$scratch/footprint" --scrapes 400 | tail -3
}
cli() {
  local cli=$build/exporter/hostperf out
  "$cli" --help | grep -E '^  loadavg ' || { echo "hostperf --help lists no loadavg command"; return 1; }
  out=$("$cli" loadavg --help) || return 1
  printf '%s\n' "$out"
  [[ $out == "usage: hostperf loadavg "* ]] || return 1
  "$cli" loadavg && "$cli" loadavg --json | python3 -c 'import json, sys; print("--json:", sorted(json.load(sys.stdin)))'
}
config_check() {
  "$build/exporter/hostperf_exporter" --config.file="$build/hostperf.toml" --config.check &&
    grep -A5 '^\[probes.loadavg\]' "$build/hostperf.toml" &&
    printf '[probes.loadavg]\npressure = "yes"\n' >"$scratch/bad.toml" &&
    ! "$build/exporter/hostperf_exporter" --config.file="$scratch/bad.toml" --config.check
}
# The daemon schedules the probe and serves its families, each documented on
# the probe's page; the landing page lists it.
daemon() {
  local dir=$scratch/daemon port="" metrics="" responder status=1
  rm -rf "$dir" && mkdir -p "$dir/state"
  responder=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  printf 'state_directory = "%s/state"\n[scheduler]\nfirst_run_splay = "1s"\n[probes.net]\nports = [%s]\n' \
    "$dir" "$responder" >"$dir/hostperf.toml"
  "$build/exporter/hostperf_exporter" --config.file="$dir/hostperf.toml" --web.listen-address=127.0.0.1:0 \
    2>"$dir/exporter.log" &
  local pid=$!
  for _ in $(seq 120); do
    port=$(grep -oE 'listening on \S+ \(port [0-9]+\)' "$dir/exporter.log" | grep -oE '[0-9]+\)$' | tr -d ')')
    if [[ -n $port ]]; then
      metrics=$(fetch "http://127.0.0.1:$port/metrics" 2>/dev/null || true)
      grep -q '^hostperf_probe_success{probe="loadavg"} 1' <<<"$metrics" && break
    fi
    sleep 0.5
  done
  grep -E '^hostperf_probe_(success|runs_total)\{probe="loadavg"\}|^hostperf_loadavg_' <<<"$metrics"
  local families landing
  landing=$(fetch "http://127.0.0.1:$port/")
  families=$(grep -oE '^# TYPE hostperf_loadavg_[a-z_]+' <<<"$metrics" | cut -d' ' -f3)
  if grep -q '^hostperf_probe_success{probe="loadavg"} 1' <<<"$metrics" &&
    grep -q 'hostperf_loadavg_load_per_cpu' <<<"$families" &&
    grep -q '<td>loadavg</td>' <<<"$landing"; then
    status=0
    for family in $families; do
      grep -qF "\`$family\`" "$tree/probes/loadavg/metrics.md" || { echo "$family: not on probes/loadavg/metrics.md"; status=1; }
    done
    echo "served and documented: $(paste -sd' ' <<<"$families"); on the landing page"
  else
    tail -20 "$dir/exporter.log"
  fi
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return "$status"
}
checks() {
  python3 "$tree/tests/layering_check.py" "$tree" &&
    if command -v clang-format >/dev/null; then (cd "$tree" && git add -A && tests/format_check.sh . clang-format); fi
}

record "a: copy $ref into a scratch repository" copy_tree || summary
record "b: add probes/loadavg/ and tests/probes/loadavg/ from tests/probes/proof_probe/" add_probe || summary
record "c: git status lists only those two folders" only_two_folders
record "d: configure (the registry finds the folder)" configure || summary
record "d: build hostperf_exporter, hostperf, hostperf_probe_loadavg_test and the central tests" build_targets || summary
record "d: hostperf_probe_loadavg_test (tests/probes/loadavg/)" probe_tests
record "d: central unit tests that derive their lists (reasons, example config, framework metrics, figures)" \
  central_unit_tests
record "d: central integration tests that derive their lists (CLI, run API, SIGTERM per probe, docs, config check)" \
  central_integration_tests
record "d: soak, ${soak_seconds} s (every registered probe on a fast schedule)" soak
record "d: daemon footprint (every probe the daemon declares ran)" footprint
record "d: hostperf loadavg --help, a run, --json" cli
record "d: the example config with [probes.loadavg] passes --config.check; a bad value fails" config_check
record "d: a daemon serves hostperf_loadavg_* on /metrics, documented on the probe's page" daemon
record "d: layering and format checks of the copy" checks
summary
