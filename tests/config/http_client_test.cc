#include "hostperf/base/http_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hostperf {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A one-connection-at-a-time HTTP/1.1 server on 127.0.0.1:0 for the client's
// tests: reads a request (headers and a Content-Length body), records it, and
// writes what `answer` returns for it, then closes the connection.
class TinyServer {
 public:
  using Answer = std::function<std::string(const std::string& request)>;

  explicit TinyServer(Answer answer) : answer_(std::move(answer)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || ::listen(listener_, 8) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      return;
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TinyServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    ::close(listener_);
  }

  std::string Origin() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return port_; }
  std::vector<std::string> Requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd ready{listener_, POLLIN, 0};
      if (::poll(&ready, 1, 50) <= 0) continue;
      const int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) continue;
      std::string request = ReadRequest(connection);
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      const std::string response = answer_(request);
      if (response == "hang") {
        // Never answers: the client's timeout must end the call.
        while (!stop_) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      } else {
        for (std::size_t sent = 0; sent < response.size();) {
          const ssize_t n = ::send(connection, response.data() + sent, response.size() - sent, MSG_NOSIGNAL);
          if (n <= 0) break;
          sent += static_cast<std::size_t>(n);
        }
      }
      ::close(connection);
    }
  }

  static std::string ReadRequest(int connection) {
    std::string text;
    char buffer[4096];
    std::size_t want = std::string::npos;
    while (want == std::string::npos || text.size() < want) {
      pollfd ready{connection, POLLIN, 0};
      if (::poll(&ready, 1, 2000) <= 0) break;
      const ssize_t n = ::recv(connection, buffer, sizeof(buffer), 0);
      if (n <= 0) break;
      text.append(buffer, static_cast<std::size_t>(n));
      const auto end = text.find("\r\n\r\n");
      if (want == std::string::npos && end != std::string::npos) {
        std::size_t body = 0;
        if (const auto at = text.find("Content-Length: "); at != std::string::npos && at < end) {
          body = std::stoul(text.substr(at + 16));
        }
        want = end + 4 + body;
      }
    }
    return text;
  }

  Answer answer_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> requests_;
};

std::string Response(int status, const std::string& body, const std::string& extra_headers = "") {
  return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n" + extra_headers + "\r\n" + body;
}

std::unique_ptr<HttpClient> Client(HttpClientSettings settings = {}) {
  auto client = HttpClient::Create(std::move(settings));
  EXPECT_TRUE(client) << client.error();
  return client ? std::move(client).value() : nullptr;
}

TEST(HttpClient, GetsStatusBodyAndHeadersAndSendsItsOwn) {
  TinyServer server([](const std::string&) { return Response(404, "{\"error\":\"no\"}", "X-Thing: A b\r\n"); });
  ASSERT_NE(server.port(), 0);
  HttpRequest request;
  request.url = server.Origin() + "/api/v1/runs/7?x=1";
  request.headers = {{"Authorization", "Bearer t0k"}};
  const auto reply = Client()->Send(request);
  ASSERT_TRUE(reply) << reply.error();
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->body, "{\"error\":\"no\"}");
  EXPECT_EQ(reply->Header("x-THING"), "A b");
  EXPECT_EQ(reply->Header("absent"), "");
  ASSERT_EQ(server.Requests().size(), 1u);
  const std::string sent = server.Requests()[0];
  EXPECT_THAT(sent, StartsWith("GET /api/v1/runs/7?x=1 HTTP/1.1\r\n"));
  EXPECT_THAT(sent, HasSubstr("\r\nAuthorization: Bearer t0k\r\n"));
}

TEST(HttpClient, PostsJsonAndOtherMethodsWithTheirBodies) {
  TinyServer server([](const std::string&) { return Response(202, "{}"); });
  HttpRequest post;
  post.method = "POST";
  post.url = server.Origin() + "/api/v1/runs";
  post.body = R"({"probes":["cpu"]})";
  ASSERT_EQ(Client()->Send(post)->status, 202);
  HttpRequest put = post;
  put.method = "PUT";
  put.headers = {{"Content-Type", "text/plain"}};
  ASSERT_EQ(Client()->Send(put)->status, 202);
  HttpRequest empty_post;
  empty_post.method = "POST";
  empty_post.url = server.Origin() + "/api/v1/runs/1/cancel";
  ASSERT_EQ(Client()->Send(empty_post)->status, 202);
  const auto requests = server.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_THAT(requests[0], StartsWith("POST /api/v1/runs HTTP/1.1\r\n"));
  EXPECT_THAT(requests[0], HasSubstr("Content-Type: application/json\r\n"));
  EXPECT_THAT(requests[0], HasSubstr("\r\n\r\n{\"probes\":[\"cpu\"]}"));
  EXPECT_THAT(requests[0], Not(HasSubstr("Expect:")));
  EXPECT_THAT(requests[1], StartsWith("PUT /api/v1/runs HTTP/1.1\r\n"));
  EXPECT_THAT(requests[1], HasSubstr("Content-Type: text/plain\r\n"));
  EXPECT_THAT(requests[1], Not(HasSubstr("application/json")));
  EXPECT_THAT(requests[2], HasSubstr("Content-Length: 0\r\n"));
}

