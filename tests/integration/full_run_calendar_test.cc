// [full_runs] in the real hostperf_exporter: an accelerated calendar submits
// a small full run by itself, visible in the run API, on /metrics and on the
// landing page; bad calendar options refuse to start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using ::testing::HasSubstr;

constexpr const char* kToken = "calendar-token-0123456789";

// Scheduled probes out of the way; the calendar runs a small memory run every
// 4 s (windows of 2 s from midnight UTC).
std::string CalendarConfig(const TempDir& dir, const std::string& memory_options) {
  return "state_directory = \"" + dir.path() + "/state\"\n[api]\ntoken_file = \"" + dir.Write("token", kToken) +
         "\"\n"
         "[probes.cpu]\nenabled = false\n"
         "[probes.memory]\nenabled = false\n"
         "[probes.disk]\nenabled = false\n"
         "[probes.net]\nenabled = false\nports = [" +
         std::to_string(FreeLoopbackPort()) +
         "]\n"
         "[full_runs]\nenabled = true\nevery = \"4s\"\nwindow_start = \"00:00\"\nwindow = \"2s\"\n"
         "probes = [\"memory\"]\nhost = \"calendar-test-host\"\n"
         "[full_runs.options.memory]\n" +
         memory_options;
}

std::optional<double> Sample(const std::string& metrics, const std::string& series) {
  const std::regex line("(^|\n)" + std::regex_replace(series, std::regex(R"([{}"])"), R"(\$&)") + " ([^\n]+)");
  std::smatch match;
  if (!std::regex_search(metrics, match, line)) return std::nullopt;
  return std::stod(match[2].str());
}

TEST(FullRunCalendar, AcceleratedCalendarSubmitsAFullRunByItself) {
  TempDir dir;
  const std::string config =
      dir.Write("c.toml", CalendarConfig(dir, "array_elements = 200000\niterations = 2\nthreads = 1\n"));
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN,
                      {"--config.file=" + config, "--web.listen-address=127.0.0.1:0", "--web.enable-lifecycle"});
  const int port = daemon.ListeningPort();
  ASSERT_GT(port, 0) << daemon.Stderr();

  // Before any run: the next slot is announced, at most one period away.
  auto metrics = HttpRequest(port, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  const auto next = Sample(metrics->body, "hostperf_full_run_next_timestamp_seconds");
  ASSERT_TRUE(next) << metrics->body;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GT(*next, now - 1);
  EXPECT_LT(*next, now + 5);
  EXPECT_EQ(Sample(metrics->body, "hostperf_full_run_calendar_skipped_total{reason=\"full_run_active\"}"), 0);
  const auto landing = HttpRequest(port, "GET", "/");
  ASSERT_TRUE(landing);
  EXPECT_THAT(landing->body, HasSubstr("Next full run: "));

  // The calendar's run, through the run manager like an API run.
  const std::map<std::string, std::string> auth = {{"Authorization", std::string("Bearer ") + kToken}};
  std::string id;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (id.empty() && std::chrono::steady_clock::now() < until) {
    const auto reply = HttpRequest(port, "GET", "/api/v1/runs", auth);
    ASSERT_TRUE(reply);
    const json runs = json::parse(reply->body, nullptr, false);
    for (const json& summary : runs.is_object() ? runs.value("runs", json::array()) : json::array()) {
      if (summary.value("state", "") != "succeeded") continue;
      EXPECT_EQ(summary.value("trigger", ""), "calendar");
      id = summary.value("id", "");
    }
    if (id.empty()) std::this_thread::sleep_for(milliseconds(200));
  }
  ASSERT_FALSE(id.empty()) << "no calendar run finished; stderr:\n" << daemon.Stderr();
  const auto reply = HttpRequest(port, "GET", "/api/v1/runs/" + id, auth);
  ASSERT_TRUE(reply);
  const json run = json::parse(reply->body, nullptr, false);
  ASSERT_TRUE(run.is_object()) << reply->body;
  EXPECT_EQ(run.value("trigger", ""), "calendar");
  EXPECT_EQ(run["probes"], json({"memory"}));
  EXPECT_EQ(run["options"]["memory"]["threads"], 1);
  EXPECT_EQ(run["outcomes"]["memory"]["status"], "success");
  EXPECT_THAT(daemon.Stderr(), HasSubstr("full-run calendar: submitted full run"));

  metrics = HttpRequest(port, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  const auto last = Sample(metrics->body, "hostperf_full_run_last_timestamp_seconds{probe=\"memory\"}");
  ASSERT_TRUE(last) << metrics->body;
  // The newest memory run (the calendar may have started another meanwhile).
  EXPECT_GE(*last, run["outcomes"]["memory"]["finished_unix_seconds"].get<double>() - 1e-3);
  // Re-planned past the slot that started this run. (Not "later than the first
  // scrape's value": on a slow start the first slot fires before that scrape.)
  EXPECT_GT(*Sample(metrics->body, "hostperf_full_run_next_timestamp_seconds"),
            run["outcomes"]["memory"]["finished_unix_seconds"].get<double>() - 1e-3);

  // A reload re-plans: with the calendar off, no next slot anywhere.
  std::string off = CalendarConfig(dir, "threads = 1\n");
  const std::string on = "enabled = true\nevery";
  off.replace(off.find(on), on.size(), "enabled = false\nevery");
  dir.Write("c.toml", off);
  const auto reloaded = HttpRequest(port, "POST", "/-/reload");
  ASSERT_TRUE(reloaded);
  EXPECT_EQ(reloaded->status, 200) << reloaded->body;
  metrics = HttpRequest(port, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_FALSE(Sample(metrics->body, "hostperf_full_run_next_timestamp_seconds")) << metrics->body;
  const auto after = HttpRequest(port, "GET", "/");
  ASSERT_TRUE(after);
  EXPECT_THAT(after->body, HasSubstr("No full runs scheduled"));
}

TEST(FullRunCalendar, BadCalendarOptionsRefuseToStartWithOneLine) {
  TempDir dir;
  const std::string config = dir.Write("c.toml", CalendarConfig(dir, "bogus_option = 1\n"));
  const auto result = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"},
                                 milliseconds(30000));
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.err, HasSubstr(config + ": full_runs.options.memory: "));
  EXPECT_THAT(result.err, HasSubstr("bogus_option"));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

}  // namespace
}  // namespace hostperf::testing
