#include "hostperf/probes/net/net_probe.h"

#include <arpa/inet.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <deque>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <thread>
#include <utility>

#include "hostperf/base/files.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/module.h"
#include "hostperf/probes/net/peers.h"
#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/responder.h"
#include "hostperf/probes/net/results.h"
#include "hostperf/probes/stats.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr double kMiB = 1024.0 * 1024.0;
const std::vector<double> kLadder = {32, 64, 128, 256, 512, 640, 768, 1024, 2048};
// The latency test paces its pings over --duration, one every 2 ms (500 in
// vnetperf's default second), between 20 and 6000 pings (so further apart
// beyond 12 s). bench/net compares the RTT with sockperf at this pace.
constexpr auto kFullPingSpacing = std::chrono::milliseconds(2);
constexpr std::uint32_t kFullMinPings = 20;
constexpr std::uint32_t kFullMaxPings = 6000;
constexpr auto kHelloTimeout = std::chrono::seconds(2);

const prometheus::Histogram::BucketBoundaries& RttBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = {10e-6,  25e-6,  50e-6,  100e-6, 200e-6, 300e-6,
                                                                   500e-6, 750e-6, 1e-3,   2e-3,   5e-3,   10e-3,
                                                                   25e-3,  50e-3,  100e-3, 250e-3, 500e-3, 1.0};
  return kBuckets;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto index = static_cast<std::size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// vnetperf's date column, now.
std::string VnetperfDate() { return VnetperfTimestamp(std::chrono::system_clock::now()); }

template <typename Builder>
auto& Family(Builder builder, const char* name, const char* help, prometheus::Registry& registry) {
  return builder.Name(name).Help(help).Register(registry);
}

std::string SelfName(const NetProbeConfig& config, std::uint16_t port) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(host) + ":" + std::to_string(config.ports.empty() ? port : config.ports.front());
}

// This host's interface addresses, as SocketAddress::Host() writes them.
std::vector<std::string> InterfaceAddresses() {
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return addresses;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (ifa->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr, text, sizeof(text));
    } else if (ifa->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr)->sin6_addr, text, sizeof(text));
    } else {
      continue;
    }
    addresses.emplace_back(text);
  }
  ::freeifaddrs(list);
  return addresses;
}

// A member's address as the daemon finds itself among the members: numeric,
// no port; nullopt when the name does not resolve.
std::optional<std::string> ResolveMember(const PeerSpec& spec) {
  auto address = ResolveHost(spec.host, spec.port);
  return address ? std::optional<std::string>(address->Host()) : std::nullopt;
}

// This host's addresses as FindSelf compares them: the interfaces', plus a
// responder bound to one address (127.0.0.2, a service address), which is
// this host at that address too although no interface lists it.
std::vector<std::string> SelfAddresses(const std::function<std::vector<std::string>()>& interfaces,
                                       const std::string& bind_address) {
  std::vector<std::string> local = interfaces();
  if (auto bound = ParseNumericAddress(bind_address, 0)) local.push_back(bound->Host());
  return local;
}

// A TCP burst below this share of what it should reach (its rate cap, or the
// link's speed when slower) is a shortfall whose counters the run names.
constexpr double kShortfallRatio = 0.8;
// A peer's MTU (hello reply) is asked again after this long.
constexpr auto kRemoteMtuRefresh = std::chrono::minutes(10);

std::vector<std::string> DeviceNames(std::span<const WatchedDevice> devices) {
  std::vector<std::string> names;
  for (const WatchedDevice& device : devices) names.push_back(device.name);
  return names;
}

// The routed interface toward `address` and the devices below it; empty when
// the route is unknown.
std::vector<WatchedDevice> DevicesToward(InterfaceCache& cache, const SocketAddress& address) {
  const auto& route = cache.RouteTo(address.Host());
  return route ? cache.Devices(*route) : std::vector<WatchedDevice>{};
}

// The counters of some devices around one burst (or ping series).
class Burst {
 public:
  Burst(const SystemRoots& roots, std::vector<WatchedDevice> devices)
      : roots_(roots), devices_(std::move(devices)), before_(ReadCounters(roots_, DeviceNames(devices_))) {}
  // What moved since the start; host-wide TCP retransmits only for a TCP burst
  // (anything else would count the host's own traffic against a UDP test).
  CounterDeltas End(bool tcp) const {
    CounterDeltas deltas = Diff(before_, ReadCounters(roots_, DeviceNames(devices_)));
    if (!tcp) deltas.tcp_retransmits.reset();
    return deltas;
  }
  const std::vector<WatchedDevice>& devices() const { return devices_; }

 private:
  const SystemRoots& roots_;
  std::vector<WatchedDevice> devices_;
  CounterSnapshot before_;
};

// What a burst should reach: its cap, or the routed interface's speed when lower.
double ExpectedBytesPerSecond(double cap, InterfaceCache& cache, std::span<const WatchedDevice> devices) {
  if (devices.empty()) return cap;
  const auto speed = cache.Info(devices.front().name).speed_mbps;
  return speed ? std::min(cap, static_cast<double>(*speed) * 1e6 / 8) : cap;
}

// What fell short in a burst ("TCP throughput 2.4 MB/s (expected 32 MB/s)",
// "UDP loss 3.2%"), or nullopt.
std::optional<std::string> Shortfall(const ThroughputResult& r, ThroughputTest test, double expected) {
  if (r.outcome != SessionOutcome::kOk) return std::nullopt;
  if (test == ThroughputTest::kUdp) {
    if (r.packets_lost == 0 && r.LossRatio() <= 0) return std::nullopt;
    return fmt::format("UDP loss {:.1f}%", r.LossRatio() * 100);
  }
  if (expected <= 0 || r.ReceivedBytesPerSecond() >= kShortfallRatio * expected) return std::nullopt;
  return fmt::format("TCP throughput {:.1f} MB/s (expected {:.1f} MB/s)", r.ReceivedBytesPerSecond() / kMiB,
                     expected / kMiB);
}

// The interface facts of one peer in a result.
json PeerInterfaceJson(const std::string& peer, InterfaceCache& cache, const SocketAddress& address,
                       std::optional<std::uint32_t> remote_mtu) {
  json entry = {{"node", peer}};
  const auto& route = cache.RouteTo(address.Host());
  if (!route) {
    entry["interface"] = nullptr;
    entry["error"] = route.error();
    return entry;
  }
  const InterfaceInfo& info = cache.Info(*route);
  entry["interface"] = *route;
  json lower = json::array();
  for (const WatchedDevice& device : cache.Devices(*route)) {
    if (!device.upper.empty()) lower.push_back({{"interface", device.name}, {"upper", device.upper}});
  }
  entry["lower"] = lower;
  entry["speed_mbps"] = info.speed_mbps ? json(*info.speed_mbps) : json(nullptr);
  entry["duplex"] = info.duplex;
  entry["operstate"] = info.operstate;
  entry["mtu_local"] = info.mtu ? json(*info.mtu) : json(nullptr);
  entry["mtu_remote"] = remote_mtu ? json(*remote_mtu) : json(nullptr);
  entry["mtu_mismatch"] = info.mtu && remote_mtu && *info.mtu != *remote_mtu;
  return entry;
}

// One row of a full run as soon as it is known (the CLI prints it), tagged
// with its table.
void Report(const FullRunContext& ctx, std::string_view kind, const json& row) {
  if (!ctx.on_report) return;
  json entry = row;
  entry["kind"] = kind;
  ctx.on_report(entry);
}

// Reasons of hostperf_net_throughput_skipped_total (all exposed from start-up).
constexpr const char* kSkipReasons[] = {"busy", "budget", "no_peer", "error"};

// A peer after name resolution (re-done every run).
struct ResolvedPeer {
  PeerSpec spec;
  Result<SocketAddress> address;
};

std::vector<ResolvedPeer> Resolve(const std::vector<PeerSpec>& specs) {
  std::vector<ResolvedPeer> peers;
  for (const PeerSpec& spec : specs) peers.push_back({spec, ResolveHost(spec.host, spec.port)});
  return peers;
}

// Peers by name, with their addresses.
using Hosts = std::vector<std::pair<std::string, SocketAddress>>;

// A secret from a file: its bytes, trailing whitespace removed; at least 16 bytes.
Result<Secret> ReadSecretFile(const std::string& path) {
  // A regular file, owner-only (like an OpenSSH private key), small.
  const auto text = ReadBoundedFile(path, "probes.net.secret_file", kMaxSecretFileBytes, FileAccess::kOwnerOnly);
  if (!text) return Failure{"no_secret", text.error()};
  Secret secret(text->begin(), text->end());
  while (!secret.empty() && std::isspace(secret.back())) secret.pop_back();
  if (secret.size() < 16) return Failure{"no_secret", "secret file " + path + " holds fewer than 16 bytes"};
  return secret;
}

