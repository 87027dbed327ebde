// Attribution inside a host: the sysfs and procfs readers on
// fixture trees, the counter deltas, the report's sentences, the hello's MTU
// extension, and the probe's series and findings with injected routes.
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <prometheus/registry.h>
#include <sys/socket.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/module.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/responder.h"
#include "probe_test_util.h"
#include "temp_dir.h"

namespace hostperf::probes::net {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

SystemRoots FixtureRoots() {
  SystemRoots roots;
  roots.sys = fs::path(HOSTPERF_FIXTURES_DIR) / "sysfs-net-bond";
  roots.proc = fs::path(HOSTPERF_FIXTURES_DIR) / "proc-net-snmp";
  return roots;
}

// A writable copy of the fixtures, so that a test can move counters.
class CopiedRoots {
 public:
  CopiedRoots() {
    fs::copy(FixtureRoots().sys, dir_.path() / "sys", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    fs::copy(FixtureRoots().proc, dir_.path() / "proc", fs::copy_options::recursive);
    roots_.sys = dir_.path() / "sys";
    roots_.proc = dir_.path() / "proc";
  }
  const SystemRoots& roots() const { return roots_; }
  void Set(const std::string& device, const std::string& counter, std::uint64_t value) {
    std::ofstream(roots_.sys / "class" / "net" / device / "statistics" / counter) << value << "\n";
  }
  void SetRetransmits(std::uint64_t value) {
    std::ofstream(roots_.proc / "net" / "snmp")
        << "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab "
           "InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors\n"
        << "Tcp: 1 200 120000 -1 20388 12000 151 1093 14 4532701 4327164 " << value << " 0 2287 0\n";
  }

 private:
  test_support::TempDir dir_;
  SystemRoots roots_;
};

TEST(NetInterfacesTest, ReadsABondAndItsMembers) {
  const InterfaceInfo bond = ReadInterfaceInfo(FixtureRoots(), "bond0");
  EXPECT_EQ(bond.speed_mbps, 20000);
  EXPECT_EQ(bond.duplex, "full");
  EXPECT_EQ(bond.mtu, 9000u);
  EXPECT_EQ(bond.operstate, "up");
  // lower_eth2 and bonding/slaves (eth2 eth3), merged.
  EXPECT_EQ(bond.lowers, (std::vector<std::string>{"eth2", "eth3"}));

  const InterfaceInfo down = ReadInterfaceInfo(FixtureRoots(), "eth3");
  EXPECT_FALSE(down.speed_mbps);  // -1: unknown
  EXPECT_EQ(down.duplex, "unknown");
  EXPECT_EQ(down.operstate, "down");
  EXPECT_TRUE(down.lowers.empty());

  const InterfaceInfo missing = ReadInterfaceInfo(FixtureRoots(), "nosuch0");
  EXPECT_FALSE(missing.speed_mbps);
  EXPECT_FALSE(missing.mtu);
  EXPECT_EQ(missing.operstate, "unknown");
  // A name that is not one is never a path.
  EXPECT_FALSE(ValidInterfaceName("../eth0"));
  EXPECT_FALSE(ValidInterfaceName(".."));
  EXPECT_FALSE(ValidInterfaceName(""));
  EXPECT_TRUE(ValidInterfaceName("bond0.100"));
}

TEST(NetInterfacesTest, DevicesWalkAVlanOnABondDownToItsMembers) {
  int lookups = 0;
  InterfaceCache cache(FixtureRoots(), [&](const std::string& address) -> Result<std::string> {
    ++lookups;
    if (address == "10.0.0.7") return std::string("bond0.100");
    return Failure{"no_route", "no route to " + address};
  });
  ASSERT_TRUE(cache.RouteTo("10.0.0.7"));
  EXPECT_EQ(*cache.RouteTo("10.0.0.7"), "bond0.100");
  EXPECT_FALSE(cache.RouteTo("10.9.9.9"));
  EXPECT_FALSE(cache.RouteTo("10.9.9.9"));
  EXPECT_EQ(lookups, 2);  // cached per run
  EXPECT_EQ(
      cache.Devices("bond0.100"),
      (std::vector<WatchedDevice>{{"bond0.100", ""}, {"bond0", "bond0.100"}, {"eth2", "bond0"}, {"eth3", "bond0"}}));
  EXPECT_EQ(cache.Devices("eth0"), (std::vector<WatchedDevice>{{"eth0", ""}}));
}

TEST(NetInterfacesTest, CountersThatExistAndTcpRetransmits) {
  const std::vector<std::string> devices = {"eth2", "eth3", "nosuch0"};
  const CounterSnapshot snapshot = ReadCounters(FixtureRoots(), devices);
  EXPECT_EQ(snapshot.devices.at("eth2").size(), InterfaceErrorCounters().size());
  EXPECT_EQ(snapshot.devices.at("eth2").at("rx_crc_errors"), 1041u);
  EXPECT_FALSE(snapshot.devices.at("eth2").contains("rx_packets"));  // not an error counter
  EXPECT_EQ(snapshot.devices.at("eth3").size(), 6u);                 // no tx_carrier_errors, no collisions
  EXPECT_TRUE(snapshot.devices.at("nosuch0").empty());
  EXPECT_EQ(snapshot.tcp_retransmits, 2718u);
  SystemRoots no_proc = FixtureRoots();
  no_proc.proc = "/nonexistent";
  EXPECT_FALSE(ReadTcpRetransmits(no_proc));
}

TEST(NetInterfacesTest, DeltasCountGrowthAndNeverWrapOnAReset) {
  CopiedRoots copy;
  const std::vector<std::string> devices = {"bond0", "eth2", "eth3"};
  const CounterSnapshot before = ReadCounters(copy.roots(), devices);
  copy.Set("eth2", "rx_crc_errors", 1041 + 41);
  copy.Set("eth3", "tx_dropped", 0);  // the driver reset it
  copy.SetRetransmits(2718 + 9);
  const CounterDeltas deltas = Diff(before, ReadCounters(copy.roots(), devices));
  EXPECT_EQ(deltas.devices.at("eth2").at("rx_crc_errors"), 41u);
  EXPECT_EQ(deltas.devices.at("eth3").at("tx_dropped"), 0u);
  EXPECT_EQ(deltas.devices.at("bond0").at("rx_errors"), 0u);
  EXPECT_TRUE(deltas.Moved("eth2"));
  EXPECT_FALSE(deltas.Moved("eth3"));
  EXPECT_FALSE(deltas.Moved("bond0"));
  EXPECT_EQ(deltas.tcp_retransmits, 9u);

  CounterDeltas total = deltas;
  total.Add(deltas);
  EXPECT_EQ(total.devices.at("eth2").at("rx_crc_errors"), 82u);
  EXPECT_EQ(total.tcp_retransmits, 18u);
}

TEST(NetInterfacesTest, TheReportNamesTheInterfaceAndTheMemberWhoseCountersMoved) {
  const std::vector<WatchedDevice> bond = {{"bond0", ""}, {"eth2", "bond0"}, {"eth3", "bond0"}};
  CounterDeltas deltas;
  deltas.devices["bond0"] = {{"rx_errors", 0}};
  deltas.devices["eth2"] = {{"rx_crc_errors", 41}, {"rx_errors", 0}};
  deltas.devices["eth3"] = {{"rx_crc_errors", 0}};
  EXPECT_EQ(Attribute("loss 3.2%", "10.0.0.7", bond, deltas),
            "loss 3.2% to peer 10.0.0.7 via bond0 (bond0 member eth2: rx_crc_errors +41)");

  deltas.devices["bond0"]["rx_errors"] = 41;
  deltas.devices["eth3"]["rx_crc_errors"] = 2;
  deltas.tcp_retransmits = 17;
  EXPECT_EQ(Attribute("TCP throughput 2.4 MB/s (expected 32.0 MB/s)", "db7:14159", bond, deltas),
            "TCP throughput 2.4 MB/s (expected 32.0 MB/s) to peer db7:14159 via bond0 (bond0: rx_errors +41; bond0 "
            "member eth2: rx_crc_errors +41; bond0 member eth3: rx_crc_errors +2); TCP retransmits +17 (host-wide)");

  CounterDeltas still;
  still.devices["eth0"] = {{"rx_errors", 0}};
  still.tcp_retransmits = 0;
  const std::vector<WatchedDevice> eth0 = {{"eth0", ""}};
  EXPECT_EQ(Attribute("UDP loss 0.5%", "10.0.0.7", eth0, still),
            "UDP loss 0.5% to peer 10.0.0.7 via eth0: no interface counter moved: the loss is in a qdisc or shaper "
            "here, or past this host");
  EXPECT_EQ(Attribute("UDP loss 0.5%", "10.0.0.7", {}, still),
            "UDP loss 0.5% to peer 10.0.0.7 (its interface is unknown: no route found)");
  EXPECT_EQ(DescribeMtuMismatch("10.0.0.7", "eth0", 9000, 1500),
            "MTU mismatch with 10.0.0.7: eth0 9000 here, 1500 there");
}

// The route lookup against this kernel: loopback leaves by lo.
TEST(NetInterfacesTest, NetlinkFindsTheLoopbackRoute) {
  const auto route = NetlinkRouteInterface("127.0.0.1");
  ASSERT_TRUE(route) << route.error();
  EXPECT_EQ(*route, "lo");
  EXPECT_EQ(*NetlinkRouteInterface("::ffff:127.0.0.1"), "lo");  // as a dual-stack socket names it
  EXPECT_FALSE(NetlinkRouteInterface("not-an-address"));
}

// --- the hello's MTU (protocol revision 1) -------------------------------------

const Secret kSecret(32, 7);

// A message signed as Encode does, from raw header and payload bytes.
std::vector<std::uint8_t> Signed(std::vector<std::uint8_t> bytes, std::span<const std::uint8_t> binding) {
  std::vector<std::uint8_t> data = bytes;
  data.insert(data.end(), binding.begin(), binding.end());
  unsigned int length = 0;
  std::uint8_t mac[kMacSize];
  HMAC(EVP_sha256(), kSecret.data(), static_cast<int>(kSecret.size()), data.data(), data.size(), mac, &length);
  bytes.insert(bytes.end(), mac, mac + kMacSize);
  return bytes;
}

Message Ack(std::uint8_t revision, std::uint32_t mtu) {
  Message ack;
  ack.type = MessageType::kHelloAck;
  ack.hello.revision = revision;
  ack.hello.max_connections = 64;
  ack.hello.nonce = RandomNonce();
  ack.hello.mtu = mtu;
  return ack;
}

TEST(NetProtocolMtuTest, ARevisionOneReplyCarriesTheMtuUnderTheHmac) {
  const Nonce client = RandomNonce();
  auto bytes = Encode(Ack(1, 9000), kSecret, client);
  EXPECT_EQ(bytes.size(), kHeaderSize + *PayloadSize(MessageType::kHelloAck) + kHelloAckExtensionSize + kMacSize);
  const Decoded decoded = Decode(bytes, kSecret, client);
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->hello.revision, 1);
  EXPECT_EQ(decoded.message->hello.mtu, 9000u);
  // The MTU is signed: a changed one fails the HMAC.
  bytes[kHeaderSize + *PayloadSize(MessageType::kHelloAck) + 2] ^= 0x10;
  EXPECT_EQ(Decode(bytes, kSecret, client).error, DecodeError::kBadHmac);
}

TEST(NetProtocolMtuTest, APreviousReleaseReplyHasNoMtuAndIsNoError) {
  // Revision 0: the reply of the previous release, byte for byte (reserved zeros).
  const Nonce client = RandomNonce();
  const auto bytes = Encode(Ack(0, 1500), kSecret, client);
  EXPECT_EQ(bytes.size(), kHeaderSize + *PayloadSize(MessageType::kHelloAck) + kMacSize);
  EXPECT_EQ(bytes[kHeaderSize + 1], 0);  // the revision byte was reserved
  const Decoded decoded = Decode(bytes, kSecret, client);
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->hello.revision, 0);
  EXPECT_EQ(decoded.message->hello.mtu, 0u);  // unknown
}

