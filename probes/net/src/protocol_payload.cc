// The peer protocol's payloads: each message type's fields in order, their
// sizes and names (the framing around them is protocol.cc's).
#include <cstddef>

#include "wire.h"

namespace hostperf::probes::net {

namespace wire {

namespace {

void WriteHello(const Message& m, Writer& w) {
  w.U8(m.hello.version);
  w.U8(m.hello.revision);
  w.U16(0);
  w.U32(m.hello.max_connections);
  for (const std::uint8_t byte : m.hello.nonce) w.U8(byte);
  if (m.type == MessageType::kHelloAck && m.hello.revision >= 1) w.U32(m.hello.mtu);
}

void WriteSessionStart(const Message& m, Writer& w) {
  w.U8(static_cast<std::uint8_t>(m.start.test));
  w.U8(0);
  w.U16(0);
  w.U32(m.start.duration_ms);
  w.U64(m.start.rate_bytes_per_second);
  if (m.type == MessageType::kPlanSessionStart) w.U64(m.start.plan_id);
}

void WritePlanReport(const PlanReport& report, Writer& w) {
  w.U64(report.bytes_sent);
  w.U64(report.bytes_received);
  w.I64(report.sent_ns);
  w.I64(report.received_ns);
  w.U64(report.packets_sent);
  w.U64(report.packets_received);
  w.U64(report.packets_lost);
  w.I64(report.jitter_ns);
  w.U16(report.sessions_ok);
  w.U16(report.sessions_failed);
  w.U16(report.peers_received);
  w.U16(0);
}

void WriteResults(const Results& results, Writer& w) {
  w.U64(results.bytes);
  w.U64(results.packets);
  w.U64(results.packets_lost);
  w.I64(results.duration_ns);
  w.I64(results.jitter_ns);
}

bool ReadTest(Reader& r, ThroughputTest* test) {
  const std::uint8_t value = r.U8();
  if (value != static_cast<std::uint8_t>(ThroughputTest::kTcp) &&
      value != static_cast<std::uint8_t>(ThroughputTest::kUdp)) {
    return false;
  }
  *test = static_cast<ThroughputTest>(value);
  return true;
}

bool ReadHello(Reader& r, std::size_t length, Message* m) {
  m->hello.version = r.U8();
  m->hello.revision = r.U8();
  r.U16();
  m->hello.max_connections = r.U32();
  for (std::uint8_t& byte : m->hello.nonce) byte = r.U8();
  if (m->type == MessageType::kHello) return true;
  // The extension is there exactly when the revision says so.
  const bool extended = length > *PayloadSize(MessageType::kHelloAck);
  if (extended != (m->hello.revision >= 1)) return false;
  if (extended) m->hello.mtu = r.U32();  // later revisions' bytes follow: not ours to read
  return true;
}

bool ReadSessionStart(Reader& r, Message* m) {
  if (!ReadTest(r, &m->start.test)) return false;
  r.U8();
  r.U16();
  m->start.duration_ms = r.U32();
  m->start.rate_bytes_per_second = r.U64();
  if (m->type == MessageType::kPlanSessionStart) m->start.plan_id = r.U64();
  return true;
}

bool ReadPlan(Reader& r, Plan* plan) {
  plan->id = r.U64();
  if (!ReadTest(r, &plan->test)) return false;
  r.U8();
  plan->peer_count = r.U16();
  plan->duration_ms = r.U32();
  plan->rate_bytes_per_second = r.U64();
  plan->datagram_size = r.U32();
  r.U32();
  return true;
}

bool ReadPlanPeers(Reader& r, std::size_t length, std::vector<PlanPeer>* peers) {
  const std::uint16_t count = r.U16();
  r.U16();
  if (count == 0 || count > kPlanPeersPerMessage || length != 4 + count * kPlanPeerSize) return false;
  peers->resize(count);
  for (PlanPeer& peer : *peers) {
    peer.family = r.U8();
    for (std::uint8_t& byte : peer.address) byte = r.U8();
    peer.port = r.U16();
    if ((peer.family != 4 && peer.family != 6) || peer.port == 0) return false;
  }
  return true;
}

void ReadPlanReport(Reader& r, PlanReport* report) {
  report->bytes_sent = r.U64();
  report->bytes_received = r.U64();
  report->sent_ns = r.I64();
  report->received_ns = r.I64();
  report->packets_sent = r.U64();
  report->packets_received = r.U64();
  report->packets_lost = r.U64();
  report->jitter_ns = r.I64();
  report->sessions_ok = r.U16();
  report->sessions_failed = r.U16();
  report->peers_received = r.U16();
  r.U16();
}

void ReadResults(Reader& r, Results* results) {
  results->bytes = r.U64();
  results->packets = r.U64();
  results->packets_lost = r.U64();
  results->duration_ns = r.I64();
  results->jitter_ns = r.I64();
}

}  // namespace

void WritePlan(const Plan& plan, Writer& w) {
  w.U64(plan.id);
  w.U8(static_cast<std::uint8_t>(plan.test));
  w.U8(0);
  w.U16(plan.peer_count);
  w.U32(plan.duration_ms);
  w.U64(plan.rate_bytes_per_second);
  w.U32(plan.datagram_size);
  w.U32(0);
}

void WritePlanPeers(std::span<const PlanPeer> peers, Writer& w) {
  w.U16(static_cast<std::uint16_t>(peers.size()));
  w.U16(0);
  for (const PlanPeer& peer : peers) {
    w.U8(peer.family);
    for (const std::uint8_t byte : peer.address) w.U8(byte);
    w.U16(peer.port);
  }
}

void WritePayload(const Message& m, Writer& w) {
  switch (m.type) {
    case MessageType::kHello:
    case MessageType::kHelloAck:
      WriteHello(m, w);
      break;
    case MessageType::kPing:
    case MessageType::kPong:
      w.U32(m.ping.seq);
      w.U32(0);
      w.I64(m.ping.t1_ns);
      w.I64(m.type == MessageType::kPing ? 0 : m.ping.t2_ns);
      w.I64(m.type == MessageType::kPing ? 0 : m.ping.t3_ns);
      break;
    case MessageType::kSessionStart:
    case MessageType::kPlanSessionStart:
      WriteSessionStart(m, w);
      break;
    case MessageType::kPlan:
      WritePlan(m.plan, w);
      if (m.plan.signature) {
        for (const std::uint8_t byte : *m.plan.signature) w.U8(byte);
      }
      break;
    case MessageType::kPlanPeers:
      WritePlanPeers(m.peers, w);
      break;
    case MessageType::kPlanReport:
      WritePlanReport(m.report, w);
      break;
    case MessageType::kAccept:
      w.U64(m.accept.token);
      break;
    case MessageType::kResults:
      WriteResults(m.results, w);
      break;
    case MessageType::kPlanGo:
    case MessageType::kBusy:
    case MessageType::kDenied:
    case MessageType::kSessionStop:
      break;
  }
}

bool ReadPayload(Reader& r, std::size_t length, Message* m) {
  switch (m->type) {
    case MessageType::kHello:
    case MessageType::kHelloAck:
      if (!ReadHello(r, length, m)) return false;
      break;
    case MessageType::kPing:
    case MessageType::kPong:
      m->ping.seq = r.U32();
      r.U32();
      m->ping.t1_ns = r.I64();
      m->ping.t2_ns = r.I64();
      m->ping.t3_ns = r.I64();
      break;
    case MessageType::kSessionStart:
    case MessageType::kPlanSessionStart:
      if (!ReadSessionStart(r, m)) return false;
      break;
    case MessageType::kPlan:
      if (!ReadPlan(r, &m->plan)) return false;
      if (length == *PayloadSize(MessageType::kPlan) + kPlanSignatureSize) {
        PlanSignature signature{};
        for (std::uint8_t& byte : signature) byte = r.U8();
        m->plan.signature = signature;
      }
      break;
    case MessageType::kPlanPeers:
      if (!ReadPlanPeers(r, length, &m->peers)) return false;
      break;
    case MessageType::kPlanReport:
      ReadPlanReport(r, &m->report);
      break;
    case MessageType::kAccept:
      m->accept.token = r.U64();
      break;
    case MessageType::kResults:
      ReadResults(r, &m->results);
      break;
    case MessageType::kPlanGo:
    case MessageType::kBusy:
    case MessageType::kDenied:
    case MessageType::kSessionStop:
      break;
  }
  return r.ok();
}

bool KnownType(std::uint8_t type) { return type >= 1 && type <= 15; }

}  // namespace wire

std::string_view ToString(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "hello";
    case MessageType::kHelloAck:
      return "hello_ack";
    case MessageType::kPing:
      return "ping";
    case MessageType::kPong:
      return "pong";
    case MessageType::kSessionStart:
      return "session_start";
    case MessageType::kAccept:
      return "accept";
    case MessageType::kBusy:
      return "busy";
    case MessageType::kDenied:
      return "denied";
    case MessageType::kSessionStop:
      return "session_stop";
    case MessageType::kResults:
      return "results";
    case MessageType::kPlan:
      return "plan";
    case MessageType::kPlanPeers:
      return "plan_peers";
    case MessageType::kPlanGo:
      return "plan_go";
    case MessageType::kPlanSessionStart:
      return "plan_session_start";
    case MessageType::kPlanReport:
      return "plan_report";
  }
  return "unknown";
}

