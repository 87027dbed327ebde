#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/memory/stream.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::memory {

// STREAM as a probe. Scheduled: one thread, a short run (kScheduledIterations)
// on arrays sized just past 4x the LLC within [probes.memory] memory_budget.
// Full: one thread per physical core (pinned), kFullIterations, arrays >= 4x
// the LLC where memory allows.
std::unique_ptr<Probe> CreateMemoryProbe(const ProbeDeps& deps);

inline constexpr int kScheduledIterations = 4;  // a warm-up and three timed
inline constexpr int kFullIterations = 10;      // STREAM's NTIMES

// Full-run options (CLI flags / run API body), all optional:
//   {"array_elements": N, "iterations": K, "threads": T}
struct MemoryOptions : ProbeOptions {
  std::optional<std::size_t> array_elements;  // per array
  std::optional<int> iterations;              // including the warm-up, 2..1000
  std::optional<int> threads;                 // 1..1024; default one per physical core
};
Result<MemoryOptions> ParseMemoryOptions(const nlohmann::json& options);
nlohmann::json ToJson(const MemoryOptions& options);
// ProbeModule::parse_options (STREAM has no run length: `duration` is unused).
Result<std::shared_ptr<const ProbeOptions>> ParseMemoryModuleOptions(const nlohmann::json& options,
                                                                     std::optional<std::chrono::nanoseconds> duration);

// `hostperf memory [-s ELEMENTS] [-n ITERATIONS] [-t THREADS] [--json]`.
struct MemoryCommand {
  MemoryOptions options;
  bool json = false;
  bool help = false;
};
Result<MemoryCommand> ParseMemoryCommand(const std::vector<std::string>& args);
inline constexpr const char* kMemoryUsage =
    "usage: hostperf memory [-s ELEMENTS] [-n ITERATIONS] [-t THREADS] [--json]\n"
    "  STREAM copy, scale, add and triad; prints each kernel's best rate (MB/s)\n"
    "  and its average, min and max time.\n"
    "  -s, --array-size N   elements per array (default: each array at least 4x the\n"
    "                       last-level cache, at least 10M, within half the available memory)\n"
    "  -n, --ntimes N       iterations including the warm-up (default 10)\n"
    "  -t, --threads N      threads (default: one per physical core, pinned)\n"
    "  --json               the result as JSON, as the run API returns it\n";

struct MemoryProbeSeams {
  std::function<void(const StreamArrays&)> before_validation;  // corrupts arrays in tests
};
std::unique_ptr<Probe> CreateMemoryProbe(const ProbeDeps& deps, MemoryProbeSeams seams);

// STREAM's report from a memory run's JSON result: array sizes, threads, the
// table of best rate (MB/s, 10^6 bytes) and avg/min/max time per kernel, and
// the validation line.
std::string FormatStreamReport(const nlohmann::json& result);

}  // namespace hostperf::probes::memory
