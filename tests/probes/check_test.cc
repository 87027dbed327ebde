#include "hostperf/probes/check/check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hostperf::probes::check {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

// The field report's two hosts (R510s), as the probes would report them:
// disk bytes and seconds chosen so that MiB/s match the report.
json FieldReportHosts() {
  const double bytes = 202537697280.0 / 2;
  return json::array({
      {{"host", "sdw13"},
       {"disk",
        {{"write", {{"bytes", bytes}, {"seconds", bytes / (1188.50 * 1048576)}}},
         {"read", {{"bytes", bytes}, {"seconds", bytes / (1526.68 * 1048576)}}}}},
       {"stream", {{"bytes_per_second", 4250.22e6}}}},
      {{"host", "sdw15"},
       {"disk",
        {{"write", {{"bytes", bytes}, {"seconds", bytes / (1087.34 * 1048576)}}},
         {"read", {{"bytes", bytes}, {"seconds", bytes / (1461.30 * 1048576)}}}}},
       {"stream", {{"bytes_per_second", 4603.59e6}}}},
  });
}

json FieldReportNetwork(const char* mode) {
  return {{"mode", mode},
          {"links",
           {{{"from", "sdw13"}, {"to", "sdw15"}, {"bytes_per_second", 1131.84 * 1048576}},
            {{"from", "sdw15"}, {"to", "sdw13"}, {"bytes_per_second", 1131.82 * 1048576}}}}};
}

TEST(ParseTestSelectionTest, Letters) {
  auto all = ParseTestSelection("dsN");
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->disk);
  EXPECT_TRUE(all->stream);
  EXPECT_EQ(all->net, NetMode::kParallel);
  EXPECT_EQ(ParseTestSelection("n")->net, NetMode::kSerial);
  EXPECT_EQ(ParseTestSelection("M")->net, NetMode::kMatrix);
  EXPECT_EQ(ParseTestSelection("s")->net, NetMode::kNone);
  EXPECT_FALSE(ParseTestSelection("s")->disk);
  EXPECT_TRUE(ParseTestSelection("d")->disk);
  EXPECT_TRUE(ParseTestSelection("ssdd")->stream);  // repeats are harmless
  EXPECT_EQ(ParseTestSelection("NN")->net, NetMode::kParallel);
}

TEST(ParseTestSelectionTest, Errors) {
  EXPECT_FALSE(ParseTestSelection("").ok());
  EXPECT_THAT(ParseTestSelection("dx").error(), HasSubstr("'x'"));
  EXPECT_FALSE(ParseTestSelection("D").ok());
  EXPECT_FALSE(ParseTestSelection("m").ok());
  EXPECT_THAT(ParseTestSelection("Nn").error(), HasSubstr("one network test"));
  EXPECT_FALSE(ParseTestSelection("nM").ok());
  EXPECT_FALSE(ParseTestSelection("MN").ok());
}

