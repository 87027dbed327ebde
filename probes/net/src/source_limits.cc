#include "source_limits.h"

#include <algorithm>

namespace hostperf::probes::net {

bool SourceRateLimiter::Allow(const std::string& source, Clock::time_point now) {
  const double rate = rate_;
  auto it = buckets_.find(source);
  if (it == buckets_.end()) {
    if (buckets_.size() >= kMaxTrackedSources) {
      // Forget sources whose buckets are full again: they are idle.
      std::erase_if(buckets_, [&](const auto& entry) {
        return entry.second.tokens + std::chrono::duration<double>(now - entry.second.refilled).count() * rate >= rate;
      });
      if (buckets_.size() >= kMaxTrackedSources) return false;
    }
    it = buckets_.emplace(source, Bucket{rate, now}).first;
  }
  Bucket& bucket = it->second;
  bucket.tokens = std::min(rate, bucket.tokens + std::chrono::duration<double>(now - bucket.refilled).count() * rate);
  bucket.refilled = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  return true;
}

bool SourceFailures::Blocked(const std::string& source, Clock::time_point now) const {
  const auto it = table_.find(source);
  return it != table_.end() && now < it->second.blocked_until;
}

void SourceFailures::Record(const std::string& source, Clock::time_point now) {
  auto it = table_.find(source);
  if (it == table_.end()) {
    if (table_.size() >= kMaxTrackedSources) {
      std::erase_if(table_, [&](const auto& entry) {
        return now >= entry.second.blocked_until && now - entry.second.window_start >= kFailureWindow;
      });
      if (table_.size() >= kMaxTrackedSources) return;
    }
    it = table_.emplace(source, Failures{0, now, {}}).first;
  }
  Failures& f = it->second;
  if (now - f.window_start >= kFailureWindow) {
    f.count = 0;
    f.window_start = now;
  }
  if (++f.count >= kMaxFailuresPerSource) {
    f.blocked_until = now + kBlockFor;
    f.count = 0;
    f.window_start = now;
  }
}

}  // namespace hostperf::probes::net
