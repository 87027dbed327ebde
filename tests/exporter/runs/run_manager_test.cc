#include "hostperf/runs/run_manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/collectable.h>
#include <pthread.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "../metrics_test_util.h"
#include "hostperf/base/clock.h"
#include "hostperf/base/files.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/probe.h"
#include "hostperf/probes/state_file.h"
#include "hostperf/runs/full_run.h"

namespace hostperf::runs {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using probes::ProbeOutcome;
using ::testing::HasSubstr;
using Status = RunManager::Submission::Status;

constexpr auto kPatience = 20s;
// 2026-12-02 11:35:01 UTC.
constexpr double kUnixOrigin = 1796211301.0;

// Time that moves only when told.
class ManualClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override {
    std::lock_guard lock(mu_);
    return std::chrono::steady_clock::time_point() + offset_;
  }
  double UnixSeconds() const override {
    std::lock_guard lock(mu_);
    return kUnixOrigin + std::chrono::duration<double>(offset_).count();
  }
  void Advance(std::chrono::nanoseconds by) {
    std::lock_guard lock(mu_);
    offset_ += by;
  }

 private:
  mutable std::mutex mu_;
  std::chrono::nanoseconds offset_{0};
};

// A probe whose full run reports progress, then waits until released or
// cancelled; it advances the clock by 3 s per run.
// Which of a probe's faces ran.
enum class Face { kScheduled, kFull };

class ScriptedProbe final : public probes::Probe {
 public:
  ScriptedProbe(std::string name, ManualClock& clock) : name_(std::move(name)), clock_(clock) {}

  std::string_view Name() const override { return name_; }
  // The run manager only ever runs the full face; a scheduled run is
  // recorded so that a test would see one.
  ProbeOutcome MeasureScheduled(const probes::ScheduledContext&) override {
    std::lock_guard lock(mu_);
    faces_.push_back(Face::kScheduled);
    return outcome_;
  }
  ProbeOutcome MeasureFull(const probes::FullRunContext& context) override {
    // Progress first: once WaitRunning() returns, the test may read it.
    if (context.on_progress) context.on_progress({"Write", 2s, 5s});
    {
      std::lock_guard lock(mu_);
      ++runs_;
      faces_.push_back(Face::kFull);
      options_.push_back(context.options);
      running_ = true;
      cv_.notify_all();
    }
    std::unique_lock lock(mu_);
    while (!released_ && !context.Cancelled()) cv_.wait_for(lock, 2ms);
    running_ = false;
    released_ = auto_release_;
    clock_.Advance(3s);
    if (context.Cancelled()) return ProbeOutcome::Failure("cancelled", "cancelled", {{"partial", true}});
    return outcome_;
  }

  // Lets the current (and with `always`, every later) run finish.
  void Release(bool always = false) {
    std::lock_guard lock(mu_);
    released_ = true;
    auto_release_ = always;
    cv_.notify_all();
  }
  bool WaitRunning() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kPatience, [this] { return running_; });
  }
  void SetOutcome(ProbeOutcome outcome) {
    std::lock_guard lock(mu_);
    outcome_ = std::move(outcome);
  }
  int runs() const {
    std::lock_guard lock(mu_);
    return runs_;
  }
  std::vector<std::shared_ptr<const probes::ProbeOptions>> options() const {
    std::lock_guard lock(mu_);
    return options_;
  }
  std::vector<Face> faces() const {
    std::lock_guard lock(mu_);
    return faces_;
  }

 private:
  std::string name_;
  ManualClock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool running_ = false;
  bool released_ = false;
  bool auto_release_ = false;
  int runs_ = 0;
  std::vector<Face> faces_;
  std::vector<std::shared_ptr<const probes::ProbeOptions>> options_;
  ProbeOutcome outcome_ = ProbeOutcome::Success({{"cpu_seconds", 1.5}, {"low_load_median_seconds", 150e-6}});
};

class TempDirectory {
 public:
  TempDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hostperf-runs-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDirectory() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

class RunManagerTest : public ::testing::Test {
 protected:
  // Fake probes under real probe names, so that the real option validators apply.
  RunManagerTest() : cpu_("cpu", clock_), disk_("disk", clock_) {}

