#include "hostperf/probes/net/net_probe.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "hostperf/probes/net/module.h"
#include "hostperf/probes/net/peers.h"
#include "hostperf/probes/net/sockets.h"
#include "probe_test_util.h"
#include "temp_dir.h"

namespace hostperf::probes::net {
namespace {

using namespace std::chrono_literals;
using prometheus::ClientMetric;
using prometheus::MetricFamily;

using test_support::FindSeries;

// Exposition lines of one collected series (a histogram: its buckets, +Inf
// included, plus _sum and _count).
std::size_t Lines(const MetricFamily& family, const ClientMetric& metric) {
  if (family.type == prometheus::MetricType::Histogram) return metric.histogram.bucket.size() + 2;
  if (family.type == prometheus::MetricType::Summary) return metric.summary.quantile.size() + 2;
  return 1;
}

std::size_t CountSeries(const std::vector<MetricFamily>& families) {
  std::size_t n = 0;
  for (const auto& family : families) {
    for (const auto& metric : family.metric) n += Lines(family, metric);
  }
  return n;
}

// Series labelled with this peer, or with any peer when `peer` is empty
// (hostperf_net_self_info, about this host, not a probed peer, aside).
std::size_t CountPeerSeries(const std::vector<MetricFamily>& families, const std::string& peer = "") {
  std::size_t n = 0;
  for (const auto& family : families) {
    if (family.name == "hostperf_net_self_info") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "peer" && (peer.empty() || label.value == peer)) n += Lines(family, metric);
      }
    }
  }
  return n;
}

double Gauge(const std::vector<MetricFamily>& families, const std::string& name,
             const std::vector<ClientMetric::Label>& labels = {}) {
  const auto series = FindSeries(families, name, labels);
  EXPECT_TRUE(series) << name;
  return series ? series->gauge.value : -1;
}

class FakeWallClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return {}; }
  double UnixSeconds() const override { return unix_seconds; }
  double unix_seconds = 1.7e9;
};

// Series every peer in the probed set has once pinged: the RTT histogram
// (18 bounds + +Inf + _sum + _count), packets sent and lost, up and the last
// probe time. An answering peer adds the clock offset, a burst the
// throughput series.
constexpr std::size_t kSeriesPerPingedPeer = 21 + 2 + 1 + 1;
// Series of a resolved peer whose route is known: the interface
// it goes by, the MTU mismatch and this end's MTU; a peer that answered a
// hello adds its own MTU (side="remote").
constexpr std::size_t kInterfaceSeriesPerPeer = 3;
constexpr std::size_t kSeriesPerRoutedPeer = kSeriesPerPingedPeer + kInterfaceSeriesPerPeer;

class NetProbeTest : public ::testing::Test {
 protected:
  NetProbeTest() {
    Net().ports = {0};  // ephemeral responder port
    Net().packets_per_cycle = 5;
    Net().packet_interval = 1ms;
    Net().reply_timeout = 1s;  // returns once answered; generous for a loaded machine
    Net().throughput_duration = 100ms;
    Net().throughput_rate = 8 << 20;
    ProbeDeps deps;
    deps.registry = registry_.get();
    NetProbeSeams seams;
    seams.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
    // Names of the test's own (names_), then the system's resolver.
    seams.resolve = [this](const PeerSpec& spec) -> std::optional<std::string> {
      if (const auto it = names_.find(spec.host); it != names_.end()) return it->second;
      const auto address = ResolveHost(spec.host, spec.port);
      return address ? std::optional<std::string>(address->Host()) : std::nullopt;
    };
    seams.clock = &clock_;
    probe_ = CreateNetProbe(deps, std::move(seams));
    probe_->StartServices(config_.Section("net"));
  }

  ScheduledContext Scheduled() { return test_support::ScheduledWithin(config_, "net", 60s); }
  FullRunContext Full(nlohmann::json options = nullptr) {
    return test_support::FullWithin(config_, "net", 60s, options);
  }

