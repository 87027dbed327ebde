// The SSH fan-out's child processes (remote_process.h): bounded like gpssh's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "remote_process.h"

namespace hostperf::probes::net::remote {
namespace {

TEST(RemoteRunAllTest, RunsAtMostTheParallelCountAtOnceAndReportsEachAsItEnds) {
  const std::string dir = ::testing::TempDir() + "/run-all-" + std::to_string(::getpid());
  std::vector<std::vector<std::string>> commands;
  // Each says how many were running when it started (its own marker counted).
  const std::string script = "mkdir -p '" + dir + "' && touch '" + dir + "'/$$ && ls '" + dir +
                             "' | wc -l && sleep 0.3 && rm '" + dir + "'/$$";
  for (int i = 0; i < 6; ++i) commands.push_back({"sh", "-c", script});
  commands.emplace_back();  // nothing to run on this host
  std::vector<std::size_t> ended;
  const auto outcomes = RunAll(
      commands, std::chrono::seconds(30), [] { return false; }, 2,
      [&](std::size_t i, const Outcome&) { ended.push_back(i); });
  ASSERT_EQ(outcomes.size(), 7u);
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(outcomes[i].status, 0) << outcomes[i].err;
    EXPECT_LE(std::stoi(outcomes[i].out), 2) << "command " << i << " started beside too many";
  }
  EXPECT_EQ(outcomes[6].status, 127);
  EXPECT_EQ(ended.size(), 7u);
}

TEST(RemoteRunAllTest, EachCommandHasTheTimeoutFromItsOwnStartAndCancellationStartsNoMore) {
  std::vector<std::vector<std::string>> commands(3, {"sleep", "5"});
  const auto start = std::chrono::steady_clock::now();
  const auto outcomes = RunAll(
      commands, std::chrono::milliseconds(300), [] { return false; }, 1);
  const auto took = std::chrono::steady_clock::now() - start;
  for (const Outcome& outcome : outcomes) EXPECT_NE(outcome.status, 0);
  // One after the other, each cut at its own 300 ms.
  EXPECT_GE(took, std::chrono::milliseconds(800));
  EXPECT_LT(took, std::chrono::seconds(4));

  int polls = 0;
  const auto cancelled = RunAll(
      commands, std::chrono::seconds(30), [&] { return ++polls > 5; }, 1);
  EXPECT_FALSE(cancelled[2].status.has_value());
  EXPECT_EQ(cancelled[2].err, "cancelled");
}

}  // namespace
}  // namespace hostperf::probes::net::remote
