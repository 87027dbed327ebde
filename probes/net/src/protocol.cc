#include "hostperf/probes/net/protocol.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <iterator>
#include <random>

namespace hostperf::probes::net {

namespace {

class Writer {
 public:
  explicit Writer(std::vector<std::uint8_t>* out) : out_(out) {}
  void U8(std::uint8_t v) { out_->push_back(v); }
  void U16(std::uint16_t v) { Big(v, 2); }
  void U32(std::uint32_t v) { Big(v, 4); }
  void U64(std::uint64_t v) { Big(v, 8); }
  void I64(std::int64_t v) { U64(static_cast<std::uint64_t>(v)); }

 private:
  void Big(std::uint64_t v, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_->push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::uint8_t>* out_;
};

class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}
  std::uint8_t U8() { return static_cast<std::uint8_t>(Big(1)); }
  std::uint16_t U16() { return static_cast<std::uint16_t>(Big(2)); }
  std::uint32_t U32() { return static_cast<std::uint32_t>(Big(4)); }
  std::uint64_t U64() { return Big(8); }
  std::int64_t I64() { return static_cast<std::int64_t>(U64()); }
  bool ok() const { return ok_; }

 private:
  std::uint64_t Big(std::size_t bytes) {
    if (pos_ + bytes > data_.size()) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | data_[pos_ + i];
    pos_ += bytes;
    return v;
  }
  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// HMAC-SHA256 with a keyed context kept per thread: the one-shot HMAC()
// fetches the algorithm and keys a new context on every call (about 2 us on
// a 2-vCPU VM), four times per ping round trip; re-initialising a keyed
// context costs a fifth of that. The cache re-keys when the secret changes.
class MacContext {
 public:
  ~MacContext() {
    EVP_MAC_CTX_free(ctx_);
    OPENSSL_cleanse(key_.data(), key_.size());
  }
  bool Compute(const Secret& secret, std::span<const std::uint8_t> data, std::uint8_t* out) {
    if (ctx_ == nullptr || key_ != secret) {
      static EVP_MAC* const kHmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
      if (kHmac == nullptr) return false;
      EVP_MAC_CTX_free(ctx_);
      ctx_ = EVP_MAC_CTX_new(kHmac);
      char digest[] = "SHA256";
      const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                   OSSL_PARAM_construct_end()};
      static const std::uint8_t kEmpty = 0;
      if (ctx_ == nullptr || EVP_MAC_init(ctx_, secret.empty() ? &kEmpty : secret.data(), secret.size(), params) != 1) {
        EVP_MAC_CTX_free(ctx_);
        ctx_ = nullptr;
        return false;
      }
      OPENSSL_cleanse(key_.data(), key_.size());
      key_ = secret;
    } else if (EVP_MAC_init(ctx_, nullptr, 0, nullptr) != 1) {  // same key, fresh state
      return false;
    }
    std::size_t length = 0;
    return EVP_MAC_update(ctx_, data.data(), data.size()) == 1 && EVP_MAC_final(ctx_, out, &length, kMacSize) == 1 &&
           length == kMacSize;
  }

