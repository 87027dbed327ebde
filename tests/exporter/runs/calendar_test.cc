#include "hostperf/runs/calendar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/collectable.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../metrics_test_util.h"
#include "hostperf/base/clock.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/run_manager.h"

namespace hostperf::runs {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using ::testing::HasSubstr;
using Status = RunManager::Submission::Status;

constexpr std::int64_t kSecond = 1'000'000'000;
// Sun 2026-12-06 02:00 UTC, Fri 2026-12-04 12:00 UTC, Thu 2026-12-03 00:00 UTC.
constexpr std::int64_t kSunday0200 = 1796522400;
constexpr std::int64_t kFriday1200 = 1796385600;
constexpr std::int64_t kThursday0000 = 1796256000;

// Wall time that moves only when told.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(double unix_seconds) : unix_(unix_seconds) {}
  std::chrono::steady_clock::time_point Now() const override {
    std::lock_guard lock(mu_);
    return std::chrono::steady_clock::time_point() +
           std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(unix_));
  }
  double UnixSeconds() const override {
    std::lock_guard lock(mu_);
    return unix_;
  }
  void Set(double unix_seconds) {
    std::lock_guard lock(mu_);
    unix_ = unix_seconds;
  }

 private:
  mutable std::mutex mu_;
  double unix_;
};

config::Config Load(const std::string& toml) {
  auto loaded = probes::LoadConfigString(toml, "calendar.toml");
  EXPECT_TRUE(loaded.ok()) << loaded.error();
  return loaded.ok() ? std::move(loaded).value() : probes::DefaultConfig();
}

config::FullRunsConfig Weekly() {
  return Load(
             "[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"168h\"\nwindow_start = \"Sun 02:00\"\n"
             "window = \"4h\"\n")
      .full_runs;
}

std::int64_t Ns(std::int64_t seconds) { return seconds * kSecond; }

TEST(HostSplayTest, StaysWithinTheWindowAndIsStable) {
  for (int i = 0; i < 500; ++i) {
    const std::string host = "db-" + std::to_string(i);
    const auto splay = HostSplay(host, 4h);
    EXPECT_GE(splay.count(), 0) << host;
    EXPECT_LT(splay, 4h) << host;
    EXPECT_EQ(splay, HostSplay(host, 4h)) << host;
  }
  EXPECT_EQ(HostSplay("db-01", 0s), 0s);
}

TEST(HostSplayTest, SpreadsAFleetAcrossTheWindow) {
  EXPECT_NE(HostSplay("db-01", 4h), HostSplay("db-02", 4h));
  // 100 hosts over 4 one-hour quarters: each quarter gets a fair share.
  int quarters[4] = {};
  std::set<std::int64_t> distinct;
  for (int i = 0; i < 100; ++i) {
    const auto splay = HostSplay("db-" + std::to_string(i) + ".example", 4h);
    ++quarters[splay / 1h];
    distinct.insert(splay.count());
  }
  EXPECT_EQ(distinct.size(), 100u);
  for (int q : quarters) EXPECT_GE(q, 12);
}

TEST(NextSlotTest, WeeklyWindowOnSundayMorningUtc) {
  const config::FullRunsConfig calendar = Weekly();
  EXPECT_EQ(calendar.window_anchor, 3 * 24h + 2h);  // 1970-01-04, the first Sunday
  const auto splay = 37min;
  // From a Friday: this Sunday 02:37.
  CalendarSlot slot = NextSlot(calendar, splay, Ns(kFriday1200));
  EXPECT_EQ(slot.start_ns, Ns(kSunday0200) + std::chrono::nanoseconds(splay).count());
  EXPECT_EQ(slot.window_start_ns, Ns(kSunday0200));
  EXPECT_EQ(slot.window_end_ns, Ns(kSunday0200 + 4 * 3600));
  EXPECT_EQ(FormatUtc(slot.UnixSeconds(), "%a %Y-%m-%d %H:%M"), "Sun 2026-12-06 02:37");
  // Just before the slot: that slot; at it or inside the window after it: next week's.
  EXPECT_EQ(NextSlot(calendar, splay, slot.start_ns - 1).start_ns, slot.start_ns);
  EXPECT_EQ(NextSlot(calendar, splay, slot.start_ns).start_ns, slot.start_ns + Ns(7 * 86400));
  EXPECT_EQ(NextSlot(calendar, splay, Ns(kSunday0200 + 3600)).start_ns, slot.start_ns + Ns(7 * 86400));
  // The window start itself, before the splay: the same week.
  EXPECT_EQ(NextSlot(calendar, splay, Ns(kSunday0200)).start_ns, slot.start_ns);
}

