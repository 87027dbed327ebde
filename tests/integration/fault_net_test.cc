// Network fault injection with real processes and sockets: a peer
// that stops answering mid-run, a peer that answers with garbage, a peer
// behind an nftables drop rule in a network namespace, and UDP and TCP floods
// at the responder. In every case the daemon keeps probing its healthy peer
// every cycle, keeps serving /metrics, shows the bad peer as data, and its
// memory and descriptors stay bounded.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_fault_harness.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/protocol.h"
#include "net_http_fault_harness.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
namespace net = hostperf::probes::net;
using Clock = std::chrono::steady_clock;

constexpr const char* kSecret = "fault-net-test-shared-secret-0123456789";
constexpr int kPacketsPerCycle = 5;

std::string Loopback(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }
std::string Series(const std::string& family, const std::string& peer) { return family + "{peer=\"" + peer + "\"}"; }
double Value(const std::string& metrics, const std::string& series) { return Sample(metrics, series).value_or(-1); }
double Runs(const std::string& metrics) { return Value(metrics, "hostperf_probe_runs_total{probe=\"net\"}"); }
double Dropped(const std::string& metrics, const std::string& reason) {
  return Value(metrics, "hostperf_net_responder_dropped_total{reason=\"" + reason + "\"}");
}

// One hostperf_exporter with its responder on `port`; `peers` empty or
// `probing` false: responder only. `prefix` runs it through another command
// (ip netns exec).
struct DaemonSpec {
  std::string name;
  std::uint16_t port = 0;
  std::vector<std::string> peers;
  std::string bind_address = "127.0.0.1";
  bool probing = true;
  std::vector<std::string> prefix;
  std::string extra;  // more config, appended
};

DaemonSpec Responder(const std::string& name, std::uint16_t port) {
  DaemonSpec spec;
  spec.name = name;
  spec.port = port;
  spec.probing = false;
  return spec;
}

DaemonSpec Prober(const std::string& name, std::uint16_t port, std::vector<std::string> peers) {
  DaemonSpec spec;
  spec.name = name;
  spec.port = port;
  spec.peers = std::move(peers);
  return spec;
}

class Daemon {
 public:
  Daemon(const TempDir& dir, const DaemonSpec& spec) {
    std::string peers;
    for (const auto& peer : spec.peers) peers += (peers.empty() ? "\"" : ", \"") + peer + "\"";
    const std::string config = dir.Write(
        spec.name + ".toml",
        "state_directory = \"" + dir.path() + "/" + spec.name +
            "\"\n[scheduler]\nfirst_run_splay = \"1s\"\n"
            "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.disk]\nenabled = false\n"
            "[probes.net]\nenabled = " +
            (spec.probing ? "true" : "false") + "\ninterval = \"2s\"\nbind_address = \"" + spec.bind_address +
            "\"\nports = [" + std::to_string(spec.port) + "]\nsecret_file = \"" + dir.path() + "/secret\"\npeers = [" +
            peers + "]\npackets_per_cycle = " + std::to_string(kPacketsPerCycle) +
            "\npacket_interval = \"5ms\"\nreply_timeout = \"800ms\"\n"
            "throughput_duration = \"100ms\"\nthroughput_rate = \"4mb\"\nmax_connections = 64\n" +
            spec.extra);
    daemon_ = std::make_unique<FaultDaemon>(config, spec.prefix);
  }

  int HttpPort() {
    const int port = daemon_->Port();
    EXPECT_NE(port, 0) << daemon_->process().Stderr();
    return port;
  }

  std::string Metrics() { return daemon_->Metrics(); }

  // Polls /metrics until `predicate` holds.
  bool WaitFor(const std::function<bool(const std::string&)>& predicate, std::chrono::seconds timeout) {
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      if (predicate(Metrics())) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  bool Running() { return !process().Wait(0ms).has_value(); }
  pid_t pid() { return process().pid(); }
  ChildProcess& process() { return daemon_->process(); }

 private:
  std::unique_ptr<FaultDaemon> daemon_;
};

// RSS and descriptors of a daemon, sampled at the start and the end of a fault.
struct Footprint {
  long rss_kib = 0;
  int fds = 0;
  static Footprint Of(pid_t pid) { return {ResidentKib(pid), OpenFds(pid)}; }
};

void Report(const std::string& what, const Footprint& before, const Footprint& during, const Footprint& after) {
  std::cout << "[ numbers  ] " << what << ": RSS KiB " << before.rss_kib << " -> " << during.rss_kib << " -> "
            << after.rss_kib << "; fds " << before.fds << " -> " << during.fds << " -> " << after.fds << "\n";
}

// The prober once a fault is over: still running, with its memory and
// descriptors back within bounds of where they were before.
void ExpectProberRecovered(Daemon& prober, const std::string& what, const Footprint& before, const Footprint& during) {
  const Footprint after = Footprint::Of(prober.pid());
  EXPECT_TRUE(prober.Running());
  EXPECT_LT(after.rss_kib - before.rss_kib, kRssGrowthBoundKib);
  EXPECT_LE(after.fds, before.fds + 4);
  Report(what, before, during, after);
}

class NetFaultTest : public ::testing::Test {
 protected:
  NetFaultTest() { dir_.Write("secret", kSecret); }

