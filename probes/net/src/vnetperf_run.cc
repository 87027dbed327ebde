#include "vnetperf_run.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "burst_attribution.h"
#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/plan.h"
#include "result_rows.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

const NetOptions& OptionsOf(const FullRunContext& ctx) {
  static const NetOptions kDefaults;
  const NetOptions* given = ctx.Options<NetOptions>();
  return given != nullptr ? *given : kDefaults;
}

}  // namespace

VnetperfRun::VnetperfRun(const FullRunContext& ctx, ResponderHost& responder, PeerList& peer_list,
                         const SystemRoots& roots, RouteLookup route)
    : ctx_(ctx),
      responder_(responder),
      peer_list_(peer_list),
      roots_(roots),
      options_(OptionsOf(ctx)),
      net_(ctx.Settings<NetProbeConfig>()),
      interfaces_(roots, std::move(route)) {
  if (options_.ports) net_.ports = *options_.ports;
  if (options_.hosts) {
    net_.peers = *options_.hosts;
    net_.peers_file.clear();
  }
  tests_.insert(options_.tests.begin(), options_.tests.end());
  if (tests_.empty()) tests_.insert(FullRunTests().begin(), FullRunTests().end());
}

ProbeOutcome VnetperfRun::Run() {
  // Bare hosts over SSH each hold their own secret (host_secrets) and no
  // shared one: the shared secret is then one nobody holds.
  auto secret = options_.host_secrets.empty() ? responder_.ClientSecret(net_) : Result<Secret>(RandomSecret());
  if (!secret) return ProbeOutcome::Failure(secret.failure());
  secret_ = std::move(secret).value();
  if (options_.orchestration_key) {
    orchestration_key_ = options_.orchestration_key;
  } else if (!net_.orchestration_key_file.empty()) {
    auto key = OrchestrationKey::FromPemFile(net_.orchestration_key_file);
    if (!key) return ProbeOutcome::Failure(key.failure());
    orchestration_key_ = std::make_shared<const OrchestrationKey>(std::move(key).value());
  }
  json result = {{"mode", "full"}, {"date", VnetperfDate()}, {"tests", json::object()}, {"bad_hosts", json::array()}};
  Hosts hosts;
  RemoteMtus remote_mtus;
  if (auto stop = FindHosts(result, hosts, remote_mtus)) return std::move(*stop);
  PlanProgress(hosts.size());
  result["interfaces"] = Interfaces(hosts, remote_mtus);
  if (tests_.contains("latency")) {
    Progress("latency with " + std::to_string(hosts.size()) + " hosts", true);
    result["tests"]["latency"] = LatencyTable(hosts);
  }
  for (const char* test : {"tcp-throughput", "udp-throughput"}) {
    if (!tests_.contains(test)) continue;
    result["tests"][test] = ThroughputLadder(OnTestPort(hosts, test), test);
  }
  result["findings"] = findings_;
  if (tests_.contains("connections")) {
    Progress("connections", /*slot=*/false);
    result["tests"]["connections"] = ConnectionTable(hosts);
  }
  if (ctx_.ShouldStop()) {
    return ProbeOutcome::Failure(ctx_.Cancelled() ? "cancelled" : "timeout", "net run stopped", result);
  }
  if (!unmeasured_.empty() && !options_.ignore_bad_hosts) {
    return ProbeOutcome::Failure("bad_hosts", unmeasured_ + " (use --ignore-bad-hosts to accept the others' figures)",
                                 result);
  }
  return ProbeOutcome::Success(result);
}

// A responder that does not listen on vnetperf's second or third port (a
// daemon with one probes.net port, tested with `--ports 14159`) refuses the
// connection at once; a filtered port costs this bound.
constexpr auto kTestPortHelloTimeout = std::chrono::milliseconds(500);

void VnetperfRun::ProbeTestPorts(const std::string& name, const SocketAddress& address) {
  if (net_.ports.size() < 3 || address.port() != net_.ports.front()) return;
  if (!tests_.contains("tcp-throughput") && !tests_.contains("udp-throughput")) return;
  for (const std::uint16_t port : {net_.ports[1], net_.ports[2]}) {
    SocketAddress other = address;
    other.set_port(port);
    if (Hello(other, SecretFor(name), kTestPortHelloTimeout)) {
      answering_ports_.emplace(name, port);
    } else {
      spdlog::info("net: {} does not answer on port {}: its throughput test uses port {}", name, port, address.port());
    }
  }
}

// vnetperf's three ports: latency and connections on the first, TCP
// throughput on the second, UDP throughput on the third, where the host's
// responder listens on them (ProbeTestPorts). Hosts reached on another port
// (an explicit :port) keep it; with fewer than three ports every test uses
// the first.
Hosts VnetperfRun::OnTestPort(const Hosts& hosts, const std::string& test) const {
  if (net_.ports.size() < 3) return hosts;
  const std::uint16_t port = net_.ports[test == "tcp-throughput" ? 1 : 2];
  Hosts moved = hosts;
  for (auto& [name, address] : moved) {
    if (address.port() == net_.ports.front() && answering_ports_.contains({name, port})) address.set_port(port);
  }
  return moved;
}

