#include "hostperf/probes/memory/stream.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/fmt/fmt.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <system_error>
#include <thread>

#include "hostperf/probes/probe_cpu.h"

namespace hostperf::probes::memory {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kStreamDefaultElements = 10'000'000;
// STREAM's arrays are static and back to back (a, b, c of N doubles each);
// ours sit back to back the same way, each start rounded to a cache line.
// Neither is aligned to a page or a huge page: 2 MiB-aligned arrays with
// MADV_HUGEPAGE read 11-18 % above STREAM on a host whose THP policy is
// "madvise", and put a, b and c at the same offset modulo 4 KiB,
// which STREAM's layout does not. Page size follows the host's THP policy,
// as it does for STREAM.
constexpr std::size_t kAlignment = 64;

std::size_t AlignUp(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// The three arrays in one anonymous mapping, unmapped on destruction. Pages
// are not touched here: each worker first-touches its own slice (NUMA-local).
class ArrayMapping {
 public:
  static std::unique_ptr<ArrayMapping> Create(std::size_t elements) {
    if (elements > std::numeric_limits<std::size_t>::max() / sizeof(double) / 4) return nullptr;
    const std::size_t stride = AlignUp(elements * sizeof(double), kAlignment);
    const std::size_t length = 3 * stride;
    void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) return nullptr;
    return std::unique_ptr<ArrayMapping>(new ArrayMapping(base, length, stride, elements));
  }
  ~ArrayMapping() { ::munmap(base_, length_); }
  ArrayMapping(const ArrayMapping&) = delete;
  ArrayMapping& operator=(const ArrayMapping&) = delete;

  StreamArrays arrays() const {
    auto* bytes = static_cast<char*>(base_);
    return {reinterpret_cast<double*>(bytes), reinterpret_cast<double*>(bytes + stride_),
            reinterpret_cast<double*>(bytes + 2 * stride_), elements_};
  }

 private:
  ArrayMapping(void* base, std::size_t length, std::size_t stride, std::size_t elements)
      : base_(base), length_(length), stride_(stride), elements_(elements) {}

  void* base_;
  std::size_t length_;
  std::size_t stride_;
  std::size_t elements_;
};

bool PinSelf(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set) == 0;
}

// Runs the iterations: every worker does its slice of a step, and the
// barrier's completion (run once all have arrived) stamps the step's end,
// like the implicit barrier that ends STREAM's parallel loops.
class StreamRunner {
 public:
  StreamRunner(const StreamOptions& options, const RunContext& context, const StreamArrays& arrays)
      : options_(options),
        context_(context),
        arrays_(arrays),
        steps_(static_cast<std::size_t>(options.iterations) * kKernels.size()),
        seconds_(steps_, 0.0),
        barrier_(options.threads, Completion{this}) {}

  // Returns whether every step ran.
  // Returns whether every step ran; "" or why threads could not start.
  bool Run(int* pinned, std::string* error) {
    std::atomic<int> pinned_count{0};
    {
      std::vector<std::jthread> workers;
      workers.reserve(static_cast<std::size_t>(options_.threads));
      for (int t = 0; t < options_.threads; ++t) {
        try {
          workers.emplace_back([this, t, &pinned_count] {
            const ProbeCpuScope charged;  // probe work: charged to the CPU budget
            if (!options_.cpus.empty() && PinSelf(options_.cpus[static_cast<std::size_t>(t)])) ++pinned_count;
            Work(SliceOf(t));
          });
        } catch (const std::system_error& e) {
          // The started workers wait at the barrier for the missing ones: stop
          // and let the missing ones leave the barrier so that all can finish.
          *error = fmt::format("cannot start stream thread {}: {}", t, e.what());
          stop_ = true;
          for (int missing = t; missing < options_.threads; ++missing) barrier_.arrive_and_drop();
          break;
        }
      }
    }
    *pinned = pinned_count.load();
    return error->empty() && steps_done_ == steps_;
  }

  // Step s's time in iteration order per kernel: seconds[k][i].
  std::vector<double> KernelSeconds(std::size_t kernel_index) const {
    std::vector<double> seconds;
    for (std::size_t s = kernel_index; s < steps_; s += kKernels.size()) seconds.push_back(seconds_[s]);
    return seconds;
  }

