#include "hostperf/cluster/check_ssh.h"

#include <elf.h>
#include <link.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "hostperf/base/files.h"
#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/net/remote.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::cluster {
namespace {

using nlohmann::json;
namespace net = probes::net;
namespace fs = std::filesystem;

constexpr const char* kAgentUsage = R"(usage: hostperf check-agent PROBE

Runs on each host of `hostperf check --ssh` (copied there with the libraries
it needs; not meant to be started by hand): reads PROBE's full-run options as
one JSON line on standard input, runs its full mode and prints the outcome as
one JSON line on standard output: {"status", "reason", "message", "result"}.
Standard input closing stops the run (the CLI that started it went away).

  --help   this help
)";

// The options line an agent reads: a full run's options are a few hundred
// bytes; a megabyte is room for any host list to come.
constexpr std::size_t kMaxAgentInput = 1 << 20;
// What an agent may print: one outcome (a disk result with its rows is tens
// of kilobytes).
constexpr std::size_t kMaxAgentOutput = 4 << 20;
// How long a host's test may take (the run API client's run_timeout).
constexpr std::chrono::hours kAgentTimeout{4};
// Full speed for a link, as netperf runs: hostperf-peer's plan_max_rate.
constexpr std::uint64_t kFullSpeedBytesPerSecond = 100000ull << 20;

// One line from standard input, at most kMaxAgentInput bytes; nullopt
// when it ends first or is longer.
std::optional<std::string> ReadInputLine() {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    if (c == '\n') return line;
    if (line.size() >= kMaxAgentInput) return std::nullopt;
    line.push_back(c);
  }
}

