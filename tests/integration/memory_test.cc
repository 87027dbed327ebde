// `hostperf memory`, `hostperf check` and the daemon's memory metrics, with
// the real binaries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

// Every number captured by `pattern`'s first group, in order.
std::vector<double> Numbers(const std::string& text, const std::string& pattern) {
  std::vector<double> numbers;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    numbers.push_back(std::stod((*it)[1]));
  }
  return numbers;
}

TEST(MemoryCommand, PrintsStreamTableAndValidates) {
  const auto run = RunCommand(HOSTPERF_CLI_BIN, {"memory", "-s", "200000", "-n", "3", "-t", "2"}, seconds(60));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Array size = 200000 (elements)"));
  EXPECT_THAT(run.out, HasSubstr("Number of Threads counted = 2"));
  EXPECT_THAT(run.out, HasSubstr("Function    Best Rate MB/s  Avg time     Min time     Max time"));
  for (const char* kernel : {"Copy", "Scale", "Add", "Triad"}) {
    // Best rate, then avg, min and max time with min <= avg <= max.
    const auto row = Numbers(run.out, std::string(kernel) + R"(:\s+([0-9.]+)\s)");
    ASSERT_EQ(row.size(), 1u) << kernel << "\n" << run.out;
    EXPECT_GT(row[0], 0) << kernel;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        run.out, m, std::regex(std::string(kernel) + R"(:\s+[0-9.]+\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+))")))
        << kernel;
    EXPECT_LE(std::stod(m[2]), std::stod(m[1])) << kernel;
    EXPECT_LE(std::stod(m[1]), std::stod(m[3])) << kernel;
  }
  EXPECT_THAT(run.out, HasSubstr("Solution Validates"));
}

TEST(MemoryCommand, JsonAndBadOptions) {
  const auto json =
      RunCommand(HOSTPERF_CLI_BIN, {"memory", "--json", "-s", "100000", "-n", "2", "-t", "1"}, seconds(60));
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"kernel\": \"triad\""));
  EXPECT_THAT(json.out, HasSubstr("\"cache_resident\": true"));
  const auto bad = RunCommand(HOSTPERF_CLI_BIN, {"memory", "-n", "1"}, seconds(10));
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("\"iterations\" must be between 2 and 1000"));
  const auto unknown = RunCommand(HOSTPERF_CLI_BIN, {"memory", "--bogus"}, seconds(10));
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown option \"--bogus\""));
}

TEST(CheckCommand, LocalDiskAndStreamPrintTheResultBlock) {
  TempDir dir;
  const auto run = RunCommand(
      HOSTPERF_CLI_BIN,
      {"check", "-r", "ds", "-d", dir.path(), "-S", "8mb", "--duration", "1s", "--stream-size", "500000", "-D"},
      seconds(120));
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(" ====================\n ==  RESULT\n ====================\n"));
  for (const char* title : {"disk write", "disk read"}) {
    const auto avg = Numbers(run.out, std::string(title) + R"( avg time \(sec\): ([0-9.]+))");
    const auto bytes = Numbers(run.out, std::string(title) + R"( tot bytes: ([0-9]+))");
    const auto total = Numbers(run.out, std::string(title) + R"( tot bandwidth \(MB/s\): ([0-9.]+))");
    const auto per_host = Numbers(run.out, R"(     )" + std::string(title) + R"( bandwidth \(MB/s\): ([0-9.]+) \[)");
    ASSERT_EQ(total.size(), 1u) << title << "\n" << run.out;
    EXPECT_GT(avg.at(0), 0) << title;
    EXPECT_GT(bytes.at(0), 0) << title;
    EXPECT_GT(total[0], 0) << title;
    ASSERT_EQ(per_host.size(), 1u) << title;
    EXPECT_DOUBLE_EQ(per_host[0], total[0]);  // one host: its figure is the total
  }
  const auto stream = Numbers(run.out, R"(stream tot bandwidth \(MB/s\): ([0-9.]+))");
  ASSERT_EQ(stream.size(), 1u) << run.out;
  EXPECT_GT(stream[0], 100);  // any machine moves well over 100 MB/s
  EXPECT_THAT(run.out, HasSubstr("stream min bandwidth (MB/s): "));
  EXPECT_THAT(run.out, Not(HasSubstr("[Warning]")));
  // The disk test leaves nothing behind.
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(CheckCommand, RemoteHostsAndBadLetters) {
  // Other hosts are reached through their run API (check_remote_test.cc):
  // without a token the check stops before running anything.
  const auto remote = RunCommand(HOSTPERF_CLI_BIN, {"check", "-r", "s", "-h", "sdw13.invalid"}, seconds(10));
  EXPECT_EQ(remote.status, 1);
  EXPECT_THAT(remote.err, HasSubstr("--token-file"));
  EXPECT_THAT(remote.out, Not(HasSubstr("RESULT")));
  const auto letters = RunCommand(HOSTPERF_CLI_BIN, {"check", "-r", "sx"}, seconds(10));
  EXPECT_EQ(letters.status, 2);
  EXPECT_THAT(letters.err, HasSubstr("unknown test letter 'x'"));
  const auto no_dir = RunCommand(HOSTPERF_CLI_BIN, {"check", "-r", "d"}, seconds(10));
  EXPECT_EQ(no_dir.status, 2);
  EXPECT_THAT(no_dir.err, HasSubstr("-d DIR"));
}

