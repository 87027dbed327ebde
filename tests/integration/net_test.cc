// The net probe between real daemons: three hostperf_exporter processes on
// loopback (separate responder ports, one shared secret file) probing each
// other, the responder's protocol rules seen from outside, and `hostperf net`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hostperf/base/files.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/protocol.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
namespace net = hostperf::probes::net;

constexpr const char* kSecret = "integration-test-shared-secret-0123456789";

std::string Peer(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

// One daemon with its responder on `port`, probing `peers` every second.
class NetDaemon {
 public:
  NetDaemon(const TempDir& dir, const std::string& name, std::uint16_t port, const std::vector<std::uint16_t>& peers,
            const std::string& extra = "")
      : port_(port) {
    std::string list;
    for (auto peer : peers) list += (list.empty() ? "\"" : ", \"") + Peer(peer) + "\"";
    const std::string config = dir.Write(
        name + ".toml",
        "state_directory = \"" + dir.path() + "/" + name +
            "\"\n"
            "[scheduler]\nfirst_run_splay = \"1s\"\n"
            "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.disk]\nenabled = false\n"
            "[probes.net]\ninterval = \"2s\"\nbind_address = \"127.0.0.1\"\nports = [" +
            std::to_string(port) +
            "]\n"
            "secret_file = \"" +
            dir.path() + "/secret\"\npeers = [" + list +
            "]\n"
            "packets_per_cycle = 5\npacket_interval = \"5ms\"\nreply_timeout = \"800ms\"\n"
            "throughput_duration = \"100ms\"\nthroughput_rate = \"4mb\"\n" +
            extra);
    process_ = std::make_unique<ChildProcess>(
        HOSTPERF_EXPORTER_BIN, std::vector<std::string>{"--config.file=" + config, "--web.listen-address=127.0.0.1:0",
                                                        "--web.enable-lifecycle"});
  }

  int HttpPort() {
    if (http_port_ == 0) {
      http_port_ = process_->ListeningPort();
      EXPECT_NE(http_port_, 0) << process_->Stderr();
    }
    return http_port_;
  }

  std::string Metrics() {
    const auto reply = HttpRequest(HttpPort(), "GET", "/metrics");
    return reply ? reply->body : "";
  }

  // Polls until `predicate(metrics)` holds.
  template <typename Predicate>
  bool WaitFor(Predicate predicate, std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (predicate(Metrics())) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  void Kill() { process_.reset(); }
  std::uint16_t port() const { return port_; }
  ChildProcess& process() { return *process_; }

 private:
  std::uint16_t port_;
  std::unique_ptr<ChildProcess> process_;
  int http_port_ = 0;
};

std::string Series(const std::string& family, std::uint16_t peer) { return family + "{peer=\"" + Peer(peer) + "\"}"; }

class NetIntegrationTest : public ::testing::Test {
 protected:
  NetIntegrationTest() { dir_.Write("secret", kSecret); }
  net::Secret SharedSecret() const { return net::Secret(kSecret, kSecret + std::strlen(kSecret)); }
  TempDir dir_;
};

TEST_F(NetIntegrationTest, ThreeDaemonsProbeEachOtherAndSeeOneDie) {
  const std::uint16_t ports[3] = {FreeLoopbackPort(), FreeLoopbackPort(), FreeLoopbackPort()};
  std::vector<std::unique_ptr<NetDaemon>> daemons;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::uint16_t> peers;
    for (int j = 0; j < 3; ++j) {
      if (j != i) peers.push_back(ports[j]);
    }
    daemons.push_back(std::make_unique<NetDaemon>(dir_, "d" + std::to_string(i), ports[i], peers));
  }
  // Latency and TCP throughput for every pair (throughput goes to one peer per
  // run, TCP and UDP alternating, so each pair gets its TCP burst within a few runs).
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      if (i == j) continue;
      SCOPED_TRACE("daemon " + std::to_string(i) + " -> " + std::to_string(j));
      EXPECT_TRUE(daemons[i]->WaitFor(
          [&](const std::string& m) {
            return Sample(m, Series("hostperf_net_peer_up", ports[j])) == 1.0 &&
                   Sample(m, "hostperf_net_rtt_seconds_count{peer=\"" + Peer(ports[j]) + "\"}").value_or(0) > 0 &&
                   Sample(m, Series("hostperf_net_clock_offset_seconds", ports[j])).has_value() &&
                   Sample(m, Series("hostperf_net_tcp_throughput_bytes_per_second", ports[j])).value_or(0) > 0;
          },
          40s))
          << daemons[i]->Metrics();
    }
  }
  daemons[2]->Kill();
  const std::string rtt_count = "hostperf_net_rtt_seconds_count{peer=\"" + Peer(ports[1]) + "\"}";
  const double before = Sample(daemons[0]->Metrics(), rtt_count).value_or(0);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(daemons[i]->WaitFor(
        [&](const std::string& m) { return Sample(m, Series("hostperf_net_peer_up", ports[2])) == 0.0; }, 20s))
        << daemons[i]->Metrics();
  }
  // The others keep probing each other.
  EXPECT_TRUE(
      daemons[0]->WaitFor([&](const std::string& m) { return Sample(m, rtt_count).value_or(0) > before; }, 20s));
  EXPECT_EQ(Sample(daemons[0]->Metrics(), Series("hostperf_net_peer_up", ports[1])), 1.0);
}