 private:
  struct Completion {
    StreamRunner* runner;
    void operator()() noexcept { runner->OnPhaseDone(); }
  };

  StreamArrays SliceOf(int t) const {
    const std::size_t threads = static_cast<std::size_t>(options_.threads);
    const std::size_t index = static_cast<std::size_t>(t);
    return arrays_.Slice(arrays_.elements * index / threads, arrays_.elements * (index + 1) / threads);
  }

  void Work(const StreamArrays& slice) {
    InitializeArrays(slice);
    barrier_.arrive_and_wait();  // phase 0: everyone initialised
    for (std::size_t s = 0; s < steps_; ++s) {
      if (stop_) break;  // written in the completion, which happens-before the barrier returns
      RunKernel(kKernels[s % kKernels.size()], slice);
      barrier_.arrive_and_wait();
    }
  }

  void OnPhaseDone() noexcept {
    const Clock::time_point now = Clock::now();
    if (phase_ > 0) {
      seconds_[phase_ - 1] = std::chrono::duration<double>(now - last_).count();
      steps_done_ = phase_;
    }
    last_ = now;
    ++phase_;
    if (context_.ShouldStop()) stop_ = true;
  }

  const StreamOptions& options_;
  const RunContext& context_;
  StreamArrays arrays_;
  std::size_t steps_;
  std::vector<double> seconds_;
  // Only touched in the barrier's completion step.
  std::size_t phase_ = 0;
  std::size_t steps_done_ = 0;
  Clock::time_point last_;
  bool stop_ = false;
  std::barrier<Completion> barrier_;
};

double RelativeError(double sum_abs_error, std::size_t elements, double expected) {
  if (elements == 0) return 0;
  const double average = sum_abs_error / static_cast<double>(elements);
  return expected != 0 ? std::fabs(average / expected) : average;
}

}  // namespace

std::string_view KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kCopy:
      return "copy";
    case Kernel::kScale:
      return "scale";
    case Kernel::kAdd:
      return "add";
    case Kernel::kTriad:
      return "triad";
  }
  return "unknown";
}

std::uint64_t KernelBytes(Kernel kernel, std::size_t elements) {
  const std::uint64_t arrays = (kernel == Kernel::kCopy || kernel == Kernel::kScale) ? 2 : 3;
  return arrays * sizeof(double) * static_cast<std::uint64_t>(elements);
}

void RunKernel(Kernel kernel, const StreamArrays& arrays) {
  switch (kernel) {
    case Kernel::kCopy:
      CopyKernel(arrays.c, arrays.a, arrays.elements);
      break;
    case Kernel::kScale:
      ScaleKernel(arrays.b, arrays.c, kScalar, arrays.elements);
      break;
    case Kernel::kAdd:
      AddKernel(arrays.c, arrays.a, arrays.b, arrays.elements);
      break;
    case Kernel::kTriad:
      TriadKernel(arrays.a, arrays.b, arrays.c, kScalar, arrays.elements);
      break;
  }
}

ExpectedValues ExpectedAfter(int iterations) {
  ExpectedValues v{kInitialA, kInitialB, kInitialC};
  for (int i = 0; i < iterations; ++i) {
    v.c = v.a;
    v.b = kScalar * v.c;
    v.c = v.a + v.b;
    v.a = v.b + kScalar * v.c;
  }
  return v;
}

Validation ValidateArrays(const StreamArrays& arrays, int iterations) {
  const ExpectedValues expected = ExpectedAfter(iterations);
  double a_sum = 0, b_sum = 0, c_sum = 0;
  for (std::size_t j = 0; j < arrays.elements; ++j) {
    a_sum += std::fabs(arrays.a[j] - expected.a);
    b_sum += std::fabs(arrays.b[j] - expected.b);
    c_sum += std::fabs(arrays.c[j] - expected.c);
  }
  Validation v;
  v.a_error = RelativeError(a_sum, arrays.elements, expected.a);
  v.b_error = RelativeError(b_sum, arrays.elements, expected.b);
  v.c_error = RelativeError(c_sum, arrays.elements, expected.c);
  std::vector<std::string> failed;
  // NaN compares false: a NaN error must fail too.
  for (const auto& [name, error] : {std::pair{"a", v.a_error}, {"b", v.b_error}, {"c", v.c_error}}) {
    if (!(error <= kValidationEpsilon))
      failed.push_back(fmt::format("array {} average relative error {:e}", name, error));
  }
  v.ok = failed.empty();
  if (v.ok) {
    v.message = fmt::format("Solution Validates: avg error less than {:e} on all three arrays", kValidationEpsilon);
  } else {
    v.message = fmt::format("Failed Validation: {} (epsilon {:e})", fmt::join(failed, "; "), kValidationEpsilon);
  }
  return v;
}

