// HTTP fault injection: the real daemon's web port under idle and
// slow-drip connections, oversized headers and oversized bodies. Scrapes keep
// answering, every bad request gets a 4xx (or is closed), nothing hangs, and
// the daemon's memory and descriptors stay bounded.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
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

constexpr const char* kToken = "fault-http-test-token-0123456789";
constexpr int kIdleConnections = 200;
constexpr int kDripConnections = 20;

// The daemon with no probes (only the web port matters here) and the run API on.
class HttpFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string config =
        dir_.Write("c.toml", "state_directory = \"" + dir_.path() + "/state\"\n[api]\ntoken_file = \"" +
                                 dir_.Write("token", kToken) +
                                 "\"\n"
                                 "[probes.cpu]\nenabled = false\n[probes.memory]\nenabled = false\n"
                                 "[probes.disk]\nenabled = false\n[probes.net]\nenabled = false\n");
    daemon_ = std::make_unique<ChildProcess>(
        HOSTPERF_EXPORTER_BIN, std::vector<std::string>{"--config.file=" + config, "--web.listen-address=127.0.0.1:0"});
    port_ = daemon_->ListeningPort();
    ASSERT_NE(port_, 0) << daemon_->Stderr();
  }

  // A scrape and how long it took.
  std::pair<int, Clock::duration> TimedScrape() const {
    const auto start = Clock::now();
    const auto reply = HttpRequest(port_, "GET", "/metrics");
    return {reply ? reply->status : 0, Clock::now() - start};
  }

  void ExpectStillServing() {
    EXPECT_FALSE(daemon_->Wait(0ms).has_value()) << "daemon exited: " << daemon_->Stderr();
    const auto reply = HttpRequest(port_, "GET", "/metrics");
    ASSERT_TRUE(reply.has_value());
    EXPECT_EQ(reply->status, 200);
  }

  TempDir dir_;
  std::unique_ptr<ChildProcess> daemon_;
  int port_ = 0;
};

