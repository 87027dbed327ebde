#include "responder_host.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "hostperf/probes/net/module.h"
#include "peer_set.h"
#include "secret_file.h"

namespace hostperf::probes::net {

ResponderHost::ResponderHost(ResponderMetrics& metrics, RouteLookup route, SystemRoots roots)
    : metrics_(metrics), route_(std::move(route)), roots_(std::move(roots)) {}

ResponderHost::~ResponderHost() = default;

void ResponderHost::Apply(const NetProbeConfig& net) {
  std::lock_guard services_lock(services_mutex_);
  const auto duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(net.plan_max_duration).count();
  Settings wanted{
      net.bind_address,
      net.ports,
      net.secret_file,
      {},
      net.max_connections,
      net.rate_limit,
      net.plan_max_rate,
      net.plan_unlimited_rate,
      static_cast<std::uint32_t>(std::clamp<std::int64_t>(duration_ms, 1, std::numeric_limits<std::uint32_t>::max())),
      net.plan_max_sessions};
  {
    // The peer set plans are checked against, from the configuration
    // (the scheduled runs refresh it as the peers file changes).
    PeerList list;
    std::vector<std::string> errors;
    SetPlanPeers(list.Read(net, DefaultPort(net), &errors));
  }
  if (!net.secret_file.empty()) {
    auto secret = ReadSecretFile(net.secret_file);
    if (!secret) {
      // Keep serving with the old secret rather than going dark on a bad rotation.
      spdlog::error("net: peer responder {}: {}", responder_ ? "keeps its old settings" : "not started",
                    secret.error());
      if (!responder_) SetError(secret.error());
      return;
    }
    wanted.secret = std::move(secret).value();
  }
  if (!net.orchestration_public_key_file.empty()) {
    auto key = ReadOrchestrationPublicKeyFile(net.orchestration_public_key_file);
    if (!key) {
      // Like the secret: a bad edit does not change whom the responder trusts.
      spdlog::error("net: peer responder {}: {}", responder_ ? "keeps its old settings" : "not started", key.error());
      if (!responder_) SetError(key.error());
      return;
    }
    wanted.orchestration_key = *key;
  }
  if (responder_ && wanted == settings_) return;
  ResponderOptions options = OptionsFor(net, wanted);
  Restart(std::move(options), std::move(wanted));
}

ResponderOptions ResponderHost::OptionsFor(const NetProbeConfig& net, const Settings& wanted) {
  ResponderOptions options;
  options.bind_address = net.bind_address;
  options.ports = net.ports;
  options.max_connections = net.max_connections;
  options.packets_per_second_per_source = net.rate_limit;
  options.plan_max_rate = wanted.plan_max_rate;
  options.plan_unlimited_rate = wanted.plan_unlimited_rate;
  options.plan_max_duration_ms = wanted.plan_max_duration_ms;
  options.plan_max_sessions = wanted.plan_max_sessions;
  {
    std::lock_guard lock(plan_peers_->mutex);
    plan_peers_->own_ports = net.ports;
  }
  options.plan_peer_allowed = [peers = plan_peers_](const SocketAddress& peer) { return peers->Contains(peer); };
  options.orchestration_key = wanted.orchestration_key;
  options.observer = this;
  // The MTU of the interface our replies to a client leave by, for its hello.
  options.reply_mtu = [route = route_, roots = roots_](const std::string& client) -> std::uint32_t {
    const auto interface = route(client);
    if (!interface || !ValidInterfaceName(*interface)) return 0;
    return ReadInterfaceInfo(roots, *interface).mtu.value_or(0);
  };
  if (net.secret_file.empty()) {
    options.bind_address = "";  // a generated secret: nobody else can talk to us anyway
    // An unchanged loopback responder keeps its secret; a new one gets a fresh secret.
    options.secret = responder_ && settings_.secret_file.empty() ? secret_ : RandomSecret();
  } else {
    options.secret = wanted.secret;
  }
  // With a shared secret, an empty bind_address means every address
  // (IPv6 and IPv4 on one socket, else IPv4 only).
  if (!net.secret_file.empty() && net.bind_address.empty()) options.bind_address = "::";
  return options;
}

void ResponderHost::Restart(ResponderOptions options, Settings wanted) {
  // The old responder may hold the same ports: stop it before binding.
  {
    std::unique_ptr<Responder> old;
    std::lock_guard lock(state_mutex_);
    old = std::move(responder_);
    ports_.clear();
  }
  metrics_.up.Set(0);
  const Secret secret = options.secret;
  auto started = StartResponder(options);
  if (!started && options.bind_address == "::") {
    options.bind_address = "0.0.0.0";
    started = StartResponder(options);
  }
  if (!started) {
    spdlog::error("net: peer responder not started: {}", started.error());
    SetError(started.error());
    return;
  }
  std::unique_ptr<Responder> responder = std::move(started).value();
  std::string ports;
  for (auto port : responder->Ports()) ports += (ports.empty() ? "" : ",") + std::to_string(port);
  spdlog::info("net: peer responder listening on {} port(s) {}",
               options.bind_address.empty() ? "loopback" : options.bind_address, ports);
  std::lock_guard lock(state_mutex_);
  settings_ = std::move(wanted);
  error_.clear();
  secret_ = secret;
  ports_ = responder->Ports();
  responder_ = std::move(responder);
  metrics_.up.Set(1);
}

void ResponderHost::OnRequest(std::string_view type) {
  metrics_.requests.Add({{"type", std::string(type)}}).Increment();
}

void ResponderHost::OnDrop(std::string_view reason) {
  metrics_.dropped.Add({{"reason", std::string(reason)}}).Increment();
}

void ResponderHost::OnPlanRefused(std::string_view reason) {
  metrics_.plans_refused.Add({{"reason", std::string(reason)}}).Increment();
}

void ResponderHost::OnPlanBytes(std::uint64_t bytes) { metrics_.plan_sent_bytes.Increment(static_cast<double>(bytes)); }

bool ResponderHost::PlanPeers::Contains(const SocketAddress& address) {
  std::lock_guard lock(mutex);
  if (addresses.contains(address.ToString())) return true;
  SocketAddress host = address;
  host.set_port(0);
  return hosts.contains(host.ToString()) &&
         std::find(own_ports.begin(), own_ports.end(), address.port()) != own_ports.end();
}

void ResponderHost::SetPlanPeers(const std::vector<PeerSpec>& members) {
  {
    std::lock_guard lock(plan_peers_->mutex);
    if (plan_peers_->members == members && !members.empty()) return;
  }
  std::set<std::string> addresses, hosts;  // resolved outside the lock: the responder keeps serving
  for (const ResolvedPeer& peer : Resolve(members)) {
    if (!peer.address) continue;
    addresses.insert(peer.address->ToString());
    SocketAddress host = *peer.address;
    host.set_port(0);
    hosts.insert(host.ToString());
  }
  std::lock_guard lock(plan_peers_->mutex);
  plan_peers_->members = members;
  plan_peers_->addresses = std::move(addresses);
  plan_peers_->hosts = std::move(hosts);
}

void ResponderHost::SetError(std::string error) {
  std::lock_guard lock(state_mutex_);
  error_ = std::move(error);
}

std::string ResponderHost::Error() {
  std::lock_guard lock(state_mutex_);
  return responder_ ? std::string() : error_;
}

Result<Secret> ResponderHost::ClientSecret(const NetProbeConfig& net) {
  {
    std::lock_guard lock(state_mutex_);
    if (responder_) return secret_;
  }
  if (net.secret_file.empty()) {
    return Failure{"no_secret",
                   "no probes.net.secret_file configured to reach hostperf daemons with (the daemon's generated "
                   "secret is only known to the daemon); for hosts without hostperf, give them without :port and "
                   "they are reached over SSH (--ssh, --identity-file, --ssh-options)"};
  }
  return ReadSecretFile(net.secret_file);
}

std::uint16_t ResponderHost::DefaultPort(const NetProbeConfig& net) {
  std::lock_guard lock(state_mutex_);
  if (!ports_.empty()) return ports_.front();
  return net.ports.empty() ? kDefaultNetPort : net.ports.front();
}

std::vector<std::uint16_t> ResponderHost::Ports() {
  std::lock_guard lock(state_mutex_);
  return ports_;
}

}  // namespace hostperf::probes::net
