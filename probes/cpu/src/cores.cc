#include "hostperf/probes/cpu/cores.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>

#include "hostperf/base/files.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/stats.h"

namespace hostperf::probes::cpu {

namespace {

// The kernel's NR_CPUS tops out at 8192; a mask this wide never gets EINVAL.
constexpr int kMaskCpus = 8192;

struct CpuSetDeleter {
  void operator()(cpu_set_t* set) const { CPU_FREE(set); }
};
using CpuSet = std::unique_ptr<cpu_set_t, CpuSetDeleter>;

CpuSet AllocCpuSet() {
  CpuSet set(CPU_ALLOC(kMaskCpus));
  if (set) CPU_ZERO_S(CPU_ALLOC_SIZE(kMaskCpus), set.get());
  return set;
}

// Puts the thread's affinity back however the measurement ends.
class AffinityRestorer {
 public:
  explicit AffinityRestorer(CpuSet saved) : saved_(std::move(saved)) {}
  ~AffinityRestorer() { sched_setaffinity(0, CPU_ALLOC_SIZE(kMaskCpus), saved_.get()); }
  AffinityRestorer(const AffinityRestorer&) = delete;
  AffinityRestorer& operator=(const AffinityRestorer&) = delete;

 private:
  CpuSet saved_;
};

}  // namespace

RotationSet ChooseRotationCpus(const std::vector<int>& online, const std::vector<int>& affinity,
                               std::uint32_t max_cores) {
  RotationSet set;
  std::vector<int> usable;
  for (const int cpu : online) {
    if (affinity.empty() || std::binary_search(affinity.begin(), affinity.end(), cpu)) {
      usable.push_back(cpu);
    } else {
      ++set.outside_affinity;
    }
  }
  std::sort(usable.begin(), usable.end());
  if (usable.size() <= max_cores) {
    set.cpus = std::move(usable);
    return set;
  }
  // Evenly spread rather than the first max_cores, so that every package and
  // NUMA node keeps some cores in the rotation.
  set.over_max_cores = usable.size() - max_cores;
  for (std::size_t i = 0; i < max_cores; ++i) set.cpus.push_back(usable[i * usable.size() / max_cores]);
  return set;
}

std::vector<int> ReadOnlineCpus(const SystemRoots& roots) {
  const auto text = ReadFile(roots.sys / "devices/system/cpu/online");
  if (!text) return {};
  auto cpus = ParseCpuList(*text);
  if (!cpus) return {};
  std::vector<int> sorted = std::move(cpus).value();
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

Result<std::vector<int>> ThreadAffinity() {
  CpuSet set = AllocCpuSet();
  if (!set) return Result<std::vector<int>>::Error("affinity_failed", "out of memory for a CPU mask");
  if (sched_getaffinity(0, CPU_ALLOC_SIZE(kMaskCpus), set.get()) != 0) {
    return Result<std::vector<int>>::Error("affinity_failed",
                                           std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < kMaskCpus; ++cpu) {
    if (CPU_ISSET_S(cpu, CPU_ALLOC_SIZE(kMaskCpus), set.get())) cpus.push_back(cpu);
  }
  return cpus;
}

Result<double> MeasurePinnedLowLoad(int cpu, const ThrottleOptions& options, const RunContext& ctx) {
  if (cpu < 0 || cpu >= kMaskCpus) return Result<double>::Error("pin_failed", "CPU number out of range");
  CpuSet saved = AllocCpuSet();
  CpuSet pinned = AllocCpuSet();
  if (!saved || !pinned) return Result<double>::Error("pin_failed", "out of memory for a CPU mask");
  if (sched_getaffinity(0, CPU_ALLOC_SIZE(kMaskCpus), saved.get()) != 0) {
    return Result<double>::Error("pin_failed", std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  CPU_SET_S(cpu, CPU_ALLOC_SIZE(kMaskCpus), pinned.get());
  if (sched_setaffinity(0, CPU_ALLOC_SIZE(kMaskCpus), pinned.get()) != 0) {
    return Result<double>::Error("pin_failed",
                                 "sched_setaffinity to CPU " + std::to_string(cpu) + ": " + std::strerror(errno));
  }
  const AffinityRestorer restore(std::move(saved));
  const ThrottleResult result = RunLowLoadTest(options, ctx);
  if (!result.complete) return Result<double>::Error("stopped", "pinned measurement cut short");
  return result.low_median_seconds;
}

std::optional<int> CoreWindows::Next(const std::vector<int>& cpus) const {
  if (cpus.empty()) return std::nullopt;
  if (!last_) return cpus.front();
  const auto after = std::upper_bound(cpus.begin(), cpus.end(), *last_);
  return after == cpus.end() ? cpus.front() : *after;
}

void CoreWindows::Add(int cpu, double seconds, std::size_t window) {
  last_ = cpu;
  auto& samples = samples_[cpu];
  samples.push_back(seconds);
  while (samples.size() > std::max<std::size_t>(window, 1)) samples.pop_front();
}

void CoreWindows::Retain(const std::vector<int>& cpus) {
  std::erase_if(samples_,
                [&](const auto& entry) { return !std::binary_search(cpus.begin(), cpus.end(), entry.first); });
}

std::vector<CoreStat> CoreWindows::Stats(std::size_t min_samples, double outlier_ratio) const {
  std::vector<CoreStat> stats;
  std::vector<double> medians;  // of the cores with enough samples, in CPU order
  for (const auto& [cpu, samples] : samples_) {
    CoreStat stat;
    stat.cpu = cpu;
    stat.samples = samples.size();
    if (samples.size() >= std::max<std::size_t>(min_samples, 1)) {
      const std::vector<double> values(samples.begin(), samples.end());
      stat.median_seconds = Median(values);
      medians.push_back(*stat.median_seconds);
    }
    stats.push_back(stat);
  }
  if (medians.size() < 2) return stats;
  for (CoreStat& stat : stats) {
    if (!stat.median_seconds) continue;
    // The siblings: every other core with a median (one copy of this core's
    // value removed, so equal medians elsewhere still count).
    std::vector<double> siblings = medians;
    siblings.erase(std::find(siblings.begin(), siblings.end(), *stat.median_seconds));
    const double reference = Median(siblings);
    if (reference <= 0) continue;
    stat.ratio = *stat.median_seconds / reference;
    stat.outlier = *stat.ratio > outlier_ratio;
  }
  return stats;
}

}  // namespace hostperf::probes::cpu
