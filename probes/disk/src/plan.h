#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "hostperf/probes/disk/module.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::disk {

// Everything a run uses, resolved from the config and the full-run options.
struct Plan {
  // A full run (a reference tool's): time-driven tests with a table row
  // every log interval, normal I/O priority, no byte budget. Else the
  // scheduled burst: one pass of each test at idle I/O priority, within the
  // hourly byte budget, skipping a directory without room.
  bool full = false;
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
  bool verbose = false;  // --debug
  std::string hdfs_ca_file;
  double member_slow_ratio = 2.0;
  bool attribute_members = true;
  // The configuration generation the run started under (DiskMetrics).
  std::uint64_t generation = 0;
  std::chrono::steady_clock::duration duration{0};
  std::chrono::steady_clock::duration log_interval{0};
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
