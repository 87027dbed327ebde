#pragma once

// The sidecar face of the net probe: a scheduled, low-impact run. UDP pings
// to the peers this host observes (a stable subset of the mesh), one
// throughput burst to one of them within the budget, the counters of the
// interfaces they cross, all published as metrics. Internal to the net probe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "burst_attribution.h"
#include "hostperf/base/clock.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/probe.h"
#include "net_metrics.h"
#include "peer_set.h"
#include "responder_host.h"

namespace hostperf::probes::net {

struct NetProbeConfig;  // module.h

class ScheduledMesh {
 public:
  // Everything but `assignment` is borrowed and outlives the mesh.
  ScheduledMesh(MeshMetrics& metrics, InterfaceMetrics& interface_metrics, ResponderHost& responder,
                PeerList& peer_list, PeerAssignment assignment, RouteLookup route, const SystemRoots& roots,
                const hostperf::Clock& clock);

  // One scheduled run (runs never overlap). The result's "mode" is "scheduled".
  ProbeOutcome Run(const ScheduledContext& ctx);

 private:
  // The interfaces toward each peer, once per run.
  struct Paths {
    std::map<std::string, std::vector<WatchedDevice>> by_peer;
    std::vector<WatchedDevice> watched;  // every device of every path, once
    std::set<std::string> watched_names;
  };
  // One run's pings.
  struct Pings {
    std::vector<ResolvedPeer> resolved;
    std::vector<LatencyResult> measured;  // one per resolved peer with an address, in order
    CounterDeltas deltas;                 // what the interfaces' counters did meanwhile
    double probed_at = 0;                 // unix seconds
  };

  // scheduled_mesh.cc: the run.
  // The peers to probe this run (the observed set under the cap); publishes
  // the peer set's gauges and expires the series of peers that left it.
  std::vector<PeerSpec> ChoosePeers(const NetProbeConfig& net, std::vector<std::string>& errors);
  Pings Ping(const ScheduledContext& ctx, const NetProbeConfig& net, const Secret& secret,
             const std::vector<PeerSpec>& chosen, InterfaceCache& interfaces, Paths& paths);
  // Each pinged peer's series and result entry; the peers that answered.
  Hosts Record(const Pings& pings, const Secret& secret, InterfaceCache& interfaces, Paths& paths,
               nlohmann::json& result);

  // mesh_throughput.cc: the burst of this run.
  nlohmann::json Throughput(const ScheduledContext& ctx, const NetProbeConfig& net, const Secret& secret, Hosts up,
                            InterfaceCache& interfaces, Paths& paths, nlohmann::json& findings);
  std::optional<std::uint32_t> RemoteMtu(const std::string& peer) const;
  void RefreshRemoteMtu(const std::string& peer, const SocketAddress& address, const Secret& secret);

  // mesh_series.cc: the series that come and go with the peers and interfaces.
  void PublishSelf(const std::optional<std::string>& self);
  void PublishPeersFileValid(std::optional<bool> valid);
  void ExpireSeries(const std::vector<PeerSpec>& probed);
  void CountDeltas(const CounterDeltas& deltas);
  void PublishInterfaces(InterfaceCache& interfaces, const std::set<std::string>& devices);
  void PublishPeerInterface(const std::string& peer, InterfaceCache& interfaces,
                            const std::vector<WatchedDevice>& devices, nlohmann::json& findings);

  MeshMetrics& metrics_;
  InterfaceMetrics& interface_metrics_;
  ResponderHost& responder_;
  PeerList& peer_list_;
  PeerAssignment assignment_;
  RouteLookup route_;
  const SystemRoots& roots_;
  const hostperf::Clock& clock_;

  // What the attribution keeps between runs.
  struct RemoteMtuEntry {
    std::optional<std::uint32_t> mtu;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, RemoteMtuEntry> remote_mtu_;                              // by peer
  std::map<std::string, std::string> peer_interfaces_;                            // peer -> interface with a series
  std::map<std::string, std::vector<prometheus::Labels>> interface_info_labels_;  // device -> info series

  std::uint64_t peers_file_failures_seen_ = 0;
  std::vector<std::string> last_errors_;
  std::optional<std::string> self_info_peer_;  // the peer of hostperf_net_self_info's series
  std::set<std::string> series_peers_;         // peers that may have series
  std::size_t next_throughput_peer_ = 0;
  bool next_is_udp_ = false;
};

}  // namespace hostperf::probes::net
