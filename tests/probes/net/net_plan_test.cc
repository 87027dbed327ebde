// Throughput among all hosts at once (protocol revision 2): the plan
// messages, and real responders on loopback ports coordinated by
// RunAllToAll: all-to-all TCP and UDP, a busy host, a host that is no
// responder, a host that dies mid-test, and the guards that keep a
// responder from being made to send to anyone who did not agree.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/net/responder.h"

namespace hostperf::probes::net {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

Secret TestSecret() { return Secret(32, 0x42); }

bool Never() { return false; }

// A TCP plan naming one peer.
Plan OnePeerPlan(std::uint64_t id, std::uint32_t duration_ms, std::uint64_t rate_bytes_per_second) {
  Plan plan;
  plan.id = id;
  plan.test = ThroughputTest::kTcp;
  plan.peer_count = 1;
  plan.duration_ms = duration_ms;
  plan.rate_bytes_per_second = rate_bytes_per_second;
  return plan;
}

// A TCP listener on an ephemeral loopback port that never speaks: not a responder.
Fd Listener(SocketAddress* address) {
  Fd fd = NonBlockingSocket(AF_INET, SOCK_STREAM);
  *address = *ParseNumericAddress("127.0.0.1", 0);
  if (::bind(fd.get(), address->get(), address->length) != 0 || ::listen(fd.get(), 8) != 0) return Fd();
  address->length = sizeof(address->storage);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&address->storage), &address->length);
  return fd;
}

TEST(NetPlanProtocol, PlanMessagesRoundTrip) {
  const Secret secret = TestSecret();
  Message plan;
  plan.type = MessageType::kPlan;
  plan.session = 7;
  plan.plan = {0x1122334455667788, ThroughputTest::kUdp, 3, 1500, 64 << 20, 9000};
  auto decoded = Decode(Encode(plan, secret, {}), secret, {});
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->plan.id, plan.plan.id);
  EXPECT_EQ(decoded.message->plan.test, ThroughputTest::kUdp);
  EXPECT_EQ(decoded.message->plan.peer_count, 3);
  EXPECT_EQ(decoded.message->plan.duration_ms, 1500u);
  EXPECT_EQ(decoded.message->plan.rate_bytes_per_second, 64u << 20);
  EXPECT_EQ(decoded.message->plan.datagram_size, 9000u);
  EXPECT_FALSE(decoded.message->plan.signature);
  // Revision 4: the signature follows the fields (64 more bytes).
  PlanSignature signature{};
  for (std::size_t i = 0; i < signature.size(); ++i) signature[i] = static_cast<std::uint8_t>(i);
  plan.plan.signature = signature;
  const auto signed_bytes = Encode(plan, secret, {});
  EXPECT_EQ(PayloadSizeOf(plan), *PayloadSize(MessageType::kPlan) + kPlanSignatureSize);
  decoded = Decode(signed_bytes, secret, {});
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->plan.signature, signature);
  EXPECT_EQ(decoded.message->plan.id, plan.plan.id);

  Message peers;
  peers.type = MessageType::kPlanPeers;
  for (std::size_t i = 0; i < kPlanPeersPerMessage; ++i) {
    peers.peers.push_back(ToPlanPeer(*ParseNumericAddress(
        i % 2 ? "10.0.0." + std::to_string(i) : "fd00::" + std::to_string(i), static_cast<std::uint16_t>(14159 + i))));
  }
  const auto bytes = Encode(peers, secret, {});
  EXPECT_LE(bytes.size(), kMaxMessage);
  decoded = Decode(bytes, secret, {});
  ASSERT_TRUE(decoded.message) << ToString(decoded.error);
  EXPECT_EQ(decoded.message->peers, peers.peers);
  EXPECT_EQ(FromPlanPeer(decoded.message->peers[1]).ToString(), "10.0.0.1:14160");
  EXPECT_EQ(FromPlanPeer(decoded.message->peers[0]).ToString(), "[fd00::]:14159");

  Message start;
  start.type = MessageType::kPlanSessionStart;
  start.start = {ThroughputTest::kTcp, 1000, 1 << 20, 99};
  decoded = Decode(Encode(start, secret, {}), secret, {});
  ASSERT_TRUE(decoded.message);
  EXPECT_EQ(decoded.message->start.plan_id, 99u);

  Message report;
  report.type = MessageType::kPlanReport;
  report.report = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  decoded = Decode(Encode(report, secret, {}), secret, {});
  ASSERT_TRUE(decoded.message);
  EXPECT_EQ(decoded.message->report.bytes_sent, 1u);
  EXPECT_EQ(decoded.message->report.jitter_ns, 8);
  EXPECT_EQ(decoded.message->report.peers_received, 11);
}

// Signs header|payload as a peer with the secret would (a well-signed message
// with a bad body must still be refused).
std::vector<std::uint8_t> Signed(std::vector<std::uint8_t> message, const Secret& secret) {
  std::uint8_t mac[kMacSize];
  unsigned int length = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), message.data(), message.size(), mac, &length);
  message.insert(message.end(), mac, mac + kMacSize);
  return message;
}

