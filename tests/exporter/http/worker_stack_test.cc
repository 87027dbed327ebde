// The stack of the HTTP worker threads, which tests/fuzz/run_api_fuzzer.cc
// reproduces for every input: if this changes (another CivetWeb build, a
// stack size option), the fuzzer's kWorkerStackBytes must follow.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <string>

#include "hostperf/http/http_server.h"

namespace hostperf::http {
namespace {

constexpr std::size_t kFuzzerWorkerStackBytes = 102400;  // run_api_fuzzer.cc's kWorkerStackBytes

std::string Get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    (void)::send(fd, request.data(), request.size(), 0);
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof(buffer), 0)) > 0;) reply.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return reply;
}

TEST(WorkerStackTest, HandlersRunOnTheStackSizeTheRunApiFuzzerUses) {
#if defined(HOSTPERF_UNDER_TSAN)
  GTEST_SKIP() << "ThreadSanitizer gives threads stacks of its own size; the release and ASan builds check this";
#endif
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.worker_threads = 2;
  std::map<std::string, HttpHandler> routes;
  routes["/stack"] = [](const HttpRequest&) {
    pthread_attr_t attr;
    std::size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      pthread_attr_getstacksize(&attr, &size);
      pthread_attr_destroy(&attr);
    }
    return HttpResponse::Text(200, "stack=" + std::to_string(size) + ";");
  };
  auto server = HttpServer::Start(options, std::move(routes));
  ASSERT_TRUE(server) << server.error();
  const auto ports = (*server)->Ports();
  ASSERT_FALSE(ports.empty());
  const std::string reply = Get(ports.front(), "/stack");
  EXPECT_NE(reply.find("stack=" + std::to_string(kFuzzerWorkerStackBytes) + ";"), std::string::npos) << reply;
}

}  // namespace
}  // namespace hostperf::http
