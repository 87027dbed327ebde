#include "run_result.h"

#include <fmt/format.h>

#include "hostperf/probes/build_info.h"

namespace hostperf::probes::cpu {

namespace {

using nlohmann::json;
using Seconds = std::chrono::duration<double>;

json OptionalJson(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

json CoresJson(const CoreRun& cores) {
  json per_core = json::array();
  const CoreStat* slowest = nullptr;
  for (const CoreStat& stat : cores.stats) {
    per_core.push_back({{"cpu", stat.cpu},
                        {"samples", stat.samples},
                        {"median_seconds", OptionalJson(stat.median_seconds)},
                        {"ratio", OptionalJson(stat.ratio)},
                        {"outlier", stat.outlier}});
    if (stat.ratio && (slowest == nullptr || *stat.ratio > *slowest->ratio)) slowest = &stat;
  }
  json power = {{"driver", cores.power.driver},
                {"governor", cores.power.governor},
                {"energy_performance_preference", cores.power.energy_performance_preference},
                {"pstate_status", cores.power.pstate_status},
                {"governor_differs", cores.power.governor_differs},
                {"energy_performance_preference_differs", cores.power.epp_differs}};
  return {
      {"rotation_cpus", cores.rotation.cpus.size()},
      {"outside_affinity", cores.rotation.outside_affinity},
      {"over_max_cores", cores.rotation.over_max_cores},
      {"measured_cpu", cores.measured_cpu ? json(*cores.measured_cpu) : json(nullptr)},
      {"measured_median_seconds", OptionalJson(cores.measured_median_seconds)},
      {"pin_error", cores.pin_error.empty() ? json(nullptr) : json(cores.pin_error)},
      {"min_samples", cores.min_samples},
      {"outlier_ratio", cores.outlier_ratio},
      {"runs_to_name", cores.RunsToName()},
      {"per_core", std::move(per_core)},
      {"slowest", slowest ? json{{"cpu", slowest->cpu}, {"ratio", *slowest->ratio}, {"outlier", slowest->outlier}}
                          : json(nullptr)},
      {"power", std::move(power)},
  };
}

// A full run's CPU time from any run's (the workload is chunks of equal work).
double FullRunSeconds(const RunData& run) {
  if (run.workload.chunks_requested == 0) return 0;
  return Seconds(run.workload.cpu_time).count() * static_cast<double>(kFullChunks) /
         static_cast<double>(run.workload.chunks_requested);
}

// The configured reference machines' times for this binary, scaled to this
// run's length; entries recorded with other binaries are not comparable
// (vcpuperf's guidance) and only counted.
json ReferenceTimes(const RunData& run, const CpuProbeConfig& config) {
  json matching = json::array();
  std::size_t other_binaries = 0;
  for (const ReferenceTime& reference : config.reference_times) {
    if (reference.fingerprint != build_info::kFingerprint) {
      ++other_binaries;
      continue;
    }
    const double expected =
        reference.seconds * static_cast<double>(run.workload.chunks_requested) / static_cast<double>(kFullChunks);
    const double cpu = Seconds(run.workload.cpu_time).count();
    matching.push_back({{"cpu", reference.cpu},
                        {"expected_seconds", expected},
                        {"ratio", expected > 0 ? json(cpu / expected) : json(nullptr)}});
  }
  return {{"matching", std::move(matching)}, {"other_binaries", other_binaries}};
}

}  // namespace

json ToJson(const RunData& run, const CpuProbeConfig& config, const std::string& cpu_model,
            const std::filesystem::path& baseline_file) {
  const auto throttle_field = [&](double ThrottleResult::*field) {
    return run.throttle ? json((*run.throttle).*field) : json(nullptr);
  };
  return {
      {"mode", run.full ? "full" : "scheduled"},
      {"fingerprint", build_info::kFingerprint},
      {"compiler", build_info::kCompiler},
      {"compiler_version", build_info::kCompilerVersion},
      {"build_flags", build_info::kBuildFlags},
      {"chunks", run.workload.chunks_requested},
      {"checksum", fmt::format("{:016x}", run.workload.checksum)},
      {"checksum_ok", run.workload.valid},
      {"cpu_seconds", Seconds(run.workload.cpu_time).count()},
      {"real_seconds", Seconds(run.workload.real_time).count()},
      {"expected_seconds", OptionalJson(run.ExpectedSeconds())},
      {"baseline_ratio", OptionalJson(run.BaselineRatio())},
      {"baseline_source",
       run.baseline.seconds ? json(run.baseline.from_config ? "config" : "calibrated") : json(nullptr)},
      {"calibration_samples", run.baseline.samples},
      {"calibration_runs", run.baseline.samples_needed},
      {"high_load_median_seconds", throttle_field(&ThrottleResult::high_median_seconds)},
      {"low_load_median_seconds", throttle_field(&ThrottleResult::low_median_seconds)},
      {"throttle_ratio", throttle_field(&ThrottleResult::ratio)},
      {"samples_per_load", run.samples_per_load},
      {"cpu_model", cpu_model},
      {"baseline_file", baseline_file.string()},
      {"reference_times", ReferenceTimes(run, config)},
      // What an operator copies into probes.cpu.reference_times from a
      // reference machine (only a complete, verified workload is one).
      {"reference_time",
       run.workload.complete && run.workload.valid
           ? json{{"cpu", cpu_model}, {"fingerprint", build_info::kFingerprint}, {"seconds", FullRunSeconds(run)}}
           : json(nullptr)},
      {"cores", run.cores ? CoresJson(*run.cores) : json(nullptr)},
  };
}


}  // namespace hostperf::probes::cpu