  // The responder's port, learned from a scheduled run against the default self peer.
  std::string SelfAddress() {
    const auto outcome = probe_->RunScheduled(Scheduled());
    return outcome.result["peers"][0]["address"].get<std::string>();
  }

  NetProbeConfig& Net() { return config_.EditSettings<NetProbeConfig>(); }

  FakeWallClock clock_;
  std::map<std::string, std::string> names_;  // host name -> address, before the system's resolver
  config::Config config_ = DefaultConfig();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Probe> probe_;
};

TEST_F(NetProbeTest, DefaultsProbeTheOwnResponder) {
  auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  EXPECT_EQ(outcome.result["peers"][0]["peer"], "localhost");
  EXPECT_EQ(outcome.result["peers"][0]["up"], true);
  EXPECT_EQ(outcome.result["throughput"]["test"], "tcp-throughput");
  outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["throughput"]["test"], "udp-throughput");

  const auto families = registry_->Collect();
  const std::vector<ClientMetric::Label> peer = {{"peer", "localhost"}};
  ASSERT_TRUE(FindSeries(families, "hostperf_net_peer_up", peer));
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", peer)->gauge.value, 1);
  EXPECT_EQ(FindSeries(families, "hostperf_net_rtt_seconds", peer)->histogram.sample_count, 10u);
  EXPECT_EQ(FindSeries(families, "hostperf_net_packets_sent_total", peer)->counter.value, 10);
  EXPECT_EQ(FindSeries(families, "hostperf_net_packets_lost_total", peer)->counter.value, 0);
  EXPECT_NEAR(FindSeries(families, "hostperf_net_clock_offset_seconds", peer)->gauge.value, 0, 0.01);
  EXPECT_GT(FindSeries(families, "hostperf_net_tcp_throughput_bytes_per_second", peer)->gauge.value, 0);
  EXPECT_GT(FindSeries(families, "hostperf_net_udp_throughput_bytes_per_second", peer)->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_responder_up")->gauge.value, 1);
  EXPECT_EQ(FindSeries(families, "hostperf_net_responder_requests_total", {{"type", "ping"}})->counter.value, 10);
}

TEST_F(NetProbeTest, UnresolvableAndDeadPeersDoNotStallOthers) {
  const std::string self = SelfAddress();
  Net().peers = {"nonexistent.invalid", "127.0.0.1:1", self};
  Net().self = "prober:1";  // not in the list: its own responder is a peer like the others
  const auto started = std::chrono::steady_clock::now();
  const auto outcome = probe_->RunScheduled(Scheduled());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  const auto families = registry_->Collect();
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", "nonexistent.invalid"}})->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", "127.0.0.1:1"}})->gauge.value, 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peer_up", {{"peer", self}})->gauge.value, 1);
}

// The entry at this host's address and responder port is this host: never
// probed, and the own-responder series of the run before go with the
// membership change.
TEST_F(NetProbeTest, OwnEntryIsFoundByAddressAndPortAndNotProbed) {
  const std::string self = SelfAddress();  // "localhost" was probed
  Net().peers = {self, "127.0.0.1:1"};
  const auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.result["peers"].size(), 1u) << outcome.result.dump();
  EXPECT_EQ(outcome.result["peers"][0]["peer"], "127.0.0.1:1");
  EXPECT_EQ(outcome.reason, "all_peers_down");
  const auto families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "known"}}), 2);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "probed"}}), 1);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "observers"}}), 1);
  EXPECT_EQ(CountPeerSeries(families, self), 0u);
  EXPECT_EQ(CountPeerSeries(families, "localhost"), 0u);
  EXPECT_EQ(CountPeerSeries(families, "127.0.0.1:1"), kSeriesPerRoutedPeer);
}

// A list naming only this host is a fleet of one: its own entry is pinged
// (the responder is exercised), not skipped as "no peers" on every run.
TEST_F(NetProbeTest, AListOfOnlyThisHostPingsItsOwnEntry) {
  const std::string self = SelfAddress();
  Net().peers = {self};
  const auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  ASSERT_EQ(outcome.result["peers"].size(), 1u) << outcome.result.dump();
  EXPECT_EQ(outcome.result["peers"][0]["peer"], self);
  EXPECT_EQ(outcome.result["peers"][0]["up"], true);
  const auto families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "probed"}}), 1);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "observers"}}), 0);
}