TEST(NextSlotTest, AHostKeepsItsSlotWeekToWeek) {
  const config::FullRunsConfig calendar = Weekly();
  const auto splay = HostSplay("db-07", calendar.window);
  std::int64_t after = Ns(kFriday1200);
  for (int week = 0; week < 60; ++week) {  // across both DST changes: UTC has none
    const CalendarSlot slot = NextSlot(calendar, splay, after);
    EXPECT_EQ(slot.start_ns - slot.window_start_ns, splay.count());
    EXPECT_EQ(FormatUtc(static_cast<double>(slot.window_start_ns) / 1e9, "%a %H:%M"), "Sun 02:00");
    EXPECT_EQ(slot.window_start_ns, Ns(kSunday0200) + week * Ns(7 * 86400));
    after = slot.start_ns;
  }
}

TEST(NextSlotTest, TwoHostsOfAFleetGetDifferentSlotsInTheSameWindow) {
  const config::FullRunsConfig calendar = Weekly();
  const CalendarSlot a = NextSlot(calendar, HostSplay("db-01", calendar.window), Ns(kFriday1200));
  const CalendarSlot b = NextSlot(calendar, HostSplay("db-02", calendar.window), Ns(kFriday1200));
  EXPECT_NE(a.start_ns, b.start_ns);
  EXPECT_EQ(a.window_start_ns, b.window_start_ns);
}

TEST(NextSlotTest, DailyAndAcceleratedCalendars) {
  const auto daily =
      Load(
          "[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"24h\"\nwindow_start = \"23:30\"\nwindow = "
          "\"1h\"\n")
          .full_runs;
  const CalendarSlot tonight = NextSlot(daily, 45min, Ns(kThursday0000));
  EXPECT_EQ(FormatUtc(tonight.UnixSeconds(), "%a %Y-%m-%d %H:%M"), "Thu 2026-12-03 00:15");
  EXPECT_EQ(tonight.window_start_ns, Ns(kThursday0000 - 1800));
  // A window across midnight: the slot after 00:15 is the next night's.
  EXPECT_EQ(NextSlot(daily, 45min, tonight.start_ns).start_ns, tonight.start_ns + Ns(86400));

  const auto fast =
      Load(
          "[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"20s\"\nwindow_start = \"00:00\"\nwindow = "
          "\"10s\"\n")
          .full_runs;
  const CalendarSlot slot = NextSlot(fast, 3s, Ns(kThursday0000) + 5 * kSecond);
  EXPECT_EQ(slot.start_ns, Ns(kThursday0000) + 23 * kSecond);
  EXPECT_EQ(slot.window_start_ns, Ns(kThursday0000) + 20 * kSecond);
  EXPECT_EQ(slot.window_end_ns, Ns(kThursday0000) + 30 * kSecond);
}

TEST(CalendarRunBodyTest, BuildsTheRunApiBodyAndParsesOptionsThroughTheModule) {
  auto config = Load(
      "[full_runs]\nprobes = [\"disk\", \"cpu\"]\nduration = \"90s\"\n"
      "[full_runs.options.disk]\ndirectories = [\"/data\"]\nthread_count = 2\n");
  const auto body = CalendarRunBody(config.full_runs);
  ASSERT_TRUE(body.ok()) << body.error();
  EXPECT_EQ((*body)["probes"], json({"disk", "cpu"}));
  EXPECT_EQ((*body)["duration"], "90s");
  EXPECT_EQ((*body)["options"]["disk"]["directories"], json({"/data"}));
  EXPECT_EQ((*body)["options"]["disk"]["thread_count"], 2);

  config = Load("[full_runs]\nprobes = [\"disk\"]\n[full_runs.options.disk]\nbogus_key = 1\n");
  const auto bad = CalendarRunBody(config.full_runs);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error(), HasSubstr("full_runs.options.disk: "));
  EXPECT_THAT(bad.error(), HasSubstr("bogus_key"));
  EXPECT_EQ(bad.error().find('\n'), std::string::npos);
}

// Records what the calendar submits and answers as told.
struct FakeSubmit {
  std::vector<json> bodies;
  Status answer = Status::kAccepted;
  RunManager::Submission operator()(const json& body) {
    bodies.push_back(body);
    RunManager::Submission submission;
    submission.status = answer;
    submission.id = "r-20261206-023700-" + std::to_string(bodies.size());
    submission.error = answer == Status::kAccepted ? "" : "full run r-1 is still active";
    return submission;
  }
};

