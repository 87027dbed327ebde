// Parser bombs and unsafe files against the real daemon: a deeply
// nested run request, a YAML alias bomb as peers file, FIFOs, devices and
// directories where files belong, a NUL in a path, secrets others can read.
// Each is refused with a clear message, and the daemon keeps serving on what
// it had and still stops on SIGTERM.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "daemon_fault_harness.h"
#include "netns_harness.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr const char* kToken = "fault-files-token-0123456789abcdef";
constexpr const char* kSecret = "fault-files-shared-secret-0123456789";

// A light daemon: no scheduled probe but the one a test enables.
std::string Config(const TempDir& dir, const std::string& extra) {
  return "state_directory = \"" + dir.path() + "/state\"\n" + extra +
         "\n[scheduler]\nfirst_run_splay = \"1s\"\n"
         "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.disk]\nenabled = false\n";
}

std::string NetOff(std::uint16_t port) {
  return "[probes.net]\nenabled = false\nports = [" + std::to_string(port) + "]\n";
}

// Resident memory of `pid` in KiB, from /proc (0 if unknown).
long ResidentKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

TEST(FilesFault, DeeplyNestedRunRequestIsRefusedAndTheDaemonKeepsServing) {
  TempDir dir;
  const std::string token = dir.Write("token", kToken);
  const std::string config =
      dir.Write("c.toml", Config(dir, "[api]\ntoken_file = \"" + token + "\"\n") + NetOff(FreeLoopbackPort()));
  FaultDaemon daemon(config);
  ASSERT_NE(daemon.Port(), 0) << daemon.process().Stderr();
  // About 870 levels inside options.cpu, 2 KB. It once crashed a
  // CivetWeb worker (100 KiB stack), and with it the daemon.
  const std::string body =
      R"({"probes":["cpu"],"options":{"cpu":)" + std::string(870, '[') + std::string(870, ']') + "}}";
  ASSERT_LT(body.size(), 2048u);
  for (int i = 0; i < 3; ++i) {
    const HttpReply reply = daemon.Call("POST", "/api/v1/runs", kToken, body);
    EXPECT_EQ(reply.status, 400) << reply.body << daemon.process().Stderr();
    EXPECT_THAT(reply.body, HasSubstr("nested deeper than 64 levels")) << reply.body;
  }
  // Deeper, within the 16 KiB body cap: this overflowed a worker of the old
  // code in this RelWithDebInfo build too (870 levels did in the issue's).
  const std::string deeper =
      R"({"probes":["cpu"],"options":{"cpu":)" + std::string(8000, '[') + std::string(8000, ']') + "}}";
  const HttpReply deep = daemon.Call("POST", "/api/v1/runs", kToken, deeper);
  EXPECT_EQ(deep.status, 400) << deep.body << daemon.process().Stderr();
  // Other depths in other places get the same answer.
  const HttpReply top = daemon.Call("POST", "/api/v1/runs", kToken, std::string(5000, '[') + std::string(5000, ']'));
  EXPECT_EQ(top.status, 400) << top.body;
  ASSERT_FALSE(daemon.process().Wait(milliseconds(0)).has_value()) << daemon.process().Stderr();
  EXPECT_NE(daemon.Metrics(), "");
  const HttpReply runs = daemon.Call("GET", "/api/v1/runs", kToken, "");
  EXPECT_EQ(runs.status, 200);
  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(30)), 0) << daemon.process().Stderr();
}

// `- &g {targets: [h, h, ...]}` then `- *g` thousands of times, under 48 KB.
std::string AliasBomb() {
  std::string yaml = "- &g {targets: [h";
  for (int i = 1; i < 5000; ++i) yaml += ", h";
  yaml += "]}\n";
  for (int i = 0; i < 6600; ++i) yaml += "- *g\n";
  return yaml;
}

