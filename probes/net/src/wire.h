#pragma once

// The building blocks of the peer protocol's framing (protocol.cc): big-endian
// fields, the HMAC (protocol_mac.cc) and the payloads of each message type
// (protocol_payload.cc). Internal to the net probe.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hostperf/probes/net/protocol.h"

namespace hostperf::probes::net::wire {

// Appends big-endian fields.
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

// Reads big-endian fields; past the end it reads 0 and ok() turns false.
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

// HMAC-SHA256(secret, data) into `out` (kMacSize bytes).
void Mac(const Secret& secret, std::span<const std::uint8_t> data, std::uint8_t* out);
// HMAC-SHA256(secret, message|binding): the binding is signed, not sent.
void MacWithBinding(const Secret& secret, std::span<const std::uint8_t> message, std::span<const std::uint8_t> binding,
                    std::uint8_t* out);

// A plan's fields (the kPlan payload without its signature) and a peer list
// (a kPlanPeers payload): also what an orchestration signature covers.
void WritePlan(const Plan& plan, Writer& w);
void WritePlanPeers(std::span<const PlanPeer> peers, Writer& w);
// A message's payload (its type says which fields), as Encode writes it.
void WritePayload(const Message& m, Writer& w);
// Reads the payload of `m->type` (`length` bytes, checked against the type
// by Decode); false when a field is out of range or the bytes run out.
bool ReadPayload(Reader& r, std::size_t length, Message* m);
// Message types 1 ... 15.
bool KnownType(std::uint8_t type);

}  // namespace hostperf::probes::net::wire
