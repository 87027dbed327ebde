#include "net_http_fault_harness.h"

#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace hostperf::testing {

namespace net = hostperf::probes::net;
using Clock = std::chrono::steady_clock;

long ResidentKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

int OpenFds(pid_t pid) {
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return -1;
  int count = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

net::Fd ConnectLoopback(std::uint16_t port) {
  net::Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const auto address = *net::ParseNumericAddress("127.0.0.1", port);
  if (!fd.valid() || ::connect(fd.get(), address.get(), address.length) != 0) return {};
  return fd;
}

bool ServerClosed(int fd) {
  char buffer[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
  }
}

net::Fd BoundUdp(std::uint16_t port) {
  net::Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const auto address = *net::ParseNumericAddress("127.0.0.1", port);
  if (!fd.valid() || ::bind(fd.get(), address.get(), address.length) != 0) return {};
  return fd;
}

std::optional<double> Sample(const std::string& exposition, const std::string& series) {
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::strtod(line.c_str() + series.size() + 1, nullptr);
  }
  return std::nullopt;
}

namespace {

// A whole response: its head and as much body as its Content-Length says.
bool ResponseComplete(const std::string& received) {
  const auto head_end = received.find("\r\n\r\n");
  if (head_end == std::string::npos) return false;
  std::string head = received.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto length = head.find("\r\ncontent-length:");
  if (length == std::string::npos) return false;
  return received.size() - head_end - 4 >= std::strtoull(head.c_str() + length + 17, nullptr, 10);
}

}  // namespace

RawReply RawHttpExchange(std::uint16_t port, const std::string& request, std::chrono::milliseconds timeout) {
  RawReply reply;
  net::Fd fd = ConnectLoopback(port);
  if (!fd.valid()) return reply;
  const auto deadline = Clock::now() + timeout;
  std::size_t sent = 0;
  bool writing = true;
  std::string received;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      reply.timed_out = true;
      break;
    }
    pollfd p{fd.get(), static_cast<short>(POLLIN | (writing ? POLLOUT : 0)), 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    if (writing && (p.revents & POLLOUT)) {
      const ssize_t n = ::send(fd.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) sent += static_cast<std::size_t>(n);
      // EPIPE / ECONNRESET: the server refused and closed; read what it said.
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == request.size()) writing = false;
    }
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buffer[4096];
      const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
      if (n > 0) {
        received.append(buffer, static_cast<std::size_t>(n));
        if (ResponseComplete(received)) break;
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        break;  // closed (or reset) by the server
      }
    }
  }
  if (received.rfind("HTTP/1.", 0) == 0 && received.size() > 12) reply.status = std::atoi(received.c_str() + 9);
  reply.head = received.substr(0, 200);
  return reply;
}

}  // namespace hostperf::testing