TEST(NetProtocolMtuTest, LaterRevisionsMayAppendAndMismatchedLengthsAreMalformed) {
  const Nonce client = RandomNonce();
  const std::size_t base = *PayloadSize(MessageType::kHelloAck);
  const auto build = [&](std::uint8_t revision, std::size_t payload) {
    std::vector<std::uint8_t> bytes = {0x48,
                                       0x50,
                                       0x4e,
                                       0x54,
                                       kProtocolVersion,
                                       2,
                                       0,
                                       0,
                                       0,
                                       0,
                                       0,
                                       1,
                                       static_cast<std::uint8_t>(payload >> 8),
                                       static_cast<std::uint8_t>(payload),
                                       0,
                                       0};
    std::vector<std::uint8_t> body(payload, 0);
    body[0] = kProtocolVersion;
    body[1] = revision;
    if (payload >= base + 4) body[base + 2] = 0x05, body[base + 3] = 0xdc;  // 1500
    bytes.insert(bytes.end(), body.begin(), body.end());
    return Signed(bytes, client);
  };
  const Decoded later = Decode(build(2, base + 12), kSecret, client);
  ASSERT_TRUE(later.message) << ToString(later.error);
  EXPECT_EQ(later.message->hello.mtu, 1500u);
  EXPECT_EQ(Decode(build(1, base), kSecret, client).error, DecodeError::kMalformed);      // revision 1, no MTU
  EXPECT_EQ(Decode(build(0, base + 4), kSecret, client).error, DecodeError::kMalformed);  // MTU without revision
}

