#include "hostperf/daemon/framework_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../metrics_test_util.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {
namespace {

using namespace std::chrono_literals;
using probes::ProbeOutcome;
using test_util::SampleSum;
using test_util::SampleValue;

// The reason labels of `family`'s samples for `probe`.
std::set<std::string> Reasons(const prometheus::Registry& registry, const std::string& family,
                              const std::string& probe) {
  std::set<std::string> reasons;
  for (const auto& collected : registry.Collect()) {
    if (collected.name != family) continue;
    for (const auto& metric : collected.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& label : metric.label) labels[label.name] = label.value;
      if (labels["probe"] == probe) reasons.insert(labels["reason"]);
    }
  }
  return reasons;
}

// Declares every probe the default config enables, as the scheduler does.
std::vector<std::string> DeclareEnabled(FrameworkMetrics& metrics) {
  const config::Config config = probes::DefaultConfig();
  std::vector<std::string> enabled;
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    const auto& schedule = config.Section(module->name).schedule;
    if (!schedule.enabled) continue;
    metrics.Declare(module->name, schedule.interval);
    enabled.emplace_back(module->name);
  }
  return enabled;
}

TEST(FrameworkMetricsTest, EveryKnownReasonExistsAtZeroFromDeclaration) {
  prometheus::Registry registry;
  FrameworkMetrics metrics(registry);
  const auto enabled = DeclareEnabled(metrics);
  ASSERT_FALSE(enabled.empty());
  for (const std::string& probe : enabled) {
    SCOPED_TRACE(probe);
    const probes::ProbeModule* module = probes::FindProbe(probe);
    ASSERT_NE(module, nullptr);
    std::set<std::string> failures(module->failure_reasons.begin(), module->failure_reasons.end());
    for (const auto reason : FrameworkMetrics::FrameworkFailureReasons()) failures.emplace(reason);
    std::set<std::string> skips(module->skip_reasons.begin(), module->skip_reasons.end());
    for (const auto reason : FrameworkMetrics::FrameworkSkipReasons()) skips.emplace(reason);

    EXPECT_EQ(Reasons(registry, "hostperf_probe_failures_total", probe), failures);
    EXPECT_EQ(Reasons(registry, "hostperf_probe_skipped_total", probe), skips);
    // All at 0.
    EXPECT_EQ(SampleSum(registry.Collect(), "hostperf_probe_failures_total", {{"probe", probe}}).sum, 0.0);
    EXPECT_EQ(SampleSum(registry.Collect(), "hostperf_probe_skipped_total", {{"probe", probe}}).sum, 0.0);
  }
  // The framework's own, whatever the probe.
  EXPECT_THAT(Reasons(registry, "hostperf_probe_failures_total", enabled.front()),
              ::testing::IsSupersetOf({"timeout", "internal_error"}));
  EXPECT_THAT(Reasons(registry, "hostperf_probe_skipped_total", enabled.front()),
              ::testing::IsSupersetOf({"full_run_active", "busy", "budget_exhausted", "host_busy"}));
}

TEST(FrameworkMetricsTest, ModuleReasonsAreDeclaredForTheirProbeOnly) {
  prometheus::Registry registry;
  FrameworkMetrics metrics(registry);
  const auto enabled = DeclareEnabled(metrics);
  // A module's own reason is not made up for another probe that does not
  // declare it.
  const auto declares = [](const std::string& probe, std::string_view reason) {
    const auto& reasons = probes::FindProbe(probe)->failure_reasons;
    return std::find(reasons.begin(), reasons.end(), reason) != reasons.end();
  };
  int checked = 0;
  for (const std::string& owner : enabled) {
    for (const std::string_view reason : probes::FindProbe(owner)->failure_reasons) {
      EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_failures_total",
                            {{"probe", owner}, {"reason", std::string(reason)}}),
                0.0)
          << owner << " " << reason;
      for (const std::string& other : enabled) {
        if (declares(other, reason)) continue;
        EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_failures_total",
                              {{"probe", other}, {"reason", std::string(reason)}}),
                  std::nullopt)
            << other << " " << reason;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0) << "no probe declares a reason another does not";
}

TEST(FrameworkMetricsTest, DeclaringAgainKeepsCounts) {
  prometheus::Registry registry;
  FrameworkMetrics metrics(registry);
  metrics.Declare("disk", 15min);
  metrics.RecordRun("disk", ProbeOutcome::Failure("io_error", "EIO"), 1s, 1000);
  metrics.RecordSkip("disk", "no_space");
  metrics.Declare("disk", 30min);  // a reload
  EXPECT_EQ(
      SampleValue(registry.Collect(), "hostperf_probe_failures_total", {{"probe", "disk"}, {"reason", "io_error"}}),
      1.0);
  EXPECT_EQ(
      SampleValue(registry.Collect(), "hostperf_probe_skipped_total", {{"probe", "disk"}, {"reason", "no_space"}}),
      1.0);
}

TEST(FrameworkMetricsTest, UndeclaredReasonStillCountsFromFirstUse) {
  prometheus::Registry registry;
  FrameworkMetrics metrics(registry);
  metrics.Declare("cpu", 10min);
  EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "odd"}}),
            std::nullopt);
  metrics.RecordRun("cpu", ProbeOutcome::Failure("odd", "not declared"), 1s, 1000);
  metrics.RecordSkip("cpu", "strange");
  EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "odd"}}),
            1.0);
  EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "strange"}}),
            1.0);
  // A declared one counts in its zero series.
  metrics.RecordRun("cpu", ProbeOutcome::Failure("checksum_mismatch", "wrong"), 1s, 1000);
  EXPECT_EQ(SampleValue(registry.Collect(), "hostperf_probe_failures_total",
                        {{"probe", "cpu"}, {"reason", "checksum_mismatch"}}),
            1.0);
  EXPECT_EQ(SampleSum(registry.Collect(), "hostperf_probe_failures_total", {{"probe", "cpu"}}).sum, 2.0);
}

TEST(FrameworkMetricsTest, ProbeWithoutAModuleGetsTheFrameworkReasons) {
  prometheus::Registry registry;
  FrameworkMetrics metrics(registry);
  metrics.Declare("not_a_module", 1min);
  std::set<std::string> expected;
  for (const auto reason : FrameworkMetrics::FrameworkFailureReasons()) expected.emplace(reason);
  EXPECT_EQ(Reasons(registry, "hostperf_probe_failures_total", "not_a_module"), expected);
}

}  // namespace
}  // namespace hostperf::daemon
