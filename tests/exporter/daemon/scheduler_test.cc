#include "hostperf/daemon/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../metrics_test_util.h"
#include "hostperf/base/clock.h"
#include "hostperf/config/config.h"
#include "hostperf/daemon/framework_metrics.h"
#include "hostperf/daemon/impact_gate.h"
#include "hostperf/probes/probe.h"

namespace hostperf::daemon {
namespace {

using namespace std::chrono_literals;
using probes::ProbeOutcome;
using std::chrono::nanoseconds;
using std::chrono::steady_clock;
using test_util::SampleValue;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Generous bound for anything that waits on another thread.
constexpr auto kPatience = 20s;

// Steady time that moves only when told; Unix time follows it.
class FakeClock final : public Clock {
 public:
  steady_clock::time_point Now() const override {
    std::lock_guard lock(mu_);
    return now_;
  }
  double UnixSeconds() const override {
    std::lock_guard lock(mu_);
    return unix_at_origin_ + std::chrono::duration<double>(now_ - kOrigin).count();
  }
  void Advance(nanoseconds by) {
    std::lock_guard lock(mu_);
    now_ += by;
  }
  void Set(steady_clock::time_point to) {
    std::lock_guard lock(mu_);
    now_ = to;
  }
  void SetUnixSeconds(double unix_seconds) {
    std::lock_guard lock(mu_);
    unix_at_origin_ = unix_seconds - std::chrono::duration<double>(now_ - kOrigin).count();
  }

 private:
  static constexpr steady_clock::time_point kOrigin = steady_clock::time_point(std::chrono::hours(1000));
  mutable std::mutex mu_;
  steady_clock::time_point now_ = kOrigin;
  double unix_at_origin_ = 1'700'000'000.0;
};

// Shared by the fake probes of one scheduler: run order and concurrency.
struct RunLog {
  std::mutex mu;
  std::vector<std::string> order;
  int active = 0;
  int max_active = 0;
};

// Which of a probe's faces ran.
enum class Face { kScheduled, kFull };

class FakeProbe final : public probes::Probe {
 public:
  enum class Behavior {
    kReturnOutcome,         // returns outcome() at once
    kBlockUntilCancelled,   // waits for context.Cancelled() only
    kBlockUntilShouldStop,  // waits for context.ShouldStop() (cancel or deadline)
    kThrow,                 // throws std::runtime_error
  };

  // Its schedule is the config's [probes.<name>] section's.
  FakeProbe(std::string name, FakeClock& clock, RunLog& log) : name_(std::move(name)), clock_(clock), log_(log) {}

  std::string_view Name() const override { return name_; }
  ProbeOutcome MeasureScheduled(const probes::ScheduledContext& context) override {
    return Measure(context, Face::kScheduled);
  }
  ProbeOutcome MeasureFull(const probes::FullRunContext& context) override { return Measure(context, Face::kFull); }

  ProbeOutcome Measure(const probes::RunContext& context, Face face) {
    Behavior behavior;
    nanoseconds advance;
    ProbeOutcome outcome;
    {
      std::lock_guard lock(mu_);
      ++runs_;
      running_ = true;
      last_face_ = face;
      behavior = behavior_;
      advance = advance_;
      outcome = outcome_;
    }
    cv_.notify_all();
    {
      std::lock_guard lock(log_.mu);
      log_.order.push_back(name_);
      log_.max_active = std::max(log_.max_active, ++log_.active);
    }
    struct Finish {
      FakeProbe* self;
      ~Finish() {
        {
          std::lock_guard lock(self->log_.mu);
          --self->log_.active;
        }
        std::lock_guard lock(self->mu_);
        self->running_ = false;
      }
    } finish{this};

    clock_.Advance(advance);  // the run "takes" this long on the fake clock
    switch (behavior) {
      case Behavior::kReturnOutcome:
        return outcome;
      case Behavior::kBlockUntilCancelled:
        // The cancel flag is a plain atomic without notification: poll it as
        // real probes do.
        while (!context.Cancelled()) std::this_thread::sleep_for(1ms);
        return ProbeOutcome::Failure("cancelled", "fake probe cancelled");
      case Behavior::kBlockUntilShouldStop:
        while (!context.ShouldStop()) std::this_thread::sleep_for(1ms);
        return ProbeOutcome::Failure(context.Cancelled() ? "cancelled" : "deadline", "fake probe stopped");
      case Behavior::kThrow:
        throw std::runtime_error("fake probe exploded");
    }
    return outcome;
  }

