#pragma once

#include <gtest/gtest.h>
#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::test_support {

// A run of `probe` as the full-run path makes it: `options` (JSON, as the
// run API or CLI give them) parsed once by the probe's module; bad options
// fail with bad_options and nothing runs.
inline ProbeOutcome RunParsed(Probe& probe, FullRunContext context, const nlohmann::json& options) {
  auto parsed = ParseProbeOptions(probe.Name(), options);
  if (!parsed) return ProbeOutcome::Failure(parsed.failure());
  context.options = std::move(parsed).value();
  return probe.RunFull(context);
}

// The contexts of a test run of `probe` under `config` that must end within
// `timeout`; the full one carries `options` parsed as the run API parses them
// (a parse failure fails the test and leaves the defaults).
inline ScheduledContext ScheduledWithin(const config::Config& config, std::string_view probe,
                                        std::chrono::steady_clock::duration timeout) {
  ScheduledContext context = MakeScheduledContext(config, probe);
  context.deadline = std::chrono::steady_clock::now() + timeout;
  return context;
}
inline FullRunContext FullWithin(const config::Config& config, std::string_view probe,
                                 std::chrono::steady_clock::duration timeout, const nlohmann::json& options) {
  FullRunContext context = MakeFullRunContext(config, probe);
  context.deadline = std::chrono::steady_clock::now() + timeout;
  auto parsed = ParseProbeOptions(probe, options);
  EXPECT_TRUE(parsed.ok()) << parsed.error();
  if (parsed) context.options = std::move(parsed).value();
  return context;
}

// One series of a registry snapshot: family `name`, labels exactly `labels`
// (in the registry's order: by name); nullopt when absent.
inline std::optional<prometheus::ClientMetric> FindSeries(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name,
    const std::vector<prometheus::ClientMetric::Label>& labels = {}) {
  const auto family =
      std::find_if(families.begin(), families.end(), [&](const prometheus::MetricFamily& f) { return f.name == name; });
  if (family == families.end()) return std::nullopt;
  for (const prometheus::ClientMetric& metric : family->metric) {
    if (metric.label == labels) return metric;
  }
  return std::nullopt;
}

}  // namespace hostperf::probes::test_support
