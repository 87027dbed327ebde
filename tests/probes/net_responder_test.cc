#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/responder.h"

namespace hostperf::probes::net {
namespace {

using namespace std::chrono_literals;

class CountingObserver : public ResponderObserver {
 public:
  void OnRequest(std::string_view type) override {
    std::lock_guard lock(mu_);
    ++requests_[std::string(type)];
  }
  void OnDrop(std::string_view reason) override {
    std::lock_guard lock(mu_);
    ++drops_[std::string(reason)];
  }
  int Drops(const std::string& reason) {
    std::lock_guard lock(mu_);
    return drops_[reason];
  }
  int Requests(const std::string& type) {
    std::lock_guard lock(mu_);
    return requests_[type];
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> requests_;
  std::map<std::string, int> drops_;
};

class NetResponderTest : public ::testing::Test {
 protected:
  void Start(std::uint32_t max_connections = 8, std::uint32_t rate_limit = 1000) {
    ResponderOptions options;
    options.ports = {0};
    options.secret = secret_;
    options.max_connections = max_connections;
    options.packets_per_second_per_source = rate_limit;
    options.observer = &observer_;
    options.realtime = [] { return RealtimeNs() + 1'000'000'000; };  // a responder clock 1 s ahead
    auto started = StartResponder(options);
    ASSERT_TRUE(started) << started.error();
    responder_ = std::move(started).value();
    ASSERT_TRUE(responder_);
    address_ = *ParseNumericAddress("127.0.0.1", responder_->Ports().front());
  }

  // Sends one datagram and waits briefly for any reply.
  std::optional<std::vector<std::uint8_t>> UdpExchange(const std::vector<std::uint8_t>& request) {
    Fd fd = NonBlockingSocket(AF_INET, SOCK_DGRAM);
    ::connect(fd.get(), address_.get(), address_.length);
    ::send(fd.get(), request.data(), request.size(), 0);
    if (!WaitFd(fd.get(), POLLIN, std::chrono::steady_clock::now() + 1s)) return std::nullopt;
    std::vector<std::uint8_t> reply(kMaxMessage);
    const ssize_t n = ::recv(fd.get(), reply.data(), reply.size(), 0);
    if (n < 0) return std::nullopt;
    reply.resize(static_cast<std::size_t>(n));
    return reply;
  }

  static bool Never() { return false; }

  // The responder counts on its own thread: polls until `condition` holds
  // (or 10 s).
  static void WaitUntil(const std::function<bool()>& condition) {
    const auto patience = std::chrono::steady_clock::now() + 10s;
    while (!condition() && std::chrono::steady_clock::now() < patience) std::this_thread::sleep_for(5ms);
  }

  // The count of drops for `reason` once it has reached `at_least` (or 10 s).
  int DropsOnceAtLeast(const std::string& reason, int at_least) {
    WaitUntil([&] { return observer_.Drops(reason) >= at_least; });
    return observer_.Drops(reason);
  }

  Secret secret_ = Secret(32, 0x42);
  CountingObserver observer_;
  std::unique_ptr<Responder> responder_;
  SocketAddress address_;
};

TEST_F(NetResponderTest, LatencyAndClockOffset) {
  Start();
  const PeerTarget target{"local", address_};
  LatencyOptions options;
  options.packets = 10;
  options.interval = 2ms;
  const auto results = MeasureLatency(std::span(&target, 1), options, secret_, Never);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].sent, 10u);
  EXPECT_EQ(results[0].received, 10u);
  EXPECT_EQ(results[0].rtt_seconds.size(), 10u);
  for (const double rtt : results[0].rtt_seconds) EXPECT_LT(rtt, 0.5);
  ASSERT_TRUE(results[0].clock_offset_seconds);
  EXPECT_NEAR(*results[0].clock_offset_seconds, 1.0, 0.05);
  EXPECT_EQ(observer_.Requests("ping"), 10);
}

TEST_F(NetResponderTest, WrongSecretGetsNoReplyAndCountsAsLoss) {
  Start();
  const PeerTarget target{"local", address_};
  LatencyOptions options;
  options.packets = 3;
  options.interval = 1ms;
  options.reply_timeout = 100ms;
  const auto results = MeasureLatency(std::span(&target, 1), options, Secret(32, 1), Never);
  EXPECT_EQ(results[0].received, 0u);
  EXPECT_EQ(results[0].lost(), 3u);
  EXPECT_EQ(DropsOnceAtLeast("bad_hmac", 3), 3);

  Message ping;
  ping.type = MessageType::kPing;
  auto bytes = Encode(ping, secret_);
  EXPECT_TRUE(UdpExchange(bytes));
  bytes.back() ^= 0xff;
  EXPECT_FALSE(UdpExchange(bytes));
  EXPECT_FALSE(UdpExchange({1, 2, 3}));
  EXPECT_GE(DropsOnceAtLeast("malformed", 1), 1);
}

// A prober descheduled past its reply window (a loaded host): the reply
// that came in meanwhile waits in its socket and counts, it is not a network
// loss. (The client also drains its sockets once the window has closed, for
// a stall between its last wait and its clock read, which no hook reaches.)
TEST(NetLatencyClientTest, RepliesWaitingWhenTheWindowClosesAreCounted) {
  const Secret secret(32, 0x17);
  Fd peer = NonBlockingSocket(AF_INET, SOCK_DGRAM);
  auto address = *ParseNumericAddress("127.0.0.1", 0);
  ASSERT_EQ(::bind(peer.get(), address.get(), address.length), 0);
  socklen_t length = sizeof(address.storage);
  ::getsockname(peer.get(), reinterpret_cast<sockaddr*>(&address.storage), &length);
  // A peer that answers the first ping 30 ms late, while the prober sleeps.
  std::thread responder([&] {
    if (!WaitFd(peer.get(), POLLIN, std::chrono::steady_clock::now() + 5s)) return;
    std::vector<std::uint8_t> request(kMaxMessage);
    SocketAddress from;
    from.length = sizeof(from.storage);
    const ssize_t n = ::recvfrom(peer.get(), request.data(), request.size(), 0,
                                 reinterpret_cast<sockaddr*>(&from.storage), &from.length);
    if (n <= 0) return;
    const Decoded decoded = Decode(std::span(request.data(), static_cast<std::size_t>(n)), secret);
    if (!decoded.message) return;
    Message pong = *decoded.message;
    pong.type = MessageType::kPong;
    std::this_thread::sleep_for(30ms);
    const auto bytes = Encode(pong, secret);
    ::sendto(peer.get(), bytes.data(), bytes.size(), 0, from.get(), from.length);
  });
  LatencyOptions options;
  options.packets = 2;
  options.interval = 10ms;
  options.reply_timeout = 100ms;
  int polls = 0;
  // The second check comes after the first ping's wait: the prober then
  // sleeps through the rest of its window, the reply arriving meanwhile.
  const auto stall_once = [&] {
    if (++polls == 2) std::this_thread::sleep_for(300ms);
    return false;
  };
  const PeerTarget target{"late", address};
  const auto results = MeasureLatency(std::span(&target, 1), options, secret, stall_once);
  responder.join();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].sent, 2u);
  EXPECT_EQ(results[0].received, 1u);
  EXPECT_EQ(results[0].lost(), 1u);
}

