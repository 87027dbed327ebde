#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
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

// --- Freshness (protocol version 2) -----------------------------------------

// A TCP proxy in front of the responder that records what the client sends:
// the "captured exchange" of an attacker on the path.
class RecordingProxy {
 public:
  explicit RecordingProxy(const SocketAddress& upstream) : upstream_(upstream) {
    listener_ = NonBlockingSocket(AF_INET, SOCK_STREAM);
    auto address = *ParseNumericAddress("127.0.0.1", 0);
    ::bind(listener_.get(), address.get(), address.length);
    ::listen(listener_.get(), 4);
    socklen_t length = sizeof(address.storage);
    ::getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&address.storage), &length);
    address_ = address;
    thread_ = std::thread([this] { Serve(); });
  }
  ~RecordingProxy() { thread_.join(); }
  const SocketAddress& address() const { return address_; }
  // The client's bytes (complete once the client has closed).
  std::vector<std::uint8_t> Captured() {
    thread_.join();
    thread_ = std::thread([] {});
    return captured_;
  }

 private:
  void Serve() {
    if (!WaitFd(listener_.get(), POLLIN, std::chrono::steady_clock::now() + 5s)) return;
    Fd client(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK));
    auto connected = ConnectTcp(upstream_, std::chrono::steady_clock::now() + 2s);
    if (!client.valid() || !connected) return;
    Fd server = std::move(connected).value();
    std::vector<std::uint8_t> buffer(64 * 1024);
    bool client_open = true;
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < give_up) {
      pollfd fds[] = {{client.get(), static_cast<short>(client_open ? POLLIN : 0), 0}, {server.get(), POLLIN, 0}};
      if (::poll(fds, 2, 100) <= 0) continue;
      if (fds[0].revents & (POLLIN | POLLHUP)) {
        const ssize_t n = ::recv(client.get(), buffer.data(), buffer.size(), 0);
        if (n > 0) {
          captured_.insert(captured_.end(), buffer.begin(), buffer.begin() + n);
          WriteAll(server.get(), buffer.data(), static_cast<std::size_t>(n), std::chrono::steady_clock::now() + 2s);
        } else if (n == 0) {
          client_open = false;
          ::shutdown(server.get(), SHUT_WR);
        }
      }
      if (fds[1].revents & (POLLIN | POLLHUP)) {
        const ssize_t n = ::recv(server.get(), buffer.data(), buffer.size(), 0);
        if (n <= 0) return;
        WriteAll(client.get(), buffer.data(), static_cast<std::size_t>(n), std::chrono::steady_clock::now() + 2s);
      }
    }
  }

  SocketAddress upstream_;
  SocketAddress address_;
  Fd listener_;
  std::vector<std::uint8_t> captured_;
  std::thread thread_;
};

std::size_t WireSize(MessageType type) { return kHeaderSize + *PayloadSize(type) + kMacSize; }

// Reads until EOF or `timeout`; returns what came back.
std::vector<std::uint8_t> ReadUntilClosed(int fd, std::chrono::milliseconds timeout, bool* closed) {
  std::vector<std::uint8_t> got;
  *closed = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint8_t buffer[4096];
  while (WaitFd(fd, POLLIN, deadline)) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      *closed = n == 0 || errno == ECONNRESET;
      break;
    }
    got.insert(got.end(), buffer, buffer + n);
  }
  return got;
}