// A peer that leaves the set loses every series in the next run; the ones
// that stay keep theirs, with the time of the run that probed them.
TEST_F(NetProbeTest, PeersThatLeaveLoseAllTheirSeries) {
  const std::string self = SelfAddress();
  Net().self = "prober:1";
  Net().peers = {self, "127.0.0.1:1", "nonexistent.invalid"};
  clock_.unix_seconds = 1000;
  probe_->RunScheduled(Scheduled());  // TCP burst to self
  clock_.unix_seconds = 1030;
  const auto outcome = probe_->RunScheduled(Scheduled());  // UDP burst
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  auto families = registry_->Collect();
  const std::vector<ClientMetric::Label> alive = {{"peer", self}};
  EXPECT_EQ(Gauge(families, "hostperf_net_peer_last_probe_timestamp_seconds", alive), 1030);
  EXPECT_EQ(Gauge(families, "hostperf_net_peer_last_probe_timestamp_seconds", {{"peer", "nonexistent.invalid"}}), 1030);
  // Pinged, answered, and both bursts: every per-peer family.
  EXPECT_EQ(CountPeerSeries(families, self), kSeriesPerRoutedPeer + 1 + 5 + 1);
  EXPECT_EQ(CountPeerSeries(families, "nonexistent.invalid"), kSeriesPerPingedPeer);
  EXPECT_EQ(CountPeerSeries(families, "localhost"), 0u);

  Net().peers = {"127.0.0.1:1"};
  clock_.unix_seconds = 1060;
  probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_EQ(CountPeerSeries(families, self), 0u);
  EXPECT_EQ(CountPeerSeries(families, "nonexistent.invalid"), 0u);
  EXPECT_EQ(CountPeerSeries(families), kSeriesPerRoutedPeer);  // only 127.0.0.1:1 is left
  EXPECT_EQ(Gauge(families, "hostperf_net_peer_last_probe_timestamp_seconds", {{"peer", "127.0.0.1:1"}}), 1060);

  // Back again: its counters restart from 0.
  Net().peers = {self};
  probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_EQ(FindSeries(families, "hostperf_net_packets_sent_total", alive)->counter.value, 5);
  EXPECT_EQ(CountPeerSeries(families, "127.0.0.1:1"), 0u);
}

// The peers file is read again on the next run after a change, without a
// reload: a replacement by rename (same size and time) included; a bad edit
// keeps the last good list and is counted once.
TEST_F(NetProbeTest, PeersFileChangesArePickedUpOnTheNextRun) {
  const std::string self = SelfAddress();
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.json";
  const auto write = [&](const std::string& target) {
    const auto staged = dir.path() / "staged.json";
    std::ofstream(staged) << R"([{"targets": [")" + target + R"("]}])";
    if (std::filesystem::exists(path)) std::filesystem::last_write_time(staged, std::filesystem::last_write_time(path));
    std::filesystem::rename(staged, path);
  };
  std::string other = self;  // same length as self, another port nobody serves
  other.back() = other.back() == '1' ? '2' : '1';
  write(self);
  Net().self = "prober:1";
  Net().peers_file = path.string();
  auto outcome = probe_->RunScheduled(Scheduled());
  EXPECT_EQ(outcome.result["peers"][0]["peer"], self) << outcome.result.dump();
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kSuccess);

  write(other);
  outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.result["peers"].size(), 1u);
  EXPECT_EQ(outcome.result["peers"][0]["peer"], other);
  auto families = registry_->Collect();
  EXPECT_EQ(CountPeerSeries(families, self), 0u);
  EXPECT_EQ(CountPeerSeries(families, other), kSeriesPerRoutedPeer);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peers_file_errors_total")->counter.value, 0);

  std::ofstream(path) << "[{\"targets\": [";  // a bad edit
  for (int run = 0; run < 2; ++run) {
    outcome = probe_->RunScheduled(Scheduled());
    EXPECT_EQ(outcome.result["peers"][0]["peer"], other);
    EXPECT_FALSE(outcome.result["errors"].empty());
  }
  families = registry_->Collect();
  EXPECT_EQ(FindSeries(families, "hostperf_net_peers_file_errors_total")->counter.value, 1);
  EXPECT_EQ(CountPeerSeries(families, other), kSeriesPerRoutedPeer);
}

