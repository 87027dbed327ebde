#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
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

// The caps of a peers file: bigger or longer ones are refused (the last good
// list is kept). YAML anchors and aliases are refused too.
inline constexpr std::size_t kMaxPeersFileBytes = 4 << 20;
inline constexpr std::size_t kMaxPeersFileTargets = 10000;

// Prometheus file_sd: a list of {"targets": [...], "labels": {...}} in JSON or
// YAML (chosen by the extension; other names: JSON, then YAML). The targets, in order.
Result<std::vector<std::string>> ParseFileSd(std::string_view content, const std::string& filename);

// What identifies one version of the peers file: a rename over it (new
// inode) is a change even when the modification time and size are equal.
struct FileVersion {
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;
  std::uint64_t size = 0;
  std::uint64_t inode = 0;
  std::uint64_t device = 0;
  bool operator==(const FileVersion&) const = default;
};

// The file_sd file, re-read only when its version (modification time, size,
// inode) changes. A file that becomes unreadable or invalid keeps the last
// good list, as Prometheus' file_sd does.
//
// An empty list (`[]`, or groups without targets) is valid file_sd but, on a
// fleet, almost always a mistake of the tool that writes the file: every host
// would silently stop probing its peers at once. Unless `allow_empty`, an
// empty list that replaces a non-empty one is refused like a bad edit (the
// last good list is kept, the version counted once). With no good list
// before (the first load), there is nothing to keep: the empty list is used,
// but still counted and reported as not valid, so that a fleet started with
// an empty file is one signal rather than silence.
class PeersFile {
 public:
  // Re-reads `path` if it changed (or `allow_empty` did); a failure leaves
  // targets() as they were. Fails on every call while the file is bad;
  // failures() counts each bad version once.
  Result<void> Refresh(const std::filesystem::path& path, bool allow_empty = false);
  // The last good list.
  const std::vector<std::string>& targets() const { return targets_; }
  // Versions of the file (or of its absence) that could not be used.
  std::uint64_t failures() const { return failures_; }
  // True when targets() come from the file's current version; false when it
  // was refused (or was an empty list not allowed) and an older list, or
  // none, is in use.
  bool valid() const { return valid_; }

 private:
  std::filesystem::path path_;
  std::optional<FileVersion> good_;  // the version targets_ came from
  std::optional<FileVersion> bad_;   // the last version that failed (absent file: default)
  std::string bad_error_;
  std::uint64_t failures_ = 0;
  std::vector<std::string> targets_;
  bool allow_empty_ = false;
  bool valid_ = false;
};

// Rendezvous (highest-random-weight) score of a pair; the first argument
// seeds the hash.
std::uint64_t RendezvousScore(std::string_view self, std::string_view peer);

// Target-centric rendezvous: the observers of `target` are the `k` names in
// `pool` other than `target` with the highest RendezvousScore(target, name)
// (ties: the smaller name). Ordered by score.
std::vector<std::string> ObserversOf(std::string_view target, std::span<const std::string> pool, std::size_t k);

// The members whose observers (ObserversOf over the members' names plus
// `self` when it is not one of them) include `self`: what this host probes.
// Every member is observed by exactly min(k, pool size - 1) hosts, hosts
// observe k members on average, and a membership change moves only the
// assignments that involve the member that came or went (plus the few whose
// k-th observer it displaced or freed). No time epoch: the set is stable
// while the membership is. Ordered by RendezvousScore(target, self), highest
// first, so that a cap keeps the same ones. `self` itself is never a target.
std::vector<PeerSpec> ObservedTargets(std::string_view self, std::span<const PeerSpec> members, std::size_t k);

// The member that is this host: one whose port is in `ports` and whose
// address (`resolve`, numeric, no port; nullopt when it does not resolve) is
// in `local_addresses`. Its name, or nullopt.
std::optional<std::string> FindSelf(std::span<const PeerSpec> members, std::span<const std::uint16_t> ports,
                                    std::span<const std::string> local_addresses,
                                    const std::function<std::optional<std::string>(const PeerSpec&)>& resolve);

}  // namespace hostperf::probes::net
