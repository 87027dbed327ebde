#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "hostperf/config/config.h"
#include "hostperf/probes/impact_budget.h"
#include "hostperf/probes/system_roots.h"

namespace prometheus {
class Registry;
}

namespace hostperf::probes {

enum class RunMode { kScheduled, kFull };
std::string_view ToString(RunMode mode);

// What a full run reports while it goes (vioperf's current test, elapsed and
// remaining time). Scheduled runs may ignore it.
struct Progress {
  std::string current_test;
  std::chrono::nanoseconds elapsed{0};
  std::chrono::nanoseconds remaining{0};
};

// Everything a probe may use during one run. Probes measure; they do not
// sleep on the scheduler's behalf, and they return soon after ShouldStop().
struct RunContext {
  RunMode mode = RunMode::kScheduled;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancel = nullptr;
  std::shared_ptr<const config::Config> config;
  // Probe-specific full-run options (API body / CLI flags), already validated
  // by the probe's own parser. Null for scheduled runs.
  nlohmann::json options;
  std::function<void(const Progress&)> on_progress;
  // Probe-specific report entries as they are produced (e.g. one vioperf
  // table row, as JSON with a "kind"); may be empty.
  std::function<void(const nlohmann::json&)> on_report;
  // The sidecar's impact budget (scheduled runs): spend disk and network
  // bytes here before using them. Null: unlimited (full runs, the CLI).
  ImpactBudget* budget = nullptr;

  bool Cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
  bool ShouldStop() const { return Cancelled() || std::chrono::steady_clock::now() >= deadline; }
};

// A run's outcome. Runtime failures are data: status plus a short snake_case
// reason for hostperf_probe_failures_total / hostperf_probe_skipped_total.
struct ProbeOutcome {
  enum class Status { kSuccess, kFailure, kSkipped };
  Status status = Status::kSuccess;
  std::string reason;                                // "" on success; e.g. "checksum_mismatch", "no_space"
  std::string message;                               // human-readable detail for the log
  nlohmann::json result = nlohmann::json::object();  // same fields as the CLI's JSON

  static ProbeOutcome Success(nlohmann::json result);
  static ProbeOutcome Failure(std::string reason, std::string message,
                              nlohmann::json result = nlohmann::json::object());
  static ProbeOutcome Skipped(std::string reason, std::string message);
};

// Seams and shared services a probe is built with.
struct ProbeDeps {
  prometheus::Registry* registry = nullptr;  // where the probe registers its own families
  SystemRoots roots;
  std::filesystem::path state_directory;
};

class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view Name() const = 0;
  // This probe's schedule within a config (enabled, interval, timeout).
  virtual config::ProbeSchedule Schedule(const config::Config& config) const = 0;
  // Measures once. Must not throw; updates the probe's own metrics.
  virtual ProbeOutcome Run(const RunContext& context) = 0;
  // Long-running services the daemon hosts for this probe (the net probe's
  // peer responder), and metrics to expose before the first run (the disk
  // probe's verify error counters): called after creation and again after
  // every successful reload (restart only what changed); stopped by the
  // destructor. The CLI never calls it. Must not throw; failures are logged.
  virtual void StartServices(const config::Config& /*config*/) {}
};

// The shared shape of Probe::Run: one measurement at a time (a second one
// would disturb the first, so it is skipped as "busy"), and no exception
// crosses the probe boundary ("internal_error").
template <typename Measure>
ProbeOutcome RunExclusive(std::mutex& mutex, std::string_view probe, Measure&& measure) {
  std::unique_lock lock(mutex, std::try_to_lock);
  if (!lock.owns_lock()) return ProbeOutcome::Skipped("busy", "another " + std::string(probe) + " run is in progress");
  try {
    return measure();
  } catch (const std::exception& e) {
    return ProbeOutcome::Failure("internal_error", e.what());
  } catch (...) {
    return ProbeOutcome::Failure("internal_error", "unknown exception");
  }
}

using ProbeFactory = std::unique_ptr<Probe> (*)(const ProbeDeps& deps);

// Checks a probe's full-run options (RunContext::options, a JSON object):
// "" when valid, else a message naming the bad key.
using OptionsValidator = std::string (*)(const nlohmann::json& options);

// Adapts a probe's own option parser (returning Result<T> or an error string)
// to an OptionsValidator.
template <auto Parse>
std::string ValidateOptionsWith(const nlohmann::json& options) {
  if constexpr (std::is_convertible_v<decltype(Parse(options)), std::string>) {
    return Parse(options);
  } else {
    const auto parsed = Parse(options);
    return parsed ? std::string() : parsed.error();
  }
}

// How a probe's full-run options spell the run length, so that the run API's
// top-level "duration" can fill in the probe's own "duration" option.
enum class DurationOption {
  kNone,      // the probe has no run-length option
  kInterval,  // "duration": "60s"
  kSeconds,   // "duration": 60 (a number of seconds)
};

struct ProbeRegistration {
  std::string_view name;
  ProbeFactory factory;
  // Full-run options; nullptr: the probe takes none (only null or {}).
  OptionsValidator validate_options = nullptr;
  DurationOption duration_option = DurationOption::kNone;
};

// Every probe, one line each in probes/registry.cc.
std::span<const ProbeRegistration> AllProbes();

}  // namespace hostperf::probes
