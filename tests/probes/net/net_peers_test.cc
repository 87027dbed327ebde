#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "hostperf/probes/net/peers.h"
#include "temp_dir.h"

namespace hostperf::probes::net {
namespace {

TEST(NetPeerSpecTest, ParsesNamesAddressesAndPorts) {
  EXPECT_EQ(*ParsePeerSpec("db1", 14159), (PeerSpec{"db1", "db1", 14159}));
  EXPECT_EQ(*ParsePeerSpec("db2:14160", 14159), (PeerSpec{"db2:14160", "db2", 14160}));
  EXPECT_EQ(*ParsePeerSpec("10.0.0.1", 1), (PeerSpec{"10.0.0.1", "10.0.0.1", 1}));
  EXPECT_EQ(*ParsePeerSpec("[fe80::1]:14159", 1), (PeerSpec{"[fe80::1]:14159", "fe80::1", 14159}));
  EXPECT_EQ(*ParsePeerSpec("[::1]", 9), (PeerSpec{"[::1]", "::1", 9}));
  EXPECT_EQ(*ParsePeerSpec("fe80::2", 9), (PeerSpec{"fe80::2", "fe80::2", 9}));
  for (const char* bad : {"", "db:0", "db:70000", "db:x", "[::1", "[::1]x", "bad host", "a/b"}) {
    const auto parsed = ParsePeerSpec(bad, 14159);
    EXPECT_FALSE(parsed) << bad;
    EXPECT_FALSE(parsed.error().empty()) << bad;
  }
}

TEST(NetFileSdTest, ParsesJsonAndYaml) {
  const auto json =
      ParseFileSd(R"([{"targets": ["a:1", "b"], "labels": {"dc": "x"}}, {"targets": ["c"]}])", "peers.json");
  ASSERT_TRUE(json) << json.error();
  EXPECT_EQ(*json, (std::vector<std::string>{"a:1", "b", "c"}));
  const auto yaml = ParseFileSd("- targets: ['a:1', b]\n  labels: {dc: x}\n- targets:\n  - c\n", "peers.yml");
  ASSERT_TRUE(yaml) << yaml.error();
  EXPECT_EQ(*yaml, (std::vector<std::string>{"a:1", "b", "c"}));
  const auto guessed = ParseFileSd("- targets: [z]\n", "peers");
  ASSERT_TRUE(guessed);
  EXPECT_EQ(*guessed, std::vector<std::string>{"z"});
}

TEST(NetFileSdTest, RejectsBadFiles) {
  for (const auto& [content, name] :
       std::vector<std::pair<std::string, std::string>>{{"{", "p.json"},
                                                        {R"({"targets": []})", "p.json"},
                                                        {R"([{"labels": {}}])", "p.json"},
                                                        {R"([{"targets": [1]}])", "p.json"},
                                                        {"- targets: [a\n", "p.yaml"},
                                                        {"targets: [a]\n", "p.yaml"},
                                                        {"- targets: [[a]]\n", "p.yaml"}}) {
    const auto parsed = ParseFileSd(content, name);
    EXPECT_FALSE(parsed) << content;
    EXPECT_FALSE(parsed.error().empty()) << content;
  }
}

TEST(NetPeersFileTest, RereadsOnChangeAndKeepsLastGoodList) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.json";
  std::ofstream(path) << R"([{"targets": ["a"]}])";
  PeersFile file;
  auto refreshed = file.Refresh(path);
  EXPECT_EQ(file.targets(), std::vector<std::string>{"a"});
  EXPECT_TRUE(refreshed.error().empty());
  std::ofstream(path) << R"([{"targets": ["a", "b"]}])";  // a different size: re-read
  refreshed = file.Refresh(path);
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  std::ofstream(path) << "not json at all, and longer";
  refreshed = file.Refresh(path);
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(refreshed.error().find("peers.json"), std::string::npos) << refreshed.error();
  std::filesystem::remove(path);
  refreshed = file.Refresh(path);
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(refreshed.error().empty());
}

std::vector<PeerSpec> Members(std::size_t n, const std::string& prefix = "host") {
  std::vector<PeerSpec> members;
  for (std::size_t i = 0; i < n; ++i) {
    const std::string host = prefix + std::to_string(i);
    members.push_back({host + ":14159", host, 14159});
  }
  return members;
}

// Every member computes its own set, as each daemon does: target -> observers.
std::map<std::string, std::set<std::string>> ObserversByTarget(const std::vector<PeerSpec>& members, std::size_t k) {
  std::map<std::string, std::set<std::string>> by_target;
  for (const PeerSpec& host : members) {
    for (const PeerSpec& target : ObservedTargets(host.name, members, k)) by_target[target.name].insert(host.name);
  }
  return by_target;
}

std::set<std::pair<std::string, std::string>> Pairs(const std::map<std::string, std::set<std::string>>& by_target) {
  std::set<std::pair<std::string, std::string>> pairs;  // (observer, target)
  for (const auto& [target, observers] : by_target) {
    for (const auto& observer : observers) pairs.emplace(observer, target);
  }
  return pairs;
}

// Each host computes its targets alone, yet every target is watched by
// exactly k observers (the ones ObserversOf names), and hosts observe k
// targets on average.
TEST(NetObserversTest, InDegreeIsExactlyKAndOutDegreeKOnAverage) {
  constexpr std::size_t kK = 8;
  for (const std::size_t n : {30, 300, 1000}) {
    const auto members = Members(n);
    std::vector<std::string> names;
    for (const auto& m : members) names.push_back(m.name);
    const auto by_target = ObserversByTarget(members, kK);
    ASSERT_EQ(by_target.size(), n);
    std::size_t edges = 0;
    std::size_t checked = 0;
    for (const auto& [target, observers] : by_target) {
      EXPECT_EQ(observers.size(), kK) << target << " at n=" << n;
      EXPECT_FALSE(observers.contains(target));
      edges += observers.size();
      if (checked++ < 20) {  // the same set as the target-side definition
        const auto expected = ObserversOf(target, names, kK);
        EXPECT_EQ(observers, std::set<std::string>(expected.begin(), expected.end())) << target;
      }
    }
    EXPECT_EQ(edges, n * kK);  // mean out-degree: exactly k
    std::map<std::string, std::size_t> out_degree;
    for (const auto& [target, observers] : by_target) {
      for (const auto& observer : observers) ++out_degree[observer];
    }
    std::size_t max_out = 0;
    for (const auto& [host, degree] : out_degree) max_out = std::max(max_out, degree);
    EXPECT_LE(max_out, 4 * kK) << "n=" << n;  // Poisson-like spread; the cap bounds it anyway
  }
}

TEST(NetObserversTest, DeterministicAndIndependentOfListOrder) {
  auto members = Members(200);
  const auto first = ObservedTargets("host7:14159", members, 8);
  EXPECT_EQ(first, ObservedTargets("host7:14159", members, 8));
  std::reverse(members.begin(), members.end());
  EXPECT_EQ(first, ObservedTargets("host7:14159", members, 8));
  for (const auto& target : first) EXPECT_NE(target.name, "host7:14159");
  // Highest score first, so that a cap keeps the same ones.
  for (std::size_t i = 1; i < first.size(); ++i) {
    EXPECT_GE(RendezvousScore(first[i - 1].name, "host7:14159"), RendezvousScore(first[i].name, "host7:14159"));
  }
}

TEST(NetObserversTest, SmallFleetsAreAFullMesh) {
  for (const std::size_t n : {1, 2, 5, 9}) {  // n <= k + 1
    const auto members = Members(n);
    for (const auto& host : members) {
      const auto targets = ObservedTargets(host.name, members, 8);
      EXPECT_EQ(targets.size(), n - 1) << host.name << " n=" << n;
    }
  }
  // One more than k + 1: no longer everyone.
  const auto members = Members(10);
  EXPECT_EQ(Pairs(ObserversByTarget(members, 8)).size(), 10u * 8);
}

// Adding or removing one member changes only the pairs that involve it,
// plus, for each target it starts (stops) observing, the one observer it
// displaces (makes room for).
TEST(NetObserversTest, MembershipChangeMovesOnlyWhatItMust) {
  constexpr std::size_t kK = 8;
  const auto before = Members(300);
  auto after = before;
  after.push_back({"newcomer:14159", "newcomer", 14159});
  const auto old_pairs = Pairs(ObserversByTarget(before, kK));
  const auto new_pairs = Pairs(ObserversByTarget(after, kK));
  const auto newcomer_targets = ObservedTargets("newcomer:14159", after, kK);
  std::set<std::string> displaced_at;
  for (const auto& t : newcomer_targets) displaced_at.insert(t.name);

  std::size_t removed = 0;
  for (const auto& pair : old_pairs) {
    if (new_pairs.contains(pair)) continue;
    ++removed;
    EXPECT_TRUE(displaced_at.contains(pair.second)) << pair.first << " -> " << pair.second << " moved needlessly";
  }
  EXPECT_EQ(removed, newcomer_targets.size());  // one displaced observer per target the newcomer took
  std::size_t added = 0;
  for (const auto& pair : new_pairs) {
    if (old_pairs.contains(pair)) continue;
    ++added;
    EXPECT_TRUE(pair.first == "newcomer:14159" || pair.second == "newcomer:14159")
        << pair.first << " -> " << pair.second;
  }
  EXPECT_EQ(added, newcomer_targets.size() + kK);  // its own targets and its k observers

  // Removal is the same change backwards: only the departed member's pairs
  // go, and each target it observed gets one new observer.
  auto fewer = before;
  const std::string gone = fewer[17].name;
  const auto gone_targets = ObservedTargets(gone, before, kK);
  fewer.erase(fewer.begin() + 17);
  const auto fewer_pairs = Pairs(ObserversByTarget(fewer, kK));
  std::set<std::string> refilled;
  for (const auto& t : gone_targets) refilled.insert(t.name);
  std::size_t gained = 0;
  for (const auto& pair : fewer_pairs) {
    if (old_pairs.contains(pair)) continue;
    ++gained;
    EXPECT_TRUE(refilled.contains(pair.second)) << pair.first << " -> " << pair.second;
  }
  EXPECT_EQ(gained, gone_targets.size());
}

// A host not in the list (self not found) still computes a defined set: it
// competes for observer slots like a member, but is never a target.
TEST(NetObserversTest, OutsideObserverIsInThePoolButNeverATarget) {
  const auto members = Members(50);
  std::vector<std::string> pool;
  for (const auto& m : members) pool.push_back(m.name);
  pool.push_back("outside:14159");
  const auto targets = ObservedTargets("outside:14159", members, 8);
  EXPECT_FALSE(targets.empty());
  std::set<std::string> expected;
  for (const auto& m : members) {
    const auto observers = ObserversOf(m.name, pool, 8);
    if (std::find(observers.begin(), observers.end(), "outside:14159") != observers.end()) expected.insert(m.name);
  }
  std::set<std::string> got;
  for (const auto& t : targets) got.insert(t.name);
  EXPECT_EQ(got, expected);
}

// The assignment is cached by the probe, but even recomputing it for 1000
// members must be cheap (printed for docs/benchmarks).
TEST(NetObserversTest, ThousandMembersTakeMilliseconds) {
  const auto members = Members(1000);
  const auto started = std::chrono::steady_clock::now();
  const auto targets = ObservedTargets("host500:14159", members, 8);
  const auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  std::printf("ObservedTargets, 1000 members, k=8: %.2f ms, %zu targets\n", elapsed, targets.size());
  EXPECT_LT(elapsed, 1000);
}

TEST(NetFindSelfTest, MatchesAddressAndPort) {
  const std::vector<PeerSpec> members = {{"db1:14159", "db1", 14159},
                                         {"db2:14159", "db2", 14159},
                                         {"db2:14160", "db2", 14160},
                                         {"gone:14159", "gone", 14159}};
  const std::map<std::string, std::string> dns = {{"db1", "10.0.0.1"}, {"db2", "10.0.0.2"}};
  const auto resolve = [&](const PeerSpec& spec) -> std::optional<std::string> {
    const auto it = dns.find(spec.host);
    return it == dns.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  const std::vector<std::string> local = {"127.0.0.1", "10.0.0.2"};
  const std::vector<std::uint16_t> port_14160 = {14160};
  const std::vector<std::uint16_t> port_14159 = {14159};
  EXPECT_EQ(FindSelf(members, port_14160, local, resolve), "db2:14160");
  EXPECT_EQ(FindSelf(members, port_14159, local, resolve), "db2:14159");
  const std::vector<std::string> elsewhere = {"10.0.0.9"};
  EXPECT_EQ(FindSelf(members, port_14159, elsewhere, resolve), std::nullopt);
  const std::vector<std::uint16_t> other_port = {9};
  EXPECT_EQ(FindSelf(members, other_port, local, resolve), std::nullopt);
}

// A file replaced by rename (as config management tools write) is a new
// inode: picked up even with the same size and modification time.
TEST(NetPeersFileTest, RenameOverTheFileIsAChange) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.json";
  std::ofstream(path) << R"([{"targets": ["a1"]}])";
  PeersFile file;
  ASSERT_TRUE(file.Refresh(path).error().empty());
  EXPECT_EQ(file.targets(), std::vector<std::string>{"a1"});
  const auto mtime = std::filesystem::last_write_time(path);
  const auto staged = dir.path() / "peers.json.tmp";
  std::ofstream(staged) << R"([{"targets": ["b2"]}])";  // same size
  std::filesystem::last_write_time(staged, mtime);
  std::filesystem::rename(staged, path);
  ASSERT_TRUE(file.Refresh(path).error().empty());
  EXPECT_EQ(file.targets(), std::vector<std::string>{"b2"});
  EXPECT_EQ(file.failures(), 0u);
}

// A bad version is counted once, however many runs see it, and the last
// good list stays; the next good version is taken.
TEST(NetPeersFileTest, BadEditIsCountedOnceAndKeepsTheLastGoodList) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.yaml";
  std::ofstream(path) << "- targets: [a, b]\n";
  PeersFile file;
  ASSERT_TRUE(file.Refresh(path).error().empty());
  std::ofstream(path) << "- targets: [a, b\n";  // a bad edit
  for (int run = 0; run < 3; ++run) {
    EXPECT_FALSE(file.Refresh(path).error().empty());
    EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  }
  EXPECT_EQ(file.failures(), 1u);
  std::ofstream(path) << "- targets: [c]\n";
  EXPECT_TRUE(file.Refresh(path).error().empty());
  EXPECT_EQ(file.targets(), std::vector<std::string>{"c"});
  EXPECT_EQ(file.failures(), 1u);
}

