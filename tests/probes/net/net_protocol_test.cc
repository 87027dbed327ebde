#include <gtest/gtest.h>

#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/protocol.h"

namespace hostperf::probes::net {
namespace {

const Secret kSecret(32, 7);

Message Ping(std::uint32_t seq) {
  Message m;
  m.type = MessageType::kPing;
  m.session = 42;
  m.ping.seq = seq;
  m.ping.t1_ns = 1'700'000'000'123'456'789;
  return m;
}

TEST(NetProtocolTest, RoundTripsEveryType) {
  for (int t = 1; t <= 10; ++t) {
    Message m;
    m.type = static_cast<MessageType>(t);
    m.session = 0xdeadbeef;
    m.hello.max_connections = 17;
    m.ping = {9, 1, 2, 3};
    m.start = {ThroughputTest::kUdp, 1500, 32 << 20};
    m.accept.token = 0x0123456789abcdefULL;
    m.results = {100, 10, 1, 5000, 77};
    const auto bytes = Encode(m, kSecret);
    const Decoded d = Decode(bytes, kSecret);
    ASSERT_TRUE(d.message) << ToString(m.type) << ": " << ToString(d.error);
    EXPECT_EQ(d.consumed, bytes.size());
    EXPECT_EQ(d.message->type, m.type);
    EXPECT_EQ(d.message->session, m.session);
    if (m.type == MessageType::kPong) {
      EXPECT_EQ(d.message->ping.t2_ns, 2);
      EXPECT_EQ(d.message->ping.t3_ns, 3);
    }
    if (m.type == MessageType::kSessionStart) {
      EXPECT_EQ(d.message->start.test, ThroughputTest::kUdp);
      EXPECT_EQ(d.message->start.duration_ms, 1500u);
      EXPECT_EQ(d.message->start.rate_bytes_per_second, 32u << 20);
    }
    if (m.type == MessageType::kResults) {
      EXPECT_EQ(d.message->results.bytes, 100u);
      EXPECT_EQ(d.message->results.packets_lost, 1u);
      EXPECT_EQ(d.message->results.jitter_ns, 77);
    }
    if (m.type == MessageType::kAccept) {
      EXPECT_EQ(d.message->accept.token, m.accept.token);
    }
  }
}

TEST(NetProtocolTest, RejectsWrongSecretAndTampering) {
  auto bytes = Encode(Ping(1), kSecret);
  EXPECT_EQ(Decode(bytes, Secret(32, 8)).error, DecodeError::kBadHmac);
  EXPECT_FALSE(Decode(bytes, Secret(32, 8)).message);
  bytes[20] ^= 1;  // payload bit flip
  EXPECT_EQ(Decode(bytes, kSecret).error, DecodeError::kBadHmac);
}

TEST(NetProtocolTest, RejectsMalformedHeaders) {
  const auto good = Encode(Ping(1), kSecret);
  auto bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_EQ(Decode(bad_magic, kSecret).error, DecodeError::kBadMagic);
  auto bad_version = good;
  bad_version[4] = 1;  // the previous version, without nonces
  EXPECT_EQ(Decode(bad_version, kSecret).error, DecodeError::kBadVersion);
  EXPECT_EQ(Decode(bad_version, kSecret).version, 1);
  auto bad_type = good;
  bad_type[5] = 99;
  EXPECT_EQ(Decode(bad_type, kSecret).error, DecodeError::kBadType);
  auto bad_length = good;
  bad_length[13] = 31;
  EXPECT_EQ(Decode(bad_length, kSecret).error, DecodeError::kBadLength);
  for (std::size_t n = 0; n < good.size(); ++n) {
    EXPECT_EQ(Decode(std::span(good).first(n), kSecret).error, DecodeError::kTruncated) << n;
  }
}

// The amplification rule: every reply the responder can send is no larger than
// the request that triggers it.
TEST(NetProtocolTest, RepliesAreNeverLargerThanRequests) {
  const auto size = [](MessageType t) { return kHeaderSize + *PayloadSize(t) + kMacSize; };
  EXPECT_LE(size(MessageType::kPong), size(MessageType::kPing));
  EXPECT_LE(size(MessageType::kHelloAck), size(MessageType::kHello));
  EXPECT_LE(size(MessageType::kAccept), size(MessageType::kSessionStart));
  EXPECT_LE(size(MessageType::kBusy), size(MessageType::kSessionStart));
  EXPECT_LE(size(MessageType::kDenied), size(MessageType::kSessionStart));
}

// Version 2: the hello carries a nonce, and a message signed over one
// connection's nonces does not decode under another's (a replay).
TEST(NetProtocolTest, NoncesRoundTripAndBindingsDoNotTransfer) {
  Message hello;
  hello.type = MessageType::kHello;
  hello.hello.nonce = RandomNonce();
  const Decoded d = Decode(Encode(hello, kSecret), kSecret);
  ASSERT_TRUE(d.message);
  EXPECT_EQ(d.message->hello.nonce, hello.hello.nonce);
  EXPECT_NE(RandomNonce(), RandomNonce());

  Message start;
  start.type = MessageType::kSessionStart;
  start.start.duration_ms = 100;
  const auto binding = SessionBinding(hello.hello.nonce, RandomNonce());
  const auto bytes = Encode(start, kSecret, binding);
  EXPECT_TRUE(Decode(bytes, kSecret, binding).message);
  EXPECT_EQ(Decode(bytes, kSecret).error, DecodeError::kBadHmac);
  EXPECT_EQ(Decode(bytes, kSecret, SessionBinding(hello.hello.nonce, RandomNonce())).error, DecodeError::kBadHmac);
}

TEST(NetProtocolTest, UdpDataRoundTrip) {
  std::vector<std::uint8_t> datagram(100);
  EncodeUdpData({7, 8, 9}, datagram);
  const auto data = DecodeUdpData(datagram);
  ASSERT_TRUE(data);
  EXPECT_EQ(data->token, 7u);
  EXPECT_EQ(data->seq, 8u);
  EXPECT_EQ(data->sent_ns, 9);
  EXPECT_FALSE(DecodeUdpData(std::span(datagram).first(10)));
  EXPECT_FALSE(DecodeUdpData(Encode(Ping(1), kSecret)));
}

// NTP maths: a peer clock 1.000 s ahead reads +1.000 s within RTT/2.
TEST(NetClockOffsetTest, PeerOneSecondAhead) {
  constexpr std::int64_t kAhead = 1'000'000'000;
  std::vector<TimestampSample> samples;
  // Asymmetric, noisy paths; the third has the least delay (20 us each way).
  const std::int64_t paths[][2] = {{300'000, 90'000}, {150'000, 400'000}, {20'000, 20'000}, {80'000, 60'000}};
  std::int64_t t = 5'000'000'000;
  for (const auto& path : paths) {
    TimestampSample s;
    s.t1 = t;
    s.t2 = t + path[0] + kAhead;
    s.t3 = s.t2 + 10'000;  // responder processing
    s.t4 = t + path[0] + 10'000 + path[1];
    samples.push_back(s);
    t += 10'000'000;
  }
  const auto offset = ClockOffsetSeconds(samples);
  ASSERT_TRUE(offset);
  EXPECT_NEAR(*offset, 1.000, 40e-6 / 2);
  EXPECT_EQ(samples[2].Delay(), 40'000);
  EXPECT_FALSE(ClockOffsetSeconds({}));
}

TEST(NetClockOffsetTest, BehindIsNegative) {
  const TimestampSample s{1'000, 1'000 + 50 - 2'000'000'000, 1'000 + 60 - 2'000'000'000, 1'000 + 110};
  EXPECT_NEAR(s.OffsetSeconds(), -2.0, 1e-6);
}

}  // namespace
}  // namespace hostperf::probes::net