void PrintOutcome(const probes::ProbeOutcome& outcome) {
  const json out = {{"status", std::string(probes::ToString(outcome.status))},
                    {"reason", outcome.reason},
                    {"message", outcome.message},
                    {"result", outcome.result}};
  std::printf("%s\n", out.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

// The objects the loader has mapped for this process.
struct LoadedObjects {
  std::vector<std::string> paths;  // absolute, as the loader opened them
  std::string interpreter;         // the main program's PT_INTERP
};

int CollectLoaded(dl_phdr_info* info, std::size_t, void* data) {
  auto* loaded = static_cast<LoadedObjects*>(data);
  const std::string name = info->dlpi_name == nullptr ? "" : info->dlpi_name;
  if (name.empty()) {
    // The main program: its interpreter names the loader.
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      if (info->dlpi_phdr[i].p_type == PT_INTERP) {
        loaded->interpreter = reinterpret_cast<const char*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
      }
    }
  } else if (name.front() == '/') {
    loaded->paths.push_back(name);  // not the vDSO, which has no file
  }
  return 0;
}

class SshCheckHostsImpl final : public SshCheckHosts {
 public:
  SshCheckHostsImpl(const CheckOptions& options, AgentBundle bundle, net::RunCredentials credentials,
                    std::function<bool()> cancelled)
      : options_(options),
        bundle_(std::move(bundle)),
        credentials_(std::move(credentials)),
        cancelled_(std::move(cancelled)) {}

  void Start(net::RemoteOptions remote, const std::function<void(const std::string&)>& progress) {
    std::vector<std::string> inputs;
    for (std::size_t i = 0; i < options_.hosts.size(); ++i) inputs.push_back(net::PeerInput(credentials_, i));
    peers_ = net::StartRemotePeers(options_.hosts, std::move(remote), inputs, cancelled_, progress);
    targets_.resize(options_.hosts.size());
    for (std::size_t i = 0; i < peers_->hosts().size(); ++i) {
      const net::RemoteHost& host = peers_->hosts()[i];
      if (!host.error.empty()) {
        unusable_.push_back("Host " + host.destination + " is not usable: " + host.error);
        continue;
      }
      const auto colon = host.target.rfind(':');
      const auto port = static_cast<std::uint16_t>(std::stoul(host.target.substr(colon + 1)));
      auto address = net::ResolveHost(host.target.substr(0, colon), port);
      if (!address) {
        unusable_.push_back("Host " + host.destination + " is not usable: " + address.error());
        continue;
      }
      targets_[i] = net::PeerTarget{host.destination, *address, credentials_.host_secrets[i]};
    }
  }

  const std::vector<std::string>& unusable() const override { return unusable_; }

  HostRunner host_runner() override {
    return [this](const std::string& host, std::string_view probe, const json& options) {
      return RunAgent(host, probe, options);
    };
  }

  RoundRunner round_runner() override {
    return [this](const NetworkLinks& links, double seconds) { return MeasureRound(links, seconds); };
  }

 private:
  std::optional<std::size_t> IndexOf(const std::string& host) const {
    const auto found = std::find(options_.hosts.begin(), options_.hosts.end(), host);
    if (found == options_.hosts.end()) return std::nullopt;
    return static_cast<std::size_t>(found - options_.hosts.begin());
  }

  probes::ProbeOutcome RunAgent(const std::string& host, std::string_view probe, const json& options) const {
    using probes::ProbeOutcome;
    const auto index = IndexOf(host);
    if (!index || !targets_[*index]) return ProbeOutcome::Failure("remote_unreachable", host + ": not started");
    const std::string command = AgentCommandLine(bundle_, peers_->hosts()[*index].directory, probe);
    const net::RemoteCommandResult ran =
        peers_->RunOnHost(*index, command, options.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                          kAgentTimeout, cancelled_, kMaxAgentOutput);
    if (!ran.error.empty()) {
      return ProbeOutcome::Failure(ran.error == "cancelled" ? "cancelled" : "remote_error", host + ": " + ran.error);
    }
    json outcome = json::value_t::discarded;
    if (JsonDepthError(ran.out, kMaxStoredJsonDepth).empty()) outcome = json::parse(ran.out, nullptr, false);
    if (!outcome.is_object() || !outcome.contains("status") || !outcome["status"].is_string()) {
      const std::string said = net::LastLineOf(ran.err.empty() ? ran.out : ran.err);
      return ProbeOutcome::Failure("remote_error", "the agent on " + host + " ended with status " +
                                                       std::to_string(ran.status.value_or(-1)) +
                                                       (said.empty() ? "" : ": " + said));
    }
    ProbeOutcome out = probes::OutcomeFromJson(outcome);
    if (outcome.contains("result") && outcome["result"].is_object()) out.result = std::move(outcome["result"]);
    return out;
  }

  // Each pair of the round (a link and its reverse) under a plan of its
  // own, the pairs at once: a host that fails costs only its own pair.
  std::vector<LinkMeasurement> MeasureRound(const NetworkLinks& links, double seconds) const {
    std::vector<LinkMeasurement> measured(links.size());
    std::vector<std::vector<std::size_t>> pairs;  // indexes into links
    std::vector<bool> placed(links.size(), false);
    for (std::size_t i = 0; i < links.size(); ++i) {
      if (placed[i]) continue;
      placed[i] = true;
      pairs.push_back({i});
      for (std::size_t j = i + 1; j < links.size(); ++j) {
        if (!placed[j] && links[j].first == links[i].second && links[j].second == links[i].first) {
          placed[j] = true;
          pairs.back().push_back(j);
          break;
        }
      }
    }
    std::vector<std::thread> threads;
    for (const auto& pair : pairs) {
      threads.emplace_back([&, pair] {
        const auto results = MeasurePair(links, pair, seconds);
        for (std::size_t k = 0; k < pair.size(); ++k) measured[pair[k]] = results[k];
      });
    }
    for (std::thread& thread : threads) thread.join();
    return measured;
  }

  std::vector<LinkMeasurement> MeasurePair(const NetworkLinks& links, const std::vector<std::size_t>& pair,
                                           double seconds) const {
    std::vector<LinkMeasurement> measured(pair.size());
    std::vector<net::PeerTarget> hosts;
    std::vector<std::pair<std::size_t, std::size_t>> planned;
    const auto host_index = [&](const std::string& host) -> std::optional<std::size_t> {
      const auto index = IndexOf(host);
      if (!index || !targets_[*index]) return std::nullopt;
      for (std::size_t h = 0; h < hosts.size(); ++h) {
        if (hosts[h].name == host) return h;
      }
      hosts.push_back(*targets_[*index]);
      return hosts.size() - 1;
    };
    for (const std::size_t i : pair) {
      const auto from = host_index(links[i].first);
      const auto to = host_index(links[i].second);
      if (!from || !to) {
        for (LinkMeasurement& m : measured) m.error = (from ? links[i].second : links[i].first) + " is not usable";
        return measured;
      }
      planned.emplace_back(*from, *to);
    }
    net::AllToAllOptions plan;
    plan.test = net::ThroughputTest::kTcp;
    plan.duration = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(seconds));
    plan.rate_bytes_per_second = kFullSpeedBytesPerSecond;
    plan.connect_timeout = std::chrono::seconds(3);
    plan.orchestration_key = credentials_.orchestration_key.get();
    // Each target carries its host's own secret: no shared one.
    const auto results = net::RunPlanLinks(hosts, planned, plan, no_shared_secret_, cancelled_);
    for (std::size_t k = 0; k < pair.size(); ++k) {
      if (results[k].ok) {
        measured[k].bytes_per_second = results[k].SentBytesPerSecond();
      } else {
        measured[k].error = results[k].error;
      }
    }
    return measured;
  }

  const CheckOptions options_;
  const AgentBundle bundle_;
  const net::RunCredentials credentials_;
  const std::function<bool()> cancelled_;
  const net::Secret no_shared_secret_;
  std::unique_ptr<net::RemotePeers> peers_;
  std::vector<std::optional<net::PeerTarget>> targets_;  // by host; none: not started
  std::vector<std::string> unusable_;
};

}  // namespace

