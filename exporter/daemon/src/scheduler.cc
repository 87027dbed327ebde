#include "hostperf/daemon/scheduler.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <future>
#include <thread>
#include <utility>

#include "hostperf/probes/probe_cpu.h"

namespace hostperf::daemon {
namespace {

using std::chrono::nanoseconds;
using std::chrono::steady_clock;
using Status = probes::ProbeOutcome::Status;

constexpr std::string_view kFullRunActive = "full_run_active";
// How long a probe may take to honour cancellation at shutdown.
constexpr std::chrono::seconds kShutdownGrace(5);

probes::ScheduledContext MakeContext(const probes::Probe& probe, const config::ProbeSchedule& schedule,
                                     const config::Config& config, const std::atomic<bool>* cancel,
                                     probes::ImpactBudget* budget, steady_clock::time_point deadline) {
  probes::ScheduledContext context;
  context.cancel = cancel;
  if (const auto section = config.probes.find(probe.Name()); section != config.probes.end()) {
    context.settings = section->second.settings;
  }
  context.schedule = schedule;
  context.budget_limits = config.budget;
  context.budget = budget;
  context.deadline = deadline;
  return context;
}

// Runs the probe on a thread of its own; its outcome arrives in `result`.
std::thread StartProbeThread(probes::Probe& probe, const probes::ScheduledContext& context,
                             std::future<probes::ProbeOutcome>& result) {
  // Probe::RunScheduled never throws: it is the probe boundary.
  auto task = std::make_shared<std::packaged_task<probes::ProbeOutcome()>>(
      [&probe, context] { return probe.RunScheduled(context); });
  result = task->get_future();
  return std::thread([task] {
    // The budget is charged with this thread's CPU time (and that of the
    // probe's own worker threads), not the whole process's.
    const probes::ProbeCpuScope charged;
    (*task)();
  });
}

}  // namespace

Scheduler::Scheduler(std::vector<probes::Probe*> probes, const Clock& clock, FrameworkMetrics& metrics,
                     std::uint64_t seed, ImpactGate* gate)
    : clock_(clock), metrics_(metrics), gate_(gate), random_(seed) {
  entries_.reserve(probes.size());
  for (probes::Probe* probe : probes) {
    // Disabled until ApplyConfig: the first config decides.
    entries_.push_back(Entry{probe, config::ProbeSchedule{false, {}, {}}, steady_clock::time_point::max(), {}, {}, {}});
  }
}

Scheduler::~Scheduler() = default;

nanoseconds Scheduler::JitteredInterval(nanoseconds interval) {
  const double jitter = config_ ? config_->scheduler.jitter : 0.0;
  std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0 + jitter);
  return nanoseconds(static_cast<std::int64_t>(static_cast<double>(interval.count()) * factor(random_)));
}

nanoseconds Scheduler::FirstRunDelay(nanoseconds interval) {
  const nanoseconds splay = std::min(config_ ? config_->scheduler.first_run_splay : nanoseconds(0), interval);
  if (splay.count() <= 0) return nanoseconds(0);
  std::uniform_int_distribution<std::int64_t> delay(0, splay.count() - 1);
  return nanoseconds(delay(random_));
}

void Scheduler::ApplyConfig(std::shared_ptr<const config::Config> config) {
  std::lock_guard lock(mu_);
  config_ = std::move(config);
  if (gate_) gate_->ApplyConfig(config_->budget);
  const auto now = clock_.Now();
  for (Entry& entry : entries_) {
    // A probe the config has no section for stays off.
    const auto section = config_->probes.find(entry.probe->Name());
    const config::ProbeSchedule next =
        section != config_->probes.end() ? section->second.schedule : config::ProbeSchedule{false, {}, {}};
    if (next.enabled && (!entry.schedule.enabled || entry.schedule.interval != next.interval)) {
      entry.next_due = now + FirstRunDelay(next.interval);
      entry.ran_or_enabled = now;
    }
    if (next.enabled) metrics_.Declare(entry.probe->Name(), next.interval);
    entry.schedule = next;
  }
  wake_ = true;
  cv_.notify_all();
}

