#include "hostperf/daemon/collectors.h"

namespace hostperf::daemon {

HostFactsCollector::HostFactsCollector(probes::SystemRoots roots, std::chrono::nanoseconds refresh)
    : roots_(std::move(roots)), refresh_(refresh) {}

std::vector<prometheus::MetricFamily> HostFactsCollector::Collect() const {
  probes::HostFacts facts;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!facts_ || now - read_at_ >= refresh_) {
      facts_ = probes::ReadHostFacts(roots_);
      read_at_ = now;
    }
    facts = *facts_;
  }
  std::vector<prometheus::MetricFamily> families;
  families.push_back(GaugeFamily("hostperf_host_info", "Host facts as labels; value is always 1.", 1,
                                 {{"cpu_model", facts.cpu_model}, {"governor", facts.governor}}));
  families.push_back(GaugeFamily("hostperf_host_logical_cpus", "Online logical CPUs.", facts.topology.logical_cpus));
  families.push_back(GaugeFamily("hostperf_host_physical_cores",
                                 "Physical cores (hyper-threads count once); per-core disk thresholds divide by this.",
                                 facts.topology.physical_cores));
  families.push_back(GaugeFamily("hostperf_host_cpu_packages", "CPU packages (sockets).", facts.topology.packages));
  families.push_back(GaugeFamily("hostperf_host_llc_bytes", "Size of the last-level cache (0: unknown).",
                                 static_cast<double>(facts.llc_bytes)));
  if (facts.core_throttle_count) {
    families.push_back(CounterFamily("hostperf_host_cpu_core_throttles_total",
                                     "Thermal throttling events of all cores since boot (thermal_throttle).",
                                     static_cast<double>(*facts.core_throttle_count)));
  }
  if (facts.package_throttle_count) {
    families.push_back(CounterFamily("hostperf_host_cpu_package_throttles_total",
                                     "Thermal throttling events of all packages since boot (thermal_throttle).",
                                     static_cast<double>(*facts.package_throttle_count)));
  }
  // Steal moves every second: read it fresh, it is one small file.
  if (const auto times = probes::ReadCpuTimes(roots_)) {
    families.push_back(CounterFamily("hostperf_host_cpu_steal_seconds_total",
                                     "CPU time stolen by the hypervisor, all CPUs (/proc/stat).", times->steal));
  }
  return families;
}

}  // namespace hostperf::daemon