std::string_view ToString(DecodeError error) {
  switch (error) {
    case DecodeError::kTruncated:
      return "truncated";
    case DecodeError::kBadMagic:
      return "bad_magic";
    case DecodeError::kBadVersion:
      return "bad_version";
    case DecodeError::kBadType:
      return "bad_type";
    case DecodeError::kBadLength:
      return "bad_length";
    case DecodeError::kBadHmac:
      return "bad_hmac";
    case DecodeError::kMalformed:
      return "malformed";
  }
  return "unknown";
}

std::optional<std::size_t> PayloadSize(MessageType type) {
  switch (type) {
    case MessageType::kHello:
    case MessageType::kHelloAck:
      return 8 + kNonceSize;
    case MessageType::kPing:
    case MessageType::kPong:
      return 32;
    case MessageType::kSessionStart:
      return 16;
    case MessageType::kAccept:
      return 8;
    case MessageType::kBusy:
    case MessageType::kDenied:
    case MessageType::kSessionStop:
      return 0;
    case MessageType::kResults:
      return 40;
    case MessageType::kPlan:
      return 32;
    case MessageType::kPlanPeers:
      return 4 + kPlanPeerSize;  // one peer; kPlanPeersPerMessage at most
    case MessageType::kPlanGo:
      return 0;
    case MessageType::kPlanSessionStart:
      return 24;
    case MessageType::kPlanReport:
      return 72;
  }
  return std::nullopt;
}

std::size_t PayloadSizeOf(const Message& message) {
  const std::size_t base = PayloadSize(message.type).value_or(0);
  if (message.type == MessageType::kHelloAck && message.hello.revision >= 1) return base + kHelloAckExtensionSize;
  if (message.type == MessageType::kPlanPeers) return 4 + message.peers.size() * kPlanPeerSize;
  if (message.type == MessageType::kPlan && message.plan.signature) return base + kPlanSignatureSize;
  return base;
}

}  // namespace hostperf::probes::net
