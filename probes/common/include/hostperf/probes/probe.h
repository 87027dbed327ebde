#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/figures.h"
#include "hostperf/probes/impact_budget.h"
#include "hostperf/probes/system_roots.h"

namespace prometheus {
class Registry;
}

namespace hostperf::probes {

// What a full run reports while it goes (vioperf's current test, elapsed and
// remaining time). Scheduled runs may ignore it.
struct Progress {
  std::string current_test;
  std::chrono::nanoseconds elapsed{0};
  std::chrono::nanoseconds remaining{0};
};

// A probe's full-run options, parsed once at the edge (the run API's
// options.<probe>, the CLI's flags) by the probe's own module into its own
// struct, derived from this.
struct ProbeOptions {
  virtual ~ProbeOptions() = default;
};

// What both of a probe's faces get for one run: its bounds, its own
// settings and the impact budget. Probes measure; they do not sleep on the
// scheduler's behalf, and they return soon after ShouldStop().
struct RunContext {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  const std::atomic<bool>* cancel = nullptr;
  // The probe's own [probes.<name>] settings (its module's struct) and
  // schedule.
  std::shared_ptr<const config::ProbeSection> settings;
  config::ProbeSchedule schedule;
  // The sidecar's impact budget: spend disk and network bytes here before
  // using them. Left null, the Probe lends its own budget with
  // `budget_limits` (a run outside the daemon).
  ImpactBudget* budget = nullptr;
  config::BudgetConfig budget_limits;

  bool Cancelled() const { return cancel != nullptr && cancel->load(std::memory_order_relaxed); }
  bool ShouldStop() const { return Cancelled() || std::chrono::steady_clock::now() >= deadline; }

  // The settings as the module's own type (a mismatch is a programming
  // error: it throws, and the Probe reports internal_error).
  template <typename S>
  const S& Settings() const {
    if (settings == nullptr) throw std::logic_error("run without settings");
    return dynamic_cast<const S&>(*settings);
  }
};

// The sidecar face: a scheduled, low-impact run within the budget that
// publishes the probe's metrics. It takes no options and reports nothing
// while it goes.
struct ScheduledContext : RunContext {};

// The reference-tool face: a full-strength run on demand (the run API, the
// CLI, `hostperf check`), with its typed options and its progress and report
// callbacks.
struct FullRunContext : RunContext {
  // The options its module parsed. Null: the defaults.
  std::shared_ptr<const ProbeOptions> options;
  // May be empty.
  std::function<void(const Progress&)> on_progress;
  // Probe-specific report entries as they are produced (e.g. one vioperf
  // table row, as JSON with a "kind"); may be empty.
  std::function<void(const nlohmann::json&)> on_report;

  // The options as the module's own type; null when the run takes the
  // defaults.
  template <typename O>
  const O* Options() const {
    if (options == nullptr) return nullptr;
    const O* typed = dynamic_cast<const O*>(options.get());
    if (typed == nullptr) throw std::logic_error("run with another probe's options");
    return typed;
  }
  void Report(const nlohmann::json& entry) const {
    if (on_report) on_report(entry);
  }
  void ReportProgress(const Progress& progress) const {
    if (on_progress) on_progress(progress);
  }
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
  static ProbeOutcome Failure(const hostperf::Failure& failure, nlohmann::json result = nlohmann::json::object());
  static ProbeOutcome Skipped(std::string reason, std::string message);
};

// A status as run records and JSON outcomes name it: "success", "failure",
// "skipped"; and back (any other name is a failure).
std::string_view ToString(ProbeOutcome::Status status);
ProbeOutcome::Status ParseOutcomeStatus(std::string_view name);
// An outcome as run records and `hostperf check-agent` write it:
// {"status", "reason", "message"} (members that are not strings read as
// empty); the result is the caller's to add.
ProbeOutcome OutcomeFromJson(const nlohmann::json& outcome);

// Seams and shared services a probe is built with.
struct ProbeDeps {
  prometheus::Registry* registry = nullptr;  // where the probe registers its own families
  SystemRoots roots;
  std::filesystem::path state_directory;
};

// The registry a probe registers its families on: `deps.registry` (not
// owned), or a registry of the probe's own when none is given (the CLI's
// commands and tests create probes without the daemon's). The probe keeps
// the pointer as long as it keeps the families.
std::shared_ptr<prometheus::Registry> RegistryFor(const ProbeDeps& deps);

// A probe has two faces: the sidecar face the scheduler calls and the
// reference-tool face the run manager and the CLI call. Both run through
// this class, which owns what they share: one measurement at a time (a
// second one would disturb the first, so it is skipped as "busy"), a budget
// always lent (see RunContext::budget), and no exception crossing the probe
// boundary ("internal_error").
class Probe {
 public:
  virtual ~Probe() = default;
  virtual std::string_view Name() const = 0;

