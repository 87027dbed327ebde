#include "hostperf/http/http_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hostperf::http {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

// ---------------------------------------------------------------------------
// ToCivetwebPorts

struct PortsCase {
  std::string listen_address;
  std::string civetweb;  // empty: must be rejected
};

void PrintTo(const PortsCase& c, std::ostream* os) {
  *os << '"' << c.listen_address << "\" -> " << (c.civetweb.empty() ? "rejected" : c.civetweb);
}

class ToCivetwebPortsTest : public ::testing::TestWithParam<PortsCase> {};

TEST_P(ToCivetwebPortsTest, TranslatesOrRejects) {
  const PortsCase& c = GetParam();
  const auto ports = ToCivetwebPorts(c.listen_address);
  if (c.civetweb.empty()) {
    ASSERT_FALSE(ports.ok()) << c.listen_address << " was accepted as " << *ports;
    EXPECT_THAT(ports.error(), HasSubstr(c.listen_address));
  } else {
    ASSERT_TRUE(ports.ok()) << c.listen_address << ": " << ports.error();
    EXPECT_EQ(*ports, c.civetweb);
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ToCivetwebPortsTest,
                         ::testing::Values(PortsCase{":9580", "9580"},                     //
                                           PortsCase{"0.0.0.0:9580", "9580"},              //
                                           PortsCase{"127.0.0.1:0", "127.0.0.1:0"},        //
                                           PortsCase{"10.1.2.3:9580", "10.1.2.3:9580"},    //
                                           PortsCase{"[::1]:9580", "[::1]:9580"},          //
                                           PortsCase{"[::]:9580", "[::]:9580"},            //
                                           PortsCase{"localhost:9580", "127.0.0.1:9580"},  //
                                           PortsCase{":65535", "65535"},                   //
                                           PortsCase{"9580", ""},                          //
                                           PortsCase{"host:abc", ""},                      //
                                           PortsCase{":70000", ""},                        //
                                           PortsCase{":", ""},                             //
                                           PortsCase{":-1", ""},                           //
                                           PortsCase{":123456", ""},                       //
                                           PortsCase{"example.com:80", ""},                //
                                           PortsCase{"[::1:80", ""}));

// ---------------------------------------------------------------------------
// A raw HTTP/1.1 client: connect, send the request as given, read until the
// server closes (these requests say Connection: close, or the server closes
// after answering them), or until the Content-Length body is in.

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Socket& operator=(Socket&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { Close(); }

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Close() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

// From `source`, another loopback address for a client on another host.
Socket Connect(int port, const char* source = nullptr) {
  Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket.valid()) {
    ADD_FAILURE() << "socket() failed";
    return socket;
  }
  // Never hang the test run on a server that does not answer.
  timeval timeout{20, 0};
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  if (source != nullptr) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    ::inet_pton(AF_INET, source, &local.sin_addr);
    if (::bind(socket.fd(), reinterpret_cast<const sockaddr*>(&local), sizeof(local)) != 0) {
      ADD_FAILURE() << "bind to " << source << " failed";
      socket.Close();
      return socket;
    }
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ADD_FAILURE() << "connect to 127.0.0.1:" << port << " failed";
    socket.Close();
  }
  return socket;
}

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
  std::string raw;

  std::string Header(const std::string& lower_name) const {
    const auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

RawResponse ParseResponse(std::string raw) {
  RawResponse response;
  response.raw = std::move(raw);
  const auto end_of_head = response.raw.find("\r\n\r\n");
  if (end_of_head == std::string::npos) return response;
  const std::string head = response.raw.substr(0, end_of_head);
  response.body = response.raw.substr(end_of_head + 4);
  std::size_t line_start = head.find("\r\n");
  const std::string status_line = head.substr(0, line_start);
  if (status_line.rfind("HTTP/1.", 0) == 0 && status_line.size() >= 12) {
    response.status = std::stoi(status_line.substr(9, 3));
  }
  while (line_start != std::string::npos) {
    line_start += 2;
    const std::size_t line_end = head.find("\r\n", line_start);
    const std::string line = head.substr(line_start, line_end - line_start);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      response.headers[name] = value;
    }
    line_start = line_end;
  }
  return response;
}