// The entry this host found itself as, spelled as the peer label,
// so that the mixin can join its alerts to the scrape target's name; absent
// without one, and moved or removed with the membership.
TEST_F(NetProbeTest, SelfInfoNamesTheEntryThisHostFoundItselfAs) {
  const std::string self = SelfAddress();  // "127.0.0.1:<port>"
  auto families = registry_->Collect();
  EXPECT_FALSE(FindSeries(families, "hostperf_net_self_info", {{"peer", "localhost"}}));  // its own responder only

  const std::string port = self.substr(self.rfind(':') + 1);
  names_["db01.example"] = "127.0.0.1";  // the peers file's name for this host
  Net().peers = {"db01.example:" + port, "127.0.0.1:1"};
  auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.result["peers"].size(), 1u) << outcome.result.dump();
  EXPECT_EQ(outcome.result["peers"][0]["peer"], "127.0.0.1:1");
  families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_self_info", {{"peer", "db01.example:" + port}}), 1);
  const auto family = std::find_if(families.begin(), families.end(),
                                   [](const MetricFamily& f) { return f.name == "hostperf_net_self_info"; });
  ASSERT_NE(family, families.end());
  EXPECT_EQ(family->metric.size(), 1u);

  // Another spelling of the same host: the series follows it.
  Net().peers = {self, "127.0.0.1:1"};
  probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_self_info", {{"peer", self}}), 1);
  EXPECT_FALSE(FindSeries(families, "hostperf_net_self_info", {{"peer", "db01.example:" + port}}));

  // Not in the list any more: an outside observer has no self_info.
  Net().peers = {"127.0.0.1:1"};
  probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_FALSE(FindSeries(families, "hostperf_net_self_info", {{"peer", self}}));

  // A configured self that is an entry counts as found, under that entry.
  Net().peers = {"db02:14159", "127.0.0.1:1"};
  Net().self = "db02:14159";
  probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_self_info", {{"peer", "db02:14159"}}), 1);
}

// `[]` written over a good peers file keeps the last good list
// (the per-peer series stay), counts once and reads as not valid; with
// allow_empty_peers_file the empty list is taken. No peers_file: no gauge.
TEST_F(NetProbeTest, EmptiedPeersFileKeepsTheLastGoodListUnlessAllowed) {
  const std::string self = SelfAddress();
  EXPECT_FALSE(FindSeries(registry_->Collect(), "hostperf_net_peers_file_valid"));
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.json";
  std::ofstream(path) << R"([{"targets": ["127.0.0.1:1"]}])";
  Net().self = "prober:1";
  Net().peers_file = path.string();
  auto outcome = probe_->RunScheduled(Scheduled());
  EXPECT_EQ(outcome.result["peers"][0]["peer"], "127.0.0.1:1") << outcome.result.dump();
  auto families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers_file_valid"), 1);

  std::ofstream(path) << "[]";
  for (int run = 0; run < 2; ++run) {
    outcome = probe_->RunScheduled(Scheduled());
    ASSERT_EQ(outcome.result["peers"].size(), 1u) << outcome.result.dump();
    EXPECT_EQ(outcome.result["peers"][0]["peer"], "127.0.0.1:1");
    ASSERT_EQ(outcome.result["errors"].size(), 1u);
    EXPECT_NE(outcome.result["errors"][0].get<std::string>().find("allow_empty_peers_file"), std::string::npos);
  }
  families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers_file_valid"), 0);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peers_file_errors_total")->counter.value, 1);
  EXPECT_EQ(CountPeerSeries(families, "127.0.0.1:1"), kSeriesPerRoutedPeer);

  Net().allow_empty_peers_file = true;
  outcome = probe_->RunScheduled(Scheduled());
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kSkipped) << outcome.result.dump();
  families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers_file_valid"), 1);
  EXPECT_EQ(FindSeries(families, "hostperf_net_peers_file_errors_total")->counter.value, 1);
  EXPECT_EQ(CountPeerSeries(families), 0u);

  Net().peers_file = "";
  probe_->RunScheduled(Scheduled());
  EXPECT_FALSE(FindSeries(registry_->Collect(), "hostperf_net_peers_file_valid"));
}

