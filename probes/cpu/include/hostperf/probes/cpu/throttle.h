#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::cpu {

// vcpuperf's throttling check: the same short task timed right after the core
// was kept busy (high load) and after an idle gap that lets it drop into a
// low-power state (low load). Low-load times much above the high-load ones
// mean power-saving throttling.
struct ThrottleOptions {
  std::uint32_t samples_per_load = 25;
  std::chrono::nanoseconds high_load_spin{std::chrono::milliseconds(2)};
  std::chrono::nanoseconds low_load_gap{std::chrono::milliseconds(10)};
  // Threads kept spinning for the whole high-load phase (full mode: one per
  // other online CPU, so the package runs at its all-core frequency).
  int spinner_threads = 0;
  // The timed task; empty means one workload chunk. Seam for tests.
  std::function<void(std::uint32_t sample)> task;
};

struct ThrottleResult {
  std::vector<double> high_seconds;  // one per sample, in order
  std::vector<double> low_seconds;
  double high_median_seconds = 0;
  double low_median_seconds = 0;
  double ratio = 0;  // low median / high median; 0 while high median is 0
  // False when ShouldStop() cut the test short (samples are partial).
  bool complete = false;
};

// High-load phase first, then low-load; polls ctx.ShouldStop() per sample
// and while sleeping.
ThrottleResult RunThrottleTest(const ThrottleOptions& options, const RunContext& ctx);

// The low-load phase alone (high-load fields stay empty and 0): the per-core
// rotation's one pinned measurement per run.
ThrottleResult RunLowLoadTest(const ThrottleOptions& options, const RunContext& ctx);

}  // namespace hostperf::probes::cpu
