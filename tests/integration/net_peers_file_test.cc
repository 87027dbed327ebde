// Real daemons sharing one peers_file: each finds its own entry by address
// and responder port (and never probes it), and a host removed from the file
// loses every series on the others at their next runs, without a reload.
// Each says which entry it is (hostperf_net_self_info), and a file emptied
// by mistake is refused as a bad edit.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kSecret = "integration-test-shared-secret-0123456789";

std::string Peer(std::uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

// Exposition lines that carry peer="<peer>" (the host's own self_info aside).
int PeerLines(const std::string& exposition, const std::string& peer) {
  std::istringstream in(exposition);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.rfind("hostperf_net_self_info{", 0) == 0) continue;
    if (line.find("peer=\"" + peer + "\"") != std::string::npos) ++n;
  }
  return n;
}

class PeersFileDaemon {
 public:
  PeersFileDaemon(const TempDir& dir, const std::string& name, std::uint16_t port) {
    const std::string config = dir.Write(
        name + ".toml", "state_directory = \"" + dir.path() + "/" + name +
                            "\"\n[scheduler]\nfirst_run_splay = \"1s\"\n"
                            "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
                            "[probes.disk]\nenabled = false\n"
                            "[probes.net]\ninterval = \"1s\"\nbind_address = \"127.0.0.1\"\nports = [" +
                            std::to_string(port) + "]\nsecret_file = \"" + dir.path() + "/secret\"\npeers_file = \"" +
                            dir.path() + "/peers.json\"\npackets_per_cycle = 3\npacket_interval = \"5ms\"\n" +
                            "reply_timeout = \"300ms\"\nthroughput_duration = \"0s\"\n");
    process_ = std::make_unique<ChildProcess>(
        HOSTPERF_EXPORTER_BIN, std::vector<std::string>{"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
  }

  std::string Metrics() {
    if (http_port_ == 0) http_port_ = process_->ListeningPort();
    const auto reply = HttpRequest(http_port_, "GET", "/metrics");
    return reply ? reply->body : "";
  }

  template <typename Predicate>
  bool WaitFor(Predicate predicate, std::chrono::seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      if (predicate(Metrics())) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  ChildProcess& process() { return *process_; }

 private:
  std::unique_ptr<ChildProcess> process_;
  int http_port_ = 0;
};

// Replaced by rename, as inventory tools write it.
void WritePeersFile(const TempDir& dir, const std::vector<std::uint16_t>& ports) {
  std::string list;
  for (auto port : ports) list += (list.empty() ? "\"" : ", \"") + Peer(port) + "\"";
  dir.Write("peers.json.tmp", "[{\"targets\": [" + list + "]}]");
  std::filesystem::rename(dir.path() + "/peers.json.tmp", dir.path() + "/peers.json");
}

TEST(NetPeersFileIntegrationTest, OwnEntryIsSkippedAndARemovedHostLosesItsSeriesWithoutAReload) {
  TempDir dir;
  dir.Write("secret", kSecret);
  const std::vector<std::uint16_t> ports = {FreeLoopbackPort(), FreeLoopbackPort(), FreeLoopbackPort()};
  WritePeersFile(dir, ports);
  std::vector<std::unique_ptr<PeersFileDaemon>> daemons;
  for (int i = 0; i < 3; ++i)
    daemons.push_back(std::make_unique<PeersFileDaemon>(dir, "d" + std::to_string(i), ports[i]));

  const auto up = [](std::uint16_t port) { return "hostperf_net_peer_up{peer=\"" + Peer(port) + "\"} 1"; };
  // Three members, 8 observers: a full mesh of the others, never itself.
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("daemon " + std::to_string(i));
    EXPECT_TRUE(daemons[i]->WaitFor(
        [&](const std::string& m) {
          return m.find(up(ports[(i + 1) % 3])) != std::string::npos &&
                 m.find(up(ports[(i + 2) % 3])) != std::string::npos;
        },
        30s))
        << daemons[i]->Metrics() << daemons[i]->process().Stderr();
    EXPECT_EQ(PeerLines(daemons[i]->Metrics(), Peer(ports[i])), 0) << "probed itself";
  }
  EXPECT_NE(daemons[0]->process().Stderr().find("in the peer list"), std::string::npos)
      << daemons[0]->process().Stderr();
  // Each after its first net run (the third daemon's may not have happened
  // yet: the waits above are for the first two).
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("daemon " + std::to_string(i));
    const std::string self = "hostperf_net_self_info{peer=\"" + Peer(ports[i]) + "\"} 1";
    EXPECT_TRUE(daemons[i]->WaitFor(
        [&](const std::string& m) {
          return m.find(self) != std::string::npos && m.find("hostperf_net_peers_file_valid 1") != std::string::npos;
        },
        30s))
        << daemons[i]->Metrics();
  }

  // Host 2 leaves the file: gone from the others' expositions within a few runs.
  WritePeersFile(dir, {ports[0], ports[1]});
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("daemon " + std::to_string(i));
    EXPECT_TRUE(
        daemons[i]->WaitFor([&](const std::string& m) { return !m.empty() && PeerLines(m, Peer(ports[2])) == 0; }, 10s))
        << daemons[i]->Metrics();
    const std::string m = daemons[i]->Metrics();
    EXPECT_NE(m.find("hostperf_net_peers{set=\"known\"} 2"), std::string::npos) << m;
    EXPECT_NE(m.find(up(ports[1 - i])), std::string::npos) << m;
  }
  // Host 2 is out of the list: an outside observer, no self_info.
  EXPECT_TRUE(daemons[2]->WaitFor(
      [](const std::string& m) { return !m.empty() && m.find("hostperf_net_self_info{") == std::string::npos; }, 10s))
      << daemons[2]->Metrics();

  // `[]` written over the file on every host (a broken inventory export):
  // refused, the last good list stays, one error and one log line each.
  dir.Write("peers.json.tmp", "[]");
  std::filesystem::rename(dir.path() + "/peers.json.tmp", dir.path() + "/peers.json");
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE("daemon " + std::to_string(i));
    EXPECT_TRUE(daemons[i]->WaitFor(
        [](const std::string& m) { return m.find("hostperf_net_peers_file_valid 0") != std::string::npos; }, 10s))
        << daemons[i]->Metrics();
    std::this_thread::sleep_for(2500ms);  // two more runs see the same version
    const std::string m = daemons[i]->Metrics();
    EXPECT_NE(m.find("hostperf_net_peers_file_errors_total 1"), std::string::npos) << m;
    EXPECT_NE(m.find("hostperf_net_peers{set=\"known\"} 2"), std::string::npos) << m;
    EXPECT_NE(m.find(up(ports[1 - i])), std::string::npos) << m;
    const std::string log = daemons[i]->process().Stderr();
    const auto first = log.find("allow_empty_peers_file = true");
    EXPECT_NE(first, std::string::npos) << log;
    EXPECT_EQ(log.find("allow_empty_peers_file = true", first + 1), std::string::npos) << "logged more than once";
  }
}

}  // namespace
}  // namespace hostperf::testing
