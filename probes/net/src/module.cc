#include "hostperf/probes/net/module.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/command.h"
#include "hostperf/probes/net/net_probe.h"
#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/remote.h"
#include "http_peer_check.h"
#include "peer_set.h"
#include "secret_file.h"

namespace hostperf::probes::net {
namespace {

using nlohmann::json;

void DeclareKeys(config::Schema& schema, NetProbeConfig& net) {
  // One key per line reads as a schema.
  // clang-format off
  schema.String("bind_address", &net.bind_address);
  schema.PortList("ports", &net.ports);
  schema.String("secret_file", &net.secret_file);
  schema.StringList("peers", &net.peers);
  schema.String("peers_file", &net.peers_file);
  schema.Bool("allow_empty_peers_file", &net.allow_empty_peers_file);
  schema.String("self", &net.self);
  schema.Uint("observers", &net.observers, 1, 1000);
  schema.Uint("max_peers_per_cycle", &net.max_peers_per_cycle, 1, 10000);
  schema.Uint("packets_per_cycle", &net.packets_per_cycle, 1, 100000);
  schema.Duration("packet_interval", &net.packet_interval, config::kPositive);
  schema.Duration("reply_timeout", &net.reply_timeout, config::kPositive);
  schema.Duration("throughput_duration", &net.throughput_duration, config::kAnyDuration);
  schema.Size("throughput_rate", &net.throughput_rate);
  schema.Uint("udp_datagram_size", &net.udp_datagram_size, 64, 65000);
  schema.Uint("max_connections", &net.max_connections, 1, 100000);
  schema.Uint("rate_limit", &net.rate_limit, 1, 10000000);
  schema.Size("plan_max_rate", &net.plan_max_rate);
  schema.Bool("plan_unlimited_rate", &net.plan_unlimited_rate);
  schema.Duration("plan_max_duration", &net.plan_max_duration, config::kPositive);
  schema.Uint("plan_max_sessions", &net.plan_max_sessions, 1, 65535);
  schema.String("orchestration_public_key_file", &net.orchestration_public_key_file);
  schema.String("orchestration_key_file", &net.orchestration_key_file);
  // clang-format on
}

// How long --config.check waits for the peers' names to resolve.
constexpr std::chrono::seconds kSelfCheckBound{5};

std::vector<std::string> ConfigWarnings(const config::ProbeConfig& section) {
  const auto& net = dynamic_cast<const NetProbeConfig&>(*section.settings);
  if (auto warning = CheckSelfInPeers(net, {}, kSelfCheckBound)) return {std::move(*warning)};
  return {};
}

// The peer entries of `source` that name one of `exporter_ports` (and none
// of the responder's own ports): a list copied from a Prometheus scrape
// config, whose probes would all reach an HTTP server and see every peer down.
void RefuseExporterPorts(const std::vector<std::string>& entries, const std::string& source, const NetProbeConfig& net,
                         const StartFacts& facts, std::vector<std::string>& errors) {
  const std::uint16_t default_port = net.ports.empty() ? kDefaultNetPort : net.ports.front();
  const auto is = [](const std::vector<std::uint16_t>& ports, std::uint16_t port) {
    return std::find(ports.begin(), ports.end(), port) != ports.end();
  };
  for (const std::string& entry : entries) {
    const auto spec = ParsePeerSpec(entry, default_port);
    if (!spec || !is(facts.exporter_ports, spec->port) || is(net.ports, spec->port)) continue;
    errors.push_back(source + " names \"" + spec->name + "\", on port " + std::to_string(spec->port) +
                     ", the exporter's HTTP port: list the peers' responder addresses instead (host, or host:port "
                     "with a port of their probes.net.ports, default " +
                     std::to_string(kDefaultNetPort) + "), not Prometheus scrape targets");
    return;  // one line is enough: a copied scrape config names them all
  }
}

// Peer entries that answer HTTP (a node_exporter or another scrape target on
// a port of its own): a sample of the list is asked, since a copied scrape
// config names every host on the same port. A peer down at start is fine.
constexpr std::size_t kHttpCheckSample = 8;
constexpr std::chrono::milliseconds kHttpCheckBound{2000};
void RefuseHttpPeers(const NetProbeConfig& net, const std::vector<std::string>& file_targets,
                     std::vector<std::string>& errors) {
  const std::uint16_t default_port = net.ports.empty() ? kDefaultNetPort : net.ports.front();
  std::vector<PeerSpec> specs;
  for (const auto* entries : {&net.peers, &file_targets}) {
    for (const std::string& entry : *entries) {
      if (auto spec = ParsePeerSpec(entry, default_port)) specs.push_back(std::move(spec).value());
    }
  }
  const auto http = PeersAnsweringHttp(specs, kHttpCheckSample, kHttpCheckBound);
  if (http.empty()) return;
  errors.push_back("the peer list names \"" + http.front().name + "\", whose port " +
                   std::to_string(http.front().port) +
                   " answers HTTP: list the peers' responder addresses instead (host, or host:port with a port of "
                   "their probes.net.ports, default " +
                   std::to_string(kDefaultNetPort) + "), not HTTP endpoints such as scrape targets");
}

// What the daemon refuses at start: a secret or key file it cannot use (the
// responder would run without it) and peers on the exporter's HTTP port.
std::vector<std::string> ConfigErrors(const config::ProbeConfig& section, const StartFacts& facts) {
  const auto& net = dynamic_cast<const NetProbeConfig&>(*section.settings);
  std::vector<std::string> errors;
  if (!net.secret_file.empty()) {
    if (auto secret = ReadSecretFile(net.secret_file); !secret) errors.push_back(secret.error());
  }
  if (!net.orchestration_public_key_file.empty()) {
    if (auto key = ReadOrchestrationPublicKeyFile(net.orchestration_public_key_file); !key) {
      errors.push_back(key.error());
    }
  }
  if (!net.orchestration_key_file.empty()) {
    if (auto key = OrchestrationKey::FromPemFile(net.orchestration_key_file); !key) errors.push_back(key.error());
  }
  if (facts.listen_port != 0 && std::find(net.ports.begin(), net.ports.end(), facts.listen_port) != net.ports.end()) {
    errors.push_back("ports names " + std::to_string(facts.listen_port) +
                     ", the port the exporter listens on (--web.listen-address): the responder needs ports of its "
                     "own (default " +
                     std::to_string(kDefaultNetPort) + ")");
  }
  if (!section.schedule.enabled) return errors;
  RefuseExporterPorts(net.peers, "peers", net, facts, errors);
  std::vector<std::string> file_targets;
  if (!net.peers_file.empty()) {
    // An unreadable or invalid file is data at run time (counted, the last
    // good list kept); a readable one listing scrape targets is a mistake.
    PeersFile file;
    if (file.Refresh(net.peers_file, true)) {
      file_targets = file.targets();
      RefuseExporterPorts(file_targets, "peers_file (" + net.peers_file + ")", net, facts, errors);
    }
  }
  if (errors.empty()) RefuseHttpPeers(net, file_targets, errors);
  return errors;
}

config::SectionSchema Section() {
  return config::DescribeSection<NetProbeConfig>("net", {true, 30s, 20s}, DeclareKeys);
}

// Bare hosts: hostperf-peer started over SSH for this run, with credentials
// made for it (stopped and removed when `remote` goes, on every path out);
// `options` then name the hosts it started on. An exit code when the run
// cannot go on.
std::optional<int> StartRemote(const NetCommand& command, const CommandContext& context, NetOptions& options,
                               std::unique_ptr<RemotePeers>& remote) {
  RemoteOptions remote_options = *command.remote;
  if (!remote_options.installed) {
    auto program = FindPeerProgram();
    if (!program) {
      std::fprintf(stderr, "%s: %s\n", CommandLabel("net").c_str(), program.error().c_str());
      return 1;
    }
    remote_options.peer_program = std::move(program).value();
  }
  // Each host gets a secret of its own; only this CLI holds them all and
  // the run's private key (plans).
  auto credentials = MakeRunCredentials(command.remote_hosts.size());
  if (!credentials) {
    std::fprintf(stderr, "%s: %s\n", CommandLabel("net").c_str(), credentials.error().c_str());
    return 1;
  }
  std::vector<std::string> peer_inputs;
  for (std::size_t i = 0; i < command.remote_hosts.size(); ++i) peer_inputs.push_back(PeerInput(*credentials, i));
  remote = StartRemotePeers(
      command.remote_hosts, remote_options, peer_inputs, context.cancelled,
      [](const std::string& line) { std::fprintf(stderr, "%s: %s\n", CommandLabel("net").c_str(), line.c_str()); });
  std::vector<std::string> targets;
  std::string bad;
  for (const RemoteHost& host : remote->hosts()) {
    if (!host.error.empty()) {
      std::printf("Host %s is not usable: %s\n", host.destination.c_str(), host.error.c_str());
      bad = bad.empty() ? host.destination : bad;
    } else {
      targets.push_back(host.target);
    }
  }
  for (std::size_t i = 0; i < remote->hosts().size(); ++i) {
    const RemoteHost& host = remote->hosts()[i];
    if (host.error.empty()) options.host_secrets[host.target] = credentials->host_secrets[i];
  }
  std::fflush(stdout);
  if (context.cancelled()) return 130;
  if (!bad.empty() && !options.ignore_bad_hosts) {
    std::fprintf(stderr,
                 "%s: bad_hosts: cannot start hostperf-peer on %s (use --ignore-bad-hosts to "
                 "test the others)\n",
                 CommandLabel("net").c_str(), bad.c_str());
    return 1;
  }
  if (targets.empty()) {
    std::fprintf(stderr, "%s: no_hosts: hostperf-peer started on no host\n", CommandLabel("net").c_str());
    return 1;
  }
  options.hosts = targets;
  options.ports = remote_options.ports;
  options.orchestration_key = credentials->orchestration_key;
  return std::nullopt;
}

// After the run: the JSON document (--json) or the tables' end, then the
// results file and where it is.
int FinishCommand(const NetCommand& command, VnetperfStream& stream, const ProbeOutcome& outcome) {
  if (command.json) {
    PrintJsonResult(outcome);
    if (command.output_file.empty()) return CommandExitCode("net", outcome);
  } else {
    std::fputs(stream.Finish(outcome.result).c_str(), stdout);
  }
  const std::string file = command.output_file.empty() ? DefaultResultsFileName() : command.output_file;
  json results = outcome.result;
  if (outcome.status != ProbeOutcome::Status::kSuccess) {
    results["error"] = {{"reason", outcome.reason}, {"message", outcome.message}};
  }
  if (const auto written = WriteResultsFile(file, results, command.condense); !written) {
    std::fprintf(stderr, "%s: %s\n", CommandLabel("net").c_str(), written.error().c_str());
    return 1;
  }
  // With --json, stdout holds the document alone.
  std::fprintf(command.json ? stderr : stdout, "JSON results available at: %s\n", file.c_str());
  return CommandExitCode("net", outcome);
}

// vnetperf: banners and tables, then the JSON results file and where it is;
// non-zero exit with the reason when hosts are unreachable or a test failed.
int Command(const std::vector<std::string>& args, const CommandContext& context) {
  // No secret to reach hostperf daemons with: vnetperf's way, over SSH.
  const bool ssh_by_default = context.config.Settings<NetProbeConfig>().secret_file.empty();
  auto parsed = ParseNetCommand(args, ssh_by_default);
  if (!parsed) return context.usage_error(parsed.error());
  const NetCommand& command = parsed.value();
  // The connections test holds many connections at once: the soft limit on
  // open files (often 1024) must not be what it measures.
  RaiseOpenFileLimit();
  if (command.help) {
    std::fputs(kNetUsage, stdout);
    return 0;
  }
  if (command.list_tests) {
    for (const auto& test : FullRunTests()) std::printf("%s\n", test.c_str());
    return 0;
  }
  spdlog::set_level(spdlog::level::from_str(command.log_level));
  NetOptions options = command.options;
  std::unique_ptr<RemotePeers> remote;
  if (command.remote) {
    if (const auto stopped = StartRemote(command, context, options, remote)) return *stopped;
  }
  // Tables: each host's row as its test ends (vnetperf prints as it goes).
  VnetperfStream stream;
  std::function<void(const json&)> on_report;
  if (!command.json) {
    on_report = [&stream](const json& entry) {
      std::fputs(stream.Entry(entry).c_str(), stdout);
      std::fflush(stdout);
    };
  }
  const auto outcome = context.run_full(std::make_shared<NetOptions>(std::move(options)), std::move(on_report));
  if (remote) remote->Stop();
  return FinishCommand(command, stream, outcome);
}

Figure Rtt(std::string subject, double seconds) {
  return {"rtt_seconds",
          std::move(subject),
          "RTT",
          seconds,
          FormatNumber("%.0f µs", seconds / kMicro),
          "pass ≤ 200 µs, warn ≤ 1000 µs",
          AtMost(seconds, 200e-6, 1000e-6)};
}

Figure ClockOffset(std::string subject, double seconds) {
  return {"clock_offset_seconds",
          std::move(subject),
          "clock skew",
          seconds,
          FormatNumber("%.6f s", seconds),
          "pass < 1 s",
          std::abs(seconds) < 1 ? Verdict::kPass : Verdict::kFail};
}

// `capped_mb`: the rate limit the figure was measured under (0: none).
Figure TcpThroughput(std::string subject, double mb_per_second, double capped_mb) {
  Figure figure{"tcp_throughput_bytes_per_second",
                std::move(subject),
                "TCP throughput",
                mb_per_second * kReferenceMB,
                FormatNumber("%.1f MB/s", mb_per_second),
                "pass ≥ 800 MB/s, warn ≥ 100 MB/s",
                AtLeast(mb_per_second, 800, 100)};
  if (capped_mb > 0 && capped_mb < 800) {
    figure.threshold = "rate-capped at " + FormatNumber("%.0f", capped_mb) + " MB/s: thresholds need a full run";
    figure.verdict = Verdict::kInfo;
  }
  return figure;
}

}  // namespace

std::vector<Figure> NetFigures(const json& result) {
  std::vector<Figure> out;
  // Scheduled: one entry per peer and one throughput burst. Down and
  // unresolved peers are shown as such, after a count of them, rather than
  // left out (3 of 4 peers down must not read as one healthy peer).
  const auto& peers = ArrayField(result, "peers");
  std::vector<Figure> down;
  std::size_t total = 0;
  for (const json& peer : peers) {
    if (!peer.is_object() || !peer.contains("up") || !peer["up"].is_boolean()) continue;
    ++total;
    const std::string name = TextField(peer, "peer");
    if (peer["up"] != true) {
      const std::string error = TextField(peer, "error");
      down.push_back({"peer_up", name, "peer", 0, error.empty() ? "down (no reply)" : "unresolved: " + error,
                      "pass: answers pings", Verdict::kFail});
      continue;
    }
    if (const auto rtt = NumberField(peer, "rtt_median_seconds")) out.push_back(Rtt(name, *rtt));
    if (const auto offset = NumberField(peer, "clock_offset_seconds")) out.push_back(ClockOffset(name, *offset));
  }
  if (total > 0) {
    const std::string shown =
        std::to_string(down.size()) + " of " + std::to_string(total) + (total == 1 ? " peer down" : " peers down");
    out.insert(out.begin(), Figure{"peers_down", "", "peers", static_cast<double>(down.size()), shown,
                                   "pass: none down", down.empty() ? Verdict::kPass : Verdict::kFail});
    out.insert(out.begin() + 1, down.begin(), down.end());
  }
  if (const auto it = result.find("throughput"); it != result.end() && TextField(*it, "test") == "tcp-throughput") {
    if (const auto rate = NumberField(*it, "mb_per_second_received")) {
      out.push_back(
          TcpThroughput(TextField(*it, "node"), *rate, NumberField(*it, "rate_limit_mb_per_second").value_or(0)));
    }
  }
  // Full: vnetperf's tables.
  const json tests = result.is_object() ? result.value("tests", json::object()) : json::object();
  for (const json& row : ArrayField(tests, "latency")) {
    const std::string node = TextField(row, "node");
    if (const auto rtt = NumberField(row, "rtt_latency_us")) out.push_back(Rtt(node, *rtt * kMicro));
    if (const auto skew = NumberField(row, "clock_skew_us")) out.push_back(ClockOffset(node, *skew * kMicro));
  }
  std::map<std::string, double> best;  // per node, over the rate ladder
  for (const json& row : ArrayField(tests, "tcp-throughput")) {
    const std::string node = TextField(row, "node");
    const auto rate = NumberField(row, "mb_per_second_received");
    if (node.empty() || node == "average" || !rate) continue;
    best[node] = std::max(best[node], *rate);
  }
  for (const auto& [node, rate] : best) out.push_back(TcpThroughput(node, rate, 0));
  return out;
}

const ProbeModule kModule = {
    .name = "net",
    .create = &CreateNetProbe,
    .config_section = &Section,
    .parse_options = &ParseNetModuleOptions,
    .figures = &NetFigures,
    .command = {"net",
                "  net [vnetperf options] [TEST...]\n"
                "                      vnetperf: latency, clock skew, TCP/UDP throughput and\n"
                "                      connection limit against peers (hostperf net --help)\n",
                &Command, "vnetperf"},
    .failure_reasons = {"no_secret", "responder_down", "all_peers_down"},
    .skip_reasons = {"no_peers"},
    .config_warnings = &ConfigWarnings,
    .config_errors = &ConfigErrors,
};

}  // namespace hostperf::probes::net