TEST(ParseCheckArgsTest, FieldReportCommandLine) {
  auto parsed =
      ParseCheckArgs({"-h", "sdw13", "-h", "sdw15", "-d", "/data/vol1", "-d", "/data/vol2", "-r", "dsN", "-D", "-v"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->hosts, (std::vector<std::string>{"sdw13", "sdw15"}));
  EXPECT_EQ(parsed->directories, (std::vector<std::string>{"/data/vol1", "/data/vol2"}));
  EXPECT_TRUE(parsed->tests.disk);
  EXPECT_TRUE(parsed->tests.stream);
  EXPECT_EQ(parsed->tests.net, NetMode::kParallel);
  EXPECT_TRUE(parsed->per_host);
  EXPECT_TRUE(parsed->verbose);
  EXPECT_EQ(parsed->disk_options, json({{"directories", {"/data/vol1", "/data/vol2"}}}));
}

TEST(ParseCheckArgsTest, DefaultsAttachedValuesAndDiskOptions) {
  // gpcheckperf's default is -r dsn.
  auto parsed = ParseCheckArgs({"-d/tmp/x"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->tests.disk);
  EXPECT_TRUE(parsed->tests.stream);
  EXPECT_EQ(parsed->tests.net, NetMode::kSerial);
  EXPECT_FALSE(parsed->per_host);
  EXPECT_TRUE(parsed->hosts.empty());

  parsed = ParseCheckArgs({"-rds", "-d", "/d", "-S", "8mb", "-B", "256k", "--duration", "2s"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->disk_options,
            json({{"directories", {"/d"}}, {"data_size", "8mb"}, {"max_buffer_size", "256k"}, {"duration", "2s"}}));
  EXPECT_EQ(ParseCheckArgs({"-r", "s", "--duration=5s"})->disk_options, json({{"duration", "5s"}}));
}

TEST(ParseCheckArgsTest, Errors) {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{{"-r"},
                                                                                   {"-r", "x"},
                                                                                   {"-d"},
                                                                                   {"-h"},
                                                                                   {"-x"},
                                                                                   {"extra"},
                                                                                   {"-r", "d"},
                                                                                   {"-r", "dsnM", "-d", "/d"},
                                                                                   {"--duration"},
                                                                                   {"-S"}}) {
    EXPECT_FALSE(ParseCheckArgs(bad).ok()) << ::testing::PrintToString(bad);
  }
  // The disk test without a directory says what is missing.
  EXPECT_THAT(ParseCheckArgs({"-r", "ds"}).error(), HasSubstr("-d DIR"));
  EXPECT_TRUE(ParseCheckArgs({"--help"})->help);
}

TEST(FormatCheckResultTest, FieldReportBlock) {
  const json check = {{"hosts", FieldReportHosts()}, {"network", FieldReportNetwork("parallel")}};
  const std::string out = FormatCheckResult(check, {.per_host = true, .verbose = false});
  const std::string expected_disk_write =
      "\n"
      " ====================\n"
      " ==  RESULT\n"
      " ====================\n"
      "\n"
      "  disk write avg time (sec): 85.04\n"
      "  disk write tot bytes: 202537697280\n"
      "  disk write tot bandwidth (MB/s): 2275.84\n"
      "  disk write min bandwidth (MB/s): 1087.34 [sdw15]\n"
      "  disk write max bandwidth (MB/s): 1188.50 [sdw13]\n"
      "  -- per host bandwidth --\n"
      "     disk write bandwidth (MB/s): 1188.50 [sdw13]\n"
      "     disk write bandwidth (MB/s): 1087.34 [sdw15]\n"
      "\n"
      "  disk read avg time (sec): 64.67\n";
  EXPECT_EQ(out.substr(0, expected_disk_write.size()), expected_disk_write) << out;
  EXPECT_THAT(out, HasSubstr("  disk read tot bandwidth (MB/s): 2987.98\n"));
  EXPECT_THAT(out, HasSubstr("  disk read min bandwidth (MB/s): 1461.30 [sdw15]\n"));
  EXPECT_THAT(out, HasSubstr("\n  stream tot bandwidth (MB/s): 8853.81\n"
                             "  stream min bandwidth (MB/s): 4250.22 [sdw13]\n"
                             "  stream max bandwidth (MB/s): 4603.59 [sdw15]\n"
                             "  -- per host bandwidth --\n"
                             "     stream bandwidth (MB/s): 4250.22 [sdw13]\n"
                             "     stream bandwidth (MB/s): 4603.59 [sdw15]\n"));
  // STREAM has no time or byte totals.
  EXPECT_THAT(out, Not(HasSubstr("stream avg time")));
  EXPECT_THAT(out, Not(HasSubstr("stream tot bytes")));
  EXPECT_THAT(out, HasSubstr("\n Netperf bisection bandwidth test\n"
                             " sdw13 -> sdw15 = 1131.840000\n"
                             " sdw15 -> sdw13 = 1131.820000\n"
                             "\n"
                             " Summary:\n"
                             " sum = 2263.66 MB/sec\n"
                             " min = 1131.82 MB/sec\n"
                             " max = 1131.84 MB/sec\n"
                             " avg = 1131.83 MB/sec\n"
                             " median = 1131.84 MB/sec\n"));
  // All within 90% of the best: no warnings.
  EXPECT_THAT(out, Not(HasSubstr("[Warning]")));
}

TEST(FormatCheckResultTest, PerHostLinesOnlyWithD) {
  const json check = {{"hosts", FieldReportHosts()}};
  EXPECT_THAT(FormatCheckResult(check, {}), Not(HasSubstr("per host")));
}

TEST(FormatCheckResultTest, FlagsHostsAndLinksBelowNinetyPercentOfTheBest) {
  // The field report's slow array: 365 vs 621 MB/s.
  json hosts = json::array();
  for (const auto& [host, rate] : {std::pair{"sdw11", 620.81}, {"sdw09", 365.38}, {"sdw08", 621.01}}) {
    hosts.push_back({{"host", host}, {"disk", {{"write", {{"bytes", rate * 1048576}, {"seconds", 1.0}}}}}});
  }
  json network = FieldReportNetwork("serial");
  network["links"].push_back({{"from", "sdw08"}, {"to", "sdw09"}, {"bytes_per_second", 500.0 * 1048576}});
  const std::string out = FormatCheckResult({{"hosts", hosts}, {"network", network}}, {.per_host = true});
  EXPECT_THAT(out, HasSubstr("[Warning] disk write bandwidth on sdw09 is no good: 365.38 MB/s is below 90% of the "
                             "best 621.01 [sdw08]"));
  EXPECT_THAT(out, Not(HasSubstr("on sdw11 is no good")));
  EXPECT_THAT(out, HasSubstr(" [Warning] connection between sdw08 and sdw09 is no good\n"));
  EXPECT_THAT(out, Not(HasSubstr("connection between sdw13")));
  // No read figures: no read section.
  EXPECT_THAT(out, Not(HasSubstr("disk read")));
}

TEST(FormatCheckResultTest, MatrixTxRxAndPerLinkWithVerbose) {
  const json check = {{"hosts", json::array()}, {"network", FieldReportNetwork("matrix")}};
  const std::string quiet = FormatCheckResult(check, {});
  EXPECT_THAT(quiet, HasSubstr(" Full matrix netperf bandwidth test\n"));
  EXPECT_THAT(quiet, HasSubstr(" sdw13 Tx rate: 1131.84\n"));
  EXPECT_THAT(quiet, HasSubstr(" sdw13 Rx rate: 1131.82\n"));
  EXPECT_THAT(quiet, Not(HasSubstr("->")));
  EXPECT_THAT(quiet, HasSubstr(" median = 1131.84 MB/sec\n"));
  EXPECT_THAT(FormatCheckResult(check, {.verbose = true}), HasSubstr(" sdw13 -> sdw15 = 1131.840000\n"));
}

TEST(FormatCheckResultTest, EmptyAndMalformedInputPrintsOnlyTheHeader) {
  const std::string header = "\n ====================\n ==  RESULT\n ====================\n";
  EXPECT_EQ(FormatCheckResult(json::object(), {}), header);
  EXPECT_EQ(FormatCheckResult(json::array(), {}), header);
  EXPECT_EQ(FormatCheckResult({{"hosts", "x"}, {"network", {{"links", {{{"from", "a"}}}}}}}, {}), header);
  EXPECT_EQ(
      FormatCheckResult({{"hosts", {{{"host", "a"}, {"disk", {{"write", {{"bytes", 1}, {"seconds", 0}}}}}}}}}, {}),
      header);
}

TEST(ResultAdaptersTest, StreamIsTheCopyRate) {
  const json memory = {
      {"kernels",
       {{{"kernel", "copy"}, {"best_bytes_per_second", 5e9}}, {{"kernel", "triad"}, {"best_bytes_per_second", 6e9}}}}};
  EXPECT_EQ(StreamEntryFromMemoryResult(memory), json({{"bytes_per_second", 5e9}}));
  EXPECT_TRUE(StreamEntryFromMemoryResult(json::object()).is_null());
  EXPECT_TRUE(
      StreamEntryFromMemoryResult({{"kernels", {{{"kernel", "triad"}, {"best_bytes_per_second", 1}}}}}).is_null());
}

TEST(ResultAdaptersTest, DiskFromSequentialFigures) {
  const json disk = {
      {"sequential", {{"write", {{"bytes", 1000}, {"seconds", 2.0}}}, {"read", {{"bytes", 1000}, {"seconds", 1.0}}}}}};
  EXPECT_EQ(DiskEntryFromDiskResult(disk),
            json({{"write", {{"bytes", 1000.0}, {"seconds", 2.0}}}, {"read", {{"bytes", 1000.0}, {"seconds", 1.0}}}}));
}

TEST(ResultAdaptersTest, DiskSummedOverDirectoryTests) {
  // The disk probe's vioperf result: per directory, one summary per test.
  const json disk = {{"directories",
                      {{{"directory", "/a"},
                        {"tests",
                         {{{"test", "Write"}, {"seconds", 2.0}, {"bytes_written", 400}, {"bytes_read", 0}},
                          {{"test", "ReWrite"}, {"seconds", 2.0}, {"bytes_written", 999}, {"bytes_read", 999}},
                          {{"test", "Read"}, {"seconds", 1.0}, {"bytes_written", 0}, {"bytes_read", 300}},
                          {{"test", "SkipRead"}, {"seconds", 1.0}, {"bytes_written", 0}, {"bytes_read", 999}}}}},
                       {{"directory", "/b"},
                        {"tests",
                         {{{"test", "Write"}, {"seconds", 3.0}, {"bytes_written", 600}, {"bytes_read", 0}},
                          {{"test", "Read"}, {"seconds", 1.0}, {"bytes_written", 0}, {"bytes_read", 500}}}}}}}};
  EXPECT_EQ(DiskEntryFromDiskResult(disk),
            json({{"write", {{"bytes", 1000.0}, {"seconds", 5.0}}}, {"read", {{"bytes", 800.0}, {"seconds", 2.0}}}}));
  EXPECT_TRUE(DiskEntryFromDiskResult(json::object()).is_null());
  EXPECT_TRUE(DiskEntryFromDiskResult({{"directories", {{{"directory", "/a"}, {"error", "x"}}}}}).is_null());
}

TEST(ResultAdaptersTest, NetworkLinks) {
  const json net = {{"links",
                     {{{"from", "a"}, {"to", "b"}, {"bytes_per_second", 1e8}},
                      {{"from", "a"}, {"bytes_per_second", 1e8}},
                      {{"from", "b"}, {"to", "a"}}}}};
  EXPECT_EQ(NetworkLinksFromNetResult(net), json::array({{{"from", "a"}, {"to", "b"}, {"bytes_per_second", 1e8}}}));
  EXPECT_EQ(NetworkLinksFromNetResult(json::object()), json::array());
}

// A FullRunner that records what it was asked and answers canned results.
struct FakeRunner {
  std::vector<std::string> probes;
  json disk_options;
  ProbeOutcome disk = ProbeOutcome::Success(
      {{"sequential",
        {{"write", {{"bytes", 1 << 20}, {"seconds", 0.5}}}, {"read", {{"bytes", 1 << 20}, {"seconds", 0.25}}}}}});
  ProbeOutcome memory = ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 8e9}}}}});

  FullRunner runner() {
    return [this](std::string_view probe, const json& options) {
      probes.emplace_back(probe);
      if (probe == "disk") {
        disk_options = options;
        return disk;
      }
      return memory;
    };
  }
};

