#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/probe.h"

namespace hostperf::cluster {

// The outcome of a probe run, local or remote (probes/common).
using probes::ProbeOutcome;

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

// `hostperf check [-d DIR]... [-h HOST]... [-f HOSTFILE] [-r dsNnM] [-D] [-v]`,
// plus gpcheckperf's -S SIZE, -B SIZE and --duration TIME, our
// --stream-size ELEMENTS for the stream test, and how to reach other hosts:
// --api-port PORT (their hostperf_exporter, default 9580), --net-port PORT
// (their responder; default: this config's first probes.net port) and
// --token-file FILE (their run API token; default: this config's
// api.token_file).
inline constexpr std::uint16_t kDefaultApiPort = 9580;
inline constexpr double kDefaultNetSeconds = 15;  // gpcheckperf's --duration default

struct CheckOptions {
  std::vector<std::string> directories;
  std::vector<std::string> hosts;  // -h and the lines of -f; empty: the local host alone
  TestSelection tests;             // gpcheckperf's default: -r dsn
  bool per_host = false;           // -D
  bool verbose = false;            // -v
  bool help = false;
  bool json = false;  // --json: FormatCheckResult's input on stdout instead of the RESULT block
  // The disk probe's full-run options: method "gpcheckperf" (all
  // directories written at once, then read at once), "directories" from -d,
  // "data_size" (the total over them) from -S SIZE, "max_buffer_size" (the
  // block size) from -B SIZE, passed on as given (the disk probe validates
  // them and defaults to twice the RAM and 32 KB).
  nlohmann::json disk_options = nlohmann::json::object();
  // The memory probe's full-run options: "array_elements" from our own
  // --stream-size ELEMENTS (gpcheckperf's stream binary has a fixed size).
  nlohmann::json memory_options = nlohmann::json::object();
  // The network test: seconds per link (--duration, as gpcheckperf's netperf
  // runs; at most 60) at full speed.
  double net_seconds = kDefaultNetSeconds;
  std::uint16_t api_port = kDefaultApiPort;
  std::uint16_t net_port = 0;  // 0: the net probe's configured port
  std::string token_file;      // empty: api.token_file
  // The peers' --web.config.file: https:// (--tls, or implied by a CA or
  // client certificate), a CA file to trust, a client certificate and key,
  // basic auth with the password in a file (never on the command line).
  bool tls = false;
  // --insecure-http: other hosts over plain http, the token in clear; without
  // it (or --tls) a check that reaches another host is refused.
  bool insecure_http = false;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  std::string basic_auth_user;
  std::string basic_auth_password_file;
  // --ssh: the hosts have nothing installed (gpcheckperf's case): the CLI
  // copies hostperf-peer and itself (with the libraries it loads) to each
  // over SCP, runs the tests there over SSH and removes the copies. -h
  // values are then SSH destinations ([user@]host). Implied by the options
  // below, and by a check of other hosts with no run API token configured.
  bool ssh = false;
  std::string identity_file;             // --identity-file: ssh -i
  std::vector<std::string> ssh_options;  // --ssh-options "...": before ours
  std::vector<std::string> scp_options;  // --scp-options "..."
  std::string tmp_dir = "/tmp";          // --tmp-dir: where each host's copy goes
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
// reports STREAM's Copy line; the memory probe's ReadBestKernelRate); null
// when the result has no copy kernel.
nlohmann::json StreamEntryFromMemoryResult(const nlohmann::json& memory_result);

// disk probe result -> {"write": {...}, "read": {...}, "directories": [...]}:
// per test, the bytes over all directories and the time they took (the disk
// probe's ReadSequentialThroughput), then each directory's own figures with,
// from the gpcheckperf method, started_unix_seconds and
// finished_unix_seconds. Null when neither test has figures.
nlohmann::json DiskEntryFromDiskResult(const nlohmann::json& disk_result);

// Running the checks. `run_on` runs one probe's full mode on one host: the
// local host in-process, any other through its run API (the CLI decides with
// IsLocalHost). Hosts run their disk and stream tests at the same time, as
// gpcheckperf's do; `run_on` is called from several threads.
using HostRunner =
    std::function<ProbeOutcome(const std::string& host, std::string_view probe, const nlohmann::json& options)>;

struct CheckRun {
  nlohmann::json check = nlohmann::json::object();  // FormatCheckResult's input
  std::vector<std::string> errors;                  // one line each, for stderr
  std::vector<std::string> notes;                   // gpcheckperf-style [Info]/[Warning] lines, for stdout
  bool ran = false;                                 // false: nothing ran
};

// A -h value: "name", "name:API_PORT", "[v6]:API_PORT" or a bare IPv6 address.
struct HostSpec {
  std::string address;  // without brackets or port
  std::uint16_t api_port = kDefaultApiPort;
};
Result<HostSpec> ParseHostSpec(std::string_view spec, std::uint16_t default_api_port);

// Whether `host` names this machine (localhost, a loopback address, or its
// host name).
bool IsLocalHost(std::string_view host, std::string_view local_name);

// The network test's schedule: rounds of ordered links (from, to), indexes
// into the host list. Within a round every host sends on at most one link and
// receives on at most one, because a responder serves one throughput session
// at a time. Parallel pairs (N): hosts 0-1, 2-3, ... both ways in one round;
// an odd host out pairs with host 0 in a second round. Serial pairs (n): the
// same pairs, one pair per round. Full matrix (M): every ordered pair, as a
// round-robin tournament (n-1 rounds for an even count, n for an odd one).
using NetworkRound = std::vector<std::pair<std::size_t, std::size_t>>;
std::vector<NetworkRound> PlanNetworkRounds(std::size_t hosts, NetMode mode);

// The link rate (bytes per second received) that a net full run measured to
// `target` in its tcp-throughput test; nullopt with `error` set when that row
// is missing or its session did not complete.
std::optional<double> LinkRateFromNetResult(const nlohmann::json& net_result, const std::string& target,
                                            std::string* error);

// Progress as the check goes, for a terminal or a log. Either may be empty;
// both are called from the hosts' threads, one call at a time.
struct CheckProgress {
  // Each of CheckRun's notes as it is made: with -v, gpcheckperf's "[Info]"
  // lines for every test and link as it starts and as it ends.
  std::function<void(const std::string& note)> on_note;
  // What runs now, one short phrase ("disk test: 1/3 hosts done"), whatever -v.
  std::function<void(const std::string& step)> on_step;
};

// How a round of the network test (PlanNetworkRounds: pairs, both ways) is
// measured: each link (from, to) sends at full speed for `seconds`, all at
// once; per link, its rate in bytes per second or why not.
struct LinkMeasurement {
  std::optional<double> bytes_per_second;
  std::string error;
};
using NetworkLinks = std::vector<std::pair<std::string, std::string>>;
using RoundRunner = std::function<std::vector<LinkMeasurement>(const NetworkLinks& links, double seconds)>;

// `measure_round` empty: each link through `run_on`, its sender running the
// net probe at the receiver's responder (the run API's way;
// LinkRateFromNetResult).
CheckRun RunCheck(const CheckOptions& options, const HostRunner& run_on, const std::string& local_name,
                  const CheckProgress& progress = {}, const RoundRunner& measure_round = {});

// Remote text made safe for a terminal: every control character (C0, DEL,
// and the C1 range as UTF-8 encodes it, which includes the CSI that
// terminals act on) becomes \xNN, so a host's message cannot set a title,
// colour or rewrite a line. Printable text, UTF-8 included, is unchanged.
std::string TerminalSafe(std::string_view text);

// The largest bandwidth a host can report, in bytes per second: 10^14
// (100 TB/s), above the memory bandwidth of any one machine today (a
// GPU's HBM stacks total a few TB/s), its disks' and its links'. A figure
// above it, negative, NaN or infinite is refused, the host named.
inline constexpr double kMaxBytesPerSecond = 1e14;

std::string_view ToString(NetMode mode);  // "parallel", "serial", "matrix", "none"

}  // namespace hostperf::cluster
