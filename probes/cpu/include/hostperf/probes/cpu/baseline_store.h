#pragma once

#include <cstddef>
#include <ctime>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hostperf/probes/cpu/module.h"

namespace hostperf::probes::cpu {

// Where a fingerprint's baseline stands.
struct Baseline {
  // Expected CPU seconds of the scheduled workload; nullopt while calibrating.
  std::optional<double> seconds;
  bool from_config = false;
  std::size_t samples = 0;         // calibration samples collected so far
  std::size_t samples_needed = 0;  // calibration_runs
};

// Per-binary CPU baselines, persisted as <state_directory>/cpu_baselines.json:
//   {"<fingerprint>": {"baseline_cpu_seconds": 0.052, "samples": [...],
//                      "calibrated_at": 1764672000}}
// vcpuperf timings are only comparable for one binary, so every fingerprint
// calibrates on its own and never borrows another's baseline. A config
// baseline for a fingerprint wins over the calibrated one. File problems are
// logged and survived: a corrupt file counts as empty, an unwritable state
// directory keeps the baselines in memory.
class BaselineStore {
 public:
  using WallClock = std::function<std::time_t()>;

  // An empty state_directory keeps everything in memory (nothing persisted).

  explicit BaselineStore(std::filesystem::path state_directory, WallClock wall_clock = {});

  Baseline Get(const std::string& fingerprint, const CpuProbeConfig& config) const;

  // Feeds one scheduled run's workload CPU time into calibration (ignored once
  // the fingerprint has a baseline or the config gives one) and persists it.
  Baseline AddCalibrationSample(const std::string& fingerprint, double cpu_seconds, const CpuProbeConfig& config);

  const std::filesystem::path& path() const { return path_; }

 private:
  Baseline GetLocked(const std::string& fingerprint, const CpuProbeConfig& config) const;
  void Load();
  void Save();

  std::filesystem::path directory_;
  std::filesystem::path path_;
  WallClock wall_clock_;
  mutable std::mutex mutex_;
  nlohmann::json entries_ = nlohmann::json::object();  // validated on load
  bool write_error_logged_ = false;
};

}  // namespace hostperf::probes::cpu
