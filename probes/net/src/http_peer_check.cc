#include "http_peer_check.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>

#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

namespace {

using Clock = std::chrono::steady_clock;

// Whether `spec` answers an HTTP request with a status line by `deadline`.
bool AnswersHttp(const PeerSpec& spec, Clock::time_point deadline) {
  const auto address = ResolveHost(spec.host, spec.port);
  if (!address) return false;
  auto fd = ConnectTcp(*address, deadline);
  if (!fd) return false;
  static constexpr std::string_view kRequest = "GET / HTTP/1.0\r\n\r\n";
  if (!WriteAll(fd->get(), reinterpret_cast<const std::uint8_t*>(kRequest.data()), kRequest.size(), deadline)) {
    return false;
  }
  std::string reply;
  while (reply.size() < 5 && WaitFd(fd->get(), POLLIN, deadline)) {
    char buffer[5];
    const ssize_t n = ::recv(fd->get(), buffer, 5 - reply.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    reply.append(buffer, static_cast<std::size_t>(n));
  }
  return reply == "HTTP/";
}

}  // namespace

std::vector<PeerSpec> PeersAnsweringHttp(const std::vector<PeerSpec>& specs, std::size_t sample,
                                         std::chrono::milliseconds bound) {
  struct Checks {
    std::mutex mu;
    std::condition_variable done_cv;
    std::size_t left = 0;
    std::vector<bool> http;
  };
  const std::size_t count = std::min(sample, specs.size());
  auto checks = std::make_shared<Checks>();
  checks->left = count;
  checks->http.assign(count, false);
  const auto deadline = Clock::now() + bound;
  for (std::size_t i = 0; i < count; ++i) {
    // Detached: a resolver stuck on a dead DNS server is left behind (the
    // caller exits or goes on), holding only its own copies.
    std::thread([checks, spec = specs[i], i, deadline] {
      const bool http = AnswersHttp(spec, deadline);
      std::lock_guard lock(checks->mu);
      checks->http[i] = http;
      if (--checks->left == 0) checks->done_cv.notify_all();
    }).detach();
  }
  std::unique_lock lock(checks->mu);
  checks->done_cv.wait_until(lock, deadline + std::chrono::milliseconds(100), [&] { return checks->left == 0; });
  std::vector<PeerSpec> http;
  for (std::size_t i = 0; i < count; ++i) {
    if (checks->http[i]) http.push_back(specs[i]);
  }
  return http;
}

}  // namespace hostperf::probes::net
