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
#include "run_result.h"
#include "series_set.h"

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

std::string StopReason(const RunContext& ctx) { return ctx.Cancelled() ? "cancelled" : "timeout"; }

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
  // The short workload, the throttle test and one core of the rotation;
  // calibrates the binary's baseline and publishes everything.
  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override {
    const auto& config = ctx.Settings<CpuProbeConfig>();
    RunData run;
    if (auto stopped = MeasureWorkload(ctx, kScheduledChunks, run)) return *std::move(stopped);
    const ThrottleOptions options = ThrottleFor(config, config.throttle_samples, 0);
    if (auto stopped = MeasureThrottle(ctx, options, run)) return *std::move(stopped);
    run.cores = MeasureCores(ctx, options);
    if (ctx.ShouldStop()) return Stopped(ctx, run, "per-core measurement");
    // Only scheduled runs are alike enough to calibrate on.
    run.baseline =
        baselines_.AddCalibrationSample(build_info::kFingerprint, Seconds(run.workload.cpu_time).count(), config);
    Publish(run);
    return ProbeOutcome::Success(ToJson(run, config, cpu_model_, baselines_.path()));
  }

  // vcpuperf: the full-length workload, then the throttle test with every
  // other CPU kept busy (high load simulated on all cores).
  ProbeOutcome MeasureFull(const FullRunContext& ctx) override {
    const auto& config = ctx.Settings<CpuProbeConfig>();
    const auto started = std::chrono::steady_clock::now();
    const auto progress = [&](const char* test) {
      ctx.ReportProgress({test, std::chrono::steady_clock::now() - started, {}});
    };
    RunData run;
    run.full = true;
    progress("workload");
    if (auto stopped = MeasureWorkload(ctx, kFullChunks, run)) return *std::move(stopped);
    progress("throttle");
    const int spinners = std::max(0, ReadCpuTopology(roots_).logical_cpus - 1);
    if (auto stopped = MeasureThrottle(ctx, ThrottleFor(config, kFullThrottleSamples, spinners), run)) {
      return *std::move(stopped);
    }
    Publish(run);
    return ProbeOutcome::Success(ToJson(run, config, cpu_model_, baselines_.path()));
  }

  static ThrottleOptions ThrottleFor(const CpuProbeConfig& config, std::uint32_t samples, int spinners) {
    ThrottleOptions options;
    options.samples_per_load = samples;
    options.high_load_spin = config.high_load_spin;
    options.low_load_gap = config.low_load_gap;
    options.spinner_threads = spinners;
    return options;
  }

  // The checksum-verified workload; an outcome when the run ends here.
  std::optional<ProbeOutcome> MeasureWorkload(const RunContext& ctx, std::uint64_t chunks, RunData& run) {
    const auto& config = ctx.Settings<CpuProbeConfig>();
    run.workload = seams_.run_workload(chunks, ctx);
    run.baseline = baselines_.Get(build_info::kFingerprint, config);
    if (!run.workload.complete) return Stopped(ctx, run, "workload");
    if (run.workload.valid) return std::nullopt;
    workload_errors_.Increment();
    const auto expected = ExpectedChecksum(run.workload.chunks_requested).value_or(0);
    return ProbeOutcome::Failure(
        "checksum_mismatch",
        fmt::format("CPU workload checksum {:016x}, expected {:016x}: the CPU computed a wrong result",
                    run.workload.checksum, expected),
        ToJson(run, config, cpu_model_, baselines_.path()));
  }

  // The high- and low-load task timings; an outcome when the run ends here.
  std::optional<ProbeOutcome> MeasureThrottle(const RunContext& ctx, const ThrottleOptions& options, RunData& run) {
    run.samples_per_load = options.samples_per_load;
    run.throttle = RunThrottleTest(options, ctx);
    if (!run.throttle->complete) return Stopped(ctx, run, "throttle test");
    return std::nullopt;
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
    const prometheus::Labels mode = {{"mode", run.full ? "full" : "scheduled"}};
    workload_cpu_.Add(mode).Set(Seconds(run.workload.cpu_time).count());
    workload_real_.Add(mode).Set(Seconds(run.workload.real_time).count());
    calibration_samples_.Set(static_cast<double>(run.baseline.samples));
    if (run.baseline.seconds) {
      baseline_seconds_.Add({{"fingerprint", build_info::kFingerprint}}).Set(*run.baseline.seconds);
    }
    // Task timings, medians and ratios describe the scheduled variant only, so
    // that an on-demand full run (all cores loaded) does not skew their series.
    if (run.full) return;
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
