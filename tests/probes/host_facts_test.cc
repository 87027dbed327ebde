#include "hostperf/probes/host_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>

namespace hostperf::probes {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const std::filesystem::path kFixtures = HOSTPERF_FIXTURES_DIR;

SystemRoots Roots(const char* sys, const char* proc) { return SystemRoots{kFixtures / proc, kFixtures / sys}; }

TEST(ParseCpuListTest, RangesAndSingles) {
  auto cpus = ParseCpuList("0-3,8,10-11\n");
  ASSERT_TRUE(cpus.ok()) << cpus.error();
  EXPECT_THAT(*cpus, ElementsAre(0, 1, 2, 3, 8, 10, 11));
}

TEST(ParseCpuListTest, SingleCpuAndDuplicates) {
  EXPECT_THAT(*ParseCpuList("0"), ElementsAre(0));
  EXPECT_THAT(*ParseCpuList("2,0-2"), ElementsAre(0, 1, 2));
  EXPECT_THAT(*ParseCpuList(" 4 - 5 , 7 "), ElementsAre(4, 5, 7));
}

TEST(ParseCpuListTest, EmptyListIsEmpty) {
  // The kernel writes "\n" into "offline" when every CPU is online.
  auto cpus = ParseCpuList("\n");
  ASSERT_TRUE(cpus.ok());
  EXPECT_THAT(*cpus, IsEmpty());
}

TEST(ParseCpuListTest, MalformedIsAnError) {
  for (const char* text : {"a", "1,,2", "1,", ",1", "3-1", "-1", "1-", "1--2", "1-2-3", "0x1", "1.5", "0-99999999"}) {
    EXPECT_FALSE(ParseCpuList(text).ok()) << text;
  }
}

TEST(ParseCacheSizeTest, SysfsUnits) {
  EXPECT_EQ(*ParseCacheSize("32K"), 32u * 1024);
  EXPECT_EQ(*ParseCacheSize("30720K\n"), 30720u * 1024);
  EXPECT_EQ(*ParseCacheSize("30M"), 30u * 1024 * 1024);
  EXPECT_EQ(*ParseCacheSize("1G"), 1024u * 1024 * 1024);
  EXPECT_EQ(*ParseCacheSize("512"), 512u);
  EXPECT_EQ(*ParseCacheSize("20480 KB"), 20480u * 1024);
}

TEST(ParseCacheSizeTest, Malformed) {
  for (const char* text : {"", "K", "12X", "-1K", "99999999999999999999K", "18014398509481984K"}) {
    EXPECT_FALSE(ParseCacheSize(text).ok()) << text;
  }
}

TEST(ParseProcStatTest, AggregateLineInSeconds) {
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  auto times = ParseProcStat(
      "cpu  4029 12 3491 247288 444 3 166 250 0 0\n"
      "cpu0 1482 6 1396 124730 10 0 58 125 0 0\n");
  ASSERT_TRUE(times.ok()) << times.error();
  EXPECT_DOUBLE_EQ(times->user, 4029 / hz);
  EXPECT_DOUBLE_EQ(times->nice, 12 / hz);
  EXPECT_DOUBLE_EQ(times->system, 3491 / hz);
  EXPECT_DOUBLE_EQ(times->idle, 247288 / hz);
  EXPECT_DOUBLE_EQ(times->iowait, 444 / hz);
  EXPECT_DOUBLE_EQ(times->irq, 3 / hz);
  EXPECT_DOUBLE_EQ(times->softirq, 166 / hz);
  EXPECT_DOUBLE_EQ(times->steal, 250 / hz);
  EXPECT_DOUBLE_EQ(times->Total(), (4029 + 12 + 3491 + 247288 + 444 + 3 + 166 + 250) / hz);
}

TEST(ParseProcStatTest, OldKernelWithoutStealOrIowait) {
  auto times = ParseProcStat("cpu  100 0 50 1000\n");
  ASSERT_TRUE(times.ok()) << times.error();
  EXPECT_GT(times->user, 0);
  EXPECT_EQ(times->iowait, 0);
  EXPECT_EQ(times->steal, 0);
}

TEST(ParseProcStatTest, Malformed) {
  EXPECT_FALSE(ParseProcStat("").ok());
  EXPECT_FALSE(ParseProcStat("cpu0 1 2 3 4\n").ok());  // per-CPU line only
  EXPECT_FALSE(ParseProcStat("cpu  1 2 3\n").ok());
  EXPECT_FALSE(ParseProcStat("cpu  1 2 x 4\n").ok());
}

TEST(ReadCpuTopologyTest, TwoSocketsWithHyperThreads) {
  // Core ids repeat across packages, so cores are (package, core) pairs; the
  // offline cpu8 does not count.
  const CpuTopology topology = ReadCpuTopology(Roots("sysfs-2socket-ht", "proc-2socket-ht"));
  EXPECT_EQ(topology.logical_cpus, 8);
  EXPECT_EQ(topology.physical_cores, 4);
  EXPECT_EQ(topology.packages, 2);
}

TEST(ReadCpuTopologyTest, SingleCpu) {
  const CpuTopology topology = ReadCpuTopology(Roots("sysfs-single", "does-not-exist"));
  EXPECT_EQ(topology.logical_cpus, 1);
  EXPECT_EQ(topology.physical_cores, 1);
  EXPECT_EQ(topology.packages, 1);
}

TEST(ReadCpuTopologyTest, FallsBackToCpuinfo) {
  const CpuTopology topology = ReadCpuTopology(Roots("does-not-exist", "proc-2socket-ht"));
  EXPECT_EQ(topology.logical_cpus, 8);
  EXPECT_EQ(topology.physical_cores, 4);
  EXPECT_EQ(topology.packages, 2);
}

TEST(ReadCpuTopologyTest, CpuinfoWithoutCoreIdsCountsEveryCpu) {
  const CpuTopology topology = ReadCpuTopology(Roots("does-not-exist", "proc-arm"));
  EXPECT_EQ(topology.logical_cpus, 2);
  EXPECT_EQ(topology.physical_cores, 2);
  EXPECT_EQ(topology.packages, 1);
}

TEST(ReadCpuTopologyTest, LastResortIsHardwareConcurrency) {
  const CpuTopology topology = ReadCpuTopology(Roots("does-not-exist", "does-not-exist"));
  const int expected = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  EXPECT_EQ(topology.logical_cpus, expected);
  EXPECT_EQ(topology.physical_cores, expected);
  EXPECT_EQ(topology.packages, 1);
}

TEST(ReadLastLevelCacheBytesTest, HighestUnifiedOrDataLevel) {
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("sysfs-2socket-ht", "proc-2socket-ht")), 30720u * 1024);
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("sysfs-single", "proc-arm")), 0u);
}

