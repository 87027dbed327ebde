#include "gpcheckperf_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "feedback.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/disk/workload.h"
#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One directory of the run: its file and what happened to it.
struct Lane {
  std::unique_ptr<TestDirectory> dir;
  std::unique_ptr<RunRecord> record;  // declared before the files: outlives them
  std::unique_ptr<Workload> workload;
  json entry;
  std::optional<Failure> failure;  // this directory's own
  std::optional<MemberSampler> members;
};

// One pass (Write or Read) over every lane at once: each lane's counters,
// outcome and interval.
struct Pass {
  explicit Pass(std::size_t count)
      : counters(count),
        latencies(count),
        outcomes(count),
        began(count),
        ended(count),
        began_unix(count),
        ended_unix(count) {}
  std::vector<TestCounters> counters;
  std::vector<OpLatencies> latencies;
  std::vector<Result<void>> outcomes;
  std::vector<Clock::time_point> began;
  std::vector<Clock::time_point> ended;
  std::vector<double> began_unix;
  std::vector<double> ended_unix;
};

class GpcheckperfRun {
 public:
  GpcheckperfRun(const FullRunContext& context, const Plan& plan, const DiskServices& services)
      : context_(context), plan_(plan), services_(services), feedback_{&context} {}

  ProbeOutcome Measure();

 private:
  // The total and the block count; bad options fail the run before any
  // directory is touched.
  Result<void> Size();
  // Lane `i`'s failure, and the run's if it is the first. Returns false.
  bool LaneFailed(std::size_t i, Failure why);
  // Opens lane `i`'s directory and creates its file; false when it failed.
  bool OpenLane(std::size_t i);
  void RunPass(DiskTest test);
  // Runs `test` on every lane at once, on a thread each.
  void RunLanes(DiskTest test, Pass& pass);
  // Each lane's figures and failures, and the pass's combined interval.
  void RecordPass(DiskTest test, Pass& pass);
  // Each directory's outcome, members and files; the files go before the
  // outcome is returned.
  ProbeOutcome Finish();

  const FullRunContext& context_;
  const Plan& plan_;
  const DiskServices& services_;
  const Feedback feedback_;
  const Clock::time_point start_ = Clock::now();
  json result_;
  std::uint64_t total_ = 0;  // bytes over all the directories, a multiple of block_
  std::uint64_t block_ = 0;
  std::uint64_t blocks_ = 0;
  std::vector<Lane> lanes_;
  std::optional<Failure> failure_;  // the run's: the first directory's failure, or a stop
};

ProbeOutcome GpcheckperfRun::Measure() {
  result_ = {
      {"mode", "full"}, {"method", "gpcheckperf"}, {"direct_io", plan_.direct_io}, {"directories", json::array()}};
  if (auto sized = Size(); !sized.ok()) return ProbeOutcome::Failure(sized.failure(), std::move(result_));
  result_["block_size"] = block_;
  result_["data_bytes"] = total_;
  lanes_ = std::vector<Lane>(plan_.directories.size());
  for (std::size_t i = 0; i < lanes_.size(); ++i) lanes_[i].entry = {{"directory", plan_.directories[i]}};
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (!OpenLane(i)) return Finish();
  }
  for (const DiskTest test : {DiskTest::kWrite, DiskTest::kRead}) {
    RunPass(test);
    if (!failure_ && context_.ShouldStop()) failure_ = Stopped(context_, "");
    if (failure_) break;
  }
  return Finish();
}

Result<void> GpcheckperfRun::Size() {
  // gpcheckperf's default: twice the RAM, so that the page cache cannot
  // hold the file (with O_DIRECT a smaller size is valid too).
  total_ = plan_.data_size;
  if (!plan_.data_size_given) {
    const auto ram = ReadMemTotalBytes(services_.roots);
    if (!ram) {
      return Failure{"bad_options", "cannot read MemTotal in " + (services_.roots.proc / "meminfo").string() +
                                        " for the default data size (twice the RAM): give data_size"};
    }
    total_ = 2 * *ram;
  }
  block_ = plan_.max_buffer_size;
  // gpcheckperf's dd writes size / block whole blocks: a size that is not a
  // multiple is rounded down, and the result says from what.
  if (plan_.data_size_given && total_ % block_ != 0) result_["data_size_given"] = total_;
  total_ -= total_ % block_;
  blocks_ = total_ / block_;
  const std::size_t count = plan_.directories.size();
  for (const auto& path : plan_.directories) {
    if (hdfs::IsHdfsUrl(path)) {
      return Failure{"bad_options", "\"" + path +
                                        "\": gpcheckperf's disk test writes; HDFS directories are read by "
                                        "vioperf's tests only (hostperf io)"};
    }
  }
  if (blocks_ < count) {
    return Failure{"bad_options", fmt::format("data_size {} is less than one {}-byte block per directory ({})", total_,
                                              block_, count)};
  }
  return {};
}

bool GpcheckperfRun::LaneFailed(std::size_t i, Failure why) {
  lanes_[i].entry["error"] = {{"reason", why.reason}, {"message", why.message}};
  if (!failure_) failure_ = why;
  lanes_[i].failure = std::move(why);
  return false;
}

