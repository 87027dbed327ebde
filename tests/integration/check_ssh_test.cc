// `hostperf check --ssh` (gpcheckperf's workflow before install), as root:
// four network namespaces on a bridge, each running Debian's real OpenSSH
// server and nothing of hostperf (ssh_harness.h). The CLI copies
// hostperf-peer and itself with the libraries it loads to each host, runs
// the disk, stream and network tests there and prints the RESULT block;
// afterwards nothing is left in --tmp-dir nor in the test directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "process_harness.h"
#include "ssh_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

constexpr int kHosts = 4;

class CheckSshTest : public SshHostsTest<kHosts> {
 protected:
  void SetUp() override {
    SshHostsTest::SetUp();
    if (!Ready()) return;
    fs::create_directories(tmp_dir());
    fs::create_directories(data_dir());
    // The CLI's own config: no run API token, so SSH is the only way.
    cli_config_ = dir_.Write("cli.toml", "state_directory = \"" + dir_.path() + "/cli-state\"\n");
  }

  std::string tmp_dir() const { return dir_.path() + "/remote-tmp"; }
  std::string data_dir() const { return dir_.path() + "/data"; }

  // check's arguments: the SSH options, every host, then `tail`.
  std::vector<std::string> CheckArgs(const std::vector<std::string>& tail, bool explicit_ssh = true) const {
    std::vector<std::string> args = {"--config.file=" + cli_config_, "check"};
    if (explicit_ssh) args.push_back("--ssh");
    args.insert(args.end(), {"--identity-file", hosts_->client_key(), "--ssh-options", hosts_->SshOptions(),
                             "--scp-options=" + hosts_->ScpOptions(), "--tmp-dir", tmp_dir()});
    for (int i = 0; i < kHosts; ++i) args.insert(args.end(), {"-h", hosts_->Destination(i)});
    args.insert(args.end(), tail.begin(), tail.end());
    return args;
  }

  std::string cli_config_;
};

TEST_F(CheckSshTest, DiskStreamAndParallelPairsOnFourBareHostsLeaveNothingBehind) {
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              CheckArgs({"-r", "dsN", "-d", data_dir(), "-S", "64MB", "--stream-size", "2000000",
                                         "--duration", "1", "-D", "-v"}),
                              300s);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(" ==  RESULT\n"));
  EXPECT_THAT(run.out, HasSubstr("disk write tot bandwidth (MB/s): "));
  EXPECT_THAT(run.out, HasSubstr("disk read tot bandwidth (MB/s): "));
  EXPECT_THAT(run.out, HasSubstr("stream tot bandwidth (MB/s): "));
  EXPECT_THAT(run.out, HasSubstr(" Netperf bisection bandwidth test\n"));
  for (int i = 0; i < kHosts; ++i) {
    // -D: every host's own line in each section.
    EXPECT_THAT(run.out, HasSubstr("[" + hosts_->Destination(i) + "]")) << run.out;
  }
  // Parallel pairs: 0-1 and 2-3, both ways.
  EXPECT_THAT(run.out, HasSubstr("[Info] netperf " + hosts_->Destination(0) + " -> " + hosts_->Destination(1)));
  EXPECT_THAT(run.out, HasSubstr("[Info] netperf " + hosts_->Destination(3) + " -> " + hosts_->Destination(2)));
  EXPECT_THAT(run.err, HasSubstr("copying hostperf-peer to 4 hosts"));
  EXPECT_THAT(run.err, Not(HasSubstr("could not remove")));
  // Nothing left: not the copies, not the disk test's files.
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
  EXPECT_TRUE(DirectoryEntries(data_dir()).empty()) << DirectoryEntries(data_dir()).front();
}

TEST_F(CheckSshTest, JsonFiguresComeFromEveryHostAndEveryLinkOfTheMatrix) {
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              CheckArgs({"-r", "sM", "--stream-size", "2000000", "--duration", "1", "--json"}), 300s);
  ASSERT_EQ(run.status, 0) << run.out << run.err;
  const auto json = nlohmann::json::parse(run.out, nullptr, false);
  ASSERT_TRUE(json.is_object()) << run.out;
  EXPECT_TRUE(json["errors"].empty()) << json["errors"].dump();
  ASSERT_EQ(json["hosts"].size(), static_cast<std::size_t>(kHosts));
  for (const auto& host : json["hosts"]) EXPECT_GT(host["stream"]["bytes_per_second"].get<double>(), 0) << host;
  // Every ordered pair once, each at a real rate.
  ASSERT_EQ(json["network"]["links"].size(), static_cast<std::size_t>(kHosts * (kHosts - 1)));
  for (const auto& link : json["network"]["links"]) {
    EXPECT_NE(link["from"], link["to"]);
    EXPECT_GT(link["bytes_per_second"].get<double>(), 1e6) << link;
  }
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

// A host that cannot be reached is named, the others are measured and
// cleaned up, and the exit status says that not every host was measured.
// Without --ssh: no run API token is configured, so SSH is the way.
TEST_F(CheckSshTest, AnUnreachableHostIsNamedAndTheOthersStillRunAndCleanUp) {
  hosts_->StopSshd(2);
  const auto run = RunCommand(HOSTPERF_CLI_BIN, CheckArgs({"-r", "s", "--stream-size", "2000000"}, false), 300s);
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Host " + hosts_->Destination(2) + " is not usable"));
  EXPECT_THAT(run.err, HasSubstr("stream test on " + hosts_->Destination(2) + " failed"));
  EXPECT_THAT(run.out, HasSubstr("stream tot bandwidth (MB/s): "));
  for (int i : {0, 1, 3}) EXPECT_THAT(run.err, Not(HasSubstr("stream test on " + hosts_->Destination(i))));
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

// kill -9 of the CLI mid-test: each host's SSH sessions end, so its agent
// stops the disk test (standard input closed) and removes its files, and its
// hostperf-peer removes the copy.
TEST_F(CheckSshTest, AKilledCheckLeavesNothingOnAnyHost) {
  ChildProcess cli(HOSTPERF_CLI_BIN, CheckArgs({"-r", "d", "-d", data_dir(), "-S", "2GB", "-B", "64KB"}));
  bool writing = false;
  for (int i = 0; i < 600 && !writing; ++i) {
    writing = !DirectoryEntries(data_dir()).empty();
    if (!writing) std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(writing) << cli.Stderr();
  cli.Signal(SIGKILL);
  ASSERT_TRUE(cli.Wait(30s).has_value());
  for (int i = 0; i < 300 && !(DirectoryEntries(data_dir()).empty() && DirectoryEntries(tmp_dir()).empty()); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(DirectoryEntries(data_dir()).empty()) << DirectoryEntries(data_dir()).front();
  EXPECT_TRUE(DirectoryEntries(tmp_dir()).empty()) << DirectoryEntries(tmp_dir()).front();
}

}  // namespace
}  // namespace hostperf::testing
