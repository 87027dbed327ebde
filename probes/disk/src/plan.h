#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::disk {

// Everything a run uses, resolved by its face: from the config alone (the
// scheduled burst) or from the config and the full-run options. What the
// faces do differently around it (the byte budget, skipping or failing a
// directory without room, the run's length) is their own code.
struct Plan {
  FullRunMethod method = FullRunMethod::kVioperf;
  bool data_size_given = false;
  std::vector<std::string> directories;
  std::size_t threads = 1;
  std::size_t files_per_thread = 1;
  std::uint64_t max_buffer_size = 0;
  std::uint64_t data_size = 0;  // per directory (gpcheckperf: over all of them)
  std::uint64_t reserve = 0;
  bool direct_io = true;
  bool crc = true;
  bool preserve_files = false;
  bool verbose = false;           // --debug
  bool idle_io_priority = false;  // the scheduled burst's: below every other I/O
  std::string hdfs_ca_file;
  // HDFS URLs must name a configured cluster (the run API; `hostperf io`'s
  // operator names the cluster on the command line).
  bool hdfs_confined = true;
  std::vector<std::string> hdfs_clusters;
  std::vector<std::string> hdfs_datanodes;
  double member_slow_ratio = 2.0;
  bool attribute_members = true;
  // The configuration generation the run started under (DiskMetrics).
  std::uint64_t generation = 0;
  std::chrono::steady_clock::duration duration{0};
  // A table row every log interval while a test runs; none: one row at the
  // end of each test only (the scheduled burst).
  std::optional<std::chrono::steady_clock::duration> log_interval;
};

// The default directory: <state_directory>/disk.
std::string DefaultDirectory(const std::filesystem::path& state_directory);
// The config's directories, or the default one when it names none.
std::vector<std::string> ConfiguredDirectories(const DiskProbeConfig& config,
                                               const std::filesystem::path& state_directory);

// A scheduled run: the configured directories, threads and sizes; Write and
// ReWrite together write bytes_per_run.
Plan MakeScheduledPlan(const DiskProbeConfig& config, const std::filesystem::path& state_directory);

// A full run: `options` (null: the defaults) over the config; threads
// default to every online CPU (read under `roots`).
Plan MakeFullPlan(const DiskProbeConfig& config, const FullRunOptions* options,
                  const std::filesystem::path& state_directory, const SystemRoots& roots);

}  // namespace hostperf::probes::disk