bool GpcheckperfRun::OpenLane(std::size_t i) {
  const std::string& path = plan_.directories[i];
  Lane& lane = lanes_[i];
  auto opened = OpenDirectory(services_, plan_, path, lane.entry);
  if (!opened.ok()) return LaneFailed(i, opened.failure());
  lane.dir = std::move(opened).value();
  // The blocks shared out so that the directories add up to the total.
  const std::size_t count = lanes_.size();
  const std::uint64_t bytes = (blocks_ / count + (i < blocks_ % count ? 1 : 0)) * block_;
  lane.entry.update({{"alignment", lane.dir->alignment()}, {"file_size", bytes}});
  if (plan_.direct_io && block_ % lane.dir->alignment() != 0) {
    return LaneFailed(i, {"bad_options", fmt::format("block size {} is not a multiple of the direct I/O alignment {} "
                                                     "of \"{}\"",
                                                     block_, lane.dir->alignment(), path)});
  }
  if (auto room = CheckFreeSpace(plan_, *lane.dir, path, bytes); !room.ok()) {
    return LaneFailed(i, room.failure());
  }
  WorkloadOptions options;
  options.block_size = block_;
  options.file_size = bytes;
  options.direct_io = plan_.direct_io;
  // gpcheckperf checks no data; the block headers still are.
  options.crc = false;
  options.verbose = plan_.verbose;
  options.run_id = NewRunId();
  lane.record = RecordScratchFiles(services_, path, options.run_id);
  auto created = Workload::Create(*lane.dir, options);
  if (!created.ok()) return LaneFailed(i, created.failure());
  lane.workload = std::move(created).value();
  lane.members = plan_.attribute_members ? StartMembers(services_, path) : std::nullopt;
  feedback_.Report("directory", lane.entry);
  return true;
}

void GpcheckperfRun::RunPass(DiskTest test) {
  feedback_.ReportProgress(
      {std::string(TestName(test)), std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_), {}});
  Pass pass(lanes_.size());
  RunLanes(test, pass);
  RecordPass(test, pass);
}

void GpcheckperfRun::RunLanes(DiskTest test, Pass& pass) {
  std::atomic<bool> stop{false};
  std::vector<std::jthread> threads;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    threads.emplace_back([&, i] {
      Workload& workload = *lanes_[i].workload;
      pass.began[i] = Clock::now();
      pass.began_unix[i] = UnixSeconds();
      // One pass: the slice ends as it starts.
      pass.outcomes[i] = workload.Run(test, pass.began[i], stop, pass.counters[i], pass.latencies[i], [&] {
        if (context_.ShouldStop()) stop.store(true);
      });
      // gpcheckperf times its writes up to the end of a sync.
      if (test == DiskTest::kWrite && pass.outcomes[i].ok()) pass.outcomes[i] = workload.Sync();
      pass.ended[i] = Clock::now();
      pass.ended_unix[i] = UnixSeconds();
      // One directory's I/O error ends the pass for all.
      if (!pass.outcomes[i].ok()) stop.store(true);
    });
  }
}

void GpcheckperfRun::RecordPass(DiskTest test, Pass& pass) {
  const std::string key = test == DiskTest::kWrite ? "write" : "read";
  std::uint64_t bytes_total = 0;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const std::string& path = plan_.directories[i];
    const TestCounters& counters = pass.counters[i];
    const std::uint64_t bytes = test == DiskTest::kWrite ? counters.bytes_written.load() : counters.bytes_read.load();
    bytes_total += bytes;
    lanes_[i].entry[key] = {{"bytes", bytes},
                            {"seconds", Seconds(pass.ended[i] - pass.began[i]).count()},
                            {"started_unix_seconds", pass.began_unix[i]},
                            {"finished_unix_seconds", pass.ended_unix[i]}};
    services_.metrics.PublishTotals(plan_.generation, path, pass.latencies[i], counters);
    if (!pass.outcomes[i].ok()) {
      LaneFailed(i, pass.outcomes[i].failure());
    } else if (const auto bad = counters.verify_errors.load(); bad > 0) {
      LaneFailed(i, {"verify_error", fmt::format("{} block(s) read back wrong in \"{}\"; first: {}", bad, path,
                                                 lanes_[i].workload->FirstVerifyError())});
    }
  }
  const auto first = *std::min_element(pass.began.begin(), pass.began.end());
  const auto last = *std::max_element(pass.ended.begin(), pass.ended.end());
  result_["sequential"][key] = {{"bytes", bytes_total}, {"seconds", Seconds(last - first).count()}};
}

ProbeOutcome GpcheckperfRun::Finish() {
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    const std::string& path = plan_.directories[i];
    Lane& lane = lanes_[i];
    // A directory that another's failure or a stop kept from finishing
    // has no outcome of its own.
    const DirectoryOutcome outcome{lane.failure, !lane.failure && !lane.entry.contains("read")};
    services_.metrics.RecordDirectory(plan_.generation, path, outcome);
    if (lane.members && !failure_) RecordMembers(services_, plan_, path, *lane.members, feedback_, lane.entry);
    if (plan_.preserve_files && !failure_ && lane.workload) lane.entry["preserved_files"] = lane.workload->Preserve();
    result_["directories"].push_back(std::move(lane.entry));
  }
  result_["seconds"] = Seconds(Clock::now() - start_).count();
  lanes_.clear();
  return failure_ ? ProbeOutcome::Failure(*failure_, std::move(result_)) : ProbeOutcome::Success(std::move(result_));
}

}  // namespace

ProbeOutcome RunGpcheckperf(const FullRunContext& context, const Plan& plan, const DiskServices& services) {
  return GpcheckperfRun(context, plan, services).Measure();
}

}  // namespace hostperf::probes::disk