// A kPlanPeers message of `entries` peers whose count field says `count`.
std::vector<std::uint8_t> PeerList(std::uint16_t count, std::size_t entries, std::size_t extra_bytes = 0) {
  const std::size_t length = 4 + entries * kPlanPeerSize + extra_bytes;
  std::vector<std::uint8_t> m = {0x48,
                                 0x50,
                                 0x4e,
                                 0x54,
                                 kProtocolVersion,
                                 12,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 1,
                                 static_cast<std::uint8_t>(length >> 8),
                                 static_cast<std::uint8_t>(length),
                                 0,
                                 0};
  m.push_back(static_cast<std::uint8_t>(count >> 8));
  m.push_back(static_cast<std::uint8_t>(count));
  m.push_back(0);
  m.push_back(0);
  for (std::size_t i = 0; i < entries; ++i) {
    m.push_back(4);
    for (int b = 0; b < 16; ++b) m.push_back(b < 4 ? 10 : 0);
    m.push_back(0x37);
    m.push_back(0x4f);
  }
  m.insert(m.end(), extra_bytes, 0);
  return m;
}

TEST(NetPlanProtocol, APeerListWhoseCountDisagreesWithItsLengthIsRefused) {
  const Secret secret = TestSecret();
  ASSERT_TRUE(Decode(Signed(PeerList(2, 2), secret), secret, {}).message) << "the well-formed list decodes";
  EXPECT_EQ(Decode(Signed(PeerList(3, 2), secret), secret, {}).error, DecodeError::kMalformed);
  EXPECT_EQ(Decode(Signed(PeerList(0, 0), secret), secret, {}).error, DecodeError::kBadLength);
  EXPECT_EQ(Decode(Signed(PeerList(2, 2, 1), secret), secret, {}).error, DecodeError::kBadLength);
  auto bad_family = PeerList(1, 1);
  bad_family[kHeaderSize + 4] = 5;
  EXPECT_EQ(Decode(Signed(bad_family, secret), secret, {}).error, DecodeError::kMalformed);
}

// Counts plan refusals and plan bytes as the daemon's metrics do.
class PlanObserver : public ResponderObserver {
 public:
  void OnRequest(std::string_view) override {}
  void OnDrop(std::string_view) override {}
  void OnPlanRefused(std::string_view reason) override {
    std::lock_guard lock(mu_);
    ++refused_[std::string(reason)];
  }
  void OnPlanBytes(std::uint64_t bytes) override { sent_ += bytes; }
  int Refused(const std::string& reason) {
    std::lock_guard lock(mu_);
    return refused_[reason];
  }
  std::uint64_t Sent() const { return sent_.load(); }

 private:
  std::mutex mu_;
  std::map<std::string, int> refused_;
  std::atomic<std::uint64_t> sent_{0};
};

// A coordinator's control connection, by hand: hello, then whatever plan
// messages a test wants to send. Counts the bytes it sent.
class HandControl {
 public:
  HandControl(const SocketAddress& address, const Secret& secret) : secret_(secret) {
    auto connected = ConnectTcp(address, Clock::now() + 2s);
    if (!connected) return;
    fd_ = std::move(connected).value();
    Message hello;
    hello.type = MessageType::kHello;
    hello.hello.nonce = RandomNonce();
    Write(Encode(hello, secret_));
    const auto reply = Read(hello.hello.nonce);
    if (reply && reply->type == MessageType::kHelloAck) {
      binding_ = SessionBinding(hello.hello.nonce, reply->hello.nonce);
      revision_ = reply->hello.revision;
    }
  }
  bool ready() const { return !binding_.empty(); }
  const std::vector<std::uint8_t>& binding() const { return binding_; }
  std::size_t sent_bytes() const { return sent_; }

  void Send(const Message& message) {
    Write(Encode(message, secret_, MessageBinding(binding_, revision_, false, messages_sent_++)));
  }
  std::optional<Message> Receive(std::chrono::seconds timeout = 3s) {
    return Read(MessageBinding(binding_, revision_, true, messages_received_++), timeout);
  }

  // Offers `plan` with `peers`, signed with `key` over this connection
  // (unsigned: null); the answer's type (nullopt: none).
  std::optional<MessageType> Offer(const Plan& plan, const std::vector<PlanPeer>& peers, const OrchestrationKey* key) {
    std::optional<PlanSignature> signature;
    if (key != nullptr) signature = key->Sign(PlanSigningBytes(binding_, plan, peers));
    return OfferSigned(plan, peers, signature);
  }
  // The same with whatever signature a test made (for another connection,
  // other peers).
  std::optional<MessageType> OfferSigned(const Plan& plan, const std::vector<PlanPeer>& peers,
                                         const std::optional<PlanSignature>& signature) {
    Message offer;
    offer.type = MessageType::kPlan;
    offer.plan = plan;
    offer.plan.signature = signature;
    Send(offer);
    for (std::size_t first = 0; first < peers.size(); first += kPlanPeersPerMessage) {
      Message batch;
      batch.type = MessageType::kPlanPeers;
      batch.peers.assign(peers.begin() + static_cast<long>(first),
                         peers.begin() + static_cast<long>(std::min(peers.size(), first + kPlanPeersPerMessage)));
      Send(batch);
    }
    const auto answer = Receive();
    if (!answer) return std::nullopt;
    return answer->type;
  }

