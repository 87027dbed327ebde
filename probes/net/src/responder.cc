#include "hostperf/probes/net/responder.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <utility>

namespace hostperf::probes::net {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = 256 * 1024;
constexpr std::size_t kMaxBufferedControl = 4 * kMaxMessage;
constexpr std::size_t kMaxTrackedSources = 4096;
// A session whose client vanished is ended this long after its planned end.
constexpr auto kSessionGrace = std::chrono::seconds(10);
// A connection that has proven itself (a session start signed over this
// connection's nonces) and has no session is closed this long after its last
// whole valid message; trickled bytes do not count.
constexpr auto kIdleTimeout = std::chrono::seconds(10);
// A connection that has not proven itself this long after it was accepted
// is closed, whatever it sends: a hello can be replayed, so it does not
// prove anything; unauthenticated clients must not hold the connection slots.
constexpr auto kHandshakeDeadline = std::chrono::seconds(5);
// A source whose messages failed authentication or parsing this many times
// within kFailureWindow is ignored (before any HMAC work) for kBlockFor.
constexpr int kMaxFailuresPerSource = 32;
constexpr auto kFailureWindow = std::chrono::seconds(10);
constexpr auto kBlockFor = std::chrono::seconds(30);

// Per-source token bucket.
struct Bucket {
  double tokens = 0;
  Clock::time_point refilled;
};

// Failed messages of one source.
struct Failures {
  int count = 0;
  Clock::time_point window_start;
  Clock::time_point blocked_until;
};

enum class ConnState { kAwaitHello, kReady, kTcpStreaming, kUdpSession, kClosing };

struct Connection {
  Fd fd;
  std::string source;
  ConnState state = ConnState::kAwaitHello;
  std::vector<std::uint8_t> in;
  std::vector<std::uint8_t> out;
  Clock::time_point accepted;
  Clock::time_point last_message;     // the last whole valid message
  bool proven = false;                // a message signed over this connection's nonces was received
  std::vector<std::uint8_t> binding;  // after the hello: client nonce | responder nonce
};

struct Session {
  bool active = false;
  int owner_fd = -1;
  ThroughputTest test = ThroughputTest::kTcp;
  std::uint64_t token = 0;
  std::uint32_t session_id = 0;
  Clock::time_point started;
  Clock::time_point expires;
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;
  std::uint64_t max_seq = 0;
  std::optional<Clock::time_point> first_byte;
  Clock::time_point last_byte;
  // RFC 3550 jitter state (ns).
  std::optional<std::int64_t> last_transit;
  double jitter_ns = 0;
};

struct Listener {
  Fd fd;
  bool udp = false;
};

class ResponderImpl final : public Responder {
 public:
  explicit ResponderImpl(ResponderOptions options) : options_(std::move(options)), rng_(std::random_device{}()) {}

  ~ResponderImpl() override {
    stop_.store(true);
    const std::uint64_t one = 1;
    if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
  }

  std::vector<std::uint16_t> Ports() const override { return ports_; }