steady_clock::time_point Scheduler::RunDue() {
  for (;;) {
    std::unique_lock lock(mu_);
    if (stop_requested_ || !config_) return steady_clock::time_point::max();
    const auto now = clock_.Now();
    Entry* due = nullptr;
    auto next_due = steady_clock::time_point::max();
    for (Entry& entry : entries_) {
      if (!entry.schedule.enabled) continue;
      if (entry.next_due <= now && (due == nullptr || entry.next_due < due->next_due)) due = &entry;
      next_due = std::min(next_due, entry.next_due);
    }
    if (due == nullptr) return next_due;

    const std::string name(due->probe->Name());
    if (paused_) {
      Skipped(*due, kFullRunActive, now);
      due->next_due = now + JitteredInterval(due->schedule.interval);
      continue;
    }
    if (gate_) {
      gate_->Account(true);
      if (auto skip = gate_->Admit()) {
        Skipped(*due, skip->reason, now);
        spdlog::info("probe {} skipped ({}): {}", name, skip->reason, skip->message);
        due->last_outcome = probes::ProbeOutcome::Skipped(skip->reason, skip->message);
        due->next_due = now + JitteredInterval(due->schedule.interval);
        continue;
      }
    }

    running_ = true;
    running_probe_ = name;
    cancel_.store(false);
    const config::ProbeSchedule schedule = due->schedule;
    auto config = config_;
    lock.unlock();

    const auto started = clock_.Now();
    probes::ProbeOutcome outcome = Execute(*due->probe, schedule, std::move(config));
    const auto finished = clock_.Now();
    // Give the run's freed buffers back to the kernel now rather than keep
    // them resident until the next run reuses them (a few ms at most).
    (void)::malloc_trim(0);
    const nanoseconds took = finished - started;
    if (gate_) gate_->Account(true);

    lock.lock();
    running_ = false;
    running_probe_.clear();
    const bool cancelled = cancel_.load();
    if (stop_requested_ && cancelled) {
      // Shut down mid-run: neither a failure nor a result.
    } else if (paused_ && cancelled) {
      Skipped(*due, kFullRunActive, finished);
      // Snapshot() (landing page) shows what the metrics count: a skip, not
      // the probe's own "cancelled" failure.
      outcome = probes::ProbeOutcome::Skipped(std::string(kFullRunActive), "cancelled for a full run");
    } else if (outcome.status == Status::kSkipped) {
      Skipped(*due, outcome.reason, finished);
      spdlog::info("probe {} skipped ({}): {}", name, outcome.reason, outcome.message);
    } else {
      metrics_.RecordRun(name, outcome, took, clock_.UnixSeconds());
      due->ran_or_enabled = finished;
      if (outcome.status == Status::kFailure) {
        spdlog::warn("probe {} failed ({}): {}", name, outcome.reason, outcome.message);
      } else {
        spdlog::debug("probe {} succeeded in {:.3f}s", name, std::chrono::duration<double>(took).count());
      }
    }
    due->last_run_unix_seconds = clock_.UnixSeconds();
    due->last_duration = took;
    due->last_outcome = std::move(outcome);
    // Measured from the start so the period does not drift by the run time;
    // a run longer than its interval is followed by a full interval of rest.
    const nanoseconds period = JitteredInterval(due->schedule.interval);
    due->next_due = started + period > finished ? started + period : finished + period;
    cv_.notify_all();
  }
}

void Scheduler::Skipped(Entry& entry, std::string_view reason, steady_clock::time_point now) {
  const std::string name(entry.probe->Name());
  metrics_.RecordSkip(name, reason);
  // Counted from the last run that gave a result (or the schedule's start):
  // once none has for longer than an interval plus its jitter, whether the
  // gate refused the runs or the probe skipped itself (a disk without room),
  // the last figures are stale and success must not stay 1.
  const double jitter = config_ ? config_->scheduler.jitter : 0.0;
  const auto allowance = std::chrono::duration_cast<nanoseconds>(entry.schedule.interval * (1.0 + jitter));
  if (now - entry.ran_or_enabled > allowance) metrics_.RecordSuspended(name, reason);
}