// --config.check's warning: found by a name that resolves to a local
// address on a responder port (as the daemon does), a configured self that
// is an entry, or a warning that says what to check; a resolver slower than
// the bound is a warning, not a hang.
TEST(NetCheckSelfTest, WarnsWhenThisHostIsNotInThePeerList) {
  NetProbeConfig net;
  net.ports = {14159};
  NetProbeSeams seams;
  seams.local_addresses = [] { return std::vector<std::string>{"10.0.0.5", "127.0.0.1"}; };
  seams.resolve = [](const PeerSpec& spec) -> std::optional<std::string> {
    if (spec.host == "db01") return "10.0.0.5";
    if (spec.host == "db02") return "10.0.0.6";
    return std::nullopt;
  };
  EXPECT_EQ(CheckSelfInPeers(net, seams, 1s), std::nullopt);  // no list: its own responder

  net.peers = {"db01", "db02"};
  EXPECT_EQ(CheckSelfInPeers(net, seams, 1s), std::nullopt);
  net.peers = {"db01:14160", "db02"};  // this host, but not on its responder port
  auto warning = CheckSelfInPeers(net, seams, 1s);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, ::testing::HasSubstr("this host is not in probes.net.peers"));
  EXPECT_THAT(*warning, ::testing::HasSubstr("10.0.0.5, 127.0.0.1"));
  EXPECT_THAT(*warning, ::testing::HasSubstr("port 14159"));
  EXPECT_THAT(*warning, ::testing::HasSubstr("hostperf_net_self_info"));

  net.self = "db02";
  EXPECT_EQ(CheckSelfInPeers(net, seams, 1s), std::nullopt);
  net.self = "db03";
  warning = CheckSelfInPeers(net, seams, 1s);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, ::testing::HasSubstr("self = \"db03\" is not an entry"));

  net.self = "";
  test_support::TempDir dir;
  net.peers = {};
  net.peers_file = (dir.path() / "peers.yaml").string();
  std::ofstream(net.peers_file) << "- targets: [db02, db01]\n";
  EXPECT_EQ(CheckSelfInPeers(net, seams, 1s), std::nullopt);
  std::ofstream(net.peers_file) << "[]\n";
  warning = CheckSelfInPeers(net, seams, 1s);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, ::testing::HasSubstr("lists no targets"));

  std::ofstream(net.peers_file) << "- targets: [db02, db01]\n";
  seams.resolve = [](const PeerSpec&) -> std::optional<std::string> {
    std::this_thread::sleep_for(2s);
    return std::nullopt;
  };
  const auto started = std::chrono::steady_clock::now();
  warning = CheckSelfInPeers(net, seams, 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - started, 1500ms);
  ASSERT_TRUE(warning);
  EXPECT_THAT(*warning, ::testing::HasSubstr("took longer than 200 ms"));
}

TEST_F(NetProbeTest, ThroughputSkipReasonsStartAtZero) {
  const auto families = registry_->Collect();
  for (const char* reason : {"busy", "budget", "no_peer", "error"}) {
    const auto series = FindSeries(families, "hostperf_net_throughput_skipped_total", {{"reason", reason}});
    ASSERT_TRUE(series) << reason;
    EXPECT_EQ(series->counter.value, 0) << reason;
  }
}

