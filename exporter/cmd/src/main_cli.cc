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

#include "hostperf/base/files.h"
#include "hostperf/base/flags.h"
#include "hostperf/base/http_client.h"
#include "hostperf/cluster/check.h"
#include "hostperf/cluster/run_client.h"
#include "hostperf/cmd/logging.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/api_token.h"
#include "hostperf/runs/full_run.h"

namespace {

constexpr const char* kUsageHead = R"(usage: hostperf [--config.file=PATH] COMMAND [options]

Commands:
)";
// gpcheckperf's program name runs `hostperf check` (DropInCommand).
constexpr const char* kCheckReferenceTool = "gpcheckperf";
// Orchestration across hosts: not a probe, so not a probe module's command.
constexpr const char* kCheckSummary = R"(  check [-d DIR]... [-h HOST]... [-f HOSTFILE] [-r dsNnM] [-D] [-v] [--json]
                      gpcheckperf: disk, stream and network tests on every
                      host, and the RESULT block (hostperf check --help)
)";
constexpr const char* kCheckUsage = R"(usage: hostperf check [-d DIR]... [-h HOST[:PORT]]... [-f HOSTFILE] [-r dsNnM]
                      [-D] [-v] [-S SIZE] [-B SIZE] [--duration TIME]
                      [--stream-size N] [--api-port PORT] [--net-port PORT]
                      [--token-file FILE] [--tls] [--ca-file FILE]
                      [--cert-file FILE --key-file FILE]
                      [--basic-auth-user USER --basic-auth-password-file FILE]
                      [--json]

gpcheckperf: runs the selected tests on every host at once and prints the
RESULT block. This host runs its tests in-process; other hosts run them
through their hostperf_exporter's run API. The disk test is gpcheckperf's:
one sequential writer per -d directory, all at once, then one reader per
directory, all at once; a host's bandwidth is its total bytes over the
pass's wall time (vioperf's tests are hostperf io's).

  -r dsNnM          tests (default dsn): d disk, s stream, and one network
                    test: N parallel pairs, n serial pairs, M full matrix
  -d DIR            a directory for the disk test (repeat for more)
  -h HOST[:PORT]    a host (repeat for more; default: this host alone);
                    PORT is its run API port (default --api-port)
  -f HOSTFILE       hosts, one per line
  -S SIZE           the disk test's total over the host's -d directories
                    (as 100GB, 512MB), written exactly, shared by them;
                    default twice the host's RAM, as gpcheckperf, so that
                    the page cache cannot hold it. hostperf writes and reads
                    with O_DIRECT, so a smaller size is valid too
  -B SIZE           the disk test's block size (default 32KB)
  --duration TIME   the network test's length per link (default 15s, at
                    most 60s)
  --stream-size N   the stream test's array size in elements
  -D                per-host bandwidth lines in the RESULT block
  -v                each host's and link's step as it starts and ends, and
                    the matrix's per-link lines
  --json            the RESULT block's figures as JSON on stdout (bytes and
                    seconds; "errors" lists what failed)
  --api-port PORT   other hosts' run API port (default 9580)
  --net-port PORT   other hosts' responder port (default: this config's
                    first probes.net port)
  --token-file FILE other hosts' run API token (default: api.token_file)
