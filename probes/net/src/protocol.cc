// The peer protocol's framing: header, payload and HMAC around every
// message, the bulk UDP datagrams, and the version-1 hello of the previous
// release (the payloads are protocol_payload.cc's, the HMAC protocol_mac.cc's).
#include "hostperf/probes/net/protocol.h"

#include <openssl/crypto.h>

#include <algorithm>

#include "wire.h"

namespace hostperf::probes::net {

namespace {

std::vector<std::uint8_t> EncodeVersion(const Message& message, const Secret& secret,
                                        std::span<const std::uint8_t> binding, std::uint8_t version) {
  std::vector<std::uint8_t> out;
  out.reserve(kHeaderSize + PayloadSizeOf(message) + kMacSize);
  wire::Writer w(&out);
  w.U32(kMagic);
  w.U8(version);
  w.U8(static_cast<std::uint8_t>(message.type));
  w.U16(0);
  w.U32(message.session);
  w.U16(static_cast<std::uint16_t>(PayloadSizeOf(message)));
  w.U16(0);
  wire::WritePayload(message, w);
  const std::size_t signed_size = out.size();
  out.resize(signed_size + kMacSize);
  wire::MacWithBinding(secret, std::span(out.data(), signed_size), binding, out.data() + signed_size);
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
  wire::Reader header(data.first(kHeaderSize));
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
  if (!wire::KnownType(type)) {
    decoded.error = DecodeError::kBadType;
    return decoded;
  }
  const auto message_type = static_cast<MessageType>(type);
  const std::size_t base = *PayloadSize(message_type);
  // A hello reply of revision >= 1 is longer (see "Revisions" in protocol.h),
  // so is a signed plan (revision 4); a peer list's length follows its count
  // (checked with the payload).
  const bool size_ok =
      length == base ||
      (message_type == MessageType::kHelloAck && length >= base + kHelloAckExtensionSize && length <= kMaxPayload) ||
      (message_type == MessageType::kPlanPeers && length >= base && (length - 4) % kPlanPeerSize == 0) ||
      (message_type == MessageType::kPlan && length == base + kPlanSignatureSize);
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
  wire::MacWithBinding(secret, data.first(kHeaderSize + length), binding, mac);
  if (CRYPTO_memcmp(mac, data.data() + kHeaderSize + length, kMacSize) != 0) {
    decoded.error = DecodeError::kBadHmac;
    return decoded;
  }
  Message message;
  message.type = message_type;
  message.session = session;
  wire::Reader payload(data.subspan(kHeaderSize, length));
  if (!wire::ReadPayload(payload, length, &message)) {
    decoded.error = DecodeError::kMalformed;
    return decoded;
  }
  decoded.message = message;
  return decoded;
}

void EncodeUdpData(const UdpData& data, std::span<std::uint8_t> datagram) {
  std::vector<std::uint8_t> header;
  wire::Writer w(&header);
  w.U32(kUdpDataMagic);
  w.U64(data.token);
  w.U64(data.seq);
  w.I64(data.sent_ns);
  std::copy(header.begin(), header.end(), datagram.begin());
}

std::optional<UdpData> DecodeUdpData(std::span<const std::uint8_t> datagram) {
  wire::Reader r(datagram);
  if (r.U32() != kUdpDataMagic) return std::nullopt;
  UdpData data;
  data.token = r.U64();
  data.seq = r.U64();
  data.sent_ns = r.I64();
  if (!r.ok()) return std::nullopt;
  return data;
}

// Version 1's hello and hello reply: header | version, 0, 0 (u16), max
// connections (u32) | HMAC(header|payload).
constexpr std::size_t kLegacyHelloPayload = 8;

bool IsLegacyHello(std::span<const std::uint8_t> data, const Secret& secret) {
  if (data.size() < kHeaderSize + kLegacyHelloPayload + kMacSize) return false;
  wire::Reader header(data.first(kHeaderSize));
  if (header.U32() != kMagic || header.U8() != kLegacyProtocolVersion ||
      header.U8() != static_cast<std::uint8_t>(MessageType::kHello)) {
    return false;
  }
  header.U16();
  header.U32();
  if (header.U16() != kLegacyHelloPayload) return false;
  std::uint8_t mac[kMacSize];
  wire::Mac(secret, data.first(kHeaderSize + kLegacyHelloPayload), mac);
  return CRYPTO_memcmp(mac, data.data() + kHeaderSize + kLegacyHelloPayload, kMacSize) == 0;
}

std::vector<std::uint8_t> EncodeLegacyVersionReply(const Secret& secret, std::uint32_t session) {
  std::vector<std::uint8_t> out;
  wire::Writer w(&out);
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
  wire::Mac(secret, std::span(out.data(), signed_size), out.data() + signed_size);
  return out;
}

}  // namespace hostperf::probes::net