  // One scheduled, low-impact measurement.
  ProbeOutcome RunScheduled(const ScheduledContext& context);
  // One full-strength run of the reference tool this probe reproduces.
  ProbeOutcome RunFull(const FullRunContext& context);

  // Long-running services the daemon hosts for this probe (the net probe's
  // peer responder), and metrics to expose before the first run (the disk
  // probe's verify error counters): called after creation and again after
  // every successful reload with the probe's own section (restart only what
  // changed); stopped by the destructor. The CLI never calls it. Must not
  // throw; failures are logged.
  virtual void StartServices(const config::ProbeConfig& /*section*/) {}

 protected:
  // Each face's measurement, with a budget and the probe to itself. The
  // scheduled one updates the probe's own metrics.
  virtual ProbeOutcome MeasureScheduled(const ScheduledContext& context) = 0;
  virtual ProbeOutcome MeasureFull(const FullRunContext& context) = 0;

 private:
  template <typename Context>
  ProbeOutcome Guarded(const Context& context, ProbeOutcome (Probe::*measure)(const Context&));

  std::mutex run_mutex_;
  ImpactBudget own_budget_{[] { return std::chrono::steady_clock::now(); }};
};

using ProbeFactory = std::unique_ptr<Probe> (*)(const ProbeDeps& deps);

// A JSON options object's run length: a duration string ("90s", "1.5min")
// or a number of seconds, the same grammar for every probe.
Result<std::chrono::nanoseconds> ParseDurationOption(const nlohmann::json& value);

// A full-run options parser: the JSON object given for the probe and the
// run's length (the run API's top-level "duration", the CLI's --duration),
// which the options' own "duration" overrides.
using OptionsParser = Result<std::shared_ptr<const ProbeOptions>> (*)(const nlohmann::json& options,
                                                                      std::optional<std::chrono::nanoseconds> duration);

// A module's parsed options as the OptionsParser hands them on.
template <typename O>
Result<std::shared_ptr<const ProbeOptions>> ShareOptions(Result<O> parsed) {
  if (!parsed) return parsed.failure();
  return std::shared_ptr<const ProbeOptions>(std::make_shared<O>(std::move(parsed).value()));
}

// What `hostperf <command>` gets from the CLI binary.
struct CommandContext {
  const config::Config& config;
  // Runs this probe's full mode: the run API's code path, options typed.
  std::function<ProbeOutcome(std::shared_ptr<const ProbeOptions> options,
                             std::function<void(const nlohmann::json&)> on_report)>
      run_full;
  // A bad option: prints one line, "hostperf <command>: <message>; see
  // 'hostperf <command> --help'", and returns the usage exit code (2).
  std::function<int(const std::string& message)> usage_error;
  // True once the user asked to stop (Ctrl-C, SIGTERM): for work a command
  // does around its run (the run itself stops on its own).
  std::function<bool()> cancelled = [] { return false; };
};

// The name a command's messages start with: "hostperf <command>", or the
// reference tool's own name when hostperf was started as that tool (a link
// in the drop-in directory: vnetperf, vioperf, vcpuperf, gpcheckperf), so
// that an error reads as the command the operator typed.
std::string CommandLabel(std::string_view command);
// main(), before any command runs: started as `tool`, which runs `command`.
void SetDropIn(std::string_view command, std::string_view tool);

// A command's exit code after its run: 0, or 1 with "<CommandLabel>:
// <reason>: <message>" on stderr.
int CommandExitCode(std::string_view command, const ProbeOutcome& outcome);

// `--json`: a run's result on stdout, indented, as the run API returns it
// under "results" (an empty object when the run produced none).
void PrintJsonResult(const ProbeOutcome& outcome);

// A probe's CLI command, the reference tool it reproduces.
struct CliCommand {
  std::string_view name;   // "io": `hostperf io ...`
  std::string_view usage;  // its lines in `hostperf --help`
  // Exit code: 0 success, 1 the run failed, 2 a usage error.
  int (*run)(const std::vector<std::string>& args, const CommandContext& context) = nullptr;
  // The reference tool's program name ("vioperf"): `hostperf` started under
  // that name (a link in the package's drop-in directory) runs this command
  // with the tool's own argument syntax. Empty: none.
  std::string_view reference_tool;
};

// What the daemon's start-up knows beyond the config, for a module's
// config_errors.
struct StartFacts {
  // The exporter's HTTP ports (its --web.listen-address and the default
  // 9580): no peer address of a probe should name one.
  std::vector<std::uint16_t> exporter_ports;
  // The port this exporter listens on (0: unknown): a probe's own server
  // cannot bind it too.
  std::uint16_t listen_port = 0;
};

// A probe module: everything central code needs to know about one probe, so
// that a probe is one folder plus one registration line.
struct ProbeModule {
  std::string_view name;  // "disk": [probes.disk], hostperf_probe_*{probe="disk"}, the run API's name
  ProbeFactory create = nullptr;
  // [probes.<name>]: default schedule, typed settings and their keys.
  config::SectionSchema (*config_section)() = nullptr;
  // Null: the probe takes no full-run options (only null or {}).
  OptionsParser parse_options = nullptr;
  // Its result's headline figures against the documented thresholds.
  std::vector<Figure> (*figures)(const nlohmann::json& result) = nullptr;
  CliCommand command;
  // The reasons of hostperf_probe_failures_total and
  // hostperf_probe_skipped_total this probe's runs may report (snake_case,
  // besides the framework's own): the daemon exposes each at 0 from
  // start-up, so that increase() sees the first one. A reason not listed
  // still counts from its first use.
  std::vector<std::string_view> failure_reasons = {};
  std::vector<std::string_view> skip_reasons = {};
  // `--config.check`: what looks wrong in an enabled [probes.<name>] section
  // although it is valid (one line each; the check still passes). May look
  // at the host (files, addresses, name resolution) within a few seconds.
  // Null: nothing to say.
  std::vector<std::string> (*config_warnings)(const config::ProbeConfig& section) = nullptr;
  // The daemon's start-up and `--config.check` (one code path): what in
  // [probes.<name>] the daemon refuses to start with, enabled or not (its
  // services run either way), one line each. Null: nothing to refuse.
  std::vector<std::string> (*config_errors)(const config::ProbeConfig& section, const StartFacts& facts) = nullptr;
};

// Every probe: the built-in ones (each folder of probes/, by name), then
// those registered with RegisterProbe, in registration order.
std::span<const ProbeModule* const> AllProbes();
const ProbeModule* FindProbe(std::string_view name);

// Adds a module from outside probes/ (before main(), from a static
// initialiser: see HOSTPERF_REGISTER_PROBE). Returns true.
bool RegisterProbe(const ProbeModule& module);
#define HOSTPERF_REGISTER_PROBE(module) \
  [[maybe_unused]] static const bool hostperf_probe_registered_ = ::hostperf::probes::RegisterProbe(module)

// The [probes.*] sections of every registered probe, and config loading with them.
std::span<const config::SectionSchema> ConfigSections();
config::Config DefaultConfig();
Result<config::Config> LoadConfigString(std::string_view toml, std::string_view source);
Result<config::Config> LoadConfigFile(const std::filesystem::path& path);

// Parses a probe's full-run options through its module, once, at the edge:
// null means the defaults; a probe without options takes only null or {}.
// Errors ("options.<probe>: ...") have the reason bad_options.
Result<std::shared_ptr<const ProbeOptions>> ParseProbeOptions(
    std::string_view probe, const nlohmann::json& options,
    std::optional<std::chrono::nanoseconds> duration = std::nullopt);

// A context for one run of `probe` under `config`: its settings and
// schedule, and the config's budget limits.
ScheduledContext MakeScheduledContext(const config::Config& config, std::string_view probe);
FullRunContext MakeFullRunContext(const config::Config& config, std::string_view probe);

// The names of every registered probe, "cpu, disk, ..." (for messages).
std::string KnownProbeNames();

// The config check's warnings of every enabled probe, "probes.<name>: ..."
// (see ProbeModule::config_warnings).
std::vector<std::string> ConfigWarnings(const config::Config& config);

// What the daemon refuses to start with in every probe's section,
// "probes.<name>: ..." (see ProbeModule::config_errors); empty: none.
std::vector<std::string> ConfigErrors(const config::Config& config, const StartFacts& facts);

// The headline figures of a probe's result (none for unknown probes).
std::vector<Figure> HeadlineFigures(std::string_view probe, const nlohmann::json& result);

}  // namespace hostperf::probes