TEST(RunCheckTest, LocalDiskAndStream) {
  FakeRunner fake;
  const auto options = ParseCheckArgs({"-r", "ds", "-d", "/tmp/x", "-S", "1mb"});
  ASSERT_TRUE(options.ok());
  const CheckRun run = RunCheck(*options, fake.runner(), "node1");
  EXPECT_TRUE(run.ran);
  EXPECT_TRUE(run.errors.empty());
  EXPECT_EQ(fake.probes, (std::vector<std::string>{"disk", "memory"}));
  EXPECT_EQ(fake.disk_options, json({{"directories", {"/tmp/x"}}, {"data_size", "1mb"}}));
  const std::string out = FormatCheckResult(run.check, {.per_host = true});
  EXPECT_THAT(out, HasSubstr("  disk write tot bandwidth (MB/s): 2.00\n"));
  EXPECT_THAT(out, HasSubstr("  disk read max bandwidth (MB/s): 4.00 [node1]\n"));
  EXPECT_THAT(out, HasSubstr("     stream bandwidth (MB/s): 8000.00 [node1]\n"));
}

TEST(RunCheckTest, FailedProbeIsAnErrorAndLeavesItsSectionOut) {
  FakeRunner fake;
  fake.memory = ProbeOutcome::Failure("validation_failed", "array a wrong");
  const CheckRun run = RunCheck(*ParseCheckArgs({"-r", "ds", "-d", "/tmp/x"}), fake.runner(), "node1");
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_THAT(run.errors[0], HasSubstr("stream test on node1 failed: validation_failed"));
  const std::string out = FormatCheckResult(run.check, {});
  EXPECT_THAT(out, HasSubstr("disk write"));
  EXPECT_THAT(out, Not(HasSubstr("stream")));
}