TEST(NetProtocolMtuTest, TheResponderTellsANewClientItsMtuAndAnOldClientNothing) {
  ResponderOptions options;
  options.ports = {0};
  options.secret = kSecret;
  std::string asked;
  options.reply_mtu = [&](const std::string& client) {
    asked = client;
    return 1400u;
  };
  auto responder = StartResponder(options);
  ASSERT_TRUE(responder) << responder.error();
  const auto address = *ParseNumericAddress("127.0.0.1", (*responder)->Ports()[0]);
  const auto hello = Hello(address, kSecret, 2s);
  ASSERT_TRUE(hello) << hello.error();
  EXPECT_EQ(hello->revision, kProtocolRevision);
  EXPECT_EQ(hello->mtu, 1400u);
  EXPECT_EQ(asked, "127.0.0.1");

  // A client of the previous release sends revision 0 (a reserved zero) and
  // gets the reply it knows: no extension, so its fixed-length check passes.
  auto fd = ConnectTcp(address, std::chrono::steady_clock::now() + 2s);
  ASSERT_TRUE(fd) << fd.error();
  Message old_hello;
  old_hello.type = MessageType::kHello;
  old_hello.hello.revision = 0;
  old_hello.hello.nonce = RandomNonce();
  const auto request = Encode(old_hello, kSecret);
  ASSERT_TRUE(WriteAll(fd->get(), request.data(), request.size(), std::chrono::steady_clock::now() + 2s));
  std::vector<std::uint8_t> reply(kHeaderSize + *PayloadSize(MessageType::kHelloAck) + kMacSize);
  std::size_t got = 0;
  const auto until = std::chrono::steady_clock::now() + 2s;
  while (got < reply.size() && WaitFd(fd->get(), POLLIN, until)) {
    const ssize_t n = ::recv(fd->get(), reply.data() + got, reply.size() - got, 0);
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ASSERT_EQ(got, reply.size());
  const Decoded decoded = Decode(reply, kSecret, old_hello.hello.nonce);
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->hello.revision, 0);
  EXPECT_EQ(decoded.message->hello.mtu, 0u);
}

