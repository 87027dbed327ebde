#include "hostperf/probes/disk/disk_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <filesystem>
#include <vector>

#include "hostperf/probes/disk/module.h"
#include "probe_test_util.h"
#include "temp_dir.h"

namespace hostperf::probes::disk {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using test_support::TempDir;
using ::testing::HasSubstr;
using Status = ProbeOutcome::Status;

std::size_t CountEntries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

class DiskProbeTest : public ::testing::Test {
 protected:
  DiskProbeTest() {
    deps_.registry = &registry_;
    deps_.state_directory = state_.path();
    probe_ = CreateDiskProbe(deps_);
    Disk().directories = {data_.path().string()};
    Disk().bytes_per_run = 512 * 1024;
    Disk().max_buffer_size = 64 * 1024;
    Disk().reserve = 1;
    // Tests run on whatever /tmp is; the O_DIRECT path has its own tests.
    Disk().disable_direct_io = true;
  }

  ProbeOutcome Run(RunMode mode, json options = nullptr) {
    RunContext ctx = MakeRunContext(config_, "disk", mode);
    ctx.cancel = &cancel_;
    ctx.on_report = [this](const json& entry) { reports_.push_back(entry); };
    return test_support::RunParsed(*probe_, ctx, options);
  }

  DiskProbeConfig& Disk() { return config_.EditSettings<DiskProbeConfig>(); }

  std::string Exposition() { return prometheus::TextSerializer().Serialize(registry_.Collect()); }

  TempDir state_;
  TempDir data_;
  prometheus::Registry registry_;
  ProbeDeps deps_;
  std::unique_ptr<Probe> probe_;
  config::Config config_ = DefaultConfig();
  std::atomic<bool> cancel_{false};
  std::vector<json> reports_;
};

TEST_F(DiskProbeTest, ScheduledRunMeasuresAllFourTestsAndLeavesNothing) {
  const auto outcome = Run(RunMode::kScheduled);
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const json& dir = outcome.result["directories"][0];
  EXPECT_EQ(dir["directory"], data_.path().string());
  EXPECT_EQ(dir["data_bytes"], 256 * 1024);  // Write + ReWrite write bytes_per_run
  ASSERT_EQ(dir["tests"].size(), 4u);
  EXPECT_EQ(dir["tests"][0]["test"], "Write");
  EXPECT_EQ(dir["tests"][0]["bytes_written"], 256 * 1024);
  EXPECT_EQ(dir["tests"][1]["bytes_read"], 256 * 1024);
  EXPECT_EQ(dir["verify_errors"], 0);
  EXPECT_EQ(outcome.result["rows"].size(), 4u);  // one final row per test
  EXPECT_EQ(CountEntries(data_.path()), 0u);

  const std::string text = Exposition();
  const std::string label = "directory=\"" + data_.path().string() + "\"";
  EXPECT_THAT(text, HasSubstr("hostperf_disk_op_latency_seconds_bucket{" + label + ",op=\"write\",le=\"1e-05\"}"));
  EXPECT_THAT(text, HasSubstr("hostperf_disk_op_latency_seconds_bucket{" + label + ",op=\"skip_read\",le=\"10\"}"));
  EXPECT_THAT(text, HasSubstr("hostperf_disk_written_bytes_total{" + label + "} 524288"));
  EXPECT_THAT(text, HasSubstr("hostperf_disk_verify_errors_total{" + label + "} 0"));
  EXPECT_THAT(text, HasSubstr("hostperf_disk_throughput_bytes_per_second{" + label + ",test=\"ReWrite\"}"));
  EXPECT_THAT(text, HasSubstr("hostperf_disk_seeks_per_second{" + label + "}"));
}

TEST_F(DiskProbeTest, DefaultDirectoryIsUnderTheStateDirectory) {
  Disk().directories.clear();
  const auto outcome = Run(RunMode::kScheduled);
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["directories"][0]["directory"], (state_.path() / "disk").string());
  EXPECT_TRUE(fs::is_directory(state_.path() / "disk"));
}

TEST_F(DiskProbeTest, HourlyBudgetSkipsOnceSpent) {
  config_.budget.disk_bytes_per_hour = 512 * 1024;  // exactly one run
  EXPECT_EQ(Run(RunMode::kScheduled).status, Status::kSuccess);
  const auto second = Run(RunMode::kScheduled);
  EXPECT_EQ(second.status, Status::kSkipped);
  EXPECT_EQ(second.reason, "budget_exhausted");
  EXPECT_THAT(second.message, HasSubstr("per hour"));
}