TEST(RunCheckTest, RemoteHostsAreNotAvailableYet) {
  FakeRunner fake;
  const CheckRun run = RunCheck(*ParseCheckArgs({"-r", "s", "-h", "localhost", "-h", "sdw13"}), fake.runner(), "node1");
  EXPECT_FALSE(run.ran);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_THAT(run.errors[0], HasSubstr("\"sdw13\""));
  EXPECT_THAT(run.errors[0], HasSubstr("not available yet"));
  EXPECT_TRUE(fake.probes.empty());  // nothing ran
}

TEST(RunCheckTest, LocalNamesAndSingleHostNetwork) {
  EXPECT_TRUE(IsLocalHost("localhost", "n"));
  EXPECT_TRUE(IsLocalHost("127.0.0.1", "n"));
  EXPECT_TRUE(IsLocalHost("::1", "n"));
  EXPECT_TRUE(IsLocalHost("n", "n"));
  EXPECT_FALSE(IsLocalHost("m", "n"));
  FakeRunner fake;
  const CheckRun run = RunCheck(*ParseCheckArgs({"-r", "sN", "-h", "node1"}), fake.runner(), "node1");
  EXPECT_TRUE(run.ran);
  EXPECT_TRUE(run.errors.empty());
  EXPECT_THAT(run.notes, ::testing::Contains("[Warning] single host only - abandon netperf test"));
}

}  // namespace
}  // namespace hostperf::probes::check
