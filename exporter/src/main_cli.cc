// hostperf: one-shot CLI reproducing the reference tools' options and reports.
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <prometheus/registry.h>
#include <spdlog/spdlog.h>

#include "hostperf/config/config.h"
#include "hostperf/exporter/logging.h"
#include "hostperf/probes/build_info.h"
#include "hostperf/probes/cpu/cpu_probe.h"
#include "hostperf/probes/probe.h"

namespace {

constexpr const char* kUsage = R"(usage: hostperf [--config.file=PATH] COMMAND [options]

Commands:
  cpu [-q] [--json]   vcpuperf: CPU speed against this binary's baseline and
                      low-load throttling (-q: only the four figures;
                      --json: the result as JSON, as the run API returns it)

Global flags:
  --config.file=PATH  config for shared settings (default: /etc/hostperf/hostperf.toml
                      if it exists, else the embedded defaults)
  --help, --version
)";

std::atomic<bool> g_cancel{false};

int Usage(const std::string& message) {
  std::fprintf(stderr, "hostperf: %s\n\n%s", message.c_str(), kUsage);
  return 2;
}

// Runs a probe's full mode: the same code path as the daemon's run API.
hostperf::probes::ProbeOutcome RunFull(std::string_view name, std::shared_ptr<const hostperf::config::Config> config) {
  using namespace hostperf;
  prometheus::Registry registry;  // the CLI exports nothing; probes still register their families
  probes::ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = config::ResolveStateDirectory(*config);
  for (const auto& registration : probes::AllProbes()) {
    if (registration.name != name) continue;
    auto probe = registration.factory(deps);
    probes::RunContext context;
    context.mode = probes::RunMode::kFull;
    context.cancel = &g_cancel;
    context.config = std::move(config);
    return probe->Run(context);
  }
  return probes::ProbeOutcome::Failure("unknown_probe", std::string(name));
}

int CpuCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  bool quiet = false;
  bool json = false;
  for (const auto& arg : args) {
    if (arg == "-q" || arg == "--quiet") {
      quiet = true;
    } else if (arg == "--json") {
      json = true;
    } else if (arg == "-h" || arg == "--help") {
      std::fputs("usage: hostperf cpu [-q] [--json]\n", stdout);
      return 0;
    } else {
      return Usage("cpu: unknown option \"" + arg + "\"");
    }
  }
  const auto outcome = RunFull("cpu", std::move(config));
  if (json) {
    std::printf("%s\n", outcome.result.dump(2).c_str());
  } else if (!outcome.result.empty()) {
    std::fputs(hostperf::probes::cpu::FormatVcpuperfReport(outcome.result, quiet).c_str(), stdout);
  }
  if (outcome.status != hostperf::probes::ProbeOutcome::Status::kSuccess) {
    std::fprintf(stderr, "hostperf cpu: %s: %s\n", outcome.reason.c_str(), outcome.message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hostperf;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::optional<std::filesystem::path> config_file;
  std::size_t i = 0;
  for (; i < args.size() && args[i].rfind("--", 0) == 0; ++i) {
    const std::string& arg = args[i];
    if (arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--version") {
      std::printf("hostperf, version %s (revision: %s, %s %s, fingerprint %s)\n", build_info::kVersion,
                  build_info::kRevision, build_info::kCompiler, build_info::kCompilerVersion, build_info::kFingerprint);
      return 0;
    }
    if (arg.rfind("--config.file=", 0) == 0) {
      config_file = arg.substr(14);
    } else if (arg == "--config.file" && i + 1 < args.size()) {
      config_file = args[++i];
    } else {
      return Usage("unknown flag " + arg);
    }
  }
  if (i == args.size()) return Usage("no command given");
  const std::string command = args[i];
  const std::vector<std::string> rest(args.begin() + static_cast<long>(i) + 1, args.end());

  (void)exporter::SetUpLogging("warn", exporter::LogFormat::kLogfmt);
  if (!config_file && std::filesystem::exists("/etc/hostperf/hostperf.toml")) config_file = "/etc/hostperf/hostperf.toml";
  auto loaded = config_file ? config::LoadFile(*config_file) : Result<config::Config>(config::Defaults());
  if (!loaded) {
    std::fprintf(stderr, "%s\n", loaded.error().c_str());
    return 1;
  }
  auto config = std::make_shared<const config::Config>(std::move(loaded).value());

  struct sigaction action {};
  action.sa_handler = [](int) { g_cancel.store(true); };
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  if (command == "cpu") return CpuCommand(rest, config);
  if (command == "io" || command == "net" || command == "memory" || command == "check") {
    std::fprintf(stderr, "hostperf: \"%s\" is not available in this version yet\n", command.c_str());
    return 2;
  }
  return Usage("unknown command \"" + command + "\"");
}
