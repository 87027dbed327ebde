#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/cpu/cores.h"
#include "hostperf/probes/cpu/throttle.h"
#include "hostperf/probes/cpu/workload.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// Replaceable parts of the CPU probe, for fault-injection tests (a CPU that
// computes a wrong checksum, or one slow core, cannot be produced on demand).
struct CpuProbeSeams {
  std::function<WorkloadResult(std::uint64_t chunks, const RunContext& ctx)> run_workload = RunWorkload;
  // The per-core rotation's pinned low-load median of one CPU.
  std::function<Result<double>(int cpu, const ThrottleOptions& options, const RunContext& ctx)> measure_pinned =
      MeasurePinnedLowLoad;
  // The CPUs the process may run on (sched_getaffinity).
  std::function<Result<std::vector<int>>()> affinity = ThreadAffinity;
};

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps, CpuProbeSeams seams);

}  // namespace hostperf::probes::cpu