 private:
  void Write(const std::vector<std::uint8_t>& bytes) {
    if (WriteAll(fd_.get(), bytes.data(), bytes.size(), Clock::now() + 2s)) sent_ += bytes.size();
  }
  std::optional<Message> Read(std::span<const std::uint8_t> binding, std::chrono::seconds timeout = 3s) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      const Decoded decoded = Decode(in_, secret_, binding);
      if (decoded.message) {
        in_.erase(in_.begin(), in_.begin() + static_cast<long>(decoded.consumed));
        return decoded.message;
      }
      if (decoded.error != DecodeError::kTruncated) return std::nullopt;
      if (!WaitFd(fd_.get(), POLLIN, deadline)) return std::nullopt;
      std::uint8_t buffer[4096];
      const ssize_t n = ::recv(fd_.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) return std::nullopt;
      in_.insert(in_.end(), buffer, buffer + n);
    }
    return std::nullopt;
  }

  Secret secret_;
  Fd fd_;
  std::vector<std::uint8_t> binding_;
  std::uint8_t revision_ = 0;
  std::uint64_t messages_sent_ = 0;
  std::uint64_t messages_received_ = 0;
  std::vector<std::uint8_t> in_;
  std::size_t sent_ = 0;
};

class NetPlanTest : public ::testing::Test {
 protected:
  // A responder on an ephemeral loopback port.
  std::size_t AddHost(std::uint32_t max_connections = 16,
                      const std::function<void(ResponderOptions&)>& configure = nullptr) {
    ResponderOptions options;
    options.ports = {0};
    options.secret = secret_;
    options.max_connections = max_connections;
    options.packets_per_second_per_source = 100000;
    options.orchestration_key = key_.public_key();
    if (configure) configure(options);
    auto started = StartResponder(options);
    EXPECT_TRUE(started) << (started ? "" : started.error());
    responders_.push_back(std::move(started).value());
    targets_.push_back({"host" + std::to_string(targets_.size() + 1),
                        *ParseNumericAddress("127.0.0.1", responders_.back()->Ports().front())});
    return targets_.size() - 1;
  }

  AllToAllOptions Options(ThroughputTest test, std::uint64_t rate_mib) const {
    AllToAllOptions options;
    options.test = test;
    options.duration = 1s;
    options.rate_bytes_per_second = rate_mib << 20;
    options.datagram_size = 1400;
    options.report_grace = 4s;
    options.orchestration_key = &key_;
    return options;
  }

  Secret secret_ = TestSecret();
  OrchestrationKey key_ = OrchestrationKey::Generate().value();
  std::vector<std::unique_ptr<Responder>> responders_;
  std::vector<PeerTarget> targets_;
};

TEST_F(NetPlanTest, EveryHostSendsToAndReceivesFromAllTheOthersAtOnce) {
  for (int i = 0; i < 3; ++i) AddHost();
  std::vector<std::string> reported;
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 20), secret_, Never,
                                   [&](const AllToAllHostResult& r) { reported.push_back(r.name); });
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(reported.size(), 3u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_EQ(r.report.sessions_ok, 2) << r.name;
    EXPECT_EQ(r.report.sessions_failed, 0) << r.name;
    EXPECT_EQ(r.report.peers_received, 2) << r.name;
    // 20 MiB/s spread over two peers for a second, paced: about 20 MiB each way.
    EXPECT_GT(r.SentBytesPerSecond(), 0.6 * (20 << 20)) << r.name;
    EXPECT_LT(r.SentBytesPerSecond(), 1.3 * (20 << 20)) << r.name;
    EXPECT_GT(r.ReceivedBytesPerSecond(), 0.6 * (20 << 20)) << r.name;
    EXPECT_GT(r.report.sent_ns, 500'000'000) << r.name;
  }
  // What was sent was received, all told (TCP: every byte).
  std::uint64_t sent = 0, received = 0;
  for (const auto& r : results) {
    sent += r.report.bytes_sent;
    received += r.report.bytes_received;
  }
  EXPECT_EQ(sent, received);
}

TEST_F(NetPlanTest, UdpAmongAllHostsCountsDatagramsAndLoss) {
  for (int i = 0; i < 3; ++i) AddHost();
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kUdp, 4), secret_, Never);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_GT(r.report.packets_sent, 1000u) << r.name;
    EXPECT_GT(r.report.packets_received, 1000u) << r.name;
    EXPECT_LT(r.LossRatio(), 0.5) << r.name;
  }
}

