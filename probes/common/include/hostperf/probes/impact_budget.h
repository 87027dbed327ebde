#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "hostperf/config/config.h"

namespace hostperf::probes {

enum class BudgetResource { kCpuSeconds, kDiskBytes, kNetBytes };
inline constexpr std::size_t kBudgetResourceCount = 3;
std::string_view ToString(BudgetResource resource);  // "cpu_seconds", "disk_bytes", "net_bytes"

// The sidecar's impact budget: what scheduled runs spent over the last hour,
// per resource, against its limit (budget.*_per_hour). The scheduler charges
// the CPU time it measures; probes spend bytes before they write or send
// them. Full runs, triggered by an operator, are not charged. Thread-safe;
// time comes from the injected clock.
class ImpactBudget {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;
  static constexpr std::chrono::hours kWindow{1};

  explicit ImpactBudget(Now now);

  void SetLimit(BudgetResource resource, double per_hour);
  void SetLimits(const config::BudgetConfig& budget);
  double Limit(BudgetResource resource) const;
  // Spent within the last hour.
  double Used(BudgetResource resource) const;
  bool Exhausted(BudgetResource resource) const { return Used(resource) >= Limit(resource); }

  // Spends `amount` if it fits in what is left of the hour; otherwise spends
  // nothing and says why (the caller skips with reason "budget_exhausted").
  std::optional<std::string> TrySpend(BudgetResource resource, double amount);
  // Records what was spent already (measured after the fact).
  void Charge(BudgetResource resource, double amount);
  // Returns part of a TrySpend that was not used (a burst cut short).
  void Refund(BudgetResource resource, double amount) { Charge(resource, -amount); }

 private:
  struct Ledger {
    double limit = 0;
    std::deque<std::pair<std::chrono::steady_clock::time_point, double>> spent;
  };
  double UsedLocked(Ledger& ledger, std::chrono::steady_clock::time_point now) const;

  Now now_;
  mutable std::mutex mu_;
  mutable std::array<Ledger, kBudgetResourceCount> ledgers_;
};

// A one-line description of `amount` of `resource` ("12.5 s", "64.0 MiB").
std::string FormatBudgetAmount(BudgetResource resource, double amount);

}  // namespace hostperf::probes
