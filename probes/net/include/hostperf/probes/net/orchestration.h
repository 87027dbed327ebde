#pragma once

// Orchestration: the credential that directs hosts, apart from the fleet
// secret that lets them measure each other (protocol.h, revision 4). A
// coordinator signs each plan with its Ed25519 private key; a responder
// takes a plan only when the public key its own configuration names
// verifies the signature. Holding the fleet secret, or a responder's
// public key, does not let a host send plans.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hostperf/base/result.h"
#include "hostperf/probes/net/protocol.h"

namespace hostperf::probes::net {

inline constexpr std::size_t kOrchestrationPublicKeySize = 32;
using OrchestrationPublicKey = std::array<std::uint8_t, kOrchestrationPublicKeySize>;

// A coordinator's private key (OpenSSL's EVP_PKEY, shared between copies).
class OrchestrationKey {
 public:
  // A new key, for one run (bare hosts over SSH: it never leaves the CLI).
  static Result<OrchestrationKey> Generate();
  // probes.net.orchestration_key_file: a PEM Ed25519 private key (openssl
  // genpkey -algorithm ed25519), a small regular file readable by its owner
  // only. A failure's reason is "no_orchestration_key".
  static Result<OrchestrationKey> FromPemFile(const std::string& path);
  // The same from the file's text; `path` names it in errors.
  static Result<OrchestrationKey> FromPem(std::string_view pem, const std::string& path);

  PlanSignature Sign(std::span<const std::uint8_t> message) const;
  const OrchestrationPublicKey& public_key() const { return public_key_; }

 private:
  struct Pkey;
  explicit OrchestrationKey(std::shared_ptr<Pkey> pkey);
  std::shared_ptr<Pkey> pkey_;
  OrchestrationPublicKey public_key_{};
};

// probes.net.orchestration_public_key_file: a PEM Ed25519 public key
// (openssl pkey -pubout). Public: any mode, but a small regular file.
// (The two file readers live in orchestration_file.cc, outside hostperf-peer.)
Result<OrchestrationPublicKey> ReadOrchestrationPublicKeyFile(const std::string& path);
Result<OrchestrationPublicKey> OrchestrationPublicKeyFromPem(std::string_view pem, const std::string& path);

bool VerifyPlanSignature(const OrchestrationPublicKey& key, std::span<const std::uint8_t> message,
                         const PlanSignature& signature);

// What a plan's signature covers: a domain string, the control connection's
// binding (both hello nonces: a signature is good on that connection only),
// the plan's fields without the signature, and every peer in order.
std::vector<std::uint8_t> PlanSigningBytes(std::span<const std::uint8_t> binding, const Plan& plan,
                                           std::span<const PlanPeer> peers);

// Bytes as lower-case hex digits (a bare host's standard input: the one-time
// secret, the public key); a public key back from its 64 digits.
std::string HexDigits(std::span<const std::uint8_t> bytes);
std::optional<OrchestrationPublicKey> PublicKeyFromHex(std::string_view hex);

}  // namespace hostperf::probes::net