TEST(FilesFault, PeersFileAliasBombIsRefusedAndTheOldPeersStay) {
  TempDir dir;
  const std::string secret = dir.Write("secret", kSecret);
  const std::uint16_t own = FreeLoopbackPort();
  const std::string peers = dir.path() + "/peers.yaml";
  const std::string good = "- targets: ['127.0.0.1:" + std::to_string(FreeLoopbackPort()) +
                           "', '127.0.0.1:" + std::to_string(FreeLoopbackPort()) + "']\n";
  dir.Write("peers.yaml", good);
  const std::string config =
      dir.Write("c.toml", Config(dir, "") + "[probes.net]\ninterval = \"1s\"\nbind_address = \"127.0.0.1\"\nports = [" +
                              std::to_string(own) + "]\nsecret_file = \"" + secret + "\"\npeers_file = \"" + peers +
                              "\"\npackets_per_cycle = 2\npacket_interval = \"5ms\"\nreply_timeout = \"100ms\"\n"
                              "throughput_duration = \"0s\"\n");
  FaultDaemon daemon(config);
  const std::string known = "hostperf_net_peers{set=\"known\"}";
  ASSERT_TRUE(daemon.WaitFor(known, 2, seconds(30))) << daemon.Metrics() << daemon.process().Stderr();
  const long before_kib = ResidentKib(daemon.process().pid());

  const std::string bomb = AliasBomb();
  ASSERT_LT(bomb.size(), 48u << 10);
  dir.Write("peers.yaml.new", bomb);
  fs::rename(peers + ".new", peers);
  ASSERT_TRUE(daemon.WaitFor("hostperf_net_peers_file_errors_total", 1, seconds(30)))
      << daemon.Metrics() << daemon.process().Stderr();
  // Several more runs read (or skip) the same bad version.
  std::this_thread::sleep_for(seconds(3));
  ASSERT_FALSE(daemon.process().Wait(milliseconds(0)).has_value()) << daemon.process().Stderr();
  EXPECT_EQ(daemon.Value(known), 2) << daemon.Metrics();
  EXPECT_EQ(daemon.Value("hostperf_net_peers_file_errors_total"), 1);
  EXPECT_THAT(daemon.process().Stderr(), HasSubstr("YAML anchors (&name) are not accepted in a peers file"));
  EXPECT_THAT(daemon.process().Stderr(), HasSubstr("keeping the last good list"));
  // The old code grew past 1 GiB in 2 s; a generous bound on the growth.
  const long after_kib = ResidentKib(daemon.process().pid());
  EXPECT_LT(after_kib - before_kib, 64 * 1024) << before_kib << " KiB before, " << after_kib << " KiB after";

  daemon.process().Signal(SIGTERM);
  EXPECT_EQ(daemon.process().Wait(seconds(30)), 0) << daemon.process().Stderr();
}

// A FIFO, a device or a directory where the config names a file: refused at
// once with what it is. The old daemon blocked in open() on the FIFO, with
// SIGTERM blocked too, and read /dev/zero until memory ran out.
TEST(FilesFault, NonRegularFilesAtStartUpAreRefusedPromptly) {
  TempDir dir;
  const std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::uint16_t port = FreeLoopbackPort();
  struct Case {
    std::string name;
    std::string token_file;
    std::string expected;
  };
  for (const Case& c : {Case{"fifo", fifo, "is a FIFO (named pipe), not a regular file"},
                        Case{"zero", "/dev/zero", "is a character device, not a regular file"},
                        Case{"directory", dir.path(), "is a directory, not a file"}}) {
    SCOPED_TRACE(c.name);
    const std::string config =
        dir.Write(c.name + ".toml", Config(dir, "[api]\ntoken_file = \"" + c.token_file + "\"\n") + NetOff(port));
    ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
    const auto status = daemon.Wait(seconds(20));
    if (!status) daemon.Signal(SIGTERM);  // the old daemon ignores it here
    ASSERT_TRUE(status.has_value()) << "still blocked at start-up; " << daemon.Stderr();
    EXPECT_EQ(*status, 1);
    // logfmt escapes the message's quotes.
    EXPECT_THAT(daemon.Stderr(), HasSubstr("api.token_file: \\\"" + c.token_file + "\\\": " + c.expected));
  }
  // The config file itself.
  for (const std::string& config : {fifo, std::string("/dev/zero")}) {
    SCOPED_TRACE(config);
    ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
    const auto status = daemon.Wait(seconds(20));
    if (!status) daemon.Signal(SIGKILL);
    ASSERT_TRUE(status.has_value()) << "still reading " << config;
    EXPECT_EQ(*status, 1);
    EXPECT_THAT(daemon.Stderr(), HasSubstr(config + ": is a"));
  }
}