int CheckAgentCommand(const std::vector<std::string>& args, const CheckCommandContext& context) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::fputs(kAgentUsage, stdout);
    return 0;
  }
  if (args.size() != 1 || args[0].starts_with("-")) {
    return context.usage_error(args.empty() ? "no probe given" : "expected one probe name, not \"" + args[0] + "\"");
  }
  const std::string& probe = args[0];
  const probes::ProbeModule* module = probes::FindProbe(probe);
  if (module == nullptr) return context.usage_error("unknown probe \"" + probe + "\"");
  const auto line = ReadInputLine();
  if (!line) {
    PrintOutcome(probes::ProbeOutcome::Failure(
        "bad_options", "no options line on standard input (one JSON object, at most 1 MiB, then a newline)"));
    return 1;
  }
  json options = json::value_t::discarded;
  if (JsonDepthError(*line).empty()) options = json::parse(*line, nullptr, false);
  if (!options.is_object()) {
    PrintOutcome(probes::ProbeOutcome::Failure("bad_options", "the options line is not a JSON object"));
    return 1;
  }
  auto typed = probes::ParseProbeOptions(probe, options);
  if (!typed) {
    PrintOutcome(probes::ProbeOutcome::Failure(typed.failure()));
    return 1;
  }
  // The end of standard input: the CLI (or its SSH session) went away. The
  // run stops as on Ctrl-C, and cleans up as it does then.
  std::thread([] {
    char c = 0;
    while (true) {
      const ssize_t n = ::read(STDIN_FILENO, &c, 1);
      if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
    ::kill(::getpid(), SIGTERM);
  }).detach();
  PrintOutcome(context.run_local(*module, std::move(typed).value()));
  return 0;
}

Result<AgentBundle> FindAgentBundle() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return Failure{"no_agent", "cannot find this program: " + ec.message()};
  LoadedObjects loaded;
  dl_iterate_phdr(CollectLoaded, &loaded);
  AgentBundle bundle;
  bundle.program = self.filename().string();
  bundle.files.push_back(self.string());
  std::set<std::string> names{bundle.program};
  for (const std::string& path : loaded.paths) {
    const std::string name = fs::path(path).filename().string();
    if (!names.insert(name).second) continue;  // the loader appears as the interpreter too
    bundle.files.push_back(path);
  }
  if (!loaded.interpreter.empty()) {
    bundle.loader = fs::path(loaded.interpreter).filename().string();
    if (names.insert(bundle.loader).second) bundle.files.push_back(loaded.interpreter);
  }
  return bundle;
}

std::string AgentCommandLine(const AgentBundle& bundle, const std::string& directory, std::string_view probe) {
  const auto in = [&](const std::string& name) { return net::ShellQuote(directory + "/" + name); };
  // STATE_DIRECTORY: one that does not exist, so that a run records
  // nothing on the host (a disk run records its scratch files only in a
  // state directory that exists). The agent's own clean-up is its stop on
  // standard input's end; hostperf-peer removes the copy's directory, which
  // must hold only the files copied there.
  std::string line = "STATE_DIRECTORY=" + net::ShellQuote(directory + "/no-state") + " exec ";
  if (!bundle.loader.empty()) line += in(bundle.loader) + " --library-path " + net::ShellQuote(directory) + " ";
  return line + in(bundle.program) + " " + std::string(kCheckAgentCommandName) + " " +
         net::ShellQuote(std::string(probe));
}

Result<std::unique_ptr<SshCheckHosts>> StartSshCheckHosts(const CheckOptions& options,
                                                          const std::function<bool()>& cancelled,
                                                          const std::function<void(const std::string&)>& progress) {
  auto bundle = FindAgentBundle();
  if (!bundle) return bundle.failure();
  auto peer = net::FindPeerProgram();
  if (!peer) return peer.failure();
  auto credentials = net::MakeRunCredentials(options.hosts.size());
  if (!credentials) return credentials.failure();
  net::RemoteOptions remote;
  remote.identity_file = options.identity_file;
  remote.ssh_options = options.ssh_options;
  remote.scp_options = options.scp_options;
  remote.tmp_dir = options.tmp_dir;
  remote.peer_program = std::move(peer).value();
  remote.extra_files = bundle->files;
  if (options.net_port != 0) remote.ports = {options.net_port};
  auto hosts = std::make_unique<SshCheckHostsImpl>(options, std::move(bundle).value(), std::move(credentials).value(),
                                                   cancelled);
  hosts->Start(std::move(remote), progress);
  return std::unique_ptr<SshCheckHosts>(std::move(hosts));
}

}  // namespace hostperf::cluster
