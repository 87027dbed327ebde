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
#include "hostperf/probes/cpu/cpu_probe.h"
#include "hostperf/probes/disk/disk_probe.h"
#include "hostperf/probes/disk/options.h"
#include "hostperf/probes/host_facts.h"
#include "hostperf/probes/memory/memory_probe.h"
#include "hostperf/probes/net/command.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/probe.h"
#include "hostperf/runs/full_run.h"
#include "hostperf/runs/run_api.h"

namespace {

constexpr const char* kUsage = R"(usage: hostperf [--config.file=PATH] COMMAND [options]

Commands:
  cpu [-q] [--json]   vcpuperf: CPU speed against this binary's baseline and
                      low-load throttling (-q: only the four figures;
                      --json: the result as JSON, as the run API returns it)
  io [vioperf options] [DIR...]
                      vioperf: Write, ReWrite, Read and SkipRead per directory,
                      CRC32C-verified (hostperf io --help for the options)
  memory [-s N] [-n N] [-t N] [--json]
                      STREAM: copy, scale, add and triad bandwidth, one thread
                      per physical core (hostperf memory --help)
  check [-d DIR]... [-h HOST[:PORT]]... [-f HOSTFILE] [-r dsNnM] [-D] [-v]
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
  net [vnetperf options] [TEST...]
                      vnetperf: latency, clock skew, TCP/UDP throughput and
                      connection limit against peers (hostperf net --help)

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
hostperf::probes::ProbeOutcome RunFull(std::string_view name, std::shared_ptr<const hostperf::config::Config> config,
                                       nlohmann::json options = nullptr,
                                       std::function<void(const nlohmann::json&)> on_report = {}) {
  using namespace hostperf;
  prometheus::Registry registry;  // the CLI exports nothing; probes still register their families
  probes::ProbeDeps deps;
  deps.registry = &registry;
  deps.state_directory = config::ResolveStateDirectory(*config);
  const probes::ProbeRegistration* registration = exporter::FindProbeRegistration(name);
  if (registration == nullptr) return probes::ProbeOutcome::Failure("unknown_probe", std::string(name));
  auto probe = registration->factory(deps);
  exporter::FullRunCallbacks callbacks;
  callbacks.on_report = std::move(on_report);
  return exporter::RunFullProbe(*probe, std::move(config), std::move(options), &g_cancel, std::move(callbacks));
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

// vioperf: banner, direct I/O line per directory, table rows as they come,
// JSON log at the end; non-zero exit with the reason when a directory fails.
int IoCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace disk = hostperf::probes::disk;
  auto parsed = disk::ParseIoCommand(args);
  if (!parsed) return Usage("io: " + parsed.error());
  const disk::IoCommand& command = parsed.value();
  if (command.help) {
    std::fputs(disk::kIoUsage, stdout);
    return 0;
  }
  nlohmann::json options = command.options;
  // --debug: the engine logs every file, test and bad block at info level.
  if (options.value("debug", false)) spdlog::set_level(spdlog::level::debug);
  // vioperf tests the current directory when none is given.
  if (!options.contains("directories")) options["directories"] = {std::filesystem::current_path().string()};
  const std::string log_file = command.log_file.empty() ? disk::DefaultLogFileName() : command.log_file;
  std::fputs(disk::FormatVioperfBanner(hostperf::probes::ReadCpuTopology({}).physical_cores).c_str(), stdout);
  bool header_printed = false;
  const auto outcome = RunFull("disk", std::move(config), std::move(options), [&](const nlohmann::json& entry) {
    const std::string kind = entry.value("kind", "");
    if (kind == "directory") std::fputs(disk::FormatDirectoryLine(entry).c_str(), stdout);
    if (kind == "row") {
      if (!header_printed) std::fputs(("\n" + disk::FormatTableHeader()).c_str(), stdout);
      header_printed = true;
      std::fputs(disk::FormatTableRow(entry).c_str(), stdout);
    }
    std::fflush(stdout);
  });
  const bool ok = outcome.status == hostperf::probes::ProbeOutcome::Status::kSuccess;
  if (const auto written =
          disk::WriteJsonLog(log_file, outcome.result, outcome.reason, outcome.message, command.condense_log);
      !written) {
    std::fprintf(stderr, "hostperf io: %s\n", written.error().c_str());
    if (ok) return 1;
  }
  if (!ok) {
    std::fprintf(stderr, "hostperf io: %s: %s\n", outcome.reason.c_str(), outcome.message.c_str());
    return 1;
  }
  return 0;
}

// STREAM's report (or the JSON result); non-zero exit with the reason when
// the run failed, e.g. validation_failed.
int MemoryCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace memory = hostperf::probes::memory;
  auto parsed = memory::ParseMemoryCommand(args);
  if (!parsed) return Usage("memory: " + parsed.error());
  if (parsed->help) {
    std::fputs(memory::kMemoryUsage, stdout);
    return 0;
  }
  const auto outcome = RunFull("memory", std::move(config), parsed->options);
  if (parsed->json) {
    std::printf("%s\n", outcome.result.dump(2).c_str());
  } else if (!outcome.result.empty()) {
    std::fputs(memory::FormatStreamReport(outcome.result).c_str(), stdout);
  }
  if (outcome.status != hostperf::probes::ProbeOutcome::Status::kSuccess) {
    std::fprintf(stderr, "hostperf memory: %s: %s\n", outcome.reason.c_str(), outcome.message.c_str());
    return 1;
  }
  return 0;
}

