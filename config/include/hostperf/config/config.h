#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/schema.h"
#include "hostperf/config/units.h"

namespace hostperf::config {

using namespace std::chrono_literals;

inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

struct ApiConfig {
  std::string token_file;  // empty: run API disabled
  // The longest full run (run API and calendar): a longer "duration" is
  // refused, and a run still going at this age is stopped (scheduled probes
  // and calendar slots wait for a full run to end).
  Duration max_run_duration = std::chrono::hours(4);
};

// Whole-sidecar impact budget (enforced from the budget issue on).
struct BudgetConfig {
  double cpu_seconds_per_hour = 36;
  std::uint64_t disk_bytes_per_hour = 2 * kGiB;
  std::uint64_t net_bytes_per_hour = 2 * kGiB;
  // Busy gate: skip scheduled probes (reason host_busy) while the share of
  // time some task waited for CPU / for I/O over the last 10 s (Linux PSI
  // "some avg10", percent) is above this. 0 disables the gate.
  double busy_cpu_pressure = 0;
  double busy_io_pressure = 0;
};

struct SchedulerConfig {
  // Each probe's first run is placed at a random point in
  // [0, min(first_run_splay, interval)) after start.
  Duration first_run_splay = 30s;
  // Every later run is interval * (1 + u), u uniform in [-jitter, +jitter],
  // so that a fleet started together drifts apart.
  double jitter = 0.1;
};

// [full_runs]: full-strength runs on a calendar (exporter/runs/calendar.h).
// Maintenance windows start at window_anchor + k * every (k an integer, times
// since the Unix epoch, UTC); each host runs at its own splay into the window.
struct FullRunsConfig {
  bool enabled = false;
  Duration every = 7 * 24h;
  // As written: "Sun 02:00" (a weekday, whole weeks) or "02:00" (daily).
  std::string window_start = "Sun 02:00";
  // window_start as a time since the epoch: the first window of the grid
  // (Sun 02:00 -> 1970-01-04 02:00, the first Sunday).
  Duration window_anchor = 3 * 24h + 2h;
  Duration window = 4h;
  std::vector<std::string> probes;  // registered probe names, run in this order
  std::string duration;             // the run API's top-level "duration"; empty: none
  // Probe -> [full_runs.options.<probe>] as JSON text, the run API's
  // "options.<probe>" (parsed by the probe's module when the daemon loads it).
  std::map<std::string, std::string> options_json;
  std::string host;  // hashed into the per-host splay; empty: the hostname
};

// One [probes.<name>] section: the shared schedule keys and the owning
// module's typed settings (never null in a loaded config).
struct ProbeConfig {
  ProbeSchedule schedule;
  std::shared_ptr<const ProbeSection> settings;
};

struct Config {
  std::string state_directory;  // empty: see ResolveStateDirectory
  ApiConfig api;
  BudgetConfig budget;
  SchedulerConfig scheduler;
  FullRunsConfig full_runs;
  // [probes.<name>], one per registered probe module.
  std::map<std::string, ProbeConfig, std::less<>> probes;
  // Where it came from: a path, or "<embedded defaults>".
  std::string source = "<embedded defaults>";

  // The typed settings of the section S describes (S::kName, e.g. "cpu").
  // A config made without that section is a programming error (throws).
  template <typename S>
  const S& Settings() const {
    return dynamic_cast<const S&>(*Section(S::kName).settings);
  }
  // A private copy of those settings to change (tests, tools).
  template <typename S>
  S& EditSettings() {
    auto copy = std::make_shared<S>(Settings<S>());
    S& edited = *copy;
    probes.find(S::kName)->second.settings = std::move(copy);
    return edited;
  }
  const ProbeConfig& Section(std::string_view name) const;
  ProbeConfig& Section(std::string_view name);
};

// The embedded defaults (what runs with no --config.file), with a section
// of defaults for each of `sections`.
Config Defaults(std::span<const SectionSchema> sections = {});

// The keys of [probes.<name>] for `section`: the shared schedule keys, then
// the module's own, in declaration order (top-level keys only).
std::vector<std::string> SectionKeys(const SectionSchema& section);

// Parses and validates TOML. Errors read "source:line:column: message"
// (source is the file name given). Unknown keys, wrong types and
// out-of-range values are errors.
// `sections` are the [probes.<name>] tables known (the registered probes';
// see probes::ConfigSections()); a section absent from the file gets its
// defaults.
Result<Config> LoadString(std::string_view toml, std::string_view source, std::span<const SectionSchema> sections = {});
Result<Config> LoadFile(const std::filesystem::path& path, std::span<const SectionSchema> sections = {});

// $STATE_DIRECTORY (systemd's StateDirectory=), else /var/lib/hostperf if it
// is writable (or creatable), else ./hostperf-state. A configured
// state_directory wins. `getenv` and `writable` are seams for tests.
std::filesystem::path ResolveStateDirectory(const Config& config,
                                            const std::function<std::optional<std::string>(const char*)>& getenv = {},
                                            const std::function<bool(const std::filesystem::path&)>& writable = {});

}  // namespace hostperf::config