TEST(HttpClient, FollowsRedirectsOnlyWhenAskedAndReportsTheLastUrl) {
  std::string origin;
  TinyServer server([&](const std::string& request) {
    if (request.rfind("GET /namenode", 0) == 0) return Response(307, "", "Location: " + origin + "/datanode?x=1\r\n");
    return Response(200, "data");
  });
  origin = server.Origin();
  HttpRequest request;
  request.url = origin + "/namenode";
  const auto kept = Client()->Send(request);
  ASSERT_TRUE(kept) << kept.error();
  EXPECT_EQ(kept->status, 307);
  EXPECT_EQ(kept->Header("location"), origin + "/datanode?x=1");
  request.follow_redirects = true;
  const auto followed = Client()->Send(request);
  ASSERT_TRUE(followed) << followed.error();
  EXPECT_EQ(followed->status, 200);
  EXPECT_EQ(followed->body, "data");
  EXPECT_EQ(followed->url, origin + "/datanode?x=1");
  // The headers are the last response's alone.
  EXPECT_EQ(followed->Header("location"), "");
}

TEST(HttpClient, BoundsTheBodyOrStreamsItAndStopsWhenTold) {
  const std::string big(100000, 'x');
  TinyServer server([&](const std::string&) { return Response(200, big); });
  HttpRequest request;
  request.url = server.Origin() + "/big";
  request.max_body = 1000;
  const auto capped = Client()->Send(request);
  ASSERT_FALSE(capped);
  EXPECT_EQ(capped.reason(), "too_large");
  EXPECT_THAT(capped.error(), HasSubstr("127.0.0.1:" + std::to_string(server.port())));

  std::size_t streamed = 0;
  request.on_body = [&](std::string_view chunk) {
    streamed += chunk.size();
    return true;
  };
  const auto whole = Client()->Send(request);
  ASSERT_TRUE(whole) << whole.error();
  EXPECT_EQ(streamed, big.size());
  EXPECT_TRUE(whole->body.empty());

  request.on_body = [](std::string_view) { return false; };
  const auto stopped = Client()->Send(request);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.reason(), "aborted");
}

TEST(HttpClient, RefusedSilentAndEmptyServersAreReasonedErrors) {
  std::uint16_t dead_port = 0;
  {
    TinyServer gone([](const std::string&) { return std::string(); });
    dead_port = gone.port();
  }
  HttpRequest request;
  request.url = "http://127.0.0.1:" + std::to_string(dead_port) + "/";
  const auto refused = Client()->Send(request);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.reason(), "unreachable");
  EXPECT_THAT(refused.error(), StartsWith("cannot connect to 127.0.0.1:" + std::to_string(dead_port) + ": "));

  TinyServer silent([](const std::string&) { return std::string("hang"); });
  request.url = silent.Origin() + "/";
  request.timeout = std::chrono::milliseconds(300);
  const auto timed_out = Client()->Send(request);
  ASSERT_FALSE(timed_out);
  EXPECT_EQ(timed_out.reason(), "timeout");
  EXPECT_THAT(timed_out.error(), HasSubstr("within 300 ms"));

  // Closes without a word, as a TLS port does to a plain request.
  TinyServer mute([](const std::string&) { return std::string(); });
  request.url = mute.Origin() + "/";
  request.timeout = std::chrono::milliseconds(5000);
  const auto nothing = Client()->Send(request);
  ASSERT_FALSE(nothing);
  EXPECT_EQ(nothing.reason(), "transport");
  EXPECT_THAT(nothing.error(), HasSubstr("(is it a TLS port?)"));
}

TEST(HttpClient, SendsBasicAuthOnEveryRequest) {
  TinyServer server([](const std::string&) { return Response(200, "ok"); });
  HttpClientSettings settings;
  settings.basic_user = "alice";
  settings.basic_password = "pw";
  auto client = Client(settings);
  HttpRequest request;
  request.url = server.Origin() + "/metrics";
  ASSERT_TRUE(client->Send(request));
  request.method = "POST";
  ASSERT_TRUE(client->Send(request));
  for (const std::string& sent : server.Requests()) {
    EXPECT_THAT(sent, HasSubstr("\r\nAuthorization: Basic YWxpY2U6cHc=\r\n"));  // alice:pw
  }
}

TEST(HttpClient, SettingsAreCheckedBeforeAnyRequest) {
  HttpClientSettings half;
  half.cert_file = "/etc/hostname";
  const auto no_key = HttpClient::Create(half);
  ASSERT_FALSE(no_key);
  EXPECT_THAT(no_key.error(), HasSubstr("both a certificate file and a key file"));
  HttpClientSettings missing;
  missing.ca_file = "/nonexistent/ca.crt";
  const auto no_ca = HttpClient::Create(missing);
  ASSERT_FALSE(no_ca);
  EXPECT_THAT(no_ca.error(), HasSubstr("cannot read the CA file /nonexistent/ca.crt: "));
  HttpClientSettings directory;
  directory.ca_file = "/tmp";
  EXPECT_THAT(HttpClient::Create(directory).error(), HasSubstr("is a directory"));
  HttpClientSettings both;
  both.basic_user = "a";
  both.negotiate = true;
  EXPECT_FALSE(HttpClient::Create(both));
  HttpClientSettings colon;
  colon.basic_user = "a:b";
  EXPECT_FALSE(HttpClient::Create(colon));
}

TEST(HttpClient, OriginsAndEncoding) {
  EXPECT_EQ(HttpOrigin(false, "10.0.0.1", 9580), "http://10.0.0.1:9580");
  EXPECT_EQ(HttpOrigin(true, "fe80::1", 443), "https://[fe80::1]:443");
  EXPECT_EQ(UrlEncode("a b/c?d=é~_.-"), "a%20b%2Fc%3Fd%3D%C3%A9~_.-");
  EXPECT_EQ(UrlEncode(""), "");
}

}  // namespace
}  // namespace hostperf