// Reads until the server closes, or until the whole response is in by its
// Content-Length (not for HEAD: there the test wants to see that nothing
// follows the head).
RawResponse Exchange(int port, const std::string& request) {
  const bool head_request = request.rfind("HEAD ", 0) == 0;
  Socket socket = Connect(port);
  if (!socket.valid()) return {};
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      ADD_FAILURE() << "send failed";
      return {};
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string raw;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n < 0) {
      ADD_FAILURE() << "recv failed or timed out after " << raw.size() << " bytes";
      break;
    }
    if (n == 0) break;
    raw.append(buffer, static_cast<std::size_t>(n));
    const RawResponse so_far = ParseResponse(raw);
    if (so_far.status == 0) continue;  // head not complete yet
    const std::string length = so_far.Header("content-length");
    if (!head_request && !length.empty() && so_far.body.size() >= std::stoul(length)) return so_far;
  }
  return ParseResponse(std::move(raw));
}

std::string GetRequest(const std::string& target, const std::string& method = "GET") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
}

// ---------------------------------------------------------------------------
// HttpServer

constexpr std::size_t kMaxBody = 64;

std::map<std::string, HttpHandler> TestRoutes() {
  std::map<std::string, HttpHandler> routes;
  routes["/echo"] = [](const HttpRequest& request) {
    return HttpResponse::Text(200, "method=" + request.method + " path=" + request.path + " query=" + request.query +
                                       " x-test=" + request.Header("x-test") + " body=" + request.body);
  };
  routes["/created"] = [](const HttpRequest&) {
    HttpResponse response;
    response.status = 202;
    response.content_type = "application/json";
    response.headers.emplace_back("X-Extra", "yes");
    response.body = R"({"id":"r-1"})";
    return response;
  };
  routes["/throw"] = [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("handler bug"); };
  routes["/tree/*"] = [](const HttpRequest& request) { return HttpResponse::Text(200, "tree " + request.path); };
  routes["/tree/deep/*"] = [](const HttpRequest& request) { return HttpResponse::Text(200, "deep " + request.path); };
  return routes;
}

// One server for the suite: stopping CivetWeb takes up to its 2 s poll
// quantum, so a server per test would make the suite slow.
class HttpServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    HttpServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.max_body_bytes = kMaxBody;
    auto server = HttpServer::Start(options, TestRoutes());
    ASSERT_TRUE(server.ok()) << server.error();
    server_ = std::move(server).value().release();
    const std::vector<int> ports = server_->Ports();
    ASSERT_THAT(ports, SizeIs(1));
    port_ = ports.front();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0) << "Ports() must resolve port 0 to the port actually bound";
  }

  static HttpServer* server_;
  static int port_;
};

HttpServer* HttpServerTest::server_ = nullptr;
int HttpServerTest::port_ = 0;

TEST_F(HttpServerTest, PortZeroResolvesToABoundPort) {
  EXPECT_GT(port_, 0);
  EXPECT_LE(port_, 65535);
  // The reported port is the one that answers.
  EXPECT_EQ(Exchange(port_, GetRequest("/echo")).status, 200);
}

