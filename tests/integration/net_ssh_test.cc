// `hostperf net` on bare hosts, as root: two network namespaces on
// a bridge, each running Debian's real OpenSSH server (started by the test on
// its own port, with a test host key and an authorized test key), and
// nothing of hostperf. The CLI copies hostperf-peer over SCP, starts it over
// SSH, runs the tests, and cleans up: nothing is left in --tmp-dir, also
// after a run interrupted by SIGINT; the one-time secret never shows in `ps`
// on either side. And hostperf-peer is self-contained: it serves from a
// chroot that holds nothing but itself.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "hostperf/probes/net/client.h"
#include "netns_harness.h"
#include "process_harness.h"
#include "ssh_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
namespace net = hostperf::probes::net;

constexpr int kHosts = 2;

// Every process's command line, as `ps` shows them to any user.
std::vector<std::string> CommandLines() {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    // A process may end while we read: read what is there, by hand.
    const int fd = ::open((entry.path() / "cmdline").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    std::string line;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof(buffer))) > 0;) line.append(buffer, static_cast<std::size_t>(n));
    ::close(fd);
    std::replace(line.begin(), line.end(), '\0', ' ');
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

class NetSshTest : public SshHostsTest<kHosts> {
 protected:
  void SetUp() override {
    SshHostsTest::SetUp();
    if (!Ready()) return;
    mesh_ = &hosts_->mesh();
    ssh_port_ = hosts_->port();
    peer_port_ = FreeLoopbackPort();
    fs::create_directories(tmp_dir());
    fs::create_directories(log_dir());
    cli_config_ = dir_.Write("cli.toml", "[probes.net]\nenabled = false\n");
  }

  std::string CommonOptions() const { return SshHosts::CommonOptions(); }
  std::vector<std::string> SshArgs(int host, const std::string& command) const {
    return hosts_->SshArgs(host, command);
  }
  // The results file of a latency and tcp-throughput run: both hosts in
  // the latency table, every throughput row ok. The parsed JSON.
  static nlohmann::json BothHostsMeasured(const std::string& results) {
    std::ifstream in(results);
    auto json = nlohmann::json::parse(in, nullptr, false);
    EXPECT_FALSE(json.is_discarded()) << results;
    if (json.is_discarded()) return nlohmann::json::object();
    EXPECT_EQ(json["tests"]["latency"].size(), 2u);
    for (const auto& row : json["tests"]["tcp-throughput"]) {
      if (row["node"] != "average") EXPECT_EQ(row["outcome"], "ok") << row.dump();
    }
    return json;
  }
  std::string tmp_dir() const { return dir_.path() + "/remote-tmp"; }
  std::string log_dir() const { return dir_.path() + "/logs"; }

  std::vector<std::string> NetArgs(const std::vector<std::string>& tail) const {
    std::vector<std::string> args = {"--config.file=" + cli_config_,
                                     "net",
                                     "--identity-file",
                                     dir_.path() + "/client_key",
                                     "--ssh-options",
                                     "-p " + std::to_string(ssh_port_) + " " + CommonOptions(),
                                     "--scp-options=-P " + std::to_string(ssh_port_) + " " + CommonOptions(),
                                     "--tmp-dir",
                                     tmp_dir(),
                                     "--hosts",
                                     "root@" + mesh_->Address(0) + ",root@" + mesh_->Address(1),
                                     "--ports",
                                     std::to_string(peer_port_)};
    args.insert(args.end(), tail.begin(), tail.end());
    return args;
  }

  std::string Target(int host) const { return mesh_->Address(host) + ":" + std::to_string(peer_port_); }

  Mesh* mesh_ = nullptr;
  std::uint16_t ssh_port_ = 0;
  std::uint16_t peer_port_ = 0;
  std::string cli_config_;
};

