#include "hostperf/probes/cpu/workload.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

namespace hostperf::probes::cpu {
namespace {

TEST(WorkloadTest, ScheduledRunMatchesKnownAnswer) {
  const WorkloadResult result = RunWorkload(kScheduledChunks, RunContext{});
  ASSERT_TRUE(ExpectedChecksum(kScheduledChunks).has_value());
  EXPECT_EQ(result.checksum, *ExpectedChecksum(kScheduledChunks));
  EXPECT_EQ(result.checksum, 0x1a0c3b101c828ccaULL);
  EXPECT_TRUE(result.complete);
  EXPECT_TRUE(result.valid);
  EXPECT_EQ(result.chunks_done, kScheduledChunks);
  EXPECT_GT(result.cpu_time.count(), 0);
  EXPECT_GT(result.real_time.count(), 0);
}

TEST(WorkloadTest, SmallCountsMatchKnownAnswers) {
  EXPECT_EQ(RunWorkload(1, RunContext{}).checksum, 0x5cd4d966db7d467eULL);
  const WorkloadResult result = RunWorkload(64, RunContext{});
  EXPECT_EQ(result.checksum, 0x545257bbd8df42adULL);
  EXPECT_TRUE(result.valid);
}

TEST(WorkloadTest, FullCountHasAPinnedAnswer) {
  // Not run here (seconds of CPU): the known answer must exist for full runs.
  EXPECT_TRUE(ExpectedChecksum(kFullChunks).has_value());
  EXPECT_GT(kFullChunks, kScheduledChunks);
}

TEST(WorkloadTest, Deterministic) {
  EXPECT_EQ(RunWorkload(100, RunContext{}).checksum, RunWorkload(100, RunContext{}).checksum);
  EXPECT_EQ(RunChunk(7, 42), RunChunk(7, 42));
}

TEST(WorkloadTest, EveryChunkAndChainValueCounts) {
  EXPECT_NE(RunWorkload(63, RunContext{}).checksum, RunWorkload(64, RunContext{}).checksum);
  EXPECT_NE(RunChunk(7, 42), RunChunk(8, 42));
  EXPECT_NE(RunChunk(7, 42), RunChunk(7, 43));
}

TEST(WorkloadTest, CountWithoutKnownAnswerIsNotValid) {
  const WorkloadResult result = RunWorkload(3, RunContext{});
  EXPECT_TRUE(result.complete);
  EXPECT_FALSE(ExpectedChecksum(3).has_value());
  EXPECT_FALSE(result.valid);
}

TEST(WorkloadTest, StopsEarlyWhenCancelled) {
  std::atomic<bool> cancel{true};
  RunContext ctx;
  ctx.cancel = &cancel;
  const WorkloadResult result = RunWorkload(kFullChunks, ctx);
  EXPECT_FALSE(result.complete);
  EXPECT_FALSE(result.valid);
  EXPECT_LT(result.chunks_done, kFullChunks);
}

TEST(WorkloadTest, StopsAtTheDeadline) {
  RunContext ctx;
  // Long enough that a preempted start still does some chunks.
  ctx.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  const WorkloadResult result = RunWorkload(kFullChunks, ctx);
  EXPECT_FALSE(result.complete);
  EXPECT_GT(result.chunks_done, 0u);
  // Generous: the poll interval is ~1 ms, the full run would take seconds.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace hostperf::probes::cpu
