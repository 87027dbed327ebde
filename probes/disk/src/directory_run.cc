#include "directory_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "hostperf/probes/disk/block.h"
#include "row_sampler.h"

namespace hostperf::probes::disk {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

constexpr auto kMinFinalRowGap = std::chrono::milliseconds(100);

std::chrono::nanoseconds ToNanoseconds(double seconds) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Seconds(seconds));
}

// The files of one directory: blocks of max_buffer_size rounded down to the
// alignment, data_size shared by the files.
struct Layout {
  std::size_t block = 0;
  std::size_t files = 0;
  std::uint64_t file_size = 0;
  std::uint64_t total = 0;
};

Result<Layout> PlanLayout(const Plan& plan, const TestDirectory& dir, const std::string& path) {
  const std::size_t alignment = dir.alignment();
  Layout layout;
  layout.block = plan.max_buffer_size / alignment * alignment;
  if (layout.block < alignment || layout.block < kBlockHeaderSize) {
    return Failure{"bad_options", fmt::format("max_buffer_size {} is smaller than the alignment {} of \"{}\"",
                                              plan.max_buffer_size, alignment, path)};
  }
  layout.files = plan.threads * plan.files_per_thread;
  layout.file_size = std::max<std::uint64_t>(plan.data_size / layout.files / layout.block, 1) * layout.block;
  layout.total = layout.file_size * layout.files;
  return layout;
}

WorkloadOptions MakeWorkloadOptions(const Plan& plan, const Layout& layout) {
  WorkloadOptions options;
  options.threads = plan.threads;
  options.files_per_thread = plan.files_per_thread;
  options.block_size = layout.block;
  options.file_size = layout.file_size;
  options.direct_io = plan.direct_io;
  options.crc = plan.crc;
  options.idle_io_priority = plan.idle_io_priority;
  options.verbose = plan.verbose;
  options.run_id = NewRunId();
  return options;
}

// One test: its rows (every log interval if the plan has one, and a last
// one), its summary into `tests`, its figures published, then the seam.
Result<void> RunOneTest(RunScope& run, const Feedback& feedback, const std::string& path, DiskTest test,
                        const TestRunner& run_test, std::atomic<bool>& stop, json& tests,
                        std::uint64_t& verify_errors) {
  const Plan& plan = run.plan;
  const auto now = Clock::now();
  const auto slice_end = run.share.NextSliceEnd(now);
  TestCounters counters;
  OpLatencies latencies;
  RowSampler sampler(test, path, plan.threads, run.cores, run.services.roots, counters, slice_end);
  const auto interval = plan.log_interval;
  auto next_row = interval ? now + *interval : Clock::time_point::max();
  const auto emit = [&](json row) {
    feedback.ReportProgress({std::string(TestName(test)), ToNanoseconds(row["elapsed_seconds"].get<double>()),
                             ToNanoseconds(row["remaining_seconds"].get<double>())});
    feedback.Report("row", row);
    run.rows.push_back(std::move(row));
  };
  auto io = run_test(test, slice_end, stop, counters, latencies, [&] {
    if (run.context.ShouldStop()) stop.store(true);
    sampler.Sample();
    if (interval && Clock::now() >= next_row) {
      emit(sampler.Row());
      next_row += *interval;
    }
  });
  // The last row, unless one was just printed (it would average nothing).
  if (!interval || sampler.SinceLastRow() >= kMinFinalRowGap) emit(sampler.Row());
  json summary = sampler.Summary();
  verify_errors += counters.verify_errors.load();
  run.services.metrics.Publish(plan.generation, path, test, summary, latencies, counters);
  tests.push_back(std::move(summary));
  if (run.services.seams.after_test) run.services.seams.after_test(path, TestName(test));
  return io;
}

}  // namespace

Clock::time_point TimeShare::NextSliceEnd(Clock::time_point now) {
  const std::size_t left = tests_total - tests_done;
  ++tests_done;
  return end > now ? now + (end - now) / static_cast<long>(std::max<std::size_t>(left, 1)) : now;
}

Result<void> RunTests(RunScope& run, const Feedback& feedback, const std::string& path,
                      std::span<const DiskTest> tests_to_run, const TestRunner& run_test, json& dir_json,
                      std::uint64_t& verify_errors) {
  std::atomic<bool> stop{false};
  Result<void> io;
  json tests = json::array();
  for (const DiskTest test : tests_to_run) {
    io = RunOneTest(run, feedback, path, test, run_test, stop, tests, verify_errors);
    if (!io.ok() || run.context.ShouldStop()) break;
  }
  dir_json["tests"] = std::move(tests);
  dir_json["verify_errors"] = verify_errors;
  return io;
}