  void set_behavior(Behavior behavior) {
    std::lock_guard lock(mu_);
    behavior_ = behavior;
  }
  void set_outcome(ProbeOutcome outcome) {
    std::lock_guard lock(mu_);
    outcome_ = std::move(outcome);
  }
  void set_advance(nanoseconds advance) {
    std::lock_guard lock(mu_);
    advance_ = advance;
  }
  int runs() const {
    std::lock_guard lock(mu_);
    return runs_;
  }
  Face last_face() const {
    std::lock_guard lock(mu_);
    return last_face_;
  }
  // True once Run() has been entered `count` times in all.
  bool WaitForRuns(int count) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return runs_ >= count; });
  }
  // True once Run() has been entered and has not returned yet.
  bool WaitUntilRunning() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, [this] { return running_; });
  }

 private:
  const std::string name_;
  FakeClock& clock_;
  RunLog& log_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int runs_ = 0;
  bool running_ = false;
  Face last_face_ = Face::kFull;
  Behavior behavior_ = Behavior::kReturnOutcome;
  nanoseconds advance_{0};
  ProbeOutcome outcome_ = ProbeOutcome::Success({{"fake", true}});
};

// cpu: enabled, every 5 min, timeout 1 min; disk: disabled. Splay 30 s,
// jitter 10 %.
config::Config BaseConfig() {
  config::Config config;
  config.scheduler.first_run_splay = 30s;
  config.scheduler.jitter = 0.1;
  // The fakes have no settings of their own: a bare section.
  config.probes["cpu"] = {{true, 5min, 1min}, std::make_shared<config::ProbeSection>()};
  config.probes["disk"] = {{false, 15min, 5min}, std::make_shared<config::ProbeSection>()};
  return config;
}

std::shared_ptr<const config::Config> MakeConfig(const std::function<void(config::Config&)>& edit = {}) {
  config::Config config = BaseConfig();
  if (edit) edit(config);
  return std::make_shared<const config::Config>(std::move(config));
}

// A scheduler over two fake probes, "cpu" and "disk", on a fake clock.
struct Harness {
  explicit Harness(std::uint64_t seed = 1) : scheduler({&cpu, &disk}, clock, metrics, seed) {}

  std::optional<double> Metric(const std::string& name, const std::map<std::string, std::string>& labels) const {
    return SampleValue(registry.Collect(), name, labels);
  }
  // Failures counted under any reason (the known ones exist at 0).
  double Failures(const std::string& probe) const {
    return test_util::SampleSum(registry.Collect(), "hostperf_probe_failures_total", {{"probe", probe}}).sum;
  }
  ProbeStatus Status(const std::string& name) const {
    for (const ProbeStatus& status : scheduler.Snapshot()) {
      if (status.name == name) return status;
    }
    ADD_FAILURE() << "no status for probe " << name;
    return {};
  }
  // Absolute next due time of a probe, read from the snapshot.
  steady_clock::time_point DueAt(const std::string& name) const { return clock.Now() + Status(name).due_in; }

  FakeClock clock;
  prometheus::Registry registry;
  FrameworkMetrics metrics{registry};
  RunLog log;
  FakeProbe cpu{"cpu", clock, log};
  FakeProbe disk{"disk", clock, log};
  Scheduler scheduler;
};

const std::map<std::string, std::string> kCpu = {{"probe", "cpu"}};

TEST(SchedulerTest, NothingRunsBeforeApplyConfig) {
  Harness h;
  EXPECT_EQ(h.scheduler.RunDue(), steady_clock::time_point::max());
  h.clock.Advance(24h);
  EXPECT_EQ(h.scheduler.RunDue(), steady_clock::time_point::max());
  EXPECT_EQ(h.cpu.runs(), 0);
  EXPECT_EQ(h.disk.runs(), 0);
  EXPECT_FALSE(h.Status("cpu").enabled);
}

TEST(SchedulerTest, FirstRunIsSplayedWithinFirstRunSplayAndNotBeforeDue) {
  std::set<std::int64_t> delays;
  nanoseconds longest{0};
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    Harness h(seed);
    const auto applied_at = h.clock.Now();
    h.scheduler.ApplyConfig(MakeConfig());
    const nanoseconds delay = h.Status("cpu").due_in;
    ASSERT_GE(delay, 0ns) << "seed " << seed;
    ASSERT_LT(delay, 30s) << "seed " << seed;
    delays.insert(delay.count());
    longest = std::max(longest, delay);
    if (delay == 0ns) continue;
    const auto due = applied_at + delay;
    // Not yet due: RunDue reports the due time and runs nothing.
    ASSERT_EQ(h.scheduler.RunDue(), due) << "seed " << seed;
    h.clock.Set(due - 1ns);
    ASSERT_EQ(h.scheduler.RunDue(), due) << "seed " << seed;
    ASSERT_EQ(h.cpu.runs(), 0) << "seed " << seed;
    h.clock.Set(due);
    h.scheduler.RunDue();
    ASSERT_EQ(h.cpu.runs(), 1) << "seed " << seed;
    EXPECT_EQ(h.cpu.last_face(), Face::kScheduled);
  }
  // The splay really spreads hosts out instead of all picking one moment.
  EXPECT_GT(delays.size(), 190u);
  EXPECT_GT(longest, 15s);
}