double Skipped(FullRunCalendar& calendar, const std::string& reason) {
  return test_util::SampleValue(calendar.Metrics()->Collect(), "hostperf_full_run_calendar_skipped_total",
                                {{"reason", reason}})
      .value_or(-1);
}

TEST(FullRunCalendarTest, SubmitsAtTheSlotAndPlansTheNextPeriod) {
  ManualClock clock(static_cast<double>(kFriday1200));
  FakeSubmit fake;
  FullRunCalendar calendar(
      clock, [&fake](const json& body) { return fake(body); }, "db-01");
  calendar.Apply(Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nduration = \"30s\"\n"));
  const auto next = calendar.NextUnixSeconds();
  ASSERT_TRUE(next);
  const double slot = kSunday0200 + std::chrono::duration<double>(HostSplay("db-01", 4h)).count();
  EXPECT_DOUBLE_EQ(*next, slot);
  EXPECT_DOUBLE_EQ(
      test_util::SampleValue(calendar.Metrics()->Collect(), "hostperf_full_run_next_timestamp_seconds").value_or(-1),
      slot);

  clock.Set(slot - 0.5);
  calendar.Tick();
  EXPECT_TRUE(fake.bodies.empty());
  clock.Set(slot + 0.4);  // a heartbeat a little late
  calendar.Tick();
  ASSERT_EQ(fake.bodies.size(), 1u);
  EXPECT_EQ(fake.bodies[0], json({{"probes", {"cpu"}}, {"duration", "30s"}}));
  EXPECT_DOUBLE_EQ(*calendar.NextUnixSeconds(), slot + 7 * 86400);
  calendar.Tick();  // once per slot
  EXPECT_EQ(fake.bodies.size(), 1u);
  for (const char* reason : FullRunCalendar::kSkipReasons) EXPECT_EQ(Skipped(calendar, reason), 0) << reason;
}

TEST(FullRunCalendarTest, AnActiveRunIsCountedAsSkippedAndTheNextSlotWaits) {
  ManualClock clock(static_cast<double>(kThursday0000));
  FakeSubmit fake;
  fake.answer = Status::kConflict;
  FullRunCalendar calendar(
      clock, [&fake](const json& body) { return fake(body); }, "db-01");
  calendar.Apply(
      Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"20s\"\nwindow_start = "
           "\"00:00\"\nwindow = \"10s\"\n"));
  const double first = *calendar.NextUnixSeconds();
  clock.Set(first);
  calendar.Tick();
  EXPECT_EQ(fake.bodies.size(), 1u);
  EXPECT_EQ(Skipped(calendar, "full_run_active"), 1);
  EXPECT_DOUBLE_EQ(*calendar.NextUnixSeconds(), first + 20);
  fake.answer = Status::kInvalid;
  clock.Set(first + 20);
  calendar.Tick();
  EXPECT_EQ(Skipped(calendar, "rejected"), 1);
}

