#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/disk/workload.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::disk {

// A test's counters at one moment.
struct CounterSnapshot {
  std::chrono::steady_clock::time_point at;
  std::uint64_t bytes_read = 0;
  std::uint64_t bytes_written = 0;
  std::uint64_t ops = 0;
};

// The figures of one test between two snapshots: MB/s (Write, Read),
// read+write MB/s (ReWrite) or seeks/s (SkipRead); vioperf's MB is 2^20.
std::vector<double> Rates(DiskTest test, const CounterSnapshot& from, const CounterSnapshot& to);
// The unit of Rates: "MB/s", "(MB-read+MB-write)/s" or "seeks/s".
std::string_view CounterName(DiskTest test);

// Builds vioperf's table rows for one test while it runs.
class RowSampler {
 public:
  RowSampler(DiskTest test, std::string directory, std::size_t threads, int cores, const SystemRoots& roots,
             const TestCounters& counters, std::chrono::steady_clock::time_point slice_end);

  // Called every ~100 ms; records a snapshot for the instant rate.
  void Sample();
  // A row since the last one: the rate over about the last second, the
  // average, CPU and iowait.
  nlohmann::json Row();
  std::chrono::steady_clock::duration SinceLastRow() const;
  // Totals of the whole test (for the summary and the metrics).
  nlohmann::json Summary() const;

 private:
  DiskTest test_;
  std::string directory_;
  std::size_t threads_;
  int cores_;
  const SystemRoots& roots_;
  const TestCounters& counters_;
  std::chrono::steady_clock::time_point slice_end_;
  CounterSnapshot start_;
  CounterSnapshot last_row_;
  Result<CpuTimes> last_cpu_;
  std::deque<CounterSnapshot> recent_;
};

}  // namespace hostperf::probes::disk
