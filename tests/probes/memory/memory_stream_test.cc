#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "hostperf/probes/memory/stream.h"

namespace hostperf::probes::memory {
namespace {

// Owns three small arrays for kernel tests.
struct Arrays {
  explicit Arrays(std::size_t n) : a(n), b(n), c(n) {}
  StreamArrays view() { return {a.data(), b.data(), c.data(), a.size()}; }
  std::vector<double> a, b, c;
};

TEST(StreamKernelsTest, StreamByteCounting) {
  // 2, 2, 3, 3 arrays of 8-byte elements.
  EXPECT_EQ(KernelBytes(Kernel::kCopy, 1000), 16000u);
  EXPECT_EQ(KernelBytes(Kernel::kScale, 1000), 16000u);
  EXPECT_EQ(KernelBytes(Kernel::kAdd, 1000), 24000u);
  EXPECT_EQ(KernelBytes(Kernel::kTriad, 1000), 24000u);
  EXPECT_EQ(KernelBytes(Kernel::kTriad, 10'000'000), 240'000'000u);
}

TEST(StreamKernelsTest, EachKernelComputesItsFormula) {
  constexpr std::size_t kN = 1003;  // odd: exercises the vector loop's tail
  Arrays arrays(kN);
  for (std::size_t j = 0; j < kN; ++j) {
    arrays.a[j] = static_cast<double>(j);
    arrays.b[j] = 2.0 * static_cast<double>(j);
    arrays.c[j] = -1.0;
  }
  RunKernel(Kernel::kCopy, arrays.view());
  for (std::size_t j = 0; j < kN; ++j) ASSERT_EQ(arrays.c[j], static_cast<double>(j)) << j;
  RunKernel(Kernel::kScale, arrays.view());
  for (std::size_t j = 0; j < kN; ++j) ASSERT_EQ(arrays.b[j], kScalar * static_cast<double>(j)) << j;
  RunKernel(Kernel::kAdd, arrays.view());
  for (std::size_t j = 0; j < kN; ++j) ASSERT_EQ(arrays.c[j], static_cast<double>(j) * (1 + kScalar)) << j;
  RunKernel(Kernel::kTriad, arrays.view());
  for (std::size_t j = 0; j < kN; ++j) {
    ASSERT_EQ(arrays.a[j], kScalar * static_cast<double>(j) + kScalar * (1 + kScalar) * static_cast<double>(j)) << j;
  }
}

TEST(StreamKernelsTest, KernelNames) {
  EXPECT_EQ(KernelName(Kernel::kCopy), "copy");
  EXPECT_EQ(KernelName(Kernel::kScale), "scale");
  EXPECT_EQ(KernelName(Kernel::kAdd), "add");
  EXPECT_EQ(KernelName(Kernel::kTriad), "triad");
}

TEST(StreamValidationTest, ExpectedValuesFollowTheKernels) {
  const ExpectedValues zero = ExpectedAfter(0);
  EXPECT_EQ(zero.a, kInitialA);
  EXPECT_EQ(zero.b, kInitialB);
  EXPECT_EQ(zero.c, kInitialC);
  // One iteration from a=2: c=2, b=6, c=8, a=6+24=30.
  const ExpectedValues one = ExpectedAfter(1);
  EXPECT_EQ(one.a, 30.0);
  EXPECT_EQ(one.b, 6.0);
  EXPECT_EQ(one.c, 8.0);
}

TEST(StreamValidationTest, ArraysAfterIterationsValidate) {
  Arrays arrays(257);
  InitializeArrays(arrays.view());
  for (int i = 0; i < 3; ++i) {
    for (const Kernel kernel : kKernels) RunKernel(kernel, arrays.view());
  }
  const Validation v = ValidateArrays(arrays.view(), 3);
  EXPECT_TRUE(v.ok) << v.message;
  EXPECT_EQ(v.a_error, 0);
  EXPECT_NE(v.message.find("Solution Validates"), std::string::npos);
  // The wrong iteration count does not validate.
  EXPECT_FALSE(ValidateArrays(arrays.view(), 2).ok);
}

TEST(StreamValidationTest, OneCorruptElementFailsAndNamesTheArray) {
  for (const char target : {'a', 'b', 'c'}) {
    Arrays arrays(100);
    InitializeArrays(arrays.view());
    for (const Kernel kernel : kKernels) RunKernel(kernel, arrays.view());
    std::vector<double>& corrupt = target == 'a' ? arrays.a : target == 'b' ? arrays.b : arrays.c;
    corrupt[42] = std::nextafter(corrupt[42], 1e300) * 1.0000001;
    const Validation v = ValidateArrays(arrays.view(), 1);
    EXPECT_FALSE(v.ok) << target;
    EXPECT_NE(v.message.find(std::string("array ") + target), std::string::npos) << v.message;
  }
}

TEST(StreamValidationTest, NanFails) {
  Arrays arrays(10);
  InitializeArrays(arrays.view());
  arrays.b[3] = std::nan("");
  EXPECT_FALSE(ValidateArrays(arrays.view(), 0).ok);
}

TEST(SummarizeKernelTest, FirstIterationIsTheWarmUp) {
  const std::vector<double> seconds = {9.0, 0.5, 0.25, 1.0};
  const KernelStats stats = SummarizeKernel(Kernel::kTriad, 1000, seconds);
  EXPECT_EQ(stats.bytes, 24000u);
  EXPECT_DOUBLE_EQ(stats.min_seconds, 0.25);
  EXPECT_DOUBLE_EQ(stats.max_seconds, 1.0);
  EXPECT_DOUBLE_EQ(stats.avg_seconds, 1.75 / 3);
  EXPECT_DOUBLE_EQ(stats.BestBytesPerSecond(), 24000 / 0.25);
}

TEST(SizingTest, CacheResidentFlagAgainstFourTimesTheLlc) {
  // 32 MiB LLC: 4x is 128 MiB of arrays (3 x 8 bytes per element).
  const std::uint64_t llc = 32ULL << 20;
  const std::size_t at_4x = static_cast<std::size_t>(4 * llc / 24);
  EXPECT_TRUE(IsCacheResident(at_4x - 1, llc));
  EXPECT_FALSE(IsCacheResident(at_4x + 1, llc));
}

TEST(SizingTest, ScheduledJustPastFourTimesTheLlcWithinBudget) {
  SizingInput input;
  input.llc_bytes = 8ULL << 20;
  input.packages = 1;
  input.memory_budget = 256ULL << 20;
  Sizing s = ScheduledSizing(input);
  EXPECT_EQ(s.elements, (40ULL << 20) / 24);  // 5x the LLC
  EXPECT_TRUE(s.llc_known);
  EXPECT_FALSE(s.cache_resident);

  // Two packages: their LLCs add up; the budget caps the arrays below 4x.
  input.llc_bytes = 32ULL << 20;
  input.packages = 2;
  input.memory_budget = 128ULL << 20;
  s = ScheduledSizing(input);
  EXPECT_EQ(s.llc_total, 64ULL << 20);
  EXPECT_EQ(s.elements, (128ULL << 20) / 24);
  EXPECT_TRUE(s.cache_resident);
}

TEST(SizingTest, UnknownLlcIsNeverProvenMemoryResident) {
  SizingInput input;
  input.llc_bytes = 0;
  input.memory_budget = 256ULL << 20;
  const Sizing scheduled = ScheduledSizing(input);
  EXPECT_FALSE(scheduled.llc_known);
  EXPECT_EQ(scheduled.llc_total, kUnknownLlcBytes);
  EXPECT_EQ(scheduled.elements, (256ULL << 20) / 24);
  EXPECT_TRUE(scheduled.cache_resident);
  // Even arrays far past the assumed size stay "not proven".
  EXPECT_TRUE(SizingFor(1ULL << 30, input).cache_resident);
}

TEST(SizingTest, FullAtLeastFourTimesTheLlcPerArrayWithinHalfTheMemory) {
  SizingInput input;
  input.llc_bytes = 32ULL << 20;
  input.packages = 1;
  Sizing s = FullSizing(input);
  EXPECT_EQ(s.elements, 4 * (32ULL << 20) / 8);  // each array 4x the LLC
  EXPECT_FALSE(s.cache_resident);
  // Small LLC: never under STREAM's 10M elements.
  input.llc_bytes = 1ULL << 20;
  EXPECT_EQ(FullSizing(input).elements, 10'000'000u);
  // Little memory: half of what is available, flagged when that is too small.
  input.llc_bytes = 32ULL << 20;
  input.memory_available = 96ULL << 20;
  s = FullSizing(input);
  EXPECT_EQ(s.elements, (48ULL << 20) / 24);
  EXPECT_TRUE(s.cache_resident);
  // Never below the minimum.
  input.memory_available = 1000;
  EXPECT_EQ(FullSizing(input).elements, kMinElements);
}

TEST(RunStreamTest, SmallRunOnTwoThreadsValidates) {
  StreamOptions options;
  options.elements = 100'003;
  options.iterations = 3;
  options.threads = 2;
  const RunContext context;
  const StreamRun run = RunStream(options, context);
  ASSERT_TRUE(run.complete) << run.error;
  ASSERT_EQ(run.kernels.size(), 4u);
  for (const KernelStats& stats : run.kernels) {
    EXPECT_GT(stats.min_seconds, 0);
    EXPECT_LE(stats.min_seconds, stats.avg_seconds);
    EXPECT_LE(stats.avg_seconds, stats.max_seconds);
    EXPECT_EQ(stats.bytes, KernelBytes(stats.kernel, options.elements));
  }
  ASSERT_TRUE(run.validation.has_value());
  EXPECT_TRUE(run.validation->ok) << run.validation->message;
}

TEST(RunStreamTest, PinsToTheGivenCpus) {
  StreamOptions options;
  options.elements = 10'000;
  options.iterations = 2;
  options.threads = 1;
  options.cpus = {0};
  const StreamRun run = RunStream(options, RunContext{});
  ASSERT_TRUE(run.complete);
  EXPECT_EQ(run.pinned_threads, 1);
}

TEST(RunStreamTest, CorruptionBeforeValidationFails) {
  StreamOptions options;
  options.elements = 10'000;
  options.iterations = 2;
  options.before_validation = [](const StreamArrays& arrays) { arrays.c[arrays.elements - 1] += 1.0; };
  const StreamRun run = RunStream(options, RunContext{});
  ASSERT_TRUE(run.complete);
  ASSERT_TRUE(run.validation.has_value());
  EXPECT_FALSE(run.validation->ok);
}

TEST(RunStreamTest, CancelledRunStopsBetweenKernels) {
  std::atomic<bool> cancel{true};
  RunContext context;
  context.cancel = &cancel;
  StreamOptions options;
  options.elements = 10'000;
  options.iterations = 1000;
  options.threads = 2;
  const StreamRun run = RunStream(options, context);
  EXPECT_FALSE(run.complete);
  EXPECT_TRUE(run.error_reason.empty());
  EXPECT_FALSE(run.validation.has_value());
}

TEST(RunStreamTest, InvalidOptionsAndHugeArrays) {
  StreamOptions options;
  options.elements = 10;
  options.iterations = 1;  // needs a warm-up and one timed iteration
  EXPECT_EQ(RunStream(options, RunContext{}).error_reason, "invalid_options");
  options.iterations = 2;
  options.threads = 2;
  options.cpus = {0};  // one CPU for two threads
  EXPECT_EQ(RunStream(options, RunContext{}).error_reason, "invalid_options");
  options.cpus.clear();
  options.elements = std::size_t{1} << 60;  // cannot be mapped
  EXPECT_EQ(RunStream(options, RunContext{}).error_reason, "out_of_memory");
}

}  // namespace
}  // namespace hostperf::probes::memory