TEST_F(NetResponderTest, RepliesNeverExceedRequestsAndOnlyHelloAndPingOverUdp) {
  Start();
  Message hello;
  hello.type = MessageType::kHello;
  const auto request = Encode(hello, secret_);
  const auto reply = UdpExchange(request);
  ASSERT_TRUE(reply);
  EXPECT_LE(reply->size(), request.size());
  Message start;
  start.type = MessageType::kSessionStart;
  start.start.duration_ms = 100;
  EXPECT_FALSE(UdpExchange(Encode(start, secret_)));  // sessions only over TCP
}

TEST_F(NetResponderTest, RateLimitsPerSource) {
  Start(8, /*rate_limit=*/5);
  const PeerTarget target{"local", address_};
  LatencyOptions options;
  options.packets = 40;
  options.interval = 100us;
  options.reply_timeout = 1s;
  const auto results = MeasureLatency(std::span(&target, 1), options, secret_, Never);
  EXPECT_LT(results[0].received, 40u);
  EXPECT_GE(results[0].received, 1u);
  EXPECT_GE(DropsOnceAtLeast("rate_limited", 1), 1);
}

TEST_F(NetResponderTest, TcpAndUdpThroughput) {
  Start();
  ThroughputOptions options;
  options.duration = 200ms;
  options.rate_bytes_per_second = 20 << 20;
  const auto tcp = RunThroughput(address_, options, secret_, Never);
  ASSERT_EQ(tcp.outcome, SessionOutcome::kOk) << tcp.error;
  EXPECT_GT(tcp.bytes_sent, 0u);
  EXPECT_EQ(tcp.bytes_received, tcp.bytes_sent);
  // Rate cap: 20 MiB/s for 0.2 s is ~4 MiB (one write of slack).
  EXPECT_LE(tcp.bytes_sent, (20u << 20) / 5 + options.write_size);

  options.test = ThroughputTest::kUdp;
  options.datagram_size = 4096;
  const auto udp = RunThroughput(address_, options, secret_, Never);
  ASSERT_EQ(udp.outcome, SessionOutcome::kOk) << udp.error;
  EXPECT_GT(udp.packets_sent, 0u);
  EXPECT_LE(udp.packets_received, udp.packets_sent);
  EXPECT_GT(udp.packets_received, 0u);
  EXPECT_GE(udp.LossRatio(), 0.0);
  EXPECT_LE(udp.LossRatio(), 1.0);
}

