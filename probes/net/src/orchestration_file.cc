// The orchestration keys' files (orchestration.h): read bounded, the
// private key owner-only. Apart from orchestration.cc, which hostperf-peer
// links without the base library.
#include "hostperf/base/files.h"
#include "hostperf/probes/net/orchestration.h"

namespace hostperf::probes::net {

Result<OrchestrationKey> OrchestrationKey::FromPemFile(const std::string& path) {
  const auto text =
      ReadBoundedFile(path, "probes.net.orchestration_key_file", kMaxSecretFileBytes, FileAccess::kOwnerOnly);
  if (!text) return Failure{"no_orchestration_key", text.error()};
  return FromPem(*text, path);
}

Result<OrchestrationPublicKey> ReadOrchestrationPublicKeyFile(const std::string& path) {
  constexpr std::size_t kMaxPublicKeyFileBytes = 4 << 10;
  const auto text = ReadBoundedFile(path, "probes.net.orchestration_public_key_file", kMaxPublicKeyFileBytes);
  if (!text) return Failure{"no_orchestration_key", text.error()};
  return OrchestrationPublicKeyFromPem(*text, path);
}

}  // namespace hostperf::probes::net
