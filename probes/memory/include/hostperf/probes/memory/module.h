#pragma once

#include <cstdint>
#include <string_view>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::memory {

// [probes.memory]
struct MemoryProbeConfig : config::ProbeSection {
  static constexpr std::string_view kName = "memory";
  std::uint64_t memory_budget = 256 * config::kMiB;  // cap on the three arrays of a scheduled run
};

// STREAM: the memory probe's module (registered from its folder: probes/CMakeLists.txt).
extern const ProbeModule kModule;

// The headline figure of a memory result: triad bandwidth (information).
std::vector<Figure> MemoryFigures(const nlohmann::json& result);

}  // namespace hostperf::probes::memory
