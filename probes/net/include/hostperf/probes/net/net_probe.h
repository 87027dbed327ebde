#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hostperf/probes/probe.h"

namespace hostperf::probes::net {

// The network probe (vnetperf as a probe) and its peer responder, which the
// daemon starts through Probe::StartServices.
//
// Full-run options (RunContext::options), all optional:
//   {"tests": ["latency", "tcp-throughput", "udp-throughput", "connections"],  // none: all
//    "datarate": 0,            // MB/s (2^20 bytes); 0: the ladder 32 ... 2048
//    "duration": 1,            // seconds per test and rate
//    "hosts": ["h1", "h2:14160"],  // none: the configured peers
//    "ignore_bad_hosts": false,
//    "ports": [14159]}         // the first is the default port of hosts without one
std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps);

// The tests a full run knows, in vnetperf's order.
const std::vector<std::string>& FullRunTests();
// Checks full-run options; an error message for the first bad field.
std::string ValidateNetOptions(const nlohmann::json& options);

// vnetperf's banners and tables from a full run's JSON result.
std::string FormatVnetperfReport(const nlohmann::json& result);

}  // namespace hostperf::probes::net