TEST(SchedulerTest, FirstRunSplayIsCappedByAShortInterval) {
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    Harness h(seed);
    h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.probes["cpu"].schedule.interval = 10s; }));
    const nanoseconds delay = h.Status("cpu").due_in;
    ASSERT_GE(delay, 0ns) << "seed " << seed;
    ASSERT_LT(delay, 10s) << "seed " << seed;
  }
}

TEST(SchedulerTest, ZeroSplayRunsAtOnce) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1);
}

TEST(SchedulerTest, LaterRunsFollowTheIntervalWithinJitter) {
  nanoseconds shortest = nanoseconds::max();
  nanoseconds longest{0};
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    Harness h(seed);
    h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
    auto next = h.scheduler.RunDue();
    ASSERT_EQ(h.cpu.runs(), 1);
    for (int i = 0; i < 50; ++i) {
      const nanoseconds gap = next - h.clock.Now();
      ASSERT_GE(gap, 270s) << "seed " << seed << " run " << i;
      ASSERT_LE(gap, 330s) << "seed " << seed << " run " << i;
      shortest = std::min(shortest, gap);
      longest = std::max(longest, gap);
      h.clock.Set(next);
      next = h.scheduler.RunDue();
      ASSERT_EQ(h.cpu.runs(), i + 2);
    }
  }
  // 1000 samples of U(270 s, 330 s): both ends are reached.
  EXPECT_LT(shortest, 285s);
  EXPECT_GT(longest, 315s);
}

TEST(SchedulerTest, ZeroJitterGivesTheExactPeriod) {
  Harness h(7);
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.scheduler.jitter = 0;
  }));
  auto next = h.scheduler.RunDue();
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(next - h.clock.Now(), 5min) << "run " << i;
    h.clock.Set(next);
    next = h.scheduler.RunDue();
  }
  EXPECT_EQ(h.cpu.runs(), 21);
}

TEST(SchedulerTest, PeriodIsMeasuredFromTheStartOfTheRun) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.scheduler.jitter = 0;
  }));
  const auto started = h.clock.Now();
  h.cpu.set_advance(20s);
  EXPECT_EQ(h.scheduler.RunDue(), started + 5min);
}

TEST(SchedulerTest, DisabledProbeNeverRunsAndReEnablingSchedulesIt) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.probes["cpu"].schedule.enabled = false; }));
  EXPECT_EQ(h.scheduler.RunDue(), steady_clock::time_point::max());
  h.clock.Advance(24h);
  EXPECT_EQ(h.scheduler.RunDue(), steady_clock::time_point::max());
  EXPECT_EQ(h.cpu.runs(), 0);
  EXPECT_FALSE(h.Status("cpu").enabled);

  const auto enabled_at = h.clock.Now();
  h.scheduler.ApplyConfig(MakeConfig());
  EXPECT_TRUE(h.Status("cpu").enabled);
  const auto due = h.DueAt("cpu");
  EXPECT_GE(due, enabled_at);
  EXPECT_LT(due, enabled_at + 30s);
  h.clock.Set(due);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1);
}

TEST(SchedulerTest, DisablingAProbeStopsItsRuns) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.probes["cpu"].schedule.enabled = false; }));
  h.clock.Advance(1h);
  EXPECT_EQ(h.scheduler.RunDue(), steady_clock::time_point::max());
  EXPECT_EQ(h.cpu.runs(), 1);
}

TEST(SchedulerTest, ReApplyingAnUnchangedIntervalKeepsTheSchedule) {
  Harness h(3);
  h.scheduler.ApplyConfig(MakeConfig());
  const auto due = h.DueAt("cpu");
  h.clock.Advance((due - h.clock.Now()) / 2);
  // Same interval, other timeout and splay: the place in the schedule stays.
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.probes["cpu"].schedule.timeout = 2min;
    c.scheduler.first_run_splay = 1s;
  }));
  EXPECT_EQ(h.DueAt("cpu"), due);
  EXPECT_EQ(h.Status("cpu").timeout, 2min);

  h.clock.Set(due);
  const auto next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  h.clock.Advance(1min);
  h.scheduler.ApplyConfig(MakeConfig());
  EXPECT_EQ(h.DueAt("cpu"), next);
}