  std::unique_ptr<RunManager> Make(std::size_t history_limit = 20, std::size_t history_max_bytes = kMaxStateFileBytes,
                                   config::Duration max_run_duration = std::chrono::hours(4)) {
    RunManagerHooks hooks;
    hooks.pause_scheduler = [this] {
      pauses_.fetch_add(1);
      if (block_pause_) {
        std::unique_lock lock(pause_mu_);
        pause_cv_.wait_for(lock, kPatience, [this] { return !block_pause_; });
      }
    };
    hooks.resume_scheduler = [this] { resumes_.fetch_add(1); };
    hooks.config = [max_run_duration] {
      auto config = std::make_shared<config::Config>(probes::DefaultConfig());
      config->api.max_run_duration = max_run_duration;
      return std::shared_ptr<const config::Config>(std::move(config));
    };
    RunManagerOptions options;
    options.history_file = history_file();
    options.history_limit = history_limit;
    options.history_max_bytes = history_max_bytes;
    return std::make_unique<RunManager>(std::vector<probes::Probe*>{&cpu_, &disk_}, clock_, std::move(hooks),
                                        std::move(options));
  }

  std::filesystem::path history_file() const { return dir_.path() / "runs.json"; }

  // The files an unloadable history was moved to (runs.json.unloadable-<time>[-N]).
  std::vector<std::filesystem::path> SetAside() const {
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path())) {
      if (entry.path().filename().string().rfind("runs.json.unloadable-", 0) == 0) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    return found;
  }

  static std::string ReadAll(const std::filesystem::path& path) { return ReadFile(path).value_or(""); }

  // Polls until the run reaches `state` (true) or patience runs out.
  static bool WaitForState(const RunManager& manager, const std::string& id, const std::string& state) {
    const auto until = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < until) {
      const auto run = manager.Get(id);
      if (run && run->value("state", "") == state) return true;
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }

  static std::string Accepted(RunManager& manager, const json& body) {
    const auto submission = manager.Submit(body);
    EXPECT_EQ(submission.status, Status::kAccepted) << submission.error;
    return submission.id;
  }

  void UnblockPause() {
    std::lock_guard lock(pause_mu_);
    block_pause_ = false;
    pause_cv_.notify_all();
  }

  TempDirectory dir_;
  ManualClock clock_;
  ScriptedProbe cpu_;
  ScriptedProbe disk_;
  std::atomic<int> pauses_{0};
  std::atomic<int> resumes_{0};
  std::mutex pause_mu_;
  std::condition_variable pause_cv_;
  std::atomic<bool> block_pause_{false};
};

