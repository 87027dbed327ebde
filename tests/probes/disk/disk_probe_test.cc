#include "hostperf/probes/disk/disk_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
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

double Number(const json& object, const char* key) { return object.at(key).get<double>(); }

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

  ProbeOutcome RunScheduled() {
    ScheduledContext ctx = MakeScheduledContext(config_, "disk");
    ctx.cancel = &cancel_;
    return probe_->RunScheduled(ctx);
  }
  ProbeOutcome RunFull(json options = nullptr) {
    FullRunContext ctx = MakeFullRunContext(config_, "disk");
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
  const auto outcome = RunScheduled();
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
  const auto outcome = RunScheduled();
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["directories"][0]["directory"], (state_.path() / "disk").string());
  EXPECT_TRUE(fs::is_directory(state_.path() / "disk"));
}

TEST_F(DiskProbeTest, HourlyBudgetSkipsOnceSpent) {
  config_.budget.disk_bytes_per_hour = 512 * 1024;  // exactly one run
  EXPECT_EQ(RunScheduled().status, Status::kSuccess);
  const auto second = RunScheduled();
  EXPECT_EQ(second.status, Status::kSkipped);
  EXPECT_EQ(second.reason, "budget_exhausted");
  EXPECT_THAT(second.message, HasSubstr("per hour"));
}

TEST_F(DiskProbeTest, FreeSpaceGuardSkipsScheduledAndFailsFull) {
  Disk().reserve = 1ULL << 60;  // more than any disk
  const auto scheduled = RunScheduled();
  EXPECT_EQ(scheduled.status, Status::kSkipped);
  EXPECT_EQ(scheduled.reason, "no_space");
  EXPECT_THAT(scheduled.message, HasSubstr("reserve"));
  const auto full = RunFull({{"duration", "1s"}, {"data_size", "64kb"}, {"thread_count", 1}});
  EXPECT_EQ(full.status, Status::kFailure);
  EXPECT_EQ(full.reason, "no_space");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, FullRunReportsRowsEveryLogIntervalAndSharesTheDuration) {
  const auto start = std::chrono::steady_clock::now();
  const auto outcome = RunFull({{"duration", "4s"},
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
  // Reports: the directory line first, then every row, then (where the
  // directory is on a block device) its members.
  ASSERT_FALSE(reports_.empty());
  EXPECT_EQ(reports_.front()["kind"], "directory");
  EXPECT_EQ(reports_.front()["buffer_size"], 16384);
  const bool members = reports_.back()["kind"] == "members";
  EXPECT_EQ(members, outcome.result["directories"][0].contains("members"));
  EXPECT_EQ(reports_.size(), rows.size() + 1 + (members ? 1 : 0));
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, CancelStopsAndRemovesFiles) {
  cancel_ = true;
  const auto outcome = RunFull({{"duration", "10s"}, {"data_size", "1mb"}, {"thread_count", 1}});
  EXPECT_EQ(outcome.status, Status::kFailure);
  EXPECT_EQ(outcome.reason, "cancelled");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
}

TEST_F(DiskProbeTest, BadOptionsAndDirectoriesAreFailuresNotCrashes) {
  const auto bad = RunFull({{"thread_count", "many"}});
  EXPECT_EQ(bad.status, Status::kFailure);
  EXPECT_EQ(bad.reason, "bad_options");
  const auto missing =
      RunFull({{"directories", {(data_.path() / "missing").string()}}, {"duration", "1s"}, {"data_size", "64kb"}});
  EXPECT_EQ(missing.status, Status::kFailure);
  EXPECT_EQ(missing.reason, "bad_directory");
  EXPECT_THAT(missing.message, HasSubstr("does not exist"));
}

TEST_F(DiskProbeTest, PreserveFilesKeepsThem) {
  const auto outcome =
      RunFull({{"duration", "1s"}, {"data_size", "64kb"}, {"thread_count", 1}, {"preserve_files", true}});
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["directories"][0]["preserved_files"].size(), 1u);
  EXPECT_EQ(CountEntries(data_.path()), 1u);
}

// gpcheckperf's disk test: the total shared by the directories, written all
// at once and then read all at once.
TEST_F(DiskProbeTest, GpcheckperfMethodWritesTheTotalAcrossDirectoriesAtOnce) {
  TempDir second;
  const std::vector<std::string> dirs = {data_.path().string(), second.path().string()};
  // Three 16 KiB blocks over two directories: 2 + 1.
  const auto outcome =
      RunFull({{"method", "gpcheckperf"}, {"directories", dirs}, {"data_size", "48kb"}, {"max_buffer_size", "16kb"}});
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const json& result = outcome.result;
  EXPECT_EQ(result["method"], "gpcheckperf");
  EXPECT_EQ(result["data_bytes"], 48 * 1024);
  EXPECT_EQ(result["block_size"], 16 * 1024);
  EXPECT_EQ(result["sequential"]["write"]["bytes"], 48 * 1024);
  EXPECT_EQ(result["sequential"]["read"]["bytes"], 48 * 1024);
  ASSERT_EQ(result["directories"].size(), 2u);
  const json& a = result["directories"][0];
  const json& b = result["directories"][1];
  EXPECT_EQ(a["write"]["bytes"], 32 * 1024);
  EXPECT_EQ(b["write"]["bytes"], 16 * 1024);
  EXPECT_EQ(a["read"]["bytes"], 32 * 1024);
  for (const char* pass : {"write", "read"}) {
    SCOPED_TRACE(pass);
    // The pass spans its directories' intervals: from the first start to the last end.
    const double first = std::min(Number(a[pass], "started_unix_seconds"), Number(b[pass], "started_unix_seconds"));
    const double last = std::max(Number(a[pass], "finished_unix_seconds"), Number(b[pass], "finished_unix_seconds"));
    EXPECT_NEAR(result["sequential"][pass]["seconds"].get<double>(), last - first, 0.05);
    EXPECT_GE(result["sequential"][pass]["seconds"].get<double>(), a[pass]["seconds"].get<double>());
  }
  // Reading starts once every directory is written.
  const double last_write =
      std::max(Number(a["write"], "finished_unix_seconds"), Number(b["write"], "finished_unix_seconds"));
  EXPECT_GE(Number(a["read"], "started_unix_seconds"), last_write - 0.001);
  EXPECT_GE(Number(b["read"], "started_unix_seconds"), last_write - 0.001);
  EXPECT_EQ(CountEntries(data_.path()), 0u);
  EXPECT_EQ(CountEntries(second.path()), 0u);
  // Bytes are counted; vioperf's throughput gauge is not set by this method.
  const std::string metrics = Exposition();
  EXPECT_THAT(metrics, HasSubstr("hostperf_disk_written_bytes_total{directory=\"" + dirs[1] + "\"} 16384"));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("hostperf_disk_throughput_bytes_per_second{")));
}

