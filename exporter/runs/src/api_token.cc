#include "hostperf/runs/api_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "hostperf/base/files.h"

namespace hostperf::runs {
namespace {

std::array<unsigned char, EVP_MAX_MD_SIZE> Sha256(std::string_view text, unsigned* size) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  if (EVP_Digest(text.data(), text.size(), digest.data(), size, EVP_sha256(), nullptr) != 1) *size = 0;
  return digest;
}

}  // namespace

Result<std::string> ReadApiToken(const std::filesystem::path& path) {
  using R = Result<std::string>;
  // The file is named by the config, so a bad one is a bad config.
  constexpr const char* kReason = "bad_config";
  // A regular file, owner-only (like an OpenSSH private key), small.
  const auto text = ReadBoundedFile(path, "api.token_file", kMaxSecretFileBytes, FileAccess::kOwnerOnly);
  if (!text) return R::Error(kReason, text.error());
  const std::string_view token = TrimToken(*text);
  if (token.empty()) return R::Error(kReason, "api.token_file: \"" + path.string() + "\" is empty");
  if (std::any_of(token.begin(), token.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; })) {
    return R::Error(
        kReason, "api.token_file: \"" + path.string() + "\" must hold one token without spaces or control characters");
  }
  return R(std::string(token));
}

bool TokensEqual(std::string_view given, std::string_view expected) {
  unsigned given_size = 0;
  unsigned expected_size = 0;
  const auto a = Sha256(given, &given_size);
  const auto b = Sha256(expected, &expected_size);
  if (given_size == 0 || given_size != expected_size) return false;
  return CRYPTO_memcmp(a.data(), b.data(), given_size) == 0;
}

std::string_view TrimToken(std::string_view text) {
  const auto space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace hostperf::runs
