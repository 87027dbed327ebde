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

#include "../common/test_pki.h"
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
  // `web_config`: a --web.config.file for the daemon (TLS, basic auth).
  SegmentHost(const TempDir& dir, const std::string& address, int responder_port, const std::string& web_config = "")
      : address_(address), process_(HOSTPERF_EXPORTER_BIN, Args(dir, address, responder_port, web_config)) {}

  // "127.0.0.2:PORT", as -h takes it.
  std::string Spec() {
    if (port_ == 0) port_ = process_.ListeningPort();
    return address_ + ":" + std::to_string(port_);
  }
  ChildProcess& process() { return process_; }

 private:
  static std::vector<std::string> Args(const TempDir& dir, const std::string& address, int responder_port,
                                       const std::string& web_config) {
    std::vector<std::string> args = {
        "--config.file=" + dir.Write(address + ".toml", "state_directory = \"" + dir.path() + "/" + address + "\"\n" +
                                                            "[api]\ntoken_file = \"" + dir.path() + "/token\"\n" +
                                                            "[probes.cpu]\nenabled = false\n"
                                                            "[probes.memory]\nenabled = false\n"
                                                            "[probes.disk]\nenabled = false\nreserve = \"1kb\"\n"
                                                            "[probes.net]\nenabled = false\nbind_address = \"" +
                                                            address + "\"\nports = [" + std::to_string(responder_port) +
                                                            "]\nsecret_file = \"" + dir.path() + "/secret\"\n"),
        "--web.listen-address=" + address + ":0"};
    if (!web_config.empty()) args.push_back("--web.config.file=" + web_config);
    return args;
  }

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
                               "--insecure-http",
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
                                "--token-file", dir_.path() + "/token", "--insecure-http", "-D"},
                               seconds(120));
  EXPECT_EQ(dead.status, 1) << dead.out << dead.err;
  EXPECT_THAT(dead.err,
              HasSubstr("stream test on 127.0.0.4:1 failed: remote_unreachable: cannot connect to 127.0.0.4:1"));
  EXPECT_THAT(dead.out, HasSubstr("stream bandwidth (MB/s): "));
  EXPECT_THAT(dead.out, HasSubstr("[" + a + "]"));

  const std::string wrong = dir_.Write("wrong-token", "not-the-token\n");
  const auto rejected = RunCommand(
      HOSTPERF_CLI_BIN,
      {"check", "-r", "s", "-h", a, "--stream-size", "100000", "--token-file", wrong, "--insecure-http"}, seconds(60));
  EXPECT_EQ(rejected.status, 1);
  EXPECT_THAT(rejected.err, HasSubstr("remote_rejected"));
  EXPECT_THAT(rejected.err, HasSubstr("HTTP 401"));
  EXPECT_THAT(rejected.out, Not(HasSubstr("stream tot bandwidth")));

  const std::string config = dir_.Write("cli.toml", "state_directory = \"" + dir_.path() + "/cli\"\n");
  const auto no_token =
      RunCommand(HOSTPERF_CLI_BIN, {"--config.file=" + config, "check", "-r", "s", "-h", a}, seconds(60));
  // No run API token: gpcheckperf's way, over SSH, which cannot reach a
  // daemon's HTTP port; the error names both ways.
  EXPECT_EQ(no_token.status, 1);
  EXPECT_THAT(no_token.out, HasSubstr("Host " + a + " is not usable"));
  EXPECT_THAT(no_token.err, HasSubstr("no host could be reached over SSH, which is used when no run API token is "
                                      "configured"));
  EXPECT_THAT(no_token.err, HasSubstr("--token-file"));

  // The token never goes over plain http unless the operator says so: the
  // check stops before any request.
  const auto in_clear = RunCommand(
      HOSTPERF_CLI_BIN,
      {"check", "-r", "s", "-h", a, "--stream-size", "100000", "--token-file", dir_.path() + "/token"}, seconds(60));
  EXPECT_EQ(in_clear.status, 2) << in_clear.out << in_clear.err;
  EXPECT_THAT(in_clear.err, HasSubstr("use --tls"));
  EXPECT_THAT(in_clear.err, HasSubstr("--insecure-http to send it over plain http, in clear"));
  EXPECT_THAT(in_clear.out, Not(HasSubstr("RESULT")));
  // The daemon kept running through all of it.
  EXPECT_FALSE(sdw1.process().Wait(std::chrono::milliseconds(0)));
}

// bcrypt of "alice-pw" at cost 4 (fast under sanitizers), as in web_security_test.cc.
constexpr const char* kAliceHash = "$2b$04$VhCFJVuKkHrePK3aIU.IQerru423cQtzfL3wT7hoymlUbXRxsZJzS";