  Result<void> Bind() {
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

 private:
  // Binds TCP and UDP on the same port (0: an ephemeral port, taken from
  // TCP); returns the port bound.
  Result<std::uint16_t> BindPair(const SocketAddress& address, std::uint16_t port) {
    // An ephemeral port free for TCP may be taken for UDP: try another.
    const int attempts = port == 0 ? 8 : 1;
    for (int attempt = 1;; ++attempt) {
      auto bound = BindPairOnce(address, port);
      if (bound || bound.reason() != kUdpPortInUse || attempt >= attempts) return bound;
    }
  }

  // The reason of a UDP port already taken, which an ephemeral bind retries.
  static constexpr const char* kUdpPortInUse = "udp_port_in_use";

  Result<std::uint16_t> BindPairOnce(SocketAddress address, std::uint16_t port) {
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

  void Drop(std::string_view reason) {
    if (options_.observer) options_.observer->OnDrop(reason);
  }
  void Count(MessageType type) {
    if (options_.observer) options_.observer->OnRequest(ToString(type));
  }

  // UDP and TCP failures are tracked apart: a datagram's source address can
  // be forged, so junk UDP "from" a genuine peer must not get that peer's TCP
  // connections (whose handshake proves the address) refused as well.
  using FailureTable = std::map<std::string, Failures>;

  static bool Blocked(const FailureTable& table, const std::string& source, Clock::time_point now) {
    const auto it = table.find(source);
    return it != table.end() && now < it->second.blocked_until;
  }

  // A message from `source` failed authentication or parsing.
  void Fail(FailureTable& table, const std::string& source, std::string_view reason, Clock::time_point now) {
    Drop(reason);
    // A peer of another protocol version (a rolling upgrade) is told so, not
    // blocked: it is no attacker, and it will be upgraded shortly.
    if (reason == "bad_version") return;
    auto it = table.find(source);
    if (it == table.end()) {
      if (table.size() >= kMaxTrackedSources) {
        std::erase_if(table, [&](const auto& entry) {
          return now >= entry.second.blocked_until && now - entry.second.window_start >= kFailureWindow;
        });
        if (table.size() >= kMaxTrackedSources) return;
      }
      it = table.emplace(source, Failures{0, now, {}}).first;
    }
    Failures& f = it->second;
    if (now - f.window_start >= kFailureWindow) {
      f.count = 0;
      f.window_start = now;
    }
    if (++f.count >= kMaxFailuresPerSource) {
      f.blocked_until = now + kBlockFor;
      f.count = 0;
      f.window_start = now;
    }
  }

  bool Allow(const std::string& source, Clock::time_point now) {
    const double rate = options_.packets_per_second_per_source;
    auto it = buckets_.find(source);
    if (it == buckets_.end()) {
      if (buckets_.size() >= kMaxTrackedSources) {
        // Forget sources whose buckets are full again: they are idle.
        std::erase_if(buckets_, [&](const auto& entry) {
          return entry.second.tokens + std::chrono::duration<double>(now - entry.second.refilled).count() * rate >=
                 rate;
        });
        if (buckets_.size() >= kMaxTrackedSources) return false;
      }
      it = buckets_.emplace(source, Bucket{rate, now}).first;
    }
    Bucket& bucket = it->second;
    bucket.tokens = std::min(rate, bucket.tokens + std::chrono::duration<double>(now - bucket.refilled).count() * rate);
    bucket.refilled = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  void Loop() {
    std::vector<pollfd> fds;
    std::vector<std::uint8_t> buffer(kReadChunk);
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
      // Connections first: a client that closed its connections and at once
      // opens a new one (the connection-limit test, then the next run's
      // hello) must find their slots free, not a full table. It also keeps an
      // fd number freed and reused by accept() within one batch from
      // receiving its predecessor's events.
      const std::size_t first_connection = 1 + listeners_.size();
      for (std::size_t i = first_connection; i < fds.size(); ++i) {
        if (fds[i].revents != 0) ServeConnection(fds[i].fd, fds[i].revents, buffer, now);
      }
      for (std::size_t i = 1; i < first_connection; ++i) {
        if (fds[i].revents == 0) continue;
        const Listener& listener = listeners_[i - 1];
        if (listener.udp) {
          ServeUdp(listener.fd.get(), buffer);
        } else {
          AcceptAll(listener.fd.get(), now);
        }
      }
      Expire(now);
    }
  }

  // --- UDP -----------------------------------------------------------------

  void ServeUdp(int fd, std::vector<std::uint8_t>& buffer) {
    for (int budget = 0; budget < 4096; ++budget) {
      SocketAddress from;
      from.length = sizeof(from.storage);
      const ssize_t n =
          ::recvfrom(fd, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from.storage), &from.length);
      if (n < 0) return;
      const auto now = Clock::now();
      const std::span<const std::uint8_t> datagram(buffer.data(), static_cast<std::size_t>(n));
      if (const auto data = DecodeUdpData(datagram)) {
        OnUdpData(*data, datagram.size(), now);
        continue;
      }
      const std::string source = from.Host();
      if (Blocked(udp_failures_, source, now)) {
        Drop("source_blocked");
        continue;
      }
      if (!Allow(source, now)) {
        Drop("rate_limited");
        continue;
      }
      const Decoded decoded = Decode(datagram, options_.secret);
      if (!decoded.message || decoded.consumed != datagram.size()) {
        Fail(udp_failures_, source, FailureReason(decoded.error), now);
        continue;
      }
      Message reply = *decoded.message;
      std::span<const std::uint8_t> binding;
      if (reply.type == MessageType::kPing) {
        reply.type = MessageType::kPong;
        reply.ping.t2_ns = options_.realtime();
      } else if (reply.type == MessageType::kHello) {
        reply.type = MessageType::kHelloAck;
        reply.hello.version = kProtocolVersion;
        reply.hello.revision = 0;  // no MTU over UDP: the reply must not outgrow the request
        reply.hello.mtu = 0;
        reply.hello.max_connections = options_.max_connections;
        reply.hello.nonce = RandomNonce();
        binding = decoded.message->hello.nonce;
      } else {
        Fail(udp_failures_, source, "malformed", now);
        continue;
      }
      Count(decoded.message->type);
      reply.ping.t3_ns = options_.realtime();
      const auto bytes = Encode(reply, options_.secret, binding);
      // Amplification guard: a reply never exceeds its request.
      if (bytes.size() > datagram.size()) continue;
      ::sendto(fd, bytes.data(), bytes.size(), MSG_DONTWAIT, from.get(), from.length);
    }
  }

  static std::string_view FailureReason(DecodeError error) {
    switch (error) {
      case DecodeError::kBadHmac:
        return "bad_hmac";
      case DecodeError::kBadVersion:
        return "bad_version";
      default:
        return "malformed";
    }
  }

  void OnUdpData(const UdpData& data, std::size_t size, Clock::time_point now) {
    if (!session_.active || session_.test != ThroughputTest::kUdp || data.token != session_.token) {
      Drop("malformed");
      return;
    }
    session_.bytes += size;
    session_.packets += 1;
    session_.max_seq = std::max(session_.max_seq, data.seq);
    if (!session_.first_byte) session_.first_byte = now;
    session_.last_byte = now;
    const std::int64_t transit = options_.realtime() - data.sent_ns;
    if (session_.last_transit) {
      const double d = static_cast<double>(std::llabs(transit - *session_.last_transit));
      session_.jitter_ns += (d - session_.jitter_ns) / 16.0;
    }
    session_.last_transit = transit;
  }

  // --- TCP -----------------------------------------------------------------

  void AcceptAll(int listen_fd, Clock::time_point now) {
    while (true) {
      SocketAddress from;
      from.length = sizeof(from.storage);
      Fd fd(
          ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from.storage), &from.length, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd.valid()) return;
      if (Blocked(tcp_failures_, from.Host(), now)) {
        Drop("source_blocked");
        continue;
      }
      // Full: the oldest connection that has not proven itself makes room
      // (a flood of unauthenticated or replayed connections cannot lock
      // peers out), else the new one is closed at once (the connection-limit
      // test sees EOF).
      if (connections_.size() >= options_.max_connections && !EvictOldestUnauthenticated()) {
        Drop("connection_limit");
        continue;
      }
      if (!Allow(from.Host(), now)) {
        Drop("rate_limited");
        continue;
      }
      const int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Connection conn;
      conn.source = from.Host();
      conn.accepted = now;
      conn.last_message = now;
      const int key = fd.get();
      conn.fd = std::move(fd);
      connections_.emplace(key, std::move(conn));
    }
  }