TEST(SchedulerTest, ChangingTheIntervalReschedules) {
  Harness h(4);
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  const auto old_next = h.scheduler.RunDue();  // 270..330 s away
  ASSERT_EQ(h.cpu.runs(), 1);
  const auto changed_at = h.clock.Now();
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.probes["cpu"].schedule.interval = 10min; }));
  const auto new_due = h.DueAt("cpu");
  EXPECT_NE(new_due, old_next);
  EXPECT_GE(new_due, changed_at);
  EXPECT_LT(new_due, changed_at + 30s);  // a fresh first-run splay
  EXPECT_EQ(h.Status("cpu").interval, 10min);
  EXPECT_EQ(h.Metric("hostperf_probe_interval_seconds", kCpu), 600.0);

  h.clock.Set(new_due);
  const auto next = h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 2);
  EXPECT_GE(next - h.clock.Now(), 9min);
  EXPECT_LE(next - h.clock.Now(), 11min);
}

TEST(SchedulerTest, DueProbesRunOneAtATimeMostOverdueFirst) {
  for (const bool cpu_first : {true, false}) {
    SCOPED_TRACE(cpu_first ? "cpu enabled first" : "disk enabled first");
    Harness h;
    // Enable one probe, and the other one second later: the first one is
    // then the more overdue, whatever the registration order.
    h.scheduler.ApplyConfig(MakeConfig([&](config::Config& c) {
      c.scheduler.first_run_splay = 0s;
      c.probes["cpu"].schedule.enabled = cpu_first;
      c.probes["disk"].schedule.enabled = !cpu_first;
    }));
    h.clock.Advance(1s);
    h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
      c.scheduler.first_run_splay = 0s;
      c.probes["disk"].schedule.enabled = true;
    }));
    h.cpu.set_advance(3s);
    h.disk.set_advance(3s);
    h.clock.Advance(10s);
    const auto next = h.scheduler.RunDue();

    std::lock_guard lock(h.log.mu);
    if (cpu_first) {
      EXPECT_THAT(h.log.order, ElementsAre("cpu", "disk"));
    } else {
      EXPECT_THAT(h.log.order, ElementsAre("disk", "cpu"));
    }
    EXPECT_EQ(h.log.max_active, 1);
    EXPECT_EQ(next, std::min(h.DueAt("cpu"), h.DueAt("disk")));
  }
}

TEST(SchedulerTest, DeclaresFrameworkSeriesOnApplyConfig) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig());
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_last_run_timestamp_seconds", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_interval_seconds", kCpu), 300.0);
}

TEST(SchedulerTest, RecordsRunsSuccessFailuresDurationAndTimestamps) {
  Harness h;
  h.clock.SetUnixSeconds(1'800'000'000.0);
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));

  h.cpu.set_advance(2500ms);
  auto next = h.scheduler.RunDue();
  const double first_finish = h.clock.UnixSeconds();
  EXPECT_EQ(first_finish, 1'800'000'002.5);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_duration_seconds", kCpu), 2.5);
  EXPECT_EQ(h.Metric("hostperf_probe_last_run_timestamp_seconds", kCpu), first_finish);
  EXPECT_EQ(h.Metric("hostperf_probe_last_success_timestamp_seconds", kCpu), first_finish);
  EXPECT_EQ(h.Metric("hostperf_probe_interval_seconds", kCpu), 300.0);

  h.clock.Set(next);
  h.cpu.set_advance(1s);
  h.cpu.set_outcome(ProbeOutcome::Failure("checksum_mismatch", "bad sum"));
  next = h.scheduler.RunDue();
  const double second_finish = h.clock.UnixSeconds();
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 2.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "checksum_mismatch"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_duration_seconds", kCpu), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_last_run_timestamp_seconds", kCpu), second_finish);
  EXPECT_EQ(h.Metric("hostperf_probe_last_success_timestamp_seconds", kCpu), first_finish);

  h.clock.Set(next);
  h.cpu.set_outcome(ProbeOutcome::Success({}));
  h.scheduler.RunDue();
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 3.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "checksum_mismatch"}}), 1.0);
}

