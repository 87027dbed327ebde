#include "hostperf/probes/disk/workload.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "hostperf/probes/disk/block.h"
#include "hostperf/probes/probe_cpu.h"

namespace hostperf::probes::disk {
namespace {

using Clock = std::chrono::steady_clock;

std::string Hex(std::uint64_t value) {
  char buffer[20];
  std::snprintf(buffer, sizeof(buffer), "%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Bad blocks logged one by one per run (the rest are only counted), so that a
// dying disk cannot flood the log.
constexpr std::uint64_t kVerboseBadBlocks = 100;

spdlog::level::level_enum DetailLevel(bool verbose) { return verbose ? spdlog::level::info : spdlog::level::debug; }

// One timed pread/pwrite of a whole block; a short transfer is an error.
Result<void> TimedIo(bool write, int fd, std::byte* buffer, std::size_t size, std::uint64_t offset,
                     LatencyHistogram& latency, const std::string& file_name) {
  const auto start = Clock::now();
  const ssize_t n = write ? ::pwrite(fd, buffer, size, static_cast<off_t>(offset))
                          : ::pread(fd, buffer, size, static_cast<off_t>(offset));
  const int error = errno;
  latency.Observe(std::chrono::duration<double>(Clock::now() - start).count());
  if (n == static_cast<ssize_t>(size)) return {};
  const std::string what = std::string(write ? "write" : "read") + " of " + std::to_string(size) + " bytes at offset " +
                           std::to_string(offset) + " of " + file_name;
  if (n >= 0) {
    // A short write means the file system is full; a short read, lost data.
    if (write) return Failure{"no_space", what + ": short write (" + std::to_string(n) + " bytes): disk full"};
    return Failure{"io_error", what + ": short read (" + std::to_string(n) + " bytes)"};
  }
  if (error == EINVAL) {
    return Failure{"direct_io_unsupported",
                   what + ": " + std::strerror(error) + " (direct I/O alignment refused; try --disable-direct-io)"};
  }
  return ErrnoError(error, what);
}

// Runs one job at a time on its own thread. Read tests hand it each block's
// verification, so that the worker's next read overlaps the CRC of the last
// one; the Write test hands it the formatting (header and CRC) of the next
// block while the current one is written. Only one I/O is ever outstanding
// per worker, as with fio's psync (which neither verifies nor formats).
class OneSlotRunner {
 public:
  OneSlotRunner() : thread_([this] { Loop(); }) {}
  ~OneSlotRunner() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();  // a queued job still runs: no verification is dropped
  }
  OneSlotRunner(const OneSlotRunner&) = delete;
  OneSlotRunner& operator=(const OneSlotRunner&) = delete;

  // Waits until the previous job has finished, then queues this one.
  void Submit(std::function<void()> job) {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return !job_; });
    job_ = std::move(job);
    wake_.notify_all();
  }

  // Waits until the last job has finished.
  void WaitIdle() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return !job_; });
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || job_; });
      if (!job_) return;  // stopping with nothing queued
      lock.unlock();
      {
        const ProbeCpuScope charged;  // probe work: charged to the CPU budget
        job_();                       // job_ stays set while it runs, so Submit waits
      }
      lock.lock();
      job_ = nullptr;
      idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::function<void()> job_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the rest is initialised
};

}  // namespace

std::string_view TestName(DiskTest test) {
  switch (test) {
    case DiskTest::kWrite:
      return "Write";
    case DiskTest::kReWrite:
      return "ReWrite";
    case DiskTest::kRead:
      return "Read";
    case DiskTest::kSkipRead:
      return "SkipRead";
  }
  return "?";
}

std::string_view OpName(DiskOp op) {
  switch (op) {
    case DiskOp::kWrite:
      return "write";
    case DiskOp::kRewriteRead:
      return "rewrite_read";
    case DiskOp::kRewriteWrite:
      return "rewrite_write";
    case DiskOp::kRead:
      return "read";
    case DiskOp::kSkipRead:
      return "skip_read";
  }
  return "?";
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBuckets = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
                                               25e-3, 50e-3, 0.1,   0.25,   0.5,    1,      2.5,  5,      10};
  return kBuckets;
}

