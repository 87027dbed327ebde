#include "scheduled_run.h"

#include <algorithm>
#include <chrono>

#include "directory_run.h"
#include "hostperf/probes/disk/hdfs.h"
#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::disk {

ProbeOutcome RunScheduledBurst(const RunContext& context, const Plan& plan, const DiskServices& services,
                               const Feedback& feedback) {
  const auto topology = ReadCpuTopology(services.roots);
  const auto start = std::chrono::steady_clock::now();
  // One pass per test: the burst's time is up as it starts.
  RunScope run{context,
               plan,
               services,
               std::max(1, topology.physical_cores),
               TimeShare{start, plan.directories.size() * kAllTests.size()},
               start};
  return RunDirectories(run, RunHeader("scheduled", topology, plan),
                        [&](const std::string& path, nlohmann::json& dir_json) {
                          if (hdfs::IsHdfsUrl(path)) {
                            return DirectoryOutcome::Failed(
                                {"bad_options", "\"" + path + "\": HDFS directories are read by full runs only"});
                          }
                          return RunDirectory(run, feedback, path, dir_json);
                        });
}

}  // namespace hostperf::probes::disk
