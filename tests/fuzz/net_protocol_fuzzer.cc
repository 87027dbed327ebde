// libFuzzer target for the peer protocol parser: any bytes, as a datagram and
// as a stream, with and without a valid HMAC (so that the payload parser is
// reached too). Decode must never crash, read out of bounds or accept a
// message that does not re-encode to the same type and session.
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

void Check(std::span<const std::uint8_t> data) {
  const Decoded decoded = Decode(data, FuzzSecret());
  if (decoded.consumed > data.size()) std::abort();
  if (!decoded.message) return;
  const auto again = Decode(Encode(*decoded.message, FuzzSecret()), FuzzSecret());
  if (!again.message || again.message->type != decoded.message->type ||
      again.message->session != decoded.message->session) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  Check(input);
  (void)DecodeUdpData(input);
  // Sign the input's header and payload so that the payload parser runs.
  if (size >= kHeaderSize) {
    const std::size_t length = (static_cast<std::size_t>(data[12]) << 8) | data[13];
    if (length <= kMaxPayload && size >= kHeaderSize + length) {
      std::vector<std::uint8_t> signed_copy(data, data + kHeaderSize + length);
      signed_copy.resize(kHeaderSize + length + kMacSize);
      unsigned int mac_length = 0;
      HMAC(EVP_sha256(), FuzzSecret().data(), static_cast<int>(FuzzSecret().size()), signed_copy.data(),
           kHeaderSize + length, signed_copy.data() + kHeaderSize + length, &mac_length);
      Check(signed_copy);
    }
  }
  return 0;
}
