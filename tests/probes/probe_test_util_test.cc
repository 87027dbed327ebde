#include "probe_test_util.h"

#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace hostperf::probes::test_support {
namespace {

TEST(FindSeriesTest, FindsTheSeriesWithExactlyTheseLabels) {
  prometheus::Registry registry;
  auto& gauges = prometheus::BuildGauge().Name("g").Help("g").Register(registry);
  gauges.Add({{"peer", "a"}}).Set(1);
  gauges.Add({{"peer", "b"}, {"port", "1"}}).Set(2);
  prometheus::BuildCounter().Name("c").Help("c").Register(registry).Add({}).Increment(3);
  const auto families = registry.Collect();

  ASSERT_TRUE(FindSeries(families, "g", {{"peer", "a"}}));
  EXPECT_EQ(FindSeries(families, "g", {{"peer", "a"}})->gauge.value, 1);
  EXPECT_EQ(FindSeries(families, "g", {{"peer", "b"}, {"port", "1"}})->gauge.value, 2);
  EXPECT_EQ(FindSeries(families, "c")->counter.value, 3);
  // A subset of the labels, another family's name or no family: absent.
  EXPECT_FALSE(FindSeries(families, "g", {{"peer", "b"}}));
  EXPECT_FALSE(FindSeries(families, "g"));
  EXPECT_FALSE(FindSeries(families, "missing"));
  EXPECT_FALSE(FindSeries({}, "g", {{"peer", "a"}}));
}

}  // namespace
}  // namespace hostperf::probes::test_support
