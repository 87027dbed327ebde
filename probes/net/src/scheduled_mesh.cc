#include "scheduled_mesh.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "hostperf/probes/net/module.h"
#include "hostperf/probes/stats.h"

namespace hostperf::probes::net {

using nlohmann::json;

ScheduledMesh::ScheduledMesh(MeshMetrics& metrics, InterfaceMetrics& interface_metrics, ResponderHost& responder,
                             PeerList& peer_list, PeerAssignment assignment, RouteLookup route,
                             const SystemRoots& roots, const hostperf::Clock& clock)
    : metrics_(metrics),
      interface_metrics_(interface_metrics),
      responder_(responder),
      peer_list_(peer_list),
      assignment_(std::move(assignment)),
      route_(std::move(route)),
      roots_(roots),
      clock_(clock) {}

ProbeOutcome ScheduledMesh::Run(const ScheduledContext& ctx) {
  const auto& net = ctx.Settings<NetProbeConfig>();
  // A responder that could not bind (a port still held by another process)
  // is retried every run, so it recovers without a restart.
  if (!responder_.Error().empty()) responder_.Apply(net);
  const auto secret = responder_.ClientSecret(net);
  if (!secret) {
    const std::string responder_error = responder_.Error();
    if (!responder_error.empty()) {
      return ProbeOutcome::Failure("responder_down", "peer responder not running: " + responder_error);
    }
    return ProbeOutcome::Failure(secret.failure());
  }
  std::vector<std::string> errors;
  const std::vector<PeerSpec> chosen = ChoosePeers(net, errors);
  if (chosen.empty()) return ProbeOutcome::Skipped("no_peers", "no peers to probe (no usable peers configured)");

  // The interface toward each peer and the devices below it, once per run.
  InterfaceCache interfaces(roots_, route_);
  Paths paths;
  const Pings pings = Ping(ctx, net, *secret, chosen, interfaces, paths);
  json result = {{"mode", "scheduled"}, {"peers", json::array()}, {"errors", errors}, {"findings", json::array()}};
  Hosts up = Record(pings, *secret, interfaces, paths, result);
  // Peers cannot probe this host while its responder is down: a fault of
  // this host, named as such rather than as its peers' silence.
  if (const std::string responder_error = responder_.Error(); !responder_error.empty()) {
    if (!up.empty()) {
      result["throughput"] = Throughput(ctx, net, *secret, std::move(up), interfaces, paths, result["findings"]);
    }
    return ProbeOutcome::Failure("responder_down", "peer responder not running: " + responder_error, result);
  }
  if (!pings.resolved.empty() && up.empty()) {
    return ProbeOutcome::Failure("all_peers_down", "no peer answered", result);
  }
  result["throughput"] = Throughput(ctx, net, *secret, std::move(up), interfaces, paths, result["findings"]);
  return ProbeOutcome::Success(result);
}

std::vector<PeerSpec> ScheduledMesh::ChoosePeers(const NetProbeConfig& net, std::vector<std::string>& errors) {
  bool own_responder = false;
  const auto all = peer_list_.Read(net, responder_.DefaultPort(net), &errors, &own_responder);
  responder_.SetPlanPeers(all);  // re-resolved only when the list changed
  if (errors != last_errors_) {  // logged when they change, not every run
    for (const auto& e : errors) spdlog::warn("net: {}", e);
    last_errors_ = errors;
  }
  metrics_.peers_file_errors.Increment(static_cast<double>(peer_list_.file().failures() - peers_file_failures_seen_));
  peers_file_failures_seen_ = peer_list_.file().failures();
  PublishPeersFileValid(net.peers_file.empty() ? std::nullopt : std::optional<bool>(peer_list_.file().valid()));

  std::vector<PeerSpec> chosen = all;  // the own responder, when nothing is configured
  std::size_t observers = 0;
  std::size_t over_cap = 0;
  if (!own_responder) {
    // Recomputed only when the membership, self, k or this responder's
    // address or ports changed.
    const Assignment& assignment = assignment_.Assign(net, all, responder_.Ports(), responder_.DefaultPort(net));
    chosen = assignment.observed;
    // A list naming only this host (a fleet of one, or a test): ping that
    // entry, as with nothing configured, so that the probe and the
    // responder are still exercised rather than skipped for ever.
    if (chosen.empty() && assignment.self_is_member && all.size() == 1) chosen = all;
    if (chosen.size() > net.max_peers_per_cycle) {
      over_cap = chosen.size() - net.max_peers_per_cycle;
      chosen.resize(net.max_peers_per_cycle);  // the highest-scoring ones: stable under the cap too
    }
    observers = std::min<std::size_t>(net.observers, all.empty() ? 0 : all.size() - 1);
    PublishSelf(assignment.self_is_member ? std::optional<std::string>(assignment.self) : std::nullopt);
  } else {
    PublishSelf(std::nullopt);
  }
  metrics_.peers.Add({{"set", "known"}}).Set(static_cast<double>(all.size()));
  metrics_.peers.Add({{"set", "probed"}}).Set(static_cast<double>(chosen.size()));
  metrics_.peers.Add({{"set", "observers"}}).Set(static_cast<double>(observers));
  metrics_.peers.Add({{"set", "over_cap"}}).Set(static_cast<double>(over_cap));
  ExpireSeries(chosen);
  return chosen;
}

ScheduledMesh::Pings ScheduledMesh::Ping(const ScheduledContext& ctx, const NetProbeConfig& net, const Secret& secret,
                                         const std::vector<PeerSpec>& chosen, InterfaceCache& interfaces,
                                         Paths& paths) {
  Pings pings;
  pings.resolved = Resolve(chosen);
  std::vector<PeerTarget> targets;
  for (const auto& peer : pings.resolved) {
    if (!peer.address) continue;
    targets.push_back({peer.spec.name, *peer.address});
    auto& devices = paths.by_peer[peer.spec.name] = DevicesToward(interfaces, *peer.address);
    for (const WatchedDevice& device : devices) {
      if (paths.watched_names.insert(device.name).second) paths.watched.push_back(device);
    }
  }
  LatencyOptions latency;
  latency.packets = net.packets_per_cycle;
  latency.interval = net.packet_interval;
  latency.reply_timeout = net.reply_timeout;
  const Burst burst(roots_, paths.watched);
  pings.measured = MeasureLatency(targets, latency, secret, [&] { return ctx.ShouldStop(); });
  pings.deltas = burst.End(/*tcp=*/false);
  CountDeltas(pings.deltas);
  PublishInterfaces(interfaces, paths.watched_names);
  pings.probed_at = clock_.UnixSeconds();
  return pings;
}

Hosts ScheduledMesh::Record(const Pings& pings, const Secret& secret, InterfaceCache& interfaces, Paths& paths,
                            json& result) {
  Hosts up;
  std::size_t target_index = 0;
  for (const auto& peer : pings.resolved) {
    const prometheus::Labels labels = {{"peer", peer.spec.name}};
    json entry = {{"peer", peer.spec.name}};
    metrics_.last_probe.Add(labels).Set(pings.probed_at);
    // Every peer in the set has the same series (an unresolved one: nothing sent).
    metrics_.sent.Add(labels);
    metrics_.lost.Add(labels);
    auto& histogram = metrics_.rtt.Add(labels, RttBuckets());
    if (!peer.address) {
      metrics_.up.Add(labels).Set(0);
      entry["up"] = false;
      entry["error"] = peer.address.error();
      result["peers"].push_back(entry);
      continue;
    }
    const LatencyResult& r = pings.measured[target_index++];
    const bool peer_up = r.received > 0;
    metrics_.up.Add(labels).Set(peer_up ? 1 : 0);
    metrics_.sent.Add(labels).Increment(r.sent);
    metrics_.lost.Add(labels).Increment(r.lost());
    for (const double rtt : r.rtt_seconds) histogram.Observe(rtt);
    if (r.clock_offset_seconds) metrics_.offset.Add(labels).Set(*r.clock_offset_seconds);
    entry["up"] = peer_up;
    entry["address"] = peer.address->ToString();
    entry["sent"] = r.sent;
    entry["lost"] = r.lost();
    entry["rtt_median_seconds"] = Median(r.rtt_seconds);
    entry["clock_offset_seconds"] = r.clock_offset_seconds ? json(*r.clock_offset_seconds) : json(nullptr);
    const auto& devices = paths.by_peer[peer.spec.name];
    if (peer_up) {
      up.emplace_back(peer.spec.name, *peer.address);
      RefreshRemoteMtu(peer.spec.name, *peer.address, secret);
    }
    entry["interface"] = PeerInterfaceJson(peer.spec.name, interfaces, *peer.address, RemoteMtu(peer.spec.name));
    PublishPeerInterface(peer.spec.name, interfaces, devices, result["findings"]);
    if (r.lost() > 0 && r.sent > 0) {
      const std::string text =
          Attribute(fmt::format("ping loss {:.1f}%", 100.0 * r.lost() / r.sent), peer.spec.name, devices, pings.deltas);
      entry["attribution"] = text;
      result["findings"].push_back(text);
    }
    result["peers"].push_back(entry);
  }
  return up;
}

}  // namespace hostperf::probes::net