json ThroughputRow(const std::string& date, const std::string& test, double rate, const std::string& node,
                   const ThroughputResult& r) {
  json row = {{"date", date},
              {"test", test},
              {"rate_limit_mb_per_second", rate},
              {"node", node},
              {"mb_per_second_sent", r.SentBytesPerSecond() / kMiB},
              {"mb_per_second_received", r.ReceivedBytesPerSecond() / kMiB},
              {"bytes_sent", r.bytes_sent},
              {"bytes_received", r.bytes_received},
              {"duration_seconds", r.sent_seconds},
              {"outcome", ToString(r.outcome)}};
  if (test == "udp-throughput") {
    row["loss_ratio"] = r.LossRatio();
    row["jitter_seconds"] = r.jitter_seconds;
  }
  if (!r.error.empty()) row["error"] = r.error;
  return row;
}

// One host's row of a throughput test among all hosts: vnetperf's columns
// (what the host sent and what it received, in the same seconds).
json PlanRow(const std::string& date, const std::string& test, double rate, const AllToAllHostResult& r) {
  const PlanReport& p = r.report;
  json row = {{"date", date},
              {"test", test},
              {"rate_limit_mb_per_second", rate},
              {"node", r.name},
              {"mode", "all-to-all"},
              {"mb_per_second_sent", r.SentBytesPerSecond() / kMiB},
              {"mb_per_second_received", r.ReceivedBytesPerSecond() / kMiB},
              {"bytes_sent", p.bytes_sent},
              {"bytes_received", p.bytes_received},
              {"duration_seconds", r.SentSeconds()},
              {"sessions_ok", p.sessions_ok},
              {"sessions_failed", p.sessions_failed},
              {"outcome", r.ok ? (p.sessions_failed == 0 ? "ok" : "partial") : "failed"}};
  if (test == "udp-throughput") {
    row["packets_sent"] = p.packets_sent;
    row["packets_received"] = p.packets_received;
    row["loss_ratio"] = r.LossRatio();
    row["jitter_seconds"] = p.jitter_ns / 1e9;
  }
  if (!r.error.empty()) row["error"] = r.error;
  return row;
}

// What fell short in one rate's test among all hosts, localised as
// Pingmesh does: a host is named when it falls short of the rate and of the
// other hosts (its link, its port); when most hosts fall short together,
// one finding names the shared network instead of every host.
std::vector<std::string> PlanShortfalls(std::span<const AllToAllHostResult> results, const std::string& test,
                                        double rate) {
  std::vector<std::string> findings;
  std::vector<double> moved;  // per host that reported: the lower of sent and received
  for (const auto& r : results) {
    if (!r.ok) {
      findings.push_back(fmt::format("{}: {} failed among all hosts: {}", r.name, test, r.error));
    } else if (r.report.sessions_failed > 0) {
      findings.push_back(fmt::format("{}: {} of its {} sessions to other hosts failed", r.name,
                                     r.report.sessions_failed, r.report.sessions_ok + r.report.sessions_failed));
    } else if (test == "udp-throughput" && r.report.packets_lost > 0) {
      findings.push_back(
          fmt::format("{}: UDP loss {:.1f}% among all hosts at {} MB/s", r.name, r.LossRatio() * 100, rate));
    }
    if (r.ok) moved.push_back(std::min(r.SentBytesPerSecond(), r.ReceivedBytesPerSecond()));
  }
  const double expected = rate * kMiB;
  if (moved.empty() || expected <= 0 || test != "tcp-throughput") return findings;
  // A host that stands out from the others is named first: it also drags the
  // others' figures down by its share, which is not theirs to answer for.
  const double median = Median(moved);
  bool named = false;
  for (const auto& r : results) {
    if (!r.ok) continue;
    const double sent = r.SentBytesPerSecond(), received = r.ReceivedBytesPerSecond();
    if (std::min(sent, received) >= kShortfallRatio * std::min(median, expected)) continue;
    named = true;
    findings.push_back(
        fmt::format("{}: sent {:.1f} MB/s and received {:.1f} MB/s among all hosts at {} MB/s, the "
                    "others a median {:.1f} MB/s: its link, its switch port or the host",
                    r.name, sent / kMiB, received / kMiB, rate, median / kMiB));
  }
  if (!named && median < kShortfallRatio * expected) {
    findings.push_back(
        fmt::format("{} of {} hosts moved less than {:.0f}% of {} MB/s among all hosts (median {:.1f} "
                    "MB/s): the network they share (switch, uplinks) or the hosts' CPUs",
                    std::count_if(moved.begin(), moved.end(), [&](double m) { return m < kShortfallRatio * expected; }),
                    moved.size(), kShortfallRatio * 100, rate, median / kMiB));
  }
  return findings;
}

json AverageRow(const json& rows, const std::string& date, const std::string& test, double rate) {
  double sent = 0, received = 0, bytes_sent = 0, bytes_received = 0, duration = 0;
  for (const json& row : rows) {
    sent += row["mb_per_second_sent"].get<double>();
    received += row["mb_per_second_received"].get<double>();
    bytes_sent += row["bytes_sent"].get<double>();
    bytes_received += row["bytes_received"].get<double>();
    duration += row["duration_seconds"].get<double>();
  }
  const double n = std::max<double>(1, static_cast<double>(rows.size()));
  return {{"date", date},
          {"test", test},
          {"rate_limit_mb_per_second", rate},
          {"node", "average"},
          {"mb_per_second_sent", sent / n},
          {"mb_per_second_received", received / n},
          {"bytes_sent", static_cast<std::uint64_t>(bytes_sent / n)},
          {"bytes_received", static_cast<std::uint64_t>(bytes_received / n)},
          {"duration_seconds", duration / n}};
}

// What the responder was started with; a reload that changes any of it restarts the responder.
struct ResponderSettings {
  std::string bind_address;
  std::vector<std::uint16_t> ports;
  std::string secret_file;
  Secret secret;  // the file's content (empty: a generated loopback secret)
  std::uint32_t max_connections = 0;
  std::uint32_t rate_limit = 0;
  bool operator==(const ResponderSettings&) const = default;
};

// The observed set and what it was computed from: recomputed only when one
// of the inputs changes (the hashing is O(N k log N) for N members).
struct Assignment {
  std::vector<PeerSpec> members;
  std::string configured_self;
  std::uint32_t k = 0;
  std::vector<std::uint16_t> ports;
  std::string bind_address;

  std::string self;  // the member that is this host, or hostname:port outside the list
  bool self_is_member = false;
  std::vector<PeerSpec> observed;  // highest score first
};

