#pragma once

// What both faces attribute to the interfaces toward a peer: which devices
// a burst (or a ping series) crosses, what their counters did meanwhile,
// what the burst should have reached and what fell short. Internal to the
// net probe; the kernel side is interfaces.h.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "hostperf/probes/net/interfaces.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

// A TCP burst below this share of what it should reach (its rate cap, or the
// link's speed when slower) is a shortfall whose counters the run names.
inline constexpr double kShortfallRatio = 0.8;

// The routed interface toward `address` and the devices below it; empty when
// the route is unknown.
std::vector<WatchedDevice> DevicesToward(InterfaceCache& cache, const SocketAddress& address);

// The counters of some devices around one burst (or ping series).
class Burst {
 public:
  Burst(const SystemRoots& roots, std::vector<WatchedDevice> devices);
  // What moved since the start; host-wide TCP retransmits only for a TCP burst
  // (anything else would count the host's own traffic against a UDP test).
  CounterDeltas End(bool tcp) const;
  const std::vector<WatchedDevice>& devices() const { return devices_; }

 private:
  const SystemRoots& roots_;
  std::vector<WatchedDevice> devices_;
  CounterSnapshot before_;
};

// What a burst should reach: its cap, or the routed interface's speed when lower.
double ExpectedBytesPerSecond(double cap, InterfaceCache& cache, std::span<const WatchedDevice> devices);

// What fell short in a burst ("TCP throughput 2.4 MB/s (expected 32 MB/s)",
// "UDP loss 3.2%"), or nullopt.
std::optional<std::string> Shortfall(const ThroughputResult& r, ThroughputTest test, double expected);

// A short burst's row names the interface and what moved (and so do the findings).
void AttributeRow(const ThroughputResult& r, ThroughputTest test, double cap, InterfaceCache& interfaces,
                  const std::vector<WatchedDevice>& devices, const CounterDeltas& deltas, nlohmann::json& row,
                  nlohmann::json& findings);

// The interface facts of one peer in a result.
nlohmann::json PeerInterfaceJson(const std::string& peer, InterfaceCache& cache, const SocketAddress& address,
                                 std::optional<std::uint32_t> remote_mtu);

}  // namespace hostperf::probes::net
