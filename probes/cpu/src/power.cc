#include "hostperf/probes/cpu/power.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <system_error>

namespace hostperf::probes::cpu {

namespace {

namespace fs = std::filesystem;

// No sysfs attribute read here is longer; a bound keeps an odd file harmless.
constexpr std::size_t kMaxAttributeBytes = 4096;
// cpuidle states per CPU (the kernel's CPUIDLE_STATE_MAX is 10).
constexpr int kMaxIdleStates = 16;

std::optional<std::string> ReadAttribute(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(kMaxAttributeBytes, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return std::nullopt;
  text.resize(static_cast<std::size_t>(in.gcount()));
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.back())) text.pop_back();
  text.erase(text.begin(), std::find_if_not(text.begin(), text.end(), is_space));
  return text;
}

template <typename T>
std::optional<T> ReadNumber(const fs::path& path) {
  const auto text = ReadAttribute(path);
  if (!text || text->empty()) return std::nullopt;
  T value{};
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

bool Exists(const fs::path& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

PowerFacts ReadPowerFacts(const SystemRoots& roots, const std::vector<int>& cpus) {
  PowerFacts facts;
  const fs::path cpu_root = roots.sys / "devices/system/cpu";
  for (const char* driver : {"intel_pstate", "amd_pstate"}) {
    if (const auto status = ReadAttribute(cpu_root / driver / "status")) {
      facts.pstate = true;
      facts.pstate_status = *status;
      break;
    }
  }

  std::map<std::string, IdleState> idle;
  for (const int cpu : cpus) {
    const fs::path dir = cpu_root / ("cpu" + std::to_string(cpu));
    CorePower core;
    core.cpu = cpu;
    const fs::path cpufreq = dir / "cpufreq";
    if (Exists(cpufreq)) facts.cpufreq = true;
    if (const auto khz = ReadNumber<std::uint64_t>(cpufreq / "scaling_cur_freq")) {
      core.frequency_hertz = static_cast<double>(*khz) * 1e3;
    }
    core.governor = ReadAttribute(cpufreq / "scaling_governor");
    core.epp = ReadAttribute(cpufreq / "energy_performance_preference");
    if (facts.cores.empty()) {
      facts.driver = ReadAttribute(cpufreq / "scaling_driver").value_or("");
      facts.governor = core.governor.value_or("");
      facts.energy_performance_preference = core.epp.value_or("");
    } else {
      if (core.governor && *core.governor != facts.governor) ++facts.governor_differs;
      if (core.epp && *core.epp != facts.energy_performance_preference) ++facts.epp_differs;
    }

    const fs::path thermal = dir / "thermal_throttle";
    core.core_throttles = ReadNumber<std::uint64_t>(thermal / "core_throttle_count");
    core.package_throttles = ReadNumber<std::uint64_t>(thermal / "package_throttle_count");
    if (core.core_throttles || core.package_throttles) facts.thermal_throttle = true;

    for (int state = 0; state < kMaxIdleStates; ++state) {
      const fs::path state_dir = dir / "cpuidle" / ("state" + std::to_string(state));
      const auto name = ReadAttribute(state_dir / "name");
      if (!name) break;
      if (name->empty()) continue;
      facts.cpuidle = true;
      IdleState& entry = idle[*name];
      entry.name = *name;
      if (ReadNumber<int>(state_dir / "disable").value_or(0) == 0) ++entry.enabled_cores;
      if (const auto us = ReadNumber<std::uint64_t>(state_dir / "latency")) {
        const double seconds = static_cast<double>(*us) * 1e-6;
        entry.latency_seconds = std::max(entry.latency_seconds.value_or(0), seconds);
      }
    }
    facts.cores.push_back(std::move(core));
  }
  for (auto& [name, state] : idle) facts.idle_states.push_back(std::move(state));
  return facts;
}

}  // namespace hostperf::probes::cpu
