#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::memory {

// STREAM's four kernels, in the order STREAM runs them in every iteration.
enum class Kernel { kCopy, kScale, kAdd, kTriad };
inline constexpr std::array<Kernel, 4> kKernels = {Kernel::kCopy, Kernel::kScale, Kernel::kAdd, Kernel::kTriad};

std::string_view KernelName(Kernel kernel);  // "copy", "scale", "add", "triad"

// STREAM's byte counting: copy and scale move 2 arrays, add and triad 3, of
// `elements` doubles each (write-allocate traffic is not counted).
std::uint64_t KernelBytes(Kernel kernel, std::size_t elements);

inline constexpr double kScalar = 3.0;

// The kernels (compiled with -O3 so that they vectorise):
//   copy  c = a        scale b = s*c
//   add   c = a + b    triad a = b + s*c
void CopyKernel(double* c, const double* a, std::size_t n);
void ScaleKernel(double* b, const double* c, double scalar, std::size_t n);
void AddKernel(double* c, const double* a, const double* b, std::size_t n);
void TriadKernel(double* a, const double* b, const double* c, double scalar, std::size_t n);

// The three arrays, or a slice of them.
struct StreamArrays {
  double* a = nullptr;
  double* b = nullptr;
  double* c = nullptr;
  std::size_t elements = 0;

  StreamArrays Slice(std::size_t begin, std::size_t end) const {
    return {a + begin, b + begin, c + begin, end - begin};
  }
};

void RunKernel(Kernel kernel, const StreamArrays& arrays);

// Initial values (STREAM starts a=1, b=2, c=0 and doubles a once).
inline constexpr double kInitialA = 2.0;
inline constexpr double kInitialB = 2.0;
inline constexpr double kInitialC = 0.0;
void InitializeArrays(const StreamArrays& arrays);

// STREAM's check: the values every element must hold after `iterations`
// rounds of the four kernels, and the average relative error of each array
// against them, which must stay under epsilon (1e-13 for doubles).
inline constexpr double kValidationEpsilon = 1e-13;
struct ExpectedValues {
  double a = 0, b = 0, c = 0;
};
ExpectedValues ExpectedAfter(int iterations);

struct Validation {
  bool ok = false;
  double a_error = 0, b_error = 0, c_error = 0;  // average |x - expected| / |expected|
  std::string message;                           // names the failing arrays
};
Validation ValidateArrays(const StreamArrays& arrays, int iterations);

// Timings of one kernel over the iterations after the first (warm-up) one, as
// STREAM reports them.
struct KernelStats {
  Kernel kernel = Kernel::kCopy;
  std::uint64_t bytes = 0;  // per iteration
  double avg_seconds = 0, min_seconds = 0, max_seconds = 0;
  double BestBytesPerSecond() const { return min_seconds > 0 ? static_cast<double>(bytes) / min_seconds : 0; }
};

// `seconds[i]` is the time of iteration i; the first is the warm-up and is
// left out. Needs at least two iterations.
KernelStats SummarizeKernel(Kernel kernel, std::size_t elements, std::span<const double> seconds);

struct StreamOptions {
  std::size_t elements = 0;  // per array
  int iterations = 10;       // including the warm-up
  int threads = 1;
  // When not empty (size == threads), worker i is pinned to cpus[i].
  std::vector<int> cpus;
  // Test seam: called on the whole arrays after the timed iterations, before
  // validation (to corrupt them).
  std::function<void(const StreamArrays&)> before_validation;
};

struct StreamRun {
  bool complete = false;     // false: stopped by cancellation or deadline
  std::string error_reason;  // "" when fine, else "out_of_memory", "thread_start_failed", "invalid_options"
  std::string error;         // detail of error_reason
  int pinned_threads = 0;    // workers whose pinning succeeded
  std::vector<KernelStats> kernels;
  std::optional<Validation> validation;  // set when complete
};

// Allocates the arrays (first touched by the workers that use them), runs the
// iterations on `threads` threads, each on its own contiguous slice, and
// validates. Stops between kernels once the context says so.
StreamRun RunStream(const StreamOptions& options, const RunContext& context);

// Array sizing against the last-level cache.
//
// Arrays count as memory-resident when the three together are at least 4x
// the last-level cache (all packages' LLCs summed). An unknown LLC (0) is
// taken as kUnknownLlcBytes, so that the arrays are not proven memory-resident
// unless they are very large.
inline constexpr std::uint64_t kUnknownLlcBytes = 256ULL << 20;
inline constexpr std::size_t kMinElements = 1024;

struct SizingInput {
  std::uint64_t llc_bytes = 0;  // one LLC (of cpu0); 0: unknown
  int packages = 1;
  std::uint64_t memory_budget = 0;                // scheduled: the three arrays' cap
  std::optional<std::uint64_t> memory_available;  // full: use at most half of it
};

struct Sizing {
  std::size_t elements = 0;     // per array
  std::uint64_t llc_total = 0;  // the LLC figure the 4x rule used
  bool llc_known = false;
  bool cache_resident = true;  // arrays below 4x llc_total
};

std::uint64_t LlcTotal(std::uint64_t llc_bytes, int packages);
bool IsCacheResident(std::size_t elements, std::uint64_t llc_total);

// Scheduled: just past 4x the LLC (5x), within the memory budget.
Sizing ScheduledSizing(const SizingInput& input);
// Full: each array 4x the LLC (STREAM's own rule; the three together 12x) and
// never under STREAM's default 10M elements, within half the available memory.
Sizing FullSizing(const SizingInput& input);
Sizing SizingFor(std::size_t elements, const SizingInput& input);

}  // namespace hostperf::probes::memory