class NetProbe final : public Probe, private ResponderObserver {
 public:
  NetProbe(const ProbeDeps& deps, NetProbeSeams seams)
      : local_addresses_(seams.local_addresses ? std::move(seams.local_addresses) : InterfaceAddresses),
        resolve_(seams.resolve ? std::move(seams.resolve) : ResolveMember),
        route_(seams.route_interface ? std::move(seams.route_interface) : NetlinkRouteInterface),
        roots_(deps.roots),
        clock_(seams.clock != nullptr ? seams.clock : &real_clock_),
        registry_handle_(RegistryFor(deps)),
        registry_(*registry_handle_),
        rtt_(Family(prometheus::BuildHistogram(), "hostperf_net_rtt_seconds",
                    "UDP ping-pong round-trip time to a peer (responder time removed).", registry_)),
        sent_(Family(prometheus::BuildCounter(), "hostperf_net_packets_sent_total", "UDP pings sent to a peer.",
                     registry_)),
        lost_(Family(prometheus::BuildCounter(), "hostperf_net_packets_lost_total",
                     "UDP pings to a peer that got no reply in time.", registry_)),
        offset_(Family(prometheus::BuildGauge(), "hostperf_net_clock_offset_seconds",
                       "Peer clock minus local clock (NTP formula, minimum-delay sample).", registry_)),
        up_(Family(prometheus::BuildGauge(), "hostperf_net_peer_up",
                   "1 if the peer answered pings in the last run, else 0.", registry_)),
        tcp_(Family(prometheus::BuildGauge(), "hostperf_net_tcp_throughput_bytes_per_second",
                    "TCP throughput to a peer in the last burst (bytes the peer received per second).", registry_)),
        udp_(Family(prometheus::BuildGauge(), "hostperf_net_udp_throughput_bytes_per_second",
                    "UDP throughput to a peer in the last burst (bytes the peer received per second).", registry_)),
        udp_loss_(Family(prometheus::BuildGauge(), "hostperf_net_udp_loss_ratio",
                         "Datagrams lost in the last UDP burst to a peer, 0-1.", registry_)),
        udp_jitter_(Family(prometheus::BuildGauge(), "hostperf_net_udp_jitter_seconds",
                           "RFC 3550 interarrival jitter of the last UDP burst to a peer.", registry_)),
        throughput_rate_limit_(
            Family(prometheus::BuildGauge(), "hostperf_net_throughput_rate_limit_bytes_per_second",
                   "Cap on the scheduled throughput bursts (probes.net.throughput_rate); a burst cannot read higher.",
                   registry_)
                .Add({})),
        throughput_bytes_(Family(prometheus::BuildCounter(), "hostperf_net_throughput_bytes_total",
                                 "Bytes sent in scheduled throughput bursts (counts against the budget).", registry_)),
        throughput_skipped_(Family(prometheus::BuildCounter(), "hostperf_net_throughput_skipped_total",
                                   "Scheduled throughput bursts not run, by reason (busy, budget, no_peer, error).",
                                   registry_)),
        peers_(Family(prometheus::BuildGauge(), "hostperf_net_peers",
                      "Peers known (configured and from the peers file) and probed in the last run.", registry_)),
        last_probe_(Family(prometheus::BuildGauge(), "hostperf_net_peer_last_probe_timestamp_seconds",
                           "Unix time of the last scheduled ping run that included the peer.", registry_)),
        peers_file_errors_(Family(prometheus::BuildCounter(), "hostperf_net_peers_file_errors_total",
                                  "Versions of probes.net.peers_file that could not be read or parsed, or that "
                                  "emptied a non-empty list without probes.net.allow_empty_peers_file (the last good "
                                  "list stays in use).",
                                  registry_)
                               .Add({})),
        peers_file_valid_(Family(prometheus::BuildGauge(), "hostperf_net_peers_file_valid",
                                 "1 when probes.net.peers_file's current version is the list in use, 0 when it was "
                                 "refused (unreadable, unparsable, or an empty list not allowed) and the last good "
                                 "list, if any, is in use. Absent without a peers_file.",
                                 registry_)),
        self_info_(Family(prometheus::BuildGauge(), "hostperf_net_self_info",
                          "1, with peer = the entry of peers/peers_file this host found itself as (spelled as the "
                          "peer label of the per-peer series). Absent when it is not in the list. The mixin joins it "
                          "to the scrape target so that every alert names one host, whatever the peers file and the "
                          "scrape config call it.",
                          registry_)),
        requests_(Family(prometheus::BuildCounter(), "hostperf_net_responder_requests_total",
                         "Authenticated requests the peer responder answered, by message type.", registry_)),
        dropped_(Family(prometheus::BuildCounter(), "hostperf_net_responder_dropped_total",
                        "Packets and connections the peer responder dropped, by reason.", registry_)),
        responder_up_(Family(prometheus::BuildGauge(), "hostperf_net_responder_up",
                             "1 while the peer responder serves, else 0.", registry_)
                          .Add({})),
        interface_errors_(Family(prometheus::BuildCounter(), "hostperf_net_interface_errors_during_probe_total",
                                 "Growth of an interface's error counter (statistics/<counter>) while the scheduled "
                                 "pings and bursts to the peers it routes to ran.",
                                 registry_)),
        tcp_retransmits_(Family(prometheus::BuildCounter(), "hostperf_net_tcp_retransmits_during_probe_total",
                                "Growth of the host's TCP RetransSegs (/proc/net/snmp) during scheduled TCP bursts.",
                                registry_)
                             .Add({})),
        interface_info_(Family(prometheus::BuildGauge(), "hostperf_net_interface_info",
                               "1 per interface that routes to a probed peer (and per device below it), one series "
                               "per lower device (bond or team member; \"\" when none).",
                               registry_)),
        interface_speed_(Family(prometheus::BuildGauge(), "hostperf_net_interface_speed_bytes_per_second",
                                "Link speed of an interface that routes to a probed peer (absent when unknown).",
                                registry_)),
        interface_mtu_(Family(prometheus::BuildGauge(), "hostperf_net_interface_mtu_bytes",
                              "MTU of an interface that routes to a probed peer.", registry_)),
        peer_interface_(Family(prometheus::BuildGauge(), "hostperf_net_peer_interface_info",
                               "1: the interface the route to the peer uses.", registry_)),
        peer_mtu_mismatch_(Family(prometheus::BuildGauge(), "hostperf_net_peer_mtu_mismatch",
                                  "1 when the MTU toward the peer differs between the two ends (both known), else 0.",
                                  registry_)),
        peer_mtu_(Family(prometheus::BuildGauge(), "hostperf_net_peer_mtu_bytes",
                         "MTU of the interface toward the peer, here (side=\"local\") and as the peer's hello reply "
                         "says (side=\"remote\").",
                         registry_)) {
    for (const char* reason :
         {"bad_hmac", "bad_version", "malformed", "rate_limited", "source_blocked", "busy", "connection_limit"}) {
      dropped_.Add({{"reason", reason}});
    }
    // At 0 from start-up, so that increase() sees the first skip of each reason.
    for (const char* reason : kSkipReasons) throughput_skipped_.Add({{"reason", reason}});
  }

  std::string_view Name() const override { return "net"; }

  // Called at start-up and after every successful reload: restarts the
  // responder only when its settings (or the secret file's content) changed,
  // so a reload can move ports or rotate the secret without a restart.
  void StartServices(const config::ProbeConfig& section) override {
    ApplyResponderSettings(dynamic_cast<const NetProbeConfig&>(*section.settings));
  }

 private:
  ProbeOutcome MeasureScheduled(const ScheduledContext& ctx) override { return RunScheduled(ctx); }
  ProbeOutcome MeasureFull(const FullRunContext& ctx) override { return RunFull(ctx); }

  void ApplyResponderSettings(const NetProbeConfig& net) {
    std::lock_guard services_lock(services_mutex_);
    ResponderSettings wanted{net.bind_address, net.ports, net.secret_file, {}, net.max_connections, net.rate_limit};
    if (!net.secret_file.empty()) {
      auto secret = ReadSecretFile(net.secret_file);
      if (!secret) {
        // Keep serving with the old secret rather than going dark on a bad rotation.
        spdlog::error("net: peer responder {}: {}", responder_ ? "keeps its old settings" : "not started",
                      secret.error());
        if (!responder_) SetResponderError(secret.error());
        return;
      }
      wanted.secret = std::move(secret).value();
    }
    if (responder_ && wanted == responder_settings_) return;

    ResponderOptions options;
    options.bind_address = net.bind_address;
    options.ports = net.ports;
    options.max_connections = net.max_connections;
    options.packets_per_second_per_source = net.rate_limit;
    options.observer = this;
    // The MTU of the interface our replies to a client leave by, for its hello.
    options.reply_mtu = [route = route_, roots = roots_](const std::string& client) -> std::uint32_t {
      const auto interface = route(client);
      if (!interface || !ValidInterfaceName(*interface)) return 0;
      return ReadInterfaceInfo(roots, *interface).mtu.value_or(0);
    };
    if (net.secret_file.empty()) {
      options.bind_address = "";  // a generated secret: nobody else can talk to us anyway
      // An unchanged loopback responder keeps its secret; a new one gets a fresh secret.
      options.secret = responder_ && responder_settings_.secret_file.empty() ? responder_secret_ : RandomSecret();
    } else {
      options.secret = wanted.secret;
    }
    // With a shared secret, an empty bind_address means every address
    // (IPv6 and IPv4 on one socket, else IPv4 only).
    if (!net.secret_file.empty() && net.bind_address.empty()) options.bind_address = "::";
    // The old responder may hold the same ports: stop it before binding.
    {
      std::unique_ptr<Responder> old;
      std::lock_guard lock(state_mutex_);
      old = std::move(responder_);
      responder_ports_.clear();
    }
    responder_up_.Set(0);
    const Secret secret = options.secret;
    auto started = StartResponder(options);
    if (!started && options.bind_address == "::") {
      options.bind_address = "0.0.0.0";
      started = StartResponder(options);
    }
    if (!started) {
      spdlog::error("net: peer responder not started: {}", started.error());
      SetResponderError(started.error());
      return;
    }
    std::unique_ptr<Responder> responder = std::move(started).value();
    std::string ports;
    for (auto port : responder->Ports()) ports += (ports.empty() ? "" : ",") + std::to_string(port);
    spdlog::info("net: peer responder listening on {} port(s) {}",
                 options.bind_address.empty() ? "loopback" : options.bind_address, ports);
    std::lock_guard lock(state_mutex_);
    responder_settings_ = std::move(wanted);
    responder_error_.clear();
    responder_secret_ = secret;
    responder_ports_ = responder->Ports();
    responder_ = std::move(responder);
    responder_up_.Set(1);
  }

  void OnRequest(std::string_view type) override { requests_.Add({{"type", std::string(type)}}).Increment(); }
  void OnDrop(std::string_view reason) override { dropped_.Add({{"reason", std::string(reason)}}).Increment(); }

  // Why the responder is not running (state, not a validation result).
  void SetResponderError(std::string error) {
    std::lock_guard lock(state_mutex_);
    responder_error_ = std::move(error);
  }

  std::string ResponderError() {
    std::lock_guard lock(state_mutex_);
    return responder_ ? std::string() : responder_error_;
  }

