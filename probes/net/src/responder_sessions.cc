// The peer responder's throughput sessions (a pair session, or one of a
// plan's) and the plans of the all-hosts test (protocol revision 2): what
// they received, and the report to the coordinator.
#include <unistd.h>

#include <algorithm>

#include "responder_impl.h"

namespace hostperf::probes::net::responder {

namespace {

// A session whose client vanished is ended this long after its planned end.
constexpr auto kSessionGrace = std::chrono::seconds(10);
// A plan accepted but never started (the coordinator went quiet) is dropped
// this long after it was accepted.
constexpr auto kPlanGoTimeout = std::chrono::seconds(10);
// A started plan reports at the latest this long after its planned end
// (sessions' connects and result exchanges included), whatever its peers do.
// A sender's sessions end by then: a connect and hello (3 s), the
// duration, the results (2 s, plan.cc).
constexpr auto kPlanReportGrace = std::chrono::seconds(6);

std::uint64_t LostPackets(const Session& session) {
  const std::uint64_t expected = session.packets == 0 ? 0 : session.max_seq + 1;
  return expected > session.packets ? expected - session.packets : 0;
}

}  // namespace

Message ResultsMessage(const Session& session) {
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

bool ResponderImpl::PairSessionActive() const {
  return std::any_of(sessions_.begin(), sessions_.end(), [](const auto& entry) { return entry.second.plan_id == 0; });
}

// Starts the session owned by `conn` (a pair session when plan_id is 0).
Message ResponderImpl::StartSession(Connection& conn, const Message& request, Clock::time_point now) {
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
void ResponderImpl::EndSession(int fd) {
  const auto it = sessions_.find(fd);
  if (it == sessions_.end()) return;
  const Session& session = it->second;
  if (plan_.active && session.plan_id == plan_.plan.id) AddReceived(session, /*ended=*/true);
  udp_tokens_.erase(session.token);
  sessions_.erase(it);
}

void ResponderImpl::AddReceived(const Session& session, bool ended) {
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

// A plan offered on `conn` (kPlan): why it cannot be taken, or nullopt.
// Its own limits are checked first (a plan beyond them is refused whether
// or not this host is busy), its peers once they all arrived.
std::optional<PlanRefusal> ResponderImpl::RefusePlan(const Plan& plan, std::span<const PlanPeer> peers) const {
  if (plan.id == 0) return PlanRefusal{MessageType::kDenied, "sessions"};
  if (plan.rate_bytes_per_second == 0
          ? !options_.plan_unlimited_rate
          : !options_.plan_unlimited_rate && plan.rate_bytes_per_second > options_.plan_max_rate) {
    return PlanRefusal{MessageType::kDenied, "rate"};
  }
  if (plan.duration_ms == 0 || plan.duration_ms > options_.plan_max_duration_ms ||
      plan.duration_ms > options_.max_session_ms) {
    return PlanRefusal{MessageType::kDenied, "duration"};
  }
  // Every peer holds a connection here, the coordinator one more.
  if (plan.peer_count == 0 || plan.peer_count > options_.plan_max_sessions ||
      plan.peer_count >= options_.max_connections) {
    return PlanRefusal{MessageType::kDenied, "sessions"};
  }
  if (options_.plan_peer_allowed) {
    for (const PlanPeer& peer : peers) {
      if (!options_.plan_peer_allowed(FromPlanPeer(peer))) return PlanRefusal{MessageType::kDenied, "peer"};
    }
  }
  if (plan_.active || PairSessionActive()) return PlanRefusal{MessageType::kBusy, ""};
  return std::nullopt;
}

void ResponderImpl::StartPlan(Connection& conn, Clock::time_point now) {
  plan_ = PlanState{};
  plan_.active = true;
  plan_.coordinator_fd = conn.fd.get();
  plan_.plan = conn.offered_plan;
  plan_.peers = std::move(conn.offered_peers);
  plan_.deadline = now + kPlanGoTimeout;
  conn.offered_peers.clear();
}

void ResponderImpl::GoPlan(Clock::time_point now) {
  plan_.going = true;
  plan_.deadline = now + std::chrono::milliseconds(plan_.plan.duration_ms) + kPlanReportGrace;
  const int wake = wake_.get();
  plan_.sender = std::make_unique<PlanSender>(plan_.plan, plan_.peers, options_.plan_secret.value_or(options_.secret),
                                              options_.realtime, [wake] {
                                                const std::uint64_t one = 1;
                                                (void)!::write(wake, &one, sizeof(one));
                                              });
}

// The sender stops at its next step; it is joined once it has.
void ResponderImpl::RetireSender() {
  if (!plan_.sender) return;
  plan_.sender->Stop();
  retired_senders_.push_back(std::move(plan_.sender));
}

void ResponderImpl::CancelPlan() {
  RetireSender();
  plan_ = PlanState{};
}

// The report goes when this host's sends are done and every peer's
// session here has ended, or at the deadline with what there is.
void ResponderImpl::MaybeReport(Clock::time_point now) {
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
    if (options_.observer) options_.observer->OnPlanBytes(own.bytes_sent);
  } else {
    m.report.sessions_failed = static_cast<std::uint16_t>(sessions);  // still sending at the deadline
  }
  m.report.received_ns = plan_.first_byte ? std::chrono::nanoseconds(plan_.last_byte - *plan_.first_byte).count() : 0;
  if (plan_.jitter_sessions > 0) {
    m.report.jitter_ns = static_cast<std::int64_t>(plan_.jitter_sum_ns / plan_.jitter_sessions);
  }
  const auto coordinator = connections_.find(plan_.coordinator_fd);
  if (coordinator != connections_.end()) {
    Send(coordinator->second, m);
    coordinator->second.state = ConnState::kReady;  // it may offer the next plan
    coordinator->second.last_message = now;
    Flush(coordinator->second);
  }
  Count(MessageType::kPlanReport);
  CancelPlan();
}

}  // namespace hostperf::probes::net::responder
