#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::net {

using namespace std::chrono_literals;

// [probes.net]
struct NetProbeConfig : config::ProbeSection {
  static constexpr std::string_view kName = "net";
  std::string bind_address;  // empty: loopback only when no secret_file
  std::vector<std::uint16_t> ports{14159};
  std::string secret_file;
  std::vector<std::string> peers;
  std::string peers_file;
  // An empty peers_file list replacing a non-empty one is refused as a bad
  // edit (the last good list is kept) unless this is true.
  bool allow_empty_peers_file = false;
  // This host's entry in the peer list; empty: found by address and port.
  std::string self;
  // Observers per target (target-centric rendezvous over the membership).
  std::uint32_t observers = 8;
  // Hard cap on peers probed per run (the observed set is about `observers`).
  std::uint32_t max_peers_per_cycle = 32;
  // Latency: UDP pings per peer per run, sent open-loop every packet_interval.
  std::uint32_t packets_per_cycle = 20;
  config::Duration packet_interval = 10ms;
  config::Duration reply_timeout = 500ms;  // wait for replies after the last ping
  // Scheduled throughput burst: one peer per run, TCP and UDP alternating,
  // within budget.net_bytes_per_hour.
  config::Duration throughput_duration = 250ms;
  std::uint64_t throughput_rate = 32 * config::kMiB;  // bytes per second
  std::uint32_t udp_datagram_size = 8192;             // bytes, 64 to 65000
  // Responder: TCP connections at once (also the connection test's maximum)
  // and UDP requests per second per source address.
  std::uint32_t max_connections = 64;
  std::uint32_t rate_limit = 1000;
  // Plans (throughput among all hosts, sent by a full run's coordinator):
  // this host's limits, whoever sends them. A plan's total sending rate must
  // be above 0 and at most plan_max_rate unless plan_unlimited_rate is set
  // (then any rate, 0 "unlimited" too); its duration at most
  // plan_max_duration; its peers at most plan_max_sessions, each a member of
  // this host's peer list (peers plus peers_file).
  std::uint64_t plan_max_rate = 2048 * config::kMiB;  // bytes per second: the top of vnetperf's ladder
  bool plan_unlimited_rate = false;
  config::Duration plan_max_duration = 10s;
  std::uint32_t plan_max_sessions = 32;
  // Orchestration (protocol revision 4): plans are taken only when signed by
  // the key in orchestration_public_key_file (none: no plans at all); a full
  // run on this host signs its plans with orchestration_key_file (none: it
  // measures throughput from this host to each, not among all at once).
  std::string orchestration_public_key_file;
  std::string orchestration_key_file;
};

// vnetperf: the net probe's module (registered from its folder: probes/CMakeLists.txt).
extern const ProbeModule kModule;

// The headline figures of a net result: RTT (200 / 1000 µs), clock offset
// (1 s) and TCP throughput (100 / 800 MB/s; information when rate-capped
// below 800), per peer or node; for a scheduled result also "peers_down"
// ("3 of 4 peers down", fail when any is) and one failing "peer_up" per down
// or unresolved peer.
std::vector<Figure> NetFigures(const nlohmann::json& result);

}  // namespace hostperf::probes::net
