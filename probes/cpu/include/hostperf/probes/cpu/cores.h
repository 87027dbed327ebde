#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/cpu/throttle.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// Per-core attribution: each scheduled run pins one extra low-load measurement
// (the throttle test's low-load phase) to the next CPU of the rotation, so the
// cost per run stays flat whatever the core count. A core is named slow once
// its window's median stands above its siblings'.

// The CPUs the rotation visits, and those it leaves out (said on /metrics).
struct RotationSet {
  std::vector<int> cpus;             // ascending
  std::size_t outside_affinity = 0;  // online, but not in the process's affinity mask
  std::size_t over_max_cores = 0;    // usable, but beyond max_cores
};

// Online CPUs that are in `affinity` (an empty affinity means unknown: all
// online CPUs). Above `max_cores`, an evenly spread subset of that size, the
// same one for the same inputs (stable series). max_cores 0 turns rotation off.
RotationSet ChooseRotationCpus(const std::vector<int>& online, const std::vector<int>& affinity,
                               std::uint32_t max_cores);

// <sys>/devices/system/cpu/online; empty when unreadable.
std::vector<int> ReadOnlineCpus(const SystemRoots& roots);

// The calling thread's affinity mask (sched_getaffinity), ascending.
Result<std::vector<int>> ThreadAffinity();

// Runs the low-load test with the calling thread pinned to `cpu` and puts the
// thread's affinity back; the median of its timings. Fails (reason
// "pin_failed") when the CPU cannot be pinned to, "stopped" when cut short.
Result<double> MeasurePinnedLowLoad(int cpu, const ThrottleOptions& options, const RunContext& ctx);

// One core's standing in the rotation.
struct CoreStat {
  int cpu = 0;
  std::size_t samples = 0;
  std::optional<double> median_seconds;  // with at least min_samples samples
  // median / median of the other cores' medians; with at least two cores with a median.
  std::optional<double> ratio;
  bool outlier = false;  // ratio above the outlier ratio
};

// The last `window` pinned medians of each core, and where the rotation
// stands. Not thread-safe: the probe runs one measurement at a time.
class CoreWindows {
 public:
  // The first CPU of `cpus` after the one measured last (wrapping); nullopt
  // when `cpus` is empty.
  std::optional<int> Next(const std::vector<int>& cpus) const;
  // Records one measurement of `cpu`, keeping the last `window` of them.
  void Add(int cpu, double seconds, std::size_t window);
  // Moves the rotation past `cpu` without a measurement (it could not be pinned to).
  void Skip(int cpu) { last_ = cpu; }
  // Forgets the CPUs no longer in `cpus` (hot-unplugged, out of the affinity mask).
  void Retain(const std::vector<int>& cpus);
  // Every core with at least one sample, ascending by CPU.
  std::vector<CoreStat> Stats(std::size_t min_samples, double outlier_ratio) const;

 private:
  std::map<int, std::deque<double>> samples_;
  std::optional<int> last_;
};

}  // namespace hostperf::probes::cpu