TEST_F(NetResponderTest, SecondThroughputClientGetsBusy) {
  Start();
  ThroughputResult first;
  std::thread runner([&] {
    ThroughputOptions options;
    options.duration = 1500ms;
    options.rate_bytes_per_second = 4 << 20;
    first = RunThroughput(address_, options, secret_, Never);
  });
  // The first session is accepted before the second asks (a fixed sleep
  // lost that race on a loaded machine).
  WaitUntil([&] { return observer_.Requests("session_start") > 0; });
  EXPECT_EQ(observer_.Requests("session_start"), 1);
  ThroughputOptions options;
  options.duration = 100ms;
  const auto second = RunThroughput(address_, options, secret_, Never);
  runner.join();
  EXPECT_EQ(second.outcome, SessionOutcome::kBusy);
  EXPECT_EQ(first.outcome, SessionOutcome::kOk) << first.error;
  EXPECT_EQ(observer_.Drops("busy"), 1);
  // Once the first ends, a new session is accepted.
  EXPECT_EQ(RunThroughput(address_, options, secret_, Never).outcome, SessionOutcome::kOk);
}

TEST_F(NetResponderTest, ConnectionLimit) {
  Start(/*max_connections=*/5);
  // The hello reply advertises the limit: the test asks for no more.
  const auto r = ConnectionTest(address_, secret_, 10, 5s);
  EXPECT_EQ(r.accepted, 5u);
  EXPECT_EQ(r.peer_limit, 5u);
  EXPECT_EQ(r.tried, 5u);
  EXPECT_EQ(observer_.Drops("connection_limit"), 0);
  // Below the peer's limit, our own maximum bounds the test.
  const auto small = ConnectionTest(address_, secret_, 3, 5s);
  EXPECT_EQ(small.accepted, 3u);  // earlier connections were released
  EXPECT_EQ(small.tried, 3u);
  // (Connections beyond the limit are refused: fault_net_test.cc floods it.)
}

// A full run's connection test fills the table and closes it; the hello of
// the next run, sent at once, must find the slots free. (Serving accepts
// before closes refused it now and then on a loaded machine.)
TEST_F(NetResponderTest, SlotsClosedByTheClientAreFreeForItsNextHello) {
  Start(/*max_connections=*/4);
  for (int round = 0; round < 50; ++round) {
    const auto filled = ConnectionTest(address_, secret_, 4, 5s);
    ASSERT_EQ(filled.accepted, 4u) << "round " << round;
    const auto hello = Hello(address_, secret_, 2s);
    ASSERT_TRUE(hello) << "round " << round << ": " << hello.error();
  }
  EXPECT_EQ(observer_.Drops("connection_limit"), 0);
}

TEST_F(NetResponderTest, BadTcpInputClosesTheConnection) {
  Start();
  const auto hello = Hello(address_, secret_, 1s);
  EXPECT_TRUE(hello) << hello.error();
  EXPECT_FALSE(Hello(address_, Secret(32, 9), 1s));
  auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(connected) << connected.error();
  Fd fd = std::move(connected).value();
  ASSERT_TRUE(fd.valid());
  const std::vector<std::uint8_t> junk(200, 0xab);
  ASSERT_TRUE(WriteAll(fd.get(), junk.data(), junk.size(), std::chrono::steady_clock::now() + 1s));
  ASSERT_TRUE(WaitFd(fd.get(), POLLIN, std::chrono::steady_clock::now() + 2s));
  std::uint8_t byte = 0;
  EXPECT_EQ(::recv(fd.get(), &byte, 1, 0), 0);  // closed without a reply
  EXPECT_GE(observer_.Drops("malformed") + observer_.Drops("bad_hmac"), 2);
}

TEST_F(NetResponderTest, SilentConnectionsMakeRoomForAHello) {
  Start(/*max_connections=*/3);
  // Every slot taken by a connection that never says hello.
  std::vector<Fd> silent;
  for (int i = 0; i < 3; ++i) {
    auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
    ASSERT_TRUE(connected) << connected.error();
    silent.push_back(std::move(connected).value());
    ASSERT_TRUE(silent.back().valid());
  }
  std::this_thread::sleep_for(200ms);  // all accepted
  const auto hello = Hello(address_, secret_, 1s);
  EXPECT_TRUE(hello) << hello.error();
  EXPECT_EQ(DropsOnceAtLeast("connection_limit", 1), 1);
  // Exactly one silent connection was closed to make room.
  int closed = 0;
  for (const Fd& fd : silent) {
    std::uint8_t byte = 0;
    if (WaitFd(fd.get(), POLLIN, std::chrono::steady_clock::now() + 100ms) && ::recv(fd.get(), &byte, 1, 0) == 0) {
      ++closed;
    }
  }
  EXPECT_EQ(closed, 1);
}

TEST_F(NetResponderTest, UnreachablePeerFailsFast) {
  Start();
  const auto port = responder_->Ports().front();
  responder_.reset();  // nothing listens any more
  const auto address = *ParseNumericAddress("127.0.0.1", port);
  ThroughputOptions options;
  options.duration = 100ms;
  const auto started = std::chrono::steady_clock::now();
  const auto r = RunThroughput(address, options, secret_, Never);
  EXPECT_EQ(r.outcome, SessionOutcome::kUnreachable);
  EXPECT_FALSE(r.error.empty());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

}  // namespace
}  // namespace hostperf::probes::net
