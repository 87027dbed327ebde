#include "hostperf/daemon/collectors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/metric_type.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../metrics_test_util.h"

namespace hostperf::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test_util::FindFamily;
using test_util::SampleLabels;
using test_util::SampleValue;
using ::testing::Optional;

const fs::path kFixtures = HOSTPERF_FIXTURES_DIR;

probes::SystemRoots ProcFixture() {
  probes::SystemRoots roots;
  roots.proc = kFixtures / "exporter-proc";
  roots.sys = kFixtures / "exporter-proc" / "no-sys";
  return roots;
}

probes::SystemRoots HostFixture(const fs::path& base = kFixtures / "exporter-host") {
  probes::SystemRoots roots;
  roots.proc = base / "proc";
  roots.sys = base / "sys";
  return roots;
}

double TicksPerSecond() { return static_cast<double>(sysconf(_SC_CLK_TCK)); }

// A fresh directory under the system temp dir, removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("hostperf-exporter-test-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// ---------------------------------------------------------------------------
// ProcessCollector

TEST(ProcessCollectorTest, ReadsFixtureProcWithParenthesesInTheCommandName) {
  const auto families = ProcessCollector(ProcFixture()).Collect();
  // utime 250 + stime 150 ticks.
  EXPECT_THAT(SampleValue(families, "process_cpu_seconds_total"), Optional(400.0 / TicksPerSecond()));
  EXPECT_THAT(SampleValue(families, "process_virtual_memory_bytes"), Optional(104857600.0));
  EXPECT_THAT(SampleValue(families, "process_resident_memory_bytes"),
              Optional(2560.0 * static_cast<double>(sysconf(_SC_PAGESIZE))));
  // btime 1700000000 + starttime 12345 ticks.
  EXPECT_THAT(SampleValue(families, "process_start_time_seconds"), Optional(1700000000.0 + 12345.0 / TicksPerSecond()));
  EXPECT_THAT(SampleValue(families, "process_open_fds"), Optional(5.0));
  EXPECT_THAT(SampleValue(families, "process_max_fds"), Optional(4096.0));
}

TEST(ProcessCollectorTest, ExportsCountersAndGaugesWithHelp) {
  const auto families = ProcessCollector(ProcFixture()).Collect();
  const prometheus::MetricFamily* cpu = FindFamily(families, "process_cpu_seconds_total");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->type, prometheus::MetricType::Counter);
  EXPECT_FALSE(cpu->help.empty());
  const prometheus::MetricFamily* rss = FindFamily(families, "process_resident_memory_bytes");
  ASSERT_NE(rss, nullptr);
  EXPECT_EQ(rss->type, prometheus::MetricType::Gauge);
  for (const prometheus::MetricFamily& family : families) {
    EXPECT_EQ(family.metric.size(), 1u) << family.name;
  }
}

TEST(ProcessCollectorTest, MissingProcGivesNoSamplesInsteadOfFailing) {
  TempDir empty;
  probes::SystemRoots roots;
  roots.proc = empty.path();
  EXPECT_TRUE(ProcessCollector(roots).Collect().empty());
}

TEST(ProcessCollectorTest, UnlimitedOpenFilesLeavesOutMaxFds) {
  TempDir dir;
  fs::create_directories(dir.path() / "self" / "fd");
  WriteFile(dir.path() / "self" / "limits",
            "Limit                     Soft Limit           Hard Limit           Units     \n"
            "Max open files            unlimited            unlimited            files     \n");
  probes::SystemRoots roots;
  roots.proc = dir.path();
  const auto families = ProcessCollector(roots).Collect();
  EXPECT_EQ(SampleValue(families, "process_max_fds"), std::nullopt);
  EXPECT_THAT(SampleValue(families, "process_open_fds"), Optional(0.0));
}