TEST(CheckCommand, NetworkOnOneHostIsAbandonedAsGpcheckperfDoes) {
  const auto run = RunCommand(HOSTPERF_CLI_BIN, {"check", "-r", "sN", "--stream-size", "100000"}, seconds(60));
  EXPECT_EQ(run.status, 0) << run.err;
  EXPECT_THAT(run.out, HasSubstr("[Warning] single host only - abandon netperf test"));
  EXPECT_THAT(run.out, HasSubstr("stream tot bandwidth"));
}

// The daemon's scheduled memory run: one thread within the budget, the
// bandwidth per kernel and the cache-resident gauge.
TEST(MemoryDaemon, ScheduledRunExportsBandwidthAndCacheResidency) {
  TempDir dir;
  const std::string config =
      dir.Write("hostperf.toml", "state_directory = \"" + dir.path() +
                                     "/state\"\n"
                                     "[scheduler]\nfirst_run_splay = \"1s\"\n"
                                     "[probes.cpu]\nenabled = false\n"
                                     "[probes.disk]\nenabled = false\n"
                                     "[probes.net]\nenabled = false\n"
                                     "[probes.memory]\ninterval = \"1h\"\nmemory_budget = \"8mb\"\n");
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
  ASSERT_TRUE(daemon.WaitForStderr("(port ", seconds(30))) << daemon.Stderr();
  std::smatch match;
  const std::string log = daemon.Stderr();
  ASSERT_TRUE(std::regex_search(log, match, std::regex(R"(\(port (\d+)\))")));
  const int port = std::stoi(match[1]);

  std::string metrics;
  const auto until = std::chrono::steady_clock::now() + seconds(60);
  while (std::chrono::steady_clock::now() < until) {
    const auto reply = HttpRequest(port, "GET", "/metrics");
    metrics = reply ? reply->body : "";
    if (metrics.find("hostperf_memory_bandwidth_bytes_per_second{") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(200));
  }
  for (const char* kernel : {"copy", "scale", "add", "triad"}) {
    const auto rate = Numbers(metrics, std::string(R"(\nhostperf_memory_bandwidth_bytes_per_second\{kernel=")") +
                                           kernel + R"(",threads="1"\} ([0-9.e+]+))");
    ASSERT_EQ(rate.size(), 1u) << kernel << "\n" << metrics;
    EXPECT_GT(rate[0], 1e8) << kernel;
  }
  // The flag follows the host's LLC as the daemon itself exports it: 1 when
  // unknown (0) or when the 8 MiB of arrays are below 4x the LLCs.
  const auto resident = Numbers(metrics, R"(\nhostperf_memory_cache_resident\{threads="1"\} ([0-9.]+))");
  const auto llc = Numbers(metrics, R"(\nhostperf_host_llc_bytes ([0-9.e+]+))");
  const auto packages = Numbers(metrics, R"(\nhostperf_host_cpu_packages ([0-9.e+]+))");
  ASSERT_EQ(resident.size(), 1u) << metrics;
  ASSERT_EQ(llc.size(), 1u) << metrics;
  ASSERT_EQ(packages.size(), 1u) << metrics;
  const bool expect_resident = llc[0] == 0 || 8388600 < 4 * llc[0] * packages[0];
  EXPECT_EQ(resident[0], expect_resident ? 1 : 0) << "llc " << llc[0] << " packages " << packages[0];
  EXPECT_THAT(metrics, HasSubstr("hostperf_memory_array_bytes{threads=\"1\"} 8388600"));
  EXPECT_THAT(metrics, HasSubstr("hostperf_memory_validation_errors_total 0"));
  EXPECT_THAT(metrics, HasSubstr("hostperf_probe_success{probe=\"memory\"} 1"));
}

}  // namespace
}  // namespace hostperf::testing