TEST_F(NetSshTest, CopiesRunsReportsAndCleansUpWithTheSecretNeverOnACommandLine) {
  // Watch every command line while the run goes: no 64-hex-digit secret.
  std::atomic<bool> done{false};
  std::atomic<int> peers_seen{0};
  std::vector<std::string> leaks;
  static const std::regex kSecretLike("[0-9a-f]{64}");
  std::thread watcher([&] {
    while (!done) {
      for (const std::string& line : CommandLines()) {
        if (line.find("hostperf-peer") != std::string::npos) ++peers_seen;
        const bool ours = line.find("ssh") != std::string::npos || line.find("hostperf") != std::string::npos;
        if (ours && std::regex_search(line, kSecretLike) && leaks.size() < 5) leaks.push_back(line);
      }
      std::this_thread::sleep_for(20ms);
    }
  });
  const std::string results = dir_.path() + "/results.json";
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              NetArgs({"--datarate", "8", "--duration", "1", "--collect-logs", "--log-dir", log_dir(),
                                       "--output-file", results, "latency", "tcp-throughput"}),
                              180s);
  done = true;
  watcher.join();
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_GT(peers_seen.load(), 0) << "hostperf-peer never ran";
  EXPECT_TRUE(leaks.empty()) << leaks.front();
  // Both hosts in both tables; throughput among them both ways.
  EXPECT_THAT(run.out, HasSubstr(Target(0)));
  EXPECT_THAT(run.out, HasSubstr(Target(1)));
  EXPECT_THAT(run.err, HasSubstr("copying hostperf-peer to 2 hosts"));
  const auto json = BothHostsMeasured(results);
  for (const auto& row : json["tests"]["tcp-throughput"]) {
    if (row["node"] == "average") continue;
    // Among both at once: plans signed with the key the CLI made for the run.
    EXPECT_EQ(row.value("mode", ""), "all-to-all") << row.dump();
    EXPECT_GT(row["bytes_received"].get<double>(), 0) << row.dump();
  }
  // Nothing left behind; the logs came back.
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
  const auto logs = DirectoryEntries(log_dir());
  EXPECT_EQ(logs.size(), 2u);
  for (const auto& log : logs) {
    std::ifstream file(log_dir() + "/" + log);
    const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("hostperf-peer: serving on")) << log;
    EXPECT_THAT(text, HasSubstr("stopping (standard input closed)")) << log;
  }
}

// --collect-logs writes at predictable names: a symlink planted at one is
// not followed (the file it points to stays as it was) and the host whose log
// cannot be opened is named.
TEST_F(NetSshTest, ASymlinkAtALogNameIsNotFollowed) {
  std::filesystem::create_directories(log_dir());
  const std::string victim = dir_.Write("victim", "keep me\n");
  std::filesystem::create_symlink(victim, log_dir() + "/hostperf-peer.root_" + mesh_->Address(0) + ".log");
  const auto run = RunCommand(
      HOSTPERF_CLI_BIN, NetArgs({"--duration", "0.3", "--collect-logs", "--log-dir", log_dir(), "latency"}), 120s);
  EXPECT_NE(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("hostperf-peer.root_" + mesh_->Address(0) + ".log"));
  std::ifstream in(victim);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep me\n");
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

// The same for a hard link planted at a log name (appending would write
// through it to the other name's file) and for a file another user put
// there: neither is written to, and the host is named.
TEST_F(NetSshTest, AHardLinkOrAnotherUsersFileAtALogNameIsNotWrittenThrough) {
  std::filesystem::create_directories(log_dir());
  const std::string victim = dir_.Write("victim", "keep me\n");
  const std::string first = log_dir() + "/hostperf-peer.root_" + mesh_->Address(0) + ".log";
  std::filesystem::create_hard_link(victim, first);
  const std::string second = dir_.Write("logs/hostperf-peer.root_" + mesh_->Address(1) + ".log", "theirs\n");
  ASSERT_EQ(::chown(second.c_str(), 65534, 65534), 0);
  const auto run = RunCommand(
      HOSTPERF_CLI_BIN, NetArgs({"--duration", "0.3", "--collect-logs", "--log-dir", log_dir(), "latency"}), 120s);
  EXPECT_NE(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out + run.err, HasSubstr("hostperf-peer.root_" + mesh_->Address(0) + ".log (a hard link"));
  EXPECT_THAT(run.out + run.err, HasSubstr("hostperf-peer.root_" + mesh_->Address(1) + ".log (owned by another user"));
  const auto content = [](const std::string& path) {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(content(victim), "keep me\n");
  EXPECT_EQ(content(second), "theirs\n");
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

// vnetperf's `--vertica-install DIR`: the peer is already installed under
// the prefix DIR on every host, so nothing is copied (an scp that ran would
// fail on its bad option) and the run works; the bare flag before a test
// name still parses as the package's path.
TEST_F(NetSshTest, VerticaInstallDirUsesTheInstalledPeerAndCopiesNothing) {
  const std::string prefix = dir_.path() + "/opt/vertica";
  fs::create_directories(prefix + "/libexec/hostperf");
  fs::copy_file(PeerProgram(), prefix + "/libexec/hostperf/hostperf-peer");
  const auto results = dir_.path() + "/installed.json";
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              NetArgs({"--scp-options", "-o NoSuchScpOption=1", "--vertica-install", prefix,
                                       "--duration", "0.5", "--output-file", results, "latency"}),
                              120s);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.err, Not(HasSubstr("copying hostperf-peer"))) << run.err;
  EXPECT_THAT(run.out, HasSubstr(Target(0)));
  EXPECT_THAT(run.out, HasSubstr(Target(1)));
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();

  // Without the program under the prefix: each host is named with why.
  const auto missing =
      RunCommand(HOSTPERF_CLI_BIN,
                 NetArgs({"--vertica-install", dir_.path() + "/nothing-here", "--duration", "0.5", "latency"}), 120s);
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.out + missing.err, HasSubstr("nothing-here/libexec/hostperf/hostperf-peer"));
}

