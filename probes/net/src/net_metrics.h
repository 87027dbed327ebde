#pragma once

// The net probe's metric families, registered in this order (the
// exposition's): the mesh's, the responder's, the interfaces'. Internal to
// the net probe; docs/metrics.md documents them.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace hostperf::probes::net {

// The buckets of hostperf_net_rtt_seconds.
const prometheus::Histogram::BucketBoundaries& RttBuckets();

// Reasons of hostperf_net_throughput_skipped_total (all exposed from start-up).
inline constexpr const char* kSkipReasons[] = {"busy", "budget", "no_peer", "error"};

// The scheduled mesh: per-peer latency, loss, clock offset and bursts, the
// peer set and this host's place in it.
struct MeshMetrics {
  explicit MeshMetrics(prometheus::Registry& registry);
  prometheus::Family<prometheus::Histogram>& rtt;
  prometheus::Family<prometheus::Counter>& sent;
  prometheus::Family<prometheus::Counter>& lost;
  prometheus::Family<prometheus::Gauge>& offset;
  prometheus::Family<prometheus::Gauge>& up;
  prometheus::Family<prometheus::Gauge>& tcp;
  prometheus::Family<prometheus::Gauge>& udp;
  prometheus::Family<prometheus::Gauge>& udp_loss;
  prometheus::Family<prometheus::Gauge>& udp_jitter;
  prometheus::Gauge& throughput_rate_limit;
  prometheus::Family<prometheus::Counter>& throughput_bytes;
  prometheus::Family<prometheus::Counter>& throughput_skipped;
  prometheus::Family<prometheus::Gauge>& peers;
  prometheus::Family<prometheus::Gauge>& last_probe;
  prometheus::Counter& peers_file_errors;
  prometheus::Family<prometheus::Gauge>& peers_file_valid;
  prometheus::Family<prometheus::Gauge>& self_info;
};

// The peer responder: requests answered, packets dropped, whether it serves.
struct ResponderMetrics {
  explicit ResponderMetrics(prometheus::Registry& registry);
  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Counter>& dropped;
  prometheus::Gauge& up;
  prometheus::Family<prometheus::Counter>& plans_refused;
  prometheus::Counter& plan_sent_bytes;
};

// The interfaces toward the probed peers: what they are and what their
// error counters did while the scheduled runs' own traffic crossed them.
struct InterfaceMetrics {
  explicit InterfaceMetrics(prometheus::Registry& registry);
  prometheus::Family<prometheus::Counter>& interface_errors;
  prometheus::Counter& tcp_retransmits;
  prometheus::Family<prometheus::Gauge>& interface_info;
  prometheus::Family<prometheus::Gauge>& interface_speed;
  prometheus::Family<prometheus::Gauge>& interface_mtu;
  prometheus::Family<prometheus::Gauge>& peer_interface;
  prometheus::Family<prometheus::Gauge>& peer_mtu_mismatch;
  prometheus::Family<prometheus::Gauge>& peer_mtu;
};

}  // namespace hostperf::probes::net