TEST_F(RunManagerTest, RunsOnItsOwnThreadWithProgressAndResults) {
  auto manager = Make();
  const std::string id = Accepted(*manager, {{"probes", {"cpu"}}});
  EXPECT_EQ(id, "r-20261202-113501-1");
  ASSERT_TRUE(cpu_.WaitRunning());  // Submit returned while the probe runs elsewhere

  const auto running = manager->Get(id);
  ASSERT_TRUE(running);
  EXPECT_EQ((*running)["state"], "running");
  EXPECT_EQ((*running)["progress"]["probe"], "cpu");
  EXPECT_EQ((*running)["progress"]["test"], "Write");
  EXPECT_DOUBLE_EQ((*running)["progress"]["probe_elapsed_seconds"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ((*running)["progress"]["probe_remaining_seconds"].get<double>(), 5.0);
  EXPECT_EQ((*running)["progress"]["probes_total"], 1);
  EXPECT_TRUE(manager->Active());
  EXPECT_EQ(pauses_.load(), 1);
  EXPECT_EQ(resumes_.load(), 0);

  cpu_.Release();
  ASSERT_TRUE(WaitForState(*manager, id, "succeeded"));
  const auto done = manager->Get(id);
  EXPECT_EQ((*done)["results"]["cpu"]["cpu_seconds"], 1.5);
  EXPECT_EQ((*done)["outcomes"]["cpu"]["status"], "success");
  EXPECT_DOUBLE_EQ((*done)["outcomes"]["cpu"]["duration_seconds"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ((*done)["finished_unix_seconds"].get<double>(), kUnixOrigin + 3);
  EXPECT_EQ((*done)["progress"]["probes_done"], 1);
  EXPECT_FALSE(manager->Active());
  EXPECT_EQ(resumes_.load(), 1);
  EXPECT_THAT(cpu_.faces(), ::testing::ElementsAre(Face::kFull));
}

TEST_F(RunManagerTest, OneRunAtATime) {
  auto manager = Make();
  const std::string first = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(cpu_.WaitRunning());
  const auto second = manager->Submit({{"probes", {"disk"}}});
  EXPECT_EQ(second.status, Status::kConflict);
  EXPECT_EQ(second.id, first);
  EXPECT_THAT(second.error, HasSubstr("one full run at a time"));
  cpu_.Release();
  ASSERT_TRUE(WaitForState(*manager, first, "succeeded"));
  disk_.Release(true);
  const std::string third = Accepted(*manager, {{"probes", {"disk"}}});
  EXPECT_THAT(third, ::testing::EndsWith("-2"));
  EXPECT_TRUE(WaitForState(*manager, third, "succeeded"));
  EXPECT_EQ(disk_.runs(), 1);
}

TEST_F(RunManagerTest, ConcurrentSubmissionsAcceptExactlyOne) {
  auto manager = Make();
  std::atomic<int> accepted{0};
  std::atomic<int> conflicts{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 20; ++i) {
    threads.emplace_back([&] {
      const auto submission = manager->Submit({{"probes", {"cpu"}}});
      (submission.status == Status::kAccepted ? accepted : conflicts).fetch_add(1);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(accepted.load(), 1);
  EXPECT_EQ(conflicts.load(), 19);
  cpu_.Release();
}

TEST_F(RunManagerTest, RunsEveryProbeInOrderAndFailsOnAFailedProbe) {
  auto manager = Make();
  cpu_.SetOutcome(ProbeOutcome::Failure("checksum_mismatch", "bad checksum", {{"checksum_ok", false}}));
  cpu_.Release(true);
  disk_.Release(true);
  const std::string id = Accepted(*manager, {{"probes", {"cpu", "disk"}}});
  ASSERT_TRUE(WaitForState(*manager, id, "failed"));
  const auto run = manager->Get(id);
  EXPECT_EQ((*run)["reason"], "cpu: checksum_mismatch");
  EXPECT_EQ((*run)["outcomes"]["cpu"]["status"], "failure");
  EXPECT_EQ((*run)["outcomes"]["cpu"]["message"], "bad checksum");
  EXPECT_EQ((*run)["results"]["cpu"]["checksum_ok"], false);
  EXPECT_EQ((*run)["outcomes"]["disk"]["status"], "success");  // the others still run
  EXPECT_EQ((*run)["progress"]["probes_done"], 2);
}

TEST_F(RunManagerTest, CancelStopsTheProbeAndResumesTheScheduler) {
  auto manager = Make();
  const std::string id = Accepted(*manager, {{"probes", {"cpu", "disk"}}});
  ASSERT_TRUE(cpu_.WaitRunning());
  EXPECT_EQ(manager->Cancel(id), RunManager::CancelStatus::kCancelling);
  ASSERT_TRUE(WaitForState(*manager, id, "cancelled"));
  const auto run = manager->Get(id);
  EXPECT_EQ((*run)["results"]["cpu"]["partial"], true);
  EXPECT_FALSE((*run)["outcomes"].contains("disk"));  // never started
  EXPECT_EQ(disk_.runs(), 0);
  EXPECT_EQ(resumes_.load(), 1);
  EXPECT_EQ(manager->Cancel(id), RunManager::CancelStatus::kFinished);
  EXPECT_EQ(manager->Cancel("r-20990101-000000-9"), RunManager::CancelStatus::kNotFound);
  EXPECT_FALSE(manager->Active());
}

TEST_F(RunManagerTest, CancelWhileWaitingForTheSchedulerRunsNoProbe) {
  block_pause_ = true;
  auto manager = Make();
  const std::string id = Accepted(*manager, {{"probes", {"cpu"}}});
  while (pauses_.load() == 0) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(manager->Cancel(id), RunManager::CancelStatus::kCancelling);
  UnblockPause();
  ASSERT_TRUE(WaitForState(*manager, id, "cancelled"));
  EXPECT_EQ(cpu_.runs(), 0);
  EXPECT_EQ(resumes_.load(), 1);
}

TEST_F(RunManagerTest, InvalidBodiesAreRejectedWithAReason) {
  auto manager = Make();
  struct Case {
    json body;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {json::array(), "must be a JSON object"},
      {{{"probes", "cpu"}}, "probes: expected a non-empty list"},
      {{{"probes", json::array()}}, "probes: expected a non-empty list"},
      {{{"probes", {"gpu"}}}, "unknown probe \"gpu\""},
      {{{"probes", {"cpu", "cpu"}}}, "listed twice"},
      {{{"probes", {"memory"}}}, "not available"},
      {{{"probes", {"cpu"}}, {"bogus", 1}}, "unknown key \"bogus\""},
      {{{"probes", {"cpu"}}, {"duration", 60}}, "duration: expected an interval"},
      {{{"probes", {"cpu"}}, {"duration", "soon"}}, "duration:"},
      {{{"probes", {"cpu"}}, {"options", {{"cpu", {{"quiet", true}}}}}}, "takes no options"},
      {{{"probes", {"cpu"}}, {"options", {{"disk", json::object()}}}}, "\"disk\" is not one of the probes"},
      {{{"probes", {"disk"}}, {"options", {{"disk", {{"bogus", 1}}}}}}, "options.disk: unknown disk option \"bogus\""},
      {{{"probes", {"disk"}}, {"options", {{"disk", {{"thread_count", "many"}}}}}}, "options.disk: thread_count"},
      {{{"probes", {"disk"}}, {"options", {{"disk", {{"directories", "/data"}}}}}}, "directories: expected an array"},
  };
  for (const Case& c : cases) {
    const auto submission = manager->Submit(c.body);
    EXPECT_EQ(submission.status, Status::kInvalid) << c.body.dump();
    EXPECT_THAT(submission.error, HasSubstr(c.reason)) << c.body.dump();
  }
  EXPECT_TRUE(manager->Recent(10).empty());
  EXPECT_FALSE(manager->Active());
}

TEST_F(RunManagerTest, TopLevelDurationFillsTheProbesOwnDurationOption) {
  auto manager = Make();
  disk_.Release(true);
  const std::string id = Accepted(
      *manager, {{"probes", {"disk"}}, {"duration", "90s"}, {"options", {{"disk", {{"directories", {"/tmp/x"}}}}}}});
  ASSERT_TRUE(WaitForState(*manager, id, "succeeded"));
  ASSERT_EQ(disk_.options().size(), 1u);
  const auto& disk = dynamic_cast<const probes::disk::FullRunOptions&>(*disk_.options()[0]);
  EXPECT_EQ(disk.duration, 90s);
  EXPECT_EQ(disk.directories, std::vector<std::string>{"/tmp/x"});
  // The history keeps the options and the duration as given.
  const auto run = manager->Get(id);
  EXPECT_EQ((*run)["duration"], "90s");
  EXPECT_EQ((*run)["options"]["disk"]["directories"], json({"/tmp/x"}));
}

TEST_F(RunManagerTest, HistorySurvivesARestart) {
  std::string id;
  {
    auto manager = Make();
    cpu_.Release(true);
    id = Accepted(*manager, {{"probes", {"cpu"}}});
    ASSERT_TRUE(WaitForState(*manager, id, "succeeded"));
  }
  auto restarted = Make();
  const auto run = restarted->Get(id);
  ASSERT_TRUE(run);
  EXPECT_EQ((*run)["state"], "succeeded");
  EXPECT_EQ((*run)["results"]["cpu"]["cpu_seconds"], 1.5);
  // Ids continue after the restart.
  const std::string next = Accepted(*restarted, {{"probes", {"cpu"}}});
  EXPECT_THAT(next, ::testing::EndsWith("-2"));
  EXPECT_TRUE(WaitForState(*restarted, next, "succeeded"));
}

TEST_F(RunManagerTest, RunsFoundActiveAtStartUpAreMarkedInterrupted) {
  const json history = {{"version", 1},
                        {"runs",
                         {{{"id", "r-20261201-000000-7"}, {"state", "running"}, {"probes", {"disk"}}},
                          {{"id", "r-20261201-000001-8"}, {"state", "queued"}, {"probes", {"cpu"}}},
                          {{"id", "../../etc/passwd"}, {"state", "succeeded"}}}}};
  ASSERT_FALSE(probes::WriteFileAtomically(history_file(), history.dump()));
  auto manager = Make();
  for (const char* id : {"r-20261201-000000-7", "r-20261201-000001-8"}) {
    const auto run = manager->Get(id);
    ASSERT_TRUE(run) << id;
    EXPECT_EQ((*run)["state"], "failed");
    EXPECT_EQ((*run)["reason"], "interrupted");
  }
  EXPECT_EQ(manager->Recent(10).size(), 2u);  // the malformed record is dropped
  EXPECT_FALSE(manager->Active());
  // Rewritten on disk, so the next start does not log them again.
  const json stored = json::parse(*probes::ReadStateFile(history_file()));
  EXPECT_EQ(stored["runs"][0]["state"], "failed");
  EXPECT_THAT(Accepted(*manager, {{"probes", {"cpu"}}}), ::testing::EndsWith("-9"));
  cpu_.Release();
}

TEST_F(RunManagerTest, ShutdownDuringARunRecordsItAsInterrupted) {
  std::string id;
  {
    auto manager = Make();
    id = Accepted(*manager, {{"probes", {"cpu"}}});
    ASSERT_TRUE(cpu_.WaitRunning());
  }  // the destructor cancels the probe and joins
  EXPECT_EQ(resumes_.load(), 1);
  auto restarted = Make();
  const auto run = restarted->Get(id);
  ASSERT_TRUE(run);
  EXPECT_EQ((*run)["state"], "failed");
  EXPECT_EQ((*run)["reason"], "interrupted");
}

TEST_F(RunManagerTest, KeepsTheLastNRuns) {
  auto manager = Make(2);
  cpu_.Release(true);
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(Accepted(*manager, {{"probes", {"cpu"}}}));
    ASSERT_TRUE(WaitForState(*manager, ids.back(), "succeeded"));
  }
  EXPECT_FALSE(manager->Get(ids[0]));
  const auto recent = manager->Recent(10);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0]["id"], ids[2]);  // newest first
  EXPECT_EQ(recent[1]["id"], ids[1]);
}

// Submit runs on an HTTP worker, whose stack is small (102400 bytes in
// Debian's CivetWeb, tests/exporter/http/worker_stack_test.cc), and persists
// the history: the finished runs' results, however nested, are not printed
// again there (under ASan each level of nesting costs the printer kilobytes).
TEST_F(RunManagerTest, SubmitOnAWorkerSizedStackDoesNotReprintFinishedResults) {
  json nested = {{"leaf", std::string(64, 'x')}};
  for (int level = 0; level < 24; ++level) nested = {{"level", json::array({nested, level})}};
  cpu_.SetOutcome(ProbeOutcome::Success(nested));
  cpu_.Release(true);
  auto manager = Make();
  const std::string first = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(WaitForState(*manager, first, "succeeded"));

  struct Call {
    RunManager* manager;
    RunManager::Submission submission;
  } call{manager.get(), {}};
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, 102400), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* arg) -> void* {
                  auto* c = static_cast<Call*>(arg);
                  c->submission = c->manager->Submit({{"probes", {"cpu"}}});
                  return nullptr;
                },
                &call),
            0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(call.submission.status, Status::kAccepted) << call.submission.error;
  ASSERT_TRUE(WaitForState(*manager, call.submission.id, "succeeded"));

  // The spliced history is one valid document that keeps every result whole.
  std::ifstream in(history_file());
  const json history = json::parse(in, nullptr, false);
  ASSERT_TRUE(history.is_object());
  EXPECT_EQ(history["version"], 1);
  ASSERT_EQ(history["runs"].size(), 2u);
  EXPECT_EQ(history["runs"][0]["results"]["cpu"], nested);
  EXPECT_EQ(history["runs"][1]["id"], call.submission.id);
}

TEST_F(RunManagerTest, CorruptHistoryIsMovedAsideAndAFreshOneStarted) {
  { std::ofstream(history_file()) << "{ not json"; }
  auto manager = Make();
  EXPECT_TRUE(manager->Recent(10).empty());
  ASSERT_EQ(SetAside().size(), 1u);
  EXPECT_EQ(ReadAll(SetAside()[0]), "{ not json");
  EXPECT_EQ(test_util::SampleValue(manager->Metrics()->Collect(), "hostperf_full_run_history_errors_total",
                                   {{"error", "unloadable"}}),
            1);
}

// A history found over its cap is moved aside whole and a new one started;
// a second bad history at the same second gets its own name: nothing is
// overwritten. A good one says how many runs it held.
TEST_F(RunManagerTest, HistoryOverItsCapIsMovedAsideNeverOverwritten) {
  const json history = {{"version", 1},
                        {"runs",
                         {{{"id", "r-20261201-000000-1"}, {"state", "succeeded"}, {"probes", {"cpu"}}},
                          {{"id", "r-20261201-000001-2"}, {"state", "failed"}, {"probes", {"cpu"}}}}}};
  ASSERT_FALSE(probes::WriteFileAtomically(history_file(), history.dump()));
  {
    auto manager = Make(20, 4096);
    EXPECT_EQ(manager->Recent(10).size(), 2u);
    EXPECT_EQ(test_util::SampleValue(manager->Metrics()->Collect(), "hostperf_full_run_history_loaded_runs"), 2);
    EXPECT_EQ(test_util::SampleValue(manager->Metrics()->Collect(), "hostperf_full_run_history_errors_total",
                                     {{"error", "unloadable"}}),
              0);
  }
  const std::string original = ReadAll(history_file());
  for (int start = 0; start < 2; ++start) {
    ASSERT_FALSE(probes::WriteFileAtomically(history_file(), original));
    auto manager = Make(20, original.size() - 1);
    EXPECT_TRUE(manager->Recent(10).empty());
    EXPECT_EQ(test_util::SampleValue(manager->Metrics()->Collect(), "hostperf_full_run_history_loaded_runs"), 0);
    cpu_.Release(true);
    const std::string id = Accepted(*manager, {{"probes", {"cpu"}}});
    ASSERT_TRUE(WaitForState(*manager, id, "succeeded"));
  }
  const auto aside = SetAside();
  ASSERT_EQ(aside.size(), 2u);
  for (const auto& path : aside) EXPECT_EQ(ReadAll(path), original) << path;
  EXPECT_NE(ReadAll(history_file()), original);
}

// Text from a probe (a remote server's error body, say) is stored bounded and
// with control characters escaped; a result too large is replaced by its size.
TEST_F(RunManagerTest, StoredTextAndResultsAreBounded) {
  auto manager = Make();
  const std::string message = "\x1b]0;owned\x07\x1b[2J" + std::string(16 << 20, 'x');
  cpu_.SetOutcome(ProbeOutcome::Failure("remote_error", message, json::object()));
  cpu_.Release(true);
  const std::string failed = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(WaitForState(*manager, failed, "failed"));
  const auto run = manager->Get(failed);
  ASSERT_TRUE(run);
  const std::string stored = (*run)["outcomes"]["cpu"]["message"];
  EXPECT_LE(stored.size(), kMaxStoredTextBytes + 32);
  EXPECT_EQ(stored.find('\x1b'), std::string::npos);
  EXPECT_EQ(stored.rfind("\\x1b]0;owned\\x07\\x1b[2J", 0), 0u) << stored.substr(0, 40);
  EXPECT_THAT(stored, ::testing::EndsWith("(" + std::to_string(message.size()) + " bytes)"));

  // A short message with a control character is escaped whole, with no
  // truncation note.
  cpu_.SetOutcome(ProbeOutcome::Failure("remote_error", "line one\nline two", json::object()));
  const std::string short_failed = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(WaitForState(*manager, short_failed, "failed"));
  EXPECT_EQ((*manager->Get(short_failed))["outcomes"]["cpu"]["message"], "line one\\x0aline two");

  cpu_.SetOutcome(ProbeOutcome::Success({{"rows", std::string(kMaxStoredResultBytes, 'r')}}));
  const std::string large = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(WaitForState(*manager, large, "succeeded"));
  const json result = (*manager->Get(large))["results"]["cpu"];
  EXPECT_EQ(result["truncated"], true);
  EXPECT_GT(result["bytes"].get<std::size_t>(), kMaxStoredResultBytes);
  EXPECT_LT(std::filesystem::file_size(history_file()), 64u << 10);
}

// A history that would outgrow its cap drops the oldest results first; every
// record stays and the file stays under the cap.
TEST_F(RunManagerTest, HistoryKeepsUnderItsCapByDroppingTheOldestResults) {
  constexpr std::size_t kCap = 8 << 10;
  auto manager = Make(20, kCap);
  cpu_.SetOutcome(ProbeOutcome::Success({{"rows", std::string(3000, 'r')}}));
  cpu_.Release(true);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    ids.push_back(Accepted(*manager, {{"probes", {"cpu"}}}));
    ASSERT_TRUE(WaitForState(*manager, ids.back(), "succeeded"));
  }
  EXPECT_LE(std::filesystem::file_size(history_file()), kCap);
  const json stored = json::parse(ReadAll(history_file()));
  ASSERT_EQ(stored["runs"].size(), 4u);
  EXPECT_EQ(stored["runs"][0]["results_dropped"], true);
  EXPECT_TRUE(stored["runs"][0]["results"].empty());
  EXPECT_EQ(stored["runs"][3]["results"]["cpu"]["rows"].get<std::string>().size(), 3000u);
}