 private:
  EVP_MAC_CTX* ctx_ = nullptr;
  Secret key_;
};

void Mac(const Secret& secret, std::span<const std::uint8_t> data, std::uint8_t* out) {
  thread_local MacContext context;
  if (!context.Compute(secret, data, out)) {
    // Fall back to the one-shot call rather than sign with garbage.
    unsigned int length = 0;
    static const std::uint8_t kEmpty = 0;
    HMAC(EVP_sha256(), secret.empty() ? &kEmpty : secret.data(), static_cast<int>(secret.size()), data.data(),
         data.size(), out, &length);
  }
}

void WritePayload(const Message& m, Writer& w) {
  switch (m.type) {
    case MessageType::kHello:
    case MessageType::kHelloAck:
      w.U8(m.hello.version);
      w.U8(m.hello.revision);
      w.U16(0);
      w.U32(m.hello.max_connections);
      for (const std::uint8_t byte : m.hello.nonce) w.U8(byte);
      if (m.type == MessageType::kHelloAck && m.hello.revision >= 1) w.U32(m.hello.mtu);
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
      w.U8(static_cast<std::uint8_t>(m.start.test));
      w.U8(0);
      w.U16(0);
      w.U32(m.start.duration_ms);
      w.U64(m.start.rate_bytes_per_second);
      if (m.type == MessageType::kPlanSessionStart) w.U64(m.start.plan_id);
      break;
    case MessageType::kPlan:
      w.U64(m.plan.id);
      w.U8(static_cast<std::uint8_t>(m.plan.test));
      w.U8(0);
      w.U16(m.plan.peer_count);
      w.U32(m.plan.duration_ms);
      w.U64(m.plan.rate_bytes_per_second);
      w.U32(m.plan.datagram_size);
      w.U32(0);
      break;
    case MessageType::kPlanPeers:
      w.U16(static_cast<std::uint16_t>(m.peers.size()));
      w.U16(0);
      for (const PlanPeer& peer : m.peers) {
        w.U8(peer.family);
        for (const std::uint8_t byte : peer.address) w.U8(byte);
        w.U16(peer.port);
      }
      break;
    case MessageType::kPlanGo:
      break;
    case MessageType::kPlanReport:
      w.U64(m.report.bytes_sent);
      w.U64(m.report.bytes_received);
      w.I64(m.report.sent_ns);
      w.I64(m.report.received_ns);
      w.U64(m.report.packets_sent);
      w.U64(m.report.packets_received);
      w.U64(m.report.packets_lost);
      w.I64(m.report.jitter_ns);
      w.U16(m.report.sessions_ok);
      w.U16(m.report.sessions_failed);
      w.U16(m.report.peers_received);
      w.U16(0);
      break;
    case MessageType::kAccept:
      w.U64(m.accept.token);
      break;
    case MessageType::kBusy:
    case MessageType::kDenied:
    case MessageType::kSessionStop:
      break;
    case MessageType::kResults:
      w.U64(m.results.bytes);
      w.U64(m.results.packets);
      w.U64(m.results.packets_lost);
      w.I64(m.results.duration_ns);
      w.I64(m.results.jitter_ns);
      break;
  }
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

bool ReadPayload(Reader& r, std::size_t length, Message* m) {
  switch (m->type) {
    case MessageType::kHello:
    case MessageType::kHelloAck: {
      m->hello.version = r.U8();
      m->hello.revision = r.U8();
      r.U16();
      m->hello.max_connections = r.U32();
      for (std::uint8_t& byte : m->hello.nonce) byte = r.U8();
      if (m->type == MessageType::kHello) break;
      // The extension is there exactly when the revision says so.
      const bool extended = length > *PayloadSize(MessageType::kHelloAck);
      if (extended != (m->hello.revision >= 1)) return false;
      if (extended) m->hello.mtu = r.U32();  // later revisions' bytes follow: not ours to read
      break;
    }
    case MessageType::kPing:
    case MessageType::kPong:
      m->ping.seq = r.U32();
      r.U32();
      m->ping.t1_ns = r.I64();
      m->ping.t2_ns = r.I64();
      m->ping.t3_ns = r.I64();
      break;
    case MessageType::kSessionStart:
    case MessageType::kPlanSessionStart: {
      if (!ReadTest(r, &m->start.test)) return false;
      r.U8();
      r.U16();
      m->start.duration_ms = r.U32();
      m->start.rate_bytes_per_second = r.U64();
      if (m->type == MessageType::kPlanSessionStart) m->start.plan_id = r.U64();
      break;
    }
    case MessageType::kPlan:
      m->plan.id = r.U64();
      if (!ReadTest(r, &m->plan.test)) return false;
      r.U8();
      m->plan.peer_count = r.U16();
      m->plan.duration_ms = r.U32();
      m->plan.rate_bytes_per_second = r.U64();
      m->plan.datagram_size = r.U32();
      r.U32();
      break;
    case MessageType::kPlanPeers: {
      const std::uint16_t count = r.U16();
      r.U16();
      if (count == 0 || count > kPlanPeersPerMessage || length != 4 + count * kPlanPeerSize) return false;
      m->peers.resize(count);
      for (PlanPeer& peer : m->peers) {
        peer.family = r.U8();
        for (std::uint8_t& byte : peer.address) byte = r.U8();
        peer.port = r.U16();
        if ((peer.family != 4 && peer.family != 6) || peer.port == 0) return false;
      }
      break;
    }
    case MessageType::kPlanGo:
      break;
    case MessageType::kPlanReport:
      m->report.bytes_sent = r.U64();
      m->report.bytes_received = r.U64();
      m->report.sent_ns = r.I64();
      m->report.received_ns = r.I64();
      m->report.packets_sent = r.U64();
      m->report.packets_received = r.U64();
      m->report.packets_lost = r.U64();
      m->report.jitter_ns = r.I64();
      m->report.sessions_ok = r.U16();
      m->report.sessions_failed = r.U16();
      m->report.peers_received = r.U16();
      r.U16();
      break;
    case MessageType::kAccept:
      m->accept.token = r.U64();
      break;
    case MessageType::kBusy:
    case MessageType::kDenied:
    case MessageType::kSessionStop:
      break;
    case MessageType::kResults:
      m->results.bytes = r.U64();
      m->results.packets = r.U64();
      m->results.packets_lost = r.U64();
      m->results.duration_ns = r.I64();
      m->results.jitter_ns = r.I64();
      break;
  }
  return r.ok();
}

bool KnownType(std::uint8_t type) { return type >= 1 && type <= 15; }

}  // namespace

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
  return base;
}

