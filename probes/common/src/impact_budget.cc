#include "hostperf/probes/impact_budget.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <atomic>

#include "hostperf/probes/probe.h"
#include "hostperf/probes/probe_cpu.h"

namespace hostperf::probes {

std::string_view ToString(BudgetResource resource) {
  switch (resource) {
    case BudgetResource::kCpuSeconds:
      return "cpu_seconds";
    case BudgetResource::kDiskBytes:
      return "disk_bytes";
    case BudgetResource::kNetBytes:
      return "net_bytes";
  }
  return "unknown";
}

std::string FormatBudgetAmount(BudgetResource resource, double amount) {
  if (resource == BudgetResource::kCpuSeconds) return fmt::format("{:.1f} s", amount);
  return fmt::format("{:.1f} MiB", amount / (1024.0 * 1024.0));
}

ImpactBudget::ImpactBudget(Now now) : now_(std::move(now)) {}

void ImpactBudget::SetLimit(BudgetResource resource, double per_hour) {
  std::lock_guard lock(mu_);
  ledgers_[static_cast<std::size_t>(resource)].limit = per_hour;
}

void ImpactBudget::SetLimits(const config::BudgetConfig& budget) {
  SetLimit(BudgetResource::kCpuSeconds, budget.cpu_seconds_per_hour);
  SetLimit(BudgetResource::kDiskBytes, static_cast<double>(budget.disk_bytes_per_hour));
  SetLimit(BudgetResource::kNetBytes, static_cast<double>(budget.net_bytes_per_hour));
}

double ImpactBudget::Limit(BudgetResource resource) const {
  std::lock_guard lock(mu_);
  return ledgers_[static_cast<std::size_t>(resource)].limit;
}

double ImpactBudget::UsedLocked(Ledger& ledger, std::chrono::steady_clock::time_point now) const {
  while (!ledger.spent.empty() && now - ledger.spent.front().first >= kWindow) ledger.spent.pop_front();
  double used = 0;
  for (const auto& [when, amount] : ledger.spent) used += amount;
  return std::max(0.0, used);
}

double ImpactBudget::Used(BudgetResource resource) const {
  std::lock_guard lock(mu_);
  return UsedLocked(ledgers_[static_cast<std::size_t>(resource)], now_());
}

std::optional<std::string> ImpactBudget::TrySpend(BudgetResource resource, double amount) {
  std::lock_guard lock(mu_);
  Ledger& ledger = ledgers_[static_cast<std::size_t>(resource)];
  const auto now = now_();
  const double used = UsedLocked(ledger, now);
  if (used + amount > ledger.limit) {
    return fmt::format("{} would exceed the {} budget of {} per hour ({} used in the last hour)",
                       FormatBudgetAmount(resource, amount), ToString(resource),
                       FormatBudgetAmount(resource, ledger.limit), FormatBudgetAmount(resource, used));
  }
  ledger.spent.emplace_back(now, amount);
  return std::nullopt;
}

void ImpactBudget::Charge(BudgetResource resource, double amount) {
  if (amount == 0) return;
  std::lock_guard lock(mu_);
  ledgers_[static_cast<std::size_t>(resource)].spent.emplace_back(now_(), amount);
}

namespace {

std::atomic<std::int64_t> probe_cpu_ns{0};
thread_local int scope_depth = 0;

std::int64_t ThreadCpuNs() {
  timespec ts{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

ProbeCpuScope::ProbeCpuScope() {
  if (scope_depth++ == 0) start_ns_ = ThreadCpuNs();
}

ProbeCpuScope::~ProbeCpuScope() {
  --scope_depth;
  if (start_ns_ < 0) return;
  const std::int64_t used = ThreadCpuNs() - start_ns_;
  if (used > 0) probe_cpu_ns.fetch_add(used, std::memory_order_relaxed);
}

double ProbeCpuSeconds() { return static_cast<double>(probe_cpu_ns.load(std::memory_order_relaxed)) / 1e9; }

}  // namespace hostperf::probes
