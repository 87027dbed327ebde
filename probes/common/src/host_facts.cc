#include "hostperf/probes/host_facts.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "hostperf/base/files.h"

namespace hostperf::probes {

namespace {

namespace fs = std::filesystem;

// Kernel's NR_CPUS tops out at 8192; anything far beyond is a malformed list.
constexpr int kMaxCpuId = 1 << 16;

std::string_view Trim(std::string_view text) {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// The whole of `text` (after trimming) as a number.
template <typename T>
std::optional<T> ParseNumber(std::string_view text) {
  text = Trim(text);
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

std::optional<std::string> ReadTrimmed(const fs::path& path) {
  auto text = ReadFile(path);
  if (!text) return std::nullopt;
  return std::string(Trim(*text));
}

template <typename T>
std::optional<T> ReadNumber(const fs::path& path) {
  const auto text = ReadFile(path);
  return text ? ParseNumber<T>(*text) : std::nullopt;
}

fs::path CpuRoot(const SystemRoots& roots) { return roots.sys / "devices/system/cpu"; }
fs::path CpuDir(const SystemRoots& roots, int cpu) { return CpuRoot(roots) / ("cpu" + std::to_string(cpu)); }

// The online list, else every cpuN directory (old kernels, odd containers).
std::vector<int> OnlineCpus(const SystemRoots& roots) {
  if (const auto text = ReadFile(CpuRoot(roots) / "online")) {
    if (auto cpus = ParseCpuList(*text); cpus.ok() && !cpus->empty()) return cpus.value();
  }
  std::vector<int> cpus;
  std::error_code ec;
  for (fs::directory_iterator it(CpuRoot(roots), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("cpu")) {
      if (const auto id = ParseNumber<int>(std::string_view(name).substr(3))) cpus.push_back(*id);
    }
  }
  std::sort(cpus.begin(), cpus.end());
  return cpus;
}

// /proc/cpuinfo as blocks of "key : value" lines separated by blank lines.
using CpuinfoBlock = std::map<std::string, std::string, std::less<>>;

std::vector<CpuinfoBlock> ParseCpuinfo(std::string_view text) {
  std::vector<CpuinfoBlock> blocks(1);
  while (!text.empty()) {
    const std::size_t eol = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    const std::size_t colon = line.find(':');
    if (Trim(line).empty()) {
      if (!blocks.back().empty()) blocks.emplace_back();
    } else if (colon != std::string_view::npos) {
      blocks.back().emplace(std::string(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1))));
    }
  }
  return blocks;
}

std::optional<std::string> Field(const CpuinfoBlock& block, std::string_view key) {
  const auto it = block.find(key);
  if (it == block.end()) return std::nullopt;
  return it->second;
}

// A physical core's identity: (package, core) ids.
using CoreKey = std::pair<long, long>;

// Each CPU's core from sysfs topology, in the order of `cpus`; nullopt when
// any CPU lacks it.
std::optional<std::vector<CoreKey>> SysfsCoreKeys(const SystemRoots& roots, const std::vector<int>& cpus) {
  std::vector<CoreKey> keys;
  for (const int cpu : cpus) {
    const fs::path topology = CpuDir(roots, cpu) / "topology";
    // physical_package_id is -1 on some virtual machines: still an identity.
    const auto package = ReadNumber<long>(topology / "physical_package_id");
    const auto core = ReadNumber<long>(topology / "core_id");
    if (!package || !core) return std::nullopt;
    keys.emplace_back(*package, *core);
  }
  return keys;
}

std::optional<CpuTopology> TopologyFromSysfs(const SystemRoots& roots, const std::vector<int>& cpus) {
  const auto keys = SysfsCoreKeys(roots, cpus);
  if (!keys) return std::nullopt;
  std::set<CoreKey> cores;
  std::set<long> packages;
  for (const CoreKey& key : *keys) {
    cores.insert(key);
    packages.insert(key.first);
  }
  if (cores.empty()) return std::nullopt;
  return CpuTopology{static_cast<int>(cpus.size()), static_cast<int>(cores.size()), static_cast<int>(packages.size())};
}

std::optional<CpuTopology> TopologyFromCpuinfo(const SystemRoots& roots) {
  const auto text = ReadFile(roots.proc / "cpuinfo");
  if (!text) return std::nullopt;
  CpuTopology topology;
  std::set<std::pair<std::string, std::string>> cores;
  std::set<std::string> packages;
  for (const CpuinfoBlock& block : ParseCpuinfo(*text)) {
    if (!block.contains("processor")) continue;
    ++topology.logical_cpus;
    const auto package = Field(block, "physical id");
    const auto core = Field(block, "core id");
    if (package && core) {
      cores.emplace(*package, *core);
      packages.insert(*package);
    }
  }
  if (topology.logical_cpus == 0) return std::nullopt;
  // Architectures without "physical id" (most ARM): count every CPU as a core.
  topology.physical_cores = cores.empty() ? topology.logical_cpus : static_cast<int>(cores.size());
  topology.packages = packages.empty() ? 1 : static_cast<int>(packages.size());
  return topology;
}

std::string ReadCpuModel(const SystemRoots& roots) {
  const auto text = ReadFile(roots.proc / "cpuinfo");
  if (!text) return "unknown";
  const auto blocks = ParseCpuinfo(*text);
  // x86 "model name"; 32-bit ARM "Processor"; MIPS "cpu model"; POWER "cpu".
  for (const std::string_view key : {"model name", "Processor", "cpu model", "cpu"}) {
    for (const CpuinfoBlock& block : blocks) {
      if (auto value = Field(block, key); value && !value->empty()) return *value;
    }
  }
  return "unknown";
}

// Sums a per-CPU thermal_throttle counter; `per_package` counts each package
// once (the kernel repeats the package counter in every CPU of it).
std::optional<std::uint64_t> SumThrottleCount(const SystemRoots& roots, const std::vector<int>& cpus, const char* file,
                                              bool per_package) {
  std::optional<std::uint64_t> total;
  std::set<long> seen_packages;
  for (const int cpu : cpus) {
    const fs::path dir = CpuDir(roots, cpu);
    const auto count = ReadNumber<std::uint64_t>(dir / "thermal_throttle" / file);
    if (!count) continue;
    if (per_package) {
      // Without a package id, the CPU stands for its own package (a key no real id can take).
      const long package = ReadNumber<long>(dir / "topology/physical_package_id").value_or(-1000L - cpu);
      if (!seen_packages.insert(package).second) continue;
    }
    total = total.value_or(0) + *count;
  }
  return total;
}

long TicksPerSecond() {
  const long hz = ::sysconf(_SC_CLK_TCK);
  return hz > 0 ? hz : 100;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  using R = Result<std::vector<int>>;
  std::vector<int> cpus;
  text = Trim(text);
  if (text.empty()) return cpus;  // e.g. an empty "offline" file
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    const std::size_t dash = item.find('-');
    const auto first = ParseNumber<int>(item.substr(0, dash));
    const auto last = dash == std::string_view::npos ? first : ParseNumber<int>(item.substr(dash + 1));
    if (!first || !last || *first < 0 || *last < *first || *last > kMaxCpuId) {
      return R::Error("malformed CPU list item '" + std::string(item) + "'");
    }
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.push_back(cpu);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

CpuTopology ReadCpuTopology(const SystemRoots& roots) {
  const std::vector<int> online = OnlineCpus(roots);
  if (auto topology = TopologyFromSysfs(roots, online)) return *topology;
  if (auto topology = TopologyFromCpuinfo(roots)) {
    // cpuinfo lists online CPUs too, but sysfs' count is the authority when present.
    if (!online.empty()) topology->logical_cpus = static_cast<int>(online.size());
    topology->physical_cores = std::min(topology->physical_cores, topology->logical_cpus);
    return *topology;
  }
  const int cpus = online.empty() ? static_cast<int>(std::max(1U, std::thread::hardware_concurrency()))
                                  : static_cast<int>(online.size());
  return CpuTopology{cpus, cpus, 1};
}

Result<std::uint64_t> ParseCacheSize(std::string_view text) {
  using R = Result<std::uint64_t>;
  text = Trim(text);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) {
    return R::Error("malformed cache size '" + std::string(text) + "'");
  }
  std::string unit(Trim(std::string_view(end, text.data() + text.size() - end)));
  std::transform(unit.begin(), unit.end(), unit.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  static const std::map<std::string, std::uint64_t, std::less<>> kUnits = {
      {"", 1},
      {"B", 1},
      {"K", 1ULL << 10},
      {"KB", 1ULL << 10},
      {"KIB", 1ULL << 10},
      {"M", 1ULL << 20},
      {"MB", 1ULL << 20},
      {"MIB", 1ULL << 20},
      {"G", 1ULL << 30},
      {"GB", 1ULL << 30},
      {"GIB", 1ULL << 30},
  };
  const auto it = kUnits.find(unit);
  if (it == kUnits.end()) return R::Error("unknown cache size unit in '" + std::string(text) + "'");
  if (value > std::numeric_limits<std::uint64_t>::max() / it->second) {
    return R::Error("cache size '" + std::string(text) + "' out of range");
  }
  return value * it->second;
}

namespace {

std::uint64_t LastLevelCacheFromSysfs(const SystemRoots& roots) {
  int best_level = 0;
  std::uint64_t best_bytes = 0;
  std::error_code ec;
  for (fs::directory_iterator it(CpuDir(roots, 0) / "cache", ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->path().filename().string().starts_with("index")) continue;
    const auto level = ReadNumber<int>(it->path() / "level");
    const auto type = ReadTrimmed(it->path() / "type");
    const auto size_text = ReadFile(it->path() / "size");
    if (!level || !type || !size_text || (*type != "Unified" && *type != "Data")) continue;
    const auto bytes = ParseCacheSize(*size_text);
    if (!bytes.ok()) continue;
    if (*level > best_level || (*level == best_level && *bytes > best_bytes)) {
      best_level = *level;
      best_bytes = *bytes;
    }
  }
  return best_bytes;
}

// "cache size : 20480 KB" of the first CPU that has one, on vendors where it
// is the last level.
std::uint64_t LastLevelCacheFromCpuinfo(const SystemRoots& roots) {
  const auto text = ReadFile(roots.proc / "cpuinfo");
  if (!text) return 0;
  for (const CpuinfoBlock& block : ParseCpuinfo(*text)) {
    const auto vendor = Field(block, "vendor_id");
    if (vendor && (*vendor == "AuthenticAMD" || *vendor == "HygonGenuine")) return 0;  // per-core L2
    if (const auto size = Field(block, "cache size")) {
      const auto bytes = ParseCacheSize(*size);
      return bytes.ok() ? *bytes : 0;
    }
  }
  return 0;
}

// (processor, core) of each /proc/cpuinfo block that has both ids.
std::vector<std::pair<int, CoreKey>> CpuinfoCoreKeys(const SystemRoots& roots) {
  std::vector<std::pair<int, CoreKey>> keys;
  const auto text = ReadFile(roots.proc / "cpuinfo");
  if (!text) return keys;
  for (const CpuinfoBlock& block : ParseCpuinfo(*text)) {
    const auto processor = Field(block, "processor");
    const auto package = Field(block, "physical id");
    const auto core = Field(block, "core id");
    if (!processor || !package || !core) continue;
    const auto cpu = ParseNumber<int>(*processor);
    const auto package_id = ParseNumber<long>(*package);
    const auto core_id = ParseNumber<long>(*core);
    if (cpu && package_id && core_id) keys.push_back({*cpu, {*package_id, *core_id}});
  }
  return keys;
}

// The lowest CPU of each core, ascending.
std::vector<int> FirstCpuOfEachCore(std::vector<std::pair<int, CoreKey>> cpu_cores) {
  std::sort(cpu_cores.begin(), cpu_cores.end());
  std::set<CoreKey> seen;
  std::vector<int> cpus;
  for (const auto& [cpu, core] : cpu_cores) {
    if (seen.insert(core).second) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace

std::uint64_t ReadLastLevelCacheBytes(const SystemRoots& roots) {
  if (const std::uint64_t bytes = LastLevelCacheFromSysfs(roots); bytes > 0) return bytes;
  return LastLevelCacheFromCpuinfo(roots);
}

std::vector<int> OneCpuPerPhysicalCore(const SystemRoots& roots) {
  const std::vector<int> online = OnlineCpus(roots);
  if (const auto keys = SysfsCoreKeys(roots, online); keys && !online.empty()) {
    std::vector<std::pair<int, CoreKey>> cpu_cores;
    for (std::size_t i = 0; i < online.size(); ++i) cpu_cores.push_back({online[i], (*keys)[i]});
    return FirstCpuOfEachCore(std::move(cpu_cores));
  }
  auto cpu_cores = CpuinfoCoreKeys(roots);
  if (!online.empty()) {
    // Only CPUs that are online count when sysfs says which those are.
    std::erase_if(cpu_cores,
                  [&](const auto& entry) { return !std::binary_search(online.begin(), online.end(), entry.first); });
  }
  if (!cpu_cores.empty()) return FirstCpuOfEachCore(std::move(cpu_cores));
  if (!online.empty()) return online;
  std::vector<int> cpus(static_cast<std::size_t>(ReadCpuTopology(roots).logical_cpus));
  for (std::size_t i = 0; i < cpus.size(); ++i) cpus[i] = static_cast<int>(i);
  return cpus;
}

namespace {

// One "<field>:   <n> kB" line of <proc>/meminfo, in bytes.
std::optional<std::uint64_t> ReadMeminfoBytes(const SystemRoots& roots, std::string_view field) {
  const auto text = ReadFile(roots.proc / "meminfo");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(field) || line.size() <= field.size() || line[field.size()] != ':') continue;
    std::istringstream fields(line.substr(field.size() + 1));
    std::string number;
    std::string unit;
    fields >> number >> unit;
    const auto kib = ParseNumber<std::uint64_t>(number);
    if (!kib || unit != "kB" || *kib > std::numeric_limits<std::uint64_t>::max() / 1024) return std::nullopt;
    return *kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> ReadMemAvailableBytes(const SystemRoots& roots) {
  return ReadMeminfoBytes(roots, "MemAvailable");
}

std::optional<std::uint64_t> ReadMemTotalBytes(const SystemRoots& roots) { return ReadMeminfoBytes(roots, "MemTotal"); }

Result<CpuTimes> ParseProcStat(std::string_view proc_stat_text) {
  using R = Result<CpuTimes>;
  while (!proc_stat_text.empty()) {
    const std::size_t eol = std::min(proc_stat_text.find('\n'), proc_stat_text.size());
    const std::string_view line = proc_stat_text.substr(0, eol);
    proc_stat_text.remove_prefix(std::min(eol + 1, proc_stat_text.size()));
    if (!line.starts_with("cpu ")) continue;

    std::vector<std::uint64_t> ticks;
    std::istringstream fields{std::string(line.substr(4))};
    for (std::string field; fields >> field && ticks.size() < 8;) {
      const auto value = ParseNumber<std::uint64_t>(field);
      if (!value) return R::Error("malformed /proc/stat cpu field '" + field + "'");
      ticks.push_back(*value);
    }
    // Kernels before 2.6.11 lack steal (and older ones iowait/irq/softirq).
    if (ticks.size() < 4) return R::Error("/proc/stat cpu line has too few fields");
    ticks.resize(8, 0);
    const double hz = static_cast<double>(TicksPerSecond());
    CpuTimes times;
    double* const targets[] = {&times.user,   &times.nice, &times.system,  &times.idle,
                               &times.iowait, &times.irq,  &times.softirq, &times.steal};
    for (std::size_t i = 0; i < 8; ++i) *targets[i] = static_cast<double>(ticks[i]) / hz;
    return times;
  }
  return R::Error("no aggregate 'cpu' line in /proc/stat");
}

Result<CpuTimes> ReadCpuTimes(const SystemRoots& roots) {
  const auto text = ReadFile(roots.proc / "stat");
  if (!text) return Result<CpuTimes>::Error("cannot read " + (roots.proc / "stat").string());
  return ParseProcStat(*text);
}

HostFacts ReadHostFacts(const SystemRoots& roots) {
  HostFacts facts;
  facts.cpu_model = ReadCpuModel(roots);
  facts.topology = ReadCpuTopology(roots);
  facts.llc_bytes = ReadLastLevelCacheBytes(roots);
  facts.governor = ReadTrimmed(CpuDir(roots, 0) / "cpufreq/scaling_governor").value_or("");
  const std::vector<int> online = OnlineCpus(roots);
  facts.core_throttle_count = SumThrottleCount(roots, online, "core_throttle_count", false);
  facts.package_throttle_count = SumThrottleCount(roots, online, "package_throttle_count", true);
  if (const auto times = ReadCpuTimes(roots); times.ok()) facts.steal_seconds = times->steal;
  return facts;
}

}  // namespace hostperf::probes