void LatencyHistogram::Observe(double seconds) {
  const auto& bounds = LatencyBuckets();
  const auto bucket = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  counts[static_cast<std::size_t>(bucket)] += 1;
  sum += seconds;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (std::size_t i = 0; i < counts.size(); ++i) counts[i] += other.counts[i];
  sum += other.sum;
}

std::uint64_t LatencyHistogram::Total() const {
  double total = 0;
  for (const double c : counts) total += c;
  return static_cast<std::uint64_t>(total);
}

bool SetIdleIoPriority() {
  // The ioprio_set(2) ABI, spelled out: Debian 12's linux-libc-dev 6.1.192
  // made <linux/ioprio.h> name a parameter `class`, which no C++ compiler
  // accepts. Values from ioprio_set(2): IOPRIO_WHO_PROCESS = 1,
  // IOPRIO_CLASS_IDLE = 3, the class in the bits above IOPRIO_CLASS_SHIFT.
  constexpr int kWhoProcess = 1;
  constexpr int kClassIdle = 3;
  constexpr int kClassShift = 13;
  // who = 0: the calling thread (I/O priority is per thread on Linux).
  return ::syscall(SYS_ioprio_set, kWhoProcess, 0, kClassIdle << kClassShift) == 0;
}

Result<std::unique_ptr<Workload>> Workload::Create(const TestDirectory& dir, const WorkloadOptions& options) {
  if (options.threads == 0 || options.files_per_thread == 0 || options.block_size < kBlockHeaderSize ||
      options.file_size == 0 || options.file_size % options.block_size != 0) {
    return Failure{"bad_options", "invalid workload sizes"};
  }
  std::unique_ptr<Workload> workload(new Workload(dir, options));
  const std::size_t count = options.threads * options.files_per_thread;
  const std::size_t blocks = options.file_size / options.block_size;
  for (std::size_t i = 0; i < count; ++i) {
    auto created = ScratchFile::Create(dir, ScratchName(options.run_id, i), options.direct_io);
    if (!created.ok()) {
      spdlog::log(DetailLevel(options.verbose), "disk: cannot create scratch file {} in {}: {} ({})",
                  ScratchName(options.run_id, i), dir.path(), created.error(), created.reason());
      return created.failure();  // files made so far are removed with `workload`
    }
    // Reserve the blocks up front, as fio does: the Write test then measures
    // writing data rather than the file system's block allocation, and a full
    // disk shows here, before any timing, as a clean no_space.
    const int reserved = ::fallocate((*created)->fd(), 0, 0, static_cast<off_t>(options.file_size));
    const int reserve_error = reserved == 0 ? 0 : errno;
    if (reserve_error != 0 && reserve_error != EOPNOTSUPP && reserve_error != ENOSYS) {
      return ErrnoError(reserve_error,
                        "reserving " + std::to_string(options.file_size) + " bytes for " + (*created)->name());
    }
    spdlog::log(DetailLevel(options.verbose), "disk: created {}/{} ({} bytes in {} blocks of {}, {}, alignment {})",
                dir.path(), (*created)->name(), options.file_size, blocks, options.block_size,
                options.direct_io ? "O_DIRECT" : "buffered", dir.alignment());
    File file;
    file.file = std::move(*created);
    file.id = (options.run_id << 16) | i;
    file.generation.assign(blocks, 0);
    workload->files_.push_back(std::move(file));
  }
  return workload;
}

Result<void> RunWorkers(std::size_t threads, const std::atomic<bool>& stop, const std::function<void()>& tick,
                        const std::function<Result<void>(std::size_t, const std::atomic<bool>&)>& worker) {
  std::vector<Result<void>> results(threads);
  std::atomic<std::size_t> running{threads};
  std::atomic<bool> abort{stop.load()};
  // Any thread's error or the caller's stop ends every thread's work.
  std::vector<std::thread> workers;
  workers.reserve(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      const ProbeCpuScope charged;  // probe work: charged to the CPU budget
      results[t] = worker(t, abort);
      if (!results[t].ok()) abort.store(true);
      running.fetch_sub(1);
    });
  }
  while (running.load() > 0) {
    for (int i = 0; i < 10 && running.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (stop.load()) abort.store(true);
    if (tick) tick();
  }
  for (auto& thread : workers) thread.join();
  for (auto& result : results) {
    if (!result.ok()) return result;
  }
  return {};
}

