#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/probes/cpu/baseline_store.h"
#include "hostperf/probes/cpu/cores.h"
#include "hostperf/probes/cpu/module.h"
#include "hostperf/probes/cpu/power.h"
#include "hostperf/probes/cpu/throttle.h"
#include "hostperf/probes/cpu/workload.h"

namespace hostperf::probes::cpu {

// One scheduled run's per-core part: the rotation, its one pinned
// measurement, every core's standing and what the kernel shows.
struct CoreRun {
  RotationSet rotation;
  std::optional<int> measured_cpu;
  std::optional<double> measured_median_seconds;
  std::string pin_error;  // why the pinned measurement failed, if it did
  std::vector<CoreStat> stats;
  PowerFacts power;
  std::uint32_t min_samples = 0;
  double outlier_ratio = 0;

  // Scheduled runs until a core that turned slow is named: every core of the
  // rotation visited min_samples times.
  std::size_t RunsToName() const { return rotation.cpus.size() * min_samples; }
};

// What one run measured, for the JSON result and the metrics.
struct RunData {
  bool full = false;  // a full run (vcpuperf), else a scheduled one
  WorkloadResult workload;
  std::optional<ThrottleResult> throttle;
  Baseline baseline;
  std::uint32_t samples_per_load = 0;
  std::optional<CoreRun> cores;  // scheduled runs

  // The baseline scaled to this run's chunk count (full runs are longer).
  std::optional<double> ExpectedSeconds() const {
    if (!baseline.seconds) return std::nullopt;
    return *baseline.seconds * static_cast<double>(workload.chunks_requested) / static_cast<double>(kScheduledChunks);
  }
  std::optional<double> BaselineRatio() const {
    const auto expected = ExpectedSeconds();
    if (!expected || *expected <= 0) return std::nullopt;
    return std::chrono::duration<double>(workload.cpu_time).count() / *expected;
  }
};

// A run's JSON result (the CLI's and the run API's fields).
nlohmann::json ToJson(const RunData& run, const CpuProbeConfig& config, const std::string& cpu_model,
                      const std::filesystem::path& baseline_file);

}  // namespace hostperf::probes::cpu