namespace {

// header|payload|binding, the signed bytes.
void SignedBytes(std::span<const std::uint8_t> message, std::span<const std::uint8_t> binding,
                 std::vector<std::uint8_t>* out) {
  out->assign(message.begin(), message.end());
  out->insert(out->end(), binding.begin(), binding.end());
}

void MacWithBinding(const Secret& secret, std::span<const std::uint8_t> message, std::span<const std::uint8_t> binding,
                    std::uint8_t* out) {
  if (binding.empty()) return Mac(secret, message, out);
  thread_local std::vector<std::uint8_t> scratch;
  SignedBytes(message, binding, &scratch);
  Mac(secret, scratch, out);
}

std::vector<std::uint8_t> EncodeVersion(const Message& message, const Secret& secret,
                                        std::span<const std::uint8_t> binding, std::uint8_t version) {
  std::vector<std::uint8_t> out;
  out.reserve(kHeaderSize + PayloadSizeOf(message) + kMacSize);
  Writer w(&out);
  w.U32(kMagic);
  w.U8(version);
  w.U8(static_cast<std::uint8_t>(message.type));
  w.U16(0);
  w.U32(message.session);
  w.U16(static_cast<std::uint16_t>(PayloadSizeOf(message)));
  w.U16(0);
  WritePayload(message, w);
  const std::size_t signed_size = out.size();
  out.resize(signed_size + kMacSize);
  MacWithBinding(secret, std::span(out.data(), signed_size), binding, out.data() + signed_size);
  return out;
}

}  // namespace

std::vector<std::uint8_t> Encode(const Message& message, const Secret& secret, std::span<const std::uint8_t> binding) {
  return EncodeVersion(message, secret, binding, kProtocolVersion);
}

Decoded Decode(std::span<const std::uint8_t> data, const Secret& secret, std::span<const std::uint8_t> binding) {
  Decoded decoded;
  if (data.size() < kHeaderSize) {
    decoded.error = DecodeError::kTruncated;
    return decoded;
  }
  Reader header(data.first(kHeaderSize));
  const std::uint32_t magic = header.U32();
  const std::uint8_t version = header.U8();
  const std::uint8_t type = header.U8();
  header.U16();
  const std::uint32_t session = header.U32();
  const std::uint16_t length = header.U16();
  if (magic != kMagic) {
    decoded.error = DecodeError::kBadMagic;
    return decoded;
  }
  decoded.version = version;
  if (version != kProtocolVersion) {
    decoded.error = DecodeError::kBadVersion;
    return decoded;
  }
  if (!KnownType(type)) {
    decoded.error = DecodeError::kBadType;
    return decoded;
  }
  const auto message_type = static_cast<MessageType>(type);
  const std::size_t base = *PayloadSize(message_type);
  // A hello reply of revision >= 1 is longer (see "Revisions" in protocol.h);
  // a peer list's length follows its count (checked with the payload).
  const bool size_ok =
      length == base ||
      (message_type == MessageType::kHelloAck && length >= base + kHelloAckExtensionSize && length <= kMaxPayload) ||
      (message_type == MessageType::kPlanPeers && length >= base && (length - 4) % kPlanPeerSize == 0);
  if (length > kMaxPayload || !size_ok) {
    decoded.error = DecodeError::kBadLength;
    return decoded;
  }
  const std::size_t total = kHeaderSize + length + kMacSize;
  if (data.size() < total) {
    decoded.error = DecodeError::kTruncated;
    return decoded;
  }
  decoded.consumed = total;
  std::uint8_t mac[kMacSize];
  MacWithBinding(secret, data.first(kHeaderSize + length), binding, mac);
  if (CRYPTO_memcmp(mac, data.data() + kHeaderSize + length, kMacSize) != 0) {
    decoded.error = DecodeError::kBadHmac;
    return decoded;
  }
  Message message;
  message.type = message_type;
  message.session = session;
  Reader payload(data.subspan(kHeaderSize, length));
  if (!ReadPayload(payload, length, &message)) {
    decoded.error = DecodeError::kMalformed;
    return decoded;
  }
  decoded.message = message;
  return decoded;
}

