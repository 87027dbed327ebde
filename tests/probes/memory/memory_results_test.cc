#include <gtest/gtest.h>

#include "hostperf/probes/memory/results.h"

namespace hostperf::probes::memory {
namespace {

using nlohmann::json;

TEST(MemoryResultsTest, BestRatePerKernel) {
  const json result = {{"kernels",
                        {{{"kernel", "copy"}, {"best_bytes_per_second", 5e9}},
                         {{"kernel", "scale"}},
                         {{"kernel", "triad"}, {"best_bytes_per_second", 6e9}}}}};
  const auto rates = ReadBestKernelRates(result);
  ASSERT_EQ(rates.size(), 2u);  // scale has no rate
  EXPECT_EQ(rates[0].kernel, "copy");
  EXPECT_EQ(rates[0].best_bytes_per_second, 5e9);
  EXPECT_EQ(rates[1].kernel, "triad");
  EXPECT_EQ(ReadBestKernelRate(result, "triad"), 6e9);
  EXPECT_FALSE(ReadBestKernelRate(result, "scale").has_value());
  EXPECT_FALSE(ReadBestKernelRate(json::object(), "copy").has_value());
  EXPECT_TRUE(ReadBestKernelRates(json("x")).empty());
}

}  // namespace
}  // namespace hostperf::probes::memory