  static net::Secret SharedSecret() { return net::Secret(kSecret, kSecret + std::strlen(kSecret)); }

  // Waits until `daemon` sees every peer in `up` up and its first runs done.
  static void WaitUp(Daemon& daemon, const std::vector<std::string>& up) {
    ASSERT_TRUE(daemon.WaitFor(
        [&](const std::string& m) {
          return std::all_of(up.begin(), up.end(), [&](const std::string& peer) {
            return Value(m, Series("hostperf_net_peer_up", peer)) == 1.0;
          });
        },
        30s))
        << daemon.Metrics() << daemon.process().Stderr();
  }

  // Over at least `cycles` runs: /metrics answers at every poll, `healthy`
  // stays up and its ping count grows with every run (at most one run's
  // worth missing at the window's edges, `min_ratio` of the packets for
  // runs under load). `during` runs at every poll (the fault's own checks).
  static void ExpectHealthyProbedEveryCycle(Daemon& daemon, const std::string& healthy, int cycles,
                                            double min_ratio = 1.0, const std::function<void()>& during = {}) {
    const std::string rtt_count = "hostperf_net_rtt_seconds_count{peer=\"" + healthy + "\"}";
    const std::string first = daemon.Metrics();
    ASSERT_FALSE(first.empty());
    const double runs_before = Runs(first);
    const double pings_before = Value(first, rtt_count);
    std::string last = first;
    const auto until = Clock::now() + std::chrono::seconds(cycles * 4 + 10);
    while (Runs(last) < runs_before + cycles && Clock::now() < until) {
      std::this_thread::sleep_for(250ms);
      if (during) during();
      last = daemon.Metrics();
      ASSERT_FALSE(last.empty()) << "a scrape failed";
      EXPECT_EQ(Value(last, Series("hostperf_net_peer_up", healthy)), 1.0) << healthy;
    }
    const double runs = Runs(last) - runs_before;
    EXPECT_GE(runs, cycles) << "the net probe stopped running";
    EXPECT_GE(Value(last, rtt_count) - pings_before, (runs - 1) * kPacketsPerCycle * min_ratio)
        << "the healthy peer was not probed every cycle (" << runs << " runs)";
  }

  TempDir dir_;
};

// --- a peer that stops answering ----------------------------------------------

TEST_F(NetFaultTest, PeerThatStopsAnsweringMidRunIsDownWhileTheHealthyPeerIsProbed) {
  const std::uint16_t ports[3] = {FreeLoopbackPort(), FreeLoopbackPort(), FreeLoopbackPort()};
  Daemon healthy(dir_, Responder("healthy", ports[1]));
  Daemon stopped(dir_, Responder("stopped", ports[2]));
  Daemon prober(dir_, Prober("prober", ports[0], {Loopback(ports[1]), Loopback(ports[2])}));
  WaitUp(prober, {Loopback(ports[1]), Loopback(ports[2])});
  const std::string bad = Loopback(ports[2]);
  const Footprint before = Footprint::Of(prober.pid());

  stopped.process().Signal(SIGSTOP);
  const double lost_before = Value(prober.Metrics(), Series("hostperf_net_packets_lost_total", bad));
  EXPECT_TRUE(
      prober.WaitFor([&](const std::string& m) { return Value(m, Series("hostperf_net_peer_up", bad)) == 0.0; }, 15s))
      << prober.Metrics();
  ExpectHealthyProbedEveryCycle(prober, Loopback(ports[1]), 3);
  const std::string m = prober.Metrics();
  EXPECT_EQ(Value(m, Series("hostperf_net_peer_up", bad)), 0.0);
  EXPECT_GE(Value(m, Series("hostperf_net_packets_lost_total", bad)) - lost_before, 3 * kPacketsPerCycle);
  const Footprint during = Footprint::Of(prober.pid());

  stopped.process().Signal(SIGCONT);
  EXPECT_TRUE(
      prober.WaitFor([&](const std::string& m) { return Value(m, Series("hostperf_net_peer_up", bad)) == 1.0; }, 15s))
      << prober.Metrics();
  ExpectProberRecovered(prober, "stopped peer (prober)", before, during);
}

// --- a peer that answers with garbage -----------------------------------------

// UDP and TCP on one loopback port, answering everything with garbage: random
// bytes, truncated and oversized frames, reflected requests, a header that
// promises more than it sends.
class GarbagePeer {
 public:
  explicit GarbagePeer(std::uint16_t port) : udp_(BoundUdp(port)), rng_(std::random_device{}()) {
    listener_ = net::Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const auto address = *net::ParseNumericAddress("127.0.0.1", port);
    const int one = 1;
    ::setsockopt(listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ok_ = udp_.valid() && ::bind(listener_.get(), address.get(), address.length) == 0 &&
          ::listen(listener_.get(), 64) == 0;
    if (ok_) thread_ = std::thread([this] { Loop(); });
  }
  ~GarbagePeer() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  bool ok() const { return ok_; }
  std::uint64_t udp_replies() const { return udp_replies_.load(); }

 private:
  std::vector<std::uint8_t> Random(std::size_t size) {
    std::vector<std::uint8_t> bytes(size);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng_());
    return bytes;
  }