TEST(SchedulerTest, SkippedOutcomeCountsASkipNotARun) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.cpu.set_outcome(ProbeOutcome::Skipped("budget_exhausted", "no budget left"));
  const auto next = h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1);
  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "budget_exhausted"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 0.0);
  EXPECT_EQ(h.Failures("cpu"), 0.0);
  // Skipped runs are rescheduled like any other.
  EXPECT_GE(next - h.clock.Now(), 270s);
  EXPECT_LE(next - h.clock.Now(), 330s);
}

TEST(SchedulerTest, PausedSchedulerSkipsDueRunsUntilResumed) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  auto next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);

  h.scheduler.Pause();  // nothing running: returns at once
  EXPECT_TRUE(h.scheduler.paused());
  h.clock.Set(next);
  next = h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1);
  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "full_run_active"}}), 1.0);
  EXPECT_GE(next - h.clock.Now(), 270s);  // skipped runs move on by an interval

  h.scheduler.Resume();
  EXPECT_FALSE(h.scheduler.paused());
  h.clock.Set(next);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 2);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 2.0);
  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "full_run_active"}}), 1.0);
}

TEST(SchedulerTest, PauseCancelsTheRunningProbeAndCountsASkip) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.cpu.set_behavior(FakeProbe::Behavior::kBlockUntilCancelled);
  std::thread runner([&] { h.scheduler.RunDue(); });
  ASSERT_TRUE(h.cpu.WaitUntilRunning());
  EXPECT_TRUE(h.Status("cpu").running);

  h.scheduler.Pause();  // returns once the probe has ended
  EXPECT_FALSE(h.Status("cpu").running);
  runner.join();

  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "full_run_active"}}), 1.0);
  EXPECT_EQ(h.Failures("cpu"), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 0.0);
  // What the landing page shows agrees with the metrics: a skip.
  const ProbeStatus status = h.Status("cpu");
  ASSERT_TRUE(status.last_outcome.has_value());
  EXPECT_EQ(status.last_outcome->status, ProbeOutcome::Status::kSkipped);
  EXPECT_EQ(status.last_outcome->reason, "full_run_active");
  h.scheduler.Resume();
}

TEST(SchedulerTest, ProbeStoppingAtItsDeadlineIsATimeoutFailure) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.probes["cpu"].schedule.timeout = 50ms;
  }));
  h.cpu.set_behavior(FakeProbe::Behavior::kBlockUntilShouldStop);
  const auto started = steady_clock::now();
  h.scheduler.RunDue();
  EXPECT_LT(steady_clock::now() - started, kPatience);
  EXPECT_EQ(h.Metric("hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "timeout"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 1.0);
}

TEST(SchedulerTest, ProbeIgnoringItsDeadlineIsCancelledAndCountedAsTimeout) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.probes["cpu"].schedule.timeout = 50ms;
  }));
  // Watches only the cancel flag: the scheduler has to raise it.
  h.cpu.set_behavior(FakeProbe::Behavior::kBlockUntilCancelled);
  const auto started = steady_clock::now();
  h.scheduler.RunDue();
  EXPECT_LT(steady_clock::now() - started, kPatience);
  EXPECT_EQ(h.Metric("hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "timeout"}}), 1.0);
}

TEST(SchedulerTest, ThrowingProbeIsAnInternalErrorAndTheSchedulerGoesOn) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.cpu.set_behavior(FakeProbe::Behavior::kThrow);
  auto next = h.scheduler.RunDue();
  EXPECT_EQ(h.Metric("hostperf_probe_failures_total", {{"probe", "cpu"}, {"reason", "internal_error"}}), 1.0);
  const ProbeStatus status = h.Status("cpu");
  ASSERT_TRUE(status.last_outcome.has_value());
  EXPECT_THAT(status.last_outcome->message, HasSubstr("fake probe exploded"));

  h.cpu.set_behavior(FakeProbe::Behavior::kReturnOutcome);
  h.clock.Set(next);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 2);
  EXPECT_EQ(h.Metric("hostperf_probe_success", kCpu), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 2.0);
}

// Counts heartbeats and lets the test wait for a number of them.
class Heartbeats {
 public:
  std::function<void()> Callback() {
    return [this] {
      {
        std::lock_guard lock(mu_);
        ++count_;
      }
      cv_.notify_all();
    };
  }
  int count() const {
    std::lock_guard lock(mu_);
    return count_;
  }
  bool WaitFor(int at_least) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, [&] { return count_ >= at_least; });
  }
  // Re-checks `condition` at every heartbeat.
  bool WaitUntil(const std::function<bool()>& condition) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, condition);
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int count_ = 0;
};

