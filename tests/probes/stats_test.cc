#include "hostperf/probes/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace hostperf::probes {
namespace {

TEST(MedianTest, OddEvenEmpty) {
  EXPECT_EQ(Median(std::vector<double>{3, 1, 2}), 2);
  EXPECT_EQ(Median(std::vector<double>{4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median(std::vector<double>{}), 0);
}

TEST(MedianTest, LeavesTheValuesUnsortedAndTakesASingleValue) {
  const std::vector<double> values = {5, 1, 4};
  EXPECT_EQ(Median(values), 4);
  EXPECT_EQ(values, (std::vector<double>{5, 1, 4}));
  EXPECT_EQ(Median(std::vector<double>{7}), 7);
}

}  // namespace
}  // namespace hostperf::probes
