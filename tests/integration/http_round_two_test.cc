// HTTP, round two: the real daemon's web port against one client
// holding 1000 idle, slow or new-every-10-ms connections; request targets and
// message lengths per RFC 9112; the lifecycle endpoint behind
// --web.enable-lifecycle; --web.telemetry-path collisions refused at start.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net_http_fault_harness.h"
#include "process_harness.h"

namespace hostperf::testing {
namespace {

using namespace std::chrono_literals;
namespace net = hostperf::probes::net;
using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;
using ::testing::Not;

// The attacker's address: loopback, but another source than the scrapes'
// 127.0.0.1 (Linux routes all of 127/8 to lo).
constexpr const char* kAttacker = "127.0.0.2";

std::string QuietConfig(const TempDir& dir) {
  return "state_directory = \"" + dir.path() +
         "/state\"\n"
         "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
         "[probes.disk]\nenabled = false\n[probes.net]\nenabled = false\n";
}

// A TCP connection from `source` to 127.0.0.1:port; non-blocking, so that
// the connect completes in the background even when the server's accept
// queue is full (as an attacker's would).
net::Fd ConnectFrom(const char* source, int port) {
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const auto local = *net::ParseNumericAddress(source, 0);
  const auto remote = *net::ParseNumericAddress("127.0.0.1", static_cast<std::uint16_t>(port));
  if (!fd.valid() || ::bind(fd.get(), local.get(), local.length) != 0) return {};
  if (::connect(fd.get(), remote.get(), remote.length) != 0 && errno != EINPROGRESS) return {};
  return fd;
}

// Enough descriptors for the test's 1000+ sockets (and, inherited, the daemon's).
void RaiseFdLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < 4096) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 4096);
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

class HttpRoundTwoTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> extra = {}) {
    RaiseFdLimit();
    std::vector<std::string> args = {"--config.file=" + dir_.Write("c.toml", QuietConfig(dir_)),
                                     "--web.listen-address=127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    daemon_ = std::make_unique<ChildProcess>(HOSTPERF_EXPORTER_BIN, args);
    port_ = daemon_->ListeningPort();
    ASSERT_NE(port_, 0) << daemon_->Stderr();
  }

  std::pair<int, Clock::duration> TimedScrape() const {
    const auto start = Clock::now();
    const auto reply = HttpRequest(port_, "GET", "/metrics");
    return {reply ? reply->status : 0, Clock::now() - start};
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> daemon_;
  int port_ = 0;
};

// 1000 idle connections once delayed a scrape by 4.5-14.5 s, 80 new
// idle connections a second pushed it past 10 s. One source now holds at
// most 32 connections (max_connections_per_source); its oldest idle one is
// shut down when it opens another.
TEST_F(HttpRoundTwoTest, OneSourceWithAThousandIdleSlowAndNewConnectionsDoesNotDelayScrapes) {
  Start();
  ASSERT_EQ(TimedScrape().first, 200);
  const pid_t pid = daemon_->pid();
  const long rss_before = ResidentKib(pid);
  const int fds_before = OpenFds(pid);

  std::vector<net::Fd> held;
  for (int i = 0; i < 1000; ++i) {
    held.push_back(ConnectFrom(kAttacker, port_));
    ASSERT_TRUE(held.back().valid()) << "connection " << i;
  }
  // Meanwhile: 100 new idle connections a second (each kept 10 s), and the
  // first 100 held ones drip a request one byte every 200 ms.
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    std::vector<std::pair<Clock::time_point, net::Fd>> fresh;
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + std::string(100, 's') + "\r\n\r\n";
    std::size_t dripped = 0;
    for (auto next = Clock::now(); !stop.load(); next += 10ms) {
      std::this_thread::sleep_until(next);
      fresh.emplace_back(Clock::now(), ConnectFrom(kAttacker, port_));
      while (!fresh.empty() && Clock::now() - fresh.front().first > 10s) fresh.erase(fresh.begin());
      if (fresh.size() % 20 == 0 && dripped < request.size()) {
        for (int i = 0; i < 100; ++i) ::send(held[i].get(), request.data() + dripped, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        ++dripped;
      }
    }
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop.store(true);
      thread.join();
    }
  } joiner{stop, churn};

