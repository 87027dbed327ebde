// hostperf: one-shot CLI reproducing the reference tools' options and reports.
#include <prometheus/registry.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "hostperf/base/flags.h"
#include "hostperf/cluster/check_command.h"
#include "hostperf/cluster/check_ssh.h"
#include "hostperf/cmd/logging.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/full_run.h"

namespace {

constexpr const char* kUsageHead = R"(usage: hostperf [--config.file=PATH] COMMAND [options]

Commands:
)";
constexpr const char* kUsageTail = R"(
Global flags:
  --config.file=PATH  config for shared settings (default: /etc/hostperf/hostperf.toml
                      if it exists, else the embedded defaults)
  --help, --version
)";

// Every registered probe's command, then check.
std::string Usage() {
  std::string usage = kUsageHead;
  for (const hostperf::probes::ProbeModule* module : hostperf::probes::AllProbes()) {
    usage += module->command.usage;
  }
  return usage + std::string(hostperf::cluster::CheckCommandSummary()) + kUsageTail;
}

std::atomic<bool> g_cancel{false};

// On a terminal, one self-overwriting stderr line with what runs now and how
// long the run has taken; nothing when stderr is a file or a pipe, so logs
// hold only whole lines. Shown from the second second on: short runs stay
// quiet.
class StepTicker {
 public:
  StepTicker() : enabled_(::isatty(STDERR_FILENO) == 1), start_(std::chrono::steady_clock::now()) {
    if (enabled_) thread_ = std::thread([this] { Loop(); });
  }
  ~StepTicker() { Stop(); }
  StepTicker(const StepTicker&) = delete;
  StepTicker& operator=(const StepTicker&) = delete;

  // `remaining`: what the step's run still needs by its own estimate (zero:
  // unknown), counted down on the line.
  void Set(const std::string& step, std::chrono::nanoseconds remaining = {}) {
    std::lock_guard lock(mu_);
    step_ = step;
    done_by_ = remaining.count() > 0
                   ? std::optional(std::chrono::steady_clock::now() +
                                   std::chrono::duration_cast<std::chrono::steady_clock::duration>(remaining))
                   : std::nullopt;
  }
  // Before another line goes to the terminal.
  void Clear() {
    std::lock_guard lock(mu_);
    ClearLocked();
  }
  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopped_) return;
      stopped_ = true;
      ClearLocked();
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void ClearLocked() {
    if (!shown_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown_ = false;
  }
  void Loop() {
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopped_; })) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_);
      if (step_.empty() || elapsed.count() < 2) continue;
      std::string left;
      if (done_by_) {
        const auto seconds =
            std::chrono::duration_cast<std::chrono::seconds>(*done_by_ - std::chrono::steady_clock::now()).count();
        left = ", about " + std::to_string(std::max<long long>(seconds, 0)) + "s left";
      }
      std::fprintf(stderr, "\r\033[K  %s, %llds elapsed%s", step_.c_str(), static_cast<long long>(elapsed.count()),
                   left.c_str());
      std::fflush(stderr);
      shown_ = true;
    }
  }

  const bool enabled_;
  const std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::string step_;
  std::optional<std::chrono::steady_clock::time_point> done_by_;
  bool shown_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

// A bad option or command: one line naming it and where help is.
int UsageError(const std::string& command, const std::string& message) {
  if (command.empty()) {
    std::fprintf(stderr, "hostperf: %s; see 'hostperf --help'\n", message.c_str());
  } else {
    const std::string label = hostperf::probes::CommandLabel(command);
    std::fprintf(stderr, "%s: %s; see '%s --help'\n", label.c_str(), message.c_str(), label.c_str());
  }
  return 2;
}

// Runs a probe's full mode: the same code path as the daemon's run API.
hostperf::probes::ProbeOutcome RunFull(const hostperf::probes::ProbeModule& module,
                                       const hostperf::config::Config& config,
                                       std::shared_ptr<const hostperf::probes::ProbeOptions> options,
                                       std::function<void(const nlohmann::json&)> on_report = {},
                                       std::function<void(const hostperf::probes::Progress&)> on_progress = {}) {
  using namespace hostperf;
  prometheus::Registry registry;  // the CLI exports nothing; probes still register their families
  probes::ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = config::ResolveStateDirectory(config);
  auto probe = module.create(deps);
  hostperf::runs::FullRunCallbacks callbacks;
  callbacks.on_report = std::move(on_report);
  callbacks.on_progress = std::move(on_progress);
  return hostperf::runs::RunFullProbe(*probe, config, std::move(options), &g_cancel, std::move(callbacks));
}

// A probe's command, with the CLI's full-run path lent to it. On a terminal,
// stderr shows the probe's current step while it runs, cleared before each
// line the command prints from the run's reports.
int ProbeCommand(const hostperf::probes::ProbeModule& module, const std::vector<std::string>& args,
                 const hostperf::config::Config& config) {
  const hostperf::probes::CommandContext context{
      config,
      [&](std::shared_ptr<const hostperf::probes::ProbeOptions> options,
          std::function<void(const nlohmann::json&)> on_report) {
        StepTicker ticker;
        std::function<void(const nlohmann::json&)> report;
        if (on_report) {
          report = [&ticker, on_report = std::move(on_report)](const nlohmann::json& entry) {
            ticker.Clear();
            on_report(entry);
          };
        }
        auto outcome = RunFull(module, config, std::move(options), std::move(report),
                               [&ticker](const hostperf::probes::Progress& progress) {
                                 ticker.Set(progress.current_test, progress.remaining);
                               });
        ticker.Stop();
        return outcome;
      },
      [&](const std::string& message) { return UsageError(std::string(module.command.name), message); },
      [] { return g_cancel.load(); },
  };
  return module.command.run(args, context);
}

