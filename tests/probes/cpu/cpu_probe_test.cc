#include "hostperf/probes/cpu/cpu_probe.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "hostperf/probes/build_info.h"
#include "hostperf/probes/cpu/cpu_probe_seams.h"
#include "hostperf/probes/cpu/module.h"
#include "hostperf/probes/cpu/workload.h"
#include "probe_test_util.h"
#include "temp_dir.h"

namespace hostperf::probes::cpu {
namespace {

using namespace std::chrono_literals;
using prometheus::ClientMetric;
using prometheus::MetricFamily;

using test_support::FindSeries;

class CpuProbeTest : public ::testing::Test {
 protected:
  CpuProbeTest() {
    auto config = std::make_shared<config::Config>(DefaultConfig());
    auto& cpu = config->EditSettings<CpuProbeConfig>();
    cpu.throttle_samples = 5;
    cpu.high_load_spin = 200us;
    cpu.low_load_gap = 1ms;
    cpu.calibration_runs = 2;
    config_ = config;
  }

  std::unique_ptr<Probe> MakeProbe() {
    ProbeDeps deps;
    deps.registry = registry_.get();
    deps.state_directory = temp_.path() / "state";
    return CreateCpuProbe(deps);
  }

  ScheduledContext Context() const {
    ScheduledContext ctx = MakeScheduledContext(*config_, "cpu");
    ctx.deadline = std::chrono::steady_clock::now() + 60s;
    return ctx;
  }
  FullRunContext FullContext() const {
    FullRunContext ctx = MakeFullRunContext(*config_, "cpu");
    ctx.deadline = std::chrono::steady_clock::now() + 60s;
    return ctx;
  }

  double Gauge(const std::string& name, const std::vector<ClientMetric::Label>& labels = {}) {
    const auto series = FindSeries(registry_->Collect(), name, labels);
    EXPECT_TRUE(series.has_value()) << name;
    return series ? series->gauge.value : -1;
  }

  test_support::TempDir temp_;
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::shared_ptr<config::Config> config_;
};

TEST_F(CpuProbeTest, NameAndSchedule) {
  auto probe = MakeProbe();
  EXPECT_EQ(probe->Name(), "cpu");
  config::Config config = DefaultConfig();
  config.Section("cpu").schedule.interval = 7min;
  EXPECT_EQ(MakeScheduledContext(config, "cpu").schedule.interval, 7min);
  const auto all = AllProbes();
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const auto* m) { return m->name == "cpu"; }));
}

TEST_F(CpuProbeTest, ScheduledRunSucceedsAndExportsMetrics) {
  auto probe = MakeProbe();
  const ProbeOutcome outcome = probe->RunScheduled(Context());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;

  const auto& result = outcome.result;
  EXPECT_EQ(result["mode"], "scheduled");
  EXPECT_EQ(result["fingerprint"], build_info::kFingerprint);
  EXPECT_EQ(result["compiler"], build_info::kCompiler);
  EXPECT_EQ(result["compiler_version"], build_info::kCompilerVersion);
  EXPECT_EQ(result["build_flags"], build_info::kBuildFlags);
  EXPECT_EQ(result["chunks"], kScheduledChunks);
  EXPECT_EQ(result["checksum_ok"], true);
  EXPECT_GT(result["cpu_seconds"].get<double>(), 0);
  EXPECT_GT(result["real_seconds"].get<double>(), 0);
  EXPECT_TRUE(result["expected_seconds"].is_null());
  EXPECT_TRUE(result["baseline_ratio"].is_null());
  EXPECT_EQ(result["calibration_samples"], 1);
  EXPECT_EQ(result["calibration_runs"], 2);
  EXPECT_EQ(result["samples_per_load"], 5);
  EXPECT_GT(result["high_load_median_seconds"].get<double>(), 0);
  EXPECT_GT(result["low_load_median_seconds"].get<double>(), 0);
  EXPECT_GT(result["throttle_ratio"].get<double>(), 0);

  const double cpu = Gauge("hostperf_cpu_workload_cpu_seconds", {{"mode", "scheduled"}});
  EXPECT_DOUBLE_EQ(cpu, result["cpu_seconds"].get<double>());
  EXPECT_LT(cpu, 10);  // ~50 ms here; generous for sanitizers and loaded machines
  EXPECT_GT(Gauge("hostperf_cpu_workload_real_seconds", {{"mode", "scheduled"}}), 0);
  EXPECT_DOUBLE_EQ(Gauge("hostperf_cpu_task_median_seconds", {{"load", "high"}}),
                   result["high_load_median_seconds"].get<double>());
  EXPECT_DOUBLE_EQ(Gauge("hostperf_cpu_throttle_ratio"), result["throttle_ratio"].get<double>());
  EXPECT_EQ(Gauge("hostperf_cpu_baseline_calibration_samples"), 1);

  const auto families = registry_->Collect();
  for (const char* load : {"high", "low"}) {
    const auto histogram = FindSeries(families, "hostperf_cpu_task_seconds", {{"load", load}});
    ASSERT_TRUE(histogram.has_value()) << load;
    EXPECT_EQ(histogram->histogram.sample_count, 5u);
    EXPECT_GT(histogram->histogram.sample_sum, 0);
  }
  const auto errors = FindSeries(families, "hostperf_cpu_workload_errors_total");
  ASSERT_TRUE(errors.has_value());
  EXPECT_EQ(errors->counter.value, 0);
  // No baseline yet, and no full run: those series do not exist.
  EXPECT_FALSE(FindSeries(families, "hostperf_cpu_baseline_ratio").has_value());
  EXPECT_FALSE(
      FindSeries(families, "hostperf_cpu_baseline_seconds", {{"fingerprint", build_info::kFingerprint}}).has_value());
  EXPECT_FALSE(FindSeries(families, "hostperf_cpu_workload_cpu_seconds", {{"mode", "full"}}).has_value());
}