// docs/security.md's TLS and basic auth followed on both daemons: mutual TLS and
// basic auth. check reaches them with --ca-file, a client certificate and
// basic auth (the token then in X-Hostperf-Token); each missing piece is a
// clear, distinct error and the daemons keep serving.
TEST_F(CheckRemoteTest, OverMutualTlsWithBasicAuthOnTwoDaemons) {
  const TestPki pki = MakeTestPki(dir_.path());
  ASSERT_TRUE(pki.ok) << "openssl CLI failed";
  const std::string web = dir_.Write("web.yml",
                                     "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                                     "  client_ca_file: ca.crt\n"
                                     "  client_auth_type: RequireAndVerifyClientCert\n"
                                     "basic_auth_users:\n  alice: " +
                                         std::string(kAliceHash) + "\n");
  const std::string password = dir_.Write("alice-password", "alice-pw\n");
  std::filesystem::permissions(password, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string wrong_password = dir_.Write("wrong-password", "not-alice-pw\n");
  std::filesystem::permissions(wrong_password,
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  SegmentHost sdw1(dir_, "127.0.0.2", port_, web);
  SegmentHost sdw2(dir_, "127.0.0.3", port_, web);
  const std::string a = sdw1.Spec();
  const std::string b = sdw2.Spec();
  ASSERT_NE(a, "127.0.0.2:0") << sdw1.process().Stderr();
  ASSERT_NE(b, "127.0.0.3:0") << sdw2.process().Stderr();
  const std::vector<std::string> base = {
      "check", "-r", "s", "-h", a, "-h", b, "--stream-size", "100000", "--token-file", dir_.path() + "/token", "-D"};
  const auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunCommand(HOSTPERF_CLI_BIN, args, seconds(120));
  };
  const std::vector<std::string> client_cert = {"--cert-file", pki.client_cert.string(), "--key-file",
                                                pki.client_key.string()};
  const std::vector<std::string> basic = {"--basic-auth-user", "alice", "--basic-auth-password-file", password};

  std::vector<std::string> all = {"--ca-file", pki.ca_cert.string()};
  all.insert(all.end(), client_cert.begin(), client_cert.end());
  all.insert(all.end(), basic.begin(), basic.end());
  const auto run = with(all);
  ASSERT_EQ(run.status, 0) << run.out << run.err << "\nsdw1:\n" << sdw1.process().Stderr();
  for (const std::string& host : {a, b}) {
    const auto figure = Numbers(run.out, R"(     stream bandwidth \(MB/s\): ([0-9.]+) \[)" + host + R"(\])");
    ASSERT_EQ(figure.size(), 1u) << host << "\n" << run.out;
    EXPECT_GT(figure[0], 0) << host;
  }

  // Plain HTTP is refused by the client unless asked for; to a TLS port it
  // then gets no answer that is HTTP.
  const auto refused_plain = with(basic);
  EXPECT_EQ(refused_plain.status, 2) << refused_plain.out << refused_plain.err;
  EXPECT_THAT(refused_plain.err, HasSubstr("--insecure-http"));
  std::vector<std::string> insecure = basic;
  insecure.push_back("--insecure-http");
  const auto plain = with(insecure);
  EXPECT_EQ(plain.status, 1) << plain.out << plain.err;
  EXPECT_THAT(plain.err, HasSubstr("stream test on " + a + " failed: remote_unreachable"));
  EXPECT_THAT(plain.err, HasSubstr("(is it a TLS port?)"));
  // The test CA is not among the system's: the server is not trusted.
  std::vector<std::string> untrusted = {"--tls"};
  untrusted.insert(untrusted.end(), client_cert.begin(), client_cert.end());
  untrusted.insert(untrusted.end(), basic.begin(), basic.end());
  const auto system_cas = with(untrusted);
  EXPECT_EQ(system_cas.status, 1);
  EXPECT_THAT(system_cas.err, HasSubstr("failed: remote_tls: TLS with " + a + " failed"));
  // Without a client certificate the handshake is refused.
  std::vector<std::string> no_cert = {"--ca-file", pki.ca_cert.string()};
  no_cert.insert(no_cert.end(), basic.begin(), basic.end());
  const auto refused = with(no_cert);
  EXPECT_EQ(refused.status, 1);
  // Under TLS 1.3 the server's refusal is an alert after the client's side of
  // the handshake, and the server closes at once: libcurl reports the alert
  // (remote_tls) or, when the close wins, a dead connection (remote_unreachable).
  EXPECT_THAT(refused.err, ::testing::AnyOf(HasSubstr("stream test on " + a + " failed: remote_tls: TLS with " + a),
                                            HasSubstr("stream test on " + a + " failed: remote_unreachable: ")));
  EXPECT_THAT(refused.out, Not(HasSubstr("stream bandwidth (MB/s): ")));
  // TLS right, no basic auth or the wrong password: HTTP 401 from the daemon.
  std::vector<std::string> tls_only = {"--ca-file", pki.ca_cert.string()};
  tls_only.insert(tls_only.end(), client_cert.begin(), client_cert.end());
  const auto no_basic = with(tls_only);
  EXPECT_EQ(no_basic.status, 1);
  EXPECT_THAT(no_basic.err, HasSubstr("remote_rejected: " + a + " refused the run (HTTP 401): Unauthorized\n"));
  std::vector<std::string> wrong = tls_only;
  wrong.insert(wrong.end(), {"--basic-auth-user", "alice", "--basic-auth-password-file", wrong_password});
  const auto bad_password = with(wrong);
  EXPECT_EQ(bad_password.status, 1);
  EXPECT_THAT(bad_password.err, HasSubstr("(HTTP 401)"));
  // A password file others can read is refused before any request.
  std::filesystem::permissions(wrong_password, std::filesystem::perms::group_read, std::filesystem::perm_options::add);
  std::vector<std::string> loose = tls_only;
  loose.insert(loose.end(), {"--basic-auth-user", "alice", "--basic-auth-password-file", wrong_password});
  const auto readable = with(loose);
  EXPECT_EQ(readable.status, 1);
  EXPECT_THAT(readable.err, HasSubstr("basic auth password file"));
  // A certificate without its key is a usage error.
  const auto half = with({"--cert-file", pki.client_cert.string()});
  EXPECT_EQ(half.status, 2);
  EXPECT_THAT(half.err, HasSubstr("--cert-file and --key-file go together"));
  // Both daemons served through all of it.
  EXPECT_FALSE(sdw1.process().Wait(std::chrono::milliseconds(0)));
  EXPECT_FALSE(sdw2.process().Wait(std::chrono::milliseconds(0)));
  const auto again = with(all);
  EXPECT_EQ(again.status, 0) << again.err;
}

}  // namespace
}  // namespace hostperf::testing