// A history nested deeper than kMaxStoredJsonDepth is corrupt, not
// built (copying such a value recurses); an accepted request's depth fits.
TEST_F(RunManagerTest, DeeplyNestedHistoryIsMovedAside) {
  {
    std::ofstream(history_file()) << R"({"runs": [{"id": "r-20260101T000000Z-1", "state": "succeeded", "options": )"
                                  << std::string(5000, '[') << std::string(5000, ']') << "}]}";
  }
  auto manager = Make();
  EXPECT_TRUE(manager->Recent(10).empty());
  EXPECT_EQ(SetAside().size(), 1u);
}

TEST_F(RunManagerTest, LastFullRunReachesTheMetrics) {
  auto manager = Make();
  const auto metrics = manager->Metrics();
  EXPECT_EQ(test_util::SampleValue(metrics->Collect(), "hostperf_full_run_active"), 0);
  EXPECT_EQ(test_util::SampleValue(metrics->Collect(), "hostperf_full_runs_total", {{"state", "succeeded"}}), 0);
  EXPECT_FALSE(test_util::SampleValue(metrics->Collect(), "hostperf_full_run_success", {{"probe", "cpu"}}));

  const std::string id = Accepted(*manager, {{"probes", {"cpu"}}});
  ASSERT_TRUE(cpu_.WaitRunning());
  EXPECT_EQ(test_util::SampleValue(metrics->Collect(), "hostperf_full_run_active"), 1);
  cpu_.Release();
  ASSERT_TRUE(WaitForState(*manager, id, "succeeded"));
  const auto families = metrics->Collect();
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_run_active"), 0);
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_runs_total", {{"state", "succeeded"}}), 1);
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_run_success", {{"probe", "cpu"}}), 1);
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_run_duration_seconds", {{"probe", "cpu"}}), 3);
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_run_last_timestamp_seconds", {{"probe", "cpu"}}),
            kUnixOrigin + 3);
  EXPECT_EQ(test_util::SampleValue(families, "hostperf_full_run_figure",
                                   {{"probe", "cpu"}, {"figure", "low_load_median_seconds"}}),
            150e-6);
}