  // The `mode`th kind of garbage answering `request`.
  std::vector<std::uint8_t> Garbage(int mode, const std::vector<std::uint8_t>& request) {
    switch (mode % 5) {
      case 0:
        return Random(request.size());
      case 1:
        return {request.begin(), request.begin() + static_cast<long>(request.size() / 2)};  // truncated
      case 2:
        return Random(60000);  // oversized
      case 3:
        return request;  // reflected
      default: {
        // A genuine header (magic, version) claiming the largest payload, then junk.
        auto bytes = Random(request.size());
        std::copy_n(request.begin(), std::min<std::size_t>(net::kHeaderSize, request.size()), bytes.begin());
        if (bytes.size() >= net::kHeaderSize) bytes[12] = bytes[13] = 0xff;
        return bytes;
      }
    }
  }

  void Loop() {
    std::vector<std::uint8_t> buffer(65536);
    int mode = 0;
    while (!stop_.load()) {
      pollfd fds[2] = {{udp_.get(), POLLIN, 0}, {listener_.get(), POLLIN, 0}};
      if (::poll(fds, 2, 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        sockaddr_storage from{};
        socklen_t length = sizeof(from);
        const ssize_t n =
            ::recvfrom(udp_.get(), buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from), &length);
        if (n > 0) {
          const auto reply = Garbage(mode++, {buffer.begin(), buffer.begin() + n});
          ::sendto(udp_.get(), reply.data(), reply.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), length);
          udp_replies_.fetch_add(1);
        }
      }
      if (fds[1].revents & POLLIN) {
        net::Fd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn.valid()) continue;
        // Waits briefly for the client's hello and answers it with garbage:
        // as above, plus 1 MiB of junk and a silent close.
        pollfd p{conn.get(), POLLIN, 0};
        std::vector<std::uint8_t> request;
        if (::poll(&p, 1, 500) > 0) {
          const ssize_t n = ::recv(conn.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
          if (n > 0) request.assign(buffer.begin(), buffer.begin() + n);
        }
        const int tcp_mode = mode++ % 7;
        if (tcp_mode == 6) continue;  // closed without a word
        const auto reply = tcp_mode == 5 ? Random(1 << 20) : Garbage(tcp_mode, request);
        ::send(conn.get(), reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        held_.push_back(std::move(conn));  // held open: the client must time out
      }
    }
  }

  net::Fd udp_;
  net::Fd listener_;
  std::vector<net::Fd> held_;
  std::mt19937 rng_;
  bool ok_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> udp_replies_{0};
  std::thread thread_;
};

TEST_F(NetFaultTest, PeerAnsweringGarbageIsDownAndNeverBreaksTheProber) {
  const std::uint16_t ports[3] = {FreeLoopbackPort(), FreeLoopbackPort(), FreeLoopbackPort()};
  GarbagePeer garbage(ports[2]);
  ASSERT_TRUE(garbage.ok());
  const std::string bad = Loopback(ports[2]);
  Daemon healthy(dir_, Responder("healthy", ports[1]));
  Daemon prober(dir_, Prober("prober", ports[0], {Loopback(ports[1]), bad}));
  WaitUp(prober, {Loopback(ports[1])});
  const Footprint before = Footprint::Of(prober.pid());
  ExpectHealthyProbedEveryCycle(prober, Loopback(ports[1]), 4, 1.0, [&] {
    EXPECT_NE(Value(prober.Metrics(), Series("hostperf_net_peer_up", bad)), 1.0) << "garbage taken for a pong";
  });
  const std::string m = prober.Metrics();
  EXPECT_EQ(Value(m, Series("hostperf_net_peer_up", bad)), 0.0);
  EXPECT_GE(Value(m, Series("hostperf_net_packets_lost_total", bad)), 4 * kPacketsPerCycle);
  EXPECT_FALSE(Sample(m, Series("hostperf_net_clock_offset_seconds", bad)).has_value());
  EXPECT_GE(garbage.udp_replies(), 4u * kPacketsPerCycle);

  // The TCP side (hello, throughput session) with every kind of garbage:
  // refused within its deadline, never accepted.
  const auto address = *net::ParseNumericAddress("127.0.0.1", ports[2]);
  for (int i = 0; i < 7; ++i) {
    const auto start = Clock::now();
    const auto hello = net::Hello(address, SharedSecret(), 1s);
    EXPECT_FALSE(hello) << "attempt " << i;
    EXPECT_LT(Clock::now() - start, 3s) << "attempt " << i;
    EXPECT_FALSE(hello.error().empty());
  }
  net::ThroughputOptions throughput;
  throughput.duration = 100ms;
  throughput.connect_timeout = 1s;
  const auto session = net::RunThroughput(address, throughput, SharedSecret(), [] { return false; });
  EXPECT_NE(session.outcome, net::SessionOutcome::kOk);
  ExpectProberRecovered(prober, "garbage peer (prober)", before, before);
}

// --- a peer behind a firewall in a network namespace --------------------------

// A network namespace joined to this one by a veth pair, with addresses from
// the benchmarking range 198.18.0.0/15 derived from the pid (unique per run).
// Removed with its veth pair (and any nftables rule inside) on destruction.
class Namespace {
 public:
  Namespace() {
    const pid_t pid = ::getpid();
    name_ = "hpfault" + std::to_string(pid);
    host_if_ = "hpfh" + std::to_string(pid);
    peer_if_ = "hpfp" + std::to_string(pid);
    const std::string subnet =
        "198." + std::to_string(18 + ((pid >> 14) & 1)) + "." + std::to_string((pid >> 6) & 0xff) + ".";
    const int base = (pid & 63) << 2;
    host_address_ = subnet + std::to_string(base + 1);
    peer_address_ = subnet + std::to_string(base + 2);
    created_ = Ip({"netns", "add", name_});
    if (!created_) return;
    ok_ = Ip({"link", "add", host_if_, "type", "veth", "peer", "name", peer_if_}) &&
          Ip({"link", "set", peer_if_, "netns", name_}) &&
          Ip({"addr", "add", host_address_ + "/30", "dev", host_if_}) && Ip({"link", "set", host_if_, "up"}) &&
          Ip({"-n", name_, "addr", "add", peer_address_ + "/30", "dev", peer_if_}) &&
          Ip({"-n", name_, "link", "set", peer_if_, "up"}) && Ip({"-n", name_, "link", "set", "lo", "up"});
  }
  ~Namespace() {
    Ip({"link", "del", host_if_});  // deletes both ends
    if (created_) Ip({"netns", "del", name_});
  }

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }
  const std::string& peer_address() const { return peer_address_; }
  static std::string IpBinary() { return Find("ip"); }
  static std::string NftBinary() { return Find("nft"); }

