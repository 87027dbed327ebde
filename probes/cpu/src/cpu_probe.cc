#include "hostperf/probes/cpu/cpu_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/probes/build_info.h"
#include "hostperf/probes/cpu/baseline_store.h"
#include "hostperf/probes/cpu/cores.h"
#include "hostperf/probes/cpu/cpu_probe_seams.h"
#include "hostperf/probes/cpu/power.h"
#include "hostperf/probes/cpu/throttle.h"
#include "hostperf/probes/cpu/workload.h"
#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::cpu {

namespace {

using nlohmann::json;
using Seconds = std::chrono::duration<double>;

// vcpuperf-sized throttle test for full runs.
constexpr std::uint32_t kFullThrottleSamples = 1000;

// Resolves 10 us to 10 ms: a healthy task is 50-100 us, throttled ones reach
// hundreds of us.
const prometheus::Histogram::BucketBoundaries& TaskBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {
      10e-6,  20e-6,  30e-6,  40e-6,  50e-6,  60e-6,  70e-6,  80e-6, 90e-6,  100e-6, 125e-6, 150e-6,
      175e-6, 200e-6, 250e-6, 300e-6, 400e-6, 500e-6, 750e-6, 1e-3,  2.5e-3, 5e-3,   10e-3};
  return kBuckets;
}