TEST(NetProtocolMtuTest, AResponderThatCannotTellSaysUnknown) {
  ResponderOptions options;
  options.ports = {0};
  options.secret = kSecret;  // no reply_mtu
  auto responder = StartResponder(options);
  ASSERT_TRUE(responder) << responder.error();
  const auto hello = Hello(*ParseNumericAddress("127.0.0.1", (*responder)->Ports()[0]), kSecret, 2s);
  ASSERT_TRUE(hello) << hello.error();
  EXPECT_FALSE(hello->mtu);
}

// --- the probe: series, findings and the report ------------------------------------

std::optional<double> Value(prometheus::Registry& registry, const std::string& name,
                            const std::vector<prometheus::ClientMetric::Label>& labels) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& metric : family.metric) {
      if (metric.label == labels) {
        return family.type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value;
      }
    }
  }
  return std::nullopt;
}

class NetProbeInterfacesTest : public ::testing::Test {
 protected:
  NetProbeInterfacesTest() {
    Net().ports = {0};
    Net().packets_per_cycle = 3;
    Net().packet_interval = 1ms;
    Net().reply_timeout = 1s;
    Net().throughput_duration = 100ms;
    Net().throughput_rate = 4 << 20;
    ProbeDeps deps;
    deps.registry = registry_.get();
    deps.roots = copy_.roots();
    NetProbeSeams seams;
    seams.local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; };
    // Both ends are this process: the prober (this thread) routes through the
    // bond (MTU 9000), the responder (its own thread) answers through eth0 (1500).
    const auto prober = std::this_thread::get_id();
    seams.route_interface = [prober](const std::string&) -> Result<std::string> {
      return std::string(std::this_thread::get_id() == prober ? "bond0" : "eth0");
    };
    probe_ = CreateNetProbe(deps, std::move(seams));
    probe_->StartServices(config_.Section("net"));
  }
  NetProbeConfig& Net() { return config_.EditSettings<NetProbeConfig>(); }
  ScheduledContext Scheduled() { return test_support::ScheduledWithin(config_, "net", 60s); }
  FullRunContext Full(nlohmann::json options = nullptr) {
    return test_support::FullWithin(config_, "net", 60s, options);
  }

  CopiedRoots copy_;
  config::Config config_ = DefaultConfig();
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<Probe> probe_;
};

