// The real hostperf_exporter and hostperf binaries, started as processes on
// port 0 and used over HTTP and signals as an operator would.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <regex>
#include <string>
#include <thread>

#include "../common/go_float.h"
#include "process_harness.h"
#include "registered_probes.h"

namespace hostperf::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

// A config that runs the cpu probe soon and often, with state in `dir`.
std::string FastConfig(const TempDir& dir, const std::string& cpu_interval = "3s") {
  return "state_directory = \"" + dir.path() +
         "/state\"\n"
         "[scheduler]\nfirst_run_splay = \"1s\"\n"
         "[probes.cpu]\ninterval = \"" +
         cpu_interval + "\"\ntimeout = \"" + cpu_interval + "\"\n";
}

// The value of the first sample whose name and labels start with `series`.
std::optional<double> SampleValue(const std::string& exposition, const std::string& series) {
  std::size_t pos = 0;
  while ((pos = exposition.find(series, pos)) != std::string::npos) {
    const bool line_start = pos == 0 || exposition[pos - 1] == '\n';
    const auto line_end = exposition.find('\n', pos);
    const std::string line = exposition.substr(pos, line_end - pos);
    pos += series.size();
    if (!line_start) continue;
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    return std::stod(line.substr(space + 1));
  }
  return std::nullopt;
}

// Every `le` (and `quantile`) label on /metrics is printed in
// that form, as client_golang and prometheus_client print it. Returns how
// many were checked.
int ExpectShortestFloatLabels(const std::string& metrics) {
  int checked = 0;
  for (const std::string label : {"le", "quantile"}) {
    for (const std::string opener : {"{", ","}) {
      const std::string needle = opener + label + "=\"";
      for (auto at = metrics.find(needle); at != std::string::npos; at = metrics.find(needle, at + 1)) {
        const auto line_start = metrics.rfind('\n', at) + 1;
        if (metrics[line_start] == '#') continue;
        const auto begin = at + needle.size();
        const std::string value = metrics.substr(begin, metrics.find('"', begin) - begin);
        char* end = nullptr;
        const double parsed = value == "+Inf" ? HUGE_VAL : std::strtod(value.c_str(), &end);
        if (value != "+Inf") {
          EXPECT_EQ(*end, '\0') << label << "=\"" << value << "\" is not a number";
        }
        EXPECT_EQ(value, GoShortestOracle(parsed)) << metrics.substr(line_start, metrics.find('\n', at) - line_start);
        ++checked;
      }
    }
  }
  return checked;
}

class Exporter {
 public:
  explicit Exporter(std::vector<std::string> args, std::map<std::string, std::string> env = {})
      : process_(HOSTPERF_EXPORTER_BIN, WithListen(std::move(args)), std::move(env)) {}

  // Waits for the "listening" log line and returns the bound port.
  int Port() {
    if (port_ == 0) {
      port_ = process_.ListeningPort();
      EXPECT_NE(port_, 0) << process_.Stderr();
    }
    return port_;
  }

  std::string Metrics() {
    auto reply = HttpRequest(Port(), "GET", "/metrics");
    return reply ? reply->body : "";
  }

  // Polls /metrics until `series` has a value >= `at_least`.
  bool WaitForSample(const std::string& series, double at_least, seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      const auto value = SampleValue(Metrics(), series);
      if (value && *value >= at_least) return true;
      if (process_.Wait(milliseconds(0))) return false;
      std::this_thread::sleep_for(milliseconds(200));
    }
    return false;
  }

  ChildProcess& process() { return process_; }

 private:
  static std::vector<std::string> WithListen(std::vector<std::string> args) {
    args.push_back("--web.listen-address=127.0.0.1:0");
    return args;
  }
  ChildProcess process_;
  int port_ = 0;
};

TEST(ExporterBinary, HelpAndVersionExitZero) {
  const auto help = RunCommand(HOSTPERF_EXPORTER_BIN, {"--help"}, seconds(60));
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("--web.listen-address"));
  const auto version = RunCommand(HOSTPERF_EXPORTER_BIN, {"--version"}, seconds(60));
  EXPECT_EQ(version.status, 0);
  EXPECT_THAT(version.out, HasSubstr("fingerprint"));
}

