#include "net_metrics.h"

#include "hostperf/probes/net/responder.h"

namespace hostperf::probes::net {

namespace {

template <typename Builder>
auto& Family(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

}  // namespace

const prometheus::Histogram::BucketBoundaries& RttBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {10e-6,  25e-6,  50e-6,  100e-6, 200e-6, 300e-6,
                                                                   500e-6, 750e-6, 1e-3,   2e-3,   5e-3,   10e-3,
                                                                   25e-3,  50e-3,  100e-3, 250e-3, 500e-3, 1.0};
  return kBuckets;
}

MeshMetrics::MeshMetrics(prometheus::Registry& registry)
    : rtt(Family(prometheus::BuildHistogram(), "hostperf_net_rtt_seconds",
                 "UDP ping-pong round-trip time to a peer (responder time removed).", registry)),
      sent(
          Family(prometheus::BuildCounter(), "hostperf_net_packets_sent_total", "UDP pings sent to a peer.", registry)),
      lost(Family(prometheus::BuildCounter(), "hostperf_net_packets_lost_total",
                  "UDP pings to a peer that got no reply in time.", registry)),
      offset(Family(prometheus::BuildGauge(), "hostperf_net_clock_offset_seconds",
                    "Peer clock minus local clock (NTP formula, minimum-delay sample).", registry)),
      up(Family(prometheus::BuildGauge(), "hostperf_net_peer_up",
                "1 if the peer answered pings in the last run, else 0.", registry)),
      tcp(Family(prometheus::BuildGauge(), "hostperf_net_tcp_throughput_bytes_per_second",
                 "TCP throughput to a peer in the last burst (bytes the peer received per second).", registry)),
      udp(Family(prometheus::BuildGauge(), "hostperf_net_udp_throughput_bytes_per_second",
                 "UDP throughput to a peer in the last burst (bytes the peer received per second).", registry)),
      udp_loss(Family(prometheus::BuildGauge(), "hostperf_net_udp_loss_ratio",
                      "Datagrams lost in the last UDP burst to a peer, 0-1.", registry)),
      udp_jitter(Family(prometheus::BuildGauge(), "hostperf_net_udp_jitter_seconds",
                        "RFC 3550 interarrival jitter of the last UDP burst to a peer.", registry)),
      throughput_rate_limit(
          Family(prometheus::BuildGauge(), "hostperf_net_throughput_rate_limit_bytes_per_second",
                 "Cap on the scheduled throughput bursts (probes.net.throughput_rate); a burst cannot read higher.",
                 registry)
              .Add({})),
      throughput_bytes(Family(prometheus::BuildCounter(), "hostperf_net_throughput_bytes_total",
                              "Bytes sent in scheduled throughput bursts (counts against the budget).", registry)),
      throughput_skipped(Family(prometheus::BuildCounter(), "hostperf_net_throughput_skipped_total",
                                "Scheduled throughput bursts not run, by reason (busy, budget, no_peer, error).",
                                registry)),
      peers(Family(prometheus::BuildGauge(), "hostperf_net_peers",
                   "Peers known (configured and from the peers file) and probed in the last run.", registry)),
      last_probe(Family(prometheus::BuildGauge(), "hostperf_net_peer_last_probe_timestamp_seconds",
                        "Unix time of the last scheduled ping run that included the peer.", registry)),
      peers_file_errors(Family(prometheus::BuildCounter(), "hostperf_net_peers_file_errors_total",
                               "Versions of probes.net.peers_file that could not be read or parsed, or that "
                               "emptied a non-empty list without probes.net.allow_empty_peers_file (the last good "
                               "list stays in use).",
                               registry)
                            .Add({})),
      peers_file_valid(Family(prometheus::BuildGauge(), "hostperf_net_peers_file_valid",
                              "1 when probes.net.peers_file's current version is the list in use, 0 when it was "
                              "refused (unreadable, unparsable, or an empty list not allowed) and the last good "
                              "list, if any, is in use. Absent without a peers_file.",
                              registry)),
      self_info(Family(prometheus::BuildGauge(), "hostperf_net_self_info",
                       "1, with peer = the entry of peers/peers_file this host found itself as (spelled as the "
                       "peer label of the per-peer series). Absent when it is not in the list. The mixin joins it "
                       "to the scrape target so that every alert names one host, whatever the peers file and the "
                       "scrape config call it.",
                       registry)) {
  // At 0 from start-up, so that increase() sees the first skip of each reason.
  for (const char* reason : kSkipReasons) throughput_skipped.Add({{"reason", reason}});
}

ResponderMetrics::ResponderMetrics(prometheus::Registry& registry)
    : requests(Family(prometheus::BuildCounter(), "hostperf_net_responder_requests_total",
                      "Authenticated requests the peer responder answered, by message type.", registry)),
      dropped(Family(prometheus::BuildCounter(), "hostperf_net_responder_dropped_total",
                     "Packets and connections the peer responder dropped, by reason.", registry)),
      up(Family(prometheus::BuildGauge(), "hostperf_net_responder_up", "1 while the peer responder serves, else 0.",
                registry)
             .Add({})),
      plans_refused(Family(prometheus::BuildCounter(), "hostperf_net_responder_plans_refused_total",
                           "Plans (throughput among all hosts) the peer responder refused against its own limits, "
                           "by reason.",
                           registry)),
      plan_sent_bytes(Family(prometheus::BuildCounter(), "hostperf_net_responder_plan_sent_bytes_total",
                             "Bytes the peer responder sent for plans (throughput among all hosts) it took part in.",
                             registry)
                          .Add({})) {
  for (const char* reason : kPlanRefusalReasons) plans_refused.Add({{"reason", reason}});
  for (const char* reason :
       {"bad_hmac", "bad_version", "malformed", "rate_limited", "source_blocked", "busy", "connection_limit"}) {
    dropped.Add({{"reason", reason}});
  }
}

InterfaceMetrics::InterfaceMetrics(prometheus::Registry& registry)
    : interface_errors(Family(prometheus::BuildCounter(), "hostperf_net_interface_errors_during_probe_total",
                              "Growth of an interface's error counter (statistics/<counter>) while the scheduled "
                              "pings and bursts to the peers it routes to ran.",
                              registry)),
      tcp_retransmits(Family(prometheus::BuildCounter(), "hostperf_net_tcp_retransmits_during_probe_total",
                             "Growth of the host's TCP RetransSegs (/proc/net/snmp) during scheduled TCP bursts.",
                             registry)
                          .Add({})),
      interface_info(Family(prometheus::BuildGauge(), "hostperf_net_interface_info",
                            "1 per interface that routes to a probed peer (and per device below it), one series "
                            "per lower device (bond or team member; \"\" when none).",
                            registry)),
      interface_speed(Family(prometheus::BuildGauge(), "hostperf_net_interface_speed_bytes_per_second",
                             "Link speed of an interface that routes to a probed peer (absent when unknown).",
                             registry)),
      interface_mtu(Family(prometheus::BuildGauge(), "hostperf_net_interface_mtu_bytes",
                           "MTU of an interface that routes to a probed peer.", registry)),
      peer_interface(Family(prometheus::BuildGauge(), "hostperf_net_peer_interface_info",
                            "1: the interface the route to the peer uses.", registry)),
      peer_mtu_mismatch(Family(prometheus::BuildGauge(), "hostperf_net_peer_mtu_mismatch",
                               "1 when the MTU toward the peer differs between the two ends (both known), else 0.",
                               registry)),
      peer_mtu(Family(prometheus::BuildGauge(), "hostperf_net_peer_mtu_bytes",
                      "MTU of the interface toward the peer, here (side=\"local\") and as the peer's hello reply "
                      "says (side=\"remote\").",
                      registry)) {}

}  // namespace hostperf::probes::net
