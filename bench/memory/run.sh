#!/usr/bin/env bash
# Compares `hostperf memory` with a reference STREAM-style kernel, single
# thread and one thread per physical core, for copy and triad.
#
# The reference is written out and compiled here from the public description
# of STREAM (four loops over three arrays of doubles, each run NTIMES, the
# first iteration discarded, best time -> bytes moved / time with copy and
# scale counting 2 arrays, add and triad 3). It is compiled the way our
# kernels are (gcc -O3, no -march) with OpenMP, pinned one thread per core.
#
# usage: bench/memory/run.sh [BUILD_DIR]   (default: build/release)
# env:   ELEMENTS (per array, default 20000000), NTIMES (10), RUNS (5: median)
set -euo pipefail

build_dir=${1:-build/release}
hostperf="$build_dir/exporter/hostperf"
[[ -x $hostperf ]] || hostperf="$build_dir/hostperf"
[[ -x $hostperf ]] || { echo "no hostperf binary under $build_dir" >&2; exit 1; }
elements=${ELEMENTS:-20000000}
ntimes=${NTIMES:-10}
runs=${RUNS:-5}
cores=$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
[[ $cores -ge 1 ]] || cores=$(nproc)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/ref_stream.c" <<'C'
/* STREAM-style reference: copy c=a, scale b=s*c, add c=a+b, triad a=b+s*c. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static double now(void) { return omp_get_wtime(); }

int main(int argc, char** argv) {
  const long n = atol(argv[1]);
  const int ntimes = atoi(argv[2]);
  double* a = malloc(sizeof(double) * n);
  double* b = malloc(sizeof(double) * n);
  double* c = malloc(sizeof(double) * n);
  const double s = 3.0;
  double best[4] = {DBL_MAX, DBL_MAX, DBL_MAX, DBL_MAX};
  const double bytes[4] = {2.0 * 8 * n, 2.0 * 8 * n, 3.0 * 8 * n, 3.0 * 8 * n};
#pragma omp parallel for schedule(static)
  for (long j = 0; j < n; j++) { a[j] = 2.0; b[j] = 2.0; c[j] = 0.0; }
  for (int k = 0; k < ntimes; k++) {
    double t[5];
    t[0] = now();
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) c[j] = a[j];
    t[1] = now();
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) b[j] = s * c[j];
    t[2] = now();
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) c[j] = a[j] + b[j];
    t[3] = now();
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) a[j] = b[j] + s * c[j];
    t[4] = now();
    if (k == 0) continue; /* warm-up */
    for (int i = 0; i < 4; i++) {
      const double d = t[i + 1] - t[i];
      if (d < best[i]) best[i] = d;
    }
  }
  double check = 0; /* keeps the loops observable */
  for (long j = 0; j < n; j += 4096) check += a[j] + b[j] + c[j];
  printf("copy %.1f\nscale %.1f\nadd %.1f\ntriad %.1f\ncheck %g\n", 1e-6 * bytes[0] / best[0],
         1e-6 * bytes[1] / best[1], 1e-6 * bytes[2] / best[2], 1e-6 * bytes[3] / best[3], check);
  free(a); free(b); free(c);
  return 0;
}
C
gcc -O3 -fopenmp -o "$work/ref_stream" "$work/ref_stream.c"

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# ref THREADS KERNEL / ours THREADS KERNEL: one run's MB/s
ref() {
  OMP_NUM_THREADS=$1 OMP_PROC_BIND=spread OMP_PLACES=cores "$work/ref_stream" "$elements" "$ntimes" |
    awk -v k="$2" '$1 == k {print $2}'
}
ours() {
  "$hostperf" memory -t "$1" -s "$elements" -n "$ntimes" --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); k=sys.argv[1]; print([x["best_bytes_per_second"]/1e6 for x in r["kernels"] if x["kernel"]==k][0])' "$2"
}

printf '%-8s %-6s %14s %14s %7s\n' threads kernel "ours MB/s" "ref MB/s" ratio
for threads in 1 "$cores"; do
  for kernel in copy triad; do
    : >"$work/ours" ; : >"$work/ref"
    for ((i = 0; i < runs; i++)); do
      ours "$threads" "$kernel" >>"$work/ours"
      ref "$threads" "$kernel" >>"$work/ref"
    done
    o=$(median <"$work/ours"); r=$(median <"$work/ref")
    printf '%-8s %-6s %14.1f %14.1f %7.3f\n' "$threads" "$kernel" "$o" "$r" "$(echo "$o / $r" | bc -l)"
  done
done
echo "(median of $runs runs each; $elements elements per array, NTIMES=$ntimes, $cores physical cores)"