template <typename Builder>
auto& RegisterFamily(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

json OptionalJson(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

std::string StopReason(const RunContext& ctx) { return ctx.Cancelled() ? "cancelled" : "timeout"; }

// The series of one family that the last publication touched; Sweep removes
// the others (a CPU gone offline, an info label that changed), so that no
// stale or zero series stays behind.
template <typename Metric>
class SeriesSet {
 public:
  explicit SeriesSet(prometheus::Family<Metric>& family) : family_(family) {}

  Metric& Get(const prometheus::Labels& labels) {
    auto [it, inserted] = series_.try_emplace(labels, nullptr);
    if (inserted) it->second = &family_.Add(labels);
    touched_.insert(labels);
    return *it->second;
  }

  void Sweep() {
    for (auto it = series_.begin(); it != series_.end();) {
      if (touched_.count(it->first) != 0) {
        ++it;
        continue;
      }
      family_.Remove(it->second);  // drop our pointer with it
      kernel_counts_.erase(it->first);
      it = series_.erase(it);
    }
    touched_.clear();
  }

  // A counter that follows a cumulative kernel count: it rises by what the
  // kernel's count rose (all of it on first sight or after a reset).
  void Follow(const prometheus::Labels& labels, std::uint64_t kernel_count) {
    Metric& counter = Get(labels);
    const auto last = kernel_counts_.find(labels);
    const std::uint64_t rise =
        last == kernel_counts_.end() || kernel_count < last->second ? kernel_count : kernel_count - last->second;
    if (rise > 0) counter.Increment(static_cast<double>(rise));
    kernel_counts_[labels] = kernel_count;
  }

 private:
  prometheus::Family<Metric>& family_;
  std::map<prometheus::Labels, Metric*> series_;
  std::set<prometheus::Labels> touched_;
  std::map<prometheus::Labels, std::uint64_t> kernel_counts_;
};

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

// What one run measured, for the JSON result and the metrics.
struct RunData {
  RunMode mode = RunMode::kScheduled;
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
    return Seconds(workload.cpu_time).count() / *expected;
  }
};

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

json ToJson(const RunData& run, const CpuProbeConfig& config, const std::string& cpu_model,
            const std::filesystem::path& baseline_file) {
  const auto throttle_field = [&](double ThrottleResult::*field) {
    return run.throttle ? json((*run.throttle).*field) : json(nullptr);
  };
  return {
      {"mode", ToString(run.mode)},
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

class CpuProbe final : public Probe {
 public:
  CpuProbe(const ProbeDeps& deps, CpuProbeSeams seams)
      : seams_(std::move(seams)),
        roots_(deps.roots),
        // The CLI may run without an exporter; metrics then go nowhere.
        registry_handle_(RegistryFor(deps)),
        registry_(*registry_handle_),
        baselines_(deps.state_directory),
        cpu_model_(ReadHostFacts(deps.roots).cpu_model),
        workload_cpu_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_workload_cpu_seconds",
                                     "CPU time of the last checksum-verified CPU workload.", registry_)),
        workload_real_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_workload_real_seconds",
                                      "Wall-clock time of the last CPU workload.", registry_)),
        workload_errors_(RegisterFamily(prometheus::BuildCounter(), "hostperf_cpu_workload_errors_total",
                                        "CPU workload runs whose checksum did not match.", registry_)
                             .Add({})),
        task_seconds_(RegisterFamily(prometheus::BuildHistogram(), "hostperf_cpu_task_seconds",
                                     "Time of the ~70us throttle-test task (scheduled runs).", registry_)),
        task_high_(task_seconds_.Add({{"load", "high"}}, TaskBuckets())),
        task_low_(task_seconds_.Add({{"load", "low"}}, TaskBuckets())),
        task_median_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_task_median_seconds",
                                    "Median throttle-test task time of the last scheduled run.", registry_)),
        throttle_ratio_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_throttle_ratio",
                                       "Low-load median task time divided by the high-load median.", registry_)),
        baseline_seconds_(RegisterFamily(
            prometheus::BuildGauge(), "hostperf_cpu_baseline_seconds",
            "Expected CPU time of the scheduled workload for this binary (per fingerprint).", registry_)),
        baseline_ratio_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_baseline_ratio",
                                       "Last scheduled workload CPU time divided by this binary's baseline.",
                                       registry_)),
        calibration_samples_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_baseline_calibration_samples",
                                            "Runs collected toward this binary's CPU baseline.", registry_)
                                 .Add({})),
        core_median_(RegisterFamily(
            prometheus::BuildGauge(), "hostperf_cpu_core_task_median_seconds",
            "Per CPU: median of its last core_window pinned low-load task medians. Each scheduled run measures one "
            "CPU, in rotation; a CPU appears once it has core_min_samples, so a slow core is named after (CPUs in "
            "the rotation x core_min_samples) runs, e.g. 16 x 3 = 48 runs = 4 hours at the 5-minute interval.",
            registry_)),
        core_ratio_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_core_task_ratio",
                                   "Per CPU: its pinned low-load median divided by the median of its siblings' "
                                   "(needs two CPUs with a median).",
                                   registry_)),
        core_outlier_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_core_outlier",
                                     "Per CPU: 1 when its task ratio is above core_outlier_ratio (the slow core), "
                                     "else 0.",
                                     registry_)),
        core_frequency_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_core_frequency_hertz",
                                       "Per CPU: cpufreq's scaling_cur_freq at the end of the last scheduled run; "
                                       "absent where the kernel does not expose cpufreq (VMs).",
                                       registry_)),
        core_throttles_(RegisterFamily(prometheus::BuildCounter(), "hostperf_cpu_core_throttle_events_total",
                                       "Per CPU: the kernel's thermal_throttle core_throttle_count (scope core) "
                                       "and package_throttle_count (scope package, its package's, repeated on each "
                                       "of its CPUs); absent where the kernel has no thermal_throttle (VMs).",
                                       registry_)),
        power_info_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_power_info",
                                   "Always 1: cpufreq driver, governor and energy_performance_preference of the "
                                   "first CPU of the rotation (cpu0), intel_pstate/amd_pstate status; absent "
                                   "where the kernel does not expose cpufreq or a pstate driver (VMs).",
                                   registry_)),
        power_differing_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_power_differing_cores",
                                        "CPUs whose governor or energy_performance_preference differs from "
                                        "hostperf_cpu_power_info's; absent where the kernel does not expose "
                                        "cpufreq (VMs).",
                                        registry_)),
        idle_enabled_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_idle_state_enabled_cores",
                                     "CPUs with this cpuidle state enabled; absent where the kernel does not "
                                     "expose cpuidle states (VMs).",
                                     registry_)),
        idle_latency_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_idle_state_latency_seconds",
                                     "Exit latency of this cpuidle state (the largest over the CPUs); absent "
                                     "where the kernel does not expose cpuidle states (VMs).",
                                     registry_)),
        sysfs_available_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_sysfs_available",
                                        "1 when the kernel exposes this power fact in sysfs (cpufreq, "
                                        "thermal_throttle, cpuidle, pstate), 0 when not (VMs): its families are "
                                        "then absent rather than 0.",
                                        registry_)),
        rotation_cpus_(RegisterFamily(prometheus::BuildGauge(), "hostperf_cpu_core_rotation_cpus",
                                      "Online CPUs by their place in the per-core rotation: rotated, "
                                      "outside_affinity (not in the process's affinity mask), over_max_cores "
                                      "(left out above max_cores).",
                                      registry_)),
        core_median_series_(core_median_),
        core_ratio_series_(core_ratio_),
        core_outlier_series_(core_outlier_),
        core_frequency_series_(core_frequency_),
        core_throttle_series_(core_throttles_),
        power_info_series_(power_info_),
        power_differing_series_(power_differing_),
        idle_enabled_series_(idle_enabled_),
        idle_latency_series_(idle_latency_) {
    calibration_samples_.Set(static_cast<double>(baselines_.Get(build_info::kFingerprint, CpuProbeConfig{}).samples));
  }

  std::string_view Name() const override { return "cpu"; }

 private:
  ProbeOutcome Measure(const RunContext& ctx) override {
    const auto& config = ctx.Settings<CpuProbeConfig>();
    const bool full = ctx.mode == RunMode::kFull;
    const auto started = std::chrono::steady_clock::now();
    const auto progress = [&](const char* test) {
      if (ctx.on_progress) ctx.on_progress({test, std::chrono::steady_clock::now() - started, {}});
    };

    RunData run;
    run.mode = ctx.mode;
    progress("workload");
    run.workload = seams_.run_workload(full ? kFullChunks : kScheduledChunks, ctx);
    run.baseline = baselines_.Get(build_info::kFingerprint, config);
    if (!run.workload.complete) return Stopped(ctx, run, "workload");
    if (!run.workload.valid) {
      workload_errors_.Increment();
      const auto expected = ExpectedChecksum(run.workload.chunks_requested).value_or(0);
      return ProbeOutcome::Failure(
          "checksum_mismatch",
          fmt::format("CPU workload checksum {:016x}, expected {:016x}: the CPU computed a wrong result",
                      run.workload.checksum, expected),
          ToJson(run, config, cpu_model_, baselines_.path()));
    }

    progress("throttle");
    ThrottleOptions options;
    options.samples_per_load = full ? kFullThrottleSamples : config.throttle_samples;
    options.high_load_spin = config.high_load_spin;
    options.low_load_gap = config.low_load_gap;
    options.spinner_threads = full ? std::max(0, ReadCpuTopology(roots_).logical_cpus - 1) : 0;
    run.samples_per_load = options.samples_per_load;
    run.throttle = RunThrottleTest(options, ctx);
    if (!run.throttle->complete) return Stopped(ctx, run, "throttle test");

    if (!full) {
      progress("cores");
      run.cores = MeasureCores(ctx, options);
      if (ctx.ShouldStop()) return Stopped(ctx, run, "per-core measurement");
    }

    // Only scheduled runs are alike enough to calibrate on.
    if (!full) {
      run.baseline =
          baselines_.AddCalibrationSample(build_info::kFingerprint, Seconds(run.workload.cpu_time).count(), config);
    }
    Publish(run);
    return ProbeOutcome::Success(ToJson(run, config, cpu_model_, baselines_.path()));
  }

  // The rotation's one pinned measurement, then every core's standing and the
  // kernel's power facts (read after the timings, so they cost them nothing).
  CoreRun MeasureCores(const RunContext& ctx, const ThrottleOptions& throttle) {
    const auto& config = ctx.Settings<CpuProbeConfig>();
    CoreRun cores;
    cores.min_samples = std::min(config.core_min_samples, config.core_window);
    cores.outlier_ratio = config.core_outlier_ratio;
    const std::vector<int> online = ReadOnlineCpus(roots_);
    std::vector<int> affinity;
    if (auto mask = seams_.affinity(); mask.ok()) {
      affinity = std::move(mask).value();
    } else {
      spdlog::warn("cpu probe: {}; rotating over every online CPU", mask.error());
    }
    cores.rotation = ChooseRotationCpus(online, affinity, config.max_cores);
    if (config.max_cores > 0 && cores.rotation.over_max_cores > 0 && !logged_cap_) {
      spdlog::info(
          "cpu probe: {} usable CPUs, above max_cores {}: the per-core rotation visits an evenly spread "
          "{} of them",
          cores.rotation.cpus.size() + cores.rotation.over_max_cores, config.max_cores, cores.rotation.cpus.size());
      logged_cap_ = true;
    }
    windows_.Retain(cores.rotation.cpus);
    if (const auto cpu = windows_.Next(cores.rotation.cpus)) {
      ThrottleOptions pinned = throttle;
      pinned.spinner_threads = 0;
      const Result<double> median = seams_.measure_pinned(*cpu, pinned, ctx);
      if (median.ok()) {
        cores.measured_cpu = *cpu;
        cores.measured_median_seconds = *median;
        windows_.Add(*cpu, *median, config.core_window);
      } else if (median.reason() == "stopped") {
        cores.pin_error = median.error();  // the same CPU's turn again next run
      } else {
        windows_.Skip(*cpu);
        cores.pin_error = median.error();
        spdlog::warn("cpu probe: per-core sample of CPU {}: {}", *cpu, median.error());
      }
    }
    cores.stats = windows_.Stats(cores.min_samples, cores.outlier_ratio);
    // With the rotation off, the host-level power facts still come from the first online CPU.
    std::vector<int> power_cpus = cores.rotation.cpus;
    if (power_cpus.empty() && !online.empty()) power_cpus.push_back(online.front());
    cores.power = ReadPowerFacts(roots_, power_cpus);
    return cores;
  }

  void PublishCores(const CoreRun& cores) {
    const auto cpu_label = [](int cpu) { return prometheus::Labels{{"cpu", std::to_string(cpu)}}; };
    for (const CoreStat& stat : cores.stats) {
      if (!stat.median_seconds) continue;
      core_median_series_.Get(cpu_label(stat.cpu)).Set(*stat.median_seconds);
      if (!stat.ratio) continue;
      core_ratio_series_.Get(cpu_label(stat.cpu)).Set(*stat.ratio);
      core_outlier_series_.Get(cpu_label(stat.cpu)).Set(stat.outlier ? 1 : 0);
    }
    const std::set<int> rotated(cores.rotation.cpus.begin(), cores.rotation.cpus.end());
    for (const CorePower& core : cores.power.cores) {
      if (rotated.count(core.cpu) == 0) continue;  // the power-facts-only CPU of a rotation turned off
      const std::string cpu = std::to_string(core.cpu);
      if (core.frequency_hertz) core_frequency_series_.Get({{"cpu", cpu}}).Set(*core.frequency_hertz);
      if (core.core_throttles) core_throttle_series_.Follow({{"cpu", cpu}, {"scope", "core"}}, *core.core_throttles);
      if (core.package_throttles) {
        core_throttle_series_.Follow({{"cpu", cpu}, {"scope", "package"}}, *core.package_throttles);
      }
    }
    const PowerFacts& power = cores.power;
    if (power.cpufreq || power.pstate) {
      power_info_series_
          .Get({{"driver", power.driver},
                {"governor", power.governor},
                {"pstate_status", power.pstate_status},
                {"energy_performance_preference", power.energy_performance_preference}})
          .Set(1);
    }
    if (power.cpufreq) {
      power_differing_series_.Get({{"setting", "governor"}}).Set(static_cast<double>(power.governor_differs));
      power_differing_series_.Get({{"setting", "energy_performance_preference"}})
          .Set(static_cast<double>(power.epp_differs));
    }
    for (const IdleState& state : power.idle_states) {
      idle_enabled_series_.Get({{"state", state.name}}).Set(static_cast<double>(state.enabled_cores));
      if (state.latency_seconds) idle_latency_series_.Get({{"state", state.name}}).Set(*state.latency_seconds);
    }
    for (auto* set : {&core_median_series_, &core_ratio_series_, &core_outlier_series_, &core_frequency_series_,
                      &power_info_series_, &power_differing_series_, &idle_enabled_series_, &idle_latency_series_}) {
      set->Sweep();
    }
    core_throttle_series_.Sweep();
    const std::pair<const char*, bool> available[] = {{"cpufreq", power.cpufreq},
                                                      {"thermal_throttle", power.thermal_throttle},
                                                      {"cpuidle", power.cpuidle},
                                                      {"pstate", power.pstate}};
    for (const auto& [fact, present] : available) sysfs_available_.Add({{"fact", fact}}).Set(present ? 1 : 0);
    rotation_cpus_.Add({{"set", "rotated"}}).Set(static_cast<double>(cores.rotation.cpus.size()));
    rotation_cpus_.Add({{"set", "outside_affinity"}}).Set(static_cast<double>(cores.rotation.outside_affinity));
    rotation_cpus_.Add({{"set", "over_max_cores"}}).Set(static_cast<double>(cores.rotation.over_max_cores));
  }

  ProbeOutcome Stopped(const RunContext& ctx, const RunData& run, const char* phase) const {
    const std::string reason = StopReason(ctx);
    return ProbeOutcome::Failure(reason, fmt::format("cpu run {} during the {}", reason, phase),
                                 ToJson(run, ctx.Settings<CpuProbeConfig>(), cpu_model_, baselines_.path()));
  }

  void Publish(const RunData& run) {
    const prometheus::Labels mode = {{"mode", std::string(ToString(run.mode))}};
    workload_cpu_.Add(mode).Set(Seconds(run.workload.cpu_time).count());
    workload_real_.Add(mode).Set(Seconds(run.workload.real_time).count());
    calibration_samples_.Set(static_cast<double>(run.baseline.samples));
    if (run.baseline.seconds) {
      baseline_seconds_.Add({{"fingerprint", build_info::kFingerprint}}).Set(*run.baseline.seconds);
    }
    // Task timings, medians and ratios describe the scheduled variant only, so
    // that an on-demand full run (all cores loaded) does not skew their series.
    if (run.mode != RunMode::kScheduled) return;
    if (const auto ratio = run.BaselineRatio()) baseline_ratio_.Add({}).Set(*ratio);
    const ThrottleResult& throttle = *run.throttle;
    for (const double seconds : throttle.high_seconds) task_high_.Observe(seconds);
    for (const double seconds : throttle.low_seconds) task_low_.Observe(seconds);
    task_median_.Add({{"load", "high"}}).Set(throttle.high_median_seconds);
    task_median_.Add({{"load", "low"}}).Set(throttle.low_median_seconds);
    throttle_ratio_.Add({}).Set(throttle.ratio);
    if (run.cores) PublishCores(*run.cores);
  }

  CpuProbeSeams seams_;
  SystemRoots roots_;
  std::shared_ptr<prometheus::Registry> registry_handle_;  // RegistryFor(deps)
  prometheus::Registry& registry_;
  BaselineStore baselines_;
  const std::string cpu_model_;

  prometheus::Family<prometheus::Gauge>& workload_cpu_;
  prometheus::Family<prometheus::Gauge>& workload_real_;
  prometheus::Counter& workload_errors_;
  prometheus::Family<prometheus::Histogram>& task_seconds_;
  prometheus::Histogram& task_high_;
  prometheus::Histogram& task_low_;
  prometheus::Family<prometheus::Gauge>& task_median_;
  prometheus::Family<prometheus::Gauge>& throttle_ratio_;
  prometheus::Family<prometheus::Gauge>& baseline_seconds_;
  prometheus::Family<prometheus::Gauge>& baseline_ratio_;
  prometheus::Gauge& calibration_samples_;
  prometheus::Family<prometheus::Gauge>& core_median_;
  prometheus::Family<prometheus::Gauge>& core_ratio_;
  prometheus::Family<prometheus::Gauge>& core_outlier_;
  prometheus::Family<prometheus::Gauge>& core_frequency_;
  prometheus::Family<prometheus::Counter>& core_throttles_;
  prometheus::Family<prometheus::Gauge>& power_info_;
  prometheus::Family<prometheus::Gauge>& power_differing_;
  prometheus::Family<prometheus::Gauge>& idle_enabled_;
  prometheus::Family<prometheus::Gauge>& idle_latency_;
  prometheus::Family<prometheus::Gauge>& sysfs_available_;
  prometheus::Family<prometheus::Gauge>& rotation_cpus_;
  SeriesSet<prometheus::Gauge> core_median_series_;
  SeriesSet<prometheus::Gauge> core_ratio_series_;
  SeriesSet<prometheus::Gauge> core_outlier_series_;
  SeriesSet<prometheus::Gauge> core_frequency_series_;
  SeriesSet<prometheus::Counter> core_throttle_series_;
  SeriesSet<prometheus::Gauge> power_info_series_;
  SeriesSet<prometheus::Gauge> power_differing_series_;
  SeriesSet<prometheus::Gauge> idle_enabled_series_;
  SeriesSet<prometheus::Gauge> idle_latency_series_;
  CoreWindows windows_;
  bool logged_cap_ = false;
};

}  // namespace

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps, CpuProbeSeams seams) {
  return std::make_unique<CpuProbe>(deps, std::move(seams));
}

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps) { return CreateCpuProbe(deps, CpuProbeSeams{}); }

}  // namespace hostperf::probes::cpu
