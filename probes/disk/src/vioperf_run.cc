#include "vioperf_run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "directory_run.h"
#include "feedback.h"
#include "hdfs_directory.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::disk {

ProbeOutcome RunVioperf(const FullRunContext& context, const Plan& plan, const DiskServices& services) {
  const auto topology = ReadCpuTopology(services.roots);
  const auto start = std::chrono::steady_clock::now();
  std::size_t tests_total = 0;
  for (const auto& path : plan.directories) {
    tests_total += hdfs::IsHdfsUrl(path) ? kHdfsTests.size() : kAllTests.size();
  }
  RunScope run{context,
               plan,
               services,
               std::max(1, topology.physical_cores),
               TimeShare{std::min(context.deadline, start + plan.duration), tests_total},
               start};
  // No byte budget: a full run is asked for; without room it fails.
  const RoomCheck check_room = [&](const TestDirectory& dir, const std::string& path,
                                   std::uint64_t total) -> std::optional<DirectoryOutcome> {
    if (auto room = CheckFreeSpace(plan, dir, path, total); !room.ok()) return DirectoryOutcome::Failed(room.failure());
    return std::nullopt;
  };
  const Feedback feedback{&context};
  return RunDirectories(run, RunHeader("full", topology, plan), [&](const std::string& path, nlohmann::json& dir_json) {
    return hdfs::IsHdfsUrl(path) ? RunHdfsDirectory(run, feedback, path, dir_json)
                                 : RunDirectory(run, feedback, check_room, path, dir_json);
  });
}

}  // namespace hostperf::probes::disk