// `[]` replacing a good list is a bad edit like any other (the
// last good list kept, counted once, not valid), not a silent drop of every
// peer; the same file is taken once the operator allows empty lists.
TEST(NetPeersFileTest, EmptyListReplacingAGoodOneIsRefusedUnlessAllowed) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.json";
  std::ofstream(path) << R"([{"targets": ["a", "b"]}])";
  PeersFile file;
  ASSERT_TRUE(file.Refresh(path).error().empty());
  EXPECT_TRUE(file.valid());
  for (const char* empty : {"[]", R"([{"targets": []}])"}) {
    std::ofstream(path) << empty;
    for (int run = 0; run < 3; ++run) {
      const auto refreshed = file.Refresh(path);
      EXPECT_NE(refreshed.error().find("lists no targets"), std::string::npos) << refreshed.error();
      EXPECT_NE(refreshed.error().find("keeping the last good list of 2"), std::string::npos) << refreshed.error();
      EXPECT_NE(refreshed.error().find("probes.net.allow_empty_peers_file = true"), std::string::npos);
      EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
      EXPECT_FALSE(file.valid());
    }
  }
  EXPECT_EQ(file.failures(), 2u);  // two versions, each once

  // Allowed: the same version is judged again and taken.
  EXPECT_TRUE(file.Refresh(path, /*allow_empty=*/true).error().empty());
  EXPECT_TRUE(file.targets().empty());
  EXPECT_TRUE(file.valid());
  EXPECT_EQ(file.failures(), 2u);

  std::ofstream(path) << R"([{"targets": ["c"]}])";
  EXPECT_TRUE(file.Refresh(path).error().empty());
  EXPECT_EQ(file.targets(), std::vector<std::string>{"c"});
  EXPECT_TRUE(file.valid());
}