// Replay: a captured hello plus session start, replayed byte for
// byte without the secret, was accepted and kept the responder BUSY for the
// session's length plus grace. Now the session start is signed over the
// responder's fresh nonce: the replay fails its HMAC and nobody is kept busy.
TEST_F(NetResponderTest, ReplayedHelloAndSessionStartAreRefused) {
  Start();
  RecordingProxy proxy(address_);
  ThroughputOptions options;
  options.duration = 200ms;
  options.rate_bytes_per_second = 1 << 20;
  const auto genuine = RunThroughput(proxy.address(), options, secret_, Never);
  ASSERT_EQ(genuine.outcome, SessionOutcome::kOk) << genuine.error;
  const std::vector<std::uint8_t> captured = proxy.Captured();
  const std::size_t control = WireSize(MessageType::kHello) + WireSize(MessageType::kSessionStart);
  ASSERT_GE(captured.size(), control);
  ASSERT_EQ(observer_.Requests("session_start"), 1);

  // The replay: the captured hello and session start, then a trickle of the
  // captured stream, as an attacker holding the session open would send.
  auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(connected) << connected.error();
  Fd replay = std::move(connected).value();
  ASSERT_TRUE(WriteAll(replay.get(), captured.data(), control, std::chrono::steady_clock::now() + 1s));
  bool closed = false;
  const auto answer = ReadUntilClosed(replay.get(), 3000ms, &closed);
  EXPECT_TRUE(closed) << "the replayed session start must close the connection";
  EXPECT_LE(answer.size(), WireSize(MessageType::kHelloAck)) << "only the hello reply, no accept";
  EXPECT_EQ(observer_.Requests("session_start"), 1) << "the replayed start was not taken as a request";
  EXPECT_GE(DropsOnceAtLeast("bad_hmac", 1), 1);

  // Nobody is kept busy: a genuine session right after is accepted.
  options.duration = 100ms;
  const auto after = RunThroughput(address_, options, secret_, Never);
  EXPECT_EQ(after.outcome, SessionOutcome::kOk) << after.error;
  EXPECT_EQ(observer_.Drops("busy"), 0);
}

// Replay, the slots: 64 connections replaying a captured hello and then
// trickling a byte every 400 ms held every slot past the idle timeout (the
// trickle kept them "active") and genuine hellos were refused. Now a
// connection that has not proven itself may be evicted by a new one and is
// closed 5 s after it was accepted, whatever it sends.
TEST_F(NetResponderTest, TricklingReplayedHellosDoNotLockOutAGenuineHello) {
  Start(/*max_connections=*/64);
  Message hello;
  hello.type = MessageType::kHello;
  hello.session = 7;
  const auto captured = Encode(hello, secret_);  // what a genuine client once sent
  std::vector<Fd> attackers;
  for (int i = 0; i < 64; ++i) {
    auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
    ASSERT_TRUE(connected) << connected.error();
    attackers.push_back(std::move(connected).value());
    ASSERT_TRUE(
        WriteAll(attackers.back().get(), captured.data(), captured.size(), std::chrono::steady_clock::now() + 1s));
  }
  WaitUntil([&] { return observer_.Requests("hello") >= 64; });
  ASSERT_EQ(observer_.Requests("hello"), 64);
  std::atomic<bool> stop{false};
  // One byte of a header every 400 ms on every connection (never a whole
  // message, so they never fail a parse either).
  std::thread trickle([&] {
    const std::uint8_t header_byte = 0x48;
    for (int round = 0; round < 20 && !stop.load(); ++round) {
      for (const Fd& fd : attackers) (void)!::send(fd.get(), &header_byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(400ms);
    }
  });
  std::this_thread::sleep_for(600ms);
  // The table is full of replayed hellos: a genuine hello still gets a slot.
  const auto genuine = Hello(address_, secret_, 2s);
  EXPECT_TRUE(genuine) << genuine.error();
  ThroughputOptions options;
  options.duration = 100ms;
  const auto session = RunThroughput(address_, options, secret_, Never);
  EXPECT_EQ(session.outcome, SessionOutcome::kOk) << session.error;
  // And every replayed connection is closed within the handshake deadline
  // (5 s after its accept) although it kept trickling.
  int closed = 0;
  const auto deadline = std::chrono::steady_clock::now() + 8s;
  for (const Fd& fd : attackers) {
    while (std::chrono::steady_clock::now() < deadline) {
      bool eof = false;
      ReadUntilClosed(fd.get(), std::chrono::milliseconds(200), &eof);
      if (eof) {
        ++closed;
        break;
      }
    }
  }
  stop.store(true);
  trickle.join();
  EXPECT_EQ(closed, 64);
}

std::vector<std::uint8_t> LegacyHello(const Secret& secret) {
  // magic "HPNT", version 1, hello, reserved, session 9, length 8, reserved;
  // payload: version 1, zeros.
  const std::uint8_t header[] = {0x48, 0x50, 0x4e, 0x54, 1, 1, 0, 0, 0, 0, 0, 9, 0, 8, 0, 0};
  std::vector<std::uint8_t> bytes(std::begin(header), std::end(header));
  bytes.push_back(1);
  bytes.resize(kHeaderSize + 8);
  bytes.resize(bytes.size() + kMacSize);
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), bytes.data(), kHeaderSize + 8,
       bytes.data() + kHeaderSize + 8, &length);
  return bytes;
}