  // The secret: the responder's (generated or from the file), else the file's.
  Result<Secret> ClientSecret(const NetProbeConfig& net) {
    {
      std::lock_guard lock(state_mutex_);
      if (responder_) return responder_secret_;
    }
    if (net.secret_file.empty()) {
      return Failure{"no_secret",
                     "no net.secret_file configured (the daemon's generated secret is only known to the daemon)"};
    }
    return ReadSecretFile(net.secret_file);
  }

  std::uint16_t DefaultPort(const NetProbeConfig& net) {
    std::lock_guard lock(state_mutex_);
    if (!responder_ports_.empty()) return responder_ports_.front();
    return net.ports.empty() ? 14159 : net.ports.front();
  }

  // Configured peers plus the peers file; with neither, this host's own responder.
  std::vector<PeerSpec> ConfiguredPeers(const NetProbeConfig& net, std::vector<std::string>* errors,
                                        bool* own_responder = nullptr) {
    const std::uint16_t port = DefaultPort(net);
    std::vector<std::string> entries = net.peers;
    if (!net.peers_file.empty()) {
      if (auto refreshed = peers_file_.Refresh(net.peers_file, net.allow_empty_peers_file); !refreshed) {
        errors->push_back(refreshed.error());
      }
      const auto& targets = peers_file_.targets();
      entries.insert(entries.end(), targets.begin(), targets.end());
    }
    if (entries.empty() && net.peers_file.empty()) {
      if (own_responder != nullptr) *own_responder = true;
      return {PeerSpec{"localhost", "localhost", port}};
    }
    std::vector<PeerSpec> specs;
    std::set<std::string> seen;
    for (const std::string& entry : entries) {
      if (auto spec = ParsePeerSpec(entry, port)) {
        if (seen.insert(spec->name).second) specs.push_back(std::move(*spec));
      } else {
        errors->push_back(spec.error());
      }
    }
    return specs;
  }

  // --- scheduled -------------------------------------------------------------