TEST_F(HttpServerTest, RouteSeesMethodPathQueryAndHeaders) {
  const RawResponse response =
      Exchange(port_, "GET /echo?a=1&b=2 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test: abc\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "method=GET path=/echo query=a=1&b=2 x-test=abc body=\n");
  EXPECT_EQ(response.Header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(response.Header("content-length"), std::to_string(response.body.size()));
  EXPECT_EQ(response.Header("connection"), "close");
}

TEST_F(HttpServerTest, PostBodyReachesTheHandler) {
  const RawResponse response = Exchange(
      port_, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.body, "method=POST path=/echo query= x-test= body=hello world\n");
}

TEST_F(HttpServerTest, HandlerStatusContentTypeAndHeadersAreSent) {
  const RawResponse response = Exchange(port_, GetRequest("/created", "POST"));
  EXPECT_EQ(response.status, 202);
  EXPECT_EQ(response.Header("content-type"), "application/json");
  EXPECT_EQ(response.Header("x-extra"), "yes");
  EXPECT_EQ(response.body, R"({"id":"r-1"})");
}

TEST_F(HttpServerTest, UnknownPathIs404) {
  const RawResponse response = Exchange(port_, GetRequest("/no/such/path"));
  EXPECT_EQ(response.status, 404);
  EXPECT_THAT(response.body, HasSubstr("/no/such/path"));
}

TEST_F(HttpServerTest, RoutesMatchExactPathsOnly) {
  EXPECT_EQ(Exchange(port_, GetRequest("/echo/more")).status, 404);
  EXPECT_EQ(Exchange(port_, GetRequest("/ech")).status, 404);
  EXPECT_EQ(Exchange(port_, GetRequest("/")).status, 404);
}

TEST_F(HttpServerTest, PrefixRoutesMatchLongerPathsAndTheLongestPrefixWins) {
  EXPECT_EQ(Exchange(port_, GetRequest("/tree/r-1")).body, "tree /tree/r-1\n");
  EXPECT_EQ(Exchange(port_, GetRequest("/tree/r-1/cancel")).body, "tree /tree/r-1/cancel\n");
  EXPECT_EQ(Exchange(port_, GetRequest("/tree/deep/x")).body, "deep /tree/deep/x\n");
  EXPECT_EQ(Exchange(port_, GetRequest("/tree/")).status, 404);  // the prefix alone is not a match
  EXPECT_EQ(Exchange(port_, GetRequest("/tree")).status, 404);
  EXPECT_EQ(Exchange(port_, GetRequest("/treehouse/x")).status, 404);
}

TEST_F(HttpServerTest, HeadSendsHeadersWithoutBody) {
  const RawResponse get = Exchange(port_, GetRequest("/created"));
  const RawResponse head = Exchange(port_, GetRequest("/created", "HEAD"));
  EXPECT_EQ(head.status, 202);
  EXPECT_EQ(head.Header("content-type"), "application/json");
  EXPECT_EQ(head.Header("content-length"), get.Header("content-length"));
  EXPECT_EQ(head.Header("content-length"), "12");
  // Nothing follows the head, not even after the server has closed.
  const std::size_t end_of_head = head.raw.find("\r\n\r\n");
  ASSERT_NE(end_of_head, std::string::npos);
  EXPECT_THAT(head.body, IsEmpty());
  EXPECT_EQ(head.raw.size(), end_of_head + 4);
}

TEST_F(HttpServerTest, ContentLengthAboveTheLimitIs413) {
  // Headers only: the server must refuse on the announced length alone.
  const RawResponse response =
      Exchange(port_, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response.status, 413);
  EXPECT_THAT(response.body, Not(HasSubstr("method=")));
}

TEST_F(HttpServerTest, BodyAtTheLimitIsAccepted) {
  const std::string body(kMaxBody, 'x');
  const RawResponse response =
      Exchange(port_, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
                          "\r\nConnection: close\r\n\r\n" + body);
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.body, HasSubstr(body));
}

TEST_F(HttpServerTest, ChunkedBodyAboveTheLimitIs413) {
  const std::string chunk(2 * kMaxBody, 'y');
  char size[16];
  std::snprintf(size, sizeof(size), "%zx", chunk.size());
  const RawResponse response = Exchange(
      port_, "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" +
                 std::string(size) + "\r\n" + chunk + "\r\n0\r\n\r\n");
  EXPECT_EQ(response.status, 413);
}

TEST_F(HttpServerTest, ThrowingHandlerIs500AndTheServerKeepsServing) {
  const RawResponse failed = Exchange(port_, GetRequest("/throw"));
  EXPECT_EQ(failed.status, 500);
  EXPECT_THAT(failed.body, Not(HasSubstr("handler bug")));  // no internals to clients
  EXPECT_EQ(Exchange(port_, GetRequest("/echo")).status, 200);
  EXPECT_EQ(Exchange(port_, GetRequest("/throw")).status, 500);
  EXPECT_EQ(Exchange(port_, GetRequest("/echo")).status, 200);
}

TEST_F(HttpServerTest, IdleConnectionsDoNotStopAnotherRequest) {
  std::vector<Socket> idle;
  for (int i = 0; i < 8; ++i) {
    idle.push_back(Connect(port_));  // connected, nothing sent
    ASSERT_TRUE(idle.back().valid());
  }
  const RawResponse response = Exchange(port_, GetRequest("/echo"));
  EXPECT_EQ(response.status, 200);
  EXPECT_THAT(response.body, HasSubstr("method=GET"));
}

TEST_F(HttpServerTest, SecondServerOnTheSamePortFailsClearly) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:" + std::to_string(port_);
  const auto second = HttpServer::Start(options, TestRoutes());
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.error(), HasSubstr("cannot listen"));
  EXPECT_THAT(second.error(), HasSubstr(options.listen_address));
  // The first one is unaffected.
  EXPECT_EQ(Exchange(port_, GetRequest("/echo")).status, 200);
}

