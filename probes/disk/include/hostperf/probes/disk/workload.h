#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/disk/scratch.h"

namespace hostperf::probes::disk {

// vioperf's four tests, in the order they run.
enum class DiskTest { kWrite, kReWrite, kRead, kSkipRead };
inline constexpr std::array<DiskTest, 4> kAllTests = {DiskTest::kWrite, DiskTest::kReWrite, DiskTest::kRead,
                                                      DiskTest::kSkipRead};
std::string_view TestName(DiskTest test);  // "Write", "ReWrite", "Read", "SkipRead"

// Operations timed into hostperf_disk_op_latency_seconds{op}.
enum class DiskOp { kWrite, kRewriteRead, kRewriteWrite, kRead, kSkipRead };
inline constexpr std::size_t kOpCount = 5;
std::string_view OpName(DiskOp op);  // "write", "rewrite_read", "rewrite_write", "read", "skip_read"

// 10 us ... 10 s.
const std::vector<double>& LatencyBuckets();

// Per-op latency counts in LatencyBuckets() (+Inf last), merged from threads.
struct LatencyHistogram {
  std::vector<double> counts = std::vector<double>(LatencyBuckets().size() + 1, 0.0);
  double sum = 0;
  void Observe(double seconds);
  void Merge(const LatencyHistogram& other);
  std::uint64_t Total() const;
};
using OpLatencies = std::array<LatencyHistogram, kOpCount>;

// Updated by the worker threads while a test runs; read by the sampler.
struct TestCounters {
  std::atomic<std::uint64_t> bytes_read{0};
  std::atomic<std::uint64_t> bytes_written{0};
  std::atomic<std::uint64_t> ops{0};
  std::atomic<std::uint64_t> verify_errors{0};
};

struct WorkloadOptions {
  std::size_t threads = 1;
  std::size_t files_per_thread = 1;
  std::size_t block_size = 1 << 20;  // a multiple of the alignment
  std::uint64_t file_size = 0;       // a multiple of block_size, > 0
  bool direct_io = true;
  bool crc = true;
  bool idle_io_priority = false;  // ioprio IDLE on the worker threads (scheduled runs)
  std::uint64_t run_id = 0;       // distinguishes this run's files and data
  // vioperf --debug: every file, test and bad block logged at info level
  // (at debug level otherwise).
  bool verbose = false;
};

// The files of one directory and the four tests over them.
class Workload {
 public:
  // Creates threads * files_per_thread scratch files (empty until Write).
  static Result<std::unique_ptr<Workload>> Create(const TestDirectory& dir, const WorkloadOptions& options);

  // Runs `test` on all threads: one full pass over every file at least, more
  // passes while now < `until`; every op returns early once `stop` is set.
  // `tick` is called on the calling thread about every 100 ms while the
  // workers run. Returns the first I/O error (verify errors are counted, not
  // returned). The first verify failure is described in FirstVerifyError().
  Result<void> Run(DiskTest test, std::chrono::steady_clock::time_point until, const std::atomic<bool>& stop,
                   TestCounters& counters, OpLatencies& latencies, const std::function<void()>& tick);

  // Flushes the files' data to the device (fdatasync), as gpcheckperf's
  // timed write ends with a sync.
  Result<void> Sync();

  std::string FirstVerifyError() const;
  std::vector<std::string> FileNames() const;
  std::vector<std::string> Preserve();  // keeps the files; returns their new names
  std::uint64_t TotalBytes() const { return options_.file_size * files_.size(); }
  const WorkloadOptions& options() const { return options_; }

 private:
  struct File {
    std::unique_ptr<ScratchFile> file;
    std::uint64_t id = 0;
    std::vector<std::uint64_t> generation;  // per block; 0 = never written
  };
  Workload(const TestDirectory& dir, WorkloadOptions options) : dir_(dir), options_(options) {}
  struct Lane;  // one worker thread's buffers and counters (workload.cc)
  using BlockStep = std::function<Result<void>(File& file, std::uint64_t index)>;

  Result<void> Worker(std::size_t thread, DiskTest test, std::chrono::steady_clock::time_point until,
                      const std::atomic<bool>& stop, TestCounters& counters, OpLatencies& latencies);
  // One loop per test, as fio splits by data direction.
  Result<void> Write(Lane& lane);
  Result<void> ReWrite(Lane& lane);
  Result<void> Read(Lane& lane);
  Result<void> SkipRead(Lane& lane);
  Result<void> ReadBlocks(Lane& lane, DiskOp op, bool every_other_block);
  // Passes over the lane's files until `until` (one pass at least), calling
  // `step` per block; `every_other_block` visits half of them per pass,
  // alternating halves.
  Result<void> Sweep(Lane& lane, bool every_other_block, const BlockStep& step);
  // Formats block `index` of `file` with its next generation into `target`;
  // `pattern_in_place`: `target` holds the lane's pattern (outside stamps and
  // header) and nothing else has written into it, so only stamps and header
  // are rewritten.
  void FormatNext(const Lane& lane, std::byte* target, const File& file, std::uint64_t index,
                  bool pattern_in_place) const;
  // Whether a lane's block formatting and checking run on its helper thread,
  // overlapping the I/O: with CRCs on, and blocks of at least
  // kOverlapMinBlockSize (below it the CRC costs less than the hand-off).
  static constexpr std::size_t kOverlapMinBlockSize = 256 * 1024;
  bool Overlapped(const Lane& lane) const;
  void Verify(Lane& lane, const File& file, std::uint64_t index, std::span<const std::byte> data);
  void RecordVerifyError(const std::string& message);

  const TestDirectory& dir_;
  WorkloadOptions options_;
  std::vector<File> files_;
  mutable std::mutex mutex_;
  std::string first_verify_error_;
};

// Runs worker(t, abort) on `threads` threads of their own (probe work,
// charged to the CPU budget) and `tick` on the calling thread about every
// 100 ms until all have returned. `abort` is set for every worker once one
// fails or `stop` is set. Returns the first failure (by thread order).
Result<void> RunWorkers(std::size_t threads, const std::atomic<bool>& stop, const std::function<void()>& tick,
                        const std::function<Result<void>(std::size_t, const std::atomic<bool>&)>& worker);

// Puts the calling thread in the IDLE I/O scheduling class; false when the
// kernel refuses (e.g. seccomp), which only costs impact, not correctness.
bool SetIdleIoPriority();

}  // namespace hostperf::probes::disk
