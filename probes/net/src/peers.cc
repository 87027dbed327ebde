#include "hostperf/probes/net/peers.h"

#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hostperf/base/files.h"

namespace hostperf::probes::net {

namespace {

bool ParsePort(std::string_view text, std::uint16_t* port) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535) return false;
  *port = static_cast<std::uint16_t>(value);
  return true;
}

bool ValidHost(std::string_view host) {
  return !host.empty() && std::all_of(host.begin(), host.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
  });
}

std::uint64_t Mix(std::uint64_t x) {
  // splitmix64 finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t Fnv1a(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  for (const char c : text) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string TooManyTargets() {
  return "more than " + std::to_string(kMaxPeersFileTargets) + " targets (the cap of a peers file)";
}

Result<std::vector<std::string>> TargetsFromJson(std::string_view content) {
  if (const std::string deep = JsonDepthError(content); !deep.empty()) return Failure{kInvalidReason, deep};
  const auto doc = nlohmann::json::parse(content, nullptr, false);
  if (doc.is_discarded()) return Failure{kInvalidReason, "not valid JSON"};
  if (!doc.is_array()) return Failure{kInvalidReason, "expected a list of target groups"};
  std::vector<std::string> targets;
  for (const auto& group : doc) {
    if (!group.is_object() || !group.contains("targets") || !group["targets"].is_array()) {
      return Failure{kInvalidReason, "every target group needs a \"targets\" list"};
    }
    for (const auto& target : group["targets"]) {
      if (!target.is_string()) return Failure{kInvalidReason, "targets must be strings"};
      if (targets.size() >= kMaxPeersFileTargets) return Failure{kInvalidReason, TooManyTargets()};
      targets.push_back(target.get<std::string>());
    }
  }
  return targets;
}

// A first pass over the YAML events, before any node is built: file_sd
// files need no anchors, and an alias (`*g`) repeated thousands of times
// expands a small file into gigabytes of targets, so both are refused, as
// are nesting deeper than kMaxJsonDepth and more values than a file of
// kMaxPeersFileTargets targets with their labels can need.
class YamlShapeCheck : public YAML::EventHandler {
 public:
  struct Refused {
    std::string why;
  };
  static constexpr std::size_t kMaxValues = 16 * kMaxPeersFileTargets;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { Value(mark, anchor); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    Refuse(mark, "YAML aliases (*name) are not accepted in a peers file");
  }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor, const std::string&) override {
    Value(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor);
  }
  void OnMapEnd() override { --depth_; }
  void OnAnchor(const YAML::Mark& mark, const std::string&) override {
    Refuse(mark, "YAML anchors (&name) are not accepted in a peers file");
  }

 private:
  [[noreturn]] static void Refuse(const YAML::Mark& mark, const std::string& why) {
    throw Refused{"line " + std::to_string(mark.line + 1) + ": " + why};
  }
  void Value(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) Refuse(mark, "YAML anchors (&name) are not accepted in a peers file");
    if (++values_ > kMaxValues) Refuse(mark, "more than " + std::to_string(kMaxValues) + " values");
  }
  void Open(const YAML::Mark& mark, YAML::anchor_t anchor) {
    Value(mark, anchor);
    if (++depth_ > kMaxJsonDepth) {
      Refuse(mark, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
  }

  std::size_t depth_ = 0;
  std::size_t values_ = 0;
};

Result<std::vector<std::string>> TargetsFromYaml(std::string_view content) {
  try {
    std::istringstream stream{std::string(content)};
    YAML::Parser parser(stream);
    YamlShapeCheck check;
    while (parser.HandleNextDocument(check)) {
    }
  } catch (const YamlShapeCheck::Refused& refused) {
    return Failure{kInvalidReason, refused.why};
  } catch (const std::exception& e) {
    return Failure{kInvalidReason, std::string("not valid YAML: ") + e.what()};
  }
  try {
    const YAML::Node doc = YAML::Load(std::string(content));
    if (!doc.IsSequence()) return Failure{kInvalidReason, "expected a list of target groups"};
    std::vector<std::string> targets;
    for (const auto& group : doc) {
      if (!group.IsMap() || !group["targets"] || !group["targets"].IsSequence()) {
        return Failure{kInvalidReason, "every target group needs a \"targets\" list"};
      }
      for (const auto& target : group["targets"]) {
        if (!target.IsScalar()) return Failure{kInvalidReason, "targets must be strings"};
        if (targets.size() >= kMaxPeersFileTargets) return Failure{kInvalidReason, TooManyTargets()};
        targets.push_back(target.as<std::string>());
      }
    }
    return targets;
  } catch (const std::exception& e) {
    return Failure{kInvalidReason, std::string("not valid YAML: ") + e.what()};
  }
}

}  // namespace