// One source's idle connections beyond the limit are shut down,
// oldest first, and counted; a request from the same source still passes.
// Whether the server shed the connection for load: it said 503 with
// Retry-After (the only thing it may say unasked) and closed it. Does not
// wait: an open connection with nothing to read is false.
bool ShedWith503(const Socket& socket) {
  std::string raw;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      raw.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0) return false;
    const RawResponse response = ParseResponse(raw);
    EXPECT_EQ(response.status, 503) << raw;
    EXPECT_EQ(response.Header("retry-after"), "1") << raw;
    return true;
  }
}

TEST(HttpServerAdmissionTest, OneSourceHoldsAtMostTheLimitAndItsOldestIdleGoFirst) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_connections_per_source = 4;
  std::atomic<int> evicted{0};
  options.on_connection_evicted = [&evicted] { ++evicted; };
  auto server = HttpServer::Start(options, TestRoutes());
  ASSERT_TRUE(server.ok()) << server.error();
  const int port = (*server)->Ports().front();
  std::vector<Socket> idle;
  for (int i = 0; i < 10; ++i) {
    idle.push_back(Connect(port));
    ASSERT_TRUE(idle.back().valid());
    if (i < 4) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a clear order
      continue;
    }
    // Each connection past the limit evicts one before the next is made, so
    // a loaded machine cannot register two at once out of order.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (evicted.load() < i - 3 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const auto closed = [](const Socket& socket) { return ShedWith503(socket); };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (evicted.load() < 6 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(evicted.load(), 6);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(closed(idle[i])) << "connection " << i;
  for (int i = 6; i < 10; ++i) EXPECT_FALSE(closed(idle[i])) << "connection " << i;
  EXPECT_EQ(Exchange(port, GetRequest("/echo")).status, 200);
  EXPECT_EQ(evicted.load(), 7);
  EXPECT_TRUE(closed(idle[6]));
}

