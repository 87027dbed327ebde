#pragma once

// What the peer responder keeps per source address: a token bucket that
// bounds the requests (and so the HMAC work) one source can cause, and the
// failed messages of TCP sources, which block a source that keeps failing.
// Both tables are bounded. Internal to the net probe.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace hostperf::probes::net {

// At most this many sources are tracked per table; when full, idle entries
// are forgotten first.
inline constexpr std::size_t kMaxTrackedSources = 4096;

// Per-source token bucket: `rate` requests per second, a burst of as many.
class SourceRateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit SourceRateLimiter(std::uint32_t rate) : rate_(rate) {}
  // Takes one token of `source`; false when it has none (or the table is
  // full of sources that are not idle).
  bool Allow(const std::string& source, Clock::time_point now);

 private:
  struct Bucket {
    double tokens = 0;
    Clock::time_point refilled;
  };
  double rate_;
  std::map<std::string, Bucket> buckets_;
};

// Failed messages per TCP source, whose handshake proves the address. A
// datagram's source can be forged, and junk UDP "from" an observer's address
// must not silence that observer's authenticated pings (nor its TCP
// sessions): over UDP every datagram within the per-source rate limit
// (probes.net.rate_limit) is checked, junk is dropped and counted, and the
// rate limit alone bounds the HMAC work a source can cause.
class SourceFailures {
 public:
  using Clock = std::chrono::steady_clock;
  // A source that failed kMaxFailuresPerSource times within kFailureWindow
  // is refused (before any HMAC work) for kBlockFor.
  static constexpr int kMaxFailuresPerSource = 32;
  static constexpr auto kFailureWindow = std::chrono::seconds(10);
  static constexpr auto kBlockFor = std::chrono::seconds(30);

  bool Blocked(const std::string& source, Clock::time_point now) const;
  // A message from `source` failed authentication or parsing.
  void Record(const std::string& source, Clock::time_point now);

 private:
  struct Failures {
    int count = 0;
    Clock::time_point window_start;
    Clock::time_point blocked_until;
  };
  std::map<std::string, Failures> table_;
};

}  // namespace hostperf::probes::net
