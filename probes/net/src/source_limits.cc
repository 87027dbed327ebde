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

}  // namespace hostperf::probes::net
