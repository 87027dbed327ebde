#include "hostperf/cluster/check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace hostperf::cluster {
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
  EXPECT_EQ(parsed->disk_options, json({{"method", "gpcheckperf"}, {"directories", {"/data/vol1", "/data/vol2"}}}));
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
  // gpcheckperf's disk test: -S is the total and bounds it, so --duration
  // (the network test's) does not reach it.
  EXPECT_EQ(
      parsed->disk_options,
      json({{"method", "gpcheckperf"}, {"directories", {"/d"}}, {"data_size", "8mb"}, {"max_buffer_size", "256k"}}));
  EXPECT_EQ(ParseCheckArgs({"-r", "s", "--duration=5s"})->disk_options, json({{"method", "gpcheckperf"}}));
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
  // --help wins over what follows it, as every command's does.
  EXPECT_TRUE(ParseCheckArgs({"--help", "-r", "x"})->help);
  EXPECT_TRUE(ParseCheckArgs({"-r", "s", "--json"})->json);
  EXPECT_FALSE(ParseCheckArgs({"-r", "s"})->json);
}

TEST(ParseCheckArgsTest, EqualsValuesForLongOptions) {
  auto parsed = ParseCheckArgs({"-r", "sn", "-h", "a", "-h", "b", "--duration=2s", "--api-port=9200", "--net-port=7001",
                                "--token-file=/etc/t", "--stream-size=5000000"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->net_seconds, 2);
  EXPECT_EQ(parsed->api_port, 9200);
  EXPECT_EQ(parsed->net_port, 7001);
  EXPECT_EQ(parsed->token_file, "/etc/t");
  EXPECT_EQ(parsed->memory_options, json({{"array_elements", 5000000}}));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--api-port="}).error(), HasSubstr("not a port number"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "-D=1"}).error(), HasSubstr("unknown option"));
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

TEST(ResultAdaptersTest, DiskFromTheGpcheckperfMethod) {
  // The disk probe's gpcheckperf result: the passes over all directories and
  // each directory's interval.
  const json pass_a = {
      {"bytes", 100}, {"seconds", 1.0}, {"started_unix_seconds", 10.0}, {"finished_unix_seconds", 11.0}};
  const json pass_b = {
      {"bytes", 50}, {"seconds", 0.5}, {"started_unix_seconds", 10.1}, {"finished_unix_seconds", 10.6}};
  const json disk = {
      {"method", "gpcheckperf"},
      {"sequential", {{"write", {{"bytes", 150}, {"seconds", 1.0}}}, {"read", {{"bytes", 150}, {"seconds", 1.0}}}}},
      {"directories",
       {{{"directory", "/a"}, {"write", pass_a}, {"read", pass_a}},
        {{"directory", "/b"}, {"write", pass_b}, {"read", pass_b}}}}};
  const json entry = DiskEntryFromDiskResult(disk);
  EXPECT_EQ(entry["write"], json({{"bytes", 150.0}, {"seconds", 1.0}}));
  ASSERT_EQ(entry["directories"].size(), 2u);
  EXPECT_EQ(entry["directories"][1]["write"]["started_unix_seconds"], 10.1);
  EXPECT_EQ(entry["directories"][1]["write"]["finished_unix_seconds"], 10.6);
  EXPECT_EQ(entry["directories"][0]["read"]["bytes"], 100.0);
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
  const json entry = DiskEntryFromDiskResult(disk);
  EXPECT_EQ(entry["write"], json({{"bytes", 1000.0}, {"seconds", 5.0}}));
  EXPECT_EQ(entry["read"], json({{"bytes", 800.0}, {"seconds", 2.0}}));
  ASSERT_EQ(entry["directories"].size(), 2u);
  EXPECT_EQ(entry["directories"][1], json({{"directory", "/b"},
                                           {"write", {{"bytes", 600.0}, {"seconds", 3.0}}},
                                           {"read", {{"bytes", 500.0}, {"seconds", 1.0}}}}));
  EXPECT_TRUE(DiskEntryFromDiskResult(json::object()).is_null());
  EXPECT_TRUE(DiskEntryFromDiskResult({{"directories", {{{"directory", "/a"}, {"error", "x"}}}}}).is_null());
}

TEST(ResultAdaptersTest, LinkRateFromTheNetProbesTcpRow) {
  const json net = {{"tests",
                     {{"tcp-throughput",
                       {{{"node", "b:14159"}, {"outcome", "ok"}, {"bytes_received", 4e9}, {"duration_seconds", 4.0}},
                        {{"node", "c"}, {"outcome", "busy"}, {"bytes_received", 0}, {"duration_seconds", 0}},
                        {{"node", "average"}, {"bytes_received", 2e9}, {"duration_seconds", 2.0}}}}}}};
  std::string error;
  EXPECT_EQ(LinkRateFromNetResult(net, "b:14159", &error), 1e9);
  EXPECT_FALSE(LinkRateFromNetResult(net, "c", &error));
  EXPECT_THAT(error, HasSubstr("busy"));
  EXPECT_FALSE(LinkRateFromNetResult(net, "d", &error));
  EXPECT_THAT(error, HasSubstr("no tcp-throughput row for d"));
  EXPECT_FALSE(LinkRateFromNetResult(json::object(), "b", &error));
}

TEST(HostSpecTest, NamesPortsAndIpv6) {
  EXPECT_EQ(ParseHostSpec("sdw13", 9580)->address, "sdw13");
  EXPECT_EQ(ParseHostSpec("sdw13", 9580)->api_port, 9580);
  EXPECT_EQ(ParseHostSpec("sdw13:9100", 9580)->api_port, 9100);
  EXPECT_EQ(ParseHostSpec("10.0.0.7:1", 9580)->address, "10.0.0.7");
  EXPECT_EQ(ParseHostSpec("[fd00::7]:9200", 9580)->address, "fd00::7");
  EXPECT_EQ(ParseHostSpec("[fd00::7]:9200", 9580)->api_port, 9200);
  EXPECT_EQ(ParseHostSpec("[fd00::7]", 9580)->api_port, 9580);
  EXPECT_EQ(ParseHostSpec("fd00::7", 9581)->address, "fd00::7");
  EXPECT_EQ(ParseHostSpec("fd00::7", 9581)->api_port, 9581);
  for (const char* bad : {"", "a:", "a:0", "a:65536", "a:x", "[fd00::7", "[fd00::7]x", "[]:1", "a b", ":9580"}) {
    EXPECT_FALSE(ParseHostSpec(bad, 9580).ok()) << bad;
  }
}

// Every ordered pair exactly once over all rounds (matrix), and no host sends
// or receives twice within a round (a responder serves one session at a time).
void ExpectRoundsAreValid(const std::vector<NetworkRound>& rounds, std::size_t hosts) {
  for (const NetworkRound& round : rounds) {
    std::vector<int> sends(hosts), receives(hosts);
    for (const auto& [from, to] : round) {
      ASSERT_LT(from, hosts);
      ASSERT_LT(to, hosts);
      EXPECT_NE(from, to);
      EXPECT_EQ(++sends[from], 1) << "host " << from << " sends twice in a round";
      EXPECT_EQ(++receives[to], 1) << "host " << to << " receives twice in a round";
    }
  }
}

TEST(PlanNetworkRoundsTest, ParallelSerialAndMatrix) {
  using Links = NetworkRound;
  EXPECT_TRUE(PlanNetworkRounds(1, NetMode::kParallel).empty());
  EXPECT_TRUE(PlanNetworkRounds(4, NetMode::kNone).empty());
  // The field report: two hosts, both directions at once.
  EXPECT_EQ(PlanNetworkRounds(2, NetMode::kParallel), (std::vector<Links>{{{0, 1}, {1, 0}}}));
  EXPECT_EQ(PlanNetworkRounds(4, NetMode::kParallel), (std::vector<Links>{{{0, 1}, {1, 0}, {2, 3}, {3, 2}}}));
  EXPECT_EQ(PlanNetworkRounds(3, NetMode::kParallel), (std::vector<Links>{{{0, 1}, {1, 0}}, {{2, 0}, {0, 2}}}));
  EXPECT_EQ(PlanNetworkRounds(4, NetMode::kSerial), (std::vector<Links>{{{0, 1}, {1, 0}}, {{2, 3}, {3, 2}}}));
  for (std::size_t hosts = 2; hosts <= 9; ++hosts) {
    SCOPED_TRACE(hosts);
    for (const NetMode mode : {NetMode::kParallel, NetMode::kSerial, NetMode::kMatrix}) {
      ExpectRoundsAreValid(PlanNetworkRounds(hosts, mode), hosts);
    }
    const auto matrix = PlanNetworkRounds(hosts, NetMode::kMatrix);
    EXPECT_EQ(matrix.size(), hosts % 2 == 0 ? hosts - 1 : hosts);
    std::set<std::pair<std::size_t, std::size_t>> pairs;
    for (const auto& round : matrix) pairs.insert(round.begin(), round.end());
    EXPECT_EQ(pairs.size(), hosts * (hosts - 1));
  }
}

// A HostRunner that records what it was asked and answers canned results.
struct FakeRunner {
  std::mutex mu;
  std::vector<std::string> probes;  // "host probe"
  json disk_options;
  std::vector<json> net_options;
  ProbeOutcome disk = ProbeOutcome::Success(
      {{"sequential",
        {{"write", {{"bytes", 1 << 20}, {"seconds", 0.5}}}, {"read", {{"bytes", 1 << 20}, {"seconds", 0.25}}}}}});
  ProbeOutcome memory = ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 8e9}}}}});
  std::set<std::string> failing_hosts;  // their runs fail as an unreachable remote would

  HostRunner runner() {
    return [this](const std::string& host, std::string_view probe, const json& options) {
      std::lock_guard lock(mu);
      probes.push_back(host + " " + std::string(probe));
      if (failing_hosts.contains(host)) return ProbeOutcome::Failure("remote_unreachable", "cannot connect");
      if (probe == "disk") {
        disk_options = options;
        return disk;
      }
      if (probe == "net") {
        net_options.push_back(options);
        // 100 MiB/s per link, +1 MiB/s per character of the sender's name.
        const std::string target = options["hosts"][0];
        const double rate = (100.0 + static_cast<double>(host.size())) * 1048576;
        return ProbeOutcome::Success(
            {{"tests",
              {{"tcp-throughput",
                {{{"node", target}, {"outcome", "ok"}, {"bytes_received", rate * 2}, {"duration_seconds", 2.0}}}}}}});
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
  EXPECT_EQ(fake.probes, (std::vector<std::string>{"node1 disk", "node1 memory"}));
  EXPECT_EQ(fake.disk_options, json({{"method", "gpcheckperf"}, {"directories", {"/tmp/x"}}, {"data_size", "1mb"}}));
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

TEST(RunCheckTest, EveryHostRunsDiskAndStreamAndPairsRunTheNetwork) {
  FakeRunner fake;
  const auto options = ParseCheckArgs(
      {"-r", "dsN", "-d", "/data", "-h", "sdw13", "-h", "sdw15:9100", "--duration", "3s", "--net-port", "14200"});
  ASSERT_TRUE(options.ok()) << options.error();
  const CheckRun run = RunCheck(*options, fake.runner(), "mdw");
  EXPECT_TRUE(run.ran);
  EXPECT_TRUE(run.errors.empty()) << run.errors.front();
  EXPECT_THAT(fake.probes, ::testing::UnorderedElementsAre("sdw13 disk", "sdw15:9100 disk", "sdw13 memory",
                                                           "sdw15:9100 memory", "sdw13 net", "sdw15:9100 net"));
  ASSERT_EQ(fake.net_options.size(), 2u);
  for (const json& net : fake.net_options) {
    EXPECT_EQ(net["tests"], json({"tcp-throughput"}));
    EXPECT_EQ(net["duration"], 3.0);
    EXPECT_GT(net["datarate"].get<double>(), 10000);  // full speed, as netperf
  }
  // The responder is addressed by host and --net-port, not by the API port.
  std::set<std::string> targets;
  for (const json& net : fake.net_options) targets.insert(net["hosts"][0].get<std::string>());
  EXPECT_EQ(targets, (std::set<std::string>{"sdw13:14200", "sdw15:14200"}));

  const std::string out = FormatCheckResult(run.check, {.per_host = true});
  EXPECT_THAT(out, HasSubstr("     disk write bandwidth (MB/s): 2.00 [sdw15:9100]\n"));
  EXPECT_THAT(out, HasSubstr("  stream tot bandwidth (MB/s): 16000.00\n"));
  EXPECT_THAT(out, HasSubstr(" Netperf bisection bandwidth test\n"));
  EXPECT_THAT(out, HasSubstr(" sdw13 -> sdw15:9100 = 105.000000\n"));
  EXPECT_THAT(out, HasSubstr(" sdw15:9100 -> sdw13 = 110.000000\n"));
  EXPECT_THAT(out, HasSubstr(" sum = 215.00 MB/sec\n"));
}

// --ssh: a round runner measures each round's links (pairs both ways), the
// net probe is not run, and a link it could not measure is an error naming it.
TEST(RunCheckTest, ARoundRunnerMeasuresEachRoundOfPairsInsteadOfTheNetProbe) {
  FakeRunner fake;
  const auto options = ParseCheckArgs({"-r", "M", "--ssh", "-h", "a", "-h", "b", "-h", "c", "--duration", "2s"});
  ASSERT_TRUE(options.ok()) << options.error();
  std::vector<NetworkLinks> rounds;
  const RoundRunner measure = [&](const NetworkLinks& links, double seconds) {
    EXPECT_EQ(seconds, 2.0);
    rounds.push_back(links);
    std::vector<LinkMeasurement> out;
    for (const auto& [from, to] : links) {
      if (from == "c" && to == "a") {
        out.push_back({std::nullopt, "c's session did not run"});
      } else {
        out.push_back({1e8, ""});
      }
    }
    return out;
  };
  const CheckRun run = RunCheck(*options, fake.runner(), "", {}, measure);
  EXPECT_TRUE(fake.net_options.empty());
  // Three hosts, full matrix: three rounds of one pair both ways.
  ASSERT_EQ(rounds.size(), 3u);
  std::set<std::pair<std::string, std::string>> all;
  for (const NetworkLinks& round : rounds) {
    ASSERT_EQ(round.size(), 2u);
    EXPECT_EQ(round[0].first, round[1].second);
    EXPECT_EQ(round[0].second, round[1].first);
    all.insert(round.begin(), round.end());
  }
  EXPECT_EQ(all.size(), 6u);
  ASSERT_EQ(run.errors.size(), 1u);
  EXPECT_THAT(run.errors[0], HasSubstr("network test c -> a failed: c's session did not run"));
  EXPECT_EQ(run.check["network"]["links"].size(), 5u);
}

TEST(ParseCheckArgsTest, SshOptions) {
  auto parsed = ParseCheckArgs({"-r", "s", "-h", "root@sdw1", "--identity-file", "/k", "--ssh-options",
                                "-p 2222 -o 'User=a b'", "--scp-options=-P 2222", "--tmp-dir", "/var/tmp"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->ssh);  // implied by the SSH options
  EXPECT_EQ(parsed->identity_file, "/k");
  EXPECT_EQ(parsed->ssh_options, (std::vector<std::string>{"-p", "2222", "-o", "User=a b"}));
  EXPECT_EQ(parsed->scp_options, (std::vector<std::string>{"-P", "2222"}));
  EXPECT_EQ(parsed->tmp_dir, "/var/tmp");
  EXPECT_FALSE(ParseCheckArgs({"-r", "s", "-h", "a"})->ssh);
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--ssh"}).error(), HasSubstr("--ssh needs the hosts"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "-h", "a", "--ssh", "--tls"}).error(), HasSubstr("exclude each other"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "-h", "a", "--tmp-dir", "tmp"}).error(), HasSubstr("not an absolute path"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "-h", "a", "--ssh-options", "-o 'x"}).error(), HasSubstr("unbalanced"));
}

TEST(RunCheckTest, AnUnreachableHostIsAnErrorAndTheOthersStillReport) {
  FakeRunner fake;
  fake.failing_hosts = {"sdw15"};
  const CheckRun run =
      RunCheck(*ParseCheckArgs({"-r", "sM", "-h", "sdw13", "-h", "sdw15", "-h", "sdw16"}), fake.runner(), "mdw");
  EXPECT_TRUE(run.ran);
  // stream on sdw15, and its two outgoing links (its incoming ones are
  // measured by the others against its responder: here they succeed).
  ASSERT_EQ(run.errors.size(), 3u);
  EXPECT_THAT(run.errors[0], HasSubstr("stream test on sdw15 failed: remote_unreachable"));
  EXPECT_THAT(run.errors, ::testing::Contains(HasSubstr("network test sdw15 -> sdw13 failed: remote_unreachable")));
  const std::string out = FormatCheckResult(run.check, {.per_host = true, .verbose = true});
  EXPECT_THAT(out, HasSubstr("stream bandwidth (MB/s): 8000.00 [sdw16]"));
  EXPECT_THAT(out, Not(HasSubstr("[sdw15]\n")));
  EXPECT_THAT(out, HasSubstr(" Full matrix netperf bandwidth test\n"));
  EXPECT_THAT(out, HasSubstr(" sdw13 -> sdw16 = "));
  EXPECT_THAT(out, HasSubstr(" sdw16 -> sdw15 = "));
}

TEST(ParseCheckArgsTest, HostFileApiAndTokenOptions) {
  const std::string file = ::testing::TempDir() + "/check_hosts";
  {
    std::ofstream out(file);
    out << "# segment hosts\nsdw13\n\n  sdw15:9100  # other port\n[fd00::7]\n";
  }
  auto parsed = ParseCheckArgs({"-r", "N", "-f", file, "--api-port", "9200", "--token-file", "/etc/t"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_EQ(parsed->hosts, (std::vector<std::string>{"sdw13", "sdw15:9100", "[fd00::7]"}));
  EXPECT_EQ(parsed->api_port, 9200);
  EXPECT_EQ(parsed->token_file, "/etc/t");
  EXPECT_EQ(parsed->net_seconds, kDefaultNetSeconds);
  EXPECT_THAT(ParseCheckArgs({"-f", "/nonexistent/hosts", "-r", "s"}).error(), HasSubstr("cannot read"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "-h", "a", "-h", "a"}).error(), HasSubstr("given twice"));
  EXPECT_THAT(ParseCheckArgs({"-r", "N", "--duration", "2m"}).error(), HasSubstr("at most 60s"));
  EXPECT_TRUE(ParseCheckArgs({"-r", "s", "--duration", "2m"}).ok());  // no network test: no cap
  EXPECT_FALSE(ParseCheckArgs({"-r", "s", "--duration", "soon"}).ok());
  EXPECT_FALSE(ParseCheckArgs({"-r", "s", "--api-port", "0"}).ok());
  EXPECT_FALSE(ParseCheckArgs({"-r", "s", "--net-port", "x"}).ok());
  EXPECT_FALSE(ParseCheckArgs({"-r", "s", "-h", "a:b"}).ok());
}

TEST(ParseCheckArgsTest, TlsAndBasicAuthOptions) {
  auto parsed = ParseCheckArgs({"-r", "s", "--ca-file", "/etc/ca.crt", "--cert-file=/c.crt", "--key-file", "/c.key",
                                "--basic-auth-user", "alice", "--basic-auth-password-file", "/p"});
  ASSERT_TRUE(parsed.ok()) << parsed.error();
  EXPECT_TRUE(parsed->tls);  // implied by the CA
  EXPECT_EQ(parsed->ca_file, "/etc/ca.crt");
  EXPECT_EQ(parsed->cert_file, "/c.crt");
  EXPECT_EQ(parsed->key_file, "/c.key");
  EXPECT_EQ(parsed->basic_auth_user, "alice");
  EXPECT_EQ(parsed->basic_auth_password_file, "/p");
  EXPECT_FALSE(ParseCheckArgs({"-r", "s"})->tls);
  EXPECT_TRUE(ParseCheckArgs({"-r", "s", "--tls"})->tls);
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--key-file", "/k"}).error(), HasSubstr("go together"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--basic-auth-user", "a"}).error(), HasSubstr("go together"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--basic-auth-user", "a:b", "--basic-auth-password-file", "/p"}).error(),
              HasSubstr("not a user name"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--ca-file="}).error(), HasSubstr("needs a file"));
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--tls=1"}).error(), HasSubstr("--tls"));
  EXPECT_TRUE(ParseCheckArgs({"-r", "s", "--insecure-http"})->insecure_http);
  EXPECT_FALSE(ParseCheckArgs({"-r", "s"})->insecure_http);
  EXPECT_THAT(ParseCheckArgs({"-r", "s", "--insecure-http", "--ca-file", "ca.crt"}).error(),
              HasSubstr("--insecure-http and --tls (or --ca-file, --cert-file) exclude each other"));
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

// -v: each host's start and end as they happen, from the hosts' threads, in
// CheckRun's notes too; the step line counts hosts done whatever -v.
TEST(RunCheckTest, ProgressAsItGoes) {
  FakeRunner fake;
  std::mutex mu;
  std::vector<std::string> live_notes;
  std::vector<std::string> steps;
  CheckProgress progress;
  progress.on_note = [&](const std::string& note) {
    std::lock_guard lock(mu);
    live_notes.push_back(note);
  };
  progress.on_step = [&](const std::string& step) {
    std::lock_guard lock(mu);
    steps.push_back(step);
  };
  const CheckRun run =
      RunCheck(*ParseCheckArgs({"-v", "-r", "sN", "-h", "a", "-h", "b"}), fake.runner(), "a", progress);
  ASSERT_TRUE(run.errors.empty()) << run.errors.front();
  EXPECT_EQ(live_notes, run.notes);
  using ::testing::Contains;
  using ::testing::StartsWith;
  for (const std::string host : {"a", "b"}) {
    const auto start = std::find(live_notes.begin(), live_notes.end(), "[Info] stream test on " + host);
    const auto end = std::find_if(live_notes.begin(), live_notes.end(), [&](const std::string& note) {
      return note.starts_with("[Info] stream test on " + host + " done in ");
    });
    ASSERT_NE(start, live_notes.end()) << host;
    ASSERT_NE(end, live_notes.end()) << host;
    EXPECT_LT(start, end) << host;
  }
  // Parallel pairs: one round of a -> b and b -> a, each started and ended.
  EXPECT_THAT(live_notes, Contains("[Info] netperf a -> b"));
  EXPECT_THAT(live_notes, Contains(StartsWith("[Info] netperf b -> a done in ")));
  EXPECT_EQ(steps.front(), "stream test: 0/2 hosts done");
  EXPECT_THAT(steps, Contains("stream test: 2/2 hosts done"));
  EXPECT_EQ(steps.back(), "network test: round 1/1, 2 links");

  // Without -v no notes, but the steps still come; a failed host says so.
  fake.failing_hosts = {"b"};
  live_notes.clear();
  steps.clear();
  const CheckRun quiet = RunCheck(*ParseCheckArgs({"-r", "s", "-h", "a", "-h", "b"}), fake.runner(), "a", progress);
  EXPECT_TRUE(live_notes.empty());
  EXPECT_THAT(steps, Contains("stream test: 2/2 hosts done"));
  ASSERT_EQ(quiet.errors.size(), 1u);
  EXPECT_THAT(quiet.errors[0], HasSubstr("stream test on b failed: remote_unreachable"));
  live_notes.clear();
  RunCheck(*ParseCheckArgs({"-v", "-r", "s", "-h", "a", "-h", "b"}), fake.runner(), "a", progress);
  EXPECT_THAT(live_notes, Contains(StartsWith("[Info] stream test on b failed (remote_unreachable) in ")));
}

TEST(TerminalSafeTest, ControlCharactersAreShownAsHex) {
  EXPECT_EQ(TerminalSafe("plain text, ünïcode"), "plain text, ünïcode");
  EXPECT_EQ(TerminalSafe("\x1b]0;owned\x07title\r\n\x7f"), "\\x1b]0;owned\\x07title\\x0d\\x0a\\x7f");
  EXPECT_EQ(TerminalSafe("\xc2\x9b"
                         "31m"),
            "\\xc2\\x9b31m");  // the 8-bit CSI
}

// A hostile host: escape sequences in its reason and message, 1e308 B/s as
// its stream and link rates. Nothing of it reaches the terminal raw, and
// the number is refused with the host named.
TEST(RunCheckTest, AHostileHostsTextIsEscapedAndItsImpossibleNumbersRefused) {
  constexpr const char* kEscape = "\x1b]0;pwned\x07\x1b[2K\x1b[31mred";
  std::mutex mu;
  const HostRunner runner = [&](const std::string& host, std::string_view probe, const json& options) {
    std::lock_guard lock(mu);
    if (host == "evil" && probe == "memory") {
      return ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 1e308}}}}});
    }
    if (probe == "net") {
      const std::string target = options["hosts"][0];
      const double rate = host == "evil" ? 1e308 : 100.0 * 1048576;
      return ProbeOutcome::Success(
          {{"tests",
            {{"tcp-throughput",
              {{{"node", target}, {"outcome", "ok"}, {"bytes_received", rate}, {"duration_seconds", 1.0}}}}}}});
    }
    if (host == "evil") return ProbeOutcome::Failure(std::string("bad") + kEscape, std::string("msg") + kEscape);
    return ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 8e9}}}}});
  };
  std::vector<std::string> live_notes;
  CheckProgress progress;
  progress.on_note = [&](const std::string& note) { live_notes.push_back(note); };
  const CheckRun run = RunCheck(*ParseCheckArgs({"-v", "-r", "sN", "-h", "good", "-h", "evil"}), runner, "x", progress);
  ASSERT_EQ(run.errors.size(), 2u);
  EXPECT_EQ(run.errors[0],
            "stream test on evil: the host reported an invalid bandwidth (1e+308 B/s; valid: 0 to 1e+14 B/s)");
  EXPECT_EQ(run.errors[1],
            "network test evil -> good: the host evil reported an invalid bandwidth (1e+308 B/s; valid: 0 to 1e+14 "
            "B/s)");
  const std::string out = FormatCheckResult(run.check, {.per_host = true, .verbose = true});
  EXPECT_THAT(out, Not(HasSubstr("e+308")));
  EXPECT_THAT(out, HasSubstr("stream max bandwidth (MB/s): 8000.00 [good]"));
  EXPECT_THAT(out, HasSubstr(" good -> evil = 100.000000\n"));

  // Its failure's reason and message, escaped in the error line.
  const HostRunner failing = [&](const std::string& host, std::string_view, const json&) {
    if (host == "evil") return ProbeOutcome::Failure(std::string("bad") + kEscape, std::string("msg") + kEscape);
    return ProbeOutcome::Success({{"kernels", {{{"kernel", "copy"}, {"best_bytes_per_second", 8e9}}}}});
  };
  const CheckRun failed = RunCheck(*ParseCheckArgs({"-r", "s", "-h", "good", "-h", "evil"}), failing, "x");
  ASSERT_EQ(failed.errors.size(), 1u);
  EXPECT_EQ(failed.errors[0],
            "stream test on evil failed: bad\\x1b]0;pwned\\x07\\x1b[2K\\x1b[31mred: msg\\x1b]0;pwned\\x07\\x1b[2K\\x1b["
            "31mred");
  // Nothing printed holds a control character but the formatter's newlines.
  for (const std::string& line : run.notes) EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;

  // Host names in a result (a host file's lines) are escaped when printed.
  const json hostile = {{"hosts", {{{"host", std::string("h") + kEscape}, {"stream", {{"bytes_per_second", 1e9}}}}}}};
  const std::string block = FormatCheckResult(hostile, {.per_host = true});
  EXPECT_EQ(block.find('\x1b'), std::string::npos);
  EXPECT_THAT(block, HasSubstr("[h\\x1b]0;pwned\\x07\\x1b[2K\\x1b[31mred]"));
}

}  // namespace
}  // namespace hostperf::cluster
