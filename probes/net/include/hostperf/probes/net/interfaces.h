#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/system_roots.h"

namespace hostperf::probes::net {

// Attribution inside a host: which local interface the route to a
// peer uses, what it is (speed, duplex, MTU, state, bond or team members),
// and which of its error counters moved while our own bursts ran.

// The interface a packet to `address` (numeric IPv4 or IPv6) leaves by;
// a failure ("no_route") when the kernel has no route. The seam of the
// route lookup: tests inject answers.
using RouteLookup = std::function<Result<std::string>(const std::string& address)>;
// The kernel's answer: rtnetlink RTM_GETROUTE (policy routing included), the
// RTA_OIF's name. One request per call, a socket opened and closed each time.
Result<std::string> NetlinkRouteInterface(const std::string& address);

// <sys>/class/net/<name>/: what the interface is.
struct InterfaceInfo {
  std::string name;
  std::optional<std::int64_t> speed_mbps;  // nullopt: unknown (-1, unreadable, or down)
  std::string duplex = "unknown";          // full, half, unknown
  std::optional<std::uint32_t> mtu;
  std::string operstate = "unknown";
  std::vector<std::string> lowers;  // direct lower devices (lower_* links, bonding/slaves), sorted
  bool operator==(const InterfaceInfo&) const = default;
};
// A name from the kernel or a file is used as a path component: refuse
// anything that is not one.
bool ValidInterfaceName(std::string_view name);
InterfaceInfo ReadInterfaceInfo(const SystemRoots& roots, const std::string& name);

// A device watched for a peer: the interface the route uses, or one below it
// (a bond or team member, a VLAN's parent), with the device it sits under.
struct WatchedDevice {
  std::string name;
  std::string upper;  // empty for the routed interface itself
  bool operator==(const WatchedDevice&) const = default;
};

// The per-run cache of routes and interface facts: a run asks once per
// address and once per interface, whatever the number of bursts.
class InterfaceCache {
 public:
  InterfaceCache(SystemRoots roots, RouteLookup route);
  // The interface toward `address`, cached for the life of this object.
  const Result<std::string>& RouteTo(const std::string& address);
  const InterfaceInfo& Info(const std::string& name);
  // `name` and every device below it (at most kMaxDepth levels), `name` first.
  std::vector<WatchedDevice> Devices(const std::string& name);
  const SystemRoots& roots() const { return roots_; }

  static constexpr int kMaxDepth = 3;

 private:
  SystemRoots roots_;
  RouteLookup route_;
  std::map<std::string, Result<std::string>> routes_;
  std::map<std::string, InterfaceInfo> infos_;
};

// The error counters read around bursts, in <if>/statistics/: only those that
// can only grow on a fault (not packets or bytes).
const std::vector<std::string>& InterfaceErrorCounters();

// Counters of some devices and the host's TCP retransmits at one moment.
struct CounterSnapshot {
  std::map<std::string, std::map<std::string, std::uint64_t>> devices;  // device -> counter -> value (those that exist)
  std::optional<std::uint64_t> tcp_retransmits;                         // /proc/net/snmp Tcp RetransSegs
};
CounterSnapshot ReadCounters(const SystemRoots& roots, std::span<const std::string> devices);
// /proc/net/snmp's Tcp RetransSegs; nullopt when unreadable.
std::optional<std::uint64_t> ReadTcpRetransmits(const SystemRoots& roots);

// What grew between two snapshots. A counter that went down (the device was
// re-created, the driver reset it) counts 0 rather than wrapping.
struct CounterDeltas {
  std::map<std::string, std::map<std::string, std::uint64_t>> devices;  // every counter in both snapshots
  std::optional<std::uint64_t> tcp_retransmits;
  bool Moved(const std::string& device) const;
  // Adds another window's deltas (bursts of one run).
  void Add(const CounterDeltas& other);
};
CounterDeltas Diff(const CounterSnapshot& before, const CounterSnapshot& after);

// One sentence naming where a short burst went and what moved:
//   "loss 3.2% to peer 10.0.0.7 via eth0 (bond0 member eth2: rx_crc_errors +41)"
//   "... via eth0: no interface counter moved: the loss is in a qdisc or shaper here, or past this host"
// `shortfall` says what fell short ("loss 3.2%"); `devices` as
// InterfaceCache::Devices gives them (empty: the interface is unknown). TCP
// retransmits, host-wide, are appended when they grew.
std::string Attribute(std::string_view shortfall, std::string_view peer, std::span<const WatchedDevice> devices,
                      const CounterDeltas& deltas);

// "MTU mismatch with 10.0.0.7: eth0 9000 here, 1500 there"
std::string DescribeMtuMismatch(std::string_view peer, std::string_view interface, std::uint32_t local,
                                std::uint32_t remote);

}  // namespace hostperf::probes::net