TEST(ReadLastLevelCacheBytesTest, FallsBackToCpuinfoCacheSize) {
  // No sysfs cache directories (as on some virtual machines): Intel's cpuinfo
  // "cache size" is the last level.
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("sysfs-single", "proc-2socket-ht")), 20480u * 1024);
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("does-not-exist", "proc-2socket-ht")), 20480u * 1024);
  // sysfs wins when it has the caches.
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("sysfs-2socket-ht", "proc-amd")), 30720u * 1024);
}

TEST(ReadLastLevelCacheBytesTest, AmdCpuinfoCacheSizeIsNotTheLastLevel) {
  // AMD reports its per-core L2 as "cache size": unknown rather than wrong.
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("sysfs-single", "proc-amd")), 0u);
  EXPECT_EQ(ReadLastLevelCacheBytes(Roots("does-not-exist", "does-not-exist")), 0u);
}

TEST(OneCpuPerPhysicalCoreTest, LowestSiblingOfEachCoreFromSysfs) {
  // cpu4-7 are the hyper-thread siblings of cpu0-3; offline cpu8 is left out.
  EXPECT_THAT(OneCpuPerPhysicalCore(Roots("sysfs-2socket-ht", "does-not-exist")), ElementsAre(0, 1, 2, 3));
}

TEST(OneCpuPerPhysicalCoreTest, FallsBackToCpuinfo) {
  EXPECT_THAT(OneCpuPerPhysicalCore(Roots("does-not-exist", "proc-2socket-ht")), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(OneCpuPerPhysicalCore(Roots("does-not-exist", "proc-amd")), ElementsAre(0, 1));
}

TEST(OneCpuPerPhysicalCoreTest, WithoutCoreIdsEveryCpu) {
  EXPECT_THAT(OneCpuPerPhysicalCore(Roots("sysfs-single", "does-not-exist")), ElementsAre(0));
  EXPECT_THAT(OneCpuPerPhysicalCore(Roots("does-not-exist", "proc-arm")), ElementsAre(0, 1));
}

TEST(OneCpuPerPhysicalCoreTest, ThisHost) {
  const std::vector<int> cpus = OneCpuPerPhysicalCore(SystemRoots{});
  EXPECT_EQ(static_cast<int>(cpus.size()), ReadCpuTopology(SystemRoots{}).physical_cores);
}

TEST(ReadMemAvailableBytesTest, FromMeminfo) {
  EXPECT_EQ(ReadMemAvailableBytes(Roots("sysfs-single", "proc-2socket-ht")), 61234567ULL * 1024);
  EXPECT_FALSE(ReadMemAvailableBytes(Roots("sysfs-single", "proc-bad-meminfo")).has_value());
  EXPECT_FALSE(ReadMemAvailableBytes(Roots("sysfs-single", "does-not-exist")).has_value());
  EXPECT_TRUE(ReadMemAvailableBytes(SystemRoots{}).has_value());
  EXPECT_EQ(ReadMemTotalBytes(Roots("sysfs-single", "proc-2socket-ht")), 65842312ULL * 1024);
  EXPECT_EQ(ReadMemTotalBytes(Roots("sysfs-single", "proc-bad-meminfo")), 100ULL * 1024);
  EXPECT_FALSE(ReadMemTotalBytes(Roots("sysfs-single", "does-not-exist")).has_value());
  EXPECT_GE(ReadMemTotalBytes(SystemRoots{}).value_or(0), ReadMemAvailableBytes(SystemRoots{}).value_or(0));
}

TEST(ReadHostFactsTest, FullFixture) {
  const HostFacts facts = ReadHostFacts(Roots("sysfs-2socket-ht", "proc-2socket-ht"));
  EXPECT_EQ(facts.cpu_model, "Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz");
  EXPECT_EQ(facts.topology.logical_cpus, 8);
  EXPECT_EQ(facts.topology.physical_cores, 4);
  EXPECT_EQ(facts.llc_bytes, 30720u * 1024);
  EXPECT_EQ(facts.governor, "powersave");
  // 0+1+...+7 over online CPUs (offline cpu8's 1000 is left out).
  EXPECT_EQ(facts.core_throttle_count, 28u);
  // Package 0 shows 5 and package 1 shows 7 on each of their CPUs: counted once each.
  EXPECT_EQ(facts.package_throttle_count, 12u);
  ASSERT_TRUE(facts.steal_seconds.has_value());
  EXPECT_DOUBLE_EQ(*facts.steal_seconds, 250.0 / static_cast<double>(::sysconf(_SC_CLK_TCK)));
}

TEST(ReadHostFactsTest, MinimalFixtureLeavesFieldsEmpty) {
  const HostFacts facts = ReadHostFacts(Roots("sysfs-single", "proc-arm"));
  EXPECT_EQ(facts.cpu_model, "ARMv7 Processor rev 4 (v7l)");
  EXPECT_EQ(facts.topology.logical_cpus, 1);
  EXPECT_EQ(facts.llc_bytes, 0u);
  EXPECT_EQ(facts.governor, "");
  EXPECT_FALSE(facts.core_throttle_count.has_value());
  EXPECT_FALSE(facts.package_throttle_count.has_value());
  ASSERT_TRUE(facts.steal_seconds.has_value());
  EXPECT_EQ(*facts.steal_seconds, 0);
}

TEST(ReadHostFactsTest, NothingReadableIsNotAnError) {
  const HostFacts facts = ReadHostFacts(Roots("does-not-exist", "does-not-exist"));
  EXPECT_EQ(facts.cpu_model, "unknown");
  EXPECT_GE(facts.topology.logical_cpus, 1);
  EXPECT_EQ(facts.llc_bytes, 0u);
  EXPECT_EQ(facts.governor, "");
  EXPECT_FALSE(facts.core_throttle_count.has_value());
  EXPECT_FALSE(facts.package_throttle_count.has_value());
  EXPECT_FALSE(facts.steal_seconds.has_value());
}

TEST(ReadHostFactsTest, ThisHost) {
  // Whatever the machine, the real /proc and /sys parse into sane facts.
  const HostFacts facts = ReadHostFacts(SystemRoots{});
  EXPECT_GE(facts.topology.logical_cpus, 1);
  EXPECT_GE(facts.topology.physical_cores, 1);
  EXPECT_LE(facts.topology.physical_cores, facts.topology.logical_cpus);
  EXPECT_TRUE(facts.steal_seconds.has_value());
}

}  // namespace
}  // namespace hostperf::probes
