// The scheduled mesh's throughput burst (one peer per run, TCP and UDP in
// turn, within the budget) and the peers' MTUs that hellos bring back.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "hostperf/probes/net/module.h"
#include "result_rows.h"
#include "scheduled_mesh.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;

// A peer's MTU (hello reply) is asked again after this long.
constexpr auto kRemoteMtuRefresh = std::chrono::minutes(10);

}  // namespace

json ScheduledMesh::Throughput(const ScheduledContext& ctx, const NetProbeConfig& net, const Secret& secret, Hosts up,
                               InterfaceCache& interfaces, Paths& paths, json& findings) {
  const auto skip = [&](const char* reason) {
    metrics_.throughput_skipped.Add({{"reason", reason}}).Increment();
    return json{{"skipped", reason}};
  };
  // Published even when no burst runs: alert rules compare thresholds with it
  // so that a cap below a threshold never reads as a slow network.
  metrics_.throughput_rate_limit.Set(static_cast<double>(net.throughput_rate));
  if (net.throughput_duration.count() == 0) return json{{"skipped", "disabled"}};
  if (up.empty()) return skip("no_peer");
  // A stable order, so that the round robin reaches every peer although the
  // rendezvous choice is ordered by score.
  std::sort(up.begin(), up.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto planned = static_cast<std::uint64_t>(static_cast<double>(net.throughput_rate) *
                                                  std::chrono::duration<double>(net.throughput_duration).count());
  ImpactBudget& budget = *ctx.budget;
  if (budget.TrySpend(BudgetResource::kNetBytes, static_cast<double>(planned))) return skip("budget");
  // Round robin over peers; a BUSY peer keeps its turn and is retried next run.
  const auto& [name, address] = up[next_throughput_peer_ % up.size()];
  ThroughputOptions options;
  options.test = next_is_udp_ ? ThroughputTest::kUdp : ThroughputTest::kTcp;
  options.duration = net.throughput_duration;
  options.rate_bytes_per_second = net.throughput_rate;
  options.datagram_size = net.udp_datagram_size;
  const Burst burst(roots_, paths.by_peer[name]);
  const auto r = RunThroughput(address, options, secret, [&] { return ctx.ShouldStop(); });
  const CounterDeltas deltas = burst.End(options.test == ThroughputTest::kTcp);
  CountDeltas(deltas);
  if (r.peer_mtu) remote_mtu_[name] = {r.peer_mtu, clock_.Now()};
  // Settle the reservation with what was actually sent (less if cut short).
  budget.Refund(BudgetResource::kNetBytes, static_cast<double>(planned) - static_cast<double>(r.bytes_sent));
  metrics_.throughput_bytes.Add({{"peer", name}}).Increment(static_cast<double>(r.bytes_sent));
  const char* test = next_is_udp_ ? "udp-throughput" : "tcp-throughput";
  if (r.outcome == SessionOutcome::kBusy) return skip("busy");
  if (r.outcome != SessionOutcome::kOk) {
    spdlog::warn("net: {} to {}: {}", test, name, r.error);
    skip("error");
    ++next_throughput_peer_;
    return PairThroughputRow(VnetperfDate(), test, net.throughput_rate / kMiB, name, r);
  }
  const prometheus::Labels labels = {{"peer", name}};
  if (options.test == ThroughputTest::kTcp) {
    metrics_.tcp.Add(labels).Set(r.ReceivedBytesPerSecond());
  } else {
    metrics_.udp.Add(labels).Set(r.ReceivedBytesPerSecond());
    metrics_.udp_loss.Add(labels).Set(r.LossRatio());
    metrics_.udp_jitter.Add(labels).Set(r.jitter_seconds);
    ++next_throughput_peer_;  // both tests done for this peer
  }
  next_is_udp_ = !next_is_udp_;
  json row = PairThroughputRow(VnetperfDate(), test, net.throughput_rate / kMiB, name, r);
  AttributeRow(r, options.test, static_cast<double>(net.throughput_rate), interfaces, burst.devices(), deltas, row,
               findings);
  return row;
}

std::optional<std::uint32_t> ScheduledMesh::RemoteMtu(const std::string& peer) const {
  const auto it = remote_mtu_.find(peer);
  return it == remote_mtu_.end() ? std::nullopt : it->second.mtu;
}

// A hello to a peer whose MTU is unknown or old: one TCP handshake per peer
// every kRemoteMtuRefresh (a throughput burst's hello refreshes it too).
void ScheduledMesh::RefreshRemoteMtu(const std::string& peer, const SocketAddress& address, const Secret& secret) {
  const auto now = clock_.Now();
  const auto it = remote_mtu_.find(peer);
  if (it != remote_mtu_.end() && now - it->second.at < kRemoteMtuRefresh) return;
  const auto hello = Hello(address, secret, kHelloTimeout);
  // A failed hello is retried next time; an old peer's "unknown" is kept.
  remote_mtu_[peer] = {hello ? hello->mtu : std::nullopt, now};
}

}  // namespace hostperf::probes::net
