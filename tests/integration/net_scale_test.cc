// A cluster of a hundred hosts on one kernel: a hundred hostperf-peer
// processes, each on its own loopback address (127.0.2.1 ...), each on
// vnetperf's three ports, coordinated by `hostperf net` from this process.
// They are started here without SSH (net_ssh_test.cc covers the transport;
// this covers the size): one all-hosts throughput run in which every host
// sends to and receives from the 99 others over the rounds of the schedule
// (plan.h, AllToAllSchedule), with balanced per-host totals, and one
// connections run above the default of 64 connections per host.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/orchestration.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

constexpr const char* kSecret = "net-scale-test-shared-secret-0123456789abcdef";
// Under the sanitizers (the test command's second stage) every process
// runs several times slower: 40 hosts there, still in rounds.
#if defined(HOSTPERF_UNDER_ASAN) || defined(HOSTPERF_UNDER_TSAN)
constexpr int kHosts = 40;
#else
constexpr int kHosts = 100;
#endif
// Hosts that hold fewer connections than the test asks for: their own
// limit is what the connections test finds.
constexpr int kLowLimitHosts = 3;
constexpr int kLowLimit = 40;
constexpr int kConnectionsAsked = 120;
constexpr int kFanOut = 16;
constexpr int kRounds = (kHosts - 1 + kFanOut - 1) / kFanOut;

class NetScaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // 100 peers, each holding up to 150 connections, and the CLI's own.
    probes::net::RaiseOpenFileLimit();
    dir_.Write("secret", kSecret);
    const std::string key = dir_.path() + "/orchestration.key";
    ASSERT_EQ(RunCommand("/usr/bin/openssl", {"genpkey", "-algorithm", "ed25519", "-out", key}, 20s).status, 0);
    ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
    const auto loaded = probes::net::OrchestrationKey::FromPemFile(key);
    ASSERT_TRUE(loaded) << loaded.error();
    public_key_hex_ = probes::net::HexDigits(loaded->public_key());
    cli_config_ = dir_.Write("cli.toml", "[probes.net]\nsecret_file = \"" + dir_.path() +
                                             "/secret\"\norchestration_key_file = \"" + key + "\"\n");
    port_ = FreeLoopbackPort();
    ASSERT_NE(port_, 0);
  }

  static std::string Address(int i) { return "127.0.2." + std::to_string(i + 1); }
  std::string Host(int i) const { return Address(i) + ":" + std::to_string(port_); }

  // hostperf-peer on Address(i), on `ports`, holding `connections` at once.
  void StartPeer(int i, const std::string& ports, int connections) {
    peers_.push_back(std::make_unique<ChildProcess>(
        PeerProgram(),
        std::vector<std::string>{"--bind", Address(i), "--ports", ports, "--max-connections",
                                 std::to_string(connections)},
        std::map<std::string, std::string>{}, std::string(kSecret) + "\n" + public_key_hex_ + "\n\n"));
  }
  // What the peers dropped and why (their standard error), for a failure's message.
  std::string PeerDrops() const {
    std::string drops;
    for (const auto& peer : peers_) {
      std::istringstream lines(peer->Stderr());
      for (std::string line; std::getline(lines, line) && drops.size() < 8000;) {
        if (line.find("dropped") != std::string::npos) drops += line + "\n";
      }
    }
    return drops;
  }
  void AwaitPeers() {
    for (const auto& peer : peers_) {
      ASSERT_TRUE(peer->WaitForStderr("hostperf-peer: serving on", 30s)) << peer->Stderr();
    }
  }

  // `hostperf net` among the first `hosts` hosts: exit status, output and the JSON results.
  std::pair<CommandResult, nlohmann::json> Net(int hosts, std::vector<std::string> args) {
    std::string list;
    for (int i = 0; i < hosts; ++i) list += Host(i) + "\n";
    const std::string hosts_file = dir_.Write("hosts", list);
    const std::string results = dir_.path() + "/results.json";
    std::filesystem::remove(results);
    std::vector<std::string> all = {
        "--config.file=" + cli_config_, "net", "--hosts", hosts_file, "--output-file", results};
    all.insert(all.end(), args.begin(), args.end());
    auto run = RunCommand(HOSTPERF_CLI_BIN, all, 600s);
    std::ifstream in(results);
    auto json = nlohmann::json::parse(in, nullptr, false);
    return {run, json.is_discarded() ? nlohmann::json::object() : json};
  }

  TempDir dir_;
  std::string public_key_hex_;
  std::string cli_config_;
  std::uint16_t port_ = 0;
  std::vector<std::unique_ptr<ChildProcess>> peers_;
};

