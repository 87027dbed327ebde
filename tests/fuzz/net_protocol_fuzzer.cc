// libFuzzer target for the peer protocol parser: any bytes, as a datagram and
// as a stream, with and without a valid HMAC (so that the payload parser is
// reached too), unbound and bound to a connection's nonces (version 2), and
// as a version-1 hello. Decode must never crash, read out of bounds or accept
// a message that does not re-encode to the same type and session; a message
// signed over one binding must never decode under another.
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "hostperf/probes/net/protocol.h"

namespace {

using namespace hostperf::probes::net;

const Secret& FuzzSecret() {
  static const Secret kSecret(32, 0x5a);
  return kSecret;
}

const std::vector<std::uint8_t>& FuzzBinding() {
  static const std::vector<std::uint8_t> kBinding = SessionBinding(Nonce{1, 2, 3}, Nonce{4, 5, 6});
  return kBinding;
}

void Check(std::span<const std::uint8_t> data, std::span<const std::uint8_t> binding) {
  const Decoded decoded = Decode(data, FuzzSecret(), binding);
  if (decoded.consumed > data.size()) std::abort();
  if (!decoded.message) return;
  const auto bytes = Encode(*decoded.message, FuzzSecret(), binding);
  const auto again = Decode(bytes, FuzzSecret(), binding);
  if (!again.message || again.message->type != decoded.message->type ||
      again.message->session != decoded.message->session) {
    std::abort();
  }
  // Freshness: the same bytes under another binding (a replay into another
  // connection) must fail their HMAC.
  const std::vector<std::uint8_t> other = SessionBinding(Nonce{9}, Nonce{9});
  if (Decode(bytes, FuzzSecret(), other).message) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  Check(input, {});
  Check(input, FuzzBinding());
  (void)DecodeUdpData(input);
  (void)IsLegacyHello(input, FuzzSecret());
  // Sign the input's header and payload so that the payload parser runs.
  if (size >= kHeaderSize) {
    const std::size_t length = (static_cast<std::size_t>(data[12]) << 8) | data[13];
    if (length <= kMaxPayload && size >= kHeaderSize + length) {
      std::vector<std::uint8_t> signed_copy(data, data + kHeaderSize + length);
      signed_copy.resize(kHeaderSize + length + kMacSize);
      unsigned int mac_length = 0;
      HMAC(EVP_sha256(), FuzzSecret().data(), static_cast<int>(FuzzSecret().size()), signed_copy.data(),
           kHeaderSize + length, signed_copy.data() + kHeaderSize + length, &mac_length);
      Check(signed_copy, {});
      (void)IsLegacyHello(signed_copy, FuzzSecret());
      // The same, signed over the binding as a connection's later messages are.
      std::vector<std::uint8_t> bound(data, data + kHeaderSize + length);
      bound.insert(bound.end(), FuzzBinding().begin(), FuzzBinding().end());
      HMAC(EVP_sha256(), FuzzSecret().data(), static_cast<int>(FuzzSecret().size()), bound.data(), bound.size(),
           signed_copy.data() + kHeaderSize + length, &mac_length);
      Check(signed_copy, FuzzBinding());
    }
  }
  return 0;
}
