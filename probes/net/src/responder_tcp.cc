// The peer responder's TCP side: accepting connections (within the
// connection limit and the per-source limits), reading and writing them, and
// the control messages each connection's state allows.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "hostperf/probes/net/orchestration.h"
#include "responder_impl.h"

namespace hostperf::probes::net::responder {

namespace {

constexpr std::size_t kMaxBufferedControl = 4 * kMaxMessage;

}  // namespace

void ResponderImpl::AcceptAll(int listen_fd, Clock::time_point now) {
  while (true) {
    SocketAddress from;
    from.length = sizeof(from.storage);
    Fd fd(::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from.storage), &from.length, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    // Full: the oldest connection that has not proven itself makes room
    // (a flood of unauthenticated or replayed connections cannot lock
    // peers out), else the new one is closed at once (the connection-limit
    // test sees EOF).
    if (connections_.size() >= options_.max_connections && !EvictOldestUnauthenticated()) {
      Drop("connection_limit");
      continue;
    }
    if (!accepts_.Allow(from.Host(), now)) {
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

void ResponderImpl::Close(int fd) {
  EndSession(fd);
  if (plan_.active && plan_.coordinator_fd == fd) CancelPlan();
  connections_.erase(fd);
}

bool ResponderImpl::EvictOldestUnauthenticated() {
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

void ResponderImpl::ServeConnection(int fd, short revents, std::span<std::uint8_t> buffer, Clock::time_point now) {
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

void ResponderImpl::Flush(Connection& conn) {
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

const Secret& ResponderImpl::KeyOf(const Connection& conn) const {
  return conn.plan_keyed ? *options_.plan_secret : options_.secret;
}

void ResponderImpl::Send(Connection& conn, const Message& message, std::span<const std::uint8_t> binding) {
  const auto bytes = Encode(message, KeyOf(conn), binding);
  conn.out.insert(conn.out.end(), bytes.begin(), bytes.end());
}

void ResponderImpl::Send(Connection& conn, const Message& message) {
  Send(conn, message, MessageBinding(conn.binding, conn.revision, true, conn.sent++));
}

void ResponderImpl::OnTcpData(int fd, std::size_t bytes, Clock::time_point now) {
  const auto it = sessions_.find(fd);
  if (it == sessions_.end()) return;
  Session& session = it->second;
  if (!session.first_byte) session.first_byte = now;
  session.last_byte = now;
  session.bytes += bytes;
}

void ResponderImpl::OnEof(Connection& conn) {
  const auto it = sessions_.find(conn.fd.get());
  if (conn.state == ConnState::kTcpStreaming && it != sessions_.end()) {
    // The client half-closed: the stream was the request, the results the reply.
    Send(conn, ResultsMessage(it->second));
    EndSession(conn.fd.get());
  }
  conn.state = ConnState::kClosing;
}

// Handles whole control messages; false closes the connection silently.
bool ResponderImpl::ProcessControl(Connection& conn, Clock::time_point now) {
  std::size_t offset = 0;
  while (conn.state != ConnState::kTcpStreaming && conn.state != ConnState::kClosing) {
    const auto data = std::span(conn.in).subspan(offset);
    Decoded decoded = Decode(data, KeyOf(conn), MessageBinding(conn.binding, conn.revision, false, conn.received));
    if (!decoded.message && decoded.error == DecodeError::kBadHmac && conn.state == ConnState::kAwaitHello &&
        options_.plan_secret) {
      // A host of a plan opening its session here (bare hosts over SSH).
      decoded = Decode(data, *options_.plan_secret, MessageBinding(conn.binding, conn.revision, false, conn.received));
      conn.plan_keyed = decoded.message.has_value();
    }
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
      Fail(FailureReason(decoded.error));
      return false;
    }
    offset += decoded.consumed;
    if (!conn.binding.empty()) ++conn.received;
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

bool ResponderImpl::HandleControl(Connection& conn, const Message& message, Clock::time_point now) {
  bool handled = false;
  switch (conn.state) {
    case ConnState::kAwaitHello:
      handled = AnswerHello(conn, message);
      break;
    case ConnState::kReady:
      if (conn.plan_keyed && message.type != MessageType::kPlanSessionStart) break;  // good for nothing else
      handled =
          message.type == MessageType::kPlan ? TakePlanOffer(conn, message) : TakeSessionStart(conn, message, now);
      break;
    case ConnState::kAwaitPlanPeers:
      handled = TakePlanPeers(conn, message, now);
      break;
    case ConnState::kPlanAccepted:
      handled = TakePlanGo(conn, message, now);
      break;
    case ConnState::kUdpSession:
      handled = TakeSessionStop(conn, message);
      break;
    case ConnState::kTcpStreaming:
    case ConnState::kPlanRunning:
    case ConnState::kClosing:
      break;
  }
  if (handled) return true;
  Fail("malformed");  // a message that does not fit the connection's state
  return false;
}

bool ResponderImpl::AnswerHello(Connection& conn, const Message& message) {
  if (message.type != MessageType::kHello) return false;
  Count(message.type);
  Message reply;
  reply.session = message.session;
  reply.type = MessageType::kHelloAck;
  reply.hello.max_connections = options_.max_connections;
  reply.hello.nonce = RandomNonce();
  // A client of the previous release (revision 0) gets the reply it knows.
  reply.hello.revision = std::min(message.hello.revision, kProtocolRevision);
  if (reply.hello.revision >= 1 && options_.reply_mtu) reply.hello.mtu = options_.reply_mtu(conn.source);
  Send(conn, reply, message.hello.nonce);
  conn.binding = SessionBinding(message.hello.nonce, reply.hello.nonce);
  conn.revision = reply.hello.revision;
  conn.state = ConnState::kReady;
  return true;
}

bool ResponderImpl::TakePlanOffer(Connection& conn, const Message& message) {
  Count(message.type);
  conn.proven = true;  // signed over this connection's fresh nonce
  // Unsigned (or no key to check with): refused before its peers come.
  const bool signable = options_.orchestration_key && conn.revision >= kOrchestratedRevision && message.plan.signature;
  const auto refusal = signable ? RefusePlan(message.plan, {}) : PlanRefusal{MessageType::kDenied, "orchestrator"};
  if (refusal) {
    Refuse(conn, message, *refusal);
    conn.refused_peers_left = message.plan.peer_count;
    if (conn.refused_peers_left > 0) conn.state = ConnState::kAwaitPlanPeers;
    return true;
  }
  conn.refused_peers_left = 0;
  conn.offered_plan = message.plan;
  conn.offered_peers.clear();
  conn.state = ConnState::kAwaitPlanPeers;
  return true;
}

void ResponderImpl::Refuse(Connection& conn, const Message& message, const PlanRefusal& refusal) {
  if (refusal.reply == MessageType::kBusy) Drop("busy");
  if (!refusal.reason.empty() && options_.observer) options_.observer->OnPlanRefused(refusal.reason);
  Message reply;
  reply.session = message.session;
  reply.type = refusal.reply;
  Send(conn, reply);
}

bool ResponderImpl::TakeSessionStart(Connection& conn, const Message& message, Clock::time_point now) {
  if (message.type != MessageType::kSessionStart && message.type != MessageType::kPlanSessionStart) return false;
  Count(message.type);
  conn.proven = true;
  Message reply;
  reply.session = message.session;
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
  Send(conn, reply);
  return true;
}

bool ResponderImpl::TakePlanPeers(Connection& conn, const Message& message, Clock::time_point now) {
  if (conn.refused_peers_left > 0) {
    if (message.type != MessageType::kPlanPeers || message.peers.size() > conn.refused_peers_left) return false;
    Count(message.type);
    conn.refused_peers_left = static_cast<std::uint16_t>(conn.refused_peers_left - message.peers.size());
    if (conn.refused_peers_left == 0) conn.state = ConnState::kReady;
    return true;
  }
  if (message.type != MessageType::kPlanPeers ||
      conn.offered_peers.size() + message.peers.size() > conn.offered_plan.peer_count) {
    return false;
  }
  Count(message.type);
  conn.offered_peers.insert(conn.offered_peers.end(), message.peers.begin(), message.peers.end());
  if (conn.offered_peers.size() < conn.offered_plan.peer_count) return true;
  // The signature covers this connection, the plan and every peer: a forged,
  // replayed or edited plan stops here.
  const bool signed_here = VerifyPlanSignature(*options_.orchestration_key,
                                               PlanSigningBytes(conn.binding, conn.offered_plan, conn.offered_peers),
                                               *conn.offered_plan.signature);
  const auto refusal = signed_here ? RefusePlan(conn.offered_plan, conn.offered_peers)  // or another plan came first
                                   : PlanRefusal{MessageType::kDenied, "orchestrator"};
  if (refusal) {
    Refuse(conn, message, *refusal);
    conn.offered_peers.clear();
    conn.state = ConnState::kReady;
    return true;
  }
  StartPlan(conn, now);
  Message reply;
  reply.session = message.session;
  reply.type = MessageType::kAccept;
  reply.accept.token = plan_.plan.id;
  conn.state = ConnState::kPlanAccepted;
  Send(conn, reply);
  return true;
}

bool ResponderImpl::TakePlanGo(Connection& conn, const Message& message, Clock::time_point now) {
  if (message.type != MessageType::kPlanGo || !plan_.active || plan_.coordinator_fd != conn.fd.get()) return false;
  Count(message.type);
  GoPlan(now);
  conn.state = ConnState::kPlanRunning;
  return true;
}

bool ResponderImpl::TakeSessionStop(Connection& conn, const Message& message) {
  if (message.type != MessageType::kSessionStop) return false;
  Count(message.type);
  const auto it = sessions_.find(conn.fd.get());
  if (it != sessions_.end()) Send(conn, ResultsMessage(it->second));
  EndSession(conn.fd.get());
  conn.state = ConnState::kReady;
  return true;
}

}  // namespace hostperf::probes::net::responder
