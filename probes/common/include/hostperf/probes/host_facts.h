#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. Error on malformed input.
Result<std::vector<int>> ParseCpuList(std::string_view text);

struct CpuTopology {
  int logical_cpus = 0;    // online CPUs
  int physical_cores = 0;  // distinct (package, core) pairs: hyper-threads count once
  int packages = 0;
};

// From <sys>/devices/system/cpu/online and each cpuN/topology/. Falls back to
// /proc/cpuinfo when sysfs topology is missing.
CpuTopology ReadCpuTopology(const SystemRoots& roots);

// Largest (highest-level) unified or data cache of cpu0 from
// <sys>/devices/system/cpu/cpu0/cache/index*/{level,type,size}. Without sysfs
// cache directories (some virtual machines), the "cache size" of <proc>/cpuinfo
// on Intel-compatible CPUs, where it is the last level; AMD and Hygon report
// their per-core L2 there, which is not the LLC, so those stay unknown. 0 if
// unknown.
std::uint64_t ReadLastLevelCacheBytes(const SystemRoots& roots);

// One online logical CPU per physical core (the lowest-numbered sibling), in
// ascending order: where to pin one thread per core. From sysfs topology, else
// /proc/cpuinfo; when neither names cores, every online CPU.
std::vector<int> OneCpuPerPhysicalCore(const SystemRoots& roots);

// MemAvailable and MemTotal of <proc>/meminfo in bytes; nullopt when absent
// or malformed.
std::optional<std::uint64_t> ReadMemAvailableBytes(const SystemRoots& roots);
std::optional<std::uint64_t> ReadMemTotalBytes(const SystemRoots& roots);

// "32K", "1024K", "30M" (sysfs cache size format) -> bytes.
Result<std::uint64_t> ParseCacheSize(std::string_view text);

// Aggregate "cpu" line of /proc/stat, in USER_HZ ticks converted to seconds.
struct CpuTimes {
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  double Total() const { return user + nice + system + idle + iowait + irq + softirq + steal; }
};
Result<CpuTimes> ParseProcStat(std::string_view proc_stat_text);
Result<CpuTimes> ReadCpuTimes(const SystemRoots& roots);

struct HostFacts {
  std::string cpu_model;  // "model name" of /proc/cpuinfo, else "unknown"
  CpuTopology topology;
  std::uint64_t llc_bytes = 0;
  std::string governor;  // scaling_governor of cpu0; "" when cpufreq is absent
  // Summed over CPUs from thermal_throttle/{core,package}_throttle_count
  // (package counts once per package); absent when the kernel has none.
  std::optional<std::uint64_t> core_throttle_count;
  std::optional<std::uint64_t> package_throttle_count;
  std::optional<double> steal_seconds;
};

HostFacts ReadHostFacts(const SystemRoots& roots);

}  // namespace hostperf::probes
