#include "peer_set.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "hostperf/probes/net/module.h"
#include "hostperf/probes/net/net_probe.h"

namespace hostperf::probes::net {

std::string SelfName(const NetProbeConfig& config, std::uint16_t port) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return std::string(host) + ":" + std::to_string(config.ports.empty() ? port : config.ports.front());
}

std::vector<std::string> InterfaceAddresses() {
  std::vector<std::string> addresses;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return addresses;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (ifa->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(ifa->ifa_addr)->sin_addr, text, sizeof(text));
    } else if (ifa->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr)->sin6_addr, text, sizeof(text));
    } else {
      continue;
    }
    addresses.emplace_back(text);
  }
  ::freeifaddrs(list);
  return addresses;
}

std::optional<std::string> ResolveMember(const PeerSpec& spec) {
  auto address = ResolveHost(spec.host, spec.port);
  return address ? std::optional<std::string>(address->Host()) : std::nullopt;
}

std::vector<std::string> SelfAddresses(const LocalAddresses& interfaces, const std::string& bind_address) {
  std::vector<std::string> local = interfaces();
  if (auto bound = ParseNumericAddress(bind_address, 0)) local.push_back(bound->Host());
  return local;
}

std::vector<ResolvedPeer> Resolve(const std::vector<PeerSpec>& specs) {
  std::vector<ResolvedPeer> peers;
  for (const PeerSpec& spec : specs) peers.push_back({spec, ResolveHost(spec.host, spec.port)});
  return peers;
}

std::vector<PeerSpec> PeerList::Read(const NetProbeConfig& net, std::uint16_t default_port,
                                     std::vector<std::string>* errors, bool* own_responder) {
  std::vector<std::string> entries = net.peers;
  if (!net.peers_file.empty()) {
    if (auto refreshed = file_.Refresh(net.peers_file, net.allow_empty_peers_file); !refreshed) {
      errors->push_back(refreshed.error());
    }
    const auto& targets = file_.targets();
    entries.insert(entries.end(), targets.begin(), targets.end());
  }
  if (entries.empty() && net.peers_file.empty()) {
    if (own_responder != nullptr) *own_responder = true;
    return {PeerSpec{"localhost", "localhost", default_port}};
  }
  std::vector<PeerSpec> specs;
  std::set<std::string> seen;
  for (const std::string& entry : entries) {
    if (auto spec = ParsePeerSpec(entry, default_port)) {
      if (seen.insert(spec->name).second) specs.push_back(std::move(*spec));
    } else {
      errors->push_back(spec.error());
    }
  }
  return specs;
}

const Assignment& PeerAssignment::Assign(const NetProbeConfig& net, const std::vector<PeerSpec>& members,
                                         std::vector<std::uint16_t> responder_ports, std::uint16_t default_port) {
  std::vector<std::uint16_t> ports = std::move(responder_ports);
  if (ports.empty()) ports = net.ports;
  if (assignment_ && assignment_->members == members && assignment_->configured_self == net.self &&
      assignment_->k == net.observers && assignment_->ports == ports && assignment_->bind_address == net.bind_address) {
    return *assignment_;
  }
  Assignment a{members, net.self, net.observers, ports, net.bind_address, {}, false, {}};
  if (!net.self.empty()) {
    a.self = net.self;
  } else {
    const std::vector<std::string> local = SelfAddresses(local_addresses_, net.bind_address);
    a.self = FindSelf(members, ports, local, resolve_).value_or(SelfName(net, default_port));
  }
  a.self_is_member = std::any_of(members.begin(), members.end(), [&](const PeerSpec& m) { return m.name == a.self; });
  a.observed = ObservedTargets(a.self, members, net.observers);
  spdlog::info("net: this host is {} ({}); it observes {} of {} peers ({} observers each)", a.self,
               a.self_is_member ? "in the peer list" : "not in the peer list: an outside observer", a.observed.size(),
               members.size(), net.observers);
  assignment_ = std::move(a);
  return *assignment_;
}

