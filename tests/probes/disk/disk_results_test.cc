#include <gtest/gtest.h>

#include "hostperf/probes/disk/results.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;

// The disk probe's vioperf result: per directory, one summary per test run
// (ReWrite and SkipRead are not throughput figures for check).
json VioperfResult() {
  const auto test = [](const char* name, double seconds, int written, int read) {
    return json{{"test", name}, {"seconds", seconds}, {"bytes_written", written}, {"bytes_read", read}};
  };
  json a = {
      {"directory", "/a"},
      {"tests",
       {test("Write", 2, 400, 0), test("ReWrite", 2, 999, 999), test("Read", 1, 0, 300), test("SkipRead", 1, 0, 999)}}};
  json b = {{"directory", "/b"}, {"tests", {test("Write", 3, 600, 0)}}};
  json c = {{"directory", "/c"}, {"error", "no space"}};
  return {{"directories", {a, b, c}}};
}

TEST(DiskResultsTest, PerDirectoryWriteAndRead) {
  const auto directories = ReadDirectoryThroughput(VioperfResult());
  ASSERT_EQ(directories.size(), 3u);
  EXPECT_EQ(directories[0].directory, "/a");
  ASSERT_TRUE(directories[0].write && directories[0].read);
  EXPECT_EQ(directories[0].write->bytes, 400);
  EXPECT_EQ(directories[0].write->seconds, 2.0);
  EXPECT_EQ(directories[0].read->bytes, 300);
  EXPECT_EQ(directories[1].write->bytes, 600);
  EXPECT_FALSE(directories[1].read.has_value());
  EXPECT_FALSE(directories[2].write || directories[2].read);
}

TEST(DiskResultsTest, SequentialSumsDirectoriesOrTakesTheSummary) {
  const auto summed = ReadSequentialThroughput(VioperfResult());
  ASSERT_TRUE(summed.write && summed.read);
  EXPECT_EQ(summed.write->bytes, 1000);
  EXPECT_EQ(summed.write->seconds, 5.0);
  EXPECT_EQ(summed.read->bytes, 300);
  EXPECT_EQ(summed.read->seconds, 1.0);

  const json sequential = {
      {"sequential", {{"write", {{"bytes", 1000}, {"seconds", 2.0}}}, {"read", {{"bytes", 10}, {"seconds", 0}}}}}};
  const auto summary = ReadSequentialThroughput(sequential);
  ASSERT_TRUE(summary.write);
  EXPECT_EQ(summary.write->bytes, 1000);
  EXPECT_FALSE(summary.read.has_value());  // no time: no figure
  EXPECT_FALSE(ReadSequentialThroughput(json::object()).write.has_value());
  EXPECT_TRUE(ReadDirectoryThroughput(json("x")).empty());
}

}  // namespace
}  // namespace hostperf::probes::disk