  std::vector<double> took_ms;
  for (int i = 0; i < 16; ++i) {
    std::this_thread::sleep_for(500ms);
    const auto [status, took] = TimedScrape();
    EXPECT_EQ(status, 200) << "scrape " << i;
    took_ms.push_back(std::chrono::duration<double, std::milli>(took).count());
  }
  std::sort(took_ms.begin(), took_ms.end());
  std::cout << "scrapes behind 1000 held + 100 new/s connections from one source: median " << took_ms[8]
            << " ms, slowest " << took_ms.back() << " ms\n";
  // Generous: the target is 1 s (docs/reliability.md has the figure; before
  // the per-source limit these took 4.5 s and more). What tells the old code
  // apart is below: the descriptors held and the evictions.
  EXPECT_LT(took_ms.back(), 10000.0);

  // The server holds few of the attacker's connections: the rest were shut
  // down (counted from the server's side: a connection the kernel completed
  // but nobody accepted yet looks open to the client).
  EXPECT_LT(OpenFds(pid), fds_before + 32 + 64) << "descriptors the daemon holds";
  const auto metrics = HttpRequest(port_, "GET", "/metrics");
  ASSERT_TRUE(metrics);
  const auto evicted = Sample(metrics->body, "hostperf_http_connections_evicted_total");
  ASSERT_TRUE(evicted) << metrics->body;
  EXPECT_GT(*evicted, 900);
  EXPECT_LT(ResidentKib(pid) - rss_before, kRssGrowthBoundKib) << "KiB";
  EXPECT_FALSE(daemon_->Wait(0ms).has_value()) << daemon_->Stderr();
}

// The same source's own scrape still gets through while it holds idle
// connections: the oldest idle one makes room.
TEST_F(HttpRoundTwoTest, AScrapeFromTheFloodingSourceItselfEvictsItsOldestIdleConnection) {
  Start();
  std::vector<net::Fd> held;
  for (int i = 0; i < 40; ++i) held.push_back(ConnectFrom("127.0.0.1", port_));
  std::this_thread::sleep_for(500ms);
  const auto [status, took] = TimedScrape();
  EXPECT_EQ(status, 200);
  EXPECT_LT(took, 5s);
  EXPECT_TRUE(ServerClosed(held.front().get())) << "the oldest idle connection stays open";
}