TEST(ExporterBinary, RejectsUnknownFlagAndLogLevel) {
  const auto flag = RunCommand(HOSTPERF_EXPORTER_BIN, {"--no.such-flag=1"}, seconds(60));
  EXPECT_EQ(flag.status, 1);
  EXPECT_THAT(flag.err, HasSubstr("unknown flag --no.such-flag"));
  const auto level = RunCommand(HOSTPERF_EXPORTER_BIN, {"--log.level=verbose"}, seconds(60));
  EXPECT_EQ(level.status, 1);
  EXPECT_THAT(level.err, HasSubstr("unknown log level \"verbose\""));
}

TEST(ExporterBinary, ConfigCheckValidatesAndExits) {
  TempDir dir;
  const auto good = dir.Write("good.toml", FastConfig(dir));
  const auto ok = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + good, "--config.check"}, seconds(60));
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("config OK"));

  const auto bad = dir.Write("bad.toml", "[probes.cpu]\ninterval = \"5min\"\nintervall = \"5min\"\n");
  const auto failed = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + bad, "--config.check"}, seconds(60));
  EXPECT_EQ(failed.status, 1);
  EXPECT_THAT(failed.err, MatchesRegex(".*" + bad + ":3:[0-9]+: .*intervall.*\n"));
}

// A peers list that does not contain this host is valid, but its
// alerts could not be joined to its scrape target: a warning saying what to
// check, the check still passes. Names resolve as the daemon resolves them.
TEST(ExporterBinary, ConfigCheckWarnsWhenThisHostIsNotInThePeers) {
  TempDir dir;
  const auto outside =
      dir.Write("outside.toml", "[probes.net]\npeers = [\"192.0.2.10:14159\", \"192.0.2.11:14159\"]\n");
  const auto warned = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + outside, "--config.check"}, seconds(60));
  EXPECT_EQ(warned.status, 0) << warned.err;
  EXPECT_THAT(warned.out, HasSubstr("config OK"));
  EXPECT_THAT(warned.err, HasSubstr(outside + ": warning: probes.net: this host is not in probes.net.peers"));
  EXPECT_THAT(warned.err, HasSubstr("Check that the list names this host"));

  const auto inside = dir.Write("inside.toml", "[probes.net]\npeers = [\"192.0.2.10:14159\", \"127.0.0.1:14159\"]\n");
  const auto quiet = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + inside, "--config.check"}, seconds(60));
  EXPECT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_THAT(quiet.err, Not(HasSubstr("warning")));

  // The probe disabled: nothing to say.
  const auto disabled = dir.Write(
      "disabled.toml", "[probes.net]\nenabled = false\npeers = [\"192.0.2.10:14159\", \"192.0.2.11:14159\"]\n");
  const auto off = RunCommand(HOSTPERF_EXPORTER_BIN, {"--config.file=" + disabled, "--config.check"}, seconds(60));
  EXPECT_EQ(off.status, 0) << off.err;
  EXPECT_THAT(off.err, Not(HasSubstr("warning")));
}

TEST(ExporterBinary, BrokenConfigRefusesToStartWithLineAndColumn) {
  TempDir dir;
  const auto bad = dir.Write("bad.toml", "[probes.cpu]\ninterval = true\n");
  Exporter exporter({"--config.file=" + bad});
  const auto status = exporter.process().Wait(seconds(60));
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(*status, 1);
  EXPECT_THAT(exporter.process().Stderr(), HasSubstr(bad + ":2:"));
}