TEST(SchedulerTest, RunHeartbeatsRunsDueProbesAndStopsPromptly) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  Heartbeats heartbeats;
  auto result = std::async(std::launch::async, [&] { return h.scheduler.Run(heartbeats.Callback(), 10ms); });
  ASSERT_TRUE(heartbeats.WaitUntil([&] { return h.Status("cpu").last_outcome.has_value(); }));
  ASSERT_TRUE(heartbeats.WaitFor(3));

  const auto stop_requested = steady_clock::now();
  h.scheduler.RequestStop();
  ASSERT_EQ(result.wait_for(kPatience), std::future_status::ready);
  EXPECT_LT(steady_clock::now() - stop_requested, 5s);
  EXPECT_TRUE(result.get());
  EXPECT_EQ(h.cpu.runs(), 1);  // the fake clock never reached the next due time
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 1.0);
}

TEST(SchedulerTest, RunHeartbeatsWhileAProbeRunsAndStopCancelsIt) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  h.cpu.set_behavior(FakeProbe::Behavior::kBlockUntilCancelled);
  Heartbeats heartbeats;
  auto result = std::async(std::launch::async, [&] { return h.scheduler.Run(heartbeats.Callback(), 10ms); });
  ASSERT_TRUE(h.cpu.WaitUntilRunning());
  const int beats_at_start = heartbeats.count();
  ASSERT_TRUE(heartbeats.WaitFor(beats_at_start + 3));  // still beating during the run
  EXPECT_TRUE(h.Status("cpu").running);

  h.scheduler.RequestStop();
  ASSERT_EQ(result.wait_for(kPatience), std::future_status::ready);
  EXPECT_TRUE(result.get());
  // A run cut short by shutdown is neither a failure nor a result.
  EXPECT_EQ(h.Failures("cpu"), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_runs_total", kCpu), 0.0);
}

TEST(SchedulerTest, RunPicksUpAConfigAppliedWhileWaiting) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.probes["cpu"].schedule.enabled = false;
  }));
  Heartbeats heartbeats;
  auto result = std::async(std::launch::async, [&] { return h.scheduler.Run(heartbeats.Callback(), 10ms); });
  ASSERT_TRUE(heartbeats.WaitFor(2));
  EXPECT_EQ(h.cpu.runs(), 0);
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  EXPECT_TRUE(h.cpu.WaitForRuns(1));
  h.scheduler.RequestStop();
  ASSERT_EQ(result.wait_for(kPatience), std::future_status::ready);
  EXPECT_EQ(h.cpu.runs(), 1);
}

TEST(SchedulerTest, SnapshotReflectsScheduleAndLastOutcome) {
  Harness h;
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) { c.scheduler.first_run_splay = 0s; }));
  ProbeStatus before = h.Status("cpu");
  EXPECT_TRUE(before.enabled);
  EXPECT_FALSE(before.running);
  EXPECT_FALSE(before.last_outcome.has_value());
  EXPECT_FALSE(before.last_run_unix_seconds.has_value());

  h.cpu.set_advance(4s);
  h.cpu.set_outcome(ProbeOutcome::Failure("no_space", "disk full"));
  const auto next = h.scheduler.RunDue();

  const ProbeStatus cpu = h.Status("cpu");
  EXPECT_TRUE(cpu.enabled);
  EXPECT_FALSE(cpu.running);
  EXPECT_EQ(cpu.interval, 5min);
  EXPECT_EQ(cpu.timeout, 1min);
  EXPECT_EQ(cpu.due_in, next - h.clock.Now());
  EXPECT_EQ(cpu.last_duration, 4s);
  ASSERT_TRUE(cpu.last_run_unix_seconds.has_value());
  EXPECT_EQ(*cpu.last_run_unix_seconds, h.clock.UnixSeconds());
  ASSERT_TRUE(cpu.last_outcome.has_value());
  EXPECT_EQ(cpu.last_outcome->status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(cpu.last_outcome->reason, "no_space");
  EXPECT_EQ(cpu.last_outcome->message, "disk full");

  const ProbeStatus disk = h.Status("disk");
  EXPECT_FALSE(disk.enabled);
  EXPECT_FALSE(disk.last_outcome.has_value());
  EXPECT_EQ(disk.due_in, 0ns);
}

// ---------------------------------------------------------------------------
// The impact gate: CPU budget and busy gate, enforced by the scheduler.

// A scheduler over the fake "cpu" probe with an impact gate whose process
// CPU time and /proc/pressure the test sets.
struct GatedHarness {
  explicit GatedHarness(const std::string& proc_root)
      : gate(clock, Options(proc_root), registry), scheduler({&cpu}, clock, metrics, 1, &gate) {}

