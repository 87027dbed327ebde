#include <gtest/gtest.h>
#include <stdlib.h>
#include <time.h>

#include <chrono>
#include <optional>
#include <string>

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

// Local time: the test sets TZ for itself and puts the caller's back.
class ScopedTimeZone {
 public:
  explicit ScopedTimeZone(const char* zone) {
    if (const char* old = ::getenv("TZ")) old_ = old;
    ::setenv("TZ", zone, 1);
    ::tzset();
  }
  ~ScopedTimeZone() {
    if (old_) {
      ::setenv("TZ", old_->c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
  }

 private:
  std::optional<std::string> old_;
};

TEST(VnetperfTimestampTest, LocalTimeToTheMillisecond) {
  using std::chrono::milliseconds;
  // 2022-03-29 10:23:55.739 UTC
  const std::chrono::system_clock::time_point when{milliseconds(1648549435739)};
  {
    ScopedTimeZone utc("UTC0");
    EXPECT_EQ(VnetperfTimestamp(when), "2022-03-29_10:23:55,739");
    EXPECT_EQ(VnetperfTimestamp(when - milliseconds(739)), "2022-03-29_10:23:55,000");
  }
  ScopedTimeZone two_hours_east("XYZ-2");
  EXPECT_EQ(VnetperfTimestamp(when + milliseconds(5)), "2022-03-29_12:23:55,744");
}

}  // namespace
}  // namespace hostperf::probes::net