TEST(ProcessCollectorTest, MalformedStatCostsOnlyItsOwnMetrics) {
  for (const std::string stat : {"1234 (cut", "1234 (x) S 1 2", "1234 (x) S garbage garbage garbage garbage",
                                 "1234 (x) S 1 2 3 4 5 6 7 8 9 10 abc def 13 14 15 16 17 18 zz 20 21"}) {
    TempDir dir;
    fs::create_directories(dir.path() / "self" / "fd");
    WriteFile(dir.path() / "self" / "stat", stat);
    WriteFile(dir.path() / "stat", "btime notanumber\n");
    probes::SystemRoots roots;
    roots.proc = dir.path();
    std::vector<prometheus::MetricFamily> families;
    ASSERT_NO_THROW(families = ProcessCollector(roots).Collect()) << stat;
    EXPECT_EQ(SampleValue(families, "process_cpu_seconds_total"), std::nullopt) << stat;
    EXPECT_EQ(SampleValue(families, "process_start_time_seconds"), std::nullopt) << stat;
    EXPECT_THAT(SampleValue(families, "process_open_fds"), Optional(0.0)) << stat;
  }
}

TEST(ProcessCollectorTest, RealProcGivesSaneValues) {
  const auto families = ProcessCollector(probes::SystemRoots{}).Collect();
  const auto cpu = SampleValue(families, "process_cpu_seconds_total");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_GE(*cpu, 0.0);
  EXPECT_LT(*cpu, 1e6);

  const auto rss = SampleValue(families, "process_resident_memory_bytes");
  ASSERT_TRUE(rss.has_value());
  EXPECT_GT(*rss, 1024.0 * 1024.0);  // a gtest binary is more than 1 MiB
  EXPECT_LT(*rss, 64.0 * 1024 * 1024 * 1024);
  const auto vsize = SampleValue(families, "process_virtual_memory_bytes");
  ASSERT_TRUE(vsize.has_value());
  EXPECT_GE(*vsize, *rss);

  const auto start = SampleValue(families, "process_start_time_seconds");
  ASSERT_TRUE(start.has_value());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*start, now + 5);
  EXPECT_GT(*start, now - 24 * 3600);  // this test process started recently

  const auto open_fds = SampleValue(families, "process_open_fds");
  ASSERT_TRUE(open_fds.has_value());
  EXPECT_GE(*open_fds, 3.0);  // stdin, stdout, stderr at least
  const auto max_fds = SampleValue(families, "process_max_fds");
  if (max_fds.has_value()) {
    EXPECT_GE(*max_fds, *open_fds);
  }
}

TEST(ProcessCollectorTest, RealProcCountsANewlyOpenedFile) {
  const ProcessCollector collector{probes::SystemRoots{}};
  const auto before = SampleValue(collector.Collect(), "process_open_fds");
  ASSERT_TRUE(before.has_value());
  std::ifstream extra("/proc/self/stat");
  ASSERT_TRUE(extra.is_open());
  const auto after = SampleValue(collector.Collect(), "process_open_fds");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(*after, *before + 1);
}

// ---------------------------------------------------------------------------
// HostFactsCollector

TEST(HostFactsCollectorTest, ExportsTopologyCacheThrottlesAndSteal) {
  const auto families = HostFactsCollector(HostFixture(), 15s).Collect();
  // Six online CPUs: three cores with hyper-threads over two packages; the
  // offline cpu6 does not count.
  EXPECT_THAT(SampleValue(families, "hostperf_host_logical_cpus"), Optional(6.0));
  EXPECT_THAT(SampleValue(families, "hostperf_host_physical_cores"), Optional(3.0));
  EXPECT_THAT(SampleValue(families, "hostperf_host_cpu_packages"), Optional(2.0));
  EXPECT_THAT(SampleValue(families, "hostperf_host_llc_bytes"), Optional(16.0 * 1024 * 1024));
  // Core counters summed over online CPUs; package counters once per package.
  EXPECT_THAT(SampleValue(families, "hostperf_host_cpu_core_throttles_total"), Optional(20.0));
  EXPECT_THAT(SampleValue(families, "hostperf_host_cpu_package_throttles_total"), Optional(18.0));
  EXPECT_THAT(SampleValue(families, "hostperf_host_cpu_steal_seconds_total"), Optional(1234.0 / TicksPerSecond()));
}

