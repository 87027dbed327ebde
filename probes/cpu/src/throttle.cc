#include "hostperf/probes/cpu/throttle.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "hostperf/probes/cpu/workload.h"
#include "hostperf/probes/probe_cpu.h"
#include "hostperf/probes/stats.h"

namespace hostperf::probes::cpu {

namespace {

using Clock = std::chrono::steady_clock;

// Longest single sleep, so that a long configured gap still notices ShouldStop().
constexpr auto kMaxSleepSlice = std::chrono::milliseconds(100);

void SpinFor(std::chrono::nanoseconds duration) {
  const auto until = Clock::now() + duration;
  while (Clock::now() < until) {
  }
}

// Returns false when stopped before the gap was over.
bool SleepFor(std::chrono::nanoseconds duration, const RunContext& ctx) {
  const auto until = Clock::now() + duration;
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    if (ctx.ShouldStop()) return false;
    std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(until - now, kMaxSleepSlice));
  }
  return true;
}

// Keeps other CPUs busy while alive (full-mode high load).
class Spinners {
 public:
  explicit Spinners(int count) {
    for (int i = 0; i < count; ++i) {
      try {
        threads_.emplace_back([this] {
          const ProbeCpuScope charged;  // probe work: charged to the CPU budget
          while (!stop_.load(std::memory_order_relaxed)) {
          }
        });
      } catch (const std::system_error& e) {
        // Fewer spinners only weakens the simulated load; the test still runs.
        spdlog::warn("cpu probe: started {} of {} load threads: {}", i, count, e.what());
        break;
      }
    }
  }
  ~Spinners() {
    stop_.store(true, std::memory_order_relaxed);
    for (auto& thread : threads_) thread.join();
  }
  Spinners(const Spinners&) = delete;
  Spinners& operator=(const Spinners&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Result of the default task goes here so the compiler keeps the work.
volatile std::uint64_t g_sink = 0;

void DefaultTask(std::uint32_t sample) { g_sink = RunChunk(sample, 0); }

// Times `samples` runs of the task, each preceded by `prepare`; false if stopped.
template <typename Prepare>
bool TimeSamples(const ThrottleOptions& options, const RunContext& ctx, Prepare prepare, std::vector<double>& out) {
  const auto& task = options.task ? options.task : std::function<void(std::uint32_t)>(DefaultTask);
  out.reserve(options.samples_per_load);
  for (std::uint32_t sample = 0; sample < options.samples_per_load; ++sample) {
    if (ctx.ShouldStop() || !prepare()) return false;
    const auto start = Clock::now();
    task(sample);
    out.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return true;
}

}  // namespace

ThrottleResult RunThrottleTest(const ThrottleOptions& options, const RunContext& ctx) {
  ThrottleResult result;
  bool complete;
  {
    Spinners spinners(options.spinner_threads);
    complete = TimeSamples(
        options, ctx,
        [&] {
          SpinFor(options.high_load_spin);
          return true;
        },
        result.high_seconds);
  }
  complete = complete && TimeSamples(
                             options, ctx, [&] { return SleepFor(options.low_load_gap, ctx); }, result.low_seconds);

  result.complete = complete;
  result.high_median_seconds = Median(result.high_seconds);
  result.low_median_seconds = Median(result.low_seconds);
  result.ratio = result.high_median_seconds > 0 ? result.low_median_seconds / result.high_median_seconds : 0;
  return result;
}

ThrottleResult RunLowLoadTest(const ThrottleOptions& options, const RunContext& ctx) {
  ThrottleResult result;
  result.complete = TimeSamples(
      options, ctx, [&] { return SleepFor(options.low_load_gap, ctx); }, result.low_seconds);
  result.low_median_seconds = Median(result.low_seconds);
  return result;
}

}  // namespace hostperf::probes::cpu
