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
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>

#include "hostperf/probes/net/plan.h"

namespace hostperf::probes::net {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kReadChunk = 256 * 1024;
// A UDP payload is at most 65507 (IPv4) or 65527 (IPv6) bytes.
constexpr std::size_t kMaxDatagram = 64 * 1024;
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
// A TCP source whose messages failed authentication or parsing this many
// times within kFailureWindow is refused (before any HMAC work) for kBlockFor.
constexpr int kMaxFailuresPerSource = 32;
constexpr auto kFailureWindow = std::chrono::seconds(10);
constexpr auto kBlockFor = std::chrono::seconds(30);
// A plan accepted but never started (the coordinator went quiet) is dropped
// this long after it was accepted.
constexpr auto kPlanGoTimeout = std::chrono::seconds(10);
// A started plan reports at the latest this long after its planned end
// (sessions' connects and result exchanges included), whatever its peers do.
// A sender's sessions end by then: a connect (2 s), the duration, the
// results (2 s, plan.cc).
constexpr auto kPlanReportGrace = std::chrono::seconds(6);

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

// kAwaitPlanPeers .. kPlanRunning: a coordinator's connection (protocol.h, revision 2).
enum class ConnState {
  kAwaitHello,
  kReady,
  kTcpStreaming,
  kUdpSession,
  kAwaitPlanPeers,
  kPlanAccepted,
  kPlanRunning,
  kClosing
};

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
  Plan offered_plan;                  // kAwaitPlanPeers: the plan whose peers are arriving
  std::vector<PlanPeer> offered_peers;
};

// A throughput session: the one pair session, or one of a plan's sessions.
struct Session {
  std::uint64_t plan_id = 0;  // 0: a pair session
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

// The sending half of a plan, on a thread of its own so that the poll loop
// keeps serving the peers' sessions meanwhile.
class PlanSender {
 public:
  PlanSender(Plan plan, std::vector<PlanPeer> peers, const Secret& secret, RealtimeClock realtime,
             std::function<void()> on_done)
      : thread_([this, plan = std::move(plan), peers = std::move(peers), secret, realtime = std::move(realtime),
                 on_done = std::move(on_done)] {
          report_ = SendToPlanPeers(
              plan, peers, secret, [this] { return stop_.load(); }, realtime);
          done_.store(true);
          on_done();
        }) {}
  ~PlanSender() {
    stop_.store(true);
    thread_.join();
  }
  void Stop() { stop_.store(true); }
  bool Done() const { return done_.load(); }
  const PlanReport& report() const { return report_; }  // once Done()

 private:
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  PlanReport report_;
  std::thread thread_;  // last: starts once the rest is built
};

// The plan this responder takes part in (at most one at a time).
struct PlanState {
  bool active = false;
  bool going = false;  // kPlanGo received: sending
  int coordinator_fd = -1;
  Plan plan;
  std::vector<PlanPeer> peers;
  Clock::time_point deadline;  // for kPlanGo, then for the report
  std::uint16_t sessions_started = 0;
  // What the peers' sessions of this plan delivered, once they ended.
  PlanReport received;
  double jitter_sum_ns = 0;  // over the UDP sessions that delivered datagrams
  std::uint32_t jitter_sessions = 0;
  std::optional<Clock::time_point> first_byte;
  Clock::time_point last_byte;
  std::unique_ptr<PlanSender> sender;
};

class ResponderImpl final : public Responder {
 public:
  explicit ResponderImpl(ResponderOptions options) : options_(std::move(options)), rng_(std::random_device{}()) {}