TEST(ExporterBinary, ServesHealthReadinessLandingAndErrors) {
  TempDir dir;
  Exporter exporter({"--config.file=" + dir.Write("c.toml", FastConfig(dir))});
  const int port = exporter.Port();
  ASSERT_GT(port, 0);
  auto healthy = HttpRequest(port, "GET", "/-/healthy");
  ASSERT_TRUE(healthy);
  EXPECT_EQ(healthy->status, 200);
  auto ready = HttpRequest(port, "GET", "/-/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  auto landing = HttpRequest(port, "GET", "/");
  ASSERT_TRUE(landing);
  EXPECT_EQ(landing->status, 200);
  EXPECT_THAT(landing->headers["content-type"], HasSubstr("text/html"));
  EXPECT_THAT(landing->body, HasSubstr("href=\"/metrics\""));
  EXPECT_THAT(landing->body, HasSubstr("<td>cpu</td>"));
  auto missing = HttpRequest(port, "GET", "/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto post_metrics = HttpRequest(port, "POST", "/metrics");
  ASSERT_TRUE(post_metrics);
  EXPECT_EQ(post_metrics->status, 405);
  // Lifecycle endpoints are off without --web.enable-lifecycle.
  for (const char* method : {"GET", "POST", "PUT"}) {
    auto reload = HttpRequest(port, method, "/-/reload");
    ASSERT_TRUE(reload);
    EXPECT_EQ(reload->status, 403) << method;
  }
}

TEST(ExporterBinary, FirstCpuRunPassesPromtoolAndHasRealValues) {
  TempDir dir;
  Exporter exporter({"--config.file=" + dir.Write("c.toml", FastConfig(dir))});
  // Success, not just a run: a run that failed would be counted too.
  ASSERT_TRUE(exporter.WaitForSample("hostperf_probe_success{probe=\"cpu\"}", 1, seconds(120)))
      << exporter.process().Stderr();
  auto reply = HttpRequest(exporter.Port(), "GET", "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  const std::string& metrics = reply->body;
  EXPECT_EQ(SampleValue(metrics, "hostperf_probe_success{probe=\"cpu\"}"), 1.0) << metrics;
  EXPECT_GT(SampleValue(metrics, "hostperf_cpu_workload_cpu_seconds{mode=\"scheduled\"}").value_or(0), 0.0);
  EXPECT_GT(SampleValue(metrics, "hostperf_cpu_task_median_seconds{load=\"high\"}").value_or(0), 0.0);
  EXPECT_GT(SampleValue(metrics, "hostperf_cpu_throttle_ratio").value_or(0), 0.0);
  EXPECT_GT(SampleValue(metrics, "hostperf_cpu_task_seconds_count{load=\"low\"}").value_or(0), 0.0);
  EXPECT_GE(SampleValue(metrics, "hostperf_host_physical_cores").value_or(0), 1.0);
  EXPECT_GT(SampleValue(metrics, "process_resident_memory_bytes").value_or(0), 0.0);
  EXPECT_GT(SampleValue(metrics, "process_open_fds").value_or(0), 0.0);
  EXPECT_EQ(SampleValue(metrics, "hostperf_config_last_reload_successful"), 1.0);
  EXPECT_THAT(metrics, HasSubstr("hostperf_build_info{"));
  // The cpu probe's task histogram has 70e-6 among its bounds: it was
  // le="6.999999999999999e-05".
  EXPECT_GE(ExpectShortestFloatLabels(metrics), 48);
  EXPECT_THAT(metrics, HasSubstr("hostperf_cpu_task_seconds_bucket{load=\"high\",le=\"7e-05\"}"));

#ifdef HOSTPERF_PROMTOOL
  const auto file = dir.Write("metrics.txt", metrics);
  const auto promtool =
      RunCommand("/bin/sh", {"-c", std::string(HOSTPERF_PROMTOOL) + " check metrics < " + file}, seconds(30));
  EXPECT_EQ(promtool.status, 0) << promtool.out << promtool.err;
#else
  FAIL() << "promtool not found at configure time (install Debian's prometheus package)";
#endif

  // Every family the daemon serves is documented: the framework's in
  // docs/metrics.md, each probe's on its own page, probes/<name>/metrics.md.
  std::string doc = ReadText(std::string(HOSTPERF_SOURCE_DIR) + "/docs/metrics.md");
  ASSERT_FALSE(doc.empty());
  for (const std::string& probe : RegisteredProbes()) {
    const std::string page = std::string(HOSTPERF_SOURCE_DIR) + "/probes/" + probe + "/metrics.md";
    const std::string text = ReadText(page);
    EXPECT_FALSE(text.empty()) << "no metrics page " << page;
    doc += text;
  }
  const std::regex type_line(R"(# TYPE (\w+) )");
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), type_line), end; it != end; ++it) {
    EXPECT_THAT(doc, HasSubstr("`" + (*it)[1].str() + "`")) << "undocumented metric";
  }

  auto gzipped = HttpRequest(exporter.Port(), "GET", "/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gzipped);
  EXPECT_EQ(gzipped->headers["content-encoding"], "gzip");
  ASSERT_GE(gzipped->body.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gzipped->body[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gzipped->body[1]), 0x8b);
}

// First runs are splayed over 30 s and run one at a time; the bound allows
// for a sanitizer build on a loaded machine, where the disk and memory runs
// ahead of cpu are slow.
TEST(ExporterBinary, EmbeddedDefaultsRunCpuSoonAfterStart) {
  TempDir dir;
  Exporter exporter({}, {{"STATE_DIRECTORY", dir.path()}});
  ASSERT_TRUE(exporter.WaitForSample("hostperf_probe_success{probe=\"cpu\"}", 1, seconds(180)))
      << exporter.process().Stderr();
  EXPECT_GT(SampleValue(exporter.Metrics(), "hostperf_cpu_workload_real_seconds{mode=\"scheduled\"}").value_or(0), 0);
}

TEST(ExporterBinary, BadReloadKeepsOldConfigAndGoodReloadApplies) {
  TempDir dir;
  const auto path = dir.Write("c.toml", FastConfig(dir, "3s"));
  Exporter exporter({"--config.file=" + path, "--web.enable-lifecycle"});
  ASSERT_TRUE(exporter.WaitForSample("hostperf_probe_interval_seconds{probe=\"cpu\"}", 3, seconds(30)));

  dir.Write("c.toml", "[probes.cpu]\ninterval = \"not a duration\"\n");
  exporter.process().Signal(SIGHUP);
  ASSERT_TRUE(exporter.process().WaitForStderr("config reload failed", seconds(60)));
  EXPECT_THAT(exporter.process().Stderr(), HasSubstr(path + ":2:"));
  const std::string after_bad = exporter.Metrics();
  EXPECT_EQ(SampleValue(after_bad, "hostperf_config_last_reload_successful"), 0.0);
  EXPECT_EQ(SampleValue(after_bad, "hostperf_probe_interval_seconds{probe=\"cpu\"}"), 3.0);
  EXPECT_FALSE(exporter.process().Wait(milliseconds(0)).has_value()) << "daemon died on a bad reload";

  dir.Write("c.toml", FastConfig(dir, "7s"));
  auto reload = HttpRequest(exporter.Port(), "POST", "/-/reload");
  ASSERT_TRUE(reload);
  EXPECT_EQ(reload->status, 200) << reload->body;
  const std::string after_good = exporter.Metrics();
  EXPECT_EQ(SampleValue(after_good, "hostperf_config_last_reload_successful"), 1.0);
  EXPECT_EQ(SampleValue(after_good, "hostperf_probe_interval_seconds{probe=\"cpu\"}"), 7.0);

  dir.Write("c.toml", "state_directory = 5\n");
  auto bad_http = HttpRequest(exporter.Port(), "POST", "/-/reload");
  ASSERT_TRUE(bad_http);
  EXPECT_EQ(bad_http->status, 500);
  // The error text (file, line, value) goes to the log, not to the caller.
  EXPECT_THAT(bad_http->body, Not(HasSubstr(path))) << bad_http->body;
  EXPECT_THAT(bad_http->body, HasSubstr("see the log"));
  EXPECT_TRUE(exporter.process().WaitForStderr(path + ":1:", seconds(10))) << exporter.process().Stderr();
}

TEST(ExporterBinary, SigtermDuringProbeExitsZeroQuickly) {
  TempDir dir;
  Exporter exporter({"--config.file=" + dir.Write("c.toml", FastConfig(dir, "1s"))});
  ASSERT_TRUE(exporter.WaitForSample("hostperf_probe_runs_total{probe=\"cpu\"}", 1, seconds(60)));
  exporter.process().Signal(SIGTERM);
  const auto status = exporter.process().Wait(seconds(60));
  ASSERT_TRUE(status.has_value()) << "did not exit within 10s";
  EXPECT_EQ(*status, 0) << exporter.process().Stderr();
}

TEST(ExporterBinary, IdleClientsDoNotBlockScrapes) {
  TempDir dir;
  Exporter exporter({"--config.file=" + dir.Write("c.toml", FastConfig(dir))});
  const int port = exporter.Port();
  ASSERT_GT(port, 0);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    // Half a request line, then nothing: a slow client.
    send(fd, "GET /met", 8, MSG_NOSIGNAL);
    idle.push_back(fd);
  }
  const auto started = std::chrono::steady_clock::now();
  auto reply = HttpRequest(port, "GET", "/metrics");
  const auto took = std::chrono::steady_clock::now() - started;
  for (int fd : idle) close(fd);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_LT(took, seconds(5));
}

