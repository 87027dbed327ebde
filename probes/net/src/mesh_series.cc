// The scheduled mesh's series that come and go: this host's entry, the
// peers file's validity, the per-peer series of peers that left the probed
// set, and the interfaces toward the probed peers.
#include <algorithm>
#include <utility>

#include "scheduled_mesh.h"

namespace hostperf::probes::net {

// hostperf_net_self_info: one series, for the entry this host is (none
// outside the list). Runs never overlap: no lock needed.
void ScheduledMesh::PublishSelf(const std::optional<std::string>& self) {
  if (self == self_info_peer_) return;
  if (self_info_peer_) {
    const prometheus::Labels old = {{"peer", *self_info_peer_}};
    if (metrics_.self_info.Has(old)) metrics_.self_info.Remove(&metrics_.self_info.Add(old));
  }
  if (self) metrics_.self_info.Add({{"peer", *self}}).Set(1);
  self_info_peer_ = self;
}

// hostperf_net_peers_file_valid: absent (nullopt) without a peers_file.
void ScheduledMesh::PublishPeersFileValid(std::optional<bool> valid) {
  if (!valid) {
    if (metrics_.peers_file_valid.Has({})) metrics_.peers_file_valid.Remove(&metrics_.peers_file_valid.Add({}));
    return;
  }
  metrics_.peers_file_valid.Add({}).Set(*valid ? 1 : 0);
}

// Removes every series of the peers that left the probed set. References
// to per-peer series are only held within a run (runs never overlap), so
// removing them here leaves nothing dangling.
void ScheduledMesh::ExpireSeries(const std::vector<PeerSpec>& probed) {
  std::set<std::string> now;
  for (const PeerSpec& peer : probed) now.insert(peer.name);
  for (const std::string& name : series_peers_) {
    if (now.contains(name)) continue;
    const prometheus::Labels labels = {{"peer", name}};
    if (metrics_.rtt.Has(labels)) metrics_.rtt.Remove(&metrics_.rtt.Add(labels, RttBuckets()));
    for (auto* family : {&metrics_.sent, &metrics_.lost, &metrics_.throughput_bytes}) {
      if (family->Has(labels)) family->Remove(&family->Add(labels));
    }
    for (auto* family : {&metrics_.offset, &metrics_.up, &metrics_.tcp, &metrics_.udp, &metrics_.udp_loss,
                         &metrics_.udp_jitter, &metrics_.last_probe, &interface_metrics_.peer_mtu_mismatch}) {
      if (family->Has(labels)) family->Remove(&family->Add(labels));
    }
    for (const char* side : {"local", "remote"}) {
      const prometheus::Labels side_labels = {{"peer", name}, {"side", side}};
      if (interface_metrics_.peer_mtu.Has(side_labels))
        interface_metrics_.peer_mtu.Remove(&interface_metrics_.peer_mtu.Add(side_labels));
    }
    if (const auto it = peer_interfaces_.find(name); it != peer_interfaces_.end()) {
      const prometheus::Labels interface_labels = {{"peer", name}, {"interface", it->second}};
      if (interface_metrics_.peer_interface.Has(interface_labels))
        interface_metrics_.peer_interface.Remove(&interface_metrics_.peer_interface.Add(interface_labels));
      peer_interfaces_.erase(it);
    }
    remote_mtu_.erase(name);
  }
  series_peers_ = std::move(now);
}

void ScheduledMesh::CountDeltas(const CounterDeltas& deltas) {
  for (const auto& [device, counters] : deltas.devices) {
    for (const auto& [counter, delta] : counters) {
      interface_metrics_.interface_errors.Add({{"interface", device}, {"counter", counter}})
          .Increment(static_cast<double>(delta));
    }
  }
  if (deltas.tcp_retransmits)
    interface_metrics_.tcp_retransmits.Increment(static_cast<double>(*deltas.tcp_retransmits));
}

// The series of the devices that route to probed peers (and those below
// them); the devices that no longer do lose theirs.
void ScheduledMesh::PublishInterfaces(InterfaceCache& interfaces, const std::set<std::string>& devices) {
  for (const std::string& device : devices) {
    const InterfaceInfo& info = interfaces.Info(device);
    const prometheus::Labels labels = {{"interface", device}};
    if (info.speed_mbps) {
      interface_metrics_.interface_speed.Add(labels).Set(static_cast<double>(*info.speed_mbps) * 1e6 / 8);
    } else if (interface_metrics_.interface_speed.Has(labels)) {
      interface_metrics_.interface_speed.Remove(&interface_metrics_.interface_speed.Add(labels));
    }
    if (info.mtu) {
      interface_metrics_.interface_mtu.Add(labels).Set(*info.mtu);
    } else if (interface_metrics_.interface_mtu.Has(labels)) {
      interface_metrics_.interface_mtu.Remove(&interface_metrics_.interface_mtu.Add(labels));
    }
    std::vector<prometheus::Labels> wanted;
    for (const std::string& lower : info.lowers.empty() ? std::vector<std::string>{""} : info.lowers) {
      wanted.push_back(
          {{"interface", device}, {"duplex", info.duplex}, {"operstate", info.operstate}, {"lower", lower}});
    }
    for (const auto& old : interface_info_labels_[device]) {
      if (std::find(wanted.begin(), wanted.end(), old) == wanted.end() && interface_metrics_.interface_info.Has(old)) {
        interface_metrics_.interface_info.Remove(&interface_metrics_.interface_info.Add(old));
      }
    }
    for (const auto& labels_of_one : wanted) interface_metrics_.interface_info.Add(labels_of_one).Set(1);
    interface_info_labels_[device] = std::move(wanted);
  }
  for (auto it = interface_info_labels_.begin(); it != interface_info_labels_.end();) {
    if (devices.contains(it->first)) {
      ++it;
      continue;
    }
    const prometheus::Labels labels = {{"interface", it->first}};
    for (auto* family : {&interface_metrics_.interface_speed, &interface_metrics_.interface_mtu}) {
      if (family->Has(labels)) family->Remove(&family->Add(labels));
    }
    for (const auto& old : it->second) {
      if (interface_metrics_.interface_info.Has(old))
        interface_metrics_.interface_info.Remove(&interface_metrics_.interface_info.Add(old));
    }
    for (const std::string& counter : InterfaceErrorCounters()) {
      const prometheus::Labels counter_labels = {{"interface", it->first}, {"counter", counter}};
      if (interface_metrics_.interface_errors.Has(counter_labels))
        interface_metrics_.interface_errors.Remove(&interface_metrics_.interface_errors.Add(counter_labels));
    }
    it = interface_info_labels_.erase(it);
  }
}

// Which interface serves the peer, and the MTUs of both ends toward each other.
void ScheduledMesh::PublishPeerInterface(const std::string& peer, InterfaceCache& interfaces,
                                         const std::vector<WatchedDevice>& devices, nlohmann::json& findings) {
  const std::string interface = devices.empty() ? std::string() : devices.front().name;
  const auto previous = peer_interfaces_.find(peer);
  if (previous != peer_interfaces_.end() && previous->second != interface) {
    const prometheus::Labels old = {{"peer", peer}, {"interface", previous->second}};
    if (interface_metrics_.peer_interface.Has(old))
      interface_metrics_.peer_interface.Remove(&interface_metrics_.peer_interface.Add(old));
    peer_interfaces_.erase(previous);
  }
  std::optional<std::uint32_t> local;
  if (!interface.empty()) {
    interface_metrics_.peer_interface.Add({{"peer", peer}, {"interface", interface}}).Set(1);
    peer_interfaces_[peer] = interface;
    local = interfaces.Info(interface).mtu;
  }
  const std::optional<std::uint32_t> remote = RemoteMtu(peer);
  for (const auto& [side, mtu] : {std::pair{"local", local}, std::pair{"remote", remote}}) {
    const prometheus::Labels labels = {{"peer", peer}, {"side", side}};
    if (mtu) {
      interface_metrics_.peer_mtu.Add(labels).Set(*mtu);
    } else if (interface_metrics_.peer_mtu.Has(labels)) {
      interface_metrics_.peer_mtu.Remove(&interface_metrics_.peer_mtu.Add(labels));
    }
  }
  const bool mismatch = local && remote && *local != *remote;
  interface_metrics_.peer_mtu_mismatch.Add({{"peer", peer}}).Set(mismatch ? 1 : 0);
  if (mismatch) findings.push_back(DescribeMtuMismatch(peer, interface, *local, *remote));
}

}  // namespace hostperf::probes::net
