#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "hostperf/probes/cpu/workload.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// Replaceable parts of the CPU probe, for fault-injection tests (a CPU that
// computes a wrong checksum cannot be produced on demand).
struct CpuProbeSeams {
  std::function<WorkloadResult(std::uint64_t chunks, const RunContext& ctx)> run_workload = RunWorkload;
};

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps, CpuProbeSeams seams);

}  // namespace hostperf::probes::cpu
