#pragma once

// The reference-tool face of the net probe: one full run, as vnetperf's
// (`hostperf net`, the run API, `hostperf check`). Every host must answer a
// hello first; then the latency table, the TCP and UDP throughput ladders
// (among all hosts at once when there are two or more and this host holds
// an orchestration key), the connections
// table, each row reported as it is known. Internal to the net probe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/module.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/probe.h"
#include "peer_set.h"
#include "responder_host.h"

namespace hostperf::probes::net {

class VnetperfRun {
 public:
  // One run's; the borrowed objects outlive it.
  VnetperfRun(const FullRunContext& ctx, ResponderHost& responder, PeerList& peer_list, const SystemRoots& roots,
              RouteLookup route);

  // The result's "mode" is "full".
  ProbeOutcome Run();

 private:
  using RemoteMtus = std::map<std::string, std::optional<std::uint32_t>>;

  // vnetperf_run.cc: the run around the tests.
  // The hosts that answered a hello (`result`'s bad_hosts the others), or
  // the outcome that ends the run.
  std::optional<ProbeOutcome> FindHosts(nlohmann::json& result, Hosts& hosts, RemoteMtus& remote_mtus);
  Hosts ReachableHosts(const std::vector<PeerSpec>& specs, nlohmann::json& bad_hosts, RemoteMtus& remote_mtus);
  // vnetperf's second and third ports: which of them `host`'s responder
  // answers a hello on (noted in answering_ports_).
  void ProbeTestPorts(const std::string& name, const SocketAddress& address);
  // The secret of the host named `name`: its own (bare hosts over SSH), else the shared one.
  const Secret& SecretFor(const std::string& name) const;
  PeerTarget TargetOf(const std::string& name, const SocketAddress& address) const;
  // What the run will take, for the progress line: every test runs for the
  // duration (per rate and host for throughput).
  void PlanProgress(std::size_t hosts);
  // The progress line at the start of `step`; `slot`: the step takes a duration.
  void Progress(const std::string& step, bool slot);
  // Which interface serves each host and both ends' MTUs (mismatches go to the findings).
  nlohmann::json Interfaces(const Hosts& hosts, RemoteMtus& remote_mtus);
  // The hosts as a throughput test reaches them (vnetperf's three ports).
  Hosts OnTestPort(const Hosts& hosts, const std::string& test) const;
  // One row as soon as it is known (the CLI prints it), tagged with its table.
  void Report(std::string_view kind, const nlohmann::json& row) const;

  // vnetperf_tests.cc: the tests.
  std::vector<double> Rates() const;
  nlohmann::json LatencyTable(const Hosts& hosts);
  nlohmann::json ThroughputLadder(const Hosts& hosts, const std::string& test);
  nlohmann::json AllToAllLadder(const Hosts& hosts, const std::string& test);
  nlohmann::json ConnectionTable(const Hosts& hosts);

  const FullRunContext& ctx_;
  ResponderHost& responder_;
  PeerList& peer_list_;
  const SystemRoots& roots_;
  const NetOptions& options_;  // the run's, or the defaults
  NetProbeConfig net_;         // the settings, with the options' hosts and ports
  std::set<std::string> tests_;
  Secret secret_;
  // Signs the plans among all hosts; none: throughput from this host to each.
  std::shared_ptr<const OrchestrationKey> orchestration_key_;
  InterfaceCache interfaces_;
  // What our own bursts moved on the interfaces when they fell short, and
  // the MTU mismatches.
  nlohmann::json findings_ = nlohmann::json::array();
  // The first host a throughput test could not measure, and why: the run
  // fails with it unless --ignore-bad-hosts.
  std::string unmeasured_;
  void NoteUnmeasured(const std::string& name, const std::string& test, const std::string& error);
  // (host, port) pairs beyond the first port whose responder answered.
  std::set<std::pair<std::string, std::uint16_t>> answering_ports_;
  std::chrono::steady_clock::time_point started_;
  std::size_t slots_ = 0;
  std::size_t done_ = 0;
};

}  // namespace hostperf::probes::net