  void Close(int fd) {
    if (session_.active && session_.owner_fd == fd) session_ = Session{};
    connections_.erase(fd);
  }

  bool EvictOldestUnauthenticated() {
    auto oldest = connections_.end();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (!it->second.proven && (oldest == connections_.end() || it->second.accepted < oldest->second.accepted)) {
        oldest = it;
      }
    }
    if (oldest == connections_.end()) return false;
    Drop("connection_limit");
    Close(oldest->first);
    return true;
  }

  void ServeConnection(int fd, short revents, std::vector<std::uint8_t>& buffer, Clock::time_point now) {
    auto it = connections_.find(fd);
    if (it == connections_.end()) return;
    Connection& conn = it->second;
    if (revents & POLLOUT) Flush(conn);
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
      while (true) {
        const ssize_t n = ::recv(fd, buffer.data(), buffer.size(), 0);
        if (n == 0) {
          OnEof(conn);
          break;
        }
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EINTR) continue;
          return Close(fd);
        }
        if (conn.state == ConnState::kTcpStreaming) {
          OnTcpData(static_cast<std::size_t>(n), now);
          continue;
        }
        if (conn.state == ConnState::kClosing) continue;
        conn.in.insert(conn.in.end(), buffer.begin(), buffer.begin() + n);
        if (!ProcessControl(conn, now)) return Close(fd);
        if (static_cast<std::size_t>(n) < buffer.size()) break;
      }
    }
    if (conn.state == ConnState::kClosing && conn.out.empty()) return Close(fd);
    if (!conn.out.empty()) Flush(conn);
    if (conn.state == ConnState::kClosing && conn.out.empty()) Close(fd);
  }

  void Flush(Connection& conn) {
    while (!conn.out.empty()) {
      const ssize_t n = ::send(conn.fd.get(), conn.out.data(), conn.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n <= 0) {
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          conn.out.clear();
          conn.state = ConnState::kClosing;
        }
        return;
      }
      conn.out.erase(conn.out.begin(), conn.out.begin() + n);
    }
  }

  void Send(Connection& conn, const Message& message, std::span<const std::uint8_t> binding) {
    const auto bytes = Encode(message, options_.secret, binding);
    conn.out.insert(conn.out.end(), bytes.begin(), bytes.end());
  }

  void OnTcpData(std::size_t bytes, Clock::time_point now) {
    if (!session_.first_byte) session_.first_byte = now;
    session_.last_byte = now;
    session_.bytes += bytes;
  }

  void OnEof(Connection& conn) {
    if (conn.state == ConnState::kTcpStreaming && session_.active && session_.owner_fd == conn.fd.get()) {
      // The client half-closed: the stream was the request, the results the reply.
      Send(conn, ResultsMessage(), conn.binding);
      session_ = Session{};
    }
    conn.state = ConnState::kClosing;
  }

  Message ResultsMessage() const {
    Message m;
    m.type = MessageType::kResults;
    m.session = session_.session_id;
    m.results.bytes = session_.bytes;
    m.results.packets = session_.packets;
    const std::uint64_t expected = session_.packets == 0 ? 0 : session_.max_seq + 1;
    m.results.packets_lost = expected > session_.packets ? expected - session_.packets : 0;
    m.results.duration_ns =
        session_.first_byte ? std::chrono::nanoseconds(session_.last_byte - *session_.first_byte).count() : 0;
    m.results.jitter_ns = static_cast<std::int64_t>(session_.jitter_ns);
    return m;
  }

  // Handles whole control messages; false closes the connection silently.
  bool ProcessControl(Connection& conn, Clock::time_point now) {
    std::size_t offset = 0;
    while (conn.state != ConnState::kTcpStreaming && conn.state != ConnState::kClosing) {
      const auto data = std::span(conn.in).subspan(offset);
      const Decoded decoded = Decode(data, options_.secret, conn.binding);
      if (!decoded.message) {
        if (decoded.error == DecodeError::kTruncated && conn.in.size() - offset < kMaxBufferedControl) break;
        if (decoded.error == DecodeError::kBadVersion && conn.state == ConnState::kAwaitHello &&
            IsLegacyHello(data, options_.secret)) {
          // A client of the previous release: tell it our version in its
          // own format, then close.
          const auto reply = EncodeLegacyVersionReply(options_.secret, 0);
          conn.out.insert(conn.out.end(), reply.begin(), reply.end());
          Drop("bad_version");
          conn.state = ConnState::kClosing;
          break;
        }
        Fail(tcp_failures_, conn.source, FailureReason(decoded.error), now);
        return false;
      }
      offset += decoded.consumed;
      conn.last_message = now;
      if (!HandleControl(conn, *decoded.message, now)) return false;
    }
    if (conn.state == ConnState::kTcpStreaming && offset < conn.in.size()) {
      OnTcpData(conn.in.size() - offset, now);  // data right behind the start message
      offset = conn.in.size();
    }
    conn.in.erase(conn.in.begin(), conn.in.begin() + static_cast<long>(offset));
    return true;
  }

  bool HandleControl(Connection& conn, const Message& message, Clock::time_point now) {
    Message reply;
    reply.session = message.session;
    switch (conn.state) {
      case ConnState::kAwaitHello:
        if (message.type != MessageType::kHello) break;
        Count(message.type);
        reply.type = MessageType::kHelloAck;
        reply.hello.max_connections = options_.max_connections;
        reply.hello.nonce = RandomNonce();
        // A client of the previous release (revision 0) gets the reply it knows.
        reply.hello.revision = std::min(message.hello.revision, kProtocolRevision);
        if (reply.hello.revision >= 1 && options_.reply_mtu) reply.hello.mtu = options_.reply_mtu(conn.source);
        Send(conn, reply, message.hello.nonce);
        conn.binding = SessionBinding(message.hello.nonce, reply.hello.nonce);
        conn.state = ConnState::kReady;
        return true;
      case ConnState::kReady:
        if (message.type != MessageType::kSessionStart) break;
        Count(message.type);
        conn.proven = true;  // signed over this connection's fresh nonce
        if (session_.active) {
          Drop("busy");
          reply.type = MessageType::kBusy;
        } else if (message.start.duration_ms == 0 || message.start.duration_ms > options_.max_session_ms) {
          reply.type = MessageType::kDenied;
        } else {
          session_ = Session{};
          session_.active = true;
          session_.owner_fd = conn.fd.get();
          session_.test = message.start.test;
          session_.token = rng_() | 1;
          session_.session_id = message.session;
          session_.started = now;
          session_.expires = now + std::chrono::milliseconds(message.start.duration_ms) + kSessionGrace;
          reply.type = MessageType::kAccept;
          reply.accept.token = session_.token;
          conn.state = message.start.test == ThroughputTest::kTcp ? ConnState::kTcpStreaming : ConnState::kUdpSession;
        }
        Send(conn, reply, conn.binding);
        return true;
      case ConnState::kUdpSession:
        if (message.type != MessageType::kSessionStop) break;
        Count(message.type);
        Send(conn, ResultsMessage(), conn.binding);
        session_ = Session{};
        conn.state = ConnState::kReady;
        return true;
      case ConnState::kTcpStreaming:
      case ConnState::kClosing:
        break;
    }
    Fail(tcp_failures_, conn.source, "malformed", now);  // a message that does not fit the connection's state
    return false;
  }

  void Expire(Clock::time_point now) {
    if (session_.active && now > session_.expires) Close(session_.owner_fd);
    std::vector<int> idle;
    for (const auto& [fd, conn] : connections_) {
      const bool in_session = session_.active && session_.owner_fd == fd;
      if (in_session) continue;  // bounded by the session's expiry
      if (!conn.proven ? now - conn.accepted > kHandshakeDeadline : now - conn.last_message > kIdleTimeout) {
        idle.push_back(fd);
      }
    }
    for (const int fd : idle) Close(fd);
  }

  ResponderOptions options_;
  std::vector<Listener> listeners_;
  std::vector<std::uint16_t> ports_;
  std::map<int, Connection> connections_;
  std::map<std::string, Bucket> buckets_;
  FailureTable udp_failures_;
  FailureTable tcp_failures_;
  Session session_;
  std::mt19937_64 rng_;
  Fd wake_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Responder>> StartResponder(ResponderOptions options) {
  auto responder = std::make_unique<ResponderImpl>(std::move(options));
  if (auto bound = responder->Bind(); !bound) return bound.failure();
  return std::unique_ptr<Responder>(std::move(responder));
}

}  // namespace hostperf::probes::net