// An old (version 1) client gets a version-1 hello reply naming version 2,
// which it reports as "speaks protocol version 2"; then the connection closes.
TEST_F(NetResponderTest, AnOldClientIsToldTheProtocolVersion) {
  Start();
  auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(connected) << connected.error();
  Fd fd = std::move(connected).value();
  const auto hello = LegacyHello(secret_);
  ASSERT_TRUE(IsLegacyHello(hello, secret_));
  ASSERT_TRUE(WriteAll(fd.get(), hello.data(), hello.size(), std::chrono::steady_clock::now() + 1s));
  bool closed = false;
  const auto reply = ReadUntilClosed(fd.get(), 3000ms, &closed);
  EXPECT_TRUE(closed);
  ASSERT_EQ(reply.size(), kHeaderSize + 8 + kMacSize);
  EXPECT_EQ(reply[4], 1) << "in the old client's own format";
  EXPECT_EQ(reply[5], static_cast<std::uint8_t>(MessageType::kHelloAck));
  EXPECT_EQ(reply[kHeaderSize], kProtocolVersion) << "the version the old client reports";
  std::uint8_t mac[kMacSize];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret_.data(), static_cast<int>(secret_.size()), reply.data(), kHeaderSize + 8, mac, &length);
  EXPECT_EQ(std::memcmp(mac, reply.data() + kHeaderSize + 8, kMacSize), 0) << "signed as version 1 signs";
  EXPECT_GE(DropsOnceAtLeast("bad_version", 1), 1);
  // A wrong secret earns no reply at all.
  auto other = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(other);
  const auto forged = LegacyHello(Secret(32, 3));
  ASSERT_TRUE(WriteAll(other->get(), forged.data(), forged.size(), std::chrono::steady_clock::now() + 1s));
  EXPECT_TRUE(ReadUntilClosed(other->get(), 3000ms, &closed).empty());
}

// The new client talking to a peer of another version says so.
TEST(NetClientVersionTest, AResponderOfAnotherVersionIsReportedAsAVersionMismatch) {
  const Secret secret(32, 0x21);
  Fd listener = NonBlockingSocket(AF_INET, SOCK_STREAM);
  auto address = *ParseNumericAddress("127.0.0.1", 0);
  ASSERT_EQ(::bind(listener.get(), address.get(), address.length), 0);
  ASSERT_EQ(::listen(listener.get(), 1), 0);
  socklen_t length = sizeof(address.storage);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address.storage), &length);
  std::thread old_responder([&] {
    if (!WaitFd(listener.get(), POLLIN, std::chrono::steady_clock::now() + 5s)) return;
    Fd conn(::accept(listener.get(), nullptr, nullptr));
    std::uint8_t buffer[256];
    (void)!::recv(conn.get(), buffer, sizeof(buffer), 0);
    const auto reply = EncodeLegacyVersionReply(secret, 0);  // any message of another version
    WriteAll(conn.get(), reply.data(), reply.size(), std::chrono::steady_clock::now() + 1s);
    std::this_thread::sleep_for(200ms);
  });
  const auto hello = Hello(address, secret, 2s);
  old_responder.join();
  ASSERT_FALSE(hello);
  EXPECT_NE(hello.error().find("protocol version mismatch"), std::string::npos) << hello.error();
  EXPECT_NE(hello.error().find("version 1"), std::string::npos) << hello.error();
}

