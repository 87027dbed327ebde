#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hostperf::probes::net {

// hostperf peer protocol, version 2. Every message is
//   header (16 bytes, big-endian) | payload | HMAC-SHA256(secret, header|payload|binding) (32 bytes)
// header: magic "HPNT", version, type, reserved (2), session id (4), payload length (2), reserved (2).
// UDP carries one message per datagram; TCP carries messages back to back
// (the header gives the length). The only unauthenticated bytes are the bulk
// data of an accepted throughput session, which carry that session's token.
//
// Freshness (version 2): a TCP hello carries a random client nonce; the hello
// reply carries a random responder nonce and is signed over the client's
// nonce; every later message on that connection, both ways, is signed over
// both nonces (the binding, which is not sent). A captured hello replayed
// gets a new responder nonce, so the captured session start that follows
// fails its HMAC. UDP pings are stateless echoes (no binding): a replayed
// ping only earns a pong no larger than itself, within the per-source limit.
// Version 1 (no nonces) is refused; a version-1 hello signed with the right
// secret is answered in version-1 format with version 2 in its payload, so
// that an old client reports "peer speaks protocol version 2".
//
// Revisions (backward-compatible extensions within version 2), negotiated in
// the hello: the byte after the version, reserved (sent as 0, ignored) before
// revision 1, is the highest revision the sender speaks; the responder
// answers with min(client's, its own). Revision 1: a TCP hello reply of
// revision >= 1 carries 4 more payload bytes, the MTU of the interface the
// responder's replies to this client leave by (0: unknown), covered by the
// HMAC like the rest. A revision-0 peer (the previous release) neither sends
// nor expects them, so its MTU reads as unknown, never as an error. A later
// revision may append more bytes; a reader takes what it knows. UDP hello
// replies stay at revision 0 (a reply is never larger than its request).
//
// Revision 2: throughput among all hosts at once (a full run's all-to-all
// test). A coordinator sends each tested host's responder, on a control
// connection, kPlan (test, duration, the host's total sending rate, the
// number of peers) and the peers' addresses in kPlanPeers messages; the
// responder answers kAccept, kBusy (a session or another plan is active) or
// kDenied (beyond its limits). Once every host accepted, kPlanGo starts them:
// each host opens one session per peer with kPlanSessionStart (a session
// start naming the plan), which that peer accepts beside the others of the
// same plan, and sends at rate / peers to each. When its sends are done and
// its peers' sessions ended (or a grace period passed), the responder sends
// the coordinator kPlanReport. The coordinator closing the connection
// cancels the plan. Only revision-2 peers are sent these messages: an older
// responder would treat them as malformed.
//
// Revision 3: message order. On a TCP connection whose hello negotiated
// revision >= 3, every message after the hello is signed over the binding
// followed by its direction (0: to the responder, 1: from it) and its index
// among the messages of that direction (u64, from 0): OrderedBinding. A
// message replayed within the same connection (a session start after its
// session ended) or reflected back fails its HMAC.
//
// Revision 4: orchestrated plans. The fleet secret lets a host measure its
// peers, not direct them: a kPlan sent on a connection of revision >= 4
// carries 64 more bytes, an Ed25519 signature by the coordinator's
// orchestration key over PlanSigningBytes (orchestration.h: this
// connection's nonces, the plan's fields and all its peers). A responder of
// revision >= 4 takes a plan only when it is signed by the orchestration
// public key its own configuration names (and none without one); a
// signature made for another connection, plan or peer list fails. A
// responder of revision 2 or 3 still takes plans signed by the secret alone.
inline constexpr std::uint32_t kMagic = 0x48504e54;  // "HPNT"
inline constexpr std::uint8_t kProtocolVersion = 2;
inline constexpr std::uint8_t kProtocolRevision = 4;
inline constexpr std::uint8_t kPlanRevision = 2;          // the revision that knows plans
inline constexpr std::uint8_t kOrderedRevision = 3;       // the revision that signs message order
inline constexpr std::uint8_t kOrchestratedRevision = 4;  // the revision that needs signed plans
inline constexpr std::size_t kHelloAckExtensionSize = 4;  // revision 1: the MTU (u32)
inline constexpr std::uint8_t kLegacyProtocolVersion = 1;
inline constexpr std::size_t kNonceSize = 16;
using Nonce = std::array<std::uint8_t, kNonceSize>;
inline constexpr std::size_t kHeaderSize = 16;
inline constexpr std::size_t kMacSize = 32;
inline constexpr std::size_t kMaxPayload = 1024;
inline constexpr std::size_t kMaxMessage = kHeaderSize + kMaxPayload + kMacSize;