void VnetperfRun::NoteUnmeasured(const std::string& name, const std::string& test, const std::string& error) {
  if (unmeasured_.empty()) unmeasured_ = "host " + name + " was not measured in " + test + ": " + error;
}

std::optional<ProbeOutcome> VnetperfRun::FindHosts(json& result, Hosts& hosts, RemoteMtus& remote_mtus) {
  const bool ignore_bad = options_.ignore_bad_hosts;
  std::vector<std::string> errors;
  const auto specs = peer_list_.Read(net_, responder_.DefaultPort(net_), &errors);
  if (!errors.empty() && !ignore_bad) {
    return ProbeOutcome::Failure("bad_hosts", errors.front(), result);
  }
  hosts = ReachableHosts(specs, result["bad_hosts"], remote_mtus);
  spdlog::info("net: {} of {} hosts answered; tests: {}", hosts.size(), specs.size(), fmt::join(tests_, ", "));
  for (const json& bad : result["bad_hosts"]) Report("bad_host", bad);
  if (!result["bad_hosts"].empty() && !ignore_bad) {
    return ProbeOutcome::Failure("bad_hosts",
                                 "unreachable host " + result["bad_hosts"][0]["node"].get<std::string>() + ": " +
                                     result["bad_hosts"][0]["error"].get<std::string>() +
                                     " (use --ignore-bad-hosts to test the others)",
                                 result);
  }
  if (hosts.empty()) return ProbeOutcome::Failure("no_hosts", "no reachable hosts", result);
  return std::nullopt;
}

// Every host must answer a hello before any test runs (vnetperf's rule):
// the hosts that did; the others go to `bad_hosts` with the reason.
Hosts VnetperfRun::ReachableHosts(const std::vector<PeerSpec>& specs, json& bad_hosts, RemoteMtus& remote_mtus) {
  Hosts hosts;
  for (const auto& peer : Resolve(specs)) {
    const Result<HelloReply> hello = peer.address ? Hello(*peer.address, SecretFor(peer.spec.name), kHelloTimeout)
                                                  : Result<HelloReply>(peer.address.failure());
    if (hello) {
      spdlog::debug("net: {} answered its hello (protocol revision {}, {} connections at most)", peer.spec.name,
                    static_cast<int>(hello->revision), hello->max_connections);
      hosts.emplace_back(peer.spec.name, *peer.address);
      remote_mtus[peer.spec.name] = hello->mtu;
      ProbeTestPorts(peer.spec.name, *peer.address);
    } else {
      spdlog::info("net: {} did not answer its hello: {}", peer.spec.name, hello.error());
      bad_hosts.push_back({{"node", peer.spec.name}, {"error", hello.error()}});
    }
  }
  return hosts;
}

const Secret& VnetperfRun::SecretFor(const std::string& name) const {
  const auto own = options_.host_secrets.find(name);
  return own != options_.host_secrets.end() ? own->second : secret_;
}

PeerTarget VnetperfRun::TargetOf(const std::string& name, const SocketAddress& address) const {
  PeerTarget target{name, address};
  if (const auto own = options_.host_secrets.find(name); own != options_.host_secrets.end())
    target.secret = own->second;
  return target;
}

void VnetperfRun::PlanProgress(std::size_t hosts) {
  const std::size_t rates = Rates().size();
  slots_ = tests_.contains("latency") ? 1 : 0;
  for (const char* test : {"tcp-throughput", "udp-throughput"}) {
    // All-to-all: a step per round of its schedule; else one per host.
    const std::size_t steps = hosts >= 2 && orchestration_key_
                                  ? AllToAllSchedule(hosts, AllToAllOptions{}.max_peers_per_round).size()
                                  : hosts;
    if (tests_.contains(test)) slots_ += rates * steps;
  }
  started_ = Clock::now();
  done_ = 0;
}

void VnetperfRun::Progress(const std::string& step, bool slot) {
  if (!ctx_.on_progress) return;
  const auto elapsed = Clock::now() - started_;
  const auto remaining = options_.duration * static_cast<std::int64_t>(slots_ - std::min(done_, slots_));
  done_ += slot ? 1 : 0;
  const auto planned = options_.duration * static_cast<std::int64_t>(slots_);
  ctx_.on_progress({fmt::format("{} ({} of {} steps, {:.0f} s planned)", step, std::min(done_, slots_), slots_,
                                std::chrono::duration<double>(planned).count()),
                    elapsed, remaining});
}

json VnetperfRun::Interfaces(const Hosts& hosts, RemoteMtus& remote_mtus) {
  json interfaces = json::array();
  for (const auto& [name, address] : hosts) {
    json row = PeerInterfaceJson(name, interfaces_, address, remote_mtus[name]);
    if (row["mtu_mismatch"].get<bool>()) {
      findings_.push_back(DescribeMtuMismatch(name, row["interface"].get<std::string>(),
                                              row["mtu_local"].get<std::uint32_t>(),
                                              row["mtu_remote"].get<std::uint32_t>()));
    }
    interfaces.push_back(std::move(row));
  }
  return interfaces;
}

void VnetperfRun::Report(std::string_view kind, const json& row) const {
  if (!ctx_.on_report) return;
  json entry = row;
  entry["kind"] = kind;
  ctx_.on_report(entry);
}

}  // namespace hostperf::probes::net