TEST_F(NetPlanTest, TheResponderKeepsServingPlansOneAfterAnother) {
  for (int i = 0; i < 2; ++i) AddHost();
  for (int round = 0; round < 3; ++round) {
    const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), secret_, Never);
    for (const auto& r : results) EXPECT_TRUE(r.ok) << "round " << round << " " << r.name << ": " << r.error;
  }
}

TEST_F(NetPlanTest, ABusyHostIsReportedAndTheOthersTestAmongThemselves) {
  for (int i = 0; i < 4; ++i) AddHost();
  // host1 is in a pair session for the whole plan.
  std::atomic<bool> stop{false};
  std::thread pair([&] {
    ThroughputOptions options;
    options.duration = 6s;
    options.rate_bytes_per_second = 1 << 20;
    RunThroughput(targets_[0].address, options, secret_, [&] { return stop.load(); });
  });
  std::this_thread::sleep_for(300ms);
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), secret_, Never);
  stop = true;
  pair.join();
  ASSERT_EQ(results.size(), 4u);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].error.find("busy"), std::string::npos) << results[0].error;
  for (std::size_t i = 1; i < 4; ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].name << ": " << results[i].error;
    EXPECT_EQ(results[i].report.sessions_ok, 2) << "the busy host is not among the peers";
    EXPECT_EQ(results[i].report.sessions_failed, 0);
  }
}

TEST_F(NetPlanTest, AHostThatIsNoResponderIsReportedWithinTheConnectTimeout) {
  for (int i = 0; i < 2; ++i) AddHost();
  // A listener that accepts and never answers.
  SocketAddress address;
  const Fd silent = Listener(&address);
  ASSERT_TRUE(silent.valid());
  targets_.push_back({"silent", address});
  auto options = Options(ThroughputTest::kTcp, 8);
  options.connect_timeout = 1s;
  const auto start = Clock::now();
  const auto results = RunAllToAll(targets_, options, secret_, Never);
  EXPECT_LT(Clock::now() - start, 30s);
  EXPECT_FALSE(results[2].ok);
  EXPECT_FALSE(results[2].error.empty());
  EXPECT_TRUE(results[0].ok) << results[0].error;
  EXPECT_TRUE(results[1].ok) << results[1].error;
  EXPECT_EQ(results[0].report.sessions_ok, 1);
}

TEST_F(NetPlanTest, AHostThatDiesMidTestIsReportedAndTheRunEndsInBoundedTime) {
  for (int i = 0; i < 3; ++i) AddHost();
  auto options = Options(ThroughputTest::kTcp, 8);
  options.duration = 3s;
  std::thread killer([&] {
    std::this_thread::sleep_for(1s);
    responders_[1].reset();  // its sockets close: the coordinator and its peers see it go
  });
  const auto start = Clock::now();
  const auto results = RunAllToAll(targets_, options, secret_, Never);
  killer.join();
  const auto took = Clock::now() - start;
  EXPECT_LT(took, options.connect_timeout + options.duration + options.report_grace + 5s);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[1].ok);
  EXPECT_NE(results[1].error.find("lost the connection"), std::string::npos) << results[1].error;
  for (const std::size_t i : {0u, 2u}) {
    ASSERT_TRUE(results[i].ok) << results[i].name << ": " << results[i].error;
    EXPECT_EQ(results[i].report.sessions_failed, 1) << results[i].name << ": its session to the dead host";
  }
}

// gpcheckperf's pairs on bare hosts (hostperf check --ssh): a pair both ways
// under one plan, each link's figure from its sender.
TEST_F(NetPlanTest, APairBothWaysMeasuresEachLinkAtItsSender) {
  for (int i = 0; i < 3; ++i) AddHost();
  const std::vector<std::pair<std::size_t, std::size_t>> links = {{0, 2}, {2, 0}};
  const auto results = RunPlanLinks(targets_, links, Options(ThroughputTest::kTcp, 16), secret_, Never);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.report.sessions_ok, 1);
    EXPECT_EQ(r.report.peers_received, 1);
    // 16 MiB/s to its one peer for a second, paced.
    EXPECT_GT(r.SentBytesPerSecond(), 0.6 * (16 << 20));
    EXPECT_LT(r.SentBytesPerSecond(), 1.3 * (16 << 20));
  }
}

TEST_F(NetPlanTest, PlannedLinksThatAResponderCouldNotCountAreRefusedBeforeAnyTraffic) {
  for (int i = 0; i < 3; ++i) AddHost();
  // Host 1 would receive without sending: its responder takes as many plan
  // sessions as its plan has peers.
  const std::vector<std::pair<std::size_t, std::size_t>> one_way = {{0, 1}};
  const auto results = RunPlanLinks(targets_, one_way, Options(ThroughputTest::kTcp, 8), secret_, Never);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].error.find("sends on one link and receives on one"), std::string::npos) << results[0].error;
  EXPECT_EQ(results[0].report.bytes_sent, 0u);
}