TEST_F(NetProbeInterfacesTest, ScheduledRunsExportTheInterfaceAndTheMtuMismatch) {
  const auto outcome = probe_->RunScheduled(Scheduled());
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  auto& r = *registry_;
  EXPECT_EQ(Value(r, "hostperf_net_peer_interface_info", {{"interface", "bond0"}, {"peer", "localhost"}}), 1);
  // The bond and both members, each member one info series of the bond.
  EXPECT_EQ(Value(r, "hostperf_net_interface_info",
                  {{"duplex", "full"}, {"interface", "bond0"}, {"lower", "eth2"}, {"operstate", "up"}}),
            1);
  EXPECT_EQ(Value(r, "hostperf_net_interface_info",
                  {{"duplex", "full"}, {"interface", "bond0"}, {"lower", "eth3"}, {"operstate", "up"}}),
            1);
  EXPECT_EQ(Value(r, "hostperf_net_interface_info",
                  {{"duplex", "unknown"}, {"interface", "eth3"}, {"lower", ""}, {"operstate", "down"}}),
            1);
  EXPECT_EQ(Value(r, "hostperf_net_interface_speed_bytes_per_second", {{"interface", "bond0"}}), 20000e6 / 8);
  EXPECT_FALSE(Value(r, "hostperf_net_interface_speed_bytes_per_second", {{"interface", "eth3"}}));  // unknown
  EXPECT_EQ(Value(r, "hostperf_net_interface_mtu_bytes", {{"interface", "eth2"}}), 9000);
  // Counters at 0 from the first run, only those the device has.
  EXPECT_EQ(Value(r, "hostperf_net_interface_errors_during_probe_total",
                  {{"counter", "rx_crc_errors"}, {"interface", "eth2"}}),
            0);
  EXPECT_FALSE(
      Value(r, "hostperf_net_interface_errors_during_probe_total", {{"counter", "collisions"}, {"interface", "eth3"}}));
  EXPECT_FALSE(Value(r, "hostperf_net_interface_info",
                     {{"duplex", "full"}, {"interface", "eth0"}, {"lower", ""}, {"operstate", "up"}}));
  EXPECT_TRUE(Value(r, "hostperf_net_tcp_retransmits_during_probe_total", {}));
  // The responder answered through eth0 (1500); this end routes through bond0 (9000).
  EXPECT_EQ(Value(r, "hostperf_net_peer_mtu_bytes", {{"peer", "localhost"}, {"side", "local"}}), 9000);
  EXPECT_EQ(Value(r, "hostperf_net_peer_mtu_bytes", {{"peer", "localhost"}, {"side", "remote"}}), 1500);
  EXPECT_EQ(Value(r, "hostperf_net_peer_mtu_mismatch", {{"peer", "localhost"}}), 1);
  const auto& findings = outcome.result["findings"];
  ASSERT_FALSE(findings.empty()) << outcome.result.dump();
  EXPECT_EQ(findings[0], "MTU mismatch with localhost: bond0 9000 here, 1500 there");
  EXPECT_EQ(outcome.result["peers"][0]["interface"]["interface"], "bond0");
  EXPECT_EQ(outcome.result["peers"][0]["interface"]["mtu_mismatch"], true);
}

