#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::cpu {

// What the kernel shows of one core's power state (cpufreq, thermal_throttle).
struct CorePower {
  int cpu = 0;
  std::optional<double> frequency_hertz;           // cpufreq/scaling_cur_freq (kHz in sysfs)
  std::optional<std::uint64_t> core_throttles;     // thermal_throttle/core_throttle_count
  std::optional<std::uint64_t> package_throttles;  // thermal_throttle/package_throttle_count (its package's)
  std::optional<std::string> governor;             // cpufreq/scaling_governor
  std::optional<std::string> epp;                  // cpufreq/energy_performance_preference
};

// One cpuidle state (by name) across the CPUs read.
struct IdleState {
  std::string name;                       // "C6", "POLL"
  std::size_t enabled_cores = 0;          // CPUs where stateM/disable is 0
  std::optional<double> latency_seconds;  // the largest stateM/latency (µs in sysfs)
};

// The host-level power facts that explain low-load throttling, from the
// injected sys root; absent parts stay empty (VMs have no cpufreq, cpuidle
// states or thermal_throttle).
struct PowerFacts {
  std::vector<CorePower> cores;   // one per CPU asked for, in that order
  bool cpufreq = false;           // some CPU has cpufreq/
  bool thermal_throttle = false;  // some CPU has thermal_throttle/
  bool cpuidle = false;           // some CPU has cpuidle/state*/
  bool pstate = false;            // intel_pstate/status or amd_pstate/status
  // The reference CPU's (the first one asked for): cpufreq driver, governor, EPP.
  std::string driver;
  std::string governor;
  std::string energy_performance_preference;
  std::string pstate_status;  // "active", "passive", "guided", "off"; "" without a pstate driver
  // CPUs whose governor or EPP differs from the reference CPU's.
  std::size_t governor_differs = 0;
  std::size_t epp_differs = 0;
  std::vector<IdleState> idle_states;  // by name, ascending
};

// Reads <sys>/devices/system/cpu/{cpuN/cpufreq,cpuN/thermal_throttle,
// cpuN/cpuidle,intel_pstate,amd_pstate} for `cpus`: a few small files per CPU.
PowerFacts ReadPowerFacts(const SystemRoots& roots, const std::vector<int>& cpus);

}  // namespace hostperf::probes::cpu
