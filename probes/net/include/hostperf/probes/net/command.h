#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/net/remote.h"

namespace hostperf::probes::net {

// `hostperf net [vnetperf options] [tests]`, parsed.
struct NetCommand {
  NetOptions options;
  std::string output_file;  // empty: results.<timestamp>.json
  std::string log_level = "warn";
  bool condense = false;
  bool list_tests = false;
  bool help = false;
  // --json: the result (the run API's shape) on stdout instead of the tables;
  // the results file is then written only when --output-file names one.
  bool json = false;
  // Bare hosts over SSH (--ssh, --identity-file, --ssh-options, --scp-options,
  // --tmp-dir, --installed): hostperf-peer is started on options.hosts.
  std::optional<RemoteOptions> remote;
  std::vector<std::string> remote_hosts;  // with `remote`: [user@]host, from --hosts
};

extern const char* const kNetUsage;

// Parses vnetperf's options. --hosts takes a comma-separated list or a file
// with one host per line (or comma-separated). `ssh_by_default`: no secret
// is configured to reach hostperf daemons with, so hosts given without any
// SSH option and without :port are reached over SSH anyway, as vnetperf
// always does.
Result<NetCommand> ParseNetCommand(const std::vector<std::string>& args, bool ssh_by_default = false);

// vnetperf's default results file name: results.2022-03-29_10:23:51,548.json
std::string DefaultResultsFileName();

// Writes the JSON results (indented, or one line with condense); an error message on failure.
Result<bool> WriteResultsFile(const std::string& path, const nlohmann::json& result, bool condense);

}  // namespace hostperf::probes::net