// At the first load there is no list to keep: an empty one is used (the
// host probes nobody) but reported as not valid, once, unless allowed.
TEST(NetPeersFileTest, EmptyListAtTheFirstLoadIsUsedButNotValid) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.yaml";
  std::ofstream(path) << "[]\n";
  PeersFile file;
  for (int run = 0; run < 2; ++run) {
    const auto refreshed = file.Refresh(path);
    EXPECT_NE(refreshed.error().find("lists no targets: this host probes no peer"), std::string::npos)
        << refreshed.error();
    EXPECT_TRUE(file.targets().empty());
    EXPECT_FALSE(file.valid());
  }
  EXPECT_EQ(file.failures(), 1u);
  std::ofstream(path) << "- targets: [a]\n";
  EXPECT_TRUE(file.Refresh(path).error().empty());
  EXPECT_TRUE(file.valid());

  PeersFile allowed;
  std::ofstream(path) << "[]\n";
  EXPECT_TRUE(allowed.Refresh(path, /*allow_empty=*/true).error().empty());
  EXPECT_TRUE(allowed.valid());
  EXPECT_EQ(allowed.failures(), 0u);
}

// `- &g {targets: [h, h, ...]}` then `- *g` `aliases` times: the
// 48 KB file that expanded to over 1 GiB.
std::string AliasBomb(int targets, int aliases) {
  std::string yaml = "- &g {targets: [h";
  for (int i = 1; i < targets; ++i) yaml += ", h";
  yaml += "]}\n";
  for (int i = 0; i < aliases; ++i) yaml += "- *g\n";
  return yaml;
}

