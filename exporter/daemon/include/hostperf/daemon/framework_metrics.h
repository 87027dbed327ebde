#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <span>
#include <string>
#include <string_view>

#include "hostperf/probes/probe.h"

namespace hostperf::daemon {

// hostperf_probe_* families (docs/metrics.md, "Framework"). The framework,
// not the probe, times runs and records success, failures and skips.
class FrameworkMetrics {
 public:
  explicit FrameworkMetrics(prometheus::Registry& registry);

  // Makes the probe's series exist from start-up (success 0, runs 0, and
  // failures and skips 0 for every known reason: the framework's and those
  // the probe's module declares) so that absent(), staleness rules and
  // increase() see them before the first run or the first failure.
  void Declare(std::string_view probe, std::chrono::nanoseconds interval);
  void RecordRun(std::string_view probe, const probes::ProbeOutcome& outcome, std::chrono::nanoseconds duration,
                 double finished_unix_seconds);
  void RecordSkip(std::string_view probe, std::string_view reason);
  // Scheduled runs have been skipped for longer than the interval (the
  // latest for `reason`): suspended 1 and success 0 until the next run.
  void RecordSuspended(std::string_view probe, std::string_view reason);

  // The reasons the framework itself records for any probe.
  static std::span<const std::string_view> FrameworkFailureReasons();
  static std::span<const std::string_view> FrameworkSkipReasons();

 private:
  prometheus::Family<prometheus::Gauge>& success_;
  prometheus::Family<prometheus::Gauge>& duration_;
  prometheus::Family<prometheus::Gauge>& last_run_;
  prometheus::Family<prometheus::Gauge>& last_success_;
  prometheus::Family<prometheus::Gauge>& interval_;
  prometheus::Family<prometheus::Counter>& runs_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Counter>& skipped_;
  prometheus::Family<prometheus::Gauge>& suspended_;
};

}  // namespace hostperf::daemon
