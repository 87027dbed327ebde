#include "hostperf/probes/cpu/throttle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "hostperf/probes/stats.h"

namespace hostperf::probes::cpu {
namespace {

using std::chrono::microseconds;

ThrottleOptions FastOptions(std::uint32_t samples) {
  ThrottleOptions options;
  options.samples_per_load = samples;
  options.high_load_spin = microseconds(50);
  options.low_load_gap = microseconds(100);
  return options;
}

TEST(ThrottleTest, MediansAndRatioFollowTheSamples) {
  const ThrottleResult result = RunThrottleTest(FastOptions(9), RunContext{});
  ASSERT_TRUE(result.complete);
  ASSERT_EQ(result.high_seconds.size(), 9u);
  ASSERT_EQ(result.low_seconds.size(), 9u);
  EXPECT_EQ(result.high_median_seconds, Median(result.high_seconds));
  EXPECT_EQ(result.low_median_seconds, Median(result.low_seconds));
  ASSERT_GT(result.high_median_seconds, 0);
  EXPECT_DOUBLE_EQ(result.ratio, result.low_median_seconds / result.high_median_seconds);
  for (const double seconds : result.high_seconds) {
    EXPECT_GT(seconds, 0);
    EXPECT_LT(seconds, 1.0);  // one ~70 us chunk; generous for a loaded CI box
  }
}

TEST(ThrottleTest, InjectedTaskIsTimedOncePerSample) {
  ThrottleOptions options = FastOptions(5);
  std::vector<std::uint32_t> calls;
  options.task = [&](std::uint32_t sample) {
    calls.push_back(sample);
    std::this_thread::sleep_for(microseconds(200));
  };
  const ThrottleResult result = RunThrottleTest(options, RunContext{});
  ASSERT_TRUE(result.complete);
  EXPECT_EQ(calls, (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4}));
  EXPECT_GE(*std::min_element(result.low_seconds.begin(), result.low_seconds.end()), 200e-6);
  EXPECT_GE(result.high_median_seconds, 200e-6);
}

TEST(ThrottleTest, SpinnerThreadsDoNotChangeTheShape) {
  ThrottleOptions options = FastOptions(3);
  options.spinner_threads = 2;
  const ThrottleResult result = RunThrottleTest(options, RunContext{});
  EXPECT_TRUE(result.complete);
  EXPECT_EQ(result.high_seconds.size(), 3u);
  EXPECT_EQ(result.low_seconds.size(), 3u);
}

TEST(ThrottleTest, CancelledBeforeStartTakesNoSamples) {
  std::atomic<bool> cancel{true};
  RunContext ctx;
  ctx.cancel = &cancel;
  const ThrottleResult result = RunThrottleTest(FastOptions(10), ctx);
  EXPECT_FALSE(result.complete);
  EXPECT_TRUE(result.high_seconds.empty());
  EXPECT_TRUE(result.low_seconds.empty());
}

TEST(ThrottleTest, DeadlineInterruptsALongGap) {
  ThrottleOptions options = FastOptions(3);
  options.low_load_gap = std::chrono::seconds(30);
  RunContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  const auto start = std::chrono::steady_clock::now();
  const ThrottleResult result = RunThrottleTest(options, ctx);
  EXPECT_FALSE(result.complete);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace hostperf::probes::cpu
