#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/config/config.h"
#include "hostperf/daemon/framework_metrics.h"
#include "hostperf/daemon/impact_gate.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {

// What the landing page and the run manager see of a probe.
struct ProbeStatus {
  std::string name;
  bool enabled = false;
  std::chrono::nanoseconds interval{0};
  std::chrono::nanoseconds timeout{0};
  bool running = false;
  std::chrono::nanoseconds due_in{0};  // until the next scheduled run
  std::optional<double> last_run_unix_seconds;
  std::chrono::nanoseconds last_duration{0};
  std::optional<probes::ProbeOutcome> last_outcome;
};

// Owns intervals, first-run splay, jitter, timeouts, one-probe-at-a-time and
// skip reasons. Probes only measure. Time comes from the injected Clock for
// every scheduling decision, so tests drive it with a fake clock.
class Scheduler {
 public:
  // `probes` (and `gate`, when given) must outlive the scheduler. `seed`
  // feeds the splay and jitter. Without a gate, runs are not budgeted.
  Scheduler(std::vector<probes::Probe*> probes, const Clock& clock, FrameworkMetrics& metrics, std::uint64_t seed,
            ImpactGate* gate = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Installs a (new) config: enables, disables and re-times probes. A probe
  // whose interval is unchanged keeps its place in the schedule.
  void ApplyConfig(std::shared_ptr<const config::Config> config);

  // Runs every probe that is due now, one after another, and returns when
  // the next one is due (time_point::max() when none is enabled).
  std::chrono::steady_clock::time_point RunDue();

  // The daemon's loop: RunDue, then wait until the next due time, a config
  // change or RequestStop(). `heartbeat` is called at least every
  // `heartbeat_period`, also while a probe runs, but no longer once a probe
  // overruns its timeout by `hang_grace`: a hung scheduler must be noticed
  // (systemd's watchdog). Returns false if a probe thread had to be abandoned.
  bool Run(const std::function<void()>& heartbeat, std::chrono::nanoseconds heartbeat_period,
           std::chrono::nanoseconds hang_grace = std::chrono::seconds(30));

  // Cancels a running probe and makes Run() return.
  void RequestStop();

  // For full runs: cancels the in-flight scheduled run (counted as skipped,
  // reason "full_run_active"), waits until it has ended, and skips due runs
  // until Resume().
  void Pause();
  void Resume();
  bool paused() const;

  std::vector<ProbeStatus> Snapshot() const;

 private:
  struct Entry {
    probes::Probe* probe;
    config::ProbeSchedule schedule;
    std::chrono::steady_clock::time_point next_due;
    std::optional<double> last_run_unix_seconds;
    std::chrono::nanoseconds last_duration{0};
    std::optional<probes::ProbeOutcome> last_outcome;
    // When the last run with a result ended, else when the schedule was enabled: skips
    // for longer than the interval after it mark the schedule suspended.
    std::chrono::steady_clock::time_point ran_or_enabled{};
  };
  // A scheduled run did not happen: counts the skip and, once runs have
  // been skipped for longer than the interval, marks the schedule suspended
  // (hostperf_probe_schedule_suspended 1, hostperf_probe_success 0).
  void Skipped(Entry& entry, std::string_view reason, std::chrono::steady_clock::time_point now);

  std::chrono::nanoseconds JitteredInterval(std::chrono::nanoseconds interval);  // needs mu_
  std::chrono::nanoseconds FirstRunDelay(std::chrono::nanoseconds interval);     // needs mu_
  // Runs one probe on a worker thread, heartbeating while it runs.
  probes::ProbeOutcome Execute(probes::Probe& probe, const config::ProbeSchedule& schedule,
                               std::shared_ptr<const config::Config> config);

  const Clock& clock_;
  FrameworkMetrics& metrics_;
  ImpactGate* gate_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> entries_;
  std::shared_ptr<const config::Config> config_;
  std::mt19937_64 random_;
  bool stop_requested_ = false;
  bool paused_ = false;
  bool running_ = false;
  std::string running_probe_;
  bool abandoned_ = false;
  bool wake_ = false;  // config change or resume: recompute the wait
  std::atomic<bool> cancel_{false};

  // Set only for the duration of Run(); Execute uses them while waiting.
  std::function<void()> heartbeat_;
  std::chrono::nanoseconds heartbeat_period_{std::chrono::seconds(1)};
  std::chrono::nanoseconds hang_grace_{std::chrono::seconds(30)};
};

}  // namespace hostperf::daemon
