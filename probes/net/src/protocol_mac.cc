// The peer protocol's keys and signatures: HMAC-SHA256 over a message and
// its binding, and the random nonces and secrets.
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <random>

#include "wire.h"

namespace hostperf::probes::net {

namespace wire {

namespace {

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

// header|payload|binding, the signed bytes.
void SignedBytes(std::span<const std::uint8_t> message, std::span<const std::uint8_t> binding,
                 std::vector<std::uint8_t>* out) {
  out->assign(message.begin(), message.end());
  out->insert(out->end(), binding.begin(), binding.end());
}

}  // namespace

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

void MacWithBinding(const Secret& secret, std::span<const std::uint8_t> message, std::span<const std::uint8_t> binding,
                    std::uint8_t* out) {
  if (binding.empty()) return Mac(secret, message, out);
  thread_local std::vector<std::uint8_t> scratch;
  SignedBytes(message, binding, &scratch);
  Mac(secret, scratch, out);
}

}  // namespace wire

std::vector<std::uint8_t> SessionBinding(const Nonce& client, const Nonce& responder) {
  std::vector<std::uint8_t> binding(client.begin(), client.end());
  binding.insert(binding.end(), responder.begin(), responder.end());
  return binding;
}

std::vector<std::uint8_t> OrderedBinding(std::span<const std::uint8_t> binding, bool from_responder,
                                         std::uint64_t index) {
  std::vector<std::uint8_t> ordered(binding.begin(), binding.end());
  ordered.push_back(from_responder ? 1 : 0);
  for (int shift = 56; shift >= 0; shift -= 8) ordered.push_back(static_cast<std::uint8_t>(index >> shift));
  return ordered;
}

std::vector<std::uint8_t> MessageBinding(std::span<const std::uint8_t> binding, std::uint8_t revision,
                                         bool from_responder, std::uint64_t index) {
  if (revision < kOrderedRevision || binding.empty()) return {binding.begin(), binding.end()};
  return OrderedBinding(binding, from_responder, index);
}

Nonce RandomNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    std::random_device device;
    for (auto& byte : nonce) byte = static_cast<std::uint8_t>(device());
  }
  return nonce;
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
