#include <fmt/format.h>

#include <algorithm>

#include "hostperf/probes/disk/hdfs.h"

// vioperf's HDFS Read and SkipRead over WebHDFS.
namespace hostperf::probes::disk::hdfs {

using SteadyClock = std::chrono::steady_clock;

using SteadyClock = std::chrono::steady_clock;

HdfsReadWorkload::HdfsReadWorkload(const WebHdfsClient& client, std::vector<FileStatus> files, std::size_t threads,
                                   std::uint64_t block_size)
    : client_(client),
      files_(std::move(files)),
      threads_(std::max<std::size_t>(threads, 1)),
      block_size_(std::max<std::uint64_t>(block_size, 1)),
      locations_(files_.size()),
      next_block_(files_.size(), 0) {}

Result<std::string> HdfsReadWorkload::Location(std::size_t file) {
  if (locations_[file].empty()) {
    auto location = client_.OpenLocation(files_[file].path);
    if (!location) return location;
    locations_[file] = std::move(location).value();
  }
  return locations_[file];
}

Result<void> HdfsReadWorkload::Run(DiskTest test, SteadyClock::time_point until, const std::atomic<bool>& stop,
                                   TestCounters& counters, OpLatencies& latencies, const std::function<void()>& tick) {
  if (test != DiskTest::kRead && test != DiskTest::kSkipRead) {
    return Failure{"bad_options", std::string(TestName(test)) + " does not run on HDFS (vioperf reads only)"};
  }
  if (files_.size() < threads_) {
    return Failure{"bad_options", fmt::format("{} files for {} threads", files_.size(), threads_)};
  }
  const DiskOp op = test == DiskTest::kRead ? DiskOp::kRead : DiskOp::kSkipRead;
  std::vector<LatencyHistogram> local(threads_);
  auto result = RunWorkers(threads_, stop, tick, [&](std::size_t t, const std::atomic<bool>& abort) {
    return test == DiskTest::kRead ? ReadWorker(t, until, abort, counters, local[t])
                                   : SkipReadWorker(t, until, abort, counters, local[t]);
  });
  for (const auto& histogram : local) latencies[static_cast<std::size_t>(op)].Merge(histogram);
  return result;
}

Result<void> HdfsReadWorkload::ReadWorker(std::size_t thread, SteadyClock::time_point until,
                                          const std::atomic<bool>& stop, TestCounters& counters,
                                          LatencyHistogram& latency) {
  bool got_block = false;
  for (std::size_t file = thread;; file += threads_) {
    if (file >= files_.size()) file = thread;  // the next pass over this thread's files
    auto location = Location(file);
    if (!location) return location.failure();
    std::uint64_t pending = 0;
    auto last = SteadyClock::now();
    bool stopped = false;
    // A block is counted (an op, a latency) each time another block's worth
    // has arrived: the stream is one request, its blocks are what vioperf's
    // reader asks for one at a time.
    auto read = client_.Read(*location, 0, 0, block_size_, [&](std::string_view data) {
      counters.bytes_read.fetch_add(data.size(), std::memory_order_relaxed);
      pending += data.size();
      const auto now = SteadyClock::now();
      while (pending >= block_size_) {
        pending -= block_size_;
        counters.ops.fetch_add(1, std::memory_order_relaxed);
        latency.Observe(std::chrono::duration<double>(now - last).count());
        last = now;
        got_block = true;
      }
      stopped = stop.load(std::memory_order_relaxed) || (got_block && now >= until);
      return !stopped;
    });
    if (!read) return read;
    // An empty file cannot hold a run past its end.
    const bool ended = SteadyClock::now() >= until && (got_block || files_[file].length == 0);
    if (stopped || stop.load() || ended) return {};
  }
}

Result<void> HdfsReadWorkload::SkipReadWorker(std::size_t thread, SteadyClock::time_point until,
                                              const std::atomic<bool>& stop, TestCounters& counters,
                                              LatencyHistogram& latency) {
  for (std::size_t file = thread;; file += threads_) {
    if (file >= files_.size()) file = thread;
    auto location = Location(file);
    if (!location) return location.failure();
    const std::uint64_t length = files_[file].length;
    const std::uint64_t blocks = (length + block_size_ - 1) / block_size_;
    // Read one block, skip one, to the end of the file; the next pass over
    // it reads the blocks this one skipped.
    std::size_t& index = next_block_[file];
    while (index < blocks) {
      const std::uint64_t offset = index * block_size_;
      const std::uint64_t size = std::min(block_size_, length - offset);
      const auto began = SteadyClock::now();
      auto read = client_.Read(*location, offset, size, block_size_, [&](std::string_view data) {
        counters.bytes_read.fetch_add(data.size(), std::memory_order_relaxed);
        return !stop.load(std::memory_order_relaxed);
      });
      if (!read) return read;
      counters.ops.fetch_add(1, std::memory_order_relaxed);
      const auto now = SteadyClock::now();
      latency.Observe(std::chrono::duration<double>(now - began).count());
      index += 2;
      if (stop.load() || now >= until) return {};
    }
    index = index % 2 == 0 ? 1 : 0;
    if (blocks == 0 && SteadyClock::now() >= until) return {};
  }
}

}  // namespace hostperf::probes::disk::hdfs