// Every response once said Connection: close, so every scrape was a
// new TCP connection (and TLS handshake). Now two requests share one
// connection, and the server closes it after the 10 s idle bound.
TEST_F(HttpRoundTwoTest, ScrapesReuseTheirConnectionUntilTheIdleBound) {
  Start();
#ifdef HOSTPERF_CURL
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/metrics";
  const auto curl = RunCommand(HOSTPERF_CURL, {"-sS", "-v", "-o", "/dev/null", "-o", "/dev/null", url, url}, 30s);
  ASSERT_EQ(curl.status, 0) << curl.err;
  std::size_t connects = 0;
  for (auto at = curl.err.find("Connected to"); at != std::string::npos; at = curl.err.find("Connected to", at + 1)) {
    ++connects;
  }
  EXPECT_EQ(connects, 1u) << curl.err;
  EXPECT_THAT(curl.err, HasSubstr("Re-using existing connection"));
  EXPECT_THAT(curl.err, HasSubstr("< Connection: keep-alive"));
  EXPECT_THAT(curl.err, Not(HasSubstr("< Connection: close")));
#endif
  // Raw: two scrapes on one socket, then nothing until the server closes it.
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const auto remote = *net::ParseNumericAddress("127.0.0.1", static_cast<std::uint16_t>(port_));
  ASSERT_EQ(::connect(fd.get(), remote.get(), remote.length), 0);
  timeval timeout{40, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(::send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
    std::string head;
    char byte;
    while (head.find("\r\n\r\n") == std::string::npos && ::recv(fd.get(), &byte, 1, 0) == 1) head += byte;
    ASSERT_THAT(head, HasSubstr("HTTP/1.1 200")) << "scrape " << i << " on the same connection";
    EXPECT_THAT(head, HasSubstr("Connection: keep-alive\r\nKeep-Alive: timeout=10\r\n"));
    EXPECT_THAT(head, Not(HasSubstr("Connection: close")));
    const auto at = head.find("Content-Length: ");
    ASSERT_NE(at, std::string::npos);
    std::size_t body = std::stoul(head.substr(at + 16));
    char buffer[4096];
    while (body > 0) {
      const ssize_t n = ::recv(fd.get(), buffer, std::min(body, sizeof(buffer)), 0);
      ASSERT_GT(n, 0);
      body -= static_cast<std::size_t>(n);
    }
  }
  const auto idle_since = Clock::now();
  char byte;
  EXPECT_EQ(::recv(fd.get(), &byte, 1, 0), 0) << "the server closes the idle connection";
  const auto idle = Clock::now() - idle_since;
  EXPECT_GT(idle, 2s) << "closed long before the idle bound";
  EXPECT_LT(idle, 35s);
}

// RFC 9112 3.2.2 (absolute form), RFC 9110 9.3.7 (OPTIONS *), RFC 9112 6.3
// (ambiguous length): CivetWeb closed the first two without a reply and took
// the first of two Content-Lengths.
TEST_F(HttpRoundTwoTest, RequestTargetsAndMessageLengthsPerRfc9112) {
  Start({"--web.enable-lifecycle"});
  const auto port = static_cast<std::uint16_t>(port_);
  const auto absolute = RawHttpExchange(
      port, "GET http://127.0.0.1:" + std::to_string(port_) + "/metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5s);
  EXPECT_EQ(absolute.status, 200) << absolute.head;
  EXPECT_THAT(absolute.head, HasSubstr("text/plain; version=0.0.4"));
  // The authority names this server whatever it says: we are no proxy.
  const auto other_host =
      RawHttpExchange(port, "GET http://example.com/-/healthy HTTP/1.1\r\nHost: example.com\r\n\r\n", 5s);
  EXPECT_EQ(other_host.status, 200) << other_host.head;
  const auto absolute_missing = RawHttpExchange(port, "GET http://h/nope HTTP/1.1\r\nHost: h\r\n\r\n", 5s);
  EXPECT_EQ(absolute_missing.status, 404) << absolute_missing.head;

  const auto options = RawHttpExchange(port, "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5s);
  EXPECT_EQ(options.status, 200) << options.head;
  EXPECT_THAT(options.head, HasSubstr("Allow: GET, HEAD, POST, OPTIONS"));
  const auto star_get = RawHttpExchange(port, "GET * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5s);
  EXPECT_EQ(star_get.status, 400) << star_get.head;

  const auto twice = RawHttpExchange(
      port, "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde", 5s);
  EXPECT_EQ(twice.status, 400) << twice.head;
  const auto same_twice =
      RawHttpExchange(port, "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n", 5s);
  EXPECT_EQ(same_twice.status, 400) << same_twice.head;
  const auto with_chunked = RawHttpExchange(port,
                                            "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                            "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                                            5s);
  EXPECT_EQ(with_chunked.status, 400) << with_chunked.head;
  // One Content-Length is fine.
  const auto once = RawHttpExchange(port, "POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 5s);
  EXPECT_EQ(once.status, 200) << once.head;
  EXPECT_FALSE(daemon_->Wait(0ms).has_value()) << daemon_->Stderr();
}

TEST_F(HttpRoundTwoTest, ReloadIsOffByDefault) {
  Start();
  for (const char* method : {"POST", "PUT", "GET"}) {
    const auto reply = HttpRequest(port_, method, "/-/reload");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 403) << method;
    EXPECT_THAT(reply->body, HasSubstr("--web.enable-lifecycle"));
  }
  // SIGHUP still reloads.
  daemon_->Signal(SIGHUP);
  EXPECT_TRUE(daemon_->WaitForStderr("config reloaded", 30s)) << daemon_->Stderr();
}

TEST_F(HttpRoundTwoTest, ReloadIsPostOnlyAndRefusesCrossSiteRequests) {
  Start({"--web.enable-lifecycle"});
  for (const char* method : {"PUT", "GET", "DELETE"}) {
    const auto reply = HttpRequest(port_, method, "/-/reload");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 405) << method;
    EXPECT_EQ(reply->headers.at("allow"), "POST");
  }
  // What a page elsewhere can make a browser send without a preflight.
  const std::vector<std::map<std::string, std::string>> cross_site = {
      {{"Origin", "https://evil.example"}},
      {{"Origin", "null"}},
      {{"Sec-Fetch-Site", "cross-site"}},
      {{"Content-Type", "application/x-www-form-urlencoded"}},
      {{"Content-Type", "text/plain;charset=UTF-8"}},
      {{"Content-Type", "multipart/form-data; boundary=x"}},
  };
  for (const auto& headers : cross_site) {
    const auto reply = HttpRequest(port_, "POST", "/-/reload", headers, "x=1");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 403) << headers.begin()->first << ": " << headers.begin()->second;
  }
  EXPECT_FALSE(daemon_->Stderr().find("config reloaded") != std::string::npos) << "a refused request reloaded";
  // curl -X POST, or a JSON client.
  const auto plain = HttpRequest(port_, "POST", "/-/reload");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->status, 200) << plain->body;
  const auto json = HttpRequest(port_, "POST", "/-/reload", {{"Content-Type", "application/json"}}, "{}");
  ASSERT_TRUE(json);
  EXPECT_EQ(json->status, 200) << json->body;
  // A failed reload tells the caller nothing about the config.
  dir_.Write("c.toml", "state_directory = \"/secret/place\"\n[probes.cpu]\ninterval = \"bogus-value\"\n");
  const auto failed = HttpRequest(port_, "POST", "/-/reload");
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500);
  EXPECT_THAT(failed->body, Not(HasSubstr("bogus")));
  EXPECT_THAT(failed->body, Not(HasSubstr("interval")));
  EXPECT_THAT(failed->body, Not(HasSubstr("c.toml")));
  EXPECT_TRUE(daemon_->WaitForStderr("config reload failed", 10s)) << daemon_->Stderr();
  EXPECT_THAT(daemon_->Stderr(), HasSubstr("c.toml:3:"));
}

