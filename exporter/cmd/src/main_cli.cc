// hostperf: one-shot CLI reproducing the reference tools' options and reports.
#include <prometheus/registry.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hostperf/cluster/check.h"
#include "hostperf/cluster/run_client.h"
#include "hostperf/cmd/logging.h"
#include "hostperf/config/config.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/flags.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/api_token.h"
#include "hostperf/runs/full_run.h"

namespace {

constexpr const char* kUsageHead = R"(usage: hostperf [--config.file=PATH] COMMAND [options]

Commands:
)";
// Orchestration across hosts: not a probe, so not a probe module's command.
constexpr const char* kCheckUsage = R"(  check [-d DIR]... [-h HOST[:PORT]]... [-f HOSTFILE] [-r dsNnM] [-D] [-v]
        [-S SIZE] [-B SIZE] [--duration TIME] [--stream-size N]
        [--api-port PORT] [--net-port PORT] [--token-file FILE]
                      gpcheckperf: disk (d), stream (s) and network (N
                      parallel pairs, n serial pairs, M full matrix) tests
                      on every host, and the RESULT block. Other hosts run
                      them through their hostperf_exporter's run API
                      (PORT, default 9580; token from --token-file or
                      api.token_file); network links run --duration
                      (default 15s, at most 60s) at full speed between
                      the hosts' responders (--net-port, default this
                      config's first probes.net port)
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
  return usage + kCheckUsage + kUsageTail;
}

std::atomic<bool> g_cancel{false};

int Usage(const std::string& message) {
  std::fprintf(stderr, "hostperf: %s\n\n%s", message.c_str(), Usage().c_str());
  return 2;
}

// Runs a probe's full mode: the same code path as the daemon's run API.
hostperf::probes::ProbeOutcome RunFull(const hostperf::probes::ProbeModule& module,
                                       const hostperf::config::Config& config,
                                       std::shared_ptr<const hostperf::probes::ProbeOptions> options,
                                       std::function<void(const nlohmann::json&)> on_report = {}) {
  using namespace hostperf;
  prometheus::Registry registry;  // the CLI exports nothing; probes still register their families
  probes::ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = config::ResolveStateDirectory(config);
  auto probe = module.create(deps);
  exporter::FullRunCallbacks callbacks;
  callbacks.on_report = std::move(on_report);
  return exporter::RunFullProbe(*probe, config, std::move(options), &g_cancel, std::move(callbacks));
}

// A probe's command, with the CLI's full-run path lent to it.
int ProbeCommand(const hostperf::probes::ProbeModule& module, const std::vector<std::string>& args,
                 const hostperf::config::Config& config) {
  const hostperf::probes::CommandContext context{
      config,
      [&](std::shared_ptr<const hostperf::probes::ProbeOptions> options,
          std::function<void(const nlohmann::json&)> on_report) {
        return RunFull(module, config, std::move(options), std::move(on_report));
      },
      [](const std::string& message) { return Usage(message); },
  };
  return module.command.run(args, context);
}

// gpcheckperf: runs the selected tests and prints the RESULT block; exit 1
// when a test failed or could not run.
int CheckCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace check = hostperf::cluster;
  auto parsed = check::ParseCheckArgs(args);
  if (!parsed) return Usage("check: " + parsed.error());
  if (parsed->help) {
    std::fputs(Usage().c_str(), stdout);
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
  if (any_remote) {
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
  const auto run = check::RunCheck(*parsed, run_on, local);
  for (const auto& note : run.notes) std::printf("%s\n", note.c_str());
  if (run.ran) std::fputs(check::FormatCheckResult(run.check, {parsed->per_host, parsed->verbose}).c_str(), stdout);
  for (const auto& error : run.errors) std::fprintf(stderr, "hostperf check: %s\n", error.c_str());
  return run.errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hostperf;
  static constexpr probes::FlagSpec kGlobalFlags[] = {
      probes::Switch("help").Stopping(),
      probes::Switch("version").Stopping(),
      probes::Valued("config.file"),
  };
  // Global flags end at the command; the command parses the rest.
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = probes::ParseFlags(args, {kGlobalFlags, /*stop_at_positional=*/true});
  if (!parsed) return Usage(parsed.error());
  std::optional<std::filesystem::path> config_file;
  for (const probes::FlagValue& flag : parsed->flags) {
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
  if (parsed->positional.empty()) return Usage("no command given");
  const std::string command = parsed->positional.front();
  const std::vector<std::string> rest(parsed->positional.begin() + 1, parsed->positional.end());

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
  return Usage("unknown command \"" + command + "\"");
}