Other hosts' --web.config.file (docs/security.md):
  --tls             https:// (implied by --ca-file and --cert-file)
  --ca-file FILE    trust this CA for their certificates (default: the
                    system's CAs)
  --cert-file FILE, --key-file FILE
                    a client certificate and its key (mutual TLS)
  --basic-auth-user USER, --basic-auth-password-file FILE
                    basic auth (basic_auth_users); the password is the
                    file's first line. The token then goes in
                    X-Hostperf-Token
  --help            this help
On a terminal, stderr shows what runs now and for how long.
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
  return usage + kCheckSummary + kUsageTail;
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
    std::fprintf(stderr, "hostperf %s: %s; see 'hostperf %s --help'\n", command.c_str(), message.c_str(),
                 command.c_str());
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
  exporter::FullRunCallbacks callbacks;
  callbacks.on_report = std::move(on_report);
  callbacks.on_progress = std::move(on_progress);
  return exporter::RunFullProbe(*probe, config, std::move(options), &g_cancel, std::move(callbacks));
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

// The run API's client with check's TLS and basic auth flags.
hostperf::Result<std::unique_ptr<hostperf::HttpClient>> MakeRunApiClient(
    const hostperf::cluster::CheckOptions& options) {
  hostperf::HttpClientSettings settings;
  settings.ca_file = options.ca_file;
  settings.cert_file = options.cert_file;
  settings.key_file = options.key_file;
  if (!options.basic_auth_user.empty()) {
    auto password = hostperf::ReadBoundedFile(options.basic_auth_password_file, "basic auth password file",
                                              hostperf::kMaxSecretFileBytes, hostperf::FileAccess::kOwnerOnly);
    if (!password) return password.failure();
    std::string line = password->substr(0, password->find_first_of("\r\n"));
    if (line.empty()) {
      return hostperf::Result<std::unique_ptr<hostperf::HttpClient>>::Error(
          "the basic auth password file " + options.basic_auth_password_file + " is empty");
    }
    settings.basic_user = options.basic_auth_user;
    settings.basic_password = std::move(line);
  }
  return hostperf::HttpClient::Create(std::move(settings));
}

// gpcheckperf: runs the selected tests and prints the RESULT block; exit 1
// when a test failed or could not run.
int CheckCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace check = hostperf::cluster;
  auto parsed = check::ParseCheckArgs(args);
  if (!parsed) return UsageError("check", parsed.error());
  if (parsed->help) {
    std::fputs(kCheckUsage, stdout);
    return 0;
  }
  char name[256] = {};
  const std::string local = ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  // Other hosts run their tests through their run API, with the fleet's token.
  const bool any_remote = std::any_of(parsed->hosts.begin(), parsed->hosts.end(), [&](const std::string& host) {
    const auto spec = check::ParseHostSpec(host, parsed->api_port);
    return !spec || !check::IsLocalHost(spec->address, local);
  });
  hostperf::exporter::RemoteRunOptions remote;
  remote.cancel = &g_cancel;
  std::unique_ptr<hostperf::HttpClient> client;
  if (any_remote) {
    auto made = MakeRunApiClient(*parsed);
    if (!made) {
      std::fprintf(stderr, "hostperf check: %s\n", made.error().c_str());
      return 1;
    }
    client = std::move(made).value();
    remote.client = client.get();
    remote.tls = parsed->tls;
    const std::filesystem::path token_file = !parsed->token_file.empty() ? parsed->token_file : config->api.token_file;
    if (token_file.empty()) {
      std::fputs(
          "hostperf check: other hosts run their tests through their run API: give its token with "
          "--token-file FILE or api.token_file in the config\n",
          stderr);
      return 1;
    }
    auto token = hostperf::exporter::ReadApiToken(token_file);
    if (!token) {
      std::fprintf(stderr, "hostperf check: %s\n", token.error().c_str());
      return 1;
    }
    remote.token = *token;
  }
  const check::HostRunner run_on = [&](const std::string& host, std::string_view probe, const nlohmann::json& options) {
    const auto spec = check::ParseHostSpec(host, parsed->api_port);
    if (!spec) return hostperf::probes::ProbeOutcome::Failure("bad_host", spec.error());
    if (check::IsLocalHost(spec->address, local)) {
      const hostperf::probes::ProbeModule* module = hostperf::probes::FindProbe(probe);
      if (module == nullptr) return hostperf::probes::ProbeOutcome::Failure("unknown_probe", std::string(probe));
      auto parsed = hostperf::probes::ParseProbeOptions(probe, options);
      if (!parsed) return hostperf::probes::ProbeOutcome::Failure(parsed.failure());
      return RunFull(*module, *config, std::move(parsed).value());
    }
    return hostperf::exporter::RunOnRemote(spec->address, spec->api_port, probe, options, remote);
  };
  StepTicker ticker;
  check::CheckProgress progress;
  progress.on_note = [&](const std::string& note) {
    ticker.Clear();
    // With --json, stdout holds the document alone.
    std::fprintf(parsed->json ? stderr : stdout, "%s\n", note.c_str());
    std::fflush(parsed->json ? stderr : stdout);
  };
  progress.on_step = [&](const std::string& step) { ticker.Set(step); };
  const auto run = check::RunCheck(*parsed, run_on, local, progress);
  ticker.Stop();
  if (parsed->json) {
    nlohmann::json document = run.check;
    document["errors"] = run.errors;
    std::printf("%s\n", document.dump(2).c_str());
  } else if (run.ran) {
    std::fputs(check::FormatCheckResult(run.check, {parsed->per_host, parsed->verbose}).c_str(), stdout);
  }
  for (const auto& error : run.errors) std::fprintf(stderr, "hostperf check: %s\n", error.c_str());
  return run.errors.empty() ? 0 : 1;
}

// Started under a reference tool's name (a link in the drop-in directory):
// the command that reproduces it, or empty.
std::string DropInCommand(const char* argv0) {
  const std::string program = std::filesystem::path(argv0 == nullptr ? "" : argv0).filename().string();
  if (program == kCheckReferenceTool) return "check";
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

  (void)exporter::SetUpLogging("warn", exporter::LogFormat::kLogfmt);
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

  if (command == "check") return CheckCommand(rest, config);
  for (const probes::ProbeModule* module : probes::AllProbes()) {
    if (module->command.run != nullptr && module->command.name == command) return ProbeCommand(*module, rest, *config);
  }
  return UsageError("", "unknown command \"" + command + "\"");
}