TEST_F(CpuProbeTest, BaselineCalibratesThenRatiosAreExported) {
  auto probe = MakeProbe();
  ASSERT_EQ(probe->RunScheduled(Context()).status, ProbeOutcome::Status::kSuccess);
  const ProbeOutcome second = probe->RunScheduled(Context());
  ASSERT_EQ(second.status, ProbeOutcome::Status::kSuccess) << second.message;
  ASSERT_TRUE(second.result["expected_seconds"].is_number());
  EXPECT_EQ(second.result["baseline_source"], "calibrated");
  const double baseline = second.result["expected_seconds"].get<double>();
  EXPECT_DOUBLE_EQ(Gauge("hostperf_cpu_baseline_seconds", {{"fingerprint", build_info::kFingerprint}}), baseline);
  EXPECT_DOUBLE_EQ(Gauge("hostperf_cpu_baseline_ratio"), second.result["cpu_seconds"].get<double>() / baseline);
  EXPECT_DOUBLE_EQ(second.result["baseline_ratio"].get<double>(),
                   second.result["cpu_seconds"].get<double>() / baseline);
  EXPECT_EQ(Gauge("hostperf_cpu_baseline_calibration_samples"), 2);

  // A restarted daemon (new probe, new registry) finds the persisted baseline.
  registry_ = std::make_shared<prometheus::Registry>();
  auto restarted = MakeProbe();
  EXPECT_EQ(Gauge("hostperf_cpu_baseline_calibration_samples"), 2);
  const ProbeOutcome third = restarted->RunScheduled(Context());
  EXPECT_DOUBLE_EQ(third.result["expected_seconds"].get<double>(), baseline);
}

TEST_F(CpuProbeTest, ConfigBaselineIsUsedFromTheFirstRun) {
  auto config = std::make_shared<config::Config>(*config_);
  config->EditSettings<CpuProbeConfig>().baselines[build_info::kFingerprint] = 50ms;
  config_ = config;
  auto probe = MakeProbe();
  const ProbeOutcome outcome = probe->RunScheduled(Context());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_DOUBLE_EQ(outcome.result["expected_seconds"].get<double>(), 0.050);
  EXPECT_EQ(outcome.result["baseline_source"], "config");
  EXPECT_DOUBLE_EQ(Gauge("hostperf_cpu_baseline_seconds", {{"fingerprint", build_info::kFingerprint}}), 0.050);
}

// A reference machine's --json carries the entry an operator copies into
// probes.cpu.reference_times; on another host, entries for this binary come
// back scaled to the run's length, other binaries' are only counted.
TEST_F(CpuProbeTest, ReferenceTimesRoundTripThroughTheConfig) {
  auto probe = MakeProbe();
  const ProbeOutcome reference_run = probe->RunScheduled(Context());
  ASSERT_EQ(reference_run.status, ProbeOutcome::Status::kSuccess) << reference_run.message;
  const nlohmann::json& entry = reference_run.result["reference_time"];
  ASSERT_TRUE(entry.is_object()) << reference_run.result.dump();
  EXPECT_EQ(entry["fingerprint"], build_info::kFingerprint);
  EXPECT_EQ(entry["cpu"], reference_run.result["cpu_model"]);
  // Normalised to a full run: the scheduled workload is kScheduledChunks of kFullChunks.
  EXPECT_DOUBLE_EQ(entry["seconds"].get<double>(), reference_run.result["cpu_seconds"].get<double>() *
                                                       static_cast<double>(kFullChunks) / kScheduledChunks);

  auto config = std::make_shared<config::Config>(*config_);
  auto& references = config->EditSettings<CpuProbeConfig>().reference_times;
  references.push_back({"Reference CPU", entry["fingerprint"].get<std::string>(), entry["seconds"].get<double>()});
  references.push_back({"Other binary's CPU", "ffffffffffffffff", 1.0});
  config_ = config;
  const ProbeOutcome outcome = probe->RunScheduled(Context());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  const nlohmann::json& matching = outcome.result["reference_times"]["matching"];
  ASSERT_EQ(matching.size(), 1u) << outcome.result.dump();
  EXPECT_EQ(matching[0]["cpu"], "Reference CPU");
  EXPECT_DOUBLE_EQ(matching[0]["expected_seconds"].get<double>(),
                   entry["seconds"].get<double>() * kScheduledChunks / static_cast<double>(kFullChunks));
  EXPECT_DOUBLE_EQ(matching[0]["ratio"].get<double>(),
                   outcome.result["cpu_seconds"].get<double>() / matching[0]["expected_seconds"].get<double>());
  EXPECT_EQ(outcome.result["reference_times"]["other_binaries"], 1);
  const std::string report = FormatVcpuperfReport(outcome.result, false);
  EXPECT_NE(report.find("Expected time on Reference CPU: ~"), std::string::npos) << report;
  EXPECT_EQ(report.find("Other binary's CPU"), std::string::npos) << report;
}