enum class MessageType : std::uint8_t {
  kHello = 1,         // client -> responder: version check; payload: client version, client nonce
  kHelloAck = 2,      // responder -> client: payload: responder version, max connections, responder nonce
  kPing = 3,          // UDP: seq, t1 and two zeroed slots (so that a pong is never larger)
  kPong = 4,          // UDP: seq, t1, t2 (responder receive), t3 (responder send)
  kSessionStart = 5,  // TCP: test (tcp|udp), duration, rate; answered by kAccept, kBusy or kDenied
  kAccept = 6,        // TCP: session token (UDP data carries it)
  kBusy = 7,          // another throughput session is active
  kDenied = 8,        // request not allowed (bad parameters)
  kSessionStop = 9,   // TCP, UDP sessions only: the sender is done
  kResults = 10,      // TCP: bytes and packets received, duration, loss, jitter
  // Revision 2 (see above).
  kPlan = 11,              // coordinator -> responder: plan id, test, duration, rate, peer count
  kPlanPeers = 12,         // coordinator -> responder: some of the plan's peer addresses
  kPlanGo = 13,            // coordinator -> responder: start sending
  kPlanSessionStart = 14,  // host -> peer: kSessionStart of a plan (answered like one)
  kPlanReport = 15,        // responder -> coordinator: what this host sent and received
};
std::string_view ToString(MessageType type);

enum class ThroughputTest : std::uint8_t { kTcp = 1, kUdp = 2 };

struct Hello {
  std::uint8_t version = kProtocolVersion;
  std::uint8_t revision = kProtocolRevision;  // see "Revisions" above; 0 from a peer of the previous release
  std::uint32_t max_connections = 0;          // in kHelloAck
  Nonce nonce{};                              // kHello: the client's; kHelloAck: the responder's
  std::uint32_t mtu = 0;                      // kHelloAck of revision >= 1: the responder's MTU toward us; 0: unknown
};
struct Ping {
  std::uint32_t seq = 0;
  std::int64_t t1_ns = 0;  // client send, realtime
  std::int64_t t2_ns = 0;  // responder receive, realtime
  std::int64_t t3_ns = 0;  // responder send, realtime
};
struct SessionStart {
  ThroughputTest test = ThroughputTest::kTcp;
  std::uint32_t duration_ms = 0;
  std::uint64_t rate_bytes_per_second = 0;  // 0: unlimited
  std::uint64_t plan_id = 0;                // kPlanSessionStart only
};
// Revision 4: an Ed25519 signature of a plan (orchestration.h).
inline constexpr std::size_t kPlanSignatureSize = 64;
using PlanSignature = std::array<std::uint8_t, kPlanSignatureSize>;
struct Plan {
  std::uint64_t id = 0;  // random, non-zero
  ThroughputTest test = ThroughputTest::kTcp;
  std::uint16_t peer_count = 0;  // how many addresses the kPlanPeers messages carry
  std::uint32_t duration_ms = 0;
  std::uint64_t rate_bytes_per_second = 0;                // the host's total, spread over its peers; 0: unlimited
  std::uint32_t datagram_size = 0;                        // UDP
  std::optional<PlanSignature> signature = std::nullopt;  // revision >= 4: the orchestrator's (sent after the fields)
};
// A peer's address as a plan carries it: family (4 or 6), 16 address bytes
// (IPv4 in the first 4), port.
inline constexpr std::size_t kPlanPeerSize = 19;
inline constexpr std::size_t kPlanPeersPerMessage = (kMaxPayload - 4) / kPlanPeerSize;
struct PlanPeer {
  std::uint8_t family = 4;
  std::array<std::uint8_t, 16> address{};
  std::uint16_t port = 0;
  bool operator==(const PlanPeer&) const = default;
};
struct PlanReport {
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::int64_t sent_ns = 0;      // from go to the last send's end
  std::int64_t received_ns = 0;  // first to last byte received from any peer
  std::uint64_t packets_sent = 0;
  std::uint64_t packets_received = 0;
  std::uint64_t packets_lost = 0;  // UDP: gaps in the peers' sequences
  std::int64_t jitter_ns = 0;      // UDP: the mean of the peers' RFC 3550 jitter
  std::uint16_t sessions_ok = 0;   // sends that ran (a session accepted by the peer)
  std::uint16_t sessions_failed = 0;
  std::uint16_t peers_received = 0;  // peers whose sessions to this host ended
};
struct Accept {
  std::uint64_t token = 0;
};
struct Results {
  std::uint64_t bytes = 0;
  std::uint64_t packets = 0;       // UDP: datagrams received
  std::uint64_t packets_lost = 0;  // UDP: gaps in the sequence
  std::int64_t duration_ns = 0;    // first to last byte seen by the responder
  std::int64_t jitter_ns = 0;      // UDP: RFC 3550 interarrival jitter
};

