#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

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
};

struct ResponderOptions {
  // Empty: loopback only (127.0.0.1 and ::1 when available). "0.0.0.0", "::"
  // or one address otherwise.
  std::string bind_address;
  std::vector<std::uint16_t> ports{14159};  // 0: an ephemeral port (tests)
  Secret secret;
  std::uint32_t max_connections = 64;                  // TCP connections at once
  std::uint32_t packets_per_second_per_source = 1000;  // token bucket (burst the same)
  std::uint32_t max_session_ms = 60000;                // longer throughput sessions are DENIED
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