// A slot whose window closed before the calendar saw it (a stopped process,
// a clock jump) does not run late.
TEST(FullRunCalendarTest, ASlotSeenAfterItsWindowIsMissedNotRunLate) {
  ManualClock clock(static_cast<double>(kFriday1200));
  FakeSubmit fake;
  FullRunCalendar calendar(
      clock, [&fake](const json& body) { return fake(body); }, "db-01");
  calendar.Apply(Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\n"));
  clock.Set(static_cast<double>(kSunday0200 + 4 * 3600 + 1));
  calendar.Tick();
  EXPECT_TRUE(fake.bodies.empty());
  EXPECT_EQ(Skipped(calendar, "missed"), 1);
  EXPECT_GT(*calendar.NextUnixSeconds(), static_cast<double>(kSunday0200 + 6 * 86400));

  // A daemon (re)started after its slot plans the next period: nothing late.
  FullRunCalendar restarted(
      clock, [&fake](const json& body) { return fake(body); }, "db-01");
  restarted.Apply(Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\n"));
  restarted.Tick();
  EXPECT_TRUE(fake.bodies.empty());
  EXPECT_DOUBLE_EQ(*restarted.NextUnixSeconds(), *calendar.NextUnixSeconds());
}

TEST(FullRunCalendarTest, DisabledHasNoNextSlotAndAReloadReplans) {
  ManualClock clock(static_cast<double>(kFriday1200));
  FakeSubmit fake;
  FullRunCalendar calendar(
      clock, [&fake](const json& body) { return fake(body); }, "db-01");
  calendar.Apply(probes::DefaultConfig());
  EXPECT_FALSE(calendar.NextUnixSeconds());
  const auto families = calendar.Metrics()->Collect();
  for (const auto& family : families) EXPECT_NE(family.name, "hostperf_full_run_next_timestamp_seconds");
  EXPECT_EQ(Skipped(calendar, "missed"), 0);                    // counted from 0 even while disabled
  clock.Set(static_cast<double>(kSunday0200 + 4 * 3600 + 60));  // after this week's window
  calendar.Tick();
  EXPECT_TRUE(fake.bodies.empty());

  calendar.Apply(
      Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"24h\"\nwindow_start = \"12:00\"\n"
           "window = \"1h\"\n"));
  const double daily = *calendar.NextUnixSeconds();
  EXPECT_EQ(FormatUtc(daily, "%Y-%m-%d %H"), "2026-12-06 12");
  calendar.Apply(Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\n"));
  EXPECT_DOUBLE_EQ(*calendar.NextUnixSeconds(), static_cast<double>(kSunday0200 + 7 * 86400) +
                                                    std::chrono::duration<double>(HostSplay("db-01", 4h)).count());
}

// A slot at the very end of its window still runs when its tick comes a
// little after the window closed (ticks are about a second apart).
TEST(FullRunCalendarTest, ASlotNearTheWindowEndRunsOnALateTick) {
  // The host whose splay is closest to the end of a 2 s window.
  std::string host;
  for (int i = 0; i < 1000 && host.empty(); ++i) {
    const std::string candidate = "db-" + std::to_string(i);
    if (HostSplay(candidate, 2s) > 1900ms) host = candidate;
  }
  ASSERT_FALSE(host.empty());
  ManualClock clock(static_cast<double>(kThursday0000));
  FakeSubmit fake;
  FullRunCalendar calendar(
      clock, [&fake](const json& body) { return fake(body); }, host);
  calendar.Apply(
      Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"4s\"\nwindow_start = "
           "\"00:00\"\nwindow = \"2s\"\n"));
  const double slot = *calendar.NextUnixSeconds();
  EXPECT_GT(slot, static_cast<double>(kThursday0000) + 1.9);
  clock.Set(static_cast<double>(kThursday0000) + 2.5);  // after the window, 0.5 s after the slot
  calendar.Tick();
  EXPECT_EQ(fake.bodies.size(), 1u);
  EXPECT_EQ(Skipped(calendar, "missed"), 0);
}

// A probe that succeeds at once, for the run manager below.
class QuickProbe final : public probes::Probe {
 public:
  std::string_view Name() const override { return "cpu"; }
  probes::ProbeOutcome MeasureScheduled(const probes::ScheduledContext&) override { return Quick(); }
  probes::ProbeOutcome MeasureFull(const probes::FullRunContext&) override { return Quick(); }
  static probes::ProbeOutcome Quick() { return probes::ProbeOutcome::Success({{"low_load_median_seconds", 150e-6}}); }
};

TEST(FullRunCalendarTest, RunsGoThroughTheRunManagerMarkedAsCalendarRuns) {
  ManualClock clock(static_cast<double>(kThursday0000));
  QuickProbe probe;
  RunManager manager({&probe}, clock, {}, {});
  FullRunCalendar calendar(
      clock, [&manager](const json& body) { return manager.Submit(body, "calendar"); }, "db-01");
  calendar.Apply(
      Load("[full_runs]\nenabled = true\nprobes = [\"cpu\"]\nevery = \"20s\"\nwindow_start = "
           "\"00:00\"\nwindow = \"10s\"\n"));
  clock.Set(*calendar.NextUnixSeconds());
  calendar.Tick();
  const auto recent = manager.Recent(5);
  ASSERT_EQ(recent.size(), 1u);
  EXPECT_EQ(recent[0]["trigger"], "calendar");
  EXPECT_EQ(recent[0]["probes"], json({"cpu"}));
  // A run the API started carries no trigger.
  for (int i = 0; i < 2000 && manager.Active(); ++i) std::this_thread::sleep_for(5ms);
  ASSERT_FALSE(manager.Active());
  const auto api = manager.Submit({{"probes", {"cpu"}}});
  ASSERT_EQ(api.status, Status::kAccepted);
  EXPECT_FALSE(manager.Get(api.id)->contains("trigger"));
}

}  // namespace
}  // namespace hostperf::runs