// Many sources, each within its own limit, together beyond
// MaxHeldConnections: the oldest idle connections go whatever their source,
// and a request from yet another source is answered while the rest are held
// (without the bound it would wait for the 60 s request timeout).
TEST(HttpServerAdmissionTest, ManySourcesTogetherLeaveWorkersFree) {
  EXPECT_EQ(MaxHeldConnections(64), 56);
  EXPECT_EQ(MaxHeldConnections(8), 6);
  EXPECT_EQ(MaxHeldConnections(1), 1);
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.worker_threads = 8;  // 6 held at most
  options.request_timeout = std::chrono::seconds(60);
  std::atomic<int> evicted{0};
  options.on_connection_evicted = [&evicted] { ++evicted; };
  auto server = HttpServer::Start(options, TestRoutes());
  ASSERT_TRUE(server.ok()) << server.error();
  const int port = (*server)->Ports().front();
  constexpr int kSources = 12;
  std::vector<std::string> sources;
  for (int i = 0; i < kSources; ++i) sources.push_back("127.0.3." + std::to_string(i + 1));
  std::vector<Socket> idle;
  for (int i = 0; i < kSources; ++i) {
    idle.push_back(Connect(port, sources[static_cast<std::size_t>(i)].c_str()));
    ASSERT_TRUE(idle.back().valid());
    // One at a time, as in the per-source test: a clear order.
    const int expected = std::max(0, i + 1 - MaxHeldConnections(options.worker_threads));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (evicted.load() < expected && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (expected == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(evicted.load(), kSources - 6);
  const auto closed = [](const Socket& socket) { return ShedWith503(socket); };
  for (int i = 0; i < kSources - 6; ++i) EXPECT_TRUE(closed(idle[i])) << "connection " << i;
  for (int i = kSources - 6; i < kSources; ++i) EXPECT_FALSE(closed(idle[i])) << "connection " << i;
  // Served (the socket's 20 s timeout would fail it otherwise); the oldest
  // idle connection made room.
  EXPECT_EQ(Exchange(port, GetRequest("/echo")).status, 200);
  EXPECT_GE(evicted.load(), kSources - 6 + 1);
}

// ---------------------------------------------------------------------------
// Keep-alive

// Sends all of `data`.
bool SendAll(const Socket& socket, const std::string& data) {
  for (std::size_t sent = 0; sent < data.size();) {
    const ssize_t n = ::send(socket.fd(), data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads one response (head and Content-Length body) from a kept connection;
// status 0 if the server closed it first.
RawResponse ReadOne(const Socket& socket) {
  std::string raw;
  char byte;
  while (raw.find("\r\n\r\n") == std::string::npos) {
    if (::recv(socket.fd(), &byte, 1, 0) != 1) return ParseResponse(raw);
    raw += byte;
  }
  const std::string length = ParseResponse(raw).Header("content-length");
  for (std::size_t want = length.empty() ? 0 : std::stoul(length); want > 0; --want) {
    if (::recv(socket.fd(), &byte, 1, 0) != 1) break;
    raw += byte;
  }
  return ParseResponse(raw);
}

// True when the server has closed the connection (blocks up to the socket's 20 s timeout).
bool ServerClosed(const Socket& socket) {
  char byte;
  return ::recv(socket.fd(), &byte, 1, 0) == 0;
}

std::unique_ptr<HttpServer> StartKeepAliveServer(std::chrono::milliseconds idle, int per_source = 32,
                                                 std::atomic<int>* evicted = nullptr) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_body_bytes = kMaxBody;
  options.keep_alive_timeout = idle;
  options.max_connections_per_source = per_source;
  if (evicted != nullptr) options.on_connection_evicted = [evicted] { ++*evicted; };
  auto server = HttpServer::Start(options, TestRoutes());
  EXPECT_TRUE(server.ok()) << server.error();
  return server.ok() ? std::move(server).value() : nullptr;
}

// Before: every response said Connection: close and the server closed.
TEST(HttpServerKeepAliveTest, RequestsReuseOneConnectionUntilTheIdleBound) {
  const auto server = StartKeepAliveServer(std::chrono::milliseconds(1500));
  ASSERT_NE(server, nullptr);
  const Socket socket = Connect(server->Ports().front());
  ASSERT_TRUE(socket.valid());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(SendAll(socket, "GET /echo?n=" + std::to_string(i) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    const RawResponse response = ReadOne(socket);
    ASSERT_EQ(response.status, 200) << "request " << i << " on the same connection: " << response.raw;
    EXPECT_THAT(response.body, HasSubstr("query=n=" + std::to_string(i)));
    EXPECT_EQ(response.Header("connection"), "keep-alive");
    EXPECT_EQ(response.Header("keep-alive"), "timeout=2");
  }
  // A POST with a body, then two pipelined requests in one write.
  ASSERT_TRUE(SendAll(socket,
                      "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody"
                      "GET /echo?p=1 HTTP/1.1\r\nHost: h\r\n\r\nGET /echo?p=2 HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_THAT(ReadOne(socket).body, HasSubstr("method=POST path=/echo query= x-test= body=body"));
  EXPECT_THAT(ReadOne(socket).body, HasSubstr("query=p=1"));
  EXPECT_THAT(ReadOne(socket).body, HasSubstr("query=p=2"));
  // Idle: the server closes it after the bound (sanity bounds only).
  const auto idle_since = std::chrono::steady_clock::now();
  EXPECT_TRUE(ServerClosed(socket));
  const auto idle = std::chrono::steady_clock::now() - idle_since;
  EXPECT_GE(idle, std::chrono::milliseconds(500));
  EXPECT_LT(idle, std::chrono::seconds(15));
}

TEST(HttpServerKeepAliveTest, CloseIsHonouredAndResponsesBeforeTheBodyClose) {
  // Longer than the test socket's 20 s receive timeout: a connection kept
  // alive would make ServerClosed() time out instead of seeing the close.
  const auto server = StartKeepAliveServer(std::chrono::seconds(30));
  ASSERT_NE(server, nullptr);
  const int port = server->Ports().front();
  const auto one = [port](const std::string& request) {
    const Socket socket = Connect(port);
    EXPECT_TRUE(SendAll(socket, request));
    RawResponse response = ReadOne(socket);
    // Closed after the response, and nothing else sent. (For the 413 CivetWeb
    // first waits up to twice the 5 s request timeout for the declared body,
    // as it did before keep-alive.)
    EXPECT_TRUE(ServerClosed(socket)) << request;
    return response;
  };
  RawResponse response = one("GET /echo HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.Header("connection"), "close");
  response = one("GET /echo HTTP/1.0\r\nHost: h\r\n\r\n");
  EXPECT_EQ(response.status, 200);
  EXPECT_EQ(response.Header("connection"), "close");
  // A body over the limit is not read (nor discarded for a next request).
  response = one("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000\r\n\r\n" + std::string(1000, 'x'));
  EXPECT_EQ(response.status, 413);
  EXPECT_EQ(response.Header("connection"), "close");
  // Ambiguous length with a request smuggled behind it: answered once, closed.
  response =
      one("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 40\r\n\r\n"
          "GET /echo?smuggled HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(response.status, 400);
  EXPECT_EQ(response.Header("connection"), "close");
  EXPECT_THAT(response.raw, Not(HasSubstr("smuggled")));
  // HTTP/1.0 asking for keep-alive gets it.
  const Socket socket = Connect(port);
  ASSERT_TRUE(SendAll(socket, "GET /echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_EQ(ReadOne(socket).Header("connection"), "keep-alive");
  ASSERT_TRUE(SendAll(socket, "GET /echo?again HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_THAT(ReadOne(socket).body, HasSubstr("query=again"));
}

// A connection idle between requests counts as idle for the per-source
// limit: it is the oldest idle one, and goes first.
TEST(HttpServerKeepAliveTest, AnIdleKeptConnectionIsEvictedByTheSourceLimit) {
  std::atomic<int> evicted{0};
  const auto server = StartKeepAliveServer(std::chrono::seconds(10), /*per_source=*/2, &evicted);
  ASSERT_NE(server, nullptr);
  const int port = server->Ports().front();
  const Socket kept = Connect(port);
  ASSERT_TRUE(SendAll(kept, "GET /echo HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  ASSERT_EQ(ReadOne(kept).status, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const Socket second = Connect(port);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(Exchange(port, GetRequest("/echo")).status, 200);  // a third: over the limit
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (evicted.load() < 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(ShedWith503(kept));
  EXPECT_GE(evicted.load(), 1);
}

// on_idle runs once the last request in flight has been answered: not when
// one of two overlapping requests finishes, and once more for every later
// drain. The test waits for events, never for time.
TEST(HttpServerIdleHookTest, CalledAfterTheLastRequestInFlightIsAnswered) {
  std::mutex mu;
  std::condition_variable changed;
  int entered = 0;
  std::set<std::string> released;
  int idle_calls = 0;
  const auto wait_until = [&](const auto& condition) {
    std::unique_lock lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(20), condition);
  };
  std::map<std::string, HttpHandler> routes = TestRoutes();
  routes["/hold"] = [&](const HttpRequest& request) {
    std::unique_lock lock(mu);
    ++entered;
    changed.notify_all();
    changed.wait_for(lock, std::chrono::seconds(20), [&] { return released.count(request.query) > 0; });
    return HttpResponse::Text(200, "held " + request.query);
  };
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.on_idle = [&] {
    std::lock_guard lock(mu);
    ++idle_calls;
    changed.notify_all();
  };
  auto server = HttpServer::Start(options, std::move(routes));
  ASSERT_TRUE(server.ok()) << server.error();
  const int port = (*server)->Ports().front();
  const auto release = [&](const std::string& query) {
    std::lock_guard lock(mu);
    released.insert(query);
    changed.notify_all();
  };

  RawResponse first;
  RawResponse second;
  std::thread first_client([&] { first = Exchange(port, GetRequest("/hold?first")); });
  std::thread second_client([&] { second = Exchange(port, GetRequest("/hold?second")); });
  const bool both_in = wait_until([&] { return entered == 2; });
  if (!both_in) {
    release("first");
    release("second");
    first_client.join();
    second_client.join();
    FAIL() << "the two requests were not inside the handler together";
  }
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(idle_calls, 0) << "called while requests were in flight";
  }
  release("first");
  first_client.join();
  EXPECT_THAT(first.body, HasSubstr("held first"));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(idle_calls, 0) << "called while the second request was still in flight";
  }
  release("second");
  second_client.join();
  EXPECT_THAT(second.body, HasSubstr("held second"));
  EXPECT_TRUE(wait_until([&] { return idle_calls >= 1; })) << "not called after both were answered";
  // Another request, another drain.
  EXPECT_EQ(Exchange(port, GetRequest("/echo")).status, 200);
  EXPECT_TRUE(wait_until([&] { return idle_calls >= 2; })) << "not called after a later request";
  std::lock_guard lock(mu);
  EXPECT_EQ(idle_calls, 2);
}

// Many clients of one source at once, each sending its request as soon as it
// connects: the limit sheds some, and every one of them is still answered
// (200, or 503 with Retry-After), none closed without a response; a shed
// request never reaches its handler.
TEST(HttpServerAdmissionTest, ShedConnectionsAreAnswered503WithRetryAfter) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.max_connections_per_source = 4;
  options.worker_threads = 16;
  std::atomic<int> evicted{0};
  options.on_connection_evicted = [&evicted] { ++evicted; };
  std::atomic<int> handled{0};
  std::map<std::string, HttpHandler> routes;
  routes["/slow"] = [&handled](const HttpRequest&) {
    ++handled;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return HttpResponse::Text(200, "ok");
  };
  auto server = HttpServer::Start(options, std::move(routes));
  ASSERT_TRUE(server.ok()) << server.error();
  const int port = (*server)->Ports().front();
  constexpr int kClients = 60;
  std::vector<int> statuses(kClients, 0);
  std::vector<std::string> retry_after(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const RawResponse response =
          Exchange(port, "POST /slow HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}");
      statuses[static_cast<std::size_t>(i)] = response.status;
      retry_after[static_cast<std::size_t>(i)] = response.Header("retry-after");
    });
  }
  for (auto& client : clients) client.join();
  int ok = 0;
  int shed = 0;
  for (int i = 0; i < kClients; ++i) {
    const int status = statuses[static_cast<std::size_t>(i)];
    EXPECT_TRUE(status == 200 || status == 503) << "client " << i << " got " << status << " (0: closed unanswered)";
    if (status == 503) EXPECT_EQ(retry_after[static_cast<std::size_t>(i)], "1") << "client " << i;
    ok += status == 200;
    shed += status == 503;
  }
  EXPECT_EQ(ok + shed, kClients);
  EXPECT_GT(shed, 0) << "the limit of 4 shed nobody among " << kClients;
  EXPECT_EQ(handled.load(), ok) << "a shed request reached its handler";
  EXPECT_GE(evicted.load(), shed);
}

// CivetWeb closed these without a reply, or took the first Content-Length.
TEST_F(HttpServerTest, AbsoluteFormOptionsStarAndAmbiguousLengths) {
  const RawResponse absolute =
      Exchange(port_, "GET http://example.com:1/echo?a=b HTTP/1.1\r\nHost: x\r\nX-Test: t\r\n\r\n");
  EXPECT_EQ(absolute.status, 200);
  EXPECT_THAT(absolute.body, HasSubstr("method=GET path=/echo query=a=b x-test=t"));
  const RawResponse https_root = Exchange(port_, "GET https://h/ HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(https_root.status, 404);  // "/" has no route here
  const RawResponse absolute_post =
      Exchange(port_, "POST http://h/echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody");
  EXPECT_THAT(absolute_post.body, HasSubstr("method=POST path=/echo query= x-test= body=body"));
  const RawResponse star = Exchange(port_, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(star.status, 200);
  EXPECT_EQ(star.Header("allow"), "GET, HEAD, POST, OPTIONS");
  EXPECT_EQ(Exchange(port_, "DELETE * HTTP/1.1\r\nHost: x\r\n\r\n").status, 400);
  EXPECT_EQ(
      Exchange(port_, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nbody").status,
      400);
  EXPECT_EQ(Exchange(port_,
                     "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: "
                     "chunked\r\n\r\n0\r\n\r\n")
                .status,
            400);
  EXPECT_EQ(Exchange(port_, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody").status, 200);
}

TEST(ClientSourceKeyTest, Ipv4AsIsIpv6ByItsSlash64) {
  EXPECT_EQ(ClientSourceKey("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(ClientSourceKey("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  EXPECT_EQ(ClientSourceKey("2001:db8:1:2::9"), ClientSourceKey("2001:db8:1:2:ffff::1"));
  EXPECT_NE(ClientSourceKey("2001:db8:1:2::9"), ClientSourceKey("2001:db8:1:3::9"));
  EXPECT_EQ(ClientSourceKey("::ffff:192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(ClientSourceKey("not an address"), "not an address");
}

TEST(HttpServerStartTest, RejectsABadListenAddressBeforeBinding) {
  HttpServerOptions options;
  options.listen_address = "example.com:80";
  const auto server = HttpServer::Start(options, TestRoutes());
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(server.error(), HasSubstr("example.com:80"));
}

TEST(HttpServerStartTest, LocalhostListensOnLoopback) {
  HttpServerOptions options;
  options.listen_address = "localhost:0";
  auto server = HttpServer::Start(options, TestRoutes());
  ASSERT_TRUE(server.ok()) << server.error();
  const std::vector<int> ports = (*server)->Ports();
  ASSERT_THAT(ports, SizeIs(1));
  EXPECT_EQ(Exchange(ports.front(), GetRequest("/echo")).status, 200);
}

}  // namespace
}  // namespace hostperf::http
