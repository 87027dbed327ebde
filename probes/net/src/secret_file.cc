#include "secret_file.h"

#include <cctype>

#include "hostperf/base/files.h"

namespace hostperf::probes::net {

Result<Secret> ReadSecretFile(const std::string& path) {
  // A regular file, owner-only (like an OpenSSH private key), small.
  const auto text = ReadBoundedFile(path, "probes.net.secret_file", kMaxSecretFileBytes, FileAccess::kOwnerOnly);
  if (!text) return Failure{"no_secret", text.error()};
  Secret secret(text->begin(), text->end());
  while (!secret.empty() && std::isspace(secret.back())) secret.pop_back();
  if (secret.size() < 16) return Failure{"no_secret", "secret file " + path + " holds fewer than 16 bytes"};
  return secret;
}

}  // namespace hostperf::probes::net