  ProbeOutcome RunScheduled(const RunContext& ctx) {
    const auto& net = ctx.Settings<NetProbeConfig>();
    // A responder that could not bind (a port still held by another process)
    // is retried every run, so it recovers without a restart.
    if (!ResponderError().empty()) ApplyResponderSettings(net);
    const auto secret = ClientSecret(net);
    if (!secret) {
      const std::string responder_error = ResponderError();
      if (!responder_error.empty()) {
        return ProbeOutcome::Failure("responder_down", "peer responder not running: " + responder_error);
      }
      return ProbeOutcome::Failure(secret.failure());
    }

    std::vector<std::string> errors;
    bool own_responder = false;
    const auto all = ConfiguredPeers(net, &errors, &own_responder);
    if (errors != last_errors_) {  // logged when they change, not every run
      for (const auto& e : errors) spdlog::warn("net: {}", e);
      last_errors_ = errors;
    }
    peers_file_errors_.Increment(static_cast<double>(peers_file_.failures() - peers_file_failures_seen_));
    peers_file_failures_seen_ = peers_file_.failures();
    PublishPeersFileValid(net.peers_file.empty() ? std::nullopt : std::optional<bool>(peers_file_.valid()));

    std::vector<PeerSpec> chosen = all;  // the own responder, when nothing is configured
    std::size_t observers = 0;
    std::size_t over_cap = 0;
    if (!own_responder) {
      const Assignment& assignment = Assign(net, all);
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
    peers_.Add({{"set", "known"}}).Set(static_cast<double>(all.size()));
    peers_.Add({{"set", "probed"}}).Set(static_cast<double>(chosen.size()));
    peers_.Add({{"set", "observers"}}).Set(static_cast<double>(observers));
    peers_.Add({{"set", "over_cap"}}).Set(static_cast<double>(over_cap));
    ExpireSeries(chosen);
    if (chosen.empty()) return ProbeOutcome::Skipped("no_peers", "no peers to probe (no usable peers configured)");

    const auto resolved = Resolve(chosen);
    std::vector<PeerTarget> targets;
    // The interface toward each peer and the devices below it, once per run.
    InterfaceCache interfaces(roots_, route_);
    std::map<std::string, std::vector<WatchedDevice>> paths;
    std::vector<WatchedDevice> watched;
    std::set<std::string> watched_names;
    for (const auto& peer : resolved) {
      if (!peer.address) continue;
      targets.push_back({peer.spec.name, *peer.address});
      auto& devices = paths[peer.spec.name] = DevicesToward(interfaces, *peer.address);
      for (const WatchedDevice& device : devices) {
        if (watched_names.insert(device.name).second) watched.push_back(device);
      }
    }
    LatencyOptions latency;
    latency.packets = net.packets_per_cycle;
    latency.interval = net.packet_interval;
    latency.reply_timeout = net.reply_timeout;
    const Burst pings(roots_, watched);
    const auto measured = MeasureLatency(targets, latency, *secret, [&] { return ctx.ShouldStop(); });
    const CounterDeltas ping_deltas = pings.End(/*tcp=*/false);
    CountDeltas(ping_deltas);
    PublishInterfaces(interfaces, watched_names);
    const double probed_at = clock_->UnixSeconds();

    json result = {{"mode", "scheduled"}, {"peers", json::array()}, {"errors", errors}, {"findings", json::array()}};
    Hosts up;
    std::size_t target_index = 0;
    for (const auto& peer : resolved) {
      const prometheus::Labels labels = {{"peer", peer.spec.name}};
      json entry = {{"peer", peer.spec.name}};
      last_probe_.Add(labels).Set(probed_at);
      // Every peer in the set has the same series (an unresolved one: nothing sent).
      sent_.Add(labels);
      lost_.Add(labels);
      auto& histogram = rtt_.Add(labels, RttBuckets());
      if (!peer.address) {
        up_.Add(labels).Set(0);
        entry["up"] = false;
        entry["error"] = peer.address.error();
        result["peers"].push_back(entry);
        continue;
      }
      const LatencyResult& r = measured[target_index++];
      const bool peer_up = r.received > 0;
      up_.Add(labels).Set(peer_up ? 1 : 0);
      sent_.Add(labels).Increment(r.sent);
      lost_.Add(labels).Increment(r.lost());
      for (const double rtt : r.rtt_seconds) histogram.Observe(rtt);
      if (r.clock_offset_seconds) offset_.Add(labels).Set(*r.clock_offset_seconds);
      entry["up"] = peer_up;
      entry["address"] = peer.address->ToString();
      entry["sent"] = r.sent;
      entry["lost"] = r.lost();
      entry["rtt_median_seconds"] = Median(r.rtt_seconds);
      entry["clock_offset_seconds"] = r.clock_offset_seconds ? json(*r.clock_offset_seconds) : json(nullptr);
      const auto& devices = paths[peer.spec.name];
      if (peer_up) {
        up.emplace_back(peer.spec.name, *peer.address);
        RefreshRemoteMtu(peer.spec.name, *peer.address, *secret);
      }
      entry["interface"] = PeerInterfaceJson(peer.spec.name, interfaces, *peer.address, RemoteMtu(peer.spec.name));
      PublishPeerInterface(peer.spec.name, interfaces, devices, result["findings"]);
      if (r.lost() > 0 && r.sent > 0) {
        const std::string text = Attribute(fmt::format("ping loss {:.1f}%", 100.0 * r.lost() / r.sent), peer.spec.name,
                                           devices, ping_deltas);
        entry["attribution"] = text;
        result["findings"].push_back(text);
      }
      result["peers"].push_back(entry);
    }
    // Peers cannot probe this host while its responder is down: a fault of
    // this host, named as such rather than as its peers' silence.
    if (const std::string responder_error = ResponderError(); !responder_error.empty()) {
      if (!up.empty()) {
        result["throughput"] =
            ScheduledThroughput(ctx, net, *secret, SortedByName(std::move(up)), interfaces, paths, result["findings"]);
      }
      return ProbeOutcome::Failure("responder_down", "peer responder not running: " + responder_error, result);
    }
    if (!resolved.empty() && up.empty()) {
      return ProbeOutcome::Failure("all_peers_down", "no peer answered", result);
    }
    result["throughput"] =
        ScheduledThroughput(ctx, net, *secret, SortedByName(std::move(up)), interfaces, paths, result["findings"]);
    return ProbeOutcome::Success(result);
  }

  // The observed set for this membership, recomputed only when the
  // membership, self, k or this responder's address or ports changed.
  const Assignment& Assign(const NetProbeConfig& net, const std::vector<PeerSpec>& members) {
    std::vector<std::uint16_t> ports;
    {
      std::lock_guard lock(state_mutex_);
      ports = responder_ports_;
    }
    if (ports.empty()) ports = net.ports;
    if (assignment_ && assignment_->members == members && assignment_->configured_self == net.self &&
        assignment_->k == net.observers && assignment_->ports == ports &&
        assignment_->bind_address == net.bind_address) {
      return *assignment_;
    }
    Assignment a{members, net.self, net.observers, ports, net.bind_address, {}, false, {}};
    if (!net.self.empty()) {
      a.self = net.self;
    } else {
      const std::vector<std::string> local = SelfAddresses(local_addresses_, net.bind_address);
      a.self = FindSelf(members, ports, local, resolve_).value_or(SelfName(net, DefaultPort(net)));
    }
    a.self_is_member = std::any_of(members.begin(), members.end(), [&](const PeerSpec& m) { return m.name == a.self; });
    a.observed = ObservedTargets(a.self, members, net.observers);
    spdlog::info("net: this host is {} ({}); it observes {} of {} peers ({} observers each)", a.self,
                 a.self_is_member ? "in the peer list" : "not in the peer list: an outside observer", a.observed.size(),
                 members.size(), net.observers);
    assignment_ = std::move(a);
    return *assignment_;
  }

  // hostperf_net_self_info: one series, for the entry this host is (none
  // outside the list). Runs never overlap: no lock needed.
  void PublishSelf(const std::optional<std::string>& self) {
    if (self == self_info_peer_) return;
    if (self_info_peer_) {
      const prometheus::Labels old = {{"peer", *self_info_peer_}};
      if (self_info_.Has(old)) self_info_.Remove(&self_info_.Add(old));
    }
    if (self) self_info_.Add({{"peer", *self}}).Set(1);
    self_info_peer_ = self;
  }

  // hostperf_net_peers_file_valid: absent (nullopt) without a peers_file.
  void PublishPeersFileValid(std::optional<bool> valid) {
    if (!valid) {
      if (peers_file_valid_.Has({})) peers_file_valid_.Remove(&peers_file_valid_.Add({}));
      return;
    }
    peers_file_valid_.Add({}).Set(*valid ? 1 : 0);
  }

  // Removes every series of the peers that left the probed set. References
  // to per-peer series are only held within a run (runs never overlap), so
  // removing them here leaves nothing dangling.
  void ExpireSeries(const std::vector<PeerSpec>& probed) {
    std::set<std::string> now;
    for (const PeerSpec& peer : probed) now.insert(peer.name);
    for (const std::string& name : series_peers_) {
      if (now.contains(name)) continue;
      const prometheus::Labels labels = {{"peer", name}};
      if (rtt_.Has(labels)) rtt_.Remove(&rtt_.Add(labels, RttBuckets()));
      for (auto* family : {&sent_, &lost_, &throughput_bytes_}) {
        if (family->Has(labels)) family->Remove(&family->Add(labels));
      }
      for (auto* family : {&offset_, &up_, &tcp_, &udp_, &udp_loss_, &udp_jitter_, &last_probe_, &peer_mtu_mismatch_}) {
        if (family->Has(labels)) family->Remove(&family->Add(labels));
      }
      for (const char* side : {"local", "remote"}) {
        const prometheus::Labels side_labels = {{"peer", name}, {"side", side}};
        if (peer_mtu_.Has(side_labels)) peer_mtu_.Remove(&peer_mtu_.Add(side_labels));
      }
      if (const auto it = peer_interfaces_.find(name); it != peer_interfaces_.end()) {
        const prometheus::Labels interface_labels = {{"peer", name}, {"interface", it->second}};
        if (peer_interface_.Has(interface_labels)) peer_interface_.Remove(&peer_interface_.Add(interface_labels));
        peer_interfaces_.erase(it);
      }
      remote_mtu_.erase(name);
    }
    series_peers_ = std::move(now);
  }

  // A stable order, so that the throughput round robin reaches every peer
  // although the rendezvous choice is ordered by score.
  static Hosts SortedByName(Hosts up) {
    std::sort(up.begin(), up.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return up;
  }

  json ScheduledThroughput(const RunContext& ctx, const NetProbeConfig& net, const Secret& secret, const Hosts& up,
                           InterfaceCache& interfaces, std::map<std::string, std::vector<WatchedDevice>>& paths,
                           json& findings) {
    const auto skip = [&](const char* reason) {
      throughput_skipped_.Add({{"reason", reason}}).Increment();
      return json{{"skipped", reason}};
    };
    // Published even when no burst runs: alert rules compare thresholds with it
    // so that a cap below a threshold never reads as a slow network.
    throughput_rate_limit_.Set(static_cast<double>(net.throughput_rate));
    if (net.throughput_duration.count() == 0) return json{{"skipped", "disabled"}};
    if (up.empty()) return skip("no_peer");
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
    const Burst burst(roots_, paths[name]);
    const auto r = RunThroughput(address, options, secret, [&] { return ctx.ShouldStop(); });
    const CounterDeltas deltas = burst.End(options.test == ThroughputTest::kTcp);
    CountDeltas(deltas);
    if (r.peer_mtu) remote_mtu_[name] = {r.peer_mtu, clock_->Now()};
    // Settle the reservation with what was actually sent (less if cut short).
    budget.Refund(BudgetResource::kNetBytes, static_cast<double>(planned) - static_cast<double>(r.bytes_sent));
    throughput_bytes_.Add({{"peer", name}}).Increment(static_cast<double>(r.bytes_sent));
    const char* test = next_is_udp_ ? "udp-throughput" : "tcp-throughput";
    if (r.outcome == SessionOutcome::kBusy) return skip("busy");
    if (r.outcome != SessionOutcome::kOk) {
      spdlog::warn("net: {} to {}: {}", test, name, r.error);
      skip("error");
      ++next_throughput_peer_;
      return ThroughputRow(VnetperfDate(), test, net.throughput_rate / kMiB, name, r);
    }
    const prometheus::Labels labels = {{"peer", name}};
    if (options.test == ThroughputTest::kTcp) {
      tcp_.Add(labels).Set(r.ReceivedBytesPerSecond());
    } else {
      udp_.Add(labels).Set(r.ReceivedBytesPerSecond());
      udp_loss_.Add(labels).Set(r.LossRatio());
      udp_jitter_.Add(labels).Set(r.jitter_seconds);
      ++next_throughput_peer_;  // both tests done for this peer
    }
    next_is_udp_ = !next_is_udp_;
    json row = ThroughputRow(VnetperfDate(), test, net.throughput_rate / kMiB, name, r);
    AttributeRow(r, options.test, static_cast<double>(net.throughput_rate), interfaces, burst.devices(), deltas, row,
                 findings);
    return row;
  }

  // A short burst's row names the interface and what moved (and so do the findings).
  static void AttributeRow(const ThroughputResult& r, ThroughputTest test, double cap, InterfaceCache& interfaces,
                           const std::vector<WatchedDevice>& devices, const CounterDeltas& deltas, json& row,
                           json& findings) {
    row["interface"] = devices.empty() ? json(nullptr) : json(devices.front().name);
    const auto shortfall = Shortfall(r, test, ExpectedBytesPerSecond(cap, interfaces, devices));
    if (!shortfall) return;
    row["attribution"] = Attribute(*shortfall, row.value("node", ""), devices, deltas);
    findings.push_back(row["attribution"]);
  }

  // --- interfaces --------------------------------------------------------------

  void CountDeltas(const CounterDeltas& deltas) {
    for (const auto& [device, counters] : deltas.devices) {
      for (const auto& [counter, delta] : counters) {
        interface_errors_.Add({{"interface", device}, {"counter", counter}}).Increment(static_cast<double>(delta));
      }
    }
    if (deltas.tcp_retransmits) tcp_retransmits_.Increment(static_cast<double>(*deltas.tcp_retransmits));
  }

  // The series of the devices that route to probed peers (and those below
  // them); the devices that no longer do lose theirs.
  void PublishInterfaces(InterfaceCache& interfaces, const std::set<std::string>& devices) {
    for (const std::string& device : devices) {
      const InterfaceInfo& info = interfaces.Info(device);
      const prometheus::Labels labels = {{"interface", device}};
      if (info.speed_mbps) {
        interface_speed_.Add(labels).Set(static_cast<double>(*info.speed_mbps) * 1e6 / 8);
      } else if (interface_speed_.Has(labels)) {
        interface_speed_.Remove(&interface_speed_.Add(labels));
      }
      if (info.mtu) {
        interface_mtu_.Add(labels).Set(*info.mtu);
      } else if (interface_mtu_.Has(labels)) {
        interface_mtu_.Remove(&interface_mtu_.Add(labels));
      }
      std::vector<prometheus::Labels> wanted;
      for (const std::string& lower : info.lowers.empty() ? std::vector<std::string>{""} : info.lowers) {
        wanted.push_back(
            {{"interface", device}, {"duplex", info.duplex}, {"operstate", info.operstate}, {"lower", lower}});
      }
      for (const auto& old : interface_info_labels_[device]) {
        if (std::find(wanted.begin(), wanted.end(), old) == wanted.end() && interface_info_.Has(old)) {
          interface_info_.Remove(&interface_info_.Add(old));
        }
      }
      for (const auto& labels_of_one : wanted) interface_info_.Add(labels_of_one).Set(1);
      interface_info_labels_[device] = std::move(wanted);
    }
    for (auto it = interface_info_labels_.begin(); it != interface_info_labels_.end();) {
      if (devices.contains(it->first)) {
        ++it;
        continue;
      }
      const prometheus::Labels labels = {{"interface", it->first}};
      for (auto* family : {&interface_speed_, &interface_mtu_}) {
        if (family->Has(labels)) family->Remove(&family->Add(labels));
      }
      for (const auto& old : it->second) {
        if (interface_info_.Has(old)) interface_info_.Remove(&interface_info_.Add(old));
      }
      for (const std::string& counter : InterfaceErrorCounters()) {
        const prometheus::Labels counter_labels = {{"interface", it->first}, {"counter", counter}};
        if (interface_errors_.Has(counter_labels)) interface_errors_.Remove(&interface_errors_.Add(counter_labels));
      }
      it = interface_info_labels_.erase(it);
    }
  }

  // Which interface serves the peer, and the MTUs of both ends toward each other.
  void PublishPeerInterface(const std::string& peer, InterfaceCache& interfaces,
                            const std::vector<WatchedDevice>& devices, json& findings) {
    const std::string interface = devices.empty() ? std::string() : devices.front().name;
    const auto previous = peer_interfaces_.find(peer);
    if (previous != peer_interfaces_.end() && previous->second != interface) {
      const prometheus::Labels old = {{"peer", peer}, {"interface", previous->second}};
      if (peer_interface_.Has(old)) peer_interface_.Remove(&peer_interface_.Add(old));
      peer_interfaces_.erase(previous);
    }
    std::optional<std::uint32_t> local;
    if (!interface.empty()) {
      peer_interface_.Add({{"peer", peer}, {"interface", interface}}).Set(1);
      peer_interfaces_[peer] = interface;
      local = interfaces.Info(interface).mtu;
    }
    const std::optional<std::uint32_t> remote = RemoteMtu(peer);
    for (const auto& [side, mtu] : {std::pair{"local", local}, std::pair{"remote", remote}}) {
      const prometheus::Labels labels = {{"peer", peer}, {"side", side}};
      if (mtu) {
        peer_mtu_.Add(labels).Set(*mtu);
      } else if (peer_mtu_.Has(labels)) {
        peer_mtu_.Remove(&peer_mtu_.Add(labels));
      }
    }
    const bool mismatch = local && remote && *local != *remote;
    peer_mtu_mismatch_.Add({{"peer", peer}}).Set(mismatch ? 1 : 0);
    if (mismatch) findings.push_back(DescribeMtuMismatch(peer, interface, *local, *remote));
  }

  std::optional<std::uint32_t> RemoteMtu(const std::string& peer) const {
    const auto it = remote_mtu_.find(peer);
    return it == remote_mtu_.end() ? std::nullopt : it->second.mtu;
  }

  // A hello to a peer whose MTU is unknown or old: one TCP handshake per peer
  // every kRemoteMtuRefresh (a throughput burst's hello refreshes it too).
  void RefreshRemoteMtu(const std::string& peer, const SocketAddress& address, const Secret& secret) {
    const auto now = clock_->Now();
    const auto it = remote_mtu_.find(peer);
    if (it != remote_mtu_.end() && now - it->second.at < kRemoteMtuRefresh) return;
    const auto hello = Hello(address, secret, kHelloTimeout);
    // A failed hello is retried next time; an old peer's "unknown" is kept.
    remote_mtu_[peer] = {hello ? hello->mtu : std::nullopt, now};
  }

  // --- full --------------------------------------------------------------------

  ProbeOutcome RunFull(const FullRunContext& ctx) {
    NetProbeConfig net = ctx.Settings<NetProbeConfig>();
    static const NetOptions kDefaults;
    const NetOptions* given = ctx.Options<NetOptions>();
    const NetOptions& options = given != nullptr ? *given : kDefaults;
    if (options.ports) net.ports = *options.ports;
    if (options.hosts) {
      net.peers = *options.hosts;
      net.peers_file.clear();
    }
    std::set<std::string> tests(options.tests.begin(), options.tests.end());
    if (tests.empty()) tests.insert(FullRunTests().begin(), FullRunTests().end());
    const bool ignore_bad = options.ignore_bad_hosts;

    const auto secret = options.secret ? Result<Secret>(*options.secret) : ClientSecret(net);
    if (!secret) return ProbeOutcome::Failure(secret.failure());
    std::vector<std::string> errors;
    const auto specs = ConfiguredPeers(net, &errors);
    json result = {{"mode", "full"}, {"date", VnetperfDate()}, {"tests", json::object()}, {"bad_hosts", json::array()}};
    if (!errors.empty() && !ignore_bad) {
      return ProbeOutcome::Failure("bad_hosts", errors.front(), result);
    }
    std::map<std::string, std::optional<std::uint32_t>> remote_mtus;
    const Hosts hosts = ReachableHosts(specs, *secret, result["bad_hosts"], remote_mtus);
    for (const json& bad : result["bad_hosts"]) Report(ctx, "bad_host", bad);
    if (!result["bad_hosts"].empty() && !ignore_bad) {
      return ProbeOutcome::Failure("bad_hosts",
                                   "unreachable host " + result["bad_hosts"][0]["node"].get<std::string>() + ": " +
                                       result["bad_hosts"][0]["error"].get<std::string>() +
                                       " (use --ignore-bad-hosts to test the others)",
                                   result);
    }
    if (hosts.empty()) return ProbeOutcome::Failure("no_hosts", "no reachable hosts", result);
    // What the run will take, for the progress line: every test runs for
    // --duration (per rate and host for throughput).
    const std::size_t rates = options.datarate > 0 ? 1 : kLadder.size();
    std::size_t slots = tests.contains("latency") ? 1 : 0;
    for (const char* test : {"tcp-throughput", "udp-throughput"}) {
      if (tests.contains(test)) slots += rates * (hosts.size() >= 2 ? 1 : hosts.size());
    }
    const auto started = Clock::now();
    const auto planned = options.duration * static_cast<std::int64_t>(slots);
    std::size_t done = 0;
    const std::function<void(const std::string&, bool)> progress = [&](const std::string& step, bool slot) {
      if (!ctx.on_progress) return;
      const auto elapsed = Clock::now() - started;
      const auto remaining = options.duration * static_cast<std::int64_t>(slots - std::min(done, slots));
      done += slot ? 1 : 0;
      ctx.on_progress({fmt::format("{} ({} of {} steps, {:.0f} s planned)", step, std::min(done, slots), slots,
                                   std::chrono::duration<double>(planned).count()),
                       elapsed, remaining});
    };

    // Which interface serves each host, both ends' MTUs, and what our own
    // bursts moved on it when they fell short: "findings".
    InterfaceCache interfaces(roots_, route_);
    json findings = json::array();
    result["interfaces"] = json::array();
    for (const auto& [name, address] : hosts) {
      json row = PeerInterfaceJson(name, interfaces, address, remote_mtus[name]);
      if (row["mtu_mismatch"].get<bool>()) {
        findings.push_back(DescribeMtuMismatch(name, row["interface"].get<std::string>(),
                                               row["mtu_local"].get<std::uint32_t>(),
                                               row["mtu_remote"].get<std::uint32_t>()));
      }
      result["interfaces"].push_back(std::move(row));
    }
    if (tests.contains("latency")) {
      progress("latency with " + std::to_string(hosts.size()) + " hosts", true);
      result["tests"]["latency"] = LatencyTable(ctx, net, options, *secret, hosts, interfaces, findings);
    }
    for (const char* test : {"tcp-throughput", "udp-throughput"}) {
      if (!tests.contains(test)) continue;
      result["tests"][test] = ThroughputLadder(ctx, net, options, *secret, hosts, test, interfaces, findings, progress);
    }
    result["findings"] = findings;
    if (tests.contains("connections")) {
      progress("connections", /*slot=*/false);
      result["tests"]["connections"] = ConnectionTable(ctx, net, *secret, hosts);
    }
    if (ctx.ShouldStop())
      return ProbeOutcome::Failure(ctx.Cancelled() ? "cancelled" : "timeout", "net run stopped", result);
    return ProbeOutcome::Success(result);
  }

  // Every host must answer a hello before any test runs (vnetperf's rule):
  // the hosts that did; the others go to `bad_hosts` with the reason.
  static Hosts ReachableHosts(const std::vector<PeerSpec>& specs, const Secret& secret, json& bad_hosts,
                              std::map<std::string, std::optional<std::uint32_t>>& remote_mtus) {
    Hosts hosts;
    for (const auto& peer : Resolve(specs)) {
      const Result<HelloReply> hello =
          peer.address ? Hello(*peer.address, secret, kHelloTimeout) : Result<HelloReply>(peer.address.failure());
      if (hello) {
        hosts.emplace_back(peer.spec.name, *peer.address);
        remote_mtus[peer.spec.name] = hello->mtu;
      } else {
        bad_hosts.push_back({{"node", peer.spec.name}, {"error", hello.error()}});
      }
    }
    return hosts;
  }

  // vnetperf's latency table: UDP ping-pong with every host at once.
  json LatencyTable(const FullRunContext& ctx, const NetProbeConfig& net, const NetOptions& options,
                    const Secret& secret, const Hosts& hosts, InterfaceCache& interfaces, json& findings) {
    std::vector<PeerTarget> targets;
    std::vector<std::vector<WatchedDevice>> paths;
    std::vector<WatchedDevice> watched;
    std::set<std::string> watched_names;
    for (const auto& [name, address] : hosts) {
      targets.push_back({name, address});
      paths.push_back(DevicesToward(interfaces, address));
      for (const WatchedDevice& device : paths.back()) {
        if (watched_names.insert(device.name).second) watched.push_back(device);
      }
    }
    const Burst burst(roots_, watched);
    LatencyOptions latency;
    latency.packets = static_cast<std::uint32_t>(
        std::clamp<std::int64_t>(options.duration / kFullPingSpacing, kFullMinPings, kFullMaxPings));
    latency.interval = std::chrono::duration_cast<std::chrono::nanoseconds>(options.duration) / latency.packets;
    latency.reply_timeout = net.reply_timeout;
    const auto measured = MeasureLatency(targets, latency, secret, [&] { return ctx.ShouldStop(); });
    const CounterDeltas deltas = burst.End(/*tcp=*/false);
    const std::string date = VnetperfDate();
    json rows = json::array();
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      const auto& r = measured[i];
      json row = {{"date", date},
                  {"node", hosts[i].first},
                  {"index", i},
                  {"rtt_latency_us", Median(r.rtt_seconds) * 1e6},
                  {"rtt_p99_us", Percentile(r.rtt_seconds, 0.99) * 1e6},
                  {"clock_skew_us", r.clock_offset_seconds.value_or(0) * 1e6},
                  {"sent", r.sent},
                  {"lost", r.lost()},
                  {"interface", paths[i].empty() ? json(nullptr) : json(paths[i].front().name)}};
      if (r.lost() > 0 && r.sent > 0) {
        row["attribution"] =
            Attribute(fmt::format("ping loss {:.1f}%", 100.0 * r.lost() / r.sent), hosts[i].first, paths[i], deltas);
        findings.push_back(row["attribution"]);
      }
      Report(ctx, "latency", row);
      rows.push_back(std::move(row));
    }
    return rows;
  }

  // One throughput test over the rate ladder (or the one --datarate): per
  // rate, every host sends to all the others and receives from them at once
  // (vnetperf's test among hosts), then their average. With one host, a
  // session from this host to it.
  json ThroughputLadder(const FullRunContext& ctx, const NetProbeConfig& net, const NetOptions& options,
                        const Secret& secret, const Hosts& hosts, const std::string& test, InterfaceCache& interfaces,
                        json& findings, const std::function<void(const std::string&, bool)>& progress) {
    if (hosts.size() >= 2) return AllToAllLadder(ctx, net, options, secret, hosts, test, findings, progress);
    const auto stop = [&] { return ctx.ShouldStop(); };
    json rows = json::array();
    const std::vector<double> rates = options.datarate > 0 ? std::vector<double>{options.datarate} : kLadder;
    for (const double rate : rates) {
      if (ctx.ShouldStop()) break;
      const std::string date = VnetperfDate();
      json per_rate = json::array();
      for (const auto& [name, address] : hosts) {
        if (ctx.ShouldStop()) break;
        progress(fmt::format("{} at {} MB/s with {}", test, rate, name), true);
        ThroughputOptions throughput;
        throughput.test = test == "tcp-throughput" ? ThroughputTest::kTcp : ThroughputTest::kUdp;
        throughput.duration = options.duration;
        throughput.rate_bytes_per_second = static_cast<std::uint64_t>(rate * kMiB);
        throughput.datagram_size = net.udp_datagram_size;
        const Burst burst(roots_, DevicesToward(interfaces, address));
        const ThroughputResult r = RunThroughput(address, throughput, secret, stop);
        const CounterDeltas deltas = burst.End(throughput.test == ThroughputTest::kTcp);
        json row = ThroughputRow(date, test, rate, name, r);
        AttributeRow(r, throughput.test, rate * kMiB, interfaces, burst.devices(), deltas, row, findings);
        Report(ctx, test, row);
        per_rate.push_back(std::move(row));
      }
      for (const auto& row : per_rate) rows.push_back(row);
      rows.push_back(AverageRow(per_rate, date, test, rate));
      Report(ctx, test, rows.back());
    }
    return rows;
  }

  // The ladder among all hosts at once, coordinated through their
  // responders (plan.h); a host that fails is reported, the others go on.
  static json AllToAllLadder(const FullRunContext& ctx, const NetProbeConfig& net, const NetOptions& options,
                             const Secret& secret, const Hosts& hosts, const std::string& test, json& findings,
                             const std::function<void(const std::string&, bool)>& progress) {
    std::vector<PeerTarget> targets;
    for (const auto& [name, address] : hosts) targets.push_back({name, address});
    json rows = json::array();
    const std::vector<double> rates = options.datarate > 0 ? std::vector<double>{options.datarate} : kLadder;
    for (const double rate : rates) {
      if (ctx.ShouldStop()) break;
      progress(fmt::format("{} at {} MB/s among {} hosts", test, rate, hosts.size()), true);
      AllToAllOptions plan;
      plan.test = test == "tcp-throughput" ? ThroughputTest::kTcp : ThroughputTest::kUdp;
      plan.duration = options.duration;
      plan.rate_bytes_per_second = static_cast<std::uint64_t>(rate * kMiB);
      plan.datagram_size = net.udp_datagram_size;
      const std::string date = VnetperfDate();
      // Each host's row printed as it reports; the table in the hosts' order.
      const auto results = RunAllToAll(
          targets, plan, secret, [&] { return ctx.ShouldStop(); },
          [&](const AllToAllHostResult& r) { Report(ctx, test, PlanRow(date, test, rate, r)); });
      for (std::string& finding : PlanShortfalls(results, test, rate)) findings.push_back(std::move(finding));
      json ok_rows = json::array();
      for (const AllToAllHostResult& r : results) {
        rows.push_back(PlanRow(date, test, rate, r));
        if (r.ok) ok_rows.push_back(rows.back());
      }
      json average = AverageRow(ok_rows, date, test, rate);
      average["mode"] = "all-to-all";
      rows.push_back(std::move(average));
      Report(ctx, test, rows.back());
    }
    return rows;
  }

  // How many hello-confirmed connections each host holds at once.
  static json ConnectionTable(const FullRunContext& ctx, const NetProbeConfig& net, const Secret& secret,
                              const Hosts& hosts) {
    json rows = json::array();
    for (const auto& [name, address] : hosts) {
      const auto r = ConnectionTest(address, secret, net.max_connections, std::chrono::seconds(10));
      // "maximum": what was asked of this peer (our cap or its own lower
      // limit), so that a full row reads accepted == maximum.
      rows.push_back({{"date", VnetperfDate()},
                      {"node", name},
                      {"accepted", r.accepted},
                      {"maximum", r.tried},
                      {"peer_limit", r.peer_limit},
                      {"configured_maximum", net.max_connections}});
      Report(ctx, "connections", rows.back());
    }
    return rows;
  }

  std::function<std::vector<std::string>()> local_addresses_;
  std::function<std::optional<std::string>(const PeerSpec&)> resolve_;
  RouteLookup route_;
  SystemRoots roots_;
  hostperf::RealClock real_clock_;
  const hostperf::Clock* clock_;
  std::shared_ptr<prometheus::Registry> registry_handle_;  // RegistryFor(deps)
  prometheus::Registry& registry_;
  prometheus::Family<prometheus::Histogram>& rtt_;
  prometheus::Family<prometheus::Counter>& sent_;
  prometheus::Family<prometheus::Counter>& lost_;
  prometheus::Family<prometheus::Gauge>& offset_;
  prometheus::Family<prometheus::Gauge>& up_;
  prometheus::Family<prometheus::Gauge>& tcp_;
  prometheus::Family<prometheus::Gauge>& udp_;
  prometheus::Family<prometheus::Gauge>& udp_loss_;
  prometheus::Family<prometheus::Gauge>& udp_jitter_;
  prometheus::Gauge& throughput_rate_limit_;
  prometheus::Family<prometheus::Counter>& throughput_bytes_;
  prometheus::Family<prometheus::Counter>& throughput_skipped_;
  prometheus::Family<prometheus::Gauge>& peers_;
  prometheus::Family<prometheus::Gauge>& last_probe_;
  prometheus::Counter& peers_file_errors_;
  prometheus::Family<prometheus::Gauge>& peers_file_valid_;
  prometheus::Family<prometheus::Gauge>& self_info_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Gauge& responder_up_;
  prometheus::Family<prometheus::Counter>& interface_errors_;
  prometheus::Counter& tcp_retransmits_;
  prometheus::Family<prometheus::Gauge>& interface_info_;
  prometheus::Family<prometheus::Gauge>& interface_speed_;
  prometheus::Family<prometheus::Gauge>& interface_mtu_;
  prometheus::Family<prometheus::Gauge>& peer_interface_;
  prometheus::Family<prometheus::Gauge>& peer_mtu_mismatch_;
  prometheus::Family<prometheus::Gauge>& peer_mtu_;

  // What the attribution keeps between runs (runs never overlap).
  struct RemoteMtuEntry {
    std::optional<std::uint32_t> mtu;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, RemoteMtuEntry> remote_mtu_;                              // by peer
  std::map<std::string, std::string> peer_interfaces_;                            // peer -> interface with a series
  std::map<std::string, std::vector<prometheus::Labels>> interface_info_labels_;  // device -> info series

  std::mutex services_mutex_;  // serialises StartServices (start-up, reload, retry)
  std::mutex state_mutex_;
  std::unique_ptr<Responder> responder_;  // declared last among owners: stopped first
  ResponderSettings responder_settings_;  // what responder_ was started with
  std::string responder_error_;           // why the last start failed; empty once running
  Secret responder_secret_;
  std::vector<std::uint16_t> responder_ports_;
  PeersFile peers_file_;
  std::uint64_t peers_file_failures_seen_ = 0;
  std::vector<std::string> last_errors_;
  std::optional<Assignment> assignment_;
  std::optional<std::string> self_info_peer_;  // the peer of hostperf_net_self_info's series
  std::set<std::string> series_peers_;         // peers that may have series
  std::size_t next_throughput_peer_ = 0;
  bool next_is_udp_ = false;
};

}  // namespace

const std::vector<std::string>& FullRunTests() {
  static const std::vector<std::string> kTests = {"latency", "tcp-throughput", "udp-throughput", "connections"};
  return kTests;
}

Result<NetOptions> ParseNetOptions(const json& options, std::optional<std::chrono::nanoseconds> duration) {
  using R = Result<NetOptions>;
  if (!options.is_null() && !options.is_object()) return R::Error("options must be a JSON object");
  NetOptions out;
  if (duration) out.duration = *duration;  // the run's length, unless the options set their own
  static const json kNone = json::object();
  for (const auto& [key, value] : (options.is_null() ? kNone : options).items()) {
    if (key == "tests") {
      if (!value.is_array()) return R::Error("tests: expected a list");
      for (const auto& test : value) {
        if (!test.is_string() ||
            std::find(FullRunTests().begin(), FullRunTests().end(), test.get<std::string>()) == FullRunTests().end()) {
          return R::Error("tests: unknown test " + test.dump() +
                          " (known: latency, tcp-throughput, udp-throughput, connections)");
        }
        out.tests.push_back(test.get<std::string>());
      }
    } else if (key == "datarate") {
      if (!value.is_number() || value.get<double>() < 0 || value.get<double>() > 100000) {
        return R::Error("datarate: expected MB/s between 0 and 100000");
      }
      out.datarate = value.get<double>();
    } else if (key == "duration") {
      auto parsed = ParseDurationOption(value);
      if (!parsed) return R::Error("duration: " + parsed.error());
      out.duration = *parsed;
    } else if (key == "hosts") {
      if (!value.is_array() || value.empty()) return R::Error("hosts: expected a non-empty list of host names");
      std::vector<std::string> hosts;
      for (const auto& host : value) {
        if (!host.is_string()) return R::Error("hosts: expected strings");
        if (auto spec = ParsePeerSpec(host.get<std::string>(), 14159); !spec) return R::Error("hosts: " + spec.error());
        hosts.push_back(host.get<std::string>());
      }
      out.hosts = std::move(hosts);
    } else if (key == "ignore_bad_hosts") {
      if (!value.is_boolean()) return R::Error("ignore_bad_hosts: expected true or false");
      out.ignore_bad_hosts = value.get<bool>();
    } else if (key == "ports") {
      if (!value.is_array() || value.empty()) return R::Error("ports: expected a non-empty list");
      std::vector<std::uint16_t> ports;
      for (const auto& port : value) {
        if (!port.is_number_integer() || port.get<std::int64_t>() < 1 || port.get<std::int64_t>() > 65535) {
          return R::Error("ports: expected port numbers 1 to 65535");
        }
        ports.push_back(port.get<std::uint16_t>());
      }
      out.ports = std::move(ports);
    } else {
      return R::Error("unknown option \"" + key + "\"");
    }
  }
  if (out.duration <= std::chrono::nanoseconds::zero() || out.duration > kMaxTestDuration) {
    return R::Error("duration: expected seconds, greater than 0 and at most 60");
  }
  return out;
}

Result<std::shared_ptr<const ProbeOptions>> ParseNetModuleOptions(const json& options,
                                                                  std::optional<std::chrono::nanoseconds> duration) {
  return ShareOptions(ParseNetOptions(options, duration));
}

std::optional<std::string> CheckSelfInPeers(const NetProbeConfig& net, const NetProbeSeams& seams,
                                            std::chrono::milliseconds bound) {
  if (net.peers.empty() && net.peers_file.empty()) return std::nullopt;  // its own responder: nothing to find
  const std::uint16_t default_port = net.ports.empty() ? 14159 : net.ports.front();
  std::vector<std::string> entries = net.peers;
  if (!net.peers_file.empty()) {
    PeersFile file;
    if (auto read = file.Refresh(net.peers_file, net.allow_empty_peers_file); !read) {
      return "cannot tell whether this host is in the peer list: " + read.error();
    }
    entries.insert(entries.end(), file.targets().begin(), file.targets().end());
  }
  std::vector<PeerSpec> members;
  for (const std::string& entry : entries) {
    if (auto spec = ParsePeerSpec(entry, default_port)) members.push_back(std::move(spec).value());
  }
  const std::string where = net.peers_file.empty() ? "probes.net.peers" : "peers/peers_file (" + net.peers_file + ")";
  if (!net.self.empty()) {
    if (std::any_of(members.begin(), members.end(), [&](const PeerSpec& m) { return m.name == net.self; })) {
      return std::nullopt;
    }
    return "self = \"" + net.self + "\" is not an entry of " + where +
           ": this host probes as an outside observer and publishes no hostperf_net_self_info, so alerts about it "
           "cannot carry its scrape target's name; check that self is spelled exactly as its entry";
  }
  std::vector<std::uint16_t> ports;
  for (const std::uint16_t port : net.ports) {
    if (port != 0) ports.push_back(port);
  }
  const std::vector<std::string> local =
      SelfAddresses(seams.local_addresses ? seams.local_addresses : InterfaceAddresses, net.bind_address);
  // Resolution may hang on a dead DNS server: done on a thread that is left
  // behind when it outlasts `bound` (the check exits right after).
  struct Search {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<std::string> self;
  };
  auto search = std::make_shared<Search>();
  std::thread([search, members, ports, local, resolve = seams.resolve ? seams.resolve : ResolveMember] {
    auto self = FindSelf(members, ports, local, resolve);
    std::lock_guard lock(search->mu);
    search->self = std::move(self);
    search->done = true;
    search->done_cv.notify_all();
  }).detach();
  std::unique_lock lock(search->mu);
  if (!search->done_cv.wait_for(lock, bound, [&] { return search->done; })) {
    return fmt::format(
        "cannot tell whether this host is in the peer list: resolving its {} entries took longer than {} ms; check "
        "the resolver (/etc/resolv.conf, /etc/hosts) or list the peers by address",
        members.size(), bound.count());
  }
  if (search->self) return std::nullopt;
  std::string ports_text;
  for (const std::uint16_t port : ports) ports_text += (ports_text.empty() ? "" : ",") + std::to_string(port);
  // A few addresses to compare with the list, not every link-local one of
  // every veth on a container host.
  constexpr std::size_t kShownAddresses = 6;
  std::vector<std::string> shown;
  std::size_t hidden = 0;
  for (const std::string& address : local) {
    if (address.starts_with("fe80:") || shown.size() >= kShownAddresses) {
      ++hidden;
    } else {
      shown.push_back(address);
    }
  }
  std::string addresses = fmt::format("{}", fmt::join(shown, ", "));
  if (hidden > 0) addresses += fmt::format(" and {} more", hidden);
  return fmt::format(
      "this host is not in {}: none of its {} entries resolves to one of this host's addresses on port {}, so it "
      "probes as an outside observer and publishes no hostperf_net_self_info (its alerts cannot be joined to its "
      "scrape target). Check that the list names this host by a name that resolves here or by one of its addresses "
      "({}), with the responder port, or set probes.net.self to its entry",
      where, members.size(), ports_text.empty() ? "(ephemeral)" : ports_text, addresses);
}

std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps) {
  return std::make_unique<NetProbe>(deps, NetProbeSeams{});
}

std::unique_ptr<Probe> CreateNetProbe(const ProbeDeps& deps, NetProbeSeams seams) {
  return std::make_unique<NetProbe>(deps, std::move(seams));
}

}  // namespace hostperf::probes::net