  // `nft` inside the namespace.
  bool Nft(const std::vector<std::string>& args) {
    std::vector<std::string> full = {"netns", "exec", name_, NftBinary()};
    full.insert(full.end(), args.begin(), args.end());
    return Ip(full);
  }
  // Drops every packet entering the namespace from the veth.
  bool BlockIncoming() {
    return Nft({"add", "table", "inet", "hostperf_fault"}) &&
           Nft({"add", "chain", "inet", "hostperf_fault", "input",
                "{ type filter hook input priority 0 ; policy accept ; }"}) &&
           Nft({"add", "rule", "inet", "hostperf_fault", "input", "iifname", peer_if_, "drop"});
  }
  bool Unblock() { return Nft({"delete", "table", "inet", "hostperf_fault"}); }

 private:
  static std::string Find(const std::string& tool) {
    for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
      const std::string path = dir + tool;
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
    return "";
  }
  bool Ip(const std::vector<std::string>& args) {
    const auto result = RunCommand(IpBinary(), args, 20s);
    if (result.status != 0 && error_.empty()) {
      std::ostringstream what;
      what << "ip";
      for (const auto& a : args) what << " " << a;
      error_ = what.str() + ": " + result.err;
    }
    return result.status == 0;
  }

  std::string name_, host_if_, peer_if_, host_address_, peer_address_, error_;
  bool created_ = false;
  bool ok_ = false;
};

TEST_F(NetFaultTest, PeerBehindAFirewallRuleInANetworkNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for ip netns and nft";
  if (Namespace::IpBinary().empty() || Namespace::NftBinary().empty()) {
    GTEST_SKIP() << "needs iproute2 (ip) and nftables (nft): apt-get install iproute2 nftables";
  }
  Namespace ns;
  if (!ns.ok()) GTEST_SKIP() << "cannot set up a network namespace here: " << ns.error();
  const std::uint16_t ports[3] = {FreeLoopbackPort(), FreeLoopbackPort(), FreeLoopbackPort()};
  const std::string walled = ns.peer_address() + ":" + std::to_string(ports[2]);
  DaemonSpec inside_spec = Responder("inside", ports[2]);
  inside_spec.bind_address = ns.peer_address();
  inside_spec.prefix = {Namespace::IpBinary(), "netns", "exec", ns.name()};
  Daemon inside(dir_, inside_spec);
  ASSERT_NE(inside.process().ListeningPort(), 0) << inside.process().Stderr();
  Daemon healthy(dir_, Responder("healthy", ports[1]));
  Daemon prober(dir_, Prober("prober", ports[0], {Loopback(ports[1]), walled}));
  WaitUp(prober, {Loopback(ports[1]), walled});
  const Footprint before = Footprint::Of(prober.pid());

  ASSERT_TRUE(ns.BlockIncoming()) << ns.error();
  const double lost_before = Value(prober.Metrics(), Series("hostperf_net_packets_lost_total", walled));
  EXPECT_TRUE(prober.WaitFor(
      [&](const std::string& m) { return Value(m, Series("hostperf_net_peer_up", walled)) == 0.0; }, 15s))
      << prober.Metrics();
  // Runs do not stall on the silent peer: one run per interval goes on.
  ExpectHealthyProbedEveryCycle(prober, Loopback(ports[1]), 3);
  EXPECT_GE(Value(prober.Metrics(), Series("hostperf_net_packets_lost_total", walled)) - lost_before,
            3 * kPacketsPerCycle);
  const Footprint during = Footprint::Of(prober.pid());

  ASSERT_TRUE(ns.Unblock()) << ns.error();
  EXPECT_TRUE(prober.WaitFor(
      [&](const std::string& m) { return Value(m, Series("hostperf_net_peer_up", walled)) == 1.0; }, 15s))
      << prober.Metrics();
  EXPECT_TRUE(inside.Running());
  ExpectProberRecovered(prober, "firewalled peer (prober)", before, during);
}

