#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/base/clock.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/peers.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::net {

struct NetProbeConfig;  // module.h

// The network probe (vnetperf as a probe) and its peer responder, which the
// daemon starts through Probe::StartServices.
//
// Full-run options (FullRunContext::options), all optional:
//   {"tests": ["latency", "tcp-throughput", "udp-throughput", "connections"],  // none: all
//    "datarate": 0,            // MB/s (2^20 bytes); 0: the ladder 32 ... 2048
//    "duration": 1,            // per test and rate: seconds, or a duration such as "1.5s"
//    "hosts": ["h1", "h2:14160"],  // none: the configured peers
//    "ignore_bad_hosts": false,
//    "ports": [14159]}         // the first is the default port of hosts without one
std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps);

// What the net probe reads from the host, replaceable in tests.
struct NetProbeSeams {
  // This host's addresses, numeric as inet_ntop writes them; a member at one
  // of them on a responder port is this host. Default: getifaddrs.
  std::function<std::vector<std::string>()> local_addresses;
  // Wall clock of hostperf_net_peer_last_probe_timestamp_seconds; not owned,
  // outlives the probe. Default: the system clock.
  const Clock* clock = nullptr;
  // The interface toward an address (numeric), for the probe's attribution
  // and the responder's MTU. Default: rtnetlink (NetlinkRouteInterface).
  std::function<Result<std::string>(const std::string& address)> route_interface;
  // A member's address (numeric, no port; nullopt when it does not resolve),
  // to find this host among the members. Default: getaddrinfo.
  std::function<std::optional<std::string>(const PeerSpec&)> resolve;
};
std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps, NetProbeSeams seams);

// `--config.check`: whether this host finds itself in probes.net's peers and
// peers_file as the daemon does (net.self, else the member at one of its
// addresses on a responder port). A warning line saying what the operator
// should check, or nullopt when the host is found or no list is configured.
// Name resolution is given at most `bound` in all (a slow resolver is a
// warning too, never a hang).
std::optional<std::string> CheckSelfInPeers(const NetProbeConfig& net, const NetProbeSeams& seams,
                                            std::chrono::milliseconds bound);

// The tests a full run knows, in vnetperf's order.
const std::vector<std::string>& FullRunTests();

// A full run's options (see above), parsed.
inline constexpr std::chrono::seconds kMaxTestDuration{60};
struct NetOptions : ProbeOptions {
  std::vector<std::string> tests;                               // empty: all
  double datarate = 0;                                          // MB/s; 0: the ladder
  std::chrono::nanoseconds duration = std::chrono::seconds(1);  // per test and rate, at most kMaxTestDuration
  std::optional<std::vector<std::string>> hosts;                // none: the configured peers
  bool ignore_bad_hosts = false;
  // none: [probes.net] ports. With three or more, vnetperf's use: latency
  // and connections on the first, TCP throughput on the second, UDP on the third.
  std::optional<std::vector<std::uint16_t>> ports;
  // The connections test's target per host; none: probes.net.max_connections.
  std::optional<std::uint32_t> max_connections;
  // Bare hosts over SSH (remote.h): each host's own one-time secret, by its
  // entry in `hosts`; empty: probes.net.secret_file.
  std::map<std::string, std::vector<std::uint8_t>> host_secrets;
  // A one-time orchestration key (bare hosts over SSH: their peers trust its
  // public key only); none: probes.net.orchestration_key_file.
  std::shared_ptr<const OrchestrationKey> orchestration_key;
};
// Parses full-run options (an error names the first bad field). `duration`:
// the run's length (the run API's top-level "duration"), which the options'
// own "duration" (a duration string or a number of seconds) overrides.
Result<NetOptions> ParseNetOptions(const nlohmann::json& options,
                                   std::optional<std::chrono::nanoseconds> duration = std::nullopt);
// ProbeModule::parse_options.
Result<std::shared_ptr<const ProbeOptions>> ParseNetModuleOptions(const nlohmann::json& options,
                                                                  std::optional<std::chrono::nanoseconds> duration);

// vnetperf's banners and tables from a full run's JSON result.
std::string FormatVnetperfReport(const nlohmann::json& result);

// The same report printed as a run goes (vnetperf prints each host's row as
// its test ends): Entry() for each of the run's reports (a row with its
// "kind": "bad_host", "latency", "tcp-throughput", "udp-throughput",
// "connections"), opening a table with its banner and header when the kind
// changes; Finish() closes the last table and adds the result's interfaces
// and findings.
class VnetperfStream {
 public:
  std::string Entry(const nlohmann::json& entry);
  std::string Finish(const nlohmann::json& result);

 private:
  std::string Close();
  std::string open_table_;
  bool bad_hosts_ = false;
};

}  // namespace hostperf::probes::net
