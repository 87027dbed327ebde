#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::disk {

// [probes.disk]
struct DiskProbeConfig : config::ProbeSection {
  static constexpr std::string_view kName = "disk";
  std::vector<std::string> directories;  // empty: <state_directory>/disk
  // Directory -> role, the `role` of hostperf_disk_directory_info, so that
  // fleet rules compare a host's storage only with the same kind on other
  // hosts. Every key must be in `directories`; the others take kDataRole,
  // the default directory kStateRole.
  std::map<std::string, std::string> directory_roles;
  // Bytes written (and read back) per directory per scheduled run: Write and
  // ReWrite each write half of it.
  std::uint64_t bytes_per_run = 64 * config::kMiB;
  std::uint32_t threads = 1;  // scheduled runs (full runs: all online CPUs)
  std::uint32_t files_per_thread = 1;
  std::uint64_t max_buffer_size = 1 * config::kMiB;  // bytes per read/write
  bool disable_direct_io = false;
  bool disable_crc = false;
  std::uint64_t reserve = 1 * config::kGiB;  // free space left untouched beyond the files
  // A member device of the array behind a directory whose time per read or
  // write is this many times its siblings' median is named (the run's
  // findings, the log; the alert has its own threshold in the mixin).
  double member_slow_ratio = 2.0;
  // false: no member counters read (bench/impact's attribution section
  // measures the cost with it on and off).
  bool attribute_members = true;
  // The HDFS clusters the run API may read besides those of HADOOP_CONF_DIR:
  // NameNode web addresses, "host" or "host:port".
  std::vector<std::string> hdfs_clusters;
  // Hosts DataNode redirects may go to besides the cluster's own (see
  // hdfs::CheckDataNodeLocation): a host name or address, or ".domain".
  std::vector<std::string> hdfs_datanodes;
};

inline constexpr std::string_view kStateRole = "state";
inline constexpr std::string_view kDataRole = "data";
inline constexpr std::size_t kMaxRoleLength = 32;

// vioperf: the disk probe's module (registered from its folder: probes/CMakeLists.txt).
extern const ProbeModule kModule;

// The headline figures of a disk result: Write and Read per physical core
// (pass 40 MB/s, warn 20 MB/s; ReWrite and SkipRead do not count).
std::vector<Figure> DiskFigures(const nlohmann::json& result);

}  // namespace hostperf::probes::disk