// Junk UDP from an observer's address (a forged source, a neighbour behind
// the same NAT) is checked and dropped within that source's rate limit, which
// bounds the HMAC work; it never silences the address's authenticated pings.
TEST_F(NetResponderTest, JunkUdpFromAnAddressIsRateLimitedAndItsGenuinePingsStillAnswered) {
  Start(8, /*rate_limit=*/100);
  Message ping;
  ping.type = MessageType::kPing;
  const auto forged = Encode(ping, Secret(32, 0x66));
  const auto genuine = Encode(ping, secret_);
  Fd fd = NonBlockingSocket(AF_INET, SOCK_DGRAM);
  ASSERT_EQ(::connect(fd.get(), address_.get(), address_.length), 0);
  // A burst far above the rate: the excess is rate-limited before any HMAC.
  for (int i = 0; i < 400; ++i) ::send(fd.get(), forged.data(), forged.size(), 0);
  EXPECT_GE(DropsOnceAtLeast("rate_limited", 100), 100);
  EXPECT_LE(observer_.Drops("bad_hmac"), 200) << "HMAC work per source is bounded by its rate limit";
  std::this_thread::sleep_for(1100ms);  // the bucket refills
  // Junk at about 8 datagrams a second beside genuine pings from the same
  // address, for longer than the old 32-failure block took to trigger: every
  // genuine ping is answered.
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    ::send(fd.get(), forged.data(), forged.size(), 0);
    if (UdpExchange(genuine)) ++answered;
    std::this_thread::sleep_for(120ms);
  }
  EXPECT_EQ(answered, 40);
  EXPECT_GE(observer_.Drops("bad_hmac"), 40);
  EXPECT_EQ(observer_.Drops("source_blocked"), 0);
  // The TCP side is its own: junk UDP does not refuse the address's sessions.
  ThroughputOptions options;
  options.duration = 100ms;
  options.rate_bytes_per_second = 10 << 20;
  const auto tcp = RunThroughput(address_, options, secret_, Never);
  EXPECT_EQ(tcp.outcome, SessionOutcome::kOk) << tcp.error;
}

// A flood of junk far above the per-source rate from the observer's own
// address, at the same time as its genuine pings: the junk spends only the
// source's junk bucket, so every genuine ping is still answered, and
// neither UDP nor TCP junk gets the address blocked.
TEST_F(NetResponderTest, AJunkFloodFromAnAddressNeverCostsItsAuthenticatedPingsTheirReplies) {
  Start(8, /*rate_limit=*/100);
  Message ping;
  ping.type = MessageType::kPing;
  const auto forged = Encode(ping, Secret(32, 0x66));
  const auto genuine = Encode(ping, secret_);
  std::atomic<bool> stop{false};
  std::atomic<int> junk_sent{0};
  std::thread flood([&] {
    Fd fd = NonBlockingSocket(AF_INET, SOCK_DGRAM);
    ::connect(fd.get(), address_.get(), address_.length);
    while (!stop) {
      for (int i = 0; i < 50; ++i) {
        if (::send(fd.get(), forged.data(), forged.size(), 0) > 0) ++junk_sent;
      }
      std::this_thread::sleep_for(2ms);  // about 25000 a second, 250 times the rate
    }
  });
  // TCP junk from the same address too: each connection's bad message is
  // counted and the connection closed, nothing more.
  for (int i = 0; i < 40; ++i) {
    auto fd = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
    ASSERT_TRUE(fd);
    const std::vector<std::uint8_t> junk = forged;
    WriteAll(fd->get(), junk.data(), junk.size(), std::chrono::steady_clock::now() + 1s);
  }
  std::this_thread::sleep_for(200ms);
  int answered = 0;
  for (int i = 0; i < 40; ++i) {
    if (UdpExchange(genuine)) ++answered;
    std::this_thread::sleep_for(20ms);
  }
  stop = true;
  flood.join();
  EXPECT_GT(junk_sent.load(), 10000);
  EXPECT_EQ(answered, 40) << "genuine pings from the flooded address";
  EXPECT_GT(observer_.Drops("rate_limited"), 1000) << "the junk beyond its bucket is counted";
  EXPECT_GE(observer_.Drops("bad_hmac"), 100);
  EXPECT_EQ(observer_.Drops("source_blocked"), 0);
  // Its authenticated TCP sessions are served as well.
  ThroughputOptions options;
  options.duration = 100ms;
  options.rate_bytes_per_second = 10 << 20;
  const auto tcp = RunThroughput(address_, options, secret_, Never);
  EXPECT_EQ(tcp.outcome, SessionOutcome::kOk) << tcp.error;
}