TEST_F(NetPlanTest, APairWithADeadHostFailsBothLinksNamingIt) {
  for (int i = 0; i < 2; ++i) AddHost();
  responders_[1].reset();
  auto options = Options(ThroughputTest::kTcp, 8);
  options.connect_timeout = 1s;
  const std::vector<std::pair<std::size_t, std::size_t>> links = {{0, 1}, {1, 0}};
  const auto start = Clock::now();
  const auto results = RunPlanLinks(targets_, links, options, secret_, Never);
  EXPECT_LT(Clock::now() - start, 15s);
  for (const auto& r : results) {
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.error.find("host2"), std::string::npos) << r.error;
  }
}

TEST(AllToAllScheduleTest, EveryOrderedPairOnceAndAsManyPeersEachWayInEveryRound) {
  for (const std::size_t hosts : {2u, 3u, 5u, 64u, 100u, 301u}) {
    for (const std::size_t fan_out : {1u, 2u, 7u, 32u, 400u}) {
      const auto rounds = AllToAllSchedule(hosts, fan_out);
      ASSERT_EQ(rounds.size(), (hosts - 1 + fan_out - 1) / fan_out) << hosts << " hosts, fan-out " << fan_out;
      std::set<std::pair<std::size_t, std::size_t>> pairs;
      for (const AllToAllRound& round : rounds) {
        ASSERT_GE(round.peers, 1u);
        ASSERT_LE(round.peers, fan_out);
        std::vector<std::size_t> sends(hosts), receives(hosts);
        for (std::size_t j = 0; j < hosts; ++j) {
          for (std::size_t k = 0; k < round.peers; ++k) {
            const std::size_t to = (j + round.first_offset + k) % hosts;
            ASSERT_NE(to, j) << "a host never sends to itself";
            EXPECT_TRUE(pairs.insert({j, to}).second) << j << " -> " << to << " twice";
            ++sends[j];
            ++receives[to];
          }
        }
        for (std::size_t j = 0; j < hosts; ++j) {
          ASSERT_EQ(sends[j], round.peers);
          ASSERT_EQ(receives[j], round.peers) << "a responder waits for as many peers as it sends to";
        }
      }
      EXPECT_EQ(pairs.size(), hosts * (hosts - 1)) << hosts << " hosts, fan-out " << fan_out;
    }
  }
  EXPECT_TRUE(AllToAllSchedule(1, 4).empty());
  EXPECT_TRUE(AllToAllSchedule(5, 0).empty());
}

TEST_F(NetPlanTest, AFanOutBelowTheHostCountRunsInRoundsWithTheSameTotalsPerHost) {
  for (int i = 0; i < 5; ++i) AddHost();
  auto options = Options(ThroughputTest::kTcp, 8);
  options.max_peers_per_round = 2;
  std::vector<std::tuple<std::size_t, std::size_t, std::size_t>> rounds;
  options.on_round = [&](std::size_t round, std::size_t of, std::size_t hosts) {
    rounds.emplace_back(round, of, hosts);
  };
  const auto results = RunAllToAll(targets_, options, secret_, Never);
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0], std::make_tuple(1u, 2u, 5u));
  EXPECT_EQ(rounds[1], std::make_tuple(2u, 2u, 5u));
  std::uint64_t sent = 0, received = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_EQ(r.report.sessions_ok, 4) << r.name << ": every other host, over the rounds";
    EXPECT_EQ(r.report.peers_received, 4) << r.name;
    // Two rounds of a second at 8 MiB/s: the rate holds in each round.
    EXPECT_GT(r.report.sent_ns, 1'500'000'000) << r.name;
    EXPECT_GT(r.SentBytesPerSecond(), 0.6 * (8 << 20)) << r.name;
    EXPECT_LT(r.SentBytesPerSecond(), 1.3 * (8 << 20)) << r.name;
    sent += r.report.bytes_sent;
    received += r.report.bytes_received;
  }
  EXPECT_EQ(sent, received);
}

TEST_F(NetPlanTest, AHostWithFewConnectionsLowersTheFanOutInsteadOfBeingLeftOut) {
  // Room for the coordinator and one peer (two with the last round's):
  // everyone runs one peer at a time.
  AddHost(/*max_connections=*/4);
  AddHost();
  AddHost();
  std::size_t rounds = 0;
  auto options = Options(ThroughputTest::kTcp, 8);
  options.on_round = [&](std::size_t, std::size_t, std::size_t) { ++rounds; };
  const auto results = RunAllToAll(targets_, options, secret_, Never);
  EXPECT_EQ(rounds, 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_EQ(r.report.sessions_ok, 2) << r.name;
  }
}

TEST_F(NetPlanTest, AHostThatDeniesTheFanOutHalvesItForEveryone) {
  AddHost(16, [](ResponderOptions& options) { options.plan_max_sessions = 1; });  // not advertised in its hello
  for (int i = 0; i < 3; ++i) AddHost();
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), secret_, Never);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_EQ(r.report.sessions_ok, 3) << r.name;
  }
}

TEST_F(NetPlanTest, AHostThatHoldsOneConnectionIsNamedAndTheOthersRun) {
  AddHost(/*max_connections=*/1);
  AddHost();
  AddHost();
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), secret_, Never);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].error.find("max_connections"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[1].ok) << results[1].error;
  EXPECT_TRUE(results[2].ok) << results[2].error;
  EXPECT_EQ(results[1].report.sessions_ok, 1);
}