DirectoryOutcome RunDirectory(RunScope& run, const Feedback& feedback, const RoomCheck& check_room,
                              const std::string& path, json& dir_json) {
  const Plan& plan = run.plan;
  auto opened = OpenDirectory(run.services, plan, path, dir_json);
  if (!opened.ok()) return DirectoryOutcome::Failed(opened.failure());
  const TestDirectory& dir = **opened;
  const auto layout = PlanLayout(plan, dir, path);
  if (!layout.ok()) return DirectoryOutcome::Failed(layout.failure());
  dir_json.update({{"direct_io", plan.direct_io},
                   {"buffer_size", layout->block},
                   {"alignment", dir.alignment()},
                   {"alignment_source", dir.alignment_source()},
                   {"file_size", layout->file_size},
                   {"files", layout->files},
                   {"data_bytes", layout->total}});
  if (auto refused = check_room(dir, path, layout->total)) return *std::move(refused);
  feedback.Report("directory", dir_json);

  const WorkloadOptions workload_options = MakeWorkloadOptions(plan, *layout);
  // Declared before the files, so destroyed after them.
  const auto record = RecordScratchFiles(run.services, path, workload_options.run_id);
  auto created = Workload::Create(dir, workload_options);
  if (!created.ok()) return DirectoryOutcome::Failed(created.failure());
  Workload& workload = **created;
  std::uint64_t verify_errors = 0;
  auto members = plan.attribute_members ? StartMembers(run.services, path) : std::nullopt;
  const TestRunner run_test = [&workload](DiskTest test, Clock::time_point until, const std::atomic<bool>& stop,
                                          TestCounters& counters, OpLatencies& latencies,
                                          const std::function<void()>& tick) {
    return workload.Run(test, until, stop, counters, latencies, tick);
  };
  const auto tested = RunTests(run, feedback, path, kAllTests, run_test, dir_json, verify_errors);
  if (members && tested.ok()) RecordMembers(run.services, plan, path, *members, feedback, dir_json);
  if (plan.preserve_files && tested.ok()) dir_json["preserved_files"] = workload.Preserve();
  if (!tested.ok()) return DirectoryOutcome::Failed(tested.failure());
  if (verify_errors > 0) {
    return DirectoryOutcome::Failed({"verify_error", fmt::format("{} block(s) read back wrong in \"{}\"; first: {}",
                                                                 verify_errors, path, workload.FirstVerifyError())});
  }
  if (run.context.ShouldStop()) return DirectoryOutcome::Failed(Stopped(run.context, " in \"" + path + "\""));
  return {};
}

json RunHeader(std::string_view mode, const CpuTopology& topology, const Plan& plan) {
  return {
      {"mode", mode},
      {"physical_cores", std::max(1, topology.physical_cores)},
      {"logical_cpus", topology.logical_cpus},
      {"thread_count", plan.threads},
      {"files_per_thread", plan.files_per_thread},
      {"crc", plan.crc},
      {"directories", json::array()},
      {"rows", json::array()},
  };
}

ProbeOutcome RunDirectories(RunScope& run, json result, const DirectoryStep& step) {
  std::optional<Failure> failure;
  std::optional<Failure> skip;
  std::size_t ran = 0;
  for (const auto& path : run.plan.directories) {
    json dir_json = {{"directory", path}};
    const auto outcome = step(path, dir_json);
    run.services.metrics.RecordDirectory(run.plan.generation, path, outcome);
    if (outcome.failure) {
      dir_json["error"] = {{"reason", outcome.failure->reason}, {"message", outcome.failure->message}};
      if (outcome.skipped) {
        dir_json["skipped"] = true;
        if (!skip) skip = outcome.failure;
      } else if (!failure) {
        failure = outcome.failure;
      }
    } else {
      ++ran;
    }
    result["directories"].push_back(std::move(dir_json));
    if (run.context.ShouldStop() && !failure) failure = Stopped(run.context, "");
    if (failure && (failure->reason == "cancelled" || failure->reason == "timeout")) break;
  }
  result["rows"] = std::move(run.rows);
  run.rows = json::array();
  result["seconds"] = Seconds(Clock::now() - run.start).count();
  if (failure) return ProbeOutcome::Failure(*failure, std::move(result));
  if (ran == 0 && skip) return ProbeOutcome::Skipped(skip->reason, skip->message);
  return ProbeOutcome::Success(std::move(result));
}

}  // namespace hostperf::probes::disk