TEST_F(NetIntegrationTest, BadHmacGetsNoReplyAndSecondThroughputClientGetsBusy) {
  const std::uint16_t port = FreeLoopbackPort();
  NetDaemon daemon(dir_, "d", port, {port}, "enabled = false\n");  // responder only
  ASSERT_GT(daemon.HttpPort(), 0);
  const auto address = *net::ParseNumericAddress("127.0.0.1", port);
  const net::PeerTarget target{"d", address};
  net::LatencyOptions options;
  options.packets = 3;
  options.interval = 5ms;
  options.reply_timeout = 2s;  // generous: a loaded machine, and they return once answered
  const auto never = [] { return false; };
  const auto good = net::MeasureLatency(std::span(&target, 1), options, SharedSecret(), never);
  EXPECT_EQ(good[0].received, 3u);
  const auto bad = net::MeasureLatency(std::span(&target, 1), options, net::Secret(40, 'x'), never);
  EXPECT_EQ(bad[0].received, 0u);
  EXPECT_TRUE(daemon.WaitFor(
      [](const std::string& m) {
        return Sample(m, "hostperf_net_responder_dropped_total{reason=\"bad_hmac\"}").value_or(0) >= 3;
      },
      10s));

  net::ThroughputResult first;
  std::thread runner([&] {
    net::ThroughputOptions throughput;
    throughput.duration = 3s;
    throughput.rate_bytes_per_second = 4 << 20;
    first = net::RunThroughput(address, throughput, SharedSecret(), never);
  });
  // The first session is accepted before the second asks (not a fixed sleep:
  // a loaded machine can take longer to connect and say hello).
  EXPECT_TRUE(daemon.WaitFor(
      [](const std::string& m) {
        return Sample(m, "hostperf_net_responder_requests_total{type=\"session_start\"}").value_or(0) >= 1;
      },
      10s));
  net::ThroughputOptions throughput;
  throughput.duration = 100ms;
  const auto second = net::RunThroughput(address, throughput, SharedSecret(), never);
  runner.join();
  EXPECT_EQ(second.outcome, net::SessionOutcome::kBusy) << second.error;
  EXPECT_EQ(first.outcome, net::SessionOutcome::kOk) << first.error;
  EXPECT_GT(first.bytes_received, 0u);
}

// Peer latency against one port: the number of pings answered.
std::uint32_t PingsAnswered(std::uint16_t port, const net::Secret& secret) {
  const net::PeerTarget target{"p", *net::ParseNumericAddress("127.0.0.1", port)};
  net::LatencyOptions options;
  options.packets = 3;
  options.interval = 5ms;
  options.reply_timeout = 2s;  // generous: a loaded machine, and they return once answered
  return net::MeasureLatency(std::span(&target, 1), options, secret, [] { return false; })[0].received;
}