  ~ResponderImpl() override {
    stop_.store(true);
    const std::uint64_t one = 1;
    if (wake_.valid()) (void)!::write(wake_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
    // Senders stop at their next pacing step; joined before wake_ goes.
    plan_.sender.reset();
    retired_senders_.clear();
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

  // Failures are tracked for TCP only, whose handshake proves the address. A
  // datagram's source can be forged, and junk UDP "from" an observer's address
  // must not silence that observer's authenticated pings (nor its TCP
  // sessions): over UDP every datagram within the per-source rate limit
  // (probes.net.rate_limit) is checked, junk is dropped and counted, and the
  // rate limit alone bounds the HMAC work a source can cause.
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

  // --- UDP -----------------------------------------------------------------

  void ServeUdp(int fd, std::span<std::uint8_t> buffer) {
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
      if (!Allow(source, now)) {
        Drop("rate_limited");
        continue;
      }
      const Decoded decoded = Decode(datagram, options_.secret);
      if (!decoded.message || decoded.consumed != datagram.size()) {
        Drop(FailureReason(decoded.error));
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
        Drop("malformed");
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
    const auto owner = udp_tokens_.find(data.token);
    const auto it = owner == udp_tokens_.end() ? sessions_.end() : sessions_.find(owner->second);
    if (it == sessions_.end() || it->second.test != ThroughputTest::kUdp) {
      Drop("malformed");
      return;
    }
    Session& session = it->second;
    session.bytes += size;
    session.packets += 1;
    session.max_seq = std::max(session.max_seq, data.seq);
    if (!session.first_byte) session.first_byte = now;
    session.last_byte = now;
    const std::int64_t transit = options_.realtime() - data.sent_ns;
    if (session.last_transit) {
      const double d = static_cast<double>(std::llabs(transit - *session.last_transit));
      session.jitter_ns += (d - session.jitter_ns) / 16.0;
    }
    session.last_transit = transit;
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
    EndSession(fd);
    if (plan_.active && plan_.coordinator_fd == fd) CancelPlan();
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

  void ServeConnection(int fd, short revents, std::span<std::uint8_t> buffer, Clock::time_point now) {
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
          OnTcpData(fd, static_cast<std::size_t>(n), now);
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

  void OnTcpData(int fd, std::size_t bytes, Clock::time_point now) {
    const auto it = sessions_.find(fd);
    if (it == sessions_.end()) return;
    Session& session = it->second;
    if (!session.first_byte) session.first_byte = now;
    session.last_byte = now;
    session.bytes += bytes;
  }

  void OnEof(Connection& conn) {
    const auto it = sessions_.find(conn.fd.get());
    if (conn.state == ConnState::kTcpStreaming && it != sessions_.end()) {
      // The client half-closed: the stream was the request, the results the reply.
      Send(conn, ResultsMessage(it->second), conn.binding);
      EndSession(conn.fd.get());
    }
    conn.state = ConnState::kClosing;
  }

  static Message ResultsMessage(const Session& session) {
    Message m;
    m.type = MessageType::kResults;
    m.session = session.session_id;
    m.results.bytes = session.bytes;
    m.results.packets = session.packets;
    m.results.packets_lost = LostPackets(session);
    m.results.duration_ns =
        session.first_byte ? std::chrono::nanoseconds(session.last_byte - *session.first_byte).count() : 0;
    m.results.jitter_ns = static_cast<std::int64_t>(session.jitter_ns);
    return m;
  }

  static std::uint64_t LostPackets(const Session& session) {
    const std::uint64_t expected = session.packets == 0 ? 0 : session.max_seq + 1;
    return expected > session.packets ? expected - session.packets : 0;
  }

  bool PairSessionActive() const {
    return std::any_of(sessions_.begin(), sessions_.end(), [](const auto& entry) { return entry.second.plan_id == 0; });
  }

  // Starts the session owned by `conn` (a pair session when plan_id is 0).
  Message StartSession(Connection& conn, const Message& request, Clock::time_point now) {
    Session session;
    session.plan_id = request.start.plan_id;
    session.test = request.start.test;
    do {
      session.token = rng_() | 1;
    } while (udp_tokens_.contains(session.token));
    session.session_id = request.session;
    session.started = now;
    session.expires = now + std::chrono::milliseconds(request.start.duration_ms) + kSessionGrace;
    const int fd = conn.fd.get();
    if (session.test == ThroughputTest::kUdp) udp_tokens_[session.token] = fd;
    Message reply;
    reply.session = request.session;
    reply.type = MessageType::kAccept;
    reply.accept.token = session.token;
    sessions_[fd] = session;
    conn.state = request.start.test == ThroughputTest::kTcp ? ConnState::kTcpStreaming : ConnState::kUdpSession;
    return reply;
  }

  // Ends the session owned by `fd`, if any; a session of the running plan
  // adds what it received to the plan's report.
  void EndSession(int fd) {
    const auto it = sessions_.find(fd);
    if (it == sessions_.end()) return;
    const Session& session = it->second;
    if (plan_.active && session.plan_id == plan_.plan.id) AddReceived(session, /*ended=*/true);
    udp_tokens_.erase(session.token);
    sessions_.erase(it);
  }

  void AddReceived(const Session& session, bool ended) {
    PlanReport& r = plan_.received;
    r.bytes_received += session.bytes;
    r.packets_received += session.packets;
    r.packets_lost += LostPackets(session);
    if (session.packets > 0) {
      plan_.jitter_sum_ns += session.jitter_ns;
      ++plan_.jitter_sessions;
    }
    if (ended) ++r.peers_received;
    if (session.first_byte) {
      plan_.first_byte = plan_.first_byte ? std::min(*plan_.first_byte, *session.first_byte) : *session.first_byte;
      plan_.last_byte = std::max(plan_.last_byte, session.last_byte);
    }
  }

  // --- Plans (protocol revision 2) ---------------------------------------

  // A plan offered on `conn` (kPlan): why it cannot be taken, as the reply
  // type, or nullopt.
  std::optional<MessageType> RefusePlan(const Plan& plan) const {
    if (plan_.active || PairSessionActive()) return MessageType::kBusy;
    // Every peer holds a connection here, the coordinator one more.
    if (plan.id == 0 || plan.peer_count == 0 || plan.peer_count >= options_.max_connections || plan.duration_ms == 0 ||
        plan.duration_ms > options_.max_session_ms) {
      return MessageType::kDenied;
    }
    return std::nullopt;
  }

  void StartPlan(Connection& conn, Clock::time_point now) {
    plan_ = PlanState{};
    plan_.active = true;
    plan_.coordinator_fd = conn.fd.get();
    plan_.plan = conn.offered_plan;
    plan_.peers = std::move(conn.offered_peers);
    plan_.deadline = now + kPlanGoTimeout;
    conn.offered_peers.clear();
  }

  void GoPlan(Clock::time_point now) {
    plan_.going = true;
    plan_.deadline = now + std::chrono::milliseconds(plan_.plan.duration_ms) + kPlanReportGrace;
    const int wake = wake_.get();
    plan_.sender = std::make_unique<PlanSender>(plan_.plan, plan_.peers, options_.secret, options_.realtime, [wake] {
      const std::uint64_t one = 1;
      (void)!::write(wake, &one, sizeof(one));
    });
  }

  // The sender stops at its next step; it is joined once it has.
  void RetireSender() {
    if (!plan_.sender) return;
    plan_.sender->Stop();
    retired_senders_.push_back(std::move(plan_.sender));
  }

  void CancelPlan() {
    RetireSender();
    plan_ = PlanState{};
  }

  // The report goes when this host's sends are done and every peer's
  // session here has ended, or at the deadline with what there is.
  void MaybeReport(Clock::time_point now) {
    if (!plan_.active) return;
    if (!plan_.going) {
      if (now > plan_.deadline) {
        const auto coordinator = connections_.find(plan_.coordinator_fd);
        CancelPlan();
        if (coordinator != connections_.end()) coordinator->second.state = ConnState::kClosing;
      }
      return;
    }
    const bool sent = plan_.sender && plan_.sender->Done();
    if (!(sent && plan_.received.peers_received >= plan_.peers.size()) && now <= plan_.deadline) return;
    Message m;
    m.type = MessageType::kPlanReport;
    for (const auto& [fd, session] : sessions_) {
      if (session.plan_id == plan_.plan.id) AddReceived(session, /*ended=*/false);
    }
    m.report = plan_.received;
    const std::size_t sessions = plan_.peers.size();
    if (sent) {
      const PlanReport& own = plan_.sender->report();
      m.report.bytes_sent = own.bytes_sent;
      m.report.packets_sent = own.packets_sent;
      m.report.sent_ns = own.sent_ns;
      m.report.sessions_ok = own.sessions_ok;
      m.report.sessions_failed = own.sessions_failed;
    } else {
      m.report.sessions_failed = static_cast<std::uint16_t>(sessions);  // still sending at the deadline
    }
    m.report.received_ns = plan_.first_byte ? std::chrono::nanoseconds(plan_.last_byte - *plan_.first_byte).count() : 0;
    if (plan_.jitter_sessions > 0) {
      m.report.jitter_ns = static_cast<std::int64_t>(plan_.jitter_sum_ns / plan_.jitter_sessions);
    }
    const auto coordinator = connections_.find(plan_.coordinator_fd);
    if (coordinator != connections_.end()) {
      Send(coordinator->second, m, coordinator->second.binding);
      coordinator->second.state = ConnState::kReady;  // it may offer the next plan
      coordinator->second.last_message = now;
      Flush(coordinator->second);
    }
    Count(MessageType::kPlanReport);
    CancelPlan();
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
      OnTcpData(conn.fd.get(), conn.in.size() - offset, now);  // data right behind the start message
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
        if (message.type == MessageType::kPlan) {
          Count(message.type);
          conn.proven = true;  // signed over this connection's fresh nonce
          if (const auto refusal = RefusePlan(message.plan)) {
            if (*refusal == MessageType::kBusy) Drop("busy");
            reply.type = *refusal;
            Send(conn, reply, conn.binding);
            return true;
          }
          conn.offered_plan = message.plan;
          conn.offered_peers.clear();
          conn.state = ConnState::kAwaitPlanPeers;
          return true;
        }
        if (message.type != MessageType::kSessionStart && message.type != MessageType::kPlanSessionStart) break;
        Count(message.type);
        conn.proven = true;
        if (message.start.duration_ms == 0 || message.start.duration_ms > options_.max_session_ms) {
          reply.type = MessageType::kDenied;
        } else if (message.type == MessageType::kSessionStart) {
          if (!sessions_.empty() || plan_.active) {
            Drop("busy");
            reply.type = MessageType::kBusy;
          } else {
            reply = StartSession(conn, message, now);
          }
        } else if (!plan_.active || message.start.plan_id != plan_.plan.id || message.start.test != plan_.plan.test ||
                   plan_.sessions_started >= plan_.peers.size()) {
          // Only the plan this host was given, and one session per peer:
          // nobody else can make this responder receive (or send) for a plan.
          reply.type = MessageType::kDenied;
        } else {
          ++plan_.sessions_started;
          reply = StartSession(conn, message, now);
        }
        Send(conn, reply, conn.binding);
        return true;
      case ConnState::kAwaitPlanPeers:
        if (message.type != MessageType::kPlanPeers ||
            conn.offered_peers.size() + message.peers.size() > conn.offered_plan.peer_count) {
          break;
        }
        Count(message.type);
        conn.offered_peers.insert(conn.offered_peers.end(), message.peers.begin(), message.peers.end());
        if (conn.offered_peers.size() < conn.offered_plan.peer_count) return true;
        if (const auto refusal = RefusePlan(conn.offered_plan)) {  // another plan came first
          reply.type = *refusal;
          conn.state = ConnState::kReady;
        } else {
          StartPlan(conn, now);
          reply.type = MessageType::kAccept;
          reply.accept.token = plan_.plan.id;
          conn.state = ConnState::kPlanAccepted;
        }
        Send(conn, reply, conn.binding);
        return true;
      case ConnState::kPlanAccepted:
        if (message.type != MessageType::kPlanGo || !plan_.active || plan_.coordinator_fd != conn.fd.get()) break;
        Count(message.type);
        GoPlan(now);
        conn.state = ConnState::kPlanRunning;
        return true;
      case ConnState::kUdpSession: {
        if (message.type != MessageType::kSessionStop) break;
        Count(message.type);
        const auto it = sessions_.find(conn.fd.get());
        if (it != sessions_.end()) Send(conn, ResultsMessage(it->second), conn.binding);
        EndSession(conn.fd.get());
        conn.state = ConnState::kReady;
        return true;
      }
      case ConnState::kTcpStreaming:
      case ConnState::kPlanRunning:
      case ConnState::kClosing:
        break;
    }
    Fail(tcp_failures_, conn.source, "malformed", now);  // a message that does not fit the connection's state
    return false;
  }

  void Expire(Clock::time_point now) {
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

  ResponderOptions options_;
  std::vector<Listener> listeners_;
  std::vector<std::uint16_t> ports_;
  std::map<int, Connection> connections_;
  std::map<std::string, Bucket> buckets_;
  FailureTable tcp_failures_;
  std::map<int, Session> sessions_;                    // by the owning connection
  std::unordered_map<std::uint64_t, int> udp_tokens_;  // UDP session token -> its connection
  std::mt19937_64 rng_;
  Fd wake_;
  PlanState plan_;  // after wake_: its sender signals it when done
  std::vector<std::unique_ptr<PlanSender>> retired_senders_;
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
