#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"

namespace hostperf::probes::net {

// A peer as configured: "host", "host:port", "1.2.3.4", "[v6]:port" or a bare IPv6 address.
struct PeerSpec {
  std::string name;  // as written (the metrics' peer label)
  std::string host;
  std::uint16_t port = 0;
  bool operator==(const PeerSpec&) const = default;
};

// Parses one entry; the failure explains a bad one.
Result<PeerSpec> ParsePeerSpec(std::string_view text, std::uint16_t default_port);

// Prometheus file_sd: a list of {"targets": [...], "labels": {...}} in JSON or
// YAML (chosen by the extension; other names: JSON, then YAML). The targets, in order.
Result<std::vector<std::string>> ParseFileSd(std::string_view content, const std::string& filename);

// The file_sd file, re-read only when its modification time or size changes.
// A file that becomes unreadable or invalid keeps the last good list.
class PeersFile {
 public:
  // Re-reads `path` if it changed; a failure leaves targets() as they were.
  Result<void> Refresh(const std::filesystem::path& path);
  // The last good list.
  const std::vector<std::string>& targets() const { return targets_; }

 private:
  std::filesystem::path path_;
  std::optional<std::filesystem::file_time_type> mtime_;
  std::uintmax_t size_ = 0;
  std::vector<std::string> targets_;
};

// Rendezvous (highest-random-weight) choice of at most `k` peers for `self`:
// every host scores every peer with a hash of the pair, so each host probes
// k peers and each peer is probed by about k hosts, however large the fleet.
std::vector<PeerSpec> SelectPeers(std::string_view self, std::span<const PeerSpec> peers, std::size_t k);
std::uint64_t RendezvousScore(std::string_view self, std::string_view peer);

}  // namespace hostperf::probes::net