void EncodeUdpData(const UdpData& data, std::span<std::uint8_t> datagram) {
  std::vector<std::uint8_t> header;
  Writer w(&header);
  w.U32(kUdpDataMagic);
  w.U64(data.token);
  w.U64(data.seq);
  w.I64(data.sent_ns);
  std::copy(header.begin(), header.end(), datagram.begin());
}

std::optional<UdpData> DecodeUdpData(std::span<const std::uint8_t> datagram) {
  Reader r(datagram);
  if (r.U32() != kUdpDataMagic) return std::nullopt;
  UdpData data;
  data.token = r.U64();
  data.seq = r.U64();
  data.sent_ns = r.I64();
  if (!r.ok()) return std::nullopt;
  return data;
}

std::vector<std::uint8_t> SessionBinding(const Nonce& client, const Nonce& responder) {
  std::vector<std::uint8_t> binding(client.begin(), client.end());
  binding.insert(binding.end(), responder.begin(), responder.end());
  return binding;
}

Nonce RandomNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    std::random_device device;
    for (auto& byte : nonce) byte = static_cast<std::uint8_t>(device());
  }
  return nonce;
}

// Version 1's hello and hello reply: header | version, 0, 0 (u16), max
// connections (u32) | HMAC(header|payload).
constexpr std::size_t kLegacyHelloPayload = 8;

bool IsLegacyHello(std::span<const std::uint8_t> data, const Secret& secret) {
  if (data.size() < kHeaderSize + kLegacyHelloPayload + kMacSize) return false;
  Reader header(data.first(kHeaderSize));
  if (header.U32() != kMagic || header.U8() != kLegacyProtocolVersion ||
      header.U8() != static_cast<std::uint8_t>(MessageType::kHello)) {
    return false;
  }
  header.U16();
  header.U32();
  if (header.U16() != kLegacyHelloPayload) return false;
  std::uint8_t mac[kMacSize];
  Mac(secret, data.first(kHeaderSize + kLegacyHelloPayload), mac);
  return CRYPTO_memcmp(mac, data.data() + kHeaderSize + kLegacyHelloPayload, kMacSize) == 0;
}

std::vector<std::uint8_t> EncodeLegacyVersionReply(const Secret& secret, std::uint32_t session) {
  std::vector<std::uint8_t> out;
  Writer w(&out);
  w.U32(kMagic);
  w.U8(kLegacyProtocolVersion);
  w.U8(static_cast<std::uint8_t>(MessageType::kHelloAck));
  w.U16(0);
  w.U32(session);
  w.U16(kLegacyHelloPayload);
  w.U16(0);
  w.U8(kProtocolVersion);  // what the old client reads as the responder's version
  w.U8(0);
  w.U16(0);
  w.U32(0);
  const std::size_t signed_size = out.size();
  out.resize(signed_size + kMacSize);
  Mac(secret, std::span(out.data(), signed_size), out.data() + signed_size);
  return out;
}

Secret RandomSecret() {
  Secret secret(32);
  if (RAND_bytes(secret.data(), static_cast<int>(secret.size())) != 1) {
    std::random_device device;
    for (auto& byte : secret) byte = static_cast<std::uint8_t>(device());
  }
  return secret;
}

}  // namespace hostperf::probes::net