TEST(FilesFault, ReloadOfAConfigReplacedByAFifoFailsAndSigtermStillStops) {
  TempDir dir;
  const std::string config = dir.Write("c.toml", Config(dir, "") + NetOff(FreeLoopbackPort()));
  FaultDaemon daemon(config);
  ASSERT_TRUE(daemon.WaitFor("hostperf_config_last_reload_successful", 1, seconds(30))) << daemon.process().Stderr();
  fs::remove(config);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  daemon.process().Signal(SIGHUP);
  ASSERT_TRUE(daemon.process().WaitForStderr("config reload failed", seconds(20))) << daemon.process().Stderr();
  EXPECT_THAT(daemon.process().Stderr(), HasSubstr(config + ": is a FIFO (named pipe), not a regular file"));
  EXPECT_EQ(daemon.Value("hostperf_config_last_reload_successful"), 0);
  const auto landing = daemon.Get("/");
  ASSERT_TRUE(landing.has_value());
  EXPECT_EQ(landing->status, 200);
  daemon.process().Signal(SIGTERM);
  const auto status = daemon.process().Wait(seconds(20));
  ASSERT_TRUE(status.has_value()) << "SIGTERM ignored; " << daemon.process().Stderr();
  EXPECT_EQ(*status, 0) << daemon.process().Stderr();
}

TEST(FilesFault, ConfigCheckRefusesANulInAPath) {
  TempDir dir;
  const std::string config =
      dir.Write("c.toml", "[api]\ntoken_file = \"" + dir.path() + "/token\\u0000.bak\"\n" + NetOff(FreeLoopbackPort()));
  const CommandResult checked =
      RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.check", "--config.file=" + config}, seconds(20));
  EXPECT_EQ(checked.status, 1) << checked.out;
  EXPECT_THAT(checked.err, HasSubstr("api.token_file: must not contain a NUL character (\\u0000)"));
  EXPECT_THAT(checked.out, Not(HasSubstr("config OK")));
}

// As OpenSSH refuses a private key others can read.
TEST(FilesFault, SecretsReadableByOthersAreRefusedNamingTheMode) {
  TempDir dir;
  const std::string token = dir.Write("token", kToken);
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  const std::string config =
      dir.Write("c.toml", Config(dir, "[api]\ntoken_file = \"" + token + "\"\n") + NetOff(FreeLoopbackPort()));
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
  ASSERT_EQ(daemon.Wait(seconds(20)), 1) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("api.token_file: \\\"" + token + "\\\": has mode 0644"));

  // The peer secret: the daemon does not start (it would run without its
  // responder) and says why.
  const std::string secret = dir.Write("secret", kSecret);
  ASSERT_EQ(::chmod(secret.c_str(), 0640), 0);
  const std::string net = dir.Write(
      "net.toml", Config(dir, "") + "[probes.net]\ninterval = \"1s\"\nbind_address = \"127.0.0.1\"\nports = [" +
                      std::to_string(FreeLoopbackPort()) + "]\nsecret_file = \"" + secret + "\"\n");
  ChildProcess with_secret(HOSTPERF_EXPORTER_BIN, {"--config.file=" + net, "--web.listen-address=127.0.0.1:0"});
  ASSERT_EQ(with_secret.Wait(seconds(20)), 1) << with_secret.Stderr();
  EXPECT_THAT(with_secret.Stderr(), HasSubstr("probes.net.secret_file: \\\"" + secret +
                                              "\\\": has mode 0640: a secret must not be accessible"));
}