// 1000 configured peers: this host's exposition stays small, and its
// per-peer series are exactly S per peer of its observed set. Peers are
// loopback addresses on the discard port: nothing answers, nothing waits long.
TEST_F(NetProbeTest, ExpositionIsBoundedAtAThousandPeers) {
  std::vector<std::string> peers;
  std::vector<PeerSpec> members;
  for (int i = 0; i < 1000; ++i) {
    const std::string host = "127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1);
    peers.push_back(host + ":9");
    members.push_back({host + ":9", host, 9});
  }
  Net().peers = peers;
  Net().self = peers[500];
  Net().packets_per_cycle = 1;
  Net().reply_timeout = 5ms;
  const auto expected = ObservedTargets(peers[500], members, 8);
  auto outcome = probe_->RunScheduled(Scheduled());
  EXPECT_EQ(outcome.reason, "all_peers_down");
  EXPECT_EQ(outcome.result["peers"].size(), expected.size());
  auto families = registry_->Collect();
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "known"}}), 1000);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "observers"}}), 8);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "probed"}}), static_cast<double>(expected.size()));
  EXPECT_EQ(CountPeerSeries(families), kSeriesPerRoutedPeer * expected.size());
  const std::size_t fixed = CountSeries(families) - CountPeerSeries(families);
  std::printf("1000 peers, k=8: %zu series (%zu fixed + %zu x %zu peers)\n", CountSeries(families), fixed,
              kSeriesPerRoutedPeer, expected.size());
  EXPECT_LT(CountSeries(families), 2000u);

  // Every host observing everyone: the cap holds the bound.
  Net().observers = 1000;
  outcome = probe_->RunScheduled(Scheduled());
  families = registry_->Collect();
  EXPECT_EQ(outcome.result["peers"].size(), 32u);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "probed"}}), 32);
  EXPECT_EQ(Gauge(families, "hostperf_net_peers", {{"set", "over_cap"}}), 999 - 32);
  EXPECT_EQ(CountPeerSeries(families), kSeriesPerRoutedPeer * 32);
  EXPECT_LT(CountSeries(families), 2000u);
}

TEST(NetFiguresTest, DownAndUnresolvedPeersAreShown) {
  const nlohmann::json result = {
      {"mode", "scheduled"},
      {"peers",
       {{{"peer", "db1:14159"}, {"up", true}, {"rtt_median_seconds", 150e-6}, {"clock_offset_seconds", 0.001}},
        {{"peer", "db2:14159"}, {"up", false}, {"sent", 20}, {"lost", 20}},
        {{"peer", "db3:14159"}, {"up", false}, {"sent", 20}, {"lost", 20}},
        {{"peer", "gone:14159"}, {"up", false}, {"error", "cannot resolve gone"}}}}};
  const auto figures = NetFigures(result);
  ASSERT_FALSE(figures.empty());
  EXPECT_EQ(figures[0].name, "peers_down");
  EXPECT_EQ(figures[0].shown, "3 of 4 peers down");
  EXPECT_EQ(figures[0].verdict, Verdict::kFail);
  std::set<std::string> down;
  for (const auto& figure : figures) {
    if (figure.name != "peer_up") continue;
    down.insert(figure.subject);
    EXPECT_EQ(figure.verdict, Verdict::kFail);
    EXPECT_EQ(figure.shown.find("unresolved") != std::string::npos, figure.subject == "gone:14159") << figure.shown;
  }
  EXPECT_EQ(down, (std::set<std::string>{"db2:14159", "db3:14159", "gone:14159"}));
  EXPECT_TRUE(std::any_of(figures.begin(), figures.end(), [](const Figure& f) {
    return f.name == "rtt_seconds" && f.subject == "db1:14159" && f.verdict == Verdict::kPass;
  }));

  nlohmann::json healthy = result;
  // json::array: a one-element brace list is the element itself with some
  // compilers (clang), an array with others.
  healthy["peers"] = nlohmann::json::array({result["peers"][0]});
  const auto ok = NetFigures(healthy);
  ASSERT_FALSE(ok.empty());
  EXPECT_EQ(ok[0].shown, "0 of 1 peer down");
  EXPECT_EQ(ok[0].verdict, Verdict::kPass);
}

