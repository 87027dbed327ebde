#include <gtest/gtest.h>

#include "hostperf/probes/net/results.h"

namespace hostperf::probes::net {
namespace {

using nlohmann::json;

TEST(NetResultsTest, ReadsTcpThroughputRows) {
  const json result = {{"tests",
                        {{"tcp-throughput",
                          {{{"node", "b:14159"},
                            {"outcome", "ok"},
                            {"bytes_received", 4e9},
                            {"duration_seconds", 4.0},
                            {"mb_per_second_received", 953.7}},
                           {{"node", "c"}, {"outcome", "busy"}, {"error", "in use"}},
                           {{"node", "average"}, {"bytes_received", "x"}}}}}}};
  const auto rows = ReadTcpThroughputRows(result);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].node, "b:14159");
  EXPECT_EQ(rows[0].outcome, "ok");
  EXPECT_EQ(rows[0].bytes_received, 4e9);
  EXPECT_EQ(rows[0].duration_seconds, 4.0);
  EXPECT_EQ(rows[0].mb_per_second_received, 953.7);
  EXPECT_EQ(rows[1].error, "in use");
  EXPECT_FALSE(rows[1].bytes_received.has_value());
  EXPECT_FALSE(rows[2].bytes_received.has_value());  // mistyped reads as absent
  EXPECT_EQ(rows[2].outcome, "");
}

TEST(NetResultsTest, NoRowsInOtherShapes) {
  EXPECT_TRUE(ReadTcpThroughputRows(json::object()).empty());
  EXPECT_TRUE(ReadTcpThroughputRows(json::array()).empty());
  EXPECT_TRUE(ReadTcpThroughputRows({{"tests", {{"latency", json::array()}}}}).empty());
  EXPECT_TRUE(ReadTcpThroughputRows({{"tests", "x"}}).empty());
}

}  // namespace
}  // namespace hostperf::probes::net
