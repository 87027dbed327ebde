// Signals as fault injection: a SIGHUP storm while the config file
// flips between good and bad, and SIGTERM in the middle of each probe's run.
// The daemon keeps serving on the last good config, and stops with exit code
// 0 leaving nothing behind but its state files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fault_harness.h"
#include "net_http_fault_harness.h"
#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kToken = "fault-signals-token-0123456789abcdef";

// Replaces `path` the way configuration management does (write, rename), so
// that a reload never reads half a file.
void ReplaceFile(const std::string& path, const std::string& content) {
  {
    std::ofstream out(path + ".new", std::ios::trunc);
    out << content;
  }
  fs::rename(path + ".new", path);
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size())) ++count;
  return count;
}

// A good config whose disk interval (`minutes`) tells which one is running;
// the disk probe, the cheapest, runs soon after each reload.
std::string GoodConfig(const TempDir& dir, int minutes, int responder_port) {
  // Every other probe off (the net responder, which runs even then, on a free port).
  const std::map<std::string, std::string> sections = {
      {"disk", "interval = \"" + std::to_string(minutes) + "min\"\ndirectories = [\"" + dir.path() +
                   "/data\"]\nbytes_per_run = \"1mb\"\nmax_buffer_size = \"64kb\"\nreserve = \"1kb\"\n"},
      {"net", "enabled = false\nports = [" + std::to_string(responder_port) + "]\n"},
  };
  return "state_directory = \"" + dir.path() + "/state\"\n" + "[scheduler]\nfirst_run_splay = \"1s\"\n" +
         ProbeSectionsToml(sections, "enabled = false\n");
}

// Bad in turn: a value of the wrong kind, an unknown key, broken TOML.
std::string BadConfig(int i) {
  switch (i % 3) {
    case 0:
      return "[probes.disk]\ninterval = \"soon\"\n";
    case 1:
      return "[probes.disk]\nintervall = \"5min\"\n";
    default:
      return "[probes.disk\ninterval = \"5min\"\n";
  }
}

const std::string kDiskInterval = "hostperf_probe_interval_seconds{probe=\"disk\"}";
const std::string kReloadOk = "hostperf_config_last_reload_successful";

TEST(SignalFault, SighupStormWithAlternatingGoodAndBadConfigs) {
  TempDir dir;
  fs::create_directory(dir.path() + "/data");
  const int port = FreeLoopbackPort();
  const std::string path = dir.Write("c.toml", GoodConfig(dir, 60, port));
  FaultDaemon daemon(path);
  ASSERT_TRUE(daemon.WaitFor(kDiskInterval, 3600, seconds(30))) << daemon.process().Stderr();

  // Scrapes all through the storm.
  std::atomic<bool> storming{true};
  std::atomic<int> scrapes{0};
  std::atomic<int> failed_scrapes{0};
  std::thread scraper([&] {
    while (storming.load()) {
      const auto reply = daemon.Get("/metrics");
      (reply && reply->status == 200 && reply->body.find(kReloadOk) != std::string::npos ? scrapes : failed_scrapes)
          .fetch_add(1);
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  constexpr int kSignals = 50;
  for (int i = 0; i < kSignals; ++i) {
    ReplaceFile(path, i % 2 == 0 ? GoodConfig(dir, 61 + i, port) : BadConfig(i));
    daemon.process().Signal(SIGHUP);
    std::this_thread::sleep_for(milliseconds(60));
  }
  storming.store(false);
  scraper.join();
  EXPECT_EQ(failed_scrapes.load(), 0);
  EXPECT_GT(scrapes.load(), 10);
  ASSERT_FALSE(daemon.process().Wait(milliseconds(0)).has_value()) << daemon.process().Stderr();

  // Pending signals merge, so fewer reloads than signals; both kinds happened.
  ASSERT_TRUE(
      Eventually([&] { return Count(daemon.process().Stderr(), "SIGHUP: reloading config") >= 10; }, seconds(10)));
  const std::string log = daemon.process().Stderr();
  ::testing::Test::RecordProperty("scrapes", scrapes.load());
  ::testing::Test::RecordProperty("reloads", static_cast<int>(Count(log, "SIGHUP: reloading config")));
  ::testing::Test::RecordProperty("good_reloads", static_cast<int>(Count(log, "config reloaded from")));
  EXPECT_GE(Count(log, "config reloaded from"), 1u) << log;
  EXPECT_GE(Count(log, "config reload failed, keeping the running config"), 1u) << log;
  EXPECT_THAT(log, HasSubstr(path + ":"));  // file:line:column of each bad one

  // The end of the storm: a known good config, then a bad one on top.
  ReplaceFile(path, GoodConfig(dir, 123, port));
  daemon.process().Signal(SIGHUP);
  ASSERT_TRUE(
      Eventually([&] { return daemon.Value(kDiskInterval) == 123 * 60 && daemon.Value(kReloadOk) == 1; }, seconds(20)))
      << daemon.process().Stderr();
  const std::size_t failures_before = Count(daemon.process().Stderr(), "config reload failed");
  ReplaceFile(path, BadConfig(0));
  daemon.process().Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] { return Count(daemon.process().Stderr(), "config reload failed") > failures_before; },
                         seconds(20)));
  const std::string metrics = daemon.Metrics();
  EXPECT_EQ(Sample(metrics, kReloadOk), 0.0) << metrics;
  EXPECT_EQ(Sample(metrics, kDiskInterval), 123.0 * 60) << "not running on the last good config";
  EXPECT_GT(Sample(metrics, "hostperf_config_last_reload_success_timestamp_seconds").value_or(0), 0);

  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(20)), 0) << daemon.process().Stderr();
  EXPECT_THAT(ScratchFilesUnder(dir.path()), ::testing::IsEmpty());
}

