#pragma once

// The peers of both faces: the configured list (probes.net.peers plus the
// peers file), their addresses, this host found among them, and the subset
// a scheduled run observes. Internal to the net probe.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/peers.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

struct NetProbeConfig;  // module.h

// The default port of the responder and of peers without one.
inline constexpr std::uint16_t kDefaultNetPort = 14159;
// How long a hello (a peer's MTU, whether a host is reachable) may take.
inline constexpr auto kHelloTimeout = std::chrono::seconds(2);

// This host's interface addresses, numeric (NetProbeSeams::local_addresses).
using LocalAddresses = std::function<std::vector<std::string>()>;
// A member's address, numeric, no port; nullopt when it does not resolve
// (NetProbeSeams::resolve).
using MemberResolver = std::function<std::optional<std::string>(const PeerSpec&)>;

// hostname:port, this host's name outside the peer list (the first
// configured port, else `port`).
std::string SelfName(const NetProbeConfig& config, std::uint16_t port);
// This host's interface addresses, as SocketAddress::Host() writes them (getifaddrs).
std::vector<std::string> InterfaceAddresses();
// A member's address as the daemon finds itself among the members: numeric,
// no port; nullopt when the name does not resolve (getaddrinfo).
std::optional<std::string> ResolveMember(const PeerSpec& spec);
// This host's addresses as FindSelf compares them: the interfaces', plus a
// responder bound to one address (127.0.0.2, a service address), which is
// this host at that address too although no interface lists it.
std::vector<std::string> SelfAddresses(const LocalAddresses& interfaces, const std::string& bind_address);

// A peer after name resolution (re-done every run).
struct ResolvedPeer {
  PeerSpec spec;
  Result<SocketAddress> address;
};
std::vector<ResolvedPeer> Resolve(const std::vector<PeerSpec>& specs);

// Peers by name, with their addresses.
using Hosts = std::vector<std::pair<std::string, SocketAddress>>;

// probes.net.peers plus the peers file, which is re-read when it changes
// (its last good list kept when it turns bad).
class PeerList {
 public:
  // The configured peers, deduplicated by name, `default_port` for entries
  // without one; bad entries and a bad peers file go to `errors`. With
  // neither peers nor a peers file, this host's own responder
  // (localhost:default_port), and `*own_responder` is set.
  std::vector<PeerSpec> Read(const NetProbeConfig& net, std::uint16_t default_port, std::vector<std::string>* errors,
                             bool* own_responder = nullptr);
  const PeersFile& file() const { return file_; }

 private:
  PeersFile file_;
};

// The observed set and what it was computed from.
struct Assignment {
  std::vector<PeerSpec> members;
  std::string configured_self;
  std::uint32_t k = 0;
  std::vector<std::uint16_t> ports;
  std::string bind_address;

  std::string self;  // the member that is this host, or hostname:port outside the list
  bool self_is_member = false;
  std::vector<PeerSpec> observed;  // highest score first
};

// This host's entry and the peers it observes, recomputed only when one of
// the inputs changes (the hashing is O(N k log N) for N members).
class PeerAssignment {
 public:
  PeerAssignment(LocalAddresses local_addresses, MemberResolver resolve)
      : local_addresses_(std::move(local_addresses)), resolve_(std::move(resolve)) {}
  // `responder_ports`: the ports the responder bound (empty: not running,
  // probes.net.ports then); `default_port` names this host outside the list.
  const Assignment& Assign(const NetProbeConfig& net, const std::vector<PeerSpec>& members,
                           std::vector<std::uint16_t> responder_ports, std::uint16_t default_port);

 private:
  LocalAddresses local_addresses_;
  MemberResolver resolve_;
  std::optional<Assignment> assignment_;
};

}  // namespace hostperf::probes::net