// api.max_run_duration: a longer "duration" is refused; a run that outlives
// it gives its probe a deadline and starts no further probe.
TEST_F(RunManagerTest, RunsAreHeldToTheConfiguredMaximumDuration) {
  auto manager = Make(20, kMaxStateFileBytes, 2s);
  const auto refused = manager->Submit({{"probes", {"cpu"}}, {"duration", "100000h"}});
  EXPECT_EQ(refused.status, Status::kInvalid);
  EXPECT_THAT(refused.error, HasSubstr("longer than this host's api.max_run_duration (2s)"));

  cpu_.Release(true);  // a probe run advances the clock by 3 s: past the cap
  disk_.Release(true);
  const std::string id = Accepted(*manager, {{"probes", {"cpu", "disk"}}});
  ASSERT_TRUE(WaitForState(*manager, id, "failed"));
  const auto run = manager->Get(id);
  ASSERT_TRUE(run);
  EXPECT_THAT((*run)["reason"].get<std::string>(), HasSubstr("api.max_run_duration (2s) reached before disk"));
  EXPECT_TRUE((*run)["outcomes"].contains("cpu"));
  EXPECT_FALSE((*run)["outcomes"].contains("disk"));
  EXPECT_EQ(disk_.runs(), 0);  // the second probe never started
}

