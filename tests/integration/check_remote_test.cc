// `hostperf check -h HOST` against real daemons: two hostperf_exporter
// processes on their own loopback addresses (127.0.0.2 and 127.0.0.3) stand
// for two segment hosts; the CLI runs disk, stream and the network bisection
// on them through their run API, as gpcheckperf does over SSH.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "process_harness.h"

namespace hostperf::testing {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kToken = "check-remote-token-0123456789";

// Whether TCP and UDP `port` are both free on `address` right now.
bool FreeOn(const char* address, int port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, address, &in.sin_addr);
  bool free = true;
  for (const int type : {SOCK_STREAM, SOCK_DGRAM}) {
    const int fd = ::socket(AF_INET, type, 0);
    free = free && ::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof(in)) == 0;
    ::close(fd);
  }
  return free;
}

// One responder port free on both hosts' addresses: the fleet shares it.
int SharedResponderPort() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in in{};
    in.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.2", &in.sin_addr);
    socklen_t length = sizeof(in);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&in), sizeof(in)) == 0 &&
                    ::getsockname(fd, reinterpret_cast<sockaddr*>(&in), &length) == 0;
    ::close(fd);
    const int port = ntohs(in.sin_port);
    if (ok && FreeOn("127.0.0.2", port) && FreeOn("127.0.0.3", port)) return port;
  }
  return 0;
}

// A segment host: its daemon's web server and responder on `address`, the
// shared secret and API token, scheduled probes off (full runs still work).
class SegmentHost {
 public:
  SegmentHost(const TempDir& dir, const std::string& address, int responder_port)
      : address_(address),
        process_(HOSTPERF_EXPORTER_BIN,
                 {"--config.file=" +
                      dir.Write(address + ".toml", "state_directory = \"" + dir.path() + "/" + address + "\"\n" +
                                                       "[api]\ntoken_file = \"" + dir.path() + "/token\"\n" +
                                                       "[probes.cpu]\nenabled = false\n"
                                                       "[probes.memory]\nenabled = false\n"
                                                       "[probes.disk]\nenabled = false\nreserve = \"1kb\"\n"
                                                       "[probes.net]\nenabled = false\nbind_address = \"" +
                                                       address + "\"\nports = [" + std::to_string(responder_port) +
                                                       "]\nsecret_file = \"" + dir.path() + "/secret\"\n"),
                  "--web.listen-address=" + address + ":0"}) {}

  // "127.0.0.2:PORT", as -h takes it.
  std::string Spec() {
    if (port_ == 0) port_ = process_.ListeningPort();
    return address_ + ":" + std::to_string(port_);
  }
  ChildProcess& process() { return process_; }

 private:
  std::string address_;
  ChildProcess process_;
  int port_ = 0;
};

std::vector<double> Numbers(const std::string& text, const std::string& pattern) {
  std::vector<double> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod((*it)[1].str()));
  }
  return out;
}

class CheckRemoteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.Write("token", std::string(kToken) + "\n");
    dir_.Write("secret", "check-remote-shared-secret-0123456789\n");
    std::filesystem::create_directories(data_);
    port_ = SharedResponderPort();
    ASSERT_NE(port_, 0) << "no port free on 127.0.0.2 and 127.0.0.3";
  }

  TempDir dir_;
  std::string data_ = dir_.path() + "/data";
  int port_ = 0;
};

