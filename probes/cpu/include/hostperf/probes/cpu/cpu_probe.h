#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// vcpuperf as a probe: checksum-verified workload (CPU and real time),
// throttle test (~70 us task under high and low load), per-binary baseline.
std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps);

// vcpuperf's report from a cpu run's JSON result; quiet (-q) prints only
// CPU Time, Real Time and the high and low load times.
std::string FormatVcpuperfReport(const nlohmann::json& result, bool quiet);

}  // namespace hostperf::probes::cpu