// Full runs through the run API that last far longer than the test waits.
// The probes listed here are known to run that long (cpu with its defaults);
// any other probe runs with its defaults, which may end before the signal.
bool KnownLongRun(const std::string& probe) {
  return probe == "cpu" || probe == "disk" || probe == "net" || probe == "memory";
}

json LongRun(const std::string& probe, const std::string& data) {
  json body = {{"probes", {probe}}};
  if (probe == "disk") {
    body["duration"] = "5min";
    body["options"]["disk"] = {{"directories", {data}},     {"data_size", "4mb"},      {"thread_count", 1},
                               {"max_buffer_size", "64kb"}, {"log_interval", "200ms"}, {"disable_direct_io", true}};
  } else if (probe == "net") {
    body["duration"] = "60s";  // the most a net run may take
    body["options"]["net"] = {{"tests", {"latency", "tcp-throughput"}}, {"datarate", 64}};
  } else if (probe == "memory") {
    body["options"]["memory"] = {{"array_elements", 2 << 20}, {"iterations", 1000}, {"threads", 1}};
  }
  return body;
}

// Everything under `root` except the test's own inputs, relative.
std::vector<std::string> FilesLeft(const std::string& root) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::string relative = fs::relative(entry.path(), root).string();
    if (relative != "c.toml" && relative != "token") files.push_back(relative);
  }
  return files;
}

class SigtermDuringProbe : public ::testing::TestWithParam<std::string> {};

TEST_P(SigtermDuringProbe, ExitsZeroQuicklyAndLeavesOnlyStateFiles) {
  const std::string probe = GetParam();
  TempDir dir;
  const std::string data = dir.path() + "/data";
  fs::create_directory(data);
  const std::string config =
      dir.Write("c.toml", "state_directory = \"" + dir.path() + "/state\"\n[api]\ntoken_file = \"" +
                              dir.Write("token", kToken) + "\"\n" +
                              DisabledProbesToml({{"disk", "reserve = \"1kb\"\n"},
                                                  {"net", "ports = [" + std::to_string(FreeLoopbackPort()) + "]\n"}}));
  FaultDaemon daemon(config);
  const HttpReply accepted = daemon.Call("POST", "/api/v1/runs", kToken, LongRun(probe, data).dump());
  ASSERT_EQ(accepted.status, 202) << accepted.body << daemon.process().Stderr();
  const std::string id = json::parse(accepted.body).value("id", "");

  // Running: the run says so and the probe reported progress (the disk probe:
  // its files exist), or it has had a second of work.
  json run;
  bool ended = false;
  const auto started = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually(
      [&] {
        run = json::parse(daemon.Call("GET", "/api/v1/runs/" + id, kToken).body, nullptr, false);
        if (!run.is_object()) return false;
        const std::string state = run.value("state", "");
        ended = state != "queued" && state != "running";
        if (ended) return true;
        if (state != "running") return false;
        if (run["progress"].value("probe", "") != probe) return false;
        if (probe == "disk") return !ScratchFilesUnder(data).empty() && !run["progress"].value("test", "").empty();
        return std::chrono::steady_clock::now() - started > seconds(1);
      },
      seconds(60)))
      << run.dump() << daemon.process().Stderr();
  // A run that ended first: a failure for the probes known to run long; for
  // another probe the signal then finds the daemon idle, which must end as
  // cleanly.
  if (ended) {
    ASSERT_FALSE(KnownLongRun(probe)) << probe << " run ended before the signal: " << run.dump();
    EXPECT_EQ(run.value("state", ""), "succeeded") << run.dump() << daemon.process().Stderr();
  }
  ::testing::Test::RecordProperty("run_ended_before_signal", ended ? "yes" : "no");

  const auto signalled = std::chrono::steady_clock::now();
  daemon.process().Signal(SIGTERM);
  const auto status = daemon.process().Wait(seconds(15));
  ASSERT_TRUE(status.has_value()) << probe << " run did not stop within 15s:\n" << daemon.process().Stderr();
  EXPECT_EQ(*status, 0) << daemon.process().Stderr();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - signalled).count();
  EXPECT_LT(took, 10) << probe;
  ::testing::Test::RecordProperty("stop_milliseconds", static_cast<int>(took * 1000));
  EXPECT_THAT(daemon.process().Stderr(), Not(HasSubstr("abandon")));

  // Nothing left but the state files: the run history (written atomically,
  // no temporary copies) and the probes' own state.
  EXPECT_THAT(ScratchFilesUnder(dir.path()), ::testing::IsEmpty());
  for (const auto& file : FilesLeft(dir.path())) {
    EXPECT_EQ(file.rfind("state/", 0), 0u) << file;
    EXPECT_THAT(file, Not(::testing::ContainsRegex(R"(\.tmp|\.new|~$|hostperf-preserved-)"))) << file;
  }
  ::testing::Test::RecordProperty("files_left", ::testing::PrintToString(FilesLeft(dir.path())));
}

INSTANTIATE_TEST_SUITE_P(EveryProbe, SigtermDuringProbe, ::testing::ValuesIn(RegisteredProbes()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace hostperf::testing
