#include "burst_attribution.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "result_rows.h"

namespace hostperf::probes::net {

namespace {

using nlohmann::json;

std::vector<std::string> DeviceNames(std::span<const WatchedDevice> devices) {
  std::vector<std::string> names;
  for (const WatchedDevice& device : devices) names.push_back(device.name);
  return names;
}

}  // namespace

std::vector<WatchedDevice> DevicesToward(InterfaceCache& cache, const SocketAddress& address) {
  const auto& route = cache.RouteTo(address.Host());
  return route ? cache.Devices(*route) : std::vector<WatchedDevice>{};
}

Burst::Burst(const SystemRoots& roots, std::vector<WatchedDevice> devices)
    : roots_(roots), devices_(std::move(devices)), before_(ReadCounters(roots_, DeviceNames(devices_))) {}

CounterDeltas Burst::End(bool tcp) const {
  CounterDeltas deltas = Diff(before_, ReadCounters(roots_, DeviceNames(devices_)));
  if (!tcp) deltas.tcp_retransmits.reset();
  return deltas;
}

double ExpectedBytesPerSecond(double cap, InterfaceCache& cache, std::span<const WatchedDevice> devices) {
  if (devices.empty()) return cap;
  const auto speed = cache.Info(devices.front().name).speed_mbps;
  return speed ? std::min(cap, static_cast<double>(*speed) * 1e6 / 8) : cap;
}

std::optional<std::string> Shortfall(const ThroughputResult& r, ThroughputTest test, double expected) {
  if (r.outcome != SessionOutcome::kOk) return std::nullopt;
  if (test == ThroughputTest::kUdp) {
    if (r.packets_lost == 0 && r.LossRatio() <= 0) return std::nullopt;
    return fmt::format("UDP loss {:.1f}%", r.LossRatio() * 100);
  }
  if (expected <= 0 || r.ReceivedBytesPerSecond() >= kShortfallRatio * expected) return std::nullopt;
  return fmt::format("TCP throughput {:.1f} MB/s (expected {:.1f} MB/s)", r.ReceivedBytesPerSecond() / kMiB,
                     expected / kMiB);
}

void AttributeRow(const ThroughputResult& r, ThroughputTest test, double cap, InterfaceCache& interfaces,
                  const std::vector<WatchedDevice>& devices, const CounterDeltas& deltas, json& row, json& findings) {
  row["interface"] = devices.empty() ? json(nullptr) : json(devices.front().name);
  const auto shortfall = Shortfall(r, test, ExpectedBytesPerSecond(cap, interfaces, devices));
  if (!shortfall) return;
  row["attribution"] = Attribute(*shortfall, row.value("node", ""), devices, deltas);
  findings.push_back(row["attribution"]);
}

json PeerInterfaceJson(const std::string& peer, InterfaceCache& cache, const SocketAddress& address,
                       std::optional<std::uint32_t> remote_mtu) {
  json entry = {{"node", peer}};
  const auto& route = cache.RouteTo(address.Host());
  if (!route) {
    entry["interface"] = nullptr;
    entry["error"] = route.error();
    return entry;
  }
  const InterfaceInfo& info = cache.Info(*route);
  entry["interface"] = *route;
  json lower = json::array();
  for (const WatchedDevice& device : cache.Devices(*route)) {
    if (!device.upper.empty()) lower.push_back({{"interface", device.name}, {"upper", device.upper}});
  }
  entry["lower"] = lower;
  entry["speed_mbps"] = info.speed_mbps ? json(*info.speed_mbps) : json(nullptr);
  entry["duplex"] = info.duplex;
  entry["operstate"] = info.operstate;
  entry["mtu_local"] = info.mtu ? json(*info.mtu) : json(nullptr);
  entry["mtu_remote"] = remote_mtu ? json(*remote_mtu) : json(nullptr);
  entry["mtu_mismatch"] = info.mtu && remote_mtu && *info.mtu != *remote_mtu;
  return entry;
}

}  // namespace hostperf::probes::net