TEST_F(NetPlanTest, APlanBeyondAHostsOwnLimitsLeavesThatHostOutAndTheOthersKeepTheirFanOut) {
  AddHost(16, [](ResponderOptions& options) { options.plan_max_rate = 1 << 20; });
  for (int i = 0; i < 4; ++i) AddHost();
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), secret_, Never);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].error.find("denied"), std::string::npos) << results[0].error;
  for (std::size_t i = 1; i < results.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << results[i].error;
    EXPECT_EQ(results[i].report.sessions_ok, 3) << results[i].name;
    // Its denials halved the fan-out down to one peer; without it the
    // others went back to all three at once: one round.
    EXPECT_EQ(results[i].rounds, 1u) << results[i].name;
  }
}

TEST_F(NetPlanTest, OnlyTheActivePlanSessionsAreAcceptedAndAStrangerGetsNoBulkData) {
  const std::size_t host = AddHost();
  // A session naming a plan the responder was not given is denied.
  ThroughputOptions options;
  options.duration = 500ms;
  options.plan_id = 12345;
  const auto denied = RunThroughput(targets_[host].address, options, secret_, Never);
  EXPECT_EQ(denied.outcome, SessionOutcome::kDenied);
  EXPECT_EQ(denied.bytes_sent, 0u);

  // A plan whose peer is not a responder: the sender stops at its hello, so
  // the stranger receives the hello and nothing of the stream.
  SocketAddress address;
  const Fd stranger = Listener(&address);
  ASSERT_TRUE(stranger.valid());
  std::atomic<std::size_t> received{0};
  std::atomic<bool> done{false};
  std::thread listener([&] {
    Fd conn;
    while (!done && !conn.valid()) {
      WaitFd(stranger.get(), POLLIN, Clock::now() + 100ms);
      conn = Fd(::accept(stranger.get(), nullptr, nullptr));
    }
    char buffer[65536];
    while (!done && conn.valid()) {
      if (!WaitFd(conn.get(), POLLIN, Clock::now() + 100ms)) continue;
      const ssize_t n = ::recv(conn.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n <= 0) break;
      received += static_cast<std::size_t>(n);
    }
  });
  const Plan plan = OnePeerPlan(77, 1000, 0);  // unlimited: the worst case
  const std::vector<PlanPeer> peers = {ToPlanPeer(address)};
  const PlanReport report = SendToPlanPeers(plan, peers, secret_, Never);
  done = true;
  listener.join();
  EXPECT_EQ(report.sessions_failed, 1);
  EXPECT_EQ(report.bytes_sent, 0u);
  EXPECT_LE(received.load(), kMaxMessage) << "only the hello reached the stranger";
}

// A plan is checked against the responder's own configuration, whoever
// signed it: a rate of 0 (unlimited) without an unlimited cap, a rate above
// the cap, a 60 s plan, 63 sessions and a peer outside its peer set are each
// refused, counted by reason, and the coordinator's error says why.
TEST_F(NetPlanTest, APlanBeyondTheResponderOwnLimitsIsRefusedAndCounted) {
  const std::size_t member = AddHost();
  PlanObserver observer;
  std::set<std::string> peer_set;
  const std::size_t host = AddHost(/*max_connections=*/100, [&](ResponderOptions& options) {
    options.observer = &observer;
    options.plan_max_rate = 64 << 20;
    options.plan_max_duration_ms = 2000;
    options.plan_max_sessions = 8;
    options.plan_peer_allowed = [&peer_set](const SocketAddress& peer) { return peer_set.contains(peer.ToString()); };
  });
  peer_set.insert(targets_[member].address.ToString());
  const std::vector<PlanPeer> members = {ToPlanPeer(targets_[member].address)};
  const Plan plan = OnePeerPlan(1, 1000, 8 << 20);
  const auto offer = [&](Plan p, const std::vector<PlanPeer>& peers) {
    HandControl control(targets_[host].address, secret_);
    EXPECT_TRUE(control.ready());
    p.peer_count = static_cast<std::uint16_t>(peers.size());
    return control.Offer(p, peers, &key_);
  };

  Plan unlimited = plan;
  unlimited.rate_bytes_per_second = 0;
  EXPECT_EQ(offer(unlimited, members), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("rate"), 1);
  Plan fast = plan;
  fast.rate_bytes_per_second = (64 << 20) + 1;
  EXPECT_EQ(offer(fast, members), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("rate"), 2);

  Plan long_plan = plan;
  long_plan.duration_ms = 60000;
  EXPECT_EQ(offer(long_plan, members), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("duration"), 1);

  std::vector<PlanPeer> many;
  for (int i = 0; i < 63; ++i) many.push_back(members.front());
  EXPECT_EQ(offer(plan, many), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("sessions"), 1);

  const std::vector<PlanPeer> stranger = {ToPlanPeer(*ParseNumericAddress("127.0.0.1", 9))};
  EXPECT_EQ(offer(plan, stranger), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("peer"), 1);

  // Within every limit, to a member: accepted.
  EXPECT_EQ(offer(plan, members), MessageType::kAccept);
  EXPECT_EQ(observer.Sent(), 0u) << "no byte sent for a refused or un-started plan";

  // The coordinator's error names the limits.
  std::vector<PeerTarget> pair = {targets_[host], targets_[member]};
  auto options = Options(ThroughputTest::kTcp, 8);
  options.duration = 5s;
  const auto results = RunAllToAll(pair, options, secret_, Never);
  EXPECT_FALSE(results[0].ok);
  EXPECT_NE(results[0].error.find("plan_max_duration"), std::string::npos) << results[0].error;
}