TEST_F(CpuProbeTest, WrongChecksumIsACountedCpuError) {
  ProbeDeps deps;
  deps.registry = registry_.get();
  deps.state_directory = temp_.path() / "state";
  CpuProbeSeams seams;
  seams.run_workload = [](std::uint64_t chunks, const RunContext& ctx) {
    WorkloadResult result = RunWorkload(chunks, ctx);
    result.checksum ^= 1;  // one flipped bit, as a faulty core would produce
    result.valid = false;
    return result;
  };
  auto probe = CreateCpuProbe(deps, std::move(seams));
  const ProbeOutcome outcome = probe->RunScheduled(Context());
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "checksum_mismatch");
  EXPECT_EQ(outcome.result["checksum_ok"], false);
  const auto families = registry_->Collect();
  EXPECT_EQ(FindSeries(families, "hostperf_cpu_workload_errors_total")->counter.value, 1);
  EXPECT_FALSE(FindSeries(families, "hostperf_cpu_workload_cpu_seconds", {{"mode", "scheduled"}}).has_value());
  // A faulty run never feeds the baseline.
  EXPECT_EQ(Gauge("hostperf_cpu_baseline_calibration_samples"), 0);
}

TEST_F(CpuProbeTest, CancelledRunFailsAndLeavesGaugesAlone) {
  auto probe = MakeProbe();
  std::atomic<bool> cancel{true};
  ScheduledContext ctx = Context();
  ctx.cancel = &cancel;
  const ProbeOutcome outcome = probe->RunScheduled(ctx);
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "cancelled");
  const auto families = registry_->Collect();
  EXPECT_FALSE(FindSeries(families, "hostperf_cpu_workload_cpu_seconds", {{"mode", "scheduled"}}).has_value());
  EXPECT_FALSE(FindSeries(families, "hostperf_cpu_throttle_ratio").has_value());
  EXPECT_EQ(FindSeries(families, "hostperf_cpu_task_seconds", {{"load", "low"}})->histogram.sample_count, 0u);
}

TEST_F(CpuProbeTest, FullRunPastItsDeadlineTimesOut) {
  auto probe = MakeProbe();
  FullRunContext ctx = FullContext();
  ctx.deadline = std::chrono::steady_clock::now() + 100ms;
  std::vector<std::string> phases;
  ctx.on_progress = [&](const Progress& progress) { phases.push_back(progress.current_test); };
  const ProbeOutcome outcome = probe->RunFull(ctx);
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "timeout");
  EXPECT_EQ(outcome.result["mode"], "full");
  EXPECT_EQ(outcome.result["chunks"], kFullChunks);
  EXPECT_EQ(phases, std::vector<std::string>{"workload"});
}

TEST_F(CpuProbeTest, WorksWithoutARegistryOrStateDirectory) {
  auto probe = CreateCpuProbe(ProbeDeps{});
  // The CLI without a config file: built-in defaults.
  ScheduledContext ctx = MakeScheduledContext(DefaultConfig(), "cpu");
  EXPECT_EQ(probe->RunScheduled(ctx).status, ProbeOutcome::Status::kSuccess);
}

TEST_F(CpuProbeTest, ReportFromARealRun) {
  auto probe = MakeProbe();
  const ProbeOutcome outcome = probe->RunScheduled(Context());
  const std::string report = FormatVcpuperfReport(outcome.result, false);
  EXPECT_NE(report.find("no baseline yet for this binary in " +
                        (temp_.path() / "state" / "cpu_baselines.json").string() + " (calibrating: 1/2 runs)"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("  CPU Time: "), std::string::npos);
}

}  // namespace
}  // namespace hostperf::probes::cpu