Result<void> Workload::Run(DiskTest test, Clock::time_point until, const std::atomic<bool>& stop,
                           TestCounters& counters, OpLatencies& latencies, const std::function<void()>& tick) {
  std::vector<OpLatencies> local(options_.threads);
  auto result = RunWorkers(options_.threads, stop, tick, [&](std::size_t t, const std::atomic<bool>& abort) {
    return Worker(t, test, until, abort, counters, local[t]);
  });
  spdlog::log(DetailLevel(options_.verbose), "disk: {} in {}: {} bytes read, {} written, {} ops, {} bad block(s)",
              TestName(test), dir_.path(), counters.bytes_read.load(), counters.bytes_written.load(),
              counters.ops.load(), counters.verify_errors.load());
  for (const auto& per_thread : local) {
    for (std::size_t op = 0; op < kOpCount; ++op) latencies[op].Merge(per_thread[op]);
  }
  return result;
}

// What one worker thread's test loop works with.
struct Workload::Lane {
  std::size_t thread = 0;
  DiskTest test = DiskTest::kWrite;
  Clock::time_point until;
  const std::atomic<bool>* stop = nullptr;
  TestCounters* counters = nullptr;
  OpLatencies* latencies = nullptr;
  std::size_t size = 0;  // block size
  std::size_t alignment = 0;
  std::uint64_t blocks = 0;  // per file
  AlignedBuffer pattern;
  // Read tests alternate between the two buffers, one verified while the
  // other is read into; the Write test formats one while it writes the
  // other. ReWrite uses only the first.
  std::array<AlignedBuffer, 2> buffers;
  std::size_t next_buffer = 0;
  // Declared last, so destroyed first: on every return path the runner
  // finishes its last job before the buffers go away.
  std::unique_ptr<OneSlotRunner> helper;

  LatencyHistogram& latency(DiskOp op) const { return (*latencies)[static_cast<int>(op)]; }
};

Result<void> Workload::Worker(std::size_t thread, DiskTest test, Clock::time_point until, const std::atomic<bool>& stop,
                              TestCounters& counters, OpLatencies& latencies) {
  if (options_.idle_io_priority) SetIdleIoPriority();
  Lane lane;
  lane.thread = thread;
  lane.test = test;
  lane.until = until;
  lane.stop = &stop;
  lane.counters = &counters;
  lane.latencies = &latencies;
  lane.size = options_.block_size;
  lane.alignment = dir_.alignment();
  lane.blocks = options_.file_size / lane.size;
  lane.buffers[0] = AllocateAligned(lane.alignment, lane.size);
  lane.pattern = AllocateAligned(lane.alignment, lane.size);
  if (!lane.buffers[0] || !lane.pattern) return Failure{"out_of_memory", "cannot allocate I/O buffers"};
  FillRandom({lane.pattern.get(), lane.size}, options_.run_id * 0x9e3779b97f4a7c15ULL + thread);
  const bool overlapped = test != DiskTest::kReWrite;
  if (overlapped) {
    lane.buffers[1] = AllocateAligned(lane.alignment, lane.size);
    if (!lane.buffers[1]) return Failure{"out_of_memory", "cannot allocate I/O buffers"};
    lane.helper = std::make_unique<OneSlotRunner>();
  }
  // Nothing reads into a Write lane's buffers: with the pattern copied in
  // once, each block needs its stamps and header only. Measured on a
  // RAM-backed ext4 at 1 MiB without CRC: copying the whole pattern per
  // block cost Write about 15 % against fio.
  if (test == DiskTest::kWrite) {
    for (const AlignedBuffer& buffer : lane.buffers) std::memcpy(buffer.get(), lane.pattern.get(), lane.size);
  }
  switch (test) {
    case DiskTest::kWrite:
      return Write(lane);
    case DiskTest::kReWrite:
      return ReWrite(lane);
    case DiskTest::kRead:
      return Read(lane);
    case DiskTest::kSkipRead:
      return SkipRead(lane);
  }
  return {};
}

