#include "hostperf/daemon/impact_gate.h"

#include <fmt/format.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <sstream>

#include "hostperf/base/files.h"

namespace hostperf::daemon {
namespace {

using probes::BudgetResource;

prometheus::Gauge* NewGauge(prometheus::Registry& registry, const std::string& name, const std::string& help,
                            const prometheus::Labels& labels = {}) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(registry).Add(labels);
}

}  // namespace

std::optional<double> ParsePressureSomeAvg10(const std::string& content) {
  std::istringstream in(content);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("some ", 0) != 0) continue;
    const auto at = line.find("avg10=");
    if (at == std::string::npos) return std::nullopt;
    try {
      std::size_t used = 0;
      const double value = std::stod(line.substr(at + 6), &used);
      if (used == 0 || value < 0 || value > 100) return std::nullopt;
      return value;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

ImpactGate::ImpactGate(const Clock& clock, ImpactGateOptions options, prometheus::Registry& registry)
    : options_(std::move(options)), budget_([&clock] { return clock.Now(); }) {
  if (!options_.process_cpu_seconds) options_.process_cpu_seconds = probes::ProbeCpuSeconds;
  gauges_[static_cast<std::size_t>(BudgetResource::kCpuSeconds)] = {
      NewGauge(registry, "hostperf_budget_cpu_limit_seconds", "CPU time the sidecar may use per hour (budget)."),
      NewGauge(registry, "hostperf_budget_cpu_used_seconds",
               "CPU time scheduled probe runs used in the last hour (their threads' CPU time; scrapes, HTTP "
               "and the peer responder are not charged), full runs excluded.")};
  gauges_[static_cast<std::size_t>(BudgetResource::kDiskBytes)] = {
      NewGauge(registry, "hostperf_budget_disk_limit_bytes", "Bytes scheduled probes may write per hour (budget)."),
      NewGauge(registry, "hostperf_budget_disk_used_bytes", "Bytes scheduled probes wrote in the last hour.")};
  gauges_[static_cast<std::size_t>(BudgetResource::kNetBytes)] = {
      NewGauge(registry, "hostperf_budget_net_limit_bytes", "Bytes scheduled probes may send per hour (budget)."),
      NewGauge(registry, "hostperf_budget_net_used_bytes", "Bytes scheduled probes sent in the last hour.")};
  auto& pressure = prometheus::BuildGauge()
                       .Name("hostperf_host_pressure_ratio")
                       .Help(
                           "Share of the last 10 s some task waited for the resource (Linux PSI some avg10, 0-1), "
                           "as the busy gate last read it.")
                       .Register(registry);
  cpu_pressure_ = &pressure.Add({{"resource", "cpu"}});
  io_pressure_ = &pressure.Add({{"resource", "io"}});
}

void ImpactGate::ApplyConfig(const config::BudgetConfig& budget) {
  {
    std::lock_guard lock(mu_);
    config_ = budget;
  }
  budget_.SetLimits(budget);
  Publish();
}

void ImpactGate::Account(bool charge) {
  {
    std::lock_guard lock(mu_);
    const double now = options_.process_cpu_seconds();
    if (last_cpu_seconds_ && charge && now > *last_cpu_seconds_) {
      budget_.Charge(BudgetResource::kCpuSeconds, now - *last_cpu_seconds_);
    }
    last_cpu_seconds_ = now;
  }
  Publish();
}

std::optional<double> ImpactGate::Pressure(const char* resource) const {
  const auto content = ReadFile(options_.proc_root / "pressure" / resource);
  if (!content) return std::nullopt;  // a kernel without PSI: the gate stays open
  return ParsePressureSomeAvg10(*content);
}

std::optional<ImpactSkip> ImpactGate::Admit() {
  config::BudgetConfig config;
  {
    std::lock_guard lock(mu_);
    config = config_;
  }
  if (budget_.Exhausted(BudgetResource::kCpuSeconds)) {
    return ImpactSkip{
        "budget_exhausted",
        fmt::format("scheduled probe runs used {:.1f} s of CPU in the last hour, the budget is {:.1f} s",
                    budget_.Used(BudgetResource::kCpuSeconds), budget_.Limit(BudgetResource::kCpuSeconds))};
  }
  const struct {
    const char* resource;
    double limit;
    prometheus::Gauge* gauge;
  } gates[] = {{"cpu", config.busy_cpu_pressure, cpu_pressure_}, {"io", config.busy_io_pressure, io_pressure_}};
  for (const auto& gate : gates) {
    const auto pressure = Pressure(gate.resource);
    if (pressure) gate.gauge->Set(*pressure / 100);
    if (gate.limit > 0 && pressure && *pressure > gate.limit) {
      return ImpactSkip{"host_busy", fmt::format("{} pressure {:.1f}% is above budget.busy_{}_pressure = {}%",
                                                 gate.resource, *pressure, gate.resource, gate.limit)};
    }
  }
  return std::nullopt;
}

void ImpactGate::Publish() {
  for (std::size_t i = 0; i < probes::kBudgetResourceCount; ++i) {
    const auto resource = static_cast<BudgetResource>(i);
    gauges_[i].limit->Set(budget_.Limit(resource));
    gauges_[i].used->Set(budget_.Used(resource));
  }
}

}  // namespace hostperf::daemon