Result<PeerSpec> ParsePeerSpec(std::string_view text, std::uint16_t default_port) {
  PeerSpec spec;
  spec.name = std::string(text);
  spec.port = default_port;
  const auto fail = [&](const std::string& why) -> Result<PeerSpec> {
    return Failure{kInvalidReason, "peer \"" + std::string(text) + "\": " + why};
  };
  if (text.empty()) return fail("empty");
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return fail("missing ']'");
    spec.host = std::string(text.substr(1, close - 1));
    const std::string_view rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':' || !ParsePort(rest.substr(1), &spec.port)) return fail("bad port");
    }
  } else if (std::count(text.begin(), text.end(), ':') == 1) {
    const auto colon = text.find(':');
    spec.host = std::string(text.substr(0, colon));
    if (!ParsePort(text.substr(colon + 1), &spec.port)) return fail("bad port");
  } else {
    spec.host = std::string(text);  // a name, an IPv4 address or a bare IPv6 address
  }
  if (!ValidHost(spec.host)) return fail("bad host name or address");
  if (spec.port == 0) return fail("no port");
  return spec;
}

Result<std::vector<std::string>> ParseFileSd(std::string_view content, const std::string& filename) {
  const std::string extension = std::filesystem::path(filename).extension().string();
  if (extension == ".json") return TargetsFromJson(content);
  if (extension == ".yaml" || extension == ".yml") return TargetsFromYaml(content);
  if (auto targets = TargetsFromJson(content)) return targets;
  return TargetsFromYaml(content);
}

Result<void> PeersFile::Refresh(const std::filesystem::path& path, bool allow_empty) {
  if (path != path_) {
    path_ = path;
    good_.reset();
    bad_.reset();
    targets_.clear();
    valid_ = false;
  }
  if (allow_empty != allow_empty_) {
    // The same version may now be judged otherwise: read it again.
    allow_empty_ = allow_empty;
    good_.reset();
    bad_.reset();
  }
  FileVersion version;  // all zero: the file is absent or cannot be stat'ed
  std::string error;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = "cannot read peers file " + path.string() + ": " + std::strerror(errno) + " (keeping the last good list)";
  } else {
    const auto ns = [](const timespec& t) { return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
    version = {ns(st.st_mtim), ns(st.st_ctim), static_cast<std::uint64_t>(st.st_size),
               static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_dev)};
    if (bad_ && *bad_ == version) return Failure{kInvalidReason, bad_error_};
    if (good_ && *good_ == version) return {};
    // Regular files of at most kMaxPeersFileBytes only: never blocks on a FIFO.
    const auto content = ReadBoundedFile(path, "peers file", kMaxPeersFileBytes);
    if (!content) {
      error = content.error() + " (keeping the last good list)";
    } else if (auto targets = ParseFileSd(*content, path.string()); !targets) {
      error = "peers file " + path.string() + ": " + targets.error() + " (keeping the last good list)";
    } else if (targets->empty() && !allow_empty && !targets_.empty()) {
      error = "peers file " + path.string() + " lists no targets: refused, keeping the last good list of " +
              std::to_string(targets_.size()) +
              " (set probes.net.allow_empty_peers_file = true if an empty list is intended)";
    } else if (targets->empty() && !allow_empty) {
      // The first load (or after an empty one): no list to keep. Used, so
      // that this host still serves as a responder, but not valid.
      good_ = version;
      targets_.clear();
      error = "peers file " + path.string() +
              " lists no targets: this host probes no peer (set probes.net.allow_empty_peers_file = true if an "
              "empty list is intended)";
    } else {
      good_ = version;
      bad_.reset();
      targets_ = std::move(targets).value();
      valid_ = true;
      return {};
    }
  }
  valid_ = false;
  if (!bad_ || *bad_ != version) {
    ++failures_;
    bad_ = version;
    bad_error_ = std::move(error);
  }
  return Failure{kInvalidReason, bad_error_};
}

