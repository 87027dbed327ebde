#include "hostperf/daemon/framework_metrics.h"

#include <string>

namespace hostperf::daemon {
namespace {

prometheus::Labels ProbeLabel(std::string_view probe) { return {{"probe", std::string(probe)}}; }

prometheus::Labels ReasonLabels(std::string_view probe, std::string_view reason) {
  return {{"probe", std::string(probe)}, {"reason", std::string(reason)}};
}

// Scheduler: a run past its timeout; the Probe: an exception at the probe
// boundary.
constexpr std::string_view kFailureReasons[] = {"timeout", "internal_error"};
// Scheduler: paused or cancelled for a full run; the Probe: a run already in
// progress; impact gate: the CPU budget spent, or the host under pressure.
constexpr std::string_view kSkipReasons[] = {"full_run_active", "busy", "budget_exhausted", "host_busy"};

}  // namespace

FrameworkMetrics::FrameworkMetrics(prometheus::Registry& registry)
    : success_(prometheus::BuildGauge()
                   .Name("hostperf_probe_success")
                   .Help("1 if the probe's last run succeeded, else 0.")
                   .Register(registry)),
      duration_(prometheus::BuildGauge()
                    .Name("hostperf_probe_duration_seconds")
                    .Help("Wall-clock duration of the probe's last run.")
                    .Register(registry)),
      last_run_(prometheus::BuildGauge()
                    .Name("hostperf_probe_last_run_timestamp_seconds")
                    .Help("Unix time at which the probe's last run finished.")
                    .Register(registry)),
      last_success_(prometheus::BuildGauge()
                        .Name("hostperf_probe_last_success_timestamp_seconds")
                        .Help("Unix time at which the probe last finished successfully (0: never).")
                        .Register(registry)),
      interval_(prometheus::BuildGauge()
                    .Name("hostperf_probe_interval_seconds")
                    .Help("Configured interval between the probe's scheduled runs.")
                    .Register(registry)),
      runs_(prometheus::BuildCounter()
                .Name("hostperf_probe_runs_total")
                .Help("Runs of the probe, scheduled and full, whatever their outcome.")
                .Register(registry)),
      failures_(prometheus::BuildCounter()
                    .Name("hostperf_probe_failures_total")
                    .Help("Failed runs of the probe by reason.")
                    .Register(registry)),
      skipped_(prometheus::BuildCounter()
                   .Name("hostperf_probe_skipped_total")
                   .Help("Scheduled runs that did not happen, by reason.")
                   .Register(registry)),
      suspended_(prometheus::BuildGauge()
                     .Name("hostperf_probe_schedule_suspended")
                     .Help("1 while the probe's scheduled runs have been skipped (any reason) for longer than its "
                           "interval; hostperf_probe_success is then 0. Back to 0 at the next run.")
                     .Register(registry)) {}

void FrameworkMetrics::Declare(std::string_view probe, std::chrono::nanoseconds interval) {
  const auto labels = ProbeLabel(probe);
  success_.Add(labels);
  duration_.Add(labels);
  last_run_.Add(labels);
  last_success_.Add(labels);
  runs_.Add(labels);
  suspended_.Add(labels);
  interval_.Add(labels).Set(std::chrono::duration<double>(interval).count());
  // Add() keeps an existing series' count: declaring again at a reload is harmless.
  for (const std::string_view reason : kFailureReasons) failures_.Add(ReasonLabels(probe, reason));
  for (const std::string_view reason : kSkipReasons) skipped_.Add(ReasonLabels(probe, reason));
  if (const probes::ProbeModule* module = probes::FindProbe(probe)) {
    for (const std::string_view reason : module->failure_reasons) failures_.Add(ReasonLabels(probe, reason));
    for (const std::string_view reason : module->skip_reasons) skipped_.Add(ReasonLabels(probe, reason));
  }
}

void FrameworkMetrics::RecordRun(std::string_view probe, const probes::ProbeOutcome& outcome,
                                 std::chrono::nanoseconds duration, double finished_unix_seconds) {
  const auto labels = ProbeLabel(probe);
  const bool ok = outcome.status == probes::ProbeOutcome::Status::kSuccess;
  runs_.Add(labels).Increment();
  success_.Add(labels).Set(ok ? 1 : 0);
  suspended_.Add(labels).Set(0);
  duration_.Add(labels).Set(std::chrono::duration<double>(duration).count());
  last_run_.Add(labels).Set(finished_unix_seconds);
  if (ok) {
    last_success_.Add(labels).Set(finished_unix_seconds);
  } else {
    failures_.Add(ReasonLabels(probe, outcome.reason.empty() ? "unknown" : outcome.reason)).Increment();
  }
}

void FrameworkMetrics::RecordSkip(std::string_view probe, std::string_view reason) {
  skipped_.Add(ReasonLabels(probe, reason)).Increment();
}

void FrameworkMetrics::RecordSuspended(std::string_view probe, std::string_view /*reason*/) {
  const auto labels = ProbeLabel(probe);
  suspended_.Add(labels).Set(1);
  success_.Add(labels).Set(0);  // the last result is stale: no longer a success
}

std::span<const std::string_view> FrameworkMetrics::FrameworkFailureReasons() { return kFailureReasons; }
std::span<const std::string_view> FrameworkMetrics::FrameworkSkipReasons() { return kSkipReasons; }

}  // namespace hostperf::daemon