// --- floods at the responder ----------------------------------------------------

// Random datagrams, and every fourth a well-formed ping signed with the wrong
// secret, from `sources` loopback addresses at up to `per_second` for
// `duration`; the number sent.
struct FloodResult {
  std::uint64_t sent = 0;
  std::uint64_t answered = 0;  // datagrams the flooding sockets got back
};
FloodResult UdpFlood(std::uint16_t port, int sources, int per_second, std::chrono::milliseconds duration) {
  std::vector<net::Fd> senders;
  for (int i = 0; i < sources; ++i) {
    net::Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const auto from =
        *net::ParseNumericAddress("127.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1), 0);
    if (fd.valid() && ::bind(fd.get(), from.get(), from.length) == 0) senders.push_back(std::move(fd));
  }
  FloodResult result;
  if (senders.empty()) return result;
  const auto to = *net::ParseNumericAddress("127.0.0.1", port);
  std::mt19937 rng(42);
  // Random slices of a random pool: cheap enough to keep the rate up in
  // sanitizer builds.
  std::vector<std::uint8_t> pool(1 << 16);
  for (auto& b : pool) b = static_cast<std::uint8_t>(rng());
  std::vector<std::uint8_t> datagram(1500);
  const net::Secret wrong(32, 'w');
  net::Message ping;
  ping.type = net::MessageType::kPing;
  std::uint64_t& sent = result.sent;
  const auto start = Clock::now();
  constexpr int kBatch = 200;
  for (int batch = 0; Clock::now() - start < duration; ++batch) {
    for (int i = 0; i < kBatch; ++i) {
      std::size_t size = 1 + rng() % datagram.size();
      const std::uint8_t* data = pool.data() + rng() % (pool.size() - size);
      if (i % 4 == 0) {
        ping.session = static_cast<std::uint32_t>(rng());
        const auto forged = net::Encode(ping, wrong);
        std::copy(forged.begin(), forged.end(), datagram.begin());
        size = forged.size();
        data = datagram.data();
      }
      const net::Fd& fd = senders[(sent + static_cast<std::uint64_t>(i)) % senders.size()];
      if (::sendto(fd.get(), data, size, 0, to.get(), to.length) > 0) ++sent;
    }
    std::this_thread::sleep_until(start + std::chrono::microseconds(1000000LL * kBatch * (batch + 1) / per_second));
  }
  std::this_thread::sleep_for(100ms);
  for (const net::Fd& fd : senders) {
    while (::recv(fd.get(), datagram.data(), datagram.size(), MSG_DONTWAIT) >= 0) ++result.answered;
  }
  return result;
}

// Reads one message from a stream (header, then payload and MAC) and
// decodes it under `binding`.
std::optional<net::Message> ReadMessage(int fd, const net::Secret& secret, std::span<const std::uint8_t> binding) {
  std::vector<std::uint8_t> buffer(net::kHeaderSize);
  const auto deadline = Clock::now() + 3s;
  const auto read = [&](std::size_t from) {
    while (from < buffer.size()) {
      if (!net::WaitFd(fd, POLLIN, deadline)) return false;
      const ssize_t n = ::recv(fd, buffer.data() + from, buffer.size() - from, 0);
      if (n <= 0) return false;
      from += static_cast<std::size_t>(n);
    }
    return true;
  };
  if (!read(0)) return std::nullopt;
  const std::size_t length = (static_cast<std::size_t>(buffer[12]) << 8) | buffer[13];
  buffer.resize(net::kHeaderSize + length + net::kMacSize);
  if (!read(net::kHeaderSize)) return std::nullopt;
  return net::Decode(buffer, secret, binding).message;
}

// Replay, against the daemon: a genuine peer's hello and session
// start, captured on the wire and replayed byte for byte by someone without
// the secret, kept every genuine peer BUSY for up to 70 s per replay. Now the
// replayed start fails its HMAC (it is signed over the first connection's
// nonces), no session starts, and a genuine peer's session is accepted.
TEST_F(NetFaultTest, ACapturedSessionReplayedIsRefusedAndKeepsNobodyBusy) {
  const std::uint16_t port = FreeLoopbackPort();
  Daemon responder(dir_, Responder("responder", port));
  ASSERT_GT(responder.HttpPort(), 0);
  const auto to = *net::ParseNumericAddress("127.0.0.1", port);
  const net::Secret secret = SharedSecret();
  // The genuine exchange, and what went over the wire from the client.
  std::vector<std::uint8_t> wire;
  {
    auto connected = net::ConnectTcp(to, Clock::now() + 5s);
    ASSERT_TRUE(connected) << connected.error();
    const net::Fd fd = std::move(connected).value();
    net::Message hello;
    hello.type = net::MessageType::kHello;
    hello.hello.nonce = net::RandomNonce();
    const auto hello_bytes = net::Encode(hello, secret);
    ASSERT_TRUE(net::WriteAll(fd.get(), hello_bytes.data(), hello_bytes.size(), Clock::now() + 2s));
    const auto ack = ReadMessage(fd.get(), secret, hello.hello.nonce);
    ASSERT_TRUE(ack && ack->type == net::MessageType::kHelloAck);
    const auto binding = net::SessionBinding(hello.hello.nonce, ack->hello.nonce);
    net::Message start;
    start.type = net::MessageType::kSessionStart;
    start.start.test = net::ThroughputTest::kTcp;
    start.start.duration_ms = 60000;  // what an attacker wants to replay: the longest session
    const std::uint8_t revision = ack->hello.revision;
    const auto start_bytes = net::Encode(start, secret, net::MessageBinding(binding, revision, false, 0));
    ASSERT_TRUE(net::WriteAll(fd.get(), start_bytes.data(), start_bytes.size(), Clock::now() + 2s));
    const auto accept = ReadMessage(fd.get(), secret, net::MessageBinding(binding, revision, true, 0));
    ASSERT_TRUE(accept && accept->type == net::MessageType::kAccept);
    ::shutdown(fd.get(), SHUT_WR);  // the genuine session ends at once
    const auto results = ReadMessage(fd.get(), secret, net::MessageBinding(binding, revision, true, 1));
    ASSERT_TRUE(results && results->type == net::MessageType::kResults);
    wire.insert(wire.end(), hello_bytes.begin(), hello_bytes.end());
    wire.insert(wire.end(), start_bytes.begin(), start_bytes.end());
  }
  const std::string before = responder.Metrics();
  const std::string starts = "hostperf_net_responder_requests_total{type=\"session_start\"}";

  // Replayed, three times, each then trickling as a streaming client would.
  std::vector<net::Fd> replays;
  for (int i = 0; i < 3; ++i) {
    auto connected = net::ConnectTcp(to, Clock::now() + 5s);
    ASSERT_TRUE(connected) << connected.error();
    replays.push_back(std::move(connected).value());
    ASSERT_TRUE(net::WriteAll(replays.back().get(), wire.data(), wire.size(), Clock::now() + 2s));
  }
  ASSERT_TRUE(responder.WaitFor(
      [&](const std::string& m) { return Dropped(m, "bad_hmac") >= Dropped(before, "bad_hmac") + 3; }, 10s))
      << responder.Metrics();
  std::this_thread::sleep_for(200ms);  // counted just before the close
  for (const net::Fd& fd : replays) {
    const std::uint8_t byte = 0x5a;
    (void)!::send(fd.get(), &byte, 1, MSG_NOSIGNAL);
    EXPECT_TRUE(ServerClosed(fd.get())) << "a replayed session is closed";
  }
  const std::string after = responder.Metrics();
  EXPECT_EQ(Value(after, starts), Value(before, starts)) << "no replayed session start was taken as a request";
  // A genuine peer is not kept busy.
  net::ThroughputOptions throughput;
  throughput.duration = 100ms;
  const auto session = net::RunThroughput(to, throughput, secret, [] { return false; });
  EXPECT_EQ(session.outcome, net::SessionOutcome::kOk) << session.error;
  EXPECT_EQ(Dropped(responder.Metrics(), "busy"), Dropped(before, "busy"));
}

// Replay, the slots, against the daemon: 64 connections
// replaying a captured hello and trickling a byte every 10 s held every slot
// past the idle timeout, and genuine hellos were refused. Now a connection
// that has not proven itself is evicted for a new one and closed 5 s after
// its accept whatever it sends (here a byte every 500 ms).
TEST_F(NetFaultTest, TricklingReplayedHellosDoNotLockOutGenuinePeers) {
  const std::uint16_t port = FreeLoopbackPort();
  Daemon responder(dir_, Responder("responder", port));  // max_connections = 64
  ASSERT_GT(responder.HttpPort(), 0);
  const auto to = *net::ParseNumericAddress("127.0.0.1", port);
  net::Message hello;
  hello.type = net::MessageType::kHello;
  hello.hello.nonce = net::RandomNonce();
  const auto captured = net::Encode(hello, SharedSecret());
  const auto from = *net::ParseNumericAddress("127.3.0.1", 0);  // the attacker's own address
  std::vector<net::Fd> held;
  for (int i = 0; i < 64; ++i) {
    net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::bind(fd.get(), from.get(), from.length), 0);
    ASSERT_EQ(::connect(fd.get(), to.get(), to.length), 0);
    ASSERT_TRUE(net::WriteAll(fd.get(), captured.data(), captured.size(), Clock::now() + 2s));
    held.push_back(std::move(fd));
  }
  const std::string hellos = "hostperf_net_responder_requests_total{type=\"hello\"}";
  ASSERT_TRUE(responder.WaitFor([&](const std::string& m) { return Value(m, hellos) >= 64; }, 10s))
      << responder.Metrics();
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::uint8_t byte = 0x48;  // never a whole message
    while (!stop.load()) {
      for (const net::Fd& fd : held) (void)!::send(fd.get(), &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(500ms);
    }
  });
  // The table is full of replayed hellos: a genuine peer still gets in.
  const auto genuine = net::Hello(to, SharedSecret(), 2s);
  EXPECT_TRUE(genuine) << genuine.error();
  net::ThroughputOptions throughput;
  throughput.duration = 100ms;
  const auto session = net::RunThroughput(to, throughput, SharedSecret(), [] { return false; });
  EXPECT_EQ(session.outcome, net::SessionOutcome::kOk) << session.error;
  // And none of them outlives the handshake deadline, trickle or not.
  const auto until = Clock::now() + 10s;
  const auto all_closed = [&] {
    return std::all_of(held.begin(), held.end(), [](const net::Fd& fd) { return ServerClosed(fd.get()); });
  };
  while (!all_closed() && Clock::now() < until) std::this_thread::sleep_for(250ms);
  stop.store(true);
  trickle.join();
  EXPECT_TRUE(all_closed()) << "replayed hellos held their slots";
}

