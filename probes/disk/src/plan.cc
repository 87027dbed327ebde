#include "plan.h"

#include <algorithm>

#include "hostperf/probes/host_facts.h"

namespace hostperf::probes::disk {
namespace {

// What both faces take from the config alone.
Plan FromConfig(const DiskProbeConfig& config) {
  Plan plan;
  plan.threads = config.threads;
  plan.files_per_thread = config.files_per_thread;
  plan.max_buffer_size = config.max_buffer_size;
  plan.direct_io = !config.disable_direct_io;
  plan.crc = !config.disable_crc;
  plan.member_slow_ratio = config.member_slow_ratio;
  plan.attribute_members = config.attribute_members;
  plan.reserve = config.reserve;
  return plan;
}

}  // namespace

std::string DefaultDirectory(const std::filesystem::path& state_directory) {
  return (state_directory / "disk").string();
}

std::vector<std::string> ConfiguredDirectories(const DiskProbeConfig& config,
                                               const std::filesystem::path& state_directory) {
  return config.directories.empty() ? std::vector<std::string>{DefaultDirectory(state_directory)} : config.directories;
}

Plan MakeScheduledPlan(const DiskProbeConfig& config, const std::filesystem::path& state_directory) {
  Plan plan = FromConfig(config);
  plan.directories = ConfiguredDirectories(config, state_directory);
  // Write and ReWrite together write bytes_per_run.
  plan.data_size = std::max<std::uint64_t>(config.bytes_per_run / 2, 1);
  plan.idle_io_priority = true;
  return plan;
}

Plan MakeFullPlan(const DiskProbeConfig& config, const FullRunOptions* given,
                  const std::filesystem::path& state_directory, const SystemRoots& roots) {
  static const FullRunOptions kDefaults;
  const FullRunOptions& options = given != nullptr ? *given : kDefaults;
  Plan plan = FromConfig(config);
  plan.method = options.method;
  plan.directories =
      !options.directories.empty() ? options.directories : ConfiguredDirectories(config, state_directory);
  plan.threads = options.thread_count > 0 ? options.thread_count
                                          : static_cast<std::size_t>(std::max(1, ReadCpuTopology(roots).logical_cpus));
  plan.files_per_thread = options.files_per_thread.value_or(config.files_per_thread);
  plan.max_buffer_size = options.max_buffer_size.value_or(
      plan.method == FullRunMethod::kGpcheckperf ? kGpcheckperfDefaultBlockSize : config.max_buffer_size);
  plan.data_size_given = options.data_size_given;
  plan.direct_io = !options.disable_direct_io.value_or(config.disable_direct_io);
  plan.crc = !options.disable_crc.value_or(config.disable_crc);
  plan.preserve_files = options.preserve_files;
  plan.verbose = options.debug;
  plan.hdfs_ca_file = options.hdfs_ca_file;
  plan.hdfs_confined = options.hdfs_confined;
  plan.hdfs_clusters = config.hdfs_clusters;
  plan.hdfs_datanodes = config.hdfs_datanodes;
  plan.data_size = options.data_size;
  plan.duration = options.duration;
  plan.log_interval = options.log_interval;
  return plan;
}

}  // namespace hostperf::probes::disk