TEST_F(DiskProbeTest, FreeSpaceGuardSkipsScheduledAndFailsFull) {
  Disk().reserve = 1ULL << 60;  // more than any disk
  const auto scheduled = Run(RunMode::kScheduled);
  EXPECT_EQ(scheduled.status, Status::kSkipped);
  EXPECT_EQ(scheduled.reason, "no_space");
  EXPECT_THAT(scheduled.message, HasSubstr("reserve"));
  const auto full = Run(RunMode::kFull, {{"duration", "1s"}, {"data_size", "64kb"}, {"thread_count", 1}});
  EXPECT_EQ(full.status, Status::kFailure);
  EXPECT_EQ(full.reason, "no_space");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, FullRunReportsRowsEveryLogIntervalAndSharesTheDuration) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcome = Run(RunMode::kFull, {{"duration", "4s"},
                                            {"log_interval", "250ms"},
                                            {"data_size", "256kb"},
                                            {"thread_count", 2},
                                            {"max_buffer_size", "16kb"}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  EXPECT_GE(seconds, 3.5);
  EXPECT_LT(seconds, 60);
  const json& rows = outcome.result["rows"];
  // ~1 s per test, rows every 250 ms plus a last one: about 16; half of that
  // leaves room for a loaded machine stretching the ticks.
  EXPECT_GE(rows.size(), 8u);
  std::set<std::string> tests;
  for (const auto& row : rows) {
    tests.insert(row["test"]);
    EXPECT_EQ(row["thread_count"], 2);
    EXPECT_EQ(row["value"].size(), row["test"] == "ReWrite" ? 2u : 1u);
  }
  EXPECT_EQ(tests, (std::set<std::string>{"Write", "ReWrite", "Read", "SkipRead"}));
  EXPECT_EQ(rows.back()["counter_name"], "seeks/s");
  // Reports: the directory line first, then every row.
  ASSERT_FALSE(reports_.empty());
  EXPECT_EQ(reports_.front()["kind"], "directory");
  EXPECT_EQ(reports_.front()["buffer_size"], 16384);
  EXPECT_EQ(reports_.size(), rows.size() + 1);
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, CancelStopsAndRemovesFiles) {
  cancel_ = true;
  const auto outcome = Run(RunMode::kFull, {{"duration", "10s"}, {"data_size", "1mb"}, {"thread_count", 1}});
  EXPECT_EQ(outcome.status, Status::kFailure);
  EXPECT_EQ(outcome.reason, "cancelled");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, BadOptionsAndDirectoriesAreFailuresNotCrashes) {
  const auto bad = Run(RunMode::kFull, {{"thread_count", "many"}});
  EXPECT_EQ(bad.status, Status::kFailure);
  EXPECT_EQ(bad.reason, "bad_options");
  const auto missing =
      Run(RunMode::kFull,
          {{"directories", {(data_.path() / "missing").string()}}, {"duration", "1s"}, {"data_size", "64kb"}});
  EXPECT_EQ(missing.status, Status::kFailure);
  EXPECT_EQ(missing.reason, "bad_directory");
  EXPECT_THAT(missing.message, HasSubstr("does not exist"));
}

TEST_F(DiskProbeTest, PreserveFilesKeepsThem) {
  const auto outcome =
      Run(RunMode::kFull, {{"duration", "1s"}, {"data_size", "64kb"}, {"thread_count", 1}, {"preserve_files", true}});
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["directories"][0]["preserved_files"].size(), 1u);
  EXPECT_EQ(CountEntries(data_.path()), 1u);
}

TEST(DiskReportTest, FormatsVioperfRows) {
  const json rewrite = {{"test", "ReWrite"},
                        {"directory", "/data"},
                        {"counter_name", "(MB-read+MB-write)/s"},
                        {"value", {150, 150}},
                        {"average", {150.4, 149.6}},
                        {"value_per_core", {75, 75}},
                        {"average_per_core", {75.2, 74.8}},
                        {"thread_count", 2},
                        {"cpu_percent", 58.2},
                        {"iowait_percent", 40.0},
                        {"elapsed_seconds", 10.2},
                        {"remaining_seconds", 4.1}};
  const std::string row = FormatTableRow(rewrite);
  EXPECT_THAT(row, HasSubstr("ReWrite  | /data"));
  EXPECT_THAT(row, HasSubstr("| 150+150 "));
  EXPECT_THAT(row, HasSubstr("| 150.4+149.6 "));
  EXPECT_THAT(row, HasSubstr("| 75.2+74.8 "));
  EXPECT_THAT(row, HasSubstr("| 10 "));
  EXPECT_THAT(row, HasSubstr("| 5\n"));
  EXPECT_THAT(FormatTableHeader(), HasSubstr("counter value (10 sec avg)"));
  EXPECT_THAT(FormatVioperfBanner(12), HasSubstr("240 MB/s required minimum, 480 MB/s recommended"));
  EXPECT_EQ(FormatDirectoryLine(
                {{"direct_io", true}, {"buffer_size", 1048576}, {"alignment", 512}, {"directory", "/home/dbadmin"}}),
            "Using direct io (buffer size=1048576, alignment=512) for directory \"/home/dbadmin\"\n");
}

TEST(DiskReportTest, JsonLogPlainAndCondensed) {
  const json result = {
      {"physical_cores", 2}, {"rows", {{{"test", "Write"}}, {{"test", "Read"}}}}, {"directories", json::array()}};
  const json plain = json::parse(FormatJsonLog(result, "", "", false));
  EXPECT_EQ(plain["status"], "ok");
  EXPECT_EQ(plain["minimum_mb_per_second"], 40);
  EXPECT_EQ(plain["rows"].size(), 2u);
  const std::string condensed = FormatJsonLog(result, "verify_error", "bad block", true);
  std::istringstream lines(condensed);
  std::vector<json> entries;
  for (std::string line; std::getline(lines, line);) entries.push_back(json::parse(line));
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0]["kind"], "run");
  EXPECT_EQ(entries[1]["test"], "Write");
  EXPECT_EQ(entries[3]["reason"], "verify_error");
  EXPECT_THAT(DefaultLogFileName(), ::testing::MatchesRegex("results[0-9]{8}-[0-9]{6}\\.json"));
}

}  // namespace
}  // namespace hostperf::probes::disk