// Message order within one connection (revision 3): a session start
// replayed on the same connection after its session ended (an on-path
// attacker injecting captured bytes) fails its HMAC and closes the
// connection; it starts no second session.
TEST_F(NetResponderTest, ASessionStartReplayedWithinItsConnectionIsRefused) {
  Start();
  auto connected = ConnectTcp(address_, std::chrono::steady_clock::now() + 1s);
  ASSERT_TRUE(connected) << connected.error();
  const Fd fd = std::move(connected).value();
  std::vector<std::uint8_t> in;
  const auto read = [&](std::span<const std::uint8_t> binding) -> std::optional<Message> {
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < deadline) {
      const Decoded decoded = Decode(in, secret_, binding);
      if (decoded.message) {
        in.erase(in.begin(), in.begin() + static_cast<long>(decoded.consumed));
        return decoded.message;
      }
      if (decoded.error != DecodeError::kTruncated || !WaitFd(fd.get(), POLLIN, deadline)) return std::nullopt;
      std::uint8_t buffer[4096];
      const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) return std::nullopt;
      in.insert(in.end(), buffer, buffer + n);
    }
    return std::nullopt;
  };
  const auto write = [&](const std::vector<std::uint8_t>& bytes) {
    return WriteAll(fd.get(), bytes.data(), bytes.size(), std::chrono::steady_clock::now() + 1s);
  };
  Message hello;
  hello.type = MessageType::kHello;
  hello.hello.nonce = RandomNonce();
  ASSERT_TRUE(write(Encode(hello, secret_)));
  const auto ack = read(hello.hello.nonce);
  ASSERT_TRUE(ack && ack->type == MessageType::kHelloAck);
  ASSERT_GE(ack->hello.revision, kOrderedRevision);
  const auto binding = SessionBinding(hello.hello.nonce, ack->hello.nonce);
  const auto sent = [&](std::uint64_t i) { return MessageBinding(binding, ack->hello.revision, false, i); };
  const auto received = [&](std::uint64_t i) { return MessageBinding(binding, ack->hello.revision, true, i); };

  Message start;
  start.type = MessageType::kSessionStart;
  start.start.test = ThroughputTest::kUdp;
  start.start.duration_ms = 1000;
  const auto start_bytes = Encode(start, secret_, sent(0));
  ASSERT_TRUE(write(start_bytes));
  const auto accept = read(received(0));
  ASSERT_TRUE(accept && accept->type == MessageType::kAccept);
  Message stop;
  stop.type = MessageType::kSessionStop;
  ASSERT_TRUE(write(Encode(stop, secret_, sent(1))));
  const auto results = read(received(1));
  ASSERT_TRUE(results && results->type == MessageType::kResults);
  ASSERT_EQ(observer_.Requests("session_start"), 1);

  // The captured start, injected again into the same connection.
  ASSERT_TRUE(write(start_bytes));
  bool closed = false;
  const auto answer = ReadUntilClosed(fd.get(), 3000ms, &closed);
  EXPECT_TRUE(in.empty() && answer.empty()) << "no accept for the replayed start";
  EXPECT_TRUE(closed) << "the replayed start closes the connection";
  EXPECT_EQ(observer_.Requests("session_start"), 1) << "the replayed start was not taken as a request";
  EXPECT_GE(DropsOnceAtLeast("bad_hmac", 1), 1);
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
