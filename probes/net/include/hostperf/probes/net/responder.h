#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/probes/net/orchestration.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

// Told about every request answered and every packet dropped (for metrics).
class ResponderObserver {
 public:
  virtual ~ResponderObserver() = default;
  virtual void OnRequest(std::string_view type) = 0;
  // reason: bad_hmac, bad_version, malformed, rate_limited, source_blocked, busy,
  // connection_limit
  virtual void OnDrop(std::string_view reason) = 0;
  // A plan refused against this responder's own limits; reason: one of
  // kPlanRefusalReasons.
  virtual void OnPlanRefused(std::string_view /*reason*/) {}
  // Bytes this responder sent for a plan (its sending half), once it ended.
  virtual void OnPlanBytes(std::uint64_t /*bytes*/) {}
};

// Why a plan is refused (bounded: the label values of the refusal metric).
// orchestrator: not signed by the orchestration key this host trusts (or it
// trusts none); rate: 0 (unlimited) without an unlimited cap, or above the cap; duration:
// 0 or above the cap; sessions: no peer, more peers than the cap or than the
// connection limit allows; peer: a peer outside this host's peer set.
inline constexpr const char* kPlanRefusalReasons[] = {"orchestrator", "rate", "duration", "sessions", "peer"};

// The default caps of a plan (ResponderOptions, probes.net.plan_*): the top
// of vnetperf's default ladder (2048 MiB/s) for ten seconds.
inline constexpr std::uint64_t kDefaultPlanMaxRate = 2048ull << 20;
inline constexpr std::uint32_t kDefaultPlanMaxDurationMs = 10000;
inline constexpr std::uint32_t kDefaultPlanMaxSessions = 32;

struct ResponderOptions {
  // Empty: loopback only (127.0.0.1 and ::1 when available). "0.0.0.0", "::"
  // or one address otherwise.
  std::string bind_address;
  std::vector<std::uint16_t> ports{14159};  // 0: an ephemeral port (tests)
  Secret secret;
  std::uint32_t max_connections = 64;                  // TCP connections at once
  std::uint32_t packets_per_second_per_source = 1000;  // token bucket (burst the same)
  std::uint32_t max_session_ms = 60000;                // longer throughput sessions are DENIED
  // A plan (protocol revision 2) makes this host send: checked here against
  // its own limits, whoever sent it. Its total rate must be above 0 and at
  // most plan_max_rate, unless plan_unlimited_rate (then any rate, 0 too);
  // its duration at most plan_max_duration_ms; its peers at most
  // plan_max_sessions, each allowed by plan_peer_allowed.
  std::uint64_t plan_max_rate = kDefaultPlanMaxRate;  // bytes per second
  bool plan_unlimited_rate = false;
  std::uint32_t plan_max_duration_ms = kDefaultPlanMaxDurationMs;
  std::uint32_t plan_max_sessions = kDefaultPlanMaxSessions;
  // Whether a plan may make this host send to `peer` (a responder address);
  // called on the serving thread: keep it cheap. Null: any peer (hostperf-peer,
  // whose plans come only from the CLI that started it with a one-time secret).
  std::function<bool(const SocketAddress& peer)> plan_peer_allowed;
  // The coordinator's key that plans must be signed with (protocol.h,
  // revision 4); none: every plan is refused ("orchestrator"). A plan over a
  // connection of revision 2 or 3 (an older coordinator) cannot be signed
  // and is refused too when a key is set.
  std::optional<OrchestrationPublicKey> orchestration_key;
  // The secret of plan sessions between hosts; none: `secret`. Bare hosts
  // over SSH each have a `secret` of their own, so the sessions their plans
  // open to each other use this run-wide one instead, which is good for
  // nothing else: a TCP connection whose hello it signs may only start a
  // session of the plan this host was given (kPlanSessionStart), and the
  // sessions this host's own plans open are signed with it.
  std::optional<Secret> plan_secret;
  RealtimeClock realtime = RealtimeNs;
  ResponderObserver* observer = nullptr;  // may be null; must outlive the responder
  // The MTU of the interface replies to this client address (numeric) leave
  // by, sent in TCP hello replies of revision >= 1; 0 or unset: unknown.
  // Called on the serving thread, once per hello: keep it cheap.
  std::function<std::uint32_t(const std::string& client_address)> reply_mtu;
};

// The peer responder: answers hello and ping over UDP, hello and throughput
// sessions over TCP, on every configured port, from one poll-loop thread.
class Responder {
 public:
  virtual ~Responder() = default;
  // The bound port numbers (ephemeral ones resolved), in configuration order.
  virtual std::vector<std::uint16_t> Ports() const = 0;
};

// Binds and starts serving; "bind_failed" or "bad_config" when a socket cannot be bound.
Result<std::unique_ptr<Responder>> StartResponder(ResponderOptions options);

}  // namespace hostperf::probes::net