TEST_F(NetScaleTest, AHundredHostsAllToAllInRoundsAndConnectionsAbove64) {
  const std::string three_ports =
      std::to_string(port_) + "," + std::to_string(port_ + 1) + "," + std::to_string(port_ + 2);
  // Peers that hold 33 connections: a fan-out of 16 (room for a round's
  // sessions and the last round's still closing), 7 rounds. (A hundred
  // hosts on two cores: 16 sender threads per host at once, not 32, keep
  // every host answering within its deadlines.)
  for (int i = 0; i < kHosts; ++i) StartPeer(i, three_ports, 2 * kFanOut + 1);
  AwaitPeers();

  // All hosts at once, 2 MB/s each, in rounds of 16 peers: ceil((hosts - 1) / 16).
  {
    const auto start = std::chrono::steady_clock::now();
    const auto [run, json] =
        Net(kHosts, {"--ports", std::to_string(port_), "--datarate", "2", "--duration", "1", "tcp-throughput"});
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    const auto took = std::chrono::steady_clock::now() - start;
    std::cerr << kHosts << " hosts, " << kRounds << " rounds of 1 s: " << std::chrono::duration<double>(took).count()
              << " s\n";
    const auto& rows = json["tests"]["tcp-throughput"];
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(kHosts + 1)) << run.err;
    std::vector<double> sent, received;
    for (const auto& row : rows) {
      if (row["node"] == "average") continue;
      EXPECT_EQ(row["outcome"], "ok") << row.dump() << "\n" << PeerDrops();
      EXPECT_EQ(row["mode"], "all-to-all") << row.dump();
      EXPECT_EQ(row["sessions_ok"], kHosts - 1) << "every other host, once: " << row.dump();
      EXPECT_EQ(row["peers_received"], kHosts - 1) << row.dump();
      EXPECT_EQ(row["rounds"], kRounds) << row.dump();
      // The rate held in each round, and each round lasted its second.
      EXPECT_GT(row["duration_seconds"].get<double>(), kRounds - 0.5) << row.dump();
      EXPECT_GT(row["mb_per_second_sent"].get<double>(), 2 * 0.6) << row.dump();
      EXPECT_LT(row["mb_per_second_sent"].get<double>(), 2 * 1.4) << row.dump();
      sent.push_back(row["bytes_sent"].get<double>());
      received.push_back(row["bytes_received"].get<double>());
    }
    ASSERT_EQ(sent.size(), static_cast<std::size_t>(kHosts));
    // Balanced: every host sent and received for as long at the same rate.
    // Generous bounds on a shared 2-core machine.
    const auto [sent_min, sent_max] = std::minmax_element(sent.begin(), sent.end());
    const auto [received_min, received_max] = std::minmax_element(received.begin(), received.end());
    EXPECT_GT(*sent_min, 0.5 * *sent_max);
    EXPECT_GT(*received_min, 0.5 * *received_max);
    EXPECT_GT(*sent_min, 0.4 * kRounds * (2 << 20)) << "rounds of a second at 2 MiB/s";
  }

  // The connections test above 64: each host holds 120 at once, except the
  // ones whose own limit is lower.
  peers_.clear();
  for (int i = 0; i < kHosts; ++i) StartPeer(i, three_ports, i < kLowLimitHosts ? kLowLimit : 150);
  AwaitPeers();
  {
    const auto [run, json] = Net(kHosts, {"--max-connections", std::to_string(kConnectionsAsked), "connections"});
    ASSERT_EQ(run.status, 0) << run.out << run.err;
    const auto& rows = json["tests"]["connections"];
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(kHosts)) << run.err;
    for (int i = 0; i < kHosts; ++i) {
      const auto& row = rows[static_cast<std::size_t>(i)];
      EXPECT_EQ(row["node"], Host(i));
      const int expected = i < kLowLimitHosts ? kLowLimit : kConnectionsAsked;
      EXPECT_EQ(row["accepted"], expected) << row.dump();
      EXPECT_EQ(row["maximum"], expected) << row.dump();
      EXPECT_EQ(row["configured_maximum"], kConnectionsAsked) << row.dump();
    }
  }
}

// The requests a peer answered, from its last line once its input closed.
long RequestsAnswered(ChildProcess& peer) {
  peer.CloseInput();
  if (!peer.Wait(10s)) return -1;
  const std::string err = peer.Stderr();
  const auto at = err.rfind("): ");
  return at == std::string::npos ? -1 : std::stol(err.substr(at + 3));
}

// vnetperf's three ports: TCP throughput goes to the second where the
// host's responder listens on it, else stays on the first (a daemon with
// one port, tested with `--ports P`).
TEST_F(NetScaleTest, ThroughputUsesTheSecondOfThreePortsWhereTheResponderListens) {
  const std::string p = std::to_string(port_);
  // Listening on the first port only: measured there.
  for (int i = 0; i < 2; ++i) StartPeer(i, p, 64);
  AwaitPeers();
  const auto [first, first_json] = Net(2, {"--ports", p, "--datarate", "1", "--duration", "1", "tcp-throughput"});
  EXPECT_EQ(first.status, 0) << first.out << first.err;

  // Host 0: one responder on the first port, another on the second. The
  // test's plan goes to the second; the first sees the hellos only.
  peers_.clear();
  StartPeer(0, p, 64);
  StartPeer(0, std::to_string(port_ + 1), 64);
  StartPeer(1, p + "," + std::to_string(port_ + 1) + "," + std::to_string(port_ + 2), 64);
  AwaitPeers();
  const auto [second, second_json] = Net(2, {"--ports", p, "--datarate", "1", "--duration", "1", "tcp-throughput"});
  EXPECT_EQ(second.status, 0) << second.out << second.err;
  const long on_first = RequestsAnswered(*peers_[0]);
  const long on_second = RequestsAnswered(*peers_[1]);
  EXPECT_GE(on_second, 4) << "hello, control hello, plan, go: " << peers_[1]->Stderr();
  EXPECT_GE(on_first, 1) << "the run's hello: " << peers_[0]->Stderr();
  EXPECT_LE(on_first, 2) << "the hosts' hellos only: " << peers_[0]->Stderr();
}

}  // namespace
}  // namespace hostperf::testing