Result<void> Workload::Sweep(Lane& lane, bool every_other_block, const BlockStep& step) {
  for (std::size_t pass = 0;; ++pass) {
    if (pass > 0 && Clock::now() >= lane.until) return {};
    for (std::size_t f = lane.thread * options_.files_per_thread; f < (lane.thread + 1) * options_.files_per_thread;
         ++f) {
      File& file = files_[f];
      for (std::uint64_t index = 0; index < lane.blocks; ++index) {
        if (lane.stop->load(std::memory_order_relaxed)) return {};
        if (every_other_block && lane.blocks > 1 && index % 2 != pass % 2) continue;
        if (auto done = step(file, index); !done.ok()) {
          spdlog::log(DetailLevel(options_.verbose),
                      "disk: {} test, thread {}: {} ({}; block {} of {}, buffer alignment {})", TestName(lane.test),
                      lane.thread, done.error(), done.reason(), index, lane.blocks, lane.alignment);
          return done;
        }
        lane.counters->ops.fetch_add(1, std::memory_order_relaxed);
      }
    }
  }
}

// Blocks are formatted with the generation they will carry; only their own
// write changes it, so formatting the next block ahead is safe.
void Workload::FormatNext(const Lane& lane, std::byte* target, const File& file, std::uint64_t index,
                          bool pattern_in_place) const {
  const BlockId id{file.id, index, file.generation[index] + 1};
  if (pattern_in_place) {
    RestampBlock({target, lane.size}, id, options_.crc);
  } else {
    FormatBlock({target, lane.size}, {lane.pattern.get(), lane.size}, id, options_.crc);
  }
}

// Measured at 4 KiB on a RAM-backed ext4: Read with every block's
// check handed to the helper ran at 0.62 of fio, inline at about 1.0; a
// 4 KiB CRC32C takes well under a microsecond, a hand-off's wake-up several.
bool Workload::Overlapped(const Lane& lane) const { return options_.crc && lane.size >= kOverlapMinBlockSize; }

void Workload::Verify(Lane& lane, const File& file, std::uint64_t index, std::span<const std::byte> data) {
  const BlockId expected{file.id, index, file.generation[index]};
  const BlockStatus status = VerifyBlock(data, expected, options_.crc);
  if (status == BlockStatus::kOk) return;
  const std::uint64_t bad_blocks = lane.counters->verify_errors.fetch_add(1) + 1;
  if (bad_blocks <= kVerboseBadBlocks) {
    spdlog::log(DetailLevel(options_.verbose),
                "disk: {} in block {} (offset {}) of {}/{}: expected file {} generation {}", ToString(status), index,
                index * lane.size, dir_.path(), file.file->name(), Hex(file.id), expected.generation);
  }
  RecordVerifyError(std::string(ToString(status)) + " in block " + std::to_string(index) + " (offset " +
                    std::to_string(index * lane.size) + ") of " + dir_.path() + "/" + file.file->name() +
                    ": expected file " + Hex(file.id) + " generation " + std::to_string(expected.generation));
}

