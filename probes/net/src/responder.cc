// The peer responder: binding its ports, the poll loop that serves them
// and expires what outlived its time (responder_impl.h lists the other files).
#include "hostperf/probes/net/responder.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "responder_impl.h"

namespace hostperf::probes::net {

namespace responder {

namespace {

constexpr std::size_t kReadChunk = 256 * 1024;
// A UDP payload is at most 65507 (IPv4) or 65527 (IPv6) bytes.
constexpr std::size_t kMaxDatagram = 64 * 1024;
// A connection that has proven itself (a session start signed over this
// connection's nonces) and has no session is closed this long after its last
// whole valid message; trickled bytes do not count.
constexpr auto kIdleTimeout = std::chrono::seconds(10);
// A connection that has not proven itself this long after it was accepted
// is closed, whatever it sends: a hello can be replayed, so it does not
// prove anything; unauthenticated clients must not hold the connection slots.
constexpr auto kHandshakeDeadline = std::chrono::seconds(5);
// The reason of a UDP port already taken, which an ephemeral bind retries.
constexpr const char* kUdpPortInUse = "udp_port_in_use";

}  // namespace

ResponderImpl::ResponderImpl(ResponderOptions options)
    : options_(std::move(options)),
      requests_(options_.packets_per_second_per_source),
      accepts_(options_.packets_per_second_per_source),
      junk_(options_.packets_per_second_per_source),
      rng_(std::random_device{}()) {}

ResponderImpl::~ResponderImpl() {
  stop_.store(true);
  const std::uint64_t one = 1;
  if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  // Senders stop at their next pacing step; joined before wake_ goes.
  plan_.sender.reset();
  retired_senders_.clear();
}

Result<void> ResponderImpl::Bind() {
  wake_ = Fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  std::vector<std::string> hosts;
  if (options_.bind_address.empty()) {
    hosts = {"127.0.0.1", "::1"};
  } else {
    hosts = {options_.bind_address};
  }
  for (const std::uint16_t wanted : options_.ports) {
    std::uint16_t port = wanted;
    for (std::size_t i = 0; i < hosts.size(); ++i) {
      auto address = ParseNumericAddress(hosts[i], port);
      if (!address) {
        return Failure{"bad_config", "net.bind_address \"" + hosts[i] + "\" is not a numeric IPv4 or IPv6 address"};
      }
      auto bound = BindPair(*address, port);
      if (!bound) {
        // ::1 may be missing on hosts without IPv6; the IPv4 loopback suffices.
        if (options_.bind_address.empty() && i > 0) continue;
        return bound.failure();
      }
      port = *bound;
    }
    ports_.push_back(port);
  }
  thread_ = std::thread([this] { Loop(); });
  return {};
}

// Binds TCP and UDP on the same port (0: an ephemeral port, taken from
// TCP); returns the port bound.
Result<std::uint16_t> ResponderImpl::BindPair(const SocketAddress& address, std::uint16_t port) {
  // An ephemeral port free for TCP may be taken for UDP: try another.
  const int attempts = port == 0 ? 8 : 1;
  for (int attempt = 1;; ++attempt) {
    auto bound = BindPairOnce(address, port);
    if (bound || bound.reason() != kUdpPortInUse || attempt >= attempts) return bound;
  }
}

Result<std::uint16_t> ResponderImpl::BindPairOnce(SocketAddress address, std::uint16_t port) {
  Fd tcp = NonBlockingSocket(address.family(), SOCK_STREAM);
  Fd udp = NonBlockingSocket(address.family(), SOCK_DGRAM);
  const int one = 1;
  ::setsockopt(tcp.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (address.family() == AF_INET6) {
    const int v6only = options_.bind_address == "::" ? 0 : 1;
    ::setsockopt(tcp.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
    ::setsockopt(udp.get(), IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only));
  }
  address.set_port(port);
  if (::bind(tcp.get(), address.get(), address.length) != 0 || ::listen(tcp.get(), 128) != 0) {
    return Failure{"bind_failed", "cannot bind TCP " + address.ToString() + ": " + std::strerror(errno)};
  }
  SocketAddress bound;
  bound.length = sizeof(bound.storage);
  ::getsockname(tcp.get(), reinterpret_cast<sockaddr*>(&bound.storage), &bound.length);
  address.set_port(bound.port());
  if (::bind(udp.get(), address.get(), address.length) != 0) {
    const int error = errno;
    return Failure{error == EADDRINUSE ? kUdpPortInUse : "bind_failed",
                   "cannot bind UDP " + address.ToString() + ": " + std::strerror(error)};
  }
  const int buffer = 4 * 1024 * 1024;
  ::setsockopt(udp.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
  listeners_.push_back({std::move(tcp), false});
  listeners_.push_back({std::move(udp), true});
  return bound.port();
}

void ResponderImpl::Drop(std::string_view reason) {
  if (options_.observer) options_.observer->OnDrop(reason);
}

void ResponderImpl::Count(MessageType type) {
  if (options_.observer) options_.observer->OnRequest(ToString(type));
}

void ResponderImpl::Fail(std::string_view reason) {
  // Counted, never held against the source address: it may be shared with a
  // genuine peer (a NAT, a local user). Accepts per source are rate-limited,
  // and a failing connection is closed after its one message.
  Drop(reason);
}

void ResponderImpl::Loop() {
  std::vector<pollfd> fds;
  // TCP reads: held only while there are connections, so that a
  // throughput session's 256 KiB are not kept resident between sessions
  // (the daemon's responder idles most of the time). Datagrams have a
  // buffer of their own, as large as one can be, that stays.
  std::unique_ptr<std::uint8_t[]> stream_buffer;
  const auto datagram_buffer = std::make_unique_for_overwrite<std::uint8_t[]>(kMaxDatagram);
  while (!stop_.load()) {
    fds.clear();
    fds.push_back({wake_.get(), POLLIN, 0});
    for (const Listener& l : listeners_) fds.push_back({l.fd.get(), POLLIN, 0});
    for (const auto& [fd, conn] : connections_) {
      fds.push_back({fd, static_cast<short>(POLLIN | (conn.out.empty() ? 0 : POLLOUT)), 0});
    }
    const int rc = ::poll(fds.data(), fds.size(), 100);
    if (rc < 0 && errno != EINTR) break;
    const auto now = Clock::now();
    if (fds[0].revents & POLLIN) {
      std::uint64_t count = 0;
      (void)!::read(wake_.get(), &count, sizeof(count));
    }
    // Connections first: a client that closed its connections and at once
    // opens a new one (the connection-limit test, then the next run's
    // hello) must find their slots free, not a full table. It also keeps an
    // fd number freed and reused by accept() within one batch from
    // receiving its predecessor's events.
    const std::size_t first_connection = 1 + listeners_.size();
    for (std::size_t i = first_connection; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      if (stream_buffer == nullptr) stream_buffer = std::make_unique_for_overwrite<std::uint8_t[]>(kReadChunk);
      ServeConnection(fds[i].fd, fds[i].revents, {stream_buffer.get(), kReadChunk}, now);
    }
    for (std::size_t i = 1; i < first_connection; ++i) {
      if (fds[i].revents == 0) continue;
      const Listener& listener = listeners_[i - 1];
      if (listener.udp) {
        ServeUdp(listener.fd.get(), {datagram_buffer.get(), kMaxDatagram});
      } else {
        AcceptAll(listener.fd.get(), now);
      }
    }
    Expire(now);
    if (connections_.empty()) stream_buffer.reset();
  }
}

void ResponderImpl::Expire(Clock::time_point now) {
  std::vector<int> expired;
  for (const auto& [fd, session] : sessions_) {
    if (now > session.expires) expired.push_back(fd);
  }
  for (const int fd : expired) Close(fd);
  MaybeReport(now);
  std::erase_if(retired_senders_, [](const auto& sender) { return sender->Done(); });
  std::vector<int> idle;
  for (const auto& [fd, conn] : connections_) {
    // Bounded by the session's expiry or the plan's deadline.
    if (sessions_.contains(fd) || (plan_.active && plan_.coordinator_fd == fd)) continue;
    if (!conn.proven ? now - conn.accepted > kHandshakeDeadline : now - conn.last_message > kIdleTimeout) {
      idle.push_back(fd);
    }
  }
  for (const int fd : idle) Close(fd);
}

}  // namespace responder

Result<std::unique_ptr<Responder>> StartResponder(ResponderOptions options) {
  auto responder = std::make_unique<responder::ResponderImpl>(std::move(options));
  if (auto bound = responder->Bind(); !bound) return bound.failure();
  return std::unique_ptr<Responder>(std::move(responder));
}

}  // namespace hostperf::probes::net
