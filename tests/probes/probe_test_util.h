#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>

#include <algorithm>
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