TEST(HostFactsCollectorTest, HostInfoCarriesModelAndGovernorAsLabels) {
  const auto families = HostFactsCollector(HostFixture(), 15s).Collect();
  EXPECT_THAT(SampleValue(families, "hostperf_host_info"), Optional(1.0));
  const auto labels = SampleLabels(families, "hostperf_host_info");
  ASSERT_TRUE(labels.has_value());
  EXPECT_EQ((*labels).at("cpu_model"), "Fixture Xeon(R) CPU @ 2.10GHz");
  EXPECT_EQ((*labels).at("governor"), "powersave");
}

TEST(HostFactsCollectorTest, MetricTypesAreGaugesAndCounters) {
  const auto families = HostFactsCollector(HostFixture(), 15s).Collect();
  for (const char* gauge : {"hostperf_host_info", "hostperf_host_logical_cpus", "hostperf_host_physical_cores",
                            "hostperf_host_cpu_packages", "hostperf_host_llc_bytes"}) {
    const prometheus::MetricFamily* family = FindFamily(families, gauge);
    ASSERT_NE(family, nullptr) << gauge;
    EXPECT_EQ(family->type, prometheus::MetricType::Gauge) << gauge;
  }
  for (const prometheus::MetricFamily& family : families) {
    if (family.name.ends_with("_total")) {
      EXPECT_EQ(family.type, prometheus::MetricType::Counter) << family.name;
    }
  }
}

TEST(HostFactsCollectorTest, LeavesOutThrottleCountersTheKernelDoesNotShow) {
  const auto families = HostFactsCollector(HostFixture(kFixtures / "no-such-fixture"), 15s).Collect();
  EXPECT_EQ(FindFamily(families, "hostperf_host_cpu_core_throttles_total"), nullptr);
  EXPECT_EQ(FindFamily(families, "hostperf_host_cpu_package_throttles_total"), nullptr);
  EXPECT_EQ(FindFamily(families, "hostperf_host_cpu_steal_seconds_total"), nullptr);
  // Still there, with the fallbacks.
  EXPECT_NE(FindFamily(families, "hostperf_host_physical_cores"), nullptr);
  EXPECT_THAT(SampleValue(families, "hostperf_host_llc_bytes"), Optional(0.0));
}

TEST(HostFactsCollectorTest, CachesFactsForTheRefreshPeriodButReadsStealFresh) {
  TempDir dir;
  fs::copy(kFixtures / "exporter-host", dir.path(), fs::copy_options::recursive);
  const HostFactsCollector cached(HostFixture(dir.path()), 1h);
  const HostFactsCollector uncached(HostFixture(dir.path()), 0s);
  ASSERT_THAT(SampleValue(cached.Collect(), "hostperf_host_logical_cpus"), Optional(6.0));
  ASSERT_THAT(SampleValue(uncached.Collect(), "hostperf_host_logical_cpus"), Optional(6.0));

  // CPU 5 goes offline, and the hypervisor steals more.
  WriteFile(dir.path() / "sys/devices/system/cpu/online", "0-4\n");
  WriteFile(dir.path() / "proc/stat", "cpu  1000 20 300 40000 50 0 7 2000 0 0\n");

  const auto from_cache = cached.Collect();
  EXPECT_THAT(SampleValue(from_cache, "hostperf_host_logical_cpus"), Optional(6.0));
  EXPECT_THAT(SampleValue(from_cache, "hostperf_host_cpu_steal_seconds_total"), Optional(2000.0 / TicksPerSecond()));
  const auto reread = uncached.Collect();
  EXPECT_THAT(SampleValue(reread, "hostperf_host_logical_cpus"), Optional(5.0));
}

}  // namespace
}  // namespace hostperf::daemon