// --config.check makes the daemon's own start-up checks (one code path):
// what the daemon refuses or would half-run fails the check with one line.
TEST(FilesFault, ConfigCheckRefusesWhatTheDaemonRefuses) {
  TempDir dir;
  const auto check = [](const std::string& config) {
    return RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.check", "--config.file=" + config}, seconds(30));
  };
  // A run-API token others can read: the daemon exits 1 at start.
  const std::string token = dir.Write("token", kToken);
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  const CommandResult loose = check(
      dir.Write("token.toml", Config(dir, "[api]\ntoken_file = \"" + token + "\"\n") + NetOff(FreeLoopbackPort())));
  EXPECT_EQ(loose.status, 1) << loose.out;
  EXPECT_THAT(loose.err, HasSubstr("api.token_file: \"" + token + "\": has mode 0644"));
  EXPECT_THAT(loose.out, Not(HasSubstr("config OK")));

  // A configured secret file that is missing: fatal at start and in the check
  // (the responder would otherwise run without it).
  const std::string missing = dir.path() + "/no-such-secret";
  const std::string no_secret =
      dir.Write("secret.toml", Config(dir, "") + "[probes.net]\nenabled = false\nports = [" +
                                   std::to_string(FreeLoopbackPort()) + "]\nsecret_file = \"" + missing + "\"\n");
  const CommandResult absent = check(no_secret);
  EXPECT_EQ(absent.status, 1) << absent.out;
  EXPECT_THAT(absent.err, HasSubstr("probes.net: probes.net.secret_file: \"" + missing + "\""));
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + no_secret, "--web.listen-address=127.0.0.1:0"});
  ASSERT_EQ(daemon.Wait(seconds(20)), 1) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("probes.net.secret_file"));

  // A peers_file in Prometheus' scrape format: targets on the exporter's own
  // HTTP port, where no responder answers.
  const std::string secret = dir.Write("secret", kSecret);
  const std::string peers = dir.Write(
      "peers.json", R"([{"targets": ["192.0.2.10:9580", "192.0.2.11:9580"], "labels": {"job": "hostperf"}}])");
  const CommandResult scrape =
      check(dir.Write("peers.toml", Config(dir, "") + "[probes.net]\nports = [" + std::to_string(FreeLoopbackPort()) +
                                        "]\nsecret_file = \"" + secret + "\"\npeers_file = \"" + peers + "\"\n"));
  EXPECT_EQ(scrape.status, 1) << scrape.out;
  EXPECT_THAT(scrape.err, HasSubstr("probes.net: peers_file (" + peers +
                                    ") names \"192.0.2.10:9580\", on port 9580, the exporter's HTTP port: list the "
                                    "peers' responder addresses instead"));
  EXPECT_THAT(scrape.out, Not(HasSubstr("config OK")));
}

// An HTTP server on loopback that answers every request 400, as a scrape
// target answers a stray request; counts the connections it took.
class HttpAnswerer {
 public:
  HttpAnswerer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    ::listen(fd_, 16);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd pfd{fd_, POLLIN, 0};
        if (::poll(&pfd, 1, 100) <= 0) continue;
        const int conn = ::accept(fd_, nullptr, nullptr);
        if (conn < 0) continue;
        char buffer[512];
        (void)!::recv(conn, buffer, sizeof(buffer), 0);
        static constexpr char kReply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        (void)!::send(conn, kReply, sizeof(kReply) - 1, MSG_NOSIGNAL);
        ::close(conn);
      }
    });
  }
  ~HttpAnswerer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The rest of the start-up checks on the network probe's files: a peer
