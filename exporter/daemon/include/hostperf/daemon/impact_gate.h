#pragma once

#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "hostperf/base/clock.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/impact_budget.h"
#include "hostperf/probes/probe_cpu.h"

namespace prometheus {
class Gauge;
class Registry;
}  // namespace prometheus

namespace hostperf::daemon {

struct ImpactGateOptions {
  // Where pressure/cpu and pressure/io (Linux PSI) are read.
  std::filesystem::path proc_root = "/proc";
  // CPU seconds of probe work so far; empty: probes::ProbeCpuSeconds() (the
  // threads running probes, not the whole process: see ProbeCpuScope).
  std::function<double()> process_cpu_seconds;
};

// Why a scheduled run may not start now.
struct ImpactSkip {
  std::string reason;  // "budget_exhausted" or "host_busy"
  std::string message;
};

// The scheduler's side of the impact budget: charges the probes' own CPU
// time to the hourly budget (the threads that run probe work; not scrapes,
// HTTP, password checks or the peer responder, and not the time of
// operator-triggered full runs), refuses scheduled runs
// once the CPU budget is spent or while the host is under pressure, and
// exports hostperf_budget_* and the pressure it saw. Probes spend disk and
// network bytes from budget() themselves.
class ImpactGate {
 public:
  ImpactGate(const Clock& clock, ImpactGateOptions options, prometheus::Registry& registry);
  ImpactGate(const ImpactGate&) = delete;
  ImpactGate& operator=(const ImpactGate&) = delete;

  void ApplyConfig(const config::BudgetConfig& budget);
  // Charges the CPU time used since the last call; with `charge` false (a
  // full run is active) only moves the baseline.
  void Account(bool charge);
  // Before a scheduled run: nullopt to run, else why to skip.
  std::optional<ImpactSkip> Admit();
  probes::ImpactBudget& budget() { return budget_; }

 private:
  std::optional<double> Pressure(const char* resource) const;  // PSI "some avg10", percent
  void Publish();

  ImpactGateOptions options_;
  probes::ImpactBudget budget_;
  std::mutex mu_;
  config::BudgetConfig config_;
  std::optional<double> last_cpu_seconds_;

  struct Gauges {
    prometheus::Gauge* limit;
    prometheus::Gauge* used;
  };
  Gauges gauges_[probes::kBudgetResourceCount];
  prometheus::Gauge* cpu_pressure_;
  prometheus::Gauge* io_pressure_;
};

// Parses the "some avg10=" figure of a /proc/pressure file's content.
std::optional<double> ParsePressureSomeAvg10(const std::string& content);

}  // namespace hostperf::daemon