TEST_F(HttpFaultTest, IdleAndSlowDripConnectionsDoNotBlockScrapes) {
  const pid_t pid = daemon_->pid();
  ASSERT_EQ(TimedScrape().first, 200);
  const long rss_before = ResidentKib(pid);
  const int fds_before = OpenFds(pid);

  std::vector<net::Fd> idle;
  for (int i = 0; i < kIdleConnections; ++i) {
    idle.push_back(ConnectLoopback(static_cast<std::uint16_t>(port_)));
    ASSERT_TRUE(idle.back().valid()) << "connection " << i;
  }
  // Slow-drip requests: one byte every 100 ms, far longer than the server's
  // request timeout allows.
  std::vector<net::Fd> drip;
  for (int i = 0; i < kDripConnections; ++i) {
    drip.push_back(ConnectLoopback(static_cast<std::uint16_t>(port_)));
    ASSERT_TRUE(drip.back().valid());
  }
  const std::string slow_request =
      "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + std::string(200, 's') + "\r\n\r\n";
  std::atomic<bool> stop{false};
  const auto drip_start = Clock::now();
  std::thread dripper([&] {
    for (std::size_t i = 0; i < slow_request.size() && !stop.load(); ++i) {
      for (const net::Fd& fd : drip) ::send(fd.get(), slow_request.data() + i, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(100ms);
    }
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~Joiner() {
      stop.store(true);
      thread.join();
    }
  } joiner{stop, dripper};

  // Scrapes while every connection is held.
  std::this_thread::sleep_for(300ms);
  Clock::duration slowest{};
  for (int i = 0; i < 5; ++i) {
    const auto [status, took] = TimedScrape();
    EXPECT_EQ(status, 200) << "scrape " << i;
    slowest = std::max(slowest, took);
    std::this_thread::sleep_for(200ms);
  }
  // A couple of seconds is the promise; a blocked server takes the whole
  // request timeout per queued connection.
  EXPECT_LT(slowest, 2s) << "scrapes wait behind idle connections";
  const long rss_held = ResidentKib(pid);
  const int fds_held = OpenFds(pid);
  EXPECT_LT(fds_held, fds_before + kIdleConnections + kDripConnections + 16);
  EXPECT_LT(rss_held - rss_before, kRssGrowthBoundKib) << "KiB";

  // The server's request timeout ends the idle and slow connections; the
  // dripping client never gets to finish its request.
  const auto until = drip_start + 15s;
  auto all_closed = [](const std::vector<net::Fd>& fds) {
    return std::all_of(fds.begin(), fds.end(), [](const net::Fd& fd) { return ServerClosed(fd.get()); });
  };
  bool closed = false;
  while (!closed && Clock::now() < until) {
    closed = all_closed(drip) && all_closed(idle);
    if (!closed) std::this_thread::sleep_for(200ms);
  }
  const auto closed_after = Clock::now() - drip_start;
  EXPECT_TRUE(closed) << "the server left idle or slow-drip connections open";
  EXPECT_LT(closed_after, std::chrono::milliseconds(static_cast<long>(slow_request.size()) * 100))
      << "the slow request was allowed to complete";
  idle.clear();
  drip.clear();
  ExpectStillServing();
  // The daemon gives the descriptors back.
  const auto fd_deadline = Clock::now() + 5s;
  while (OpenFds(pid) > fds_before + 4 && Clock::now() < fd_deadline) std::this_thread::sleep_for(100ms);
  const int fds_after = OpenFds(pid);
  EXPECT_LE(fds_after, fds_before + 4);
  std::cout << "[ numbers  ] slowest scrape " << std::chrono::duration_cast<std::chrono::milliseconds>(slowest).count()
            << " ms; RSS KiB before " << rss_before << ", held " << rss_held << ", after " << ResidentKib(pid)
            << "; fds before " << fds_before << ", held " << fds_held << ", after " << fds_after
            << "; slow connections closed after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(closed_after).count() << " ms\n";
}

std::string Post(const std::string& path, const std::string& headers, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" + headers + "\r\n" + body;
}

TEST_F(HttpFaultTest, OversizedHeadersAndBodiesGet4xx) {
  const pid_t pid = daemon_->pid();
  const long rss_before = ResidentKib(pid);
  const std::string auth = std::string("Authorization: Bearer ") + kToken + "\r\n";
  const std::string mib(1 << 20, 'x');
  // The body limit is 64 KiB; CivetWeb's request head limit 16 KiB.
  std::string chunked;
  for (int i = 0; i < 20; ++i) chunked += "2000\r\n" + std::string(0x2000, 'c') + "\r\n";
  chunked += "0\r\n\r\n";
  std::string many_headers;  // 64 KiB of head in 1000 short headers
  for (int i = 0; i < 1000; ++i) many_headers += "X-H" + std::to_string(i) + ": " + std::string(56, 'v') + "\r\n";
  const struct {
    const char* name;
    std::string request;
  } cases[] = {
      {"64 KiB header", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(64 * 1024, 'h') +
                            "\r\nConnection: close\r\n\r\n"},
      {"1000 headers", "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n" + many_headers + "Connection: close\r\n\r\n"},
      {"1 MiB run body", Post("/api/v1/runs", auth + "Content-Length: " + std::to_string(mib.size()) + "\r\n", mib)},
      {"chunked 160 KiB run body", Post("/api/v1/runs", auth + "Transfer-Encoding: chunked\r\n", chunked)},
      {"1 MiB reload body", Post("/-/reload", "Content-Length: " + std::to_string(mib.size()) + "\r\n", mib)},
      {"absurd Content-Length",
       Post("/api/v1/runs", auth + "Content-Length: 999999999999999999999999\r\n", "{\"probes\": []}")},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto start = Clock::now();
    const RawReply reply = RawHttpExchange(static_cast<std::uint16_t>(port_), c.request, 10s);
    EXPECT_FALSE(reply.timed_out) << "the server neither answered nor closed";
    EXPECT_GE(reply.status, 400) << reply.head;
    EXPECT_LT(reply.status, 500) << reply.head;
    std::cout << "[ numbers  ] " << c.name << ": " << reply.status << " after "
              << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() << " ms\n";
    ExpectStillServing();
  }
  // Nothing ran: the refused run bodies never reached the run manager.
  const auto runs = HttpRequest(port_, "GET", "/api/v1/runs", {{"Authorization", std::string("Bearer ") + kToken}});
  ASSERT_TRUE(runs.has_value());
  EXPECT_EQ(runs->body.find("\"id\""), std::string::npos) << runs->body;
  EXPECT_LT(ResidentKib(pid) - rss_before, 32 * 1024) << "KiB";
}

}  // namespace
}  // namespace hostperf::testing