// The CPU budget was once charged with the whole process's
// CPU time, so ~30 s of scrapes or ~45 s of junk UDP at the responder spent
// it and scheduled probes were skipped (budget_exhausted) for the rest of the
// hour. Now it is charged with the probes' own threads only: 20 s of four
// clients hammering /metrics plus junk UDP at the responder leave it
// unspent and the schedule running.
TEST_F(NetFaultTest, ScrapesAndJunkAtTheResponderDoNotSpendTheBudget) {
  const std::uint16_t ports[2] = {FreeLoopbackPort(), FreeLoopbackPort()};
  Daemon healthy(dir_, Responder("healthy", ports[1]));
  DaemonSpec spec = Prober("target", ports[0], {Loopback(ports[1])});
  spec.extra = "[budget]\ncpu_seconds_per_hour = 8\n";
  Daemon target(dir_, spec);
  WaitUp(target, {Loopback(ports[1])});
  const std::string before = target.Metrics();
  const std::string used = "hostperf_budget_cpu_used_seconds";
  const std::string process = "process_cpu_seconds_total";
  const std::string exhausted = "hostperf_probe_skipped_total{probe=\"net\",reason=\"budget_exhausted\"}";
  ASSERT_GE(Value(before, used), 0) << before;
  ASSERT_GE(Value(before, process), 0) << before;

  std::atomic<bool> stop{false};
  std::atomic<int> scrapes{0};
  std::vector<std::thread> scrapers;
  const int http_port = target.HttpPort();
  for (int i = 0; i < 4; ++i) {
    scrapers.emplace_back([&] {
      while (!stop.load()) {
        if (HttpRequest(http_port, "GET", "/metrics")) ++scrapes;
      }
    });
  }
  FloodResult flood = UdpFlood(ports[0], 8, 20000, 20000ms);
  stop.store(true);
  for (auto& t : scrapers) t.join();
  const std::string after = target.Metrics();

  const double process_spent = Value(after, process) - Value(before, process);
  const double budget_spent = Value(after, used) - Value(before, used);
  std::cout << "[ numbers  ] " << scrapes.load() << " scrapes, " << flood.sent << " junk datagrams: process CPU +"
            << process_spent << " s, budget +" << budget_spent << " s\n";
  EXPECT_GT(scrapes.load(), 100);
  EXPECT_GT(flood.sent, 20000u);
  EXPECT_GT(process_spent, 2.0) << "the load was real";
  EXPECT_LT(budget_spent, 1.0) << "and the budget did not pay for it";
  EXPECT_LT(budget_spent, process_spent / 4);
  EXPECT_EQ(Value(after, exhausted), Value(before, exhausted)) << "no scheduled run was skipped for the budget";
  EXPECT_GE(Runs(after) - Runs(before), 5) << "scheduled probes kept running";
  EXPECT_EQ(Value(after, "hostperf_probe_schedule_suspended{probe=\"net\"}"), 0.0);
  EXPECT_EQ(Value(after, "hostperf_probe_success{probe=\"net\"}"), 1.0);
}