TEST_F(DiskProbeTest, GpcheckperfMethodBadSizesAndCancel) {
  TempDir second;
  const std::vector<std::string> dirs = {data_.path().string(), second.path().string()};
  // Not a multiple of the block: rounded down, as gpcheckperf's dd count does.
  const auto uneven = RunFull({{"method", "gpcheckperf"}, {"data_size", "40kb"}, {"max_buffer_size", "16kb"}});
  ASSERT_EQ(uneven.status, ProbeOutcome::Status::kSuccess) << uneven.message;
  EXPECT_EQ(uneven.result["data_bytes"], 32768);
  EXPECT_EQ(uneven.result["data_size_given"], 40960);
  const auto small =
      RunFull({{"method", "gpcheckperf"}, {"directories", dirs}, {"data_size", "16kb"}, {"max_buffer_size", "16kb"}});
  EXPECT_EQ(small.reason, "bad_options");
  EXPECT_THAT(small.message, HasSubstr("less than one 16384-byte block per directory"));
  const auto method = RunFull({{"method", "dd"}});
  EXPECT_EQ(method.reason, "bad_options");
  EXPECT_THAT(method.message, HasSubstr("method: expected \"vioperf\" or \"gpcheckperf\""));
  const auto missing =
      RunFull({{"method", "gpcheckperf"}, {"directories", {dirs[0], dirs[1] + "/missing"}}, {"data_size", "64kb"}});
  EXPECT_EQ(missing.reason, "bad_directory");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
  cancel_ = true;
  const auto cancelled = RunFull({{"method", "gpcheckperf"}, {"directories", dirs}, {"data_size", "1mb"}});
  EXPECT_EQ(cancelled.reason, "cancelled");
  EXPECT_EQ(CountEntries(data_.path()), 0u);
  EXPECT_EQ(CountEntries(second.path()), 0u);
}

// Without data_size: twice MemTotal (here a fixture's 100 kB), rounded down
// to gpcheckperf's 32 KB blocks.
TEST_F(DiskProbeTest, GpcheckperfMethodDefaultsToTwiceTheRam) {
  deps_.roots.proc = std::filesystem::path(HOSTPERF_FIXTURES_DIR) / "proc-bad-meminfo";
  probe_ = CreateDiskProbe(deps_);
  const auto outcome = RunFull({{"method", "gpcheckperf"}});
  ASSERT_EQ(outcome.status, Status::kSuccess) << outcome.reason << ": " << outcome.message;
  EXPECT_EQ(outcome.result["block_size"], 32768);
  EXPECT_EQ(outcome.result["data_bytes"], 196608);  // 204800 rounded down
  EXPECT_EQ(outcome.result["sequential"]["write"]["bytes"], 196608);
  deps_.roots.proc = std::filesystem::path(HOSTPERF_FIXTURES_DIR) / "does-not-exist";
  probe_ = CreateDiskProbe(deps_);
  const auto unknown = RunFull({{"method", "gpcheckperf"}});
  EXPECT_EQ(unknown.reason, "bad_options");
  EXPECT_THAT(unknown.message, HasSubstr("give data_size"));
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