// vnetperf: banners and tables, then the JSON results file and where it is;
// non-zero exit with the reason when hosts are unreachable or a test failed.
int NetCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace net = hostperf::probes::net;
  auto parsed = net::ParseNetCommand(args);
  if (!parsed) return Usage("net: " + parsed.error());
  const net::NetCommand& command = parsed.value();
  if (command.help) {
    std::fputs(net::kNetUsage, stdout);
    return 0;
  }
  if (command.list_tests) {
    for (const auto& test : net::FullRunTests()) std::printf("%s\n", test.c_str());
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(command.log_level));
  const auto outcome = RunFull("net", std::move(config), command.options);
  std::fputs(net::FormatVnetperfReport(outcome.result).c_str(), stdout);
  const std::string file = command.output_file.empty() ? net::DefaultResultsFileName() : command.output_file;
  nlohmann::json results = outcome.result;
  if (outcome.status != hostperf::probes::ProbeOutcome::Status::kSuccess) {
    results["error"] = {{"reason", outcome.reason}, {"message", outcome.message}};
  }
  if (const auto written = net::WriteResultsFile(file, results, command.condense); !written) {
    std::fprintf(stderr, "hostperf net: %s\n", written.error().c_str());
    return 1;
  }
  std::printf("JSON results available at: %s\n", file.c_str());
  if (outcome.status != hostperf::probes::ProbeOutcome::Status::kSuccess) {
    std::fprintf(stderr, "hostperf net: %s: %s\n", outcome.reason.c_str(), outcome.message.c_str());
    return 1;
  }
  return 0;
}

// gpcheckperf: runs the selected tests and prints the RESULT block; exit 1
// when a test failed or could not run.
int CheckCommand(const std::vector<std::string>& args, std::shared_ptr<const hostperf::config::Config> config) {
  namespace check = hostperf::cluster;
  auto parsed = check::ParseCheckArgs(args);
  if (!parsed) return Usage("check: " + parsed.error());
  if (parsed->help) {
    std::fputs(kUsage, stdout);
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
    if (check::IsLocalHost(spec->address, local)) return RunFull(probe, config, options);
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
  if (!config_file && std::filesystem::exists("/etc/hostperf/hostperf.toml"))
    config_file = "/etc/hostperf/hostperf.toml";
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
  if (command == "io") return IoCommand(rest, config);
  if (command == "memory") return MemoryCommand(rest, config);
  if (command == "check") return CheckCommand(rest, config);
  if (command == "net") return NetCommand(rest, config);
  return Usage("unknown command \"" + command + "\"");
}