std::optional<std::string> CheckSelfInPeers(const NetProbeConfig& net, const NetProbeSeams& seams,
                                            std::chrono::milliseconds bound) {
  if (net.peers.empty() && net.peers_file.empty()) return std::nullopt;  // its own responder: nothing to find
  const std::uint16_t default_port = net.ports.empty() ? 14159 : net.ports.front();
  std::vector<std::string> entries = net.peers;
  if (!net.peers_file.empty()) {
    PeersFile file;
    if (auto read = file.Refresh(net.peers_file, net.allow_empty_peers_file); !read) {
      return "cannot tell whether this host is in the peer list: " + read.error();
    }
    entries.insert(entries.end(), file.targets().begin(), file.targets().end());
  }
  std::vector<PeerSpec> members;
  for (const std::string& entry : entries) {
    if (auto spec = ParsePeerSpec(entry, default_port)) members.push_back(std::move(spec).value());
  }
  const std::string where = net.peers_file.empty() ? "probes.net.peers" : "peers/peers_file (" + net.peers_file + ")";
  if (!net.self.empty()) {
    if (std::any_of(members.begin(), members.end(), [&](const PeerSpec& m) { return m.name == net.self; })) {
      return std::nullopt;
    }
    return "self = \"" + net.self + "\" is not an entry of " + where +
           ": this host probes as an outside observer and publishes no hostperf_net_self_info, so alerts about it "
           "cannot carry its scrape target's name; check that self is spelled exactly as its entry";
  }
  std::vector<std::uint16_t> ports;
  for (const std::uint16_t port : net.ports) {
    if (port != 0) ports.push_back(port);
  }
  const std::vector<std::string> local =
      SelfAddresses(seams.local_addresses ? seams.local_addresses : InterfaceAddresses, net.bind_address);
  // Resolution may hang on a dead DNS server: done on a thread that is left
  // behind when it outlasts `bound` (the check exits right after).
  struct Search {
    std::mutex mu;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<std::string> self;
  };
  auto search = std::make_shared<Search>();
  std::thread([search, members, ports, local, resolve = seams.resolve ? seams.resolve : ResolveMember] {
    auto self = FindSelf(members, ports, local, resolve);
    std::lock_guard lock(search->mu);
    search->self = std::move(self);
    search->done = true;
    search->done_cv.notify_all();
  }).detach();
  std::unique_lock lock(search->mu);
  if (!search->done_cv.wait_for(lock, bound, [&] { return search->done; })) {
    return fmt::format(
        "cannot tell whether this host is in the peer list: resolving its {} entries took longer than {} ms; check "
        "the resolver (/etc/resolv.conf, /etc/hosts) or list the peers by address",
        members.size(), bound.count());
  }
  if (search->self) return std::nullopt;
  std::string ports_text;
  for (const std::uint16_t port : ports) ports_text += (ports_text.empty() ? "" : ",") + std::to_string(port);
  // A few addresses to compare with the list, not every link-local one of
  // every veth on a container host.
  constexpr std::size_t kShownAddresses = 6;
  std::vector<std::string> shown;
  std::size_t hidden = 0;
  for (const std::string& address : local) {
    if (address.starts_with("fe80:") || shown.size() >= kShownAddresses) {
      ++hidden;
    } else {
      shown.push_back(address);
    }
  }
  std::string addresses = fmt::format("{}", fmt::join(shown, ", "));
  if (hidden > 0) addresses += fmt::format(" and {} more", hidden);
  return fmt::format(
      "this host is not in {}: none of its {} entries resolves to one of this host's addresses on port {}, so it "
      "probes as an outside observer and publishes no hostperf_net_self_info (its alerts cannot be joined to its "
      "scrape target). Check that the list names this host by a name that resolves here or by one of its addresses "
      "({}), with the responder port, or set probes.net.self to its entry",
      where, members.size(), ports_text.empty() ? "(ephemeral)" : ports_text, addresses);
}

}  // namespace hostperf::probes::net
