#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::daemon {

// Helpers for Collectables that build their families at scrape time.
prometheus::MetricFamily GaugeFamily(std::string name, std::string help, double value,
                                     std::vector<prometheus::ClientMetric::Label> labels = {});
prometheus::MetricFamily CounterFamily(std::string name, std::string help, double value);

// process_* as the Prometheus client libraries export them, read from
// <proc>/self at scrape time.
class ProcessCollector final : public prometheus::Collectable {
 public:
  explicit ProcessCollector(probes::SystemRoots roots);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  probes::SystemRoots roots_;
  long ticks_per_second_;
  long page_size_;
};

// hostperf_host_*: CPU model, topology, LLC, governor, throttle counters,
// steal time. Re-read at most every `refresh` so that a scrape of a
// many-core host does not walk sysfs each time.
class HostFactsCollector final : public prometheus::Collectable {
 public:
  HostFactsCollector(probes::SystemRoots roots, std::chrono::nanoseconds refresh);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  probes::SystemRoots roots_;
  std::chrono::nanoseconds refresh_;
  mutable std::mutex mu_;
  mutable std::optional<probes::HostFacts> facts_;
  mutable std::chrono::steady_clock::time_point read_at_;
};

}  // namespace hostperf::daemon
