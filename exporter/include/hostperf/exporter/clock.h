#pragma once

#include <chrono>

namespace hostperf::exporter {

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

}  // namespace hostperf::exporter