TEST(NetFileSdTest, YamlAliasesAndAnchorsAreRefused) {
  const auto bomb = ParseFileSd(AliasBomb(1000, 100), "peers.yaml");
  ASSERT_FALSE(bomb);
  EXPECT_EQ(bomb.error(), "line 1: YAML anchors (&name) are not accepted in a peers file");
  const auto alias = ParseFileSd("- targets: [a]\n  labels: &l {dc: x}\n- targets: [b]\n  labels: *l\n", "p.yml");
  ASSERT_FALSE(alias);
  EXPECT_NE(alias.error().find("not accepted in a peers file"), std::string::npos) << alias.error();
  // Without an extension: JSON first, then YAML; the YAML rule holds.
  EXPECT_FALSE(ParseFileSd(AliasBomb(10, 10), "peers"));
}

TEST(NetFileSdTest, TargetCountAndNestingAreBounded) {
  std::string json = R"([{"targets": [)";
  std::string yaml = "- targets: [";
  for (std::size_t i = 0; i <= kMaxPeersFileTargets; ++i) {
    json += (i == 0 ? "\"h" : ", \"h") + std::to_string(i) + "\"";
    yaml += (i == 0 ? "h" : ", h") + std::to_string(i);
  }
  json += "]}]";
  yaml += "]\n";
  for (const auto& [content, name] : {std::pair{json, "p.json"}, std::pair{yaml, "p.yaml"}}) {
    const auto parsed = ParseFileSd(content, name);
    ASSERT_FALSE(parsed) << name;
    EXPECT_EQ(parsed.error(), "more than 10000 targets (the cap of a peers file)") << name;
  }
  EXPECT_FALSE(ParseFileSd(std::string(200, '[') + std::string(200, ']'), "p.json"));
  EXPECT_EQ(ParseFileSd(std::string(200, '[') + std::string(200, ']'), "p.json").error(),
            "nested deeper than 64 levels of arrays and objects");
  const auto deep_yaml = ParseFileSd("- targets: " + std::string(200, '[') + std::string(200, ']') + "\n", "p.yaml");
  ASSERT_FALSE(deep_yaml);
  EXPECT_NE(deep_yaml.error().find("nested deeper than 64 levels"), std::string::npos) << deep_yaml.error();
}