TEST_F(NetProbeInterfacesTest, FullRunsNameTheInterfaceMismatchAndShortfallInJsonAndReport) {
  // The responder's port from a scheduled run; then a full run at a rate
  // loopback reaches: the interface is named in every row, the mismatch in
  // the findings (shortfalls are tested above, with injected counters).
  const auto scheduled = probe_->RunScheduled(Scheduled());
  const std::string self = scheduled.result["peers"][0]["address"].get<std::string>();
  const nlohmann::json options = {
      {"hosts", {self}}, {"tests", {"latency", "tcp-throughput"}}, {"datarate", 4}, {"duration", 0.2}};
  const auto outcome = probe_->RunFull(Full(options));
  ASSERT_EQ(outcome.status, ProbeOutcome::Status::kSuccess) << outcome.reason << ": " << outcome.message;
  const auto& interfaces = outcome.result["interfaces"];
  ASSERT_EQ(interfaces.size(), 1u) << outcome.result.dump();
  EXPECT_EQ(interfaces[0]["interface"], "bond0");
  EXPECT_EQ(interfaces[0]["lower"].size(), 2u);
  EXPECT_EQ(interfaces[0]["mtu_local"], 9000);
  EXPECT_EQ(interfaces[0]["mtu_remote"], 1500);
  EXPECT_EQ(outcome.result["tests"]["tcp-throughput"][0]["interface"], "bond0");
  EXPECT_EQ(outcome.result["tests"]["latency"][0]["interface"], "bond0");
  EXPECT_EQ(outcome.result["findings"][0], "MTU mismatch with " + self + ": bond0 9000 here, 1500 there");
  const std::string report = FormatVnetperfReport(outcome.result);
  EXPECT_NE(report.find(self + " via bond0 (bond0 member eth2, bond0 member eth3): MTU 9000 here, 1500 there"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("Findings:\n  MTU mismatch with " + self), std::string::npos) << report;
}

TEST(NetReportTest, FindingsAndShortfallsAreInTheTextReport) {
  const nlohmann::json result = {
      {"tests", nlohmann::json::object()},
      {"interfaces",
       {{{"node", "10.0.0.7:14159"},
         {"interface", "eth0"},
         {"lower", nlohmann::json::array()},
         {"mtu_local", 1500},
         {"mtu_remote", nullptr},
         {"mtu_mismatch", false}},
        {{"node", "10.0.0.8:14159"}, {"interface", nullptr}, {"error", "no route to 10.0.0.8"}}}},
      {"findings", {"UDP loss 3.2% to peer 10.0.0.7:14159 via eth0 (bond0 member eth2: rx_crc_errors +41)"}}};
  const std::string report = FormatVnetperfReport(result);
  EXPECT_NE(report.find("10.0.0.7:14159 via eth0: MTU 1500 here, unknown there\n"), std::string::npos) << report;
  EXPECT_NE(report.find("10.0.0.8:14159: interface unknown (no route to 10.0.0.8)"), std::string::npos) << report;
  EXPECT_NE(report.find("Findings:\n  UDP loss 3.2% to peer 10.0.0.7:14159 via eth0 (bond0 member eth2: "
                        "rx_crc_errors +41)\n"),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace hostperf::probes::net
