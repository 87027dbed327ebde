#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
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

// 1000 hosts each choose 8: every host probes exactly 8 others, each host is
// probed by about 8 in one epoch, and over 25 epochs the load evens out.
TEST(NetRendezvousTest, BalancedOverAThousandHosts) {
  constexpr std::size_t kHosts = 1000;
  constexpr std::size_t kPerCycle = 8;
  constexpr int kEpochs = 25;
  std::vector<PeerSpec> hosts;
  for (std::size_t i = 0; i < kHosts; ++i) {
    const std::string name = "host" + std::to_string(i) + ":14159";
    hosts.push_back({name, "host" + std::to_string(i), 14159});
  }
  std::map<std::string, int> probed_by;
  std::map<std::string, int> first_epoch;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    std::vector<PeerSpec> order = hosts;
    for (std::size_t i = 0; i < kHosts; ++i) {
      // Everyone but host i: swap it to the back and leave it out.
      std::swap(order[i], order.back());
      const std::string self = order.back().name;
      const auto chosen = SelectPeers(self + "/" + std::to_string(epoch),
                                      std::span<const PeerSpec>(order.data(), kHosts - 1), kPerCycle);
      std::swap(order[i], order.back());
      ASSERT_EQ(chosen.size(), kPerCycle);
      for (const auto& peer : chosen) {
        ++probed_by[peer.name];
        if (epoch == 0) ++first_epoch[peer.name];
      }
    }
  }
  int max_first = 0;
  for (const auto& [name, count] : first_epoch) max_first = std::max(max_first, count);
  EXPECT_LE(max_first, 3 * static_cast<int>(kPerCycle));  // Poisson(8): 24 is ~1e-6 per host
  const double mean = static_cast<double>(kPerCycle * kEpochs);
  for (const auto& host : hosts) {
    EXPECT_GT(probed_by[host.name], mean * 0.6) << host.name;
    EXPECT_LT(probed_by[host.name], mean * 1.4) << host.name;
  }
  // Stable: the same input gives the same choice.
  EXPECT_EQ(SelectPeers("x/1", hosts, 3), SelectPeers("x/1", hosts, 3));
  EXPECT_EQ(SelectPeers("x/1", hosts, 5000).size(), kHosts);
}

}  // namespace
}  // namespace hostperf::probes::net