struct Message {
  MessageType type = MessageType::kHello;
  std::uint32_t session = 0;
  Hello hello;
  Ping ping;
  SessionStart start;
  Accept accept;
  Results results;
  Plan plan;
  std::vector<PlanPeer> peers;  // kPlanPeers: at most kPlanPeersPerMessage
  PlanReport report;
};

enum class DecodeError { kTruncated, kBadMagic, kBadVersion, kBadType, kBadLength, kBadHmac, kMalformed };
std::string_view ToString(DecodeError error);

struct Decoded {
  std::optional<Message> message;
  DecodeError error = DecodeError::kMalformed;  // when !message
  std::size_t consumed = 0;                     // bytes of one whole message (also on kBadHmac/kMalformed)
  std::uint8_t version = 0;                     // the header's version byte (set from kBadVersion on)
};

using Secret = std::vector<std::uint8_t>;

// `binding` is signed but not sent: empty for hello and UDP messages, the
// client nonce for the hello reply, SessionBinding() for every later message
// of a TCP connection.
std::vector<std::uint8_t> Encode(const Message& message, const Secret& secret,
                                 std::span<const std::uint8_t> binding = {});
// Decodes one message at the start of `data`. Never reads past `data`.
// kTruncated means "need more bytes" on a stream.
Decoded Decode(std::span<const std::uint8_t> data, const Secret& secret, std::span<const std::uint8_t> binding = {});
// Payload length of a message type at revision 0 (fixed per type, except a
// hello reply of revision >= 1, which is longer, and kPlanPeers, whose
// length follows its count: PayloadSizeOf).
std::optional<std::size_t> PayloadSize(MessageType type);
// The payload length Encode writes for this message.
std::size_t PayloadSizeOf(const Message& message);

// The binding of a TCP connection's messages after the hello: both nonces.
std::vector<std::uint8_t> SessionBinding(const Nonce& client, const Nonce& responder);
// Revision >= 3: the binding of one message, `binding` | direction | index.
std::vector<std::uint8_t> OrderedBinding(std::span<const std::uint8_t> binding, bool from_responder,
                                         std::uint64_t index);
// What a message after the hello is signed over: OrderedBinding at
// `revision` >= kOrderedRevision, else the binding alone.
std::vector<std::uint8_t> MessageBinding(std::span<const std::uint8_t> binding, std::uint8_t revision,
                                         bool from_responder, std::uint64_t index);
Nonce RandomNonce();

// A version-1 hello signed with `secret` (what a client of the previous
// release sends first); and the version-1 hello reply that tells it this
// responder speaks kProtocolVersion.
bool IsLegacyHello(std::span<const std::uint8_t> data, const Secret& secret);
std::vector<std::uint8_t> EncodeLegacyVersionReply(const Secret& secret, std::uint32_t session);

// Bulk UDP throughput datagram: magic "HPUD", token, seq, send time, filler.
inline constexpr std::uint32_t kUdpDataMagic = 0x48505544;
inline constexpr std::size_t kUdpDataHeader = 28;
struct UdpData {
  std::uint64_t token = 0;
  std::uint64_t seq = 0;
  std::int64_t sent_ns = 0;
};
void EncodeUdpData(const UdpData& data, std::span<std::uint8_t> datagram);  // datagram.size() >= kUdpDataHeader
std::optional<UdpData> DecodeUdpData(std::span<const std::uint8_t> datagram);

Secret RandomSecret();

}  // namespace hostperf::probes::net
