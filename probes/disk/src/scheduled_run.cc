#include "scheduled_run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "directory_run.h"
#include "feedback.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/impact_budget.h"

namespace hostperf::probes::disk {
namespace {

// Without room, or with the hourly disk budget spent, the burst skips the
// directory: Write and ReWrite each write `total` bytes.
std::optional<DirectoryOutcome> RefuseWithoutRoomOrBudget(const ScheduledContext& context, const Plan& plan,
                                                          const TestDirectory& dir, const std::string& path,
                                                          std::uint64_t total) {
  if (auto room = CheckFreeSpace(plan, dir, path, total); !room.ok()) {
    return DirectoryOutcome{room.failure(), /*skipped=*/true};
  }
  if (auto over = context.budget->TrySpend(BudgetResource::kDiskBytes, static_cast<double>(2 * total))) {
    return DirectoryOutcome{Failure{"budget_exhausted", "writing " + *over}, /*skipped=*/true};
  }
  return std::nullopt;
}

}  // namespace

ProbeOutcome RunScheduledBurst(const ScheduledContext& context, const Plan& plan, const DiskServices& services) {
  const auto topology = ReadCpuTopology(services.roots);
  const auto start = std::chrono::steady_clock::now();
  // One pass per test: the burst's time is up as it starts.
  RunScope run{context,
               plan,
               services,
               std::max(1, topology.physical_cores),
               TimeShare{start, plan.directories.size() * kAllTests.size()},
               start};
  const RoomCheck check_room = [&](const TestDirectory& dir, const std::string& path, std::uint64_t total) {
    return RefuseWithoutRoomOrBudget(context, plan, dir, path, total);
  };
  const Feedback nobody;
  return RunDirectories(run, RunHeader("scheduled", topology, plan),
                        [&](const std::string& path, nlohmann::json& dir_json) {
                          if (hdfs::IsHdfsUrl(path)) {
                            return DirectoryOutcome::Failed(
                                {"bad_options", "\"" + path + "\": HDFS directories are read by full runs only"});
                          }
                          return RunDirectory(run, nobody, check_room, path, dir_json);
                        });
}

}  // namespace hostperf::probes::disk