TEST(HttpTelemetryPath, CollisionsAndMalformedPathsAreRefusedAtStart) {
  TempDir dir;
  const std::string config = "--config.file=" + dir.Write("c.toml", QuietConfig(dir));
  for (const std::string path : {"/api/v1/runs", "/api/v1/runs/x", "/-/reload", "/-/healthy", "/-/ready", "/",
                                 "metrics", "", "/metrics?x=1", "/a b", "/metrics/"}) {
    const auto result = RunCommand(HOSTPERF_EXPORTER_BIN,
                                   {config, "--web.listen-address=127.0.0.1:0", "--web.telemetry-path=" + path}, 30s);
    EXPECT_EQ(result.status, 1) << path << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr("--web.telemetry-path \"" + path + "\"")) << path;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << "one line: " << result.err;
  }
  // Elsewhere it serves the metrics.
  ChildProcess daemon(HOSTPERF_EXPORTER_BIN,
                      {config, "--web.listen-address=127.0.0.1:0", "--web.telemetry-path=/custom/metrics"});
  const int port = daemon.ListeningPort();
  ASSERT_NE(port, 0) << daemon.Stderr();
  const auto reply = HttpRequest(port, "GET", "/custom/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_THAT(reply->body, HasSubstr("hostperf_build_info"));
}

}  // namespace
}  // namespace hostperf::testing