TEST(CliBinary, CpuQuietPrintsTheFourFigures) {
  TempDir dir;
  const auto config = dir.Write("c.toml", FastConfig(dir));
  const auto result = RunCommand(HOSTPERF_CLI_BIN, {"--config.file=" + config, "cpu", "-q"}, seconds(900));
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.out, MatchesRegex("  CPU Time: [0-9]+\\.[0-9]{6}s\n"
                                       "  Real Time:[0-9]+\\.[0-9]{6}s\n"
                                       "This machine's high load time: [0-9]+ microseconds\\.\n"
                                       "This machine's low load time: [0-9]+ microseconds\\.\n"));
}

TEST(CliBinary, UnknownCommandIsAUsageError) {
  const auto result = RunCommand(HOSTPERF_CLI_BIN, {"frobnicate"}, seconds(60));
  EXPECT_EQ(result.status, 2);
  EXPECT_THAT(result.err, HasSubstr("unknown command"));
}

}  // namespace
}  // namespace hostperf::testing

namespace hostperf::testing {
namespace {

// Receives sd_notify datagrams the way systemd does, on NOTIFY_SOCKET.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{0, 200000};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~NotifySocket() { close(fd_); }
  bool bound() const { return bound_; }

  // Collects messages until one contains `needle`; returns all seen so far.
  bool WaitFor(const std::string& needle, seconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      char buffer[4096];
      const ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) continue;
      const std::string message(buffer, static_cast<std::size_t>(n));
      messages_.push_back(message);
      if (message.find(needle) != std::string::npos) return true;
    }
    return false;
  }
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::vector<std::string> messages_;
};

TEST(ExporterBinary, TellsSystemdReadyWatchdogReloadingAndStopping) {
  TempDir dir;
  NotifySocket notify(dir.path() + "/notify.sock");
  ASSERT_TRUE(notify.bound());
  Exporter exporter({"--config.file=" + dir.Write("c.toml", FastConfig(dir))},
                    {{"NOTIFY_SOCKET", dir.path() + "/notify.sock"}, {"WATCHDOG_USEC", "600000"}});
  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(30))) << exporter.process().Stderr();
  // Pinged from the scheduler loop at a third of the period.
  ASSERT_TRUE(notify.WaitFor("WATCHDOG=1", seconds(60)));
  exporter.process().Signal(SIGHUP);
  ASSERT_TRUE(notify.WaitFor("RELOADING=1", seconds(60)));
  EXPECT_THAT(notify.messages().back(), HasSubstr("MONOTONIC_USEC="));
  ASSERT_TRUE(notify.WaitFor("READY=1", seconds(60)));
  exporter.process().Signal(SIGTERM);
  ASSERT_TRUE(notify.WaitFor("STOPPING=1", seconds(60)));
  EXPECT_EQ(exporter.process().Wait(seconds(60)), 0);
}

}  // namespace
}  // namespace hostperf::testing