TEST_F(NetFaultTest, UdpAndTcpFloodsAtTheResponderAreDroppedWhileProbingGoesOn) {
  const std::uint16_t ports[2] = {FreeLoopbackPort(), FreeLoopbackPort()};
  Daemon healthy(dir_, Responder("healthy", ports[1]));
  Daemon target(dir_, Prober("target", ports[0], {Loopback(ports[1])}));
  WaitUp(target, {Loopback(ports[1])});
  const Footprint before = Footprint::Of(target.pid());
  const std::string start = target.Metrics();

  // UDP: ~3 s of datagrams from 8 source addresses at 40k/s, above the
  // per-source rate limit (1000/s).
  FloodResult flood;
  std::thread udp([&] { flood = UdpFlood(ports[0], 8, 40000, 3000ms); });
  Footprint during_udp;
  ExpectHealthyProbedEveryCycle(target, Loopback(ports[1]), 2, 0.5, [&] { during_udp = Footprint::Of(target.pid()); });
  udp.join();
  EXPECT_GT(flood.sent, 20000u);
  EXPECT_EQ(flood.answered, 0u);
  // Everything flooded was dropped (rate-limited, bad HMAC or malformed),
  // counted, and never answered.
  std::string m = target.Metrics();
  const double udp_dropped = Dropped(m, "rate_limited") + Dropped(m, "bad_hmac") + Dropped(m, "malformed") +
                             Dropped(m, "source_blocked") - Dropped(start, "rate_limited") -
                             Dropped(start, "bad_hmac") - Dropped(start, "malformed") -
                             Dropped(start, "source_blocked");
  // (The kernel may drop some before the responder reads them.)
  EXPECT_GT(udp_dropped, 0.25 * static_cast<double>(flood.sent)) << "sent " << flood.sent;
  // Junk beyond each source's junk bucket is counted as rate-limited (no
  // source is blocked: its address may be a genuine observer's).
  EXPECT_GT(Dropped(m, "rate_limited"), Dropped(start, "rate_limited"));
  EXPECT_GT(Dropped(m, "bad_hmac"), Dropped(start, "bad_hmac"));
  // A genuine peer is still answered at once.
  const net::PeerTarget self{"target", *net::ParseNumericAddress("127.0.0.1", ports[0])};
  net::LatencyOptions latency;
  latency.packets = 3;
  latency.interval = 5ms;
  latency.reply_timeout = 2s;  // returns once answered
  EXPECT_EQ(net::MeasureLatency(std::span(&self, 1), latency, SharedSecret(), [] { return false; })[0].received, 3u);

  // TCP: 300 unauthenticated connections held open, every other one sending
  // junk, from a source address of its own.
  const auto to = *net::ParseNumericAddress("127.0.0.1", ports[0]);
  const auto from = *net::ParseNumericAddress("127.2.0.1", 0);
  std::vector<net::Fd> held;
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (::bind(fd.get(), from.get(), from.length) != 0 || ::connect(fd.get(), to.get(), to.length) != 0) continue;
    if (i % 2 == 1) {
      std::vector<std::uint8_t> junk(1 + rng() % 4096);
      for (auto& b : junk) b = static_cast<std::uint8_t>(rng());
      ::send(fd.get(), junk.data(), junk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    held.push_back(std::move(fd));
  }
  EXPECT_GE(held.size(), 250u);
  Footprint during_tcp;
  ExpectHealthyProbedEveryCycle(target, Loopback(ports[1]), 2, 1.0, [&] { during_tcp = Footprint::Of(target.pid()); });
  m = target.Metrics();
  // Beyond the 64 slots: refused at the limit (source_blocked stays 0).
  EXPECT_GT(Dropped(m, "connection_limit") + Dropped(m, "source_blocked") - Dropped(start, "connection_limit") -
                Dropped(start, "source_blocked"),
            0);
  EXPECT_GT(Dropped(m, "malformed") - Dropped(start, "malformed"), 0);
  // The responder holds at most max_connections (64) of them.
  EXPECT_LT(during_tcp.fds, before.fds + 64 + 16);
  // A genuine peer still gets a control connection while the junk is held.
  const auto hello = net::Hello(to, SharedSecret(), 2s);
  EXPECT_TRUE(hello) << hello.error();
  // Connections that never say hello are closed within seconds.
  const auto until = Clock::now() + 10s;
  const auto all_closed = [&] {
    return std::all_of(held.begin(), held.end(), [](const net::Fd& fd) { return ServerClosed(fd.get()); });
  };
  while (!all_closed() && Clock::now() < until) std::this_thread::sleep_for(250ms);
  EXPECT_TRUE(all_closed()) << "unauthenticated connections held open";
  held.clear();

  const Footprint after = Footprint::Of(target.pid());
  EXPECT_TRUE(target.Running());
  EXPECT_LT(std::max(during_udp.rss_kib, during_tcp.rss_kib) - before.rss_kib, kRssGrowthBoundKib);
  Report("UDP flood (" + std::to_string(flood.sent) + " datagrams, responder)", before, during_udp, after);
  Report("TCP flood (300 connections, responder)", before, during_tcp, after);
  std::cout << "[ numbers  ] dropped: rate_limited " << Dropped(m, "rate_limited") << ", bad_hmac "
            << Dropped(m, "bad_hmac") << ", malformed " << Dropped(m, "malformed") << ", connection_limit "
            << Dropped(m, "connection_limit") << ", source_blocked " << Dropped(m, "source_blocked") << "\n";
}

}  // namespace
}  // namespace hostperf::testing
