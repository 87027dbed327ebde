// Soak: the real daemon on an accelerated schedule (every probe every few
// seconds, small sizes, the net probe against its own loopback responder),
// scraped every second for HOSTPERF_SOAK_SECONDS (the test command sets 180;
// unset or 0: skipped, so plain local runs and the sanitizer variants stay
// fast). No scrape may fail, every probe keeps running and succeeding, and
// resident memory and open fds stay flat: their growth from the first to the
// last window is printed and bounded.
#include <gtest/gtest.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hostperf/probes/stats.h"
#include "net_http_fault_harness.h"
#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;

// Growth allowed from the first to the last window: generous, as a leak of one
// fd or some KiB per probe run adds up to far more over hundreds of runs.
constexpr double kMaxRssGrowthRatio = 0.20;
constexpr double kMaxRssGrowthSlackKib = 2048;  // tiny processes: allocator noise
constexpr double kMaxFdGrowth = 5;
constexpr int kWorkerThreads = 64;  // the daemon's HTTP workers (exporter/.../http_server.h)

int SoakSeconds() {
  const char* value = std::getenv("HOSTPERF_SOAK_SECONDS");
  return value == nullptr ? 0 : std::atoi(value);
}

// Every registered probe on a schedule of a few seconds: the probes below
// with small sizes (the net probe against its own loopback responder), any
// other enabled, with `interval` and `timeout` of 3 s and its defaults.
std::string SoakConfig(const TempDir& dir, int net_port) {
  const std::string port = std::to_string(net_port);
  const std::map<std::string, std::string> fast = {
      {"cpu", "interval = \"3s\"\ntimeout = \"3s\"\ncalibration_runs = 3\nthrottle_samples = 10\n"},
      {"memory", "interval = \"3s\"\ntimeout = \"3s\"\nmemory_budget = \"8mb\"\n"},
      {"disk",
       "interval = \"4s\"\ntimeout = \"4s\"\nbytes_per_run = \"4mb\"\nmax_buffer_size = \"256kb\"\n"
       "reserve = \"1kb\"\ndisable_direct_io = true\n"},
      {"net", "interval = \"3s\"\ntimeout = \"3s\"\nbind_address = \"127.0.0.1\"\nports = [" + port +
                  "]\nsecret_file = \"" + dir.path() + "/secret\"\npeers = [\"127.0.0.1:" + port +
                  "\"]\npackets_per_cycle = 5\npacket_interval = \"5ms\"\nreply_timeout = \"1s\"\n"
                  "throughput_duration = \"100ms\"\nthroughput_rate = \"4mb\"\n"},
  };
  return "state_directory = \"" + dir.path() +
         "/state\"\n"
         "[budget]\ncpu_seconds_per_hour = 3600\ndisk_bytes_per_hour = \"1tb\"\nnet_bytes_per_hour = \"1tb\"\n"
         "[scheduler]\nfirst_run_splay = \"1s\"\n" +
         ProbeSectionsToml(fast, "enabled = true\ninterval = \"3s\"\ntimeout = \"3s\"\n");
}

