#pragma once

// What the peer responder keeps per source address: token buckets that
// bound what one source can cause (its replies, its connections, its junk
// counted by reason). Each table is bounded; no source is ever blocked.
// Internal to the net probe.

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

}  // namespace hostperf::probes::net