// `hostperf check` (and `check-agent`, which it runs on other hosts), with
// the CLI's full-run path and step line lent to it.
int CheckCommand(const std::string& command, const std::vector<std::string>& args,
                 std::shared_ptr<const hostperf::config::Config> config) {
  // The ticker as the check's step line.
  class TickerLine final : public hostperf::cluster::StepLine {
   public:
    void Set(const std::string& step) override { ticker_.Set(step); }
    void Clear() override { ticker_.Clear(); }

   private:
    StepTicker ticker_;
  };
  hostperf::cluster::CheckCommandContext context;
  context.config = config;
  context.run_local = [config](const hostperf::probes::ProbeModule& module,
                               std::shared_ptr<const hostperf::probes::ProbeOptions> options) {
    return RunFull(module, *config, std::move(options));
  };
  context.usage_error = [command](const std::string& message) { return UsageError(command, message); };
  context.cancel = &g_cancel;
  context.step_line = [] { return std::make_unique<TickerLine>(); };
  if (command == hostperf::cluster::kCheckAgentCommandName) return hostperf::cluster::CheckAgentCommand(args, context);
  return hostperf::cluster::CheckCommand(args, context);
}

// Started under a reference tool's name (a link in the drop-in directory):
// the command that reproduces it, or empty.
std::string DropInCommand(const char* argv0) {
  const std::string program = std::filesystem::path(argv0 == nullptr ? "" : argv0).filename().string();
  if (program == hostperf::cluster::kCheckReferenceTool) return std::string(hostperf::cluster::kCheckCommandName);
  for (const hostperf::probes::ProbeModule* module : hostperf::probes::AllProbes()) {
    if (!module->command.reference_tool.empty() && module->command.reference_tool == program) {
      return std::string(module->command.name);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hostperf;
  static constexpr FlagSpec kGlobalFlags[] = {
      Switch("help").Stopping(),
      Switch("version").Stopping(),
      Valued("config.file"),
  };
  // Global flags end at the command; the command parses the rest. Under a
  // reference tool's name every argument is the tool's, and the config file
  // comes from HOSTPERF_CONFIG (else the default below).
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string drop_in = DropInCommand(argc > 0 ? argv[0] : nullptr);
  if (!drop_in.empty()) probes::SetDropIn(drop_in, std::filesystem::path(argv[0]).filename().string());
  auto parsed = drop_in.empty() ? ParseFlags(args, {kGlobalFlags, /*stop_at_positional=*/true})
                                : Result<ParsedFlags>(ParsedFlags{});
  if (!parsed) return UsageError("", parsed.error());
  std::optional<std::filesystem::path> config_file;
  if (const char* env = std::getenv("HOSTPERF_CONFIG"); !drop_in.empty() && env != nullptr && *env != '\0') {
    config_file = env;
  }
  for (const FlagValue& flag : parsed->flags) {
    if (flag.Is("help")) {
      std::fputs(Usage().c_str(), stdout);
      return 0;
    }
    if (flag.Is("version")) {
      std::printf("hostperf, version %s (revision: %s, %s %s, fingerprint %s)\n", build_info::kVersion,
                  build_info::kRevision, build_info::kCompiler, build_info::kCompilerVersion, build_info::kFingerprint);
      return 0;
    }
    config_file = flag.value;
  }
  if (drop_in.empty() && parsed->positional.empty()) {
    std::fprintf(stderr, "hostperf: no command given\n\n%s", Usage().c_str());
    return 2;
  }
  const std::string command = drop_in.empty() ? parsed->positional.front() : drop_in;
  const std::vector<std::string> rest =
      drop_in.empty() ? std::vector<std::string>(parsed->positional.begin() + 1, parsed->positional.end()) : args;

  (void)hostperf::cmd::SetUpLogging("warn", hostperf::cmd::LogFormat::kLogfmt);
  if (!config_file && std::filesystem::exists("/etc/hostperf/hostperf.toml"))
    config_file = "/etc/hostperf/hostperf.toml";
  auto loaded = config_file ? probes::LoadConfigFile(*config_file) : Result<config::Config>(probes::DefaultConfig());
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 1;
  }
  auto config = std::make_shared<const config::Config>(std::move(loaded).value());

  struct sigaction action {};
  action.sa_handler = [](int) { g_cancel.store(true); };
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  if (command == hostperf::cluster::kCheckCommandName || command == hostperf::cluster::kCheckAgentCommandName) {
    return CheckCommand(command, rest, config);
  }
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    if (module->command.run != nullptr && module->command.name == command) return ProbeCommand(*module, rest, *config);
  }
  return UsageError("", "unknown command \"" + command + "\"");
}