// list naming an HTTP endpoint (here on its own port, not the exporter's),
// and orchestration keys the daemon could not use. A peer that is merely
// down at start is no error.
TEST(FilesFault, ConfigCheckRefusesHttpPeersAndUnusableOrchestrationKeys) {
  TempDir dir;
  const auto check = [](const std::string& config) {
    return RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.check", "--config.file=" + config}, seconds(30));
  };
  const std::string secret = dir.Write("secret", kSecret);
  const auto net = [&](const std::string& extra) {
    return Config(dir, "") + "[probes.net]\nports = [" + std::to_string(FreeLoopbackPort()) + "]\nsecret_file = \"" +
           secret + "\"\n" + extra;
  };
  HttpAnswerer http;
  const std::string http_peer = "127.0.0.1:" + std::to_string(http.port());
  const CommandResult answered = check(dir.Write("http.toml", net("peers = [\"" + http_peer + "\"]\n")));
  EXPECT_EQ(answered.status, 1) << answered.out;
  EXPECT_THAT(answered.err,
              HasSubstr("probes.net: the peer list names \"" + http_peer + "\", whose port " +
                        std::to_string(http.port()) + " answers HTTP: list the peers' responder addresses instead"));
  EXPECT_THAT(answered.out, Not(HasSubstr("config OK")));
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN,
                      {"--config.file=" + dir.path() + "/http.toml", "--web.listen-address=127.0.0.1:0"});
  ASSERT_EQ(daemon.Wait(seconds(20)), 1) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("answers HTTP"));

  // Down (nothing listens): fine.
  const std::string down_peer = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
  const CommandResult down = check(dir.Write("down.toml", net("peers = [\"" + down_peer + "\"]\n")));
  EXPECT_EQ(down.status, 0) << down.out << down.err;

  // A private key others can read; a public key file that holds none.
  const std::string key = dir.path() + "/orchestration.key";
  ASSERT_EQ(RunCommand(Find("openssl"), {"genpkey", "-algorithm", "ed25519", "-out", key}, seconds(20)).status, 0);
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  const CommandResult loose_key = check(dir.Write("key.toml", net("orchestration_key_file = \"" + key + "\"\n")));
  EXPECT_EQ(loose_key.status, 1) << loose_key.out;
  EXPECT_THAT(loose_key.err, HasSubstr("probes.net.orchestration_key_file: \"" + key + "\": has mode 0644"));
  const std::string junk = dir.Write("orchestration.pub", "not a key\n");
  const CommandResult bad_public =
      check(dir.Write("pub.toml", net("orchestration_public_key_file = \"" + junk + "\"\n")));
  EXPECT_EQ(bad_public.status, 1) << bad_public.out;
  EXPECT_THAT(bad_public.err, HasSubstr("orchestration public key file " + junk + " holds no PEM public key"));
}

// The rest of what start-up refuses: a state directory that cannot be
// created (a file where a directory should be) and a responder port that is
// the exporter's own listening port. Both fail the check and the daemon.
TEST(FilesFault, ConfigCheckRefusesAStateDirectoryItCannotCreateAndAPortTakenTwice) {
  TempDir dir;
  const std::string file = dir.Write("a-file", "x");
  const std::string unusable = dir.Write(
      "state.toml",
      "state_directory = \"" + file + "/state\"\n" + NetOff(FreeLoopbackPort()) +
          "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n[probes.disk]\nenabled = false\n");
  const CommandResult state =
      RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.check", "--config.file=" + unusable}, seconds(30));
  EXPECT_EQ(state.status, 1) << state.out;
  EXPECT_THAT(state.err, HasSubstr("state directory " + file + "/state: " + file + " is not a directory"));
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN, {"--config.file=" + unusable, "--web.listen-address=127.0.0.1:0"});
  ASSERT_EQ(daemon.Wait(seconds(20)), 1) << daemon.Stderr();
  EXPECT_THAT(daemon.Stderr(), HasSubstr("is not a directory"));

  const std::uint16_t port = FreeLoopbackPort();
  const std::string twice = dir.Write("twice.toml", Config(dir, "") + NetOff(port));
  const CommandResult taken =
      RunCommand(HOSTPERF_EXPORTER_BIN,
                 {"--config.check", "--config.file=" + twice, "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                 seconds(30));
  EXPECT_EQ(taken.status, 1) << taken.out;
  EXPECT_THAT(taken.err, HasSubstr("probes.net: ports names " + std::to_string(port) +
                                   ", the port the exporter listens on (--web.listen-address)"));
  EXPECT_EQ(RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.check", "--config.file=" + twice}, seconds(30)).status, 0);
}

}  // namespace
}  // namespace hostperf::testing