probes::ProbeOutcome Scheduler::Execute(probes::Probe& probe, const config::ProbeSchedule& schedule,
                                        std::shared_ptr<const config::Config> config) {
  const auto deadline = steady_clock::now() + schedule.timeout;
  const probes::ScheduledContext context =
      MakeContext(probe, schedule, *config, &cancel_, gate_ ? &gate_->budget() : nullptr, deadline);
  std::future<probes::ProbeOutcome> result;
  std::thread worker = StartProbeThread(probe, context, result);

  std::function<void()> heartbeat;
  nanoseconds period;
  nanoseconds grace;
  {
    std::lock_guard lock(mu_);
    heartbeat = heartbeat_;
    period = heartbeat_period_;
    grace = hang_grace_;
  }
  bool timed_out = false;
  bool hang_logged = false;
  std::optional<steady_clock::time_point> stop_seen;
  // Wake at the deadline too, so a timeout is enforced on time rather than
  // at the next heartbeat.
  auto next_wait = [&] {
    const auto now = steady_clock::now();
    return now < deadline ? std::min<nanoseconds>(period, deadline - now) : period;
  };
  while (result.wait_for(next_wait()) != std::future_status::ready) {
    const auto now = steady_clock::now();
    if (now >= deadline && !timed_out) {
      timed_out = true;
      cancel_.store(true);
    }
    bool stopping;
    {
      std::lock_guard lock(mu_);
      stopping = stop_requested_;
    }
    if (stopping && !stop_seen) stop_seen = now;
    if (stop_seen && now - *stop_seen >= kShutdownGrace) {
      // Shutting down and the probe ignores cancellation: leave it behind
      // rather than hang the exit; the caller exits the process.
      spdlog::error("probe {} ignored cancellation; abandoning it to shut down", probe.Name());
      std::lock_guard lock(mu_);
      abandoned_ = true;
      worker.detach();
      return probes::ProbeOutcome::Failure("abandoned", "probe did not stop");
    }
    if (now < deadline + grace) {
      if (heartbeat) heartbeat();
    } else if (!hang_logged) {
      hang_logged = true;
      spdlog::error("probe {} overran its {}s timeout by more than {}s; withholding the watchdog heartbeat",
                    probe.Name(), std::chrono::duration<double>(schedule.timeout).count(),
                    std::chrono::duration<double>(grace).count());
    }
  }
  worker.join();
  probes::ProbeOutcome outcome = result.get();
  if (outcome.status == Status::kFailure && steady_clock::now() >= deadline) {
    std::lock_guard lock(mu_);
    // Cancelled because its time was up, not by Pause() or RequestStop().
    if (!paused_ && !stop_requested_) outcome.reason = "timeout";
  }
  return outcome;
}

bool Scheduler::Run(const std::function<void()>& heartbeat, nanoseconds heartbeat_period, nanoseconds hang_grace) {
  {
    std::lock_guard lock(mu_);
    heartbeat_ = heartbeat;
    heartbeat_period_ = heartbeat_period;
    hang_grace_ = hang_grace;
  }
  for (;;) {
    if (heartbeat) heartbeat();
    {
      // Cleared before RunDue so that a config change or Resume() arriving
      // while it runs is not lost.
      std::lock_guard lock(mu_);
      wake_ = false;
      // A full run's CPU time is the operator's, not the schedule's budget.
      // Under the lock, so that Pause() and Resume() cannot slip in between.
      if (gate_) gate_->Account(!paused_);
    }
    const auto next_due = RunDue();
    std::unique_lock lock(mu_);
    if (stop_requested_) break;
    nanoseconds wait = heartbeat_period;
    if (next_due != steady_clock::time_point::max()) wait = std::min(wait, nanoseconds(next_due - clock_.Now()));
    if (wait.count() > 0) {
      cv_.wait_for(lock, wait, [this] { return stop_requested_ || wake_; });
    }
    if (stop_requested_) break;
  }
  std::lock_guard lock(mu_);
  heartbeat_ = nullptr;
  return !abandoned_;
}

void Scheduler::RequestStop() {
  std::lock_guard lock(mu_);
  stop_requested_ = true;
  cancel_.store(true);
  cv_.notify_all();
}

void Scheduler::Pause() {
  std::unique_lock lock(mu_);
  // The schedule's CPU time up to here is charged now, and the paused span
  // is dropped at Resume(): the loop may sleep through a whole full run.
  // (A probe still running is charged by RunDue when it returns.)
  if (gate_ && !paused_ && !running_) gate_->Account(true);
  paused_ = true;
  if (running_) cancel_.store(true);
  cv_.wait(lock, [this] { return !running_; });
}

void Scheduler::Resume() {
  std::lock_guard lock(mu_);
  if (gate_ && paused_) gate_->Account(false);
  paused_ = false;
  wake_ = true;
  cv_.notify_all();
}

bool Scheduler::paused() const {
  std::lock_guard lock(mu_);
  return paused_;
}

std::vector<ProbeStatus> Scheduler::Snapshot() const {
  std::lock_guard lock(mu_);
  const auto now = clock_.Now();
  std::vector<ProbeStatus> statuses;
  statuses.reserve(entries_.size());
  for (const Entry& entry : entries_) {
    ProbeStatus status;
    status.name = std::string(entry.probe->Name());
    status.enabled = entry.schedule.enabled;
    status.interval = entry.schedule.interval;
    status.timeout = entry.schedule.timeout;
    status.running = running_ && running_probe_ == status.name;
    status.due_in = entry.schedule.enabled && entry.next_due > now ? nanoseconds(entry.next_due - now) : nanoseconds(0);
    status.last_run_unix_seconds = entry.last_run_unix_seconds;
    status.last_duration = entry.last_duration;
    status.last_outcome = entry.last_outcome;
    statuses.push_back(std::move(status));
  }
  return statuses;
}

}  // namespace hostperf::daemon