TEST_F(RunManagerTest, ValidIdsOnly) {
  EXPECT_TRUE(RunManager::IsValidId("r-20261202-113501-1"));
  EXPECT_FALSE(RunManager::IsValidId("r-"));
  EXPECT_FALSE(RunManager::IsValidId("x-20261202-113501-1"));
  EXPECT_FALSE(RunManager::IsValidId("r-2026/../x"));
  EXPECT_FALSE(RunManager::IsValidId("r-" + std::string(100, '1')));
}

// The CLI's path: options parsed once at the edge (bad ones never reach a
// run), then RunFullProbe builds a full-mode context and runs the probe.
TEST(RunFullProbeTest, ValidatesOptionsAndRunsTheFullMode) {
  ManualClock clock;
  ScriptedProbe disk("disk", clock);
  disk.Release(true);
  std::atomic<bool> cancel{false};
  const config::Config config = probes::DefaultConfig();
  const auto bad = probes::ParseProbeOptions("disk", {{"bogus", true}});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.reason(), "bad_options");
  EXPECT_THAT(bad.error(), HasSubstr("unknown disk option \"bogus\""));
  EXPECT_EQ(disk.runs(), 0);

  const auto parsed = probes::ParseProbeOptions("disk", nullptr);
  ASSERT_TRUE(parsed) << parsed.error();
  const auto good = RunFullProbe(disk, config, *parsed, &cancel);
  EXPECT_EQ(good.status, ProbeOutcome::Status::kSuccess);
  EXPECT_THAT(disk.faces(), ::testing::ElementsAre(Face::kFull));
  ASSERT_EQ(disk.options().size(), 1u);
  // null: the disk module's defaults.
  EXPECT_EQ(dynamic_cast<const probes::disk::FullRunOptions&>(*disk.options()[0]).duration,
            probes::disk::kDefaultDuration);
}

