#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/schema.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

using namespace std::chrono_literals;

// [probes.cpu]
// vcpuperf's "Expected time on <CPU>": the full run's CPU time that an
// operator measured on a reference machine with one binary (its fingerprint),
// as `hostperf cpu --json` prints it under "reference_time".
struct ReferenceTime {
  std::string cpu;          // shown as "Expected time on <cpu>"
  std::string fingerprint;  // only this binary's entries are comparable
  double seconds = 0;       // CPU time of a full run (kFullChunks)
};

struct CpuProbeConfig : config::ProbeSection {
  static constexpr std::string_view kName = "cpu";
  // Scheduled runs used to calibrate a new binary's baseline (median).
  std::uint32_t calibration_runs = 5;
  // Timings of the ~70 us task per load level in a scheduled run.
  std::uint32_t throttle_samples = 25;
  // Idle gap before each low-load timing (lets the core drop to a low state).
  config::Duration low_load_gap = 10ms;
  // Busy spin before each high-load timing.
  config::Duration high_load_spin = 2ms;
  // Per binary fingerprint: CPU time of the scheduled workload. Overrides
  // calibration for that fingerprint.
  std::map<std::string, config::Duration> baselines;
  // Reference machines' full-run times, printed by `hostperf cpu`.
  std::vector<ReferenceTime> reference_times;
  // Per-core attribution: pinned low-load medians kept per core (the window),
  // how many a core needs before it has a median, and how far above its
  // siblings' median it must stand to be named slow.
  std::uint32_t core_window = 5;
  std::uint32_t core_min_samples = 3;
  double core_outlier_ratio = 1.5;
  // Series per core family; above it the rotation visits an evenly spread
  // subset of the CPUs. 0 turns the per-core rotation off.
  std::uint32_t max_cores = 512;
};

// vcpuperf: the cpu probe's module (registered from its folder: probes/CMakeLists.txt).
extern const ProbeModule kModule;

// The headline figures of a cpu result: low-load median (200 µs / 1 ms),
// throttle ratio (2), CPU time against the baseline (information).
std::vector<Figure> CpuFigures(const nlohmann::json& result);

}  // namespace hostperf::probes::cpu
