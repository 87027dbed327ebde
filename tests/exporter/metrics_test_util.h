#pragma once

// Helpers shared by the exporter tests to look up samples in collected
// metric families.

#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hostperf::test_util {

// Whether `metric` carries every pair of `labels` (a subset match).
inline bool LabelsInclude(const prometheus::ClientMetric& metric, const std::map<std::string, std::string>& labels) {
  for (const auto& [key, value] : labels) {
    bool found = false;
    for (const prometheus::ClientMetric::Label& label : metric.label) {
      if (label.name == key && label.value == value) found = true;
    }
    if (!found) return false;
  }
  return true;
}

// The value of the first sample of family `name` whose labels include every
// pair of `labels` (a subset match). Counters, gauges and untyped only.
inline std::optional<double> SampleValue(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                                         const std::map<std::string, std::string>& labels = {}) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      if (!LabelsInclude(metric, labels)) continue;
      switch (family.type) {
        case prometheus::MetricType::Counter:
          return metric.counter.value;
        case prometheus::MetricType::Gauge:
          return metric.gauge.value;
        case prometheus::MetricType::Untyped:
          return metric.untyped.value;
        default:
          return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

// The sum of every sample of family `name` whose labels include `labels`
// (counters and gauges), and how many samples matched.
struct SampleTotal {
  double sum = 0;
  std::size_t samples = 0;
};
inline SampleTotal SampleSum(const std::vector<prometheus::MetricFamily>& families, const std::string& name,
                             const std::map<std::string, std::string>& labels = {}) {
  SampleTotal total;
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      if (!LabelsInclude(metric, labels)) continue;
      total.sum += family.type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value;
      ++total.samples;
    }
  }
  return total;
}

// The labels of the first sample of family `name`, as a map.
inline std::optional<std::map<std::string, std::string>> SampleLabels(
    const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name != name || family.metric.empty()) continue;
    std::map<std::string, std::string> labels;
    for (const prometheus::ClientMetric::Label& label : family.metric.front().label) labels[label.name] = label.value;
    return labels;
  }
  return std::nullopt;
}

inline const prometheus::MetricFamily* FindFamily(const std::vector<prometheus::MetricFamily>& families,
                                                  const std::string& name) {
  for (const prometheus::MetricFamily& family : families) {
    if (family.name == name) return &family;
  }
  return nullptr;
}

}  // namespace hostperf::test_util
