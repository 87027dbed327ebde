#pragma once

// The peer responder's insides, one class over several files:
//   responder.cc           binding, the poll loop, expiry, StartResponder
//   responder_udp.cc       UDP: the ping and hello echo, the bulk datagrams
//   responder_tcp.cc       TCP: accepting, reading, writing, the control state machine
//   responder_sessions.cc  throughput sessions and the plans of the all-hosts test
// and source_limits.h for the per-source accounting. Internal to the net probe.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "hostperf/probes/net/plan.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/responder.h"
#include "hostperf/probes/net/sockets.h"
#include "source_limits.h"

namespace hostperf::probes::net::responder {

using ResponderClock = std::chrono::steady_clock;

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
  ResponderClock::time_point accepted;
  ResponderClock::time_point last_message;  // the last whole valid message
  bool proven = false;                      // a message signed over this connection's nonces was received
  bool plan_keyed = false;                  // its hello was signed with options.plan_secret: plan sessions only
  std::vector<std::uint8_t> binding;        // after the hello: client nonce | responder nonce
  std::uint8_t revision = 0;                // negotiated in the hello
  std::uint64_t sent = 0;                   // messages sent after the hello (revision 3: signed)
  std::uint64_t received = 0;               // messages received after the hello
  Plan offered_plan;                        // kAwaitPlanPeers: the plan whose peers are arriving
  std::vector<PlanPeer> offered_peers;
  // kAwaitPlanPeers after a plan refused at once: its peers still to come,
  // read and dropped (so that the refusal, already sent, is not lost to a
  // close), then back to kReady.
  std::uint16_t refused_peers_left = 0;
};

// A throughput session: the one pair session, or one of a plan's sessions.
struct Session {
  std::uint64_t plan_id = 0;  // 0: a pair session
  ThroughputTest test = ThroughputTest::kTcp;
  std::uint64_t token = 0;
  std::uint32_t session_id = 0;
  ResponderClock::time_point started;
  ResponderClock::time_point expires;
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;
  std::uint64_t max_seq = 0;
  std::optional<ResponderClock::time_point> first_byte;
  ResponderClock::time_point last_byte;
  // RFC 3550 jitter state (ns).
  std::optional<std::int64_t> last_transit;
  double jitter_ns = 0;
};

// Why a plan is not taken: the reply (kBusy or kDenied) and, for kDenied,
// the refusal reason (kPlanRefusalReasons).
struct PlanRefusal {
  MessageType reply = MessageType::kDenied;
  std::string_view reason;
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
  ResponderClock::time_point deadline;  // for kPlanGo, then for the report
  std::uint16_t sessions_started = 0;
  // What the peers' sessions of this plan delivered, once they ended.
  PlanReport received;
  double jitter_sum_ns = 0;  // over the UDP sessions that delivered datagrams
  std::uint32_t jitter_sessions = 0;
  std::optional<ResponderClock::time_point> first_byte;
  ResponderClock::time_point last_byte;
  std::unique_ptr<PlanSender> sender;
};

class ResponderImpl final : public Responder {
 public:
  using Clock = ResponderClock;

  explicit ResponderImpl(ResponderOptions options);
  ~ResponderImpl() override;

  std::vector<std::uint16_t> Ports() const override { return ports_; }

  // Binds every port (TCP and UDP) and starts the serving thread.
  Result<void> Bind();

 private:
  // --- responder.cc: binding, the loop, expiry ---
  Result<std::uint16_t> BindPair(const SocketAddress& address, std::uint16_t port);
  Result<std::uint16_t> BindPairOnce(SocketAddress address, std::uint16_t port);
  void Loop();
  void Expire(Clock::time_point now);
  void Drop(std::string_view reason);
  void Count(MessageType type);
  // A TCP message failed authentication or parsing (its connection is closed).
  void Fail(std::string_view reason);

  // --- responder_udp.cc ---
  void ServeUdp(int fd, std::span<std::uint8_t> buffer);
  void OnUdpData(const UdpData& data, std::size_t size, Clock::time_point now);

  // --- responder_tcp.cc: connections and their control messages ---
  void AcceptAll(int listen_fd, Clock::time_point now);
  void Close(int fd);
  bool EvictOldestUnauthenticated();
  void ServeConnection(int fd, short revents, std::span<std::uint8_t> buffer, Clock::time_point now);
  void Flush(Connection& conn);
  // The secret `conn`'s messages are signed with (plan_keyed: the plan secret).
  const Secret& KeyOf(const Connection& conn) const;
  void Send(Connection& conn, const Message& message, std::span<const std::uint8_t> binding);
  // A message after the hello: signed over the connection's binding and,
  // at revision 3, its place in the connection's order.
  void Send(Connection& conn, const Message& message);
  void OnTcpData(int fd, std::size_t bytes, Clock::time_point now);
  void OnEof(Connection& conn);
  bool ProcessControl(Connection& conn, Clock::time_point now);
  // One control message; false when it does not fit the connection's state
  // (counted as malformed), which closes it.
  bool HandleControl(Connection& conn, const Message& message, Clock::time_point now);
  // The handlers of HandleControl, one per state; false: the message does not fit.
  bool AnswerHello(Connection& conn, const Message& message);
  bool TakePlanOffer(Connection& conn, const Message& message);
  bool TakeSessionStart(Connection& conn, const Message& message, Clock::time_point now);
  bool TakePlanPeers(Connection& conn, const Message& message, Clock::time_point now);
  bool TakePlanGo(Connection& conn, const Message& message, Clock::time_point now);
  bool TakeSessionStop(Connection& conn, const Message& message);

  // --- responder_sessions.cc: sessions and plans ---
  bool PairSessionActive() const;
  Message StartSession(Connection& conn, const Message& request, Clock::time_point now);
  void EndSession(int fd);
  void AddReceived(const Session& session, bool ended);
  std::optional<PlanRefusal> RefusePlan(const Plan& plan, std::span<const PlanPeer> peers) const;
  // Answers a refused plan on `conn` (and counts the refusal).
  void Refuse(Connection& conn, const Message& message, const PlanRefusal& refusal);
  void StartPlan(Connection& conn, Clock::time_point now);
  void GoPlan(Clock::time_point now);
  void RetireSender();
  void CancelPlan();
  void MaybeReport(Clock::time_point now);

  ResponderOptions options_;
  std::vector<Listener> listeners_;
  std::vector<std::uint16_t> ports_;
  std::map<int, Connection> connections_;
  // Per source address, each its own bucket (probes.net.rate_limit a
  // second): authenticated UDP requests (the replies), TCP connections
  // accepted, and UDP datagrams that failed authentication or parsing. Junk
  // spends only the junk bucket, so it never costs a source's authenticated
  // pings their replies; no source is ever blocked.
  SourceRateLimiter requests_;
  SourceRateLimiter accepts_;
  SourceRateLimiter junk_;
  std::map<int, Session> sessions_;                    // by the owning connection
  std::unordered_map<std::uint64_t, int> udp_tokens_;  // UDP session token -> its connection
  std::mt19937_64 rng_;
  Fd wake_;
  PlanState plan_;  // after wake_: its sender signals it when done
  std::vector<std::unique_ptr<PlanSender>> retired_senders_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The drop reason of a message that failed to decode.
std::string_view FailureReason(DecodeError error);
// What a session received, as its kResults message.
Message ResultsMessage(const Session& session);

}  // namespace hostperf::probes::net::responder
