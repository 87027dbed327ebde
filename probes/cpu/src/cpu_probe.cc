#include "hostperf/probes/cpu/cpu_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "hostperf/probes/build_info.h"
#include "hostperf/probes/cpu/baseline_store.h"
#include "hostperf/probes/cpu/cpu_probe_seams.h"
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

std::string StopReason(const RunContext& ctx) { return ctx.Cancelled() ? "cancelled" : "timeout"; }

// What one run measured, for the JSON result and the metrics.
struct RunData {
  RunMode mode = RunMode::kScheduled;
  WorkloadResult workload;
  std::optional<ThrottleResult> throttle;
  Baseline baseline;
  std::uint32_t samples_per_load = 0;

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

json OptionalJson(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

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
  };
}

class CpuProbe final : public Probe {
 public:
  CpuProbe(const ProbeDeps& deps, CpuProbeSeams seams)
      : seams_(std::move(seams)),
        roots_(deps.roots),
        // The CLI may run without an exporter; metrics then go nowhere.
        own_registry_(deps.registry ? nullptr : std::make_shared<prometheus::Registry>()),
        registry_(deps.registry ? *deps.registry : *own_registry_),
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
                                 .Add({})) {
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

    // Only scheduled runs are alike enough to calibrate on.
    if (!full) {
      run.baseline =
          baselines_.AddCalibrationSample(build_info::kFingerprint, Seconds(run.workload.cpu_time).count(), config);
    }
    Publish(run);
    return ProbeOutcome::Success(ToJson(run, config, cpu_model_, baselines_.path()));
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
  }

  CpuProbeSeams seams_;
  SystemRoots roots_;
  std::shared_ptr<prometheus::Registry> own_registry_;
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
};

}  // namespace

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps, CpuProbeSeams seams) {
  return std::make_unique<CpuProbe>(deps, std::move(seams));
}

std::unique_ptr<Probe> CreateCpuProbe(const ProbeDeps& deps) { return CreateCpuProbe(deps, CpuProbeSeams{}); }

}  // namespace hostperf::probes::cpu
