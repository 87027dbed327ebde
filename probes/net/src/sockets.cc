#include "hostperf/probes/net/sockets.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hostperf::probes::net {

void Fd::Reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::uint16_t SocketAddress::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SocketAddress::set_port(std::uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SocketAddress::Host() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text, sizeof(text));
  } else if (family() == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text, sizeof(text));
  }
  return text;
}

std::string SocketAddress::ToString() const {
  const std::string host = Host();
  return (family() == AF_INET6 ? "[" + host + "]" : host) + ":" + std::to_string(port());
}

std::optional<SocketAddress> ParseNumericAddress(const std::string& host, std::uint16_t port) {
  SocketAddress address;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address.storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    address.length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    address.length = sizeof(sockaddr_in6);
  } else {
    return std::nullopt;
  }
  address.set_port(port);
  return address;
}

Result<SocketAddress> ResolveHost(const std::string& host, std::uint16_t port) {
  if (auto numeric = ParseNumericAddress(host, port)) return *numeric;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    return Failure{"unresolved_host", "cannot resolve " + host + ": " + gai_strerror(rc)};
  }
  // Prefer IPv4 when a name has both (responders bind 127.0.0.1 and ::1 on loopback).
  const addrinfo* chosen = found;
  for (const addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET) {
      chosen = ai;
      break;
    }
  }
  SocketAddress address;
  std::memcpy(&address.storage, chosen->ai_addr, chosen->ai_addrlen);
  address.length = chosen->ai_addrlen;
  address.set_port(port);
  ::freeaddrinfo(found);
  return address;
}

Fd NonBlockingSocket(int family, int type) { return Fd(::socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)); }

bool WaitFd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 1000)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

Result<Fd> ConnectTcp(const SocketAddress& address, std::chrono::steady_clock::time_point deadline) {
  Fd fd = NonBlockingSocket(address.family(), SOCK_STREAM);
  if (!fd.valid()) return Failure{"socket_error", std::string("socket: ") + std::strerror(errno)};
  if (::connect(fd.get(), address.get(), address.length) != 0 && errno != EINPROGRESS) {
    return Failure{"unreachable", "connect to " + address.ToString() + ": " + std::strerror(errno)};
  }
  if (!WaitFd(fd.get(), POLLOUT, deadline))
    return Failure{"unreachable", "connect to " + address.ToString() + ": timed out"};
  int so_error = 0;
  socklen_t length = sizeof(so_error);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &length);
  if (so_error != 0) return Failure{"unreachable", "connect to " + address.ToString() + ": " + std::strerror(so_error)};
  return fd;
}

bool WriteAll(int fd, const std::uint8_t* data, std::size_t size, std::chrono::steady_clock::time_point deadline) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::send(fd, data + done, size - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!WaitFd(fd, POLLOUT, deadline)) return false;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

std::int64_t RealtimeNs() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace hostperf::probes::net