// The fleet secret lets a host measure its peers, not direct them: a
// holder of the secret alone (an unsigned plan), another key, a signature
// made on another connection and one made for other peers are each refused
// as "orchestrator" and nothing is sent; the coordinator's own key is taken.
TEST_F(NetPlanTest, AForgedOrchestratorIsRefusedWhateverElseItHolds) {
  const std::size_t member = AddHost();
  const std::size_t other = AddHost();
  PlanObserver observer;
  const std::size_t host = AddHost(16, [&](ResponderOptions& options) { options.observer = &observer; });
  const Plan plan = OnePeerPlan(9, 500, 1 << 20);
  const std::vector<PlanPeer> peers = {ToPlanPeer(targets_[member].address)};

  HandControl unsigned_offer(targets_[host].address, secret_);
  ASSERT_TRUE(unsigned_offer.ready());
  EXPECT_EQ(unsigned_offer.Offer(plan, peers, nullptr), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("orchestrator"), 1);

  const OrchestrationKey stranger = OrchestrationKey::Generate().value();
  HandControl other_key(targets_[host].address, secret_);
  EXPECT_EQ(other_key.Offer(plan, peers, &stranger), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("orchestrator"), 2);

  // A signature captured on one connection, replayed on another.
  HandControl first(targets_[host].address, secret_);
  HandControl second(targets_[host].address, secret_);
  ASSERT_TRUE(first.ready() && second.ready());
  EXPECT_EQ(second.OfferSigned(plan, peers, key_.Sign(PlanSigningBytes(first.binding(), plan, peers))),
            MessageType::kDenied);
  EXPECT_EQ(observer.Refused("orchestrator"), 3);

  // Signed for one peer, sent with another.
  HandControl edited(targets_[host].address, secret_);
  EXPECT_EQ(edited.OfferSigned(plan, {ToPlanPeer(targets_[other].address)},
                               key_.Sign(PlanSigningBytes(edited.binding(), plan, peers))),
            MessageType::kDenied);
  EXPECT_EQ(observer.Refused("orchestrator"), 4);

  HandControl genuine(targets_[host].address, secret_);
  EXPECT_EQ(genuine.Offer(plan, peers, &key_), MessageType::kAccept);
  EXPECT_EQ(observer.Refused("orchestrator"), 4);
  EXPECT_EQ(observer.Sent(), 0u) << "a refused plan sends nothing";
}

// A responder that trusts no orchestration key takes no plan, however it is
// signed; a coordinator without a key offers none to a host of revision 4
// and says why.
TEST_F(NetPlanTest, WithoutOrchestrationKeysThereAreNoPlans) {
  PlanObserver observer;
  const std::size_t member = AddHost();
  const std::size_t host = AddHost(16, [&](ResponderOptions& options) {
    options.observer = &observer;
    options.orchestration_key.reset();
  });
  const Plan plan = OnePeerPlan(3, 500, 1 << 20);
  HandControl control(targets_[host].address, secret_);
  EXPECT_EQ(control.Offer(plan, {ToPlanPeer(targets_[member].address)}, &key_), MessageType::kDenied);
  EXPECT_EQ(observer.Refused("orchestrator"), 1);
  const std::vector<PeerTarget> pair = {targets_[host], targets_[member]};
  const auto denied = RunAllToAll(pair, Options(ThroughputTest::kTcp, 4), secret_, Never);
  EXPECT_FALSE(denied[0].ok);
  EXPECT_NE(denied[0].error.find("orchestration_public_key_file"), std::string::npos) << denied[0].error;

  auto keyless = Options(ThroughputTest::kTcp, 4);
  keyless.orchestration_key = nullptr;
  const auto results = RunAllToAll(pair, keyless, secret_, Never);
  for (const auto& r : results) {
    EXPECT_FALSE(r.ok) << r.name;
  }
  EXPECT_NE(results[1].error.find("holds no orchestration key"), std::string::npos) << results[1].error;
}