TEST_F(NetSshTest, AnInterruptedRunLeavesNothingBehind) {
  ChildProcess cli(HOSTPERF_CLI_BIN, NetArgs({"--datarate", "8", "--duration", "20", "--output-file",
                                              dir_.path() + "/r.json", "tcp-throughput"}));
  // Interrupt once both peers serve (the test is running).
  const bool serving = [&] {
    for (int i = 0; i < 300; ++i) {
      int running = 0;
      for (const std::string& line : CommandLines()) {
        if (line.rfind(tmp_dir(), 0) == 0 && line.find("hostperf-peer --ports") != std::string::npos) ++running;
      }
      if (running == kHosts) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }();
  ASSERT_TRUE(serving) << cli.Stderr();
  std::this_thread::sleep_for(1s);
  cli.Signal(SIGINT);
  const auto status = cli.Wait(60s);
  ASSERT_TRUE(status.has_value()) << "hostperf net did not end after SIGINT";
  EXPECT_THAT(cli.Stderr(), HasSubstr("removing hostperf-peer from 2 hosts"));
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
  for (const std::string& line : CommandLines()) {
    EXPECT_EQ(line.find(tmp_dir() + "/hostperf."), std::string::npos) << "still running: " << line;
  }
}

// kill -9 of `hostperf net` gives it no chance to clean up: its local logs
// of the peers have no name to leave behind in the temporary directory, and
// each peer, its SSH session gone, removes its own copy.
TEST_F(NetSshTest, AKilledRunLeavesNoLocalLogBehind) {
  const std::string local_tmp = dir_.path() + "/local-tmp";
  fs::create_directories(local_tmp);
  ChildProcess cli(
      HOSTPERF_CLI_BIN,
      NetArgs({"--datarate", "8", "--duration", "20", "--output-file", dir_.path() + "/r.json", "tcp-throughput"}),
      {{"TMPDIR", local_tmp}});
  const bool serving = [&] {
    for (int i = 0; i < 300; ++i) {
      int running = 0;
      for (const std::string& line : CommandLines()) {
        if (line.rfind(tmp_dir(), 0) == 0 && line.find("hostperf-peer --ports") != std::string::npos) ++running;
      }
      if (running == kHosts) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }();
  ASSERT_TRUE(serving) << cli.Stderr();
  cli.Signal(SIGKILL);
  ASSERT_TRUE(cli.Wait(30s).has_value());
  EXPECT_TRUE(DirectoryEntries(local_tmp).empty()) << DirectoryEntries(local_tmp).front();
  // The peers notice their session ended and remove their copies.
  for (int i = 0; i < 100 && !DirectoryEntries(tmp_dir()).empty(); ++i) std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

TEST_F(NetSshTest, AHostWithoutSshIsReportedAndTheOthersStillCleanUp) {
  hosts_->StopSshd(1);  // host 1's sshd stops: that host cannot be reached
  const auto run = RunCommand(HOSTPERF_CLI_BIN, NetArgs({"--duration", "0.3", "latency"}), 120s);
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Host root@" + mesh_->Address(1) + " is not usable"));
  EXPECT_THAT(run.err, HasSubstr("--ignore-bad-hosts"));
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

// vnetperf's own seed command line, unchanged, under its drop-in name: no
// secret configured and no SSH option given, so it goes over SSH with the
// operator's own settings. Those are ~/.ssh/config (here a private mount
// over root's ~/.ssh: the port, the key, the throwaway host keys), as an
// operator's would be; the copy goes to the hosts' /tmp and leaves nothing.
TEST_F(NetSshTest, VnetperfsSeedCommandLineRunsOverSshWithTheOperatorsOwnSettings) {
  if (Find("unshare").empty() || Find("mount").empty()) GTEST_SKIP() << "needs unshare and mount (util-linux)";
  const passwd* root = ::getpwuid(0);
  ASSERT_NE(root, nullptr);
  const std::string home_ssh = std::string(root->pw_dir) + "/.ssh";
  // The mount point (the files go in the private mount); removed after if made here.
  const bool made_home_ssh = fs::create_directories(home_ssh);
  const std::string ssh_dir = dir_.path() + "/dot-ssh";
  fs::create_directories(ssh_dir);
  dir_.Write("dot-ssh/config", "Host *\n  Port " + std::to_string(ssh_port_) + "\n  User root\n  IdentityFile " +
                                   dir_.path() +
                                   "/client_key\n  StrictHostKeyChecking no\n"
                                   "  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n");
  const auto copies_in_tmp = [] {
    std::size_t count = 0;
    for (const auto& name : DirectoryEntries("/tmp")) count += name.rfind("hostperf.", 0) == 0 ? 1 : 0;
    return count;
  };
  const std::size_t before = copies_in_tmp();
  const std::string vnetperf = (fs::path(HOSTPERF_CLI_BIN).parent_path() / "drop-in" / "vnetperf").string();
  const std::string results = dir_.path() + "/seed.json";
  const std::string seed = "vnetperf --hosts " + mesh_->Address(0) + "," + mesh_->Address(1) +
                           " --duration 1 --datarate 8 --output-file " + results + " latency tcp-throughput";
  const auto run = RunCommand(Find("unshare"),
                              {"--mount", "--propagation", "private", "/bin/sh", "-c",
                               "mount --bind " + ssh_dir + " " + home_ssh + " && cd " + dir_.path() +
                                   " && PATH=" + fs::path(vnetperf).parent_path().string() +
                                   ":$PATH HOSTPERF_CONFIG=" + cli_config_ + " exec " + seed},
                              180s);
  if (made_home_ssh) fs::remove(home_ssh);
  if (run.status != 0 && run.err.find("unshare: ") != std::string::npos) {
    GTEST_SKIP() << "no private mount namespace here: " << run.err;
  }
  ASSERT_EQ(run.status, 0) << seed << "\n" << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("copying hostperf-peer to 2 hosts"));
  BothHostsMeasured(results);
  EXPECT_EQ(copies_in_tmp(), before) << "a hostperf.* copy left in /tmp";
}

// hostperf-peer needs nothing on the host: it serves from a root that holds
// only itself (no libc, no libcrypto, no /proc).
TEST(NetPeerProgram, ServesFromAChrootThatHoldsNothingElse) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for chroot";
  TempDir dir;
  const std::string root = dir.path() + "/root";
  fs::create_directories(root);
  fs::copy_file(PeerProgram(), root + "/hostperf-peer");
  fs::permissions(root + "/hostperf-peer", fs::perms::owner_all);
  const std::uint16_t port = FreeLoopbackPort();
  const std::string secret = "chroot-test-secret-0123456789abcdef";
  // Its input (the secret, a public key, a plan secret), then the pipe stays
  // open while the test asks.
  ChildProcess peer("/bin/sh",
                    {"-c", "(printf '%s\\n%s\\n%s\\n' \"$SECRET\" " + std::string(64, 'a') +
                               " plan-secret-0123456789abcdef; sleep 20) | chroot " + root +
                               " /hostperf-peer --bind 127.0.0.1 --ports " + std::to_string(port)},
                    {{"SECRET", secret}});
  ASSERT_TRUE(peer.WaitForStderr("serving on", 20s)) << peer.Stderr();
  EXPECT_EQ(DirectoryEntries(root), std::vector<std::string>{"hostperf-peer"});
  const auto hello =
      net::Hello(*net::ParseNumericAddress("127.0.0.1", port), net::Secret(secret.begin(), secret.end()), 5s);
  ASSERT_TRUE(hello) << hello.error();
  EXPECT_GE(hello->revision, 2);
}

}  // namespace
}  // namespace hostperf::testing
