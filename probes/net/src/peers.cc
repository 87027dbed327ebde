#include "hostperf/probes/net/peers.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

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

Result<std::vector<std::string>> TargetsFromJson(std::string_view content) {
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
      targets.push_back(target.get<std::string>());
    }
  }
  return targets;
}

Result<std::vector<std::string>> TargetsFromYaml(std::string_view content) {
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

Result<void> PeersFile::Refresh(const std::filesystem::path& path) {
  if (path != path_) {
    path_ = path;
    mtime_.reset();
    targets_.clear();
  }
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(path, ec);
  if (ec) return Failure{kInvalidReason, "cannot read peers file " + path.string() + ": " + ec.message()};
  if (mtime_ && *mtime_ == mtime && size_ == size) return {};
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto targets = ParseFileSd(content, path.string());
  const bool read_failed = !in.good() && !in.eof();
  if (!targets) {
    // A read error explains a parse failure better than the parser does.
    return Failure{kInvalidReason,
                   "peers file " + path.string() + ": " + (read_failed ? "read error" : targets.error())};
  }
  mtime_ = mtime;
  size_ = size;
  targets_ = std::move(targets).value();
  return {};
}

std::uint64_t RendezvousScore(std::string_view self, std::string_view peer) {
  return Mix(Fnv1a(peer, Mix(Fnv1a(self))));
}

namespace {
std::uint64_t ScoreWithSeed(std::uint64_t seed, std::string_view peer) { return Mix(Fnv1a(peer, seed)); }
}  // namespace

std::vector<PeerSpec> SelectPeers(std::string_view self, std::span<const PeerSpec> peers, std::size_t k) {
  std::vector<std::pair<std::uint64_t, const PeerSpec*>> scored;
  scored.reserve(peers.size());
  const std::uint64_t seed = Mix(Fnv1a(self));  // RendezvousScore, with the self half computed once
  for (const PeerSpec& peer : peers) scored.emplace_back(ScoreWithSeed(seed, peer.name), &peer);
  const std::size_t n = std::min(k, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<long>(n), scored.end(),
                    [](const auto& a, const auto& b) {
                      return a.first > b.first || (a.first == b.first && a.second->name < b.second->name);
                    });
  std::vector<PeerSpec> chosen;
  for (std::size_t i = 0; i < n; ++i) chosen.push_back(*scored[i].second);
  return chosen;
}

}  // namespace hostperf::probes::net
