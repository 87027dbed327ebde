#pragma once

// The client side of a control connection, shared by the pair sessions
// (client.cc) and the all-hosts plans (plan.cc). Internal to the net probe.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/protocol.h"
#include "hostperf/probes/net/sockets.h"

namespace hostperf::probes::net {

std::uint32_t RandomSessionId();

bool SendMessage(int fd, const Message& message, const Secret& secret, std::chrono::steady_clock::time_point deadline,
                 std::span<const std::uint8_t> binding = {});

// One authenticated message from a stream; nullopt on EOF, timeout or a bad
// message. `peer_version` gets the header's version when it is not ours.
std::optional<Message> ReceiveMessage(int fd, const Secret& secret, std::chrono::steady_clock::time_point deadline,
                                      std::span<const std::uint8_t> binding = {},
                                      std::optional<std::uint8_t>* peer_version = nullptr);

// A control connection that has said hello, and what the peer said in its reply.
struct Control {
  Fd fd;
  std::uint32_t peer_max_connections = 0;
  std::uint8_t peer_revision = 0;
  std::optional<std::uint32_t> peer_mtu;  // revision >= 1 and known
  std::vector<std::uint8_t> binding;      // both nonces: signs every later message
  std::uint64_t sent = 0;                 // messages sent after the hello
  std::uint64_t received = 0;             // messages received after the hello
  // What the next message sent (received) is signed over (protocol.h, revision 3).
  std::vector<std::uint8_t> NextSent() { return MessageBinding(binding, peer_revision, false, sent++); }
  std::vector<std::uint8_t> NextReceived() { return MessageBinding(binding, peer_revision, true, received++); }
};

// Connects and says hello ("protocol_error" when the peer does not answer it).
Result<Control> OpenControl(const SocketAddress& peer, const Secret& secret,
                            std::chrono::steady_clock::time_point deadline);

}  // namespace hostperf::probes::net