// Bare hosts over SSH: each host has a secret of its own and the plans'
// sessions between them use a run-wide plan secret. The plan runs among all
// of them; the plan secret alone opens nothing but a plan's session (no
// pair session, no ping), and one host's secret opens nothing on another.
TEST_F(NetPlanTest, HostsWithSecretsOfTheirOwnRunPlansOverTheRunWideSecretOnly) {
  const Secret plan_secret(32, 0x50);
  for (std::uint8_t i = 0; i < 3; ++i) {
    AddHost(16, [&](ResponderOptions& options) {
      options.secret = Secret(32, static_cast<std::uint8_t>(0x60 + i));
      options.plan_secret = plan_secret;
    });
    targets_.back().secret = Secret(32, static_cast<std::uint8_t>(0x60 + i));
  }
  const Secret nobody(32, 0x01);  // the shared secret of the call: no host holds it
  const auto results = RunAllToAll(targets_, Options(ThroughputTest::kTcp, 8), nobody, Never);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.error;
    EXPECT_EQ(r.report.sessions_ok, 2) << r.name;
    EXPECT_EQ(r.report.peers_received, 2) << r.name;
  }

  ThroughputOptions pair;
  pair.duration = 200ms;
  pair.rate_bytes_per_second = 1 << 20;
  const auto with_plan_secret = RunThroughput(targets_[0].address, pair, plan_secret, Never);
  EXPECT_NE(with_plan_secret.outcome, SessionOutcome::kOk) << "the plan secret started a pair session";
  EXPECT_EQ(with_plan_secret.bytes_sent, 0u);
  LatencyOptions pings;
  pings.packets = 3;
  pings.interval = 10ms;
  pings.reply_timeout = 300ms;
  PeerTarget pinged{"host1", targets_[0].address};
  pinged.secret = plan_secret;
  const auto latency = MeasureLatency(std::span(&pinged, 1), pings, nobody, Never);
  EXPECT_EQ(latency[0].received, 0u) << "the plan secret was answered a ping";
  EXPECT_FALSE(Hello(targets_[1].address, *targets_[0].secret, 1s)) << "host 1's secret opened host 2";
  const auto own = RunThroughput(targets_[0].address, pair, *targets_[0].secret, Never);
  EXPECT_EQ(own.outcome, SessionOutcome::kOk) << "a host's own secret is good for a pair session";
}

// The worst case one plan can cause, per control byte: a responder sends at
// most plan_max_rate for plan_max_duration (plus pacing slack), whatever
// the coordinator asks; the bytes it sent are counted (the
// hostperf_net_responder_plan_sent_bytes_total counter). With the defaults
// (2 GiB/s, 10 s) that is 21.5 GB per plan; the smallest control exchange
// that starts one (hello, a signed plan, one peer, go: measured here) is
// under 400 bytes, so the bound is rate cap x duration cap / control bytes,
// about 6e7 bytes per control byte at the defaults, and only for a holder of
// the secret and the orchestration key, toward members of the host's own
// peer set.
TEST_F(NetPlanTest, APlanSendsNoMoreThanTheResponderCapsAllowPerControlByte) {
  PlanObserver observer;
  constexpr std::uint64_t kRateCap = 4 << 20;
  constexpr std::uint32_t kDurationCapMs = 500;
  for (int i = 0; i < 2; ++i) {
    AddHost(16, [&](ResponderOptions& options) {
      options.observer = &observer;
      options.plan_max_rate = kRateCap;
      options.plan_max_duration_ms = kDurationCapMs;
    });
  }
  std::vector<std::unique_ptr<HandControl>> controls;
  const Plan plan = OnePeerPlan(5, kDurationCapMs, kRateCap);
  for (std::size_t i = 0; i < 2; ++i) {
    controls.push_back(std::make_unique<HandControl>(targets_[i].address, secret_));
    ASSERT_TRUE(controls.back()->ready());
    ASSERT_EQ(controls.back()->Offer(plan, {ToPlanPeer(targets_[1 - i].address)}, &key_), MessageType::kAccept);
  }
  Message go;
  go.type = MessageType::kPlanGo;
  for (auto& control : controls) control->Send(go);
  std::size_t control_bytes = 0;
  std::uint64_t sent = 0;
  for (auto& control : controls) {
    control_bytes += control->sent_bytes();
    const auto report = control->Receive(12s);
    ASSERT_TRUE(report && report->type == MessageType::kPlanReport);
    EXPECT_GT(report->report.bytes_sent, 0u);
    sent += report->report.bytes_sent;
  }
  EXPECT_EQ(observer.Sent(), sent) << "plan bytes are accounted";
  // Pacing lets a sender run ahead by at most a few buffers: 10 % plus 1 MiB a host.
  const double bound = 2 * (1.1 * static_cast<double>(kRateCap) * kDurationCapMs / 1000.0 + (1 << 20));
  EXPECT_LE(static_cast<double>(sent), bound);
  EXPECT_LT(control_bytes, 2 * 400u);
  std::cout << "[ numbers  ] " << sent << " bytes sent for " << control_bytes
            << " control bytes: " << static_cast<double>(sent) / static_cast<double>(control_bytes)
            << " per control byte (bound " << bound / static_cast<double>(control_bytes) << ")\n";
}

}  // namespace
}  // namespace hostperf::probes::net