// "name{labels}" -> value for every sample of an exposition.
std::map<std::string, double> Samples(const std::string& exposition) {
  std::map<std::string, double> samples;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    samples[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return samples;
}

// The sum of every sample of `family` with the label probe="<probe>".
double ProbeSum(const std::map<std::string, double>& samples, const std::string& family, const std::string& probe) {
  double sum = 0;
  const std::string label = "probe=\"" + probe + "\"";
  for (const auto& [series, value] : samples) {
    if (series.rfind(family + "{", 0) == 0 && series.find(label) != std::string::npos) sum += value;
  }
  return sum;
}

TEST(SoakTest, AcceleratedScheduleStaysHealthyAndFlat) {
  const int seconds = SoakSeconds();
  if (seconds <= 0) GTEST_SKIP() << "set HOSTPERF_SOAK_SECONDS (e.g. 300) to run the soak";
  // Compare the first and the last minute (a fifth of a shorter run each).
  const int window = std::max(5, std::min(60, seconds / 5));

  const std::vector<std::string> probes = RegisteredProbes();
  TempDir dir;
  dir.Write("secret", "soak-test-shared-secret-0123456789abcdef");
  const int net_port = FreeLoopbackPort();
  ASSERT_GT(net_port, 0);
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + dir.Write("soak.toml", SoakConfig(dir, net_port)),
                                              "--web.listen-address=127.0.0.1:0"});
  const int port = daemon.ListeningPort();
  ASSERT_GT(port, 0) << daemon.Stderr();

  // Before measuring: every probe has run once (first runs load baselines,
  // allocate pools and open the responder's sockets).
  std::map<std::string, double> samples;
  const auto warm_until = std::chrono::steady_clock::now() + 60s;
  auto all_ran = [&] {
    return std::all_of(probes.begin(), probes.end(),
                       [&](const std::string& p) { return ProbeSum(samples, "hostperf_probe_runs_total", p) >= 1; });
  };
  while (!all_ran() && std::chrono::steady_clock::now() < warm_until) {
    std::this_thread::sleep_for(500ms);
    if (const auto reply = HttpRequest(port, "GET", "/metrics"); reply && reply->status == 200) {
      samples = Samples(reply->body);
    }
  }
  ASSERT_TRUE(all_ran()) << "not every probe ran within 60 s\n" << daemon.Stderr();
  std::map<std::string, double> runs_at_start;
  for (const auto& probe : probes) runs_at_start[probe] = ProbeSum(samples, "hostperf_probe_runs_total", probe);

  // Warm-up: CivetWeb hands each connection to the next idle worker in turn,
  // and a worker's stack and buffers become resident the first time it
  // serves (about 18 KiB each, 64 workers: HttpServerOptions::worker_threads).
  // That bounded step is the pool's cost, reported here, not a leak: every
  // worker serves twice before the windows are measured.
  const long rss_cold = ResidentKib(daemon.pid());
  for (int i = 0; i < 2 * kWorkerThreads; ++i) {
    const auto reply = HttpRequest(port, "GET", "/metrics");
    ASSERT_TRUE(reply && reply->status == 200) << "warm-up scrape " << i << " failed";
  }
  const long rss_warm = ResidentKib(daemon.pid());
  std::printf("soak: VmRSS %ld KiB -> %ld KiB after %d warm-up scrapes (every HTTP worker served)\n", rss_cold,
              rss_warm, 2 * kWorkerThreads);

  int scrapes = 0;
  int failed_scrapes = 0;
  std::map<std::string, int> unsuccessful;  // probe -> scrapes whose success gauge was not 1
  std::vector<double> first_rss, first_fds, last_rss, last_fds;
  const auto start = std::chrono::steady_clock::now();
  for (int second = 0; second < seconds; ++second) {
    std::this_thread::sleep_until(start + std::chrono::seconds(second + 1));
    ++scrapes;
    const auto reply = HttpRequest(port, "GET", "/metrics");
    if (!reply || reply->status != 200) {
      ++failed_scrapes;
      ADD_FAILURE() << "scrape " << scrapes << " failed: " << (reply ? std::to_string(reply->status) : "no reply");
      continue;
    }
    samples = Samples(reply->body);
    for (const auto& probe : probes) {
      if (ProbeSum(samples, "hostperf_probe_success", probe) != 1) ++unsuccessful[probe];
    }
    const long rss_kib = ResidentKib(daemon.pid());
    const int fds = OpenFds(daemon.pid());
    ASSERT_TRUE(rss_kib > 0 && fds >= 0) << "the daemon is gone\n" << daemon.Stderr();
    if (second < window) {
      first_rss.push_back(rss_kib);
      first_fds.push_back(fds);
    } else if (second >= seconds - window) {
      last_rss.push_back(rss_kib);
      last_fds.push_back(fds);
    }
  }

  const double rss_before = hostperf::probes::Median(first_rss);
  const double rss_after = hostperf::probes::Median(last_rss);
  const double fds_before = hostperf::probes::Median(first_fds);
  const double fds_after = hostperf::probes::Median(last_fds);
  std::printf("soak: %d s, %d scrapes, %d failed; windows of %d s\n", seconds, scrapes, failed_scrapes, window);
  std::printf("soak: VmRSS %.0f KiB -> %.0f KiB (%+.1f%%), open fds %.0f -> %.0f (%+.0f)\n", rss_before, rss_after,
              rss_before > 0 ? 100.0 * (rss_after - rss_before) / rss_before : 0.0, fds_before, fds_after,
              fds_after - fds_before);
  for (const auto& probe : probes) {
    const double runs = ProbeSum(samples, "hostperf_probe_runs_total", probe) - runs_at_start[probe];
    const double failures = ProbeSum(samples, "hostperf_probe_failures_total", probe);
    const double skipped = ProbeSum(samples, "hostperf_probe_skipped_total", probe);
    std::printf("soak: %-6s %4.0f runs, %.0f failures, %.0f skipped, success gauge != 1 in %d scrapes\n", probe.c_str(),
                runs, failures, skipped, unsuccessful[probe]);
    // Intervals of 3-4 s: at least a quarter of the possible runs (the
    // budget, busy gate and jitter may delay some, never stop them).
    EXPECT_GE(runs, seconds / 16.0) << probe;
    EXPECT_EQ(failures, 0) << probe;
    EXPECT_EQ(unsuccessful[probe], 0) << probe;
  }
  std::fflush(stdout);
  EXPECT_EQ(failed_scrapes, 0);
  EXPECT_LE(rss_after, rss_before * (1 + kMaxRssGrowthRatio) + kMaxRssGrowthSlackKib)
      << "resident memory grew from " << rss_before << " KiB to " << rss_after << " KiB";
  EXPECT_LE(fds_after, fds_before + kMaxFdGrowth) << "open fds grew from " << fds_before << " to " << fds_after;
  EXPECT_EQ(daemon.Wait(0ms), std::nullopt) << "the daemon exited\n" << daemon.Stderr();
}

}  // namespace
}  // namespace hostperf::testing
