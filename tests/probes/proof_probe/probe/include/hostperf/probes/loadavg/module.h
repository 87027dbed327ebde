#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/probe.h"

namespace hostperf::probes::loadavg {

// [probes.loadavg]
struct LoadavgConfig : config::ProbeSection {
  static constexpr std::string_view kName = "loadavg";
  bool pressure = true;  // also read <proc>/pressure/{cpu,io,memory} where the kernel has PSI
};

// One reading of the kernel's load figures.
struct LoadSample {
  double load1 = 0;
  double load5 = 0;
  double load15 = 0;
  int runnable = 0;  // tasks runnable now
  int tasks = 0;     // all tasks
  int cpus = 0;      // online CPUs: the cpuN lines of <proc>/stat
  // PSI "some avg10" of each resource whose file exists, as a ratio (0-1).
  std::map<std::string, double> pressure;

  double Load1PerCpu() const { return cpus > 0 ? load1 / cpus : 0; }
  nlohmann::json ToJson() const;
};

// Reads <proc>/loadavg and <proc>/stat, and <proc>/pressure/* when asked;
// fails with reason proc_unreadable when the first two cannot be read or
// parsed.
Result<LoadSample> ReadLoadSample(const std::filesystem::path& proc, bool pressure);

// A probe reading under deps.roots.proc.
std::unique_ptr<Probe> CreateLoadavgProbe(const ProbeDeps& deps);

// The headline figure of a result: the 1-minute load per online CPU (pass up
// to 1, warn up to 2).
std::vector<Figure> LoadavgFigures(const nlohmann::json& result);

// The load average probe's module (registered from its folder:
// probes/CMakeLists.txt).
extern const ProbeModule kModule;

}  // namespace hostperf::probes::loadavg
