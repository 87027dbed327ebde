#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/result.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::check {

// gpcheckperf's -r letters: d disk, s stream, and one network mode: N parallel
// pairs, n serial pairs, M full matrix.
enum class NetMode { kNone, kParallel, kSerial, kMatrix };

struct TestSelection {
  bool disk = false;
  bool stream = false;
  NetMode net = NetMode::kNone;
};

// "dsN" -> {disk, stream, parallel}. Errors on an empty string, unknown
// letters and more than one network mode.
Result<TestSelection> ParseTestSelection(std::string_view letters);

// `hostperf check [-d DIR]... [-h HOST]... [-r dsNnM] [-D] [-v]`, plus gpcheckperf's
// -S SIZE, -B SIZE and --duration TIME for the disk test, and
// --stream-size ELEMENTS for the stream test.
struct CheckOptions {
  std::vector<std::string> directories;
  std::vector<std::string> hosts;  // empty: the local host alone
  TestSelection tests;             // gpcheckperf's default: -r dsn
  bool per_host = false;           // -D
  bool verbose = false;            // -v
  bool help = false;
  // The disk probe's full-run options: "directories" from -d, "data_size"
  // from -S SIZE, "max_buffer_size" from -B SIZE, "duration" from
  // --duration TIME (passed on as given; the disk probe validates them).
  nlohmann::json disk_options = nlohmann::json::object();
  // The memory probe's full-run options: "array_elements" from our own
  // --stream-size ELEMENTS (gpcheckperf's stream binary has a fixed size).
  nlohmann::json memory_options = nlohmann::json::object();
};
Result<CheckOptions> ParseCheckArgs(const std::vector<std::string>& args);

// The RESULT block's input: one entry per host and the network links. Every
// figure is in bytes and seconds; the formatter converts with each original
// tool's unit (disk: MiB/s like multidd; stream: 10^6 B/s like STREAM;
// network: MiB/s like netperf -f M).
//
// {
//   "hosts": [
//     {"host": "sdw13",
//      "disk": {"write": {"bytes": 202537697280, "seconds": 85.0},
//               "read":  {"bytes": 202537697280, "seconds": 64.6}},
//      "stream": {"bytes_per_second": 4603590000.0}}
//   ],
//   "network": {"mode": "parallel" | "serial" | "matrix",
//               "links": [{"from": "sdw13", "to": "sdw15", "bytes_per_second": 1186817720.0}]}
// }
//
// A host without a "disk" or "stream" member is left out of that section; a
// section with no host is not printed.
struct FormatOptions {
  bool per_host = false;  // -D: "-- per host bandwidth --" lines
  bool verbose = false;   // -v: matrix mode's per-link lines
};
std::string FormatCheckResult(const nlohmann::json& check, const FormatOptions& options);

// Building the input from probe results.
//
// memory probe result -> {"bytes_per_second": best copy rate} (gpcheckperf
// reports STREAM's Copy line); null when the result has no copy kernel.
nlohmann::json StreamEntryFromMemoryResult(const nlohmann::json& memory_result);

// disk probe result -> {"write": {...}, "read": {...}}: per test, the bytes
// over all directories and the time they took. Reads
// result["sequential"]["write"|"read"] = {"bytes", "seconds"} when the disk
// probe provides it, else sums result["directories"][]["tests"][] entries
// {"test": "Write"|"Read", "seconds", "bytes_written"|"bytes_read"} (the
// directories run one after another). Null when neither is there.
nlohmann::json DiskEntryFromDiskResult(const nlohmann::json& disk_result);

// net probe bisection result -> links: reads result["links"] = [{"from", "to",
// "bytes_per_second"}]. Empty array when absent.
nlohmann::json NetworkLinksFromNetResult(const nlohmann::json& net_result);

// Running the checks. `run_full` runs one probe's full mode locally (the
// CLI's RunFull). Remote hosts need the run API (a later issue): until then
// a check naming a host other than this one fails before running anything.
using FullRunner = std::function<ProbeOutcome(std::string_view probe, const nlohmann::json& options)>;

struct CheckRun {
  nlohmann::json check = nlohmann::json::object();  // FormatCheckResult's input
  std::vector<std::string> errors;                  // one line each, for stderr
  std::vector<std::string> notes;                   // gpcheckperf-style [Info]/[Warning] lines, for stdout
  bool ran = false;                                 // false: nothing ran (e.g. remote hosts)
};

// Whether `host` names this machine (localhost, a loopback address, or its
// host name).
bool IsLocalHost(std::string_view host, std::string_view local_name);

CheckRun RunCheck(const CheckOptions& options, const FullRunner& run_full, const std::string& local_name);

std::string_view ToString(NetMode mode);  // "parallel", "serial", "matrix", "none"

}  // namespace hostperf::probes::check