KernelStats SummarizeKernel(Kernel kernel, std::size_t elements, std::span<const double> seconds) {
  KernelStats stats;
  stats.kernel = kernel;
  stats.bytes = KernelBytes(kernel, elements);
  if (seconds.size() < 2) return stats;
  const auto timed = seconds.subspan(1);
  stats.min_seconds = *std::min_element(timed.begin(), timed.end());
  stats.max_seconds = *std::max_element(timed.begin(), timed.end());
  double sum = 0;
  for (const double s : timed) sum += s;
  stats.avg_seconds = sum / static_cast<double>(timed.size());
  return stats;
}

StreamRun RunStream(const StreamOptions& options, const RunContext& context) {
  StreamRun run;
  if (options.threads < 1 || options.iterations < 2 || options.elements < static_cast<std::size_t>(options.threads) ||
      (!options.cpus.empty() && options.cpus.size() != static_cast<std::size_t>(options.threads))) {
    run.error_reason = "invalid_options";
    run.error = "invalid stream options";
    return run;
  }
  const auto mapping = ArrayMapping::Create(options.elements);
  if (!mapping) {
    run.error_reason = "out_of_memory";
    run.error = fmt::format("cannot map {} bytes for the arrays", 3 * options.elements * sizeof(double));
    return run;
  }
  const StreamArrays arrays = mapping->arrays();
  StreamRunner runner(options, context, arrays);
  run.complete = runner.Run(&run.pinned_threads, &run.error);
  if (!run.error.empty()) run.error_reason = "thread_start_failed";
  if (!run.complete) return run;
  for (std::size_t k = 0; k < kKernels.size(); ++k) {
    const std::vector<double> seconds = runner.KernelSeconds(k);
    run.kernels.push_back(SummarizeKernel(kKernels[k], options.elements, seconds));
  }
  if (options.before_validation) options.before_validation(arrays);
  run.validation = ValidateArrays(arrays, options.iterations);
  return run;
}

std::uint64_t LlcTotal(std::uint64_t llc_bytes, int packages) {
  if (llc_bytes == 0) return kUnknownLlcBytes;
  return llc_bytes * static_cast<std::uint64_t>(std::max(1, packages));
}

bool IsCacheResident(std::size_t elements, std::uint64_t llc_total) {
  return 3 * sizeof(double) * static_cast<std::uint64_t>(elements) < 4 * llc_total;
}

Sizing SizingFor(std::size_t elements, const SizingInput& input) {
  Sizing sizing;
  sizing.elements = std::max(elements, kMinElements);
  sizing.llc_known = input.llc_bytes > 0;
  sizing.llc_total = LlcTotal(input.llc_bytes, input.packages);
  // Unknown LLC: never claim memory residency from an assumed size alone.
  sizing.cache_resident = !sizing.llc_known || IsCacheResident(sizing.elements, sizing.llc_total);
  return sizing;
}

Sizing ScheduledSizing(const SizingInput& input) {
  const std::uint64_t llc_total = LlcTotal(input.llc_bytes, input.packages);
  const std::uint64_t target_total = std::min(input.memory_budget, 5 * llc_total);
  return SizingFor(static_cast<std::size_t>(target_total / (3 * sizeof(double))), input);
}

Sizing FullSizing(const SizingInput& input) {
  const std::uint64_t llc_total = LlcTotal(input.llc_bytes, input.packages);
  std::uint64_t elements = std::max<std::uint64_t>(kStreamDefaultElements, 4 * llc_total / sizeof(double));
  if (input.memory_available)
    elements = std::min<std::uint64_t>(elements, *input.memory_available / 2 / (3 * sizeof(double)));
  return SizingFor(static_cast<std::size_t>(elements), input);
}

}  // namespace hostperf::probes::memory