TEST_F(NetProbeTest, BudgetSkipsThroughput) {
  config_.budget.net_bytes_per_hour = 1024;
  const auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.message;
  EXPECT_EQ(outcome.result["throughput"]["skipped"], "budget");
  EXPECT_EQ(
      FindSeries(registry_->Collect(), "hostperf_net_throughput_skipped_total", {{"reason", "budget"}})->counter.value,
      1);
}

TEST_F(NetProbeTest, FullRunTablesAndBadHosts) {
  const std::string self = SelfAddress();
  const nlohmann::json options = {
      {"hosts", {self}}, {"tests", {"latency", "tcp-throughput", "connections"}}, {"datarate", 8}, {"duration", 0.2}};
  const auto outcome = probe_->RunFull(Full(options));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const auto& tests = outcome.result["tests"];
  ASSERT_EQ(tests["latency"].size(), 1u);
  EXPECT_EQ(tests["latency"][0]["node"], self);
  EXPECT_EQ(tests["latency"][0]["lost"], 0);
  ASSERT_EQ(tests["tcp-throughput"].size(), 2u);  // the host and the average row
  EXPECT_EQ(tests["tcp-throughput"][1]["node"], "average");
  EXPECT_GT(tests["tcp-throughput"][0]["bytes_received"].get<double>(), 0);
  EXPECT_EQ(tests["connections"][0]["accepted"], 64);
  EXPECT_FALSE(tests.contains("udp-throughput"));

  const std::string report = FormatVnetperfReport(outcome.result);
  EXPECT_NE(report.find("The maximum recommended rtt latency"), std::string::npos) << report;
  EXPECT_NE(report.find("rtt latency (us)  | clock skew (us)"), std::string::npos) << report;
  EXPECT_NE(report.find("| tcp-throughput    | 8                 | " + self), std::string::npos) << report;
  EXPECT_NE(report.find("| average "), std::string::npos) << report;

  nlohmann::json bad = options;
  bad["hosts"] = {self, "127.0.0.1:1"};
  bad["tests"] = {"latency"};
  auto failed = probe_->RunFull(Full(bad));
  EXPECT_EQ(failed.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(failed.reason, "bad_hosts");
  ASSERT_EQ(failed.result["bad_hosts"].size(), 1u) << failed.result.dump();  // only the dead one
  EXPECT_FALSE(failed.result["tests"].contains("latency"));                  // nothing ran
  bad["ignore_bad_hosts"] = true;
  const auto ignored = probe_->RunFull(Full(bad));
  ASSERT_EQ(ignored.status, ProbeOutcome::Status::kSuccess) << ignored.message << ": " << ignored.result.dump();
  EXPECT_EQ(ignored.result["tests"]["latency"].size(), 1u);
  EXPECT_EQ(ignored.result["bad_hosts"][0]["node"], "127.0.0.1:1");
}

TEST(NetOptionsTest, Validation) {
  EXPECT_TRUE(ParseNetOptions(nlohmann::json::object()).ok());
  EXPECT_TRUE(ParseNetOptions(
                  {{"tests", {"latency"}}, {"datarate", 0}, {"duration", 1}, {"ports", nlohmann::json::array({14159})}})
                  .ok());
  EXPECT_FALSE(ParseNetOptions({{"tests", {"speed"}}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"duration", 0}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"datarate", -1}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"hosts", {"bad host"}}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"ports", nlohmann::json::array({70000})}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"ports", nlohmann::json::array({-1})}}).ok());
  EXPECT_FALSE(ParseNetOptions({{"bogus", 1}}).ok());
}

TEST(NetProbeNoServicesTest, WithoutSecretFileTheCliCannotAuthenticate) {
  ProbeDeps deps;
  auto probe = CreateNetProbe(deps);  // no StartServices: the CLI's situation
  const FullRunContext ctx = MakeFullRunContext(DefaultConfig(), "net");
  const auto outcome = probe->RunFull(ctx);
  EXPECT_EQ(outcome.status, ProbeOutcome::Status::kFailure);
  EXPECT_EQ(outcome.reason, "no_secret");
}

}  // namespace
}  // namespace hostperf::probes::net