TEST_F(NetIntegrationTest, ResponderRecoversFromAPortInUseAndMovesOnReload) {
  const std::uint16_t first = FreeLoopbackPort();
  const std::uint16_t second = FreeLoopbackPort();
  ASSERT_NE(first, second);
  // Another process holds the UDP port: the responder cannot start.
  // CLOEXEC: the daemon must not inherit the blocker and hold the port itself.
  auto blocker = std::make_unique<net::Fd>(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  const auto blocked = *net::ParseNumericAddress("127.0.0.1", first);
  ASSERT_EQ(::bind(blocker->get(), blocked.get(), blocked.length), 0) << std::strerror(errno);
  NetDaemon daemon(dir_, "d", first, {});
  EXPECT_TRUE(daemon.WaitFor(
      [](const std::string& m) {
        return Sample(m, "hostperf_probe_failures_total{probe=\"net\",reason=\"responder_down\"}").value_or(0) >= 1 &&
               Sample(m, "hostperf_net_responder_up") == 0.0;
      },
      20s))
      << daemon.Metrics();
  // The port comes free: the next scheduled run starts the responder.
  blocker.reset();
  EXPECT_TRUE(daemon.WaitFor([](const std::string& m) { return Sample(m, "hostperf_net_responder_up") == 1.0; }, 20s))
      << daemon.process().Stderr();
  EXPECT_EQ(PingsAnswered(first, SharedSecret()), 3u);

  // A reload that moves the responder to another port and rotates the secret.
  const std::string rotated = "rotated-secret-for-the-reload-test-0123456789";
  dir_.Write("secret", rotated);
  std::string config = hostperf::ReadFile(dir_.path() + "/d.toml").value_or("");
  const std::string from = "ports = [" + std::to_string(first) + "]";
  ASSERT_NE(config.find(from), std::string::npos);
  config.replace(config.find(from), from.size(), "ports = [" + std::to_string(second) + "]");
  dir_.Write("d.toml", config);
  const auto reload = HttpRequest(daemon.HttpPort(), "POST", "/-/reload");
  ASSERT_TRUE(reload.has_value());
  EXPECT_EQ(reload->status, 200) << reload->body;
  const net::Secret rotated_secret(rotated.begin(), rotated.end());
  EXPECT_EQ(PingsAnswered(second, rotated_secret), 3u);
  EXPECT_EQ(PingsAnswered(second, SharedSecret()), 0u);
  EXPECT_EQ(PingsAnswered(first, rotated_secret), 0u);
  EXPECT_EQ(Sample(daemon.Metrics(), "hostperf_net_responder_up"), 1.0);
}

std::size_t CountOf(const std::string& text, const std::string& part) {
  std::size_t count = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++count;
  return count;
}

TEST_F(NetIntegrationTest, CliAgainstTwoDaemonsPrintsBothTables) {
  const std::uint16_t a = FreeLoopbackPort();
  const std::uint16_t b = FreeLoopbackPort();
  NetDaemon first(dir_, "a", a, {b}, "enabled = false\n");
  NetDaemon second(dir_, "b", b, {a}, "enabled = false\n");
  ASSERT_GT(first.HttpPort(), 0);
  ASSERT_GT(second.HttpPort(), 0);
  const std::string config = dir_.Write("cli.toml", "[probes.net]\nsecret_file = \"" + dir_.path() + "/secret\"\n");
  const std::string results = dir_.path() + "/results.json";
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              {"--config.file=" + config, "net", "--hosts", Peer(a) + "," + Peer(b), "--datarate", "8",
                               "--duration", "0.3", "--output-file", results, "latency", "tcp-throughput"},
                              60s);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  // The reference's threshold (1000 us), the same as the alerts'.
  EXPECT_THAT(run.out, HasSubstr("The maximum recommended rtt latency is 1000 microseconds"));
  // Each table once, in vnetperf's order, whatever the rows' timing.
  EXPECT_EQ(CountOf(run.out, "rtt latency (us)"), 1u);
  EXPECT_EQ(CountOf(run.out, "The minimum recommended throughput"), 1u);
  EXPECT_LT(run.out.find("rtt latency (us)"), run.out.find("The minimum recommended throughput"));
  EXPECT_THAT(run.out, HasSubstr("| rtt latency (us)  | clock skew (us)"));
  EXPECT_THAT(run.out, HasSubstr("The minimum recommended throughput is 100 MB/s."));
  EXPECT_THAT(run.out, HasSubstr("| tcp-throughput    | 8                 | " + Peer(a)));
  EXPECT_THAT(run.out, HasSubstr("| tcp-throughput    | 8                 | " + Peer(b)));
  EXPECT_THAT(run.out, HasSubstr("| tcp-throughput    | 8                 | average"));
  EXPECT_THAT(run.out, HasSubstr("JSON results available at: " + results));
  std::ifstream in(results);
  const auto json = nlohmann::json::parse(in, nullptr, false);
  ASSERT_FALSE(json.is_discarded());
  EXPECT_EQ(json["tests"]["latency"].size(), 2u);
  // Latency paces its pings over --duration: one per 2 ms.
  EXPECT_EQ(json["tests"]["latency"][0]["sent"], 150);
  EXPECT_EQ(json["tests"]["tcp-throughput"].size(), 3u);

  // One unreachable host stops the run before any test, as vnetperf does.
  const auto refused = RunCommand(
      HOSTPERF_CLI_BIN,
      {"--config.file=" + config, "net", "--hosts", Peer(a) + ",127.0.0.1:1", "--output-file", results, "latency"},
      30s);
  EXPECT_EQ(refused.status, 1);
  EXPECT_THAT(refused.out, HasSubstr("Host 127.0.0.1:1 is not reachable"));
  EXPECT_THAT(refused.out, ::testing::Not(HasSubstr("rtt latency (us)")));
  EXPECT_THAT(refused.err, HasSubstr("bad_hosts"));
}

}  // namespace
}  // namespace hostperf::testing
