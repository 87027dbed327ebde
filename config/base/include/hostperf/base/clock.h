#pragma once

#include <time.h>

#include <chrono>
#include <ctime>
#include <string>

namespace hostperf {

// Time seam: the scheduler and the framework metrics read time only here, so
// tests drive them with a fake clock.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual std::chrono::steady_clock::time_point Now() const = 0;
  // Wall-clock seconds since the epoch, for *_timestamp_seconds metrics.
  virtual double UnixSeconds() const = 0;
};

class RealClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point Now() const override { return std::chrono::steady_clock::now(); }
  double UnixSeconds() const override {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
};

// Unix seconds as UTC text in a strftime format (e.g. "%Y%m%d-%H%M%S").
inline std::string FormatUtc(double unix_seconds, const char* format) {
  const time_t t = static_cast<time_t>(unix_seconds);
  tm utc{};
  gmtime_r(&t, &utc);
  char buffer[64];
  return std::string(buffer, std::strftime(buffer, sizeof(buffer), format, &utc));
}

}  // namespace hostperf
