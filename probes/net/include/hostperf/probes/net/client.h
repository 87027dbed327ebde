#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

// One ping-pong exchange: t1 client send, t2 responder receive, t3 responder
// send, t4 client receive (all wall-clock ns, each on its own host's clock).
struct TimestampSample {
  std::int64_t t1 = 0;
  std::int64_t t2 = 0;
  std::int64_t t3 = 0;
  std::int64_t t4 = 0;
  std::int64_t Delay() const { return (t4 - t1) - (t3 - t2); }
  // NTP: peer clock minus local clock.
  double OffsetSeconds() const { return static_cast<double>((t2 - t1) + (t3 - t4)) / 2e9; }
};
// The offset of the minimum-delay sample (the least queueing); nullopt when empty.
std::optional<double> ClockOffsetSeconds(std::span<const TimestampSample> samples);

struct LatencyOptions {
  std::uint32_t packets = 20;
  std::chrono::nanoseconds interval = std::chrono::milliseconds(10);  // open-loop send period
  std::chrono::nanoseconds reply_timeout = std::chrono::milliseconds(500);
};

struct LatencyResult {
  std::uint32_t sent = 0;
  std::uint32_t received = 0;
  std::vector<double> rtt_seconds;  // one per reply (network time, responder processing removed)
  std::vector<TimestampSample> samples;
  std::optional<double> clock_offset_seconds;
  std::string error;  // a local failure (socket); a silent peer only shows as loss
  std::uint32_t lost() const { return sent - received; }
};

struct PeerTarget {
  std::string name;
  SocketAddress address;
  // This host's own secret (bare hosts over SSH each get one); none: the
  // secret the call is given.
  std::optional<Secret> secret = std::nullopt;
  const Secret& SecretOr(const Secret& shared) const { return secret ? *secret : shared; }
};

// UDP ping-pong with every target at once: packet i to each target leaves at
// start + i * interval whether or not earlier replies came (no coordinated
// omission); replies are awaited until the last send plus reply_timeout.
std::vector<LatencyResult> MeasureLatency(std::span<const PeerTarget> targets, const LatencyOptions& options,
                                          const Secret& secret, const std::function<bool()>& should_stop,
                                          const RealtimeClock& realtime = RealtimeNs);

enum class SessionOutcome { kOk, kBusy, kDenied, kUnreachable, kProtocolError, kStopped };
std::string_view ToString(SessionOutcome outcome);

struct ThroughputOptions {
  ThroughputTest test = ThroughputTest::kTcp;
  std::chrono::nanoseconds duration = std::chrono::seconds(1);
  std::uint64_t rate_bytes_per_second = 0;  // 0: unlimited
  std::size_t write_size = 128 * 1024;      // TCP write size
  std::size_t datagram_size = 8192;         // UDP datagram size
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(2);
  std::uint64_t plan_id = 0;  // non-zero: a session of this all-hosts plan (plan.h)
  // How long the results may take once the data is sent; none: the connect
  // timeout plus the duration.
  std::optional<std::chrono::nanoseconds> results_timeout;
};

struct ThroughputResult {
  SessionOutcome outcome = SessionOutcome::kUnreachable;
  std::string error;
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;  // as the responder counted them
  double sent_seconds = 0;           // the sender's duration
  double received_seconds = 0;       // the responder's first-to-last byte
  std::uint64_t packets_sent = 0;    // UDP
  std::uint64_t packets_received = 0;
  std::uint64_t packets_lost = 0;
  double jitter_seconds = 0;
  std::optional<std::uint32_t> peer_mtu;  // from the session's hello reply (revision >= 1)
  double SentBytesPerSecond() const { return sent_seconds > 0 ? bytes_sent / sent_seconds : 0; }
  double ReceivedBytesPerSecond() const { return sent_seconds > 0 ? bytes_received / sent_seconds : 0; }
  double LossRatio() const {
    return packets_sent > 0 ? 1.0 - std::min(1.0, static_cast<double>(packets_received) / packets_sent) : 0;
  }
};

// A throughput session with one responder (TCP control connection; data over
// TCP, or UDP datagrams paced evenly at the rate).
ThroughputResult RunThroughput(const SocketAddress& peer, const ThroughputOptions& options, const Secret& secret,
                               const std::function<bool()>& should_stop, const RealtimeClock& realtime = RealtimeNs);

// What a responder says in its hello reply.
struct HelloReply {
  std::uint32_t max_connections = 0;
  std::uint8_t revision = 0;         // 0: a responder of the previous release
  std::optional<std::uint32_t> mtu;  // its MTU toward us; unknown before revision 1 or when it cannot tell
};
// TCP hello: ok when the responder answers with our protocol version.
Result<HelloReply> Hello(const SocketAddress& peer, const Secret& secret, std::chrono::nanoseconds timeout);

// Opens TCP connections at once, each confirmed by a hello, up to `maximum`
// or the limit the peer advertises in its hello reply, whichever is lower.
struct ConnectionTestResult {
  std::uint32_t accepted = 0;    // connections held open at once
  std::uint32_t tried = 0;       // min(maximum, peer_limit)
  std::uint32_t peer_limit = 0;  // the peer's net.max_connections; 0: unknown (no hello)
};
// Raises this process's open-file soft limit to its hard limit, so that a
// connections test (or a peer sized for one) is not capped by the soft
// default (often 1024). Returns the soft limit now in force.
std::uint64_t RaiseOpenFileLimit();

ConnectionTestResult ConnectionTest(const SocketAddress& peer, const Secret& secret, std::uint32_t maximum,
                                    std::chrono::nanoseconds timeout);

}  // namespace hostperf::probes::net