std::uint64_t RendezvousScore(std::string_view self, std::string_view peer) {
  return Mix(Fnv1a(peer, Mix(Fnv1a(self))));
}

namespace {

// RendezvousScore with the first half computed once per target.
std::uint64_t ScoreWithSeed(std::uint64_t seed, std::string_view peer) { return Mix(Fnv1a(peer, seed)); }

// Ranks (score descending, name ascending) as ObserversOf orders.
bool Before(std::uint64_t score_a, std::string_view a, std::uint64_t score_b, std::string_view b) {
  return score_a > score_b || (score_a == score_b && a < b);
}

}  // namespace

std::vector<std::string> ObserversOf(std::string_view target, std::span<const std::string> pool, std::size_t k) {
  const std::uint64_t seed = Mix(Fnv1a(target));
  std::vector<std::pair<std::uint64_t, const std::string*>> scored;
  scored.reserve(pool.size());
  for (const std::string& name : pool) {
    if (name != target) scored.emplace_back(ScoreWithSeed(seed, name), &name);
  }
  const std::size_t n = std::min(k, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<long>(n), scored.end(),
                    [](const auto& a, const auto& b) { return Before(a.first, *a.second, b.first, *b.second); });
  std::vector<std::string> observers;
  for (std::size_t i = 0; i < n; ++i) observers.push_back(*scored[i].second);
  return observers;
}

std::vector<PeerSpec> ObservedTargets(std::string_view self, std::span<const PeerSpec> members, std::size_t k) {
  // Self observes t when fewer than k other candidates outrank it for t. The
  // scan of a target stops at the k-th that does, so most targets (where self
  // ranks low) cost far less than a full pass: about N * k * ln(N) hashes
  // rather than N^2 for N members.
  std::vector<std::pair<std::uint64_t, const PeerSpec*>> observed;
  for (const PeerSpec& target : members) {
    if (target.name == self) continue;
    const std::uint64_t seed = Mix(Fnv1a(target.name));
    const std::uint64_t own = ScoreWithSeed(seed, self);
    std::size_t ahead = 0;
    for (const PeerSpec& other : members) {
      if (other.name == target.name || other.name == self) continue;
      if (Before(ScoreWithSeed(seed, other.name), other.name, own, self) && ++ahead >= k) break;
    }
    if (ahead < k) observed.emplace_back(own, &target);
  }
  std::sort(observed.begin(), observed.end(),
            [](const auto& a, const auto& b) { return Before(a.first, a.second->name, b.first, b.second->name); });
  std::vector<PeerSpec> targets;
  targets.reserve(observed.size());
  for (const auto& [score, target] : observed) targets.push_back(*target);
  return targets;
}

std::optional<std::string> FindSelf(std::span<const PeerSpec> members, std::span<const std::uint16_t> ports,
                                    std::span<const std::string> local_addresses,
                                    const std::function<std::optional<std::string>(const PeerSpec&)>& resolve) {
  for (const PeerSpec& member : members) {
    if (std::find(ports.begin(), ports.end(), member.port) == ports.end()) continue;
    const auto address = resolve(member);
    if (address && std::find(local_addresses.begin(), local_addresses.end(), *address) != local_addresses.end()) {
      return member.name;
    }
  }
  return std::nullopt;
}

}  // namespace hostperf::probes::net
