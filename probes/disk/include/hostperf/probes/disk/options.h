#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::disk {

// vioperf's defaults.
inline constexpr std::chrono::seconds kDefaultDuration{300};
inline constexpr std::chrono::seconds kDefaultLogInterval{10};
// vioperf needs about 4.5 GB; so does a full run unless told less.
inline constexpr std::uint64_t kDefaultFullDataSize = 4608ULL << 20;

// How a full run tests its directories.
enum class FullRunMethod {
  // vioperf: Write, ReWrite, Read and SkipRead in each directory in turn,
  // threads per directory, time-driven (`hostperf io`).
  kVioperf,
  // gpcheckperf's disk test: data_size bytes in total, shared by the
  // directories, written by one sequential writer per directory all at once
  // with max_buffer_size blocks (default 32 KB), then read back all at once;
  // each pass is timed from the first start to the last end (`hostperf
  // check -r d`).
  kGpcheckperf,
};
inline constexpr std::uint64_t kGpcheckperfDefaultBlockSize = 32 << 10;  // gpcheckperf -B

// Options of a full run (the run API's "disk" options and `hostperf io`),
// as JSON keys: method ("vioperf" or "gpcheckperf"), duration, log_interval
// (vioperf intervals), thread_count, max_buffer_size, data_size (vioperf sizes
// or integers), files_per_thread, preserve_files, disable_crc,
// disable_direct_io, debug (booleans), directories (strings; hdfs:// URLs for
// vioperf's HDFS read test), hdfs_ca_file (a path). Absent keys take
// the defaults below / the config.
struct FullRunOptions : ProbeOptions {
  FullRunMethod method = FullRunMethod::kVioperf;
  std::chrono::nanoseconds duration = kDefaultDuration;
  std::chrono::nanoseconds log_interval = kDefaultLogInterval;
  std::uint32_t thread_count = 0;  // 0: all online CPUs
  std::optional<std::uint64_t> max_buffer_size;
  std::optional<std::uint32_t> files_per_thread;
  // vioperf: bytes of files per directory. gpcheckperf: bytes over all the
  // directories; when not given (data_size_given false), twice the host's RAM.
  std::uint64_t data_size = kDefaultFullDataSize;
  bool data_size_given = false;
  bool preserve_files = false;
  std::optional<bool> disable_crc;
  std::optional<bool> disable_direct_io;
  bool debug = false;
  std::vector<std::string> directories;  // empty: the configured ones; hdfs:// URLs are read over WebHDFS
  std::string hdfs_ca_file;              // HTTPS to the HDFS cluster: trust these CAs instead of the system's
  // HDFS URLs must name a cluster of the configuration (hdfs::CheckConfiguredCluster);
  // false only for `hostperf io`, whose operator types the URL.
  bool hdfs_confined = true;
};

// Parses a JSON options object (unknown keys, wrong types and bad values
// are errors naming the key). `duration`: the run's length (the run API's
// top-level "duration"), which the options' own "duration" overrides.
Result<FullRunOptions> ParseFullRunOptions(const nlohmann::json& options,
                                           std::optional<std::chrono::nanoseconds> duration = std::nullopt);
// ProbeModule::parse_options.
Result<std::shared_ptr<const ProbeOptions>> ParseDiskModuleOptions(const nlohmann::json& options,
                                                                   std::optional<std::chrono::nanoseconds> duration);

// `hostperf io [vioperf options] [DIR...]`: the probe options plus what only
// the CLI handles.
struct IoCommand {
  bool help = false;
  FullRunOptions options;
  std::string log_file;  // empty: results<date-time>.json
  bool condense_log = false;
  // --json: the result (the run API's shape) on stdout instead of the tables;
  // the JSON log is then written only when --log-file names one.
  bool json = false;
};
Result<IoCommand> ParseIoCommand(const std::vector<std::string>& args);

extern const char* const kIoUsage;

}  // namespace hostperf::probes::disk