  ImpactGateOptions Options(const std::string& proc_root) {
    ImpactGateOptions options;
    options.proc_root = proc_root;
    options.process_cpu_seconds = [this] { return cpu_seconds.load(); };
    return options;
  }
  std::optional<double> Metric(const std::string& name, const std::map<std::string, std::string>& labels = {}) const {
    return SampleValue(registry.Collect(), name, labels);
  }

  std::atomic<double> cpu_seconds{100};
  FakeClock clock;
  prometheus::Registry registry;
  FrameworkMetrics metrics{registry};
  RunLog log;
  FakeProbe cpu{"cpu", clock, log};
  ImpactGate gate;
  Scheduler scheduler;
};

// Every minute, no splay, no jitter; CPU budget 10 s per hour.
std::shared_ptr<const config::Config> GatedConfig(double busy_cpu_pressure = 0) {
  return MakeConfig([&](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.scheduler.jitter = 0;
    c.probes["cpu"].schedule = {true, 1min, 30s};
    c.budget.cpu_seconds_per_hour = 10;
    c.budget.busy_cpu_pressure = busy_cpu_pressure;
  });
}

class ProcRoot {
 public:
  ProcRoot() {
    char pattern[] = "/tmp/hostperf-proc-XXXXXX";
    path_ = ::mkdtemp(pattern);
    std::filesystem::create_directories(path_ + "/pressure");
  }
  ~ProcRoot() { std::filesystem::remove_all(path_); }
  void SetCpuPressure(double avg10) {
    std::ofstream(path_ + "/pressure/cpu") << "some avg10=" << avg10
                                           << " avg60=1.00 avg300=1.00 total=123\nfull avg10=0.00 avg60=0.00 "
                                              "avg300=0.00 total=0\n";
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ImpactGateSchedulerTest, CpuBudgetSkipsRunsOnceSpentAndResumesWhenTheHourMoves) {
  ProcRoot proc;
  GatedHarness h(proc.path());
  h.scheduler.ApplyConfig(GatedConfig());
  EXPECT_EQ(h.Metric("hostperf_budget_cpu_limit_seconds"), 10.0);
  EXPECT_EQ(h.Metric("hostperf_budget_disk_limit_bytes"), static_cast<double>(2 * config::kGiB));

  auto next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  // The sidecar burns 12 s of CPU (its probes, scrapes, anything) within the hour.
  h.cpu_seconds = 112;
  h.clock.Set(next);
  next = h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1) << "the budget is spent: the run must be skipped";
  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "budget_exhausted"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_budget_cpu_used_seconds"), 12.0);
  EXPECT_EQ(h.scheduler.Snapshot()[0].last_outcome->reason, "budget_exhausted");
  EXPECT_THAT(h.scheduler.Snapshot()[0].last_outcome->message, HasSubstr("12.0 s"));

  // An hour after the spending, the window has moved on: runs resume.
  h.clock.Advance(61min);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 2);
  EXPECT_EQ(h.Metric("hostperf_budget_cpu_used_seconds"), 0.0);
}