TEST_F(CheckRemoteTest, DiskStreamAndBisectionOnTwoHostsThroughTheirRunApi) {
  SegmentHost sdw1(dir_, "127.0.0.2", port_);
  SegmentHost sdw2(dir_, "127.0.0.3", port_);
  const std::string a = sdw1.Spec();
  const std::string b = sdw2.Spec();
  const auto run = RunCommand(HOSTPERF_CLI_BIN,
                              {"check",
                               "-r",
                               "dsN",
                               "-d",
                               data_,
                               "-h",
                               a,
                               "-h",
                               b,
                               "-S",
                               "4mb",
                               "--duration",
                               "1s",
                               "--stream-size",
                               "200000",
                               "--net-port",
                               std::to_string(port_),
                               "--token-file",
                               dir_.path() + "/token",
                               "-D",
                               "-v"},
                              seconds(240));
  ASSERT_EQ(run.status, 0) << run.out << run.err << "\nsdw1:\n"
                           << sdw1.process().Stderr() << "\nsdw2:\n"
                           << sdw2.process().Stderr();
  EXPECT_THAT(run.out, HasSubstr(" ==  RESULT\n"));
  // Every section has a figure from each host.
  for (const char* title : {"disk write", "disk read", "stream"}) {
    for (const std::string& host : {a, b}) {
      const auto figure =
          Numbers(run.out, "     " + std::string(title) + R"( bandwidth \(MB/s\): ([0-9.]+) \[)" + host + R"(\])");
      ASSERT_EQ(figure.size(), 1u) << title << " " << host << "\n" << run.out;
      EXPECT_GT(figure[0], 0) << title << " " << host;
    }
  }
  // The bisection: each host sent to the other's responder at once.
  EXPECT_THAT(run.out, HasSubstr(" Netperf bisection bandwidth test\n"));
  const auto ab = Numbers(run.out, " " + a + " -> " + b + R"( = ([0-9.]+)\n)");
  const auto ba = Numbers(run.out, " " + b + " -> " + a + R"( = ([0-9.]+)\n)");
  ASSERT_EQ(ab.size(), 1u) << run.out;
  ASSERT_EQ(ba.size(), 1u) << run.out;
  EXPECT_GT(ab[0], 1);  // MB/s: loopback moves far more than this
  EXPECT_GT(ba[0], 1);
  EXPECT_THAT(run.out, HasSubstr(" Summary:\n sum = "));
  EXPECT_THAT(run.out, HasSubstr("[Info] netperf " + a + " -> " + b));
  // The hosts' disk tests cleaned up after themselves.
  EXPECT_TRUE(std::filesystem::is_empty(data_));
  // Both daemons are still up after serving the runs.
  EXPECT_FALSE(sdw1.process().Wait(std::chrono::milliseconds(0)));
  EXPECT_FALSE(sdw2.process().Wait(std::chrono::milliseconds(0)));
}

TEST_F(CheckRemoteTest, DeadHostWrongTokenAndMissingTokenAreClearErrors) {
  SegmentHost sdw1(dir_, "127.0.0.2", port_);
  const std::string a = sdw1.Spec();
  // 127.0.0.4:1: nothing listens there. The live host still reports.
  const auto dead = RunCommand(HOSTPERF_CLI_BIN,
                               {"check", "-r", "s", "-h", a, "-h", "127.0.0.4:1", "--stream-size", "100000",
                                "--token-file", dir_.path() + "/token", "-D"},
                               seconds(120));
  EXPECT_EQ(dead.status, 1) << dead.out << dead.err;
  EXPECT_THAT(dead.err,
              HasSubstr("stream test on 127.0.0.4:1 failed: remote_unreachable: cannot connect to 127.0.0.4:1"));
  EXPECT_THAT(dead.out, HasSubstr("stream bandwidth (MB/s): "));
  EXPECT_THAT(dead.out, HasSubstr("[" + a + "]"));

  const std::string wrong = dir_.Write("wrong-token", "not-the-token\n");
  const auto rejected = RunCommand(
      HOSTPERF_CLI_BIN, {"check", "-r", "s", "-h", a, "--stream-size", "100000", "--token-file", wrong}, seconds(60));
  EXPECT_EQ(rejected.status, 1);
  EXPECT_THAT(rejected.err, HasSubstr("remote_rejected"));
  EXPECT_THAT(rejected.err, HasSubstr("HTTP 401"));
  EXPECT_THAT(rejected.out, Not(HasSubstr("stream tot bandwidth")));

  const std::string config = dir_.Write("cli.toml", "state_directory = \"" + dir_.path() + "/cli\"\n");
  const auto no_token =
      RunCommand(HOSTPERF_CLI_BIN, {"--config.file=" + config, "check", "-r", "s", "-h", a}, seconds(60));
  EXPECT_EQ(no_token.status, 1);
  EXPECT_THAT(no_token.err, HasSubstr("--token-file FILE or api.token_file"));
  // The daemon kept running through all of it.
  EXPECT_FALSE(sdw1.process().Wait(std::chrono::milliseconds(0)));
}

}  // namespace
}  // namespace hostperf::testing
