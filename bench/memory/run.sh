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
  /* STREAM's arrays are static and back to back (OFFSET 0): one block here,
     so that a, b and c keep STREAM's relative placement (three mallocs would
     put all three at the same offset modulo 4 KiB). */
  double* a = malloc(sizeof(double) * 3 * n);
  double* b = a + n;
  double* c = b + n;
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
  free(a);
  return 0;
}
C
gcc -O3 -fopenmp -o "$work/ref_stream" "$work/ref_stream.c"

# STREAM's rule: each array at least 4x the sum of all the caches (lscpu's
# per-level totals across all instances), or the figures are cache bandwidth.
cache_bytes=$(lscpu -B -C=ALL-SIZE 2>/dev/null | awk 'NR > 1 {s += $1} END {print s + 0}')
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
echo "array: $((elements * 8 / 1000000)) MB each; caches: $((cache_bytes / 1000000)) MB in all; transparent huge pages: $thp"
if ((cache_bytes > 0 && elements * 8 < 4 * cache_bytes)); then
  echo "warning: an array is smaller than 4x the caches (STREAM's rule): raise ELEMENTS to $((4 * cache_bytes / 8 + 1))" >&2
fi

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

# The ratio is the median of each pair's ratio (ours, then the reference,
# back to back): a VM's memory bandwidth drifts by 10-20 % between minutes,
# which a ratio of two medians taken over different minutes would keep.
printf '%-8s %-6s %14s %14s %7s  %s\n' threads kernel "ours MB/s" "ref MB/s" ratio "target 0.95-1.05"
for threads in 1 "$cores"; do
  for kernel in copy triad; do
    : >"$work/ours" ; : >"$work/ref" ; : >"$work/ratio"
    for ((i = 0; i < runs; i++)); do
      o=$(ours "$threads" "$kernel"); r=$(ref "$threads" "$kernel")
      echo "$o" >>"$work/ours"; echo "$r" >>"$work/ref"; echo "$o / $r" | bc -l >>"$work/ratio"
      echo "  run $((i + 1))/$runs: $threads thread(s) $kernel: ours $o, ref $r" >&2
    done
    o=$(median <"$work/ours"); r=$(median <"$work/ref"); q=$(median <"$work/ratio")
    verdict=$(awk -v q="$q" 'BEGIN {print (q >= 0.95 && q <= 1.05) ? "met" : "NOT met"}')
    printf '%-8s %-6s %14.1f %14.1f %7.3f  %s\n' "$threads" "$kernel" "$o" "$r" "$q" "$verdict"
  done
done
echo "(medians of $runs pairs; ratio = median of the pairs' ratios; $elements elements per array, NTIMES=$ntimes, $cores physical cores)"
