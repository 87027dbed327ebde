#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/responder.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

// Throughput among all hosts at once (protocol revision 2, protocol.h): the
// coordinator's side, and what a responder's sending half runs.

PlanPeer ToPlanPeer(const SocketAddress& address);
SocketAddress FromPlanPeer(const PlanPeer& peer);

// What one host of a plan sends: a session with each peer at once, at
// plan.rate / peers each, for the plan's duration.
PlanReport SendToPlanPeers(const Plan& plan, std::span<const PlanPeer> peers, const Secret& secret,
                           const std::function<bool()>& should_stop, const RealtimeClock& realtime = RealtimeNs);

struct AllToAllOptions {
  ThroughputTest test = ThroughputTest::kTcp;
  std::chrono::nanoseconds duration = std::chrono::seconds(1);
  std::uint64_t rate_bytes_per_second = 0;  // each host's total sending rate; 0: unlimited
  std::size_t datagram_size = 8192;         // UDP
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(2);
  // How long after the planned end a host's report may still come; a host
  // silent past it is reported as failed (the run never waits for ever).
  std::chrono::nanoseconds report_grace = std::chrono::seconds(8);
  // Signs the plans (responders of revision >= 4 take no other); null: only
  // hosts of an older release (revision 2 or 3) can take part.
  const OrchestrationKey* orchestration_key = nullptr;
  // The most peers a host sends to (and receives from) at once: the run is
  // split into rounds of this fan-out (AllToAllSchedule). Lowered to half
  // the smallest connection limit the hosts advertise (room for a round's
  // sessions and the last round's still closing), and halved while a host
  // denies a plan (its probes.net.plan_max_sessions may be lower).
  std::size_t max_peers_per_round = kDefaultPlanMaxSessions;
  // Called as each round starts: its number (from 1), the rounds planned and
  // the hosts in it (progress on a terminal).
  std::function<void(std::size_t round, std::size_t rounds, std::size_t hosts)> on_round;
};

// The rounds of an all-to-all run among `hosts` hosts with at most
// `fan_out` peers each at once: host j of the ring sends, in the round that
// holds offset o, to host (j + o) mod hosts, and so receives from host
// (j - o) mod hosts. Round r holds offsets r*fan_out+1 .. (r+1)*fan_out
// (the last round fewer), so every host sends to and receives from every
// other exactly once, as many peers in each direction in each round, and
// at the plan's full rate throughout: ceil((hosts-1)/fan_out) rounds.
struct AllToAllRound {
  std::size_t first_offset = 1;
  std::size_t peers = 0;  // offsets first_offset .. first_offset+peers-1
};
std::vector<AllToAllRound> AllToAllSchedule(std::size_t hosts, std::size_t fan_out);

struct AllToAllHostResult {
  std::string name;
  bool ok = false;
  std::string error;       // why there is no report (unreachable, busy, denied, lost mid-test, silent)
  PlanReport report;       // when ok: the sum over the rounds
  std::size_t rounds = 0;  // rounds it reported in
  double SentSeconds() const { return report.sent_ns / 1e9; }
  double SentBytesPerSecond() const { return report.sent_ns > 0 ? report.bytes_sent / SentSeconds() : 0; }
  // Over the same window as the sends: every host sends for the duration.
  double ReceivedBytesPerSecond() const { return report.sent_ns > 0 ? report.bytes_received / SentSeconds() : 0; }
  double LossRatio() const {
    const double expected = static_cast<double>(report.packets_received + report.packets_lost);
    return expected > 0 ? report.packets_lost / expected : 0;
  }
};

// Runs all-to-all among `hosts` (each a revision-2 responder): every host
// sends to all the others and receives from them, at most
// options.max_peers_per_round at once (AllToAllSchedule; one round when
// the fan-out covers all the others), each round one plan. Hosts that refuse
// (busy, denied) or cannot be reached are left out and the rounds go on
// among the rest; `on_host` is called as each host's result is known (a
// host that took part, after the last round). Returns one result per host,
// in order, its report the sum over the rounds.
std::vector<AllToAllHostResult> RunAllToAll(std::span<const PeerTarget> hosts, const AllToAllOptions& options,
                                            const Secret& secret, const std::function<bool()>& should_stop,
                                            const std::function<void(const AllToAllHostResult&)>& on_host = {});

// Links between hosts under one plan (gpcheckperf's network test on bare
// hosts: a pair both ways): every host in `links` sends on exactly one link
// and receives on exactly one, since a responder takes as many plan
// sessions as its plan has peers. The coordinator offers each host its
// plan, signed as RunAllToAll's, then starts them all; each sends to its
// peer at options.rate_bytes_per_second for options.duration. A link's
// result is what its sender reports: its bytes sent and the time they took.
// When a host cannot take part, every link fails with why.
struct PlanLinkResult {
  bool ok = false;
  std::string error;  // why there is no figure
  PlanReport report;
  double SentBytesPerSecond() const { return report.sent_ns > 0 ? report.bytes_sent / (report.sent_ns / 1e9) : 0; }
};
std::vector<PlanLinkResult> RunPlanLinks(std::span<const PeerTarget> hosts,
                                         std::span<const std::pair<std::size_t, std::size_t>> links,
                                         const AllToAllOptions& options, const Secret& secret,
                                         const std::function<bool()>& should_stop);

}  // namespace hostperf::probes::net