// One duration grammar: the run's length reaches each probe as its own
// typed duration, and a probe's own "duration" (a string or seconds) wins.
TEST(ParseProbeOptionsTest, TheRunDurationReachesEachProbeTyped) {
  using probes::ParseProbeOptions;
  const auto disk = ParseProbeOptions("disk", nullptr, 2min);
  ASSERT_TRUE(disk) << disk.error();
  EXPECT_EQ(dynamic_cast<const probes::disk::FullRunOptions&>(**disk).duration, 2min);
  const auto net = ParseProbeOptions("net", json::object(), 1500ms);
  ASSERT_TRUE(net) << net.error();
  EXPECT_EQ(dynamic_cast<const probes::net::NetOptions&>(**net).duration, 1500ms);
  const auto cpu = ParseProbeOptions("cpu", nullptr, 1min);  // no run-length option
  ASSERT_TRUE(cpu) << cpu.error();
  EXPECT_EQ(*cpu, nullptr);
  const auto own = ParseProbeOptions("disk", {{"duration", "5s"}}, 1min);  // the probe's own wins
  ASSERT_TRUE(own) << own.error();
  EXPECT_EQ(dynamic_cast<const probes::disk::FullRunOptions&>(**own).duration, 5s);
  const auto seconds = ParseProbeOptions("disk", {{"duration", 7}});  // seconds, as net always took
  ASSERT_TRUE(seconds) << seconds.error();
  EXPECT_EQ(dynamic_cast<const probes::disk::FullRunOptions&>(**seconds).duration, 7s);
  const auto net_text = ParseProbeOptions("net", {{"duration", "1.5s"}});  // a string, as disk always took
  ASSERT_TRUE(net_text) << net_text.error();
  EXPECT_EQ(dynamic_cast<const probes::net::NetOptions&>(**net_text).duration, 1500ms);
  const auto too_long = ParseProbeOptions("net", json::object(), 10min);  // net allows at most 60 s
  ASSERT_FALSE(too_long);
  EXPECT_THAT(too_long.error(), HasSubstr("options.net: duration"));
  EXPECT_EQ(too_long.reason(), "bad_options");
  EXPECT_FALSE(ParseProbeOptions("memory", {{"threads", "two"}}));
  EXPECT_FALSE(ParseProbeOptions("nope", nullptr));
}

}  // namespace
}  // namespace hostperf::runs