// Runs skipped for budget_exhausted once left
// hostperf_probe_success at 1 for ever. Once no run has happened for longer
// than the interval, the schedule is marked suspended and success is 0.
TEST(ImpactGateSchedulerTest, ASuspendedScheduleIsVisibleAndSuccessIsNotLeftAtOne) {
  ProcRoot proc;
  GatedHarness h(proc.path());
  h.scheduler.ApplyConfig(GatedConfig());
  EXPECT_EQ(h.Metric("hostperf_probe_schedule_suspended", {{"probe", "cpu"}}), 0.0);
  auto next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  EXPECT_EQ(h.Metric("hostperf_probe_success", {{"probe", "cpu"}}), 1.0);
  h.cpu_seconds = 112;  // the budget is spent
  h.clock.Set(next);
  next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  // One interval since the last run: not yet suspended.
  EXPECT_EQ(h.Metric("hostperf_probe_schedule_suspended", {{"probe", "cpu"}}), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", {{"probe", "cpu"}}), 1.0);
  h.clock.Set(next);
  next = h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  EXPECT_EQ(h.Metric("hostperf_probe_schedule_suspended", {{"probe", "cpu"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", {{"probe", "cpu"}}), 0.0) << "stale at 1 before";
  // The hour moves on: the next run clears it.
  h.clock.Advance(61min);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 2);
  EXPECT_EQ(h.Metric("hostperf_probe_schedule_suspended", {{"probe", "cpu"}}), 0.0);
  EXPECT_EQ(h.Metric("hostperf_probe_success", {{"probe", "cpu"}}), 1.0);
}

TEST(ImpactGateSchedulerTest, FullRunCpuTimeIsNotChargedToTheSchedule) {
  ProcRoot proc;
  GatedHarness h(proc.path());
  h.scheduler.ApplyConfig(GatedConfig());
  h.scheduler.RunDue();
  ASSERT_EQ(h.cpu.runs(), 1);
  // A long heartbeat: the loop sleeps through the whole full run, as it does
  // in the daemon when no probe is due; Resume() wakes it.
  std::thread loop([&] { h.scheduler.Run({}, 1h); });
  h.scheduler.Pause();
  h.cpu_seconds = 500;  // a long full run
  h.scheduler.Resume();
  std::this_thread::sleep_for(50ms);  // the loop's tick after the wake-up
  h.scheduler.RequestStop();
  loop.join();
  EXPECT_LT(h.Metric("hostperf_budget_cpu_used_seconds").value_or(-1), 1.0);
}

TEST(ImpactGateSchedulerTest, BusyGateSkipsWhilePressureIsAboveTheLevel) {
  ProcRoot proc;
  proc.SetCpuPressure(93.5);
  GatedHarness h(proc.path());
  h.scheduler.ApplyConfig(GatedConfig(/*busy_cpu_pressure=*/80));
  auto next = h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 0);
  EXPECT_EQ(h.Metric("hostperf_probe_skipped_total", {{"probe", "cpu"}, {"reason", "host_busy"}}), 1.0);
  EXPECT_EQ(h.Metric("hostperf_host_pressure_ratio", {{"resource", "cpu"}}), 0.935);
  EXPECT_THAT(h.scheduler.Snapshot()[0].last_outcome->message, HasSubstr("cpu pressure 93.5%"));

  proc.SetCpuPressure(79.9);  // just inside the level
  h.clock.Set(next);
  h.scheduler.RunDue();
  EXPECT_EQ(h.cpu.runs(), 1);
}

TEST(ImpactGateSchedulerTest, DisabledGateAndAKernelWithoutPsiNeverSkip) {
  ProcRoot proc;
  proc.SetCpuPressure(100);
  GatedHarness disabled(proc.path());
  disabled.scheduler.ApplyConfig(GatedConfig(/*busy_cpu_pressure=*/0));
  disabled.scheduler.RunDue();
  EXPECT_EQ(disabled.cpu.runs(), 1);

  GatedHarness no_psi("/nonexistent-proc-root");
  no_psi.scheduler.ApplyConfig(GatedConfig(/*busy_cpu_pressure=*/50));
  no_psi.scheduler.RunDue();
  EXPECT_EQ(no_psi.cpu.runs(), 1);
}

TEST(ImpactGateSchedulerTest, ScheduledRunsGetTheBudgetToSpendBytesFrom) {
  ProcRoot proc;
  GatedHarness h(proc.path());
  h.scheduler.ApplyConfig(MakeConfig([](config::Config& c) {
    c.scheduler.first_run_splay = 0s;
    c.budget.disk_bytes_per_hour = 1000;
  }));
  probes::ImpactBudget& budget = h.gate.budget();
  EXPECT_FALSE(budget.TrySpend(probes::BudgetResource::kDiskBytes, 600).has_value());
  const auto refused = budget.TrySpend(probes::BudgetResource::kDiskBytes, 600);
  ASSERT_TRUE(refused.has_value());
  EXPECT_THAT(*refused, HasSubstr("per hour"));
  h.scheduler.RunDue();  // publishes what was spent
  EXPECT_EQ(h.Metric("hostperf_budget_disk_used_bytes"), 600.0);
}

TEST(ParsePressureTest, ReadsSomeAvg10AndRejectsGarbage) {
  EXPECT_EQ(ParsePressureSomeAvg10("some avg10=12.34 avg60=1.00 avg300=0.50 total=99\nfull avg10=0.00\n"), 12.34);
  EXPECT_EQ(ParsePressureSomeAvg10("full avg10=5.00\nsome avg10=0.00 avg60=0.00\n"), 0.0);
  EXPECT_EQ(ParsePressureSomeAvg10(""), std::nullopt);
  EXPECT_EQ(ParsePressureSomeAvg10("some avg60=1.00\n"), std::nullopt);
  EXPECT_EQ(ParsePressureSomeAvg10("some avg10=abc\n"), std::nullopt);
  EXPECT_EQ(ParsePressureSomeAvg10("some avg10=250.00\n"), std::nullopt);
}

}  // namespace
}  // namespace hostperf::daemon