Result<void> Workload::Write(Lane& lane) {
  // The other buffer holds (or is being given) the next block of the same file.
  bool next_formatted = false;
  return Sweep(lane, false, [&](File& file, std::uint64_t index) -> Result<void> {
    std::byte* target = lane.buffers[lane.next_buffer].get();
    // The helper formatted this block ahead (Overlapped lanes, after a
    // file's first block); otherwise it is formatted here: without a CRC
    // that is a header and a copy, and a small block's CRC takes less than
    // a hand-off's wake-up.
    if (next_formatted) {
      lane.helper->WaitIdle();
    } else {
      FormatNext(lane, target, file, index, true);
    }
    next_formatted = Overlapped(lane) && index + 1 < lane.blocks;
    if (next_formatted) {
      std::byte* other = lane.buffers[lane.next_buffer ^ 1].get();
      lane.helper->Submit([this, &lane, other, &file, index] { FormatNext(lane, other, file, index + 1, true); });
    }
    lane.next_buffer ^= 1;
    auto written = TimedIo(true, file.file->fd(), target, lane.size, index * lane.size, lane.latency(DiskOp::kWrite),
                           file.file->name());
    if (!written.ok()) return written;
    ++file.generation[index];
    lane.counters->bytes_written.fetch_add(lane.size, std::memory_order_relaxed);
    return {};
  });
}

Result<void> Workload::ReWrite(Lane& lane) {
  return Sweep(lane, false, [&](File& file, std::uint64_t index) -> Result<void> {
    const std::span<std::byte> block(lane.buffers[0].get(), lane.size);
    const std::uint64_t offset = index * lane.size;
    auto read = TimedIo(false, file.file->fd(), block.data(), lane.size, offset, lane.latency(DiskOp::kRewriteRead),
                        file.file->name());
    if (!read.ok()) return read;
    lane.counters->bytes_read.fetch_add(lane.size, std::memory_order_relaxed);
    Verify(lane, file, index, block);
    FormatNext(lane, block.data(), file, index, false);  // `block` holds what was read
    auto written = TimedIo(true, file.file->fd(), block.data(), lane.size, offset, lane.latency(DiskOp::kRewriteWrite),
                           file.file->name());
    if (!written.ok()) return written;
    ++file.generation[index];
    lane.counters->bytes_written.fetch_add(lane.size, std::memory_order_relaxed);
    return {};
  });
}

Result<void> Workload::Read(Lane& lane) { return ReadBlocks(lane, DiskOp::kRead, false); }

// Reads every other block (read one, skip one), the other half on the next
// pass: every read is a seek.
Result<void> Workload::SkipRead(Lane& lane) { return ReadBlocks(lane, DiskOp::kSkipRead, true); }

Result<void> Workload::ReadBlocks(Lane& lane, DiskOp op, bool every_other_block) {
  return Sweep(lane, every_other_block, [&, op](File& file, std::uint64_t index) -> Result<void> {
    std::byte* target = lane.buffers[lane.next_buffer].get();
    auto read =
        TimedIo(false, file.file->fd(), target, lane.size, index * lane.size, lane.latency(op), file.file->name());
    if (!read.ok()) return read;
    lane.counters->bytes_read.fetch_add(lane.size, std::memory_order_relaxed);
    if (!Overlapped(lane)) {
      // The header alone, or a small block's CRC: cheaper here than a hand-off.
      Verify(lane, file, index, {target, lane.size});
      return {};
    }
    // Waits for the previous block's verification (the other buffer), so
    // `target` is not read into again before it is checked.
    lane.helper->Submit([this, &lane, &file, index, target] { Verify(lane, file, index, {target, lane.size}); });
    lane.next_buffer ^= 1;
    return {};
  });
}

void Workload::RecordVerifyError(const std::string& message) {
  std::lock_guard lock(mutex_);
  if (first_verify_error_.empty()) first_verify_error_ = message;
}

std::string Workload::FirstVerifyError() const {
  std::lock_guard lock(mutex_);
  return first_verify_error_;
}

Result<void> Workload::Sync() {
  for (const auto& file : files_) {
    if (::fdatasync(file.file->fd()) != 0) {
      return ErrnoError(errno, "fdatasync " + dir_.path() + "/" + file.file->name());
    }
  }
  return {};
}

std::vector<std::string> Workload::FileNames() const {
  std::vector<std::string> names;
  for (const auto& file : files_) names.push_back(file.file->name());
  return names;
}

std::vector<std::string> Workload::Preserve() {
  std::vector<std::string> names;
  for (auto& file : files_) names.push_back(file.file->Preserve());
  return names;
}

}  // namespace hostperf::probes::disk
