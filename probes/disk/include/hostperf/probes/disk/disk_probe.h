#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "hostperf/base/result.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::disk {

// vioperf as a probe: per directory, sequential Write, ReWrite, Read and
// SkipRead over the probe's own scratch files, every block CRC32C-verified.
// Scheduled runs: one pass of each test over bytes_per_run / 2 of files
// (Write and ReWrite together write bytes_per_run), idle I/O priority, an
// hourly byte budget and a free-space guard. Full runs: vioperf's duration,
// log interval and options (FullRunContext::options, see options.h); each
// directory and each table row is reported through FullRunContext::on_report
// ({"kind": "directory"} and {"kind": "row"}).
std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps);

// Seams for tests.
struct DiskProbeSeams {
  // Called on the run's thread after each test of a directory (Write,
  // ReWrite, Read, SkipRead), with the directory and the test's name, before
  // the next one starts.
  std::function<void(const std::string& directory, std::string_view test)> after_test;
};
std::unique_ptr<Probe> CreateDiskProbe(const ProbeDeps& deps, DiskProbeSeams seams);

// vioperf's report pieces, from the probe's JSON.
std::string FormatVioperfBanner(int physical_cores);
std::string FormatDirectoryLine(const nlohmann::json& directory);  // "Using direct io (...) for directory ..."
std::string FormatTableHeader();
// The block devices behind a directory and what each did during the run
// (the "members" report), with a line per slow member.
std::string FormatArrayReport(const nlohmann::json& report);
std::string FormatTableRow(const nlohmann::json& row);
// Banner, directory lines, header and every row of a finished run.
std::string FormatVioperfReport(const nlohmann::json& result);

// "results<YYYYMMDD-HHMMSS>.json" (vioperf's default log name).
std::string DefaultLogFileName();
// The JSON log: one indented document, or (condensed) one JSON object per
// line: a "run" line, one line per row, a "summary" line. `reason` and
// `message` are empty on success.
std::string FormatJsonLog(const nlohmann::json& result, const std::string& reason, const std::string& message,
                          bool condensed);
Result<void> WriteJsonLog(const std::string& path, const nlohmann::json& result, const std::string& reason,
                          const std::string& message, bool condensed);

}  // namespace hostperf::probes::disk
