#include "hostperf/probes/net/orchestration.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include <algorithm>

#include "wire.h"

namespace hostperf::probes::net {

namespace {

constexpr std::string_view kPlanDomain = "hostperf orchestrated plan v1";

std::string OpensslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// An encrypted key is refused, never prompted for (OpenSSL's default
// callback would read a passphrase from the terminal).
int NoPassphrase(char* /*buffer*/, int /*size*/, int /*rwflag*/, void* /*user*/) { return 0; }

}  // namespace

struct OrchestrationKey::Pkey {
  explicit Pkey(EVP_PKEY* key) : key(key) {}
  ~Pkey() { EVP_PKEY_free(key); }
  Pkey(const Pkey&) = delete;
  Pkey& operator=(const Pkey&) = delete;
  EVP_PKEY* key;
};

OrchestrationKey::OrchestrationKey(std::shared_ptr<Pkey> pkey) : pkey_(std::move(pkey)) {
  std::size_t length = public_key_.size();
  EVP_PKEY_get_raw_public_key(pkey_->key, public_key_.data(), &length);
}

Result<OrchestrationKey> OrchestrationKey::Generate() {
  EVP_PKEY* key = nullptr;
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
  const bool ok = ctx != nullptr && EVP_PKEY_keygen_init(ctx) == 1 && EVP_PKEY_keygen(ctx, &key) == 1;
  EVP_PKEY_CTX_free(ctx);
  if (!ok) return Failure{"no_orchestration_key", "cannot generate an Ed25519 key: " + OpensslError()};
  return OrchestrationKey(std::make_shared<Pkey>(key));
}

Result<OrchestrationKey> OrchestrationKey::FromPem(std::string_view pem, const std::string& path) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr;
  if (key == nullptr) {
    ERR_clear_error();
    return Failure{"no_orchestration_key", "orchestration key file " + path +
                                               " holds no unencrypted PEM private key (make one with: openssl "
                                               "genpkey -algorithm ed25519 -out " +
                                               path + ")"};
  }
  auto pkey = std::make_shared<Pkey>(key);
  if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
    return Failure{"no_orchestration_key", "orchestration key file " + path + " holds a " +
                                               std::string(OBJ_nid2sn(EVP_PKEY_get_id(key))) +
                                               " key, not an Ed25519 one (openssl genpkey -algorithm ed25519)"};
  }
  return OrchestrationKey(std::move(pkey));
}

PlanSignature OrchestrationKey::Sign(std::span<const std::uint8_t> message) const {
  PlanSignature signature{};
  std::size_t length = signature.size();
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  // Ed25519 signs the message itself (no digest): one call.
  if (ctx == nullptr || EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, pkey_->key) != 1 ||
      EVP_DigestSign(ctx, signature.data(), &length, message.data(), message.size()) != 1) {
    ERR_clear_error();
    signature.fill(0);  // verifies against nothing: the plan is refused
  }
  EVP_MD_CTX_free(ctx);
  return signature;
}

Result<OrchestrationPublicKey> OrchestrationPublicKeyFromPem(std::string_view pem, const std::string& path) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* key = bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr;
  if (key == nullptr) {
    ERR_clear_error();
    return Failure{"no_orchestration_key", "orchestration public key file " + path +
                                               " holds no PEM public key (openssl pkey -in <private key> -pubout)"};
  }
  OrchestrationPublicKey raw{};
  std::size_t length = raw.size();
  const bool ed25519 = EVP_PKEY_get_id(key) == EVP_PKEY_ED25519 &&
                       EVP_PKEY_get_raw_public_key(key, raw.data(), &length) == 1 && length == raw.size();
  EVP_PKEY_free(key);
  if (!ed25519) {
    ERR_clear_error();
    return Failure{"no_orchestration_key",
                   "orchestration public key file " + path + " holds a key that is not Ed25519"};
  }
  return raw;
}

bool VerifyPlanSignature(const OrchestrationPublicKey& key, std::span<const std::uint8_t> message,
                         const PlanSignature& signature) {
  EVP_PKEY* pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = pkey != nullptr && ctx != nullptr &&
                  EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, pkey) == 1 &&
                  EVP_DigestVerify(ctx, signature.data(), signature.size(), message.data(), message.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  ERR_clear_error();
  return ok;
}

std::vector<std::uint8_t> PlanSigningBytes(std::span<const std::uint8_t> binding, const Plan& plan,
                                           std::span<const PlanPeer> peers) {
  std::vector<std::uint8_t> bytes(kPlanDomain.begin(), kPlanDomain.end());
  bytes.push_back(0);
  wire::Writer w(&bytes);
  w.U16(static_cast<std::uint16_t>(binding.size()));
  bytes.insert(bytes.end(), binding.begin(), binding.end());
  wire::WritePlan(plan, w);
  wire::WritePlanPeers(peers, w);
  return bytes;
}

std::string HexDigits(std::span<const std::uint8_t> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (const std::uint8_t byte : bytes) {
    text.push_back(kHex[byte >> 4]);
    text.push_back(kHex[byte & 15]);
  }
  return text;
}

std::optional<OrchestrationPublicKey> PublicKeyFromHex(std::string_view hex) {
  if (hex.size() != 2 * kOrchestrationPublicKeySize) return std::nullopt;
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  OrchestrationPublicKey key{};
  for (std::size_t i = 0; i < key.size(); ++i) {
    const int high = digit(hex[2 * i]);
    const int low = digit(hex[2 * i + 1]);
    if (high < 0 || low < 0) return std::nullopt;
    key[i] = static_cast<std::uint8_t>(high << 4 | low);
  }
  return key;
}

}  // namespace hostperf::probes::net
