#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "hostperf/base/result.h"

namespace hostperf::probes::net {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(Fd&& other) noexcept : fd_(other.Release()) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.Release();
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset();

 private:
  int fd_ = -1;
};

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  std::uint16_t port() const;
  void set_port(std::uint16_t port);
  std::string Host() const;      // numeric address, no port
  std::string ToString() const;  // "1.2.3.4:5" or "[::1]:5"
};

// Numeric address (no name resolution) with a port.
std::optional<SocketAddress> ParseNumericAddress(const std::string& host, std::uint16_t port);
// getaddrinfo: the first address of `host` (IPv4 preferred); "unresolved_host" on failure.
Result<SocketAddress> ResolveHost(const std::string& host, std::uint16_t port);

// Non-blocking socket of `type` (SOCK_DGRAM / SOCK_STREAM) for the address family.
Fd NonBlockingSocket(int family, int type);
// Non-blocking connect that waits until connected or the deadline ("unreachable" otherwise).
Result<Fd> ConnectTcp(const SocketAddress& address, std::chrono::steady_clock::time_point deadline);
// Blocks (poll) until fd is readable/writable or the deadline; false on timeout.
bool WaitFd(int fd, short events, std::chrono::steady_clock::time_point deadline);
// Writes all bytes before the deadline (non-blocking fd); false on error or timeout.
bool WriteAll(int fd, const std::uint8_t* data, std::size_t size, std::chrono::steady_clock::time_point deadline);

// Wall-clock time in ns since the epoch (for NTP timestamps).
std::int64_t RealtimeNs();
using RealtimeClock = std::function<std::int64_t()>;

}  // namespace hostperf::probes::net