// A refused file (alias bomb, too big, a FIFO) is one bad version: counted,
// the last good list kept.
TEST(NetPeersFileTest, RefusedFilesKeepTheLastGoodList) {
  test_support::TempDir dir;
  const auto path = dir.path() / "peers.yaml";
  std::ofstream(path) << "- targets: [a, b]\n";
  PeersFile file;
  ASSERT_TRUE(file.Refresh(path).error().empty());
  std::ofstream(path) << AliasBomb(5000, 6600);
  EXPECT_LT(std::filesystem::file_size(path), 48u << 10);
  auto refreshed = file.Refresh(path);
  EXPECT_NE(refreshed.error().find("YAML anchors (&name) are not accepted"), std::string::npos) << refreshed.error();
  EXPECT_NE(refreshed.error().find("keeping the last good list"), std::string::npos) << refreshed.error();
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(file.failures(), 1u);

  std::ofstream(path) << "- targets: [c]\n" << std::string(kMaxPeersFileBytes, '#');
  refreshed = file.Refresh(path);
  EXPECT_NE(refreshed.error().find("larger than the cap of 4 MiB"), std::string::npos) << refreshed.error();
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(file.failures(), 2u);

  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  refreshed = file.Refresh(path);  // returns at once: no writer needed
  EXPECT_NE(refreshed.error().find("is a FIFO"), std::string::npos) << refreshed.error();
  EXPECT_EQ(file.targets(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(file.failures(), 3u);
  EXPECT_FALSE(file.valid());
}

}  // namespace
}  // namespace hostperf::probes::net
